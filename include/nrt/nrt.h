/*
 * nrt/nrt.h - the libnrt C ABI, as implemented by the nrtpy emulator.
 *
 * Clean-room header of the nrtpy project.  Function names, signatures, enum
 * values and struct layouts are those of the Neuron runtime's libnrt.so.1,
 * so a program built against this header runs on the real library or on
 * the emulator that ships with nrtpy.  Like the runtime's own headers, the
 * declarations are split over nrt.h (this file), nrt_status.h,
 * nrt_version.h, nrt_experimental.h, nrt_profile.h, nrt_sys_trace.h and
 * nrt_async.h.
 *
 * Conventions for every function below:
 *  - "vnc" is a logical NeuronCore index relative to the cores visible to
 *    this process: the first visible core is 0.
 *  - Thread safety: every function may be called from any thread at any
 *    time; concurrent calls on the same tensor are serialised only as far
 *    as the data they touch (two writes to overlapping bytes race, as DMA
 *    on hardware does).
 *  - Output pointers are left untouched on failure unless stated.
 *  - On failure, the emulator keeps a thread-local description of the error,
 *    readable with nrtemu_last_error() (nrt/nrtemu.h).
 */
#ifndef NRT_NRT_H
#define NRT_NRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NRT_MAJOR_VERSION 2
#define NRT_MINOR_VERSION 0

/* ---------------------------------------------------------------- enums */

/*
 * The enum typedefs are anonymous, as in the Neuron runtime's headers, so
 * that C++ code mangles their names the same way against either header.
 */

typedef enum {
    NRT_TENSOR_PLACEMENT_DEVICE = 0,  /* HBM of one vnc */
    NRT_TENSOR_PLACEMENT_HOST = 1,    /* DMA-able host memory (deprecated) */
    NRT_TENSOR_PLACEMENT_VIRTUAL = 2, /* plain host memory */
} nrt_tensor_placement_t;

typedef enum {
    NRT_FRAMEWORK_TYPE_INVALID = 0,
    NRT_FRAMEWORK_TYPE_NO_FW = 1,
    NRT_FRAMEWORK_TYPE_TENSORFLOW = 2,
    NRT_FRAMEWORK_TYPE_PYTORCH = 3,
    NRT_FRAMEWORK_TYPE_MXNET = 4,
    NRT_FRAMEWORK_TYPE_PRECHECK = 5,
} nrt_framework_type_t;

enum {
    NRT_INSTANCE_UNKNOWN = 0,
    NRT_INSTANCE_INF1 = 1,
    NRT_INSTANCE_TRN1 = 2,
    NRT_INSTANCE_TRN1N = 3,
    NRT_INSTANCE_INF2 = 4,
    NRT_INSTANCE_TRN2 = 5,
    NRT_INSTANCE_TRN2N = 6,
    NRT_INSTANCE_INF2E = 7,
    NRT_INSTANCE_TRN2P = 8,
    NRT_INSTANCE_TRN2U = 9,
    NRT_INSTANCE_TRN2E = 10,
    NRT_INSTANCE_TRN2EU = 11,
    NRT_INSTANCE_TRN2AC = 12,
    NRT_INSTANCE_TRN2UAC = 13,
    NRT_INSTANCE_TRN3 = 14,
    NRT_INSTANCE_TRN3PDS98 = 15,
};

enum {
    NRT_INSTANCE_SIZE_1XL = 0,
    NRT_INSTANCE_SIZE_2XL = 1,
    NRT_INSTANCE_SIZE_4XL = 2,
    NRT_INSTANCE_SIZE_6XL = 3,
    NRT_INSTANCE_SIZE_8XL = 4,
    NRT_INSTANCE_SIZE_24XL = 5,
    NRT_INSTANCE_SIZE_32XL = 6,
    NRT_INSTANCE_SIZE_48XL = 7,
    NRT_INSTANCE_SIZE_3XL = 8,
    NRT_INSTANCE_SIZE_UNKNOWN = 9,
    NRT_INSTANCE_SIZE_NUM = 9,
};

