/*
 * test_reduce_split.c - the reductions and argmax/argmin of
 * kernel_reduce.c on inputs large enough to be split among the pool's
 * threads, and their widening of narrow types in registers:
 *  - every code of bfloat16, float16 and the four fp8 formats widens to
 *    the float32 that nrtemu__convert gives, bit for bit, NaN included,
 *    along a row and along a column, also under flush-to-zero and
 *    denormals-are-zero;
 *  - sum, mean, max, min and prod over consecutive axes ([A, R, B]: rows,
 *    columns, a middle axis, split by A or by B at odd sizes) give the
 *    bits of the general walk (the same reduction written with a trailing
 *    axis of 1 reduced too, which takes kernel_reduce.c's iterator path),
 *    for random floats (whose sums depend on the order), NaNs, and int32
 *    at INT32_MIN/INT32_MAX; sums and products down the columns against
 *    a plain loop in NumPy's order;
 *  - argmax/argmin against a reference: the first extreme, the first NaN,
 *    all-NaN rows, ties, INT32_MIN/INT32_MAX, rows shorter and longer
 *    than the vector loops, on both sides of the split (by columns, or by
 *    rows whose tasks' extremes merge), and every code of the four fp8
 *    formats down the columns;
 *  - argsort (merge sort, radix sort), split by lines or not, against a
 *    stable sort in XLA's total order.
 */
#include <math.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "test.h"

#include "kernels/convert.h"
#include "kernels/kernel.h"
#include "kernels/pool.h"
#include "test_array.h"

static struct nrtemu_scratch scratch;

static void *
alloc_bytes(size_t n)
{
    void *p = malloc(n + 64);

    ASSERT_NOT_NULL(p);
    memset(p, 0xa5, n);
    return p;
}

/* A deterministic generator (xorshift64*), so that a failure repeats. */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t
rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1du;
}

/* --- widening every code --- */

static void
check_widen(enum nrtemu_dtype dt, uint32_t codes)
{
    size_t es = nrtemu__dtype_size(dt);
    unsigned char *pairs = alloc_bytes(2 * (size_t)codes * es);
    unsigned char *cols = alloc_bytes(2 * (size_t)codes * es);
    float *want = alloc_bytes((size_t)codes * sizeof(float));
    float *got = alloc_bytes((size_t)codes * sizeof(float));

    for (uint32_t c = 0; c < codes; c++) {
        uint16_t v = (uint16_t)c;
        /* Row c of [codes, 2] is (c, c); column c of [2, codes] too. */
        memcpy(pairs + (2 * (size_t)c) * es, &v, es);
        memcpy(pairs + (2 * (size_t)c + 1) * es, &v, es);
        memcpy(cols + (size_t)c * es, &v, es);
        memcpy(cols + ((size_t)codes + c) * es, &v, es);
    }
    nrtemu__convert(NRTEMU_DTYPE_FLOAT32, want, dt, cols, 1, codes);
    for (int axis = 0; axis < 2; axis++) {
        uint64_t shape[2] = {axis ? codes : 2, axis ? 2 : codes};
        struct nrtemu_array in = array(dt, axis ? pairs : cols, 2, shape);
        struct nrtemu_array out =
            array(NRTEMU_DTYPE_FLOAT32, got, 1, (uint64_t[]){codes});
        /* max(x, x) is x, bit for bit, -0 and NaN included. */
        ASSERT_OK(nrtemu__kernel_reduce(NRTEMU_OP_MAX, NRTEMU_DTYPE_FLOAT32,
                                        &out, &in, 1u << axis, &scratch));
        for (uint32_t c = 0; c < codes; c++) {
            uint32_t g, w;
            memcpy(&g, &got[c], 4);
            memcpy(&w, &want[c], 4);
            if (g != w) {
                TEST_FAIL_("%s code 0x%x along axis %d: 0x%08x, expected "
                           "0x%08x",
                           nrtemu__dtype_name(dt), c, axis, g, w);
            }
        }
    }
    free(pairs);
    free(cols);
    free(want);
    free(got);
}

