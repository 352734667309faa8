/*
 * runtime.c - nrt_init/nrt_close, the queries about the instance and its
 * cores, and the runtime state the other files check.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nrt/nrtemu.h"

#include "abi/async.h"
#include "collective/collective.h"
#include "device/core_lock.h"
#include "util/env_parse.h"
#include "util/error.h"
#include "util/export.h"
#include "util/fork.h"
#include "device/hbm.h"
#include "device/host_memory.h"
#include "device/instance.h"
#include "abi/runtime.h"
#include "device/storage.h"

#ifndef NRTEMU_VERSION
#define NRTEMU_VERSION "unknown"
#endif

_Atomic uint32_t nrtemu__open_epoch;

/* Everything below is guarded by `lock`; only nrt_init/nrt_close write. */
static struct {
    pthread_mutex_t lock;
    bool ever_opened;
    bool open;
    uint32_t last_epoch;
    struct nrtemu_config cfg; /* valid while open */
    uint32_t first_vnc;       /* instance-global index of our vnc 0 */
    uint32_t num_vnc;
    struct nrtemu_core_locks locks;
    long pid; /* the process that opened the runtime */
    /* Set in a forked child whose parent had a runtime open: the parent's
     * PID and that runtime's epoch, whose handles fail with NRT_CLOSED
     * here for good (fork.h). */
    long forked_from;
    uint32_t forked_epoch;
} rt = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

/* The detail of a handle inherited through fork(); with rt.lock held. */
static NRT_STATUS
fork_error_locked(const char *func)
{
    return nrtemu__reject(NRT_CLOSED, func,
                          "the runtime belongs to process %ld: this process "
                          "(%ld) was forked from it, and a runtime is not "
                          "shared across fork() (nrt_init starts one of "
                          "this process's own on free cores)",
                          rt.forked_from, (long)getpid());
}

NRT_STATUS
nrtemu__runtime_fork_error(const char *func, uint32_t epoch)
{
    NRT_STATUS st = NRT_SUCCESS;

    pthread_mutex_lock(&rt.lock);
    if (rt.forked_from != 0 && epoch != 0 && epoch == rt.forked_epoch) {
        st = fork_error_locked(func);
    }
    pthread_mutex_unlock(&rt.lock);
    return st;
}

NRT_STATUS
nrtemu__runtime_state_error(const char *func, uint32_t epoch)
{
    bool ever_opened, open, inherited;
    uint32_t current;
    NRT_STATUS st;

    pthread_mutex_lock(&rt.lock);
    ever_opened = rt.ever_opened;
    open = rt.open;
    current = rt.last_epoch;
    /* No runtime opened since the fork: the parent's is the last one. */
    inherited = rt.forked_from != 0 && rt.last_epoch == rt.forked_epoch;
    if (rt.forked_from != 0 &&
        ((epoch != 0 && epoch == rt.forked_epoch) || (!open && inherited))) {
        st = fork_error_locked(func);
        pthread_mutex_unlock(&rt.lock);
        return st;
    }
    pthread_mutex_unlock(&rt.lock);

    if (!ever_opened) {
        return nrtemu__reject(NRT_UNINITIALIZED, func,
                              "the runtime is not initialized (call "
                              "nrt_init first)");
    }
    if (!open) {
        return nrtemu__reject(NRT_CLOSED, func, "the runtime is closed");
    }
    if (epoch == 0 || epoch == current) {
        /* The runtime reopened while we looked: the caller may retry. */
        return NRT_SUCCESS;
    }
    return nrtemu__reject(NRT_INVALID, func,
                          "tensor belongs to a closed runtime");
}

/* nrtemu_hbm_refusal: a charge for a tensor of a runtime no longer open,
 * or to a vnc that is not one of this runtime's. */
static NRT_STATUS
hbm_refusal(const char *func, int vnc, uint32_t epoch)
{
    if (!nrtemu__runtime_epoch_open(epoch)) {
        return nrtemu__runtime_state_error(func, epoch);
    }
    return nrtemu__vnc_reject(func, vnc);
}

uint32_t
nrtemu__runtime_visible_vnc(void)
{
    uint32_t n;

    pthread_mutex_lock(&rt.lock);
    n = rt.open ? rt.num_vnc : 0;
    pthread_mutex_unlock(&rt.lock);
    return n;
}

/* Which cores to claim, from NEURON_RT_VISIBLE_CORES/NEURON_RT_NUM_CORES. */
struct core_request {
    bool any;       /* claim the first `count` free cores */
    uint32_t first; /* when !any */
    uint32_t count;
};

