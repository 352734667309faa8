/*
 * program_fuse.c - elementwise fusion: chains of elementwise ops run as
 * one pass over memory.
 *
 * Planned once, when a program is loaded (both compilers' programs are
 * the same ops by then), and for every op list, nested ones included.
 * A chain is a run of ops of one list that are elementwise (a class but
 * NONE in NRTEMU_OP_LIST: arithmetic, compare, logical, where, cast, copy)
 * with one out shape S; operands broadcast to S as usual.  broadcast_to
 * (a copy that broadcasts: how the HLO compiler writes XLA's broadcasts)
 * joins chains too, and when its result is an intermediate read only by
 * elementwise ops, it does not run: they read its operand instead.  Ops in
 * between that touch nothing the chain wrote or read before them (a
 * `full` of a scalar, say) are hoisted: they run first.  A temporary that
 * one op of the chain writes, that no other op writes and that only later
 * ops of the chain read is an intermediate: it never reaches memory.  A
 * reduction (sum, mean, max, min, prod) over trailing axes of a result of
 * the chain may end it: blocks then hold whole rows of its reduced axes,
 * and it reduces each block's rows as it would reduce them all (a row's
 * result does not depend on the other rows).
 *
 * The chain then runs block by block: S is cut into blocks of about
 * FUSE_BLOCK elements, fewer for a chain that widens narrow floats
 * (whole rows of its trailing dimensions where they fit), and every op of the
 * chain runs on the block, through the same elementwise kernel as unfused,
 * before the next block.  Intermediates live in small per-program slots; other
 * operands and results are views of their buffers.  Each op still stores its
 * result in its buffer's dtype, so results are bit for bit those of running
 * the ops one by one; only the order in which elements are visited changes,
 * and an elementwise op's elements do not depend on each other.  Blocks are
 * independent, so a large chain shares them out among the kernels'
 * worker pool (pool.h), each thread with slots of its own.
 *
 * That order matters only where memory is shared in other ways than the
 * program says: when the caller passes overlapping input and output
 * tensors (other than one tensor for both at once), the run checks it and
 * runs that chain op by op instead.
 *
 * Before a chain, the planner tries a row group at each op
 * (program_fuse_rows.c): a reduction over trailing axes with the ops
 * before and after it that are row-independent, run a block of whole rows
 * at a time; ops a row group takes form no chain.
 *
 * NRTPY_EMU_FUSION=0 turns fusion off (read when a program is loaded).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/env_parse.h"
#include "util/error.h"
#include "kernels/kernel_stream.h"
#include "kernels/pool.h"
#include "program/program_internal.h"

/*
 * Elements per block: with a few operands and intermediates of up to 8
 * bytes, the working set of a block stays within L2.
 */
#ifndef FUSE_BLOCK
#define FUSE_BLOCK 8192
#endif

/*
 * Elements per block of a chain that widens a narrow float (a cast of
 * bfloat16 to float32, say): it reads few bytes from memory for the many
 * that its wider intermediates move, so that it runs at the speed of the
 * cache those live in; blocks this small keep them in L1.
 */
#ifndef FUSE_BLOCK_WIDENING
#define FUSE_BLOCK_WIDENING 2048
#endif

/* Ops of a chain, and ops it may hoist from between them, at most: a
 * longer run of ops makes several chains, and planning stays linear in
 * the ops of a program. */
#define FUSE_MAX_CHAIN 64
#define FUSE_MAX_HOIST 64

/* A reduction joins its chain when its rows (the elements that fold into
 * one) are at most this many: a block holds whole rows. */
#define FUSE_MAX_ROW 65536

/* Where one operand or result of a chained op lives. */
struct fused_arg {
    size_t buffer;
    int slot; /* >= 0: an intermediate, in this slot; -1: the buffer */
};

struct fused_op {
    const struct op *op;
    enum nrtemu_op kernel; /* what runs: the op, or copy for broadcast_to */
    bool virtual;          /* a broadcast_to whose readers read its operand */
    struct fused_arg in[3];
    struct fused_arg out;
    uint32_t axes; /* a reduction's: the reduced axes of a block */
};

/*
 * A fusion: the span of ops of a list from the op that holds it, which
 * runs as its hoisted ops (in order) and then its chain, blocked.
 */
struct fusion {
    size_t span;
    size_t *hoisted; /* indices into the list */
    size_t n_hoisted;
    struct fused_op *chain; /* the last may be a reduction (`reduce`) */
    size_t n_chain;
    bool reduce;
    uint32_t kept; /* a reduction's kept axes: the first `kept` of S */
    uint32_t ndim; /* S */
    uint64_t shape[NRTEMU_MAX_DIMS];
    uint32_t split; /* blocks: `rows` indices of dimension split ... */
    uint64_t rows;  /* ... times all of the dimensions after it */
    size_t block;   /* elements of a block, at most */
    size_t n_slots;
    /* The I/O buffers the chain reads and writes in place (the only ones
     * the caller's memory can make overlap), for the check at run time;
     * `io_write[i]` tells which. */
    size_t *io;
    bool *io_write;
    size_t n_io;
};

