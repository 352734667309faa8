/*
 * test_program_control.c - control flow in emulator programs: while and
 * conditional (docs/neff-emulator-format.md §3, "Control flow"): counted
 * loops, loops that run zero times, a loop nested in a branch, bool and
 * integer selectors (an out-of-range index takes the last branch), a loop
 * that never ends against the deadline, and the validation rules of
 * nested lists, each an NRT_INVALID naming the op path.
 *
 * Programs are written here with ' for " (see q()), for legibility.
 */
#include <time.h>

#include "test.h"

#include "neff/neff.h"
#include "neff_image.h"
#include "program/program.h"
#include "util/strbuf.h"

#define FUNC "nrt_load"

/* `text` with every ' turned into ": JSON without the escapes. */
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

/*
 * The I/O of every program here: x float32[3], n and k int32[], flag
 * bool[] in; acc float32[3] and count int32[] out.
 */
static const char *def_json =
    "{'var': {"
    "'x': {'type': 'input', 'size': 12, 'shape': [3], 'dtype': 'float32'},"
    "'n': {'type': 'input', 'size': 4, 'shape': [], 'dtype': 'int32'},"
    "'k': {'type': 'input', 'size': 4, 'shape': [], 'dtype': 'int32'},"
    "'flag': {'type': 'input', 'size': 1, 'shape': [], 'dtype': 'bool'},"
    "'acc': {'type': 'output', 'size': 12, 'shape': [3], 'dtype': "
    "'float32'},"
    "'count': {'type': 'output', 'size': 4, 'shape': [], 'dtype': 'int32'}},"
    "'emulator_program': 'program.json'}";

/* The buffers: the I/O above and temporaries i, one (int32[]), go
 * (bool[]), v (float32[2]), u (uint8[]), f (float32[]). */
#define HEAD                                                          \
    "{'format': 'nrtpy-emulator-program', 'version': 1, 'buffers': {" \
    "'x': {'kind': 'input', 'dtype': 'float32', 'shape': [3]},"       \
    "'n': {'kind': 'input', 'dtype': 'int32', 'shape': []},"          \
    "'k': {'kind': 'input', 'dtype': 'int32', 'shape': []},"          \
    "'flag': {'kind': 'input', 'dtype': 'bool', 'shape': []},"        \
    "'acc': {'kind': 'output', 'dtype': 'float32', 'shape': [3]},"    \
    "'count': {'kind': 'output', 'dtype': 'int32', 'shape': []},"     \
    "'i': {'kind': 'temp', 'dtype': 'int32', 'shape': []},"           \
    "'one': {'kind': 'temp', 'dtype': 'int32', 'shape': []},"         \
    "'go': {'kind': 'temp', 'dtype': 'bool', 'shape': []},"           \
    "'v': {'kind': 'temp', 'dtype': 'float32', 'shape': [2]},"        \
    "'u': {'kind': 'temp', 'dtype': 'uint8', 'shape': []},"           \
    "'f': {'kind': 'temp', 'dtype': 'float32', 'shape': []}}, 'ops': ["
#define TAIL "]}"

/* Ops that set count and acc, so that a program is complete. */
#define SET_OUTS                                  \
    "{'op': 'full', 'out': 'count', 'value': 0}," \
    "{'op': 'full', 'out': 'acc', 'value': 0}"

struct io {
    float x[3];
    int32_t n, k;
    bool flag;
    float acc[3];
    int32_t count;
};

struct loaded {
    unsigned char *image;
    struct nrtemu_neff *neff;
    struct nrtemu_program *program;
};

static NRT_STATUS
load(const char *program_q, struct loaded *l)
{
    char *def = q(def_json), *prog = q(program_q);
    size_t size;
    NRT_STATUS st;

    memset(l, 0, sizeof *l);
    l->image = neff_image_simple("control", def, prog, &size);
    ASSERT_OK(nrtemu__neff_open(FUNC, l->image, size, false, &l->neff));
    st = nrtemu__program_load(FUNC, l->neff, 0, &l->program);
    free(def);
    free(prog);
    return st;
}

