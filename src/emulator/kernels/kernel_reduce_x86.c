/*
 * kernel_reduce_x86.c - the reductions' x86 paths: the AVX-512 (with
 * VBMI) column folds, fp8 row sums and extremes, and fp8 widening
 * (kernel_reduce_x86.h says how they widen), and fp8 widening with F16C
 * for CPUs without them.  Each entry point (kernel_reduce.h) gives the
 * results of the portable loop of kernel_reduce.c that it stands for.
 */
#include <pthread.h>
#include <string.h>

#include "kernels/kernel_reduce.h"
#include "kernels/kernel_reduce_x86.h"

#if NRTEMU_X86_CLONES

/*
 * fp8 to float32 with F16C, for CPUs without the WIDE paths below (AVX2,
 * as x86-64-v3 has it): an fp8 magnitude's bits, moved up to the top of a
 * float16's exponent and mantissa, are a float16 whose value is the
 * code's times 2^(bias - 15), subnormals included (both formats scale
 * their subnormals as their normals), so vcvtph2ps and a multiply by
 * 2^(15 - bias) widen it exactly, with no float32 subnormal on the way
 * (and vcvtph2ps ignores denormals-are-zero); the infinity and NaN codes
 * become float16's (0x7c00, and 0x7e00: the quiet NaN of narrow_widen).
 * 16 codes a step, about 17 instructions, where GCC's v3 clone of widen_fp8
 * takes about 40 for 8 and spills.  Returns the count done (whole steps).
 */
__attribute__((target("avx2,f16c"))) static size_t
widen_fp8_f16c(float *restrict d, const uint8_t *restrict s, size_t n,
               struct narrow p)
{
    const int bias = 127 - (int)(p.rebias >> 23);
    const __m128i up = _mm_cvtsi32_si128((int)p.sh - 13); /* 10 - m */
    const __m256i mag_mask = _mm256_set1_epi16(0x7f);
    const __m256i sign_bit = _mm256_set1_epi16(0x80);
    const __m256i special_below = _mm256_set1_epi16((short)(p.special_at - 1));
    const __m256i quiet_above = _mm256_set1_epi16((short)p.quiet_above);
    const __m256i inf = _mm256_set1_epi16(0x7c00);
    const __m256i nan = _mm256_set1_epi16(0x7e00);
    const __m256 scale = _mm256_set1_ps(ldexpf(1.0f, 15 - bias));
    size_t i = 0;

    for (; i + 16 <= n; i += 16) {
        const __m256i w =
            _mm256_cvtepu8_epi16(_mm_loadu_si128((const void *)(s + i)));
        const __m256i mag = _mm256_and_si256(w, mag_mask);
        const __m256i special =
            _mm256_blendv_epi8(inf, nan, _mm256_cmpgt_epi16(mag, quiet_above));
        const __m256i h = _mm256_or_si256(
            _mm256_blendv_epi8(_mm256_sll_epi16(mag, up), special,
                               _mm256_cmpgt_epi16(mag, special_below)),
            _mm256_slli_epi16(_mm256_and_si256(w, sign_bit), 8));
        _mm256_storeu_ps(
            d + i,
            _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), scale));
        _mm256_storeu_ps(
            d + i + 8,
            _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)),
                          scale));
    }
    return i;
}

static bool
cpu_has_f16c(void)
{
    return nrtemu__cpu_has(NRTEMU_CPU_V3);
}

/* false if a value of dt were not a bfloat16 (then the plain loops). */
static bool
wide_ctx_build(enum nrtemu_dtype dt, struct wide_ctx *c)
{
    struct narrow p = narrow_fp8(dt);

    for (uint32_t m = 0; m < 128; m++) {
        uint32_t u = bits_of_float(narrow_widen(m, p));
        if ((u & 0xffff) != 0) {
            return false;
        }
        c->hi[m] = (uint8_t)(u >> 24);
        c->lo[m] = (uint8_t)(u >> 16);
    }
    /* Result q's float32 k, element 16q + k: its bytes 2 and 3 (bytes 0
     * and 1 are zeroed) from the low and high bytes of that element's
     * bfloat16, byte 16q + k of lo, and of hi (the second operand). */
    for (uint32_t q = 0; q < 4; q++) {
        for (uint32_t k = 0; k < 16; k++) {
            c->pick[q][4 * k] = c->pick[q][4 * k + 1] = 0;
            c->pick[q][4 * k + 2] = (uint8_t)(16 * q + k);
            c->pick[q][4 * k + 3] = (uint8_t)(64 + 16 * q + k);
        }
    }
    return true;
}

/* The tables of the four fp8 formats, built once (a row of fp8 is
 * widened many times a call). */
static const enum nrtemu_dtype wide_fp8s[4] = {
    NRTEMU_DTYPE_FLOAT8_E4M3, NRTEMU_DTYPE_FLOAT8_E4M3FN,
    NRTEMU_DTYPE_FLOAT8_E5M2, NRTEMU_DTYPE_FLOAT8_E3M4};
