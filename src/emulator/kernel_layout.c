/*
 * kernel_layout.c - ops that move elements without computing: transpose,
 * broadcast_to and copy, concatenate, slice, take, iota and full.
 *
 * Most of them are one strided gather: the output is walked in C order
 * while the input is read with a stride per output dimension (permuted
 * for transpose, 0 for broadcast, scaled and offset for slice).  Runs
 * that are contiguous in both become memcpy; a transpose, whose input
 * run is strided, is done in square tiles so that both sides stay in
 * cache.
 */
#include <string.h>

#include "convert.h"
#include "kernel.h"
#include "kernel_iter.h"

/* Side of the tiles of a transposing copy, in elements. */
#define TILE 32

/* Copy n elements of `size` bytes read with `stride` (in elements). */
static void
copy_run(char *dst, const char *src, ptrdiff_t stride, size_t n, size_t size)
{
    if (stride == 1) {
        memcpy(dst, src, n * size);
        return;
    }
    switch (size) {
    case 1:
        for (size_t i = 0; i < n; i++) {
            dst[i] = src[(ptrdiff_t)i * stride];
        }
        break;
    case 2: {
        uint16_t *d = (uint16_t *)dst;
        const uint16_t *s = (const uint16_t *)src;
        for (size_t i = 0; i < n; i++) {
            d[i] = s[(ptrdiff_t)i * stride];
        }
        break;
    }
    case 4: {
        uint32_t *d = (uint32_t *)dst;
        const uint32_t *s = (const uint32_t *)src;
        for (size_t i = 0; i < n; i++) {
            d[i] = s[(ptrdiff_t)i * stride];
        }
        break;
    }
    default: {
        uint64_t *d = (uint64_t *)dst;
        const uint64_t *s = (const uint64_t *)src;
        for (size_t i = 0; i < n; i++) {
            d[i] = s[(ptrdiff_t)i * stride];
        }
        break;
    }
    }
}

/* Fill n elements of `size` bytes with the one at `elem`. */
static void
fill(char *dst, const void *elem, size_t n, size_t size)
{
    switch (size) {
    case 1:
        memset(dst, *(const unsigned char *)elem, n);
        break;
    case 2: {
        uint16_t v, *d = (uint16_t *)dst;
        memcpy(&v, elem, 2);
        for (size_t i = 0; i < n; i++) {
            d[i] = v;
        }
        break;
    }
    case 4: {
        uint32_t v, *d = (uint32_t *)dst;
        memcpy(&v, elem, 4);
        for (size_t i = 0; i < n; i++) {
            d[i] = v;
        }
        break;
    }
    default: {
        uint64_t v, *d = (uint64_t *)dst;
        memcpy(&v, elem, 8);
        for (size_t i = 0; i < n; i++) {
            d[i] = v;
        }
        break;
    }
    }
}

/*
 * out (contiguous, its own shape) = the elements of `src` read with
 * `strides` (elements, per out dimension).
 */
