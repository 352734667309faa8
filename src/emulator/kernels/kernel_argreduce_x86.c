/*
 * kernel_argreduce_x86.c - argmax/argmin's AVX-512 (with VBMI) paths:
 * rows of fp8, float16 and bfloat16 by their codes, and column sweeps
 * that widen the narrow floats in registers (kernel_reduce_x86.h).  Each
 * gives the results of kernel_argreduce.c's portable loops: the first
 * NaN, else the first extreme, -0 and +0 equal.
 */
#include <stdint.h>

#include "kernels/kernel_reduce.h"
#include "kernels/kernel_reduce_x86.h"

#if NRTEMU_X86_CLONES

/* The first index i < n with (x[i] & and) == want (gt: > want), which the
 * caller knows to exist. */
WIDE static uint64_t
bytes_find(uint64_t n, const uint8_t *x, uint8_t and, uint8_t want, bool gt)
{
    const __m512i a = _mm512_set1_epi8((char)and);
    const __m512i w = _mm512_set1_epi8((char)want);

    for (uint64_t i = 0; i < n; i += 64) {
        const __mmask64 m = wide_mask(n - i);
        const __m512i c = _mm512_and_si512(tail_load_epi8(m, x + i), a);
        const __mmask64 hit = (gt ? _mm512_cmpgt_epu8_mask(c, w)
                                  : _mm512_cmpeq_epi8_mask(c, w)) &
                              m;
        if (hit != 0) {
            return i + (uint64_t)__builtin_ctzll(hit);
        }
    }
    return 0;
}

/* argmax/argmin of a row of n fp8 codes (n >= 1): the first NaN, else the
 * first extreme, -0 and +0 equal (SFX##_arg_row's rules). */
WIDE static uint64_t
bytes_arg_row(bool ismax, uint64_t n, const uint8_t *x, uint8_t nan_above)
{
    struct bytes_ext e;
    __m512i c;
    uint8_t code;

    bytes_ext_init(&e);
    for (uint64_t i = 0; i < n; i += 64) {
        const __mmask64 m = wide_mask(n - i);
        bytes_ext_add(&e, m, tail_load_epi8(m, x + i));
    }
    bytes_ext_lanes(&e);
    c = bytes_ext_code(ismax, &e);
    code = (uint8_t)_mm_cvtsi128_si32(_mm512_castsi512_si128(c));
    if ((int8_t)_mm_cvtsi128_si32(_mm512_castsi512_si128(e.smax)) >
            (int)nan_above ||
        (uint8_t)_mm_cvtsi128_si32(_mm512_castsi512_si128(e.umax)) >
            (0x80 | nan_above)) {
        return bytes_find(n, x, 0x7f, nan_above, true); /* the first NaN */
    }
    if ((code & 0x7f) == 0) {
        return bytes_find(n, x, 0x7f, 0, false);
    }
    return bytes_find(n, x, 0xff, code, false);
}

/*
 * argmax/argmin of a row of n float16 or bfloat16 codes (n >= 1) by keys
 * in 16-bit lanes, 32 a vector, as bytes_arg_row does fp8: the key of a
 * code is its magnitude with its sign (-0 and +0 both 0: equal, as NumPy
 * has them), a NaN (a magnitude above `inf_bits`, the infinity's) is
 * above (argmax) or below (argmin) every other key, so the first index
 * of the extreme key is the first NaN, else the first extreme: the
 * widened row's SFX##_arg_row result.  One pass for the extreme key and
 * one, stopping at it, for its index, with no float32 copy of the row (the
 * copy and the float32 pass would be most of a float16 argmax's time).
 */
/*
 * The order of fp8 codes for argmax/argmin as signed bytes (bytes_key),
 * and of float16/bfloat16 codes as signed 16-bit lanes (half_key): the
 * sign and the magnitude (-0 and +0 both 0: equal, as NumPy has them),
 * every NaN (a magnitude above `nan_above`) `nan_key`, above (argmax:
 * the greatest key) or below (argmin: the least) every other key, so
 * that a row or column keeps its first NaN as it keeps its first extreme.
 */
