/*
 * kernel_transpose.c - the 2-D transposes of the layout ops (a gather's
 * planes whose input runs along another axis than the output's, and whole
 * 2-D transposes by bands): tiles that stay in cache, blocks of them in
 * vector registers, with SSE2, AVX2 or AVX-512 as the CPU has them.
 */
#include <stdbool.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/kernel.h"
#include "kernels/kernel_layout.h"
#include "kernels/pool.h"
#include "kernels/simd.h"

#if NRTEMU_X86_CLONES
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

/*
 * Transposes.  A permutation of axes moves bytes without looking at them,
 * so the copies below work on the item size (1, 2, 4 or 8 bytes), never
 * on the dtype.  After collapsing, every permutation that moves the
 * contiguous input axis is a 2-D transpose
 *
 *     dst[r][c] = src[c][r]   r < R, c < C
 *
 * (c walks the contiguous output axis, r the contiguous input axis),
 * repeated over the other axes.  A naive loop reads src with a stride of
 * a whole row per element: every element costs a cache line, and with
 * power-of-two row lengths the rows all fall into the same cache set.
 * Instead the R x C plane is cut into tiles that fit the L1 cache, and
 * each tile into blocks of 16 bytes a side (4 x 4 floats, 16 x 16 bytes)
 * that are transposed in vector registers: 16-byte loads from the rows
 * of src, interleaving, 16-byte stores into the rows of dst (with AVX2,
 * two such blocks at once and 32-byte stores).  What is left at the
 * edges of a tile goes element by element.  Non-temporal stores of the
 * output measured slower in this order (nrtemu__transpose_bands has one for
 * them).
 */

/* Side of a tile in elements, by item size: a tile of 8 to 16 KiB, half
 * of the L1 data cache at most, read and written while it stays there. */
#define TILE_1 128
#define TILE_2 64
#define TILE_4 64
#define TILE_8 32

#if defined(__SSE2__)
/*
 * The vector blocks.  Each round of a block interleaves rows 2k and 2k+1
 * in units twice as wide as the last (size, 2 size, ... 8 bytes); after
 * log2(n) rounds register k holds column bitreverse(k) of the n x n
 * items of 16 bytes a side.  The unpack instructions work within 16-byte
 * lanes, so the same rounds on 32-byte registers transpose two blocks at
 * once.
 */
#define BLOCK_ROUNDS(VEC, UNPACK)                                   \
    _Pragma("GCC unroll 4") for (size_t w = size; w <= 8; w *= 2)   \
    {                                                               \
        VEC y[16];                                                  \
        _Pragma("GCC unroll 8") for (int k = 0; k < n / 2; k++)     \
        {                                                           \
            y[k] = UNPACK(x[2 * k], x[2 * k + 1], w, false);        \
            y[k + n / 2] = UNPACK(x[2 * k], x[2 * k + 1], w, true); \
        }                                                           \
        _Pragma("GCC unroll 16") for (int i = 0; i < n; i++)        \
        {                                                           \
            x[i] = y[i];                                            \
        }                                                           \
        bits++;                                                     \
    }

/* Where the rounds leave column k: at register bitreverse(k). */
static inline __attribute__((always_inline)) int
bit_reverse(int k, int bits)
{
    int r = 0;

    for (int b = 0; b < bits; b++) {
        r |= ((k >> b) & 1) << (bits - 1 - b);
    }
    return r;
}

/* Interleave the low (hi = false) or high halves of a and b, in units of
 * w bytes. */
static inline __attribute__((always_inline)) __m128i
unpack_128(__m128i a, __m128i b, size_t w, bool hi)
{
    switch (w) {
    case 1:
        return hi ? _mm_unpackhi_epi8(a, b) : _mm_unpacklo_epi8(a, b);
    case 2:
        return hi ? _mm_unpackhi_epi16(a, b) : _mm_unpacklo_epi16(a, b);
    case 4:
        return hi ? _mm_unpackhi_epi32(a, b) : _mm_unpacklo_epi32(a, b);
    default:
        return hi ? _mm_unpackhi_epi64(a, b) : _mm_unpacklo_epi64(a, b);
    }
}

/*
 * One block of n x n items of `size` bytes, n = 16 / size: n rows of 16
 * bytes from src (`sstep` bytes apart) into n rows of dst (`dstep`
 * apart).
 */
