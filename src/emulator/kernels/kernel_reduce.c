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
 * input as [A, R, B] (reduce_block, nrtemu__kernel_argreduce): R reduced
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
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/convert.h"
#include "kernels/kernel.h"
#include "kernels/kernel_iter.h"
#include "kernels/kernel_math.h"
#include "kernels/kernel_math_vec.h"
#include "kernels/pool.h"
#include "kernels/simd.h"
#include "kernels/simd_tail.h"

/* Accumulators of the row loops: enough independent chains to hide the
 * latency of vector adds. */
#define LANES 32
/* Rows up to this long are summed directly, longer ones pairwise. */
#define PAIRWISE_LEAF 512

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

/* Integer sums and products wrap: computed on uint64_t (the assignment
 * back to T gives the same bits for signed operands). */
#define ADD_WRAP(a, b) ((uint64_t)(a) + (uint64_t)(b))
#define MUL_WRAP(a, b) ((uint64_t)(a) * (uint64_t)(b))

/*
 * Rows of a column fold are runs of `bytes` bytes, `pitch` bytes apart:
 * when the pool splits the columns among tasks, short runs far apart,
 * which the hardware prefetchers do not follow from one to the next.  So
 * the run PREFETCH_ROWS rows ahead of row r (of g) is prefetched, when it
 * is short (a long run streams on its own).
 */
#define PREFETCH_ROWS 8
#define PREFETCH_MAX_BYTES 2048

/* The run PREFETCH_ROWS rows ahead of row r (of g), whatever its length. */
NRTEMU_INLINE void
prefetch_row(const void *x, size_t r, size_t g, size_t pitch, size_t bytes)
{
    if (r + PREFETCH_ROWS < g) {
        const char *c = (const char *)x + (r + PREFETCH_ROWS) * pitch;
        for (size_t k = 0; k < bytes; k += 64) {
            __builtin_prefetch(c + k);
        }
    }
}

NRTEMU_INLINE void
prefetch_ahead(const void *x, size_t r, size_t g, size_t pitch, size_t bytes)
{
    if (bytes <= PREFETCH_MAX_BYTES) {
        prefetch_row(x, r, g, pitch, bytes);
    }
}

/*
 * Fold g rows of n elements, `stride` elements apart (x[r * stride + i]),
 * into acc[i], row after row: the order of a reduction over a
 * non-contiguous axis, as in NumPy, so results do not depend on how the
 * rows are grouped.  Four rows go through each acc[i] at a time, so the
 * contiguous loop loads and stores the accumulators once per four rows
 * (GCC 12 does not vectorise such a chain of the NaN-propagating max/min:
 * those go one row at a time, in DEFINE_COLUMNS).  The rows hold S,
 * widened exactly to T by LOAD in registers.
 */
#define COLUMNS_FOLD(T, S, LOAD, COMBINE)                       \
    do {                                                        \
        size_t r = 0;                                           \
        for (; r + 4 <= g; r += 4) {                            \
            const S *restrict x0 = x + r * stride;              \
            const S *restrict x1 = x0 + stride;                 \
            const S *restrict x2 = x1 + stride;                 \
            const S *restrict x3 = x2 + stride;                 \
            for (size_t k = 0; k < 4; k++) {                    \
                prefetch_ahead(x, r + k, g, stride * sizeof(S), \
                               n * sizeof(S));                  \
            }                                                   \
            for (size_t i = 0; i < n; i++) {                    \
                T a = acc[i];                                   \
                a = COMBINE(a, LOAD(x0[i], p));                 \
                a = COMBINE(a, LOAD(x1[i], p));                 \
                a = COMBINE(a, LOAD(x2[i], p));                 \
                a = COMBINE(a, LOAD(x3[i], p));                 \
                acc[i] = a;                                     \
            }                                                   \
        }                                                       \
        for (; r < g; r++) {                                    \
            const S *restrict x0 = x + r * stride;              \
            for (size_t i = 0; i < n; i++) {                    \
                T a = acc[i];                                   \
                a = COMBINE(a, LOAD(x0[i], p));                 \
                acc[i] = a;                                     \
            }                                                   \
        }                                                       \
    } while (0)

#define LOAD_SAME(v, p) (v)

NRTEMU_INLINE float
float_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

NRTEMU_INLINE uint32_t
bits_of_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/*
 * How a narrow float widens exactly to float32 in registers (fp8 and
 * float16, narrow_widen), with no float32 subnormal on the way (so that
 * flush-to-zero and denormals-are-zero modes change nothing), as
 * convert.c's FP8_DECODE: a normal magnitude's bits, moved to the top of
 * a float32's exponent and mantissa (shift `sh`), rebiased by adding
 * `rebias` (127 - bias, in the exponent field); a subnormal one (below
 * `sub_below`) converted as an integer and scaled by `step`, 2^(1 - bias
 * - mantissa bits).  Magnitudes from `special_at` up are infinity or NaN:
 * the float32 infinity with the mantissa bits that `payload` keeps, and
 * `quiet` set on a NaN (magnitudes above `quiet_above`).  Passed by value,
 * so that no store of a loop can alias it.
 */
struct narrow {
    uint32_t mag_mask, sign_shift, sh, rebias, sub_below, special_at, payload,
        quiet, quiet_above;
    float step;
};

NRTEMU_INLINE float
narrow_widen(uint32_t c, struct narrow p)
{
    const uint32_t mag = c & p.mag_mask;
    const uint32_t sign = (c & ~p.mag_mask) << p.sign_shift;
    const uint32_t is_special = 0u - (uint32_t)(mag >= p.special_at);
    const uint32_t normal = (mag << p.sh) + p.rebias;
    const uint32_t sub = bits_of_float((float)mag * p.step);
    const uint32_t num = mag < p.sub_below ? sub : normal;
    const uint32_t special = 0x7f800000u | ((mag << p.sh) & p.payload) |
                             (mag > p.quiet_above ? p.quiet : 0);
    const uint32_t b = (num & ~is_special) | (special & is_special);
    return float_of_bits(b | sign);
}

static bool
is_fp8(enum nrtemu_dtype dt)
{
    return dt == NRTEMU_DTYPE_FLOAT8_E4M3 ||
           dt == NRTEMU_DTYPE_FLOAT8_E4M3FN ||
           dt == NRTEMU_DTYPE_FLOAT8_E5M2 || dt == NRTEMU_DTYPE_FLOAT8_E3M4;
}

/*
 * The widening of an fp8 format: nrtemu__fp8_to_float's values (every
 * NaN code is the quiet NaN, as in ml_dtypes; test_reduce_split checks
 * every code).
 */
static struct narrow
narrow_fp8(enum nrtemu_dtype dt)
{
    int m, bias;
    bool finite;

    nrtemu__fp8_layout(dt, &m, &bias, &finite);
    return (struct narrow){
        .mag_mask = 0x7f,
        .sign_shift = 24,
        .sh = (uint32_t)(23 - m),
        .rebias = (uint32_t)(127 - bias) << 23,
        .sub_below = 1u << m,
        .special_at = finite ? 0x7fu : (0x7fu >> m) << m,
        .payload = 0,
        .quiet = 0x400000u,
        .quiet_above = finite ? 0 : (0x7fu >> m) << m,
        .step = ldexpf(1.0f, 1 - bias - m),
    };
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

/* bfloat16 to float32, in registers (the fused column folds). */
NRTEMU_INLINE float
bf16_widen(uint16_t h)
{
    return float_of_bits((uint32_t)h << 16);
}

/* The widenings as LOADs of the column folds (p: struct narrow). */
#define BF16_OF(v, p) bf16_widen(v)
#define NARROW_OF(v, p) narrow_widen((v), (p))
#define I64_OF(v, p) ((int64_t)(v))
#define F64_OF(v, p) ((double)(v))

/* max/min go one row at a time through a function of their own: within
 * SFX##_columns GCC 12 interleaves two rows into masked loads, which
 * halves the speed of a column max over an input from memory.  SFX##_columns
 * folds rows of S into accumulators of T (LOAD widens with p). */
#define DEFINE_COLUMNS(SFX, T, S, LOAD, MAXF, MINF, ADDF, MULF)             \
    NRTEMU_MULTIVERSION                                                     \
    __attribute__((noinline)) static void SFX##_column_max(                 \
        size_t n, const S *x, T *acc, struct narrow p)                      \
    {                                                                       \
        (void)p;                                                            \
        for (size_t i = 0; i < n; i++) {                                    \
            acc[i] = MAXF(acc[i], LOAD(x[i], p));                           \
        }                                                                   \
    }                                                                       \
    NRTEMU_MULTIVERSION                                                     \
    __attribute__((noinline)) static void SFX##_column_min(                 \
        size_t n, const S *x, T *acc, struct narrow p)                      \
    {                                                                       \
        (void)p;                                                            \
        for (size_t i = 0; i < n; i++) {                                    \
            acc[i] = MINF(acc[i], LOAD(x[i], p));                           \
        }                                                                   \
    }                                                                       \
    NRTEMU_MULTIVERSION                                                     \
    static void SFX##_columns_p(enum nrtemu_op op, size_t n, size_t g,      \
                                size_t stride, const S *restrict x,         \
                                T *restrict acc, struct narrow p)           \
    {                                                                       \
        (void)p;                                                            \
        switch (op) {                                                       \
        case NRTEMU_OP_MAX:                                                 \
            for (size_t r = 0; r < g; r++) {                                \
                prefetch_ahead(x, r, g, stride * sizeof(S), n * sizeof(S)); \
                SFX##_column_max(n, x + r * stride, acc, p);                \
            }                                                               \
            break;                                                          \
        case NRTEMU_OP_MIN:                                                 \
            for (size_t r = 0; r < g; r++) {                                \
                prefetch_ahead(x, r, g, stride * sizeof(S), n * sizeof(S)); \
                SFX##_column_min(n, x + r * stride, acc, p);                \
            }                                                               \
            break;                                                          \
        case NRTEMU_OP_PROD:                                                \
            COLUMNS_FOLD(T, S, LOAD, MULF);                                 \
            break;                                                          \
        default:                                                            \
            COLUMNS_FOLD(T, S, LOAD, ADDF);                                 \
            break;                                                          \
        }                                                                   \
    }                                                                       \
    static inline void SFX##_columns(enum nrtemu_op op, size_t n, size_t g, \
                                     size_t stride, const S *x, T *acc)     \
    {                                                                       \
        SFX##_columns_p(op, n, g, stride, x, acc, (struct narrow){0});      \
    }

/* One row of n into acc[0..n), the column step of softmax and fold_row. */
#define DEFINE_COLUMN(SFX, T)                                                 \
    static void SFX##_column(enum nrtemu_op op, size_t n, const T *x, T *acc) \
    {                                                                         \
        SFX##_columns(op, n, 1, n, x, acc);                                   \
    }

#define DEFINE_FLOAT_ROWS(SFX, T)                                            \
    NRTEMU_MULTIVERSION                                                      \
    static T SFX##_sum_leaf(size_t n, const T *x)                            \
    {                                                                        \
        T result;                                                            \
        ROW_FOLD(T, (T)0, ADD_);                                             \
        return result;                                                       \
    }                                                                        \
    static T SFX##_sum_pairwise(size_t n, const T *x)                        \
    {                                                                        \
        size_t half;                                                         \
        if (n <= PAIRWISE_LEAF) {                                            \
            return SFX##_sum_leaf(n, x);                                     \
        }                                                                    \
        half = (n / 2 + LANES - 1) / LANES * LANES;                          \
        return SFX##_sum_pairwise(half, x) +                                 \
               SFX##_sum_pairwise(n - half, x + half);                       \
    }                                                                        \
    NRTEMU_MULTIVERSION                                                      \
    static T SFX##_row(enum nrtemu_op op, size_t n, const T *x)              \
    {                                                                        \
        T result;                                                            \
        bool exact;                                                          \
        switch (op) {                                                        \
        case NRTEMU_OP_MAX:                                                  \
            EXTREME_FOLD(T, -(T)INFINITY, FAST_MAX);                         \
            if (!exact) {                                                    \
                ROW_FOLD(T, -(T)INFINITY, NRTEMU_FLOAT_MAX);                 \
            }                                                                \
            return result;                                                   \
        case NRTEMU_OP_MIN:                                                  \
            EXTREME_FOLD(T, (T)INFINITY, FAST_MIN);                          \
            if (!exact) {                                                    \
                ROW_FOLD(T, (T)INFINITY, NRTEMU_FLOAT_MIN);                  \
            }                                                                \
            return result;                                                   \
        case NRTEMU_OP_PROD:                                                 \
            ROW_FOLD(T, (T)1, MUL_);                                         \
            return result;                                                   \
        default:                                                             \
            return SFX##_sum_pairwise(n, x);                                 \
        }                                                                    \
    }                                                                        \
    DEFINE_COLUMNS(SFX, T, T, LOAD_SAME, NRTEMU_FLOAT_MAX, NRTEMU_FLOAT_MIN, \
                   ADD_, MUL_)                                               \
    DEFINE_COLUMN(SFX, T)

DEFINE_FLOAT_ROWS(f32, float)
DEFINE_FLOAT_ROWS(f64, double)

#define DEFINE_INT_ROWS(SFX, T, LOWEST, HIGHEST)                         \
    NRTEMU_MULTIVERSION                                                  \
    static T SFX##_row(enum nrtemu_op op, size_t n, const T *x)          \
    {                                                                    \
        T result;                                                        \
        switch (op) {                                                    \
        case NRTEMU_OP_MAX:                                              \
            ROW_FOLD(T, LOWEST, NRTEMU_INT_MAX);                         \
            return result;                                               \
        case NRTEMU_OP_MIN:                                              \
            ROW_FOLD(T, HIGHEST, NRTEMU_INT_MIN);                        \
            return result;                                               \
        case NRTEMU_OP_PROD: {                                           \
            uint64_t p = 1;                                              \
            for (size_t i = 0; i < n; i++) {                             \
                p *= (uint64_t)x[i];                                     \
            }                                                            \
            return (T)p;                                                 \
        }                                                                \
        default: {                                                       \
            uint64_t s = 0;                                              \
            for (size_t i = 0; i < n; i++) {                             \
                s += (uint64_t)x[i];                                     \
            }                                                            \
            return (T)s;                                                 \
        }                                                                \
        }                                                                \
    }                                                                    \
    DEFINE_COLUMNS(SFX, T, T, LOAD_SAME, NRTEMU_INT_MAX, NRTEMU_INT_MIN, \
                   ADD_WRAP, MUL_WRAP)                                   \
    DEFINE_COLUMN(SFX, T)

