/*
 * simd.h - how the emulator's hot loops get vector instructions (internal).
 *
 * The library is built for the baseline x86-64 (or whatever the target
 * is), so that it loads on every machine.  Hot loops are compiled twice
 * with NRTEMU_MULTIVERSION: for x86-64-v4 (AVX-512: its masks and
 * ternary logic halve the instructions of the branch-free math of
 * kernel_math.h), x86-64-v3 (AVX2, FMA, F16C) and the baseline; the
 * dynamic loader picks the clone that the CPU runs (GNU ifunc).
 * Elsewhere the attribute is empty.
 *
 * NRTEMU_NO_CPU_DISPATCH (meson -Dcpu_dispatch=false) builds the baseline
 * only, with no ifunc and no run-time CPU check: the ifunc resolvers run
 * while the dynamic loader relocates the library, before
 * ThreadSanitizer's runtime is initialised, and crash it at start-up.
 */
#ifndef NRTEMU_SIMD_H
#define NRTEMU_SIMD_H

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && \
    !defined(__clang__) && __GNUC__ >= 12 && !defined(NRTEMU_NO_CPU_DISPATCH)
#define NRTEMU_X86_CLONES 1
#define NRTEMU_MULTIVERSION \
    __attribute__((         \
        target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define NRTEMU_X86_CLONES 0
#define NRTEMU_MULTIVERSION
#endif

/*
 * For the helpers that a multiversioned loop calls: inlined into each
 * clone, so that they are compiled for its target; a helper left out of
 * line is compiled once, for the baseline, and runs there in every clone.
 */
#if defined(__GNUC__)
#define NRTEMU_INLINE static inline __attribute__((always_inline))
#else
#define NRTEMU_INLINE static inline
#endif

#endif /* NRTEMU_SIMD_H */
