/*
 * host_memory.h - host pages behind large tensors (internal).
 *
 * Large blocks are anonymous private mappings with MAP_NORESERVE, so only
 * the pages a program touches cost memory, and a 1 TiB HBM budget is as
 * cheap as a 1 GiB one.  Blocks of 2 MiB and more are 2 MiB aligned and
 * advised for transparent huge pages.
 *
 * Freed blocks are kept in a small per-process cache and handed out again
 * for the next request of the same rounded size: a program that allocates
 * and frees same-sized tensors in a loop then reuses pages that are
 * already faulted in, as malloc would, instead of paying page faults on
 * every iteration.  The cache holds at most NRTEMU_CACHE_MAX_BLOCKS blocks
 * and NRTEMU_CACHE_MAX_BYTES bytes; the oldest block is unmapped first.
 *
 * A block is handed out again only at the alignment its new size needs
 * (a 2 MiB request never gets a page-aligned block freed by a 2 MiB - 1
 * tensor).  Contents of a block handed out are zero pages when fresh and
 * old data when reused; the map call says which.
 *
 * Host RAM accounting: every live block is "committed" (counted whole,
 * touched or not, since a tensor can be written whole at any time).  A map
 * that would commit more than the host can back fails instead of leaving
 * the kernel's OOM killer to end the process later.  What the host can
 * back is MemAvailable plus what the emulator holds already (at most the
 * process's resident set), re-read at most every 100 ms, less a margin
 * kept for the rest of the machine (nrtemu__host_margin): tensors that
 * used MemAvailable to its last megabytes would leave other processes,
 * and the page cache, to the OOM killer just the same.
 */
#ifndef NRTEMU_HOST_MEMORY_H
#define NRTEMU_HOST_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The margin: the larger of NRTEMU_HOST_MARGIN_MIN and
 * 1/NRTEMU_HOST_MARGIN_DIVISOR of the host's RAM.  A fixed floor covers
 * small hosts, where other processes still need their few hundred MiB; the
 * share covers large ones, whose other processes and caches grow with the
 * RAM.  (docs/device.md.)
 */
#define NRTEMU_HOST_MARGIN_MIN ((uint64_t)256 << 20)
#define NRTEMU_HOST_MARGIN_DIVISOR 32

/* The margin for a host of `ram` bytes (0 when unknown: the floor). */
static inline uint64_t
nrtemu__host_margin(uint64_t ram)
{
    uint64_t share = ram / NRTEMU_HOST_MARGIN_DIVISOR;

    return share > NRTEMU_HOST_MARGIN_MIN ? share : NRTEMU_HOST_MARGIN_MIN;
}

/*
 * The rule of a map: `size` more bytes on top of `held` committed ones fit
 * when `margin` bytes of `budget` (what the host can back, committed bytes
 * included) stay free.  Written so that no sum can overflow.
 */
static inline bool
nrtemu__host_commit_fits(uint64_t budget, uint64_t held, uint64_t size,
                         uint64_t margin)
{
    return margin <= budget && held <= budget - margin &&
           size <= budget - margin - held;
}

/* Requests below this size are served from the malloc heap instead. */
#define NRTEMU_SMALL_BLOCK_MAX ((size_t)64 * 1024)

#define NRTEMU_CACHE_MAX_BLOCKS 16
#define NRTEMU_CACHE_MAX_BYTES ((size_t)1 << 30)

/*
 * Map a block of at least `size` bytes.
 * @param mapped[out] the block's real size; pass it back to unmap.
 * @param reused[out] true when the block held an earlier tensor's data
 *                    (false: fresh zero pages).
 * @return the block, or NULL when the host cannot back it (committed
 *         bytes plus `size` exceed what it can back; a description is
 *         written to `why`, `why_len` bytes) or the address space is
 *         exhausted.
 */
void *nrtemu__host_memory_map(size_t size, size_t *mapped, bool *reused,
                              char *why, size_t why_len);

/* Release a block: into the cache, or back to the kernel. */
void nrtemu__host_memory_unmap(void *base, size_t mapped);

/* Unmap every cached block (at nrt_close(): the memory is not needed). */
void nrtemu__host_memory_trim(void);

/* Bytes of host RAM (MemTotal); 0 when unknown. */
uint64_t nrtemu__host_memory_total(void);

#endif /* NRTEMU_HOST_MEMORY_H */