/* Ops a chain takes: elementwise ones, and broadcast_to (a copy that
 * broadcasts, which the chain runs as `copy`). */
static bool
is_elementwise(const struct op *op)
{
    return op->out != NO_BUFFER && op->n_in <= 3 && !op->via_scratch &&
           (nrtemu__op_defs[op->op].run == nrtemu__op_run_elementwise ||
            op->op == NRTEMU_OP_BROADCAST_TO);
}

static bool
same_shape(const struct buffer *b, uint32_t ndim, const uint64_t *shape)
{
    if (b->ndim != ndim) {
        return false;
    }
    for (uint32_t d = 0; d < ndim; d++) {
        if (b->shape[d] != shape[d]) {
            return false;
        }
    }
    return true;
}

static void
count_uses(const struct op_list *list, struct fuse_uses *u)
{
    for (size_t i = 0; i < list->count; i++) {
        const struct op *op = &list->ops[i];
        for (size_t k = 0; k < op->n_in; k++) {
            u->reads[op->in[k]]++;
        }
        if (op->out != NO_BUFFER) {
            u->writes[op->out]++;
        }
        if (op->op == NRTEMU_OP_WHILE) {
            u->reads[op->pred]++;
        }
        for (size_t k = 0; k < op->n_lists; k++) {
            count_uses(&op->lists[k], u);
        }
    }
}

bool
nrtemu__fuse_set_has(const struct fuse_set *s, size_t b)
{
    for (size_t i = 0; i < s->count; i++) {
        if (s->items[i] == b) {
            return true;
        }
    }
    return false;
}

bool
nrtemu__fuse_set_add(struct fuse_set *s, size_t b)
{
    if (nrtemu__fuse_set_has(s, b)) {
        return true;
    }
    if (s->count == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        size_t *items = realloc(s->items, cap * sizeof *items);
        if (items == NULL) {
            return false;
        }
        s->items = items;
        s->cap = cap;
    }
    s->items[s->count++] = b;
    return true;
}

void
nrtemu__fusion_free(struct fusion *f)
{
    if (f != NULL) {
        free(f->hoisted);
        free(f->chain);
        free(f->io);
        free(f->io_write);
        free(f);
    }
}

/*
 * Blocks of about `target` elements: the first dimension `split` whose
 * trailing dimensions fit, cut into `rows`.  A reduction needs whole rows
 * of its reduced axes (the last ndim - kept) in a block: up to
 * FUSE_MAX_ROW elements, a block may be one row.
 * @return false when no block can hold a row.
 */
static bool
plan_blocks(struct fusion *f, uint64_t target)
{
    uint64_t inner = 1, count = 1;
    uint32_t d = f->ndim;

    for (uint32_t e = 0; e < f->ndim; e++) {
        count *= f->shape[e];
    }
    while (d > 0 && f->shape[d - 1] <= target / inner) {
        inner *= f->shape[d - 1];
        d--;
    }
    if (f->reduce && d > f->kept) {
        /* Rows longer than a block: one row per block. */
        inner = 1;
        for (uint32_t e = f->kept; e < f->ndim; e++) {
            inner *= f->shape[e];
        }
        if (inner > FUSE_MAX_ROW) {
            return false;
        }
        d = f->kept;
        if (d > 0) {
            f->split = d - 1;
            f->rows = 1;
            f->block = (size_t)inner;
            return true;
        }
    }
    if (d == 0) {
        /* All of S in one block. */
        f->split = 0;
        f->rows = f->ndim == 0 ? 1 : f->shape[0];
        f->block = (size_t)count;
        return true;
    }
    f->split = d - 1;
    f->rows = target / inner;
    f->rows = f->rows == 0 ? 1 : f->rows;
    f->block = (size_t)(f->rows * inner);
    return true;
}

/* Whether a chained op casts a float to a wider dtype. */
static bool
widens(const struct nrtemu_program *p, const struct op_list *list,
       const size_t *chain, size_t n_chain)
{
    for (size_t c = 0; c < n_chain; c++) {
        const struct op *op = &list->ops[chain[c]];
        enum nrtemu_dtype from, to;
        if (op->op != NRTEMU_OP_CAST) {
            continue;
        }
        from = p->buffers[op->in[0]].dtype;
        to = p->buffers[op->out].dtype;
        if (nrtemu__dtype_is_float(from) &&
            nrtemu__dtype_size(from) < nrtemu__dtype_size(to)) {
            return true;
        }
    }
    return false;
}

/*
 * Build the fusion of the chain `chain` (indices into `list`; with
 * `kept` < UINT32_MAX, the last is a reduction keeping that many leading
 * axes) with the hoisted ops `hoisted`: blocks, intermediates, slots, the
 * I/O to check.
 * @return false when memory runs out.
 */
