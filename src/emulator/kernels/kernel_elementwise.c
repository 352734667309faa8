/*
 * kernel_elementwise.c - elementwise ops with NumPy broadcasting.
 *
 * The driver walks the broadcast shape (kernel_iter.h) and hands the
 * innermost run, in blocks, to a loop specialised for the op and the
 * compute type.  An operand that already has the compute type and is
 * contiguous or a scalar along that run is read in place; any other is
 * first converted into a block of scratch.  Results go straight to the
 * output when it has the compute type, else through scratch and one
 * conversion.  So float32 chains, scalar and row broadcasts run as plain
 * loops over memory that GCC vectorises, and every other dtype mix costs
 * one conversion per operand.
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/convert.h"
#include "kernels/kernel.h"
#include "kernels/kernel_binary16.h"
#include "kernels/kernel_iter.h"
#include "kernels/kernel_math.h"
#include "kernels/kernel_math_vec.h"
#include "kernels/kernel_stream.h"
#include "kernels/kernel_table.h"
#include "kernels/kernel_where.h"
#include "kernels/simd.h"

/* The loop family of each op, from its row of NRTEMU_OP_LIST. */
static const unsigned char op_class[NRTEMU_OP_COUNT] = {
#define OP_CLASS(suffix, name, arity, cls, check, run, cost, attrs, flags) \
    [NRTEMU_OP_##suffix] = NRTEMU_OPC_##cls,
    NRTEMU_OP_LIST(OP_CLASS)
#undef OP_CLASS
};

/* Elements per block: the blocks of all operands stay in L1/L2. */
#define BLOCK 1024

/*
 * Loops of a binary op where either operand may be a scalar (flags sa,
 * sb); a scalar is hoisted so that each loop vectorises.
 */
#define BIN_LOOP(T, EXPR)                    \
    do {                                     \
        if (sa) {                            \
            const T x = a[0];                \
            for (size_t i = 0; i < n; i++) { \
                const T y = b[i];            \
                o[i] = (EXPR);               \
            }                                \
        } else if (sb) {                     \
            const T y = b[0];                \
            for (size_t i = 0; i < n; i++) { \
                const T x = a[i];            \
                o[i] = (EXPR);               \
            }                                \
        } else {                             \
            for (size_t i = 0; i < n; i++) { \
                const T x = a[i];            \
                const T y = b[i];            \
                o[i] = (EXPR);               \
            }                                \
        }                                    \
    } while (0)

#define UN_LOOP(T, EXPR)                 \
    do {                                 \
        for (size_t i = 0; i < n; i++) { \
            const T x = a[i];            \
            o[i] = (EXPR);               \
        }                                \
    } while (0)

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

/* float32 pow(x, y) for any x and y: kernel_math_vec.c. */
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

/* float32 sin and cos: kernel_math_vec.c. */
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

/* float64 sin and cos: kernel_math_vec.c. */
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
 * of kernel_math_vec.c, which nrtemu__vmath_f64_unary runs before this
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
 * block loops of kernel_math_vec.c: SFX##_unary_vec.) */
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
        default:                                                             \
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
        default:                                                             \
            break;                                                           \
        }                                                                    \
    }

/* The unary ops whose block loops are in kernel_math_vec.c. */
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

DEFINE_FLOAT_KERNELS(f32, float, kmath_exp, kmath_log, kmath_tanh, F32_SQRT,
                     floorf, ceilf, powf, fabsf)
DEFINE_FLOAT_KERNELS(f64, double, exp, log, tanh, F64_SQRT, floor, ceil, pow,
                     fabs)

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
static bool
bf16_divmod_run(enum nrtemu_op op, enum nrtemu_dtype compute,
                const struct nrtemu_array *out, const struct nrtemu_array *in,
                int n_in, bool stream)
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

/* Integers: arithmetic wraps (it is done on uint64_t). */
static inline int64_t
i64_wrap(uint64_t v)
{
    return (int64_t)v;
}

static inline int64_t
i64_floor_divide(int64_t a, int64_t b)
{
    int64_t q;

    if (b == 0) {
        return 0; /* NumPy gives 0 (and warns) */
    }
    if (b == -1) {
        return i64_wrap(0u - (uint64_t)a); /* INT64_MIN / -1 wraps */
    }
    q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) {
        q--;
    }
    return q;
}

static inline int64_t
i64_mod(int64_t a, int64_t b)
{
    int64_t r;

    if (b == 0 || b == -1) {
        return 0;
    }
    r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) {
        r += b;
    }
    return r;
}

/* Exponentiation by squaring, wrapping.  A negative exponent (an error in
 * NumPy) gives the truncated 1 / a^-e: 0 unless |a| is 1. */
static inline uint64_t
u64_pow(uint64_t a, uint64_t e)
{
    uint64_t r = 1;

    while (e != 0) {
        if (e & 1) {
            r *= a;
        }
        a *= a;
        e >>= 1;
    }
    return r;
}

static inline int64_t
i64_pow(int64_t a, int64_t e)
{
    if (e < 0) {
        if (a == 1) {
            return 1;
        }
        if (a == -1) {
            return (e & 1) ? -1 : 1;
        }
        return 0;
    }
    return i64_wrap(u64_pow((uint64_t)a, (uint64_t)e));
}

/*
 * XLA's integer division and remainder: truncated; x / 0 is -1 (all
 * ones for unsigned), x rem 0 is x; INT_MIN / -1 wraps to INT_MIN and
 * INT_MIN rem -1 is 0 (at every width: narrower types compute here in
 * 64 bits, where the quotient wraps when stored).
 */
static inline int64_t
i64_trunc_divide(int64_t a, int64_t b)
{
    if (b == 0) {
        return -1;
    }
    if (b == -1) {
        return i64_wrap(0u - (uint64_t)a);
    }
    return a / b;
}

