/*
 * kernel_binary16.h - binary ops of float16 and bfloat16 arrays converting
 * in registers (kernel_binary16.c) (internal).
 */
#ifndef NRTEMU_KERNEL_BINARY16_H
#define NRTEMU_KERNEL_BINARY16_H

#include <stdbool.h>

#include "kernels/kernel.h"

/*
 * Run binary `op` (arguments as nrtemu__kernel_elementwise) when it
 * applies: mod, floor_divide, rem or pow of float16 or bfloat16, or add,
 * sub or mul of float16; compute dtype, both operands and out of that
 * dtype and of one shape; a CPU with AVX-512 and a build with CPU
 * dispatch.  `stream`: the results go past the cache (what
 * nrtemu__kernel_elementwise_part was asked).  The out may be an operand
 * itself.  Returns false, having written nothing, when it does not apply:
 * the caller computes.  The results are the driver's, bit for bit.
 * Thread-safe (no state but a CPU probe done once).
 */
bool nrtemu__kernel_binary16_run(enum nrtemu_op op, enum nrtemu_dtype compute,
                                 const struct nrtemu_array *out,
                                 const struct nrtemu_array *in, int n_in,
                                 bool stream);

#endif /* NRTEMU_KERNEL_BINARY16_H */
