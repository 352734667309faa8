/*
 * kernel_reduce.c - reductions (sum, mean, max, min, prod), argmax/argmin
 * and softmax.
 *
 * The input is walked with the output as a second operand whose stride is
 * 0 along reduced axes (kernel_iter.h).  After collapsing, the innermost
 * run is either reduced (its elements fold into one output element: a
 * "row") or kept (it folds elementwise into a run of the output: a
 * "column").  Both loops are vectorised for the four compute types.  Rows
 * of floats are summed pairwise, as NumPy does, which keeps the error
 * small for long rows; columns fold one after the other, as in NumPy.
 */
#include <math.h>
#include <string.h>

#include "convert.h"
#include "kernel.h"
#include "kernel_iter.h"
#include "kernel_math.h"
#include "simd.h"

/* Accumulators of the row loops: enough independent chains to hide the
 * latency of vector adds. */
#define LANES 32
/* Rows up to this long are summed directly, longer ones pairwise. */
#define PAIRWISE_LEAF 512

#define FLOAT_MAX(x, y) (((x) >= (y) || (x) != (x)) ? (x) : (y))
#define FLOAT_MIN(x, y) (((x) <= (y) || (x) != (x)) ? (x) : (y))
#define INT_MAX_(x, y) ((x) > (y) ? (x) : (y))
#define INT_MIN_(x, y) ((x) < (y) ? (x) : (y))

/*
 * Fold n elements of x with COMBINE into LANES accumulators started at
 * INIT, then fold the lanes: the multi-lane form is what vectorises.
 */
#define ROW_FOLD(T, INIT, COMBINE)                       \
    do {                                                 \
        T lane[LANES];                                   \
        size_t i = 0;                                    \
        for (int l = 0; l < LANES; l++) {                \
            lane[l] = (INIT);                            \
        }                                                \
        for (; i + LANES <= n; i += LANES) {             \
            for (int l = 0; l < LANES; l++) {            \
                lane[l] = COMBINE(lane[l], x[i + l]);    \
            }                                            \
        }                                                \
        for (; i < n; i++) {                             \
            lane[0] = COMBINE(lane[0], x[i]);            \
        }                                                \
        for (int w = LANES / 2; w > 0; w /= 2) {         \
            for (int l = 0; l < w; l++) {                \
                lane[l] = COMBINE(lane[l], lane[l + w]); \
            }                                            \
        }                                                \
        result = lane[0];                                \
    } while (0)

#define ADD_(a, b) ((a) + (b))
#define MUL_(a, b) ((a) * (b))

/*
 * max/min of a float row.  The fast loop uses plain comparisons (maxps),
 * which drop NaNs, and adds x * 0 to a check sum that becomes NaN when
 * the row holds a NaN or an infinity; only then is the row folded again
 * with the NaN-propagating comparison.
 */
#define FAST_MAX(a, b) ((a) > (b) ? (a) : (b))
#define FAST_MIN(a, b) ((a) < (b) ? (a) : (b))
#define EXTREME_FOLD(T, INIT, COMBINE)                   \
    do {                                                 \
        T lane[LANES], chk[LANES];                       \
        size_t i = 0;                                    \
        for (int l = 0; l < LANES; l++) {                \
            lane[l] = (INIT);                            \
            chk[l] = 0;                                  \
        }                                                \
        for (; i + LANES <= n; i += LANES) {             \
            for (int l = 0; l < LANES; l++) {            \
                const T v = x[i + l];                    \
                lane[l] = COMBINE(v, lane[l]);           \
                chk[l] = chk[l] + v * 0;                 \
            }                                            \
        }                                                \
        for (; i < n; i++) {                             \
            lane[0] = COMBINE(x[i], lane[0]);            \
            chk[0] = chk[0] + x[i] * 0;                  \
        }                                                \
        for (int w = LANES / 2; w > 0; w /= 2) {         \
            for (int l = 0; l < w; l++) {                \
                lane[l] = COMBINE(lane[l], lane[l + w]); \
                chk[l] = chk[l] + chk[l + w];            \
            }                                            \
        }                                                \
        result = lane[0];                                \
        exact = chk[0] == 0;                             \
    } while (0)

