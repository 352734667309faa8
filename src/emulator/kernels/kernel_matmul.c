/*
 * kernel_matmul.c - np.matmul: batched GEMM for float32, float64 and the
 * integers.
 *
 * Floats use a cache-blocked GEMM in the manner of GotoBLAS/BLIS: for each
 * KC x NC panel of B (packed into NR-wide slivers) and MC x KC block of A
 * (packed into MR-tall slivers), a register-tiled micro-kernel computes
 * MR x NR tiles of C with vector FMAs, keeping the tile in registers for
 * the whole depth.  The micro-kernel is written with GCC vector extensions
 * and compiled for AVX-512, AVX2+FMA and the baseline; the best one the
 * CPU runs is chosen once.  Rows left below a multiple of the tile's
 * height go to a shorter tile rather than to padding.  bfloat16 and
 * float16 operands are decoded to float32 (exactly) while they are
 * packed, so they cost no pass over the whole operand and accumulate in
 * float32 at the speed of float32; the AVX512_BF16 dot product
 * (vdpbf16ps) is not used: it flushes subnormals and rounds differently
 * from a float32 FMA, and the results must be those of the float32
 * product of the decoded operands, bit for bit.
 * Small products (gemm_is_small) pack nothing: their operands stay in
 * L1 and L2 anyway, and packing cost a sixth of 64 x 64 x 64.
 * Large products are split over the shared worker pool (pool.h) by
 * columns of C (or rows, or whole matrices of a batch); each task packs
 * its own panels.  A product with a single row or column streams its
 * matrix operand instead (DEFINE_GEMV); a large vector x matrix is split
 * by depth as well (vecmat_split), so that each thread reads whole rows.
 * Integers use a plain loop (wrapping arithmetic).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/convert.h"
#include "kernels/kernel.h"
#include "kernels/kernel_iter.h"
#include "kernels/pool.h"
#include "kernels/simd.h"

#if NRTEMU_X86_CLONES
#include <immintrin.h>
#endif

/* Threads one product runs on, at most; it is cut into up to
 * NRTEMU_POOL_TASKS_PER_THREAD tasks for each (pool.h). */
#define MAX_THREADS 8
#define MAX_TASKS (MAX_THREADS * NRTEMU_POOL_TASKS_PER_THREAD)
/* Products under this many multiply-adds run on the calling thread. */
#define THREAD_MIN_WORK ((uint64_t)1 << 22)
/* A product is cut into more tasks than threads only while each task keeps
 * this many multiply-adds: every task packs its own panels, which at mid
 * sizes costs more than handing tasks out as threads free up gains. */
#define TASK_MIN_WORK ((uint64_t)1 << 28)

/* Blocking in elements, for cores of 32 KiB L1 and 1 MiB L2: an MR x KC
 * sliver of A and the tile's lines of B stream through L1, the MC x KC
 * block of A (216 KiB) stays in L2, the KC x NC panel of B in L3.  KC
 * 384 to 512 run alike; 256 is slower on large products for the extra
 * passes over C. */
#define KC 384
#define MC 144
#define NC 3072

/*
 * How the float GEMM reads A and B: as its own element type, or, for
 * float32 only, as bfloat16 or float16 decoded exactly on the way into
 * registers or packing buffers.
 */
enum src_kind { SRC_NATIVE, SRC_BF16, SRC_F16 };

#if defined(__FLT16_MAX__)
#define HAVE_FLOAT16 1
#else
#define HAVE_FLOAT16 0
#endif

/* One instruction (vcvtph2ps) in the AVX2 and AVX-512 clones. */
NRTEMU_INLINE float
f16_f(uint16_t h)
{
#if HAVE_FLOAT16
    _Float16 x;
    memcpy(&x, &h, sizeof x);
    return (float)x;
#else
    return nrtemu__half_to_float(h);
#endif
}

typedef uint16_t u16x4 __attribute__((vector_size(8)));
typedef uint32_t u32x4 __attribute__((vector_size(16)));
typedef float f32x4 __attribute__((vector_size(16)));

NRTEMU_INLINE f32x4
bf16x4_f(u16x4 h)
{
    u32x4 w = __builtin_convertvector(h, u32x4) << 16;
    f32x4 f;
    memcpy(&f, &w, sizeof f);
    return f;
}

/*
 * float16 bits (zero-extended into 32-bit lanes) to float32, exactly, in
 * plain vector arithmetic (GCC 12 converts _Float16 vectors an element at
 * a time): the exponent and mantissa shifted into float32's places read
 * as a float32 2^112 times too small, normal or subnormal, which one
 * exact multiply corrects; infinities and NaNs take float32's maximum
 * exponent instead (NaNs keep their payload and become quiet, as
 * vcvtph2ps makes them).
 */
#define DEFINE_F16_DECODE(NAME, UV, FV)                                     \
    NRTEMU_INLINE void NAME(FV *out, const UV *h)                           \
    {                                                                       \
        const UV em = *h & 0x7fff, sign = (*h & 0x8000) << 16;              \
        const UV big = (UV)(em >= 0x7c00);                                  \
        const UV nan = (UV)(em > 0x7c00);                                   \
        const FV scale = (FV){0} + 0x1p112f;                                \
        UV bits = em << 13, special = bits | 0x7f800000 | (nan & 0x400000); \
        FV f;                                                               \
        memcpy(&f, &bits, sizeof f);                                        \
        f *= scale;                                                         \
        memcpy(&bits, &f, sizeof bits);                                     \
        bits = ((bits & ~big) | (special & big)) | sign;                    \
        memcpy(out, &bits, sizeof bits);                                    \
    }

DEFINE_F16_DECODE(f16x4_decode, u32x4, f32x4)

NRTEMU_INLINE f32x4
f16x4_f(u16x4 h)
{
    u32x4 w = __builtin_convertvector(h, u32x4);
    f32x4 f;
    f16x4_decode(&f, &w);
    return f;
}

/* One GEMM: C (M x N, row stride ldc) = A (M x K) * B (K x N). */
struct gemm_args {
    enum src_kind src; /* of A and B */
    size_t M, N, K;
    const void *A;
    size_t lda;
    const void *B;
    size_t ldb;
    void *C;
    size_t ldc;
};

/* Products of depth at most KC, up to this many multiply-adds, with A
 * and B together in at most SMALL_BYTES, skip packing (DEFINE_GEMM's
 * gemm_small).  bfloat16 operands, decoded as they are read, only up to
 * a quarter of that: an element of A decoded once per sliver of B costs
 * more than packing it once (128^3 lost 7%, 64^3 gained 7%); float16 ones
 * never (decoding a scalar costs more again: 64^3 lost 20%). */
#define SMALL_WORK ((uint64_t)1 << 21)
#define SMALL_BYTES ((size_t)256 << 10)

static bool
gemm_is_small(const struct gemm_args *g, size_t esize)
{
    uint64_t work = (uint64_t)g->M * g->N * g->K;

    if (g->src == SRC_F16 || g->K > KC ||
        work > (g->src == SRC_BF16 ? SMALL_WORK / 4 : SMALL_WORK)) {
        return false;
    }
    return (g->M * g->lda + g->K * g->ldb) *
               (g->src == SRC_NATIVE ? esize : 2) <=
           SMALL_BYTES;
}

/*
 * The MR x (NV * VL) micro-kernel of DEFINE_GEMM: C[0:m, 0:n] (+)= the
 * tile of the packed sliver `ap` (MR rows interleaved) times the packed
 * sliver `bp` (NV * VL columns) over depth kc, for m <= MR and
 * n <= NV * VL.  Rows past m are computed (zeros) but never stored.
 * Meanwhile it prefetches the first and last byte (pf_last bytes on) of
 * `pf_rows` rows from `pf`, `pf_ld` bytes apart.
 */
