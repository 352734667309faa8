/*
 * kernel_elementwise_float.c - the float rules of the elementwise ops:
 * unary, binary, comparison and test ops computed in float32 (float16 and
 * bfloat16 values widened, rounded once by the driver) or float64, with
 * their vectorised and 16-bit fast paths (kernel_elementwise.h).
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/convert.h"
#include "kernels/kernel.h"
#include "kernels/kernel_binary16.h"
#include "kernels/kernel_elementwise.h"
#include "kernels/kernel_math.h"
#include "kernels/kernel_math_vec.h"
#include "kernels/kernel_stream.h"
#include "kernels/simd.h"

DEFINE_FLOAT_DIVMOD(f32, float, fmodf, floorf, copysignf)
DEFINE_FLOAT_DIVMOD(f64, double, fmod, floor, copysign)

/* 1 / (1 + e^-x), and for x < 0 e^x / (1 + e^x): e^-|x| <= 1 never
 * overflows, and kmath_exp() rounds it once into the subnormals where it
 * is the result (x below -87), where e^-x overflowed and gave 0 (wrong
 * for bfloat16, which holds those subnormals, by up to 24 codes). */
static inline float
f32_sigmoid(float x)
{
    float e = kmath_exp(-kmath_abs(x));

    return (x >= 0.0f ? 1.0f : e) / (1.0f + e);
}

static inline double
f64_sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

/*
 * Elements per chunk of the loops below that take some elements to a
 * slower path: each chunk is read before it is written (out may be the
 * operand), and its float64 temporaries stay in L1.
 */
#define CHUNK 256

/*
 * float16 sin (shift 0) or cos (shift 1) of a block already widened to
 * float32 (every value a float16 one): kmath_sincos_f16(), vectorised.
 */
NRTEMU_MULTIVERSION
static void
f16_sincos(size_t n, const float *a, float *o, uint32_t shift)
{
    for (size_t i = 0; i < n; i++) {
        o[i] = kmath_sincos_f16(a[i], shift);
    }
}

/*
 * The unary ops with a float16 variant in kernel_math.h, on a block of
 * float16 values widened to float32; false for the others (they take the
 * float32 loops, whose results round to the same float16 or within 1 ulp).
 */
NRTEMU_MULTIVERSION
static bool
f16_unary(enum nrtemu_op op, size_t n, const float *a, float *o)
{
    switch (op) {
    case NRTEMU_OP_EXP:
        UN_LOOP(float, kmath_exp_f16(x));
        return true;
    case NRTEMU_OP_LOG:
        UN_LOOP(float, kmath_log_f16(x));
        return true;
    case NRTEMU_OP_SIN:
        f16_sincos(n, a, o, 0);
        return true;
    case NRTEMU_OP_COS:
        f16_sincos(n, a, o, 1);
        return true;
    default:
        return false;
    }
}

/*
 * |e| for the exponents that pow_scalar turns into products: integers
 * and half-integers up to this size, for which repeated squaring in
 * float64 (at most 2 log2 |e| + 2 roundings of 2^-53) stays far inside
 * float32's half ulp.
 */
#define POW_FAST_MAX 1024.0f

/*
 * float32 x^h/2 for one exponent (h odd: a half-integer, through sqrt),
 * x^m for an integer; in float64, rounded once to float32, so within
 * 1 ulp of the exact power (NumPy calls powf, also within 1 ulp).
 * Overflow and underflow in float64 happen only where the float32
 * result is infinite or zero anyway, and the signs of zeros and
 * infinities come out as C pow gives them; for a half-integer, -0 and
 * -inf are taken as +0 and +inf (pow(-0, 1.5) = +0, pow(-inf, -1.5) =
 * +0), other negatives give NaN through sqrt.
 */