DEFINE_INT_ROWS(i64, int64_t, INT64_MIN, INT64_MAX)
DEFINE_INT_ROWS(u64, uint64_t, 0, UINT64_MAX)
/* int32 max/min, in their own width (nrtemu__kernel_reduce). */
DEFINE_INT_ROWS(i32, int32_t, INT32_MIN, INT32_MAX)

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

static bool wide_fold(enum nrtemu_op op, enum nrtemu_dtype kt,
                      enum nrtemu_dtype src, size_t n, size_t g, size_t stride,
                      const void *x, void *acc);

/* Fold g reduced rows of n kept elements, `stride` elements apart, into
 * acc[0..n). */
static void
fold_columns(enum nrtemu_op op, enum nrtemu_dtype kt, size_t n, size_t g,
             size_t stride, const void *x, void *acc)
{
    if (wide_fold(op, kt, kt, n, g, stride, x, acc)) {
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

#if NRTEMU_X86_CLONES
#include <immintrin.h>

/*
 * fp8 to float32 with F16C, for CPUs without the WIDE paths below (AVX2,
 * as x86-64-v3 has it): an fp8 magnitude's bits, moved up to the top of a
 * float16's exponent and mantissa, are a float16 whose value is the
 * code's times 2^(bias - 15), subnormals included (both formats scale
 * their subnormals as their normals), so vcvtph2ps and a multiply by
 * 2^(15 - bias) widen it exactly, with no float32 subnormal on the way
 * (and vcvtph2ps ignores denormals-are-zero); the infinity and NaN codes
 * become float16's (0x7c00, and 0x7e00: the quiet NaN of narrow_widen).
 * 16 codes a step, about 17 instructions, where GCC's v3 clone of widen_fp8
 * takes about 40 for 8 and spills.  Returns the count done (whole steps).
 */
__attribute__((target("avx2,f16c"))) static size_t
widen_fp8_f16c(float *restrict d, const uint8_t *restrict s, size_t n,
               struct narrow p)
{
    const int bias = 127 - (int)(p.rebias >> 23);
    const __m128i up = _mm_cvtsi32_si128((int)p.sh - 13); /* 10 - m */
    const __m256i mag_mask = _mm256_set1_epi16(0x7f);
    const __m256i sign_bit = _mm256_set1_epi16(0x80);
    const __m256i special_below = _mm256_set1_epi16((short)(p.special_at - 1));
    const __m256i quiet_above = _mm256_set1_epi16((short)p.quiet_above);
    const __m256i inf = _mm256_set1_epi16(0x7c00);
    const __m256i nan = _mm256_set1_epi16(0x7e00);
    const __m256 scale = _mm256_set1_ps(ldexpf(1.0f, 15 - bias));
    size_t i = 0;

    for (; i + 16 <= n; i += 16) {
        const __m256i w =
            _mm256_cvtepu8_epi16(_mm_loadu_si128((const void *)(s + i)));
        const __m256i mag = _mm256_and_si256(w, mag_mask);
        const __m256i special =
            _mm256_blendv_epi8(inf, nan, _mm256_cmpgt_epi16(mag, quiet_above));
        const __m256i h = _mm256_or_si256(
            _mm256_blendv_epi8(_mm256_sll_epi16(mag, up), special,
                               _mm256_cmpgt_epi16(mag, special_below)),
            _mm256_slli_epi16(_mm256_and_si256(w, sign_bit), 8));
        _mm256_storeu_ps(
            d + i,
            _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), scale));
        _mm256_storeu_ps(
            d + i + 8,
            _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)),
                          scale));
    }
    return i;
}

static bool
cpu_has_f16c(void)
{
    return nrtemu__cpu_has(NRTEMU_CPU_V3);
}
#endif

/*
 * AVX-512 (with VBMI) paths of the column folds and argmax/argmin, and of
 * fp8 widening, for CPUs that have it (checked once, cpu_has_wide): the
 * loops above are what GCC makes of plain C, and the ones here read the
 * narrow types 64 at a time and widen them in registers with fewer
 * instructions: float16 with F16C's vcvtph2ps (nrtemu__convert's
 * widening, NaN included), bfloat16 by a shift, and fp8 through a table:
 * every fp8 value is a bfloat16 (at most 4 mantissa bits, an exponent
 * within float32's), so vpermi2b looks up the high byte (sign added back)
 * and the low byte of that bfloat16 for 64 codes at a time, from tables
 * of narrow_widen's results over the 128 magnitudes; a two-source byte
 * permute (vpermt2b, zeroing the two low bytes) per 16 results puts them
 * together as float32: 6 permutes for 64 codes, measured faster than the
 * 9 of a vpermb and six unpacks.
 */
#if NRTEMU_X86_CLONES
#define WIDE __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi")))

static bool
cpu_has_wide(void)
{
    return nrtemu__cpu_has(NRTEMU_CPU_V4_VBMI);
}

/* The fp8 tables: the high and low bytes of each magnitude's bfloat16,
 * and the permutation of the codes. */
struct wide_ctx {
    uint8_t hi[128], lo[128], pick[4][64];
};

/* false if a value of dt were not a bfloat16 (then the plain loops). */
static bool
wide_ctx_build(enum nrtemu_dtype dt, struct wide_ctx *c)
{
    struct narrow p = narrow_fp8(dt);

    for (uint32_t m = 0; m < 128; m++) {
        uint32_t u = bits_of_float(narrow_widen(m, p));
        if ((u & 0xffff) != 0) {
            return false;
        }
        c->hi[m] = (uint8_t)(u >> 24);
        c->lo[m] = (uint8_t)(u >> 16);
    }
    /* Result q's float32 k, element 16q + k: its bytes 2 and 3 (bytes 0
     * and 1 are zeroed) from the low and high bytes of that element's
     * bfloat16, byte 16q + k of lo, and of hi (the second operand). */
    for (uint32_t q = 0; q < 4; q++) {
        for (uint32_t k = 0; k < 16; k++) {
            c->pick[q][4 * k] = c->pick[q][4 * k + 1] = 0;
            c->pick[q][4 * k + 2] = (uint8_t)(16 * q + k);
            c->pick[q][4 * k + 3] = (uint8_t)(64 + 16 * q + k);
        }
    }
    return true;
}

/* The tables of the four fp8 formats, built once (a row of fp8 is
 * widened many times a call). */
static const enum nrtemu_dtype wide_fp8s[4] = {
    NRTEMU_DTYPE_FLOAT8_E4M3, NRTEMU_DTYPE_FLOAT8_E4M3FN,
    NRTEMU_DTYPE_FLOAT8_E5M2, NRTEMU_DTYPE_FLOAT8_E3M4};
static struct wide_ctx wide_ctxs[4];
static bool wide_ctx_ok[4];
static pthread_once_t wide_once = PTHREAD_ONCE_INIT;

static void
wide_ctx_init(void)
{
    for (int k = 0; k < 4; k++) {
        wide_ctx_ok[k] = wide_ctx_build(wide_fp8s[k], &wide_ctxs[k]);
    }
}

/* dt's tables, or NULL (not an fp8 format, or one that the tables do not
 * serve). */
static const struct wide_ctx *
wide_ctx_fp8(enum nrtemu_dtype dt)
{
    pthread_once(&wide_once, wide_ctx_init);
    for (int k = 0; k < 4; k++) {
        if (wide_fp8s[k] == dt) {
            return wide_ctx_ok[k] ? &wide_ctxs[k] : NULL;
        }
    }
    return NULL;
}

/* The tables in registers, held by value in each loop (the bytes of a
 * wide_ctx could alias any store of the loop, so its loads would stay in
 * the loop). */
struct wide_tab {
    __m512i pick[4], hi0, hi1, lo0, lo1;
};

WIDE static inline struct wide_tab
wide_tab_of(const struct wide_ctx *c)
{
    struct wide_tab t;

    if (c == NULL) {
        t.hi0 = t.hi1 = t.lo0 = t.lo1 = _mm512_setzero_si512();
        for (int q = 0; q < 4; q++) {
            t.pick[q] = t.hi0;
        }
        return t;
    }
    for (int q = 0; q < 4; q++) {
        t.pick[q] = _mm512_loadu_si512(c->pick[q]);
    }
    t.hi0 = _mm512_loadu_si512(c->hi);
    t.hi1 = _mm512_loadu_si512(c->hi + 64);
    t.lo0 = _mm512_loadu_si512(c->lo);
    t.lo1 = _mm512_loadu_si512(c->lo + 64);
    return t;
}

WIDE static inline __mmask64
wide_mask(uint64_t left)
{
    return left >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << left) - 1;
}

/* Elements [i, i + 64) of x (those of mask m) as four float32 vectors. */
WIDE static inline void
wide_load_f32(const void *x, uint64_t i, __mmask64 m, const struct wide_tab *c,
              __m512 *v)
{
    (void)c;
    for (int q = 0; q < 4; q++) {
        v[q] = tail_load_ps((__mmask16)(m >> (16 * q)),
                            (const float *)x + i + 16 * q);
    }
}

WIDE static inline void
wide_load_bf16(const void *x, uint64_t i, __mmask64 m,
               const struct wide_tab *c, __m512 *v)
{
    (void)c;
    for (int q = 0; q < 4; q++) {
        __m256i h = tail_load256_epi16((__mmask16)(m >> (16 * q)),
                                       (const uint16_t *)x + i + 16 * q);
        v[q] = _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
}

WIDE static inline void
wide_load_f16(const void *x, uint64_t i, __mmask64 m, const struct wide_tab *c,
              __m512 *v)
{
    (void)c;
    for (int q = 0; q < 4; q++) {
        v[q] = _mm512_cvtph_ps(tail_load256_epi16(
            (__mmask16)(m >> (16 * q)), (const uint16_t *)x + i + 16 * q));
    }
}

WIDE static inline void
wide_load_fp8(const void *x, uint64_t i, __mmask64 m, const struct wide_tab *c,
              __m512 *v)
{
    const __m512i codes = tail_load_epi8(m, (const uint8_t *)x + i);
    /* vpermi2b reads the low 7 bits of each code: its magnitude */
    __m512i hi = _mm512_permutex2var_epi8(c->hi0, codes, c->hi1);
    const __m512i lo = _mm512_permutex2var_epi8(c->lo0, codes, c->lo1);

    /* hi | (codes & 0x80): the sign */
    hi = _mm512_ternarylogic_epi32(codes, _mm512_set1_epi8((char)0x80), hi,
                                   0xea);
    for (int q = 0; q < 4; q++) {
        v[q] = _mm512_castsi512_ps(_mm512_maskz_permutex2var_epi8(
            0xccccccccccccccccull, lo, c->pick[q], hi));
    }
}

/*
 * Rows [0, g) of n columns, `stride` elements apart, folded into acc[0..n)
 * by op as SFX##_columns folds them: each column row after row (a sum
 * acc + x0 + x1 + ..., in that order), max/min as
 * NRTEMU_FLOAT_MAX/NRTEMU_FLOAT_MIN (x replaces acc when acc >= x (<= x) is
 * false and acc is no NaN: the first NaN stays), 64 columns at a time over
 * WIDE_SWEEP_OF(ES) rows.
 *
 * float32 rows go WIDE_SWEEP at a time, so that the accumulators are
 * loaded and stored once per WIDE_SWEEP rows.  Narrower rows go one at a
 * time, in the order of memory, each prefetching the run PREFETCH_ROWS
 * rows ahead whatever its length: the input streams from memory faster
 * so than as 8 runs of a few KiB apart, which the hardware prefetchers
 * follow poorly, and the accumulators are in L1 either way.  float32 rows
 * gain nothing by going one at a time, and keep WIDE_SWEEP.
 */
#define WIDE_SWEEP 8
#define WIDE_SWEEP_OF(ES) ((ES) > 2 ? WIDE_SWEEP : 1)
/* The columns [j, j + 64) of rows [r, r + gg), those of m, folded by op
 * into acc (a step of WIDE_FOLD_SWEEP). */
#define WIDE_FOLD_STEP(LOAD, op, m)                                           \
    do {                                                                      \
        __m512 a[4], v[4];                                                    \
        for (int q = 0; q < 4; q++) {                                         \
            a[q] =                                                            \
                tail_load_ps((__mmask16)((m) >> (16 * q)), acc + j + 16 * q); \
        }                                                                     \
        for (uint64_t k = 0; k < gg; k++) {                                   \
            LOAD(x, (r + k) * stride + j, (m), c, v);                         \
            for (int q = 0; q < 4; q++) {                                     \
                switch (op) {                                                 \
                case NRTEMU_OP_MAX:                                           \
                    a[q] = _mm512_mask_mov_ps(                                \
                        a[q],                                                 \
                        _mm512_cmp_ps_mask(a[q], v[q], _CMP_NGE_UQ) &         \
                            _mm512_cmp_ps_mask(a[q], a[q], _CMP_ORD_Q),       \
                        v[q]);                                                \
                    break;                                                    \
                case NRTEMU_OP_MIN:                                           \
                    a[q] = _mm512_mask_mov_ps(                                \
                        a[q],                                                 \
                        _mm512_cmp_ps_mask(a[q], v[q], _CMP_NLE_UQ) &         \
                            _mm512_cmp_ps_mask(a[q], a[q], _CMP_ORD_Q),       \
                        v[q]);                                                \
                    break;                                                    \
                case NRTEMU_OP_PROD:                                          \
                    a[q] = _mm512_mul_ps(a[q], v[q]);                         \
                    break;                                                    \
                default:                                                      \
                    a[q] = _mm512_add_ps(a[q], v[q]);                         \
                    break;                                                    \
                }                                                             \
            }                                                                 \
        }                                                                     \
        for (int q = 0; q < 4; q++) {                                         \
            tail_store_ps(acc + j + 16 * q, (__mmask16)((m) >> (16 * q)),     \
                          a[q]);                                              \
        }                                                                     \
    } while (0)

/* NAME##_op is inlined once per op, so that the op, and the mask of the
 * whole steps, are constants in its loops: with both tested in the loop
 * (a switch, and each quarter's mask) a float32 product over axis 0 is
 * much slower than the sum, out of cache. */
#define WIDE_FOLD_SWEEP(NAME, LOAD, ES)                                   \
    WIDE static inline __attribute__((always_inline)) void NAME##_op(     \
        const enum nrtemu_op op, uint64_t n, uint64_t g, uint64_t stride, \
        const void *x, float *acc, const struct wide_tab *c)              \
    {                                                                     \
        const uint64_t sweep = WIDE_SWEEP_OF(ES);                         \
        for (uint64_t r = 0; r < g; r += sweep) {                         \
            uint64_t gg = g - r < sweep ? g - r : sweep;                  \
            uint64_t j = 0;                                               \
            for (uint64_t k = 0; k < gg; k++) {                           \
                if (sweep == 1) {                                         \
                    prefetch_row(x, r + k, g, stride * ES, n * ES);       \
                } else {                                                  \
                    prefetch_ahead(x, r + k, g, stride * ES, n * ES);     \
                }                                                         \
            }                                                             \
            for (; j + 64 <= n; j += 64) {                                \
                WIDE_FOLD_STEP(LOAD, op, ~(__mmask64)0);                  \
            }                                                             \
            if (j < n) {                                                  \
                WIDE_FOLD_STEP(LOAD, op, wide_mask(n - j));               \
            }                                                             \
        }                                                                 \
    }                                                                     \
    WIDE static void NAME(enum nrtemu_op op, uint64_t n, uint64_t g,      \
                          uint64_t stride, const void *x, float *acc,     \
                          const struct wide_ctx *ctx)                     \
    {                                                                     \
        const struct wide_tab tab = wide_tab_of(ctx);                     \
        switch (op) {                                                     \
        case NRTEMU_OP_MAX:                                               \
            NAME##_op(NRTEMU_OP_MAX, n, g, stride, x, acc, &tab);         \
            break;                                                        \
        case NRTEMU_OP_MIN:                                               \
            NAME##_op(NRTEMU_OP_MIN, n, g, stride, x, acc, &tab);         \
            break;                                                        \
        case NRTEMU_OP_PROD:                                              \
            NAME##_op(NRTEMU_OP_PROD, n, g, stride, x, acc, &tab);        \
            break;                                                        \
        default:                                                          \
            NAME##_op(NRTEMU_OP_SUM, n, g, stride, x, acc, &tab);         \
            break;                                                        \
        }                                                                 \
    }

