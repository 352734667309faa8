/*
 * kernel_reduce.c - reductions (sum, mean, max, min, prod): the driver
 * and the portable loops.  argmax/argmin are kernel_argreduce.c's,
 * softmax kernel_softmax.c's; the folds they share are kernel_reduce.h's,
 * and the x86 paths (AVX-512: the WIDE paths below) kernel_reduce_x86.c's.
 *
 * The input is walked with the output as a second operand whose stride is
 * 0 along reduced axes (kernel_iter.h).  After collapsing, the innermost
 * run is either reduced (its elements fold into one output element: a
 * "row") or kept (it folds elementwise into a run of the output: a
 * "column").  Both loops are vectorised for the four compute types.  Rows
 * of floats are summed pairwise, as NumPy does, which keeps the error
 * small for long rows; columns fold one after the other, as in NumPy.
 *
 * Summation order over a non-contiguous axis: acc[i] = ((acc[i] + x0[i])
 * + x1[i]) + ..., the rows in index order, each output element on its
 * own; vectorisation runs across i (the contiguous axis), so it changes
 * no result.  Consecutive rows that share the accumulators are handed
 * over together (up to WINDOW_ELEMS elements), so that sums touch the
 * accumulators once per four rows.  Inputs that need converting (16- and
 * 8-bit floats to float32, narrower ints to 64 bits) are converted in
 * windows of that size, not as a copy of the whole input.
 *
 * Reductions over consecutive axes, and every argmax/argmin, see the
 * input as [A, R, B] (reduce_block; nrtemu__kernel_argreduce): R reduced
 * rows of B kept columns, A times.  Each output element is folded by one
 * task, in the order above, so splitting the work among the pool's
 * threads (inputs of at least PARALLEL_BYTES) changes no result.  The
 * exception: columns of max/min and of argmax/argmin, whose result no
 * order of the rows changes, are split by rows (split_r), so that each
 * task reads consecutive rows, in the order of memory, rather than short
 * runs of every row; the tasks' extremes then fold in task order, which
 * keeps the first NaN and the first extreme; and columns of fp8 sums,
 * split by rows when no order of the additions changes them (exact_sum),
 * else summed again split by columns.  Column folds of bfloat16,
 * float16, fp8 and int32 widen their rows in registers (with AVX-512, 64
 * at a time: the WIDE paths); other conversions use an L1-sized window
 * per task.
 */
#include <string.h>

#include "kernels/convert.h"
#include "kernels/kernel.h"
#include "kernels/kernel_iter.h"
#include "kernels/kernel_reduce.h"
#include "kernels/pool.h"
#include "kernels/simd.h"

NRTEMU_RULES_BEGIN
DEFINE_FLOAT_ROWS(f32, float)
DEFINE_FLOAT_ROWS(f64, double)

DEFINE_INT_ROWS(i64, int64_t, INT64_MIN, INT64_MAX)
DEFINE_INT_ROWS(u64, uint64_t, 0, UINT64_MAX)
/* int32 max/min, in their own width (nrtemu__kernel_reduce). */
DEFINE_INT_ROWS(i32, int32_t, INT32_MIN, INT32_MAX)
NRTEMU_RULES_END

/* Rows of int32 this long at most have float64 sums that are exact in
 * any order: no partial sum exceeds 2^22 * 2^31 = 2^53 in magnitude.  So
 * their pairwise float64 sum (a mean's) is their int64 sum, converted. */
#define I32_EXACT_ROW ((uint64_t)1 << 22)

/*
 * The int64 sum or product of a row of int32, widened as it is read:
 * what i64_row gives once the row is widened into a window (wrapping sums
 * and products do not depend on the order), in one pass: faster than
 * through the window, and no slower than a float32 sum in place.
 */
NRTEMU_MULTIVERSION
static int64_t
i32_row_wide(enum nrtemu_op op, size_t n, const int32_t *x)
{
    uint64_t r = op == NRTEMU_OP_PROD;

    if (op == NRTEMU_OP_PROD) {
        for (size_t i = 0; i < n; i++) {
            r *= (uint64_t)(int64_t)x[i];
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            r += (uint64_t)(int64_t)x[i];
        }
    }
    return (int64_t)r;
}

/* Column folds that widen their rows in registers (fold_columns_from). */
NRTEMU_RULES_BEGIN
DEFINE_COLUMNS(f32_bf16, float, uint16_t, BF16_OF, NRTEMU_FLOAT_MAX,
               NRTEMU_FLOAT_MIN, ADD_, MUL_)
