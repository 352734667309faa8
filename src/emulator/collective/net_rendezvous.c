/*
 * net_rendezvous.c - the rendezvous at NEURON_RT_ROOT_COMM_ID, at a
 * rank's first exchange: rank 0 checks the hellos and sends every rank the
 * table (data addresses, the libfabric provider, the board); the ranks
 * then connect pairwise (design in net.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collective/board.h"
#include "collective/fabric.h"
#include "collective/net_internal.h"
#include "util/clock.h"
#include "util/env_parse.h"
#include "util/error.h"

#define PROV_MAX 64

/* Refuse a hello, or end the rendezvous: `status` and the reason go
 * back to that rank. */
static void
refuse(int fd, NRT_STATUS status, const char *why, uint64_t deadline_ns)
{
    unsigned char hdr[8];
    size_t n = strlen(why);

    put32(hdr, (uint32_t)status);
    put32(hdr + 4, (uint32_t)n);
    if (nrtemu__net_write_full(fd, hdr, sizeof hdr, deadline_ns) == 0) {
        nrtemu__net_write_full(fd, why, n, deadline_ns);
    }
    close(fd);
}

/* Rank 0: libfabric's provider for the world, or "" for TCP.  `prov`
 * holds PROV_MAX bytes. */
static NRT_STATUS
choose_provider(const char *func, struct nrtemu_net *net, bool one_machine,
                bool fabric_everywhere, char *prov)
{
    const char *env = getenv("FI_PROVIDER");

    prov[0] = '\0';
    if (net->transport == TRANSPORT_TCP) {
        return NRT_SUCCESS;
    }
    if (!fabric_everywhere) {
        if (net->transport == TRANSPORT_LIBFABRIC) {
            return nrtemu__net_fail(
                func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
                "NRTPY_EMU_CC_TRANSPORT=libfabric, but "
                "libfabric cannot be loaded (or is not allowed) "
                "on every rank: see the ranks' logs");
        }
        return NRT_SUCCESS;
    }
    /* FI_PROVIDER names the provider (its first, when it lists several);
     * an exclusion ("^shm") leaves the choice here. */
    if (env != NULL && !nrtemu__env_blank(env) && env[0] != '^') {
        size_t n = strcspn(env, ",");
        snprintf(prov, PROV_MAX, "%.*s", (int)(n < PROV_MAX ? n : 0), env);
    }
    if (prov[0] == '\0') {
        snprintf(prov, PROV_MAX, "%s", one_machine ? "shm" : "tcp");
    }
    return NRT_SUCCESS;
}

/* This rank's endpoint of `prov`: its address into addr (*len bytes; 0
 * when it cannot open, which is logged). */
static void
fabric_start(const char *func, struct nrtemu_net *net, const char *prov,
             unsigned char *addr, size_t *len)
{
    char why[256];

    *len = NRTEMU_FABRIC_ADDR_MAX;
    if (nrtemu__fabric_open(prov, net->world, &net->fab, addr, len, why,
                            sizeof why) != 0 ||
        *len == 0 || *len > NRTEMU_FABRIC_ADDR_MAX) {
        nrtemu__log(net->transport == TRANSPORT_LIBFABRIC ? NRTEMU_LOG_ERROR
                                                          : NRTEMU_LOG_INFO,
                    func, "rank %u: libfabric's provider '%s': %s", net->rank,
                    prov, why);
        nrtemu__fabric_close(net->fab);
        net->fab = NULL;
        *len = 0;
    }
}

/* Every rank's libfabric address, `cap` bytes each in addrs: into the
 * address vector. */
