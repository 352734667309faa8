/*
 * fabric.h - libfabric, loaded at run time, for the collective data
 * between processes (internal; used by net.c only).
 *
 * libfabric.so.1 is opened with dlopen() the first time it is wanted, so
 * that libnrt.so.1 has no link dependency on it: without it (or when the
 * build had no <rdma/fabric.h>), nrtemu__fabric_load() says why and net.c
 * stays on TCP.  One reliable-datagram (FI_EP_RDM) endpoint per rank,
 * tagged messages, one completion queue read without a wait object (the
 * caller sleeps between reads, bounded by its deadline).  The shm
 * provider's endpoints are segments in /dev/shm under names of this
 * library's; opening or closing any endpoint removes those of dead
 * processes (the rules in fabric.c), which a rank killed with SIGKILL
 * leaves behind.
 */
#ifndef NRTEMU_FABRIC_H
#define NRTEMU_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nrtemu_fabric;

#define NRTEMU_FABRIC_ADDR_MAX 256

/*
 * Load libfabric once per process.  @return true when it is usable; else
 * false with the reason in `why`.  Thread-safe.
 */
bool nrtemu__fabric_load(char *why, size_t why_size);

/*
 * An endpoint of provider `prov` ("shm", "tcp", "efa", ...; libfabric
 * itself also filters by FI_PROVIDER) with room for `world` addresses;
 * its address goes into addr (*addr_len bytes, at most
 * NRTEMU_FABRIC_ADDR_MAX).  @return 0, or -1 with the reason in `why`.
 * Ownership: *out is the caller's (nrtemu__fabric_close()).  One thread
 * at a time per endpoint.
 */
int nrtemu__fabric_open(const char *prov, uint32_t world,
                        struct nrtemu_fabric **out, unsigned char *addr,
                        size_t *addr_len, char *why, size_t why_size);

/* The provider's name as libfabric gives it ("tcp;ofi_rxm"). */
const char *nrtemu__fabric_name(const struct nrtemu_fabric *f);

/* The largest message the provider takes. */
size_t nrtemu__fabric_max_msg(const struct nrtemu_fabric *f);

/* The addresses of the world's ranks, in rank order.  @return 0 or -1. */
int nrtemu__fabric_insert(struct nrtemu_fabric *f, uint32_t world,
                          const unsigned char *const *addrs,
                          const size_t *lens, char *why, size_t why_size);

/*
 * Post a tagged send to (or receive from) rank `peer`; `ctx` comes back
 * from nrtemu__fabric_poll() when it completes.  `ctx` must stay valid,
 * and begin with NRTEMU_FABRIC_CTX_BYTES bytes the provider may use.
 * @return 0, 1 when the queue is full (retry after a poll), -1 failed.
 */
#define NRTEMU_FABRIC_CTX_BYTES 64
int nrtemu__fabric_post(struct nrtemu_fabric *f, bool recv, uint32_t peer,
                        void *buf, size_t len, uint64_t tag, void *ctx,
                        char *why, size_t why_size);

/*
 * Progress the endpoint and take up to `max` completions into ctxs.
 * @return their number, or -1 with the reason (the context of the failed
 * operation, when known, in *failed); NRTEMU_FABRIC_PEER_GONE instead of
 * -1 when the provider says the peer's connection is gone (not connected,
 * reset, broken pipe): the peer ended, as a closed socket says over TCP.
 */
#define NRTEMU_FABRIC_PEER_GONE (-2)
int nrtemu__fabric_poll(struct nrtemu_fabric *f, void **ctxs, int max,
                        void **failed, char *why, size_t why_size);

/* Close the endpoint: no posted buffer is touched afterwards. */
void nrtemu__fabric_close(struct nrtemu_fabric *f);

#endif /* NRTEMU_FABRIC_H */
