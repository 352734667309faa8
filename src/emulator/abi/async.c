/*
 * async.c - the explicit asynchronous API (nrt_async.h) and
 * nrt_async_drain_queued_execs().
 *
 * One worker thread per vnc runs the requests queued on that vnc in
 * order.  Every request belongs to an execution unit (XU): a (vnc, XU
 * type, queue) triple with its own sequence numbers.  Because a vnc's
 * requests run in queue order, the requests of one XU complete in
 * sequence order, and "is `seq` complete" is "seq <= last completed".
 *
 * All state is guarded by `as.lock`; the workers drop it while they run a
 * request.  The state belongs to one runtime epoch: the first request of a
 * new runtime starts the counts again from 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "nrt/nrt_async.h"
#include "nrt/nrt_experimental.h"

#include "abi/async.h"
#include "util/error.h"
#include "util/export.h"
#include "util/fork.h"
#include "device/instance.h"
#include "abi/model.h"
#include "abi/runtime.h"
#include "abi/tensor.h"

/* Queues of each XU type, indexed by nrta_xu_t. */
static const int xu_queues[NRTA_XU_TYPE_NUM] = {
    [NRTA_XU_TENSOR_READ] = 2, [NRTA_XU_TENSOR_WRITE] = 2,
    [NRTA_XU_TENSOR_OP] = 2,   [NRTA_XU_COMPUTE] = 1,
    [NRTA_XU_COLLECTIVES] = 3,
};
#define QUEUES_MAX 4

_Static_assert((uint64_t)NRTEMU_MAX_VNC *NRTA_XU_TYPE_NUM *QUEUES_MAX <=
                   UINT16_MAX + 1u,
               "XU ids must fit in 16 bits");

/* An eventfd of nrta_get_completion_handle(): our own duplicate, so that
 * the caller may close theirs at any time. */
struct completion_fd {
    struct completion_fd *next;
    uint64_t seq_num;
    int fd;
};

struct stream {
    uint64_t issued;    /* last sequence number handed out */
    uint64_t completed; /* last one completed */
    struct completion_fd *fds;
};

enum job_kind { JOB_WRITE, JOB_READ, JOB_COPY, JOB_EXECUTE };

struct job {
    struct job *next;
    enum job_kind kind;
    uint32_t xu_id;
    uint64_t seq_num;
    nrta_error_tracker_t *tracker; /* one reference; may be NULL */
    union {
        struct {
            nrt_tensor_t *tensor;
            void *buf;
            uint64_t offset, size;
        } io;
        struct {
            nrt_tensor_t *src, *dst;
            uint64_t src_offset, dst_offset, size;
        } copy;
        struct {
            nrt_model_t *model;
            const nrt_tensor_set_t *input;
            nrt_tensor_set_t *output;
        } exec;
    } u;
};

struct worker {
    pthread_t thread;
    bool started;
    bool stopping;
    bool busy; /* running a request, with the lock dropped */
    struct job *head, *tail;
    pthread_cond_t wake;
};

#define TRACKER_MAGIC 0x6e724574u /* "tErn" */

struct nrta_error_tracker {
    uint32_t magic;
    uint32_t vnc;
    unsigned refs;         /* the caller's and one per queued request */
    bool destroyed;        /* the caller's reference is gone */
    nrta_error_t *pending; /* recorded, not yet returned */
    size_t pending_count, pending_cap;
    nrta_error_t *returned; /* the last list of get_list */
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t idle; /* broadcast when a request completes */
    uint32_t epoch;
    struct worker workers[NRTEMU_MAX_VNC];
    struct stream streams[NRTEMU_MAX_VNC * NRTA_XU_TYPE_NUM * QUEUES_MAX];
} as = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .idle = PTHREAD_COND_INITIALIZER,
};

static pthread_once_t workers_once = PTHREAD_ONCE_INIT;

