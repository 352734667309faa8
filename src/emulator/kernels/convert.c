/*
 * convert.c - conversions between element types (rules in convert.h).
 *
 * Every conversion is a load into one of four "wide" types (float32,
 * float64, int64, uint64) that holds every value of the source exactly or
 * as NumPy would first round it, followed by a store from the wide type.
 * The kernels compute in exactly these four types, so loading operands
 * and storing results are the two halves used on their own, and they get
 * the vectorised loops.
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/convert.h"
#include "kernels/simd.h"

#if defined(__FLT16_MAX__)
#define HAVE_FLOAT16 1
#else
#define HAVE_FLOAT16 0
#endif

/* Elements converted per round trip through the wide type. */
#define CHUNK 256

/* An IEEE-like small float.  `finite` formats (e4m3fn) have no infinity;
 * their only NaN has every exponent and mantissa bit set. */
struct minifloat {
    int man_bits;
    int exp_bits;
    int bias;
    bool finite;
};

static const struct minifloat fmt_half = {10, 5, 15, false};
static const struct minifloat fmt_e4m3 = {3, 4, 7, false};
static const struct minifloat fmt_e4m3fn = {3, 4, 7, true};
static const struct minifloat fmt_e5m2 = {2, 5, 15, false};
static const struct minifloat fmt_e3m4 = {4, 3, 3, false};

static const struct minifloat *
fp8_format(enum nrtemu_dtype dt)
{
    switch (dt) {
    case NRTEMU_DTYPE_FLOAT8_E4M3:
        return &fmt_e4m3;
    case NRTEMU_DTYPE_FLOAT8_E4M3FN:
        return &fmt_e4m3fn;
    case NRTEMU_DTYPE_FLOAT8_E5M2:
        return &fmt_e5m2;
    default:
        return &fmt_e3m4;
    }
}

static int
fp8_index(enum nrtemu_dtype dt)
{
    return (int)dt - (int)NRTEMU_DTYPE_FLOAT8_E4M3;
}

static uint32_t
float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float
bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/*
 * Round `x` to the format, to nearest even.  Working from the float64
 * bits covers both float32 sources (exactly representable) and float64
 * ones (float16 is rounded from float64 directly, as NumPy does).
 */
static uint32_t
encode_minifloat(double x, const struct minifloat *fmt)
{
    const int m_bits = fmt->man_bits;
    const uint32_t exp_ones = (1u << fmt->exp_bits) - 1;
    const uint32_t nan_code =
        fmt->finite ? (exp_ones << m_bits) | ((1u << m_bits) - 1)
                    : (exp_ones << m_bits) | (1u << (m_bits - 1));
    const uint32_t inf_code = fmt->finite ? nan_code : exp_ones << m_bits;
    const uint32_t max_code = fmt->finite ? nan_code - 1 : inf_code - 1;
    uint64_t bits, mant, base, rem, half;
    uint32_t sign;
    int exp, target_exp, shift;

    memcpy(&bits, &x, sizeof bits);
    sign = (uint32_t)(bits >> 63) << (fmt->exp_bits + m_bits);
    exp = (int)((bits >> 52) & 0x7ff);
    mant = bits & ((1ull << 52) - 1);
    if (exp == 0x7ff) {
        return sign | (mant != 0 ? nan_code : inf_code);
    }
    if (exp == 0) {
        if (mant == 0) {
            return sign;
        }
        exp = 1; /* float64 subnormal: far below every format's range */
    } else {
        mant |= 1ull << 52;
    }
    target_exp = exp - 1023 + fmt->bias;
    if (target_exp >= 1 && (mant >> 52) != 0) {
        /* Normal in the format: the mantissa carry may ripple into the
         * exponent, which is exactly the right result. */
        shift = 52 - m_bits;
        base = ((uint64_t)target_exp << m_bits) +
               ((mant & ((1ull << 52) - 1)) >> shift);
    } else {
        shift = 52 - m_bits + 1 - target_exp;
        if (shift > 53) {
            return sign; /* below half the smallest subnormal */
        }
        base = mant >> shift;
    }
    rem = mant & ((1ull << shift) - 1);
    half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (base & 1) != 0)) {
        base++;
    }
    if (base > max_code) {
        return sign | inf_code;
    }
    return sign | (uint32_t)base;
}

static float
decode_minifloat(uint32_t code, const struct minifloat *fmt)
{
    const int m_bits = fmt->man_bits;
    const uint32_t exp_ones = (1u << fmt->exp_bits) - 1;
    const uint32_t m_mask = (1u << m_bits) - 1;
    uint32_t sign = (code >> (fmt->exp_bits + m_bits)) & 1;
    uint32_t exp = (code >> m_bits) & exp_ones;
    uint32_t mant = code & m_mask;
    float mag;

    if (exp == exp_ones && (!fmt->finite || mant == m_mask)) {
        if (fmt->finite || mant != 0) {
            /* float16 keeps the payload in the top mantissa bits, as
             * NumPy does (a signalling NaN stays one); an fp8 NaN is the
             * quiet NaN, as ml_dtypes gives it (a signalling one would
             * make pow(1, NaN) NaN where ml_dtypes' is 1). */
            return bits_float(
                sign << 31 | 0x7f800000u |
                (fmt == &fmt_half ? mant << (23 - m_bits) : 0x400000u));
        }
        return sign ? -INFINITY : INFINITY;
    }
    if (exp == 0) {
        mag = ldexpf((float)mant, 1 - fmt->bias - m_bits);
    } else {
        mag = ldexpf((float)(mant | (1u << m_bits)),
                     (int)exp - fmt->bias - m_bits);
    }
    return sign ? -mag : mag;
}

