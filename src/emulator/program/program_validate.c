/*
 * program_validate.c - the shape, dtype and attribute rules of each op
 * (docs/neff-emulator-format.md §3, "Operations").
 *
 * NumPy's rules, checked against the shapes the program declares: the
 * kernels then trust them.  Each failure names the op, the operand or
 * attribute, and the shapes involved.  The check column of NRTEMU_OP_LIST
 * names the validator of each op, nrtemu__op_check_<check>.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/convert.h"
#include "util/error.h"
#include "program/program_internal.h"

static const struct buffer *
in_buf(const struct op_ctx *ctx, size_t k)
{
    return &ctx->program->buffers[ctx->op->in[k]];
}

static const struct buffer *
out_buf(const struct op_ctx *ctx)
{
    return &ctx->program->buffers[ctx->op->out];
}

/* Shape text of a buffer, e.g. "[2,3]", into a caller buffer. */
static const char *
shape_text(const uint64_t *shape, uint32_t ndim, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "[");

    for (uint32_t d = 0; d < ndim && n < len; d++) {
        n += (size_t)snprintf(buf + n, len - n, "%s%llu", d ? "," : "",
                              (unsigned long long)shape[d]);
    }
    if (n < len) {
        snprintf(buf + n, len - n, "]");
    }
    return buf;
}

static bool
same_shape(const uint64_t *a, uint32_t an, const uint64_t *b, uint32_t bn)
{
    if (an != bn) {
        return false;
    }
    for (uint32_t d = 0; d < an; d++) {
        if (a[d] != b[d]) {
            return false;
        }
    }
    return true;
}

/* NumPy broadcasting of `in` to exactly `out`. */
static bool
broadcasts_to(const struct buffer *in, const struct buffer *out)
{
    if (in->ndim > out->ndim) {
        return false;
    }
    for (uint32_t d = 0; d < in->ndim; d++) {
        uint64_t i = in->shape[in->ndim - 1 - d];
        uint64_t o = out->shape[out->ndim - 1 - d];
        if (i != o && i != 1) {
            return false;
        }
    }
    return true;
}

static NRT_STATUS
check_out_shape(const struct op_ctx *ctx, const uint64_t *want, uint32_t ndim)
{
    const struct buffer *out = out_buf(ctx);
    char a[160], b[160];

    if (same_shape(out->shape, out->ndim, want, ndim)) {
        return NRT_SUCCESS;
    }
    return nrtemu__op_invalid(ctx, "out '%s' has shape %s; the result has %s",
                              out->name,
                              shape_text(out->shape, out->ndim, a, sizeof a),
                              shape_text(want, ndim, b, sizeof b));
}

static NRT_STATUS
check_same_dtype(const struct op_ctx *ctx, size_t k)
{
    const struct buffer *in = in_buf(ctx, k), *out = out_buf(ctx);

    if (in->dtype == out->dtype) {
        return NRT_SUCCESS;
    }
    return nrtemu__op_invalid(ctx,
                              "out '%s' is %s but in[%zu] '%s' is %s: the op "
                              "does not convert",
                              out->name, nrtemu__dtype_name(out->dtype), k,
                              in->name, nrtemu__dtype_name(in->dtype));
}

static NRT_STATUS
check_out_dtype(const struct op_ctx *ctx, enum nrtemu_dtype want)
{
    const struct buffer *out = out_buf(ctx);

    if (out->dtype == want) {
        return NRT_SUCCESS;
    }
    return nrtemu__op_invalid(ctx, "out '%s' is %s; the result is %s",
                              out->name, nrtemu__dtype_name(out->dtype),
                              nrtemu__dtype_name(want));
}

/*
 * The value of attribute `attr` of the op, NULL when absent; also NULL
 * when the op's row does not list the attribute, so an op reads only
 * what its row says it takes.
 */
static const struct nrtemu_json *
get_attr(const struct op_ctx *ctx, enum nrtemu_attr attr)
{
    if ((nrtemu__op_defs[ctx->op->op].attrs & (1u << attr)) == 0) {
        return NULL;
    }
    return nrtemu__json_get(ctx->json, nrtemu__attr_key(attr));
}

/*
 * An axis attribute for `ndim` dimensions; NumPy's negative axes count
 * from the end.  `*present` tells whether it was given (and not null);
 * without it the value is left alone.
 */
static NRT_STATUS
get_axis(const struct op_ctx *ctx, enum nrtemu_attr attr, uint32_t ndim,
         uint32_t *axis, bool *present)
{
    const struct nrtemu_json *v = get_attr(ctx, attr);
    const char *key = nrtemu__attr_key(attr);
    int64_t a;

    *present = v != NULL && v->type != NRTEMU_JSON_NULL;
    if (!*present) {
        return NRT_SUCCESS;
    }
    if (v->type != NRTEMU_JSON_NUMBER || !v->u.number.is_int) {
        return nrtemu__op_invalid(ctx, "\"%s\" must be an integer", key);
    }
    a = v->u.number.ivalue;
    if (a < -(int64_t)ndim || a >= (int64_t)ndim) {
        return nrtemu__op_invalid(ctx,
                                  "\"%s\" %lld is out of range for %u "
                                  "dimension%s",
                                  key, (long long)a, ndim,
                                  ndim == 1 ? "" : "s");
    }
    *axis = (uint32_t)(a < 0 ? a + (int64_t)ndim : a);
    return NRT_SUCCESS;
}

/* A list attribute of exactly `n` integers (`*present` false when
 * absent or null). */
static NRT_STATUS
get_int_list(const struct op_ctx *ctx, enum nrtemu_attr attr, uint32_t n,
             int64_t *out, bool *present)
{
    const struct nrtemu_json *v = get_attr(ctx, attr);
    const char *key = nrtemu__attr_key(attr);

    *present = v != NULL && v->type != NRTEMU_JSON_NULL;
    if (!*present) {
        return NRT_SUCCESS;
    }
    if (v->type != NRTEMU_JSON_ARRAY || v->u.array.count != n) {
        return nrtemu__op_invalid(ctx, "\"%s\" must be a list of %u integer%s",
                                  key, n, n == 1 ? "" : "s");
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct nrtemu_json *e = v->u.array.items[i];
        if (e->type != NRTEMU_JSON_NUMBER || !e->u.number.is_int) {
            return nrtemu__op_invalid(ctx,
                                      "\"%s\" must be a list of %u integer%s",
                                      key, n, n == 1 ? "" : "s");
        }
        out[i] = e->u.number.ivalue;
    }
    return NRT_SUCCESS;
}

