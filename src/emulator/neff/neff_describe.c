/*
 * neff_describe.c - nrtemu_neff_describe(): a NEFF as JSON, for tools.
 *
 * nrtpy.neff.inspect and anything else that wants to look inside a NEFF
 * use this rather than a reader of their own, so that every NEFF is read
 * with the same bounds (decompression, entries, JSON) as nrt_load().
 */
#include <inttypes.h>
#include <stdlib.h>

#include "util/error.h"
#include "util/export.h"
#include "neff/neff.h"
#include "util/strbuf.h"

static void
put_hex(struct nrtemu_strbuf *sb, const uint8_t *bytes, size_t n)
{
    nrtemu__strbuf_puts(sb, "\"");
    for (size_t i = 0; i < n; i++) {
        nrtemu__strbuf_printf(sb, "%02x", bytes[i]);
    }
    nrtemu__strbuf_puts(sb, "\"");
}

static void
put_header(struct nrtemu_strbuf *sb, const struct nrtemu_neff_header *h)
{
    const char *sep = "";

    nrtemu__strbuf_puts(sb, "{");
#define PUT_U64(name, len) nrtemu__strbuf_printf(sb, "%" PRIu64, h->name)
#define PUT_U32(name, len) nrtemu__strbuf_printf(sb, "%" PRIu32, h->name)
#define PUT_TEXT(name, len) nrtemu__strbuf_json_string(sb, h->name)
#define PUT_BYTES(name, len) put_hex(sb, h->name, len)
#define PUT(name, offset, len, kind)                     \
    nrtemu__strbuf_printf(sb, "%s\"" #name "\": ", sep); \
    PUT_##kind(name, len);                               \
    sep = ", ";
    NRTEMU_NEFF_HEADER_FIELDS(PUT)
#undef PUT
#undef PUT_BYTES
#undef PUT_TEXT
#undef PUT_U32
#undef PUT_U64
    nrtemu__strbuf_puts(sb, "}");
}

static void
put_io(struct nrtemu_strbuf *sb, const struct nrtemu_neff *neff,
       nrt_tensor_usage_t usage)
{
    const char *sep = "";

    nrtemu__strbuf_puts(sb, "[");
    for (size_t i = 0; i < neff->io_count; i++) {
        const struct nrtemu_neff_io *io = &neff->io[i];

        if (io->usage != usage) {
            continue;
        }
        nrtemu__strbuf_printf(sb, "%s{\"name\": ", sep);
        nrtemu__strbuf_json_string(sb, io->name);
        nrtemu__strbuf_printf(sb, ", \"size\": %zu, \"shape\": [", io->size);
        for (uint32_t d = 0; d < io->ndim; d++) {
            nrtemu__strbuf_printf(sb, "%s%" PRIu32, d > 0 ? ", " : "",
                                  io->shape[d]);
        }
        nrtemu__strbuf_puts(sb, "], \"dtype\": ");
        nrtemu__strbuf_json_string(sb, nrtemu__dtype_name(io->dtype));
        nrtemu__strbuf_puts(sb, "}");
        sep = ", ";
    }
    nrtemu__strbuf_puts(sb, "]");
}

NRTEMU_EXPORT NRT_STATUS
nrtemu_neff_describe(const void *image, size_t size, char **json_out)
{
    struct nrtemu_strbuf sb = NRTEMU_STRBUF_INIT;
    struct nrtemu_neff *neff = NULL;
    bool runnable = true;
    NRT_STATUS st;

    if (json_out == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL json_out");
    }
    *json_out = NULL;
    st = nrtemu__neff_open(__func__, image, size, false, &neff);
    if (st != NRT_SUCCESS) {
        return st;
    }
    nrtemu__strbuf_puts(&sb, "{\"header\": ");
    put_header(&sb, &neff->header);
    nrtemu__strbuf_puts(&sb, ", \"inputs\": ");
    put_io(&sb, neff, NRT_TENSOR_USAGE_INPUT);
    nrtemu__strbuf_puts(&sb, ", \"outputs\": ");
    put_io(&sb, neff, NRT_TENSOR_USAGE_OUTPUT);
    nrtemu__strbuf_puts(&sb, ", \"subgraphs\": [");
    for (int s = 0; s < neff->subgraph_count; s++) {
        nrtemu__strbuf_puts(&sb, s > 0 ? ", " : "");
        nrtemu__strbuf_json_string(&sb, neff->subgraphs[s].dir);
        runnable = runnable && neff->subgraphs[s].has_program;
    }
    nrtemu__strbuf_printf(&sb, "], \"emulator_program\": %s, \"files\": [",
                          runnable ? "true" : "false");
    for (size_t i = 0; i < neff->file_count; i++) {
        nrtemu__strbuf_puts(&sb, i > 0 ? ", " : "");
        nrtemu__strbuf_json_string(&sb, neff->files[i].path);
    }
    nrtemu__strbuf_puts(&sb, "]}");
    nrtemu__neff_free(neff);
    *json_out = nrtemu__strbuf_take(&sb);
    if (*json_out == NULL) {
        return nrtemu__fail(NRT_RESOURCE, __func__,
                            "out of host memory describing a NEFF");
    }
    return NRT_SUCCESS;
}

NRTEMU_EXPORT void
nrtemu_buffer_free(char *buffer)
{
    free(buffer);
}
