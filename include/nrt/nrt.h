/*
 * nrt/nrt.h - the libnrt C ABI, as implemented by the nrtpy emulator.
 *
 * Clean-room header of the nrtpy project.  Function names, signatures, enum
 * values and struct layouts are those of the Neuron runtime's libnrt.so.1,
 * so a program built against this header runs on the real library or on
 * the emulator that ships with nrtpy.  It declares only what the emulator
 * implements.
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

#define NRT_TENSOR_NAME_MAX 256
#define RT_VERSION_DETAIL_LEN 128
#define GIT_HASH_LEN 64

/* ---------------------------------------------------------------- enums */

typedef enum nrt_tensor_placement {
    NRT_TENSOR_PLACEMENT_DEVICE = 0,  /* HBM of one vnc */
    NRT_TENSOR_PLACEMENT_HOST = 1,    /* DMA-able host memory (deprecated) */
    NRT_TENSOR_PLACEMENT_VIRTUAL = 2, /* plain host memory */
} nrt_tensor_placement_t;

typedef enum nrt_framework_type {
    NRT_FRAMEWORK_TYPE_INVALID = 0,
    NRT_FRAMEWORK_TYPE_NO_FW = 1,
    NRT_FRAMEWORK_TYPE_TENSORFLOW = 2,
    NRT_FRAMEWORK_TYPE_PYTORCH = 3,
    NRT_FRAMEWORK_TYPE_MXNET = 4,
    NRT_FRAMEWORK_TYPE_PRECHECK = 5,
} nrt_framework_type_t;

typedef enum nrt_tensor_usage {
    NRT_TENSOR_USAGE_INPUT = 0,
    NRT_TENSOR_USAGE_OUTPUT = 1,
} nrt_tensor_usage_t;

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