static void
workers_init(void)
{
    for (size_t i = 0; i < NRTEMU_MAX_VNC; i++) {
        pthread_cond_init(&as.workers[i].wake, NULL);
    }
}

static uint32_t
xu_id_of(uint32_t vnc, nrta_xu_t xu, int queue)
{
    return (vnc * NRTA_XU_TYPE_NUM + (uint32_t)xu) * QUEUES_MAX +
           (uint32_t)queue;
}

/* ------------------------------------------------------- error trackers */

/* Drop one reference; called with the lock held. */
static void
tracker_release_locked(nrta_error_tracker_t *t)
{
    if (t == NULL || --t->refs > 0) {
        return;
    }
    t->magic = 0;
    free(t->pending);
    free(t->returned);
    free(t);
}

/* Record a failed request; called with the lock held.  A failure that
 * cannot be recorded for lack of memory is logged instead. */
static void
tracker_record_locked(nrta_error_tracker_t *t, nrta_seq_t seq, NRT_STATUS st)
{
    if (t->pending_count == t->pending_cap) {
        size_t cap = t->pending_cap != 0 ? 2 * t->pending_cap : 8;
        nrta_error_t *grown = realloc(t->pending, cap * sizeof *grown);
        if (grown == NULL) {
            nrtemu__log(NRTEMU_LOG_ERROR, "nrta_error_tracker",
                        "out of host memory: failure %d of request 0x%llx "
                        "not recorded",
                        (int)st, (unsigned long long)seq);
            return;
        }
        t->pending = grown;
        t->pending_cap = cap;
    }
    t->pending[t->pending_count].seq_id = seq;
    t->pending[t->pending_count].error_code = (uint64_t)st;
    t->pending_count++;
}

