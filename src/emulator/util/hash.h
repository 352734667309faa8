/*
 * hash.h - hashing of names (internal).
 *
 * FNV-1a: names are short, the tables small, and no adversary chooses
 * them to collide (the caller owns its tensor sets; op names are ours).
 */
#ifndef NRTEMU_HASH_H
#define NRTEMU_HASH_H

#include <stdint.h>

static inline uint64_t
nrtemu__name_hash(const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h = (h ^ *p) * 0x100000001b3ull;
    }
    return h;
}

#endif /* NRTEMU_HASH_H */
