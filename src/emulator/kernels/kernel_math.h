/*
 * kernel_math.h - float32 exp, log, tanh, sin and cos that GCC vectorises
 * (internal).
 *
 * libm's expf/logf/tanhf are called one element at a time, several times
 * slower than NumPy's SIMD loops.  These are branch-free (selects only),
 * so a loop calling them vectorises; they are accurate to about 1-2 ulp,
 * like NumPy's own SIMD versions, and handle NaN, infinities, overflow,
 * underflow and subnormals.
 */
#ifndef NRTEMU_KERNEL_MATH_H
#define NRTEMU_KERNEL_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t
kmath_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float
kmath_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* |x| on the bits (andps: no libm call, NaN kept). */
static inline float
kmath_abs(float x)
{
    return kmath_float(kmath_bits(x) & 0x7fffffffu);
}

/* ln 2 split so that n * LN2_HI is exact for |n| < 2^9. */
#define KMATH_LN2_HI 0.693145751953125f
#define KMATH_LN2_LO 1.428606765330187045e-06f
#define KMATH_LOG2E 1.44269504088896341f

/* round(x * log2 e) as a float; |x| is at most ~2^7 here.  Adding and
 * subtracting 1.5 * 2^23 rounds to nearest even. */
static inline float
kmath_round_log2e(float x)
{
    return (x * KMATH_LOG2E + 12582912.0f) - 12582912.0f;
}

/* 2^n for integer n in [-126, 127]. */
static inline float
kmath_pow2(int32_t n)
{
    return kmath_float((uint32_t)(n + 127) << 23);
}

/* e^c as p 2^n, p = e^r on |r| <= ln2 / 2, r = c - n ln2, n = round(c
 * log2 e) (|c| at most ~2^7): the reduction and series of kmath_exp().
 * Returned by value (see kmath_split_sqrt2). */
struct kmath_exp_parts {
    float p, n;
};

static inline struct kmath_exp_parts
kmath_exp_reduce(float c)
{
    float n = kmath_round_log2e(c);
    float r = c - n * KMATH_LN2_HI;
    r = r - n * KMATH_LN2_LO;
    /* e^r on |r| <= ln2 / 2: Taylor to degree 7, error < 1e-8 relative. */
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    return (struct kmath_exp_parts){p, n};
}

static inline float
kmath_exp(float x)
{
    /* Beyond these bounds the result is 0 or infinity anyway; clamping
     * keeps the integer exponent in range.  The comparisons are written
     * so that they compile to maxps/minps, which also turn a NaN into a
     * harmless number (the NaN is returned at the end). */
    float c = x > -104.0f ? x : -104.0f; /* maxps: NaN becomes -104 */
    c = c < 89.0f ? c : 89.0f;
    struct kmath_exp_parts e = kmath_exp_reduce(c);
    /* n is in [-150, 128]: scale in two steps so that each factor is a
     * normal float; only the last product rounds (subnormal results). */
    int32_t ni = (int32_t)e.n;
    int32_t n1 = ni >> 1; /* arithmetic shift (GCC) */
    float y = e.p * kmath_pow2(n1) * kmath_pow2(ni - n1);
    return x != x ? x : y;
}

/* e^c for c in [-87, 88], where it is a normal float: kmath_exp() with
 * neither its clamps nor its two-step scaling. */
static inline float
kmath_exp_normal(float c)
{
    struct kmath_exp_parts e = kmath_exp_reduce(c);
    return e.p * kmath_pow2((int32_t)e.n);
}

/* 2 / (2k + 1) for k = 0..10: log((1 + s) / (1 - s)) = 2 atanh(s) = 2s +
 * s z (2/3 + 2/5 z + 2/7 z^2 + ...), z = s^2. */
static const float kmath_atanh_terms32[11] = {
    2.0f / 1.0f,  2.0f / 3.0f,  2.0f / 5.0f,  2.0f / 7.0f,
    2.0f / 9.0f,  2.0f / 11.0f, 2.0f / 13.0f, 2.0f / 15.0f,
    2.0f / 17.0f, 2.0f / 19.0f, 2.0f / 21.0f,
};
static const double kmath_atanh_terms64[11] = {
    2.0 / 1.0,  2.0 / 3.0,  2.0 / 5.0,  2.0 / 7.0,  2.0 / 9.0,  2.0 / 11.0,
    2.0 / 13.0, 2.0 / 15.0, 2.0 / 17.0, 2.0 / 19.0, 2.0 / 21.0,
};

