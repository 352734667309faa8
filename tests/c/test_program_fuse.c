/*
 * test_program_fuse.c - elementwise fusion (program_fuse.c): what is fused
 * (chains, hoisted ops, intermediates, chains in loop bodies), that fused
 * runs give the bytes of unfused ones (NRTPY_EMU_FUSION=0), including
 * when the caller's input and output memory overlap, that profiles still
 * see every op once and in order, and the setting's validation.
 *
 * Programs are written with ' for " (see q()).
 */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "test.h"

#include "neff/neff.h"
#include "neff_image.h"
#include "program/program.h"

#define FUNC "nrt_load"
#define ROWS 3
#define COLS 5000
#define N (ROWS * COLS)

static char *
q(const char *text)
{
    char *s = strdup(text);

    ASSERT_NOT_NULL(s);
    for (char *c = s; *c; c++) {
        if (*c == '\'') {
            *c = '"';
        }
    }
    return s;
}

/* x [3,5000], r [3,1], g [5000] float32 and n int32 in; y float32, z
 * bfloat16 [3,5000] and w float32 [3] out. */
static const char *def_json =
    "{'var': {"
    "'x': {'type': 'input', 'size': 60000, 'shape': [3, 5000], 'dtype': "
    "'float32'},"
    "'r': {'type': 'input', 'size': 12, 'shape': [3, 1], 'dtype': "
    "'float32'},"
    "'g': {'type': 'input', 'size': 20000, 'shape': [5000], 'dtype': "
    "'float32'},"
    "'n': {'type': 'input', 'size': 4, 'shape': [], 'dtype': 'int32'},"
    "'y': {'type': 'output', 'size': 60000, 'shape': [3, 5000], 'dtype': "
    "'float32'},"
    "'z': {'type': 'output', 'size': 30000, 'shape': [3, 5000], 'dtype': "
    "'bfloat16'},"
    "'w': {'type': 'output', 'size': 12, 'shape': [3], 'dtype': "
    "'float32'}},"
    "'emulator_program': 'program.json'}";

#define T(name, dtype) "'" name "': {'kind': 'temp', 'dtype': '" dtype "', "
static const char *program_json =
    "{'format': 'nrtpy-emulator-program', 'version': 1, 'buffers': {"
    "'x': {'kind': 'input', 'dtype': 'float32', 'shape': [3, 5000]},"
    "'r': {'kind': 'input', 'dtype': 'float32', 'shape': [3, 1]},"
    "'g': {'kind': 'input', 'dtype': 'float32', 'shape': [5000]},"
    "'n': {'kind': 'input', 'dtype': 'int32', 'shape': []},"
    "'y': {'kind': 'output', 'dtype': 'float32', 'shape': [3, 5000]},"
    "'z': {'kind': 'output', 'dtype': 'bfloat16', 'shape': [3, 5000]},"
    "'w': {'kind': 'output', 'dtype': 'float32', 'shape': [3]},"
    /* */ T("h", "float32") "'shape': []},"
    /* */ T("c", "float32") "'shape': []},"
    /* */ T("i", "int32") "'shape': []},"
    /* */ T("one", "int32") "'shape': []},"
    /* */ T("go", "bool") "'shape': []},"
    /* */ T("t1", "float32") "'shape': [3, 5000]},"
    /* */ T("t2", "float16") "'shape': [3, 5000]},"
    /* */ T("t3", "float32") "'shape': [3, 5000]},"
    /* */ T("t5", "float32") "'shape': [3, 5000]},"
    /* */ T(
        "t6",
        "float32") "'shape': [3, 5000]}},"
                   "'ops': ["
                   /* 0 */ "{'op': 'full', 'out': 'h', 'value': 0.5},"
                   /* 1-6: a chain; op 2 is hoisted; t1, t2 (float16), t3 never
                    * reach memory; y is written and read again. */
                   /* 1 */ "{'op': 'sub', 'in': ['x', 'r'], 'out': 't1'},"
                   /* 2 */ "{'op': 'full', 'out': 'c', 'value': 3},"
                   /* 3 */ "{'op': 'mul', 'in': ['t1', 'c'], 'out': 't2'},"
                   /* 4 */ "{'op': 'mul', 'in': ['t2', 'g'], 'out': 'y', "
                   "'dtype': 'float32'},"
                   /* 5 */ "{'op': 'add', 'in': ['y', 't1'], 'out': 't3'},"
                   /* 6 */ "{'op': 'cast', 'in': ['t3'], 'out': 'z'},"
                   /* 7-9 */ "{'op': 'full', 'out': 'i', 'value': 0},"
                   "{'op': 'full', 'out': 'one', 'value': 1},"
                   /* A loop whose body is a chain, in place on y. */
                   "{'op': 'while', 'in': [], 'pred': 'go',"
                   " 'cond': [{'op': 'less', 'in': ['i', 'n'], 'out': 'go'}],"
                   " 'body': [{'op': 'mul', 'in': ['y', 'h'], 'out': 'y'},"
                   "          {'op': 'add', 'in': ['y', 'x'], 'out': 'y'},"
                   "          {'op': 'sub', 'in': ['y', 'r'], 'out': 'y'},"
                   "          {'op': 'add', 'in': ['i', 'one'], 'out': 'i'}]},"
                   /* 10-12: a chain and the reduction of its result over its
                    * last axis: neither t5 nor t6 reaches memory. */
                   /* 10 */ "{'op': 'add', 'in': ['x', 'x'], 'out': 't5'},"
                   /* 11 */ "{'op': 'mul', 'in': ['t5', 't5'], 'out': 't6'},"
                   /* 12 */ "{'op': 'sum', 'in': ['t6'], 'out': 'w', 'axes': "
                   "[1]}]}";

