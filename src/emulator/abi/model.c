/*
 * model.c - loading, describing and executing models.
 *
 * nrt_load() parses the NEFF (neff.c) and validates the emulator program of
 * each subgraph (program.c) once, so that nrt_execute() only binds the
 * caller's tensors to the NEFF's I/O by name and runs the programs.
 *
 * Executions on one vnc run one at a time, as on a NeuronCore: each vnc
 * has an execution lock, and a model spanning several vncs takes theirs in
 * increasing order.  The lock also gives program.c the guarantee that runs
 * of one program never overlap.
 */
#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util/clock.h"
#include "collective/collective.h"
#include "util/env_parse.h"
#include "util/error.h"
#include "util/export.h"
#include "util/fork.h"
#include "device/instance.h"
#include "abi/model.h"
#include "abi/profile.h"
#include "abi/runtime.h"
#include "abi/sys_trace.h"
#include "abi/tensor.h"
#include "abi/tensor_set.h"

#define DEFAULT_EXEC_TIMEOUT_S 600

static pthread_mutex_t exec_locks[NRTEMU_MAX_VNC];
static pthread_once_t exec_locks_once = PTHREAD_ONCE_INIT;
static atomic_uint_fast64_t last_exec_id;

static void
exec_locks_init(void)
{
    for (size_t i = 0; i < NRTEMU_MAX_VNC; i++) {
        pthread_mutex_init(&exec_locks[i], NULL);
    }
}

void
nrtemu__model_atfork(enum nrtemu_fork_phase phase)
{
    /* Not held across fork(): an execution can last minutes.  In the
     * child the executing threads are gone, and their models belong to
     * the parent's runtime, so the locks are simply made free again. */
    if (phase == NRTEMU_FORK_CHILD) {
        exec_locks_init();
    }
}

NRT_STATUS
nrtemu__model_check(const char *func, const nrt_model_t *model)
{
    if (model == NULL) {
        return nrtemu__reject(NRT_INVALID, func, "NULL model");
    }
    if (model->magic != NRTEMU_MODEL_MAGIC) {
        return nrtemu__reject(NRT_INVALID, func,
                              "not a live model (unloaded or corrupt)");
    }
    return NRT_SUCCESS;
}

/* ------------------------------------------------------------ settings */

/* Copy of `text` without surrounding blanks, for parsing and messages. */
static void
trimmed(const char *text, char *out, size_t len)
{
    size_t n;

    while (isspace((unsigned char)*text)) {
        text++;
    }
    n = strlen(text);
    while (n > 0 && isspace((unsigned char)text[n - 1])) {
        n--;
    }
    snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), text);
}

/* A boolean variable: 1/0, true/false, in any case.  Unset: `dflt`. */
static NRT_STATUS
env_bool(const char *func, const char *name, bool dflt, bool *out)
{
    const char *value = getenv(name);

    *out = dflt;
    if (value == NULL || nrtemu__env_blank(value)) {
        return NRT_SUCCESS;
    }
    if (!nrtemu__parse_bool(value, out)) {
        return nrtemu__fail(NRT_INVALID, func,
                            "invalid %s='%.32s': expected 1, 0, true or "
                            "false",
                            name, value);
    }
    return NRT_SUCCESS;
}

/*
 * NEURON_RT_EXEC_TIMEOUT: whole seconds in [0, INT_MAX]; 0 disables the
 * limit (a deadline that expires at once would make the model unusable).
 */
