/*
 * test_program.c - emulator programs: loading, the validation rules (one
 * test per rule: NRT_INVALID and a detail naming the op), and runs of
 * every kind of op through program_run, including NRT_EXEC_OOB from take
 * and the deadline.
 *
 * NEFF images are built here: a raw ustar archive of binary members
 * behind the 1024-byte header, and .npy constants.
 */
#include <math.h>
#include <time.h>

#include "test.h"

#include "neff/neff.h"
#include "program/program.h"
#include "util/strbuf.h"

#define FUNC "nrt_load"

/* ------------------------------------------------------------------ */
/* NEFF images                                                        */

struct member {
    const char *path;
    const void *data;
    size_t size; /* 0: data is a NUL-terminated text */
};

static void
put_le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

static void
tar_header(unsigned char *h, const char *path, size_t size)
{
    unsigned sum = 0;

    memset(h, 0, 512);
    snprintf((char *)h, 100, "%s", path);
    memcpy(h + 100, "0000644", 8);
    memcpy(h + 108, "0000000", 8);
    memcpy(h + 116, "0000000", 8);
    snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
    memcpy(h + 136, "00000000000", 12);
    memset(h + 148, ' ', 8);
    h[156] = '0';
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    for (int i = 0; i < 512; i++) {
        sum += h[i];
    }
    snprintf((char *)h + 148, 8, "%06o", sum);
    h[155] = ' ';
}

static unsigned char *
neff_build(const struct member *m, size_t count, size_t *size)
{
    size_t tar = 1024;
    unsigned char *image, *p;

    for (size_t i = 0; i < count; i++) {
        size_t n = m[i].size ? m[i].size : strlen(m[i].data);
        tar += 512 + (n + 511) / 512 * 512;
    }
    image = calloc(1, 1024 + tar);
    ASSERT_NOT_NULL(image);
    put_le(image + 0x008, 1024, 8);
    put_le(image + 0x010, tar, 8);
    put_le(image + 0x018, 2, 8);
    put_le(image + 0x0a8, 1, 4);
    snprintf((char *)image + 0x0dc, 256, "test_program");
    put_le(image + 0x1dc, 1, 4);
    put_le(image + 0x228, 1, 4);
    p = image + 1024;
    for (size_t i = 0; i < count; i++) {
        size_t n = m[i].size ? m[i].size : strlen(m[i].data);
        tar_header(p, m[i].path, n);
        memcpy(p + 512, m[i].data, n);
        p += 512 + (n + 511) / 512 * 512;
    }
    *size = 1024 + tar;
    return image;
}

/* A .npy v1 file: header padded to 64 bytes, then the data. */
static unsigned char *
npy_build(const char *descr, const char *shape, const void *data, size_t bytes,
          size_t *size)
{
    char dict[256];
    size_t hlen, total;
    unsigned char *f;

    snprintf(dict, sizeof dict,
             "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr,
             shape);
    hlen = (10 + strlen(dict) + 1 + 63) / 64 * 64 - 10;
    total = 10 + hlen + bytes;
    f = malloc(total);
    ASSERT_NOT_NULL(f);
    memcpy(f, "\x93NUMPY\x01\x00", 8);
    put_le(f + 8, hlen, 2);
    memset(f + 10, ' ', hlen);
    memcpy(f + 10, dict, strlen(dict));
    f[10 + hlen - 1] = '\n';
    memcpy(f + 10 + hlen, data, bytes);
    *size = total;
    return f;
}

/* A loaded NEFF and its program; `image` must outlive `neff`. */
struct loaded {
    unsigned char *image;
    struct nrtemu_neff *neff;
    struct nrtemu_program *program;
};

static const char *neff_json =
    "{\"name\": \"t\", \"version\": \"2.0\", \"generator\": \"test\", "
    "\"subgraphs\": [\"sg00\"]}";

/*
 * Load `program_json` with `def_json`, plus the constant members.
 * Returns the status of nrtemu__program_load.
 */
static NRT_STATUS
load_with(const char *def_json, const char *program_json,
          const struct member *extra, size_t n_extra, struct loaded *out)
{
    struct member m[8];
    size_t n = 0, size;
    NRT_STATUS st;

    memset(out, 0, sizeof *out);
    m[n++] = (struct member){"neff.json", neff_json, 0};
    m[n++] = (struct member){"sg00/def.json", def_json, 0};
    if (program_json != NULL) {
        m[n++] = (struct member){"sg00/program.json", program_json, 0};
    }
    for (size_t i = 0; i < n_extra; i++) {
        m[n++] = extra[i];
    }
    out->image = neff_build(m, n, &size);
    ASSERT_OK(nrtemu__neff_open(FUNC, out->image, size, false, &out->neff));
    st = nrtemu__program_load(FUNC, out->neff, 0, &out->program);
    if (st != NRT_SUCCESS) {
        ASSERT_NULL(out->program);
    }
    return st;
}

static void
unload(struct loaded *l)
{
    nrtemu__program_free(l->program);
    nrtemu__neff_free(l->neff);
    free(l->image);
}

/* The index of I/O entry `name`. */
static size_t
io_index(const struct loaded *l, const char *name)
{
    for (size_t i = 0; i < l->neff->io_count; i++) {
        if (strcmp(l->neff->io[i].name, name) == 0) {
            return i;
        }
    }
    TEST_FAIL_("no I/O entry '%s'", name);
}

/* ------------------------------------------------------------------ */
/* Runs                                                               */

/* The example of the format document: float16 in, float32 const. */
static void
test_document_example(void)
{
    static const char *def =
        "{\"var\": {"
        "\"a_input\": {\"type\": \"input\", \"size\": 8, \"shape\": [2, 2], "
        "\"dtype\": \"float16\"},"
        "\"w\": {\"type\": \"file\", \"file_name\": \"w.npy\"},"
        "\"output_0\": {\"type\": \"output\", \"size\": 8, \"shape\": [2, 2], "
        "\"dtype\": \"float16\"}},"
        "\"emulator_program\": \"program.json\"}";
    static const char *prog =
        "{\"format\": \"nrtpy-emulator-program\", \"version\": 1,"
        "\"buffers\": {"
        "\"a_input\": {\"kind\": \"input\", \"dtype\": \"float16\", "
        "\"shape\": [2, 2]},"
        "\"w\": {\"kind\": \"const\", \"dtype\": \"float32\", \"shape\": [2], "
        "\"var\": \"w\"},"
        "\"t0\": {\"kind\": \"temp\", \"dtype\": \"float32\", \"shape\": [2, "
        "2]},"
        "\"output_0\": {\"kind\": \"output\", \"dtype\": \"float16\", "
        "\"shape\": [2, 2]}},"
        "\"ops\": ["
        "{\"op\": \"add\", \"in\": [\"a_input\", \"w\"], \"out\": \"t0\", "
        "\"dtype\": \"float32\"},"
        "{\"op\": \"cast\", \"in\": [\"t0\"], \"out\": \"output_0\"}]}";
    float w[2] = {0.5f, -1.0f};
    size_t npy_size;
    unsigned char *npy = npy_build("<f4", "(2,)", w, sizeof w, &npy_size);
    struct member extra[] = {{"sg00/w.npy", npy, npy_size}};
    struct loaded l;
    uint16_t in[4] = {0x3c00, 0x4000, 0x4200, 0x4400}; /* 1 2 3 4 */
    uint16_t out[4] = {0};
    void *io[2];

    ASSERT_OK(load_with(def, prog, extra, 1, &l));
    io[io_index(&l, "a_input")] = in;
    io[io_index(&l, "output_0")] = out;
    ASSERT_OK(nrtemu__program_run(FUNC, l.program, io, 0, NULL, NULL));
    ASSERT_EQ(out[0], 0x3e00); /* 1.5 */
    ASSERT_EQ(out[1], 0x3c00); /* 1 */
    ASSERT_EQ(out[2], 0x4300); /* 3.5 */
    ASSERT_EQ(out[3], 0x4200); /* 3 */
    /* Runs again on the same temporaries. */
    in[0] = 0x0000;
    ASSERT_OK(nrtemu__program_run(FUNC, l.program, io, 0, NULL, NULL));
    ASSERT_EQ(out[0], 0x3800); /* 0.5 */
    unload(&l);
    free(npy);
}

