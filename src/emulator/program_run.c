/*
 * program_run.c - running a loaded program once.
 *
 * Binds the caller's I/O memory, constants and temporaries to the
 * buffers, then runs the ops in order through the kernels.  Temporaries
 * are allocated at the first run and kept: runs of one program never
 * overlap (the model serialises them), and a program is usually run many
 * times.  The deadline is checked before each op.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "program_internal.h"

static uint64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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

/* The size of the axis a take indexes. */
static uint64_t
in_size_along(const struct nrtemu_program *p, const struct op *op)
{
    const struct buffer *data = &p->buffers[op->in[0]];

    return op->flatten ? data->count : data->shape[op->axis];
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

    if (nrtemu__op_streams(op->op)) {
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

/* The op's operands, as the kernels take them; `out` may be redirected
 * to scratch (via_scratch). */
static NRT_STATUS
run_op(const char *func, struct nrtemu_program *p, const struct op *op,
       void **data)
{
    struct nrtemu_array ins[3], *in = ins, out;
    const struct buffer *ob = &p->buffers[op->out];
    void *out_data = data[op->out];
    int64_t bad_index = 0;
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

    switch (nrtemu__op_class(op->op)) {
    case NRTEMU_OPC_UNARY:
    case NRTEMU_OPC_BINARY:
    case NRTEMU_OPC_COMPARE:
    case NRTEMU_OPC_LOGICAL:
    case NRTEMU_OPC_WHERE:
    case NRTEMU_OPC_CAST:
    case NRTEMU_OPC_COPY:
        st = nrtemu__kernel_elementwise(op->op, op->compute, &out, in,
                                        (int)op->n_in, &p->scratch);
        break;
    case NRTEMU_OPC_MATMUL:
        st = nrtemu__kernel_matmul(op->compute, &out, &in[0], &in[1],
                                   &p->scratch);
        break;
    case NRTEMU_OPC_REDUCE:
        st = nrtemu__kernel_reduce(op->op, op->compute, &out, &in[0], op->axes,
                                   &p->scratch);
        break;
    case NRTEMU_OPC_ARGREDUCE:
        if (op->flatten) {
            in[0].ndim = 1;
            in[0].shape[0] = p->buffers[op->in[0]].count;
        }
        st = nrtemu__kernel_argreduce(op->op, &out, &in[0], op->axis,
                                      &p->scratch);
        break;
    case NRTEMU_OPC_SOFTMAX:
        st = nrtemu__kernel_softmax(op->compute, &out, &in[0], op->axis,
                                    &p->scratch);
        break;
    case NRTEMU_OPC_TRANSPOSE:
        nrtemu__kernel_transpose(&out, &in[0], op->perm);
        break;
    case NRTEMU_OPC_RESHAPE:
        if (out.data != in[0].data) {
            memmove(out.data, in[0].data, ob->bytes);
        }
        break;
    case NRTEMU_OPC_BROADCAST:
        nrtemu__kernel_broadcast(&out, &in[0]);
        break;
    case NRTEMU_OPC_CONCATENATE:
        nrtemu__kernel_concatenate(&out, in, (int)op->n_in, op->axis);
        break;
    case NRTEMU_OPC_SLICE:
        nrtemu__kernel_slice(&out, &in[0], op->start, op->step);
        break;
    case NRTEMU_OPC_TAKE:
        if (op->flatten) {
            in[0].ndim = 1;
            in[0].shape[0] = p->buffers[op->in[0]].count;
        }
        st = nrtemu__kernel_take(&out, &in[0], &in[1], op->axis, &bad_index,
                                 &p->scratch);
        break;
    case NRTEMU_OPC_IOTA:
        nrtemu__kernel_iota(&out, op->axis);
        break;
    case NRTEMU_OPC_FULL:
        nrtemu__kernel_full(&out, op->value);
        break;
    }
    if (st == NRT_SUCCESS && out_data != data[op->out]) {
        memcpy(data[op->out], out_data, ob->bytes);
    }

done:
    if (in != ins) {
        free(in);
    }
    switch (st) {
    case NRT_SUCCESS:
        return st;
    case NRT_EXEC_OOB:
        return nrtemu__reject(NRT_EXEC_OOB, func,
                              "op %zu (take): index %lld out of bounds for "
                              "axis %u with size %llu",
                              op->index, (long long)bad_index, op->axis,
                              (unsigned long long)in_size_along(p, op));
    default:
        return nrtemu__fail(st, func,
                            "%s: op %zu (%s): out of host memory for its "
                            "working space",
                            p->path, op->index, nrtemu__op_name(op->op));
    }
}

NRT_STATUS
nrtemu__program_run(const char *func, struct nrtemu_program *program,
                    void *const *io_data, uint64_t deadline_ns,
                    nrtemu_op_observer observer, void *ctx)
{
    void **data;
    NRT_STATUS st = NRT_SUCCESS;

    if (!program->temps_ready) {
        st = alloc_temps(func, program);
        if (st != NRT_SUCCESS) {
            return st;
        }
    }
    data = calloc(program->buffer_count ? program->buffer_count : 1,
                  sizeof *data);
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
            start = now_ns();
        }
        if (deadline_ns != 0 && start > deadline_ns) {
            st = nrtemu__fail(NRT_TIMEOUT, func,
                              "%s: the execution ran past its deadline "
                              "before op %zu (%s) (NEURON_RT_EXEC_TIMEOUT)",
                              program->path, op->index,
                              nrtemu__op_name(op->op));
            goto done;
        }
        st = run_op(func, program, op, data);
        if (st != NRT_SUCCESS) {
            goto done;
        }
        if (observer != NULL) {
            observer(ctx, op->index, nrtemu__op_name(op->op), op->shapes,
                     start, now_ns());
        }
    }

done:
    free(data);
    return st;
}
