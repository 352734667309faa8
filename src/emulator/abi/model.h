/*
 * model.h - layout of nrt_model_t (internal).
 *
 * A model is a parsed NEFF placed on `vnc_count` consecutive vncs from
 * `vnc`, with one emulator program per subgraph.  Subgraph k runs on vnc
 * `vnc + k / lnc`: the subgraphs of an LNC=2 NEFF share one logical core.
 */
#ifndef NRTEMU_MODEL_H
#define NRTEMU_MODEL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"

#include "neff/neff.h"
#include "program/program.h"

struct nrtemu_rank; /* collective.h */

/* The NEFF header's name field (256 bytes) and a NUL. */
#define NRTEMU_MODEL_NAME_MAX 257

/* Marks a live model, to catch some stale or foreign handles. */
#define NRTEMU_MODEL_MAGIC 0x6e72744du /* "Mtrn" */

/*
 * The tensors an execution found by name for the NEFF's I/O (model.c
 * bind_io), valid while the input and output sets still carry the stamps
 * they had then (tensor_set.h): a call with the same sets unchanged
 * skips the lookups by name.  Only the lookups: each tensor is checked
 * again on every call (live, of the runtime, of the right size and vnc).
 * `busy` is a try-lock over the rest; a thread that finds it taken looks
 * the names up itself.
 */
struct nrtemu_bind_cache {
    atomic_bool busy;
    uint64_t in_stamp, out_stamp; /* 0 (no set's stamp): empty */
    nrt_tensor_t **tensors;       /* owned; neff->io_count of them */
};

struct nrt_model {
    uint32_t magic;
    uint32_t epoch;           /* runtime the model was loaded in */
    uint32_t vnc;             /* first vnc */
    uint32_t vnc_count;       /* vncs occupied, >= 1 */
    uint32_t lnc;             /* subgraphs per vnc, >= 1 */
    struct nrtemu_neff *neff; /* owned */
    /*
     * Owned, one per subgraph; NULL entries for subgraphs without an
     * emulator program (the NEFF was compiled for hardware).
     */
    struct nrtemu_program **programs;
    int subgraph_count;
    bool runnable;       /* every subgraph has a program */
    uint64_t timeout_ns; /* NEURON_RT_EXEC_TIMEOUT at load; 0: none */
    uint32_t rank;       /* nrt_load_collectives() ctx_device_id */
    uint32_t world;      /* ctx_device_count; 1 for nrt_load() */
    /* Owned: the model's handle on its rank's communicator (shared with
     * the rank's other collective models); NULL for a world of one. */
    struct nrtemu_rank *cc_rank;
    char name[NRTEMU_MODEL_NAME_MAX]; /* NEFF name, for messages and traces */
    struct nrtemu_bind_cache bind;    /* freed with the model */
};

/*
 * NRT_SUCCESS when `model` looks like a live model (NULL and freed handles
 * are rejected with NRT_INVALID).  The runtime state is not checked.
 */
NRT_STATUS nrtemu__model_check(const char *func, const nrt_model_t *model);

/*
 * NEURON_RT_EXEC_TIMEOUT as nanoseconds (0: no limit; unset: the default
 * of 600 s).
 * @return NRT_SUCCESS, or NRT_INVALID for a value that is not whole
 *         seconds from 0 to INT_MAX.
 */
NRT_STATUS nrtemu__env_exec_timeout(const char *func, uint64_t *timeout_ns);

#endif /* NRTEMU_MODEL_H */