float
nrtemu__half_to_float(uint16_t bits)
{
    return decode_minifloat(bits, &fmt_half);
}

/* NaN keeps its sign and top payload bits (NumPy's rule). */
static uint16_t
half_nan(uint64_t sign, uint64_t payload_top10)
{
    uint16_t m = (uint16_t)(payload_top10 & 0x3ff);
    return (uint16_t)(sign << 15 | 0x7c00 | (m != 0 ? m : 0x200));
}

uint16_t
nrtemu__float_to_half(float value)
{
    uint32_t u = float_bits(value);

    if ((u & 0x7fffffff) > 0x7f800000) {
        return half_nan(u >> 31, (u >> 13) & 0x3ff);
    }
    return (uint16_t)encode_minifloat(value, &fmt_half);
}

uint16_t
nrtemu__double_to_half(double value)
{
    uint64_t u;

    memcpy(&u, &value, sizeof u);
    if ((u & ~(1ull << 63)) > 0x7ff0000000000000ull) {
        return half_nan(u >> 63, (u >> 42) & 0x3ff);
    }
    return (uint16_t)encode_minifloat(value, &fmt_half);
}

/* fp8 decoding is a table lookup; the tables are built once. */
static float fp8_table[4][256];
static pthread_once_t fp8_once = PTHREAD_ONCE_INIT;

static void
fp8_build_tables(void)
{
    for (int t = 0; t < 4; t++) {
        const struct minifloat *fmt =
            fp8_format((enum nrtemu_dtype)(NRTEMU_DTYPE_FLOAT8_E4M3 + t));
        for (uint32_t v = 0; v < 256; v++) {
            fp8_table[t][v] = decode_minifloat(v, fmt);
        }
    }
}

static const float *
fp8_decode_table(enum nrtemu_dtype dt)
{
    pthread_once(&fp8_once, fp8_build_tables);
    return fp8_table[fp8_index(dt)];
}

float
nrtemu__fp8_to_float(enum nrtemu_dtype fp8, uint8_t bits)
{
    return fp8_decode_table(fp8)[bits];
}

void
nrtemu__fp8_layout(enum nrtemu_dtype fp8, int *man_bits, int *bias,
                   bool *finite)
{
    const struct minifloat *fmt = fp8_format(fp8);

    *man_bits = fmt->man_bits;
    *bias = fmt->bias;
    *finite = fmt->finite;
}

uint8_t
nrtemu__float_to_fp8(enum nrtemu_dtype fp8, float value)
{
    /* A NaN becomes the format's one NaN code, signed (ml_dtypes). */
    return (uint8_t)encode_minifloat(value, fp8_format(fp8));
}

/*
 * fp8 codes to float32 without the table, for runs of contiguous codes:
 * branch-free integer steps that vectorise (16 codes per AVX-512 vector),
 * where the table lookup goes one code at a time.  Bit for bit the
 * table's (decode_minifloat; test_convert checks all 256 codes of each
 * format): a normal code's exponent is rebiased in place; a subnormal's
 * mantissa is converted and scaled, exactly; the top exponent of the
 * IEEE-like formats is infinity or the quiet NaN; e4m3fn's one NaN code
 * is the quiet NaN.
 */
#define FP8_DECODE(M, BIAS, FINITE)                                           \
    do {                                                                      \
        const float step_ = bits_float((uint32_t)(128 - (BIAS) - (M)) << 23); \
        for (size_t i = 0; i < n; i++) {                                      \
            uint32_t c = s[i], mag = c & 0x7fu;                               \
            uint32_t r =                                                      \
                (mag << (23 - (M))) + ((uint32_t)(127 - (BIAS)) << 23);       \
            uint32_t sub = float_bits((float)mag * step_);                    \
            r = mag < (1u << (M)) ? sub : r;                                  \
            if (FINITE) {                                                     \
                r = mag == 0x7fu ? 0x7fc00000u : r;                           \
            } else {                                                          \
                r = mag > (0x7fu >> (M) << (M))    ? 0x7fc00000u              \
                    : mag == (0x7fu >> (M) << (M)) ? 0x7f800000u              \
                                                   : r;                       \
            }                                                                 \
            d[i] = bits_float(r | (c & 0x80u) << 24);                         \
        }                                                                     \
    } while (0)

