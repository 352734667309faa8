/*
 * test_kernels_fp8.c - fp8 arithmetic of two operands (add, sub, mul,
 * div, rem, mod, floor_divide, and pow, which stays looked up), computed
 * with AVX-512 VBMI where the CPU has it (kernel_table.c), else looked up
 * in a table of pairs: every pair of codes of every format, against the
 * plain kernel computing the same op in pieces too small for a table.
 * (Its own program: the process's table slots are few.)
 */
#include "test.h"

#include <math.h>

#include "kernels/convert.h"
#include "kernels/cpu.h"
#include "kernels/kernel.h"
#include "kernels/kernel_table.h"
#include "kernels/simd.h"

#if defined(__x86_64__) && defined(__SSE2__)
#include <xmmintrin.h>
#endif

static const enum nrtemu_op ops[] = {
    NRTEMU_OP_ADD, NRTEMU_OP_SUB,          NRTEMU_OP_MUL, NRTEMU_OP_DIV,
    NRTEMU_OP_REM, NRTEMU_OP_FLOOR_DIVIDE, NRTEMU_OP_MOD, NRTEMU_OP_POW};

/*
 * op(a, b) over `n` elements at offset `off` of a and b, big enough for
 * the table path, against the kernel in pieces of `piece` (too small for
 * it): bit for bit, and nothing written outside the out.
 */
static void
check_run(enum nrtemu_op op, enum nrtemu_dtype compute, enum nrtemu_dtype dt,
          const uint8_t *a, const uint8_t *b, size_t n, size_t piece)
{
    static uint8_t got[(1 << 17) + 128], want[1 << 17];
    struct nrtemu_scratch s = {0};
    struct nrtemu_array in[2] = {{(void *)a, dt, 1, {n}},
                                 {(void *)b, dt, 1, {n}}};
    struct nrtemu_array out = {got + 64, dt, 1, {n}};

    ASSERT_TRUE(n <= sizeof want);
    memset(got, 0xee, sizeof got);
    ASSERT_TRUE(nrtemu__kernel_table_run(op, compute, &out, in, 2, &s));
    for (size_t p = 0; p < n; p += piece) {
        size_t len = n - p < piece ? n - p : piece;
        struct nrtemu_array pin[2] = {{(void *)(a + p), dt, 1, {len}},
                                      {(void *)(b + p), dt, 1, {len}}};
        struct nrtemu_array pout = {want + p, dt, 1, {len}};
        ASSERT_TRUE(!nrtemu__kernel_table_run(op, compute, &pout, pin, 2, &s));
        ASSERT_EQ(nrtemu__kernel_elementwise(op, compute, &pout, pin, 2, &s),
                  NRT_SUCCESS);
    }
    for (size_t i = 0; i < n; i++) {
        if (got[64 + i] != want[i]) {
            TEST_FAIL_("op %d of %s (compute %s) of 0x%02x, 0x%02x: 0x%02x "
                       "by the table path, 0x%02x by the kernel",
                       (int)op, nrtemu__dtype_name(dt),
                       nrtemu__dtype_name(compute), a[i], b[i], got[64 + i],
                       want[i]);
        }
    }
    for (size_t i = 0; i < 64; i++) {
        ASSERT_EQ(got[i], 0xee);
        ASSERT_EQ(got[64 + n + i], 0xee);
    }
    nrtemu__scratch_free(&s);
}

/* Every pair of codes, twice over (pieces of 1024: the kernel's vector
 * loops, as the table was built). */
static void
check_pairs(enum nrtemu_op op, enum nrtemu_dtype compute, enum nrtemu_dtype dt)
{
    static uint8_t a[1 << 17], b[1 << 17];

    for (size_t i = 0; i < sizeof a; i++) {
        a[i] = (uint8_t)(i >> 8);
        b[i] = (uint8_t)i;
    }
    check_run(op, compute, dt, a, b, sizeof a, 1024);
}

/* Random codes at an odd offset and of an odd count: the computed path's
 * masked tail, special codes among the others.  No two NaNs in a pair:
 * which one the kernel keeps differs between its vector and scalar
 * steps, and odd pieces take both. */
