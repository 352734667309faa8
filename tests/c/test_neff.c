/*
 * test_neff.c - the NEFF reader (header, gzip, tar, def.json, .npy), the
 * JSON parser and the payload hashes, linked in directly.
 *
 * NEFF images are built here in memory: a small ustar writer, zlib for
 * gzip, and our own hashes (themselves checked against known vectors).
 */
#include "test.h"

#include <zlib.h>

#include "util/json.h"
#include "neff/md5.h"
#include "neff/neff.h"
#include "neff/sha256.h"
#include "neff/tar.h"

#define FUNC "nrt_load"

/* ------------------------------------------------------------------ */
/* A growable byte buffer.                                            */

struct buf {
    unsigned char *p;
    size_t len;
    size_t cap;
};

static void
buf_put(struct buf *b, const void *data, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap == 0 ? 4096 : b->cap;
        while (cap < b->len + n) {
            cap *= 2;
        }
        b->p = realloc(b->p, cap);
        ASSERT_NOT_NULL(b->p);
        b->cap = cap;
    }
    if (n > 0) {
        memcpy(b->p + b->len, data, n);
    }
    b->len += n;
}

static void
buf_zeros(struct buf *b, size_t n)
{
    static const unsigned char zero[512];

    while (n > 0) {
        size_t k = n < sizeof zero ? n : sizeof zero;
        buf_put(b, zero, k);
        n -= k;
    }
}

static void
buf_free(struct buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------------------ */
/* A minimal ustar writer.                                            */

static void
tar_checksum(unsigned char h[512])
{
    unsigned sum = 0;

    memset(h + 148, ' ', 8);
    for (int i = 0; i < 512; i++) {
        sum += h[i];
    }
    snprintf((char *)h + 148, 8, "%06o", sum);
    h[155] = ' ';
}

static void
tar_header(unsigned char h[512], const char *name, size_t size, char type)
{
    memset(h, 0, 512);
    snprintf((char *)h, 100, "%s", name);
    memcpy(h + 100, "0000644", 8);
    memcpy(h + 108, "0000000", 8);
    memcpy(h + 116, "0000000", 8);
    snprintf((char *)h + 124, 12, "%011zo", size);
    memcpy(h + 136, "00000000000", 12);
    h[156] = (unsigned char)type;
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    tar_checksum(h);
}

static void
tar_raw(struct buf *t, const unsigned char h[512], const void *data, size_t n)
{
    buf_put(t, h, 512);
    buf_put(t, data, n);
    buf_zeros(t, (512 - n % 512) % 512);
}

static void
tar_add(struct buf *t, const char *name, const void *data, size_t n)
{
    unsigned char h[512];

    tar_header(h, name, n, '0');
    tar_raw(t, h, data, n);
}

static void
tar_add_str(struct buf *t, const char *name, const char *text)
{
    tar_add(t, name, text, strlen(text));
}

static void
tar_end(struct buf *t)
{
    buf_zeros(t, 1024);
}

/* ------------------------------------------------------------------ */
/* NEFF images.                                                       */

struct neff_opts {
    uint64_t pkg_version;
    uint64_t header_size;
    uint64_t version_major;
    uint64_t version_minor;
    uint64_t feature_bits;
    uint32_t lnc_size;
    bool bad_hash;
    bool gzip;
};

static const struct neff_opts default_opts = {
    .pkg_version = 1,
    .header_size = 1024,
    .version_major = 2,
    .version_minor = 0,
    .lnc_size = 1,
};

static void
put_le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

static void
gzip_bytes(const unsigned char *in, size_t n, struct buf *out)
{
    z_stream zs;
    unsigned char chunk[65536];
    int ret;

    memset(&zs, 0, sizeof zs);
    ASSERT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY),
              Z_OK);
    zs.next_in = (unsigned char *)in;
    zs.avail_in = (uInt)n;
    do {
        zs.next_out = chunk;
        zs.avail_out = sizeof chunk;
        ret = deflate(&zs, Z_FINISH);
        ASSERT_TRUE(ret == Z_OK || ret == Z_STREAM_END);
        buf_put(out, chunk, sizeof chunk - zs.avail_out);
    } while (ret != Z_STREAM_END);
    deflateEnd(&zs);
}

/* Header + payload (the tar, gzipped when opts->gzip). */
static void
make_neff(const struct buf *tar, const struct neff_opts *o, struct buf *out)
{
    unsigned char h[1024];
    struct buf payload = {0};

    if (o->gzip) {
        gzip_bytes(tar->p, tar->len, &payload);
    } else {
        buf_put(&payload, tar->p, tar->len);
    }
    memset(h, 0, sizeof h);
    put_le(h + 0x000, o->pkg_version, 8);
    put_le(h + 0x008, o->header_size, 8);
    put_le(h + 0x010, payload.len, 8);
    put_le(h + 0x018, o->version_major, 8);
    put_le(h + 0x020, o->version_minor, 8);
    snprintf((char *)h + 0x028, 128, "test-build 1.2.3");
    put_le(h + 0x0a8, 2, 4);
    if (o->pkg_version == 2) {
        nrtemu__md5(payload.p, payload.len, h + 0x0ac);
    } else {
        nrtemu__sha256(payload.p, payload.len, h + 0x0ac);
    }
    if (o->bad_hash) {
        h[0x0ac] ^= 1;
    }
    memcpy(h + 0x0cc, "0123456789abcdef", 16);
    snprintf((char *)h + 0x0dc, 256, "test-neff");
    put_le(h + 0x1dc, 1, 4);
    put_le(h + 0x220, o->feature_bits, 8);
    put_le(h + 0x228, o->lnc_size, 4);
    out->len = 0;
    buf_put(out, h, sizeof h);
    buf_put(out, payload.p, payload.len);
    buf_free(&payload);
}

static const char *const def0 =
    "{\"var\": {"
    " \"a\": {\"type\": \"input\", \"size\": 24, \"shape\": [2, 3],"
    "        \"dtype\": \"float32\", \"var_id\": 0},"
    " \"w\": {\"type\": \"file\", \"size\": 24, \"file_name\": \"w.npy\"},"
    " \"out\": {\"type\": \"output\", \"size\": 12, \"shape\": [2, 3],"
    "          \"dtype\": \"float16\"},"
    " \"b\": {\"type\": \"input\", \"size\": 7},"
    " \"s\": {\"type\": \"state-buffer\", \"size\": 64},"
    " \"t\": {\"type\": \"tmp-buf\", \"size\": 0}"
    "}, \"emulator_program\": \"program.json\"}";

static const char *const def1 =
    "{\"var\": {\"c\": {\"type\": \"input\", \"size\": 4, \"shape\": [4],"
    " \"dtype\": \"int8\"},"
    " \"out1\": {\"type\": \"output\", \"size\": 8, \"shape\": [],"
    " \"dtype\": \"float64\"}}}";

/* A .npy v1 file: header dict padded so the data starts at a multiple
 * of 64, as numpy does. */
static void
npy_v1(struct buf *out, const char *dict, const void *data, size_t n)
{
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    size_t dlen = strlen(dict), hlen = (10 + dlen + 1 + 63) / 64 * 64 - 10;

    put_le(pre + 8, hlen, 2);
    out->len = 0;
    buf_put(out, pre, sizeof pre);
    buf_put(out, dict, dlen);
    for (size_t i = dlen; i < hlen - 1; i++) {
        buf_put(out, " ", 1);
    }
    buf_put(out, "\n", 1);
    buf_put(out, data, n);
}

/* The tar of a typical two-subgraph NEFF. */
static void
standard_tar(struct buf *t)
{
    unsigned char h[512];
    struct buf npy = {0};
    float w[6] = {1, 2, 3, 4, 5, 6};

    t->len = 0;
    tar_header(h, "./", 0, '5');
    tar_raw(t, h, NULL, 0);
    tar_add_str(t, "./neff.json",
                "{\"name\": \"t\", \"version\": \"2.0\", \"subgraphs\": "
                "[\"sg00\", \"sg01\"]}");
    tar_header(h, "./sg00", 0, '5');
    tar_raw(t, h, NULL, 0);
    tar_add_str(t, "./sg00/def.json", def0);
    npy_v1(&npy, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
           w, sizeof w);
    tar_add(t, "./sg00/w.npy", npy.p, npy.len);
    tar_add_str(t, "./sg01/def.json", def1);
    tar_add_str(t, "sg00/program.json", "{}");
    tar_end(t);
    buf_free(&npy);
}

static struct nrtemu_neff *
open_ok(const struct buf *image, bool validate)
{
    struct nrtemu_neff *neff = NULL;

    ASSERT_OK(nrtemu__neff_open(FUNC, image->p, image->len, validate, &neff));
    ASSERT_NOT_NULL(neff);
    return neff;
}

static void
open_bad(const struct buf *image, bool validate, NRT_STATUS status,
         const char *detail)
{
    struct nrtemu_neff *neff = (struct nrtemu_neff *)&neff;

    ASSERT_STATUS(
        nrtemu__neff_open(FUNC, image->p, image->len, validate, &neff),
        status);
    ASSERT_NULL(neff);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), FUNC ": ");
    ASSERT_STR_CONTAINS(nrtemu_last_error(), detail);
}

/* A NEFF of `tar` with the default header. */
static void
image_of(const struct buf *tar, bool gzip, struct buf *image)
{
    struct neff_opts o = default_opts;

    o.gzip = gzip;
    make_neff(tar, &o, image);
}