typedef enum {
    NRT_DTYPE_UNKNOWN = 0x0,
    NRT_DTYPE_INVALID = 0x0,
    NRT_DTYPE_UINT64 = 0x1,
    NRT_DTYPE_INT8 = 0x2,
    NRT_DTYPE_UINT8 = 0x3,
    NRT_DTYPE_INT16 = 0x4,
    NRT_DTYPE_UINT16 = 0x5,
    NRT_DTYPE_BFLOAT16 = 0x6,
    NRT_DTYPE_FLOAT16 = 0x7,
    NRT_DTYPE_INT32 = 0x8,
    NRT_DTYPE_UINT32 = 0x9,
    NRT_DTYPE_FLOAT32 = 0xA,
    NRT_DTYPE_FP32R = 0xB,
    NRT_DTYPE_INT64 = 0xC,
    NRT_DTYPE_FP8_E3 = 0xD,
    NRT_DTYPE_FP8_E4 = 0xE,
    NRT_DTYPE_FP8_E5 = 0xF,
} nrt_dtype_t;

/* Reduction of a collective operation. */
typedef enum {
    NRT_OP_ADD = 0x0,
    NRT_OP_FMA = 0x1,
    NRT_OP_MAX = 0x2,
    NRT_OP_MIN = 0x3,
    NRT_OP_INVALID = 0xF,
} nrt_op_type_t;

/* Kind of a collective operation. */
typedef enum {
    NRT_CC_ALLGATHER = 0,
    NRT_CC_ALLREDUCE = 1,
    NRT_CC_REDUCESCATTER = 2,
} nrt_cc_op_type_t;

/* --------------------------------------------------------------- handles */

typedef struct nrt_tensor nrt_tensor_t;         /* opaque */
typedef struct nrt_model nrt_model_t;           /* opaque */
typedef void nrt_tensor_set_t;                  /* opaque name -> tensor map */
typedef struct nrt_cc_context nrt_cc_context_t; /* opaque */

/* --------------------------------------------------------------- structs */

typedef struct nrt_instance_info {
    uint32_t family;    /* NRT_INSTANCE_* */
    uint32_t size;      /* NRT_INSTANCE_SIZE_* */
    char arch_name[16]; /* NUL-terminated, e.g. "trainium" */
    char device_revision[8];
} nrt_instance_info_t;

typedef struct nrt_vnc_memory_stats {
    size_t bytes_used;
    size_t bytes_limit;
} nrt_vnc_memory_stats_t;

typedef struct nrt_tensor_device_allocation_info {
    uint64_t physical_address;
    size_t size; /* of the whole allocation; may exceed the tensor's */
    int hbm_index;
} nrt_tensor_device_allocation_info_t;

/* One {offset, size, buffer} transfer of nrt_tensor_{read,write}_batch. */
typedef uint64_t nrt_tensor_batch_offset_t;
typedef uint64_t nrt_tensor_batch_size_t;

typedef struct nrt_tensor_batch_op {
    nrt_tensor_batch_offset_t offset;
    nrt_tensor_batch_size_t size;
    void *buffer;
} nrt_tensor_batch_op_t;

typedef struct nrt_tensor_batch {
    const nrt_tensor_t *tensor;
    const nrt_tensor_batch_op_t *ops;
    uint32_t num_ops;
} nrt_tensor_batch_t;

/* A communicator: this rank's place in a replica group. */
typedef struct nrt_cc_comm {
    uint32_t *replica_group;
    uint32_t rank;
    uint32_t rank_n;
    uint32_t ctx_device_id;
    uint32_t ctx_device_count;
    uint32_t vnc;
} nrt_cc_comm_t;

typedef struct nrt_tensor_list {
    nrt_tensor_t **tensors;
    size_t num_tensors;
} nrt_tensor_list_t;

/* The layouts are ABI: a mismatch here would corrupt real callers. */
#if defined(__x86_64__) || defined(__aarch64__)
#ifdef __cplusplus
#define NRT_STATIC_ASSERT_ static_assert
#else
#define NRT_STATIC_ASSERT_ _Static_assert
#endif
NRT_STATIC_ASSERT_(sizeof(nrt_instance_info_t) == 32, "nrt_instance_info_t");
NRT_STATIC_ASSERT_(offsetof(nrt_instance_info_t, arch_name) == 8, "arch_name");
NRT_STATIC_ASSERT_(offsetof(nrt_instance_info_t, device_revision) == 24,
                   "device_revision");
NRT_STATIC_ASSERT_(sizeof(nrt_vnc_memory_stats_t) == 16, "memory stats");
NRT_STATIC_ASSERT_(sizeof(nrt_tensor_device_allocation_info_t) == 24,
                   "nrt_tensor_device_allocation_info_t");
