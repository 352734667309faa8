/*
 * tensor_set.h - layout of nrt_tensor_set_t (internal).
 */
#ifndef NRTEMU_TENSOR_SET_H
#define NRTEMU_TENSOR_SET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

/* nrt_tensor_set_t is void in the ABI: the magic catches foreign pointers. */
#define NRTEMU_TENSOR_SET_MAGIC 0x6e727453u /* "Strn" */

struct nrtemu_tensor_set_entry {
    char *name;           /* owned */
    uint64_t hash;        /* of the name */
    nrt_tensor_t *tensor; /* borrowed */
};

/*
 * Entries in insertion order, found by name through an open-addressing
 * index (linear probing): lookups cost the same whether a set holds three
 * tensors or the thousands of a large model's weights.
 */
struct nrtemu_tensor_set {
    uint32_t magic;
    /*
     * Names what the set maps: new at creation and at every change, never
     * 0 and never reused by any set, so a binding of names to tensors made
     * at one stamp (model.c caches its last) holds while the stamp does,
     * even for a set allocated where a destroyed one was.  Written under
     * `lock`; read without it (nrtemu__tensor_set_stamp).
     */
    _Atomic uint64_t stamp;
    pthread_mutex_t lock; /* guards everything below */
    size_t count;
    size_t capacity;
    struct nrtemu_tensor_set_entry *entries; /* owned; insertion order */
    uint32_t *index;   /* owned; entry number + 1 per slot, 0 when empty */
    size_t index_size; /* a power of two, at least 2 x capacity */
};

/* The set's stamp now; `set` must be live (magic checked).  Lock-free:
 * a change made at the same time may or may not be seen. */
static inline uint64_t
nrtemu__tensor_set_stamp(const struct nrtemu_tensor_set *set)
{
    return atomic_load_explicit(&set->stamp, memory_order_acquire);
}

/*
 * The tensor named `name` in `set`, or NULL.  Takes the set's lock, so it
 * is safe against concurrent adds.  `set` must be live (magic checked).
 */
nrt_tensor_t *nrtemu__tensor_set_lookup(const struct nrtemu_tensor_set *set,
                                        const char *name);

/* The same, for a caller that holds the set's lock already (binding a
 * model's I/O takes each set's lock once, not once per tensor). */
nrt_tensor_t *
nrtemu__tensor_set_lookup_locked(const struct nrtemu_tensor_set *set,
                                 const char *name);

#endif /* NRTEMU_TENSOR_SET_H */