static NRT_STATUS
get_keepdims(const struct op_ctx *ctx, bool *keepdims)
{
    const struct nrtemu_json *v = get_attr(ctx, NRTEMU_ATTR_KEEPDIMS);

    *keepdims = false;
    if (v == NULL || v->type == NRTEMU_JSON_NULL) {
        return NRT_SUCCESS;
    }
    if (v->type != NRTEMU_JSON_BOOL) {
        return nrtemu__op_invalid(ctx, "\"keepdims\" must be true or false");
    }
    *keepdims = v->u.boolean;
    return NRT_SUCCESS;
}

/* NumPy's promotion of two operand types, for comparisons without a
 * "dtype" (the compiler normally gives one). */
static enum nrtemu_dtype
promote(enum nrtemu_dtype a, enum nrtemu_dtype b)
{
    bool af = nrtemu__dtype_is_float(a), bf = nrtemu__dtype_is_float(b);
    size_t as = nrtemu__dtype_size(a), bs = nrtemu__dtype_size(b);

    if (a == b || b == NRTEMU_DTYPE_BOOL) {
        return a;
    }
    if (a == NRTEMU_DTYPE_BOOL) {
        return b;
    }
    if (af && bf) {
        if (a == NRTEMU_DTYPE_FLOAT64 || b == NRTEMU_DTYPE_FLOAT64) {
            return NRTEMU_DTYPE_FLOAT64;
        }
        return NRTEMU_DTYPE_FLOAT32; /* different floats of <= 32 bits */
    }
    if (af || bf) {
        enum nrtemu_dtype f = af ? a : b;
        size_t fs = af ? as : bs, is = af ? bs : as;
        if (fs > is) {
            return f;
        }
        return is >= 4 ? NRTEMU_DTYPE_FLOAT64 : NRTEMU_DTYPE_FLOAT32;
    }
    if (nrtemu__dtype_is_signed_int(a) == nrtemu__dtype_is_signed_int(b)) {
        return as >= bs ? a : b;
    }
    {
        enum nrtemu_dtype s = nrtemu__dtype_is_signed_int(a) ? a : b;
        size_t ss = nrtemu__dtype_size(s), us = s == a ? bs : as;
        if (ss > us) {
            return s;
        }
        switch (us) {
        case 1:
            return NRTEMU_DTYPE_INT16;
        case 2:
            return NRTEMU_DTYPE_INT32;
        case 4:
            return NRTEMU_DTYPE_INT64;
        default:
            return NRTEMU_DTYPE_FLOAT64;
        }
    }
}

/* The operands broadcast to the out shape. */
static NRT_STATUS
check_broadcast(const struct op_ctx *ctx, const struct op *op)
{
    const struct buffer *out = out_buf(ctx);
    char a[160], b[160];

    for (size_t k = 0; k < op->n_in; k++) {
        const struct buffer *in = in_buf(ctx, k);
        if (!broadcasts_to(in, out)) {
            return nrtemu__op_invalid(
                ctx,
                "in[%zu] '%s' of shape %s does not broadcast to out '%s' "
                "of shape %s",
                k, in->name, shape_text(in->shape, in->ndim, a, sizeof a),
                out->name, shape_text(out->shape, out->ndim, b, sizeof b));
        }
    }
    return NRT_SUCCESS;
}

/* Unary, binary, where: computed in the op's "dtype", else the out's. */
NRT_STATUS
nrtemu__op_check_arith(const struct op_ctx *ctx, struct op *op)
{
    if (op->compute == NRTEMU_DTYPE_UNKNOWN) {
        op->compute = out_buf(ctx)->dtype;
    }
    return check_broadcast(ctx, op);
}

/* Comparisons: bool out, computed in the common operand type. */
NRT_STATUS
nrtemu__op_check_compare(const struct op_ctx *ctx, struct op *op)
{
    NRT_STATUS st = check_broadcast(ctx, op);

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (op->compute == NRTEMU_DTYPE_UNKNOWN) {
        op->compute = promote(in_buf(ctx, 0)->dtype, in_buf(ctx, 1)->dtype);
    }
    return check_out_dtype(ctx, NRTEMU_DTYPE_BOOL);
}

NRT_STATUS
nrtemu__op_check_logical(const struct op_ctx *ctx, struct op *op)
{
    NRT_STATUS st = check_broadcast(ctx, op);

    if (st != NRT_SUCCESS) {
        return st;
    }
    op->compute = NRTEMU_DTYPE_BOOL;
    return check_out_dtype(ctx, NRTEMU_DTYPE_BOOL);
}

NRT_STATUS
nrtemu__op_check_cast(const struct op_ctx *ctx, struct op *op)
{
    op->compute = out_buf(ctx)->dtype;
    return check_broadcast(ctx, op);
}

/* copy and broadcast_to: same dtype, the operand broadcasts. */
NRT_STATUS
nrtemu__op_check_copy(const struct op_ctx *ctx, struct op *op)
{
    NRT_STATUS st = check_broadcast(ctx, op);

    op->compute = out_buf(ctx)->dtype;
    return st != NRT_SUCCESS ? st : check_same_dtype(ctx, 0);
}

