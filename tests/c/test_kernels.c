/*
 * test_kernels.c - the kernels of emulator programs against references
 * computed here: every broadcasting form, every op, each dtype family,
 * NaN and infinities, reductions over any axes, matmul shapes (edges of
 * the register tiles, 1-D operands, batch broadcasting, threads), and the
 * layout ops.
 */
#include <math.h>

#include "test.h"

#include <pthread.h>
#include <stdatomic.h>

#include "kernels/convert.h"
#include "kernels/kernel.h"
#include "kernels/pool.h"
#include "test_array.h"

static struct nrtemu_scratch scratch;

/* Op names for messages, from the op list (the op table itself lives in
 * the program layer, above the kernels). */
static const char *const op_names[NRTEMU_OP_COUNT] = {
#define OP_NAME(suffix, name, arity, cls, check, run, cost, attrs, flags) \
    [NRTEMU_OP_##suffix] = name,
    NRTEMU_OP_LIST(OP_NAME)
#undef OP_NAME
};

#define SHAPE(...) ((const uint64_t[]){__VA_ARGS__})
#define NDIM(...) ((uint32_t)(sizeof((uint64_t[]){__VA_ARGS__}) / 8))
#define ARRAY(dt, data, ...) \
    array(dt, data, NDIM(__VA_ARGS__), SHAPE(__VA_ARGS__))
#define SCALAR(dt, data) array(dt, data, 0, NULL)

/* Fresh memory for n elements of dt, filled with a pattern. */
static void *
alloc_elems(enum nrtemu_dtype dt, size_t n)
{
    void *p = malloc((n ? n : 1) * nrtemu__dtype_size(dt) + 64);

    ASSERT_NOT_NULL(p);
    memset(p, 0xa5, n * nrtemu__dtype_size(dt));
    return p;
}

static double
get(const struct nrtemu_array *a, size_t i)
{
    double d;

    nrtemu__convert(NRTEMU_DTYPE_FLOAT64, &d, a->dtype,
                    (const char *)a->data + i * nrtemu__dtype_size(a->dtype),
                    1, 1);
    return d;
}

/* Array of n elements of dt holding vals (converted from double). */
static struct nrtemu_array
from_doubles(enum nrtemu_dtype dt, const double *vals, uint32_t ndim,
             const uint64_t *shape)
{
    struct nrtemu_array a = array(dt, NULL, ndim, shape);
    uint64_t n = nrtemu__array_count(&a);

    a.data = alloc_elems(dt, n);
    nrtemu__convert(dt, a.data, NRTEMU_DTYPE_FLOAT64, vals, 1, n);
    return a;
}

/* The flat index into `a` of element `flat` of `out`, broadcasting. */
static size_t
source_index(const struct nrtemu_array *a, const struct nrtemu_array *out,
             size_t flat)
{
    size_t idx = 0, stride = 1;

    for (int d = (int)out->ndim - 1, s = (int)a->ndim - 1; s >= 0; d--, s--) {
        size_t i = flat % out->shape[d];
        flat /= out->shape[d];
        if (a->shape[s] != 1) {
            idx += i * stride;
        }
        stride *= a->shape[s];
    }
    return idx;
}

static bool
same_double(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

/* Values of float-ish and integer dtypes, with tricky ones. */
static const double sample_values[] = {
    0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 3.0, -7.0, 7.5, 100.25, -0.375, 1e-3,
};
#define N_SAMPLES (sizeof sample_values / sizeof sample_values[0])

/* Reference of a binary op in double; integer ops are done in int64. */
static double
ref_binary(enum nrtemu_op op, double x, double y)
{
    switch (op) {
    case NRTEMU_OP_ADD:
        return x + y;
    case NRTEMU_OP_SUB:
        return x - y;
    case NRTEMU_OP_MUL:
        return x * y;
    case NRTEMU_OP_DIV:
        return x / y;
    case NRTEMU_OP_MAXIMUM:
        return (x >= y || isnan(x)) ? x : y;
    case NRTEMU_OP_MINIMUM:
        return (x <= y || isnan(x)) ? x : y;
    default:
        return NAN;
    }
}

/* Every broadcasting form, for + - * / max min, on several dtypes. */
static void
test_binary_broadcasting(void)
{
    static const enum nrtemu_dtype dts[] = {
        NRTEMU_DTYPE_FLOAT32,
        NRTEMU_DTYPE_FLOAT64,
        NRTEMU_DTYPE_FLOAT16,
        NRTEMU_DTYPE_BFLOAT16,
    };
    static const enum nrtemu_op ops[] = {
        NRTEMU_OP_ADD, NRTEMU_OP_SUB,     NRTEMU_OP_MUL,
        NRTEMU_OP_DIV, NRTEMU_OP_MAXIMUM, NRTEMU_OP_MINIMUM,
    };
    struct {
        uint32_t an, bn, on;
        uint64_t as[3], bs[3], os[3];
    } forms[] = {
        {2, 2, 2, {2, 3}, {2, 3}, {2, 3}},       /* same shape */
        {2, 0, 2, {2, 3}, {0}, {2, 3}},          /* scalar */
        {0, 2, 2, {0}, {2, 3}, {2, 3}},          /* scalar first */
        {2, 1, 2, {2, 3}, {3}, {2, 3}},          /* row */
        {2, 2, 2, {2, 3}, {2, 1}, {2, 3}},       /* column */
        {2, 2, 2, {2, 1}, {1, 3}, {2, 3}},       /* outer */
        {3, 2, 3, {2, 1, 3}, {4, 1}, {2, 4, 3}}, /* mixed */
        {1, 1, 2, {3}, {3}, {2, 3}},             /* into a larger out */
        {0, 0, 0, {0}, {0}, {0}},                /* scalars */
        {2, 2, 2, {1, 1}, {1, 1}, {1, 1}},       /* ones */
        {3, 3, 3, {2, 300, 5}, {1, 300, 1}, {2, 300, 5}},
        {2, 2, 2, {2, 1}, {2, 1}, {2, 1500}}, /* both broadcast, long */
        {1, 2, 2, {1}, {1, 1}, {3, 1100}},
    };

    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
            enum nrtemu_dtype dt = dts[t];
            double av[3300], bv[3300];
            struct nrtemu_array a, b, out, in[2];
            uint64_t n;

            for (size_t i = 0; i < 3300; i++) {
                av[i] = sample_values[i % N_SAMPLES];
                bv[i] = sample_values[(i * 7 + 3) % N_SAMPLES];
            }
            a = from_doubles(dt, av, forms[f].an, forms[f].as);
            b = from_doubles(dt, bv, forms[f].bn, forms[f].bs);
            out = array(dt, NULL, forms[f].on, forms[f].os);
            n = nrtemu__array_count(&out);
            out.data = alloc_elems(dt, n);
            in[0] = a;
            in[1] = b;
            for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
                ASSERT_OK(nrtemu__kernel_elementwise(ops[o], dt, &out, in, 2,
                                                     &scratch));
                for (uint64_t i = 0; i < n; i++) {
                    double x = get(&a, source_index(&a, &out, i));
                    double y = get(&b, source_index(&b, &out, i));
                    double want, got = get(&out, i);
                    /* The reference rounds once to the dtype. */
                    struct nrtemu_array w = SCALAR(dt, NULL);
                    unsigned char buf[8];
                    double r = ref_binary(ops[o], x, y);
                    if (dt == NRTEMU_DTYPE_FLOAT16 ||
                        dt == NRTEMU_DTYPE_BFLOAT16) {
                        float rf = (float)r; /* computed in float32 */
                        r = rf;
                    }
                    w.data = buf;
                    nrtemu__convert(dt, buf, NRTEMU_DTYPE_FLOAT64, &r, 1, 1);
                    want = get(&w, 0);
                    if (!same_double(got, want)) {
                        TEST_FAIL_("form %zu %s %s [%llu]: %g op %g = %g, "
                                   "expected %g",
                                   f, nrtemu__dtype_name(dt), op_names[ops[o]],
                                   (unsigned long long)i, x, y, got, want);
                    }
                }
            }
            free(a.data);
            free(b.data);
            free(out.data);
        }
    }
}

/* Integer arithmetic wraps at the compute dtype; division floors. */
static void
test_integer_semantics(void)
{
    int8_t a8[] = {127, -128, 100, -7};
    int8_t b8[] = {1, -1, 100, 2};
    int8_t o8[4];
    struct nrtemu_array in[2], out;
    int64_t a64[] = {-7, 7, -7, 7, 5, INT64_MIN, 3, -3};
    int64_t b64[] = {2, -2, -2, 0, 0, -1, 4, 3};
    int64_t o64[8];
    uint8_t au[] = {1, 0, 200, 7}, bu[] = {2, 1, 100, 0}, ou[4];

    in[0] = ARRAY(NRTEMU_DTYPE_INT8, a8, 4);
    in[1] = ARRAY(NRTEMU_DTYPE_INT8, b8, 4);
    out = ARRAY(NRTEMU_DTYPE_INT8, o8, 4);
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_ADD, NRTEMU_DTYPE_INT8,
                                         &out, in, 2, &scratch));
    ASSERT_EQ(o8[0], -128);
    ASSERT_EQ(o8[1], 127);
    ASSERT_EQ(o8[2], -56);
    ASSERT_EQ(o8[3], -5);
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_MUL, NRTEMU_DTYPE_INT8,
                                         &out, in, 2, &scratch));
    ASSERT_EQ(o8[2], 16); /* 10000 mod 256 = 16 */
    ASSERT_OK(nrtemu__kernel_elementwise(
        NRTEMU_OP_FLOOR_DIVIDE, NRTEMU_DTYPE_INT8, &out, in, 2, &scratch));
    ASSERT_EQ(o8[1], -128); /* -128 // -1 wraps */
    ASSERT_EQ(o8[3], -4);

    in[0] = ARRAY(NRTEMU_DTYPE_INT64, a64, 8);
    in[1] = ARRAY(NRTEMU_DTYPE_INT64, b64, 8);
    out = ARRAY(NRTEMU_DTYPE_INT64, o64, 8);
    ASSERT_OK(nrtemu__kernel_elementwise(
        NRTEMU_OP_FLOOR_DIVIDE, NRTEMU_DTYPE_INT64, &out, in, 2, &scratch));
    {
        int64_t want[] = {-4, -4, 3, 0, 0, INT64_MIN, 0, -1};
        for (int i = 0; i < 8; i++) {
            ASSERT_EQ(o64[i], want[i]);
        }
    }
    /* Integer div is floor division too (compute dtype not float). */
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_DIV, NRTEMU_DTYPE_INT64,
                                         &out, in, 2, &scratch));
    ASSERT_EQ(o64[0], -4);
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_MOD, NRTEMU_DTYPE_INT64,
                                         &out, in, 2, &scratch));
    {
        int64_t want[] = {1, -1, -1, 0, 0, 0, 3, 0};
        for (int i = 0; i < 8; i++) {
            ASSERT_EQ(o64[i], want[i]);
        }
    }
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_POW, NRTEMU_DTYPE_INT64,
                                         &out, in, 2, &scratch));
    ASSERT_EQ(o64[0], 49);
    ASSERT_EQ(o64[1], 0); /* 7 ** -2 */
    ASSERT_EQ(o64[3], 1); /* 7 ** 0 */
    ASSERT_EQ(o64[6], 81);
    ASSERT_EQ(o64[7], -27);

    in[0] = ARRAY(NRTEMU_DTYPE_UINT8, au, 4);
    in[1] = ARRAY(NRTEMU_DTYPE_UINT8, bu, 4);
    out = ARRAY(NRTEMU_DTYPE_UINT8, ou, 4);
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_SUB, NRTEMU_DTYPE_UINT8,
                                         &out, in, 2, &scratch));
    ASSERT_EQ(ou[0], 255);
    ASSERT_EQ(ou[2], 100);
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_ADD, NRTEMU_DTYPE_UINT8,
                                         &out, in, 2, &scratch));
    ASSERT_EQ(ou[2], 44);
    ASSERT_OK(nrtemu__kernel_elementwise(
        NRTEMU_OP_FLOOR_DIVIDE, NRTEMU_DTYPE_UINT8, &out, in, 2, &scratch));
    ASSERT_EQ(ou[3], 0); /* by zero */
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_MAXIMUM, NRTEMU_DTYPE_UINT8,
                                         &out, in, 2, &scratch));
    ASSERT_EQ(ou[2], 200);

    /* Unary ops on integers. */
    {
        int32_t v[] = {-5, 0, 7, INT32_MIN}, o[4];
        struct nrtemu_array x = ARRAY(NRTEMU_DTYPE_INT32, v, 4);
        out = ARRAY(NRTEMU_DTYPE_INT32, o, 4);
        ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_ABS, NRTEMU_DTYPE_INT32,
                                             &out, &x, 1, &scratch));
        ASSERT_EQ(o[0], 5);
        ASSERT_EQ(o[3], INT32_MIN); /* wraps, as in NumPy */
        ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_NEG, NRTEMU_DTYPE_INT32,
                                             &out, &x, 1, &scratch));
        ASSERT_EQ(o[0], 5);
        ASSERT_EQ(o[2], -7);
        ASSERT_OK(nrtemu__kernel_elementwise(
            NRTEMU_OP_SIGN, NRTEMU_DTYPE_INT32, &out, &x, 1, &scratch));
        ASSERT_EQ(o[0], -1);
        ASSERT_EQ(o[1], 0);
        ASSERT_EQ(o[2], 1);
        ASSERT_OK(nrtemu__kernel_elementwise(
            NRTEMU_OP_RELU, NRTEMU_DTYPE_INT32, &out, &x, 1, &scratch));
        ASSERT_EQ(o[0], 0);
        ASSERT_EQ(o[2], 7);
        ASSERT_OK(nrtemu__kernel_elementwise(
            NRTEMU_OP_SQUARE, NRTEMU_DTYPE_INT32, &out, &x, 1, &scratch));
        ASSERT_EQ(o[0], 25);
    }
}

/* Python's float // and %: the remainder has the divisor's sign. */
/*
 * int32 ops computed in int32 (wrapping) give the int64 results wrapped
 * to int32: every such op, each operand broadcast as a scalar or not,
 * against the same op on int64 copies of the operands.
 */