#define DEFINE_MICRO(NAME, ATTR, T, VL, MR, NV)                               \
    ATTR static inline __attribute__((always_inline)) void NAME##_micro##MR(  \
        size_t kc, const T *restrict ap, const T *restrict bp, T *restrict c, \
        size_t ldc, bool first, size_t m, size_t n, const char *pf,           \
        size_t pf_ld, size_t pf_last, size_t pf_rows)                         \
    {                                                                         \
        NAME##_vec acc[MR][NV];                                               \
        _Pragma("GCC unroll 32") for (int i = 0; i < MR; i++)                 \
        {                                                                     \
            /* The tile of C is read or written once the depth is done:       \
             * its first and last line of each row start coming now. */       \
            if ((size_t)i < m) {                                              \
                __builtin_prefetch(c + i * ldc, 1, 3);                        \
                __builtin_prefetch(c + i * ldc + n - 1, 1, 3);                \
            }                                                                 \
            _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++)              \
            {                                                                 \
                acc[i][j] = (NAME##_vec){0};                                  \
            }                                                                 \
        }                                                                     \
        for (size_t p = 0; p < kc; p++) {                                     \
            NAME##_vec bv[NV];                                                \
            /* Rows of the next sliver of B, from memory (see gemm). */       \
            if (p < pf_rows) {                                                \
                __builtin_prefetch(pf + p * pf_ld, 0, 3);                     \
                __builtin_prefetch(pf + p * pf_ld + pf_last, 0, 3);           \
            }                                                                 \
            _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++)              \
            {                                                                 \
                bv[j] = *(const NAME##_vec *)(bp + (p * NV + j) * VL);        \
            }                                                                 \
            _Pragma("GCC unroll 32") for (int i = 0; i < MR; i++)             \
            {                                                                 \
                /* x - 0 is x for every x (x + 0 is not, for -0), so          \
                 * this is a plain broadcast, folded into the FMA. */         \
                NAME##_vec av = ap[p * MR + i] - (NAME##_vec){0};             \
                _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++)          \
                {                                                             \
                    acc[i][j] += av * bv[j];                                  \
                }                                                             \
            }                                                                 \
        }                                                                     \
        /* Whole vectors where they fit in n; the last, partial one of an     \
         * edge tile lane by lane. */                                         \
        _Pragma("GCC unroll 32") for (int i = 0; i < MR; i++)                 \
        {                                                                     \
            T *row = c + i * ldc;                                             \
            if ((size_t)i >= m) {                                             \
                break;                                                        \
            }                                                                 \
            _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++)              \
            {                                                                 \
                if ((size_t)(j + 1) * VL <= n) {                              \
                    NAME##_uvec *cp = (NAME##_uvec *)(row + (size_t)j * VL);  \
                    *cp = first ? acc[i][j] : *cp + acc[i][j];                \
                } else if ((size_t)j * VL < n) {                              \
                    T lane[VL];                                               \
                    memcpy(lane, &acc[i][j], sizeof lane);                    \
                    for (size_t l = 0; (size_t)j * VL + l < n; l++) {         \
                        T *cl = row + (size_t)j * VL + l;                     \
                        *cl = first ? lane[l] : *cl + lane[l];                \
                    }                                                         \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }

/*
 * The micro-kernel of a small product, which packs nothing (DEFINE_GEMM's
 * gemm_small): C[0:m, 0:n] = MR rows of A, `lda` elements apart, each
 * read along the depth an element at a time, times kc rows of B, `ldb`
 * elements apart, each NV * VL columns wide (B itself, or its last sliver
 * copied out with zeros past the edge), both of element kind `sk`,
 * decoded exactly to T as they are read.  Rows past m repeat row m - 1
 * (never stored).  The depth runs from 0 to kc in one pass, as in the
 * packed micro-kernel, so the sums are the same, bit for bit.
 */
#define DEFINE_MICRO_DIRECT(NAME, ATTR, T, VL, MR, NV)                        \
    ATTR static inline __attribute__((always_inline)) void NAME##_direct##MR( \
        size_t kc, const char *a, size_t lda, const char *b, size_t ldb,      \
        T *restrict c, size_t ldc, size_t m, size_t n, enum src_kind sk)      \
    {                                                                         \
        const size_t es = sk == SRC_NATIVE ? sizeof(T) : 2;                   \
        NAME##_vec acc[MR][NV];                                               \
        const char *ar[MR];                                                   \
        _Pragma("GCC unroll 32") for (int i = 0; i < MR; i++)                 \
        {                                                                     \
            ar[i] = a + ((size_t)i < m ? (size_t)i : m - 1) * lda * es;       \
            _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++)              \
            {                                                                 \
                acc[i][j] = (NAME##_vec){0};                                  \
            }                                                                 \
        }                                                                     \
        for (size_t p = 0; p < kc; p++) {                                     \
            NAME##_vec bv[NV];                                                \
            const char *brow = b + p * ldb * es;                              \
            _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++)              \
            {                                                                 \
                if (sk == SRC_NATIVE) {                                       \
                    bv[j] = *(const NAME##_uvec *)(brow + j * VL * es);       \
                } else {                                                      \
                    NAME##_loadv16(                                           \
                        &bv[j], (const uint16_t *)brow + (size_t)j * VL, sk); \
                }                                                             \
            }                                                                 \
            _Pragma("GCC unroll 32") for (int i = 0; i < MR; i++)             \
            {                                                                 \
                T x;                                                          \
                if (sk == SRC_NATIVE) {                                       \
                    x = ((const T *)ar[i])[p];                                \
                } else if (sk == SRC_BF16) {                                  \
                    x = nrtemu__bfloat16_to_float(                            \
                        ((const uint16_t *)ar[i])[p]);                        \
                } else {                                                      \
                    x = f16_f(((const uint16_t *)ar[i])[p]);                  \
                }                                                             \
                NAME##_vec av = x - (NAME##_vec){0};                          \
                _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++)          \
                {                                                             \
                    acc[i][j] += av * bv[j];                                  \
                }                                                             \
            }                                                                 \
        }                                                                     \
        _Pragma("GCC unroll 32") for (int i = 0; i < MR; i++)                 \
        {                                                                     \
            T *row = c + i * ldc;                                             \
            if ((size_t)i >= m) {                                             \
                break;                                                        \
            }                                                                 \
            _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++)              \
            {                                                                 \
                if ((size_t)(j + 1) * VL <= n) {                              \
                    *(NAME##_uvec *)(row + (size_t)j * VL) = acc[i][j];       \
                } else if ((size_t)j * VL < n) {                              \
                    T lane[VL];                                               \
                    memcpy(lane, &acc[i][j], sizeof lane);                    \
                    memcpy(row + (size_t)j * VL, lane,                        \
                           (n - (size_t)j * VL) * sizeof(T));                 \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }

/*
 * The blocked GEMM for element type T, vectors of VL elements and an
 * MR x (NV * VL) register tile, compiled with the function attributes
 * ATTR.  The rows left over below a multiple of MR go to a tile of MR2
 * or MR3 rows (MR > MR2 > MR3), the smallest that holds them, so that a
 * product of 64 rows computes 64 rows, not 72.  `ap` and `bp` are
 * packing buffers of MC * KC and KC * NC elements, 64-byte aligned.
 */
#define DEFINE_GEMM(NAME, ATTR, T, VL, MR, MR2, MR3, NV)                      \
    typedef T NAME##_vec __attribute__((vector_size(VL * sizeof(T))));        \
    typedef T NAME##_v4 __attribute__((vector_size(4 * sizeof(T))));          \
    typedef uint16_t NAME##_h16 __attribute__((vector_size(VL * 2)));         \
    typedef uint32_t NAME##_u32 __attribute__((vector_size(VL * 4)));         \
    typedef float NAME##_f32 __attribute__((vector_size(VL * 4)));            \
    DEFINE_F16_DECODE(NAME##_f16_decode, NAME##_u32, NAME##_f32)              \
    typedef T NAME##_uvec                                                     \
        __attribute__((vector_size(VL * sizeof(T)), aligned(sizeof(T))));     \
    DEFINE_MICRO(NAME, ATTR, T, VL, MR, NV)                                   \
    DEFINE_MICRO(NAME, ATTR, T, VL, MR2, NV)                                  \
    DEFINE_MICRO(NAME, ATTR, T, VL, MR3, NV)                                  \
                                                                              \
    /* The rows of the tile that computes r <= MR rows. */                    \
    static inline size_t NAME##_tile_rows(size_t r)                           \
    {                                                                         \
        return r > MR2 ? MR : r > MR3 ? MR2 : MR3;                            \
    }                                                                         \
                                                                              \
    /* Four elements of a row of A (or B) as T: loaded, or decoded from       \
     * bfloat16 or float16 (exact), four at a time. */                        \
    ATTR static inline __attribute__((always_inline)) void NAME##_load4(      \
        NAME##_v4 *v, const void *src, enum src_kind sk)                      \
    {                                                                         \
        if (sk == SRC_NATIVE) {                                               \
            memcpy(v, src, sizeof *v);                                        \
        } else {                                                              \
            u16x4 h;                                                          \
            f32x4 f;                                                          \
            memcpy(&h, src, sizeof h);                                        \
            f = sk == SRC_BF16 ? bf16x4_f(h) : f16x4_f(h);                    \
            *v = __builtin_convertvector(f, NAME##_v4);                       \
        }                                                                     \
    }                                                                         \
                                                                              \
    /* Slivers of MR rows (the last of tile_rows(rest)), each row's kc        \
     * elements interleaved with the others'; rows past mc are zeros.         \
     * Four rows by four columns at a time, transposed in registers, where    \
     * the sliver's rows are a multiple of four. */                           \
    ATTR static void NAME##_pack_a(size_t mc, size_t kc, const void *a,       \
                                   size_t lda, enum src_kind sk, T *ap)       \
    {                                                                         \
        const size_t es = sk == SRC_NATIVE ? sizeof(T) : 2;                   \
        for (size_t i0 = 0; i0 < mc; i0 += MR) {                              \
            T *dst = ap + i0 * kc;                                            \
            size_t rows = mc - i0 < MR ? mc - i0 : MR;                        \
            size_t w = NAME##_tile_rows(rows), p0 = 0;                        \
            const char *src = (const char *)a + i0 * lda * es;                \
            /* The rows of the next sliver, prefetched a line at a time       \
             * as this one is packed: a sliver reads MR short runs a row      \
             * apart, too short for the hardware prefetcher to learn, and     \
             * a product with few columns spends most of its time             \
             * waiting for A otherwise. */                                    \
            size_t ahead = mc - i0 <= MR       ? 0                            \
                           : mc - i0 - MR < MR ? mc - i0 - MR                 \
                                               : MR;                          \
            const char *next = ahead > 0 ? src + MR * lda * es : src;         \
            if (w % 4 == 0) {                                                 \
                for (; p0 + 4 <= kc; p0 += 4) {                               \
                    if ((p0 * es) % 64 == 0) {                                \
                        for (size_t q = 0; q < ahead; q++) {                  \
                            __builtin_prefetch(next + (q * lda + p0) * es);   \
                        }                                                     \
                    }                                                         \
                    for (size_t i = 0; i < w; i += 4) {                       \
                        NAME##_v4 r[4], t0, t1, t2, t3;                       \
                        _Pragma("GCC unroll 4") for (size_t q = 0; q < 4;     \
                                                     q++)                     \
                        {                                                     \
                            r[q] = (NAME##_v4){0};                            \
                            if (i + q < rows) {                               \
                                NAME##_load4(&r[q],                           \
                                             src + ((i + q) * lda + p0) * es, \
                                             sk);                             \
                            }                                                 \
                        }                                                     \
                        t0 = __builtin_shufflevector(r[0], r[1], 0, 4, 1, 5); \
                        t1 = __builtin_shufflevector(r[0], r[1], 2, 6, 3, 7); \
                        t2 = __builtin_shufflevector(r[2], r[3], 0, 4, 1, 5); \
                        t3 = __builtin_shufflevector(r[2], r[3], 2, 6, 3, 7); \
                        r[0] = __builtin_shufflevector(t0, t2, 0, 1, 4, 5);   \
                        r[1] = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);   \
                        r[2] = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);   \
                        r[3] = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);   \
                        _Pragma("GCC unroll 4") for (size_t q = 0; q < 4;     \
                                                     q++)                     \
                        {                                                     \
                            memcpy(dst + (p0 + q) * w + i, &r[q],             \
                                   sizeof r[q]);                              \
                        }                                                     \
                    }                                                         \
                }                                                             \
            }                                                                 \
            for (size_t i = 0; i < w; i++) {                                  \
                const char *row = src + i * lda * es;                         \
                for (size_t p = p0; p < kc; p++) {                            \
                    T x = 0;                                                  \
                    if (i >= rows) {                                          \
                    } else if (sk == SRC_NATIVE) {                            \
                        x = ((const T *)row)[p];                              \
                    } else if (sk == SRC_BF16) {                              \
                        x = nrtemu__bfloat16_to_float(                        \
                            ((const uint16_t *)row)[p]);                      \
                    } else {                                                  \
                        x = f16_f(((const uint16_t *)row)[p]);                \
                    }                                                         \
                    dst[p * w + i] = x;                                       \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }                                                                         \
                                                                              \
    /* VL bfloat16 or float16 elements decoded to T, exactly. */              \
    ATTR static inline __attribute__((always_inline)) void NAME##_loadv16(    \
        NAME##_vec *v, const uint16_t *src, enum src_kind sk)                 \
    {                                                                         \
        NAME##_h16 h;                                                         \
        NAME##_u32 w;                                                         \
        NAME##_f32 f;                                                         \
        memcpy(&h, src, sizeof h);                                            \
        w = __builtin_convertvector(h, NAME##_u32);                           \
        if (sk == SRC_BF16) {                                                 \
            w <<= 16;                                                         \
            memcpy(&f, &w, sizeof f);                                         \
        } else {                                                              \
            NAME##_f16_decode(&f, &w);                                        \
        }                                                                     \
        *v = __builtin_convertvector(f, NAME##_vec);                          \
    }                                                                         \
                                                                              \
    /* One sliver of B: n <= NV * VL columns, each row's elements             \
     * together, the columns past n zeros. */                                 \
    ATTR static void NAME##_pack_b(size_t kc, size_t n, const void *b,        \
                                   size_t ldb, enum src_kind sk, T *bp)       \
    {                                                                         \
        const size_t nr = (size_t)VL * NV;                                    \
        for (size_t p = 0; p < kc; p++) {                                     \
            T *dst = bp + p * nr;                                             \
            const T *src = (const T *)b + p * ldb;                            \
            const uint16_t *src16 = (const uint16_t *)b + p * ldb;            \
            if (sk == SRC_NATIVE && n == nr) {                                \
                /* A constant size: vector moves, not a call. */              \
                memcpy(dst, src, nr * sizeof(T));                             \
            } else if (sk == SRC_NATIVE) {                                    \
                memcpy(dst, src, n * sizeof(T));                              \
            } else {                                                          \
                size_t j = 0;                                                 \
                for (; j + VL <= n; j += VL) {                                \
                    NAME##_vec v;                                             \
                    NAME##_loadv16(&v, src16 + j, sk);                        \
                    memcpy(dst + j, &v, sizeof v);                            \
                }                                                             \
                for (; j < n; j++) {                                          \
                    dst[j] = sk == SRC_BF16                                   \
                                 ? nrtemu__bfloat16_to_float(src16[j])        \
                                 : f16_f(src16[j]);                           \
                }                                                             \
            }                                                                 \
            for (size_t j = n; j < nr; j++) {                                 \
                dst[j] = 0;                                                   \
            }                                                                 \
        }                                                                     \
    }                                                                         \
                                                                              \
    DEFINE_MICRO_DIRECT(NAME, ATTR, T, VL, MR, NV)                            \
    DEFINE_MICRO_DIRECT(NAME, ATTR, T, VL, MR2, NV)                           \
    DEFINE_MICRO_DIRECT(NAME, ATTR, T, VL, MR3, NV)                           \
                                                                              \
    /* gemm_small for operands of kind sk (a constant once inlined). */       \
    ATTR static inline __attribute__((always_inline)) void NAME##_small_run(  \
        const struct gemm_args *g, T *bp, enum src_kind sk)                   \
    {                                                                         \
        const size_t nr = (size_t)VL * NV;                                    \
        const size_t es = sk == SRC_NATIVE ? sizeof(T) : 2;                   \
        const char *A = g->A, *B = g->B;                                      \
        T *C = g->C;                                                          \
        for (size_t jr = 0; jr < g->N; jr += nr) {                            \
            size_t n = g->N - jr < nr ? g->N - jr : nr;                       \
            const char *b = B + jr * es;                                      \
            size_t ldb = g->ldb;                                              \
            if (n < nr) {                                                     \
                /* The last sliver, as it is stored, zeros past n. */         \
                char *dst = (char *)bp;                                       \
                for (size_t p = 0; p < g->K; p++) {                           \
                    memcpy(dst + p * nr * es, b + p * g->ldb * es, n * es);   \
                    memset(dst + (p * nr + n) * es, 0, (nr - n) * es);        \
                }                                                             \
                b = dst;                                                      \
                ldb = nr;                                                     \
            }                                                                 \
            for (size_t ir = 0; ir < g->M; ir += MR) {                        \
                size_t m = g->M - ir < MR ? g->M - ir : MR;                   \
                const char *a = A + ir * g->lda * es;                         \
                T *c = C + ir * g->ldc + jr;                                  \
                if (m > MR2) {                                                \
                    NAME##_direct##MR(g->K, a, g->lda, b, ldb, c, g->ldc, m,  \
                                      n, sk);                                 \
                } else if (m > MR3) {                                         \
                    NAME##_direct##MR2(g->K, a, g->lda, b, ldb, c, g->ldc, m, \
                                       n, sk);                                \
                } else {                                                      \
                    NAME##_direct##MR3(g->K, a, g->lda, b, ldb, c, g->ldc, m, \
                                       n, sk);                                \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }                                                                         \
                                                                              \
    /* A product small enough to stay in L1 and L2 (gemm_is_small): A and     \
     * B read where they are, unpacked (packing them cost a sixth of a 64 x   \
     * 64 x 64 product), bfloat16 decoded as it is read (it comes only        \
     * with float32). */                                                      \
    ATTR static void NAME##_gemm_small(const struct gemm_args *g, T *bp)      \
    {                                                                         \
        if (g->src == SRC_NATIVE) {                                           \
            NAME##_small_run(g, bp, SRC_NATIVE);                              \
        } else if (sizeof(T) == 4 && g->src == SRC_BF16) {                    \
            NAME##_small_run(g, bp, SRC_BF16);                                \
        }                                                                     \
    }                                                                         \
                                                                              \
    ATTR static void NAME##_gemm(const struct gemm_args *g, T *ap, T *bp)     \
    {                                                                         \
        const size_t nr = (size_t)VL * NV;                                    \
        const size_t es = g->src == SRC_NATIVE ? sizeof(T) : 2;               \
        const char *A = g->A, *B = g->B;                                      \
        T *C = g->C;                                                          \
        if (g->K == 0) {                                                      \
            for (size_t i = 0; i < g->M; i++) {                               \
                memset(C + i * g->ldc, 0, g->N * sizeof(T));                  \
            }                                                                 \
            return;                                                           \
        }                                                                     \
        if (gemm_is_small(g, sizeof(T))) {                                    \
            NAME##_gemm_small(g, bp);                                         \
            return;                                                           \
        }                                                                     \
        for (size_t jc = 0; jc < g->N; jc += NC) {                            \
            size_t nc = g->N - jc < NC ? g->N - jc : NC;                      \
            for (size_t pc = 0; pc < g->K; pc += KC) {                        \
                size_t kc = g->K - pc < KC ? g->K - pc : KC;                  \
                for (size_t ic = 0; ic < g->M; ic += MC) {                    \
                    size_t mc = g->M - ic < MC ? g->M - ic : MC;              \
                    NAME##_pack_a(mc, kc, A + (ic * g->lda + pc) * es,        \
                                  g->lda, g->src, ap);                        \
                    for (size_t jr = 0; jr < nc; jr += nr) {                  \
                        size_t n = nc - jr < nr ? nc - jr : nr;               \
                        /* B is packed a sliver at a time, as the first       \
                         * block of A meets it, and the tiles of that block   \
                         * share the prefetching of the next sliver's rows    \
                         * from memory: a product of few rows would           \
                         * otherwise wait for all of B, one sliver after the  \
                         * other, and compute only in between. */             \
                        const char *pf = B;                                   \
                        size_t share = 0, nn = 0;                             \
                        if (ic == 0) {                                        \
                            NAME##_pack_b(kc, n,                              \
                                          B + (pc * g->ldb + jc + jr) * es,   \
                                          g->ldb, g->src, bp + jr * kc);      \
                            nn = nc - jr - n < nr ? nc - jr - n : nr;         \
                            pf = B + (pc * g->ldb + jc + jr + n) * es;        \
                            share = (kc + (mc + MR - 1) / MR - 1) /           \
                                    ((mc + MR - 1) / MR);                     \
                        }                                                     \
                        for (size_t ir = 0; ir < mc; ir += MR) {              \
                            size_t m = mc - ir < MR ? mc - ir : MR;           \
                            const T *a_s = ap + ir * kc, *b_s = bp + jr * kc; \
                            T *c = C + (ic + ir) * g->ldc + jc + jr;          \
                            /* Rows [r0, r0 + rows) of the next sliver. */    \
                            size_t r0 = ir / MR * share, rows = 0;            \
                            const char *tpf = pf;                             \
                            size_t last = nn == 0 ? 0 : nn * es - 1;          \
                            if (nn > 0 && r0 < kc) {                          \
                                rows = kc - r0 < share ? kc - r0 : share;     \
                                tpf = pf + r0 * g->ldb * es;                  \
                            }                                                 \
                            if (m > MR2) {                                    \
                                NAME##_micro##MR(kc, a_s, b_s, c, g->ldc,     \
                                                 pc == 0, m, n, tpf,          \
                                                 g->ldb * es, last, rows);    \
                            } else if (m > MR3) {                             \
                                NAME##_micro##MR2(kc, a_s, b_s, c, g->ldc,    \
                                                  pc == 0, m, n, tpf,         \
                                                  g->ldb * es, last, rows);   \
                            } else {                                          \
                                NAME##_micro##MR3(kc, a_s, b_s, c, g->ldc,    \
                                                  pc == 0, m, n, tpf,         \
                                                  g->ldb * es, last, rows);   \
                            }                                                 \
                        }                                                     \
                    }                                                         \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }

#if NRTEMU_X86_CLONES
#define ATTR_V4 __attribute__((target("arch=x86-64-v4")))
#define ATTR_V3 __attribute__((target("arch=x86-64-v3")))
DEFINE_GEMM(s_v4, ATTR_V4, float, 16, 12, 8, 4, 2)
DEFINE_GEMM(d_v4, ATTR_V4, double, 8, 12, 8, 4, 2)
DEFINE_GEMM(s_v3, ATTR_V3, float, 8, 6, 4, 2, 2)
DEFINE_GEMM(d_v3, ATTR_V3, double, 4, 6, 4, 2, 2)
#endif
DEFINE_GEMM(s_base, , float, 4, 4, 2, 1, 2)
DEFINE_GEMM(d_base, , double, 2, 4, 2, 1, 2)

/*
 * Products with a single row or column (M or N is 1) have nothing to
 * block: each element of the matrix operand is used once.  They stream
 * it with vector loops instead of packing it.
 */
/* Vectors of 64 bytes: one register in the AVX-512 clone, two or four
 * in the others. */
typedef float gv_s __attribute__((vector_size(64)));
typedef double gv_d __attribute__((vector_size(64)));
typedef uint16_t gv_u16 __attribute__((vector_size(32)));
typedef uint32_t gv_u32 __attribute__((vector_size(64)));

/* (Through a pointer: a vector this wide is not returned in registers
 * outside the AVX-512 clone.) */
NRTEMU_INLINE void
gv_load_s(gv_s *v, const float *p)
{
    memcpy(v, p, sizeof *v);
}

NRTEMU_INLINE void
gv_load_d(gv_d *v, const double *p)
{
    memcpy(v, p, sizeof *v);
}

NRTEMU_INLINE void
gv_load_sb(gv_s *v, const uint16_t *p)
{
    gv_u16 h;
    gv_u32 w;
    memcpy(&h, p, sizeof h);
    w = __builtin_convertvector(h, gv_u32) << 16;
    memcpy(v, &w, sizeof *v);
}

DEFINE_F16_DECODE(gv_f16_decode, gv_u32, gv_s)

NRTEMU_INLINE void
gv_load_sh(gv_s *v, const uint16_t *p)
{
    gv_u16 h;
    gv_u32 w;
    memcpy(&h, p, sizeof h);
    w = __builtin_convertvector(h, gv_u32);
    gv_f16_decode(v, &w);
}

/* T: the arithmetic type; ST: the stored operands, read through LD (one
 * element) and LDV (a vector of VN). */
#define DEFINE_GEMV(SFX, T, ST, LD, VN, ATTR)                                \
    /* c[0:N] = a[0:K] x B (K x N, row stride ldb) */                        \
    ATTR static void SFX##_vecmat(size_t N, size_t K, const ST *a,           \
                                  const ST *B, size_t ldb, T *c)             \
    {                                                                        \
        size_t p = 0;                                                        \
        for (size_t j = 0; j < N; j++) {                                     \
            c[j] = 0;                                                        \
        }                                                                    \
        /* Four rows of B per pass over c quarter the traffic to c. */       \
        for (; p + 4 <= K; p += 4) {                                         \
            const T s0 = LD(a[p]), s1 = LD(a[p + 1]), s2 = LD(a[p + 2]);     \
            const T s3 = LD(a[p + 3]);                                       \
            const ST *r0 = B + p * ldb, *r1 = r0 + ldb, *r2 = r1 + ldb;      \
            const ST *r3 = r2 + ldb;                                         \
            /* The next four rows start coming from memory now: a pass       \
             * over a part of each row (columns split between threads)       \
             * leaves the hardware's prefetcher too little to learn. */      \
            const size_t ahead = p + 8 <= K ? 4 * ldb : 0;                   \
            size_t j = 0;                                                    \
            for (; j + VN <= N; j += VN) {                                   \
                gv_##SFX cv, x0, x1, x2, x3;                                 \
                __builtin_prefetch(r0 + j + ahead);                          \
                __builtin_prefetch(r1 + j + ahead);                          \
                __builtin_prefetch(r2 + j + ahead);                          \
                __builtin_prefetch(r3 + j + ahead);                          \
                memcpy(&cv, c + j, sizeof cv);                               \
                gv_load_##SFX(&x0, r0 + j);                                  \
                gv_load_##SFX(&x1, r1 + j);                                  \
                gv_load_##SFX(&x2, r2 + j);                                  \
                gv_load_##SFX(&x3, r3 + j);                                  \
                cv += s0 * x0 + s1 * x1 + s2 * x2 + s3 * x3;                 \
                memcpy(c + j, &cv, sizeof cv);                               \
            }                                                                \
            for (; j < N; j++) {                                             \
                c[j] += s0 * LD(r0[j]) + s1 * LD(r1[j]) + s2 * LD(r2[j]) +   \
                        s3 * LD(r3[j]);                                      \
            }                                                                \
        }                                                                    \
        for (; p < K; p++) {                                                 \
            const T s = LD(a[p]);                                            \
            const ST *r = B + p * ldb;                                       \
            for (size_t j = 0; j < N; j++) {                                 \
                c[j] += s * LD(r[j]);                                        \
            }                                                                \
        }                                                                    \
    }                                                                        \
    /* c[i * ldc] = A[i, 0:K] . b[0:K] for i < M, four rows at a time so     \
     * that each load of b serves four dot products. */                      \
    ATTR static void SFX##_matvec(size_t M, size_t K, const ST *A,           \
                                  size_t lda, const ST *b, T *c, size_t ldc) \
    {                                                                        \
        size_t i = 0;                                                        \
        for (; i + 4 <= M; i += 4) {                                         \
            const ST *r0 = A + i * lda, *r1 = r0 + lda, *r2 = r1 + lda;      \
            const ST *r3 = r2 + lda;                                         \
            gv_##SFX l0 = {0}, l1 = {0}, l2 = {0}, l3 = {0};                 \
            T s0 = 0, s1 = 0, s2 = 0, s3 = 0;                                \
            size_t p = 0;                                                    \
            for (; p + VN <= K; p += VN) {                                   \
                gv_##SFX bv, x0, x1, x2, x3;                                 \
                gv_load_##SFX(&bv, b + p);                                   \
                gv_load_##SFX(&x0, r0 + p);                                  \
                gv_load_##SFX(&x1, r1 + p);                                  \
                gv_load_##SFX(&x2, r2 + p);                                  \
                gv_load_##SFX(&x3, r3 + p);                                  \
                l0 += x0 * bv;                                               \
                l1 += x1 * bv;                                               \
                l2 += x2 * bv;                                               \
                l3 += x3 * bv;                                               \
            }                                                                \
            for (int l = 0; l < VN; l++) {                                   \
                s0 += l0[l];                                                 \
                s1 += l1[l];                                                 \
                s2 += l2[l];                                                 \
                s3 += l3[l];                                                 \
            }                                                                \
            for (; p < K; p++) {                                             \
                const T bv = LD(b[p]);                                       \
                s0 += LD(r0[p]) * bv;                                        \
                s1 += LD(r1[p]) * bv;                                        \
                s2 += LD(r2[p]) * bv;                                        \
                s3 += LD(r3[p]) * bv;                                        \
            }                                                                \
            c[i * ldc] = s0;                                                 \
            c[(i + 1) * ldc] = s1;                                           \
            c[(i + 2) * ldc] = s2;                                           \
            c[(i + 3) * ldc] = s3;                                           \
        }                                                                    \
        for (; i < M; i++) {                                                 \
            const ST *row = A + i * lda;                                     \
            gv_##SFX lane = {0};                                             \
            T sum = 0;                                                       \
            size_t p = 0;                                                    \
            for (; p + VN <= K; p += VN) {                                   \
                gv_##SFX x, y;                                               \
                gv_load_##SFX(&x, row + p);                                  \
                gv_load_##SFX(&y, b + p);                                    \
                lane += x * y;                                               \
            }                                                                \
            for (int l = 0; l < VN; l++) {                                   \
                sum += lane[l];                                              \
            }                                                                \
            for (; p < K; p++) {                                             \
                sum += LD(row[p]) * LD(b[p]);                                \
            }                                                                \
            c[i * ldc] = sum;                                                \
        }                                                                    \
    }

