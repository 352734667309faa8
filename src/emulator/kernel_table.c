/*
 * kernel_table.c - elementwise ops on 1-byte operands as table lookups.
 *
 * An elementwise op whose operands and result all have 1-byte elements
 * (the fp8 formats, bool, int8, uint8) has at most 256 results for one
 * operand and 65536 for two.  So the first time an op meets one such
 * combination of op, compute dtype and dtypes, it runs through the
 * elementwise kernel once over every code (every pair of codes), and from
 * then on the op is a lookup per element: with AVX-512 VBMI 64 codes at a
 * time from a table held in four registers (one operand), or a 16-lane
 * gather (two), where the kernel decodes each operand to float32,
 * computes and rounds back.  The results are the kernel's own, bit for
 * bit, since an elementwise result depends on its operands' values only.
 * where(c, x, y) with a bool c is a select, then a lookup of what where
 * makes of the code selected (NaN codes come back canonical).
 * The lookup runs when every operand has the out's shape (no broadcast:
 * one scalar operand can take other paths in the kernel, pow's exponent)
 * and the out has enough elements to pay for building the table once.
 *
 * Tables are built under a lock and kept for the life of the process,
 * TABLE_SLOTS of them at most (then the kernel computes as before).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"
#include "kernel_table.h"
#include "simd.h"

#if NRTEMU_X86_CLONES
#include <immintrin.h>
#endif

/* Elements of the out, at least, for a lookup: one operand, two. */
#define TABLE_MIN_UNARY ((uint64_t)1 << 12)
#define TABLE_MIN_BINARY ((uint64_t)1 << 16)

#define TABLE_SLOTS 64

struct table {
    enum nrtemu_op op;
    enum nrtemu_dtype compute, in[2], out;
    int n_in;
    uint8_t *data; /* 256 or 65536 results, and a 64-byte tail */
};

static struct {
    pthread_mutex_t lock;
    struct table slot[TABLE_SLOTS];
    size_t count;
} tables = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Set while this thread builds a table: its kernel call computes. */
static _Thread_local bool building;

/* The results of `op` over every code (n_in 1) or pair of codes (2: the
 * first operand's code in the high byte of the index), or (3: where) what
 * where makes of each code it selects; NULL without memory. */
static uint8_t *
table_build(enum nrtemu_op op, enum nrtemu_dtype compute,
            const enum nrtemu_dtype *in_dt, enum nrtemu_dtype out_dt, int n_in,
            struct nrtemu_scratch *s)
{
    size_t n = n_in == 2 ? 65536 : 256;
    uint8_t *data = calloc(1, n + 64);
    uint8_t *codes = malloc(3 * n);
    struct nrtemu_array in[3], out = {data, out_dt, 1, {n}};
    NRT_STATUS st = NRT_RESOURCE;

    if (data != NULL && codes != NULL) {
        for (size_t i = 0; i < n; i++) {
            codes[i] = (uint8_t)(n_in == 2 ? i >> 8 : i);
            codes[n + i] = (uint8_t)i;
            codes[2 * n + i] = 1; /* where's condition: true */
        }
        for (int k = 0; k < n_in && n_in < 3; k++) {
            in[k] = (struct nrtemu_array){codes + k * n, in_dt[k], 1, {n}};
        }
        if (n_in == 3) {
            /* where(true, codes, codes): what it makes of each code */
            in[0] = (struct nrtemu_array){
                codes + 2 * n, NRTEMU_DTYPE_BOOL, 1, {n}};
            in[1] = (struct nrtemu_array){codes, in_dt[0], 1, {n}};
            in[2] = (struct nrtemu_array){codes + n, in_dt[0], 1, {n}};
        }
        building = true;
        st = nrtemu__kernel_elementwise(op, compute, &out, in, n_in, s);
        building = false;
    }
    free(codes);
    if (st != NRT_SUCCESS) {
        free(data);
        return NULL;
    }
    return data;
}

/* The table of this combination, built on first use; NULL when there is
 * none (no slot or no memory left). */
static const uint8_t *
table_get(enum nrtemu_op op, enum nrtemu_dtype compute,
          const enum nrtemu_dtype *in_dt, enum nrtemu_dtype out_dt, int n_in,
          struct nrtemu_scratch *s)
{
    const uint8_t *found = NULL;

    pthread_mutex_lock(&tables.lock);
    for (size_t i = 0; i < tables.count && found == NULL; i++) {
        const struct table *t = &tables.slot[i];
        if (t->op == op && t->compute == compute && t->out == out_dt &&
            t->n_in == n_in && t->in[0] == in_dt[0] &&
            (n_in != 2 || t->in[1] == in_dt[1])) {
            found = t->data;
        }
    }
    if (found == NULL && tables.count < TABLE_SLOTS) {
        uint8_t *data = table_build(op, compute, in_dt, out_dt, n_in, s);
        if (data != NULL) {
            tables.slot[tables.count++] = (struct table){
                op,     compute, {in_dt[0], n_in == 2 ? in_dt[1] : in_dt[0]},
                out_dt, n_in,    data};
            found = data;
        }
    }
    pthread_mutex_unlock(&tables.lock);
    return found;
}

