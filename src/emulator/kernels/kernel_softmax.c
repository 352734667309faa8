/*
 * kernel_softmax.c - softmax along one axis: e^(x - max) / sum, the
 * maximum and the sum folded as the reductions fold them (kernel_reduce.h:
 * a row pairwise, columns row after row), in float32 or float64.
 */
#include <math.h>
#include <string.h>

#include "kernels/kernel.h"
#include "kernels/kernel_math.h"
#include "kernels/kernel_math_vec.h"
#include "kernels/kernel_reduce.h"
#include "kernels/pool.h"
#include "kernels/simd.h"

NRTEMU_RULES_BEGIN
DEFINE_FLOAT_ROWS(f32, float)
DEFINE_FLOAT_ROWS(f64, double)
NRTEMU_RULES_END

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
