/*
 * program_internal.h - the representation of a loaded program and the op
 * table, shared by program.c (reading), program_ops.c (the op table),
 * program_validate.c (op rules), program_collective.c (collective ops) and
 * program_run.c (internal).
 */
#ifndef NRTEMU_PROGRAM_INTERNAL_H
#define NRTEMU_PROGRAM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/json.h"
#include "kernels/kernel.h"
#include "neff/neff.h"
#include "program/program.h"

struct nrtemu_coll_attrs; /* collective.h */
struct nrtemu_rank;       /* collective.h */

enum buffer_kind {
    BUFFER_INPUT,
    BUFFER_OUTPUT,
    BUFFER_CONST,
    BUFFER_TEMP,
};

struct buffer {
    char *name; /* owned */
    enum buffer_kind kind;
    enum nrtemu_dtype dtype;
    uint32_t ndim;
    uint64_t shape[NRTEMU_MAX_DIMS];
    uint64_t count; /* elements */
    size_t bytes;
    size_t io_index;  /* input, output: index into neff->io */
    const void *data; /* const: into the NEFF payload or `owned` */
    void *owned;      /* const copied for alignment; temp memory */
};

struct op;
struct fusion;
struct row_group;

/*
 * A list of ops run in order: a program's own, or one nested in a control
 * op (the cond and body of a while, a branch of a conditional).
 */
struct op_list {
    struct op *ops; /* owned */
    size_t count;
    /* Where the list sits, as messages name an op of it: "" for the
     * program's list, "op 2 (while) body " for a nested one; owned. */
    char *where;
};

/* Largest operand count: where has 3, concatenate any. */
struct op {
    enum nrtemu_op op;
    size_t index;
    size_t n_in;
    size_t *in; /* owned: buffer indices */
    size_t out;
    enum nrtemu_dtype compute;
    /* Attributes, as the class of the op uses them. */
    uint32_t axes; /* reduce: bit per input axis */
    uint32_t axis; /* argreduce, softmax, concatenate, take, iota */
    bool flatten;  /* argreduce, take without an axis: over all elements */
    uint32_t perm[NRTEMU_MAX_DIMS];
    int64_t start[NRTEMU_MAX_DIMS], step[NRTEMU_MAX_DIMS];
    unsigned char value[8];        /* full: one element of the out dtype */
    enum nrtemu_scatter_mode mode; /* scatter */
    enum nrtemu_bounds bounds;     /* dynamic_slice, dynamic_update_slice */
    bool descending;               /* argsort */
    bool via_scratch;  /* out is also an operand: compute aside, then copy */
    char *shapes;      /* owned: "float32[2,3], ... -> float32[2,3]" */
    char *note;        /* owned, or NULL: the op's "note", for profiles */
    const char *where; /* the `where` of the list holding the op */
    /* Control ops (no out: `out` is NO_BUFFER): while has lists[0] (cond),
     * lists[1] (body) and the buffer `pred`; conditional its branches. */
    struct op_list *lists; /* owned */
    size_t n_lists;
    size_t pred;
    struct nrtemu_coll_attrs *coll; /* owned: collective ops' attributes */
    /* The fused chain that starts here (program_fuse.c), or NULL. */
    struct fusion *fusion; /* owned */
    /* The row group that starts here (program_fuse_rows.c), or NULL. */
    struct row_group *row_group; /* owned */
};

/* The `out` of an op that has none (control ops). */
#define NO_BUFFER SIZE_MAX

/* Control ops nest at most this deep (docs/neff-emulator-format.md §3). */
#define NRTEMU_PROGRAM_MAX_NESTING 32

/* A buffer name and its index, for lookups by name (sorted). */
struct buffer_name {
    const char *name;
    size_t index;
};