static NRT_STATUS
tracker_check_locked(const char *func, const nrta_error_tracker_t *t)
{
    if (t != NULL && (t->magic != TRACKER_MAGIC || t->destroyed)) {
        return nrtemu__reject(NRT_INVALID, func,
                              "not a live error tracker (destroyed or "
                              "corrupt)");
    }
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrta_error_tracker_create(uint32_t lnc_idx,
                          nrta_error_tracker_t **error_tracker)
{
    nrta_error_tracker_t *t;
    NRT_STATUS st;

    if (error_tracker == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL tracker pointer");
    }
    st = nrtemu__vnc_check(__func__, lnc_idx);
    if (st != NRT_SUCCESS) {
        return st;
    }
    t = calloc(1, sizeof *t);
    if (t == NULL) {
        return nrtemu__fail(NRT_RESOURCE, __func__, "out of host memory");
    }
    t->magic = TRACKER_MAGIC;
    t->vnc = lnc_idx;
    t->refs = 1;
    *error_tracker = t;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT void
nrta_error_tracker_destroy(nrta_error_tracker_t *error_tracker)
{
    if (error_tracker == NULL) {
        return;
    }
    pthread_mutex_lock(&as.lock);
    if (tracker_check_locked(__func__, error_tracker) == NRT_SUCCESS) {
        error_tracker->destroyed = true;
        tracker_release_locked(error_tracker);
    }
    pthread_mutex_unlock(&as.lock);
}

NRTEMU_EXPORT NRT_STATUS
nrta_error_tracker_get_list(nrta_error_tracker_t *error_tracker,
                            const nrta_error_t **list, size_t *error_count)
{
    NRT_STATUS st;

    if (error_tracker == NULL || list == NULL || error_count == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "NULL tracker, list or count pointer");
    }
    pthread_mutex_lock(&as.lock);
    st = tracker_check_locked(__func__, error_tracker);
    if (st == NRT_SUCCESS) {
        /* Hand the pending errors over; the previous list goes. */
        free(error_tracker->returned);
        error_tracker->returned = error_tracker->pending;
        *list = error_tracker->pending;
        *error_count = error_tracker->pending_count;
        error_tracker->pending = NULL;
        error_tracker->pending_count = 0;
        error_tracker->pending_cap = 0;
    }
    pthread_mutex_unlock(&as.lock);
    return st;
}

/* ---------------------------------------------------------------- workers */

static NRT_STATUS
job_run(const struct job *job)
{
    switch (job->kind) {
    case JOB_WRITE:
        return nrt_tensor_write(job->u.io.tensor, job->u.io.buf,
                                job->u.io.offset, job->u.io.size);
    case JOB_READ:
        return nrt_tensor_read(job->u.io.tensor, job->u.io.buf,
                               job->u.io.offset, job->u.io.size);
    case JOB_COPY:
        return nrt_tensor_copy(job->u.copy.src, job->u.copy.src_offset,
                               job->u.copy.dst, job->u.copy.dst_offset,
                               job->u.copy.size);
    case JOB_EXECUTE:
        return nrt_execute(job->u.exec.model, job->u.exec.input,
                           job->u.exec.output);
    }
    return NRT_FAILURE;
}

/* Mark `job` complete: its XU's count and the eventfds waiting for it. */
static void
complete_locked(const struct job *job, NRT_STATUS st)
{
    struct stream *s = &as.streams[job->xu_id];
    struct completion_fd **link = &s->fds;

    s->completed = job->seq_num;
    while (*link != NULL) {
        struct completion_fd *c = *link;
        if (c->seq_num > s->completed) {
            link = &c->next;
            continue;
        }
        uint64_t one = 1;
        /* An eventfd write of 1 fails only at the counter's limit. */
        if (write(c->fd, &one, sizeof one) < 0) {
            nrtemu__log(NRTEMU_LOG_WARN, "nrta_get_completion_handle",
                        "cannot signal completion: %s", strerror(errno));
        }
        close(c->fd);
        *link = c->next;
        free(c);
    }
    if (st != NRT_SUCCESS && job->tracker != NULL) {
        tracker_record_locked(job->tracker,
                              ((uint64_t)job->xu_id << 48) | job->seq_num, st);
    }
    pthread_cond_broadcast(&as.idle);
}

static void *
worker_main(void *arg)
{
    struct worker *w = arg;

    pthread_mutex_lock(&as.lock);
    for (;;) {
        struct job *job;
        NRT_STATUS st;

        while (w->head == NULL && !w->stopping) {
            pthread_cond_wait(&w->wake, &as.lock);
        }
        job = w->head;
        if (job == NULL) {
            break; /* stopping, and the queue is empty */
        }
        w->head = job->next;
        if (w->head == NULL) {
            w->tail = NULL;
        }
        w->busy = true;
        pthread_mutex_unlock(&as.lock);
        st = job_run(job);
        pthread_mutex_lock(&as.lock);
        w->busy = false;
        complete_locked(job, st);
        tracker_release_locked(job->tracker);
        free(job);
    }
    pthread_mutex_unlock(&as.lock);
    return NULL;
}

/*
 * Give `job` its sequence number on XU (vnc, xu, queue) and queue it on
 * the vnc's worker, started if need be.  Takes ownership of `job`.
 */
static NRT_STATUS
job_submit(const char *func, struct job *job, uint32_t vnc, nrta_xu_t xu,
           int queue, nrta_error_tracker_t *tracker, nrta_seq_t *req_sequence)
{
    uint32_t epoch = nrtemu__runtime_epoch();
    struct worker *w = &as.workers[vnc];
    struct stream *s;
    NRT_STATUS st;

    pthread_once(&workers_once, workers_init);
    pthread_mutex_lock(&as.lock);
    st = tracker_check_locked(func, tracker);
    if (st != NRT_SUCCESS) {
        goto fail;
    }
    if (epoch == 0) {
        st = nrtemu__reject(NRT_CLOSED, func, "the runtime is closed");
        goto fail;
    }
    if (as.epoch != epoch) {
        /* A new runtime: its XUs count from 0 (the old workers have
         * stopped in nrtemu__async_close()). */
        memset(as.streams, 0, sizeof as.streams);
        as.epoch = epoch;
    }
    if (!w->started) {
        w->stopping = false;
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            st = nrtemu__fail(NRT_RESOURCE, func,
                              "cannot start the worker thread of vnc %u", vnc);
            goto fail;
        }
        w->started = true;
    }
    job->xu_id = xu_id_of(vnc, xu, queue);
    s = &as.streams[job->xu_id];
    if (s->issued == NRTA_SEQ_NUM_MAX) {
        st = nrtemu__fail(NRT_QUEUE_FULL, func,
                          "sequence numbers of XU %u exhausted", job->xu_id);
        goto fail;
    }
    job->seq_num = ++s->issued;
    job->tracker = tracker;
    if (tracker != NULL) {
        tracker->refs++;
    }
    job->next = NULL;
    if (w->tail != NULL) {
        w->tail->next = job;
    } else {
        w->head = job;
    }
    w->tail = job;
    if (req_sequence != NULL) {
        *req_sequence = ((uint64_t)job->xu_id << 48) | job->seq_num;
    }
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&as.lock);
    return NRT_SUCCESS;

