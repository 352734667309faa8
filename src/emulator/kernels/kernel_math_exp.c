/*
 * kernel_math_exp.c - block loops of the exp and log family: float32 log,
 * expm1, log1p and cbrt; float64 exp, log, expm1, log1p, cbrt, tanh,
 * sigmoid and gelu; and the float64 ops of int32 operands (sin and cos
 * among them).  Interface: kernel_math_vec.h; the pattern of the loops:
 * kernel_math_vec_internal.h.
 */
#include "kernels/cpu.h"
#include "kernels/kernel_math_vec.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "kernels/kernel_math.h"
#include "kernels/kernel_math_vec_internal.h"
#include "kernels/kernel_stream.h"
#include "kernels/simd.h"
#include "kernels/simd_tail.h"

#if NRTEMU_X86_CLONES
#include <immintrin.h>
#endif

/* ---------------------------------------------------------------------
 * float32 log, expm1, log1p and cbrt
 *
 * In float32 arithmetic, within 1 ulp of the exact value for every
 * float32 argument of their domains (checked exhaustively, FMA or not; cbrt
 * with FMA, which it needs for y^3 - a: libm's fmaf in the baseline
 * clone); the rest (expm1 above 88, log1p at or below -1, cbrt below
 * 2^-100 and beyond 2^126, infinities, NaN) takes the float64 formulas of
 * kernel_math.h.
 */

/* 2^n (e^r - 1) + (2^n - 1), r = x - n ln2, for x in [-18, 88]: no
 * cancellation for small |x| (n = 0); below -18 the result rounds to -1. */
NRTEMU_INLINE float
expm1_f32(float x)
{
    float c = x > -18.0f ? x : -18.0f;
    float n = kmath_round_log2e(c);
    float r = c - n * KMATH_LN2_HI;
    r = r - n * KMATH_LN2_LO;
    float q = 1.0f / 40320.0f;
    q = q * r + 1.0f / 5040.0f;
    q = q * r + 1.0f / 720.0f;
    q = q * r + 1.0f / 120.0f;
    q = q * r + 1.0f / 24.0f;
    q = q * r + 1.0f / 6.0f;
    q = q * r + 0.5f;
    q = q * r * r + r; /* e^r - 1: tiny r comes out exactly */
    float s = pow2_of_float(n);
    float y = s * q + (s - 1.0f);
    return x == 0.0f ? x : y; /* -0 stays -0 */
}
/* (expm1_f32() takes any x: no conversion to an integer) */
#define F32_EXPM1_OK(v) ((v) <= 88.0f) /* false for NaN */

/*
 * log1p: u = 1 + x = 2^e m, m in [sqrt(1/2), sqrt 2).  For e = 0 the
 * argument of the series is x itself (exact); otherwise m - 1, with the
 * rounding error c of u taken to first order (-c / u).  log(1 + f) =
 * f - (f^2/2 - s (f^2/2 + R)), s = f / (2 + f), R the atanh series in
 * s^2: the leading f is exact and the rest is below a fifth of it.
 */
NRTEMU_INLINE float
log1p_f32(float x)
{
    float u = 1.0f + x;
    float c = (u - 1.0f) - x;
    struct kmath_split32 sp = kmath_split_sqrt2(u); /* u = 2^e m */
    int32_t e = sp.e;
    float m = sp.m;
    float f = e == 0 ? x : m - 1.0f;
    /* One division for s and c / u: s feeds only the correction terms,
     * which the extra roundings leave within 2^-26 of the result. */
    float den = 2.0f + f;
    /* mm = e == 0 ? 1 : m, in bits: a select that GCC cannot push below
     * the division (it then divided for each arm) */
    uint32_t e0 = 0u - (uint32_t)(e == 0);
    float mm =
        kmath_float(kmath_bits(m) ^ ((kmath_bits(m) ^ 0x3f800000u) & e0));
    float dd = 1.0f / (den * mm);
    /* c / u = c 2^-e / m (beyond 2^126 it is far below the result) */
    float corr = c * den * dd * kmath_pow2(-(e < 126 ? e : 126));
    corr = e == 0 ? 0.0f : corr;
    float s = f * mm * dd;
    float z = s * s;
    float w = kmath_atanh_tail32(z, 5);
    float hfsq = 0.5f * f * f;
    float lm = f - (hfsq - s * (hfsq + z * w));
    float ef = (float)e;
    float y = ef * KMATH_LN2_HI + (lm + (ef * KMATH_LN2_LO - corr));
    return x == 0.0f ? x : y; /* -0 stays -0 */
}
#define F32_LOG1P_OK(v) (((v) > -1.0f) & ((v) < __builtin_inff()))

