/*
 * test_dynamic_slice.c - the kernels of dynamic_slice and
 * dynamic_update_slice (docs/neff-emulator-format.md §3): the starts
 * under both bounds rules, from every integer dtype, at the limits of
 * int64 and uint64; windows of every element size and rank 0 to 6
 * against an element-by-element reference; writes in place and out of
 * place, serial and on the worker pool.
 */
#include "test.h"

#include "kernels/kernel.h"
#include "test_array.h"

/* Resolve one start of a window of 3 in 10 (the last start is 7). */
static NRT_STATUS
start_of(enum nrtemu_bounds bounds, enum nrtemu_dtype dt, const void *value,
         int64_t *start, struct nrtemu_bad_start *bad)
{
    uint64_t shape = 10, size = 3, one = 1;
    struct nrtemu_array s = array(dt, (void *)value, 1, &one);

    return nrtemu__kernel_window_start(bounds, &s, 1, &shape, &size, start,
                                       bad);
}

static void
test_starts_signed(void)
{
    /* The int64 limits and the edges of the range, read and compared
     * without overflow: clamped into [0, 7], or refused. */
    static const struct {
        int64_t v, clamped;
        bool in;
    } cases[] = {
        {0, 0, true},          {7, 7, true},
        {3, 3, true},          {-1, 0, false},
        {8, 7, false},         {10, 7, false},
        {INT64_MIN, 0, false}, {INT64_MIN + 1, 0, false},
        {INT64_MAX, 7, false}, {INT64_MAX - 6, 7, false},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t start = -99;
        struct nrtemu_bad_start bad = {0};
        ASSERT_OK(start_of(NRTEMU_BOUNDS_CLAMP, NRTEMU_DTYPE_INT64,
                           &cases[i].v, &start, &bad));
        ASSERT_EQ(start, cases[i].clamped);
        start = -99;
        if (cases[i].in) {
            ASSERT_OK(start_of(NRTEMU_BOUNDS_CHECK, NRTEMU_DTYPE_INT64,
                               &cases[i].v, &start, &bad));
            ASSERT_EQ(start, cases[i].v);
        } else {
            ASSERT_STATUS(start_of(NRTEMU_BOUNDS_CHECK, NRTEMU_DTYPE_INT64,
                                   &cases[i].v, &start, &bad),
                          NRT_EXEC_OOB);
            ASSERT_EQ(bad.dim, 0);
            ASSERT_TRUE(!bad.is_unsigned);
            ASSERT_EQ(bad.value, cases[i].v);
        }
    }
}

static void
test_starts_unsigned(void)
{
    /* uint64 above INT64_MAX is a huge start, never a negative one. */
    static const struct {
        uint64_t v;
        int64_t clamped;
        bool in;
    } cases[] = {
        {0, 0, true},
        {7, 7, true},
        {8, 7, false},
        {(uint64_t)INT64_MAX, 7, false},
        {(uint64_t)INT64_MAX + 1, 7, false},
        {UINT64_MAX, 7, false},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t start = -99;
        struct nrtemu_bad_start bad = {0};
        ASSERT_OK(start_of(NRTEMU_BOUNDS_CLAMP, NRTEMU_DTYPE_UINT64,
                           &cases[i].v, &start, &bad));
        ASSERT_EQ(start, cases[i].clamped);
        if (cases[i].in) {
            ASSERT_OK(start_of(NRTEMU_BOUNDS_CHECK, NRTEMU_DTYPE_UINT64,
                               &cases[i].v, &start, &bad));
            ASSERT_EQ(start, (int64_t)cases[i].v);
        } else {
            ASSERT_STATUS(start_of(NRTEMU_BOUNDS_CHECK, NRTEMU_DTYPE_UINT64,
                                   &cases[i].v, &start, &bad),
                          NRT_EXEC_OOB);
            ASSERT_TRUE(bad.is_unsigned);
            ASSERT_UEQ((uint64_t)bad.value, cases[i].v);
        }
    }
}

