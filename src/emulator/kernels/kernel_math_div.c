/*
 * kernel_math_div.c - block loops of the division-like ops: float32 mod,
 * floor_divide and rem; int32 floor division, remainder, truncated
 * division and power (kernel_math_vec.h; the pattern of the loops:
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

#if NRTEMU_X86_CLONES
#include <immintrin.h>

#include "kernels/kernel_codes16.h"
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
    default: /* a selector: false, the caller's own loop */
        return false;
    }
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

VMATH_TARGET_V4 static inline __attribute__((always_inline)) __m512i
i32_pow_negative(__m512i x, __m512i y)
{
    const __m512i one = _mm512_set1_epi32(1), minus = _mm512_set1_epi32(-1);
    __m512i r = _mm512_maskz_mov_epi32(_mm512_cmpeq_epi32_mask(x, one), one);
    __m512i odd =
        _mm512_mask_mov_epi32(one, _mm512_test_epi32_mask(y, one), minus);

    return _mm512_mask_mov_epi32(r, _mm512_cmpeq_epi32_mask(x, minus), odd);
}

VMATH_TARGET_V4 static void
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
    default: /* a selector: false, the caller's own loop */
        return false;
    }
}

/*
 * The entry points: plain functions over the static multiversioned ones,
 * whose ifunc symbols (and resolvers) GCC would otherwise give default
 * visibility, which the version script's nrtemu_* would export.
 */

bool
nrtemu__vmath_f32_binary(enum nrtemu_op op, size_t n, const float *a, bool sa,
                         const float *b, bool sb, float *o)
{
    return vmath_f32_binary(op, n, a, sa, b, sb, o);
}

bool
nrtemu__vmath_i32_binary(enum nrtemu_op op, size_t n, const int32_t *a,
                         bool sa, const int32_t *b, bool sb, int32_t *o)
{
#if NRTEMU_X86_CLONES
    if (op == NRTEMU_OP_POW && nrtemu__cpu_has(NRTEMU_CPU_V4)) {
        i32_pow_avx512(n, a, sa, b, sb, o);
        return true;
    }
#endif
    return vmath_i32_binary(op, n, a, sa, b, sb, o);
}