static void
tar_bad(const struct buf *tar, const char *detail)
{
    struct buf image = {0};

    image_of(tar, false, &image);
    open_bad(&image, false, NRT_INVALID, detail);
    buf_free(&image);
}

/* A one-subgraph tar whose def.json is `def`. */
static void
def_tar(struct buf *t, const char *def)
{
    t->len = 0;
    tar_add_str(t, "sg00/def.json", def);
    tar_end(t);
}

static void
def_bad(const char *def, const char *detail)
{
    struct buf t = {0};

    def_tar(&t, def);
    tar_bad(&t, detail);
    buf_free(&t);
}

/* ------------------------------------------------------------------ */
/* Hashes.                                                            */

static void
hex_of(const uint8_t *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(out + 2 * i, 3, "%02x", d[i]);
    }
}

static void
check_sha256(const void *data, size_t n, const char *want)
{
    uint8_t d[32];
    char got[65];
    struct nrtemu_sha256 ctx;
    const unsigned char *p = data;

    nrtemu__sha256(data, n, d);
    hex_of(d, 32, got);
    ASSERT_STR_EQ(got, want);
    /* Streaming in uneven pieces gives the same digest. */
    nrtemu__sha256_init(&ctx);
    for (size_t at = 0, step = 1; at < n; at += step, step = step * 3 + 1) {
        nrtemu__sha256_update(&ctx, p + at, step < n - at ? step : n - at);
    }
    nrtemu__sha256_final(&ctx, d);
    hex_of(d, 32, got);
    ASSERT_STR_EQ(got, want);
}

static void
check_md5(const void *data, size_t n, const char *want)
{
    uint8_t d[16];
    char got[33];
    struct nrtemu_md5 ctx;
    const unsigned char *p = data;

    nrtemu__md5(data, n, d);
    hex_of(d, 16, got);
    ASSERT_STR_EQ(got, want);
    nrtemu__md5_init(&ctx);
    for (size_t at = 0, step = 1; at < n; at += step, step = step * 3 + 1) {
        nrtemu__md5_update(&ctx, p + at, step < n - at ? step : n - at);
    }
    nrtemu__md5_final(&ctx, d);
    hex_of(d, 16, got);
    ASSERT_STR_EQ(got, want);
}

static void
test_sha256_vectors(void)
{
    static const char two_blocks[] =
        "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    char *million = malloc(1000000);

    ASSERT_NOT_NULL(million);
    memset(million, 'a', 1000000);
    check_sha256("abc", 3,
                 "ba7816bf8f01cfea414140de5dae2223"
                 "b00361a396177a9cb410ff61f20015ad");
    check_sha256("", 0,
                 "e3b0c44298fc1c149afbf4c8996fb924"
                 "27ae41e4649b934ca495991b7852b855");
    check_sha256(two_blocks, strlen(two_blocks),
                 "248d6a61d20638b8e5c026930c3e6039"
                 "a33ce45964ff2167f6ecedd419db06c1");
    check_sha256(million, 1000000,
                 "cdc76e5c9914fb9281a1c7e284d73e67"
                 "f1809a48a497200e046d39ccc7112cd0");
    free(million);
}

static void
test_md5_vectors(void)
{
    static const char digits[] = "1234567890123456789012345678901234567890"
                                 "1234567890123456789012345678901234567890";
    char *million = malloc(1000000);

    ASSERT_NOT_NULL(million);
    memset(million, 'a', 1000000);
    check_md5("", 0, "d41d8cd98f00b204e9800998ecf8427e");
    check_md5("a", 1, "0cc175b9c0f1b6a831c399e269772661");
    check_md5("abc", 3, "900150983cd24fb0d6963f7d28e17f72");
    check_md5("message digest", 14, "f96b697d7cb7938d525a2f31aaf161d0");
    check_md5("abcdefghijklmnopqrstuvwxyz", 26,
              "c3fcd3d76192e4007dfb496cca67e13b");
    check_md5(digits, strlen(digits), "57edf4a22be3c955ac49da2e2107b67a");
    check_md5(million, 1000000, "7707d6ae4e027c70eea2a935c2296f21");
    free(million);
}

/* ------------------------------------------------------------------ */
/* JSON.                                                              */

static char jerr[256];

static struct nrtemu_json_doc *
json_ok(const char *text)
{
    struct nrtemu_json_doc *doc =
        nrtemu__json_parse(text, strlen(text), jerr, sizeof jerr);

    if (doc == NULL) {
        TEST_FAIL_("'%s' rejected: %s", text, jerr);
    }
    return doc;
}

static void
json_bad_n(const char *text, size_t n, const char *reason)
{
    struct nrtemu_json_doc *doc =
        nrtemu__json_parse(text, n, jerr, sizeof jerr);

    if (doc != NULL) {
        TEST_FAIL_("'%.*s' accepted", (int)n, text);
    }
    ASSERT_STR_CONTAINS(jerr, reason);
}

static void
json_bad(const char *text, const char *reason)
{
    json_bad_n(text, strlen(text), reason);
}

/* The single string of `text` (a JSON string literal) equals want[n]. */
static void
json_string_is(const char *text, const char *want, size_t n)
{
    struct nrtemu_json_doc *doc = json_ok(text);
    const struct nrtemu_json *s = nrtemu__json_root(doc);

    ASSERT_EQ(s->type, NRTEMU_JSON_STRING);
    ASSERT_UEQ(s->u.string.len, n);
    ASSERT_TRUE(memcmp(s->u.string.chars, want, n) == 0);
    ASSERT_EQ(s->u.string.chars[n], '\0');
    nrtemu__json_free(doc);
}

static const struct nrtemu_json *
json_number(struct nrtemu_json_doc **doc, const char *text)
{
    const struct nrtemu_json *v;

    *doc = json_ok(text);
    v = nrtemu__json_root(*doc);
    ASSERT_EQ(v->type, NRTEMU_JSON_NUMBER);
    return v;
}

static void
json_int_is(const char *text, int64_t want)
{
    struct nrtemu_json_doc *doc;
    const struct nrtemu_json *v = json_number(&doc, text);

    ASSERT_TRUE(v->u.number.is_int);
    ASSERT_EQ(v->u.number.ivalue, want);
    ASSERT_TRUE(v->u.number.value == (double)want);
    nrtemu__json_free(doc);
}

static void
json_double_is(const char *text, double want)
{
    struct nrtemu_json_doc *doc;
    const struct nrtemu_json *v = json_number(&doc, text);

    ASSERT_TRUE(!v->u.number.is_int);
    if (v->u.number.value != want) {
        TEST_FAIL_("%s parsed as %.17g, expected %.17g", text,
                   v->u.number.value, want);
    }
    nrtemu__json_free(doc);
}

/* Large objects are looked up through their sorted index: every key is
 * found, the last duplicate wins as in small objects, absent keys (before,
 * between and after the present ones) are absent. */
static void
test_json_large_object_lookup(void)
{
    enum { N = 3000 };
    size_t cap = (size_t)N * 24 + 64, len = 0;
    char *text = malloc(cap);
    int64_t v;

    ASSERT_NOT_NULL(text);
    len += (size_t)snprintf(text + len, cap - len, "{");
    for (int i = 0; i < N; i++) {
        /* keys in a scrambled order; k7 appears twice */
        int k = (i * 7919) % N;
        len += (size_t)snprintf(text + len, cap - len, "%s\"k%d\": %d",
                                i ? ", " : "", k, i);
    }
    len += (size_t)snprintf(text + len, cap - len, ", \"k7\": -1}");
    struct nrtemu_json_doc *doc = json_ok(text);
    const struct nrtemu_json *root = nrtemu__json_root(doc);
    ASSERT_NOT_NULL(root->u.object.index);
    for (int i = 0; i < N; i++) {
        char key[16];
        int k = (i * 7919) % N;
        snprintf(key, sizeof key, "k%d", k);
        ASSERT_TRUE(nrtemu__json_get_int(root, key, &v));
        ASSERT_EQ(v, k == 7 ? -1 : i);
    }
    ASSERT_NULL(nrtemu__json_get(root, "k"));
    ASSERT_NULL(nrtemu__json_get(root, "k10a"));
    ASSERT_NULL(nrtemu__json_get(root, "a"));
    ASSERT_NULL(nrtemu__json_get(root, "zz"));
    ASSERT_NULL(nrtemu__json_get(root, "k3000"));
    nrtemu__json_free(doc);
    free(text);
}