static bool
build(const struct nrtemu_program *p, const struct op_list *list,
      const struct fuse_uses *u, const size_t *chain, size_t n_chain,
      uint32_t kept, const size_t *hoisted, size_t n_hoisted,
      struct fusion **out)
{
    struct fusion *f = calloc(1, sizeof *f);
    size_t *last_use = NULL, *slot_of = NULL, n_free = 0, *free_slots = NULL;
    bool *inter = NULL;
    const struct buffer *sb;
    struct fuse_set io = {0};
    bool ok = false;

    if (f == NULL) {
        return false;
    }
    f->chain = calloc(n_chain, sizeof *f->chain);
    f->hoisted = calloc(n_hoisted ? n_hoisted : 1, sizeof *f->hoisted);
    last_use = calloc(n_chain, sizeof *last_use);
    slot_of = calloc(n_chain, sizeof *slot_of);
    free_slots = calloc(n_chain, sizeof *free_slots);
    inter = calloc(n_chain, sizeof *inter);
    f->io = calloc(n_chain * 4, sizeof *f->io);
    f->io_write = calloc(n_chain * 4, sizeof *f->io_write);
    if (f->chain == NULL || f->hoisted == NULL || last_use == NULL ||
        slot_of == NULL || free_slots == NULL || inter == NULL ||
        f->io == NULL || f->io_write == NULL) {
        goto done;
    }
    memcpy(f->hoisted, hoisted, n_hoisted * sizeof *hoisted);
    f->n_hoisted = n_hoisted;
    f->n_chain = n_chain;
    f->span = chain[n_chain - 1] - chain[0] + 1; /* hoisted ops are within */
    sb = &p->buffers[list->ops[chain[0]].out];
    f->ndim = sb->ndim;
    memcpy(f->shape, sb->shape, sizeof f->shape);
    f->reduce = kept != UINT32_MAX;
    f->kept = f->reduce ? kept : f->ndim;
    plan_blocks(f, widens(p, list, chain, n_chain) ? FUSE_BLOCK_WIDENING
                                                   : FUSE_BLOCK);
    /* (the caller checked that a row fits) */

    /* Intermediates: op c's out, a temp written only there and read only
     * by later ops of the chain. */
    for (size_t c = 0; c < n_chain; c++) {
        const struct op *op = &list->ops[chain[c]];
        size_t t = op->out, later = 0;
        f->chain[c].op = op;
        last_use[c] = c;
        if (p->buffers[t].kind != BUFFER_TEMP || u->writes[t] != 1 ||
            (f->reduce && c == n_chain - 1)) {
            continue;
        }
        for (size_t e = c + 1; e < n_chain; e++) {
            const struct op *r = &list->ops[chain[e]];
            for (size_t k = 0; k < r->n_in; k++) {
                if (r->in[k] == t) {
                    later++;
                    last_use[c] = e;
                }
            }
        }
        inter[c] = later == u->reads[t];
    }
    /* A broadcast_to into an intermediate need not run: its readers can
     * read its operand, broadcast like any operand, when that is no
     * intermediate, no op writes it before they have read it, and they
     * are elementwise (not the reduction; not pow, whose kernel takes
     * another path for an exponent that is one element). */
    for (size_t c = 0; c < n_chain; c++) {
        const struct op *op = f->chain[c].op;
        bool ok = inter[c] && op->op == NRTEMU_OP_BROADCAST_TO;
        f->chain[c].kernel =
            op->op == NRTEMU_OP_BROADCAST_TO ? NRTEMU_OP_COPY : op->op;
        for (size_t e = 0; ok && e < c; e++) {
            ok = !(inter[e] && f->chain[e].op->out == op->in[0]);
        }
        for (size_t e = c + 1; ok && e <= last_use[c]; e++) {
            const struct op *r = f->chain[e].op;
            bool reads = false;
            for (size_t k = 0; k < r->n_in; k++) {
                reads = reads || r->in[k] == op->out;
            }
            ok = r->out != op->in[0] &&
                 !(reads && (r->op == NRTEMU_OP_POW ||
                             (f->reduce && e == n_chain - 1)));
        }
        f->chain[c].virtual = ok;
    }
    /* Slots: one per live intermediate, reused once its last reader has
     * run (never by that reader's own out: dtypes may differ in size). */
    for (size_t c = 0; c < n_chain; c++) {
        const struct op *op = f->chain[c].op;
        for (size_t k = 0; k < op->n_in; k++) {
            struct fused_arg *a = &f->chain[c].in[k];
            a->buffer = op->in[k];
            a->slot = -1;
            for (size_t e = 0; e < c; e++) {
                if (inter[e] && f->chain[e].op->out == op->in[k]) {
                    *a = f->chain[e].virtual
                             ? f->chain[e].in[0]
                             : (struct fused_arg){op->in[k], (int)slot_of[e]};
                }
            }
        }
        f->chain[c].out.buffer = op->out;
        f->chain[c].out.slot = -1;
        if (inter[c] && !f->chain[c].virtual) {
            slot_of[c] = n_free > 0 ? free_slots[--n_free] : f->n_slots++;
            f->chain[c].out.slot = (int)slot_of[c];
        }
        for (size_t e = 0; e < c; e++) {
            if (inter[e] && !f->chain[e].virtual && last_use[e] == c) {
                free_slots[n_free++] = slot_of[e];
            }
        }
    }
    if (f->reduce) {
        /* The reduced axes of a block, which starts at axis split. */
        for (uint32_t e = f->kept; e < f->ndim; e++) {
            f->chain[n_chain - 1].axes |= 1u << (e - f->split);
        }
    }
    /* The I/O read or written in place. */
    for (size_t c = 0; c < n_chain; c++) {
        const struct fused_op *fo = &f->chain[c];
        for (size_t k = 0; !fo->virtual && k <= fo->op->n_in; k++) {
            const struct fused_arg *a =
                k < fo->op->n_in ? &fo->in[k] : &fo->out;
            enum buffer_kind kind = p->buffers[a->buffer].kind;
            size_t at;
            if (a->slot >= 0 ||
                (kind != BUFFER_INPUT && kind != BUFFER_OUTPUT)) {
                continue;
            }
            if (!nrtemu__fuse_set_add(&io, a->buffer)) {
                goto done;
            }
            for (at = 0; io.items[at] != a->buffer; at++) {
            }
            f->io[at] = a->buffer;
            f->io_write[at] = f->io_write[at] || k == fo->op->n_in;
        }
    }
    f->n_io = io.count;
    ok = true;

done:
    free(io.items);
    free(last_use);
    free(slot_of);
    free(free_slots);
    free(inter);
    if (!ok) {
        nrtemu__fusion_free(f);
        return false;
    }
    *out = f;
    return true;
}

