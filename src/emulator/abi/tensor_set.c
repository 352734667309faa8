/*
 * tensor_set.c - the name -> tensor map that carries execute I/O.
 *
 * A set is a host-side container and touches no device state, so it works
 * whatever the runtime state, before nrt_init() and after nrt_close() too.
 * Names are hashed once, when added; a lookup is a hash and a probe or
 * two, so binding a model's I/O is linear in its tensor count.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/hash.h"
#include "util/export.h"
#include "abi/tensor_set.h"

/* The last stamp given to a set (tensor_set.h). */
static _Atomic uint64_t last_stamp;

/* A stamp no set has had; the caller holds the set's lock (or owns it
 * alone, at creation). */
static void
set_restamp(struct nrtemu_tensor_set *set)
{
    atomic_store_explicit(&set->stamp, atomic_fetch_add(&last_stamp, 1) + 1,
                          memory_order_release);
}

static NRT_STATUS
set_check(const char *func, const nrt_tensor_set_t *tensor_set)
{
    const struct nrtemu_tensor_set *set = tensor_set;

    if (set == NULL) {
        return nrtemu__reject(NRT_INVALID, func, "NULL tensor set");
    }
    if (set->magic != NRTEMU_TENSOR_SET_MAGIC) {
        return nrtemu__reject(NRT_INVALID, func,
                              "not a live tensor set (freed or corrupt)");
    }
    return NRT_SUCCESS;
}

/* The slot holding `name`, or the empty slot where it would go.  The
 * index is never full (index_size >= 2 x capacity). */
static size_t
set_slot(const struct nrtemu_tensor_set *set, const char *name, uint64_t hash)
{
    size_t mask = set->index_size - 1;

    for (size_t i = (size_t)hash & mask;; i = (i + 1) & mask) {
        uint32_t e = set->index[i];
        if (e == 0 || (set->entries[e - 1].hash == hash &&
                       strcmp(set->entries[e - 1].name, name) == 0)) {
            return i;
        }
    }
}

static struct nrtemu_tensor_set_entry *
set_find(const struct nrtemu_tensor_set *set, const char *name)
{
    if (set->count == 0) {
        return NULL;
    }
    uint32_t e = set->index[set_slot(set, name, nrtemu__name_hash(name))];
    return e != 0 ? &set->entries[e - 1] : NULL;
}

/* Room for one more entry; false when out of memory (nothing changed). */
static bool
set_grow(struct nrtemu_tensor_set *set)
{
    struct nrtemu_tensor_set_entry *entries;
    size_t capacity, size;
    uint32_t *index;

    if (set->count < set->capacity) {
        return true;
    }
    capacity = set->capacity ? set->capacity * 2 : 8;
    if (capacity > UINT32_MAX / 2) {
        return false; /* entry numbers must fit the index */
    }
    size = capacity * 2;
    index = calloc(size, sizeof *index);
    entries = index != NULL ? realloc(set->entries, capacity * sizeof *entries)
                            : NULL;
    if (entries == NULL) {
        free(index);
        return false;
    }
    set->entries = entries;
    set->capacity = capacity;
    free(set->index);
    set->index = index;
    set->index_size = size;
    for (size_t i = 0; i < set->count; i++) {
        set->index[set_slot(set, entries[i].name, entries[i].hash)] =
            (uint32_t)(i + 1);
    }
    return true;
}

nrt_tensor_t *
nrtemu__tensor_set_lookup_locked(const struct nrtemu_tensor_set *set,
                                 const char *name)
{
    struct nrtemu_tensor_set_entry *entry = set_find(set, name);

    return entry != NULL ? entry->tensor : NULL;
}

nrt_tensor_t *
nrtemu__tensor_set_lookup(const struct nrtemu_tensor_set *cset,
                          const char *name)
{
    /* Lookups change nothing, but they must exclude concurrent adds. */
    struct nrtemu_tensor_set *set = (struct nrtemu_tensor_set *)cset;
    struct nrtemu_tensor_set_entry *entry;
    nrt_tensor_t *tensor;

    pthread_mutex_lock(&set->lock);
    entry = set_find(set, name);
    tensor = entry != NULL ? entry->tensor : NULL;
    pthread_mutex_unlock(&set->lock);
    return tensor;
}

