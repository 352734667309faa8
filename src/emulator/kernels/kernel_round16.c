/*
 * kernel_round16.c - floor, ceil, round_even and round_away of float16 and
 * bfloat16, on the bits.
 *
 * Rounding a 2-byte float to an integer needs no arithmetic: with the
 * sign apart, a magnitude of M mantissa bits and exponent bias B is an
 * integer from 2^M on (or infinity or NaN), below 1 it rounds to 0 or 1,
 * and in between its f = B + M - e lowest bits are the fraction: clearing
 * them truncates, and adding 2^f to the truncated magnitude moves it one
 * integer away from zero (a carry into the exponent is the next binade,
 * exactly).  Whether to move is the op's: floor of a negative inexact
 * value, ceil of a positive one, round_even past half or at half with an
 * odd integer, round_away at half or past.  NaN comes back as the float32
 * round trip of the kernel makes it.  So every result is exact by
 * construction, the kernel's bit for bit (floorf, ceilf, rintf in the
 * default rounding mode, f32_round_away; test_kernel_round16.c checks
 * every code against the float32 kernel), and the loop is integer selects
 * that GCC vectorises for each clone (32-bit lanes): it runs at copy
 * speed, where a table lookup per element (kernel_table16.c) is slower on
 * float16 with signs (a working set of table lines past L1), and the
 * float32 round trip slower still.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/kernel.h"
#include "kernels/kernel_stream.h"
#include "kernels/kernel_table.h"
#include "kernels/simd.h"
#include "kernels/simd_tail.h"

/* The four ops, as the loop's selector. */
enum round16_mode { R16_FLOOR, R16_CEIL, R16_EVEN, R16_AWAY };

/*
 * One code x of a format with `mbits` mantissa bits and bias `bias`
 * rounded as `mode` says (constant in each loop, so the compiler drops
 * the other modes' selects).
 */
NRTEMU_INLINE uint32_t
round16_code(uint32_t x, uint32_t mbits, uint32_t bias, enum round16_mode mode)
{
    uint32_t s = x & 0x8000u;
    uint32_t m = x & 0x7fffu;
    /* the exponent all ones: infinities, NaN above */
    uint32_t inf_code = (0x7fffu >> mbits) << mbits;
    uint32_t one_code = bias << mbits;           /* 1.0 */
    uint32_t half_code = (bias - 1u) << mbits;   /* 0.5 */
    uint32_t int_code = (bias + mbits) << mbits; /* 2^M: integers on */
    int32_t fr = (int32_t)(bias + mbits) - (int32_t)(m >> mbits);
    /* 1...M in the middle range; clamped elsewhere (selected away) */
    int32_t fc = fr < 1 ? 1 : fr;
    fc = fc > (int32_t)mbits ? (int32_t)mbits : fc;
    uint32_t unit = 1u << fc;
    uint32_t mask = unit - 1u;
    uint32_t frac = m & mask;
    uint32_t half = unit >> 1;
    /* (bitwise, not logical, operators throughout: GCC vectorises no
     * loop with the branches of && and ||) */
    uint32_t small = m < one_code;
    uint32_t t = small ? 0u : m & ~mask;
    uint32_t step = small ? one_code : unit;
    uint32_t inexact = small ? m != 0u : frac != 0u;
    uint32_t up;

    if (mode == R16_FLOOR) {
        up = (s != 0u) & inexact;
    } else if (mode == R16_CEIL) {
        up = (s == 0u) & inexact;
    } else if (mode == R16_EVEN) {
        /* past half, or at half with the integer part odd */
        uint32_t odd = (m >> fc) & 1u;
        up = small ? m > half_code : (frac > half) | ((frac == half) & odd);
    } else {
        up = small ? m >= half_code : frac >= half;
    }
    uint32_t r = s | (t + (step & (0u - up)));
    /* NaN as the float32 round trip leaves it: float16 keeps its payload
     * and sets the quiet bit, bfloat16 is the canonical quiet NaN
     * (convert.c); infinities and integers as they are */
    uint32_t quiet = 1u << (mbits - 1u);
    uint32_t nan = mbits == 10u ? x | quiet : s | inf_code | quiet;
    uint32_t big = m > inf_code ? nan : x;
    return m >= int_code ? big : r;
}