NRTEMU_INLINE void
f32_pow_products(size_t n, const float *a, float *o, uint32_t m, bool half,
                 bool recip)
{
    double b[CHUNK], r[CHUNK];

    for (size_t j = 0; j < n; j += CHUNK) {
        size_t c = n - j < CHUNK ? n - j : CHUNK;
        const float *x = a + j;
        float *y = o + j;
        if (half) {
            for (size_t i = 0; i < c; i++) {
                float v = x[i];
                v = (v == 0.0f || v == -__builtin_inff()) ? fabsf(v) : v;
                b[i] = (double)v;
                r[i] = __builtin_sqrt((double)v);
            }
        } else {
            for (size_t i = 0; i < c; i++) {
                b[i] = (double)x[i];
                r[i] = 1.0;
            }
        }
        for (uint32_t e = m; e != 0; e >>= 1) {
            if (e & 1u) {
                for (size_t i = 0; i < c; i++) {
                    r[i] *= b[i];
                }
            }
            if (e > 1) {
                for (size_t i = 0; i < c; i++) {
                    b[i] *= b[i];
                }
            }
        }
        if (recip) {
            for (size_t i = 0; i < c; i++) {
                y[i] = (float)(1.0 / r[i]);
            }
        } else {
            for (size_t i = 0; i < c; i++) {
                y[i] = (float)r[i];
            }
        }
    }
}

/*
 * pow(x, e) for every x with one exponent e (a scalar operand, such as
 * `a ** 2`): multiplications, sqrt and one division instead of powf.
 * For e = 2, 0.5, -1, 1 and 0 this is what NumPy computes (x * x,
 * sqrt(x), 1 / x, x, 1: so sqrt(-0) = -0 and sqrt(-inf) = NaN, as NumPy
 * gives), bit for bit; other integers and half-integers up to
 * POW_FAST_MAX take f32_pow_products().  Returns false, writing nothing,
 * for any other exponent.
 */
NRTEMU_INLINE bool
f32_pow_scalar(size_t n, const float *a, float e, float *o)
{
    float h = 2.0f * e; /* exact for |e| <= POW_FAST_MAX */

    if (!(fabsf(e) <= POW_FAST_MAX) || h != truncf(h)) {
        return false;
    }
    if (e == 0.0f) {
        for (size_t i = 0; i < n; i++) {
            o[i] = 1.0f;
        }
    } else if (e == 1.0f) {
        memmove(o, a, n * sizeof *o);
    } else if (e == 2.0f) {
        for (size_t i = 0; i < n; i++) {
            o[i] = a[i] * a[i];
        }
    } else if (e == -1.0f) {
        for (size_t i = 0; i < n; i++) {
            o[i] = 1.0f / a[i];
        }
    } else if (e == 0.5f) {
        for (size_t i = 0; i < n; i++) {
            o[i] = __builtin_sqrtf(a[i]);
        }
    } else {
        uint32_t ah = (uint32_t)fabsf(h);
        bool half = (ah & 1u) != 0;
        f32_pow_products(n, a, o, half ? (ah - 1) / 2 : ah / 2, half,
                         e < 0.0f);
    }
    return true;
}

/* float32 pow(x, y) for any x and y: kernel_math_vec.h. */
NRTEMU_INLINE void
f32_pow_block(size_t n, const float *a, bool sa, const float *b, bool sb,
              float *o)
{
    nrtemu__vmath_f32_pow(n, a, sa, b, sb, o);
}

/* float64 keeps libm's pow. */
NRTEMU_INLINE void
f64_pow_block(size_t n, const double *a, bool sa, const double *b, bool sb,
              double *o)
{
    BIN_LOOP(double, pow(x, y));
}

/* The float64 exponents that NumPy computes without pow, bit for bit. */
NRTEMU_INLINE bool
f64_pow_scalar(size_t n, const double *a, double e, double *o)
{
    if (e == 0.0) {
        for (size_t i = 0; i < n; i++) {
            o[i] = 1.0;
        }
    } else if (e == 1.0) {
        memmove(o, a, n * sizeof *o);
    } else if (e == 2.0) {
        for (size_t i = 0; i < n; i++) {
            o[i] = a[i] * a[i];
        }
    } else if (e == -1.0) {
        for (size_t i = 0; i < n; i++) {
            o[i] = 1.0 / a[i];
        }
    } else if (e == 0.5) {
        for (size_t i = 0; i < n; i++) {
            o[i] = __builtin_sqrt(a[i]);
        }
    } else {
        return false;
    }
    return true;
}

/* float32 sin and cos: kernel_math_vec.h. */
NRTEMU_INLINE void
f32_sin(size_t n, const float *a, float *o)
{
    nrtemu__vmath_f32_sincos(n, a, o, 0);
}

NRTEMU_INLINE void
f32_cos(size_t n, const float *a, float *o)
{
    nrtemu__vmath_f32_sincos(n, a, o, 1);
}

