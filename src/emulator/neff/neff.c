/*
 * neff.c - the NEFF container, read in memory.
 *
 * Layout and rules: docs/neff-emulator-format.md §1-2.  A NEFF comes from
 * the user, possibly from anywhere, so the reader trusts nothing in it:
 * header fields are decoded byte by byte (no struct overlay, no alignment
 * or endianness assumption), decompression is bounded, and every size is
 * checked against the bytes actually present before it is used.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "util/error.h"
#include "neff/md5.h"
#include "neff/neff.h"
#include "neff/sha256.h"
#include "neff/tar.h"

static uint64_t
le64(const unsigned char *p)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}

static uint32_t
le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* A fixed-width text field, cut at its first NUL, into out[n + 1]. */
static void
copy_text(char *out, const unsigned char *field, size_t n)
{
    const unsigned char *nul = memchr(field, '\0', n);
    size_t len = nul != NULL ? (size_t)(nul - field) : n;

    memcpy(out, field, len);
    out[len] = '\0';
}

static void
decode_header(const unsigned char *h, struct nrtemu_neff_header *out)
{
#define DECODE_U64(name, offset, len) out->name = le64(h + (offset));
#define DECODE_U32(name, offset, len) out->name = le32(h + (offset));
#define DECODE_TEXT(name, offset, len) copy_text(out->name, h + (offset), len);
#define DECODE_BYTES(name, offset, len) memcpy(out->name, h + (offset), len);
#define DECODE(name, offset, len, kind) DECODE_##kind(name, offset, len)
    NRTEMU_NEFF_HEADER_FIELDS(DECODE)
#undef DECODE
#undef DECODE_BYTES
#undef DECODE_TEXT
#undef DECODE_U32
#undef DECODE_U64
}

static NRT_STATUS
check_header(const char *func, const struct nrtemu_neff_header *h, size_t size)
{
    unsigned long long unsupported;

    if (h->header_size != NRTEMU_NEFF_HEADER_SIZE) {
        return nrtemu__reject(
            NRT_INVALID, func, "NEFF header_size is %llu, expected %d",
            (unsigned long long)h->header_size, NRTEMU_NEFF_HEADER_SIZE);
    }
    if (h->data_size != size - NRTEMU_NEFF_HEADER_SIZE) {
        return nrtemu__reject(NRT_INVALID, func,
                              "NEFF data_size is %llu, but %zu bytes follow "
                              "the header (truncated or padded file?)",
                              (unsigned long long)h->data_size,
                              size - NRTEMU_NEFF_HEADER_SIZE);
    }
    if (h->data_size == 0) {
        return nrtemu__reject(NRT_INVALID, func,
                              "NEFF has an empty payload (data_size 0)");
    }
    if (h->neff_version_major != 1 && h->neff_version_major != 2) {
        return nrtemu__reject(NRT_UNSUPPORTED_NEFF_VERSION, func,
                              "NEFF version %llu.%llu is not supported "
                              "(supported major versions: 1, 2)",
                              (unsigned long long)h->neff_version_major,
                              (unsigned long long)h->neff_version_minor);
    }
    /* Worded as the runtime words it, so logs read alike. */
    unsupported = h->feature_bits & ~NRTEMU_NEFF_FEATURES_SUPPORTED;
    if (unsupported != 0) {
        return nrtemu__reject(
            NRT_UNSUPPORTED_NEFF_VERSION, func,
            "NEFF version: %llu.%llu, features: 0x%llx are not supported.  "
            "Currently supporting: 0x%llx",
            (unsigned long long)h->neff_version_major,
            (unsigned long long)h->neff_version_minor, unsupported,
            (unsigned long long)NRTEMU_NEFF_FEATURES_SUPPORTED);
    }
    if (h->lnc_size > 2) {
        return nrtemu__reject(NRT_INVALID, func,
                              "NEFF lnc_size is %u, expected 0, 1 or 2",
                              (unsigned)h->lnc_size);
    }
    return NRT_SUCCESS;
}

