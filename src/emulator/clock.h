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

#endif /* NRTEMU_CLOCK_H */
