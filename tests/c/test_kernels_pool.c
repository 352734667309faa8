/*
 * test_kernels_pool.c - cutting ops into pieces for the worker pool
 * (kernel_split.h).
 */
#include "test.h"

#include "kernel.h"
#include "kernel_split.h"

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

int
main(void)
{
    test_begin("test_kernels_pool");
    RUN_TEST(test_split_boxes);
    return 0;
}