NRTEMU_INLINE void
fp8_decode_run(float *d, enum nrtemu_dtype from, const uint8_t *s, size_t n)
{
    switch (from) {
    case NRTEMU_DTYPE_FLOAT8_E4M3:
        FP8_DECODE(3, 7, false);
        break;
    case NRTEMU_DTYPE_FLOAT8_E4M3FN:
        FP8_DECODE(3, 7, true);
        break;
    case NRTEMU_DTYPE_FLOAT8_E5M2:
        FP8_DECODE(2, 15, false);
        break;
    default:
        FP8_DECODE(4, 3, false);
        break;
    }
}

/* Float to integer: see convert.h. */
static inline int64_t
float_to_i64(double x)
{
    if (x != x) {
        return 0;
    }
    if (x >= 0x1p63) {
        return INT64_MAX;
    }
    if (x < -0x1p63) {
        return INT64_MIN;
    }
    return (int64_t)x;
}

static inline uint64_t
float_to_u64(double x)
{
    if (!(x > -1.0)) {
        return 0; /* NaN, and negatives saturate */
    }
    return x >= 0x1p64 ? UINT64_MAX : (uint64_t)x;
}

/*
 * Loop over `n` elements of source type T, reading `src` with `stride`;
 * the unit-stride case is separate so that it vectorises, and a stride of
 * 0 (one element broadcast, as the kernels materialise it) is a fill.
 */
#define LOAD_LOOP(T, EXPR)                       \
    do {                                         \
        const T *s_ = (const T *)src;            \
        if (stride == 1) {                       \
            for (size_t i = 0; i < n; i++) {     \
                T v = s_[i];                     \
                d[i] = (EXPR);                   \
            }                                    \
        } else if (stride == 0) {                \
            /* one element for all: a fill */    \
            T v = s_[0];                         \
            const __typeof__(*d) x_ = (EXPR);    \
            for (size_t i = 0; i < n; i++) {     \
                d[i] = x_;                       \
            }                                    \
        } else {                                 \
            for (size_t i = 0; i < n; i++) {     \
                T v = s_[(ptrdiff_t)i * stride]; \
                d[i] = (EXPR);                   \
            }                                    \
        }                                        \
    } while (0)

/* One case per integer type: INT_CASES(EXPR) with EXPR using `v`. */
#define INT_LOAD_CASES(EXPR)          \
    case NRTEMU_DTYPE_BOOL:           \
        LOAD_LOOP(uint8_t, (v != 0)); \
        break;                        \
    case NRTEMU_DTYPE_INT8:           \
        LOAD_LOOP(int8_t, EXPR);      \
        break;                        \
    case NRTEMU_DTYPE_INT16:          \
        LOAD_LOOP(int16_t, EXPR);     \
        break;                        \
    case NRTEMU_DTYPE_INT32:          \
        LOAD_LOOP(int32_t, EXPR);     \
        break;                        \
    case NRTEMU_DTYPE_INT64:          \
        LOAD_LOOP(int64_t, EXPR);     \
        break;                        \
    case NRTEMU_DTYPE_UINT8:          \
        LOAD_LOOP(uint8_t, EXPR);     \
        break;                        \
    case NRTEMU_DTYPE_UINT16:         \
        LOAD_LOOP(uint16_t, EXPR);    \
        break;                        \
    case NRTEMU_DTYPE_UINT32:         \
        LOAD_LOOP(uint32_t, EXPR);    \
        break;                        \
    case NRTEMU_DTYPE_UINT64:         \
        LOAD_LOOP(uint64_t, EXPR);    \
        break;

/*
 * float16 <-> float32 with F16C, 8 or (AVX-512) 16 at a time.  GCC 12 compiles
 * a _Float16 conversion to one scalar vcvtph2ps / vcvtps2ph even in the
 * x86-64-v3 clones (it vectorises them only with AVX512-FP16), which
 * leaves float16 ops at a fraction of the float32 speed.  The vector
 * instructions give the same bits as the scalar ones, NaN included, and
 * vcvtps2ph with immediate 0 rounds to nearest even whatever MXCSR says
 * (test_convert checks every float16 code and the rounding cases).
 * Used from the unit-stride loops of load_f32 and store_f32 when the CPU
 * has F16C (checked once; the clones of those functions may run on a
 * CPU without it).
 */
#if NRTEMU_X86_CLONES
#include <immintrin.h>
#define HAVE_F16C_PATH 1

/* half<W>_load and half<W>_store: W codes a step, in a vector VH of
 * codes (LOAD_H, STORE_H), widened by TO_F32 and stored by STORE_F32,
 * or loaded and narrowed by FROM_F32 (round to nearest even). */
#define HALF_F16C_LOOPS(TARGET, W, VH, LOAD_H, STORE_H, TO_F32, STORE_F32, \
                        FROM_F32)                                          \
    __attribute__((target(TARGET))) static void half##W##_load(            \
        float *d, const uint16_t *s, size_t n)                             \
    {                                                                      \
        size_t i = 0;                                                      \
        for (; i + (W) <= n; i += (W)) {                                   \
            STORE_F32(d + i,                                               \
                      TO_F32(LOAD_H((const VH *)(const void *)(s + i))));  \
        }                                                                  \
        for (; i < n; i++) {                                               \
            d[i] = _cvtsh_ss(s[i]);                                        \
        }                                                                  \
    }                                                                      \
    __attribute__((target(TARGET))) static void half##W##_store(           \
        uint16_t *d, const float *s, size_t n)                             \
    {                                                                      \
        size_t i = 0;                                                      \
        for (; i + (W) <= n; i += (W)) {                                   \
            STORE_H((VH *)(void *)(d + i), FROM_F32(s + i));               \
        }                                                                  \
        for (; i < n; i++) {                                               \
            d[i] = _cvtss_sh(s[i], 0);                                     \
        }                                                                  \
    }