#define DEFINE_CODE_KEY(NAME, BITS, MAG)                                      \
    WIDE static inline __m512i NAME(__m512i c, __m512i nan_above,             \
                                    __m512i nan_key)                          \
    {                                                                         \
        const __m512i mag = _mm512_and_si512(c, _mm512_set1_epi##BITS(MAG));  \
        const __m512i key = _mm512_mask_sub_epi##BITS(                        \
            mag, _mm512_movepi##BITS##_mask(c), _mm512_setzero_si512(), mag); \
        return _mm512_mask_mov_epi##BITS(                                     \
            key, _mm512_cmpgt_epu##BITS##_mask(mag, nan_above), nan_key);     \
    }
DEFINE_CODE_KEY(bytes_key, 8, 0x7f)
DEFINE_CODE_KEY(half_key, 16, 0x7fff)

/* The greatest (ismax) or least signed 16-bit lane of v, in every lane:
 * _mm_minpos_epu16 on keys whose unsigned order is the one wanted. */
WIDE static inline __m512i
half_extreme(bool ismax, __m512i v)
{
    const __m128i flip = _mm_set1_epi16(ismax ? 0x7fff : -0x8000);
    __m256i h = ismax ? _mm256_max_epi16(_mm512_castsi512_si256(v),
                                         _mm512_extracti64x4_epi64(v, 1))
                      : _mm256_min_epi16(_mm512_castsi512_si256(v),
                                         _mm512_extracti64x4_epi64(v, 1));
    __m128i q = ismax ? _mm_max_epi16(_mm256_castsi256_si128(h),
                                      _mm256_extracti128_si256(h, 1))
                      : _mm_min_epi16(_mm256_castsi256_si128(h),
                                      _mm256_extracti128_si256(h, 1));
    /* argmax: 0x7fff - k (no wrap for any k), argmin: k ^ 0x8000 */
    __m128i u = ismax ? _mm_sub_epi16(flip, q) : _mm_xor_si128(q, flip);
    __m128i m = _mm_minpos_epu16(u);
    __m128i k = ismax ? _mm_sub_epi16(flip, m) : _mm_xor_si128(m, flip);

    return _mm512_broadcastw_epi16(k);
}

WIDE static uint64_t
half_arg_row(bool ismax, uint64_t n, const uint16_t *x, uint16_t inf_bits)
{
    const __m512i inf = _mm512_set1_epi16((short)inf_bits);
    const __m512i nan_key = _mm512_set1_epi16(ismax ? 0x7fff : -0x8000);
    __m512i ext = _mm512_set1_epi16(ismax ? -0x8000 : 0x7fff);
    uint64_t i = 0;

    if (ismax) {
        for (; i + 32 <= n; i += 32) {
            ext = _mm512_max_epi16(
                ext, half_key(_mm512_loadu_si512(x + i), inf, nan_key));
        }
    } else {
        for (; i + 32 <= n; i += 32) {
            ext = _mm512_min_epi16(
                ext, half_key(_mm512_loadu_si512(x + i), inf, nan_key));
        }
    }
    if (i < n) {
        const __mmask32 m = (__mmask32)wide_mask(n - i);
        const __m512i k = half_key(tail_load_epi16(m, x + i), inf, nan_key);
        ext = ismax ? _mm512_mask_max_epi16(ext, m, ext, k)
                    : _mm512_mask_min_epi16(ext, m, ext, k);
    }
    ext = half_extreme(ismax, ext);
    for (i = 0; i < n; i += 32) {
        const __mmask32 m = (__mmask32)wide_mask(n - i);
        const __m512i k = half_key(tail_load_epi16(m, x + i), inf, nan_key);
        const __mmask32 hit = _mm512_mask_cmpeq_epi16_mask(m, k, ext);
        if (hit != 0) {
            return i + (uint64_t)__builtin_ctz(hit);
        }
    }
    return 0; /* (not reached: some lane holds the extreme) */
}

/* at[i] = base + a8's byte i, for the lanes of t. */
WIDE static inline void
bytes_at_store(uint32_t *at, __mmask64 t, __m512i a8, uint32_t base)
{
    const __m512i b = _mm512_set1_epi32((int)base);

    _mm512_mask_storeu_epi32(
        at, (__mmask16)t,
        _mm512_add_epi32(_mm512_cvtepu8_epi32(_mm512_castsi512_si128(a8)), b));
    _mm512_mask_storeu_epi32(
        at + 16, (__mmask16)(t >> 16),
        _mm512_add_epi32(
            _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(a8, 1)), b));
    _mm512_mask_storeu_epi32(
        at + 32, (__mmask16)(t >> 32),
        _mm512_add_epi32(
            _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(a8, 2)), b));
    _mm512_mask_storeu_epi32(
        at + 48, (__mmask16)(t >> 48),
        _mm512_add_epi32(
            _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(a8, 3)), b));
}

