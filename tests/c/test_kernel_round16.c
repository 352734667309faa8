/*
 * test_kernel_round16.c - floor, ceil, round_even and round_away of
 * float16 and bfloat16 on the bits (kernel_round16.c), against the kernel
 * computing them in float32, on every code.
 */
#include "test.h"

#include "kernels/kernel.h"
#include "kernels/kernel_table.h"

enum { CODES = 65536, PIECE = 1024 };

static uint16_t codes[CODES], by_bits[CODES], computed[CODES];

static const enum nrtemu_op round_ops[] = {NRTEMU_OP_FLOOR, NRTEMU_OP_CEIL,
                                           NRTEMU_OP_ROUND_EVEN,
                                           NRTEMU_OP_ROUND_AWAY};

/* Every code of `dt` through `op` on the bits (plain stores, streamed, in
 * place, and through the elementwise kernel in pieces with odd tails)
 * against the kernel in float32, in pieces too small for a table. */
static void
check_op(enum nrtemu_op op, enum nrtemu_dtype dt)
{
    struct nrtemu_scratch s = {0};
    struct nrtemu_array in = {codes, dt, 1, {CODES}};
    struct nrtemu_array out = {by_bits, dt, 1, {CODES}};

    for (size_t i = 0; i < CODES; i++) {
        codes[i] = (uint16_t)(i * 40503u); /* every code, shuffled */
    }
    for (size_t p = 0; p < CODES; p += PIECE) {
        struct nrtemu_array pin = {codes + p, dt, 1, {PIECE}};
        struct nrtemu_array pout = {computed + p, dt, 1, {PIECE}};
        ASSERT_TRUE(!nrtemu__kernel_round16_run(op, NRTEMU_DTYPE_FLOAT32,
                                                &pout, &pin, 1, 0));
        ASSERT_EQ(nrtemu__kernel_elementwise(op, NRTEMU_DTYPE_FLOAT32, &pout,
                                             &pin, 1, &s),
                  NRT_SUCCESS);
    }
    for (int pass = 0; pass < 4; pass++) {
        memset(by_bits, 0xee, sizeof by_bits);
        if (pass == 2) {
            memcpy(by_bits, codes, sizeof by_bits);
            in.data = by_bits;
        }
        if (pass == 3) {
            /* pieces of 1, 7, 13... elements through the kernel */
            for (size_t p = 0, c = 1; p < CODES; p += c, c = c % 61 + 6) {
                size_t k = CODES - p < c ? CODES - p : c;
                struct nrtemu_array pin = {codes + p, dt, 1, {k}};
                struct nrtemu_array pout = {by_bits + p, dt, 1, {k}};
                ASSERT_EQ(
                    nrtemu__kernel_elementwise(op, dt, &pout, &pin, 1, &s),
                    NRT_SUCCESS);
            }
        } else {
            ASSERT_TRUE(
                nrtemu__kernel_round16_run(op, dt, &out, &in, 1, pass == 1));
        }
        in.data = codes;
        for (size_t i = 0; i < CODES; i++) {
            if (by_bits[i] != computed[i]) {
                TEST_FAIL_("op %d of %s (pass %d) at code 0x%04x: 0x%04x on "
                           "the bits, 0x%04x computed",
                           (int)op, nrtemu__dtype_name(dt), pass, codes[i],
                           by_bits[i], computed[i]);
            }
        }
    }
    nrtemu__scratch_free(&s);
}

static void
test_every_code(void)
{
    for (size_t k = 0; k < sizeof round_ops / sizeof round_ops[0]; k++) {
        check_op(round_ops[k], NRTEMU_DTYPE_FLOAT16);
        check_op(round_ops[k], NRTEMU_DTYPE_BFLOAT16);
    }
}

/* A few values, written out: halves, the sign of zero results, the
 * carry into the next binade, the largest values, infinities and NaN. */