/* Profile observer: records names and the shapes of op 0, and the notes
 * of ops 0 and 1. */
struct observed {
    size_t count;
    char first[128];
    char note0[64];
    bool note1_null;
    uint64_t last_end;
    bool ordered;
};

static void
observe(void *ctx, size_t index, const char *op, const char *shapes,
        const char *note, uint64_t start_ns, uint64_t end_ns)
{
    struct observed *o = ctx;

    if (index == 0) {
        snprintf(o->first, sizeof o->first, "%s: %s", op, shapes);
        snprintf(o->note0, sizeof o->note0, "%s", note ? note : "(null)");
        o->ordered = true;
    }
    if (index == 1) {
        o->note1_null = note == NULL;
    }
    o->ordered = o->ordered && index == o->count && start_ns <= end_ns &&
                 start_ns >= o->last_end;
    o->last_end = end_ns;
    o->count++;
}

/*
 * A program using most ops: x [4,3] f32, idx [2] int32 in; logits =
 * x @ w (w [3,5] const), softmax, max, argmax, take of rows, concat,
 * slice with negative step, transpose, reshape, iota, full, where,
 * compare.
 */
static void
test_many_ops(void)
{
    static const char *def =
        "{\"var\": {"
        "\"x\": {\"type\": \"input\", \"size\": 48, \"shape\": [4, 3], "
        "\"dtype\": \"float32\"},"
        "\"idx\": {\"type\": \"input\", \"size\": 8, \"shape\": [2], "
        "\"dtype\": \"int32\"},"
        "\"w\": {\"type\": \"file\", \"file_name\": \"w.npy\"},"
        "\"output_0\": {\"type\": \"output\", \"size\": 80, \"shape\": [4, "
        "5], \"dtype\": \"float32\"},"
        "\"output_1\": {\"type\": \"output\", \"size\": 32, \"shape\": [4], "
        "\"dtype\": \"int64\"},"
        "\"output_2\": {\"type\": \"output\", \"size\": 24, \"shape\": [2, "
        "3], \"dtype\": \"float32\"},"
        "\"output_3\": {\"type\": \"output\", \"size\": 24, \"shape\": [3, "
        "2], \"dtype\": \"float32\"},"
        "\"output_4\": {\"type\": \"output\", \"size\": 48, \"shape\": [12], "
        "\"dtype\": \"float32\"}},"
        "\"emulator_program\": \"program.json\"}";
    static const char *prog =
        "{\"format\": \"nrtpy-emulator-program\", \"version\": 1,"
        "\"buffers\": {"
        "\"x\": {\"kind\": \"input\", \"dtype\": \"float32\", \"shape\": [4, "
        "3]},"
        "\"idx\": {\"kind\": \"input\", \"dtype\": \"int32\", \"shape\": "
        "[2]},"
        "\"w\": {\"kind\": \"const\", \"dtype\": \"float32\", \"shape\": [3, "
        "5], \"var\": \"w\"},"
        "\"logits\": {\"kind\": \"temp\", \"dtype\": \"float32\", \"shape\": "
        "[4, 5]},"
        "\"rows\": {\"kind\": \"temp\", \"dtype\": \"float32\", \"shape\": "
        "[2, 3]},"
        "\"cat\": {\"kind\": \"temp\", \"dtype\": \"float32\", \"shape\": [6, "
        "3]},"
        "\"io\": {\"kind\": \"temp\", \"dtype\": \"float32\", \"shape\": [4, "
        "3]},"
        "\"neg\": {\"kind\": \"temp\", \"dtype\": \"bool\", \"shape\": [4, "
        "3]},"
        "\"zero\": {\"kind\": \"temp\", \"dtype\": \"float32\", \"shape\": "
        "[]},"
        "\"output_0\": {\"kind\": \"output\", \"dtype\": \"float32\", "
        "\"shape\": [4, 5]},"
        "\"output_1\": {\"kind\": \"output\", \"dtype\": \"int64\", "
        "\"shape\": [4]},"
        "\"output_2\": {\"kind\": \"output\", \"dtype\": \"float32\", "
        "\"shape\": [2, 3]},"
        "\"output_3\": {\"kind\": \"output\", \"dtype\": \"float32\", "
        "\"shape\": [3, 2]},"
        "\"output_4\": {\"kind\": \"output\", \"dtype\": \"float32\", "
        "\"shape\": [12]}},"
        "\"ops\": ["
        /* 0 */ "{\"op\": \"matmul\", \"in\": [\"x\", \"w\"], \"out\": "
        "\"logits\", \"note\": \"nc_matmul (tensor) k.py:3\"},"
        /* 1 */ "{\"op\": \"softmax\", \"in\": [\"logits\"], \"out\": "
        "\"output_0\", \"axis\": -1},"
        /* 2 */ "{\"op\": \"argmax\", \"in\": [\"logits\"], \"out\": "
        "\"output_1\", \"axis\": 1},"
        /* 3 */ "{\"op\": \"take\", \"in\": [\"x\", \"idx\"], \"out\": "
        "\"rows\", \"axis\": 0},"
        /* 4 */ "{\"op\": \"concatenate\", \"in\": [\"x\", \"rows\"], "
        "\"out\": \"cat\", \"axis\": 0},"
        /* 5 */ "{\"op\": \"slice\", \"in\": [\"cat\"], \"out\": "
        "\"output_2\", \"start\": [5, 0], \"step\": [-5, 1]},"
        /* 6 */ "{\"op\": \"transpose\", \"in\": [\"output_2\"], \"out\": "
        "\"output_3\", \"perm\": [1, 0]},"
        /* 7 */ "{\"op\": \"iota\", \"out\": \"io\", \"axis\": 0},"
        /* 8 */ "{\"op\": \"full\", \"out\": \"zero\", \"value\": 0},"
        /* 9 */ "{\"op\": \"less\", \"in\": [\"x\", \"zero\"], \"out\": "
        "\"neg\"},"
        /* 10 */ "{\"op\": \"where\", \"in\": [\"neg\", \"io\", \"x\"], "
        "\"out\": \"io\"},"
        /* 11 */ "{\"op\": \"reshape\", \"in\": [\"io\"], \"out\": "
        "\"output_4\"},"
        /* 12, 13: rewrite an output; an op whose out is its operand. */
        "{\"op\": \"transpose\", \"in\": [\"output_3\"], \"out\": "
        "\"output_2\"},"
        "{\"op\": \"softmax\", \"in\": [\"output_4\"], \"out\": "
        "\"output_4\"}]}";
    float w[15], x[12], out0[20], out2[6], out3[6], out4[12];
    int32_t idx[2] = {3, -4};
    int64_t out1[4];
    size_t npy_size;
    unsigned char *npy;
    struct loaded l;
    struct observed obs = {0};
    void *io[7];

    for (int i = 0; i < 15; i++) {
        w[i] = (float)((i * 7) % 5) - 2.0f;
    }
    for (int i = 0; i < 12; i++) {
        x[i] = (float)((i * 5) % 7) - 3.0f;
    }
    npy = npy_build("<f4", "(3, 5)", w, sizeof w, &npy_size);
    {
        struct member extra[] = {{"sg00/w.npy", npy, npy_size}};
        ASSERT_OK(load_with(def, prog, extra, 1, &l));
    }
    io[io_index(&l, "x")] = x;
    io[io_index(&l, "idx")] = idx;
    io[io_index(&l, "output_0")] = out0;
    io[io_index(&l, "output_1")] = out1;
    io[io_index(&l, "output_2")] = out2;
    io[io_index(&l, "output_3")] = out3;
    io[io_index(&l, "output_4")] = out4;
    ASSERT_OK(nrtemu__program_run(FUNC, l.program, io, 0, observe, &obs));
    ASSERT_UEQ(obs.count, 14);
    ASSERT_TRUE(obs.ordered);
    {
        /* The bytes of all but the const; the work of the costliest op,
         * the matmul's cost hook: 4 x 5 results of 3 products each. */
        uint64_t bytes, work;
        nrtemu__program_footprint(l.program, &bytes, &work);
        ASSERT_UEQ(bytes, 504);
        ASSERT_UEQ(work, 60);
    }
    ASSERT_STR_EQ(obs.first,
                  "matmul: float32[4,3], float32[3,5] -> float32[4,5]");
    ASSERT_STR_EQ(obs.note0, "nc_matmul (tensor) k.py:3");
    ASSERT_TRUE(obs.note1_null);

    for (int r = 0; r < 4; r++) {
        double logits[5], m = -INFINITY, s = 0;
        int64_t best = 0;
        for (int c = 0; c < 5; c++) {
            logits[c] = 0;
            for (int k = 0; k < 3; k++) {
                logits[c] += (double)x[r * 3 + k] * w[k * 5 + c];
            }
            if (logits[c] > m) {
                m = logits[c];
                best = c;
            }
        }
        for (int c = 0; c < 5; c++) {
            s += exp(logits[c] - m);
        }
        for (int c = 0; c < 5; c++) {
            ASSERT_TRUE(fabs(out0[r * 5 + c] - exp(logits[c] - m) / s) < 1e-6);
        }
        ASSERT_EQ(out1[r], best);
    }
    /* cat = x rows 0..3, x[3], x[0]; slice rows 5 and 0: x[0], x[0]. */
    {
        float want2[6] = {x[0], x[1], x[2], x[0], x[1], x[2]};
        float want3[6];
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 2; j++) {
                want3[i * 2 + j] = want2[j * 3 + i];
            }
        }
        for (int i = 0; i < 6; i++) {
            ASSERT_TRUE(out3[i] == want3[i]);
            ASSERT_TRUE(out2[i] == want2[i]); /* transposed back */
        }
    }
    {
        /* where(x < 0, iota, x), then softmax in place. */
        double want[12], m = -INFINITY, s = 0;
        for (int i = 0; i < 12; i++) {
            want[i] = x[i] < 0 ? (float)(i / 3) : x[i];
            m = fmax(m, want[i]);
        }
        for (int i = 0; i < 12; i++) {
            s += exp(want[i] - m);
        }
        for (int i = 0; i < 12; i++) {
            ASSERT_TRUE(fabs(out4[i] - exp(want[i] - m) / s) < 1e-6);
        }
    }
    unload(&l);
    free(npy);
}

