/*
 * tar.c - an index of the members of an in-memory tar archive.
 *
 * The archive comes from a file the user handed us, so every field is
 * validated and every size is checked against the bytes that remain before
 * it is used: a malformed archive gets a detail naming the header offset,
 * never an out-of-bounds read.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "neff/tar.h"

#define BLOCK 512

/* Header field offsets and widths (POSIX ustar; GNU shares them). */
#define F_NAME 0
#define F_NAME_LEN 100
#define F_SIZE 124
#define F_SIZE_LEN 12
#define F_CHKSUM 148
#define F_CHKSUM_LEN 8
#define F_TYPE 156
#define F_MAGIC 257
#define F_PREFIX 345
#define F_PREFIX_LEN 155

struct entry {
    struct nrtemu_neff_file file;
    size_t seq; /* archive order, to keep the last of duplicate paths */
};

struct reader {
    const char *func;
    const unsigned char *data;
    size_t size;
    struct entry *entries; /* owned until handed over */
    size_t count;
    size_t cap;
    char *long_name; /* owned: path for the next member ('L' or PAX) */
    bool has_pax_size;
    uint64_t pax_size; /* size for the next member (PAX) */
};

bool
nrtemu__all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != 0) {
            return false;
        }
    }
    return true;
}

/*
 * A numeric header field: octal digits, optionally led by spaces and ended
 * by spaces or NULs (an empty field reads 0), or GNU base-256 (first byte
 * 0x80, big-endian value in the rest).  False for anything else, including
 * negative base-256 values and values past 64 bits.
 */
static bool
parse_number_field(const unsigned char *f, size_t n, uint64_t *out)
{
    uint64_t value = 0;
    size_t i = 0;

    if (f[0] & 0x80) {
        if (f[0] != 0x80) {
            return false;
        }
        for (i = 1; i < n; i++) {
            if (value > UINT64_MAX >> 8) {
                return false;
            }
            value = value << 8 | f[i];
        }
        *out = value;
        return true;
    }
    while (i < n && f[i] == ' ') {
        i++;
    }
    for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
        if (value > UINT64_MAX >> 3) {
            return false;
        }
        value = value << 3 | (uint64_t)(f[i] - '0');
    }
    for (; i < n; i++) {
        if (f[i] != ' ' && f[i] != '\0') {
            return false;
        }
    }
    *out = value;
    return true;
}

bool
nrtemu__tar_header_span(const unsigned char *h, uint64_t *span)
{
    uint64_t size;

    if (nrtemu__all_zero(h, 512)) {
        *span = 0;
        return true;
    }
    /* typeflag at 156, size at 124 (12 bytes) */
    if (h[156] == 'x' || h[156] == 'g' ||
        !parse_number_field(h + 124, 12, &size) || size > UINT64_MAX - 1024) {
        return false;
    }
    *span = 512 + ((size + 511) & ~(uint64_t)511);
    return true;
}

/* Bytes of a fixed-width text field before its NUL, if any. */
static size_t
field_len(const unsigned char *f, size_t n)
{
    const unsigned char *nul = memchr(f, '\0', n);

    return nul != NULL ? (size_t)(nul - f) : n;
}

/*
 * Normalise `n` bytes of path (stopping at a NUL): drop empty and "."
 * components.  Returns a malloc'd string (possibly empty), NULL without
 * memory.
 */
static char *
normalise_path(const char *in, size_t n)
{
    char *out;
    size_t len = 0, i = 0;

    n = field_len((const unsigned char *)in, n);
    out = malloc(n + 1);
    if (out == NULL) {
        return NULL;
    }
    while (i < n) {
        size_t start = i;
        while (i < n && in[i] != '/') {
            i++;
        }
        size_t comp = i - start;
        if (comp > 0 && !(comp == 1 && in[start] == '.')) {
            if (len > 0) {
                out[len++] = '/';
            }
            memcpy(out + len, in + start, comp);
            len += comp;
        }
        i++; /* the '/' */
    }
    out[len] = '\0';
    return out;
}

