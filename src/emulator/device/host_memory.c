/*
 * host_memory.c - mapped blocks behind large tensors, with a reuse cache.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/fork.h"
#include "device/host_memory.h"

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
cache_take(size_t size, size_t align)
{
    void *base = NULL;
    size_t best = 0;
    bool found = false;

    pthread_mutex_lock(&cache_lock);
    /* The newest block is the likeliest to still be in the CPU caches. */
    for (size_t i = 0; i < cache_count; i++) {
        if (cache[i].size == size &&
            ((uintptr_t)cache[i].base & (align - 1)) == 0 &&
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

/* ------------------------------------------------- host RAM accounting */

/* Bytes of live blocks (cached blocks are not committed). */
static _Atomic uint64_t committed;

/* The last reading of what the host can back, and when it was taken. */
static pthread_mutex_t budget_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t budget_bytes;
static uint64_t budget_margin;   /* nrtemu__host_margin() of this host */
static uint64_t budget_stamp_ns; /* 0: never read */

#define BUDGET_REFRESH_NS ((uint64_t)100 * 1000 * 1000)

/* A "<key>: <n> kB" line of /proc/meminfo, in bytes; 0 when absent. */
static uint64_t
meminfo_bytes(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "re");
    char line[256];
    size_t len = strlen(key);
    uint64_t kib = 0;

    if (f == NULL) {
        return 0;
    }
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, key, len) == 0 && line[len] == ':') {
            if (sscanf(line + len + 1, "%" SCNu64, &kib) != 1) {
                kib = 0;
            }
            break;
        }
    }
    fclose(f);
    return kib * 1024;
}

/* The process's resident set in bytes; 0 when unknown. */
static uint64_t
resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "re");
    uint64_t size = 0, resident = 0;

    if (f == NULL) {
        return 0;
    }
    if (fscanf(f, "%" SCNu64 " %" SCNu64, &size, &resident) != 2) {
        resident = 0;
    }
    fclose(f);
    return resident * page_size();
}

uint64_t
nrtemu__host_memory_total(void)
{
    long pages = sysconf(_SC_PHYS_PAGES);

    return pages > 0 ? (uint64_t)pages * page_size() : 0;
}

/*
 * What the host can back in all, committed bytes included: MemAvailable
 * plus what we hold (our committed pages that are resident are counted in
 * neither MemAvailable nor, beyond the resident set, anywhere).  UINT64_MAX
 * when /proc/meminfo is unreadable (no limit rather than a false one; the
 * margin then takes nothing from it that matters).
 */
static uint64_t
budget_read(uint64_t held)
{
    uint64_t available = meminfo_bytes("MemAvailable");
    uint64_t resident = resident_bytes();

    if (available == 0) {
        return UINT64_MAX;
    }
    return available + (held < resident ? held : resident);
}

/* Commit `size` more bytes if the host can back them and keep its
 * margin. */
static bool
commit(size_t size, bool force_refresh, char *why, size_t why_len)
{
    /* The coarse clock (a few ms of resolution) is plenty for a 100 ms
     * refresh and costs no system call. */
    uint64_t now = nrtemu__clock_ns(CLOCK_MONOTONIC_COARSE), held, budget;
    uint64_t margin;
    bool ok;

    pthread_mutex_lock(&budget_lock);
    held = atomic_load(&committed);
    if (force_refresh || budget_stamp_ns == 0 ||
        now - budget_stamp_ns > BUDGET_REFRESH_NS ||
        !nrtemu__host_commit_fits(budget_bytes, held, size, budget_margin)) {
        budget_bytes = budget_read(held);
        budget_margin = nrtemu__host_margin(nrtemu__host_memory_total());
        budget_stamp_ns = now;
    }
    budget = budget_bytes;
    margin = budget_margin;
    ok = nrtemu__host_commit_fits(budget, held, size, margin);
    if (ok) {
        atomic_fetch_add(&committed, size);
    } else if (why != NULL && why_len > 0) {
        snprintf(why, why_len,
                 "%" PRIu64 " bytes of host memory in use by tensors, %" PRIu64
                 " more available (MemAvailable), of which %" PRIu64
                 " are kept free for the rest of the host (the larger of "
                 "%" PRIu64 " MiB and 1/%d of its RAM)",
                 held, budget > held ? budget - held : 0, margin,
                 NRTEMU_HOST_MARGIN_MIN >> 20, NRTEMU_HOST_MARGIN_DIVISOR);
    }
    pthread_mutex_unlock(&budget_lock);
    return ok;
}

static void
uncommit(size_t size)
{
    atomic_fetch_sub(&committed, size);
}

void
nrtemu__host_memory_atfork(enum nrtemu_fork_phase phase)
{
    /* The child keeps the cache and the accounting (its copies of the
     * blocks are its own memory), so both are copied consistent. */
    nrtemu__fork_leaf_lock(&cache_lock, phase);
    nrtemu__fork_leaf_lock(&budget_lock, phase);
}

void *
nrtemu__host_memory_map(size_t size, size_t *mapped, bool *reused, char *why,
                        size_t why_len)
{
    size_t align = size >= HUGE_PAGE ? HUGE_PAGE : page_size();
    size_t rounded;
    void *base;

    if (!round_up(size, align, &rounded)) {
        snprintf(why, why_len, "%zu bytes do not fit the address space", size);
        return NULL;
    }
    if (!commit(rounded, false, why, why_len)) {
        /* Cached blocks hold RAM nobody uses: give it back and look
         * again. */
        nrtemu__host_memory_trim();
        if (!commit(rounded, true, why, why_len)) {
            return NULL;
        }
    }
    base = cache_take(rounded, align);
    *reused = base != NULL;
    if (base == NULL) {
        base = map_fresh(rounded, align);
    }
    if (base == NULL) {
        uncommit(rounded);
        snprintf(why, why_len, "mmap of %zu bytes failed", rounded);
        return NULL;
    }
    *mapped = rounded;
    return base;
}

void
nrtemu__host_memory_unmap(void *base, size_t mapped)
{
    struct cached_block evicted[NRTEMU_CACHE_MAX_BLOCKS + 1];
    size_t n_evicted = 0;

    uncommit(mapped);
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