static void
test_values(void)
{
    /* float16 codes: x, floor, ceil, round_even, round_away */
    static const uint16_t f16[][5] = {
        {0x3800, 0x0000, 0x3c00, 0x0000, 0x3c00}, /* 0.5 */
        {0xb800, 0xbc00, 0x8000, 0x8000, 0xbc00}, /* -0.5 */
        {0x4100, 0x4000, 0x4200, 0x4000, 0x4200}, /* 2.5 */
        {0x3e00, 0x3c00, 0x4000, 0x4000, 0x4000}, /* 1.5 */
        {0xbbff, 0xbc00, 0x8000, 0xbc00, 0xbc00}, /* -0.99951 */
        {0x0001, 0x0000, 0x3c00, 0x0000, 0x0000}, /* 2^-24 */
        {0x8001, 0xbc00, 0x8000, 0x8000, 0x8000}, /* -2^-24 */
        {0x8000, 0x8000, 0x8000, 0x8000, 0x8000}, /* -0 */
        {0x63ff, 0x63fe, 0x6400, 0x6400, 0x6400}, /* 1023.5 */
        {0x7bff, 0x7bff, 0x7bff, 0x7bff, 0x7bff}, /* 65504 */
        {0xfc00, 0xfc00, 0xfc00, 0xfc00, 0xfc00}, /* -inf */
        {0x7c01, 0x7e01, 0x7e01, 0x7e01, 0x7e01}, /* NaN, made quiet */
    };
    /* bfloat16 codes, the same columns */
    static const uint16_t bf16[][5] = {
        {0x3f00, 0x0000, 0x3f80, 0x0000, 0x3f80}, /* 0.5 */
        {0xc020, 0xc040, 0xc000, 0xc000, 0xc040}, /* -2.5 */
        {0x42ff, 0x42fe, 0x4300, 0x4300, 0x4300}, /* 127.5 */
        {0x4b7f, 0x4b7f, 0x4b7f, 0x4b7f, 0x4b7f}, /* 16744448 */
        {0xbe80, 0xbf80, 0x8000, 0x8000, 0x8000}, /* -0.25 */
        {0xff81, 0xffc0, 0xffc0, 0xffc0, 0xffc0}, /* NaN, canonical */
    };
    struct {
        enum nrtemu_dtype dt;
        const uint16_t (*rows)[5];
        size_t n;
    } sets[] = {{NRTEMU_DTYPE_FLOAT16, f16, sizeof f16 / sizeof f16[0]},
                {NRTEMU_DTYPE_BFLOAT16, bf16, sizeof bf16 / sizeof bf16[0]}};

    for (size_t d = 0; d < 2; d++) {
        for (size_t r = 0; r < sets[d].n; r++) {
            for (size_t k = 0; k < 4; k++) {
                uint16_t x = sets[d].rows[r][0], got = 0;
                struct nrtemu_array in = {&x, sets[d].dt, 0, {0}};
                struct nrtemu_array out = {&got, sets[d].dt, 0, {0}};
                ASSERT_TRUE(nrtemu__kernel_round16_run(
                    round_ops[k], sets[d].dt, &out, &in, 1, 0));
                ASSERT_UEQ(got, sets[d].rows[r][k + 1]);
            }
        }
    }
}

/* What the bits path leaves to the kernel: other ops and dtypes, another
 * compute dtype or out dtype, a broadcast. */
static void
test_not_taken(void)
{
    static uint16_t a[64], o[64];
    struct nrtemu_array in = {a, NRTEMU_DTYPE_FLOAT16, 1, {64}};
    struct nrtemu_array out = {o, NRTEMU_DTYPE_FLOAT16, 1, {64}};
    struct nrtemu_array bout = {o, NRTEMU_DTYPE_BFLOAT16, 1, {64}};
    struct nrtemu_array i16 = {a, NRTEMU_DTYPE_INT16, 1, {64}};
    struct nrtemu_array row = {a, NRTEMU_DTYPE_FLOAT16, 2, {1, 64}};
    struct nrtemu_array square = {o, NRTEMU_DTYPE_FLOAT16, 2, {64, 1}};

    ASSERT_TRUE(!nrtemu__kernel_round16_run(
        NRTEMU_OP_SIGN, NRTEMU_DTYPE_FLOAT16, &out, &in, 1, 0));
    ASSERT_TRUE(!nrtemu__kernel_round16_run(
        NRTEMU_OP_FLOOR, NRTEMU_DTYPE_FLOAT32, &out, &in, 1, 0));
    ASSERT_TRUE(!nrtemu__kernel_round16_run(
        NRTEMU_OP_FLOOR, NRTEMU_DTYPE_FLOAT16, &bout, &in, 1, 0));
    ASSERT_TRUE(!nrtemu__kernel_round16_run(
        NRTEMU_OP_FLOOR, NRTEMU_DTYPE_INT16, &i16, &i16, 1, 0));
    ASSERT_TRUE(!nrtemu__kernel_round16_run(
        NRTEMU_OP_CEIL, NRTEMU_DTYPE_FLOAT16, &square, &row, 1, 0));
}

int
main(void)
{
    test_begin("test_kernel_round16");
    RUN_TEST(test_every_code);
    RUN_TEST(test_values);
    RUN_TEST(test_not_taken);
    return 0;
}
