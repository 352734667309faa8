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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "error.h"
#include "net.h"

#define HELLO_MAGIC 0x4e525443u /* "NRTC" */
#define DATA_MAGIC 0x4e525444u  /* "NRTD" */
#define PROTO_VERSION 1u
#define HELLO_BYTES 52 /* magic, version, world, rank, key, ip, port */
#define DATA_HDR 24    /* magic, 0, seq (8), length (8) */
#define DEFAULT_WAIT_NS (600ull * 1000000000u)

struct peer_addr {
    uint32_t ip; /* network order */
    uint16_t port;
};

struct nrtemu_net {
    uint32_t rank, world;
    unsigned char key[32];
    char root[96]; /* "host:port", for messages */
    int root_fd;   /* rank 0: its rendezvous listener; others: the
                      connection to rank 0 until the table came */
    int data_fd;   /* this rank's data listener */
    struct peer_addr self;
    int *peers;  /* world data connections; -1 for this rank */
    bool ready;  /* the world assembled and connected */
    bool failed; /* sticky: a failure breaks the net */
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

static NRT_STATUS
net_fail(const char *func, struct nrtemu_net *net, NRT_STATUS st,
         const char *why)
{
    if (!net->failed) {
        net->failed = true;
        net->failure_status = st;
        snprintf(net->failure, sizeof net->failure, "%s", why);
    }
    return nrtemu__fail(st, func, "rank %u: %.400s", net->rank, why);
}

/* ---------------------------------------------------------------- open */

NRT_STATUS
nrtemu__net_open(const char *func, const char *root, const unsigned char *key,
                 uint32_t rank, uint32_t world, uint64_t deadline_ns,
                 struct nrtemu_net **out)
{
    struct nrtemu_net *net = calloc(1, sizeof *net);
    struct sockaddr_in root_sa, any, local;
    socklen_t len = sizeof local;
    unsigned char hello[HELLO_BYTES];
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
    memcpy(hello + 48, &net->self.ip, 4); /* already network order */
    if (write_full(net->root_fd, hello, sizeof hello, deadline_ns) != 0) {
        st = nrtemu__fail(NRT_TIMEOUT, func,
                          "rank %u cannot send its hello to rank 0 at "
                          "'%.80s': %s",
                          rank, root, strerror(errno));
        goto fail;
    }
    /* (the data port follows the hello: 2 bytes, network order) */
    if (write_full(net->root_fd, &net->self.port, 2, deadline_ns) != 0) {
        st = nrtemu__fail(NRT_TIMEOUT, func, "rank %u: hello to '%.80s': %s",
                          rank, root, strerror(errno));
        goto fail;
    }
    *out = net;
    return NRT_SUCCESS;

fail:
    nrtemu__net_close(net);
    return st;
}

void
nrtemu__net_close(struct nrtemu_net *net)
{
    if (net == NULL) {
        return;
    }
    if (net->root_fd >= 0) {
        close(net->root_fd);
    }
    if (net->data_fd >= 0) {
        close(net->data_fd);
    }
    for (uint32_t k = 0; net->peers != NULL && k < net->world; k++) {
        if (net->peers[k] >= 0) {
            close(net->peers[k]);
        }
    }
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

/* Rank 0: take hellos until the world is complete, then send the table. */
static NRT_STATUS
root_assemble(const char *func, struct nrtemu_net *net, uint64_t deadline_ns,
              struct peer_addr *table)
{
    int *conns = malloc(net->world * sizeof *conns);
    uint32_t have = 1;
    unsigned char *msg = NULL;
    size_t msg_len = 8 + (size_t)net->world * 6;
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
        unsigned char hello[HELLO_BYTES + 2];
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
                     "rank %u loaded another NEFF than rank 0 (the SHA-256 "
                     "differ)",
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
        have++;
    }
    /* Ranks already waiting beyond the world (a rank id claimed twice)
     * learn it now rather than from a closed connection. */
    for (;;) {
        unsigned char hello[HELLO_BYTES + 2];
        int fd = accept4(net->root_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            break;
        }
        nonblocking(fd);
        if (read_full(fd, hello, sizeof hello,
                      nrtemu__monotonic_ns() + 1000000000u) == 0) {
            snprintf(why, sizeof why,
                     "rank id %u is claimed twice in the world of %u "
                     "(the world assembled without this one)",
                     get32(hello + 12), net->world);
            refuse(fd, NRT_EXEC_HW_ERR_COLLECTIVES, why, deadline_ns);
        } else {
            close(fd);
        }
    }
    msg = malloc(msg_len);
    if (msg == NULL) {
        st = nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
        goto done;
    }
    put32(msg, 0);
    put32(msg + 4, net->world);
    for (uint32_t k = 0; k < net->world; k++) {
        memcpy(msg + 8 + 6 * k, &table[k].ip, 4);
        memcpy(msg + 12 + 6 * k, &table[k].port, 2);
    }
    for (uint32_t k = 1; k < net->world; k++) {
        if (write_full(conns[k], msg, msg_len, deadline_ns) != 0) {
            snprintf(why, sizeof why,
                     "rank %u left the rendezvous before the table was sent",
                     k);
            st = net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
            goto done;
        }
    }
done:
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
    char why[384], text[256];
    uint32_t status, n;

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
    return NRT_SUCCESS;
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
        /* The bootstrap connection closes: only data from now on. */
        close(net->root_fd);
        net->root_fd = -1;
        st = connect_mesh(func, net, deadline_ns, table);
    }
    free(table);
    net->ready = st == NRT_SUCCESS;
    return st;
}

