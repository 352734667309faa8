/*
 * net_exchange.c - the data of collectives between processes: over the
 * ranks' TCP connections or libfabric, each exchange's record checked on
 * the way; and the phases that the ranks of one machine reach together
 * on the board, for the all_reduce through its shared memory (design in
 * net.h).
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "collective/board.h"
#include "collective/cc_id.h"
#include "collective/fabric.h"
#include "collective/net.h"
#include "collective/net_internal.h"
#include "util/clock.h"
#include "util/error.h"

#define DATA_MAGIC 0x4e525444u            /* "NRTD" */
#define DATA_HDR (16 + NRTEMU_CC_ID_WIRE) /* magic, 0, length (8), id */
/* Over libfabric: messages of at most this many bytes (a large transfer
 * streams as several), and at most FAB_SLOTS of them in flight.  The
 * chunk number FAB_ID_CHUNK tags the record of the exchange (cc_id.h). */
#define FAB_CHUNK ((size_t)4 << 20)
#define FAB_MAX_CHUNKS 4095u
#define FAB_ID_CHUNK 4095u
#define FAB_SLOTS 64u

static NRT_STATUS
failed_earlier(const char *func, const struct nrtemu_net *net,
               const char *what)
{
    return nrtemu__fail(NRT_EXEC_HW_ERR_COLLECTIVES, func,
                        "%.120s on rank %u: the communicator failed "
                        "earlier (%.240s); load the models again",
                        what, net->rank, net->failure);
}

/* The ranks of the board: which exchange this rank is at, said before
 * anything of it is sent or published. */
static void
board_say(struct nrtemu_net *net, const struct nrtemu_cc_id *id)
{
    unsigned char rec[NRTEMU_CC_ID_WIRE];

    if (net->board == NULL || !net->direct) {
        return;
    }
    nrtemu__cc_id_encode(id, rec);
    nrtemu__board_say(net->board, id->seq, rec);
}

/* The ranks of the board, while this one waits at exchange `id`: another
 * rank's failure, or peer `peer` (UINT32_MAX: none) at another exchange
 * of that number, fails the net; else NRT_SUCCESS. */
static NRT_STATUS
board_check(const char *func, struct nrtemu_net *net, uint32_t peer,
            const struct nrtemu_cc_id *id)
{
    unsigned char rec[NRTEMU_CC_ID_WIRE];
    struct nrtemu_cc_id theirs;
    char why[384];
    int status;

    if (net->board == NULL || !net->direct) {
        return NRT_SUCCESS;
    }
    if (nrtemu__board_failed(net->board, &status, why, sizeof why)) {
        return nrtemu__net_fail(func, net, (NRT_STATUS)status, why);
    }
    if (peer == UINT32_MAX || peer == net->rank ||
        !nrtemu__board_said(net->board, peer, id->seq, rec)) {
        return NRT_SUCCESS;
    }
    nrtemu__cc_id_decode(rec, &theirs);
    if (nrtemu__cc_id_same(id, &theirs)) {
        return NRT_SUCCESS;
    }
    nrtemu__cc_id_mismatch(why, sizeof why, net->rank, id, peer, &theirs);
    return nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
}

/* Peer `peer` closed its connection during `what`: its own reason when it
 * failed (on the board, or in a notice on a quiet connection), else
 * that. */
static NRT_STATUS
peer_gone(const char *func, struct nrtemu_net *net, uint32_t peer,
          const char *what, const char *detail)
{
    unsigned char hdr[12];
    char why[384], text[384];
    NRT_STATUS st = board_check(func, net, UINT32_MAX, NULL);

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (net->quiet &&
        nrtemu__net_read_full(net->peers[peer], hdr, sizeof hdr,
                              nrtemu__monotonic_ns() + 200000000u) == 0 &&
        get32(hdr) == FAIL_MAGIC && get32(hdr + 8) < sizeof text &&
        nrtemu__net_read_full(net->peers[peer], text, get32(hdr + 8),
                              nrtemu__monotonic_ns() + 200000000u) == 0) {
        text[get32(hdr + 8)] = '\0';
        return nrtemu__net_fail(func, net, (NRT_STATUS)get32(hdr + 4), text);
    }
    snprintf(why, sizeof why,
             "rank %u closed its connection during %.120s (%s: its process "
             "ended, or its communicator failed?)",
             peer, what, detail);
    return nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
}