struct nrtemu_program {
    char path[64]; /* "sg00/program.json", for messages */
    struct buffer *buffers;
    size_t buffer_count;
    struct buffer_name *by_name; /* owned, sorted by name */
    struct op_list ops;
    bool temps_ready;
    /* The rank that runs the program's collectives; NULL: a world of one
     * (nrtemu__program_bind_rank). */
    struct nrtemu_rank *rank;
    struct nrtemu_scratch scratch; /* kernels' working memory */
    struct nrtemu_scratch result;  /* results of via_scratch ops */
    struct nrtemu_scratch fused;   /* intermediates of fused chains */
    /* Kernel scratch of the pool's tasks running a fused chain's blocks
     * (program_fuse.c) or a lone elementwise op's pieces (program_run.c)
     * beside the caller, allocated when first needed. */
    struct nrtemu_scratch *task_scratch; /* owned */
    uint32_t n_task_scratch;
};

/*
 * The buffers written so far while a program is read (an op may read a
 * temporary or output only once one is).  `log` lists those set, in order,
 * so that a conditional can unset what one branch wrote before it reads
 * the next: each branch sees only what is written before the conditional.
 * A buffer is in the log at most once, so it holds buffer_count entries.
 */
struct written_set {
    bool *is;    /* owned: per buffer */
    size_t *log; /* owned: buffer_count entries */
    size_t len;
};

/* Set buffer `b` as written (logged when it was not). */
void nrtemu__written_mark(struct written_set *w, size_t b);

/* Context of the op being validated, for messages. */
struct op_ctx {
    const char *func;
    const struct nrtemu_program *program;
    const struct op *op;
    const struct nrtemu_json *json;
    /* What the loader tracks while it reads the op's list: what is
     * written before this op (a control op's checker reads its lists
     * with it), and `depth`, the control ops around the op. */
    struct written_set *written;
    unsigned depth;
};

/*
 * The attributes of ops (keys of an op object besides "op", "in", "out"
 * and "dtype", which every op has) are enum nrtemu_attr, from
 * NRTEMU_ATTR_LIST (op_list.h).  An op reads only those its row of
 * NRTEMU_OP_LIST names; others are ignored.
 */

/*
 * Check the shapes, dtypes and attributes of `op` (operands resolved,
 * compute dtype UNKNOWN or the op's "dtype") and fill its attributes and
 * compute dtype.  The float-only rule is checked after it, from the flags.
 * @return NRT_SUCCESS or NRT_INVALID with a detail naming the op
 *         (nrtemu__op_invalid).
 */
typedef NRT_STATUS nrtemu_op_check_fn(const struct op_ctx *ctx, struct op *op);
/* One op to run: its operands and out as the kernels take them. */
struct op_call {
    const char *func; /* the API call, for messages */
    struct nrtemu_program *program;
    const struct op *op;
    const struct nrtemu_array *out; /* NULL for a control op */
    struct nrtemu_array *in; /* op->n_in operands; a copy, may be adjusted */
    void **data;             /* every buffer's memory (control ops) */
    uint64_t deadline_ns;    /* of the run, 0 for none (control ops) */
};

/*
 * Run an op through its kernel.
 * @return NRT_SUCCESS; NRT_RESOURCE when scratch memory runs out (the
 *         caller records the error); any other status with the error
 *         recorded here.
 */
typedef NRT_STATUS nrtemu_op_run_fn(const struct op_call *c);
/* An estimate of the element operations of one run of `op` (saturating
 * at UINT64_MAX); see nrtemu__program_footprint(). */
typedef uint64_t nrtemu_op_cost_fn(const struct nrtemu_program *p,
                                   const struct op *op);

/*
 * One row of the op table: what the loader, the validator and the
 * interpreter know of an op, found from the op in one index.
 */
struct nrtemu_op_def {
    const char *name;
    int arity;      /* operand count; -1: one or more */
    uint32_t attrs; /* bit (1u << enum nrtemu_attr) per attribute read */
    uint32_t flags; /* NRTEMU_OPF_* */
    nrtemu_op_check_fn *check;
    nrtemu_op_run_fn *run;
    nrtemu_op_cost_fn *cost;
};