NRT_STATUS
nrtemu__env_exec_timeout(const char *func, uint64_t *timeout_ns)
{
    const char *name = "NEURON_RT_EXEC_TIMEOUT";
    const char *value = getenv(name);
    unsigned long long seconds = 0;
    char text[32];
    size_t i;

    *timeout_ns = (uint64_t)DEFAULT_EXEC_TIMEOUT_S * 1000000000u;
    if (value == NULL || nrtemu__env_blank(value)) {
        return NRT_SUCCESS;
    }
    trimmed(value, text, sizeof text);
    for (i = 0; text[i] != '\0'; i++) {
        if (!isdigit((unsigned char)text[i]) || seconds > INT_MAX) {
            break;
        }
        seconds = seconds * 10 + (unsigned)(text[i] - '0');
    }
    if (i == 0 || text[i] != '\0' || seconds > INT_MAX) {
        return nrtemu__fail(NRT_INVALID, func,
                            "invalid %s='%.32s': expected whole seconds "
                            "from 0 to %d",
                            name, value, INT_MAX);
    }
    *timeout_ns = (uint64_t)seconds * 1000000000u;
    return NRT_SUCCESS;
}

/* ----------------------------------------------------------------- load */

static void
model_free(nrt_model_t *model)
{
    nrtemu__rank_leave(model->cc_rank);
    if (model->programs != NULL) {
        for (int k = 0; k < model->subgraph_count; k++) {
            nrtemu__program_free(model->programs[k]);
        }
        free(model->programs);
    }
    nrtemu__neff_free(model->neff);
    free(model->bind.tensors);
    model->magic = 0;
    free(model);
}

/*
 * The program of subgraph `k`, or NULL when its def.json names none: a
 * NEFF compiled for hardware still loads, so that it can be inspected.
 */
static NRT_STATUS
load_program(const char *func, nrt_model_t *model, int k)
{
    if (!model->neff->subgraphs[k].has_program) {
        return NRT_SUCCESS;
    }
    return nrtemu__program_load(func, model->neff, k, &model->programs[k]);
}