static void
test_widen_every_code(void)
{
#if defined(__x86_64__)
    /* First under flush-to-zero and denormals-are-zero, which the
     * widenings must not depend on (their tables are built on first use:
     * here). */
    unsigned csr = _mm_getcsr();

    _mm_setcsr(csr | 0x8040u);
    check_widen(NRTEMU_DTYPE_FLOAT16, 65536);
    check_widen(NRTEMU_DTYPE_FLOAT8_E4M3, 256);
    check_widen(NRTEMU_DTYPE_FLOAT8_E4M3FN, 256);
    check_widen(NRTEMU_DTYPE_FLOAT8_E5M2, 256);
    check_widen(NRTEMU_DTYPE_FLOAT8_E3M4, 256);
    _mm_setcsr(csr);
#endif
    check_widen(NRTEMU_DTYPE_BFLOAT16, 65536);
    check_widen(NRTEMU_DTYPE_FLOAT16, 65536);
    check_widen(NRTEMU_DTYPE_FLOAT8_E4M3, 256);
    check_widen(NRTEMU_DTYPE_FLOAT8_E4M3FN, 256);
    check_widen(NRTEMU_DTYPE_FLOAT8_E5M2, 256);
    check_widen(NRTEMU_DTYPE_FLOAT8_E3M4, 256);
}

/* --- reductions: the split path against the general walk --- */

/* Random values of dt: floats in [-2, 2) with a NaN now and then (when
 * `nans`), int32 over its whole range with its extremes now and then. */
static void
fill_random(enum nrtemu_dtype dt, void *data, uint64_t n, bool nans)
{
    size_t es = nrtemu__dtype_size(dt);

    for (uint64_t i = 0; i < n; i++) {
        uint64_t r = rng_next();
        char *p = (char *)data + i * es;
        if (dt == NRTEMU_DTYPE_INT32) {
            int32_t v = (int32_t)(uint32_t)(r >> 32);
            if (r % 97 == 0) {
                v = (r & 1) ? INT32_MAX : INT32_MIN;
            }
            memcpy(p, &v, 4);
        } else {
            double v = (double)(r >> 11) * 0x1p-53 * 4.0 - 2.0;
            if (nans && r % 50021 == 0) {
                v = NAN;
            }
            nrtemu__convert(dt, p, NRTEMU_DTYPE_FLOAT64, &v, 1, 1);
        }
    }
}

static enum nrtemu_dtype
reduce_out_dtype(enum nrtemu_op op, enum nrtemu_dtype dt)
{
    if (dt == NRTEMU_DTYPE_INT32 && op == NRTEMU_OP_MEAN) {
        return NRTEMU_DTYPE_FLOAT64;
    }
    if (dt == NRTEMU_DTYPE_INT32 &&
        (op == NRTEMU_OP_SUM || op == NRTEMU_OP_PROD)) {
        return NRTEMU_DTYPE_INT64; /* NumPy's sum of int32 */
    }
    return dt;
}

static const char *const reduce_names[] = {"sum", "mean", "max", "min",
                                           "prod"};
static const enum nrtemu_op reduce_ops[] = {NRTEMU_OP_SUM, NRTEMU_OP_MEAN,
                                            NRTEMU_OP_MAX, NRTEMU_OP_MIN,
                                            NRTEMU_OP_PROD};

/*
 * Codes of a 1-byte dt for `pattern`: 0, every code (NaNs of both signs,
 * infinities, both zeros) in an order of its own; 1, a few codes, ties
 * everywhere, -0 and +0 among them, so that many extremes are zeros; 2,
 * negative codes only, a NaN now and then; 3, positive and negative
 * codes, no NaN, a line of zeros only now and then (a line: index % mod).
 */
static void
fill_codes(uint8_t *data, uint64_t n, int pattern, uint64_t mod)
{
    static const uint8_t few[] = {0x00, 0x80, 0x01, 0x81, 0x38, 0xb8};

    for (uint64_t i = 0; i < n; i++) {
        uint64_t r = rng_next();
        switch (pattern) {
        case 0:
            data[i] = (uint8_t)((i * 7 + i / mod * 12) % 256);
            break;
        case 1:
            data[i] = few[r % 6];
            break;
        case 2:
            data[i] = (uint8_t)(r % 997 == 0 ? 0xff : 0x80 | (r & 0x3f));
            break;
        default:
            data[i] = i % mod % 5 == 0
                          ? (uint8_t)(r & 0x80)
                          : (uint8_t)((r & 0x80) | (r >> 8) % 100);
            break;
        }
    }
}

/* fill: 0 or 1, random values without or with NaNs (fill_random); 2 on,
 * fp8 codes of fill_codes' pattern fill - 2. */