static inline int64_t
i64_rem(int64_t a, int64_t b)
{
    if (b == 0) {
        return a;
    }
    if (b == -1) {
        return 0;
    }
    return a % b;
}

/*
 * The signed integer ops that wrap, for int64 and int32 (suffix SFX,
 * type T, its unsigned twin U): arithmetic is done on U, whose conversion
 * back GCC defines as modulo 2^width.  Unary ops whole; the binary ones
 * both widths share are the cases INT_WRAPPING_BINARY_CASES, which
 * SFX##_binary adds to.
 */
#define DEFINE_INT_UNARY(SFX, T, U)                                        \
    NRTEMU_MULTIVERSION                                                    \
    static void SFX##_unary(enum nrtemu_op op, size_t n, const T *a, T *o) \
    {                                                                      \
        switch (op) {                                                      \
        case NRTEMU_OP_NEG:                                                \
            UN_LOOP(T, (T)(0u - (U)x));                                    \
            break;                                                         \
        case NRTEMU_OP_ABS:                                                \
            UN_LOOP(T, x < 0 ? (T)(0u - (U)x) : x);                        \
            break;                                                         \
        case NRTEMU_OP_SQUARE:                                             \
            UN_LOOP(T, (T)((U)x * (U)x));                                  \
            break;                                                         \
        case NRTEMU_OP_RECIPROCAL:                                         \
            /* Integer 1 / x; NumPy leaves 1 / 0 undefined, here 0. */     \
            UN_LOOP(T, (x == 1 || x == -1) ? x : 0);                       \
            break;                                                         \
        case NRTEMU_OP_RELU:                                               \
            UN_LOOP(T, x > 0 ? x : 0);                                     \
            break;                                                         \
        case NRTEMU_OP_SIGN:                                               \
            UN_LOOP(T, (x > 0) - (x < 0));                                 \
            break;                                                         \
        default:                                                           \
            /* floor, ceil: integers are their own floor (NumPy 2). */     \
            UN_LOOP(T, x);                                                 \
            break;                                                         \
        }                                                                  \
    }

#define INT_WRAPPING_BINARY_CASES(T, U) \
    case NRTEMU_OP_ADD:                 \
        BIN_LOOP(T, (T)((U)x + (U)y));  \
        break;                          \
    case NRTEMU_OP_SUB:                 \
        BIN_LOOP(T, (T)((U)x - (U)y));  \
        break;                          \
    case NRTEMU_OP_MUL:                 \
        BIN_LOOP(T, (T)((U)x * (U)y));  \
        break;                          \
    case NRTEMU_OP_MAXIMUM:             \
        BIN_LOOP(T, x > y ? x : y);     \
        break;                          \
    case NRTEMU_OP_MINIMUM:             \
        BIN_LOOP(T, x < y ? x : y);     \
        break;

DEFINE_INT_UNARY(i64, int64_t, uint64_t)

NRTEMU_MULTIVERSION
static void
u64_unary(enum nrtemu_op op, size_t n, const uint64_t *a, uint64_t *o)
{
    switch (op) {
    case NRTEMU_OP_NEG:
        UN_LOOP(uint64_t, 0u - x);
        break;
    case NRTEMU_OP_SQUARE:
        UN_LOOP(uint64_t, x * x);
        break;
    case NRTEMU_OP_RECIPROCAL:
        UN_LOOP(uint64_t, x == 1 ? 1 : 0);
        break;
    case NRTEMU_OP_SIGN:
        UN_LOOP(uint64_t, x != 0);
        break;
    default:
        /* abs, relu, floor, ceil */
        UN_LOOP(uint64_t, x);
        break;
    }
}

NRTEMU_MULTIVERSION
static void
i64_binary(enum nrtemu_op op, size_t n, const int64_t *a, bool sa,
           const int64_t *b, bool sb, int64_t *o)
{
    switch (op) {
        INT_WRAPPING_BINARY_CASES(int64_t, uint64_t)
    case NRTEMU_OP_DIV:
    case NRTEMU_OP_FLOOR_DIVIDE:
        BIN_LOOP(int64_t, i64_floor_divide(x, y));
        break;
    case NRTEMU_OP_POW:
        BIN_LOOP(int64_t, i64_pow(x, y));
        break;
    case NRTEMU_OP_MOD:
        BIN_LOOP(int64_t, i64_mod(x, y));
        break;
    case NRTEMU_OP_REM:
        BIN_LOOP(int64_t, i64_rem(x, y));
        break;
    case NRTEMU_OP_TRUNC_DIVIDE:
        BIN_LOOP(int64_t, i64_trunc_divide(x, y));
        break;
    default:
        break;
    }
}

NRTEMU_MULTIVERSION
static void
u64_binary(enum nrtemu_op op, size_t n, const uint64_t *a, bool sa,
           const uint64_t *b, bool sb, uint64_t *o)
{
    switch (op) {
    case NRTEMU_OP_ADD:
        BIN_LOOP(uint64_t, x + y);
        break;
    case NRTEMU_OP_SUB:
        BIN_LOOP(uint64_t, x - y);
        break;
    case NRTEMU_OP_MUL:
        BIN_LOOP(uint64_t, x * y);
        break;
    case NRTEMU_OP_DIV:
    case NRTEMU_OP_FLOOR_DIVIDE:
        BIN_LOOP(uint64_t, y != 0 ? x / y : 0);
        break;
    case NRTEMU_OP_POW:
        BIN_LOOP(uint64_t, u64_pow(x, y));
        break;
    case NRTEMU_OP_MAXIMUM:
        BIN_LOOP(uint64_t, x > y ? x : y);
        break;
    case NRTEMU_OP_MINIMUM:
        BIN_LOOP(uint64_t, x < y ? x : y);
        break;
    case NRTEMU_OP_MOD:
        BIN_LOOP(uint64_t, y != 0 ? x % y : 0);
        break;
    case NRTEMU_OP_REM:
        BIN_LOOP(uint64_t, y != 0 ? x % y : x);
        break;
    case NRTEMU_OP_TRUNC_DIVIDE:
        BIN_LOOP(uint64_t, y != 0 ? x / y : UINT64_MAX);
        break;
    default:
        break;
    }
}