NRT_STATUS
nrtemu__op_check_matmul(const struct op_ctx *ctx, struct op *op)
{
    const struct buffer *a = in_buf(ctx, 0), *b = in_buf(ctx, 1);
    uint64_t want[NRTEMU_MAX_DIMS + 2] = {0};
    uint32_t an, bn, nb, n = 0;
    uint64_t ka, kb;
    char s1[160], s2[160];

    if (a->ndim == 0 || b->ndim == 0) {
        return nrtemu__op_invalid(ctx,
                                  "in[%d] '%s' is a scalar: matmul needs "
                                  "at least one dimension",
                                  a->ndim == 0 ? 0 : 1,
                                  a->ndim == 0 ? a->name : b->name);
    }
    ka = a->shape[a->ndim - 1];
    kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
    if (ka != kb) {
        return nrtemu__op_invalid(
            ctx,
            "in[0] '%s' %s and in[1] '%s' %s: the contracted "
            "dimensions %llu and %llu differ",
            a->name, shape_text(a->shape, a->ndim, s1, sizeof s1), b->name,
            shape_text(b->shape, b->ndim, s2, sizeof s2),
            (unsigned long long)ka, (unsigned long long)kb);
    }
    an = a->ndim >= 2 ? a->ndim - 2 : 0;
    bn = b->ndim >= 2 ? b->ndim - 2 : 0;
    nb = an > bn ? an : bn;
    for (uint32_t d = 0; d < nb; d++) {
        uint64_t x = d + an >= nb ? a->shape[d + an - nb] : 1;
        uint64_t y = d + bn >= nb ? b->shape[d + bn - nb] : 1;
        if (x != y && x != 1 && y != 1) {
            return nrtemu__op_invalid(
                ctx,
                "the batch dimensions of in[0] '%s' %s and in[1] '%s' %s "
                "do not broadcast",
                a->name, shape_text(a->shape, a->ndim, s1, sizeof s1), b->name,
                shape_text(b->shape, b->ndim, s2, sizeof s2));
        }
        want[n++] = x == 1 ? y : x;
    }
    if (a->ndim >= 2) {
        want[n++] = a->shape[a->ndim - 2];
    }
    if (b->ndim >= 2) {
        want[n++] = b->shape[b->ndim - 1];
    }
    if (n > NRTEMU_MAX_DIMS) {
        return nrtemu__op_invalid(ctx, "the result has more than 8 "
                                       "dimensions");
    }
    if (op->compute == NRTEMU_DTYPE_UNKNOWN) {
        op->compute = out_buf(ctx)->dtype;
    }
    return check_out_shape(ctx, want, n);
}

NRT_STATUS
nrtemu__op_check_reduce(const struct op_ctx *ctx, struct op *op)
{
    const struct buffer *in = in_buf(ctx, 0);
    const struct nrtemu_json *axes = get_attr(ctx, NRTEMU_ATTR_AXES);
    uint64_t want[NRTEMU_MAX_DIMS] = {0}, reduced = 1;
    uint32_t n = 0;
    bool keepdims;
    NRT_STATUS st;

    st = get_keepdims(ctx, &keepdims);
    if (st != NRT_SUCCESS) {
        return st;
    }
    if (axes == NULL || axes->type == NRTEMU_JSON_NULL) {
        op->axes = in->ndim == 0 ? 0 : (uint32_t)((1ull << in->ndim) - 1);
    } else if (axes->type != NRTEMU_JSON_ARRAY ||
               axes->u.array.count > in->ndim) {
        return nrtemu__op_invalid(ctx,
                                  "\"axes\" must be a list of at most "
                                  "%u distinct axes",
                                  in->ndim);
    } else {
        op->axes = 0;
        for (size_t i = 0; i < axes->u.array.count; i++) {
            const struct nrtemu_json *e = axes->u.array.items[i];
            int64_t a;
            if (e->type != NRTEMU_JSON_NUMBER || !e->u.number.is_int) {
                return nrtemu__op_invalid(ctx, "\"axes\" must be a list of "
                                               "integers");
            }
            a = e->u.number.ivalue;
            if (a < -(int64_t)in->ndim || a >= (int64_t)in->ndim) {
                return nrtemu__op_invalid(ctx,
                                          "axes[%zu] = %lld is out of range "
                                          "for %u dimension%s",
                                          i, (long long)a, in->ndim,
                                          in->ndim == 1 ? "" : "s");
            }
            a = a < 0 ? a + (int64_t)in->ndim : a;
            if (op->axes & (1u << a)) {
                return nrtemu__op_invalid(ctx,
                                          "axis %lld is repeated in "
                                          "\"axes\"",
                                          (long long)a);
            }
            op->axes |= 1u << a;
        }
    }
    for (uint32_t d = 0; d < in->ndim; d++) {
        if (op->axes & (1u << d)) {
            reduced *= in->shape[d];
            if (keepdims) {
                want[n++] = 1;
            }
        } else {
            want[n++] = in->shape[d];
        }
    }
    st = check_out_shape(ctx, want, n);
    if (st != NRT_SUCCESS) {
        return st;
    }
    if ((op->op == NRTEMU_OP_MAX || op->op == NRTEMU_OP_MIN) && reduced == 0 &&
        out_buf(ctx)->count != 0) {
        return nrtemu__op_invalid(ctx,
                                  "reduces a zero-size axis, and %s has "
                                  "no identity",
                                  nrtemu__op_name(op->op));
    }
    if (op->compute == NRTEMU_DTYPE_UNKNOWN) {
        op->compute = out_buf(ctx)->dtype;
    }
    return NRT_SUCCESS;
}

NRT_STATUS
nrtemu__op_check_argreduce(const struct op_ctx *ctx, struct op *op)
{
    const struct buffer *in = in_buf(ctx, 0);
    uint64_t want[NRTEMU_MAX_DIMS] = {0}, len;
    uint32_t n = 0;
    bool keepdims, present;
    NRT_STATUS st;

    st = get_keepdims(ctx, &keepdims);
    if (st == NRT_SUCCESS) {
        st = get_axis(ctx, NRTEMU_ATTR_AXIS, in->ndim, &op->axis, &present);
    }
    if (st != NRT_SUCCESS) {
        return st;
    }
    op->flatten = !present;
    if (op->flatten) {
        op->axis = 0;
        len = in->count;
        for (uint32_t d = 0; keepdims && d < in->ndim; d++) {
            want[n++] = 1;
        }
    } else {
        len = in->shape[op->axis];
        for (uint32_t d = 0; d < in->ndim; d++) {
            if (d != op->axis) {
                want[n++] = in->shape[d];
            } else if (keepdims) {
                want[n++] = 1;
            }
        }
    }
    st = check_out_shape(ctx, want, n);
    if (st == NRT_SUCCESS) {
        st = check_out_dtype(ctx, NRTEMU_DTYPE_INT64);
    }
    if (st == NRT_SUCCESS && len == 0 && out_buf(ctx)->count != 0) {
        return nrtemu__op_invalid(ctx,
                                  "the axis has zero size: %s of an "
                                  "empty sequence",
                                  nrtemu__op_name(op->op));
    }
    return st;
}