#define FROM_F32_8(p) _mm256_cvtps_ph(_mm256_loadu_ps(p), 0)
#define FROM_F32_16(p) _mm512_cvtps_ph(_mm512_loadu_ps(p), 0)
HALF_F16C_LOOPS("avx,f16c", 8, __m128i, _mm_loadu_si128, _mm_storeu_si128,
                _mm256_cvtph_ps, _mm256_storeu_ps, FROM_F32_8)
/* 16 wide: faster than 8 wide for a float16 row sum through its window
 * (load_f32), cold and warm. */
HALF_F16C_LOOPS("avx512f,f16c", 16, __m256i, _mm256_loadu_si256,
                _mm256_storeu_si256, _mm512_cvtph_ps, _mm512_storeu_ps,
                FROM_F32_16)
#undef FROM_F32_8
#undef FROM_F32_16

static void
half_load_f16c(float *d, const uint16_t *s, size_t n)
{
    if (nrtemu__cpu_has(NRTEMU_CPU_V4)) {
        half16_load(d, s, n);
    } else {
        half8_load(d, s, n);
    }
}

static void
half_store_f16c(uint16_t *d, const float *s, size_t n)
{
    if (nrtemu__cpu_has(NRTEMU_CPU_V4)) {
        half16_store(d, s, n);
    } else {
        half8_store(d, s, n);
    }
}

static bool
cpu_has_f16c(void)
{
    return nrtemu__cpu_has(NRTEMU_CPU_V3);
}
#else
#define HAVE_F16C_PATH 0
#endif

/* Float sources of at most 32 bits, decoded exactly to float32. */
#if HAVE_FLOAT16 && HAVE_F16C_PATH
#define HALF_LOAD_CASE(EXPR)                             \
    case NRTEMU_DTYPE_FLOAT16:                           \
        if (stride == 1 && cpu_has_f16c()) {             \
            half_load_f16c(d, (const uint16_t *)src, n); \
        } else {                                         \
            LOAD_LOOP(_Float16, (float)v);               \
        }                                                \
        break;
#elif HAVE_FLOAT16
#define HALF_LOAD_CASE(EXPR)           \
    case NRTEMU_DTYPE_FLOAT16:         \
        LOAD_LOOP(_Float16, (float)v); \
        break;
#else
#define HALF_LOAD_CASE(EXPR)                           \
    case NRTEMU_DTYPE_FLOAT16:                         \
        LOAD_LOOP(uint16_t, nrtemu__half_to_float(v)); \
        break;
#endif

NRTEMU_MULTIVERSION
static void
load_f32(float *d, enum nrtemu_dtype from, const void *src, ptrdiff_t stride,
         size_t n)
{
    switch (from) {
        INT_LOAD_CASES((float)v)
        HALF_LOAD_CASE(0)
    case NRTEMU_DTYPE_BFLOAT16:
        LOAD_LOOP(uint16_t, bits_float((uint32_t)v << 16));
        break;
    case NRTEMU_DTYPE_FLOAT32:
        LOAD_LOOP(float, v);
        break;
    case NRTEMU_DTYPE_FLOAT64:
        LOAD_LOOP(double, (float)v);
        break;
    case NRTEMU_DTYPE_FLOAT8_E4M3:
    case NRTEMU_DTYPE_FLOAT8_E4M3FN:
    case NRTEMU_DTYPE_FLOAT8_E5M2:
    case NRTEMU_DTYPE_FLOAT8_E3M4: {
        const float *table;
        if (stride == 1) {
            fp8_decode_run(d, from, src, n);
            break;
        }
        table = fp8_decode_table(from);
        LOAD_LOOP(uint8_t, table[v]);
        break;
    }
    default:
        break;
    }
}

NRTEMU_MULTIVERSION
static void
load_f64(double *d, enum nrtemu_dtype from, const void *src, ptrdiff_t stride,
         size_t n)
{
    switch (from) {
        INT_LOAD_CASES((double)v)
    case NRTEMU_DTYPE_FLOAT32:
        LOAD_LOOP(float, (double)v);
        break;
    case NRTEMU_DTYPE_FLOAT64:
        LOAD_LOOP(double, v);
        break;
    default: {
        /* 16- and 8-bit floats: exact through float32. */
        float tmp[CHUNK];
        const char *s = src;
        size_t elem = nrtemu__dtype_size(from);
        for (size_t done = 0; done < n; done += CHUNK) {
            size_t k = n - done < CHUNK ? n - done : CHUNK;
            load_f32(tmp, from, s + (ptrdiff_t)done * stride * (ptrdiff_t)elem,
                     stride, k);
            for (size_t i = 0; i < k; i++) {
                d[done + i] = tmp[i];
            }
        }
        break;
    }
    }
}

