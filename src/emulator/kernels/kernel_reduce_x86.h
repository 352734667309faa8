/*
 * kernel_reduce_x86.h - the vocabulary of the reductions' AVX-512 paths
 * (internal to kernel_reduce_x86.c and kernel_argreduce_x86.c): the
 * target, the fp8 tables, loads that widen 64 narrow floats at a time in
 * registers, and the extremes of fp8 codes as bytes.
 *
 * AVX-512 (with VBMI) paths of the column folds and argmax/argmin, and of
 * fp8 widening, for CPUs that have it (checked once, cpu_has_wide): the
 * portable loops are what GCC makes of plain C, and these read the
 * narrow types 64 at a time and widen them in registers with fewer
 * instructions: float16 with F16C's vcvtph2ps (nrtemu__convert's
 * widening, NaN included), bfloat16 by a shift, and fp8 through a table:
 * every fp8 value is a bfloat16 (at most 4 mantissa bits, an exponent
 * within float32's), so vpermi2b looks up the high byte (sign added back)
 * and the low byte of that bfloat16 for 64 codes at a time, from tables
 * of narrow_widen's results over the 128 magnitudes; a two-source byte
 * permute (vpermt2b, zeroing the two low bytes) per 16 results puts them
 * together as float32: 6 permutes for 64 codes, measured faster than the
 * 9 of a vpermb and six unpacks.
 */
#ifndef NRTEMU_KERNEL_REDUCE_X86_H
#define NRTEMU_KERNEL_REDUCE_X86_H

#include "kernels/kernel_reduce.h"

#if NRTEMU_X86_CLONES
#include <immintrin.h>

#include "kernels/cpu.h"
#include "kernels/simd_tail.h"

#define WIDE __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi")))

static inline bool
cpu_has_wide(void)
{
    return nrtemu__cpu_has(NRTEMU_CPU_V4_VBMI);
}

/* The fp8 tables: the high and low bytes of each magnitude's bfloat16,
 * and the permutation of the codes. */
struct wide_ctx {
    uint8_t hi[128], lo[128], pick[4][64];
};

/* dt's tables, or NULL (not an fp8 format, or one that the tables do not
 * serve); built once (kernel_reduce_x86.c). */
const struct wide_ctx *nrtemu__reduce_x86_ctx(enum nrtemu_dtype dt);

/* The tables in registers, held by value in each loop (the bytes of a
 * wide_ctx could alias any store of the loop, so its loads would stay in
 * the loop). */
struct wide_tab {
    __m512i pick[4], hi0, hi1, lo0, lo1;
};

WIDE static inline struct wide_tab
wide_tab_of(const struct wide_ctx *c)
{
    struct wide_tab t;

    if (c == NULL) {
        t.hi0 = t.hi1 = t.lo0 = t.lo1 = _mm512_setzero_si512();
        for (int q = 0; q < 4; q++) {
            t.pick[q] = t.hi0;
        }
        return t;
    }
    for (int q = 0; q < 4; q++) {
        t.pick[q] = _mm512_loadu_si512(c->pick[q]);
    }
    t.hi0 = _mm512_loadu_si512(c->hi);
    t.hi1 = _mm512_loadu_si512(c->hi + 64);
    t.lo0 = _mm512_loadu_si512(c->lo);
    t.lo1 = _mm512_loadu_si512(c->lo + 64);
    return t;
}

WIDE static inline __mmask64
wide_mask(uint64_t left)
{
    return left >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << left) - 1;
}

/* Elements [i, i + 64) of x (those of mask m) as four float32 vectors. */
WIDE static inline void
wide_load_f32(const void *x, uint64_t i, __mmask64 m, const struct wide_tab *c,
              __m512 *v)
{
    (void)c;
    for (int q = 0; q < 4; q++) {
        v[q] = tail_load_ps((__mmask16)(m >> (16 * q)),
                            (const float *)x + i + 16 * q);
    }
}

