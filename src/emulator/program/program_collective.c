/*
 * program_collective.c - the collective ops of emulator programs: their
 * attributes checked at load, the program bound to a world of ranks, and
 * each op handed to its rank's communicator to run (collective.h).
 *
 * An op's replica groups and pairs are checked at load on their own (ranks
 * in range, none twice, groups of one size where the op needs it, the
 * group size the shapes imply); against the world once the rank is known
 * (nrtemu__program_bind_rank: every rank in one group, none past the
 * world).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective/collective.h"
#include "program/program_internal.h"
#include "util/error.h"

static const struct nrtemu_json *
attr(const struct op_ctx *ctx, enum nrtemu_attr a)
{
    const struct nrtemu_json *v;

    if ((nrtemu__op_defs[ctx->op->op].attrs & (1u << a)) == 0) {
        return NULL;
    }
    v = nrtemu__json_get(ctx->json, nrtemu__attr_key(a));
    return v != NULL && v->type != NRTEMU_JSON_NULL ? v : NULL;
}

/* A required axis of `ndim` dimensions (negative counts from the end). */
static NRT_STATUS
axis_attr(const struct op_ctx *ctx, enum nrtemu_attr a, uint32_t ndim,
          uint32_t *out)
{
    const struct nrtemu_json *v = attr(ctx, a);
    const char *key = nrtemu__attr_key(a);
    int64_t x;

    if (v == NULL || v->type != NRTEMU_JSON_NUMBER || !v->u.number.is_int) {
        return nrtemu__op_invalid(ctx, "\"%s\" must be an integer", key);
    }
    x = v->u.number.ivalue;
    if (x < -(int64_t)ndim || x >= (int64_t)ndim) {
        return nrtemu__op_invalid(ctx,
                                  "\"%s\" %lld is out of range for %u "
                                  "dimension%s",
                                  key, (long long)x, ndim,
                                  ndim == 1 ? "" : "s");
    }
    *out = (uint32_t)(x < 0 ? x + (int64_t)ndim : x);
    return NRT_SUCCESS;
}

static bool
is_rank(const struct nrtemu_json *v)
{
    return v->type == NRTEMU_JSON_NUMBER && v->u.number.is_int &&
           v->u.number.ivalue >= 0 && v->u.number.ivalue < NRTEMU_MAX_RANKS;
}

/* Sizes of the replica groups and pairs, for the one allocation. */
static NRT_STATUS
count_lists(const struct op_ctx *ctx, const struct nrtemu_json *groups,
            const struct nrtemu_json *pairs, size_t *n_ranks)
{
    *n_ranks = 0;
    if (groups != NULL) {
        if (groups->type != NRTEMU_JSON_ARRAY || groups->u.array.count == 0) {
            return nrtemu__op_invalid(ctx, "\"replica_groups\" must be a "
                                           "non-empty list of lists of "
                                           "ranks, or null");
        }
        for (size_t i = 0; i < groups->u.array.count; i++) {
            const struct nrtemu_json *grp = groups->u.array.items[i];
            if (grp->type != NRTEMU_JSON_ARRAY || grp->u.array.count == 0) {
                return nrtemu__op_invalid(ctx,
                                          "replica_groups[%zu] must be a "
                                          "non-empty list of ranks",
                                          i);
            }
            *n_ranks += grp->u.array.count;
        }
        if (*n_ranks > NRTEMU_MAX_RANKS) {
            return nrtemu__op_invalid(ctx,
                                      "\"replica_groups\" name %zu ranks, "
                                      "over the %u of a world",
                                      *n_ranks, NRTEMU_MAX_RANKS);
        }
    }
    if (pairs != NULL) {
        if (pairs->type != NRTEMU_JSON_ARRAY ||
            pairs->u.array.count > NRTEMU_MAX_RANKS) {
            return nrtemu__op_invalid(ctx, "\"pairs\" must be a list of "
                                           "[source, target] ranks");
        }
    }
    return NRT_SUCCESS;
}

static NRT_STATUS
read_groups(const struct op_ctx *ctx, const struct nrtemu_json *groups,
            struct nrtemu_coll_attrs *a, unsigned char *seen)
{
    uint32_t n = 0;

