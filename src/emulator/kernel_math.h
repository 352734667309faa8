/*
 * kernel_math.h - float32 exp, log and tanh that GCC vectorises (internal).
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

#endif /* NRTEMU_KERNEL_MATH_H */
