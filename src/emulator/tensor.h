/*
 * tensor.h - layout of nrt_tensor_t (internal).
 */
#ifndef NRTEMU_TENSOR_H
#define NRTEMU_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

#include "storage.h"

/* Marks a live tensor, to catch some stale or foreign handles. */
#define NRTEMU_TENSOR_MAGIC 0x6e72744eu /* "Ntrn" */

struct nrt_tensor {
    uint32_t magic;
    uint32_t epoch; /* runtime the tensor was created in */
    /* One reference, owned; NULL for a tensor without storage. */
    struct nrtemu_storage *storage;
    size_t offset; /* of the tensor's first byte in the storage */
    size_t size;
    nrt_tensor_placement_t placement;
    int vnc;     /* -1 unless DEVICE */
    char name[]; /* NUL-terminated, at most NRT_TENSOR_NAME_MAX - 1 chars */
};

static inline unsigned char *
nrtemu__tensor_data(const struct nrt_tensor *t)
{
    return t->storage != NULL ? t->storage->base + t->offset : NULL;
}

#endif /* NRTEMU_TENSOR_H */