static void
check_split_reduce(enum nrtemu_dtype dt, uint32_t ndim, const uint64_t *shape,
                   uint32_t axes, int fill)
{
    uint64_t count = 1, ocount = 1, shape1[NRTEMU_MAX_DIMS];
    size_t es = nrtemu__dtype_size(dt);
    void *data;

    for (uint32_t d = 0; d < ndim; d++) {
        count *= shape[d];
        ocount *= (axes & (1u << d)) ? 1 : shape[d];
        shape1[d] = shape[d];
    }
    shape1[ndim] = 1;
    data = alloc_bytes(count * es);
    if (fill >= 2) {
        fill_codes(data, count, fill - 2, shape[ndim - 1]);
    } else {
        fill_random(dt, data, count, fill == 1);
    }
    for (size_t k = 0; k < sizeof reduce_ops / sizeof reduce_ops[0]; k++) {
        enum nrtemu_op op = reduce_ops[k];
        enum nrtemu_dtype odt = reduce_out_dtype(op, dt);
        size_t os = nrtemu__dtype_size(odt);
        struct nrtemu_array in = array(dt, data, ndim, shape);
        /* The same input with a trailing axis of 1, reduced too: axes that
         * are not consecutive, which kernel_reduce.c walks serially. */
        struct nrtemu_array in1 = array(dt, data, ndim + 1, shape1);
        struct nrtemu_array out =
            array(odt, alloc_bytes(ocount * os), 1, &ocount);
        struct nrtemu_array ref =
            array(odt, alloc_bytes(ocount * os), 1, &ocount);

        ASSERT_OK(nrtemu__kernel_reduce(op, odt, &out, &in, axes, &scratch));
        ASSERT_OK(nrtemu__kernel_reduce(op, odt, &ref, &in1,
                                        axes | (1u << ndim), &scratch));
        if (memcmp(out.data, ref.data, ocount * os) != 0) {
            for (uint64_t o = 0; o < ocount; o++) {
                if (memcmp((char *)out.data + o * os,
                           (char *)ref.data + o * os, os) != 0) {
                    double g, w;
                    nrtemu__convert(NRTEMU_DTYPE_FLOAT64, &g, odt,
                                    (char *)out.data + o * os, 1, 1);
                    nrtemu__convert(NRTEMU_DTYPE_FLOAT64, &w, odt,
                                    (char *)ref.data + o * os, 1, 1);
                    if (isnan(g) && isnan(w) && op != NRTEMU_OP_MAX &&
                        op != NRTEMU_OP_MIN) {
                        /* the sign of a sum (product) of NaNs of both
                         * signs: that of the one first in an addition,
                         * which the compiler orders as it likes; a max
                         * (min) keeps the first NaN */
                        continue;
                    }
                    TEST_FAIL_("%s %s ndim %u shape[0] %llu axes 0x%x [%llu]: "
                               "%.17g, serially %.17g",
                               reduce_names[k], nrtemu__dtype_name(dt), ndim,
                               (unsigned long long)shape[0], axes,
                               (unsigned long long)o, g, w);
                }
            }
        }
        free(out.data);
        free(ref.data);
    }
    free(data);
}

static void
test_split_reduce(void)
{
    static const enum nrtemu_dtype dts[] = {
        NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_BFLOAT16,    NRTEMU_DTYPE_FLOAT16,
        NRTEMU_DTYPE_INT32,   NRTEMU_DTYPE_FLOAT8_E4M3, NRTEMU_DTYPE_FLOAT64,
    };
    /* Each over 1 MiB even in fp8, so that it is split. */
    static const struct {
        uint32_t ndim, axes;
        uint64_t shape[3];
    } cases[] = {
        {2, 1, {1201, 1001}},   /* rows, split by rows */
        {2, 1, {2, 700001}},    /* two long rows */
        {2, 1, {1, 1300001}},   /* one row: not split */
        {2, 1, {1, 1300001}},   /* (again, after the scratch grew) */
        {2, 2, {1001, 1201}},   /* columns, split by columns */
        {3, 2, {1, 3001, 373}}, /* columns of an odd width */
        {3, 2, {3, 1001, 373}}, /* a middle axis, split by the first */
        {3, 3, {5, 3, 70001}},  /* the first two axes */
        {3, 6, {3, 7, 50001}},  /* the last two axes: rows */
    };

    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            for (int nans = 0; nans < 2; nans++) {
                check_split_reduce(dts[t], cases[c].ndim, cases[c].shape,
                                   cases[c].axes, nans);
            }
        }
    }
}

/* The four fp8 formats, which every fp8 test below runs through. */
static const enum nrtemu_dtype fp8_dtypes[] = {
    NRTEMU_DTYPE_FLOAT8_E4M3, NRTEMU_DTYPE_FLOAT8_E4M3FN,
    NRTEMU_DTYPE_FLOAT8_E5M2, NRTEMU_DTYPE_FLOAT8_E3M4};

/* The fp8 max and min by their codes (kernel_reduce_x86.c's bytes_*), and the
 * sums, against the serial walk, which widens every code: every code,
 * ties of -0 and +0, negative codes only, NaNs of both signs, rows and
 * columns, split or not, at widths that leave a tail of a vector. */