/* take with an index out of range fails the run with NRT_EXEC_OOB. */
static void
test_take_out_of_bounds(void)
{
    static const char *def =
        "{\"var\": {"
        "\"data\": {\"type\": \"input\", \"size\": 16, \"shape\": [4], "
        "\"dtype\": \"float32\"},"
        "\"idx\": {\"type\": \"input\", \"size\": 16, \"shape\": [2], "
        "\"dtype\": \"int64\"},"
        "\"output_0\": {\"type\": \"output\", \"size\": 8, \"shape\": [2], "
        "\"dtype\": \"float32\"}},"
        "\"emulator_program\": \"program.json\"}";
    static const char *prog =
        "{\"format\": \"nrtpy-emulator-program\", \"version\": 1,"
        "\"buffers\": {"
        "\"data\": {\"kind\": \"input\", \"dtype\": \"float32\", \"shape\": "
        "[4]},"
        "\"idx\": {\"kind\": \"input\", \"dtype\": \"int64\", \"shape\": "
        "[2]},"
        "\"t\": {\"kind\": \"temp\", \"dtype\": \"float32\", \"shape\": "
        "[4]},"
        "\"output_0\": {\"kind\": \"output\", \"dtype\": \"float32\", "
        "\"shape\": [2]}},"
        "\"ops\": ["
        "{\"op\": \"neg\", \"in\": [\"data\"], \"out\": \"t\"},"
        "{\"op\": \"take\", \"in\": [\"t\", \"idx\"], \"out\": "
        "\"output_0\", \"axis\": 0}]}";
    float data[4] = {1, 2, 3, 4}, out[2] = {0, 0};
    int64_t idx[2] = {-1, 7};
    struct loaded l;
    void *io[3];

    ASSERT_OK(load_with(def, prog, NULL, 0, &l));
    io[io_index(&l, "data")] = data;
    io[io_index(&l, "idx")] = idx;
    io[io_index(&l, "output_0")] = out;
    ASSERT_STATUS(nrtemu__program_run(FUNC, l.program, io, 0, NULL, NULL),
                  NRT_EXEC_OOB);
    ASSERT_UEQ(NRT_EXEC_OOB, 1006);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "op 1 (take): index 7 out of bounds for axis 0 with "
                        "size 4");
    idx[1] = -4;
    ASSERT_OK(nrtemu__program_run(FUNC, l.program, io, 0, NULL, NULL));
    ASSERT_TRUE(out[0] == -4.0f && out[1] == -1.0f);
    idx[0] = -5;
    ASSERT_STATUS(nrtemu__program_run(FUNC, l.program, io, 0, NULL, NULL),
                  NRT_EXEC_OOB);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "index -5 out of bounds");

    /* A deadline already past (by a second: the deadline clock may lag
     * the monotonic one by a few milliseconds) stops the run before its
     * first op. */
    {
        struct timespec ts;
        uint64_t past;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        past = ts.tv_sec > 1 ? ((uint64_t)ts.tv_sec - 1) * 1000000000u : 1;
        ASSERT_STATUS(
            nrtemu__program_run(FUNC, l.program, io, past, NULL, NULL),
            NRT_TIMEOUT);
    }
    unload(&l);
}

/*
 * dynamic_slice and dynamic_update_slice through a run: starts from an
 * input, "clamp" moving them into range and "check" failing the
 * execution with NRT_EXEC_OOB before anything is written; the update
 * written in place into a temp (the op's out is its operand).
 */
