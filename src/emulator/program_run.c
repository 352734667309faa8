/*
 * program_run.c - running a loaded program once.
 *
 * Binds the caller's I/O memory, constants and temporaries to the
 * buffers, then runs the ops in order through the kernels.  Temporaries
 * are allocated at the first run and kept: runs of one program never
 * overlap (the model serialises them), and a program is usually run many
 * times.  The deadline is checked before each op and at each iteration
 * of a loop.  Each op runs through the run column of its row in the op
 * table (NRTEMU_OP_LIST); control ops run their nested lists here too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "convert.h"
#include "error.h"
#include "program_internal.h"

static NRT_STATUS
alloc_temps(const char *func, struct nrtemu_program *p)
{
    for (size_t i = 0; i < p->buffer_count; i++) {
        struct buffer *b = &p->buffers[i];
        if (b->kind != BUFFER_TEMP || b->owned != NULL) {
            continue;
        }
        if (posix_memalign(&b->owned, 64, b->bytes ? b->bytes : 1) != 0) {
            b->owned = NULL;
            return nrtemu__fail(NRT_RESOURCE, func,
                                "%s: out of host memory for temporary '%s' "
                                "(%zu bytes)",
                                p->path, b->name, b->bytes);
        }
        b->data = b->owned;
    }
    p->temps_ready = true;
    return NRT_SUCCESS;
}

static void
as_array(const struct buffer *b, void *data, struct nrtemu_array *a)
{
    a->data = data;
    a->dtype = b->dtype;
    a->ndim = b->ndim;
    memcpy(a->shape, b->shape, sizeof a->shape);
}

/*
 * Whether the out memory of a non-elementwise op overlaps an operand's.
 * Besides an op naming its out as an operand (found at load), the caller
 * may pass one tensor as an input and an output.  Elementwise ops read
 * each element before writing it, so for them exact aliasing is fine.
 */
static bool
aliases_operand(const struct nrtemu_program *p, const struct op *op,
                void *const *data)
{
    const char *o = data[op->out];
    size_t on = p->buffers[op->out].bytes;

    if (nrtemu__op_defs[op->op].flags & NRTEMU_OPF_STREAMS) {
        return false;
    }
    for (size_t k = 0; k < op->n_in; k++) {
        const char *i = data[op->in[k]];
        size_t in = p->buffers[op->in[k]].bytes;
        if (on != 0 && in != 0 && o < i + in && i < o + on) {
            return true;
        }
    }
    return false;
}

/*
 * The kernel calls of the op table (the run column of NRTEMU_OP_LIST):
 * each passes the attributes its op was validated with.
 */
NRT_STATUS
nrtemu__op_run_elementwise(const struct op_call *c)
{
    return nrtemu__kernel_elementwise(c->op->op, c->op->compute, c->out, c->in,
                                      (int)c->op->n_in, &c->program->scratch);
}

NRT_STATUS
nrtemu__op_run_matmul(const struct op_call *c)
{
    return nrtemu__kernel_matmul(c->op->compute, c->out, &c->in[0], &c->in[1],
                                 &c->program->scratch);
}

NRT_STATUS
nrtemu__op_run_reduce(const struct op_call *c)
{
    return nrtemu__kernel_reduce(c->op->op, c->op->compute, c->out, &c->in[0],
                                 c->op->axes, &c->program->scratch);
}

/* Without an axis, argmax/argmin and take see their data flattened. */
static void
flatten_data(const struct op_call *c)
{
    if (c->op->flatten) {
        c->in[0].ndim = 1;
        c->in[0].shape[0] = c->program->buffers[c->op->in[0]].count;
    }
}

NRT_STATUS
nrtemu__op_run_argreduce(const struct op_call *c)
{
    flatten_data(c);
    return nrtemu__kernel_argreduce(c->op->op, c->out, &c->in[0], c->op->axis,
                                    &c->program->scratch);
}