struct xfer {
    uint32_t peer;
    bool recv;
    size_t done;
    unsigned char hdr[DATA_HDR];
    void *buf;
    size_t len;
};

/* Progress one transfer; 1 when complete, 0 for more, -1 failed (errno;
 * EPROTO: the header received, in x->hdr, is not of this exchange, whose
 * record is `rec`). */
static int
xfer_step(struct nrtemu_net *net, struct xfer *x, const unsigned char *rec)
{
    int fd = net->peers[x->peer];
    size_t total = DATA_HDR + x->len;

    while (x->done < total) {
        ssize_t k;
        if (x->recv) {
            if (x->done < DATA_HDR) {
                k = recv(fd, x->hdr + x->done, DATA_HDR - x->done, 0);
            } else {
                k = recv(fd, (char *)x->buf + (x->done - DATA_HDR),
                         total - x->done, 0);
            }
            if (k == 0) {
                errno = EPIPE;
                return -1;
            }
        } else {
            struct iovec iov[2];
            struct msghdr mh;
            int n = 0;
            memset(&mh, 0, sizeof mh);
            if (x->done < DATA_HDR) {
                iov[n].iov_base = x->hdr + x->done;
                iov[n++].iov_len = DATA_HDR - x->done;
            }
            if (x->len > 0) {
                size_t off = x->done > DATA_HDR ? x->done - DATA_HDR : 0;
                iov[n].iov_base = (char *)x->buf + off;
                iov[n++].iov_len = x->len - off;
            }
            mh.msg_iov = iov;
            mh.msg_iovlen = (size_t)n;
            k = sendmsg(fd, &mh, MSG_NOSIGNAL);
        }
        if (k < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return 0;
            }
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        x->done += (size_t)k;
        /* (seq, model and op: the name only says which model) */
        if (x->recv && x->done == DATA_HDR &&
            (get32(x->hdr) != DATA_MAGIC ||
             memcmp(x->hdr + 16, rec, 20) != 0 ||
             get64(x->hdr + 8) != x->len)) {
            errno = EPROTO;
            return -1;
        }
    }
    return 1;
}

/* Why the header of `x` is not of exchange `id` (xfer_step's EPROTO). */
static void
xfer_refused(const struct nrtemu_net *net, const struct xfer *x,
             const struct nrtemu_cc_id *id, const char *what, char *why,
             size_t size)
{
    struct nrtemu_cc_id theirs;

    nrtemu__cc_id_decode(x->hdr + 16, &theirs);
    if (get32(x->hdr) != DATA_MAGIC) {
        snprintf(why, size,
                 "rank %u sent what is not collective data during %.120s",
                 x->peer, what);
    } else if (!nrtemu__cc_id_same(id, &theirs)) {
        nrtemu__cc_id_mismatch(why, size, net->rank, id, x->peer, &theirs);
    } else {
        snprintf(why, size,
                 "rank %u sent %llu bytes for %.120s, this rank expects %zu: "
                 "the ranks loaded different models",
                 x->peer, (unsigned long long)get64(x->hdr + 8), what, x->len);
    }
}

/* ------------------------------------------------- exchange: libfabric */

/* One message in flight: the provider's room first (fabric.h). */
struct fab_op {
    unsigned char room[NRTEMU_FABRIC_CTX_BYTES];
    uint32_t xfer;
    struct fab_op *next_free;
};

struct fab_xfer {
    uint32_t peer;
    bool recv;
    bool id; /* the exchange's record (FAB_ID_CHUNK), not data */
    char *buf;
    size_t len, chunk;
    uint32_t chunks, posted, completed;
};