static void
test_json_structure(void)
{
    struct nrtemu_json_doc *doc =
        json_ok(" {\"z\": 1, \"a\": [true, false, null, \"x\", {}, []],"
                " \"m\": {\"k\": -2}, \"z\": \"last\", \"b\": true}\r\n\t");
    const struct nrtemu_json *root = nrtemu__json_root(doc), *a;
    const char *s;
    int64_t i;
    bool b;

    ASSERT_EQ(root->type, NRTEMU_JSON_OBJECT);
    ASSERT_UEQ(root->u.object.count, 5);
    /* Document order is kept, duplicates included. */
    ASSERT_STR_EQ(root->u.object.keys[0], "z");
    ASSERT_STR_EQ(root->u.object.keys[1], "a");
    ASSERT_STR_EQ(root->u.object.keys[2], "m");
    ASSERT_STR_EQ(root->u.object.keys[3], "z");
    ASSERT_STR_EQ(root->u.object.keys[4], "b");
    /* ... and the last duplicate wins in lookups. */
    ASSERT_TRUE(nrtemu__json_get_string(root, "z", &s));
    ASSERT_STR_EQ(s, "last");
    ASSERT_TRUE(!nrtemu__json_get_int(root, "z", &i));
    ASSERT_TRUE(nrtemu__json_get_int(nrtemu__json_get(root, "m"), "k", &i));
    ASSERT_EQ(i, -2);
    ASSERT_TRUE(nrtemu__json_get_bool(root, "b", &b));
    ASSERT_TRUE(b);
    ASSERT_TRUE(!nrtemu__json_get_bool(root, "missing", &b));
    ASSERT_NULL(nrtemu__json_get(root, "missing"));
    ASSERT_NULL(nrtemu__json_get(nrtemu__json_get(root, "a"), "x"));
    a = nrtemu__json_get(root, "a");
    ASSERT_EQ(a->type, NRTEMU_JSON_ARRAY);
    ASSERT_UEQ(a->u.array.count, 6);
    ASSERT_EQ(a->u.array.items[0]->type, NRTEMU_JSON_BOOL);
    ASSERT_TRUE(a->u.array.items[0]->u.boolean);
    ASSERT_TRUE(!a->u.array.items[1]->u.boolean);
    ASSERT_EQ(a->u.array.items[2]->type, NRTEMU_JSON_NULL);
    ASSERT_STR_EQ(a->u.array.items[3]->u.string.chars, "x");
    ASSERT_EQ(a->u.array.items[4]->type, NRTEMU_JSON_OBJECT);
    ASSERT_UEQ(a->u.array.items[4]->u.object.count, 0);
    ASSERT_EQ(a->u.array.items[5]->type, NRTEMU_JSON_ARRAY);
    ASSERT_UEQ(a->u.array.items[5]->u.array.count, 0);
    nrtemu__json_free(doc);

    /* Scalars are documents too. */
    doc = json_ok("null");
    ASSERT_EQ(nrtemu__json_root(doc)->type, NRTEMU_JSON_NULL);
    nrtemu__json_free(doc);
    nrtemu__json_free(NULL);
}

static void
test_json_strings(void)
{
    json_string_is("\"\"", "", 0);
    json_string_is("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"",
                   "\" \\ / \b \f \n \r \t", 15);
    json_string_is("\"\\u0041\\u00e9\\u20AC\"", "A\xc3\xa9\xe2\x82\xac", 6);
    json_string_is("\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80", 4);
    json_string_is("\"\\uDBFF\\uDFFF\"", "\xf4\x8f\xbf\xbf", 4);
    json_string_is("\"a\\u0000b\"", "a\0b", 3);
    json_string_is("\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
                   "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14);

    json_bad("\"\\ud800\"", "high surrogate \\ud800 not followed");
    json_bad("\"\\ud800\\u0041\"", "not followed by a low surrogate");
    json_bad("\"\\ud800x\"", "not followed by a low surrogate");
    json_bad("\"\\udc00\"", "unpaired low surrogate \\udc00 at offset 1");
    json_bad("\"\\u12\"", "invalid \\u escape");
    json_bad("\"\\u12g4\"", "invalid \\u escape");
    json_bad("\"\\x\"", "invalid escape '\\' followed by 'x' at offset 1");
    json_bad("\"abc", "unterminated string at offset 0");
    json_bad("\"abc\\\"", "unterminated string");
    json_bad("\"a\nb\"", "control character 0x0a in a string at offset 2");
    json_bad("\"\xc0\x80\"",
             "invalid UTF-8 byte 0xc0 in a string at offset 1");
    json_bad("\"\xed\xa0\x80\"", "invalid UTF-8");
    json_bad("\"\xf4\x90\x80\x80\"", "invalid UTF-8");
    json_bad("\"\xe2\x82\"", "invalid UTF-8");
    json_bad("\"\xff\"", "invalid UTF-8");
    json_bad("{\"a\\u0000\": 1}", "object key contains \\u0000 at offset 1");
}

static void
test_json_numbers(void)
{
    struct nrtemu_json_doc *doc;
    const struct nrtemu_json *v;

    json_int_is("0", 0);
    json_int_is("-0", 0);
    json_int_is("123", 123);
    json_int_is("-42", -42);
    json_int_is("9223372036854775807", INT64_MAX);
    json_int_is("-9223372036854775808", INT64_MIN);
    json_double_is("9223372036854775808", 9223372036854775808.0);
    json_double_is("-9223372036854775809", -9223372036854775808.0);
    json_double_is("1.5", 1.5);
    json_double_is("1e3", 1000.0);
    json_double_is("1E+3", 1000.0);
    json_double_is("-1.25e-2", -0.0125);
    json_double_is("0.1", 0.1);
    json_double_is("1e-999", 0.0);
    json_double_is("2.0", 2.0);

    v = json_number(&doc, "-0");
    ASSERT_TRUE(v->u.number.value == 0.0);
    nrtemu__json_free(doc);

    json_bad("01", "leading zero in a number at offset 0");
    json_bad("-01", "leading zero in a number at offset 1");
    json_bad("1.", "expected a digit after the decimal point");
    json_bad(".5", "expected a value, found '.' at offset 0");
    json_bad("-", "expected a digit in a number, found end of input");
    json_bad("-a", "expected a digit in a number, found 'a' at offset 1");
    json_bad("1e", "expected a digit in an exponent");
    json_bad("1e+", "expected a digit in an exponent");
    json_bad("+1", "expected a value, found '+'");
    json_bad("1e999", "out of range at offset 0");
    json_bad("-1e999", "out of range");
    json_bad("NaN", "expected a value, found 'N'");
    json_bad("Infinity", "expected a value");
    json_bad("0x10", "unexpected 'x' after the document at offset 1");

    /* Over-long numbers are refused rather than converted. */
    char long_number[2048];
    memset(long_number, '1', sizeof long_number - 1);
    long_number[sizeof long_number - 1] = '\0';
    json_bad(long_number, "number longer than 1024 characters");
}

static void
test_json_syntax_errors(void)
{
    json_bad("", "expected a value, found end of input at offset 0");
    json_bad("   ", "expected a value, found end of input at offset 3");
    json_bad("{} x", "unexpected 'x' after the document at offset 3");
    json_bad("[1] [2]", "unexpected '[' after the document at offset 4");
    json_bad_n("{}\0", 3, "unexpected byte 0x00 after the document");
    json_bad("[1,]", "expected a value, found ']' at offset 3");
    json_bad("[1 2]", "expected ',' or ']' after an array element, found "
                      "'2' at offset 3");
    json_bad("[", "expected a value, found end of input at offset 1");
    json_bad("[1", "expected ',' or ']' after an array element, found end "
                   "of input at offset 2");
    json_bad("{\"a\" 1}", "expected ':' after an object key, found '1' at "
                          "offset 5");
    json_bad("{\"a\": 1,}", "expected a string key in an object, found "
                            "'}' at offset 8");
    json_bad("{,}", "expected a string key");
    json_bad("{1: 2}", "expected a string key in an object, found '1'");
    json_bad("{\"a\": 1 \"b\": 2}", "expected ',' or '}' after an object "
                                    "member");
    json_bad("tru", "invalid literal (expected true, false or null) at "
                    "offset 0");
    json_bad("nul", "invalid literal");
    json_bad("[truex]", "expected ',' or ']' after an array element, found "
                        "'x' at offset 5");
    json_bad("\xef\xbb\xbf{}", "expected a value, found byte 0xef");
    json_bad("'a'", "expected a value, found '''");
}

static void
test_json_depth(void)
{
    char text[4 * 140 + 1];
    struct nrtemu_json_doc *doc;
    const struct nrtemu_json *v;

    /* 128 levels are fine (32 levels of control ops in a program)... */
    memset(text, '[', 128);
    memset(text + 128, ']', 128);
    text[256] = '\0';
    doc = json_ok(text);
    v = nrtemu__json_root(doc);
    for (int i = 1; i < 128; i++) {
        ASSERT_UEQ(v->u.array.count, 1);
        v = v->u.array.items[0];
    }
    ASSERT_UEQ(v->u.array.count, 0);
    nrtemu__json_free(doc);

    /* ... 129 are not, and neither are objects that deep. */
    memset(text, '[', 129);
    memset(text + 129, ']', 129);
    text[258] = '\0';
    json_bad(text, "nesting deeper than 128 levels at offset 128");
    text[0] = '\0';
    for (int i = 0; i < 129; i++) {
        strcat(text, "{\"\":");
    }
    json_bad(text, "nesting deeper than 128 levels");

    /* A deep, unterminated hostile document fails at the limit. */
    size_t n = (size_t)1 << 20;
    char *deep = malloc(n);
    ASSERT_NOT_NULL(deep);
    memset(deep, '[', n);
    json_bad_n(deep, n, "nesting deeper than 128 levels at offset 128");
    free(deep);
}

static void
test_json_large(void)
{
    /* One million elements: linear time, exact counts. */
    size_t count = 1000000, n = 0;
    char *text = malloc(2 * count + 2);
    struct nrtemu_json_doc *doc;
    const struct nrtemu_json *v;

    ASSERT_NOT_NULL(text);
    text[n++] = '[';
    for (size_t i = 0; i < count; i++) {
        text[n++] = (char)('0' + i % 10);
        text[n++] = ',';
    }
    text[n - 1] = ']';
    doc = nrtemu__json_parse(text, n, jerr, sizeof jerr);
    ASSERT_NOT_NULL(doc);
    v = nrtemu__json_root(doc);
    ASSERT_UEQ(v->u.array.count, count);
    ASSERT_EQ(v->u.array.items[count - 1]->u.number.ivalue, 9);
    nrtemu__json_free(doc);
    free(text);

    /* Over the size limit: refused before reading. */
    size_t big = NRTEMU_JSON_MAX_BYTES + 1;
    char *huge = calloc(1, big);
    ASSERT_NOT_NULL(huge);
    json_bad_n(huge, big, "exceeds the 67108864-byte limit");
    free(huge);
}

/* ------------------------------------------------------------------ */
/* NEFF: valid images.                                                */

static void
check_standard(struct nrtemu_neff *neff)
{
    const struct nrtemu_neff_io *io = neff->io;
    const struct nrtemu_neff_file *f;

    ASSERT_UEQ(neff->header.pkg_version, 1);
    ASSERT_UEQ(neff->header.neff_version_major, 2);
    ASSERT_STR_EQ(neff->header.neff_build_version, "test-build 1.2.3");
    ASSERT_STR_EQ(neff->header.name, "test-neff");
    ASSERT_UEQ(neff->header.num_tpb, 2);
    ASSERT_UEQ(neff->header.requested_tpb_count, 1);
    ASSERT_UEQ(neff->header.lnc_size, 1);
    ASSERT_TRUE(memcmp(neff->header.uuid, "0123456789abcdef", 16) == 0);

    ASSERT_EQ(neff->subgraph_count, 2);
    ASSERT_STR_EQ(neff->subgraphs[0].dir, "sg00");
    ASSERT_STR_EQ(neff->subgraphs[1].dir, "sg01");
    ASSERT_EQ(neff->subgraphs[1].number, 1);

    /* Inputs of every subgraph in order, then the outputs. */
    ASSERT_UEQ(neff->io_count, 5);
    ASSERT_STR_EQ(io[0].name, "a");
    ASSERT_EQ(io[0].usage, NRT_TENSOR_USAGE_INPUT);
    ASSERT_UEQ(io[0].size, 24);
    ASSERT_EQ(io[0].dtype, NRTEMU_DTYPE_FLOAT32);
    ASSERT_UEQ(io[0].ndim, 2);
    ASSERT_UEQ(io[0].shape[0], 2);
    ASSERT_UEQ(io[0].shape[1], 3);
    ASSERT_EQ(io[0].subgraph, 0);
    ASSERT_STR_EQ(io[1].name, "b");
    ASSERT_EQ(io[1].dtype, NRTEMU_DTYPE_UNKNOWN);
    ASSERT_UEQ(io[1].ndim, 1);
    ASSERT_UEQ(io[1].shape[0], 7);
    ASSERT_STR_EQ(io[2].name, "c");
    ASSERT_EQ(io[2].dtype, NRTEMU_DTYPE_INT8);
    ASSERT_EQ(io[2].subgraph, 1);
    ASSERT_STR_EQ(io[3].name, "out");
    ASSERT_EQ(io[3].usage, NRT_TENSOR_USAGE_OUTPUT);
    ASSERT_EQ(io[3].dtype, NRTEMU_DTYPE_FLOAT16);
    ASSERT_UEQ(io[3].size, 12);
    ASSERT_EQ(io[3].subgraph, 0);
    ASSERT_STR_EQ(io[4].name, "out1");
    ASSERT_EQ(io[4].dtype, NRTEMU_DTYPE_FLOAT64);
    ASSERT_UEQ(io[4].ndim, 0);
    ASSERT_EQ(io[4].subgraph, 1);

    /* Files: normalised paths, directories left out, sorted. */
    ASSERT_UEQ(neff->file_count, 5);
    for (size_t i = 1; i < neff->file_count; i++) {
        ASSERT_TRUE(strcmp(neff->files[i - 1].path, neff->files[i].path) < 0);
    }
    f = nrtemu__neff_find(neff, "sg00/def.json");
    ASSERT_NOT_NULL(f);
    ASSERT_UEQ(f->size, strlen(def0));
    ASSERT_TRUE(memcmp(f->data, def0, f->size) == 0);
    ASSERT_NOT_NULL(nrtemu__neff_find(neff, "neff.json"));
    ASSERT_NOT_NULL(nrtemu__neff_find(neff, "sg00/program.json"));
    ASSERT_NULL(nrtemu__neff_find(neff, "./sg00/def.json"));
    ASSERT_NULL(nrtemu__neff_find(neff, "sg00"));
    ASSERT_NULL(nrtemu__neff_find(neff, "sg02/def.json"));
    ASSERT_NULL(nrtemu__neff_find(neff, ""));
}

static void
test_neff_raw_and_gzip(void)
{
    struct buf tar = {0}, image = {0};
    struct nrtemu_neff *neff;

    standard_tar(&tar);
    for (int gz = 0; gz < 2; gz++) {
        image_of(&tar, gz, &image);
        if (gz) {
            ASSERT_EQ(image.p[1024], 0x1f);
            ASSERT_ULT(image.len, 1024 + tar.len);
        }
        neff = open_ok(&image, true);
        ASSERT_UEQ(neff->payload_size, tar.len);
        check_standard(neff);
        nrtemu__neff_free(neff);
    }
    nrtemu__neff_free(NULL);
    buf_free(&tar);
    buf_free(&image);
}

static void
test_neff_json_member(void)
{
    struct buf tar = {0}, image = {0};
    struct nrtemu_neff *neff;
    struct nrtemu_json_doc *doc;
    const char *s;

    standard_tar(&tar);
    tar.len -= 1024;
    tar_add_str(&tar, "sg00/broken.json", "{\"a\": }");
    tar_end(&tar);
    image_of(&tar, false, &image);
    neff = open_ok(&image, false);

    ASSERT_OK(nrtemu__neff_json(FUNC, neff, "neff.json", &doc));
    ASSERT_TRUE(
        nrtemu__json_get_string(nrtemu__json_root(doc), "version", &s));
    ASSERT_STR_EQ(s, "2.0");
    nrtemu__json_free(doc);

    ASSERT_STATUS(nrtemu__neff_json(FUNC, neff, "nope.json", &doc),
                  NRT_INVALID);
    ASSERT_NULL(doc);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "NEFF has no member "
                                             "'nope.json'");
    ASSERT_STATUS(nrtemu__neff_json(FUNC, neff, "sg00/broken.json", &doc),
                  NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "sg00/broken.json: invalid JSON: expected a value, "
                        "found '}' at offset 6");
    nrtemu__neff_free(neff);
    buf_free(&tar);
    buf_free(&image);
}

