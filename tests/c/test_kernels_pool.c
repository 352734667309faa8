/*
 * test_kernels_pool.c - cutting ops into pieces for the worker pool
 * (kernel_split.h), elementwise ops on 1-byte operands by table lookup
 * (kernel_table.c) and results streamed past the cache (kernel_stream.h),
 * against the plain kernel.
 */
#include "test.h"

#include "kernels/kernel.h"
#include "kernels/kernel_split.h"
#include "kernels/kernel_stream.h"
#include "kernels/kernel_table.h"

/*
 * For many shapes and piece counts: the boxes of all pieces cover every
 * row exactly once, in order, each within one index of the leading
 * dimensions; a box is never one element long where the boxes are runs
 * of the last dimension (ksplit_start); and each box's view of an
 * operand broadcast by row, by column or as a scalar is the right part.
 */
static void
test_split_boxes(void)
{
    static const uint64_t shapes[][3] = {
        {2048, 2048, 0}, {3, 70001, 0}, {1, 200003, 0}, {5, 7, 3001},
        {257, 1031, 0},  {2, 2, 2},     {1, 1, 65536},  {65536, 1, 0},
        {3, 2, 5},       {7, 3, 0}};

    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        uint32_t ndim = shapes[c][2] != 0 ? 3 : 2;
        for (uint32_t n = 1; n <= 64; n = n < 4 ? n + 1 : n * 2) {
            struct ksplit s;
            uint64_t next = 0, inner = 1;
            ksplit_plan(&s, ndim, shapes[c], n);
            for (uint32_t e = s.dim + 1; e < ndim; e++) {
                inner *= shapes[c][e];
            }
            for (uint32_t t = 0; t < n; t++) {
                uint64_t row, end;
                struct kbox b;
                ksplit_piece(&s, t, n, &row, &end);
                ASSERT_EQ(row, next);
                ASSERT_TRUE(end >= row && end <= s.rows);
                while (ksplit_box(&s, &row, end, &b)) {
                    uint64_t flat = 0, vshape[NRTEMU_MAX_DIMS], off;
                    uint64_t scalar_shape[1] = {1}, col[3], vn = 1;
                    uint32_t vndim;
                    for (uint32_t e = 0; e < s.dim; e++) {
                        flat = flat * shapes[c][e] + b.lead[e];
                    }
                    flat = flat * shapes[c][s.dim] + b.start;
                    ASSERT_EQ(flat, next);
                    ASSERT_TRUE(b.len >= 1 &&
                                b.start + b.len <= shapes[c][s.dim]);
                    if (s.dim + 1 == ndim && shapes[c][s.dim] >= 2 &&
                        s.rows / n >= 2 * shapes[c][s.dim]) {
                        ASSERT_TRUE(b.len >= 2);
                    }
                    /* The out's own view: dense, at the box's first row. */
                    off = ksplit_view(&s, &b, ndim, shapes[c], &vndim, vshape);
                    ASSERT_EQ(off, flat * inner);
                    for (uint32_t e = 0; e < vndim; e++) {
                        vn *= vshape[e];
                    }
                    ASSERT_EQ(vn, b.len * inner);
                    /* A scalar: always itself. */
                    ASSERT_EQ(
                        ksplit_view(&s, &b, 1, scalar_shape, &vndim, vshape),
                        0);
                    /* A column (last dimension 1): the box's rows of it. */
                    memcpy(col, shapes[c], sizeof col);
                    col[ndim - 1] = 1;
                    off = ksplit_view(&s, &b, ndim, col, &vndim, vshape);
                    ASSERT_EQ(off, s.dim + 1 == ndim
                                       ? flat / shapes[c][s.dim]
                                       : flat * inner / shapes[c][ndim - 1]);
                    next += b.len;
                }
            }
            ASSERT_EQ(next, s.rows);
        }
    }
}

/*
 * Unary, binary and where ops over 1-byte dtypes, big enough for a
 * table (or order keys: fp8 compares, maximum, minimum), against the same
 * op run in pieces too small for one: bit for bit, every code and every
 * pair of codes.
 */
