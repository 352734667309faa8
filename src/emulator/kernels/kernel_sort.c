/*
 * kernel_sort.c - argsort: the stable sorting permutation along an axis
 * (docs/neff-emulator-format.md §3).
 *
 * Each line along the axis is converted to 64-bit keys whose unsigned
 * order is the wanted order: floats (widened exactly to float64) in
 * XLA's total order, -NaN < -inf < ... < -0 < +0 < ... < inf < +NaN;
 * signed integers with the sign bit flipped; unsigned ones as they are.
 * Descending sorts the complemented keys ascending, which keeps equal
 * keys in their original order.  The sort is a merge sort (stable), with
 * insertion sort on short runs, or for long lines of keys of at most 32
 * bits a radix sort (radix_sort).  Large inputs are split among the
 * pool's threads by lines.
 */
#include <string.h>

#include "kernels/convert.h"
#include "kernels/kernel.h"
#include "kernels/pool.h"

struct sort_item {
    uint64_t key;
    uint64_t idx;
};

/* Runs of this many items are insertion-sorted before merging. */
#define RUN 16

static void
sort_items(struct sort_item *a, struct sort_item *tmp, size_t n)
{
    struct sort_item *src = a, *dst = tmp;

    for (size_t lo = 0; lo < n; lo += RUN) {
        size_t hi = n - lo < RUN ? n : lo + RUN;
        for (size_t i = lo + 1; i < hi; i++) {
            struct sort_item v = a[i];
            size_t j = i;
            while (j > lo && a[j - 1].key > v.key) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = v;
        }
    }
    for (size_t width = RUN; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = n - lo < width ? n : lo + width;
            size_t hi = n - lo < 2 * width ? n : lo + 2 * width;
            size_t i = lo, j = mid, k = lo;
            /* Ties take the left item: stable. */
            while (i < mid && j < hi) {
                dst[k++] = src[j].key < src[i].key ? src[j++] : src[i++];
            }
            while (i < mid) {
                dst[k++] = src[i++];
            }
            while (j < hi) {
                dst[k++] = src[j++];
            }
        }
        struct sort_item *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) {
        memcpy(a, src, n * sizeof *a);
    }
}

/*
 * Lines of at least RADIX_MIN keys of at most 32 bits are sorted by
 * radix instead: each item is its 32-bit key above its index, sorted on
 * the key bytes from the lowest (LSD, stable), four passes of 256 buckets
 * at most; a pass whose byte every key shares is skipped.  Below
 * RADIX_MIN, the merge sort's compares cost less than the buckets.
 */
#define RADIX_MIN 256

static void
radix_sort(uint64_t *a, uint64_t *tmp, size_t n)
{
    uint32_t count[4][256];
    uint64_t *src = a, *dst = tmp;

    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++) {
        uint32_t k = (uint32_t)(a[i] >> 32);
        count[0][k & 255]++;
        count[1][(k >> 8) & 255]++;
        count[2][(k >> 16) & 255]++;
        count[3][k >> 24]++;
    }
    for (int p = 0; p < 4; p++) {
        unsigned shift = 32 + 8 * (unsigned)p;
        size_t pos[256], sum = 0;
        if (count[p][(src[0] >> shift) & 255] == n) {
            continue; /* every key has this byte */
        }
        for (int b = 0; b < 256; b++) {
            pos[b] = sum;
            sum += count[p][b];
        }
        for (size_t i = 0; i < n; i++) {
            uint64_t v = src[i];
            dst[pos[(v >> shift) & 255]++] = v;
        }
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) {
        memcpy(a, src, n * sizeof *a);
    }
}

/* Line `base` (len keys, `inner` apart) by radix_sort, into out; `work`
 * has room for 3 * len 64-bit words. */
static void
radix_line(enum nrtemu_dtype dt, const void *src, ptrdiff_t inner,
           uint64_t len, bool descending, uint64_t *work, int32_t *out)
{
    uint64_t *items = work, *tmp = work + len;
    uint32_t *k32 = (uint32_t *)(void *)(work + 2 * len);
    bool is_float = nrtemu__dtype_is_float(dt);
    bool is_signed = nrtemu__dtype_is_signed_int(dt);
    /* Exact: every type of at most 32 bits fits its 32-bit family. */
    enum nrtemu_dtype wide32 = is_float    ? NRTEMU_DTYPE_FLOAT32
                               : is_signed ? NRTEMU_DTYPE_INT32
                                           : NRTEMU_DTYPE_UINT32;

    nrtemu__convert(wide32, k32, dt, src, inner, (size_t)len);
    for (uint64_t k = 0; k < len; k++) {
        uint32_t v = k32[k];
        if (is_float) {
            /* The order of the float64 keys of the merge sort. */
            v = (v >> 31) ? ~v : v | 0x80000000u;
        } else if (is_signed) {
            v ^= 0x80000000u;
        }
        items[k] = (uint64_t)(descending ? ~v : v) << 32 | k;
    }
    radix_sort(items, tmp, (size_t)len);
    for (uint64_t k = 0; k < len; k++) {
        out[k * (uint64_t)inner] = (int32_t)(uint32_t)items[k];
    }
}

