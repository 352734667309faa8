/*
 * test_op_table.c - the op table (program_ops.c, from NRTEMU_OP_LIST):
 * every row is complete and consistent, every name is found by name, and
 * the operations table of docs/neff-emulator-format.md §3 lists each op
 * once with the operand count and the attributes of its row.  An op added
 * to the list without its validator, kernel call or cost does not link;
 * one added without its documentation fails here.
 *
 * Usage: test_op_table <path of docs/neff-emulator-format.md>
 */
#include <ctype.h>

#include "test.h"

#include "program/program_internal.h"

/* The kernel class of each op, from the same list. */
static const enum nrtemu_op_class op_class[NRTEMU_OP_COUNT] = {
#define OP_CLASS(suffix, name, arity, cls, check, run, cost, attrs, flags) \
    [NRTEMU_OP_##suffix] = NRTEMU_OPC_##cls,
    NRTEMU_OP_LIST(OP_CLASS)
#undef OP_CLASS
};

static const char *doc_path; /* docs/neff-emulator-format.md */

static const uint32_t all_attrs = (1u << NRTEMU_ATTR_COUNT) - 1;
static const uint32_t all_flags = NRTEMU_OPF_STREAMS | NRTEMU_OPF_FLOAT_ONLY |
                                  NRTEMU_OPF_CONTROL | NRTEMU_OPF_IN_PLACE;

static void
test_rows_complete(void)
{
    for (int i = 0; i < NRTEMU_OP_COUNT; i++) {
        const struct nrtemu_op_def *d = &nrtemu__op_defs[i];
        ASSERT_NOT_NULL(d->name);
        ASSERT_TRUE(d->name[0] != '\0');
        for (const char *c = d->name; *c; c++) {
            ASSERT_TRUE(islower((unsigned char)*c) ||
                        isdigit((unsigned char)*c) || *c == '_');
        }
        ASSERT_NOT_NULL(d->check);
        ASSERT_NOT_NULL(d->run);
        ASSERT_NOT_NULL(d->cost);
        ASSERT_TRUE(d->arity >= -1 && d->arity <= 3);
        ASSERT_UEQ(d->attrs & ~all_attrs, 0);
        ASSERT_UEQ(d->flags & ~all_flags, 0);
    }
}

/* Elementwise ops (a kernel class) run through the elementwise kernel,
 * stream, and take the operands their loops read; the others do not. */
static void
test_rows_consistent(void)
{
    for (int i = 0; i < NRTEMU_OP_COUNT; i++) {
        const struct nrtemu_op_def *d = &nrtemu__op_defs[i];
        bool elementwise = d->run == nrtemu__op_run_elementwise;
        ASSERT_EQ(elementwise, op_class[i] != NRTEMU_OPC_NONE);
        if (elementwise) {
            ASSERT_TRUE((d->flags & NRTEMU_OPF_STREAMS) != 0);
            ASSERT_UEQ(d->attrs, 0);
        }
        switch (op_class[i]) {
        case NRTEMU_OPC_UNARY:
        case NRTEMU_OPC_CONVERT:
        case NRTEMU_OPC_TEST:
            ASSERT_EQ(d->arity, 1);
            break;
        case NRTEMU_OPC_BINARY:
        case NRTEMU_OPC_COMPARE:
            ASSERT_EQ(d->arity, 2);
            break;
        case NRTEMU_OPC_LOGICAL:
        case NRTEMU_OPC_BITWISE:
            ASSERT_TRUE(d->arity == 1 || d->arity == 2);
            break;
        case NRTEMU_OPC_WHERE:
            ASSERT_EQ(d->arity, 3);
            break;
        case NRTEMU_OPC_NONE:
            break;
        }
    }
    /* A few rows, as the format document states them. */
    ASSERT_EQ(nrtemu__op_defs[NRTEMU_OP_CONCATENATE].arity, -1);
    ASSERT_EQ(nrtemu__op_defs[NRTEMU_OP_IOTA].arity, 0);
    ASSERT_PTR_EQ(nrtemu__op_defs[NRTEMU_OP_MATMUL].cost,
                  nrtemu__op_cost_matmul);
    ASSERT_UEQ(nrtemu__op_defs[NRTEMU_OP_SOFTMAX].flags,
               NRTEMU_OPF_FLOAT_ONLY);
    ASSERT_UEQ(nrtemu__op_defs[NRTEMU_OP_RESHAPE].flags, NRTEMU_OPF_STREAMS);
    ASSERT_UEQ(nrtemu__op_defs[NRTEMU_OP_ADD].flags, NRTEMU_OPF_STREAMS);
    ASSERT_UEQ(nrtemu__op_defs[NRTEMU_OP_SCATTER].flags, NRTEMU_OPF_IN_PLACE);
    ASSERT_UEQ(nrtemu__op_defs[NRTEMU_OP_EXP].flags,
               NRTEMU_OPF_STREAMS | NRTEMU_OPF_FLOAT_ONLY);
    ASSERT_UEQ(nrtemu__op_defs[NRTEMU_OP_SLICE].attrs,
               (1u << NRTEMU_ATTR_START) | (1u << NRTEMU_ATTR_STEP));
}

static void
test_names(void)
{
    static const char *const strangers[] = {
        "", "ad", "addd", "ADD", "add ", " add", "unknown", "neg\n",
    };
    enum nrtemu_op op;

    for (int i = 0; i < NRTEMU_OP_COUNT; i++) {
        const char *name = nrtemu__op_defs[i].name;
        op = NRTEMU_OP_COUNT;
        ASSERT_TRUE(nrtemu__op_find(name, &op));
        ASSERT_EQ(op, i); /* so names are also unique */
        ASSERT_STR_EQ(nrtemu__op_name((enum nrtemu_op)i), name);
    }
    for (size_t i = 0; i < sizeof strangers / sizeof strangers[0]; i++) {
        op = NRTEMU_OP_COUNT;
        ASSERT_TRUE(!nrtemu__op_find(strangers[i], &op));
        ASSERT_EQ(op, NRTEMU_OP_COUNT);
    }
    ASSERT_STR_EQ(nrtemu__op_name(NRTEMU_OP_COUNT), "unknown");
    ASSERT_STR_EQ(nrtemu__op_name((enum nrtemu_op) - 1), "unknown");
    for (int a = 0; a < NRTEMU_ATTR_COUNT; a++) {
        const char *key = nrtemu__attr_key((enum nrtemu_attr)a);
        ASSERT_TRUE(key[0] != '\0' && strcmp(key, "unknown") != 0);
        for (int b = 0; b < a; b++) {
            ASSERT_TRUE(strcmp(key, nrtemu__attr_key((enum nrtemu_attr)b)));
        }
    }
    ASSERT_STR_EQ(nrtemu__attr_key(NRTEMU_ATTR_COUNT), "unknown");
}

/* The next `...` span of [*p, end) into buf; false when there is none. */
static bool
next_code(const char **p, const char *end, char *buf, size_t len)
{
    const char *a = memchr(*p, '`', (size_t)(end - *p)), *b;

    if (a == NULL) {
        return false;
    }
    b = memchr(a + 1, '`', (size_t)(end - a - 1));
    ASSERT_NOT_NULL(b);
    ASSERT_ULT((size_t)(b - a - 1), len);
    memcpy(buf, a + 1, (size_t)(b - a - 1));
    buf[b - a - 1] = '\0';
    *p = b + 1;
    return true;
}

/*
 * One row of the document's operations table, "| `names` | operands |
 * attributes | result |": checks each op it names against the op table
 * and counts it in seen[].
 */
static void
check_doc_row(const char *line, const char *eol, int *seen)
{
    const char *cell[4], *p = line + 1;
    char names[512], code[128];
    uint32_t attrs = 0;
    int arity;

    for (int c = 0; c < 4; c++) {
        cell[c] = p;
        p = memchr(p, '|', (size_t)(eol - p));
        ASSERT_NOT_NULL(p);
        p++;
    }
    /* Operands: a count, or "≥1" for one or more. */
    arity = strncmp(cell[1] + 1,
                    "\xe2\x89\xa5"
                    "1",
                    4) == 0
                ? -1
                : (int)strtol(cell[1], NULL, 10);
    /* Attributes: the `names` in the cell that are keys, not values. */
    p = cell[2];
    while (next_code(&p, cell[3] - 1, code, sizeof code)) {
        bool known = false;
        if (code[0] == '"') {
            continue; /* a value, e.g. "nan" */
        }
        for (int a = 0; a < NRTEMU_ATTR_COUNT; a++) {
            if (strcmp(code, nrtemu__attr_key((enum nrtemu_attr)a)) == 0) {
                attrs |= 1u << a;
                known = true;
            }
        }
        if (!known) {
            TEST_FAIL_("the document lists attribute \"%s\", which no op "
                       "has",
                       code);
        }
    }
    p = cell[0];
    ASSERT_TRUE(next_code(&p, cell[1] - 1, names, sizeof names));
    for (char *save = NULL, *n = strtok_r(names, " ", &save); n != NULL;
         n = strtok_r(NULL, " ", &save)) {
        enum nrtemu_op op;
        if (!nrtemu__op_find(n, &op)) {
            TEST_FAIL_("the document lists op \"%s\", which the table "
                       "lacks",
                       n);
        }
        seen[op]++;
        if (nrtemu__op_defs[op].arity != arity ||
            nrtemu__op_defs[op].attrs != attrs) {
            TEST_FAIL_("op %s: the document says %d operands and attributes "
                       "0x%x; its row %d and 0x%x",
                       n, arity, attrs, nrtemu__op_defs[op].arity,
                       nrtemu__op_defs[op].attrs);
        }
    }
}

static void
test_documented(void)
{
    size_t size;
    char *text = test_read_file(doc_path, &size), *p, *end;
    int seen[NRTEMU_OP_COUNT] = {0}, rows = 0;

    p = strstr(text, "\n### Operations\n");
    ASSERT_NOT_NULL(p);
    end = strstr(p + 1, "\n#");
    end = end != NULL ? end : text + size;
    while (p < end) {
        char *eol = strchr(p + 1, '\n');
        eol = eol != NULL ? eol : text + size;
        if (strncmp(p + 1, "| `", 3) == 0) {
            check_doc_row(p + 1, eol, seen);
            rows++;
        }
        p = eol;
    }
    ASSERT_TRUE(rows > 0);
    for (int i = 0; i < NRTEMU_OP_COUNT; i++) {
        if (seen[i] != 1) {
            TEST_FAIL_("op %s is in the document's operations table %d "
                       "times",
                       nrtemu__op_defs[i].name, seen[i]);
        }
    }
    free(text);
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s neff-emulator-format.md\n", argv[0]);
        return 2;
    }
    doc_path = argv[1];
    test_begin("op_table");
    RUN_TEST(test_rows_complete);
    RUN_TEST(test_rows_consistent);
    RUN_TEST(test_names);
    RUN_TEST(test_documented);
    return 0;
}
