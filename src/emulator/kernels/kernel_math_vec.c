/*
 * kernel_math_vec.c - block loops of the transcendental elementwise ops.
 *
 * The pattern of every loop here: a chunk of CHUNK elements goes through
 * a branch-free formula (selects only, so that GCC vectorises it for each
 * clone of NRTEMU_MULTIVERSION) into a local block, which also records
 * whether any element lies outside the formula's domain; those elements,
 * and only those, are then recomputed by the exact slow path (libm, or a
 * wider formula), and the block is copied out.  The local block lets the
 * output be the operand (each chunk is read before it is written) and
 * frees the vector loop of aliasing checks.
 */
#include "kernels/cpu.h"
#include "kernels/kernel_math_vec.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "kernels/kernel_math.h"
#include "kernels/kernel_stream.h"
#include "kernels/simd.h"
#include "kernels/simd_tail.h"

#if NRTEMU_X86_CLONES
#include <immintrin.h>
#endif

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
 * float32 log, expm1, log1p and cbrt
 *
 * In float32 arithmetic, within 1 ulp of the exact value for every
 * float32 argument of their domains (checked exhaustively, FMA or not; cbrt
 * with FMA, which it needs for y^3 - a: libm's fmaf in the baseline
 * clone); the rest (expm1 above 88, log1p at or below -1, cbrt below
 * 2^-100 and beyond 2^126, infinities, NaN) takes the float64 formulas of
 * kernel_math.h.
 */

/* 2^n for an integer n in [-126, 127] held in a float, without a
 * conversion to an integer (undefined beyond int32). */
NRTEMU_INLINE float
pow2_of_float(float n)
{
    return kmath_float(kmath_bits(n + (12582912.0f + 127.0f)) << 23);
}

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
    default:
        return false;
    }
}

/* ---------------------------------------------------------------------
 * float32 pow
 *
 * x^y = 2^(y log2 x) in float32 arithmetic with about 48-bit
 * intermediates (sums and products of two floats, exact through FMA): a
 * float32 formula has twice float64's lanes, and this is the op's
 * bottleneck.  For x positive and normal, y finite and |y log2 x| < 125
 * (finite normal results); the rest (zeros, subnormals, negative x,
 * infinities, NaN, results near overflow or below 2^-125) takes powf,
 * for C pow's special cases exactly.
 *
 * log2 x = e + log2 m, m in [sqrt(1/2), sqrt 2); log2 m = K atanh(s),
 * K = 2 / ln 2, s = (m - 1) / (m + 1) with m + 1 = d + dl exactly and s
 * = s_hi + s_lo to about 2^-46; K s and K s^3 / 3 as sums of two floats,
 * the rest of the series (to s^11, first omitted term 2^-34 relative)
 * in float32.  Then p = y (L_hi + L_lo) as a sum of two floats, n =
 * round(p_hi), r = (p_hi - n) + p_lo (|r| <= 1/2 + a hair) and 2^r by
 * its Taylor series to r^8 (2^-32 relative): the error of L is about
 * 2^-35 relative, of r 2^-28 absolute where |p| ~ 125.  What is left is
 * float32's rounding of r and of the series: at most 1.001 ulp of the
 * exact power, measured on 2^25 arguments from 0.5 to 2 and with |p| up
 * to 150, and never more than one float from the correctly rounded power
 * (powf of glibc: 0.82 ulp; a float64 formula: 0.5).  With AVX-512 the
 * op takes pow_f32_avx512() below instead (a table-driven formula, 0.67
 * ulp, and faster).
 */
#define POW_K_HI 0x1.715476p+1f /* 2 / ln 2 = K_HI + K_LO */
#define POW_K_LO 0x1.4ae0cp-25f
#define POW_K3_HI 0x1.ec709ep-1f /* K / 3 = K3_HI + K3_LO */
#define POW_K3_LO -0x1.e2fe02p-28f

/* pow(x, y) for the x, y of F32_POW_OK; *ph gets p_hi for that test. */
NRTEMU_INLINE float
pow_f32(float x, float y, float *ph)
{
    struct kmath_split32 sp = kmath_split_sqrt2(x); /* x = 2^e m */
    float e = (float)sp.e;
    float m = sp.m;
    float f = m - 1.0f; /* exact */
    float d = 1.0f + m;
    float dl = m - (d - 1.0f); /* d + dl = m + 1 exactly */
    float inv = 1.0f / d;
    float s = f * inv;
    float sl = (__builtin_fmaf(-s, d, f) - s * dl) * inv;
    /* z = s^2 and q = s^3 as sums of two floats */
    float z = s * s;
    float zl = __builtin_fmaf(s, s, -z);
    float q = s * z;
    float ql = __builtin_fmaf(s, z, -q) + s * zl;
    float t = POW_K3_HI * q; /* K s^3 / 3 */
    float tl =
        __builtin_fmaf(POW_K3_HI, q, -t) + (POW_K3_HI * ql + POW_K3_LO * q);
    float w = POW_K_HI / 11.0f;
    w = w * z + POW_K_HI / 9.0f;
    w = w * z + POW_K_HI / 7.0f;
    w = w * z + POW_K_HI / 5.0f;
    float h = POW_K_HI * s; /* K s */
    float hl = __builtin_fmaf(POW_K_HI, s, -h);
    float u = h + t; /* |h| > |t|: two-sum in three steps */
    float ul = t - (u - h);
    /* s_lo to first order: d atanh(s) / ds = 1 / (1 - s^2) */
    float lo =
        hl +
        (ul + (tl + (POW_K_LO * s + POW_K_HI * sl * (1.0f + z) + q * z * w)));
    float lh = e + u; /* |e| >= 1 > |u|, or e = 0 */
    float ll = (u - (lh - e)) + lo;
    float p = y * lh;
    float pl = __builtin_fmaf(y, lh, -p) + y * ll;
    *ph = p;
    float n = (p + 12582912.0f) - 12582912.0f;
    float r = (p - n) + pl; /* p - n exact */
    /* 2^r = e^(r ln 2): the coefficients (ln 2)^k / k! */
    float c = 0x1.62c022p-20f;
    c = c * r + 0x1.ffcbfcp-17f;
    c = c * r + 0x1.430912p-13f;
    c = c * r + 0x1.5d87fep-10f;
    c = c * r + 0x1.3b2ab6p-7f;
    c = c * r + 0x1.c6b08ep-5f;
    c = c * r + 0x1.ebfbep-3f;
    c = c * r + 0x1.62e43p-1f;
    c = c * r + 1.0f;
    return c * pow2_of_float(n);
}
/* The domain of pow_f32(), ph its p_hi (false for NaN). */
#define F32_POW_OK(x, y, ph)                         \
    (((x) >= 0x1p-126f) & ((x) < __builtin_inff()) & \
     (fabsf(y) < __builtin_inff()) & (fabsf(ph) < 125.0f))

NRTEMU_MULTIVERSION
static void
vmath_f32_pow(size_t n, const float *a, bool sa, const float *b, bool sb,
              float *o)
{
    for (size_t j = 0; j < n; j += CHUNK) {
        size_t c = n - j < CHUNK ? n - j : CHUNK;
        float t[CHUNK], ph[CHUNK], xs[CHUNK], ys[CHUNK];
        const float *x = vmath_f32_block(a, sa, j, c, xs);
        const float *y = vmath_f32_block(b, sb, j, c, ys);
        int bad = 0;
        /* No selects on the arguments: the formula takes any x and y
         * (its conversions to integers see clamped or integer values),
         * and the lanes outside its domain are recomputed below. */
        for (size_t i = 0; i < c; i++) {
            float xv = x[i], yv = y[i];
            t[i] = pow_f32(xv, yv, &ph[i]);
            bad |= !F32_POW_OK(xv, yv, ph[i]);
        }
        if (bad) {
            for (size_t i = 0; i < c; i++) {
                if (!F32_POW_OK(x[i], y[i], ph[i])) {
                    t[i] = powf(x[i], y[i]);
                }
            }
        }
        memcpy(o + j, t, c * sizeof *o);
    }
}

