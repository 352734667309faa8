/*
 * program_fuse_rows.c - row groups: a reduction over trailing axes, the
 * ops before it that make its operand and the ops after it that use its
 * result, run one block of whole rows at a time.
 *
 * A norm or a softmax is a chain of elementwise ops ending in a reduction
 * over the last axis, a few ops on the reduced result (one element per
 * row), and a chain that reads that result broadcast along each row with
 * the original rows again.  Run op by op (or as the chains of
 * program_fuse.c), each of those passes reads its operand from memory
 * once the operand outgrows the cache.  A row group runs all of them on a
 * block of rows before the next block, so that the rows a later op reads
 * are still in cache, and the results that only ops of the group read
 * (intermediates) never reach memory.
 *
 * The rows are the leading `lead` dimensions of the first reduction the
 * planner finds (those it keeps), flattened.  An op joins the group when
 * its result and every operand are, along the rows, row-independent:
 *   - an elementwise op (or broadcast_to, run as copy) whose result has
 *     the rows as its leading dimensions, each operand either with the
 *     same leading dimensions (a block reads the same rows of it), with
 *     none of them (extent 1 or absent: every block reads all of it), or
 *     with extent 1 in the leading ones of them and the rows' extents in
 *     the others (attention's mask [1, T, T] for rows [H, T]: row r
 *     reads its row r mod T; blocks then stop at each multiple of T, so
 *     that a block reads consecutive rows of it);
 *     pow only with an exponent of the second kind (its kernel takes
 *     another path for an exponent of one element, which a block of one
 *     row would turn a row-sliced one into);
 *   - a reduction (sum, mean, max, min, prod) of such an operand over
 *     trailing axes after the rows;
 *   - a reshape that keeps the rows (each row's elements stay where they
 *     are, in the same order).
 * Ops between them that touch nothing the group wrote or read before
 * them are hoisted, as for chains.  The group must hold a reduction and
 * an elementwise op after it: else the chains of program_fuse.c cover it.
 *
 * Every op runs on a block through the same kernel as unfused, on views
 * of the block's rows: an elementwise op's elements do not depend on each
 * other, a reduction folds each row as it folds it among all rows
 * (kernel_reduce.c: one output element is folded by one task, in one
 * order), and a reshape moves no element.  Results are so bit for bit
 * those of running the ops one by one.  An intermediate lives in a per
 * task slot; a reshape of an intermediate does not run at all (its
 * readers read the slot, as its shape), nor does an elementwise op whose
 * elements an earlier op of the group already computes: the same op on
 * the same operands, with the same dtypes, and no op in between writes
 * an operand they read from memory (the HLO compiler writes a norm's
 * convert of its input twice); its readers read that op's result.
 * Blocks are independent, so the pool's threads share them, through the
 * runner that chains use (nrtemu__fuse_run_blocks).
 *
 * When the caller's input and output memory overlap other than as one
 * tensor used whole by both, the group runs op by op.  NRTPY_EMU_FUSION=0
 * turns row groups off with the rest of fusion.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "kernels/kernel_stream.h"
#include "program/program_internal.h"

/* Elements of the widest buffer of the group per block, about: its rows
 * and the intermediates of a block stay within L2, while a block is long
 * enough that calling each op's kernel on it costs little beside its
 * work. */
#ifndef ROWS_BLOCK
#define ROWS_BLOCK 32768
#endif

/* Ops of a group and ops hoisted from it, at most (planning stays linear
 * in the ops of a program). */
#define ROWS_MAX_OPS 64
#define ROWS_MAX_HOIST 64

/* Rows at most this wide (elements of a buffer per row): a block holds
 * at least one. */
#define ROWS_MAX_WIDTH 65536

enum row_kind {
    ROW_NONE,
    ROW_ELEMENTWISE,
    ROW_REDUCE,
    ROW_RESHAPE,
};