/*
 * int32 ops whose int64 result wrapped to int32 equals the int32 result
 * computed with wrap-around (NumPy's int32 arithmetic): + - * negation,
 * abs, square, the comparisons, max/min and selections.  They run in
 * int32, twice the elements per vector and half the bytes of scratch as
 * int64, with results bit for bit those of the int64 loops.  So do
 * division, remainder and power (kernel_math_vec.c: float64 quotients,
 * INT32_MIN / -1 and friends selected apart).
 */
static bool
i32_native(enum nrtemu_op op)
{
    switch (op) {
    case NRTEMU_OP_NEG:
    case NRTEMU_OP_ABS:
    case NRTEMU_OP_SQUARE:
    case NRTEMU_OP_RECIPROCAL:
    case NRTEMU_OP_RELU:
    case NRTEMU_OP_SIGN:
    case NRTEMU_OP_FLOOR:
    case NRTEMU_OP_CEIL:
    case NRTEMU_OP_ADD:
    case NRTEMU_OP_SUB:
    case NRTEMU_OP_MUL:
    case NRTEMU_OP_MAXIMUM:
    case NRTEMU_OP_MINIMUM:
    case NRTEMU_OP_EQUAL:
    case NRTEMU_OP_NOT_EQUAL:
    case NRTEMU_OP_LESS:
    case NRTEMU_OP_LESS_EQUAL:
    case NRTEMU_OP_GREATER:
    case NRTEMU_OP_GREATER_EQUAL:
    case NRTEMU_OP_WHERE:
    case NRTEMU_OP_BITWISE_AND:
    case NRTEMU_OP_BITWISE_OR:
    case NRTEMU_OP_BITWISE_XOR:
    case NRTEMU_OP_BITWISE_NOT:
    case NRTEMU_OP_SHL:
    case NRTEMU_OP_SHR_LOGICAL:
    case NRTEMU_OP_SHR_ARITH:
    case NRTEMU_OP_ROUND_EVEN:
    case NRTEMU_OP_ROUND_AWAY:
    case NRTEMU_OP_DIV:
    case NRTEMU_OP_FLOOR_DIVIDE:
    case NRTEMU_OP_MOD:
    case NRTEMU_OP_REM:
    case NRTEMU_OP_TRUNC_DIVIDE:
    case NRTEMU_OP_POW:
        return true;
    default:
        return false;
    }
}

DEFINE_INT_UNARY(i32, int32_t, uint32_t)

NRTEMU_MULTIVERSION
static void
i32_binary(enum nrtemu_op op, size_t n, const int32_t *a, bool sa,
           const int32_t *b, bool sb, int32_t *o)
{
    switch (op) {
        INT_WRAPPING_BINARY_CASES(int32_t, uint32_t)
    default:
        nrtemu__vmath_i32_binary(op, n, a, sa, b, sb, o);
        break;
    }
}

/* Comparisons write bool bytes. */
#define DEFINE_COMPARE(SFX, T)                                          \
    NRTEMU_MULTIVERSION                                                 \
    static void SFX##_compare(enum nrtemu_op op, size_t n, const T *a,  \
                              bool sa, const T *b, bool sb, uint8_t *o) \
    {                                                                   \
        switch (op) {                                                   \
        case NRTEMU_OP_EQUAL:                                           \
            BIN_LOOP(T, x == y);                                        \
            break;                                                      \
        case NRTEMU_OP_NOT_EQUAL:                                       \
            BIN_LOOP(T, x != y);                                        \
            break;                                                      \
        case NRTEMU_OP_LESS:                                            \
            BIN_LOOP(T, x < y);                                         \
            break;                                                      \
        case NRTEMU_OP_LESS_EQUAL:                                      \
            BIN_LOOP(T, x <= y);                                        \
            break;                                                      \
        case NRTEMU_OP_GREATER:                                         \
            BIN_LOOP(T, x > y);                                         \
            break;                                                      \
        case NRTEMU_OP_GREATER_EQUAL:                                   \
            BIN_LOOP(T, x >= y);                                        \
            break;                                                      \
        default:                                                        \
            break;                                                      \
        }                                                               \
    }

DEFINE_COMPARE(f32, float)
DEFINE_COMPARE(f64, double)
DEFINE_COMPARE(i64, int64_t)
DEFINE_COMPARE(i32, int32_t)
DEFINE_COMPARE(u64, uint64_t)

/* Truth values: any nonzero byte is true. */
NRTEMU_MULTIVERSION
static void
logical(enum nrtemu_op op, size_t n, const uint8_t *a, bool sa,
        const uint8_t *b, bool sb, uint8_t *o)
{
    switch (op) {
    case NRTEMU_OP_LOGICAL_NOT:
        UN_LOOP(uint8_t, x == 0);
        break;
    case NRTEMU_OP_LOGICAL_AND:
        BIN_LOOP(uint8_t, (x != 0) & (y != 0));
        break;
    case NRTEMU_OP_LOGICAL_OR:
        BIN_LOOP(uint8_t, (x != 0) | (y != 0));
        break;
    case NRTEMU_OP_LOGICAL_XOR:
        BIN_LOOP(uint8_t, (x != 0) ^ (y != 0));
        break;
    default:
        break;
    }
}

/*
 * A logical op on two operands of one 4- or 8-byte dtype, or one for
 * not, in the out's shape (no broadcasting), into a bool out: the truth
 * of each element is tested where it is read, as the conversion to bool
 * tests it (any bit but a float's sign, so -0.0 is false and NaN true),
 * in one pass over the elements instead of a conversion of each operand
 * and a pass over the bytes, block by block, whose extra passes show even
 * in small calls.
 */
