/*
 * kernel.c - what the kernels share: scratch memory, loads and stores.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/convert.h"
#include "kernels/kernel.h"

uint64_t
nrtemu__array_count(const struct nrtemu_array *a)
{
    uint64_t n = 1;

    for (uint32_t d = 0; d < a->ndim; d++) {
        n *= a->shape[d];
    }
    return n;
}

bool
nrtemu__arrays_match(const struct nrtemu_array *out,
                     const struct nrtemu_array *in, int n,
                     enum nrtemu_dtype dt)
{
    for (int k = 0; k < n; k++) {
        if (in[k].dtype != dt || in[k].ndim != out->ndim ||
            memcmp(in[k].shape, out->shape, out->ndim * sizeof *out->shape) !=
                0) {
            return false;
        }
    }
    return true;
}

void *
nrtemu__scratch_get(struct nrtemu_scratch *s, size_t size)
{
    void *p;

    if (size == 0) {
        size = 1;
    }
    if (s->data != NULL && s->size >= size) {
        return s->data;
    }
    /* The contents need not survive, so no realloc copy; round up so
     * that slowly growing requests do not reallocate every time. */
    size = (size + 4095) & ~(size_t)4095;
    if (size == 0 || posix_memalign(&p, 64, size) != 0) {
        return NULL;
    }
    free(s->data);
    s->data = p;
    s->size = size;
    return p;
}

void
nrtemu__scratch_free(struct nrtemu_scratch *s)
{
    free(s->data);
    s->data = NULL;
    s->size = 0;
}

/* Elements per step of a conversion through the compute dtype. */
#define MID_ELEMS 512

void *
nrtemu__kernel_load(const struct nrtemu_array *in, enum nrtemu_dtype compute,
                    enum nrtemu_dtype kt, void *buf)
{
    uint64_t count = nrtemu__array_count(in);
    size_t in_size = nrtemu__dtype_size(in->dtype);
    size_t kt_size = nrtemu__dtype_size(kt);
    uint64_t mid[MID_ELEMS];

    if (in->dtype == compute || compute == kt) {
        nrtemu__convert(kt, buf, in->dtype, in->data, 1, count);
        return buf;
    }
    for (uint64_t done = 0; done < count; done += MID_ELEMS) {
        size_t k = count - done < MID_ELEMS ? count - done : MID_ELEMS;
        nrtemu__convert(compute, mid, in->dtype,
                        (const char *)in->data + done * in_size, 1, k);
        nrtemu__convert(kt, (char *)buf + done * kt_size, compute, mid, 1, k);
    }
    return buf;
}

void
nrtemu__kernel_store(const struct nrtemu_array *out, enum nrtemu_dtype compute,
                     enum nrtemu_dtype kt, const void *res)
{
    uint64_t count = nrtemu__array_count(out);
    size_t out_size = nrtemu__dtype_size(out->dtype);
    size_t kt_size = nrtemu__dtype_size(kt);
    uint64_t mid[MID_ELEMS];

    if (out->dtype == compute || compute == kt) {
        nrtemu__convert(out->dtype, out->data, kt, res, 1, count);
        return;
    }
    for (uint64_t done = 0; done < count; done += MID_ELEMS) {
        size_t k = count - done < MID_ELEMS ? count - done : MID_ELEMS;
        nrtemu__convert(compute, mid, kt, (const char *)res + done * kt_size,
                        1, k);
        nrtemu__convert(out->dtype, (char *)out->data + done * out_size,
                        compute, mid, 1, k);
    }
}
