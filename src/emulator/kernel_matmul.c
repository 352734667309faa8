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
 * CPU runs is chosen once.  Large products are split over threads by
 * columns of C (or rows, or whole matrices of a batch); each thread packs
 * its own panels.  Integers use a plain loop (wrapping arithmetic).
 */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convert.h"
#include "kernel.h"
#include "kernel_iter.h"
#include "simd.h"

/* Threads used for one product, at most. */
#define MAX_THREADS 8
/* Products under this many multiply-adds run on the calling thread. */
#define THREAD_MIN_WORK ((uint64_t)1 << 22)

/* Blocking in elements: a KC x NR sliver of B stays in L1, an MC x KC
 * block of A in L2, a KC x NC panel of B in L3. */
#define KC 256
#define MC 144
#define NC 3072

/* One GEMM: C (M x N, row stride ldc) = A (M x K) * B (K x N). */
struct gemm_args {
    size_t M, N, K;
    const void *A;
    size_t lda;
    const void *B;
    size_t ldb;
    void *C;
    size_t ldc;
};

/*
 * The blocked GEMM for element type T, vectors of VL elements and an
 * MR x (NV * VL) register tile, compiled with the function attributes
 * ATTR.  `ap` and `bp` are packing buffers of MC * KC and KC * NC
 * elements, 64-byte aligned.
 */