static NRT_STATUS
core_request_from_env(const char *func, const struct nrtemu_config *cfg,
                      struct core_request *req)
{
    const char *visible = getenv("NEURON_RT_VISIBLE_CORES");
    const char *num = getenv("NEURON_RT_NUM_CORES");
    char err[256];
    NRT_STATUS st;

    req->any = false;
    req->first = 0;
    req->count = cfg->total_vnc;
    /* VISIBLE_CORES names exact cores and so wins over NUM_CORES. */
    if (visible != NULL && !nrtemu__env_blank(visible)) {
        st = nrtemu__parse_visible_cores(visible, cfg->total_vnc, &req->first,
                                         &req->count, err, sizeof err);
        if (st != NRT_SUCCESS) {
            return nrtemu__fail(st, func,
                                "invalid NEURON_RT_VISIBLE_CORES='%.64s': %s",
                                visible, err);
        }
        return NRT_SUCCESS;
    }
    if (num != NULL && !nrtemu__env_blank(num)) {
        st = nrtemu__parse_num_cores(num, cfg->total_vnc, &req->count, err,
                                     sizeof err);
        if (st != NRT_SUCCESS) {
            return nrtemu__fail(
                st, func, "invalid NEURON_RT_NUM_CORES='%.32s': %s", num, err);
        }
        req->any = true;
    }
    return NRT_SUCCESS;
}

/*
 * Emulated HBM is host RAM: say so when the limits promise more than the
 * host has, before an allocation finds out (it then fails with
 * NRT_RESOURCE instead of waking the OOM killer).
 */
static void
warn_hbm_over_host(const struct nrtemu_config *cfg, uint32_t num_vnc)
{
    uint64_t host = nrtemu__host_memory_total();
    uint64_t hbm = cfg->hbm_per_vnc;

    if (host == 0) {
        return;
    }
    if (num_vnc != 0 && hbm > UINT64_MAX / num_vnc) {
        hbm = UINT64_MAX;
    } else {
        hbm *= num_vnc;
    }
    if (hbm > host) {
        nrtemu__log(NRTEMU_LOG_WARN, "nrt_init",
                    "emulated HBM (%llu bytes: %u vnc x %llu) exceeds host "
                    "RAM (%llu bytes); allocations past what the host can "
                    "back fail with NRT_RESOURCE (set "
                    "NRTPY_EMU_HBM_PER_CORE lower to match the host)",
                    (unsigned long long)hbm, num_vnc,
                    (unsigned long long)cfg->hbm_per_vnc,
                    (unsigned long long)host);
    }
}

NRTEMU_EXPORT NRT_STATUS
nrt_init(nrt_framework_type_t framework, const char *fw_version,
         const char *fal_version)
{
    struct nrtemu_config cfg;
    struct core_request req;
    uint32_t epoch;
    NRT_STATUS st;

    (void)fw_version;
    (void)fal_version;
    nrtemu__log_configure();
    nrtemu__fork_handlers_install();
    if (framework < NRT_FRAMEWORK_TYPE_NO_FW ||
        framework > NRT_FRAMEWORK_TYPE_PRECHECK) {
        return nrtemu__fail(NRT_INVALID, __func__, "invalid framework type %d",
                            (int)framework);
    }
    pthread_mutex_lock(&rt.lock);
    if (rt.open) {
        st = nrtemu__fail(NRT_FAILURE, __func__,
                          "the runtime is already initialized in this "
                          "process (call nrt_close first)");
        goto out;
    }
    st = nrtemu__config_from_env(__func__, true, &cfg);
    if (st != NRT_SUCCESS) {
        goto out;
    }
    st = core_request_from_env(__func__, &cfg, &req);
    if (st != NRT_SUCCESS) {
        goto out;
    }
    nrtemu__core_locks_init(&rt.locks);
    if (req.any) {
        st = nrtemu__core_locks_acquire_any(__func__, &cfg, req.count,
                                            &req.first, &rt.locks);
    } else {
        st = nrtemu__core_locks_acquire(__func__, &cfg, req.first, req.count,
                                        &rt.locks);
    }
    if (st != NRT_SUCCESS) {
        goto out;
    }
    /* Epoch 0 means "none", so skip it when the counter wraps. */
    epoch = rt.last_epoch + 1 == 0 ? 1 : rt.last_epoch + 1;
    nrtemu__hbm_open(epoch, req.count, cfg.hbm_per_vnc, hbm_refusal);
    atomic_store(&nrtemu__storage_poison, cfg.poison);
    rt.cfg = cfg;
    rt.first_vnc = req.first;
    rt.num_vnc = req.count;
    rt.pid = (long)getpid();
    rt.last_epoch = epoch;
    rt.ever_opened = true;
    rt.open = true;
    atomic_store_explicit(&nrtemu__open_epoch, epoch, memory_order_release);
    nrtemu__log(NRTEMU_LOG_INFO, __func__,
                "nrtpy emulator %s: instance %s, vnc 0-%u = nc%u-nc%u, "
                "%llu bytes of HBM per vnc",
                NRTEMU_VERSION, cfg.instance->name, req.count - 1, req.first,
                req.first + req.count - 1,
                (unsigned long long)cfg.hbm_per_vnc);
    warn_hbm_over_host(&cfg, req.count);
out:
    pthread_mutex_unlock(&rt.lock);
    return st;
}