/* The tag of chunk `chunk` of the `seq`-th exchange from rank `src`:
 * every message is matched to its exchange, sender and place. */
static uint64_t
fab_tag(uint64_t seq, uint32_t chunk, uint32_t src)
{
    return (seq & 0xffffffffu) << 32 | (uint64_t)(chunk & 0xfffu) << 20 |
           (src & 0xfffffu);
}

/* While nothing completes: a peer with a transfer still open whose
 * connection closed has died (or ended, its own part done, with the last
 * of its data still on the way: the caller gives that a grace period), or
 * failed, when its connection holds a notice (*notice).  `pf` has room for
 * n entries.  @return the rank, or UINT32_MAX. */
static uint32_t
fab_dead_peer(struct nrtemu_net *net, const struct fab_xfer *xs, uint32_t n,
              struct pollfd *pf, int wait_ms, bool *notice)
{
    uint32_t m = 0;
    int ready;

    for (uint32_t i = 0; i < n; i++) {
        if (xs[i].completed < xs[i].chunks) {
            pf[m].fd = net->peers[xs[i].peer];
            pf[m].events = POLLIN;
            pf[m++].revents = 0;
        }
    }
    do {
        ready = poll(pf, m, wait_ms);
    } while (ready < 0 && errno == EINTR);
    *notice = false;
    for (uint32_t i = 0; ready > 0 && i < m; i++) {
        char c;
        ssize_t got = pf[i].revents != 0
                          ? recv(pf[i].fd, &c, 1, MSG_PEEK | MSG_DONTWAIT)
                          : -1;
        if (pf[i].revents != 0 &&
            (pf[i].revents & (POLLHUP | POLLERR) || got >= 0)) {
            *notice = got > 0;
            for (uint32_t k = 0; k < net->world; k++) {
                if (net->peers[k] == pf[i].fd) {
                    return k;
                }
            }
        }
    }
    return UINT32_MAX;
}

/* A record received from x->peer: NRT_SUCCESS when it is exchange `id`'s,
 * else the net fails naming both. */
static NRT_STATUS
fab_check_id(const char *func, struct nrtemu_net *net,
             const struct fab_xfer *x, const struct nrtemu_cc_id *id)
{
    struct nrtemu_cc_id theirs;
    char why[384];

    nrtemu__cc_id_decode((const unsigned char *)x->buf, &theirs);
    if (nrtemu__cc_id_same(id, &theirs)) {
        return NRT_SUCCESS;
    }
    nrtemu__cc_id_mismatch(why, sizeof why, net->rank, id, x->peer, &theirs);
    return nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
}

