/*
 * collective.h - collective operations across ranks (internal).
 *
 * A rank is one model loaded with nrt_load_collectives(), or one vnc's
 * membership of the global communicator of nrt_build_global_comm().  The
 * ranks of one world that live in one process share a communicator: the
 * ranks of a NEFF are matched by the NEFF's SHA-256 and the world size.
 * Each collective op is a rendezvous of the ranks of its group, counted
 * by a sequence number per rank; the data is exchanged directly in memory
 * (each rank reads its peers' operands, nothing is copied twice).
 *
 * A rank that does not arrive within the execution's deadline fails the
 * collective on every rank that waits for it (NRT_TIMEOUT naming the
 * missing ranks); a rank that leaves (unloads) while others wait fails
 * them with NRT_EXEC_HW_ERR_COLLECTIVES.  After a failure the
 * communicator is broken: later collectives on it fail at once, until the
 * ranks load their models again (which makes a new communicator).
 */
#ifndef NRTEMU_COLLECTIVE_H
#define NRTEMU_COLLECTIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

#include "kernel.h"

struct nrtemu_program;

/*
 * The attributes of one collective op, validated at load (owned by the
 * op: one allocation, freed with free()).
 */
struct nrtemu_coll_attrs {
    enum nrtemu_reduce reduce;
    uint32_t split_axis, concat_axis; /* all_to_all */
    /* The group size the op's shapes imply; 0 when they imply none
     * (all_reduce, collective_permute, all_to_all on one axis). */
    uint32_t shape_group;
    uint32_t n_groups;     /* 0: one group of all the ranks of the world */
    uint32_t rank_bound;   /* 1 + the largest rank the groups/pairs name */
    uint32_t n_pairs;      /* collective_permute */
    uint32_t *group_start; /* n_groups + 1 offsets into ranks */
    uint32_t *ranks;       /* the groups' ranks, group after group */
    uint32_t *pairs;       /* n_pairs (source, target) pairs */
};

/* Ranks of one world, at most (the in-process communicator's bound). */
#define NRTEMU_MAX_RANKS 1024

/* One rank's membership of a communicator. */
struct nrtemu_rank;

/*
 * Join the communicator of the NEFF `neff` (`size` bytes) as rank `rank`
 * of `world` (> 1), running on `vnc`.  Without NEURON_RT_ROOT_COMM_ID the
 * world is the ranks of this process (the communicator is made by its
 * first rank); with it, the ranks of any process that meet at that
 * address (net.h; `timeout_ns` bounds reaching rank 0, 0: 600 s).
 * @return NRT_SUCCESS; NRT_INVALID when another rank of the world is
 *         already on `vnc`, `world` is over NRTEMU_MAX_RANKS, or the
 *         address is malformed or in use (rank 0); NRT_TIMEOUT when rank
 *         0 cannot be reached; NRT_RESOURCE.
 * Ownership: *out is the caller's; release it with nrtemu__rank_leave().
 * Thread-safe.
 */
NRT_STATUS nrtemu__rank_join(const char *func, const void *neff, size_t size,
                             uint32_t vnc, uint32_t rank, uint32_t world,
                             uint64_t timeout_ns, struct nrtemu_rank **out);
/* Leave; ranks waiting for this one fail.  NULL is ignored.  Not while a
 * collective of this rank runs. */
void nrtemu__rank_leave(struct nrtemu_rank *r);

/*
 * Check the collective ops of `program` against a world of `world` ranks
 * (rank ranges, groups that cover the world, the group sizes the shapes
 * imply) and make `r` the rank that runs them (NULL for a world of one).
 * @return NRT_SUCCESS or NRT_INVALID naming the op.
 */
NRT_STATUS nrtemu__program_bind_rank(const char *func,
                                     struct nrtemu_program *program,
                                     struct nrtemu_rank *r, uint32_t world);

/* For collective_host.c: membership of the global communicator (all
 * ranks of `world`, keyed by the world only). */
NRT_STATUS nrtemu__rank_join_global(const char *func, uint32_t vnc,
                                    uint32_t rank, uint32_t world,
                                    uint64_t timeout_ns,
                                    struct nrtemu_rank **out);
uint32_t nrtemu__rank_id(const struct nrtemu_rank *r);
uint32_t nrtemu__rank_world(const struct nrtemu_rank *r);
/*
 * The host-level all-gather (and, with `size` 0, barrier) of every rank
 * of r's world: `out` gets world * size bytes, rank k's at k * size.
 * Waits until `deadline_ns` (0: forever).
 * @return NRT_SUCCESS; NRT_TIMEOUT naming the missing ranks;
 *         NRT_EXEC_HW_ERR_COLLECTIVES for a broken communicator or a rank
 *         that left.  `what` names the collective in the detail.
 */
NRT_STATUS nrtemu__rank_gather_bytes(const char *func, struct nrtemu_rank *r,
                                     const void *in, size_t size, void *out,
                                     uint64_t deadline_ns, const char *what);

/*
 * Host-level collectives of libnrt §1.8 (the global communicator of the
 * vncs of this process): see collective.c.  Memberships end at nrt_close.
 */
void nrtemu__global_comm_close(void);

#endif /* NRTEMU_COLLECTIVE_H */
