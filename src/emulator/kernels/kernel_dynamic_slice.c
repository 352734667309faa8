/*
 * kernel_dynamic_slice.c - windows at run-time starts: dynamic_slice and
 * dynamic_update_slice (docs/neff-emulator-format.md §3).
 *
 * The starts are read when the op runs, one integer per dimension, and
 * resolved by the op's bounds rule before anything moves: "clamp" moves
 * each into the range that keeps the window in the array (XLA's
 * dynamic-slice), "check" fails the execution with NRT_EXEC_OOB, as an
 * out-of-bounds gather does (a DMA with a register offset).  Then bytes
 * are copied as they are, whole contiguous runs at a time.
 */
#include <string.h>

#include "kernels/convert.h"
#include "kernels/kernel.h"
#include "kernels/pool.h"

NRT_STATUS
nrtemu__kernel_window_start(enum nrtemu_bounds bounds,
                            const struct nrtemu_array *starts, uint32_t ndim,
                            const uint64_t *shape, const uint64_t *sizes,
                            int64_t *start, struct nrtemu_bad_start *bad)
{
    size_t size = nrtemu__dtype_size(starts->dtype);
    bool is_unsigned = nrtemu__dtype_is_unsigned_int(starts->dtype);

    for (uint32_t d = 0; d < ndim; d++) {
        const char *at = (const char *)starts->data + d * size;
        /* The last start that keeps the window in: at most the
         * dimension, which is below 2^63 (an array's bytes fit memory). */
        uint64_t last = shape[d] - sizes[d];
        int64_t s = 0;
        uint64_t u = 0;
        bool below, above;

        /* Read exactly in the starts' own signedness: an unsigned start
         * above INT64_MAX must not wrap to a negative one. */
        if (is_unsigned) {
            nrtemu__convert(NRTEMU_DTYPE_UINT64, &u, starts->dtype, at, 1, 1);
            below = false;
            above = u > last;
        } else {
            nrtemu__convert(NRTEMU_DTYPE_INT64, &s, starts->dtype, at, 1, 1);
            below = s < 0;
            above = !below && (uint64_t)s > last;
        }
        if ((below || above) && bounds == NRTEMU_BOUNDS_CHECK) {
            bad->dim = d;
            bad->is_unsigned = is_unsigned;
            bad->value = is_unsigned ? (int64_t)u : s;
            return NRT_EXEC_OOB;
        }
        start[d] = below         ? 0
                   : above       ? (int64_t)last
                   : is_unsigned ? (int64_t)u
                                 : s;
    }
    return NRT_SUCCESS;
}

void
nrtemu__kernel_read_window(const struct nrtemu_array *out,
                           const struct nrtemu_array *in, const int64_t *start)
{
    int64_t step[NRTEMU_MAX_DIMS];

    /* A slice with unit steps: its gather joins the dimensions the
     * window spans whole into one run and splits large copies over the
     * worker pool. */
    for (uint32_t d = 0; d < in->ndim; d++) {
        step[d] = 1;
    }
    nrtemu__kernel_slice(out, in, start, step);
}

/*
 * The runs of a window write: the update's elements are `rows` runs of
 * `run` contiguous elements each, the window's trailing dimensions that
 * span the out whole joined with the first that does not; `lead` leading
 * dimensions index the runs.
 */
struct window_job {
    char *out;              /* the out at the window's first element */
    const char *upd;        /* the update */
    size_t size;            /* element bytes */
    uint32_t lead;          /* dimensions before the run */
    const uint64_t *counts; /* the update's shape */
    ptrdiff_t out_strides[NRTEMU_MAX_DIMS]; /* out, elements */
    uint64_t rows, run;
    uint32_t tasks;
};

/* Rows [first, end) of the job, from the odometer of row `first`. */
static void
write_rows(const struct window_job *job, uint64_t first, uint64_t end)
{
    uint64_t idx[NRTEMU_MAX_DIMS] = {0}, r = first;
    ptrdiff_t off = 0;
    size_t bytes = job->run * job->size;
    const char *u = job->upd + first * bytes;

    for (int d = (int)job->lead - 1; d >= 0; d--) {
        idx[d] = r % job->counts[d];
        r /= job->counts[d];
        off += (ptrdiff_t)idx[d] * job->out_strides[d];
    }
    for (uint64_t row = first; row < end; row++) {
        memcpy(job->out + off * (ptrdiff_t)job->size, u, bytes);
        u += bytes;
        /* The next row: carry through the leading dimensions. */
        for (int d = (int)job->lead - 1; d >= 0; d--) {
            off += job->out_strides[d];
            if (++idx[d] < job->counts[d]) {
                break;
            }
            off -= (ptrdiff_t)job->counts[d] * job->out_strides[d];
            idx[d] = 0;
        }
    }
}

static void
write_task(void *arg, uint32_t t)
{
    const struct window_job *job = arg;

    write_rows(job, job->rows * t / job->tasks,
               job->rows * (t + 1) / job->tasks);
}

/* Writes of at least this many bytes, in many runs, go on the worker
 * pool; a smaller one costs less than waking it. */
#define WINDOW_SPLIT_BYTES ((uint64_t)1 << 20)

void
nrtemu__kernel_write_window(const struct nrtemu_array *out,
                            const struct nrtemu_array *operand,
                            const struct nrtemu_array *update,
                            const int64_t *start)
{
    struct window_job job = {0};
    uint32_t nd = out->ndim, k = nd;
    ptrdiff_t stride = 1, base = 0;

    job.size = nrtemu__dtype_size(out->dtype);
    if (out->data != operand->data) {
        nrtemu__kernel_copy_bytes(out->data, operand->data,
                                  nrtemu__array_count(out) * job.size);
    }
    if (nrtemu__array_count(update) == 0) {
        return;
    }
    for (int d = (int)nd - 1; d >= 0; d--) {
        job.out_strides[d] = stride;
        base += (ptrdiff_t)start[d] * stride;
        stride *= (ptrdiff_t)out->shape[d];
    }
    /* The run: trailing dimensions the update spans whole, and the first
     * one (from the end) it does not. */
    job.run = 1;
    while (k > 0) {
        k--;
        job.run *= update->shape[k];
        if (update->shape[k] != out->shape[k]) {
            break;
        }
    }
    job.lead = k;
    job.rows = 1;
    for (uint32_t d = 0; d < k; d++) {
        job.rows *= update->shape[d];
    }
    job.out = (char *)out->data + base * (ptrdiff_t)job.size;
    job.upd = update->data;
    job.counts = update->shape;
    if (job.rows == 1) {
        nrtemu__kernel_copy_bytes(job.out, job.upd, job.run * job.size);
        return;
    }
    job.tasks = 1;
    if (job.rows * job.run * job.size >= WINDOW_SPLIT_BYTES) {
        uint64_t per = WINDOW_SPLIT_BYTES / 2 / (job.run * job.size);
        job.tasks = nrtemu__pool_tasks(job.rows, per > 0 ? per : 1);
    }
    if (job.tasks <= 1) {
        write_rows(&job, 0, job.rows);
        return;
    }
    nrtemu__pool_run(write_task, &job, job.tasks);
}
