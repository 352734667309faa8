/*
 * kernel_layout.h - what the layout ops' files share (internal to
 * kernel_layout.c, the gathers, copies and fills, and kernel_transpose.c,
 * the 2-D transposes that a gather hands its transposed planes to).
 */
#ifndef NRTEMU_KERNEL_LAYOUT_H
#define NRTEMU_KERNEL_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernel.h"

/* The pool's pieces for a layout op whose out has `bytes`: 1 to stay on
 * the caller (kernel_layout.c). */
uint32_t nrtemu__layout_tasks(size_t bytes);

/* dst[r][c] = src[c][r] for r < R, c < C, items of `size` bytes, rows drs
 * and srs bytes apart, in tiles that stay in cache (kernel_transpose.c). */
void nrtemu__transpose_2d(char *dst, ptrdiff_t drs, const char *src,
                          ptrdiff_t srs, uint64_t R, uint64_t C, size_t size);

/* out = in transposed (perm 1, 0) by bands of 64-byte squares where that
 * applies (large, aligned outs of 1-, 2- or 4-byte items, AVX-512 BW);
 * false, nothing written, otherwise (kernel_transpose.c). */
bool nrtemu__transpose_bands(const struct nrtemu_array *out,
                             const struct nrtemu_array *in,
                             const uint32_t *perm);

#endif /* NRTEMU_KERNEL_LAYOUT_H */