static void
test_starts_every_int_dtype(void)
{
    /* Each integer dtype's own minimum (clamped to 0) and maximum
     * (clamped to 7), and a start in range. */
    int8_t i8[] = {INT8_MIN, INT8_MAX, 5};
    int16_t i16[] = {INT16_MIN, INT16_MAX, 5};
    int32_t i32[] = {INT32_MIN, INT32_MAX, 5};
    int64_t i64[] = {INT64_MIN, INT64_MAX, 5};
    uint8_t u8[] = {0, UINT8_MAX, 5};
    uint16_t u16[] = {0, UINT16_MAX, 5};
    uint32_t u32[] = {0, UINT32_MAX, 5};
    uint64_t u64[] = {0, UINT64_MAX, 5};
    static const enum nrtemu_dtype dts[] = {
        NRTEMU_DTYPE_INT8,   NRTEMU_DTYPE_INT16,  NRTEMU_DTYPE_INT32,
        NRTEMU_DTYPE_INT64,  NRTEMU_DTYPE_UINT8,  NRTEMU_DTYPE_UINT16,
        NRTEMU_DTYPE_UINT32, NRTEMU_DTYPE_UINT64,
    };
    const char *data[] = {(char *)i8, (char *)i16, (char *)i32, (char *)i64,
                          (char *)u8, (char *)u16, (char *)u32, (char *)u64};

    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        size_t size = nrtemu__dtype_size(dts[k]);
        bool is_unsigned = nrtemu__dtype_is_unsigned_int(dts[k]);
        int64_t start;
        struct nrtemu_bad_start bad;
        ASSERT_OK(
            start_of(NRTEMU_BOUNDS_CLAMP, dts[k], data[k], &start, &bad));
        ASSERT_EQ(start, 0);
        ASSERT_OK(start_of(NRTEMU_BOUNDS_CLAMP, dts[k], data[k] + size, &start,
                           &bad));
        ASSERT_EQ(start, 7);
        ASSERT_OK(start_of(NRTEMU_BOUNDS_CHECK, dts[k], data[k] + 2 * size,
                           &start, &bad));
        ASSERT_EQ(start, 5);
        /* 0 is in range for unsigned minima; signed minima are refused. */
        ASSERT_STATUS(
            start_of(NRTEMU_BOUNDS_CHECK, dts[k], data[k], &start, &bad),
            is_unsigned ? NRT_SUCCESS : NRT_EXEC_OOB);
        ASSERT_STATUS(start_of(NRTEMU_BOUNDS_CHECK, dts[k], data[k] + size,
                               &start, &bad),
                      NRT_EXEC_OOB);
    }
}

static void
test_starts_multi_dim(void)
{
    /* A window [2, 0, 5] of [4, 3, 5]: starts range over [0, 2], [0, 3]
     * and [0, 0]; check names the first dimension out of range. */
    uint64_t shape[3] = {4, 3, 5}, sizes[3] = {2, 0, 5}, three = 3;
    int32_t v[3] = {2, 3, 0};
    int64_t start[3];
    struct nrtemu_bad_start bad = {0};
    struct nrtemu_array s = array(NRTEMU_DTYPE_INT32, v, 1, &three);

    ASSERT_OK(nrtemu__kernel_window_start(NRTEMU_BOUNDS_CHECK, &s, 3, shape,
                                          sizes, start, &bad));
    ASSERT_TRUE(start[0] == 2 && start[1] == 3 && start[2] == 0);
    v[1] = 4;
    v[2] = 1;
    ASSERT_STATUS(nrtemu__kernel_window_start(NRTEMU_BOUNDS_CHECK, &s, 3,
                                              shape, sizes, start, &bad),
                  NRT_EXEC_OOB);
    ASSERT_EQ(bad.dim, 1);
    ASSERT_EQ(bad.value, 4);
    ASSERT_OK(nrtemu__kernel_window_start(NRTEMU_BOUNDS_CLAMP, &s, 3, shape,
                                          sizes, start, &bad));
    ASSERT_TRUE(start[0] == 2 && start[1] == 3 && start[2] == 0);
}