static struct wide_ctx wide_ctxs[4];
static bool wide_ctx_ok[4];
static pthread_once_t wide_once = PTHREAD_ONCE_INIT;

static void
wide_ctx_init(void)
{
    for (int k = 0; k < 4; k++) {
        wide_ctx_ok[k] = wide_ctx_build(wide_fp8s[k], &wide_ctxs[k]);
    }
}

const struct wide_ctx *
nrtemu__reduce_x86_ctx(enum nrtemu_dtype dt)
{
    pthread_once(&wide_once, wide_ctx_init);
    for (int k = 0; k < 4; k++) {
        if (wide_fp8s[k] == dt) {
            return wide_ctx_ok[k] ? &wide_ctxs[k] : NULL;
        }
    }
    return NULL;
}

/*
 * Rows [0, g) of n columns, `stride` elements apart, folded into acc[0..n)
 * by op as SFX##_columns folds them: each column row after row (a sum
 * acc + x0 + x1 + ..., in that order), max/min as
 * NRTEMU_FLOAT_MAX/NRTEMU_FLOAT_MIN (x replaces acc when acc >= x (<= x) is
 * false and acc is no NaN: the first NaN stays), 64 columns at a time over
 * WIDE_SWEEP_OF(ES) rows.
 *
 * float32 rows go WIDE_SWEEP at a time, so that the accumulators are
 * loaded and stored once per WIDE_SWEEP rows.  Narrower rows go one at a
 * time, in the order of memory, each prefetching the run PREFETCH_ROWS
 * rows ahead whatever its length: the input streams from memory faster
 * so than as 8 runs of a few KiB apart, which the hardware prefetchers
 * follow poorly, and the accumulators are in L1 either way.  float32 rows
 * gain nothing by going one at a time, and keep WIDE_SWEEP.
 */
#define WIDE_SWEEP 8
#define WIDE_SWEEP_OF(ES) ((ES) > 2 ? WIDE_SWEEP : 1)
/* The columns [j, j + 64) of rows [r, r + gg), those of m, folded by op
 * into acc (a step of WIDE_FOLD_SWEEP). */
#define WIDE_FOLD_STEP(LOAD, op, m)                                           \
    do {                                                                      \
        __m512 a[4], v[4];                                                    \
        for (int q = 0; q < 4; q++) {                                         \
            a[q] =                                                            \
                tail_load_ps((__mmask16)((m) >> (16 * q)), acc + j + 16 * q); \
        }                                                                     \
        for (uint64_t k = 0; k < gg; k++) {                                   \
            LOAD(x, (r + k) * stride + j, (m), c, v);                         \
            for (int q = 0; q < 4; q++) {                                     \
                switch (op) {                                                 \
                case NRTEMU_OP_MAX:                                           \
                    a[q] = _mm512_mask_mov_ps(                                \
                        a[q],                                                 \
                        _mm512_cmp_ps_mask(a[q], v[q], _CMP_NGE_UQ) &         \
                            _mm512_cmp_ps_mask(a[q], a[q], _CMP_ORD_Q),       \
                        v[q]);                                                \
                    break;                                                    \
                case NRTEMU_OP_MIN:                                           \
                    a[q] = _mm512_mask_mov_ps(                                \
                        a[q],                                                 \
                        _mm512_cmp_ps_mask(a[q], v[q], _CMP_NLE_UQ) &         \
                            _mm512_cmp_ps_mask(a[q], a[q], _CMP_ORD_Q),       \
                        v[q]);                                                \
                    break;                                                    \
                case NRTEMU_OP_PROD:                                          \
                    a[q] = _mm512_mul_ps(a[q], v[q]);                         \
                    break;                                                    \
                case NRTEMU_OP_SUM:                                           \
                case NRTEMU_OP_MEAN:                                          \
                    NRTEMU_OP_CASES_OUTSIDE(REDUCE)                           \
                    a[q] = _mm512_add_ps(a[q], v[q]);                         \
                    break;                                                    \
                }                                                             \
            }                                                                 \
        }                                                                     \
        for (int q = 0; q < 4; q++) {                                         \
            tail_store_ps(acc + j + 16 * q, (__mmask16)((m) >> (16 * q)),     \
                          a[q]);                                              \
        }                                                                     \
    } while (0)

/* NAME##_op is inlined once per op, so that the op, and the mask of the
 * whole steps, are constants in its loops: with both tested in the loop
 * (a switch, and each quarter's mask) a float32 product over axis 0 is
 * much slower than the sum, out of cache. */