static inline __attribute__((always_inline)) void
block_sse2(char *dst, ptrdiff_t dstep, const char *src, ptrdiff_t sstep,
           size_t size)
{
    const int n = (int)(16 / size);
    __m128i x[16];
    int bits = 0;

#pragma GCC unroll 16
    for (int i = 0; i < n; i++) {
        x[i] = _mm_loadu_si128((const __m128i *)(src + i * sstep));
    }
    BLOCK_ROUNDS(__m128i, unpack_128)
#pragma GCC unroll 16
    for (int k = 0; k < n; k++) {
        _mm_storeu_si128((__m128i *)(dst + bit_reverse(k, bits) * dstep),
                         x[k]);
    }
}
#endif

#if NRTEMU_X86_CLONES
#define ATTR_AVX2 __attribute__((target("avx2")))

static inline __attribute__((always_inline)) ATTR_AVX2 __m256i
unpack_256(__m256i a, __m256i b, size_t w, bool hi)
{
    switch (w) {
    case 1:
        return hi ? _mm256_unpackhi_epi8(a, b) : _mm256_unpacklo_epi8(a, b);
    case 2:
        return hi ? _mm256_unpackhi_epi16(a, b) : _mm256_unpacklo_epi16(a, b);
    case 4:
        return hi ? _mm256_unpackhi_epi32(a, b) : _mm256_unpacklo_epi32(a, b);
    default:
        return hi ? _mm256_unpackhi_epi64(a, b) : _mm256_unpacklo_epi64(a, b);
    }
}

/*
 * Two blocks of n x n items, n = 16 / size, one above the other in src:
 * register i holds src rows i and n + i (16 bytes each) in its two lanes,
 * so that each register of the result is a whole 32-byte row of dst.
 */
