/*
 * kernel_layout.c - ops that move elements without computing: transpose,
 * broadcast_to and copy, concatenate, slice, take, iota and full.
 *
 * Most of them are one strided gather: the output is walked in C order
 * while the input is read with a stride per output dimension (permuted
 * for transpose, 0 for broadcast, scaled and offset for slice).  Runs
 * that are contiguous in both become memcpy; a transpose, whose input
 * run is strided, is done in tiles that stay in cache, and blocks of them
 * in vector registers (kernel_transpose.c).
 */
#include <stdbool.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/convert.h"
#include "kernels/kernel.h"
#include "kernels/kernel_iter.h"
#include "kernels/kernel_layout.h"
#include "kernels/kernel_split.h"
#include "kernels/kernel_stream.h"
#include "kernels/pool.h"
#include "kernels/simd.h"

#if NRTEMU_X86_CLONES
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

/*
 * Every other element of 1-, 2- or 4-byte items (a slice with step 2):
 * each pair of items read as one item twice as wide, of which the low
 * half is kept (x86 is little-endian), so that the loop vectorises as
 * loads and narrowing moves.  The last item is copied alone: its pair
 * may end past the source.
 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HAVE_EVERY_OTHER 1
typedef uint16_t u16_any __attribute__((aligned(1), may_alias));
typedef uint32_t u32_any __attribute__((aligned(1), may_alias));
typedef uint64_t u64_any __attribute__((aligned(1), may_alias));
typedef uint8_t u8_any __attribute__((may_alias));
typedef uint16_t u16_any_out __attribute__((aligned(1), may_alias));
typedef uint32_t u32_any_out __attribute__((aligned(1), may_alias));

NRTEMU_MULTIVERSION
static void
copy_every_other(char *dst, const char *src, size_t n, size_t size)
{
    size_t m = n - 1;

    switch (size) {
    case 1:
        for (size_t i = 0; i < m; i++) {
            ((u8_any *)dst)[i] = (uint8_t)((const u16_any *)src)[i];
        }
        break;
    case 2:
        for (size_t i = 0; i < m; i++) {
            ((u16_any_out *)dst)[i] = (uint16_t)((const u32_any *)src)[i];
        }
        break;
    default:
        for (size_t i = 0; i < m; i++) {
            ((u32_any_out *)dst)[i] = (uint32_t)((const u64_any *)src)[i];
        }
        break;
    }
    memcpy(dst + m * size, src + 2 * m * size, size);
}
#else
#define HAVE_EVERY_OTHER 0
#endif

/* Non-temporal copies (kernel_stream.h): 64-byte units, stored with the
 * widest vectors the CPU has. */
#if KSTREAM_HAVE
#if NRTEMU_X86_CLONES
__attribute__((target("avx512f"))) static void
stream_64_avx512(char *d, const char *s, size_t units)
{
    for (size_t i = 0; i < units; i++, d += 64, s += 64) {
        _mm512_stream_si512((void *)d, _mm512_loadu_si512(s));
    }
}

__attribute__((target("avx"))) static void
stream_64_avx(char *d, const char *s, size_t units)
{
    for (size_t i = 0; i < units; i++, d += 64, s += 64) {
        _mm256_stream_si256((__m256i *)d,
                            _mm256_loadu_si256((const __m256i *)s));
        _mm256_stream_si256((__m256i *)(d + 32),
                            _mm256_loadu_si256((const __m256i *)(s + 32)));
    }
}
#endif

static void
stream_64(char *d, const char *s, size_t units)
{
#if NRTEMU_X86_CLONES
    const int w = nrtemu__cpu_has(NRTEMU_CPU_V4)   ? 64
                  : nrtemu__cpu_has(NRTEMU_CPU_V3) ? 32
                                                   : 16;
    if (w == 64) {
        stream_64_avx512(d, s, units);
        return;
    }
    if (w == 32) {
        stream_64_avx(d, s, units);
        return;
    }
#endif
    for (size_t i = 0; i < units; i++, d += 64, s += 64) {
        for (int k = 0; k < 64; k += 16) {
            _mm_stream_si128((__m128i *)(d + k),
                             _mm_loadu_si128((const __m128i *)(s + k)));
        }
    }
}
#endif