static NRT_STATUS
fabric_connect(const char *func, struct nrtemu_net *net,
               const unsigned char *addrs, size_t cap, const size_t *lens)
{
    const unsigned char **ptrs = malloc(net->world * sizeof *ptrs);
    char why[256];
    int rc;

    if (ptrs == NULL) {
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    for (uint32_t k = 0; k < net->world; k++) {
        ptrs[k] = addrs + k * cap;
    }
    rc = nrtemu__fabric_insert(net->fab, net->world, ptrs, lens, why,
                               sizeof why);
    free(ptrs);
    return rc == 0
               ? NRT_SUCCESS
               : nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
}

/* Rank 0, after the table: every rank opens the provider and sends its
 * address; rank 0 answers 1 and every address (libfabric for the
 * world), 0 (TCP: a rank could not open it) or 2 and why (it had to). */
static NRT_STATUS
root_fabric_round(const char *func, struct nrtemu_net *net, const int *conns,
                  const char *prov, uint64_t deadline_ns)
{
    const size_t cap = NRTEMU_FABRIC_ADDR_MAX;
    unsigned char *addrs = calloc(net->world, cap), *msg = NULL;
    size_t *lens = calloc(net->world, sizeof *lens), msg_len = 4;
    uint32_t bad = UINT32_MAX;
    NRT_STATUS st = NRT_SUCCESS;
    char why[384];

    msg = malloc(8 + sizeof why + (size_t)net->world * (4 + cap));
    if (addrs == NULL || lens == NULL || msg == NULL) {
        st = nrtemu__net_fail(func, net, NRT_RESOURCE, "out of host memory");
        goto done;
    }
    fabric_start(func, net, prov, addrs, &lens[0]);
    if (lens[0] == 0) {
        bad = 0;
    }
    for (uint32_t k = 1; k < net->world; k++) {
        unsigned char h[4];
        if (nrtemu__net_read_full(conns[k], h, 4, deadline_ns) != 0 ||
            get32(h) > cap ||
            nrtemu__net_read_full(conns[k], addrs + k * cap, get32(h),
                                  deadline_ns) != 0) {
            snprintf(why, sizeof why,
                     "rank %u left the rendezvous before sending its "
                     "libfabric address",
                     k);
            st = nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
            goto done;
        }
        lens[k] = get32(h);
        if (lens[k] == 0 && bad == UINT32_MAX) {
            bad = k;
        }
    }
    if (bad == UINT32_MAX) {
        st = fabric_connect(func, net, addrs, cap, lens);
        if (st != NRT_SUCCESS) {
            bad = 0;
        }
    }
    if (bad == UINT32_MAX) {
        put32(msg, 1);
        for (uint32_t k = 0; k < net->world; k++) {
            put32(msg + msg_len, (uint32_t)lens[k]);
            memcpy(msg + msg_len + 4, addrs + k * cap, lens[k]);
            msg_len += 4 + lens[k];
        }
    } else if (net->transport == TRANSPORT_LIBFABRIC) {
        snprintf(why, sizeof why,
                 "NRTPY_EMU_CC_TRANSPORT=libfabric, but rank %u cannot use "
                 "libfabric's provider '%s' (see its log)",
                 bad, prov);
        put32(msg, 2);
        put32(msg + 4, (uint32_t)strlen(why));
        memcpy(msg + 8, why, strlen(why));
        msg_len = 8 + strlen(why);
        st = nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
    } else {
        put32(msg, 0);
        nrtemu__log(NRTEMU_LOG_INFO, func,
                    "rank %u cannot use libfabric's provider '%s': the world "
                    "exchanges over TCP",
                    bad, prov);
        nrtemu__fabric_close(net->fab);
        net->fab = NULL;
        st = NRT_SUCCESS;
    }
    for (uint32_t k = 1; k < net->world; k++) {
        if (nrtemu__net_write_full(conns[k], msg, msg_len, deadline_ns) != 0 &&
            st == NRT_SUCCESS) {
            snprintf(why, sizeof why,
                     "rank %u left the rendezvous before the libfabric "
                     "addresses were sent",
                     k);
            st = nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
        }
    }
done:
    free(addrs);
    free(lens);
    free(msg);
    return st;
}

/* Another rank's side of root_fabric_round(). */
static NRT_STATUS
rank_fabric_round(const char *func, struct nrtemu_net *net, const char *prov,
                  uint64_t deadline_ns)
{
    const size_t cap = NRTEMU_FABRIC_ADDR_MAX;
    unsigned char *addrs = calloc(net->world, cap), h[4];
    size_t *lens = calloc(net->world, sizeof *lens), len = 0;
    NRT_STATUS st = NRT_SUCCESS;
    char why[384], text[256];

    if (addrs == NULL || lens == NULL) {
        st = nrtemu__net_fail(func, net, NRT_RESOURCE, "out of host memory");
        goto done;
    }
    fabric_start(func, net, prov, addrs, &len);
    put32(h, (uint32_t)len);
    if (nrtemu__net_write_full(net->root_fd, h, 4, deadline_ns) != 0 ||
        nrtemu__net_write_full(net->root_fd, addrs, len, deadline_ns) != 0 ||
        nrtemu__net_read_full(net->root_fd, h, 4, deadline_ns) != 0) {
        st = nrtemu__net_fail(
            func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
            "rank 0 closed the rendezvous during the exchange of "
            "libfabric addresses");
        goto done;
    }
    if (get32(h) == 0) {
        nrtemu__fabric_close(net->fab);
        net->fab = NULL;
        goto done;
    }
    if (get32(h) == 2) {
        size_t n = 0;
        if (nrtemu__net_read_full(net->root_fd, h, 4, deadline_ns) == 0) {
            n = get32(h) < sizeof text - 1 ? get32(h) : sizeof text - 1;
            if (nrtemu__net_read_full(net->root_fd, text, n, deadline_ns) !=
                0) {
                n = 0;
            }
        }
        text[n] = '\0';
        snprintf(why, sizeof why, "rank 0 says: %s", text);
        st = nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
        goto done;
    }
    for (uint32_t k = 0; k < net->world; k++) {
        if (nrtemu__net_read_full(net->root_fd, h, 4, deadline_ns) != 0 ||
            get32(h) > cap ||
            nrtemu__net_read_full(net->root_fd, addrs + k * cap, get32(h),
                                  deadline_ns) != 0) {
            st = nrtemu__net_fail(
                func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
                "the table of libfabric addresses was cut short");
            goto done;
        }
        lens[k] = get32(h);
    }
    if (net->fab == NULL) {
        st = nrtemu__net_fail(
            func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
            "rank 0 chose libfabric, which this rank cannot open");
        goto done;
    }
    st = fabric_connect(func, net, addrs, cap, lens);
done:
    free(addrs);
    free(lens);
    return st;
}

/*
 * The ranks of one machine: rank 0 names a board in the table (board.h);
 * every other rank maps it and says 1 (it could) or 0; rank 0 answers
 * every rank 1 (all_reduce through the board) or 0 (not).
 * Then the board's name goes: only the mappings keep it.
 */
static void
board_start(const char *func, struct nrtemu_net *net, char *name)
{
    char why[256];

    name[0] = '\0';
    if (nrtemu__board_create(net->world, name, &net->board, why, sizeof why) !=
        0) {
        nrtemu__log(NRTEMU_LOG_INFO, func,
                    "rank 0: no shared memory between the ranks: %s", why);
        net->board = NULL;
        name[0] = '\0';
    }
}

static NRT_STATUS
root_board_round(const char *func, struct nrtemu_net *net, const int *conns,
                 uint64_t deadline_ns)
{
    unsigned char verdict, all = 1;
    char why[384];
    NRT_STATUS st = NRT_SUCCESS;

    for (uint32_t k = 1; k < net->world; k++) {
        if (nrtemu__net_read_full(conns[k], &verdict, 1, deadline_ns) != 0) {
            snprintf(why, sizeof why,
                     "rank %u left the rendezvous before saying whether "
                     "it shares memory",
                     k);
            return nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
                                    why);
        }
        if (verdict != 1) {
            if (all) {
                nrtemu__log(NRTEMU_LOG_INFO, func,
                            "rank %u cannot map the shared memory (see its "
                            "log): all_reduce goes through %s",
                            k, net->fab != NULL ? "libfabric" : "TCP");
            }
            all = 0;
        }
    }
    for (uint32_t k = 1; k < net->world; k++) {
        if (nrtemu__net_write_full(conns[k], &all, 1, deadline_ns) != 0 &&
            st == NRT_SUCCESS) {
            snprintf(why, sizeof why,
                     "rank %u left the rendezvous before it was told "
                     "whether to share memory",
                     k);
            st = nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
        }
    }
    nrtemu__board_unlink(net->board);
    net->direct = all && st == NRT_SUCCESS;
    return st;
}