WIDE_FOLD_SWEEP(wide_fold_f32, wide_load_f32, 4)
WIDE_FOLD_SWEEP(wide_fold_bf16, wide_load_bf16, 2)
WIDE_FOLD_SWEEP(wide_fold_f16, wide_load_f16, 2)
WIDE_FOLD_SWEEP(wide_fold_fp8, wide_load_fp8, 1)

/*
 * Sums and products of fp8 columns, as wide_fold_fp8 folds them, with
 * fewer permutes: no column needs the others, so the 64 columns of a run
 * may sit in any order in the registers, and they sit in the order that
 * two byte unpacks give (bfloat16 words of the columns 16 L + k, k < 8
 * and k >= 8, in the lanes L), the float32 of the even and odd words then
 * made by a shift and a mask: 4 permutes for 64 codes in place of 6.  The
 * accumulators are held in that order (wide_scr) for the whole fold.
 */
static inline uint64_t
wide_scr(uint64_t c)
{
    const uint64_t s = c & ~(uint64_t)63, e = c & 63, l = e / 16, i = e % 16;

    return s + (i >= 8 ? 32 : 0) + (i & 1) * 16 + 4 * l + (i & 7) / 2;
}

#define SCR_CHUNK 2048
/* (the fold of wide_fold_fp8_scr, `sweep` rows at a time (one: each
 * prefetching the run PREFETCH_ROWS rows ahead), and when `mag`
 * is not NULL the greatest magnitude of the codes, shifted left by one,
 * into *mag) */
WIDE static inline __attribute__((always_inline)) void
scr_fold(bool prod, uint64_t n, uint64_t g, uint64_t stride, const uint8_t *x,
         float *acc, const struct wide_ctx *ctx, uint64_t sweep, uint8_t *mag)
{
    const struct wide_tab t = wide_tab_of(ctx);
    const __m512i sign = _mm512_set1_epi8((char)0x80);
    const __m512i high = _mm512_set1_epi32((int)0xffff0000u);
    __m512i mx = _mm512_setzero_si512();
    _Alignas(64) float sa[SCR_CHUNK];

    for (uint64_t b = 0; b < n; b += SCR_CHUNK) {
        const uint64_t w = n - b < SCR_CHUNK ? n - b : SCR_CHUNK;
        for (uint64_t c = 0; c < (w + 63) / 64 * 64; c++) {
            sa[wide_scr(c)] = c < w ? acc[b + c] : 0.0f;
        }
        for (uint64_t r = 0; r < g; r += sweep) {
            const uint64_t gg = g - r < sweep ? g - r : sweep;
            if (sweep == 1) {
                prefetch_row(x + b, r, g, stride, w);
            }
            for (uint64_t j = 0; j < w; j += 64) {
                const __mmask64 m = wide_mask(w - j);
                __m512 a[4], v[4];
                for (int q = 0; q < 4; q++) {
                    a[q] = _mm512_load_ps(sa + j + 16 * q);
                }
                for (uint64_t k = 0; k < gg; k++) {
                    const __m512i codes =
                        tail_load_epi8(m, x + (r + k) * stride + b + j);
                    const __m512i lo =
                        _mm512_permutex2var_epi8(t.lo0, codes, t.lo1);
                    const __m512i hi = _mm512_ternarylogic_epi32(
                        codes, sign,
                        _mm512_permutex2var_epi8(t.hi0, codes, t.hi1), 0xea);
                    const __m512i w0 = _mm512_unpacklo_epi8(lo, hi);
                    const __m512i w1 = _mm512_unpackhi_epi8(lo, hi);
                    if (mag != NULL) {
                        mx =
                            _mm512_max_epu8(mx, _mm512_add_epi8(codes, codes));
                    }
                    v[0] = _mm512_castsi512_ps(_mm512_slli_epi32(w0, 16));
                    v[1] = _mm512_castsi512_ps(_mm512_and_si512(w0, high));
                    v[2] = _mm512_castsi512_ps(_mm512_slli_epi32(w1, 16));
                    v[3] = _mm512_castsi512_ps(_mm512_and_si512(w1, high));
                    for (int q = 0; q < 4; q++) {
                        a[q] = prod ? _mm512_mul_ps(a[q], v[q])
                                    : _mm512_add_ps(a[q], v[q]);
                    }
                }
                for (int q = 0; q < 4; q++) {
                    _mm512_store_ps(sa + j + 16 * q, a[q]);
                }
            }
        }
        for (uint64_t c = 0; c < w; c++) {
            acc[b + c] = sa[wide_scr(c)];
        }
    }
    if (mag != NULL) {
        _Alignas(64) uint8_t lanes[64];
        _mm512_store_si512(lanes, mx);
        for (int i = 0; i < 64; i++) {
            *mag = lanes[i] > *mag ? lanes[i] : *mag;
        }
    }
}

WIDE static void
wide_fold_fp8_scr(bool prod, uint64_t n, uint64_t g, uint64_t stride,
                  const uint8_t *x, float *acc, const struct wide_ctx *ctx)
{
    scr_fold(prod, n, g, stride, x, acc, ctx, WIDE_SWEEP_OF(1), NULL);
}

/*
 * The sum of rows [0, g) of fp8 columns into acc[0..n), as
 * wide_fold_fp8_scr adds them, one row at a time across the columns (in
 * the order of memory: the rows of a task of exact_sum, whole rows, read
 * faster so than 8 at a time, whose streams 2 KiB apart the hardware
 * prefetchers follow poorly), and the greatest magnitude of the codes,
 * shifted left by one, into *mag (at least what it held).
 */
WIDE static void
wide_sum_fp8_rows(uint64_t n, uint64_t g, uint64_t stride, const uint8_t *x,
                  float *acc, const struct wide_ctx *ctx, uint8_t *mag)
{
    scr_fold(false, n, g, stride, x, acc, ctx, 1, mag);
}

/* max/min of int32 columns, as SFX##_columns folds them (any order). */
WIDE static void
wide_fold_i32(bool ismax, uint64_t n, uint64_t g, uint64_t stride,
              const int32_t *x, int32_t *acc)
{
    for (uint64_t r = 0; r < g; r += WIDE_SWEEP) {
        uint64_t gg = g - r < WIDE_SWEEP ? g - r : WIDE_SWEEP;
        for (uint64_t k = 0; k < gg; k++) {
            prefetch_ahead(x, r + k, g, stride * 4, n * 4);
        }
        for (uint64_t j = 0; j < n; j += 64) {
            const __mmask64 m = wide_mask(n - j);
            __m512i a[4];
            for (int q = 0; q < 4; q++) {
                a[q] = tail_load_epi32((__mmask16)(m >> (16 * q)),
                                       acc + j + 16 * q);
            }
            for (uint64_t k = 0; k < gg; k++) {
                const int32_t *row = x + (r + k) * stride + j;
                for (int q = 0; q < 4; q++) {
                    __m512i v = tail_load_epi32((__mmask16)(m >> (16 * q)),
                                                row + 16 * q);
                    a[q] = ismax ? _mm512_max_epi32(a[q], v)
                                 : _mm512_min_epi32(a[q], v);
                }
            }
            for (int q = 0; q < 4; q++) {
                tail_store_epi32(acc + j + 16 * q, (__mmask16)(m >> (16 * q)),
                                 a[q]);
            }
        }
    }
}

/* fp8 codes to float32, 64 at a time (the rows of load_run). */
WIDE static void
wide_widen_fp8(float *d, const uint8_t *s, size_t n,
               const struct wide_ctx *ctx)
{
    const struct wide_tab tab = wide_tab_of(ctx);
    __m512 v[4];

    for (size_t i = 0; i < n; i += 64) {
        const __mmask64 m = wide_mask(n - i);
        wide_load_fp8(s, i, m, &tab, v);
        for (int q = 0; q < 4; q++) {
            tail_store_ps(d + i + 16 * q, (__mmask16)(m >> (16 * q)), v[q]);
        }
    }
}

/*
 * A row of fp8 summed (pairwise, as SFX##_sum_pairwise) or multiplied
 * (ROW_FOLD) with the codes widened in registers: the same float32
 * operations, in the same order and with the same operands first, as
 * f32_row on the row widened into a window by load_run, without the
 * window.  The leaf: ROW_FOLD's LANES (32) accumulators are two vectors,
 * elements [i, i + 32) going to lanes [0, 32) in turn, the tail of fewer
 * than 32 into lane 0 one by one, then the lanes folded by halves.
 */
#define ROW_OP(prod, a, b) ((prod) ? _mm512_mul_ps(a, b) : _mm512_add_ps(a, b))
WIDE static float
wide_row_leaf_fp8(bool prod, uint64_t n, const uint8_t *x,
                  const struct wide_tab *c, struct narrow p)
{
    __m512 a0 = _mm512_set1_ps(prod ? 1.0f : 0.0f), a1 = a0, v[4];
    __m256 h;
    __m128 q, q1;
    float l0;
    uint64_t i = 0;

    for (; i + 64 <= n; i += 64) {
        wide_load_fp8(x, i, ~(__mmask64)0, c, v);
        a0 = ROW_OP(prod, a0, v[0]);
        a1 = ROW_OP(prod, a1, v[1]);
        a0 = ROW_OP(prod, a0, v[2]);
        a1 = ROW_OP(prod, a1, v[3]);
    }
    if (i + 32 <= n) {
        wide_load_fp8(x, i, 0xffffffffu, c, v);
        a0 = ROW_OP(prod, a0, v[0]);
        a1 = ROW_OP(prod, a1, v[1]);
        i += 32;
    }
    l0 = _mm512_cvtss_f32(a0);
    for (; i < n; i++) {
        const float e = narrow_widen(x[i], p);
        l0 = prod ? l0 * e : l0 + e;
    }
    a0 = _mm512_mask_mov_ps(a0, 1, _mm512_set1_ps(l0));
    a0 = ROW_OP(prod, a0, a1); /* lanes l and l + 16 */
    {
        const __m256 lo = _mm512_castps512_ps256(a0);
        const __m256 hi =
            _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a0), 1));
        h = prod ? _mm256_mul_ps(lo, hi) : _mm256_add_ps(lo, hi);
    }
    q = _mm256_castps256_ps128(h);
    q1 = _mm256_extractf128_ps(h, 1);
    q = prod ? _mm_mul_ps(q, q1) : _mm_add_ps(q, q1);
    q1 = _mm_movehl_ps(q, q);
    q = prod ? _mm_mul_ps(q, q1) : _mm_add_ps(q, q1);
    q1 = _mm_shuffle_ps(q, q, 1);
    q = prod ? _mm_mul_ss(q, q1) : _mm_add_ss(q, q1);
    return _mm_cvtss_f32(q);
}

/*
 * The sums of K leaves of n codes each (n a multiple of 64, at most
 * PAIRWISE_LEAF), at x + k * n, into s[k], each as wide_row_leaf_fp8
 * sums it (a whole number of its vector steps: no tail), the K leaves
 * interleaved: one leaf alone is a chain of dependent additions of 8
 * steps and a fold of the lanes, whose latency bounded the row sums.
 */