NRTEMU_EXPORT void
nrt_close(void)
{
    pthread_mutex_lock(&rt.lock);
    if (!rt.open) {
        pthread_mutex_unlock(&rt.lock);
        nrtemu__log(NRTEMU_LOG_DEBUG, __func__, "no runtime is open");
        return;
    }
    /* Refuse new work first, then take the cores and memory away. */
    atomic_store_explicit(&nrtemu__open_epoch, 0, memory_order_release);
    rt.open = false;
    nrtemu__hbm_close();
    nrtemu__core_locks_release(&rt.locks);
    nrtemu__host_memory_trim();
    pthread_mutex_unlock(&rt.lock);
    /* Queued nrta_* requests now fail fast with NRT_CLOSED; their workers
     * take rt.lock to say so, hence after the unlock. */
    nrtemu__async_close();
    nrtemu__global_comm_close();
    nrtemu__communicators_close();
    nrtemu__log(NRTEMU_LOG_INFO, __func__, "runtime closed");
}

void
nrtemu__runtime_atfork(enum nrtemu_fork_phase phase)
{
    switch (phase) {
    case NRTEMU_FORK_PREPARE:
        /* First of all locks: the state is copied whole, never halfway
         * through nrt_init or nrt_close. */
        pthread_mutex_lock(&rt.lock);
        return;
    case NRTEMU_FORK_PARENT:
        pthread_mutex_unlock(&rt.lock);
        return;
    case NRTEMU_FORK_CHILD:
        break;
    }
    pthread_mutex_init(&rt.lock, NULL);
    if (!rt.open) {
        return;
    }
    /* The runtime, its cores and its device memory are the parent's.  Close
     * our copy without giving anything back: the core locks are
     * open-file-description locks shared with the parent, which keeps
     * them, and the PIDs in their files stay the parent's.  (The hooks of
     * hbm.c and the others have already run: fork.c runs them in reverse.) */
    atomic_store_explicit(&nrtemu__open_epoch, 0, memory_order_release);
    rt.open = false;
    rt.forked_from = rt.pid;
    rt.forked_epoch = rt.last_epoch;
    nrtemu__hbm_close();
    nrtemu__core_locks_forget(&rt.locks);
}

NRTEMU_EXPORT NRT_STATUS
nrt_get_version(nrt_version_t *ver, size_t size)
{
    nrt_version_t v;

    if (ver == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL version pointer");
    }
    memset(&v, 0, sizeof v);
    v.rt_major = NRT_MAJOR_VERSION;
    v.rt_minor = NRT_MINOR_VERSION;
    snprintf(v.rt_detail, sizeof v.rt_detail,
             "nrtpy emulator %s (software NeuronCores, not the AWS Neuron "
             "runtime)",
             NRTEMU_VERSION);
    snprintf(v.git_hash, sizeof v.git_hash, "nrtpy-emulator-%s",
             NRTEMU_VERSION);
    /* Callers built against an older, shorter struct get its prefix. */
    memcpy(ver, &v, size < sizeof v ? size : sizeof v);
    return NRT_SUCCESS;
}

/*
 * The configuration a query should answer about: the open runtime's, or
 * a fresh read of the environment when none is open.
 */
static NRT_STATUS
current_config(const char *func, struct nrtemu_config *cfg, bool *open)
{
    pthread_mutex_lock(&rt.lock);
    *open = rt.open;
    if (rt.open) {
        *cfg = rt.cfg;
        pthread_mutex_unlock(&rt.lock);
        return NRT_SUCCESS;
    }
    pthread_mutex_unlock(&rt.lock);
    return nrtemu__config_from_env(func, false, cfg);
}