/* ------------------------------------------------------------------ */
/* NEFF: the header.                                                  */

static void
header_case(const struct neff_opts *o, bool validate, NRT_STATUS status,
            const char *detail)
{
    struct buf tar = {0}, image = {0};

    standard_tar(&tar);
    make_neff(&tar, o, &image);
    if (status == NRT_SUCCESS) {
        nrtemu__neff_free(open_ok(&image, validate));
    } else {
        open_bad(&image, validate, status, detail);
    }
    buf_free(&tar);
    buf_free(&image);
}

static void
test_neff_header_checks(void)
{
    struct neff_opts o;
    struct buf tar = {0}, image = {0};
    struct nrtemu_neff *neff = NULL;

    o = default_opts;
    o.header_size = 512;
    header_case(&o, false, NRT_INVALID, "header_size is 512, expected 1024");
    o = default_opts;
    o.version_major = 3;
    o.version_minor = 1;
    header_case(&o, false, NRT_UNSUPPORTED_NEFF_VERSION,
                "NEFF version 3.1 is not supported");
    o.version_major = 0;
    header_case(&o, false, NRT_UNSUPPORTED_NEFF_VERSION, "version 0.1");
    o.version_major = 1;
    header_case(&o, false, NRT_SUCCESS, NULL);
    o = default_opts;
    o.feature_bits = 0x100;
    header_case(&o, false, NRT_UNSUPPORTED_NEFF_VERSION,
                "NEFF version: 2.0, features: 0x100 are not supported.  "
                "Currently supporting: 0x80000000000000ff");
    o.feature_bits = 0x4000000000000001ull;
    header_case(&o, false, NRT_UNSUPPORTED_NEFF_VERSION,
                "features: 0x4000000000000000 are not supported");
    o.feature_bits = NRTEMU_NEFF_FEATURES_SUPPORTED;
    header_case(&o, false, NRT_SUCCESS, NULL);
    o = default_opts;
    o.lnc_size = 3;
    header_case(&o, false, NRT_INVALID, "lnc_size is 3, expected 0, 1 or 2");
    for (uint32_t lnc = 0; lnc <= 2; lnc++) {
        o.lnc_size = lnc;
        header_case(&o, false, NRT_SUCCESS, NULL);
    }

    /* data_size must match what follows the header. */
    standard_tar(&tar);
    make_neff(&tar, &default_opts, &image);
    image.len -= 1;
    open_bad(&image, false, NRT_INVALID, "NEFF data_size is ");
    image.len += 1;
    buf_put(&image, "", 1);
    open_bad(&image, false, NRT_INVALID, "bytes follow the header");
    /* Exactly a header, with data_size 0. */
    put_le(image.p + 0x10, 0, 8);
    image.len = 1024;
    open_bad(&image, false, NRT_INVALID, "empty payload (data_size 0)");
    image.len = 1023;
    open_bad(&image, false, NRT_INVALID,
             "NEFF image of 1023 bytes is smaller than its 1024-byte header");
    ASSERT_STATUS(nrtemu__neff_open(FUNC, NULL, 0, false, &neff), NRT_INVALID);
    buf_free(&tar);
    buf_free(&image);
}