/* The op table, generated from NRTEMU_OP_LIST (program_ops.c); constant,
 * so any thread may read it. */
extern const struct nrtemu_op_def nrtemu__op_defs[NRTEMU_OP_COUNT];

/*
 * The op named `name` (a NUL-terminated string); false when there is
 * none.  A hash lookup, built on first use; thread-safe.
 */
bool nrtemu__op_find(const char *name, enum nrtemu_op *out);
/* The name of `op`; "unknown" for a value out of range. */
const char *nrtemu__op_name(enum nrtemu_op op);
/* The JSON key of attribute `attr`. */
const char *nrtemu__attr_key(enum nrtemu_attr attr);

/* The functions the op table names, declared from the list (an op sharing
 * another's function repeats an identical declaration). */
#define NRTEMU_OP_DECLARE(suffix, name, arity, cls, check, run, cost, attrs, \
                          flags)                                             \
    nrtemu_op_check_fn nrtemu__op_check_##check;                             \
    nrtemu_op_run_fn nrtemu__op_run_##run;                                   \
    nrtemu_op_cost_fn nrtemu__op_cost_##cost;
NRTEMU_OP_LIST(NRTEMU_OP_DECLARE)
#undef NRTEMU_OP_DECLARE

/*
 * Check `op` against its row of the op table.
 * @return NRT_SUCCESS or NRT_INVALID with a detail naming the op.
 */
NRT_STATUS nrtemu__program_check_op(const struct op_ctx *ctx, struct op *op);

/*
 * Read the op list `json` (a JSON list of ops) into `list`, nested in the
 * control op of `ctx` and named `label` in messages ("body",
 * "branches[1]"), with ctx->written as what is written before it; marks
 * what the list writes in ctx->written.
 * @return NRT_SUCCESS; NRT_INVALID naming the op path; NRT_RESOURCE.
 */
NRT_STATUS nrtemu__program_read_list(const struct op_ctx *ctx,
                                     const struct nrtemu_json *json,
                                     const char *label, struct op_list *list);

/* The buffer named `name`; false when there is none. */
bool nrtemu__program_find_buffer(const struct nrtemu_program *p,
                                 const char *name, size_t *out);

/* Run the ops of `list` in order, checking the deadline before each. */
NRT_STATUS nrtemu__program_run_list(const struct op_call *c,
                                    const struct op_list *list);

/* Run one op (not a fused span) with the memory and deadline of `c`. */
NRT_STATUS nrtemu__program_run_op(const struct op_call *c,
                                  const struct op *op);

/*
 * Plan elementwise fusion for every op list of `p` (program_fuse.c),
 * unless NRTPY_EMU_FUSION is 0 or false: sets op->fusion on the first op
 * of each fused span.
 * @return NRT_SUCCESS; NRT_INVALID for a bad NRTPY_EMU_FUSION value;
 *         NRT_RESOURCE.
 */
NRT_STATUS nrtemu__program_fuse(const char *func, struct nrtemu_program *p);
void nrtemu__fusion_free(struct fusion *f);

/* The ops of `list` covered by the fusion of list->ops[first]. */
size_t nrtemu__fusion_span(const struct op_list *list, size_t first);

/*
 * Run the fused span that starts at list->ops[first]: its hoisted ops,
 * then its chain block by block (or its ops one by one when the caller's
 * I/O memory overlaps in a way blocks would not honour).
 */
NRT_STATUS nrtemu__fusion_run(const struct op_call *c,
                              const struct op_list *list, size_t first);

/* What the fusion planners share (program_fuse.c). */

/* Reads and writes of each buffer in the whole program. */
struct fuse_uses {
    size_t *reads, *writes;
};

/* A small set of buffer indices (a fused span touches few). */
struct fuse_set {
    size_t *items;
    size_t count, cap;
};

bool nrtemu__fuse_set_has(const struct fuse_set *s, size_t b);
/* @return false when memory runs out. */
bool nrtemu__fuse_set_add(struct fuse_set *s, size_t b);

