/*
 * kernel_iter.h - walking several strided arrays over one shape (internal,
 * shared by the kernels).
 *
 * An iterator holds a shape and, for each operand, a stride per dimension
 * in elements (0 where the operand is broadcast).  kiter_collapse() drops
 * dimensions of size 1 and merges neighbours that every operand walks
 * contiguously, so that the innermost loop is as long as possible: a
 * same-shape elementwise op over any number of dimensions becomes one
 * loop over all elements.
 */
#ifndef NRTEMU_KERNEL_ITER_H
#define NRTEMU_KERNEL_ITER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernel.h"

#define KITER_MAX_OPS 4

struct kiter {
    int ndim; /* at least 1 */
    int nops;
    uint64_t shape[NRTEMU_MAX_DIMS];
    ptrdiff_t stride[KITER_MAX_OPS][NRTEMU_MAX_DIMS];
};

/* The dimensions [0, ndim) of the shape and of each operand's strides
 * are set, the strides to 0 (what the kiter_ functions read; a memset of
 * the whole, dimensions and operands unused, cost a kernel called on
 * small blocks a good part of its time). */
static inline void
kiter_init(struct kiter *it, uint32_t ndim, const uint64_t *shape, int nops)
{
    it->nops = nops;
    it->ndim = ndim == 0 ? 1 : (int)ndim;
    for (int d = 0; d < it->ndim; d++) {
        it->shape[d] = (uint32_t)d < ndim ? shape[d] : 1;
        for (int k = 0; k < nops; k++) {
            it->stride[k][d] = 0;
        }
    }
}

/* Operand k: a C-ordered array of `shape`, broadcast (NumPy rules,
 * right-aligned) to the iterator's shape. */
static inline void
kiter_broadcast(struct kiter *it, int k, uint32_t ndim, const uint64_t *shape)
{
    ptrdiff_t stride = 1;
    int d = it->ndim - 1;

    for (int s = (int)ndim - 1; d >= 0; d--, s--) {
        uint64_t n = s >= 0 ? shape[s] : 1;
        it->stride[k][d] = (n == 1 && it->shape[d] != 1) ? 0 : stride;
        stride *= (ptrdiff_t)n;
    }
}

static inline void
kiter_collapse(struct kiter *it)
{
    int out = 0;

    for (int d = 0; d < it->ndim; d++) {
        bool merge = out > 0;
        if (it->shape[d] == 1 && it->ndim > 1) {
            continue;
        }
        for (int k = 0; k < it->nops && merge; k++) {
            merge = it->stride[k][out - 1] ==
                    it->stride[k][d] * (ptrdiff_t)it->shape[d];
        }
        if (merge) {
            it->shape[out - 1] *= it->shape[d];
            for (int k = 0; k < it->nops; k++) {
                it->stride[k][out - 1] = it->stride[k][d];
            }
            continue;
        }
        it->shape[out] = it->shape[d];
        for (int k = 0; k < it->nops; k++) {
            it->stride[k][out] = it->stride[k][d];
        }
        out++;
    }
    if (out == 0) {
        /* Every dimension had size 1: one element. */
        it->shape[0] = 1;
        for (int k = 0; k < it->nops; k++) {
            it->stride[k][0] = 0;
        }
        out = 1;
    }
    it->ndim = out;
}

/* Number of inner loops: the product of all but the last dimension. */
static inline uint64_t
kiter_outer_count(const struct kiter *it)
{
    uint64_t n = 1;

    for (int d = 0; d < it->ndim - 1; d++) {
        n *= it->shape[d];
    }
    return n;
}

/* Advance the outer index `idx` and the operand offsets `off` by one. */
static inline void
kiter_next(const struct kiter *it, uint64_t *idx, ptrdiff_t *off)
{
    for (int d = it->ndim - 2; d >= 0; d--) {
        idx[d]++;
        for (int k = 0; k < it->nops; k++) {
            off[k] += it->stride[k][d];
        }
        if (idx[d] < it->shape[d]) {
            return;
        }
        for (int k = 0; k < it->nops; k++) {
            off[k] -= it->stride[k][d] * (ptrdiff_t)it->shape[d];
        }
        idx[d] = 0;
    }
}

#endif /* NRTEMU_KERNEL_ITER_H */
