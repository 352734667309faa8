/*
 * json.c - a small, bounded JSON reader (RFC 8259).
 *
 * The document is parsed by recursive descent.  Recursion is bounded by
 * NRTEMU_JSON_MAX_DEPTH, which is checked before each container is entered,
 * so a hostile document cannot exhaust the C stack.  Every node and string
 * comes from one arena that is freed at once.  Elements and members of the
 * containers being parsed are collected on one shared, geometrically grown
 * stack and copied into the arena when their container closes, so a large
 * array costs linear time and one exact-size allocation.
 */
#include <errno.h>
#include <locale.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

/* Longer numbers are rejected: no document we read needs them, and the
 * limit keeps the conversion in a stack buffer. */
#define NUMBER_MAX_CHARS 1024

/* Arena blocks start small (most documents are small) and double up to
 * this size; larger requests get a block of their own. */
#define ARENA_FIRST_BLOCK 4096
#define ARENA_MAX_BLOCK ((size_t)1 << 20)

struct arena_block {
    struct arena_block *next;
    size_t size; /* bytes usable in data */
    size_t used;
    max_align_t data[];
};

struct nrtemu_json_doc {
    struct arena_block *blocks; /* owned chain, newest first */
    size_t next_block_size;
    struct nrtemu_json *root;
};

/* An element (key NULL) or a member of a container being parsed. */
struct slot {
    const char *key;
    struct nrtemu_json *value;
};

struct parser {
    const unsigned char *text;
    size_t len;
    size_t pos;
    struct nrtemu_json_doc *doc;
    struct slot *stack; /* owned by the parse, freed at its end */
    size_t stack_len;
    size_t stack_cap;
    char *err;
    size_t errlen;
};

static void *
arena_alloc(struct nrtemu_json_doc *doc, size_t size)
{
    const size_t align = _Alignof(max_align_t);
    struct arena_block *block = doc->blocks;
    size_t rounded;
    void *out;

    if (size > SIZE_MAX - align) {
        return NULL;
    }
    rounded = (size + align - 1) / align * align;
    if (block == NULL || block->size - block->used < rounded) {
        size_t want = doc->next_block_size;
        if (want < rounded) {
            want = rounded;
        }
        if (want > SIZE_MAX - sizeof *block) {
            return NULL;
        }
        block = malloc(sizeof *block + want);
        if (block == NULL) {
            return NULL;
        }
        block->size = want;
        block->used = 0;
        block->next = doc->blocks;
        doc->blocks = block;
        if (doc->next_block_size < ARENA_MAX_BLOCK) {
            doc->next_block_size *= 2;
        }
    }
    out = (char *)block->data + block->used;
    block->used += rounded;
    return out;
}