/* at[0..n) = base + a8[i] where `taken` (one mask per 64) has bit i. */
WIDE static void
bytes_at_flush(uint32_t *at, uint64_t n, const uint8_t *a8, uint64_t *taken,
               uint32_t base)
{
    for (uint64_t j = 0; j < n; j += 64) {
        bytes_at_store(at + j, taken[j / 64], _mm512_load_si512(a8 + j), base);
        taken[j / 64] = 0;
    }
}

/*
 * Rows [0, g) (g >= 1) of n columns of fp8 codes, `stride` apart, from
 * row index r0 on, into best[0..n) (the widened extreme) and at[0..n)
 * (its row), as ARG_FLOAT_SWEEP's sweeps of the widened codes would: a
 * column takes a row's key when strictly better.  One row at a time
 * across the columns, in the order of memory, the keys, the rows' offsets
 * within blocks of BYTES_BLOCK rows (bytes) and which columns took one in
 * the block held in L1 between; the offsets go to `at` at the end of each
 * block.  (Faster, with the input out of the caches, than bytes_columns_ext's
 * 16 rows at a time, whose 16 streams a row apart the hardware prefetchers
 * follow poorly; a little slower with the input in cache.  A column takes a
 * row's key seldom after its first rows, so the stores of the keys and offsets
 * are skipped for runs of 64 columns that take none.)
 */
#define BYTES_BLOCK 256

/* The columns [j, j + 64) of a row, those of m (a step of
 * bytes_arg_columns). */
#define BYTES_ARG_STEP(ismax, m)                                             \
    do {                                                                     \
        const __m512i key = bytes_key(tail_load_epi8((m), row + j), na, nk); \
        const __m512i kb = _mm512_load_si512(bk + j);                        \
        const __mmask64 t = ((ismax) ? _mm512_cmpgt_epi8_mask(key, kb)       \
                                     : _mm512_cmplt_epi8_mask(key, kb)) &    \
                            (m);                                             \
        if (t != 0) {                                                        \
            _mm512_mask_storeu_epi8(bk + j, t, key);                         \
            _mm512_mask_storeu_epi8(a8 + j, t, off);                         \
            taken[j / 64] |= t;                                              \
        }                                                                    \
    } while (0)

/* (inlined for each direction, with the mask of the whole steps a
 * constant, as WIDE_FOLD_SWEEP's NAME##_op; each row prefetches the run
 * PREFETCH_ROWS rows ahead) */