static void
test_int32_native(void)
{
    enum { N = 1500 };
    static const enum nrtemu_op ops[] = {
        NRTEMU_OP_NEG,          NRTEMU_OP_ABS,       NRTEMU_OP_SQUARE,
        NRTEMU_OP_RECIPROCAL,   NRTEMU_OP_RELU,      NRTEMU_OP_SIGN,
        NRTEMU_OP_FLOOR,        NRTEMU_OP_ADD,       NRTEMU_OP_SUB,
        NRTEMU_OP_MUL,          NRTEMU_OP_MAXIMUM,   NRTEMU_OP_MINIMUM,
        NRTEMU_OP_EQUAL,        NRTEMU_OP_NOT_EQUAL, NRTEMU_OP_LESS,
        NRTEMU_OP_LESS_EQUAL,   NRTEMU_OP_GREATER,   NRTEMU_OP_GREATER_EQUAL,
        NRTEMU_OP_FLOOR_DIVIDE, NRTEMU_OP_MOD,       NRTEMU_OP_WHERE,
    };
    static int32_t a[N], b[N], c[N], o[N];
    static int64_t a64[N], b64[N], c64[N], o64[N];
    static uint8_t ob[N], ob64[N];
    static const int32_t special[] = {INT32_MIN, INT32_MAX, -1,     0,
                                      1,         65536,     -65537, 46341};

    for (int i = 0; i < N; i++) {
        uint32_t h = (uint32_t)i * 2654435761u;
        a[i] = i < 8 ? special[i] : (int32_t)h;
        b[i] = i < 64 ? special[(i / 8) % 8] : (int32_t)(h * 40503u);
        c[i] = (int32_t)(h >> 31);
        a64[i] = a[i];
        b64[i] = b[i];
        c64[i] = c[i];
    }
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        enum nrtemu_op op = ops[k];
        int arity = op == NRTEMU_OP_WHERE                         ? 3
                    : op <= NRTEMU_OP_SIGN && op >= NRTEMU_OP_NEG ? 1
                                                                  : 2;
        bool cmp = op >= NRTEMU_OP_EQUAL && op <= NRTEMU_OP_GREATER_EQUAL;
        for (int form = 0; form < (arity == 2 ? 3 : 1); form++) {
            /* form 1: b is one element; form 2: a is. */
            uint64_t na = form == 2 ? 1 : N, nb = form == 1 ? 1 : N;
            struct nrtemu_array in[3], in64[3], out, out64;
            if (arity == 3) {
                in[0] = ARRAY(NRTEMU_DTYPE_INT32, c, N);
                in[1] = ARRAY(NRTEMU_DTYPE_INT32, a, N);
                in[2] = ARRAY(NRTEMU_DTYPE_INT32, b, N);
                in64[0] = ARRAY(NRTEMU_DTYPE_INT64, c64, N);
                in64[1] = ARRAY(NRTEMU_DTYPE_INT64, a64, N);
                in64[2] = ARRAY(NRTEMU_DTYPE_INT64, b64, N);
            } else {
                in[0] = ARRAY(NRTEMU_DTYPE_INT32, a, na);
                in[1] = ARRAY(NRTEMU_DTYPE_INT32, b, nb);
                in64[0] = ARRAY(NRTEMU_DTYPE_INT64, a64, na);
                in64[1] = ARRAY(NRTEMU_DTYPE_INT64, b64, nb);
            }
            out = cmp ? ARRAY(NRTEMU_DTYPE_BOOL, ob, N)
                      : ARRAY(NRTEMU_DTYPE_INT32, o, N);
            out64 = cmp ? ARRAY(NRTEMU_DTYPE_BOOL, ob64, N)
                        : ARRAY(NRTEMU_DTYPE_INT64, o64, N);
            ASSERT_OK(nrtemu__kernel_elementwise(op, NRTEMU_DTYPE_INT32, &out,
                                                 in, arity, &scratch));
            ASSERT_OK(nrtemu__kernel_elementwise(
                op, NRTEMU_DTYPE_INT64, &out64, in64, arity, &scratch));
            for (int i = 0; i < N; i++) {
                bool same =
                    cmp ? ob[i] == ob64[i] : o[i] == (int32_t)(uint32_t)o64[i];
                if (!same) {
                    TEST_FAIL_("int32 %s form %d [%d]: %lld, int64 gives "
                               "%lld",
                               op_names[op], form, i,
                               cmp ? (long long)ob[i] : (long long)o[i],
                               cmp ? (long long)ob64[i] : (long long)o64[i]);
                }
            }
        }
    }
    {
        /* int32 compute from int8 operands, into float32. */
        int8_t x[3] = {-128, 127, 5}, y[3] = {-128, 1, -7};
        float f[3];
        struct nrtemu_array in[2] = {ARRAY(NRTEMU_DTYPE_INT8, x, 3),
                                     ARRAY(NRTEMU_DTYPE_INT8, y, 3)};
        struct nrtemu_array out = ARRAY(NRTEMU_DTYPE_FLOAT32, f, 3);
        ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_MUL, NRTEMU_DTYPE_INT32,
                                             &out, in, 2, &scratch));
        ASSERT_EQ(f[0], 16384.0f);
        ASSERT_EQ(f[1], 127.0f);
        ASSERT_EQ(f[2], -35.0f);
    }
}

static void
test_float_mod_floor_divide(void)
{
    double a[] = {-7.5, 7.5, -7.0, 7.0, 1.0, -1.0, 0.0, 5.0, NAN, 1.0};
    double b[] = {2.0, -2.0, 2.0,      2.0, 0.0,
                  0.0, 3.0,  INFINITY, 1.0, -INFINITY};
    double want_mod[] = {0.5, -0.5, 1.0, 1.0, NAN,
                         NAN, 0.0,  5.0, NAN, -INFINITY};
    double want_fd[] = {-4.0,      -4.0, -4.0, 3.0, INFINITY,
                        -INFINITY, 0.0,  0.0,  NAN, -1.0};
    static const enum nrtemu_dtype dts[] = {NRTEMU_DTYPE_FLOAT32,
                                            NRTEMU_DTYPE_FLOAT64};

    for (int t = 0; t < 2; t++) {
        struct nrtemu_array in[2], out;
        in[0] = from_doubles(dts[t], a, 1, SHAPE(10));
        in[1] = from_doubles(dts[t], b, 1, SHAPE(10));
        out = ARRAY(dts[t], alloc_elems(dts[t], 10), 10);
        ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_MOD, dts[t], &out, in,
                                             2, &scratch));
        for (int i = 0; i < 10; i++) {
            if (!same_double(get(&out, (size_t)i), want_mod[i])) {
                TEST_FAIL_("%s mod [%d]: %g", nrtemu__dtype_name(dts[t]), i,
                           get(&out, (size_t)i));
            }
        }
        ASSERT_TRUE(signbit(get(&out, 6)) == 0); /* 0 % 3 is +0 */
        ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_FLOOR_DIVIDE, dts[t],
                                             &out, in, 2, &scratch));
        for (int i = 0; i < 10; i++) {
            if (!same_double(get(&out, (size_t)i), want_fd[i])) {
                TEST_FAIL_("%s floor_divide [%d]: %g",
                           nrtemu__dtype_name(dts[t]), i,
                           get(&out, (size_t)i));
            }
        }
        free(in[0].data);
        free(in[1].data);
        free(out.data);
    }
}

/* Transcendental and other unary ops against libm, with NaN and inf. */
static void
test_unary_float(void)
{
    static const enum nrtemu_op ops[] = {
        NRTEMU_OP_NEG,        NRTEMU_OP_ABS,    NRTEMU_OP_EXP,
        NRTEMU_OP_LOG,        NRTEMU_OP_SQRT,   NRTEMU_OP_RSQRT,
        NRTEMU_OP_RECIPROCAL, NRTEMU_OP_SQUARE, NRTEMU_OP_TANH,
        NRTEMU_OP_SIGMOID,    NRTEMU_OP_RELU,   NRTEMU_OP_GELU,
        NRTEMU_OP_SIN,        NRTEMU_OP_COS,    NRTEMU_OP_FLOOR,
        NRTEMU_OP_CEIL,       NRTEMU_OP_SIGN,
    };
    static const enum nrtemu_dtype dts[] = {
        NRTEMU_DTYPE_FLOAT32,
        NRTEMU_DTYPE_FLOAT64,
        NRTEMU_DTYPE_FLOAT16,
    };
    enum { N = 2000 };
    double *x = malloc(N * sizeof *x);

    ASSERT_NOT_NULL(x);
    for (int i = 0; i < N; i++) {
        x[i] = (i - N / 2) * 0.0137 * ((i % 7) + 1) / 3.0;
    }
    x[0] = NAN;
    x[1] = INFINITY;
    x[2] = -INFINITY;
    x[3] = 0.0;
    x[4] = -0.0;
    x[5] = 1e-30;
    x[6] = 95.0;
    x[7] = -120.0;
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        struct nrtemu_array in = from_doubles(dts[t], x, 1, SHAPE(N));
        struct nrtemu_array out = ARRAY(dts[t], alloc_elems(dts[t], N), N);
        /* Tolerance: a few ulps of float32 (float16 rounds once more). */
        double rel = dts[t] == NRTEMU_DTYPE_FLOAT64   ? 1e-15
                     : dts[t] == NRTEMU_DTYPE_FLOAT32 ? 4e-7
                                                      : 1e-3;
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            ASSERT_OK(nrtemu__kernel_elementwise(ops[o], dts[t], &out, &in, 1,
                                                 &scratch));
            for (int i = 0; i < N; i++) {
                double v = get(&in, (size_t)i), got = get(&out, (size_t)i);
                double want, m = 0.0;
                switch (ops[o]) {
                case NRTEMU_OP_NEG:
                    want = -v;
                    break;
                case NRTEMU_OP_ABS:
                    want = fabs(v);
                    break;
                case NRTEMU_OP_EXP:
                    want = exp(v);
                    break;
                case NRTEMU_OP_LOG:
                    want = log(v);
                    break;
                case NRTEMU_OP_SQRT:
                    want = sqrt(v);
                    break;
                case NRTEMU_OP_RSQRT:
                    want = 1.0 / sqrt(v);
                    break;
                case NRTEMU_OP_RECIPROCAL:
                    want = 1.0 / v;
                    break;
                case NRTEMU_OP_SQUARE:
                    want = v * v;
                    break;
                case NRTEMU_OP_TANH:
                    want = tanh(v);
                    break;
                case NRTEMU_OP_SIGMOID:
                    want = 1.0 / (1.0 + exp(-v));
                    break;
                case NRTEMU_OP_RELU:
                    want = (v >= 0 || isnan(v)) ? v : 0.0;
                    break;
                case NRTEMU_OP_GELU:
                    /* 0.5 v (1 + tanh u) as v / (1 + e^m), m = -2u:
                     * written as such it cancels for negative v */
                    m = -2.0 * 0.7978845608028654 * (v + 0.044715 * v * v * v);
                    want = m > 0 ? v * exp(-m) / (1.0 + exp(-m))
                                 : v / (1.0 + exp(m));
                    break;
                case NRTEMU_OP_SIN:
                    want = sin(v);
                    break;
                case NRTEMU_OP_COS:
                    want = cos(v);
                    break;
                case NRTEMU_OP_FLOOR:
                    want = floor(v);
                    break;
                case NRTEMU_OP_CEIL:
                    want = ceil(v);
                    break;
                default:
                    want = v > 0 ? 1.0 : v < 0 ? -1.0 : v == 0 ? 0.0 : v;
                    break;
                }
                {
                    /* The expected value as the dtype holds it. */
                    struct nrtemu_array w = SCALAR(dts[t], NULL);
                    unsigned char buf[8];
                    w.data = buf;
                    nrtemu__convert(dts[t], buf, NRTEMU_DTYPE_FLOAT64, &want,
                                    1, 1);
                    want = get(&w, 0);
                }
                if (same_double(got, want)) {
                    continue;
                }
                /* gelu: a few ulps and |m| more (the rounding of m: its
                 * condition), relative even where the result is tiny
                 * (float16: to its smallest subnormal); sin/cos of large
                 * x in float32: absolute. */
                if (isfinite(want) && isfinite(got) &&
                    fabs(got - want) <=
                        rel * fmax(fabs(want), 1e-30) * 4 * (1.0 + fabs(m)) +
                            (ops[o] == NRTEMU_OP_SIN || ops[o] == NRTEMU_OP_COS
                                 ? rel
                                 : 0.0) +
                            (ops[o] == NRTEMU_OP_GELU &&
                                     dts[t] == NRTEMU_DTYPE_FLOAT16
                                 ? 6.1e-8
                                 : 1e-300)) {
                    continue;
                }
                TEST_FAIL_("%s %s(%.9g) = %.9g, expected %.9g",
                           nrtemu__dtype_name(dts[t]), op_names[ops[o]], v,
                           got, want);
            }
        }
        free(in.data);
        free(out.data);
    }
    free(x);
}

/* NaN wins in maximum/minimum, compares false, and where selects it. */
static void
test_nan_handling(void)
{
    float a[] = {NAN, 1.0f, NAN, -INFINITY};
    float b[] = {1.0f, NAN, NAN, INFINITY};
    float o[4];
    uint8_t c[4];
    struct nrtemu_array in[2], out;

    in[0] = ARRAY(NRTEMU_DTYPE_FLOAT32, a, 4);
    in[1] = ARRAY(NRTEMU_DTYPE_FLOAT32, b, 4);
    out = ARRAY(NRTEMU_DTYPE_FLOAT32, o, 4);
    ASSERT_OK(nrtemu__kernel_elementwise(
        NRTEMU_OP_MAXIMUM, NRTEMU_DTYPE_FLOAT32, &out, in, 2, &scratch));
    ASSERT_TRUE(isnan(o[0]) && isnan(o[1]) && isnan(o[2]) && o[3] == INFINITY);
    ASSERT_OK(nrtemu__kernel_elementwise(
        NRTEMU_OP_MINIMUM, NRTEMU_DTYPE_FLOAT32, &out, in, 2, &scratch));
    ASSERT_TRUE(isnan(o[0]) && isnan(o[1]) && isnan(o[2]) &&
                o[3] == -INFINITY);
    out = ARRAY(NRTEMU_DTYPE_BOOL, c, 4);
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_EQUAL, NRTEMU_DTYPE_FLOAT32,
                                         &out, in, 2, &scratch));
    ASSERT_TRUE(c[0] == 0 && c[1] == 0 && c[2] == 0 && c[3] == 0);
    ASSERT_OK(nrtemu__kernel_elementwise(
        NRTEMU_OP_NOT_EQUAL, NRTEMU_DTYPE_FLOAT32, &out, in, 2, &scratch));
    ASSERT_TRUE(c[0] == 1 && c[1] == 1 && c[2] == 1 && c[3] == 1);
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_LESS, NRTEMU_DTYPE_FLOAT32,
                                         &out, in, 2, &scratch));
    ASSERT_TRUE(c[0] == 0 && c[1] == 0 && c[2] == 0 && c[3] == 1);
}