#define WIDE_FOLD_SWEEP(NAME, LOAD, ES)                                   \
    WIDE static inline __attribute__((always_inline)) void NAME##_op(     \
        const enum nrtemu_op op, uint64_t n, uint64_t g, uint64_t stride, \
        const void *x, float *acc, const struct wide_tab *c)              \
    {                                                                     \
        const uint64_t sweep = WIDE_SWEEP_OF(ES);                         \
        for (uint64_t r = 0; r < g; r += sweep) {                         \
            uint64_t gg = g - r < sweep ? g - r : sweep;                  \
            uint64_t j = 0;                                               \
            for (uint64_t k = 0; k < gg; k++) {                           \
                if (sweep == 1) {                                         \
                    prefetch_row(x, r + k, g, stride * ES, n * ES);       \
                } else {                                                  \
                    prefetch_ahead(x, r + k, g, stride * ES, n * ES);     \
                }                                                         \
            }                                                             \
            for (; j + 64 <= n; j += 64) {                                \
                WIDE_FOLD_STEP(LOAD, op, ~(__mmask64)0);                  \
            }                                                             \
            if (j < n) {                                                  \
                WIDE_FOLD_STEP(LOAD, op, wide_mask(n - j));               \
            }                                                             \
        }                                                                 \
    }                                                                     \
    WIDE static void NAME(enum nrtemu_op op, uint64_t n, uint64_t g,      \
                          uint64_t stride, const void *x, float *acc,     \
                          const struct wide_ctx *ctx)                     \
    {                                                                     \
        const struct wide_tab tab = wide_tab_of(ctx);                     \
        switch (op) {                                                     \
        case NRTEMU_OP_MAX:                                               \
            NAME##_op(NRTEMU_OP_MAX, n, g, stride, x, acc, &tab);         \
            break;                                                        \
        case NRTEMU_OP_MIN:                                               \
            NAME##_op(NRTEMU_OP_MIN, n, g, stride, x, acc, &tab);         \
            break;                                                        \
        case NRTEMU_OP_PROD:                                              \
            NAME##_op(NRTEMU_OP_PROD, n, g, stride, x, acc, &tab);        \
            break;                                                        \
        case NRTEMU_OP_SUM:                                               \
        case NRTEMU_OP_MEAN:                                              \
            NRTEMU_OP_CASES_OUTSIDE(REDUCE)                               \
            NAME##_op(NRTEMU_OP_SUM, n, g, stride, x, acc, &tab);         \
            break;                                                        \
        }                                                                 \
    }

NRTEMU_RULES_BEGIN
WIDE_FOLD_SWEEP(wide_fold_f32, wide_load_f32, 4)
WIDE_FOLD_SWEEP(wide_fold_bf16, wide_load_bf16, 2)
WIDE_FOLD_SWEEP(wide_fold_f16, wide_load_f16, 2)
WIDE_FOLD_SWEEP(wide_fold_fp8, wide_load_fp8, 1)
NRTEMU_RULES_END

/*
 * Sums and products of fp8 columns, as wide_fold_fp8 folds them, with
 * fewer permutes: no column needs the others, so the 64 columns of a run
 * may sit in any order in the registers, and they sit in the order that
 * two byte unpacks give (bfloat16 words of the columns 16 L + k, k < 8
 * and k >= 8, in the lanes L), the float32 of the even and odd words then
 * made by a shift and a mask: 4 permutes for 64 codes in place of 6.  The
 * accumulators are held in that order (wide_scr) for the whole fold.
 */
static inline uint64_t
wide_scr(uint64_t c)
{
    const uint64_t s = c & ~(uint64_t)63, e = c & 63, l = e / 16, i = e % 16;

    return s + (i >= 8 ? 32 : 0) + (i & 1) * 16 + 4 * l + (i & 7) / 2;
}

#define SCR_CHUNK 2048
/* (the fold of wide_fold_fp8_scr, `sweep` rows at a time (one: each
 * prefetching the run PREFETCH_ROWS rows ahead), and when `mag`
 * is not NULL the greatest magnitude of the codes, shifted left by one,
 * into *mag) */