typedef enum nrt_dtype {
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

/* --------------------------------------------------------------- handles */

typedef struct nrt_tensor nrt_tensor_t; /* opaque */
typedef struct nrt_model nrt_model_t;   /* opaque */
typedef void nrt_tensor_set_t;          /* opaque name -> tensor map */

/* --------------------------------------------------------------- structs */

typedef struct nrt_instance_info {
    uint32_t family;    /* NRT_INSTANCE_* */
    uint32_t size;      /* NRT_INSTANCE_SIZE_* */
    char arch_name[16]; /* NUL-terminated, e.g. "trainium" */
    char device_revision[8];
} nrt_instance_info_t;

typedef struct nrt_version {
    uint64_t rt_major;
    uint64_t rt_minor;
    uint64_t rt_patch;
    uint64_t rt_maintenance;
    char rt_detail[RT_VERSION_DETAIL_LEN];
    char git_hash[GIT_HASH_LEN];
} nrt_version_t;

typedef struct nrt_vnc_memory_stats {
    size_t bytes_used;
    size_t bytes_limit;
} nrt_vnc_memory_stats_t;

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

typedef struct nrt_tensor_batch_op {
    uint64_t offset;
    uint64_t size;
    void *buffer;
} nrt_tensor_batch_op_t;

typedef struct nrt_tensor_batch {
    const nrt_tensor_t *tensor;
    const nrt_tensor_batch_op_t *ops;
    uint32_t num_ops;
} nrt_tensor_batch_t;

/* The layouts are ABI: a mismatch here would corrupt real callers. */
#if !defined(__cplusplus) && (defined(__x86_64__) || defined(__aarch64__))
_Static_assert(sizeof(nrt_instance_info_t) == 32, "nrt_instance_info_t");
_Static_assert(offsetof(nrt_instance_info_t, arch_name) == 8, "arch_name");
_Static_assert(offsetof(nrt_instance_info_t, device_revision) == 24,
               "device_revision");
_Static_assert(sizeof(nrt_version_t) == 224, "nrt_version_t");
_Static_assert(offsetof(nrt_version_t, rt_detail) == 32, "rt_detail");
_Static_assert(offsetof(nrt_version_t, git_hash) == 160, "git_hash");
_Static_assert(sizeof(nrt_vnc_memory_stats_t) == 16, "memory stats");
_Static_assert(sizeof(nrt_tensor_info_t) == 296, "nrt_tensor_info_t");
_Static_assert(offsetof(nrt_tensor_info_t, usage) == 256, "usage");
_Static_assert(offsetof(nrt_tensor_info_t, size) == 264, "size");
_Static_assert(offsetof(nrt_tensor_info_t, dtype) == 272, "dtype");
_Static_assert(offsetof(nrt_tensor_info_t, shape) == 280, "shape");
_Static_assert(offsetof(nrt_tensor_info_t, ndim) == 288, "ndim");
_Static_assert(offsetof(nrt_tensor_info_array_t, tensor_array) == 8,
               "tensor_array");
_Static_assert(sizeof(nrt_model_info_t) == 4, "nrt_model_info_t");
_Static_assert(sizeof(nrt_tensor_batch_op_t) == 24, "nrt_tensor_batch_op_t");
_Static_assert(sizeof(nrt_tensor_batch_t) == 24, "nrt_tensor_batch_t");
#endif

/* ------------------------------------------------- init, close, queries */

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

/** Fill `*ver` (at most `size` bytes).  Callable before nrt_init(). */
NRT_STATUS nrt_get_version(nrt_version_t *ver, size_t size);

/**
 * Name of a status, e.g. "NRT_INVALID".  Never NULL: unknown values give
 * "UNKNOWN STATUS".  Ownership: static string.
 */
const char *nrt_get_status_as_str(NRT_STATUS status);

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
 * Allocate a tensor of `size` bytes.  Contents are unspecified.
 * @param vnc  core for DEVICE placement; ignored (pass -1) otherwise.
 * @param name optional, for logs; copied.
 * @param tensor[out] new handle; free it with nrt_tensor_free().
 * @return NRT_RESOURCE for size 0 or when the core's HBM is exhausted;
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
 * `ctx_device_id` of `ctx_device_count` participants.
 * The emulator supports a world of one rank only: other counts give
 * NRT_INVALID.
 */
NRT_STATUS nrt_load_collectives(const void *neff_bytes, size_t size,
                                int32_t vnc, int32_t vnc_count,
                                uint32_t ctx_device_id,
                                uint32_t ctx_device_count,
                                nrt_model_t **model);

/**
 * Release a model.  Works after nrt_close() too (it then frees host memory
 * only).  Like free(), a second call on the same handle is undefined.
 * Thread safety: no execution of the model may be running or start.
 * @return NRT_SUCCESS; NRT_INVALID for NULL or a handle that is not a live
 *         model.
 */
NRT_STATUS nrt_unload(nrt_model_t *model);

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

/** Number of vncs the model occupies (at least 1). */
NRT_STATUS nrt_get_model_vnc_count(const nrt_model_t *model,
                                   uint32_t *vnc_count);

/** Deprecated alias of nrt_get_model_vnc_count(). */
NRT_STATUS nrt_get_model_nc_count(const nrt_model_t *model,
                                  uint32_t *vnc_count);

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

/* --------------------------------------------------------------- profile */

/**
 * Record the next executions of `model` for nrt_profile_stop(`filename`).
 * Starting again with the same filename restarts the recording.
 * @param filename where nrt_profile_stop() will write; copied.
 */
NRT_STATUS nrt_profile_start(nrt_model_t *model, const char *filename);

/**
 * End the recording started with `filename` and write it there.  The
 * emulator writes a Chrome trace-event JSON (one "execute" event per
 * execution and one event per program op), which Perfetto and
 * chrome://tracing open, not an NTFF.  As on hardware, nothing is written
 * when no execution succeeded.
 * @return NRT_SUCCESS; NRT_INVALID for NULL or a filename that no
 *         nrt_profile_start() used; NRT_FAILURE when nothing was recorded
 *         or the file cannot be written (the detail has the errno text).
 */
NRT_STATUS nrt_profile_stop(const char *filename);

/* ------------------------------------------------------------- sys trace */

/*
 * System trace: events of every execution, kept per vnc in ring buffers
 * until fetched.  Event types: "nc_exec_running" (hardware group; one
 * start/stop pair per execution on each vnc of the model, with the
 * emulated core's clock in data.nc_timestamp_ns), "nrt_load" and
 * "nrt_execute" (software group).  Thread safety: every function may be
 * called from any thread; a config or options object must not be used by
 * two threads at once.
 */
typedef struct nrt_sys_trace_config nrt_sys_trace_config_t;
typedef struct nrt_sys_trace_fetch_options nrt_sys_trace_fetch_options_t;

/**
 * New capture config with the defaults: every vnc, every event type,
 * 1,000,000 events per vnc.  Free it with nrt_sys_trace_config_free().
 */
NRT_STATUS nrt_sys_trace_config_allocate(nrt_sys_trace_config_t **options);
/** Reset a config to the defaults. */
void nrt_sys_trace_config_set_defaults(nrt_sys_trace_config_t *options);
/** Free a config; NULL is accepted. */
void nrt_sys_trace_config_free(nrt_sys_trace_config_t *options);
/** Ring buffer size per vnc; the oldest events are overwritten. */
void
nrt_sys_trace_config_set_max_events_per_nc(nrt_sys_trace_config_t *options,
                                           uint64_t max_events_per_nc);
/** Capture on vnc `nc_idx` or not; out-of-range indices are ignored. */
void nrt_sys_trace_config_set_capture_enabled_for_nc(
    nrt_sys_trace_config_t *options, uint32_t nc_idx, bool enabled);
/**
 * Capture events of `event_type` or not.  Besides the names of
 * nrt_sys_trace_get_event_types(), "hardware", "software" and "all" name
 * groups.
 * @return NRT_SUCCESS; NRT_INVALID for an unknown name.
 */
NRT_STATUS nrt_sys_trace_config_set_capture_enabled_for_event_type(
    nrt_sys_trace_config_t *options, const char *event_type, bool enabled);
/**
 * The event types the config enables.
 * Ownership: free the list with nrt_sys_trace_free_event_types().
 */
NRT_STATUS nrt_sys_trace_config_get_enabled_event_types(
    nrt_sys_trace_config_t *options, const char ***event_types, size_t *count);
/**
 * Every event type the emulator can capture.
 * Ownership: malloc'd array of malloc'd strings; free it with
 * nrt_sys_trace_free_event_types().
 */
NRT_STATUS nrt_sys_trace_get_event_types(const char ***event_types,
                                         size_t *count);
/** Free a list of event types; NULL is accepted. */
void nrt_sys_trace_free_event_types(const char **event_types, size_t count);

/**
 * Start capturing as `options` says (NULL: the defaults).  The config is
 * copied: the caller may free it right away.  Starting again restarts the
 * capture and drops buffered events.
 * @return NRT_SUCCESS; NRT_INVALID for a max of 0 events;
 *         NRT_UNINITIALIZED or NRT_CLOSED.
 */
NRT_STATUS nrt_sys_trace_start(nrt_sys_trace_config_t *options);
/** Stop capturing and drop the events not fetched yet. */
NRT_STATUS nrt_sys_trace_stop(void);

/**
 * New fetch options with the defaults: every vnc, every buffered event.
 * Free them with nrt_sys_trace_fetch_options_free().
 */
NRT_STATUS
nrt_sys_trace_fetch_options_allocate(nrt_sys_trace_fetch_options_t **options);
/** Reset fetch options to the defaults. */
void nrt_sys_trace_fetch_options_set_defaults(
    nrt_sys_trace_fetch_options_t *options);
/** Free fetch options; NULL is accepted. */
void nrt_sys_trace_fetch_options_free(nrt_sys_trace_fetch_options_t *options);
/** Fetch at most this many events of each vnc, the oldest first (0: all). */
void nrt_sys_trace_fetch_options_set_max_events_per_nc(
    nrt_sys_trace_fetch_options_t *options, uint64_t max_events_per_nc);
/** Fetch the events of vnc `nc_idx` only. */
void
nrt_sys_trace_fetch_options_set_nc_idx(nrt_sys_trace_fetch_options_t *options,
                                       uint64_t nc_idx);

/**
 * Take the buffered events as a NUL-terminated JSON text
 * {"events":[...]}; fetched events are never returned again.  Events of
 * one vnc are in capture order, vncs in increasing order.
 * @param buffer[out]       the text; free it with nrt_sys_trace_buffer_free().
 * @param written_size[out] strlen() of the text (the NUL excluded).
 * @param options           NULL for the defaults.
 * @return NRT_SUCCESS; NRT_INVALID when the trace is not started or
 *         `nc_idx` is out of range; NRT_RESOURCE when host memory runs
 *         out (the events are then kept).
 */
NRT_STATUS
nrt_sys_trace_fetch_events(char **buffer, size_t *written_size,
                           const nrt_sys_trace_fetch_options_t *options);
/** Free a buffer of nrt_sys_trace_fetch_events(); NULL is accepted. */
void nrt_sys_trace_buffer_free(char *buffer);

#ifdef __cplusplus
}
#endif

#endif /* NRT_NRT_H */
