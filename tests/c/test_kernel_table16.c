/*
 * test_kernel_table16.c - unary ops on bfloat16 and float16 operands by
 * table lookup (kernel_table16.c), against the kernel computing them.
 */
#include "test.h"

#include "kernels/cpu.h"

#include "kernels/kernel.h"
#include "kernels/kernel_table.h"

enum { CODES = 65536, PIECE = 1024 };

static uint16_t codes[CODES], by_table[CODES], computed[CODES];

/* Every code of `dt` through `op`, by table (plain stores, streamed, and
 * in place) and computed in pieces too small for a table: bit for bit. */
static void
check_op(enum nrtemu_op op, enum nrtemu_dtype compute, enum nrtemu_dtype dt,
         enum nrtemu_dtype out_dt)
{
    struct nrtemu_scratch s = {0};
    struct nrtemu_array in = {codes, dt, 1, {CODES}};
    struct nrtemu_array out = {by_table, out_dt, 1, {CODES}};

    for (size_t i = 0; i < CODES; i++) {
        codes[i] = (uint16_t)(i * 40503u); /* every code, shuffled */
    }
    for (size_t p = 0; p < CODES; p += PIECE) {
        struct nrtemu_array pin = {codes + p, dt, 1, {PIECE}};
        struct nrtemu_array pout = {computed + p, out_dt, 1, {PIECE}};
        ASSERT_TRUE(
            !nrtemu__kernel_table16_run(op, compute, &pout, &pin, 1, &s, 0));
        ASSERT_EQ(nrtemu__kernel_elementwise(op, compute, &pout, &pin, 1, &s),
                  NRT_SUCCESS);
    }
    for (int pass = 0; pass < 3; pass++) {
        memset(by_table, 0xee, sizeof by_table);
        if (pass == 2) {
            memcpy(by_table, codes, sizeof by_table);
            in.data = by_table;
        }
        ASSERT_TRUE(nrtemu__kernel_table16_run(op, compute, &out, &in, 1, &s,
                                               pass == 1));
        in.data = codes;
        for (size_t i = 0; i < CODES; i++) {
            if (by_table[i] != computed[i]) {
                TEST_FAIL_("op %d of %s (pass %d) at code 0x%04x: 0x%04x by "
                           "table, 0x%04x computed",
                           (int)op, nrtemu__dtype_name(dt), pass, codes[i],
                           by_table[i], computed[i]);
            }
        }
    }
    /* The elementwise kernel takes the table itself. */
    memset(by_table, 0xee, sizeof by_table);
    ASSERT_EQ(nrtemu__kernel_elementwise(op, compute, &out, &in, 1, &s),
              NRT_SUCCESS);
    ASSERT_TRUE(memcmp(by_table, computed, sizeof by_table) == 0);
    nrtemu__scratch_free(&s);
}

/* Every unary op of both dtypes, in its own compute dtype and in
 * float32, with a result of the same dtype; a few other results. */
static void
test_every_code(void)
{
    static const enum nrtemu_dtype dts[] = {NRTEMU_DTYPE_BFLOAT16,
                                            NRTEMU_DTYPE_FLOAT16};
    static const enum nrtemu_op ops[] = {
        NRTEMU_OP_NEG,        NRTEMU_OP_ABS,       NRTEMU_OP_EXP,
        NRTEMU_OP_LOG,        NRTEMU_OP_SQRT,      NRTEMU_OP_RSQRT,
        NRTEMU_OP_RECIPROCAL, NRTEMU_OP_SQUARE,    NRTEMU_OP_TANH,
        NRTEMU_OP_SIGMOID,    NRTEMU_OP_RELU,      NRTEMU_OP_GELU,
        NRTEMU_OP_SIN,        NRTEMU_OP_COS,       NRTEMU_OP_FLOOR,
        NRTEMU_OP_CEIL,       NRTEMU_OP_SIGN,      NRTEMU_OP_EXPM1,
        NRTEMU_OP_LOG1P,      NRTEMU_OP_CBRT,      NRTEMU_OP_ERF,
        NRTEMU_OP_ROUND_EVEN, NRTEMU_OP_ROUND_AWAY};

    for (size_t d = 0; d < 2; d++) {
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
            check_op(ops[k], dts[d], dts[d], dts[d]);
        }
        check_op(NRTEMU_OP_EXP, NRTEMU_DTYPE_FLOAT32, dts[d], dts[d]);
        check_op(NRTEMU_OP_SIN, NRTEMU_DTYPE_FLOAT32, dts[d], dts[d]);
        check_op(NRTEMU_OP_TANH, dts[d], dts[d], dts[1 - d]);
        check_op(NRTEMU_OP_FLOOR, dts[d], dts[d], NRTEMU_DTYPE_INT16);
    }
}

