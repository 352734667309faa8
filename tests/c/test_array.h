/*
 * test_array.h - a kernel operand over a test's own memory, for the C
 * tests that call kernels directly.
 */
#ifndef NRTEMU_TEST_ARRAY_H
#define NRTEMU_TEST_ARRAY_H

#include <stdint.h>
#include <string.h>

#include "kernels/kernel.h"

/* A dense array of `ndim` dimensions `shape` at `data` (borrowed). */
static inline struct nrtemu_array
array(enum nrtemu_dtype dt, void *data, uint32_t ndim, const uint64_t *shape)
{
    struct nrtemu_array a;

    memset(&a, 0, sizeof a);
    a.data = data;
    a.dtype = dt;
    a.ndim = ndim;
    for (uint32_t d = 0; d < ndim; d++) {
        a.shape[d] = shape[d];
    }
    return a;
}

#endif /* NRTEMU_TEST_ARRAY_H */
