/*
 * net.h - ranks in other processes or on other machines (internal).
 *
 * The bootstrap of NEURON_RT_ROOT_COMM_ID=<host>:<port>: rank 0 listens
 * there; every other rank connects (retrying until its load deadline) and
 * says hello (world size, rank, the communicator's key: one for every
 * world of collective.c, since a process's models share its communicator,
 * and the address of its own data listener).  Rank 0 checks the
 * hellos (a different world size or key, or a rank id taken, is refused
 * with a message to that rank) and, when the world is complete, sends
 * every rank the table of data addresses and closes the bootstrap
 * connections (its listener stays, with a thread that tells a rank that
 * comes later why it is refused, until the net closes or fails).  The
 * ranks then connect pairwise (rank i to every j < i) and exchange the
 * data of each collective over these connections.  All of it happens at
 * the rank's first collective, so that ranks may load in any order, and
 * the threads of one process one after the other.
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
 *
 * When every rank is on one machine and the transport is auto, rank 0
 * also names a shared-memory board in the table (board.h, below); the
 * ranks map it, say whether they could, and rank 0 says whether the
 * world uses it (all of them could).
 */
#ifndef NRTEMU_NET_H
#define NRTEMU_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

#include "collective/cc_id.h"

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
 * `deadline_ns` (0: none).  `id` is the exchange (cc_id.h: every rank
 * numbers its exchanges alike, id->seq); its record goes with the data
 * (in the header over TCP, as a message of its own over libfabric, on the
 * board for the ranks of one machine), and a peer at another exchange
 * fails it.  Completes the bootstrap first if needed.
 * @return NRT_SUCCESS; NRT_TIMEOUT naming the ranks that did not arrive;
 *         NRT_EXEC_HW_ERR_COLLECTIVES when a rank was refused at the
 *         rendezvous, closed its connection (died, or failed), is at
 *         another exchange (the message names both: cc_id.h), or the net
 *         failed earlier.
 * A failure breaks the net for good: its connections end (every peer
 * waiting for this rank fails at once), rank 0's rendezvous listener
 * closes, and the ranks of the board fail with the same reason.
 */
NRT_STATUS nrtemu__net_exchange(const char *func, struct nrtemu_net *net,
                                const struct nrtemu_cc_id *id,
                                const uint32_t *send_to, uint32_t n_send,
                                const void *const *sbufs, const size_t *slens,
                                const uint32_t *recv_from, uint32_t n_recv,
                                void *const *rbufs, const size_t *rlens,
                                uint64_t deadline_ns, const char *what);

/*
 * The ranks of one machine (NRTPY_EMU_CC_TRANSPORT=auto, up to
 * NRTEMU_BOARD_MAX_RANKS): the bootstrap also sets up a shared-memory
 * board (board.h) with a progress counter and a data area per rank.
 * collective.c runs all_reduce through it: each rank writes what the
 * others need into its area, and reads theirs.  The functions below are
 * its counterpart of the in-process rendezvous for them.
 *
 * Whether they are usable (completes the bootstrap first): *direct.
 * @return as nrtemu__net_exchange().
 */
NRT_STATUS nrtemu__net_direct(const char *func, struct nrtemu_net *net,
                              uint64_t deadline_ns, bool *direct);

/*
 * Reach `phase` (< 2^32 - 1) of exchange `id` and wait until the `g`
 * ranks of `members` reach it too: yielding the core, then sleeping.  Every
 * write to this rank's area before it is seen by the members after theirs.
 * At phase 0 the exchange's record goes on the board first, and a member
 * whose record of that exchange differs fails it.
 * @return NRT_SUCCESS; NRT_TIMEOUT naming the missing ranks at
 *         `deadline_ns`; NRT_EXEC_HW_ERR_COLLECTIVES when a member died,
 *         is at another exchange, or the net failed (on any rank: the
 *         board carries the first reason to all).
 */
NRT_STATUS nrtemu__net_sync(const char *func, struct nrtemu_net *net,
                            const uint32_t *members, uint32_t g,
                            const struct nrtemu_cc_id *id, uint32_t phase,
                            uint64_t deadline_ns, const char *what);

/* Rank `rank`'s data area (*size bytes, 64-byte aligned); this rank
 * writes its own only. */
void *nrtemu__net_area(struct nrtemu_net *net, uint32_t rank, size_t *size);

/* Whether the net failed (for good).  Any thread, at any time. */
bool nrtemu__net_failed(const struct nrtemu_net *net);

/*
 * In a forked child, the parent's net: close this process's copies of its
 * descriptors (which ends nothing in the parent), leave its libfabric
 * endpoint and board alone, and fail it, so that nothing here uses it.
 * nrtemu__net_close() still frees it.
 */
void nrtemu__net_forget(struct nrtemu_net *net);

#endif /* NRTEMU_NET_H */