/* ---------------------------------------------------------------------
 * float32 pow with AVX-512, and for a bfloat16 or float16 result
 *
 * Such a result keeps 8 or 11 of the float32 power's bits, so a cheaper
 * formula decides most of them: x = 2^k z, z in [0.7, 1.4); log2 z =
 * log2(1 / c) + log2(1 + r), r = z c - 1, with c from a 32-entry table
 * indexed by the top bits of z (c a multiple of 1/32: r is exact, |r| <=
 * 0.031, and c = 1 about z = 1, so log2 x keeps its relative accuracy
 * there), log2(1 + r) by its series to r^5; 2^p = 2^(n/32) 2^f, |f| <=
 * 1/64, with 2^(j/32) from a second table and 2^f - 1 by its series to
 * f^3.  All in float32, no division, 16 lanes a step with AVX-512 (the
 * tables in registers: vpermi2ps).  Wherever the narrow rounding could
 * differ between it and the float32 op (near a halfway point of the
 * narrow type, see NPOW_ERR_0; out of its domain: x not positive normal,
 * |p| >= 120 or not a number, y infinite or NaN included, or a float16
 * result below 2^-14, where the halfway points move), the lane takes the
 * float32 op itself (with AVX-512: pow_f32_avx512(), the same tables with
 * two-float intermediates).  So the narrow results are those of the
 * float32 op rounded, bit for bit (checked for every pair of bfloat16
 * and of float16 codes).
 */
#if NRTEMU_X86_CLONES
#include <immintrin.h>
#include <pthread.h>

#include "kernels/kernel_codes16.h"

#define NPOW_OFF 0x3f330000u /* z in [0.69921875, 1.3984375) */

/* The error of the cheap formula is below NPOW_ERR_0 + NPOW_ERR_P |p|
 * float32 ulps: over twice the largest measured, 1.8 (1 + |p|), mostly the
 * rounding of p = y log2 x (2^-24 |p|).  A lane at least 2 ulps farther
 * than that from a halfway point (the float32 op's error is below 1 ulp)
 * rounds as the float32 op's result does. */
#define NPOW_ERR_0 4.0f
#define NPOW_ERR_P 4.0f

/* 1 / c, log2 c and 2^(i/32) for i < 32 (computed once). */
static struct {
    float inv_c[32], log_c[32], exp2[32];
    /* for the float32 op: log2 c = log_c_hi + log_c_lo, log_c_hi a
     * multiple of 2^-16 (so that k + log_c_hi is exact); 2^(i/32) =
     * exp2 + exp2_lo */
    float log_c_hi[32], log_c_lo[32], exp2_lo[32];
} npow_table;
static pthread_once_t npow_once = PTHREAD_ONCE_INIT;

static void
npow_table_init(void)
{
    for (uint32_t i = 0; i < 32; i++) {
        /* c: the middle of the i-th interval of z, whose inverse is
         * rounded to a multiple of 1/32 (then z / c - 1 fits in a float
         * for every z of the interval) */
        double lo = (double)kmath_float(NPOW_OFF + (i << 18));
        double hi = (double)kmath_float(NPOW_OFF + ((i + 1) << 18));
        double inv = nearbyint(64.0 / (lo + hi)) / 32.0;
        if (lo >= 0x1.fp-1 && hi <= 0x1.08p0) {
            /* about 1: z - 1 itself, so that log2 z is not the difference
             * of two near values */
            inv = 1.0;
        }
        npow_table.inv_c[i] = (float)inv;
        npow_table.log_c[i] = (float)-log2(inv);
        npow_table.exp2[i] = (float)exp2(i / 32.0);
        double lc = -log2(inv), lc_hi = nearbyint(lc * 65536.0) / 65536.0;
        npow_table.log_c_hi[i] = (float)lc_hi;
        npow_table.log_c_lo[i] = (float)(lc - lc_hi);
        npow_table.exp2_lo[i] = (float)(exp2(i / 32.0) - npow_table.exp2[i]);
    }
}

#define NPOW_TARGET __attribute__((target("arch=x86-64-v4")))

/* Whether the CPU runs NPOW_TARGET code (AVX-512 F, BW, DQ, VL). */
static bool
npow_cpu(void)
{
    return nrtemu__cpu_has(NRTEMU_CPU_V4);
}

/* npow_cpu(), and then the tables are built (once). */
static bool
npow_ready(void)
{
    if (!npow_cpu()) {
        return false;
    }
    pthread_once(&npow_once, npow_table_init);
    return true;
}

/* x = 2^k z, z in the table's interval idx (its low 5 bits): the split
 * of npow_16() and pow16_f32(); the lanes where x is positive normal
 * and finite. */
NPOW_TARGET static inline __attribute__((always_inline)) __mmask16
npow_split(__m512 x, __m512 *k, __m512 *z, __m512i *idx)
{
    __m512i ix = _mm512_castps_si512(x);
    __m512i tmp = _mm512_sub_epi32(ix, _mm512_set1_epi32((int)NPOW_OFF));

    *k = _mm512_cvtepi32_ps(_mm512_srai_epi32(tmp, 23));
    *z = _mm512_castsi512_ps(_mm512_sub_epi32(
        ix, _mm512_and_si512(tmp, _mm512_set1_epi32((int)0xff800000u))));
    *idx = _mm512_srli_epi32(tmp, 18);
    return _mm512_cmplt_epu32_mask(
        _mm512_sub_epi32(ix, _mm512_set1_epi32(0x00800000)),
        _mm512_set1_epi32(0x7f000000));
}

/* The cheap power of 16 lanes; *bad gets the lanes that must take
 * pow_f32_avx512() (m_bits: the float32 bits below the narrow type's
 * last; min_bits: the smallest result whose halfway points are those). */
