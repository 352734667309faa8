/*
 * kernel_math_trig.c - block loops of sin and cos, float32 and float64
 * (kernel_math_vec.h; the pattern of the loops and the float64 formula:
 * kernel_math_vec_internal.h).
 */
#include "kernels/cpu.h"
#include "kernels/kernel_math_vec.h"

#include <math.h>
#include <string.h>

#include "kernels/kernel_math.h"
#include "kernels/kernel_math_vec_internal.h"
#include "kernels/simd.h"

/* ---------------------------------------------------------------------
 * float32 sin and cos
 *
 * In float32 arithmetic for |x| < 400 (k = round(x 2/pi) < 256), the
 * reduction Cody-Waite's with pi/2 in three parts: the first two have 16
 * significant bits, so that their products with k are exact, and
 * x - k P1 is exact (Sterbenz); the subtraction of k P2 is done exactly
 * with Knuth's two-sum, and k P3 (the next 24 bits) goes into the low
 * part.  So r = r_hi + r_lo to within 2^-46 absolute, and the series in
 * r_hi take r_lo to first order (sin(r_hi + r_lo) = sin r_hi + r_lo,
 * cos(r_hi + r_lo) = cos r_hi - r_hi r_lo).  Where the reduction nearly
 * cancels (k != 0 and |r_hi| < 2^-17, about 1e-5 of the arguments) and
 * for |x| >= 400, infinities and NaN, the chunk takes the float64
 * formula of kernel_math.h (and libm beyond 2^20).
 *
 * Within 1 ulp of the exact value for every float32 x with |x| < 400, in
 * every clone (FMA or not): checked exhaustively (1.1e9 arguments);
 * about 97% of the results above 2^-12 are correctly rounded.
 */
#define SC_PIO2_1 0x1.921ep+0f
#define SC_PIO2_2 0x1.b544p-16f
#define SC_PIO2_3 0x1.0b4612p-34f
#define SC_MAX 400.0f
#define SC_CANCEL 0x1p-17f

/* The reduction of sincos_f32(): k and r_hi (the same expressions, which
 * the compiler computes once). */
NRTEMU_INLINE float
sincos_f32_k(float x)
{
    return (x * 0x1.45f306p-1f + 12582912.0f) - 12582912.0f;
}

NRTEMU_INLINE float
sincos_f32_r(float x, float k)
{
    return (x - k * SC_PIO2_1) + -(k * SC_PIO2_2);
}

/* Whether sincos_f32(x) does not hold (x was already below SC_MAX). */
NRTEMU_INLINE int
sincos_f32_cancels(float x)
{
    float k = sincos_f32_k(x);
    return (k != 0.0f) & (fabsf(sincos_f32_r(x, k)) < SC_CANCEL);
}

/* sin (shift 0) or cos (shift 1) of x, |x| < SC_MAX. */
NRTEMU_INLINE float
sincos_f32(float x, uint32_t shift)
{
    /* Adding 1.5 * 2^23 rounds to an integer, which the low mantissa
     * bits then hold (two's complement modulo 4 is all we need). */
    float t = x * 0x1.45f306p-1f + 12582912.0f;
    uint32_t q = (kmath_bits(t) + shift) & 3u;
    float k = sincos_f32_k(x);
    float a = x - k * SC_PIO2_1; /* exact */
    float b = -(k * SC_PIO2_2);  /* exact */
    float r = sincos_f32_r(x, k);
    float bv = r - a; /* two-sum: r + e == a + b exactly */
    float av = r - bv;
    float e = (a - av) + (b - bv);
    float lo = e - k * SC_PIO2_3;
    float z = r * r;
    /* Taylor: the first omitted terms, r^11/11! and r^12/12!, are below
     * 2^-28 of the results on |r| <= pi/4 (+ a little). */
    float p = 1.0f / 362880.0f;
    p = p * z - 1.0f / 5040.0f;
    p = p * z + 1.0f / 120.0f;
    p = p * z - 1.0f / 6.0f;
    float s = r + (lo + r * z * p);
    s = r == 0.0f ? r : s; /* -0 stays -0 */
    float c = 1.0f / 3628800.0f;
    c = c * z - 1.0f / 40320.0f;
    c = c * z + 1.0f / 720.0f;
    c = c * z - 1.0f / 24.0f;
    c = 1.0f - (0.5f * z + (r * lo + z * z * c));
    /* Quadrant q: sin r, cos r, -sin r, -cos r. */
    float v = (q & 1u) ? c : s;
    return kmath_float(kmath_bits(v) ^ ((q & 2u) << 30));
}