/* float64 sin and cos: kernel_math_vec.h. */
NRTEMU_INLINE void
f64_sin(size_t n, const double *a, double *o)
{
    nrtemu__vmath_f64_sincos(n, a, o, 0);
}

NRTEMU_INLINE void
f64_cos(size_t n, const double *a, double *o)
{
    nrtemu__vmath_f64_sincos(n, a, o, 1);
}

/* The tanh approximation of GELU (kernel_math.h; float64: the vector loop
 * of kernel_math_vec.h, which nrtemu__vmath_f64_unary runs before this
 * formula is reached, as x / (1 + e^m) too). */
#define f32_gelu(x) kmath_gelu(x)

static inline double
f64_gelu(double x)
{
    return 0.5 * x *
           (1.0 + tanh(KMATH_GELU_C * (x + KMATH_GELU_A * x * x * x)));
}

/* XLA's sign: NaN stays NaN, and a zero keeps its sign. */
#define FLOAT_SIGN(x) ((x) > 0 ? 1 : (x) < 0 ? -1 : (x))

/*
 * The ops of XLA's semantics (docs/neff-emulator-format.md §3).  rem is
 * C's fmod (the sign of the dividend); trunc_divide of floats is plain
 * division.  round_away rounds half away from zero (C round) from the
 * truncation, so that it vectorises like trunc: x - trunc(x) is exact.
 * is_finite is x - x == 0 (false for infinities and NaN), one bool byte.
 */
#define DEFINE_XLA_FLOAT(SFX, T, TRUNC, COPYSIGN)                           \
    static inline T SFX##_round_away(T x)                                   \
    {                                                                       \
        T t = TRUNC(x);                                                     \
        return (x - t >= (T)0.5 || t - x >= (T)0.5) ? t + COPYSIGN((T)1, x) \
                                                    : t;                    \
    }                                                                       \
    NRTEMU_MULTIVERSION                                                     \
    static void SFX##_is_finite(size_t n, const T *a, uint8_t *o)           \
    {                                                                       \
        UN_LOOP(T, x - x == 0);                                             \
    }

DEFINE_XLA_FLOAT(f32, float, __builtin_truncf, __builtin_copysignf)
DEFINE_XLA_FLOAT(f64, double, __builtin_trunc, __builtin_copysign)

#define f32_rem(x, y) fmodf(x, y)
#define f64_rem(x, y) fmod(x, y)
#define f32_round_even(x) __builtin_rintf(x)
#define f64_round_even(x) __builtin_rint(x)
/* float32: kernel_math.h, vectorised; float64: libm.  (expm1 and log1p
 * of float32, and all four of float64 but erf, are taken first by the
 * block loops of kernel_math_vec.h: SFX##_unary_vec.) */
#define f32_expm1(x) kmath_expm1(x)
#define f32_log1p(x) kmath_log1p(x)
#define f32_cbrt(x) kmath_cbrt(x)
#define f32_erf(x) kmath_erf(x)
#define f64_expm1(x) expm1(x)
#define f64_log1p(x) log1p(x)
#define f64_cbrt(x) cbrt(x)
#define f64_erf(x) erf(x)
#define f32_atan2(y, x) kmath_atan2(y, x)
#define f64_atan2(y, x) kmath_atan2_f64(y, x)
/* |x| with the sign bit of y, NaNs included (C copysign, NumPy's). */
#define f32_copysign(x, y) __builtin_copysignf(x, y)
#define f64_copysign(x, y) __builtin_copysign(x, y)