static NRT_STATUS
rank_board_round(const char *func, struct nrtemu_net *net, const char *name,
                 uint64_t deadline_ns)
{
    unsigned char verdict = 0, all = 0;
    char why[256];

    if (nrtemu__board_attach(name, net->world, net->rank, &net->board, why,
                             sizeof why) != 0) {
        nrtemu__log(NRTEMU_LOG_INFO, func, "rank %u: %s", net->rank, why);
        net->board = NULL;
    } else {
        verdict = 1;
    }
    if (nrtemu__net_write_full(net->root_fd, &verdict, 1, deadline_ns) != 0 ||
        nrtemu__net_read_full(net->root_fd, &all, 1, deadline_ns) != 0) {
        return nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
                                "rank 0 closed the rendezvous while the ranks "
                                "checked for shared memory");
    }
    net->direct = all == 1 && net->board != NULL;
    return NRT_SUCCESS;
}

/* Rank 0, once the world is complete: a hello on `fd` hears why it comes
 * too late (its rank id is taken; or it is of another world or NEFF). */
static void
refuse_late(const struct nrtemu_net *net, int fd)
{
    unsigned char hello[HELLO_WIRE];
    uint64_t soon = nrtemu__monotonic_ns() + 1000000000u;
    char why[256];

    nrtemu__net_nonblocking(fd);
    if (nrtemu__net_read_full(fd, hello, sizeof hello, soon) != 0 ||
        get32(hello) != HELLO_MAGIC || get32(hello + 4) != PROTO_VERSION) {
        close(fd); /* not one of ours */
        return;
    }
    if (get32(hello + 8) != net->world ||
        memcmp(hello + 16, net->key, 32) != 0) {
        snprintf(why, sizeof why,
                 "rank %u came to the rendezvous of another world (rank 0 "
                 "has a world of %u assembled, of another size or kind)",
                 get32(hello + 12), net->world);
    } else {
        snprintf(why, sizeof why,
                 "rank id %u is claimed twice in the world of %u (the world "
                 "assembled without this one)",
                 get32(hello + 12), net->world);
    }
    refuse(fd, NRT_EXEC_HW_ERR_COLLECTIVES, why, soon);
}