/* Integers wrap; floats truncate (float_to_i64). */
#define FLOAT_TO_INT_CASES(CONV)           \
    case NRTEMU_DTYPE_FLOAT32:             \
        LOAD_LOOP(float, CONV((double)v)); \
        break;                             \
    case NRTEMU_DTYPE_FLOAT64:             \
        LOAD_LOOP(double, CONV(v));        \
        break;

static void
load_i64(int64_t *d, enum nrtemu_dtype from, const void *src, ptrdiff_t stride,
         size_t n)
{
    switch (from) {
        INT_LOAD_CASES((int64_t)v)
        FLOAT_TO_INT_CASES(float_to_i64)
    default: {
        float tmp[CHUNK];
        const char *s = src;
        size_t elem = nrtemu__dtype_size(from);
        for (size_t done = 0; done < n; done += CHUNK) {
            size_t k = n - done < CHUNK ? n - done : CHUNK;
            load_f32(tmp, from, s + (ptrdiff_t)done * stride * (ptrdiff_t)elem,
                     stride, k);
            for (size_t i = 0; i < k; i++) {
                d[done + i] = float_to_i64(tmp[i]);
            }
        }
        break;
    }
    }
}

static void
load_u64(uint64_t *d, enum nrtemu_dtype from, const void *src,
         ptrdiff_t stride, size_t n)
{
    switch (from) {
        INT_LOAD_CASES((uint64_t)v)
        FLOAT_TO_INT_CASES(float_to_u64)
    default: {
        float tmp[CHUNK];
        const char *s = src;
        size_t elem = nrtemu__dtype_size(from);
        for (size_t done = 0; done < n; done += CHUNK) {
            size_t k = n - done < CHUNK ? n - done : CHUNK;
            load_f32(tmp, from, s + (ptrdiff_t)done * stride * (ptrdiff_t)elem,
                     stride, k);
            for (size_t i = 0; i < k; i++) {
                d[done + i] = float_to_u64(tmp[i]);
            }
        }
        break;
    }
    }
}

/* Store loops: `s` is the contiguous wide source, `dst` the target. */
#define STORE_LOOP(T, EXPR)              \
    do {                                 \
        T *d_ = (T *)dst;                \
        for (size_t i = 0; i < n; i++) { \
            __typeof__(s[0]) v = s[i];   \
            d_[i] = (T)(EXPR);           \
        }                                \
    } while (0)

/* Integer targets from an integer wide type: wrap through uint64. */
#define INT_STORE_CASES(TO_U64)                   \
    case NRTEMU_DTYPE_BOOL:                       \
        STORE_LOOP(uint8_t, v != 0);              \
        break;                                    \
    case NRTEMU_DTYPE_INT8:                       \
        STORE_LOOP(int8_t, (uint8_t)TO_U64(v));   \
        break;                                    \
    case NRTEMU_DTYPE_INT16:                      \
        STORE_LOOP(int16_t, (uint16_t)TO_U64(v)); \
        break;                                    \
    case NRTEMU_DTYPE_INT32:                      \
        STORE_LOOP(int32_t, (uint32_t)TO_U64(v)); \
        break;                                    \
    case NRTEMU_DTYPE_INT64:                      \
        STORE_LOOP(int64_t, TO_U64(v));           \
        break;                                    \
    case NRTEMU_DTYPE_UINT8:                      \
        STORE_LOOP(uint8_t, TO_U64(v));           \
        break;                                    \
    case NRTEMU_DTYPE_UINT16:                     \
        STORE_LOOP(uint16_t, TO_U64(v));          \
        break;                                    \
    case NRTEMU_DTYPE_UINT32:                     \
        STORE_LOOP(uint32_t, TO_U64(v));          \
        break;                                    \
    case NRTEMU_DTYPE_UINT64:                     \
        STORE_LOOP(uint64_t, TO_U64(v));          \
        break;

#define AS_U64(x) ((uint64_t)(x))

/* Integer targets from a float: truncated and saturated to the range of
 * the type, NaN to 0 (convert.h).  `lim` is the power of two just above
 * the largest value; the selects compile to vector compares. */
#define SAT_STORE(T, minv, maxv, lim)      \
    STORE_LOOP(T, v != v       ? (T)0      \
                  : v < (minv) ? (T)(minv) \
                  : v >= (lim) ? (T)(maxv) \
                               : (T)v)
