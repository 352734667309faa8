/*
 * neff_image.h - NEFF images built in memory for the model tests.
 *
 * An image is the 1024-byte header of docs/neff-emulator-format.md §1
 * followed by a raw (uncompressed) ustar archive of the given members.
 * pkg_version is 0, so no hash is recorded or checked.
 */
#ifndef NRTEMU_TEST_NEFF_IMAGE_H
#define NRTEMU_TEST_NEFF_IMAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct neff_member {
    const char *path;
    const char *text; /* NUL-terminated content */
};

static inline void
neff_put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

static inline void
neff_put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

/* `v` as `width` octal digits, zero-padded (tar numeric fields). */
static inline void
neff_put_octal(unsigned char *p, int width, unsigned long long v)
{
    for (int i = width - 1; i >= 0; i--) {
        p[i] = (unsigned char)('0' + (v & 7));
        v >>= 3;
    }
}

/* One ustar header block for a regular file of `size` bytes. */
static inline void
neff_tar_header(unsigned char *h, const char *path, size_t size)
{
    unsigned sum = 0;

    memset(h, 0, 512);
    snprintf((char *)h, 100, "%s", path);
    memcpy(h + 100, "0000644", 8);
    memcpy(h + 108, "0000000", 8);
    memcpy(h + 116, "0000000", 8);
    neff_put_octal(h + 124, 11, size);
    memcpy(h + 136, "00000000000", 12);
    memset(h + 148, ' ', 8); /* the checksum counts itself as blanks */
    h[156] = '0';
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    for (int i = 0; i < 512; i++) {
        sum += h[i];
    }
    neff_put_octal(h + 148, 6, sum);
    h[154] = '\0';
    h[155] = ' ';
}

/*
 * A NEFF named `name` with `lnc` as lnc_size and `count` members.
 * Ownership: the caller frees the image.
 */
static inline unsigned char *
neff_image(const char *name, uint32_t lnc, const struct neff_member *members,
           size_t count, size_t *size)
{
    size_t tar_size = 1024; /* the two zero blocks that end an archive */
    unsigned char *image, *p;

    for (size_t i = 0; i < count; i++) {
        tar_size += 512 + (strlen(members[i].text) + 511) / 512 * 512;
    }
    image = calloc(1, 1024 + tar_size);
    if (image == NULL) {
        abort();
    }
    neff_put_u64(image + 0x000, 0);    /* pkg_version: no hash */
    neff_put_u64(image + 0x008, 1024); /* header_size */
    neff_put_u64(image + 0x010, tar_size);
    neff_put_u64(image + 0x018, 2); /* neff_version_major */
    neff_put_u64(image + 0x020, 0);
    snprintf((char *)image + 0x028, 128, "nrtpy-test");
    neff_put_u32(image + 0x0A8, 1); /* num_tpb */
    snprintf((char *)image + 0x0DC, 256, "%s", name);
    neff_put_u32(image + 0x1DC, 1); /* requested_tpb_count */
    neff_put_u32(image + 0x228, lnc);
    p = image + 1024;
    for (size_t i = 0; i < count; i++) {
        size_t n = strlen(members[i].text);
        neff_tar_header(p, members[i].path, n);
        memcpy(p + 512, members[i].text, n);
        p += 512 + (n + 511) / 512 * 512;
    }
    *size = 1024 + tar_size;
    return image;
}

/* A one-subgraph NEFF: sg00/def.json and, when not NULL, its program. */
static inline unsigned char *
neff_image_simple(const char *name, const char *def_json,
                  const char *program_json, size_t *size)
{
    struct neff_member members[] = {
        {"neff.json", "{\"name\": \"test\", \"version\": \"2.0\", "
                      "\"generator\": \"nrtpy-test\", \"subgraphs\": "
                      "[\"sg00\"]}"},
        {"sg00/def.json", def_json},
        {"sg00/program.json", program_json},
    };

    return neff_image(name, 1, members, program_json != NULL ? 3 : 2, size);
}

