/*
 * test_kernel_where.c - where(c, x, y) of 2-byte dtypes with a bool
 * condition (a select of codes, kernel_where.c) against the same select
 * with a uint8 condition (the driver's blocks: x and y through the kernel
 * dtype and back), bit for bit, and against the select itself: the code
 * of x where the condition byte is not 0 (any value, not only 1), of y
 * elsewhere, NaN codes NaN of the same sign.  Every code as x and as y,
 * odd lengths, the out being x or y, results streamed, and a broadcast
 * condition (the driver's path).  And 4- and 8-byte dtypes streamed
 * (non-temporal stores from registers with AVX-512) against the driver
 * and the select: random bits (NaN payloads included), odd lengths, outs
 * off a 64-byte line by a few items, in place.
 */
#include "test.h"

#include "kernels/kernel.h"

enum { CODES = 65536 };

static uint16_t xs[CODES], ys[CODES], got[CODES], want[CODES];
static uint8_t cs[CODES];

static const enum nrtemu_dtype dts[] = {
    NRTEMU_DTYPE_FLOAT16, NRTEMU_DTYPE_BFLOAT16, NRTEMU_DTYPE_INT16,
    NRTEMU_DTYPE_UINT16};

/* out = where(c, x, y) over n elements of dt, c read as `cdt` (bool or uint8,
 * of one shape with x, y and out, or a row of `cols` broadcast when cols
 * is not 0); `stream` as nrtemu__kernel_elementwise_part. */
static void
run(enum nrtemu_dtype dt, enum nrtemu_dtype cdt, size_t n, size_t cols,
    const uint8_t *c, const void *x, const void *y, void *out, bool stream)
{
    struct nrtemu_scratch s = {0};
    struct nrtemu_array in[3] = {{(void *)c, cdt, 1, {n}},
                                 {(void *)x, dt, 1, {n}},
                                 {(void *)y, dt, 1, {n}}};
    struct nrtemu_array o = {out, dt, 1, {n}};

    if (cols != 0) {
        in[0] = (struct nrtemu_array){(void *)c, cdt, 2, {1, cols}};
        for (int k = 1; k < 3; k++) {
            in[k].ndim = 2;
            in[k].shape[0] = n / cols;
            in[k].shape[1] = cols;
        }
        o.ndim = 2;
        o.shape[0] = n / cols;
        o.shape[1] = cols;
    }
    ASSERT_EQ(nrtemu__kernel_elementwise_part(NRTEMU_OP_WHERE, dt, &o, in, 3,
                                              &s, stream),
              NRT_SUCCESS);
    nrtemu__scratch_free(&s);
}

/* Whether code v of dt is a NaN. */
static bool
is_nan(enum nrtemu_dtype dt, uint16_t v)
{
    switch (dt) {
    case NRTEMU_DTYPE_FLOAT16:
        return (v & 0x7fff) > 0x7c00;
    case NRTEMU_DTYPE_BFLOAT16:
        return (v & 0x7fff) > 0x7f80;
    default:
        return false;
    }
}

/* got[0, n) against the select of x or y by c (c of `cols` repeated when
 * cols is not 0), and against want[] (the driver's) unless `no_want`. */
static void
check(enum nrtemu_dtype dt, size_t n, size_t cols, const uint16_t *x,
      const uint16_t *y, bool no_want, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t c = cs[cols != 0 ? i % cols : i];
        uint16_t sel = c != 0 ? x[i] : y[i];
        bool ok = is_nan(dt, sel) ? is_nan(dt, got[i]) &&
                                        (got[i] & 0x8000) == (sel & 0x8000)
                                  : got[i] == sel;
        if (!ok) {
            TEST_FAIL_("where of %s (%s), element %zu: condition 0x%02x, "
                       "x 0x%04x, y 0x%04x: 0x%04x",
                       nrtemu__dtype_name(dt), what, i, c, x[i], y[i], got[i]);
        }
        if (!no_want && got[i] != want[i]) {
            TEST_FAIL_("where of %s (%s), element %zu: condition 0x%02x, "
                       "x 0x%04x, y 0x%04x: 0x%04x, the driver's 0x%04x",
                       nrtemu__dtype_name(dt), what, i, c, x[i], y[i], got[i],
                       want[i]);
        }
    }
}

/* Condition bytes: 0, 1 and other nonzero bytes, in no pattern. */
static void
fill_conditions(uint32_t seed)
{
    for (size_t i = 0; i < CODES; i++) {
        seed = seed * 1664525u + 1013904223u;
        cs[i] = (seed >> 24) < 112 ? 0 : (seed >> 24) < 224 ? 1 : seed >> 24;
    }
}

/* Every code as x (y the codes reversed), then as y. */
static void
test_every_code(void)
{
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        for (int rev = 0; rev < 2; rev++) {
            fill_conditions(99 + (uint32_t)rev);
            for (size_t i = 0; i < CODES; i++) {
                xs[i] = (uint16_t)(rev ? CODES - 1 - i : i);
                ys[i] = (uint16_t)(rev ? i : CODES - 1 - i);
            }
            run(dts[k], NRTEMU_DTYPE_UINT8, CODES, 0, cs, xs, ys, want, false);
            run(dts[k], NRTEMU_DTYPE_BOOL, CODES, 0, cs, xs, ys, got, false);
            check(dts[k], CODES, 0, xs, ys, false, rev ? "y" : "x");
        }
    }
}

