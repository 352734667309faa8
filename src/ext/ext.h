/*
 * ext.h - shared declarations of the nrtpy._nrtpy extension.
 *
 * The extension is one module, loaded once per process: libnrt is a
 * process-wide runtime, so its function table, the one live runtime and the
 * module state are process-wide too.  Subinterpreters are refused.
 */
#ifndef NRTPY_EXT_H
#define NRTPY_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdatomic.h>
#include <stdbool.h>

#include "nrt/nrt.h"
#include "nrt/nrtemu.h"

/* ------------------------------------------------------ libnrt functions */

/*
 * The libnrt functions the extension uses, resolved with dlsym() from the
 * chosen library into `libnrt`.  The extension never calls an nrt_* symbol
 * by name, so the same code drives the real runtime and the emulator.
 * Required functions must all be present or the module fails to import;
 * optional ones fail only the call that needs them.
 */
#define LIBNRT_REQUIRED(X)       \
    X(nrt_init)                  \
    X(nrt_close)                 \
    X(nrt_get_visible_nc_count)  \
    X(nrt_tensor_allocate)       \
    X(nrt_tensor_free)           \
    X(nrt_tensor_read)           \
    X(nrt_tensor_write)          \
    X(nrt_tensor_allocate_slice) \
    X(nrt_tensor_get_va)

#define LIBNRT_OPTIONAL(X)                                              \
    X(nrt_get_version)                                                  \
    X(nrt_get_total_nc_count)                                           \
    X(nrt_get_vnc_memory_stats)                                         \
    X(nrt_allocate_tensor_set)                                          \
    X(nrt_destroy_tensor_set)                                           \
    X(nrt_add_tensor_to_tensor_set)                                     \
    X(nrt_load)                                                         \
    X(nrt_load_collectives)                                             \
    X(nrt_unload)                                                       \
    X(nrt_execute)                                                      \
    X(nrt_get_model_tensor_info)                                        \
    X(nrt_free_model_tensor_info)                                       \
    X(nrt_profile_start)                                                \
    X(nrt_profile_stop)                                                 \
    X(nrt_sys_trace_config_allocate)                                    \
    X(nrt_sys_trace_config_free)                                        \
    X(nrt_sys_trace_config_set_capture_enabled_for_nc)                  \
    X(nrt_sys_trace_start)                                              \
    X(nrt_sys_trace_stop)                                               \
    X(nrt_sys_trace_fetch_options_allocate)                             \
    X(nrt_sys_trace_fetch_options_free)                                 \
    X(nrt_sys_trace_fetch_options_set_nc_idx)                           \
    X(nrt_sys_trace_fetch_events)                                       \
    X(nrt_sys_trace_buffer_free)                                        \
    /* Emulator extras (nrt/nrtemu.h), absent from the real runtime. */ \
    X(nrtemu_last_error)                                                \
    X(nrtemu_instance_name)                                             \
    X(nrtemu_get_model_tensor_dtype)

struct libnrt {
#define LIBNRT_FIELD(name) __typeof__(&name) name;
    LIBNRT_REQUIRED(LIBNRT_FIELD)
    LIBNRT_OPTIONAL(LIBNRT_FIELD)
#undef LIBNRT_FIELD
    void *handle;
    char path[4096]; /* the file actually loaded */
    bool emulated;   /* true when the library is the nrtpy emulator */
};

/* The table, filled once by libnrt_load() at import; never unloaded. */
extern struct libnrt libnrt;

/* Choose and load the library (NRTPY_LIBNRT).  0, or -1 with ImportError. */
int libnrt_load(void);

/*
 * A function of the emulator's own (the NEFF reader, nrtemu_neff_describe):
 * from the loaded library when it is the emulator, else from the emulator
 * bundled beside this extension, opened on first use (RTLD_LOCAL; such
 * functions need no nrt_init, so it never drives a device).  NULL with
 * ImportError when unavailable.  Call with the GIL held.
 */
void *emulator_function(const char *name);

/* Raise NrtpyError when an optional function is missing; 0 when present. */
int libnrt_require(const void *fn, const char *name);
#define LIBNRT_REQUIRE(name) libnrt_require((const void *)libnrt.name, #name)