bool
nrtemu__fuse_hoistable(const struct op *op, const struct fuse_set *w,
                       const struct fuse_set *r)
{
    if (op->out == NO_BUFFER || op->n_lists != 0) {
        return false;
    }
    for (size_t k = 0; k < op->n_in; k++) {
        if (nrtemu__fuse_set_has(w, op->in[k])) {
            return false;
        }
    }
    return !nrtemu__fuse_set_has(w, op->out) &&
           !nrtemu__fuse_set_has(r, op->out);
}

static NRT_STATUS fuse_list(const char *func, const struct nrtemu_program *p,
                            struct op_list *list, const struct fuse_uses *u);

/*
 * The leading axes a reduction `op` of the chain's result keeps, when it
 * can join the chain: its operand is written by the chain (`w`), it
 * reduces trailing axes, rows of at most FUSE_MAX_ROW elements, and its
 * out is nothing the chain uses.  UINT32_MAX otherwise.
 */
static uint32_t
joining_reduction(const struct nrtemu_program *p, const struct op *op,
                  const struct fuse_set *w, const struct fuse_set *r)
{
    const struct buffer *in;
    uint32_t kept = 0;
    uint64_t row = 1;

    if (nrtemu__op_defs[op->op].run != nrtemu__op_run_reduce ||
        !nrtemu__fuse_set_has(w, op->in[0]) || op->via_scratch ||
        op->out == op->in[0] || nrtemu__fuse_set_has(w, op->out) ||
        nrtemu__fuse_set_has(r, op->out)) {
        return UINT32_MAX;
    }
    in = &p->buffers[op->in[0]];
    while (kept < in->ndim && (op->axes & (1u << kept)) == 0) {
        kept++;
    }
    for (uint32_t e = kept; e < in->ndim; e++) {
        if ((op->axes & (1u << e)) == 0) {
            return UINT32_MAX; /* not trailing */
        }
        row *= in->shape[e];
    }
    return row <= FUSE_MAX_ROW ? kept : UINT32_MAX;
}

/* The chain that starts at list->ops[i], if any; *next: where the scan
 * goes on. */
static NRT_STATUS
fuse_from(const char *func, const struct nrtemu_program *p,
          struct op_list *list, const struct fuse_uses *u, size_t i,
          size_t *next)
{
    const struct buffer *sb = &p->buffers[list->ops[i].out];
    size_t chain[FUSE_MAX_CHAIN + 1], hoisted[FUSE_MAX_HOIST];
    size_t n_chain = 0, n_hoisted = 0;
    struct fuse_set w = {0}, r = {0};
    uint32_t kept = UINT32_MAX;
    NRT_STATUS st = NRT_SUCCESS;

    for (size_t j = i; j < list->count; j++) {
        const struct op *op = &list->ops[j];
        if (n_chain < FUSE_MAX_CHAIN && is_elementwise(op) &&
            same_shape(&p->buffers[op->out], sb->ndim, sb->shape)) {
            chain[n_chain++] = j;
            for (size_t k = 0; k < op->n_in; k++) {
                if (!nrtemu__fuse_set_add(&r, op->in[k])) {
                    goto oom;
                }
            }
            if (!nrtemu__fuse_set_add(&w, op->out)) {
                goto oom;
            }
        } else if (n_hoisted < FUSE_MAX_HOIST &&
                   nrtemu__fuse_hoistable(op, &w, &r)) {
            hoisted[n_hoisted++] = j;
        } else {
            /* A reduction of the chain's result may end it. */
            kept = joining_reduction(p, op, &w, &r);
            if (kept != UINT32_MAX) {
                chain[n_chain++] = j;
            }
            break;
        }
    }
    /* Ops hoisted after the last chain op are no part of it. */
    while (n_hoisted > 0 && hoisted[n_hoisted - 1] > chain[n_chain - 1]) {
        n_hoisted--;
    }
    if (n_chain >= 2 && sb->count > 0) {
        if (!build(p, list, u, chain, n_chain, kept, hoisted, n_hoisted,
                   &list->ops[i].fusion)) {
            goto oom;
        }
        *next = i + list->ops[i].fusion->span;
    } else {
        *next = i + 1;
    }
    goto done;

oom:
    st = nrtemu__fail(NRT_RESOURCE, func,
                      "%s: out of host memory to plan fusion", p->path);
done:
    free(w.items);
    free(r.items);
    return st;
}

