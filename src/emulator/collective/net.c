/*
 * net.c - the rendezvous through NEURON_RT_ROOT_COMM_ID and the exchange
 * of collective data between processes (design in net.h).
 *
 * Sockets are non-blocking; every wait is a poll() bounded by the
 * caller's deadline, so nothing waits forever for a rank that is gone.
 * Integers on the wire are big-endian.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "collective/board.h"
#include "collective/cc_id.h"
#include "util/clock.h"
#include "util/env_parse.h"
#include "util/error.h"
#include "collective/fabric.h"
#include "collective/net.h"
#include "neff/sha256.h"

#define HELLO_MAGIC 0x4e525443u /* "NRTC" */
#define DATA_MAGIC 0x4e525444u  /* "NRTD" */
#define FAIL_MAGIC 0x4e525446u  /* "NRTF" */
#define PROTO_VERSION 4u
#define HELLO_BYTES 52 /* magic, version, world, rank, key, ip */
/* after it: data port (2), machine id (16), libfabric loads (1) */
#define HELLO_WIRE (HELLO_BYTES + 2 + 16 + 1)
#define DATA_HDR (16 + NRTEMU_CC_ID_WIRE) /* magic, 0, length (8), id */
#define DEFAULT_WAIT_NS (600ull * 1000000000u)
#define PROV_MAX 64
/* Over libfabric: messages of at most this many bytes (a large transfer
 * streams as several), and at most FAB_SLOTS of them in flight.  The
 * chunk number FAB_ID_CHUNK tags the record of the exchange (cc_id.h). */
#define FAB_CHUNK ((size_t)4 << 20)
#define FAB_MAX_CHUNKS 4095u
#define FAB_ID_CHUNK 4095u
#define FAB_SLOTS 64u

struct peer_addr {
    uint32_t ip; /* network order */
    uint16_t port;
};

/* NRTPY_EMU_CC_TRANSPORT: how the data of collectives goes between
 * processes (rank 0's setting decides for the world). */
#define TRANSPORTS(X)                   \
    X(TRANSPORT_AUTO, "auto")           \
    X(TRANSPORT_LIBFABRIC, "libfabric") \
    X(TRANSPORT_TCP, "tcp")
#define AS_ENUM(e, name) e,
#define AS_NAME(e, name) name,
enum transport { TRANSPORTS(AS_ENUM) TRANSPORT_COUNT };
static const char *const transport_names[] = {TRANSPORTS(AS_NAME)};

struct nrtemu_net {
    uint32_t rank, world;
    unsigned char key[32];
    char root[96]; /* "host:port", for messages */
    int root_fd;   /* rank 0: its rendezvous listener; others: the
                      connection to rank 0 until the table came */
    int data_fd;   /* this rank's data listener */
    /* Rank 0, once the world assembled: a thread that keeps the
     * rendezvous listening and tells a late rank why it is refused, until
     * a byte on refuser_stop[1]; started by this process (not a fork's
     * copy of it). */
    pthread_t refuser;
    int refuser_stop[2];
    pid_t refuser_pid;
    struct peer_addr self;
    int *peers;                 /* world data connections; -1 for this rank */
    unsigned char machine[16];  /* which (emulated) machine: boot id and
                                   NRTPY_EMU_NAMESPACE */
    bool fabric_ok;             /* libfabric loads here, and is allowed */
    enum transport transport;   /* NRTPY_EMU_CC_TRANSPORT */
    struct nrtemu_fabric *fab;  /* the data path once ready, else TCP */
    struct nrtemu_board *board; /* ranks of one machine: shared memory */
    bool direct;                /* all_reduce through the board */
    bool ready;                 /* the world assembled and connected */
    /* The data goes through libfabric: the connections carry nothing but
     * a failure's notice (FAIL_MAGIC, status, length, reason). */
    bool quiet;
    /* Sticky: a failure breaks the net.  Read by any thread
     * (nrtemu__net_failed), written by the one that uses the net. */
    atomic_bool failed;
    NRT_STATUS failure_status;
    char failure[384];
};

/* ------------------------------------------------------------- helpers */

static void
put32(unsigned char *p, uint32_t v)
{
    v = htonl(v);
    memcpy(p, &v, 4);
}