NRT_STATUS
nrtemu__op_check_softmax(const struct op_ctx *ctx, struct op *op)
{
    const struct buffer *in = in_buf(ctx, 0);
    bool present;
    NRT_STATUS st;

    if (in->ndim == 0) {
        return nrtemu__op_invalid(ctx,
                                  "in[0] '%s' is a scalar: softmax needs "
                                  "an axis",
                                  in->name);
    }
    op->axis = in->ndim - 1;
    st = get_axis(ctx, NRTEMU_ATTR_AXIS, in->ndim, &op->axis, &present);
    if (st != NRT_SUCCESS) {
        return st;
    }
    st = check_out_shape(ctx, in->shape, in->ndim);
    if (st != NRT_SUCCESS) {
        return st;
    }
    if (op->compute == NRTEMU_DTYPE_UNKNOWN) {
        op->compute = out_buf(ctx)->dtype;
    }
    return NRT_SUCCESS;
}

NRT_STATUS
nrtemu__op_check_transpose(const struct op_ctx *ctx, struct op *op)
{
    const struct buffer *in = in_buf(ctx, 0);
    int64_t perm[NRTEMU_MAX_DIMS];
    uint64_t want[NRTEMU_MAX_DIMS] = {0};
    uint32_t seen = 0;
    bool present;
    NRT_STATUS st;

    st = get_int_list(ctx, NRTEMU_ATTR_PERM, in->ndim, perm, &present);
    if (st != NRT_SUCCESS) {
        return st;
    }
    for (uint32_t d = 0; d < in->ndim; d++) {
        int64_t a = present ? perm[d] : (int64_t)(in->ndim - 1 - d);
        if (a < -(int64_t)in->ndim || a >= (int64_t)in->ndim) {
            return nrtemu__op_invalid(ctx,
                                      "perm[%u] = %lld is out of range "
                                      "for %u dimensions",
                                      d, (long long)a, in->ndim);
        }
        a = a < 0 ? a + (int64_t)in->ndim : a;
        if (seen & (1u << a)) {
            return nrtemu__op_invalid(ctx,
                                      "\"perm\" is not a permutation: "
                                      "axis %lld is repeated",
                                      (long long)a);
        }
        seen |= 1u << a;
        op->perm[d] = (uint32_t)a;
        want[d] = in->shape[a];
    }
    st = check_same_dtype(ctx, 0);
    return st != NRT_SUCCESS ? st : check_out_shape(ctx, want, in->ndim);
}

NRT_STATUS
nrtemu__op_check_reshape(const struct op_ctx *ctx, struct op *op)
{
    const struct buffer *in = in_buf(ctx, 0), *out = out_buf(ctx);

    (void)op;

    if (in->count != out->count) {
        return nrtemu__op_invalid(
            ctx,
            "in[0] '%s' has %llu elements and out '%s' %llu: a reshape "
            "keeps the count",
            in->name, (unsigned long long)in->count, out->name,
            (unsigned long long)out->count);
    }
    return check_same_dtype(ctx, 0);
}

NRT_STATUS
nrtemu__op_check_concatenate(const struct op_ctx *ctx, struct op *op)
{
    const struct buffer *out = out_buf(ctx);
    uint64_t total = 0;
    bool present, overflow = false;
    NRT_STATUS st;
    char s1[160], s2[160];

    if (out->ndim == 0) {
        return nrtemu__op_invalid(ctx,
                                  "out '%s' is a scalar: concatenate "
                                  "needs an axis",
                                  out->name);
    }
    op->axis = 0;
    st = get_axis(ctx, NRTEMU_ATTR_AXIS, out->ndim, &op->axis, &present);
    if (st != NRT_SUCCESS) {
        return st;
    }
    for (size_t k = 0; k < op->n_in; k++) {
        const struct buffer *in = in_buf(ctx, k);
        bool fits = in->ndim == out->ndim;
        for (uint32_t d = 0; fits && d < out->ndim; d++) {
            fits = d == op->axis || in->shape[d] == out->shape[d];
        }
        if (!fits) {
            return nrtemu__op_invalid(
                ctx,
                "in[%zu] '%s' of shape %s does not fit out '%s' of "
                "shape %s along axis %u",
                k, in->name, shape_text(in->shape, in->ndim, s1, sizeof s1),
                out->name, shape_text(out->shape, out->ndim, s2, sizeof s2),
                op->axis);
        }
        st = check_same_dtype(ctx, k);
        if (st != NRT_SUCCESS) {
            return st;
        }
        /* Many operands could wrap the sum around to the out size. */
        if (__builtin_add_overflow(total, in->shape[op->axis], &total)) {
            overflow = true;
            total = UINT64_MAX;
        }
    }
    if (overflow || total != out->shape[op->axis]) {
        return nrtemu__op_invalid(
            ctx,
            "the operands have %s%llu elements along "
            "axis %u, out '%s' has %llu",
            overflow ? "more than " : "", (unsigned long long)total, op->axis,
            out->name, (unsigned long long)out->shape[op->axis]);
    }
    return NRT_SUCCESS;
}

/*
 * The start and step attributes of a box of `count` elements per
 * dimension in `in` (a slice's operand, an update_slice's out): read into
 * op->start and op->step (default 0 and 1), and checked to stay in `in`.
 */
static NRT_STATUS
check_box(const struct op_ctx *ctx, struct op *op, const struct buffer *in,
          const uint64_t *counts, const char *in_what)
{
    bool present;
    NRT_STATUS st;

    st = get_int_list(ctx, NRTEMU_ATTR_START, in->ndim, op->start, &present);
    if (st == NRT_SUCCESS && !present) {
        memset(op->start, 0, sizeof op->start);
    }
    if (st == NRT_SUCCESS) {
        st = get_int_list(ctx, NRTEMU_ATTR_STEP, in->ndim, op->step, &present);
    }
    if (st != NRT_SUCCESS) {
        return st;
    }
    for (uint32_t d = 0; d < in->ndim; d++) {
        int64_t n = (int64_t)in->shape[d], count = (int64_t)counts[d];
        int64_t start = op->start[d];
        if (!present) {
            op->step[d] = 1;
        }
        if (op->step[d] == 0) {
            return nrtemu__op_invalid(ctx, "step[%u] is 0", d);
        }
        /* A start that is never read, or a step that is never taken,
         * can be anything: make them harmless for the kernel, which
         * multiplies them by the strides of in. */
        if (count <= 1) {
            op->step[d] = 1;
        }
        if (count == 0) {
            op->start[d] = 0;
            continue;
        }
        if (start < 0 || start >= n) {
            return nrtemu__op_invalid(ctx,
                                      "start[%u] = %lld is out of range [0, "
                                      "%lld) of %s '%s'",
                                      d, (long long)start, (long long)n,
                                      in_what, in->name);
        }
        /* The last index read, without overflow: |step| * (count - 1) is
         * compared with the room left first (|step| unsigned: the step
         * may be INT64_MIN). */
        if ((uint64_t)(count - 1) >
            (op->step[d] > 0
                 ? (uint64_t)(n - 1 - start) / (uint64_t)op->step[d]
                 : (uint64_t)start / (0u - (uint64_t)op->step[d]))) {
            return nrtemu__op_invalid(ctx,
                                      "dimension %u: %lld elements from %lld "
                                      "in steps of %lld run past the %lld of "
                                      "%s '%s'",
                                      d, (long long)count, (long long)start,
                                      (long long)op->step[d], (long long)n,
                                      in_what, in->name);
        }
    }
    return NRT_SUCCESS;
}