WIDE static inline __attribute__((always_inline)) void
scr_fold(bool prod, uint64_t n, uint64_t g, uint64_t stride, const uint8_t *x,
         float *acc, const struct wide_ctx *ctx, uint64_t sweep, uint8_t *mag)
{
    const struct wide_tab t = wide_tab_of(ctx);
    const __m512i sign = _mm512_set1_epi8((char)0x80);
    const __m512i high = _mm512_set1_epi32((int)0xffff0000u);
    __m512i mx = _mm512_setzero_si512();
    _Alignas(64) float sa[SCR_CHUNK];

    for (uint64_t b = 0; b < n; b += SCR_CHUNK) {
        const uint64_t w = n - b < SCR_CHUNK ? n - b : SCR_CHUNK;
        for (uint64_t c = 0; c < (w + 63) / 64 * 64; c++) {
            sa[wide_scr(c)] = c < w ? acc[b + c] : 0.0f;
        }
        for (uint64_t r = 0; r < g; r += sweep) {
            const uint64_t gg = g - r < sweep ? g - r : sweep;
            if (sweep == 1) {
                prefetch_row(x + b, r, g, stride, w);
            }
            for (uint64_t j = 0; j < w; j += 64) {
                const __mmask64 m = wide_mask(w - j);
                __m512 a[4], v[4];
                for (int q = 0; q < 4; q++) {
                    a[q] = _mm512_load_ps(sa + j + 16 * q);
                }
                for (uint64_t k = 0; k < gg; k++) {
                    const __m512i codes =
                        tail_load_epi8(m, x + (r + k) * stride + b + j);
                    const __m512i lo =
                        _mm512_permutex2var_epi8(t.lo0, codes, t.lo1);
                    const __m512i hi = _mm512_ternarylogic_epi32(
                        codes, sign,
                        _mm512_permutex2var_epi8(t.hi0, codes, t.hi1), 0xea);
                    const __m512i w0 = _mm512_unpacklo_epi8(lo, hi);
                    const __m512i w1 = _mm512_unpackhi_epi8(lo, hi);
                    if (mag != NULL) {
                        mx =
                            _mm512_max_epu8(mx, _mm512_add_epi8(codes, codes));
                    }
                    v[0] = _mm512_castsi512_ps(_mm512_slli_epi32(w0, 16));
                    v[1] = _mm512_castsi512_ps(_mm512_and_si512(w0, high));
                    v[2] = _mm512_castsi512_ps(_mm512_slli_epi32(w1, 16));
                    v[3] = _mm512_castsi512_ps(_mm512_and_si512(w1, high));
                    for (int q = 0; q < 4; q++) {
                        a[q] = prod ? _mm512_mul_ps(a[q], v[q])
                                    : _mm512_add_ps(a[q], v[q]);
                    }
                }
                for (int q = 0; q < 4; q++) {
                    _mm512_store_ps(sa + j + 16 * q, a[q]);
                }
            }
        }
        for (uint64_t c = 0; c < w; c++) {
            acc[b + c] = sa[wide_scr(c)];
        }
    }
    if (mag != NULL) {
        _Alignas(64) uint8_t lanes[64];
        _mm512_store_si512(lanes, mx);
        for (int i = 0; i < 64; i++) {
            *mag = lanes[i] > *mag ? lanes[i] : *mag;
        }
    }
}

WIDE static void
wide_fold_fp8_scr(bool prod, uint64_t n, uint64_t g, uint64_t stride,
                  const uint8_t *x, float *acc, const struct wide_ctx *ctx)
{
    scr_fold(prod, n, g, stride, x, acc, ctx, WIDE_SWEEP_OF(1), NULL);
}

/*
 * The sum of rows [0, g) of fp8 columns into acc[0..n), as
 * wide_fold_fp8_scr adds them, one row at a time across the columns (in
 * the order of memory: the rows of a task of exact_sum, whole rows, read
 * faster so than 8 at a time, whose streams 2 KiB apart the hardware
 * prefetchers follow poorly), and the greatest magnitude of the codes,
 * shifted left by one, into *mag (at least what it held).
 */
WIDE static void
wide_sum_fp8_rows(uint64_t n, uint64_t g, uint64_t stride, const uint8_t *x,
                  float *acc, const struct wide_ctx *ctx, uint8_t *mag)
{
    scr_fold(false, n, g, stride, x, acc, ctx, 1, mag);
}

/* max/min of int32 columns, as SFX##_columns folds them (any order). */
WIDE static void
wide_fold_i32(bool ismax, uint64_t n, uint64_t g, uint64_t stride,
              const int32_t *x, int32_t *acc)
{
    for (uint64_t r = 0; r < g; r += WIDE_SWEEP) {
        uint64_t gg = g - r < WIDE_SWEEP ? g - r : WIDE_SWEEP;
        for (uint64_t k = 0; k < gg; k++) {
            prefetch_ahead(x, r + k, g, stride * 4, n * 4);
        }
        for (uint64_t j = 0; j < n; j += 64) {
            const __mmask64 m = wide_mask(n - j);
            __m512i a[4];
            for (int q = 0; q < 4; q++) {
                a[q] = tail_load_epi32((__mmask16)(m >> (16 * q)),
                                       acc + j + 16 * q);
            }
            for (uint64_t k = 0; k < gg; k++) {
                const int32_t *row = x + (r + k) * stride + j;
                for (int q = 0; q < 4; q++) {
                    __m512i v = tail_load_epi32((__mmask16)(m >> (16 * q)),
                                                row + 16 * q);
                    a[q] = ismax ? _mm512_max_epi32(a[q], v)
                                 : _mm512_min_epi32(a[q], v);
                }
            }
            for (int q = 0; q < 4; q++) {
                tail_store_epi32(acc + j + 16 * q, (__mmask16)(m >> (16 * q)),
                                 a[q]);
            }
        }
    }
}