static NRT_STATUS
fuse_list(const char *func, const struct nrtemu_program *p,
          struct op_list *list, const struct fuse_uses *u)
{
    NRT_STATUS st = NRT_SUCCESS;

    for (size_t i = 0; i < list->count && st == NRT_SUCCESS;) {
        struct op *op = &list->ops[i];
        for (size_t k = 0; k < op->n_lists && st == NRT_SUCCESS; k++) {
            st = fuse_list(func, p, &op->lists[k], u);
        }
        if (st != NRT_SUCCESS) {
            break;
        }
        st = nrtemu__row_group_plan(func, p, list, u, i);
        if (st != NRT_SUCCESS) {
            break;
        }
        if (op->row_group != NULL) {
            i += nrtemu__row_group_span(list, i);
        } else if (is_elementwise(op)) {
            st = fuse_from(func, p, list, u, i, &i);
        } else {
            i++;
        }
    }
    return st;
}

NRT_STATUS
nrtemu__program_fuse(const char *func, struct nrtemu_program *p)
{
    const char *env = getenv("NRTPY_EMU_FUSION");
    bool enabled = true;
    struct fuse_uses u;
    NRT_STATUS st;

    if (env != NULL && !nrtemu__env_blank(env) &&
        !nrtemu__parse_bool(env, &enabled)) {
        return nrtemu__reject(NRT_INVALID, func,
                              "invalid NRTPY_EMU_FUSION='%.32s': expected 1, "
                              "0, true or false",
                              env);
    }
    if (!enabled) {
        return NRT_SUCCESS;
    }
    u.reads = calloc(p->buffer_count ? p->buffer_count : 1, sizeof *u.reads);
    u.writes = calloc(p->buffer_count ? p->buffer_count : 1, sizeof *u.writes);
    if (u.reads == NULL || u.writes == NULL) {
        st = nrtemu__fail(NRT_RESOURCE, func,
                          "%s: out of host memory to plan fusion", p->path);
    } else {
        count_uses(&p->ops, &u);
        st = fuse_list(func, p, &p->ops, &u);
    }
    free(u.reads);
    free(u.writes);
    return st;
}

static void
fusion_stats(const struct op_list *list, struct nrtemu_fusion_stats *s)
{
    for (size_t i = 0; i < list->count; i++) {
        const struct op *op = &list->ops[i];
        const struct fusion *f = op->fusion;
        for (size_t k = 0; k < op->n_lists; k++) {
            fusion_stats(&op->lists[k], s);
        }
        if (op->row_group != NULL) {
            nrtemu__row_group_stats(op->row_group, s);
        }
        if (f == NULL) {
            continue;
        }
        s->chains++;
        s->ops += f->n_chain - f->reduce;
        s->reductions += f->reduce;
        s->hoisted += f->n_hoisted;
        for (size_t c = 0; c < f->n_chain; c++) {
            s->intermediates +=
                f->chain[c].out.slot >= 0 || f->chain[c].virtual;
            s->virtual_broadcasts += f->chain[c].virtual;
        }
    }
}

void
nrtemu__program_fusion_stats(const struct nrtemu_program *p,
                             struct nrtemu_fusion_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    fusion_stats(&p->ops, stats);
}

/* ------------------------------------------------------------------ */
/* Running                                                            */

/* An intermediate's block: `len` rows of S's trailing dimensions. */
static void
slot_view(const struct fusion *f, const struct buffer *b, char *data,
          uint64_t len, struct nrtemu_array *a)
{
    a->data = data;
    a->dtype = b->dtype;
    a->ndim = 0;
    for (uint32_t e = f->split; e < f->ndim; e++) {
        a->shape[a->ndim++] = e == f->split ? len : f->shape[e];
    }
}

/*
 * The part of buffer `b`, broadcast to S, that block (`lead`, `start`,
 * `len`) covers: a dense array, since a block is whole trailing rows.
 */