/* Whether `op` may run before the fused ops so far (which wrote `w` and
 * read `r`): it reads nothing they wrote and writes nothing they used. */
bool nrtemu__fuse_hoistable(const struct op *op, const struct fuse_set *w,
                            const struct fuse_set *r);

/*
 * Blocks [first, end) of a fused plan (a chain's, a row group's), each op
 * on a block before the next block; the ops in `streamed` (bit per op)
 * store their results with non-temporal stores.  `slots` and `scratch`
 * belong to the caller alone.  On failure, *failed is the op whose kernel
 * failed (no error is recorded: this may run on a worker thread).
 */
typedef NRT_STATUS nrtemu_fuse_blocks_fn(const struct op_call *c,
                                         const void *plan, uint64_t first,
                                         uint64_t end, uint64_t streamed,
                                         char *slots,
                                         struct nrtemu_scratch *scratch,
                                         const struct op **failed);

/*
 * Run `blocks` blocks of `plan` through `run`, shared out among the
 * pool's threads when the plan's widest buffer has `elements` elements
 * or more than a few blocks' worth (program_fuse.c); each task gets
 * `slot_bytes` of slots of its own and kernel scratch of its own.
 */
NRT_STATUS nrtemu__fuse_run_blocks(const struct op_call *c,
                                   nrtemu_fuse_blocks_fn *run,
                                   const void *plan, uint64_t blocks,
                                   uint64_t elements, uint64_t streamed,
                                   size_t slot_bytes);

/*
 * Whether the caller's memory makes a fused plan's blocked order unsafe:
 * two of its I/O buffers `io` (those with `io_write` set written) overlap
 * in `data`, one of them written, and are not one tensor used whole by
 * both (the same address, dtype and shape).  Then the plan's ops run one
 * by one (nrtemu__fuse_run_each) instead.  Thread-safe.
 */
bool nrtemu__fuse_io_overlaps(const struct nrtemu_program *p, const size_t *io,
                              const bool *io_write, size_t n_io,
                              void *const *data);

/* Run list->ops[first, first + span) one by one, as unfused. */
NRT_STATUS nrtemu__fuse_run_each(const struct op_call *c,
                                 const struct op_list *list, size_t first,
                                 size_t span);

/* Run the ops of `list` at `hoisted[0, n_hoisted)`, in that order: those a
 * fused plan runs before its blocks. */
NRT_STATUS nrtemu__fuse_run_hoisted(const struct op_call *c,
                                    const struct op_list *list,
                                    const size_t *hoisted, size_t n_hoisted);

/*
 * Plan the row group that would start at list->ops[i] (program_fuse_rows.c):
 * sets list->ops[i].row_group, or leaves it NULL when none fits there.
 * @return NRT_SUCCESS; NRT_RESOURCE.
 */
NRT_STATUS nrtemu__row_group_plan(const char *func,
                                  const struct nrtemu_program *p,
                                  struct op_list *list,
                                  const struct fuse_uses *u, size_t i);
void nrtemu__row_group_free(struct row_group *g);
/* The ops of `list` covered by the row group of list->ops[first]. */
size_t nrtemu__row_group_span(const struct op_list *list, size_t first);
/* Add what row group `g` holds to `s`. */
void nrtemu__row_group_stats(const struct row_group *g,
                             struct nrtemu_fusion_stats *s);
/* Run the row group that starts at list->ops[first]. */
NRT_STATUS nrtemu__row_group_run(const struct op_call *c,
                                 const struct op_list *list, size_t first);

/* Record NRT_INVALID with "<path>: <where>op N (name): <detail>". */
NRT_STATUS nrtemu__op_invalid(const struct op_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "float32[2,3]" into buf. */
void nrtemu__describe_buffer(const struct buffer *b, char *buf, size_t len);

#endif /* NRTEMU_PROGRAM_INTERNAL_H */