static void
check_table(enum nrtemu_op op, enum nrtemu_dtype compute, enum nrtemu_dtype dt,
            enum nrtemu_dtype out_dt, int n_in)
{
    enum { N = 65536 * 2, PIECE = 1024 };
    static uint8_t a[N], b[N], c[N], big[N], small[N];
    struct nrtemu_scratch s = {0};
    struct nrtemu_array in[3], out;
    const uint8_t *ops[3];

    for (size_t i = 0; i < N; i++) {
        a[i] = (uint8_t)(n_in == 2 ? i >> 8 : i * 131);
        b[i] = (uint8_t)i;
        c[i] = (uint8_t)((i * 7) >> 3 & 1);
    }
    ops[0] = n_in == 3 ? c : a;
    ops[1] = n_in == 3 ? a : b;
    ops[2] = b;
    for (int k = 0; k < n_in; k++) {
        in[k] =
            (struct nrtemu_array){(void *)ops[k],
                                  n_in == 3 && k == 0 ? NRTEMU_DTYPE_BOOL : dt,
                                  1,
                                  {N}};
    }
    out = (struct nrtemu_array){big, out_dt, 1, {N}};
    ASSERT_TRUE(nrtemu__kernel_table_run(op, compute, &out, in, n_in, &s));
    memset(big, 0xee, N);
    ASSERT_EQ(nrtemu__kernel_elementwise(op, compute, &out, in, n_in, &s),
              NRT_SUCCESS);
    for (size_t p = 0; p < N; p += PIECE) {
        struct nrtemu_array pin[3], pout = {small + p, out_dt, 1, {PIECE}};
        for (int k = 0; k < n_in; k++) {
            pin[k] = in[k];
            pin[k].data = (char *)in[k].data + p;
            pin[k].shape[0] = PIECE;
        }
        ASSERT_TRUE(
            !nrtemu__kernel_table_run(op, compute, &pout, pin, n_in, &s));
        ASSERT_EQ(
            nrtemu__kernel_elementwise(op, compute, &pout, pin, n_in, &s),
            NRT_SUCCESS);
    }
    for (size_t i = 0; i < N; i++) {
        if (big[i] != small[i]) {
            TEST_FAIL_("op %d of %s at %zu: 0x%02x by table, 0x%02x "
                       "computed",
                       (int)op, nrtemu__dtype_name(dt), i, big[i], small[i]);
        }
    }
    nrtemu__scratch_free(&s);
}

static void
test_tables(void)
{
    for (int t = 0; t < 4; t++) {
        enum nrtemu_dtype f =
            (enum nrtemu_dtype)(NRTEMU_DTYPE_FLOAT8_E4M3 + t);
        check_table(NRTEMU_OP_FLOOR, f, f, f, 1);
        check_table(NRTEMU_OP_EXP, f, f, f, 1);
        check_table(NRTEMU_OP_IS_FINITE, NRTEMU_DTYPE_FLOAT64, f,
                    NRTEMU_DTYPE_BOOL, 1);
        check_table(NRTEMU_OP_ADD, f, f, f, 2);
        check_table(NRTEMU_OP_DIV, f, f, f, 2);
        check_table(NRTEMU_OP_MAXIMUM, f, f, f, 2);
        check_table(NRTEMU_OP_MINIMUM, f, f, f, 2);
        for (int op = NRTEMU_OP_EQUAL; op <= NRTEMU_OP_GREATER_EQUAL; op++) {
            check_table((enum nrtemu_op)op, f, f, NRTEMU_DTYPE_BOOL, 2);
            check_table((enum nrtemu_op)op, NRTEMU_DTYPE_FLOAT32, f,
                        NRTEMU_DTYPE_BOOL, 2);
        }
        check_table(NRTEMU_OP_WHERE, f, f, f, 3);
    }
    check_table(NRTEMU_OP_MUL, NRTEMU_DTYPE_INT8, NRTEMU_DTYPE_INT8,
                NRTEMU_DTYPE_INT8, 2);
    check_table(NRTEMU_OP_SHR_ARITH, NRTEMU_DTYPE_INT8, NRTEMU_DTYPE_INT8,
                NRTEMU_DTYPE_INT8, 2);
    check_table(NRTEMU_OP_NEG, NRTEMU_DTYPE_UINT8, NRTEMU_DTYPE_UINT8,
                NRTEMU_DTYPE_UINT8, 1);
    check_table(NRTEMU_OP_WHERE, NRTEMU_DTYPE_INT8, NRTEMU_DTYPE_INT8,
                NRTEMU_DTYPE_INT8, 3);
}