static void
check_tail(enum nrtemu_op op, enum nrtemu_dtype dt)
{
    enum { N = 65536 + 4096 - 37, OFF = 5 };
    static uint8_t a[N + OFF], b[N + OFF];
    uint8_t codes[256];
    float v[256];
    uint32_t x = 12345;

    for (int c = 0; c < 256; c++) {
        codes[c] = (uint8_t)c;
    }
    nrtemu__convert(NRTEMU_DTYPE_FLOAT32, v, dt, codes, 1, 256);
    for (size_t i = 0; i < N + OFF; i++) {
        x = x * 1103515245u + 12345u;
        a[i] = (uint8_t)(x >> 24);
        b[i] = (uint8_t)(x >> 16);
        if (v[a[i]] != v[a[i]] && v[b[i]] != v[b[i]]) {
            b[i] = 0;
        }
    }
    check_run(op, dt, dt, a + OFF, b + OFF, N, 1000);
}

/* The out the first or the second operand itself: the same results as
 * into an out of its own, special lanes (which the computed path takes
 * from the table after storing its other results) included. */
static void
check_in_place(enum nrtemu_op op, enum nrtemu_dtype dt)
{
    enum { N = 65536 + 1000 + 3 };
    static uint8_t a[N], b[N], want[N], io[N];
    struct nrtemu_scratch s = {0};
    uint32_t x = 777;

    for (size_t i = 0; i < N; i++) {
        x = x * 1103515245u + 12345u;
        a[i] = (uint8_t)(x >> 24);
        b[i] = (uint8_t)(x >> 16);
    }
    for (int k = 0; k < 3; k++) {
        struct nrtemu_array in[2] = {{k == 1 ? io : a, dt, 1, {N}},
                                     {k == 2 ? io : b, dt, 1, {N}}};
        struct nrtemu_array out = {k == 0 ? want : io, dt, 1, {N}};
        memcpy(io, k == 1 ? a : b, N);
        ASSERT_TRUE(nrtemu__kernel_table_run(op, dt, &out, in, 2, &s));
        if (k > 0) {
            ASSERT_TRUE(memcmp(io, want, N) == 0);
        }
    }
    nrtemu__scratch_free(&s);
}

/* pow looked up from registers while the codes stay in a window of 32 x
 * 32 pairs (kernel_table.c): every pair, window by window (the kernel
 * moves its window 64 times, paid for by 16 steps in each); then
 * stretches of codes near each other at random places, the top codes (a
 * window's rows and columns past code 255) included, inside 32 and of
 * random spreads (over 32: the gathers), until the kernel stops moving,
 * with a tail. */
static void
check_windows(enum nrtemu_dtype dt)
{
    enum { N = 65536 + 37 };
    static uint8_t a[N], b[N];
    uint8_t codes[256];
    float v[256];
    uint32_t x = 4242;

    for (int j = 0; j < 65536; j++) {
        int w = j / 1024, k = j % 1024;
        a[j] = (uint8_t)(w / 8 * 32 + k / 32);
        b[j] = (uint8_t)(w % 8 * 32 + k % 32);
    }
    check_run(NRTEMU_OP_POW, dt, dt, a, b, 65536, 1024);
    for (int c = 0; c < 256; c++) {
        codes[c] = (uint8_t)c;
    }
    nrtemu__convert(NRTEMU_DTYPE_FLOAT32, v, dt, codes, 1, 256);
    unsigned ba = 0, bb = 0, spread = 0;
    for (size_t i = 0; i < N; i++) {
        x = x * 1103515245u + 12345u;
        if (i % 640 == 0) {
            unsigned q = (unsigned)(i / 640);
            ba = q % 4 == 0 ? 255 - q % 32 : x >> 24;
            bb = q % 4 == 0 ? 255 - q % 16 : (x >> 16) & 0xff;
            spread = q % 4 < 2 ? 31 : (x >> 8) % 48;
        }
        unsigned ca = ba + (x >> 4) % (spread + 1);
        unsigned cb = bb + (x >> 12) % (spread + 1);
        a[i] = (uint8_t)(ca > 255 ? 255 : ca);
        b[i] = (uint8_t)(cb > 255 ? 255 : cb);
        if (v[a[i]] != v[a[i]] && v[b[i]] != v[b[i]]) {
            b[i] = 0;
        }
    }
    check_run(NRTEMU_OP_POW, dt, dt, a, b, N, 1024);
}