/* ------------------------------------------------------------ exceptions */

typedef struct {
    PyObject *NrtpyRuntimeError; /* RuntimeError subclass, common base */
    PyObject *NrtpyError;        /* misuse found by nrtpy itself */
    PyObject *NrtError;          /* a libnrt status other than success */
    PyTypeObject *Nrtpy_Type;
    PyTypeObject *NrtTensor_Type;
    PyTypeObject *NrtpyTensor_Type;
    PyTypeObject *NrtModel_Type;
    PyTypeObject *TensorMetadata_Type;
    PyTypeObject *ModelTensorInfo_Type;
    PyTypeObject *SystemTraceSession_Type;
    PyObject *default_runtime; /* the runtime tensors use; NULL when none */
    PyObject *str_unnamed;     /* "unnamed_tensor" */
    /* Why no libnrt loaded (str); NULL when one did (module.c). */
    PyObject *libnrt_error;
    /* The Nrtpy that owns libnrt now; borrowed, cleared by its close(). */
    struct NrtpyObject *live_runtime;
    /* True while one thread runs nrt_init() without the GIL: a second
     * Nrtpy() meanwhile must fail like one made while a runtime lives. */
    bool initializing;
    /* Live SystemTraceSessions; the trace runs while above zero. */
    int live_sessions;
} module_state;

/*
 * The module's state, reached from everywhere through this one pointer.
 * libnrt is a process-wide runtime, so the module is too: it refuses a
 * second load and subinterpreters (module.c), which makes a single
 * pointer to its state exact rather than a shortcut.  Set by module_exec,
 * cleared by m_free; every field is read and written with the GIL held.
 */
extern module_state *ext_state;

/* Name of a status from the one status list; "UNKNOWN STATUS" if unknown. */
const char *status_name(NRT_STATUS status);

/*
 * Raise NrtError for `status`: "NRT Error <NAME>(<n>): <action>[: <detail>]"
 * where the detail is the emulator's last-error text when it has one.
 * Must be called on the thread that made the failing libnrt call, right
 * after it.  Always returns NULL.
 */
PyObject *raise_nrt_error(NRT_STATUS status, const char *action);

/* The same with an explicit detail ("" for none). */
PyObject *raise_nrt_error_detail(NRT_STATUS status, const char *action,
                                 const char *detail);

/* Copy the calling thread's libnrt failure detail (emulator only; "" on the
 * real runtime).  Safe without the GIL. */
void nrt_error_detail(char *buf, size_t len);

/* Raise NrtpyError("Nrtpy Error: <formatted text>").  Returns NULL. */
PyObject *raise_nrtpy_error(const char *fmt, ...);

/* ------------------------------------------------------- runtime token */

/*
 * State shared by a runtime and every tensor it created.  It outlives the
 * runtime object, so deallocating a tensor during interpreter teardown
 * depends on nothing but this struct and the static function table.
 *
 * `closed` turns true before nrt_close() and never back.  `busy` counts
 * operations running with the GIL released; close() waits for it to reach
 * zero.  Both are set under the GIL; `busy` is decremented outside it.
 * `forked` turns true (with `closed`) in a process forked from `pid`, the
 * one that created the token: the runtime is that process's (fork.c).
 */
typedef struct runtime_token {
    atomic_long refcnt;
    atomic_bool closed;
    atomic_long busy;
    atomic_bool forked;
    long pid;
} runtime_token;

runtime_token *token_create(void);
void token_incref(runtime_token *token);
void token_decref(runtime_token *token);

/*
 * Whether the token's handles may still be given to libnrt to release
 * them: while the runtime is open; after nrt_close() on the emulator only
 * (it documents that handles keep host memory until freed); never when
 * the runtime is a parent's, inherited through fork().
 */
static inline bool
token_may_release(runtime_token *token)
{
    return !atomic_load(&token->closed) ||
           (libnrt.emulated && !atomic_load(&token->forked));
}

/* ------------------------------------------------------------------ fork */

/*
 * Raise NrtpyError for an unusable handle of `token`: the fork message
 * when its runtime was inherited through fork(), else "Nrtpy Error: " and
 * the formatted text (PyUnicode_FromFormat).  Returns NULL.
 */