#define DEFINE_FLOAT_KERNELS(SFX, T, EXP, LOG, TANH, SQRT, FLOOR, CEIL, POW, \
                             FABS)                                           \
    NRTEMU_MULTIVERSION                                                      \
    static void SFX##_unary(enum nrtemu_op op, size_t n, const T *a, T *o)   \
    {                                                                        \
        if (SFX##_unary_vec(op, n, a, o)) {                                  \
            return;                                                          \
        }                                                                    \
        switch (op) {                                                        \
        case NRTEMU_OP_NEG:                                                  \
            UN_LOOP(T, -x);                                                  \
            break;                                                           \
        case NRTEMU_OP_ABS:                                                  \
            UN_LOOP(T, FABS(x));                                             \
            break;                                                           \
        case NRTEMU_OP_EXP:                                                  \
            UN_LOOP(T, EXP(x));                                              \
            break;                                                           \
        case NRTEMU_OP_LOG:                                                  \
            UN_LOOP(T, LOG(x));                                              \
            break;                                                           \
        case NRTEMU_OP_SQRT:                                                 \
            UN_LOOP(T, SQRT(x));                                             \
            break;                                                           \
        case NRTEMU_OP_RSQRT:                                                \
            UN_LOOP(T, (T)1 / SQRT(x));                                      \
            break;                                                           \
        case NRTEMU_OP_RECIPROCAL:                                           \
            UN_LOOP(T, (T)1 / x);                                            \
            break;                                                           \
        case NRTEMU_OP_SQUARE:                                               \
            UN_LOOP(T, x *x);                                                \
            break;                                                           \
        case NRTEMU_OP_TANH:                                                 \
            UN_LOOP(T, TANH(x));                                             \
            break;                                                           \
        case NRTEMU_OP_SIGMOID:                                              \
            UN_LOOP(T, SFX##_sigmoid(x));                                    \
            break;                                                           \
        case NRTEMU_OP_RELU:                                                 \
            UN_LOOP(T, NRTEMU_FLOAT_MAX(x, (T)0));                           \
            break;                                                           \
        case NRTEMU_OP_GELU:                                                 \
            UN_LOOP(T, SFX##_gelu(x));                                       \
            break;                                                           \
        case NRTEMU_OP_SIN:                                                  \
            SFX##_sin(n, a, o);                                              \
            break;                                                           \
        case NRTEMU_OP_COS:                                                  \
            SFX##_cos(n, a, o);                                              \
            break;                                                           \
        case NRTEMU_OP_FLOOR:                                                \
            UN_LOOP(T, FLOOR(x));                                            \
            break;                                                           \
        case NRTEMU_OP_CEIL:                                                 \
            UN_LOOP(T, CEIL(x));                                             \
            break;                                                           \
        case NRTEMU_OP_SIGN:                                                 \
            UN_LOOP(T, FLOAT_SIGN(x));                                       \
            break;                                                           \
        case NRTEMU_OP_EXPM1:                                                \
            UN_LOOP(T, SFX##_expm1(x));                                      \
            break;                                                           \
        case NRTEMU_OP_LOG1P:                                                \
            UN_LOOP(T, SFX##_log1p(x));                                      \
            break;                                                           \
        case NRTEMU_OP_CBRT:                                                 \
            UN_LOOP(T, SFX##_cbrt(x));                                       \
            break;                                                           \
        case NRTEMU_OP_ERF:                                                  \
            UN_LOOP(T, SFX##_erf(x));                                        \
            break;                                                           \
        case NRTEMU_OP_ROUND_EVEN:                                           \
            UN_LOOP(T, SFX##_round_even(x));                                 \
            break;                                                           \
        case NRTEMU_OP_ROUND_AWAY:                                           \
            UN_LOOP(T, SFX##_round_away(x));                                 \
            break;                                                           \
            NRTEMU_OP_CASES_OUTSIDE(UNARY)                                   \
            break;                                                           \
        }                                                                    \
    }                                                                        \
                                                                             \
    NRTEMU_MULTIVERSION                                                      \
    static void SFX##_binary(enum nrtemu_op op, size_t n, const T *a,        \
                             bool sa, const T *b, bool sb, T *o)             \
    {                                                                        \
        if (SFX##_binary_vec(op, n, a, sa, b, sb, o)) {                      \
            return;                                                          \
        }                                                                    \
        switch (op) {                                                        \
        case NRTEMU_OP_ADD:                                                  \
            BIN_LOOP(T, x + y);                                              \
            break;                                                           \
        case NRTEMU_OP_SUB:                                                  \
            BIN_LOOP(T, x - y);                                              \
            break;                                                           \
        case NRTEMU_OP_MUL:                                                  \
            BIN_LOOP(T, x *y);                                               \
            break;                                                           \
        case NRTEMU_OP_DIV:                                                  \
            BIN_LOOP(T, x / y);                                              \
            break;                                                           \
        case NRTEMU_OP_POW:                                                  \
            if (sb && SFX##_pow_scalar(n, a, b[0], o)) {                     \
                break;                                                       \
            }                                                                \
            SFX##_pow_block(n, a, sa, b, sb, o);                             \
            break;                                                           \
        case NRTEMU_OP_MAXIMUM:                                              \
            BIN_LOOP(T, NRTEMU_FLOAT_MAX(x, y));                             \
            break;                                                           \
        case NRTEMU_OP_MINIMUM:                                              \
            BIN_LOOP(T, NRTEMU_FLOAT_MIN(x, y));                             \
            break;                                                           \
        case NRTEMU_OP_MOD:                                                  \
            BIN_LOOP(T, SFX##_mod(x, y));                                    \
            break;                                                           \
        case NRTEMU_OP_FLOOR_DIVIDE:                                         \
            BIN_LOOP(T, SFX##_floor_divide(x, y));                           \
            break;                                                           \
        case NRTEMU_OP_REM:                                                  \
            BIN_LOOP(T, SFX##_rem(x, y));                                    \
            break;                                                           \
        case NRTEMU_OP_TRUNC_DIVIDE:                                         \
            BIN_LOOP(T, x / y);                                              \
            break;                                                           \
        case NRTEMU_OP_ATAN2:                                                \
            BIN_LOOP(T, SFX##_atan2(x, y));                                  \
            break;                                                           \
        case NRTEMU_OP_COPYSIGN:                                             \
            BIN_LOOP(T, SFX##_copysign(x, y));                               \
            break;                                                           \
            NRTEMU_OP_CASES_OUTSIDE(BINARY)                                  \
            break;                                                           \
        }                                                                    \
    }

/* The unary ops whose block loops are in kernel_math_vec.h. */
static inline bool
f32_unary_vec(enum nrtemu_op op, size_t n, const float *a, float *o)
{
    return nrtemu__vmath_f32_unary(op, n, a, o);
}

static inline bool
f64_unary_vec(enum nrtemu_op op, size_t n, const double *a, double *o)
{
    return nrtemu__vmath_f64_unary(op, n, a, o);
}

static inline bool
f32_binary_vec(enum nrtemu_op op, size_t n, const float *a, bool sa,
               const float *b, bool sb, float *o)
{
    return nrtemu__vmath_f32_binary(op, n, a, sa, b, sb, o);
}

static inline bool
f64_binary_vec(enum nrtemu_op op, size_t n, const double *a, bool sa,
               const double *b, bool sb, double *o)
{
    (void)op, (void)n, (void)a, (void)sa, (void)b, (void)sb, (void)o;
    return false;
}

#define F32_SQRT(x) __builtin_sqrtf(x)
#define F64_SQRT(x) __builtin_sqrt(x)

NRTEMU_RULES_BEGIN
DEFINE_FLOAT_KERNELS(f32, float, kmath_exp, kmath_log, kmath_tanh, F32_SQRT,
                     floorf, ceilf, powf, fabsf)
DEFINE_FLOAT_KERNELS(f64, double, exp, log, tanh, F64_SQRT, floor, ceil, pow,
                     fabs)
NRTEMU_RULES_END

/*
 * mod, floor_divide and rem of float16 or bfloat16 values (widened to
 * float32), in float32, vectorised.  Their significands have at most 11
 * bits, so for a, b finite with 2^-24 |b| <= |a| < 2^12 |b|, or a = 0:
 * a / b = A 2^k / B (A, B integers below 2^11) is an integer, or (above
 * 1/2 in magnitude) at least 2^-12 from the nearest one, more than
 * float32's rounding of it (below 2^-12 for |a / b| < 2^12; and no
 * quotient underflows to a zero, which floor would keep), so trunc and
 * floor of fl(a / b) are those of a / b; and fmod's a - q b is exact in
 * float32 (q < 2^12 and b's 11 bits: 24 bits in all).  From there the
 * rules of DEFINE_FLOAT_DIVMOD (kernel_math.h), so the results are the
 * float32 kernel's, bit for bit, whose float64 quotients (half the lanes
 * a vector) are much slower.  A chunk with any other pair goes through
 * the float32 kernel.  Returns false for other ops.
 */
#define NARROW_DIVMOD_OK(x, y)                             \
    ((__builtin_fabsf(x) < 0x1p12f * __builtin_fabsf(y)) & \
     (__builtin_fabsf(y) < __builtin_inff()) &             \
     ((__builtin_fabsf(x) * 0x1p24f >= __builtin_fabsf(y)) | ((x) == 0.0f)))

NRTEMU_INLINE float
narrow_rem(float x, float y)
{
    float r = x - __builtin_truncf(x / y) * y;
    return r == 0.0f ? __builtin_copysignf(0.0f, x) : r;
}

NRTEMU_INLINE float
narrow_mod(float x, float y)
{
    float r = x - __builtin_truncf(x / y) * y;
    float t = ((r < 0.0f) ^ (y < 0.0f)) ? r + y : r;
    return r == 0.0f ? __builtin_copysignf(0.0f, y) : t;
}

/* t = op(x, y) over a chunk whose every pair is NARROW_DIVMOD_OK: op
 * mod, remainder or floor_divide (narrow_divmod, bf16_divmod). */
NRTEMU_INLINE void
narrow_divmod_chunk(enum nrtemu_op op, size_t c, const float *x,
                    const float *y, float *t)
{
    if (op == NRTEMU_OP_MOD) {
        for (size_t i = 0; i < c; i++) {
            t[i] = narrow_mod(x[i], y[i]);
        }
    } else if (op == NRTEMU_OP_REM) {
        for (size_t i = 0; i < c; i++) {
            t[i] = narrow_rem(x[i], y[i]);
        }
    } else {
        for (size_t i = 0; i < c; i++) {
            t[i] = __builtin_floorf(x[i] / y[i]);
        }
    }
}

NRTEMU_MULTIVERSION
static bool
narrow_divmod(enum nrtemu_op op, size_t n, const float *a, bool sa,
              const float *b, bool sb, float *o)
{
    if (op != NRTEMU_OP_MOD && op != NRTEMU_OP_FLOOR_DIVIDE &&
        op != NRTEMU_OP_REM) {
        return false;
    }
    for (size_t j = 0; j < n; j += CHUNK) {
        size_t c = n - j < CHUNK ? n - j : CHUNK;
        float t[CHUNK], xs[CHUNK], ys[CHUNK];
        const float *x = vmath_f32_block(a, sa, j, c, xs);
        const float *y = vmath_f32_block(b, sb, j, c, ys);
        int bad = 0;
        for (size_t i = 0; i < c; i++) {
            bad |= !NARROW_DIVMOD_OK(x[i], y[i]);
        }
        if (bad) {
            f32_binary(op, c, x, false, y, false, o + j);
            continue;
        }
        narrow_divmod_chunk(op, c, x, y, t);
        memcpy(o + j, t, c * sizeof *o);
    }
    return true;
}

/*
 * narrow_divmod over bfloat16 codes, converting in its loop (bfloat16 to
 * float32 is a shift; back, nrtemu__float_to_bfloat16, both inline): the same
 * bits as load_f32, narrow_divmod and store_f32 in the driver's blocks
 * (convert.c), without the float32 blocks in between, which take a large
 * share of the op's time.  With AVX-512 kernel_binary16.c runs these ops of
 * both dtypes first, converting in registers; this loop is for the other CPUs
 * and the builds without CPU dispatch.
 */
NRTEMU_MULTIVERSION
static void
bf16_divmod(enum nrtemu_op op, size_t n, const uint16_t *a, const uint16_t *b,
            uint16_t *o)
{
    for (size_t j = 0; j < n; j += CHUNK) {
        size_t c = n - j < CHUNK ? n - j : CHUNK;
        float x[CHUNK], y[CHUNK], t[CHUNK];
        int bad = 0;

        for (size_t i = 0; i < c; i++) {
            x[i] = nrtemu__bfloat16_to_float(a[j + i]);
            y[i] = nrtemu__bfloat16_to_float(b[j + i]);
            bad |= !NARROW_DIVMOD_OK(x[i], y[i]);
        }
        if (bad) {
            f32_binary(op, c, x, false, y, false, t);
        } else {
            narrow_divmod_chunk(op, c, x, y, t);
        }
        for (size_t i = 0; i < c; i++) {
            o[j + i] = nrtemu__float_to_bfloat16(t[i]);
        }
    }
}

/* kstream_parts's call of bf16_divmod. */
struct bf16_divmod_args {
    enum nrtemu_op op;
    const uint16_t *a, *b;
};

static bool
bf16_divmod_part(const void *ctx, size_t at, size_t count, void *dst)
{
    const struct bf16_divmod_args *d = ctx;

    bf16_divmod(d->op, count, d->a + at, d->b + at, dst);
    return true;
}

/*
 * mod, floor_divide or remainder of two bfloat16 arrays of out's shape
 * and dtype (arrays are contiguous): bf16_divmod over the whole part.
 * False, nothing written, otherwise (then the driver's blocks).
 */
bool
nrtemu__ew_bf16_divmod_run(enum nrtemu_op op, enum nrtemu_dtype compute,
                           const struct nrtemu_array *out,
                           const struct nrtemu_array *in, int n_in,
                           bool stream)
{
    if ((op != NRTEMU_OP_MOD && op != NRTEMU_OP_FLOOR_DIVIDE &&
         op != NRTEMU_OP_REM) ||
        compute != NRTEMU_DTYPE_BFLOAT16 || n_in != 2 ||
        out->dtype != compute) {
        return false;
    }
    if (!nrtemu__arrays_match(out, in, 2, compute)) {
        return false;
    }
    struct bf16_divmod_args d = {op, in[0].data, in[1].data};

    return kstream_parts(bf16_divmod_part, &d, out->data,
                         (size_t)nrtemu__array_count(out), sizeof(uint16_t),
                         stream);
}

NRTEMU_RULES_BEGIN
DEFINE_COMPARE(f32, float)
DEFINE_COMPARE(f64, double)
NRTEMU_RULES_END

/* pow of float16 or bfloat16 operands with an exponent per element (a
 * scalar one takes f32_pow_scalar() first): float32 results that round to
 * the compute dtype as the float32 op's do, cheaper (kernel_math_vec.h).
 * False, nothing written, for any other op. */
static bool
narrow_pow(enum nrtemu_op op, enum nrtemu_dtype compute, size_t n,
           const float *a, bool sa, const float *b, bool sb, float *o)
{
    if (op != NRTEMU_OP_POW || sb) {
        return false;
    }
    nrtemu__vmath_f32_pow_narrow(n, a, sa, b, sb, o, compute);
    return true;
}

/* Not multiversioned themselves (an ifunc would be exported from the
 * library whatever its visibility): the loops they call are. */
void
nrtemu__ew_f32_unary(enum nrtemu_op op, size_t n, const float *a, float *o)
{
    f32_unary(op, n, a, o);
}

void
nrtemu__ew_f32_binary(enum nrtemu_op op, size_t n, const float *a, bool sa,
                      const float *b, bool sb, float *o)
{
    f32_binary(op, n, a, sa, b, sb, o);
}

void
nrtemu__ew_float_block(enum nrtemu_op op, enum nrtemu_op_class cls,
                       enum nrtemu_dtype kt, enum nrtemu_dtype compute,
                       size_t n, const void *const *in, const bool *scalar,
                       void *out)
{
    bool f32 = kt == NRTEMU_DTYPE_FLOAT32;

    switch (cls) {
    case NRTEMU_OPC_TEST:
        if (f32) {
            f32_is_finite(n, in[0], out);
        } else {
            f64_is_finite(n, in[0], out);
        }
        break;
    case NRTEMU_OPC_UNARY:
        if (!f32) {
            f64_unary(op, n, in[0], out);
        } else if (compute != NRTEMU_DTYPE_FLOAT16 ||
                   !f16_unary(op, n, in[0], out)) {
            /* float16 operands are float16 values here (NumPy rounds an
             * operand to the compute dtype first). */
            f32_unary(op, n, in[0], out);
        }
        break;
    case NRTEMU_OPC_BINARY:
        if (!f32) {
            f64_binary(op, n, in[0], scalar[0], in[1], scalar[1], out);
        } else if ((compute != NRTEMU_DTYPE_FLOAT16 &&
                    compute != NRTEMU_DTYPE_BFLOAT16) ||
                   (!narrow_pow(op, compute, n, in[0], scalar[0], in[1],
                                scalar[1], out) &&
                    !narrow_divmod(op, n, in[0], scalar[0], in[1], scalar[1],
                                   out))) {
            /* float16 and bfloat16 operands are values of theirs here. */
            f32_binary(op, n, in[0], scalar[0], in[1], scalar[1], out);
        }
        break;
    case NRTEMU_OPC_COMPARE:
        if (f32) {
            f32_compare(op, n, in[0], scalar[0], in[1], scalar[1], out);
        } else {
            f64_compare(op, n, in[0], scalar[0], in[1], scalar[1], out);
        }
        break;
    default:
        break;
    }
}