static inline __attribute__((always_inline)) ATTR_AVX2 void
block_avx2(char *dst, ptrdiff_t dstep, const char *src, ptrdiff_t sstep,
           size_t size)
{
    const int n = (int)(16 / size);
    __m256i x[16];
    int bits = 0;

#pragma GCC unroll 16
    for (int i = 0; i < n; i++) {
        __m128i lo = _mm_loadu_si128((const __m128i *)(src + i * sstep));
        __m128i hi = _mm_loadu_si128((const __m128i *)(src + (n + i) * sstep));
        x[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    }
    BLOCK_ROUNDS(__m256i, unpack_256)
#pragma GCC unroll 16
    for (int k = 0; k < n; k++) {
        _mm256_storeu_si256((__m256i *)(dst + bit_reverse(k, bits) * dstep),
                            x[k]);
    }
}
#endif

/*
 * transpose_2d_<NAME>: dst[r * drs + c * SIZE] = src[c * srs + r * SIZE]
 * for r < R, c < C (drs, srs: row strides in bytes), for items of SIZE
 * bytes of type T, tile by tile (TILE_<SIZE> a side).  Within a tile the
 * blocks go along the rows of dst, so that each line of dst is written
 * whole before the next; each line of src is read four to sixteen times
 * over the tile, by blocks far apart.  When the rows of src are a
 * multiple of 4 KiB apart (1024 floats) they all fall into one set of
 * the L1 cache and evict each other between those reads, and the tile is
 * first copied, row by row, into a contiguous buffer; while copying a
 * row, the matching row of the next tile is prefetched (each row is a
 * page of its own there, which the hardware prefetchers do not cross;
 * measured faster on large planes).  In a tile, blocks of VR x VC
 * items go by BLOCK (none when VR is 0), the rest item by item.
 */
#define DEFINE_TRANSPOSE_2D(NAME, SIZE, T, ATTR, BLOCK, VR, VC)              \
    static ATTR void transpose_2d_##NAME(char *dst, ptrdiff_t drs,           \
                                         const char *src, ptrdiff_t srs,     \
                                         uint64_t R, uint64_t C)             \
    {                                                                        \
        enum { TS = TILE_##SIZE, PITCH = TS * SIZE };                        \
        const uint64_t vr = (VR), vc = (VC);                                 \
        bool stage = srs % 4096 == 0 && R >= TS && C >= TS;                  \
        char buf[stage ? TS * PITCH : 1];                                    \
        for (uint64_t r0 = 0; r0 < R; r0 += TS) {                            \
            uint64_t nr = R - r0 < TS ? R - r0 : TS;                         \
            for (uint64_t c0 = 0; c0 < C; c0 += TS) {                        \
                uint64_t nc = C - c0 < TS ? C - c0 : TS, r = 0;              \
                const char *ts =                                             \
                    src + (ptrdiff_t)c0 * srs + (ptrdiff_t)(r0 * SIZE);      \
                ptrdiff_t tss = srs;                                         \
                char *td =                                                   \
                    dst + (ptrdiff_t)r0 * drs + (ptrdiff_t)(c0 * SIZE);      \
                if (stage) {                                                 \
                    for (uint64_t c = 0; c < nc; c++) {                      \
                        memcpy(buf + c * PITCH, ts + (ptrdiff_t)c * srs,     \
                               nr * SIZE);                                   \
                        if (c0 + TS + c < C) {                               \
                            const char *next =                               \
                                ts + (ptrdiff_t)(TS + c) * srs;              \
                            for (uint64_t k = 0; k < nr * SIZE; k += 64) {   \
                                __builtin_prefetch(next + k);                \
                            }                                                \
                        }                                                    \
                    }                                                        \
                    ts = buf;                                                \
                    tss = PITCH;                                             \
                }                                                            \
                for (; vr != 0 && nr - r >= vr; r += vr) {                   \
                    uint64_t c = 0;                                          \
                    for (; nc - c >= vc; c += vc) {                          \
                        BLOCK(                                               \
                            td + (ptrdiff_t)r * drs + (ptrdiff_t)(c * SIZE), \
                            drs,                                             \
                            ts + (ptrdiff_t)c * tss + (ptrdiff_t)(r * SIZE), \
                            tss, SIZE);                                      \
                    }                                                        \
                    for (uint64_t rr = r; rr < r + vr; rr++) {               \
                        T *d = (T *)(td + (ptrdiff_t)rr * drs);              \
                        const char *s = ts + (ptrdiff_t)(rr * SIZE);         \
                        for (uint64_t cc = c; cc < nc; cc++) {               \
                            d[cc] = *(const T *)(s + (ptrdiff_t)cc * tss);   \
                        }                                                    \
                    }                                                        \
                }                                                            \
                for (; r < nr; r++) {                                        \
                    T *d = (T *)(td + (ptrdiff_t)r * drs);                   \
                    const char *s = ts + (ptrdiff_t)(r * SIZE);              \
                    for (uint64_t c = 0; c < nc; c++) {                      \
                        d[c] = *(const T *)(s + (ptrdiff_t)c * tss);         \
                    }                                                        \
                }                                                            \
            }                                                                \
        }                                                                    \
    }

#if defined(__SSE2__)
#define DEFINE_TRANSPOSE_2D_BASE(SIZE, T) \
    DEFINE_TRANSPOSE_2D(SIZE, SIZE, T, , block_sse2, 16 / SIZE, 16 / SIZE)
#else
#define NO_BLOCK(dst, dstep, src, sstep, size) ((void)0)
#define DEFINE_TRANSPOSE_2D_BASE(SIZE, T) \
    DEFINE_TRANSPOSE_2D(SIZE, SIZE, T, , NO_BLOCK, 0, 1)
#endif
DEFINE_TRANSPOSE_2D_BASE(1, uint8_t)
DEFINE_TRANSPOSE_2D_BASE(2, uint16_t)
DEFINE_TRANSPOSE_2D_BASE(4, uint32_t)
DEFINE_TRANSPOSE_2D_BASE(8, uint64_t)
#if NRTEMU_X86_CLONES
DEFINE_TRANSPOSE_2D(avx2_1, 1, uint8_t, ATTR_AVX2, block_avx2, 16, 32)

/*
 * 4- and 2-byte items with AVX2: 8 x 8 blocks (eight 32-byte rows of src in,
 * eight 32-byte rows of dst out, three rounds of shuffles) over tiles of
 * TILE_AVX2 a side, without staging: several times faster than the 4 x 4
 * blocks of 64-item staged tiles, and close to a memcpy of the same
 * bytes, as a 32-byte run of each src row per block, and whole 512-byte
 * runs of dst rows per tile row, keep the hardware prefetchers on both
 * sides.
 */
#define TILE_AVX2 128

static inline __attribute__((always_inline)) ATTR_AVX2 void
block_8x8_4(char *dst, ptrdiff_t drs, const char *src, ptrdiff_t srs)
{
    __m256 r[8], t[8], u[8];

#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        r[i] = _mm256_loadu_ps((const float *)(src + i * srs));
    }
#pragma GCC unroll 4
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
#pragma GCC unroll 2
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        _mm256_storeu_ps((float *)(dst + i * drs),
                         _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
        _mm256_storeu_ps((float *)(dst + (i + 4) * drs),
                         _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
    }
}

/* dst[r * drs + c * SIZE] = src[c * srs + r * SIZE], as transpose_2d_SIZE,
 * in 8 x 8 blocks. */
#define DEFINE_TRANSPOSE_8X8(SIZE)                                            \
    static ATTR_AVX2 void transpose_2d_avx2_##SIZE(                           \
        char *dst, ptrdiff_t drs, const char *src, ptrdiff_t srs, uint64_t R, \
        uint64_t C)                                                           \
    {                                                                         \
        for (uint64_t c0 = 0; c0 < C; c0 += TILE_AVX2) {                      \
            uint64_t c1 = C - c0 < TILE_AVX2 ? C : c0 + TILE_AVX2;            \
            for (uint64_t r0 = 0; r0 < R; r0 += TILE_AVX2) {                  \
                uint64_t r1 = R - r0 < TILE_AVX2 ? R : r0 + TILE_AVX2;        \
                uint64_t r = r0;                                              \
                for (; r + 8 <= r1; r += 8) {                                 \
                    uint64_t c = c0;                                          \
                    for (; c + 8 <= c1; c += 8) {                             \
                        block_8x8_##SIZE(                                     \
                            dst + (ptrdiff_t)r * drs + (ptrdiff_t)c * SIZE,   \
                            drs,                                              \
                            src + (ptrdiff_t)c * srs + (ptrdiff_t)r * SIZE,   \
                            srs);                                             \
                    }                                                         \
                    for (uint64_t rr = r; rr < r + 8; rr++) {                 \
                        for (uint64_t cc = c; cc < c1; cc++) {                \
                            memcpy(dst + (ptrdiff_t)rr * drs +                \
                                       (ptrdiff_t)cc * SIZE,                  \
                                   src + (ptrdiff_t)cc * srs +                \
                                       (ptrdiff_t)rr * SIZE,                  \
                                   SIZE);                                     \
                        }                                                     \
                    }                                                         \
                }                                                             \
                for (; r < r1; r++) {                                         \
                    for (uint64_t c = c0; c < c1; c++) {                      \
                        memcpy(                                               \
                            dst + (ptrdiff_t)r * drs + (ptrdiff_t)c * SIZE,   \
                            src + (ptrdiff_t)c * srs + (ptrdiff_t)r * SIZE,   \
                            SIZE);                                            \
                    }                                                         \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }

/* The same for 2-byte items: eight 16-byte rows, three rounds of
 * interleaving (16-, 32-, 64-bit units). */
static inline __attribute__((always_inline)) ATTR_AVX2 void
block_8x8_2(char *dst, ptrdiff_t drs, const char *src, ptrdiff_t srs)
{
    __m128i r[8], t[8], u[8];

#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        r[i] = _mm_loadu_si128((const __m128i *)(src + i * srs));
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        t[i] = _mm_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
        t[i + 4] = _mm_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
    }
    /* t[k]: columns 2k, 2k+1 (k < 4: of the low half) of row pair k. */
#pragma GCC unroll 2
    for (int h = 0; h < 8; h += 4) {
        u[h] = _mm_unpacklo_epi32(t[h], t[h + 1]);
        u[h + 1] = _mm_unpackhi_epi32(t[h], t[h + 1]);
        u[h + 2] = _mm_unpacklo_epi32(t[h + 2], t[h + 3]);
        u[h + 3] = _mm_unpackhi_epi32(t[h + 2], t[h + 3]);
    }
#pragma GCC unroll 2
    for (int h = 0; h < 8; h += 4) {
        _mm_storeu_si128((__m128i *)(dst + h * drs),
                         _mm_unpacklo_epi64(u[h], u[h + 2]));
        _mm_storeu_si128((__m128i *)(dst + (h + 1) * drs),
                         _mm_unpackhi_epi64(u[h], u[h + 2]));
        _mm_storeu_si128((__m128i *)(dst + (h + 2) * drs),
                         _mm_unpacklo_epi64(u[h + 1], u[h + 3]));
        _mm_storeu_si128((__m128i *)(dst + (h + 3) * drs),
                         _mm_unpackhi_epi64(u[h + 1], u[h + 3]));
    }
}

/*
 * 16 x 16 blocks of 2-byte items, in 32-byte registers: eight rows of src
 * (16 columns each) through the same rounds as block_8x8_2 (the unpacks
 * work per 16-byte lane) leave in w[k] row k of dst in the low lane and
 * row k + 8 in the high one; the next eight rows of src give the other
 * half of each dst row, joined by lane permutes into 32-byte stores.
 */
static inline __attribute__((always_inline)) ATTR_AVX2 void
rows_8x16_2(__m256i *w, const char *src, ptrdiff_t srs)
{
    __m256i r[8], t[8], u[8];

#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        r[i] = _mm256_loadu_si256((const __m256i *)(src + i * srs));
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        t[i] = _mm256_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
        t[i + 4] = _mm256_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
    }
#pragma GCC unroll 2
    for (int h = 0; h < 8; h += 4) {
        u[h] = _mm256_unpacklo_epi32(t[h], t[h + 1]);
        u[h + 1] = _mm256_unpackhi_epi32(t[h], t[h + 1]);
        u[h + 2] = _mm256_unpacklo_epi32(t[h + 2], t[h + 3]);
        u[h + 3] = _mm256_unpackhi_epi32(t[h + 2], t[h + 3]);
    }
#pragma GCC unroll 2
    for (int h = 0; h < 8; h += 4) {
        w[h] = _mm256_unpacklo_epi64(u[h], u[h + 2]);
        w[h + 1] = _mm256_unpackhi_epi64(u[h], u[h + 2]);
        w[h + 2] = _mm256_unpacklo_epi64(u[h + 1], u[h + 3]);
        w[h + 3] = _mm256_unpackhi_epi64(u[h + 1], u[h + 3]);
    }
}