/*
 * cbrt without a division, in float32: the inverse cube root w =
 * a^(-1/3) from the exponent trick (a third of the bits of a, taken
 * through a float: 4%) and one step of the series w (1 - e)^(-1/3) =
 * w (1 + e/3 + 2e^2/9 + 14e^3/81 + ...), e = 1 - a w^3, cut after e^3
 * (-> 3e-5; two operations fewer, and faster, than two Newton steps, -> 2e-3
 * -> 7e-6), then y = a w^2 and one Newton step for y, y - (y^3 - a) w^2 / 3
 * (1/(3 y^2) = w^2 / 3), with y^3 - a in one rounding (FMA): the step leaves
 * about 2^-26, and the rounding of y^2 and of the step about 0.3 ulp: at most
 * 0.81 ulp, checked on every float32 (with FMA for y^3 - a, the other steps
 * contracted or not).  For |x| in [2^-100, 2^126] (y^3 - a stays normal) and
 * zeros; the rest takes kmath_cbrt().
 */
NRTEMU_INLINE float
cbrt_f32(float x)
{
    float a = fabsf(x);
    /* w from a nonzero g (for a = 0, w^3 would overflow); y = a w^2
     * below is then 0. */
    float g = a > 0x1p-100f ? a : 0x1p-100f;
    /* (a third of the bits through a float: a vector integer division
     * by 3 takes 5 instructions, and the 7 bits that the float drops
     * move the guess by less than 2^-17) */
    float third = (float)(int32_t)kmath_bits(g) * (1.0f / 3.0f);
    float w = kmath_float(0x54a2fa8cu - (uint32_t)(int32_t)third);
    float e = 1.0f - g * (w * w * w);
    float p = (e * (14.0f / 81.0f) + 2.0f / 9.0f) * e + 1.0f / 3.0f;
    w = w + w * e * p;
    float w2 = w * w;
    float y = a * w2;
    float r = y - __builtin_fmaf(y * y, y, -a) * (w2 * (1.0f / 3.0f));
    /* the sign of x, zeros included (a = 0 gives y = r = 0) */
    return kmath_float(kmath_bits(r) | (kmath_bits(x) & 0x80000000u));
}
/* |v| zero or in [2^-100, 2^126], on the bits without the sign (false for
 * NaN and infinities); cbrt_f32() takes any v. */
#define F32_CBRT_OK(v)                             \
    (((kmath_bits(v) << 1) - (0x0d800000u << 1) <= \
      ((0x7e800000u - 0x0d800000u) << 1)) |        \
     (fabsf(v) == 0.0f))

/*
 * log of a positive normal float32: log_f64()'s form in float32 (the
 * leading f exact), without kmath_log()'s selects for subnormals and the
 * special values, which the fallback takes: within 1 ulp (kmath_log: 2).
 */
NRTEMU_INLINE float
log_f32(float x)
{
    struct kmath_split32 sp = kmath_split_sqrt2(x); /* x = 2^e m */
    int32_t e = sp.e;
    float m = sp.m;
    float f = m - 1.0f;
    float s = f / (2.0f + f);
    float z = s * s;
    float w = kmath_atanh_tail32(z, 4);
    float hfsq = 0.5f * f * f;
    float lm = f - (hfsq - s * (hfsq + z * w));
    float ef = (float)e;
    return ef * KMATH_LN2_HI + (lm + ef * KMATH_LN2_LO);
}
#define F32_LOG_OK(v) (((v) >= 0x1p-126f) & ((v) < __builtin_inff()))

NRTEMU_MULTIVERSION
static bool
vmath_f32_unary(enum nrtemu_op op, size_t n, const float *a, float *o)
{
    switch (op) {
    case NRTEMU_OP_LOG:
        VEC_WITH_FALLBACK(float, n, a, o, F32_LOG_OK, log_f32, kmath_log,
                          VEC_ARG_GUARDED);
        return true;
    case NRTEMU_OP_EXPM1:
        VEC_WITH_FALLBACK(float, n, a, o, F32_EXPM1_OK, expm1_f32, kmath_expm1,
                          VEC_ARG_ANY);
        return true;
    case NRTEMU_OP_LOG1P:
        VEC_WITH_FALLBACK(float, n, a, o, F32_LOG1P_OK, log1p_f32, kmath_log1p,
                          VEC_ARG_ANY);
        return true;
    case NRTEMU_OP_CBRT:
        VEC_WITH_FALLBACK(float, n, a, o, F32_CBRT_OK, cbrt_f32, kmath_cbrt,
                          VEC_ARG_ANY);
        return true;
    default: /* a selector: false, the caller's own loop */
        return false;
    }
}