static void
test_dynamic_slice_run(void)
{
    static const char *def =
        "{\"var\": {"
        "\"x\": {\"type\": \"input\", \"size\": 48, \"shape\": [4, 3], "
        "\"dtype\": \"float32\"},"
        "\"st\": {\"type\": \"input\", \"size\": 16, \"shape\": [2], "
        "\"dtype\": \"int64\"},"
        "\"output_0\": {\"type\": \"output\", \"size\": 24, \"shape\": [2, "
        "3], \"dtype\": \"float32\"},"
        "\"output_1\": {\"type\": \"output\", \"size\": 48, \"shape\": [4, "
        "3], \"dtype\": \"float32\"},"
        "\"output_2\": {\"type\": \"output\", \"size\": 8, \"shape\": [1, 2], "
        "\"dtype\": \"float32\"}},"
        "\"emulator_program\": \"program.json\"}";
    static const char *prog_fmt =
        "{\"format\": \"nrtpy-emulator-program\", \"version\": 1,"
        "\"buffers\": {"
        "\"x\": {\"kind\": \"input\", \"dtype\": \"float32\", \"shape\": "
        "[4, 3]},"
        "\"st\": {\"kind\": \"input\", \"dtype\": \"int64\", \"shape\": [2]},"
        "\"t\": {\"kind\": \"temp\", \"dtype\": \"float32\", \"shape\": "
        "[4, 3]},"
        "\"output_0\": {\"kind\": \"output\", \"dtype\": \"float32\", "
        "\"shape\": [2, 3]},"
        "\"output_1\": {\"kind\": \"output\", \"dtype\": \"float32\", "
        "\"shape\": [4, 3]},"
        "\"output_2\": {\"kind\": \"output\", \"dtype\": \"float32\", "
        "\"shape\": [1, 2]}},"
        "\"ops\": ["
        "{\"op\": \"dynamic_slice\", \"in\": [\"x\", \"st\"], \"out\": "
        "\"output_0\", \"bounds\": \"%s\"},"
        "{\"op\": \"neg\", \"in\": [\"x\"], \"out\": \"t\"},"
        "{\"op\": \"dynamic_slice\", \"in\": [\"x\", \"st\"], \"out\": "
        "\"output_2\", \"bounds\": \"%s\"},"
        "{\"op\": \"dynamic_update_slice\", \"in\": [\"t\", \"output_0\", "
        "\"st\"], \"out\": \"t\", \"bounds\": \"%s\"},"
        "{\"op\": \"copy\", \"in\": [\"t\"], \"out\": \"output_1\"}]}";
    char prog[4096];
    float x[12], o0[6], o1[12], o2[2];
    int64_t st[2];
    struct loaded l;
    void *io[5];

    for (int i = 0; i < 12; i++) {
        x[i] = (float)i;
    }
    /* clamp: [9, -7] is [2, 0] for the [2, 3] window and [3, 0] for the
     * [1, 2] one; the window read is written back in place. */
    snprintf(prog, sizeof prog, prog_fmt, "clamp", "clamp", "clamp");
    ASSERT_OK(load_with(def, prog, NULL, 0, &l));
    io[io_index(&l, "x")] = x;
    io[io_index(&l, "st")] = st;
    io[io_index(&l, "output_0")] = o0;
    io[io_index(&l, "output_1")] = o1;
    io[io_index(&l, "output_2")] = o2;
    st[0] = 9;
    st[1] = -7;
    ASSERT_OK(nrtemu__program_run(FUNC, l.program, io, 0, NULL, NULL));
    for (int i = 0; i < 6; i++) {
        ASSERT_TRUE(o0[i] == (float)(6 + i));
    }
    ASSERT_TRUE(o2[0] == 9.0f && o2[1] == 10.0f);
    for (int i = 0; i < 12; i++) {
        ASSERT_TRUE(o1[i] == (i < 6 ? -(float)i : (float)i));
    }
    st[0] = INT64_MIN;
    st[1] = INT64_MAX;
    ASSERT_OK(nrtemu__program_run(FUNC, l.program, io, 0, NULL, NULL));
    ASSERT_TRUE(o0[0] == 0.0f && o0[5] == 5.0f);
    ASSERT_TRUE(o2[0] == 1.0f && o2[1] == 2.0f);
    unload(&l);

    /* check: in range it reads and writes the same; out of range the
     * run fails at the first op and the outputs keep what they held. */
    snprintf(prog, sizeof prog, prog_fmt, "check", "clamp", "check");
    ASSERT_OK(load_with(def, prog, NULL, 0, &l));
    io[io_index(&l, "x")] = x;
    io[io_index(&l, "st")] = st;
    io[io_index(&l, "output_0")] = o0;
    io[io_index(&l, "output_1")] = o1;
    io[io_index(&l, "output_2")] = o2;
    st[0] = 1;
    st[1] = 0;
    ASSERT_OK(nrtemu__program_run(FUNC, l.program, io, 0, NULL, NULL));
    for (int i = 0; i < 6; i++) {
        ASSERT_TRUE(o0[i] == (float)(3 + i));
    }
    for (int i = 0; i < 12; i++) {
        ASSERT_TRUE(o1[i] == (i >= 3 && i < 9 ? (float)i : -(float)i));
    }
    memset(o0, 0, sizeof o0);
    st[0] = 3;
    ASSERT_STATUS(nrtemu__program_run(FUNC, l.program, io, 0, NULL, NULL),
                  NRT_EXEC_OOB);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "op 0 (dynamic_slice): start 3 of dimension 0 is out "
                        "of bounds: a window of 2 in 4 starts in [0, 2]");
    ASSERT_TRUE(o0[0] == 0.0f);
    st[0] = 0;
    st[1] = INT64_MIN;
    ASSERT_STATUS(nrtemu__program_run(FUNC, l.program, io, 0, NULL, NULL),
                  NRT_EXEC_OOB);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "start -9223372036854775808 of dimension 1 is out of "
                        "bounds: a window of 3 in 3 starts in [0, 0]");
    unload(&l);
}

/* A bfloat16 constant saved as raw bytes ('|V2'), and a float32 npy
 * member that is not aligned in the archive. */
static void
test_const_void_npy(void)
{
    static const char *def =
        "{\"var\": {"
        "\"c\": {\"type\": \"file\", \"file_name\": \"c.npy\"},"
        "\"output_0\": {\"type\": \"output\", \"size\": 12, \"shape\": [3], "
        "\"dtype\": \"float32\"}},"
        "\"emulator_program\": \"program.json\"}";
    static const char *prog =
        "{\"format\": \"nrtpy-emulator-program\", \"version\": 1,"
        "\"buffers\": {"
        "\"c\": {\"kind\": \"const\", \"dtype\": \"bfloat16\", \"shape\": "
        "[3], \"var\": \"c\"},"
        "\"output_0\": {\"kind\": \"output\", \"dtype\": \"float32\", "
        "\"shape\": [3]}},"
        "\"ops\": [{\"op\": \"cast\", \"in\": [\"c\"], \"out\": "
        "\"output_0\"}]}";
    uint16_t c[3] = {0x3f80, 0xc000, 0x7f80};
    float out[3];
    size_t npy_size;
    unsigned char *npy = npy_build("|V2", "(3,)", c, sizeof c, &npy_size);
    struct member extra[] = {{"sg00/c.npy", npy, npy_size}};
    struct loaded l;
    void *io[1];

    ASSERT_OK(load_with(def, prog, extra, 1, &l));
    io[io_index(&l, "output_0")] = out;
    ASSERT_OK(nrtemu__program_run(FUNC, l.program, io, 0, NULL, NULL));
    ASSERT_TRUE(out[0] == 1.0f && out[1] == -2.0f && out[2] == INFINITY);
    unload(&l);
    free(npy);
}

/* ------------------------------------------------------------------ */
/* Validation: one case per rule                                      */

/* def.json of the validation cases: a [2,3] f32 input, [3] f32 input,
 * int32 input, f32 const, [2,3] f32 output. */
static const char *vdef =
    "{\"var\": {"
    "\"a\": {\"type\": \"input\", \"size\": 24, \"shape\": [2, 3], "
    "\"dtype\": \"float32\"},"
    "\"b\": {\"type\": \"input\", \"size\": 12, \"shape\": [3], "
    "\"dtype\": \"float32\"},"
    "\"i\": {\"type\": \"input\", \"size\": 8, \"shape\": [2], "
    "\"dtype\": \"int32\"},"
    "\"raw\": {\"type\": \"input\", \"size\": 16},"
    "\"w\": {\"type\": \"file\", \"file_name\": \"w.npy\"},"
    "\"notfile\": {\"type\": \"tmp-buf\", \"size\": 4},"
    "\"output_0\": {\"type\": \"output\", \"size\": 24, \"shape\": [2, 3], "
    "\"dtype\": \"float32\"}},"
    "\"emulator_program\": \"program.json\"}";

#define VHEAD "{\"format\": \"nrtpy-emulator-program\", \"version\": 1,"
#define VBUFS                                                                \
    "\"buffers\": {"                                                         \
    "\"a\": {\"kind\": \"input\", \"dtype\": \"float32\", \"shape\": [2, "   \
    "3]},"                                                                   \
    "\"b\": {\"kind\": \"input\", \"dtype\": \"float32\", \"shape\": [3]},"  \
    "\"i\": {\"kind\": \"input\", \"dtype\": \"int32\", \"shape\": [2]},"    \
    "\"w\": {\"kind\": \"const\", \"dtype\": \"float32\", \"shape\": [3], "  \
    "\"var\": \"w\"},"                                                       \
    "\"t\": {\"kind\": \"temp\", \"dtype\": \"float32\", \"shape\": [2, "    \
    "3]},"                                                                   \
    "\"ti\": {\"kind\": \"temp\", \"dtype\": \"int32\", \"shape\": [2, 3]}," \
    "\"tb\": {\"kind\": \"temp\", \"dtype\": \"bool\", \"shape\": [2, 3]},"  \
    "\"t4\": {\"kind\": \"temp\", \"dtype\": \"float32\", \"shape\": [4]},"  \
    "\"t3\": {\"kind\": \"temp\", \"dtype\": \"float32\", \"shape\": [3]},"  \
    "\"s\": {\"kind\": \"temp\", \"dtype\": \"float32\", \"shape\": []},"    \
    "\"output_0\": {\"kind\": \"output\", \"dtype\": \"float32\", "          \
    "\"shape\": [2, 3]}}"
/* Ops 0-4, before the op under test: write output_0 and the temps. */
#define VLAST "{\"op\": \"copy\", \"in\": [\"a\"], \"out\": \"output_0\"}"
#define VPRE                                                     \
    VLAST ", {\"op\": \"full\", \"out\": \"t4\", \"value\": 1}," \
          "{\"op\": \"full\", \"out\": \"ti\", \"value\": 1},"   \
          "{\"op\": \"full\", \"out\": \"s\", \"value\": 1},"    \
          "{\"op\": \"full\", \"out\": \"t\", \"value\": 1}"

