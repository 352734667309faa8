/*
 * nrt/nrt_experimental.h - the experimental part of the libnrt ABI: model
 * I/O description, the legacy async hooks, tracing and other extras.
 *
 * Clean-room header of the nrtpy project: names, signatures, enum values
 * and struct layouts are those of the Neuron runtime's header of the same
 * name.
 *
 * Thread safety: every function may be called from any thread.  On
 * failure the emulator keeps a description readable with
 * nrtemu_last_error() (nrt/nrtemu.h).
 */
#ifndef NRT_NRT_EXPERIMENTAL_H
#define NRT_NRT_EXPERIMENTAL_H

#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"
#include "nrt/nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NRT_TENSOR_NAME_MAX 256

typedef enum {
    NRT_TENSOR_USAGE_INPUT = 0,
    NRT_TENSOR_USAGE_OUTPUT = 1,
} nrt_tensor_usage_t;

typedef struct nrt_tensor_info {
    char name[NRT_TENSOR_NAME_MAX];
    nrt_tensor_usage_t usage;
    size_t size;
    nrt_dtype_t dtype;
    uint32_t *shape; /* ndim entries, owned by the enclosing array */
    uint32_t ndim;
} nrt_tensor_info_t;

typedef struct nrt_tensor_info_array {
    uint64_t tensor_count;
    nrt_tensor_info_t tensor_array[];
} nrt_tensor_info_array_t;

typedef struct nrt_model_info {
    uint32_t vnc;
} nrt_model_info_t;

/* One microcode image of nrt_set_pool_eng_ucode(). */
typedef struct nrt_ucode_img {
    uint8_t *bin;
    size_t size;
} nrt_ucode_img;

typedef struct nrt_ucode_info {
    nrt_ucode_img iram;
    nrt_ucode_img dram;
} nrt_ucode_info;

/* Completion callback of the legacy implicit-async execution mode. */
typedef void (*NRT_ASYNC_EXEC_STATUS_CALLBACK)(void *params, uint32_t model_id,
                                               uint32_t vnc, uint64_t job_id,
                                               NRT_STATUS status);

#if defined(__x86_64__) || defined(__aarch64__)
#ifdef __cplusplus
#define NRT_EXPERIMENTAL_ASSERT_ static_assert
#else
#define NRT_EXPERIMENTAL_ASSERT_ _Static_assert
#endif
NRT_EXPERIMENTAL_ASSERT_(sizeof(nrt_tensor_info_t) == 296,
                         "nrt_tensor_info_t");
NRT_EXPERIMENTAL_ASSERT_(offsetof(nrt_tensor_info_t, usage) == 256, "usage");
NRT_EXPERIMENTAL_ASSERT_(offsetof(nrt_tensor_info_t, size) == 264, "size");
NRT_EXPERIMENTAL_ASSERT_(offsetof(nrt_tensor_info_t, dtype) == 272, "dtype");
NRT_EXPERIMENTAL_ASSERT_(offsetof(nrt_tensor_info_t, shape) == 280, "shape");
NRT_EXPERIMENTAL_ASSERT_(offsetof(nrt_tensor_info_t, ndim) == 288, "ndim");
NRT_EXPERIMENTAL_ASSERT_(sizeof(nrt_model_info_t) == 4, "nrt_model_info_t");
NRT_EXPERIMENTAL_ASSERT_(sizeof(nrt_ucode_info) == 32, "nrt_ucode_info");
#undef NRT_EXPERIMENTAL_ASSERT_
#endif
#ifndef __cplusplus
/* A flexible array member: C only (C++ compilers allow it as an extension
 * but offsetof on it is not portable there). */
_Static_assert(offsetof(nrt_tensor_info_array_t, tensor_array) == 8,
               "tensor_array");
#endif

/* ------------------------------------------------------------ model info */

/**
 * Describe the model's I/O tensors: inputs first, then outputs, in NEFF
 * order.  Works while the model is loaded, whatever the runtime state.
 * @param tensor_info[out] new array.
 * Ownership: the caller frees the array, with the shapes it owns, with
 * nrt_free_model_tensor_info().
 */
NRT_STATUS nrt_get_model_tensor_info(nrt_model_t *model,
                                     nrt_tensor_info_array_t **tensor_info);