struct loaded {
    unsigned char *image;
    struct nrtemu_neff *neff;
    struct nrtemu_program *program;
};

static NRT_STATUS
load_text(const char *def_text, const char *program_text, const char *fusion,
          struct loaded *l)
{
    char *def = q(def_text), *prog = q(program_text);
    size_t size;
    NRT_STATUS st;

    memset(l, 0, sizeof *l);
    if (fusion != NULL) {
        setenv("NRTPY_EMU_FUSION", fusion, 1);
    } else {
        unsetenv("NRTPY_EMU_FUSION");
    }
    l->image = neff_image_simple("fuse", def, prog, &size);
    ASSERT_OK(nrtemu__neff_open(FUNC, l->image, size, false, &l->neff));
    st = nrtemu__program_load(FUNC, l->neff, 0, &l->program);
    unsetenv("NRTPY_EMU_FUSION");
    free(def);
    free(prog);
    return st;
}

static NRT_STATUS
load(const char *fusion, struct loaded *l)
{
    return load_text(def_json, program_json, fusion, l);
}

static void
unload(struct loaded *l)
{
    nrtemu__program_free(l->program);
    nrtemu__neff_free(l->neff);
    free(l->image);
}

struct io {
    float *x, r[ROWS], *g;
    int32_t n;
    float *y;
    uint16_t *z;
    float w[ROWS];
};

static void
io_alloc(struct io *io, int32_t n)
{
    io->x = malloc(N * sizeof *io->x);
    io->g = malloc(COLS * sizeof *io->g);
    io->y = malloc(N * sizeof *io->y);
    io->z = malloc(N * sizeof *io->z);
    ASSERT_TRUE(io->x && io->g && io->y && io->z);
    srand(7);
    for (int i = 0; i < N; i++) {
        io->x[i] = (float)rand() / RAND_MAX * 4 - 2;
    }
    for (int i = 0; i < COLS; i++) {
        io->g[i] = (float)rand() / RAND_MAX - 0.5f;
    }
    for (int i = 0; i < ROWS; i++) {
        io->r[i] = (float)i / 3;
    }
    io->n = n;
    memset(io->y, 0, N * sizeof *io->y);
    memset(io->z, 0, N * sizeof *io->z);
}

static void
io_free(struct io *io)
{
    free(io->x);
    free(io->g);
    free(io->y);
    free(io->z);
}

static void *
io_data(const struct loaded *l, struct io *io, const char *name)
{
    (void)l;
    return strcmp(name, "x") == 0   ? (void *)io->x
           : strcmp(name, "r") == 0 ? (void *)io->r
           : strcmp(name, "g") == 0 ? (void *)io->g
           : strcmp(name, "n") == 0 ? (void *)&io->n
           : strcmp(name, "y") == 0 ? (void *)io->y
           : strcmp(name, "z") == 0 ? (void *)io->z
                                    : (void *)io->w;
}

/* Profile observer: every op once, in order, with ordered times. */
struct observed {
    size_t count;
    uint64_t last_end;
    bool ordered;
};

static void
observe(void *ctx, size_t index, const char *op, const char *shapes,
        const char *note, uint64_t start_ns, uint64_t end_ns)
{
    struct observed *o = ctx;

    (void)note;
    (void)op;
    (void)shapes;
    o->ordered = o->ordered && index == o->count && start_ns <= end_ns &&
                 start_ns >= o->last_end;
    o->last_end = end_ns;
    o->count++;
}

static void
run(struct loaded *l, struct io *io, struct observed *obs)
{
    void *data[7];

    for (size_t i = 0; i < l->neff->io_count; i++) {
        data[i] = io_data(l, io, l->neff->io[i].name);
    }
    ASSERT_OK(nrtemu__program_run(FUNC, l->program, data, 0,
                                  obs ? observe : NULL, obs));
}