void
nrtemu__kstream_copy(void *dst, const void *src, size_t n)
{
#if KSTREAM_HAVE
    char *d = dst;
    const char *s = src;
    size_t head = (size_t)(-(uintptr_t)d & 63);

    if (n < head + 64) {
        memcpy(d, s, n);
        return;
    }
    memcpy(d, s, head);
    stream_64(d + head, s + head, (n - head) / 64);
    memcpy(d + head + (n - head) / 64 * 64, s + head + (n - head) / 64 * 64,
           (n - head) % 64);
#else
    memcpy(dst, src, n);
#endif
}

/* Copy n elements of `size` bytes read with `stride` (in elements). */
static void
copy_run(char *dst, const char *src, ptrdiff_t stride, size_t n, size_t size)
{
    if (stride == 1) {
        memcpy(dst, src, n * size);
        return;
    }
#if HAVE_EVERY_OTHER
    if (stride == 2 && size <= 4 && n > 0) {
        copy_every_other(dst, src, n, size);
        return;
    }
#endif
    switch (size) {
    case 1:
        for (size_t i = 0; i < n; i++) {
            dst[i] = src[(ptrdiff_t)i * stride];
        }
        break;
    case 2: {
        uint16_t *d = (uint16_t *)dst;
        const uint16_t *s = (const uint16_t *)src;
        for (size_t i = 0; i < n; i++) {
            d[i] = s[(ptrdiff_t)i * stride];
        }
        break;
    }
    case 4: {
        uint32_t *d = (uint32_t *)dst;
        const uint32_t *s = (const uint32_t *)src;
        for (size_t i = 0; i < n; i++) {
            d[i] = s[(ptrdiff_t)i * stride];
        }
        break;
    }
    default: {
        uint64_t *d = (uint64_t *)dst;
        const uint64_t *s = (const uint64_t *)src;
        for (size_t i = 0; i < n; i++) {
            d[i] = s[(ptrdiff_t)i * stride];
        }
        break;
    }
    }
}

/* Fill n elements of `size` bytes with the one at `elem`. */
static void
fill(char *dst, const void *elem, size_t n, size_t size)
{
    switch (size) {
    case 1:
        memset(dst, *(const unsigned char *)elem, n);
        break;
    case 2: {
        uint16_t v, *d = (uint16_t *)dst;
        memcpy(&v, elem, 2);
        for (size_t i = 0; i < n; i++) {
            d[i] = v;
        }
        break;
    }
    case 4: {
        uint32_t v, *d = (uint32_t *)dst;
        memcpy(&v, elem, 4);
        for (size_t i = 0; i < n; i++) {
            d[i] = v;
        }
        break;
    }
    default: {
        uint64_t v, *d = (uint64_t *)dst;
        memcpy(&v, elem, 8);
        for (size_t i = 0; i < n; i++) {
            d[i] = v;
        }
        break;
    }
    }
}

/*
 * The 2-D transposes of a collapsed gather whose input is contiguous
 * along output dimension p (it->stride[0][p] == 1) but not along the last
 * one: one per index of the other outer dimensions, walked in C order.
 */
