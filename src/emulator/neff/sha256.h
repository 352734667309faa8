/*
 * sha256.h - SHA-256 (FIPS 180-4), for NEFF payload hashes (internal).
 */
#ifndef NRTEMU_SHA256_H
#define NRTEMU_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define NRTEMU_SHA256_SIZE 32

struct nrtemu_sha256 {
    uint32_t state[8];
    uint64_t length; /* bytes hashed so far */
    unsigned char block[64];
    size_t used; /* bytes pending in block */
};

void nrtemu__sha256_init(struct nrtemu_sha256 *ctx);
void nrtemu__sha256_update(struct nrtemu_sha256 *ctx, const void *data,
                           size_t len);
void nrtemu__sha256_final(struct nrtemu_sha256 *ctx,
                          uint8_t digest[NRTEMU_SHA256_SIZE]);

/* One-shot digest of `len` bytes. */
void nrtemu__sha256(const void *data, size_t len,
                    uint8_t digest[NRTEMU_SHA256_SIZE]);

#endif /* NRTEMU_SHA256_H */