NRT_STATUS
nrtemu__op_check_slice(const struct op_ctx *ctx, struct op *op)
{
    const struct buffer *in = in_buf(ctx, 0), *out = out_buf(ctx);
    NRT_STATUS st;

    if (in->ndim != out->ndim) {
        return nrtemu__op_invalid(ctx,
                                  "out '%s' has %u dimensions and in[0] "
                                  "'%s' %u: a slice keeps them",
                                  out->name, out->ndim, in->name, in->ndim);
    }
    st = check_same_dtype(ctx, 0);
    return st != NRT_SUCCESS ? st
                             : check_box(ctx, op, in, out->shape, "in[0]");
}

NRT_STATUS
nrtemu__op_check_update_slice(const struct op_ctx *ctx, struct op *op)
{
    const struct buffer *operand = in_buf(ctx, 0), *upd = in_buf(ctx, 1);
    const struct buffer *out = out_buf(ctx);
    NRT_STATUS st;

    if (upd->ndim != operand->ndim) {
        return nrtemu__op_invalid(ctx,
                                  "in[1] '%s' has %u dimensions and in[0] "
                                  "'%s' %u: an update keeps them",
                                  upd->name, upd->ndim, operand->name,
                                  operand->ndim);
    }
    st = check_same_dtype(ctx, 0);
    if (st == NRT_SUCCESS) {
        st = check_same_dtype(ctx, 1);
    }
    if (st == NRT_SUCCESS) {
        st = check_out_shape(ctx, operand->shape, operand->ndim);
    }
    return st != NRT_SUCCESS ? st : check_box(ctx, op, out, upd->shape, "out");
}

/* The bounds rules by name, from their list. */
static const char *const bounds_names[NRTEMU_BOUNDS_COUNT] = {
#define BOUNDS_NAME(suffix, name) [NRTEMU_BOUNDS_##suffix] = name,
    NRTEMU_BOUNDS_LIST(BOUNDS_NAME)
#undef BOUNDS_NAME
};

/*
 * What dynamic_slice and dynamic_update_slice share: "bounds" (required:
 * a window out of range is clamped or fails, and neither is a default a
 * producer should get unasked); in[k] the starts, a 1-D integer tensor
 * of one start per dimension of `in_what` `arr`; a window of `sizes` that
 * fits `arr` (`sizes_what` names it).
 */
static NRT_STATUS
check_window(const struct op_ctx *ctx, struct op *op, size_t k,
             const struct buffer *arr, const char *in_what,
             const uint64_t *sizes, uint32_t ndim, const char *sizes_what)
{
    const struct nrtemu_json *v = get_attr(ctx, NRTEMU_ATTR_BOUNDS);
    const struct buffer *starts = in_buf(ctx, k);
    char a[160], b[160];

    if (v == NULL || v->type != NRTEMU_JSON_STRING) {
        return nrtemu__op_invalid(ctx, "\"bounds\" must be \"clamp\" or "
                                       "\"check\"");
    }
    op->bounds = NRTEMU_BOUNDS_COUNT;
    for (int m = 0; m < NRTEMU_BOUNDS_COUNT; m++) {
        if (strcmp(v->u.string.chars, bounds_names[m]) == 0) {
            op->bounds = (enum nrtemu_bounds)m;
        }
    }
    if (op->bounds == NRTEMU_BOUNDS_COUNT) {
        return nrtemu__op_invalid(ctx,
                                  "\"bounds\" \"%.40s\" is not \"clamp\" or "
                                  "\"check\"",
                                  v->u.string.chars);
    }
    if (ndim != arr->ndim) {
        return nrtemu__op_invalid(ctx,
                                  "%s has %u dimensions and %s '%s' %u: a "
                                  "window keeps them",
                                  sizes_what, ndim, in_what, arr->name,
                                  arr->ndim);
    }
    for (uint32_t d = 0; d < ndim; d++) {
        if (sizes[d] > arr->shape[d]) {
            return nrtemu__op_invalid(
                ctx, "%s, shape %s, does not fit in %s '%s', shape %s",
                sizes_what, shape_text(sizes, ndim, a, sizeof a), in_what,
                arr->name, shape_text(arr->shape, arr->ndim, b, sizeof b));
        }
    }
    if (!nrtemu__dtype_is_signed_int(starts->dtype) &&
        !nrtemu__dtype_is_unsigned_int(starts->dtype)) {
        return nrtemu__op_invalid(ctx,
                                  "in[%zu] '%s' holds %s: starts must be "
                                  "integers",
                                  k, starts->name,
                                  nrtemu__dtype_name(starts->dtype));
    }
    if (starts->ndim != 1 || starts->shape[0] != arr->ndim) {
        return nrtemu__op_invalid(
            ctx,
            "in[%zu] '%s' has shape %s: the starts are one per dimension of "
            "%s '%s', shape [%u]",
            k, starts->name,
            shape_text(starts->shape, starts->ndim, a, sizeof a), in_what,
            arr->name, arr->ndim);
    }
    return NRT_SUCCESS;
}

/* dynamic_slice: in[0] the operand, in[1] the starts; out the window (the
 * operand's dtype, its shape the window's sizes). */
NRT_STATUS
nrtemu__op_check_dynamic_slice(const struct op_ctx *ctx, struct op *op)
{
    const struct buffer *in = in_buf(ctx, 0), *out = out_buf(ctx);
    char what[200];
    NRT_STATUS st = check_same_dtype(ctx, 0);

    snprintf(what, sizeof what, "out '%s'", out->name);
    return st != NRT_SUCCESS ? st
                             : check_window(ctx, op, 1, in, "in[0]",
                                            out->shape, out->ndim, what);
}

