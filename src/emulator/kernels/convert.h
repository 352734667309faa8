/*
 * convert.h - conversions between the element types of dtype.h (internal).
 *
 * The rules are NumPy's `astype` (ml_dtypes' for bfloat16 and fp8), so
 * that an emulated program gives the bytes NumPy gives:
 *  - to a float type: round to nearest, ties to even, once, from the
 *    exact source value: NumPy's rule for float16 and ml_dtypes' (from
 *    0.7) for bfloat16 and fp8, float64 and integer sources included
 *    (rounding them to float32 first could round twice).  Overflow gives
 *    infinity, except for float8_e4m3fn, which has none and gives NaN
 *    (ml_dtypes).
 *  - float to integer: truncation toward zero, saturated to the range of
 *    the type (negatives give 0 for unsigned types), and NaN gives 0:
 *    XLA's convert.  NumPy leaves out-of-range values undefined.
 *  - integer to integer: two's-complement wrap-around.
 *  - to bool: nonzero (NaN included) is true; bool reads as 0 or 1, and
 *    any nonzero byte in a bool buffer counts as true.
 * NaN payloads are not preserved exactly: only NaN-ness and sign are.
 */
#ifndef NRTEMU_CONVERT_H
#define NRTEMU_CONVERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/dtype.h"

/* Scalars.  `fp8` is one of the four NRTEMU_DTYPE_FLOAT8_* types. */
float nrtemu__half_to_float(uint16_t bits);
uint16_t nrtemu__float_to_half(float value);
uint16_t nrtemu__double_to_half(double value);
float nrtemu__fp8_to_float(enum nrtemu_dtype fp8, uint8_t bits);
uint8_t nrtemu__float_to_fp8(enum nrtemu_dtype fp8, float value);

/* bfloat16 is the top half of a float32.  Inline, so that the kernels'
 * loops that convert as they go vectorise.  Thread-safe. */
static inline float
nrtemu__bfloat16_to_float(uint16_t bits)
{
    uint32_t u = (uint32_t)bits << 16;
    float f;

    memcpy(&f, &u, sizeof f);
    return f;
}

/* Rounded to nearest even; overflow lands on infinity; NaN gives the
 * quiet NaN of its sign (ml_dtypes).  A select rather than an early
 * return, so that loops calling it vectorise.  Thread-safe. */
static inline uint16_t
nrtemu__float_to_bfloat16(float value)
{
    uint32_t u, rounded, nan;

    memcpy(&u, &value, sizeof u);
    /* Adding just under half an ulp, plus one when the kept part is odd,
     * carries exactly when rounding to nearest even goes up. */
    rounded = (u + 0x7fff + ((u >> 16) & 1)) >> 16;
    nan = ((u >> 16) & 0x8000) | 0x7fc0;
    return (uint16_t)((u & 0x7fffffff) > 0x7f800000 ? nan : rounded);
}

/*
 * The layout of fp8 format `fp8`, for decoders of their own (the
 * reductions widen fp8 in vector registers): mantissa bits, exponent bias,
 * and whether it is a "finite" format (e4m3fn: no infinity, one NaN code
 * per sign, every exponent and mantissa bit set).  Thread-safe.
 */
void nrtemu__fp8_layout(enum nrtemu_dtype fp8, int *man_bits, int *bias,
                        bool *finite);

/*
 * Convert `n` elements of type `from` at `src` into `n` contiguous
 * elements of type `to` at `dst`.  `src_stride` is in elements and may be
 * 0 (every element is src[0]) or negative.  `src` and `dst` are aligned
 * for their types and do not overlap unless they are equal, the types
 * have the same size and the stride is 1.
 */
void nrtemu__convert(enum nrtemu_dtype to, void *dst, enum nrtemu_dtype from,
                     const void *src, ptrdiff_t src_stride, size_t n);

#endif /* NRTEMU_CONVERT_H */