static void
test_neff_hash(void)
{
    struct neff_opts o = default_opts;

    for (int gz = 0; gz < 2; gz++) {
        o.gzip = gz;
        o.pkg_version = 1;
        o.bad_hash = false;
        header_case(&o, true, NRT_SUCCESS, NULL);
        o.bad_hash = true;
        header_case(&o, true, NRT_INVALID,
                    "NEFF payload hash mismatch: header sha256 ");
        header_case(&o, false, NRT_SUCCESS, NULL);
        o.pkg_version = 2;
        o.bad_hash = false;
        header_case(&o, true, NRT_SUCCESS, NULL);
        o.bad_hash = true;
        header_case(&o, true, NRT_INVALID,
                    "NEFF payload hash mismatch: header md5 ");
        header_case(&o, false, NRT_SUCCESS, NULL);
        /* No hash kind: nothing to check. */
        o.pkg_version = 0;
        header_case(&o, true, NRT_SUCCESS, NULL);
        o.pkg_version = 7;
        header_case(&o, true, NRT_INVALID, "pkg_version 7");
        header_case(&o, false, NRT_SUCCESS, NULL);
    }
}

/* ------------------------------------------------------------------ */
/* NEFF: gzip.                                                        */

/* Bits of a deflate stream, least significant first. */
struct bits {
    struct buf *out;
    uint32_t acc;
    int n;
};

static void
bits_put(struct bits *w, uint32_t value, int n)
{
    for (int i = 0; i < n; i++) {
        w->acc |= ((value >> i) & 1) << w->n;
        if (++w->n == 8) {
            unsigned char byte = (unsigned char)w->acc;
            buf_put(w->out, &byte, 1);
            w->acc = 0;
            w->n = 0;
        }
    }
}

/* A Huffman code goes most significant bit first. */
static void
bits_code(struct bits *w, uint32_t code, int len)
{
    for (int i = len - 1; i >= 0; i--) {
        bits_put(w, code >> i, 1);
    }
}

/*
 * A gzip stream of `prefix` (may be NULL; deflated by zlib into blocks of
 * its own, flushed to a byte boundary) then 1 + 258 * matches zero bytes at
 * the best ratio deflate allows (zlib itself stays just under 1024:1 on
 * zeros): one dynamic block whose codes are literal 0 = "10", end = "11",
 * length 258 = "0" and distance 1 = "0", so every 258 bytes cost 2 bits.
 */
static void
gzip_bomb_after(struct buf *out, const struct buf *prefix, size_t matches)
{
    static const unsigned char order[18] = {16, 17, 18, 0,  8, 7,  9, 6,  10,
                                            5,  11, 4,  12, 3, 13, 2, 14, 1};
    static const unsigned char header[10] = {0x1f, 0x8b, 8, 0, 0,
                                             0,    0,    0, 0, 0xff};
    struct bits w = {.out = out};
    unsigned char zeros[4096] = {0}, trailer[8];
    uLong crc = crc32(0, NULL, 0);
    size_t total = 1 + 258 * matches;

    buf_put(out, header, sizeof header);
    if (prefix != NULL) {
        z_stream zs = {0};
        unsigned char chunk[4096];
        ASSERT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY),
                  Z_OK);
        zs.next_in = prefix->p;
        zs.avail_in = (uInt)prefix->len;
        do {
            zs.next_out = chunk;
            zs.avail_out = sizeof chunk;
            ASSERT_NE(deflate(&zs, Z_FULL_FLUSH), Z_STREAM_ERROR);
            buf_put(out, chunk, sizeof chunk - zs.avail_out);
        } while (zs.avail_out == 0);
        deflateEnd(&zs);
        crc = crc32(crc, prefix->p, (uInt)prefix->len);
        total += prefix->len;
    }
    bits_put(&w, 1, 1);  /* BFINAL */
    bits_put(&w, 2, 2);  /* dynamic Huffman */
    bits_put(&w, 29, 5); /* 286 literal/length codes */
    bits_put(&w, 0, 5);  /* 1 distance code */
    bits_put(&w, 14, 4); /* 18 code-length codes */
    for (int i = 0; i < 18; i++) {
        /* Code-length code: 18 = "0", 1 = "10", 2 = "11". */
        int len = order[i] == 18 ? 1 : order[i] == 1 || order[i] == 2 ? 2 : 0;
        bits_put(&w, (uint32_t)len, 3);
    }
    bits_code(&w, 3, 2); /* literal 0: length 2 */
    bits_code(&w, 0, 1); /* 18: 138 zeros (literals 1-138) */
    bits_put(&w, 127, 7);
    bits_code(&w, 0, 1); /* 18: 117 zeros (139-255) */
    bits_put(&w, 106, 7);
    bits_code(&w, 3, 2); /* end of block 256: length 2 */
    bits_code(&w, 0, 1); /* 18: 28 zeros (257-284) */
    bits_put(&w, 17, 7);
    bits_code(&w, 2, 2); /* 285: length 1 */
    bits_code(&w, 2, 2); /* distance 0: length 1 */

    bits_code(&w, 2, 2); /* literal 0 */
    for (size_t i = 0; i < matches; i++) {
        bits_code(&w, 0, 1); /* length 258 */
        bits_code(&w, 0, 1); /* distance 1 */
    }
    bits_code(&w, 3, 2); /* end of block */
    bits_put(&w, 0, 7);  /* flush the last byte */

    for (size_t left = total; left > 0;) {
        size_t k = left < sizeof zeros ? left : sizeof zeros;
        crc = crc32(crc, zeros, (uInt)k);
        left -= k;
    }
    put_le(trailer, crc, 4);
    put_le(trailer + 4, total, 4);
    buf_put(out, trailer, sizeof trailer);
}

static void
gzip_bomb(struct buf *out, size_t matches)
{
    gzip_bomb_after(out, NULL, matches);
}

static void
test_neff_gzip_bounds(void)
{
    struct buf tar = {0}, gz = {0}, image = {0};
    struct neff_opts o = default_opts;

    /* The crafted stream is valid: a small one inflates to zeros, an
     * empty archive. */
    gzip_bomb(&gz, 100);
    make_neff(&gz, &o, &image);
    open_bad(&image, false, NRT_INVALID,
             "NEFF has no sgNN/def.json among its 0 files");

    /* 10 MiB of zeros from about 10 KB: inflating stops where the zeros
     * end the (empty) archive, and the stream going on for megabytes
     * after it is refused, at about 1 MiB: not the 10 MiB it holds. */
    gz.len = 0;
    gzip_bomb(&gz, (size_t)10 << 20 >> 8);
    ASSERT_ULT(gz.len * NRTEMU_NEFF_MAX_RATIO, 1 + 258 * ((10 << 20) >> 8));
    make_neff(&gz, &o, &image);
    open_bad(&image, false, NRT_INVALID,
             "goes on for more than 1048576 bytes after the end of its tar "
             "archive (at byte 1024)");

    /* A member that declares 1 GiB, followed by 32 MiB of zeros: the
     * archive itself asks for them, so the ratio bound is what refuses
     * it. */
    tar.len = 0;
    tar_add_str(&tar, "sg00/def.json", "{}");
    unsigned char h[512];
    tar_header(h, "big.bin", (size_t)1 << 30, '0');
    buf_put(&tar, h, 512);
    gz.len = 0;
    gzip_bomb_after(&gz, &tar, (size_t)32 << 20 >> 8);
    make_neff(&gz, &o, &image);
    open_bad(&image, false, NRT_INVALID, "inflates to more than ");
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "x the ");

    /* Truncated gzip stream. */
    standard_tar(&tar);
    gz.len = 0;
    gzip_bytes(tar.p, tar.len, &gz);
    gz.len -= 20;
    make_neff(&gz, &o, &image);
    open_bad(&image, false, NRT_INVALID, "gzip NEFF payload is truncated");

    /* Corrupt deflate data. */
    gz.len = 0;
    gzip_bytes(tar.p, tar.len, &gz);
    for (size_t i = 12; i < 40 && i < gz.len; i++) {
        gz.p[i] ^= 0x5a;
    }
    make_neff(&gz, &o, &image);
    open_bad(&image, false, NRT_INVALID, "corrupt gzip NEFF payload");

    /* Data after the stream is refused; zero padding is not. */
    gz.len = 0;
    gzip_bytes(tar.p, tar.len, &gz);
    buf_zeros(&gz, 100);
    make_neff(&gz, &o, &image);
    nrtemu__neff_free(open_ok(&image, false));
    gzip_bytes(tar.p, tar.len, &gz);
    make_neff(&gz, &o, &image);
    open_bad(&image, false, NRT_INVALID, "follow the gzip stream");

    /* Just the magic. */
    gz.len = 0;
    buf_put(&gz, "\x1f\x8b", 2);
    make_neff(&gz, &o, &image);
    open_bad(&image, false, NRT_INVALID, "gzip NEFF payload is truncated");
    buf_free(&tar);
    buf_free(&gz);
    buf_free(&image);
}

/* ------------------------------------------------------------------ */
/* NEFF: the tar.                                                     */