static void
test_fp8_reduce_codes(void)
{
    static const struct {
        uint32_t ndim, axes;
        uint64_t shape[3];
    } cases[] = {
        {2, 1, {1201, 1001}}, /* rows, split */
        {2, 1, {300, 77}},    /* short rows, not split */
        {2, 1, {3, 700}},     /* rows with a tail of a vector */
        {2, 2, {1001, 1201}}, /* columns, split by rows */
        {2, 2, {1, 300}},     /* one row */
        {2, 2, {257, 321}},   /* columns, not split */
        {3, 2, {3, 1001, 373}},
    };

    for (size_t t = 0; t < sizeof fp8_dtypes / sizeof fp8_dtypes[0]; t++) {
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            for (int pattern = 0; pattern < 4; pattern++) {
                check_split_reduce(fp8_dtypes[t], cases[c].ndim,
                                   cases[c].shape, cases[c].axes, 2 + pattern);
            }
        }
    }
}

/* Sums and products down the columns in the order of NumPy, against a
 * plain loop: float32 accumulators, each column row after row, the input
 * widened to float32 (the 16- and 8-bit floats exactly), over a width
 * with a tail of a vector, split by columns or not. */
static void
check_column_order(enum nrtemu_dtype dt, uint64_t R, uint64_t B)
{
    size_t es = nrtemu__dtype_size(dt);
    char *data = alloc_bytes(R * B * es);
    float *wide = alloc_bytes(R * B * sizeof(float));
    float *got = alloc_bytes(B * sizeof(float));
    float *want = alloc_bytes(B * sizeof(float));
    const uint64_t shape[2] = {R, B};
    struct nrtemu_array in = array(dt, data, 2, shape);
    struct nrtemu_array out = array(NRTEMU_DTYPE_FLOAT32, got, 1, &B);

    fill_random(dt, data, R * B, false);
    nrtemu__convert(NRTEMU_DTYPE_FLOAT32, wide, dt, data, 1, R * B);
    for (int k = 0; k < 2; k++) {
        enum nrtemu_op op = k ? NRTEMU_OP_PROD : NRTEMU_OP_SUM;
        if (!k) {
            for (uint64_t b = 0; b < B; b++) {
                float a = 0.0f;
                for (uint64_t r = 0; r < R; r++) {
                    a += wide[r * B + b];
                }
                want[b] = a;
            }
        }
        if (k) {
            /* values near 1, so that products are neither 0 nor infinite */
            for (uint64_t i = 0; i < R * B; i++) {
                float v = 1.0f + wide[i] / 64;
                nrtemu__convert(dt, data + i * es, NRTEMU_DTYPE_FLOAT32, &v, 1,
                                1);
                nrtemu__convert(NRTEMU_DTYPE_FLOAT32, &wide[i], dt,
                                data + i * es, 1, 1);
            }
            for (uint64_t b = 0; b < B; b++) {
                float a = 1.0f;
                for (uint64_t r = 0; r < R; r++) {
                    a *= wide[r * B + b];
                }
                want[b] = a;
            }
        }
        ASSERT_OK(nrtemu__kernel_reduce(op, NRTEMU_DTYPE_FLOAT32, &out, &in,
                                        1u, &scratch));
        for (uint64_t b = 0; b < B; b++) {
            if (memcmp(&got[b], &want[b], 4) != 0) {
                TEST_FAIL_("%s %s [%llu, %llu] column %llu: %.9g, expected "
                           "%.9g",
                           k ? "prod" : "sum", nrtemu__dtype_name(dt),
                           (unsigned long long)R, (unsigned long long)B,
                           (unsigned long long)b, got[b], want[b]);
            }
        }
    }
    free(data);
    free(wide);
    free(got);
    free(want);
}

static void
test_column_order(void)
{
    static const enum nrtemu_dtype fp8_dtypes[] = {
        NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_BFLOAT16, NRTEMU_DTYPE_FLOAT16,
        NRTEMU_DTYPE_FLOAT8_E4M3, NRTEMU_DTYPE_FLOAT8_E5M2};

    for (size_t t = 0; t < sizeof fp8_dtypes / sizeof fp8_dtypes[0]; t++) {
        check_column_order(fp8_dtypes[t], 37, 1001);
        check_column_order(fp8_dtypes[t], 1201, 1001);
    }
}

/* fp8 column sums split among tasks by rows where every order of the
 * additions gives the same sum (kernel_reduce.c's exact_sum), and summed
 * again split by columns where not, against a plain loop row after row,
 * bit for bit: `mode` 0: magnitudes below 2 (every order exact in e4m3,
 * e4m3fn and e3m4); 1: any finite code, 3 in 4 positive (sums that
 * grow, rounded); 2: as 0, with NaN
 * and infinite codes here and there; 3: zeros of both signs only. */