static void
test_what_is_fused(void)
{
    struct loaded l;
    struct nrtemu_fusion_stats s;

    ASSERT_OK(load(NULL, &l));
    nrtemu__program_fusion_stats(l.program, &s);
    /* ops 1-6 (op 2 hoisted), the loop body's first 3, ops 10-11 and the
     * sum of op 12 */
    ASSERT_UEQ(s.chains, 3);
    ASSERT_UEQ(s.ops, 5 + 3 + 2);
    ASSERT_UEQ(s.reductions, 1);
    ASSERT_UEQ(s.hoisted, 1);
    ASSERT_UEQ(s.intermediates, 3 + 2); /* t1, t2, t3; t5, t6 */
    unload(&l);
    ASSERT_OK(load("0", &l));
    nrtemu__program_fusion_stats(l.program, &s);
    ASSERT_UEQ(s.chains + s.ops + s.reductions + s.hoisted + s.intermediates,
               0);
    unload(&l);
    ASSERT_OK(load(" true ", &l));
    nrtemu__program_fusion_stats(l.program, &s);
    ASSERT_UEQ(s.chains, 3);
    unload(&l);
    ASSERT_STATUS(load("maybe", &l), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "invalid NRTPY_EMU_FUSION='maybe': expected 1, 0, "
                        "true or false");
    ASSERT_NULL(l.program);
    unload(&l);
}

/* Fused and unfused runs write the same bytes, for 0, 1 and 5 loop
 * iterations; the observer sees each of the 13 ops once, in order. */
static void
test_fused_equals_unfused(void)
{
    struct loaded fused, plain;
    struct io a, b;

    ASSERT_OK(load("1", &fused));
    ASSERT_OK(load("0", &plain));
    for (int32_t n = 0; n <= 5; n += n == 0 ? 1 : 4) {
        struct observed obs = {0, 0, true};
        io_alloc(&a, n);
        io_alloc(&b, n);
        run(&fused, &a, &obs);
        run(&plain, &b, NULL);
        ASSERT_UEQ(obs.count, 13);
        ASSERT_TRUE(obs.ordered);
        ASSERT_TRUE(memcmp(a.y, b.y, N * sizeof *a.y) == 0);
        ASSERT_TRUE(memcmp(a.z, b.z, N * sizeof *a.z) == 0);
        ASSERT_TRUE(memcmp(a.w, b.w, sizeof a.w) == 0);
        /* A value, by hand: y = float16((x - r) * 3) * g, n = 0. */
        if (n == 0) {
            float t = (a.x[COLS + 7] - a.r[1]) * 3;
            ASSERT_TRUE(fabsf(a.y[COLS + 7] - t * a.g[7]) <=
                        fabsf(t * a.g[7]) * 1e-3f + 1e-6f);
        }
        io_free(&a);
        io_free(&b);
    }
    unload(&fused);
    unload(&plain);
}

/*
 * The caller passes x and y as overlapping memory (y = x + 8 floats, and
 * y = x exactly): the chains that read x and write y run as the ops one
 * by one do.
 */
static void
test_overlapping_io(void)
{
    for (int shift = 0; shift <= 8; shift += 8) {
        struct loaded fused, plain;
        struct io a, b;
        float *xa = malloc((N + 8) * sizeof *xa);
        float *xb = malloc((N + 8) * sizeof *xb);
        void *data_a[7], *data_b[7];

        ASSERT_TRUE(xa && xb);
        ASSERT_OK(load("1", &fused));
        ASSERT_OK(load("0", &plain));
        io_alloc(&a, 2);
        io_alloc(&b, 2);
        memcpy(xa, a.x, N * sizeof *xa);
        memcpy(xb, a.x, N * sizeof *xb);
        memset(xa + N, 0, 8 * sizeof *xa);
        memset(xb + N, 0, 8 * sizeof *xb);
        for (size_t i = 0; i < fused.neff->io_count; i++) {
            const char *name = fused.neff->io[i].name;
            data_a[i] = strcmp(name, "x") == 0   ? (void *)xa
                        : strcmp(name, "y") == 0 ? (void *)(xa + shift)
                                                 : io_data(&fused, &a, name);
            data_b[i] = strcmp(name, "x") == 0   ? (void *)xb
                        : strcmp(name, "y") == 0 ? (void *)(xb + shift)
                                                 : io_data(&plain, &b, name);
        }
        ASSERT_OK(
            nrtemu__program_run(FUNC, fused.program, data_a, 0, NULL, NULL));
        ASSERT_OK(
            nrtemu__program_run(FUNC, plain.program, data_b, 0, NULL, NULL));
        ASSERT_TRUE(memcmp(xa, xb, (N + 8) * sizeof *xa) == 0);
        ASSERT_TRUE(memcmp(a.z, b.z, N * sizeof *a.z) == 0);
        ASSERT_TRUE(memcmp(a.w, b.w, sizeof a.w) == 0);
        io_free(&a);
        io_free(&b);
        free(xa);
        free(xb);
        unload(&fused);
        unload(&plain);
    }
}