/* Where one operand or result of an op of the group lives. */
struct row_arg {
    size_t buffer; /* its shape and dtype */
    size_t data;   /* the buffer whose memory holds it (a reshape's source) */
    int slot;      /* >= 0: an intermediate, in this slot */
    bool whole;    /* none of the rows: every block reads all of it */
    uint64_t period;  /* else its rows: row r of the group reads r mod it */
    size_t row_bytes; /* bytes of one of them */
};

struct row_op {
    const struct op *op;
    enum row_kind kind;
    enum nrtemu_op kernel; /* an elementwise op's: copy for broadcast_to */
    bool virtual;          /* a reshape whose readers read its source */
    uint32_t axes;         /* a reduction's, over a block */
    struct row_arg in[3];
    struct row_arg out;
};

struct row_group {
    size_t span;
    size_t *hoisted; /* indices into the list */
    size_t n_hoisted;
    struct row_op *ops;
    size_t n_ops;
    uint32_t lead;     /* leading dimensions that make the rows */
    uint64_t rows;     /* their product */
    uint64_t block;    /* rows per block */
    uint64_t period;   /* no block crosses a multiple of it (lead_broadcast) */
    uint64_t elements; /* of the widest buffer */
    size_t n_slots;
    size_t slot_bytes;
    /* Ops that may stream their results (bit per op), and the bytes of
     * the memory the group touches and of those results, for
     * kstream_wanted() at run time. */
    uint64_t streamable;
    uint64_t bytes, out_bytes;
    /* The I/O buffers it reads and writes in memory, for the overlap
     * check at run time; `io_write[i]` tells which. */
    size_t *io;
    bool *io_write;
    size_t n_io;
};

void
nrtemu__row_group_free(struct row_group *g)
{
    if (g != NULL) {
        free(g->hoisted);
        free(g->ops);
        free(g->io);
        free(g->io_write);
        free(g);
    }
}

size_t
nrtemu__row_group_span(const struct op_list *list, size_t first)
{
    return list->ops[first].row_group->span;
}

/* Whether b's leading `lead` dimensions are `rows`. */
static bool
has_rows(const struct buffer *b, uint32_t lead, const uint64_t *rows)
{
    if (b->ndim < lead) {
        return false;
    }
    for (uint32_t d = 0; d < lead; d++) {
        if (b->shape[d] != rows[d]) {
            return false;
        }
    }
    return true;
}

/* Whether b, broadcast to `ndim` dimensions, has extent 1 along the
 * leading `lead` (or lacks them). */
static bool
no_rows(const struct buffer *b, uint32_t ndim, uint32_t lead)
{
    uint32_t lag;

    if (b->ndim > ndim) {
        return false;
    }
    lag = ndim - b->ndim;
    for (uint32_t d = lag; d < lead; d++) {
        if (b->shape[d - lag] != 1) {
            return false;
        }
    }
    return true;
}

/* The rows of b, a buffer of `lead` + some dimensions that broadcasts to
 * rows `rows` along extent 1 in its leading row dimensions and is full
 * in the others (a mask [1, T, T] of rows [H, T]): the product of its
 * full ones, each row r of the group reading its row r mod that.  0
 * when b is no such buffer (or has all the rows: then they are the
 * group's own). */
static uint64_t
lead_broadcast(const struct buffer *b, uint32_t ndim, uint32_t lead,
               const uint64_t *rows)
{
    uint64_t period = 1;
    uint32_t d = 0;
    bool broadcast = false;

    if (b->ndim != ndim) {
        return 0;
    }
    for (; d < lead && b->shape[d] == 1; d++) {
        broadcast = broadcast || rows[d] != 1;
    }
    if (!broadcast || d == lead) {
        return 0; /* (none of the rows: all of it for every row) */
    }
    for (; d < lead; d++) {
        if (b->shape[d] != rows[d]) {
            return 0;
        }
        period *= rows[d];
    }
    return period;
}

/* The leading axes a reduction keeps when it reduces trailing ones (and
 * some), else 0. */