static void
check_fp8_column_sum(enum nrtemu_dtype dt, uint64_t R, uint64_t B, int mode)
{
    uint8_t *data = alloc_bytes(R * B);
    float *wide = alloc_bytes(R * B * sizeof(float));
    float *got = alloc_bytes(B * sizeof(float));
    float *want = alloc_bytes(B * sizeof(float));
    const uint64_t shape[2] = {R, B};
    struct nrtemu_array in = array(dt, data, 2, shape);
    struct nrtemu_array out = array(NRTEMU_DTYPE_FLOAT32, got, 1, &B);

    for (uint64_t i = 0; i < R * B; i++) {
        uint64_t r = rng_next();
        uint8_t c = (uint8_t)(r >> 56);
        float v;
        switch (mode) {
        case 0:
            c &= 0xbf; /* magnitude below 0x40: below 2 in these formats */
            break;
        case 1:
            nrtemu__convert(NRTEMU_DTYPE_FLOAT32, &v, dt, &c, 1, 1);
            if (isnan(v) || isinf(v)) {
                c &= 0xbf;
            }
            if (r % 4 != 0) {
                c &= 0x7f; /* mostly positive: sums that grow */
            }
            break;
        case 2:
            c = r % 40009 == 0
                    ? (uint8_t)(r % 3 == 0 ? 0x7f : 0x78 | (r & 0x80))
                    : (uint8_t)(c & 0xbf);
            break;
        default:
            c &= 0x80;
            break;
        }
        data[i] = c;
    }
    nrtemu__convert(NRTEMU_DTYPE_FLOAT32, wide, dt, data, 1, R * B);
    for (uint64_t b = 0; b < B; b++) {
        float a = 0.0f;
        for (uint64_t r = 0; r < R; r++) {
            a += wide[r * B + b];
        }
        want[b] = a;
    }
    ASSERT_OK(nrtemu__kernel_reduce(NRTEMU_OP_SUM, NRTEMU_DTYPE_FLOAT32, &out,
                                    &in, 1u, &scratch));
    for (uint64_t b = 0; b < B; b++) {
        /* (a sum of NaNs of both signs: any NaN, as check_split_reduce
         * has it; the build without dispatch orders the additions of the
         * plain loop otherwise) */
        if (memcmp(&got[b], &want[b], 4) != 0 &&
            !(isnan(got[b]) && isnan(want[b]))) {
            TEST_FAIL_("sum %s [%llu, %llu] mode %d column %llu: %.9g, "
                       "expected %.9g",
                       nrtemu__dtype_name(dt), (unsigned long long)R,
                       (unsigned long long)B, mode, (unsigned long long)b,
                       got[b], want[b]);
        }
    }
    free(data);
    free(wide);
    free(got);
    free(want);
}

static void
test_fp8_column_sum_split(void)
{

    for (size_t t = 0; t < sizeof fp8_dtypes / sizeof fp8_dtypes[0]; t++) {
        for (int mode = 0; mode < 4; mode++) {
            check_fp8_column_sum(fp8_dtypes[t], 1201, 1001, mode);
            check_fp8_column_sum(fp8_dtypes[t], 2048, 2048, mode);
        }
    }
}

/* fp8 sums along rows (kernel_reduce_x86.c's wide_row_sum_fp8, whose leaves
 * of whole vector steps are summed several at a time) against the float32
 * sums of the rows widened (f32_row: the same pairwise order), bit for
 * bit, at lengths whose halves or quarters are such leaves (1024, 2048,
 * 4096) and lengths whose are not; any finite code, 3 in 4 positive, so
 * that the sums grow and round. */