NRT_STATUS
nrtemu__op_run_softmax(const struct op_call *c)
{
    return nrtemu__kernel_softmax(c->op->compute, c->out, &c->in[0],
                                  c->op->axis, &c->program->scratch);
}

NRT_STATUS
nrtemu__op_run_transpose(const struct op_call *c)
{
    nrtemu__kernel_transpose(c->out, &c->in[0], c->op->perm);
    return NRT_SUCCESS;
}

/* The bytes stay as they are; only an out elsewhere needs them. */
NRT_STATUS
nrtemu__op_run_reshape(const struct op_call *c)
{
    if (c->out->data != c->in[0].data) {
        memmove(c->out->data, c->in[0].data,
                c->program->buffers[c->op->out].bytes);
    }
    return NRT_SUCCESS;
}

NRT_STATUS
nrtemu__op_run_broadcast(const struct op_call *c)
{
    nrtemu__kernel_broadcast(c->out, &c->in[0]);
    return NRT_SUCCESS;
}

NRT_STATUS
nrtemu__op_run_concatenate(const struct op_call *c)
{
    nrtemu__kernel_concatenate(c->out, c->in, (int)c->op->n_in, c->op->axis);
    return NRT_SUCCESS;
}

NRT_STATUS
nrtemu__op_run_slice(const struct op_call *c)
{
    nrtemu__kernel_slice(c->out, &c->in[0], c->op->start, c->op->step);
    return NRT_SUCCESS;
}

/* An index out of bounds fails the execution, naming it. */
NRT_STATUS
nrtemu__op_run_take(const struct op_call *c)
{
    int64_t bad_index = 0;
    NRT_STATUS st;

    flatten_data(c);
    st = nrtemu__kernel_take(c->out, &c->in[0], &c->in[1], c->op->axis,
                             &bad_index, &c->program->scratch);
    if (st != NRT_EXEC_OOB) {
        return st;
    }
    return nrtemu__reject(NRT_EXEC_OOB, c->func,
                          "%sop %zu (take): index %lld out of bounds for "
                          "axis %u with size %llu",
                          c->op->where, c->op->index, (long long)bad_index,
                          c->op->axis,
                          (unsigned long long)c->in[0].shape[c->op->axis]);
}

NRT_STATUS
nrtemu__op_run_iota(const struct op_call *c)
{
    nrtemu__kernel_iota(c->out, c->op->axis);
    return NRT_SUCCESS;
}

NRT_STATUS
nrtemu__op_run_full(const struct op_call *c)
{
    nrtemu__kernel_full(c->out, c->op->value);
    return NRT_SUCCESS;
}

NRT_STATUS
nrtemu__op_run_scatter(const struct op_call *c)
{
    return nrtemu__kernel_scatter(c->op->mode, c->out, &c->in[0], &c->in[1],
                                  &c->in[2], &c->program->scratch);
}

NRT_STATUS
nrtemu__op_run_argsort(const struct op_call *c)
{
    return nrtemu__kernel_argsort(c->out, &c->in[0], c->op->axis,
                                  c->op->descending, &c->program->scratch);
}

/* Whether the scalar `b` (bool or an integer) is nonzero: some byte is. */
static bool
scalar_true(const struct buffer *b, const void *data)
{
    const unsigned char *bytes = data;

    for (size_t i = 0; i < b->bytes; i++) {
        if (bytes[i] != 0) {
            return true;
        }
    }
    return false;
}

static NRT_STATUS
past_deadline(const struct op_call *c, const char *when)
{
    return nrtemu__fail(NRT_TIMEOUT, c->func,
                        "%s: the execution ran past its deadline %s "
                        "(NEURON_RT_EXEC_TIMEOUT)",
                        c->program->path, when);
}

/* Loop: cond, test pred, body; the deadline is checked every iteration,
 * so that a loop that never ends ends the run with NRT_TIMEOUT. */