static NRT_STATUS
oom(const struct reader *r, size_t offset)
{
    return nrtemu__fail(NRT_RESOURCE, r->func,
                        "out of host memory indexing the NEFF tar at "
                        "offset %zu",
                        offset);
}

/* Record the PAX extended header of `n` bytes at `at` for the next
 * member: "<len> <key>=<value>\n" records; only path and size matter. */
static NRT_STATUS
read_pax(struct reader *r, size_t header_at, const unsigned char *d, size_t n)
{
    size_t pos = 0;

    while (pos < n) {
        size_t len = 0, i = pos, key_at, eq;

        while (i < n && d[i] >= '0' && d[i] <= '9') {
            if (len > (n - pos) / 10) {
                break; /* longer than what remains: rejected below */
            }
            len = len * 10 + (size_t)(d[i] - '0');
            i++;
        }
        if (i == pos || i >= n || d[i] != ' ' || len <= i - pos + 1 ||
            len > n - pos || d[pos + len - 1] != '\n') {
            /* Some writers pad the block with NULs after the records. */
            if (nrtemu__all_zero(d + pos, n - pos)) {
                return NRT_SUCCESS;
            }
            return nrtemu__reject(NRT_INVALID, r->func,
                                  "NEFF tar: malformed PAX record at byte %zu "
                                  "of the extended header at offset %zu",
                                  pos, header_at);
        }
        key_at = i + 1;
        eq = key_at;
        while (eq < pos + len - 1 && d[eq] != '=') {
            eq++;
        }
        if (eq == pos + len - 1) {
            return nrtemu__reject(NRT_INVALID, r->func,
                                  "NEFF tar: PAX record without '=' at byte "
                                  "%zu of the extended header at offset %zu",
                                  pos, header_at);
        }
        const char *key = (const char *)d + key_at;
        size_t key_len = eq - key_at;
        const char *value = (const char *)d + eq + 1;
        size_t value_len = pos + len - 1 - (eq + 1);

        if (key_len == 4 && memcmp(key, "path", 4) == 0) {
            if (value_len > NRTEMU_TAR_MAX_PATH) {
                return nrtemu__reject(NRT_INVALID, r->func,
                                      "NEFF tar: PAX path of %zu bytes at "
                                      "offset %zu is longer than %d",
                                      value_len, header_at,
                                      NRTEMU_TAR_MAX_PATH);
            }
            free(r->long_name);
            r->long_name = normalise_path(value, value_len);
            if (r->long_name == NULL) {
                return oom(r, header_at);
            }
        } else if (key_len == 4 && memcmp(key, "size", 4) == 0) {
            uint64_t size = 0;
            bool ok = value_len > 0;
            for (size_t k = 0; ok && k < value_len; k++) {
                unsigned digit = (unsigned)(value[k] - '0');
                ok = digit <= 9 && size <= (UINT64_MAX - digit) / 10;
                size = size * 10 + digit;
            }
            if (!ok) {
                char text[40];
                return nrtemu__reject(
                    NRT_INVALID, r->func,
                    "NEFF tar: invalid PAX size '%s' in the extended header "
                    "at offset %zu",
                    nrtemu__excerpt(text, sizeof text, value, value_len),
                    header_at);
            }
            r->has_pax_size = true;
            r->pax_size = size;
        }
        pos += len;
    }
    return NRT_SUCCESS;
}