NRT_STATIC_ASSERT_(sizeof(nrt_tensor_batch_op_t) == 24,
                   "nrt_tensor_batch_op_t");
NRT_STATIC_ASSERT_(sizeof(nrt_tensor_batch_t) == 24, "nrt_tensor_batch_t");
NRT_STATIC_ASSERT_(sizeof(nrt_cc_comm_t) == 32, "nrt_cc_comm_t");
NRT_STATIC_ASSERT_(sizeof(nrt_tensor_list_t) == 16, "nrt_tensor_list_t");
#undef NRT_STATIC_ASSERT_
#endif

/* ------------------------------------------------- init, close, queries */

/*
 * fork(): a runtime belongs to the process that initialised it.  In a child
 * forked while a runtime was open, that runtime is closed (even if another
 * thread was executing at the moment of the fork: the child never waits for
 * it): every tensor, model and call of it fails with NRT_CLOSED, with a
 * detail naming fork and the parent's PID; the cores stay the parent's.
 * nrt_close() in the child does nothing, and nrt_init() there claims cores
 * of the child's own, as any process does (a core the parent holds is busy,
 * naming the parent's PID).  Tensor sets and error trackers are host
 * objects and stay usable; freeing inherited tensors and models frees the
 * child's copies of them only.
 */

/**
 * Initialise the runtime and claim the visible NeuronCores for this process.
 * Reads NEURON_RT_VISIBLE_CORES, NEURON_RT_NUM_CORES and the log settings.
 * @param framework   NRT_FRAMEWORK_TYPE_NO_FW for plain applications.
 * @param fw_version  free text for tooling; may be NULL.
 * @param fal_version free text for tooling; may be NULL.
 * @return NRT_SUCCESS; NRT_RESOURCE when a core is owned by another process;
 *         NRT_INVALID for bad core settings; NRT_FAILURE when already
 *         initialised.
 */
NRT_STATUS nrt_init(nrt_framework_type_t framework, const char *fw_version,
                    const char *fal_version);

/**
 * Release the cores and end the runtime.  Tensors still allocated keep their
 * host memory until they are freed, but every operation on them fails:
 * with NRT_CLOSED until the next nrt_init(), with NRT_INVALID (a tensor of
 * an older runtime) after it.  A later nrt_init() starts a new runtime.
 */
void nrt_close(void);

/** Instance family and size; writes at most `instance_info_len` bytes. */
NRT_STATUS nrt_get_instance_info(nrt_instance_info_t *info,
                                 size_t instance_info_len);

/* ----------------------------------------------------------- core counts */

/** All vncs of the instance, whatever is visible.  Callable before init. */
NRT_STATUS nrt_get_total_vnc_count(uint32_t *vnc_count);
/** Deprecated alias of nrt_get_total_vnc_count(). */
NRT_STATUS nrt_get_total_nc_count(uint32_t *vnc_count);
/** Vncs visible to this process.  Callable before init (reads the env). */
NRT_STATUS nrt_get_visible_vnc_count(uint32_t *vnc_count);
/** Deprecated alias of nrt_get_visible_vnc_count(). */
NRT_STATUS nrt_get_visible_nc_count(uint32_t *vnc_count);

/**
 * Device memory used and the limit of one vnc.  Size in/out protocol:
 * writes min(stats_size_in, sizeof *stats) bytes and reports the count in
 * `*stats_size_out` (which may be NULL).
 */
NRT_STATUS nrt_get_vnc_memory_stats(uint32_t vnc,
                                    nrt_vnc_memory_stats_t *stats,
                                    size_t stats_size_in,
                                    size_t *stats_size_out);

/* ---------------------------------------------------------------- tensors */

/**
 * Allocate a tensor of `size` bytes, reading as zero until written (with
 * NRTPY_EMU_POISON=1 the emulator fills it with a signalling-NaN pattern
 * instead, to expose reads of memory never written).
 * @param vnc  core for DEVICE placement; ignored (pass -1) otherwise.
 * @param name optional, for logs; copied.
 * @param tensor[out] new handle; free it with nrt_tensor_free().
 * @return NRT_RESOURCE for size 0, when the core's HBM is exhausted or when
 *         the host has no memory left to back it;
 *         NRT_INVALID for a bad vnc or placement.
 */
NRT_STATUS nrt_tensor_allocate(nrt_tensor_placement_t tensor_placement,
                               int vnc, size_t size, const char *name,
                               nrt_tensor_t **tensor);

