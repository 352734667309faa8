/*
 * md5.h - MD5 (RFC 1321), for NEFF payload hashes (internal).
 *
 * MD5 is broken as a cryptographic hash; NEFFs of packaging version 2 use
 * it only to detect corruption, and that is all it is used for here.
 */
#ifndef NRTEMU_MD5_H
#define NRTEMU_MD5_H

#include <stddef.h>
#include <stdint.h>

#define NRTEMU_MD5_SIZE 16

struct nrtemu_md5 {
    uint32_t state[4];
    uint64_t length; /* bytes hashed so far */
    unsigned char block[64];
    size_t used; /* bytes pending in block */
};

void nrtemu__md5_init(struct nrtemu_md5 *ctx);
void nrtemu__md5_update(struct nrtemu_md5 *ctx, const void *data, size_t len);
void nrtemu__md5_final(struct nrtemu_md5 *ctx,
                       uint8_t digest[NRTEMU_MD5_SIZE]);

/* One-shot digest of `len` bytes. */
void nrtemu__md5(const void *data, size_t len,
                 uint8_t digest[NRTEMU_MD5_SIZE]);

#endif /* NRTEMU_MD5_H */