/* Inputs of at least this many elements are split among the pool's
 * threads, by lines (each line sorted by one thread: the same result). */
#define PARALLEL_ELEMS ((uint64_t)1 << 18)

/* The lines [0, outer * inner) of one argsort, split among tasks. */
struct sort_job {
    const struct nrtemu_array *keys;
    int32_t *out;
    uint64_t len, inner, lines;
    enum nrtemu_dtype wide;
    bool descending;
    char *scratch; /* task_bytes for each task */
    size_t task_bytes;
    uint32_t tasks;
};

static void
sort_task(void *arg, uint32_t t)
{
    const struct sort_job *j = arg;
    uint64_t len = j->len, inner = j->inner;
    uint64_t per = (j->lines + j->tasks - 1) / j->tasks;
    uint64_t l0 = per * t < j->lines ? per * t : j->lines;
    uint64_t l1 = per * (t + 1) < j->lines ? per * (t + 1) : j->lines;
    enum nrtemu_dtype dt = j->keys->dtype;
    size_t size = nrtemu__dtype_size(dt);
    struct sort_item *items =
        (struct sort_item *)(void *)(j->scratch + t * j->task_bytes);
    uint64_t *vals = (uint64_t *)(items + 2 * len);

    for (uint64_t line = l0; line < l1; line++) {
        uint64_t a = line / inner, b = line % inner;
        uint64_t base = a * len * inner + b;
        if (size <= 4 && len >= RADIX_MIN && len <= UINT32_MAX) {
            radix_line(dt, (const char *)j->keys->data + base * size,
                       (ptrdiff_t)inner, len, j->descending, (uint64_t *)items,
                       j->out + base);
            continue;
        }
        nrtemu__convert(j->wide, vals, dt,
                        (const char *)j->keys->data + base * size,
                        (ptrdiff_t)inner, (size_t)len);
        for (uint64_t k = 0; k < len; k++) {
            uint64_t v = vals[k];
            if (j->wide == NRTEMU_DTYPE_FLOAT64) {
                /* Negative: all bits flipped; positive: sign set. */
                v = (v >> 63) ? ~v : v | 0x8000000000000000u;
            } else if (j->wide == NRTEMU_DTYPE_INT64) {
                v ^= 0x8000000000000000u;
            }
            items[k].key = j->descending ? ~v : v;
            items[k].idx = k;
        }
        sort_items(items, items + len, (size_t)len);
        for (uint64_t k = 0; k < len; k++) {
            j->out[base + k * inner] = (int32_t)items[k].idx;
        }
    }
}

NRT_STATUS
nrtemu__kernel_argsort(const struct nrtemu_array *out,
                       const struct nrtemu_array *keys, uint32_t axis,
                       bool descending, struct nrtemu_scratch *s)
{
    uint64_t len = keys->ndim == 0 ? 1 : keys->shape[axis];
    uint64_t outer = 1, inner = 1, count = nrtemu__array_count(keys);
    enum nrtemu_dtype dt = keys->dtype;
    uint32_t threads = 1;
    struct sort_job j = {
        .keys = keys,
        .out = out->data,
        .len = len,
        .descending = descending,
        .wide = nrtemu__dtype_is_float(dt)        ? NRTEMU_DTYPE_FLOAT64
                : nrtemu__dtype_is_signed_int(dt) ? NRTEMU_DTYPE_INT64
                                                  : NRTEMU_DTYPE_UINT64,
    };

    if (count == 0) {
        return NRT_SUCCESS;
    }
    for (uint32_t d = 0; d < keys->ndim; d++) {
        if (d < axis) {
            outer *= keys->shape[d];
        } else if (d > axis) {
            inner *= keys->shape[d];
        }
    }
    j.inner = inner;
    j.lines = outer * inner;
    if (count >= PARALLEL_ELEMS) {
        threads = nrtemu__pool_threads();
    }
    /* A few tasks per thread: a thread that other processes hold up
     * leaves its share to the others (the pool hands tasks out one at a
     * time). */
    threads = threads > 1 ? threads * 4 : 1;
    j.tasks = j.lines < threads ? (uint32_t)j.lines : threads;
    /* Two item arrays (merge source and target) and the widened keys,
     * for each task. */
    j.task_bytes =
        ((size_t)len * (2 * sizeof(struct sort_item) + 8) + 63) & ~(size_t)63;
    j.scratch = nrtemu__scratch_get(s, j.tasks * j.task_bytes);
    if (j.scratch == NULL) {
        return NRT_RESOURCE;
    }
    if (j.tasks > 1) {
        nrtemu__pool_run(sort_task, &j, j.tasks);
    } else {
        sort_task(&j, 0);
    }
    return NRT_SUCCESS;
}