/* Comparisons of every kind, mixed operand dtypes, into bool. */
static void
test_compare_and_logical(void)
{
    int32_t a[] = {1, 2, 3, -1};
    double b[] = {2.0, 2.0, 2.5, -1.0};
    uint8_t o[4];
    uint8_t p[] = {0, 2, 1, 0}, q[] = {0, 0, 7, 1};
    struct nrtemu_array in[2], out = ARRAY(NRTEMU_DTYPE_BOOL, o, 4);
    struct {
        enum nrtemu_op op;
        uint8_t want[4];
    } cases[] = {
        {NRTEMU_OP_EQUAL, {0, 1, 0, 1}},
        {NRTEMU_OP_NOT_EQUAL, {1, 0, 1, 0}},
        {NRTEMU_OP_LESS, {1, 0, 0, 0}},
        {NRTEMU_OP_LESS_EQUAL, {1, 1, 0, 1}},
        {NRTEMU_OP_GREATER, {0, 0, 1, 0}},
        {NRTEMU_OP_GREATER_EQUAL, {0, 1, 1, 1}},
    };

    in[0] = ARRAY(NRTEMU_DTYPE_INT32, a, 4);
    in[1] = ARRAY(NRTEMU_DTYPE_FLOAT64, b, 4);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ASSERT_OK(nrtemu__kernel_elementwise(cases[c].op, NRTEMU_DTYPE_FLOAT64,
                                             &out, in, 2, &scratch));
        for (int i = 0; i < 4; i++) {
            ASSERT_EQ(o[i], cases[c].want[i]);
        }
    }
    /* Any nonzero byte is true. */
    in[0] = ARRAY(NRTEMU_DTYPE_BOOL, p, 4);
    in[1] = ARRAY(NRTEMU_DTYPE_BOOL, q, 4);
    ASSERT_OK(nrtemu__kernel_elementwise(
        NRTEMU_OP_LOGICAL_AND, NRTEMU_DTYPE_BOOL, &out, in, 2, &scratch));
    ASSERT_TRUE(o[0] == 0 && o[1] == 0 && o[2] == 1 && o[3] == 0);
    ASSERT_OK(nrtemu__kernel_elementwise(
        NRTEMU_OP_LOGICAL_OR, NRTEMU_DTYPE_BOOL, &out, in, 2, &scratch));
    ASSERT_TRUE(o[0] == 0 && o[1] == 1 && o[2] == 1 && o[3] == 1);
    ASSERT_OK(nrtemu__kernel_elementwise(
        NRTEMU_OP_LOGICAL_XOR, NRTEMU_DTYPE_BOOL, &out, in, 2, &scratch));
    ASSERT_TRUE(o[0] == 0 && o[1] == 1 && o[2] == 0 && o[3] == 1);
    /* logical_not of floats: NaN is true. */
    {
        float f[] = {0.0f, -0.0f, NAN, 3.0f};
        struct nrtemu_array x = ARRAY(NRTEMU_DTYPE_FLOAT32, f, 4);
        ASSERT_OK(nrtemu__kernel_elementwise(
            NRTEMU_OP_LOGICAL_NOT, NRTEMU_DTYPE_BOOL, &out, &x, 1, &scratch));
        ASSERT_TRUE(o[0] == 1 && o[1] == 1 && o[2] == 0 && o[3] == 0);
    }
}

static void
test_where(void)
{
    uint8_t cond[] = {1, 0, 3};
    float x[] = {1.0f, 2.0f, 3.0f};
    double y = -1.0;
    float o[6];
    struct nrtemu_array in[3], out = ARRAY(NRTEMU_DTYPE_FLOAT32, o, 2, 3);

    in[0] = ARRAY(NRTEMU_DTYPE_BOOL, cond, 3);
    in[1] = ARRAY(NRTEMU_DTYPE_FLOAT32, x, 3);
    in[2] = SCALAR(NRTEMU_DTYPE_FLOAT64, &y);
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_WHERE, NRTEMU_DTYPE_FLOAT32,
                                         &out, in, 3, &scratch));
    for (int r = 0; r < 2; r++) {
        ASSERT_TRUE(o[r * 3] == 1.0f && o[r * 3 + 1] == -1.0f &&
                    o[r * 3 + 2] == 3.0f);
    }
    /* int64 compute */
    {
        int64_t xi[] = {10, 20, 30}, oi[3];
        int16_t yi[] = {-1, -2, -3};
        struct nrtemu_array outi = ARRAY(NRTEMU_DTYPE_INT64, oi, 3);
        in[1] = ARRAY(NRTEMU_DTYPE_INT64, xi, 3);
        in[2] = ARRAY(NRTEMU_DTYPE_INT16, yi, 3);
        ASSERT_OK(nrtemu__kernel_elementwise(
            NRTEMU_OP_WHERE, NRTEMU_DTYPE_INT64, &outi, in, 3, &scratch));
        ASSERT_TRUE(oi[0] == 10 && oi[1] == -2 && oi[2] == 30);
    }
}

/* where of float32 values with each of the condition and the values
 * dense, one element, or broadcast along rows or columns: the selected
 * bits, NaN payloads included. */
static void
test_where_broadcast_f32(void)
{
    enum { R = 3, C = 37 };
    static const uint64_t full[] = {R, C}, col[] = {R, 1}, row[] = {C};
    const uint64_t *shapes[] = {full, NULL, col, row};
    const uint32_t ndims[] = {2, 0, 2, 1};
    uint8_t cv[R * C];
    uint32_t xv[R * C], yv[R * C], o[R * C];

    for (int i = 0; i < R * C; i++) {
        cv[i] = (uint8_t)((i * 7 + i / 5) % 3 == 0 ? 0 : i % 4 + 1);
        xv[i] = 0x7fc00000u + (uint32_t)i; /* NaNs with payloads */
        yv[i] = 0x3f800000u + (uint32_t)i * 4096u;
    }
    for (int sc = 0; sc < 4; sc++) {
        for (int sx = 0; sx < 4; sx++) {
            for (int sy = 0; sy < 4; sy++) {
                struct nrtemu_array in[3], out;
                in[0] = array(NRTEMU_DTYPE_BOOL, cv, ndims[sc], shapes[sc]);
                in[1] = array(NRTEMU_DTYPE_FLOAT32, xv, ndims[sx], shapes[sx]);
                in[2] = array(NRTEMU_DTYPE_FLOAT32, yv, ndims[sy], shapes[sy]);
                out = array(NRTEMU_DTYPE_FLOAT32, o, 2, full);
                ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_WHERE,
                                                     NRTEMU_DTYPE_FLOAT32,
                                                     &out, in, 3, &scratch));
                for (int r = 0; r < R; r++) {
                    for (int c = 0; c < C; c++) {
                        /* index of each form: full, scalar, column, row */
                        int at[4] = {r * C + c, 0, r, c};
                        uint32_t want =
                            cv[at[sc]] != 0 ? xv[at[sx]] : yv[at[sy]];
                        if (o[r * C + c] != want) {
                            TEST_FAIL_("where forms %d %d %d [%d, %d]: "
                                       "%08x, expected %08x",
                                       sc, sx, sy, r, c, o[r * C + c], want);
                        }
                    }
                }
            }
        }
    }
}

/* The compute dtype rounds operands and results, as NumPy's casts do. */
static void
test_compute_dtype_rounding(void)
{
    float a[] = {1.0f, 2048.0f}, b[] = {0x1p-12f, 1.0f}, o[2];
    uint16_t h[2];
    struct nrtemu_array in[2], out = ARRAY(NRTEMU_DTYPE_FLOAT32, o, 2);

    in[0] = ARRAY(NRTEMU_DTYPE_FLOAT32, a, 2);
    in[1] = ARRAY(NRTEMU_DTYPE_FLOAT32, b, 2);
    /* In float16, 1 + 2^-12 is 1 and 2048 + 1 is 2048. */
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_ADD, NRTEMU_DTYPE_FLOAT16,
                                         &out, in, 2, &scratch));
    ASSERT_TRUE(o[0] == 1.0f && o[1] == 2048.0f);
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_ADD, NRTEMU_DTYPE_FLOAT32,
                                         &out, in, 2, &scratch));
    ASSERT_TRUE(o[0] == 1.0f + 0x1p-12f && o[1] == 2049.0f);
    /* float32 compute, float16 out: one rounding at the store. */
    out = ARRAY(NRTEMU_DTYPE_FLOAT16, h, 2);
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_ADD, NRTEMU_DTYPE_FLOAT32,
                                         &out, in, 2, &scratch));
    ASSERT_EQ(h[0], 0x3c00);
    ASSERT_EQ(h[1], 0x6800); /* 2049 rounds to even: 2048 */
    /* int8 compute wraps before an int32 out. */
    {
        int32_t x[] = {100}, y[] = {100}, z[1];
        struct nrtemu_array ii[2], oo = ARRAY(NRTEMU_DTYPE_INT32, z, 1);
        ii[0] = ARRAY(NRTEMU_DTYPE_INT32, x, 1);
        ii[1] = ARRAY(NRTEMU_DTYPE_INT32, y, 1);
        ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_ADD, NRTEMU_DTYPE_INT8,
                                             &oo, ii, 2, &scratch));
        ASSERT_EQ(z[0], -56);
    }
    /* bfloat16 result of a bfloat16 op, computed in float32. */
    {
        uint16_t x[] = {0x3f80}, y[] = {0x3b80}, z[1]; /* 1, 2^-8 */
        struct nrtemu_array ii[2], oo = ARRAY(NRTEMU_DTYPE_BFLOAT16, z, 1);
        ii[0] = ARRAY(NRTEMU_DTYPE_BFLOAT16, x, 1);
        ii[1] = ARRAY(NRTEMU_DTYPE_BFLOAT16, y, 1);
        ASSERT_OK(nrtemu__kernel_elementwise(
            NRTEMU_OP_ADD, NRTEMU_DTYPE_BFLOAT16, &oo, ii, 2, &scratch));
        ASSERT_EQ(z[0], 0x3f80); /* tie to even */
    }
}

static void
test_cast_and_copy(void)
{
    float f[] = {1.9f, -1.9f, NAN, 300.5f, -0.0f, INFINITY};
    int32_t i32[6];
    uint8_t u8[6], b[6];
    uint16_t h[6];
    struct nrtemu_array in = ARRAY(NRTEMU_DTYPE_FLOAT32, f, 6), out;

    out = ARRAY(NRTEMU_DTYPE_INT32, i32, 6);
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_CAST, NRTEMU_DTYPE_INT32,
                                         &out, &in, 1, &scratch));
    ASSERT_TRUE(i32[0] == 1 && i32[1] == -1 && i32[2] == 0 && i32[3] == 300);
    ASSERT_EQ(i32[5], INT32_MAX);
    /* Float to integer saturates (XLA's convert). */
    out = ARRAY(NRTEMU_DTYPE_UINT8, u8, 6);
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_CAST, NRTEMU_DTYPE_UINT8,
                                         &out, &in, 1, &scratch));
    ASSERT_TRUE(u8[0] == 1 && u8[1] == 0 && u8[2] == 0 && u8[3] == 255 &&
                u8[4] == 0 && u8[5] == 255);
    out = ARRAY(NRTEMU_DTYPE_BOOL, b, 6);
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_CAST, NRTEMU_DTYPE_BOOL,
                                         &out, &in, 1, &scratch));
    ASSERT_TRUE(b[0] == 1 && b[2] == 1 && b[4] == 0 && b[5] == 1);
    out = ARRAY(NRTEMU_DTYPE_FLOAT16, h, 6);
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_CAST, NRTEMU_DTYPE_FLOAT16,
                                         &out, &in, 1, &scratch));
    ASSERT_EQ(h[5], 0x7c00);
    ASSERT_EQ(h[4], 0x8000);
    /* copy and broadcast_to broadcast. */
    {
        float row[] = {1, 2, 3}, o[6];
        struct nrtemu_array r = ARRAY(NRTEMU_DTYPE_FLOAT32, row, 3);
        out = ARRAY(NRTEMU_DTYPE_FLOAT32, o, 2, 3);
        ASSERT_OK(nrtemu__kernel_elementwise(
            NRTEMU_OP_COPY, NRTEMU_DTYPE_FLOAT32, &out, &r, 1, &scratch));
        ASSERT_TRUE(o[3] == 1 && o[5] == 3);
        memset(o, 0, sizeof o);
        nrtemu__kernel_broadcast(&out, &r);
        ASSERT_TRUE(o[0] == 1 && o[4] == 2 && o[5] == 3);
        r = ARRAY(NRTEMU_DTYPE_FLOAT32, row, 2, 1);
        nrtemu__kernel_broadcast(&out, &r);
        ASSERT_TRUE(o[0] == 1 && o[2] == 1 && o[3] == 2 && o[5] == 2);
    }
}

/* Reference reduction over `axes` of a [2,3,4] array. */
static void
check_reduce(enum nrtemu_op op, enum nrtemu_dtype dt, uint32_t axes)
{
    double vals[24];
    uint64_t shape[3] = {2, 3, 4}, oshape[3];
    uint32_t on = 0;
    struct nrtemu_array in, out;
    enum nrtemu_dtype odt = dt;

    for (int i = 0; i < 24; i++) {
        vals[i] = (double)((i * 5) % 11) - 4.0;
    }
    in = from_doubles(dt, vals, 3, shape);
    for (int d = 0; d < 3; d++) {
        if (!(axes & (1u << d))) {
            oshape[on++] = shape[d];
        }
    }
    if (op == NRTEMU_OP_MEAN && !nrtemu__dtype_is_float(dt)) {
        odt = NRTEMU_DTYPE_FLOAT64;
    }
    out = array(odt, alloc_elems(odt, 24), on, oshape);
    ASSERT_OK(nrtemu__kernel_reduce(op, odt, &out, &in, axes, &scratch));
    for (uint64_t o = 0; o < nrtemu__array_count(&out); o++) {
        double acc = op == NRTEMU_OP_PROD  ? 1.0
                     : op == NRTEMU_OP_MAX ? -INFINITY
                     : op == NRTEMU_OP_MIN ? INFINITY
                                           : 0.0;
        double n = 0;
        for (int i = 0; i < 24; i++) {
            int idx[3] = {i / 12, (i / 4) % 3, i % 4};
            uint64_t flat = 0;
            double v = get(&in, (size_t)i);
            for (int d = 0; d < 3; d++) {
                if (!(axes & (1u << d))) {
                    flat = flat * shape[d] + (uint64_t)idx[d];
                }
            }
            if (flat != o) {
                continue;
            }
            n++;
            switch (op) {
            case NRTEMU_OP_PROD:
                acc *= v;
                break;
            case NRTEMU_OP_MAX:
                acc = fmax(acc, v);
                break;
            case NRTEMU_OP_MIN:
                acc = fmin(acc, v);
                break;
            default:
                acc += v;
                break;
            }
        }
        if (op == NRTEMU_OP_MEAN) {
            acc /= n;
        }
        if (fabs(get(&out, o) - acc) >
            (odt == NRTEMU_DTYPE_FLOAT16 ? 1e-3 : 1e-6) *
                fmax(1.0, fabs(acc))) {
            TEST_FAIL_("%s %s axes 0x%x [%llu]: %g, expected %g", op_names[op],
                       nrtemu__dtype_name(dt), axes, (unsigned long long)o,
                       get(&out, o), acc);
        }
    }
    free(in.data);
    free(out.data);
}

