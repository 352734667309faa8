/*
 * tensor.c - the tensor functions of the ABI.
 *
 * Every entry point validates its arguments and the runtime state before
 * touching memory; bounds checks are written so that no sum can wrap
 * (`off > size || n > size - off`).  Reads and writes take no lock: they
 * check the runtime epoch with one atomic load and copy directly between
 * the caller's buffer and the storage.
 */
#include <stdlib.h>
#include <string.h>

#include "nrt/nrt.h"

#include "error.h"
#include "export.h"
#include "runtime.h"
#include "storage.h"
#include "tensor.h"

static nrt_tensor_t *
tensor_new(const char *name, nrt_tensor_placement_t placement, int vnc,
           uint32_t epoch)
{
    size_t len = name != NULL ? strnlen(name, NRT_TENSOR_NAME_MAX - 1) : 0;
    nrt_tensor_t *t = malloc(sizeof *t + len + 1);

    if (t == NULL) {
        return NULL;
    }
    t->magic = NRTEMU_TENSOR_MAGIC;
    t->epoch = epoch;
    t->storage = NULL;
    t->offset = 0;
    t->size = 0;
    t->placement = placement;
    t->vnc = vnc;
    if (len > 0) {
        memcpy(t->name, name, len);
    }
    t->name[len] = '\0';
    return t;
}

/* The open epoch, for calls that create a tensor. */
static NRT_STATUS
open_epoch(const char *func, uint32_t *epoch)
{
    NRT_STATUS st;

    *epoch = nrtemu__runtime_epoch();
    if (*epoch != 0) {
        return NRT_SUCCESS;
    }
    st = nrtemu__runtime_state_error(func, 0);
    if (st != NRT_SUCCESS) {
        return st;
    }
    /* A runtime opened while we looked; it may be gone again already. */
    *epoch = nrtemu__runtime_epoch();
    if (*epoch == 0) {
        return nrtemu__reject(NRT_CLOSED, func, "the runtime is closed");
    }
    return NRT_SUCCESS;
}

static NRT_STATUS
tensor_check(const char *func, const nrt_tensor_t *t, const char *what)
{
    if (t == NULL) {
        return nrtemu__reject(NRT_INVALID, func, "NULL %s", what);
    }
    if (t->magic != NRTEMU_TENSOR_MAGIC) {
        return nrtemu__reject(NRT_INVALID, func,
                              "%s is not a live tensor (freed or corrupt)",
                              what);
    }
    return nrtemu__runtime_check(func, t->epoch);
}

static NRT_STATUS
range_check(const char *func, const nrt_tensor_t *t, const char *verb,
            uint64_t offset, uint64_t size)
{
    if (offset > t->size || size > t->size - offset) {
        return nrtemu__reject(NRT_INVALID, func,
                              "%s of %llu bytes at offset %llu is outside "
                              "tensor '%s' of %zu bytes",
                              verb, (unsigned long long)size,
                              (unsigned long long)offset, t->name, t->size);
    }
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_tensor_allocate(nrt_tensor_placement_t tensor_placement, int vnc,
                    size_t size, const char *name, nrt_tensor_t **tensor)
{
    bool device = tensor_placement == NRT_TENSOR_PLACEMENT_DEVICE;
    struct nrtemu_storage *storage;
    uint32_t epoch;
    nrt_tensor_t *t;
    NRT_STATUS st;

    if (tensor == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL tensor pointer");
    }
    if (!device && tensor_placement != NRT_TENSOR_PLACEMENT_HOST &&
        tensor_placement != NRT_TENSOR_PLACEMENT_VIRTUAL) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "invalid tensor placement %d",
                              (int)tensor_placement);
    }
    st = open_epoch(__func__, &epoch);
    if (st != NRT_SUCCESS) {
        return st;
    }
    if (size == 0) {
        /* The hardware runtime refuses empty tensors with this status. */
        return nrtemu__reject(NRT_RESOURCE, __func__,
                              "cannot allocate a 0-byte tensor '%s'",
                              name != NULL ? name : "");
    }
    st = nrtemu__storage_allocate(__func__, tensor_placement, vnc, epoch, size,
                                  &storage);
    if (st != NRT_SUCCESS) {
        return st;
    }
    t = tensor_new(name, tensor_placement, device ? vnc : -1, epoch);
    if (t == NULL) {
        nrtemu__storage_release(storage);
        return nrtemu__fail(NRT_RESOURCE, __func__, "out of host memory");
    }
    t->storage = storage;
    t->size = size;
    *tensor = t;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT void
nrt_tensor_free(nrt_tensor_t **tensor)
{
    nrt_tensor_t *t;

    if (tensor == NULL || *tensor == NULL) {
        return;
    }
    t = *tensor;
    if (t->magic != NRTEMU_TENSOR_MAGIC) {
        nrtemu__reject(NRT_INVALID, __func__,
                       "not a live tensor (freed or corrupt); ignored");
        return;
    }
    t->magic = 0;
    if (t->storage != NULL) {
        nrtemu__storage_release(t->storage);
    }
    free(t);
    *tensor = NULL;
}