static void
test_tar_errors(void)
{
    struct buf tar = {0};
    unsigned char h[512];

    /* Truncated data. */
    standard_tar(&tar);
    tar.len = 5 * 512 + 100;
    tar_bad(&tar, "bytes of data, but only 100 remain");

    /* Truncated header. */
    standard_tar(&tar);
    tar.len = 512 + 300;
    tar_bad(&tar, "truncated header at offset 512 (300 bytes left");

    /* Bad checksum. */
    standard_tar(&tar);
    tar.p[512 + 10] ^= 1;
    tar_bad(&tar, "checksum mismatch in the header at offset 512");

    /* Garbage in the checksum field. */
    standard_tar(&tar);
    tar.p[512 + 148] = 'x';
    tar_bad(&tar, "invalid checksum field in the header at offset 512");

    /* Sizes: too large for what remains, not octal, base-256 overflow. */
    def_tar(&tar, "{}");
    memcpy(tar.p + 124, "77777777777", 11);
    tar_checksum(tar.p);
    tar_bad(&tar, "has 8589934591 bytes of data, but only");
    def_tar(&tar, "{}");
    tar.p[124 + 5] = '9';
    tar_checksum(tar.p);
    tar_bad(&tar, "invalid size field in the header at offset 0");
    def_tar(&tar, "{}");
    memset(tar.p + 124, 0xff, 12);
    tar.p[124] = 0x80;
    tar_checksum(tar.p);
    tar_bad(&tar, "invalid size field");
    def_tar(&tar, "{}");
    memset(tar.p + 124, 0xff, 12);
    tar_checksum(tar.p);
    tar_bad(&tar, "invalid size field"); /* negative base-256 */

    /* A member without a name. */
    tar.len = 0;
    tar_add_str(&tar, "./", "x");
    tar_end(&tar);
    tar_bad(&tar, "the member at offset 0 has an empty path");

    /* An empty archive and an archive without def.json. */
    tar.len = 0;
    tar_end(&tar);
    tar_bad(&tar, "NEFF has no sgNN/def.json among its 0 files");
    tar.len = 0;
    tar_add_str(&tar, "sg0/def.json", "{}");
    tar_add_str(&tar, "sg00/x/def.json", "{}");
    tar_add_str(&tar, "sgab/def.json", "{}");
    tar_add_str(&tar, "sg0000000000/def.json", "{}");
    tar_end(&tar);
    tar_bad(&tar, "NEFF has no sgNN/def.json among its 4 files");

    /* A PAX header with a malformed record. */
    tar.len = 0;
    tar_header(h, "pax", 11, 'x');
    tar_raw(&tar, h, "99 path=a\n", 11);
    tar_add_str(&tar, "sg00/def.json", "{}");
    tar_end(&tar);
    tar_bad(&tar, "malformed PAX record at byte 0 of the extended header "
                  "at offset 0");
    buf_free(&tar);
}

static void
test_tar_formats(void)
{
    struct buf tar = {0}, image = {0};
    unsigned char h[512];
    char long_dir[300], long_path[400], record[600];
    struct nrtemu_neff *neff;
    const struct nrtemu_neff_file *f;

    memset(long_dir, 'd', 250);
    long_dir[250] = '\0';

    /* GNU long name ('L'), PAX path and size ('x'), PAX global ('g'),
     * links and FIFOs skipped, ustar prefix, base-256 size, duplicates. */
    tar.len = 0;
    snprintf(long_path, sizeof long_path, "./%s/gnu.txt", long_dir);
    tar_header(h, "././@LongLink", strlen(long_path) + 1, 'L');
    tar_raw(&tar, h, long_path, strlen(long_path) + 1);
    tar_add_str(&tar, "ignored-short-name", "gnu");

    snprintf(long_path, sizeof long_path, "%s/pax.txt", long_dir);
    /* "<len> path=<path>\n", where <len> counts its own digits. */
    int rlen = (int)strlen(long_path) + 7;
    rlen += rlen + 3 >= 1000 ? 4 : rlen + 3 >= 100 ? 3 : 2;
    snprintf(record, sizeof record, "%d path=%s\n", rlen, long_path);
    ASSERT_UEQ(strlen(record), (size_t)rlen);
    strcat(record, "13 size=0005\n10 x=yz=w\n");
    tar_header(h, "PaxHeader", strlen(record), 'x');
    tar_raw(&tar, h, record, strlen(record));
    /* The PAX size (5) wins over the header's (0). */
    tar_header(h, "short", 0, '0');
    tar_raw(&tar, h, "hello", 5);

    tar_header(h, "pax_global_header", 19, 'g');
    tar_raw(&tar, h, "19 comment=ignored\n", 19);
    tar_header(h, "link", 0, '2');
    tar_raw(&tar, h, NULL, 0);
    tar_header(h, "fifo", 0, '6');
    tar_raw(&tar, h, NULL, 0);

    tar_header(h, "file.txt", 6, '0');
    memcpy(h + 345, "pre/fix", 7);
    tar_checksum(h);
    tar_raw(&tar, h, "prefix", 6);

    tar_header(h, "b256.bin", 0, '0');
    memset(h + 124, 0, 12);
    h[124] = 0x80;
    h[135] = 3;
    tar_checksum(h);
    tar_raw(&tar, h, "abc", 3);

    tar_header(h, "v7.txt", 2, '\0');
    memset(h + 257, 0, 8);
    tar_checksum(h);
    tar_raw(&tar, h, "v7", 2);

    tar_add_str(&tar, "dup.txt", "first");
    tar_add_str(&tar, "./dup.txt", "second");
    tar_add_str(&tar, "//sg00//./def.json/", "{}");
    tar_end(&tar);
    /* Anything after the end marker is ignored. */
    tar_add_str(&tar, "after-end.txt", "x");

    image_of(&tar, true, &image);
    neff = open_ok(&image, false);
    ASSERT_UEQ(neff->file_count, 7);
    ASSERT_UEQ(neff->io_count, 0);

    snprintf(long_path, sizeof long_path, "%s/gnu.txt", long_dir);
    f = nrtemu__neff_find(neff, long_path);
    ASSERT_NOT_NULL(f);
    ASSERT_UEQ(f->size, 3);
    ASSERT_TRUE(memcmp(f->data, "gnu", 3) == 0);
    snprintf(long_path, sizeof long_path, "%s/pax.txt", long_dir);
    f = nrtemu__neff_find(neff, long_path);
    ASSERT_NOT_NULL(f);
    ASSERT_UEQ(f->size, 5);
    ASSERT_TRUE(memcmp(f->data, "hello", 5) == 0);
    f = nrtemu__neff_find(neff, "pre/fix/file.txt");
    ASSERT_NOT_NULL(f);
    ASSERT_UEQ(f->size, 6);
    f = nrtemu__neff_find(neff, "b256.bin");
    ASSERT_NOT_NULL(f);
    ASSERT_TRUE(f->size == 3 && memcmp(f->data, "abc", 3) == 0);
    ASSERT_NOT_NULL(nrtemu__neff_find(neff, "v7.txt"));
    f = nrtemu__neff_find(neff, "dup.txt");
    ASSERT_NOT_NULL(f);
    ASSERT_TRUE(f->size == 6 && memcmp(f->data, "second", 6) == 0);
    ASSERT_NOT_NULL(nrtemu__neff_find(neff, "sg00/def.json"));
    ASSERT_NULL(nrtemu__neff_find(neff, "ignored-short-name"));
    ASSERT_NULL(nrtemu__neff_find(neff, "short"));
    ASSERT_NULL(nrtemu__neff_find(neff, "link"));
    ASSERT_NULL(nrtemu__neff_find(neff, "after-end.txt"));
    nrtemu__neff_free(neff);

    /* No end marker at all, and the last member's padding missing. */
    tar.len = 0;
    tar_add_str(&tar, "sg00/def.json", "{}");
    tar.len -= 512 - 2;
    image_of(&tar, false, &image);
    nrtemu__neff_free(open_ok(&image, false));
    buf_free(&tar);
    buf_free(&image);
}

static void
test_tar_entry_limit(void)
{
    enum { LIMIT = 1000 };
    struct buf tar = {0};
    unsigned char h[512];
    char name[32];
    struct nrtemu_neff_file *files = NULL;
    size_t count = 0;

    /* The limit the reader is given, at a size a test can build (the
     * NEFF reader's own, NRTEMU_NEFF_MAX_ENTRIES, takes 512 MiB of
     * headers): one member too many... */
    tar_add_str(&tar, "sg00/def.json", "{}");
    for (int i = 1; i <= LIMIT; i++) {
        snprintf(name, sizeof name, "f%d", i);
        tar_header(h, name, 0, '0');
        buf_put(&tar, h, 512);
    }
    tar_end(&tar);
    ASSERT_STATUS(
        nrtemu__tar_index("test", tar.p, tar.len, LIMIT, &files, &count),
        NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "more than 1000 members");

    /* ... and exactly the limit is fine. */
    tar.len -= 1024 + 512;
    tar_end(&tar);
    ASSERT_OK(
        nrtemu__tar_index("test", tar.p, tar.len, LIMIT, &files, &count));
    ASSERT_UEQ(count, LIMIT);
    nrtemu__tar_free(files, count);
    buf_free(&tar);
}

/* ------------------------------------------------------------------ */
/* NEFF: def.json.                                                    */