static void
gather_transposed(const struct kiter *it, int p, char *dst, const char *src,
                  size_t size)
{
    int last = it->ndim - 1;
    struct kiter o;
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    ptrdiff_t off[2] = {0, 0};
    uint64_t outer;

    /* The other outer dimensions, then a placeholder inner one of size 1
     * (kiter_next steps all but the last). */
    memset(&o, 0, sizeof o);
    o.nops = 2;
    for (int d = 0; d < last; d++) {
        if (d != p) {
            o.shape[o.ndim] = it->shape[d];
            o.stride[0][o.ndim] = it->stride[0][d];
            o.stride[1][o.ndim] = it->stride[1][d];
            o.ndim++;
        }
    }
    o.shape[o.ndim++] = 1;
    outer = kiter_outer_count(&o);
    for (uint64_t k = 0; k < outer; k++) {
        nrtemu__transpose_2d(dst + off[1] * (ptrdiff_t)size,
                             it->stride[1][p] * (ptrdiff_t)size,
                             src + off[0] * (ptrdiff_t)size,
                             it->stride[0][last] * (ptrdiff_t)size,
                             it->shape[p], it->shape[last], size);
        kiter_next(&o, idx, off);
    }
}

/* memcpy out of line: inlined with the bound RUN_PREFETCH known, GCC
 * makes it rep movsq, which copies runs of a few KiB slower than the C
 * library's vector copy. */
__attribute__((noinline)) static void
copy_bytes(char *dst, const char *src, size_t n)
{
    memcpy(dst, src, n);
}

/* Contiguous runs up to this many bytes are prefetched one ahead by
 * gather (measured faster on permutations that keep a short last axis;
 * longer runs are left to memcpy and the hardware prefetchers). */
#define RUN_PREFETCH 4096

/*
 * out (contiguous, its own shape) = the elements of `src` read with
 * `strides` (elements, per out dimension), on the calling thread.
 */
static void
gather_serial(const struct nrtemu_array *out, const char *src,
              const ptrdiff_t *strides)
{
    size_t size = nrtemu__dtype_size(out->dtype);
    struct kiter it;
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    ptrdiff_t off[2] = {0, 0};
    uint64_t outer;
    size_t len;
    ptrdiff_t st;
    char *dst = out->data;

    if (nrtemu__array_count(out) == 0) {
        return;
    }
    kiter_init(&it, out->ndim, out->shape, 2);
    for (uint32_t d = 0; d < out->ndim; d++) {
        it.stride[0][d] = strides[d];
    }
    kiter_broadcast(&it, 1, out->ndim, out->shape);
    kiter_collapse(&it);
    len = it.shape[it.ndim - 1];
    st = it.stride[0][it.ndim - 1];

    if (st != 1 && st != 0) {
        /* The input is contiguous along another dimension (a transpose,
         * or a slice of one): transpose tiles. */
        for (int p = it.ndim - 2; p >= 0; p--) {
            if (it.stride[0][p] == 1) {
                gather_transposed(&it, p, dst, src, size);
                return;
            }
        }
    }
    outer = kiter_outer_count(&it);
    if (st == 1 && len * size <= RUN_PREFETCH) {
        /* Short contiguous runs far apart (a permutation that keeps the
         * last axis): fetch the next run while copying this one. */
        const char *s = src;
        char *d = dst;
        for (uint64_t o = 0; o < outer; o++) {
            const char *next;
            kiter_next(&it, idx, off);
            next = src + off[0] * (ptrdiff_t)size;
            /* A broadcast copies the same run again: it is in L1. */
            for (size_t k = 0; next != s && k < len * size; k += 64) {
                __builtin_prefetch(next + k);
            }
            copy_bytes(d, s, len * size);
            s = next;
            d = dst + off[1] * (ptrdiff_t)size;
        }
        return;
    }
    for (uint64_t o = 0; o < outer; o++) {
        const char *s = src + off[0] * (ptrdiff_t)size;
        char *d = dst + off[1] * (ptrdiff_t)size;
        if (st == 0) {
            fill(d, s, len, size);
        } else {
            copy_run(d, s, st, len, size);
        }
        kiter_next(&it, idx, off);
    }
}