    a->n_groups = (uint32_t)groups->u.array.count;
    for (uint32_t i = 0; i < a->n_groups; i++) {
        const struct nrtemu_json *grp = groups->u.array.items[i];
        a->group_start[i] = n;
        for (size_t k = 0; k < grp->u.array.count; k++) {
            const struct nrtemu_json *v = grp->u.array.items[k];
            uint32_t rank;
            if (!is_rank(v)) {
                return nrtemu__op_invalid(ctx,
                                          "replica_groups[%u][%zu] must be a "
                                          "rank from 0 to %u",
                                          i, k, NRTEMU_MAX_RANKS - 1);
            }
            rank = (uint32_t)v->u.number.ivalue;
            if (seen[rank]) {
                return nrtemu__op_invalid(ctx,
                                          "rank %u is in \"replica_groups\" "
                                          "twice",
                                          rank);
            }
            seen[rank] = 1;
            a->ranks[n++] = rank;
            a->rank_bound =
                rank + 1 > a->rank_bound ? rank + 1 : a->rank_bound;
        }
    }
    a->group_start[a->n_groups] = n;
    return NRT_SUCCESS;
}

static NRT_STATUS
read_pairs(const struct op_ctx *ctx, const struct nrtemu_json *pairs,
           struct nrtemu_coll_attrs *a, unsigned char *seen)
{
    a->n_pairs = (uint32_t)pairs->u.array.count;
    for (uint32_t i = 0; i < a->n_pairs; i++) {
        const struct nrtemu_json *p = pairs->u.array.items[i];
        if (p->type != NRTEMU_JSON_ARRAY || p->u.array.count != 2 ||
            !is_rank(p->u.array.items[0]) || !is_rank(p->u.array.items[1])) {
            return nrtemu__op_invalid(ctx,
                                      "pairs[%u] must be [source, target], "
                                      "ranks from 0 to %u",
                                      i, NRTEMU_MAX_RANKS - 1);
        }
        for (int k = 0; k < 2; k++) {
            uint32_t rank = (uint32_t)p->u.array.items[k]->u.number.ivalue;
            /* seen: bit 1 a source, bit 2 a target */
            if (seen[rank] & (1u << k)) {
                return nrtemu__op_invalid(ctx,
                                          "rank %u is the %s of two pairs",
                                          rank, k == 0 ? "source" : "target");
            }
            seen[rank] |= (unsigned char)(1u << k);
            a->pairs[2 * i + (uint32_t)k] = rank;
            a->rank_bound =
                rank + 1 > a->rank_bound ? rank + 1 : a->rank_bound;
        }
    }
    return NRT_SUCCESS;
}

static const char *const reduce_names[] = {
    [NRTEMU_REDUCE_SUM] = "sum",
    [NRTEMU_REDUCE_PROD] = "prod",
    [NRTEMU_REDUCE_MAX] = "max",
    [NRTEMU_REDUCE_MIN] = "min",
};

static NRT_STATUS
read_reduce(const struct op_ctx *ctx, struct nrtemu_coll_attrs *a)
{
    const struct nrtemu_json *v = attr(ctx, NRTEMU_ATTR_REDUCE);

    a->reduce = NRTEMU_REDUCE_SUM;
    if (v == NULL) {
        return NRT_SUCCESS;
    }
    for (size_t i = 0; v->type == NRTEMU_JSON_STRING &&
                       i < sizeof reduce_names / sizeof reduce_names[0];
         i++) {
        if (strcmp(v->u.string.chars, reduce_names[i]) == 0) {
            a->reduce = (enum nrtemu_reduce)i;
            return NRT_SUCCESS;
        }
    }
    return nrtemu__op_invalid(ctx, "\"reduce\" must be \"sum\", \"prod\", "
                                   "\"max\" or \"min\"");
}

/* The group size of every group, 0 when the groups differ or are absent. */
static uint32_t
even_group_size(const struct nrtemu_coll_attrs *a)
{
    uint32_t size;

    if (a->n_groups == 0) {
        return 0;
    }
    size = a->group_start[1] - a->group_start[0];
    for (uint32_t i = 1; i < a->n_groups; i++) {
        if (a->group_start[i + 1] - a->group_start[i] != size) {
            return 0;
        }
    }
    return size;
}

/* out = in but for `axis`, where out = in * mul / div. */
static bool
shape_scaled(const struct buffer *in, const struct buffer *out, uint32_t axis,
             uint64_t *factor, bool gather)
{
    if (in->ndim != out->ndim) {
        return false;
    }
    for (uint32_t d = 0; d < in->ndim; d++) {
        if (d != axis && in->shape[d] != out->shape[d]) {
            return false;
        }
    }
    if (gather) {
        if (in->shape[axis] == 0 || out->shape[axis] % in->shape[axis]) {
            return false;
        }
        *factor = out->shape[axis] / in->shape[axis];
    } else {
        if (out->shape[axis] == 0 || in->shape[axis] % out->shape[axis]) {
            return false;
        }
        *factor = in->shape[axis] / out->shape[axis];
    }
    return *factor >= 1 && *factor <= NRTEMU_MAX_RANKS;
}