/* 2/3 + 2/5 z + ... + 2/(2 top + 1) z^(top - 1), by Horner (0 < top <
 * 11).  `top` is a constant at every call, so the loop unrolls. */
static inline float
kmath_atanh_tail32(float z, int top)
{
    float w = kmath_atanh_terms32[top];
    for (int k = top - 1; k >= 1; k--) {
        w = w * z + kmath_atanh_terms32[k];
    }
    return w;
}

static inline double
kmath_atanh_tail64(double z, int top)
{
    double w = kmath_atanh_terms64[top];
    for (int k = top - 1; k >= 1; k--) {
        w = w * z + kmath_atanh_terms64[k];
    }
    return w;
}
/* e^x - 1 for x in [0, 19], accurate for small x too (used by tanh). */
static inline float
kmath_expm1_pos(float x)
{
    float n = kmath_round_log2e(x);
    float r = x - n * KMATH_LN2_HI;
    r = r - n * KMATH_LN2_LO;
    float q = 1.0f / 40320.0f;
    q = q * r + 1.0f / 5040.0f;
    q = q * r + 1.0f / 720.0f;
    q = q * r + 1.0f / 120.0f;
    q = q * r + 1.0f / 24.0f;
    q = q * r + 1.0f / 6.0f;
    q = q * r + 0.5f;
    q = q * r * r + r; /* e^r - 1 */
    float s = kmath_pow2((int32_t)n);
    return s * q + (s - 1.0f);
}

static inline float
kmath_tanh(float x)
{
    /* tanh(9.1) rounds to 1 in float32. */
    float a = kmath_abs(x);
    a = a < 9.1f ? a : 9.1f; /* minps: NaN becomes 9.1 */
    float e = kmath_expm1_pos(2.0f * a);
    float t = e / (e + 2.0f);
    t = kmath_float(kmath_bits(t) | (kmath_bits(x) & 0x80000000u));
    return x != x ? x : t;
}

/*
 * atan2(y, x) of float32: the angle of the smaller of |x|, |y| over the
 * larger, q in [0, 1], reduced to |u| <= tan(pi/8) (u = (q - 1) / (q + 1)
 * above it, plus pi/4), atan u = u + u z P(z), z = u^2, with Cephes'
 * single-precision minimax polynomial; then the octant and the quadrant
 * from the comparisons and the sign bits, so signed zeros and infinities
 * come out as C's atan2 gives them (atan2(+-0, -0) = +-pi, both infinite:
 * +-pi/4 or +-3pi/4).  Within a few ulp; branch-free, so loops over it
 * vectorise.  NaN in either operand gives NaN.
 */
static inline float
kmath_atan2(float y, float x)
{
    float ax = kmath_abs(x), ay = kmath_abs(y);
    float mx = ax > ay ? ax : ay, mn = ax > ay ? ay : ax;
    float q = mn / mx;
    int big = q > 0.41421356237309503f; /* tan(pi/8) */
    float u = big ? (q - 1.0f) / (q + 1.0f) : q;
    float z = u * u;
    float p = 8.05374449538e-2f;
    p = p * z - 1.38776856032e-1f;
    p = p * z + 1.99777106478e-1f;
    p = p * z - 3.33329491539e-1f;
    float r = p * z * u + u;
    r = big ? r + 0.78539816339744831f : r;
    r = ay > ax ? 1.57079632679489662f - r : r;
    r = mx == 0.0f ? 0.0f : r;                     /* both zero */
    r = mn == INFINITY ? 0.78539816339744831f : r; /* both infinite */
    r = (kmath_bits(x) >> 31) != 0 ? 3.14159265358979324f - r : r;
    r = kmath_float(kmath_bits(r) | (kmath_bits(y) & 0x80000000u));
    return (x != x || y != y) ? x + y : r;
}

/* GELU's tanh approximation, 0.5 x (1 + tanh u), u = KMATH_GELU_C (x +
 * KMATH_GELU_A x^3): sqrt(2 / pi) and the cubic's factor. */
#define KMATH_GELU_C 0.7978845608028654
#define KMATH_GELU_A 0.044715