struct vcase {
    const char *name;
    const char *program; /* NULL: def.json without emulator_program */
    const char *want;    /* in the detail */
};

static void
run_case(const struct vcase *c)
{
    float w[3] = {1, 2, 3};
    size_t npy_size;
    unsigned char *npy = npy_build("<f4", "(3,)", w, sizeof w, &npy_size);
    struct member extra[] = {{"sg00/w.npy", npy, npy_size}};
    struct loaded l;
    NRT_STATUS st;

    st = load_with(vdef, c->program, extra, 1, &l);
    if (st != NRT_INVALID) {
        TEST_FAIL_("%s: got %s, expected NRT_INVALID", c->name,
                   nrt_get_status_as_str(st));
    }
    if (strstr(nrtemu_last_error(), c->want) == NULL) {
        TEST_FAIL_("%s: \"%s\" does not contain \"%s\"", c->name,
                   nrtemu_last_error(), c->want);
    }
    unload(&l);
    free(npy);
}

#define OPS(...) VHEAD VBUFS ", \"ops\": [" __VA_ARGS__ "]}"

static void
test_validation_program_level(void)
{
    static const struct vcase cases[] = {
        {"valid program passes", NULL, ""},
        {"format", "{\"format\": \"other\", \"version\": 1}",
         "\"format\" must be"},
        {"version", "{\"format\": \"nrtpy-emulator-program\", \"version\": 2}",
         "\"version\" must be 1"},
        {"buffers object", VHEAD "\"buffers\": [], \"ops\": []}",
         "\"buffers\" must be an object"},
        {"ops list", VHEAD VBUFS ", \"ops\": {}}", "\"ops\" must be a list"},
        {"unknown kind",
         VHEAD "\"buffers\": {\"x\": {\"kind\": \"scratch\", \"dtype\": "
               "\"float32\", \"shape\": [1]}}, \"ops\": []}",
         "unknown kind \"scratch\""},
        {"bad dtype",
         VHEAD "\"buffers\": {\"x\": {\"kind\": \"temp\", \"dtype\": "
               "\"float128\", \"shape\": [1]}}, \"ops\": []}",
         "buffer 'x': \"dtype\" must name"},
        {"nine dims",
         VHEAD "\"buffers\": {\"x\": {\"kind\": \"temp\", \"dtype\": "
               "\"int8\", \"shape\": [1,1,1,1,1,1,1,1,1]}}, \"ops\": []}",
         "more than 8 dimensions"},
        {"negative dim",
         VHEAD "\"buffers\": {\"x\": {\"kind\": \"temp\", \"dtype\": "
               "\"int8\", \"shape\": [2, -1]}}, \"ops\": []}",
         "non-negative integers"},
        {"duplicate buffer",
         VHEAD "\"buffers\": {\"x\": {\"kind\": \"temp\", \"dtype\": "
               "\"int8\", \"shape\": [1]}, \"x\": {\"kind\": \"temp\", "
               "\"dtype\": \"int8\", \"shape\": [1]}}, \"ops\": []}",
         "buffer 'x' is defined twice"},
        {"input not in def.json",
         VHEAD "\"buffers\": {\"zz\": {\"kind\": \"input\", \"dtype\": "
               "\"int8\", \"shape\": [1]}}, \"ops\": []}",
         "def.json has no input variable 'zz'"},
        {"output kind of an input",
         VHEAD "\"buffers\": {\"a\": {\"kind\": \"output\", \"dtype\": "
               "\"float32\", \"shape\": [2, 3]}}, \"ops\": []}",
         "def.json has no output variable 'a'"},
        {"input size",
         VHEAD "\"buffers\": {\"a\": {\"kind\": \"input\", \"dtype\": "
               "\"float32\", \"shape\": [3]}}, \"ops\": []}",
         "does not match the 24 bytes"},
        {"input dtype",
         VHEAD "\"buffers\": {\"a\": {\"kind\": \"input\", \"dtype\": "
               "\"int32\", \"shape\": [2, 3]}}, \"ops\": []}",
         "but def.json declares input 'a' as float32[2,3]"},
        {"input shape",
         VHEAD "\"buffers\": {\"a\": {\"kind\": \"input\", \"dtype\": "
               "\"float32\", \"shape\": [3, 2]}}, \"ops\": []}",
         "declares input 'a' as float32[2,3]"},
        {"const without var",
         VHEAD "\"buffers\": {\"c\": {\"kind\": \"const\", \"dtype\": "
               "\"float32\", \"shape\": [3]}}, \"ops\": []}",
         "a const needs \"var\""},
        {"const var not a file",
         VHEAD "\"buffers\": {\"c\": {\"kind\": \"const\", \"dtype\": "
               "\"float32\", \"shape\": [1], \"var\": \"notfile\"}}, "
               "\"ops\": []}",
         "no variable 'notfile' of type \"file\""},
        {"const dtype",
         VHEAD "\"buffers\": {\"c\": {\"kind\": \"const\", \"dtype\": "
               "\"int32\", \"shape\": [3], \"var\": \"w\"}}, \"ops\": []}",
         "buffer 'c' is int32, but 'sg00/w.npy' holds float32"},
        {"const shape",
         VHEAD "\"buffers\": {\"c\": {\"kind\": \"const\", \"dtype\": "
               "\"float32\", \"shape\": [1, 3], \"var\": \"w\"}}, "
               "\"ops\": []}",
         "buffer 'c' is float32[1,3], but 'sg00/w.npy' holds float32[3]"},
        {"output never written", VHEAD VBUFS ", \"ops\": []}",
         "output 'output_0' is never written"},
        {"def.json output missing", VHEAD "\"buffers\": {}, \"ops\": []}",
         "def.json output 'output_0' is not an output buffer"},
    };

    /* The first case: a valid program, to show the harness loads. */
    {
        float w[3] = {1, 2, 3};
        size_t npy_size;
        unsigned char *npy = npy_build("<f4", "(3,)", w, sizeof w, &npy_size);
        struct member extra[] = {{"sg00/w.npy", npy, npy_size}};
        struct loaded l;
        ASSERT_OK(load_with(vdef, OPS(VLAST), extra, 1, &l));
        unload(&l);
        free(npy);
    }
    {
        /* No emulator_program in def.json. */
        struct loaded l;
        static const char *def = "{\"var\": {}}";
        ASSERT_STATUS(load_with(def, NULL, NULL, 0, &l), NRT_INVALID);
        ASSERT_STR_CONTAINS(nrtemu_last_error(),
                            "sg00 has no emulator program: it needs Neuron "
                            "hardware");
        unload(&l);
    }
    for (size_t i = 1; i < sizeof cases / sizeof cases[0]; i++) {
        run_case(&cases[i]);
    }
}

