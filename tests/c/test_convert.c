/*
 * test_convert.c - every dtype conversion against NumPy and ml_dtypes.
 *
 * The expected values come from gen_dtype_vectors.py (argv[1]): every bit
 * pattern of the 8- and 16-bit types, and special, halfway and random
 * values of the wider ones, converted to each of the 17 types.
 */
#include <math.h>

#include "test.h"

#include "kernels/convert.h"

struct vectors {
    unsigned char *data;
    size_t size;
    size_t pos;
};

static size_t failures;

static void
read_file(const char *path, struct vectors *v)
{
    FILE *f = fopen(path, "rb");
    long len;

    ASSERT_NOT_NULL(f);
    ASSERT_EQ(fseek(f, 0, SEEK_END), 0);
    len = ftell(f);
    ASSERT_TRUE(len >= 0);
    rewind(f);
    v->size = (size_t)len;
    v->data = malloc(v->size + 1);
    ASSERT_NOT_NULL(v->data);
    ASSERT_UEQ(fread(v->data, 1, v->size, f), v->size);
    fclose(f);
    v->pos = 0;
}

static const unsigned char *
take(struct vectors *v, size_t n)
{
    const unsigned char *p = v->data + v->pos;

    ASSERT_ULE(n, v->size - v->pos);
    v->pos += n;
    return p;
}

static enum nrtemu_dtype
take_dtype(struct vectors *v)
{
    char name[17];
    enum nrtemu_dtype dt;

    memcpy(name, take(v, 16), 16);
    name[16] = '\0';
    if (!nrtemu__dtype_from_name(name, &dt)) {
        TEST_FAIL_("unknown dtype '%s' in the vectors", name);
    }
    return dt;
}

static bool
is_nan(enum nrtemu_dtype dt, const void *elem)
{
    double d;

    if (!nrtemu__dtype_is_float(dt)) {
        return false;
    }
    nrtemu__convert(NRTEMU_DTYPE_FLOAT64, &d, dt, elem, 1, 1);
    return isnan(d);
}

static void
report(const char *what, enum nrtemu_dtype from, enum nrtemu_dtype to,
       const unsigned char *src, size_t i, const unsigned char *want,
       const unsigned char *got)
{
    size_t fs = nrtemu__dtype_size(from), ts = nrtemu__dtype_size(to);
    uint64_t s = 0, w = 0, g = 0;

    memcpy(&s, src + i * fs, fs);
    memcpy(&w, want + i * ts, ts);
    memcpy(&g, got + i * ts, ts);
    if (failures < 40) {
        fprintf(stderr,
                "%s %s -> %s [%zu]: source 0x%" PRIx64 ", expected 0x%" PRIx64
                ", got 0x%" PRIx64 "\n",
                what, nrtemu__dtype_name(from), nrtemu__dtype_name(to), i, s,
                w, g);
    }
    failures++;
}

/* Compare `got` with the expected elements under the flags. */
static void
compare(const char *what, enum nrtemu_dtype from, enum nrtemu_dtype to,
        const unsigned char *src, size_t n, const unsigned char *want,
        const unsigned char *flags, const unsigned char *got)
{
    size_t ts = nrtemu__dtype_size(to);

    for (size_t i = 0; i < n; i++) {
        if (flags[i] == 1) {
            continue;
        }
        if (flags[i] == 2) {
            if (!is_nan(to, got + i * ts)) {
                report(what, from, to, src, i, want, got);
            }
            continue;
        }
        if (memcmp(want + i * ts, got + i * ts, ts) != 0) {
            report(what, from, to, src, i, want, got);
        }
    }
}

/* The scalar functions, where the pair has one. */
static void
check_scalar(enum nrtemu_dtype from, enum nrtemu_dtype to,
             const unsigned char *src, size_t n, const unsigned char *want,
             const unsigned char *flags, unsigned char *got)
{
    bool fp8_to = to >= NRTEMU_DTYPE_FLOAT8_E4M3;
    bool fp8_from = from >= NRTEMU_DTYPE_FLOAT8_E4M3;

    for (size_t i = 0; i < n; i++) {
        const unsigned char *s = src + i * nrtemu__dtype_size(from);
        float f;
        double d;
        uint16_t h;
        uint8_t b;

        if (from == NRTEMU_DTYPE_FLOAT32 && to == NRTEMU_DTYPE_FLOAT16) {
            memcpy(&f, s, 4);
            h = nrtemu__float_to_half(f);
            memcpy(got + 2 * i, &h, 2);
        } else if (from == NRTEMU_DTYPE_FLOAT64 &&
                   to == NRTEMU_DTYPE_FLOAT16) {
            memcpy(&d, s, 8);
            h = nrtemu__double_to_half(d);
            memcpy(got + 2 * i, &h, 2);
        } else if (from == NRTEMU_DTYPE_FLOAT32 &&
                   to == NRTEMU_DTYPE_BFLOAT16) {
            memcpy(&f, s, 4);
            h = nrtemu__float_to_bfloat16(f);
            memcpy(got + 2 * i, &h, 2);
        } else if (from == NRTEMU_DTYPE_FLOAT32 && fp8_to) {
            memcpy(&f, s, 4);
            b = nrtemu__float_to_fp8(to, f);
            got[i] = b;
        } else if (to == NRTEMU_DTYPE_FLOAT32 &&
                   (from == NRTEMU_DTYPE_FLOAT16 ||
                    from == NRTEMU_DTYPE_BFLOAT16)) {
            memcpy(&h, s, 2);
            f = from == NRTEMU_DTYPE_FLOAT16 ? nrtemu__half_to_float(h)
                                             : nrtemu__bfloat16_to_float(h);
            memcpy(got + 4 * i, &f, 4);
        } else if (to == NRTEMU_DTYPE_FLOAT32 && fp8_from) {
            f = nrtemu__fp8_to_float(from, s[0]);
            memcpy(got + 4 * i, &f, 4);
        } else {
            return;
        }
    }
    compare("scalar", from, to, src, n, want, flags, got);
}