static void
unload(struct loaded *l)
{
    nrtemu__program_free(l->program);
    nrtemu__neff_free(l->neff);
    free(l->image);
}

static NRT_STATUS
run(struct loaded *l, struct io *io, uint64_t deadline_ns)
{
    void *data[6];

    for (size_t i = 0; i < l->neff->io_count; i++) {
        const char *name = l->neff->io[i].name;
        data[i] = strcmp(name, "x") == 0       ? (void *)io->x
                  : strcmp(name, "n") == 0     ? (void *)&io->n
                  : strcmp(name, "k") == 0     ? (void *)&io->k
                  : strcmp(name, "flag") == 0  ? (void *)&io->flag
                  : strcmp(name, "acc") == 0   ? (void *)io->acc
                  : strcmp(name, "count") == 0 ? (void *)&io->count
                                               : NULL;
        ASSERT_NOT_NULL(data[i]);
    }
    return nrtemu__program_run(FUNC, l->program, data, deadline_ns, NULL,
                               NULL);
}

static uint64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* acc = n * x, count = n, by a loop of n iterations (none when n <= 0). */
#define COUNTED_LOOP                                             \
    "{'op': 'full', 'out': 'i', 'value': 0},"                    \
    "{'op': 'full', 'out': 'one', 'value': 1},"                  \
    "{'op': 'full', 'out': 'acc', 'value': 0},"                  \
    "{'op': 'while', 'in': [], 'pred': 'go',"                    \
    " 'cond': [{'op': 'less', 'in': ['i', 'n'], 'out': 'go'}],"  \
    " 'body': [{'op': 'add', 'in': ['acc', 'x'], 'out': 'acc'}," \
    "          {'op': 'add', 'in': ['i', 'one'], 'out': 'i'}]}," \
    "{'op': 'copy', 'in': ['i'], 'out': 'count'}"

static void
test_counted_loop(void)
{
    struct loaded l;
    struct io io = {{1.5f, -2, 0.25f}, 5, 0, false, {9, 9, 9}, -1};
    uint64_t bytes, work;

    ASSERT_OK(load(HEAD COUNTED_LOOP TAIL, &l));
    ASSERT_OK(run(&l, &io, 0));
    ASSERT_EQ(io.count, 5);
    ASSERT_TRUE(io.acc[0] == 7.5f && io.acc[1] == -10 && io.acc[2] == 1.25f);
    /* Zero iterations: the body never runs. */
    io.n = 0;
    ASSERT_OK(run(&l, &io, 0));
    ASSERT_EQ(io.count, 0);
    ASSERT_TRUE(io.acc[0] == 0 && io.acc[1] == 0 && io.acc[2] == 0);
    io.n = -7;
    ASSERT_OK(run(&l, &io, 0));
    ASSERT_EQ(io.count, 0);
    /* Many iterations, with a deadline far away. */
    io.n = 100000;
    ASSERT_OK(run(&l, &io, now_ns() + 60 * 1000000000ull));
    ASSERT_EQ(io.count, 100000);
    ASSERT_TRUE(io.acc[2] == 25000.0f);
    /* The work of the costliest op is found inside the loop. */
    nrtemu__program_footprint(l.program, &bytes, &work);
    ASSERT_UEQ(work, 3);
    unload(&l);
}

/*
 * conditional on k: branch 0 acc = -x; branch 1 a loop adding x n times;
 * branch 2 (also any k out of range) acc = x; count = the branch taken.
 */