NPOW_TARGET static inline __attribute__((always_inline)) __m512
npow_16(__m512 x, __m512 y, const __m512 *t, uint32_t m_bits,
        uint32_t min_bits, __mmask16 *bad)
{
    const __m512i one_i = _mm512_set1_epi32(1);
    __m512 k, z;
    __m512i idx;
    /* x positive normal and finite (y: |p| < 120 below) */
    __mmask16 ok = npow_split(x, &k, &z, &idx);
    __m512 inv_c = _mm512_permutex2var_ps(t[0], idx, t[1]);
    __m512 log_c = _mm512_permutex2var_ps(t[2], idx, t[3]);
    __m512 r = _mm512_fmsub_ps(z, inv_c, _mm512_set1_ps(1.0f)); /* exact */
    /* log2(1 + r) = (r - r^2/2 + r^3/3 - r^4/4 + r^5/5) / ln 2 */
    __m512 q = _mm512_set1_ps(0x1.277278p-2f); /* 1 / (5 ln 2) */
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(-0x1.715476p-2f));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0x1.ec709ep-2f));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(-0x1.715476p-1f));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0x1.715476p+0f));
    __m512 l = _mm512_fmadd_ps(q, r, _mm512_add_ps(k, log_c));
    __m512 p = _mm512_mul_ps(y, l);
    __m512 abs_p = _mm512_abs_ps(p);
    ok &= _mm512_cmplt_ps_mask(abs_p, _mm512_set1_ps(120.0f));
    /* n = round(32 p), in the low bits of v; f = p - n / 32 exact */
    __m512 v =
        _mm512_fmadd_ps(p, _mm512_set1_ps(32.0f), _mm512_set1_ps(12582912.0f));
    __m512 nf = _mm512_sub_ps(v, _mm512_set1_ps(12582912.0f));
    __m512 f = _mm512_fnmadd_ps(nf, _mm512_set1_ps(0x1p-5f), p);
    __m512i vi = _mm512_castps_si512(v);
    __m512 s = _mm512_permutex2var_ps(t[4], vi, t[5]);
    /* 2^f - 1 = f ln2 + (f ln2)^2 / 2 + (f ln2)^3 / 6 */
    __m512 e = _mm512_set1_ps(0x1.c6b08ep-5f);
    e = _mm512_fmadd_ps(e, f, _mm512_set1_ps(0x1.ebfbep-3f));
    e = _mm512_fmadd_ps(e, f, _mm512_set1_ps(0x1.62e43p-1f));
    e = _mm512_mul_ps(e, f);
    __m512 res = _mm512_fmadd_ps(s, e, s);
    /* times 2^floor(n / 32): into the exponent field (res normal) */
    __m512i rb = _mm512_add_epi32(
        _mm512_castps_si512(res),
        _mm512_and_si512(_mm512_slli_epi32(vi, 18),
                         _mm512_set1_epi32((int)0xff800000u)));
    /* far enough from a halfway point of the narrow type */
    __m512i half = _mm512_slli_epi32(one_i, (unsigned)m_bits - 1);
    __m512i low = _mm512_and_si512(
        rb,
        _mm512_sub_epi32(_mm512_slli_epi32(one_i, (unsigned)m_bits), one_i));
    __m512i dist = _mm512_abs_epi32(_mm512_sub_epi32(low, half));
    __m512i lim = _mm512_cvttps_epi32(_mm512_fmadd_ps(
        abs_p, _mm512_set1_ps(NPOW_ERR_P), _mm512_set1_ps(NPOW_ERR_0 + 2.0f)));
    ok &= _mm512_cmpgt_epi32_mask(dist, lim);
    if (min_bits != 0) {
        ok &= _mm512_cmpge_epu32_mask(rb, _mm512_set1_epi32((int)min_bits));
    }
    *bad = (__mmask16)~ok;
    return _mm512_castsi512_ps(rb);
}

/*
 * The float32 op itself with AVX-512: the same tables, with the
 * intermediates of two floats that a float32 result needs (the error of
 * log2 x about 2^-34 relative, of p = y log2 x about 2^-27 where |p| ~
 * 125): log2(1 + r) = K r - K r^2 / 2 + K r^3 R(r), K = 1 / ln 2, K r
 * and K r^2 / 2 as sums of two floats (r exact, r^2 by an FMA), and
 * k + log2 c + K r, then - K r^2 / 2, added by Fast2Sum (|k + log2 c| >=
 * |K r| for every interval, or k + log2 c = 0; |k + log2 c + K r| >=
 * |K r^2 / 2|); p = y L as two floats, and 2^p = 2^(n/32) (T_hi + T_lo)
 * (1 + e), e = 2^f - 1 by its series to f^3 (2^-31), f = p - n/32 + p_lo.
 * At most 0.68 ulp of the exact power, measured on 2^25 arguments (x
 * in every binade with |p| up to 150, x near 1 with |y| up to 10^7, x
 * from 0.5 to 2, any bit patterns), 99.7% correctly rounded, against
 * 1.001 ulp for vmath_f32_pow()'s formula, and faster.  x not positive normal,
 * y infinite or NaN, |p| >= 125: powf.
 */
#define NPOW_K_HI 0x1.715476p+0f /* 1 / ln 2 = K_HI + K_LO */
#define NPOW_K_LO 0x1.4ae0cp-26f

NPOW_TARGET static inline __attribute__((always_inline)) __m512
pow16_f32(__m512 x, __m512 y, const __m512 *t, __mmask16 *bad)
{
    __m512 k, z;
    __m512i idx;
    __mmask16 ok = npow_split(x, &k, &z, &idx);
    __m512 inv_c = _mm512_permutex2var_ps(t[0], idx, t[1]);
    __m512 lc_hi = _mm512_permutex2var_ps(t[6], idx, t[7]);
    __m512 lc_lo = _mm512_permutex2var_ps(t[8], idx, t[9]);
    __m512 r = _mm512_fmsub_ps(z, inv_c, _mm512_set1_ps(1.0f)); /* exact */
    const __m512 k_hi = _mm512_set1_ps(NPOW_K_HI);
    const __m512 kh_hi = _mm512_set1_ps(0.5f * NPOW_K_HI);
    /* K r = a + al + r K_LO */
    __m512 a = _mm512_mul_ps(r, k_hi);
    __m512 al = _mm512_fmsub_ps(r, k_hi, a);
    /* r^2 = r2 + r2l; K_HI r^2 / 2 = b + bl */
    __m512 r2 = _mm512_mul_ps(r, r);
    __m512 r2l = _mm512_fmsub_ps(r, r, r2);
    __m512 b = _mm512_mul_ps(r2, kh_hi);
    __m512 bl = _mm512_fmadd_ps(r2l, kh_hi, _mm512_fmsub_ps(r2, kh_hi, b));
    /* q = K (1/3 - r/4 + r^2/5 - r^3/6); then the small terms,
     * r (K_LO - r (K_LO / 2 - r q)), in three FMAs */
    __m512 q = _mm512_set1_ps(-NPOW_K_HI / 6.0f);
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(NPOW_K_HI / 5.0f));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(-NPOW_K_HI / 4.0f));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(NPOW_K_HI / 3.0f));
    __m512 w = _mm512_fnmadd_ps(r, q, _mm512_set1_ps(0.5f * NPOW_K_LO));
    w = _mm512_fnmadd_ps(r, w, _mm512_set1_ps(NPOW_K_LO));
    __m512 small = _mm512_fmadd_ps(r, w, al);
    /* L = k + log2 c + a - b, as s + lo */
    __m512 h = _mm512_add_ps(k, lc_hi); /* exact */
    __m512 s1 = _mm512_add_ps(h, a);
    __m512 e1 = _mm512_sub_ps(a, _mm512_sub_ps(s1, h));
    __m512 s = _mm512_sub_ps(s1, b);
    __m512 e2 = _mm512_sub_ps(_mm512_sub_ps(s1, s), b);
    __m512 lo = _mm512_add_ps(
        _mm512_add_ps(_mm512_sub_ps(small, bl), _mm512_add_ps(e1, e2)), lc_lo);
    __m512 p = _mm512_mul_ps(y, s);
    __m512 pl = _mm512_fmadd_ps(y, lo, _mm512_fmsub_ps(y, s, p));
    ok &= _mm512_cmplt_ps_mask(_mm512_abs_ps(p), _mm512_set1_ps(125.0f));
    __m512 v =
        _mm512_fmadd_ps(p, _mm512_set1_ps(32.0f), _mm512_set1_ps(12582912.0f));
    __m512 nf = _mm512_sub_ps(v, _mm512_set1_ps(12582912.0f));
    __m512 f =
        _mm512_add_ps(_mm512_fnmadd_ps(nf, _mm512_set1_ps(0x1p-5f), p), pl);
    __m512i vi = _mm512_castps_si512(v);
    __m512 th = _mm512_permutex2var_ps(t[4], vi, t[5]);
    __m512 tl = _mm512_permutex2var_ps(t[10], vi, t[11]);
    __m512 e = _mm512_set1_ps(0x1.c6b08ep-5f);
    e = _mm512_fmadd_ps(e, f, _mm512_set1_ps(0x1.ebfbep-3f));
    e = _mm512_fmadd_ps(e, f, _mm512_set1_ps(0x1.62e43p-1f));
    e = _mm512_mul_ps(e, f);
    __m512 res = _mm512_add_ps(_mm512_fmadd_ps(th, e, tl), th);
    __m512i rb = _mm512_add_epi32(
        _mm512_castps_si512(res),
        _mm512_and_si512(_mm512_slli_epi32(vi, 18),
                         _mm512_set1_epi32((int)0xff800000u)));
    *bad = (__mmask16)~ok;
    return _mm512_castsi512_ps(rb);
}