WIDE static inline __attribute__((always_inline)) void
wide_row_leaves_fp8(int K, uint64_t n, const uint8_t *x,
                    const struct wide_tab *c, float *s)
{
    __m512 a0[4], a1[4], v[4][4];

    for (int k = 0; k < K; k++) {
        a0[k] = a1[k] = _mm512_setzero_ps();
    }
    /* Each step prefetches K lines of the K leaves that follow (the next
     * row's, in a sum of rows), in the order of memory: the K streams of
     * the loads, n bytes apart, read out of memory slower than one, and
     * much slower without a prefetch; prefetches spread over the steps
     * beat the next row's lines all at once, and one leaf at a time.  (A
     * prefetch past the input's end faults nowhere.) */
    for (uint64_t i = 0; i < n; i += 64) {
        for (int k = 0; k < K; k++) {
            __builtin_prefetch(x + K * n + K * i + 64 * k);
        }
        for (int k = 0; k < K; k++) {
            wide_load_fp8(x + k * n, i, ~(__mmask64)0, c, v[k]);
        }
        for (int k = 0; k < K; k++) {
            a0[k] = _mm512_add_ps(a0[k], v[k][0]);
            a1[k] = _mm512_add_ps(a1[k], v[k][1]);
        }
        for (int k = 0; k < K; k++) {
            a0[k] = _mm512_add_ps(a0[k], v[k][2]);
            a1[k] = _mm512_add_ps(a1[k], v[k][3]);
        }
    }
    for (int k = 0; k < K; k++) {
        /* wide_row_leaf_fp8's fold of the lanes, by halves */
        const __m512 a = _mm512_add_ps(a0[k], a1[k]);
        const __m256 h = _mm256_add_ps(
            _mm512_castps512_ps256(a),
            _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
        __m128 q =
            _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
        q = _mm_add_ps(q, _mm_movehl_ps(q, q));
        q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
        s[k] = _mm_cvtss_f32(q);
    }
}

WIDE static float
wide_row_sum_fp8(uint64_t n, const uint8_t *x, const struct wide_tab *c,
                 struct narrow p)
{
    uint64_t half, quarter;
    float s[4];

    if (n <= PAIRWISE_LEAF) {
        return wide_row_leaf_fp8(false, n, x, c, p);
    }
    half = (n / 2 + LANES - 1) / LANES * LANES;
    quarter = (half / 2 + LANES - 1) / LANES * LANES;
    /* halves, or quarters, that are whole leaves of whole vector steps:
     * interleaved, the same additions */
    if (2 * half == n && half <= PAIRWISE_LEAF && half % 64 == 0) {
        wide_row_leaves_fp8(2, half, x, c, s);
        return s[0] + s[1];
    }
    if (2 * half == n && 2 * quarter == half && half > PAIRWISE_LEAF &&
        quarter <= PAIRWISE_LEAF && quarter % 64 == 0) {
        wide_row_leaves_fp8(4, quarter, x, c, s);
        return (s[0] + s[1]) + (s[2] + s[3]);
    }
    return wide_row_sum_fp8(half, x, c, p) +
           wide_row_sum_fp8(n - half, x + half, c, p);
}

/* The sum or product of a row of n fp8 codes, as f32_row gives it. */
WIDE static float
wide_row_fp8(bool prod, uint64_t n, const uint8_t *x,
             const struct wide_ctx *ctx, struct narrow p)
{
    const struct wide_tab tab = wide_tab_of(ctx);

    return prod ? wide_row_leaf_fp8(true, n, x, &tab, p)
                : wide_row_sum_fp8(n, x, &tab, p);
}

/*
 * fp8 extremes and argmax/argmin by their codes, with no widening: an fp8
 * code is a sign and a magnitude whose order, as an unsigned byte, is the
 * order of the values (the NaNs above the largest finite or infinite
 * magnitude, `nan_above`).  So over any set of codes, with smax the
 * greatest as signed bytes and umin, umax the least and greatest as
 * unsigned ones, the greatest value is smax when smax >= 0 (a positive
 * code or +0 exists), else umin (all negative: the least magnitude), and
 * the least value is umax when umax >= 0x80 (a negative code exists: the
 * greatest magnitude), else umin; a NaN is among them when smax >
 * nan_above or umax > 0x80 | nan_above.  Three byte compares for 64 codes
 * at a time (bytes_ext).  The results that these do not settle go to the
 * widening folds above: a NaN among the codes (which NaN comes first
 * decides the sign of the result) and an extreme of zero (-0 and +0 are
 * equal: which comes first decides its sign).
 */
struct bytes_ext {
    __m512i smax, umin, umax;
};

WIDE static inline void
bytes_ext_init(struct bytes_ext *e)
{
    e->smax = _mm512_set1_epi8((char)0x80);
    e->umin = _mm512_set1_epi8((char)0xff);
    e->umax = _mm512_setzero_si512();
}

/* The codes c of the lanes of m (the others unchanged). */
WIDE static inline void
bytes_ext_add(struct bytes_ext *e, __mmask64 m, __m512i c)
{
    e->smax = _mm512_mask_max_epi8(e->smax, m, e->smax, c);
    e->umin = _mm512_mask_min_epu8(e->umin, m, e->umin, c);
    e->umax = _mm512_mask_max_epu8(e->umax, m, e->umax, c);
}

/* Each lane's greatest (least) value, as a code. */
WIDE static inline __m512i
bytes_ext_code(bool ismax, const struct bytes_ext *e)
{
    return ismax ? _mm512_mask_blend_epi8(_mm512_movepi8_mask(e->smax),
                                          e->smax, e->umin)
                 : _mm512_mask_blend_epi8(_mm512_movepi8_mask(e->umax),
                                          e->umin, e->umax);
}

/* The lanes whose extreme `code` the codes do not settle: a NaN among
 * them, or a zero extreme. */
WIDE static inline __mmask64
bytes_ext_unsure(const struct bytes_ext *e, __m512i code, uint8_t nan_above)
{
    const __mmask64 nan =
        _mm512_cmpgt_epi8_mask(e->smax, _mm512_set1_epi8((char)nan_above)) |
        _mm512_cmpgt_epu8_mask(e->umax,
                               _mm512_set1_epi8((char)(0x80 | nan_above)));

    return nan | _mm512_testn_epi8_mask(code, _mm512_set1_epi8(0x7f));
}

/* The 64 lanes of e folded into lane 0 of each. */
WIDE static inline void
bytes_ext_lanes(struct bytes_ext *e)
{
    for (int w = 32; w >= 1; w /= 2) {
        /* lane i takes lane i + w into account */
        const __m512i idx = _mm512_add_epi8(
            _mm512_set_epi8(63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51,
                            50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 39, 38,
                            37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25,
                            24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12,
                            11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
            _mm512_set1_epi8((char)w));
        e->smax =
            _mm512_max_epi8(e->smax, _mm512_permutexvar_epi8(idx, e->smax));
        e->umin =
            _mm512_min_epu8(e->umin, _mm512_permutexvar_epi8(idx, e->umin));
        e->umax =
            _mm512_max_epu8(e->umax, _mm512_permutexvar_epi8(idx, e->umax));
    }
}

/* Magnitudes above this are NaN in fp8 format dt. */
static uint8_t
fp8_nan_above(enum nrtemu_dtype dt)
{
    const struct narrow p = narrow_fp8(dt);

    return (uint8_t)(p.special_at == 0x7f ? 0x7e : p.special_at);
}

/*
 * Columns [0, n) (n <= BYTES_CHUNK) of g rows `stride` codes apart: each
 * column's extreme code into code[0..n), and the lanes it does not settle
 * into unsure[] (one mask per 64 columns).  BYTES_ROWS rows at a time go
 * across all the columns, their accumulators in st (in L1) between: the
 * input is read in the order of memory, which the hardware prefetchers
 * follow (runs of 256 columns down all the rows at a time, with an input
 * out of L2, are several times slower).
 */
#define BYTES_ROWS 16
#define BYTES_CHUNK 2048
WIDE static void
bytes_columns_ext(bool ismax, uint64_t n, uint64_t g, uint64_t stride,
                  const uint8_t *x, uint8_t nan_above, uint8_t *code,
                  uint64_t *unsure)
{
    _Alignas(64) uint8_t st[3][BYTES_CHUNK];

    memset(st[0], 0x80, n);
    memset(st[1], 0xff, n);
    memset(st[2], 0, n);
    for (uint64_t r = 0; r < g; r += BYTES_ROWS) {
        const uint64_t rr = g - r < BYTES_ROWS ? g - r : BYTES_ROWS;
        for (uint64_t j = 0; j < n; j += 64) {
            const __mmask64 m = wide_mask(n - j);
            const uint8_t *col = x + r * stride + j;
            struct bytes_ext e = {
                .smax = _mm512_load_si512(st[0] + j),
                .umin = _mm512_load_si512(st[1] + j),
                .umax = _mm512_load_si512(st[2] + j),
            };
            for (uint64_t k = 0; k < rr; k++) {
                bytes_ext_add(&e, m, tail_load_epi8(m, col + k * stride));
            }
            _mm512_store_si512(st[0] + j, e.smax);
            _mm512_store_si512(st[1] + j, e.umin);
            _mm512_store_si512(st[2] + j, e.umax);
        }
    }
    for (uint64_t j = 0; j < n; j += 64) {
        const __mmask64 m = wide_mask(n - j);
        const struct bytes_ext e = {
            .smax = _mm512_load_si512(st[0] + j),
            .umin = _mm512_load_si512(st[1] + j),
            .umax = _mm512_load_si512(st[2] + j),
        };
        const __m512i c = bytes_ext_code(ismax, &e);
        tail_store_epi8(code + j, m, c);
        unsure[j / 64] = bytes_ext_unsure(&e, c, nan_above) & m;
    }
}

/* Columns of fp8 (their max or min) into acc[0..n) as wide_fold_fp8 folds
 * them, by bytes_columns_ext: the runs of 64 columns that it does not
 * settle go to wide_fold_fp8. */
WIDE static void
bytes_fold_fp8(bool ismax, uint64_t n, uint64_t g, uint64_t stride,
               const uint8_t *x, float *acc, const struct wide_ctx *ctx,
               uint8_t nan_above)
{
    const enum nrtemu_op op = ismax ? NRTEMU_OP_MAX : NRTEMU_OP_MIN;
    const struct wide_tab tab = wide_tab_of(ctx);
    uint8_t code[BYTES_CHUNK];
    uint64_t unsure[BYTES_CHUNK / 64];
    __m512 v[4];

    if (g == 0) {
        return;
    }
    for (uint64_t b = 0; b < n; b += BYTES_CHUNK) {
        const uint64_t w = n - b < BYTES_CHUNK ? n - b : BYTES_CHUNK;
        bytes_columns_ext(ismax, w, g, stride, x + b, nan_above, code, unsure);
        for (uint64_t j = 0; j < w; j += 64) {
            const __mmask64 m = wide_mask(w - j);
            float *a = acc + b + j;
            if (unsure[j / 64] != 0) {
                wide_fold_fp8(op, w - j < 64 ? w - j : 64, g, stride,
                              x + b + j, a, ctx);
                continue;
            }
            wide_load_fp8(code, j, m, &tab, v);
            for (int q = 0; q < 4; q++) {
                const __mmask16 mq = (__mmask16)(m >> (16 * q));
                const __m512 aq = tail_load_ps(mq, a + 16 * q);
                /* NRTEMU_FLOAT_MAX (NRTEMU_FLOAT_MIN): acc stays when >= (<=)
                 * or NaN */
                const __mmask16 take =
                    (ismax ? _mm512_cmp_ps_mask(aq, v[q], _CMP_NGE_UQ)
                           : _mm512_cmp_ps_mask(aq, v[q], _CMP_NLE_UQ)) &
                    _mm512_cmp_ps_mask(aq, aq, _CMP_ORD_Q);
                _mm512_mask_storeu_ps(a + 16 * q, (__mmask16)(take & mq),
                                      v[q]);
            }
        }
    }
}

/* The extreme code of a row of n fp8 codes, in *code; false when the codes
 * do not settle it (bytes_ext_unsure). */
WIDE static bool
bytes_row_ext(bool ismax, uint64_t n, const uint8_t *x, uint8_t nan_above,
              uint8_t *code)
{
    struct bytes_ext e[2];
    uint64_t i = 0;

    bytes_ext_init(&e[0]);
    bytes_ext_init(&e[1]);
    for (; i + 128 <= n; i += 128) {
        bytes_ext_add(&e[0], ~(__mmask64)0, _mm512_loadu_si512(x + i));
        bytes_ext_add(&e[1], ~(__mmask64)0, _mm512_loadu_si512(x + i + 64));
    }
    for (; i < n; i += 64) {
        const __mmask64 m = wide_mask(n - i);
        bytes_ext_add(&e[0], m, tail_load_epi8(m, x + i));
    }
    e[0].smax = _mm512_max_epi8(e[0].smax, e[1].smax);
    e[0].umin = _mm512_min_epu8(e[0].umin, e[1].umin);
    e[0].umax = _mm512_max_epu8(e[0].umax, e[1].umax);
    bytes_ext_lanes(&e[0]);
    {
        const __m512i c = bytes_ext_code(ismax, &e[0]);
        if ((bytes_ext_unsure(&e[0], c, nan_above) & 1) != 0) {
            return false;
        }
        *code = (uint8_t)_mm_cvtsi128_si32(_mm512_castsi512_si128(c));
    }
    return true;
}

/* The first index i < n with (x[i] & and) == want (gt: > want), which the
 * caller knows to exist. */
WIDE static uint64_t
bytes_find(uint64_t n, const uint8_t *x, uint8_t and, uint8_t want, bool gt)
{
    const __m512i a = _mm512_set1_epi8((char)and);
    const __m512i w = _mm512_set1_epi8((char)want);

    for (uint64_t i = 0; i < n; i += 64) {
        const __mmask64 m = wide_mask(n - i);
        const __m512i c = _mm512_and_si512(tail_load_epi8(m, x + i), a);
        const __mmask64 hit = (gt ? _mm512_cmpgt_epu8_mask(c, w)
                                  : _mm512_cmpeq_epi8_mask(c, w)) &
                              m;
        if (hit != 0) {
            return i + (uint64_t)__builtin_ctzll(hit);
        }
    }
    return 0;
}

/* argmax/argmin of a row of n fp8 codes (n >= 1): the first NaN, else the
 * first extreme, -0 and +0 equal (SFX##_arg_row's rules). */
WIDE static uint64_t
bytes_arg_row(bool ismax, uint64_t n, const uint8_t *x, uint8_t nan_above)
{
    struct bytes_ext e;
    __m512i c;
    uint8_t code;

    bytes_ext_init(&e);
    for (uint64_t i = 0; i < n; i += 64) {
        const __mmask64 m = wide_mask(n - i);
        bytes_ext_add(&e, m, tail_load_epi8(m, x + i));
    }
    bytes_ext_lanes(&e);
    c = bytes_ext_code(ismax, &e);
    code = (uint8_t)_mm_cvtsi128_si32(_mm512_castsi512_si128(c));
    if ((int8_t)_mm_cvtsi128_si32(_mm512_castsi512_si128(e.smax)) >
            (int)nan_above ||
        (uint8_t)_mm_cvtsi128_si32(_mm512_castsi512_si128(e.umax)) >
            (0x80 | nan_above)) {
        return bytes_find(n, x, 0x7f, nan_above, true); /* the first NaN */
    }
    if ((code & 0x7f) == 0) {
        return bytes_find(n, x, 0x7f, 0, false);
    }
    return bytes_find(n, x, 0xff, code, false);
}

/*
 * argmax/argmin of a row of n float16 or bfloat16 codes (n >= 1) by keys
 * in 16-bit lanes, 32 a vector, as bytes_arg_row does fp8: the key of a
 * code is its magnitude with its sign (-0 and +0 both 0: equal, as NumPy
 * has them), a NaN (a magnitude above `inf_bits`, the infinity's) is
 * above (argmax) or below (argmin) every other key, so the first index
 * of the extreme key is the first NaN, else the first extreme: the
 * widened row's SFX##_arg_row result.  One pass for the extreme key and
 * one, stopping at it, for its index, with no float32 copy of the row (the
 * copy and the float32 pass would be most of a float16 argmax's time).
 */
/*
 * The order of fp8 codes for argmax/argmin as signed bytes (bytes_key),
 * and of float16/bfloat16 codes as signed 16-bit lanes (half_key): the
 * sign and the magnitude (-0 and +0 both 0: equal, as NumPy has them),
 * every NaN (a magnitude above `nan_above`) `nan_key`, above (argmax:
 * the greatest key) or below (argmin: the least) every other key, so
 * that a row or column keeps its first NaN as it keeps its first extreme.
 */
#define DEFINE_CODE_KEY(NAME, BITS, MAG)                                      \
    WIDE static inline __m512i NAME(__m512i c, __m512i nan_above,             \
                                    __m512i nan_key)                          \
    {                                                                         \
        const __m512i mag = _mm512_and_si512(c, _mm512_set1_epi##BITS(MAG));  \
        const __m512i key = _mm512_mask_sub_epi##BITS(                        \
            mag, _mm512_movepi##BITS##_mask(c), _mm512_setzero_si512(), mag); \
        return _mm512_mask_mov_epi##BITS(                                     \
            key, _mm512_cmpgt_epu##BITS##_mask(mag, nan_above), nan_key);     \
    }
DEFINE_CODE_KEY(bytes_key, 8, 0x7f)
DEFINE_CODE_KEY(half_key, 16, 0x7fff)

/* The greatest (ismax) or least signed 16-bit lane of v, in every lane:
 * _mm_minpos_epu16 on keys whose unsigned order is the one wanted. */
WIDE static inline __m512i
half_extreme(bool ismax, __m512i v)
{
    const __m128i flip = _mm_set1_epi16(ismax ? 0x7fff : -0x8000);
    __m256i h = ismax ? _mm256_max_epi16(_mm512_castsi512_si256(v),
                                         _mm512_extracti64x4_epi64(v, 1))
                      : _mm256_min_epi16(_mm512_castsi512_si256(v),
                                         _mm512_extracti64x4_epi64(v, 1));
    __m128i q = ismax ? _mm_max_epi16(_mm256_castsi256_si128(h),
                                      _mm256_extracti128_si256(h, 1))
                      : _mm_min_epi16(_mm256_castsi256_si128(h),
                                      _mm256_extracti128_si256(h, 1));
    /* argmax: 0x7fff - k (no wrap for any k), argmin: k ^ 0x8000 */
    __m128i u = ismax ? _mm_sub_epi16(flip, q) : _mm_xor_si128(q, flip);
    __m128i m = _mm_minpos_epu16(u);
    __m128i k = ismax ? _mm_sub_epi16(flip, m) : _mm_xor_si128(m, flip);

    return _mm512_broadcastw_epi16(k);
}

WIDE static uint64_t
half_arg_row(bool ismax, uint64_t n, const uint16_t *x, uint16_t inf_bits)
{
    const __m512i inf = _mm512_set1_epi16((short)inf_bits);
    const __m512i nan_key = _mm512_set1_epi16(ismax ? 0x7fff : -0x8000);
    __m512i ext = _mm512_set1_epi16(ismax ? -0x8000 : 0x7fff);
    uint64_t i = 0;

    if (ismax) {
        for (; i + 32 <= n; i += 32) {
            ext = _mm512_max_epi16(
                ext, half_key(_mm512_loadu_si512(x + i), inf, nan_key));
        }
    } else {
        for (; i + 32 <= n; i += 32) {
            ext = _mm512_min_epi16(
                ext, half_key(_mm512_loadu_si512(x + i), inf, nan_key));
        }
    }
    if (i < n) {
        const __mmask32 m = (__mmask32)wide_mask(n - i);
        const __m512i k = half_key(tail_load_epi16(m, x + i), inf, nan_key);
        ext = ismax ? _mm512_mask_max_epi16(ext, m, ext, k)
                    : _mm512_mask_min_epi16(ext, m, ext, k);
    }
    ext = half_extreme(ismax, ext);
    for (i = 0; i < n; i += 32) {
        const __mmask32 m = (__mmask32)wide_mask(n - i);
        const __m512i k = half_key(tail_load_epi16(m, x + i), inf, nan_key);
        const __mmask32 hit = _mm512_mask_cmpeq_epi16_mask(m, k, ext);
        if (hit != 0) {
            return i + (uint64_t)__builtin_ctz(hit);
        }
    }
    return 0; /* (not reached: some lane holds the extreme) */
}

/* at[i] = base + a8's byte i, for the lanes of t. */
WIDE static inline void
bytes_at_store(uint32_t *at, __mmask64 t, __m512i a8, uint32_t base)
{
    const __m512i b = _mm512_set1_epi32((int)base);

    _mm512_mask_storeu_epi32(
        at, (__mmask16)t,
        _mm512_add_epi32(_mm512_cvtepu8_epi32(_mm512_castsi512_si128(a8)), b));
    _mm512_mask_storeu_epi32(
        at + 16, (__mmask16)(t >> 16),
        _mm512_add_epi32(
            _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(a8, 1)), b));
    _mm512_mask_storeu_epi32(
        at + 32, (__mmask16)(t >> 32),
        _mm512_add_epi32(
            _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(a8, 2)), b));
    _mm512_mask_storeu_epi32(
        at + 48, (__mmask16)(t >> 48),
        _mm512_add_epi32(
            _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(a8, 3)), b));
}