/* ---------------------------------------------------------------------
 * float64 exp, log, expm1, log1p, cbrt, tanh, sigmoid, gelu
 *
 * kernel_math.h's reductions with longer series, for float64 results:
 * e^r - 1 to r^13 on |r| <= ln2 / 2 (first omitted term 2^-57 relative),
 * the atanh series of log to s^21 (2^-62).  Divisions are plain: on the
 * CPUs with AVX-512 a vector division costs less than a float32
 * reciprocal and Newton steps.  Bounds against glibc,
 * measured (tests/python/test_math_vec.py): docs/neff-emulator-format.md.
 * libm for the rest of the domain (NaN, infinities, subnormal results).
 */

/* e^r - 1 for |r| <= ln2 / 2 (+ a little), to r^13: the first omitted
 * term is below 2^-57 relative. */
NRTEMU_INLINE double
expm1_reduced_f64(double r)
{
    return kmath_expm1_taylor(r, 13);
}

/* r = x - k ln2 and t = k + 1.5 * 2^52 (kmath_pow2_shifted64). */
NRTEMU_INLINE double
exp_reduce_f64(double x, double *t)
{
    *t = x * KMATH_LOG2E64 + KMATH_SHIFTER64;
    double k = *t - KMATH_SHIFTER64;
    double r = x - k * KMATH_LN2_HI64;
    return r - k * KMATH_LN2_LO64;
}

/* e^x for |x| <= 708: 2^k in one factor. */
NRTEMU_INLINE double
exp_f64(double x)
{
    double t;
    double r = exp_reduce_f64(x, &t);
    return kmath_pow2_shifted64(t) * (1.0 + expm1_reduced_f64(r));
}
#define F64_EXP_OK(v) (fabs(v) <= 708.0)

/* e^x - 1 for x in [-60, 700]: 2^k (e^r - 1) + (2^k - 1), no
 * cancellation for small |x| (k = 0). */
NRTEMU_INLINE double
expm1_core_f64(double x)
{
    double t;
    double r = exp_reduce_f64(x, &t);
    double s = kmath_pow2_shifted64(t);
    return s * expm1_reduced_f64(r) + (s - 1.0);
}

/*
 * (2 atanh(s) - 2s) / (s z), z = s^2, |s| <= 3 - 2 sqrt 2 (so z <=
 * 0.0295): 2/3 + 2/5 z + ... to degree 6, interpolated at the Chebyshev
 * nodes of [0, 0.0295] (exact rational arithmetic on 60-digit values,
 * rounded once).  Its error is below 2^-51 absolute where the Taylor
 * series needs degree 9; in log it is multiplied by s z, below 0.015 of
 * the result: 2^-57 relative.
 */
static const double log_tail_f64_terms[7] = {
    0x1.5555555555558p-1, 0x1.99999999952d7p-2, 0x1.2492492df281ap-2,
    0x1.c71c62e3f11e6p-3, 0x1.7462b51cb66b1p-3, 0x1.39fe51a7c18f9p-3,
    0x1.2b5900de53b32p-3,
};

NRTEMU_INLINE double
log_tail_f64(double z)
{
    double w = log_tail_f64_terms[6];
    for (int k = 5; k >= 0; k--) {
        w = w * z + log_tail_f64_terms[k];
    }
    return w;
}

/* log u for positive normal finite u: u = m 2^e, m in [sqrt(1/2),
 * sqrt 2), log m = f - (f^2/2 - s (f^2/2 + R)) with s = f / (2 + f) and
 * R the atanh series in s^2 (so that the leading f is exact). */
NRTEMU_INLINE double
log_f64(double u)
{
    /* u = 2^e m, m in [sqrt(1/2), sqrt 2), as in log_f32(); e as a
     * float64 without an int64 conversion (which baseline and AVX2 lack):
     * 2^52 + the biased exponent, minus 2^52. */
    uint64_t b = kmath_bits64(u) + (0x3ff0000000000000u - 0x3fe6a09e667f3bcdu);
    double e =
        kmath_double(0x4330000000000000u | (b >> 52)) - (0x1p52 + 1023.0);
    double m = kmath_double((b & 0x000fffffffffffffu) + 0x3fe6a09e667f3bcdu);
    double f = m - 1.0;
    double s = f / (2.0 + f);
    double z = s * s;
    double w = log_tail_f64(z);
    double hfsq = 0.5 * f * f;
    double lm = f - (hfsq - s * (hfsq + z * w));
    return e * KMATH_LN2_HI64 + (lm + e * KMATH_LN2_LO64);
}
#define F64_LOG_OK(v) (((v) >= 0x1p-1022) & ((v) < __builtin_inf()))

