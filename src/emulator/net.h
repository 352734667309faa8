/*
 * net.h - ranks in other processes or on other machines (internal).
 *
 * The bootstrap of NEURON_RT_ROOT_COMM_ID=<host>:<port>: rank 0 listens
 * there; every other rank connects (retrying until its load deadline) and
 * says hello (world size, rank, the communicator's key: the NEFF's
 * SHA-256, and the address of its own data listener).  Rank 0 checks the
 * hellos (a different world size or key, or a rank id taken, is refused
 * with a message to that rank) and, when the world is complete, sends
 * every rank the table of data addresses and closes the bootstrap
 * connections.  The ranks then connect pairwise (rank i to every j < i)
 * and exchange the data of each collective over these connections.  All
 * of it happens at the rank's first collective, so that ranks may load in
 * any order, and the threads of one process one after the other.
 *
 * The hello also says which machine the rank is on (boot id and
 * NRTPY_EMU_NAMESPACE) and whether libfabric loads there (fabric.h).
 * Unless NRTPY_EMU_CC_TRANSPORT=tcp on rank 0, the table names a libfabric
 * provider for the world: FI_PROVIDER's, else shm when every rank is on one
 * machine, else tcp; every rank opens an endpoint of it and sends its
 * address, and rank 0 answers with every address (or, when a rank could
 * not open it, "TCP": with NRTPY_EMU_CC_TRANSPORT=libfabric that fails the
 * world instead).  The data of collectives then goes as tagged libfabric
 * messages (tag: the exchange's number, the chunk, the sender), or over the
 * ranks' own TCP connections.  Those connections stay open over libfabric
 * too, carrying nothing: their closing tells at once that a rank died.
 */
#ifndef NRTEMU_NET_H
#define NRTEMU_NET_H

#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

struct nrtemu_net;

/*
 * Become rank `rank` of `world` through `root` ("host:port"): rank 0
 * binds its listener, the others connect to it (until `deadline_ns`,
 * CLOCK_MONOTONIC; 0 waits 600 s) and send their hello.
 * @return NRT_SUCCESS; NRT_INVALID for a malformed address or one rank 0
 *         cannot listen on (in use); NRT_TIMEOUT when rank 0 could not be
 *         reached; NRT_RESOURCE.
 * Ownership: *out is the caller's (nrtemu__net_close()).  One thread at a
 * time per net.
 */
NRT_STATUS nrtemu__net_open(const char *func, const char *root,
                            const unsigned char *key, uint32_t rank,
                            uint32_t world, uint64_t deadline_ns,
                            struct nrtemu_net **out);
void nrtemu__net_close(struct nrtemu_net *net);

/*
 * One exchange of a collective: send the slens[k] bytes of sbufs[k] to
 * rank send_to[k] (k < n_send), and receive rlens[k] bytes from rank
 * recv_from[k] into rbufs[k] (k < n_recv), all at once, until
 * `deadline_ns` (0: none).  `seq` numbers the exchange (every rank numbers
 * its exchanges alike).  Completes the bootstrap first if needed.
 * @return NRT_SUCCESS; NRT_TIMEOUT naming the ranks that did not arrive;
 *         NRT_EXEC_HW_ERR_COLLECTIVES when a rank was refused at the
 *         rendezvous, closed its connection (died), sent the data of
 *         another collective, or the net failed earlier.
 */
NRT_STATUS nrtemu__net_exchange(const char *func, struct nrtemu_net *net,
                                uint64_t seq, const uint32_t *send_to,
                                uint32_t n_send, const void *const *sbufs,
                                const size_t *slens, const uint32_t *recv_from,
                                uint32_t n_recv, void *const *rbufs,
                                const size_t *rlens, uint64_t deadline_ns,
                                const char *what);

#endif /* NRTEMU_NET_H */