/* Parse, place and prepare; `model` is freed by the caller on failure. */
static NRT_STATUS
load_into(const char *func, const void *bytes, size_t size, uint32_t first,
          int32_t vnc_count, uint32_t visible, nrt_model_t *model)
{
    const struct nrtemu_neff_header *hdr;
    bool validate_hash;
    uint32_t need;
    NRT_STATUS st;

    st = env_bool(func, "NEURON_RT_VALIDATE_HASH", false, &validate_hash);
    if (st == NRT_SUCCESS) {
        st = nrtemu__env_exec_timeout(func, &model->timeout_ns);
    }
    if (st == NRT_SUCCESS) {
        st = nrtemu__neff_open(func, bytes, size, validate_hash, &model->neff);
    }
    if (st != NRT_SUCCESS) {
        return st;
    }
    /* (calloc(0) may return NULL: one entry at least.) */
    model->bind.tensors =
        calloc(model->neff->io_count > 0 ? model->neff->io_count : 1,
               sizeof *model->bind.tensors);
    if (model->bind.tensors == NULL) {
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    hdr = &model->neff->header;
    snprintf(model->name, sizeof model->name, "%s",
             hdr->name[0] != '\0' ? hdr->name : "unnamed");
    model->subgraph_count =
        model->neff->subgraph_count > 0 ? model->neff->subgraph_count : 0;
    model->lnc = hdr->lnc_size > 1 ? hdr->lnc_size : 1;
    need = ((uint32_t)model->subgraph_count + model->lnc - 1) / model->lnc;
    model->vnc_count = need > 0 ? need : 1;
    if (model->vnc_count > visible - first) {
        return nrtemu__reject(NRT_LOAD_NOT_ENOUGH_NC, func,
                              "model '%s' needs %u vncs from vnc %u, but "
                              "only %u are visible",
                              model->name, model->vnc_count, first, visible);
    }
    if (vnc_count != -1 && vnc_count != 1 &&
        (uint32_t)vnc_count != model->vnc_count) {
        return nrtemu__reject(NRT_INVALID, func,
                              "vnc_count %d does not match the %u vnc(s) "
                              "model '%s' needs (pass -1)",
                              (int)vnc_count, model->vnc_count, model->name);
    }
    if (model->subgraph_count > 0) {
        model->programs =
            calloc((size_t)model->subgraph_count, sizeof *model->programs);
        if (model->programs == NULL) {
            return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
        }
    }
    model->runnable = model->subgraph_count > 0;
    for (int k = 0; k < model->subgraph_count; k++) {
        st = load_program(func, model, k);
        if (st != NRT_SUCCESS) {
            return st;
        }
        model->runnable = model->runnable && model->programs[k] != NULL;
    }
    /* The rank's communicator, which all its collective models share. */
    if (model->world > 1) {
        st = nrtemu__rank_join(func, bytes, size, model->name, first,
                               model->rank, model->world, model->timeout_ns,
                               &model->cc_rank);
    }
    for (int k = 0; k < model->subgraph_count && st == NRT_SUCCESS; k++) {
        if (model->programs[k] != NULL) {
            st = nrtemu__program_bind_rank(func, model->programs[k],
                                           model->cc_rank, model->world);
        }
    }
    return st;
}

static NRT_STATUS
load_model(const char *func, const void *bytes, size_t size, int32_t vnc,
           int32_t vnc_count, uint32_t rank, uint32_t world, nrt_model_t **out)
{
    nrt_model_t *model;
    uint32_t epoch, visible, first;
    uint64_t tracking;
    NRT_STATUS st;

    if (out == NULL) {
        return nrtemu__reject(NRT_INVALID, func, "NULL model pointer");
    }
    if (bytes == NULL || size == 0) {
        return nrtemu__reject(NRT_INVALID, func, "%s NEFF image",
                              bytes == NULL ? "NULL" : "empty");
    }
    epoch = nrtemu__runtime_epoch();
    st = nrtemu__runtime_check(func, epoch);
    if (st != NRT_SUCCESS) {
        return st;
    }
    visible = nrtemu__runtime_visible_vnc();
    if (vnc < -1 || (vnc >= 0 && (uint32_t)vnc >= visible) || visible == 0) {
        return nrtemu__reject(NRT_INVALID, func,
                              "Could not find VNC id %d (%u visible)",
                              (int)vnc, visible);
    }
    if (vnc_count == 0 || vnc_count < -1) {
        return nrtemu__reject(NRT_INVALID, func,
                              "invalid vnc_count %d (pass -1)",
                              (int)vnc_count);
    }
    first = vnc == -1 ? 0 : (uint32_t)vnc;
    model = calloc(1, sizeof *model);
    if (model == NULL) {
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    model->epoch = epoch;
    model->vnc = first;
    model->rank = rank;
    model->world = world;
    tracking = nrtemu__sys_trace_begin(NRTEMU_TRACE_NRT_LOAD, first, 0, NULL);
    st = load_into(func, bytes, size, first, vnc_count, visible, model);
    nrtemu__sys_trace_end(NRTEMU_TRACE_NRT_LOAD, first, tracking, 0,
                          model->name[0] != '\0' ? model->name : NULL, st);
    if (st != NRT_SUCCESS) {
        model_free(model);
        return st;
    }
    model->magic = NRTEMU_MODEL_MAGIC;
    nrtemu__log(NRTEMU_LOG_INFO, func,
                "loaded '%s' on vnc %u (%u vnc(s)): %zu tensors, %s",
                model->name, model->vnc, model->vnc_count,
                model->neff->io_count,
                model->runnable ? "emulator program"
                                : "no emulator program (needs hardware)");
    *out = model;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_load(const void *neff_bytes, size_t size, int32_t vnc, int32_t vnc_count,
         nrt_model_t **model)
{
    return load_model(__func__, neff_bytes, size, vnc, vnc_count, 0, 1, model);
}

NRTEMU_EXPORT NRT_STATUS
nrt_load_collectives(const void *neff_bytes, size_t size, int32_t vnc,
                     int32_t vnc_count, uint32_t ctx_device_id,
                     uint32_t ctx_device_count, nrt_model_t **model)
{
    if (ctx_device_id >= ctx_device_count) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "ctx_device_id %u is not below "
                              "ctx_device_count %u",
                              ctx_device_id, ctx_device_count);
    }
    return load_model(__func__, neff_bytes, size, vnc, vnc_count,
                      ctx_device_id, ctx_device_count, model);
}

NRTEMU_EXPORT NRT_STATUS
nrt_unload(nrt_model_t *model)
{
    NRT_STATUS st = nrtemu__model_check(__func__, model);

    if (st != NRT_SUCCESS) {
        return st;
    }
    nrtemu__profile_forget(model);
    model_free(model);
    return NRT_SUCCESS;
}

/* ----------------------------------------------------------------- info */

NRTEMU_EXPORT NRT_STATUS
nrt_get_model_tensor_info(nrt_model_t *model,
                          nrt_tensor_info_array_t **tensor_info)
{
    const struct nrtemu_neff *neff;
    nrt_tensor_info_array_t *arr;
    size_t dims = 0, bytes;
    uint32_t *shape;
    NRT_STATUS st = nrtemu__model_check(__func__, model);

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (tensor_info == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "NULL tensor info pointer");
    }
    neff = model->neff;
    for (size_t i = 0; i < neff->io_count; i++) {
        dims += neff->io[i].ndim;
    }
    /* One block, so that the shapes go with the array in one free(). */
    bytes = sizeof *arr + neff->io_count * sizeof arr->tensor_array[0] +
            dims * sizeof *shape;
    arr = calloc(1, bytes);
    if (arr == NULL) {
        return nrtemu__fail(NRT_RESOURCE, __func__, "out of host memory");
    }
    arr->tensor_count = neff->io_count;
    shape = (uint32_t *)&arr->tensor_array[neff->io_count];
    for (size_t i = 0; i < neff->io_count; i++) {
        const struct nrtemu_neff_io *io = &neff->io[i];
        nrt_tensor_info_t *info = &arr->tensor_array[i];

        snprintf(info->name, sizeof info->name, "%s", io->name);
        info->usage = io->usage;
        info->size = io->size;
        info->dtype = nrtemu__dtype_model_report(io->dtype);
        info->ndim = io->ndim;
        info->shape = io->ndim > 0 ? shape : NULL;
        memcpy(shape, io->shape, io->ndim * sizeof *shape);
        shape += io->ndim;
    }
    *tensor_info = arr;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrtemu_get_model_tensor_dtype(nrt_model_t *model, uint64_t index,
                              const char **dtype_name)
{
    NRT_STATUS st = nrtemu__model_check(__func__, model);

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (dtype_name == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL dtype_name");
    }
    if (index >= model->neff->io_count) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "index %" PRIu64 " out of range: the model "
                              "has %zu inputs and outputs",
                              index, model->neff->io_count);
    }
    *dtype_name = nrtemu__dtype_name(model->neff->io[index].dtype);
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_free_model_tensor_info(nrt_tensor_info_array_t *tensor_info)
{
    free(tensor_info);
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_get_model_vnc_count(const nrt_model_t *model, uint32_t *vnc_count)
{
    NRT_STATUS st = nrtemu__model_check(__func__, model);

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (vnc_count == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL count pointer");
    }
    *vnc_count = model->vnc_count;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_get_model_nc_count(const nrt_model_t *model, uint32_t *vnc_count)
{
    return nrt_get_model_vnc_count(model, vnc_count);
}

NRTEMU_EXPORT NRT_STATUS
nrt_get_model_instance_count(nrt_model_t *model, uint32_t *instance_count)
{
    NRT_STATUS st = nrtemu__model_check(__func__, model);

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (instance_count == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL count pointer");
    }
    *instance_count = 1;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_get_model_info(const nrt_model_t *model, nrt_model_info_t *info,
                   size_t info_size_in, size_t *info_size_out)
{
    nrt_model_info_t out;
    size_t n;
    NRT_STATUS st = nrtemu__model_check(__func__, model);

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (info == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL info pointer");
    }
    out.vnc = model->vnc;
    n = info_size_in < sizeof out ? info_size_in : sizeof out;
    memcpy(info, &out, n);
    if (info_size_out != NULL) {
        *info_size_out = n;
    }
    return NRT_SUCCESS;
}

/* -------------------------------------------------------------- execute */

/* The open runtime must be the one the model was loaded in. */
static NRT_STATUS
model_runtime_check(const char *func, const nrt_model_t *model)
{
    NRT_STATUS st;

    if (nrtemu__runtime_epoch_open(model->epoch)) {
        return NRT_SUCCESS;
    }
    st = nrtemu__runtime_fork_error(func, model->epoch);
    if (st != NRT_SUCCESS) {
        return st;
    }
    if (nrtemu__runtime_epoch() == 0) {
        st = nrtemu__runtime_state_error(func, 0);
        if (st != NRT_SUCCESS) {
            return st;
        }
    }
    return nrtemu__reject(NRT_INVALID, func,
                          "model '%s' was loaded in a runtime that has "
                          "been closed",
                          model->name);
}

static NRT_STATUS
set_check(const char *func, const struct nrtemu_tensor_set *set,
          const char *what)
{
    if (set == NULL) {
        return nrtemu__reject(NRT_INVALID, func, "NULL %s set", what);
    }
    if (set->magic != NRTEMU_TENSOR_SET_MAGIC) {
        return nrtemu__reject(NRT_INVALID, func,
                              "the %s set is not a live tensor set", what);
    }
    return NRT_SUCCESS;
}

/*
 * Check the tensor `t` found for NEFF I/O `io`: live, of the open
 * runtime, of the NEFF's byte size, on one of the model's vncs when on a
 * device.
 */
static NRT_STATUS
io_check(const char *func, const nrt_model_t *model,
         const struct nrtemu_neff_io *io, const nrt_tensor_t *t)
{
    const char *what =
        io->usage == NRT_TENSOR_USAGE_INPUT ? "input" : "output";

    if (t->magic != NRTEMU_TENSOR_MAGIC) {
        return nrtemu__reject(NRT_INVALID, func,
                              "%s '%s' is not a live tensor (freed or "
                              "corrupt)",
                              what, io->name);
    }
    if (!nrtemu__runtime_epoch_open(t->epoch)) {
        NRT_STATUS st = nrtemu__runtime_fork_error(func, t->epoch);
        if (st != NRT_SUCCESS) {
            return st;
        }
        return nrtemu__reject(NRT_INVALID, func,
                              "%s '%s' belongs to a closed runtime", what,
                              io->name);
    }
    if (t->storage == NULL || t->size != io->size) {
        return nrtemu__reject(NRT_INVALID, func,
                              "%s '%s' is %zu bytes, the model expects "
                              "%zu",
                              what, io->name, t->storage != NULL ? t->size : 0,
                              io->size);
    }
    if (t->placement == NRT_TENSOR_PLACEMENT_DEVICE &&
        (t->vnc < 0 || (uint32_t)t->vnc < model->vnc ||
         (uint32_t)t->vnc - model->vnc >= model->vnc_count)) {
        return nrtemu__reject(NRT_INVALID, func,
                              "%s '%s' is on vnc %d, model '%s' is on "
                              "vnc %u",
                              what, io->name, t->vnc, model->name, model->vnc);
    }
    return NRT_SUCCESS;
}

/*
 * Find the tensor of every NEFF input and output by name and check it
 * (io_check), in NEFF order.  Names the sets have beyond the NEFF's are
 * ignored, so one set can serve several models.
 */
static NRT_STATUS
bind_io_locked(const char *func, const nrt_model_t *model,
               const struct nrtemu_tensor_set *in,
               const struct nrtemu_tensor_set *out, void **io_data,
               nrt_tensor_t **io_tensors)
{
    const struct nrtemu_neff *neff = model->neff;

    for (size_t i = 0; i < neff->io_count; i++) {
        const struct nrtemu_neff_io *io = &neff->io[i];
        bool input = io->usage == NRT_TENSOR_USAGE_INPUT;
        const char *what = input ? "input" : "output";
        nrt_tensor_t *t =
            nrtemu__tensor_set_lookup_locked(input ? in : out, io->name);
        NRT_STATUS st;

        if (t == NULL) {
            return nrtemu__reject(NRT_INVALID, func,
                                  "%s '%s' missing from the %s set", what,
                                  io->name, what);
        }
        st = io_check(func, model, io, t);
        if (st != NRT_SUCCESS) {
            return st;
        }
        io_data[i] = nrtemu__tensor_data(t);
        io_tensors[i] = t;
    }
    return NRT_SUCCESS;
}

/* The model's binding cache, if no other thread holds it. */
static struct nrtemu_bind_cache *
bind_cache_take(nrt_model_t *model)
{
    struct nrtemu_bind_cache *c = &model->bind;

    return atomic_exchange_explicit(&c->busy, true, memory_order_acquire)
               ? NULL
               : c;
}

static void
bind_cache_give(struct nrtemu_bind_cache *c)
{
    atomic_store_explicit(&c->busy, false, memory_order_release);
}

/*
 * The tensors of the sets at stamps `in_stamp`, `out_stamp`, checked, when
 * the model's cache holds them: NRT_SUCCESS or a check's failure, with
 * *hit set; *hit false otherwise (nothing written).
 */
static NRT_STATUS
bind_io_cached(const char *func, nrt_model_t *model, uint64_t in_stamp,
               uint64_t out_stamp, void **io_data, nrt_tensor_t **io_tensors,
               bool *hit)
{
    const struct nrtemu_neff *neff = model->neff;
    struct nrtemu_bind_cache *c = bind_cache_take(model);

    *hit = false;
    if (c == NULL) {
        return NRT_SUCCESS;
    }
    if (c->in_stamp == in_stamp && c->out_stamp == out_stamp &&
        in_stamp != 0) {
        memcpy(io_tensors, c->tensors, neff->io_count * sizeof *io_tensors);
        *hit = true;
    }
    bind_cache_give(c);
    if (!*hit) {
        return NRT_SUCCESS;
    }
    for (size_t i = 0; i < neff->io_count; i++) {
        NRT_STATUS st = io_check(func, model, &neff->io[i], io_tensors[i]);
        if (st != NRT_SUCCESS) {
            return st;
        }
        io_data[i] = nrtemu__tensor_data(io_tensors[i]);
    }
    return NRT_SUCCESS;
}

/*
 * Bind the model's I/O to the tensors of the sets: from the model's cache
 * when the sets are unchanged since it was filled, else by name.  The
 * sets' locks are taken once each (the same set may be both), in address
 * order: two threads executing with sets A, B and B, A must not wait for
 * each other.
 */
static NRT_STATUS
bind_io(const char *func, nrt_model_t *model,
        const struct nrtemu_tensor_set *in,
        const struct nrtemu_tensor_set *out, void **io_data,
        nrt_tensor_t **io_tensors)
{
    struct nrtemu_tensor_set *first = (struct nrtemu_tensor_set *)in;
    struct nrtemu_tensor_set *second = (struct nrtemu_tensor_set *)out;
    struct nrtemu_bind_cache *c;
    uint64_t in_stamp, out_stamp;
    bool hit;
    NRT_STATUS st;

    st = bind_io_cached(func, model, nrtemu__tensor_set_stamp(in),
                        nrtemu__tensor_set_stamp(out), io_data, io_tensors,
                        &hit);
    if (hit) {
        return st;
    }
    if ((uintptr_t)second < (uintptr_t)first) {
        struct nrtemu_tensor_set *t = first;
        first = second;
        second = t;
    }
    pthread_mutex_lock(&first->lock);
    if (second != first) {
        pthread_mutex_lock(&second->lock);
    }
    /* Read under the locks: the stamps of what is looked up. */
    in_stamp = nrtemu__tensor_set_stamp(in);
    out_stamp = nrtemu__tensor_set_stamp(out);
    st = bind_io_locked(func, model, in, out, io_data, io_tensors);
    if (second != first) {
        pthread_mutex_unlock(&second->lock);
    }
    pthread_mutex_unlock(&first->lock);
    if (st == NRT_SUCCESS && (c = bind_cache_take(model)) != NULL) {
        memcpy(c->tensors, io_tensors,
               model->neff->io_count * sizeof *io_tensors);
        c->in_stamp = in_stamp;
        c->out_stamp = out_stamp;
        bind_cache_give(c);
    }
    return st;
}

/* What an execution's op observer feeds: the profile's record, and the
 * sys-trace's cc_running events. */
struct exec_watch {
    struct nrtemu_profile_rec *rec; /* NULL: not profiling */
    bool trace_cc;
    uint32_t vnc;
    uint64_t exec_id;
    const char *model_name;
};

static void
exec_observe(void *ctx, size_t index, const char *op, const char *shapes,
             const char *note, uint64_t start_ns, uint64_t end_ns)
{
    struct exec_watch *w = ctx;

    if (w->rec != NULL) {
        nrtemu__profile_observe(w->rec, index, op, shapes, note, start_ns,
                                end_ns);
    }
    if (w->trace_cc && nrtemu__op_is_collective(op)) {
        nrtemu__sys_trace_span(NRTEMU_TRACE_CC_RUNNING, w->vnc, w->exec_id,
                               w->model_name, start_ns, end_ns);
    }
}

/* Run every subgraph once; the caller holds the model's vnc locks. */
static NRT_STATUS
run_programs(const char *func, nrt_model_t *model, void *const *io_data,
             uint64_t exec_id, struct nrtemu_profile_rec *rec)
{
    uint64_t deadline = 0;
    NRT_STATUS st = NRT_SUCCESS;
    struct exec_watch watch = {rec, false, 0, exec_id, model->name};

    if (model->timeout_ns != 0) {
        deadline = nrtemu__deadline_clock_ns() + model->timeout_ns;
    }
    for (uint32_t c = 0; c < model->vnc_count && st == NRT_SUCCESS; c++) {
        uint32_t vnc = model->vnc + c;
        uint64_t tracking =
            nrtemu__sys_trace_exec_begin(vnc, exec_id, model->name);

        if (rec != NULL) {
            rec->vnc = vnc;
        }
        watch.vnc = vnc;
        watch.trace_cc = model->world > 1 && nrtemu__sys_trace_wanted(
                                                 NRTEMU_TRACE_CC_RUNNING, vnc);
        for (int k = (int)(c * model->lnc);
             k < model->subgraph_count && k < (int)((c + 1) * model->lnc) &&
             st == NRT_SUCCESS;
             k++) {
            st = nrtemu__program_run(
                func, model->programs[k], io_data, deadline,
                rec != NULL || watch.trace_cc ? exec_observe : NULL, &watch);
        }
        nrtemu__sys_trace_exec_end(vnc, tracking, exec_id, model->name, st);
    }
    return st;
}

#define IO_ON_STACK 32

/* One more completed execution for each output tensor of the model (as
 * bound: the sets are not searched again). */
static void
count_output_completions(const nrt_model_t *model,
                         nrt_tensor_t *const *io_tensors)
{
    for (size_t i = 0; i < model->neff->io_count; i++) {
        if (model->neff->io[i].usage == NRT_TENSOR_USAGE_OUTPUT) {
            nrtemu__tensor_count_completion(io_tensors[i]);
        }
    }
}

static NRT_STATUS
execute(const char *func, nrt_model_t *model,
        const nrt_tensor_set_t *input_set, nrt_tensor_set_t *output_set,
        int repeat_count)
{
    void *io_stack[IO_ON_STACK];
    nrt_tensor_t *tensor_stack[IO_ON_STACK];
    void **io_data = NULL;
    nrt_tensor_t **io_tensors = NULL;
    NRT_STATUS st = nrtemu__model_check(func, model);

    if (st == NRT_SUCCESS) {
        st = model_runtime_check(func, model);
    }
    if (st == NRT_SUCCESS) {
        st = set_check(func, input_set, "input");
    }
    if (st == NRT_SUCCESS) {
        st = set_check(func, output_set, "output");
    }
    if (st != NRT_SUCCESS) {
        return st;
    }
    /* Small models (nearly all) bind on the stack: no allocation per
     * execution. */
    if (model->neff->io_count <= IO_ON_STACK) {
        io_data = io_stack;
        io_tensors = tensor_stack;
    } else {
        io_data = calloc(model->neff->io_count, sizeof *io_data);
        io_tensors = calloc(model->neff->io_count, sizeof *io_tensors);
    }
    if (io_data == NULL || io_tensors == NULL) {
        free(io_data);
        free(io_tensors);
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    st = bind_io(func, model, input_set, output_set, io_data, io_tensors);
    if (st != NRT_SUCCESS) {
        goto done;
    }
    if (!model->runnable) {
        st = nrtemu__reject(NRT_INVALID, func,
                            "model '%s' has no emulator program: it needs "
                            "Neuron hardware",
                            model->name);
        goto done;
    }
    pthread_once(&exec_locks_once, exec_locks_init);
    for (int i = 0; i < repeat_count && st == NRT_SUCCESS; i++) {
        uint64_t exec_id = atomic_fetch_add(&last_exec_id, 1) + 1;
        uint64_t tracking = nrtemu__sys_trace_begin(
            NRTEMU_TRACE_NRT_EXECUTE, model->vnc, exec_id, model->name);
        struct nrtemu_profile_rec rec;
        bool profiling;
        uint64_t start = 0, end = 0;

        /* One execution of a rank at a time (its exchanges keep one
         * order), then one of a vnc. */
        nrtemu__rank_exec_begin(model->cc_rank);
        for (uint32_t c = 0; c < model->vnc_count; c++) {
            pthread_mutex_lock(&exec_locks[model->vnc + c]);
        }
        profiling = nrtemu__profile_watching(model);
        nrtemu__profile_rec_init(&rec);
        /* (Read only for a profile: a clock read costs a small model's
         * execution several percent.) */
        if (profiling) {
            start = nrtemu__monotonic_ns();
        }
        st = run_programs(func, model, io_data, exec_id,
                          profiling ? &rec : NULL);
        if (profiling) {
            end = nrtemu__monotonic_ns();
        }
        for (uint32_t c = model->vnc_count; c-- > 0;) {
            pthread_mutex_unlock(&exec_locks[model->vnc + c]);
        }
        nrtemu__rank_exec_end(model->cc_rank);
        if (profiling && st == NRT_SUCCESS) {
            nrtemu__profile_commit(model, exec_id, model->vnc, start, end,
                                   &rec);
        }
        nrtemu__profile_rec_free(&rec);
        nrtemu__sys_trace_end(NRTEMU_TRACE_NRT_EXECUTE, model->vnc, tracking,
                              exec_id, model->name, st);
        if (st == NRT_SUCCESS) {
            count_output_completions(model, io_tensors);
        }
    }
done:
    if (io_data != io_stack) {
        free(io_data);
        free(io_tensors);
    }
    return st;
}

NRTEMU_EXPORT NRT_STATUS
nrt_execute(nrt_model_t *model, const nrt_tensor_set_t *input_set,
            nrt_tensor_set_t *output_set)
{
    return execute(__func__, model, input_set, output_set, 1);
}

NRTEMU_EXPORT NRT_STATUS
nrt_execute_repeat(nrt_model_t *model, const nrt_tensor_set_t *input_set,
                   nrt_tensor_set_t *output_set, int repeat_count)
{
    if (repeat_count < 1) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "repeat_count %d is not positive", repeat_count);
    }
    return execute(__func__, model, input_set, output_set, repeat_count);
}
