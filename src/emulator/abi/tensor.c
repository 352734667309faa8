/*
 * tensor.c - the tensor functions of the ABI.
 *
 * Every entry point validates its arguments and the runtime state before
 * touching memory; bounds checks are written so that no sum can wrap
 * (`off > size || n > size - off`).  Reads and writes take no lock: they
 * check the runtime epoch with one atomic load and copy directly between
 * the caller's buffer and the storage.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nrt/nrt.h"

#include "util/error.h"
#include "util/export.h"
#include "util/fork.h"
#include "abi/runtime.h"
#include "device/storage.h"
#include "abi/tensor.h"

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
    atomic_init(&t->completions, 0);
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
        memcpy(nrtemu__tensor_data_for_write(tensor, offset, size), buf, size);
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

NRT_STATUS
nrtemu__tensor_validate(const char *func, const nrt_tensor_t *t,
                        const char *verb, uint64_t offset, uint64_t size)
{
    NRT_STATUS st = tensor_check(func, t, "tensor");

    if (st != NRT_SUCCESS) {
        return st;
    }
    return range_check(func, t, verb, offset, size);
}

NRT_STATUS
nrtemu__tensor_copy_check(const char *func, const nrt_tensor_t *src,
                          uint64_t src_offset, const nrt_tensor_t *dst,
                          uint64_t dst_offset, uint64_t size)
{
    NRT_STATUS st;

    st = tensor_check(func, src, "source tensor");
    if (st != NRT_SUCCESS) {
        return st;
    }
    st = tensor_check(func, dst, "destination tensor");
    if (st != NRT_SUCCESS) {
        return st;
    }
    if (src->placement == NRT_TENSOR_PLACEMENT_DEVICE &&
        dst->placement == NRT_TENSOR_PLACEMENT_DEVICE &&
        src->vnc != dst->vnc) {
        return nrtemu__reject(NRT_INVALID, func,
                              "cannot copy between device tensors on "
                              "different vncs ('%s' on vnc %d, '%s' on vnc "
                              "%d)",
                              src->name, src->vnc, dst->name, dst->vnc);
    }
    st = range_check(func, src, "copy source", src_offset, size);
    if (st != NRT_SUCCESS) {
        return st;
    }
    return range_check(func, dst, "copy destination", dst_offset, size);
}

NRTEMU_EXPORT NRT_STATUS
nrt_tensor_copy(const nrt_tensor_t *src, size_t src_offset, nrt_tensor_t *dst,
                size_t dst_offset, size_t size)
{
    NRT_STATUS st = nrtemu__tensor_copy_check(__func__, src, src_offset, dst,
                                              dst_offset, size);

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (size > 0) {
        /* Slices of one storage may overlap. */
        const unsigned char *from = nrtemu__tensor_data(src) + src_offset;
        memmove(nrtemu__tensor_data_for_write(dst, dst_offset, size), from,
                size);
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
        memset(nrtemu__tensor_data_for_write(tensor, offset, size),
               (unsigned char)value, size);
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

NRTEMU_EXPORT NRT_STATUS
nrt_tensor_get_device_allocation_info(
    const nrt_tensor_t *tensor,
    nrt_tensor_device_allocation_info_t *alloc_info)
{
    const struct nrtemu_storage *s;
    NRT_STATUS st = tensor_check(__func__, tensor, "tensor");

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (alloc_info == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL info pointer");
    }
    s = tensor->storage;
    if (tensor->placement != NRT_TENSOR_PLACEMENT_DEVICE || s == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "tensor '%s' is not a device tensor",
                              tensor->name);
    }
    /* The emulated HBM is host memory: its address stands for the
     * physical one.  Each vnc has its own emulated HBM. */
    alloc_info->physical_address =
        (uint64_t)(uintptr_t)nrtemu__storage_data(tensor->storage);
    alloc_info->size = s->kind == NRTEMU_STORAGE_MAPPED ? s->mapped : s->size;
    alloc_info->hbm_index = tensor->vnc;
    return NRT_SUCCESS;
}

/*
 * Waiters for completion counts.  One condition variable for every
 * tensor: waits are rare and short-lived, and a count that is not waited
 * for costs only the atomic increment and one load of `waiters`.
 */
static pthread_mutex_t completion_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t completion_cond;
static pthread_once_t completion_once = PTHREAD_ONCE_INIT;
static _Atomic unsigned completion_waiters;