WIDE static inline __attribute__((always_inline)) void
bytes_arg_columns_dir(const bool ismax, uint32_t r0, uint64_t g, uint64_t n,
                      uint64_t stride, const uint8_t *x, uint32_t *at,
                      float *best, struct narrow p, uint8_t nan_above)
{
    const __m512i na = _mm512_set1_epi8((char)nan_above);
    const __m512i nk = _mm512_set1_epi8(ismax ? 127 : -128);
    _Alignas(64) int8_t bk[BYTES_CHUNK];
    _Alignas(64) uint8_t a8[BYTES_CHUNK];
    uint64_t taken[BYTES_CHUNK / 64];

    for (uint64_t b = 0; b < n; b += BYTES_CHUNK) {
        const uint64_t w = n - b < BYTES_CHUNK ? n - b : BYTES_CHUNK;
        const uint8_t *xb = x + b;
        uint64_t base = 0;

        for (uint64_t j = 0; j < w; j += 64) {
            const __mmask64 m = wide_mask(w - j);
            _mm512_store_si512(bk + j,
                               bytes_key(tail_load_epi8(m, xb + j), na, nk));
            _mm512_store_si512(a8 + j, _mm512_setzero_si512());
            taken[j / 64] = m;
        }
        for (uint64_t r = 1; r < g; r++) {
            const uint8_t *row = xb + r * stride;
            uint64_t j = 0;
            __m512i off;
            if (r == base + BYTES_BLOCK) {
                bytes_at_flush(at + b, w, a8, taken, r0 + (uint32_t)base);
                base = r;
            }
            prefetch_row(xb, r, g, stride, w);
            off = _mm512_set1_epi8((char)(r - base));
            for (; j + 64 <= w; j += 64) {
                BYTES_ARG_STEP(ismax, ~(__mmask64)0);
            }
            if (j < w) {
                BYTES_ARG_STEP(ismax, wide_mask(w - j));
            }
        }
        bytes_at_flush(at + b, w, a8, taken, r0 + (uint32_t)base);
        for (uint64_t i = 0; i < w; i++) {
            const int k = bk[i];
            const uint32_t c = k == (ismax ? 127 : -128) ? 0x7fu
                               : k >= 0                  ? (uint32_t)k
                                        : 0x80u | (uint32_t)-k;
            best[b + i] = narrow_widen(c, p);
        }
    }
}

/* On a cache line of its own: the speed of its row loop depends on where
 * the loop falls within the lines (the decoded-op cache), which the line's
 * start fixes whatever code precedes the function in the library. */
WIDE __attribute__((aligned(64))) static void
bytes_arg_columns(bool ismax, uint32_t r0, uint64_t g, uint64_t n,
                  uint64_t stride, const uint8_t *x, uint32_t *at, float *best,
                  struct narrow p, uint8_t nan_above)
{
    if (ismax) {
        bytes_arg_columns_dir(true, r0, g, n, stride, x, at, best, p,
                              nan_above);
    } else {
        bytes_arg_columns_dir(false, r0, g, n, stride, x, at, best, p,
                              nan_above);
    }
}

/*
 * Column argmax/argmin with AVX-512, reading the input as it is stored:
 * float32, or bfloat16, float16 and fp8 widened exactly in registers
 * (the widenings of the column folds: F16C's for float16), or int32.
 * ARG_SWEEP rows at a time sweep the columns: one, in the order of
 * memory, each row's running extremes and indices loaded and stored from
 * L1 (by 8 rows, 8 streams a few KiB apart, the input comes from memory
 * slower); within a sweep each column takes a row's value when it is
 * better by ARG_BETTER_FLOAT's rule (a greater, or smaller, value, or the
 * first NaN, which then stays): _CMP_NLE_UQ (or NGE_UQ) is "greater (smaller)
 * or unordered", and the best so far must be ordered.  The same results
 * as SFX##_arg_columns, which is the path without AVX-512.
 */
#define ARG_SWEEP 1

/* Rows [0, g) of n columns, `stride` elements apart, from row index r0 on,
 * into best[0..n) and at[0..n) (started by row 0 when `init`), 64
 * columns at a time. */
/* The columns [j, j + 64) of rows [r, r + gg), those of m, into best and
 * at (a step of ARG_FLOAT_SWEEP). */
#define ARG_SWEEP_STEP(LOAD, ismax, m)                                     \
    do {                                                                   \
        __m512 b[4];                                                       \
        __m512i a[4];                                                      \
        for (int q = 0; q < 4; q++) {                                      \
            const __mmask16 mq = (__mmask16)((m) >> (16 * q));             \
            b[q] = tail_load_ps(mq, best + j + 16 * q);                    \
            a[q] = tail_load_epi32(mq, at + j + 16 * q);                   \
        }                                                                  \
        for (uint64_t k = 0; k < gg; k++) {                                \
            const __m512i kk = _mm512_set1_epi32((int)(r0 + r + k));       \
            LOAD(x, (r + k) * stride + j, (m), c, v);                      \
            for (int q = 0; q < 4; q++) {                                  \
                __mmask16 take =                                           \
                    (ismax) ? _mm512_cmp_ps_mask(v[q], b[q], _CMP_NLE_UQ)  \
                            : _mm512_cmp_ps_mask(v[q], b[q], _CMP_NGE_UQ); \
                take &= _mm512_cmp_ps_mask(b[q], b[q], _CMP_ORD_Q);        \
                b[q] = _mm512_mask_mov_ps(b[q], take, v[q]);               \
                a[q] = _mm512_mask_mov_epi32(a[q], take, kk);              \
            }                                                              \
        }                                                                  \
        for (int q = 0; q < 4; q++) {                                      \
            const __mmask16 mq = (__mmask16)((m) >> (16 * q));             \
            tail_store_ps(best + j + 16 * q, mq, b[q]);                    \
            tail_store_epi32(at + j + 16 * q, mq, a[q]);                   \
        }                                                                  \
    } while (0)