fail:
    pthread_mutex_unlock(&as.lock);
    free(job);
    return st;
}

void
nrtemu__async_close(void)
{
    pthread_once(&workers_once, workers_init);
    for (size_t i = 0; i < NRTEMU_MAX_VNC; i++) {
        struct worker *w = &as.workers[i];
        pthread_t thread;

        pthread_mutex_lock(&as.lock);
        if (!w->started) {
            pthread_mutex_unlock(&as.lock);
            continue;
        }
        w->stopping = true;
        thread = w->thread;
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&as.lock);
        pthread_join(thread, NULL);
        pthread_mutex_lock(&as.lock);
        w->started = false;
        pthread_mutex_unlock(&as.lock);
    }
}

void
nrtemu__async_atfork(enum nrtemu_fork_phase phase)
{
    nrtemu__fork_leaf_lock(&as.lock, phase);
    if (phase != NRTEMU_FORK_CHILD) {
        return;
    }
    /* The workers are threads of the parent: none exists here.  Their
     * queued requests are for the parent's runtime, so they are dropped,
     * never run nor completed: the completion eventfds are shared with the
     * parent, whose waiters must not be woken by us, so only our copies
     * are closed. */
    pthread_cond_init(&as.idle, NULL);
    /* (what was never used is left alone: every page written here is a
     * copy-on-write fault, and fork() should stay cheap) */
    for (size_t i = 0; i < NRTEMU_MAX_VNC; i++) {
        struct worker *w = &as.workers[i];
        if (!w->started && w->head == NULL) {
            continue; /* never waited on: only a worker waits on `wake` */
        }
        while (w->head != NULL) {
            struct job *job = w->head;
            w->head = job->next;
            tracker_release_locked(job->tracker);
            free(job);
        }
        w->tail = NULL;
        w->started = false;
        w->stopping = false;
        w->busy = false;
        pthread_cond_init(&w->wake, NULL);
    }
    if (as.epoch == 0) {
        return; /* no request was ever queued */
    }
    for (size_t i = 0; i < sizeof as.streams / sizeof as.streams[0]; i++) {
        while (as.streams[i].fds != NULL) {
            struct completion_fd *c = as.streams[i].fds;
            as.streams[i].fds = c->next;
            close(c->fd);
            free(c);
        }
    }
    /* The counts go with the parent's runtime: the child's first request
     * starts them again from 0 (job_submit). */
    as.epoch = 0;
}

/* ------------------------------------------------------------- requests */

static NRT_STATUS
queue_check(const char *func, nrta_xu_t xu, int queue)
{
    if (queue < 0 || queue >= xu_queues[xu]) {
        return nrtemu__reject(NRT_INVALID, func,
                              "queue %d does not exist (XU type %d has %d)",
                              queue, (int)xu, xu_queues[xu]);
    }
    return NRT_SUCCESS;
}