static inline __attribute__((always_inline)) ATTR_AVX2 void
block_16x16_2(char *dst, ptrdiff_t drs, const char *src, ptrdiff_t srs)
{
    __m256i a[8], b[8];

    rows_8x16_2(a, src, srs);
    rows_8x16_2(b, src + 8 * srs, srs);
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
        _mm256_storeu_si256((__m256i *)(dst + k * drs),
                            _mm256_permute2x128_si256(a[k], b[k], 0x20));
        _mm256_storeu_si256((__m256i *)(dst + (k + 8) * drs),
                            _mm256_permute2x128_si256(a[k], b[k], 0x31));
    }
}

/* Rows [r, r + 8) of dst from column c on: 8 x 8 blocks, then items. */
static inline __attribute__((always_inline)) ATTR_AVX2 void
rows_8_2(char *dst, ptrdiff_t drs, const char *src, ptrdiff_t srs, uint64_t r,
         uint64_t c, uint64_t c1)
{
    for (; c + 8 <= c1; c += 8) {
        block_8x8_2(dst + (ptrdiff_t)r * drs + (ptrdiff_t)c * 2, drs,
                    src + (ptrdiff_t)c * srs + (ptrdiff_t)r * 2, srs);
    }
    for (uint64_t rr = r; rr < r + 8; rr++) {
        for (uint64_t cc = c; cc < c1; cc++) {
            memcpy(dst + (ptrdiff_t)rr * drs + (ptrdiff_t)cc * 2,
                   src + (ptrdiff_t)cc * srs + (ptrdiff_t)rr * 2, 2);
        }
    }
}

