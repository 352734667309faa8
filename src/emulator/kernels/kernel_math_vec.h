/*
 * kernel_math_vec.h - block loops of the transcendental and division-like
 * elementwise ops (internal).  One file per family: kernel_math_exp.c
 * (exp, log and the float64 ops of int32 operands), kernel_math_trig.c
 * (sin, cos), kernel_math_pow.c (pow), kernel_math_div.c (mod,
 * floor_divide, rem, int32 division and power); what they share is in
 * kernel_math_vec_internal.h.
 *
 * Each function runs one op over a block of n elements, vectorised for
 * the CPU it runs on (simd.h: AVX-512, AVX2 + FMA, baseline), with the
 * rare arguments that the vector formula does not cover (NaN, infinities,
 * huge or tiny values) taken element by element to libm.  The output may
 * be the operand itself; nothing else may overlap.  No state: safe from
 * any thread.  Accuracy: docs/neff-emulator-format.md, "Accuracy of the
 * transcendental ops".
 */
#ifndef NRTEMU_KERNEL_MATH_VEC_H
#define NRTEMU_KERNEL_MATH_VEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernel.h"

/* The block [j, j + c) of float32 operand p: p + j when it is an array,
 * else its one value spread over `spread` (c elements), so that the loops
 * reading the block have no condition on the operand and vectorise. */
static inline const float *
vmath_f32_block(const float *p, bool scalar, size_t j, size_t c, float *spread)
{
    if (!scalar) {
        return p + j;
    }
    for (size_t i = 0; i < c; i++) {
        spread[i] = p[0];
    }
    return spread;
}

/* float32 sin (shift 0) or cos (shift 1). */
void nrtemu__vmath_f32_sincos(size_t n, const float *a, float *o,
                              uint32_t shift);

/* float32 log, expm1, log1p and cbrt: true when `op` is one of them (o holds
 * the results), false (nothing written) otherwise. */
bool nrtemu__vmath_f32_unary(enum nrtemu_op op, size_t n, const float *a,
                             float *o);

/* float32 pow(a, b), C powf's special cases exactly, either operand maybe
 * a scalar (sa, sb). */
void nrtemu__vmath_f32_pow(size_t n, const float *a, bool sa, const float *b,
                           bool sb, float *o);

/* The same, for results that will be rounded to `narrow` (bfloat16 or
 * float16): float32 values that round to it as those of
 * nrtemu__vmath_f32_pow() do, bit for bit, faster where the CPU has
 * AVX-512 (most lanes take a cheaper formula). */
void nrtemu__vmath_f32_pow_narrow(size_t n, const float *a, bool sa,
                                  const float *b, bool sb, float *o,
                                  enum nrtemu_dtype narrow);

/*
 * pow of n float16 or bfloat16 (`narrow`) codes a and b, elementwise, into
 * o as codes: the bits of nrtemu__vmath_f32_pow_narrow() on the values,
 * rounded to `narrow` (convert.h), converting in registers.  True when
 * the CPU has AVX-512; false, nothing written, otherwise (and for other
 * dtypes).  o may be a or b; nothing else may overlap.
 */
bool nrtemu__vmath_pow16(size_t n, const uint16_t *a, const uint16_t *b,
                         uint16_t *o, enum nrtemu_dtype narrow);

/* float32 mod, floor_divide and rem (NumPy's remainder and floor
 * division, C's fmod) with either operand maybe a scalar (sa, sb): true
 * when `op` is one of them. */
bool nrtemu__vmath_f32_binary(enum nrtemu_op op, size_t n, const float *a,
                              bool sa, const float *b, bool sb, float *o);

/*
 * float64 sin (shift 0) or cos (shift 1), the compute dtype of these ops
 * on integers: within 1 ulp (a double-double reduction for |x| <= 2^31,
 * libm beyond and where it nearly cancels).
 */
void nrtemu__vmath_f64_sincos(size_t n, const double *a, double *o,
                              uint32_t shift);

/*
 * float64 exp, log, expm1, log1p, cbrt, tanh, sigmoid and gelu (the
 * compute dtype of these ops on integers, as NumPy's): true when `op` is
 * one of them and o holds the results, false (nothing written) otherwise.
 */
bool nrtemu__vmath_f64_unary(enum nrtemu_op op, size_t n, const double *a,
                             double *o);

/*
 * sin, cos, gelu, log1p, cbrt, exp, log, expm1, tanh and sigmoid of int32
 * operands, computed in float64 (NumPy's compute dtype for them), n
 * float64 results into o, which must not overlap a; the results of the
 * float64 loops on the converted operands (sin, cos: within their bound).
 * stream: o is written with non-temporal stores (the caller fences).  True
 * when `op` is one of them, false (nothing written) otherwise.
 */
bool nrtemu__vmath_i32_f64_unary(enum nrtemu_op op, size_t n, const int32_t *a,
                                 double *o, bool stream);

/*
 * int32 floor_divide (and div), mod, trunc_divide, rem and pow, wrapping
 * as the int64 loops wrapped to int32: true when `op` is one of them.
 * sa, sb: that operand is one element standing for all.
 */
bool nrtemu__vmath_i32_binary(enum nrtemu_op op, size_t n, const int32_t *a,
                              bool sa, const int32_t *b, bool sb, int32_t *o);

#endif /* NRTEMU_KERNEL_MATH_VEC_H */
