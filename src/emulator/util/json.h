/*
 * json.h - a small, bounded JSON reader (internal).
 *
 * NEFF metadata and emulator programs are JSON.  This reader parses a whole
 * document into a tree allocated from one arena, so a document is freed with
 * one call and a hostile document can cost at most a bounded amount of
 * memory (limits below).  Object members keep their document order, which
 * is how the NEFF I/O order is defined.
 */
#ifndef NRTEMU_JSON_H
#define NRTEMU_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NRTEMU_JSON_MAX_DEPTH 128
#define NRTEMU_JSON_MAX_BYTES ((size_t)64 << 20)

enum nrtemu_json_type {
    NRTEMU_JSON_NULL,
    NRTEMU_JSON_BOOL,
    NRTEMU_JSON_NUMBER,
    NRTEMU_JSON_STRING,
    NRTEMU_JSON_ARRAY,
    NRTEMU_JSON_OBJECT,
};

#define NRTEMU_JSON_INDEX_MIN 16

struct nrtemu_json_key {
    const char *key;
    size_t pos;
};

struct nrtemu_json {
    enum nrtemu_json_type type;
    union {
        bool boolean;
        struct {
            double value;
            bool is_int;    /* written without fraction/exponent, fits */
            int64_t ivalue; /* valid when is_int */
        } number;
        struct {
            const char *chars; /* NUL-terminated, UTF-8, escapes decoded */
            size_t len;        /* may contain NUL bytes from \u0000 */
        } string;
        struct {
            struct nrtemu_json **items;
            size_t count;
        } array;
        struct {
            const char **keys; /* NUL-terminated; duplicates: last wins in
                                  lookups, all kept in order */
            struct nrtemu_json **values;
            size_t count;
            /* Objects of more than NRTEMU_JSON_INDEX_MIN members: their
             * positions sorted by (key, position), for lookups in
             * O(log n) (a NEFF's var table has one entry per weight);
             * NULL for smaller objects, searched linearly. */
            const struct nrtemu_json_key *index;
        } object;
    } u;
};

/* A parsed document; owns every node and string. */
struct nrtemu_json_doc;

/*
 * Parse `len` bytes (not NUL-terminated necessarily).  On failure returns
 * NULL and writes a message with the byte offset into `err`.
 */
struct nrtemu_json_doc *nrtemu__json_parse(const char *text, size_t len,
                                           char *err, size_t errlen);
const struct nrtemu_json *nrtemu__json_root(const struct nrtemu_json_doc *d);
void nrtemu__json_free(struct nrtemu_json_doc *doc);

/* Member of an object, NULL if absent or `obj` is not an object. */
const struct nrtemu_json *nrtemu__json_get(const struct nrtemu_json *obj,
                                           const char *key);

/* Typed accessors: false when absent or of another type/range. */
bool nrtemu__json_get_string(const struct nrtemu_json *obj, const char *key,
                             const char **out);
bool nrtemu__json_get_int(const struct nrtemu_json *obj, const char *key,
                          int64_t *out);
bool nrtemu__json_get_bool(const struct nrtemu_json *obj, const char *key,
                           bool *out);

#endif /* NRTEMU_JSON_H */
