/*
 * net.c - a rank's net: opened (rank 0 listens at NEURON_RT_ROOT_COMM_ID,
 * the others send it their hello), failed and closed, and the socket
 * helpers of the rendezvous and the exchange (design in net.h; the world
 * assembles in net_rendezvous.c, the data goes in net_exchange.c).
 *
 * Sockets are non-blocking; every wait is a poll() bounded by the
 * caller's deadline, so nothing waits forever for a rank that is gone.
 * Integers on the wire are big-endian.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collective/board.h"
#include "collective/fabric.h"
#include "collective/net.h"
#include "collective/net_internal.h"
#include "neff/sha256.h"
#include "util/clock.h"
#include "util/env_parse.h"
#include "util/error.h"

#define DEFAULT_WAIT_NS (600ull * 1000000000u)

#define AS_NAME(e, name) name,
static const char *const transport_names[] = {TRANSPORTS(AS_NAME)};

/* ------------------------------------------------------------- helpers */

/* Data sockets: no Nagle delay for small collectives, and buffers large
 * enough that a large one streams without waiting on every window. */
void
nrtemu__net_tune(int fd)
{
    int one = 1, bytes = 4 << 20;

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

int
nrtemu__net_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/* Milliseconds left until `deadline_ns` for poll(): -1 for none. */
int
nrtemu__net_ms_left(uint64_t deadline_ns)
{
    uint64_t now;

    if (deadline_ns == 0) {
        return -1;
    }
    now = nrtemu__monotonic_ns();
    if (now >= deadline_ns) {
        return 0;
    }
    return (int)((deadline_ns - now + 999999) / 1000000 > 3600000
                     ? 3600000
                     : (deadline_ns - now + 999999) / 1000000);
}

/* Wait for `events` on fd: 1 ready, 0 timed out, -1 error. */
int
nrtemu__net_wait_fd(int fd, short events, uint64_t deadline_ns)
{
    struct pollfd p = {fd, events, 0};
    int n;

    do {
        n = poll(&p, 1, nrtemu__net_ms_left(deadline_ns));
    } while (n < 0 && errno == EINTR);
    return n < 0 ? -1 : n;
}

/* All `n` bytes, or -1 (errno set; ETIMEDOUT past the deadline, EPIPE at
 * end of stream). */
int
nrtemu__net_read_full(int fd, void *buf, size_t n, uint64_t deadline_ns)
{
    size_t done = 0;

    while (done < n) {
        ssize_t k = recv(fd, (char *)buf + done, n - done, 0);
        if (k > 0) {
            done += (size_t)k;
        } else if (k == 0) {
            errno = EPIPE;
            return -1;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int w = nrtemu__net_wait_fd(fd, POLLIN, deadline_ns);
            if (w <= 0) {
                errno = w == 0 ? ETIMEDOUT : errno;
                return -1;
            }
        } else if (errno != EINTR) {
            return -1;
        }
    }
    return 0;
}

int
nrtemu__net_write_full(int fd, const void *buf, size_t n, uint64_t deadline_ns)
{
    size_t done = 0;

    while (done < n) {
        ssize_t k = send(fd, (const char *)buf + done, n - done, MSG_NOSIGNAL);
        if (k >= 0) {
            done += (size_t)k;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int w = nrtemu__net_wait_fd(fd, POLLOUT, deadline_ns);
            if (w <= 0) {
                errno = w == 0 ? ETIMEDOUT : errno;
                return -1;
            }
        } else if (errno != EINTR) {
            return -1;
        }
    }
    return 0;
}

/* "host:port" into an IPv4 address. */
static NRT_STATUS
parse_root(const char *func, const char *root, struct sockaddr_in *sa)
{
    char host[80];
    const char *colon = strrchr(root, ':');
    struct addrinfo hints, *res = NULL;
    char *end;
    long port;
    int rc;

    if (colon == NULL || colon == root ||
        (size_t)(colon - root) >= sizeof host) {
        return nrtemu__reject(NRT_INVALID, func,
                              "NEURON_RT_ROOT_COMM_ID='%.80s' is not "
                              "<host>:<port>",
                              root);
    }
    port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || end == colon + 1 || port < 1 || port > 65535) {
        return nrtemu__reject(NRT_INVALID, func,
                              "NEURON_RT_ROOT_COMM_ID='%.80s': the port "
                              "must be 1 to 65535",
                              root);
    }
    memcpy(host, root, (size_t)(colon - root));
    host[colon - root] = '\0';
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0 || res == NULL) {
        if (res != NULL) {
            freeaddrinfo(res);
        }
        return nrtemu__reject(NRT_INVALID, func,
                              "NEURON_RT_ROOT_COMM_ID='%.80s': cannot "
                              "resolve host '%s': %s",
                              root, host, gai_strerror(rc));
    }
    memcpy(sa, res->ai_addr, sizeof *sa);
    sa->sin_port = htons((uint16_t)port);
    freeaddrinfo(res);
    return NRT_SUCCESS;
}