PyObject *raise_handle_error(const runtime_token *token, const char *fmt, ...);

/* Raise NrtpyError("Nrtpy Error: <owned_by> process <pid>: this process
 * was forked from it, ...") for an object of process `pid`.  NULL. */
PyObject *raise_forked_error(const char *owned_by, long pid);

/* Register the after-fork hook and _raise_if_forked (fork.c).  0 or -1. */
int fork_support_init(PyObject *module);

/* ---------------------------------------------------------------- types */

typedef struct NrtpyObject {
    PyObject_HEAD runtime_token *token; /* owned reference */
    int verbose_level;
} NrtpyObject;

typedef struct {
    PyObject_HEAD nrt_tensor_t
        *handle;          /* NULL once freed, and for 0-byte tensors */
    runtime_token *token; /* owned reference */
    PyObject *parent;     /* slice source (NrtTensor), kept alive; or NULL */
    PyObject *name;       /* str */
    size_t size;
    uint32_t core_id;
    int users;         /* operations in flight with the GIL released */
    int slices;        /* live slices using this tensor's memory */
    bool free_pending; /* freed by the user; the handle goes once neither
                          an operation nor a slice still needs it */
} NrtTensorObject;

/* Dimensions kept inline; more live in a PyMem block. */
#define NRTPY_INLINE_DIMS 8

typedef struct {
    PyObject_HEAD PyObject
        *tensor_ref; /* NrtTensor; NULL until __init__ ran */
    PyObject *shape; /* tuple of int, built from dims on first use */
    PyObject *dtype; /* numpy.dtype */
    PyObject *name;  /* str or None */
    size_t nbytes;
    int ndim;
    Py_ssize_t *dims; /* dims_inline, or a PyMem block when ndim is larger */
    Py_ssize_t dims_inline[NRTPY_INLINE_DIMS];
} NrtpyTensorObject;

/* What one input or output of a model takes (NrtModel._set_signature). */
typedef struct {
    PyObject *name;   /* exact str */
    size_t size;      /* bytes */
    int ndim;         /* -1: any shape */
    Py_ssize_t *dims; /* ndim entries, into the model's spec block */
    PyObject *dtype;  /* numpy.dtype, or NULL: any */
} io_spec;

typedef struct {
    PyObject_HEAD nrt_model_t *handle; /* NULL once unloaded */
    runtime_token *token;              /* owned reference */
    PyObject *neff_path;               /* str, as given */
    uint32_t core_id;
    uint32_t rank_id;
    uint32_t world_size;
    bool is_collective;
    int users;           /* executions in flight with the GIL released */
    bool unload_pending; /* unloaded while executing */
    /* The tensor sets of the last execution, reused when the next one has
     * the same names (execute.c); `sets_busy` while an execution uses
     * them without the GIL. */
    nrt_tensor_set_t *sets[2]; /* inputs, outputs; owned */
    PyObject *set_names[2];    /* tuple of str, the names they hold */
    /* The handle each name was last given (PyMem, one per name): a name
     * given the same tensor again is not re-added. */
    nrt_tensor_t **set_handles[2];
    bool sets_busy;
    /* The signature NrtpyModel checks calls against, in NEFF order:
     * inputs, then outputs.  One PyMem block; NULL until set. */
    io_spec *specs;
    Py_ssize_t n_inputs, n_outputs;
    /* Outputs can be allocated from the signature alone: every one has a
     * shape and a dtype, and none aliases an input. */
    bool auto_outputs;
} NrtModelObject;

/* Each type's file creates it and adds it to the module. */
int runtime_type_init(PyObject *module);
int tensor_type_init(PyObject *module);
int nrtpy_tensor_type_init(PyObject *module);
int model_type_init(PyObject *module);
int tensor_metadata_type_init(PyObject *module);
int model_tensor_info_type_init(PyObject *module);
int sys_trace_type_init(PyObject *module);

/* 1 once unloaded (explicitly, pending, or by closing its runtime). */
int model_is_unloaded(NrtModelObject *m);
/* Unload now, or once the last execution in flight ends.  Idempotent. */
void model_unload(NrtModelObject *m);
/* Unload now; executions must have ended (users == 0). */
void model_release_handle(NrtModelObject *m);