/* expm1: below -60 it rounds to -1 (kept as the clamp); zeros keep their
 * sign. */
NRTEMU_INLINE double
expm1_f64(double x)
{
    double c = x > -60.0 ? x : -60.0;
    double y = expm1_core_f64(c);
    return x == 0.0 ? x : y;
}
#define F64_EXPM1_OK(v) ((v) <= 700.0) /* false for NaN */

/*
 * log1p: u = 1 + x rounds; log(1 + x) = log u + (x - (u - 1)) / u to
 * first order, and u - 1 is exact (Sterbenz) where the term matters.
 */
NRTEMU_INLINE double
log1p_f64(double x)
{
    double u = 1.0 + x;
    double ur = u < 0x1p100 ? u : 0x1p100; /* beyond, the term is 0 */
    double y = log_f64(u) + (x - (u - 1.0)) / ur;
    return x == 0.0 ? x : y;
}
#define F64_LOG1P_OK(v) (((v) > -0x1.fffffffffffffp-1) & ((v) < 0x1p1000))

/*
 * cbrt without a division: the inverse cube root w = a^(-1/3) from the
 * float32 exponent trick (a few percent) and two Newton steps in float32
 * (w (4/3 - a w^3 / 3): -> 3e-3 -> 2e-5, twice the lanes of float64),
 * one in float64 (-> 1e-9), then y = a w^2 and one Newton step for y,
 * y - (y^3 - a) w^2 / 3 (1/(3 y^2) = w^2 / 3), whose error is the
 * rounding of y^3 - a: within 0.76 ulp (checked at every float32
 * mantissa of three consecutive binades, which give every first guess).
 * |x| in [2^-120, 2^120] keeps the float32 steps normal.
 */
NRTEMU_INLINE double
cbrt_f64(double x)
{
    double a = fabs(x);
    float af = (float)a;
    float wf = kmath_float(0x54a2fa8cu - kmath_bits(af) / 3u);
    float a3f = af * (1.0f / 3.0f);
    wf = wf * (4.0f / 3.0f - a3f * (wf * wf * wf));
    wf = wf * (4.0f / 3.0f - a3f * (wf * wf * wf));
    double w = (double)wf;
    w = w * (4.0 / 3.0 - (a * (1.0 / 3.0)) * (w * w * w));
    double w2 = w * w;
    double y = a * w2;
    y = y - (y * y * y - a) * (w2 * (1.0 / 3.0));
    y = __builtin_copysign(y, x);
    return a == 0.0 ? x : y;
}
#define F64_CBRT_OK(v) \
    ((fabs(v) == 0.0) | ((fabs(v) >= 0x1p-120) & (fabs(v) <= 0x1p120)))

/* tanh = e / (e + 2), e = expm1(2|x|); tanh(19.1) rounds to 1. */
NRTEMU_INLINE double
tanh_f64(double x)
{
    double a = fabs(x);
    a = a < 19.5 ? a : 19.5;
    double e = expm1_core_f64(2.0 * a);
    double t = __builtin_copysign(e / (e + 2.0), x);
    return x == 0.0 ? x : t;
}
#define F64_NOT_NAN(v) ((v) == (v))

/* sigmoid: 1 / (1 + e^-x); e^-708 is far below half an ulp of 1. */
NRTEMU_INLINE double
sigmoid_f64(double x)
{
    double c = x < 708.0 ? x : 708.0;
    return 1.0 / (1.0 + exp_f64(-c));
}
#define F64_SIGMOID_OK(v) ((v) >= -708.0)

/* Below -708 (and NaN): e^x / (1 + e^x), the subnormal results. */
static double
sigmoid_f64_slow(double x)
{
    double e = exp(x);
    return e / (1.0 + e);
}

/*
 * The tanh approximation of GELU, 0.5 x (1 + tanh u), u = sqrt(2/pi) (x +
 * 0.044715 x^3), written x / (1 + e^m), m = -2u (the same function, and
 * no cancellation in 1 + tanh u where u is very negative).  With w =
 * e^-|m| (at most 1, so it never overflows): x / (1 + w) for m <= 0, and
 * x w / (1 + w) for m > 0, where x w is scaled in two steps for the
 * subnormal results, for m up to
 * GELU_M_ZERO; beyond, 0 with the sign of x (e^-790 |x| underflows for
 * every x that gives such an m).  No lane computes a subnormal that is
 * not its result (they cost a microcode assist each): 1 + w takes w no
 * smaller than 2^-1000, far below half an ulp of 1.  Infinities and NaN
 * take libm.
 */
#define GELU_M_ZERO 790.0