#define LOGICAL_TRUTH_LOOP(T, MASK)                                          \
    do {                                                                     \
        const T *x_ = a, *y_ = b;                                            \
        const T m_ = (T)(MASK);                                              \
        switch (op) {                                                        \
        case NRTEMU_OP_LOGICAL_NOT:                                          \
            for (size_t i = 0; i < n; i++) {                                 \
                o[i] = (uint8_t)((x_[i] & m_) == 0);                         \
            }                                                                \
            break;                                                           \
        case NRTEMU_OP_LOGICAL_AND:                                          \
            for (size_t i = 0; i < n; i++) {                                 \
                o[i] = (uint8_t)(((x_[i] & m_) != 0) & ((y_[i] & m_) != 0)); \
            }                                                                \
            break;                                                           \
        case NRTEMU_OP_LOGICAL_OR:                                           \
            for (size_t i = 0; i < n; i++) {                                 \
                o[i] = (uint8_t)(((x_[i] | y_[i]) & m_) != 0);               \
            }                                                                \
            break;                                                           \
        case NRTEMU_OP_LOGICAL_XOR:                                          \
            for (size_t i = 0; i < n; i++) {                                 \
                o[i] = (uint8_t)(((x_[i] & m_) != 0) ^ ((y_[i] & m_) != 0)); \
            }                                                                \
            break;                                                           \
        default:                                                             \
            break;                                                           \
        }                                                                    \
    } while (0)

NRTEMU_MULTIVERSION
static void
logical_truth(enum nrtemu_op op, enum nrtemu_dtype dtype, size_t n,
              const void *a, const void *b, uint8_t *o)
{
    bool fl = nrtemu__dtype_is_float(dtype);

    if (nrtemu__dtype_size(dtype) == 4) {
        LOGICAL_TRUTH_LOOP(uint32_t, fl ? 0x7fffffffu : 0xffffffffu);
    } else {
        LOGICAL_TRUTH_LOOP(uint64_t, fl ? ~(1ull << 63) : ~0ull);
    }
}

/* Whether logical_truth() does `op` on these arrays. */
static bool
logical_truth_applies(enum nrtemu_op op, const struct nrtemu_array *out,
                      const struct nrtemu_array *in, int n_in)
{
    size_t size = nrtemu__dtype_size(in[0].dtype);

    if ((enum nrtemu_op_class)op_class[op] != NRTEMU_OPC_LOGICAL ||
        out->dtype != NRTEMU_DTYPE_BOOL || (size != 4 && size != 8) ||
        n_in != (op == NRTEMU_OP_LOGICAL_NOT ? 1 : 2)) {
        return false;
    }
    return nrtemu__arrays_match(out, in, n_in, in[0].dtype);
}

/*
 * Bitwise ops and shifts on the 64-bit load type of a compute dtype of
 * `width` bits (1 for bool).  Signed values arrive sign-extended and
 * unsigned zero-extended; results wrap to the width when stored.  XLA's
 * shifts: a count of at least the width (a negative count reads as a
 * huge unsigned one) gives 0, or the sign fill for the arithmetic shift,
 * which sees the bits as signed whatever the type.  On bool, not is
 * logical (the others keep 0/1 as they are).
 */
NRTEMU_MULTIVERSION
static void
bitwise(enum nrtemu_op op, uint32_t width, size_t n, const uint64_t *a,
        bool sa, const uint64_t *b, bool sb, uint64_t *o)
{
    const uint64_t mask =
        width >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << width) - 1;
    const uint32_t up = 64 - width; /* to sign-extend from the width */

    switch (op) {
    case NRTEMU_OP_BITWISE_AND:
        BIN_LOOP(uint64_t, x & y);
        break;
    case NRTEMU_OP_BITWISE_OR:
        BIN_LOOP(uint64_t, x | y);
        break;
    case NRTEMU_OP_BITWISE_XOR:
        BIN_LOOP(uint64_t, x ^ y);
        break;
    case NRTEMU_OP_BITWISE_NOT:
        if (width == 1) {
            UN_LOOP(uint64_t, x ^ 1u);
        } else {
            UN_LOOP(uint64_t, ~x);
        }
        break;
    case NRTEMU_OP_SHL:
        BIN_LOOP(uint64_t, y < width ? x << y : 0);
        break;
    case NRTEMU_OP_SHR_LOGICAL:
        BIN_LOOP(uint64_t, y < width ? (x & mask) >> y : 0);
        break;
    case NRTEMU_OP_SHR_ARITH:
        BIN_LOOP(uint64_t, (uint64_t)(((int64_t)(x << up) >> up) >>
                                      (y < width ? y : width - 1)));
        break;
    default:
        break;
    }
}

/* The same on int32 compute, in place (no widening): the width is 32. */
NRTEMU_MULTIVERSION
static void
bitwise32(enum nrtemu_op op, size_t n, const uint32_t *a, bool sa,
          const uint32_t *b, bool sb, uint32_t *o)
{
    switch (op) {
    case NRTEMU_OP_BITWISE_AND:
        BIN_LOOP(uint32_t, x & y);
        break;
    case NRTEMU_OP_BITWISE_OR:
        BIN_LOOP(uint32_t, x | y);
        break;
    case NRTEMU_OP_BITWISE_XOR:
        BIN_LOOP(uint32_t, x ^ y);
        break;
    case NRTEMU_OP_BITWISE_NOT:
        UN_LOOP(uint32_t, ~x);
        break;
    case NRTEMU_OP_SHL:
        BIN_LOOP(uint32_t, y < 32 ? x << y : 0);
        break;
    case NRTEMU_OP_SHR_LOGICAL:
        BIN_LOOP(uint32_t, y < 32 ? x >> y : 0);
        break;
    case NRTEMU_OP_SHR_ARITH:
        BIN_LOOP(uint32_t, (uint32_t)((int32_t)x >> (y < 32 ? y : 31)));
        break;
    default:
        break;
    }
}