/*
 * Streamed results (kernel_stream.h) are the plain ones: elementwise ops
 * of several out sizes (blocks of 1 KiB, odd tails), into outs at odd
 * offsets from a cache line, and the copy itself at every head and tail.
 */
static void
test_streamed(void)
{
    enum { N = 100003 };
    static float a[N + 16], b[N + 16], plain[N + 16], streamed[N + 16];
    static int32_t ia[N + 16], iplain[N + 16], istreamed[N + 16];
    static char src[4096], dst[4096 + 64];
    struct nrtemu_scratch s = {0};

    for (size_t i = 0; i < N + 16; i++) {
        a[i] = (float)i * 0.37f - 1000.0f;
        b[i] = 1.0f / ((float)i + 0.5f);
        ia[i] = (int32_t)(i * 2654435761u);
    }
    for (size_t off = 0; off < 5; off++) {
        struct nrtemu_array in[2] = {{a + off, NRTEMU_DTYPE_FLOAT32, 1, {N}},
                                     {b, NRTEMU_DTYPE_FLOAT32, 1, {N}}};
        struct nrtemu_array out = {plain + off, NRTEMU_DTYPE_FLOAT32, 1, {N}};
        struct nrtemu_array iin = {ia, NRTEMU_DTYPE_INT32, 1, {N}};
        struct nrtemu_array iout = {iplain + off, NRTEMU_DTYPE_INT32, 1, {N}};
        ASSERT_EQ(nrtemu__kernel_elementwise_part(NRTEMU_OP_ADD,
                                                  NRTEMU_DTYPE_FLOAT32, &out,
                                                  in, 2, &s, false),
                  NRT_SUCCESS);
        out.data = streamed + off;
        ASSERT_EQ(nrtemu__kernel_elementwise_part(NRTEMU_OP_ADD,
                                                  NRTEMU_DTYPE_FLOAT32, &out,
                                                  in, 2, &s, true),
                  NRT_SUCCESS);
        ASSERT_TRUE(memcmp(plain + off, streamed + off, N * 4) == 0);
        ASSERT_EQ(nrtemu__kernel_elementwise_part(NRTEMU_OP_SIGN,
                                                  NRTEMU_DTYPE_INT32, &iout,
                                                  &iin, 1, &s, false),
                  NRT_SUCCESS);
        iout.data = istreamed + off;
        ASSERT_EQ(nrtemu__kernel_elementwise_part(NRTEMU_OP_COPY,
                                                  NRTEMU_DTYPE_INT32, &iout,
                                                  &iin, 1, &s, true),
                  NRT_SUCCESS);
        ASSERT_TRUE(memcmp(ia, istreamed + off, N * 4) == 0);
        iout.data = istreamed + off;
        ASSERT_EQ(nrtemu__kernel_elementwise_part(NRTEMU_OP_SIGN,
                                                  NRTEMU_DTYPE_INT32, &iout,
                                                  &iin, 1, &s, true),
                  NRT_SUCCESS);
        ASSERT_TRUE(memcmp(iplain + off, istreamed + off, N * 4) == 0);
    }
    for (size_t i = 0; i < sizeof src; i++) {
        src[i] = (char)(i * 31 + 7);
    }
    for (size_t head = 0; head < 64; head += 7) {
        for (size_t n = 0; n < sizeof src; n = n * 3 + 1) {
            memset(dst, 0, sizeof dst);
            nrtemu__kstream_copy(dst + head, src, n);
            kstream_fence();
            ASSERT_TRUE(memcmp(dst + head, src, n) == 0);
            ASSERT_TRUE(head + n >= sizeof dst || dst[head + n] == 0);
        }
    }
    nrtemu__scratch_free(&s);
}

/*
 * Transposes of 1- and 2-byte items (16 x 16 blocks, their 8 x 8 and
 * item-by-item edges, tiles; pieces on the pool for the biggest), every
 * item checked.
 */