static void
test_reductions(void)
{
    static const enum nrtemu_op ops[] = {NRTEMU_OP_SUM, NRTEMU_OP_MEAN,
                                         NRTEMU_OP_MAX, NRTEMU_OP_MIN,
                                         NRTEMU_OP_PROD};
    static const enum nrtemu_dtype dts[] = {
        NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_FLOAT64, NRTEMU_DTYPE_INT32,
        NRTEMU_DTYPE_UINT16,  NRTEMU_DTYPE_FLOAT16, NRTEMU_DTYPE_INT64,
    };

    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
            if (dts[t] == NRTEMU_DTYPE_UINT16 &&
                (ops[o] == NRTEMU_OP_SUM || ops[o] == NRTEMU_OP_PROD)) {
                continue; /* negative test values wrap in uint16 */
            }
            for (uint32_t axes = 0; axes < 8; axes++) {
                check_reduce(ops[o], dts[t], axes);
            }
        }
    }
}

/* int32 max/min and argmax/argmin run in int32: the same results as on
 * int64 copies, along each axis, with the extremes of int32 present. */
static void
test_int32_extremes(void)
{
    enum { R = 37, C = 300 };
    static int32_t x[R * C], o[C];
    static int64_t x64[R * C], o64[C], i32arg[C], i64arg[C];
    static const enum nrtemu_op ops[] = {NRTEMU_OP_MAX, NRTEMU_OP_MIN};
    static const enum nrtemu_op args[] = {NRTEMU_OP_ARGMAX, NRTEMU_OP_ARGMIN};

    for (int i = 0; i < R * C; i++) {
        uint32_t h = (uint32_t)i * 2654435761u;
        x[i] = (int32_t)(h >> (h % 23));
        x[i] = i % 7 == 0 ? -x[i] : x[i];
    }
    x[5] = INT32_MIN;
    x[C + 6] = INT32_MAX;
    x[C + 7] = INT32_MAX; /* the first of a tie wins */
    x[3 * C + 6] = INT32_MIN;
    for (int i = 0; i < R * C; i++) {
        x64[i] = x[i];
    }
    for (uint32_t axis = 0; axis < 2; axis++) {
        uint64_t n = axis == 0 ? C : R;
        struct nrtemu_array in = ARRAY(NRTEMU_DTYPE_INT32, x, R, C);
        struct nrtemu_array in64 = ARRAY(NRTEMU_DTYPE_INT64, x64, R, C);
        struct nrtemu_array out = ARRAY(NRTEMU_DTYPE_INT32, o, n);
        struct nrtemu_array out64 = ARRAY(NRTEMU_DTYPE_INT64, o64, n);
        struct nrtemu_array a32 = ARRAY(NRTEMU_DTYPE_INT64, i32arg, n);
        struct nrtemu_array a64 = ARRAY(NRTEMU_DTYPE_INT64, i64arg, n);
        for (int k = 0; k < 2; k++) {
            ASSERT_OK(nrtemu__kernel_reduce(ops[k], NRTEMU_DTYPE_INT32, &out,
                                            &in, 1u << axis, &scratch));
            ASSERT_OK(nrtemu__kernel_reduce(ops[k], NRTEMU_DTYPE_INT64, &out64,
                                            &in64, 1u << axis, &scratch));
            ASSERT_OK(
                nrtemu__kernel_argreduce(args[k], &a32, &in, axis, &scratch));
            ASSERT_OK(nrtemu__kernel_argreduce(args[k], &a64, &in64, axis,
                                               &scratch));
            for (uint64_t j = 0; j < n; j++) {
                ASSERT_EQ(o[j], o64[j]);
                ASSERT_EQ(i32arg[j], i64arg[j]);
            }
        }
    }
    {
        /* Row 1 holds INT32_MAX twice, rows 0 and 3 INT32_MIN. */
        struct nrtemu_array in = ARRAY(NRTEMU_DTYPE_INT32, x, R, C);
        struct nrtemu_array a32 = ARRAY(NRTEMU_DTYPE_INT64, i32arg, R);
        ASSERT_OK(nrtemu__kernel_argreduce(NRTEMU_OP_ARGMAX, &a32, &in, 1,
                                           &scratch));
        ASSERT_EQ(i32arg[1], 6);
        ASSERT_OK(nrtemu__kernel_argreduce(NRTEMU_OP_ARGMIN, &a32, &in, 1,
                                           &scratch));
        ASSERT_EQ(i32arg[0], 5);
        ASSERT_EQ(i32arg[3], 6);
    }
}

static void
test_reduction_edges(void)
{
    /* Long rows: pairwise sums, multi-lane max with a NaN and an inf. */
    enum { N = 100003 };
    float *x = malloc(N * sizeof *x), o[3];
    double sum = 0;
    struct nrtemu_array in = ARRAY(NRTEMU_DTYPE_FLOAT32, x, N), out;

    ASSERT_NOT_NULL(x);
    for (int i = 0; i < N; i++) {
        x[i] = (float)((i % 1000) * 0.001);
        sum += x[i];
    }
    out = SCALAR(NRTEMU_DTYPE_FLOAT32, o);
    ASSERT_OK(nrtemu__kernel_reduce(NRTEMU_OP_SUM, NRTEMU_DTYPE_FLOAT32, &out,
                                    &in, 1, &scratch));
    ASSERT_TRUE(fabs(o[0] - sum) < 1e-5 * sum);
    ASSERT_OK(nrtemu__kernel_reduce(NRTEMU_OP_MAX, NRTEMU_DTYPE_FLOAT32, &out,
                                    &in, 1, &scratch));
    ASSERT_TRUE(o[0] == x[999]);
    x[77777] = INFINITY;
    ASSERT_OK(nrtemu__kernel_reduce(NRTEMU_OP_MAX, NRTEMU_DTYPE_FLOAT32, &out,
                                    &in, 1, &scratch));
    ASSERT_TRUE(o[0] == INFINITY);
    x[50001] = NAN;
    ASSERT_OK(nrtemu__kernel_reduce(NRTEMU_OP_MAX, NRTEMU_DTYPE_FLOAT32, &out,
                                    &in, 1, &scratch));
    ASSERT_TRUE(isnan(o[0]));
    ASSERT_OK(nrtemu__kernel_reduce(NRTEMU_OP_MIN, NRTEMU_DTYPE_FLOAT32, &out,
                                    &in, 1, &scratch));
    ASSERT_TRUE(isnan(o[0]));
    /* Column reduction with a NaN. */
    in = ARRAY(NRTEMU_DTYPE_FLOAT32, x + 50000, 2, 2);
    out = ARRAY(NRTEMU_DTYPE_FLOAT32, o, 2);
    ASSERT_OK(nrtemu__kernel_reduce(NRTEMU_OP_MAX, NRTEMU_DTYPE_FLOAT32, &out,
                                    &in, 1, &scratch));
    ASSERT_TRUE(!isnan(o[0]) && isnan(o[1]));
    /* Empty: sum 0, prod 1, mean NaN. */
    in = ARRAY(NRTEMU_DTYPE_FLOAT32, x, 0, 3);
    out = ARRAY(NRTEMU_DTYPE_FLOAT32, o, 3);
    ASSERT_OK(nrtemu__kernel_reduce(NRTEMU_OP_SUM, NRTEMU_DTYPE_FLOAT32, &out,
                                    &in, 1, &scratch));
    ASSERT_TRUE(o[0] == 0.0f);
    ASSERT_OK(nrtemu__kernel_reduce(NRTEMU_OP_PROD, NRTEMU_DTYPE_FLOAT32, &out,
                                    &in, 1, &scratch));
    ASSERT_TRUE(o[0] == 1.0f);
    ASSERT_OK(nrtemu__kernel_reduce(NRTEMU_OP_MEAN, NRTEMU_DTYPE_FLOAT32, &out,
                                    &in, 1, &scratch));
    ASSERT_TRUE(isnan(o[0]));
    /* A sum of int8 into int64, and the mean of ints as float64. */
    {
        int8_t v[] = {100, 100, 100, -1};
        int64_t s;
        double m;
        struct nrtemu_array i8 = ARRAY(NRTEMU_DTYPE_INT8, v, 4);
        struct nrtemu_array os = SCALAR(NRTEMU_DTYPE_INT64, &s);
        struct nrtemu_array om = SCALAR(NRTEMU_DTYPE_FLOAT64, &m);
        ASSERT_OK(nrtemu__kernel_reduce(NRTEMU_OP_SUM, NRTEMU_DTYPE_INT64, &os,
                                        &i8, 1, &scratch));
        ASSERT_EQ(s, 299);
        ASSERT_OK(nrtemu__kernel_reduce(NRTEMU_OP_MEAN, NRTEMU_DTYPE_INT8, &om,
                                        &i8, 1, &scratch));
        ASSERT_TRUE(m == 74.75);
        /* int8 compute wraps: 299 mod 256 = 43. */
        ASSERT_OK(nrtemu__kernel_reduce(NRTEMU_OP_SUM, NRTEMU_DTYPE_INT8, &os,
                                        &i8, 1, &scratch));
        ASSERT_EQ(s, 43);
    }
    free(x);
}

static void
test_argreduce(void)
{
    float x[] = {1,   5,  5,   2, /* row 0: first max at 1 */
                 NAN, 3,  NAN, 9, /* row 1: first NaN wins */
                 -1,  -1, -1,  -1};
    int64_t o[4];
    struct nrtemu_array in = ARRAY(NRTEMU_DTYPE_FLOAT32, x, 3, 4);
    struct nrtemu_array out = ARRAY(NRTEMU_DTYPE_INT64, o, 3);

    ASSERT_OK(
        nrtemu__kernel_argreduce(NRTEMU_OP_ARGMAX, &out, &in, 1, &scratch));
    ASSERT_TRUE(o[0] == 1 && o[1] == 0 && o[2] == 0);
    ASSERT_OK(
        nrtemu__kernel_argreduce(NRTEMU_OP_ARGMIN, &out, &in, 1, &scratch));
    ASSERT_TRUE(o[0] == 0 && o[1] == 0 && o[2] == 0);
    out = ARRAY(NRTEMU_DTYPE_INT64, o, 4);
    ASSERT_OK(
        nrtemu__kernel_argreduce(NRTEMU_OP_ARGMAX, &out, &in, 0, &scratch));
    ASSERT_TRUE(o[0] == 1 && o[1] == 0 && o[2] == 1 && o[3] == 1);
    ASSERT_OK(
        nrtemu__kernel_argreduce(NRTEMU_OP_ARGMIN, &out, &in, 0, &scratch));
    ASSERT_TRUE(o[0] == 1 && o[1] == 2 && o[2] == 1 && o[3] == 2);
    /* A long row, ints, and the last element. */
    {
        enum { N = 1000 };
        int16_t v[N];
        struct nrtemu_array iv = ARRAY(NRTEMU_DTYPE_INT16, v, N);
        out = SCALAR(NRTEMU_DTYPE_INT64, o);
        for (int i = 0; i < N; i++) {
            v[i] = (int16_t)(i % 100);
        }
        v[N - 1] = 500;
        ASSERT_OK(nrtemu__kernel_argreduce(NRTEMU_OP_ARGMAX, &out, &iv, 0,
                                           &scratch));
        ASSERT_EQ(o[0], N - 1);
        ASSERT_OK(nrtemu__kernel_argreduce(NRTEMU_OP_ARGMIN, &out, &iv, 0,
                                           &scratch));
        ASSERT_EQ(o[0], 0);
    }
}

/* NumPy's argmax/argmin of one row, naively: the first NaN, else the
 * first extreme (-0 == +0). */
static int64_t
naive_arg(bool ismax, const double *v, uint64_t n)
{
    int64_t best = 0;

    for (uint64_t i = 0; i < n; i++) {
        if (isnan(v[i])) {
            return (int64_t)i;
        }
    }
    for (uint64_t i = 1; i < n; i++) {
        if (ismax ? v[i] > v[best] : v[i] < v[best]) {
            best = (int64_t)i;
        }
    }
    return best;
}

/*
 * Rows of every length around the lanes of the one-pass arg loop, with
 * few distinct values (ties in many lanes), both zeros, an extreme in the
 * tail, and NaNs (the two-pass fallback), in float32, float64, int32 and
 * int64, against the naive rule.
 */
static void
test_argreduce_rows(void)
{
    static const enum nrtemu_dtype dts[] = {
        NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_FLOAT64, NRTEMU_DTYPE_INT32,
        NRTEMU_DTYPE_INT64};
    static const uint64_t lens[] = {1, 31, 63, 64, 65, 95, 96, 97, 1000, 4099};
    static double v[3 * 4099];
    int64_t o[3];

    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        bool is_float =
            dts[t] == NRTEMU_DTYPE_FLOAT32 || dts[t] == NRTEMU_DTYPE_FLOAT64;
        for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
            uint64_t n = lens[k];
            for (int variant = 0; variant < 4; variant++) {
                struct nrtemu_array in, out = ARRAY(NRTEMU_DTYPE_INT64, o, 3);
                for (uint64_t i = 0; i < 3 * n; i++) {
                    uint32_t h = (uint32_t)(i * 2654435761u + variant);
                    v[i] = (double)((int)(h >> 28) - 8); /* -8 .. 7 */
                    if (is_float && h % 7 == 0) {
                        v[i] = h % 2 ? -0.0 : 0.0;
                    }
                }
                if (variant == 1) { /* a new extreme in the tail */
                    v[n - 1] = 100;
                    v[2 * n - 1] = -100;
                }
                if (variant == 2 && is_float) { /* NaNs: the first wins */
                    v[n / 2] = NAN;
                    v[n + n / 3] = NAN;
                    v[n + n - 1] = NAN;
                }
                if (variant == 3 && is_float) { /* only zeros: index 0 */
                    for (uint64_t i = 0; i < n; i++) {
                        v[i] = i % 2 ? -0.0 : 0.0;
                    }
                }
                in = from_doubles(dts[t], v, 2, SHAPE(3, n));
                for (int m = 0; m < 2; m++) {
                    ASSERT_OK(nrtemu__kernel_argreduce(
                        m ? NRTEMU_OP_ARGMAX : NRTEMU_OP_ARGMIN, &out, &in, 1,
                        &scratch));
                    for (int r = 0; r < 3; r++) {
                        int64_t want = naive_arg(m, v + (uint64_t)r * n, n);
                        if (o[r] != want) {
                            TEST_FAIL_("%s %s row %d of %llu (variant %d): "
                                       "%lld, expected %lld",
                                       m ? "argmax" : "argmin",
                                       nrtemu__dtype_name(dts[t]), r,
                                       (unsigned long long)n, variant,
                                       (long long)o[r], (long long)want);
                        }
                    }
                }
                free(in.data);
            }
        }
    }
}