static NRT_STATUS
fabric_exchange(const char *func, struct nrtemu_net *net,
                const struct nrtemu_cc_id *id, struct fab_xfer *xs, uint32_t n,
                uint64_t deadline_ns, const char *what)
{
    struct fab_op ops[FAB_SLOTS], *free_ops = NULL;
    uint32_t left = n, next = 0, dead;
    uint64_t idle_since = 0, dead_since = 0, seq = id->seq;
    bool notice;
    char why[384], detail[256];
    size_t max_msg = nrtemu__fabric_max_msg(net->fab);
    struct pollfd *pf = calloc(n, sizeof *pf);
    NRT_STATUS st = NRT_SUCCESS;

    if (pf == NULL) {
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }

    for (uint32_t k = 0; k < FAB_SLOTS; k++) {
        ops[k].next_free = free_ops;
        free_ops = &ops[k];
    }
    for (uint32_t i = 0; i < n; i++) {
        struct fab_xfer *x = &xs[i];
        size_t chunk = FAB_CHUNK;
        if (x->len / chunk >= FAB_MAX_CHUNKS) {
            chunk = (x->len + FAB_MAX_CHUNKS - 1) / FAB_MAX_CHUNKS;
        }
        if (max_msg != 0 && chunk > max_msg) {
            chunk = max_msg;
        }
        x->chunk = chunk;
        x->chunks = x->len == 0 ? 1 : (uint32_t)((x->len + chunk - 1) / chunk);
        if (x->chunks > FAB_MAX_CHUNKS) {
            st = nrtemu__net_fail(
                func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
                "a transfer over the provider's message limit");
            goto done;
        }
    }
    while (left > 0) {
        void *done[16], *failed;
        int got;
        /* Post what the slots allow, from the end of the list (the
         * records, then the receives), round-robin over the transfers. */
        for (uint32_t tries = 0; free_ops != NULL && tries < n; tries++) {
            struct fab_xfer *x = &xs[(n - 1 - next) % n];
            uint32_t i = (n - 1 - next) % n;
            next = (next + 1) % n;
            while (free_ops != NULL && x->posted < x->chunks) {
                struct fab_op *op = free_ops;
                size_t off = (size_t)x->posted * x->chunk;
                size_t len = x->len - off < x->chunk ? x->len - off : x->chunk;
                int r;
                op->xfer = i;
                r = nrtemu__fabric_post(
                    net->fab, x->recv, x->peer, x->buf + off, len,
                    fab_tag(seq, x->id ? FAB_ID_CHUNK : x->posted,
                            x->recv ? x->peer : net->rank),
                    op, detail, sizeof detail);
                if (r < 0) {
                    snprintf(why, sizeof why, "%.120s with rank %u: %.200s",
                             what, x->peer, detail);
                    st = nrtemu__net_fail(func, net,
                                          NRT_EXEC_HW_ERR_COLLECTIVES, why);
                    goto done;
                }
                if (r == 1) {
                    break; /* the queue is full: complete some first */
                }
                free_ops = op->next_free;
                x->posted++;
            }
        }
        got = nrtemu__fabric_poll(net->fab, done, 16, &failed, detail,
                                  sizeof detail);
        if (got < 0) {
            uint32_t peer =
                failed != NULL ? xs[((struct fab_op *)failed)->xfer].peer : 0;
            if (got == NRTEMU_FABRIC_PEER_GONE && failed != NULL) {
                /* As a closed socket: the peer's own reason if it left one,
                 * else that it is gone (whichever of the send and the
                 * receive noticed first). */
                st = peer_gone(func, net, peer, what, detail);
                goto done;
            }
            snprintf(why, sizeof why, "%.120s with rank %u: %.200s", what,
                     peer, detail);
            st = nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
            goto done;
        }
        for (int k = 0; k < got; k++) {
            struct fab_op *op = done[k];
            struct fab_xfer *x = &xs[op->xfer];
            if (++x->completed == x->chunks) {
                left--;
                if (x->id && x->recv) {
                    st = fab_check_id(func, net, x, id);
                    if (st != NRT_SUCCESS) {
                        goto done;
                    }
                }
            }
            op->next_free = free_ops;
            free_ops = op;
        }
        if (got > 0 || left == 0) {
            idle_since = 0;
            continue;
        }
        /* Nothing moved: yield the core for a while (the peer may need
         * it), then sleep a millisecond at a time watching for a peer's
         * death, or failure, until the deadline. */
        uint64_t now = nrtemu__monotonic_ns();
        if (idle_since == 0) {
            idle_since = now;
        }
        if (deadline_ns != 0 && now >= deadline_ns) {
            size_t used = (size_t)snprintf(why, sizeof why, "rank(s)");
            for (uint32_t i = 0; i < n && used < 200; i++) {
                bool listed = false; /* (a send and a receive per peer) */
                for (uint32_t k = 0; k < i; k++) {
                    listed = listed || (xs[k].peer == xs[i].peer &&
                                        xs[k].completed < xs[k].chunks);
                }
                if (xs[i].completed < xs[i].chunks && !listed) {
                    used += (size_t)snprintf(why + used, sizeof why - used,
                                             " %u", xs[i].peer);
                }
            }
            snprintf(why + used, sizeof why - used,
                     " did not reach %.120s (collective #%llu) within "
                     "NEURON_RT_EXEC_TIMEOUT",
                     what, (unsigned long long)seq);
            st = nrtemu__net_fail(func, net, NRT_TIMEOUT, why);
            goto done;
        }
        if (now - idle_since < 2000000) {
            sched_yield();
            continue;
        }
        for (uint32_t i = 0; i < n; i++) {
            if (xs[i].completed < xs[i].chunks) {
                st = board_check(func, net, xs[i].peer, id);
                if (st != NRT_SUCCESS) {
                    goto done;
                }
            }
        }
        dead = fab_dead_peer(net, xs, n, pf, 1, &notice);
        if (dead == UINT32_MAX) {
            dead_since = 0;
        } else if (notice) {
            st = peer_gone(func, net, dead, what, "it failed");
            goto done;
        } else if (dead_since == 0) {
            dead_since = now;
        } else if (now - dead_since >= 500000000) {
            st = peer_gone(func, net, dead, what, "its end of the stream");
            goto done;
        }
        if (dead != UINT32_MAX) {
            usleep(1000); /* (its socket polls ready at once) */
        }
    }
done:
    free(pf);
    return st;
}