static void
hex(char *out, const uint8_t *bytes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(out + 2 * i, 3, "%02x", bytes[i]);
    }
}

/* The payload as stored (compressed or not) against the header's hash. */
static NRT_STATUS
check_hash(const char *func, const struct nrtemu_neff_header *h,
           const unsigned char *payload, size_t n)
{
    uint8_t digest[NRTEMU_SHA256_SIZE];
    char want[2 * NRTEMU_SHA256_SIZE + 1], got[2 * NRTEMU_SHA256_SIZE + 1];
    size_t len;
    const char *kind;

    switch (h->pkg_version) {
    case 0:
        return NRT_SUCCESS; /* no hash kind: nothing to compare with */
    case 1:
        nrtemu__sha256(payload, n, digest);
        len = NRTEMU_SHA256_SIZE;
        kind = "sha256";
        break;
    case 2:
        nrtemu__md5(payload, n, digest);
        len = NRTEMU_MD5_SIZE;
        kind = "md5";
        break;
    default:
        return nrtemu__reject(NRT_INVALID, func,
                              "cannot validate the hash of a NEFF of "
                              "pkg_version %llu (known: 1 = sha256, 2 = md5)",
                              (unsigned long long)h->pkg_version);
    }
    if (memcmp(digest, h->hash, len) == 0) {
        return NRT_SUCCESS;
    }
    hex(want, h->hash, len);
    hex(got, digest, len);
    return nrtemu__reject(NRT_INVALID, func,
                          "NEFF payload hash mismatch: header %s %s, payload "
                          "%s",
                          kind, want, got);
}

static NRT_STATUS
oom(const char *func, const char *what, size_t bytes)
{
    return nrtemu__fail(NRT_RESOURCE, func,
                        "out of host memory for %s (%zu bytes)", what, bytes);
}

const char *
nrtemu__excerpt(char *buf, size_t buflen, const void *text, size_t len)
{
    const unsigned char *s = text;
    const unsigned char *nul = memchr(s, '\0', len);
    size_t n = 0, i = 0;

    if (nul != NULL) {
        len = (size_t)(nul - s);
    }
    while (i < len) {
        unsigned char c = s[i];
        char piece[8];
        size_t k = 1, plen;

        if (c >= 0xc2 && c <= 0xf4) {
            /* A multi-byte character is kept whole, or escaped. */
            k = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
            for (size_t j = 1; j < k; j++) {
                if (i + j >= len || (s[i + j] & 0xc0) != 0x80) {
                    k = 1;
                    break;
                }
            }
        }
        if (k > 1) {
            memcpy(piece, s + i, k);
            plen = k;
        } else if (c >= 0x20 && c < 0x7f) {
            piece[0] = (char)c;
            plen = 1;
        } else {
            snprintf(piece, sizeof piece, "\\x%02x", c);
            plen = 4;
        }
        /* Room for this piece, "..." and the NUL? */
        if (n + plen + 4 > buflen) {
            break;
        }
        memcpy(buf + n, piece, plen);
        n += plen;
        i += k;
    }
    if (i < len && n + 4 <= buflen) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    if (buflen > 0) {
        buf[n < buflen ? n : buflen - 1] = '\0';
    }
    return buf;
}

/*
 * The tar archive inside a gzip stream, followed as it inflates: where the
 * next header starts and whether the archive has ended (two zero blocks).
 * Inflating stops at the end of the archive, so what it costs is what the
 * archive's headers declare, not what the stream could expand to: a small
 * file of compressed zeros (a "gzip bomb") ends at its first block.  A
 * header the walk cannot follow (malformed, or PAX, which may change the
 * next member's size) turns the walk off: the size bounds still apply and
 * the tar reader judges the archive.
 */
/* Tar writers pad an archive to a multiple of 10 KiB (the record size);
 * far more than that after the end is not padding. */