/* where(c, x, y) on 4- or 8-byte elements; no operand is a scalar.
 * Both are read whatever c says: `c[i] ? x[i] : y[i]` reads one, which
 * GCC vectorises as two loads masked by c, and masked loads from memory
 * are much slower than plain loads and a blend (simd_tail.h). */
#define DEFINE_WHERE(SFX, T)                                        \
    NRTEMU_MULTIVERSION                                             \
    static void SFX##_where(size_t n, const uint8_t *c, const T *x, \
                            const T *y, T *o)                       \
    {                                                               \
        for (size_t i = 0; i < n; i++) {                            \
            T a = x[i], b = y[i];                                   \
            o[i] = c[i] != 0 ? a : b;                               \
        }                                                           \
    }

DEFINE_WHERE(w32, uint32_t)
DEFINE_WHERE(w64, uint64_t)

enum nrtemu_dtype
nrtemu__kernel_dtype(enum nrtemu_dtype dt)
{
    if (dt == NRTEMU_DTYPE_FLOAT64) {
        return NRTEMU_DTYPE_FLOAT64;
    }
    if (nrtemu__dtype_is_float(dt)) {
        return NRTEMU_DTYPE_FLOAT32;
    }
    if (nrtemu__dtype_is_unsigned_int(dt)) {
        return NRTEMU_DTYPE_UINT64;
    }
    return NRTEMU_DTYPE_INT64;
}

/* How the driver reads one operand. */
struct operand {
    const char *base;
    enum nrtemu_dtype dtype;   /* as stored */
    enum nrtemu_dtype compute; /* the op's compute dtype */
    enum nrtemu_dtype load;    /* what the loop reads: kernel dtype or bool */
    size_t size;               /* bytes per stored element */
    bool direct;               /* read in place when the run allows it */
    bool two_step;             /* round to the compute dtype on the way */
    void *block;               /* scratch for a converted block */
};

static void
operand_init(struct operand *op, const struct nrtemu_array *a,
             enum nrtemu_dtype compute, enum nrtemu_dtype load)
{
    op->base = a->data;
    op->dtype = a->dtype;
    op->compute = compute;
    op->load = load;
    op->size = nrtemu__dtype_size(a->dtype);
    op->direct =
        a->dtype == load && (load == NRTEMU_DTYPE_BOOL || compute == load);
    /* NumPy casts an operand to the compute dtype first: a float32
     * operand of a float16 op is rounded to float16.  Widening from the
     * compute dtype to the load type is exact. */
    op->two_step = !op->direct && load != NRTEMU_DTYPE_BOOL &&
                   a->dtype != compute && compute != load;
}

/*
 * Pointer to the run of `len` elements of `op` at element offset `off`
 * with stride `stride`, in its load type.  `*scalar` is set when one
 * element stands for all (the loops hoist it); `materialize` asks for
 * `len` real elements even then.  `tmp` holds BLOCK wide elements.
 */
static const void *
operand_block(const struct operand *op, ptrdiff_t off, ptrdiff_t stride,
              size_t len, bool materialize, void *tmp, bool *scalar)
{
    const char *src = op->base + off * (ptrdiff_t)op->size;
    size_t count;

    *scalar = stride == 0 && !materialize;
    if (op->direct && (stride == 1 || *scalar)) {
        return src;
    }
    count = *scalar ? 1 : len;
    if (op->two_step) {
        nrtemu__convert(op->compute, tmp, op->dtype, src, stride, count);
        nrtemu__convert(op->load, op->block, op->compute, tmp, 1, count);
    } else {
        nrtemu__convert(op->load, op->block, op->dtype, src, stride, count);
    }
    return op->block;
}

