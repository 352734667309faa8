/*
 * kernel_reduce.h - what the files of the reductions share (internal to
 * kernel_reduce.c, kernel_argreduce.c, kernel_softmax.c and their x86
 * paths, kernel_reduce_x86.c and kernel_argreduce_x86.c): the folds of
 * rows and columns, the exact widenings of narrow floats in registers,
 * how work is shared among the pool's tasks, and the x86 entry points.
 *
 * The folds are macros that each file instantiates for the types it
 * needs (DEFINE_FLOAT_ROWS and the like), not functions of one file: a
 * multiversioned loop calls the matching clone of a multiversioned
 * function of its own file directly (and may inline it), where a call to
 * another file's would go through that function's ifunc; and an ifunc
 * would be exported from the library whatever its visibility.
 *
 * Their rule switches (how each op folds) have no default: the reductions'
 * rows by hand (a mean folds as its sum), every other op through
 * NRTEMU_OP_CASES_OUTSIDE(REDUCE) (kernel.h), which never comes to them and
 * goes with the sum.  Each file instantiates them between
 * NRTEMU_RULES_BEGIN and NRTEMU_RULES_END, so a reduce row added without
 * its rule does not build.
 */
#ifndef NRTEMU_KERNEL_REDUCE_H
#define NRTEMU_KERNEL_REDUCE_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/convert.h"
#include "kernels/kernel.h"
#include "kernels/simd.h"

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

static inline bool
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
static inline struct narrow
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
        case NRTEMU_OP_SUM:                                                 \
        case NRTEMU_OP_MEAN:                                                \
            NRTEMU_OP_CASES_OUTSIDE(REDUCE)                                 \
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

#define DEFINE_FLOAT_ROW(SFX, T)                                \
    NRTEMU_MULTIVERSION                                         \
    static T SFX##_sum_leaf(size_t n, const T *x)               \
    {                                                           \
        T result;                                               \
        ROW_FOLD(T, (T)0, ADD_);                                \
        return result;                                          \
    }                                                           \
    static T SFX##_sum_pairwise(size_t n, const T *x)           \
    {                                                           \
        size_t half;                                            \
        if (n <= PAIRWISE_LEAF) {                               \
            return SFX##_sum_leaf(n, x);                        \
        }                                                       \
        half = (n / 2 + LANES - 1) / LANES * LANES;             \
        return SFX##_sum_pairwise(half, x) +                    \
               SFX##_sum_pairwise(n - half, x + half);          \
    }                                                           \
    NRTEMU_MULTIVERSION                                         \
    static T SFX##_row(enum nrtemu_op op, size_t n, const T *x) \
    {                                                           \
        T result;                                               \
        bool exact;                                             \
        switch (op) {                                           \
        case NRTEMU_OP_MAX:                                     \
            EXTREME_FOLD(T, -(T)INFINITY, FAST_MAX);            \
            if (!exact) {                                       \
                ROW_FOLD(T, -(T)INFINITY, NRTEMU_FLOAT_MAX);    \
            }                                                   \
            return result;                                      \
        case NRTEMU_OP_MIN:                                     \
            EXTREME_FOLD(T, (T)INFINITY, FAST_MIN);             \
            if (!exact) {                                       \
                ROW_FOLD(T, (T)INFINITY, NRTEMU_FLOAT_MIN);     \
            }                                                   \
            return result;                                      \
        case NRTEMU_OP_PROD:                                    \
            ROW_FOLD(T, (T)1, MUL_);                            \
            return result;                                      \
        case NRTEMU_OP_SUM:                                     \
        case NRTEMU_OP_MEAN:                                    \
            NRTEMU_OP_CASES_OUTSIDE(REDUCE)                     \
            break;                                              \
        }                                                       \
        return SFX##_sum_pairwise(n, x);                        \
    }

/* A float type's rows and columns: what the reductions and softmax fold. */
#define DEFINE_FLOAT_ROWS(SFX, T)                                            \
    DEFINE_FLOAT_ROW(SFX, T)                                                 \
    DEFINE_COLUMNS(SFX, T, T, LOAD_SAME, NRTEMU_FLOAT_MAX, NRTEMU_FLOAT_MIN, \
                   ADD_, MUL_)                                               \
    DEFINE_COLUMN(SFX, T)

