/*
 * kernel_argreduce.c - argmax and argmin: the driver and the portable
 * loops (the AVX-512 paths are kernel_argreduce_x86.c's).
 *
 * The input is seen as [A, R, B] around the axis (split_axis): R rows of
 * B columns, A times.  Each output element is the index of the first
 * extreme of its R elements, or of the first NaN, -0 and +0 equal, as
 * NumPy gives.  The work is shared among the pool's tasks as a
 * reduction's is (kernel_reduce.c), by A, by B, or by rows of columns
 * (split_r), whose tasks' extremes then merge in task order, which keeps
 * the first extreme and the first NaN.
 */
#include <string.h>

#include "kernels/kernel.h"
#include "kernels/kernel_reduce.h"
#include "kernels/pool.h"
#include "kernels/simd.h"

/* The rows' extremes (SFX##_arg_row2), folded as the reductions fold them. */
NRTEMU_RULES_BEGIN
DEFINE_FLOAT_ROW(f32, float)
DEFINE_FLOAT_ROW(f64, double)
DEFINE_INT_ROW(i64, int64_t, INT64_MIN, INT64_MAX)
DEFINE_INT_ROW(u64, uint64_t, 0, UINT64_MAX)
DEFINE_INT_ROW(i32, int32_t, INT32_MIN, INT32_MAX)
NRTEMU_RULES_END

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

/* Rows [r0, r0 + g) of w columns of j's input, from element `first` on,
 * into best and at by the AVX-512 sweeps (kernel_argreduce_x86.c); false
 * where they do not apply. */
static bool
arg_fast(const struct arg_job *j, uint64_t r0, uint64_t g, uint64_t w,
         uint64_t first, void *at, void *best)
{
    const void *x =
        (const char *)j->in->data + first * nrtemu__dtype_size(j->in->dtype);

    return nrtemu__arg_x86_columns(j->ismax, j->kt, j->in->dtype, j->R, j->B,
                                   r0, g, w, x, at, best);
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
                    nrtemu__reduce_load_run(j->in, j->kt, j->kt, a *R, R,     \
                                            win);                             \
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
                            nrtemu__reduce_load_run(j->in, j->kt, j->kt,      \
                                                    first + (r - r0 + k) * B, \
                                                    w,                        \
                                                    win + k * w * sizeof(T)); \
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
    if (j->B == 1 && nrtemu__arg_x86_rows(j->ismax, j->kt, j->in->dtype, j->R,
                                          a0, a1, j->in->data, j->out)) {
        return; /* rows of narrow floats by their codes */
    }
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
