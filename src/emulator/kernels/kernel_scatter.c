/*
 * kernel_scatter.c - scatter: out = operand, then each update combined
 * into the element its index names (docs/neff-emulator-format.md §3).
 *
 * Updates apply one at a time, in order, each result stored (rounded or
 * wrapped to the out dtype) before the next: so repeated indices
 * accumulate as XLA's sequential semantics say, and the last assignment
 * wins.  Indices outside the out array are skipped.  The common dtypes
 * combine in their own C type; the others (bool, 16- and 8-bit floats)
 * through the kernel type of the dtype, one element at a time.
 */
#include <string.h>

#include "kernels/convert.h"
#include "kernels/kernel.h"
#include "kernels/simd.h"

/* Indices converted per block. */
#define BLOCK 1024

/*
 * One block of updates for a native type T; U is the unsigned type of
 * the same width (integer add and mul wrap through it), MAX/MIN the
 * comparisons.
 */
#define DEFINE_SCATTER(SFX, T, U, MAX, MIN)                                   \
    static void scatter_##SFX(enum nrtemu_scatter_mode mode, T *o,            \
                              uint64_t count, const int64_t *idx, const T *u, \
                              size_t n)                                       \
    {                                                                         \
        for (size_t i = 0; i < n; i++) {                                      \
            int64_t k = idx[i];                                               \
            if (k < 0 || (uint64_t)k >= count) {                              \
                continue;                                                     \
            }                                                                 \
            T x = o[k], y = u[i];                                             \
            switch (mode) {                                                   \
            case NRTEMU_SCATTER_ASSIGN:                                       \
                x = y;                                                        \
                break;                                                        \
            case NRTEMU_SCATTER_ADD:                                          \
                x = (T)((U)x + (U)y);                                         \
                break;                                                        \
            case NRTEMU_SCATTER_MUL:                                          \
                x = (T)((U)x * (U)y);                                         \
                break;                                                        \
            case NRTEMU_SCATTER_MAX:                                          \
                x = MAX(x, y);                                                \
                break;                                                        \
            default: /* min */                                                \
                x = MIN(x, y);                                                \
                break;                                                        \
            }                                                                 \
            o[k] = x;                                                         \
        }                                                                     \
    }

DEFINE_SCATTER(f32, float, float, NRTEMU_FLOAT_MAX, NRTEMU_FLOAT_MIN)
DEFINE_SCATTER(f64, double, double, NRTEMU_FLOAT_MAX, NRTEMU_FLOAT_MIN)
DEFINE_SCATTER(i8, int8_t, uint8_t, NRTEMU_INT_MAX, NRTEMU_INT_MIN)
DEFINE_SCATTER(i16, int16_t, uint16_t, NRTEMU_INT_MAX, NRTEMU_INT_MIN)
DEFINE_SCATTER(i32, int32_t, uint32_t, NRTEMU_INT_MAX, NRTEMU_INT_MIN)
DEFINE_SCATTER(i64, int64_t, uint64_t, NRTEMU_INT_MAX, NRTEMU_INT_MIN)
DEFINE_SCATTER(u8, uint8_t, uint8_t, NRTEMU_INT_MAX, NRTEMU_INT_MIN)
DEFINE_SCATTER(u16, uint16_t, uint16_t, NRTEMU_INT_MAX, NRTEMU_INT_MIN)
DEFINE_SCATTER(u32, uint32_t, uint32_t, NRTEMU_INT_MAX, NRTEMU_INT_MIN)
DEFINE_SCATTER(u64, uint64_t, uint64_t, NRTEMU_INT_MAX, NRTEMU_INT_MIN)

/*
 * Any other dtype: each element through its kernel type (float32 for the
 * small floats, int64 for bool: add is or, mul is and), combined there and
 * stored back with one conversion, which rounds it.
 */
static void
scatter_generic(enum nrtemu_scatter_mode mode, const struct nrtemu_array *out,
                uint64_t count, const int64_t *idx, const char *u, size_t n)
{
    enum nrtemu_dtype dt = out->dtype, kt = nrtemu__kernel_dtype(dt);
    size_t size = nrtemu__dtype_size(dt);
    char *o = out->data;

    for (size_t i = 0; i < n; i++) {
        int64_t k = idx[i];
        if (k < 0 || (uint64_t)k >= count) {
            continue;
        }
        if (mode == NRTEMU_SCATTER_ASSIGN) {
            memcpy(o + (size_t)k * size, u + i * size, size);
            continue;
        }
        if (kt == NRTEMU_DTYPE_FLOAT32) {
            float x, y;
            nrtemu__convert(kt, &x, dt, o + (size_t)k * size, 1, 1);
            nrtemu__convert(kt, &y, dt, u + i * size, 1, 1);
            x = mode == NRTEMU_SCATTER_ADD   ? x + y
                : mode == NRTEMU_SCATTER_MUL ? x * y
                : mode == NRTEMU_SCATTER_MAX ? NRTEMU_FLOAT_MAX(x, y)
                                             : NRTEMU_FLOAT_MIN(x, y);
            nrtemu__convert(dt, o + (size_t)k * size, kt, &x, 1, 1);
        } else {
            int64_t x, y;
            nrtemu__convert(NRTEMU_DTYPE_INT64, &x, dt, o + (size_t)k * size,
                            1, 1);
            nrtemu__convert(NRTEMU_DTYPE_INT64, &y, dt, u + i * size, 1, 1);
            x = mode == NRTEMU_SCATTER_ADD
                    ? (int64_t)((uint64_t)x + (uint64_t)y)
                : mode == NRTEMU_SCATTER_MUL
                    ? (int64_t)((uint64_t)x * (uint64_t)y)
                : mode == NRTEMU_SCATTER_MAX ? NRTEMU_INT_MAX(x, y)
                                             : NRTEMU_INT_MIN(x, y);
            nrtemu__convert(dt, o + (size_t)k * size, NRTEMU_DTYPE_INT64, &x,
                            1, 1);
        }
    }
}

