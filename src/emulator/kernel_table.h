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

#endif /* NRTEMU_KERNEL_TABLE_H */