static void
test_conditional_int(void)
{
    static const char *prog = HEAD SET_OUTS
        ","
        "{'op': 'full', 'out': 'i', 'value': 0},"
        "{'op': 'full', 'out': 'one', 'value': 1},"
        "{'op': 'conditional', 'in': ['k'], 'branches': ["
        " [{'op': 'neg', 'in': ['x'], 'out': 'acc'}],"
        " [{'op': 'full', 'out': 'count', 'value': 1},"
        "  {'op': 'while', 'in': [], 'pred': 'go',"
        "   'cond': [{'op': 'less', 'in': ['i', 'n'], 'out': 'go'}],"
        "   'body': [{'op': 'add', 'in': ['acc', 'x'], 'out': 'acc'},"
        "            {'op': 'add', 'in': ['i', 'one'], 'out': 'i'}]}],"
        " [{'op': 'copy', 'in': ['x'], 'out': 'acc'},"
        "  {'op': 'full', 'out': 'count', 'value': 2}]]}" TAIL;
    static const struct {
        int32_t k;
        float acc0;
        int32_t count;
    } cases[] = {
        {0, -2, 0}, {1, 6, 1},  {2, 2, 2},
        {3, 2, 2},  {-1, 2, 2}, {INT32_MAX, 2, 2},
    };
    struct loaded l;

    ASSERT_OK(load(prog, &l));
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct io io = {{2, 4, 8}, 3, cases[c].k, false, {0}, -1};
        ASSERT_OK(run(&l, &io, 0));
        ASSERT_EQ(io.count, cases[c].count);
        ASSERT_TRUE(io.acc[0] == cases[c].acc0);
    }
    unload(&l);
}

/* A bool selector: true picks branches[0], false branches[1]; the
 * selector may be computed, and conditionals nest in loop bodies. */
static void
test_conditional_bool(void)
{
    static const char *prog = HEAD SET_OUTS
        ","
        "{'op': 'conditional', 'in': ['flag'], 'branches': ["
        " [{'op': 'full', 'out': 'count', 'value': 10}],"
        " [{'op': 'full', 'out': 'count', 'value': 20}]]},"
        /* Count the i < n with i odd, as a loop over a conditional. */
        "{'op': 'full', 'out': 'i', 'value': 0},"
        "{'op': 'full', 'out': 'one', 'value': 1},"
        "{'op': 'while', 'in': [], 'pred': 'go',"
        " 'cond': [{'op': 'less', 'in': ['i', 'n'], 'out': 'go'}],"
        " 'body': [{'op': 'mod', 'in': ['i', 'k'], 'out': 'u'},"
        "  {'op': 'conditional', 'in': ['u'], 'branches': [[],"
        "   [{'op': 'add', 'in': ['count', 'one'], 'out': 'count'}]]},"
        "  {'op': 'add', 'in': ['i', 'one'], 'out': 'i'}]}" TAIL;
    struct loaded l;
    struct io io = {{0}, 0, 2, true, {0}, -1};

    ASSERT_OK(load(prog, &l));
    ASSERT_OK(run(&l, &io, 0));
    ASSERT_EQ(io.count, 10);
    io.flag = false;
    ASSERT_OK(run(&l, &io, 0));
    ASSERT_EQ(io.count, 20);
    /* i % 2 in uint8: branch 1 for the 5 odd i of 0..9; other values of
     * u than 0 and 1 take the last branch too. */
    io.n = 10;
    ASSERT_OK(run(&l, &io, 0));
    ASSERT_EQ(io.count, 25);
    io.k = 3; /* u in 0, 1, 2: branch 1 for 1 and 2 */
    ASSERT_OK(run(&l, &io, 0));
    ASSERT_EQ(io.count, 26);
    unload(&l);
}

/* A loop that never ends stops at the deadline with NRT_TIMEOUT, naming
 * the loop: an empty body, and one whose body does work. */