static uint32_t
trailing_kept(const struct nrtemu_program *p, const struct op *op)
{
    const struct buffer *in = &p->buffers[op->in[0]];
    uint32_t kept = 0;

    if (nrtemu__op_defs[op->op].run != nrtemu__op_run_reduce ||
        op->n_in != 1 || op->via_scratch || op->out == op->in[0]) {
        return 0;
    }
    while (kept < in->ndim && (op->axes & (1u << kept)) == 0) {
        kept++;
    }
    for (uint32_t e = kept; e < in->ndim; e++) {
        if ((op->axes & (1u << e)) == 0) {
            return 0;
        }
    }
    return kept < in->ndim ? kept : 0;
}

/* How `op` joins a group whose rows are the leading `lead` dimensions
 * `rows`: ROW_NONE when it cannot. */
static enum row_kind
row_kind(const struct nrtemu_program *p, const struct op *op, uint32_t lead,
         const uint64_t *rows)
{
    const struct buffer *o;
    nrtemu_op_run_fn *run = nrtemu__op_defs[op->op].run;

    if (op->out == NO_BUFFER || op->n_lists != 0 || op->via_scratch ||
        op->n_in < 1 || op->n_in > 3) {
        return ROW_NONE;
    }
    o = &p->buffers[op->out];
    if (!has_rows(o, lead, rows) || o->count == 0) {
        return ROW_NONE;
    }
    if (run == nrtemu__op_run_elementwise ||
        op->op == NRTEMU_OP_BROADCAST_TO) {
        for (size_t k = 0; k < op->n_in; k++) {
            const struct buffer *b = &p->buffers[op->in[k]];
            bool aligned = (b->ndim == o->ndim && has_rows(b, lead, rows)) ||
                           lead_broadcast(b, o->ndim, lead, rows) != 0;
            if (aligned ? op->op == NRTEMU_OP_POW && k == 1
                        : !no_rows(b, o->ndim, lead)) {
                return ROW_NONE;
            }
        }
        return ROW_ELEMENTWISE;
    }
    if (op->op == NRTEMU_OP_RESHAPE) {
        return has_rows(&p->buffers[op->in[0]], lead, rows) ? ROW_RESHAPE
                                                            : ROW_NONE;
    }
    if (trailing_kept(p, op) >= lead &&
        has_rows(&p->buffers[op->in[0]], lead, rows)) {
        return ROW_REDUCE;
    }
    return ROW_NONE;
}

/* The rows of a group starting at list->ops[i]: the kept axes of the
 * first reduction over trailing axes among the next ops.  False when
 * there is none before an op no group can pass. */
static bool
find_rows(const struct nrtemu_program *p, const struct op_list *list, size_t i,
          uint32_t *lead, uint64_t *rows)
{
    for (size_t j = i; j < list->count && j < i + ROWS_MAX_OPS; j++) {
        const struct op *op = &list->ops[j];
        uint32_t kept;
        uint64_t count = 1;
        if (op->out == NO_BUFFER || op->n_lists != 0) {
            return false;
        }
        if (nrtemu__op_defs[op->op].run != nrtemu__op_run_reduce) {
            continue;
        }
        kept = trailing_kept(p, op);
        if (kept == 0) {
            return false;
        }
        *lead = kept;
        memcpy(rows, p->buffers[op->in[0]].shape, kept * sizeof *rows);
        for (uint32_t d = 0; d < kept; d++) {
            count *= rows[d];
        }
        return count >= 2;
    }
    return false;
}

/* Elements of b per row. */
static uint64_t
width(const struct row_group *g, const struct buffer *b)
{
    return b->count / g->rows;
}

/* Whether op ops[c] reads buffer `data` from memory. */
static bool
reads_memory(const struct row_op *ro, size_t data)
{
    for (size_t k = 0; k < ro->op->n_in; k++) {
        if (ro->in[k].slot < 0 && ro->in[k].data == data) {
            return true;
        }
    }
    return false;
}