static void
gather(const struct nrtemu_array *out, const char *src,
       const ptrdiff_t *strides)
{
    size_t size = nrtemu__dtype_size(out->dtype);
    struct kiter it;
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    ptrdiff_t off[2] = {0, 0};
    uint64_t outer;
    size_t len;
    ptrdiff_t st;
    char *dst = out->data;

    if (nrtemu__array_count(out) == 0) {
        return;
    }
    kiter_init(&it, out->ndim, out->shape, 2);
    for (uint32_t d = 0; d < out->ndim; d++) {
        it.stride[0][d] = strides[d];
    }
    kiter_broadcast(&it, 1, out->ndim, out->shape);
    kiter_collapse(&it);
    len = it.shape[it.ndim - 1];
    st = it.stride[0][it.ndim - 1];

    if (it.ndim >= 2 && st != 1 && st != 0 && it.stride[0][it.ndim - 2] == 1) {
        /* A transposition of the last two dimensions: copy tiles. */
        uint64_t rows = it.shape[it.ndim - 2];
        struct kiter outer_it = it;
        outer_it.ndim = it.ndim - 1;
        outer = kiter_outer_count(&outer_it);
        for (uint64_t o = 0; o < outer; o++) {
            const char *s0 = src + off[0] * (ptrdiff_t)size;
            char *d0 = dst + off[1] * (ptrdiff_t)size;
            for (uint64_t r0 = 0; r0 < rows; r0 += TILE) {
                uint64_t r1 = rows - r0 < TILE ? rows : r0 + TILE;
                for (uint64_t c0 = 0; c0 < len; c0 += TILE) {
                    uint64_t c1 = len - c0 < TILE ? len : c0 + TILE;
                    for (uint64_t r = r0; r < r1; r++) {
                        copy_run(d0 + (r * len + c0) * size,
                                 s0 + ((ptrdiff_t)r + (ptrdiff_t)c0 * st) *
                                          (ptrdiff_t)size,
                                 st, c1 - c0, size);
                    }
                }
            }
            kiter_next(&outer_it, idx, off);
        }
        return;
    }
    outer = kiter_outer_count(&it);
    for (uint64_t o = 0; o < outer; o++) {
        const char *s = src + off[0] * (ptrdiff_t)size;
        char *d = dst + off[1] * (ptrdiff_t)size;
        if (st == 0) {
            fill(d, s, len, size);
        } else {
            copy_run(d, s, st, len, size);
        }
        kiter_next(&it, idx, off);
    }
}

/* C-order strides of `a`, in elements. */
static void
contiguous_strides(const struct nrtemu_array *a, ptrdiff_t *strides)
{
    ptrdiff_t st = 1;

    for (int d = (int)a->ndim - 1; d >= 0; d--) {
        strides[d] = st;
        st *= (ptrdiff_t)a->shape[d];
    }
}

void
nrtemu__kernel_transpose(const struct nrtemu_array *out,
                         const struct nrtemu_array *in, const uint32_t *perm)
{
    ptrdiff_t in_strides[NRTEMU_MAX_DIMS], strides[NRTEMU_MAX_DIMS];

    contiguous_strides(in, in_strides);
    for (uint32_t d = 0; d < out->ndim; d++) {
        strides[d] = in_strides[perm[d]];
    }
    gather(out, in->data, strides);
}

void
nrtemu__kernel_broadcast(const struct nrtemu_array *out,
                         const struct nrtemu_array *in)
{
    struct kiter it;
    ptrdiff_t strides[NRTEMU_MAX_DIMS];

    /* kiter_broadcast computes the broadcast strides; gather collapses. */
    kiter_init(&it, out->ndim, out->shape, 1);
    kiter_broadcast(&it, 0, in->ndim, in->shape);
    for (uint32_t d = 0; d < out->ndim; d++) {
        strides[d] = it.stride[0][d];
    }
    gather(out, in->data, strides);
}

void
nrtemu__kernel_slice(const struct nrtemu_array *out,
                     const struct nrtemu_array *in, const int64_t *start,
                     const int64_t *step)
{
    ptrdiff_t in_strides[NRTEMU_MAX_DIMS], strides[NRTEMU_MAX_DIMS];
    ptrdiff_t base = 0;
    size_t size = nrtemu__dtype_size(in->dtype);

    contiguous_strides(in, in_strides);
    for (uint32_t d = 0; d < in->ndim; d++) {
        base += (ptrdiff_t)start[d] * in_strides[d];
        strides[d] = (ptrdiff_t)step[d] * in_strides[d];
    }
    gather(out, (const char *)in->data + base * (ptrdiff_t)size, strides);
}

void
nrtemu__kernel_concatenate(const struct nrtemu_array *out,
                           const struct nrtemu_array *in, int n_in,
                           uint32_t axis)
{
    size_t size = nrtemu__dtype_size(out->dtype);
    uint64_t outer = 1, inner = 1, total = out->shape[axis];
    uint64_t at = 0;

    /* Empty: the loops below could still count up to 2^56 iterations
     * over the other dimensions. */
    if (nrtemu__array_count(out) == 0) {
        return;
    }
    for (uint32_t d = 0; d < axis; d++) {
        outer *= out->shape[d];
    }
    for (uint32_t d = axis + 1; d < out->ndim; d++) {
        inner *= out->shape[d];
    }
    for (int k = 0; k < n_in; k++) {
        uint64_t n = in[k].shape[axis];
        size_t run = n * inner * size;
        for (uint64_t o = 0; o < outer; o++) {
            memcpy((char *)out->data + ((o * total + at) * inner) * size,
                   (const char *)in[k].data + o * run, run);
        }
        at += n;
    }
}