/*
 * GELU of float32 x written x / (1 + e^m), m = -2u, and for x < 0 (m > 0)
 * x e^-m / (1 + e^-m), with h = e^(-|m| / 2) and e^-|m| = h h: h <= 1
 * never overflows, and nothing cancels, where 0.5 x (1 + tanh u) as
 * written cancels for negative x, 1 + tanh u coming out a multiple of
 * 2^-24 (off by 50-170% below x = -3, and 0 or three times the value near
 * -5.1).  h stays normal (|m| / 2 at most 85); the numerator x h h
 * rounds into the subnormals only where the result is subnormal, and the
 * denominator takes h no smaller than 2^-30 (1 + h h is 1 from h =
 * 2^-13), so no lane computes a subnormal that is not its result (each
 * costs a microcode assist); from m = 170 the result is x 0.  Within a
 * few ulp, plus the rounding of m, which e^-|m| carries as about |m| ulps
 * (the function's own condition there: m ~ 1.6 x + 0.07 x^3); measured
 * at most 2.4 (2 + |m|) ulps on [-12, 12].  NaN stays NaN, +inf gives
 * +inf, -inf the formula's NaN (-inf * 0).
 */
static inline float
kmath_gelu(float x)
{
    float m =
        (float)(-2.0 * KMATH_GELU_C) * (x + (float)KMATH_GELU_A * x * x * x);
    float hm = kmath_abs(m) * 0.5f;
    hm = hm < 85.0f ? hm : 85.0f; /* minps: NaN becomes 85 */
    float h = kmath_exp_normal(-hm);
    float hd = h > 0x1p-30f ? h : 0x1p-30f;
    float num = m > 0.0f ? (x * h) * h : x;
    num = m >= 170.0f ? x * 0.0f : num;
    return num / (1.0f + hd * hd);
}

static inline float
kmath_log(float x)
{
    /* Subnormals are scaled into the normal range first. */
    int sub = x < 0x1p-126f;
    float xs = sub ? x * 0x1p23f : x;
    uint32_t u = kmath_bits(xs);
    int32_t e = (int32_t)(u >> 23) - 127 - (sub ? 23 : 0);
    float m = kmath_float((u & 0x7fffffu) | 0x3f800000u); /* [1, 2) */
    int big = m > 1.41421356f;
    m = big ? m * 0.5f : m;
    e = big ? e + 1 : e;
    /* log(m) = 2 atanh(s), s = f / (2 + f): an odd series in s. */
    float f = m - 1.0f;
    float s = f / (2.0f + f);
    float z = s * s;
    float w = kmath_atanh_tail32(z, 4);
    float lm = 2.0f * s + s * z * w;
    float ef = (float)e;
    float y = ef * KMATH_LN2_HI + (lm + ef * KMATH_LN2_LO);
    /* Special cases, in the order that makes each one win. */
    y = x == 0.0f ? -__builtin_inff() : y;
    y = x < 0.0f ? __builtin_nanf("") : y;
    y = x == __builtin_inff() ? x : y;
    return x != x ? x : y;
}