static void
test_softmax(void)
{
    double x[] = {1, 2, 3, 4, -1, 0, 1000, 1001};
    struct nrtemu_array in =
        from_doubles(NRTEMU_DTYPE_FLOAT32, x, 2, SHAPE(2, 4));
    float o[8];
    struct nrtemu_array out = ARRAY(NRTEMU_DTYPE_FLOAT32, o, 2, 4);

    for (uint32_t axis = 0; axis < 2; axis++) {
        ASSERT_OK(nrtemu__kernel_softmax(NRTEMU_DTYPE_FLOAT32, &out, &in, axis,
                                         &scratch));
        for (int i = 0; i < 8; i++) {
            int r = i / 4, c = i % 4;
            double m = -INFINITY, s = 0, want;
            for (int k = 0; k < (axis ? 4 : 2); k++) {
                double v = axis ? x[r * 4 + k] : x[k * 4 + c];
                m = fmax(m, v);
            }
            for (int k = 0; k < (axis ? 4 : 2); k++) {
                double v = axis ? x[r * 4 + k] : x[k * 4 + c];
                s += exp(v - m);
            }
            want = exp(x[i] - m) / s;
            if (fabs(o[i] - want) > 1e-6) {
                TEST_FAIL_("softmax axis %u [%d]: %g, expected %g", axis, i,
                           (double)o[i], want);
            }
        }
    }
    free(in.data);
}

/* C = A x B in double, for operands already laid out as matrices. */
static void
check_matmul(enum nrtemu_dtype dt, enum nrtemu_dtype compute, uint32_t an,
             const uint64_t *as, uint32_t bn, const uint64_t *bs)
{
    struct nrtemu_array a = array(dt, NULL, an, as);
    struct nrtemu_array b = array(dt, NULL, bn, bs);
    uint64_t os[NRTEMU_MAX_DIMS];
    uint32_t on = 0, abn = an >= 2 ? an - 2 : 0, bbn = bn >= 2 ? bn - 2 : 0;
    uint32_t nb = abn > bbn ? abn : bbn;
    uint64_t M = an >= 2 ? as[an - 2] : 1, K = as[an - 1];
    uint64_t N = bn >= 2 ? bs[bn - 1] : 1;
    uint64_t na = nrtemu__array_count(&a), nbv = nrtemu__array_count(&b);
    double *av = malloc((na + 1) * sizeof *av), *bv = malloc((nbv + 1) * 8);
    struct nrtemu_array out;
    double tol = compute == NRTEMU_DTYPE_FLOAT64 ? 1e-12 : 2e-5;

    ASSERT_NOT_NULL(av);
    ASSERT_NOT_NULL(bv);
    for (uint64_t i = 0; i < na; i++) {
        av[i] = (double)((i * 37) % 17) / 8.0 - 1.0;
    }
    for (uint64_t i = 0; i < nbv; i++) {
        bv[i] = (double)((i * 53) % 13) / 4.0 - 1.5;
    }
    a = from_doubles(dt, av, an, as);
    b = from_doubles(dt, bv, bn, bs);
    for (uint32_t d = 0; d < nb; d++) {
        uint64_t x = d + abn >= nb ? as[d + abn - nb] : 1;
        uint64_t y = d + bbn >= nb ? bs[d + bbn - nb] : 1;
        os[on++] = x == 1 ? y : x;
    }
    if (an >= 2) {
        os[on++] = M;
    }
    if (bn >= 2) {
        os[on++] = N;
    }
    out = array(compute, NULL, on, os);
    out.data = alloc_elems(compute, nrtemu__array_count(&out));
    ASSERT_OK(nrtemu__kernel_matmul(compute, &out, &a, &b, &scratch));
    {
        uint64_t batch = nrtemu__array_count(&out) / (M * N);
        for (uint64_t bi = 0; bi < batch; bi++) {
            /* Batch index -> operand batch indices, broadcasting. */
            uint64_t rest = bi, ao = 0, bo = 0, astr = 1, bstr = 1;
            for (int d = (int)nb - 1; d >= 0; d--) {
                uint64_t i = rest % os[d];
                int da = d - (int)(nb - abn), db = d - (int)(nb - bbn);
                rest /= os[d];
                if (da >= 0) {
                    ao += (as[da] == 1 ? 0 : i) * astr;
                    astr *= as[da];
                }
                if (db >= 0) {
                    bo += (bs[db] == 1 ? 0 : i) * bstr;
                    bstr *= bs[db];
                }
            }
            for (uint64_t i = 0; i < M; i++) {
                for (uint64_t j = 0; j < N; j++) {
                    double want = 0, got;
                    for (uint64_t p = 0; p < K; p++) {
                        want += get(&a, ao * M * K + i * K + p) *
                                get(&b, bo * K * N + p * N + j);
                    }
                    got = get(&out, bi * M * N + i * N + j);
                    if (fabs(got - want) > tol * (1.0 + (double)K)) {
                        TEST_FAIL_("matmul %s [%llu,%llu,%llu]: %g, expected "
                                   "%g",
                                   nrtemu__dtype_name(dt),
                                   (unsigned long long)bi,
                                   (unsigned long long)i,
                                   (unsigned long long)j, got, want);
                    }
                }
            }
        }
    }
    free(av);
    free(bv);
    free(a.data);
    free(b.data);
    free(out.data);
}

static void
test_matmul(void)
{
    /* Sizes (M, N, K) around the register tiles (12, 8 or 4 rows by 32
     * columns), the packing of A four by four, and the blocks (384 deep,
     * 144 rows, 3072 columns). */
    static const uint64_t sizes[][3] = {
        {1, 1, 1},    {2, 3, 4},     {7, 13, 5},  {12, 32, 16}, {13, 33, 17},
        {25, 65, 9},  {67, 129, 33}, {5, 1, 300}, {1, 70, 260}, {150, 40, 600},
        {3, 4, 0},    {4, 9, 5},     {8, 33, 7},  {20, 47, 6},  {64, 48, 37},
        {9, 16, 389}, {2, 3100, 5},  {13, 40, 1}, {30, 70, 3},
    };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        uint64_t M = sizes[s][0], N = sizes[s][1], K = sizes[s][2];
        check_matmul(NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_FLOAT32, 2,
                     SHAPE(M, K), 2, SHAPE(K, N));
        check_matmul(NRTEMU_DTYPE_FLOAT64, NRTEMU_DTYPE_FLOAT64, 2,
                     SHAPE(M, K), 2, SHAPE(K, N));
    }
    /* Large enough for threads. */
    check_matmul(NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_FLOAT32, 2,
                 SHAPE(200, 300), 2, SHAPE(300, 260));
    check_matmul(NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_FLOAT32, 2,
                 SHAPE(520, 300), 2, SHAPE(300, 20));
    /* Split between threads by columns (22 tiles of 32), by rows, by
     * batch entries. */
    check_matmul(NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_FLOAT32, 2,
                 SHAPE(150, 400), 2, SHAPE(400, 700));
    check_matmul(NRTEMU_DTYPE_FLOAT64, NRTEMU_DTYPE_FLOAT64, 2,
                 SHAPE(1000, 300), 2, SHAPE(300, 40));
    check_matmul(NRTEMU_DTYPE_BFLOAT16, NRTEMU_DTYPE_FLOAT32, 3,
                 SHAPE(6, 100, 150), 3, SHAPE(6, 150, 110));
    /* Vector x matrix large enough to split by depth (and by columns
     * whose count is no multiple of 16), 1-D or 2-D vector. */
    check_matmul(NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_FLOAT32, 1, SHAPE(2054), 2,
                 SHAPE(2054, 4101));
    check_matmul(NRTEMU_DTYPE_FLOAT64, NRTEMU_DTYPE_FLOAT64, 2, SHAPE(1, 2054),
                 2, SHAPE(2054, 4101));
    /* 1-D operands. */
    check_matmul(NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_FLOAT32, 1, SHAPE(5), 2,
                 SHAPE(5, 3));
    check_matmul(NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_FLOAT32, 2, SHAPE(4, 5), 1,
                 SHAPE(5));
    check_matmul(NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_FLOAT32, 1, SHAPE(7), 1,
                 SHAPE(7));
    check_matmul(NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_FLOAT32, 1, SHAPE(5), 3,
                 SHAPE(2, 5, 3));
    /* Batches, broadcast both ways. */
    check_matmul(NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_FLOAT32, 4,
                 SHAPE(2, 1, 3, 4), 3, SHAPE(5, 4, 6));
    check_matmul(NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_FLOAT32, 3,
                 SHAPE(8, 30, 40), 2, SHAPE(40, 50));
    check_matmul(NRTEMU_DTYPE_FLOAT64, NRTEMU_DTYPE_FLOAT64, 3, SHAPE(1, 3, 4),
                 3, SHAPE(6, 4, 2));
    /* 16-bit floats accumulate in float32; integers wrap. */
    check_matmul(NRTEMU_DTYPE_FLOAT16, NRTEMU_DTYPE_FLOAT32, 2, SHAPE(9, 10),
                 2, SHAPE(10, 11));
    check_matmul(NRTEMU_DTYPE_BFLOAT16, NRTEMU_DTYPE_FLOAT32, 3,
                 SHAPE(2, 3, 8), 2, SHAPE(8, 4));
    check_matmul(NRTEMU_DTYPE_INT32, NRTEMU_DTYPE_INT64, 3, SHAPE(2, 5, 6), 3,
                 SHAPE(2, 6, 7));
    check_matmul(NRTEMU_DTYPE_INT8, NRTEMU_DTYPE_INT64, 1, SHAPE(6), 2,
                 SHAPE(6, 3));
    {
        /* float16 out of float16 operands: rounded once. */
        uint16_t a[] = {0x3c00, 0x3c00}, b[] = {0x3c00, 0x1400}, o;
        struct nrtemu_array A = ARRAY(NRTEMU_DTYPE_FLOAT16, a, 2);
        struct nrtemu_array B = ARRAY(NRTEMU_DTYPE_FLOAT16, b, 2);
        struct nrtemu_array O = SCALAR(NRTEMU_DTYPE_FLOAT16, &o);
        ASSERT_OK(
            nrtemu__kernel_matmul(NRTEMU_DTYPE_FLOAT16, &O, &A, &B, &scratch));
        ASSERT_EQ(o, 0x3c01); /* 1 + 2^-10 */
    }
}

/*
 * 16-bit float operands are decoded while packed (or streamed, for a
 * GEMV): the float32 result must be bit for bit the product of the same
 * operands converted to float32 first.
 */
static void
check_matmul_16bit_exact(enum nrtemu_dtype dt, uint64_t M, uint64_t K,
                         uint64_t N, bool every_bit_pattern)
{
    struct nrtemu_array a = ARRAY(dt, NULL, M, K), b = ARRAY(dt, NULL, K, N);
    struct nrtemu_array a32 = ARRAY(NRTEMU_DTYPE_FLOAT32, NULL, M, K);
    struct nrtemu_array b32 = ARRAY(NRTEMU_DTYPE_FLOAT32, NULL, K, N);
    struct nrtemu_array o = ARRAY(NRTEMU_DTYPE_FLOAT32, NULL, M, N);
    struct nrtemu_array o32 = ARRAY(NRTEMU_DTYPE_FLOAT32, NULL, M, N);
    struct nrtemu_array o16 = ARRAY(dt, NULL, M, N);
    struct nrtemu_array o16ref = ARRAY(dt, NULL, M, N);
    uint16_t *ab = alloc_elems(dt, M * K), *bb = alloc_elems(dt, K * N);

    for (uint64_t i = 0; i < M * K; i++) {
        ab[i] = (uint16_t)(0x3000 + (i * 2654435761u) % 0x1800) |
                (uint16_t)((i % 3 == 0) << 15);
    }
    for (uint64_t i = 0; i < K * N; i++) {
        bb[i] = (uint16_t)(0x3400 + (i * 40503u) % 0x1000) |
                (uint16_t)((i % 5 == 0) << 15);
    }
    /* Every encoding (subnormals, infinities, NaNs included), once each,
     * in the first column of a tall A or the first row of a wide B, the
     * rest of that operand zero: each result is one product plus zeros,
     * so that no infinity or NaN spreads to the other results. */
    if (every_bit_pattern && M >= 65536) {
        for (uint64_t i = 0; i < M * K; i++) {
            ab[i] = i % K == 0 ? (uint16_t)(i / K) : 0;
        }
    }
    if (every_bit_pattern && N >= 65536) {
        for (uint64_t i = 0; i < K * N; i++) {
            bb[i] = i < N ? (uint16_t)i : 0;
        }
    }
    a.data = ab;
    b.data = bb;
    a32.data = alloc_elems(NRTEMU_DTYPE_FLOAT32, M * K);
    b32.data = alloc_elems(NRTEMU_DTYPE_FLOAT32, K * N);
    nrtemu__convert(NRTEMU_DTYPE_FLOAT32, a32.data, dt, ab, 1, M * K);
    nrtemu__convert(NRTEMU_DTYPE_FLOAT32, b32.data, dt, bb, 1, K * N);
    o.data = alloc_elems(NRTEMU_DTYPE_FLOAT32, M * N);
    o32.data = alloc_elems(NRTEMU_DTYPE_FLOAT32, M * N);
    o16.data = alloc_elems(dt, M * N);
    o16ref.data = alloc_elems(dt, M * N);
    ASSERT_OK(
        nrtemu__kernel_matmul(NRTEMU_DTYPE_FLOAT32, &o, &a, &b, &scratch));
    ASSERT_OK(nrtemu__kernel_matmul(NRTEMU_DTYPE_FLOAT32, &o32, &a32, &b32,
                                    &scratch));
    if (memcmp(o.data, o32.data, M * N * 4) != 0) {
        TEST_FAIL_("matmul %s %llux%llux%llu differs from float32",
                   nrtemu__dtype_name(dt), (unsigned long long)M,
                   (unsigned long long)K, (unsigned long long)N);
    }
    /* Computing in the 16-bit dtype: the float32 result, rounded once. */
    ASSERT_OK(nrtemu__kernel_matmul(dt, &o16, &a, &b, &scratch));
    nrtemu__convert(dt, o16ref.data, NRTEMU_DTYPE_FLOAT32, o32.data, 1, M * N);
    ASSERT_EQ(memcmp(o16.data, o16ref.data, M * N * 2), 0);
    free(ab);
    free(bb);
    free(a32.data);
    free(b32.data);
    free(o.data);
    free(o32.data);
    free(o16.data);
    free(o16ref.data);
}