#define DEFINE_FLOAT_ROWS(SFX, T)                                             \
    NRTEMU_MULTIVERSION                                                       \
    static T SFX##_sum_leaf(size_t n, const T *x)                             \
    {                                                                         \
        T result;                                                             \
        ROW_FOLD(T, (T)0, ADD_);                                              \
        return result;                                                        \
    }                                                                         \
    static T SFX##_sum_pairwise(size_t n, const T *x)                         \
    {                                                                         \
        size_t half;                                                          \
        if (n <= PAIRWISE_LEAF) {                                             \
            return SFX##_sum_leaf(n, x);                                      \
        }                                                                     \
        half = (n / 2 + LANES - 1) / LANES * LANES;                           \
        return SFX##_sum_pairwise(half, x) +                                  \
               SFX##_sum_pairwise(n - half, x + half);                        \
    }                                                                         \
    NRTEMU_MULTIVERSION                                                       \
    static T SFX##_row(enum nrtemu_op op, size_t n, const T *x)               \
    {                                                                         \
        T result;                                                             \
        bool exact;                                                           \
        switch (op) {                                                         \
        case NRTEMU_OP_MAX:                                                   \
            EXTREME_FOLD(T, -(T)INFINITY, FAST_MAX);                          \
            if (!exact) {                                                     \
                ROW_FOLD(T, -(T)INFINITY, FLOAT_MAX);                         \
            }                                                                 \
            return result;                                                    \
        case NRTEMU_OP_MIN:                                                   \
            EXTREME_FOLD(T, (T)INFINITY, FAST_MIN);                           \
            if (!exact) {                                                     \
                ROW_FOLD(T, (T)INFINITY, FLOAT_MIN);                          \
            }                                                                 \
            return result;                                                    \
        case NRTEMU_OP_PROD:                                                  \
            ROW_FOLD(T, (T)1, MUL_);                                          \
            return result;                                                    \
        default:                                                              \
            return SFX##_sum_pairwise(n, x);                                  \
        }                                                                     \
    }                                                                         \
    NRTEMU_MULTIVERSION                                                       \
    static void SFX##_column(enum nrtemu_op op, size_t n, const T *x, T *acc) \
    {                                                                         \
        switch (op) {                                                         \
        case NRTEMU_OP_MAX:                                                   \
            for (size_t i = 0; i < n; i++) {                                  \
                acc[i] = FLOAT_MAX(acc[i], x[i]);                             \
            }                                                                 \
            break;                                                            \
        case NRTEMU_OP_MIN:                                                   \
            for (size_t i = 0; i < n; i++) {                                  \
                acc[i] = FLOAT_MIN(acc[i], x[i]);                             \
            }                                                                 \
            break;                                                            \
        case NRTEMU_OP_PROD:                                                  \
            for (size_t i = 0; i < n; i++) {                                  \
                acc[i] *= x[i];                                               \
            }                                                                 \
            break;                                                            \
        default:                                                              \
            for (size_t i = 0; i < n; i++) {                                  \
                acc[i] += x[i];                                               \
            }                                                                 \
            break;                                                            \
        }                                                                     \
    }

DEFINE_FLOAT_ROWS(f32, float)
DEFINE_FLOAT_ROWS(f64, double)

/* Integer sums and products wrap: they are computed on uint64_t, which
 * gives the same bits for signed operands. */
