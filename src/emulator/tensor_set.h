/*
 * tensor_set.h - layout of nrt_tensor_set_t (internal).
 */
#ifndef NRTEMU_TENSOR_SET_H
#define NRTEMU_TENSOR_SET_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

/* nrt_tensor_set_t is void in the ABI: the magic catches foreign pointers. */
#define NRTEMU_TENSOR_SET_MAGIC 0x6e727453u /* "Strn" */

struct nrtemu_tensor_set_entry {
    char *name;           /* owned */
    nrt_tensor_t *tensor; /* borrowed */
};

struct nrtemu_tensor_set {
    uint32_t magic;
    pthread_mutex_t lock; /* guards the entries */
    size_t count;
    size_t capacity;
    struct nrtemu_tensor_set_entry *entries; /* owned; insertion order */
};

#endif /* NRTEMU_TENSOR_SET_H */