/*
 * Execute `m` once with `inputs` and `outputs` (mappings of str to
 * NrtTensor or NrtpyTensor), the GIL released around the call; with a
 * profile written to `ntff` when not NULL.  0, or -1 with NrtpyError
 * (unloaded model, freed tensor), NrtError or TypeError.
 */
int model_execute(NrtModelObject *m, PyObject *inputs, PyObject *outputs,
                  const char *ntff);
/*
 * Execute `m` when `inputs` and `outputs` match its signature exactly
 * (dicts of NrtpyTensors of the right names, core, size, shape, dtype):
 * 1.  0 when anything differs, having done nothing; -1 with an exception
 * (an unloaded model, or the execution's own errors).
 */
int model_execute_checked(NrtModelObject *m, PyObject *inputs,
                          PyObject *outputs);
/* 1 when `mapping` is a dict of exactly the `n` specs' names, each an
 * NrtpyTensor of the spec's core, size, shape and dtype; 0 when anything
 * differs; -1 with an exception. */
int mapping_matches(NrtModelObject *m, PyObject *mapping, const io_spec *specs,
                    Py_ssize_t n);

/* _nrtpy._model_call_method(cls, logger): cls.__call__ (NrtpyModel's),
 * logging to `logger` (nrtpy's). */
PyObject *module_model_call_method(PyObject *module, PyObject *args);

/* Destroy the model's reusable tensor sets (execute.c). */
void model_sets_clear(NrtModelObject *m);

/* A new NrtpyTensor over the NrtTensor `ref`, with that shape, numpy
 * dtype and name (no copy, no check: the caller knows they agree). */
PyObject *nrtpy_tensor_wrap(PyObject *ref, int ndim, const Py_ssize_t *dims,
                            PyObject *dtype, PyObject *name, size_t nbytes);

/* A TensorMetadata for one entry of nrt_get_model_tensor_info(), with the
 * dtype name given (new reference, or NULL with an exception). */
PyObject *tensor_metadata_new(const nrt_tensor_info_t *ti,
                              const char *dtype_name);
/* A ModelTensorInfo holding the two dicts (new reference). */
PyObject *model_tensor_info_new(PyObject *inputs, PyObject *outputs);

/* --------------------------------------------------- argument parsing */

/*
 * Match the positional and keyword arguments of a METH_FASTCALL |
 * METH_KEYWORDS call against `names` (`nnames` of them, the first
 * `nrequired` required) into out[nnames], whose unspecified slots keep
 * the caller's defaults (NULL or a value).  Borrowed references.  0, or
 * -1 with TypeError naming `func`.
 */
int parse_args(const char *func, PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames, const char *const *names, int nnames,
               int nrequired, PyObject **out);

/*
 * The UTF-8 text of a tensor name (a str: callers check the type, with
 * their own messages) for libnrt, or NULL with an exception.  A name with
 * a NUL character raises ValueError naming it: libnrt takes names as
 * NUL-terminated strings, so it would see another name, the part before
 * the NUL.  `what` and `part` say which name it is, as in "name", "" or
 * "inputs", " key".
 */
const char *tensor_name_utf8(PyObject *name, const char *what,
                             const char *part);

/*
 * The one check of a NeuronCore index, for every entry point that takes
 * one (C and, through Nrtpy._check_core_id, Python): a bool or a non-int
 * (NumPy integers count as ints) raises TypeError; a negative index, or
 * one of a core that does not exist, ValueError naming it.  Cores that
 * exist: the visible ones (logical indices, what calls take), or with
 * `physical` the instance's (indices as NEURON_RT_VISIBLE_CORES lists
 * them; the messages then speak of list elements).  No bound is checked
 * when libnrt cannot tell.  0 with *out set, or -1 with the exception.
 */
int core_id_check(PyObject *obj, const char *what, bool physical,
                  uint32_t *out);
/* The same as an O& converter for "core_id" (uint32_t *out). */
int core_id_converter(PyObject *obj, void *out);

/* ---------------------------------------------------------------- dtypes */