static inline uint64_t
kmath_bits64(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static inline double
kmath_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/*
 * atan2(y, x) of float64, as kmath_atan2: q in [0, 1] reduced to |u| <=
 * 0.66 (u = (q - 1) / (q + 1) above it), atan u = u + u z P(z) / Q(z)
 * with Cephes' double-precision rational approximation.  The result is
 * m pi/4 +- atan u, m = 0..4 from the octant and quadrant; m pi/4 is added
 * as a head and the tail the head misses, so the sum rounds once. Branch-free,
 * so loops over it vectorise.
 */
static inline double
kmath_atan2_f64(double y, double x)
{
    double ax = x < 0 ? -x : x, ay = y < 0 ? -y : y;
    double mx = ax > ay ? ax : ay, mn = ax > ay ? ay : ax;
    double q = mn / mx;
    int both_inf = mn == INFINITY;
    /* m as a double: selects of one width vectorise */
    double m = (q > 0.66) | both_inf ? 1.0 : 0.0;
    double u = q > 0.66 ? (q - 1.0) / (q + 1.0) : q;
    double z = u * u;
    double p = -8.750608600031904122785e-1;
    p = p * z - 1.615753718733365076637e1;
    p = p * z - 7.500855792314704667340e1;
    p = p * z - 1.228866684490136173410e2;
    p = p * z - 6.485021904942025371773e1;
    double d = z + 2.485846490142306297962e1;
    d = d * z + 1.650270098316988542046e2;
    d = d * z + 4.328810604912902668951e2;
    d = d * z + 4.853903996359136964868e2;
    d = d * z + 1.945506571482613964425e2;
    double r = u + u * (z * p / d);
    r = (mx == 0.0) | both_inf ? 0.0 : r; /* both zero, both infinite */
    double s = 1.0;
    m = ay > ax ? 2.0 - m : m;
    s = ay > ax ? -s : s;
    m = (kmath_bits64(x) >> 63) != 0 ? 4.0 - m : m;
    s = (kmath_bits64(x) >> 63) != 0 ? -s : s;
    /* m pi/4 as the nearest double (m times pi/4's, exact for m <= 4:
     * its last two bits are zero) and what that misses. */
    double hi = m * 0.7853981633974483, lo = m * 3.061616997868383e-17;
    r = hi + (lo + s * r);
    r = kmath_double(kmath_bits64(r) | (kmath_bits64(y) & (1ull << 63)));
    return (x != x || y != y) ? x + y : r;
}

/*
 * sin and cos of float32 x, |x| < KMATH_SINCOS_MAX: the caller takes
 * larger |x|, infinities and NaN to libm (the reduction below needs the
 * quadrant k < 2^20).  Computed in float64 and rounded once to float32,
 * so the result is within 1 ulp of the exact value (the float64 error is
 * about 2^-50 relative: in practice it is the correctly rounded float
 * except within 2^-26 ulp of a tie).  Signed zeros and subnormals pass
 * through exactly (sin(x) rounds to x there).
 *
 * Range reduction (Cody-Waite): k = round(x * 2/pi), r = x - k * pi/2
 * with pi/2 split into three float64 parts.  The first two have 33
 * significant bits, so k * part is exact for k < 2^20 and the first
 * subtraction is exact; the third carries the next 53 bits.  The parts
 * are pi/2 truncated to 33 bits, the next 33 bits of the remainder, and
 * the rest rounded to float64 (computed with Python's fractions from 76
 * digits of pi).
 */
#define KMATH_SINCOS_MAX 0x1p20f
#define KMATH_2_OVER_PI 0x1.45f306dc9c883p-1
#define KMATH_PIO2_1 0x1.921fb544p+0
#define KMATH_PIO2_2 0x1.0b4611a6p-34
#define KMATH_PIO2_3 0x1.3198a2e037073p-69

/*
 * `shift` 0: sin(x); 1: cos(x) = sin(x + pi/2), one quadrant further.
 * On |r| <= pi/4 (+ a little) the Taylor series, sin to r^11 and cos to
 * r^12: the first omitted terms are below 2^-36 relative, far below
 * float32's 2^-24.
 */
static inline float
kmath_sincos(float xf, uint64_t shift)
{
    double x = (double)xf;
    /* Adding 1.5 * 2^52 rounds to an integer, which the low mantissa
     * bits then hold (two's complement modulo 4 is all we need). */
    double t = x * KMATH_2_OVER_PI + 0x1.8p52;
    uint64_t q = (kmath_bits64(t) + shift) & 3u;
    double k = t - 0x1.8p52;
    double r = x - k * KMATH_PIO2_1;
    r = r - k * KMATH_PIO2_2;
    r = r - k * KMATH_PIO2_3;
    double z = r * r;
    double s = 1.0 / 39916800.0; /* 1/11! */
    s = s * z - 1.0 / 362880.0;
    s = s * z + 1.0 / 5040.0;
    s = s * z - 1.0 / 120.0;
    s = s * z + 1.0 / 6.0;
    s = r - r * z * s;    /* r - r^3/3! + ...: tiny r comes out exactly */
    s = r == 0.0 ? r : s; /* and -0 too (-0 - -0 is +0) */
    double c = -1.0 / 479001600.0; /* -1/12! */
    c = c * z + 1.0 / 3628800.0;
    c = c * z - 1.0 / 40320.0;
    c = c * z + 1.0 / 720.0;
    c = c * z - 1.0 / 24.0;
    c = c * z + 0.5;
    c = 1.0 - z * c;
    /* Quadrant q: sin r, cos r, -sin r, -cos r. */
    double v = (q & 1u) ? c : s;
    v = kmath_double(kmath_bits64(v) ^ ((q & 2u) << 62));
    return (float)v;
}

/*
 * e^x and log x of a float16 value x (held in float32), for float16
 * results: kmath_exp() and kmath_log() with the parts that float16 does
 * not need left out (shorter series, no subnormal input, one scaling).
 * Within 1 float16 ulp of the exact value for every float16 code
 * (test_small_float_ops checks all 65536), with NaN, infinities, zeros
 * and the signs of kmath_exp() and kmath_log().
 */
static inline float
kmath_exp_f16(float x)
{
    /* e^12 overflows float16, e^-18 rounds to 0 in it; maxps and minps
     * turn a NaN into a number (the NaN is returned at the end). */
    float c = x > -18.0f ? x : -18.0f;
    c = c < 12.0f ? c : 12.0f;
    float n = kmath_round_log2e(c);
    float r = c - n * KMATH_LN2_HI;
    r = r - n * KMATH_LN2_LO;
    /* e^r on |r| <= ln2 / 2: Taylor to degree 5, error < 2^-18. */
    float p = 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    float y = p * kmath_pow2((int32_t)n); /* n in [-26, 18] */
    return x != x ? x : y;
}

/* The bits of the float32 nearest sqrt(1/2), below it. */
#define KMATH_SQRT_HALF_BITS 0x3f3504f3u

/* x = 2^e m, m in [sqrt(1/2), sqrt 2), for a positive normal float32 x,
 * by integer arithmetic on the bits (a select on m > sqrt 2 makes GCC
 * compute both arms).  Returned by value: an exponent written through a
 * pointer can keep GCC from vectorising the loops that call this. */
struct kmath_split32 {
    float m;
    int32_t e;
};

static inline struct kmath_split32
kmath_split_sqrt2(float x)
{
    uint32_t b = kmath_bits(x) + (0x3f800000u - KMATH_SQRT_HALF_BITS);
    return (struct kmath_split32){
        .m = kmath_float((b & 0x7fffffu) + KMATH_SQRT_HALF_BITS),
        .e = (int32_t)(b >> 23) - 127,
    };
}

static inline float
kmath_log_f16(float x)
{
    /* float16 values are normal floats (or zero): no scaling. */
    struct kmath_split32 sp = kmath_split_sqrt2(x);
    int32_t e = sp.e;
    float m = sp.m;
    /* log(m) = 2 atanh(s), s = f / (2 + f), |s| < 0.172: to s^7. */
    float f = m - 1.0f;
    float s = f / (2.0f + f);
    float z = s * s;
    float w = kmath_atanh_tail32(z, 3);
    float lm = 2.0f * s + s * z * w;
    float ef = (float)e;
    float y = ef * KMATH_LN2_HI + (lm + ef * KMATH_LN2_LO);
    y = x == 0.0f ? -__builtin_inff() : y;
    y = x < 0.0f ? __builtin_nanf("") : y;
    y = x == __builtin_inff() ? x : y;
    return x != x ? x : y;
}

/*
 * sin (shift 0) and cos (shift 1) of a float16 value x (held in float32),
 * in float32 arithmetic, for float16 results: twice the lanes of
 * kmath_sincos() and shorter series.  Within 1 float16 ulp of the exact
 * value for every float16 code (test_small_float_ops checks all 65536);
 * infinities and NaN give NaN, signed zeros pass through.
 *
 * Range reduction (Cody-Waite): |x| <= 65504, so k = round(x * 2/pi) <
 * 2^16; pi/2 is split into two 8-bit parts, whose products with k are
 * exact and whose subtractions are exact (Sterbenz), and a float32 rest:
 * r is within about 2^-24 of x - k pi/2.  On |r| <= pi/4 (+ a little) sin
 * to r^7 and cos to r^8 leave less than 2^-20 relative, far below
 * float16's 2^-11.
 */
#define KMATH_F16_PIO2_1 0x1.92p+0f
#define KMATH_F16_PIO2_2 0x1.fap-12f
#define KMATH_F16_PIO2_3 0x1.54442ep-20f

static inline float
kmath_sincos_f16(float x, uint32_t shift)
{
    /* Adding 1.5 * 2^23 rounds to an integer, which the low mantissa
     * bits then hold (two's complement modulo 4 is all we need). */
    float t = x * 0.636619772f + 12582912.0f;
    uint32_t q = (kmath_bits(t) + shift) & 3u;
    float k = t - 12582912.0f;
    float r = x - k * KMATH_F16_PIO2_1;
    r = r - k * KMATH_F16_PIO2_2;
    r = r - k * KMATH_F16_PIO2_3;
    float z = r * r;
    float s = -1.0f / 5040.0f;
    s = s * z + 1.0f / 120.0f;
    s = s * z - 1.0f / 6.0f;
    s = r + r * z * s;
    s = r == 0.0f ? r : s; /* -0 stays -0 */
    float c = 1.0f / 40320.0f;
    c = c * z - 1.0f / 720.0f;
    c = c * z + 1.0f / 24.0f;
    c = c * z - 0.5f;
    c = 1.0f + z * c;
    /* Quadrant q: sin r, cos r, -sin r, -cos r. */
    float v = (q & 1u) ? c : s;
    return kmath_float(kmath_bits(v) ^ ((q & 2u) << 30));
}

/*
 * float32 expm1, log1p, cbrt and erf, computed in float64 with branch-free
 * code (selects only, so that the loops calling them vectorise) and
 * rounded once to float32: the float64 error is far below float32's half
 * ulp, so the result is within 1 ulp of the exact value (the correctly
 * rounded float except within a hair of a tie).
 */

/* ln 2 split for float64: k * KMATH_LN2_HI64 is exact for |k| < 2^20. */
#define KMATH_LN2_HI64 0x1.62e42feep-1
#define KMATH_LN2_LO64 0x1.a39ef35793c76p-33
#define KMATH_LOG2E64 0x1.71547652b82fep0
/* Adding and subtracting 1.5 * 2^52 rounds to an integer, which the low
 * mantissa bits then hold (as in kmath_sincos). */
#define KMATH_SHIFTER64 0x1.8p52

/* 2^k for t = k + KMATH_SHIFTER64, integer k in [-1022, 1023]: the bits
 * of t hold k in two's complement; the exponent field is k + 1023. */
static inline double
kmath_pow2_shifted64(double t)
{
    return kmath_double((kmath_bits64(t) + 1023u) << 52);
}

/* 1/n! for n = 0..15: the Taylor terms of e^r - 1. */
static const double kmath_inv_factorial[16] = {
    1.0,
    1.0,
    1.0 / 2.0,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5040.0,
    1.0 / 40320.0,
    1.0 / 362880.0,
    1.0 / 3628800.0,
    1.0 / 39916800.0,
    1.0 / 479001600.0,
    1.0 / 6227020800.0,
    1.0 / 87178291200.0,
    1.0 / 1307674368000.0,
};

/* e^r - 1 for |r| <= ln2 / 2 (+ a little): Taylor to r^top (2 < top <
 * 16), by Horner.  `top` is a constant at every call, so the loop
 * unrolls.  To r^12 the first omitted term is below 2^-52 relative (a
 * float64 that is rounded again); to r^15, below 2^-63. */
static inline double
kmath_expm1_taylor(double r, int top)
{
    double q = kmath_inv_factorial[top];
    for (int n = top - 1; n >= 2; n--) {
        q = q * r + kmath_inv_factorial[n];
    }
    return q * r * r + r; /* tiny r comes out exactly */
}

static inline double
kmath_expm1_reduced64(double r)
{
    return kmath_expm1_taylor(r, 12);
}

/* e^x - 1 for float64 x in [-60, 89] (callers clamp): 2^k (e^r - 1) +
 * (2^k - 1), with no cancellation for small |x| (k = 0). */
static inline double
kmath_expm1_64(double x)
{
    double t = x * KMATH_LOG2E64 + KMATH_SHIFTER64;
    double k = t - KMATH_SHIFTER64;
    double r = x - k * KMATH_LN2_HI64;
    r = r - k * KMATH_LN2_LO64;
    double s = kmath_pow2_shifted64(t);
    return s * kmath_expm1_reduced64(r) + (s - 1.0);
}

/* e^x for float64 x in [-700, 700]. */
static inline double
kmath_exp64(double x)
{
    double t = x * KMATH_LOG2E64 + KMATH_SHIFTER64;
    double k = t - KMATH_SHIFTER64;
    double r = x - k * KMATH_LN2_HI64;
    r = r - k * KMATH_LN2_LO64;
    return kmath_pow2_shifted64(t) * (kmath_expm1_reduced64(r) + 1.0);
}

static inline float
kmath_expm1(float xf)
{
    /* e^-60 is far below float32's half ulp of 1; e^89 overflows. */
    double c = (double)xf > -60.0 ? (double)xf : -60.0; /* NaN: -60 */
    c = c < 89.0 ? c : 89.0;
    float y = (float)kmath_expm1_64(c);
    /* -0 stays -0; NaN stays NaN. */
    return (xf == 0.0f || xf != xf) ? xf : y;
}

/*
 * log(u) for float64 u > 0, normal and finite (callers select the other
 * cases): u = m 2^e with m in [sqrt(1/2), sqrt 2), log m = 2 atanh(s),
 * s = (m - 1) / (m + 1), |s| <= 0.172: the odd series to s^17 leaves
 * less than 2^-52 relative.
 */
static inline double
kmath_log64(double u)
{
    uint64_t b = kmath_bits64(u);
    /* The exponent field as a float64, without an int64 conversion
     * (which baseline and AVX2 lack): 2^52 + field, minus 2^52. */
    double e =
        kmath_double(0x4330000000000000u | (b >> 52)) - (0x1p52 + 1023.0);
    double m = kmath_double((b & 0x000fffffffffffffu) | 0x3ff0000000000000u);
    int big = m > 1.4142135623730951;
    m = big ? m * 0.5 : m;
    e = big ? e + 1.0 : e;
    double f = m - 1.0;
    double s = f / (2.0 + f);
    double z = s * s;
    double w = kmath_atanh_tail64(z, 8);
    double lm = 2.0 * s + s * z * w;
    return e * KMATH_LN2_HI64 + (lm + e * KMATH_LN2_LO64);
}

static inline float
kmath_log1p(float xf)
{
    double x = (double)xf;
    /* u = 1 + x rounds when x is tiny or huge; the error c = (u - 1) - x
     * is exact, and log(1 + x) = log(u) - c / u to first order, which is
     * all the rounding leaves.  |c| <= 2^-53 u, so c / u matters only
     * where log1p(x) is tiny, |x| < 2^-20; there 1 / u = 2 - u within
     * 2^-40, which saves a division.  Beyond |x| = 0.5 the term is below
     * 2^-52 of the result and is dropped. */
    double u = 1.0 + x;
    double us = u > 0x1p-60 ? u : 1.0; /* keep log64's domain */
    us = us < 0x1p1000 ? us : 1.0;     /* (and NaN out of it) */
    double c = (u - 1.0) - x;
    c = (x < 0.5 && x > -0.5) ? c * (2.0 - u) : 0.0;
    double y = kmath_log64(us) - c;
    float r = (float)y;
    r = xf == -1.0f ? -__builtin_inff() : r;
    r = xf < -1.0f ? __builtin_nanf("") : r;
    r = xf == __builtin_inff() ? xf : r;
    return (xf == 0.0f || xf != xf) ? xf : r;
}

static inline float
kmath_cbrt(float xf)
{
    float a = kmath_abs(xf);
    /* Subnormals are scaled by 2^24 (their cube root by 2^8) so that the
     * exponent trick below sees a normal number, and values above 2^120
     * by 2^-60 (2^-20) so that the float32 step below cannot overflow. */
    int sub = a<0x1p-126f, big = a> 0x1p120f;
    float as = sub ? a * 0x1p24f : big ? a * 0x1p-60f : a;
    /* A first guess within a few percent: a third of the exponent (and
     * mantissa) bits, plus 2/3 of the bias, slightly lowered. */
    float g = kmath_float(kmath_bits(as) / 3u + 709958130u);
    /* Halley's iterations triple the correct digits: 3% -> 1e-5 in
     * float32 (twice as many lanes as float64), -> 1e-15 in float64. */
    float g3 = g * g * g;
    g = g * ((g3 + 2.0f * as) / (2.0f * g3 + as));
    double ad = (double)as, y = (double)g;
    double y3 = y * y * y;
    y = y * ((y3 + 2.0 * ad) / (2.0 * y3 + ad));
    y = sub ? y * 0x1p-8 : big ? y * 0x1p20 : y;
    float r = (float)y;
    r = kmath_float(kmath_bits(r) | (kmath_bits(xf) & 0x80000000u));
    /* Zeros, infinities and NaN are their own cube roots. */
    return (a == 0.0f || !(a < __builtin_inff())) ? xf : r;
}

/*
 * erf: on |x| < 1 the Taylor series of erf(x) / x in x^2, to x^24 (the
 * first omitted term is below 1e-11); on [1, 4) 1 - e^(-x^2) Q(|x|),
 * where Q approximates erfc(x) e^(x^2) on [1, 4] to 5e-11 relative
 * (degree 15 in |x| - 2.5, a Chebyshev fit to Python's math.erfc);
 * beyond 3.9, erf rounds to 1 in float32.
 */
static inline float
kmath_erf(float xf)
{
    double a = (double)xf;
    a = a < 0.0 ? -a : a;
    a = a < 4.0 ? a : 4.0; /* NaN: 4 (the NaN is returned at the end) */
    double t = a * a;
    double p = 9.4227590646504113e-11;
    p = p * t - 1.2290555301717926e-09;
    p = p * t + 1.4807192815879218e-08;
    p = p * t - 1.6365844691234924e-07;
    p = p * t + 1.6462114365889246e-06;
    p = p * t - 1.492565035840625e-05;
    p = p * t + 0.00012055332981789664;
    p = p * t - 0.00085483270234508522;
    p = p * t + 0.0052239776254421879;
    p = p * t - 0.026866170645131252;
    p = p * t + 0.11283791670955126;
    p = p * t - 0.37612638903183754;
    p = p * t + 1.1283791670955126;
    double small = a * p;
    double v = a - 2.5;
    double q = -1.4546958689093772e-09;
    q = q * v + 6.2104521898769455e-09;
    q = q * v - 1.3716097095027635e-08;
    q = q * v + 5.7601198390138006e-08;
    q = q * v - 2.7830588886628799e-07;
    q = q * v + 1.1041763402438759e-06;
    q = q * v - 4.2077574283380872e-06;
    q = q * v + 1.5941341623278381e-05;
    q = q * v - 5.8873456220292105e-05;
    q = q * v + 0.00021103177632761814;
    q = q * v - 0.00073358930901302978;
    q = q * v + 0.002467033412247523;
    q = q * v - 0.0080015696462591383;
    q = q * v + 0.02493799745473739;
    q = q * v - 0.074347346777320175;
    q = q * v + 0.21080636405462577;
    double large = 1.0 - kmath_exp64(-t) * q;
    float r = (float)(a < 1.0 ? small : large);
    r = kmath_float(kmath_bits(r) | (kmath_bits(xf) & 0x80000000u));
    return xf != xf ? xf : r;
}

/*
 * Float remainder and floor division with NumPy's (and Python's) rules:
 * the remainder takes the sign of the divisor, and the quotient is
 * floor(a / b) computed from the exact remainder, so that
 * a == b * q + r as closely as the format allows.
 */
#define DEFINE_FLOAT_DIVMOD(SFX, T, FMOD, FLOOR, COPYSIGN) \
    static inline T SFX##_mod(T a, T b)                    \
    {                                                      \
        T r = FMOD(a, b);                                  \
        if (b == 0) {                                      \
            return r;                                      \
        }                                                  \
        if (r != 0) {                                      \
            if ((b < 0) != (r < 0)) {                      \
                r += b;                                    \
            }                                              \
        } else {                                           \
            r = COPYSIGN((T)0, b);                         \
        }                                                  \
        return r;                                          \
    }                                                      \
    static inline T SFX##_floor_divide(T a, T b)           \
    {                                                      \
        T r, q, fq;                                        \
        if (b == 0) {                                      \
            return a / b;                                  \
        }                                                  \
        r = FMOD(a, b);                                    \
        q = (a - r) / b;                                   \
        if (r != 0 && (b < 0) != (r < 0)) {                \
            q -= 1;                                        \
        }                                                  \
        if (q == 0) {                                      \
            return COPYSIGN((T)0, a / b);                  \
        }                                                  \
        /* q is within rounding of an integer: snap it. */ \
        fq = FLOOR(q);                                     \
        if (q - fq > (T)0.5) {                             \
            fq += 1;                                       \
        }                                                  \
        return fq;                                         \
    }

#endif /* NRTEMU_KERNEL_MATH_H */