/*
 * broadcast_to in a chain (as the HLO compiler writes broadcasts): read
 * by elementwise ops it never runs, its operand read in its place; read
 * by pow (whose kernel has another path for a one-element exponent) it
 * runs as a copy.  Results equal the unfused ones, bit for bit.  Large
 * enough for the blocks to be shared among the pool's threads: 33 blocks
 * of two rows, which the tasks' runs of 2 blocks do not divide (under
 * ASan, a run past the last block writes past y).
 */
static void
test_broadcasts(void)
{
    static const char *def =
        "{'var': {"
        "'a': {'type': 'input', 'size': 792000, 'shape': [66, 3000], "
        "'dtype': 'float32'},"
        "'b': {'type': 'input', 'size': 12000, 'shape': [3000], 'dtype': "
        "'float32'},"
        "'e': {'type': 'input', 'size': 4, 'shape': [], 'dtype': 'float32'},"
        "'y': {'type': 'output', 'size': 792000, 'shape': [66, 3000], "
        "'dtype': 'float32'}},"
        "'emulator_program': 'program.json'}";
    static const char *prog =
        "{'format': 'nrtpy-emulator-program', 'version': 1, 'buffers': {"
        "'a': {'kind': 'input', 'dtype': 'float32', 'shape': [66, 3000]},"
        "'b': {'kind': 'input', 'dtype': 'float32', 'shape': [3000]},"
        "'e': {'kind': 'input', 'dtype': 'float32', 'shape': []},"
        "'y': {'kind': 'output', 'dtype': 'float32', 'shape': [66, 3000]},"
        "'tb': {'kind': 'temp', 'dtype': 'float32', 'shape': [66, 3000]},"
        "'te': {'kind': 'temp', 'dtype': 'float32', 'shape': [66, 3000]},"
        "'t': {'kind': 'temp', 'dtype': 'float32', 'shape': [66, 3000]},"
        "'t2': {'kind': 'temp', 'dtype': 'float32', 'shape': [66, 3000]},"
        "'u': {'kind': 'temp', 'dtype': 'float32', 'shape': [66, 3000]}},"
        "'ops': ["
        "{'op': 'broadcast_to', 'in': ['b'], 'out': 'tb'},"
        "{'op': 'neg', 'in': ['a'], 'out': 't'},"
        "{'op': 'add', 'in': ['t', 'tb'], 'out': 't2'},"
        "{'op': 'broadcast_to', 'in': ['e'], 'out': 'te'},"
        "{'op': 'pow', 'in': ['t2', 'te'], 'out': 'u'},"
        "{'op': 'mul', 'in': ['u', 'tb'], 'out': 'y'}]}";
    struct loaded fused, plain;
    struct nrtemu_fusion_stats s;
    float *a = malloc(66 * 3000 * sizeof *a), b[3000],
          e[] = {0.5f, 2.0f, 3.0f};
    float *y1 = malloc(66 * 3000 * sizeof *y1),
          *y2 = malloc(66 * 3000 * sizeof *y2);

    ASSERT_TRUE(a && y1 && y2);
    for (int i = 0; i < 66 * 3000; i++) {
        a[i] = (float)((i * 37) % 101) / 7 - 7;
    }
    a[5] = 0.0f; /* t2 = -0 + -0 = -0: pow(-0, 0.5) is +0, sqrt(-0) -0 */
    for (int i = 0; i < 3000; i++) {
        b[i] = (float)((i * 13) % 17) / 5 - 1;
    }
    b[5] = -0.0f;
    ASSERT_OK(load_text(def, prog, "1", &fused));
    ASSERT_OK(load_text(def, prog, "0", &plain));
    nrtemu__program_fusion_stats(fused.program, &s);
    ASSERT_UEQ(s.chains, 1);
    ASSERT_UEQ(s.ops, 6);
    ASSERT_UEQ(s.intermediates, 5);      /* tb, t, t2, te, u */
    ASSERT_UEQ(s.virtual_broadcasts, 1); /* tb, not te */
    for (int k = 0; k < 3; k++) {
        void *d1[4], *d2[4];
        for (size_t i = 0; i < fused.neff->io_count; i++) {
            const char *n = fused.neff->io[i].name;
            d1[i] = n[0] == 'a'   ? (void *)a
                    : n[0] == 'b' ? (void *)b
                    : n[0] == 'e' ? (void *)&e[k]
                                  : (void *)y1;
            d2[i] = n[0] == 'y' ? (void *)y2 : d1[i];
        }
        ASSERT_OK(nrtemu__program_run(FUNC, fused.program, d1, 0, NULL, NULL));
        ASSERT_OK(nrtemu__program_run(FUNC, plain.program, d2, 0, NULL, NULL));
        ASSERT_TRUE(memcmp(y1, y2, 66 * 3000 * sizeof *y1) == 0);
    }
    /* y = (-a + b) ** 3 * b, at one point */
    ASSERT_TRUE(fabsf(y1[3001] - powf(-a[3001] + b[1], 3) * b[1]) <=
                1e-4f * fabsf(y1[3001]) + 1e-6f);
    unload(&fused);
    unload(&plain);
    free(a);
    free(y1);
    free(y2);
}