#if NRTEMU_X86_CLONES
#include <immintrin.h>

#define R16_WIDE __attribute__((target("avx512f,avx512bw")))

/* Whether the CPU runs round16_wide(). */
static bool
cpu_has_avx512bw(void)
{
    return nrtemu__cpu_has(NRTEMU_CPU_V4);
}

/*
 * round16_code() on 32 codes at a time in 16-bit lanes (AVX-512BW has the
 * variable 16-bit shift and the compares into masks), where the compiler
 * widens the scalar form to 32-bit lanes and packs back: about 20
 * instructions for 32 codes instead of 75, and so below the memory's
 * time again (the compiler's loop is bound by its instructions).
 */
R16_WIDE static inline __attribute__((always_inline)) __m512i
round16_wide32(__m512i x, uint32_t mbits, uint32_t bias,
               enum round16_mode mode)
{
    const __m512i one = _mm512_set1_epi16(1);
    const uint16_t one_code = (uint16_t)(bias << mbits);
    const uint16_t half_code = (uint16_t)((bias - 1u) << mbits);
    const uint16_t int_code = (uint16_t)((bias + mbits) << mbits);
    const uint16_t inf_code = (uint16_t)((0x7fffu >> mbits) << mbits);
    const uint16_t quiet = (uint16_t)(1u << (mbits - 1u));
    __m512i m = _mm512_and_si512(x, _mm512_set1_epi16(0x7fff));
    __m512i s = _mm512_xor_si512(x, m);
    __m512i fr = _mm512_sub_epi16(_mm512_set1_epi16((short)(bias + mbits)),
                                  _mm512_srli_epi16(m, mbits));
    __m512i fc = _mm512_min_epi16(_mm512_max_epi16(fr, one),
                                  _mm512_set1_epi16((short)mbits));
    __m512i unit = _mm512_sllv_epi16(one, fc);
    __m512i mask = _mm512_sub_epi16(unit, one);
    __m512i frac = _mm512_and_si512(m, mask);
    __mmask32 small = _mm512_cmplt_epu16_mask(m, _mm512_set1_epi16(one_code));
    /* truncated: 0 when small */
    __m512i t = _mm512_maskz_andnot_epi32(0xffff, mask, m);
    __m512i step;
    __mmask32 up;

    t = _mm512_mask_mov_epi16(t, small, _mm512_setzero_si512());
    step = _mm512_mask_mov_epi16(unit, small, _mm512_set1_epi16(one_code));
    if (mode == R16_FLOOR || mode == R16_CEIL) {
        __mmask32 inexact = (small & _mm512_test_epi16_mask(m, m)) |
                            (~small & _mm512_test_epi16_mask(frac, frac));
        __mmask32 neg = _mm512_movepi16_mask(x);
        up = mode == R16_FLOOR ? inexact & neg : inexact & ~neg;
    } else {
        __m512i half = _mm512_srli_epi16(unit, 1);
        __m512i hc = _mm512_set1_epi16(half_code);
        __mmask32 mid_up, small_up;
        if (mode == R16_EVEN) {
            mid_up = _mm512_cmpgt_epu16_mask(frac, half) |
                     (_mm512_cmpeq_epi16_mask(frac, half) &
                      _mm512_test_epi16_mask(m, unit));
            small_up = _mm512_cmpgt_epu16_mask(m, hc);
        } else {
            mid_up = _mm512_cmpge_epu16_mask(frac, half);
            small_up = _mm512_cmpge_epu16_mask(m, hc);
        }
        up = (small & small_up) | (~small & mid_up);
    }
    __m512i r = _mm512_or_si512(s, _mm512_mask_add_epi16(t, up, t, step));
    __m512i nan =
        mbits == 10u
            ? _mm512_or_si512(x, _mm512_set1_epi16((short)quiet))
            : _mm512_or_si512(s, _mm512_set1_epi16((short)(inf_code | quiet)));
    r = _mm512_mask_mov_epi16(
        r, _mm512_cmpge_epu16_mask(m, _mm512_set1_epi16((short)int_code)), x);
    return _mm512_mask_mov_epi16(
        r, _mm512_cmpgt_epu16_mask(m, _mm512_set1_epi16((short)inf_code)),
        nan);
}