/* A small deterministic generator. */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t
rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* The flat index in `shape` of `idx` + `start`. */
static uint64_t
flat_at(uint32_t nd, const uint64_t *shape, const uint64_t *idx,
        const int64_t *start)
{
    uint64_t f = 0;

    for (uint32_t d = 0; d < nd; d++) {
        f = f * shape[d] + idx[d] + (uint64_t)(start ? start[d] : 0);
    }
    return f;
}

/* Advance the odometer `idx` over `shape`; false after the last. */
static bool
next_index(uint32_t nd, const uint64_t *shape, uint64_t *idx)
{
    for (int d = (int)nd - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) {
            return true;
        }
        idx[d] = 0;
    }
    return false;
}

/*
 * One random window in a random array of rank `nd` and element `size`:
 * read it, write it out of place and in place, each against the
 * element-by-element reference.  Dimensions are often whole or 1, so
 * that runs join across dimensions and stop at each.
 */
static void
one_window(uint32_t nd, enum nrtemu_dtype dt)
{
    size_t size = nrtemu__dtype_size(dt);
    uint64_t shape[NRTEMU_MAX_DIMS], sizes[NRTEMU_MAX_DIMS];
    uint64_t idx[NRTEMU_MAX_DIMS] = {0}, n = 1, w = 1, ndim64 = nd;
    int64_t starts[NRTEMU_MAX_DIMS], start[NRTEMU_MAX_DIMS];
    struct nrtemu_bad_start bad;
    unsigned char *x, *upd, *out, *ref, *win;

    for (uint32_t d = 0; d < nd; d++) {
        shape[d] = 1 + rng() % 5;
        switch (rng() % 4) {
        case 0:
            sizes[d] = shape[d];
            break;
        case 1:
            sizes[d] = 1;
            break;
        default:
            sizes[d] = rng() % (shape[d] + 1);
        }
        /* Starts from far below to far above the range. */
        starts[d] = (int64_t)(rng() % 9) - 3;
        n *= shape[d];
        w *= sizes[d];
    }
    x = malloc(n * size + 1);
    out = malloc(n * size + 1);
    ref = malloc(n * size + 1);
    upd = malloc(w * size + 1);
    win = malloc(w * size + 1);
    ASSERT_TRUE(x && out && ref && upd && win);
    for (uint64_t i = 0; i < n * size; i++) {
        x[i] = (unsigned char)rng();
    }
    for (uint64_t i = 0; i < w * size; i++) {
        upd[i] = (unsigned char)rng();
    }
    {
        struct nrtemu_array s = array(NRTEMU_DTYPE_INT64, starts, 1, &ndim64);
        ASSERT_OK(nrtemu__kernel_window_start(NRTEMU_BOUNDS_CLAMP, &s, nd,
                                              shape, sizes, start, &bad));
    }
    for (uint32_t d = 0; d < nd; d++) {
        ASSERT_TRUE(start[d] >= 0 &&
                    (uint64_t)start[d] + sizes[d] <= shape[d]);
    }
    {
        struct nrtemu_array xa = array(dt, x, nd, shape);
        struct nrtemu_array wa = array(dt, win, nd, sizes);
        struct nrtemu_array ua = array(dt, upd, nd, sizes);
        struct nrtemu_array oa = array(dt, out, nd, shape);

        /* The reference: read and write element by element. */
        memcpy(ref, x, n * size);
        if (w > 0) {
            memset(idx, 0, sizeof idx);
            do {
                uint64_t at = flat_at(nd, shape, idx, start);
                uint64_t k = flat_at(nd, sizes, idx, NULL);
                memcpy(ref + at * size, upd + k * size, size);
            } while (next_index(nd, sizes, idx));
        }

        nrtemu__kernel_read_window(&wa, &xa, start);
        if (w > 0) {
            memset(idx, 0, sizeof idx);
            do {
                uint64_t at = flat_at(nd, shape, idx, start);
                uint64_t k = flat_at(nd, sizes, idx, NULL);
                ASSERT_TRUE(memcmp(win + k * size, x + at * size, size) == 0);
            } while (next_index(nd, sizes, idx));
        }

        nrtemu__kernel_write_window(&oa, &xa, &ua, start);
        ASSERT_TRUE(memcmp(out, ref, n * size) == 0);
        nrtemu__kernel_write_window(&xa, &xa, &ua, start);
        ASSERT_TRUE(memcmp(x, ref, n * size) == 0);
    }
    free(x);
    free(out);
    free(ref);
    free(upd);
    free(win);
}