DEFINE_COLUMNS(f32_fp8, float, uint8_t, NARROW_OF, NRTEMU_FLOAT_MAX,
               NRTEMU_FLOAT_MIN, ADD_, MUL_)
DEFINE_COLUMNS(f32_f16, float, uint16_t, NARROW_OF, NRTEMU_FLOAT_MAX,
               NRTEMU_FLOAT_MIN, ADD_, MUL_)
DEFINE_COLUMNS(i64_i32, int64_t, int32_t, I64_OF, NRTEMU_INT_MAX,
               NRTEMU_INT_MIN, ADD_WRAP, MUL_WRAP)
DEFINE_COLUMNS(f64_i32, double, int32_t, F64_OF, NRTEMU_FLOAT_MAX,
               NRTEMU_FLOAT_MIN, ADD_, MUL_)
NRTEMU_RULES_END

/* One accumulator element of any compute type. */
union wide {
    int32_t i32;
    float f32;
    double f64;
    int64_t i64;
    uint64_t u64;
};

static void
identity(enum nrtemu_op op, enum nrtemu_dtype kt, union wide *v)
{
    switch (kt) {
    case NRTEMU_DTYPE_FLOAT32:
        v->f32 = op == NRTEMU_OP_MAX    ? -INFINITY
                 : op == NRTEMU_OP_MIN  ? INFINITY
                 : op == NRTEMU_OP_PROD ? 1.0f
                                        : 0.0f;
        break;
    case NRTEMU_DTYPE_FLOAT64:
        v->f64 = op == NRTEMU_OP_MAX    ? -INFINITY
                 : op == NRTEMU_OP_MIN  ? INFINITY
                 : op == NRTEMU_OP_PROD ? 1.0
                                        : 0.0;
        break;
    case NRTEMU_DTYPE_INT32:
        v->i32 = op == NRTEMU_OP_MAX ? INT32_MIN : INT32_MAX;
        break;
    case NRTEMU_DTYPE_INT64:
        v->i64 = op == NRTEMU_OP_MAX    ? INT64_MIN
                 : op == NRTEMU_OP_MIN  ? INT64_MAX
                 : op == NRTEMU_OP_PROD ? 1
                                        : 0;
        break;
    default:
        v->u64 = op == NRTEMU_OP_MIN ? UINT64_MAX : op == NRTEMU_OP_PROD;
        break;
    }
}

/* Fold a reduced run into acc[0]. */
static void
fold_row(enum nrtemu_op op, enum nrtemu_dtype kt, size_t n, const void *x,
         void *acc)
{
    switch (kt) {
    case NRTEMU_DTYPE_FLOAT32: {
        float r = f32_row(op, n, x), *a = acc;
        if (op == NRTEMU_OP_SUM) {
            *a += r; /* as the column fold adds, without its call */
        } else {
            f32_column(op, 1, &r, a);
        }
        break;
    }
    case NRTEMU_DTYPE_FLOAT64: {
        double r = f64_row(op, n, x), *a = acc;
        f64_column(op, 1, &r, a);
        break;
    }
    case NRTEMU_DTYPE_INT64: {
        int64_t r = i64_row(op, n, x), *a = acc;
        i64_column(op, 1, &r, a);
        break;
    }
    case NRTEMU_DTYPE_INT32: {
        int32_t r = i32_row(op, n, x), *a = acc;
        i32_column(op, 1, &r, a);
        break;
    }
    default: {
        uint64_t r = u64_row(op, n, x), *a = acc;
        u64_column(op, 1, &r, a);
        break;
    }
    }
}

/* Fold g reduced rows of n kept elements, `stride` elements apart, into
 * acc[0..n). */
static void
fold_columns(enum nrtemu_op op, enum nrtemu_dtype kt, size_t n, size_t g,
             size_t stride, const void *x, void *acc)
{
    if (nrtemu__reduce_x86_fold(op, kt, kt, n, g, stride, x, acc)) {
        return;
    }
    switch (kt) {
    case NRTEMU_DTYPE_FLOAT32:
        f32_columns(op, n, g, stride, x, acc);
        break;
    case NRTEMU_DTYPE_FLOAT64:
        f64_columns(op, n, g, stride, x, acc);
        break;
    case NRTEMU_DTYPE_INT64:
        i64_columns(op, n, g, stride, x, acc);
        break;
    case NRTEMU_DTYPE_INT32:
        i32_columns(op, n, g, stride, x, acc);
        break;
    default:
        u64_columns(op, n, g, stride, x, acc);
        break;
    }
}