static void
block_view(const struct fusion *f, const struct buffer *b, char *data,
           const uint64_t *lead, uint64_t start, uint64_t len,
           struct nrtemu_array *a)
{
    uint32_t lag = f->ndim - b->ndim; /* S dims b lacks, at the front */
    uint64_t stride = 1, off = 0;

    a->dtype = b->dtype;
    a->ndim = 0;
    for (uint32_t e = f->ndim; e-- > lag;) {
        uint64_t n = b->shape[e - lag];
        if (e < f->split) {
            off += n == 1 ? 0 : lead[e] * stride;
        } else if (e == f->split) {
            off += n == 1 ? 0 : start * stride;
        }
        stride *= n;
    }
    for (uint32_t e = f->split > lag ? f->split : lag; e < f->ndim; e++) {
        uint64_t n = b->shape[e - lag];
        a->shape[a->ndim++] = e == f->split && n != 1 ? len : n;
    }
    a->data = data + off * nrtemu__dtype_size(b->dtype);
}

/* The rows of a reduction's out that block (`lead`, `start`, `len`)
 * computes: its kept axes from split on. */
static void
reduced_view(const struct fusion *f, const struct buffer *b, char *data,
             const uint64_t *lead, uint64_t start, uint64_t len,
             struct nrtemu_array *a)
{
    uint64_t stride = 1, off = 0;

    for (uint32_t e = f->kept; e-- > 0;) {
        if (e < f->split) {
            off += lead[e] * stride;
        } else if (e == f->split) {
            off += start * stride;
        }
        stride *= f->shape[e];
    }
    a->dtype = b->dtype;
    a->ndim = 0;
    for (uint32_t e = f->split; e < f->kept; e++) {
        a->shape[a->ndim++] = e == f->split ? len : f->shape[e];
    }
    a->data = data + off * nrtemu__dtype_size(b->dtype);
}

bool
nrtemu__fuse_io_overlaps(const struct nrtemu_program *p, const size_t *io,
                         const bool *io_write, size_t n_io, void *const *data)
{
    for (size_t i = 0; i < n_io; i++) {
        const struct buffer *bi = &p->buffers[io[i]];
        const char *di = data[io[i]];
        for (size_t j = i + 1; j < n_io; j++) {
            const struct buffer *bj = &p->buffers[io[j]];
            const char *dj = data[io[j]];
            if ((!io_write[i] && !io_write[j]) || bi->bytes == 0 ||
                bj->bytes == 0 || di + bi->bytes <= dj ||
                dj + bj->bytes <= di) {
                continue;
            }
            if (di == dj && bi->dtype == bj->dtype &&
                same_shape(bi, bj->ndim, bj->shape)) {
                continue; /* one tensor, element for element */
            }
            return true;
        }
    }
    return false;
}

NRT_STATUS
nrtemu__fuse_run_each(const struct op_call *c, const struct op_list *list,
                      size_t first, size_t span)
{
    for (size_t i = first; i < first + span; i++) {
        NRT_STATUS st = nrtemu__program_run_op(c, &list->ops[i]);
        if (st != NRT_SUCCESS) {
            return st;
        }
    }
    return NRT_SUCCESS;
}

NRT_STATUS
nrtemu__fuse_run_hoisted(const struct op_call *c, const struct op_list *list,
                         const size_t *hoisted, size_t n_hoisted)
{
    for (size_t h = 0; h < n_hoisted; h++) {
        NRT_STATUS st = nrtemu__program_run_op(c, &list->ops[hoisted[h]]);
        if (st != NRT_SUCCESS) {
            return st;
        }
    }
    return NRT_SUCCESS;
}

/* Whether chained op k reads buffer b from memory (not from a slot). */
static bool
reads_buffer(const struct fused_op *fo, size_t b)
{
    for (size_t a = 0; a < fo->op->n_in; a++) {
        if (fo->in[a].slot < 0 && fo->in[a].buffer == b) {
            return true;
        }
    }
    return false;
}

/*
 * The chained ops whose results go out with non-temporal stores
 * (kernel_stream.h), as bits by chain index: those that write a buffer
 * (not a slot, not the reduction's result) that no later op of the chain
 * reads, when the buffers the chain touches in memory outgrow the
 * last-level cache, as kstream_wanted() judges a single op.  A kernel
 * asked of one block alone sees a small op and never streams: at 2048 x
 * 2048 every result line was then read from memory before it was
 * written.
 */