NRTEMU_EXPORT NRT_STATUS
nrt_allocate_tensor_set(nrt_tensor_set_t **result)
{
    struct nrtemu_tensor_set *set;

    if (result == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL result pointer");
    }
    set = calloc(1, sizeof *set);
    if (set == NULL) {
        return nrtemu__fail(NRT_RESOURCE, __func__, "out of host memory");
    }
    set->magic = NRTEMU_TENSOR_SET_MAGIC;
    set_restamp(set);
    pthread_mutex_init(&set->lock, NULL);
    *result = set;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT void
nrt_destroy_tensor_set(nrt_tensor_set_t **tensor_set)
{
    struct nrtemu_tensor_set *set;

    if (tensor_set == NULL || *tensor_set == NULL) {
        return;
    }
    if (set_check(__func__, *tensor_set) != NRT_SUCCESS) {
        return;
    }
    set = *tensor_set;
    for (size_t i = 0; i < set->count; i++) {
        free(set->entries[i].name);
    }
    free(set->entries);
    free(set->index);
    pthread_mutex_destroy(&set->lock);
    /* (0 matches no binding; a set at this address later gets a new one.) */
    atomic_store(&set->stamp, 0);
    set->magic = 0;
    free(set);
    *tensor_set = NULL;
}

NRTEMU_EXPORT NRT_STATUS
nrt_add_tensor_to_tensor_set(nrt_tensor_set_t *tensor_set,
                             const char *tensor_name, nrt_tensor_t *tensor)
{
    struct nrtemu_tensor_set *set = tensor_set;
    struct nrtemu_tensor_set_entry *entry;
    NRT_STATUS st = set_check(__func__, tensor_set);
    uint64_t hash;
    char *name;

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (tensor_name == NULL || tensor == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL %s",
                              tensor_name == NULL ? "tensor name" : "tensor");
    }
    pthread_mutex_lock(&set->lock);
    entry = set_find(set, tensor_name);
    if (entry != NULL) {
        /* A known name: replaced in place, no allocation (callers that
         * reuse a set across executions rely on it).  The same tensor
         * again changes nothing, and keeps the bindings made with it. */
        if (entry->tensor != tensor) {
            entry->tensor = tensor;
            set_restamp(set);
        }
        pthread_mutex_unlock(&set->lock);
        return NRT_SUCCESS;
    }
    name = set_grow(set) ? strdup(tensor_name) : NULL;
    if (name == NULL) {
        pthread_mutex_unlock(&set->lock);
        return nrtemu__fail(NRT_RESOURCE, __func__, "out of host memory");
    }
    hash = nrtemu__name_hash(name);
    set->entries[set->count] =
        (struct nrtemu_tensor_set_entry){name, hash, tensor};
    set->index[set_slot(set, name, hash)] = (uint32_t)(set->count + 1);
    set->count++;
    set_restamp(set);
    pthread_mutex_unlock(&set->lock);
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_get_tensor_from_tensor_set(nrt_tensor_set_t *tensor_set,
                               const char *tensor_name, nrt_tensor_t **tensor)
{
    struct nrtemu_tensor_set *set = tensor_set;
    struct nrtemu_tensor_set_entry *entry;
    NRT_STATUS st = set_check(__func__, tensor_set);

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (tensor_name == NULL || tensor == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL %s",
                              tensor_name == NULL ? "tensor name"
                                                  : "tensor pointer");
    }
    pthread_mutex_lock(&set->lock);
    entry = set_find(set, tensor_name);
    if (entry != NULL) {
        *tensor = entry->tensor;
    }
    pthread_mutex_unlock(&set->lock);
    if (entry == NULL) {
        /* Callers probe for optional entries: not worth a warning. */
        return nrtemu__fail_at(NRTEMU_LOG_DEBUG, NRT_FAILURE, __func__,
                               "no tensor named '%.200s' in the set",
                               tensor_name);
    }
    return NRT_SUCCESS;
}