/* dynamic_update_slice: in[0] the operand, in[1] the update, in[2] the
 * starts; out the operand's dtype and shape (it may be in[0] itself). */
NRT_STATUS
nrtemu__op_check_dynamic_update_slice(const struct op_ctx *ctx, struct op *op)
{
    const struct buffer *operand = in_buf(ctx, 0), *upd = in_buf(ctx, 1);
    char what[200];
    NRT_STATUS st = check_same_dtype(ctx, 0);

    if (st == NRT_SUCCESS) {
        st = check_same_dtype(ctx, 1);
    }
    if (st == NRT_SUCCESS) {
        st = check_out_shape(ctx, operand->shape, operand->ndim);
    }
    snprintf(what, sizeof what, "in[1] '%s'", upd->name);
    return st != NRT_SUCCESS ? st
                             : check_window(ctx, op, 2, operand, "in[0]",
                                            upd->shape, upd->ndim, what);
}

NRT_STATUS
nrtemu__op_check_take(const struct op_ctx *ctx, struct op *op)
{
    const struct buffer *data = in_buf(ctx, 0), *idx = in_buf(ctx, 1);
    uint64_t want[2 * NRTEMU_MAX_DIMS] = {0};
    uint32_t n = 0;
    bool present;
    NRT_STATUS st;

    if (!nrtemu__dtype_is_signed_int(idx->dtype) &&
        !nrtemu__dtype_is_unsigned_int(idx->dtype)) {
        return nrtemu__op_invalid(ctx,
                                  "in[1] '%s' holds %s: indices must be "
                                  "integers",
                                  idx->name, nrtemu__dtype_name(idx->dtype));
    }
    st = get_axis(ctx, NRTEMU_ATTR_AXIS, data->ndim, &op->axis, &present);
    if (st != NRT_SUCCESS) {
        return st;
    }
    op->flatten = !present;
    if (op->flatten) {
        op->axis = 0;
    } else {
        for (uint32_t d = 0; d < op->axis; d++) {
            want[n++] = data->shape[d];
        }
    }
    for (uint32_t d = 0; d < idx->ndim; d++) {
        want[n++] = idx->shape[d];
    }
    if (!op->flatten) {
        for (uint32_t d = op->axis + 1; d < data->ndim; d++) {
            want[n++] = data->shape[d];
        }
    }
    if (n > NRTEMU_MAX_DIMS) {
        return nrtemu__op_invalid(ctx, "the result has more than 8 "
                                       "dimensions");
    }
    st = check_same_dtype(ctx, 0);
    return st != NRT_SUCCESS ? st : check_out_shape(ctx, want, n);
}

NRT_STATUS
nrtemu__op_check_full(const struct op_ctx *ctx, struct op *op)
{
    const struct buffer *out = out_buf(ctx);
    const struct nrtemu_json *v = get_attr(ctx, NRTEMU_ATTR_VALUE);
    double d;

    if (v != NULL && v->type == NRTEMU_JSON_NUMBER && v->u.number.is_int) {
        int64_t i = v->u.number.ivalue;
        nrtemu__convert(out->dtype, op->value, NRTEMU_DTYPE_INT64, &i, 1, 1);
        return NRT_SUCCESS;
    }
    if (v != NULL && v->type == NRTEMU_JSON_NUMBER) {
        d = v->u.number.value;
    } else if (v != NULL && v->type == NRTEMU_JSON_STRING &&
               strcmp(v->u.string.chars, "nan") == 0) {
        d = NAN;
    } else if (v != NULL && v->type == NRTEMU_JSON_STRING &&
               strcmp(v->u.string.chars, "inf") == 0) {
        d = INFINITY;
    } else if (v != NULL && v->type == NRTEMU_JSON_STRING &&
               strcmp(v->u.string.chars, "-inf") == 0) {
        d = -INFINITY;
    } else {
        return nrtemu__op_invalid(ctx, "\"value\" must be a number, \"nan\", "
                                       "\"inf\" or \"-inf\"");
    }
    if (!isfinite(d) && !nrtemu__dtype_is_float(out->dtype)) {
        return nrtemu__op_invalid(ctx,
                                  "\"value\" %g does not fit out '%s' of "
                                  "type %s",
                                  d, out->name,
                                  nrtemu__dtype_name(out->dtype));
    }
    nrtemu__convert(out->dtype, op->value, NRTEMU_DTYPE_FLOAT64, &d, 1, 1);
    return NRT_SUCCESS;
}

/* iota: the index along "axis" (0, the only one of a scalar out). */
NRT_STATUS
nrtemu__op_check_iota(const struct op_ctx *ctx, struct op *op)
{
    const struct buffer *out = out_buf(ctx);
    bool present;

    op->axis = 0;
    if (out->ndim == 0) {
        const struct nrtemu_json *v = get_attr(ctx, NRTEMU_ATTR_AXIS);
        if (v != NULL && v->type != NRTEMU_JSON_NULL &&
            !(v->type == NRTEMU_JSON_NUMBER && v->u.number.is_int &&
              v->u.number.ivalue == 0)) {
            return nrtemu__op_invalid(ctx, "\"axis\" must be 0 for a "
                                           "scalar out");
        }
        return NRT_SUCCESS;
    }
    return get_axis(ctx, NRTEMU_ATTR_AXIS, out->ndim, &op->axis, &present);
}

/*
 * A scalar a control op decides on: bool or an integer, shape [].  `what`
 * names it in messages ("pred", "in[0]").
 */
static NRT_STATUS
check_decider(const struct op_ctx *ctx, const char *what,
              const struct buffer *b)
{
    char desc[160];

    nrtemu__describe_buffer(b, desc, sizeof desc);
    if (b->ndim != 0) {
        return nrtemu__op_invalid(ctx,
                                  "%s '%s' is %s: it must be a scalar "
                                  "(shape [])",
                                  what, b->name, desc);
    }
    if (b->dtype != NRTEMU_DTYPE_BOOL &&
        !nrtemu__dtype_is_signed_int(b->dtype) &&
        !nrtemu__dtype_is_unsigned_int(b->dtype)) {
        return nrtemu__op_invalid(ctx,
                                  "%s '%s' is %s: it must be bool or an "
                                  "integer",
                                  what, b->name, desc);
    }
    return NRT_SUCCESS;
}

