/*
 * kernel_where.h - where(c, x, y) of 2-, 4- and 8-byte elements as a
 * select of codes (kernel_where.c) (internal).
 */
#ifndef NRTEMU_KERNEL_WHERE_H
#define NRTEMU_KERNEL_WHERE_H

#include <stdbool.h>

#include "kernels/kernel.h"

/*
 * Run where (arguments as nrtemu__kernel_elementwise) when it applies: a
 * bool condition, x, y and the out of one dtype that is also the compute
 * dtype, all of the out's shape (no broadcast), and either 2-byte items
 * (float16, bfloat16, int16, uint16) whose round trip through the kernel
 * dtype is one of the rules kernel_where.c knows, or, when `stream` and
 * the CPU has AVX-512 BW and VL, 4- or 8-byte items.  `stream`: the
 * results go past the cache (what nrtemu__kernel_elementwise_part was
 * asked).  The out may be x or y itself.  Returns false, having written
 * nothing, when it does not apply: the caller computes.  The results are
 * the driver's, bit for bit.  Thread-safe (no state but a probe of the
 * conversions done once).
 */
bool nrtemu__kernel_where_run(enum nrtemu_op op, enum nrtemu_dtype compute,
                              const struct nrtemu_array *out,
                              const struct nrtemu_array *in, int n_in,
                              bool stream);

#endif /* NRTEMU_KERNEL_WHERE_H */