NRTEMU_EXPORT NRT_STATUS
nrt_tensor_read(const nrt_tensor_t *tensor, void *buf, size_t offset,
                size_t size)
{
    NRT_STATUS st = tensor_check(__func__, tensor, "tensor");

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (buf == NULL && size > 0) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL buffer");
    }
    st = range_check(__func__, tensor, "read", offset, size);
    if (st != NRT_SUCCESS) {
        return st;
    }
    if (size > 0) {
        memcpy(buf, nrtemu__tensor_data(tensor) + offset, size);
    }
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_tensor_write(nrt_tensor_t *tensor, const void *buf, size_t offset,
                 size_t size)
{
    NRT_STATUS st = tensor_check(__func__, tensor, "tensor");

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (buf == NULL && size > 0) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL buffer");
    }
    st = range_check(__func__, tensor, "write", offset, size);
    if (st != NRT_SUCCESS) {
        return st;
    }
    if (size > 0) {
        memcpy(nrtemu__tensor_data(tensor) + offset, buf, size);
    }
    return NRT_SUCCESS;
}

/* Check every op of every batch, so that a bad one leaves nothing done. */
static NRT_STATUS
batches_check(const char *func, const nrt_tensor_batch_t *batches,
              uint64_t num_batches, const char *verb)
{
    uint32_t epoch;
    NRT_STATUS st;

    if (batches == NULL && num_batches > 0) {
        return nrtemu__reject(NRT_INVALID, func, "NULL batches");
    }
    if (num_batches == 0) {
        return open_epoch(func, &epoch);
    }
    for (uint64_t i = 0; i < num_batches; i++) {
        const nrt_tensor_batch_t *b = &batches[i];
        st = tensor_check(func, b->tensor, "tensor in batch");
        if (st != NRT_SUCCESS) {
            return st;
        }
        if (b->ops == NULL && b->num_ops > 0) {
            return nrtemu__reject(NRT_INVALID, func,
                                  "batch %llu: NULL ops for %u ops",
                                  (unsigned long long)i, b->num_ops);
        }
        for (uint32_t j = 0; j < b->num_ops; j++) {
            const nrt_tensor_batch_op_t *op = &b->ops[j];
            if (op->buffer == NULL && op->size > 0) {
                return nrtemu__reject(NRT_INVALID, func,
                                      "batch %llu op %u: NULL buffer",
                                      (unsigned long long)i, j);
            }
            st = range_check(func, b->tensor, verb, op->offset, op->size);
            if (st != NRT_SUCCESS) {
                return st;
            }
        }
    }
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_tensor_read_batch(const nrt_tensor_batch_t *batches, uint64_t num_batches,
                      bool unsafe)
{
    NRT_STATUS st = batches_check(__func__, batches, num_batches, "read");

    (void)unsafe;
    if (st != NRT_SUCCESS) {
        return st;
    }
    for (uint64_t i = 0; i < num_batches; i++) {
        const unsigned char *data = nrtemu__tensor_data(batches[i].tensor);
        for (uint32_t j = 0; j < batches[i].num_ops; j++) {
            const nrt_tensor_batch_op_t *op = &batches[i].ops[j];
            if (op->size > 0) {
                memcpy(op->buffer, data + op->offset, op->size);
            }
        }
    }
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_tensor_write_batch(const nrt_tensor_batch_t *batches, uint64_t num_batches,
                       bool unsafe)
{
    NRT_STATUS st = batches_check(__func__, batches, num_batches, "write");

    (void)unsafe;
    if (st != NRT_SUCCESS) {
        return st;
    }
    for (uint64_t i = 0; i < num_batches; i++) {
        /* The ABI passes const tensors to a write; the data is ours. */
        unsigned char *data = nrtemu__tensor_data(batches[i].tensor);
        for (uint32_t j = 0; j < batches[i].num_ops; j++) {
            const nrt_tensor_batch_op_t *op = &batches[i].ops[j];
            if (op->size > 0) {
                memcpy(data + op->offset, op->buffer, op->size);
            }
        }
    }
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_tensor_copy(const nrt_tensor_t *src, size_t src_offset, nrt_tensor_t *dst,
                size_t dst_offset, size_t size)
{
    NRT_STATUS st;

    st = tensor_check(__func__, src, "source tensor");
    if (st != NRT_SUCCESS) {
        return st;
    }
    st = tensor_check(__func__, dst, "destination tensor");
    if (st != NRT_SUCCESS) {
        return st;
    }
    if (src->placement == NRT_TENSOR_PLACEMENT_DEVICE &&
        dst->placement == NRT_TENSOR_PLACEMENT_DEVICE &&
        src->vnc != dst->vnc) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "cannot copy between device tensors on "
                              "different vncs ('%s' on vnc %d, '%s' on vnc "
                              "%d)",
                              src->name, src->vnc, dst->name, dst->vnc);
    }
    st = range_check(__func__, src, "copy source", src_offset, size);
    if (st != NRT_SUCCESS) {
        return st;
    }
    st = range_check(__func__, dst, "copy destination", dst_offset, size);
    if (st != NRT_SUCCESS) {
        return st;
    }
    if (size > 0) {
        /* Slices of one storage may overlap. */
        memmove(nrtemu__tensor_data(dst) + dst_offset,
                nrtemu__tensor_data(src) + src_offset, size);
    }
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_tensor_memset(nrt_tensor_t *tensor, uint64_t offset, int value,
                  size_t size)
{
    NRT_STATUS st = tensor_check(__func__, tensor, "tensor");

    if (st != NRT_SUCCESS) {
        return st;
    }
    st = range_check(__func__, tensor, "memset", offset, size);
    if (st != NRT_SUCCESS) {
        return st;
    }
    if (size > 0) {
        memset(nrtemu__tensor_data(tensor) + offset, (unsigned char)value,
               size);
    }
    return NRT_SUCCESS;
}

NRTEMU_EXPORT size_t
nrt_tensor_get_size(const nrt_tensor_t *tensor)
{
    if (tensor == NULL || tensor->magic != NRTEMU_TENSOR_MAGIC) {
        return 0;
    }
    return tensor->size;
}

NRTEMU_EXPORT NRT_STATUS
nrt_tensor_allocate_empty(const char *name, nrt_tensor_t **tensor)
{
    uint32_t epoch;
    nrt_tensor_t *t;
    NRT_STATUS st;

    if (tensor == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL tensor pointer");
    }
    st = open_epoch(__func__, &epoch);
    if (st != NRT_SUCCESS) {
        return st;
    }
    t = tensor_new(name, NRT_TENSOR_PLACEMENT_VIRTUAL, -1, epoch);
    if (t == NULL) {
        return nrtemu__fail(NRT_RESOURCE, __func__, "out of host memory");
    }
    *tensor = t;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_tensor_attach_buffer(nrt_tensor_t *tensor, void *buffer, size_t size)
{
    struct nrtemu_storage *storage;
    NRT_STATUS st = tensor_check(__func__, tensor, "tensor");

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (buffer == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL buffer");
    }
    if (size == 0) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "cannot attach a 0-byte buffer to '%s'",
                              tensor->name);
    }
    st = nrtemu__storage_attach(__func__, buffer, size, &storage);
    if (st != NRT_SUCCESS) {
        return st;
    }
    /* Slices of the old storage keep their own references to it. */
    if (tensor->storage != NULL) {
        nrtemu__storage_release(tensor->storage);
    }
    tensor->storage = storage;
    tensor->offset = 0;
    tensor->size = size;
    tensor->placement = NRT_TENSOR_PLACEMENT_VIRTUAL;
    tensor->vnc = -1;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_tensor_allocate_slice(const nrt_tensor_t *tensor_source, size_t offset,
                          size_t size, const char *name,
                          nrt_tensor_t **tensor_slice)
{
    nrt_tensor_t *t;
    NRT_STATUS st;

    if (tensor_slice == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL slice pointer");
    }
    st = tensor_check(__func__, tensor_source, "source tensor");
    if (st != NRT_SUCCESS) {
        return st;
    }
    if (size == 0) {
        /* Tensors are never empty: a 0-byte view has nothing to show. */
        return nrtemu__reject(NRT_INVALID, __func__,
                              "empty slice at offset %zu of tensor '%s'",
                              offset, tensor_source->name);
    }
    st = range_check(__func__, tensor_source, "slice", offset, size);
    if (st != NRT_SUCCESS) {
        return st;
    }
    t = tensor_new(name, tensor_source->placement, tensor_source->vnc,
                   tensor_source->epoch);
    if (t == NULL) {
        return nrtemu__fail(NRT_RESOURCE, __func__, "out of host memory");
    }
    nrtemu__storage_retain(tensor_source->storage);
    t->storage = tensor_source->storage;
    t->offset = tensor_source->offset + offset;
    t->size = size;
    *tensor_slice = t;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT void *
nrt_tensor_get_va(const nrt_tensor_t *tensor)
{
    if (tensor_check(__func__, tensor, "tensor") != NRT_SUCCESS) {
        return NULL;
    }
    if (tensor->storage == NULL) {
        nrtemu__reject(NRT_INVALID, __func__, "tensor '%s' has no storage",
                       tensor->name);
        return NULL;
    }
    return nrtemu__tensor_data(tensor);
}