#define FLOAT_INT_STORE_CASES                             \
    case NRTEMU_DTYPE_BOOL:                               \
        STORE_LOOP(uint8_t, v != 0);                      \
        break;                                            \
    case NRTEMU_DTYPE_INT8:                               \
        SAT_STORE(int8_t, INT8_MIN, INT8_MAX, 0x1p7);     \
        break;                                            \
    case NRTEMU_DTYPE_INT16:                              \
        SAT_STORE(int16_t, INT16_MIN, INT16_MAX, 0x1p15); \
        break;                                            \
    case NRTEMU_DTYPE_INT32:                              \
        SAT_STORE(int32_t, INT32_MIN, INT32_MAX, 0x1p31); \
        break;                                            \
    case NRTEMU_DTYPE_INT64:                              \
        SAT_STORE(int64_t, INT64_MIN, INT64_MAX, 0x1p63); \
        break;                                            \
    case NRTEMU_DTYPE_UINT8:                              \
        SAT_STORE(uint8_t, 0, UINT8_MAX, 0x1p8);          \
        break;                                            \
    case NRTEMU_DTYPE_UINT16:                             \
        SAT_STORE(uint16_t, 0, UINT16_MAX, 0x1p16);       \
        break;                                            \
    case NRTEMU_DTYPE_UINT32:                             \
        SAT_STORE(uint32_t, 0, UINT32_MAX, 0x1p32);       \
        break;                                            \
    case NRTEMU_DTYPE_UINT64:                             \
        SAT_STORE(uint64_t, 0, UINT64_MAX, 0x1p64);       \
        break;

/*
 * float32 to an 8-bit float of M mantissa bits and exponent bias B,
 * rounding to nearest even: encode_minifloat() for float32 inputs, bit
 * for bit (test_convert checks every exponent and rounding case), in
 * branch-free integer steps that vectorise.  A value in the format's
 * subnormal range is rounded by the FPU: adding 2^(24-B-M), whose ulp is
 * the format's subnormal step, leaves the code in the low bits of the
 * sum.  A normal one is rounded in its bits: adding just under half an
 * ulp, plus one when the kept part is odd, carries exactly when it
 * rounds up, into the exponent when the mantissa overflows.
 */
NRTEMU_INLINE uint8_t
f32_to_fp8(float x, int m, int bias, uint32_t nan_code, uint32_t inf_code,
           uint32_t max_code)
{
    const int shift = 23 - m;
    const uint32_t min_normal = (uint32_t)(128 - bias) << 23;
    const float magic = bits_float((uint32_t)(151 - bias - m) << 23);
    uint32_t u = float_bits(x), a = u & 0x7fffffffu;
    uint32_t sub = float_bits(bits_float(a) + magic) - float_bits(magic);
    uint32_t r = a + (1u << (shift - 1)) - 1 + ((a >> shift) & 1);
    uint32_t code = (r >> shift) - ((uint32_t)(127 - bias) << m);

    code = a < min_normal ? sub : code;
    code = code > max_code ? inf_code : code;
    code = a > 0x7f800000u ? nan_code : code;
    return (uint8_t)(((u >> 24) & 0x80u) | code);
}

/* The codes of a format: see encode_minifloat(). */
#define FP8_STORE(M, E, BIAS, FINITE)                                      \
    do {                                                                   \
        const uint32_t ones = (1u << (E)) - 1;                             \
        const uint32_t nan_ = (FINITE) ? (ones << (M)) | ((1u << (M)) - 1) \
                                       : (ones << (M)) | (1u << ((M)-1));  \
        const uint32_t inf_ = (FINITE) ? nan_ : ones << (M);               \
        const uint32_t max_ = inf_ - 1;                                    \
        for (size_t i = 0; i < n; i++) {                                   \
            d[i] = f32_to_fp8(s[i], M, BIAS, nan_, inf_, max_);            \
        }                                                                  \
    } while (0)

NRTEMU_MULTIVERSION
static void
store_fp8(void *dst, enum nrtemu_dtype to, const float *s, size_t n)
{
    uint8_t *d = dst;

    switch (to) {
    case NRTEMU_DTYPE_FLOAT8_E4M3:
        FP8_STORE(3, 4, 7, false);
        break;
    case NRTEMU_DTYPE_FLOAT8_E4M3FN:
        FP8_STORE(3, 4, 7, true);
        break;
    case NRTEMU_DTYPE_FLOAT8_E5M2:
        FP8_STORE(2, 5, 15, false);
        break;
    default:
        FP8_STORE(4, 3, 3, false);
        break;
    }
}

NRTEMU_MULTIVERSION
static void
store_f32(void *dst, enum nrtemu_dtype to, const float *s, size_t n)
{
    switch (to) {
        FLOAT_INT_STORE_CASES
#if HAVE_FLOAT16 && HAVE_F16C_PATH
    case NRTEMU_DTYPE_FLOAT16:
        if (cpu_has_f16c()) {
            half_store_f16c(dst, s, n);
        } else {
            STORE_LOOP(_Float16, v);
        }
        break;
#elif HAVE_FLOAT16
    case NRTEMU_DTYPE_FLOAT16:
        STORE_LOOP(_Float16, v);
        break;
#else
    case NRTEMU_DTYPE_FLOAT16:
        STORE_LOOP(uint16_t, nrtemu__float_to_half(v));
        break;
#endif
    case NRTEMU_DTYPE_BFLOAT16:
        STORE_LOOP(uint16_t, nrtemu__float_to_bfloat16(v));
        break;
    case NRTEMU_DTYPE_FLOAT32:
        STORE_LOOP(float, v);
        break;
    case NRTEMU_DTYPE_FLOAT64:
        STORE_LOOP(double, v);
        break;
    case NRTEMU_DTYPE_FLOAT8_E4M3:
    case NRTEMU_DTYPE_FLOAT8_E4M3FN:
    case NRTEMU_DTYPE_FLOAT8_E5M2:
    case NRTEMU_DTYPE_FLOAT8_E3M4:
        store_fp8(dst, to, s, n);
        break;
    default:
        break;
    }
}