static void
test_excerpt(void)
{
    char buf[NRTEMU_EXCERPT_SIZE], small[12], text[300];

    ASSERT_STR_EQ(nrtemu__excerpt(buf, sizeof buf, "plain", 5), "plain");
    ASSERT_STR_EQ(nrtemu__excerpt(buf, sizeof buf, "a\tb\x7f", 4),
                  "a\\x09b\\x7f");
    ASSERT_STR_EQ(nrtemu__excerpt(buf, sizeof buf, "cut\0here", 8), "cut");
    /* UTF-8 is kept, stray bytes are escaped. */
    ASSERT_STR_EQ(nrtemu__excerpt(buf, sizeof buf, "\xc3\xa9\xc3", 3),
                  "\xc3\xa9\\xc3");
    ASSERT_STR_EQ(nrtemu__excerpt(buf, sizeof buf, "\xe2\x82x", 3),
                  "\\xe2\\x82x");
    /* Long text is cut, with room for "..." and never mid-character. */
    memset(text, 'n', sizeof text);
    nrtemu__excerpt(buf, sizeof buf, text, sizeof text);
    ASSERT_UEQ(strlen(buf), sizeof buf - 1);
    ASSERT_STR_CONTAINS(buf, "nnn...");
    ASSERT_STR_EQ(nrtemu__excerpt(small, sizeof small,
                                  "\xe2\x82\xac\xe2\x82"
                                  "\xac\xe2\x82\xac",
                                  9),
                  "\xe2\x82\xac\xe2\x82\xac...");
    ASSERT_STR_EQ(nrtemu__excerpt(small, sizeof small, "\x01\x02\x03", 3),
                  "\\x01\\x02...");
}

static void
test_def_json_order(void)
{
    struct buf tar = {0}, image = {0};
    struct nrtemu_neff *neff;

    /* Subgraphs in numeric order whatever the archive order; the I/O in
     * each def.json's document order. */
    tar_add_str(&tar, "sg10/def.json",
                "{\"var\": {\"x10\": {\"type\": \"input\", \"size\": 1},"
                " \"y10\": {\"type\": \"output\", \"size\": 1}}}");
    tar_add_str(&tar, "sg002/def.json",
                "{\"var\": {\"z2\": {\"type\": \"output\", \"size\": 2},"
                " \"x2\": {\"type\": \"input\", \"size\": 2},"
                " \"a2\": {\"type\": \"input\", \"size\": 3}}}");
    tar_add_str(&tar, "sg03/def.json", "{\"emulator_program\": \"p\"}");
    tar_end(&tar);
    image_of(&tar, false, &image);
    neff = open_ok(&image, false);
    ASSERT_EQ(neff->subgraph_count, 3);
    ASSERT_STR_EQ(neff->subgraphs[0].dir, "sg002");
    ASSERT_EQ(neff->subgraphs[0].number, 2);
    ASSERT_STR_EQ(neff->subgraphs[1].dir, "sg03");
    ASSERT_STR_EQ(neff->subgraphs[2].dir, "sg10");
    ASSERT_UEQ(neff->io_count, 5);
    ASSERT_STR_EQ(neff->io[0].name, "x2");
    ASSERT_STR_EQ(neff->io[1].name, "a2");
    ASSERT_STR_EQ(neff->io[2].name, "x10");
    ASSERT_EQ(neff->io[2].subgraph, 2);
    ASSERT_STR_EQ(neff->io[3].name, "z2");
    ASSERT_STR_EQ(neff->io[4].name, "y10");
    nrtemu__neff_free(neff);
    buf_free(&tar);
    buf_free(&image);
}

static void
test_def_json_errors(void)
{
    char def[1024], name[300];

    def_bad("[]", "sg00/def.json: the document is not a JSON object");
    def_bad("{\"var\": []}", "sg00/def.json: \"var\" is not an object");
    def_bad("{\"var\": {\"a\": 1}}",
            "var 'a' is not an object with a string \"type\"");
    def_bad("{\"var\": {\"a\": {\"size\": 1}}}", "string \"type\"");
    /* Names in details are made printable. */
    def_bad("{\"var\": {\"a\\u0001\\n\u00e9\": 1}}",
            "var 'a\\x01\\x0a\u00e9' is not an object");
    def_bad("{\"var\": {\"a\": {\"type\": \"input\"}}}",
            "var 'a': \"size\" must be a positive integer");
    def_bad("{\"var\": {\"a\": {\"type\": \"input\", \"size\": 0}}}",
            "\"size\" must be a positive integer");
    def_bad("{\"var\": {\"a\": {\"type\": \"output\", \"size\": -4}}}",
            "\"size\" must be a positive integer");
    def_bad("{\"var\": {\"a\": {\"type\": \"input\", \"size\": 4.0}}}",
            "\"size\" must be a positive integer");
    def_bad("{\"var\": {\"a\": {\"type\": \"input\", \"size\": 24,"
            " \"shape\": [2, 3], \"dtype\": \"float32\"}, "
            "\"b\": {\"type\": \"input\", \"size\": 20,"
            " \"shape\": [2, 3], \"dtype\": \"float32\"}}}",
            "var 'b': shape [2, 3] of float32 is 24 bytes, but \"size\" is "
            "20");
    def_bad("{\"var\": {\"a\": {\"type\": \"input\", \"size\": 4,"
            " \"shape\": [4294967295, 4294967295, 4294967295],"
            " \"dtype\": \"int8\"}}}",
            "is more than 18446744073709551615 bytes");
    def_bad("{\"var\": {\"a\": {\"type\": \"input\", \"size\": 4,"
            " \"shape\": [4], \"dtype\": \"float128\"}}}",
            "var 'a': unknown \"dtype\" 'float128'");
    def_bad("{\"var\": {\"a\": {\"type\": \"input\", \"size\": 4,"
            " \"shape\": [4], \"dtype\": \"unknown\"}}}",
            "unknown \"dtype\" 'unknown'");
    def_bad("{\"var\": {\"a\": {\"type\": \"input\", \"size\": 4,"
            " \"shape\": [4], \"dtype\": 4}}}",
            "\"dtype\" is not a string");
    def_bad("{\"var\": {\"a\": {\"type\": \"input\", \"size\": 4,"
            " \"shape\": [1,1,1,1,1,1,1,1,4]}}}",
            "\"shape\" must be a list of at most 8 integers");
    def_bad("{\"var\": {\"a\": {\"type\": \"input\", \"size\": 4,"
            " \"shape\": 4}}}",
            "\"shape\" must be a list");
    def_bad("{\"var\": {\"a\": {\"type\": \"input\", \"size\": 4,"
            " \"shape\": [2, -2]}}}",
            "\"shape\"[1] is not an integer in [0, 4294967295]");
    def_bad("{\"var\": {\"a\": {\"type\": \"input\", \"size\": 4,"
            " \"shape\": [4294967296]}}}",
            "\"shape\"[0] is not an integer");
    def_bad("{\"var\": {\"a\": {\"type\": \"input\", \"size\": 4,"
            " \"shape\": [\"4\"]}}}",
            "\"shape\"[0] is not an integer");
    def_bad("{\"var\": {\"a\": {\"type\": \"input\", \"size\": "
            "4294967296}}}",
            "needs a \"shape\"");
    def_bad("{\"var\": {\"\": {\"type\": \"input\", \"size\": 1}}}",
            "var name '' is 0 bytes; I/O names are 1 to 255 bytes");
    memset(name, 'n', 256);
    name[256] = '\0';
    snprintf(def, sizeof def,
             "{\"var\": {\"%s\": {\"type\": \"input\", \"size\": 1}}}", name);
    def_bad(def, "is 256 bytes; I/O names are 1 to 255 bytes");
    def_bad("{\"var\": {\"a\": {\"type\": \"input\", \"size\": 1}}",
            "sg00/def.json: invalid JSON: expected ',' or '}' after an "
            "object member, found end of input at offset 43");

    /* 255 bytes are fine, and so are large shaped tensors. */
    struct buf tar = {0}, image = {0};
    struct nrtemu_neff *neff;
    name[255] = '\0';
    snprintf(def, sizeof def,
             "{\"var\": {\"%s\": {\"type\": \"input\", \"size\": 1},"
             " \"big\": {\"type\": \"output\", \"size\": 17179869184,"
             " \"shape\": [65536, 65536], \"dtype\": \"float32\"},"
             " \"z\": {\"type\": \"output\", \"size\": 4,"
             " \"shape\": [0], \"dtype\": \"float32\"}}}",
             name);
    def_tar(&tar, def);
    image_of(&tar, false, &image);
    /* A zero-element shape with a positive size is inconsistent. */
    open_bad(&image, false, NRT_INVALID,
             "var 'z': shape [0] of float32 is 0 bytes, but \"size\" is 4");
    snprintf(def, sizeof def,
             "{\"var\": {\"%s\": {\"type\": \"input\", \"size\": 1},"
             " \"big\": {\"type\": \"output\", \"size\": 17179869184,"
             " \"shape\": [65536, 65536], \"dtype\": \"float32\"}}}",
             name);
    def_tar(&tar, def);
    image_of(&tar, false, &image);
    neff = open_ok(&image, false);
    ASSERT_UEQ(neff->io_count, 2);
    ASSERT_UEQ(strlen(neff->io[0].name), 255);
    ASSERT_UEQ(neff->io[1].size, (size_t)17179869184ull);
    nrtemu__neff_free(neff);
    buf_free(&tar);
    buf_free(&image);
}

/* ------------------------------------------------------------------ */
/* .npy members.                                                      */

static struct nrtemu_neff *npy_neff;
static struct buf npy_image;

