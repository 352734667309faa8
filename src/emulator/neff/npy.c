/*
 * npy.c - NumPy .npy members of a NEFF (constants), read in place.
 *
 * Format: "\x93NUMPY", major and minor version bytes, the header length
 * (little-endian u16 in version 1, u32 in versions 2 and 3), then a Python
 * dict literal such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and ended by '\n', then the raw data.  The dict is
 * parsed with a small grammar of exactly what numpy writes; nothing is
 * evaluated.
 */
#include <stdio.h>
#include <string.h>

#include "util/error.h"
#include "neff/neff.h"

/* numpy itself refuses headers over 10000 bytes by default. */
#define NPY_MAX_HEADER 65536
/* Bound on the item size of a void ('V') descr. */
#define NPY_MAX_VOID 65536

struct header_parser {
    const char *func;
    const char *path;
    const unsigned char *text;
    size_t len;
    size_t pos;
};

static NRT_STATUS
bad(const struct header_parser *h, const char *what)
{
    return nrtemu__reject(NRT_INVALID, h->func,
                          "%s: .npy header: %s at header byte %zu", h->path,
                          what, h->pos);
}

static void
skip_ws(struct header_parser *h)
{
    while (h->pos < h->len &&
           (h->text[h->pos] == ' ' || h->text[h->pos] == '\t' ||
            h->text[h->pos] == '\n' || h->text[h->pos] == '\r')) {
        h->pos++;
    }
}

static bool
accept(struct header_parser *h, char c)
{
    skip_ws(h);
    if (h->pos < h->len && h->text[h->pos] == c) {
        h->pos++;
        return true;
    }
    return false;
}

/* A quoted string without escapes, into out[outlen]. */
static bool
read_string(struct header_parser *h, char *out, size_t outlen)
{
    unsigned char quote;
    size_t n = 0;

    skip_ws(h);
    if (h->pos >= h->len ||
        (h->text[h->pos] != '\'' && h->text[h->pos] != '"')) {
        return false;
    }
    quote = h->text[h->pos++];
    while (h->pos < h->len && h->text[h->pos] != quote) {
        unsigned char c = h->text[h->pos];
        if (c == '\\' || c < 0x20 || n + 1 >= outlen) {
            return false;
        }
        out[n++] = (char)c;
        h->pos++;
    }
    if (h->pos >= h->len) {
        return false;
    }
    h->pos++;
    out[n] = '\0';
    return true;
}

static bool
read_word(struct header_parser *h, const char *word)
{
    size_t n = strlen(word);

    skip_ws(h);
    if (h->len - h->pos >= n && memcmp(h->text + h->pos, word, n) == 0) {
        h->pos += n;
        return true;
    }
    return false;
}

/* A tuple of non-negative ints: "()", "(5,)", "(2, 3)", "(2, 3,)". */
static NRT_STATUS
read_shape(struct header_parser *h, struct nrtemu_npy *out)
{
    bool trailing_comma = false;

    if (!accept(h, '(')) {
        return bad(h, "'shape' is not a tuple");
    }
    out->ndim = 0;
    while (!accept(h, ')')) {
        uint64_t value = 0;
        size_t digits = 0;

        if (out->ndim == NRTEMU_MAX_DIMS) {
            return bad(h, "more than 8 dimensions in 'shape'");
        }
        skip_ws(h);
        for (; h->pos < h->len && h->text[h->pos] >= '0' &&
               h->text[h->pos] <= '9';
             h->pos++, digits++) {
            uint64_t digit = h->text[h->pos] - '0';
            if (value > (UINT64_MAX - digit) / 10) {
                return bad(h, "dimension out of range in 'shape'");
            }
            value = value * 10 + digit;
        }
        if (digits == 0) {
            return bad(h, "expected a non-negative integer in 'shape'");
        }
        if (h->pos < h->len && h->text[h->pos] == 'L') {
            h->pos++; /* Python 2 long literal, in old files */
        }
        out->shape[out->ndim++] = value;
        trailing_comma = accept(h, ',');
        if (!trailing_comma) {
            if (!accept(h, ')')) {
                return bad(h, "expected ',' or ')' in 'shape'");
            }
            break;
        }
    }
    /* "(5)" is the integer 5 in Python, not a tuple. */
    if (out->ndim == 1 && !trailing_comma) {
        return bad(h, "'shape' is not a tuple");
    }
    return NRT_SUCCESS;
}