/* Record "<message> at offset N"; always returns NULL for tail calls. */
static void *fail_at(struct parser *p, size_t offset, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void *
fail_at(struct parser *p, size_t offset, const char *fmt, ...)
{
    char message[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    if (p->errlen > 0) {
        snprintf(p->err, p->errlen, "%s at offset %zu", message, offset);
    }
    return NULL;
}

static void *
fail_oom(struct parser *p)
{
    return fail_at(p, p->pos, "out of memory");
}

/* What is at `offset`, for messages: "'x'", "byte 0x07" or "end of input". */
static const char *
describe(const struct parser *p, size_t offset, char *buf, size_t buflen)
{
    if (offset >= p->len) {
        return "end of input";
    }
    unsigned char c = p->text[offset];
    if (c >= 0x20 && c < 0x7f) {
        snprintf(buf, buflen, "'%c'", c);
    } else {
        snprintf(buf, buflen, "byte 0x%02x", c);
    }
    return buf;
}

static void
skip_ws(struct parser *p)
{
    while (p->pos < p->len) {
        unsigned char c = p->text[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            break;
        }
        p->pos++;
    }
}

static struct nrtemu_json *
new_node(struct parser *p, enum nrtemu_json_type type)
{
    struct nrtemu_json *node = arena_alloc(p->doc, sizeof *node);

    if (node == NULL) {
        return fail_oom(p);
    }
    memset(node, 0, sizeof *node);
    node->type = type;
    return node;
}

static bool
push(struct parser *p, const char *key, struct nrtemu_json *value)
{
    if (p->stack_len == p->stack_cap) {
        size_t cap = p->stack_cap == 0 ? 64 : p->stack_cap * 2;
        struct slot *grown;
        if (cap > SIZE_MAX / sizeof *grown) {
            return false;
        }
        grown = realloc(p->stack, cap * sizeof *grown);
        if (grown == NULL) {
            return false;
        }
        p->stack = grown;
        p->stack_cap = cap;
    }
    p->stack[p->stack_len].key = key;
    p->stack[p->stack_len].value = value;
    p->stack_len++;
    return true;
}

static int
hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* The 4 hex digits of a \u escape whose backslash is at `at`; -1 if bad. */
static long
read_u_escape(const struct parser *p, size_t at, size_t end)
{
    long value = 0;

    if (end - at < 6 || p->text[at + 1] != 'u') {
        return -1;
    }
    for (size_t i = at + 2; i < at + 6; i++) {
        int digit = hex_value(p->text[i]);
        if (digit < 0) {
            return -1;
        }
        value = value * 16 + digit;
    }
    return value;
}

static size_t
put_utf8(char *out, unsigned long cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/*
 * Length of the well-formed UTF-8 sequence at `at` (before `end`), 0 when
 * ill-formed: overlong forms, surrogates and code points past U+10FFFF
 * are rejected, as RFC 3629 requires.
 */
static size_t
utf8_sequence(const unsigned char *s, size_t at, size_t end)
{
    unsigned char c = s[at];
    unsigned char lo = 0x80, hi = 0xbf;
    size_t n;

    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80;
        hi = c == 0xed ? 0x9f : 0xbf;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf;
    } else {
        return 0;
    }
    if (end - at < n) {
        return 0;
    }
    if (s[at + 1] < lo || s[at + 1] > hi) {
        return 0;
    }
    for (size_t i = 2; i < n; i++) {
        if (s[at + i] < 0x80 || s[at + i] > 0xbf) {
            return 0;
        }
    }
    return n;
}

/*
 * A string whose opening quote is at p->pos.  A first pass finds the
 * closing quote, so the decoded text (never longer than the source) gets
 * one exact allocation; the second pass decodes and validates.
 */
static bool
parse_string(struct parser *p, const char **chars, size_t *len)
{
    size_t start = p->pos + 1, end = start, i, n = 0;
    char *out, desc[16];

    while (end < p->len && p->text[end] != '"') {
        end += p->text[end] == '\\' ? 2 : 1;
    }
    if (end >= p->len) {
        fail_at(p, p->pos, "unterminated string");
        return false;
    }
    out = arena_alloc(p->doc, end - start + 1);
    if (out == NULL) {
        fail_oom(p);
        return false;
    }
    for (i = start; i < end;) {
        unsigned char c = p->text[i];
        if (c < 0x20) {
            fail_at(p, i, "control character 0x%02x in a string", c);
            return false;
        }
        if (c >= 0x80) {
            size_t seq = utf8_sequence(p->text, i, end);
            if (seq == 0) {
                fail_at(p, i, "invalid UTF-8 byte 0x%02x in a string", c);
                return false;
            }
            memcpy(out + n, p->text + i, seq);
            n += seq;
            i += seq;
            continue;
        }
        if (c != '\\') {
            out[n++] = (char)c;
            i++;
            continue;
        }
        switch (p->text[i + 1]) {
        case '"':
        case '\\':
        case '/':
            out[n++] = (char)p->text[i + 1];
            break;
        case 'b':
            out[n++] = '\b';
            break;
        case 'f':
            out[n++] = '\f';
            break;
        case 'n':
            out[n++] = '\n';
            break;
        case 'r':
            out[n++] = '\r';
            break;
        case 't':
            out[n++] = '\t';
            break;
        case 'u': {
            long cp = read_u_escape(p, i, end), low;
            if (cp < 0) {
                fail_at(p, i, "invalid \\u escape (expected 4 hex digits)");
                return false;
            }
            if (cp >= 0xdc00 && cp <= 0xdfff) {
                fail_at(p, i, "unpaired low surrogate \\u%04lx", cp);
                return false;
            }
            if (cp >= 0xd800 && cp <= 0xdbff) {
                low = read_u_escape(p, i + 6, end);
                if (p->text[i + 6] != '\\' || low < 0xdc00 || low > 0xdfff) {
                    fail_at(p, i,
                            "high surrogate \\u%04lx not followed by a low "
                            "surrogate escape",
                            cp);
                    return false;
                }
                cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                i += 6;
            }
            n += put_utf8(out + n, (unsigned long)cp);
            i += 6;
            continue;
        }
        default:
            fail_at(p, i, "invalid escape '\\' followed by %s",
                    describe(p, i + 1, desc, sizeof desc));
            return false;
        }
        i += 2;
    }
    out[n] = '\0';
    *chars = out;
    *len = n;
    p->pos = end + 1;
    return true;
}

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void
make_c_locale(void)
{
    /* strtod() follows LC_NUMERIC, which a host program may have set to a
     * locale with a decimal comma; JSON always uses a point. */
    c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

static bool
is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static struct nrtemu_json *
parse_number(struct parser *p)
{
    size_t start = p->pos, i = start;
    bool integral = true;
    char buf[NUMBER_MAX_CHARS + 1], desc[16];
    struct nrtemu_json *node;

    if (p->text[i] == '-') {
        i++;
    }
    if (i >= p->len || !is_digit(p->text[i])) {
        return fail_at(p, i, "expected a digit in a number, found %s",
                       describe(p, i, desc, sizeof desc));
    }
    if (p->text[i] == '0' && i + 1 < p->len && is_digit(p->text[i + 1])) {
        return fail_at(p, i, "leading zero in a number");
    }
    while (i < p->len && is_digit(p->text[i])) {
        i++;
    }
    if (i < p->len && p->text[i] == '.') {
        integral = false;
        i++;
        if (i >= p->len || !is_digit(p->text[i])) {
            return fail_at(p, i,
                           "expected a digit after the decimal point, found "
                           "%s",
                           describe(p, i, desc, sizeof desc));
        }
        while (i < p->len && is_digit(p->text[i])) {
            i++;
        }
    }
    if (i < p->len && (p->text[i] == 'e' || p->text[i] == 'E')) {
        integral = false;
        i++;
        if (i < p->len && (p->text[i] == '+' || p->text[i] == '-')) {
            i++;
        }
        if (i >= p->len || !is_digit(p->text[i])) {
            return fail_at(p, i, "expected a digit in an exponent, found %s",
                           describe(p, i, desc, sizeof desc));
        }
        while (i < p->len && is_digit(p->text[i])) {
            i++;
        }
    }
    if (i - start > NUMBER_MAX_CHARS) {
        return fail_at(p, start, "number longer than %d characters",
                       NUMBER_MAX_CHARS);
    }
    node = new_node(p, NRTEMU_JSON_NUMBER);
    if (node == NULL) {
        return NULL;
    }
    memcpy(buf, p->text + start, i - start);
    buf[i - start] = '\0';

    pthread_once(&c_locale_once, make_c_locale);
    if (c_locale == (locale_t)0) {
        return fail_oom(p);
    }
    errno = 0;
    node->u.number.value = strtod_l(buf, NULL, c_locale);
    if (errno == ERANGE &&
        (node->u.number.value > 1.0 || node->u.number.value < -1.0)) {
        return fail_at(p, start, "number %s out of range", buf);
    }
    if (integral) {
        /* Accumulate negatively: INT64_MIN has no positive counterpart. */
        bool negative = buf[0] == '-', fits = true;
        int64_t acc = 0;
        for (const char *d = buf + negative; *d != '\0'; d++) {
            int digit = *d - '0';
            if (acc < (INT64_MIN + digit) / 10) {
                fits = false;
                break;
            }
            acc = acc * 10 - digit;
        }
        if (fits && !negative && acc == INT64_MIN) {
            fits = false;
        }
        if (fits) {
            node->u.number.is_int = true;
            node->u.number.ivalue = negative ? acc : -acc;
        }
    }
    p->pos = i;
    return node;
}

static struct nrtemu_json *
parse_literal(struct parser *p)
{
    static const struct {
        const char *word;
        enum nrtemu_json_type type;
        bool value;
    } literals[] = {
        {"true", NRTEMU_JSON_BOOL, true},
        {"false", NRTEMU_JSON_BOOL, false},
        {"null", NRTEMU_JSON_NULL, false},
    };

    for (size_t k = 0; k < sizeof literals / sizeof literals[0]; k++) {
        size_t n = strlen(literals[k].word);
        if (p->len - p->pos >= n &&
            memcmp(p->text + p->pos, literals[k].word, n) == 0) {
            struct nrtemu_json *node = new_node(p, literals[k].type);
            if (node == NULL) {
                return NULL;
            }
            node->u.boolean = literals[k].value;
            p->pos += n;
            return node;
        }
    }
    return fail_at(p, p->pos,
                   "invalid literal (expected true, false or "
                   "null)");
}

static struct nrtemu_json *parse_value(struct parser *p, int depth);

static int
compare_keys(const void *a, const void *b)
{
    const struct nrtemu_json_key *x = a, *y = b;
    int c = strcmp(x->key, y->key);

    return c != 0 ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* The sorted index of a large object (see json.h); false when out of
 * memory. */
static bool
index_object(struct parser *p, struct nrtemu_json *node)
{
    size_t count = node->u.object.count;
    struct nrtemu_json_key *index;

    node->u.object.index = NULL;
    if (count <= NRTEMU_JSON_INDEX_MIN) {
        return true;
    }
    index = arena_alloc(p->doc, count * sizeof *index);
    if (index == NULL) {
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        index[i] = (struct nrtemu_json_key){node->u.object.keys[i], i};
    }
    qsort(index, count, sizeof *index, compare_keys);
    node->u.object.index = index;
    return true;
}

/*
 * Copy the slots above `base` into `node` (array items or object members)
 * and pop them.
 */
static bool
close_container(struct parser *p, struct nrtemu_json *node, size_t base)
{
    size_t count = p->stack_len - base;
    struct nrtemu_json **values = NULL;
    const char **keys = NULL;

    if (count > 0) {
        values = arena_alloc(p->doc, count * sizeof *values);
        if (values == NULL) {
            fail_oom(p);
            return false;
        }
        if (node->type == NRTEMU_JSON_OBJECT) {
            keys = arena_alloc(p->doc, count * sizeof *keys);
            if (keys == NULL) {
                fail_oom(p);
                return false;
            }
        }
    }
    for (size_t i = 0; i < count; i++) {
        values[i] = p->stack[base + i].value;
        if (keys != NULL) {
            keys[i] = p->stack[base + i].key;
        }
    }
    if (node->type == NRTEMU_JSON_OBJECT) {
        node->u.object.keys = keys;
        node->u.object.values = values;
        node->u.object.count = count;
        if (!index_object(p, node)) {
            fail_oom(p);
            return false;
        }
    } else {
        node->u.array.items = values;
        node->u.array.count = count;
    }
    p->stack_len = base;
    return true;
}

/* An array or object whose opening bracket is at p->pos, at nesting
 * level `depth` (the root container is level 1). */
static struct nrtemu_json *
parse_container(struct parser *p, int depth)
{
    bool is_object = p->text[p->pos] == '{';
    char close = is_object ? '}' : ']', desc[16];
    size_t base = p->stack_len;
    struct nrtemu_json *node;

    if (depth > NRTEMU_JSON_MAX_DEPTH) {
        return fail_at(p, p->pos, "nesting deeper than %d levels",
                       NRTEMU_JSON_MAX_DEPTH);
    }
    node = new_node(p, is_object ? NRTEMU_JSON_OBJECT : NRTEMU_JSON_ARRAY);
    if (node == NULL) {
        return NULL;
    }
    p->pos++;
    skip_ws(p);
    if (p->pos < p->len && p->text[p->pos] == close) {
        p->pos++;
        return node;
    }
    for (;;) {
        const char *key = NULL;
        struct nrtemu_json *value;

        if (is_object) {
            size_t key_len, key_at = p->pos;
            if (p->pos >= p->len || p->text[p->pos] != '"') {
                return fail_at(p, p->pos,
                               "expected a string key in an object, found %s",
                               describe(p, p->pos, desc, sizeof desc));
            }
            if (!parse_string(p, &key, &key_len)) {
                return NULL;
            }
            /* Keys are looked up as C strings: an embedded NUL would make
             * two different keys compare equal. */
            if (strlen(key) != key_len) {
                return fail_at(p, key_at, "object key contains \\u0000");
            }
            skip_ws(p);
            if (p->pos >= p->len || p->text[p->pos] != ':') {
                return fail_at(p, p->pos,
                               "expected ':' after an object key, found %s",
                               describe(p, p->pos, desc, sizeof desc));
            }
            p->pos++;
        }
        value = parse_value(p, depth);
        if (value == NULL) {
            return NULL;
        }
        if (!push(p, key, value)) {
            return fail_oom(p);
        }
        skip_ws(p);
        if (p->pos < p->len && p->text[p->pos] == ',') {
            p->pos++;
            skip_ws(p);
            continue;
        }
        if (p->pos < p->len && p->text[p->pos] == close) {
            p->pos++;
            break;
        }
        return fail_at(p, p->pos, "expected ',' or '%c' after %s, found %s",
                       close,
                       is_object ? "an object member" : "an array element",
                       describe(p, p->pos, desc, sizeof desc));
    }
    if (!close_container(p, node, base)) {
        return NULL;
    }
    return node;
}

/* A value inside `depth` levels of containers. */
static struct nrtemu_json *
parse_value(struct parser *p, int depth)
{
    char desc[16];

    skip_ws(p);
    if (p->pos >= p->len) {
        return fail_at(p, p->pos, "expected a value, found end of input");
    }
    switch (p->text[p->pos]) {
    case '{':
    case '[':
        return parse_container(p, depth + 1);
    case '"': {
        struct nrtemu_json *node = new_node(p, NRTEMU_JSON_STRING);
        if (node == NULL ||
            !parse_string(p, &node->u.string.chars, &node->u.string.len)) {
            return NULL;
        }
        return node;
    }
    case 't':
    case 'f':
    case 'n':
        return parse_literal(p);
    default:
        if (p->text[p->pos] == '-' || is_digit(p->text[p->pos])) {
            return parse_number(p);
        }
        return fail_at(p, p->pos, "expected a value, found %s",
                       describe(p, p->pos, desc, sizeof desc));
    }
}

struct nrtemu_json_doc *
nrtemu__json_parse(const char *text, size_t len, char *err, size_t errlen)
{
    struct parser p = {
        .text = (const unsigned char *)text,
        .len = len,
        .err = err,
        .errlen = errlen,
    };
    struct nrtemu_json_doc *doc;
    char desc[16];

    if (errlen > 0) {
        err[0] = '\0';
    }
    if (len > NRTEMU_JSON_MAX_BYTES) {
        fail_at(&p, 0, "document of %zu bytes exceeds the %zu-byte limit", len,
                NRTEMU_JSON_MAX_BYTES);
        return NULL;
    }
    if (text == NULL && len > 0) {
        fail_at(&p, 0, "NULL text");
        return NULL;
    }
    doc = calloc(1, sizeof *doc);
    if (doc == NULL) {
        fail_oom(&p);
        return NULL;
    }
    doc->next_block_size = ARENA_FIRST_BLOCK;
    p.doc = doc;
    doc->root = parse_value(&p, 0);
    if (doc->root != NULL) {
        skip_ws(&p);
        if (p.pos < p.len) {
            doc->root = fail_at(&p, p.pos, "unexpected %s after the document",
                                describe(&p, p.pos, desc, sizeof desc));
        }
    }
    free(p.stack);
    if (doc->root == NULL) {
        nrtemu__json_free(doc);
        return NULL;
    }
    return doc;
}

const struct nrtemu_json *
nrtemu__json_root(const struct nrtemu_json_doc *d)
{
    return d != NULL ? d->root : NULL;
}

void
nrtemu__json_free(struct nrtemu_json_doc *doc)
{
    if (doc == NULL) {
        return;
    }
    while (doc->blocks != NULL) {
        struct arena_block *next = doc->blocks->next;
        free(doc->blocks);
        doc->blocks = next;
    }
    free(doc);
}

const struct nrtemu_json *
nrtemu__json_get(const struct nrtemu_json *obj, const char *key)
{
    if (obj == NULL || obj->type != NRTEMU_JSON_OBJECT) {
        return NULL;
    }
    if (obj->u.object.index != NULL) {
        /* The last entry with this key: past the end of the run of equal
         * keys, one back.  (The last of duplicates wins, as below.) */
        const struct nrtemu_json_key *index = obj->u.object.index;
        size_t lo = 0, hi = obj->u.object.count;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (strcmp(index[mid].key, key) <= 0) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if (lo > 0 && strcmp(index[lo - 1].key, key) == 0) {
            return obj->u.object.values[index[lo - 1].pos];
        }
        return NULL;
    }
    /* From the end: the last of duplicate keys wins, as in Python. */
    for (size_t i = obj->u.object.count; i-- > 0;) {
        if (strcmp(obj->u.object.keys[i], key) == 0) {
            return obj->u.object.values[i];
        }
    }
    return NULL;
}

bool
nrtemu__json_get_string(const struct nrtemu_json *obj, const char *key,
                        const char **out)
{
    const struct nrtemu_json *v = nrtemu__json_get(obj, key);

    if (v == NULL || v->type != NRTEMU_JSON_STRING) {
        return false;
    }
    *out = v->u.string.chars;
    return true;
}

bool
nrtemu__json_get_int(const struct nrtemu_json *obj, const char *key,
                     int64_t *out)
{
    const struct nrtemu_json *v = nrtemu__json_get(obj, key);

    if (v == NULL || v->type != NRTEMU_JSON_NUMBER || !v->u.number.is_int) {
        return false;
    }
    *out = v->u.number.ivalue;
    return true;
}

bool
nrtemu__json_get_bool(const struct nrtemu_json *obj, const char *key,
                      bool *out)
{
    const struct nrtemu_json *v = nrtemu__json_get(obj, key);

    if (v == NULL || v->type != NRTEMU_JSON_BOOL) {
        return false;
    }
    *out = v->u.boolean;
    return true;
}
