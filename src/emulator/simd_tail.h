/*
 * simd_tail.h - AVX-512 loads and stores of a loop's step, masked only
 * where the mask leaves lanes out (internal, for the kernels' vector
 * loops).
 *
 * A loop over n elements takes whole vectors, and a last step with a
 * mask of the lanes that remain.  Writing every step with the masked
 * instruction is shorter, and costs nothing while the data is in cache;
 * from memory it is slow: on the Zen 5 VM this project runs on, a byte
 * lookup over 4 MiB that memory had to supply (a 64 MiB copy before each
 * call) took 190 us with plain loads and stores, 455 us with masked
 * loads and 278 us with masked stores, whatever the mask (all lanes
 * set).  The hardware seems not to prefetch for, or not to combine, the
 * masked accesses.  So each helper tests its mask: all lanes set, the
 * plain instruction; otherwise the masked one.  The results are the
 * masked instruction's in every case (maskz: the lanes left out read as
 * zero; a masked store leaves them alone, and faults on none of them).
 *
 * Only in the builds with CPU dispatch (simd.h); the callers' targets
 * include AVX-512 F (and BW for bytes and words, VL for the 256-bit
 * ones).  No state: thread-safe.
 */
#ifndef NRTEMU_SIMD_TAIL_H
#define NRTEMU_SIMD_TAIL_H

#include <stdint.h>

#include "simd.h"

#if NRTEMU_X86_CLONES
#include <immintrin.h>

#define SIMD_TAIL_FN_F \
    static inline __attribute__((always_inline, target("avx512f")))
#define SIMD_TAIL_FN \
    static inline __attribute__((always_inline, target("avx512f,avx512bw")))
#define SIMD_TAIL_FN_VL \
    static inline       \
        __attribute__((always_inline, target("avx512f,avx512bw,avx512vl")))

/* Loads: the lanes of m from p, the others zero. */

SIMD_TAIL_FN __m512i
tail_load_epi8(__mmask64 m, const void *p)
{
    return m == ~(__mmask64)0 ? _mm512_loadu_si512(p)
                              : _mm512_maskz_loadu_epi8(m, p);
}

SIMD_TAIL_FN __m512i
tail_load_epi16(__mmask32 m, const void *p)
{
    return m == ~(__mmask32)0 ? _mm512_loadu_si512(p)
                              : _mm512_maskz_loadu_epi16(m, p);
}

SIMD_TAIL_FN_F __m512i
tail_load_epi32(__mmask16 m, const void *p)
{
    return m == (__mmask16)0xffff ? _mm512_loadu_si512(p)
                                  : _mm512_maskz_loadu_epi32(m, p);
}

SIMD_TAIL_FN_F __m512
tail_load_ps(__mmask16 m, const float *p)
{
    return m == (__mmask16)0xffff ? _mm512_loadu_ps(p)
                                  : _mm512_maskz_loadu_ps(m, p);
}

SIMD_TAIL_FN_F __m512d
tail_load_pd(__mmask8 m, const double *p)
{
    return m == (__mmask8)0xff ? _mm512_loadu_pd(p)
                               : _mm512_maskz_loadu_pd(m, p);
}

/* 16 words into a 256-bit register. */
SIMD_TAIL_FN_VL __m256i
tail_load256_epi16(__mmask16 m, const void *p)
{
    return m == (__mmask16)0xffff ? _mm256_loadu_si256((const __m256i *)p)
                                  : _mm256_maskz_loadu_epi16(m, p);
}

/* Stores: the lanes of m to p, the others left as they are. */

SIMD_TAIL_FN void
tail_store_epi8(void *p, __mmask64 m, __m512i v)
{
    if (m == ~(__mmask64)0) {
        _mm512_storeu_si512(p, v);
    } else {
        _mm512_mask_storeu_epi8(p, m, v);
    }
}

SIMD_TAIL_FN void
tail_store_epi16(void *p, __mmask32 m, __m512i v)
{
    if (m == ~(__mmask32)0) {
        _mm512_storeu_si512(p, v);
    } else {
        _mm512_mask_storeu_epi16(p, m, v);
    }
}

SIMD_TAIL_FN_F void
tail_store_epi32(void *p, __mmask16 m, __m512i v)
{
    if (m == (__mmask16)0xffff) {
        _mm512_storeu_si512(p, v);
    } else {
        _mm512_mask_storeu_epi32(p, m, v);
    }
}

SIMD_TAIL_FN_F void
tail_store_ps(float *p, __mmask16 m, __m512 v)
{
    if (m == (__mmask16)0xffff) {
        _mm512_storeu_ps(p, v);
    } else {
        _mm512_mask_storeu_ps(p, m, v);
    }
}

SIMD_TAIL_FN_F void
tail_store_pd(double *p, __mmask8 m, __m512d v)
{
    if (m == (__mmask8)0xff) {
        _mm512_storeu_pd(p, v);
    } else {
        _mm512_mask_storeu_pd(p, m, v);
    }
}

/* 16 words from a 256-bit register. */
SIMD_TAIL_FN_VL void
tail_store256_epi16(void *p, __mmask16 m, __m256i v)
{
    if (m == (__mmask16)0xffff) {
        _mm256_storeu_si256((__m256i *)p, v);
    } else {
        _mm256_mask_storeu_epi16(p, m, v);
    }
}

#endif /* NRTEMU_X86_CLONES */
#endif /* NRTEMU_SIMD_TAIL_H */