WIDE static inline void
wide_load_bf16(const void *x, uint64_t i, __mmask64 m,
               const struct wide_tab *c, __m512 *v)
{
    (void)c;
    for (int q = 0; q < 4; q++) {
        __m256i h = tail_load256_epi16((__mmask16)(m >> (16 * q)),
                                       (const uint16_t *)x + i + 16 * q);
        v[q] = _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
}

WIDE static inline void
wide_load_f16(const void *x, uint64_t i, __mmask64 m, const struct wide_tab *c,
              __m512 *v)
{
    (void)c;
    for (int q = 0; q < 4; q++) {
        v[q] = _mm512_cvtph_ps(tail_load256_epi16(
            (__mmask16)(m >> (16 * q)), (const uint16_t *)x + i + 16 * q));
    }
}

WIDE static inline void
wide_load_fp8(const void *x, uint64_t i, __mmask64 m, const struct wide_tab *c,
              __m512 *v)
{
    const __m512i codes = tail_load_epi8(m, (const uint8_t *)x + i);
    /* vpermi2b reads the low 7 bits of each code: its magnitude */
    __m512i hi = _mm512_permutex2var_epi8(c->hi0, codes, c->hi1);
    const __m512i lo = _mm512_permutex2var_epi8(c->lo0, codes, c->lo1);

    /* hi | (codes & 0x80): the sign */
    hi = _mm512_ternarylogic_epi32(codes, _mm512_set1_epi8((char)0x80), hi,
                                   0xea);
    for (int q = 0; q < 4; q++) {
        v[q] = _mm512_castsi512_ps(_mm512_maskz_permutex2var_epi8(
            0xccccccccccccccccull, lo, c->pick[q], hi));
    }
}

/*
 * fp8 extremes and argmax/argmin by their codes, with no widening: an fp8
 * code is a sign and a magnitude whose order, as an unsigned byte, is the
 * order of the values (the NaNs above the largest finite or infinite
 * magnitude, `nan_above`).  So over any set of codes, with smax the
 * greatest as signed bytes and umin, umax the least and greatest as
 * unsigned ones, the greatest value is smax when smax >= 0 (a positive
 * code or +0 exists), else umin (all negative: the least magnitude), and
 * the least value is umax when umax >= 0x80 (a negative code exists: the
 * greatest magnitude), else umin; a NaN is among them when smax >
 * nan_above or umax > 0x80 | nan_above.  Three byte compares for 64 codes
 * at a time (bytes_ext).  The results that these do not settle go to the
 * widening folds above: a NaN among the codes (which NaN comes first
 * decides the sign of the result) and an extreme of zero (-0 and +0 are
 * equal: which comes first decides its sign).
 */
struct bytes_ext {
    __m512i smax, umin, umax;
};

WIDE static inline void
bytes_ext_init(struct bytes_ext *e)
{
    e->smax = _mm512_set1_epi8((char)0x80);
    e->umin = _mm512_set1_epi8((char)0xff);
    e->umax = _mm512_setzero_si512();
}

/* The codes c of the lanes of m (the others unchanged). */
WIDE static inline void
bytes_ext_add(struct bytes_ext *e, __mmask64 m, __m512i c)
{
    e->smax = _mm512_mask_max_epi8(e->smax, m, e->smax, c);
    e->umin = _mm512_mask_min_epu8(e->umin, m, e->umin, c);
    e->umax = _mm512_mask_max_epu8(e->umax, m, e->umax, c);
}

/* Each lane's greatest (least) value, as a code. */
WIDE static inline __m512i
bytes_ext_code(bool ismax, const struct bytes_ext *e)
{
    return ismax ? _mm512_mask_blend_epi8(_mm512_movepi8_mask(e->smax),
                                          e->smax, e->umin)
                 : _mm512_mask_blend_epi8(_mm512_movepi8_mask(e->umax),
                                          e->umin, e->umax);
}

/* The lanes whose extreme `code` the codes do not settle: a NaN among
 * them, or a zero extreme. */
WIDE static inline __mmask64
bytes_ext_unsure(const struct bytes_ext *e, __m512i code, uint8_t nan_above)
{
    const __mmask64 nan =
        _mm512_cmpgt_epi8_mask(e->smax, _mm512_set1_epi8((char)nan_above)) |
        _mm512_cmpgt_epu8_mask(e->umax,
                               _mm512_set1_epi8((char)(0x80 | nan_above)));

    return nan | _mm512_testn_epi8_mask(code, _mm512_set1_epi8(0x7f));
}

/* The 64 lanes of e folded into lane 0 of each. */
WIDE static inline void
bytes_ext_lanes(struct bytes_ext *e)
{
    for (int w = 32; w >= 1; w /= 2) {
        /* lane i takes lane i + w into account */
        const __m512i idx = _mm512_add_epi8(
            _mm512_set_epi8(63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51,
                            50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 39, 38,
                            37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25,
                            24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12,
                            11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
            _mm512_set1_epi8((char)w));
        e->smax =
            _mm512_max_epi8(e->smax, _mm512_permutexvar_epi8(idx, e->smax));
        e->umin =
            _mm512_min_epu8(e->umin, _mm512_permutexvar_epi8(idx, e->umin));
        e->umax =
            _mm512_max_epu8(e->umax, _mm512_permutexvar_epi8(idx, e->umax));
    }
}

/* Columns of fp8 codes that the byte loops (bytes_columns_ext,
 * bytes_arg_columns) take at a time: their state stays in L1. */
#define BYTES_CHUNK 2048

/* Magnitudes above this are NaN in fp8 format dt. */
static inline uint8_t
fp8_nan_above(enum nrtemu_dtype dt)
{
    const struct narrow p = narrow_fp8(dt);

    return (uint8_t)(p.special_at == 0x7f ? 0x7e : p.special_at);
}
#endif

#endif /* NRTEMU_KERNEL_REDUCE_X86_H */
