/*
 * cpu.h - which of the kernels' hand-written vector paths the CPU runs
 * (internal).
 *
 * The kernels have two kinds of vector code: loops that the compiler
 * clones for each level (NRTEMU_MULTIVERSION, simd.h), which the dynamic
 * loader picks, and paths written with intrinsics for one level, which
 * the kernels pick at run time by asking here.  So this is the one place
 * that says what a level needs, and the one place where a level can be
 * capped: NRTPY_EMU_CPU=baseline, x86-64-v3 or x86-64-v4 makes the
 * kernels take the hand-written paths of that level at most (the loader's
 * clones stay the CPU's), so that the paths of a lower level run, and are
 * tested, on a bigger CPU.  Results stay within the bounds that
 * docs/neff-emulator-format.md gives at every level (most paths are the
 * same bit for bit; the float32 series with and without FMA are not).
 */
#ifndef NRTEMU_CPU_H
#define NRTEMU_CPU_H

#include <stdbool.h>

enum nrtemu_cpu_level {
    NRTEMU_CPU_BASELINE, /* what the library is built for */
    NRTEMU_CPU_V3,       /* x86-64-v3: AVX2, FMA, F16C, BMI2 */
    NRTEMU_CPU_V4,       /* x86-64-v4: AVX-512 F, BW, CD, DQ, VL */
    NRTEMU_CPU_V4_VBMI,  /* x86-64-v4 and AVX-512 VBMI */
};

/*
 * The level of the hand-written paths: the highest the CPU has, capped by
 * NRTPY_EMU_CPU (read once, at the first call; a value that is none of
 * the three is reported on stderr once and caps nothing).  Always
 * NRTEMU_CPU_BASELINE without the clones (simd.h).  Thread-safe.
 */
enum nrtemu_cpu_level nrtemu__cpu_level(void);

/* Whether the hand-written paths of `level` run here.  Thread-safe. */
static inline bool
nrtemu__cpu_has(enum nrtemu_cpu_level level)
{
    return nrtemu__cpu_level() >= level;
}

#endif /* NRTEMU_CPU_H */