#define NEFF_TAR_TRAILER_MAX (1 << 20)

struct tar_walk {
    uint64_t next; /* offset of the next header block */
    int zero_blocks;
    bool ended;
    bool lost;
};

static void
tar_walk_advance(struct tar_walk *w, const unsigned char *buf, size_t produced)
{
    while (!w->ended && !w->lost && w->next <= produced &&
           produced - w->next >= 512) {
        uint64_t span;
        if (!nrtemu__tar_header_span(buf + w->next, &span) ||
            span > UINT64_MAX - w->next) {
            w->lost = true;
        } else if (span == 0) {
            w->next += 512;
            w->ended = ++w->zero_blocks == 2;
        } else {
            w->zero_blocks = 0;
            w->next += span;
        }
    }
}

/*
 * Inflate a gzip payload into neff->payload, up to the end of the tar
 * archive it holds (see tar_walk).  The output may not exceed the smaller
 * of NRTEMU_NEFF_MAX_PAYLOAD and NRTEMU_NEFF_MAX_RATIO times the input
 * either.  The buffer grows geometrically (linear total copying).
 */
static NRT_STATUS
inflate_payload(const char *func, struct nrtemu_neff *neff,
                const unsigned char *in, size_t n)
{
    uint64_t bound = NRTEMU_NEFF_MAX_PAYLOAD;
    size_t cap, produced = 0, in_left = n;
    unsigned char *buf, scratch[64];
    struct tar_walk walk = {0};
    z_stream zs;
    NRT_STATUS st;
    int ret;

    if (n <= bound / NRTEMU_NEFF_MAX_RATIO) {
        bound = (uint64_t)n * NRTEMU_NEFF_MAX_RATIO;
    }
    if (bound > SIZE_MAX) {
        bound = SIZE_MAX;
    }
    cap = n < SIZE_MAX / 4 ? 4 * n : SIZE_MAX;
    if (cap < 65536) {
        cap = 65536;
    }
    if (cap > bound) {
        cap = (size_t)bound;
    }
    buf = malloc(cap);
    if (buf == NULL) {
        return oom(func, "the NEFF payload", cap);
    }
    memset(&zs, 0, sizeof zs);
    /* 15 + 16: a 32 KiB window, gzip wrapper only. */
    if (inflateInit2(&zs, 15 + 16) != Z_OK) {
        free(buf);
        return oom(func, "the gzip decoder", sizeof zs);
    }
    zs.next_in = (unsigned char *)in;
    for (;;) {
        if (zs.avail_in == 0 && in_left > 0) {
            zs.avail_in = in_left < UINT_MAX ? (uInt)in_left : UINT_MAX;
            in_left -= zs.avail_in;
        }
        if (produced == cap && cap < bound) {
            size_t grown = cap <= (size_t)bound / 2 ? cap * 2 : (size_t)bound;
            unsigned char *p = realloc(buf, grown);
            if (p == NULL) {
                st = oom(func, "the NEFF payload", grown);
                goto fail;
            }
            buf = p;
            cap = grown;
        }
        /* At the bound, inflate into a scratch buffer: any byte that
         * lands there is one too many. */
        size_t room = produced < cap ? cap - produced : sizeof scratch;
        zs.next_out = produced < cap ? buf + produced : scratch;
        zs.avail_out = room < UINT_MAX ? (uInt)room : UINT_MAX;
        uInt out_before = zs.avail_out, in_before = zs.avail_in;

        ret = inflate(&zs, Z_NO_FLUSH);
        size_t made = out_before - zs.avail_out;
        if (produced == cap && made > 0) {
            st = nrtemu__reject(
                NRT_INVALID, func,
                "gzip NEFF payload inflates to more than %llu bytes (limit: "
                "the smaller of %llu bytes and %d x the %zu compressed "
                "bytes)",
                (unsigned long long)bound,
                (unsigned long long)NRTEMU_NEFF_MAX_PAYLOAD,
                NRTEMU_NEFF_MAX_RATIO, n);
            goto fail;
        }
        produced += made;
        if (ret == Z_STREAM_END) {
            break;
        }
        tar_walk_advance(&walk, buf, produced);
        if (walk.ended && produced - walk.next > NEFF_TAR_TRAILER_MAX) {
            st = nrtemu__reject(
                NRT_INVALID, func,
                "gzip NEFF payload goes on for more than %d bytes after "
                "the end of its tar archive (at byte %llu)",
                NEFF_TAR_TRAILER_MAX, (unsigned long long)walk.next);
            goto fail;
        }
        if (ret == Z_OK) {
            continue;
        }
        if (ret == Z_BUF_ERROR && zs.avail_in == 0 && in_left == 0) {
            st = nrtemu__reject(NRT_INVALID, func,
                                "gzip NEFF payload is truncated (%zu "
                                "compressed bytes inflate to %zu bytes "
                                "without reaching the end of the stream)",
                                n, produced);
            goto fail;
        }
        if (ret == Z_BUF_ERROR && (made > 0 || zs.avail_in != in_before)) {
            continue;
        }
        if (ret == Z_MEM_ERROR) {
            st = oom(func, "the gzip decoder", 0);
            goto fail;
        }
        st = nrtemu__reject(NRT_INVALID, func,
                            "corrupt gzip NEFF payload at compressed byte "
                            "%zu: %s",
                            n - in_left - zs.avail_in,
                            zs.msg != NULL ? zs.msg : "inflate failed");
        goto fail;
    }
    /* Only the first gzip member is read; a second one would be silently
     * lost, so anything but zero padding after it is an error. */
    size_t consumed = n - in_left - zs.avail_in;
    if (!nrtemu__all_zero(in + consumed, n - consumed)) {
        st = nrtemu__reject(NRT_INVALID, func,
                            "%zu bytes of data follow the gzip stream at "
                            "payload byte %zu (only one gzip member is "
                            "supported)",
                            n - consumed, consumed);
        goto fail;
    }
    inflateEnd(&zs);
    if (walk.ended) {
        produced = (size_t)walk.next; /* the padding is not needed */
    }
    /* Give back what the last doubling over-allocated. */
    if (produced > 0 && produced < cap) {
        unsigned char *p = realloc(buf, produced);
        if (p != NULL) {
            buf = p;
        }
    }
    neff->payload = buf;
    neff->payload_size = produced;
    return NRT_SUCCESS;

fail:
    inflateEnd(&zs);
    free(buf);
    return st;
}