static void
test_fp8_pairs(void)
{
    for (int t = 0; t < 4; t++) {
        enum nrtemu_dtype f =
            (enum nrtemu_dtype)(NRTEMU_DTYPE_FLOAT8_E4M3 + t);
        for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
            check_pairs(ops[k], f, f);
            check_tail(ops[k], f);
            check_in_place(ops[k], f);
        }
        check_windows(f);
    }
    /* float32 as the compute dtype: rounded once, as the fp8 one */
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        check_pairs(ops[k], NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_FLOAT8_E4M3);
    }
}

/* Known float8_e4m3 results of the computed ops (rounded once from the
 * float32 result, as NumPy's float32 op cast to ml_dtypes gives), each
 * pair over a whole out (blocks all exact or all inexact), then all of
 * them in turn (mixed blocks): signs of zero results, ties to even,
 * overflow to infinity, a zero divisor. */
static void
test_fp8_known_values(void)
{
    static const struct {
        enum nrtemu_op op;
        float a, b, want;
    } cases[] = {
        {NRTEMU_OP_DIV, 1.0f, 3.0f, 0.34375f},
        {NRTEMU_OP_DIV, -1.0f, 3.0f, -0.34375f},
        {NRTEMU_OP_DIV, 240.0f, 0.5f, INFINITY},
        {NRTEMU_OP_DIV, -1.0f, 0.0f, -INFINITY},
        {NRTEMU_OP_DIV, 0.0f, -2.0f, -0.0f},
        {NRTEMU_OP_MUL, -0.0f, 3.0f, -0.0f},
        {NRTEMU_OP_MUL, -1.5f, -1.25f, 1.875f},
        {NRTEMU_OP_REM, -3.0f, 2.0f, -1.0f},
        {NRTEMU_OP_REM, 3.0f, -2.0f, 1.0f},
        {NRTEMU_OP_REM, -4.0f, 2.0f, -0.0f},
        {NRTEMU_OP_REM, 5.5f, 2.0f, 1.5f},
        {NRTEMU_OP_MOD, -3.0f, 2.0f, 1.0f},
        {NRTEMU_OP_MOD, 3.0f, -2.0f, -1.0f},
        {NRTEMU_OP_MOD, -4.0f, 2.0f, 0.0f},
        {NRTEMU_OP_MOD, 4.0f, -2.0f, -0.0f},
        {NRTEMU_OP_MOD, -0.0625f, 2.0f, 2.0f}, /* 1.9375: a tie, to even */
        {NRTEMU_OP_MOD, 0.75f, 0.5f, 0.25f},
        {NRTEMU_OP_FLOOR_DIVIDE, -3.0f, 2.0f, -2.0f},
        {NRTEMU_OP_FLOOR_DIVIDE, 3.0f, 2.0f, 1.0f},
        {NRTEMU_OP_FLOOR_DIVIDE, 0.5f, -2.0f, -1.0f},
        {NRTEMU_OP_FLOOR_DIVIDE, -0.0f, 2.0f, -0.0f},
        {NRTEMU_OP_FLOOR_DIVIDE, 17.0f, 1.0f, 16.0f}, /* a tie, to even */
        {NRTEMU_OP_FLOOR_DIVIDE, 200.0f, 0.125f, INFINITY},
        {NRTEMU_OP_ADD, 240.0f, 16.0f, INFINITY},
        {NRTEMU_OP_SUB, 1.5f, 1.5f, 0.0f},
    };
    enum { N = 65536 + 64 * 3 + 5, C = sizeof cases / sizeof *cases };
    const enum nrtemu_dtype f = NRTEMU_DTYPE_FLOAT8_E4M3;
    static uint8_t a[N], b[N], o[N];
    uint8_t ca[C], cb[C], cw[C];
    float va[C], vb[C], vw[C];
    struct nrtemu_scratch s = {0};
    struct nrtemu_array in[2] = {{a, f, 1, {N}}, {b, f, 1, {N}}};
    struct nrtemu_array out = {o, f, 1, {N}};

    for (size_t k = 0; k < C; k++) {
        va[k] = cases[k].a;
        vb[k] = cases[k].b;
        vw[k] = cases[k].want;
    }
    nrtemu__convert(f, ca, NRTEMU_DTYPE_FLOAT32, va, 1, C);
    nrtemu__convert(f, cb, NRTEMU_DTYPE_FLOAT32, vb, 1, C);
    nrtemu__convert(f, cw, NRTEMU_DTYPE_FLOAT32, vw, 1, C);
    for (size_t k = 0; k < C; k++) {
        memset(a, ca[k], N);
        memset(b, cb[k], N);
        ASSERT_TRUE(nrtemu__kernel_table_run(cases[k].op, f, &out, in, 2, &s));
        for (size_t i = 0; i < N; i++) {
            if (o[i] != cw[k]) {
                TEST_FAIL_("op %d of %g, %g: 0x%02x, want 0x%02x",
                           (int)cases[k].op, (double)va[k], (double)vb[k],
                           o[i], cw[k]);
            }
        }
    }
    /* each op over every case in turn: the op's own cases must come out */
    for (size_t k = 0; k < C; k++) {
        for (size_t i = 0; i < N; i++) {
            a[i] = ca[(i + k) % C];
            b[i] = cb[(i + k) % C];
        }
        ASSERT_TRUE(nrtemu__kernel_table_run(cases[k].op, f, &out, in, 2, &s));
        for (size_t i = 0; i < N; i++) {
            size_t j = (i + k) % C;
            if (cases[j].op == cases[k].op && o[i] != cw[j]) {
                TEST_FAIL_("op %d of %g, %g (mixed): 0x%02x, want 0x%02x",
                           (int)cases[j].op, (double)va[j], (double)vb[j],
                           o[i], cw[j]);
            }
        }
    }
    /* 0 / 0 and fmod(x, 0): NaN */
    for (int k = 0; k < 2; k++) {
        float nan_of[2][2] = {{0.0f, 0.0f}, {1.5f, 0.0f}}, back;
        uint8_t c[2];
        nrtemu__convert(f, c, NRTEMU_DTYPE_FLOAT32, nan_of[k], 1, 2);
        memset(a, c[0], N);
        memset(b, c[1], N);
        ASSERT_TRUE(nrtemu__kernel_table_run(
            k == 0 ? NRTEMU_OP_DIV : NRTEMU_OP_REM, f, &out, in, 2, &s));
        nrtemu__convert(NRTEMU_DTYPE_FLOAT32, &back, f, o + N - 1, 1, 1);
        ASSERT_TRUE(back != back);
    }
    nrtemu__scratch_free(&s);
}