static void
completion_init(void)
{
    pthread_condattr_t attr;

    /* Deadlines on the monotonic clock: wall-clock jumps must not end or
     * prolong a wait. */
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&completion_cond, &attr);
    pthread_condattr_destroy(&attr);
}

void
nrtemu__tensor_atfork(enum nrtemu_fork_phase phase)
{
    nrtemu__fork_leaf_lock(&completion_lock, phase);
    if (phase == NRTEMU_FORK_CHILD) {
        /* Waiters of the parent do not exist here; a condition variable
         * that still counted them could block the next broadcast. */
        atomic_store(&completion_waiters, 0);
        completion_init();
    }
}

void
nrtemu__tensor_count_completion(nrt_tensor_t *t)
{
    if (t == NULL || t->magic != NRTEMU_TENSOR_MAGIC) {
        return;
    }
    /* Sequentially consistent with the waiter's registration below, so
     * that either this thread sees the waiter or the waiter sees the new
     * count. */
    atomic_fetch_add(&t->completions, 1);
    if (atomic_load(&completion_waiters) > 0) {
        pthread_once(&completion_once, completion_init);
        pthread_mutex_lock(&completion_lock);
        pthread_cond_broadcast(&completion_cond);
        pthread_mutex_unlock(&completion_lock);
    }
}

static void
timespec_add_us(struct timespec *ts, uint64_t us)
{
    ts->tv_sec += (time_t)(us / 1000000);
    ts->tv_nsec += (long)(us % 1000000) * 1000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec += 1;
        ts->tv_nsec -= 1000000000;
    }
}

/* A negative timeout waits without bound, warning this often (in µs). */
#define COMPLETION_WARN_US ((uint64_t)30 * 1000000)

NRTEMU_EXPORT NRT_STATUS
nrt_tensor_check_output_completion(const nrt_tensor_t *output_tensor,
                                   int64_t timeout,
                                   uint64_t expected_completion_count)
{
    struct timespec deadline;
    bool unbounded = timeout < 0;
    NRT_STATUS st = tensor_check(__func__, output_tensor, "output tensor");

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (atomic_load_explicit(&output_tensor->completions,
                             memory_order_acquire) >=
        expected_completion_count) {
        return NRT_SUCCESS;
    }
    if (timeout == 0) {
        goto timed_out;
    }
    pthread_once(&completion_once, completion_init);
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    timespec_add_us(&deadline,
                    unbounded ? COMPLETION_WARN_US : (uint64_t)timeout);
    pthread_mutex_lock(&completion_lock);
    atomic_fetch_add(&completion_waiters, 1);
    while (atomic_load(&output_tensor->completions) <
           expected_completion_count) {
        int rc = pthread_cond_timedwait(&completion_cond, &completion_lock,
                                        &deadline);
        if (rc != ETIMEDOUT) {
            continue;
        }
        if (!unbounded) {
            break;
        }
        nrtemu__log(
            NRTEMU_LOG_WARN, __func__,
            "still waiting for tensor '%s' to reach %llu "
            "completions (now %llu)",
            output_tensor->name, (unsigned long long)expected_completion_count,
            (unsigned long long)atomic_load(&output_tensor->completions));
        timespec_add_us(&deadline, COMPLETION_WARN_US);
    }
    atomic_fetch_sub(&completion_waiters, 1);
    pthread_mutex_unlock(&completion_lock);
    if (atomic_load_explicit(&output_tensor->completions,
                             memory_order_acquire) >=
        expected_completion_count) {
        return NRT_SUCCESS;
    }
timed_out:
    return nrtemu__reject(
        NRT_TIMEOUT, __func__,
        "tensor '%s' has %llu completions, %llu expected "
        "within %lld us",
        output_tensor->name,
        (unsigned long long)atomic_load(&output_tensor->completions),
        (unsigned long long)expected_completion_count, (long long)timeout);
}

NRTEMU_EXPORT NRT_STATUS
nrt_tensor_reset_output_completion(nrt_tensor_t *output_tensor)
{
    NRT_STATUS st = tensor_check(__func__, output_tensor, "output tensor");

    if (st != NRT_SUCCESS) {
        return st;
    }
    atomic_store_explicit(&output_tensor->completions, 0,
                          memory_order_release);
    return NRT_SUCCESS;
}