static NRT_STATUS
add_file(struct reader *r, size_t header_at, const unsigned char *h,
         const unsigned char *data, size_t size)
{
    char *path;

    if (r->long_name != NULL) {
        path = r->long_name;
        r->long_name = NULL;
    } else if (memcmp(h + F_MAGIC, "ustar\0", 6) == 0 && h[F_PREFIX] != '\0') {
        /* POSIX ustar: the path is prefix "/" name.  (GNU headers use
         * these bytes for other fields, hence the magic check.) */
        char joined[F_PREFIX_LEN + 1 + F_NAME_LEN];
        size_t plen = field_len(h + F_PREFIX, F_PREFIX_LEN);
        size_t nlen = field_len(h + F_NAME, F_NAME_LEN);
        memcpy(joined, h + F_PREFIX, plen);
        joined[plen] = '/';
        memcpy(joined + plen + 1, h + F_NAME, nlen);
        path = normalise_path(joined, plen + 1 + nlen);
    } else {
        path = normalise_path((const char *)h + F_NAME, F_NAME_LEN);
    }
    if (path == NULL) {
        return oom(r, header_at);
    }
    if (path[0] == '\0') {
        free(path);
        return nrtemu__reject(NRT_INVALID, r->func,
                              "NEFF tar: the member at offset %zu has an "
                              "empty path",
                              header_at);
    }
    if (r->count == r->cap) {
        size_t cap = r->cap == 0 ? 16 : r->cap * 2;
        struct entry *grown = realloc(r->entries, cap * sizeof *grown);
        if (grown == NULL) {
            free(path);
            return oom(r, header_at);
        }
        r->entries = grown;
        r->cap = cap;
    }
    r->entries[r->count].file.path = path;
    r->entries[r->count].file.data = data;
    r->entries[r->count].file.size = size;
    r->entries[r->count].seq = r->count;
    r->count++;
    return NRT_SUCCESS;
}