static void
test_infinite_loop_times_out(void)
{
    static const char *progs[] = {
        HEAD SET_OUTS ", {'op': 'while', 'in': [], 'pred': 'flag', "
                      "'cond': [], 'body': []}" TAIL,
        HEAD SET_OUTS ", {'op': 'conditional', 'in': ['k'], 'branches': "
                      "[[{'op': 'while', 'in': [], 'pred': 'flag', 'cond': "
                      "[], 'body': [{'op': 'add', 'in': ['acc', 'x'], "
                      "'out': 'acc'}]}]]}" TAIL,
    };
    /* The loop, or an op of its body, past the deadline. */
    static const char *where[] = {
        " in op 2 (while), after ",
        " op 2 (conditional) branches[0] op 0 (while)",
    };

    for (int i = 0; i < 2; i++) {
        struct loaded l;
        struct io io = {{1, 1, 1}, 0, 0, true, {0}, 0};
        uint64_t t0 = now_ns(), elapsed;
        ASSERT_OK(load(progs[i], &l));
        ASSERT_STATUS(run(&l, &io, t0 + 200000000u), NRT_TIMEOUT);
        elapsed = now_ns() - t0;
        ASSERT_TRUE(elapsed >= 200000000u);
        ASSERT_TRUE(elapsed < 2000000000u * TEST_TIME_FACTOR);
        ASSERT_STR_CONTAINS(nrtemu_last_error(),
                            "sg00/program.json: the execution ran past its "
                            "deadline ");
        ASSERT_STR_CONTAINS(nrtemu_last_error(), where[i]);
        ASSERT_STR_CONTAINS(nrtemu_last_error(), "(NEURON_RT_EXEC_TIMEOUT)");
        if (i == 0) {
            ASSERT_STR_CONTAINS(nrtemu_last_error(), " iterations");
        }
        /* The same program ends when the flag is false. */
        io.flag = false;
        ASSERT_OK(run(&l, &io, now_ns() + 1000000000u));
        unload(&l);
    }
}

struct bad {
    const char *name;
    const char *program;
    const char *want;
};

static void
check_bad(const struct bad *c)
{
    struct loaded l;
    NRT_STATUS st = load(c->program, &l);

    if (st != NRT_INVALID) {
        TEST_FAIL_("%s: got %s, expected NRT_INVALID", c->name,
                   nrt_get_status_as_str(st));
    }
    ASSERT_NULL(l.program);
    if (strstr(nrtemu_last_error(), c->want) == NULL) {
        TEST_FAIL_("%s: \"%s\" does not contain \"%s\"", c->name,
                   nrtemu_last_error(), c->want);
    }
    unload(&l);
}

#define LOOP(cond, pred, body)                                  \
    "{'op': 'while', 'in': [], 'cond': " cond ", 'pred': " pred \
    ", 'body': " body "}"