/* Whether two arguments of ops of the group are the same elements. */
static bool
same_arg(const struct row_arg *a, const struct row_arg *b)
{
    return a->buffer == b->buffer && a->data == b->data &&
           a->slot == b->slot && a->whole == b->whole &&
           a->period == b->period;
}

/*
 * An earlier op of the group whose result elementwise op ops[c] would
 * compute again (ops[c].in resolved, slots holding their owners): the
 * same op on the same operands, with the same compute dtype, into a
 * result of the same dtype and shape held in a slot, and no op between
 * them writes an operand they read from memory.  c when there is none.
 * Its readers then read that result (ops[c] becomes virtual): the
 * elements are those it would have computed, bit for bit.
 */
static size_t
same_as(const struct nrtemu_program *p, const struct row_group *g, size_t c)
{
    const struct row_op *ro = &g->ops[c];
    const struct buffer *o = &p->buffers[ro->op->out];

    for (size_t e = c; e-- > 0;) {
        const struct row_op *re = &g->ops[e];
        const struct buffer *oe = &p->buffers[re->op->out];
        bool same = !re->virtual && re->kind == ROW_ELEMENTWISE &&
                    re->out.slot == (int)e && re->op->op == ro->op->op &&
                    re->op->compute == ro->op->compute &&
                    re->op->n_in == ro->op->n_in && oe->dtype == o->dtype &&
                    oe->ndim == o->ndim &&
                    memcmp(oe->shape, o->shape, o->ndim * sizeof *o->shape) ==
                        0;
        for (size_t k = 0; same && k < ro->op->n_in; k++) {
            same = same_arg(&re->in[k], &ro->in[k]);
        }
        for (size_t j = e + 1; same && j < c; j++) {
            for (size_t k = 0; same && k < ro->op->n_in; k++) {
                same =
                    ro->in[k].slot >= 0 || g->ops[j].op->out != ro->in[k].data;
            }
        }
        if (same) {
            return e;
        }
    }
    return c;
}

/*
 * Intermediates, virtual ops, slots and block size of group g, its ops
 * filled with their op and kind.  `inter` and `last` have n_ops entries.
 */
static void
plan_args(const struct nrtemu_program *p, const struct fuse_uses *u,
          struct row_group *g, bool *inter, size_t *last)
{
    size_t n = g->n_ops, n_free = 0, free_slots[ROWS_MAX_OPS];
    size_t slot_of[ROWS_MAX_OPS];
    uint64_t widest = 1, slot_width = 0;

