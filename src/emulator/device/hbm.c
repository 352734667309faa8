/*
 * hbm.c - device memory accounting per vnc.
 *
 * The table is static and sized for the largest instance, so a tensor
 * freed on one thread while another closes the runtime never touches freed
 * memory: only the epoch stamp of a slot changes.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "util/error.h"
#include "util/fork.h"
#include "device/hbm.h"
#include "device/instance.h"

struct hbm_core {
    pthread_mutex_t lock;
    uint32_t epoch; /* 0: not open */
    size_t used;
    size_t limit;
};

static struct hbm_core cores[NRTEMU_MAX_VNC];
static _Atomic(nrtemu_hbm_refusal) refusal;
static pthread_once_t cores_once = PTHREAD_ONCE_INIT;

static void
cores_init(void)
{
    for (size_t i = 0; i < NRTEMU_MAX_VNC; i++) {
        pthread_mutex_init(&cores[i].lock, NULL);
    }
}

void
nrtemu__hbm_atfork(enum nrtemu_fork_phase phase)
{
    /* Not held across fork(): the child closes the table (runtime.c), so
     * a count being updated at that moment does not matter, and waiting
     * here could stall fork() behind a busy core. */
    if (phase == NRTEMU_FORK_CHILD) {
        cores_init();
    }
}

void
nrtemu__hbm_open(uint32_t epoch, uint32_t num_vnc, size_t limit,
                 nrtemu_hbm_refusal refuse)
{
    atomic_store(&refusal, refuse);
    pthread_once(&cores_once, cores_init);
    for (uint32_t i = 0; i < num_vnc && i < NRTEMU_MAX_VNC; i++) {
        pthread_mutex_lock(&cores[i].lock);
        cores[i].epoch = epoch;
        cores[i].used = 0;
        cores[i].limit = limit;
        pthread_mutex_unlock(&cores[i].lock);
    }
}

void
nrtemu__hbm_close(void)
{
    pthread_once(&cores_once, cores_init);
    for (size_t i = 0; i < NRTEMU_MAX_VNC; i++) {
        pthread_mutex_lock(&cores[i].lock);
        cores[i].epoch = 0;
        cores[i].used = 0;
        pthread_mutex_unlock(&cores[i].lock);
    }
}

/* Why a charge is refused: the runtime's account, or (before any runtime
 * opened, which no tensor can charge) a plain one. */
static NRT_STATUS
refuse(const char *func, int vnc, uint32_t epoch)
{
    nrtemu_hbm_refusal f = atomic_load(&refusal);

    if (f != NULL) {
        return f(func, vnc, epoch);
    }
    return nrtemu__reject(NRT_INVALID, func, "vnc %d is not open", vnc);
}

NRT_STATUS
nrtemu__hbm_charge(const char *func, int vnc, uint32_t epoch, size_t size)
{
    struct hbm_core *core;
    size_t used, limit;

    if (vnc < 0 || vnc >= NRTEMU_MAX_VNC) {
        return refuse(func, vnc, epoch);
    }
    pthread_once(&cores_once, cores_init);
    core = &cores[vnc];
    pthread_mutex_lock(&core->lock);
    if (core->epoch != epoch) {
        pthread_mutex_unlock(&core->lock);
        /* Either the runtime closed under us or the vnc is not ours. */
        return refuse(func, vnc, epoch);
    }
    if (size > core->limit - core->used) {
        used = core->used;
        limit = core->limit;
        pthread_mutex_unlock(&core->lock);
        return nrtemu__fail(NRT_RESOURCE, func,
                            "out of device memory on vnc %d: %zu bytes "
                            "requested, %zu free (%zu used of %zu)",
                            vnc, size, limit - used, used, limit);
    }
    core->used += size;
    pthread_mutex_unlock(&core->lock);
    return NRT_SUCCESS;
}

void
nrtemu__hbm_uncharge(int vnc, uint32_t epoch, size_t size)
{
    struct hbm_core *core;

    if (vnc < 0 || vnc >= NRTEMU_MAX_VNC) {
        return;
    }
    core = &cores[vnc];
    pthread_mutex_lock(&core->lock);
    if (core->epoch == epoch && core->used >= size) {
        core->used -= size;
    }
    pthread_mutex_unlock(&core->lock);
}

bool
nrtemu__hbm_stats(uint32_t vnc, uint32_t epoch, size_t *used, size_t *limit)
{
    struct hbm_core *core;
    bool open;

    if (vnc >= NRTEMU_MAX_VNC) {
        return false;
    }
    pthread_once(&cores_once, cores_init);
    core = &cores[vnc];
    pthread_mutex_lock(&core->lock);
    open = core->epoch == epoch && epoch != 0;
    if (open) {
        *used = core->used;
        *limit = core->limit;
    }
    pthread_mutex_unlock(&core->lock);
    return open;
}