NRTEMU_EXPORT NRT_STATUS
nrt_get_instance_info(nrt_instance_info_t *info, size_t instance_info_len)
{
    struct nrtemu_config cfg;
    nrt_instance_info_t out;
    bool open;
    NRT_STATUS st;

    if (info == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL info pointer");
    }
    st = current_config(__func__, &cfg, &open);
    if (st != NRT_SUCCESS) {
        return st;
    }
    memset(&out, 0, sizeof out);
    out.family = cfg.instance->family;
    out.size = cfg.instance->size;
    snprintf(out.arch_name, sizeof out.arch_name, "%s",
             cfg.instance->arch_name);
    snprintf(out.device_revision, sizeof out.device_revision, "%s",
             cfg.instance->device_revision);
    /* Older headers had only {family, size}: write what the caller has. */
    memcpy(info, &out,
           instance_info_len < sizeof out ? instance_info_len : sizeof out);
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_get_total_vnc_count(uint32_t *vnc_count)
{
    struct nrtemu_config cfg;
    bool open;
    NRT_STATUS st;

    if (vnc_count == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL count pointer");
    }
    st = current_config(__func__, &cfg, &open);
    if (st != NRT_SUCCESS) {
        return st;
    }
    *vnc_count = cfg.total_vnc;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_get_total_nc_count(uint32_t *vnc_count)
{
    return nrt_get_total_vnc_count(vnc_count);
}

NRTEMU_EXPORT NRT_STATUS
nrt_get_visible_vnc_count(uint32_t *vnc_count)
{
    struct nrtemu_config cfg;
    struct core_request req;
    NRT_STATUS st;

    if (vnc_count == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL count pointer");
    }
    pthread_mutex_lock(&rt.lock);
    if (rt.open) {
        *vnc_count = rt.num_vnc;
        pthread_mutex_unlock(&rt.lock);
        return NRT_SUCCESS;
    }
    pthread_mutex_unlock(&rt.lock);
    /* Before nrt_init: what it would claim, if the cores are free. */
    st = nrtemu__config_from_env(__func__, false, &cfg);
    if (st == NRT_SUCCESS) {
        st = core_request_from_env(__func__, &cfg, &req);
    }
    if (st != NRT_SUCCESS) {
        return st;
    }
    *vnc_count = req.count;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_get_visible_nc_count(uint32_t *vnc_count)
{
    return nrt_get_visible_vnc_count(vnc_count);
}

NRTEMU_EXPORT NRT_STATUS
nrt_get_vnc_memory_stats(uint32_t vnc, nrt_vnc_memory_stats_t *stats,
                         size_t stats_size_in, size_t *stats_size_out)
{
    nrt_vnc_memory_stats_t out;
    uint32_t epoch = nrtemu__runtime_epoch();
    size_t n;
    NRT_STATUS st;

    if (stats == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL stats pointer");
    }
    if (epoch == 0) {
        st = nrtemu__runtime_state_error(__func__, 0);
        if (st != NRT_SUCCESS) {
            return st;
        }
        epoch = nrtemu__runtime_epoch();
    }
    if (!nrtemu__hbm_stats(vnc, epoch, &out.bytes_used, &out.bytes_limit)) {
        if (!nrtemu__runtime_epoch_open(epoch)) {
            return nrtemu__runtime_state_error(__func__, 0);
        }
        return nrtemu__vnc_reject(__func__, vnc);
    }
    n = stats_size_in < sizeof out ? stats_size_in : sizeof out;
    memcpy(stats, &out, n);
    if (stats_size_out != NULL) {
        *stats_size_out = n;
    }
    return NRT_SUCCESS;
}

NRTEMU_EXPORT const char *
nrtemu_instance_name(void)
{
    const struct nrtemu_instance *inst = NULL;
    const char *name;

    pthread_mutex_lock(&rt.lock);
    if (rt.open) {
        inst = rt.cfg.instance;
    }
    pthread_mutex_unlock(&rt.lock);
    if (inst != NULL) {
        return inst->name;
    }
    name = getenv("NRTPY_EMU_INSTANCE");
    if (name == NULL || nrtemu__env_blank(name)) {
        return NRTEMU_DEFAULT_INSTANCE;
    }
    inst = nrtemu__instance_find(name);
    return inst != NULL ? inst->name : "unknown";
}

NRT_STATUS
nrtemu__runtime_config(const char *func, struct nrtemu_config *cfg)
{
    bool open;

    return current_config(func, cfg, &open);
}

NRT_STATUS
nrtemu__vnc_reject(const char *func, long long vnc)
{
    return nrtemu__reject(NRT_INVALID, func,
                          "vnc %lld is not visible (%u visible)", vnc,
                          nrtemu__runtime_visible_vnc());
}

NRT_STATUS
nrtemu__vnc_check(const char *func, long long vnc)
{
    NRT_STATUS st = nrtemu__runtime_check(func, 0);

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (vnc < 0 || vnc >= (long long)nrtemu__runtime_visible_vnc()) {
        return nrtemu__vnc_reject(func, vnc);
    }
    return NRT_SUCCESS;
}