/* A program of 20,001 elementwise ops loads in linear time, as chains of
 * at most 64 ops, and runs them all. */
static void
test_long_program(void)
{
    static const char *def =
        "{'var': {"
        "'x': {'type': 'input', 'size': 16, 'shape': [4], 'dtype': 'int32'},"
        "'y': {'type': 'output', 'size': 16, 'shape': [4], 'dtype': 'int32'}},"
        "'emulator_program': 'program.json'}";
    const int n = 20000;
    size_t cap = 512 + (size_t)n * 48, len, size;
    char *prog = malloc(cap), *def_q = q(def);
    struct nrtemu_fusion_stats s;
    struct timespec t0, t1;
    struct loaded l = {0};
    int32_t x[4] = {1, -2, 3, 100000}, y[4];
    void *data[2];

    ASSERT_NOT_NULL(prog);
    len = (size_t)snprintf(prog, cap,
                           "{\"format\": \"nrtpy-emulator-program\", "
                           "\"version\": 1, \"buffers\": {"
                           "\"x\": {\"kind\": \"input\", \"dtype\": "
                           "\"int32\", \"shape\": [4]},"
                           "\"y\": {\"kind\": \"output\", \"dtype\": "
                           "\"int32\", \"shape\": [4]}}, \"ops\": ["
                           "{\"op\": \"copy\", \"in\": [\"x\"], "
                           "\"out\": \"y\"}");
    for (int i = 0; i < n; i++) {
        len += (size_t)snprintf(prog + len, cap - len,
                                ", {\"op\": \"add\", \"in\": [\"y\", "
                                "\"x\"], \"out\": \"y\"}");
    }
    snprintf(prog + len, cap - len, "]}");
    l.image = neff_image_simple("long", def_q, prog, &size);
    ASSERT_OK(nrtemu__neff_open(FUNC, l.image, size, false, &l.neff));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ASSERT_OK(nrtemu__program_load(FUNC, l.neff, 0, &l.program));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ASSERT_TRUE(t1.tv_sec - t0.tv_sec < 2 * TEST_TIME_FACTOR);
    nrtemu__program_fusion_stats(l.program, &s);
    ASSERT_UEQ(s.chains, (n + 1 + 63) / 64);
    ASSERT_UEQ(s.ops, n + 1);
    for (size_t i = 0; i < l.neff->io_count; i++) {
        data[i] = strcmp(l.neff->io[i].name, "x") == 0 ? (void *)x : y;
    }
    ASSERT_OK(nrtemu__program_run(FUNC, l.program, data, 0, NULL, NULL));
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(y[i], x[i] * (n + 1));
    }
    unload(&l);
    free(prog);
    free(def_q);
}

/*
 * A row group (program_fuse_rows.c): a softmax over rows of 3001 (blocks
 * of 10 rows, the last of 7), whose sum is also an output and whose
 * reshapes never run.  Results equal the unfused ones bit for bit, also
 * when the caller passes x and y as one tensor, and when y overlaps x
 * shifted by 8 floats (the group then runs op by op).
 */
