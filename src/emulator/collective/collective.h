/*
 * collective.h - collective operations across ranks (internal).
 *
 * A rank has one communicator per process, as on hardware: every model it
 * loads with nrt_load_collectives() (any NEFF, any replica groups), and
 * its membership of nrt_build_global_comm()'s communicator, share it.  The
 * first of them joins it: with NEURON_RT_ROOT_COMM_ID, the rendezvous of
 * the world's ranks at that address (net.h), once per process and rank;
 * without it, the communicator of the world's ranks that are threads of
 * this process (one rank per vnc).  The others take a reference; the
 * membership ends with the last of them (the last collective model of the
 * rank unloaded), or at nrt_close, and the other ranks then fail their
 * collectives with NRT_EXEC_HW_ERR_COLLECTIVES ("rank N left").
 *
 * A rank's collectives, of all its models, are one sequence of exchanges,
 * one execution at a time (nrtemu__rank_exec_begin()): every rank of a
 * group must run the same op of the same model at the same exchange.  Each
 * exchange carries its record (cc_id.h), and a rank that meets another
 * record fails it on every rank that sees it with
 * NRT_EXEC_HW_ERR_COLLECTIVES, naming both models, instead of waiting or
 * exchanging the wrong data.  The data is exchanged directly in memory
 * between threads (each rank reads its peers' operands, nothing is copied
 * twice), over sockets or libfabric between processes.
 *
 * A rank that does not arrive within the execution's deadline fails the
 * collective on every rank that waits for it (NRT_TIMEOUT naming the
 * missing ranks).  After a failure the communicator is broken: later
 * collectives on it fail at once; the collective models loaded after the
 * failure get a new one (a new rendezvous), so the models are loaded
 * again, on every rank, to go on.
 *
 * fork(): the child keeps nothing of its parent's communicators (its
 * memberships end without a word to the parent's peers); a model loaded
 * there joins a new one.
 */
#ifndef NRTEMU_COLLECTIVE_H
#define NRTEMU_COLLECTIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

#include "kernels/kernel.h"

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

/* One model's (or the host-level collectives') handle on its rank's
 * membership of a communicator. */
struct nrtemu_rank;

/*
 * Join the communicator of rank `rank` of `world` (> 1, at most
 * NRTEMU_MAX_RANKS) for the model of the NEFF `neff` (`size` bytes; its
 * SHA-256 identifies the model's exchanges) named `name`, running on `vnc`:
 * the rank's membership in this process when it has one, else a new one
 * (with NEURON_RT_ROOT_COMM_ID, the ranks of any process that meet at that
 * address: net.h; `timeout_ns` bounds reaching rank 0, 0: 600 s).
 * @return NRT_SUCCESS; NRT_INVALID when another rank of the world is
 *         already on `vnc` (threads), this process is a rank of another
 *         world at that address, `world` is over NRTEMU_MAX_RANKS, or the
 *         address is malformed or in use (rank 0); NRT_TIMEOUT when rank
 *         0 cannot be reached; NRT_RESOURCE.
 * Ownership: *out is the caller's; release it with nrtemu__rank_leave().
 * Thread-safe (joins wait for each other while a new rank 0 binds).
 */
NRT_STATUS nrtemu__rank_join(const char *func, const void *neff, size_t size,
                             const char *name, uint32_t vnc, uint32_t rank,
                             uint32_t world, uint64_t timeout_ns,
                             struct nrtemu_rank **out);
/* Release the handle; the last one of a rank ends its membership (ranks
 * waiting for it fail).  NULL is ignored.  Thread-safe; not while a
 * collective of this handle runs. */
void nrtemu__rank_leave(struct nrtemu_rank *r);

/*
 * Around each execution of a model with a handle (NULL is ignored): one
 * execution of a rank at a time, whichever of its models or threads, so
 * that its exchanges keep one order.  Before the vnc locks (the lock
 * order), never while loading or unloading.
 */
void nrtemu__rank_exec_begin(struct nrtemu_rank *r);
void nrtemu__rank_exec_end(struct nrtemu_rank *r);

/* nrt_close: end every membership of this process (after
 * nrtemu__global_comm_close(); waits for executions in progress).  The
 * handles stay valid, their collectives fail with NRT_CLOSED. */
void nrtemu__communicators_close(void);

/*
 * One collective op to run on a rank: what program_collective.c gives
 * from an op of a program.  The attributes were checked against the
 * rank's world when the program was bound to it.
 */
struct nrtemu_coll_call {
    const char *func;         /* the API call, for messages */
    struct nrtemu_rank *rank; /* NULL: a world of one */
    enum nrtemu_op op;        /* all_reduce, reduce_scatter, all_gather,
                                 all_to_all or collective_permute */
    const struct nrtemu_coll_attrs *attrs;
    uint32_t axis; /* all_gather, reduce_scatter: the axis of the parts */
    const struct nrtemu_array *in;  /* the operand */
    const struct nrtemu_array *out; /* the result, in's dtype */
    /* Working memory: the operands received from other processes. */
    struct nrtemu_scratch *scratch;
    uint64_t deadline_ns; /* 0: none */
    size_t index;         /* the op's, in each exchange's record */
    const char *what;     /* names the op in messages */
};

/*
 * Run the exchange of `c` with the other ranks of its group (the caller
 * holds the rank's execution: nrtemu__rank_exec_begin()).
 * @return NRT_SUCCESS; NRT_RESOURCE when memory runs out (as for an
 *         op's kernel, the caller records it); NRT_TIMEOUT naming the
 *         missing ranks; NRT_EXEC_HW_ERR_COLLECTIVES for a broken
 *         communicator, a rank that left, or one at another exchange;
 *         NRT_CLOSED after nrt_close or in a forked child.
 */
NRT_STATUS nrtemu__coll_run(const struct nrtemu_coll_call *c);

/* For collective_host.c: a handle on the rank's membership, for the
 * host-level collectives (all ranks of `world`); as nrtemu__rank_join(). */
NRT_STATUS nrtemu__rank_join_global(const char *func, uint32_t vnc,
                                    uint32_t rank, uint32_t world,
                                    uint64_t timeout_ns,
                                    struct nrtemu_rank **out);
uint32_t nrtemu__rank_id(const struct nrtemu_rank *r);
uint32_t nrtemu__rank_world(const struct nrtemu_rank *r);
/*
 * The host-level all-gather (and, with `size` 0, barrier) of every rank
 * of r's world: `out` gets world * size bytes, rank k's at k * size.
 * Waits until `deadline_ns` (0: forever); one execution of the rank at a
 * time, as the models'.  `what` names the collective in the detail and
 * in its record (cc_id.h; the op is `size`).
 * @return NRT_SUCCESS; NRT_INVALID for NULL buffers; NRT_TIMEOUT naming
 *         the missing ranks; NRT_EXEC_HW_ERR_COLLECTIVES for a broken
 *         communicator, a rank that left, or one at another exchange;
 *         NRT_CLOSED after nrt_close.
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