NRTEMU_INLINE double
gelu_u2_f64(double x)
{
    return -2.0 * KMATH_GELU_C * (x + KMATH_GELU_A * x * x * x);
}

NRTEMU_INLINE double
gelu_f64(double x)
{
    double m = gelu_u2_f64(x);
    double am = fabs(m);
    /* Beyond GELU_M_ZERO (and for |x| > 5e102, m infinite): w = 0, and
     * e^0 computed for nothing. */
    int zero = !(am <= GELU_M_ZERO);
    am = zero ? 0.0 : am;
    double t;
    double r = exp_reduce_f64(-am, &t);
    double p = 1.0 + expm1_reduced_f64(r);
    /* w = p 2^kd, kd = max(k, -1000): normal (and x w too, as |x| > 20
     * where k < -1000), then 2^(k - kd) >= 2^-140 rounds x w once more
     * into the subnormals. */
    double k = t - KMATH_SHIFTER64;
    double kd = k > -1000.0 ? k : -1000.0;
    double w = p * kmath_pow2_shifted64(kd + KMATH_SHIFTER64);
    double xw = (x * w) * kmath_pow2_shifted64((k - kd) + KMATH_SHIFTER64);
    xw = zero ? x * 0.0 : xw;
    w = zero ? 0.0 : w;
    return (m > 0.0 ? xw : x) / (1.0 + w);
}
#define F64_GELU_OK(v) (fabs(v) < __builtin_inf()) /* false for NaN */

static double
gelu_f64_slow(double x)
{
    double m = gelu_u2_f64(x);
    return m > 0.0 ? x * exp(-m) / (1.0 + exp(-m)) : x / (1.0 + exp(m));
}

NRTEMU_MULTIVERSION
static bool
vmath_f64_unary(enum nrtemu_op op, size_t n, const double *a, double *o)
{
    switch (op) {
    case NRTEMU_OP_EXP:
        VEC_WITH_FALLBACK(double, n, a, o, F64_EXP_OK, exp_f64, exp,
                          VEC_ARG_GUARDED);
        return true;
    case NRTEMU_OP_LOG:
        VEC_WITH_FALLBACK(double, n, a, o, F64_LOG_OK, log_f64, log,
                          VEC_ARG_GUARDED);
        return true;
    case NRTEMU_OP_EXPM1:
        VEC_WITH_FALLBACK(double, n, a, o, F64_EXPM1_OK, expm1_f64, expm1,
                          VEC_ARG_GUARDED);
        return true;
    case NRTEMU_OP_LOG1P:
        VEC_WITH_FALLBACK(double, n, a, o, F64_LOG1P_OK, log1p_f64, log1p,
                          VEC_ARG_GUARDED);
        return true;
    case NRTEMU_OP_CBRT:
        VEC_WITH_FALLBACK(double, n, a, o, F64_CBRT_OK, cbrt_f64, cbrt,
                          VEC_ARG_GUARDED);
        return true;
    case NRTEMU_OP_TANH:
        VEC_WITH_FALLBACK(double, n, a, o, F64_NOT_NAN, tanh_f64, tanh,
                          VEC_ARG_GUARDED);
        return true;
    case NRTEMU_OP_SIGMOID:
        VEC_WITH_FALLBACK(double, n, a, o, F64_SIGMOID_OK, sigmoid_f64,
                          sigmoid_f64_slow, VEC_ARG_GUARDED);
        return true;
    case NRTEMU_OP_GELU:
        VEC_WITH_FALLBACK(double, n, a, o, F64_GELU_OK, gelu_f64,
                          gelu_f64_slow, VEC_ARG_GUARDED);
        return true;
    default: /* a selector: false, the caller's own loop */
        return false;
    }
}

