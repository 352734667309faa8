/*
 * kernel_math_vec_internal.h - what the files of the vector math loops
 * share (internal to kernel_math_exp.c, kernel_math_pow.c,
 * kernel_math_trig.c and kernel_math_div.c, which implement
 * kernel_math_vec.h): the loop with a fallback, the AVX-512 target, and
 * the formulas that two families use.
 *
 * The pattern of every loop of these files: a chunk of CHUNK elements goes
 * through a branch-free formula (selects only, so that GCC vectorises it for
 * each clone of NRTEMU_MULTIVERSION) into a local block, which also records
 * whether any element lies outside the formula's domain; those elements,
 * and only those, are then recomputed by the exact slow path (libm, or a
 * wider formula), and the block is copied out.  The local block lets the
 * output be the operand (each chunk is read before it is written) and
 * frees the vector loop of aliasing checks.
 */
#ifndef NRTEMU_KERNEL_MATH_VEC_INTERNAL_H
#define NRTEMU_KERNEL_MATH_VEC_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernel.h"
#include "kernels/kernel_math.h"
#include "kernels/simd.h"

/* Elements per chunk: the locals of a chunk stay in L1. */
#define CHUNK 256

/*
 * The loop described above for type T: OK(v) is the fast formula's
 * domain, FAST the formula, SLOW(v) the exact path.  FAST is given
 * ARG(ok, v): VEC_ARG_GUARDED, 1 outside the domain, so that it computes
 * nothing odd (no conversion of an unbounded float to an integer);
 * VEC_ARG_ANY, v itself, for a FAST that takes any v, with no select on
 * its argument, which GCC would otherwise push through the formula as
 * blends of constants.  The results go straight to the output unless it
 * overlaps the operand (the only overlap allowed is o == a), whose
 * elements the slow path may still need: copying a chunk out costs a
 * small fraction of a fast formula.
 */
#define VEC_ARG_GUARDED(ok, v) ((ok) ? (v) : 1)
#define VEC_ARG_ANY(ok, v) (v)
#define VEC_WITH_FALLBACK(T, n, a, o, OK, FAST, SLOW, ARG)   \
    do {                                                     \
        bool direct_ = (o) + (n) <= (a) || (a) + (n) <= (o); \
        for (size_t j_ = 0; j_ < (n); j_ += CHUNK) {         \
            size_t c_ = (n)-j_ < CHUNK ? (n)-j_ : CHUNK;     \
            const T *x_ = (a) + j_;                          \
            T blk_[CHUNK];                                   \
            T *t_ = direct_ ? (o) + j_ : blk_;               \
            int bad_ = 0;                                    \
            for (size_t i_ = 0; i_ < c_; i_++) {             \
                T v_ = x_[i_];                               \
                int ok_ = OK(v_);                            \
                bad_ |= !ok_;                                \
                t_[i_] = FAST(ARG(ok_, v_));                 \
            }                                                \
            if (bad_) {                                      \
                for (size_t i_ = 0; i_ < c_; i_++) {         \
                    if (!OK(x_[i_])) {                       \
                        t_[i_] = SLOW(x_[i_]);               \
                    }                                        \
                }                                            \
            }                                                \
            if (!direct_) {                                  \
                memcpy((o) + j_, t_, c_ * sizeof(T));        \
            }                                                \
        }                                                    \
    } while (0)

#if NRTEMU_X86_CLONES
/* The target of the loops written with AVX-512 intrinsics: the CPUs of
 * NRTEMU_CPU_V4 (cpu.h). */
#define VMATH_TARGET_V4 __attribute__((target("arch=x86-64-v4")))
#endif

/* 2^n for an integer n in [-126, 127] held in a float, without a
 * conversion to an integer (undefined beyond int32). */
NRTEMU_INLINE float
pow2_of_float(float n)
{
    return kmath_float(kmath_bits(n + (12582912.0f + 127.0f)) << 23);
}

