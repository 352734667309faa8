/*
 * cpu.c - the level of the kernels' hand-written vector paths (cpu.h).
 */
#include "kernels/cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/simd.h"

/* The names of NRTPY_EMU_CPU's values, by level. */
static const char *const level_names[] = {
    [NRTEMU_CPU_BASELINE] = "baseline",
    [NRTEMU_CPU_V3] = "x86-64-v3",
    [NRTEMU_CPU_V4] = "x86-64-v4",
};

static enum nrtemu_cpu_level
level_of_cpu(void)
{
#if NRTEMU_X86_CLONES
    __builtin_cpu_init();
    if (__builtin_cpu_supports("x86-64-v4")) {
        return __builtin_cpu_supports("avx512vbmi") ? NRTEMU_CPU_V4_VBMI
                                                    : NRTEMU_CPU_V4;
    }
    /* F16C is no part of x86-64-v3's definition, but every CPU of the
     * level has it, and its paths use it */
    if (__builtin_cpu_supports("x86-64-v3") &&
        __builtin_cpu_supports("f16c")) {
        return NRTEMU_CPU_V3;
    }
#endif
    return NRTEMU_CPU_BASELINE;
}

static enum nrtemu_cpu_level
level_find(void)
{
    enum nrtemu_cpu_level level = level_of_cpu();
    const char *cap = getenv("NRTPY_EMU_CPU");

    if (cap == NULL || cap[0] == '\0') {
        return level;
    }
    for (size_t i = 0; i < sizeof level_names / sizeof level_names[0]; i++) {
        if (strcmp(cap, level_names[i]) == 0) {
            return level < (enum nrtemu_cpu_level)i ? level
                                                    : (enum nrtemu_cpu_level)i;
        }
    }
    fprintf(stderr,
            "nrtpy emulator: ignoring NRTPY_EMU_CPU='%.32s': expected "
            "baseline, x86-64-v3 or x86-64-v4\n",
            cap);
    return level;
}

enum nrtemu_cpu_level
nrtemu__cpu_level(void)
{
    /* 0: not found yet, else the level + 1 (racy but idempotent: every
     * thread finds the same; the stderr line may come twice) */
    static int known;
    int k = __atomic_load_n(&known, __ATOMIC_ACQUIRE);

    if (k == 0) {
        k = (int)level_find() + 1;
        __atomic_store_n(&known, k, __ATOMIC_RELEASE);
    }
    return (enum nrtemu_cpu_level)(k - 1);
}