static void
test_transpose_small_items(void)
{
    static const uint64_t sides[] = {1, 7, 8, 15, 16, 17, 24, 33, 129, 300};
    enum { N = 700 * 517 };
    static uint16_t x[N], o[N];
    uint32_t perm[2] = {1, 0};

    for (size_t i = 0; i < N; i++) {
        x[i] = (uint16_t)(i * 40503u + 1);
    }
    for (int size = 1; size <= 2; size++) {
        enum nrtemu_dtype dt =
            size == 1 ? NRTEMU_DTYPE_UINT8 : NRTEMU_DTYPE_UINT16;
        for (size_t i = 0; i <= 100; i++) { /* 100: 700 x 517 */
            uint64_t R = i < 100 ? sides[i / 10] : 700;
            uint64_t C = i < 100 ? sides[i % 10] : 517;
            struct nrtemu_array in = {x, dt, 2, {R, C}};
            struct nrtemu_array out = {o, dt, 2, {C, R}};
            nrtemu__kernel_transpose(&out, &in, perm);
            for (uint64_t r = 0; r < R; r++) {
                for (uint64_t c = 0; c < C; c++) {
                    const char *want = (const char *)x + (r * C + c) * size;
                    const char *got = (const char *)o + (c * R + r) * size;
                    if (memcmp(want, got, (size_t)size) != 0) {
                        TEST_FAIL_(
                            "%d-byte %llux%llu transpose: item "
                            "(%llu, %llu) wrong",
                            size, (unsigned long long)R, (unsigned long long)C,
                            (unsigned long long)r, (unsigned long long)c);
                    }
                }
            }
        }
    }
}

/*
 * Large transposes of 1-, 2- and 4-byte items with extents of whole
 * squares of 64-byte lines (64, 32 and 16 items a side: by bands of src,
 * streamed, kernel_transpose.c, with AVX-512 BW), wide, tall and square, one
 * band and many (of the square's side: 16 x 131072 and 131072 x 16 for
 * 4-byte items); extents one square's side off those (the tiles); and
 * the same arrays one byte off a 64-byte boundary (the tiles); every item
 * checked.
 */
static void
test_transpose_bands(void)
{
    static const uint64_t shapes[][2] = {
        {2048, 2048}, {1024, 2048}, {4096, 512}, {64, 32768}, {32768, 64},
        {16, 131072}, {131072, 16}, {32, 65536}, {2048, 1040}};
    static const enum nrtemu_dtype dts[] = {
        NRTEMU_DTYPE_FLOAT8_E4M3, NRTEMU_DTYPE_BFLOAT16, NRTEMU_DTYPE_FLOAT32};
    enum { N = 4 * 2048 * 2048 + 128 };
    static uint8_t x[N], o[N];
    uint32_t perm[2] = {1, 0};

    for (size_t i = 0; i < N; i++) {
        x[i] = (uint8_t)(i * 40503u >> 7);
    }
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        const size_t size = nrtemu__dtype_size(dts[d]);
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
            for (size_t skew = 0; skew < 2; skew++) {
                uint64_t R = shapes[k][0], C = shapes[k][1];
                uint8_t *in_data = x + (64 - (uintptr_t)x % 64) + skew;
                uint8_t *out_data = o + (64 - (uintptr_t)o % 64) + skew;
                struct nrtemu_array in = {in_data, dts[d], 2, {R, C}};
                struct nrtemu_array out = {out_data, dts[d], 2, {C, R}};
                size_t bad = 0;
                if (R * C * size + 128 > N) {
                    continue;
                }
                memset(o, 0, sizeof o);
                nrtemu__kernel_transpose(&out, &in, perm);
                for (uint64_t r = 0; r < R; r++) {
                    for (uint64_t c = 0; c < C; c++) {
                        bad += memcmp(out_data + (c * R + r) * size,
                                      in_data + (r * C + c) * size, size) != 0;
                    }
                }
                if (bad != 0) {
                    TEST_FAIL_("%zu-byte %llux%llu transpose (skew %zu): %zu "
                               "items wrong",
                               size, (unsigned long long)R,
                               (unsigned long long)C, skew, bad);
                }
            }
        }
    }
}

int
main(void)
{
    test_begin("test_kernels_pool");
    RUN_TEST(test_split_boxes);
    RUN_TEST(test_tables);
    RUN_TEST(test_streamed);
    RUN_TEST(test_transpose_small_items);
    RUN_TEST(test_transpose_bands);
    return 0;
}
