/*
 * net_internal.h - what the files of the net share (internal): the wire
 * constants, the net itself, and the socket helpers.  net.c opens and
 * closes a net, net_rendezvous.c assembles the world at
 * NEURON_RT_ROOT_COMM_ID, net_exchange.c moves the data of collectives
 * (design in net.h).
 */
#ifndef NRTEMU_NET_INTERNAL_H
#define NRTEMU_NET_INTERNAL_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "nrt/nrt.h"

#include "collective/board.h"
#include "collective/fabric.h"
#include "collective/net.h"

#define HELLO_MAGIC 0x4e525443u /* "NRTC" */
#define FAIL_MAGIC 0x4e525446u  /* "NRTF" */
#define PROTO_VERSION 4u
#define HELLO_BYTES 52 /* magic, version, world, rank, key, ip */
/* after it: data port (2), machine id (16), libfabric loads (1) */
#define HELLO_WIRE (HELLO_BYTES + 2 + 16 + 1)

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
enum transport { TRANSPORTS(AS_ENUM) TRANSPORT_COUNT };

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

/* Integers on the wire: big-endian. */
static inline void
put32(unsigned char *p, uint32_t v)
{
    v = htonl(v);
    memcpy(p, &v, 4);
}

static inline uint32_t
get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return ntohl(v);
}

static inline void
put64(unsigned char *p, uint64_t v)
{
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}

static inline uint64_t
get64(const unsigned char *p)
{
    return ((uint64_t)get32(p) << 32) | get32(p + 4);
}

/* Sockets (net.c): non-blocking, every wait a poll() bounded by the
 * caller's deadline (CLOCK_MONOTONIC; 0: none). */

/* Data sockets: no Nagle delay, large buffers. */
void nrtemu__net_tune(int fd);
/* O_NONBLOCK: 0, or -1 (errno set). */
int nrtemu__net_nonblocking(int fd);
/* Milliseconds left until `deadline_ns` for poll(): -1 for none. */
int nrtemu__net_ms_left(uint64_t deadline_ns);
/* Wait for `events` on fd: 1 ready, 0 timed out, -1 error. */
int nrtemu__net_wait_fd(int fd, short events, uint64_t deadline_ns);
/* All `n` bytes, or -1 (errno set; ETIMEDOUT past the deadline, EPIPE at
 * end of stream). */
int nrtemu__net_read_full(int fd, void *buf, size_t n, uint64_t deadline_ns);
/* All `n` bytes, or -1 (errno set; ETIMEDOUT past the deadline). */
int nrtemu__net_write_full(int fd, const void *buf, size_t n,
                           uint64_t deadline_ns);
/* A non-blocking listener on `sa`, or -1 (errno set). */
int nrtemu__net_listener(const struct sockaddr_in *sa, int backlog);
/* Connect, retrying refusals until the deadline: the socket
 * (non-blocking), or -1 (errno set; ETIMEDOUT past the deadline). */
int nrtemu__net_connect_retry(const struct sockaddr_in *sa,
                              uint64_t deadline_ns);

/*
 * Fail the net for good with `st` and `why` (the first failure's reason
 * stays the net's): its libfabric endpoint closes, the ranks of the board
 * hear it, its connections hang up.
 * @return `st`, with `why` recorded for `func` as this rank's.
 */
NRT_STATUS nrtemu__net_fail(const char *func, struct nrtemu_net *net,
                            NRT_STATUS st, const char *why);

/*
 * The rendezvous (net_rendezvous.c), at the first exchange: assemble the
 * world, connect every pair of ranks, choose the transport and the board.
 * Does nothing once the net is ready.
 * @return as nrtemu__net_exchange().
 */
NRT_STATUS nrtemu__net_ensure_ready(const char *func, struct nrtemu_net *net,
                                    uint64_t deadline_ns);

#endif /* NRTEMU_NET_INTERNAL_H */