NRT_STATUS
nrtemu__kernel_take(const struct nrtemu_array *out,
                    const struct nrtemu_array *data,
                    const struct nrtemu_array *indices, uint32_t axis,
                    int64_t *bad_index, struct nrtemu_scratch *s)
{
    size_t size = nrtemu__dtype_size(data->dtype);
    uint64_t outer = 1, inner = 1, n = data->shape[axis];
    uint64_t count = nrtemu__array_count(indices);
    int64_t *idx;

    for (uint32_t d = 0; d < axis; d++) {
        outer *= data->shape[d];
    }
    for (uint32_t d = axis + 1; d < data->ndim; d++) {
        inner *= data->shape[d];
    }
    idx = nrtemu__scratch_get(s, count * sizeof *idx);
    if (idx == NULL) {
        return NRT_RESOURCE;
    }
    /* Check every index before writing anything; negative ones count
     * from the end, as in NumPy. */
    nrtemu__convert(NRTEMU_DTYPE_INT64, idx, indices->dtype, indices->data, 1,
                    count);
    for (uint64_t i = 0; i < count; i++) {
        int64_t v = idx[i];
        if (v < -(int64_t)n || v >= (int64_t)n) {
            *bad_index = v;
            return NRT_EXEC_OOB;
        }
        idx[i] = v < 0 ? v + (int64_t)n : v;
    }
    if (outer * inner * count == 0) {
        return NRT_SUCCESS;
    }
    for (uint64_t o = 0; o < outer; o++) {
        const char *src = (const char *)data->data + o * n * inner * size;
        char *dst = (char *)out->data + o * count * inner * size;
        if (inner == 1 && size == 4) {
            const uint32_t *s32 = (const uint32_t *)src;
            uint32_t *d32 = (uint32_t *)dst;
            for (uint64_t i = 0; i < count; i++) {
                d32[i] = s32[idx[i]];
            }
            continue;
        }
        for (uint64_t i = 0; i < count; i++) {
            memcpy(dst + i * inner * size,
                   src + (uint64_t)idx[i] * inner * size, inner * size);
        }
    }
    return NRT_SUCCESS;
}

void
nrtemu__kernel_iota(const struct nrtemu_array *out, uint32_t axis)
{
    size_t size = nrtemu__dtype_size(out->dtype);
    uint64_t outer = 1, inner = 1, n;
    unsigned char elem[8];
    char *dst = out->data;

    if (out->ndim == 0) {
        int64_t zero = 0;
        nrtemu__convert(out->dtype, dst, NRTEMU_DTYPE_INT64, &zero, 1, 1);
        return;
    }
    /* Empty: the loops below could still count up to 2^56 iterations. */
    if (nrtemu__array_count(out) == 0) {
        return;
    }
    n = out->shape[axis];
    for (uint32_t d = 0; d < axis; d++) {
        outer *= out->shape[d];
    }
    for (uint32_t d = axis + 1; d < out->ndim; d++) {
        inner *= out->shape[d];
    }
    for (uint64_t i = 0; i < n; i++) {
        int64_t v = (int64_t)i;
        nrtemu__convert(out->dtype, elem, NRTEMU_DTYPE_INT64, &v, 1, 1);
        for (uint64_t o = 0; o < outer; o++) {
            fill(dst + ((o * n + i) * inner) * size, elem, inner, size);
        }
    }
}

void
nrtemu__kernel_full(const struct nrtemu_array *out, const void *value)
{
    fill(out->data, value, nrtemu__array_count(out),
         nrtemu__dtype_size(out->dtype));
}