/* The vnc whose worker runs a request on `t`. */
static uint32_t
tensor_vnc(const nrt_tensor_t *t)
{
    return t->placement == NRT_TENSOR_PLACEMENT_DEVICE && t->vnc >= 0
               ? (uint32_t)t->vnc
               : 0;
}

static NRT_STATUS
submit_io(const char *func, enum job_kind kind, nrt_tensor_t *tensor,
          void *buf, uint64_t offset, uint64_t size, int queue,
          nrta_error_tracker_t *err, nrta_seq_t *req_sequence)
{
    nrta_xu_t xu =
        kind == JOB_WRITE ? NRTA_XU_TENSOR_WRITE : NRTA_XU_TENSOR_READ;
    struct job *job;
    NRT_STATUS st;

    st = nrtemu__tensor_validate(
        func, tensor, kind == JOB_WRITE ? "write" : "read", offset, size);
    if (st != NRT_SUCCESS) {
        return st;
    }
    if (buf == NULL && size > 0) {
        return nrtemu__reject(NRT_INVALID, func, "NULL buffer");
    }
    st = queue_check(func, xu, queue);
    if (st != NRT_SUCCESS) {
        return st;
    }
    job = calloc(1, sizeof *job);
    if (job == NULL) {
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    job->kind = kind;
    job->u.io.tensor = tensor;
    job->u.io.buf = buf;
    job->u.io.offset = offset;
    job->u.io.size = size;
    return job_submit(func, job, tensor_vnc(tensor), xu, queue, err,
                      req_sequence);
}

NRTEMU_EXPORT NRT_STATUS
nrta_tensor_write(nrt_tensor_t *tensor, const void *buf, uint64_t offset,
                  uint64_t size, int queue, nrta_error_tracker_t *err,
                  nrta_seq_t *req_sequence)
{
    /* The worker only reads `buf`: the cast keeps one job layout. */
    return submit_io(__func__, JOB_WRITE, tensor, (void *)buf, offset, size,
                     queue, err, req_sequence);
}

NRTEMU_EXPORT NRT_STATUS
nrta_tensor_read(void *buf, nrt_tensor_t *tensor, uint64_t offset,
                 uint64_t size, int queue, nrta_error_tracker_t *err,
                 nrta_seq_t *req_sequence)
{
    return submit_io(__func__, JOB_READ, tensor, buf, offset, size, queue, err,
                     req_sequence);
}

NRTEMU_EXPORT NRT_STATUS
nrta_tensor_copy(nrt_tensor_t *src, uint64_t src_offset, nrt_tensor_t *dst,
                 uint64_t dst_offset, uint64_t size, int queue,
                 nrta_error_tracker_t *err, nrta_seq_t *req_sequence)
{
    struct job *job;
    NRT_STATUS st;

    st = nrtemu__tensor_copy_check(__func__, src, src_offset, dst, dst_offset,
                                   size);
    if (st != NRT_SUCCESS) {
        return st;
    }
    st = queue_check(__func__, NRTA_XU_TENSOR_OP, queue);
    if (st != NRT_SUCCESS) {
        return st;
    }
    job = calloc(1, sizeof *job);
    if (job == NULL) {
        return nrtemu__fail(NRT_RESOURCE, __func__, "out of host memory");
    }
    job->kind = JOB_COPY;
    job->u.copy.src = src;
    job->u.copy.dst = dst;
    job->u.copy.src_offset = src_offset;
    job->u.copy.dst_offset = dst_offset;
    job->u.copy.size = size;
    return job_submit(__func__, job,
                      dst->placement == NRT_TENSOR_PLACEMENT_DEVICE
                          ? tensor_vnc(dst)
                          : tensor_vnc(src),
                      NRTA_XU_TENSOR_OP, queue, err, req_sequence);
}

NRTEMU_EXPORT NRT_STATUS
nrta_execute_schedule(nrt_model_t *model, const nrt_tensor_set_t *input,
                      nrt_tensor_set_t *output, int queue,
                      nrta_error_tracker_t *err, nrta_seq_t *req_sequence)
{
    struct job *job;
    NRT_STATUS st = nrtemu__model_check(__func__, model);

    if (st == NRT_SUCCESS) {
        st = nrtemu__runtime_check(__func__, model->epoch);
    }
    if (st != NRT_SUCCESS) {
        return st;
    }
    if (input == NULL || output == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL %s set",
                              input == NULL ? "input" : "output");
    }
    if (queue != 0) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "queue %d: executions use queue 0", queue);
    }
    job = calloc(1, sizeof *job);
    if (job == NULL) {
        return nrtemu__fail(NRT_RESOURCE, __func__, "out of host memory");
    }
    job->kind = JOB_EXECUTE;
    job->u.exec.model = model;
    job->u.exec.input = input;
    job->u.exec.output = output;
    return job_submit(__func__, job, model->vnc, NRTA_XU_COMPUTE, 0, err,
                      req_sequence);
}