static void
check_fp8_row_sum(enum nrtemu_dtype dt, uint64_t A, uint64_t R)
{
    uint8_t *data = alloc_bytes(A * R);
    float *wide = alloc_bytes(A * R * sizeof(float));
    float *got = alloc_bytes(A * sizeof(float));
    float *want = alloc_bytes(A * sizeof(float));
    const uint64_t shape[2] = {A, R};
    struct nrtemu_array in = array(dt, data, 2, shape);
    struct nrtemu_array win = array(NRTEMU_DTYPE_FLOAT32, wide, 2, shape);
    struct nrtemu_array out = array(NRTEMU_DTYPE_FLOAT32, got, 1, &A);
    struct nrtemu_array ref = array(NRTEMU_DTYPE_FLOAT32, want, 1, &A);

    for (uint64_t i = 0; i < A * R; i++) {
        uint64_t r = rng_next();
        uint8_t c = (uint8_t)(r >> 56);
        float v;
        nrtemu__convert(NRTEMU_DTYPE_FLOAT32, &v, dt, &c, 1, 1);
        if (isnan(v) || isinf(v)) {
            c &= 0xbf;
        }
        data[i] = r % 4 != 0 ? (uint8_t)(c & 0x7f) : c;
    }
    nrtemu__convert(NRTEMU_DTYPE_FLOAT32, wide, dt, data, 1, A * R);
    ASSERT_OK(nrtemu__kernel_reduce(NRTEMU_OP_SUM, NRTEMU_DTYPE_FLOAT32, &out,
                                    &in, 2u, &scratch));
    ASSERT_OK(nrtemu__kernel_reduce(NRTEMU_OP_SUM, NRTEMU_DTYPE_FLOAT32, &ref,
                                    &win, 2u, &scratch));
    for (uint64_t a = 0; a < A; a++) {
        if (memcmp(&got[a], &want[a], 4) != 0) {
            TEST_FAIL_("sum %s [%llu, %llu] row %llu: %.9g, expected %.9g",
                       nrtemu__dtype_name(dt), (unsigned long long)A,
                       (unsigned long long)R, (unsigned long long)a, got[a],
                       want[a]);
        }
    }
    free(data);
    free(wide);
    free(got);
    free(want);
}

static void
test_fp8_row_sum(void)
{
    static const uint64_t lengths[] = {1024, 2048, 4096, 8192, 2080,
                                       1000, 3000, 640,  64,   513};

    for (size_t t = 0; t < sizeof fp8_dtypes / sizeof fp8_dtypes[0]; t++) {
        for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++) {
            /* over 1 MiB (split among threads) and under */
            check_fp8_row_sum(fp8_dtypes[t], (1u << 20) / lengths[k] + 3,
                              lengths[k]);
            check_fp8_row_sum(fp8_dtypes[t], 5, lengths[k]);
        }
    }
}

/* --- argmax/argmin against a reference --- */

/* Element i of line (a, b) at row r of [A, R, B], for `pattern` 0: random
 * values (int32 over its range with its extremes), NaN now and then;
 * 1: three values only, ties everywhere (-0 and +0 among them, equal);
 * 2: NaNs at random places, and every 7th line all NaN (pattern 3:
 * check_arg). */
static double
arg_value(enum nrtemu_dtype dt, int pattern, uint64_t line, uint64_t r)
{
    uint64_t x = rng_next();
    bool is_int = dt == NRTEMU_DTYPE_INT32;

    (void)r;
    if (pattern == 1) {
        static const double three[] = {-1.0, -0.0, 0.0, 1.0};
        static const double ints[] = {INT32_MIN, 0, 0, INT32_MAX};
        return (is_int ? ints : three)[x % 4];
    }
    if (!is_int && pattern == 2 && (line % 7 == 0 || x % 3 == 0)) {
        return NAN;
    }
    if (!is_int && pattern == 0 && x % 4999 == 0) {
        return NAN;
    }
    if (is_int) {
        return x % 61 == 0 ? ((x >> 8) & 1 ? INT32_MAX : INT32_MIN)
                           : (double)(int32_t)(uint32_t)(x >> 32);
    }
    return (double)(x >> 11) * 0x1p-53 * 4.0 - 2.0;
}

static void
check_arg(enum nrtemu_dtype dt, uint64_t A, uint64_t R, uint64_t B,
          int pattern)
{
    uint64_t count = A * R * B;
    size_t es = nrtemu__dtype_size(dt);
    char *data = alloc_bytes(count * es);
    double *vals = alloc_bytes(count * sizeof(double));
    int64_t *got = alloc_bytes(A * B * sizeof(int64_t));

    for (uint64_t i = 0; i < count; i++) {
        uint64_t a = i / (R * B), r = i / B % R, b = i % B;
        if (pattern == 3) {
            /* every code of a 1-byte dt down each line of 256 rows or
             * more, NaNs and both zeros included, in an order of its own */
            data[i] = (char)(uint8_t)((r * 7 + (a * B + b) * 13) % 256);
        } else {
            double v = arg_value(dt, pattern, a * B + b, r);
            nrtemu__convert(dt, data + i * es, NRTEMU_DTYPE_FLOAT64, &v, 1, 1);
        }
        /* What the input holds, rounded to dt. */
        nrtemu__convert(NRTEMU_DTYPE_FLOAT64, &vals[i], dt, data + i * es, 1,
                        1);
    }
    for (int k = 0; k < 2; k++) {
        enum nrtemu_op op = k ? NRTEMU_OP_ARGMIN : NRTEMU_OP_ARGMAX;
        struct nrtemu_array in =
            array(dt, data, 3, (const uint64_t[]){A, R, B});
        uint64_t oshape[2] = {A, B};
        struct nrtemu_array out = array(NRTEMU_DTYPE_INT64, got, 2, oshape);

        ASSERT_OK(nrtemu__kernel_argreduce(op, &out, &in, 1, &scratch));
        for (uint64_t a = 0; a < A; a++) {
            for (uint64_t b = 0; b < B; b++) {
                const double *line = vals + a * R * B + b;
                uint64_t want = 0;
                double best = line[0];
                for (uint64_t r = 1; r < R && !isnan(best); r++) {
                    double v = line[r * B];
                    if (isnan(v) || (k ? v < best : v > best)) {
                        best = v;
                        want = r;
                    }
                }
                if (got[a * B + b] != (int64_t)want) {
                    TEST_FAIL_("%s %s [%llu, %llu, %llu] pattern %d at (%llu, "
                               "%llu): %lld, expected %llu",
                               k ? "argmin" : "argmax", nrtemu__dtype_name(dt),
                               (unsigned long long)A, (unsigned long long)R,
                               (unsigned long long)B, pattern,
                               (unsigned long long)a, (unsigned long long)b,
                               (long long)got[a * B + b],
                               (unsigned long long)want);
                }
            }
        }
    }
    free(data);
    free(vals);
    free(got);
}

