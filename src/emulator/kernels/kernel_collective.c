/*
 * kernel_collective.c - the arithmetic of collective operations: the
 * elementwise combination of the ranks' arrays that all_reduce and
 * reduce_scatter compute (collective.c does the exchange).
 *
 * Operands are combined in the order given (the group order), in the
 * kernel dtype of their dtype (float32 for floats of 16 and 8 bits), and
 * the result is rounded once; every rank computing a part of a result
 * therefore gets the same bits as if one rank had computed it all.
 */
#include <string.h>

#include "kernels/convert.h"
#include "kernels/kernel.h"

/* Elements per block: the operands of one block stay in L1. */
#define BLOCK 1024

/* acc[i] = a[i] (op) b[i]; `a` may be `acc`.  Integer sums and products
 * wrap (computed as uint64_t). */
#define COMBINE_FN(name, T, U, MAXF, MINF)                      \
    static void name(enum nrtemu_reduce op, T *acc, const T *a, \
                     const T *restrict b, size_t n)             \
    {                                                           \
        switch (op) {                                           \
        case NRTEMU_REDUCE_SUM:                                 \
            for (size_t i = 0; i < n; i++) {                    \
                acc[i] = (T)((U)a[i] + (U)b[i]);                \
            }                                                   \
            break;                                              \
        case NRTEMU_REDUCE_PROD:                                \
            for (size_t i = 0; i < n; i++) {                    \
                acc[i] = (T)((U)a[i] * (U)b[i]);                \
            }                                                   \
            break;                                              \
        case NRTEMU_REDUCE_MAX:                                 \
            for (size_t i = 0; i < n; i++) {                    \
                acc[i] = MAXF(a[i], b[i]);                      \
            }                                                   \
            break;                                              \
        case NRTEMU_REDUCE_MIN:                                 \
            for (size_t i = 0; i < n; i++) {                    \
                acc[i] = MINF(a[i], b[i]);                      \
            }                                                   \
            break;                                              \
        }                                                       \
    }

COMBINE_FN(combine_f32, float, float, NRTEMU_FLOAT_MAX, NRTEMU_FLOAT_MIN)
COMBINE_FN(combine_f64, double, double, NRTEMU_FLOAT_MAX, NRTEMU_FLOAT_MIN)
COMBINE_FN(combine_i64, int64_t, uint64_t, NRTEMU_INT_MAX, NRTEMU_INT_MIN)
COMBINE_FN(combine_u64, uint64_t, uint64_t, NRTEMU_INT_MAX, NRTEMU_INT_MIN)

static void
combine_kt(enum nrtemu_reduce op, enum nrtemu_dtype kt, void *acc,
           const void *a, const void *b, size_t n)
{
    switch (kt) {
    case NRTEMU_DTYPE_FLOAT32:
        combine_f32(op, acc, a, b, n);
        break;
    case NRTEMU_DTYPE_FLOAT64:
        combine_f64(op, acc, a, b, n);
        break;
    case NRTEMU_DTYPE_UINT64:
        combine_u64(op, acc, a, b, n);
        break;
    default:
        combine_i64(op, acc, a, b, n);
        break;
    }
}

void
nrtemu__kernel_combine(enum nrtemu_reduce op, enum nrtemu_dtype dtype,
                       void *out, const void *const *in, size_t n_in,
                       size_t count)
{
    enum nrtemu_dtype kt = nrtemu__kernel_dtype(dtype);
    size_t size = nrtemu__dtype_size(dtype);
    /* Blocks converted to the kernel dtype (8 bytes at most). */
    uint64_t acc[BLOCK], tmp[BLOCK];

    if (n_in == 1) {
        memmove(out, in[0], count * size);
        return;
    }
    for (size_t done = 0; done < count; done += BLOCK) {
        size_t n = count - done < BLOCK ? count - done : BLOCK;
        size_t off = done * size;
        if (kt == dtype) {
            /* The operands are already of the kernel dtype: out is the
             * accumulator. */
            char *o = (char *)out + off;
            combine_kt(op, kt, o, (const char *)in[0] + off,
                       (const char *)in[1] + off, n);
            for (size_t k = 2; k < n_in; k++) {
                combine_kt(op, kt, o, o, (const char *)in[k] + off, n);
            }
            continue;
        }
        nrtemu__convert(kt, acc, dtype, (const char *)in[0] + off, 1, n);
        for (size_t k = 1; k < n_in; k++) {
            nrtemu__convert(kt, tmp, dtype, (const char *)in[k] + off, 1, n);
            combine_kt(op, kt, acc, acc, tmp, n);
        }
        nrtemu__convert(dtype, (char *)out + off, kt, acc, 1, n);
    }
}