NRTEMU_EXPORT NRT_STATUS
nrta_cc_prepare(nrt_cc_comm_t *comm, nrt_tensor_list_t *input,
                nrt_tensor_list_t *output, nrt_dtype_t dtype, nrt_op_type_t op,
                nrt_cc_op_type_t cc_op, nrt_cc_context_t **cc_ctx)
{
    (void)dtype;
    (void)op;
    (void)cc_op;
    if (comm == NULL || input == NULL || output == NULL || cc_ctx == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "NULL communicator, tensor list or context "
                              "pointer");
    }
    return nrtemu__unsupported(__func__, "asynchronous collectives",
                               "the emulator runs a world of one rank");
}

NRTEMU_EXPORT NRT_STATUS
nrta_cc_schedule(nrt_cc_context_t **cc_ctx, int queue,
                 nrta_error_tracker_t *err, nrta_seq_t *req_sequence)
{
    (void)queue;
    (void)err;
    (void)req_sequence;
    if (cc_ctx == NULL || *cc_ctx == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL context");
    }
    /* nrta_cc_prepare() never makes a context: this one is not ours. */
    return nrtemu__unsupported(__func__, "asynchronous collectives",
                               "the emulator runs a world of one rank");
}

/* ------------------------------------------------------------ completion */

/* The stream of `seq`, if `seq` was handed out; with the lock held. */
static struct stream *
stream_of_locked(const char *func, nrta_seq_t seq, NRT_STATUS *st)
{
    uint64_t xu_id = NRTA_SEQ_GET_XU_ID(seq);
    uint64_t num = NRTA_SEQ_GET_SEQ_NUM(seq);
    struct stream *s;

    if (xu_id >= sizeof as.streams / sizeof as.streams[0] ||
        (int)(xu_id % QUEUES_MAX) >=
            xu_queues[xu_id / QUEUES_MAX % NRTA_XU_TYPE_NUM]) {
        *st = nrtemu__reject(NRT_INVALID, func,
                             "sequence 0x%llx names no execution unit",
                             (unsigned long long)seq);
        return NULL;
    }
    s = &as.streams[xu_id];
    if (num == 0 || num > s->issued) {
        *st =
            nrtemu__reject(NRT_INVALID, func,
                           "sequence number %llu was not handed out on "
                           "XU %llu (last %llu)",
                           (unsigned long long)num, (unsigned long long)xu_id,
                           (unsigned long long)s->issued);
        return NULL;
    }
    *st = NRT_SUCCESS;
    return s;
}

