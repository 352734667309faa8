/*
 * fuzz_neff.c - libFuzzer target: the NEFF reader on arbitrary bytes.
 *
 * Opens the input as a NEFF, then reads everything a load would read:
 * every I/O entry, every .json member as JSON and every .npy member as an
 * array.  The sanitizers report what goes wrong; the target itself only
 * checks the invariants the rest of the emulator relies on.
 *
 * Byte 0x22C (header padding, ignored by the reader) selects hash
 * validation with its low bit, so the fuzzer can reach both paths.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "neff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
require(int ok)
{
    if (!ok) {
        abort();
    }
}

static bool
ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);

    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* Walk a parsed tree, bounded by the parser's own depth limit. */
static size_t
walk(const struct nrtemu_json *v, int depth)
{
    size_t nodes = 1;

    require(depth <= NRTEMU_JSON_MAX_DEPTH);
    switch (v->type) {
    case NRTEMU_JSON_STRING:
        require(v->u.string.chars[v->u.string.len] == '\0');
        break;
    case NRTEMU_JSON_ARRAY:
        for (size_t i = 0; i < v->u.array.count; i++) {
            nodes += walk(v->u.array.items[i], depth + 1);
        }
        break;
    case NRTEMU_JSON_OBJECT:
        for (size_t i = 0; i < v->u.object.count; i++) {
            require(nrtemu__json_get(v, v->u.object.keys[i]) != NULL);
            nodes += walk(v->u.object.values[i], depth + 1);
        }
        break;
    default:
        break;
    }
    return nodes;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bool validate = size > 0x22c && (data[0x22c] & 1);
    struct nrtemu_neff *neff = NULL;
    volatile size_t sink = 0;

    if (nrtemu__neff_open("fuzz", data, size, validate, &neff) !=
        NRT_SUCCESS) {
        require(neff == NULL);
        return 0;
    }
    require(neff->subgraph_count > 0);
    for (size_t i = 0; i < neff->io_count; i++) {
        const struct nrtemu_neff_io *io = &neff->io[i];
        require(io->size > 0 && io->ndim <= NRTEMU_MAX_DIMS);
        require(strlen(io->name) < sizeof io->name);
        require(io->subgraph >= 0 && io->subgraph < neff->subgraph_count);
        sink += io->size;
    }
    for (size_t i = 0; i < neff->file_count; i++) {
        const struct nrtemu_neff_file *f = &neff->files[i];
        struct nrtemu_json_doc *doc;
        struct nrtemu_npy npy;

        require(nrtemu__neff_find(neff, f->path) == f);
        require(f->data >= neff->payload && f->size <= neff->payload_size &&
                (size_t)(f->data - neff->payload) <=
                    neff->payload_size - f->size);
        if (f->size > 0) {
            sink += f->data[0] + f->data[f->size - 1];
        }
        if (ends_with(f->path, ".json") &&
            nrtemu__neff_json("fuzz", neff, f->path, &doc) == NRT_SUCCESS) {
            sink += walk(nrtemu__json_root(doc), 0);
            nrtemu__json_free(doc);
        }
        if (ends_with(f->path, ".npy") &&
            nrtemu__neff_npy("fuzz", neff, f->path, &npy) == NRT_SUCCESS) {
            require(npy.ndim <= NRTEMU_MAX_DIMS);
            require(npy.data >= f->data &&
                    npy.data + npy.size == f->data + f->size);
            if (npy.size > 0) {
                sink += npy.data[0] + npy.data[npy.size - 1];
            }
        }
    }
    nrtemu__neff_free(neff);
    (void)sink;
    return 0;
}
