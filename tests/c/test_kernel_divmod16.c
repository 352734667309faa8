/*
 * test_kernel_divmod16.c - mod, floor_divide and rem of float16 and
 * bfloat16 (computed in float32 with float32 quotients where the
 * significands allow, kernel_elementwise.c narrow_divmod) against the same
 * ops computed as float32 (float64 quotients, then libm): bit for bit.
 */
#include "test.h"

#include "kernels/kernel.h"

enum { CODES = 65536, DIVISORS = 160 };

static uint16_t xs[CODES], ys[CODES], narrow[CODES], wide[CODES];

/* `op` of every code of `dt` by the divisors: in `dt` (narrow_divmod)
 * and in float32 (the float32 kernel, rounded to `dt` the same way). */
static void
check_op(enum nrtemu_op op, enum nrtemu_dtype dt, const uint16_t *divisors,
         size_t n_div)
{
    struct nrtemu_scratch s = {0};
    struct nrtemu_array in[2] = {{xs, dt, 1, {CODES}}, {ys, dt, 1, {CODES}}};
    struct nrtemu_array out_n = {narrow, dt, 1, {CODES}};
    struct nrtemu_array out_w = {wide, dt, 1, {CODES}};

    for (size_t i = 0; i < CODES; i++) {
        xs[i] = (uint16_t)i;
    }
    for (size_t d = 0; d < n_div; d++) {
        for (size_t i = 0; i < CODES; i++) {
            ys[i] = divisors[d];
        }
        /* Both operands arrays, then the divisor a scalar. */
        for (int scalar = 0; scalar < 2; scalar++) {
            in[1].shape[0] = scalar ? 1 : CODES;
            ASSERT_EQ(nrtemu__kernel_elementwise(op, dt, &out_n, in, 2, &s),
                      NRT_SUCCESS);
            ASSERT_EQ(nrtemu__kernel_elementwise(op, NRTEMU_DTYPE_FLOAT32,
                                                 &out_w, in, 2, &s),
                      NRT_SUCCESS);
            for (size_t i = 0; i < CODES; i++) {
                if (narrow[i] != wide[i]) {
                    TEST_FAIL_("op %d of %s: 0x%04x by 0x%04x: 0x%04x, "
                               "0x%04x in float32",
                               (int)op, nrtemu__dtype_name(dt), xs[i],
                               divisors[d], narrow[i], wide[i]);
                }
            }
        }
    }
    nrtemu__scratch_free(&s);
}

static void
test_every_dividend(void)
{
    static const enum nrtemu_dtype dts[] = {NRTEMU_DTYPE_FLOAT16,
                                            NRTEMU_DTYPE_BFLOAT16};
    static const enum nrtemu_op ops[] = {NRTEMU_OP_MOD, NRTEMU_OP_FLOOR_DIVIDE,
                                         NRTEMU_OP_REM};
    uint16_t divisors[DIVISORS];
    uint32_t seed = 12345;

    for (size_t k = 0; k < 2; k++) {
        bool half = dts[k] == NRTEMU_DTYPE_FLOAT16;
        /* zeros, infinities, NaN, the smallest and largest magnitudes,
         * one and three (signed), then codes at random */
        const uint16_t special[] = {0x0000,
                                    0x8000,
                                    half ? 0x7c00 : 0x7f80,
                                    half ? 0xfc00 : 0xff80,
                                    half ? 0x7e00 : 0x7fc0,
                                    0x0001,
                                    0x8001,
                                    half ? 0x7bff : 0x7f7f,
                                    half ? 0xfbff : 0xff7f,
                                    half ? 0x3c00 : 0x3f80,
                                    half ? 0xbc00 : 0xbf80,
                                    half ? 0x4200 : 0x4040,
                                    half ? 0xc200 : 0xc040,
                                    half ? 0x0400 : 0x0080};
        size_t n = sizeof special / sizeof special[0];
        memcpy(divisors, special, sizeof special);
        for (size_t d = n; d < DIVISORS; d++) {
            seed = seed * 1664525u + 1013904223u;
            divisors[d] = (uint16_t)(seed >> 16);
        }
        for (size_t o = 0; o < 3; o++) {
            check_op(ops[o], dts[k], divisors, DIVISORS);
        }
    }
}

int
main(void)
{
    test_begin("test_kernel_divmod16");
    RUN_TEST(test_every_dividend);
    return 0;
}