int
nrtemu__net_listener(const struct sockaddr_in *sa, int backlog)
{
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (const struct sockaddr *)sa, sizeof *sa) != 0 ||
        listen(fd, backlog) != 0 || nrtemu__net_nonblocking(fd) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Connect, retrying refusals (the peer may not listen yet) until the
 * deadline: the socket (non-blocking), or -1. */
int
nrtemu__net_connect_retry(const struct sockaddr_in *sa, uint64_t deadline_ns)
{
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            return -1;
        }
        if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0) {
            nrtemu__net_tune(fd);
            if (nrtemu__net_nonblocking(fd) == 0) {
                return fd;
            }
        }
        close(fd);
        if (errno != ECONNREFUSED && errno != EINTR && errno != ENOENT &&
            errno != ECONNRESET && errno != ETIMEDOUT && errno != 0) {
            return -1;
        }
        if (deadline_ns != 0 && nrtemu__monotonic_ns() >= deadline_ns) {
            errno = ETIMEDOUT;
            return -1;
        }
        usleep(20000);
    }
}

/* Stop rank 0's thread that refuses late ranks (started by this
 * process). */
static void
refuser_stop(struct nrtemu_net *net)
{
    char stop = 1;

    if (net->refuser_pid != getpid()) {
        return;
    }
    while (write(net->refuser_stop[1], &stop, 1) < 0 && errno == EINTR) {
    }
    pthread_join(net->refuser, NULL);
    net->refuser_pid = 0;
}

/*
 * A failed net hangs up: its peers' connections end, so that every rank
 * waiting for this one fails at once rather than at its deadline, after
 * the reason when they carry no data; and rank 0's rendezvous listener
 * closes, so that the address serves the next world.  Only the sending
 * side ends: the descriptors stay open, to be drained by
 * nrtemu__net_close() (a close with data unread would reset the
 * connection, and the peer lose what this rank sent before, such as the
 * header that tells it why).
 */
static void
net_hangup(struct nrtemu_net *net)
{
    unsigned char notice[12 + sizeof net->failure];
    size_t n = strlen(net->failure);

    put32(notice, FAIL_MAGIC);
    put32(notice + 4, (uint32_t)net->failure_status);
    put32(notice + 8, (uint32_t)n);
    memcpy(notice + 12, net->failure, n);
    for (uint32_t k = 0; net->peers != NULL && k < net->world; k++) {
        if (net->peers[k] < 0) {
            continue;
        }
        if (net->quiet) {
            /* (best effort: an idle connection takes it at once) */
            nrtemu__net_write_full(net->peers[k], notice, 12 + n,
                                   nrtemu__monotonic_ns() + 100000000u);
        }
        shutdown(net->peers[k], SHUT_WR);
    }
    if (net->rank == 0 && net->root_fd >= 0) {
        refuser_stop(net);
        close(net->root_fd);
        net->root_fd = -1;
    }
}

NRT_STATUS
nrtemu__net_fail(const char *func, struct nrtemu_net *net, NRT_STATUS st,
                 const char *why)
{
    /* Nothing posted may land in a caller's buffer after the failure. */
    nrtemu__fabric_close(net->fab);
    net->fab = NULL;
    if (!atomic_load(&net->failed)) {
        net->failure_status = st;
        snprintf(net->failure, sizeof net->failure, "%s", why);
        atomic_store(&net->failed, true);
        /* The ranks of the board fail at once, with this reason, said as
         * this rank's (a reason relative to its observer, "rank(s) 1 did
         * not reach ... within NEURON_RT_EXEC_TIMEOUT", would read as a
         * late rank's verdict on itself when relayed to it); the others
         * when their connections to this rank end. */
        if (net->board != NULL && net->direct) {
            char relayed[420];
            snprintf(relayed, sizeof relayed,
                     "the collective failed on rank %u: %.360s", net->rank,
                     why);
            nrtemu__board_fail(net->board, (int)st, relayed);
        }
        net_hangup(net);
    }
    return nrtemu__fail(st, func, "rank %u: %.400s", net->rank, why);
}