/*
 * bfloat16 and fp8 from float64 or an integer go through float32 rounded
 * to odd: truncated, with the last bit set when anything was dropped.
 * Rounding that to nearest even in a format of at most 22 bits gives what
 * rounding the exact source there gives, which is what ml_dtypes does
 * (from 0.7); rounding to nearest twice would not: a float64 or an
 * integer just past a halfway point of the format lands on it in float32
 * and then goes to even.
 */
static inline float
u64_to_f32_odd(uint64_t x)
{
    int drop;
    uint64_t kept;

    if (x < (1ull << 24)) {
        return (float)x;
    }
    drop = 40 - __builtin_clzll(x);
    kept = x >> drop | ((x & ((1ull << drop) - 1)) != 0);
    /* kept < 2^24 and the scale a power of two: both exact. */
    return (float)kept * bits_float((uint32_t)(127 + drop) << 23);
}

static inline float
i64_to_f32_odd(int64_t x)
{
    float mag = u64_to_f32_odd(x < 0 ? 0 - (uint64_t)x : (uint64_t)x);

    return x < 0 ? -mag : mag;
}

static inline float
f64_to_f32_odd(double x)
{
    float f = (float)x;
    uint32_t u;

    if ((double)f == x || x != x) {
        return f;
    }
    /* Inexact: step to the neighbour toward zero when rounding went
     * away from it (an overflow to infinity steps back to the largest
     * float), then mark the dropped bits in the last bit. */
    u = float_bits(f);
    u -= fabs((double)f) > fabs(x);
    return bits_float(u | 1);
}

#define VIA_FLOAT32(TO_FLOAT)                                  \
    do {                                                       \
        float tmp_[CHUNK];                                     \
        char *d_ = dst;                                        \
        size_t elem_ = nrtemu__dtype_size(to);                 \
        for (size_t done_ = 0; done_ < n; done_ += CHUNK) {    \
            size_t k_ = n - done_ < CHUNK ? n - done_ : CHUNK; \
            for (size_t i = 0; i < k_; i++) {                  \
                tmp_[i] = TO_FLOAT(s[done_ + i]);              \
            }                                                  \
            store_f32(d_ + done_ * elem_, to, tmp_, k_);       \
        }                                                      \
    } while (0)

NRTEMU_MULTIVERSION
static void
store_f64(void *dst, enum nrtemu_dtype to, const double *s, size_t n)
{
    switch (to) {
        FLOAT_INT_STORE_CASES
    case NRTEMU_DTYPE_FLOAT16:
        STORE_LOOP(uint16_t, nrtemu__double_to_half(v));
        break;
    case NRTEMU_DTYPE_FLOAT32:
        STORE_LOOP(float, v);
        break;
    case NRTEMU_DTYPE_FLOAT64:
        STORE_LOOP(double, v);
        break;
    default:
        VIA_FLOAT32(f64_to_f32_odd);
        break;
    }
}

NRTEMU_MULTIVERSION
static void
store_i64(void *dst, enum nrtemu_dtype to, const int64_t *s, size_t n)
{
    switch (to) {
        INT_STORE_CASES(AS_U64)
    case NRTEMU_DTYPE_FLOAT32:
        STORE_LOOP(float, v);
        break;
    case NRTEMU_DTYPE_FLOAT64:
        STORE_LOOP(double, v);
        break;
    default:
        VIA_FLOAT32(i64_to_f32_odd);
        break;
    }
}

NRTEMU_MULTIVERSION
static void
store_u64(void *dst, enum nrtemu_dtype to, const uint64_t *s, size_t n)
{
    switch (to) {
        INT_STORE_CASES(AS_U64)
    case NRTEMU_DTYPE_FLOAT32:
        STORE_LOOP(float, v);
        break;
    case NRTEMU_DTYPE_FLOAT64:
        STORE_LOOP(double, v);
        break;
    default:
        VIA_FLOAT32(u64_to_f32_odd);
        break;
    }
}

enum wide { WIDE_F32, WIDE_F64, WIDE_I64, WIDE_U64 };

/* The wide type that holds a source value before it is stored. */
static enum wide
wide_of(enum nrtemu_dtype dt)
{
    if (dt == NRTEMU_DTYPE_FLOAT64) {
        return WIDE_F64;
    }
    if (nrtemu__dtype_is_float(dt)) {
        return WIDE_F32;
    }
    if (nrtemu__dtype_is_unsigned_int(dt)) {
        return WIDE_U64;
    }
    return WIDE_I64;
}

