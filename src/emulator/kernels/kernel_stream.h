/*
 * kernel_stream.h - non-temporal stores of large results (internal,
 * shared by the kernels).
 *
 * An op whose operands and result together outgrow the last-level cache
 * streams from memory anyway, and its result is evicted before anything
 * reads it.  Stored the ordinary way, every cache line of the result is
 * first read from memory (write-allocate): a third more traffic for a
 * binary op, half more for a unary one.  Non-temporal stores skip that
 * read.  A large binary op runs markedly faster so than with plain stores,
 * when each block of results (1 KiB: larger blocks measured slower) is
 * computed into cache and then copied out with them.  Below the threshold the
 * result stays in cache for whatever reads it next, and plain stores win.
 */
#ifndef NRTEMU_KERNEL_STREAM_H
#define NRTEMU_KERNEL_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/pool.h"

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define KSTREAM_HAVE 1
#else
#define KSTREAM_HAVE 0
#endif

/* Bytes of results computed into cache before they are streamed out. */
#define KSTREAM_BLOCK 1024

/*
 * Whether an op that reads and writes `bytes` in all, `out_bytes` of them
 * its result, should stream its result: all of it at least the size of
 * the last-level cache (pool.h).  Thread-safe.
 */
static inline bool
kstream_wanted(uint64_t bytes, uint64_t out_bytes)
{
    return KSTREAM_HAVE && out_bytes >= ((uint64_t)1 << 20) &&
           bytes >= nrtemu__pool_llc_bytes();
}

/*
 * memcpy with non-temporal stores for the aligned part of dst, as wide as
 * the CPU has (16-byte ones measured slower than 64-byte ones on AVX-512
 * parts); kstream_fence() must follow before other threads read dst.
 * kernel_layout.c.
 */
void nrtemu__kstream_copy(void *dst, const void *src, size_t n);
#define kstream_copy nrtemu__kstream_copy

/* Orders the streamed stores before what follows (a pool task's end). */
static inline void
kstream_fence(void)
{
#if KSTREAM_HAVE
    _mm_sfence();
#endif
}

/*
 * A result of n elements of `size` bytes (a divisor of KSTREAM_BLOCK),
 * whose part [at, at + count) fn(ctx, at, count, dst) computes into dst:
 * all of it straight into o, or, when `stream`, a block at a time into
 * cache and then streamed out (kstream_fence() included).  fn may refuse
 * (false) at its first call only, when nothing has been written yet; then
 * this returns false.  Thread-safe as fn is.
 */
typedef bool kstream_part_fn(const void *ctx, size_t at, size_t count,
                             void *dst);

static inline bool
kstream_parts(kstream_part_fn *fn, const void *ctx, void *o, size_t n,
              size_t size, bool stream)
{
    size_t step = KSTREAM_BLOCK / size;

    if (!stream) {
        return fn(ctx, 0, n, o);
    }
    for (size_t j = 0; j < n; j += step) {
        _Alignas(64) unsigned char block[KSTREAM_BLOCK];
        size_t c = n - j < step ? n - j : step;
        if (!fn(ctx, j, c, block)) {
            return false; /* (at the first block) */
        }
        kstream_copy((char *)o + j * size, block, c * size);
    }
    kstream_fence();
    return true;
}

/*
 * A map of 2-byte codes to 2-byte codes over n elements: fn(ctx, a, o, n)
 * through kstream_parts.  For the float16 and bfloat16 unary paths
 * (kernel_table16.c, kernel_round16.c).  Thread-safe as fn is.
 */
typedef void kstream_map16_fn(const void *ctx, const uint16_t *a, uint16_t *o,
                              size_t n);

struct kstream_map16_args {
    kstream_map16_fn *fn;
    const void *ctx;
    const uint16_t *a;
};

static inline bool
kstream_map16_part(const void *ctx, size_t at, size_t count, void *dst)
{
    const struct kstream_map16_args *m = ctx;

    m->fn(m->ctx, m->a + at, dst, count);
    return true;
}

static inline void
kstream_map16(kstream_map16_fn *fn, const void *ctx, const uint16_t *a,
              uint16_t *o, size_t n, bool stream)
{
    struct kstream_map16_args m = {fn, ctx, a};

    kstream_parts(kstream_map16_part, &m, o, n, sizeof *o, stream);
}

#endif /* NRTEMU_KERNEL_STREAM_H */