static NRT_STATUS
lists_alloc(const struct op_ctx *ctx, struct op *op, size_t n)
{
    op->lists = calloc(n ? n : 1, sizeof *op->lists);
    if (op->lists == NULL) {
        return nrtemu__fail(NRT_RESOURCE, ctx->func,
                            "%s: out of host memory for the ops",
                            ctx->program->path);
    }
    op->n_lists = n;
    return NRT_SUCCESS;
}

/*
 * while: "pred" names a scalar that "cond" (run first, every iteration)
 * leaves written; "body" runs while it is true.  What the lists write
 * counts as written after the op (the body may run zero times: the
 * program then reads what the buffer held before, as XLA's loop state).
 */
NRT_STATUS
nrtemu__op_check_while(const struct op_ctx *ctx, struct op *op)
{
    const struct nrtemu_json *jpred = get_attr(ctx, NRTEMU_ATTR_PRED);
    const struct buffer *pred;
    NRT_STATUS st;

    if (jpred == NULL || jpred->type != NRTEMU_JSON_STRING ||
        !nrtemu__program_find_buffer(ctx->program, jpred->u.string.chars,
                                     &op->pred)) {
        return nrtemu__op_invalid(ctx, "\"pred\" must be the name of a "
                                       "buffer");
    }
    pred = &ctx->program->buffers[op->pred];
    st = check_decider(ctx, "pred", pred);
    if (st == NRT_SUCCESS) {
        st = lists_alloc(ctx, op, 2);
    }
    if (st == NRT_SUCCESS) {
        st = nrtemu__program_read_list(ctx, get_attr(ctx, NRTEMU_ATTR_COND),
                                       "cond", &op->lists[0]);
    }
    if (st != NRT_SUCCESS) {
        return st;
    }
    if ((pred->kind == BUFFER_TEMP || pred->kind == BUFFER_OUTPUT) &&
        !ctx->written->is[op->pred]) {
        return nrtemu__op_invalid(ctx,
                                  "pred '%s' is read before any op writes "
                                  "it (cond runs before each test)",
                                  pred->name);
    }
    return nrtemu__program_read_list(ctx, get_attr(ctx, NRTEMU_ATTR_BODY),
                                     "body", &op->lists[1]);
}

/*
 * conditional: in[0] selects one of "branches".  Each branch is read
 * with what is written before the op; after it, what any branch writes
 * counts as written.
 */
NRT_STATUS
nrtemu__op_check_conditional(const struct op_ctx *ctx, struct op *op)
{
    const struct nrtemu_json *jb = get_attr(ctx, NRTEMU_ATTR_BRANCHES);
    const struct buffer *sel = in_buf(ctx, 0);
    struct written_set *w = ctx->written;
    size_t mark = w->len, *set = NULL, n_set = 0, cap = 0, n;
    NRT_STATUS st;

    st = check_decider(ctx, "in[0]", sel);
    if (st != NRT_SUCCESS) {
        return st;
    }
    if (jb == NULL || jb->type != NRTEMU_JSON_ARRAY ||
        jb->u.array.count == 0) {
        return nrtemu__op_invalid(ctx, "\"branches\" must be a list of one "
                                       "or more op lists");
    }
    n = jb->u.array.count;
    if (sel->dtype == NRTEMU_DTYPE_BOOL && n != 2) {
        return nrtemu__op_invalid(ctx,
                                  "in[0] '%s' is bool: it selects one of 2 "
                                  "branches, not %zu",
                                  sel->name, n);
    }
    st = lists_alloc(ctx, op, n);
    for (size_t i = 0; i < n && st == NRT_SUCCESS; i++) {
        char label[40];
        snprintf(label, sizeof label, "branches[%zu]", i);
        st = nrtemu__program_read_list(ctx, jb->u.array.items[i], label,
                                       &op->lists[i]);
        /* Keep what the branch set aside, and unset it for the next. */
        if (st == NRT_SUCCESS && n_set + (w->len - mark) > cap) {
            size_t want = (n_set + (w->len - mark)) * 2;
            size_t *grown = realloc(set, want * sizeof *set);
            if (grown == NULL) {
                st = nrtemu__fail(NRT_RESOURCE, ctx->func,
                                  "%s: out of host memory for the ops",
                                  ctx->program->path);
                break;
            }
            set = grown;
            cap = want;
        }
        for (size_t j = mark; j < w->len; j++) {
            if (st == NRT_SUCCESS) {
                set[n_set++] = w->log[j];
            }
            w->is[w->log[j]] = false;
        }
        w->len = mark;
    }
    for (size_t j = 0; j < n_set && st == NRT_SUCCESS; j++) {
        nrtemu__written_mark(w, set[j]);
    }
    free(set);
    return st;
}

/*
 * bitwise_and/or/xor/not: the compute dtype ("dtype", else the out's) is
 * an integer or bool (on which they are the logical ops).
 */
NRT_STATUS
nrtemu__op_check_bitwise(const struct op_ctx *ctx, struct op *op)
{
    NRT_STATUS st = nrtemu__op_check_arith(ctx, op);

    if (st == NRT_SUCCESS && nrtemu__dtype_is_float(op->compute)) {
        return nrtemu__op_invalid(ctx,
                                  "the compute dtype %s is not an integer "
                                  "or bool type, which %s needs",
                                  nrtemu__dtype_name(op->compute),
                                  nrtemu__op_name(op->op));
    }
    return st;
}

/* Shifts: an integer compute dtype (not bool: a shift has no logical
 * meaning). */
NRT_STATUS
nrtemu__op_check_shift(const struct op_ctx *ctx, struct op *op)
{
    NRT_STATUS st = nrtemu__op_check_arith(ctx, op);

    if (st == NRT_SUCCESS && !nrtemu__dtype_is_signed_int(op->compute) &&
        !nrtemu__dtype_is_unsigned_int(op->compute)) {
        return nrtemu__op_invalid(ctx,
                                  "the compute dtype %s is not an integer "
                                  "type, which %s needs",
                                  nrtemu__dtype_name(op->compute),
                                  nrtemu__op_name(op->op));
    }
    return st;
}

/* is_finite: computed in the operand's type (a float: FLOAT_ONLY), bool
 * out. */