/* ---------------------------------------------------------------------
 * int32 operands of the float64 sin, cos, gelu, log1p, cbrt, exp, log,
 * expm1, tanh and sigmoid
 *
 * NumPy computes these ops on int32 in float64.  Here the conversion of
 * each chunk is part of the vector loop, instead of a pass of the
 * kernel's driver over a block of scratch, and a whole run is one call
 * (streamed when the driver asks), where the driver's calls take
 * KSTREAM_BLOCK bytes, 128 results, each: the calls cost as much as the
 * math.  The caller makes sure o does not overlap a.  That every operand
 * is an integer of at most 2^31 in magnitude drops checks:
 *
 * - sin, cos: the reduction always holds (|x| <= 2^31); no integer of
 *   magnitude at most SC64_SMALL is closer to a nonzero multiple of pi/2
 *   than 0x1.f9bd03p-16, at 355 (tests/python/test_math_vec.py checks),
 *   far from SC64_SMALL_CANCEL: only the large chunks look for
 *   cancellation; sin(+0) is +0 without the select that keeps -0 (s is
 *   0 only for x = 0, and t then too).  sincos_f64() itself, so the bound
 *   of the float64 op (which reduction a chunk takes depends on its
 *   largest element, here as there: results can differ from the float64
 *   op's by an ulp where the chunks do).
 * - log1p: 1 + x is exact, so log1p_f64()'s correction term (and its
 *   division) is 0: log_f64(1 + x), the same bits.  x < 0 takes libm
 *   (log1p(-1) = -inf, below NaN).
 * - cbrt: every |x| is 0 or in [1, 2^31], cbrt_f64()'s domain, with no
 *   fallback: the same bits.
 * - gelu, tanh, exp, expm1, sigmoid: the results at the integers are
 *   constants (or x, gelu above) beyond a short range, which a table
 *   holds, filled by the float64 op itself (TABLE_I32_LIST): gelu is x
 *   from 8 (1 + e^m rounds to 1) and -0 from -22 (m > GELU_M_ZERO), tanh
 *   +-1 from |x| = 20, exp inf from 710 and 0 from -746, expm1 -1 from
 *   -38, sigmoid 1 from 37 and 0 from -746: the same bits, checked on
 *   every int32.  The tables of 64 are looked up in registers, the others
 *   gathered (AVX-512), or element by element.
 * - log: vmath_f64_unary() on each chunk converted in L1: the same bits.
 */
/*
 * The ops whose results at the integers are a table and constants
 * beyond: op, the first integer of the table, its length, whether x
 * itself is the result above it (else `above`), and the result below.
 * Checked for every int32 (bit for bit the float64 op) when written.
 */
#define TABLE_I32_LIST(X)                     \
    X(GELU, -32, 64, true, 0.0, -0.0)         \
    X(TANH, -32, 64, false, 1.0, -1.0)        \
    X(EXP, -768, 1480, false, HUGE_VAL, 0.0)  \
    X(EXPM1, -64, 776, false, HUGE_VAL, -1.0) \
    X(SIGMOID, -768, 832, false, 1.0, 0.0)

struct table_i32 {
    enum nrtemu_op op;
    int32_t lo;
    uint32_t n;
    bool x_above;
    double above, below;
    double *data;
};

#define TABLE_I32_DATA(OP, LO, N, XA, ABOVE, BELOW) \
    static double table_i32_data_##OP[N];
TABLE_I32_LIST(TABLE_I32_DATA)
#undef TABLE_I32_DATA

enum {
#define TABLE_I32_ENUM(OP, LO, N, XA, ABOVE, BELOW) TABLE_I32_##OP,
    TABLE_I32_LIST(TABLE_I32_ENUM)
#undef TABLE_I32_ENUM
        TABLE_I32_COUNT
};

