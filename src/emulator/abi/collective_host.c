/*
 * collective_host.c - the host-level collectives of libnrt §1.8:
 * nrt_build_global_comm, nrt_cc_global_comm_init, nrt_barrier and
 * nrt_all_gather, over the global communicator of collective.c (one
 * membership per vnc of this process, ended by nrt_close).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "collective/collective.h"
#include "util/error.h"
#include "util/export.h"
#include "util/fork.h"
#include "abi/model.h"
#include "abi/runtime.h"

/* The global communicator's memberships of this process, per vnc. */
static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nrtemu_rank *global_ranks[NRTEMU_MAX_RANKS];
static uint32_t global_vnc_count;

static NRT_STATUS
global_args(const char *func, int64_t vnc, uint32_t id, uint32_t count)
{
    NRT_STATUS st = nrtemu__runtime_check(func, nrtemu__runtime_epoch());

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (vnc < 0 || vnc >= (int64_t)nrtemu__runtime_visible_vnc()) {
        return nrtemu__reject(NRT_INVALID, func,
                              "Could not find VNC id %lld (%u visible)",
                              (long long)vnc, nrtemu__runtime_visible_vnc());
    }
    if (count == 0 || count > NRTEMU_MAX_RANKS || id >= count) {
        return nrtemu__reject(NRT_INVALID, func,
                              "g_device_id %u of g_device_count %u: the "
                              "count must be 1 to %u and the id below it",
                              id, count, NRTEMU_MAX_RANKS);
    }
    return NRT_SUCCESS;
}

/* The membership of `vnc`, made if needed (global_lock held). */
static NRT_STATUS
global_rank_locked(const char *func, uint32_t vnc, uint32_t id, uint32_t count,
                   struct nrtemu_rank **out)
{
    struct nrtemu_rank *r = global_ranks[vnc];
    uint64_t timeout_ns;
    NRT_STATUS st;

    if (r != NULL) {
        if (nrtemu__rank_id(r) != id || nrtemu__rank_world(r) != count) {
            return nrtemu__reject(NRT_INVALID, func,
                                  "vnc %u is rank %u of %u in the global "
                                  "communicator, not %u of %u",
                                  vnc, nrtemu__rank_id(r),
                                  nrtemu__rank_world(r), id, count);
        }
        *out = r;
        return NRT_SUCCESS;
    }
    st = nrtemu__env_exec_timeout(func, &timeout_ns);
    if (st == NRT_SUCCESS) {
        st = nrtemu__rank_join_global(func, vnc, id, count, timeout_ns, &r);
    }
    if (st == NRT_SUCCESS) {
        global_ranks[vnc] = r;
        global_vnc_count =
            vnc + 1 > global_vnc_count ? vnc + 1 : global_vnc_count;
        *out = r;
    }
    return st;
}

static NRT_STATUS
global_join(const char *func, int64_t vnc, uint32_t id, uint32_t count)
{
    struct nrtemu_rank *r;
    NRT_STATUS st = global_args(func, vnc, id, count);

    if (st != NRT_SUCCESS) {
        return st;
    }
    pthread_mutex_lock(&global_lock);
    st = global_rank_locked(func, (uint32_t)vnc, id, count, &r);
    pthread_mutex_unlock(&global_lock);
    return st;
}

NRTEMU_EXPORT NRT_STATUS
nrt_build_global_comm(int32_t vnc, uint32_t g_device_id,
                      uint32_t g_device_count)
{
    return global_join(__func__, vnc, g_device_id, g_device_count);
}

NRTEMU_EXPORT NRT_STATUS
nrt_cc_global_comm_init(uint32_t vnc, uint32_t g_device_id,
                        uint32_t g_device_count)
{
    return global_join(__func__, vnc, g_device_id, g_device_count);
}

/*
 * One host-level collective: the rendezvous of every rank of the global
 * communicator, then (for nrt_all_gather) the copies, then the exit.
 */
static NRT_STATUS
global_collective(const char *func, int32_t vnc, uint32_t id, uint32_t count,
                  uint32_t size, const void *input, void *output)
{
    struct nrtemu_rank *r;
    uint64_t timeout_ns, deadline = 0;
    NRT_STATUS st = global_args(func, vnc, id, count);

    if (st == NRT_SUCCESS) {
        st = nrtemu__env_exec_timeout(func, &timeout_ns);
    }
    if (st != NRT_SUCCESS) {
        return st;
    }
    if (timeout_ns != 0) {
        deadline = nrtemu__monotonic_ns() + timeout_ns;
    }
    pthread_mutex_lock(&global_lock);
    st = global_rank_locked(func, (uint32_t)vnc, id, count, &r);
    pthread_mutex_unlock(&global_lock);
    if (st != NRT_SUCCESS) {
        return st;
    }
    return nrtemu__rank_gather_bytes(func, r, input, size, output, deadline,
                                     output != NULL ? "nrt_all_gather"
                                                    : "nrt_barrier");
}

NRTEMU_EXPORT NRT_STATUS
nrt_barrier(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count)
{
    return global_collective(__func__, vnc, g_device_id, g_device_count, 0,
                             NULL, NULL);
}

NRTEMU_EXPORT NRT_STATUS
nrt_all_gather(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count,
               uint32_t rank_input_size, void *input, void *output)
{
    if (rank_input_size != 0 && (input == NULL || output == NULL)) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL %s buffer",
                              input == NULL ? "input" : "output");
    }
    if (output == NULL) {
        /* Nothing to gather: a barrier, but not NULL for the exchange. */
        static char none;
        output = &none;
    }
    return global_collective(__func__, vnc, g_device_id, g_device_count,
                             rank_input_size, input, output);
}

void
nrtemu__collective_host_atfork(enum nrtemu_fork_phase phase)
{
    /* global_lock is not held across fork(): a join may wait for rank 0
     * until its deadline.  The child forgets the parent's memberships
     * (collective.c ends them there; their handles are left as they are). */
    if (phase == NRTEMU_FORK_CHILD) {
        pthread_mutex_init(&global_lock, NULL);
        memset(global_ranks, 0, sizeof global_ranks);
        global_vnc_count = 0;
    }
}

void
nrtemu__global_comm_close(void)
{
    pthread_mutex_lock(&global_lock);
    for (uint32_t v = 0; v < global_vnc_count; v++) {
        nrtemu__rank_leave(global_ranks[v]);
        global_ranks[v] = NULL;
    }
    global_vnc_count = 0;
    pthread_mutex_unlock(&global_lock);
}