/*
 * Layout ops whose out has at least LAYOUT_SPLIT_MIN bytes run on the
 * worker pool, LAYOUT_PER_THREAD pieces of the out per thread
 * (kernel_split.h), claimed by the threads as they come: they only move
 * bytes, so pieces are as exact as one pass.  Below it, where a copy takes
 * little longer than a parked worker takes to wake, waking the pool costs
 * about what a second thread saves.
 */
#ifndef LAYOUT_SPLIT_MIN
#define LAYOUT_SPLIT_MIN ((size_t)1 << 20)
#endif
#define LAYOUT_PER_THREAD 4

/* At most this many pieces. */
#define LAYOUT_MAX_TASKS 64

/* The pieces for an out of `bytes`, of LAYOUT_SPLIT_MIN / 2 bytes at
 * least: 1 to stay on the caller. */
uint32_t
nrtemu__layout_tasks(size_t bytes)
{
    uint64_t threads = nrtemu__pool_threads();
    uint64_t tasks = threads * LAYOUT_PER_THREAD;

    if (threads < 2 || bytes < LAYOUT_SPLIT_MIN) {
        return 1;
    }
    tasks = tasks < bytes / (LAYOUT_SPLIT_MIN / 2)
                ? tasks
                : bytes / (LAYOUT_SPLIT_MIN / 2);
    return tasks < LAYOUT_MAX_TASKS ? (uint32_t)tasks : LAYOUT_MAX_TASKS;
}

struct gather_job {
    const struct nrtemu_array *out;
    const char *src;
    const ptrdiff_t *strides;
    struct ksplit plan;
    uint32_t tasks;
};

/* Piece t of a gather: each of its boxes is a gather of its own. */
static void
gather_task(void *arg, uint32_t t)
{
    const struct gather_job *job = arg;
    const struct nrtemu_array *out = job->out;
    size_t size = nrtemu__dtype_size(out->dtype);
    uint32_t dim = job->plan.dim;
    struct kbox b;
    uint64_t row, end;

    ksplit_piece(&job->plan, t, job->tasks, &row, &end);
    while (ksplit_box(&job->plan, &row, end, &b)) {
        struct nrtemu_array view = {.dtype = out->dtype};
        ptrdiff_t from = (ptrdiff_t)b.start * job->strides[dim];
        uint64_t off = ksplit_view(&job->plan, &b, out->ndim, out->shape,
                                   &view.ndim, view.shape);
        for (uint32_t e = 0; e < dim; e++) {
            from += (ptrdiff_t)b.lead[e] * job->strides[e];
        }
        view.data = (char *)out->data + off * size;
        gather_serial(&view, job->src + from * (ptrdiff_t)size,
                      job->strides + dim);
    }
}

static void
gather(const struct nrtemu_array *out, const char *src,
       const ptrdiff_t *strides)
{
    uint64_t count = nrtemu__array_count(out);
    struct gather_job job = {out, src, strides, {0}, 1};

    if (out->ndim > 0) {
        job.tasks =
            nrtemu__layout_tasks(count * nrtemu__dtype_size(out->dtype));
    }
    if (job.tasks > 1) {
        ksplit_plan(&job.plan, out->ndim, out->shape, job.tasks);
        job.tasks =
            job.plan.rows < job.tasks ? (uint32_t)job.plan.rows : job.tasks;
    }
    if (job.tasks <= 1) {
        gather_serial(out, src, strides);
        return;
    }
    nrtemu__pool_run(gather_task, &job, job.tasks);
}

/* C-order strides of `a`, in elements. */
static void
contiguous_strides(const struct nrtemu_array *a, ptrdiff_t *strides)
{
    ptrdiff_t st = 1;

    for (int d = (int)a->ndim - 1; d >= 0; d--) {
        strides[d] = st;
        st *= (ptrdiff_t)a->shape[d];
    }
}

