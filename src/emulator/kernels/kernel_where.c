/*
 * kernel_where.c - where(c, x, y) of 2-, 4- and 8-byte elements as a
 * select of codes.
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
 *
 * Results to stream past the cache (kernel_stream.h) go out from the
 * registers with non-temporal stores, with AVX-512 BW and VL
 * (where_stream): for 4- and 8-byte dtypes too, whose round trip through
 * their kernel dtype (the same dtype, or int64 or uint64 for the 4-byte
 * integers) keeps every code, and which the driver otherwise selects into
 * a block in cache that kstream_copy then streams out: streaming from the
 * registers is faster than through a block.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/convert.h"
#include "kernels/kernel.h"
#include "kernels/kernel_stream.h"
#include "kernels/kernel_where.h"
#include "kernels/simd.h"

#if NRTEMU_X86_CLONES
#include <immintrin.h>
#endif

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

#if NRTEMU_X86_CLONES
#define WHERE_STREAM_TARGET \
    __attribute__((target("avx512f,avx512bw,avx512vl")))

/* One 64-byte line of results from the 64 / size condition bytes at c:
 * where(c, x, y) of `size`-byte codes, and for 2-byte ones the NaN rule
 * (above, keep, set of nan_rule_apply, in every word). */
WHERE_STREAM_TARGET static inline __attribute__((always_inline)) __m512i
where_line(size_t size, const uint8_t *c, const char *x, const char *y,
           __m512i above, __m512i keep, __m512i set)
{
    const __m512i a = _mm512_loadu_si512(x), b = _mm512_loadu_si512(y);

    if (size == 2) {
        const __m256i k = _mm256_loadu_si256((const __m256i *)(const void *)c);
        const __m512i v =
            _mm512_mask_blend_epi16(_mm256_test_epi8_mask(k, k), b, a);
        const __mmask32 nan = _mm512_cmpgt_epu16_mask(
            _mm512_and_si512(v, _mm512_set1_epi16(0x7fff)), above);
        /* (v & keep) | set */
        return _mm512_mask_mov_epi16(
            v, nan, _mm512_ternarylogic_epi32(v, keep, set, 0xea));
    }
    if (size == 4) {
        const __m128i k = _mm_loadu_si128((const __m128i *)(const void *)c);
        return _mm512_mask_blend_epi32(_mm_test_epi8_mask(k, k), b, a);
    }
    uint64_t bytes;
    memcpy(&bytes, c, sizeof bytes);
    const __m128i k = _mm_cvtsi64_si128((long long)bytes);
    return _mm512_mask_blend_epi64((__mmask8)_mm_test_epi8_mask(k, k), b, a);
}

/* Items [0, n) of where(c, x, y) without the vector stores (o may be x
 * or y): where16 for 2-byte codes, one at a time otherwise. */
static void
where_items(size_t size, size_t n, const uint8_t *c, const char *x,
            const char *y, char *o, const struct nan_rule *r)
{
    if (size == 2) {
        where16(n, c, (const uint16_t *)(const void *)x,
                (const uint16_t *)(const void *)y, (uint16_t *)(void *)o,
                r->above, r->keep, r->set);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        memmove(o + i * size, (c[i] != 0 ? x : y) + i * size, size);
    }
}

/* where_stream's loop, inlined for each size. */
WHERE_STREAM_TARGET static inline __attribute__((always_inline)) void
where_lines_of(size_t size, size_t n, const uint8_t *c, const char *x,
               const char *y, char *o, const struct nan_rule *r)
{
    const size_t per = 64 / size;
    const __m512i above = _mm512_set1_epi16((short)r->above);
    const __m512i keep = _mm512_set1_epi16((short)r->keep);
    const __m512i set = _mm512_set1_epi16((short)r->set);
    size_t head = (64 - (uintptr_t)o % 64) % 64 / size, i;

    head = head < n ? head : n;
    where_items(size, head, c, x, y, o, r);
    for (i = head; i + per <= n; i += per) {
        _mm512_stream_si512((void *)(o + i * size),
                            where_line(size, c + i, x + i * size, y + i * size,
                                       above, keep, set));
    }
    where_items(size, n - i, c + i, x + i * size, y + i * size, o + i * size,
                r);
    _mm_sfence();
}

WHERE_STREAM_TARGET static void
where_lines(size_t size, size_t n, const uint8_t *c, const char *x,
            const char *y, char *o, const struct nan_rule *r)
{
    switch (size) {
    case 2:
        where_lines_of(2, n, c, x, y, o, r);
        break;
    case 4:
        where_lines_of(4, n, c, x, y, o, r);
        break;
    default:
        where_lines_of(8, n, c, x, y, o, r);
        break;
    }
}
#endif

/*
 * where(c, x, y) of n `size`-byte codes into o with non-temporal stores of
 * its whole 64-byte lines (the items before o's first line and after its
 * last one stored one at a time), for a CPU with AVX-512 BW and VL; false,
 * nothing written, without one or with o not aligned to its items.
 */
static bool
where_stream(size_t size, size_t n, const uint8_t *c, const char *x,
             const char *y, char *o, const struct nan_rule *r)
{
#if NRTEMU_X86_CLONES
    if (!nrtemu__cpu_has(NRTEMU_CPU_V4) || (uintptr_t)o % size != 0) {
        return false;
    }
    where_lines(size, n, c, x, y, o, r);
    return true;
#else
    (void)size, (void)n, (void)c, (void)x, (void)y, (void)o, (void)r;
    return false;
#endif
}

bool
nrtemu__kernel_where_run(enum nrtemu_op op, enum nrtemu_dtype compute,
                         const struct nrtemu_array *out,
                         const struct nrtemu_array *in, int n_in, bool stream)
{
    const size_t size = nrtemu__dtype_size(compute);
    const struct nan_rule *r = &nan_rules[0]; /* every code kept */
    struct where16_args w;
    size_t n;

    if (op != NRTEMU_OP_WHERE || n_in != 3 || out->dtype != compute ||
        (size != 2 && size != 4 && size != 8) ||
        !nrtemu__arrays_match(out, in, 1, NRTEMU_DTYPE_BOOL) ||
        !nrtemu__arrays_match(out, in + 1, 2, compute)) {
        return false;
    }
    if (size == 2) {
        r = nan_rule_of(compute);
        if (r == NULL) {
            return false;
        }
    }
    n = (size_t)nrtemu__array_count(out);
    if (stream && where_stream(size, n, in[0].data, in[1].data, in[2].data,
                               out->data, r)) {
        return true;
    }
    if (size != 2) {
        return false; /* the driver selects them in place */
    }
    w.r = r;
    w.c = in[0].data;
    w.x = in[1].data;
    w.y = in[2].data;
    return kstream_parts(where16_part, &w, out->data, n, sizeof(uint16_t),
                         stream);
}