/**
 * Free a tensor and set `*tensor` to NULL.  NULL and `*tensor == NULL` are
 * accepted.  Storage shared with slices is released when its last user is
 * freed; an attached caller buffer is never freed.
 * Thread safety: the caller must not free a tensor another thread is using.
 */
void nrt_tensor_free(nrt_tensor_t **tensor);

/** Copy bytes [offset, offset + size) of the tensor into `buf`. */
NRT_STATUS nrt_tensor_read(const nrt_tensor_t *tensor, void *buf,
                           size_t offset, size_t size);

/** Copy `size` bytes of `buf` into the tensor at `offset`. */
NRT_STATUS nrt_tensor_write(nrt_tensor_t *tensor, const void *buf,
                            size_t offset, size_t size);

/** Many reads at once; `unsafe` is accepted and has no effect. */
NRT_STATUS nrt_tensor_read_batch(const nrt_tensor_batch_t *batches,
                                 uint64_t num_batches, bool unsafe);

/** Many writes at once; `unsafe` is accepted and has no effect. */
NRT_STATUS nrt_tensor_write_batch(const nrt_tensor_batch_t *batches,
                                  uint64_t num_batches, bool unsafe);

/**
 * Copy between tensors.  Two device tensors must be on the same vnc.
 * Overlapping ranges of one storage are handled like memmove.
 */
NRT_STATUS nrt_tensor_copy(const nrt_tensor_t *src, size_t src_offset,
                           nrt_tensor_t *dst, size_t dst_offset, size_t size);

/** Set `size` bytes at `offset` to `(unsigned char)value`. */
NRT_STATUS nrt_tensor_memset(nrt_tensor_t *tensor, uint64_t offset, int value,
                             size_t size);

/** Byte size of the tensor; 0 for NULL or a tensor without storage. */
size_t nrt_tensor_get_size(const nrt_tensor_t *tensor);

/** Create a tensor without storage (size 0); attach one later. */
NRT_STATUS nrt_tensor_allocate_empty(const char *name, nrt_tensor_t **tensor);

/**
 * Use caller memory as the tensor's storage; the placement becomes VIRTUAL.
 * Previous storage is released.  Ownership: `buffer` stays the caller's and
 * must outlive the tensor and every slice of it.
 * Thread safety: not concurrently with other calls on the same tensor.
 * @return NRT_INVALID for a NULL buffer or a size of 0.
 */
NRT_STATUS nrt_tensor_attach_buffer(nrt_tensor_t *tensor, void *buffer,
                                    size_t size);

/**
 * Create a view of [offset, offset + size) of `tensor_source`.
 * Ownership: the slice shares the source's storage, which stays alive until
 * both are freed.  Free the slice with nrt_tensor_free().
 * @return NRT_INVALID for an empty or out-of-bounds range.
 */
NRT_STATUS nrt_tensor_allocate_slice(const nrt_tensor_t *tensor_source,
                                     size_t offset, size_t size,
                                     const char *name,
                                     nrt_tensor_t **tensor_slice);

/** Host address of the tensor's first byte, or NULL on failure. */
void *nrt_tensor_get_va(const nrt_tensor_t *tensor);

/**
 * Where the tensor lives on the device.  The emulator reports the host
 * address of the emulated HBM as `physical_address`, the size of the
 * whole allocation behind the tensor (a slice reports its parent's) and
 * the HBM index of the tensor's vnc.
 * @return NRT_SUCCESS; NRT_INVALID for NULL arguments or a tensor that is
 *         not on the device (host, virtual or empty tensors).
 */
NRT_STATUS nrt_tensor_get_device_allocation_info(
    const nrt_tensor_t *tensor,
    nrt_tensor_device_allocation_info_t *alloc_info);

/**
 * Wait until the tensor has been the output of `expected_completion_count`
 * completed executions since it was allocated or last reset.  Each
 * successful nrt_execute() or nrta_execute_schedule() counts once for
 * every tensor of its output set.
 * @param timeout microseconds; 0 polls; negative waits without bound
 *                (logging a warning every 30 s).
 * @return NRT_SUCCESS; NRT_INVALID for a NULL or dead tensor; NRT_TIMEOUT.
 * Thread safety: any number of threads may wait on one tensor.
 */
