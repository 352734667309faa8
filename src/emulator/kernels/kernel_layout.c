/*
 * kernel_layout.c - ops that move elements without computing: transpose,
 * broadcast_to and copy, concatenate, slice, take, iota and full.
 *
 * Most of them are one strided gather: the output is walked in C order
 * while the input is read with a stride per output dimension (permuted
 * for transpose, 0 for broadcast, scaled and offset for slice).  Runs
 * that are contiguous in both become memcpy; a transpose, whose input
 * run is strided, is done in tiles that stay in cache, and blocks of them
 * in vector registers (transpose_2d).
 */
#include <stdbool.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/convert.h"
#include "kernels/kernel.h"
#include "kernels/kernel_iter.h"
#include "kernels/kernel_split.h"
#include "kernels/kernel_stream.h"
#include "kernels/pool.h"
#include "kernels/simd.h"

#if NRTEMU_X86_CLONES
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

/*
 * Every other element of 1-, 2- or 4-byte items (a slice with step 2):
 * each pair of items read as one item twice as wide, of which the low
 * half is kept (x86 is little-endian), so that the loop vectorises as
 * loads and narrowing moves.  The last item is copied alone: its pair
 * may end past the source.
 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HAVE_EVERY_OTHER 1
typedef uint16_t u16_any __attribute__((aligned(1), may_alias));
typedef uint32_t u32_any __attribute__((aligned(1), may_alias));
typedef uint64_t u64_any __attribute__((aligned(1), may_alias));
typedef uint8_t u8_any __attribute__((may_alias));
typedef uint16_t u16_any_out __attribute__((aligned(1), may_alias));
typedef uint32_t u32_any_out __attribute__((aligned(1), may_alias));

NRTEMU_MULTIVERSION
static void
copy_every_other(char *dst, const char *src, size_t n, size_t size)
{
    size_t m = n - 1;

    switch (size) {
    case 1:
        for (size_t i = 0; i < m; i++) {
            ((u8_any *)dst)[i] = (uint8_t)((const u16_any *)src)[i];
        }
        break;
    case 2:
        for (size_t i = 0; i < m; i++) {
            ((u16_any_out *)dst)[i] = (uint16_t)((const u32_any *)src)[i];
        }
        break;
    default:
        for (size_t i = 0; i < m; i++) {
            ((u32_any_out *)dst)[i] = (uint32_t)((const u64_any *)src)[i];
        }
        break;
    }
    memcpy(dst + m * size, src + 2 * m * size, size);
}
#else
#define HAVE_EVERY_OTHER 0
#endif

/* Non-temporal copies (kernel_stream.h): 64-byte units, stored with the
 * widest vectors the CPU has. */
#if KSTREAM_HAVE
#if NRTEMU_X86_CLONES
__attribute__((target("avx512f"))) static void
stream_64_avx512(char *d, const char *s, size_t units)
{
    for (size_t i = 0; i < units; i++, d += 64, s += 64) {
        _mm512_stream_si512((void *)d, _mm512_loadu_si512(s));
    }
}

__attribute__((target("avx"))) static void
stream_64_avx(char *d, const char *s, size_t units)
{
    for (size_t i = 0; i < units; i++, d += 64, s += 64) {
        _mm256_stream_si256((__m256i *)d,
                            _mm256_loadu_si256((const __m256i *)s));
        _mm256_stream_si256((__m256i *)(d + 32),
                            _mm256_loadu_si256((const __m256i *)(s + 32)));
    }
}
#endif

static void
stream_64(char *d, const char *s, size_t units)
{
#if NRTEMU_X86_CLONES
    const int w = nrtemu__cpu_has(NRTEMU_CPU_V4)   ? 64
                  : nrtemu__cpu_has(NRTEMU_CPU_V3) ? 32
                                                   : 16;
    if (w == 64) {
        stream_64_avx512(d, s, units);
        return;
    }
    if (w == 32) {
        stream_64_avx(d, s, units);
        return;
    }
#endif
    for (size_t i = 0; i < units; i++, d += 64, s += 64) {
        for (int k = 0; k < 64; k += 16) {
            _mm_stream_si128((__m128i *)(d + k),
                             _mm_loadu_si128((const __m128i *)(s + k)));
        }
    }
}
#endif

