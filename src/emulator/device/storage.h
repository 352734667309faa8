/*
 * storage.h - reference-counted tensor storage (internal).
 *
 * A storage is the memory behind one or more tensors: an allocated tensor
 * owns one reference, and each slice of it takes another, so the memory
 * lives until the last of them is freed.  Device storage is charged to its
 * vnc's HBM budget (hbm.h) for as long as it lives.
 *
 * Fresh storage reads as zero, as device memory does after the runtime
 * allocates it (or as a signalling-NaN pattern under NRTPY_EMU_POISON=1).
 * The fill is lazy: storage whose bytes are not known to be zero yet (heap
 * blocks, reused mapped blocks, poison) is marked UNDEFINED and filled by
 * the first access through nrtemu__storage_data(); a write that covers the
 * whole storage claims it first (nrtemu__storage_claim()) and skips the
 * fill, so a tensor written whole before it is read costs no extra pass.
 */
#ifndef NRTEMU_STORAGE_H
#define NRTEMU_STORAGE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

/* State of the bytes of a storage (struct nrtemu_storage.contents). */
enum nrtemu_storage_contents {
    NRTEMU_CONTENTS_READY = 0,     /* zero, poison or written */
    NRTEMU_CONTENTS_UNDEFINED = 1, /* to fill before any access */
    NRTEMU_CONTENTS_FILLING = 2,   /* a thread is filling it */
};

enum nrtemu_storage_kind {
    /* Header and data in one malloc'd block (small sizes). */
    NRTEMU_STORAGE_INLINE,
    /* Data in a block of host_memory.h. */
    NRTEMU_STORAGE_MAPPED,
    /* Caller memory from nrt_tensor_attach_buffer(): never freed by us. */
    NRTEMU_STORAGE_ATTACHED,
};

struct nrtemu_storage {
    atomic_uint refs;
    uint8_t kind;          /* enum nrtemu_storage_kind */
    bool charged;          /* holds `size` bytes of vnc's budget in `epoch` */
    atomic_uchar contents; /* enum nrtemu_storage_contents */
    int vnc;
    uint32_t epoch;
    unsigned char *base; /* first byte; NULL never */
    size_t size;         /* bytes usable from base */
    size_t mapped;       /* NRTEMU_STORAGE_MAPPED: the block's real size */
    void *block;         /* NRTEMU_STORAGE_INLINE: the malloc'd block */
};

/* NRTPY_EMU_POISON of the open runtime (set by nrt_init). */
extern atomic_bool nrtemu__storage_poison;

/*
 * New storage of `size` (> 0) bytes with one reference, reading as zero
 * (or poison).  DEVICE storage is charged to `vnc` in `epoch`.
 * @return NRT_SUCCESS, NRT_RESOURCE (budget or host memory exhausted: the
 *         detail names host memory and NRTPY_EMU_HBM_PER_CORE), NRT_INVALID
 *         or NRT_CLOSED (see nrtemu__hbm_charge()).
 */
NRT_STATUS nrtemu__storage_allocate(const char *func,
                                    nrt_tensor_placement_t placement, int vnc,
                                    uint32_t epoch, size_t size,
                                    struct nrtemu_storage **out);

/*
 * Storage over caller memory, with one reference.  Ownership: `buffer`
 * stays the caller's.
 * @return NRT_SUCCESS or NRT_RESOURCE.
 */
NRT_STATUS nrtemu__storage_attach(const char *func, void *buffer, size_t size,
                                  struct nrtemu_storage **out);

static inline void
nrtemu__storage_retain(struct nrtemu_storage *s)
{
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

/* Fill UNDEFINED storage (the slow path of nrtemu__storage_data()). */
void nrtemu__storage_fill(struct nrtemu_storage *s);

/* The first byte, filled first if the storage is still UNDEFINED. */
static inline unsigned char *
nrtemu__storage_data(struct nrtemu_storage *s)
{
    if (__builtin_expect(
            atomic_load_explicit(&s->contents, memory_order_acquire) !=
                NRTEMU_CONTENTS_READY,
            0)) {
        nrtemu__storage_fill(s);
    }
    return s->base;
}

/*
 * The caller is about to overwrite every byte of the storage: no fill is
 * needed.  Returns the first byte.
 */
static inline unsigned char *
nrtemu__storage_claim(struct nrtemu_storage *s)
{
    unsigned char expected = NRTEMU_CONTENTS_UNDEFINED;

    if (atomic_load_explicit(&s->contents, memory_order_relaxed) !=
        NRTEMU_CONTENTS_READY) {
        if (!atomic_compare_exchange_strong(&s->contents, &expected,
                                            NRTEMU_CONTENTS_READY)) {
            /* Another thread is filling: let it finish first. */
            nrtemu__storage_fill(s);
        }
    }
    return s->base;
}

/* Drop one reference; the last one frees the memory and the charge. */
void nrtemu__storage_release(struct nrtemu_storage *s);

#endif /* NRTEMU_STORAGE_H */