/* transpose_2d_2 in 16 x 16 blocks (measured faster than 8 x 8 ones), the
 * edges in 8 x 8 blocks. */
static ATTR_AVX2 void
transpose_2d_avx2_2(char *dst, ptrdiff_t drs, const char *src, ptrdiff_t srs,
                    uint64_t R, uint64_t C)
{
    for (uint64_t c0 = 0; c0 < C; c0 += TILE_AVX2) {
        uint64_t c1 = C - c0 < TILE_AVX2 ? C : c0 + TILE_AVX2;
        for (uint64_t r0 = 0; r0 < R; r0 += TILE_AVX2) {
            uint64_t r1 = R - r0 < TILE_AVX2 ? R : r0 + TILE_AVX2;
            uint64_t r = r0;
            for (; r + 16 <= r1; r += 16) {
                uint64_t c = c0;
                for (; c + 16 <= c1; c += 16) {
                    block_16x16_2(
                        dst + (ptrdiff_t)r * drs + (ptrdiff_t)c * 2, drs,
                        src + (ptrdiff_t)c * srs + (ptrdiff_t)r * 2, srs);
                }
                rows_8_2(dst, drs, src, srs, r, c, c1);
                rows_8_2(dst, drs, src, srs, r + 8, c, c1);
            }
            for (; r + 8 <= r1; r += 8) {
                rows_8_2(dst, drs, src, srs, r, c0, c1);
            }
            for (; r < r1; r++) {
                for (uint64_t c = c0; c < c1; c++) {
                    memcpy(dst + (ptrdiff_t)r * drs + (ptrdiff_t)c * 2,
                           src + (ptrdiff_t)c * srs + (ptrdiff_t)r * 2, 2);
                }
            }
        }
    }
}

DEFINE_TRANSPOSE_8X8(4)
DEFINE_TRANSPOSE_2D(avx2_8, 8, uint64_t, ATTR_AVX2, block_avx2, 2, 4)