NRT_STATUS
nrt_tensor_check_output_completion(const nrt_tensor_t *output_tensor,
                                   int64_t timeout,
                                   uint64_t expected_completion_count);

/** Set the tensor's completion count back to 0.  NULL: NRT_INVALID. */
NRT_STATUS nrt_tensor_reset_output_completion(nrt_tensor_t *output_tensor);

/* ----------------------------------------------------------- tensor sets */

/** Create an empty set; destroy it with nrt_destroy_tensor_set(). */
NRT_STATUS nrt_allocate_tensor_set(nrt_tensor_set_t **result);

/** Destroy a set (not its tensors) and set `*tensor_set` to NULL. */
void nrt_destroy_tensor_set(nrt_tensor_set_t **tensor_set);

/**
 * Add `tensor` under `tensor_name`, replacing an existing entry of that
 * name.  The tensor is borrowed: it must outlive its use in the set.
 */
NRT_STATUS nrt_add_tensor_to_tensor_set(nrt_tensor_set_t *tensor_set,
                                        const char *tensor_name,
                                        nrt_tensor_t *tensor);

/** Look up by name; NRT_FAILURE (and `*tensor` untouched) when absent. */
NRT_STATUS nrt_get_tensor_from_tensor_set(nrt_tensor_set_t *tensor_set,
                                          const char *tensor_name,
                                          nrt_tensor_t **tensor);

/* ---------------------------------------------------------------- models */

/**
 * Parse a NEFF held in memory and place it on vnc `vnc`.
 * Reads NEURON_RT_EXEC_TIMEOUT (integer seconds, default 600, 0 disables
 * the limit) and NEURON_RT_VALIDATE_HASH (bool) at this call.  A NEFF
 * without an emulator program loads too, so that its I/O can be inspected;
 * executing it then fails.
 * @param neff_bytes the image; only read during the call.
 * @param size       bytes of the image.
 * @param vnc        first vnc of the model, or -1 for vnc 0.
 * @param vnc_count  deprecated: -1 or 1, or the model's vnc need.
 * @param model[out] new handle; release it with nrt_unload().
 * @return NRT_SUCCESS; NRT_INVALID for a bad argument, a vnc that is not
 *         visible ("Could not find VNC id N") or a malformed NEFF or
 *         program; NRT_UNSUPPORTED_NEFF_VERSION; NRT_RESOURCE when host
 *         memory runs out; NRT_UNINITIALIZED or NRT_CLOSED.
 * Ownership: the model copies what it keeps; `neff_bytes` stays the
 * caller's.
 */
NRT_STATUS nrt_load(const void *neff_bytes, size_t size, int32_t vnc,
                    int32_t vnc_count, nrt_model_t **model);

/**
 * nrt_load() for a NEFF with collective operations, as rank
 * `ctx_device_id` of `ctx_device_count` participants.  Every rank loads
 * the same NEFF; a collective op of an execution completes when every
 * rank of its group has reached it.  In the emulator the ranks of a world
 * are models of one process on distinct vncs (threads executing them),
 * matched by the NEFF's SHA-256 and the count.  A rank that does not
 * arrive within NEURON_RT_EXEC_TIMEOUT fails the others' execution with
 * NRT_TIMEOUT naming it; one that unloads meanwhile, with
 * NRT_EXEC_HW_ERR_COLLECTIVES.  A count of 1 runs the collectives as a
 * world of one.
 * @return as nrt_load(); NRT_INVALID also when `ctx_device_id` is not
 *         below `ctx_device_count`, the NEFF's replica groups do not fit
 *         the count, or another rank of the world is on `vnc`.
 */
NRT_STATUS nrt_load_collectives(const void *neff_bytes, size_t size,
                                int32_t vnc, int32_t vnc_count,
                                uint32_t ctx_device_id,
                                uint32_t ctx_device_count,
                                nrt_model_t **model);

/**
 * Make vnc `vnc` rank `g_device_id` of the `g_device_count` ranks of the
 * global communicator (the host-level collectives nrt_barrier() and
 * nrt_all_gather() of nrt_experimental.h).  Calling it again with the
 * same rank does nothing; the membership ends at nrt_close().
 * @return NRT_SUCCESS; NRT_INVALID for a vnc that is not visible, an id
 *         not below the count, or a vnc that is already another rank;
 *         NRT_UNINITIALIZED or NRT_CLOSED.
 */
NRT_STATUS nrt_build_global_comm(int32_t vnc, uint32_t g_device_id,
                                 uint32_t g_device_count);