/* The group size the shapes imply, into a->shape_group. */
static NRT_STATUS
check_shapes(const struct op_ctx *ctx, struct op *op,
             struct nrtemu_coll_attrs *a)
{
    const struct buffer *in = &ctx->program->buffers[op->in[0]];
    const struct buffer *out = &ctx->program->buffers[op->out];
    uint64_t g = 0, g2 = 0;
    bool ok = true;
    NRT_STATUS st = NRT_SUCCESS;

    switch (op->op) {
    case NRTEMU_OP_ALL_GATHER:
    case NRTEMU_OP_REDUCE_SCATTER:
        if (in->ndim == 0) {
            return nrtemu__op_invalid(ctx,
                                      "in[0] '%s' is a scalar: %s "
                                      "needs an axis",
                                      in->name, nrtemu__op_name(op->op));
        }
        st = axis_attr(ctx, NRTEMU_ATTR_AXIS, in->ndim, &op->axis);
        ok = st == NRT_SUCCESS && shape_scaled(in, out, op->axis, &g,
                                               op->op == NRTEMU_OP_ALL_GATHER);
        break;
    case NRTEMU_OP_ALL_TO_ALL:
        if (in->ndim == 0) {
            return nrtemu__op_invalid(ctx,
                                      "in[0] '%s' is a scalar: "
                                      "all_to_all needs axes",
                                      in->name);
        }
        st = axis_attr(ctx, NRTEMU_ATTR_SPLIT_AXIS, in->ndim, &a->split_axis);
        if (st == NRT_SUCCESS) {
            st = axis_attr(ctx, NRTEMU_ATTR_CONCAT_AXIS, in->ndim,
                           &a->concat_axis);
        }
        if (st == NRT_SUCCESS && a->split_axis == a->concat_axis) {
            ok = in->ndim == out->ndim &&
                 memcmp(in->shape, out->shape,
                        in->ndim * sizeof in->shape[0]) == 0;
        } else if (st == NRT_SUCCESS) {
            /* concat grows by g what split shrinks by g */
            struct buffer mid = *in;
            mid.shape[a->split_axis] = out->shape[a->split_axis];
            ok = shape_scaled(in, &mid, a->split_axis, &g2, false) &&
                 shape_scaled(&mid, out, a->concat_axis, &g, true) && g == g2;
        }
        break;
    default:
        ok =
            in->ndim == out->ndim &&
            memcmp(in->shape, out->shape, in->ndim * sizeof in->shape[0]) == 0;
        break;
    }
    if (st != NRT_SUCCESS) {
        return st;
    }
    if (!ok) {
        return nrtemu__op_invalid(ctx,
                                  "the shapes of in[0] '%s' and out '%s' do "
                                  "not fit %s",
                                  in->name, out->name,
                                  nrtemu__op_name(op->op));
    }
    a->shape_group = (uint32_t)g;
    return NRT_SUCCESS;
}

NRT_STATUS
nrtemu__op_check_collective(const struct op_ctx *ctx, struct op *op)
{
    const struct buffer *in = &ctx->program->buffers[op->in[0]];
    const struct buffer *out = &ctx->program->buffers[op->out];
    const struct nrtemu_json *groups = attr(ctx, NRTEMU_ATTR_REPLICA_GROUPS);
    const struct nrtemu_json *pairs = attr(ctx, NRTEMU_ATTR_PAIRS);
    struct nrtemu_coll_attrs *a;
    unsigned char *seen;
    size_t n_ranks, n_pairs, n_groups;
    uint32_t even;
    NRT_STATUS st;

    if (in->dtype != out->dtype) {
        return nrtemu__op_invalid(ctx,
                                  "out '%s' is %s but in[0] '%s' is %s: the "
                                  "op does not convert",
                                  out->name, nrtemu__dtype_name(out->dtype),
                                  in->name, nrtemu__dtype_name(in->dtype));
    }
    op->compute = out->dtype;
    if (op->op == NRTEMU_OP_COLLECTIVE_PERMUTE && pairs == NULL) {
        return nrtemu__op_invalid(ctx, "\"pairs\" must be a list of "
                                       "[source, target] ranks");
    }
    st = count_lists(ctx, groups, pairs, &n_ranks);
    if (st != NRT_SUCCESS) {
        return st;
    }
    n_groups = groups != NULL ? groups->u.array.count : 0;
    n_pairs = pairs != NULL ? pairs->u.array.count : 0;
    a = calloc(1, sizeof *a + (n_groups + 1 + n_ranks + 2 * n_pairs) *
                                  sizeof(uint32_t));
    seen = calloc(NRTEMU_MAX_RANKS, 1);
    if (a == NULL || seen == NULL) {
        free(a);
        free(seen);
        return nrtemu__fail(NRT_RESOURCE, ctx->func, "out of host memory");
    }
    op->coll = a; /* freed with the op, also on failure */
    a->group_start = (uint32_t *)(a + 1);
    a->ranks = a->group_start + n_groups + 1;
    a->pairs = a->ranks + n_ranks;
    st = read_reduce(ctx, a);
    if (st == NRT_SUCCESS && groups != NULL) {
        st = read_groups(ctx, groups, a, seen);
    }
    if (st == NRT_SUCCESS && pairs != NULL) {
        st = read_pairs(ctx, pairs, a, seen);
    }
    free(seen);
    if (st == NRT_SUCCESS) {
        st = check_shapes(ctx, op, a);
    }
    if (st != NRT_SUCCESS) {
        return st;
    }
    even = even_group_size(a);
    if (op->op != NRTEMU_OP_ALL_REDUCE && a->n_groups > 0 && even == 0) {
        return nrtemu__op_invalid(ctx,
                                  "the replica groups of %s must all "
                                  "have the same size",
                                  nrtemu__op_name(op->op));
    }
    if (a->shape_group != 0 && even != 0 && a->shape_group != even) {
        return nrtemu__op_invalid(ctx,
                                  "the shapes imply groups of %u ranks, but "
                                  "the replica groups have %u",
                                  a->shape_group, even);
    }
    return NRT_SUCCESS;
}