/*
 * log1p and cbrt of float32 with AVX-512 (kernel_math_pow.c: log1p reads
 * pow's tables): true when `op` is one of them and the CPU has AVX-512 (o
 * holds the results), false (nothing written) otherwise.
 */
bool nrtemu__vmath_f32_unary_avx512(enum nrtemu_op op, size_t n,
                                    const float *a, float *o);

/* ---------------------------------------------------------------------
 * float64 sin and cos
 *
 * For |x| <= 2^31 (every int32, the integers' compute dtype being
 * float64), k = round(x 2/pi) < 2^31 and r = x - k pi/2 as a
 * double-double s + t, pi/2 split (Cody-Waite) into three parts of 21
 * significant bits, whose products with k are exact, and a float64 rest
 * P4: x - k P1 is exact (Sterbenz), the next two subtractions are made
 * exact with two-sums, and k P4 (below 2^-34) is rounded, then added by
 * a fast two-sum.  The error of s + t is below 2^-84 absolute (pi/2 is
 * known here to 2^-116), so for |s| >= 2^-27 it is below 2^-57 of r.
 * Closer to a multiple of pi/2 (about 1 int32 in 10^7) and for |x| > 2^31,
 * infinities and NaN, the element takes libm.
 *
 * On |r| <= pi/4 (+ a hair) the Taylor series, sin to r^17 and cos to
 * r^18 (the first omitted terms below 2^-62 of the results), with t to
 * first order: sin(s + t) = sin s + t cos s, cos(s + t) = cos s - t s.
 * The parts are pi/2 truncated to 21 bits, the next 21 bits, the next
 * 21, and the rest rounded (Python's fractions, 110 digits of pi).
 */
#define SC64_MAX 0x1p31
#define SC64_CANCEL 0x1p-27
#define SC64_P1 0x1.921fbp+0
#define SC64_P2 0x1.5110bp-22
#define SC64_P3 0x1.18469p-44
#define SC64_P4 0x1.13198a2e03707p-65

/* s + e == a + b exactly (Knuth's two-sum, any order of magnitude). */
NRTEMU_INLINE double
two_sum_f64(double a, double b, double *e)
{
    double s = a + b;
    double bv = s - a;
    *e = (a - (s - bv)) + (b - bv);
    return s;
}

/* The reduction of sincos_f64(): k, and r = s + t (the same expressions,
 * which the compiler computes once). */
NRTEMU_INLINE double
sincos_f64_k(double x)
{
    return (x * KMATH_2_OVER_PI + KMATH_SHIFTER64) - KMATH_SHIFTER64;
}

NRTEMU_INLINE double
sincos_f64_reduce(double x, double k, double *t)
{
    double r1 = x - k * SC64_P1; /* exact */
    double e2, e3;
    double s2 = two_sum_f64(r1, -(k * SC64_P2), &e2);
    double s3 = two_sum_f64(s2, -(k * SC64_P3), &e3);
    double p4 = k * SC64_P4;
    double s = s3 - p4; /* |s3| > |p4| wherever s is used */
    *t = e2 + e3 + ((s3 - s) - p4);
    return s;
}

/*
 * The series of sin and cos on |s| <= pi/4 (+ 0.1%), z = s^2: S(z) =
 * (s - sin s) / s^3 = 1/3! - z/5! + ... to degree 6 and C(z) = (cos s -
 * 1 + z/2) / z^2 = 1/4! - z/6! + ... to degree 5, interpolated at the
 * Chebyshev nodes of z (exact rational arithmetic on 60-digit values,
 * rounded once): within 2^-56 and 2^-58 absolute, which z and z^2 scale
 * down to below 2^-57 of the results (the Taylor series would need
 * degrees 7 and 7).
 */