static void
test_matmul_16bit(void)
{
    /* (100, 90, 100) and (130, 120, 97): float32 reads its operands
     * unpacked (the small products' path), bfloat16 packs them (too much
     * work for its small path): the two must still agree, bit for bit. */
    static const uint64_t sizes[][3] = {
        {1, 70, 260},   {1, 300, 1000},  {37, 300, 1},    {600, 200, 1},
        {13, 33, 17},   {67, 129, 33},   {200, 300, 260}, {100, 90, 100},
        {130, 120, 97}, {1, 2054, 4101},
    };
    /* Every 16-bit encoding through each decoder: the GEMM's packing of
     * A and of B, vector x matrix, matrix x vector. */
    static const uint64_t every[][3] = {
        {65536, 4, 3},
        {3, 4, 65536},
        {1, 4, 65536},
        {65536, 16, 1},
    };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        check_matmul_16bit_exact(NRTEMU_DTYPE_BFLOAT16, sizes[s][0],
                                 sizes[s][1], sizes[s][2], false);
        check_matmul_16bit_exact(NRTEMU_DTYPE_FLOAT16, sizes[s][0],
                                 sizes[s][1], sizes[s][2], false);
    }
    for (size_t s = 0; s < sizeof every / sizeof every[0]; s++) {
        check_matmul_16bit_exact(NRTEMU_DTYPE_BFLOAT16, every[s][0],
                                 every[s][1], every[s][2], true);
        check_matmul_16bit_exact(NRTEMU_DTYPE_FLOAT16, every[s][0],
                                 every[s][1], every[s][2], true);
    }
}

/* The worker pool: every task once, nested and concurrent jobs. */
enum { POOL_TASKS = 97 };

struct pool_check {
    atomic_uint runs[POOL_TASKS];
    atomic_uint nested;
    bool nest;
};

static void
pool_nested_task(void *arg, uint32_t t)
{
    struct pool_check *c = arg;
    (void)t;
    atomic_fetch_add(&c->nested, 1);
}

static void
pool_task(void *arg, uint32_t t)
{
    struct pool_check *c = arg;
    atomic_fetch_add(&c->runs[t], 1);
    if (c->nest && t % 10 == 0) {
        /* Runs on this thread: the pool is taken by the outer job. */
        nrtemu__pool_run(pool_nested_task, c, 3);
    }
}

static void *
pool_caller(void *arg)
{
    for (int round = 0; round < 50; round++) {
        nrtemu__pool_run(pool_task, arg, POOL_TASKS);
    }
    return NULL;
}

/* Slots: each task once, every slot below the limit, no slot on two
 * threads at once (a task holds its slot while it runs). */
struct pool_slots_check {
    atomic_uint runs[POOL_TASKS];
    atomic_uint in_use[4];
    atomic_uint bad;
    uint32_t slots;
};

static void
pool_slot_task(void *arg, uint32_t t, uint32_t slot)
{
    struct pool_slots_check *c = arg;
    volatile uint32_t spin = 0;

    atomic_fetch_add(&c->runs[t], 1);
    if (slot >= c->slots) {
        atomic_fetch_add(&c->bad, 1);
        return;
    }
    if (atomic_fetch_add(&c->in_use[slot], 1) != 0) {
        atomic_fetch_add(&c->bad, 1);
    }
    while (spin < 20000) {
        spin = spin + 1; /* long enough for another thread to collide */
    }
    atomic_fetch_sub(&c->in_use[slot], 1);
}

static void
test_pool_slots(void)
{
    for (uint32_t slots = 1; slots <= 4; slots++) {
        static struct pool_slots_check c;
        memset(&c, 0, sizeof c);
        c.slots = slots;
        for (int round = 0; round < 10; round++) {
            nrtemu__pool_run_slots(pool_slot_task, &c, POOL_TASKS, slots);
        }
        for (int t = 0; t < POOL_TASKS; t++) {
            ASSERT_EQ(atomic_load(&c.runs[t]), 10);
        }
        ASSERT_EQ(atomic_load(&c.bad), 0);
    }
    /* The tasks a job is cut into: as many per thread as the pool says,
     * never more than the units allow, 1 for one thread's work. */
    ASSERT_EQ(nrtemu__pool_tasks(1000, 1000), 1);
    ASSERT_EQ(nrtemu__pool_tasks(1999, 1000), 1);
    ASSERT_EQ(nrtemu__pool_tasks(0, 0), 1);
    if (nrtemu__pool_threads() > 1) {
        ASSERT_EQ(nrtemu__pool_tasks(3000, 1000), 3);
        ASSERT_EQ(nrtemu__pool_tasks(1000000, 1),
                  nrtemu__pool_threads() * NRTEMU_POOL_TASKS_PER_THREAD);
    }
}

static void
test_pool(void)
{
    static struct pool_check c, d;
    pthread_t tid;

    ASSERT_TRUE(nrtemu__pool_threads() >= 1);
    c.nest = true;
    for (int round = 0; round < 20; round++) {
        nrtemu__pool_run(pool_task, &c, POOL_TASKS);
    }
    nrtemu__pool_run(pool_task, &c, 0);
    for (int t = 0; t < POOL_TASKS; t++) {
        ASSERT_EQ(atomic_load(&c.runs[t]), 20);
    }
    ASSERT_EQ(atomic_load(&c.nested), 20 * 10 * 3);
    /* Two callers at once: one gets the pool, the other runs alone. */
    ASSERT_EQ(pthread_create(&tid, NULL, pool_caller, &d), 0);
    pool_caller(&d);
    ASSERT_EQ(pthread_join(tid, NULL), 0);
    for (int t = 0; t < POOL_TASKS; t++) {
        ASSERT_EQ(atomic_load(&d.runs[t]), 100);
    }
}

static void
test_transpose(void)
{
    enum { R = 70, C = 45 };
    float x[R * C], o[R * C];
    struct nrtemu_array in = ARRAY(NRTEMU_DTYPE_FLOAT32, x, R, C);
    struct nrtemu_array out = ARRAY(NRTEMU_DTYPE_FLOAT32, o, C, R);
    uint32_t perm2[] = {1, 0};

    for (int i = 0; i < R * C; i++) {
        x[i] = (float)i;
    }
    nrtemu__kernel_transpose(&out, &in, perm2);
    for (int r = 0; r < R; r++) {
        for (int c = 0; c < C; c++) {
            ASSERT_TRUE(o[c * R + r] == x[r * C + c]);
        }
    }
    {
        /* [2,3,4] -> perm (2,0,1) -> [4,2,3], 8-byte elements. */
        int64_t v[24], w[24];
        uint32_t perm[] = {2, 0, 1};
        struct nrtemu_array i3 = ARRAY(NRTEMU_DTYPE_INT64, v, 2, 3, 4);
        struct nrtemu_array o3 = ARRAY(NRTEMU_DTYPE_INT64, w, 4, 2, 3);
        for (int i = 0; i < 24; i++) {
            v[i] = i;
        }
        nrtemu__kernel_transpose(&o3, &i3, perm);
        for (int a = 0; a < 4; a++) {
            for (int b = 0; b < 2; b++) {
                for (int c = 0; c < 3; c++) {
                    ASSERT_EQ(w[(a * 2 + b) * 3 + c], v[(b * 3 + c) * 4 + a]);
                }
            }
        }
    }
}

/* ---- transposes: random permutations against a naive reference ---- */

/* A small deterministic generator (xorshift64*) for the shapes below. */
static uint64_t perm_rng = 0x9e3779b97f4a7c15u;

static uint64_t
perm_rand(uint64_t n)
{
    perm_rng ^= perm_rng >> 12;
    perm_rng ^= perm_rng << 25;
    perm_rng ^= perm_rng >> 27;
    return (perm_rng * 0x2545f4914f6cdd1du >> 33) % n;
}

/*
 * Transpose a (ndim, shape) array of dt by `perm` with the kernel and
 * compare every byte with a naive element-by-element reference; the
 * bytes after the output must be untouched.
 */
static void
check_permutation(enum nrtemu_dtype dt, uint32_t ndim, const uint64_t *shape,
                  const uint32_t *perm)
{
    size_t size = nrtemu__dtype_size(dt);
    uint64_t oshape[NRTEMU_MAX_DIMS], istride[NRTEMU_MAX_DIMS];
    uint64_t n = 1, mismatches = 0;
    struct nrtemu_array in, out;
    unsigned char *x, *o;

    for (int d = (int)ndim - 1; d >= 0; d--) {
        istride[d] = n;
        n *= shape[d];
    }
    for (uint32_t d = 0; d < ndim; d++) {
        oshape[d] = shape[perm[d]];
    }
    in = array(dt, NULL, ndim, shape);
    out = array(dt, NULL, ndim, oshape);
    x = alloc_elems(dt, n);
    o = alloc_elems(dt, n);
    in.data = x;
    out.data = o;
    for (uint64_t i = 0; i < n * size; i++) {
        x[i] = (unsigned char)(i * 131 + (i >> 8) * 7 + 1);
    }
    memset(o, 0x5a, n * size + 64);
    nrtemu__kernel_transpose(&out, &in, perm);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t rest = i, src = 0;
        for (int d = (int)ndim - 1; d >= 0; d--) {
            src += (rest % oshape[d]) * istride[perm[d]];
            rest /= oshape[d];
        }
        mismatches += memcmp(o + i * size, x + src * size, size) != 0;
    }
    for (size_t i = 0; i < 64; i++) {
        mismatches += o[n * size + i] != 0x5a;
    }
    if (mismatches != 0) {
        fprintf(stderr, "transpose of %s [", nrtemu__dtype_name(dt));
        for (uint32_t d = 0; d < ndim; d++) {
            fprintf(stderr, " %" PRIu64 "/%" PRIu32, shape[d], perm[d]);
        }
        fprintf(stderr, " ] (size/perm)\n");
    }
    ASSERT_UEQ(mismatches, 0);
    free(x);
    free(o);
}

static void
test_transpose_permutations(void)
{
    /* One dtype per item size: the kernel moves bytes by item size. */
    static const enum nrtemu_dtype dts[] = {
        NRTEMU_DTYPE_INT8,    NRTEMU_DTYPE_BFLOAT16, NRTEMU_DTYPE_FLOAT32,
        NRTEMU_DTYPE_FLOAT64, NRTEMU_DTYPE_UINT8,    NRTEMU_DTYPE_FLOAT16,
        NRTEMU_DTYPE_INT32,   NRTEMU_DTYPE_INT64};
    /* Sizes around the vector blocks (2, 4, 8, 16 items) and tiles (32 to
     * 128 items), 1 (collapsed away) and 0 (nothing to do). */
    static const uint64_t sides[] = {1,  2,   3,   4,   5,   7,  8,
                                     9,  15,  16,  17,  31,  33, 63,
                                     65, 127, 129, 131, 200, 259};
    enum { NSIDES = sizeof sides / sizeof sides[0] };

    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        /* 2-D around and across tiles, both ways. */
        static const uint64_t two_d[][2] = {
            {1, 1},   {1, 37},   {37, 1},   {16, 16},   {17, 33},
            {64, 64}, {131, 70}, {70, 259}, {259, 131}, {0, 5},
        };
        for (size_t i = 0; i < sizeof two_d / sizeof two_d[0]; i++) {
            check_permutation(dts[t], 2, two_d[i], (const uint32_t[]){1, 0});
        }
        /* Rows a multiple of 4 KiB long, which go through a buffer. */
        {
            uint64_t row = 4096 / nrtemu__dtype_size(dts[t]);
            check_permutation(dts[t], 2, SHAPE(133, row),
                              (const uint32_t[]){1, 0});
            check_permutation(dts[t], 2, SHAPE(300, 2 * row),
                              (const uint32_t[]){1, 0});
            check_permutation(dts[t], 3, SHAPE(3, 70, row),
                              (const uint32_t[]){2, 0, 1});
        }
        /* The last axis kept: contiguous runs, short and long. */
        check_permutation(dts[t], 3, SHAPE(5, 7, 33),
                          (const uint32_t[]){1, 0, 2});
        check_permutation(dts[t], 4, SHAPE(3, 4, 5, 4096),
                          (const uint32_t[]){2, 0, 1, 3});
        /* Random shapes of 2 to 5 dimensions and random permutations,
         * up to about 300k elements. */
        for (int trial = 0; trial < 120; trial++) {
            uint32_t ndim = 2 + (uint32_t)perm_rand(4), perm[NRTEMU_MAX_DIMS];
            uint64_t shape[NRTEMU_MAX_DIMS], n = 1;
            for (uint32_t d = 0; d < ndim; d++) {
                uint64_t s = sides[perm_rand(NSIDES)];
                while (s > 1 && n * s > 300000) {
                    s /= 2;
                }
                shape[d] = s;
                n *= s;
                perm[d] = d;
            }
            if (trial % 30 == 7) {
                shape[perm_rand(ndim)] = 0;
            }
            for (uint32_t d = ndim - 1; d > 0; d--) {
                uint32_t j = (uint32_t)perm_rand(d + 1), tmp = perm[d];
                perm[d] = perm[j];
                perm[j] = tmp;
            }
            check_permutation(dts[t], ndim, shape, perm);
        }
        /* The most dimensions an array has, reversed and rotated. */
        {
            uint64_t shape[NRTEMU_MAX_DIMS];
            uint32_t rev[NRTEMU_MAX_DIMS], rot[NRTEMU_MAX_DIMS];
            for (uint32_t d = 0; d < NRTEMU_MAX_DIMS; d++) {
                shape[d] = 2 + d % 3;
                rev[d] = NRTEMU_MAX_DIMS - 1 - d;
                rot[d] = (d + 3) % NRTEMU_MAX_DIMS;
            }
            check_permutation(dts[t], NRTEMU_MAX_DIMS, shape, rev);
            check_permutation(dts[t], NRTEMU_MAX_DIMS, shape, rot);
        }
    }
}

/* ---- end of transposes ---- */