/*
 * Over libfabric: the transfers of the exchange, and (without the board,
 * which carries them) a record of it to every peer this rank sends to,
 * and one from every peer it receives from.
 */
static NRT_STATUS
fabric_transfers(const char *func, struct nrtemu_net *net,
                 const struct nrtemu_cc_id *id, const uint32_t *send_to,
                 uint32_t n_send, const void *const *sbufs,
                 const size_t *slens, const uint32_t *recv_from,
                 uint32_t n_recv, void *const *rbufs, const size_t *rlens,
                 uint64_t deadline_ns, const char *what)
{
    uint32_t n = n_send + n_recv, total = net->direct ? n : 2 * n;
    struct fab_xfer *fx = calloc(total, sizeof *fx);
    unsigned char *recs = calloc((size_t)n + 1, NRTEMU_CC_ID_WIRE);
    NRT_STATUS st;

    if (fx == NULL || recs == NULL) {
        free(fx);
        free(recs);
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    /* recs: this rank's record, then one per transfer's peer */
    nrtemu__cc_id_encode(id, recs);
    for (uint32_t i = 0; i < total; i++) {
        uint32_t k = i % n;
        fx[i].recv = k >= n_send;
        fx[i].peer = fx[i].recv ? recv_from[k - n_send] : send_to[k];
        fx[i].id = i >= n;
        if (fx[i].id) {
            fx[i].buf = (char *)recs +
                        (fx[i].recv ? (size_t)(k + 1) * NRTEMU_CC_ID_WIRE : 0);
            fx[i].len = NRTEMU_CC_ID_WIRE;
        } else {
            fx[i].buf = fx[i].recv ? rbufs[k - n_send] : (void *)sbufs[k];
            fx[i].len = fx[i].recv ? rlens[k - n_send] : slens[k];
        }
    }
    st = fabric_exchange(func, net, id, fx, total, deadline_ns, what);
    free(fx);
    free(recs);
    return st;
}

/* -------------------------------------------------------- exchange: TCP */

/* Waiting on the ranks' connections with a board: look at it this often
 * (its failure, and which exchange the peers are at). */
#define BOARD_LOOK_MS 10

NRT_STATUS
nrtemu__net_exchange(const char *func, struct nrtemu_net *net,
                     const struct nrtemu_cc_id *id, const uint32_t *send_to,
                     uint32_t n_send, const void *const *sbufs,
                     const size_t *slens, const uint32_t *recv_from,
                     uint32_t n_recv, void *const *rbufs, const size_t *rlens,
                     uint64_t deadline_ns, const char *what)
{
    uint32_t n = n_send + n_recv, left = n;
    unsigned char rec[NRTEMU_CC_ID_WIRE];
    struct xfer *xs;
    struct pollfd *pf;
    char why[384];
    NRT_STATUS st = NRT_SUCCESS;

    if (atomic_load(&net->failed)) {
        return failed_earlier(func, net, what);
    }
    st = nrtemu__net_ensure_ready(func, net, deadline_ns);
    if (st != NRT_SUCCESS) {
        return st;
    }
    board_say(net, id);
    if (n == 0) {
        return NRT_SUCCESS;
    }
    if (net->fab != NULL) {
        return fabric_transfers(func, net, id, send_to, n_send, sbufs, slens,
                                recv_from, n_recv, rbufs, rlens, deadline_ns,
                                what);
    }
    xs = calloc(n, sizeof *xs);
    pf = calloc(n, sizeof *pf);
    if (xs == NULL || pf == NULL) {
        free(xs);
        free(pf);
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    nrtemu__cc_id_encode(id, rec);
    for (uint32_t i = 0; i < n; i++) {
        struct xfer *x = &xs[i];
        x->recv = i >= n_send;
        x->peer = x->recv ? recv_from[i - n_send] : send_to[i];
        x->buf = x->recv ? rbufs[i - n_send] : (void *)sbufs[i];
        x->len = x->recv ? rlens[i - n_send] : slens[i];
        if (!x->recv) {
            put32(x->hdr, DATA_MAGIC);
            put32(x->hdr + 4, 0);
            put64(x->hdr + 8, x->len);
            memcpy(x->hdr + 16, rec, sizeof rec);
        }
        pf[i].fd = net->peers[x->peer];
        pf[i].events = x->recv ? POLLIN : POLLOUT;
    }
    while (left > 0) {
        int ready, wait_ms;
        for (uint32_t i = 0; i < n; i++) {
            int r;
            if (pf[i].fd < 0) {
                continue;
            }
            r = xfer_step(net, &xs[i], rec);
            if (r < 0 && errno == EPROTO) {
                /* The peer hears which exchange this rank is at before
                 * the hang-up, when its header can still go. */
                for (uint32_t j = 0; j < n_send; j++) {
                    if (pf[j].fd >= 0 && xs[j].peer == xs[i].peer &&
                        xs[j].done == 0) {
                        xfer_step(net, &xs[j], rec);
                    }
                }
                xfer_refused(net, &xs[i], id, what, why, sizeof why);
                st = nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
                                      why);
                goto done;
            }
            if (r < 0) {
                int err = errno;
                /* A peer at another exchange that hung up sent its header
                 * before: the reason to report, when it came. */
                for (uint32_t j = n_send; j < n; j++) {
                    if (pf[j].fd >= 0 && xs[j].peer == xs[i].peer &&
                        xs[j].done < DATA_HDR &&
                        xfer_step(net, &xs[j], rec) < 0 && errno == EPROTO) {
                        xfer_refused(net, &xs[j], id, what, why, sizeof why);
                        st = nrtemu__net_fail(
                            func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
                        goto done;
                    }
                }
                st = peer_gone(func, net, xs[i].peer, what, strerror(err));
                goto done;
            }
            if (r == 1) {
                pf[i].fd = -1;
                left--;
            }
        }
        if (left == 0) {
            break;
        }
        wait_ms = nrtemu__net_ms_left(deadline_ns);
        if (net->board != NULL && net->direct &&
            (wait_ms < 0 || wait_ms > BOARD_LOOK_MS)) {
            wait_ms = BOARD_LOOK_MS;
        }
        do {
            ready = poll(pf, n, wait_ms);
        } while (ready < 0 && errno == EINTR);
        if (ready == 0 && nrtemu__net_ms_left(deadline_ns) != 0) {
            for (uint32_t i = 0; i < n; i++) {
                st = pf[i].fd >= 0 ? board_check(func, net, xs[i].peer, id)
                                   : NRT_SUCCESS;
                if (st != NRT_SUCCESS) {
                    goto done;
                }
            }
            continue;
        }
        if (ready == 0) {
            size_t used = (size_t)snprintf(why, sizeof why, "rank(s)");
            for (uint32_t i = 0; i < n && used < 200; i++) {
                if (pf[i].fd >= 0) {
                    used += (size_t)snprintf(why + used, sizeof why - used,
                                             " %u", xs[i].peer);
                }
            }
            snprintf(why + used, sizeof why - used,
                     " did not reach %.120s (collective #%llu) within "
                     "NEURON_RT_EXEC_TIMEOUT",
                     what, (unsigned long long)id->seq);
            st = nrtemu__net_fail(func, net, NRT_TIMEOUT, why);
            goto done;
        }
    }
done:
    free(xs);
    free(pf);
    return st;
}

/* ------------------------------------------------ exchange: the board */

NRT_STATUS
nrtemu__net_direct(const char *func, struct nrtemu_net *net,
                   uint64_t deadline_ns, bool *direct)
{
    NRT_STATUS st;

    *direct = false;
    if (atomic_load(&net->failed)) {
        return nrtemu__fail(NRT_EXEC_HW_ERR_COLLECTIVES, func,
                            "rank %u: the communicator failed earlier "
                            "(%.240s); load the models again",
                            net->rank, net->failure);
    }
    st = nrtemu__net_ensure_ready(func, net, deadline_ns);
    *direct = st == NRT_SUCCESS && net->direct;
    return st;
}

/* Waiting for the other ranks on the board: yield the core this long
 * (the rank waited for may share it: a spin before the first yield only
 * delays it, and a futex wake-up costs tens of microseconds on a virtual
 * machine, more than the ranks' usual skew in a loop), then
 * sleep on the bell. */
#define BOARD_YIELD_NS 200000u
/* Sleep at most this long at a time: then look for dead ranks. */
#define BOARD_NAP_NS 10000000u

/* Of the `n` ranks in `ranks` that have not reached `target`: one whose
 * connection closed (its process ended, or it unloaded), or UINT32_MAX.
 * A rank publishes before it closes, so its counter is read again after
 * the close is seen. */
static uint32_t
board_dead_rank(struct nrtemu_net *net, const uint32_t *ranks, uint32_t n,
                uint64_t target)
{
    for (uint32_t i = 0; i < n; i++) {
        struct pollfd p = {net->peers[ranks[i]], POLLIN, 0};
        char c;
        if (ranks[i] == net->rank ||
            nrtemu__board_progress(net->board, ranks[i]) >= target ||
            poll(&p, 1, 0) <= 0) {
            continue;
        }
        if ((p.revents & (POLLHUP | POLLERR) ||
             recv(p.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0) &&
            nrtemu__board_progress(net->board, ranks[i]) < target) {
            return ranks[i];
        }
    }
    return UINT32_MAX;
}

/* `buf` (`size` bytes, `used` of them taken) with the text appended, cut
 * to fit; returns its new length. */
static size_t text_append(char *buf, size_t size, size_t used, const char *fmt,
                          ...) __attribute__((format(printf, 4, 5)));

static size_t
text_append(char *buf, size_t size, size_t used, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (used + 1 >= size) {
        return used;
    }
    va_start(ap, fmt);
    n = vsnprintf(buf + used, size - used, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return used;
    }
    return used + (size_t)n < size ? used + (size_t)n : size - 1;
}

/* Why a wait on the board for `target` (a phase of collective `seq`) timed
 * out: the members that had not arrived at the collective, and apart from
 * them those that had (published one of its phases) but not this phase,
 * as a rank stopped (SIGSTOP) or descheduled inside it. */
static void
board_timeout(struct nrtemu_net *net, const uint32_t *members, uint32_t g,
              uint64_t seq, uint64_t target, const char *what, char *why,
              size_t size)
{
    uint64_t arrived = (seq << 32) + 1; /* phase 0 of the collective */
    char absent[200] = "", inside[200] = "";
    size_t n_absent = 0, n_inside = 0, used = 0;

    for (uint32_t i = 0; i < g; i++) {
        uint64_t progress = nrtemu__board_progress(net->board, members[i]);
        if (progress >= target) {
            continue;
        }
        /* (whole numbers only: the lists stop short of their ends) */
        if (progress < arrived && n_absent + 12 < sizeof absent) {
            n_absent = text_append(absent, sizeof absent, n_absent, " %u",
                                   members[i]);
        } else if (progress >= arrived && n_inside + 12 < sizeof inside) {
            n_inside = text_append(inside, sizeof inside, n_inside, " %u",
                                   members[i]);
        }
    }
    why[0] = '\0';
    if (n_absent > 0) {
        used = text_append(why, size, used,
                           "rank(s)%s did not reach %.120s (collective "
                           "#%llu)",
                           absent, what, (unsigned long long)seq);
    }
    if (n_inside > 0 && n_absent > 0) {
        used = text_append(why, size, used,
                           ", and rank(s)%s entered it but did not get "
                           "through it,",
                           inside);
    } else if (n_inside > 0) {
        used = text_append(why, size, used,
                           "rank(s)%s entered %.120s (collective #%llu) but "
                           "did not get through it",
                           inside, what, (unsigned long long)seq);
    }
    text_append(why, size, used, " within NEURON_RT_EXEC_TIMEOUT");
}

NRT_STATUS
nrtemu__net_sync(const char *func, struct nrtemu_net *net,
                 const uint32_t *members, uint32_t g,
                 const struct nrtemu_cc_id *id, uint32_t phase,
                 uint64_t deadline_ns, const char *what)
{
    /* (phase < 2^32 - 1) */
    uint64_t seq = id->seq, target = (seq << 32) + phase + 1;
    uint64_t yield_until = 0;
    uint32_t dead;
    char why[384];
    NRT_STATUS st;

    if (atomic_load(&net->failed)) {
        return failed_earlier(func, net, what);
    }
    if (phase == 0) {
        board_say(net, id);
    }
    nrtemu__board_publish(net->board, target);
    for (;;) {
        uint32_t bell = nrtemu__board_bell(net->board);
        bool all = true;
        uint64_t now;
        /* At the first phase, a member at another exchange of this
         * number (a member may be collectives ahead, through ones whose
         * groups leave this rank out: its records say); then, unless all
         * are through, another rank's failure. */
        for (uint32_t i = 0; phase == 0 && i < g; i++) {
            st = board_check(func, net, members[i], id);
            if (st != NRT_SUCCESS) {
                return st;
            }
        }
        for (uint32_t i = 0; i < g && all; i++) {
            all = nrtemu__board_progress(net->board, members[i]) >= target;
        }
        if (all) {
            break;
        }
        st = board_check(func, net, UINT32_MAX, id);
        if (st != NRT_SUCCESS) {
            return st;
        }
        now = nrtemu__monotonic_ns();
        if (yield_until == 0) {
            yield_until = now + BOARD_YIELD_NS;
        }
        if (now < yield_until) {
            sched_yield();
            continue;
        }
        dead = board_dead_rank(net, members, g, target);
        if (dead != UINT32_MAX) {
            return peer_gone(func, net, dead, what, "its end of the stream");
        }
        if (deadline_ns != 0 && now >= deadline_ns) {
            board_timeout(net, members, g, seq, target, what, why, sizeof why);
            return nrtemu__net_fail(func, net, NRT_TIMEOUT, why);
        }
        nrtemu__board_sleep(net->board, bell,
                            deadline_ns != 0 &&
                                    deadline_ns - now < BOARD_NAP_NS
                                ? deadline_ns - now
                                : BOARD_NAP_NS);
    }
    return NRT_SUCCESS;
}

void *
nrtemu__net_area(struct nrtemu_net *net, uint32_t rank, size_t *size)
{
    *size = nrtemu__board_area_size(net->board);
    return nrtemu__board_area(net->board, rank);
}