static NRT_STATUS
load_payload(const char *func, struct nrtemu_neff *neff,
             const unsigned char *in, size_t n)
{
    if (n >= 2 && in[0] == 0x1f && in[1] == 0x8b) {
        return inflate_payload(func, neff, in, n);
    }
    if (n > NRTEMU_NEFF_MAX_PAYLOAD) {
        return nrtemu__reject(NRT_INVALID, func,
                              "NEFF payload of %zu bytes exceeds the "
                              "%llu-byte limit",
                              n, (unsigned long long)NRTEMU_NEFF_MAX_PAYLOAD);
    }
    /* Copied: the image is the caller's and may go away after the load. */
    neff->payload = malloc(n);
    if (neff->payload == NULL) {
        return oom(func, "the NEFF payload", n);
    }
    memcpy(neff->payload, in, n);
    neff->payload_size = n;
    return NRT_SUCCESS;
}

/* NN of "sgNN/def.json" (2 to 9 digits); -1 for any other path. */
static int
def_json_number(const char *path)
{
    const char *p = path + 2;
    int value = 0, digits = 0;

    if (strncmp(path, "sg", 2) != 0) {
        return -1;
    }
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (digits == 9) {
            return -1;
        }
        value = value * 10 + (*p - '0');
    }
    if (digits < 2 || strcmp(p, "/def.json") != 0) {
        return -1;
    }
    return value;
}