void
nrtemu__kstream_copy(void *dst, const void *src, size_t n)
{
#if KSTREAM_HAVE
    char *d = dst;
    const char *s = src;
    size_t head = (size_t)(-(uintptr_t)d & 63);

    if (n < head + 64) {
        memcpy(d, s, n);
        return;
    }
    memcpy(d, s, head);
    stream_64(d + head, s + head, (n - head) / 64);
    memcpy(d + head + (n - head) / 64 * 64, s + head + (n - head) / 64 * 64,
           (n - head) % 64);
#else
    memcpy(dst, src, n);
#endif
}

/* Copy n elements of `size` bytes read with `stride` (in elements). */
static void
copy_run(char *dst, const char *src, ptrdiff_t stride, size_t n, size_t size)
{
    if (stride == 1) {
        memcpy(dst, src, n * size);
        return;
    }
#if HAVE_EVERY_OTHER
    if (stride == 2 && size <= 4 && n > 0) {
        copy_every_other(dst, src, n, size);
        return;
    }
#endif
    switch (size) {
    case 1:
        for (size_t i = 0; i < n; i++) {
            dst[i] = src[(ptrdiff_t)i * stride];
        }
        break;
    case 2: {
        uint16_t *d = (uint16_t *)dst;
        const uint16_t *s = (const uint16_t *)src;
        for (size_t i = 0; i < n; i++) {
            d[i] = s[(ptrdiff_t)i * stride];
        }
        break;
    }
    case 4: {
        uint32_t *d = (uint32_t *)dst;
        const uint32_t *s = (const uint32_t *)src;
        for (size_t i = 0; i < n; i++) {
            d[i] = s[(ptrdiff_t)i * stride];
        }
        break;
    }
    default: {
        uint64_t *d = (uint64_t *)dst;
        const uint64_t *s = (const uint64_t *)src;
        for (size_t i = 0; i < n; i++) {
            d[i] = s[(ptrdiff_t)i * stride];
        }
        break;
    }
    }
}

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
 * output measured slower in this order (transpose_bands has one for
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
 * squares (transpose_bands) by bands of S = 64 / size rows of src: each
 * band is one run of memory, read square by square along it while the
 * next band is prefetched in memory order, and its squares go to dst, S
 * whole lines in S rows, with non-temporal stores.  Such a call is
 * usually cold (its operands out of the caches): the tiles of
 * transpose_2d read a strip of 64 or 256 bytes of each row of src, rows
 * some KiB apart, which the prefetchers do not follow, and every line of
 * dst is first read from memory (write-allocate).  By bands the median
 * call is faster, cold and warm, on one thread and on two, for 1-byte
 * items as for the 2- and 4-byte ones that transpose_2d takes by 16 x 16
 * and 8 x 8 blocks (32-byte pieces of dst lines, each line read first),
 * and about as fast as np.copyto of the same bytes.  The same order with
 * plain stores is slower, cold and warm; the huge pages of the tensors
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

/* Outs of at least this many bytes go by bands (transpose_bands): smaller
 * ones stay in the cache for what reads them next. */
#define TRANSPOSE_BANDS_MIN ((uint64_t)1 << 21)

static uint32_t layout_tasks(size_t bytes);

/*
 * out = in transposed (perm 1, 0) by bands when that applies: items of 1,
 * 2 or 4 bytes, extents multiples of the square's side (64 / size), both
 * arrays on 64-byte boundaries, an out of TRANSPOSE_BANDS_MIN bytes at
 * least, a CPU with AVX-512 BW.  False, nothing written, otherwise.
 */
static bool
transpose_bands(const struct nrtemu_array *out, const struct nrtemu_array *in,
                const uint32_t *perm)
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
    j.tasks = layout_tasks((size_t)(j.R * j.C * size));
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

static void
transpose_2d(char *dst, ptrdiff_t drs, const char *src, ptrdiff_t srs,
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

/* Fill n elements of `size` bytes with the one at `elem`. */
static void
fill(char *dst, const void *elem, size_t n, size_t size)
{
    switch (size) {
    case 1:
        memset(dst, *(const unsigned char *)elem, n);
        break;
    case 2: {
        uint16_t v, *d = (uint16_t *)dst;
        memcpy(&v, elem, 2);
        for (size_t i = 0; i < n; i++) {
            d[i] = v;
        }
        break;
    }
    case 4: {
        uint32_t v, *d = (uint32_t *)dst;
        memcpy(&v, elem, 4);
        for (size_t i = 0; i < n; i++) {
            d[i] = v;
        }
        break;
    }
    default: {
        uint64_t v, *d = (uint64_t *)dst;
        memcpy(&v, elem, 8);
        for (size_t i = 0; i < n; i++) {
            d[i] = v;
        }
        break;
    }
    }
}

/*
 * The 2-D transposes of a collapsed gather whose input is contiguous
 * along output dimension p (it->stride[0][p] == 1) but not along the last
 * one: one per index of the other outer dimensions, walked in C order.
 */
static void
gather_transposed(const struct kiter *it, int p, char *dst, const char *src,
                  size_t size)
{
    int last = it->ndim - 1;
    struct kiter o;
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    ptrdiff_t off[2] = {0, 0};
    uint64_t outer;

    /* The other outer dimensions, then a placeholder inner one of size 1
     * (kiter_next steps all but the last). */
    memset(&o, 0, sizeof o);
    o.nops = 2;
    for (int d = 0; d < last; d++) {
        if (d != p) {
            o.shape[o.ndim] = it->shape[d];
            o.stride[0][o.ndim] = it->stride[0][d];
            o.stride[1][o.ndim] = it->stride[1][d];
            o.ndim++;
        }
    }
    o.shape[o.ndim++] = 1;
    outer = kiter_outer_count(&o);
    for (uint64_t k = 0; k < outer; k++) {
        transpose_2d(dst + off[1] * (ptrdiff_t)size,
                     it->stride[1][p] * (ptrdiff_t)size,
                     src + off[0] * (ptrdiff_t)size,
                     it->stride[0][last] * (ptrdiff_t)size, it->shape[p],
                     it->shape[last], size);
        kiter_next(&o, idx, off);
    }
}

/* memcpy out of line: inlined with the bound RUN_PREFETCH known, GCC
 * makes it rep movsq, which copies runs of a few KiB slower than the C
 * library's vector copy. */
__attribute__((noinline)) static void
copy_bytes(char *dst, const char *src, size_t n)
{
    memcpy(dst, src, n);
}

/* Contiguous runs up to this many bytes are prefetched one ahead by
 * gather (measured faster on permutations that keep a short last axis;
 * longer runs are left to memcpy and the hardware prefetchers). */
#define RUN_PREFETCH 4096

/*
 * out (contiguous, its own shape) = the elements of `src` read with
 * `strides` (elements, per out dimension), on the calling thread.
 */
static void
gather_serial(const struct nrtemu_array *out, const char *src,
              const ptrdiff_t *strides)
{
    size_t size = nrtemu__dtype_size(out->dtype);
    struct kiter it;
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    ptrdiff_t off[2] = {0, 0};
    uint64_t outer;
    size_t len;
    ptrdiff_t st;
    char *dst = out->data;

    if (nrtemu__array_count(out) == 0) {
        return;
    }
    kiter_init(&it, out->ndim, out->shape, 2);
    for (uint32_t d = 0; d < out->ndim; d++) {
        it.stride[0][d] = strides[d];
    }
    kiter_broadcast(&it, 1, out->ndim, out->shape);
    kiter_collapse(&it);
    len = it.shape[it.ndim - 1];
    st = it.stride[0][it.ndim - 1];

    if (st != 1 && st != 0) {
        /* The input is contiguous along another dimension (a transpose,
         * or a slice of one): transpose tiles. */
        for (int p = it.ndim - 2; p >= 0; p--) {
            if (it.stride[0][p] == 1) {
                gather_transposed(&it, p, dst, src, size);
                return;
            }
        }
    }
    outer = kiter_outer_count(&it);
    if (st == 1 && len * size <= RUN_PREFETCH) {
        /* Short contiguous runs far apart (a permutation that keeps the
         * last axis): fetch the next run while copying this one. */
        const char *s = src;
        char *d = dst;
        for (uint64_t o = 0; o < outer; o++) {
            const char *next;
            kiter_next(&it, idx, off);
            next = src + off[0] * (ptrdiff_t)size;
            /* A broadcast copies the same run again: it is in L1. */
            for (size_t k = 0; next != s && k < len * size; k += 64) {
                __builtin_prefetch(next + k);
            }
            copy_bytes(d, s, len * size);
            s = next;
            d = dst + off[1] * (ptrdiff_t)size;
        }
        return;
    }
    for (uint64_t o = 0; o < outer; o++) {
        const char *s = src + off[0] * (ptrdiff_t)size;
        char *d = dst + off[1] * (ptrdiff_t)size;
        if (st == 0) {
            fill(d, s, len, size);
        } else {
            copy_run(d, s, st, len, size);
        }
        kiter_next(&it, idx, off);
    }
}

/*
 * Layout ops whose out has at least LAYOUT_SPLIT_MIN bytes run on the
 * worker pool, LAYOUT_PER_THREAD pieces of the out per thread
 * (kernel_split.h), claimed by the threads as they come: they only move
 * bytes, so pieces are as exact as one pass.  Below it, where a copy takes
 * little longer than a parked worker takes to wake, waking the pool costs
 * about what a second thread saves.
 */
#ifndef LAYOUT_SPLIT_MIN
#define LAYOUT_SPLIT_MIN ((size_t)1 << 20)
#endif
#define LAYOUT_PER_THREAD 4

/* At most this many pieces. */
#define LAYOUT_MAX_TASKS 64

/* The pieces for an out of `bytes`, of LAYOUT_SPLIT_MIN / 2 bytes at
 * least: 1 to stay on the caller. */
static uint32_t
layout_tasks(size_t bytes)
{
    uint64_t threads = nrtemu__pool_threads();
    uint64_t tasks = threads * LAYOUT_PER_THREAD;

    if (threads < 2 || bytes < LAYOUT_SPLIT_MIN) {
        return 1;
    }
    tasks = tasks < bytes / (LAYOUT_SPLIT_MIN / 2)
                ? tasks
                : bytes / (LAYOUT_SPLIT_MIN / 2);
    return tasks < LAYOUT_MAX_TASKS ? (uint32_t)tasks : LAYOUT_MAX_TASKS;
}

struct gather_job {
    const struct nrtemu_array *out;
    const char *src;
    const ptrdiff_t *strides;
    struct ksplit plan;
    uint32_t tasks;
};

/* Piece t of a gather: each of its boxes is a gather of its own. */
static void
gather_task(void *arg, uint32_t t)
{
    const struct gather_job *job = arg;
    const struct nrtemu_array *out = job->out;
    size_t size = nrtemu__dtype_size(out->dtype);
    uint32_t dim = job->plan.dim;
    struct kbox b;
    uint64_t row, end;

    ksplit_piece(&job->plan, t, job->tasks, &row, &end);
    while (ksplit_box(&job->plan, &row, end, &b)) {
        struct nrtemu_array view = {.dtype = out->dtype};
        ptrdiff_t from = (ptrdiff_t)b.start * job->strides[dim];
        uint64_t off = ksplit_view(&job->plan, &b, out->ndim, out->shape,
                                   &view.ndim, view.shape);
        for (uint32_t e = 0; e < dim; e++) {
            from += (ptrdiff_t)b.lead[e] * job->strides[e];
        }
        view.data = (char *)out->data + off * size;
        gather_serial(&view, job->src + from * (ptrdiff_t)size,
                      job->strides + dim);
    }
}

static void
gather(const struct nrtemu_array *out, const char *src,
       const ptrdiff_t *strides)
{
    uint64_t count = nrtemu__array_count(out);
    struct gather_job job = {out, src, strides, {0}, 1};

    if (out->ndim > 0) {
        job.tasks = layout_tasks(count * nrtemu__dtype_size(out->dtype));
    }
    if (job.tasks > 1) {
        ksplit_plan(&job.plan, out->ndim, out->shape, job.tasks);
        job.tasks =
            job.plan.rows < job.tasks ? (uint32_t)job.plan.rows : job.tasks;
    }
    if (job.tasks <= 1) {
        gather_serial(out, src, strides);
        return;
    }
    nrtemu__pool_run(gather_task, &job, job.tasks);
}

/* C-order strides of `a`, in elements. */
static void
contiguous_strides(const struct nrtemu_array *a, ptrdiff_t *strides)
{
    ptrdiff_t st = 1;

    for (int d = (int)a->ndim - 1; d >= 0; d--) {
        strides[d] = st;
        st *= (ptrdiff_t)a->shape[d];
    }
}

void
nrtemu__kernel_transpose(const struct nrtemu_array *out,
                         const struct nrtemu_array *in, const uint32_t *perm)
{
    ptrdiff_t in_strides[NRTEMU_MAX_DIMS], strides[NRTEMU_MAX_DIMS];

    if (transpose_bands(out, in, perm)) {
        return;
    }
    contiguous_strides(in, in_strides);
    for (uint32_t d = 0; d < out->ndim; d++) {
        strides[d] = in_strides[perm[d]];
    }
    gather(out, in->data, strides);
}

void
nrtemu__kernel_broadcast(const struct nrtemu_array *out,
                         const struct nrtemu_array *in)
{
    struct kiter it;
    ptrdiff_t strides[NRTEMU_MAX_DIMS];

    /* kiter_broadcast computes the broadcast strides; gather collapses. */
    kiter_init(&it, out->ndim, out->shape, 1);
    kiter_broadcast(&it, 0, in->ndim, in->shape);
    for (uint32_t d = 0; d < out->ndim; d++) {
        strides[d] = it.stride[0][d];
    }
    gather(out, in->data, strides);
}

void
nrtemu__kernel_slice(const struct nrtemu_array *out,
                     const struct nrtemu_array *in, const int64_t *start,
                     const int64_t *step)
{
    ptrdiff_t in_strides[NRTEMU_MAX_DIMS], strides[NRTEMU_MAX_DIMS];
    ptrdiff_t base = 0;
    size_t size = nrtemu__dtype_size(in->dtype);

    contiguous_strides(in, in_strides);
    for (uint32_t d = 0; d < in->ndim; d++) {
        base += (ptrdiff_t)start[d] * in_strides[d];
        strides[d] = (ptrdiff_t)step[d] * in_strides[d];
    }
    gather(out, (const char *)in->data + base * (ptrdiff_t)size, strides);
}

/*
 * The rows of the update (its last dimension) go out one at a time: a
 * copy of the row when its step is 1 (a box of whole runs), else an
 * element at a time.
 */
void
nrtemu__kernel_update_slice(const struct nrtemu_array *out,
                            const struct nrtemu_array *operand,
                            const struct nrtemu_array *update,
                            const int64_t *start, const int64_t *step)
{
    ptrdiff_t strides[NRTEMU_MAX_DIMS], base = 0, row_step;
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    uint64_t count = nrtemu__array_count(update), row;
    size_t size = nrtemu__dtype_size(out->dtype);
    uint32_t nd = out->ndim;
    const char *u = update->data;
    char *o = out->data;

    if (out->data != operand->data) {
        nrtemu__kernel_copy_bytes(out->data, operand->data,
                                  nrtemu__array_count(out) * size);
    }
    if (count == 0) {
        return;
    }
    contiguous_strides(out, strides);
    for (uint32_t d = 0; d < nd; d++) {
        base += (ptrdiff_t)start[d] * strides[d];
    }
    if (nd == 0) {
        memcpy(o, u, size);
        return;
    }
    row = update->shape[nd - 1];
    row_step = (ptrdiff_t)step[nd - 1] * strides[nd - 1];
    for (uint64_t done = 0; done < count; done += row) {
        ptrdiff_t off = base;
        for (uint32_t d = 0; d + 1 < nd; d++) {
            off += (ptrdiff_t)idx[d] * (ptrdiff_t)step[d] * strides[d];
        }
        if (row_step == 1) {
            memcpy(o + off * (ptrdiff_t)size, u, row * size);
        } else {
            for (uint64_t i = 0; i < row; i++) {
                memcpy(o + (off + (ptrdiff_t)i * row_step) * (ptrdiff_t)size,
                       u + i * size, size);
            }
        }
        u += row * size;
        for (int d = (int)nd - 2; d >= 0; d--) {
            if (++idx[d] < update->shape[d]) {
                break;
            }
            idx[d] = 0;
        }
    }
}

/*
 * A concatenation is one run of bytes per operand per index of the outer
 * dimensions (those before the axis).  Piece t of `tasks` copies the
 * outer indices of its share when there are enough of them, else its
 * share of every run.
 */
struct concat_job {
    const struct nrtemu_array *out;
    const struct nrtemu_array *in;
    int n_in;
    uint32_t axis;
    uint64_t outer, inner;
    uint32_t tasks;
    bool stream; /* kernel_stream.h */
};

static void
concat_task(void *arg, uint32_t t)
{
    const struct concat_job *job = arg;
    size_t size = nrtemu__dtype_size(job->out->dtype);
    uint64_t total = job->out->shape[job->axis], at = 0;
    bool by_outer = job->outer >= job->tasks;
    uint64_t o0 = by_outer ? job->outer * t / job->tasks : 0;
    uint64_t o1 = by_outer ? job->outer * (t + 1) / job->tasks : job->outer;

    for (int k = 0; k < job->n_in; k++) {
        uint64_t n = job->in[k].shape[job->axis];
        size_t run = n * job->inner * size;
        size_t lo = by_outer ? 0 : run / job->tasks * t / 64 * 64;
        size_t hi = by_outer || t + 1 == job->tasks
                        ? run
                        : run / job->tasks * (t + 1) / 64 * 64;
        for (uint64_t o = o0; o < o1 && hi > lo; o++) {
            char *d = (char *)job->out->data +
                      ((o * total + at) * job->inner) * size + lo;
            const char *src = (const char *)job->in[k].data + o * run + lo;
            if (job->stream) {
                kstream_copy(d, src, hi - lo);
            } else {
                memcpy(d, src, hi - lo);
            }
        }
        at += n;
    }
    if (job->stream) {
        kstream_fence();
    }
}

void
nrtemu__kernel_concatenate(const struct nrtemu_array *out,
                           const struct nrtemu_array *in, int n_in,
                           uint32_t axis)
{
    struct concat_job job = {out, in, n_in, axis, 1, 1, 1, false};
    uint64_t count = nrtemu__array_count(out);
    uint64_t bytes = count * nrtemu__dtype_size(out->dtype);

    /* Empty: the loops below could still count up to 2^56 iterations
     * over the other dimensions. */
    if (count == 0) {
        return;
    }
    for (uint32_t d = 0; d < axis; d++) {
        job.outer *= out->shape[d];
    }
    for (uint32_t d = axis + 1; d < out->ndim; d++) {
        job.inner *= out->shape[d];
    }
    job.tasks = layout_tasks(bytes);
    job.stream = kstream_wanted(2 * bytes, bytes);
    if (job.tasks > 1) {
        nrtemu__pool_run(concat_task, &job, job.tasks);
    } else {
        concat_task(&job, 0);
    }
}

/* memcpy of many bytes in pieces on the pool (whole cache lines each),
 * streamed past the cache when they outgrow it. */
struct copy_job {
    char *dst;
    const char *src;
    size_t bytes;
    uint32_t tasks;
    bool stream; /* kernel_stream.h */
};

static void
copy_task(void *arg, uint32_t t)
{
    const struct copy_job *job = arg;
    size_t lo = job->bytes / job->tasks * t / 64 * 64;
    size_t hi = t + 1 == job->tasks
                    ? job->bytes
                    : job->bytes / job->tasks * (t + 1) / 64 * 64;

    if (hi > lo && job->stream) {
        kstream_copy(job->dst + lo, job->src + lo, hi - lo);
        kstream_fence();
    } else if (hi > lo) {
        memcpy(job->dst + lo, job->src + lo, hi - lo);
    }
}

void
nrtemu__kernel_copy_bytes(void *dst, const void *src, size_t bytes)
{
    struct copy_job job = {dst, src, bytes, layout_tasks(bytes),
                           kstream_wanted(2 * (uint64_t)bytes, bytes)};
    const char *d = dst, *s = src;

    if (d < s + bytes && s < d + bytes) {
        memmove(dst, src, bytes); /* overlapping: one pass keeps the order */
    } else if (job.tasks > 1) {
        nrtemu__pool_run(copy_task, &job, job.tasks);
    } else {
        copy_task(&job, 0);
    }
}

NRT_STATUS
nrtemu__kernel_take(const struct nrtemu_array *out,
                    const struct nrtemu_array *data,
                    const struct nrtemu_array *indices, uint32_t axis,
                    int64_t *bad_index, struct nrtemu_scratch *s)
{
    size_t size = nrtemu__dtype_size(data->dtype);
    uint64_t outer = 1, inner = 1, n = data->shape[axis];
    uint64_t count = nrtemu__array_count(indices);
    int64_t *idx;

    for (uint32_t d = 0; d < axis; d++) {
        outer *= data->shape[d];
    }
    for (uint32_t d = axis + 1; d < data->ndim; d++) {
        inner *= data->shape[d];
    }
    idx = nrtemu__scratch_get(s, count * sizeof *idx);
    if (idx == NULL) {
        return NRT_RESOURCE;
    }
    /* Check every index before writing anything; negative ones count
     * from the end, as in NumPy. */
    nrtemu__convert(NRTEMU_DTYPE_INT64, idx, indices->dtype, indices->data, 1,
                    count);
    for (uint64_t i = 0; i < count; i++) {
        int64_t v = idx[i];
        if (v < -(int64_t)n || v >= (int64_t)n) {
            *bad_index = v;
            return NRT_EXEC_OOB;
        }
        idx[i] = v < 0 ? v + (int64_t)n : v;
    }
    if (outer * inner * count == 0) {
        return NRT_SUCCESS;
    }
    for (uint64_t o = 0; o < outer; o++) {
        const char *src = (const char *)data->data + o * n * inner * size;
        char *dst = (char *)out->data + o * count * inner * size;
        if (inner == 1 && size == 4) {
            const uint32_t *s32 = (const uint32_t *)src;
            uint32_t *d32 = (uint32_t *)dst;
            for (uint64_t i = 0; i < count; i++) {
                d32[i] = s32[idx[i]];
            }
            continue;
        }
        for (uint64_t i = 0; i < count; i++) {
            memcpy(dst + i * inner * size,
                   src + (uint64_t)idx[i] * inner * size, inner * size);
        }
    }
    return NRT_SUCCESS;
}

void
nrtemu__kernel_iota(const struct nrtemu_array *out, uint32_t axis)
{
    size_t size = nrtemu__dtype_size(out->dtype);
    uint64_t outer = 1, inner = 1, n;
    unsigned char elem[8];
    char *dst = out->data;

    if (out->ndim == 0) {
        int64_t zero = 0;
        nrtemu__convert(out->dtype, dst, NRTEMU_DTYPE_INT64, &zero, 1, 1);
        return;
    }
    /* Empty: the loops below could still count up to 2^56 iterations. */
    if (nrtemu__array_count(out) == 0) {
        return;
    }
    n = out->shape[axis];
    for (uint32_t d = 0; d < axis; d++) {
        outer *= out->shape[d];
    }
    for (uint32_t d = axis + 1; d < out->ndim; d++) {
        inner *= out->shape[d];
    }
    for (uint64_t i = 0; i < n; i++) {
        int64_t v = (int64_t)i;
        nrtemu__convert(out->dtype, elem, NRTEMU_DTYPE_INT64, &v, 1, 1);
        for (uint64_t o = 0; o < outer; o++) {
            fill(dst + ((o * n + i) * inner) * size, elem, inner, size);
        }
    }
}

void
nrtemu__kernel_full(const struct nrtemu_array *out, const void *value)
{
    fill(out->data, value, nrtemu__array_count(out),
         nrtemu__dtype_size(out->dtype));
}