/*
 * Elements [start, start + count) of `in` as `kt`: in place when `in`
 * already is an array of `kt` that the compute dtype does not round, else
 * converted into buf (room for `cap` elements) in windows of up to `cap`
 * elements.  The reduction walks the input in order, so each element is
 * converted once, and the converted copy stays small enough for the
 * caches (rather than a converted copy of the whole input).
 */
struct window {
    const struct nrtemu_array *in;
    enum nrtemu_dtype compute, kt;
    bool in_place;
    char *buf;
    uint64_t cap, lo, hi; /* buf holds elements [lo, hi) */
};

/* Unit-stride runs of the widenings above, for the reductions' windows. */
NRTEMU_MULTIVERSION
static void
widen_bf16(float *restrict d, const uint16_t *restrict s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        d[i] = bf16_widen(s[i]);
    }
}

/* fp8 to float32 (narrow_fp8), in plain arithmetic that vectorises in
 * every clone: nrtemu__convert decodes fp8 through a table, a gather per
 * element. */
NRTEMU_MULTIVERSION
static void
widen_fp8(float *restrict d, const uint8_t *restrict s, size_t n,
          struct narrow p)
{
    for (size_t i = 0; i < n; i++) {
        d[i] = narrow_widen(s[i], p);
    }
}

/* float16: as F16C's vcvtph2ps, which nrtemu__convert uses (a NaN keeps
 * its payload and comes back quiet). */
static const struct narrow narrow_f16 = {
    .mag_mask = 0x7fff,
    .sign_shift = 16,
    .sh = 13,
    .rebias = 112u << 23,
    .sub_below = 0x400,
    .special_at = 0x7c00,
    .payload = 0x7fffffu,
    .quiet = 0x400000u,
    .quiet_above = 0x7c00,
    .step = 0x1p-24f,
};

NRTEMU_MULTIVERSION
static void
widen_i32_i64(int64_t *restrict d, const int32_t *restrict s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        d[i] = s[i];
    }
}

NRTEMU_MULTIVERSION
static void
widen_i32_f64(double *restrict d, const int32_t *restrict s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        d[i] = s[i];
    }
}

/*
 * Elements [start, start + n) of `in` as `kt` (the kernel dtype of
 * `compute`, or a wider one) into buf: the widenings above when the
 * compute dtype does not round the input, else nrtemu__kernel_load.
 */
static void
load_run(const struct nrtemu_array *in, enum nrtemu_dtype compute,
         enum nrtemu_dtype kt, uint64_t start, size_t n, void *buf)
{
    const void *src =
        (const char *)in->data + start * nrtemu__dtype_size(in->dtype);
    struct nrtemu_array part = {
        .data = (void *)(uintptr_t)src,
        .dtype = in->dtype,
        .ndim = 1,
        .shape = {n},
    };
    if (compute == kt || compute == in->dtype) {
        switch (in->dtype) {
        case NRTEMU_DTYPE_BFLOAT16:
            if (kt == NRTEMU_DTYPE_FLOAT32) {
                widen_bf16(buf, src, n);
                return;
            }
            break;
        case NRTEMU_DTYPE_FLOAT8_E4M3:
        case NRTEMU_DTYPE_FLOAT8_E4M3FN:
        case NRTEMU_DTYPE_FLOAT8_E5M2:
        case NRTEMU_DTYPE_FLOAT8_E3M4:
            if (kt == NRTEMU_DTYPE_FLOAT32) {
                size_t done =
                    nrtemu__reduce_x86_widen_fp8(buf, src, n, in->dtype);
                if (done < n) {
                    widen_fp8((float *)buf + done, (const uint8_t *)src + done,
                              n - done, narrow_fp8(in->dtype));
                }
                return;
            }
            break;
        case NRTEMU_DTYPE_INT32:
            if (kt == NRTEMU_DTYPE_INT64) {
                widen_i32_i64(buf, src, n);
                return;
            }
            if (kt == NRTEMU_DTYPE_FLOAT64) {
                widen_i32_f64(buf, src, n);
                return;
            }
            break;
        default:
            break;
        }
    }
    nrtemu__kernel_load(&part, compute, kt, buf);
}

/* load_run for argmax/argmin (kernel_argreduce.c). */
void
nrtemu__reduce_load_run(const struct nrtemu_array *in,
                        enum nrtemu_dtype compute, enum nrtemu_dtype kt,
                        uint64_t start, size_t n, void *buf)
{
    load_run(in, compute, kt, start, n, buf);
}

