/*
 * kernel_codes16.h - 16 float16 or bfloat16 codes to and from the float32
 * lanes of an AVX-512 register (internal, for the loops that convert in
 * registers: kernel_binary16.c, kernel_math_pow.c, kernel_math_div.c).
 *
 * The same bits as the driver's conversions (convert.c): float16 through
 * vcvtph2ps and vcvtps2ph with round to nearest even (what load_f32 and
 * store_f32 run when the CPU has F16C; every AVX-512 CPU has), bfloat16
 * by a shift and by nrtemu__float_to_bfloat16's rounding and NaN rule.
 * Only in the builds with CPU dispatch (simd.h); callers check that the
 * CPU runs CODES16_TARGET code.  No state: thread-safe.
 */
#ifndef NRTEMU_KERNEL_CODES16_H
#define NRTEMU_KERNEL_CODES16_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/simd.h"
#include "kernels/simd_tail.h"

#if NRTEMU_X86_CLONES
#include <immintrin.h>

#define CODES16_TARGET __attribute__((target("arch=x86-64-v4")))

/* The lanes [0, n) of a step of 16 (n >= 16: all). */
CODES16_TARGET static inline __attribute__((always_inline)) __mmask16
codes16_mask(size_t n)
{
    return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
}

/* The codes p[i] of lanes m as float32 (others 0); `half`: float16,
 * else bfloat16. */
CODES16_TARGET static inline __attribute__((always_inline)) __m512
codes16_load(const uint16_t *p, __mmask16 m, bool half)
{
    __m256i h = tail_load256_epi16(m, p);

    if (half) {
        return _mm512_cvtph_ps(h);
    }
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* The word indices of the high halves of 16 dwords, in order. */
CODES16_TARGET static inline __attribute__((always_inline)) __m512i
codes16_high(void)
{
    return _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 31,
                            29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3,
                            1);
}

/* The 16 codes h of lanes m stored to p. */
CODES16_TARGET static inline __attribute__((always_inline)) void
codes16_put(uint16_t *p, __mmask16 m, __m256i h)
{
    tail_store256_epi16(p, m, h);
}

/* The float32 lanes v rounded to the codes of lanes m, stored to p.
 * (Some CPUs run a masked vpmovdw to memory at a fraction of the speed
 * of a permute and a plain store: the codes are put together in a
 * register, and a whole step is stored unmasked.) */
CODES16_TARGET static inline __attribute__((always_inline)) void
codes16_store(uint16_t *p, __mmask16 m, __m512 v, bool half)
{
    __m256i h;

    if (half) {
        h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    } else {
        /* nrtemu__float_to_bfloat16, 16 lanes at a time: the code in the
         * high half of each rounded lane, then those halves together */
        __m512i u = _mm512_castps_si512(v);
        __m512i odd =
            _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
        __m512i r = _mm512_add_epi32(
            _mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), odd);
        __m512i nan = _mm512_or_si512(
            _mm512_and_si512(u, _mm512_set1_epi32((int)0x80000000u)),
            _mm512_set1_epi32(0x7fc00000));
        __mmask16 is_nan = _mm512_cmpgt_epu32_mask(
            _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
            _mm512_set1_epi32(0x7f800000));
        r = _mm512_mask_mov_epi32(r, is_nan, nan);
        h = _mm512_castsi512_si256(
            _mm512_permutexvar_epi16(codes16_high(), r));
    }
    codes16_put(p, m, h);
}

/* codes16_store of bfloat16 codes where every lane of v is finite and
 * far from a halfway point of bfloat16 (rounding half up gives the same
 * codes, and no NaN needs its rule). */
CODES16_TARGET static inline __attribute__((always_inline)) void
codes16_store_bf16_ok(uint16_t *p, __mmask16 m, __m512 v)
{
    __m512i r =
        _mm512_add_epi32(_mm512_castps_si512(v), _mm512_set1_epi32(0x8000));

    codes16_put(
        p, m,
        _mm512_castsi512_si256(_mm512_permutexvar_epi16(codes16_high(), r)));
}
#endif

#endif /* NRTEMU_KERNEL_CODES16_H */