/*
 * Assignments a run at a time: updates whose indices go up by one (the
 * writes of a box of the operand, row by row) are one copy.  The runs
 * are copied in order, so the last assignment to an index still wins;
 * the bytes are the updates', as the element loops store them.
 */
static void
scatter_assign(char *o, uint64_t count, const int64_t *idx, const char *u,
               size_t n, size_t size)
{
    size_t i = 0;

    while (i < n) {
        int64_t k = idx[i];
        size_t j = i + 1;
        if (k < 0 || (uint64_t)k >= count) {
            i++;
            continue;
        }
        while (j < n && idx[j] == k + (int64_t)(j - i) &&
               (uint64_t)idx[j] < count) {
            j++;
        }
        memcpy(o + (size_t)k * size, u + i * size, (j - i) * size);
        i = j;
    }
}

NRT_STATUS
nrtemu__kernel_scatter(enum nrtemu_scatter_mode mode,
                       const struct nrtemu_array *out,
                       const struct nrtemu_array *operand,
                       const struct nrtemu_array *indices,
                       const struct nrtemu_array *updates,
                       struct nrtemu_scratch *s)
{
    uint64_t count = nrtemu__array_count(out);
    uint64_t n = nrtemu__array_count(updates);
    size_t size = nrtemu__dtype_size(out->dtype);
    size_t isize = nrtemu__dtype_size(indices->dtype);
    int64_t *idx;

    if (out->data != operand->data) {
        memmove(out->data, operand->data, count * size);
    }
    if (n == 0) {
        return NRT_SUCCESS;
    }
    idx = nrtemu__scratch_get(s, BLOCK * sizeof *idx);
    if (idx == NULL) {
        return NRT_RESOURCE;
    }
    for (uint64_t j = 0; j < n; j += BLOCK) {
        size_t b = n - j < BLOCK ? (size_t)(n - j) : BLOCK;
        const char *u = (const char *)updates->data + j * size;
        /* uint64 indices beyond INT64_MAX become negative: skipped, as
         * they are out of range anyway. */
        nrtemu__convert(NRTEMU_DTYPE_INT64, idx, indices->dtype,
                        (const char *)indices->data + j * isize, 1, b);
        if (mode == NRTEMU_SCATTER_ASSIGN) {
            scatter_assign(out->data, count, idx, u, b, size);
            continue;
        }
        switch (out->dtype) {
        case NRTEMU_DTYPE_FLOAT32:
            scatter_f32(mode, out->data, count, idx, (const float *)u, b);
            break;
        case NRTEMU_DTYPE_FLOAT64:
            scatter_f64(mode, out->data, count, idx, (const double *)u, b);
            break;
        case NRTEMU_DTYPE_INT8:
            scatter_i8(mode, out->data, count, idx, (const int8_t *)u, b);
            break;
        case NRTEMU_DTYPE_INT16:
            scatter_i16(mode, out->data, count, idx, (const int16_t *)u, b);
            break;
        case NRTEMU_DTYPE_INT32:
            scatter_i32(mode, out->data, count, idx, (const int32_t *)u, b);
            break;
        case NRTEMU_DTYPE_INT64:
            scatter_i64(mode, out->data, count, idx, (const int64_t *)u, b);
            break;
        case NRTEMU_DTYPE_UINT8:
            scatter_u8(mode, out->data, count, idx, (const uint8_t *)u, b);
            break;
        case NRTEMU_DTYPE_UINT16:
            scatter_u16(mode, out->data, count, idx, (const uint16_t *)u, b);
            break;
        case NRTEMU_DTYPE_UINT32:
            scatter_u32(mode, out->data, count, idx, (const uint32_t *)u, b);
            break;
        case NRTEMU_DTYPE_UINT64:
            scatter_u64(mode, out->data, count, idx, (const uint64_t *)u, b);
            break;
        default:
            scatter_generic(mode, out, count, idx, u, b);
            break;
        }
    }
    return NRT_SUCCESS;
}