static const char *
window_get(struct window *w, uint64_t start, uint64_t count)
{
    size_t kt_size = nrtemu__dtype_size(w->kt);

    if (w->in_place) {
        return (const char *)w->in->data + start * kt_size;
    }
    if (start < w->lo || start + count > w->hi) {
        uint64_t total = nrtemu__array_count(w->in);
        size_t n = total - start < w->cap ? total - start : w->cap;
        load_run(w->in, w->compute, w->kt, start, n, w->buf);
        w->lo = start;
        w->hi = start + n;
    }
    return w->buf + (start - w->lo) * kt_size;
}

/* Fold g rows of n elements of `src`, `stride` apart, into acc[0..n) of
 * kt, widening them in registers; false when no such fold exists for the
 * pair (the caller converts them first). */
static bool
fold_columns_from(enum nrtemu_op op, enum nrtemu_dtype kt,
                  enum nrtemu_dtype src, size_t n, size_t g, size_t stride,
                  const void *x, void *acc)
{
    if (x != NULL &&
        nrtemu__reduce_x86_fold(op, kt, src, n, g, stride, x, acc)) {
        return true;
    }
    if (kt == NRTEMU_DTYPE_FLOAT32 && src == NRTEMU_DTYPE_BFLOAT16) {
        f32_bf16_columns(op, n, g, stride, x, acc);
    } else if (kt == NRTEMU_DTYPE_FLOAT32 && src == NRTEMU_DTYPE_FLOAT16) {
        f32_f16_columns_p(op, n, g, stride, x, acc, narrow_f16);
    } else if (kt == NRTEMU_DTYPE_FLOAT32 && is_fp8(src)) {
        f32_fp8_columns_p(op, n, g, stride, x, acc, narrow_fp8(src));
    } else if (kt == NRTEMU_DTYPE_INT64 && src == NRTEMU_DTYPE_INT32) {
        i64_i32_columns(op, n, g, stride, x, acc);
    } else if (kt == NRTEMU_DTYPE_FLOAT64 && src == NRTEMU_DTYPE_INT32) {
        f64_i32_columns(op, n, g, stride, x, acc);
    } else {
        return false;
    }
    return true;
}

/*
 * The input as [A, R, B] when the reduced axes are consecutive (R their
 * elements, A those of the axes before, B of the axes after): the shape
 * of every reduction over one axis, or over the last or first few.
 */
static bool
reduced_block(const struct nrtemu_array *in, uint32_t axes, uint64_t *A,
              uint64_t *R, uint64_t *B)
{
    uint32_t lo, hi;

    if (in->ndim == 0 || axes == 0) {
        return false;
    }
    lo = (uint32_t)__builtin_ctz(axes);
    hi = 31u - (uint32_t)__builtin_clz(axes);
    if (hi >= in->ndim ||
        axes != (uint32_t)(((uint64_t)2 << hi) - ((uint64_t)1 << lo))) {
        return false;
    }
    *A = *R = *B = 1;
    for (uint32_t d = 0; d < in->ndim; d++) {
        uint64_t *f = d < lo ? A : d <= hi ? R : B;
        *f *= in->shape[d];
    }
    /* Reducing axes of 1 copies: the iterator path collapses it into
     * runs, where [A, 1, 1] would fold A rows of one element. */
    return *R > 1;
}

/* How the rows of a reduction reach the folds. */
enum reduce_load {
    LOAD_IN_PLACE, /* the input already is an array of kt */
    LOAD_FUSED,    /* columns widened in registers (fold_columns_from) */
    LOAD_CONVERT,  /* converted into the task's window first (load_run) */
};

/*
 * Sums of fp8 columns split by rows (exact_sum): float32 sums of fp8
 * values are exact while no partial sum needs more than float32's 24 bits,
 * counted in the format's least step (its least subnormal: every fp8
 * value is a whole number of it), and then no order of the additions
 * changes the result, -0 included (a zero sum is -0 only when every term
 * and the start are).  So when R times the greatest magnitude among the
 * codes is at most 2^24 such steps (no partial sum of any run of rows
 * exceeds it, and the codes hold no infinity or NaN), the sums of the
 * tasks' runs of rows, added in task order, are the column sums row after
 * row; otherwise the columns are summed again, split by columns.  Each
 * task then reads whole rows in the order of memory where a split by
 * columns reads half rows of a 2048-byte row, which the hardware
 * prefetchers read whole.  (nrtemu__reduce_x86_exact_sum_ready says
 * where this applies.)
 *
 * exact_sum_holds: whether sums of R rows of codes of magnitude at most
 * mag2 >> 1 are exact in any order (false for an infinity or a NaN).
 */
