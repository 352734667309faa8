/*
 * storage.h - reference-counted tensor storage (internal).
 *
 * A storage is the memory behind one or more tensors: an allocated tensor
 * owns one reference, and each slice of it takes another, so the memory
 * lives until the last of them is freed.  Device storage is charged to its
 * vnc's HBM budget (hbm.h) for as long as it lives.
 */
#ifndef NRTEMU_STORAGE_H
#define NRTEMU_STORAGE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

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
    uint8_t kind; /* enum nrtemu_storage_kind */
    bool charged; /* holds `size` bytes of vnc's budget in `epoch` */
    int vnc;
    uint32_t epoch;
    unsigned char *base; /* first byte; NULL never */
    size_t size;         /* bytes usable from base */
    size_t mapped;       /* NRTEMU_STORAGE_MAPPED: the block's real size */
    void *block;         /* NRTEMU_STORAGE_INLINE: the malloc'd block */
};

/*
 * New storage of `size` (> 0) bytes with one reference.  DEVICE storage is
 * charged to `vnc` in `epoch`.  Contents are unspecified.
 * @return NRT_SUCCESS, NRT_RESOURCE (budget or host memory exhausted),
 *         NRT_INVALID or NRT_CLOSED (see nrtemu__hbm_charge()).
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

/* Drop one reference; the last one frees the memory and the charge. */
void nrtemu__storage_release(struct nrtemu_storage *s);

#endif /* NRTEMU_STORAGE_H */
