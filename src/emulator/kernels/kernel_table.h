/*
 * kernel_table.h - elementwise ops on 1-byte operands (kernel_table.c) and
 * unary ops on 2-byte float operands (kernel_table16.c) as table lookups,
 * and the rounding ops of 2-byte floats on their bits (kernel_round16.c)
 * (internal).
 */
#ifndef NRTEMU_KERNEL_TABLE_H
#define NRTEMU_KERNEL_TABLE_H

#include <stdbool.h>

#include "kernels/kernel.h"

/*
 * Run unary `op` (arguments as nrtemu__kernel_elementwise) on a bfloat16
 * or float16 operand of the out's shape, with a 2-byte result and enough
 * elements, by lookup in a table of its 65536 results (kernel_table16.c).
 * `stream`: the results go past the cache (what
 * nrtemu__kernel_elementwise_part was asked).  The operand may be the out
 * itself.  Returns false, having written nothing, when it does not apply
 * (or a table cannot be had): the caller computes.  The results are the
 * kernel's, bit for bit.  Thread-safe: the tables are built under a lock,
 * then only read.
 */
bool nrtemu__kernel_table16_run(enum nrtemu_op op, enum nrtemu_dtype compute,
                                const struct nrtemu_array *out,
                                const struct nrtemu_array *in, int n_in,
                                struct nrtemu_scratch *s, bool stream);

/*
 * Whether unary `op` of compute dtype `dt` (float16 or bfloat16) on
 * operands and outs of `dt` is computed in registers rather than looked
 * up by nrtemu__kernel_table16_run: the cheap ops, on CPUs with AVX-512
 * (kernel_table16.c).  For tests.  Thread-safe.
 */
bool nrtemu__kernel_table16_computed(enum nrtemu_op op, enum nrtemu_dtype dt);

/*
 * Run floor, ceil, round_even or round_away (arguments as
 * nrtemu__kernel_elementwise) on the bits when it applies: compute dtype,
 * operand and out all float16 or all bfloat16, of one shape; `stream` as
 * nrtemu__kernel_table16_run.  The operand may be the out itself.
 * Returns false, having written nothing, when it does not apply.  The
 * results are the kernel's, bit for bit, with no table
 * (kernel_round16.c).  Thread-safe (no state).
 */
bool nrtemu__kernel_round16_run(enum nrtemu_op op, enum nrtemu_dtype compute,
                                const struct nrtemu_array *out,
                                const struct nrtemu_array *in, int n_in,
                                bool stream);

/*
 * Run elementwise `op` (arguments as nrtemu__kernel_elementwise) by table
 * lookup when it applies: one or two operands of the out's shape, every
 * element 1 byte, enough elements.  Returns false, having written
 * nothing, when it does not (or a table cannot be had): the caller
 * computes.  The results are the kernel's, bit for bit.  Thread-safe: the
 * process's tables are built under a lock, then only read.
 */
bool nrtemu__kernel_table_run(enum nrtemu_op op, enum nrtemu_dtype compute,
                              const struct nrtemu_array *out,
                              const struct nrtemu_array *in, int n_in,
                              struct nrtemu_scratch *s);

/*
 * Whether the binary `op` of two operands of the 1-byte dtype `dt` (and
 * an out of `dt`) is computed rather than looked up in its table: fp8
 * arithmetic with AVX-512 VBMI, when it gives the table's results for
 * every pair (kernel_table.c).  Builds the table if need be; for tests.
 * Thread-safe.
 */
bool nrtemu__kernel_table_computed(enum nrtemu_op op,
                                   enum nrtemu_dtype compute,
                                   enum nrtemu_dtype dt);

#endif /* NRTEMU_KERNEL_TABLE_H */