static void
test_windows_every_rank_and_size(void)
{
    static const enum nrtemu_dtype dts[] = {
        NRTEMU_DTYPE_UINT8,   NRTEMU_DTYPE_BFLOAT16, NRTEMU_DTYPE_FLOAT32,
        NRTEMU_DTYPE_FLOAT64, NRTEMU_DTYPE_BOOL,     NRTEMU_DTYPE_INT16,
    };

    for (uint32_t nd = 0; nd <= 6; nd++) {
        for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
            for (int rep = 0; rep < 60; rep++) {
                one_window(nd, dts[k]);
            }
        }
    }
}

static void
test_write_window_large(void)
{
    /* A [256, 2048] float32 array (2 MiB), a window [200, 1000] at
     * [13, 1001]: 200 runs, enough bytes for the worker pool; then a
     * window of whole rows, one run. */
    uint64_t shape[2] = {256, 2048}, sizes[2] = {200, 1000};
    uint64_t rows[2] = {100, 2048};
    int64_t start[2] = {13, 1001}, row_start[2] = {150, 0};
    float *x = malloc(256 * 2048 * sizeof *x);
    float *u = malloc(200 * 2048 * sizeof *u);
    struct nrtemu_array xa = array(NRTEMU_DTYPE_FLOAT32, x, 2, shape);
    struct nrtemu_array ua = array(NRTEMU_DTYPE_FLOAT32, u, 2, sizes);

    ASSERT_TRUE(x && u);
    for (uint64_t i = 0; i < 256 * 2048; i++) {
        x[i] = (float)i;
    }
    for (uint64_t i = 0; i < 200 * 2048; i++) {
        u[i] = -(float)i - 1;
    }
    nrtemu__kernel_write_window(&xa, &xa, &ua, start);
    for (uint64_t r = 0; r < 256; r++) {
        for (uint64_t c = 0; c < 2048; c++) {
            bool in = r >= 13 && r < 213 && c >= 1001 && c < 2001;
            float want = in ? -(float)((r - 13) * 1000 + (c - 1001)) - 1
                            : (float)(r * 2048 + c);
            ASSERT_TRUE(x[r * 2048 + c] == want);
        }
    }
    ua = array(NRTEMU_DTYPE_FLOAT32, u, 2, rows);
    nrtemu__kernel_write_window(&xa, &xa, &ua, row_start);
    for (uint64_t i = 0; i < 100 * 2048; i++) {
        ASSERT_TRUE(x[150 * 2048 + i] == -(float)i - 1);
    }
    free(x);
    free(u);
}

int
main(void)
{
    test_begin("test_dynamic_slice");
    RUN_TEST(test_starts_signed);
    RUN_TEST(test_starts_unsigned);
    RUN_TEST(test_starts_every_int_dtype);
    RUN_TEST(test_starts_multi_dim);
    RUN_TEST(test_windows_every_rank_and_size);
    RUN_TEST(test_write_window_large);
    return 0;
}