/* The float32 op on the lanes m of x and y, stored to o. */
NPOW_TARGET static inline __attribute__((always_inline)) void
pow16_f32_store(__m512 x, __m512 y, const __m512 *t, __mmask16 m, float *o)
{
    __mmask16 bad;
    tail_store_ps(o, m, pow16_f32(x, y, t, &bad));
    bad &= m;
    if (bad != 0) {
        float xs[16], ys[16];
        _mm512_storeu_ps(xs, x);
        _mm512_storeu_ps(ys, y);
        do {
            int l = __builtin_ctz(bad);
            o[l] = powf(xs[l], ys[l]);
            bad &= (__mmask16)(bad - 1);
        } while (bad != 0);
    }
}

/* The tables in registers (npow_16: 0 to 5, pow16_f32: 0, 1, 4 to 11). */
NPOW_TARGET static inline __attribute__((always_inline)) void
npow_load(__m512 *t)
{
    for (int i = 0; i < 2; i++) {
        t[i] = _mm512_loadu_ps(npow_table.inv_c + 16 * i);
        t[2 + i] = _mm512_loadu_ps(npow_table.log_c + 16 * i);
        t[4 + i] = _mm512_loadu_ps(npow_table.exp2 + 16 * i);
        t[6 + i] = _mm512_loadu_ps(npow_table.log_c_hi + 16 * i);
        t[8 + i] = _mm512_loadu_ps(npow_table.log_c_lo + 16 * i);
        t[10 + i] = _mm512_loadu_ps(npow_table.exp2_lo + 16 * i);
    }
}

NPOW_TARGET static void
pow_f32_avx512(size_t n, const float *a, bool sa, const float *b, bool sb,
               float *o)
{
    __m512 t[12];
    npow_load(t);
    /* whole vectors with plain loads and stores, then the tail masked
     * (faster than masking every step: simd_tail.h) */
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 x = sa ? _mm512_set1_ps(a[0]) : _mm512_loadu_ps(a + i);
        __m512 y = sb ? _mm512_set1_ps(b[0]) : _mm512_loadu_ps(b + i);
        __mmask16 bad;
        _mm512_storeu_ps(o + i, pow16_f32(x, y, t, &bad));
        if (bad != 0) {
            pow16_f32_store(x, y, t, bad, o + i);
        }
    }
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m512 x = sa ? _mm512_set1_ps(a[0]) : tail_load_ps(m, a + i);
        __m512 y = sb ? _mm512_set1_ps(b[0]) : tail_load_ps(m, b + i);
        pow16_f32_store(x, y, t, m, o + i);
    }
}

NPOW_TARGET static inline __attribute__((always_inline)) void
npow_run(size_t n, const float *a, bool sa, const float *b, bool sb, float *o,
         uint32_t m_bits, uint32_t min_bits)
{
    __m512 t[12];
    npow_load(t);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = codes16_mask(n - i);
        __m512 x = sa ? _mm512_set1_ps(a[0]) : tail_load_ps(m, a + i);
        __m512 y = sb ? _mm512_set1_ps(b[0]) : tail_load_ps(m, b + i);
        __mmask16 bad;
        __m512 r = npow_16(x, y, t, m_bits, min_bits, &bad);
        bad &= m;
        tail_store_ps(o + i, m & (__mmask16)~bad, r);
        if (bad != 0) {
            pow16_f32_store(x, y, t, bad, o + i);
        }
    }
}

/*
 * float32 log1p with AVX-512, on npow_table's intervals: u = 1 + x =
 * 2^k z (u rounds; its error d = x - (u - 1) is exact below 2^24, and
 * beyond it moves the result by less than 2^-40 of itself), log(1 + x) =
 * k ln 2 - log c + log(1 + r + d'), r = z c - 1 exact, d' = d c 2^-k,
 * |r| <= 0.031: log(1 + r + d') = r - r^2 (1/2 - r q(r)) + d' (1 - r),
 * the series to r^5 (the first omitted term, r^6 / 6, is below 2^-27 of
 * the result).  k ln 2 - log c = H + L, H = k LN2_HI + (-log c)_hi exact
 * (multiples of 2^-16 below 2^7), and H + r as a sum of two floats
 * (Fast2Sum: |H| >= |r| for every interval, or H = 0); everything else is
 * below 2^-6 of the result and rounds there.  At most 0.661 ulp of the
 * exact value on every float32 above -1, 99.83% correctly rounded
 * (log1p_f32(): 1.24 ulp, 99.63%), and faster than log1p_f32() (no division);
 * -1 and below, infinities and NaN take kmath_log1p().  c: the integer
 * constants, which the loop holds in registers (see log1p_f32_avx512).
 */
static struct {
    float ln_c_hi[32], ln_c_lo[32]; /* -log c = hi + lo, hi k 2^-16 */
} nlog1p_table;
static pthread_once_t nlog1p_once = PTHREAD_ONCE_INIT;

static void
nlog1p_table_init(void)
{
    for (uint32_t i = 0; i < 32; i++) {
        double lc = -log((double)npow_table.inv_c[i]);
        double hi = nearbyint(lc * 65536.0) / 65536.0;
        nlog1p_table.ln_c_hi[i] = (float)hi;
        nlog1p_table.ln_c_lo[i] = (float)(lc - hi);
    }
}

NPOW_TARGET static inline __attribute__((always_inline)) __m512
log1p16_f32(__m512 x, const __m512 *t, const __m512i *c, __mmask16 *ok)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 u = _mm512_add_ps(x, one);
    __m512 d = _mm512_sub_ps(x, _mm512_sub_ps(u, one)); /* exact */
    __m512 k, z;
    __m512i idx;
    /* npow_split() with the constants c[0] to c[3] that the loop holds;
     * x > -1 and finite: u positive (then at least 2^-24) and finite */
    __m512i iu = _mm512_castps_si512(u);
    __m512i tmp = _mm512_sub_epi32(iu, c[0]);
    k = _mm512_cvtepi32_ps(_mm512_srai_epi32(tmp, 23));
    z = _mm512_castsi512_ps(_mm512_sub_epi32(iu, _mm512_and_si512(tmp, c[1])));
    idx = _mm512_srli_epi32(tmp, 18);
    *ok = _mm512_cmplt_epu32_mask(_mm512_sub_epi32(iu, c[2]), c[3]);
    __m512 inv_c = _mm512_permutex2var_ps(t[0], idx, t[1]);
    __m512 lc_hi = _mm512_permutex2var_ps(t[2], idx, t[3]);
    __m512 lc_lo = _mm512_permutex2var_ps(t[4], idx, t[5]);
    __m512 r = _mm512_fmsub_ps(z, inv_c, one); /* exact */
    __m512 dc = _mm512_scalef_ps(_mm512_mul_ps(d, inv_c),
                                 _mm512_sub_ps(_mm512_setzero_ps(), k));
    dc = _mm512_fnmadd_ps(dc, r, dc); /* d' (1 - r) */
    __m512 q = _mm512_set1_ps(1.0f / 5.0f);
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(-1.0f / 4.0f));
    q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.0f / 3.0f));
    q = _mm512_fmsub_ps(q, r, _mm512_set1_ps(0.5f)); /* r q - 1/2 */
    __m512 r2 = _mm512_mul_ps(r, r);
    __m512 h = _mm512_fmadd_ps(k, _mm512_set1_ps(KMATH_LN2_HI), lc_hi);
    __m512 s = _mm512_add_ps(h, r);
    __m512 e = _mm512_sub_ps(r, _mm512_sub_ps(s, h)); /* H + r = s + e */
    __m512 lo = _mm512_fmadd_ps(k, _mm512_set1_ps(KMATH_LN2_LO), lc_lo);
    lo = _mm512_add_ps(_mm512_add_ps(lo, e), dc);
    __m512 y = _mm512_add_ps(s, _mm512_fmadd_ps(r2, q, lo));
    /* the sign of x (log1p keeps it), which -0 needs: y | (x & sign) */
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
        _mm512_castps_si512(y), _mm512_castps_si512(x), c[4], 0xf8));
}