NRTEMU_EXPORT NRT_STATUS
nrta_is_completed(nrta_seq_t seq, bool *is_completed)
{
    struct stream *s;
    NRT_STATUS st;

    if (is_completed == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL result pointer");
    }
    pthread_mutex_lock(&as.lock);
    s = stream_of_locked(__func__, seq, &st);
    if (s != NULL) {
        *is_completed = NRTA_SEQ_GET_SEQ_NUM(seq) <= s->completed;
    }
    pthread_mutex_unlock(&as.lock);
    return st;
}

NRTEMU_EXPORT NRT_STATUS
nrta_get_sequence(uint32_t lnc, nrta_xu_t xu, int queue, nrta_seq_t *seq)
{
    uint32_t xu_id;
    NRT_STATUS st;

    if (seq == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL sequence pointer");
    }
    st = nrtemu__vnc_check(__func__, lnc);
    if (st != NRT_SUCCESS) {
        return st;
    }
    if ((int)xu < 0 || xu >= NRTA_XU_TYPE_NUM) {
        return nrtemu__reject(NRT_INVALID, __func__, "invalid XU type %d",
                              (int)xu);
    }
    st = queue_check(__func__, xu, queue);
    if (st != NRT_SUCCESS) {
        return st;
    }
    xu_id = xu_id_of(lnc, xu, queue);
    pthread_mutex_lock(&as.lock);
    /* Counts of an earlier runtime do not apply to this one. */
    *seq =
        ((uint64_t)xu_id << 48) |
        (as.epoch == nrtemu__runtime_epoch() ? as.streams[xu_id].issued : 0);
    pthread_mutex_unlock(&as.lock);
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrta_get_completion_handle(nrta_seq_t seq, int *fd)
{
    struct completion_fd *c = NULL;
    struct stream *s;
    int efd;
    NRT_STATUS st;

    if (fd == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL fd pointer");
    }
    efd = eventfd(0, EFD_CLOEXEC);
    if (efd < 0) {
        return nrtemu__fail(NRT_RESOURCE, __func__, "eventfd: %s",
                            strerror(errno));
    }
    pthread_mutex_lock(&as.lock);
    s = stream_of_locked(__func__, seq, &st);
    if (s == NULL) {
        goto fail_fd;
    }
    if (NRTA_SEQ_GET_SEQ_NUM(seq) <= s->completed) {
        uint64_t one = 1;
        if (write(efd, &one, sizeof one) < 0) {
            st = nrtemu__fail(NRT_RESOURCE, __func__, "eventfd write: %s",
                              strerror(errno));
            goto fail_fd;
        }
    } else {
        c = malloc(sizeof *c);
        if (c == NULL) {
            st = nrtemu__fail(NRT_RESOURCE, __func__, "out of host memory");
            goto fail_fd;
        }
        c->fd = fcntl(efd, F_DUPFD_CLOEXEC, 0);
        if (c->fd < 0) {
            st = nrtemu__fail(NRT_RESOURCE, __func__, "dup: %s",
                              strerror(errno));
            goto fail_c;
        }
        c->seq_num = NRTA_SEQ_GET_SEQ_NUM(seq);
        c->next = s->fds;
        s->fds = c;
    }
    pthread_mutex_unlock(&as.lock);
    *fd = efd;
    return NRT_SUCCESS;

fail_c:
    free(c);
fail_fd:
    pthread_mutex_unlock(&as.lock);
    close(efd);
    return st;
}

/* ---------------------------------------------------------------- drain */

NRTEMU_EXPORT NRT_STATUS
nrt_async_drain_queued_execs(int32_t vnc)
{
    struct worker *w;
    NRT_STATUS st = nrtemu__vnc_check(__func__, vnc);

    if (st != NRT_SUCCESS) {
        return st;
    }
    w = &as.workers[vnc];
    pthread_mutex_lock(&as.lock);
    while (w->head != NULL || w->busy) {
        pthread_cond_wait(&as.idle, &as.lock);
    }
    pthread_mutex_unlock(&as.lock);
    return NRT_SUCCESS;
}