static void
test_split_arg(void)
{
    static const enum nrtemu_dtype fp8_dtypes[] = {
        NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_BFLOAT16,    NRTEMU_DTYPE_FLOAT16,
        NRTEMU_DTYPE_INT32,   NRTEMU_DTYPE_FLOAT8_E4M3, NRTEMU_DTYPE_FLOAT64,
    };
    /* [A, R, B]: rows (B 1) shorter and longer than the vector loops, split
     * by rows or not split; columns split by columns or by slabs, at odd
     * widths and heights. */
    static const uint64_t shapes[][3] = {
        {64, 64, 1},     {7, 63, 1},     {5, 65, 1},     {3, 1, 1},
        {1201, 1001, 1}, {2, 600001, 1}, {1, 64, 64},    {2, 5, 7},
        {1, 1001, 1201}, {1, 3001, 373}, {3, 1001, 373}, {1, 1, 4099},
    };

    for (size_t t = 0; t < sizeof fp8_dtypes / sizeof fp8_dtypes[0]; t++) {
        for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
            for (int pattern = 0; pattern < 3; pattern++) {
                check_arg(fp8_dtypes[t], shapes[c][0], shapes[c][1],
                          shapes[c][2], pattern);
            }
        }
    }
}

/* Every code of each fp8 format down the columns, split by rows (the rows
 * of each task start at a code of their own) or not, at widths that leave
 * a tail of a vector. */
static void
test_arg_every_fp8_code(void)
{

    for (size_t t = 0; t < sizeof fp8_dtypes / sizeof fp8_dtypes[0]; t++) {
        check_arg(fp8_dtypes[t], 1, 1001, 1201, 3);
        check_arg(fp8_dtypes[t], 1, 256, 300, 3);
        check_arg(fp8_dtypes[t], 3, 4099, 101, 3);
        /* and along the rows, split or not */
        check_arg(fp8_dtypes[t], 1201, 1001, 1, 3);
        check_arg(fp8_dtypes[t], 3, 300, 1, 3);
        for (int pattern = 0; pattern < 3; pattern++) {
            check_arg(fp8_dtypes[t], 1201, 1001, 1, pattern);
            check_arg(fp8_dtypes[t], 1, 1001, 1201, pattern);
            check_arg(fp8_dtypes[t], 7, 100, 1, pattern);
            check_arg(fp8_dtypes[t], 1, 700, 300, pattern);
        }
    }
}

/* --- argsort split by lines against a reference --- */

struct ref_item {
    double v;
    int64_t idx;
};

/* XLA's total order (-NaN < -inf < ... < -0 < +0 < ... < +NaN), ties by
 * index: the stable order. */
static int
ref_rank(double v)
{
    return isnan(v) ? (signbit(v) ? 0 : 2) : 1;
}