void
nrtemu__kernel_transpose(const struct nrtemu_array *out,
                         const struct nrtemu_array *in, const uint32_t *perm)
{
    ptrdiff_t in_strides[NRTEMU_MAX_DIMS], strides[NRTEMU_MAX_DIMS];

    if (nrtemu__transpose_bands(out, in, perm)) {
        return;
    }
    contiguous_strides(in, in_strides);
    for (uint32_t d = 0; d < out->ndim; d++) {
        strides[d] = in_strides[perm[d]];
    }
    gather(out, in->data, strides);
}

void
nrtemu__kernel_broadcast(const struct nrtemu_array *out,
                         const struct nrtemu_array *in)
{
    struct kiter it;
    ptrdiff_t strides[NRTEMU_MAX_DIMS];

    /* kiter_broadcast computes the broadcast strides; gather collapses. */
    kiter_init(&it, out->ndim, out->shape, 1);
    kiter_broadcast(&it, 0, in->ndim, in->shape);
    for (uint32_t d = 0; d < out->ndim; d++) {
        strides[d] = it.stride[0][d];
    }
    gather(out, in->data, strides);
}

void
nrtemu__kernel_slice(const struct nrtemu_array *out,
                     const struct nrtemu_array *in, const int64_t *start,
                     const int64_t *step)
{
    ptrdiff_t in_strides[NRTEMU_MAX_DIMS], strides[NRTEMU_MAX_DIMS];
    ptrdiff_t base = 0;
    size_t size = nrtemu__dtype_size(in->dtype);

    contiguous_strides(in, in_strides);
    for (uint32_t d = 0; d < in->ndim; d++) {
        base += (ptrdiff_t)start[d] * in_strides[d];
        strides[d] = (ptrdiff_t)step[d] * in_strides[d];
    }
    gather(out, (const char *)in->data + base * (ptrdiff_t)size, strides);
}

/*
 * The rows of the update (its last dimension) go out one at a time: a
 * copy of the row when its step is 1 (a box of whole runs), else an
 * element at a time.
 */
void
nrtemu__kernel_update_slice(const struct nrtemu_array *out,
                            const struct nrtemu_array *operand,
                            const struct nrtemu_array *update,
                            const int64_t *start, const int64_t *step)
{
    ptrdiff_t strides[NRTEMU_MAX_DIMS], base = 0, row_step;
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    uint64_t count = nrtemu__array_count(update), row;
    size_t size = nrtemu__dtype_size(out->dtype);
    uint32_t nd = out->ndim;
    const char *u = update->data;
    char *o = out->data;

    if (out->data != operand->data) {
        nrtemu__kernel_copy_bytes(out->data, operand->data,
                                  nrtemu__array_count(out) * size);
    }
    if (count == 0) {
        return;
    }
    contiguous_strides(out, strides);
    for (uint32_t d = 0; d < nd; d++) {
        base += (ptrdiff_t)start[d] * strides[d];
    }
    if (nd == 0) {
        memcpy(o, u, size);
        return;
    }
    row = update->shape[nd - 1];
    row_step = (ptrdiff_t)step[nd - 1] * strides[nd - 1];
    for (uint64_t done = 0; done < count; done += row) {
        ptrdiff_t off = base;
        for (uint32_t d = 0; d + 1 < nd; d++) {
            off += (ptrdiff_t)idx[d] * (ptrdiff_t)step[d] * strides[d];
        }
        if (row_step == 1) {
            memcpy(o + off * (ptrdiff_t)size, u, row * size);
        } else {
            for (uint64_t i = 0; i < row; i++) {
                memcpy(o + (off + (ptrdiff_t)i * row_step) * (ptrdiff_t)size,
                       u + i * size, size);
            }
        }
        u += row * size;
        for (int d = (int)nd - 2; d >= 0; d--) {
            if (++idx[d] < update->shape[d]) {
                break;
            }
            idx[d] = 0;
        }
    }
}