#define DEFINE_INT_ROWS(SFX, T, LOWEST, HIGHEST)                              \
    NRTEMU_MULTIVERSION                                                       \
    static T SFX##_row(enum nrtemu_op op, size_t n, const T *x)               \
    {                                                                         \
        T result;                                                             \
        switch (op) {                                                         \
        case NRTEMU_OP_MAX:                                                   \
            ROW_FOLD(T, LOWEST, INT_MAX_);                                    \
            return result;                                                    \
        case NRTEMU_OP_MIN:                                                   \
            ROW_FOLD(T, HIGHEST, INT_MIN_);                                   \
            return result;                                                    \
        case NRTEMU_OP_PROD: {                                                \
            uint64_t p = 1;                                                   \
            for (size_t i = 0; i < n; i++) {                                  \
                p *= (uint64_t)x[i];                                          \
            }                                                                 \
            return (T)p;                                                      \
        }                                                                     \
        default: {                                                            \
            uint64_t s = 0;                                                   \
            for (size_t i = 0; i < n; i++) {                                  \
                s += (uint64_t)x[i];                                          \
            }                                                                 \
            return (T)s;                                                      \
        }                                                                     \
        }                                                                     \
    }                                                                         \
    NRTEMU_MULTIVERSION                                                       \
    static void SFX##_column(enum nrtemu_op op, size_t n, const T *x, T *acc) \
    {                                                                         \
        switch (op) {                                                         \
        case NRTEMU_OP_MAX:                                                   \
            for (size_t i = 0; i < n; i++) {                                  \
                acc[i] = INT_MAX_(acc[i], x[i]);                              \
            }                                                                 \
            break;                                                            \
        case NRTEMU_OP_MIN:                                                   \
            for (size_t i = 0; i < n; i++) {                                  \
                acc[i] = INT_MIN_(acc[i], x[i]);                              \
            }                                                                 \
            break;                                                            \
        case NRTEMU_OP_PROD:                                                  \
            for (size_t i = 0; i < n; i++) {                                  \
                acc[i] = (T)((uint64_t)acc[i] * (uint64_t)x[i]);              \
            }                                                                 \
            break;                                                            \
        default:                                                              \
            for (size_t i = 0; i < n; i++) {                                  \
                acc[i] = (T)((uint64_t)acc[i] + (uint64_t)x[i]);              \
            }                                                                 \
            break;                                                            \
        }                                                                     \
    }

DEFINE_INT_ROWS(i64, int64_t, INT64_MIN, INT64_MAX)
DEFINE_INT_ROWS(u64, uint64_t, 0, UINT64_MAX)

/* One accumulator element of any compute type. */
union wide {
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
        f32_column(op, 1, &r, a);
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
    default: {
        uint64_t r = u64_row(op, n, x), *a = acc;
        u64_column(op, 1, &r, a);
        break;
    }
    }
}

static void
fold_column(enum nrtemu_op op, enum nrtemu_dtype kt, size_t n, const void *x,
            void *acc)
{
    switch (kt) {
    case NRTEMU_DTYPE_FLOAT32:
        f32_column(op, n, x, acc);
        break;
    case NRTEMU_DTYPE_FLOAT64:
        f64_column(op, n, x, acc);
        break;
    case NRTEMU_DTYPE_INT64:
        i64_column(op, n, x, acc);
        break;
    default:
        u64_column(op, n, x, acc);
        break;
    }
}

/* `in` as an array of `kt`: in place when it already is one and the
 * compute dtype does not round it, else converted into buf. */
static const void *
load_whole(const struct nrtemu_array *in, enum nrtemu_dtype compute,
           enum nrtemu_dtype kt, void *buf)
{
    if (in->dtype == kt && (compute == kt || compute == in->dtype)) {
        return in->data;
    }
    return nrtemu__kernel_load(in, compute, kt, buf);
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
    size_t kt_size, in_bytes, acc_bytes;
    bool in_place, acc_is_out;
    char *scratch, *acc;
    const char *x;
    struct kiter it;
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    ptrdiff_t off[2] = {0, 0};
    union wide init;