/* The lanes m & ok of y to o, scalar() of a to the lanes m & ~ok (the
 * vector formula's domain left out; `scalar` folds in, being constant in
 * every caller). */
NPOW_TARGET static inline __attribute__((always_inline)) void
f32x16_store_or(__m512 y, __mmask16 ok, __mmask16 m, const float *a, float *o,
                float (*scalar)(float))
{
    __mmask16 bad = m & (__mmask16)~ok;
    tail_store_ps(o, m & ok, y);
    while (bad != 0) {
        int l = __builtin_ctz(bad);
        o[l] = scalar(a[l]);
        bad &= (__mmask16)(bad - 1);
    }
}

NPOW_TARGET static void
log1p_f32_avx512(size_t n, const float *a, float *o)
{
    __m512 t[6];
    pthread_once(&nlog1p_once, nlog1p_table_init);
    for (int i = 0; i < 2; i++) {
        t[i] = _mm512_loadu_ps(npow_table.inv_c + 16 * i);
        t[2 + i] = _mm512_loadu_ps(nlog1p_table.ln_c_hi + 16 * i);
        t[4 + i] = _mm512_loadu_ps(nlog1p_table.ln_c_lo + 16 * i);
    }
    /* The integer constants, opaque to GCC: built once rather than
     * broadcast from a general register in every iteration, which GCC
     * does for want of registers (the tables hold six), at a cost in time. */
    __m512i c[5] = {
        _mm512_set1_epi32((int)NPOW_OFF), _mm512_set1_epi32((int)0xff800000u),
        _mm512_set1_epi32(0x00800000), _mm512_set1_epi32(0x7f000000),
        _mm512_set1_epi32((int)0x80000000u)};
    for (int j = 0; j < 5; j++) {
        __asm__("" : "+v"(c[j]));
    }
    /* whole vectors with plain loads and stores, then the tail masked */
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __mmask16 ok;
        __m512 y = log1p16_f32(_mm512_loadu_ps(a + i), t, c, &ok);
        if (ok == 0xffff) {
            _mm512_storeu_ps(o + i, y);
        } else {
            f32x16_store_or(y, ok, 0xffff, a + i, o + i, kmath_log1p);
        }
    }
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __mmask16 ok;
        __m512 y = log1p16_f32(tail_load_ps(m, a + i), t, c, &ok);
        f32x16_store_or(y, ok, m, a + i, o + i, kmath_log1p);
    }
}

/*
 * float32 cbrt with AVX-512: cbrt_f32() written out, its operations and
 * roundings those of the AVX-512 clone of vmath_f32_unary() (the same
 * bits, checked on every float32), without what GCC adds around them
 * there: F32_CBRT_OK on masks rather than a flag per lane, g a max rather
 * than a select that GCC pushes through the formula, plain loads and
 * stores for whole vectors, and so faster.  *ok gets the lanes of
 * F32_CBRT_OK.
 */
NPOW_TARGET static inline __attribute__((always_inline)) __m512
cbrt16_f32(__m512 x, __mmask16 *ok)
{
    __m512i xb = _mm512_castps_si512(x);
    __m512 ax = _mm512_abs_ps(x);
    __m512 g = _mm512_max_ps(ax, _mm512_set1_ps(0x1p-100f));
    __m512 third = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_castps_si512(g)),
                                 _mm512_set1_ps(1.0f / 3.0f));
    __m512 w = _mm512_castsi512_ps(_mm512_sub_epi32(
        _mm512_set1_epi32(0x54a2fa8c), _mm512_cvttps_epi32(third)));
    __m512 w3 = _mm512_mul_ps(_mm512_mul_ps(w, w), w);
    __m512 e = _mm512_fnmadd_ps(g, w3, _mm512_set1_ps(1.0f));
    __m512 p = _mm512_fmadd_ps(e, _mm512_set1_ps(14.0f / 81.0f),
                               _mm512_set1_ps(2.0f / 9.0f));
    p = _mm512_fmadd_ps(p, e, _mm512_set1_ps(1.0f / 3.0f));
    w = _mm512_fmadd_ps(_mm512_mul_ps(w, e), p, w);
    __m512 w2 = _mm512_mul_ps(w, w);
    __m512 y = _mm512_mul_ps(ax, w2);
    __m512 t = _mm512_fmsub_ps(_mm512_mul_ps(y, y), y, ax);
    __m512 r =
        _mm512_fnmadd_ps(t, _mm512_mul_ps(w2, _mm512_set1_ps(1.0f / 3.0f)), y);
    /* |x| zero or in [2^-100, 2^126], on the bits without the sign */
    __m512i x2 = _mm512_slli_epi32(xb, 1);
    *ok = _mm512_cmple_epu32_mask(
              _mm512_sub_epi32(x2, _mm512_set1_epi32((int)(0x0d800000u << 1))),
              _mm512_set1_epi32((int)((0x7e800000u - 0x0d800000u) << 1))) |
          _mm512_cmpeq_epi32_mask(x2, _mm512_setzero_si512());
    /* r | (x & sign) */
    return _mm512_castsi512_ps(
        _mm512_ternarylogic_epi32(_mm512_castps_si512(r), xb,
                                  _mm512_set1_epi32((int)0x80000000u), 0xf8));
}

NPOW_TARGET static void
cbrt_f32_avx512(size_t n, const float *a, float *o)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __mmask16 ok;
        __m512 y = cbrt16_f32(_mm512_loadu_ps(a + i), &ok);
        if (ok == 0xffff) {
            _mm512_storeu_ps(o + i, y);
        } else {
            f32x16_store_or(y, ok, 0xffff, a + i, o + i, kmath_cbrt);
        }
    }
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __mmask16 ok;
        __m512 y = cbrt16_f32(tail_load_ps(m, a + i), &ok);
        f32x16_store_or(y, ok, m, a + i, o + i, kmath_cbrt);
    }
}

/* One loop per narrow type, its constants folded. */
NPOW_TARGET static void
npow_bf16(size_t n, const float *a, bool sa, const float *b, bool sb, float *o)
{
    npow_run(n, a, sa, b, sb, o, 16, 0);
}

NPOW_TARGET static void
npow_f16(size_t n, const float *a, bool sa, const float *b, bool sb, float *o)
{
    npow_run(n, a, sa, b, sb, o, 13, 0x38800000u);
}

/*
 * npow_run over two arrays of float16 (`half`) or bfloat16 codes, results
 * as codes: the conversions in registers (kernel_codes16.h), where the
 * driver's float32 blocks on either side add passes over memory to the
 * power's time.  The same lanes take pow16_f32_store, so the same bits.
 */
/* The codes of one step of npow_codes: r where no lane is bad, the
 * float32 op on the bad lanes. */