/*
 * The ops computed in registers with AVX-512 (relu, sign, square...):
 * taken where the build and CPU have it, and bit for bit the kernel's on
 * every code above (test_every_code); here also on lengths that end in
 * part of a step, from an odd address, in place, with nothing stored
 * past the end.  exp and tanh, looked up, the same way (lookup16's steps
 * of eight).
 */
static void
test_computed(void)
{
    static const enum nrtemu_op ops[] = {
        NRTEMU_OP_RELU, NRTEMU_OP_SIGN, NRTEMU_OP_SQUARE, NRTEMU_OP_RECIPROCAL,
        NRTEMU_OP_SQRT, NRTEMU_OP_EXP,  NRTEMU_OP_TANH};
    static const size_t lens[] = {4096,      4097,      4096 + 15,
                                  4096 + 17, 4096 + 31, 4096 + 33};
    static uint16_t a[8192], o[8192], ref[8192];
    struct nrtemu_scratch s = {0};

#if !defined(NRTEMU_NO_CPU_DISPATCH) && defined(__x86_64__)
    ASSERT_EQ(
        nrtemu__kernel_table16_computed(NRTEMU_OP_RELU, NRTEMU_DTYPE_FLOAT16),
        nrtemu__cpu_has(NRTEMU_CPU_V4));
#else
    ASSERT_TRUE(!nrtemu__kernel_table16_computed(NRTEMU_OP_RELU,
                                                 NRTEMU_DTYPE_FLOAT16));
#endif
    ASSERT_TRUE(
        !nrtemu__kernel_table16_computed(NRTEMU_OP_EXP, NRTEMU_DTYPE_FLOAT16));
    ASSERT_TRUE(!nrtemu__kernel_table16_computed(NRTEMU_OP_RSQRT,
                                                 NRTEMU_DTYPE_FLOAT16));
    ASSERT_TRUE(
        !nrtemu__kernel_table16_computed(NRTEMU_OP_RELU, NRTEMU_DTYPE_INT16));
    for (int d = 0; d < 2; d++) {
        enum nrtemu_dtype dt =
            d ? NRTEMU_DTYPE_BFLOAT16 : NRTEMU_DTYPE_FLOAT16;
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
            for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
                size_t n = lens[l];
                struct nrtemu_array in = {a + 1, dt, 1, {n}};
                struct nrtemu_array out = {o + 1, dt, 1, {n}};
                for (size_t i = 0; i < 8192; i++) {
                    a[i] = (uint16_t)(i * 7919u + l);
                }
                memset(o, 0xee, sizeof o);
                for (size_t p = 0; p < n; p += 1000) {
                    size_t c = n - p < 1000 ? n - p : 1000;
                    struct nrtemu_array pin = {a + 1 + p, dt, 1, {c}};
                    struct nrtemu_array pout = {ref + p, dt, 1, {c}};
                    ASSERT_EQ(nrtemu__kernel_elementwise(ops[k], dt, &pout,
                                                         &pin, 1, &s),
                              NRT_SUCCESS);
                }
                ASSERT_TRUE(nrtemu__kernel_table16_run(ops[k], dt, &out, &in,
                                                       1, &s, 0));
                ASSERT_TRUE(memcmp(o + 1, ref, n * sizeof *o) == 0);
                ASSERT_EQ(o[0], 0xeeee);
                ASSERT_EQ(o[n + 1], 0xeeee);
                in.data = out.data; /* in place, streamed */
                memcpy(o + 1, a + 1, n * sizeof *o);
                ASSERT_TRUE(nrtemu__kernel_table16_run(ops[k], dt, &out, &in,
                                                       1, &s, 1));
                ASSERT_TRUE(memcmp(o + 1, ref, n * sizeof *o) == 0);
                ASSERT_EQ(o[n + 1], 0xeeee);
            }
        }
    }
    nrtemu__scratch_free(&s);
}

/* What the table path leaves to the kernel: binary ops, broadcasts,
 * other dtypes, 4-byte results, small outs. */
