/*
 * fork.c - the pthread_atfork() handlers: each phase runs every file's
 * hook, in the order of NRTEMU_FORK_HOOKS (fork.h) before fork() and in
 * reverse order after it, as nested locks are released.
 */
#include <pthread.h>
#include <stddef.h>

#include "util/error.h"
#include "util/fork.h"

typedef void (*fork_hook)(enum nrtemu_fork_phase phase);

static const fork_hook hooks[] = {
#define NRTEMU_FORK_HOOK_ENTRY(name) nrtemu__##name##_atfork,
    NRTEMU_FORK_HOOKS(NRTEMU_FORK_HOOK_ENTRY)
#undef NRTEMU_FORK_HOOK_ENTRY
};

#define HOOK_COUNT (sizeof hooks / sizeof hooks[0])

static void
fork_prepare(void)
{
    for (size_t i = 0; i < HOOK_COUNT; i++) {
        hooks[i](NRTEMU_FORK_PREPARE);
    }
}

static void
fork_parent(void)
{
    for (size_t i = HOOK_COUNT; i-- > 0;) {
        hooks[i](NRTEMU_FORK_PARENT);
    }
}

static void
fork_child(void)
{
    for (size_t i = HOOK_COUNT; i-- > 0;) {
        hooks[i](NRTEMU_FORK_CHILD);
    }
}

static pthread_once_t install_once = PTHREAD_ONCE_INIT;

static void
install(void)
{
    /* Fails only for lack of memory; the runtime still works, but a
     * forked child would inherit it as it is, so say so. */
    if (pthread_atfork(fork_prepare, fork_parent, fork_child) != 0) {
        nrtemu__log(NRTEMU_LOG_WARN, "nrt_init",
                    "cannot register the fork handlers: a forked child "
                    "would share this runtime's state");
    }
}

void
nrtemu__fork_handlers_install(void)
{
    pthread_once(&install_once, install);
}
