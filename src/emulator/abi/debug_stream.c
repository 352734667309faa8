/*
 * debug_stream.c - the debug event stream (nrt/ndebug_stream.h).
 *
 * One client per vnc.  The emulated cores emit no debug events, so a
 * client's descriptor (an eventfd, pollable like the runtime's) never
 * becomes readable and every read finds the queue empty.  Clients belong
 * to the runtime that connected them: after nrt_close() and a new
 * nrt_init() the old ones no longer count.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "nrt/ndebug_stream.h"

#include "util/error.h"
#include "util/export.h"
#include "util/fork.h"
#include "device/instance.h"
#include "abi/runtime.h"

static struct {
    pthread_mutex_t lock;
    struct {
        int fd;         /* meaningful while epoch != 0 */
        uint32_t epoch; /* runtime that connected it; 0: none */
    } clients[NRTEMU_MAX_VNC];
} ds = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The vnc whose live client `fd` is, or -1; with the lock held. */
static int
client_of_locked(int fd)
{
    uint32_t epoch = nrtemu__runtime_epoch();

    for (int i = 0; i < NRTEMU_MAX_VNC; i++) {
        if (ds.clients[i].epoch != 0 && ds.clients[i].epoch == epoch &&
            ds.clients[i].fd == fd) {
            return i;
        }
    }
    return -1;
}

void
nrtemu__debug_stream_atfork(enum nrtemu_fork_phase phase)
{
    nrtemu__fork_leaf_lock(&ds.lock, phase);
}

NRTEMU_EXPORT NRT_STATUS
nrt_debug_client_connect(int logical_nc_idx, int *stream_fd)
{
    uint32_t epoch;
    int fd;
    NRT_STATUS st;

    if (stream_fd == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL fd pointer");
    }
    st = nrtemu__vnc_check(__func__, logical_nc_idx);
    if (st != NRT_SUCCESS) {
        return st;
    }
    pthread_mutex_lock(&ds.lock);
    epoch = nrtemu__runtime_epoch();
    if (ds.clients[logical_nc_idx].epoch == epoch) {
        pthread_mutex_unlock(&ds.lock);
        return nrtemu__reject(NRT_INVALID, __func__,
                              "vnc %d already has a debug client (one per "
                              "logical core)",
                              logical_nc_idx);
    }
    fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) {
        pthread_mutex_unlock(&ds.lock);
        return nrtemu__fail(NRT_RESOURCE, __func__, "eventfd: %s",
                            strerror(errno));
    }
    ds.clients[logical_nc_idx].fd = fd;
    ds.clients[logical_nc_idx].epoch = epoch;
    pthread_mutex_unlock(&ds.lock);
    *stream_fd = fd;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT void
nrt_debug_client_connect_close(int stream_fd)
{
    int vnc;

    pthread_mutex_lock(&ds.lock);
    vnc = client_of_locked(stream_fd);
    if (vnc >= 0) {
        ds.clients[vnc].epoch = 0;
        close(stream_fd);
    }
    pthread_mutex_unlock(&ds.lock);
    if (vnc < 0) {
        nrtemu__reject(NRT_INVALID, __func__,
                       "fd %d is not a connected debug client; ignored",
                       stream_fd);
    }
}

NRTEMU_EXPORT NRT_STATUS
nrt_debug_client_read_one_event(int stream_fd,
                                ndebug_stream_event_header_t *header,
                                void **payload)
{
    int vnc;

    if (header == NULL || payload == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "NULL header or payload pointer");
    }
    pthread_mutex_lock(&ds.lock);
    vnc = client_of_locked(stream_fd);
    pthread_mutex_unlock(&ds.lock);
    if (vnc < 0) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "fd %d is not a connected debug client",
                              stream_fd);
    }
    /* The emulated cores emit no debug events. */
    return nrtemu__fail_at(NRTEMU_LOG_DEBUG, NRT_QUEUE_EMPTY, __func__,
                           "no debug event waiting on vnc %d", vnc);
}