static bool
exact_sum_holds(enum nrtemu_dtype src, uint64_t R, uint8_t mag2)
{
    const struct narrow p = narrow_fp8(src);
    const double big = narrow_widen(mag2 >> 1, p), step = narrow_widen(1, p);

    return (double)R * big <= 0x1p24 * step;
}

/* One reduction of [A, R, B] into acc[A * B], split among tasks by A, or
 * by B (in multiples of 16 elements) when there are too few of A. */
struct reduce_job {
    const struct nrtemu_array *in;
    enum nrtemu_op fold;
    enum nrtemu_dtype compute, kt;
    enum reduce_load load;
    uint64_t A, R, B;
    char *acc;
    char *windows; /* window_bytes for each task */
    size_t window_bytes;
    char *partial; /* split_r: each task's A * B accumulators */
    uint8_t *mags; /* exact: each task's greatest fp8 magnitude, << 1 */
    uint32_t tasks;
    bool split_a, split_r, exact;
};

/*
 * Every output element is folded by one task, in the order of the serial
 * fold (a row pairwise in one piece, a column row after row), so the
 * split changes no result.
 */
static void
reduce_task(void *arg, uint32_t t)
{
    const struct reduce_job *j = arg;
    const struct nrtemu_array *in = j->in;
    const char *data = in->data;
    size_t ks = nrtemu__dtype_size(j->kt), is = nrtemu__dtype_size(in->dtype);
    char *win = j->windows + (size_t)t * j->window_bytes;
    char *acc = j->acc;
    uint64_t a0 = 0, a1 = j->A, r0 = 0, r1 = j->R, b0 = 0, b1 = j->B;
    struct fp8_rows rows = {0};
    const bool fp8 = j->B == 1 && j->load == LOAD_CONVERT &&
                     nrtemu__reduce_x86_rows_init(&rows, j->fold, j->kt,
                                                  j->compute, in->dtype);
    /* Rows of int32 summed or multiplied into int64 as they are read
     * (i32_row_wide), and float64 sums of them that are exact. */
    const bool i32_wide =
        j->B == 1 && in->dtype == NRTEMU_DTYPE_INT32 &&
        j->kt == NRTEMU_DTYPE_INT64 &&
        (j->compute == NRTEMU_DTYPE_INT32 ||
         j->compute == NRTEMU_DTYPE_INT64) &&
        (j->fold == NRTEMU_OP_SUM || j->fold == NRTEMU_OP_PROD);
    const bool i32_exact = j->B == 1 && in->dtype == NRTEMU_DTYPE_INT32 &&
                           j->kt == NRTEMU_DTYPE_FLOAT64 &&
                           j->fold == NRTEMU_OP_SUM && j->R <= I32_EXACT_ROW;

    if (j->split_r) {
        union wide init;
        task_share(j->R, j->tasks, t, 1, &r0, &r1);
        acc = j->partial + (size_t)t * j->A * j->B * ks;
        identity(j->fold, j->kt, &init);
        for (uint64_t i = 0; i < j->A * j->B; i++) {
            memcpy(acc + i * ks, &init, ks);
        }
    } else if (j->split_a) {
        task_share(j->A, j->tasks, t, 1, &a0, &a1);
    } else {
        task_share(j->B, j->tasks, t, 16, &b0, &b1);
    }
    if (j->exact) {
        uint8_t mag = 0;
        for (uint64_t a = 0; a < j->A; a++) {
            nrtemu__reduce_x86_exact_sum_rows(
                in->dtype, j->B, r1 - r0, j->B,
                data + (a * j->R + r0) * j->B * is,
                (float *)(void *)(acc + a * j->B * ks), &mag);
        }
        j->mags[t] = mag;
        return;
    }
    for (uint64_t a = a0; a < a1; a++) {
        if (j->B == 1) {
            const void *x = data + a * j->R * is;
            if (fp8 &&
                nrtemu__reduce_x86_rows_fold(
                    &rows, j->R, x, (float *)(void *)(j->acc + a * ks))) {
                continue;
            }
            if (i32_wide) {
                int64_t r = i32_row_wide(j->fold, j->R, x);
                i64_column(j->fold, 1, &r,
                           (int64_t *)(void *)(j->acc + a * ks));
                continue;
            }
            if (i32_exact) {
                double r = (double)i32_row_wide(NRTEMU_OP_SUM, j->R, x);
                f64_column(NRTEMU_OP_SUM, 1, &r,
                           (double *)(void *)(j->acc + a * ks));
                continue;
            }
            if (j->load != LOAD_IN_PLACE) {
                load_run(in, j->compute, j->kt, a * j->R, j->R, win);
                x = win;
            }
            fold_row(j->fold, j->kt, j->R, x, j->acc + a * ks);
            continue;
        }
        for (uint64_t b = b0; b < b1; b += COLUMN_CHUNK) {
            size_t w = b1 - b < COLUMN_CHUNK ? b1 - b : COLUMN_CHUNK;
            uint64_t first = (a * j->R + r0) * j->B + b; /* of row r0 */
            char *pa = acc + (a * j->B + b) * ks;
            uint64_t g = WINDOW_ELEMS / w;

            if (j->load == LOAD_IN_PLACE) {
                fold_columns(j->fold, j->kt, w, r1 - r0, j->B,
                             data + first * is, pa);
                continue;
            }
            if (j->load == LOAD_FUSED) {
                fold_columns_from(j->fold, j->kt, in->dtype, w, r1 - r0, j->B,
                                  data + first * is, pa);
                continue;
            }
            for (uint64_t r = 0; r < r1 - r0; r += g) {
                uint64_t gg = r1 - r0 - r < g ? r1 - r0 - r : g;
                for (uint64_t k = 0; k < gg; k++) {
                    load_run(in, j->compute, j->kt, first + (r + k) * j->B, w,
                             win + k * w * ks);
                }
                fold_columns(j->fold, j->kt, w, gg, w, win, pa);
            }
        }
    }
}

