/*
 * md5.c - MD5 (RFC 1321).
 */
#include <string.h>

#include "neff/md5.h"

#include "neff/hash_block.h"

/* floor(|sin(i + 1)| * 2^32). */
static const uint32_t t[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a,
    0xa8304613, 0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be,
    0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340,
    0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8,
    0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c,
    0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
    0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92,
    0xffeff47d, 0x85845dd1, 0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1,
    0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

/* Left rotations of each round, four per round. */
static const unsigned char shifts[4][4] = {
    {7, 12, 17, 22},
    {5, 9, 14, 20},
    {4, 11, 16, 23},
    {6, 10, 15, 21},
};

static uint32_t
rotl(uint32_t x, unsigned n)
{
    return (x << n) | (x >> (32 - n));
}

static void
compress(uint32_t state[4], const unsigned char block[64])
{
    uint32_t m[16], a = state[0], b = state[1], c = state[2], d = state[3];

    for (int i = 0; i < 16; i++) {
        m[i] = (uint32_t)block[4 * i] | (uint32_t)block[4 * i + 1] << 8 |
               (uint32_t)block[4 * i + 2] << 16 |
               (uint32_t)block[4 * i + 3] << 24;
    }
    for (int i = 0; i < 64; i++) {
        int round = i / 16;
        uint32_t f;
        int g;

        switch (round) {
        case 0:
            f = (b & c) | (~b & d);
            g = i;
            break;
        case 1:
            f = (b & d) | (c & ~d);
            g = (5 * i + 1) % 16;
            break;
        case 2:
            f = b ^ c ^ d;
            g = (3 * i + 5) % 16;
            break;
        default:
            f = c ^ (b | ~d);
            g = (7 * i) % 16;
            break;
        }
        f += a + t[i] + m[g];
        a = d;
        d = c;
        c = b;
        b += rotl(f, shifts[round][i % 4]);
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
}

void
nrtemu__md5_init(struct nrtemu_md5 *ctx)
{
    ctx->state[0] = 0x67452301;
    ctx->state[1] = 0xefcdab89;
    ctx->state[2] = 0x98badcfe;
    ctx->state[3] = 0x10325476;
    ctx->length = 0;
    ctx->used = 0;
}

void
nrtemu__md5_update(struct nrtemu_md5 *ctx, const void *data, size_t len)
{
    nrtemu__hash_feed(compress, ctx->state, ctx->block, &ctx->used,
                      &ctx->length, data, len);
}

void
nrtemu__md5_final(struct nrtemu_md5 *ctx, uint8_t digest[NRTEMU_MD5_SIZE])
{
    uint64_t bits = ctx->length * 8;

    /* Padding: 0x80, zeros up to 56 mod 64, then the bit length (LE). */
    ctx->block[ctx->used++] = 0x80;
    if (ctx->used > 56) {
        memset(ctx->block + ctx->used, 0, 64 - ctx->used);
        compress(ctx->state, ctx->block);
        ctx->used = 0;
    }
    memset(ctx->block + ctx->used, 0, 56 - ctx->used);
    for (int i = 0; i < 8; i++) {
        ctx->block[56 + i] = (unsigned char)(bits >> (8 * i));
    }
    compress(ctx->state, ctx->block);
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 4; j++) {
            digest[4 * i + j] = (uint8_t)(ctx->state[i] >> (8 * j));
        }
    }
}

void
nrtemu__md5(const void *data, size_t len, uint8_t digest[NRTEMU_MD5_SIZE])
{
    struct nrtemu_md5 ctx;

    nrtemu__md5_init(&ctx);
    nrtemu__md5_update(&ctx, data, len);
    nrtemu__md5_final(&ctx, digest);
}