static void
test_slice_concat_take(void)
{
    int32_t x[20], o[20];
    struct nrtemu_array in = ARRAY(NRTEMU_DTYPE_INT32, x, 4, 5), out;
    int64_t start[] = {3, 4}, step[] = {-2, -3};

    for (int i = 0; i < 20; i++) {
        x[i] = i;
    }
    /* x[3::-2, 4::-3] -> rows 3, 1; cols 4, 1 */
    out = ARRAY(NRTEMU_DTYPE_INT32, o, 2, 2);
    nrtemu__kernel_slice(&out, &in, start, step);
    ASSERT_TRUE(o[0] == 19 && o[1] == 16 && o[2] == 9 && o[3] == 6);
    {
        int64_t s2[] = {1, 0}, t2[] = {1, 2};
        out = ARRAY(NRTEMU_DTYPE_INT32, o, 3, 3);
        nrtemu__kernel_slice(&out, &in, s2, t2);
        ASSERT_TRUE(o[0] == 5 && o[1] == 7 && o[2] == 9 && o[8] == 19);
    }
    /* concatenate along 1: [4,2] + [4,3] */
    {
        int32_t a[8], b[12];
        struct nrtemu_array parts[2];
        for (int i = 0; i < 8; i++) {
            a[i] = 100 + i;
        }
        for (int i = 0; i < 12; i++) {
            b[i] = 200 + i;
        }
        parts[0] = ARRAY(NRTEMU_DTYPE_INT32, a, 4, 2);
        parts[1] = ARRAY(NRTEMU_DTYPE_INT32, b, 4, 3);
        out = ARRAY(NRTEMU_DTYPE_INT32, o, 4, 5);
        nrtemu__kernel_concatenate(&out, parts, 2, 1);
        ASSERT_TRUE(o[0] == 100 && o[1] == 101 && o[2] == 200 && o[4] == 202 &&
                    o[5] == 102 && o[19] == 211);
        parts[1] = ARRAY(NRTEMU_DTYPE_INT32, b, 3, 2);
        out = ARRAY(NRTEMU_DTYPE_INT32, o, 7, 2);
        nrtemu__kernel_concatenate(&out, parts, 2, 0);
        ASSERT_TRUE(o[7] == 107 && o[8] == 200 && o[13] == 205);
    }
    /* take along each axis, negative indices, out of bounds. */
    {
        int16_t idx[] = {-1, 0, 2};
        struct nrtemu_array ix = ARRAY(NRTEMU_DTYPE_INT16, idx, 3);
        int64_t bad = 0;
        out = ARRAY(NRTEMU_DTYPE_INT32, o, 3, 5);
        ASSERT_OK(nrtemu__kernel_take(&out, &in, &ix, 0, &bad, &scratch));
        ASSERT_TRUE(o[0] == 15 && o[5] == 0 && o[10] == 10 && o[14] == 14);
        out = ARRAY(NRTEMU_DTYPE_INT32, o, 4, 3);
        ASSERT_OK(nrtemu__kernel_take(&out, &in, &ix, 1, &bad, &scratch));
        ASSERT_TRUE(o[0] == 4 && o[1] == 0 && o[2] == 2 && o[3] == 9);
        idx[1] = 7;
        memset(o, 0, sizeof o);
        out = ARRAY(NRTEMU_DTYPE_INT32, o, 3, 5);
        ASSERT_STATUS(nrtemu__kernel_take(&out, &in, &ix, 0, &bad, &scratch),
                      NRT_EXEC_OOB);
        ASSERT_EQ(bad, 7);
        ASSERT_EQ(o[0], 0); /* nothing written */
        idx[1] = -5;
        ASSERT_STATUS(nrtemu__kernel_take(&out, &in, &ix, 0, &bad, &scratch),
                      NRT_EXEC_OOB);
        ASSERT_EQ(bad, -5);
        {
            /* 2-D indices into 8-byte elements. */
            double d[] = {0.5, 1.5, 2.5};
            uint64_t ui[] = {2, 0, 1, 1};
            double od[4];
            struct nrtemu_array dd = ARRAY(NRTEMU_DTYPE_FLOAT64, d, 3);
            struct nrtemu_array ii = ARRAY(NRTEMU_DTYPE_UINT64, ui, 2, 2);
            struct nrtemu_array oo = ARRAY(NRTEMU_DTYPE_FLOAT64, od, 2, 2);
            ASSERT_OK(nrtemu__kernel_take(&oo, &dd, &ii, 0, &bad, &scratch));
            ASSERT_TRUE(od[0] == 2.5 && od[1] == 0.5 && od[3] == 1.5);
        }
    }
}

static void
test_iota_full(void)
{
    float f[6];
    uint8_t b[6];
    uint16_t h[6];
    struct nrtemu_array out = ARRAY(NRTEMU_DTYPE_FLOAT32, f, 2, 3);
    float v = -2.5f;
    uint16_t hv = 0x7e00;

    nrtemu__kernel_iota(&out, 1);
    ASSERT_TRUE(f[0] == 0 && f[1] == 1 && f[2] == 2 && f[3] == 0 && f[5] == 2);
    nrtemu__kernel_iota(&out, 0);
    ASSERT_TRUE(f[0] == 0 && f[2] == 0 && f[3] == 1 && f[5] == 1);
    out = ARRAY(NRTEMU_DTYPE_UINT8, b, 6);
    nrtemu__kernel_iota(&out, 0);
    ASSERT_TRUE(b[0] == 0 && b[5] == 5);
    out = ARRAY(NRTEMU_DTYPE_FLOAT32, f, 6);
    nrtemu__kernel_full(&out, &v);
    ASSERT_TRUE(f[0] == -2.5f && f[5] == -2.5f);
    out = ARRAY(NRTEMU_DTYPE_FLOAT16, h, 3, 2);
    nrtemu__kernel_full(&out, &hv);
    ASSERT_EQ(h[5], 0x7e00);
}

/* An output that is also an operand of an elementwise op. */
static void
test_in_place(void)
{
    enum { N = 5000 };
    float *x = malloc(N * sizeof *x);
    struct nrtemu_array in[2], out;
    double two = 2.0;

    ASSERT_NOT_NULL(x);
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
    }
    out = ARRAY(NRTEMU_DTYPE_FLOAT32, x, N);
    in[0] = out;
    in[1] = SCALAR(NRTEMU_DTYPE_FLOAT64, &two);
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_MUL, NRTEMU_DTYPE_FLOAT32,
                                         &out, in, 2, &scratch));
    for (int i = 0; i < N; i++) {
        ASSERT_TRUE(x[i] == 2.0f * (float)i);
    }
    in[1] = out;
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_ADD, NRTEMU_DTYPE_FLOAT32,
                                         &out, in, 2, &scratch));
    for (int i = 0; i < N; i++) {
        ASSERT_TRUE(x[i] == 4.0f * (float)i);
    }
    free(x);
}

/* float32 bits as integers in the order of the values (-0 and +0 both 0),
 * so that the difference of two is their distance in ulps. */
static int64_t
f32_ordered(float f)
{
    int32_t i;

    memcpy(&i, &f, sizeof i);
    return i < 0 ? -(int64_t)(i & 0x7fffffff) : (int64_t)i;
}

/* `got` is `want` rounded within 1 ulp; NaN, infinities and the sign of
 * zeros exactly. */
static bool
f32_within_1ulp(float got, double want64)
{
    float want = (float)want64;

    if (isnan(want) || isnan(got)) {
        return isnan(want) && isnan(got);
    }
    if (!isfinite(want) || want == 0.0f || !isfinite(got) || got == 0.0f) {
        return got == want && signbit(got) == signbit(want);
    }
    return llabs(f32_ordered(got) - f32_ordered(want)) <= 1;
}

/*
 * sin, cos and pow with a scalar exponent (integers and half-integers
 * become products and sqrt) over float32 bit patterns of every exponent,
 * in place (out is the operand: each chunk is read before it is written),
 * within 1 ulp of the float64 value rounded once.
 */
static void
test_pow_sin_cos_float32(void)
{
    enum { N = 1 << 20 };
    static const float exps[] = {2.0f,  3.0f, -2.0f, 0.5f, -0.5f, 1.5f,
                                 -1.0f, 0.0f, 1.0f,  7.0f, -3.5f, 2.2f};
    float *src = malloc(N * sizeof *src);
    float *x = malloc(N * sizeof *x);
    struct nrtemu_array in[2], out;

    ASSERT_NOT_NULL(src);
    ASSERT_NOT_NULL(x);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t bits = i * 4099u; /* odd: N distinct patterns */
        memcpy(&src[i], &bits, sizeof bits);
    }
    out = ARRAY(NRTEMU_DTYPE_FLOAT32, x, N);
    in[0] = out;
    for (int op = 0; op < 2; op++) {
        enum nrtemu_op o = op == 0 ? NRTEMU_OP_SIN : NRTEMU_OP_COS;
        memcpy(x, src, N * sizeof *x);
        ASSERT_OK(nrtemu__kernel_elementwise(o, NRTEMU_DTYPE_FLOAT32, &out, in,
                                             1, &scratch));
        for (int i = 0; i < N; i++) {
            double v = (double)src[i];
            if (!f32_within_1ulp(x[i], op == 0 ? sin(v) : cos(v))) {
                TEST_FAIL_("%s(%a) = %a", op_names[o], v, (double)x[i]);
            }
        }
    }
    for (size_t k = 0; k < sizeof exps / sizeof exps[0]; k++) {
        float e = exps[k];
        in[1] = SCALAR(NRTEMU_DTYPE_FLOAT32, &e);
        memcpy(x, src, N * sizeof *x);
        ASSERT_OK(nrtemu__kernel_elementwise(
            NRTEMU_OP_POW, NRTEMU_DTYPE_FLOAT32, &out, in, 2, &scratch));
        for (int i = 0; i < N; i++) {
            /* NumPy's x ** 0.5 is sqrt: sqrt(-0) = -0, sqrt(-inf) = NaN. */
            double want = e == 0.5f ? sqrt((double)src[i])
                                    : pow((double)src[i], (double)e);
            if (!f32_within_1ulp(x[i], want)) {
                TEST_FAIL_("pow(%a, %g) = %a", (double)src[i], (double)e,
                           (double)x[i]);
            }
        }
    }
    free(src);
    free(x);
}

/*
 * float64 sin and cos, the compute dtype of int32 operands: int32 inputs
 * of every magnitude (INT32_MIN, INT32_MAX, the integers nearest
 * multiples of pi/2, random ones) straight from int32 to a float64 out,
 * and float64 ones in place (out is the operand: the fallback rereads
 * it), within 1 ulp of long double sinl/cosl.
 */
static bool
f64_within_1ulp(double got, long double want)
{
    double w = (double)want;

    if (isnan(w) || isnan(got)) {
        return isnan(w) && isnan(got);
    }
    return fabsl((long double)got - want) <=
           (long double)(nextafter(fabs(w), INFINITY) - fabs(w));
}

static void
test_sin_cos_float64_of_int32(void)
{
    enum { N = 1 << 16 };
    static const int32_t edge[] = {
        INT32_MIN, INT32_MAX, INT32_MIN + 1, 0,          1,
        -1,        11,        355,           52174,      5419351,
        411557987, 534483448, 1068966896,    2137933792, -2137933792};
    enum { NE = sizeof edge / sizeof edge[0] };
    int32_t *xi = malloc(N * sizeof *xi);
    double *xd = malloc(N * sizeof *xd), *o = malloc(N * sizeof *o);
    uint64_t st = 0x9e3779b97f4a7c15u;

    ASSERT_NOT_NULL(xi);
    ASSERT_NOT_NULL(xd);
    ASSERT_NOT_NULL(o);
    for (int i = 0; i < N; i++) {
        st ^= st << 13, st ^= st >> 7, st ^= st << 17;
        /* every magnitude: shift a random int32 right by 0..31 */
        xi[i] = i < NE ? edge[i] : (int32_t)(uint32_t)st >> (st >> 59);
    }
    for (int op = 0; op < 2; op++) {
        enum nrtemu_op o_ = op == 0 ? NRTEMU_OP_SIN : NRTEMU_OP_COS;
        struct nrtemu_array in = ARRAY(NRTEMU_DTYPE_INT32, xi, N);
        struct nrtemu_array out = ARRAY(NRTEMU_DTYPE_FLOAT64, o, N);
        ASSERT_OK(nrtemu__kernel_elementwise(o_, NRTEMU_DTYPE_FLOAT64, &out,
                                             &in, 1, &scratch));
        for (int i = 0; i < N; i++) {
            long double v = (long double)xi[i];
            if (!f64_within_1ulp(o[i], op == 0 ? sinl(v) : cosl(v))) {
                TEST_FAIL_("%s(%d) = %a", op_names[o_], (int)xi[i], o[i]);
            }
        }
        /* float64 in place, with non-integers and the special values */
        for (int i = 0; i < N; i++) {
            xd[i] = (double)xi[i] * (i % 3 == 0 ? 1.0 : 0x1p-20 * (i % 5));
        }
        xd[NE] = NAN, xd[NE + 1] = INFINITY, xd[NE + 2] = -0.0;
        xd[NE + 3] = 1e300, xd[NE + 4] = 0x1p31 + 1.0;
        memcpy(o, xd, N * sizeof *o);
        out = ARRAY(NRTEMU_DTYPE_FLOAT64, o, N);
        ASSERT_OK(nrtemu__kernel_elementwise(o_, NRTEMU_DTYPE_FLOAT64, &out,
                                             &out, 1, &scratch));
        for (int i = 0; i < N; i++) {
            long double v = (long double)xd[i];
            if (!f64_within_1ulp(o[i], op == 0 ? sinl(v) : cosl(v))) {
                TEST_FAIL_("%s(%a) = %a", op_names[o_], xd[i], o[i]);
            }
        }
        ASSERT_TRUE(op == 1 || signbit(o[NE + 2])); /* sin(-0) = -0 */
    }
    free(xi);
    free(xd);
    free(o);
}

/*
 * gelu, tanh, exp, expm1, sigmoid, log1p and cbrt of int32 operands
 * (computed in float64, converted in kernel_math_exp.c's loop; the first
 * five from tables): bit for bit the float64 op on the converted
 * operands, in every build (the baseline loops with -Dcpu_dispatch=false).
 * Operands of every magnitude, and runs of [-40, 40] and [-800, 800]
 * (the tables and both ends of them).
 */