/* ---------------------------------------------------------------- open */

static NRT_STATUS
parse_transport(const char *func, enum transport *out)
{
    const char *v = getenv("NRTPY_EMU_CC_TRANSPORT");

    *out = TRANSPORT_AUTO;
    if (v == NULL || nrtemu__env_blank(v)) {
        return NRT_SUCCESS;
    }
    for (int k = 0; k < TRANSPORT_COUNT; k++) {
        if (strcasecmp(v, transport_names[k]) == 0) {
            *out = (enum transport)k;
            return NRT_SUCCESS;
        }
    }
    return nrtemu__reject(NRT_INVALID, func,
                          "NRTPY_EMU_CC_TRANSPORT='%.40s' is not auto, "
                          "libfabric or tcp",
                          v);
}

/* The machine this rank is on: ranks of one machine (the same boot of the
 * same kernel and the same emulated machine, NRTPY_EMU_NAMESPACE) use
 * libfabric's shm provider, others tcp. */
static void
machine_id(unsigned char out[16])
{
    char text[256] = "";
    unsigned char digest[32];
    const char *ns = getenv("NRTPY_EMU_NAMESPACE");
    FILE *fp = fopen("/proc/sys/kernel/random/boot_id", "r");
    size_t n = 0;

    if (fp != NULL) {
        n = fread(text, 1, 64, fp);
        fclose(fp);
    }
    if (n == 0) {
        gethostname(text, 64);
        text[64] = '\0';
        n = strlen(text);
    }
    snprintf(text + n, sizeof text - n, "/%.100s", ns != NULL ? ns : "");
    nrtemu__sha256(text, strlen(text), digest);
    memcpy(out, digest, 16);
}

NRT_STATUS
nrtemu__net_open(const char *func, const char *root, const unsigned char *key,
                 uint32_t rank, uint32_t world, uint64_t deadline_ns,
                 struct nrtemu_net **out)
{
    struct nrtemu_net *net = calloc(1, sizeof *net);
    struct sockaddr_in root_sa, any, local;
    socklen_t len = sizeof local;
    unsigned char hello[HELLO_WIRE];
    NRT_STATUS st;