static void
test_validation_ops(void)
{
    static const struct vcase cases[] = {
        {"unknown op",
         OPS("{\"op\": \"frobnicate\", \"in\": [], \"out\": "
             "\"t\"}"),
         "op 0: unknown op \"frobnicate\""},
        {"operand count",
         OPS("{\"op\": \"add\", \"in\": [\"a\"], \"out\": \"t\"}," VLAST),
         "op 0 (add): takes 2 operands, not 1"},
        {"concatenate without operands",
         OPS("{\"op\": \"concatenate\", \"in\": [], \"out\": \"t\"}," VLAST),
         "op 0 (concatenate): takes at least one operand"},
        {"unknown operand",
         OPS("{\"op\": \"neg\", \"in\": [\"nope\"], \"out\": \"t\"}," VLAST),
         "op 0 (neg): in[0] is not the name of a buffer ('nope')"},
        {"unknown out",
         OPS("{\"op\": \"neg\", \"in\": [\"a\"], \"out\": \"nope\"}," VLAST),
         "op 0 (neg): \"out\" must be the name of a buffer"},
        {"write an input",
         OPS(VPRE ", {\"op\": \"neg\", \"in\": [\"b\"], \"out\": \"b\"}"),
         "op 5 (neg): out 'b' is an input"},
        {"write a const",
         OPS(VPRE ", {\"op\": \"neg\", \"in\": [\"b\"], \"out\": \"w\"}"),
         "op 5 (neg): out 'w' is a const"},
        {"read before write",
         OPS("{\"op\": \"neg\", \"in\": [\"t\"], \"out\": \"output_0\"}"),
         "op 0 (neg): in[0] 't' is read before any op writes it"},
        {"bad compute dtype",
         OPS("{\"op\": \"neg\", \"in\": [\"a\"], \"out\": \"t\", \"dtype\": "
             "\"float128\"}," VLAST),
         "op 0 (neg): \"dtype\" must name"},
        {"broadcast",
         OPS(VPRE ", {\"op\": \"add\", \"in\": [\"a\", \"t4\"], \"out\": "
                  "\"t\"}"),
         "op 5 (add): in[1] 't4' of shape [4] does not broadcast to out 't' "
         "of shape [2,3]"},
        {"compare out not bool",
         OPS(VPRE ", {\"op\": \"less\", \"in\": [\"a\", \"b\"], \"out\": "
                  "\"t\"}"),
         "op 5 (less): out 't' is float32; the result is bool"},
        {"float-only op on ints",
         OPS(VPRE ", {\"op\": \"exp\", \"in\": [\"a\"], \"out\": \"ti\"}"),
         "op 5 (exp): the compute dtype int32 is not a float"},
        {"copy converts",
         OPS(VPRE ", {\"op\": \"copy\", \"in\": [\"a\"], \"out\": \"ti\"}"),
         "op 5 (copy): out 'ti' is int32 but in[0] 'a' is float32"},
        {"matmul contraction",
         OPS(VPRE ", {\"op\": \"matmul\", \"in\": [\"a\", \"a\"], \"out\": "
                  "\"t\"}"),
         "op 5 (matmul): in[0] 'a' [2,3] and in[1] 'a' [2,3]: the "
         "contracted dimensions 3 and 2 differ"},
        {"matmul out shape",
         OPS(VPRE ", {\"op\": \"matmul\", \"in\": [\"a\", \"b\"], \"out\": "
                  "\"t\"}"),
         "op 5 (matmul): out 't' has shape [2,3]; the result has [2]"},
        {"matmul scalar",
         OPS(VPRE ", {\"op\": \"matmul\", \"in\": [\"s\", \"b\"], \"out\": "
                  "\"t\"}"),
         "op 5 (matmul): in[0] 's' is a scalar"},
        {"reduce axis range",
         OPS(VPRE ", {\"op\": \"sum\", \"in\": [\"a\"], \"out\": \"t3\", "
                  "\"axes\": [2]}"),
         "op 5 (sum): axes[0] = 2 is out of range for 2 dimensions"},
        {"reduce repeated axis",
         OPS(VPRE ", {\"op\": \"sum\", \"in\": [\"a\"], \"out\": \"s\", "
                  "\"axes\": [0, -2]}"),
         "op 5 (sum): axis 0 is repeated"},
        {"reduce out shape",
         OPS(VPRE ", {\"op\": \"sum\", \"in\": [\"a\"], \"out\": \"t4\", "
                  "\"axes\": [0], \"keepdims\": true}"),
         "op 5 (sum): out 't4' has shape [4]; the result has [1,3]"},
        {"reduce keepdims type",
         OPS(VPRE ", {\"op\": \"sum\", \"in\": [\"a\"], \"out\": \"s\", "
                  "\"keepdims\": 1}"),
         "op 5 (sum): \"keepdims\" must be true or false"},
        {"argmax out dtype",
         OPS(VPRE ", {\"op\": \"argmax\", \"in\": [\"a\"], \"out\": \"t3\", "
                  "\"axis\": 0}"),
         "op 5 (argmax): out 't3' is float32; the result is int64"},
        {"argmax axis",
         OPS(VPRE ", {\"op\": \"argmax\", \"in\": [\"a\"], \"out\": \"t3\", "
                  "\"axis\": 5}"),
         "op 5 (argmax): \"axis\" 5 is out of range for 2 dimensions"},
        {"softmax on ints",
         OPS(VPRE ", {\"op\": \"softmax\", \"in\": [\"ti\"], \"out\": "
                  "\"ti\"}"),
         "op 5 (softmax): the compute dtype int32 is not a float"},
        {"transpose perm",
         OPS(VPRE ", {\"op\": \"transpose\", \"in\": [\"a\"], \"out\": "
                  "\"t\", \"perm\": [0, 0]}"),
         "op 5 (transpose): \"perm\" is not a permutation"},
        {"transpose perm length",
         OPS(VPRE ", {\"op\": \"transpose\", \"in\": [\"a\"], \"out\": "
                  "\"t\", \"perm\": [0]}"),
         "op 5 (transpose): \"perm\" must be a list of 2 integers"},
        {"transpose out shape",
         OPS(VPRE ", {\"op\": \"transpose\", \"in\": [\"a\"], \"out\": "
                  "\"t\"}"),
         "op 5 (transpose): out 't' has shape [2,3]; the result has [3,2]"},
        {"reshape count",
         OPS(VPRE ", {\"op\": \"reshape\", \"in\": [\"a\"], \"out\": "
                  "\"t4\"}"),
         "op 5 (reshape): in[0] 'a' has 6 elements and out 't4' 4"},
        {"concatenate shapes",
         OPS(VPRE ", {\"op\": \"concatenate\", \"in\": [\"a\", \"b\"], "
                  "\"out\": \"t\", \"axis\": 0}"),
         "op 5 (concatenate): in[1] 'b' of shape [3] does not fit out 't'"},
        {"concatenate total",
         OPS(VPRE ", {\"op\": \"concatenate\", \"in\": [\"a\", \"a\"], "
                  "\"out\": \"t\", \"axis\": 1}"),
         "op 5 (concatenate): the operands have 6 elements along axis 1, "
         "out 't' has 3"},
        {"slice start",
         OPS(VPRE ", {\"op\": \"slice\", \"in\": [\"t4\"], \"out\": \"t3\", "
                  "\"start\": [4], \"step\": [1]}"),
         "op 5 (slice): start[0] = 4 is out of range [0, 4)"},
        {"slice step 0",
         OPS(VPRE ", {\"op\": \"slice\", \"in\": [\"t4\"], \"out\": \"t3\", "
                  "\"start\": [0], \"step\": [0]}"),
         "op 5 (slice): step[0] is 0"},
        {"slice runs past",
         OPS(VPRE ", {\"op\": \"slice\", \"in\": [\"t4\"], \"out\": \"t3\", "
                  "\"start\": [1], \"step\": [-1]}"),
         "op 5 (slice): dimension 0: 3 elements from 1 in steps of -1 run "
         "past"},
        {"slice step INT64_MIN", /* -step overflowed (fuzzing) */
         OPS(VPRE ", {\"op\": \"slice\", \"in\": [\"t4\"], \"out\": \"t3\", "
                  "\"start\": [3], \"step\": [-9223372036854775808]}"),
         "op 5 (slice): dimension 0: 3 elements from 3 in steps of "
         "-9223372036854775808 run past"},
        {"take float indices",
         OPS(VPRE ", {\"op\": \"take\", \"in\": [\"a\", \"b\"], \"out\": "
                  "\"t\", \"axis\": 0}"),
         "op 5 (take): in[1] 'b' holds float32: indices must be integers"},
        {"take out shape",
         OPS(VPRE ", {\"op\": \"take\", \"in\": [\"a\", \"i\"], \"out\": "
                  "\"t\", \"axis\": 1}"),
         "op 5 (take): out 't' has shape [2,3]; the result has [2,2]"},
        {"dynamic_slice without bounds",
         OPS(VPRE ", {\"op\": \"dynamic_slice\", \"in\": [\"a\", \"i\"], "
                  "\"out\": \"t\"}"),
         "op 5 (dynamic_slice): \"bounds\" must be \"clamp\" or \"check\""},
        {"dynamic_slice bounds name",
         OPS(VPRE ", {\"op\": \"dynamic_slice\", \"in\": [\"a\", \"i\"], "
                  "\"out\": \"t\", \"bounds\": \"wrap\"}"),
         "op 5 (dynamic_slice): \"bounds\" \"wrap\" is not \"clamp\" or "
         "\"check\""},
        {"dynamic_slice float starts",
         OPS(VPRE ", {\"op\": \"dynamic_slice\", \"in\": [\"t4\", \"b\"], "
                  "\"out\": \"t3\", \"bounds\": \"clamp\"}"),
         "op 5 (dynamic_slice): in[1] 'b' holds float32: starts must be "
         "integers"},
        {"dynamic_slice starts shape",
         OPS(VPRE ", {\"op\": \"dynamic_slice\", \"in\": [\"t4\", \"i\"], "
                  "\"out\": \"t3\", \"bounds\": \"check\"}"),
         "op 5 (dynamic_slice): in[1] 'i' has shape [2]: the starts are one "
         "per dimension of in[0] 't4', shape [1]"},
        {"dynamic_slice rank",
         OPS(VPRE ", {\"op\": \"dynamic_slice\", \"in\": [\"a\", \"i\"], "
                  "\"out\": \"t4\", \"bounds\": \"check\"}"),
         "op 5 (dynamic_slice): out 't4' has 1 dimensions and in[0] 'a' 2: "
         "a window keeps them"},
        {"dynamic_slice dtype",
         OPS(VPRE ", {\"op\": \"dynamic_slice\", \"in\": [\"a\", \"i\"], "
                  "\"out\": \"ti\", \"bounds\": \"check\"}"),
         "op 5 (dynamic_slice): out 'ti' is int32 but in[0] 'a' is float32"},
        {"dynamic_update_slice window too big",
         OPS(VPRE ", {\"op\": \"dynamic_update_slice\", \"in\": [\"b\", "
                  "\"t4\", \"i\"], \"out\": \"t3\", \"bounds\": \"clamp\"}"),
         "op 5 (dynamic_update_slice): in[1] 't4', shape [4], does not fit "
         "in in[0] 'b', shape [3]"},
        {"dynamic_update_slice update dtype",
         OPS(VPRE ", {\"op\": \"dynamic_update_slice\", \"in\": [\"ti\", "
                  "\"t\", \"i\"], \"out\": \"ti\", \"bounds\": \"clamp\"}"),
         "op 5 (dynamic_update_slice): out 'ti' is int32 but in[1] 't' is "
         "float32"},
        {"dynamic_update_slice out shape",
         OPS(VPRE ", {\"op\": \"dynamic_update_slice\", \"in\": [\"a\", "
                  "\"t\", \"i\"], \"out\": \"t4\", \"bounds\": \"clamp\"}"),
         "op 5 (dynamic_update_slice): out 't4' has shape [4]; the result "
         "has [2,3]"},
        {"iota axis",
         OPS(VPRE ", {\"op\": \"iota\", \"out\": \"t\", \"axis\": 2}"),
         "op 5 (iota): \"axis\" 2 is out of range"},
        {"full value",
         OPS(VPRE ", {\"op\": \"full\", \"out\": \"t\", \"value\": \"pi\"}"),
         "op 5 (full): \"value\" must be a number"},
        {"full nan into ints",
         OPS(VPRE ", {\"op\": \"full\", \"out\": \"ti\", \"value\": "
                  "\"nan\"}"),
         "op 5 (full): \"value\" nan does not fit out 'ti'"},
        {"broadcast_to dtype",
         OPS(VPRE ", {\"op\": \"broadcast_to\", \"in\": [\"b\"], \"out\": "
                  "\"ti\"}"),
         "op 5 (broadcast_to): out 'ti' is int32 but in[0] 'b' is float32"},
        {"max of an empty axis",
         VHEAD "\"buffers\": {\"e\": {\"kind\": \"temp\", \"dtype\": "
               "\"float32\", \"shape\": [0, 2]}, \"m\": {\"kind\": \"temp\", "
               "\"dtype\": \"float32\", \"shape\": [2]}, \"a\": {\"kind\": "
               "\"input\", \"dtype\": \"float32\", \"shape\": [2, 3]}, "
               "\"output_0\": {\"kind\": \"output\", \"dtype\": \"float32\", "
               "\"shape\": [2, 3]}}, \"ops\": [" VLAST
               ", {\"op\": \"full\", \"out\": \"e\", \"value\": 1}, {\"op\": "
               "\"max\", \"in\": [\"e\"], \"out\": \"m\", \"axes\": [0]}]}",
         "op 2 (max): reduces a zero-size axis"},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fprintf(stderr, "   %s\n", cases[i].name);
        run_case(&cases[i]);
    }
}

