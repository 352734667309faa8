/*
 * program_run.c - running a loaded program once.
 *
 * Binds the caller's I/O memory, constants and temporaries to the
 * buffers, then runs the ops in order through the kernels.  Temporaries
 * are allocated at the first run and kept: runs of one program never
 * overlap (the model serialises them), and a program is usually run many
 * times.  The deadline is checked before each op.  Each op runs through
 * the run column of its row in the op table (NRTEMU_OP_LIST).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
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
                          "op %zu (take): index %lld out of bounds for "
                          "axis %u with size %llu",
                          c->op->index, (long long)bad_index, c->op->axis,
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

/* The op's operands, as the kernels take them; `out` may be redirected
 * to scratch (via_scratch). */
static NRT_STATUS
run_op(const char *func, struct nrtemu_program *p, const struct op *op,
       void **data, uint64_t deadline_ns)
{
    struct nrtemu_array ins[3], *in = ins, out;
    struct op_call call = {func, p, op, &out, NULL, deadline_ns};
    const struct buffer *ob = &p->buffers[op->out];
    void *out_data = data[op->out];
    NRT_STATUS st = NRT_SUCCESS;

    if (op->n_in > 3) {
        in = calloc(op->n_in, sizeof *in);
        if (in == NULL) {
            return nrtemu__fail(NRT_RESOURCE, func,
                                "%s: op %zu (%s): out of host memory", p->path,
                                op->index, nrtemu__op_name(op->op));
        }
    }
    if (op->via_scratch || aliases_operand(p, op, data)) {
        out_data = nrtemu__scratch_get(&p->result, ob->bytes);
        if (out_data == NULL) {
            st = NRT_RESOURCE;
            goto done;
        }
    }
    for (size_t k = 0; k < op->n_in; k++) {
        as_array(&p->buffers[op->in[k]], data[op->in[k]], &in[k]);
    }
    as_array(ob, out_data, &out);

    call.in = in;
    st = nrtemu__op_defs[op->op].run(&call);
    if (st == NRT_SUCCESS && out_data != data[op->out]) {
        memcpy(data[op->out], out_data, ob->bytes);
    }

done:
    if (in != ins) {
        free(in);
    }
    if (st == NRT_RESOURCE) {
        return nrtemu__fail(st, func,
                            "%s: op %zu (%s): out of host memory for its "
                            "working space",
                            p->path, op->index, nrtemu__op_name(op->op));
    }
    return st;
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
    for (size_t i = 0; i < program->op_count; i++) {
        const struct op *op = &program->ops[i];
        uint64_t start = 0;
        if (deadline_ns != 0 || observer != NULL) {
            start = nrtemu__monotonic_ns();
        }
        if (deadline_ns != 0 && start > deadline_ns) {
            st = nrtemu__fail(NRT_TIMEOUT, func,
                              "%s: the execution ran past its deadline "
                              "before op %zu (%s) (NEURON_RT_EXEC_TIMEOUT)",
                              program->path, op->index,
                              nrtemu__op_name(op->op));
            goto done;
        }
        st = run_op(func, program, op, data, deadline_ns);
        if (st != NRT_SUCCESS) {
            goto done;
        }
        if (observer != NULL) {
            observer(ctx, op->index, nrtemu__op_name(op->op), op->shapes,
                     start, nrtemu__monotonic_ns());
        }
    }

done:
    if (data != data_stack) {
        free(data);
    }
    return st;
}
