/*
 * stub_libnrt.c - a scripted stand-in for the Neuron runtime's libnrt.so.1.
 *
 * The Python tests build it (tests/python/test_system_path.py) and load it
 * with NRTPY_LIBNRT=<path>, so that pytest drives the extension's branches
 * for a library that is not the nrtpy emulator: the branches that run on
 * hardware.  Like the real runtime, and unlike the emulator, it has
 *   - no nrtemu_* extras: nrtpy reports emulated=False and its errors carry
 *     no detail; the reason of a failure goes to stderr as a runtime log
 *     line ("YYYY-Mon-DD HH:MM:SS.uuuuuu pid:tid ERROR  NRT:func text");
 *   - fp8 model tensors reported as NRT_DTYPE_INT8, as the runtime reports
 *     the fp8 tensors of a NEFF;
 *   - no nrt_load_collectives and no nrt_sys_trace_*, so the calls that
 *     need them fail alone (an older runtime).
 * Tensors live in malloc'd memory, accounted per core against a limit.
 *
 * Behaviour is scripted by the environment, read when a call needs it (a
 * test may change it between calls):
 *   STUB_NRT_FAIL_<NAME>=<status>[@<n>]
 *       nrt_<name> (upper case: STUB_NRT_FAIL_TENSOR_READ) returns <status>,
 *       a number or an NRT_* name, on every call, or only on its n-th call
 *       counted from 1 since the library was loaded.
 *   STUB_NRT_MODEL=<in|out>:<name>:<dtype>:<d0>x<d1>...[;...]
 *       the inputs and outputs of the models nrt_load loads (the NEFF bytes
 *       are not read); dtypes are NEFF names (float32, float8_e4m3fn, ...);
 *       an empty shape is a tensor without one.  Default: one float32[4]
 *       input "input" and output "output".
 *   STUB_NRT_CORES=<n>      NeuronCores, visible and total (default 2).
 *   STUB_NRT_HBM_BYTES=<n>  device memory of each core (default 64 MiB).
 *   STUB_NRT_LOG=<path>     append a line per call: the function and its
 *       main arguments.  Misuse that the real runtime would not survive (a
 *       call after nrt_close, a stale handle, freeing a tensor that a live
 *       slice reads) adds a "VIOLATION <function>: <what>" line there and
 *       on stderr.
 * nrt_execute copies into each output the bytes of the input at the same
 * position (the last input for extra outputs), truncated or zero-padded.
 *
 * Handles are never reused: a freed tensor or model keeps its header,
 * marked dead, so a stale handle is reported instead of touching freed
 * memory (the stub lives as long as a test process).  One mutex serialises
 * all calls; every function may be called from any thread.
 */
#define _GNU_SOURCE

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_profile.h"
#include "nrt/nrt_sys_trace.h"
#include "nrt/nrt_version.h"

#define STUB_MAX_CORES 128
#define STUB_MAX_DIMS 8
#define STUB_DEFAULT_MODEL "in:input:float32:4;out:output:float32:4"

/* Every function the stub exports, for call counts and failure scripts. */
#define STUB_FUNCTIONS(X)           \
    X(nrt_init)                     \
    X(nrt_close)                    \
    X(nrt_get_version)              \
    X(nrt_get_visible_nc_count)     \
    X(nrt_get_total_nc_count)       \
    X(nrt_get_vnc_memory_stats)     \
    X(nrt_tensor_allocate)          \
    X(nrt_tensor_allocate_slice)    \
    X(nrt_tensor_free)              \
    X(nrt_tensor_read)              \
    X(nrt_tensor_write)             \
    X(nrt_tensor_get_va)            \
    X(nrt_allocate_tensor_set)      \
    X(nrt_destroy_tensor_set)       \
    X(nrt_add_tensor_to_tensor_set) \
    X(nrt_load)                     \
    X(nrt_unload)                   \
    X(nrt_execute)                  \
    X(nrt_get_model_tensor_info)    \
    X(nrt_free_model_tensor_info)   \
    X(nrt_profile_start)            \
    X(nrt_profile_stop)

enum stub_fn {
#define STUB_FN_ENUM(name) FN_##name,
    STUB_FUNCTIONS(STUB_FN_ENUM)
#undef STUB_FN_ENUM
        FN_COUNT
};

static const char *const stub_fn_names[FN_COUNT] = {
#define STUB_FN_NAME(name) #name,
    STUB_FUNCTIONS(STUB_FN_NAME)
#undef STUB_FN_NAME
};

/*
 * What the real runtime reports for each NEFF dtype: its code and item
 * size.  This is a fact about hardware, not the emulator's dtype table:
 * every fp8 variant is reported as INT8.
 */