static int
compare_subgraphs(const void *a, const void *b)
{
    const struct nrtemu_neff_subgraph *x = a, *y = b;

    if (x->number != y->number) {
        return x->number < y->number ? -1 : 1;
    }
    return strcmp(x->dir, y->dir);
}

struct io_list {
    struct nrtemu_neff_io *items; /* owned */
    size_t count;
    size_t cap;
};

static bool
io_push(struct io_list *l, const struct nrtemu_neff_io *io)
{
    if (l->count == l->cap) {
        size_t cap = l->cap == 0 ? 8 : l->cap * 2;
        struct nrtemu_neff_io *grown = realloc(l->items, cap * sizeof *grown);
        if (grown == NULL) {
            return false;
        }
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->count++] = *io;
    return true;
}

/* "[2, 3]" for messages; cut (with "...") when it does not fit. */
static void
format_shape(char *out, size_t outlen, const uint32_t *shape, uint32_t ndim)
{
    size_t used = 0;

    used += (size_t)snprintf(out, outlen, "[");
    for (uint32_t i = 0; i < ndim && used < outlen; i++) {
        used += (size_t)snprintf(out + used, outlen - used, "%s%u",
                                 i > 0 ? ", " : "", (unsigned)shape[i]);
    }
    if (used < outlen) {
        snprintf(out + used, outlen - used, "]");
    }
}

/*
 * One input or output var `key` of `def` (a def.json path) into *io.
 */
static NRT_STATUS
read_io_var(const char *func, const char *def, const char *key,
            const struct nrtemu_json *var, nrt_tensor_usage_t usage,
            int subgraph, struct nrtemu_neff_io *io)
{
    const struct nrtemu_json *shape = nrtemu__json_get(var, "shape");
    const struct nrtemu_json *dtype = nrtemu__json_get(var, "dtype");
    size_t key_len = strlen(key);
    char name[NRTEMU_EXCERPT_SIZE], what[NRTEMU_EXCERPT_SIZE];
    int64_t size;

    memset(io, 0, sizeof *io);
    nrtemu__excerpt(name, sizeof name, key, key_len);
    if (key_len == 0 || key_len >= NRT_TENSOR_NAME_MAX) {
        return nrtemu__reject(NRT_INVALID, func,
                              "%s: var name '%s' is %zu bytes; I/O names "
                              "are 1 to %d bytes",
                              def, name, key_len, NRT_TENSOR_NAME_MAX - 1);
    }
    memcpy(io->name, key, key_len + 1);
    io->usage = usage;
    io->subgraph = subgraph;
    if (!nrtemu__json_get_int(var, "size", &size) || size <= 0 ||
        (uint64_t)size > SIZE_MAX) {
        return nrtemu__reject(NRT_INVALID, func,
                              "%s: var '%s': \"size\" must be a positive "
                              "integer number of bytes",
                              def, name);
    }
    io->size = (size_t)size;
    io->dtype = NRTEMU_DTYPE_UNKNOWN;

    if (dtype != NULL && dtype->type != NRTEMU_JSON_STRING) {
        return nrtemu__reject(NRT_INVALID, func,
                              "%s: var '%s': \"dtype\" is not a string", def,
                              name);
    }
    if (dtype != NULL &&
        (!nrtemu__dtype_from_name(dtype->u.string.chars, &io->dtype) ||
         io->dtype == NRTEMU_DTYPE_UNKNOWN)) {
        return nrtemu__reject(
            NRT_INVALID, func, "%s: var '%s': unknown \"dtype\" '%s'", def,
            name,
            nrtemu__excerpt(what, sizeof what, dtype->u.string.chars,
                            dtype->u.string.len));
    }

    if (shape == NULL) {
        /* The contract: a byte vector of unknown dtype. */
        if ((uint64_t)size > UINT32_MAX) {
            return nrtemu__reject(NRT_INVALID, func,
                                  "%s: var '%s' of %lld bytes needs a "
                                  "\"shape\" (a byte shape is limited to "
                                  "%u elements)",
                                  def, name, (long long)size, UINT32_MAX);
        }
        io->dtype = NRTEMU_DTYPE_UNKNOWN;
        io->ndim = 1;
        io->shape[0] = (uint32_t)size;
        return NRT_SUCCESS;
    }
    if (shape->type != NRTEMU_JSON_ARRAY ||
        shape->u.array.count > NRTEMU_MAX_DIMS) {
        return nrtemu__reject(NRT_INVALID, func,
                              "%s: var '%s': \"shape\" must be a list of at "
                              "most %d integers",
                              def, name, NRTEMU_MAX_DIMS);
    }
    uint64_t elements = 1;
    bool overflow = false;
    io->ndim = (uint32_t)shape->u.array.count;
    for (uint32_t i = 0; i < io->ndim; i++) {
        const struct nrtemu_json *d = shape->u.array.items[i];
        if (d->type != NRTEMU_JSON_NUMBER || !d->u.number.is_int ||
            d->u.number.ivalue < 0 || d->u.number.ivalue > UINT32_MAX) {
            return nrtemu__reject(NRT_INVALID, func,
                                  "%s: var '%s': \"shape\"[%u] is not an "
                                  "integer in [0, %u]",
                                  def, name, (unsigned)i, UINT32_MAX);
        }
        io->shape[i] = (uint32_t)d->u.number.ivalue;
        overflow |= __builtin_mul_overflow(elements, io->shape[i], &elements);
    }
    if (io->dtype != NRTEMU_DTYPE_UNKNOWN) {
        uint64_t bytes;
        overflow |= __builtin_mul_overflow(
            elements, (uint64_t)nrtemu__dtype_size(io->dtype), &bytes);
        if (overflow || bytes != (uint64_t)size) {
            char text[128];
            format_shape(text, sizeof text, io->shape, io->ndim);
            return nrtemu__reject(
                NRT_INVALID, func,
                "%s: var '%s': shape %s of %s is %s%llu bytes, but \"size\" "
                "is %lld",
                def, name, text, nrtemu__dtype_name(io->dtype),
                overflow ? "more than " : "",
                overflow ? (unsigned long long)UINT64_MAX
                         : (unsigned long long)bytes,
                (long long)size);
        }
    }
    return NRT_SUCCESS;
}