/* ------------------------------------------------------------ exchange */

struct xfer {
    uint32_t peer;
    bool recv;
    size_t done;
    unsigned char hdr[DATA_HDR];
    void *buf;
    size_t len;
};

/* Progress one transfer; 1 when complete, 0 for more, -1 failed. */
static int
xfer_step(struct nrtemu_net *net, struct xfer *x, uint64_t seq)
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
        if (x->recv && x->done == DATA_HDR &&
            (get32(x->hdr) != DATA_MAGIC || get64(x->hdr + 8) != seq ||
             get64(x->hdr + 16) != x->len)) {
            errno = EPROTO;
            return -1;
        }
    }
    return 1;
}

NRT_STATUS
nrtemu__net_exchange(const char *func, struct nrtemu_net *net, uint64_t seq,
                     const uint32_t *send_to, uint32_t n_send,
                     const void *const *sbufs, const size_t *slens,
                     const uint32_t *recv_from, uint32_t n_recv,
                     void *const *rbufs, const size_t *rlens,
                     uint64_t deadline_ns, const char *what)
{
    uint32_t n = n_send + n_recv, left = n;
    struct xfer *xs;
    struct pollfd *pf;
    char why[384];
    NRT_STATUS st = NRT_SUCCESS;

    if (net->failed) {
        return nrtemu__fail(NRT_EXEC_HW_ERR_COLLECTIVES, func,
                            "%.120s on rank %u: the communicator failed "
                            "earlier (%.240s); load the models again",
                            what, net->rank, net->failure);
    }
    st = ensure_ready(func, net, deadline_ns);
    if (st != NRT_SUCCESS || n == 0) {
        return st;
    }
    xs = calloc(n, sizeof *xs);
    pf = calloc(n, sizeof *pf);
    if (xs == NULL || pf == NULL) {
        free(xs);
        free(pf);
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    for (uint32_t i = 0; i < n; i++) {
        struct xfer *x = &xs[i];
        x->recv = i >= n_send;
        x->peer = x->recv ? recv_from[i - n_send] : send_to[i];
        x->buf = x->recv ? rbufs[i - n_send] : (void *)sbufs[i];
        x->len = x->recv ? rlens[i - n_send] : slens[i];
        if (!x->recv) {
            put32(x->hdr, DATA_MAGIC);
            put32(x->hdr + 4, 0);
            put64(x->hdr + 8, seq);
            put64(x->hdr + 16, x->len);
        }
        pf[i].fd = net->peers[x->peer];
        pf[i].events = x->recv ? POLLIN : POLLOUT;
    }
    while (left > 0) {
        int ready;
        for (uint32_t i = 0; i < n; i++) {
            int r;
            if (pf[i].fd < 0) {
                continue;
            }
            r = xfer_step(net, &xs[i], seq);
            if (r < 0) {
                if (errno == EPROTO) {
                    snprintf(why, sizeof why,
                             "rank %u sent the data of another collective "
                             "during %.120s: the ranks ran different "
                             "programs",
                             xs[i].peer, what);
                } else {
                    snprintf(why, sizeof why,
                             "rank %u closed its connection during %.120s "
                             "(%s: its process ended?)",
                             xs[i].peer, what, strerror(errno));
                }
                st = net_fail(func, net, NRT_EXEC_HW_ERR_COLLECTIVES, why);
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
        do {
            ready = poll(pf, n, ms_left(deadline_ns));
        } while (ready < 0 && errno == EINTR);
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
                     what, (unsigned long long)seq);
            st = net_fail(func, net, NRT_TIMEOUT, why);
            goto done;
        }
    }
done:
    free(xs);
    free(pf);
    return st;
}