/* fp8 codes to float32, 64 at a time (the rows of load_run). */
WIDE static void
wide_widen_fp8(float *d, const uint8_t *s, size_t n,
               const struct wide_ctx *ctx)
{
    const struct wide_tab tab = wide_tab_of(ctx);
    __m512 v[4];

    for (size_t i = 0; i < n; i += 64) {
        const __mmask64 m = wide_mask(n - i);
        wide_load_fp8(s, i, m, &tab, v);
        for (int q = 0; q < 4; q++) {
            tail_store_ps(d + i + 16 * q, (__mmask16)(m >> (16 * q)), v[q]);
        }
    }
}

/*
 * A row of fp8 summed (pairwise, as SFX##_sum_pairwise) or multiplied
 * (ROW_FOLD) with the codes widened in registers: the same float32
 * operations, in the same order and with the same operands first, as
 * f32_row on the row widened into a window by load_run, without the
 * window.  The leaf: ROW_FOLD's LANES (32) accumulators are two vectors,
 * elements [i, i + 32) going to lanes [0, 32) in turn, the tail of fewer
 * than 32 into lane 0 one by one, then the lanes folded by halves.
 */
#define ROW_OP(prod, a, b) ((prod) ? _mm512_mul_ps(a, b) : _mm512_add_ps(a, b))
WIDE static float
wide_row_leaf_fp8(bool prod, uint64_t n, const uint8_t *x,
                  const struct wide_tab *c, struct narrow p)
{
    __m512 a0 = _mm512_set1_ps(prod ? 1.0f : 0.0f), a1 = a0, v[4];
    __m256 h;
    __m128 q, q1;
    float l0;
    uint64_t i = 0;

    for (; i + 64 <= n; i += 64) {
        wide_load_fp8(x, i, ~(__mmask64)0, c, v);
        a0 = ROW_OP(prod, a0, v[0]);
        a1 = ROW_OP(prod, a1, v[1]);
        a0 = ROW_OP(prod, a0, v[2]);
        a1 = ROW_OP(prod, a1, v[3]);
    }
    if (i + 32 <= n) {
        wide_load_fp8(x, i, 0xffffffffu, c, v);
        a0 = ROW_OP(prod, a0, v[0]);
        a1 = ROW_OP(prod, a1, v[1]);
        i += 32;
    }
    l0 = _mm512_cvtss_f32(a0);
    for (; i < n; i++) {
        const float e = narrow_widen(x[i], p);
        l0 = prod ? l0 * e : l0 + e;
    }
    a0 = _mm512_mask_mov_ps(a0, 1, _mm512_set1_ps(l0));
    a0 = ROW_OP(prod, a0, a1); /* lanes l and l + 16 */
    {
        const __m256 lo = _mm512_castps512_ps256(a0);
        const __m256 hi =
            _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a0), 1));
        h = prod ? _mm256_mul_ps(lo, hi) : _mm256_add_ps(lo, hi);
    }
    q = _mm256_castps256_ps128(h);
    q1 = _mm256_extractf128_ps(h, 1);
    q = prod ? _mm_mul_ps(q, q1) : _mm_add_ps(q, q1);
    q1 = _mm_movehl_ps(q, q);
    q = prod ? _mm_mul_ps(q, q1) : _mm_add_ps(q, q1);
    q1 = _mm_shuffle_ps(q, q, 1);
    q = prod ? _mm_mul_ss(q, q1) : _mm_add_ss(q, q1);
    return _mm_cvtss_f32(q);
}

/*
 * The sums of K leaves of n codes each (n a multiple of 64, at most
 * PAIRWISE_LEAF), at x + k * n, into s[k], each as wide_row_leaf_fp8
 * sums it (a whole number of its vector steps: no tail), the K leaves
 * interleaved: one leaf alone is a chain of dependent additions of 8
 * steps and a fold of the lanes, whose latency bounded the row sums.
 */
