/*
 * tensor.h - layout of nrt_tensor_t (internal).
 */
#ifndef NRTEMU_TENSOR_H
#define NRTEMU_TENSOR_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"

#include "device/storage.h"

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
    int vnc; /* -1 unless DEVICE */
    /* Executions completed with this tensor as an output, since the
     * allocation or nrt_tensor_reset_output_completion(). */
    _Atomic uint64_t completions;
    char name[]; /* NUL-terminated, at most NRT_TENSOR_NAME_MAX - 1 chars */
};

/* The tensor's first byte (its storage filled first if need be). */
static inline unsigned char *
nrtemu__tensor_data(const struct nrt_tensor *t)
{
    return t->storage != NULL ? nrtemu__storage_data(t->storage) + t->offset
                              : NULL;
}

/*
 * The first byte of [offset, offset + size) of `t`, about to be
 * overwritten: when that range is the whole storage, no fill happens.
 */
static inline unsigned char *
nrtemu__tensor_data_for_write(const struct nrt_tensor *t, uint64_t offset,
                              uint64_t size)
{
    if (t->offset == 0 && offset == 0 && size == t->storage->size) {
        return nrtemu__storage_claim(t->storage);
    }
    return nrtemu__tensor_data(t) + offset;
}

/*
 * The checks of nrt_tensor_read/write (`verb` names the access in the
 * detail): a live tensor of the open runtime and an in-bounds range.
 */
NRT_STATUS nrtemu__tensor_validate(const char *func, const nrt_tensor_t *t,
                                   const char *verb, uint64_t offset,
                                   uint64_t size);

/* The checks of nrt_tensor_copy(). */
NRT_STATUS nrtemu__tensor_copy_check(const char *func, const nrt_tensor_t *src,
                                     uint64_t src_offset,
                                     const nrt_tensor_t *dst,
                                     uint64_t dst_offset, uint64_t size);

/*
 * Count one completed execution for output tensor `t` and wake the
 * threads waiting in nrt_tensor_check_output_completion().  NULL and dead
 * tensors are ignored.
 */
void nrtemu__tensor_count_completion(nrt_tensor_t *t);

#endif /* NRTEMU_TENSOR_H */