    /* An intermediate: a temporary that op c alone writes and only later
     * ops of the group read. */
    for (size_t c = 0; c < n; c++) {
        size_t t = g->ops[c].op->out, reads = 0;
        last[c] = c;
        for (size_t e = c + 1; e < n; e++) {
            const struct op *r = g->ops[e].op;
            for (size_t k = 0; k < r->n_in; k++) {
                if (r->in[k] == t) {
                    reads++;
                    last[c] = e;
                }
            }
        }
        inter[c] = p->buffers[t].kind == BUFFER_TEMP && u->writes[t] == 1 &&
                   reads == u->reads[t];
    }
    /* Operands, results and virtual ops; until slots are handed out
     * below, an intermediate's slot is the op that owns it, whose last
     * reader a virtual op's readers may move on. */
    for (size_t c = 0; c < n; c++) {
        struct row_op *ro = &g->ops[c];
        const struct op *op = ro->op;
        const struct buffer *o = &p->buffers[op->out];
        for (size_t k = 0; k < op->n_in; k++) {
            const struct buffer *b = &p->buffers[op->in[k]];
            struct row_arg *a = &ro->in[k];
            uint64_t period =
                ro->kind == ROW_ELEMENTWISE
                    ? lead_broadcast(b, o->ndim, g->lead, o->shape)
                    : 0;
            *a = (struct row_arg){op->in[k], op->in[k], -1, false, g->rows, 0};
            a->whole =
                ro->kind == ROW_ELEMENTWISE && period == 0 &&
                !(b->ndim == o->ndim && b->ndim >= g->lead &&
                  memcmp(b->shape, o->shape, g->lead * sizeof *b->shape) == 0);
            if (period != 0) {
                a->period = period;
                g->period = period < g->period ? period : g->period;
            }
            for (size_t e = 0; e < c; e++) {
                if (inter[e] && g->ops[e].op->out == op->in[k]) {
                    *a = g->ops[e].out;
                    a->buffer = op->in[k];
                }
            }
        }
        ro->out = (struct row_arg){op->out, op->out, -1, false, g->rows, 0};
        /* A reshape into an intermediate reads as its source, unless an
         * op of the group writes the source's memory before its readers
         * are done.  An elementwise op into an intermediate that an
         * earlier op already computes (same_as) reads as that op's
         * result. */
        if (inter[c] && ro->kind == ROW_RESHAPE) {
            bool ok = true;
            for (size_t e = c + 1; ok && ro->in[0].slot < 0 && e <= last[c];
                 e++) {
                ok = g->ops[e].op->out != ro->in[0].data;
            }
            if (ok) {
                ro->virtual = true;
                ro->out = ro->in[0];
            }
        } else if (inter[c] && ro->kind == ROW_ELEMENTWISE) {
            size_t e = same_as(p, g, c);
            if (e < c) {
                ro->virtual = true;
                ro->out = g->ops[e].out;
            }
        }
        ro->out.buffer = op->out;
        if (ro->virtual && ro->out.slot >= 0 && last[ro->out.slot] < last[c]) {
            last[ro->out.slot] = last[c]; /* its slot stays taken as long */
        }
        if (inter[c] && !ro->virtual) {
            ro->out.slot = (int)c;
            slot_width =
                width(g, o) * nrtemu__dtype_size(o->dtype) > slot_width
                    ? width(g, o) * nrtemu__dtype_size(o->dtype)
                    : slot_width;
        }
        widest = width(g, o) > widest ? width(g, o) : widest;
        for (size_t k = 0; k < op->n_in; k++) {
            const struct buffer *b = &p->buffers[op->in[k]];
            uint64_t w = b->count / ro->in[k].period;
            if (!ro->in[k].whole && w > widest) {
                widest = w;
            }
        }
        if (ro->kind == ROW_REDUCE) {
            const struct buffer *b = &p->buffers[op->in[0]];
            for (uint32_t e = g->lead; e < b->ndim; e++) {
                ro->axes |= (op->axes >> e & 1u) << (e - g->lead + 1);
            }
        }
    }
    /* Slots: one per live intermediate, reused once its last reader has
     * run (never for that reader's own out: dtypes may differ in size). */
    for (size_t c = 0; c < n; c++) {
        if (g->ops[c].out.slot == (int)c) {
            slot_of[c] = n_free > 0 ? free_slots[--n_free] : g->n_slots++;
        }
        for (size_t e = 0; e < c; e++) {
            if (g->ops[e].out.slot == (int)e && last[e] == c) {
                free_slots[n_free++] = slot_of[e];
            }
        }
    }
    for (size_t c = 0; c < n; c++) {
        struct row_op *ro = &g->ops[c];
        for (size_t k = 0; k <= ro->op->n_in; k++) {
            struct row_arg *a = k < ro->op->n_in ? &ro->in[k] : &ro->out;
            a->slot = a->slot >= 0 ? (int)slot_of[a->slot] : -1;
            a->row_bytes = (size_t)(p->buffers[a->buffer].count / a->period) *
                           nrtemu__dtype_size(p->buffers[a->buffer].dtype);
        }
    }
    g->block = ROWS_BLOCK / widest;
    g->block = g->block == 0 ? 1 : g->block < g->period ? g->block : g->period;
    g->elements = g->rows * widest;
    g->slot_bytes = (size_t)(g->block * slot_width + 63) / 64 * 64;
}