    if (net == NULL) {
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    if (deadline_ns == 0) {
        deadline_ns = nrtemu__monotonic_ns() + DEFAULT_WAIT_NS;
    }
    net->rank = rank;
    net->world = world;
    net->root_fd = net->data_fd = -1;
    net->refuser_stop[0] = net->refuser_stop[1] = -1;
    st = parse_transport(func, &net->transport);
    if (st != NRT_SUCCESS) {
        free(net);
        return st;
    }
    machine_id(net->machine);
    if (net->transport != TRANSPORT_TCP) {
        char why[256];
        net->fabric_ok = nrtemu__fabric_load(why, sizeof why);
        if (!net->fabric_ok) {
            nrtemu__log(NRTEMU_LOG_INFO, func,
                        "rank %u: collectives between processes over TCP: "
                        "%s",
                        rank, why);
        }
    }
    memcpy(net->key, key, sizeof net->key);
    snprintf(net->root, sizeof net->root, "%.80s", root);
    net->peers = malloc(world * sizeof *net->peers);
    if (net->peers == NULL) {
        st = nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
        goto fail;
    }
    for (uint32_t k = 0; k < world; k++) {
        net->peers[k] = -1;
    }
    st = parse_root(func, root, &root_sa);
    if (st != NRT_SUCCESS) {
        goto fail;
    }
    /* The data listener, on every interface, on a port of the system's. */
    memset(&any, 0, sizeof any);
    any.sin_family = AF_INET;
    net->data_fd =
        nrtemu__net_listener(&any, (int)(world < 1024 ? world : 1024));
    if (net->data_fd < 0 ||
        getsockname(net->data_fd, (struct sockaddr *)&local, &len) != 0) {
        st = nrtemu__fail(NRT_RESOURCE, func,
                          "cannot listen for collective data: %s",
                          strerror(errno));
        goto fail;
    }
    net->self.port = local.sin_port;
    if (rank == 0) {
        net->root_fd =
            nrtemu__net_listener(&root_sa, (int)(world < 1024 ? world : 1024));
        if (net->root_fd < 0) {
            st = nrtemu__reject(NRT_INVALID, func,
                                "rank 0 cannot listen on "
                                "NEURON_RT_ROOT_COMM_ID='%.80s': %s",
                                root, strerror(errno));
            goto fail;
        }
        net->self.ip = root_sa.sin_addr.s_addr;
        *out = net;
        return NRT_SUCCESS;
    }
    net->root_fd = nrtemu__net_connect_retry(&root_sa, deadline_ns);
    if (net->root_fd < 0) {
        st = nrtemu__fail(errno == ETIMEDOUT ? NRT_TIMEOUT : NRT_INVALID, func,
                          "rank %u cannot reach rank 0 at "
                          "NEURON_RT_ROOT_COMM_ID='%.80s': %s",
                          rank, root, strerror(errno));
        goto fail;
    }
    len = sizeof local;
    getsockname(net->root_fd, (struct sockaddr *)&local, &len);
    net->self.ip = local.sin_addr.s_addr;
    put32(hello, HELLO_MAGIC);
    put32(hello + 4, PROTO_VERSION);
    put32(hello + 8, world);
    put32(hello + 12, rank);
    memcpy(hello + 16, key, 32);
    memcpy(hello + 48, &net->self.ip, 4);   /* already network order */
    memcpy(hello + 52, &net->self.port, 2); /* so is the port */
    memcpy(hello + 54, net->machine, 16);
    hello[70] = net->fabric_ok;
    if (nrtemu__net_write_full(net->root_fd, hello, sizeof hello,
                               deadline_ns) != 0) {
        st = nrtemu__fail(NRT_TIMEOUT, func,
                          "rank %u cannot send its hello to rank 0 at "
                          "'%.80s': %s",
                          rank, root, strerror(errno));
        goto fail;
    }
    *out = net;
    return NRT_SUCCESS;

fail:
    nrtemu__net_close(net);
    return st;
}

/* A failed net's close waits this long at most for its peers to hang up
 * (net_hangup). */
#define DRAIN_NS 200000000u

void
nrtemu__net_close(struct nrtemu_net *net)
{
    uint64_t drain;

    if (net == NULL) {
        return;
    }
    refuser_stop(net);
    for (int k = 0; k < 2; k++) {
        if (net->refuser_stop[k] >= 0) {
            close(net->refuser_stop[k]);
        }
    }
    if (net->root_fd >= 0) {
        close(net->root_fd);
    }
    if (net->data_fd >= 0) {
        close(net->data_fd);
    }
    /* (after a failure: what the peers still send, until they hang up
     * too, for a while: see net_hangup) */
    drain = atomic_load(&net->failed) ? nrtemu__monotonic_ns() + DRAIN_NS : 0;
    for (uint32_t k = 0; net->peers != NULL && k < net->world; k++) {
        if (net->peers[k] < 0) {
            continue;
        }
        while (drain != 0) {
            char junk[4096];
            ssize_t n = recv(net->peers[k], junk, sizeof junk, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) ||
                (n < 0 && errno == EAGAIN &&
                 nrtemu__net_wait_fd(net->peers[k], POLLIN, drain) <= 0)) {
                break;
            }
        }
        close(net->peers[k]);
    }
    nrtemu__fabric_close(net->fab);
    nrtemu__board_close(net->board);
    free(net->peers);
    free(net);
}

bool
nrtemu__net_failed(const struct nrtemu_net *net)
{
    return atomic_load(&((struct nrtemu_net *)net)->failed);
}

void
nrtemu__net_forget(struct nrtemu_net *net)
{
    if (net == NULL) {
        return;
    }
    /* The descriptors are copies of the parent's (closing them here ends
     * nothing there); its thread is not here; the libfabric endpoint and
     * the board's mapping stay as they are, the parent's. */
    for (int k = 0; k < 2; k++) {
        if (net->refuser_stop[k] >= 0) {
            close(net->refuser_stop[k]);
            net->refuser_stop[k] = -1;
        }
    }
    net->refuser_pid = 0;
    if (net->root_fd >= 0) {
        close(net->root_fd);
        net->root_fd = -1;
    }
    if (net->data_fd >= 0) {
        close(net->data_fd);
        net->data_fd = -1;
    }
    for (uint32_t k = 0; net->peers != NULL && k < net->world; k++) {
        if (net->peers[k] >= 0) {
            close(net->peers[k]);
            net->peers[k] = -1;
        }
    }
    net->fab = NULL;
    net->board = NULL;
    snprintf(net->failure, sizeof net->failure,
             "this process was forked from the one that joined the "
             "communicator");
    net->failure_status = NRT_EXEC_HW_ERR_COLLECTIVES;
    atomic_store(&net->failed, true);
}
