/*
 * storage.c - reference-counted tensor storage.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hbm.h"
#include "host_memory.h"
#include "storage.h"

/*
 * Inline storage puts the header in the 64 bytes right before the data, in
 * one malloc'd block, so a small tensor costs a single malloc and its data
 * is 64-byte aligned.  Plain malloc with room to align, rather than
 * aligned_alloc: glibc serves malloc from its per-thread cache, while
 * aligned_alloc takes a slower path that dominated the cost of allocating
 * a small tensor.
 */
#define INLINE_HEADER 64
#define INLINE_ALIGN 64

_Static_assert(sizeof(struct nrtemu_storage) <= INLINE_HEADER,
               "storage header must fit in front of inline data");

static struct nrtemu_storage *
storage_new_inline(size_t size)
{
    /* malloc gives 16-byte alignment: at most 48 bytes to skip. */
    unsigned char *block = malloc(INLINE_HEADER + INLINE_ALIGN - 16 + size);
    if (block == NULL) {
        return NULL;
    }
    uintptr_t data = ((uintptr_t)block + INLINE_HEADER + INLINE_ALIGN - 1) &
                     ~(uintptr_t)(INLINE_ALIGN - 1);
    struct nrtemu_storage *s = (struct nrtemu_storage *)(data - INLINE_HEADER);
    s->kind = NRTEMU_STORAGE_INLINE;
    s->base = (unsigned char *)data;
    s->block = block;
    s->mapped = 0;
    return s;
}

static struct nrtemu_storage *
storage_new_mapped(size_t size)
{
    struct nrtemu_storage *s = malloc(sizeof *s);

    if (s == NULL) {
        return NULL;
    }
    s->base = nrtemu__host_memory_map(size, &s->mapped);
    if (s->base == NULL) {
        free(s);
        return NULL;
    }
    s->kind = NRTEMU_STORAGE_MAPPED;
    return s;
}

NRT_STATUS
nrtemu__storage_allocate(const char *func, nrt_tensor_placement_t placement,
                         int vnc, uint32_t epoch, size_t size,
                         struct nrtemu_storage **out)
{
    bool device = placement == NRT_TENSOR_PLACEMENT_DEVICE;
    struct nrtemu_storage *s;
    NRT_STATUS st;

    /* Charge first: a request over budget must not touch host memory. */
    if (device) {
        st = nrtemu__hbm_charge(func, vnc, epoch, size);
        if (st != NRT_SUCCESS) {
            return st;
        }
    }
    s = size < NRTEMU_SMALL_BLOCK_MAX ? storage_new_inline(size)
                                      : storage_new_mapped(size);
    if (s == NULL) {
        if (device) {
            nrtemu__hbm_uncharge(vnc, epoch, size);
        }
        return nrtemu__fail(NRT_RESOURCE, func,
                            "out of host memory backing a %zu-byte tensor",
                            size);
    }
    atomic_init(&s->refs, 1);
    s->charged = device;
    s->vnc = device ? vnc : -1;
    s->epoch = epoch;
    s->size = size;
    *out = s;
    return NRT_SUCCESS;
}

NRT_STATUS
nrtemu__storage_attach(const char *func, void *buffer, size_t size,
                       struct nrtemu_storage **out)
{
    struct nrtemu_storage *s = malloc(sizeof *s);

    if (s == NULL) {
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    atomic_init(&s->refs, 1);
    s->kind = NRTEMU_STORAGE_ATTACHED;
    s->charged = false;
    s->vnc = -1;
    s->epoch = 0;
    s->base = buffer;
    s->size = size;
    s->mapped = 0;
    *out = s;
    return NRT_SUCCESS;
}

void
nrtemu__storage_release(struct nrtemu_storage *s)
{
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) {
        return;
    }
    if (s->charged) {
        nrtemu__hbm_uncharge(s->vnc, s->epoch, s->size);
    }
    switch ((enum nrtemu_storage_kind)s->kind) {
    case NRTEMU_STORAGE_INLINE:
        free(s->block);
        return;
    case NRTEMU_STORAGE_MAPPED:
        nrtemu__host_memory_unmap(s->base, s->mapped);
        break;
    case NRTEMU_STORAGE_ATTACHED:
        break;
    }
    free(s);
}
