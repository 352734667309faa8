/*
 * clock.h - the emulator's clocks, in nanoseconds (internal).
 *
 * Execution timing, deadlines, profiles and trace timestamps all read
 * these, so every duration the emulator reports comes from one clock.
 */
#ifndef NRTEMU_CLOCK_H
#define NRTEMU_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
nrtemu__clock_ns(clockid_t clock)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Durations and deadlines. */
static inline uint64_t
nrtemu__monotonic_ns(void)
{
    return nrtemu__clock_ns(CLOCK_MONOTONIC);
}

/*
 * Deadlines of executions (NEURON_RT_EXEC_TIMEOUT, whole seconds), checked
 * before each op: CLOCK_MONOTONIC read at its last tick (a few
 * milliseconds behind at most, so a deadline passes that much late), at
 * a fifth of the cost of reading it exactly, which a small model's
 * execution would pay twice or more per call.
 */
static inline uint64_t
nrtemu__deadline_clock_ns(void)
{
#ifdef CLOCK_MONOTONIC_COARSE
    return nrtemu__clock_ns(CLOCK_MONOTONIC_COARSE);
#else
    return nrtemu__monotonic_ns();
#endif
}

#endif /* NRTEMU_CLOCK_H */
