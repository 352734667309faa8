/*
 * kernel_split.h - cutting the work of an op over one out shape into
 * pieces for the worker pool (internal, shared by the program runner and
 * the layout kernels).
 *
 * The out's dimensions up to `dim` are seen as one run of `rows` rows
 * (each row: all of the dimensions after `dim`).  Piece t of n takes
 * rows [rows * t / n, rows * (t + 1) / n), which is a short sequence of
 * boxes: one index of each dimension before `dim`, a range of dimension
 * `dim`, all of the dimensions after it.  A box of an array broadcast to
 * the out shape is a dense array itself (ksplit_view), so a kernel runs
 * on each box as it would on the whole, and pieces write disjoint parts
 * of the out.
 */
#ifndef NRTEMU_KERNEL_SPLIT_H
#define NRTEMU_KERNEL_SPLIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernel.h"

struct ksplit {
    uint32_t ndim;
    uint64_t shape[NRTEMU_MAX_DIMS];
    uint32_t dim;  /* the dimension whose ranges the boxes take */
    uint64_t rows; /* the product of the dimensions up to dim */
};

struct kbox {
    uint64_t lead[NRTEMU_MAX_DIMS]; /* indices of the dimensions before dim */
    uint64_t start, len;            /* the range of dimension dim */
};

/*
 * Plan for `shape` (ndim >= 1): the first dimension at which there are
 * at least `want` rows, else the last one (as many rows as elements).
 */
static inline void
ksplit_plan(struct ksplit *s, uint32_t ndim, const uint64_t *shape,
            uint64_t want)
{
    s->ndim = ndim;
    s->rows = 1;
    s->dim = 0;
    for (uint32_t d = 0; d < ndim; d++) {
        s->shape[d] = shape[d];
    }
    for (uint32_t d = 0; d < ndim; d++) {
        s->rows *= shape[d];
        s->dim = d;
        if (s->rows >= want) {
            break;
        }
    }
}

/*
 * Where piece t of n starts.  When the boxes are runs of the last
 * dimension, a start is moved off one element from either end of a run:
 * a box of one element would reach the kernel as a scalar, which some
 * loops take another path for (pow's exponent), and a piece must compute
 * what one call over the whole would.
 */
static inline uint64_t
ksplit_start(const struct ksplit *s, uint32_t t, uint32_t n)
{
    uint64_t r = s->rows / n * t + s->rows % n * t / n;
    uint64_t ext = s->shape[s->dim];

    if (s->dim + 1 == s->ndim && ext >= 2 && t > 0 && t < n) {
        r -= r % ext == 1 ? 1 : 0;
        r += r % ext == ext - 1 ? 1 : 0;
    }
    return r;
}

/* The rows of piece t of n: [*first, *end), maybe empty. */
static inline void
ksplit_piece(const struct ksplit *s, uint32_t t, uint32_t n, uint64_t *first,
             uint64_t *end)
{
    *first = ksplit_start(s, t, n);
    *end = ksplit_start(s, t + 1, n);
}

/* The next box of rows [*row, end): false when there is none; *row
 * moves past it. */
static inline bool
ksplit_box(const struct ksplit *s, uint64_t *row, uint64_t end, struct kbox *b)
{
    uint64_t ext = s->shape[s->dim], l;

    if (*row >= end) {
        return false;
    }
    l = *row / ext;
    b->start = *row % ext;
    b->len = ext - b->start < end - *row ? ext - b->start : end - *row;
    for (uint32_t e = s->dim; e-- > 0;) {
        b->lead[e] = l % s->shape[e];
        l /= s->shape[e];
    }
    *row += b->len;
    return true;
}

/*
 * Box `b` of a C-ordered array of `ndim` dimensions `shape`, broadcast
 * (right-aligned) to the split shape: its dimensions from `dim` on (*vndim
 * of them, in vshape), and the offset of its first element, in elements.
 */
static inline uint64_t
ksplit_view(const struct ksplit *s, const struct kbox *b, uint32_t ndim,
            const uint64_t *shape, uint32_t *vndim, uint64_t *vshape)
{
    uint32_t lag = s->ndim - ndim; /* split dims the array lacks, first */
    uint64_t stride = 1, off = 0;

    for (uint32_t e = s->ndim; e-- > lag;) {
        uint64_t n = shape[e - lag];
        if (n != 1 && e < s->dim) {
            off += b->lead[e] * stride;
        } else if (n != 1 && e == s->dim) {
            off += b->start * stride;
        }
        stride *= n;
    }
    *vndim = 0;
    for (uint32_t e = s->dim > lag ? s->dim : lag; e < s->ndim; e++) {
        uint64_t n = shape[e - lag];
        vshape[(*vndim)++] = e == s->dim && n != 1 ? b->len : n;
    }
    return off;
}

#endif /* NRTEMU_KERNEL_SPLIT_H */