/* The serial and the split reductions end alike: a mean divides, and
 * accumulators that are not the output are stored into it. */
static void
reduce_finish(enum nrtemu_op op, enum nrtemu_dtype compute,
              enum nrtemu_dtype kt, const struct nrtemu_array *out,
              uint64_t reduced, void *acc, bool acc_is_out)
{
    uint64_t out_count = nrtemu__array_count(out);

    if (op == NRTEMU_OP_MEAN) {
        /* sum / count, a true division as NumPy does (0 / 0 is NaN). */
        if (kt == NRTEMU_DTYPE_FLOAT32) {
            float *a = (float *)acc, c = (float)reduced;
            for (uint64_t i = 0; i < out_count; i++) {
                a[i] /= c;
            }
        } else {
            double *a = (double *)acc, c = (double)reduced;
            for (uint64_t i = 0; i < out_count; i++) {
                a[i] /= c;
            }
        }
    }
    if (!acc_is_out) {
        nrtemu__kernel_store(out, compute, kt, acc);
    }
}

/* The reduction of [A, R, B] (reduced_block), on the pool's threads when
 * the input is large. */
static NRT_STATUS
reduce_block(enum nrtemu_op op, enum nrtemu_dtype compute,
             enum nrtemu_dtype kt, const struct nrtemu_array *out,
             const struct nrtemu_array *in, uint64_t A, uint64_t R, uint64_t B,
             struct nrtemu_scratch *s)
{
    size_t ks = nrtemu__dtype_size(kt);
    uint64_t in_bytes =
        nrtemu__array_count(in) * nrtemu__dtype_size(in->dtype);
    uint32_t threads = in_bytes >= PARALLEL_BYTES ? nrtemu__pool_threads() : 1;
    bool acc_is_out =
        out->dtype == kt && (compute == kt || compute == out->dtype);
    bool exact = compute == kt || compute == in->dtype;
    size_t acc_bytes = acc_is_out ? 0 : (A * B * ks + 63) & ~(size_t)63;
    size_t partial_bytes = 0;
    struct reduce_job j = {
        .in = in,
        .fold = op == NRTEMU_OP_MEAN ? NRTEMU_OP_SUM : op,
        .compute = compute,
        .kt = kt,
        .A = A,
        .R = R,
        .B = B,
    };
    union wide init;
    char *scratch;