    if (op == NRTEMU_OP_MEAN && kt != NRTEMU_DTYPE_FLOAT32 &&
        kt != NRTEMU_DTYPE_FLOAT64) {
        /* The mean of integers is a float64, as in NumPy. */
        compute = NRTEMU_DTYPE_FLOAT64;
        kt = NRTEMU_DTYPE_FLOAT64;
    }
    if (out_count == 0) {
        return NRT_SUCCESS;
    }
    kt_size = nrtemu__dtype_size(kt);
    in_place = in->dtype == kt && (compute == kt || compute == in->dtype);
    acc_is_out = out->dtype == kt && (compute == kt || compute == out->dtype);
    in_bytes = in_place ? 0 : in_count * kt_size;
    acc_bytes = acc_is_out ? 0 : out_count * kt_size;
    scratch = nrtemu__scratch_get(s, in_bytes + acc_bytes + 64);
    if (scratch == NULL) {
        return NRT_RESOURCE;
    }
    acc = acc_is_out ? out->data : scratch + in_bytes;
    x = load_whole(in, compute, kt, scratch);

    identity(op == NRTEMU_OP_MEAN ? NRTEMU_OP_SUM : op, kt, &init);
    for (uint64_t i = 0; i < out_count; i++) {
        memcpy(acc + i * kt_size, &init, kt_size);
    }

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
    if (in_count != 0) {
        enum nrtemu_op fold = op == NRTEMU_OP_MEAN ? NRTEMU_OP_SUM : op;
        uint64_t outer;
        size_t len;

        kiter_init(&it, in->ndim, in->shape, 2);
        kiter_broadcast(&it, 0, in->ndim, in->shape);
        kiter_broadcast(&it, 1, out_ndim, out_shape);
        /* kiter_broadcast gives stride 0 only where the iterator dim is
         * not 1; a reduced axis of size 1 needs no stride anyway. */
        kiter_collapse(&it);
        outer = kiter_outer_count(&it);
        len = it.shape[it.ndim - 1];
        for (uint64_t o = 0; o < outer; o++) {
            const char *px = x + off[0] * (ptrdiff_t)kt_size;
            char *pa = acc + off[1] * (ptrdiff_t)kt_size;
            if (it.stride[1][it.ndim - 1] == 0) {
                fold_row(fold, kt, len, px, pa);
            } else {
                fold_column(fold, kt, len, px, pa);
            }
            kiter_next(&it, idx, off);
        }
    }
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
    return NRT_SUCCESS;
}

/* Whether x replaces the best so far: a greater (smaller) value, or the
 * first NaN, which then stays. */
#define ARG_BETTER_FLOAT(ismax, x, best) \
    ((best) == (best) &&                 \
     ((x) != (x) || ((ismax) ? (x) > (best) : (x) < (best))))
#define ARG_BETTER_INT(ismax, x, best) ((ismax) ? (x) > (best) : (x) < (best))

/*
 * The first index of the row holding `m` (the row's max or min), or its
 * first NaN when `m` is NaN.  The test runs over chunks that vectorise;
 * only the chunk that hits is scanned one by one.
 */
#define FIND_FIRST(T, COND)                \
    do {                                   \
        uint64_t i = 0;                    \
        for (; i + 64 <= R; i += 64) {     \
            int hit = 0;                   \
            for (int l = 0; l < 64; l++) { \
                const T v = x[i + l];      \
                hit |= (COND);             \
            }                              \
            if (hit) {                     \
                break;                     \
            }                              \
        }                                  \
        for (; i < R; i++) {               \
            const T v = x[i];              \
            if (COND) {                    \
                return (int64_t)i;         \
            }                              \
        }                                  \
        return 0;                          \
    } while (0)