/* pow of float16 or bfloat16 operands with an exponent per element (a
 * scalar one takes f32_pow_scalar() first): float32 results that round to
 * the compute dtype as the float32 op's do, cheaper (kernel_math_vec.c).
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

/* Run one block through the loop of `op`. */
static void
run_block(enum nrtemu_op op, enum nrtemu_op_class cls, enum nrtemu_dtype kt,
          enum nrtemu_dtype compute, size_t n, const void *const *in,
          const bool *scalar, void *out)
{
    switch (cls) {
    case NRTEMU_OPC_TEST:
        if (kt == NRTEMU_DTYPE_FLOAT32) {
            f32_is_finite(n, in[0], out);
        } else {
            f64_is_finite(n, in[0], out);
        }
        break;
    case NRTEMU_OPC_BITWISE:
        if (kt == NRTEMU_DTYPE_INT32) {
            bitwise32(op, n, in[0], scalar[0],
                      op == NRTEMU_OP_BITWISE_NOT ? NULL : in[1],
                      op == NRTEMU_OP_BITWISE_NOT ? false : scalar[1], out);
            break;
        }
        bitwise(op,
                compute == NRTEMU_DTYPE_BOOL
                    ? 1
                    : 8 * (uint32_t)nrtemu__dtype_size(compute),
                n, in[0], scalar[0],
                op == NRTEMU_OP_BITWISE_NOT ? NULL : in[1],
                op == NRTEMU_OP_BITWISE_NOT ? false : scalar[1], out);
        break;
    case NRTEMU_OPC_UNARY:
        switch (kt) {
        case NRTEMU_DTYPE_FLOAT32:
            /* float16 operands are float16 values here (NumPy rounds
             * an operand to the compute dtype first). */
            if (compute != NRTEMU_DTYPE_FLOAT16 ||
                !f16_unary(op, n, in[0], out)) {
                f32_unary(op, n, in[0], out);
            }
            break;
        case NRTEMU_DTYPE_FLOAT64:
            f64_unary(op, n, in[0], out);
            break;
        case NRTEMU_DTYPE_UINT64:
            u64_unary(op, n, in[0], out);
            break;
        case NRTEMU_DTYPE_INT32:
            i32_unary(op, n, in[0], out);
            break;
        default:
            i64_unary(op, n, in[0], out);
            break;
        }
        break;
    case NRTEMU_OPC_BINARY:
        switch (kt) {
        case NRTEMU_DTYPE_FLOAT32:
            /* float16 and bfloat16 operands are values of theirs here. */
            if ((compute != NRTEMU_DTYPE_FLOAT16 &&
                 compute != NRTEMU_DTYPE_BFLOAT16) ||
                (!narrow_pow(op, compute, n, in[0], scalar[0], in[1],
                             scalar[1], out) &&
                 !narrow_divmod(op, n, in[0], scalar[0], in[1], scalar[1],
                                out))) {
                f32_binary(op, n, in[0], scalar[0], in[1], scalar[1], out);
            }
            break;
        case NRTEMU_DTYPE_FLOAT64:
            f64_binary(op, n, in[0], scalar[0], in[1], scalar[1], out);
            break;
        case NRTEMU_DTYPE_UINT64:
            u64_binary(op, n, in[0], scalar[0], in[1], scalar[1], out);
            break;
        case NRTEMU_DTYPE_INT32:
            i32_binary(op, n, in[0], scalar[0], in[1], scalar[1], out);
            break;
        default:
            i64_binary(op, n, in[0], scalar[0], in[1], scalar[1], out);
            break;
        }
        break;
    case NRTEMU_OPC_COMPARE:
        switch (kt) {
        case NRTEMU_DTYPE_FLOAT32:
            f32_compare(op, n, in[0], scalar[0], in[1], scalar[1], out);
            break;
        case NRTEMU_DTYPE_FLOAT64:
            f64_compare(op, n, in[0], scalar[0], in[1], scalar[1], out);
            break;
        case NRTEMU_DTYPE_UINT64:
            u64_compare(op, n, in[0], scalar[0], in[1], scalar[1], out);
            break;
        case NRTEMU_DTYPE_INT32:
            i32_compare(op, n, in[0], scalar[0], in[1], scalar[1], out);
            break;
        default:
            i64_compare(op, n, in[0], scalar[0], in[1], scalar[1], out);
            break;
        }
        break;
    case NRTEMU_OPC_LOGICAL:
        logical(op, n, in[0], scalar[0],
                op == NRTEMU_OP_LOGICAL_NOT ? NULL : in[1],
                op == NRTEMU_OP_LOGICAL_NOT ? false : scalar[1], out);
        break;
    case NRTEMU_OPC_WHERE:
        if (kt == NRTEMU_DTYPE_FLOAT32 || kt == NRTEMU_DTYPE_INT32) {
            w32_where(n, in[0], in[1], in[2], out);
        } else {
            w64_where(n, in[0], in[1], in[2], out);
        }
        break;
    default:
        break;
    }
}

/* cast, copy: one conversion per run, straight into the output (a copy
 * to be streamed: through kstream_copy). */
static void
convert_driver(const struct nrtemu_array *out, const struct nrtemu_array *in,
               bool stream)
{
    struct kiter it;
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    ptrdiff_t off[2] = {0, 0};
    size_t in_size = nrtemu__dtype_size(in->dtype);
    size_t out_size = nrtemu__dtype_size(out->dtype);
    uint64_t outer;
    size_t len;

    kiter_init(&it, out->ndim, out->shape, 2);
    kiter_broadcast(&it, 0, in->ndim, in->shape);
    kiter_broadcast(&it, 1, out->ndim, out->shape);
    kiter_collapse(&it);
    outer = kiter_outer_count(&it);
    len = it.shape[it.ndim - 1];
    stream = stream && in->dtype == out->dtype &&
             in->dtype != NRTEMU_DTYPE_BOOL && it.stride[0][it.ndim - 1] == 1;
    for (uint64_t o = 0; o < outer; o++) {
        char *dst = (char *)out->data + off[1] * out_size;
        const char *src = (const char *)in->data + off[0] * (ptrdiff_t)in_size;
        if (stream) {
            kstream_copy(dst, src, len * out_size);
        } else {
            nrtemu__convert(out->dtype, dst, in->dtype, src,
                            it.stride[0][it.ndim - 1], len);
        }
        kiter_next(&it, idx, off);
    }
    if (stream) {
        kstream_fence();
    }
}

/*
 * neg and abs of a float of 8 or 16 bits (float16, bfloat16, the fp8
 * formats) are its sign bit flipped or cleared, NaN and zeros included:
 * that is what NumPy (float16) and ml_dtypes (bfloat16, fp8) compute, bit
 * for bit, and it runs at copy speed, where the float32 round trip costs
 * two conversions and canonicalises NaN payloads.  `keep` masks each code,
 * `flip` is then xor-ed in.
 */
#define DEFINE_SIGN_BITS(SFX, T)                                              \
    NRTEMU_MULTIVERSION                                                       \
    static void SFX##_sign_bits(size_t n, const T *a, ptrdiff_t stride, T *o, \
                                T keep, T flip)                               \
    {                                                                         \
        if (stride == 1) {                                                    \
            for (size_t i = 0; i < n; i++) {                                  \
                o[i] = (T)((a[i] & keep) ^ flip);                             \
            }                                                                 \
        } else {                                                              \
            for (size_t i = 0; i < n; i++) {                                  \
                o[i] = (T)((a[(ptrdiff_t)i * stride] & keep) ^ flip);         \
            }                                                                 \
        }                                                                     \
    }

DEFINE_SIGN_BITS(u8, uint8_t)
DEFINE_SIGN_BITS(u16, uint16_t)

/* Whether sign_driver() does `op` on these arrays: the operand, the
 * output and the compute dtype all one small float type. */