static void
test_float64_ops_of_int32(void)
{
    enum { N = 1 << 14 };
    static const enum nrtemu_op ops[] = {
        NRTEMU_OP_GELU,    NRTEMU_OP_TANH,  NRTEMU_OP_EXP, NRTEMU_OP_EXPM1,
        NRTEMU_OP_SIGMOID, NRTEMU_OP_LOG1P, NRTEMU_OP_CBRT};
    int32_t *xi = malloc(N * sizeof *xi);
    double *xd = malloc(N * sizeof *xd), *o = malloc(N * sizeof *o);
    double *w = malloc(N * sizeof *w);
    uint64_t st = 0x2545f4914f6cdd1du;

    ASSERT_NOT_NULL(xi);
    ASSERT_NOT_NULL(xd);
    ASSERT_NOT_NULL(o);
    ASSERT_NOT_NULL(w);
    for (int i = 0; i < N; i++) {
        st ^= st << 13, st ^= st >> 7, st ^= st << 17;
        xi[i] = i < N / 3       ? (int32_t)(uint32_t)st >> (st >> 59)
                : i < 2 * N / 3 ? (int32_t)(i % 81) - 40
                                : (int32_t)(i % 1601) - 800;
    }
    xi[0] = INT32_MIN, xi[1] = INT32_MAX, xi[2] = 0, xi[3] = -1, xi[4] = -2;
    for (int i = 0; i < N; i++) {
        xd[i] = (double)xi[i];
    }
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        struct nrtemu_array in = ARRAY(NRTEMU_DTYPE_INT32, xi, N);
        struct nrtemu_array out = ARRAY(NRTEMU_DTYPE_FLOAT64, o, N);
        struct nrtemu_array ind = ARRAY(NRTEMU_DTYPE_FLOAT64, xd, N);
        struct nrtemu_array outd = ARRAY(NRTEMU_DTYPE_FLOAT64, w, N);
        ASSERT_OK(nrtemu__kernel_elementwise(ops[k], NRTEMU_DTYPE_FLOAT64,
                                             &out, &in, 1, &scratch));
        ASSERT_OK(nrtemu__kernel_elementwise(ops[k], NRTEMU_DTYPE_FLOAT64,
                                             &outd, &ind, 1, &scratch));
        for (int i = 0; i < N; i++) {
            if (memcmp(&o[i], &w[i], sizeof o[i]) != 0 &&
                !(isnan(o[i]) && isnan(w[i]))) {
                TEST_FAIL_("%s(%d) = %a, float64 gives %a", op_names[ops[k]],
                           (int)xi[i], o[i], w[i]);
            }
        }
    }
    free(xi);
    free(xd);
    free(o);
    free(w);
}

/*
 * pow with an exponent per element (the vectorised exp(y log x) path):
 * float32 bit patterns of every exponent as x, exponents of every kind as
 * y (integers, odd and even, half-integers, fractions, large, zero,
 * infinities, NaN), also with x a scalar: within 1 ulp of the float64
 * power rounded once, and C pow's special cases exactly.
 */
static void
test_pow_general_float32(void)
{
    enum { N = 1 << 16 };
    static const float ys[] = {
        2.0f,     3.0f,      -3.0f, 0.5f,        -0.5f,      1.5f,
        2.2f,     -2.7f,     0.0f,  -0.0f,       1e-3f,      31.0f,
        -31.5f,   1e6f,      -1e6f, 1e10f,       77.7f,      -0.3333f,
        INFINITY, -INFINITY, NAN,   16777217.0f, 8388609.0f, 1.0f};
    enum { NY = sizeof ys / sizeof ys[0] };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    float *o = malloc(N * sizeof *o);
    struct nrtemu_array in[2], out;

    ASSERT_NOT_NULL(x);
    ASSERT_NOT_NULL(y);
    ASSERT_NOT_NULL(o);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t bits = i * 65537u + (i >> 3); /* every exponent */
        memcpy(&x[i], &bits, sizeof bits);
        y[i] = ys[(i * 7u + (i >> 11)) % NY];
    }
    x[0] = 1.0f; /* pow(1, NaN) = 1 */
    x[1] = -1.0f;
    x[2] = -0.0f;
    x[3] = -INFINITY;
    out = ARRAY(NRTEMU_DTYPE_FLOAT32, o, N);
    in[0] = ARRAY(NRTEMU_DTYPE_FLOAT32, x, N);
    in[1] = ARRAY(NRTEMU_DTYPE_FLOAT32, y, N);
    ASSERT_OK(nrtemu__kernel_elementwise(NRTEMU_OP_POW, NRTEMU_DTYPE_FLOAT32,
                                         &out, in, 2, &scratch));
    for (int i = 0; i < N; i++) {
        /* A signalling NaN x gives NaN even for y = 0 (powf, NumPy);
         * widening to float64 would quiet it. */
        double want = isnan(x[i]) ? (double)powf(x[i], y[i])
                                  : pow((double)x[i], (double)y[i]);
        if (!f32_within_1ulp(o[i], want)) {
            TEST_FAIL_("pow(%a, %a) = %a", (double)x[i], (double)y[i],
                       (double)o[i]);
        }
    }
    /* A scalar base, every exponent. */
    for (int k = 0; k < 4; k++) {
        float base = k == 0 ? 2.5f : k == 1 ? -1.25f : k == 2 ? 0.75f : 0.0f;
        for (int i = 0; i < N; i++) {
            memcpy(&y[i], &(uint32_t){(uint32_t)i * 65537u}, 4);
        }
        in[0] = SCALAR(NRTEMU_DTYPE_FLOAT32, &base);
        ASSERT_OK(nrtemu__kernel_elementwise(
            NRTEMU_OP_POW, NRTEMU_DTYPE_FLOAT32, &out, in, 2, &scratch));
        for (int i = 0; i < N; i++) {
            if (!f32_within_1ulp(
                    o[i], isnan(y[i]) ? (double)powf(base, y[i])
                                      : pow((double)base, (double)y[i]))) {
                TEST_FAIL_("pow(%a, %a) = %a", (double)base, (double)y[i],
                           (double)o[i]);
            }
        }
    }
    free(x);
    free(y);
    free(o);
}

/* --- reductions over any axis of larger shapes (kernel_reduce.c's grouped
 * rows and converted windows) against naive references --- */

static const uint64_t big_shapes[][4] = {
    {37, 2049, 1, 1},
    {3, 2049, 9, 1},
    {5, 7, 1001, 1},
    {3, 5, 7, 211},
};
static const uint32_t big_ndims[] = {2, 3, 3, 4};

/* Test values: small integers (sums of them are exact in float32 and
 * rounded once to the output dtype), many ties, NaNs where `nans`. */
static double
big_value(size_t i, bool nans)
{
    if (nans && (i % 1013 == 17 || i % 4099 == 4098)) {
        return NAN;
    }
    return (double)((i * 7919) % 13) - 6.0;
}

/* The flat output index of input element i when `axes` are reduced. */
static uint64_t
big_out_index(const uint64_t *shape, uint32_t ndim, uint32_t axes, uint64_t i)
{
    uint64_t flat = 0, stride = 1;

    for (int d = (int)ndim - 1; d >= 0; d--) {
        uint64_t k = i % shape[d];
        i /= shape[d];
        if (!(axes & (1u << d))) {
            flat += k * stride;
            stride *= shape[d];
        }
    }
    return flat;
}

static void
check_big_reduce(enum nrtemu_op op, enum nrtemu_dtype dt, size_t s,
                 uint32_t axes, bool nans)
{
    uint32_t ndim = big_ndims[s];
    const uint64_t *shape = big_shapes[s];
    uint64_t oshape[4], count = 1, ocount = 1;
    uint32_t on = 0;
    double *vals, *ref;
    struct nrtemu_array in, out;

    for (uint32_t d = 0; d < ndim; d++) {
        count *= shape[d];
        if (!(axes & (1u << d))) {
            oshape[on++] = shape[d];
            ocount *= shape[d];
        }
    }
    vals = malloc(count * sizeof *vals);
    ref = malloc(ocount * sizeof *ref);
    ASSERT_NOT_NULL(vals);
    ASSERT_NOT_NULL(ref);
    for (uint64_t i = 0; i < count; i++) {
        vals[i] = big_value(i, nans);
    }
    in = from_doubles(dt, vals, ndim, shape);
    out = array(dt, alloc_elems(dt, ocount), on, oshape);
    for (uint64_t o = 0; o < ocount; o++) {
        ref[o] = op == NRTEMU_OP_MAX   ? -INFINITY
                 : op == NRTEMU_OP_MIN ? INFINITY
                                       : 0.0;
    }
    for (uint64_t i = 0; i < count; i++) {
        uint64_t o = big_out_index(shape, ndim, axes, i);
        double v = get(&in, i);
        if (isnan(v) || isnan(ref[o])) {
            ref[o] = NAN;
        } else if (op == NRTEMU_OP_MAX) {
            ref[o] = fmax(ref[o], v);
        } else if (op == NRTEMU_OP_MIN) {
            ref[o] = fmin(ref[o], v);
        } else {
            ref[o] += v;
        }
    }
    ASSERT_OK(nrtemu__kernel_reduce(op, dt, &out, &in, axes, &scratch));
    for (uint64_t o = 0; o < ocount; o++) {
        double want, got = get(&out, o);
        /* The exact result rounded once to the output dtype. */
        char one[8];
        nrtemu__convert(dt, one, NRTEMU_DTYPE_FLOAT64, &ref[o], 1, 1);
        nrtemu__convert(NRTEMU_DTYPE_FLOAT64, &want, dt, one, 1, 1);
        if (!(got == want || (isnan(got) && isnan(want)))) {
            TEST_FAIL_("%s %s shape %zu axes 0x%x [%llu]: %g, expected %g",
                       op_names[op], nrtemu__dtype_name(dt), s, axes,
                       (unsigned long long)o, got, want);
        }
    }
    free(vals);
    free(ref);
    free(in.data);
    free(out.data);
}

static void
check_big_argreduce(enum nrtemu_op op, enum nrtemu_dtype dt, size_t s,
                    uint32_t axis, bool nans)
{
    uint32_t ndim = big_ndims[s];
    const uint64_t *shape = big_shapes[s];
    uint64_t oshape[4], count = 1, ocount = 1, R = shape[axis], B = 1;
    uint32_t on = 0;
    double *vals;
    int64_t *got;
    struct nrtemu_array in, out;

    for (uint32_t d = 0; d < ndim; d++) {
        count *= shape[d];
        if (d != axis) {
            oshape[on++] = shape[d];
            ocount *= shape[d];
        }
        if (d > axis) {
            B *= shape[d];
        }
    }
    vals = malloc(count * sizeof *vals);
    got = malloc(ocount * sizeof *got);
    ASSERT_NOT_NULL(vals);
    ASSERT_NOT_NULL(got);
    for (uint64_t i = 0; i < count; i++) {
        vals[i] = big_value(i, nans);
    }
    in = from_doubles(dt, vals, ndim, shape);
    out = array(NRTEMU_DTYPE_INT64, got, on, oshape);
    ASSERT_OK(nrtemu__kernel_argreduce(op, &out, &in, axis, &scratch));
    for (uint64_t o = 0; o < ocount; o++) {
        /* Output o is (a, b) of [A, B]; its elements are a*R*B + r*B + b. */
        uint64_t a = o / B, b = o % B, want = 0;
        double best = get(&in, a * R * B + b);
        for (uint64_t r = 1; r < R && !isnan(best); r++) {
            double v = get(&in, a * R * B + r * B + b);
            if (isnan(v) || (op == NRTEMU_OP_ARGMAX ? v > best : v < best)) {
                best = v;
                want = r;
            }
        }
        if (got[o] != (int64_t)want) {
            TEST_FAIL_("%s %s shape %zu axis %u [%llu]: %lld, expected %llu",
                       op_names[op], nrtemu__dtype_name(dt), s, axis,
                       (unsigned long long)o, (long long)got[o],
                       (unsigned long long)want);
        }
    }
    free(vals);
    free(in.data);
    free(out.data);
}

static void
test_reduce_big_axes(void)
{
    static const enum nrtemu_dtype dts[] = {
        NRTEMU_DTYPE_FLOAT32, NRTEMU_DTYPE_FLOAT16, NRTEMU_DTYPE_BFLOAT16,
        NRTEMU_DTYPE_FLOAT64, NRTEMU_DTYPE_INT32,   NRTEMU_DTYPE_INT8,
    };
    static const enum nrtemu_op ops[] = {NRTEMU_OP_SUM, NRTEMU_OP_MAX,
                                         NRTEMU_OP_MIN};

    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        bool nans = nrtemu__dtype_is_float(dts[t]);
        for (size_t s = 0; s < sizeof big_ndims / sizeof big_ndims[0]; s++) {
            for (uint32_t axis = 0; axis < big_ndims[s]; axis++) {
                for (int nan = 0; nan <= (int)nans; nan++) {
                    check_big_argreduce(NRTEMU_OP_ARGMAX, dts[t], s, axis,
                                        nan);
                    check_big_argreduce(NRTEMU_OP_ARGMIN, dts[t], s, axis,
                                        nan);
                }
            }
            /* Single axes, a middle pair, and all but the last. */
            uint32_t all = (1u << big_ndims[s]) - 1;
            uint32_t masks[] = {1, 2, 4, 8, 6, all >> 1, all};
            for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++) {
                if (masks[m] > all) {
                    continue;
                }
                for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
                    if (dts[t] == NRTEMU_DTYPE_INT8 &&
                        ops[o] == NRTEMU_OP_SUM) {
                        continue; /* wraps: covered by test_reductions */
                    }
                    check_big_reduce(ops[o], dts[t], s, masks[m], nans);
                }
            }
        }
    }
}

int
main(void)
{
    test_begin("test_kernels");
    RUN_TEST(test_binary_broadcasting);
    RUN_TEST(test_integer_semantics);
    RUN_TEST(test_int32_native);
    RUN_TEST(test_float_mod_floor_divide);
    RUN_TEST(test_unary_float);
    RUN_TEST(test_nan_handling);
    RUN_TEST(test_compare_and_logical);
    RUN_TEST(test_where);
    RUN_TEST(test_compute_dtype_rounding);
    RUN_TEST(test_cast_and_copy);
    RUN_TEST(test_reductions);
    RUN_TEST(test_reduction_edges);
    RUN_TEST(test_int32_extremes);
    RUN_TEST(test_argreduce);
    RUN_TEST(test_argreduce_rows);
    RUN_TEST(test_reduce_big_axes);
    RUN_TEST(test_softmax);
    RUN_TEST(test_matmul);
    RUN_TEST(test_matmul_16bit);
    RUN_TEST(test_pool);
    RUN_TEST(test_pool_slots);
    RUN_TEST(test_where_broadcast_f32);
    RUN_TEST(test_transpose);
    RUN_TEST(test_transpose_permutations);
    RUN_TEST(test_slice_concat_take);
    RUN_TEST(test_iota_full);
    RUN_TEST(test_in_place);
    RUN_TEST(test_pow_sin_cos_float32);
    RUN_TEST(test_sin_cos_float64_of_int32);
    RUN_TEST(test_float64_ops_of_int32);
    RUN_TEST(test_pow_general_float32);
    nrtemu__scratch_free(&scratch);
    return 0;
}
