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

static inline float
kmath_exp(float x)
{
    /* Beyond these bounds the result is 0 or infinity anyway; clamping
     * keeps the integer exponent in range.  The comparisons are written
     * so that they compile to maxps/minps, which also turn a NaN into a
     * harmless number (the NaN is returned at the end). */
    float c = x > -104.0f ? x : -104.0f; /* maxps: NaN becomes -104 */
    c = c < 89.0f ? c : 89.0f;
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
    /* n is in [-150, 128]: scale in two steps so that each factor is a
     * normal float; only the last product rounds (subnormal results). */
    int32_t ni = (int32_t)n;
    int32_t n1 = ni >> 1; /* arithmetic shift (GCC) */
    float y = p * kmath_pow2(n1) * kmath_pow2(ni - n1);
    return x != x ? x : y;
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
    float a = kmath_float(kmath_bits(x) & 0x7fffffffu);
    a = a < 9.1f ? a : 9.1f; /* minps: NaN becomes 9.1 */
    float e = kmath_expm1_pos(2.0f * a);
    float t = e / (e + 2.0f);
    t = kmath_float(kmath_bits(t) | (kmath_bits(x) & 0x80000000u));
    return x != x ? x : t;
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
    float w = 2.0f / 9.0f;
    w = w * z + 2.0f / 7.0f;
    w = w * z + 2.0f / 5.0f;
    w = w * z + 2.0f / 3.0f;
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

#endif /* NRTEMU_KERNEL_MATH_H */