static int
ref_cmp(const void *pa, const void *pb)
{
    const struct ref_item *a = pa, *b = pb;
    int ra = ref_rank(a->v), rb = ref_rank(b->v);

    if (ra != rb) {
        return ra < rb ? -1 : 1;
    }
    if (ra == 1 && a->v != b->v) {
        return a->v < b->v ? -1 : 1;
    }
    if (ra == 1 && signbit(a->v) != signbit(b->v)) {
        return signbit(a->v) ? -1 : 1;
    }
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int
ref_cmp_desc(const void *pa, const void *pb)
{
    const struct ref_item *a = pa, *b = pb;
    struct ref_item x = *a, y = *b;

    /* Descending keeps equal keys in their order: compare b to a on the
     * keys only. */
    x.idx = y.idx = 0;
    int c = ref_cmp(&y, &x);
    return c != 0 ? c : (a->idx < b->idx ? -1 : a->idx > b->idx);
}

static void
check_argsort(enum nrtemu_dtype dt, uint64_t A, uint64_t R, uint64_t B,
              bool descending)
{
    uint64_t count = A * R * B;
    size_t es = nrtemu__dtype_size(dt);
    char *data = alloc_bytes(count * es);
    int32_t *got = alloc_bytes(count * sizeof(int32_t));
    struct ref_item *line = alloc_bytes(R * sizeof *line);
    const uint64_t shape[3] = {A, R, B};
    struct nrtemu_array in = array(dt, data, 3, shape);
    struct nrtemu_array out = array(NRTEMU_DTYPE_INT32, got, 3, shape);

    for (uint64_t i = 0; i < count; i++) {
        uint64_t x = rng_next();
        /* Ties (ten values), -0 and +0, NaNs of both signs. */
        double v = (double)(x % 10) - 5.0;
        if (nrtemu__dtype_is_float(dt) && x % 101 == 0) {
            v = (x & 256) ? -NAN : NAN;
        } else if (nrtemu__dtype_is_float(dt) && x % 103 == 0) {
            v = -0.0;
        }
        nrtemu__convert(dt, data + i * es, NRTEMU_DTYPE_FLOAT64, &v, 1, 1);
    }
    ASSERT_OK(nrtemu__kernel_argsort(&out, &in, 1, descending, &scratch));
    for (uint64_t a = 0; a < A; a++) {
        for (uint64_t b = 0; b < B; b++) {
            for (uint64_t r = 0; r < R; r++) {
                uint64_t i = (a * R + r) * B + b;
                nrtemu__convert(NRTEMU_DTYPE_FLOAT64, &line[r].v, dt,
                                data + i * es, 1, 1);
                line[r].idx = (int64_t)r;
            }
            qsort(line, R, sizeof *line, descending ? ref_cmp_desc : ref_cmp);
            for (uint64_t r = 0; r < R; r++) {
                int32_t g = got[(a * R + r) * B + b];
                if (g != line[r].idx) {
                    TEST_FAIL_("argsort %s [%llu, %llu, %llu]%s line (%llu, "
                               "%llu) [%llu]: %d, expected %lld",
                               nrtemu__dtype_name(dt), (unsigned long long)A,
                               (unsigned long long)R, (unsigned long long)B,
                               descending ? " descending" : "",
                               (unsigned long long)a, (unsigned long long)b,
                               (unsigned long long)r, g,
                               (long long)line[r].idx);
                }
            }
        }
    }
    free(data);
    free(got);
    free(line);
}

static void
test_split_argsort(void)
{
    static const enum nrtemu_dtype fp8_dtypes[] = {
        NRTEMU_DTYPE_FLOAT32,     NRTEMU_DTYPE_INT32,   NRTEMU_DTYPE_BFLOAT16,
        NRTEMU_DTYPE_FLOAT8_E4M3, NRTEMU_DTYPE_FLOAT16, NRTEMU_DTYPE_INT8,
        NRTEMU_DTYPE_UINT16,      NRTEMU_DTYPE_FLOAT64};

    for (size_t t = 0; t < sizeof fp8_dtypes / sizeof fp8_dtypes[0]; t++) {
        for (int desc = 0; desc < 2; desc++) {
            check_argsort(fp8_dtypes[t], 140, 2001, 1, desc); /* rows, split */
            check_argsort(fp8_dtypes[t], 1, 2001, 140,
                          desc);                          /* strided lines */
            check_argsort(fp8_dtypes[t], 3, 17, 5, desc); /* not split */
        }
    }
}

int
main(void)
{
    test_begin("test_reduce_split");
    /* The split runs on at least two threads where the machine has two
     * CPUs; on one, the same tests check the serial path. */
    printf("# pool threads: %u\n", nrtemu__pool_threads());
    /* The four longest first, so that meson's four shards (TEST_SHARD,
     * test.h) take one each. */
    RUN_TEST(test_split_reduce);
    RUN_TEST(test_split_arg);
    RUN_TEST(test_arg_every_fp8_code);
    RUN_TEST(test_split_argsort);
    RUN_TEST(test_widen_every_code);
    RUN_TEST(test_column_order);
    RUN_TEST(test_fp8_column_sum_split);
    RUN_TEST(test_fp8_row_sum);
    RUN_TEST(test_fp8_reduce_codes);
    nrtemu__scratch_free(&scratch);
    return 0;
}