#define LD_SAME(v) (v)
typedef gv_s gv_sb;
typedef gv_s gv_sh;
DEFINE_GEMV(s, float, float, LD_SAME, 16, NRTEMU_MULTIVERSION)
DEFINE_GEMV(d, double, double, LD_SAME, 8, NRTEMU_MULTIVERSION)
DEFINE_GEMV(sb, float, uint16_t, nrtemu__bfloat16_to_float, 16,
            NRTEMU_MULTIVERSION)
DEFINE_GEMV(sh, float, uint16_t, f16_f, 16, NRTEMU_MULTIVERSION)

#if NRTEMU_X86_CLONES
/*
 * float16 operands decoded by vcvtph2ps, 16 at a time: the plain-vector
 * decode (DEFINE_F16_DECODE, about eight operations a vector) made the
 * float16 GEMV instruction-bound rather than memory-bound, slower than
 * float32's with twice the bytes.  The same float32 values (NaNs quiet with
 * their payload), so the same results bit for bit.
 */
#define GV_F16C_TARGET __attribute__((target("avx512f,f16c")))

GV_F16C_TARGET static inline __attribute__((always_inline)) void
gv_load_shc(gv_s *v, const uint16_t *p)
{
    __m512 f = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
    memcpy(v, &f, sizeof *v);
}