/* Flush to zero and denormals are zero in the calling thread (as
 * -ffast-math sets them) change nothing: the computed path rounds through
 * float32 subnormals, which they would flush; the kernel's fp8 steps,
 * and so the table, see none. */
static void
test_fp8_flush_to_zero(void)
{
#if defined(__x86_64__) && defined(__SSE2__)
    unsigned csr = _mm_getcsr();

    _mm_setcsr(csr | 0x8040u);
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        check_pairs(ops[k], NRTEMU_DTYPE_FLOAT8_E4M3,
                    NRTEMU_DTYPE_FLOAT8_E4M3);
    }
    _mm_setcsr(csr);
#endif
}

/* Computed indeed, on a CPU with AVX-512 VBMI (the path would otherwise
 * go untested): float8_e4m3's arithmetic but pow; int8 never. */
static void
test_fp8_computed(void)
{
    const enum nrtemu_dtype f = NRTEMU_DTYPE_FLOAT8_E4M3;
    bool vbmi = false;

#if NRTEMU_X86_CLONES
    vbmi = nrtemu__cpu_has(NRTEMU_CPU_V4_VBMI);
#endif
    printf("   (AVX-512 VBMI: %s)\n", vbmi ? "yes" : "no");
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        bool want = vbmi && ops[k] != NRTEMU_OP_POW;
        ASSERT_EQ(nrtemu__kernel_table_computed(ops[k], f, f), want);
        ASSERT_EQ(
            nrtemu__kernel_table_computed(ops[k], NRTEMU_DTYPE_FLOAT32, f),
            want);
    }
    ASSERT_TRUE(!nrtemu__kernel_table_computed(
        NRTEMU_OP_MUL, NRTEMU_DTYPE_INT8, NRTEMU_DTYPE_INT8));
}

int
main(void)
{
    test_begin("test_kernels_fp8");
    RUN_TEST(test_fp8_pairs);
    RUN_TEST(test_fp8_known_values);
    RUN_TEST(test_fp8_flush_to_zero);
    RUN_TEST(test_fp8_computed);
    return 0;
}