static uint32_t
get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return ntohl(v);
}

static void
put64(unsigned char *p, uint64_t v)
{
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}

static uint64_t
get64(const unsigned char *p)
{
    return ((uint64_t)get32(p) << 32) | get32(p + 4);
}

/* Data sockets: no Nagle delay for small collectives, and buffers large
 * enough that a large one streams without waiting on every window. */
static void
tune(int fd)
{
    int one = 1, bytes = 4 << 20;

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

static int
nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/* Milliseconds left until `deadline_ns` for poll(): -1 for none. */
static int
ms_left(uint64_t deadline_ns)
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
static int
wait_fd(int fd, short events, uint64_t deadline_ns)
{
    struct pollfd p = {fd, events, 0};
    int n;

    do {
        n = poll(&p, 1, ms_left(deadline_ns));
    } while (n < 0 && errno == EINTR);
    return n < 0 ? -1 : n;
}

/* All `n` bytes, or -1 (errno set; ETIMEDOUT past the deadline, EPIPE at
 * end of stream). */
static int
read_full(int fd, void *buf, size_t n, uint64_t deadline_ns)
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
            int w = wait_fd(fd, POLLIN, deadline_ns);
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

static int
write_full(int fd, const void *buf, size_t n, uint64_t deadline_ns)
{
    size_t done = 0;

    while (done < n) {
        ssize_t k = send(fd, (const char *)buf + done, n - done, MSG_NOSIGNAL);
        if (k >= 0) {
            done += (size_t)k;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int w = wait_fd(fd, POLLOUT, deadline_ns);
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

static int
listener(const struct sockaddr_in *sa, int backlog)
{
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (const struct sockaddr *)sa, sizeof *sa) != 0 ||
        listen(fd, backlog) != 0 || nonblocking(fd) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Connect, retrying refusals (the peer may not listen yet) until the
 * deadline: the socket (non-blocking), or -1. */
static int
connect_retry(const struct sockaddr_in *sa, uint64_t deadline_ns)
{
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            return -1;
        }
        if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0) {
            tune(fd);
            if (nonblocking(fd) == 0) {
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
            write_full(net->peers[k], notice, 12 + n,
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

static NRT_STATUS
net_fail(const char *func, struct nrtemu_net *net, NRT_STATUS st,
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
    net->data_fd = listener(&any, (int)(world < 1024 ? world : 1024));
    if (net->data_fd < 0 ||
        getsockname(net->data_fd, (struct sockaddr *)&local, &len) != 0) {
        st = nrtemu__fail(NRT_RESOURCE, func,
                          "cannot listen for collective data: %s",
                          strerror(errno));
        goto fail;
    }
    net->self.port = local.sin_port;
    if (rank == 0) {
        net->root_fd = listener(&root_sa, (int)(world < 1024 ? world : 1024));
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
    net->root_fd = connect_retry(&root_sa, deadline_ns);
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
    if (write_full(net->root_fd, hello, sizeof hello, deadline_ns) != 0) {
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
                 wait_fd(net->peers[k], POLLIN, drain) <= 0)) {
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

/* ----------------------------------------------------------- bootstrap */

/* Refuse a hello, or end the rendezvous: `status` and the reason go
 * back to that rank. */
static void
refuse(int fd, NRT_STATUS status, const char *why, uint64_t deadline_ns)
{
    unsigned char hdr[8];
    size_t n = strlen(why);

    put32(hdr, (uint32_t)status);
    put32(hdr + 4, (uint32_t)n);
    if (write_full(fd, hdr, sizeof hdr, deadline_ns) == 0) {
        write_full(fd, why, n, deadline_ns);
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
            return net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
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
    return rc == 0 ? NRT_SUCCESS
                   : net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
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
        st = net_fail(func, net, NRT_RESOURCE, "out of host memory");
        goto done;
    }
    fabric_start(func, net, prov, addrs, &lens[0]);
    if (lens[0] == 0) {
        bad = 0;
    }
    for (uint32_t k = 1; k < net->world; k++) {
        unsigned char h[4];
        if (read_full(conns[k], h, 4, deadline_ns) != 0 || get32(h) > cap ||
            read_full(conns[k], addrs + k * cap, get32(h), deadline_ns) != 0) {
            snprintf(why, sizeof why,
                     "rank %u left the rendezvous before sending its "
                     "libfabric address",
                     k);
            st = net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
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
        st = net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
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
        if (write_full(conns[k], msg, msg_len, deadline_ns) != 0 &&
            st == NRT_SUCCESS) {
            snprintf(why, sizeof why,
                     "rank %u left the rendezvous before the libfabric "
                     "addresses were sent",
                     k);
            st = net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
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
        st = net_fail(func, net, NRT_RESOURCE, "out of host memory");
        goto done;
    }
    fabric_start(func, net, prov, addrs, &len);
    put32(h, (uint32_t)len);
    if (write_full(net->root_fd, h, 4, deadline_ns) != 0 ||
        write_full(net->root_fd, addrs, len, deadline_ns) != 0 ||
        read_full(net->root_fd, h, 4, deadline_ns) != 0) {
        st = net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
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
        if (read_full(net->root_fd, h, 4, deadline_ns) == 0) {
            n = get32(h) < sizeof text - 1 ? get32(h) : sizeof text - 1;
            if (read_full(net->root_fd, text, n, deadline_ns) != 0) {
                n = 0;
            }
        }
        text[n] = '\0';
        snprintf(why, sizeof why, "rank 0 says: %s", text);
        st = net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
        goto done;
    }
    for (uint32_t k = 0; k < net->world; k++) {
        if (read_full(net->root_fd, h, 4, deadline_ns) != 0 ||
            get32(h) > cap ||
            read_full(net->root_fd, addrs + k * cap, get32(h), deadline_ns) !=
                0) {
            st = net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
                          "the table of libfabric addresses was cut short");
            goto done;
        }
        lens[k] = get32(h);
    }
    if (net->fab == NULL) {
        st = net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
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
        if (read_full(conns[k], &verdict, 1, deadline_ns) != 0) {
            snprintf(why, sizeof why,
                     "rank %u left the rendezvous before saying whether "
                     "it shares memory",
                     k);
            return net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
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
        if (write_full(conns[k], &all, 1, deadline_ns) != 0 &&
            st == NRT_SUCCESS) {
            snprintf(why, sizeof why,
                     "rank %u left the rendezvous before it was told "
                     "whether to share memory",
                     k);
            st = net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
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
    if (write_full(net->root_fd, &verdict, 1, deadline_ns) != 0 ||
        read_full(net->root_fd, &all, 1, deadline_ns) != 0) {
        return net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
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

    nonblocking(fd);
    if (read_full(fd, hello, sizeof hello, soon) != 0 ||
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
                st = net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
                goto done;
            }
            w = wait_fd(net->root_fd, POLLIN, deadline_ns);
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
                st = net_fail(func, net, NRT_TIMEOUT, why);
                goto done;
            }
            continue;
        }
        nonblocking(fd);
        if (read_full(fd, hello, sizeof hello, deadline_ns) != 0 ||
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
        if (write_full(conns[k], msg, msg_len, deadline_ns) != 0) {
            snprintf(why, sizeof why,
                     "rank %u left the rendezvous before the table was sent",
                     k);
            st = net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
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

    if (read_full(net->root_fd, hdr, sizeof hdr, deadline_ns) != 0) {
        snprintf(why, sizeof why,
                 "the world of %u did not assemble at '%s' %s", net->world,
                 net->root,
                 errno == ETIMEDOUT ? "within NEURON_RT_EXEC_TIMEOUT (a rank "
                                      "is missing)"
                                    : "(rank 0 closed the rendezvous)");
        return net_fail(func, net,
                        errno == ETIMEDOUT ? NRT_TIMEOUT
                                           : NRT_EXEC_HW_ERR_COLLECTIVES,
                        why);
    }
    status = get32(hdr);
    n = get32(hdr + 4);
    if (status != 0) {
        size_t k = n < sizeof text - 1 ? n : sizeof text - 1;
        if (read_full(net->root_fd, text, k, deadline_ns) != 0) {
            k = 0;
        }
        text[k] = '\0';
        if (status == NRT_TIMEOUT) {
            snprintf(why, sizeof why, "rank 0 says: %s", text);
            return net_fail(func, net, NRT_TIMEOUT, why);
        }
        snprintf(why, sizeof why, "refused at the rendezvous: %s", text);
        return net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
    }
    if (n != net->world) {
        return net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
                        "a malformed rendezvous table");
    }
    for (uint32_t k = 0; k < n; k++) {
        if (read_full(net->root_fd, entry, sizeof entry, deadline_ns) != 0) {
            return net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
                            "the rendezvous table was cut short");
        }
        memcpy(&table[k].ip, entry, 4);
        memcpy(&table[k].port, entry + 4, 2);
    }
    if (read_full(net->root_fd, hdr, 4, deadline_ns) != 0 ||
        get32(hdr) >= PROV_MAX ||
        read_full(net->root_fd, text, get32(hdr), deadline_ns) != 0) {
        return net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
                        "the rendezvous table was cut short");
    }
    text[get32(hdr)] = '\0';
    if (read_full(net->root_fd, hdr + 4, 4, deadline_ns) != 0 ||
        get32(hdr + 4) >= NRTEMU_BOARD_NAME_MAX ||
        read_full(net->root_fd, board, get32(hdr + 4), deadline_ns) != 0) {
        return net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
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
        net->peers[k] = connect_retry(&sa, deadline_ns);
        if (net->peers[k] < 0 ||
            write_full(net->peers[k], hello, sizeof hello, deadline_ns) != 0) {
            snprintf(why, sizeof why, "cannot connect to rank %u: %s", k,
                     strerror(errno));
            return net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
        }
    }
    while (have < want) {
        unsigned char got[40];
        uint32_t from;
        int fd = accept4(net->data_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            int w = wait_fd(net->data_fd, POLLIN, deadline_ns);
            if (w == 0) {
                snprintf(why, sizeof why,
                         "%u higher rank(s) did not connect within "
                         "NEURON_RT_EXEC_TIMEOUT",
                         want - have);
                return net_fail(func, net, NRT_TIMEOUT, why);
            }
            continue;
        }
        nonblocking(fd);
        tune(fd);
        from = UINT32_MAX;
        if (read_full(fd, got, sizeof got, deadline_ns) == 0 &&
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

static NRT_STATUS
ensure_ready(const char *func, struct nrtemu_net *net, uint64_t deadline_ns)
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

/* ------------------------------------------------------------ exchange */

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
        return net_fail(func, net, (NRT_STATUS)status, why);
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
    return net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
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
        read_full(net->peers[peer], hdr, sizeof hdr,
                  nrtemu__monotonic_ns() + 200000000u) == 0 &&
        get32(hdr) == FAIL_MAGIC && get32(hdr + 8) < sizeof text &&
        read_full(net->peers[peer], text, get32(hdr + 8),
                  nrtemu__monotonic_ns() + 200000000u) == 0) {
        text[get32(hdr + 8)] = '\0';
        return net_fail(func, net, (NRT_STATUS)get32(hdr + 4), text);
    }
    snprintf(why, sizeof why,
             "rank %u closed its connection during %.120s (%s: its process "
             "ended, or its communicator failed?)",
             peer, what, detail);
    return net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
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
    return net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
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
            st = net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
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
                    st = net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
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
            st = net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
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
            st = net_fail(func, net, NRT_TIMEOUT, why);
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
    st = ensure_ready(func, net, deadline_ns);
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
                st = net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
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
                        st = net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES,
                                      why);
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
        wait_ms = ms_left(deadline_ns);
        if (net->board != NULL && net->direct &&
            (wait_ms < 0 || wait_ms > BOARD_LOOK_MS)) {
            wait_ms = BOARD_LOOK_MS;
        }
        do {
            ready = poll(pf, n, wait_ms);
        } while (ready < 0 && errno == EINTR);
        if (ready == 0 && ms_left(deadline_ns) != 0) {
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
            st = net_fail(func, net, NRT_TIMEOUT, why);
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
    st = ensure_ready(func, net, deadline_ns);
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
            return net_fail(func, net, NRT_TIMEOUT, why);
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