#define DEFINE_GEMM(NAME, ATTR, T, VL, MR, NV)                                \
    typedef T NAME##_vec __attribute__((vector_size(VL * sizeof(T))));        \
    typedef T NAME##_uvec                                                     \
        __attribute__((vector_size(VL * sizeof(T)), aligned(sizeof(T))));     \
                                                                              \
    ATTR static void NAME##_pack_a(size_t mc, size_t kc, const T *a,          \
                                   size_t lda, T *ap)                         \
    {                                                                         \
        for (size_t i0 = 0; i0 < mc; i0 += MR) {                              \
            T *dst = ap + i0 * kc;                                            \
            for (size_t i = 0; i < MR; i++) {                                 \
                if (i0 + i < mc) {                                            \
                    const T *src = a + (i0 + i) * lda;                        \
                    for (size_t p = 0; p < kc; p++) {                         \
                        dst[p * MR + i] = src[p];                             \
                    }                                                         \
                } else {                                                      \
                    for (size_t p = 0; p < kc; p++) {                         \
                        dst[p * MR + i] = 0;                                  \
                    }                                                         \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }                                                                         \
                                                                              \
    ATTR static void NAME##_pack_b(size_t kc, size_t nc, const T *b,          \
                                   size_t ldb, T *bp)                         \
    {                                                                         \
        const size_t nr = (size_t)VL * NV;                                    \
        for (size_t j0 = 0; j0 < nc; j0 += nr) {                              \
            T *dst = bp + j0 * kc;                                            \
            size_t w = nc - j0 < nr ? nc - j0 : nr;                           \
            for (size_t p = 0; p < kc; p++) {                                 \
                memcpy(dst + p * nr, b + p * ldb + j0, w * sizeof(T));        \
                for (size_t j = w; j < nr; j++) {                             \
                    dst[p * nr + j] = 0;                                      \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }                                                                         \
                                                                              \
    /* C[0:m, 0:n] (+)= the MR x NR tile of ap x bp over depth kc. */         \
    ATTR static inline __attribute__((always_inline)) void NAME##_micro(      \
        size_t kc, const T *restrict ap, const T *restrict bp, T *restrict c, \
        size_t ldc, bool first, size_t m, size_t n)                           \
    {                                                                         \
        NAME##_vec acc[MR][NV];                                               \
        _Pragma("GCC unroll 32") for (int i = 0; i < MR; i++)                 \
        {                                                                     \
            _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++)              \
            {                                                                 \
                acc[i][j] = (NAME##_vec){0};                                  \
            }                                                                 \
        }                                                                     \
        for (size_t p = 0; p < kc; p++) {                                     \
            NAME##_vec bv[NV];                                                \
            _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++)              \
            {                                                                 \
                bv[j] = *(const NAME##_vec *)(bp + (p * NV + j) * VL);        \
            }                                                                 \
            _Pragma("GCC unroll 32") for (int i = 0; i < MR; i++)             \
            {                                                                 \
                NAME##_vec av = (NAME##_vec){0} + ap[p * MR + i];             \
                _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++)          \
                {                                                             \
                    acc[i][j] += av * bv[j];                                  \
                }                                                             \
            }                                                                 \
        }                                                                     \
        if (m == MR && n == (size_t)VL * NV) {                                \
            _Pragma("GCC unroll 32") for (int i = 0; i < MR; i++)             \
            {                                                                 \
                _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++)          \
                {                                                             \
                    NAME##_uvec *cp =                                         \
                        (NAME##_uvec *)(c + i * ldc + (size_t)j * VL);        \
                    *cp = first ? acc[i][j] : *cp + acc[i][j];                \
                }                                                             \
            }                                                                 \
        } else {                                                              \
            /* An edge tile: through memory, only the valid part. */          \
            T tile[MR][VL * NV];                                              \
            memcpy(tile, acc, sizeof tile);                                   \
            for (size_t i = 0; i < m; i++) {                                  \
                for (size_t j = 0; j < n; j++) {                              \
                    c[i * ldc + j] =                                          \
                        first ? tile[i][j] : c[i * ldc + j] + tile[i][j];     \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }                                                                         \
                                                                              \
    ATTR static void NAME##_gemm(const struct gemm_args *g, T *ap, T *bp)     \
    {                                                                         \
        const size_t nr = (size_t)VL * NV;                                    \
        const T *A = g->A, *B = g->B;                                         \
        T *C = g->C;                                                          \
        if (g->K == 0) {                                                      \
            for (size_t i = 0; i < g->M; i++) {                               \
                memset(C + i * g->ldc, 0, g->N * sizeof(T));                  \
            }                                                                 \
            return;                                                           \
        }                                                                     \
        for (size_t jc = 0; jc < g->N; jc += NC) {                            \
            size_t nc = g->N - jc < NC ? g->N - jc : NC;                      \
            for (size_t pc = 0; pc < g->K; pc += KC) {                        \
                size_t kc = g->K - pc < KC ? g->K - pc : KC;                  \
                NAME##_pack_b(kc, nc, B + pc * g->ldb + jc, g->ldb, bp);      \
                for (size_t ic = 0; ic < g->M; ic += MC) {                    \
                    size_t mc = g->M - ic < MC ? g->M - ic : MC;              \
                    NAME##_pack_a(mc, kc, A + ic * g->lda + pc, g->lda, ap);  \
                    for (size_t jr = 0; jr < nc; jr += nr) {                  \
                        size_t n = nc - jr < nr ? nc - jr : nr;               \
                        for (size_t ir = 0; ir < mc; ir += MR) {              \
                            size_t m = mc - ir < MR ? mc - ir : MR;           \
                            NAME##_micro(kc, ap + ir * kc, bp + jr * kc,      \
                                         C + (ic + ir) * g->ldc + jc + jr,    \
                                         g->ldc, pc == 0, m, n);              \
                        }                                                     \
                    }                                                         \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }

#if NRTEMU_X86_CLONES
#define ATTR_V4 __attribute__((target("arch=x86-64-v4")))
#define ATTR_V3 __attribute__((target("arch=x86-64-v3")))
DEFINE_GEMM(s_v4, ATTR_V4, float, 16, 12, 2)
DEFINE_GEMM(d_v4, ATTR_V4, double, 8, 12, 2)
DEFINE_GEMM(s_v3, ATTR_V3, float, 8, 6, 2)
DEFINE_GEMM(d_v3, ATTR_V3, double, 4, 6, 2)
#endif
DEFINE_GEMM(s_base, , float, 4, 4, 2)
DEFINE_GEMM(d_base, , double, 2, 4, 2)

/*
 * Products with a single row or column (M or N is 1) have nothing to
 * block: each element of the matrix operand is used once.  They stream
 * it with vector loops instead of packing it.
 */
#define GEMV_LANES 16
#define DEFINE_GEMV(SFX, T)                                                 \
    /* c[0:N] = a[0:K] x B (K x N, row stride ldb) */                       \
    NRTEMU_MULTIVERSION                                                     \
    static void SFX##_vecmat(size_t N, size_t K, const T *a, const T *B,    \
                             size_t ldb, T *c)                              \
    {                                                                       \
        size_t p = 0;                                                       \
        for (size_t j = 0; j < N; j++) {                                    \
            c[j] = 0;                                                       \
        }                                                                   \
        /* Four rows of B per pass over c halve the traffic to c. */        \
        for (; p + 4 <= K; p += 4) {                                        \
            const T s0 = a[p], s1 = a[p + 1], s2 = a[p + 2], s3 = a[p + 3]; \
            const T *r0 = B + p * ldb, *r1 = r0 + ldb, *r2 = r1 + ldb;      \
            const T *r3 = r2 + ldb;                                         \
            for (size_t j = 0; j < N; j++) {                                \
                c[j] += s0 * r0[j] + s1 * r1[j] + s2 * r2[j] + s3 * r3[j];  \
            }                                                               \
        }                                                                   \
        for (; p < K; p++) {                                                \
            const T s = a[p], *r = B + p * ldb;                             \
            for (size_t j = 0; j < N; j++) {                                \
                c[j] += s * r[j];                                           \
            }                                                               \
        }                                                                   \
    }                                                                       \
    /* c[i * ldc] = A[i, 0:K] . b[0:K] for i < M, four rows at a time so    \
     * that each load of b serves four dot products. */                     \
    NRTEMU_MULTIVERSION                                                     \
    static void SFX##_matvec(size_t M, size_t K, const T *A, size_t lda,    \
                             const T *b, T *c, size_t ldc)                  \
    {                                                                       \
        size_t i = 0;                                                       \
        for (; i + 4 <= M; i += 4) {                                        \
            const T *r0 = A + i * lda, *r1 = r0 + lda, *r2 = r1 + lda;      \
            const T *r3 = r2 + lda;                                         \
            T l0[GEMV_LANES], l1[GEMV_LANES], l2[GEMV_LANES];               \
            T l3[GEMV_LANES], s0 = 0, s1 = 0, s2 = 0, s3 = 0;               \
            size_t p = 0;                                                   \
            for (int l = 0; l < GEMV_LANES; l++) {                          \
                l0[l] = l1[l] = l2[l] = l3[l] = 0;                          \
            }                                                               \
            for (; p + GEMV_LANES <= K; p += GEMV_LANES) {                  \
                for (int l = 0; l < GEMV_LANES; l++) {                      \
                    const T bv = b[p + l];                                  \
                    l0[l] += r0[p + l] * bv;                                \
                    l1[l] += r1[p + l] * bv;                                \
                    l2[l] += r2[p + l] * bv;                                \
                    l3[l] += r3[p + l] * bv;                                \
                }                                                           \
            }                                                               \
            for (int l = 0; l < GEMV_LANES; l++) {                          \
                s0 += l0[l];                                                \
                s1 += l1[l];                                                \
                s2 += l2[l];                                                \
                s3 += l3[l];                                                \
            }                                                               \
            for (; p < K; p++) {                                            \
                s0 += r0[p] * b[p];                                         \
                s1 += r1[p] * b[p];                                         \
                s2 += r2[p] * b[p];                                         \
                s3 += r3[p] * b[p];                                         \
            }                                                               \
            c[i * ldc] = s0;                                                \
            c[(i + 1) * ldc] = s1;                                          \
            c[(i + 2) * ldc] = s2;                                          \
            c[(i + 3) * ldc] = s3;                                          \
        }                                                                   \
        for (; i < M; i++) {                                                \
            const T *row = A + i * lda;                                     \
            T lane[GEMV_LANES], sum = 0;                                    \
            size_t p = 0;                                                   \
            for (int l = 0; l < GEMV_LANES; l++) {                          \
                lane[l] = 0;                                                \
            }                                                               \
            for (; p + GEMV_LANES <= K; p += GEMV_LANES) {                  \
                for (int l = 0; l < GEMV_LANES; l++) {                      \
                    lane[l] += row[p + l] * b[p + l];                       \
                }                                                           \
            }                                                               \
            for (int l = 0; l < GEMV_LANES; l++) {                          \
                sum += lane[l];                                             \
            }                                                               \
            for (; p < K; p++) {                                            \
                sum += row[p] * b[p];                                       \
            }                                                               \
            c[i * ldc] = sum;                                               \
        }                                                                   \
    }

DEFINE_GEMV(s, float)
DEFINE_GEMV(d, double)

/* Whether a product is a GEMV, and then compute it. */
static bool
gemv(const struct gemm_args *g, size_t esize)
{
    if (g->M != 1 && g->N != 1) {
        return false;
    }
    if (g->M == 1) {
        if (esize == 4) {
            s_vecmat(g->N, g->K, g->A, g->B, g->ldb, g->C);
        } else {
            d_vecmat(g->N, g->K, g->A, g->B, g->ldb, g->C);
        }
    } else if (esize == 4) {
        /* N == 1: B is a column of stride ldb; copy-free when ldb is 1. */
        if (g->ldb != 1) {
            return false;
        }
        s_matvec(g->M, g->K, g->A, g->lda, g->B, g->C, g->ldc);
    } else {
        if (g->ldb != 1) {
            return false;
        }
        d_matvec(g->M, g->K, g->A, g->lda, g->B, g->C, g->ldc);
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
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq")) {
        return is_double ? &d_v4_impl : &s_v4_impl;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        return is_double ? &d_v3_impl : &s_v3_impl;
    }
#endif
    return is_double ? &d_base_impl : &s_base_impl;
}

/* CPUs this process may run on, read once. */
static int cpu_count;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

static void
count_cpus(void)
{
    cpu_set_t set;

    cpu_count = 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        cpu_count = CPU_COUNT(&set);
    } else {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        cpu_count = n > 0 ? (int)n : 1;
    }
    if (cpu_count < 1) {
        cpu_count = 1;
    }
}

/* The share of the work of one thread: a range of the batch, and a range
 * of the rows and columns of each of its products. */
struct task {
    const struct gemm_impl *impl;
    size_t esize;
    const char *a, *b;
    char *c;
    const uint64_t *a_off, *b_off; /* per batch entry, in elements */
    uint64_t batch0, batch1;
    size_t M, N, K;
    size_t m0, m1, n0, n1;
    void *ap, *bp;
};

/* The integer product, wrapping: int64 and uint64 give the same bits. */
static void
int_gemm(const struct gemm_args *g)
{
    const uint64_t *A = g->A, *B = g->B;
    uint64_t *C = g->C;

    for (size_t i = 0; i < g->M; i++) {
        uint64_t *crow = C + i * g->ldc;
        memset(crow, 0, g->N * sizeof *crow);
        for (size_t p = 0; p < g->K; p++) {
            const uint64_t a = A[i * g->lda + p];
            const uint64_t *brow = B + p * g->ldb;
            for (size_t j = 0; j < g->N; j++) {
                crow[j] += a * brow[j];
            }
        }
    }
}

static void *
task_run(void *arg)
{
    const struct task *t = arg;

    for (uint64_t bi = t->batch0; bi < t->batch1; bi++) {
        struct gemm_args g;
        g.M = t->m1 - t->m0;
        g.N = t->n1 - t->n0;
        g.K = t->K;
        g.lda = t->K;
        g.ldb = t->N;
        g.ldc = t->N;
        g.A = t->a + (t->a_off[bi] + t->m0 * t->K) * t->esize;
        g.B = t->b + (t->b_off[bi] + t->n0) * t->esize;
        g.C = t->c + (bi * t->M * t->N + t->m0 * t->N + t->n0) * t->esize;
        if (g.M == 0 || g.N == 0) {
            continue;
        }
        if (t->impl != NULL) {
            if (!gemv(&g, t->esize)) {
                t->impl->run(&g, t->ap, t->bp);
            }
        } else {
            int_gemm(&g);
        }
    }
    return NULL;
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
    size_t per_thread;
    bool a_direct, b_direct, c_direct;
    struct task tasks[MAX_THREADS];
    pthread_t tids[MAX_THREADS];
    int nthreads = 1, started = 0;
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
    c_direct = out->dtype == kt && (compute == kt || compute == out->dtype);

    /* How many threads, splitting what. */
    pthread_once(&cpu_once, count_cpus);
    work = batch * M * N * (uint64_t)(K == 0 ? 1 : K);
    if (impl != NULL && cpu_count > 1 && work >= 2 * THREAD_MIN_WORK) {
        uint64_t by_work = work / THREAD_MIN_WORK;
        nthreads = cpu_count < MAX_THREADS ? cpu_count : MAX_THREADS;
        if ((uint64_t)nthreads > by_work) {
            nthreads = (int)by_work;
        }
    }
    for (int t = 0; t < MAX_THREADS; t++) {
        memset(&tasks[t], 0, sizeof tasks[t]);
        tasks[t].batch0 = 0;
        tasks[t].batch1 = batch;
        tasks[t].m1 = M;
        tasks[t].n1 = N;
    }
    if (nthreads > 1) {
        if (batch >= (uint64_t)nthreads) {
            for (int t = 0; t < nthreads; t++) {
                tasks[t].batch0 = batch * (uint64_t)t / (uint64_t)nthreads;
                tasks[t].batch1 =
                    batch * (uint64_t)(t + 1) / (uint64_t)nthreads;
            }
        } else if (N >= (size_t)nthreads * impl->nr * 2) {
            size_t units = (N + impl->nr - 1) / impl->nr;
            for (int t = 0; t < nthreads; t++) {
                size_t u0 = units * (size_t)t / (size_t)nthreads;
                size_t u1 = units * (size_t)(t + 1) / (size_t)nthreads;
                tasks[t].n0 = u0 * impl->nr;
                tasks[t].n1 = u1 * impl->nr < N ? u1 * impl->nr : N;
            }
        } else if (M >= (size_t)nthreads * impl->mr * 2) {
            size_t units = (M + impl->mr - 1) / impl->mr;
            for (int t = 0; t < nthreads; t++) {
                size_t u0 = units * (size_t)t / (size_t)nthreads;
                size_t u1 = units * (size_t)(t + 1) / (size_t)nthreads;
                tasks[t].m0 = u0 * impl->mr;
                tasks[t].m1 = u1 * impl->mr < M ? u1 * impl->mr : M;
            }
        } else {
            nthreads = 1;
        }
    }

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
        for (int t = 0; t < nthreads; t++) {
            size_t w = tasks[t].n1 - tasks[t].n0;
            widest = w > widest ? w : widest;
        }
        widest = widest < NC ? widest : NC;
        widest = (widest + impl->nr - 1) / impl->nr * impl->nr;
        ap_elems = (size_t)MC * KC;
        bp_elems = (size_t)KC * widest;
    }
    per_thread = align64(ap_elems * esize) + align64(bp_elems * esize);
    total = a_bytes + b_bytes + c_bytes + off_bytes +
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

    for (int t = 0; t < nthreads; t++) {
        tasks[t].impl = impl;
        tasks[t].esize = esize;
        tasks[t].a = A;
        tasks[t].b = B;
        tasks[t].c = C;
        tasks[t].a_off = a_off;
        tasks[t].b_off = b_off;
        tasks[t].M = M;
        tasks[t].N = N;
        tasks[t].K = K;
        tasks[t].ap = p + (size_t)t * per_thread;
        tasks[t].bp = p + (size_t)t * per_thread + align64(ap_elems * esize);
    }
    /* Workers take tasks 1..n-1; the caller runs task 0, and any task
     * whose thread could not be started. */
    for (int t = 1; t < nthreads; t++) {
        if (pthread_create(&tids[t], NULL, task_run, &tasks[t]) != 0) {
            break;
        }
        started = t;
    }
    task_run(&tasks[0]);
    for (int t = started + 1; t < nthreads; t++) {
        task_run(&tasks[t]);
    }
    for (int t = 1; t <= started; t++) {
        pthread_join(tids[t], NULL);
    }
    if (!c_direct) {
        nrtemu__kernel_store(out, compute, kt, C);
    }
    return NRT_SUCCESS;
}