static void *
refuser_main(void *arg)
{
    struct nrtemu_net *net = arg;

    for (;;) {
        struct pollfd p[2] = {{net->root_fd, POLLIN, 0},
                              {net->refuser_stop[0], POLLIN, 0}};
        int fd;
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            return NULL;
        }
        if (p[1].revents != 0) {
            return NULL;
        }
        fd = accept4(net->root_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0) {
            refuse_late(net, fd);
        }
    }
}

/* Keep the rendezvous listening (rank 0): 0, or -1 when it cannot. */
static int
refuser_start(struct nrtemu_net *net)
{
    if (pipe2(net->refuser_stop, O_CLOEXEC) != 0) {
        return -1;
    }
    if (pthread_create(&net->refuser, NULL, refuser_main, net) != 0) {
        close(net->refuser_stop[0]);
        close(net->refuser_stop[1]);
        net->refuser_stop[0] = net->refuser_stop[1] = -1;
        return -1;
    }
    net->refuser_pid = getpid();
    return 0;
}

/* Rank 0: take hellos until the world is complete, then send the table. */
static NRT_STATUS
root_assemble(const char *func, struct nrtemu_net *net, uint64_t deadline_ns,
              struct peer_addr *table)
{
    int *conns = malloc(net->world * sizeof *conns);
    uint32_t have = 1;
    unsigned char *msg = NULL;
    char prov[PROV_MAX] = "";
    char board[NRTEMU_BOARD_NAME_MAX] = "";
    size_t msg_len =
        8 + (size_t)net->world * 6 + 4 + PROV_MAX + 4 + NRTEMU_BOARD_NAME_MAX;
    bool one_machine = true, fabric_everywhere = net->fabric_ok;
    NRT_STATUS st = NRT_SUCCESS;
    char why[384];