/* (NAME##_dir is inlined for each direction, with the mask of the whole
 * steps a constant, as WIDE_FOLD_SWEEP's NAME##_op.) */
#define ARG_FLOAT_SWEEP(NAME, LOAD)                                        \
    WIDE static inline __attribute__((always_inline)) void NAME##_dir(     \
        const bool ismax, uint64_t r, uint32_t r0, uint64_t g, uint64_t n, \
        uint64_t stride, const void *x, uint32_t *at, float *best,         \
        const struct wide_tab *c)                                          \
    {                                                                      \
        __m512 v[4];                                                       \
        for (; r < g; r += ARG_SWEEP) {                                    \
            uint64_t gg = g - r < ARG_SWEEP ? g - r : ARG_SWEEP;           \
            uint64_t j = 0;                                                \
            for (; j + 64 <= n; j += 64) {                                 \
                ARG_SWEEP_STEP(LOAD, ismax, ~(__mmask64)0);                \
            }                                                              \
            if (j < n) {                                                   \
                ARG_SWEEP_STEP(LOAD, ismax, wide_mask(n - j));             \
            }                                                              \
        }                                                                  \
    }                                                                      \
    WIDE static void NAME(bool ismax, bool init, uint32_t r0, uint64_t g,  \
                          uint64_t n, uint64_t stride, const void *x,      \
                          uint32_t *at, float *best,                       \
                          const struct wide_ctx *ctx)                      \
    {                                                                      \
        const struct wide_tab tab = wide_tab_of(ctx);                      \
        const struct wide_tab *c = &tab;                                   \
        uint64_t r = 0;                                                    \
        __m512 v[4];                                                       \
        if (init) {                                                        \
            for (uint64_t j = 0; j < n; j += 64) {                         \
                const __mmask64 m = wide_mask(n - j);                      \
                LOAD(x, j, m, c, v);                                       \
                for (int q = 0; q < 4; q++) {                              \
                    const __mmask16 mq = (__mmask16)(m >> (16 * q));       \
                    tail_store_ps(best + j + 16 * q, mq, v[q]);            \
                    tail_store_epi32(at + j + 16 * q, mq,                  \
                                     _mm512_set1_epi32((int)r0));          \
                }                                                          \
            }                                                              \
            r = 1;                                                         \
        }                                                                  \
        if (ismax) {                                                       \
            NAME##_dir(true, r, r0, g, n, stride, x, at, best, c);         \
        } else {                                                           \
            NAME##_dir(false, r, r0, g, n, stride, x, at, best, c);        \
        }                                                                  \
    }

ARG_FLOAT_SWEEP(arg_sweep_f32, wide_load_f32)
ARG_FLOAT_SWEEP(arg_sweep_bf16, wide_load_bf16)
ARG_FLOAT_SWEEP(arg_sweep_f16, wide_load_f16)