/*
 * round16_wide32() for CPUs with AVX2 only, on 16 codes at a time: the
 * same steps in 16-bit lanes, with byte blends for the masks and the
 * unit 2^fc (fc from 1 to 10; AVX2 has no variable 16-bit shift) looked
 * up by vpshufb, its low and high byte from two tables.  The signed
 * compares are the unsigned ones of round16_wide32(): every operand is
 * below 2^15.  (The float32 round trip through vroundps would be fewer
 * instructions, but denormals-are-zero would flush bfloat16's
 * subnormals on the way.)
 */
__attribute__((target("avx2"))) static inline __attribute__((always_inline))
__m256i
round16_avx2_16(__m256i x, uint32_t mbits, uint32_t bias,
                enum round16_mode mode)
{
    const __m256i one = _mm256_set1_epi16(1);
    const __m256i ones = _mm256_set1_epi16(-1);
    const __m256i unit_lo = _mm256_setr_epi8(
        0, 2, 4, 8, 16, 32, 64, (char)128, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 4, 8,
        16, 32, 64, (char)128, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m256i unit_hi =
        _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 4, 0, 0, 0, 0, 0, 0, 0,
                         0, 0, 0, 0, 0, 0, 1, 2, 4, 0, 0, 0, 0, 0);
    const short one_code = (short)(bias << mbits);
    const short half_code = (short)((bias - 1u) << mbits);
    const short int_code = (short)((bias + mbits) << mbits);
    const short inf_code = (short)((0x7fffu >> mbits) << mbits);
    const short quiet = (short)(1u << (mbits - 1u));
    __m256i m = _mm256_and_si256(x, _mm256_set1_epi16(0x7fff));
    __m256i s = _mm256_xor_si256(x, m);
    __m256i fr = _mm256_sub_epi16(_mm256_set1_epi16((short)(bias + mbits)),
                                  _mm256_srli_epi16(m, (int)mbits));
    __m256i fc = _mm256_min_epi16(_mm256_max_epi16(fr, one),
                                  _mm256_set1_epi16((short)mbits));
    __m256i unit = _mm256_or_si256(
        _mm256_shuffle_epi8(unit_lo, fc),
        _mm256_slli_epi16(_mm256_shuffle_epi8(unit_hi, fc), 8));
    __m256i mask = _mm256_sub_epi16(unit, one);
    __m256i frac = _mm256_and_si256(m, mask);
    __m256i small = _mm256_cmpgt_epi16(_mm256_set1_epi16(one_code), m);
    /* truncated: 0 when small */
    __m256i t = _mm256_andnot_si256(small, _mm256_andnot_si256(mask, m));
    __m256i step =
        _mm256_blendv_epi8(unit, _mm256_set1_epi16(one_code), small);
    __m256i up;

    if (mode == R16_FLOOR || mode == R16_CEIL) {
        __m256i exact = _mm256_cmpeq_epi16(_mm256_blendv_epi8(frac, m, small),
                                           _mm256_setzero_si256());
        __m256i neg = _mm256_srai_epi16(x, 15);
        up = mode == R16_FLOOR
                 ? _mm256_andnot_si256(exact, neg)
                 : _mm256_andnot_si256(_mm256_or_si256(exact, neg), ones);
    } else {
        __m256i half = _mm256_srli_epi16(unit, 1);
        __m256i hc = _mm256_set1_epi16(half_code);
        __m256i mid_up, small_up;
        if (mode == R16_EVEN) {
            __m256i even = _mm256_cmpeq_epi16(_mm256_and_si256(m, unit),
                                              _mm256_setzero_si256());
            mid_up = _mm256_or_si256(
                _mm256_cmpgt_epi16(frac, half),
                _mm256_andnot_si256(even, _mm256_cmpeq_epi16(frac, half)));
            small_up = _mm256_cmpgt_epi16(m, hc);
        } else {
            mid_up = _mm256_andnot_si256(_mm256_cmpgt_epi16(half, frac), ones);
            small_up = _mm256_andnot_si256(_mm256_cmpgt_epi16(hc, m), ones);
        }
        up = _mm256_blendv_epi8(mid_up, small_up, small);
    }
    __m256i r =
        _mm256_or_si256(s, _mm256_add_epi16(t, _mm256_and_si256(step, up)));
    __m256i nan =
        mbits == 10u
            ? _mm256_or_si256(x, _mm256_set1_epi16(quiet))
            : _mm256_or_si256(s, _mm256_set1_epi16((short)(inf_code | quiet)));
    r = _mm256_blendv_epi8(
        r, x, _mm256_cmpgt_epi16(m, _mm256_set1_epi16((short)(int_code - 1))));
    return _mm256_blendv_epi8(
        r, nan, _mm256_cmpgt_epi16(m, _mm256_set1_epi16(inf_code)));
}