NPOW_TARGET static inline __attribute__((always_inline)) void
npow_codes_put(uint16_t *o, __mmask16 m, __m512 x, __m512 y, const __m512 *t,
               __m512 r, __mmask16 bad, bool half)
{
    if (bad == 0 && !half) {
        /* every lane a positive normal float32 away from a halfway
         * point: rounding half up is rounding to nearest even */
        codes16_store_bf16_ok(o, m, r);
        return;
    }
    if (bad != 0) {
        float rs[16];
        _mm512_storeu_ps(rs, r);
        pow16_f32_store(x, y, t, bad, rs);
        r = _mm512_loadu_ps(rs);
    }
    codes16_store(o, m, r, half);
}

NPOW_TARGET static inline __attribute__((always_inline)) void
npow_codes(size_t n, const uint16_t *a, const uint16_t *b, uint16_t *o,
           bool half)
{
    const uint32_t m_bits = half ? 13 : 16, min_bits = half ? 0x38800000u : 0;
    const __mmask16 all = 0xffff;
    __m512 t[12];
    size_t i = 0;

    npow_load(t);
    /* two steps at a time: one branch for both */
    for (; i + 32 <= n; i += 32) {
        __mmask16 bad0, bad1;
        __m512 x0 = codes16_load(a + i, all, half);
        __m512 y0 = codes16_load(b + i, all, half);
        __m512 x1 = codes16_load(a + i + 16, all, half);
        __m512 y1 = codes16_load(b + i + 16, all, half);
        __m512 r0 = npow_16(x0, y0, t, m_bits, min_bits, &bad0);
        __m512 r1 = npow_16(x1, y1, t, m_bits, min_bits, &bad1);
        if ((bad0 | bad1) == 0 && half) {
            codes16_store(o + i, all, r0, half);
            codes16_store(o + i + 16, all, r1, half);
            continue;
        }
        npow_codes_put(o + i, all, x0, y0, t, r0, bad0, half);
        npow_codes_put(o + i + 16, all, x1, y1, t, r1, bad1, half);
    }
    for (; i < n; i += 16) {
        __mmask16 m = codes16_mask(n - i), bad;
        __m512 x = codes16_load(a + i, m, half);
        __m512 y = codes16_load(b + i, m, half);
        __m512 r = npow_16(x, y, t, m_bits, min_bits, &bad);
        npow_codes_put(o + i, m, x, y, t, r, bad & m, half);
    }
}

NPOW_TARGET static void
npow_codes_bf16(size_t n, const uint16_t *a, const uint16_t *b, uint16_t *o)
{
    npow_codes(n, a, b, o, false);
}

NPOW_TARGET static void
npow_codes_f16(size_t n, const uint16_t *a, const uint16_t *b, uint16_t *o)
{
    npow_codes(n, a, b, o, true);
}
#endif

/* ---------------------------------------------------------------------
 * float32 mod, floor_divide and rem
 *
 * For a, b finite, b != 0 and |a| < 2^22 |b| (so |a / b| < 2^22), the
 * quotient q = trunc or floor of fl(a / b) is exact (a non-integer a / b
 * is at least 2^-24 from an integer, far above the rounding), q b is exact
 * in float64 (22 + 24 bits), and so is a - q b, fmod's exact result.  From
 * there the rules of DEFINE_FLOAT_DIVMOD (kernel_math.h), bit for bit;
 * the other elements take those functions themselves.
 */
DEFINE_FLOAT_DIVMOD(f32, float, fmodf, floorf, copysignf)

/* Whether the float64 formulas hold for a, b (false for NaN and zero b).
 * |a| < 2^22 |b| (2^22 |b| exact) is |fl(a / b)| < 2^22 for float32 a and
 * b (a / b is never within 2^-46 of 2^22 but at it), without a division:
 * the loops' one float64 division is then the formula's. */
NRTEMU_INLINE int
divmod_f32_ok(float x, float y)
{
    /* (all in float64: GCC 12 vectorises no mix of float and double
     * comparisons) */
    double xd = (double)x, yd = (double)y;
    return (fabs(xd) < 0x1p22 * fabs(yd)) & (fabs(yd) > 0.0) &
           (fabs(yd) < __builtin_inf()) & (fabs(xd) < __builtin_inf());
}

/* fmod(x, y) in float64 (exact): the sign of x, a zero too.  (The
 * selects stay in float64 for the same reason.) */
NRTEMU_INLINE double
rem_f64_of_f32(float x, float y)
{
    double xd = (double)x, yd = (double)y;
    double r = xd - __builtin_trunc(xd / yd) * yd;
    return r == 0.0 ? __builtin_copysign(0.0, xd) : r;
}

NRTEMU_INLINE float
rem_f32(float x, float y)
{
    return (float)rem_f64_of_f32(x, y);
}

/* Whether the float32 formula of mod_f32() holds for x, y: the same
 * domain as divmod_f32_ok(), in float32 (2^22 |y| is exact, or infinity
 * beyond 2^104, where every finite x is below it), so that the loop has
 * no float64 comparison beside its float32 ones, which GCC 12 would not
 * vectorise. */
NRTEMU_INLINE int
divmod_f32_ok32(float x, float y)
{
    float ax = fabsf(x), ay = fabsf(y);
    return (ax < 0x1p22f * ay) & (ay > 0.0f) & (ay < __builtin_inff()) &
           (ax < __builtin_inff());
}

/*
 * NumPy's remainder (the sign of y, a zero too; r + y rounds in float32,
 * as f32_mod), in float32 throughout, for divmod_f32_ok32's x and y.
 * q = trunc(fl(x / y)) is trunc(x / y) or, where x / y rounds up onto an
 * integer, one further from zero (rounding crosses no integer below
 * 2^22).  r = x - q y is exact in one FMA: a multiple of the smaller ulp
 * of x and y, below |y| in magnitude (or x - y, by Sterbenz).  With the
 * right q, r is fmod's result and NumPy's rule follows; with q one too
 * far, r is fmod's result minus y's magnitude with x's sign, that is, on
 * y's side of zero: either r already is NumPy's result, fmod's + y
 * (exact, hence what f32_mod's rounded sum gives), or it takes + y, which
 * gives fmod's result back exactly.  So no correction is needed, and
 * the float64 division of rem_f64_of_f32() goes, which makes mod several
 * times slower than add: this way mod costs about what add does.  The sign
 * tests are on the bits and the selects on integers: GCC 12 vectorises
 * no loop that mixes float and integer conditions.  Same bits as the
 * float64 formula on 1.6e8 random, near-integer-quotient and
 * close-exponent pairs.
 */
NRTEMU_INLINE float
mod_f32(float x, float y)
{
    float q = __builtin_truncf(x / y);
    float r = __builtin_fmaf(-q, y, x); /* exact */
    uint32_t yb = kmath_bits(y), rb = kmath_bits(r);
    /* r nonzero on the other side of zero from y: r + y */
    uint32_t differ = 0u - (((rb ^ yb) >> 31) & ((rb << 1) != 0u));
    float t = r + kmath_float(yb & differ);
    return kmath_float((rb << 1) == 0u ? yb & 0x80000000u : kmath_bits(t));
}

/* floor(x / y), exact; floor keeps the sign of a zero quotient, as
 * f32_floor_divide's copysign(0, x / y) does. */
NRTEMU_INLINE float
floor_divide_f32(float x, float y)
{
    return (float)__builtin_floor((double)x / (double)y);
}

/* The loop of a float32 binary op F with fallback G outside OK (the
 * domain of F), either operand maybe a scalar. */
