/*
 * storage.c - reference-counted tensor storage.
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "device/hbm.h"
#include "device/host_memory.h"
#include "device/storage.h"

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
    /* Heap memory may hold old data. */
    atomic_init(&s->contents, NRTEMU_CONTENTS_UNDEFINED);
    s->base = (unsigned char *)data;
    s->block = block;
    s->mapped = 0;
    return s;
}

/* Fresh mapped pages are zero; anything else must be filled lazily. */
static struct nrtemu_storage *
storage_new_mapped(size_t size, char *why, size_t why_len)
{
    struct nrtemu_storage *s = malloc(sizeof *s);
    bool reused;

    if (s == NULL) {
        snprintf(why, why_len, "out of host memory");
        return NULL;
    }
    s->base = nrtemu__host_memory_map(size, &s->mapped, &reused, why, why_len);
    if (s->base == NULL) {
        free(s);
        return NULL;
    }
    s->kind = NRTEMU_STORAGE_MAPPED;
    atomic_init(&s->contents, reused || atomic_load(&nrtemu__storage_poison)
                                  ? NRTEMU_CONTENTS_UNDEFINED
                                  : NRTEMU_CONTENTS_READY);
    return s;
}

atomic_bool nrtemu__storage_poison;

/*
 * The poison word: a signalling NaN as float32 (exponent all ones, quiet
 * bit clear, mantissa not zero), and each 16-bit half a signalling NaN as
 * bfloat16.  Stored little-endian.
 */
#define POISON_WORD 0x7fa07fa0u

void
nrtemu__storage_fill(struct nrtemu_storage *s)
{
    unsigned char expected = NRTEMU_CONTENTS_UNDEFINED;

    if (!atomic_compare_exchange_strong(&s->contents, &expected,
                                        NRTEMU_CONTENTS_FILLING)) {
        /* READY, or another thread is filling: wait for it. */
        while (atomic_load_explicit(&s->contents, memory_order_acquire) ==
               NRTEMU_CONTENTS_FILLING) {
            sched_yield();
        }
        return;
    }
    if (atomic_load(&nrtemu__storage_poison)) {
        static const unsigned char word[4] = {
            POISON_WORD & 0xff, (POISON_WORD >> 8) & 0xff,
            (POISON_WORD >> 16) & 0xff, POISON_WORD >> 24};
        /* base is at least 64-byte aligned: the pattern starts a word. */
        for (size_t i = 0; i < s->size; i++) {
            s->base[i] = word[i % 4];
        }
    } else {
        memset(s->base, 0, s->size);
    }
    atomic_store_explicit(&s->contents, NRTEMU_CONTENTS_READY,
                          memory_order_release);
}

NRT_STATUS
nrtemu__storage_allocate(const char *func, nrt_tensor_placement_t placement,
                         int vnc, uint32_t epoch, size_t size,
                         struct nrtemu_storage **out)
{
    bool device = placement == NRT_TENSOR_PLACEMENT_DEVICE;
    struct nrtemu_storage *s;
    char why[512];
    NRT_STATUS st;

    /* Charge first: a request over budget must not touch host memory. */
    if (device) {
        st = nrtemu__hbm_charge(func, vnc, epoch, size);
        if (st != NRT_SUCCESS) {
            return st;
        }
    }
    why[0] = '\0';
    if (size < NRTEMU_SMALL_BLOCK_MAX) {
        s = storage_new_inline(size);
        snprintf(why, sizeof why, "out of host memory");
    } else {
        s = storage_new_mapped(size, why, sizeof why);
    }
    if (s == NULL) {
        size_t used = 0, limit = 0;
        if (device) {
            nrtemu__hbm_uncharge(vnc, epoch, size);
            nrtemu__hbm_stats((uint32_t)vnc, epoch, &used, &limit);
            return nrtemu__fail(NRT_RESOURCE, func,
                                "host memory cannot back a %zu-byte device "
                                "tensor on vnc %d (%s): emulated HBM is "
                                "host RAM; lower NRTPY_EMU_HBM_PER_CORE "
                                "(now %zu bytes per core) to what the host "
                                "can hold",
                                size, vnc, why, limit);
        }
        return nrtemu__fail(NRT_RESOURCE, func,
                            "host memory cannot back a %zu-byte tensor (%s)",
                            size, why);
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
    /* The caller's bytes are the contents. */
    atomic_init(&s->contents, NRTEMU_CONTENTS_READY);
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
