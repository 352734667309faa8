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
 * Contents of a block handed out are unspecified: zero pages when fresh,
 * old data when reused.
 */
#ifndef NRTEMU_HOST_MEMORY_H
#define NRTEMU_HOST_MEMORY_H

#include <stddef.h>

/* Requests below this size are served from the malloc heap instead. */
#define NRTEMU_SMALL_BLOCK_MAX ((size_t)64 * 1024)

#define NRTEMU_CACHE_MAX_BLOCKS 16
#define NRTEMU_CACHE_MAX_BYTES ((size_t)1 << 30)

/*
 * Map a block of at least `size` bytes.
 * @param mapped[out] the block's real size; pass it back to unmap.
 * @return the block, or NULL when the address space is exhausted.
 */
void *nrtemu__host_memory_map(size_t size, size_t *mapped);

/* Release a block: into the cache, or back to the kernel. */
void nrtemu__host_memory_unmap(void *base, size_t mapped);

/* Unmap every cached block (at nrt_close(): the memory is not needed). */
void nrtemu__host_memory_trim(void);

#endif /* NRTEMU_HOST_MEMORY_H */