typedef gv_s gv_shc;
DEFINE_GEMV(shc, float, uint16_t, f16_f, 16, GV_F16C_TARGET)

/* The same with AVX2's vcvtph2ps, 8 at a time, where the CPU has no
 * AVX-512. */
#define GV_F16C8_TARGET __attribute__((target("avx2,fma,f16c")))

GV_F16C8_TARGET static inline __attribute__((always_inline)) void
gv_load_shc8(gv_s *v, const uint16_t *p)
{
    __m256 lo = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
    __m256 hi = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 8)));
    memcpy(v, &lo, sizeof lo);
    memcpy((char *)v + sizeof lo, &hi, sizeof hi);
}

typedef gv_s gv_shc8;
DEFINE_GEMV(shc8, float, uint16_t, f16_f, 16, GV_F16C8_TARGET)
#endif

/* Whether a product is a GEMV, and then compute it. */
static bool
gemv(const struct gemm_args *g, size_t esize)
{
    if (g->M != 1 && g->N != 1) {
        return false;
    }
    /* N == 1: B is a column of stride ldb; copy-free when ldb is 1. */
    if (g->M != 1 && g->ldb != 1) {
        return false;
    }
    if (esize == 8) {
        if (g->M == 1) {
            d_vecmat(g->N, g->K, g->A, g->B, g->ldb, g->C);
        } else {
            d_matvec(g->M, g->K, g->A, g->lda, g->B, g->C, g->ldc);
        }
        return true;
    }
    switch (g->src) {
    case SRC_NATIVE:
        if (g->M == 1) {
            s_vecmat(g->N, g->K, g->A, g->B, g->ldb, g->C);
        } else {
            s_matvec(g->M, g->K, g->A, g->lda, g->B, g->C, g->ldc);
        }
        break;
    case SRC_BF16:
        if (g->M == 1) {
            sb_vecmat(g->N, g->K, g->A, g->B, g->ldb, g->C);
        } else {
            sb_matvec(g->M, g->K, g->A, g->lda, g->B, g->C, g->ldc);
        }
        break;
    case SRC_F16:
#if NRTEMU_X86_CLONES
        if (nrtemu__cpu_has(NRTEMU_CPU_V4)) {
            if (g->M == 1) {
                shc_vecmat(g->N, g->K, g->A, g->B, g->ldb, g->C);
            } else {
                shc_matvec(g->M, g->K, g->A, g->lda, g->B, g->C, g->ldc);
            }
            break;
        }
        if (nrtemu__cpu_has(NRTEMU_CPU_V3)) {
            if (g->M == 1) {
                shc8_vecmat(g->N, g->K, g->A, g->B, g->ldb, g->C);
            } else {
                shc8_matvec(g->M, g->K, g->A, g->lda, g->B, g->C, g->ldc);
            }
            break;
        }
#endif
        if (g->M == 1) {
            sh_vecmat(g->N, g->K, g->A, g->B, g->ldb, g->C);
        } else {
            sh_matvec(g->M, g->K, g->A, g->lda, g->B, g->C, g->ldc);
        }
        break;
    }
    return true;
}