/* ------------------------------------------------------------------ */
/* Hostile programs (found by fuzzing, or reading the arithmetic)     */

/* A program with temporaries `temps` (HTEMP()s), vdef's input 'a' and
 * output, and `ops` (JSON op objects). */
#define HPROG(temps, ops)                                                 \
    VHEAD "\"buffers\": {" temps                                          \
          "\"a\": {\"kind\": \"input\", \"dtype\": \"float32\", "         \
          "\"shape\": [2, 3]},"                                           \
          "\"output_0\": {\"kind\": \"output\", \"dtype\": \"float32\", " \
          "\"shape\": [2, 3]}}, \"ops\": [" ops "]}"
#define HTEMP(name, dtype, shape)                                   \
    "\"" name "\": {\"kind\": \"temp\", \"dtype\": \"" dtype "\", " \
    "\"shape\": " shape "},"

/* Load (and, when it loads, run) `prog` against vdef with a zero input. */
static NRT_STATUS
load_and_run(const char *prog, NRT_STATUS *run)
{
    float w[3] = {1, 2, 3}, a[6] = {0}, out[6];
    size_t npy_size;
    unsigned char *npy = npy_build("<f4", "(3,)", w, sizeof w, &npy_size);
    struct member extra[] = {{"sg00/w.npy", npy, npy_size}};
    struct loaded l;
    void *io[8] = {0};
    NRT_STATUS st;

    st = load_with(vdef, prog, extra, 1, &l);
    if (st == NRT_SUCCESS) {
        io[io_index(&l, "a")] = a;
        io[io_index(&l, "output_0")] = out;
        *run = nrtemu__program_run(FUNC, l.program, io, 0, NULL, NULL);
    }
    unload(&l);
    free(npy);
    return st;
}

/*
 * An op reads only the attributes of its row in the op table: others,
 * however malformed, are ignored, while its own are checked.
 */
static void
test_validation_foreign_attributes(void)
{
    static const struct vcase cases[] = {
        {"softmax axis",
         OPS("{\"op\": \"softmax\", \"in\": [\"a\"], \"out\": "
             "\"output_0\", \"axis\": \"junk\"}"),
         "op 0 (softmax): \"axis\" must be an integer"},
        {"sum keepdims",
         OPS("{\"op\": \"sum\", \"in\": [\"a\"], \"out\": "
             "\"output_0\", \"keepdims\": 3}"),
         "op 0 (sum): \"keepdims\" must be true or false"},
        {"note not a string",
         OPS("{\"op\": \"neg\", \"in\": [\"a\"], \"out\": "
             "\"output_0\", \"note\": 3}"),
         "op 0 (neg): \"note\" must be a string"},
    };
    static const char *const ignored[] = {
        HPROG("", "{\"op\": \"neg\", \"in\": [\"a\"], \"out\": \"output_0\", "
                  "\"axis\": \"junk\", \"perm\": 7, \"value\": [], "
                  "\"axes\": {}, \"keepdims\": 3, \"start\": 1, \"step\": 0}"),
        HPROG("", "{\"op\": \"softmax\", \"in\": [\"a\"], \"out\": "
                  "\"output_0\", \"axes\": \"junk\", \"keepdims\": 3, "
                  "\"value\": []}"),
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fprintf(stderr, "   %s\n", cases[i].name);
        run_case(&cases[i]);
    }
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) {
        NRT_STATUS run = NRT_INVALID;
        ASSERT_OK(load_and_run(ignored[i], &run));
        ASSERT_OK(run);
    }
}

/*
 * Dimensions after a zero were not bounded (the product was only checked
 * up to the zero): [0, 2^62, 2^62] loaded, and the kernels' strides of
 * it overflowed (a transpose: signed overflow in contiguous_strides).
 * NumPy refuses such a shape too.
 */
