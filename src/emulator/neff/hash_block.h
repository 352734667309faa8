/*
 * hash_block.h - the 64-byte block buffering shared by md5.c and sha256.c
 * (internal).
 *
 * Both hashes consume their input in 64-byte blocks; what differs is only
 * the compression function and the size of the state it updates.
 */
#ifndef NRTEMU_HASH_BLOCK_H
#define NRTEMU_HASH_BLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef void (*nrtemu_hash_compress)(uint32_t *state,
                                     const unsigned char block[64]);

/* Feed `len` bytes: complete the pending block, compress whole blocks
 * straight from `data`, keep the rest pending in `block`/`*used`. */
static inline void
nrtemu__hash_feed(nrtemu_hash_compress compress, uint32_t *state,
                  unsigned char block[64], size_t *used, uint64_t *length,
                  const void *data, size_t len)
{
    const unsigned char *p = data;

    /* memcpy() must not see a NULL pointer, even for zero bytes. */
    if (len == 0) {
        return;
    }
    *length += len;
    if (*used > 0) {
        size_t take = 64 - *used < len ? 64 - *used : len;
        memcpy(block + *used, p, take);
        *used += take;
        p += take;
        len -= take;
        if (*used < 64) {
            return;
        }
        compress(state, block);
        *used = 0;
    }
    for (; len >= 64; p += 64, len -= 64) {
        compress(state, p);
    }
    memcpy(block, p, len);
    *used = len;
}

#endif /* NRTEMU_HASH_BLOCK_H */
