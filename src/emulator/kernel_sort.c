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
 * insertion sort on short runs.
 */
#include <string.h>

#include "convert.h"
#include "kernel.h"

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

NRT_STATUS
nrtemu__kernel_argsort(const struct nrtemu_array *out,
                       const struct nrtemu_array *keys, uint32_t axis,
                       bool descending, struct nrtemu_scratch *s)
{
    uint64_t len = keys->ndim == 0 ? 1 : keys->shape[axis];
    uint64_t outer = 1, inner = 1;
    enum nrtemu_dtype dt = keys->dtype;
    enum nrtemu_dtype wide = nrtemu__dtype_is_float(dt) ? NRTEMU_DTYPE_FLOAT64
                             : nrtemu__dtype_is_signed_int(dt)
                                 ? NRTEMU_DTYPE_INT64
                                 : NRTEMU_DTYPE_UINT64;
    size_t size = nrtemu__dtype_size(dt);
    struct sort_item *items;
    uint64_t *vals;
    int32_t *o = out->data;

    if (nrtemu__array_count(keys) == 0) {
        return NRT_SUCCESS;
    }
    for (uint32_t d = 0; d < keys->ndim; d++) {
        if (d < axis) {
            outer *= keys->shape[d];
        } else if (d > axis) {
            inner *= keys->shape[d];
        }
    }
    /* Two item arrays (merge source and target) and the widened keys. */
    items = nrtemu__scratch_get(s, (size_t)len * (2 * sizeof *items + 8));
    if (items == NULL) {
        return NRT_RESOURCE;
    }
    vals = (uint64_t *)(items + 2 * len);
    for (uint64_t a = 0; a < outer; a++) {
        for (uint64_t b = 0; b < inner; b++) {
            uint64_t base = a * len * inner + b;
            nrtemu__convert(wide, vals, dt,
                            (const char *)keys->data + base * size,
                            (ptrdiff_t)inner, (size_t)len);
            for (uint64_t k = 0; k < len; k++) {
                uint64_t v = vals[k];
                if (wide == NRTEMU_DTYPE_FLOAT64) {
                    /* Negative: all bits flipped; positive: sign set. */
                    v = (v >> 63) ? ~v : v | 0x8000000000000000u;
                } else if (wide == NRTEMU_DTYPE_INT64) {
                    v ^= 0x8000000000000000u;
                }
                items[k].key = descending ? ~v : v;
                items[k].idx = k;
            }
            sort_items(items, items + len, (size_t)len);
            for (uint64_t k = 0; k < len; k++) {
                o[base + k * inner] = (int32_t)items[k].idx;
            }
        }
    }
    return NRT_SUCCESS;
}
