/*
 * runtime.h - the process's runtime state, as other files see it
 * (internal).
 *
 * Each successful nrt_init() starts a new epoch (1, 2, ...).  Tensors
 * remember the epoch they were created in; an operation on a tensor is
 * allowed only while that epoch is the open one.  The check is a single
 * atomic load, cheap enough for the read/write hot paths.
 */
#ifndef NRTEMU_RUNTIME_H
#define NRTEMU_RUNTIME_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "nrt/nrt.h"

/* The open epoch, or 0 while no runtime is open.  Written by runtime.c. */
extern _Atomic uint32_t nrtemu__open_epoch;

static inline uint32_t
nrtemu__runtime_epoch(void)
{
    return atomic_load_explicit(&nrtemu__open_epoch, memory_order_acquire);
}

static inline bool
nrtemu__runtime_epoch_open(uint32_t epoch)
{
    return epoch != 0 && nrtemu__runtime_epoch() == epoch;
}

/*
 * Record why `epoch` cannot be used: NRT_UNINITIALIZED before the first
 * nrt_init(), NRT_CLOSED while no runtime is open or when `epoch` is the
 * runtime inherited through fork() (a detail naming fork), NRT_INVALID when a
 * newer runtime has replaced the one of `epoch`.  Pass epoch 0 when the call
 * needs an open runtime but no particular one.
 */
NRT_STATUS nrtemu__runtime_state_error(const char *func, uint32_t epoch);

/*
 * NRT_CLOSED, recorded with a detail naming fork() and the parent's PID,
 * when `epoch` is the runtime this process inherited from its parent
 * through fork(); else NRT_SUCCESS, recording nothing.  Thread-safe.
 */
NRT_STATUS nrtemu__runtime_fork_error(const char *func, uint32_t epoch);

/* NRT_SUCCESS when `epoch` is open, else as nrtemu__runtime_state_error(). */
static inline NRT_STATUS
nrtemu__runtime_check(const char *func, uint32_t epoch)
{
    if (__builtin_expect(nrtemu__runtime_epoch_open(epoch), 1)) {
        return NRT_SUCCESS;
    }
    return nrtemu__runtime_state_error(func, epoch);
}

/*
 * NRT_SUCCESS when a runtime is open and `vnc` is one of its visible
 * cores; else the state error (as nrtemu__runtime_check) or NRT_INVALID
 * naming the vnc and how many are visible.
 */
NRT_STATUS nrtemu__vnc_check(const char *func, long long vnc);

/* Record and return NRT_INVALID: `vnc` is not a visible core. */
NRT_STATUS nrtemu__vnc_reject(const char *func, long long vnc);

struct nrtemu_config;

/*
 * The configuration of the open runtime, or the environment's when none is
 * open (instance.h).  Failures are recorded against `func`.
 * @return NRT_SUCCESS or NRT_INVALID.
 */
NRT_STATUS nrtemu__runtime_config(const char *func, struct nrtemu_config *cfg);

/* Number of vncs of the open runtime, 0 when none is open. */
uint32_t nrtemu__runtime_visible_vnc(void);

#endif /* NRTEMU_RUNTIME_H */