/* A GEMM for one element type and instruction set. */
struct gemm_impl {
    void (*run)(const struct gemm_args *g, void *ap, void *bp);
    size_t mr, nr;
};

#define GEMM_IMPL(NAME, T, VL, MR, NV)                                    \
    static void NAME##_run(const struct gemm_args *g, void *ap, void *bp) \
    {                                                                     \
        NAME##_gemm(g, ap, bp);                                           \
    }                                                                     \
    static const struct gemm_impl NAME##_impl = {NAME##_run, MR,          \
                                                 (size_t)VL * NV};

#if NRTEMU_X86_CLONES
GEMM_IMPL(s_v4, float, 16, 12, 2)
GEMM_IMPL(d_v4, double, 8, 12, 2)
GEMM_IMPL(s_v3, float, 8, 6, 2)
GEMM_IMPL(d_v3, double, 4, 6, 2)
#endif
GEMM_IMPL(s_base, float, 4, 4, 2)
GEMM_IMPL(d_base, double, 2, 4, 2)

static const struct gemm_impl *
pick_gemm(bool is_double)
{
#if NRTEMU_X86_CLONES
    if (nrtemu__cpu_has(NRTEMU_CPU_V4)) {
        return is_double ? &d_v4_impl : &s_v4_impl;
    }
    if (nrtemu__cpu_has(NRTEMU_CPU_V3)) {
        return is_double ? &d_v3_impl : &s_v3_impl;
    }
#endif
    return is_double ? &d_base_impl : &s_base_impl;
}

