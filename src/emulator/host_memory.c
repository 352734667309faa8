/*
 * host_memory.c - mapped blocks behind large tensors, with a reuse cache.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "host_memory.h"

#define HUGE_PAGE ((size_t)2 << 20)

struct cached_block {
    void *base;
    size_t size;
    uint64_t stamp; /* larger is newer */
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
/* One spare slot: a block is inserted before the oldest is evicted. */
static struct cached_block cache[NRTEMU_CACHE_MAX_BLOCKS + 1];
static size_t cache_count;
static size_t cache_bytes;
static uint64_t cache_clock;

static size_t
page_size(void)
{
    long n = sysconf(_SC_PAGESIZE);

    return n > 0 ? (size_t)n : 4096;
}

static bool
round_up(size_t n, size_t align, size_t *out)
{
    if (n > SIZE_MAX - (align - 1)) {
        return false;
    }
    *out = (n + align - 1) & ~(align - 1);
    return true;
}

static void
cache_remove(size_t i)
{
    cache_bytes -= cache[i].size;
    cache[i] = cache[--cache_count];
}

static void *
cache_take(size_t size)
{
    void *base = NULL;
    size_t best = 0;
    bool found = false;

    pthread_mutex_lock(&cache_lock);
    /* The newest block is the likeliest to still be in the CPU caches. */
    for (size_t i = 0; i < cache_count; i++) {
        if (cache[i].size == size &&
            (!found || cache[i].stamp > cache[best].stamp)) {
            best = i;
            found = true;
        }
    }
    if (found) {
        base = cache[best].base;
        cache_remove(best);
    }
    pthread_mutex_unlock(&cache_lock);
    return base;
}

static void *
map_fresh(size_t size, size_t align)
{
    const int prot = PROT_READ | PROT_WRITE;
    const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    unsigned char *raw, *start;
    size_t over, head, tail;

    if (align <= page_size()) {
        raw = mmap(NULL, size, prot, flags, -1, 0);
        return raw == MAP_FAILED ? NULL : raw;
    }
    /* Over-map by one alignment unit, then trim both ends to align. */
    if (size > SIZE_MAX - align) {
        return NULL;
    }
    over = size + align;
    raw = mmap(NULL, over, prot, flags, -1, 0);
    if (raw == MAP_FAILED) {
        return NULL;
    }
    start = (unsigned char *)(((uintptr_t)raw + align - 1) & ~(align - 1));
    head = (size_t)(start - raw);
    tail = over - head - size;
    if (head > 0) {
        munmap(raw, head);
    }
    if (tail > 0) {
        munmap(start + size, tail);
    }
    /* Only advice: without THP the block still works with small pages. */
    madvise(start, size, MADV_HUGEPAGE);
    return start;
}

void *
nrtemu__host_memory_map(size_t size, size_t *mapped)
{
    size_t align = size >= HUGE_PAGE ? HUGE_PAGE : page_size();
    size_t rounded;
    void *base;

    if (!round_up(size, align, &rounded)) {
        return NULL;
    }
    base = cache_take(rounded);
    if (base == NULL) {
        base = map_fresh(rounded, align);
    }
    if (base != NULL) {
        *mapped = rounded;
    }
    return base;
}

void
nrtemu__host_memory_unmap(void *base, size_t mapped)
{
    struct cached_block evicted[NRTEMU_CACHE_MAX_BLOCKS + 1];
    size_t n_evicted = 0;

    if (mapped > NRTEMU_CACHE_MAX_BYTES) {
        munmap(base, mapped);
        return;
    }
    pthread_mutex_lock(&cache_lock);
    cache[cache_count].base = base;
    cache[cache_count].size = mapped;
    cache[cache_count].stamp = ++cache_clock;
    cache_count++;
    cache_bytes += mapped;
    while (cache_count > NRTEMU_CACHE_MAX_BLOCKS ||
           cache_bytes > NRTEMU_CACHE_MAX_BYTES) {
        size_t oldest = 0;
        for (size_t i = 1; i < cache_count; i++) {
            if (cache[i].stamp < cache[oldest].stamp) {
                oldest = i;
            }
        }
        evicted[n_evicted++] = cache[oldest];
        cache_remove(oldest);
    }
    pthread_mutex_unlock(&cache_lock);
    /* munmap outside the lock: it can take a while for large blocks. */
    for (size_t i = 0; i < n_evicted; i++) {
        munmap(evicted[i].base, evicted[i].size);
    }
}

void
nrtemu__host_memory_trim(void)
{
    struct cached_block evicted[NRTEMU_CACHE_MAX_BLOCKS + 1];
    size_t n_evicted;

    pthread_mutex_lock(&cache_lock);
    n_evicted = cache_count;
    for (size_t i = 0; i < cache_count; i++) {
        evicted[i] = cache[i];
    }
    cache_count = 0;
    cache_bytes = 0;
    pthread_mutex_unlock(&cache_lock);
    for (size_t i = 0; i < n_evicted; i++) {
        munmap(evicted[i].base, evicted[i].size);
    }
}