#define DEFINE_INT_ROW(SFX, T, LOWEST, HIGHEST)                 \
    NRTEMU_MULTIVERSION                                         \
    static T SFX##_row(enum nrtemu_op op, size_t n, const T *x) \
    {                                                           \
        T result;                                               \
        switch (op) {                                           \
        case NRTEMU_OP_MAX:                                     \
            ROW_FOLD(T, LOWEST, NRTEMU_INT_MAX);                \
            return result;                                      \
        case NRTEMU_OP_MIN:                                     \
            ROW_FOLD(T, HIGHEST, NRTEMU_INT_MIN);               \
            return result;                                      \
        case NRTEMU_OP_PROD: {                                  \
            uint64_t p = 1;                                     \
            for (size_t i = 0; i < n; i++) {                    \
                p *= (uint64_t)x[i];                            \
            }                                                   \
            return (T)p;                                        \
        }                                                       \
        case NRTEMU_OP_SUM:                                     \
        case NRTEMU_OP_MEAN:                                    \
            NRTEMU_OP_CASES_OUTSIDE(REDUCE)                     \
            break;                                              \
        }                                                       \
        uint64_t s = 0;                                         \
        for (size_t i = 0; i < n; i++) {                        \
            s += (uint64_t)x[i];                                \
        }                                                       \
        return (T)s;                                            \
    }

#define DEFINE_INT_ROWS(SFX, T, LOWEST, HIGHEST)                         \
    DEFINE_INT_ROW(SFX, T, LOWEST, HIGHEST)                              \
    DEFINE_COLUMNS(SFX, T, T, LOAD_SAME, NRTEMU_INT_MAX, NRTEMU_INT_MIN, \
                   ADD_WRAP, MUL_WRAP)                                   \
    DEFINE_COLUMN(SFX, T)

/* `in` as an array of `kt`: in place when it already is one and the
 * compute dtype does not round it, else converted into buf. */