/* Check the collectives of `list` and of the lists nested in its control
 * ops against a world of `world` ranks. */
static NRT_STATUS
bind_list(const char *func, const struct nrtemu_program *p,
          const struct op_list *list, uint32_t world)
{
    for (size_t i = 0; i < list->count; i++) {
        const struct op *op = &list->ops[i];
        const struct nrtemu_coll_attrs *a = op->coll;
        const char *name = nrtemu__op_name(op->op);
        uint32_t g;

        for (size_t k = 0; k < op->n_lists; k++) {
            NRT_STATUS st = bind_list(func, p, &op->lists[k], world);
            if (st != NRT_SUCCESS) {
                return st;
            }
        }
        if (a == NULL) {
            continue;
        }
        if (a->rank_bound > world) {
            return nrtemu__reject(NRT_INVALID, func,
                                  "%s: op %zu (%s) names rank %u, but the "
                                  "world has %u rank%s",
                                  p->path, op->index, name, a->rank_bound - 1,
                                  world, world == 1 ? "" : "s");
        }
        if (a->n_groups != 0 && a->group_start[a->n_groups] != world) {
            return nrtemu__reject(NRT_INVALID, func,
                                  "%s: op %zu (%s): the replica groups hold "
                                  "%u of the world's %u ranks; each rank "
                                  "must be in one",
                                  p->path, op->index, name,
                                  a->group_start[a->n_groups], world);
        }
        g = a->n_groups != 0 ? even_group_size(a) : world;
        if (a->shape_group != 0 && a->shape_group != g) {
            return nrtemu__reject(NRT_INVALID, func,
                                  "%s: op %zu (%s): the shapes imply groups "
                                  "of %u ranks, but the group%s %u",
                                  p->path, op->index, name, a->shape_group,
                                  a->n_groups != 0 ? "s have"
                                                   : " of the "
                                                     "world has",
                                  g);
        }
        if (op->op == NRTEMU_OP_ALL_TO_ALL && a->shape_group == 0 &&
            p->buffers[op->in[0]].shape[a->split_axis] % g != 0) {
            return nrtemu__reject(
                NRT_INVALID, func,
                "%s: op %zu (all_to_all): split axis of "
                "size %llu does not split in %u",
                p->path, op->index,
                (unsigned long long)p->buffers[op->in[0]].shape[a->split_axis],
                g);
        }
    }
    return NRT_SUCCESS;
}

NRT_STATUS
nrtemu__program_bind_rank(const char *func, struct nrtemu_program *p,
                          struct nrtemu_rank *r, uint32_t world)
{
    NRT_STATUS st = bind_list(func, p, &p->ops, world);

    if (st == NRT_SUCCESS) {
        p->rank = r;
    }
    return st;
}

NRT_STATUS
nrtemu__op_run_collective(const struct op_call *c)
{
    const struct op *op = c->op;
    char what[96];
    struct nrtemu_coll_call call = {
        .func = c->func,
        .rank = c->program->rank,
        .op = op->op,
        .attrs = op->coll,
        .axis = op->axis,
        .in = &c->in[0],
        .out = c->out,
        .scratch = &c->program->scratch,
        .deadline_ns = c->deadline_ns,
        .index = op->index,
        .what = what,
    };

    snprintf(what, sizeof what, "%s: op %zu (%s)", c->program->path, op->index,
             nrtemu__op_name(op->op));
    return nrtemu__coll_run(&call);
}