static void
load_wide(enum wide w, void *d, enum nrtemu_dtype from, const void *src,
          ptrdiff_t stride, size_t n)
{
    switch (w) {
    case WIDE_F32:
        load_f32(d, from, src, stride, n);
        break;
    case WIDE_F64:
        load_f64(d, from, src, stride, n);
        break;
    case WIDE_I64:
        load_i64(d, from, src, stride, n);
        break;
    case WIDE_U64:
        load_u64(d, from, src, stride, n);
        break;
    }
}

static void
store_wide(enum wide w, void *dst, enum nrtemu_dtype to, const void *s,
           size_t n)
{
    switch (w) {
    case WIDE_F32:
        store_f32(dst, to, s, n);
        break;
    case WIDE_F64:
        store_f64(dst, to, s, n);
        break;
    case WIDE_I64:
        store_i64(dst, to, s, n);
        break;
    case WIDE_U64:
        store_u64(dst, to, s, n);
        break;
    }
}

/*
 * Truth values of a contiguous run, straight from the bits: an integer is
 * true when any bit is set, a float when any bit but the sign is (zeros
 * of either sign are false, NaN true): what converting to the wide type
 * and comparing with 0 gives, in one pass that vectorises.
 */
#define TRUTH_LOOP(T, MASK)                          \
    do {                                             \
        const T *s_ = src;                           \
        for (size_t i = 0; i < n; i++) {             \
            d[i] = (uint8_t)((s_[i] & (MASK)) != 0); \
        }                                            \
    } while (0)

NRTEMU_MULTIVERSION
static void
to_truth(uint8_t *d, enum nrtemu_dtype from, const void *src, size_t n)
{
    bool fl = nrtemu__dtype_is_float(from);

    switch (nrtemu__dtype_size(from)) {
    case 1:
        TRUTH_LOOP(uint8_t, fl ? 0x7fu : 0xffu);
        break;
    case 2:
        TRUTH_LOOP(uint16_t, fl ? 0x7fffu : 0xffffu);
        break;
    case 4:
        TRUTH_LOOP(uint32_t, fl ? 0x7fffffffu : 0xffffffffu);
        break;
    default:
        TRUTH_LOOP(uint64_t, fl ? ~(1ull << 63) : ~0ull);
        break;
    }
}

void
nrtemu__convert(enum nrtemu_dtype to, void *dst, enum nrtemu_dtype from,
                const void *src, ptrdiff_t src_stride, size_t n)
{
    size_t from_size = nrtemu__dtype_size(from);
    size_t to_size = nrtemu__dtype_size(to);
    enum wide w;

    if (n == 0 || from_size == 0 || to_size == 0) {
        return;
    }
    if (from == to && from != NRTEMU_DTYPE_BOOL) {
        const ptrdiff_t stride = src_stride;
        if (stride == 1) {
            if (dst != src) {
                memcpy(dst, src, n * from_size);
            }
            return;
        }
        switch (from_size) {
        case 1: {
            uint8_t *d = dst;
            LOAD_LOOP(uint8_t, v);
            return;
        }
        case 2: {
            uint16_t *d = dst;
            LOAD_LOOP(uint16_t, v);
            return;
        }
        case 4: {
            uint32_t *d = dst;
            LOAD_LOOP(uint32_t, v);
            return;
        }
        default: {
            uint64_t *d = dst;
            LOAD_LOOP(uint64_t, v);
            return;
        }
        }
    }
    if (to == NRTEMU_DTYPE_BOOL && src_stride == 1) {
        to_truth(dst, from, src, n);
        return;
    }
    /* Loading straight into a wide target is the whole conversion. */
    switch (to) {
    case NRTEMU_DTYPE_FLOAT32:
        load_f32(dst, from, src, src_stride, n);
        return;
    case NRTEMU_DTYPE_FLOAT64:
        load_f64(dst, from, src, src_stride, n);
        return;
    case NRTEMU_DTYPE_INT64:
        load_i64(dst, from, src, src_stride, n);
        return;
    case NRTEMU_DTYPE_UINT64:
        load_u64(dst, from, src, src_stride, n);
        return;
    default:
        break;
    }
    w = wide_of(from);
    if (src_stride == 1 &&
        ((w == WIDE_F32 && from == NRTEMU_DTYPE_FLOAT32) || (w == WIDE_F64) ||
         (w == WIDE_I64 && from == NRTEMU_DTYPE_INT64) ||
         (w == WIDE_U64 && from == NRTEMU_DTYPE_UINT64))) {
        store_wide(w, dst, to, src, n);
        return;
    }
    {
        /* uint64 is the widest element: the buffer fits any wide type. */
        uint64_t tmp[CHUNK];
        const char *s = src;
        char *d = dst;
        for (size_t done = 0; done < n; done += CHUNK) {
            size_t k = n - done < CHUNK ? n - done : CHUNK;
            load_wide(w, tmp, from,
                      s + (ptrdiff_t)done * src_stride * (ptrdiff_t)from_size,
                      src_stride, k);
            store_wide(w, d + done * to_size, to, tmp, k);
        }
    }
}