/*
 * 1-byte items with AVX-512, by squares of 64 x 64: four blocks of 16
 * whole 64-byte lines of src each (the rounds of block_sse2 in the four
 * 16-byte lanes at once: 16 x 16 bytes per lane), their 16-byte pieces
 * of dst rows stored into a 4 KiB square, whose 64-byte rows then go to
 * dst as whole lines.  With rows of src and dst whole lines apart, each
 * line of src is read once and each line of dst written once, where the
 * 16- and 32-byte pieces of transpose_2d_avx2_1 come back to a line
 * several times: with rows 2048 bytes apart (2048 x 2048 fp8) all fall
 * into two sets of the L1 cache, and are evicted in between: there the
 * squares are much faster.  Rows that are not whole lines apart are
 * slower this way than by transpose_2d_avx2_1 and stay with it, as do
 * the edges of the plane.
 */
#define ATTR_AVX512 __attribute__((target("avx512f,avx512bw")))

static inline __attribute__((always_inline)) ATTR_AVX512 __m512i
unpack_512(__m512i a, __m512i b, size_t w, bool hi)
{
    switch (w) {
    case 1:
        return hi ? _mm512_unpackhi_epi8(a, b) : _mm512_unpacklo_epi8(a, b);
    case 2:
        return hi ? _mm512_unpackhi_epi16(a, b) : _mm512_unpacklo_epi16(a, b);
    case 4:
        return hi ? _mm512_unpackhi_epi32(a, b) : _mm512_unpacklo_epi32(a, b);
    default:
        return hi ? _mm512_unpackhi_epi64(a, b) : _mm512_unpacklo_epi64(a, b);
    }
}

/* dst rows [0, 64) x columns [0, 64) from src rows [0, 64) x columns
 * [0, 64) (dst[r][c] = src[c][r]), through `sq` (64 x 64 bytes). */
static inline __attribute__((always_inline)) ATTR_AVX512 void
square_64_1(char *dst, ptrdiff_t drs, const char *src, ptrdiff_t srs, char *sq,
            bool stream)
{
    const size_t size = 1;
    const int n = 16;

    for (int g = 0; g < 4; g++) {
        __m512i x[16];
        int bits = 0;
#pragma GCC unroll 16
        for (int i = 0; i < n; i++) {
            x[i] = _mm512_loadu_si512(src + (16 * g + i) * srs);
        }
        BLOCK_ROUNDS(__m512i, unpack_512)
        /* x[k], lane j: dst row 16 j + bitreverse(k), columns 16 g on */
#pragma GCC unroll 16
        for (int k = 0; k < n; k++) {
            char *row = sq + bit_reverse(k, bits) * 64 + 16 * g;
            _mm_storeu_si128((__m128i *)row, _mm512_castsi512_si128(x[k]));
            _mm_storeu_si128((__m128i *)(row + 16 * 64),
                             _mm512_extracti32x4_epi32(x[k], 1));
            _mm_storeu_si128((__m128i *)(row + 32 * 64),
                             _mm512_extracti32x4_epi32(x[k], 2));
            _mm_storeu_si128((__m128i *)(row + 48 * 64),
                             _mm512_extracti32x4_epi32(x[k], 3));
        }
    }
    if (stream) { /* (dst and drs: whole lines) */
#pragma GCC unroll 8
        for (int r = 0; r < 64; r++) {
            _mm512_stream_si512((void *)(dst + r * drs),
                                _mm512_load_si512(sq + r * 64));
        }
        return;
    }
#pragma GCC unroll 8
    for (int r = 0; r < 64; r++) {
        _mm512_storeu_si512(dst + r * drs, _mm512_load_si512(sq + r * 64));
    }
}

static ATTR_AVX512 void
transpose_2d_avx512_1(char *dst, ptrdiff_t drs, const char *src, ptrdiff_t srs,
                      uint64_t R, uint64_t C)
{
    _Alignas(64) char sq[64 * 64];
    uint64_t R64 = R / 64 * 64, C64 = C / 64 * 64;

    for (uint64_t r = 0; r < R64; r += 64) {
        for (uint64_t c = 0; c < C64; c += 64) {
            /* the next square's lines of src, one a row: a page each
             * when rows are 4 KiB apart, which no prefetcher crosses */
            uint64_t nr = c + 64 < C64 ? r : r + 64;
            uint64_t nc = c + 64 < C64 ? c + 64 : 0;
            if (nr < R64) {
                const char *next = src + (ptrdiff_t)nc * srs + (ptrdiff_t)nr;
                for (int k = 0; k < 64; k++) {
                    __builtin_prefetch(next + k * srs);
                }
            }
            square_64_1(dst + (ptrdiff_t)r * drs + (ptrdiff_t)c, drs,
                        src + (ptrdiff_t)c * srs + (ptrdiff_t)r, srs, sq,
                        false);
        }
    }
    if (C64 < C) {
        transpose_2d_avx2_1(dst + (ptrdiff_t)C64, drs,
                            src + (ptrdiff_t)C64 * srs, srs, R64, C - C64);
    }
    if (R64 < R) {
        transpose_2d_avx2_1(dst + (ptrdiff_t)R64 * drs, drs,
                            src + (ptrdiff_t)R64, srs, R - R64, C);
    }
}

