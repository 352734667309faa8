/*
 * profile.h - recording executions for nrt_profile_start/stop (internal).
 *
 * An execution of a model that a profile watches records its ops into a
 * private nrtemu_profile_rec (no lock while the program runs), then hands
 * the record to every profile watching the model.  Failed executions are
 * discarded, as the runtime writes profiles of successful ones only.
 */
#ifndef NRTEMU_PROFILE_H
#define NRTEMU_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"
#include "nrt/nrt_profile.h"

struct nrtemu_profile_op {
    char *name;   /* owned */
    char *shapes; /* owned */
    char *note;   /* owned, or NULL: the op's "note" */
    size_t index;
    uint64_t exec_id; /* set by nrtemu__profile_commit() */
    uint32_t vnc;
    uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
};

/* The ops of one execution. */
struct nrtemu_profile_rec {
    struct nrtemu_profile_op *ops; /* owned */
    size_t count, capacity;
    uint32_t vnc;   /* core of the ops being run now */
    bool truncated; /* ran out of memory: some ops are missing */
};

/* True when a profile watches `model`: record its next execution. */
bool nrtemu__profile_watching(const nrt_model_t *model);

void nrtemu__profile_rec_init(struct nrtemu_profile_rec *rec);
void nrtemu__profile_rec_free(struct nrtemu_profile_rec *rec);

/* An nrtemu_op_observer; `ctx` is a struct nrtemu_profile_rec. */
void nrtemu__profile_observe(void *ctx, size_t index, const char *op,
                             const char *shapes, const char *note,
                             uint64_t start_ns, uint64_t end_ns);

/*
 * Give the record of a successful execution [start_ns, end_ns) on `vnc`
 * to the profiles watching `model`.  The record is left empty.
 */
void nrtemu__profile_commit(const nrt_model_t *model, uint64_t exec_id,
                            uint32_t vnc, uint64_t start_ns, uint64_t end_ns,
                            struct nrtemu_profile_rec *rec);

/* The model is going away: profiles stop watching it (keep what they have). */
void nrtemu__profile_forget(const nrt_model_t *model);

#endif /* NRTEMU_PROFILE_H */
