/*
 * core_lock.h - NeuronCore ownership across processes (internal).
 *
 * On hardware a NeuronCore belongs to one process at a time.  We model it
 * with one lock file per physical core, locked with open-file-description
 * locks (F_OFD_SETLK): the kernel drops them when the process exits or
 * dies, so a crashed owner never leaves a core stuck.  The holder writes
 * its PID into the file so that a refused process can name it.
 *
 * Files live in <root>/<namespace>/<instance>/nc<N>.lock, where <root> is
 * $XDG_RUNTIME_DIR/nrtpy-emu when that is a directory of ours, else
 * /tmp/nrtpy-emu-<uid>, and <namespace> is NRTPY_EMU_NAMESPACE ("default").
 * Each directory is created mode 0700 and refused when it is not ours or
 * is writable by others.  Locks are per physical core so that processes
 * using different logical core sizes on Trn2 still exclude each other;
 * messages name logical cores (vncs), in the instance's global numbering.
 *
 * A namespace's folder goes with its last process: releasing cores sweeps
 * the namespace, unlinking every lock file no process holds (a crashed
 * holder's too), then each instance folder and the namespace folder once
 * they are empty.  Files that are not lock files are left alone and keep
 * their folders.  The root stays: it is shared by every namespace.
 *
 * A sweep must never unlink a file between a claimant's open and its lock
 * (two processes could then own one core, each locking another inode), so
 * claims and sweeps of a namespace exclude each other with flock() on the
 * namespace folder: claims share it, a sweep takes it alone.  A claimant
 * that gets the flock on a folder a sweep has just removed (it opened the
 * folder before the rmdir) finds it unlinked and starts again from mkdir.
 */
#ifndef NRTEMU_CORE_LOCK_H
#define NRTEMU_CORE_LOCK_H

#include <stdint.h>

#include "device/instance.h"

struct nrtemu_core_locks {
    int fds[NRTEMU_MAX_PHYSICAL_CORES]; /* -1: not held.  Owned. */
    /* The lock root and namespace of the last claim, for the sweep at
     * release; "" when there is nothing to sweep. */
    char root[4096];
    char ns[72];
};

void nrtemu__core_locks_init(struct nrtemu_core_locks *locks);

/*
 * Claim vncs [first, first + count) of the instance, all or none.
 * @return NRT_SUCCESS; NRT_RESOURCE naming the busy cores and their
 *         holders; NRT_INVALID for a bad NRTPY_EMU_NAMESPACE; NRT_FAILURE
 *         when the lock directory is unusable.
 */
NRT_STATUS nrtemu__core_locks_acquire(const char *func,
                                      const struct nrtemu_config *cfg,
                                      uint32_t first, uint32_t count,
                                      struct nrtemu_core_locks *locks);

/*
 * Claim the first `count` contiguous free vncs.
 * @param first[out] the first vnc claimed.
 * @return as nrtemu__core_locks_acquire().
 */
NRT_STATUS nrtemu__core_locks_acquire_any(const char *func,
                                          const struct nrtemu_config *cfg,
                                          uint32_t count, uint32_t *first,
                                          struct nrtemu_core_locks *locks);

/*
 * In a forked child: close the descriptors inherited from the parent,
 * which keeps the cores and its PID in their files, and forget the
 * namespace (the parent sweeps it).  Async-signal-safe.
 */
void nrtemu__core_locks_forget(struct nrtemu_core_locks *locks);

/*
 * Release every core held, then sweep the namespace of the last claim:
 * its folder is removed when no process holds a core in it any more.
 */
void nrtemu__core_locks_release(struct nrtemu_core_locks *locks);

#endif /* NRTEMU_CORE_LOCK_H */