static uint64_t
stream_ops(const struct nrtemu_program *p, const struct fusion *f)
{
    uint64_t bytes = 0, out_bytes = 0, ops = 0;
    size_t seen[FUSE_MAX_CHAIN * 4], n_seen = 0;

    for (size_t k = 0; k < f->n_chain; k++) {
        const struct fused_op *fo = &f->chain[k];
        bool last = true;
        if (fo->virtual) {
            continue;
        }
        for (size_t a = 0; a <= fo->op->n_in; a++) {
            const struct fused_arg *arg =
                a < fo->op->n_in ? &fo->in[a] : &fo->out;
            size_t i = 0;
            if (arg->slot >= 0) {
                continue;
            }
            while (i < n_seen && seen[i] != arg->buffer) {
                i++;
            }
            if (i == n_seen) {
                seen[n_seen++] = arg->buffer;
                bytes += p->buffers[arg->buffer].bytes;
            }
        }
        if (fo->out.slot >= 0 || (f->reduce && k == f->n_chain - 1)) {
            continue;
        }
        for (size_t j = k + 1; j < f->n_chain && last; j++) {
            last = f->chain[j].virtual ||
                   !reads_buffer(&f->chain[j], fo->out.buffer);
        }
        if (last) {
            ops |= (uint64_t)1 << k;
            out_bytes += p->buffers[fo->out.buffer].bytes;
        }
    }
    return ops != 0 && kstream_wanted(bytes, out_bytes) ? ops : 0;
}

/*
 * Blocks [first, end) of the chain (nrtemu_fuse_blocks_fn), in the order
 * lead index, then start along dimension split; the ops in `streamed`
 * are those of stream_ops.
 */
static NRT_STATUS
run_blocks(const struct op_call *c, const void *plan, uint64_t first,
           uint64_t end, uint64_t streamed, char *slots,
           struct nrtemu_scratch *scratch, const struct op **failed)
{
    const struct fusion *f = plan;
    struct nrtemu_program *p = c->program;
    uint64_t extent = f->ndim == 0 ? 1 : f->shape[f->split];
    uint64_t per_lead = (extent + f->rows - 1) / f->rows;

    for (uint64_t blk = first; blk < end; blk++) {
        uint64_t lead[NRTEMU_MAX_DIMS] = {0}, l = blk / per_lead;
        uint64_t start = blk % per_lead * f->rows;
        uint64_t len = extent - start < f->rows ? extent - start : f->rows;
        for (uint32_t e = f->split; e-- > 0;) {
            lead[e] = l % f->shape[e];
            l /= f->shape[e];
        }
        for (size_t k = 0; k < f->n_chain; k++) {
            const struct fused_op *fo = &f->chain[k];
            struct nrtemu_array in[3], out;
            bool reduce = f->reduce && k == f->n_chain - 1;
            NRT_STATUS st;
            if (fo->virtual) {
                continue;
            }
            for (size_t a = 0; a <= fo->op->n_in; a++) {
                const struct fused_arg *arg =
                    a < fo->op->n_in ? &fo->in[a] : &fo->out;
                struct nrtemu_array *view = a < fo->op->n_in ? &in[a] : &out;
                const struct buffer *b = &p->buffers[arg->buffer];
                if (arg->slot >= 0) {
                    slot_view(f, b, slots + (size_t)arg->slot * f->block * 8,
                              len, view);
                } else if (reduce && arg == &fo->out) {
                    reduced_view(f, b, c->data[arg->buffer], lead, start, len,
                                 view);
                } else {
                    block_view(f, b, c->data[arg->buffer], lead, start, len,
                               view);
                }
            }
            st = reduce
                     ? nrtemu__kernel_reduce(fo->op->op, fo->op->compute, &out,
                                             &in[0], fo->axes, scratch)
                     : nrtemu__kernel_elementwise_part(
                           fo->kernel, fo->op->compute, &out, in,
                           (int)fo->op->n_in, scratch,
                           (streamed >> k & 1) != 0);
            if (st != NRT_SUCCESS) {
                *failed = fo->op;
                return st;
            }
        }
    }
    return NRT_SUCCESS;
}

/*
 * A plan's blocks shared out among the pool's threads: each task, with
 * slots and kernel scratch of its own (blocks write disjoint parts of
 * every buffer the plan writes), claims runs of `run` consecutive blocks
 * from `next` until none is left.  A worker that joins late (a parked
 * one can take a good part of a plan's time to wake) so leaves the runs
 * it does not reach to the caller, which would wait for it with a fixed
 * half of the blocks each.
 */
struct blocks_job {
    const struct op_call *c;
    nrtemu_fuse_blocks_fn *fn;
    const void *plan;
    uint64_t blocks;
    uint64_t run;          /* blocks a claim takes */
    _Atomic uint64_t next; /* the first block no task has claimed */
    uint64_t streamed;
    char *slots;
    size_t slot_bytes; /* per task */
    struct nrtemu_scratch *scratch;
    NRT_STATUS *st;
    const struct op **failed;
};

static void
blocks_task(void *arg, uint32_t t)
{
    struct blocks_job *job = arg;

    job->st[t] = NRT_SUCCESS;
    for (;;) {
        uint64_t first = atomic_fetch_add_explicit(&job->next, job->run,
                                                   memory_order_relaxed);
        uint64_t end;
        if (first >= job->blocks || job->st[t] != NRT_SUCCESS) {
            return;
        }
        end = job->blocks - first < job->run ? job->blocks : first + job->run;
        job->st[t] = job->fn(job->c, job->plan, first, end, job->streamed,
                             job->slots + (size_t)t * job->slot_bytes,
                             &job->scratch[t], &job->failed[t]);
    }
}