static bool
sign_op_applies(enum nrtemu_op op, enum nrtemu_dtype compute,
                const struct nrtemu_array *out, const struct nrtemu_array *in)
{
    return (op == NRTEMU_OP_NEG || op == NRTEMU_OP_ABS) &&
           nrtemu__dtype_is_float(compute) &&
           nrtemu__dtype_size(compute) <= 2 && in->dtype == compute &&
           out->dtype == compute;
}

static void
sign_driver(enum nrtemu_op op, const struct nrtemu_array *out,
            const struct nrtemu_array *in)
{
    struct kiter it;
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    ptrdiff_t off[2] = {0, 0};
    size_t size = nrtemu__dtype_size(out->dtype);
    bool neg = op == NRTEMU_OP_NEG;
    uint64_t outer;
    size_t len;
    ptrdiff_t stride;

    kiter_init(&it, out->ndim, out->shape, 2);
    kiter_broadcast(&it, 0, in->ndim, in->shape);
    kiter_broadcast(&it, 1, out->ndim, out->shape);
    kiter_collapse(&it);
    outer = kiter_outer_count(&it);
    len = it.shape[it.ndim - 1];
    stride = it.stride[0][it.ndim - 1];
    for (uint64_t o = 0; o < outer; o++) {
        if (size == 1) {
            u8_sign_bits(len, (const uint8_t *)in->data + off[0], stride,
                         (uint8_t *)out->data + off[1], neg ? 0xffu : 0x7fu,
                         neg ? 0x80u : 0u);
        } else {
            u16_sign_bits(len, (const uint16_t *)in->data + off[0], stride,
                          (uint16_t *)out->data + off[1],
                          neg ? 0xffffu : 0x7fffu, neg ? 0x8000u : 0u);
        }
        kiter_next(&it, idx, off);
    }
}

/* Whether an elementwise op over these arrays streams its result
 * (kernel_stream.h). */
bool
nrtemu__kernel_stream_wanted(const struct nrtemu_array *out,
                             const struct nrtemu_array *in, int n_in)
{
    uint64_t out_bytes =
        nrtemu__array_count(out) * nrtemu__dtype_size(out->dtype);
    uint64_t bytes = out_bytes;

    for (int k = 0; k < n_in; k++) {
        bytes += nrtemu__array_count(&in[k]) * nrtemu__dtype_size(in[k].dtype);
    }
    return kstream_wanted(bytes, out_bytes);
}

/*
 * A unary op of kernel_math_vec.c's over int32 operands in float64 (sin,
 * cos, gelu, log1p, cbrt, exp, log, expm1, tanh, sigmoid) into a float64
 * out: one call per contiguous run, converting in its vector loop (no
 * block of scratch, no block-sized calls).  False, nothing written, where
 * that does not apply: then the blocks of the driver.  `it`: the driver's
 * iterator over out and in.
 */
static bool
i32_f64_runs(enum nrtemu_op op, enum nrtemu_op_class cls,
             enum nrtemu_dtype compute, const struct nrtemu_array *out,
             const struct nrtemu_array *in, const struct kiter *it,
             uint64_t outer, size_t len, bool stream)
{
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    ptrdiff_t off[KITER_MAX_OPS] = {0};
    const char *ib = in[0].data, *ob = out->data;
    size_t in_bytes = nrtemu__array_count(&in[0]) * sizeof(int32_t);
    size_t out_bytes = nrtemu__array_count(out) * sizeof(double);

    if (cls != NRTEMU_OPC_UNARY || compute != NRTEMU_DTYPE_FLOAT64 ||
        in[0].dtype != NRTEMU_DTYPE_INT32 ||
        out->dtype != NRTEMU_DTYPE_FLOAT64 ||
        it->stride[0][it->ndim - 1] != 1 ||
        !(ob + out_bytes <= ib || ib + in_bytes <= ob)) {
        return false;
    }
    for (uint64_t o = 0; o < outer; o++) {
        if (!nrtemu__vmath_i32_f64_unary(
                op, len, (const int32_t *)in[0].data + off[0],
                (double *)out->data + off[1], stream)) {
            return false; /* (at the first run: not one of these ops) */
        }
        kiter_next(it, idx, off);
    }
    if (stream) {
        kstream_fence();
    }
    return true;
}

NRT_STATUS
nrtemu__kernel_elementwise(enum nrtemu_op op, enum nrtemu_dtype compute,
                           const struct nrtemu_array *out,
                           const struct nrtemu_array *in, int n_in,
                           struct nrtemu_scratch *s)
{
    return nrtemu__kernel_elementwise_part(
        op, compute, out, in, n_in, s,
        nrtemu__kernel_stream_wanted(out, in, n_in));
}

NRT_STATUS
nrtemu__kernel_elementwise_part(enum nrtemu_op op, enum nrtemu_dtype compute,
                                const struct nrtemu_array *out,
                                const struct nrtemu_array *in, int n_in,
                                struct nrtemu_scratch *s, bool stream)
{
    enum nrtemu_op_class cls = (enum nrtemu_op_class)op_class[op];
    enum nrtemu_dtype kt = nrtemu__kernel_dtype(compute);
    enum nrtemu_dtype rt; /* what the loop writes */
    struct operand ops[3];
    struct kiter it;
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    ptrdiff_t off[KITER_MAX_OPS] = {0};
    size_t out_size = nrtemu__dtype_size(out->dtype);
    bool out_direct, out_two_step;
    char *scratch, *out_block, *tmp;
    uint64_t outer;
    size_t len, block;
    int n_scalar;