/* The I/O the group uses in memory, and what may stream. */
static bool
plan_memory(const struct nrtemu_program *p, struct row_group *g)
{
    struct fuse_set io = {0}, seen = {0};
    bool ok = false;

    g->io = calloc(g->n_ops * 4, sizeof *g->io);
    g->io_write = calloc(g->n_ops * 4, sizeof *g->io_write);
    if (g->io == NULL || g->io_write == NULL) {
        goto done;
    }
    for (size_t c = 0; c < g->n_ops; c++) {
        const struct row_op *ro = &g->ops[c];
        bool last = true;
        for (size_t k = 0; !ro->virtual && k <= ro->op->n_in; k++) {
            const struct row_arg *a = k < ro->op->n_in ? &ro->in[k] : &ro->out;
            enum buffer_kind kind = p->buffers[a->data].kind;
            size_t at;
            if (a->slot >= 0) {
                continue;
            }
            if (!nrtemu__fuse_set_has(&seen, a->data)) {
                if (!nrtemu__fuse_set_add(&seen, a->data)) {
                    goto done;
                }
                g->bytes += p->buffers[a->data].bytes;
            }
            if (kind != BUFFER_INPUT && kind != BUFFER_OUTPUT) {
                continue;
            }
            if (!nrtemu__fuse_set_add(&io, a->data)) {
                goto done;
            }
            for (at = 0; io.items[at] != a->data; at++) {
            }
            g->io[at] = a->data;
            g->io_write[at] = g->io_write[at] || k == ro->op->n_in;
        }
        if (ro->virtual || ro->kind != ROW_ELEMENTWISE || ro->out.slot >= 0) {
            continue;
        }
        for (size_t e = c + 1; e < g->n_ops && last; e++) {
            last = g->ops[e].virtual ||
                   !reads_memory(&g->ops[e], ro->out.data);
        }
        if (last && c < 64) {
            g->streamable |= (uint64_t)1 << c;
            g->out_bytes += p->buffers[ro->out.data].bytes;
        }
    }
    g->n_io = io.count;
    ok = true;

done:
    free(io.items);
    free(seen.items);
    return ok;
}

/* The group of ops `members` (kinds `kinds`), hoisting `hoisted`. */
static bool
build(const struct nrtemu_program *p, const struct op_list *list,
      const struct fuse_uses *u, const size_t *members,
      const enum row_kind *kinds, size_t n, const size_t *hoisted,
      size_t n_hoisted, uint32_t lead, const uint64_t *rows,
      struct row_group **out)
{
    struct row_group *g = calloc(1, sizeof *g);
    bool inter[ROWS_MAX_OPS];
    size_t last[ROWS_MAX_OPS];

    if (g == NULL) {
        return false;
    }
    g->ops = calloc(n, sizeof *g->ops);
    g->hoisted = calloc(n_hoisted ? n_hoisted : 1, sizeof *g->hoisted);
    if (g->ops == NULL || g->hoisted == NULL) {
        nrtemu__row_group_free(g);
        return false;
    }
    memcpy(g->hoisted, hoisted, n_hoisted * sizeof *hoisted);
    g->n_hoisted = n_hoisted;
    g->n_ops = n;
    g->span = members[n - 1] - members[0] + 1;
    g->lead = lead;
    g->rows = 1;
    for (uint32_t d = 0; d < lead; d++) {
        g->rows *= rows[d];
    }
    g->period = g->rows;
    for (size_t c = 0; c < n; c++) {
        const struct op *op = &list->ops[members[c]];
        g->ops[c].op = op;
        g->ops[c].kind = kinds[c];
        g->ops[c].kernel =
            op->op == NRTEMU_OP_BROADCAST_TO ? NRTEMU_OP_COPY : op->op;
    }
    plan_args(p, u, g, inter, last);
    if (!plan_memory(p, g)) {
        nrtemu__row_group_free(g);
        return false;
    }
    *out = g;
    return true;
}