NRT_STATUS
nrtemu__op_run_while(const struct op_call *c)
{
    const struct op *op = c->op;
    const struct buffer *pred = &c->program->buffers[op->pred];
    NRT_STATUS st;

    for (uint64_t iteration = 0;; iteration++) {
        if (c->deadline_ns != 0 && nrtemu__monotonic_ns() > c->deadline_ns) {
            char when[256];
            snprintf(when, sizeof when,
                     "in %sop %zu (while), after %llu iterations", op->where,
                     op->index, (unsigned long long)iteration);
            return past_deadline(c, when);
        }
        st = nrtemu__program_run_list(c, &op->lists[0]);
        if (st != NRT_SUCCESS || !scalar_true(pred, c->data[op->pred])) {
            return st;
        }
        st = nrtemu__program_run_list(c, &op->lists[1]);
        if (st != NRT_SUCCESS) {
            return st;
        }
    }
}

/* XLA's conditional: a bool picks branches[0] when true, branches[1]
 * when false; an integer i picks branches[i], the last one when i is
 * out of range. */
NRT_STATUS
nrtemu__op_run_conditional(const struct op_call *c)
{
    const struct op *op = c->op;
    const struct buffer *sel = &c->program->buffers[op->in[0]];
    size_t pick = op->n_lists - 1;

    if (sel->dtype == NRTEMU_DTYPE_BOOL) {
        pick = scalar_true(sel, c->in[0].data) ? 0 : 1;
    } else if (nrtemu__dtype_is_signed_int(sel->dtype)) {
        int64_t i;
        nrtemu__convert(NRTEMU_DTYPE_INT64, &i, sel->dtype, c->in[0].data, 1,
                        1);
        pick = i >= 0 && (uint64_t)i < op->n_lists ? (size_t)i : pick;
    } else {
        uint64_t u;
        nrtemu__convert(NRTEMU_DTYPE_UINT64, &u, sel->dtype, c->in[0].data, 1,
                        1);
        pick = u < op->n_lists ? (size_t)u : pick;
    }
    return nrtemu__program_run_list(c, &op->lists[pick]);
}

/* The op's operands, as the kernels take them; `out` may be redirected
 * to scratch (via_scratch). */
NRT_STATUS
nrtemu__program_run_op(const struct op_call *parent, const struct op *op)
{
    const char *func = parent->func;
    struct nrtemu_program *p = parent->program;
    void **data = parent->data;
    struct nrtemu_array ins[3], *in = ins, out;
    struct op_call call = {func, p, op, &out, NULL, data, parent->deadline_ns};
    const struct buffer *ob;
    void *out_data = NULL;
    NRT_STATUS st = NRT_SUCCESS;

    if (op->n_in > 3) {
        in = calloc(op->n_in, sizeof *in);
        if (in == NULL) {
            return nrtemu__fail(
                NRT_RESOURCE, func, "%s: %sop %zu (%s): out of host memory",
                p->path, op->where, op->index, nrtemu__op_name(op->op));
        }
    }
    for (size_t k = 0; k < op->n_in; k++) {
        as_array(&p->buffers[op->in[k]], data[op->in[k]], &in[k]);
    }
    call.in = in;
    if (op->out == NO_BUFFER) {
        call.out = NULL;
        st = nrtemu__op_defs[op->op].run(&call);
        goto done;
    }
    ob = &p->buffers[op->out];
    out_data = data[op->out];
    if (op->via_scratch || aliases_operand(p, op, data)) {
        out_data = nrtemu__scratch_get(&p->result, ob->bytes);
        if (out_data == NULL) {
            st = NRT_RESOURCE;
            goto done;
        }
    }
    as_array(ob, out_data, &out);
    st = nrtemu__op_defs[op->op].run(&call);
    if (st == NRT_SUCCESS && out_data != data[op->out]) {
        memcpy(data[op->out], out_data, ob->bytes);
    }

done:
    if (in != ins) {
        free(in);
    }
    if (st == NRT_RESOURCE && op->out != NO_BUFFER) {
        return nrtemu__fail(st, func,
                            "%s: %sop %zu (%s): out of host memory for its "
                            "working space",
                            p->path, op->where, op->index,
                            nrtemu__op_name(op->op));
    }
    return st;
}