static const struct table_i32 table_i32_ops[TABLE_I32_COUNT] = {
#define TABLE_I32_ROW(OP, LO, N, XA, ABOVE, BELOW) \
    {NRTEMU_OP_##OP, LO, N, XA, ABOVE, BELOW, table_i32_data_##OP},
    TABLE_I32_LIST(TABLE_I32_ROW)
#undef TABLE_I32_ROW
};

static pthread_once_t table_i32_once[TABLE_I32_COUNT] = {
#define TABLE_I32_ONCE(OP, LO, N, XA, ABOVE, BELOW) PTHREAD_ONCE_INIT,
    TABLE_I32_LIST(TABLE_I32_ONCE)
#undef TABLE_I32_ONCE
};

/* The table of t: the float64 op itself (vmath_f64_unary(), the clone
 * that runs) at its integers. */
static void
table_i32_fill(const struct table_i32 *t)
{
    double x[CHUNK];

    for (uint32_t j = 0; j < t->n; j += CHUNK) {
        uint32_t c = t->n - j < CHUNK ? t->n - j : CHUNK;
        for (uint32_t i = 0; i < c; i++) {
            x[i] = (double)(t->lo + (int32_t)(j + i));
        }
        vmath_f64_unary(t->op, c, x, t->data + j);
    }
}

#define TABLE_I32_INIT(OP, LO, N, XA, ABOVE, BELOW)     \
    static void table_i32_init_##OP(void)               \
    {                                                   \
        table_i32_fill(&table_i32_ops[TABLE_I32_##OP]); \
    }
TABLE_I32_LIST(TABLE_I32_INIT)
#undef TABLE_I32_INIT

/* The table of `op`, built on first use; NULL when op has none. */
static const struct table_i32 *
table_i32_get(enum nrtemu_op op)
{
    switch (op) {
#define TABLE_I32_CASE(OP, LO, N, XA, ABOVE, BELOW)                         \
    case NRTEMU_OP_##OP:                                                    \
        pthread_once(&table_i32_once[TABLE_I32_##OP], table_i32_init_##OP); \
        return &table_i32_ops[TABLE_I32_##OP];
        TABLE_I32_LIST(TABLE_I32_CASE)
#undef TABLE_I32_CASE
    default: /* a selector: other ops have no table */
        return NULL;
    }
}

#if NRTEMU_X86_CLONES
/* The lookup with AVX-512, which GCC does not vectorise (it makes no
 * gathers for these CPUs): a table of 64 in eight registers, an element
 * picked by four two-register permutes and three blends; a longer one
 * gathered.  (v - lo wraps for the far integers, whose lanes then take
 * the constants.) */
__attribute__((target("avx512f"))) static void
table_i32_avx512(size_t n, const int32_t *x, double *t,
                 const struct table_i32 *f)
{
    const double *tb = f->data;
    bool regs = f->n == 64;
    __m512d t0 = _mm512_setzero_pd(), t1 = t0, t2 = t0, t3 = t0, t4 = t0;
    __m512d t5 = t0, t6 = t0, t7 = t0;
    const __m512i lo = _mm512_set1_epi32(f->lo);
    const __m512i hi = _mm512_set1_epi32(f->lo + (int32_t)f->n);
    const __m512i top = _mm512_set1_epi32((int32_t)f->n - 1);
    const __m512d above = _mm512_set1_pd(f->above);
    const __m512d below = _mm512_set1_pd(f->below);
    const __mmask8 x_above = f->x_above ? 0xff : 0;

    if (regs) {
        t0 = _mm512_loadu_pd(tb), t1 = _mm512_loadu_pd(tb + 8);
        t2 = _mm512_loadu_pd(tb + 16), t3 = _mm512_loadu_pd(tb + 24);
        t4 = _mm512_loadu_pd(tb + 32), t5 = _mm512_loadu_pd(tb + 40);
        t6 = _mm512_loadu_pd(tb + 48), t7 = _mm512_loadu_pd(tb + 56);
    }
    for (size_t i = 0; i < n; i += 8) {
        __mmask8 m = n - i >= 8 ? 0xff : (__mmask8)((1u << (n - i)) - 1);
        /* (8 lanes: the low half; whole steps unmasked, simd_tail.h) */
        __m512i v = m == 0xff ? _mm512_castsi256_si512(_mm256_loadu_si256(
                                    (const __m256i *)(const void *)(x + i)))
                              : _mm512_maskz_loadu_epi32(m, x + i);
        __m512i k = _mm512_min_epi32(
            _mm512_max_epi32(_mm512_sub_epi32(v, lo), _mm512_setzero_si512()),
            top);
        __m512d g;
        if (regs) {
            __m512i idx = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(k));
            __mmask8 b4 = _mm512_test_epi64_mask(idx, _mm512_set1_epi64(16));
            __mmask8 b5 = _mm512_test_epi64_mask(idx, _mm512_set1_epi64(32));
            __m512d g01 =
                _mm512_mask_blend_pd(b4, _mm512_permutex2var_pd(t0, idx, t1),
                                     _mm512_permutex2var_pd(t2, idx, t3));
            __m512d g23 =
                _mm512_mask_blend_pd(b4, _mm512_permutex2var_pd(t4, idx, t5),
                                     _mm512_permutex2var_pd(t6, idx, t7));
            g = _mm512_mask_blend_pd(b5, g01, g23);
        } else {
            g = _mm512_i32gather_pd(_mm512_castsi512_si256(k), tb, 8);
        }
        __mmask8 big = (__mmask8)_mm512_cmpge_epi32_mask(v, hi);
        __mmask8 neg = (__mmask8)_mm512_cmplt_epi32_mask(v, lo);
        __m512d up = _mm512_mask_blend_pd(
            x_above, above, _mm512_cvtepi32_pd(_mm512_castsi512_si256(v)));
        g = _mm512_mask_blend_pd(big, g, up);
        g = _mm512_mask_blend_pd(neg, g, below);
        tail_store_pd(t + i, m, g);
    }
}
#endif

/* One chunk of c results of `op` on int32 operands into t (f: its table,
 * if it has one; avx512: the CPU has it). */
NRTEMU_INLINE void
i32_f64_chunk(enum nrtemu_op op, const struct table_i32 *f, size_t c,
              const int32_t *x, double *t, bool avx512)
{
    int bad = 0;

    if (f != NULL) {
#if NRTEMU_X86_CLONES
        if (avx512) {
            table_i32_avx512(c, x, t, f);
            return;
        }
#endif
        (void)avx512;
        int32_t hi = f->lo + (int32_t)f->n; /* (v - lo may overflow) */
        for (size_t i = 0; i < c; i++) {
            int32_t v = x[i];
            int32_t k = v < f->lo ? f->lo : v >= hi ? hi - 1 : v;
            double g = f->data[k - f->lo];
            g = v >= hi ? (f->x_above ? (double)v : f->above) : g;
            t[i] = v < f->lo ? f->below : g;
        }
        return;
    }
    switch (op) {
    case NRTEMU_OP_SIN:
    case NRTEMU_OP_COS: {
        uint32_t shift = op == NRTEMU_OP_COS;
        int large = 0;
        for (size_t i = 0; i < c; i++) {
            /* |x| > SC64_SMALL, in integers */
            large |= (uint32_t)x[i] + (uint32_t)SC64_SMALL >
                     2u * (uint32_t)SC64_SMALL;
        }
        if (!large) {
            for (size_t i = 0; i < c; i++) {
                t[i] = sincos_f64((double)x[i], shift, 1, 0);
            }
            return;
        }
        for (size_t i = 0; i < c; i++) {
            double v = (double)x[i];
            t[i] = sincos_f64(v, shift, 0, 0);
            bad |= sincos_f64_cancels(v, 0);
        }
        if (bad) {
            for (size_t i = 0; i < c; i++) {
                double v = (double)x[i];
                if (sincos_f64_cancels(v, 0)) {
                    t[i] = shift != 0 ? cos(v) : sin(v);
                }
            }
        }
        return;
    }
    case NRTEMU_OP_LOG1P:
        for (size_t i = 0; i < c; i++) {
            int32_t v = x[i];
            bad |= v < 0;
            t[i] = log_f64(1.0 + (double)(v < 0 ? 0 : v));
        }
        if (bad) {
            for (size_t i = 0; i < c; i++) {
                if (x[i] < 0) {
                    t[i] = log1p((double)x[i]);
                }
            }
        }
        return;
    case NRTEMU_OP_CBRT:
        for (size_t i = 0; i < c; i++) {
            t[i] = cbrt_f64((double)x[i]);
        }
        return;
    case NRTEMU_OP_LOG:
    default: { /* (vmath_i32_f64_unary admits no other op here) */
        /* log: the float64 loop on the chunk
         * converted in L1 (what matters is one call per run) */
        double xd[CHUNK];
        for (size_t i = 0; i < c; i++) {
            xd[i] = (double)x[i];
        }
        vmath_f64_unary(op, c, xd, t);
        return;
    }
    }
}

NRTEMU_MULTIVERSION
static bool
vmath_i32_f64_unary(enum nrtemu_op op, size_t n, const int32_t *a, double *o,
                    bool stream)
{
    const struct table_i32 *f = table_i32_get(op);

    switch (op) {
    case NRTEMU_OP_SIN:
    case NRTEMU_OP_COS:
    case NRTEMU_OP_LOG1P:
    case NRTEMU_OP_CBRT:
    case NRTEMU_OP_LOG:
        break;
    default: /* a selector: the ops with a table, else false */
        if (f == NULL) {
            return false;
        }
        break;
    }
#if NRTEMU_X86_CLONES
    bool avx512 = nrtemu__cpu_has(NRTEMU_CPU_V4);
#else
    bool avx512 = false;
#endif

    for (size_t j = 0; j < n; j += CHUNK) {
        size_t c = n - j < CHUNK ? n - j : CHUNK;
        double blk[CHUNK];
        i32_f64_chunk(op, f, c, a + j, stream ? blk : o + j, avx512);
        if (stream) {
            kstream_copy(o + j, blk, c * sizeof *o);
        }
    }
    return true;
}

/*
 * The entry points: plain functions over the static multiversioned ones,
 * whose ifunc symbols (and resolvers) GCC would otherwise give default
 * visibility, which the version script's nrtemu_* would export.
 */

bool
nrtemu__vmath_f32_unary(enum nrtemu_op op, size_t n, const float *a, float *o)
{
    if (nrtemu__vmath_f32_unary_avx512(op, n, a, o)) {
        return true;
    }
    return vmath_f32_unary(op, n, a, o);
}

bool
nrtemu__vmath_f64_unary(enum nrtemu_op op, size_t n, const double *a,
                        double *o)
{
    return vmath_f64_unary(op, n, a, o);
}

bool
nrtemu__vmath_i32_f64_unary(enum nrtemu_op op, size_t n, const int32_t *a,
                            double *o, bool stream)
{
    return vmath_i32_f64_unary(op, n, a, o, stream);
}