WIDE static void
arg_sweep_i32(bool ismax, bool init, uint32_t r0, uint64_t g, uint64_t n,
              uint64_t stride, const void *x, uint32_t *at, int32_t *best)
{
    const int32_t *xi = x;
    uint64_t r = 0;

    if (init) {
        for (uint64_t j = 0; j < n; j += 16) {
            __mmask16 m =
                n - j >= 16 ? 0xffff : (__mmask16)((1u << (n - j)) - 1);
            tail_store_epi32(best + j, m, tail_load_epi32(m, xi + j));
            tail_store_epi32(at + j, m, _mm512_set1_epi32((int)r0));
        }
        r = 1;
    }
    for (; r < g; r += ARG_SWEEP) {
        uint64_t gg = g - r < ARG_SWEEP ? g - r : ARG_SWEEP;
        for (uint64_t j = 0; j < n; j += 16) {
            __mmask16 m =
                n - j >= 16 ? 0xffff : (__mmask16)((1u << (n - j)) - 1);
            __m512i b = tail_load_epi32(m, best + j);
            __m512i a = tail_load_epi32(m, at + j);
            for (uint64_t k = 0; k < gg; k++) {
                __m512i v = tail_load_epi32(m, xi + (r + k) * stride + j);
                __mmask16 take = ismax ? _mm512_cmpgt_epi32_mask(v, b)
                                       : _mm512_cmplt_epi32_mask(v, b);
                b = _mm512_mask_mov_epi32(b, take, v);
                a = _mm512_mask_mov_epi32(
                    a, take, _mm512_set1_epi32((int)(r0 + r + k)));
            }
            tail_store_epi32(best + j, m, b);
            tail_store_epi32(at + j, m, a);
        }
    }
}

/* The column sweeps above, for nrtemu__arg_x86_columns (kernel_reduce.h):
 * false where they do not apply (no AVX-512, other dtypes, row indices of
 * more than 32 bits). */
bool
nrtemu__arg_x86_columns(bool ismax, enum nrtemu_dtype kt,
                        enum nrtemu_dtype src, uint64_t R, uint64_t stride,
                        uint64_t r0, uint64_t g, uint64_t w, const void *x,
                        void *at, void *best)
{
    const struct wide_ctx *c = nrtemu__reduce_x86_ctx(src);

    if (!cpu_has_wide() || R > UINT32_MAX) {
        return false;
    }
    if (kt == NRTEMU_DTYPE_INT32 && src == NRTEMU_DTYPE_INT32) {
        arg_sweep_i32(ismax, true, (uint32_t)r0, g, w, stride, x, at, best);
        return true;
    }
    if (kt != NRTEMU_DTYPE_FLOAT32) {
        return false;
    }
    switch (src) {
    case NRTEMU_DTYPE_FLOAT32:
        arg_sweep_f32(ismax, true, (uint32_t)r0, g, w, stride, x, at, best,
                      NULL);
        return true;
    case NRTEMU_DTYPE_BFLOAT16:
        arg_sweep_bf16(ismax, true, (uint32_t)r0, g, w, stride, x, at, best,
                       NULL);
        return true;
    case NRTEMU_DTYPE_FLOAT16:
        arg_sweep_f16(ismax, true, (uint32_t)r0, g, w, stride, x, at, best,
                      NULL);
        return true;
    default:
        if (c != NULL) {
            bytes_arg_columns(ismax, (uint32_t)r0, g, w, stride, x, at, best,
                              narrow_fp8(src), fp8_nan_above(src));
            return true;
        }
        return false;
    }
}

/* Rows of fp8, float16 and bfloat16 by their codes (bytes_arg_row,
 * half_arg_row), for nrtemu__arg_x86_rows (kernel_reduce.h): false for
 * other dtypes, or without AVX-512. */
bool
nrtemu__arg_x86_rows(bool ismax, enum nrtemu_dtype kt, enum nrtemu_dtype src,
                     uint64_t R, uint64_t a0, uint64_t a1, const void *x,
                     int64_t *out)
{
    if (kt != NRTEMU_DTYPE_FLOAT32 || !cpu_has_wide()) {
        return false;
    }
    if (is_fp8(src)) {
        const uint8_t *x8 = x, na = fp8_nan_above(src);
        for (uint64_t a = a0; a < a1; a++) {
            out[a] = (int64_t)bytes_arg_row(ismax, R, x8 + a * R, na);
        }
        return true;
    }
    if (src == NRTEMU_DTYPE_FLOAT16 || src == NRTEMU_DTYPE_BFLOAT16) {
        const uint16_t *x16 = x;
        const uint16_t inf = src == NRTEMU_DTYPE_FLOAT16 ? 0x7c00 : 0x7f80;
        for (uint64_t a = a0; a < a1; a++) {
            out[a] = (int64_t)half_arg_row(ismax, R, x16 + a * R, inf);
        }
        return true;
    }
    return false;
}
#endif
