/*
 * collective.c - the communicators of this process and the exchanges of
 * collective ops on them (design in collective.h; the ops of emulator
 * programs are checked and bound in program_collective.c, the host-level
 * API of libnrt §1.8 is in collective_host.c).
 *
 * Between threads, the rendezvous: every rank has a progress counter,
 * seq * PHASES + phase + 1 (0 before its first collective), that only
 * grows.  A rank publishes its operand and result pointers, and the
 * record of the exchange (cc_id.h), with phase 0 of a collective, then
 * waits at each phase until every member of its group has reached it.
 * The counters are compared, not equated, so a rank that has already
 * moved on to its next collective still counts as having passed this
 * one; at phase 0 a member at another exchange (another record, or a
 * whole collective ahead) is out of step (a broken communicator).  The
 * last phase keeps every rank's memory valid until all have read it.
 *
 * Locks, in the order they nest: join_lock (joins, leaves, nrt_close's
 * end of the memberships; may be held while a rank 0 waits to bind its
 * address), a member's exec (one execution of the rank at a time), then
 * list_lock (the lists of members and communicators, and slot presence;
 * a leaf but for a communicator's lock) and a communicator's lock.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collective/cc_id.h"
#include "util/clock.h"
#include "collective/collective.h"
#include "util/env_parse.h"
#include "util/error.h"
#include "util/fork.h"
#include "collective/net.h"
#include "neff/sha256.h"

/* --------------------------------------------------------- communicator */

#define PHASES 4u

struct slot {
    bool present;
    uint32_t vnc;
    uint64_t progress; /* seq * PHASES + phase + 1 reached; 0: none */
    const void *in;    /* operand and result of the current collective */
    void *out;
    struct nrtemu_cc_id id; /* the current exchange (from its phase 0) */
};

/* The ranks of one world that are threads of this process. */
struct comm {
    struct comm *next; /* in `comms` */
    uint32_t world;
    uint32_t members; /* present slots */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool failed;
    NRT_STATUS failure_status;
    char failure[512]; /* why, for the collectives that follow */
    struct slot slots[];
};

/*
 * One rank's membership of a communicator, in this process: shared by the
 * rank's collective models and its host-level collectives (a handle each,
 * counted in `refs`), and ended with the last of them or by nrt_close.
 */
struct member {
    struct member *next; /* in `members` (all of them, until freed) */
    unsigned refs;       /* handles (join_lock) */
    bool listed;         /* joins find it (join_lock): not ended, not
                            replaced after a failure */
    bool ended;          /* left: nrt_close, or a fork()'s copy (exec) */
    bool forked;         /* the parent's, in a forked child */
    pthread_mutex_t exec;
    uint32_t rank, world, vnc;
    char root[96];          /* NEURON_RT_ROOT_COMM_ID of the net */
    struct comm *comm;      /* threads of this process: memory */
    struct nrtemu_net *net; /* or, with NEURON_RT_ROOT_COMM_ID, sockets */
    uint64_t seq;           /* exchanges started (exec) */
};

/* A handle: one model's membership, or the host-level collectives'. */
struct nrtemu_rank {
    struct member *m;
    uint64_t model; /* the NEFF's (cc_id.h), or NRTEMU_CC_HOST_MODEL */
    char name[sizeof(((struct nrtemu_cc_id *)0)->name)];
};

static pthread_mutex_t join_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct member *members;
static struct comm *comms;

void
nrtemu__collective_atfork(enum nrtemu_fork_phase phase)
{
    /* join_lock is not held across fork(): a join may wait for rank 0 until
     * its load's deadline.  The child keeps nothing of the parent's
     * communicators: its memberships end here, without a word to the
     * parent's peers (the descriptors closed are copies), and its models
     * (of the parent's runtime, which the child cannot use) only drop
     * their handles.  A new load makes new ones. */
    nrtemu__fork_leaf_lock(&list_lock, phase);
    if (phase != NRTEMU_FORK_CHILD) {
        return;
    }
    pthread_mutex_init(&join_lock, NULL);
    for (struct member *m = members; m != NULL; m = m->next) {
        pthread_mutex_init(&m->exec, NULL);
        nrtemu__net_forget(m->net);
        m->listed = false;
        m->ended = true;
        m->forked = true;
    }
    comms = NULL; /* (the parent's; their locks may be held) */
}

static struct comm *
comm_new(uint32_t world)
{
    struct comm *c = calloc(1, sizeof *c + world * sizeof c->slots[0]);
    pthread_condattr_t attr;

    if (c == NULL) {
        return NULL;
    }
    c->world = world;
    pthread_mutex_init(&c->lock, NULL);
    /* Deadlines are CLOCK_MONOTONIC, as the execution's. */
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cond, &attr);
    pthread_condattr_destroy(&attr);
    c->next = comms;
    comms = c;
    return c;
}

/* Break the communicator (c->lock held): every waiter wakes and fails. */
static void
comm_fail_locked(struct comm *c, NRT_STATUS status, const char *why)
{
    if (!c->failed) {
        c->failed = true;
        c->failure_status = status;
        snprintf(c->failure, sizeof c->failure, "%s", why);
    }
    pthread_cond_broadcast(&c->cond);
}

/* Rank `rank` leaves `c` (list_lock held): the others fail, since their
 * collectives need it; the last one frees it. */
static void
comm_leave_locked(struct comm *c, uint32_t rank)
{
    char why[160];

    pthread_mutex_lock(&c->lock);
    c->slots[rank].present = false;
    c->members--;
    snprintf(why, sizeof why,
             "rank %u left the communicator (its last collective model "
             "was unloaded, or its runtime closed)",
             rank);
    comm_fail_locked(c, NRT_EXEC_HW_ERR_COLLECTIVES, why);
    pthread_mutex_unlock(&c->lock);
    if (c->members != 0) {
        return;
    }
    for (struct comm **p = &comms; *p != NULL; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            break;
        }
    }
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
    free(c);
}

static bool
comm_failed(struct comm *c)
{
    bool failed;

    pthread_mutex_lock(&c->lock);
    failed = c->failed;
    pthread_mutex_unlock(&c->lock);
    return failed;
}

