/*
 * kernel_table16.c - unary elementwise ops on 2-byte float operands as
 * table lookups.
 *
 * A bfloat16 or float16 operand has 65536 codes, so a unary op of one
 * (op, compute dtype, operand dtype, result dtype) has at most 65536
 * results.  The first time an op meets such a combination with enough
 * elements, the elementwise kernel runs once over every code into a
 * table of 2-byte results (128 KiB: it stays in L2), and from then on the
 * op is one lookup per element (lookup16).  The results are the kernel's
 * own, bit for bit, since a unary result depends on its operand's value
 * only; a transcendental (exp, gelu, sin...), which the kernel computes
 * in float32 between two conversions, then costs about what a copy does.
 * kernel_table.c does the same for 1-byte operands.
 *
 * Tables are built under a lock and kept for the life of the process,
 * TABLE16_SLOTS of them at most (then the kernel computes as before).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"
#include "kernel_stream.h"
#include "kernel_table.h"

#if defined(__x86_64__) && defined(__SSE__)
#include <xmmintrin.h>
/* MXCSR: flush to zero, denormals are zero, the rounding mode. */
#define TABLE16_CSR_MODES 0xe040u
#endif

/* Elements of the out, at least, for a lookup: building the table runs
 * the kernel over 65536 codes once (0.17-0.27 ms measured), which the
 * calls of this size pay back when a model runs repeatedly (a float16 exp
 * of 64 x 64: 1.2 us by table, 1.55 us computed; log 1.0 and 1.66). */
#define TABLE16_MIN ((uint64_t)1 << 12)

#define TABLE16_SLOTS 128

#define TABLE16_CODES 65536