/* One task of a product: a range of the batch, and a range of the rows
 * and columns of each of its products; its packing buffers are those of
 * the slot (pool.h) that runs it, slot_bytes apart. */
struct task {
    const struct gemm_impl *impl;
    enum src_kind src;
    size_t esize, in_esize; /* of C; of A and B */
    const char *a, *b;
    char *c;
    const uint64_t *a_off, *b_off; /* per batch entry, in elements */
    uint64_t batch0, batch1;
    size_t M, N, K;
    size_t m0, m1, n0, n1;
    char *ap, *bp; /* of slot 0 */
    size_t slot_bytes;
};

/* The integer product, wrapping: int64 and uint64 give the same bits.
 * The sizes in locals and the pointers restrict: otherwise the compiler
 * must assume that a store to C changes g->N or B (C, B and the sizes
 * are all 64-bit integers) and reloads them for every element, with no
 * vectors.  Multiversioned for AVX-512's 64-bit multiply (vpmullq). */
NRTEMU_MULTIVERSION static void
int_gemm(const struct gemm_args *g)
{
    const uint64_t *restrict A = g->A;
    const uint64_t *restrict B = g->B;
    uint64_t *restrict C = g->C;
    const size_t M = g->M, N = g->N, K = g->K;
    const size_t lda = g->lda, ldb = g->ldb, ldc = g->ldc;

    for (size_t i = 0; i < M; i++) {
        uint64_t *restrict crow = C + i * ldc;
        memset(crow, 0, N * sizeof *crow);
        for (size_t p = 0; p < K; p++) {
            const uint64_t a = A[i * lda + p];
            const uint64_t *restrict brow = B + p * ldb;
            for (size_t j = 0; j < N; j++) {
                crow[j] += a * brow[j];
            }
        }
    }
}