/*
 * Parse subgraph `subgraph`'s def.json, once: the document stays with the
 * subgraph for the program loader.  Its input and output vars are
 * appended in document order.
 */
static NRT_STATUS
read_def_json(const char *func, struct nrtemu_neff *neff, const char *path,
              int subgraph, struct io_list *inputs, struct io_list *outputs)
{
    struct nrtemu_neff_subgraph *sg = &neff->subgraphs[subgraph];
    const struct nrtemu_json *root, *vars;
    NRT_STATUS st;

    st = nrtemu__neff_json(func, neff, path, &sg->def);
    if (st != NRT_SUCCESS) {
        return st;
    }
    root = nrtemu__json_root(sg->def);
    if (root->type != NRTEMU_JSON_OBJECT) {
        st = nrtemu__reject(NRT_INVALID, func,
                            "%s: the document is not a JSON object", path);
        goto done;
    }
    sg->has_program = nrtemu__json_get(root, "emulator_program") != NULL;
    vars = nrtemu__json_get(root, "var");
    if (vars == NULL) {
        return NRT_SUCCESS; /* a subgraph without variables has no I/O */
    }
    if (vars->type != NRTEMU_JSON_OBJECT) {
        st = nrtemu__reject(NRT_INVALID, func, "%s: \"var\" is not an object",
                            path);
        goto done;
    }
    for (size_t i = 0; i < vars->u.object.count; i++) {
        const char *key = vars->u.object.keys[i];
        const struct nrtemu_json *var = vars->u.object.values[i];
        struct nrtemu_neff_io io;
        struct io_list *list;
        const char *type;

        if (var->type != NRTEMU_JSON_OBJECT ||
            !nrtemu__json_get_string(var, "type", &type)) {
            char name[NRTEMU_EXCERPT_SIZE];
            st = nrtemu__reject(
                NRT_INVALID, func,
                "%s: var '%s' is not an object with a "
                "string \"type\"",
                path, nrtemu__excerpt(name, sizeof name, key, strlen(key)));
            goto done;
        }
        if (strcmp(type, "input") == 0) {
            list = inputs;
            st = read_io_var(func, path, key, var, NRT_TENSOR_USAGE_INPUT,
                             subgraph, &io);
        } else if (strcmp(type, "output") == 0) {
            list = outputs;
            st = read_io_var(func, path, key, var, NRT_TENSOR_USAGE_OUTPUT,
                             subgraph, &io);
        } else {
            continue; /* constants, scratch, ...: not part of the I/O */
        }
        if (st != NRT_SUCCESS) {
            goto done;
        }
        if (!io_push(list, &io)) {
            st =
                oom(func, "the NEFF I/O table", (list->count + 1) * sizeof io);
            goto done;
        }
    }
done:
    return st;
}