/* Whether the CPU runs round16_avx2_16(). */
static bool
cpu_has_avx2(void)
{
    return nrtemu__cpu_has(NRTEMU_CPU_V3);
}

#define DEFINE_ROUND16_AVX2(NAME, MBITS, BIAS, MODE)                    \
    __attribute__((target("avx2"))) static void NAME##_avx2(            \
        const uint16_t *a, uint16_t *o, size_t n)                       \
    {                                                                   \
        size_t i = 0;                                                   \
        for (; i + 16 <= n; i += 16) {                                  \
            __m256i x = _mm256_loadu_si256((const void *)(a + i));      \
            _mm256_storeu_si256((void *)(o + i),                        \
                                round16_avx2_16(x, MBITS, BIAS, MODE)); \
        }                                                               \
        for (; i < n; i++) {                                            \
            o[i] = (uint16_t)round16_code(a[i], MBITS, BIAS, MODE);     \
        }                                                               \
    }

#define DEFINE_ROUND16_WIDE(NAME, MBITS, BIAS, MODE)                          \
    DEFINE_ROUND16_AVX2(NAME, MBITS, BIAS, MODE)                              \
    R16_WIDE static void NAME##_wide(const uint16_t *a, uint16_t *o,          \
                                     size_t n)                                \
    {                                                                         \
        size_t i = 0;                                                         \
        for (; i + 32 <= n; i += 32) {                                        \
            __m512i x = _mm512_loadu_si512(a + i);                            \
            _mm512_storeu_si512(o + i, round16_wide32(x, MBITS, BIAS, MODE)); \
        }                                                                     \
        if (i < n) {                                                          \
            __mmask32 k = (__mmask32)((1ull << (n - i)) - 1u);                \
            __m512i x = tail_load_epi16(k, a + i);                            \
            tail_store_epi16(o + i, k, round16_wide32(x, MBITS, BIAS, MODE)); \
        }                                                                     \
    }
#define ROUND16_WIDE_OR_NULL(NAME) NAME##_wide
#define ROUND16_AVX2_OR_NULL(NAME) NAME##_avx2
#else
#define DEFINE_ROUND16_WIDE(NAME, MBITS, BIAS, MODE)
#define ROUND16_WIDE_OR_NULL(NAME) NULL
#define ROUND16_AVX2_OR_NULL(NAME) NULL
#endif

/* Three loops per format and mode, n codes of a into o (o may be a): the
 * plain one, which GCC vectorises for each clone, the AVX-512BW one and
 * the AVX2 one. */
#define DEFINE_ROUND16(NAME, MBITS, BIAS, MODE)                     \
    NRTEMU_MULTIVERSION                                             \
    static void NAME(const uint16_t *a, uint16_t *o, size_t n)      \
    {                                                               \
        for (size_t i = 0; i < n; i++) {                            \
            o[i] = (uint16_t)round16_code(a[i], MBITS, BIAS, MODE); \
        }                                                           \
    }                                                               \
    DEFINE_ROUND16_WIDE(NAME, MBITS, BIAS, MODE)

