/*
 * kernel_table.h - elementwise ops on 1-byte operands as table lookups
 * (internal; kernel_table.c).
 */
#ifndef NRTEMU_KERNEL_TABLE_H
#define NRTEMU_KERNEL_TABLE_H

#include <stdbool.h>

#include "kernel.h"

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