static NRT_STATUS
read_subgraphs(const char *func, struct nrtemu_neff *neff)
{
    struct io_list inputs = {0}, outputs = {0};
    size_t count = 0;
    NRT_STATUS st = NRT_SUCCESS;

    for (size_t i = 0; i < neff->file_count; i++) {
        count += def_json_number(neff->files[i].path) >= 0;
    }
    if (count == 0) {
        return nrtemu__reject(NRT_INVALID, func,
                              "NEFF has no sgNN/def.json among its %zu "
                              "files: not a NEFF, or an unknown layout",
                              neff->file_count);
    }
    /* count <= file_count <= NRTEMU_NEFF_MAX_ENTRIES, so it fits an int. */
    neff->subgraphs = calloc(count, sizeof *neff->subgraphs);
    if (neff->subgraphs == NULL) {
        return oom(func, "the NEFF subgraphs",
                   count * sizeof *neff->subgraphs);
    }
    for (size_t i = 0; i < neff->file_count; i++) {
        const char *path = neff->files[i].path;
        int number = def_json_number(path);
        if (number >= 0) {
            struct nrtemu_neff_subgraph *sg =
                &neff->subgraphs[neff->subgraph_count++];
            sg->number = number;
            /* "sg" + at most 9 digits: fits dir[16]. */
            memcpy(sg->dir, path, strlen(path) - strlen("/def.json"));
        }
    }
    qsort(neff->subgraphs, count, sizeof *neff->subgraphs, compare_subgraphs);

    for (int s = 0; s < neff->subgraph_count; s++) {
        char path[sizeof neff->subgraphs[s].dir + sizeof "/def.json"];
        snprintf(path, sizeof path, "%s/def.json", neff->subgraphs[s].dir);
        st = read_def_json(func, neff, path, s, &inputs, &outputs);
        if (st != NRT_SUCCESS) {
            goto done;
        }
    }
    neff->io_count = inputs.count + outputs.count;
    if (neff->io_count > 0) {
        neff->io = malloc(neff->io_count * sizeof *neff->io);
        if (neff->io == NULL) {
            st = oom(func, "the NEFF I/O table",
                     neff->io_count * sizeof *neff->io);
            neff->io_count = 0;
            goto done;
        }
        if (inputs.count > 0) {
            memcpy(neff->io, inputs.items, inputs.count * sizeof *neff->io);
        }
        if (outputs.count > 0) {
            memcpy(neff->io + inputs.count, outputs.items,
                   outputs.count * sizeof *neff->io);
        }
    }
done:
    free(inputs.items);
    free(outputs.items);
    return st;
}