    if (in->dtype == kt && exact) {
        j.load = LOAD_IN_PLACE;
    } else if (B > 1 && exact &&
               fold_columns_from(j.fold, kt, in->dtype, 0, 0, 0, NULL, NULL)) {
        j.load = LOAD_FUSED; /* (a fold of no rows: only asks) */
    } else {
        j.load = LOAD_CONVERT;
        j.window_bytes = ((B == 1 ? R : WINDOW_ELEMS) * ks + 63) & ~(size_t)63;
    }
    j.split_a = B == 1 || A >= threads;
    /* A split by columns gives each thread one task, the widest runs of
     * each row: more, narrower tasks take more CPU time, their short runs
     * a row apart streaming poorly. */
    j.tasks = task_count(threads, j.split_a ? A : (B + 15) / 16);
    if (!j.split_a && j.tasks > threads) {
        j.tasks = threads;
    }
    if (!j.split_a && threads > 1 && j.fold == NRTEMU_OP_SUM &&
        j.load == LOAD_FUSED &&
        nrtemu__reduce_x86_exact_sum_ready(kt, in->dtype) &&
        R >= 2 * SPLIT_ROWS_MIN && R <= ((uint64_t)1 << 24) &&
        A * B * ks * threads * TASKS_PER_THREAD <= SPLIT_PARTIAL_MAX) {
        /* fp8 column sums by rows, when exact_sum_holds */
        j.split_r = j.exact = true;
        j.tasks = rows_task_count(threads, R, in_bytes);
        partial_bytes = (j.tasks * A * B * ks + j.tasks + 63) & ~(size_t)63;
    }
    if (!j.split_a && (op == NRTEMU_OP_MAX || op == NRTEMU_OP_MIN) &&
        R >= 2 * SPLIT_ROWS_MIN &&
        A * B * ks * threads * TASKS_PER_THREAD <= SPLIT_PARTIAL_MAX) {
        /* Columns of an extreme, which no order of the rows changes (the
         * first NaN still wins when the tasks' extremes fold in task
         * order): tasks of consecutive rows read the input in order. */
        j.split_r = true;
        j.tasks = rows_task_count(threads, R, in_bytes);
        partial_bytes = (j.tasks * A * B * ks + 63) & ~(size_t)63;
    }
    scratch = nrtemu__scratch_get(s, acc_bytes + partial_bytes +
                                         j.tasks * j.window_bytes + 64);
    if (scratch == NULL) {
        return NRT_RESOURCE;
    }
    j.acc = acc_is_out ? out->data : scratch;
    j.partial = scratch + acc_bytes;
    j.mags = (uint8_t *)j.partial + j.tasks * A * B * ks;
    j.windows = scratch + acc_bytes + partial_bytes;
    identity(j.fold, kt, &init);
    for (uint64_t i = 0; i < A * B; i++) {
        memcpy(j.acc + i * ks, &init, ks);
    }
    if (j.tasks > 1) {
        nrtemu__pool_run(reduce_task, &j, j.tasks);
    } else {
        reduce_task(&j, 0);
    }
    if (j.exact) {
        uint8_t mag = 0;
        for (uint32_t t = 0; t < j.tasks; t++) {
            mag = j.mags[t] > mag ? j.mags[t] : mag;
        }
        if (!exact_sum_holds(in->dtype, R, mag)) {
            /* not exact in every order: again, split by columns */
            j.split_r = j.exact = false;
            j.tasks = task_count(threads, (B + 15) / 16);
            j.tasks = j.tasks > threads ? threads : j.tasks;
            if (j.tasks > 1) {
                nrtemu__pool_run(reduce_task, &j, j.tasks);
            } else {
                reduce_task(&j, 0);
            }
        }
    }
    for (uint32_t t = 0; j.split_r && t < j.tasks; t++) {
        fold_columns(j.fold, kt, A * B, 1, 0, j.partial + t * A * B * ks,
                     j.acc);
    }
    reduce_finish(op, compute, kt, out, R, j.acc, acc_is_out);
    return NRT_SUCCESS;
}

NRT_STATUS
nrtemu__kernel_reduce(enum nrtemu_op op, enum nrtemu_dtype compute,
                      const struct nrtemu_array *out,
                      const struct nrtemu_array *in, uint32_t axes,
                      struct nrtemu_scratch *s)
{
    enum nrtemu_dtype kt = nrtemu__kernel_dtype(compute);
    uint64_t in_count = nrtemu__array_count(in);
    uint64_t out_count = nrtemu__array_count(out);
    uint64_t reduced = 1;
    uint64_t out_shape[NRTEMU_MAX_DIMS];
    uint32_t out_ndim = 0;
    size_t kt_size, win_bytes, acc_bytes;
    bool acc_is_out;
    char *scratch, *acc;
    struct window win = {.in = in, .lo = 0, .hi = 0};
    struct kiter it;
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    ptrdiff_t off[2] = {0, 0};
    union wide init;
    uint64_t A, R, B;