/*
 * A concatenation is one run of bytes per operand per index of the outer
 * dimensions (those before the axis).  Piece t of `tasks` copies the
 * outer indices of its share when there are enough of them, else its
 * share of every run.
 */
struct concat_job {
    const struct nrtemu_array *out;
    const struct nrtemu_array *in;
    int n_in;
    uint32_t axis;
    uint64_t outer, inner;
    uint32_t tasks;
    bool stream; /* kernel_stream.h */
};

static void
concat_task(void *arg, uint32_t t)
{
    const struct concat_job *job = arg;
    size_t size = nrtemu__dtype_size(job->out->dtype);
    uint64_t total = job->out->shape[job->axis], at = 0;
    bool by_outer = job->outer >= job->tasks;
    uint64_t o0 = by_outer ? job->outer * t / job->tasks : 0;
    uint64_t o1 = by_outer ? job->outer * (t + 1) / job->tasks : job->outer;

    for (int k = 0; k < job->n_in; k++) {
        uint64_t n = job->in[k].shape[job->axis];
        size_t run = n * job->inner * size;
        size_t lo = by_outer ? 0 : run / job->tasks * t / 64 * 64;
        size_t hi = by_outer || t + 1 == job->tasks
                        ? run
                        : run / job->tasks * (t + 1) / 64 * 64;
        for (uint64_t o = o0; o < o1 && hi > lo; o++) {
            char *d = (char *)job->out->data +
                      ((o * total + at) * job->inner) * size + lo;
            const char *src = (const char *)job->in[k].data + o * run + lo;
            if (job->stream) {
                kstream_copy(d, src, hi - lo);
            } else {
                memcpy(d, src, hi - lo);
            }
        }
        at += n;
    }
    if (job->stream) {
        kstream_fence();
    }
}

void
nrtemu__kernel_concatenate(const struct nrtemu_array *out,
                           const struct nrtemu_array *in, int n_in,
                           uint32_t axis)
{
    struct concat_job job = {out, in, n_in, axis, 1, 1, 1, false};
    uint64_t count = nrtemu__array_count(out);
    uint64_t bytes = count * nrtemu__dtype_size(out->dtype);

    /* Empty: the loops below could still count up to 2^56 iterations
     * over the other dimensions. */
    if (count == 0) {
        return;
    }
    for (uint32_t d = 0; d < axis; d++) {
        job.outer *= out->shape[d];
    }
    for (uint32_t d = axis + 1; d < out->ndim; d++) {
        job.inner *= out->shape[d];
    }
    job.tasks = nrtemu__layout_tasks(bytes);
    job.stream = kstream_wanted(2 * bytes, bytes);
    if (job.tasks > 1) {
        nrtemu__pool_run(concat_task, &job, job.tasks);
    } else {
        concat_task(&job, 0);
    }
}

/* memcpy of many bytes in pieces on the pool (whole cache lines each),
 * streamed past the cache when they outgrow it. */
struct copy_job {
    char *dst;
    const char *src;
    size_t bytes;
    uint32_t tasks;
    bool stream; /* kernel_stream.h */
};

static void
copy_task(void *arg, uint32_t t)
{
    const struct copy_job *job = arg;
    size_t lo = job->bytes / job->tasks * t / 64 * 64;
    size_t hi = t + 1 == job->tasks
                    ? job->bytes
                    : job->bytes / job->tasks * (t + 1) / 64 * 64;

    if (hi > lo && job->stream) {
        kstream_copy(job->dst + lo, job->src + lo, hi - lo);
        kstream_fence();
    } else if (hi > lo) {
        memcpy(job->dst + lo, job->src + lo, hi - lo);
    }
}