/*
 * dst rows [0, S) x columns [0, S) from src rows [0, S) x columns [0, S)
 * (dst[r][c] = src[c][r]) for items of `size` bytes (1, 2 or 4), S = 64 /
 * size, so that a row of the square is one 64-byte line: through `sq` (S
 * lines), whose lines go to dst with non-temporal stores (dst and drs:
 * whole lines).  2- and 4-byte squares are four blocks of block_16x16_2
 * or block_8x8_4.
 */
static inline __attribute__((always_inline)) ATTR_AVX512 void
square_lines(char *dst, ptrdiff_t drs, const char *src, ptrdiff_t srs,
             char *sq, size_t size)
{
    const int side = (int)(64 / size);

    if (size == 1) {
        square_64_1(dst, drs, src, srs, sq, true);
        return;
    }
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 2; j++) {
            /* src rows side / 2 * i on, columns side / 2 * j on: sq rows
             * side / 2 * j on, 32 bytes * i in */
            char *to = sq + (ptrdiff_t)(side / 2 * j * 64 + 32 * i);
            const char *from = src + (ptrdiff_t)(side / 2 * i) * srs + 32 * j;
            if (size == 2) {
                block_16x16_2(to, 64, from, srs);
            } else {
                block_8x8_4(to, 64, from, srs);
            }
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < side; r++) {
        _mm512_stream_si512((void *)(dst + r * drs),
                            _mm512_load_si512(sq + r * 64));
    }
}

/*
 * A large 2-D transpose of 1-, 2- or 4-byte items whose extents are whole
 * squares (nrtemu__transpose_bands) by bands of S = 64 / size rows of src:
 * each band is one run of memory, read square by square along it while the
 * next band is prefetched in memory order, and its squares go to dst, S
 * whole lines in S rows, with non-temporal stores.  Such a call is
 * usually cold (its operands out of the caches): the tiles of
 * nrtemu__transpose_2d read a strip of 64 or 256 bytes of each row of src,
 * rows some KiB apart, which the prefetchers do not follow, and every line of
 * dst is first read from memory (write-allocate).  By bands the median
 * call is faster, cold and warm, on one thread and on two, for 1-byte
 * items as for the 2- and 4-byte ones that nrtemu__transpose_2d takes by 16 x
 * 16 and 8 x 8 blocks (32-byte pieces of dst lines, each line read first), and
 * about as fast as np.copyto of the same bytes.  The same order with plain
 * stores is slower, cold and warm; the huge pages of the tensors
 * (host_memory.c) leave the TLB out of it (touching every page of both
 * before a cold call changes it little).
 */
static ATTR_AVX512 void
transpose_bands_avx512(char *dst, ptrdiff_t drs, const char *src,
                       ptrdiff_t srs, uint64_t R, uint64_t C, size_t size)
{
    _Alignas(64) char sq[64 * 64];
    const uint64_t side = 64 / size;
    uint64_t lines = R * size / 64; /* of a row of src */

    for (uint64_t c = 0; c < C; c += side) {
        const char *band = src + (ptrdiff_t)c * srs;
        const char *next = band + (ptrdiff_t)side * srs;
        uint64_t prow = 0, pline = 0;
        for (uint64_t r = 0; r < R; r += side) {
            /* a square's share of the next band: `side` of its lines, in
             * memory order (the band has `side` a square) */
            for (uint64_t k = 0; k < side && c + side < C; k++) {
                __builtin_prefetch(next + (ptrdiff_t)prow * srs +
                                   (ptrdiff_t)(pline * 64));
                if (++pline == lines) {
                    pline = 0;
                    prow++;
                }
            }
            square_lines(dst + (ptrdiff_t)r * drs + (ptrdiff_t)(c * size), drs,
                         band + (ptrdiff_t)(r * size), srs, sq, size);
        }
    }
    _mm_sfence();
}

struct bands_job {
    char *dst;
    const char *src;
    uint64_t R, C; /* out rows and columns */
    size_t size;   /* of an item */
    uint32_t tasks;
};