static void
task_run(void *arg, uint32_t index, uint32_t slot)
{
    const struct task *t = (const struct task *)arg + index;
    char *ap = t->ap + (size_t)slot * t->slot_bytes;
    char *bp = t->bp + (size_t)slot * t->slot_bytes;

    for (uint64_t bi = t->batch0; bi < t->batch1; bi++) {
        struct gemm_args g;
        g.src = t->src;
        g.M = t->m1 - t->m0;
        g.N = t->n1 - t->n0;
        g.K = t->K;
        g.lda = t->K;
        g.ldb = t->N;
        g.ldc = t->N;
        g.A = t->a + (t->a_off[bi] + t->m0 * t->K) * t->in_esize;
        g.B = t->b + (t->b_off[bi] + t->n0) * t->in_esize;
        g.C = t->c + (bi * t->M * t->N + t->m0 * t->N + t->n0) * t->esize;
        if (g.M == 0 || g.N == 0) {
            continue;
        }
        if (t->impl != NULL) {
            if (!gemv(&g, t->esize)) {
                t->impl->run(&g, ap, bp);
            }
        } else {
            int_gemm(&g);
        }
    }
}

/*
 * A large vector x matrix product (M == 1, one of a batch) split by depth
 * into bands of SPLIT_MIN_K / 2 rows at least, at most SPLIT_BANDS of
 * them, each split by columns into as few pieces as give the pool its
 * tasks (pool.h): each piece then streams whole rows of B, or long runs
 * of them, contiguous memory, where a split by columns alone has every
 * thread read part of each row, and reach only part of the memory's
 * bandwidth.  The bands' sums are added in band order once all are done,
 * so the result depends on the shape only, not on the threads.
 */
#define SPLIT_MIN_K 512
#define SPLIT_MIN_N 64
#define SPLIT_COLUMNS 16 /* a piece's columns: a multiple of this */
#define SPLIT_BANDS 8

/* The depth bands of a split product of depth K (>= SPLIT_MIN_K). */
static size_t
vecmat_bands(size_t K)
{
    size_t bands = K / (SPLIT_MIN_K / 2);

    return bands < SPLIT_BANDS ? bands : SPLIT_BANDS;
}

struct vm_piece {
    struct gemm_args g;
    size_t esize;
};

static void
vm_piece_run(void *arg, uint32_t index)
{
    const struct vm_piece *p = (const struct vm_piece *)arg + index;

    gemv(&p->g, p->esize);
}

static bool
vecmat_split_wanted(uint64_t batch, size_t M, size_t N, size_t K,
                    uint64_t work)
{
    return batch == 1 && M == 1 && N >= SPLIT_MIN_N && K >= SPLIT_MIN_K &&
           work >= 2 * THREAD_MIN_WORK;
}

/* c[0:N] = a[0:K] x B (K x N), of src kind `src`, into c and `part`
 * (N elements of scratch for each band but the first), on up to `cpus`
 * threads. */
static void
vecmat_split(enum src_kind src, size_t esize, size_t in_esize, size_t N,
             size_t K, const char *a, const char *b, char *c, char *part,
             int cpus)
{
    struct vm_piece pieces[MAX_TASKS];
    size_t bands = vecmat_bands(K);
    size_t units = (N + SPLIT_COLUMNS - 1) / SPLIT_COLUMNS;
    size_t want = (size_t)cpus * NRTEMU_POOL_TASKS_PER_THREAD,
           cols = want / bands, count = 0;

    cols = cols > 1 ? cols : 1;
    cols = cols > MAX_TASKS / bands ? MAX_TASKS / bands : cols;
    cols = cols > units ? units : cols;
    for (size_t h = 0; h < bands; h++) {
        size_t kb = K * h / bands / 4 * 4; /* whole groups of rows */
        size_t ke = h + 1 == bands ? K : K * (h + 1) / bands / 4 * 4;
        for (size_t t = 0; t < cols; t++) {
            size_t n0 = units * t / cols * SPLIT_COLUMNS;
            size_t n1 = units * (t + 1) / cols * SPLIT_COLUMNS;
            struct vm_piece *pc = &pieces[count++];
            n1 = n1 < N ? n1 : N;
            pc->esize = esize;
            pc->g.src = src;
            pc->g.M = 1;
            pc->g.N = n1 - n0;
            pc->g.K = ke - kb;
            pc->g.A = a + kb * in_esize;
            pc->g.lda = K;
            pc->g.B = b + (kb * N + n0) * in_esize;
            pc->g.ldb = N;
            pc->g.C = (h == 0 ? c : part + (h - 1) * N * esize) + n0 * esize;
            pc->g.ldc = N;
        }
    }
    if (cpus > 1) {
        nrtemu__pool_run(vm_piece_run, pieces, (uint32_t)count);
    } else {
        for (size_t i = 0; i < count; i++) {
            vm_piece_run(pieces, (uint32_t)i);
        }
    }
    for (size_t h = 1; h < bands; h++) {
        if (esize == 8) {
            double *cd = (double *)c;
            const double *pd = (const double *)part + (h - 1) * N;
            for (size_t j = 0; j < N; j++) {
                cd[j] += pd[j];
            }
        } else {
            float *cf = (float *)c;
            const float *pf = (const float *)part + (h - 1) * N;
            for (size_t j = 0; j < N; j++) {
                cf[j] += pf[j];
            }
        }
    }
}

static size_t
align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