NRT_STATUS
nrtemu__op_check_is_finite(const struct op_ctx *ctx, struct op *op)
{
    NRT_STATUS st = check_broadcast(ctx, op);

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (op->compute == NRTEMU_DTYPE_UNKNOWN) {
        op->compute = in_buf(ctx, 0)->dtype;
    }
    return check_out_dtype(ctx, NRTEMU_DTYPE_BOOL);
}

/* bitcast: the bytes are reinterpreted, so only their count must agree
 * (shapes and dtypes may differ). */
NRT_STATUS
nrtemu__op_check_bitcast(const struct op_ctx *ctx, struct op *op)
{
    const struct buffer *in = in_buf(ctx, 0), *out = out_buf(ctx);

    op->compute = out->dtype;
    if (in->bytes != out->bytes) {
        return nrtemu__op_invalid(
            ctx,
            "in[0] '%s' has %zu bytes and out '%s' %zu: a bitcast keeps "
            "the bytes",
            in->name, in->bytes, out->name, out->bytes);
    }
    return NRT_SUCCESS;
}

/* The scatter modes by name, from their list. */
static const char *const scatter_modes[NRTEMU_SCATTER_MODE_COUNT] = {
#define SCATTER_MODE_NAME(suffix, name) [NRTEMU_SCATTER_##suffix] = name,
    NRTEMU_SCATTER_MODE_LIST(SCATTER_MODE_NAME)
#undef SCATTER_MODE_NAME
};

/*
 * scatter(operand, indices, updates): out like operand; integer indices,
 * as many as updates, which have the out dtype; "mode" names the
 * combination.
 */
NRT_STATUS
nrtemu__op_check_scatter(const struct op_ctx *ctx, struct op *op)
{
    const struct buffer *operand = in_buf(ctx, 0), *idx = in_buf(ctx, 1);
    const struct buffer *upd = in_buf(ctx, 2), *out = out_buf(ctx);
    const struct nrtemu_json *v = get_attr(ctx, NRTEMU_ATTR_MODE);
    NRT_STATUS st;

    op->compute = out->dtype;
    if (v == NULL || v->type != NRTEMU_JSON_STRING) {
        return nrtemu__op_invalid(ctx, "\"mode\" must be one of \"assign\", "
                                       "\"add\", \"mul\", \"max\", \"min\"");
    }
    op->mode = NRTEMU_SCATTER_MODE_COUNT;
    for (int m = 0; m < NRTEMU_SCATTER_MODE_COUNT; m++) {
        if (strcmp(v->u.string.chars, scatter_modes[m]) == 0) {
            op->mode = (enum nrtemu_scatter_mode)m;
        }
    }
    if (op->mode == NRTEMU_SCATTER_MODE_COUNT) {
        return nrtemu__op_invalid(ctx,
                                  "\"mode\" \"%.40s\" is not one of "
                                  "\"assign\", \"add\", \"mul\", \"max\", "
                                  "\"min\"",
                                  v->u.string.chars);
    }
    if (!nrtemu__dtype_is_signed_int(idx->dtype) &&
        !nrtemu__dtype_is_unsigned_int(idx->dtype)) {
        return nrtemu__op_invalid(ctx,
                                  "in[1] '%s' holds %s: indices must be "
                                  "integers",
                                  idx->name, nrtemu__dtype_name(idx->dtype));
    }
    if (idx->count != upd->count) {
        return nrtemu__op_invalid(ctx,
                                  "in[1] '%s' has %llu indices but in[2] '%s' "
                                  "%llu updates",
                                  idx->name, (unsigned long long)idx->count,
                                  upd->name, (unsigned long long)upd->count);
    }
    st = check_same_dtype(ctx, 0);
    if (st == NRT_SUCCESS) {
        st = check_same_dtype(ctx, 2);
    }
    return st != NRT_SUCCESS
               ? st
               : check_out_shape(ctx, operand->shape, operand->ndim);
}

/* argsort: int32 out of the keys' shape; "axis" (default the last),
 * "descending" (default false). */
NRT_STATUS
nrtemu__op_check_argsort(const struct op_ctx *ctx, struct op *op)
{
    const struct buffer *in = in_buf(ctx, 0);
    const struct nrtemu_json *v = get_attr(ctx, NRTEMU_ATTR_DESCENDING);
    bool present;
    NRT_STATUS st;

    op->compute = in->dtype;
    op->axis = in->ndim == 0 ? 0 : in->ndim - 1;
    op->descending = false;
    if (v != NULL && v->type != NRTEMU_JSON_NULL) {
        if (v->type != NRTEMU_JSON_BOOL) {
            return nrtemu__op_invalid(ctx, "\"descending\" must be true or "
                                           "false");
        }
        op->descending = v->u.boolean;
    }
    if (in->ndim == 0) {
        const struct nrtemu_json *a = get_attr(ctx, NRTEMU_ATTR_AXIS);
        if (a != NULL && a->type != NRTEMU_JSON_NULL &&
            !(a->type == NRTEMU_JSON_NUMBER && a->u.number.is_int &&
              (a->u.number.ivalue == 0 || a->u.number.ivalue == -1))) {
            return nrtemu__op_invalid(ctx, "\"axis\" must be 0 or -1 for a "
                                           "scalar");
        }
    } else {
        st = get_axis(ctx, NRTEMU_ATTR_AXIS, in->ndim, &op->axis, &present);
        if (st != NRT_SUCCESS) {
            return st;
        }
        if (in->shape[op->axis] > (uint64_t)INT32_MAX) {
            return nrtemu__op_invalid(ctx,
                                      "axis %u has %llu elements: the int32 "
                                      "permutation holds at most 2^31 - 1",
                                      op->axis,
                                      (unsigned long long)in->shape[op->axis]);
        }
    }
    st = check_out_dtype(ctx, NRTEMU_DTYPE_INT32);
    return st != NRT_SUCCESS ? st : check_out_shape(ctx, in->shape, in->ndim);
}

NRT_STATUS
nrtemu__program_check_op(const struct op_ctx *ctx, struct op *op)
{
    const struct nrtemu_op_def *def = &nrtemu__op_defs[op->op];
    NRT_STATUS st = def->check(ctx, op);

    if (st == NRT_SUCCESS && (def->flags & NRTEMU_OPF_FLOAT_ONLY) != 0 &&
        !nrtemu__dtype_is_float(op->compute)) {
        return nrtemu__op_invalid(ctx,
                                  "the compute dtype %s is not a float type, "
                                  "which %s needs",
                                  nrtemu__dtype_name(op->compute), def->name);
    }
    return st;
}
