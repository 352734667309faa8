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

#include "util/clock.h"
#include "kernels/convert.h"
#include "util/error.h"
#include "kernels/kernel_split.h"
#include "kernels/pool.h"
#include "program/program_internal.h"

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
 * each element before writing it, so for them exact aliasing is fine, as
 * it is for the first operand of an op that changes it in place.
 */
static bool
aliases_operand(const struct nrtemu_program *p, const struct op *op,
                void *const *data)
{
    const char *o = data[op->out];
    size_t on = p->buffers[op->out].bytes;
    uint32_t flags = nrtemu__op_defs[op->op].flags;

    if (flags & NRTEMU_OPF_STREAMS) {
        return false;
    }
    for (size_t k = 0; k < op->n_in; k++) {
        const char *i = data[op->in[k]];
        size_t in = p->buffers[op->in[k]].bytes;
        if (k == 0 && (flags & NRTEMU_OPF_IN_PLACE) && i == o && in == on) {
            continue;
        }
        if (on != 0 && in != 0 && o < i + in && i < o + on) {
            return true;
        }
    }
    return false;
}

/*
 * A lone elementwise op (one that no fused chain took) with an out of at
 * least SPLIT_MIN elements runs on the worker pool: its out is cut into
 * SPLIT_PER_THREAD pieces per thread (kernel_split.h), which the threads
 * claim as they come (a thread that the machine's other work delays
 * takes fewer); each piece runs through the same kernel with scratch of
 * its own, so results are those of one call.  Smaller outs stay on the
 * calling thread: a float32 add of 2^18 elements takes about as long on
 * one thread as waking a parked worker on a loaded machine, and smaller
 * ones gain nothing.
 */
#ifndef SPLIT_MIN
#define SPLIT_MIN ((uint64_t)1 << 18)
#endif
#define SPLIT_PER_THREAD 4

/* At most this many pieces. */
#define SPLIT_MAX_TASKS 64

struct split_job {
    const struct op_call *c;
    struct ksplit plan;
    uint32_t tasks;
    struct nrtemu_scratch *scratch; /* one per task */
    bool stream;                    /* the whole op's results stream */
    NRT_STATUS st[SPLIT_MAX_TASKS];
};

/* One array's view of box `b`. */
static void
box_view(const struct split_job *job, const struct kbox *b,
         const struct nrtemu_array *a, struct nrtemu_array *v)
{
    uint64_t off =
        ksplit_view(&job->plan, b, a->ndim, a->shape, &v->ndim, v->shape);

    v->dtype = a->dtype;
    v->data = (char *)a->data + off * nrtemu__dtype_size(a->dtype);
}

static void
split_task(void *arg, uint32_t t)
{
    struct split_job *job = arg;
    const struct op_call *c = job->c;
    struct nrtemu_array in[3], out;
    struct kbox b;
    uint64_t row, end;

    job->st[t] = NRT_SUCCESS;
    ksplit_piece(&job->plan, t, job->tasks, &row, &end);
    while (ksplit_box(&job->plan, &row, end, &b)) {
        for (size_t k = 0; k < c->op->n_in; k++) {
            box_view(job, &b, &c->in[k], &in[k]);
        }
        box_view(job, &b, c->out, &out);
        job->st[t] = nrtemu__kernel_elementwise_part(
            c->op->op, c->op->compute, &out, in, (int)c->op->n_in,
            &job->scratch[t], job->stream);
        if (job->st[t] != NRT_SUCCESS) {
            return;
        }
    }
}

/* Whether an operand shares memory with the out other than as the same
 * array: then the order of the elements matters, and one call keeps it. */
static bool
overlaps_out(const struct op_call *c)
{
    const char *o = c->out->data;
    size_t on =
        nrtemu__array_count(c->out) * nrtemu__dtype_size(c->out->dtype);

    for (size_t k = 0; k < c->op->n_in; k++) {
        const struct nrtemu_array *a = &c->in[k];
        const char *i = a->data;
        size_t in = nrtemu__array_count(a) * nrtemu__dtype_size(a->dtype);
        if (in == 0 || i + in <= o || o + on <= i) {
            continue;
        }
        if (i != o || in != on || a->ndim != c->out->ndim ||
            memcmp(a->shape, c->out->shape, a->ndim * sizeof *a->shape) != 0) {
            return true;
        }
    }
    return false;
}

/* The pieces of an op of `p` with `count` elements: SPLIT_PER_THREAD per
 * thread of the pool, of SPLIT_MIN / 2 elements at least, as far as the
 * program has kernel scratch for them (kept between runs); 1 for none. */
static uint32_t
pool_tasks(struct nrtemu_program *p, uint64_t count)
{
    uint32_t threads = nrtemu__pool_threads();
    uint64_t tasks = (uint64_t)threads * SPLIT_PER_THREAD;

    if (threads < 2 || count < SPLIT_MIN) {
        return 1;
    }
    tasks = tasks < count / (SPLIT_MIN / 2) ? tasks : count / (SPLIT_MIN / 2);
    tasks = tasks < SPLIT_MAX_TASKS ? tasks : SPLIT_MAX_TASKS;
    if (p->n_task_scratch + 1 < tasks) {
        /* Kernel scratch of tasks 1...; task 0 takes the program's. */
        struct nrtemu_scratch *more =
            realloc(p->task_scratch, (tasks - 1) * sizeof *more);
        if (more != NULL) {
            memset(more + p->n_task_scratch, 0,
                   (tasks - 1 - p->n_task_scratch) * sizeof *more);
            p->task_scratch = more;
            p->n_task_scratch = (uint32_t)tasks - 1;
        }
    }
    return tasks < p->n_task_scratch + 1 ? (uint32_t)tasks
                                         : p->n_task_scratch + 1;
}