#define DEFINE_ARG(SFX, T, BETTER)                                          \
    NRTEMU_MULTIVERSION                                                     \
    static int64_t SFX##_arg_row(bool ismax, uint64_t R, const T *x)        \
    {                                                                       \
        const T m = SFX##_row(ismax ? NRTEMU_OP_MAX : NRTEMU_OP_MIN, R, x); \
        if (m != m) {                                                       \
            FIND_FIRST(T, v != v);                                          \
        }                                                                   \
        FIND_FIRST(T, v == m);                                              \
    }                                                                       \
    static void SFX##_arg(bool ismax, uint64_t A, uint64_t R, uint64_t B,   \
                          const T *x, int64_t *out, T *best)                \
    {                                                                       \
        for (uint64_t a = 0; a < A; a++) {                                  \
            const T *base = x + a * R * B;                                  \
            int64_t *o = out + a * B;                                       \
            if (B == 1) {                                                   \
                o[0] = SFX##_arg_row(ismax, R, base);                       \
                continue;                                                   \
            }                                                               \
            for (uint64_t j = 0; j < B; j++) {                              \
                best[j] = base[j];                                          \
                o[j] = 0;                                                   \
            }                                                               \
            for (uint64_t r = 1; r < R; r++) {                              \
                const T *row = base + r * B;                                \
                for (uint64_t j = 0; j < B; j++) {                          \
                    if (BETTER(ismax, row[j], best[j])) {                   \
                        best[j] = row[j];                                   \
                        o[j] = (int64_t)r;                                  \
                    }                                                       \
                }                                                           \
            }                                                               \
        }                                                                   \
    }

DEFINE_ARG(f32, float, ARG_BETTER_FLOAT)
DEFINE_ARG(f64, double, ARG_BETTER_FLOAT)
DEFINE_ARG(i64, int64_t, ARG_BETTER_INT)
DEFINE_ARG(u64, uint64_t, ARG_BETTER_INT)

/* in = [A, R, B] around `axis`. */
static void
split_axis(const struct nrtemu_array *in, uint32_t axis, uint64_t *A,
           uint64_t *R, uint64_t *B)
{
    *A = 1;
    *B = 1;
    for (uint32_t d = 0; d < axis; d++) {
        *A *= in->shape[d];
    }
    for (uint32_t d = axis + 1; d < in->ndim; d++) {
        *B *= in->shape[d];
    }
    *R = in->ndim == 0 ? 1 : in->shape[axis];
}

NRT_STATUS
nrtemu__kernel_argreduce(enum nrtemu_op op, const struct nrtemu_array *out,
                         const struct nrtemu_array *in, uint32_t axis,
                         struct nrtemu_scratch *s)
{
    enum nrtemu_dtype kt = nrtemu__kernel_dtype(in->dtype);
    uint64_t A, R, B;
    size_t in_bytes, kt_size = nrtemu__dtype_size(kt);
    bool ismax = op == NRTEMU_OP_ARGMAX;
    char *scratch;
    const void *x;

    split_axis(in, axis, &A, &R, &B);
    if (A * B == 0 || R == 0) {
        return NRT_SUCCESS; /* R == 0 was rejected at load */
    }
    in_bytes = in->dtype == kt ? 0 : nrtemu__array_count(in) * kt_size;
    scratch = nrtemu__scratch_get(s, in_bytes + B * kt_size + 64);
    if (scratch == NULL) {
        return NRT_RESOURCE;
    }
    x = in->data;
    if (in->dtype != kt) {
        /* Widening is exact: the order of values is the same. */
        nrtemu__convert(kt, scratch, in->dtype, in->data, 1,
                        nrtemu__array_count(in));
        x = scratch;
    }
    scratch += (in_bytes + 63) & ~(size_t)63;
    switch (kt) {
    case NRTEMU_DTYPE_FLOAT32:
        f32_arg(ismax, A, R, B, x, out->data, (float *)scratch);
        break;
    case NRTEMU_DTYPE_FLOAT64:
        f64_arg(ismax, A, R, B, x, out->data, (double *)scratch);
        break;
    case NRTEMU_DTYPE_INT64:
        i64_arg(ismax, A, R, B, x, out->data, (int64_t *)scratch);
        break;
    default:
        u64_arg(ismax, A, R, B, x, out->data, (uint64_t *)scratch);
        break;
    }
    return NRT_SUCCESS;
}