#define STUB_DTYPES(X)                    \
    X("float32", NRT_DTYPE_FLOAT32, 4)    \
    X("float16", NRT_DTYPE_FLOAT16, 2)    \
    X("bfloat16", NRT_DTYPE_BFLOAT16, 2)  \
    X("int8", NRT_DTYPE_INT8, 1)          \
    X("uint8", NRT_DTYPE_UINT8, 1)        \
    X("int16", NRT_DTYPE_INT16, 2)        \
    X("uint16", NRT_DTYPE_UINT16, 2)      \
    X("int32", NRT_DTYPE_INT32, 4)        \
    X("uint32", NRT_DTYPE_UINT32, 4)      \
    X("int64", NRT_DTYPE_INT64, 8)        \
    X("uint64", NRT_DTYPE_UINT64, 8)      \
    X("float8_e4m3fn", NRT_DTYPE_INT8, 1) \
    X("float8_e4m3", NRT_DTYPE_INT8, 1)   \
    X("float8_e5m2", NRT_DTYPE_INT8, 1)   \
    X("float8_e3m4", NRT_DTYPE_INT8, 1)

struct nrt_tensor {
    struct nrt_tensor *next;   /* in stub.tensors, live or dead */
    struct nrt_tensor *parent; /* slice source, or NULL */
    unsigned char *data;       /* into the parent's data for a slice */
    size_t size;
    uint32_t core;
    int slices; /* live slices reading this tensor's memory */
    bool live;
    char name[NRT_TENSOR_NAME_MAX];
};

struct stub_io {
    char name[NRT_TENSOR_NAME_MAX];
    nrt_tensor_usage_t usage;
    nrt_dtype_t dtype;
    size_t size;
    uint32_t ndim;
    uint32_t shape[STUB_MAX_DIMS];
};

struct nrt_model {
    struct nrt_model *next; /* in stub.models, live or dead */
    bool live;
    uint32_t core;
    size_t count;
    struct stub_io *io; /* count entries, inputs and outputs */
};

struct stub_set_entry {
    char name[NRT_TENSOR_NAME_MAX];
    nrt_tensor_t *tensor;
};

struct stub_set {
    size_t count, cap;
    struct stub_set_entry *entries;
};

static pthread_mutex_t stub_lock = PTHREAD_MUTEX_INITIALIZER;

/* All state, under stub_lock. */
static struct {
    bool initialized;
    bool closed; /* nrt_close ran and no nrt_init since */
    uint32_t cores;
    size_t hbm_limit;
    size_t used[STUB_MAX_CORES];
    unsigned long calls[FN_COUNT];
    nrt_tensor_t *tensors;
    struct nrt_model *models;
    char profile_file[4096]; /* set by nrt_profile_start */
} stub;

/* ------------------------------------------------------------ logging */

static void
stub_log(const char *fmt, ...)
{
    const char *path = getenv("STUB_NRT_LOG");
    if (path == NULL || path[0] == '\0') {
        return;
    }
    FILE *f = fopen(path, "a");
    if (f == NULL) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

/* A line in the real runtime's log format, on stderr. */
static void
stub_runtime_log(const char *level, enum stub_fn fn, const char *fmt,
                 va_list ap)
{
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr",
                                       "May", "Jun", "Jul", "Aug",
                                       "Sep", "Oct", "Nov", "Dec"};
    struct timeval tv;
    struct tm tm;
    char text[1024];
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    vsnprintf(text, sizeof text, fmt, ap);
    fprintf(stderr,
            "%04d-%s-%02d %02d:%02d:%02d.%06ld %ld:%ld %-6s NRT:%s %s\n",
            tm.tm_year + 1900, months[tm.tm_mon], tm.tm_mday, tm.tm_hour,
            tm.tm_min, tm.tm_sec, (long)tv.tv_usec, (long)getpid(),
            (long)syscall(SYS_gettid), level, stub_fn_names[fn], text);
}

/* Log a failure the way the runtime does and return its status. */
static NRT_STATUS
stub_fail(enum stub_fn fn, NRT_STATUS st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    stub_runtime_log("ERROR", fn, fmt, ap);
    va_end(ap);
    stub_log("%s -> %d", stub_fn_names[fn], (int)st);
    return st;
}

/* Misuse the real runtime would not survive: recorded for the tests. */
static void
stub_violation(enum stub_fn fn, const char *what)
{
    fprintf(stderr, "VIOLATION %s: %s\n", stub_fn_names[fn], what);
    stub_log("VIOLATION %s: %s", stub_fn_names[fn], what);
}

/* ------------------------------------------------------------ scripts */

static long
env_long(const char *name, long fallback, long min, long max)
{
    const char *s = getenv(name);
    if (s == NULL || s[0] == '\0') {
        return fallback;
    }
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max) {
        return fallback;
    }
    return v;
}