    if (conns == NULL) {
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    for (uint32_t k = 0; k < net->world; k++) {
        conns[k] = -1;
    }
    table[0] = net->self;
    while (have < net->world) {
        unsigned char hello[HELLO_WIRE];
        uint32_t world, rank;
        int fd = accept4(net->root_fd, NULL, NULL, SOCK_CLOEXEC), w;
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                snprintf(why, sizeof why, "the rendezvous at '%s' failed: %s",
                         net->root, strerror(errno));
                st = nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
                                      why);
                goto done;
            }
            w = nrtemu__net_wait_fd(net->root_fd, POLLIN, deadline_ns);
            if (w == 0) {
                size_t used = 0;
                used += (size_t)snprintf(why, sizeof why, "rank%s",
                                         net->world - have > 1 ? "s" : "");
                for (uint32_t k = 1; k < net->world && used < 200; k++) {
                    if (conns[k] < 0) {
                        used += (size_t)snprintf(why + used, sizeof why - used,
                                                 " %u", k);
                    }
                }
                snprintf(why + used, sizeof why - used,
                         " did not join the rendezvous at '%s' within "
                         "NEURON_RT_EXEC_TIMEOUT",
                         net->root);
                /* The ranks that came learn why from rank 0. */
                for (uint32_t k = 1; k < net->world; k++) {
                    if (conns[k] >= 0) {
                        refuse(conns[k], NRT_TIMEOUT, why,
                               nrtemu__monotonic_ns() + 1000000000u);
                        conns[k] = -1;
                    }
                }
                st = nrtemu__net_fail(func, net, NRT_TIMEOUT, why);
                goto done;
            }
            continue;
        }
        nrtemu__net_nonblocking(fd);
        if (nrtemu__net_read_full(fd, hello, sizeof hello, deadline_ns) != 0 ||
            get32(hello) != HELLO_MAGIC || get32(hello + 4) != PROTO_VERSION) {
            close(fd); /* not one of ours */
            continue;
        }
        world = get32(hello + 8);
        rank = get32(hello + 12);
        if (world != net->world) {
            snprintf(why, sizeof why,
                     "rank %u says the world has %u ranks, rank 0 says %u",
                     rank, world, net->world);
            refuse(fd, NRT_EXEC_HW_ERR_COLLECTIVES, why, deadline_ns);
            continue;
        }
        if (memcmp(hello + 16, net->key, 32) != 0) {
            snprintf(why, sizeof why,
                     "rank %u comes for another kind of communicator than "
                     "rank 0",
                     rank);
            refuse(fd, NRT_EXEC_HW_ERR_COLLECTIVES, why, deadline_ns);
            continue;
        }
        if (rank == 0 || rank >= net->world || conns[rank] >= 0) {
            snprintf(why, sizeof why,
                     "rank id %u is claimed twice in the world of %u", rank,
                     net->world);
            refuse(fd, NRT_EXEC_HW_ERR_COLLECTIVES, why, deadline_ns);
            continue;
        }
        conns[rank] = fd;
        memcpy(&table[rank].ip, hello + 48, 4);
        memcpy(&table[rank].port, hello + 52, 2);
        if (memcmp(hello + 54, net->machine, 16) != 0) {
            one_machine = false;
        }
        fabric_everywhere = fabric_everywhere && hello[70] != 0;
        have++;
    }
    /* Ranks already waiting beyond the world (a rank id claimed twice)
     * learn it now rather than from a closed connection (and later ones
     * from the refuser thread). */
    for (;;) {
        int fd = accept4(net->root_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            break;
        }
        refuse_late(net, fd);
    }
    msg = malloc(msg_len);
    if (msg == NULL) {
        st = nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
        goto done;
    }
    st = choose_provider(func, net, one_machine, fabric_everywhere, prov);
    if (st != NRT_SUCCESS) {
        for (uint32_t k = 1; k < net->world; k++) {
            refuse(conns[k], NRT_EXEC_HW_ERR_COLLECTIVES, net->failure,
                   deadline_ns);
            conns[k] = -1;
        }
        goto done;
    }
    /* One machine: the board, unless a transport was forced. */
    if (one_machine && net->transport == TRANSPORT_AUTO &&
        net->world <= NRTEMU_BOARD_MAX_RANKS) {
        board_start(func, net, board);
    }
    put32(msg, 0);
    put32(msg + 4, net->world);
    for (uint32_t k = 0; k < net->world; k++) {
        memcpy(msg + 8 + 6 * k, &table[k].ip, 4);
        memcpy(msg + 12 + 6 * k, &table[k].port, 2);
    }
    /* then the libfabric provider to try ("" for TCP) */
    put32(msg + 8 + 6 * net->world, (uint32_t)strlen(prov));
    memcpy(msg + 12 + 6 * net->world, prov, strlen(prov));
    msg_len = 12 + 6 * (size_t)net->world + strlen(prov);
    /* then the board's name ("" for none) */
    put32(msg + msg_len, (uint32_t)strlen(board));
    memcpy(msg + msg_len + 4, board, strlen(board));
    msg_len += 4 + strlen(board);
    for (uint32_t k = 1; k < net->world; k++) {
        if (nrtemu__net_write_full(conns[k], msg, msg_len, deadline_ns) != 0) {
            snprintf(why, sizeof why,
                     "rank %u left the rendezvous before the table was sent",
                     k);
            st = nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
            goto done;
        }
    }
    if (prov[0] != '\0') {
        st = root_fabric_round(func, net, conns, prov, deadline_ns);
    }
    if (st == NRT_SUCCESS && net->board != NULL) {
        st = root_board_round(func, net, conns, deadline_ns);
    }