/* A new member, in `members` (join_lock held). */
static struct member *
member_new(uint32_t rank, uint32_t world, uint32_t vnc)
{
    struct member *m = calloc(1, sizeof *m);

    if (m == NULL) {
        return NULL;
    }
    pthread_mutex_init(&m->exec, NULL);
    m->rank = rank;
    m->world = world;
    m->vnc = vnc;
    m->refs = 1;
    m->listed = true;
    pthread_mutex_lock(&list_lock);
    m->next = members;
    members = m;
    pthread_mutex_unlock(&list_lock);
    return m;
}

/* End the membership (join_lock held): the other ranks see this one
 * leave.  Waits for the rank's execution in progress, if any. */
static void
member_end(struct member *m)
{
    m->listed = false;
    if (m->forked) {
        return; /* (the parent's) */
    }
    pthread_mutex_lock(&m->exec);
    if (!m->ended) {
        m->ended = true;
        nrtemu__net_close(m->net);
        m->net = NULL;
        if (m->comm != NULL) {
            pthread_mutex_lock(&list_lock);
            comm_leave_locked(m->comm, m->rank);
            pthread_mutex_unlock(&list_lock);
            m->comm = NULL;
        }
    }
    pthread_mutex_unlock(&m->exec);
}

/* End it and free it, with its last handle (join_lock held). */
static void
member_free(struct member *m)
{
    member_end(m);
    pthread_mutex_lock(&list_lock);
    for (struct member **p = &members; *p != NULL; p = &(*p)->next) {
        if (*p == m) {
            *p = m->next;
            break;
        }
    }
    pthread_mutex_unlock(&list_lock);
    if (m->forked) {
        nrtemu__net_close(m->net); /* (forgotten: frees the copy only) */
    } else {
        pthread_mutex_destroy(&m->exec);
    }
    free(m);
}

/*
 * The membership of rank `rank` of `world` on `vnc` among the threads of
 * this process (join_lock held): the rank's own when it has one (its
 * communicator unbroken), else a slot in the first unbroken communicator
 * of the world where the rank is free (a rank id taken already starts
 * another world), else in a new one.
 */
static NRT_STATUS
join_memory(const char *func, uint32_t vnc, uint32_t rank, uint32_t world,
            struct member **out)
{
    struct member *m;
    struct comm *c;