static void
test_validation(void)
{
    static const struct bad cases[] = {
        {"missing pred",
         HEAD SET_OUTS ", {'op': 'while', 'cond': [], "
                       "'body': []}" TAIL,
         "program.json: op 2 (while): \"pred\" must be the name of a buffer"},
        {"pred not a buffer", HEAD SET_OUTS ", " LOOP("[]", "'zz'", "[]") TAIL,
         "op 2 (while): \"pred\" must be the name of a buffer"},
        {"pred not scalar", HEAD SET_OUTS ", " LOOP("[]", "'x'", "[]") TAIL,
         "op 2 (while): pred 'x' is float32[3]: it must be a scalar"},
        {"pred float",
         HEAD SET_OUTS ", {'op': 'full', 'out': 'f', 'value': 1}, " LOOP(
             "[]", "'f'", "[]") TAIL,
         "op 3 (while): pred 'f' is float32[]: it must be bool or an "
         "integer"},
        {"pred unwritten", HEAD SET_OUTS ", " LOOP("[]", "'go'", "[]") TAIL,
         "op 2 (while): pred 'go' is read before any op writes it"},
        {"cond missing",
         HEAD SET_OUTS ", {'op': 'while', 'pred': 'flag', "
                       "'body': []}" TAIL,
         "op 2 (while): \"cond\" must be a list of ops"},
        {"body not a list", HEAD SET_OUTS ", " LOOP("[]", "'flag'", "{}") TAIL,
         "op 2 (while): \"body\" must be a list of ops"},
        {"while with out",
         HEAD SET_OUTS ", {'op': 'while', 'in': [], 'out': 'acc', 'pred': "
                       "'flag', 'cond': [], 'body': []}" TAIL,
         "op 2 (while): has no \"out\""},
        {"while with operands",
         HEAD SET_OUTS ", {'op': 'while', 'in': ['x'], 'pred': 'flag', "
                       "'cond': [], 'body': []}" TAIL,
         "op 2 (while): takes 0 operands, not 1"},
        {"writing an input in a body",
         HEAD SET_OUTS ", " LOOP("[]", "'flag'",
                                 "[{'op': 'neg', 'in': ['acc'], 'out': 'acc'},"
                                 " {'op': 'neg', 'in': ['x'], 'out': 'x'}]")
             TAIL,
         "op 2 (while) body op 1 (neg): out 'x' is an input: inputs and "
         "consts are never written"},
        {"bad op in a cond",
         HEAD SET_OUTS ", " LOOP("[{'op': 'add', 'in': ['x'], 'out': 'go'}]",
                                 "'go'", "[]") TAIL,
         "op 2 (while) cond op 0 (add): takes 2 operands, not 1"},
        {"unknown op in a body",
         HEAD SET_OUTS ", " LOOP("[]", "'flag'", "[{'op': 'frobnicate'}]")
             TAIL,
         "op 2 (while) body op 0: unknown op \"frobnicate\""},
        {"selector not scalar",
         HEAD SET_OUTS ", {'op': 'conditional', 'in': ['x'], 'branches': "
                       "[[]]}" TAIL,
         "op 2 (conditional): in[0] 'x' is float32[3]: it must be a scalar"},
        {"selector unwritten",
         HEAD SET_OUTS ", {'op': 'conditional', 'in': ['i'], 'branches': "
                       "[[]]}" TAIL,
         "op 2 (conditional): in[0] 'i' is read before any op writes it"},
        {"no branches",
         HEAD SET_OUTS ", {'op': 'conditional', 'in': ['k'], 'branches': "
                       "[]}" TAIL,
         "op 2 (conditional): \"branches\" must be a list of one or more"},
        {"bool selector, 3 branches",
         HEAD SET_OUTS ", {'op': 'conditional', 'in': ['flag'], 'branches': "
                       "[[], [], []]}" TAIL,
         "in[0] 'flag' is bool: it selects one of 2 branches, not 3"},
        {"branch not a list",
         HEAD SET_OUTS ", {'op': 'conditional', 'in': ['k'], 'branches': "
                       "[[], 3]}" TAIL,
         "op 2 (conditional): \"branches[1]\" must be a list of ops"},
        {"a branch reads what another writes",
         HEAD SET_OUTS ", {'op': 'conditional', 'in': ['k'], 'branches': ["
                       "[{'op': 'full', 'out': 'i', 'value': 1}],"
                       "[{'op': 'copy', 'in': ['i'], 'out': 'count'}]]}" TAIL,
         "op 2 (conditional) branches[1] op 0 (copy): in[0] 'i' is read "
         "before any op writes it"},
        {"a const written in a nested branch",
         HEAD SET_OUTS ", {'op': 'conditional', 'in': ['k'], 'branches': ["
                       "[], [" LOOP("[]", "'flag'",
                                    "[{'op': 'copy', 'in': ['n'], 'out': "
                                    "'k'}]") "]]}" TAIL,
         "op 2 (conditional) branches[1] op 0 (while) body op 0 (copy): out "
         "'k' is an input"},
        {"output written nowhere",
         HEAD "{'op': 'full', 'out': 'acc', 'value': 0}, " LOOP("[]", "'flag'",
                                                                "[]") TAIL,
         "output 'count' is never written by an op"},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_bad(&cases[i]);
    }
}