DEFINE_ROUND16(f16_floor, 10u, 15u, R16_FLOOR)
DEFINE_ROUND16(f16_ceil, 10u, 15u, R16_CEIL)
DEFINE_ROUND16(f16_even, 10u, 15u, R16_EVEN)
DEFINE_ROUND16(f16_away, 10u, 15u, R16_AWAY)
DEFINE_ROUND16(bf16_floor, 7u, 127u, R16_FLOOR)
DEFINE_ROUND16(bf16_ceil, 7u, 127u, R16_CEIL)
DEFINE_ROUND16(bf16_even, 7u, 127u, R16_EVEN)
DEFINE_ROUND16(bf16_away, 7u, 127u, R16_AWAY)

typedef void round16_loop(const uint16_t *a, uint16_t *o, size_t n);

/* The loops of each op (a row) on float16 and bfloat16 (the columns):
 * plain, AVX-512BW and AVX2 (NULL without the clones). */
static const struct {
    enum nrtemu_op op;
    round16_loop *plain[2], *wide[2], *avx2[2];
} round16_loops[] = {
    {NRTEMU_OP_FLOOR,
     {f16_floor, bf16_floor},
     {ROUND16_WIDE_OR_NULL(f16_floor), ROUND16_WIDE_OR_NULL(bf16_floor)},
     {ROUND16_AVX2_OR_NULL(f16_floor), ROUND16_AVX2_OR_NULL(bf16_floor)}},
    {NRTEMU_OP_CEIL,
     {f16_ceil, bf16_ceil},
     {ROUND16_WIDE_OR_NULL(f16_ceil), ROUND16_WIDE_OR_NULL(bf16_ceil)},
     {ROUND16_AVX2_OR_NULL(f16_ceil), ROUND16_AVX2_OR_NULL(bf16_ceil)}},
    {NRTEMU_OP_ROUND_EVEN,
     {f16_even, bf16_even},
     {ROUND16_WIDE_OR_NULL(f16_even), ROUND16_WIDE_OR_NULL(bf16_even)},
     {ROUND16_AVX2_OR_NULL(f16_even), ROUND16_AVX2_OR_NULL(bf16_even)}},
    {NRTEMU_OP_ROUND_AWAY,
     {f16_away, bf16_away},
     {ROUND16_WIDE_OR_NULL(f16_away), ROUND16_WIDE_OR_NULL(bf16_away)},
     {ROUND16_AVX2_OR_NULL(f16_away), ROUND16_AVX2_OR_NULL(bf16_away)}},
};

/* kstream_map16's call of a loop; ctx: a pointer to the loop's pointer. */
static void
round16_call(const void *ctx, const uint16_t *a, uint16_t *o, size_t n)
{
    (*(round16_loop *const *)ctx)(a, o, n);
}

/* The loop of `op` on `dt`; NULL for the others. */
static round16_loop *
round16_pick(enum nrtemu_op op, enum nrtemu_dtype dt)
{
    size_t col = dt == NRTEMU_DTYPE_FLOAT16 ? 0 : 1;

    if (dt != NRTEMU_DTYPE_FLOAT16 && dt != NRTEMU_DTYPE_BFLOAT16) {
        return NULL;
    }
    for (size_t i = 0; i < sizeof round16_loops / sizeof round16_loops[0];
         i++) {
        if (round16_loops[i].op == op) {
#if NRTEMU_X86_CLONES
            if (cpu_has_avx512bw()) {
                return round16_loops[i].wide[col];
            }
            if (cpu_has_avx2()) {
                return round16_loops[i].avx2[col];
            }
#endif
            return round16_loops[i].plain[col];
        }
    }
    return NULL;
}

bool
nrtemu__kernel_round16_run(enum nrtemu_op op, enum nrtemu_dtype compute,
                           const struct nrtemu_array *out,
                           const struct nrtemu_array *in, int n_in,
                           bool stream)
{
    round16_loop *loop = round16_pick(op, compute);
    const uint16_t *a;
    uint16_t *o;
    size_t n;

    if (loop == NULL || n_in != 1 || in->dtype != compute ||
        out->dtype != compute || in->ndim != out->ndim ||
        memcmp(in->shape, out->shape, in->ndim * sizeof *in->shape) != 0) {
        return false;
    }
    a = in->data;
    o = out->data;
    n = (size_t)nrtemu__array_count(out);
    kstream_map16(round16_call, &loop, a, o, n, stream);
    return true;
}