    for (m = members; m != NULL; m = m->next) {
        if (m->listed && m->comm != NULL && m->world == world &&
            m->rank == rank && m->vnc == vnc) {
            if (!comm_failed(m->comm)) {
                m->refs++;
                *out = m;
                return NRT_SUCCESS;
            }
            m->listed = false; /* broken: the models to come get another */
        }
    }
    pthread_mutex_lock(&list_lock);
    for (c = comms; c != NULL; c = c->next) {
        if (c->world == world && !c->slots[rank].present && !comm_failed(c)) {
            break;
        }
    }
    for (uint32_t k = 0; c != NULL && k < world; k++) {
        if (c->slots[k].present && c->slots[k].vnc == vnc) {
            pthread_mutex_unlock(&list_lock);
            return nrtemu__reject(NRT_INVALID, func,
                                  "rank %u of this world of %u is already "
                                  "on vnc %u: one rank per vnc",
                                  k, world, vnc);
        }
    }
    pthread_mutex_unlock(&list_lock);
    m = member_new(rank, world, vnc);
    if (m == NULL) {
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    pthread_mutex_lock(&list_lock);
    if (c == NULL) {
        c = comm_new(world);
    }
    if (c != NULL) {
        pthread_mutex_lock(&c->lock);
        c->slots[rank] = (struct slot){.present = true, .vnc = vnc};
        c->members++;
        pthread_mutex_unlock(&c->lock);
    }
    m->comm = c;
    pthread_mutex_unlock(&list_lock);
    if (c == NULL) {
        m->ended = true; /* (nothing to leave) */
        member_free(m);
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    *out = m;
    return NRT_SUCCESS;
}

/*
 * NEURON_RT_ROOT_COMM_ID, when set: the ranks of the world then meet
 * through it, whichever process each is in.
 */
static const char *
root_comm_id(void)
{
    const char *root = getenv("NEURON_RT_ROOT_COMM_ID");

    return root != NULL && !nrtemu__env_blank(root) ? root : NULL;
}

/* The key of the rendezvous (net.h): one for every world, since a rank's
 * models share its communicator. */
static const unsigned char net_key[32] = "nrtemu communicator of a rank";

/*
 * The membership of rank `rank` of `world` at `root` (join_lock held):
 * the rank's own when this process has one (its net unbroken), else a
 * new one, which meets the others there (rank 0 binds the address).
 */
static NRT_STATUS
join_net(const char *func, const char *root, uint32_t rank, uint32_t world,
         uint64_t timeout_ns, struct member **out)
{
    uint64_t deadline = timeout_ns ? nrtemu__monotonic_ns() + timeout_ns : 0;
    struct nrtemu_net *net;
    struct member *m;
    NRT_STATUS st;

    for (m = members; m != NULL; m = m->next) {
        if (!m->listed || m->net == NULL || strcmp(m->root, root) != 0) {
            continue;
        }
        if (nrtemu__net_failed(m->net)) {
            /* Broken (its address released): the models to come meet the
             * others again, in a new world. */
            m->listed = false;
            continue;
        }
        if (m->world != world) {
            return nrtemu__reject(NRT_INVALID, func,
                                  "this process is rank %u of a world of %u "
                                  "at NEURON_RT_ROOT_COMM_ID='%.80s', not of "
                                  "%u: a rank has one communicator, which "
                                  "all its collective models share",
                                  m->rank, m->world, root, world);
        }
        if (m->rank == rank) {
            m->refs++;
            *out = m;
            return NRT_SUCCESS;
        }
    }
    st = nrtemu__net_open(func, root, net_key, rank, world, deadline, &net);
    if (st != NRT_SUCCESS) {
        return st;
    }
    m = member_new(rank, world, UINT32_MAX);
    if (m == NULL) {
        nrtemu__net_close(net);
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    m->net = net;
    snprintf(m->root, sizeof m->root, "%s", root);
    *out = m;
    return NRT_SUCCESS;
}

/* A handle on the membership of rank `rank` of `world`, made if needed. */
static NRT_STATUS
join(const char *func, uint32_t vnc, uint32_t rank, uint32_t world,
     uint64_t timeout_ns, uint64_t model, const char *name,
     struct nrtemu_rank **out)
{
    struct nrtemu_rank *r;
    const char *root = root_comm_id();
    NRT_STATUS st;

    if (world == 0 || world > NRTEMU_MAX_RANKS || rank >= world) {
        return nrtemu__reject(NRT_INVALID, func,
                              "rank %u of a world of %u: the world must have "
                              "1 to %u ranks, and the rank be below it",
                              rank, world, NRTEMU_MAX_RANKS);
    }
    if (root != NULL && strlen(root) >= sizeof(((struct member *)0)->root)) {
        return nrtemu__reject(NRT_INVALID, func,
                              "NEURON_RT_ROOT_COMM_ID='%.80s...' is too long",
                              root);
    }
    r = calloc(1, sizeof *r);
    if (r == NULL) {
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    r->model = model;
    snprintf(r->name, sizeof r->name, "%s", name);
    pthread_mutex_lock(&join_lock);
    if (root != NULL) {
        st = join_net(func, root, rank, world, timeout_ns, &r->m);
    } else {
        st = join_memory(func, vnc, rank, world, &r->m);
    }
    pthread_mutex_unlock(&join_lock);
    if (st != NRT_SUCCESS) {
        free(r);
        return st;
    }
    *out = r;
    return NRT_SUCCESS;
}

NRT_STATUS
nrtemu__rank_join(const char *func, const void *neff, size_t size,
                  const char *name, uint32_t vnc, uint32_t rank,
                  uint32_t world, uint64_t timeout_ns,
                  struct nrtemu_rank **out)
{
    unsigned char digest[32];
    uint64_t model = 0;

    if (neff == NULL || name == NULL || out == NULL) {
        return nrtemu__reject(NRT_INVALID, func, "NULL NEFF, name or handle");
    }
    nrtemu__sha256(neff, size, digest);
    for (int k = 0; k < 8; k++) {
        model = model << 8 | digest[k];
    }
    if (model == NRTEMU_CC_HOST_MODEL) {
        model = 1; /* (not the host-level collectives') */
    }
    return join(func, vnc, rank, world, timeout_ns, model, name, out);
}

void
nrtemu__rank_leave(struct nrtemu_rank *r)
{
    if (r == NULL) {
        return;
    }
    pthread_mutex_lock(&join_lock);
    if (--r->m->refs == 0) {
        member_free(r->m);
    }
    pthread_mutex_unlock(&join_lock);
    free(r);
}

void
nrtemu__rank_exec_begin(struct nrtemu_rank *r)
{
    if (r != NULL) {
        pthread_mutex_lock(&r->m->exec);
    }
}

void
nrtemu__rank_exec_end(struct nrtemu_rank *r)
{
    if (r != NULL) {
        pthread_mutex_unlock(&r->m->exec);
    }
}

void
nrtemu__communicators_close(void)
{
    pthread_mutex_lock(&join_lock);
    for (struct member *m = members; m != NULL; m = m->next) {
        member_end(m);
    }
    pthread_mutex_unlock(&join_lock);
}

/* The record of rank r's next exchange, of op `op` (exec held). */
static void
next_id(struct nrtemu_rank *r, uint32_t op, struct nrtemu_cc_id *id)
{
    id->seq = r->m->seq++;
    id->model = r->model;
    id->op = op;
    snprintf(id->name, sizeof id->name, "%s", r->name);
}

/* "1, 3 and 4" of the ranks of `members` for which `pick` holds. */
static void
rank_list(char *buf, size_t len, const uint32_t *ranks, uint32_t n)
{
    size_t used = 0;

    buf[0] = '\0';
    for (uint32_t i = 0; i < n && used < len; i++) {
        used += (size_t)snprintf(buf + used, len - used, "%s%u",
                                 i == 0       ? ""
                                 : i + 1 == n ? " and "
                                              : ", ",
                                 ranks[i]);
    }
}

/*
 * Reach `phase` of exchange `id` and wait for the `g` ranks of `members`
 * to reach it too.  At phase 0 the rank first publishes `in`, `out` and
 * the record, checks each member's record as it arrives, and `ins`/`outs`
 * receive the members' (in member order).  `what` names the collective in
 * messages.
 */
static NRT_STATUS
comm_sync(const char *func, struct member *m, const uint32_t *members,
          uint32_t g, const struct nrtemu_cc_id *id, uint32_t phase,
          const void *in, void *out, const void **ins, void **outs,
          uint64_t deadline_ns, const char *what)
{
    struct comm *c = m->comm;
    /* 0 is "nothing reached yet" */
    uint64_t seq = id->seq, target = seq * PHASES + phase + 1;
    uint32_t missing[64], n_missing = 0;
    NRT_STATUS st = NRT_SUCCESS;
    char why[512], list[160];

    pthread_mutex_lock(&c->lock);
    if (c->failed) {
        st = nrtemu__fail(NRT_EXEC_HW_ERR_COLLECTIVES, func,
                          "%.120s on rank %u: the communicator failed "
                          "earlier (%.400s); load the models again",
                          what, m->rank, c->failure);
        pthread_mutex_unlock(&c->lock);
        return st;
    }
    if (phase == 0) {
        c->slots[m->rank].in = in;
        c->slots[m->rank].out = out;
        c->slots[m->rank].id = *id;
    }
    c->slots[m->rank].progress = target;
    pthread_cond_broadcast(&c->cond);
    for (;;) {
        bool all = true, other = false;
        /* (A member that left after it reached the phase counts: its
         * progress stays.) */
        for (uint32_t i = 0; i < g && !other; i++) {
            const struct slot *s = &c->slots[members[i]];
            if (phase == 0 && s->progress >= target &&
                (s->progress > (seq + 1) * PHASES ||
                 !nrtemu__cc_id_same(&s->id, id))) {
                /* ahead (past this collective without this rank), or at
                 * another exchange */
                nrtemu__cc_id_mismatch(why, sizeof why, m->rank, id,
                                       members[i], &s->id);
                comm_fail_locked(c, NRT_EXEC_HW_ERR_COLLECTIVES, why);
                other = true;
            }
            all = all && s->progress >= target;
        }
        if (all && !other) {
            break; /* (whatever failed since: this rank is through) */
        }
        if (c->failed) {
            /* while this rank waited: the same failure, said the same */
            st = nrtemu__fail(c->failure_status, func, "rank %u: %.480s",
                              m->rank, c->failure);
            break;
        }
        if (deadline_ns != 0) {
            struct timespec ts = {(time_t)(deadline_ns / 1000000000u),
                                  (long)(deadline_ns % 1000000000u)};
            if (nrtemu__monotonic_ns() >= deadline_ns ||
                pthread_cond_timedwait(&c->cond, &c->lock, &ts) != 0) {
                if (nrtemu__monotonic_ns() < deadline_ns) {
                    continue;
                }
                for (uint32_t i = 0; i < g; i++) {
                    const struct slot *s = &c->slots[members[i]];
                    if ((!s->present || s->progress < target) &&
                        n_missing < sizeof missing / sizeof missing[0]) {
                        missing[n_missing++] = members[i];
                    }
                }
                rank_list(list, sizeof list, missing, n_missing);
                snprintf(
                    why, sizeof why,
                    "rank%s %.160s did not reach %.120s (collective #%llu) "
                    "within NEURON_RT_EXEC_TIMEOUT",
                    n_missing == 1 ? "" : "s", list, what,
                    (unsigned long long)seq);
                comm_fail_locked(c, NRT_TIMEOUT, why);
                continue; /* reported above */
            }
        } else {
            pthread_cond_wait(&c->cond, &c->lock);
        }
    }
    if (st == NRT_SUCCESS && phase == 0) {
        for (uint32_t i = 0; i < g; i++) {
            ins[i] = c->slots[members[i]].in;
            outs[i] = c->slots[members[i]].out;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}

/* ------------------------------------------------------------ execution */

/* Copy the box `box` at `soff` of `src` (shape `ss`) to `doff` of `dst`
 * (shape `ds`); elements of `esize` bytes, C order. */
static void
box_copy(char *dst, const uint64_t *ds, const uint64_t *doff, const char *src,
         const uint64_t *ss, const uint64_t *soff, const uint64_t *box,
         uint32_t ndim, size_t esize)
{
    uint64_t dstride[NRTEMU_MAX_DIMS], sstride[NRTEMU_MAX_DIMS];
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    uint64_t run = esize, d0 = 0, s0 = 0;
    uint32_t inner = ndim;

    for (uint32_t d = ndim; d-- > 0;) {
        dstride[d] = d + 1 < ndim ? dstride[d + 1] * ds[d + 1] : esize;
        sstride[d] = d + 1 < ndim ? sstride[d + 1] * ss[d + 1] : esize;
        d0 += doff[d] * dstride[d];
        s0 += soff[d] * sstride[d];
    }
    /* Trailing whole dimensions, and then one partial, are one run. */
    while (inner > 0) {
        inner--;
        run *= box[inner];
        if (box[inner] != ds[inner] || box[inner] != ss[inner]) {
            break;
        }
    }
    for (uint32_t d = 0; d < inner; d++) {
        if (box[d] == 0) {
            return;
        }
    }
    for (;;) {
        uint64_t dof = d0, sof = s0;
        uint32_t d;
        for (d = 0; d < inner; d++) {
            dof += idx[d] * dstride[d];
            sof += idx[d] * sstride[d];
        }
        memcpy(dst + dof, src + sof, run);
        for (d = inner; d-- > 0;) {
            if (++idx[d] < box[d]) {
                break;
            }
            idx[d] = 0;
        }
        if (d == UINT32_MAX) {
            return;
        }
    }
}

/* Elements before and after `axis`. */
static void
split_at(const struct nrtemu_array *a, uint32_t axis, uint64_t *outer,
         uint64_t *inner)
{
    *outer = 1;
    *inner = 1;
    for (uint32_t d = 0; d < a->ndim; d++) {
        if (d < axis) {
            *outer *= a->shape[d];
        } else if (d > axis) {
            *inner *= a->shape[d];
        }
    }
}

/* Below this many bytes each rank reduces an all_reduce whole itself:
 * one rendezvous fewer. */
#define SMALL_ALL_REDUCE (256u << 10)

struct exchange {
    const struct nrtemu_coll_call *c;
    const struct nrtemu_coll_attrs *a;
    uint32_t g, pos;  /* group size, this rank's position in it */
    const void **ins; /* the members' operands, in group order */
    void **outs;      /* their results */
    size_t esize;
};

/* Part `j` of `n` of `count` elements, on 16-element boundaries. */
static void
part(uint64_t count, uint32_t j, uint32_t n, uint64_t *lo, uint64_t *hi)
{
    uint64_t step = ((count + n - 1) / n + 15) & ~(uint64_t)15;

    *lo = step * j < count ? step * j : count;
    *hi = step * (j + 1) < count ? step * (j + 1) : count;
}

static void
reduce_part(const struct exchange *x, uint64_t lo, uint64_t hi)
{
    const void *src[NRTEMU_MAX_RANKS];

    for (uint32_t j = 0; j < x->g; j++) {
        src[j] = (const char *)x->ins[j] + lo * x->esize;
    }
    nrtemu__kernel_combine(x->a->reduce, x->c->out->dtype,
                           (char *)x->outs[x->pos] + lo * x->esize, src, x->g,
                           hi - lo);
}

/* all_reduce phase 2 of large arrays: the parts the others reduced. */
static void
all_reduce_gather(const struct exchange *x)
{
    uint64_t count = nrtemu__array_count(x->c->out), lo, hi;

    for (uint32_t j = 0; j < x->g; j++) {
        if (j == x->pos) {
            continue;
        }
        part(count, j, x->g, &lo, &hi);
        memcpy((char *)x->outs[x->pos] + lo * x->esize,
               (const char *)x->outs[j] + lo * x->esize, (hi - lo) * x->esize);
    }
}

static void
reduce_scatter(const struct exchange *x)
{
    const struct nrtemu_array *out = x->c->out;
    const void *src[NRTEMU_MAX_RANKS];
    uint64_t outer, inner, blk;

    split_at(out, x->c->axis, &outer, &inner);
    blk = out->shape[x->c->axis] * inner;
    for (uint64_t o = 0; o < outer; o++) {
        for (uint32_t j = 0; j < x->g; j++) {
            src[j] = (const char *)x->ins[j] +
                     ((o * x->g + x->pos) * blk) * x->esize;
        }
        nrtemu__kernel_combine(x->a->reduce, out->dtype,
                               (char *)out->data + o * blk * x->esize, src,
                               x->g, blk);
    }
}

static void
all_gather(const struct exchange *x)
{
    const struct nrtemu_array *in = x->c->in;
    uint64_t outer, inner, blk;

    split_at(in, x->c->axis, &outer, &inner);
    blk = in->shape[x->c->axis] * inner * x->esize;
    for (uint64_t o = 0; o < outer; o++) {
        for (uint32_t j = 0; j < x->g; j++) {
            memcpy((char *)x->c->out->data + (o * x->g + j) * blk,
                   (const char *)x->ins[j] + o * blk, blk);
        }
    }
}

static void
all_to_all(const struct exchange *x)
{
    const struct nrtemu_array *in = x->c->in, *out = x->c->out;
    uint32_t sa = x->a->split_axis, ca = x->a->concat_axis;
    uint64_t box[NRTEMU_MAX_DIMS], soff[NRTEMU_MAX_DIMS] = {0};
    uint64_t doff[NRTEMU_MAX_DIMS] = {0};
    uint64_t bs = in->shape[sa] / x->g;

    memcpy(box, in->shape, sizeof box);
    box[sa] = bs;
    soff[sa] = bs * x->pos;
    for (uint32_t j = 0; j < x->g; j++) {
        doff[ca] = j * (sa == ca ? bs : in->shape[ca]);
        box_copy(out->data, out->shape, doff, x->ins[j], in->shape, soff, box,
                 in->ndim, x->esize);
    }
}

/* collective_permute: `x` spans the whole world, in rank order. */
static void
permute(const struct exchange *x, uint32_t me)
{
    const struct nrtemu_coll_attrs *a = x->a;
    size_t bytes = nrtemu__array_count(x->c->out) * x->esize;

    for (uint32_t i = 0; i < a->n_pairs; i++) {
        if (a->pairs[2 * i + 1] == me) {
            memcpy(x->c->out->data, x->ins[a->pairs[2 * i]], bytes);
            return;
        }
    }
    memset(x->c->out->data, 0, bytes);
}

/* The members of the group of `me` (all ranks for collective_permute). */
static uint32_t
group_of(const struct nrtemu_coll_call *c, uint32_t me, uint32_t world,
         uint32_t *members, uint32_t *pos)
{
    const struct nrtemu_coll_attrs *a = c->attrs;

    if (a->n_groups == 0 || c->op == NRTEMU_OP_COLLECTIVE_PERMUTE) {
        for (uint32_t k = 0; k < world; k++) {
            members[k] = k;
        }
        *pos = me;
        return world;
    }
    for (uint32_t i = 0; i < a->n_groups; i++) {
        uint32_t b = a->group_start[i], e = a->group_start[i + 1];
        for (uint32_t k = b; k < e; k++) {
            if (a->ranks[k] == me) {
                memcpy(members, &a->ranks[b], (e - b) * sizeof *members);
                *pos = k - b;
                return e - b;
            }
        }
    }
    return 0; /* not reached: bind checked that the groups cover the world */
}

/* Per-peer lists of one exchange (world entries each). */
struct net_lists {
    uint32_t *to, *from;
    const void **sbufs;
    void **rbufs;
    size_t *slens, *rlens;
};

static void
net_lists_free(struct net_lists *l)
{
    free(l->to);
    free(l->from);
    free(l->sbufs);
    free(l->rbufs);
    free(l->slens);
    free(l->rlens);
}

static NRT_STATUS
net_lists_alloc(const char *func, uint32_t world, struct net_lists *l)
{
    l->to = malloc(world * sizeof *l->to);
    l->from = malloc(world * sizeof *l->from);
    l->sbufs = malloc(world * sizeof *l->sbufs);
    l->rbufs = malloc(world * sizeof *l->rbufs);
    l->slens = malloc(world * sizeof *l->slens);
    l->rlens = malloc(world * sizeof *l->rlens);
    if (l->to == NULL || l->from == NULL || l->sbufs == NULL ||
        l->rbufs == NULL || l->slens == NULL || l->rlens == NULL) {
        net_lists_free(l);
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    return NRT_SUCCESS;
}

/*
 * A large all-reduce across processes: reduce-scatter then all-gather,
 * in two exchanges.  Member j reduces part j (the same parts as in
 * memory); each rank sends 2 (g - 1) / g of the array, the least any
 * algorithm moves.  Parts are reduced in group order, so every rank gets
 * the same bits as in one process.
 */
static NRT_STATUS
net_all_reduce(const struct nrtemu_coll_call *c, struct nrtemu_rank *r,
               const struct exchange *x, const uint32_t *members,
               const char *what)
{
    uint64_t count = nrtemu__array_count(c->out), lo, hi, mlo, mhi;
    const void *src[NRTEMU_MAX_RANKS];
    struct nrtemu_cc_id id;
    struct net_lists l;
    uint32_t n = 0;
    size_t mine;
    char *space;
    NRT_STATUS st = net_lists_alloc(c->func, r->m->world, &l);

    if (st != NRT_SUCCESS) {
        return st;
    }
    part(count, x->pos, x->g, &mlo, &mhi);
    mine = (mhi - mlo) * x->esize;
    space = nrtemu__scratch_get(c->scratch,
                                x->g > 1 && mine != 0 ? (x->g - 1) * mine : 1);
    if (space == NULL) {
        st = NRT_RESOURCE;
        goto done;
    }
    /* 1: part j of this rank's operand to member j; this rank's part of
     * every other member's operand into scratch */
    for (uint32_t j = 0; j < x->g; j++) {
        if (j == x->pos) {
            src[j] = (const char *)c->in->data + mlo * x->esize;
            continue;
        }
        part(count, j, x->g, &lo, &hi);
        l.to[n] = l.from[n] = members[j];
        l.sbufs[n] = (const char *)c->in->data + lo * x->esize;
        l.slens[n] = (hi - lo) * x->esize;
        l.rbufs[n] = space + (size_t)n * mine;
        l.rlens[n] = mine;
        src[j] = l.rbufs[n];
        n++;
    }
    next_id(r, (uint32_t)c->index, &id);
    st = nrtemu__net_exchange(c->func, r->m->net, &id, l.to, n, l.sbufs,
                              l.slens, l.from, n, l.rbufs, l.rlens,
                              c->deadline_ns, what);
    if (st != NRT_SUCCESS) {
        goto done;
    }
    nrtemu__kernel_combine(x->a->reduce, c->out->dtype,
                           (char *)c->out->data + mlo * x->esize, src, x->g,
                           mhi - mlo);
    /* 2: this rank's reduced part to every member; theirs into place */
    n = 0;
    for (uint32_t j = 0; j < x->g; j++) {
        if (j == x->pos) {
            continue;
        }
        part(count, j, x->g, &lo, &hi);
        l.sbufs[n] = (const char *)c->out->data + mlo * x->esize;
        l.slens[n] = mine;
        l.rbufs[n] = (char *)c->out->data + lo * x->esize;
        l.rlens[n] = (hi - lo) * x->esize;
        n++;
    }
    next_id(r, (uint32_t)c->index, &id);
    st = nrtemu__net_exchange(c->func, r->m->net, &id, l.to, n, l.sbufs,
                              l.slens, l.from, n, l.rbufs, l.rlens,
                              c->deadline_ns, what);
done:
    net_lists_free(&l);
    return st;
}

/*
 * An all-reduce between processes of one machine, through the board's
 * shared areas (net.h).  Each area has two halves, used in turn: a rank
 * fills one while the others may still read the other, since it only
 * comes back to a half after a rendezvous that every reader of the half
 * reaches once done with it.
 * - Small arrays (collective s uses half s % 2): each rank copies its
 *   operand into its area, and after one rendezvous reduces the whole
 *   from the areas; a second one ends the collective.  (Without it, a
 *   rank could pass the next collective with a group that leaves out a
 *   reader still reading, and overwrite the half in the one after.)
 * - Large ones, in windows (window w uses half (s + w) % 2: not the
 *   half of a small collective s - 1 that others may still read): each
 *   rank copies part j of the window's operand into slot j of its half;
 *   after a rendezvous, member j reduces part j from the halves and puts
 *   the result into its own slot j; after another, every rank copies the
 *   parts the others reduced into its result.  A last rendezvous ends
 *   the collective.  Each rank copies 3 (g - 1) / g of the array, and
 *   reduces 1 / g of it.
 * Reduced in group order: the same bits as in one process.
 */
static NRT_STATUS
direct_all_reduce(const struct nrtemu_coll_call *c, struct nrtemu_rank *r,
                  const struct exchange *x, const uint32_t *members,
                  bool two_phases, const char *what)
{
    const size_t es = x->esize;
    uint64_t count = nrtemu__array_count(c->out), seq;
    uint64_t lo, hi, step, windows;
    struct nrtemu_net *net = r->m->net;
    struct nrtemu_cc_id id;
    const void *src[NRTEMU_MAX_RANKS];
    char *out = c->out->data, **areas;
    const char *in = c->in->data;
    size_t half;
    uint32_t phase = 0;
    NRT_STATUS st = NRT_SUCCESS;

    areas = malloc(x->g * sizeof *areas);
    if (areas == NULL) {
        return nrtemu__fail(NRT_RESOURCE, c->func, "out of host memory");
    }
    next_id(r, (uint32_t)c->index, &id);
    seq = id.seq;
    for (uint32_t j = 0; j < x->g; j++) {
        areas[j] = nrtemu__net_area(net, members[j], &half);
    }
    half /= 2;
    /* (a small array that would not fit half an area goes in windows) */
    if (!two_phases && count * es <= half) {
        size_t at = (size_t)(seq % 2) * half;
        memcpy(areas[x->pos] + at, in, count * es);
        st = nrtemu__net_sync(c->func, net, members, x->g, &id, 0,
                              c->deadline_ns, what);
        if (st == NRT_SUCCESS) {
            for (uint32_t j = 0; j < x->g; j++) {
                src[j] = j == x->pos ? in : areas[j] + at;
            }
            nrtemu__kernel_combine(x->a->reduce, c->out->dtype, out, src, x->g,
                                   count);
            /* Every member has read this rank's area before any leaves:
             * the next collective may not include them all (other groups,
             * or not on the board), and may write this half again. */
            st = nrtemu__net_sync(c->func, net, members, x->g, &id, 1,
                                  c->deadline_ns, what);
        }
        free(areas);
        return st;
    }
    /* the parts of a window: slots of `step` elements, 16 at least */
    step = half / x->g / es / 16 * 16;
    windows = (count + step * x->g - 1) / (step * x->g);
    for (uint64_t w = 0; st == NRT_SUCCESS && w < windows; w++) {
        uint64_t base = w * step * x->g;
        uint64_t n = count - base < step * x->g ? count - base : step * x->g;
        size_t at = (size_t)((seq + w) % 2) * half;
        for (uint32_t j = 0; j < x->g; j++) {
            part(n, j, x->g, &lo, &hi);
            if (j != x->pos) {
                memcpy(areas[x->pos] + at + j * step * es,
                       in + (base + lo) * es, (hi - lo) * es);
            }
        }
        st = nrtemu__net_sync(c->func, net, members, x->g, &id, phase++,
                              c->deadline_ns, what);
        if (st != NRT_SUCCESS) {
            break;
        }
        part(n, x->pos, x->g, &lo, &hi);
        for (uint32_t j = 0; j < x->g; j++) {
            src[j] = j == x->pos ? in + (base + lo) * es
                                 : areas[j] + at + x->pos * step * es;
        }
        nrtemu__kernel_combine(x->a->reduce, c->out->dtype,
                               out + (base + lo) * es, src, x->g, hi - lo);
        memcpy(areas[x->pos] + at + x->pos * step * es, out + (base + lo) * es,
               (hi - lo) * es);
        st = nrtemu__net_sync(c->func, net, members, x->g, &id, phase++,
                              c->deadline_ns, what);
        for (uint32_t j = 0; st == NRT_SUCCESS && j < x->g; j++) {
            part(n, j, x->g, &lo, &hi);
            if (j != x->pos) {
                memcpy(out + (base + lo) * es, areas[j] + at + j * step * es,
                       (hi - lo) * es);
            }
        }
    }
    /* (see above) */
    if (st == NRT_SUCCESS) {
        st = nrtemu__net_sync(c->func, net, members, x->g, &id, phase,
                              c->deadline_ns, what);
    }
    free(areas);
    return st;
}

/*
 * Across processes, every other op: the operands of the others that this
 * rank reads, received into scratch, in x->ins (x->outs[x->pos] is this
 * rank's own result; the others' are not needed).  Every member sends its
 * whole operand to every member that reads it: a direct exchange.
 */
static NRT_STATUS
net_receive(const struct nrtemu_coll_call *c, struct nrtemu_rank *r,
            struct exchange *x, const uint32_t *members, const char *what)
{
    const struct nrtemu_coll_attrs *a = c->attrs;
    size_t bytes = nrtemu__array_count(c->in) * x->esize;
    uint32_t n_to = 0, n_from = 0;
    struct nrtemu_cc_id id;
    struct net_lists l;
    char *space;
    uint32_t me = r->m->rank;
    NRT_STATUS st = net_lists_alloc(c->func, r->m->world, &l);

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (c->op == NRTEMU_OP_COLLECTIVE_PERMUTE) {
        for (uint32_t i = 0; i < a->n_pairs; i++) {
            if (a->pairs[2 * i] == me && a->pairs[2 * i + 1] != me) {
                l.to[n_to++] = a->pairs[2 * i + 1];
            }
            if (a->pairs[2 * i + 1] == me && a->pairs[2 * i] != me) {
                l.from[n_from++] = a->pairs[2 * i];
            }
        }
    } else {
        for (uint32_t k = 0; k < x->g; k++) {
            if (k != x->pos) {
                l.to[n_to++] = members[k];
                l.from[n_from++] = members[k];
            }
        }
    }
    space = nrtemu__scratch_get(
        c->scratch, n_from != 0 && bytes != 0 ? n_from * bytes : 1);
    if (space == NULL) {
        st = NRT_RESOURCE;
        goto done;
    }
    for (uint32_t k = 0; k < n_to; k++) {
        l.sbufs[k] = c->in->data;
        l.slens[k] = bytes;
    }
    for (uint32_t k = 0; k < n_from; k++) {
        l.rbufs[k] = space + k * bytes;
        l.rlens[k] = bytes;
    }
    next_id(r, (uint32_t)c->index, &id);
    st = nrtemu__net_exchange(c->func, r->m->net, &id, l.to, n_to, l.sbufs,
                              l.slens, l.from, n_from, l.rbufs, l.rlens,
                              c->deadline_ns, what);
    if (st != NRT_SUCCESS) {
        goto done;
    }
    /* x->ins is indexed by group position (by rank for permute, whose
     * group is the world). */
    x->ins[x->pos] = c->in->data;
    x->outs[x->pos] = c->out->data;
    if (c->op == NRTEMU_OP_COLLECTIVE_PERMUTE) {
        if (n_from == 1) {
            x->ins[l.from[0]] = l.rbufs[0];
        }
    } else {
        for (uint32_t k = 0, j = 0; k < x->g; k++) {
            if (k != x->pos) {
                x->ins[k] = l.rbufs[j++];
            }
        }
    }
done:
    net_lists_free(&l);
    return st;
}

NRT_STATUS
nrtemu__coll_run(const struct nrtemu_coll_call *c)
{
    struct nrtemu_rank *r = c->rank;
    struct member *m = r != NULL ? r->m : NULL;
    uint32_t world = m != NULL ? m->world : 1;
    uint32_t me = m != NULL ? m->rank : 0;
    uint32_t members_stack[64], *members = members_stack;
    const void *ins_stack[64], **ins = ins_stack;
    void *outs_stack[64], **outs = outs_stack;
    struct exchange x = {
        c, c->attrs, 0, 0, NULL, NULL, nrtemu__dtype_size(c->out->dtype)};
    uint64_t count = nrtemu__array_count(c->out);
    struct nrtemu_cc_id id = {0};
    bool two_phases;
    const char *what = c->what;
    NRT_STATUS st = NRT_SUCCESS;

    /* (the caller holds m->exec: nrtemu__rank_exec_begin) */
    if (m != NULL && m->ended) {
        return nrtemu__fail(NRT_CLOSED, c->func, "%s on rank %u: %s", what, me,
                            m->forked ? "the communicator is the parent "
                                        "process's (fork)"
                                      : "nrt_close ended the communicator");
    }
    if (world > 64) {
        members = malloc(world * sizeof *members);
        ins = malloc(world * sizeof *ins);
        outs = malloc(world * sizeof *outs);
        if (members == NULL || ins == NULL || outs == NULL) {
            st = NRT_RESOURCE;
            goto done;
        }
    }
    x.g = group_of(c, me, world, members, &x.pos);
    x.ins = ins;
    x.outs = outs;
    two_phases = c->op == NRTEMU_OP_ALL_REDUCE && x.g > 1 &&
                 count * x.esize >= SMALL_ALL_REDUCE;
    if (m == NULL) {
        ins[0] = c->in->data;
        outs[0] = c->out->data;
    } else if (m->net != NULL) {
        bool direct = false;
        if (c->op == NRTEMU_OP_ALL_REDUCE && x.g > 1) {
            st = nrtemu__net_direct(c->func, m->net, c->deadline_ns, &direct);
            if (st != NRT_SUCCESS) {
                goto done;
            }
        }
        if (direct) {
            st = direct_all_reduce(c, r, &x, members, two_phases, what);
            goto done;
        }
        if (two_phases) {
            st = net_all_reduce(c, r, &x, members, what);
            goto done;
        }
        st = net_receive(c, r, &x, members, what);
        if (st != NRT_SUCCESS) {
            goto done;
        }
    } else {
        next_id(r, (uint32_t)c->index, &id);
        st = comm_sync(c->func, m, members, x.g, &id, 0, c->in->data,
                       c->out->data, ins, outs, c->deadline_ns, what);
        if (st != NRT_SUCCESS) {
            goto done;
        }
    }
    switch (c->op) {
    case NRTEMU_OP_ALL_REDUCE:
        if (two_phases) {
            uint64_t lo, hi;
            part(count, x.pos, x.g, &lo, &hi);
            reduce_part(&x, lo, hi);
        } else {
            reduce_part(&x, 0, count);
        }
        break;
    case NRTEMU_OP_REDUCE_SCATTER:
        reduce_scatter(&x);
        break;
    case NRTEMU_OP_ALL_GATHER:
        all_gather(&x);
        break;
    case NRTEMU_OP_ALL_TO_ALL:
        all_to_all(&x);
        break;
    default:
        permute(&x, me);
        break;
    }
    if (m != NULL && m->net == NULL && two_phases) {
        st = comm_sync(c->func, m, members, x.g, &id, 1, NULL, NULL, NULL,
                       NULL, c->deadline_ns, what);
        if (st != NRT_SUCCESS) {
            goto done;
        }
        all_reduce_gather(&x);
    }
    if (m != NULL && m->net == NULL) {
        /* Nobody leaves while another may still read its memory. */
        st = comm_sync(c->func, m, members, x.g, &id, PHASES - 1, NULL, NULL,
                       NULL, NULL, c->deadline_ns, what);
    }
done:
    if (members != members_stack) {
        free(members);
        free(ins);
        free(outs);
    }
    return st;
}

/* --------------------------------------------- for collective_host.c */

NRT_STATUS
nrtemu__rank_join_global(const char *func, uint32_t vnc, uint32_t rank,
                         uint32_t world, uint64_t timeout_ns,
                         struct nrtemu_rank **out)
{
    if (out == NULL) {
        return nrtemu__reject(NRT_INVALID, func, "NULL handle");
    }
    return join(func, vnc, rank, world, timeout_ns, NRTEMU_CC_HOST_MODEL,
                "host-level collective", out);
}

uint32_t
nrtemu__rank_id(const struct nrtemu_rank *r)
{
    return r->m->rank;
}

uint32_t
nrtemu__rank_world(const struct nrtemu_rank *r)
{
    return r->m->world;
}

/* The exchange of a host-level collective: its record, then the data. */
static NRT_STATUS
gather_exchange(const char *func, struct nrtemu_rank *r, const void *in,
                size_t size, void *out, uint64_t deadline_ns, const char *what,
                uint32_t *members, const void **ins, void **outs)
{
    struct member *m = r->m;
    struct nrtemu_cc_id id;
    NRT_STATUS st;

    if (m->ended) {
        return nrtemu__fail(NRT_CLOSED, func, "%s on rank %u: %s", what,
                            m->rank,
                            m->forked ? "the communicator is the parent "
                                        "process's (fork)"
                                      : "nrt_close ended the communicator");
    }
    /* (the op: the bytes per rank, so that an all-gather of another size,
     * or a barrier, on another rank is a mismatch, not a short copy) */
    next_id(r, (uint32_t)size, &id);
    snprintf(id.name, sizeof id.name, "%s", what);
    for (uint32_t k = 0; k < m->world; k++) {
        members[k] = k;
    }
    if (m->net != NULL) {
        uint32_t n = 0;
        size_t *lens = calloc(m->world, sizeof *lens);
        if (lens == NULL) {
            return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
        }
        /* the others' parts straight into place */
        for (uint32_t k = 0; k < m->world; k++) {
            if (k != m->rank) {
                members[n] = k;
                ins[n] = in;
                lens[n] = size;
                outs[n++] = (char *)out + (size_t)k * size;
            }
        }
        st = nrtemu__net_exchange(func, m->net, &id, members, n, ins, lens,
                                  members, n, outs, lens, deadline_ns, what);
        free(lens);
        if (st == NRT_SUCCESS && size != 0) {
            memcpy((char *)out + (size_t)m->rank * size, in, size);
        }
        return st;
    }
    st = comm_sync(func, m, members, m->world, &id, 0, in, out, ins, outs,
                   deadline_ns, what);
    if (st != NRT_SUCCESS) {
        return st;
    }
    for (uint32_t j = 0; size != 0 && j < m->world; j++) {
        memcpy((char *)out + (size_t)j * size, ins[j], size);
    }
    return comm_sync(func, m, members, m->world, &id, PHASES - 1, NULL, NULL,
                     NULL, NULL, deadline_ns, what);
}

NRT_STATUS
nrtemu__rank_gather_bytes(const char *func, struct nrtemu_rank *r,
                          const void *in, size_t size, void *out,
                          uint64_t deadline_ns, const char *what)
{
    uint32_t *members;
    const void **ins;
    void **outs;
    NRT_STATUS st;

    static char none; /* (a barrier's buffers) */

    if (r == NULL || what == NULL || size > UINT32_MAX ||
        (size != 0 && (in == NULL || out == NULL))) {
        return nrtemu__reject(NRT_INVALID, func,
                              "a host-level collective needs a membership, "
                              "buffers and at most 4 GiB per rank");
    }
    if (size == 0) {
        in = out = &none;
    }
    members = malloc(r->m->world * sizeof *members);
    ins = calloc(r->m->world, sizeof *ins);
    outs = calloc(r->m->world, sizeof *outs);
    if (members == NULL || ins == NULL || outs == NULL) {
        st = nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    } else {
        /* one execution of the rank at a time, models' included */
        nrtemu__rank_exec_begin(r);
        st = gather_exchange(func, r, in, size, out, deadline_ns, what,
                             members, ins, outs);
        nrtemu__rank_exec_end(r);
    }
    free(members);
    free(ins);
    free(outs);
    return st;
}