/* at[0..n) = base + a8[i] where `taken` (one mask per 64) has bit i. */
WIDE static void
bytes_at_flush(uint32_t *at, uint64_t n, const uint8_t *a8, uint64_t *taken,
               uint32_t base)
{
    for (uint64_t j = 0; j < n; j += 64) {
        bytes_at_store(at + j, taken[j / 64], _mm512_load_si512(a8 + j), base);
        taken[j / 64] = 0;
    }
}

/*
 * Rows [0, g) (g >= 1) of n columns of fp8 codes, `stride` apart, from
 * row index r0 on, into best[0..n) (the widened extreme) and at[0..n)
 * (its row), as ARG_FLOAT_SWEEP's sweeps of the widened codes would: a
 * column takes a row's key when strictly better.  One row at a time
 * across the columns, in the order of memory, the keys, the rows' offsets
 * within blocks of BYTES_BLOCK rows (bytes) and which columns took one in
 * the block held in L1 between; the offsets go to `at` at the end of each
 * block.  (Faster, with the input out of the caches, than bytes_columns_ext's
 * 16 rows at a time, whose 16 streams a row apart the hardware prefetchers
 * follow poorly; a little slower with the input in cache.  A column takes a
 * row's key seldom after its first rows, so the stores of the keys and offsets
 * are skipped for runs of 64 columns that take none.)
 */
#define BYTES_BLOCK 256

/* The columns [j, j + 64) of a row, those of m (a step of
 * bytes_arg_columns). */
#define BYTES_ARG_STEP(ismax, m)                                             \
    do {                                                                     \
        const __m512i key = bytes_key(tail_load_epi8((m), row + j), na, nk); \
        const __m512i kb = _mm512_load_si512(bk + j);                        \
        const __mmask64 t = ((ismax) ? _mm512_cmpgt_epi8_mask(key, kb)       \
                                     : _mm512_cmplt_epi8_mask(key, kb)) &    \
                            (m);                                             \
        if (t != 0) {                                                        \
            _mm512_mask_storeu_epi8(bk + j, t, key);                         \
            _mm512_mask_storeu_epi8(a8 + j, t, off);                         \
            taken[j / 64] |= t;                                              \
        }                                                                    \
    } while (0)

/* (inlined for each direction, with the mask of the whole steps a
 * constant, as WIDE_FOLD_SWEEP's NAME##_op; each row prefetches the run
 * PREFETCH_ROWS rows ahead) */
WIDE static inline __attribute__((always_inline)) void
bytes_arg_columns_dir(const bool ismax, uint32_t r0, uint64_t g, uint64_t n,
                      uint64_t stride, const uint8_t *x, uint32_t *at,
                      float *best, struct narrow p, uint8_t nan_above)
{
    const __m512i na = _mm512_set1_epi8((char)nan_above);
    const __m512i nk = _mm512_set1_epi8(ismax ? 127 : -128);
    _Alignas(64) int8_t bk[BYTES_CHUNK];
    _Alignas(64) uint8_t a8[BYTES_CHUNK];
    uint64_t taken[BYTES_CHUNK / 64];

    for (uint64_t b = 0; b < n; b += BYTES_CHUNK) {
        const uint64_t w = n - b < BYTES_CHUNK ? n - b : BYTES_CHUNK;
        const uint8_t *xb = x + b;
        uint64_t base = 0;

        for (uint64_t j = 0; j < w; j += 64) {
            const __mmask64 m = wide_mask(w - j);
            _mm512_store_si512(bk + j,
                               bytes_key(tail_load_epi8(m, xb + j), na, nk));
            _mm512_store_si512(a8 + j, _mm512_setzero_si512());
            taken[j / 64] = m;
        }
        for (uint64_t r = 1; r < g; r++) {
            const uint8_t *row = xb + r * stride;
            uint64_t j = 0;
            __m512i off;
            if (r == base + BYTES_BLOCK) {
                bytes_at_flush(at + b, w, a8, taken, r0 + (uint32_t)base);
                base = r;
            }
            prefetch_row(xb, r, g, stride, w);
            off = _mm512_set1_epi8((char)(r - base));
            for (; j + 64 <= w; j += 64) {
                BYTES_ARG_STEP(ismax, ~(__mmask64)0);
            }
            if (j < w) {
                BYTES_ARG_STEP(ismax, wide_mask(w - j));
            }
        }
        bytes_at_flush(at + b, w, a8, taken, r0 + (uint32_t)base);
        for (uint64_t i = 0; i < w; i++) {
            const int k = bk[i];
            const uint32_t c = k == (ismax ? 127 : -128) ? 0x7fu
                               : k >= 0                  ? (uint32_t)k
                                        : 0x80u | (uint32_t)-k;
            best[b + i] = narrow_widen(c, p);
        }
    }
}

WIDE static void
bytes_arg_columns(bool ismax, uint32_t r0, uint64_t g, uint64_t n,
                  uint64_t stride, const uint8_t *x, uint32_t *at, float *best,
                  struct narrow p, uint8_t nan_above)
{
    if (ismax) {
        bytes_arg_columns_dir(true, r0, g, n, stride, x, at, best, p,
                              nan_above);
    } else {
        bytes_arg_columns_dir(false, r0, g, n, stride, x, at, best, p,
                              nan_above);
    }
}
#endif

/* Fold g rows of n elements of src, `stride` apart, into acc[0..n) of kt
 * by the WIDE sweeps; false where they do not apply (no AVX-512 VBMI, or
 * another pair of types). */
static bool
wide_fold(enum nrtemu_op op, enum nrtemu_dtype kt, enum nrtemu_dtype src,
          size_t n, size_t g, size_t stride, const void *x, void *acc)
{
#if NRTEMU_X86_CLONES
    const struct wide_ctx *c;

    if (!cpu_has_wide()) {
        return false;
    }
    if (kt == NRTEMU_DTYPE_INT32 && src == NRTEMU_DTYPE_INT32 &&
        (op == NRTEMU_OP_MAX || op == NRTEMU_OP_MIN)) {
        wide_fold_i32(op == NRTEMU_OP_MAX, n, g, stride, x, acc);
        return true;
    }
    if (kt != NRTEMU_DTYPE_FLOAT32) {
        return false;
    }
    switch (src) {
    case NRTEMU_DTYPE_FLOAT32:
        wide_fold_f32(op, n, g, stride, x, acc, NULL);
        return true;
    case NRTEMU_DTYPE_BFLOAT16:
        wide_fold_bf16(op, n, g, stride, x, acc, NULL);
        return true;
    case NRTEMU_DTYPE_FLOAT16:
        wide_fold_f16(op, n, g, stride, x, acc, NULL);
        return true;
    default:
        c = wide_ctx_fp8(src);
        if (c != NULL && (op == NRTEMU_OP_MAX || op == NRTEMU_OP_MIN)) {
            bytes_fold_fp8(op == NRTEMU_OP_MAX, n, g, stride, x, acc, c,
                           fp8_nan_above(src));
            return true;
        }
        if (c != NULL) {
            if (op == NRTEMU_OP_SUM || op == NRTEMU_OP_PROD) {
                wide_fold_fp8_scr(op == NRTEMU_OP_PROD, n, g, stride, x, acc,
                                  c);
            } else {
                wide_fold_fp8(op, n, g, stride, x, acc, c);
            }
            return true;
        }
        return false;
    }
#else
    (void)op, (void)kt, (void)src, (void)n, (void)g, (void)stride, (void)x;
    (void)acc;
    return false;
#endif
}

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
#if NRTEMU_X86_CLONES
                const struct wide_ctx *c = wide_ctx_fp8(in->dtype);
                if (c != NULL && cpu_has_wide()) {
                    wide_widen_fp8(buf, src, n, c);
                    return;
                }
#endif
                const struct narrow p = narrow_fp8(in->dtype);
                size_t done = 0;
#if NRTEMU_X86_CLONES
                if (cpu_has_f16c()) {
                    done = widen_fp8_f16c(buf, src, n, p);
                }
#endif
                widen_fp8((float *)buf + done, (const uint8_t *)src + done,
                          n - done, p);
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

/* Elements converted at a time when the input needs converting, and the
 * most rows folded into the accumulators at a time: 8 KiB of float32, so
 * that the converted copy stays in L1 between its store and its loads. */
#define WINDOW_ELEMS 2048
/* Columns folded at a time: their accumulators stay in L1 (16 KiB of
 * 64-bit ones) while every row streams past them. */
#define COLUMN_CHUNK 2048
/* Inputs of at least this many bytes are split among the pool's threads;
 * for smaller ones, waking the workers costs more than it saves. */
#define PARALLEL_BYTES ((uint64_t)1 << 20)
#define TASKS_PER_THREAD 4
/* Rows per task, at least, when argmax/argmin and max/min split the rows
 * of a column reduction among tasks; and the most bytes of partial
 * results for it (beyond, the columns are split). */
