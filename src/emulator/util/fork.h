/*
 * fork.h - what a forked child inherits of the emulator, and what it must
 * not (internal).
 *
 * fork() copies the whole address space but only the calling thread.  A
 * mutex another thread held at that moment stays locked forever in the
 * child, and the runtime's cores, HBM and workers belong to the parent.
 * So each file that owns process-wide locks or threads has one hook,
 * called by the pthread_atfork() handlers of fork.c in three phases:
 *
 *   PREPARE  in the parent before fork(), in the order of the table in
 *            fork.c: take the locks whose data the child goes on using,
 *            so that it is copied in a consistent state;
 *   PARENT   in the parent after fork(), in reverse order: release them;
 *   CHILD    in the child, in reverse order: re-initialise every lock and
 *            condition variable (another thread may have held it), forget
 *            threads that do not exist here, and close the inherited
 *            runtime without touching what the parent owns.
 *
 * A hook takes in PREPARE only leaf locks (or rt.lock, first of all), so
 * the table's order is a valid lock order.
 */
#ifndef NRTEMU_FORK_H
#define NRTEMU_FORK_H

#include <pthread.h>

enum nrtemu_fork_phase {
    NRTEMU_FORK_PREPARE,
    NRTEMU_FORK_PARENT,
    NRTEMU_FORK_CHILD,
};

/* Register the pthread_atfork() handlers, once per process.  Thread-safe;
 * called by nrt_init(). */
void nrtemu__fork_handlers_install(void);

/*
 * The hook of a leaf lock whose data the child goes on using: held across
 * fork() so that the data is copied whole, then released (the parent) or
 * re-initialised (the child, where the forking thread holds it).
 */
static inline void
nrtemu__fork_leaf_lock(pthread_mutex_t *lock, enum nrtemu_fork_phase phase)
{
    switch (phase) {
    case NRTEMU_FORK_PREPARE:
        pthread_mutex_lock(lock);
        break;
    case NRTEMU_FORK_PARENT:
        pthread_mutex_unlock(lock);
        break;
    case NRTEMU_FORK_CHILD:
        pthread_mutex_init(lock, NULL);
        break;
    }
}

/* The hooks, one per file, listed (in lock order) by NRTEMU_FORK_HOOKS. */
#define NRTEMU_FORK_HOOKS(X) \
    X(runtime)               \
    X(async)                 \
    X(sys_trace)             \
    X(profile)               \
    X(debug_stream)          \
    X(system)                \
    X(tensor)                \
    X(host_memory)           \
    X(hbm)                   \
    X(model)                 \
    X(collective_host)       \
    X(collective)            \
    X(pool)

#define NRTEMU_FORK_HOOK_DECLARE(name) \
    void nrtemu__##name##_atfork(enum nrtemu_fork_phase phase);
NRTEMU_FORK_HOOKS(NRTEMU_FORK_HOOK_DECLARE)
#undef NRTEMU_FORK_HOOK_DECLARE

#endif /* NRTEMU_FORK_H */