#define GR 37
#define GC 3001
static void
test_row_group(void)
{
    static const char *def =
        "{'var': {"
        "'x': {'type': 'input', 'size': 444148, 'shape': [37, 3001], "
        "'dtype': 'float32'},"
        "'y': {'type': 'output', 'size': 444148, 'shape': [37, 3001], "
        "'dtype': 'float32'},"
        "'w': {'type': 'output', 'size': 148, 'shape': [37], "
        "'dtype': 'float32'}},"
        "'emulator_program': 'program.json'}";
    static const char *prog =
        "{'format': 'nrtpy-emulator-program', 'version': 1, 'buffers': {"
        "'x': {'kind': 'input', 'dtype': 'float32', 'shape': [37, 3001]},"
        "'y': {'kind': 'output', 'dtype': 'float32', 'shape': [37, 3001]},"
        "'w': {'kind': 'output', 'dtype': 'float32', 'shape': [37]},"
        "'m': {'kind': 'temp', 'dtype': 'float32', 'shape': [37, 1]},"
        "'m2': {'kind': 'temp', 'dtype': 'float32', 'shape': [37]},"
        "'m3': {'kind': 'temp', 'dtype': 'float32', 'shape': [37, 1]},"
        "'h': {'kind': 'temp', 'dtype': 'float32', 'shape': [1, 1]},"
        "'d': {'kind': 'temp', 'dtype': 'float32', 'shape': [37, 3001]},"
        "'e': {'kind': 'temp', 'dtype': 'float32', 'shape': [37, 3001]},"
        "'s': {'kind': 'temp', 'dtype': 'float32', 'shape': [37, 1]}},"
        "'ops': ["
        "{'op': 'max', 'in': ['x'], 'out': 'm', 'axes': [1], "
        "'keepdims': true},"
        "{'op': 'reshape', 'in': ['m'], 'out': 'm2'},"
        "{'op': 'reshape', 'in': ['m2'], 'out': 'm3'},"
        "{'op': 'full', 'out': 'h', 'value': 0.5},"
        "{'op': 'sub', 'in': ['x', 'm3'], 'out': 'd'},"
        "{'op': 'exp', 'in': ['d'], 'out': 'e'},"
        "{'op': 'sum', 'in': ['e'], 'out': 'w', 'axes': [1]},"
        "{'op': 'reshape', 'in': ['w'], 'out': 's'},"
        "{'op': 'div', 'in': ['e', 's'], 'out': 'd'},"
        "{'op': 'mul', 'in': ['d', 'h'], 'out': 'y'}]}";
    struct loaded fused, plain;
    struct nrtemu_fusion_stats s;
    float *xa = malloc((GR * GC + 8) * sizeof *xa);
    float *xb = malloc((GR * GC + 8) * sizeof *xb);
    float *ya = malloc(GR * GC * sizeof *ya),
          *yb = malloc(GR * GC * sizeof *yb);
    float wa[GR], wb[GR];

    ASSERT_TRUE(xa && xb && ya && yb);
    ASSERT_OK(load_text(def, prog, "1", &fused));
    ASSERT_OK(load_text(def, prog, "0", &plain));
    nrtemu__program_fusion_stats(fused.program, &s);
    ASSERT_UEQ(s.row_groups, 1);
    ASSERT_UEQ(s.row_ops, 9);
    ASSERT_UEQ(s.row_reductions, 2);
    ASSERT_UEQ(s.hoisted, 1);
    /* m and e (slots), m2 and m3 (reshapes of m), s (a reshape of w, which
     * reaches memory: it is an output); d, written twice, is no
     * intermediate */
    ASSERT_UEQ(s.row_intermediates, 5);
    ASSERT_UEQ(s.chains, 0);
    /* 0: y apart from x; 1: y is x; 2: y is x shifted by 8 floats */
    for (int mode = 0; mode < 3; mode++) {
        void *da[3], *db[3];
        for (int i = 0; i < GR * GC + 8; i++) {
            xa[i] = xb[i] = (float)((i * 37) % 101) / 9 - 5;
        }
        for (size_t i = 0; i < fused.neff->io_count; i++) {
            const char *n = fused.neff->io[i].name;
            da[i] = n[0] == 'x'   ? (void *)xa
                    : n[0] == 'w' ? (void *)wa
                    : mode == 0   ? (void *)ya
                                  : (void *)(xa + (mode == 2 ? 8 : 0));
            db[i] = n[0] == 'x'   ? (void *)xb
                    : n[0] == 'w' ? (void *)wb
                    : mode == 0   ? (void *)yb
                                  : (void *)(xb + (mode == 2 ? 8 : 0));
        }
        ASSERT_OK(nrtemu__program_run(FUNC, fused.program, da, 0, NULL, NULL));
        ASSERT_OK(nrtemu__program_run(FUNC, plain.program, db, 0, NULL, NULL));
        ASSERT_TRUE(memcmp(wa, wb, sizeof wa) == 0);
        if (mode == 0) {
            ASSERT_TRUE(memcmp(ya, yb, GR * GC * sizeof *ya) == 0);
            /* y = softmax(x) / 2: a row sums to 1/2 */
            double t = 0;
            for (int i = 0; i < GC; i++) {
                t += ya[GC * 36 + i];
            }
            ASSERT_TRUE(fabs(t - 0.5) < 1e-4);
        } else {
            ASSERT_TRUE(memcmp(xa, xb, (GR * GC + 8) * sizeof *xa) == 0);
        }
    }
    unload(&fused);
    unload(&plain);
    free(xa);
    free(xb);
    free(ya);
    free(yb);
}

