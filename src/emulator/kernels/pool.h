/*
 * pool.h - the worker threads that kernels share (internal).
 *
 * One pool per process, sized to the CPUs the process may run on (its
 * affinity mask) less the calling thread, which always takes part.  The
 * workers are started on first use; between jobs each polls for the next
 * one for 100 us (jobs come in bursts, and waking a parked thread takes
 * tens of microseconds), then parks on a condition variable: an idle pool
 * costs no CPU.  The workers' affinity is the process's CPUs less the
 * one the last job's caller ran on, so that a wakeup never queues them
 * behind their caller (pool.c).  A forked child starts with no workers
 * (fork.h) and starts its own when it first needs them.
 */
#ifndef NRTEMU_POOL_H
#define NRTEMU_POOL_H

#include <stdint.h>

/* One task of a job: `task` is in [0, count). */
typedef void (*nrtemu_pool_fn)(void *arg, uint32_t task);

/* One task of a job run by nrtemu__pool_run_slots: `slot`, in [0, slots),
 * is the thread's own for the whole job (its scratch, say). */
typedef void (*nrtemu_pool_slot_fn)(void *arg, uint32_t task, uint32_t slot);

/*
 * Tasks per thread that kernels cut a job into: the pool hands tasks out
 * one at a time as threads free up, so that a thread that the machine's
 * other processes hold up leaves its share to the others rather than
 * have them wait at the end of an even split.
 */
#define NRTEMU_POOL_TASKS_PER_THREAD 4

/*
 * The number of threads a job can run on at once: the workers plus the
 * caller, at least 1.  Thread-safe.
 */
uint32_t nrtemu__pool_threads(void);

/*
 * Bytes of the last-level cache (32 MiB when the machine does not say),
 * for kernels that choose how to store by it.  Thread-safe.
 */
uint64_t nrtemu__pool_llc_bytes(void);

/*
 * Run fn(arg, t) for every t in [0, count) and return when all have
 * returned; the tasks run on the pool's workers and the calling thread,
 * in any order, each exactly once.  When the pool is busy with another
 * caller's job (another core's program, or a task of a job that itself
 * calls this), or its workers cannot be started, every task runs on the
 * calling thread: never a deadlock, never a failure.  Thread-safe; `fn`
 * must be safe to call concurrently for different tasks.
 */
void nrtemu__pool_run(nrtemu_pool_fn fn, void *arg, uint32_t count);

/*
 * The tasks to cut `units` equal units of work into (each task a whole
 * number of units, `min_units` at least): NRTEMU_POOL_TASKS_PER_THREAD
 * per thread of the pool, fewer when there are not units enough; 1 when
 * the pool has one thread or there is work for one task only.
 * Thread-safe.
 */
uint32_t nrtemu__pool_tasks(uint64_t units, uint64_t min_units);

/*
 * As nrtemu__pool_run, for tasks that need scratch of their thread's: at
 * most `slots` threads (>= 1) take part, and each task gets the slot of
 * the thread that runs it, a slot no other thread uses during the job.
 * Tasks run in any order, and any number of them on one slot.
 */
void nrtemu__pool_run_slots(nrtemu_pool_slot_fn fn, void *arg, uint32_t count,
                            uint32_t slots);

#endif /* NRTEMU_POOL_H */