/* Runs of blocks a task claims, about (runs of a few hundred thousand
 * elements: long enough for the hardware prefetchers). */
#define FUSE_RUNS_PER_TASK 8

/* Plans of fewer elements run on the calling thread alone. */
#define FUSE_PARALLEL_MIN ((uint64_t)1 << 17)

/* At most this many tasks share a plan. */
#define FUSE_MAX_TASKS 64

NRT_STATUS
nrtemu__fuse_run_blocks(const struct op_call *c, nrtemu_fuse_blocks_fn *run,
                        const void *plan, uint64_t blocks, uint64_t elements,
                        uint64_t streamed, size_t slot_bytes)
{
    struct nrtemu_program *p = c->program;
    struct nrtemu_scratch scratch[FUSE_MAX_TASKS];
    NRT_STATUS st[FUSE_MAX_TASKS];
    const struct op *failed[FUSE_MAX_TASKS];
    struct blocks_job job = {
        .c = c, .fn = run, .plan = plan, .blocks = blocks};
    uint32_t tasks = 1;

    if (elements >= FUSE_PARALLEL_MIN && blocks >= 2) {
        uint32_t threads = nrtemu__pool_threads();
        threads = threads < FUSE_MAX_TASKS ? threads : FUSE_MAX_TASKS;
        if (p->task_scratch == NULL && threads > 1) {
            /* Kernel scratch of tasks 1...; task 0 takes the program's. */
            p->task_scratch = calloc(threads - 1, sizeof *p->task_scratch);
            p->n_task_scratch = p->task_scratch != NULL ? threads - 1 : 0;
        }
        tasks = threads < blocks ? threads : (uint32_t)blocks;
        tasks = tasks < p->n_task_scratch + 1 ? tasks : p->n_task_scratch + 1;
    }
    job.run = blocks / ((uint64_t)tasks * FUSE_RUNS_PER_TASK);
    job.run = job.run > 0 ? job.run : 1;
    atomic_init(&job.next, 0);
    job.streamed = streamed;
    job.slot_bytes = (slot_bytes + 63) / 64 * 64;
    job.slot_bytes = job.slot_bytes ? job.slot_bytes : 64;
    job.slots = nrtemu__scratch_get(&p->fused, job.slot_bytes * tasks);
    if (job.slots == NULL) {
        return nrtemu__fail(NRT_RESOURCE, c->func,
                            "%s: out of host memory for fused ops", p->path);
    }
    /* The tasks' scratch lives in the program between runs. */
    scratch[0] = p->scratch;
    for (uint32_t t = 1; t < tasks; t++) {
        scratch[t] = p->task_scratch[t - 1];
    }
    job.scratch = scratch;
    job.st = st;
    job.failed = failed;
    if (tasks == 1) {
        blocks_task(&job, 0);
    } else {
        nrtemu__pool_run(blocks_task, &job, tasks);
    }
    p->scratch = scratch[0];
    for (uint32_t t = 1; t < tasks; t++) {
        p->task_scratch[t - 1] = scratch[t];
    }
    for (uint32_t t = 0; t < tasks; t++) {
        if (st[t] != NRT_SUCCESS) {
            return nrtemu__fail(st[t], c->func,
                                "%s: %sop %zu (%s): out of host memory for "
                                "its working space",
                                p->path, failed[t]->where, failed[t]->index,
                                nrtemu__op_name(failed[t]->op));
        }
    }
    return NRT_SUCCESS;
}

static NRT_STATUS
run_chain(const struct op_call *c, const struct fusion *f)
{
    uint64_t extent = f->ndim == 0 ? 1 : f->shape[f->split], count = 1;
    uint64_t blocks = (extent + f->rows - 1) / f->rows;

    for (uint32_t e = 0; e < f->ndim; e++) {
        count *= f->shape[e];
    }
    for (uint32_t e = 0; e < f->split; e++) {
        blocks *= f->shape[e];
    }
    return nrtemu__fuse_run_blocks(
        c, run_blocks, f, blocks, count, stream_ops(c->program, f),
        (f->n_slots ? f->n_slots : 1) * f->block * 8);
}

NRT_STATUS
nrtemu__fusion_run(const struct op_call *c, const struct op_list *list,
                   size_t first)
{
    const struct fusion *f = list->ops[first].fusion;
    NRT_STATUS st;

    /* Written buffers of a chain all have its shape, so two that are one
     * tensor used whole by both have it too. */
    if (nrtemu__fuse_io_overlaps(c->program, f->io, f->io_write, f->n_io,
                                 c->data)) {
        return nrtemu__fuse_run_each(c, list, first, f->span);
    }
    st = nrtemu__fuse_run_hoisted(c, list, f->hoisted, f->n_hoisted);
    return st != NRT_SUCCESS ? st : run_chain(c, f);
}

size_t
nrtemu__fusion_span(const struct op_list *list, size_t first)
{
    return list->ops[first].fusion->span;
}