/*
 * A row group that casts x twice (as the HLO compiler writes an RMS
 * norm): the second cast reads the first's result; with an op between
 * them that writes what they cast (v, then no intermediate), it runs.
 * Results equal the unfused ones bit for bit.
 */
static void
test_row_group_reuse(void)
{
    static const char *def =
        "{'var': {"
        "'x': {'type': 'input', 'size': 444148, 'shape': [37, 3001], "
        "'dtype': 'float32'},"
        "'y': {'type': 'output', 'size': 444148, 'shape': [37, 3001], "
        "'dtype': 'float32'}},"
        "'emulator_program': 'program.json'}";
#define REUSE_BUFFERS                                                   \
    "{'format': 'nrtpy-emulator-program', 'version': 1, 'buffers': {"   \
    "'x': {'kind': 'input', 'dtype': 'float32', 'shape': [37, 3001]},"  \
    "'y': {'kind': 'output', 'dtype': 'float32', 'shape': [37, 3001]}," \
    "'v': {'kind': 'temp', 'dtype': 'float32', 'shape': [37, 3001]},"   \
    "'a': {'kind': 'temp', 'dtype': 'float64', 'shape': [37, 3001]},"   \
    "'b': {'kind': 'temp', 'dtype': 'float64', 'shape': [37, 3001]},"   \
    "'c': {'kind': 'temp', 'dtype': 'float64', 'shape': [37, 3001]},"   \
    "'d': {'kind': 'temp', 'dtype': 'float64', 'shape': [37, 3001]},"   \
    "'s': {'kind': 'temp', 'dtype': 'float64', 'shape': [37]},"         \
    "'s2': {'kind': 'temp', 'dtype': 'float64', 'shape': [37, 1]},"     \
    "'r': {'kind': 'temp', 'dtype': 'float64', 'shape': [37, 1]}},"     \
    "'ops': ["                                                          \
    "{'op': 'copy', 'in': ['x'], 'out': 'v'},"                          \
    "{'op': 'cast', 'in': ['v'], 'out': 'a'},"                          \
    "{'op': 'mul', 'in': ['a', 'a'], 'out': 'b'},"                      \
    "{'op': 'sum', 'in': ['b'], 'out': 's', 'axes': [1]},"              \
    "{'op': 'reshape', 'in': ['s'], 'out': 's2'},"                      \
    "{'op': 'rsqrt', 'in': ['s2'], 'out': 'r'},"
#define REUSE_TAIL                                 \
    "{'op': 'cast', 'in': ['v'], 'out': 'c'},"     \
    "{'op': 'mul', 'in': ['c', 'r'], 'out': 'd'}," \
    "{'op': 'cast', 'in': ['d'], 'out': 'y'}]}"
    static const char *progs[2] = {
        REUSE_BUFFERS REUSE_TAIL,
        REUSE_BUFFERS
        "{'op': 'add', 'in': ['v', 'v'], 'out': 'v'}," REUSE_TAIL,
    };
#undef REUSE_BUFFERS
#undef REUSE_TAIL
    float *x = malloc(GR * GC * sizeof *x);
    float *ya = malloc(GR * GC * sizeof *ya),
          *yb = malloc(GR * GC * sizeof *yb);

    ASSERT_TRUE(x && ya && yb);
    for (int i = 0; i < GR * GC; i++) {
        x[i] = (float)((i * 37) % 101) / 9 - 5;
    }
    for (int k = 0; k < 2; k++) {
        struct loaded fused, plain;
        struct nrtemu_fusion_stats s;
        void *da[2], *db[2];
        ASSERT_OK(load_text(def, progs[k], "1", &fused));
        ASSERT_OK(load_text(def, progs[k], "0", &plain));
        nrtemu__program_fusion_stats(fused.program, &s);
        ASSERT_UEQ(s.row_groups, 1);
        ASSERT_UEQ(s.row_ops, 9 + (size_t)k);
        ASSERT_UEQ(s.row_reused, k == 0 ? 1 : 0);
        for (size_t i = 0; i < fused.neff->io_count; i++) {
            bool in = fused.neff->io[i].name[0] == 'x';
            da[i] = in ? (void *)x : (void *)ya;
            db[i] = in ? (void *)x : (void *)yb;
        }
        ASSERT_OK(nrtemu__program_run(FUNC, fused.program, da, 0, NULL, NULL));
        ASSERT_OK(nrtemu__program_run(FUNC, plain.program, db, 0, NULL, NULL));
        ASSERT_TRUE(memcmp(ya, yb, GR * GC * sizeof *ya) == 0);
        unload(&fused);
        unload(&plain);
    }
    free(x);
    free(ya);
    free(yb);
}