static const double sincos_f64_sin_terms[7] = {
    0x1.5555555555555p-3,   -0x1.1111111111110p-7, 0x1.a01a01a019926p-13,
    -0x1.71de3a545e700p-19, 0x1.ae64540f0ba18p-26, -0x1.61217c1864fa1p-33,
    0x1.ab161757f0c63p-41,
};
static const double sincos_f64_cos_terms[6] = {
    0x1.5555555555555p-5,   -0x1.6c16c16c16960p-10, 0x1.a01a019f4d0edp-16,
    -0x1.27e4fa15bd814p-22, 0x1.1eeb66b683028p-29,  -0x1.907c0e63adbb6p-37,
};

/*
 * The reduction for a chunk whose |x| are all at most SC64_SMALL (k <
 * 2^12): pi/2 in a part of 41 bits, whose product with k is exact, and
 * the rest rounded, subtracted by a fast two-sum.  Its error is below
 * 2^-81, so it holds for |s| >= SC64_SMALL_CANCEL.
 */
#define SC64_SMALL 0x1p12
#define SC64_SMALL_CANCEL 0x1p-22
#define SC64_Q1 0x1.921fb54442p+0
#define SC64_Q2 0x1.a308d313198a3p-41

NRTEMU_INLINE double
sincos_f64_reduce_small(double x, double k, double *t)
{
    double r1 = x - k * SC64_Q1; /* exact */
    double p2 = k * SC64_Q2;
    double s = r1 - p2; /* |r1| > |p2| wherever s is used */
    *t = (r1 - s) - p2;
    return s;
}

/* Whether sincos_f64(x, shift, small, .) does not hold (x was already
 * within SC64_MAX): its reduction, the small one or the other, nearly
 * cancels. */
NRTEMU_INLINE int
sincos_f64_cancels(double x, int small)
{
    double k = sincos_f64_k(x), t;
    double r = small ? sincos_f64_reduce_small(x, k, &t)
                     : sincos_f64_reduce(x, k, &t);
    return (k != 0.0) & (fabs(r) < (small ? SC64_SMALL_CANCEL : SC64_CANCEL));
}

/* sin (shift 0) or cos (shift 1) of x, |x| <= SC64_MAX (small: |x| <=
 * SC64_SMALL, the cheaper reduction; zeros: x may be -0, whose sin keeps
 * the sign, where integers bring +0 only). */
NRTEMU_INLINE double
sincos_f64(double x, uint64_t shift, int small, int zeros)
{
    double tk = x * KMATH_2_OVER_PI + KMATH_SHIFTER64;
    uint64_t q = (kmath_bits64(tk) + shift) & 3u;
    double k = sincos_f64_k(x), t;
    double s = small ? sincos_f64_reduce_small(x, k, &t)
                     : sincos_f64_reduce(x, k, &t);
    double z = s * s;
    /* sin s = s - s z S(z), cos s = 1 - z/2 + z^2 C(z); w = 1 - z/2
     * rounds, and its error (1 - w) - z/2 is exact. */
    double ps = sincos_f64_sin_terms[6];
    for (int j = 5; j >= 0; j--) {
        ps = ps * z + sincos_f64_sin_terms[j];
    }
    double sn = s - (s * z * ps - t * (1.0 - 0.5 * z));
    sn = zeros && s == 0.0 ? s : sn; /* -0 stays -0 */
    double pc = sincos_f64_cos_terms[5];
    for (int j = 4; j >= 0; j--) {
        pc = pc * z + sincos_f64_cos_terms[j];
    }
    double hz = 0.5 * z;
    double w = 1.0 - hz;
    double cs = w + (((1.0 - w) - hz) + (z * z * pc - s * t));
    /* Quadrant q: sin r, cos r, -sin r, -cos r. */
    double v = (q & 1u) ? cs : sn;
    return kmath_double(kmath_bits64(v) ^ ((q & 2u) << 62));
}

#endif /* NRTEMU_KERNEL_MATH_VEC_INTERNAL_H */