#define SPLIT_ROWS_MIN 64
#define SPLIT_PARTIAL_MAX ((uint64_t)8 << 20)

/* Fold g rows of n elements of `src`, `stride` apart, into acc[0..n) of
 * kt, widening them in registers; false when no such fold exists for the
 * pair (the caller converts them first). */
static bool
fold_columns_from(enum nrtemu_op op, enum nrtemu_dtype kt,
                  enum nrtemu_dtype src, size_t n, size_t g, size_t stride,
                  const void *x, void *acc)
{
    if (x != NULL && wide_fold(op, kt, src, n, g, stride, x, acc)) {
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

/* The rows of a reduction of fp8 to float32 folded in registers
 * (fp8_rows_fold), and what they need, set up once a task. */
struct fp8_rows {
    enum nrtemu_op op;
    const struct wide_ctx *ctx;
    struct narrow p;
    uint8_t nan_above;
};

/* Whether fp8_rows_fold serves op (SUM for a mean) from src to kt with
 * compute: fp8 widened exactly (compute kt or src), AVX-512 VBMI. */
static bool
fp8_rows_init(struct fp8_rows *f, enum nrtemu_op op, enum nrtemu_dtype kt,
              enum nrtemu_dtype compute, enum nrtemu_dtype src)
{
#if NRTEMU_X86_CLONES
    if (!is_fp8(src) || kt != NRTEMU_DTYPE_FLOAT32 ||
        (compute != kt && compute != src) || !cpu_has_wide()) {
        return false;
    }
    f->op = op;
    f->ctx = wide_ctx_fp8(src);
    f->p = narrow_fp8(src);
    f->nan_above = fp8_nan_above(src);
    return f->ctx != NULL;
#else
    (void)f, (void)op, (void)kt, (void)compute, (void)src;
    return false;
#endif
}

/*
 * A row of n fp8 codes folded into *acc (float32) as fold_row after
 * load_run folds it: sums and products by wide_row_fp8, max/min by the
 * codes (bytes_row_ext); false when that leaves the result open (a NaN
 * in a sum or product: which of two NaNs comes first in an operation
 * decides the sign of the result, and f32_row's compiled order is its
 * own; and what bytes_row_ext does not settle), for fold_row to do.
 */
static bool
fp8_rows_fold(const struct fp8_rows *f, size_t n, const void *x, float *acc)
{
#if NRTEMU_X86_CLONES
    uint8_t code;
    float r;

    switch (f->op) {
    case NRTEMU_OP_SUM:
    case NRTEMU_OP_PROD:
        r = wide_row_fp8(f->op == NRTEMU_OP_PROD, n, x, f->ctx, f->p);
        if (r != r) {
            return false;
        }
        /* f32_column's step: acc first */
        *acc = f->op == NRTEMU_OP_PROD ? *acc * r : *acc + r;
        return true;
    case NRTEMU_OP_MAX:
    case NRTEMU_OP_MIN:
        if (!bytes_row_ext(f->op == NRTEMU_OP_MAX, n, x, f->nan_above,
                           &code)) {
            return false;
        }
        r = narrow_widen(code, f->p);
        *acc = f->op == NRTEMU_OP_MAX ? NRTEMU_FLOAT_MAX(*acc, r)
                                      : NRTEMU_FLOAT_MIN(*acc, r);
        return true;
    default:
        return false;
    }
#else
    (void)f, (void)n, (void)x, (void)acc;
    return false;
#endif
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
 * prefetchers read whole.
 */
static bool
exact_sum_ready(enum nrtemu_dtype kt, enum nrtemu_dtype src)
{
#if NRTEMU_X86_CLONES
    return kt == NRTEMU_DTYPE_FLOAT32 && is_fp8(src) && cpu_has_wide() &&
           wide_ctx_fp8(src) != NULL;
#else
    (void)kt, (void)src;
    return false;
#endif
}

/* Rows [0, g) of n fp8 columns added into acc as exact_sum needs them (only
 * where exact_sum_ready), the greatest magnitude << 1 into *mag. */
static void
exact_sum_rows(enum nrtemu_dtype src, uint64_t n, uint64_t g, uint64_t stride,
               const void *x, float *acc, uint8_t *mag)
{
#if NRTEMU_X86_CLONES
    wide_sum_fp8_rows(n, g, stride, x, acc, wide_ctx_fp8(src), mag);
#else
    (void)src, (void)n, (void)g, (void)stride, (void)x, (void)acc, (void)mag;
#endif
}

/* Whether sums of R rows of codes of magnitude at most mag2 >> 1 are exact
 * in any order (false for an infinity or a NaN). */
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
 * Tasks for `units` units of work on `threads` threads: a few per thread
 * when there is work enough, so that a thread that the machine's other
 * processes hold up leaves its share to the others (the pool hands out
 * tasks one at a time); 1 on one thread.
 */
static uint32_t
task_count(uint32_t threads, uint64_t units)
{
    uint64_t want = threads > 1 ? (uint64_t)threads * TASKS_PER_THREAD : 1;

    return (uint32_t)(units < want ? (units ? units : 1) : want);
}

/*
 * Tasks for a split by rows (split_r) of R rows, in_bytes of input, on
 * `threads` threads: as task_count, but SPLIT_TASK_BYTES of input a task
 * at least, one task a thread at least.  Each task sets its own partial
 * results to the identity, reads its first rows unprefetched, and its
 * partials are folded into the out at the end; for small inputs that
 * outweighs the balance that more tasks give.  An fp8 argmax or argmin
 * over the rows of a few MiB runs faster as 2 tasks than as 8, right
 * after a busy gap and on the next call alike; 2-byte inputs (then 4
 * tasks) run alike either way; 4-byte ones keep 8.
 */
#define SPLIT_TASK_BYTES ((uint64_t)2 << 20)

static uint32_t
rows_task_count(uint32_t threads, uint64_t R, uint64_t in_bytes)
{
    uint32_t tasks = task_count(threads, R / SPLIT_ROWS_MIN);
    uint64_t most = in_bytes / SPLIT_TASK_BYTES;

    most = most > threads ? most : threads;
    return tasks < most ? tasks : (uint32_t)most;
}

/* Task t's share [*lo, *hi) of `total` items, in multiples of `align`. */
static void
task_share(uint64_t total, uint32_t tasks, uint32_t t, uint64_t align,
           uint64_t *lo, uint64_t *hi)
{
    uint64_t per = (total + tasks - 1) / tasks;

    per = (per + align - 1) / align * align;
    *lo = per * t < total ? per * t : total;
    *hi = per * (t + 1) < total ? per * (t + 1) : total;
}

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
    const bool fp8 =
        j->B == 1 && j->load == LOAD_CONVERT &&
        fp8_rows_init(&rows, j->fold, j->kt, j->compute, in->dtype);
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
            exact_sum_rows(in->dtype, j->B, r1 - r0, j->B,
                           data + (a * j->R + r0) * j->B * is,
                           (float *)(void *)(acc + a * j->B * ks), &mag);
        }
        j->mags[t] = mag;
        return;
    }
    for (uint64_t a = a0; a < a1; a++) {
        if (j->B == 1) {
            const void *x = data + a * j->R * is;
            if (fp8 && fp8_rows_fold(&rows, j->R, x,
                                     (float *)(void *)(j->acc + a * ks))) {
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
        j.load == LOAD_FUSED && exact_sum_ready(kt, in->dtype) &&
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

/*
 * One pass over a row: ARG_LANES running extremes and the index of each,
 * a lane taking an element only when strictly better (so each lane keeps
 * its first extreme), then the lowest index among the lanes that hold the
 * row's extreme: the first extreme of the row, as NumPy gives, with -0
 * and +0 equal.  A NaN anywhere (v != v, gone for integers) sends the row
 * back to the two passes of SFX##_arg_row2, whose rule is the first NaN.
 * IT, the index type, has the width of T so that the loop is one vector
 * type; *_arg_row falls back for rows too long for it.  Integers only
 * (ONE_PASS): int32 rows are faster in one pass than in two, but float32
 * rows slower (the two passes of floats vectorise better: maxps, then a
 * compare).  Rows of at most SHORT_ROW elements take the two passes
 * whatever their type, the second one branch-free (a minimum of candidate
 * indices): several times faster than one pass with its lane set-up and
 * merge, or than the branches of FIND_FIRST.
 */
#define ARG_LANES 32
#define SHORT_ROW 256

/* One argmax/argmin of [A, R, B] into out[A * B], split among tasks as a
 * reduce_job is, or by rows (split_r: each task's extremes of its rows go
 * to `partial`, merged in task order afterwards). */
struct arg_job {
    const struct nrtemu_array *in;
    enum nrtemu_dtype kt;
    bool ismax, in_place, split_a, split_r;
    uint64_t A, R, B;
    int64_t *out;
    char *scratch; /* task_bytes for each task: window, best, at */
    size_t window_bytes, task_bytes;
    char *partial; /* split_r: each task's A * B extremes, then indices */
    uint32_t tasks;
};

/*
 * Column argmax/argmin with AVX-512, reading the input as it is stored:
 * float32, or bfloat16, float16 and fp8 widened exactly in registers
 * (the widenings of the column folds: F16C's for float16), or int32.
 * ARG_SWEEP rows at a time sweep the columns: one, in the order of
 * memory, each row's running extremes and indices loaded and stored from
 * L1 (by 8 rows, 8 streams a few KiB apart, the input comes from memory
 * slower); within a sweep each column takes a row's value when it is
 * better by ARG_BETTER_FLOAT's rule (a greater, or smaller, value, or the
 * first NaN, which then stays): _CMP_NLE_UQ (or NGE_UQ) is "greater (smaller)
 * or unordered", and the best so far must be ordered.  The same results
 * as SFX##_arg_columns, which is the path without AVX-512.
 */
#define ARG_SWEEP 1

#if NRTEMU_X86_CLONES
/* Rows [0, g) of n columns, `stride` elements apart, from row index r0 on,
 * into best[0..n) and at[0..n) (started by row 0 when `init`), 64
 * columns at a time. */
/* The columns [j, j + 64) of rows [r, r + gg), those of m, into best and
 * at (a step of ARG_FLOAT_SWEEP). */
#define ARG_SWEEP_STEP(LOAD, ismax, m)                                     \
    do {                                                                   \
        __m512 b[4];                                                       \
        __m512i a[4];                                                      \
        for (int q = 0; q < 4; q++) {                                      \
            const __mmask16 mq = (__mmask16)((m) >> (16 * q));             \
            b[q] = tail_load_ps(mq, best + j + 16 * q);                    \
            a[q] = tail_load_epi32(mq, at + j + 16 * q);                   \
        }                                                                  \
        for (uint64_t k = 0; k < gg; k++) {                                \
            const __m512i kk = _mm512_set1_epi32((int)(r0 + r + k));       \
            LOAD(x, (r + k) * stride + j, (m), c, v);                      \
            for (int q = 0; q < 4; q++) {                                  \
                __mmask16 take =                                           \
                    (ismax) ? _mm512_cmp_ps_mask(v[q], b[q], _CMP_NLE_UQ)  \
                            : _mm512_cmp_ps_mask(v[q], b[q], _CMP_NGE_UQ); \
                take &= _mm512_cmp_ps_mask(b[q], b[q], _CMP_ORD_Q);        \
                b[q] = _mm512_mask_mov_ps(b[q], take, v[q]);               \
                a[q] = _mm512_mask_mov_epi32(a[q], take, kk);              \
            }                                                              \
        }                                                                  \
        for (int q = 0; q < 4; q++) {                                      \
            const __mmask16 mq = (__mmask16)((m) >> (16 * q));             \
            tail_store_ps(best + j + 16 * q, mq, b[q]);                    \
            tail_store_epi32(at + j + 16 * q, mq, a[q]);                   \
        }                                                                  \
    } while (0)

/* (NAME##_dir is inlined for each direction, with the mask of the whole
 * steps a constant, as WIDE_FOLD_SWEEP's NAME##_op.) */
#define ARG_FLOAT_SWEEP(NAME, LOAD)                                        \
    WIDE static inline __attribute__((always_inline)) void NAME##_dir(     \
        const bool ismax, uint64_t r, uint32_t r0, uint64_t g, uint64_t n, \
        uint64_t stride, const void *x, uint32_t *at, float *best,         \
        const struct wide_tab *c)                                          \
    {                                                                      \
        __m512 v[4];                                                       \
        for (; r < g; r += ARG_SWEEP) {                                    \
            uint64_t gg = g - r < ARG_SWEEP ? g - r : ARG_SWEEP;           \
            uint64_t j = 0;                                                \
            for (; j + 64 <= n; j += 64) {                                 \
                ARG_SWEEP_STEP(LOAD, ismax, ~(__mmask64)0);                \
            }                                                              \
            if (j < n) {                                                   \
                ARG_SWEEP_STEP(LOAD, ismax, wide_mask(n - j));             \
            }                                                              \
        }                                                                  \
    }                                                                      \
    WIDE static void NAME(bool ismax, bool init, uint32_t r0, uint64_t g,  \
                          uint64_t n, uint64_t stride, const void *x,      \
                          uint32_t *at, float *best,                       \
                          const struct wide_ctx *ctx)                      \
    {                                                                      \
        const struct wide_tab tab = wide_tab_of(ctx);                      \
        const struct wide_tab *c = &tab;                                   \
        uint64_t r = 0;                                                    \
        __m512 v[4];                                                       \
        if (init) {                                                        \
            for (uint64_t j = 0; j < n; j += 64) {                         \
                const __mmask64 m = wide_mask(n - j);                      \
                LOAD(x, j, m, c, v);                                       \
                for (int q = 0; q < 4; q++) {                              \
                    const __mmask16 mq = (__mmask16)(m >> (16 * q));       \
                    tail_store_ps(best + j + 16 * q, mq, v[q]);            \
                    tail_store_epi32(at + j + 16 * q, mq,                  \
                                     _mm512_set1_epi32((int)r0));          \
                }                                                          \
            }                                                              \
            r = 1;                                                         \
        }                                                                  \
        if (ismax) {                                                       \
            NAME##_dir(true, r, r0, g, n, stride, x, at, best, c);         \
        } else {                                                           \
            NAME##_dir(false, r, r0, g, n, stride, x, at, best, c);        \
        }                                                                  \
    }

ARG_FLOAT_SWEEP(arg_sweep_f32, wide_load_f32)
ARG_FLOAT_SWEEP(arg_sweep_bf16, wide_load_bf16)
ARG_FLOAT_SWEEP(arg_sweep_f16, wide_load_f16)

WIDE static void
arg_sweep_i32(bool ismax, bool init, uint32_t r0, uint64_t g, uint64_t n,
              uint64_t stride, const void *x, uint32_t *at, int32_t *best)
{
    const int32_t *xi = x;
    uint64_t r = 0;

    if (init) {
        for (uint64_t j = 0; j < n; j += 16) {
            __mmask16 m =
                n - j >= 16 ? 0xffff : (__mmask16)((1u << (n - j)) - 1);
            tail_store_epi32(best + j, m, tail_load_epi32(m, xi + j));
            tail_store_epi32(at + j, m, _mm512_set1_epi32((int)r0));
        }
        r = 1;
    }
    for (; r < g; r += ARG_SWEEP) {
        uint64_t gg = g - r < ARG_SWEEP ? g - r : ARG_SWEEP;
        for (uint64_t j = 0; j < n; j += 16) {
            __mmask16 m =
                n - j >= 16 ? 0xffff : (__mmask16)((1u << (n - j)) - 1);
            __m512i b = tail_load_epi32(m, best + j);
            __m512i a = tail_load_epi32(m, at + j);
            for (uint64_t k = 0; k < gg; k++) {
                __m512i v = tail_load_epi32(m, xi + (r + k) * stride + j);
                __mmask16 take = ismax ? _mm512_cmpgt_epi32_mask(v, b)
                                       : _mm512_cmplt_epi32_mask(v, b);
                b = _mm512_mask_mov_epi32(b, take, v);
                a = _mm512_mask_mov_epi32(
                    a, take, _mm512_set1_epi32((int)(r0 + r + k)));
            }
            tail_store_epi32(best + j, m, b);
            tail_store_epi32(at + j, m, a);
        }
    }
}
#endif

/* Rows [r0, r0 + g) of w columns of j's input, from element `first` on,
 * into best and at by the sweeps above; false where they do not apply
 * (no AVX-512, other dtypes, row indices of more than 32 bits). */
static bool
arg_fast(const struct arg_job *j, uint64_t r0, uint64_t g, uint64_t w,
         uint64_t first, void *at, void *best)
{
#if NRTEMU_X86_CLONES
    const void *x =
        (const char *)j->in->data + first * nrtemu__dtype_size(j->in->dtype);

    const struct wide_ctx *c = wide_ctx_fp8(j->in->dtype);

    if (!cpu_has_wide() || j->R > UINT32_MAX) {
        return false;
    }
    if (j->kt == NRTEMU_DTYPE_INT32 && j->in->dtype == NRTEMU_DTYPE_INT32) {
        arg_sweep_i32(j->ismax, true, (uint32_t)r0, g, w, j->B, x, at, best);
        return true;
    }
    if (j->kt != NRTEMU_DTYPE_FLOAT32) {
        return false;
    }
    switch (j->in->dtype) {
    case NRTEMU_DTYPE_FLOAT32:
        arg_sweep_f32(j->ismax, true, (uint32_t)r0, g, w, j->B, x, at, best,
                      NULL);
        return true;
    case NRTEMU_DTYPE_BFLOAT16:
        arg_sweep_bf16(j->ismax, true, (uint32_t)r0, g, w, j->B, x, at, best,
                       NULL);
        return true;
    case NRTEMU_DTYPE_FLOAT16:
        arg_sweep_f16(j->ismax, true, (uint32_t)r0, g, w, j->B, x, at, best,
                      NULL);
        return true;
    default:
        if (c != NULL) {
            bytes_arg_columns(j->ismax, (uint32_t)r0, g, w, j->B, x, at, best,
                              narrow_fp8(j->in->dtype),
                              fp8_nan_above(j->in->dtype));
            return true;
        }
        return false;
    }
#else
    (void)j, (void)r0, (void)g, (void)w, (void)first, (void)at, (void)best;
    return false;
#endif
}

#define DEFINE_ARG(SFX, T, BETTER, IT, ONE_PASS)                              \
    NRTEMU_MULTIVERSION                                                       \
    static int64_t SFX##_arg_row2(bool ismax, uint64_t R, const T *x)         \
    {                                                                         \
        const T m = SFX##_row(ismax ? NRTEMU_OP_MAX : NRTEMU_OP_MIN, R, x);   \
        if (m != m) {                                                         \
            FIND_FIRST(T, v != v);                                            \
        }                                                                     \
        if (R <= SHORT_ROW) {                                                 \
            /* The least index holding m, branch-free: short rows would       \
             * spend more on the search's branches than on the reads. */      \
            IT first = (IT)R;                                                 \
            for (uint64_t i = 0; i < R; i++) {                                \
                const IT c = x[i] == m ? (IT)i : (IT)R;                       \
                first = c < first ? c : first;                                \
            }                                                                 \
            return (int64_t)first;                                            \
        }                                                                     \
        FIND_FIRST(T, v == m);                                                \
    }                                                                         \
    NRTEMU_MULTIVERSION                                                       \
    static int64_t SFX##_arg_row(bool ismax, uint64_t R, const T *x)          \
    {                                                                         \
        T best[ARG_LANES];                                                    \
        IT at[ARG_LANES];                                                     \
        int nan = 0;                                                          \
        uint64_t i = ARG_LANES;                                               \
        IT first;                                                             \
        T m;                                                                  \
        if (!(ONE_PASS) || R <= SHORT_ROW ||                                  \
            R - 1 > (uint64_t)((IT)-1 >> 1)) {                                \
            return SFX##_arg_row2(ismax, R, x);                               \
        }                                                                     \
        for (int l = 0; l < ARG_LANES; l++) {                                 \
            best[l] = x[l];                                                   \
            at[l] = (IT)l;                                                    \
            nan |= x[l] != x[l];                                              \
        }                                                                     \
        if (ismax) {                                                          \
            for (; i + ARG_LANES <= R; i += ARG_LANES) {                      \
                for (int l = 0; l < ARG_LANES; l++) {                         \
                    const T v = x[i + l];                                     \
                    const bool take = v > best[l];                            \
                    best[l] = take ? v : best[l];                             \
                    at[l] = take ? (IT)(i + (uint64_t)l) : at[l];             \
                    nan |= v != v;                                            \
                }                                                             \
            }                                                                 \
        } else {                                                              \
            for (; i + ARG_LANES <= R; i += ARG_LANES) {                      \
                for (int l = 0; l < ARG_LANES; l++) {                         \
                    const T v = x[i + l];                                     \
                    const bool take = v < best[l];                            \
                    best[l] = take ? v : best[l];                             \
                    at[l] = take ? (IT)(i + (uint64_t)l) : at[l];             \
                    nan |= v != v;                                            \
                }                                                             \
            }                                                                 \
        }                                                                     \
        /* The tail: element i + l goes to lane l, after its others. */       \
        for (int l = 0; i + (uint64_t)l < R; l++) {                           \
            const T v = x[i + (uint64_t)l];                                   \
            if (ismax ? v > best[l] : v < best[l]) {                          \
                best[l] = v;                                                  \
                at[l] = (IT)(i + (uint64_t)l);                                \
            }                                                                 \
            nan |= v != v;                                                    \
        }                                                                     \
        if (nan) {                                                            \
            return SFX##_arg_row2(ismax, R, x);                               \
        }                                                                     \
        /* The lanes merged branch-free: with ties (small integers) the       \
         * branches of an if per lane mispredicted about one lane in two,     \
         * a third of an int32 row's time. */                                 \
        m = best[0];                                                          \
        for (int l = 1; l < ARG_LANES; l++) {                                 \
            const T b = best[l];                                              \
            m = (ismax ? b > m : b < m) ? b : m;                              \
        }                                                                     \
        first = (IT)R;                                                        \
        for (int l = 0; l < ARG_LANES; l++) {                                 \
            const IT c = best[l] == m ? at[l] : (IT)R;                        \
            first = c < first ? c : first;                                    \
        }                                                                     \
        return (int64_t)first;                                                \
    }                                                                         \
    /* Rows r0.. r0 + g - 1 of n columns (x[r * stride + j]) into the         \
     * running extremes best[j] and their rows at[j], row after row (the      \
     * first NaN or the first extreme wins), row r0 starting them when        \
     * `init`; branch-free so that it vectorises, with indices as wide as     \
     * T (one vector type). */                                                \
    NRTEMU_MULTIVERSION                                                       \
    static void SFX##_arg_columns(bool ismax, bool init, uint64_t r0,         \
                                  uint64_t g, uint64_t n, uint64_t stride,    \
                                  const T *restrict x, IT *restrict at,       \
                                  T *restrict best)                           \
    {                                                                         \
        for (uint64_t r = 0; r < g; r++) {                                    \
            const T *restrict row = x + r * stride;                           \
            const IT k = (IT)(r0 + r);                                        \
            if (init && r == 0) {                                             \
                for (uint64_t j = 0; j < n; j++) {                            \
                    best[j] = row[j];                                         \
                    at[j] = k;                                                \
                }                                                             \
            } else if (ismax) {                                               \
                for (uint64_t j = 0; j < n; j++) {                            \
                    const T v = row[j], b = best[j];                          \
                    const bool take = BETTER(true, v, b);                     \
                    best[j] = take ? v : b;                                   \
                    at[j] = take ? k : at[j];                                 \
                }                                                             \
            } else {                                                          \
                for (uint64_t j = 0; j < n; j++) {                            \
                    const T v = row[j], b = best[j];                          \
                    const bool take = BETTER(false, v, b);                    \
                    best[j] = take ? v : b;                                   \
                    at[j] = take ? k : at[j];                                 \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }                                                                         \
    /* The partial results of `tasks` tasks (each over consecutive rows,      \
     * in order, n values and indices `pitch` apart) into out[0..n): a        \
     * later task's extreme replaces an earlier one's only when better by     \
     * the same rule, so the first extreme or NaN still wins. */              \
    NRTEMU_MULTIVERSION                                                       \
    static void SFX##_arg_merge(bool ismax, uint32_t tasks, uint64_t n,       \
                                uint64_t pitch, const T *restrict pbest,      \
                                const IT *restrict pat,                       \
                                int64_t *restrict out)                        \
    {                                                                         \
        for (uint64_t j = 0; j < n; j++) {                                    \
            T b = pbest[j];                                                   \
            IT k = pat[j];                                                    \
            for (uint32_t t = 1; t < tasks; t++) {                            \
                const T v = pbest[t * pitch + j];                             \
                const bool take = BETTER(ismax, v, b);                        \
                b = take ? v : b;                                             \
                k = take ? pat[t * pitch + j] : k;                            \
            }                                                                 \
            out[j] = (int64_t)k;                                              \
        }                                                                     \
    }                                                                         \
    /* Slabs [a0, a1), rows [r0, r1) and columns [b0, b1) of j's [A, R, B]:   \
     * a row at a time when B is 1, else COLUMN_CHUNK columns at a time,      \
     * their rows read by arg_fast, or in place, or converted into `win`      \
     * first.  The extremes go to out, or when the rows are split among       \
     * tasks, to this task's partial results (pbest, pat: A * B each). */     \
    static void SFX##_arg(const struct arg_job *j, uint64_t a0, uint64_t a1,  \
                          uint64_t r0, uint64_t r1, uint64_t b0, uint64_t b1, \
                          char *win, T *best, IT *at, T *pbest, IT *pat)      \
    {                                                                         \
        const T *data = j->in->data;                                          \
        const uint64_t R = j->R, B = j->B;                                    \
        for (uint64_t a = a0; a < a1; a++) {                                  \
            if (B == 1) {                                                     \
                const T *row = (const T *)(void *)win;                        \
                if (j->in_place) {                                            \
                    row = data + a * R;                                       \
                } else {                                                      \
                    load_run(j->in, j->kt, j->kt, a *R, R, win);              \
                }                                                             \
                j->out[a] = SFX##_arg_row(j->ismax, R, row);                  \
                continue;                                                     \
            }                                                                 \
            for (uint64_t b = b0; b < b1; b += COLUMN_CHUNK) {                \
                uint64_t w = b1 - b < COLUMN_CHUNK ? b1 - b : COLUMN_CHUNK;   \
                uint64_t first = (a * R + r0) * B + b, g = WINDOW_ELEMS / w;  \
                if (arg_fast(j, r0, r1 - r0, w, first, at, best)) {           \
                } else if (j->in_place) {                                     \
                    SFX##_arg_columns(j->ismax, true, r0, r1 - r0, w, B,      \
                                      data + first, at, best);                \
                } else {                                                      \
                    for (uint64_t r = r0; r < r1; r += g) {                   \
                        uint64_t gg = r1 - r < g ? r1 - r : g;                \
                        for (uint64_t k = 0; k < gg; k++) {                   \
                            load_run(j->in, j->kt, j->kt,                     \
                                     first + (r - r0 + k) * B, w,             \
                                     win + k * w * sizeof(T));                \
                        }                                                     \
                        SFX##_arg_columns(j->ismax, r == r0, r, gg, w, w,     \
                                          (const T *)(void *)win, at, best);  \
                    }                                                         \
                }                                                             \
                if (pbest != NULL) {                                          \
                    memcpy(pbest + a * B + b, best, w * sizeof(T));           \
                    memcpy(pat + a * B + b, at, w * sizeof(IT));              \
                } else {                                                      \
                    int64_t *o = j->out + a * B + b;                          \
                    for (uint64_t k = 0; k < w; k++) {                        \
                        o[k] = (int64_t)at[k];                                \
                    }                                                         \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }

DEFINE_ARG(f32, float, ARG_BETTER_FLOAT, uint32_t, 0)
DEFINE_ARG(f64, double, ARG_BETTER_FLOAT, uint64_t, 0)
DEFINE_ARG(i64, int64_t, ARG_BETTER_INT, uint64_t, 1)
DEFINE_ARG(u64, uint64_t, ARG_BETTER_INT, uint64_t, 1)
DEFINE_ARG(i32, int32_t, ARG_BETTER_INT, uint32_t, 1)

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

/*
 * The first address from p on whose offset within a 4 KiB page is `off`
 * past ref's.  A load and an older store to the same offset within a page
 * stall each other (4 KiB aliasing): with the running extremes in
 * scratch at the page offset of the input's rows, and rows of a multiple
 * of 4 KiB, every row would (an argmax over the columns measured several times
 * slower).  So the rows, the window, and the extremes and their indices sit
 * 1 KiB or more apart within a page.
 */
static char *
page_offset_after(char *p, const void *ref, uintptr_t off)
{
    uintptr_t want = ((uintptr_t)ref + off) & 4095;

    return p + ((want - ((uintptr_t)p & 4095)) & 4095);
}

static void
arg_task(void *arg, uint32_t t)
{
    const struct arg_job *j = arg;
    size_t ks = nrtemu__dtype_size(j->kt);
    char *base = j->scratch + (size_t)t * j->task_bytes;
    char *win = page_offset_after(base, j->in->data, 2048);
    char *best = page_offset_after(win + j->window_bytes, j->in->data, 1024);
    char *at = page_offset_after(best + COLUMN_CHUNK * ks, j->in->data, 3072);
    uint64_t a0 = 0, a1 = j->A, r0 = 0, r1 = j->R, b0 = 0, b1 = j->B;
    char *pbest = NULL, *pat = NULL;

    if (j->split_r) {
        task_share(j->R, j->tasks, t, 1, &r0, &r1);
        pbest = j->partial + (size_t)t * j->A * j->B * ks;
        pat = pbest + (size_t)j->tasks * j->A * j->B * ks;
        if (r0 == r1) {
            return; /* (no rows: the merge leaves this task out) */
        }
    } else if (j->split_a) {
        task_share(j->A, j->tasks, t, 1, &a0, &a1);
    } else {
        task_share(j->B, j->tasks, t, 16, &b0, &b1);
    }
#if NRTEMU_X86_CLONES
    if (j->B == 1 && j->kt == NRTEMU_DTYPE_FLOAT32 && is_fp8(j->in->dtype) &&
        cpu_has_wide()) {
        /* rows of fp8 by their codes (bytes_arg_row) */
        const uint8_t *x = j->in->data, na = fp8_nan_above(j->in->dtype);
        for (uint64_t a = a0; a < a1; a++) {
            j->out[a] =
                (int64_t)bytes_arg_row(j->ismax, j->R, x + a * j->R, na);
        }
        return;
    }
    if (j->B == 1 && j->kt == NRTEMU_DTYPE_FLOAT32 &&
        (j->in->dtype == NRTEMU_DTYPE_FLOAT16 ||
         j->in->dtype == NRTEMU_DTYPE_BFLOAT16) &&
        cpu_has_wide()) {
        /* rows of float16/bfloat16 by their codes (half_arg_row) */
        const uint16_t *x = j->in->data;
        const uint16_t inf =
            j->in->dtype == NRTEMU_DTYPE_FLOAT16 ? 0x7c00 : 0x7f80;
        for (uint64_t a = a0; a < a1; a++) {
            j->out[a] =
                (int64_t)half_arg_row(j->ismax, j->R, x + a * j->R, inf);
        }
        return;
    }
#endif
    switch (j->kt) {
    case NRTEMU_DTYPE_FLOAT32:
        f32_arg(j, a0, a1, r0, r1, b0, b1, win, (float *)(void *)best,
                (uint32_t *)(void *)at, (float *)(void *)pbest,
                (uint32_t *)(void *)pat);
        break;
    case NRTEMU_DTYPE_FLOAT64:
        f64_arg(j, a0, a1, r0, r1, b0, b1, win, (double *)(void *)best,
                (uint64_t *)(void *)at, (double *)(void *)pbest,
                (uint64_t *)(void *)pat);
        break;
    case NRTEMU_DTYPE_INT64:
        i64_arg(j, a0, a1, r0, r1, b0, b1, win, (int64_t *)(void *)best,
                (uint64_t *)(void *)at, (int64_t *)(void *)pbest,
                (uint64_t *)(void *)pat);
        break;
    case NRTEMU_DTYPE_INT32:
        i32_arg(j, a0, a1, r0, r1, b0, b1, win, (int32_t *)(void *)best,
                (uint32_t *)(void *)at, (int32_t *)(void *)pbest,
                (uint32_t *)(void *)pat);
        break;
    default:
        u64_arg(j, a0, a1, r0, r1, b0, b1, win, (uint64_t *)(void *)best,
                (uint64_t *)(void *)at, (uint64_t *)(void *)pbest,
                (uint64_t *)(void *)pat);
        break;
    }
}

/* The split_r tasks' extremes into out (tasks with no rows left out). */
static void
arg_merge(const struct arg_job *j)
{
    size_t ks = nrtemu__dtype_size(j->kt);
    uint64_t n = j->A * j->B;
    const char *pbest = j->partial, *pat = j->partial + j->tasks * n * ks;
    uint32_t tasks = 0;

    for (uint32_t t = 0; t < j->tasks; t++) {
        uint64_t lo, hi;
        task_share(j->R, j->tasks, t, 1, &lo, &hi);
        tasks += lo < hi;
    }
    switch (j->kt) {
    case NRTEMU_DTYPE_FLOAT32:
        f32_arg_merge(j->ismax, tasks, n, n,
                      (const float *)(const void *)pbest,
                      (const uint32_t *)(const void *)pat, j->out);
        break;
    case NRTEMU_DTYPE_FLOAT64:
        f64_arg_merge(j->ismax, tasks, n, n,
                      (const double *)(const void *)pbest,
                      (const uint64_t *)(const void *)pat, j->out);
        break;
    case NRTEMU_DTYPE_INT64:
        i64_arg_merge(j->ismax, tasks, n, n,
                      (const int64_t *)(const void *)pbest,
                      (const uint64_t *)(const void *)pat, j->out);
        break;
    case NRTEMU_DTYPE_INT32:
        i32_arg_merge(j->ismax, tasks, n, n,
                      (const int32_t *)(const void *)pbest,
                      (const uint32_t *)(const void *)pat, j->out);
        break;
    default:
        u64_arg_merge(j->ismax, tasks, n, n,
                      (const uint64_t *)(const void *)pbest,
                      (const uint64_t *)(const void *)pat, j->out);
        break;
    }
}

NRT_STATUS
nrtemu__kernel_argreduce(enum nrtemu_op op, const struct nrtemu_array *out,
                         const struct nrtemu_array *in, uint32_t axis,
                         struct nrtemu_scratch *s)
{
    /* int32 is compared in place, not widened (the same order); widening
     * is exact, so every kt orders the values as the input does. */
    enum nrtemu_dtype kt = in->dtype == NRTEMU_DTYPE_INT32
                               ? NRTEMU_DTYPE_INT32
                               : nrtemu__kernel_dtype(in->dtype);
    uint64_t A, R, B, in_bytes;
    size_t ks, partial_bytes = 0;
    uint32_t threads;
    char *scratch;
    struct arg_job j = {.in = in, .ismax = op == NRTEMU_OP_ARGMAX};

    split_axis(in, axis, &A, &R, &B);
    if (A * B == 0 || R == 0) {
        return NRT_SUCCESS; /* R == 0 was rejected at load */
    }
    if (R > UINT32_MAX && kt == NRTEMU_DTYPE_FLOAT32) {
        kt = NRTEMU_DTYPE_FLOAT64; /* row indices wider than 32 bits */
    } else if (R > UINT32_MAX && kt == NRTEMU_DTYPE_INT32) {
        kt = NRTEMU_DTYPE_INT64;
    }
    ks = nrtemu__dtype_size(kt);
    in_bytes = A * R * B * nrtemu__dtype_size(in->dtype);
    threads = in_bytes >= PARALLEL_BYTES ? nrtemu__pool_threads() : 1;
    j.kt = kt;
    j.in_place = in->dtype == kt;
    j.A = A;
    j.R = R;
    j.B = B;
    j.out = out->data;
    j.split_a = B == 1 || A >= threads;
    j.tasks = task_count(threads, j.split_a ? A : (B + 15) / 16);
    if (!j.split_a && R >= 2 * SPLIT_ROWS_MIN &&
        A * B * 2 * ks * threads * TASKS_PER_THREAD <= SPLIT_PARTIAL_MAX) {
        /* Columns: tasks of consecutive rows read the input in order (a
         * task of columns reads short runs far apart). */
        j.split_r = true;
        j.tasks = rows_task_count(threads, R, in_bytes);
        partial_bytes = (j.tasks * A * B * 2 * ks + 63) & ~(size_t)63;
    }
    j.window_bytes =
        j.in_place ? 0 : ((B == 1 ? R : WINDOW_ELEMS) * ks + 63) & ~(size_t)63;
    /* window, best (COLUMN_CHUNK of kt) and at (COLUMN_CHUNK indices of at
     * most 8 bytes) */
    j.task_bytes = j.window_bytes + COLUMN_CHUNK * (ks + 8) + 3 * 4096;
    scratch =
        nrtemu__scratch_get(s, partial_bytes + j.tasks * j.task_bytes + 64);
    if (scratch == NULL) {
        return NRT_RESOURCE;
    }
    j.partial = scratch;
    j.scratch = scratch + partial_bytes;
    if (j.tasks > 1) {
        nrtemu__pool_run(arg_task, &j, j.tasks);
    } else {
        arg_task(&j, 0);
    }
    if (j.split_r) {
        arg_merge(&j);
    }
    return NRT_SUCCESS;
}

/* p[i] = e^(p[i] - M(i)) over n elements, M(i) the maximum to take off:
 * float32 by kmath_exp in the same loop (vectorised in each clone),
 * float64 by kernel_math_vec.c's loop once M is taken off (libm's exp,
 * one element at a time, would be nearly all of an int32 softmax's
 * time). */
#define SOFTMAX_EXP_f32(p, n, M)                \
    for (uint64_t i_ = 0; i_ < (n); i_++) {     \
        (p)[i_] = kmath_exp((p)[i_] - (M(i_))); \
    }
#define SOFTMAX_EXP_f64(p, n, M)                                             \
    do {                                                                     \
        for (uint64_t i_ = 0; i_ < (n); i_++) {                              \
            (p)[i_] = (p)[i_] - (M(i_));                                     \
        }                                                                    \
        (void)nrtemu__vmath_f64_unary(NRTEMU_OP_EXP, (size_t)(n), (p), (p)); \
    } while (0)
#define SOFTMAX_ONE(i) m
#define SOFTMAX_EACH(i) m[i]

/* softmax of one [R, B] slab, in place in y (already holding x). */
#define DEFINE_SOFTMAX(SFX, T)                                       \
    NRTEMU_MULTIVERSION                                              \
    static void SFX##_softmax(uint64_t R, uint64_t B, T *y, T *work) \
    {                                                                \
        if (B == 1) {                                                \
            T m = SFX##_row(NRTEMU_OP_MAX, R, y), sum;               \
            SOFTMAX_EXP_##SFX(y, R, SOFTMAX_ONE);                    \
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
            SOFTMAX_EXP_##SFX(row, B, SOFTMAX_EACH);                 \
            SFX##_column(NRTEMU_OP_SUM, B, row, sum);                \
        }                                                            \
        for (uint64_t r = 0; r < R; r++) {                           \
            T *row = y + r * B;                                      \
            for (uint64_t j = 0; j < B; j++) {                       \
                row[j] = row[j] / sum[j];                            \
            }                                                        \
        }                                                            \
    }

DEFINE_SOFTMAX(f32, float)
DEFINE_SOFTMAX(f64, double)

/* The slabs of a softmax shared among the pool's tasks (slabs are
 * independent): each copies its slabs of x into y, unless x is y or
 * overlaps it (then copied beforehand), and has 2 B elements of work. */
struct softmax_job {
    enum nrtemu_dtype kt;
    uint64_t A, R, B;
    const char *x; /* NULL: y already holds it */
    char *y, *work;
    uint32_t tasks;
};

static void
softmax_task(void *arg, uint32_t t)
{
    const struct softmax_job *j = arg;
    size_t ks = nrtemu__dtype_size(j->kt), slab = j->R * j->B * ks;
    char *work = j->work + (size_t)t * 2 * j->B * ks;
    uint64_t a0, a1;

    task_share(j->A, j->tasks, t, 1, &a0, &a1);
    if (j->x != NULL && a1 > a0) {
        memcpy(j->y + a0 * slab, j->x + a0 * slab, (a1 - a0) * slab);
    }
    for (uint64_t a = a0; a < a1; a++) {
        char *s = j->y + a * slab;
        if (j->kt == NRTEMU_DTYPE_FLOAT32) {
            f32_softmax(j->R, j->B, (float *)(void *)s, (float *)(void *)work);
        } else {
            f64_softmax(j->R, j->B, (double *)(void *)s,
                        (double *)(void *)work);
        }
    }
}

NRT_STATUS
nrtemu__kernel_softmax(enum nrtemu_dtype compute,
                       const struct nrtemu_array *out,
                       const struct nrtemu_array *in, uint32_t axis,
                       struct nrtemu_scratch *s)
{
    enum nrtemu_dtype kt = nrtemu__kernel_dtype(compute);
    uint64_t count = nrtemu__array_count(in);
    size_t kt_size = nrtemu__dtype_size(kt);
    bool y_is_out =
        out->dtype == kt && (compute == kt || compute == out->dtype);
    size_t y_bytes = y_is_out ? 0 : count * kt_size;
    uint32_t threads =
        count * kt_size >= PARALLEL_BYTES ? nrtemu__pool_threads() : 1;
    struct softmax_job j = {.kt = kt};
    char *scratch;
    const char *x;
    uintptr_t xs, ys;

    split_axis(in, axis, &j.A, &j.R, &j.B);
    if (count == 0) {
        return NRT_SUCCESS;
    }
    j.tasks = task_count(threads, j.A);
    scratch = nrtemu__scratch_get(
        s, y_bytes + (size_t)j.tasks * 2 * j.B * kt_size + 64);
    if (scratch == NULL) {
        return NRT_RESOURCE;
    }
    j.y = y_is_out ? out->data : scratch;
    j.work = scratch + ((y_bytes + 63) & ~(size_t)63);
    x = load_whole(in, compute, kt, j.y);
    xs = (uintptr_t)x;
    ys = (uintptr_t)j.y;
    if (x != j.y && xs < ys + count * kt_size && ys < xs + count * kt_size) {
        memmove(j.y, x, count * kt_size); /* overlapping: in place first */
    } else if (x != j.y) {
        j.x = x;
    }
    if (j.tasks > 1) {
        nrtemu__pool_run(softmax_task, &j, j.tasks);
    } else {
        softmax_task(&j, 0);
    }
    if (!y_is_out) {
        nrtemu__kernel_store(out, compute, kt, j.y);
    }
    return NRT_SUCCESS;
}