    if (op == NRTEMU_OP_MEAN && kt != NRTEMU_DTYPE_FLOAT32 &&
        kt != NRTEMU_DTYPE_FLOAT64) {
        /* The mean of integers is a float64, as in NumPy. */
        compute = NRTEMU_DTYPE_FLOAT64;
        kt = NRTEMU_DTYPE_FLOAT64;
    }
    if (compute == NRTEMU_DTYPE_INT32 &&
        (op == NRTEMU_OP_MAX || op == NRTEMU_OP_MIN)) {
        /* The same extreme as in int64, at half the bytes per element. */
        kt = NRTEMU_DTYPE_INT32;
    }
    if (out_count == 0) {
        return NRT_SUCCESS;
    }
    if (in_count != 0 && reduced_block(in, axes, &A, &R, &B)) {
        return reduce_block(op, compute, kt, out, in, A, R, B, s);
    }
    kt_size = nrtemu__dtype_size(kt);

    /* The output as an operand: the kept axes, stride 0 on the others. */
    for (uint32_t d = 0; d < in->ndim; d++) {
        if (axes & (1u << d)) {
            reduced *= in->shape[d];
            out_shape[d] = 1;
        } else {
            out_shape[d] = in->shape[d];
        }
        out_ndim++;
    }
    kiter_init(&it, in->ndim, in->shape, 2);
    kiter_broadcast(&it, 0, in->ndim, in->shape);
    kiter_broadcast(&it, 1, out_ndim, out_shape);
    /* kiter_broadcast gives stride 0 only where the iterator dim is not 1;
     * a reduced axis of size 1 needs no stride anyway. */
    kiter_collapse(&it);

    win.compute = compute;
    win.kt = kt;
    win.in_place = in->dtype == kt && (compute == kt || compute == in->dtype);
    /* A window holds a whole innermost run (a reduced row is summed
     * pairwise in one piece) or WINDOW_ELEMS elements. */
    win.cap = it.shape[it.ndim - 1] > WINDOW_ELEMS ? it.shape[it.ndim - 1]
                                                   : WINDOW_ELEMS;
    win.cap = win.cap < in_count ? win.cap : in_count;
    acc_is_out = out->dtype == kt && (compute == kt || compute == out->dtype);
    win_bytes = win.in_place ? 0 : (win.cap * kt_size + 63) & ~(size_t)63;
    acc_bytes = acc_is_out ? 0 : out_count * kt_size;
    scratch = nrtemu__scratch_get(s, win_bytes + acc_bytes + 64);
    if (scratch == NULL) {
        return NRT_RESOURCE;
    }
    win.buf = scratch;
    acc = acc_is_out ? out->data : scratch + win_bytes;

    identity(op == NRTEMU_OP_MEAN ? NRTEMU_OP_SUM : op, kt, &init);
    for (uint64_t i = 0; i < out_count; i++) {
        memcpy(acc + i * kt_size, &init, kt_size);
    }

    if (in_count != 0) {
        enum nrtemu_op fold = op == NRTEMU_OP_MEAN ? NRTEMU_OP_SUM : op;
        int last = it.ndim - 1;
        size_t len = it.shape[last];
        bool column = it.stride[1][last] != 0;
        /* Consecutive rows that fold into the same accumulators (the axis
         * outside the kept run is reduced) go in one call. */
        bool grouped = column && last >= 1 && it.stride[1][last - 1] == 0;
        uint64_t group_max = len >= WINDOW_ELEMS ? 1 : WINDOW_ELEMS / len;
        uint64_t outer = kiter_outer_count(&it);

        for (uint64_t o = 0; o < outer;) {
            uint64_t g = 1;
            const char *px;
            char *pa = acc + off[1] * (ptrdiff_t)kt_size;

            if (grouped) {
                g = it.shape[last - 1] - idx[last - 1];
                g = g < group_max ? g : group_max;
            }
            px = window_get(&win, (uint64_t)off[0], g * len);
            if (column) {
                fold_columns(fold, kt, len, g, len, px, pa);
            } else {
                fold_row(fold, kt, len, px, pa);
            }
            o += g;
            for (uint64_t k = 0; k < g; k++) {
                kiter_next(&it, idx, off);
            }
        }
    }
    reduce_finish(op, compute, kt, out, reduced, acc, acc_is_out);
    return NRT_SUCCESS;
}