#define F32_DIVMOD_LOOP(F, G, OK)                                  \
    do {                                                           \
        for (size_t j_ = 0; j_ < n; j_ += CHUNK) {                 \
            size_t c_ = n - j_ < CHUNK ? n - j_ : CHUNK;           \
            float t_[CHUNK], xs_[CHUNK], ys_[CHUNK];               \
            const float *x_ = vmath_f32_block(a, sa, j_, c_, xs_); \
            const float *y_ = vmath_f32_block(b, sb, j_, c_, ys_); \
            int bad_ = 0;                                          \
            for (size_t i_ = 0; i_ < c_; i_++) {                   \
                float xv_ = x_[i_], yv_ = y_[i_];                  \
                int ok_ = OK(xv_, yv_);                            \
                bad_ |= !ok_;                                      \
                t_[i_] = F(ok_ ? xv_ : 1.0f, ok_ ? yv_ : 1.0f);    \
            }                                                      \
            if (bad_) {                                            \
                for (size_t i_ = 0; i_ < c_; i_++) {               \
                    if (!OK(x_[i_], y_[i_])) {                     \
                        t_[i_] = G(x_[i_], y_[i_]);                \
                    }                                              \
                }                                                  \
            }                                                      \
            memcpy(o + j_, t_, c_ * sizeof *o);                    \
        }                                                          \
    } while (0)