static void
test_hostile_huge_empty_shape(void)
{
    static const char *prog =
        HPROG(HTEMP("z", "float32", "[0, 4611686018427387904, 2]")
                  HTEMP("y", "float32", "[0, 2, 4611686018427387904]"),
              "{\"op\": \"full\", \"out\": \"z\", \"value\": 1},"
              "{\"op\": \"transpose\", \"in\": [\"z\"], \"out\": \"y\", "
              "\"perm\": [0, 2, 1]}," VLAST);
    NRT_STATUS run = NRT_SUCCESS;

    ASSERT_STATUS(load_and_run(prog, &run), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "buffer 'z': the buffer is too large");
}

/*
 * Empty outs whose other dimensions multiply to 2^40: iota and
 * concatenate looped over them (a hang that the deadline, checked between
 * ops, cannot stop); a slice read start and step of an empty or
 * single-element dimension unchecked and multiplied them by strides
 * (signed overflow).  Now: no work, and the program runs.
 */
static void
test_hostile_empty_outs(void)
{
    static const char *prog =
        HPROG(HTEMP("e", "float32", "[1048576, 1048576, 0]")
                  HTEMP("c", "float32", "[1048576, 1048576, 0]")
                      HTEMP("z4", "float32", "[0, 4]")
                          HTEMP("z2", "float32", "[0, 2]")
                              HTEMP("r", "float32", "[1, 3]"),
              "{\"op\": \"iota\", \"out\": \"e\", \"axis\": 1},"
              "{\"op\": \"concatenate\", \"in\": [\"e\", \"e\"], \"out\": "
              "\"c\", \"axis\": 2},"
              "{\"op\": \"concatenate\", \"in\": [\"e\"], \"out\": \"c\", "
              "\"axis\": 1},"
              "{\"op\": \"full\", \"out\": \"z4\", \"value\": 1},"
              "{\"op\": \"slice\", \"in\": [\"z4\"], \"out\": \"z2\", "
              "\"start\": [4611686018427387904, 0], "
              "\"step\": [4611686018427387904, 2]},"
              "{\"op\": \"slice\", \"in\": [\"a\"], \"out\": \"r\", "
              "\"start\": [1, 0], \"step\": [4611686018427387904, 1]},"
              "{\"op\": \"add\", \"in\": [\"a\", \"r\"], \"out\": "
              "\"output_0\"}");
    NRT_STATUS run = NRT_INVALID;
    struct timespec t0, t1;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    ASSERT_OK(load_and_run(prog, &run));
    ASSERT_OK(run);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ASSERT_TRUE(t1.tv_sec - t0.tv_sec < 10 * TEST_TIME_FACTOR);
}

/* 513 operands of 2^55 (empty) rows: the sum along the axis wrapped
 * around 2^64 to the out size, and validated. */
static void
test_hostile_concatenate_overflow(void)
{
    static const char *head =
        HPROG(HTEMP("e", "int8", "[36028797018963968, 0]")
                  HTEMP("c", "int8", "[36028797018963968, 0]"),
              "{\"op\": \"full\", \"out\": \"e\", \"value\": 1},"
              "{\"op\": \"concatenate\", \"axis\": 0, \"out\": \"c\", "
              "\"in\": [");
    struct nrtemu_strbuf sb = NRTEMU_STRBUF_INIT;
    NRT_STATUS run = NRT_SUCCESS;
    char *prog;

    /* head ends with "]}": continue the op's operand list before them. */
    nrtemu__strbuf_append(&sb, head, strlen(head) - 2);
    for (int i = 0; i < 513; i++) {
        nrtemu__strbuf_printf(&sb, "%s\"e\"", i ? ", " : "");
    }
    nrtemu__strbuf_printf(&sb, "]}, %s]}", VLAST);
    prog = nrtemu__strbuf_take(&sb);
    ASSERT_NOT_NULL(prog);
    ASSERT_STATUS(load_and_run(prog, &run), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "op 1 (concatenate): the operands have more than "
                        "18446744073709551615 elements along axis 0");
    free(prog);
}

/* Temporaries are allocated at the first run: a program declaring more
 * than NRTEMU_PROGRAM_MAX_TEMP_BYTES of them (one, or several together)
 * is refused at load instead. */
static void
test_hostile_temp_bytes(void)
{
    static const char *one =
        HPROG(HTEMP("big", "float32", "[8589934592]"),
              "{\"op\": \"full\", \"out\": \"big\", \"value\": 1}," VLAST);
    static const char *two = HPROG(HTEMP("t1", "float32", "[600000000]")
                                       HTEMP("t2", "float32", "[600000000]"),
                                   VLAST);
    NRT_STATUS run = NRT_SUCCESS;

    ASSERT_STATUS(load_and_run(one, &run), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "buffer 'big': the temporaries need more than the "
                        "4294967296-byte limit");
    ASSERT_STATUS(load_and_run(two, &run), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "buffer 't2': the temporaries need more than");
}

/*
 * Each input and output buffer scanned the whole I/O table for its
 * entry: a load quadratic in the buffers (100,000 here: ten billion name
 * comparisons, minutes), now a sorted lookup.
 */
static void
test_hostile_many_io(void)
{
    enum { N = 100000 };
    struct nrtemu_strbuf def = NRTEMU_STRBUF_INIT, prog = NRTEMU_STRBUF_INIT;
    struct loaded l;
    struct timespec t0, t1;
    char *def_text, *prog_text;

    nrtemu__strbuf_puts(&def, "{\"var\": {");
    nrtemu__strbuf_puts(&prog, VHEAD "\"buffers\": {");
    for (int i = 0; i < N; i++) {
        nrtemu__strbuf_printf(&def,
                              "%s\"in%d\": {\"type\": \"input\", \"size\": "
                              "1, \"shape\": [1], \"dtype\": \"int8\"}",
                              i ? ", " : "", i);
        nrtemu__strbuf_printf(&prog,
                              "%s\"in%d\": {\"kind\": \"input\", \"dtype\": "
                              "\"int8\", \"shape\": [1]}",
                              i ? ", " : "", i);
    }
    nrtemu__strbuf_puts(&def, ", \"out\": {\"type\": \"output\", \"size\": "
                              "1}}, \"emulator_program\": \"program.json\"}");
    nrtemu__strbuf_puts(&prog, ", \"out\": {\"kind\": \"output\", "
                               "\"dtype\": \"int8\", \"shape\": [1]}}, "
                               "\"ops\": [{\"op\": \"add\", \"in\": [\"in7\", "
                               "\"in99999\"], \"out\": \"out\"}]}");
    def_text = nrtemu__strbuf_take(&def);
    prog_text = nrtemu__strbuf_take(&prog);
    ASSERT_NOT_NULL(def_text);
    ASSERT_NOT_NULL(prog_text);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ASSERT_OK(load_with(def_text, prog_text, NULL, 0, &l));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* was 13 s at -O2 */
    ASSERT_TRUE(t1.tv_sec - t0.tv_sec < 5 * TEST_TIME_FACTOR);
    {
        int8_t a = 3, b = 4, out = 0, other = 0;
        void **io = calloc(l.neff->io_count, sizeof *io);
        ASSERT_NOT_NULL(io);
        for (size_t i = 0; i < l.neff->io_count; i++) {
            io[i] = &other;
        }
        io[io_index(&l, "in7")] = &a;
        io[io_index(&l, "in99999")] = &b;
        io[io_index(&l, "out")] = &out;
        ASSERT_OK(nrtemu__program_run(FUNC, l.program, io, 0, NULL, NULL));
        ASSERT_EQ(out, 7);
        free(io);
    }
    unload(&l);
    free(def_text);
    free(prog_text);
}

int
main(void)
{
    test_begin("test_program");
    RUN_TEST(test_document_example);
    RUN_TEST(test_many_ops);
    RUN_TEST(test_take_out_of_bounds);
    RUN_TEST(test_dynamic_slice_run);
    RUN_TEST(test_const_void_npy);
    RUN_TEST(test_validation_program_level);
    RUN_TEST(test_validation_ops);
    RUN_TEST(test_validation_foreign_attributes);
    RUN_TEST(test_hostile_huge_empty_shape);
    RUN_TEST(test_hostile_empty_outs);
    RUN_TEST(test_hostile_concatenate_overflow);
    RUN_TEST(test_hostile_temp_bytes);
    RUN_TEST(test_hostile_many_io);
    return 0;
}