/* What any branch or loop writes counts as written after it. */
static void
test_written_in_any_branch(void)
{
    static const char *prog = HEAD
        "{'op': 'conditional', 'in': ['k'], 'branches': ["
        " [{'op': 'full', 'out': 'count', 'value': 1}],"
        " [" LOOP(
            "[]", "'flag'",
            "[{'op': 'copy', 'in': ['x'], 'out': 'acc'}]") "]]},"
                                                           "{'op': 'full', "
                                                           "'out': 'acc', "
                                                           "'value': 3}" TAIL;
    struct loaded l;
    struct io io = {{0}, 0, 0, false, {0}, -5};

    ASSERT_OK(load(prog, &l));
    ASSERT_OK(run(&l, &io, 0));
    ASSERT_EQ(io.count, 1);
    ASSERT_TRUE(io.acc[0] == 3);
    unload(&l);
}

/*
 * Nesting: 32 levels of control ops load and run, 33 do not.  The nest
 * alternates conditionals (k = 1 takes branches[1]) and loops that run
 * once (go is 1 before and their body ends setting it to 0).
 */
static char *
nest_program(int levels)
{
    struct nrtemu_strbuf sb = NRTEMU_STRBUF_INIT;
    char *text;

    nrtemu__strbuf_puts(&sb, HEAD SET_OUTS
                        ", {'op': 'full', 'out': 'one', 'value': 1}, "
                        "{'op': 'full', 'out': 'go', 'value': 1}, ");
    for (int d = 0; d < levels; d++) {
        nrtemu__strbuf_puts(&sb, d % 2 == 0
                                     ? "{'op': 'conditional', 'in': ['k'], "
                                       "'branches': [[], ["
                                     : "{'op': 'while', 'in': [], 'pred': "
                                       "'go', 'cond': [], 'body': [");
    }
    nrtemu__strbuf_puts(&sb, "{'op': 'add', 'in': ['count', 'one'], 'out': "
                             "'count'}, {'op': 'neg', 'in': ['x'], 'out': "
                             "'acc'}");
    for (int d = levels - 1; d >= 0; d--) {
        nrtemu__strbuf_puts(&sb, d % 2 == 0 ? "]]}"
                                            : ", {'op': 'full', 'out': 'go', "
                                              "'value': 0}]}");
    }
    nrtemu__strbuf_puts(&sb, TAIL);
    text = nrtemu__strbuf_take(&sb);
    ASSERT_NOT_NULL(text);
    return text;
}

static void
test_nesting_depth(void)
{
    struct loaded l;
    struct io io = {{1, 2, 3}, 0, 1, false, {0}, 0};
    char *text = nest_program(32);

    ASSERT_OK(load(text, &l));
    ASSERT_OK(run(&l, &io, 0));
    ASSERT_EQ(io.count, 1);
    ASSERT_TRUE(io.acc[2] == -3);
    unload(&l);
    free(text);

    text = nest_program(33);
    ASSERT_STATUS(load(text, &l), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "program.json: op 4 (conditional) branches[1] op 0 "
                        "(while) body op 0 (conditional) branches[1] op 0 "
                        "(while) body op 0 (conditional)");
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "op 0 (conditional): control ops nest more than 32 "
                        "deep (its branches[0] would be level 33)");
    unload(&l);
    free(text);
}

int
main(void)
{
    test_begin("program_control");
    RUN_TEST(test_counted_loop);
    RUN_TEST(test_conditional_int);
    RUN_TEST(test_conditional_bool);
    RUN_TEST(test_infinite_loop_times_out);
    RUN_TEST(test_validation);
    RUN_TEST(test_written_in_any_branch);
    RUN_TEST(test_nesting_depth);
    return 0;
}