/* Odd lengths, streamed results, the out as x or y, on random codes. */
static void
test_tails_in_place_stream(void)
{
    static const size_t lens[] = {1,  5,  15,  16,  17,  33,  63,
                                  64, 65, 511, 512, 513, 4099};
    uint32_t seed = 4242;

    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        enum nrtemu_dtype dt = dts[k];
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            size_t n = lens[l];
            fill_conditions(seed);
            for (size_t i = 0; i < CODES; i++) {
                seed = seed * 1664525u + 1013904223u;
                xs[i] = (uint16_t)(seed >> 16);
                ys[i] = (uint16_t)seed;
            }
            run(dt, NRTEMU_DTYPE_UINT8, n, 0, cs, xs, ys, want, false);
            /* past n: untouched */
            memset(got, 0xa5, sizeof got);
            run(dt, NRTEMU_DTYPE_BOOL, n, 0, cs, xs, ys, got, false);
            check(dt, n, 0, xs, ys, false, "tail");
            ASSERT_EQ(got[n], 0xa5a5);
            memset(got, 0xa5, sizeof got);
            run(dt, NRTEMU_DTYPE_BOOL, n, 0, cs, xs, ys, got, true);
            check(dt, n, 0, xs, ys, false, "streamed");
            ASSERT_EQ(got[n], 0xa5a5);
            /* in place: out is x, then y */
            memcpy(got, xs, n * sizeof *got);
            run(dt, NRTEMU_DTYPE_BOOL, n, 0, cs, got, ys, got, false);
            check(dt, n, 0, xs, ys, false, "out = x");
            memcpy(got, ys, n * sizeof *got);
            run(dt, NRTEMU_DTYPE_BOOL, n, 0, cs, xs, got, got, true);
            check(dt, n, 0, xs, ys, false, "out = y, streamed");
        }
    }
}

/* A row of conditions broadcast over 64 rows (the driver's path). */
static void
test_broadcast_condition(void)
{
    enum { COLS = 1000, ROWS = 64 };
    uint32_t seed = 31;

    fill_conditions(7);
    for (size_t i = 0; i < COLS * ROWS; i++) {
        seed = seed * 1664525u + 1013904223u;
        xs[i] = (uint16_t)(seed >> 16);
        ys[i] = (uint16_t)seed;
    }
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        run(dts[k], NRTEMU_DTYPE_BOOL, COLS * ROWS, COLS, cs, xs, ys, got,
            false);
        check(dts[k], COLS * ROWS, COLS, xs, ys, true, "broadcast");
    }
}

static void
test_wide_streamed(void)
{
    static const enum nrtemu_dtype wide[] = {
        NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_INT32, NRTEMU_DTYPE_UINT32,
        NRTEMU_DTYPE_FLOAT64, NRTEMU_DTYPE_INT64};
    static const size_t lens[] = {1, 7, 8, 9, 16, 17, 31, 33, 511, 4099};
    enum { MAX = 4099 + 8, BYTES = 8 * MAX + 64 };
    static _Alignas(64) unsigned char x[BYTES], y[BYTES], o1[BYTES], o2[BYTES];
    uint32_t seed = 777;

    for (size_t i = 0; i < BYTES; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (unsigned char)(seed >> 24);
        y[i] = (unsigned char)(seed >> 16);
    }
    fill_conditions(5);
    for (size_t k = 0; k < sizeof wide / sizeof wide[0]; k++) {
        const size_t size = nrtemu__dtype_size(wide[k]);
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            for (size_t off = 0; off < 4; off++) {
                const size_t n = lens[l], at = off * size;
                memset(o1, 0xa5, sizeof o1);
                memset(o2, 0x5a, sizeof o2);
                run(wide[k], NRTEMU_DTYPE_UINT8, n, 0, cs, x + at, y + at,
                    o1 + at, false);
                run(wide[k], NRTEMU_DTYPE_BOOL, n, 0, cs, x + at, y + at,
                    o2 + at, true);
                for (size_t i = 0; i < n; i++) {
                    const unsigned char *sel =
                        (cs[i] != 0 ? x : y) + at + i * size;
                    if (memcmp(o2 + at + i * size, sel, size) != 0 ||
                        memcmp(o1 + at + i * size, sel, size) != 0) {
                        TEST_FAIL_("where of %s streamed, %zu items at +%zu, "
                                   "item %zu: not the item selected",
                                   nrtemu__dtype_name(wide[k]), n, off, i);
                    }
                }
                /* nothing written around the items */
                ASSERT_EQ(o2[at + n * size], 0x5a);
                if (at != 0) {
                    ASSERT_EQ(o2[at - 1], 0x5a);
                }
                /* in place: out is y */
                memcpy(o2, y, sizeof o2);
                run(wide[k], NRTEMU_DTYPE_BOOL, n, 0, cs, x + at, o2 + at,
                    o2 + at, true);
                ASSERT_EQ(memcmp(o2 + at, o1 + at, n * size), 0);
            }
        }
    }
}

int
main(void)
{
    test_begin("test_kernel_where");
    RUN_TEST(test_every_code);
    RUN_TEST(test_tails_in_place_stream);
    RUN_TEST(test_broadcast_condition);
    RUN_TEST(test_wide_streamed);
    return 0;
}