WIDE static inline __attribute__((always_inline)) void
wide_row_leaves_fp8(int K, uint64_t n, const uint8_t *x,
                    const struct wide_tab *c, float *s)
{
    __m512 a0[4], a1[4], v[4][4];

    for (int k = 0; k < K; k++) {
        a0[k] = a1[k] = _mm512_setzero_ps();
    }
    /* Each step prefetches K lines of the K leaves that follow (the next
     * row's, in a sum of rows), in the order of memory: the K streams of
     * the loads, n bytes apart, read out of memory slower than one, and
     * much slower without a prefetch; prefetches spread over the steps
     * beat the next row's lines all at once, and one leaf at a time.  (A
     * prefetch past the input's end faults nowhere.) */
    for (uint64_t i = 0; i < n; i += 64) {
        for (int k = 0; k < K; k++) {
            __builtin_prefetch(x + K * n + K * i + 64 * k);
        }
        for (int k = 0; k < K; k++) {
            wide_load_fp8(x + k * n, i, ~(__mmask64)0, c, v[k]);
        }
        for (int k = 0; k < K; k++) {
            a0[k] = _mm512_add_ps(a0[k], v[k][0]);
            a1[k] = _mm512_add_ps(a1[k], v[k][1]);
        }
        for (int k = 0; k < K; k++) {
            a0[k] = _mm512_add_ps(a0[k], v[k][2]);
            a1[k] = _mm512_add_ps(a1[k], v[k][3]);
        }
    }
    for (int k = 0; k < K; k++) {
        /* wide_row_leaf_fp8's fold of the lanes, by halves */
        const __m512 a = _mm512_add_ps(a0[k], a1[k]);
        const __m256 h = _mm256_add_ps(
            _mm512_castps512_ps256(a),
            _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
        __m128 q =
            _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
        q = _mm_add_ps(q, _mm_movehl_ps(q, q));
        q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
        s[k] = _mm_cvtss_f32(q);
    }
}

WIDE static float
wide_row_sum_fp8(uint64_t n, const uint8_t *x, const struct wide_tab *c,
                 struct narrow p)
{
    uint64_t half, quarter;
    float s[4];

    if (n <= PAIRWISE_LEAF) {
        return wide_row_leaf_fp8(false, n, x, c, p);
    }
    half = (n / 2 + LANES - 1) / LANES * LANES;
    quarter = (half / 2 + LANES - 1) / LANES * LANES;
    /* halves, or quarters, that are whole leaves of whole vector steps:
     * interleaved, the same additions */
    if (2 * half == n && half <= PAIRWISE_LEAF && half % 64 == 0) {
        wide_row_leaves_fp8(2, half, x, c, s);
        return s[0] + s[1];
    }
    if (2 * half == n && 2 * quarter == half && half > PAIRWISE_LEAF &&
        quarter <= PAIRWISE_LEAF && quarter % 64 == 0) {
        wide_row_leaves_fp8(4, quarter, x, c, s);
        return (s[0] + s[1]) + (s[2] + s[3]);
    }
    return wide_row_sum_fp8(half, x, c, p) +
           wide_row_sum_fp8(n - half, x + half, c, p);
}

/* The sum or product of a row of n fp8 codes, as f32_row gives it. */
WIDE static float
wide_row_fp8(bool prod, uint64_t n, const uint8_t *x,
             const struct wide_ctx *ctx, struct narrow p)
{
    const struct wide_tab tab = wide_tab_of(ctx);

    return prod ? wide_row_leaf_fp8(true, n, x, &tab, p)
                : wide_row_sum_fp8(n, x, &tab, p);
}

/*
 * Columns [0, n) (n <= BYTES_CHUNK) of g rows `stride` codes apart: each
 * column's extreme code into code[0..n), and the lanes it does not settle
 * into unsure[] (one mask per 64 columns).  BYTES_ROWS rows at a time go
 * across all the columns, their accumulators in st (in L1) between: the
 * input is read in the order of memory, which the hardware prefetchers
 * follow (runs of 256 columns down all the rows at a time, with an input
 * out of L2, are several times slower).
 */
#define BYTES_ROWS 16
WIDE static void
bytes_columns_ext(bool ismax, uint64_t n, uint64_t g, uint64_t stride,
                  const uint8_t *x, uint8_t nan_above, uint8_t *code,
                  uint64_t *unsure)
{
    _Alignas(64) uint8_t st[3][BYTES_CHUNK];

    memset(st[0], 0x80, n);
    memset(st[1], 0xff, n);
    memset(st[2], 0, n);
    for (uint64_t r = 0; r < g; r += BYTES_ROWS) {
        const uint64_t rr = g - r < BYTES_ROWS ? g - r : BYTES_ROWS;
        for (uint64_t j = 0; j < n; j += 64) {
            const __mmask64 m = wide_mask(n - j);
            const uint8_t *col = x + r * stride + j;
            struct bytes_ext e = {
                .smax = _mm512_load_si512(st[0] + j),
                .umin = _mm512_load_si512(st[1] + j),
                .umax = _mm512_load_si512(st[2] + j),
            };
            for (uint64_t k = 0; k < rr; k++) {
                bytes_ext_add(&e, m, tail_load_epi8(m, col + k * stride));
            }
            _mm512_store_si512(st[0] + j, e.smax);
            _mm512_store_si512(st[1] + j, e.umin);
            _mm512_store_si512(st[2] + j, e.umax);
        }
    }
    for (uint64_t j = 0; j < n; j += 64) {
        const __mmask64 m = wide_mask(n - j);
        const struct bytes_ext e = {
            .smax = _mm512_load_si512(st[0] + j),
            .umin = _mm512_load_si512(st[1] + j),
            .umax = _mm512_load_si512(st[2] + j),
        };
        const __m512i c = bytes_ext_code(ismax, &e);
        tail_store_epi8(code + j, m, c);
        unsure[j / 64] = bytes_ext_unsure(&e, c, nan_above) & m;
    }
}

/* Columns of fp8 (their max or min) into acc[0..n) as wide_fold_fp8 folds
 * them, by bytes_columns_ext: the runs of 64 columns that it does not
 * settle go to wide_fold_fp8. */
WIDE static void
bytes_fold_fp8(bool ismax, uint64_t n, uint64_t g, uint64_t stride,
               const uint8_t *x, float *acc, const struct wide_ctx *ctx,
               uint8_t nan_above)
{
    const enum nrtemu_op op = ismax ? NRTEMU_OP_MAX : NRTEMU_OP_MIN;
    const struct wide_tab tab = wide_tab_of(ctx);
    uint8_t code[BYTES_CHUNK];
    uint64_t unsure[BYTES_CHUNK / 64];
    __m512 v[4];

    if (g == 0) {
        return;
    }
    for (uint64_t b = 0; b < n; b += BYTES_CHUNK) {
        const uint64_t w = n - b < BYTES_CHUNK ? n - b : BYTES_CHUNK;
        bytes_columns_ext(ismax, w, g, stride, x + b, nan_above, code, unsure);
        for (uint64_t j = 0; j < w; j += 64) {
            const __mmask64 m = wide_mask(w - j);
            float *a = acc + b + j;
            if (unsure[j / 64] != 0) {
                wide_fold_fp8(op, w - j < 64 ? w - j : 64, g, stride,
                              x + b + j, a, ctx);
                continue;
            }
            wide_load_fp8(code, j, m, &tab, v);
            for (int q = 0; q < 4; q++) {
                const __mmask16 mq = (__mmask16)(m >> (16 * q));
                const __m512 aq = tail_load_ps(mq, a + 16 * q);
                /* NRTEMU_FLOAT_MAX (NRTEMU_FLOAT_MIN): acc stays when >= (<=)
                 * or NaN */
                const __mmask16 take =
                    (ismax ? _mm512_cmp_ps_mask(aq, v[q], _CMP_NGE_UQ)
                           : _mm512_cmp_ps_mask(aq, v[q], _CMP_NLE_UQ)) &
                    _mm512_cmp_ps_mask(aq, aq, _CMP_ORD_Q);
                _mm512_mask_storeu_ps(a + 16 * q, (__mmask16)(take & mq),
                                      v[q]);
            }
        }
    }
}

/* The extreme code of a row of n fp8 codes, in *code; false when the codes
 * do not settle it (bytes_ext_unsure). */
WIDE static bool
bytes_row_ext(bool ismax, uint64_t n, const uint8_t *x, uint8_t nan_above,
              uint8_t *code)
{
    struct bytes_ext e[2];
    uint64_t i = 0;

    bytes_ext_init(&e[0]);
    bytes_ext_init(&e[1]);
    for (; i + 128 <= n; i += 128) {
        bytes_ext_add(&e[0], ~(__mmask64)0, _mm512_loadu_si512(x + i));
        bytes_ext_add(&e[1], ~(__mmask64)0, _mm512_loadu_si512(x + i + 64));
    }
    for (; i < n; i += 64) {
        const __mmask64 m = wide_mask(n - i);
        bytes_ext_add(&e[0], m, tail_load_epi8(m, x + i));
    }
    e[0].smax = _mm512_max_epi8(e[0].smax, e[1].smax);
    e[0].umin = _mm512_min_epu8(e[0].umin, e[1].umin);
    e[0].umax = _mm512_max_epu8(e[0].umax, e[1].umax);
    bytes_ext_lanes(&e[0]);
    {
        const __m512i c = bytes_ext_code(ismax, &e[0]);
        if ((bytes_ext_unsure(&e[0], c, nan_above) & 1) != 0) {
            return false;
        }
        *code = (uint8_t)_mm_cvtsi128_si32(_mm512_castsi512_si128(c));
    }
    return true;
}

/* Fold g rows of n elements of src, `stride` apart, into acc[0..n) of kt
 * by the WIDE sweeps (fold_columns_from's contract); false where they do not
 * apply (no AVX-512 VBMI, or another pair of types). */
bool
nrtemu__reduce_x86_fold(enum nrtemu_op op, enum nrtemu_dtype kt,
                        enum nrtemu_dtype src, size_t n, size_t g,
                        size_t stride, const void *x, void *acc)
{
    const struct wide_ctx *c;

    if (!cpu_has_wide()) {
        return false;
    }
    if (kt == NRTEMU_DTYPE_INT32 && src == NRTEMU_DTYPE_INT32 &&
        (op == NRTEMU_OP_MAX || op == NRTEMU_OP_MIN)) {
        wide_fold_i32(op == NRTEMU_OP_MAX, n, g, stride, x, acc);
        return true;
    }
    if (kt != NRTEMU_DTYPE_FLOAT32) {
        return false;
    }
    switch (src) {
    case NRTEMU_DTYPE_FLOAT32:
        wide_fold_f32(op, n, g, stride, x, acc, NULL);
        return true;
    case NRTEMU_DTYPE_BFLOAT16:
        wide_fold_bf16(op, n, g, stride, x, acc, NULL);
        return true;
    case NRTEMU_DTYPE_FLOAT16:
        wide_fold_f16(op, n, g, stride, x, acc, NULL);
        return true;
    default:
        c = nrtemu__reduce_x86_ctx(src);
        if (c != NULL && (op == NRTEMU_OP_MAX || op == NRTEMU_OP_MIN)) {
            bytes_fold_fp8(op == NRTEMU_OP_MAX, n, g, stride, x, acc, c,
                           fp8_nan_above(src));
            return true;
        }
        if (c != NULL) {
            if (op == NRTEMU_OP_SUM || op == NRTEMU_OP_PROD) {
                wide_fold_fp8_scr(op == NRTEMU_OP_PROD, n, g, stride, x, acc,
                                  c);
            } else {
                wide_fold_fp8(op, n, g, stride, x, acc, c);
            }
            return true;
        }
        return false;
    }
}

size_t
nrtemu__reduce_x86_widen_fp8(float *d, const uint8_t *s, size_t n,
                             enum nrtemu_dtype dt)
{
    const struct wide_ctx *c = nrtemu__reduce_x86_ctx(dt);

    if (c != NULL && cpu_has_wide()) {
        wide_widen_fp8(d, s, n, c);
        return n;
    }
    if (cpu_has_f16c()) {
        return widen_fp8_f16c(d, s, n, narrow_fp8(dt));
    }
    return 0;
}

/* Whether nrtemu__reduce_x86_rows_fold serves op (SUM for a mean) from src to
 * kt with compute: fp8 widened exactly (compute kt or src), AVX-512 VBMI. */
bool
nrtemu__reduce_x86_rows_init(struct fp8_rows *f, enum nrtemu_op op,
                             enum nrtemu_dtype kt, enum nrtemu_dtype compute,
                             enum nrtemu_dtype src)
{
    if (!is_fp8(src) || kt != NRTEMU_DTYPE_FLOAT32 ||
        (compute != kt && compute != src) || !cpu_has_wide()) {
        return false;
    }
    f->op = op;
    f->ctx = nrtemu__reduce_x86_ctx(src);
    f->p = narrow_fp8(src);
    f->nan_above = fp8_nan_above(src);
    return f->ctx != NULL;
}

/*
 * A row of n fp8 codes folded into *acc (float32) as fold_row after
 * load_run folds it: sums and products by wide_row_fp8, max/min by the
 * codes (bytes_row_ext); false when that leaves the result open (a NaN
 * in a sum or product: which of two NaNs comes first in an operation
 * decides the sign of the result, and f32_row's compiled order is its
 * own; and what bytes_row_ext does not settle), for fold_row to do.
 */
NRTEMU_RULES_BEGIN
bool
nrtemu__reduce_x86_rows_fold(const struct fp8_rows *f, size_t n, const void *x,
                             float *acc)
{
    uint8_t code;
    float r;

    switch (f->op) {
    case NRTEMU_OP_SUM:
    case NRTEMU_OP_PROD:
        r = wide_row_fp8(f->op == NRTEMU_OP_PROD, n, x, f->ctx, f->p);
        if (r != r) {
            return false;
        }
        /* f32_column's step: acc first */
        *acc = f->op == NRTEMU_OP_PROD ? *acc * r : *acc + r;
        return true;
    case NRTEMU_OP_MAX:
    case NRTEMU_OP_MIN:
        if (!bytes_row_ext(f->op == NRTEMU_OP_MAX, n, x, f->nan_above,
                           &code)) {
            return false;
        }
        r = narrow_widen(code, f->p);
        *acc = f->op == NRTEMU_OP_MAX ? NRTEMU_FLOAT_MAX(*acc, r)
                                      : NRTEMU_FLOAT_MIN(*acc, r);
        return true;
    case NRTEMU_OP_MEAN: /* (its fold is SUM) */
        NRTEMU_OP_CASES_OUTSIDE(REDUCE)
        break;
    }
    return false;
}
NRTEMU_RULES_END

/* Whether exact_sum (kernel_reduce.c) may split sums of fp8 columns of src
 * into kt by rows: only with the tables and AVX-512 VBMI. */
bool
nrtemu__reduce_x86_exact_sum_ready(enum nrtemu_dtype kt, enum nrtemu_dtype src)
{
    return kt == NRTEMU_DTYPE_FLOAT32 && is_fp8(src) && cpu_has_wide() &&
           nrtemu__reduce_x86_ctx(src) != NULL;
}

/* Rows [0, g) of n fp8 columns added into acc as exact_sum needs them (only
 * where nrtemu__reduce_x86_exact_sum_ready), the greatest magnitude << 1 into
 * *mag. */
void
nrtemu__reduce_x86_exact_sum_rows(enum nrtemu_dtype src, uint64_t n,
                                  uint64_t g, uint64_t stride, const void *x,
                                  float *acc, uint8_t *mag)
{
    wide_sum_fp8_rows(n, g, stride, x, acc, nrtemu__reduce_x86_ctx(src), mag);
}
#endif