/* The ops list->ops[first ...] of one step: an op, or a fused span. */
static NRT_STATUS
run_step(const struct op_call *c, const struct op_list *list, size_t first,
         size_t *count)
{
    const struct op *op = &list->ops[first];

    if (c->deadline_ns != 0 && nrtemu__monotonic_ns() > c->deadline_ns) {
        char when[256];
        snprintf(when, sizeof when, "before %sop %zu (%s)", op->where,
                 op->index, nrtemu__op_name(op->op));
        return past_deadline(c, when);
    }
    if (op->fusion != NULL) {
        *count = nrtemu__fusion_span(list, first);
        return nrtemu__fusion_run(c, list, first);
    }
    *count = 1;
    return nrtemu__program_run_op(c, op);
}

NRT_STATUS
nrtemu__program_run_list(const struct op_call *c, const struct op_list *list)
{
    for (size_t i = 0; i < list->count;) {
        size_t n = 1;
        NRT_STATUS st = run_step(c, list, i, &n);
        if (st != NRT_SUCCESS) {
            return st;
        }
        i += n;
    }
    return NRT_SUCCESS;
}

#define RUN_DATA_ON_STACK 128

NRT_STATUS
nrtemu__program_run(const char *func, struct nrtemu_program *program,
                    void *const *io_data, uint64_t deadline_ns,
                    nrtemu_op_observer observer, void *ctx)
{
    /* The data pointer of every buffer: on the stack for the programs of
     * nearly all models, so that a run allocates nothing. */
    void *data_stack[RUN_DATA_ON_STACK];
    void **data;
    struct op_call top = {func, program, NULL, NULL, NULL, NULL, deadline_ns};
    NRT_STATUS st = NRT_SUCCESS;

    if (!program->temps_ready) {
        st = alloc_temps(func, program);
        if (st != NRT_SUCCESS) {
            return st;
        }
    }
    data = program->buffer_count <= RUN_DATA_ON_STACK
               ? data_stack
               : calloc(program->buffer_count, sizeof *data);
    if (data == NULL) {
        return nrtemu__fail(NRT_RESOURCE, func,
                            "%s: out of host memory to run", program->path);
    }
    top.data = data;
    for (size_t i = 0; i < program->buffer_count; i++) {
        struct buffer *b = &program->buffers[i];
        if (b->kind == BUFFER_INPUT || b->kind == BUFFER_OUTPUT) {
            data[i] = io_data[b->io_index];
            if (data[i] == NULL && b->bytes != 0) {
                st = nrtemu__reject(
                    NRT_INVALID, func, "%s: no memory given for %s '%s'",
                    program->path,
                    b->kind == BUFFER_INPUT ? "input" : "output", b->name);
                goto done;
            }
        } else {
            data[i] = (void *)b->data;
        }
    }
    /* The program's own ops one step at a time, for the observer: the
     * ops nested in a control op are part of its time, and the ops of a
     * fused span share its time evenly (they ran interleaved). */
    for (size_t i = 0; i < program->ops.count;) {
        uint64_t start = observer != NULL ? nrtemu__monotonic_ns() : 0, end;
        size_t n = 1;
        st = run_step(&top, &program->ops, i, &n);
        if (st != NRT_SUCCESS) {
            goto done;
        }
        if (observer != NULL) {
            end = nrtemu__monotonic_ns();
            for (size_t k = 0; k < n; k++) {
                const struct op *op = &program->ops.ops[i + k];
                observer(ctx, op->index, nrtemu__op_name(op->op), op->shapes,
                         start + (end - start) * k / n,
                         start + (end - start) * (k + 1) / n);
            }
        }
        i += n;
    }

done:
    if (data != data_stack) {
        free(data);
    }
    return st;
}