NRTEMU_MULTIVERSION
static bool
vmath_f32_binary(enum nrtemu_op op, size_t n, const float *a, bool sa,
                 const float *b, bool sb, float *o)
{
    switch (op) {
    case NRTEMU_OP_MOD:
        F32_DIVMOD_LOOP(mod_f32, f32_mod, divmod_f32_ok32);
        return true;
    case NRTEMU_OP_FLOOR_DIVIDE:
        F32_DIVMOD_LOOP(floor_divide_f32, f32_floor_divide, divmod_f32_ok);
        return true;
    case NRTEMU_OP_REM:
        F32_DIVMOD_LOOP(rem_f32, fmodf, divmod_f32_ok);
        return true;
    default:
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
    default:
        return false;
    }
}

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
    default:
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
    default: {
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
    default:
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

/* ---------------------------------------------------------------------
 * int32 floor division, remainder, truncated division and power
 *
 * The results of the int64 loops of kernel_elementwise.c wrapped to
 * int32 (NumPy's for floor division and remainder, XLA's for rem and
 * truncated division), computed in float64: for |a|, |b| < 2^31 the
 * rounded quotient fl(a / b) never reaches or crosses an integer that
 * a / b does not (a non-integer quotient is at least 1/|b| from one,
 * 2^-31 relative, far above the rounding's 2^-53), so trunc and floor of
 * it are exact, and the remainder a - q b is exact in wrapping int32.
 * b == 0 and b == -1 (INT32_MIN / -1 does not fit) are selected apart.
 */

/* The loop of a binary op over int32 with either operand maybe a scalar
 * (hoisted, so that each loop vectorises). */
#define I32_BIN_LOOP(EXPR)                   \
    do {                                     \
        if (sa) {                            \
            const int32_t x = a[0];          \
            for (size_t i = 0; i < n; i++) { \
                const int32_t y = b[i];      \
                o[i] = (EXPR);               \
            }                                \
        } else if (sb) {                     \
            const int32_t y = b[0];          \
            for (size_t i = 0; i < n; i++) { \
                const int32_t x = a[i];      \
                o[i] = (EXPR);               \
            }                                \
        } else {                             \
            for (size_t i = 0; i < n; i++) { \
                const int32_t x = a[i];      \
                const int32_t y = b[i];      \
                o[i] = (EXPR);               \
            }                                \
        }                                    \
    } while (0)

/* -x wrapping (INT32_MIN stays INT32_MIN). */
NRTEMU_INLINE int32_t
i32_neg_wrap(int32_t x)
{
    return (int32_t)(0u - (uint32_t)x);
}

/* x / y in float64 for y not 0 or -1 (1 stands in for them). */
NRTEMU_INLINE double
i32_quotient(int32_t x, int32_t y)
{
    int32_t d = ((y == 0) | (y == -1)) ? 1 : y;
    return (double)x / (double)d;
}

/* floor(x / y); 0 for y == 0 (NumPy's, with a warning there). */
NRTEMU_INLINE int32_t
i32_floor_divide(int32_t x, int32_t y)
{
    int32_t q = (int32_t)__builtin_floor(i32_quotient(x, y));
    q = y == -1 ? i32_neg_wrap(x) : q;
    return y == 0 ? 0 : q;
}

/* x - floor(x / y) y, the sign of y; 0 for y == 0 and y == -1. */
NRTEMU_INLINE int32_t
i32_mod(int32_t x, int32_t y)
{
    int32_t q = (int32_t)__builtin_floor(i32_quotient(x, y));
    int32_t r = (int32_t)((uint32_t)x - (uint32_t)q * (uint32_t)y);
    return ((y == 0) | (y == -1)) ? 0 : r;
}

/* XLA's truncated division: -1 for y == 0, INT32_MIN / -1 wraps. */
NRTEMU_INLINE int32_t
i32_trunc_divide(int32_t x, int32_t y)
{
    int32_t q = (int32_t)i32_quotient(x, y); /* truncates */
    q = y == -1 ? i32_neg_wrap(x) : q;
    return y == 0 ? -1 : q;
}

/* XLA's rem: the sign of x; x for y == 0, 0 for y == -1. */
NRTEMU_INLINE int32_t
i32_rem(int32_t x, int32_t y)
{
    int32_t q = (int32_t)i32_quotient(x, y);
    int32_t r = (int32_t)((uint32_t)x - (uint32_t)q * (uint32_t)y);
    r = y == -1 ? 0 : r;
    return y == 0 ? x : r;
}

/*
 * x^y wrapping, by squaring over the bits of the block's largest
 * exponent (the same steps for every element, so that it vectorises):
 * x^y mod 2^32 is the int64 loop's x^y mod 2^64 wrapped.  A negative
 * exponent gives the truncated 1 / x^-y: 1 for x == 1, +-1 for x == -1,
 * else 0 (the int64 loop's choice; NumPy raises).
 */
NRTEMU_INLINE void
i32_pow(size_t n, const int32_t *a, bool sa, const int32_t *b, bool sb,
        int32_t *o)
{
    for (size_t j = 0; j < n; j += CHUNK) {
        size_t c = n - j < CHUNK ? n - j : CHUNK;
        uint32_t base[CHUNK], ex[CHUNK], r[CHUNK], top = 0;
        for (size_t i = 0; i < c; i++) {
            base[i] = (uint32_t)a[sa ? 0 : j + i];
            ex[i] = (uint32_t)b[sb ? 0 : j + i];
            top |= ex[i];
            r[i] = 1;
        }
        /* Negative exponents are handled at the end; their bits would
         * only make the loop long. */
        if (top & 0x80000000u) {
            top = 0;
            for (size_t i = 0; i < c; i++) {
                top |= (int32_t)ex[i] < 0 ? 0u : ex[i];
            }
        }
        for (uint32_t bit = 1; bit != 0 && bit <= top; bit <<= 1) {
            for (size_t i = 0; i < c; i++) {
                r[i] = (ex[i] & bit) ? r[i] * base[i] : r[i];
                base[i] *= base[i];
            }
        }
        for (size_t i = 0; i < c; i++) {
            int32_t x = a[sa ? 0 : j + i], y = (int32_t)ex[i];
            int32_t neg = x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
            r[i] = y < 0 ? (uint32_t)neg : r[i];
        }
        for (size_t i = 0; i < c; i++) {
            o[j + i] = (int32_t)r[i];
        }
    }
}

#if NRTEMU_X86_CLONES
/*
 * i32_pow with AVX-512, 64 elements at a time in registers.  GCC
 * vectorises i32_pow's loops, but each pass over the bits loads and
 * stores the chunk's three arrays, which makes it several times slower than an
 * int32 add.  Here the bits of the four vectors' largest exponent are walked
 * with base and result in registers, four independent products in flight.
 * The same x^y mod 2^32 for every lane (a product of the same factors), and
 * the same results for negative exponents.
 */
#define I32_POW_VECS 4

NPOW_TARGET static inline __attribute__((always_inline)) __m512i
i32_pow_negative(__m512i x, __m512i y)
{
    const __m512i one = _mm512_set1_epi32(1), minus = _mm512_set1_epi32(-1);
    __m512i r = _mm512_maskz_mov_epi32(_mm512_cmpeq_epi32_mask(x, one), one);
    __m512i odd =
        _mm512_mask_mov_epi32(one, _mm512_test_epi32_mask(y, one), minus);

    return _mm512_mask_mov_epi32(r, _mm512_cmpeq_epi32_mask(x, minus), odd);
}

NPOW_TARGET static void
i32_pow_avx512(size_t n, const int32_t *a, bool sa, const int32_t *b, bool sb,
               int32_t *o)
{
    const __m512i one = _mm512_set1_epi32(1), zero = _mm512_setzero_si512();

    for (size_t j = 0; j < n; j += 16 * I32_POW_VECS) {
        __m512i x[I32_POW_VECS], y[I32_POW_VECS], e[I32_POW_VECS];
        __m512i base[I32_POW_VECS], r[I32_POW_VECS], any = zero;
        __mmask16 m[I32_POW_VECS], neg[I32_POW_VECS];
        uint32_t top;

        for (int v = 0; v < I32_POW_VECS; v++) {
            size_t at = j + 16 * (size_t)v;
            m[v] = at >= n ? 0 : codes16_mask(n - at);
            x[v] =
                sa ? _mm512_set1_epi32(a[0]) : tail_load_epi32(m[v], a + at);
            y[v] =
                sb ? _mm512_set1_epi32(b[0]) : tail_load_epi32(m[v], b + at);
            neg[v] = _mm512_cmplt_epi32_mask(y[v], zero);
            /* negative exponents (and lanes past n) walk no bits */
            e[v] = _mm512_maskz_mov_epi32(m[v] & ~neg[v], y[v]);
            any = _mm512_or_si512(any, e[v]);
            base[v] = x[v];
            r[v] = one;
        }
        top = (uint32_t)_mm512_reduce_or_epi32(any);
        for (uint32_t bit = 1; bit != 0 && bit <= top; bit <<= 1) {
            const __m512i bv = _mm512_set1_epi32((int)bit);
            for (int v = 0; v < I32_POW_VECS; v++) {
                r[v] = _mm512_mask_mullo_epi32(
                    r[v], _mm512_test_epi32_mask(e[v], bv), r[v], base[v]);
                base[v] = _mm512_mullo_epi32(base[v], base[v]);
            }
        }
        for (int v = 0; v < I32_POW_VECS && m[v] != 0; v++) {
            r[v] = _mm512_mask_mov_epi32(r[v], neg[v],
                                         i32_pow_negative(x[v], y[v]));
            tail_store_epi32(o + j + 16 * (size_t)v, m[v], r[v]);
        }
    }
}
#endif

NRTEMU_MULTIVERSION
static bool
vmath_i32_binary(enum nrtemu_op op, size_t n, const int32_t *a, bool sa,
                 const int32_t *b, bool sb, int32_t *o)
{
    switch (op) {
    case NRTEMU_OP_DIV:
    case NRTEMU_OP_FLOOR_DIVIDE:
        I32_BIN_LOOP(i32_floor_divide(x, y));
        return true;
    case NRTEMU_OP_MOD:
        I32_BIN_LOOP(i32_mod(x, y));
        return true;
    case NRTEMU_OP_TRUNC_DIVIDE:
        I32_BIN_LOOP(i32_trunc_divide(x, y));
        return true;
    case NRTEMU_OP_REM:
        I32_BIN_LOOP(i32_rem(x, y));
        return true;
    case NRTEMU_OP_POW:
        i32_pow(n, a, sa, b, sb, o);
        return true;
    default:
        return false;
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

bool
nrtemu__vmath_f32_unary(enum nrtemu_op op, size_t n, const float *a, float *o)
{
#if NRTEMU_X86_CLONES
    if (op == NRTEMU_OP_LOG1P && npow_ready()) {
        log1p_f32_avx512(n, a, o);
        return true;
    }
    if (op == NRTEMU_OP_CBRT && npow_ready()) {
        cbrt_f32_avx512(n, a, o);
        return true;
    }
#endif
    return vmath_f32_unary(op, n, a, o);
}

void
nrtemu__vmath_f32_pow(size_t n, const float *a, bool sa, const float *b,
                      bool sb, float *o)
{
#if NRTEMU_X86_CLONES
    if (npow_ready()) {
        pow_f32_avx512(n, a, sa, b, sb, o);
        return;
    }
#endif
    vmath_f32_pow(n, a, sa, b, sb, o);
}

void
nrtemu__vmath_f32_pow_narrow(size_t n, const float *a, bool sa, const float *b,
                             bool sb, float *o, enum nrtemu_dtype narrow)
{
#if NRTEMU_X86_CLONES
    if ((narrow == NRTEMU_DTYPE_BFLOAT16 || narrow == NRTEMU_DTYPE_FLOAT16) &&
        npow_ready()) {
        if (narrow == NRTEMU_DTYPE_BFLOAT16) {
            npow_bf16(n, a, sa, b, sb, o);
        } else {
            npow_f16(n, a, sa, b, sb, o);
        }
        return;
    }
#endif
    (void)narrow;
    vmath_f32_pow(n, a, sa, b, sb, o);
}

bool
nrtemu__vmath_pow16(size_t n, const uint16_t *a, const uint16_t *b,
                    uint16_t *o, enum nrtemu_dtype narrow)
{
#if NRTEMU_X86_CLONES
    if ((narrow == NRTEMU_DTYPE_BFLOAT16 || narrow == NRTEMU_DTYPE_FLOAT16) &&
        npow_ready()) {
        if (narrow == NRTEMU_DTYPE_BFLOAT16) {
            npow_codes_bf16(n, a, b, o);
        } else {
            npow_codes_f16(n, a, b, o);
        }
        return true;
    }
#endif
    (void)n, (void)a, (void)b, (void)o, (void)narrow;
    return false;
}

bool
nrtemu__vmath_f32_binary(enum nrtemu_op op, size_t n, const float *a, bool sa,
                         const float *b, bool sb, float *o)
{
    return vmath_f32_binary(op, n, a, sa, b, sb, o);
}

bool
nrtemu__vmath_f64_unary(enum nrtemu_op op, size_t n, const double *a,
                        double *o)
{
    return vmath_f64_unary(op, n, a, o);
}

void
nrtemu__vmath_f64_sincos(size_t n, const double *a, double *o, uint32_t shift)
{
    vmath_f64_sincos(n, a, o, shift);
}

bool
nrtemu__vmath_i32_binary(enum nrtemu_op op, size_t n, const int32_t *a,
                         bool sa, const int32_t *b, bool sb, int32_t *o)
{
#if NRTEMU_X86_CLONES
    if (op == NRTEMU_OP_POW && npow_cpu()) {
        i32_pow_avx512(n, a, sa, b, sb, o);
        return true;
    }
#endif
    return vmath_i32_binary(op, n, a, sa, b, sb, o);
}

bool
nrtemu__vmath_i32_f64_unary(enum nrtemu_op op, size_t n, const int32_t *a,
                            double *o, bool stream)
{
    return vmath_i32_f64_unary(op, n, a, o, stream);
}
