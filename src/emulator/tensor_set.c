/*
 * tensor_set.c - the name -> tensor map that carries execute I/O.
 *
 * A set is a host-side container and touches no device state, so it works
 * whatever the runtime state, before nrt_init() and after nrt_close() too.
 * Sets hold a handful of entries, so a linear search in insertion order is
 * both the simplest and the fastest lookup.
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "export.h"
#include "tensor_set.h"

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

static struct nrtemu_tensor_set_entry *
set_find(struct nrtemu_tensor_set *set, const char *name)
{
    for (size_t i = 0; i < set->count; i++) {
        if (strcmp(set->entries[i].name, name) == 0) {
            return &set->entries[i];
        }
    }
    return NULL;
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
    pthread_mutex_destroy(&set->lock);
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
        entry->tensor = tensor;
        pthread_mutex_unlock(&set->lock);
        return NRT_SUCCESS;
    }
    if (set->count == set->capacity) {
        size_t capacity = set->capacity ? set->capacity * 2 : 8;
        struct nrtemu_tensor_set_entry *entries =
            realloc(set->entries, capacity * sizeof *entries);
        if (entries == NULL) {
            pthread_mutex_unlock(&set->lock);
            return nrtemu__fail(NRT_RESOURCE, __func__, "out of host memory");
        }
        set->entries = entries;
        set->capacity = capacity;
    }
    name = strdup(tensor_name);
    if (name == NULL) {
        pthread_mutex_unlock(&set->lock);
        return nrtemu__fail(NRT_RESOURCE, __func__, "out of host memory");
    }
    set->entries[set->count].name = name;
    set->entries[set->count].tensor = tensor;
    set->count++;
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