/* A status given as a number or an NRT_* name; -1 when neither. */
static long
status_parse(const char *s, size_t len)
{
#define STATUS_BY_NAME(name, value, text)                        \
    if (len == sizeof #name - 1 && memcmp(s, #name, len) == 0) { \
        return value;                                            \
    }
    NRTEMU_STATUS_LIST(STATUS_BY_NAME)
#undef STATUS_BY_NAME
    char buf[32];
    if (len == 0 || len >= sizeof buf) {
        return -1;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    long v = strtol(buf, &end, 10);
    return *end == '\0' && v >= 0 && v <= 100000 ? v : -1;
}

/*
 * Count a call and log it; NRT_SUCCESS, or the failure scripted for this
 * call by STUB_NRT_FAIL_<NAME>.  Called with stub_lock held.
 */
static NRT_STATUS
stub_enter(enum stub_fn fn, const char *fmt, ...)
{
    unsigned long n = ++stub.calls[fn];
    char args[512] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    stub_log("%s%s%s", stub_fn_names[fn], args[0] ? " " : "", args);

    char var[64] = "STUB_NRT_FAIL_";
    size_t at = strlen(var);
    for (const char *p = stub_fn_names[fn] + 4; *p && at + 1 < sizeof var;
         p++) {
        var[at++] = (char)toupper((unsigned char)*p);
    }
    var[at] = '\0';
    const char *script = getenv(var);
    if (script == NULL || script[0] == '\0') {
        return NRT_SUCCESS;
    }
    const char *nth = strchr(script, '@');
    long st =
        status_parse(script, nth ? (size_t)(nth - script) : strlen(script));
    if (st < 0) {
        fprintf(stderr, "stub_libnrt: bad %s=%s\n", var, script);
        return NRT_SUCCESS;
    }
    if (nth != NULL && strtoul(nth + 1, NULL, 10) != n) {
        return NRT_SUCCESS;
    }
    return stub_fail(fn, (NRT_STATUS)st, "injected failure (%s=%s)", var,
                     script);
}

/* The runtime must be open for `fn`; NRT_SUCCESS or why not. */
static NRT_STATUS
stub_require_runtime(enum stub_fn fn)
{
    if (stub.initialized) {
        return NRT_SUCCESS;
    }
    if (stub.closed) {
        stub_violation(fn, "called after nrt_close");
        return stub_fail(fn, NRT_CLOSED, "Runtime is closed");
    }
    return stub_fail(fn, NRT_UNINITIALIZED, "Runtime is not initialized");
}

/* ------------------------------------------------------------ handles */

/* A live tensor of this stub, or NULL with the misuse recorded. */
static nrt_tensor_t *
tensor_check(enum stub_fn fn, const nrt_tensor_t *tensor)
{
    for (nrt_tensor_t *t = stub.tensors; t != NULL; t = t->next) {
        if (t == tensor) {
            if (!t->live) {
                stub_violation(fn, "stale tensor handle");
                return NULL;
            }
            return t;
        }
    }
    stub_violation(fn, tensor == NULL ? "NULL tensor" : "unknown tensor");
    return NULL;
}

static struct nrt_model *
model_check(enum stub_fn fn, const nrt_model_t *model)
{
    for (struct nrt_model *m = stub.models; m != NULL; m = m->next) {
        if (m == model) {
            if (!m->live) {
                stub_violation(fn, "stale model handle");
                return NULL;
            }
            return m;
        }
    }
    stub_violation(fn, model == NULL ? "NULL model" : "unknown model");
    return NULL;
}

/* Release a tensor's memory; its header stays, dead. */
static void
tensor_release(nrt_tensor_t *t)
{
    if (t->parent != NULL) {
        t->parent->slices--;
    } else {
        stub.used[t->core] -= t->size;
        free(t->data);
    }
    t->data = NULL;
    t->live = false;
}

static void
model_release(struct nrt_model *m)
{
    free(m->io);
    m->io = NULL;
    m->live = false;
}

/* ------------------------------------------------------------ runtime */

NRT_STATUS
nrt_init(nrt_framework_type_t framework, const char *fw_version,
         const char *fal_version)
{
    pthread_mutex_lock(&stub_lock);
    NRT_STATUS st = stub_enter(FN_nrt_init, "%d %s %s", (int)framework,
                               fw_version ? fw_version : "(null)",
                               fal_version ? fal_version : "(null)");
    if (st == NRT_SUCCESS && stub.initialized) {
        st = stub_fail(FN_nrt_init, NRT_FAILURE,
                       "Runtime already "
                       "initialized");
    }
    if (st == NRT_SUCCESS) {
        stub.cores =
            (uint32_t)env_long("STUB_NRT_CORES", 2, 1, STUB_MAX_CORES);
        stub.hbm_limit =
            (size_t)env_long("STUB_NRT_HBM_BYTES", 64L << 20, 1, 1L << 40);
        memset(stub.used, 0, sizeof stub.used);
        stub.initialized = true;
        stub.closed = false;
    }
    pthread_mutex_unlock(&stub_lock);
    return st;
}

/* Like the real runtime, closing releases every tensor and model. */
void
nrt_close(void)
{
    pthread_mutex_lock(&stub_lock);
    (void)stub_enter(FN_nrt_close, "");
    if (stub.initialized) {
        for (nrt_tensor_t *t = stub.tensors; t != NULL; t = t->next) {
            if (t->live) {
                tensor_release(t);
            }
        }
        for (struct nrt_model *m = stub.models; m != NULL; m = m->next) {
            if (m->live) {
                model_release(m);
            }
        }
        stub.initialized = false;
        stub.closed = true;
    }
    pthread_mutex_unlock(&stub_lock);
}

NRT_STATUS
nrt_get_version(nrt_version_t *ver, size_t size)
{
    pthread_mutex_lock(&stub_lock);
    NRT_STATUS st = stub_enter(FN_nrt_get_version, "");
    if (st == NRT_SUCCESS && (ver == NULL || size < sizeof *ver)) {
        st = stub_fail(FN_nrt_get_version, NRT_INVALID,
                       "Invalid version buffer");
    }
    if (st == NRT_SUCCESS) {
        memset(ver, 0, sizeof *ver);
        ver->rt_major = 2;
        ver->rt_minor = 99;
        ver->rt_patch = 7;
        ver->rt_maintenance = 0;
        snprintf(ver->rt_detail, sizeof ver->rt_detail, "nrtpy test stub");
        snprintf(ver->git_hash, sizeof ver->git_hash, "0000000");
    }
    pthread_mutex_unlock(&stub_lock);
    return st;
}

/* Callable before nrt_init, as the runtime allows. */
static NRT_STATUS
core_count(enum stub_fn fn, uint32_t *count)
{
    pthread_mutex_lock(&stub_lock);
    NRT_STATUS st = stub_enter(fn, "");
    if (st == NRT_SUCCESS && count == NULL) {
        st = stub_fail(fn, NRT_INVALID, "NULL count");
    }
    if (st == NRT_SUCCESS) {
        *count = stub.initialized ? stub.cores
                                  : (uint32_t)env_long("STUB_NRT_CORES", 2, 1,
                                                       STUB_MAX_CORES);
    }
    pthread_mutex_unlock(&stub_lock);
    return st;
}

NRT_STATUS
nrt_get_visible_nc_count(uint32_t *vnc_count)
{
    return core_count(FN_nrt_get_visible_nc_count, vnc_count);
}

NRT_STATUS
nrt_get_total_nc_count(uint32_t *vnc_count)
{
    return core_count(FN_nrt_get_total_nc_count, vnc_count);
}

NRT_STATUS
nrt_get_vnc_memory_stats(uint32_t vnc, nrt_vnc_memory_stats_t *stats,
                         size_t stats_size_in, size_t *stats_size_out)
{
    enum stub_fn fn = FN_nrt_get_vnc_memory_stats;
    pthread_mutex_lock(&stub_lock);
    NRT_STATUS st = stub_enter(fn, "%u", (unsigned)vnc);
    if (st == NRT_SUCCESS) {
        st = stub_require_runtime(fn);
    }
    if (st == NRT_SUCCESS &&
        (stats == NULL || stats_size_out == NULL || vnc >= stub.cores)) {
        st = stub_fail(fn, NRT_INVALID, "Invalid vnc %u or stats buffer",
                       (unsigned)vnc);
    }
    if (st == NRT_SUCCESS) {
        nrt_vnc_memory_stats_t out = {stub.used[vnc], stub.hbm_limit};
        size_t n = stats_size_in < sizeof out ? stats_size_in : sizeof out;
        memcpy(stats, &out, n);
        *stats_size_out = n;
    }
    pthread_mutex_unlock(&stub_lock);
    return st;
}

/* ------------------------------------------------------------ tensors */

static nrt_tensor_t *
tensor_new(const char *name)
{
    nrt_tensor_t *t = calloc(1, sizeof *t);
    if (t != NULL) {
        snprintf(t->name, sizeof t->name, "%s", name ? name : "");
        t->next = stub.tensors;
        stub.tensors = t;
    }
    return t;
}

NRT_STATUS
nrt_tensor_allocate(nrt_tensor_placement_t tensor_placement, int vnc,
                    size_t size, const char *name, nrt_tensor_t **tensor)
{
    enum stub_fn fn = FN_nrt_tensor_allocate;
    pthread_mutex_lock(&stub_lock);
    NRT_STATUS st =
        stub_enter(fn, "%d %zu %s", vnc, size, name ? name : "(null)");
    if (st == NRT_SUCCESS) {
        st = stub_require_runtime(fn);
    }
    if (st == NRT_SUCCESS && tensor == NULL) {
        st = stub_fail(fn, NRT_INVALID, "NULL tensor pointer");
    }
    if (st == NRT_SUCCESS &&
        (tensor_placement != NRT_TENSOR_PLACEMENT_DEVICE || vnc < 0 ||
         (uint32_t)vnc >= stub.cores)) {
        st = stub_fail(fn, NRT_INVALID, "Invalid placement %d on nc %d",
                       (int)tensor_placement, vnc);
    }
    if (st == NRT_SUCCESS &&
        (size == 0 || size > stub.hbm_limit - stub.used[vnc])) {
        st = stub_fail(fn, NRT_RESOURCE,
                       "Failed to allocate %zu bytes on nc %d (%zu of %zu "
                       "in use)",
                       size, vnc, stub.used[vnc], stub.hbm_limit);
    }
    nrt_tensor_t *t = NULL;
    if (st == NRT_SUCCESS) {
        unsigned char *data = malloc(size);
        t = data != NULL ? tensor_new(name) : NULL;
        if (t == NULL) {
            free(data);
            st = stub_fail(fn, NRT_RESOURCE, "Out of host memory");
        } else {
            t->data = data;
            t->size = size;
            t->core = (uint32_t)vnc;
            t->live = true;
            stub.used[vnc] += size;
            *tensor = t;
        }
    }
    pthread_mutex_unlock(&stub_lock);
    return st;
}

NRT_STATUS
nrt_tensor_allocate_slice(const nrt_tensor_t *tensor_source, size_t offset,
                          size_t size, const char *name,
                          nrt_tensor_t **tensor_slice)
{
    enum stub_fn fn = FN_nrt_tensor_allocate_slice;
    pthread_mutex_lock(&stub_lock);
    NRT_STATUS st = stub_enter(fn, "%s %zu %zu %s",
                               tensor_source ? tensor_source->name : "(null)",
                               offset, size, name ? name : "(null)");
    nrt_tensor_t *src = NULL;
    if (st == NRT_SUCCESS) {
        st = stub_require_runtime(fn);
    }
    if (st == NRT_SUCCESS &&
        ((src = tensor_check(fn, tensor_source)) == NULL ||
         tensor_slice == NULL)) {
        st = stub_fail(fn, NRT_INVALID, "Invalid tensor");
    }
    if (st == NRT_SUCCESS &&
        (size == 0 || offset > src->size || size > src->size - offset)) {
        st = stub_fail(fn, NRT_INVALID,
                       "Slice [%zu, +%zu) out of a %zu-byte tensor", offset,
                       size, src->size);
    }
    if (st == NRT_SUCCESS) {
        nrt_tensor_t *t = tensor_new(name);
        if (t == NULL) {
            st = stub_fail(fn, NRT_RESOURCE, "Out of host memory");
        } else {
            t->parent = src;
            t->data = src->data + offset;
            t->size = size;
            t->core = src->core;
            t->live = true;
            src->slices++;
            *tensor_slice = t;
        }
    }
    pthread_mutex_unlock(&stub_lock);
    return st;
}

void
nrt_tensor_free(nrt_tensor_t **tensor)
{
    enum stub_fn fn = FN_nrt_tensor_free;
    pthread_mutex_lock(&stub_lock);
    const nrt_tensor_t *h = tensor != NULL ? *tensor : NULL;
    (void)stub_enter(fn, "%s", h != NULL ? h->name : "(null)");
    if (h != NULL && stub_require_runtime(fn) == NRT_SUCCESS) {
        nrt_tensor_t *t = tensor_check(fn, h);
        if (t != NULL && t->slices > 0) {
            /* Its memory stays for the slices: the runtime's would not. */
            stub_violation(fn, "tensor freed while a slice of it lives");
        } else if (t != NULL) {
            tensor_release(t);
        }
    }
    if (tensor != NULL) {
        *tensor = NULL;
    }
    pthread_mutex_unlock(&stub_lock);
}

/* Shared by read and write: the tensor, with the range checked. */
static NRT_STATUS
tensor_range(enum stub_fn fn, const nrt_tensor_t *tensor, const void *buf,
             size_t offset, size_t size, nrt_tensor_t **out)
{
    NRT_STATUS st = stub_enter(fn, "%s %zu %zu",
                               tensor ? tensor->name : "(null)", offset, size);
    if (st == NRT_SUCCESS) {
        st = stub_require_runtime(fn);
    }
    nrt_tensor_t *t = NULL;
    if (st == NRT_SUCCESS &&
        ((t = tensor_check(fn, tensor)) == NULL || buf == NULL)) {
        st = stub_fail(fn, NRT_INVALID, "Invalid tensor or buffer");
    }
    if (st == NRT_SUCCESS && (offset > t->size || size > t->size - offset)) {
        st = stub_fail(fn, NRT_INVALID,
                       "Access [%zu, +%zu) out of a %zu-byte tensor", offset,
                       size, t->size);
    }
    *out = t;
    return st;
}

NRT_STATUS
nrt_tensor_read(const nrt_tensor_t *tensor, void *buf, size_t offset,
                size_t size)
{
    nrt_tensor_t *t;
    pthread_mutex_lock(&stub_lock);
    NRT_STATUS st =
        tensor_range(FN_nrt_tensor_read, tensor, buf, offset, size, &t);
    if (st == NRT_SUCCESS && size > 0) {
        memcpy(buf, t->data + offset, size);
    }
    pthread_mutex_unlock(&stub_lock);
    return st;
}

NRT_STATUS
nrt_tensor_write(nrt_tensor_t *tensor, const void *buf, size_t offset,
                 size_t size)
{
    nrt_tensor_t *t;
    pthread_mutex_lock(&stub_lock);
    NRT_STATUS st =
        tensor_range(FN_nrt_tensor_write, tensor, buf, offset, size, &t);
    if (st == NRT_SUCCESS && size > 0) {
        memcpy(t->data + offset, buf, size);
    }
    pthread_mutex_unlock(&stub_lock);
    return st;
}

void *
nrt_tensor_get_va(const nrt_tensor_t *tensor)
{
    enum stub_fn fn = FN_nrt_tensor_get_va;
    pthread_mutex_lock(&stub_lock);
    (void)stub_enter(fn, "%s", tensor ? tensor->name : "(null)");
    void *va = NULL;
    if (stub_require_runtime(fn) == NRT_SUCCESS) {
        nrt_tensor_t *t = tensor_check(fn, tensor);
        va = t != NULL ? t->data : NULL;
    }
    pthread_mutex_unlock(&stub_lock);
    return va;
}

/* -------------------------------------------------------- tensor sets */

NRT_STATUS
nrt_allocate_tensor_set(nrt_tensor_set_t **result)
{
    enum stub_fn fn = FN_nrt_allocate_tensor_set;
    pthread_mutex_lock(&stub_lock);
    NRT_STATUS st = stub_enter(fn, "");
    struct stub_set *set = NULL;
    if (st == NRT_SUCCESS && result == NULL) {
        st = stub_fail(fn, NRT_INVALID, "NULL result");
    }
    if (st == NRT_SUCCESS && (set = calloc(1, sizeof *set)) == NULL) {
        st = stub_fail(fn, NRT_RESOURCE, "Out of host memory");
    }
    if (st == NRT_SUCCESS) {
        *result = set;
    }
    pthread_mutex_unlock(&stub_lock);
    return st;
}

void
nrt_destroy_tensor_set(nrt_tensor_set_t **tensor_set)
{
    pthread_mutex_lock(&stub_lock);
    (void)stub_enter(FN_nrt_destroy_tensor_set, "");
    if (tensor_set != NULL && *tensor_set != NULL) {
        struct stub_set *set = *tensor_set;
        free(set->entries);
        free(set);
        *tensor_set = NULL;
    }
    pthread_mutex_unlock(&stub_lock);
}

NRT_STATUS
nrt_add_tensor_to_tensor_set(nrt_tensor_set_t *tensor_set,
                             const char *tensor_name, nrt_tensor_t *tensor)
{
    enum stub_fn fn = FN_nrt_add_tensor_to_tensor_set;
    pthread_mutex_lock(&stub_lock);
    NRT_STATUS st = stub_enter(fn, "%s", tensor_name ? tensor_name : "(null)");
    struct stub_set *set = tensor_set;
    if (st == NRT_SUCCESS && (set == NULL || tensor_name == NULL ||
                              strlen(tensor_name) >= NRT_TENSOR_NAME_MAX ||
                              tensor_check(fn, tensor) == NULL)) {
        st = stub_fail(fn, NRT_INVALID, "Invalid tensor set entry");
    }
    size_t i = 0;
    while (st == NRT_SUCCESS && i < set->count &&
           strcmp(set->entries[i].name, tensor_name) != 0) {
        i++;
    }
    if (st == NRT_SUCCESS && i == set->count) {
        if (set->count == set->cap) {
            size_t cap = set->cap ? set->cap * 2 : 4;
            void *p = realloc(set->entries, cap * sizeof *set->entries);
            if (p == NULL) {
                st = stub_fail(fn, NRT_RESOURCE, "Out of host memory");
            } else {
                set->entries = p;
                set->cap = cap;
            }
        }
        if (st == NRT_SUCCESS) {
            snprintf(set->entries[i].name, sizeof set->entries[i].name, "%s",
                     tensor_name);
            set->count++;
        }
    }
    if (st == NRT_SUCCESS) {
        set->entries[i].tensor = tensor;
    }
    pthread_mutex_unlock(&stub_lock);
    return st;
}

/* ------------------------------------------------------------- models */

/* Parse one "<in|out>:<name>:<dtype>:<dims>" entry; false if malformed. */
static bool
io_parse(const char *s, size_t len, struct stub_io *io)
{
    static const struct {
        const char *name;
        nrt_dtype_t code;
        size_t size;
    } dtypes[] = {
#define STUB_DTYPE_ROW(name, code, size) {name, code, size},
        STUB_DTYPES(STUB_DTYPE_ROW)
#undef STUB_DTYPE_ROW
    };
    char buf[512];
    if (len >= sizeof buf) {
        return false;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *usage = buf, *name = strchr(usage, ':');
    char *dtype = name ? strchr(++name, ':') : NULL;
    char *dims = dtype ? strchr(++dtype, ':') : NULL;
    if (dims == NULL) {
        return false;
    }
    name[-1] = dtype[-1] = *dims++ = '\0';
    if (strcmp(usage, "in") != 0 && strcmp(usage, "out") != 0) {
        return false;
    }
    io->usage =
        usage[0] == 'i' ? NRT_TENSOR_USAGE_INPUT : NRT_TENSOR_USAGE_OUTPUT;
    if (name[0] == '\0' || strlen(name) >= sizeof io->name) {
        return false;
    }
    snprintf(io->name, sizeof io->name, "%s", name);
    size_t d = 0;
    for (; d < sizeof dtypes / sizeof dtypes[0]; d++) {
        if (strcmp(dtypes[d].name, dtype) == 0) {
            break;
        }
    }
    if (d == sizeof dtypes / sizeof dtypes[0]) {
        return false;
    }
    io->dtype = dtypes[d].code;
    io->size = dtypes[d].size;
    io->ndim = 0;
    while (*dims != '\0') {
        char *end;
        errno = 0;
        unsigned long v = strtoul(dims, &end, 10);
        if (end == dims || errno != 0 || v == 0 || v > UINT32_MAX ||
            io->ndim == STUB_MAX_DIMS || io->size > SIZE_MAX / v ||
            (*end != '\0' && *end != 'x')) {
            return false;
        }
        io->shape[io->ndim++] = (uint32_t)v;
        io->size *= v;
        dims = *end == 'x' ? end + 1 : end;
    }
    return true;
}

/* The scripted I/O of a new model, or NRT_INVALID when malformed. */
static NRT_STATUS
model_parse(enum stub_fn fn, struct nrt_model *m)
{
    const char *spec = getenv("STUB_NRT_MODEL");
    if (spec == NULL || spec[0] == '\0') {
        spec = STUB_DEFAULT_MODEL;
    }
    size_t count = 1;
    for (const char *p = spec; *p; p++) {
        count += *p == ';';
    }
    m->io = calloc(count, sizeof *m->io);
    if (m->io == NULL) {
        return stub_fail(fn, NRT_RESOURCE, "Out of host memory");
    }
    for (const char *p = spec; m->count < count; m->count++) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (!io_parse(p, len, &m->io[m->count])) {
            return stub_fail(fn, NRT_INVALID, "Bad STUB_NRT_MODEL entry %.*s",
                             (int)len, p);
        }
        p += len + (end != NULL);
    }
    return NRT_SUCCESS;
}

NRT_STATUS
nrt_load(const void *neff_bytes, size_t size, int32_t vnc, int32_t vnc_count,
         nrt_model_t **model)
{
    enum stub_fn fn = FN_nrt_load;
    pthread_mutex_lock(&stub_lock);
    NRT_STATUS st =
        stub_enter(fn, "%zu %d %d", size, (int)vnc, (int)vnc_count);
    struct nrt_model *m = NULL;
    if (st == NRT_SUCCESS) {
        st = stub_require_runtime(fn);
    }
    if (st == NRT_SUCCESS &&
        (neff_bytes == NULL || size == 0 || model == NULL || vnc < 0 ||
         (uint32_t)vnc >= stub.cores)) {
        st = stub_fail(fn, NRT_INVALID, "Invalid NEFF or nc %d", (int)vnc);
    }
    if (st == NRT_SUCCESS && (m = calloc(1, sizeof *m)) == NULL) {
        st = stub_fail(fn, NRT_RESOURCE, "Out of host memory");
    }
    if (st == NRT_SUCCESS) {
        st = model_parse(fn, m);
        if (st != NRT_SUCCESS) {
            free(m->io);
            free(m);
        }
    }
    if (st == NRT_SUCCESS) {
        m->core = (uint32_t)vnc;
        m->live = true;
        m->next = stub.models;
        stub.models = m;
        *model = m;
    }
    pthread_mutex_unlock(&stub_lock);
    return st;
}

NRT_STATUS
nrt_unload(nrt_model_t *model)
{
    enum stub_fn fn = FN_nrt_unload;
    pthread_mutex_lock(&stub_lock);
    NRT_STATUS st = stub_enter(fn, "");
    struct nrt_model *m = NULL;
    if (st == NRT_SUCCESS) {
        st = stub_require_runtime(fn);
    }
    if (st == NRT_SUCCESS && (m = model_check(fn, model)) == NULL) {
        st = stub_fail(fn, NRT_INVALID, "Invalid model");
    }
    if (st == NRT_SUCCESS) {
        model_release(m);
    }
    pthread_mutex_unlock(&stub_lock);
    return st;
}

NRT_STATUS
nrt_get_model_tensor_info(nrt_model_t *model,
                          nrt_tensor_info_array_t **tensor_info)
{
    enum stub_fn fn = FN_nrt_get_model_tensor_info;
    pthread_mutex_lock(&stub_lock);
    NRT_STATUS st = stub_enter(fn, "");
    struct nrt_model *m = NULL;
    nrt_tensor_info_array_t *arr = NULL;
    if (st == NRT_SUCCESS) {
        st = stub_require_runtime(fn);
    }
    if (st == NRT_SUCCESS &&
        ((m = model_check(fn, model)) == NULL || tensor_info == NULL)) {
        st = stub_fail(fn, NRT_INVALID, "Invalid model");
    }
    /* One block: the array, then every tensor's shape. */
    size_t shapes = m != NULL ? m->count * STUB_MAX_DIMS : 0;
    if (st == NRT_SUCCESS &&
        (arr = calloc(1, sizeof *arr + m->count * sizeof arr->tensor_array[0] +
                             shapes * sizeof(uint32_t))) == NULL) {
        st = stub_fail(fn, NRT_RESOURCE, "Out of host memory");
    }
    if (st == NRT_SUCCESS) {
        uint32_t *shape = (uint32_t *)(arr->tensor_array + m->count);
        arr->tensor_count = m->count;
        for (size_t i = 0; i < m->count; i++, shape += STUB_MAX_DIMS) {
            nrt_tensor_info_t *ti = &arr->tensor_array[i];
            memcpy(ti->name, m->io[i].name, sizeof ti->name);
            ti->usage = m->io[i].usage;
            ti->size = m->io[i].size;
            ti->dtype = m->io[i].dtype;
            ti->ndim = m->io[i].ndim;
            memcpy(shape, m->io[i].shape, sizeof m->io[i].shape);
            ti->shape = shape;
        }
        *tensor_info = arr;
    }
    pthread_mutex_unlock(&stub_lock);
    return st;
}

NRT_STATUS
nrt_free_model_tensor_info(nrt_tensor_info_array_t *tensor_info)
{
    pthread_mutex_lock(&stub_lock);
    NRT_STATUS st = stub_enter(FN_nrt_free_model_tensor_info, "");
    /* Freed even when a failure is scripted: the caller cannot retry. */
    free(tensor_info);
    pthread_mutex_unlock(&stub_lock);
    return st;
}

/* The tensor a set holds for a model tensor, checked like the runtime:
 * present, live and of the model's size. */
static nrt_tensor_t *
set_lookup(enum stub_fn fn, const struct stub_set *set,
           const struct stub_io *io, NRT_STATUS *st)
{
    for (size_t i = 0; set != NULL && i < set->count; i++) {
        if (strcmp(set->entries[i].name, io->name) != 0) {
            continue;
        }
        nrt_tensor_t *t = tensor_check(fn, set->entries[i].tensor);
        if (t != NULL && t->size == io->size) {
            return t;
        }
        *st = stub_fail(fn, NRT_INVALID,
                        "Tensor '%s' does not match the model: %zu bytes, "
                        "expected %zu",
                        io->name, t != NULL ? t->size : 0, io->size);
        return NULL;
    }
    *st = stub_fail(fn, NRT_INVALID, "Missing tensor '%s'", io->name);
    return NULL;
}

/* Index of the k-th input of a model, else of its last; m->count when it
 * has none. */
static size_t
input_for(const struct nrt_model *m, size_t k)
{
    size_t found = m->count;
    for (size_t i = 0; i < m->count; i++) {
        if (m->io[i].usage == NRT_TENSOR_USAGE_INPUT) {
            found = i;
            if (k-- == 0) {
                break;
            }
        }
    }
    return found;
}

NRT_STATUS
nrt_execute(nrt_model_t *model, const nrt_tensor_set_t *input_set,
            nrt_tensor_set_t *output_set)
{
    enum stub_fn fn = FN_nrt_execute;
    pthread_mutex_lock(&stub_lock);
    NRT_STATUS st = stub_enter(fn, "");
    struct nrt_model *m = NULL;
    if (st == NRT_SUCCESS) {
        st = stub_require_runtime(fn);
    }
    if (st == NRT_SUCCESS && (m = model_check(fn, model)) == NULL) {
        st = stub_fail(fn, NRT_INVALID, "Invalid model");
    }
    /* Check every binding before writing any output. */
    for (size_t i = 0; st == NRT_SUCCESS && m != NULL && i < m->count; i++) {
        set_lookup(fn,
                   m->io[i].usage == NRT_TENSOR_USAGE_INPUT ? input_set
                                                            : output_set,
                   &m->io[i], &st);
    }
    /* The k-th output receives the k-th input (or the last one). */
    size_t k = 0;
    for (size_t o = 0; st == NRT_SUCCESS && o < m->count; o++) {
        if (m->io[o].usage != NRT_TENSOR_USAGE_OUTPUT) {
            continue;
        }
        size_t i = input_for(m, k++);
        nrt_tensor_t *out = set_lookup(fn, output_set, &m->io[o], &st);
        const nrt_tensor_t *in =
            i < m->count ? set_lookup(fn, input_set, &m->io[i], &st) : NULL;
        if (out == NULL) {
            break; /* (checked above: not reached) */
        }
        size_t n = in == NULL             ? 0
                   : in->size < out->size ? in->size
                                          : out->size;
        memmove(out->data, in != NULL ? in->data : out->data, n);
        memset(out->data + n, 0, out->size - n);
    }
    pthread_mutex_unlock(&stub_lock);
    return st;
}

NRT_STATUS
nrt_profile_start(nrt_model_t *model, const char *filename)
{
    enum stub_fn fn = FN_nrt_profile_start;
    pthread_mutex_lock(&stub_lock);
    NRT_STATUS st = stub_enter(fn, "%s", filename ? filename : "(null)");
    if (st == NRT_SUCCESS &&
        (model_check(fn, model) == NULL || filename == NULL)) {
        st = stub_fail(fn, NRT_INVALID, "Invalid model or file name");
    }
    if (st == NRT_SUCCESS) {
        snprintf(stub.profile_file, sizeof stub.profile_file, "%s", filename);
    }
    pthread_mutex_unlock(&stub_lock);
    return st;
}

/* Writes a one-line stand-in for the NTFF the runtime would write. */
NRT_STATUS
nrt_profile_stop(const char *filename)
{
    enum stub_fn fn = FN_nrt_profile_stop;
    pthread_mutex_lock(&stub_lock);
    NRT_STATUS st = stub_enter(fn, "%s", filename ? filename : "(null)");
    if (st == NRT_SUCCESS &&
        (filename == NULL || strcmp(filename, stub.profile_file) != 0)) {
        st = stub_fail(fn, NRT_INVALID, "No profile started for %s",
                       filename ? filename : "(null)");
    }
    FILE *f = st == NRT_SUCCESS ? fopen(filename, "w") : NULL;
    if (st == NRT_SUCCESS && f == NULL) {
        st = stub_fail(fn, NRT_FAILURE, "Cannot write %s: %s", filename,
                       strerror(errno));
    }
    if (f != NULL) {
        fputs("stub_libnrt profile\n", f);
        fclose(f);
    }
    stub.profile_file[0] = '\0';
    pthread_mutex_unlock(&stub_lock);
    return st;
}