/* A numpy descr string to our dtype and its item size. */
static bool
map_descr(const char *descr, enum nrtemu_dtype *dtype, size_t *itemsize)
{
    static const struct {
        const char *code;
        enum nrtemu_dtype dtype;
    } codes[] = {
        {"b1", NRTEMU_DTYPE_BOOL},    {"i1", NRTEMU_DTYPE_INT8},
        {"i2", NRTEMU_DTYPE_INT16},   {"i4", NRTEMU_DTYPE_INT32},
        {"i8", NRTEMU_DTYPE_INT64},   {"u1", NRTEMU_DTYPE_UINT8},
        {"u2", NRTEMU_DTYPE_UINT16},  {"u4", NRTEMU_DTYPE_UINT32},
        {"u8", NRTEMU_DTYPE_UINT64},  {"f2", NRTEMU_DTYPE_FLOAT16},
        {"f4", NRTEMU_DTYPE_FLOAT32}, {"f8", NRTEMU_DTYPE_FLOAT64},
    };
    static const size_t sizes[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8};
    char order = descr[0];

    if (order != '<' && order != '|') {
        return false;
    }
    /* Void ("|V2"): raw items, e.g. bfloat16 or fp8 saved without
     * ml_dtypes; the caller knows the real dtype from def.json. */
    if (descr[1] == 'V') {
        size_t n = 0;
        const char *p = descr + 2;
        if (*p < '1' || *p > '9') {
            return false;
        }
        for (; *p >= '0' && *p <= '9'; p++) {
            n = n * 10 + (size_t)(*p - '0');
            if (n > NPY_MAX_VOID) {
                return false;
            }
        }
        if (*p != '\0') {
            return false;
        }
        *dtype = NRTEMU_DTYPE_UNKNOWN;
        *itemsize = n;
        return true;
    }
    /* "<f1": ml_dtypes gives some of its 1-byte floats (float8_e5m2) the
     * kind 'f'; which format it is, def.json says, as for "|V1". */
    if (strcmp(descr + 1, "f1") == 0) {
        *dtype = NRTEMU_DTYPE_UNKNOWN;
        *itemsize = 1;
        return true;
    }
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        if (strcmp(descr + 1, codes[i].code) == 0) {
            /* '|' (byte order not applicable) only makes sense for
             * single bytes. */
            if (order == '|' && sizes[i] != 1) {
                return false;
            }
            *dtype = codes[i].dtype;
            *itemsize = sizes[i];
            return true;
        }
    }
    return false;
}