static void
test_vectors(const char *path)
{
    struct vectors v;
    size_t pairs = 0;

    read_file(path, &v);
    ASSERT_TRUE(memcmp(take(&v, 8), "NRTCVT1", 8) == 0);
    while (v.pos < v.size) {
        enum nrtemu_dtype from = take_dtype(&v);
        size_t fs = nrtemu__dtype_size(from);
        uint64_t n;
        const unsigned char *src;
        unsigned char *strided, *aligned;

        memcpy(&n, take(&v, 8), 8);
        /* The vectors are packed: copy to memory aligned for the type. */
        aligned = malloc(n * fs + 1);
        ASSERT_NOT_NULL(aligned);
        memcpy(aligned, take(&v, n * fs), n * fs);
        src = aligned;
        /* The same source reversed, read with stride -1. */
        strided = malloc(n * fs + 1);
        ASSERT_NOT_NULL(strided);
        for (size_t i = 0; i < n; i++) {
            memcpy(strided + (n - 1 - i) * fs, src + i * fs, fs);
        }
        for (int t = 0; t < NRTEMU_DTYPE_COUNT - 1; t++) {
            enum nrtemu_dtype to = take_dtype(&v);
            size_t ts = nrtemu__dtype_size(to);
            unsigned char *want = malloc(n * ts + 1);
            unsigned char *got = calloc(n + 1, ts);
            const unsigned char *flags;

            ASSERT_NOT_NULL(got);
            ASSERT_NOT_NULL(want);
            memcpy(want, take(&v, n * ts), n * ts);
            flags = take(&v, n);
            nrtemu__convert(to, got, from, src, 1, n);
            compare("convert", from, to, src, n, want, flags, got);
            memset(got, 0xa5, n * ts);
            nrtemu__convert(to, got, from, strided + (n - 1) * fs, -1, n);
            compare("strided", from, to, src, n, want, flags, got);
            check_scalar(from, to, src, n, want, flags, got);
            free(got);
            free(want);
            pairs++;
        }
        free(strided);
        free(aligned);
    }
    free(v.data);
    fprintf(stderr, "%zu dtype pairs checked\n", pairs);
    ASSERT_UEQ(pairs, 17 * 17);
    ASSERT_UEQ(failures, 0);
}

/* Stride 0 repeats one element; converting in place keeps the values. */
static void
test_broadcast_and_in_place(void)
{
    float one = 1.5f, out[5];
    int32_t ints[4] = {1, -2, 3, 1 << 30};

    nrtemu__convert(NRTEMU_DTYPE_FLOAT32, out, NRTEMU_DTYPE_FLOAT32, &one, 0,
                    5);
    for (int i = 0; i < 5; i++) {
        ASSERT_TRUE(out[i] == 1.5f);
    }
    nrtemu__convert(NRTEMU_DTYPE_FLOAT32, ints, NRTEMU_DTYPE_INT32, ints, 1,
                    4);
    memcpy(out, ints, sizeof ints);
    ASSERT_TRUE(out[0] == 1.0f && out[1] == -2.0f && out[2] == 3.0f &&
                out[3] == 1073741824.0f);
}

/*
 * float32 to each fp8 format in bulk (vectorised) against the scalar
 * encoder: every sign and exponent, every pattern of the top 7 mantissa
 * bits (the kept bits, the rounding bit and the first sticky bits of
 * every format, normal or subnormal) with the low bits 0, 1, all set or
 * only the top one set: every rounding case, ties included, and every
 * NaN, infinity and overflow.
 */