done:
    /* Every rank that maps the board has done so, or the world failed:
     * its name goes now (on every path: a name in /dev/shm outlives the
     * processes). */
    nrtemu__board_unlink(net->board);
    for (uint32_t k = 0; k < net->world; k++) {
        if (conns[k] >= 0) {
            close(conns[k]);
        }
    }
    free(conns);
    free(msg);
    return st;
}

/* Another rank: the table from rank 0, or its refusal. */
static NRT_STATUS
receive_table(const char *func, struct nrtemu_net *net, uint64_t deadline_ns,
              struct peer_addr *table)
{
    unsigned char hdr[8], entry[6];
    char why[384], text[256], board[NRTEMU_BOARD_NAME_MAX];
    uint32_t status, n;
    NRT_STATUS st;

    if (nrtemu__net_read_full(net->root_fd, hdr, sizeof hdr, deadline_ns) !=
        0) {
        snprintf(why, sizeof why,
                 "the world of %u did not assemble at '%s' %s", net->world,
                 net->root,
                 errno == ETIMEDOUT ? "within NEURON_RT_EXEC_TIMEOUT (a rank "
                                      "is missing)"
                                    : "(rank 0 closed the rendezvous)");
        return nrtemu__net_fail(
            func, net,
            errno == ETIMEDOUT ? NRT_TIMEOUT : NRT_EXEC_HW_ERR_COLLECTIVES,
            why);
    }
    status = get32(hdr);
    n = get32(hdr + 4);
    if (status != 0) {
        size_t k = n < sizeof text - 1 ? n : sizeof text - 1;
        if (nrtemu__net_read_full(net->root_fd, text, k, deadline_ns) != 0) {
            k = 0;
        }
        text[k] = '\0';
        if (status == NRT_TIMEOUT) {
            snprintf(why, sizeof why, "rank 0 says: %s", text);
            return nrtemu__net_fail(func, net, NRT_TIMEOUT, why);
        }
        snprintf(why, sizeof why, "refused at the rendezvous: %s", text);
        return nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
    }
    if (n != net->world) {
        return nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
                                "a malformed rendezvous table");
    }
    for (uint32_t k = 0; k < n; k++) {
        if (nrtemu__net_read_full(net->root_fd, entry, sizeof entry,
                                  deadline_ns) != 0) {
            return nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
                                    "the rendezvous table was cut short");
        }
        memcpy(&table[k].ip, entry, 4);
        memcpy(&table[k].port, entry + 4, 2);
    }
    if (nrtemu__net_read_full(net->root_fd, hdr, 4, deadline_ns) != 0 ||
        get32(hdr) >= PROV_MAX ||
        nrtemu__net_read_full(net->root_fd, text, get32(hdr), deadline_ns) !=
            0) {
        return nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
                                "the rendezvous table was cut short");
    }
    text[get32(hdr)] = '\0';
    if (nrtemu__net_read_full(net->root_fd, hdr + 4, 4, deadline_ns) != 0 ||
        get32(hdr + 4) >= NRTEMU_BOARD_NAME_MAX ||
        nrtemu__net_read_full(net->root_fd, board, get32(hdr + 4),
                              deadline_ns) != 0) {
        return nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
                                "the rendezvous table was cut short");
    }
    board[get32(hdr + 4)] = '\0';
    st = text[0] != '\0' ? rank_fabric_round(func, net, text, deadline_ns)
                         : NRT_SUCCESS;
    if (st == NRT_SUCCESS && board[0] != '\0') {
        st = rank_board_round(func, net, board, deadline_ns);
    }
    return st;
}