static int
compare_entries(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    int c = strcmp(x->file.path, y->file.path);

    if (c != 0) {
        return c;
    }
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* One header block at `at` and its data; *next is the following header. */
static NRT_STATUS
read_member(struct reader *r, size_t at, size_t max_entries, size_t *members,
            size_t *next)
{
    const unsigned char *h = r->data + at;
    char name[NRTEMU_EXCERPT_SIZE];
    uint64_t stored, unsigned_sum = 0, size;
    int64_t signed_sum = 0;
    size_t data_at = at + BLOCK, avail = r->size - data_at, padded;
    unsigned char type = h[F_TYPE];
    bool has_data;
    NRT_STATUS st = NRT_SUCCESS;

    nrtemu__excerpt(name, sizeof name, h + F_NAME, F_NAME_LEN);

    /* The checksum counts its own field as spaces; some old writers
     * summed signed chars, which is accepted too. */
    for (size_t i = 0; i < BLOCK; i++) {
        unsigned char c =
            i >= F_CHKSUM && i < F_CHKSUM + F_CHKSUM_LEN ? ' ' : h[i];
        unsigned_sum += c;
        signed_sum += (signed char)c;
    }
    if (!parse_number_field(h + F_CHKSUM, F_CHKSUM_LEN, &stored)) {
        return nrtemu__reject(NRT_INVALID, r->func,
                              "NEFF tar: invalid checksum field in the "
                              "header at offset %zu",
                              at);
    }
    if (stored != unsigned_sum && (int64_t)stored != signed_sum) {
        return nrtemu__reject(NRT_INVALID, r->func,
                              "NEFF tar: checksum mismatch in the header at "
                              "offset %zu ('%s'): stored %llu, computed "
                              "%llu",
                              at, name, (unsigned long long)stored,
                              (unsigned long long)unsigned_sum);
    }
    if (!parse_number_field(h + F_SIZE, F_SIZE_LEN, &size)) {
        return nrtemu__reject(NRT_INVALID, r->func,
                              "NEFF tar: invalid size field in the header at "
                              "offset %zu ('%s')",
                              at, name);
    }
    if (r->has_pax_size && type != 'x' && type != 'g') {
        size = r->pax_size;
        r->has_pax_size = false;
    }

    /* Links, devices, FIFOs and directories have no data blocks, whatever
     * their size field says; every other type does. */
    has_data = !(type >= '1' && type <= '6');
    if (!has_data) {
        size = 0;
    }
    if (size > avail) {
        return nrtemu__reject(NRT_INVALID, r->func,
                              "NEFF tar: member '%s' (header at offset "
                              "%zu) has %llu bytes of data, but only %zu "
                              "remain",
                              name, at, (unsigned long long)size, avail);
    }
    /* size <= avail, so the padded size cannot overflow; the last
     * member's padding may be missing. */
    padded = (size_t)size + (BLOCK - (size_t)size % BLOCK) % BLOCK;
    *next = padded > avail ? r->size : data_at + padded;

    switch (type) {
    case 'L':
        if (size > NRTEMU_TAR_MAX_PATH) {
            return nrtemu__reject(NRT_INVALID, r->func,
                                  "NEFF tar: GNU long name of %llu bytes at "
                                  "offset %zu is longer than %d",
                                  (unsigned long long)size, at,
                                  NRTEMU_TAR_MAX_PATH);
        }
        free(r->long_name);
        r->long_name =
            normalise_path((const char *)r->data + data_at, (size_t)size);
        if (r->long_name == NULL) {
            return oom(r, at);
        }
        return NRT_SUCCESS;
    case 'x':
        return read_pax(r, at, r->data + data_at, (size_t)size);
    case 'K': /* GNU long link name */
    case 'g': /* PAX global header */
        return NRT_SUCCESS;
    default:
        break;
    }

    if (++*members > max_entries) {
        return nrtemu__reject(NRT_INVALID, r->func,
                              "NEFF tar: more than %zu members (at offset "
                              "%zu)",
                              max_entries, at);
    }
    if (type == '0' || type == '\0' || type == '7') {
        st = add_file(r, at, h, r->data + data_at, (size_t)size);
    }
    /* A long name belongs to the member that follows it, whatever its
     * type. */
    free(r->long_name);
    r->long_name = NULL;
    return st;
}

NRT_STATUS
nrtemu__tar_index(const char *func, const unsigned char *data, size_t size,
                  size_t max_entries, struct nrtemu_neff_file **files,
                  size_t *count)
{
    struct reader r = {.func = func, .data = data, .size = size};
    struct nrtemu_neff_file *out;
    size_t at = 0, members = 0, n = 0;
    NRT_STATUS st = NRT_SUCCESS;

    while (at < size) {
        size_t next = size;

        if (size - at < BLOCK) {
            if (nrtemu__all_zero(data + at, size - at)) {
                break;
            }
            st = nrtemu__reject(NRT_INVALID, func,
                                "NEFF tar: truncated header at offset %zu "
                                "(%zu bytes left, a header is %d)",
                                at, size - at, BLOCK);
            goto fail;
        }
        /* The end-of-archive marker is two zero blocks; one is enough to
         * know that no member follows. */
        if (nrtemu__all_zero(data + at, BLOCK)) {
            break;
        }
        st = read_member(&r, at, max_entries, &members, &next);
        if (st != NRT_SUCCESS) {
            goto fail;
        }
        at = next;
    }
    free(r.long_name);
    r.long_name = NULL;

    if (r.count > 0) {
        qsort(r.entries, r.count, sizeof *r.entries, compare_entries);
    }
    out = malloc((r.count > 0 ? r.count : 1) * sizeof *out);
    if (out == NULL) {
        st = oom(&r, at);
        goto fail;
    }
    for (size_t i = 0; i < r.count; i++) {
        /* Sorted by (path, seq): of equal paths keep the last. */
        if (i + 1 < r.count &&
            strcmp(r.entries[i].file.path, r.entries[i + 1].file.path) == 0) {
            free((char *)r.entries[i].file.path);
            continue;
        }
        out[n++] = r.entries[i].file;
    }
    free(r.entries);
    *files = out;
    *count = n;
    return NRT_SUCCESS;

fail:
    free(r.long_name);
    for (size_t i = 0; i < r.count; i++) {
        free((char *)r.entries[i].file.path);
    }
    free(r.entries);
    return st;
}

void
nrtemu__tar_free(struct nrtemu_neff_file *files, size_t count)
{
    if (files == NULL) {
        return;
    }
    for (size_t i = 0; i < count; i++) {
        free((char *)files[i].path);
    }
    free(files);
}
