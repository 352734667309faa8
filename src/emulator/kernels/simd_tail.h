/*
 * simd_tail.h - AVX-512 loads and stores of a loop's step, masked only
 * where the mask leaves lanes out (internal, for the kernels' vector
 * loops).
 *
 * A loop over n elements takes whole vectors, and a last step with a
 * mask of the lanes that remain.  Writing every step with the masked
 * instruction is shorter, and costs nothing while the data is in cache;
 * from memory it is slow on some CPUs: a byte lookup that memory has to
 * supply runs much slower with masked loads, and slower with masked
 * stores, than with plain ones, whatever the mask (all lanes set too).
 * The hardware seems not to prefetch for, or not to combine, the
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

#include "kernels/simd.h"

#if NRTEMU_X86_CLONES
#include <immintrin.h>

#define SIMD_TAIL_FN_F \
    static inline __attribute__((always_inline, target("avx512f")))
#define SIMD_TAIL_FN \
    static inline __attribute__((always_inline, target("avx512f,avx512bw")))
#define SIMD_TAIL_FN_VL \
    static inline       \
        __attribute__((always_inline, target("avx512f,avx512bw,avx512vl")))

/*
 * NAME(m, p): the lanes of m from p, the others zero (a load), or
 * NAME(p, m, v): the lanes of m of v to p, the others left as they are
 * (a store); FULL is the mask of every lane, PLAIN and MASKED the two
 * instructions.
 */
#define SIMD_TAIL_LOAD(ATTR, NAME, V, M, P, FULL, PLAIN, MASKED) \
    ATTR V NAME(M m, P p)                                        \
    {                                                            \
        return m == (M)(FULL) ? PLAIN(p) : MASKED(m, p);         \
    }
#define SIMD_TAIL_STORE(ATTR, NAME, V, M, P, FULL, PLAIN, MASKED) \
    ATTR void NAME(P p, M m, V v)                                 \
    {                                                             \
        if (m == (M)(FULL)) {                                     \
            PLAIN(p, v);                                          \
        } else {                                                  \
            MASKED(p, m, v);                                      \
        }                                                         \
    }

/* (the plain 256-bit ones take __m256i pointers) */
#define SIMD_TAIL_LOADU256(p) _mm256_loadu_si256((const __m256i *)(p))
#define SIMD_TAIL_STOREU256(p, v) _mm256_storeu_si256((__m256i *)(p), v)

/* clang-format off */
SIMD_TAIL_LOAD(SIMD_TAIL_FN, tail_load_epi8, __m512i, __mmask64, const void *,
               ~(__mmask64)0, _mm512_loadu_si512, _mm512_maskz_loadu_epi8)
SIMD_TAIL_LOAD(SIMD_TAIL_FN, tail_load_epi16, __m512i, __mmask32, const void *,
               ~(__mmask32)0, _mm512_loadu_si512, _mm512_maskz_loadu_epi16)
SIMD_TAIL_LOAD(SIMD_TAIL_FN_F, tail_load_epi32, __m512i, __mmask16,
               const void *, 0xffff, _mm512_loadu_si512,
               _mm512_maskz_loadu_epi32)
SIMD_TAIL_LOAD(SIMD_TAIL_FN_F, tail_load_ps, __m512, __mmask16, const float *,
               0xffff, _mm512_loadu_ps, _mm512_maskz_loadu_ps)
SIMD_TAIL_LOAD(SIMD_TAIL_FN_F, tail_load_pd, __m512d, __mmask8, const double *,
               0xff, _mm512_loadu_pd, _mm512_maskz_loadu_pd)
/* 16 words into a 256-bit register */
SIMD_TAIL_LOAD(SIMD_TAIL_FN_VL, tail_load256_epi16, __m256i, __mmask16,
               const void *, 0xffff, SIMD_TAIL_LOADU256,
               _mm256_maskz_loadu_epi16)

SIMD_TAIL_STORE(SIMD_TAIL_FN, tail_store_epi8, __m512i, __mmask64, void *,
                ~(__mmask64)0, _mm512_storeu_si512, _mm512_mask_storeu_epi8)
SIMD_TAIL_STORE(SIMD_TAIL_FN, tail_store_epi16, __m512i, __mmask32, void *,
                ~(__mmask32)0, _mm512_storeu_si512, _mm512_mask_storeu_epi16)
SIMD_TAIL_STORE(SIMD_TAIL_FN_F, tail_store_epi32, __m512i, __mmask16, void *,
                0xffff, _mm512_storeu_si512, _mm512_mask_storeu_epi32)
SIMD_TAIL_STORE(SIMD_TAIL_FN_F, tail_store_ps, __m512, __mmask16, float *,
                0xffff, _mm512_storeu_ps, _mm512_mask_storeu_ps)
SIMD_TAIL_STORE(SIMD_TAIL_FN_F, tail_store_pd, __m512d, __mmask8, double *,
                0xff, _mm512_storeu_pd, _mm512_mask_storeu_pd)
/* 16 words from a 256-bit register */
SIMD_TAIL_STORE(SIMD_TAIL_FN_VL, tail_store256_epi16, __m256i, __mmask16,
                void *, 0xffff, SIMD_TAIL_STOREU256, _mm256_mask_storeu_epi16)
/* clang-format on */

#endif /* NRTEMU_X86_CLONES */
#endif /* NRTEMU_SIMD_TAIL_H */