    if (nrtemu__array_count(out) == 0) {
        return NRT_SUCCESS;
    }
    if (cls == NRTEMU_OPC_CONVERT) {
        convert_driver(out, &in[0], stream);
        return NRT_SUCCESS;
    }
    if (cls == NRTEMU_OPC_TEST && !nrtemu__dtype_is_float(in[0].dtype) &&
        out->dtype == NRTEMU_DTYPE_BOOL) {
        /* Every integer (and bool) converts to a finite float. */
        memset(out->data, 1, (size_t)nrtemu__array_count(out));
        return NRT_SUCCESS;
    }
    if (logical_truth_applies(op, out, in, n_in)) {
        logical_truth(op, in[0].dtype, (size_t)nrtemu__array_count(out),
                      in[0].data, n_in > 1 ? in[1].data : NULL, out->data);
        return NRT_SUCCESS;
    }
    if (sign_op_applies(op, compute, out, &in[0])) {
        sign_driver(op, out, &in[0]);
        return NRT_SUCCESS;
    }
    if (nrtemu__kernel_binary16_run(op, compute, out, in, n_in, stream) ||
        bf16_divmod_run(op, compute, out, in, n_in, stream) ||
        nrtemu__kernel_round16_run(op, compute, out, in, n_in, stream) ||
        nrtemu__kernel_where_run(op, compute, out, in, n_in, stream) ||
        nrtemu__kernel_table_run(op, compute, out, in, n_in, s) ||
        nrtemu__kernel_table16_run(op, compute, out, in, n_in, s, stream)) {
        return NRT_SUCCESS;
    }
    if (compute == NRTEMU_DTYPE_INT32 && i32_native(op)) {
        kt = NRTEMU_DTYPE_INT32;
    }
    rt = (cls == NRTEMU_OPC_COMPARE || cls == NRTEMU_OPC_LOGICAL ||
          cls == NRTEMU_OPC_TEST)
             ? NRTEMU_DTYPE_BOOL
             : kt;
    /* One block per operand, one for the result, one for two-step
     * conversions; 8 bytes covers every load type. */
    scratch = nrtemu__scratch_get(s, (size_t)(n_in + 2) * BLOCK * 8);
    if (scratch == NULL) {
        return NRT_RESOURCE;
    }
    for (int k = 0; k < n_in; k++) {
        enum nrtemu_dtype load = kt;
        if (cls == NRTEMU_OPC_LOGICAL || (cls == NRTEMU_OPC_WHERE && k == 0)) {
            load = NRTEMU_DTYPE_BOOL;
        }
        operand_init(&ops[k], &in[k], compute, load);
        ops[k].block = scratch + (size_t)k * BLOCK * 8;
    }
    out_block = scratch + (size_t)n_in * BLOCK * 8;
    tmp = out_block + BLOCK * 8;
    out_direct =
        out->dtype == rt && (rt == NRTEMU_DTYPE_BOOL || compute == rt);
    out_two_step = !out_direct && rt != NRTEMU_DTYPE_BOOL &&
                   out->dtype != compute && compute != rt;

    kiter_init(&it, out->ndim, out->shape, n_in + 1);
    for (int k = 0; k < n_in; k++) {
        kiter_broadcast(&it, k, in[k].ndim, in[k].shape);
    }
    kiter_broadcast(&it, n_in, out->ndim, out->shape);
    kiter_collapse(&it);
    outer = kiter_outer_count(&it);
    len = it.shape[it.ndim - 1];

    /* Operands that are one element along the run: a binary loop takes
     * one of them as a scalar, the others are materialised. */
    n_scalar = 0;
    for (int k = 0; k < n_in; k++) {
        n_scalar += it.stride[k][it.ndim - 1] == 0;
    }
    /* Without conversions the whole run is one loop. */
    block = len;
    for (int k = 0; k < n_in; k++) {
        ptrdiff_t st = it.stride[k][it.ndim - 1];
        if (!ops[k].direct || st > 1 || st < 0 ||
            (st == 0 && (cls == NRTEMU_OPC_UNARY || cls == NRTEMU_OPC_WHERE ||
                         n_in == 1))) {
            block = BLOCK;
        }
    }
    if (!out_direct || n_scalar == n_in) {
        block = BLOCK;
    }
    /* Results to stream: a block computed into cache, then copied out. */
    stream = stream && out_direct;
    if (stream && block > KSTREAM_BLOCK / out_size) {
        block = KSTREAM_BLOCK / out_size;
    }

    if (i32_f64_runs(op, cls, compute, out, in, &it, outer, len, stream)) {
        return NRT_SUCCESS;
    }
    for (uint64_t o = 0; o < outer; o++) {
        for (size_t j = 0; j < len; j += block) {
            size_t n = len - j < block ? len - j : block;
            const void *ptr[3];
            bool scalar[3] = {false, false, false};
            char *dst = (char *)out->data +
                        (off[n_in] + (ptrdiff_t)j) * (ptrdiff_t)out_size;
            void *res;

            for (int k = 0; k < n_in; k++) {
                ptrdiff_t st = it.stride[k][it.ndim - 1];
                /* Only binary loops take a scalar, and only one. */
                bool materialize = cls == NRTEMU_OPC_UNARY ||
                                   cls == NRTEMU_OPC_WHERE || n_in == 1 ||
                                   (n_scalar == n_in && k == 0);
                ptr[k] = operand_block(&ops[k], off[k] + (ptrdiff_t)j * st, st,
                                       n, materialize, tmp, &scalar[k]);
            }
            res = out_direct && !stream ? (void *)dst : (void *)out_block;
            run_block(op, cls, kt, compute, n, ptr, scalar, res);
            if (stream) {
                kstream_copy(dst, out_block, n * out_size);
            } else if (!out_direct) {
                if (out_two_step) {
                    nrtemu__convert(compute, tmp, rt, out_block, 1, n);
                    nrtemu__convert(out->dtype, dst, compute, tmp, 1, n);
                } else {
                    nrtemu__convert(out->dtype, dst, rt, out_block, 1, n);
                }
            }
        }
        kiter_next(&it, idx, off);
    }
    if (stream) {
        kstream_fence();
    }
    return NRT_SUCCESS;
}