/* Piece t of a bands job: a range of whole bands (columns of dst). */
static void
bands_task(void *arg, uint32_t t)
{
    const struct bands_job *j = arg;
    const uint64_t side = 64 / j->size, bands = j->C / side;
    uint64_t b0 = bands * t / j->tasks, b1 = bands * (t + 1) / j->tasks;

    if (b1 > b0) {
        transpose_bands_avx512(
            j->dst + b0 * side * j->size, (ptrdiff_t)(j->C * j->size),
            j->src + b0 * side * j->R * j->size, (ptrdiff_t)(j->R * j->size),
            j->R, (b1 - b0) * side, j->size);
    }
}
#endif

/* Outs of at least this many bytes go by bands (nrtemu__transpose_bands):
 * smaller ones stay in the cache for what reads them next. */
#define TRANSPOSE_BANDS_MIN ((uint64_t)1 << 21)

/*
 * out = in transposed (perm 1, 0) by bands when that applies: items of 1,
 * 2 or 4 bytes, extents multiples of the square's side (64 / size), both
 * arrays on 64-byte boundaries, an out of TRANSPOSE_BANDS_MIN bytes at
 * least, a CPU with AVX-512 BW.  False, nothing written, otherwise.
 */
bool
nrtemu__transpose_bands(const struct nrtemu_array *out,
                        const struct nrtemu_array *in, const uint32_t *perm)
{
#if NRTEMU_X86_CLONES
    size_t size = nrtemu__dtype_size(out->dtype);
    struct bands_job j = {out->data, in->data, 0, 0, size, 1};
    uint64_t side = size != 0 ? 64 / size : 0;

    if (out->ndim != 2 || perm[0] != 1 ||
        (size != 1 && size != 2 && size != 4) ||
        nrtemu__dtype_size(in->dtype) != size) {
        return false;
    }
    j.R = out->shape[0];
    j.C = out->shape[1];
    if (j.R % side != 0 || j.C % side != 0 ||
        j.R * j.C * size < TRANSPOSE_BANDS_MIN ||
        (uintptr_t)out->data % 64 != 0 || (uintptr_t)in->data % 64 != 0) {
        return false;
    }
    if (!nrtemu__cpu_has(NRTEMU_CPU_V4)) {
        return false;
    }
    j.tasks = nrtemu__layout_tasks((size_t)(j.R * j.C * size));
    j.tasks = j.tasks < j.C / side ? j.tasks : (uint32_t)(j.C / side);
    nrtemu__pool_run(bands_task, &j, j.tasks);
    return true;
#else
    (void)out, (void)in, (void)perm;
    return false;
#endif
}

static void
transpose_2d_part(char *dst, ptrdiff_t drs, const char *src, ptrdiff_t srs,
                  uint64_t R, uint64_t C, size_t size)
{
#if NRTEMU_X86_CLONES
    if (nrtemu__cpu_has(NRTEMU_CPU_V3)) {
        switch (size) {
        case 1:
            if (nrtemu__cpu_has(NRTEMU_CPU_V4) && srs % 64 == 0 &&
                drs % 64 == 0) {
                transpose_2d_avx512_1(dst, drs, src, srs, R, C);
            } else {
                transpose_2d_avx2_1(dst, drs, src, srs, R, C);
            }
            return;
        case 2:
            transpose_2d_avx2_2(dst, drs, src, srs, R, C);
            return;
        case 4:
            transpose_2d_avx2_4(dst, drs, src, srs, R, C);
            return;
        default:
            transpose_2d_avx2_8(dst, drs, src, srs, R, C);
            return;
        }
    }
#endif
    switch (size) {
    case 1:
        transpose_2d_1(dst, drs, src, srs, R, C);
        break;
    case 2:
        transpose_2d_2(dst, drs, src, srs, R, C);
        break;
    case 4:
        transpose_2d_4(dst, drs, src, srs, R, C);
        break;
    default:
        transpose_2d_8(dst, drs, src, srs, R, C);
        break;
    }
}

/*
 * The tiles of a large plane go by squares of PART x PART items: a
 * transpose touches a page per row on one side at least (rows of 1024
 * floats and more), and the square keeps the pages it touches few enough
 * for the TLB, and its bytes for the L2 cache, until it is done.
 */
#define PART 256

void
nrtemu__transpose_2d(char *dst, ptrdiff_t drs, const char *src, ptrdiff_t srs,
                     uint64_t R, uint64_t C, size_t size)
{
    for (uint64_t r = 0; r < R; r += PART) {
        for (uint64_t c = 0; c < C; c += PART) {
            transpose_2d_part(dst + (ptrdiff_t)r * drs + (ptrdiff_t)(c * size),
                              drs,
                              src + (ptrdiff_t)c * srs + (ptrdiff_t)(r * size),
                              srs, R - r < PART ? R - r : PART,
                              C - c < PART ? C - c : PART, size);
        }
    }
}