/*
 * The kernel calls of the op table (the run column of NRTEMU_OP_LIST):
 * each passes the attributes its op was validated with.
 */

NRT_STATUS
nrtemu__op_run_elementwise(const struct op_call *c)
{
    struct nrtemu_program *p = c->program;
    struct nrtemu_scratch scratch[SPLIT_MAX_TASKS];
    struct split_job job;
    uint64_t count = nrtemu__array_count(c->out);
    NRT_STATUS st = NRT_SUCCESS;

    job.tasks = c->op->n_in <= 3 && count >= SPLIT_MIN && !overlaps_out(c)
                    ? pool_tasks(p, count)
                    : 1;
    if (job.tasks > 1) {
        ksplit_plan(&job.plan, c->out->ndim, c->out->shape, job.tasks);
        job.tasks =
            job.plan.rows < job.tasks ? (uint32_t)job.plan.rows : job.tasks;
    }
    if (job.tasks <= 1) {
        return nrtemu__kernel_elementwise(c->op->op, c->op->compute, c->out,
                                          c->in, (int)c->op->n_in,
                                          &p->scratch);
    }
    job.c = c;
    job.stream = nrtemu__kernel_stream_wanted(c->out, c->in, (int)c->op->n_in);
    /* The tasks' scratch lives in the program between runs. */
    scratch[0] = p->scratch;
    for (uint32_t t = 1; t < job.tasks; t++) {
        scratch[t] = p->task_scratch[t - 1];
    }
    job.scratch = scratch;
    nrtemu__pool_run(split_task, &job, job.tasks);
    p->scratch = scratch[0];
    for (uint32_t t = 1; t < job.tasks; t++) {
        p->task_scratch[t - 1] = scratch[t];
    }
    for (uint32_t t = 0; t < job.tasks; t++) {
        st = st != NRT_SUCCESS ? st : job.st[t];
    }
    return st;
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
        nrtemu__kernel_copy_bytes(c->out->data, c->in[0].data,
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

NRT_STATUS
nrtemu__op_run_update_slice(const struct op_call *c)
{
    nrtemu__kernel_update_slice(c->out, &c->in[0], &c->in[1], c->op->start,
                                c->op->step);
    return NRT_SUCCESS;
}

/* The starts of a window op's run: a start "check" refuses fails the
 * execution before anything is written, naming it. */
static NRT_STATUS
window_start(const struct op_call *c, const struct nrtemu_array *arr,
             const struct nrtemu_array *starts, const uint64_t *sizes,
             int64_t *start)
{
    struct nrtemu_bad_start bad = {0};
    char value[32];
    NRT_STATUS st = nrtemu__kernel_window_start(
        c->op->bounds, starts, arr->ndim, arr->shape, sizes, start, &bad);

    if (st != NRT_EXEC_OOB) {
        return st;
    }
    if (bad.is_unsigned) {
        snprintf(value, sizeof value, "%llu",
                 (unsigned long long)(uint64_t)bad.value);
    } else {
        snprintf(value, sizeof value, "%lld", (long long)bad.value);
    }
    return nrtemu__reject(
        NRT_EXEC_OOB, c->func,
        "%sop %zu (%s): start %s of dimension %u is out of "
        "bounds: a window of %llu in %llu starts in [0, "
        "%llu]",
        c->op->where, c->op->index, nrtemu__op_name(c->op->op), value, bad.dim,
        (unsigned long long)sizes[bad.dim],
        (unsigned long long)arr->shape[bad.dim],
        (unsigned long long)(arr->shape[bad.dim] - sizes[bad.dim]));
}

NRT_STATUS
nrtemu__op_run_dynamic_slice(const struct op_call *c)
{
    int64_t start[NRTEMU_MAX_DIMS];
    NRT_STATUS st =
        window_start(c, &c->in[0], &c->in[1], c->out->shape, start);

    if (st == NRT_SUCCESS) {
        nrtemu__kernel_read_window(c->out, &c->in[0], start);
    }
    return st;
}

NRT_STATUS
nrtemu__op_run_dynamic_update_slice(const struct op_call *c)
{
    int64_t start[NRTEMU_MAX_DIMS];
    NRT_STATUS st =
        window_start(c, &c->in[0], &c->in[2], c->in[1].shape, start);

    if (st == NRT_SUCCESS) {
        nrtemu__kernel_write_window(c->out, &c->in[0], &c->in[1], start);
    }
    return st;
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
        if (c->deadline_ns != 0 &&
            nrtemu__deadline_clock_ns() > c->deadline_ns) {
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

    if (c->deadline_ns != 0 && nrtemu__deadline_clock_ns() > c->deadline_ns) {
        char when[256];
        snprintf(when, sizeof when, "before %sop %zu (%s)", op->where,
                 op->index, nrtemu__op_name(op->op));
        return past_deadline(c, when);
    }
    if (op->row_group != NULL) {
        *count = nrtemu__row_group_span(list, first);
        return nrtemu__row_group_run(c, list, first);
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
                         op->note, start + (end - start) * k / n,
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