NRT_STATUS
nrtemu__neff_open(const char *func, const void *image, size_t size,
                  bool validate_hash, struct nrtemu_neff **out)
{
    const unsigned char *bytes = image;
    struct nrtemu_neff *neff;
    NRT_STATUS st;

    *out = NULL;
    if (image == NULL) {
        return nrtemu__reject(NRT_INVALID, func, "NULL NEFF image");
    }
    if (size < NRTEMU_NEFF_HEADER_SIZE) {
        return nrtemu__reject(NRT_INVALID, func,
                              "NEFF image of %zu bytes is smaller than its "
                              "%d-byte header",
                              size, NRTEMU_NEFF_HEADER_SIZE);
    }
    neff = calloc(1, sizeof *neff);
    if (neff == NULL) {
        return oom(func, "the NEFF", sizeof *neff);
    }
    decode_header(bytes, &neff->header);
    st = check_header(func, &neff->header, size);
    if (st != NRT_SUCCESS) {
        goto fail;
    }
    if (validate_hash) {
        st = check_hash(func, &neff->header, bytes + NRTEMU_NEFF_HEADER_SIZE,
                        size - NRTEMU_NEFF_HEADER_SIZE);
        if (st != NRT_SUCCESS) {
            goto fail;
        }
    }
    st = load_payload(func, neff, bytes + NRTEMU_NEFF_HEADER_SIZE,
                      size - NRTEMU_NEFF_HEADER_SIZE);
    if (st != NRT_SUCCESS) {
        goto fail;
    }
    st = nrtemu__tar_index(func, neff->payload, neff->payload_size,
                           NRTEMU_NEFF_MAX_ENTRIES, &neff->files,
                           &neff->file_count);
    if (st != NRT_SUCCESS) {
        goto fail;
    }
    st = read_subgraphs(func, neff);
    if (st != NRT_SUCCESS) {
        goto fail;
    }
    *out = neff;
    return NRT_SUCCESS;

fail:
    nrtemu__neff_free(neff);
    return st;
}

void
nrtemu__neff_free(struct nrtemu_neff *neff)
{
    if (neff == NULL) {
        return;
    }
    nrtemu__tar_free(neff->files, neff->file_count);
    for (int s = 0; s < neff->subgraph_count; s++) {
        nrtemu__json_free(neff->subgraphs[s].def);
    }
    free(neff->subgraphs);
    free(neff->io);
    free(neff->payload);
    free(neff);
}

static int
compare_path(const void *key, const void *member)
{
    const struct nrtemu_neff_file *f = member;

    return strcmp(key, f->path);
}

const struct nrtemu_neff_file *
nrtemu__neff_find(const struct nrtemu_neff *neff, const char *path)
{
    if (neff == NULL || path == NULL || neff->file_count == 0) {
        return NULL;
    }
    return bsearch(path, neff->files, neff->file_count, sizeof *neff->files,
                   compare_path);
}

NRT_STATUS
nrtemu__neff_json(const char *func, const struct nrtemu_neff *neff,
                  const char *path, struct nrtemu_json_doc **out)
{
    const struct nrtemu_neff_file *f = nrtemu__neff_find(neff, path);
    char err[256], where[NRTEMU_EXCERPT_SIZE];

    *out = NULL;
    if (path == NULL) {
        path = "";
    }
    nrtemu__excerpt(where, sizeof where, path, strlen(path));
    if (f == NULL) {
        return nrtemu__reject(NRT_INVALID, func, "NEFF has no member '%s'",
                              where);
    }
    *out = nrtemu__json_parse((const char *)f->data, f->size, err, sizeof err);
    if (*out == NULL) {
        /* The parser's only non-syntax failure. */
        if (strncmp(err, "out of memory", 13) == 0) {
            return nrtemu__fail(NRT_RESOURCE, func, "%s: %s", where, err);
        }
        return nrtemu__reject(NRT_INVALID, func, "%s: invalid JSON: %s", where,
                              err);
    }
    return NRT_SUCCESS;
}