NRT_STATUS
nrtemu__neff_npy(const char *func, const struct nrtemu_neff *neff,
                 const char *path, struct nrtemu_npy *out)
{
    const struct nrtemu_neff_file *f = nrtemu__neff_find(neff, path);
    struct header_parser h = {.func = func};
    struct nrtemu_npy npy;
    char key[32], descr[32] = "", where[NRTEMU_EXCERPT_SIZE], what[40];
    bool have_descr = false, have_order = false, have_shape = false;
    size_t prelude, header_len, itemsize = 0;
    uint64_t elements = 1, bytes;
    NRT_STATUS st;

    memset(&npy, 0, sizeof npy);
    if (path == NULL) {
        path = "";
    }
    /* Messages name the member as given, made printable. */
    path = nrtemu__excerpt(where, sizeof where, path, strlen(path));
    h.path = path;
    if (f == NULL) {
        return nrtemu__reject(NRT_INVALID, func, "NEFF has no member '%s'",
                              path);
    }
    if (f->size < 10 || memcmp(f->data, "\x93NUMPY", 6) != 0) {
        return nrtemu__reject(NRT_INVALID, func,
                              "%s: not a .npy file (no \\x93NUMPY magic)",
                              path);
    }
    if (f->data[6] == 1) {
        prelude = 10;
        header_len = (size_t)f->data[8] | (size_t)f->data[9] << 8;
    } else if ((f->data[6] == 2 || f->data[6] == 3) && f->size >= 12) {
        prelude = 12;
        header_len = (size_t)f->data[8] | (size_t)f->data[9] << 8 |
                     (size_t)f->data[10] << 16 | (size_t)f->data[11] << 24;
    } else {
        return nrtemu__reject(NRT_INVALID, func,
                              "%s: unsupported .npy version %u.%u (or "
                              "truncated file)",
                              path, f->data[6], f->data[7]);
    }
    if (header_len > NPY_MAX_HEADER || header_len > f->size - prelude) {
        return nrtemu__reject(NRT_INVALID, func,
                              "%s: .npy header of %zu bytes does not fit the "
                              "%zu-byte file (limit %d)",
                              path, header_len, f->size, NPY_MAX_HEADER);
    }
    h.text = f->data + prelude;
    h.len = header_len;

    if (!accept(&h, '{')) {
        return bad(&h, "expected '{'");
    }
    while (!accept(&h, '}')) {
        if (!read_string(&h, key, sizeof key)) {
            return bad(&h, "expected a quoted key");
        }
        if (!accept(&h, ':')) {
            return bad(&h, "expected ':'");
        }
        if (strcmp(key, "descr") == 0 && !have_descr) {
            if (!read_string(&h, descr, sizeof descr)) {
                return bad(&h, "'descr' is not a simple string (structured "
                               "dtypes are not supported)");
            }
            have_descr = true;
        } else if (strcmp(key, "fortran_order") == 0 && !have_order) {
            if (read_word(&h, "True")) {
                return bad(&h, "Fortran-order arrays are not supported");
            }
            if (!read_word(&h, "False")) {
                return bad(&h, "'fortran_order' is not True or False");
            }
            have_order = true;
        } else if (strcmp(key, "shape") == 0 && !have_shape) {
            st = read_shape(&h, &npy);
            if (st != NRT_SUCCESS) {
                return st;
            }
            have_shape = true;
        } else {
            return bad(&h, "unknown or repeated key");
        }
        if (!accept(&h, ',')) {
            if (!accept(&h, '}')) {
                return bad(&h, "expected ',' or '}'");
            }
            break;
        }
    }
    skip_ws(&h);
    if (h.pos != h.len) {
        return bad(&h, "unexpected text after the header dict");
    }
    if (!have_descr || !have_order || !have_shape) {
        return bad(&h, "'descr', 'fortran_order' or 'shape' is missing");
    }
    if (descr[0] == '>') {
        return nrtemu__reject(
            NRT_INVALID, func,
            "%s: big-endian .npy arrays ('%s') are not "
            "supported",
            path, nrtemu__excerpt(what, sizeof what, descr, strlen(descr)));
    }
    if (!map_descr(descr, &npy.dtype, &itemsize)) {
        return nrtemu__reject(
            NRT_INVALID, func, "%s: unsupported .npy dtype '%s'", path,
            nrtemu__excerpt(what, sizeof what, descr, strlen(descr)));
    }
    bool overflow = false;
    for (uint32_t i = 0; i < npy.ndim; i++) {
        overflow |= __builtin_mul_overflow(elements, npy.shape[i], &elements);
    }
    overflow |= __builtin_mul_overflow(elements, (uint64_t)itemsize, &bytes);
    size_t data_len = f->size - prelude - header_len;
    if (overflow || bytes != data_len) {
        return nrtemu__reject(NRT_INVALID, func,
                              "%s: .npy data is %zu bytes, but its shape and "
                              "dtype '%s' need %s%llu",
                              path, data_len, descr,
                              overflow ? "more than " : "",
                              overflow ? (unsigned long long)UINT64_MAX
                                       : (unsigned long long)bytes);
    }
    npy.itemsize = itemsize;
    npy.data = f->data + prelude + header_len;
    npy.size = data_len;
    *out = npy;
    return NRT_SUCCESS;
}