/** Free an array of nrt_get_model_tensor_info(); NULL is accepted. */
NRT_STATUS nrt_free_model_tensor_info(nrt_tensor_info_array_t *tensor_info);

/** Deprecated: copies of the model staged; always 1 in the emulator. */
NRT_STATUS nrt_get_model_instance_count(nrt_model_t *model,
                                        uint32_t *instance_count);

/**
 * The model's first vnc.  Size in/out protocol: writes
 * min(info_size_in, sizeof *info) bytes and reports the count in
 * `*info_size_out` (which may be NULL).
 */
NRT_STATUS nrt_get_model_info(const nrt_model_t *model, nrt_model_info_t *info,
                              size_t info_size_in, size_t *info_size_out);

/* ------------------------------------------------- legacy async execution */

/**
 * Register the completion callback of the legacy implicit-async mode; a
 * later call replaces the earlier one and NULL unregisters.  That mode was
 * removed from the runtime (executions are synchronous), so the emulator
 * keeps the callback but never has a queued execution to call it for.
 * @return NRT_SUCCESS.
 */
NRT_STATUS
nrt_register_async_exec_callback(NRT_ASYNC_EXEC_STATUS_CALLBACK callback,
                                 void *params);

/**
 * Block until the executions queued on `vnc` are done: the nrta_* work
 * scheduled on the vnc (nrt_async.h).
 * @return NRT_SUCCESS; NRT_INVALID for a vnc that is not visible;
 *         NRT_UNINITIALIZED or NRT_CLOSED.
 */
NRT_STATUS nrt_async_drain_queued_execs(int32_t vnc);

/* ----------------------------------------------------------------- extras */

/**
 * Copy into device memory mapped with nrt_get_hbm_mmap_va().  The
 * emulator maps no HBM region, so no address is valid here.
 * @return NRT_INVALID with a detail saying so (use nrt_tensor_write()).
 */
NRT_STATUS nrt_memcpy_to_device(void *dest, const void *src, size_t size);

/**
 * Start the runtime's internal API trace (`trace_mem`: with memory
 * events).  Not available in the emulator: use nrt_sys_trace_start().
 * @return NRT_INVALID with a detail saying so.
 */
NRT_STATUS nrt_trace_start(bool trace_mem);

/** End the internal API trace into `filename`.  As nrt_trace_start(). */
NRT_STATUS nrt_trace_stop(const char *filename);

/**
 * Replace the pool engine's microcode; only before nrt_init().  The
 * emulator runs no microcode.
 * @return NRT_INVALID with a detail saying so, or for NULL.
 */
NRT_STATUS nrt_set_pool_eng_ucode(const nrt_ucode_info *ucode_info);

/**
 * The NCCL network plugin of the runtime ("temporary" in the runtime's
 * header).  The emulator has none: returns NULL, sets `*err` to
 * NRT_INVALID and writes the reason into `err_msg` (at most
 * `err_msg_size` bytes, NUL included) when those are not NULL.
 */
void *nrt_get_libnccl_net(int *err, char *err_msg, size_t err_msg_size);

/**
 * Wait until every rank of the global communicator (nrt_build_global_comm(),
 * which this joins first if needed) has called nrt_barrier() as often.
 * @return NRT_SUCCESS; NRT_TIMEOUT naming the ranks missing after
 *         NEURON_RT_EXEC_TIMEOUT; NRT_EXEC_HW_ERR_COLLECTIVES after such a
 *         failure or when a rank left; NRT_INVALID as
 *         nrt_build_global_comm().
 */
NRT_STATUS nrt_barrier(int32_t vnc, uint32_t g_device_id,
                       uint32_t g_device_count);

/**
 * Gather `rank_input_size` bytes of `input` from every rank of the global
 * communicator into `output` (g_device_count * rank_input_size bytes, in
 * rank order); a barrier too.
 * Ownership: both buffers stay the caller's; only read and written during
 * the call.
 * @return as nrt_barrier(); NRT_INVALID for a NULL buffer.
 */
NRT_STATUS nrt_all_gather(int32_t vnc, uint32_t g_device_id,
                          uint32_t g_device_count, uint32_t rank_input_size,
                          void *input, void *output);

#ifdef __cplusplus
}
#endif

#endif /* NRT_NRT_EXPERIMENTAL_H */