/* The model several tests load: output_0 = a + b, float32[4] each. */
#define ADD4_VARS                                                        \
    "\"var\": {"                                                         \
    "\"a\": {\"type\": \"input\", \"var_id\": 0, \"size\": 16, "         \
    "\"shape\": [4], \"dtype\": \"float32\"}, "                          \
    "\"b\": {\"type\": \"input\", \"var_id\": 1, \"size\": 16, "         \
    "\"shape\": [4], \"dtype\": \"float32\"}, "                          \
    "\"output_0\": {\"type\": \"output\", \"var_id\": 2, \"size\": 16, " \
    "\"shape\": [4], \"dtype\": \"float32\"}}"
#define ADD4_DEF "{" ADD4_VARS ", \"emulator_program\": \"program.json\"}"
#define ADD4_PROGRAM                                                \
    "{\"format\": \"nrtpy-emulator-program\", \"version\": 1, "     \
    "\"buffers\": {"                                                \
    "\"a\": {\"kind\": \"input\", \"dtype\": \"float32\", "         \
    "\"shape\": [4]}, "                                             \
    "\"b\": {\"kind\": \"input\", \"dtype\": \"float32\", "         \
    "\"shape\": [4]}, "                                             \
    "\"output_0\": {\"kind\": \"output\", \"dtype\": \"float32\", " \
    "\"shape\": [4]}}, "                                            \
    "\"ops\": [{\"op\": \"add\", \"in\": [\"a\", \"b\"], "          \
    "\"out\": \"output_0\"}]}"

/*
 * A program of `ops` chained n x n float32 matmuls: x @ w @ w ... into
 * output_0 (through temporaries t0, t1), or x @ x @ x ... without `w`
 * (a one-input model).  Long enough to catch an execution in the act.
 * Ownership: malloc'd; the caller frees it.  Aborts when out of memory.
 */
static inline char *
matmul_chain_program(int ops, int n, bool with_w)
{
    size_t cap = 4096 + (size_t)ops * 96;
    char *p = malloc(cap);
    const char *rhs = with_w ? "w" : "x";
    char w_buffer[128] = "";
    size_t len;

    if (p == NULL) {
        abort();
    }
    if (with_w) {
        snprintf(w_buffer, sizeof w_buffer,
                 "\"w\": {\"kind\": \"input\", \"dtype\": \"float32\", "
                 "\"shape\": [%d, %d]}, ",
                 n, n);
    }
    len = (size_t)snprintf(
        p, cap,
        "{\"format\": \"nrtpy-emulator-program\", \"version\": 1, "
        "\"buffers\": {"
        "\"x\": {\"kind\": \"input\", \"dtype\": \"float32\", "
        "\"shape\": [%d, %d]}, "
        "%s"
        "\"t0\": {\"kind\": \"temp\", \"dtype\": \"float32\", "
        "\"shape\": [%d, %d]}, "
        "\"t1\": {\"kind\": \"temp\", \"dtype\": \"float32\", "
        "\"shape\": [%d, %d]}, "
        "\"output_0\": {\"kind\": \"output\", \"dtype\": \"float32\", "
        "\"shape\": [%d, %d]}}, \"ops\": [",
        n, n, w_buffer, n, n, n, n, n, n);
    for (int i = 0; i < ops; i++) {
        const char *src = i == 0 ? "x" : i % 2 ? "t0" : "t1";
        const char *dst = i == ops - 1 ? "output_0" : i % 2 ? "t1" : "t0";
        len += (size_t)snprintf(p + len, cap - len,
                                "%s{\"op\": \"matmul\", \"in\": [\"%s\", "
                                "\"%s\"], \"out\": \"%s\"}",
                                i ? ", " : "", src, rhs, dst);
    }
    snprintf(p + len, cap - len, "]}");
    return p;
}

#endif /* NRTEMU_TEST_NEFF_IMAGE_H */