#if NRTEMU_X86_CLONES
/* o[i] = t[a[i]] (with c: t[c[i] ? a[i] : b[i]]), 64 codes per step:
 * vpermi2b looks up the low 7 bits in two registers of the table, the
 * top bit picks which pair. */
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static void
lookup1_vbmi(const uint8_t *t, const uint8_t *c, const uint8_t *a,
             const uint8_t *b, uint8_t *o, size_t n)
{
    const __m512i t0 = _mm512_loadu_si512(t), t1 = _mm512_loadu_si512(t + 64);
    const __m512i t2 = _mm512_loadu_si512(t + 128);
    const __m512i t3 = _mm512_loadu_si512(t + 192);
    size_t i = 0;

    for (; i < n; i += 64) {
        __mmask64 m =
            n - i >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (n - i)) - 1;
        __m512i x = _mm512_maskz_loadu_epi8(m, a + i);
        if (c != NULL) {
            __m512i k = _mm512_maskz_loadu_epi8(m, c + i);
            x = _mm512_mask_blend_epi8(_mm512_test_epi8_mask(k, k),
                                       _mm512_maskz_loadu_epi8(m, b + i), x);
        }
        __m512i lo = _mm512_permutex2var_epi8(t0, x, t1);
        __m512i hi = _mm512_permutex2var_epi8(t2, x, t3);
        __m512i r = _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi);
        _mm512_mask_storeu_epi8(o + i, m, r);
    }
}

/* o[i] = t[a[i] << 8 | b[i]], 16 per gather (4-byte reads: the table has
 * a tail). */
__attribute__((target("avx512f,avx512bw"))) static size_t
lookup2_avx512(const uint8_t *t, const uint8_t *a, const uint8_t *b,
               uint8_t *o, size_t n)
{
    size_t i = 0;

    for (; i + 16 <= n; i += 16) {
        __m512i x =
            _mm512_cvtepu8_epi32(_mm_loadu_si128((const void *)(a + i)));
        __m512i y =
            _mm512_cvtepu8_epi32(_mm_loadu_si128((const void *)(b + i)));
        __m512i idx = _mm512_or_si512(_mm512_slli_epi32(x, 8), y);
        __m512i g = _mm512_i32gather_epi32(idx, (const void *)t, 1);
        _mm_storeu_si128((void *)(o + i), _mm512_cvtepi32_epi8(g));
    }
    return i;
}

static bool
cpu_has(int vbmi)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") &&
           (!vbmi || __builtin_cpu_supports("avx512vbmi"));
}
#endif

static void
lookup1(const uint8_t *t, const uint8_t *c, const uint8_t *a, const uint8_t *b,
        uint8_t *o, size_t n)
{
#if NRTEMU_X86_CLONES
    if (cpu_has(1)) {
        lookup1_vbmi(t, c, a, b, o, n);
        return;
    }
#endif
    if (c != NULL) {
        for (size_t i = 0; i < n; i++) {
            o[i] = t[c[i] != 0 ? a[i] : b[i]];
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        o[i] = t[a[i]];
    }
}

static void
lookup2(const uint8_t *t, const uint8_t *a, const uint8_t *b, uint8_t *o,
        size_t n)
{
    size_t i = 0;

#if NRTEMU_X86_CLONES
    if (cpu_has(0)) {
        i = lookup2_avx512(t, a, b, o, n);
    }
#endif
    for (; i < n; i++) {
        o[i] = t[(size_t)a[i] << 8 | b[i]];
    }
}

static bool
same_shape(const struct nrtemu_array *a, const struct nrtemu_array *b)
{
    return a->ndim == b->ndim &&
           memcmp(a->shape, b->shape, a->ndim * sizeof *a->shape) == 0;
}

bool
nrtemu__kernel_table_run(enum nrtemu_op op, enum nrtemu_dtype compute,
                         const struct nrtemu_array *out,
                         const struct nrtemu_array *in, int n_in,
                         struct nrtemu_scratch *s)
{
    /* where(c, x, y) of one 1-byte dtype, with a bool c: a table of what
     * where makes of each code of x or y (x and y alike), indexed by the
     * code it selects. */
    bool select = op == NRTEMU_OP_WHERE && n_in == 3 &&
                  in[0].dtype == NRTEMU_DTYPE_BOOL &&
                  in[1].dtype == in[2].dtype;
    enum nrtemu_dtype in_dt[3];
    uint64_t count;
    const uint8_t *t;

    if (building || n_in < 1 || (n_in > 2 && !select) ||
        nrtemu__dtype_size(out->dtype) != 1) {
        return false;
    }
    for (int k = 0; k < n_in; k++) {
        if (nrtemu__dtype_size(in[k].dtype) != 1 || !same_shape(&in[k], out)) {
            return false;
        }
        in_dt[k] = in[k].dtype;
    }
    count = nrtemu__array_count(out);
    if (count < (n_in == 2 ? TABLE_MIN_BINARY : TABLE_MIN_UNARY)) {
        return false;
    }
    if (select) {
        t = table_get(op, compute, in_dt + 1, out->dtype, 3, s);
        if (t != NULL) {
            lookup1(t, in[0].data, in[1].data, in[2].data, out->data,
                    (size_t)count);
        }
        return t != NULL;
    }
    t = table_get(op, compute, in_dt, out->dtype, n_in, s);
    if (t == NULL) {
        return false;
    }
    if (n_in == 1) {
        lookup1(t, NULL, in[0].data, NULL, out->data, (size_t)count);
    } else {
        lookup2(t, in[0].data, in[1].data, out->data, (size_t)count);
    }
    return true;
}