/* Connect to every lower rank, accept every higher one. */
static NRT_STATUS
connect_mesh(const char *func, struct nrtemu_net *net, uint64_t deadline_ns,
             const struct peer_addr *table)
{
    unsigned char hello[40];
    uint32_t have = 0, want = net->world - 1 - net->rank;
    char why[384];

    put32(hello, HELLO_MAGIC);
    put32(hello + 4, net->rank);
    memcpy(hello + 8, net->key, 32);
    for (uint32_t k = 0; k < net->rank; k++) {
        struct sockaddr_in sa;
        memset(&sa, 0, sizeof sa);
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = table[k].ip;
        sa.sin_port = table[k].port;
        net->peers[k] = nrtemu__net_connect_retry(&sa, deadline_ns);
        if (net->peers[k] < 0 ||
            nrtemu__net_write_full(net->peers[k], hello, sizeof hello,
                                   deadline_ns) != 0) {
            snprintf(why, sizeof why, "cannot connect to rank %u: %s", k,
                     strerror(errno));
            return nrtemu__net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
                                    why);
        }
    }
    while (have < want) {
        unsigned char got[40];
        uint32_t from;
        int fd = accept4(net->data_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            int w = nrtemu__net_wait_fd(net->data_fd, POLLIN, deadline_ns);
            if (w == 0) {
                snprintf(why, sizeof why,
                         "%u higher rank(s) did not connect within "
                         "NEURON_RT_EXEC_TIMEOUT",
                         want - have);
                return nrtemu__net_fail(func, net, NRT_TIMEOUT, why);
            }
            continue;
        }
        nrtemu__net_nonblocking(fd);
        nrtemu__net_tune(fd);
        from = UINT32_MAX;
        if (nrtemu__net_read_full(fd, got, sizeof got, deadline_ns) == 0 &&
            get32(got) == HELLO_MAGIC && memcmp(got + 8, net->key, 32) == 0) {
            from = get32(got + 4);
        }
        if (from <= net->rank || from >= net->world || net->peers[from] >= 0) {
            close(fd);
            continue;
        }
        net->peers[from] = fd;
        have++;
    }
    return NRT_SUCCESS;
}

NRT_STATUS
nrtemu__net_ensure_ready(const char *func, struct nrtemu_net *net,
                         uint64_t deadline_ns)
{
    struct peer_addr *table;
    NRT_STATUS st;

    if (net->ready) {
        return NRT_SUCCESS;
    }
    table = calloc(net->world, sizeof *table);
    if (table == NULL) {
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    if (net->rank == 0) {
        st = root_assemble(func, net, deadline_ns, table);
    } else {
        st = receive_table(func, net, deadline_ns, table);
    }
    if (st == NRT_SUCCESS) {
        /* The bootstrap connections close: only data from now on.  Rank
         * 0's listener stays, for late ranks to hear why they are
         * refused. */
        if (net->rank != 0 || refuser_start(net) != 0) {
            close(net->root_fd);
            net->root_fd = -1;
        }
        /* (over libfabric too: a closed connection says a rank died) */
        st = connect_mesh(func, net, deadline_ns, table);
    }
    free(table);
    net->ready = st == NRT_SUCCESS;
    net->quiet = net->ready && net->fab != NULL;
    if (net->ready) {
        nrtemu__log(NRTEMU_LOG_INFO, func,
                    "rank %u of %u: collective data between processes "
                    "through %s%s%s",
                    net->rank, net->world,
                    net->fab != NULL ? "libfabric, provider " : "TCP",
                    net->fab != NULL ? nrtemu__fabric_name(net->fab) : "",
                    net->direct ? "; all_reduce through shared memory" : "");
    }
    return st;
}