/* The float64 formula of kernel_math.h, and libm beyond its range. */
NRTEMU_INLINE void
sincos_f32_wide(size_t n, const float *x, float *t, uint32_t shift)
{
    int big = 0;

    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        int b = !(fabsf(v) < KMATH_SINCOS_MAX);
        big |= b;
        t[i] = kmath_sincos(b ? 0.0f : v, shift);
    }
    if (big) {
        for (size_t i = 0; i < n; i++) {
            float v = x[i];
            if (!(fabsf(v) < KMATH_SINCOS_MAX)) {
                t[i] = shift != 0 ? cosf(v) : sinf(v);
            }
        }
    }
}

NRTEMU_MULTIVERSION
static void
vmath_f32_sincos(size_t n, const float *a, float *o, uint32_t shift)
{
    for (size_t j = 0; j < n; j += CHUNK) {
        size_t c = n - j < CHUNK ? n - j : CHUNK;
        const float *x = a + j;
        float t[CHUNK];
        float *d = o == a ? t : o + j; /* as VEC_WITH_FALLBACK */
        int bad = 0;
        /* sincos_f32() takes any v (no conversion to an integer), so
         * that the lanes beyond SC_MAX, recomputed below, need no
         * select (which GCC would push through the formula). */
        for (size_t i = 0; i < c; i++) {
            float v = x[i];
            d[i] = sincos_f32(v, shift);
            /* (two statements: GCC 12 does not vectorise the or of
             * the two flags in one) */
            bad |= !(fabsf(v) < SC_MAX);
            bad |= sincos_f32_cancels(v);
        }
        if (bad) {
            sincos_f32_wide(c, x, d, shift);
        }
        if (d == t) {
            memcpy(o + j, t, c * sizeof *o);
        }
    }
}

/* ---------------------------------------------------------------------
 * float64 sin and cos
 *
 * The formula, sincos_f64(), is in kernel_math_vec_internal.h: the
 * float64 ops of int32 operands (kernel_math_exp.c) take it too.
 */

/* One chunk of c elements of vmath_f64_sincos(): `small` is a constant
 * at each call, so each gets its own loop. */
NRTEMU_INLINE void
sincos_f64_chunk(size_t c, const double *x, double *t, uint32_t shift,
                 int small)
{
    int bad = 0;
    for (size_t i = 0; i < c; i++) {
        double v = x[i];
        int far = !(fabs(v) <= SC64_MAX);
        v = far ? 0.0 : v;
        t[i] = sincos_f64(v, shift, small, 1);
        bad |= far;
        bad |= sincos_f64_cancels(v, small);
    }
    if (bad) {
        for (size_t i = 0; i < c; i++) {
            double v = x[i];
            if (!(fabs(v) <= SC64_MAX) || sincos_f64_cancels(v, small)) {
                t[i] = shift != 0 ? cos(v) : sin(v);
            }
        }
    }
}

NRTEMU_MULTIVERSION
static void
vmath_f64_sincos(size_t n, const double *a, double *o, uint32_t shift)
{
    /* Straight into o unless it overlaps a (the fallback rereads a). */
    bool direct = o + n <= a || a + n <= o;

    for (size_t j = 0; j < n; j += CHUNK) {
        size_t c = n - j < CHUNK ? n - j : CHUNK;
        const double *x = a + j;
        double blk[CHUNK];
        double *t = direct ? o + j : blk;
        int large = 0;
        for (size_t i = 0; i < c; i++) {
            large |= !(fabs(x[i]) <= SC64_SMALL);
        }
        if (large) {
            sincos_f64_chunk(c, x, t, shift, 0);
        } else {
            sincos_f64_chunk(c, x, t, shift, 1);
        }
        if (!direct) {
            memcpy(o + j, t, c * sizeof *o);
        }
    }
}

/*
 * The entry points: plain functions over the static multiversioned ones,
 * whose ifunc symbols (and resolvers) GCC would otherwise give default
 * visibility, which the version script's nrtemu_* would export.
 */

void
nrtemu__vmath_f32_sincos(size_t n, const float *a, float *o, uint32_t shift)
{
    vmath_f32_sincos(n, a, o, shift);
}

void
nrtemu__vmath_f64_sincos(size_t n, const double *a, double *o, uint32_t shift)
{
    vmath_f64_sincos(n, a, o, shift);
}