static void
test_fp8_from_float32(void)
{
    enum { COUNT = 2 * 256 * 128 * 4 };
    static const uint32_t low[4] = {0, 1, 0xffff, 0x8000};
    static float x[COUNT];
    static uint8_t got[COUNT];
    size_t n = 0;

    for (uint32_t sign = 0; sign < 2; sign++) {
        for (uint32_t e = 0; e < 256; e++) {
            for (uint32_t top = 0; top < 128; top++) {
                for (int l = 0; l < 4; l++) {
                    uint32_t u = sign << 31 | e << 23 | top << 16 | low[l];
                    memcpy(&x[n++], &u, sizeof u);
                }
            }
        }
    }
    for (int t = 0; t < 4; t++) {
        enum nrtemu_dtype dt =
            (enum nrtemu_dtype)(NRTEMU_DTYPE_FLOAT8_E4M3 + t);
        size_t bad = 0;
        nrtemu__convert(dt, got, NRTEMU_DTYPE_FLOAT32, x, 1, COUNT);
        for (size_t i = 0; i < COUNT; i++) {
            uint8_t want = nrtemu__float_to_fp8(dt, x[i]);
            if (got[i] != want && bad++ < 5) {
                uint32_t u;
                memcpy(&u, &x[i], sizeof u);
                TEST_FAIL_("%s from float32 0x%08x: 0x%02x, expected 0x%02x",
                           nrtemu__dtype_name(dt), u, got[i], want);
            }
        }
        ASSERT_EQ(bad, 0);
    }
}

/*
 * Each fp8 format to float32 in bulk (contiguous codes: the vectorised
 * decoder) against the strided path (the table) and the scalar decoder,
 * bit for bit: all 256 codes, at every offset of a vector.
 */
static void
test_fp8_to_float32(void)
{
    static uint8_t codes[3 * 256 + 64], strided[2 * (3 * 256 + 64)];
    static float bulk[3 * 256 + 64], table[3 * 256 + 64];
    const size_t n = sizeof codes;

    for (size_t i = 0; i < n; i++) {
        codes[i] = (uint8_t)(i * 7 + i / 256);
        strided[2 * i] = codes[i];
        strided[2 * i + 1] = 0xa5;
    }
    for (int t = 0; t < 4; t++) {
        enum nrtemu_dtype dt =
            (enum nrtemu_dtype)(NRTEMU_DTYPE_FLOAT8_E4M3 + t);
        for (size_t off = 0; off < 17; off++) {
            nrtemu__convert(NRTEMU_DTYPE_FLOAT32, bulk, dt, codes + off, 1,
                            n - off);
            nrtemu__convert(NRTEMU_DTYPE_FLOAT32, table, dt, strided + 2 * off,
                            2, n - off);
            for (size_t i = 0; i < n - off; i++) {
                float want = nrtemu__fp8_to_float(dt, codes[off + i]);
                if (memcmp(&bulk[i], &want, 4) != 0 ||
                    memcmp(&table[i], &want, 4) != 0) {
                    TEST_FAIL_("%s code 0x%02x to float32: %a (bulk), %a "
                               "(strided), expected %a",
                               nrtemu__dtype_name(dt), codes[off + i], bulk[i],
                               table[i], want);
                }
            }
        }
    }
}

/*
 * Truth values (a conversion to bool, as logical ops load their
 * operands) of contiguous runs against strided ones, which go through
 * the wide type: zeros of either sign false, NaN and every other bit
 * pattern true, for every dtype.
 */
static void
test_truth_values(void)
{
    static const uint64_t pats[] = {0,
                                    1,
                                    0x80,
                                    0x8000,
                                    0x80000000u,
                                    0x8000000000000000ull,
                                    0x7f,
                                    0x7fc0,
                                    0x7fc00000u,
                                    0xff,
                                    0xffff,
                                    0xffffffffu,
                                    ~0ull,
                                    0x100,
                                    0x3c00,
                                    0x3f800000u,
                                    0x0001000000000000ull};
    enum { N = sizeof pats / sizeof pats[0] };
    uint8_t src[N * 8], twice[2 * N * 8], bulk[N], slow[N];

    for (int dt = NRTEMU_DTYPE_BOOL; dt <= NRTEMU_DTYPE_FLOAT8_E3M4; dt++) {
        size_t size = nrtemu__dtype_size((enum nrtemu_dtype)dt);
        for (size_t i = 0; i < N; i++) {
            memcpy(src + i * size, &pats[i], size); /* little-endian */
            memcpy(twice + 2 * i * size, &pats[i], size);
            memset(twice + (2 * i + 1) * size, 0x5a, size);
        }
        nrtemu__convert(NRTEMU_DTYPE_BOOL, bulk, (enum nrtemu_dtype)dt, src, 1,
                        N);
        nrtemu__convert(NRTEMU_DTYPE_BOOL, slow, (enum nrtemu_dtype)dt, twice,
                        2, N);
        for (size_t i = 0; i < N; i++) {
            if (bulk[i] != slow[i] || bulk[i] > 1) {
                TEST_FAIL_("%s 0x%llx to bool: %u (contiguous), %u (strided)",
                           nrtemu__dtype_name((enum nrtemu_dtype)dt),
                           (unsigned long long)pats[i], bulk[i], slow[i]);
            }
        }
    }
}

int
main(int argc, char **argv)
{
    test_begin("test_convert");
    if (argc < 2) {
        fprintf(stderr, "usage: test_convert VECTORS\n");
        return 2;
    }
    RUN_TEST(test_broadcast_and_in_place);
    RUN_TEST(test_fp8_from_float32);
    RUN_TEST(test_fp8_to_float32);
    RUN_TEST(test_truth_values);
    test_vectors(argv[1]);
    return 0;
}
