/*
 * kernel_where.c - where(c, x, y) of 2-byte elements as a select of codes.
 *
 * The driver (kernel_elementwise.c) widens each block of x and y to the
 * kernel dtype (float32 for float16 and bfloat16), selects, and narrows
 * the block back: three passes and two conversions for what moves codes.
 * A select only moves codes, so the round trip changes a code only where
 * the conversions do, and they touch NaNs alone (bfloat16's become the
 * quiet NaN of their sign; F16C quiets a signalling float16 NaN, keeping
 * its payload; the other conversions keep every code).  Here one pass
 * selects each code by its condition byte and applies the same rule to
 * NaN codes, which lets GCC vectorise it in each clone (simd.h).  Which
 * rule the driver follows is not assumed: the first call for a dtype runs
 * every one of its 65536 codes through the driver's round trip
 * (nrtemu__convert, to the kernel dtype and back) and keeps the rule that
 * gives the same code for all of them; none such, nothing applies and
 * the driver computes.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "convert.h"
#include "kernel.h"
#include "kernel_stream.h"
#include "kernel_where.h"
#include "simd.h"

/* What the round trip makes of a code v: v itself unless
 * (v & 0x7fff) > above, else (v & keep) | set. */
struct nan_rule {
    uint16_t above, keep, set;
};

/* The rules known, tried in this order. */
static const struct nan_rule nan_rules[] = {
    {0xffff, 0xffff, 0x0000}, /* every code kept (integers, soft float16) */
    {0x7c00, 0xffff, 0x0200}, /* float16 NaN quieted, payload kept (F16C) */
    {0x7f80, 0x8000, 0x7fc0}, /* bfloat16 NaN: the quiet NaN of its sign */
};

static uint16_t
nan_rule_apply(const struct nan_rule *r, uint16_t v)
{
    return (uint16_t)((v & 0x7fff) > r->above ? (v & r->keep) | r->set : v);
}

/* The index of the rule of dtype dt's round trip through its kernel
 * dtype, or -1 for none (or no memory to find out). */
static int
nan_rule_probe(enum nrtemu_dtype dt)
{
    enum nrtemu_dtype kt = nrtemu__kernel_dtype(dt);
    uint16_t *codes = malloc(65536 * sizeof *codes * 2);
    void *wide = malloc(65536 * (size_t)8);
    int found = -1;

    if (codes != NULL && wide != NULL) {
        uint16_t *back = codes + 65536;
        for (uint32_t v = 0; v < 65536; v++) {
            codes[v] = (uint16_t)v;
        }
        nrtemu__convert(kt, wide, dt, codes, 1, 65536);
        nrtemu__convert(dt, back, kt, wide, 1, 65536);
        for (int k = 0;
             k < (int)(sizeof nan_rules / sizeof *nan_rules) && found < 0;
             k++) {
            uint32_t v = 0;
            while (v < 65536 &&
                   back[v] == nan_rule_apply(&nan_rules[k], (uint16_t)v)) {
                v++;
            }
            found = v == 65536 ? k : -1;
        }
    }
    free(codes);
    free(wide);
    return found;
}

/* The 2-byte dtypes that where takes here, one probe result each. */
#define WHERE16_DTYPES(X) \
    X(FLOAT16)            \
    X(BFLOAT16)           \
    X(INT16)              \
    X(UINT16)

/* The rule of dt, probed once (0: not yet, -1: none, k + 1: rule k;
 * racy but idempotent: every thread finds the same), or NULL. */
static const struct nan_rule *
nan_rule_of(enum nrtemu_dtype dt)
{
#define WHERE16_SLOT(D) NRTEMU_DTYPE_##D,
    static const enum nrtemu_dtype dts[] = {WHERE16_DTYPES(WHERE16_SLOT)};
#undef WHERE16_SLOT
    static int known[sizeof dts / sizeof *dts];

    for (size_t i = 0; i < sizeof dts / sizeof *dts; i++) {
        int k;
        if (dts[i] != dt) {
            continue;
        }
        k = __atomic_load_n(&known[i], __ATOMIC_RELAXED);
        if (k == 0) {
            int r = nan_rule_probe(dt);
            k = r >= 0 ? r + 1 : -1;
            __atomic_store_n(&known[i], k, __ATOMIC_RELAXED);
        }
        return k > 0 ? &nan_rules[k - 1] : NULL;
    }
    return NULL;
}

/* o[i] = the round trip's code of (c[i] != 0 ? x[i] : y[i]); o may be x
 * or y itself. */
NRTEMU_MULTIVERSION
static void
where16(size_t n, const uint8_t *c, const uint16_t *x, const uint16_t *y,
        uint16_t *o, uint16_t above, uint16_t keep, uint16_t set)
{
    for (size_t i = 0; i < n; i++) {
        /* (both read: a select of one would be masked loads, slow from
         * memory; kernel_elementwise.c's DEFINE_WHERE) */
        uint16_t a = x[i], b = y[i];
        uint16_t v = c[i] != 0 ? a : b;
        o[i] = (uint16_t)((v & 0x7fff) > above ? (v & keep) | set : v);
    }
}

/* kstream_parts's call of where16. */
struct where16_args {
    const struct nan_rule *r;
    const uint8_t *c;
    const uint16_t *x, *y;
};

static bool
where16_part(const void *ctx, size_t at, size_t count, void *dst)
{
    const struct where16_args *w = ctx;

    where16(count, w->c + at, w->x + at, w->y + at, dst, w->r->above,
            w->r->keep, w->r->set);
    return true;
}

bool
nrtemu__kernel_where_run(enum nrtemu_op op, enum nrtemu_dtype compute,
                         const struct nrtemu_array *out,
                         const struct nrtemu_array *in, int n_in, bool stream)
{
    struct where16_args w;

    if (op != NRTEMU_OP_WHERE || n_in != 3 || out->dtype != compute ||
        nrtemu__dtype_size(compute) != 2 ||
        !nrtemu__arrays_match(out, in, 1, NRTEMU_DTYPE_BOOL) ||
        !nrtemu__arrays_match(out, in + 1, 2, compute)) {
        return false;
    }
    w.r = nan_rule_of(compute);
    if (w.r == NULL) {
        return false;
    }
    w.c = in[0].data;
    w.x = in[1].data;
    w.y = in[2].data;
    return kstream_parts(where16_part, &w, out->data,
                         (size_t)nrtemu__array_count(out), sizeof(uint16_t),
                         stream);
}
