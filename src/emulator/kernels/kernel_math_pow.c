/*
 * kernel_math_pow.c - block loops of float32 pow, also for a bfloat16 or
 * float16 result, and the AVX-512 loops of float32 log1p and cbrt, which
 * share pow's tables (kernel_math_vec.h; the pattern of the loops:
 * kernel_math_vec_internal.h).
 */
#include "kernels/cpu.h"
#include "kernels/kernel_math_vec.h"

#include <math.h>
#include <string.h>

#include "kernels/kernel_math.h"
#include "kernels/kernel_math_vec_internal.h"
#include "kernels/simd.h"
#include "kernels/simd_tail.h"

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

/* Whether the CPU runs VMATH_TARGET_V4 code (AVX-512 F, BW, DQ, VL). */
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
VMATH_TARGET_V4 static inline __attribute__((always_inline)) __mmask16
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
VMATH_TARGET_V4 static inline __attribute__((always_inline)) __m512
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

VMATH_TARGET_V4 static inline __attribute__((always_inline)) __m512
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
VMATH_TARGET_V4 static inline __attribute__((always_inline)) void
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
VMATH_TARGET_V4 static inline __attribute__((always_inline)) void
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

VMATH_TARGET_V4 static void
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

VMATH_TARGET_V4 static inline __attribute__((always_inline)) void
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

VMATH_TARGET_V4 static inline __attribute__((always_inline)) __m512
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
VMATH_TARGET_V4 static inline __attribute__((always_inline)) void
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

VMATH_TARGET_V4 static void
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
VMATH_TARGET_V4 static inline __attribute__((always_inline)) __m512
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

VMATH_TARGET_V4 static void
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
VMATH_TARGET_V4 static void
npow_bf16(size_t n, const float *a, bool sa, const float *b, bool sb, float *o)
{
    npow_run(n, a, sa, b, sb, o, 16, 0);
}

VMATH_TARGET_V4 static void
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
VMATH_TARGET_V4 static inline __attribute__((always_inline)) void
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

VMATH_TARGET_V4 static inline __attribute__((always_inline)) void
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

VMATH_TARGET_V4 static void
npow_codes_bf16(size_t n, const uint16_t *a, const uint16_t *b, uint16_t *o)
{
    npow_codes(n, a, b, o, false);
}

VMATH_TARGET_V4 static void
npow_codes_f16(size_t n, const uint16_t *a, const uint16_t *b, uint16_t *o)
{
    npow_codes(n, a, b, o, true);
}
#endif

/*
 * The entry points: plain functions over the static multiversioned ones,
 * whose ifunc symbols (and resolvers) GCC would otherwise give default
 * visibility, which the version script's nrtemu_* would export.
 */

bool
nrtemu__vmath_f32_unary_avx512(enum nrtemu_op op, size_t n, const float *a,
                               float *o)
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
    (void)op, (void)n, (void)a, (void)o;
    return false;
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