/* softmax of one [R, B] slab, in place in y (already holding x). */
#define DEFINE_SOFTMAX(SFX, T, EXP)                                  \
    NRTEMU_MULTIVERSION                                              \
    static void SFX##_softmax(uint64_t R, uint64_t B, T *y, T *work) \
    {                                                                \
        if (B == 1) {                                                \
            T m = SFX##_row(NRTEMU_OP_MAX, R, y), sum;               \
            for (uint64_t r = 0; r < R; r++) {                       \
                y[r] = EXP(y[r] - m);                                \
            }                                                        \
            sum = SFX##_row(NRTEMU_OP_SUM, R, y);                    \
            for (uint64_t r = 0; r < R; r++) {                       \
                y[r] = y[r] / sum;                                   \
            }                                                        \
            return;                                                  \
        }                                                            \
        T *m = work, *sum = work + B;                                \
        for (uint64_t j = 0; j < B; j++) {                           \
            m[j] = -(T)INFINITY;                                     \
            sum[j] = 0;                                              \
        }                                                            \
        for (uint64_t r = 0; r < R; r++) {                           \
            SFX##_column(NRTEMU_OP_MAX, B, y + r * B, m);            \
        }                                                            \
        for (uint64_t r = 0; r < R; r++) {                           \
            T *row = y + r * B;                                      \
            for (uint64_t j = 0; j < B; j++) {                       \
                row[j] = EXP(row[j] - m[j]);                         \
            }                                                        \
            SFX##_column(NRTEMU_OP_SUM, B, row, sum);                \
        }                                                            \
        for (uint64_t r = 0; r < R; r++) {                           \
            T *row = y + r * B;                                      \
            for (uint64_t j = 0; j < B; j++) {                       \
                row[j] = row[j] / sum[j];                            \
            }                                                        \
        }                                                            \
    }

DEFINE_SOFTMAX(f32, float, kmath_exp)
DEFINE_SOFTMAX(f64, double, exp)

NRT_STATUS
nrtemu__kernel_softmax(enum nrtemu_dtype compute,
                       const struct nrtemu_array *out,
                       const struct nrtemu_array *in, uint32_t axis,
                       struct nrtemu_scratch *s)
{
    enum nrtemu_dtype kt = nrtemu__kernel_dtype(compute);
    uint64_t A, R, B, count = nrtemu__array_count(in);
    size_t kt_size = nrtemu__dtype_size(kt);
    bool y_is_out =
        out->dtype == kt && (compute == kt || compute == out->dtype);
    size_t y_bytes = y_is_out ? 0 : count * kt_size;
    char *scratch, *y, *work;
    const void *x;

    split_axis(in, axis, &A, &R, &B);
    if (count == 0) {
        return NRT_SUCCESS;
    }
    scratch = nrtemu__scratch_get(s, y_bytes + 2 * B * kt_size + 64);
    if (scratch == NULL) {
        return NRT_RESOURCE;
    }
    y = y_is_out ? out->data : scratch;
    work = scratch + ((y_bytes + 63) & ~(size_t)63);
    x = load_whole(in, compute, kt, y);
    if (x != y) {
        memmove(y, x, count * kt_size); /* in place from here on */
    }
    for (uint64_t a = 0; a < A; a++) {
        char *slab = y + a * R * B * kt_size;
        if (kt == NRTEMU_DTYPE_FLOAT32) {
            f32_softmax(R, B, (float *)slab, (float *)work);
        } else {
            f64_softmax(R, B, (double *)slab, (double *)work);
        }
    }
    if (!y_is_out) {
        nrtemu__kernel_store(out, compute, kt, y);
    }
    return NRT_SUCCESS;
}