/*
 * A softmax of s + m over rows [3, 37] of 3001, m [1, 37, 3001] (a mask
 * or bias shared by the 3 heads): m joins the group, each block reading
 * the matching rows of it; blocks of 10 rows stop at each 37th row (the
 * last of a head has 7).  Results equal the unfused ones bit for bit.
 */
static void
test_row_group_broadcast_rows(void)
{
    static const char *def =
        "{'var': {"
        "'s': {'type': 'input', 'size': 1332444, 'shape': [3, 37, 3001], "
        "'dtype': 'float32'},"
        "'m': {'type': 'input', 'size': 444148, 'shape': [1, 37, 3001], "
        "'dtype': 'float32'},"
        "'y': {'type': 'output', 'size': 1332444, 'shape': [3, 37, 3001], "
        "'dtype': 'float32'}},"
        "'emulator_program': 'program.json'}";
    static const char *prog =
        "{'format': 'nrtpy-emulator-program', 'version': 1, 'buffers': {"
        "'s': {'kind': 'input', 'dtype': 'float32', 'shape': [3, 37, 3001]},"
        "'m': {'kind': 'input', 'dtype': 'float32', 'shape': [1, 37, 3001]},"
        "'y': {'kind': 'output', 'dtype': 'float32', 'shape': [3, 37, 3001]},"
        "'z': {'kind': 'temp', 'dtype': 'float32', 'shape': [3, 37, 3001]},"
        "'x': {'kind': 'temp', 'dtype': 'float32', 'shape': [3, 37, 1]},"
        "'d': {'kind': 'temp', 'dtype': 'float32', 'shape': [3, 37, 3001]},"
        "'e': {'kind': 'temp', 'dtype': 'float32', 'shape': [3, 37, 3001]},"
        "'t': {'kind': 'temp', 'dtype': 'float32', 'shape': [3, 37, 1]}},"
        "'ops': ["
        "{'op': 'add', 'in': ['s', 'm'], 'out': 'z'},"
        "{'op': 'max', 'in': ['z'], 'out': 'x', 'axes': [2], "
        "'keepdims': true},"
        "{'op': 'sub', 'in': ['z', 'x'], 'out': 'd'},"
        "{'op': 'exp', 'in': ['d'], 'out': 'e'},"
        "{'op': 'sum', 'in': ['e'], 'out': 't', 'axes': [2], "
        "'keepdims': true},"
        "{'op': 'div', 'in': ['e', 't'], 'out': 'y'}]}";
    const int n = 3 * GR * GC;
    struct loaded fused, plain;
    struct nrtemu_fusion_stats st;
    float *s = malloc(n * sizeof *s), *m = malloc(GR * GC * sizeof *m);
    float *ya = malloc(n * sizeof *ya), *yb = malloc(n * sizeof *yb);
    void *da[3], *db[3];

    ASSERT_TRUE(s && m && ya && yb);
    for (int i = 0; i < n; i++) {
        s[i] = (float)((i * 37) % 101) / 9 - 5;
    }
    for (int i = 0; i < GR * GC; i++) {
        m[i] = (float)((i * 13) % 29) - 14;
    }
    ASSERT_OK(load_text(def, prog, "1", &fused));
    ASSERT_OK(load_text(def, prog, "0", &plain));
    nrtemu__program_fusion_stats(fused.program, &st);
    ASSERT_UEQ(st.row_groups, 1);
    ASSERT_UEQ(st.row_ops, 6);
    ASSERT_UEQ(st.row_reductions, 2);
    ASSERT_UEQ(st.chains, 0);
    for (size_t i = 0; i < fused.neff->io_count; i++) {
        const char *name = fused.neff->io[i].name;
        da[i] = name[0] == 's'   ? (void *)s
                : name[0] == 'm' ? (void *)m
                                 : (void *)ya;
        db[i] = name[0] == 's'   ? (void *)s
                : name[0] == 'm' ? (void *)m
                                 : (void *)yb;
    }
    ASSERT_OK(nrtemu__program_run(FUNC, fused.program, da, 0, NULL, NULL));
    ASSERT_OK(nrtemu__program_run(FUNC, plain.program, db, 0, NULL, NULL));
    ASSERT_TRUE(memcmp(ya, yb, n * sizeof *ya) == 0);
    unload(&fused);
    unload(&plain);
    free(s);
    free(m);
    free(ya);
    free(yb);
}

int
main(void)
{
    test_begin("program_fuse");
    RUN_TEST(test_what_is_fused);
    RUN_TEST(test_fused_equals_unfused);
    RUN_TEST(test_overlapping_io);
    RUN_TEST(test_broadcasts);
    RUN_TEST(test_long_program);
    RUN_TEST(test_row_group);
    RUN_TEST(test_row_group_reuse);
    RUN_TEST(test_row_group_broadcast_rows);
    return 0;
}
