/*
 * program.h - emulator programs: load-time validation and execution
 * (internal).  Format and semantics: docs/neff-emulator-format.md §3.
 */
#ifndef NRTEMU_PROGRAM_H
#define NRTEMU_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

#include "neff/neff.h"

/*
 * Bound on the bytes of the temporaries of one program, together: a
 * program that declares more is rejected at load (NRT_INVALID).
 */
#ifndef NRTEMU_PROGRAM_MAX_TEMP_BYTES
#define NRTEMU_PROGRAM_MAX_TEMP_BYTES ((uint64_t)4 << 30)
#endif

/*
 * A validated program, ready to run; owns its temporaries and scratch.
 * Constants are read in place from the NEFF payload (copied only when a
 * member is not aligned for its dtype): free the program before the neff.
 */
struct nrtemu_program;

struct nrtemu_rank; /* collective/collective.h */

/*
 * Read and validate the program of subgraph `subgraph` (an index into
 * neff->subgraphs) of `neff`: the file named by "emulator_program" in its
 * def.json.  Its input and output buffers are matched by name to
 * neff->io entries (equal byte size, and equal dtype/shape when the io
 * entry has them).
 * @return NRT_SUCCESS; NRT_INVALID with a detail naming the op index and
 *         field for any error, or temporaries over
 *         NRTEMU_PROGRAM_MAX_TEMP_BYTES; NRT_RESOURCE if host memory runs
 *         out.
 *         A subgraph without "emulator_program" gives NRT_INVALID with the
 *         detail "... has no emulator program: it needs Neuron hardware".
 */
NRT_STATUS nrtemu__program_load(const char *func,
                                const struct nrtemu_neff *neff, int subgraph,
                                struct nrtemu_program **out);
void nrtemu__program_free(struct nrtemu_program *program);

/*
 * What one run of `program` needs, for callers that bound runs (the fuzz
 * target): `*bytes`, the bytes of its input, output and temporary buffers
 * together; `*work`, an estimate of the element operations of its costliest
 * op, from the cost column of the op table (matmul: result elements times
 * the contracted length; any other op: the elements of its largest operand
 * or result).  Both saturate at UINT64_MAX.
 */
void nrtemu__program_footprint(const struct nrtemu_program *program,
                               uint64_t *bytes, uint64_t *work);

/* What elementwise fusion made of a program (program_fuse.c). */
struct nrtemu_fusion_stats {
    size_t chains;             /* fused chains */
    size_t ops;                /* elementwise ops in them */
    size_t reductions;         /* reductions that end a chain */
    size_t hoisted;            /* ops run before a chain they were inside */
    size_t intermediates;      /* results that never reach their buffer */
    size_t virtual_broadcasts; /* of them, broadcast_to ops not run at all */
    size_t row_groups;         /* row groups (program_fuse_rows.c) */
    size_t row_ops;            /* ops in them, hoisted ones not counted */
    size_t row_reductions;     /* of them, reductions */
    size_t row_intermediates;  /* their results that never reach memory */
    size_t row_reused;         /* of them, an earlier op's result again */
};

void nrtemu__program_fusion_stats(const struct nrtemu_program *program,
                                  struct nrtemu_fusion_stats *stats);

/* Called after each op when profiling; `shapes` describes the operands,
 * e.g. "float32[128,512], float32[512] -> float32[128,512]"; `note` is the
 * op's free-form "note" (what the compiler made it for), or NULL. */
typedef void (*nrtemu_op_observer)(void *ctx, size_t index, const char *op,
                                   const char *shapes, const char *note,
                                   uint64_t start_ns, uint64_t end_ns);

/* Whether the op of that name (as an observer gets it) is a collective. */
bool nrtemu__op_is_collective(const char *op);

/*
 * Check the collective ops of `program` against a world of `world` ranks
 * (rank ranges, groups that cover the world, the group sizes the shapes
 * imply) and make `r` the rank that runs them (NULL for a world of one).
 * @return NRT_SUCCESS or NRT_INVALID naming the op.
 */
NRT_STATUS nrtemu__program_bind_rank(const char *func,
                                     struct nrtemu_program *program,
                                     struct nrtemu_rank *r, uint32_t world);

/*
 * Run once.  `io_data[i]` is the memory of neff->io[i] (inputs read-only,
 * outputs written), each of neff->io[i].size bytes; entries of other
 * subgraphs may be NULL.  Executions of one program must not overlap (the
 * model serialises executions per core).  `deadline_ns` (CLOCK_MONOTONIC,
 * 0 = none) is checked between ops, on nrtemu__deadline_clock_ns (a few
 * milliseconds late at most): past it, NRT_TIMEOUT.
 * @return NRT_SUCCESS; NRT_EXEC_OOB for a take/gather index out of bounds
 *         (detail names the op, the index and the bound); NRT_TIMEOUT;
 *         NRT_RESOURCE if scratch memory cannot be had.
 */
NRT_STATUS nrtemu__program_run(const char *func,
                               struct nrtemu_program *program,
                               void *const *io_data, uint64_t deadline_ns,
                               nrtemu_op_observer observer, void *ctx);

#endif /* NRTEMU_PROGRAM_H */