/** nrt_build_global_comm() under the name of newer runtimes. */
NRT_STATUS nrt_cc_global_comm_init(uint32_t vnc, uint32_t g_device_id,
                                   uint32_t g_device_count);

/**
 * Release a model.  Works after nrt_close() too (it then frees host memory
 * only).  Like free(), a second call on the same handle is undefined.
 * Thread safety: no execution of the model may be running or start.
 * @return NRT_SUCCESS; NRT_INVALID for NULL or a handle that is not a live
 *         model.
 */
NRT_STATUS nrt_unload(nrt_model_t *model);

/** Number of vncs the model occupies (at least 1). */
NRT_STATUS nrt_get_model_vnc_count(const nrt_model_t *model,
                                   uint32_t *vnc_count);

/** Deprecated alias of nrt_get_model_vnc_count(). */
NRT_STATUS nrt_get_model_nc_count(const nrt_model_t *model,
                                  uint32_t *vnc_count);

/* --------------------------------------------------------------- execute */

/**
 * Run the model once, synchronously.  Every NEFF input must be in
 * `input_set` and every output in `output_set`, under its NEFF name, with
 * exactly the NEFF's byte size; device tensors must be on one of the
 * model's vncs.  Entries with other names are ignored.
 * @return NRT_SUCCESS; NRT_INVALID for a missing, mis-sized or misplaced
 *         tensor, or a model without an emulator program; NRT_EXEC_OOB
 *         for an out-of-bounds index; NRT_TIMEOUT past
 *         NEURON_RT_EXEC_TIMEOUT; NRT_CLOSED after nrt_close().
 *         Outputs are unspecified after a failure.
 * Thread safety: executions on one vnc run one at a time, in any order;
 * executions on different vncs run in parallel.
 */
NRT_STATUS nrt_execute(nrt_model_t *model, const nrt_tensor_set_t *input_set,
                       nrt_tensor_set_t *output_set);

/**
 * nrt_execute() `repeat_count` (>= 1) times, stopping at the first failure.
 */
NRT_STATUS nrt_execute_repeat(nrt_model_t *model,
                              const nrt_tensor_set_t *input_set,
                              nrt_tensor_set_t *output_set, int repeat_count);

/* ---------------------------------------------------- devices and system */

/**
 * Address and size of HBM region `hbm_idx` of device `device_id`, mapped
 * into this process.  The emulator maps no HBM region (tensor memory is
 * host memory; use nrt_tensor_get_va()).
 * @return NRT_INVALID with a detail saying so, or for NULL arguments.
 */
NRT_STATUS nrt_get_hbm_mmap_va(int device_id, int hbm_idx, void **addr,
                               size_t *size);

/**
 * dma-buf file descriptor of a device region registered for EFA
 * peer-direct.  The emulator has no EFA device and no dma-buf export.
 * @return NRT_INVALID with a detail saying so, or for NULL arguments.
 */
NRT_STATUS nrt_get_dmabuf_fd(uint64_t va, uint64_t size, int *fd);

/**
 * Host device id of container device `neuron_dev`.  The emulator has no
 * container remapping: the host id is the device index.
 * @return NRT_SUCCESS; NRT_INVALID for NULL or a device the emulated
 *         instance does not have.
 */
NRT_STATUS nrt_host_device_id_get(int neuron_dev, uint32_t *host_device_id);

/**
 * Routing-id map indexed by host device id.  `*count` is the capacity of
 * `host_did_to_rid_map` on input and the number of devices on output.
 * The emulator's routing id of a device is its index.
 * @return NRT_SUCCESS; NRT_INVALID for NULL arguments; NRT_RESOURCE when
 *         the map is too small (`*count` then tells the size needed).
 */
NRT_STATUS nrt_host_device_id_rid_map_get(uint32_t *count,
                                          uint32_t *host_did_to_rid_map);

/**
 * PCI BDF of the EFA NIC next to the device holding `va`.  `*len` is the
 * buffer size (NUL included) on input, the string length on output.  The
 * emulated instance has no EFA NIC.
 * @return NRT_INVALID with a detail saying so, or for NULL arguments.
 */
NRT_STATUS nrt_get_attached_efa_bdf(const void *va, char *efa_bdf,
                                    size_t *len);

#ifdef __cplusplus
}
#endif

#endif /* NRT_NRT_H */