/* The dtype name a libnrt code stands for ("unknown" for none); static. */
const char *dtype_name_of_code(nrt_dtype_t code);
/* The code and kind of a dtype name of the table; 0 when unknown. */
int dtype_row_of_name(const char *name, nrt_dtype_t *code, char *kind);
/* Add DTYPES, the table of NRTEMU_DTYPE_LIST, to the module. */
int dtypes_add_to_module(PyObject *module);
/* Add OPS, the table of the emulator's NRTEMU_OP_LIST (ops.c). */
int ops_add_to_module(PyObject *module);

/* The runtime tensors of NrtpyTensor use, created on first need. */
NrtpyObject *default_runtime_get(void);

/* Raise NrtpyError if the runtime is closed; 0 when usable. */
int runtime_check_open(NrtpyObject *rt);

/*
 * Allocate an NrtTensor of `size` bytes on `core_id`.  size 0 gives a
 * valid tensor without device memory (the runtime refuses 0-byte
 * allocations) when `allow_empty`, else the runtime's error.
 */
NrtTensorObject *tensor_allocate(NrtpyObject *rt, size_t size,
                                 uint32_t core_id, PyObject *name,
                                 bool allow_empty);

/* 1 if freed (explicitly, pending, or by closing its runtime), else 0. */
int tensor_is_freed(NrtTensorObject *t);

/* Free now, or once the last in-flight operation ends.  Idempotent. */
void tensor_free(NrtTensorObject *t);

/* Pin a tensor for an operation that releases the GIL (a reference and
 * the in-use count), and unpin it with the GIL held again; unpinning the
 * last use completes a free requested meanwhile. */
void tensor_op_begin(NrtTensorObject *t);
void tensor_op_end(NrtTensorObject *t);

/*
 * Copy between host memory and a tensor with the GIL released.  Checks
 * freed state and bounds (overflow-safe) first, raising NrtpyError with
 * the messages of the nrtpy contract, then NrtError on a libnrt failure.
 * Returns 0 or -1.
 */
int tensor_write_bytes(NrtTensorObject *t, const void *buf, size_t offset,
                       size_t size);
int tensor_read_bytes(NrtTensorObject *t, void *buf, size_t offset,
                      size_t size);

/* Resolve an NrtTensor or an object with an NrtTensor `tensor_ref`.
 * Returns a borrowed reference or NULL with TypeError. */
NrtTensorObject *tensor_from_object(PyObject *obj, const char *argname);

/* ------------------------------------------------------------ NEFF files */

/*
 * Read the whole regular file at `path` (a FIFO or device is refused
 * without blocking; at most NEFF_FILE_MAX_BYTES).  Read, not mapped: a
 * file truncated by another process meanwhile must fail the load, not
 * raise SIGBUS.  Safe without the GIL.  Returns 0, or an errno value.
 * Ownership: *out is the caller's (free()).
 */
#define NEFF_FILE_MAX_BYTES ((size_t)16 << 30)
int neff_file_read(const char *path, unsigned char **out, size_t *out_size);

/* nrtpy._nrtpy.neff_describe(path) -> str (JSON; see nrtemu.h). */
PyObject *module_neff_describe(PyObject *module, PyObject *arg);
/* Add NEFF_HEADER_SIZE, NEFF_FEATURES_SUPPORTED, NEFF_HEADER_FIELDS. */
int neff_constants_add_to_module(PyObject *module);

/* ---------------------------------------------------------- host memory */

/*
 * Host memory of a NumPy array (any dtype with a fixed item size,
 * bfloat16 and fp8 included) or of any buffer-protocol object.
 */
typedef struct {
    void *buf;
    size_t len;
    Py_buffer view;  /* used for non-NumPy objects */
    PyObject *owner; /* NumPy array kept alive, or NULL */
    bool has_view;
} host_memory;

/* Acquire C-contiguous memory; `writable` requires a writable object.
 * Returns 0, or -1 with an exception (BufferError/ValueError/TypeError). */
int host_memory_get(PyObject *obj, bool writable, host_memory *mem);
void host_memory_release(host_memory *mem);

#endif /* NRTPY_EXT_H */
