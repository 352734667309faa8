/*
 * test_kernel_binary16.c - binary ops of two float16 or bfloat16 arrays
 * (with AVX-512 computed converting in registers, kernel_binary16.c)
 * against the same ops with a float32 compute dtype (the float32 kernel
 * on the widened operands, results rounded to the narrow type): bit for
 * bit, NaN payloads included, for every code of a against a sample of b
 * codes (zeros, infinities, NaN of both kinds and signs, subnormals,
 * extremes, random) and the other way round; odd lengths (tails), the out
 * being an operand, and results streamed past the cache.
 */
#include "test.h"

#include "kernels/kernel.h"

enum { CODES = 65536, SAMPLE = 48 };

static uint16_t xs[CODES], ys[CODES], narrow[CODES], wide[CODES];

static const enum nrtemu_op ops[] = {
    NRTEMU_OP_ADD, NRTEMU_OP_SUB,          NRTEMU_OP_MUL, NRTEMU_OP_MOD,
    NRTEMU_OP_REM, NRTEMU_OP_FLOOR_DIVIDE, NRTEMU_OP_POW};
static const enum nrtemu_dtype dts[] = {NRTEMU_DTYPE_FLOAT16,
                                        NRTEMU_DTYPE_BFLOAT16};

/* out = op(a, b) over n elements with compute dtype `compute`; `stream`
 * as nrtemu__kernel_elementwise_part. */
static void
run(enum nrtemu_op op, enum nrtemu_dtype compute, enum nrtemu_dtype dt,
    size_t n, const uint16_t *a, const uint16_t *b, uint16_t *out, bool stream)
{
    struct nrtemu_scratch s = {0};
    struct nrtemu_array in[2] = {{(void *)a, dt, 1, {n}},
                                 {(void *)b, dt, 1, {n}}};
    struct nrtemu_array o = {out, dt, 1, {n}};

    ASSERT_EQ(
        nrtemu__kernel_elementwise_part(op, compute, &o, in, 2, &s, stream),
        NRT_SUCCESS);
    nrtemu__scratch_free(&s);
}

static void
compare(enum nrtemu_op op, enum nrtemu_dtype dt, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        if (narrow[i] != wide[i]) {
            TEST_FAIL_("op %d of %s (%s): 0x%04x, 0x%04x: 0x%04x, 0x%04x in "
                       "float32",
                       (int)op, nrtemu__dtype_name(dt), what, xs[i], ys[i],
                       narrow[i], wide[i]);
        }
    }
}

/* Zeros, infinities, NaN (quiet, signalling, payloads, both signs),
 * subnormals, the extremes, one, two, a half, then codes at random. */
static void
sample_codes(enum nrtemu_dtype dt, uint16_t *sample)
{
    bool half = dt == NRTEMU_DTYPE_FLOAT16;
    const uint16_t special[] = {0x0000,
                                0x8000,
                                half ? 0x7c00 : 0x7f80,
                                half ? 0xfc00 : 0xff80,
                                half ? 0x7e00 : 0x7fc0,
                                half ? 0xfe00 : 0xffc0,
                                half ? 0x7c01 : 0x7f81,
                                half ? 0x7d23 : 0x7fa3,
                                half ? 0xfe55 : 0xffd5,
                                0x0001,
                                0x8001,
                                half ? 0x03ff : 0x007f,
                                half ? 0x83ff : 0x807f,
                                half ? 0x7bff : 0x7f7f,
                                half ? 0xfbff : 0xff7f,
                                half ? 0x3c00 : 0x3f80,
                                half ? 0xbc00 : 0xbf80,
                                0x4000,
                                half ? 0x3800 : 0x3f00,
                                half ? 0xc200 : 0xc040};
    size_t n = sizeof special / sizeof special[0];
    uint32_t seed = 777;

    memcpy(sample, special, sizeof special);
    for (size_t d = n; d < SAMPLE; d++) {
        seed = seed * 1664525u + 1013904223u;
        sample[d] = (uint16_t)(seed >> 16);
    }
}

static void
test_every_code(void)
{
    uint16_t sample[SAMPLE];

    for (size_t k = 0; k < 2; k++) {
        sample_codes(dts[k], sample);
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            for (size_t d = 0; d < SAMPLE; d++) {
                /* every code as a, then as b */
                for (int rev = 0; rev < 2; rev++) {
                    for (size_t i = 0; i < CODES; i++) {
                        xs[i] = rev ? sample[d] : (uint16_t)i;
                        ys[i] = rev ? (uint16_t)i : sample[d];
                    }
                    run(ops[o], dts[k], dts[k], CODES, xs, ys, narrow, false);
                    run(ops[o], NRTEMU_DTYPE_FLOAT32, dts[k], CODES, xs, ys,
                        wide, false);
                    compare(ops[o], dts[k], CODES, rev ? "b" : "a");
                }
            }
        }
    }
}

/* Odd lengths (a step of 16 cut short), the out as an operand, streamed
 * results, on random codes. */
static void
test_tails_in_place_stream(void)
{
    static const size_t lens[] = {1, 5, 15, 16, 17, 33, 511, 512, 513, 4099};
    uint32_t seed = 4242;

    for (size_t k = 0; k < 2; k++) {
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            enum nrtemu_op op = ops[o];
            enum nrtemu_dtype dt = dts[k];
            for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
                size_t n = lens[l];
                for (size_t i = 0; i < CODES; i++) {
                    seed = seed * 1664525u + 1013904223u;
                    xs[i] = (uint16_t)(seed >> 16);
                    ys[i] = (uint16_t)seed;
                }
                run(op, NRTEMU_DTYPE_FLOAT32, dt, n, xs, ys, wide, false);
                /* past n: untouched */
                memset(narrow, 0xa5, sizeof narrow);
                run(op, dt, dt, n, xs, ys, narrow, false);
                compare(op, dt, n, "tail");
                ASSERT_EQ(narrow[n], 0xa5a5);
                memset(narrow, 0xa5, sizeof narrow);
                run(op, dt, dt, n, xs, ys, narrow, true);
                compare(op, dt, n, "streamed");
                ASSERT_EQ(narrow[n], 0xa5a5);
                /* in place: out is a, then b */
                memcpy(narrow, xs, n * sizeof *narrow);
                run(op, dt, dt, n, narrow, ys, narrow, false);
                compare(op, dt, n, "out = a");
                memcpy(narrow, ys, n * sizeof *narrow);
                run(op, dt, dt, n, xs, narrow, narrow, true);
                compare(op, dt, n, "out = b, streamed");
            }
        }
    }
}

int
main(void)
{
    test_begin("test_kernel_binary16");
    RUN_TEST(test_every_code);
    RUN_TEST(test_tails_in_place_stream);
    return 0;
}