void
nrtemu__kernel_copy_bytes(void *dst, const void *src, size_t bytes)
{
    struct copy_job job = {dst, src, bytes, nrtemu__layout_tasks(bytes),
                           kstream_wanted(2 * (uint64_t)bytes, bytes)};
    const char *d = dst, *s = src;

    if (d < s + bytes && s < d + bytes) {
        memmove(dst, src, bytes); /* overlapping: one pass keeps the order */
    } else if (job.tasks > 1) {
        nrtemu__pool_run(copy_task, &job, job.tasks);
    } else {
        copy_task(&job, 0);
    }
}

NRT_STATUS
nrtemu__kernel_take(const struct nrtemu_array *out,
                    const struct nrtemu_array *data,
                    const struct nrtemu_array *indices, uint32_t axis,
                    int64_t *bad_index, struct nrtemu_scratch *s)
{
    size_t size = nrtemu__dtype_size(data->dtype);
    uint64_t outer = 1, inner = 1, n = data->shape[axis];
    uint64_t count = nrtemu__array_count(indices);
    int64_t *idx;

    for (uint32_t d = 0; d < axis; d++) {
        outer *= data->shape[d];
    }
    for (uint32_t d = axis + 1; d < data->ndim; d++) {
        inner *= data->shape[d];
    }
    idx = nrtemu__scratch_get(s, count * sizeof *idx);
    if (idx == NULL) {
        return NRT_RESOURCE;
    }
    /* Check every index before writing anything; negative ones count
     * from the end, as in NumPy. */
    nrtemu__convert(NRTEMU_DTYPE_INT64, idx, indices->dtype, indices->data, 1,
                    count);
    for (uint64_t i = 0; i < count; i++) {
        int64_t v = idx[i];
        if (v < -(int64_t)n || v >= (int64_t)n) {
            *bad_index = v;
            return NRT_EXEC_OOB;
        }
        idx[i] = v < 0 ? v + (int64_t)n : v;
    }
    if (outer * inner * count == 0) {
        return NRT_SUCCESS;
    }
    for (uint64_t o = 0; o < outer; o++) {
        const char *src = (const char *)data->data + o * n * inner * size;
        char *dst = (char *)out->data + o * count * inner * size;
        if (inner == 1 && size == 4) {
            const uint32_t *s32 = (const uint32_t *)src;
            uint32_t *d32 = (uint32_t *)dst;
            for (uint64_t i = 0; i < count; i++) {
                d32[i] = s32[idx[i]];
            }
            continue;
        }
        for (uint64_t i = 0; i < count; i++) {
            memcpy(dst + i * inner * size,
                   src + (uint64_t)idx[i] * inner * size, inner * size);
        }
    }
    return NRT_SUCCESS;
}

void
nrtemu__kernel_iota(const struct nrtemu_array *out, uint32_t axis)
{
    size_t size = nrtemu__dtype_size(out->dtype);
    uint64_t outer = 1, inner = 1, n;
    unsigned char elem[8];
    char *dst = out->data;

    if (out->ndim == 0) {
        int64_t zero = 0;
        nrtemu__convert(out->dtype, dst, NRTEMU_DTYPE_INT64, &zero, 1, 1);
        return;
    }
    /* Empty: the loops below could still count up to 2^56 iterations. */
    if (nrtemu__array_count(out) == 0) {
        return;
    }
    n = out->shape[axis];
    for (uint32_t d = 0; d < axis; d++) {
        outer *= out->shape[d];
    }
    for (uint32_t d = axis + 1; d < out->ndim; d++) {
        inner *= out->shape[d];
    }
    for (uint64_t i = 0; i < n; i++) {
        int64_t v = (int64_t)i;
        nrtemu__convert(out->dtype, elem, NRTEMU_DTYPE_INT64, &v, 1, 1);
        for (uint64_t o = 0; o < outer; o++) {
            fill(dst + ((o * n + i) * inner) * size, elem, inner, size);
        }
    }
}

void
nrtemu__kernel_full(const struct nrtemu_array *out, const void *value)
{
    fill(out->data, value, nrtemu__array_count(out),
         nrtemu__dtype_size(out->dtype));
}