static void
test_not_taken(void)
{
    static uint16_t a[8192], b[8192], o[8192];
    static float f[8192];
    struct nrtemu_scratch s = {0};
    struct nrtemu_array in[2] = {{a, NRTEMU_DTYPE_FLOAT16, 1, {8192}},
                                 {b, NRTEMU_DTYPE_FLOAT16, 1, {8192}}};
    struct nrtemu_array out = {o, NRTEMU_DTYPE_FLOAT16, 1, {8192}};
    struct nrtemu_array wide = {f, NRTEMU_DTYPE_FLOAT32, 1, {8192}};
    struct nrtemu_array row = {a, NRTEMU_DTYPE_FLOAT16, 2, {1, 8192}};
    struct nrtemu_array square = {o, NRTEMU_DTYPE_FLOAT16, 2, {8192, 1}};
    struct nrtemu_array i16 = {a, NRTEMU_DTYPE_INT16, 1, {8192}};
    struct nrtemu_array small[2] = {{a, NRTEMU_DTYPE_FLOAT16, 1, {4095}},
                                    {o, NRTEMU_DTYPE_FLOAT16, 1, {4095}}};

    ASSERT_TRUE(nrtemu__kernel_table16_run(NRTEMU_OP_EXP, NRTEMU_DTYPE_FLOAT16,
                                           &out, in, 1, &s, 0));
    ASSERT_TRUE(!nrtemu__kernel_table16_run(
        NRTEMU_OP_ADD, NRTEMU_DTYPE_FLOAT16, &out, in, 2, &s, 0));
    ASSERT_TRUE(!nrtemu__kernel_table16_run(
        NRTEMU_OP_EXP, NRTEMU_DTYPE_FLOAT32, &wide, in, 1, &s, 0));
    ASSERT_TRUE(!nrtemu__kernel_table16_run(
        NRTEMU_OP_EXP, NRTEMU_DTYPE_FLOAT16, &square, &row, 1, &s, 0));
    ASSERT_TRUE(!nrtemu__kernel_table16_run(NRTEMU_OP_NEG, NRTEMU_DTYPE_INT16,
                                            &out, &i16, 1, &s, 0));
    ASSERT_TRUE(!nrtemu__kernel_table16_run(
        NRTEMU_OP_EXP, NRTEMU_DTYPE_FLOAT16, &small[1], small, 1, &s, 0));
    ASSERT_TRUE(!nrtemu__kernel_table16_run(
        NRTEMU_OP_IS_FINITE, NRTEMU_DTYPE_FLOAT16, &out, in, 1, &s, 0));
    nrtemu__scratch_free(&s);
}

#if defined(__x86_64__) && defined(__SSE__)
#include <xmmintrin.h>

/* A table first built by a thread that flushes subnormals (FTZ, DAZ)
 * holds the results of the default modes: bfloat16 sqrt of its subnormal
 * codes is normal, not zero. */
static void
test_built_in_default_modes(void)
{
    struct nrtemu_scratch s = {0};
    struct nrtemu_array in = {codes, NRTEMU_DTYPE_BFLOAT16, 1, {CODES}};
    struct nrtemu_array out = {by_table, NRTEMU_DTYPE_BFLOAT16, 1, {CODES}};
    unsigned csr = _mm_getcsr();

    for (size_t i = 0; i < CODES; i++) {
        codes[i] = (uint16_t)i;
    }
    _mm_setcsr(csr | 0x8040u);
    ASSERT_TRUE(nrtemu__kernel_table16_run(
        NRTEMU_OP_SQRT, NRTEMU_DTYPE_FLOAT32, &out, &in, 1, &s, 0));
    _mm_setcsr(csr);
    for (size_t p = 0; p < CODES; p += PIECE) {
        struct nrtemu_array pin = {
            codes + p, NRTEMU_DTYPE_BFLOAT16, 1, {PIECE}};
        struct nrtemu_array pout = {
            computed + p, NRTEMU_DTYPE_BFLOAT16, 1, {PIECE}};
        ASSERT_EQ(nrtemu__kernel_elementwise(NRTEMU_OP_SQRT,
                                             NRTEMU_DTYPE_FLOAT32, &pout, &pin,
                                             1, &s),
                  NRT_SUCCESS);
    }
    ASSERT_TRUE(memcmp(by_table, computed, sizeof by_table) == 0);
    ASSERT_TRUE(by_table[1] != 0); /* sqrt of the smallest subnormal */
    nrtemu__scratch_free(&s);
}
#endif

int
main(void)
{
    test_begin("test_kernel_table16");
    RUN_TEST(test_every_code);
    RUN_TEST(test_computed);
    RUN_TEST(test_not_taken);
#if defined(__x86_64__) && defined(__SSE__)
    RUN_TEST(test_built_in_default_modes);
#endif
    return 0;
}
