/*
 * neff.h - the NEFF container, read in memory (internal).
 *
 * See docs/neff-emulator-format.md.  nrtemu__neff_open() validates the
 * header, decompresses the payload (bounded), indexes the tar members and
 * reads the I/O table from every sgNN/def.json.  Nothing is extracted to
 * disk.  Every failure returns NRT_INVALID or NRT_UNSUPPORTED_NEFF_VERSION
 * with a precise detail recorded through error.h.
 */
#ifndef NRTEMU_NEFF_H
#define NRTEMU_NEFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"

#include "kernels/dtype.h"
#include "util/json.h"

/* NRTEMU_NEFF_HEADER_SIZE, NRTEMU_NEFF_FEATURES_SUPPORTED and the header
 * fields are in nrt/nrtemu.h (shared with nrtpy's writer). */
/* The payload bounds may be lowered at build time (the fuzz target does,
 * to keep its memory in check); they are never raised. */
#ifndef NRTEMU_NEFF_MAX_PAYLOAD
#define NRTEMU_NEFF_MAX_PAYLOAD ((uint64_t)4 << 30)
#endif
#ifndef NRTEMU_NEFF_MAX_RATIO
#define NRTEMU_NEFF_MAX_RATIO 1024
#endif
/* Tar members: a large model has one .npy per weight.  Each costs one
 * 512-byte header in the payload, so the count is also bounded by it. */
#define NRTEMU_NEFF_MAX_ENTRIES (1u << 20)

/* The header fields, decoded (little-endian on every host); TEXT fields
 * are NUL-terminated copies, one byte longer than in the file. */
#define NRTEMU_NEFF_MEMBER_U64(name, len) uint64_t name;
#define NRTEMU_NEFF_MEMBER_U32(name, len) uint32_t name;
#define NRTEMU_NEFF_MEMBER_TEXT(name, len) char name[(len) + 1];
#define NRTEMU_NEFF_MEMBER_BYTES(name, len) uint8_t name[len];
struct nrtemu_neff_header {
#define NRTEMU_NEFF_MEMBER(name, offset, len, kind) \
    NRTEMU_NEFF_MEMBER_##kind(name, len)
    NRTEMU_NEFF_HEADER_FIELDS(NRTEMU_NEFF_MEMBER)
#undef NRTEMU_NEFF_MEMBER
};

/* One member of the tar payload; data points into the neff's payload. */
struct nrtemu_neff_file {
    const char *path; /* normalised: no leading "./" */
    const unsigned char *data;
    size_t size;
};

/* One input or output tensor, in NEFF order. */
struct nrtemu_neff_io {
    char name[NRT_TENSOR_NAME_MAX];
    nrt_tensor_usage_t usage;
    size_t size;             /* bytes */
    enum nrtemu_dtype dtype; /* UNKNOWN without "dtype" or "shape" */
    uint32_t ndim;           /* 1 and {size} without "shape" */
    uint32_t shape[NRTEMU_MAX_DIMS];
    int subgraph; /* index into nrtemu_neff.subgraphs */
};

/* One sgNN directory that has a def.json, parsed once at open. */
struct nrtemu_neff_subgraph {
    char dir[16];                /* "sg00": the member is "<dir>/def.json" */
    int number;                  /* NN */
    struct nrtemu_json_doc *def; /* owned: the parsed def.json */
    bool has_program;            /* def.json names an emulator program */
};

struct nrtemu_neff {
    struct nrtemu_neff_header header;
    unsigned char *payload; /* owned: the uncompressed tar */
    size_t payload_size;
    /* owned array of the regular files, sorted by path (strcmp), paths
     * unique */
    struct nrtemu_neff_file *files;
    size_t file_count;
    struct nrtemu_neff_io *io; /* owned array: inputs first, then outputs */
    size_t io_count;
    /* owned array of the sgNN/def.json found, in numeric order of NN (a
     * subgraph's index here is what nrtemu_neff_io.subgraph holds) */
    struct nrtemu_neff_subgraph *subgraphs;
    int subgraph_count;
};

/*
 * Parse a NEFF image of `size` bytes.  `validate_hash` checks the payload
 * hash (NEURON_RT_VALIDATE_HASH).
 * Ownership: *out is the caller's; free it with nrtemu__neff_free().
 */
NRT_STATUS nrtemu__neff_open(const char *func, const void *image, size_t size,
                             bool validate_hash, struct nrtemu_neff **out);
void nrtemu__neff_free(struct nrtemu_neff *neff);

/* A member by path ("sg00/def.json"), NULL when absent. */
const struct nrtemu_neff_file *
nrtemu__neff_find(const struct nrtemu_neff *neff, const char *path);

/*
 * Parse member `path` as JSON.  NRT_INVALID (with the path and the parser's
 * message as detail) when absent or malformed.
 */
NRT_STATUS nrtemu__neff_json(const char *func, const struct nrtemu_neff *neff,
                             const char *path, struct nrtemu_json_doc **out);

/*
 * A .npy member: its dtype, shape and data.  NRT_INVALID for anything but
 * a little-endian, C-order array of a dtype of dtype.h, or of a void dtype
 * ("|V2": bfloat16 or fp8 saved without ml_dtypes), which reads as
 * NRTEMU_DTYPE_UNKNOWN with its item size: the caller takes the real
 * dtype from def.json and checks the item size.  The data size is exactly
 * product(shape) x itemsize.
 */
struct nrtemu_npy {
    enum nrtemu_dtype dtype;
    size_t itemsize; /* bytes per element, also for void dtypes */
    uint32_t ndim;
    uint64_t shape[NRTEMU_MAX_DIMS];
    const unsigned char *data; /* into the neff payload */
    size_t size;               /* bytes */
};
NRT_STATUS nrtemu__neff_npy(const char *func, const struct nrtemu_neff *neff,
                            const char *path, struct nrtemu_npy *out);

/*
 * For error details: `len` bytes of untrusted text (cut at a NUL) as a
 * printable excerpt in buf[buflen]: well-formed UTF-8 is kept, control
 * characters and stray bytes become \xNN, and text that does not fit is
 * cut (never inside a character) and ends with "...".  Returns buf.
 */
#define NRTEMU_EXCERPT_SIZE 136
const char *nrtemu__excerpt(char *buf, size_t buflen, const void *text,
                            size_t len);

#endif /* NRTEMU_NEFF_H */