/* The loop family of each op, from its row of NRTEMU_OP_LIST. */
static const unsigned char table16_class[NRTEMU_OP_COUNT] = {
#define OP_CLASS(suffix, name, arity, cls, check, run, cost, attrs, flags) \
    [NRTEMU_OP_##suffix] = NRTEMU_OPC_##cls,
    NRTEMU_OP_LIST(OP_CLASS)
#undef OP_CLASS
};

struct table16 {
    enum nrtemu_op op;
    enum nrtemu_dtype compute, in, out;
    uint16_t *data; /* TABLE16_CODES results */
};

static struct {
    pthread_mutex_t lock;
    struct table16 slot[TABLE16_SLOTS];
    size_t count;
} tables16 = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Set while this thread builds a table: its kernel call computes. */
static _Thread_local bool building16;

/* The results of `op` over every code of `in_dt`; NULL without memory
 * or when the kernel fails. */
static uint16_t *
table16_build(enum nrtemu_op op, enum nrtemu_dtype compute,
              enum nrtemu_dtype in_dt, enum nrtemu_dtype out_dt,
              struct nrtemu_scratch *s)
{
    uint16_t *data = malloc(TABLE16_CODES * sizeof *data);
    uint16_t *codes = malloc(TABLE16_CODES * sizeof *codes);
    NRT_STATUS st = NRT_RESOURCE;

    if (data != NULL && codes != NULL) {
        struct nrtemu_array in = {codes, in_dt, 1, {TABLE16_CODES}};
        struct nrtemu_array out = {data, out_dt, 1, {TABLE16_CODES}};
        for (size_t i = 0; i < TABLE16_CODES; i++) {
            codes[i] = (uint16_t)i;
        }
#ifdef TABLE16_CSR_MODES
        /* The table holds the results of the default modes, whatever the
         * building thread's (flush to zero would flush the subnormal
         * codes' results for every thread after it). */
        unsigned csr = _mm_getcsr();
        _mm_setcsr(csr & ~TABLE16_CSR_MODES);
#endif
        building16 = true;
        st = nrtemu__kernel_elementwise(op, compute, &out, &in, 1, s);
        building16 = false;
#ifdef TABLE16_CSR_MODES
        _mm_setcsr(csr);
#endif
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
static const uint16_t *
table16_get(enum nrtemu_op op, enum nrtemu_dtype compute,
            enum nrtemu_dtype in_dt, enum nrtemu_dtype out_dt,
            struct nrtemu_scratch *s)
{
    const uint16_t *found = NULL;

    pthread_mutex_lock(&tables16.lock);
    for (size_t i = 0; i < tables16.count && found == NULL; i++) {
        const struct table16 *t = &tables16.slot[i];
        if (t->op == op && t->compute == compute && t->in == in_dt &&
            t->out == out_dt) {
            found = t->data;
        }
    }
    if (found == NULL && tables16.count < TABLE16_SLOTS) {
        uint16_t *data = table16_build(op, compute, in_dt, out_dt, s);
        if (data != NULL) {
            tables16.slot[tables16.count++] =
                (struct table16){op, compute, in_dt, out_dt, data};
            found = data;
        }
    }
    pthread_mutex_unlock(&tables16.lock);
    return found;
}

/*
 * o[i] = t[a[i]], with plain loads, four results stored as one 8-byte
 * word.  On Zen 4 this measured 0.25 ns an element (4M elements, one
 * thread, best of 10) against 0.30 with a 2-byte store each, 0.35 with
 * AVX2 gathers of 8 and 0.38 with AVX-512 gathers of 16 (vpgatherdd at
 * 2 a[i], narrowed): so it stays scalar, and out of the CPU dispatch
 * (simd.h).  It is bound by its instructions (about one cycle an
 * element), not by the table's L1 misses: on float16 in [-2, 2), whose
 * results spread over 20 KiB of the table, 0.29 ns against 0.27 on [0.5,
 * 2).  A float16 cbrt table that stays in L1 (cbrt(2^(3q+r) m) = 2^q
 * cbrt(2^r m): 20 KiB of results and a 64-entry step by sign and
 * exponent, the same results for every code) measured slower: 0.95 ns
 * scalar, 0.47-0.55 with AVX-512 (vpermi2w for the step, then gathers or
 * plain loads from a buffer of indices).
 */
static void
lookup16(const void *table, const uint16_t *a, uint16_t *o, size_t n)
{
    const uint16_t *t = table;
    size_t i = 0;

    for (; i + 4 <= n; i += 4) {
        uint64_t r = (uint64_t)t[a[i]] | (uint64_t)t[a[i + 1]] << 16 |
                     (uint64_t)t[a[i + 2]] << 32 | (uint64_t)t[a[i + 3]] << 48;
        memcpy(o + i, &r, sizeof r);
    }
    for (; i < n; i++) {
        o[i] = t[a[i]];
    }
}

/* Whether `op` on these arrays is one the table path takes. */
static bool
table16_applies(enum nrtemu_op op, const struct nrtemu_array *out,
                const struct nrtemu_array *in, int n_in)
{
    if (building16 || n_in != 1 || table16_class[op] != NRTEMU_OPC_UNARY ||
        (in->dtype != NRTEMU_DTYPE_BFLOAT16 &&
         in->dtype != NRTEMU_DTYPE_FLOAT16) ||
        nrtemu__dtype_size(out->dtype) != 2 || in->ndim != out->ndim ||
        memcmp(in->shape, out->shape, in->ndim * sizeof *in->shape) != 0) {
        return false;
    }
    return nrtemu__array_count(out) >= TABLE16_MIN;
}

bool
nrtemu__kernel_table16_run(enum nrtemu_op op, enum nrtemu_dtype compute,
                           const struct nrtemu_array *out,
                           const struct nrtemu_array *in, int n_in,
                           struct nrtemu_scratch *s, bool stream)
{
    const uint16_t *t, *a;
    uint16_t *o;
    size_t n;

    if (!table16_applies(op, out, in, n_in)) {
        return false;
    }
    t = table16_get(op, compute, in->dtype, out->dtype, s);
    if (t == NULL) {
        return false;
    }
    a = in->data;
    o = out->data;
    n = (size_t)nrtemu__array_count(out);
    kstream_map16(lookup16, t, a, o, n, stream);
    return true;
}
