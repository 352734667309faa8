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
 * process's resident set), re-read at most every 100 ms.
 */
#ifndef NRTEMU_HOST_MEMORY_H
#define NRTEMU_HOST_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