/* A NEFF holding the .npy file `name` with `bytes`. */
static void
npy_load(const struct buf *file)
{
    struct buf tar = {0};

    nrtemu__neff_free(npy_neff);
    def_tar(&tar, "{}");
    tar.len -= 1024;
    tar_add(&tar, "sg00/c.npy", file->p, file->len);
    tar_end(&tar);
    image_of(&tar, false, &npy_image);
    npy_neff = open_ok(&npy_image, false);
    buf_free(&tar);
}

static void
npy_bad_file(const struct buf *file, const char *detail)
{
    struct nrtemu_npy npy;

    npy_load(file);
    ASSERT_STATUS(nrtemu__neff_npy(FUNC, npy_neff, "sg00/c.npy", &npy),
                  NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "sg00/c.npy: ");
    ASSERT_STR_CONTAINS(nrtemu_last_error(), detail);
}

static void
npy_bad(const char *dict, size_t data_len, const char *detail)
{
    struct buf file = {0};
    unsigned char data[64] = {0};

    npy_v1(&file, dict, data, data_len);
    npy_bad_file(&file, detail);
    buf_free(&file);
}

static void
test_npy(void)
{
    struct buf file = {0};
    struct nrtemu_npy npy;
    float w[6] = {1, 2, 3, 4, 5, 6};
    uint16_t v[3] = {1, 2, 3};

    npy_v1(&file,
           "{'descr': '<f4', 'fortran_order': False, "
           "'shape': (2, 3), }",
           w, sizeof w);
    npy_load(&file);
    ASSERT_OK(nrtemu__neff_npy(FUNC, npy_neff, "sg00/c.npy", &npy));
    ASSERT_EQ(npy.dtype, NRTEMU_DTYPE_FLOAT32);
    ASSERT_UEQ(npy.itemsize, 4);
    ASSERT_UEQ(npy.ndim, 2);
    ASSERT_UEQ(npy.shape[0], 2);
    ASSERT_UEQ(npy.shape[1], 3);
    ASSERT_UEQ(npy.size, sizeof w);
    ASSERT_TRUE(memcmp(npy.data, w, sizeof w) == 0);
    ASSERT_STATUS(nrtemu__neff_npy(FUNC, npy_neff, "sg00/d.npy", &npy),
                  NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "no member 'sg00/d.npy'");

    /* Void descr (bfloat16 saved without ml_dtypes), key order, double
     * quotes, a scalar, v2 and v3 headers. */
    npy_v1(&file,
           "{\"shape\": (3,), \"fortran_order\": False,"
           " \"descr\": \"|V2\"}",
           v, sizeof v);
    npy_load(&file);
    ASSERT_OK(nrtemu__neff_npy(FUNC, npy_neff, "sg00/c.npy", &npy));
    ASSERT_EQ(npy.dtype, NRTEMU_DTYPE_UNKNOWN);
    ASSERT_UEQ(npy.itemsize, 2);
    ASSERT_UEQ(npy.ndim, 1);
    ASSERT_UEQ(npy.shape[0], 3);

    npy_v1(&file, "{'descr': '<f8', 'fortran_order': False, 'shape': ()}",
           "\0\0\0\0\0\0\xf0\x3f", 8);
    npy_load(&file);
    ASSERT_OK(nrtemu__neff_npy(FUNC, npy_neff, "sg00/c.npy", &npy));
    ASSERT_EQ(npy.dtype, NRTEMU_DTYPE_FLOAT64);
    ASSERT_UEQ(npy.ndim, 0);
    ASSERT_UEQ(npy.size, 8);

    static const struct {
        const char *descr;
        enum nrtemu_dtype dtype;
        size_t size;
    } descrs[] = {
        {"|b1", NRTEMU_DTYPE_BOOL, 1},    {"|i1", NRTEMU_DTYPE_INT8, 1},
        {"<i2", NRTEMU_DTYPE_INT16, 2},   {"<i4", NRTEMU_DTYPE_INT32, 4},
        {"<i8", NRTEMU_DTYPE_INT64, 8},   {"|u1", NRTEMU_DTYPE_UINT8, 1},
        {"<u2", NRTEMU_DTYPE_UINT16, 2},  {"<u4", NRTEMU_DTYPE_UINT32, 4},
        {"<u8", NRTEMU_DTYPE_UINT64, 8},  {"<f2", NRTEMU_DTYPE_FLOAT16, 2},
        {"<f4", NRTEMU_DTYPE_FLOAT32, 4}, {"|V1", NRTEMU_DTYPE_UNKNOWN, 1},
    };
    for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++) {
        char dict[128];
        unsigned char data[16] = {0};
        snprintf(dict, sizeof dict,
                 "{'descr': '%s', 'fortran_order': False, 'shape': (2,), }",
                 descrs[i].descr);
        npy_v1(&file, dict, data, 2 * descrs[i].size);
        npy_load(&file);
        ASSERT_OK(nrtemu__neff_npy(FUNC, npy_neff, "sg00/c.npy", &npy));
        ASSERT_EQ(npy.dtype, descrs[i].dtype);
        ASSERT_UEQ(npy.itemsize, descrs[i].size);
    }

    for (int version = 2; version <= 3; version++) {
        const char *dict = "{'descr': '<i2', 'fortran_order': False, "
                           "'shape': (3,), }\n";
        unsigned char pre[12] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
        pre[6] = (unsigned char)version;
        put_le(pre + 8, strlen(dict), 4);
        file.len = 0;
        buf_put(&file, pre, sizeof pre);
        buf_put(&file, dict, strlen(dict));
        buf_put(&file, v, sizeof v);
        npy_load(&file);
        ASSERT_OK(nrtemu__neff_npy(FUNC, npy_neff, "sg00/c.npy", &npy));
        ASSERT_EQ(npy.dtype, NRTEMU_DTYPE_INT16);
        ASSERT_TRUE(memcmp(npy.data, v, sizeof v) == 0);
    }

    npy_bad("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8,
            "Fortran-order arrays are not supported");
    npy_bad("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8,
            "big-endian .npy arrays ('>f4') are not supported");
    npy_bad("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16,
            "unsupported .npy dtype '<c8'");
    npy_bad("{'descr': '|f4', 'fortran_order': False, 'shape': (2,), }", 8,
            "unsupported .npy dtype '|f4'");
    npy_bad("{'descr': '|V0', 'fortran_order': False, 'shape': (2,), }", 0,
            "unsupported .npy dtype '|V0'");
    npy_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 12,
            ".npy data is 12 bytes, but its shape and dtype '<f4' need 8");
    npy_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 4,
            "need 8");
    npy_bad("{'descr': '<f4', 'fortran_order': False, "
            "'shape': (4294967296, 4294967296, 4294967296), }",
            4, "need more than 18446744073709551615");
    npy_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", 8,
            "'shape' is not a tuple");
    npy_bad("{'descr': '<f4', 'fortran_order': False, "
            "'shape': (1,1,1,1,1,1,1,1,1), }",
            4, "more than 8 dimensions");
    npy_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8,
            "expected a non-negative integer in 'shape'");
    npy_bad("{'descr': '<f4', 'fortran_order': False}", 8, "is missing");
    npy_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), "
            "'x': 1}",
            8, "unknown or repeated key");
    npy_bad("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
            "'shape': (2,)}",
            8, "unknown or repeated key");
    npy_bad("{'descr': [('a', '<f4')], 'fortran_order': False, "
            "'shape': (2,)}",
            8, "'descr' is not a simple string");
    npy_bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", 8,
            "unexpected text after the header dict");
    npy_bad("{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", 8,
            "expected ',' or '}' at header byte 16");

    /* Broken prelude and header length. */
    file.len = 0;
    buf_put(&file, "\x93NUMPX\x01\x00\x00\x00", 10);
    npy_bad_file(&file, "not a .npy file");
    file.len = 0;
    buf_put(&file, "\x93NUMPY\x04\x00\x00\x00", 10);
    npy_bad_file(&file, "unsupported .npy version 4.0");
    file.len = 0;
    buf_put(&file, "\x93NUMPY\x01\x00\xff\x00{}", 12);
    npy_bad_file(&file, ".npy header of 255 bytes does not fit the 12-byte "
                        "file");
    file.len = 0;
    buf_put(&file, "\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12);
    npy_bad_file(&file, ".npy header of 2147483647 bytes");
    file.len = 0;
    buf_put(&file, "\x93NUMPY\x02\x00\x00", 9);
    npy_bad_file(&file, "not a .npy file");

    nrtemu__neff_free(npy_neff);
    npy_neff = NULL;
    buf_free(&npy_image);
    buf_free(&file);
}

int
main(void)
{
    test_begin("neff");
    RUN_TEST(test_sha256_vectors);
    RUN_TEST(test_md5_vectors);
    RUN_TEST(test_json_structure);
    RUN_TEST(test_json_large_object_lookup);
    RUN_TEST(test_json_strings);
    RUN_TEST(test_json_numbers);
    RUN_TEST(test_json_syntax_errors);
    RUN_TEST(test_json_depth);
    RUN_TEST(test_json_large);
    RUN_TEST(test_neff_raw_and_gzip);
    RUN_TEST(test_neff_json_member);
    RUN_TEST(test_neff_header_checks);
    RUN_TEST(test_neff_hash);
    RUN_TEST(test_neff_gzip_bounds);
    RUN_TEST(test_tar_errors);
    RUN_TEST(test_tar_formats);
    RUN_TEST(test_tar_entry_limit);
    RUN_TEST(test_excerpt);
    RUN_TEST(test_def_json_order);
    RUN_TEST(test_def_json_errors);
    RUN_TEST(test_npy);
    return 0;
}