NRT_STATUS
nrtemu__kernel_matmul(enum nrtemu_dtype compute,
                      const struct nrtemu_array *out,
                      const struct nrtemu_array *a,
                      const struct nrtemu_array *b, struct nrtemu_scratch *s)
{
    enum nrtemu_dtype kt = nrtemu__kernel_dtype(compute);
    const struct gemm_impl *impl = NULL;
    size_t esize = nrtemu__dtype_size(kt);
    bool a_vec = a->ndim == 1, b_vec = b->ndim == 1;
    size_t M = a_vec ? 1 : a->shape[a->ndim - 2];
    size_t K = a->shape[a->ndim - 1];
    size_t N = b_vec ? 1 : b->shape[b->ndim - 1];
    uint32_t nb = out->ndim - (a_vec ? 0 : 1) - (b_vec ? 0 : 1);
    uint64_t batch = 1, work;
    size_t a_bytes, b_bytes, c_bytes, off_bytes, ap_elems, bp_elems, total;
    size_t per_thread, part_bytes;
    bool split;
    bool a_direct, b_direct, c_direct;
    struct task tasks[MAX_TASKS];
    enum src_kind src = SRC_NATIVE;
    size_t in_esize;
    int nthreads = 1, ntasks = 1, cpus;
    char *scratch, *p;
    const char *A, *B;
    char *C;
    uint64_t *a_off, *b_off;

    for (uint32_t d = 0; d < nb; d++) {
        batch *= out->shape[d];
    }
    if (batch * M * N == 0) {
        return NRT_SUCCESS;
    }
    if (kt == NRTEMU_DTYPE_FLOAT32 || kt == NRTEMU_DTYPE_FLOAT64) {
        impl = pick_gemm(kt == NRTEMU_DTYPE_FLOAT64);
    }
    a_direct = a->dtype == kt && (compute == kt || compute == a->dtype);
    b_direct = b->dtype == kt && (compute == kt || compute == b->dtype);
    /* 16-bit float operands of a float32 product are read as they are:
     * decoding them to float32 is exact, as the conversion through
     * `compute` is when that is their own dtype or float32. */
    if (kt == NRTEMU_DTYPE_FLOAT32 && a->dtype == b->dtype &&
        (compute == a->dtype || compute == kt) &&
        (a->dtype == NRTEMU_DTYPE_BFLOAT16 ||
         a->dtype == NRTEMU_DTYPE_FLOAT16)) {
        src = a->dtype == NRTEMU_DTYPE_BFLOAT16 ? SRC_BF16 : SRC_F16;
        a_direct = b_direct = true;
    }
    in_esize = src == SRC_NATIVE ? esize : 2;
    c_direct = out->dtype == kt && (compute == kt || compute == out->dtype);

    /* How many threads and tasks, splitting what. */
    cpus = (int)nrtemu__pool_threads();
    work = batch * M * N * (uint64_t)(K == 0 ? 1 : K);
    split = impl != NULL && vecmat_split_wanted(batch, M, N, K, work);
    if (impl != NULL) {
        ntasks = (int)nrtemu__pool_tasks(work, THREAD_MIN_WORK);
        if (ntasks > cpus && (uint64_t)ntasks > work / TASK_MIN_WORK) {
            uint64_t fit = work / TASK_MIN_WORK;
            ntasks = fit > (uint64_t)cpus ? (int)fit : cpus;
        }
        ntasks = ntasks < MAX_TASKS ? ntasks : MAX_TASKS;
        nthreads = cpus < MAX_THREADS ? cpus : MAX_THREADS;
        nthreads = nthreads < ntasks ? nthreads : ntasks;
    }
    for (int t = 0; t < MAX_TASKS; t++) {
        memset(&tasks[t], 0, sizeof tasks[t]);
        tasks[t].batch0 = 0;
        tasks[t].batch1 = batch;
        tasks[t].m1 = M;
        tasks[t].n1 = N;
    }
    /* A split into ntasks, else into one task a thread, else none. */
    while (ntasks > 1) {
        if (batch >= (uint64_t)ntasks) {
            for (int t = 0; t < ntasks; t++) {
                tasks[t].batch0 = batch * (uint64_t)t / (uint64_t)ntasks;
                tasks[t].batch1 = batch * (uint64_t)(t + 1) / (uint64_t)ntasks;
            }
            break;
        }
        if (N >= (size_t)ntasks * impl->nr * 2) {
            size_t units = (N + impl->nr - 1) / impl->nr;
            for (int t = 0; t < ntasks; t++) {
                size_t u0 = units * (size_t)t / (size_t)ntasks;
                size_t u1 = units * (size_t)(t + 1) / (size_t)ntasks;
                tasks[t].n0 = u0 * impl->nr;
                tasks[t].n1 = u1 * impl->nr < N ? u1 * impl->nr : N;
            }
            break;
        }
        if (M >= (size_t)ntasks * impl->mr * 2) {
            size_t units = (M + impl->mr - 1) / impl->mr;
            for (int t = 0; t < ntasks; t++) {
                size_t u0 = units * (size_t)t / (size_t)ntasks;
                size_t u1 = units * (size_t)(t + 1) / (size_t)ntasks;
                tasks[t].m0 = u0 * impl->mr;
                tasks[t].m1 = u1 * impl->mr < M ? u1 * impl->mr : M;
            }
            break;
        }
        ntasks = ntasks > nthreads ? nthreads : 1;
    }
    nthreads = ntasks > 1 ? nthreads : 1;

    /* Scratch: converted operands, the result, batch offsets, and the
     * packing buffers of every thread. */
    a_bytes = a_direct ? 0 : align64(nrtemu__array_count(a) * esize);
    b_bytes = b_direct ? 0 : align64(nrtemu__array_count(b) * esize);
    c_bytes = c_direct ? 0 : align64(batch * M * N * esize);
    off_bytes = align64(2 * batch * sizeof(uint64_t));
    ap_elems = 0;
    bp_elems = 0;
    if (impl != NULL) {
        size_t widest = 0;
        for (int t = 0; t < ntasks; t++) {
            size_t w = tasks[t].n1 - tasks[t].n0;
            widest = w > widest ? w : widest;
        }
        widest = widest < NC ? widest : NC;
        widest = (widest + impl->nr - 1) / impl->nr * impl->nr;
        ap_elems = (size_t)MC * KC;
        bp_elems = (size_t)KC * widest;
    }
    per_thread = align64(ap_elems * esize) + align64(bp_elems * esize);
    part_bytes = split ? align64((vecmat_bands(K) - 1) * N * esize) : 0;
    total = a_bytes + b_bytes + c_bytes + off_bytes + part_bytes +
            (size_t)nthreads * per_thread;
    scratch = nrtemu__scratch_get(s, total);
    if (scratch == NULL) {
        return NRT_RESOURCE;
    }
    p = scratch;
    A = a_direct ? a->data : nrtemu__kernel_load(a, compute, kt, p);
    p += a_bytes;
    B = b_direct ? b->data : nrtemu__kernel_load(b, compute, kt, p);
    p += b_bytes;
    C = c_direct ? out->data : p;
    p += c_bytes;
    a_off = (uint64_t *)p;
    b_off = a_off + batch;
    p += off_bytes;
    if (split) {
        vecmat_split(src, esize, in_esize, N, K, A, B, C, p, cpus);
        if (!c_direct) {
            nrtemu__kernel_store(out, compute, kt, C);
        }
        return NRT_SUCCESS;
    }

    /* Where each product of the batch reads its operands: the batch
     * dimensions of a and b broadcast to those of out. */
    {
        struct kiter it;
        kiter_init(&it, nb, out->shape, 2);
        kiter_broadcast(&it, 0, a_vec ? 0 : a->ndim - 2, a->shape);
        kiter_broadcast(&it, 1, b_vec ? 0 : b->ndim - 2, b->shape);
        for (uint64_t bi = 0; bi < batch; bi++) {
            uint64_t rest = bi, ao = 0, bo = 0;
            for (int d = it.ndim - 1; d >= 0; d--) {
                uint64_t i = rest % it.shape[d];
                rest /= it.shape[d];
                ao += i * (uint64_t)it.stride[0][d];
                bo += i * (uint64_t)it.stride[1][d];
            }
            a_off[bi] = ao * M * K;
            b_off[bi] = bo * K * N;
        }
    }

    for (int t = 0; t < ntasks; t++) {
        tasks[t].impl = impl;
        tasks[t].src = src;
        tasks[t].esize = esize;
        tasks[t].in_esize = in_esize;
        tasks[t].a = A;
        tasks[t].b = B;
        tasks[t].c = C;
        tasks[t].a_off = a_off;
        tasks[t].b_off = b_off;
        tasks[t].M = M;
        tasks[t].N = N;
        tasks[t].K = K;
        tasks[t].ap = p;
        tasks[t].bp = p + align64(ap_elems * esize);
        tasks[t].slot_bytes = per_thread;
    }
    if (ntasks > 1) {
        nrtemu__pool_run_slots(task_run, tasks, (uint32_t)ntasks,
                               (uint32_t)nthreads);
    } else {
        task_run(tasks, 0, 0);
    }
    if (!c_direct) {
        nrtemu__kernel_store(out, compute, kt, C);
    }
    return NRT_SUCCESS;
}