static inline const void *
load_whole(const struct nrtemu_array *in, enum nrtemu_dtype compute,
           enum nrtemu_dtype kt, void *buf)
{
    if (in->dtype == kt && (compute == kt || compute == in->dtype)) {
        return in->data;
    }
    return nrtemu__kernel_load(in, compute, kt, buf);
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

/*
 * Tasks for `units` units of work on `threads` threads: a few per thread
 * when there is work enough, so that a thread that the machine's other
 * processes hold up leaves its share to the others (the pool hands out
 * tasks one at a time); 1 on one thread.
 */
static inline uint32_t
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

static inline uint32_t
rows_task_count(uint32_t threads, uint64_t R, uint64_t in_bytes)
{
    uint32_t tasks = task_count(threads, R / SPLIT_ROWS_MIN);
    uint64_t most = in_bytes / SPLIT_TASK_BYTES;

    most = most > threads ? most : threads;
    return tasks < most ? tasks : (uint32_t)most;
}

/* Task t's share [*lo, *hi) of `total` items, in multiples of `align`. */
static inline void
task_share(uint64_t total, uint32_t tasks, uint32_t t, uint64_t align,
           uint64_t *lo, uint64_t *hi)
{
    uint64_t per = (total + tasks - 1) / tasks;

    per = (per + align - 1) / align * align;
    *lo = per * t < total ? per * t : total;
    *hi = per * (t + 1) < total ? per * (t + 1) : total;
}

/* in = [A, R, B] around `axis`. */
static inline void
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

/* The rows of a reduction of fp8 to float32 folded in registers
 * (nrtemu__reduce_x86_rows_fold), and what they need, set up once a task. */
struct fp8_rows {
    enum nrtemu_op op;
    const struct wide_ctx *ctx;
    struct narrow p;
    uint8_t nan_above;
};

/*
 * The x86 paths (kernel_reduce_x86.c, kernel_argreduce_x86.c): AVX-512
 * (with VBMI) loops that widen narrow floats in registers, and F16C's fp8
 * widening.  Each answers false (or does nothing) where the CPU has no
 * such path or the pair of types has none, and the caller goes on with
 * its portable loop; without x86 clones they are these stubs.
 */
#if NRTEMU_X86_CLONES
/* Fold g rows of n elements of src, `stride` apart, into acc[0..n) of kt
 * (fold_columns_from's contract). */
bool nrtemu__reduce_x86_fold(enum nrtemu_op op, enum nrtemu_dtype kt,
                             enum nrtemu_dtype src, size_t n, size_t g,
                             size_t stride, const void *x, void *acc);
/* fp8 codes s[0..n) of format dt to float32 d[0..n): the count done, from
 * the start (n, or whole vector steps, or 0). */
size_t nrtemu__reduce_x86_widen_fp8(float *d, const uint8_t *s, size_t n,
                                    enum nrtemu_dtype dt);
/* Whether fp8 rows of src reduced by op to kt with compute are folded in
 * registers (nrtemu__reduce_x86_rows_fold), and f set up for it. */
bool nrtemu__reduce_x86_rows_init(struct fp8_rows *f, enum nrtemu_op op,
                                  enum nrtemu_dtype kt,
                                  enum nrtemu_dtype compute,
                                  enum nrtemu_dtype src);
/* A row of n fp8 codes folded into *acc as fold_row after load_run folds
 * it; false when that leaves the result open, for fold_row to do. */
bool nrtemu__reduce_x86_rows_fold(const struct fp8_rows *f, size_t n,
                                  const void *x, float *acc);
/* Whether fp8 column sums of src into kt may be split by rows (exact_sum),
 * and rows [0, g) of n such columns added into acc, the greatest
 * magnitude << 1 into *mag. */
bool nrtemu__reduce_x86_exact_sum_ready(enum nrtemu_dtype kt,
                                        enum nrtemu_dtype src);
void nrtemu__reduce_x86_exact_sum_rows(enum nrtemu_dtype src, uint64_t n,
                                       uint64_t g, uint64_t stride,
                                       const void *x, float *acc,
                                       uint8_t *mag);
/* argmax/argmin of rows [r0, r0 + g) of w columns of src, `stride`
 * elements apart, from x on, into best[0..w) (of kt) and at[0..w) (32-bit
 * row indices), R the rows of the whole axis. */
bool nrtemu__arg_x86_columns(bool ismax, enum nrtemu_dtype kt,
                             enum nrtemu_dtype src, uint64_t R,
                             uint64_t stride, uint64_t r0, uint64_t g,
                             uint64_t w, const void *x, void *at, void *best);
/* argmax/argmin of rows [a0, a1) of R elements of src (kt their kernel
 * type), from x on, into out[a0..a1). */
bool nrtemu__arg_x86_rows(bool ismax, enum nrtemu_dtype kt,
                          enum nrtemu_dtype src, uint64_t R, uint64_t a0,
                          uint64_t a1, const void *x, int64_t *out);
#else
static inline bool
nrtemu__reduce_x86_fold(enum nrtemu_op op, enum nrtemu_dtype kt,
                        enum nrtemu_dtype src, size_t n, size_t g,
                        size_t stride, const void *x, void *acc)
{
    (void)op, (void)kt, (void)src, (void)n, (void)g, (void)stride, (void)x;
    (void)acc;
    return false;
}

static inline size_t
nrtemu__reduce_x86_widen_fp8(float *d, const uint8_t *s, size_t n,
                             enum nrtemu_dtype dt)
{
    (void)d, (void)s, (void)n, (void)dt;
    return 0;
}

static inline bool
nrtemu__reduce_x86_rows_init(struct fp8_rows *f, enum nrtemu_op op,
                             enum nrtemu_dtype kt, enum nrtemu_dtype compute,
                             enum nrtemu_dtype src)
{
    (void)f, (void)op, (void)kt, (void)compute, (void)src;
    return false;
}

static inline bool
nrtemu__reduce_x86_rows_fold(const struct fp8_rows *f, size_t n, const void *x,
                             float *acc)
{
    (void)f, (void)n, (void)x, (void)acc;
    return false;
}

static inline bool
nrtemu__reduce_x86_exact_sum_ready(enum nrtemu_dtype kt, enum nrtemu_dtype src)
{
    (void)kt, (void)src;
    return false;
}

static inline void
nrtemu__reduce_x86_exact_sum_rows(enum nrtemu_dtype src, uint64_t n,
                                  uint64_t g, uint64_t stride, const void *x,
                                  float *acc, uint8_t *mag)
{
    (void)src, (void)n, (void)g, (void)stride, (void)x, (void)acc, (void)mag;
}

static inline bool
nrtemu__arg_x86_columns(bool ismax, enum nrtemu_dtype kt,
                        enum nrtemu_dtype src, uint64_t R, uint64_t stride,
                        uint64_t r0, uint64_t g, uint64_t w, const void *x,
                        void *at, void *best)
{
    (void)ismax, (void)kt, (void)src, (void)R, (void)stride, (void)r0;
    (void)g, (void)w, (void)x, (void)at, (void)best;
    return false;
}

static inline bool
nrtemu__arg_x86_rows(bool ismax, enum nrtemu_dtype kt, enum nrtemu_dtype src,
                     uint64_t R, uint64_t a0, uint64_t a1, const void *x,
                     int64_t *out)
{
    (void)ismax, (void)kt, (void)src, (void)R, (void)a0, (void)a1, (void)x;
    (void)out;
    return false;
}
#endif

/* Elements [start, start + n) of `in` as `kt` (the kernel dtype of
 * `compute`, or a wider one) into buf (kernel_reduce.c). */
void nrtemu__reduce_load_run(const struct nrtemu_array *in,
                             enum nrtemu_dtype compute, enum nrtemu_dtype kt,
                             uint64_t start, size_t n, void *buf);

#endif /* NRTEMU_KERNEL_REDUCE_H */