NRT_STATUS
nrtemu__row_group_plan(const char *func, const struct nrtemu_program *p,
                       struct op_list *list, const struct fuse_uses *u,
                       size_t i)
{
    size_t members[ROWS_MAX_OPS], hoisted[ROWS_MAX_HOIST];
    enum row_kind kinds[ROWS_MAX_OPS];
    size_t n = 0, n_hoisted = 0;
    uint64_t rows[NRTEMU_MAX_DIMS], count = 1;
    uint32_t lead;
    struct fuse_set w = {0}, r = {0};
    bool reduced = false, used = false;
    NRT_STATUS st = NRT_SUCCESS;

    if (!find_rows(p, list, i, &lead, rows) ||
        row_kind(p, &list->ops[i], lead, rows) == ROW_NONE) {
        return NRT_SUCCESS;
    }
    for (uint32_t d = 0; d < lead; d++) {
        count *= rows[d];
    }
    for (size_t j = i; j < list->count; j++) {
        const struct op *op = &list->ops[j];
        enum row_kind kind =
            n < ROWS_MAX_OPS ? row_kind(p, op, lead, rows) : ROW_NONE;
        bool fits = kind != ROW_NONE;
        for (size_t k = 0; fits && k <= op->n_in; k++) {
            const struct buffer *b =
                &p->buffers[k < op->n_in ? op->in[k] : op->out];
            fits =
                !has_rows(b, lead, rows) || b->count / count <= ROWS_MAX_WIDTH;
        }
        if (j == i && !fits) {
            break;
        }
        if (fits) {
            kinds[n] = kind;
            members[n++] = j;
            for (size_t k = 0; k < op->n_in; k++) {
                if (!nrtemu__fuse_set_add(&r, op->in[k])) {
                    goto oom;
                }
            }
            if (!nrtemu__fuse_set_add(&w, op->out)) {
                goto oom;
            }
            used = used || (reduced && kind == ROW_ELEMENTWISE);
            reduced = reduced || kind == ROW_REDUCE;
        } else if (n_hoisted < ROWS_MAX_HOIST &&
                   nrtemu__fuse_hoistable(op, &w, &r)) {
            hoisted[n_hoisted++] = j;
        } else {
            break;
        }
    }
    /* Ops hoisted after the last op of the group are no part of it. */
    while (n > 0 && n_hoisted > 0 && hoisted[n_hoisted - 1] > members[n - 1]) {
        n_hoisted--;
    }
    if (used && !build(p, list, u, members, kinds, n, hoisted, n_hoisted, lead,
                       rows, &list->ops[i].row_group)) {
        goto oom;
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

void
nrtemu__row_group_stats(const struct row_group *g,
                        struct nrtemu_fusion_stats *s)
{
    s->row_groups++;
    s->hoisted += g->n_hoisted;
    for (size_t c = 0; c < g->n_ops; c++) {
        s->row_ops++;
        s->row_reductions += g->ops[c].kind == ROW_REDUCE;
        s->row_intermediates += g->ops[c].out.slot >= 0 || g->ops[c].virtual;
        s->row_reused +=
            g->ops[c].virtual && g->ops[c].kind == ROW_ELEMENTWISE;
    }
}

/* ------------------------------------------------------------------ */
/* Running                                                            */

/* Argument `a` of an op whose result has `out_ndim` dimensions, for the
 * block of `len` rows from row `first`. */
static void
row_view(const struct nrtemu_program *p, const struct row_group *g,
         const struct row_arg *a, uint32_t out_ndim, void *const *data,
         char *slots, uint64_t first, uint64_t len, struct nrtemu_array *v)
{
    const struct buffer *b = &p->buffers[a->buffer];

    v->dtype = b->dtype;
    v->ndim = 0;
    if (a->whole) {
        uint32_t lag = out_ndim - b->ndim;
        for (uint32_t d = g->lead > lag ? g->lead - lag : 0; d < b->ndim;
             d++) {
            v->shape[v->ndim++] = b->shape[d];
        }
        v->data = data[a->data];
        return;
    }
    v->shape[v->ndim++] = len;
    for (uint32_t d = g->lead; d < b->ndim; d++) {
        v->shape[v->ndim++] = b->shape[d];
    }
    v->data =
        a->slot >= 0
            ? slots + (size_t)a->slot * g->slot_bytes
            : (char *)data[a->data] +
                  (size_t)(a->period == g->rows ? first : first % a->period) *
                      a->row_bytes;
}

/* Blocks [first, end) of the group (nrtemu_fuse_blocks_fn). */
static NRT_STATUS
run_blocks(const struct op_call *c, const void *plan, uint64_t first,
           uint64_t end, uint64_t streamed, char *slots,
           struct nrtemu_scratch *scratch, const struct op **failed)
{
    const struct row_group *g = plan;
    const struct nrtemu_program *p = c->program;
    /* Blocks per period: block k of a period starts at its row k*block. */
    uint64_t per = (g->period + g->block - 1) / g->block;

    for (uint64_t blk = first; blk < end; blk++) {
        uint64_t at = blk % per * g->block;
        uint64_t row = blk / per * g->period + at;
        uint64_t len = g->period - at < g->block ? g->period - at : g->block;
        for (size_t k = 0; k < g->n_ops; k++) {
            const struct row_op *ro = &g->ops[k];
            uint32_t ndim = p->buffers[ro->op->out].ndim;
            struct nrtemu_array in[3], out;
            NRT_STATUS st = NRT_SUCCESS;
            if (ro->virtual) {
                continue;
            }
            for (size_t a = 0; a < ro->op->n_in; a++) {
                row_view(p, g, &ro->in[a], ndim, c->data, slots, row, len,
                         &in[a]);
            }
            row_view(p, g, &ro->out, ndim, c->data, slots, row, len, &out);
            switch (ro->kind) {
            case ROW_REDUCE:
                st = nrtemu__kernel_reduce(ro->op->op, ro->op->compute, &out,
                                           &in[0], ro->axes, scratch);
                break;
            case ROW_RESHAPE:
                if (out.data != in[0].data) {
                    nrtemu__kernel_copy_bytes(
                        out.data, in[0].data,
                        nrtemu__array_count(&out) *
                            nrtemu__dtype_size(out.dtype));
                }
                break;
            default:
                st = nrtemu__kernel_elementwise_part(
                    ro->kernel, ro->op->compute, &out, in, (int)ro->op->n_in,
                    scratch, (streamed >> k & 1) != 0);
                break;
            }
            if (st != NRT_SUCCESS) {
                *failed = ro->op;
                return st;
            }
        }
    }
    return NRT_SUCCESS;
}

static NRT_STATUS
run_group(const struct op_call *c, const struct row_group *g)
{
    uint64_t streamed =
        g->streamable != 0 && kstream_wanted(g->bytes, g->out_bytes)
            ? g->streamable
            : 0;

    return nrtemu__fuse_run_blocks(
        c, run_blocks, g,
        g->rows / g->period * ((g->period + g->block - 1) / g->block),
        g->elements, streamed, g->slot_bytes * g->n_slots);
}

NRT_STATUS
nrtemu__row_group_run(const struct op_call *c, const struct op_list *list,
                      size_t first)
{
    const struct row_group *g = list->ops[first].row_group;
    NRT_STATUS st;

    if (nrtemu__fuse_io_overlaps(c->program, g->io, g->io_write, g->n_io,
                                 c->data)) {
        return nrtemu__fuse_run_each(c, list, first, g->span);
    }
    st = nrtemu__fuse_run_hoisted(c, list, g->hoisted, g->n_hoisted);
    return st != NRT_SUCCESS ? st : run_group(c, g);
}
