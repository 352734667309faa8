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

#include "kernels/cpu.h"
#include "kernels/kernel.h"
#include "kernels/kernel_codes16.h"
#include "kernels/kernel_stream.h"
#include "kernels/kernel_table.h"
#include "kernels/simd_tail.h"

#if defined(__x86_64__) && defined(__SSE__)
#include <xmmintrin.h>
/* MXCSR: flush to zero, denormals are zero, the rounding mode. */
#define TABLE16_CSR_MODES 0xe040u
#endif

/* Elements of the out, at least, for a lookup: building the table runs
 * the kernel over 65536 codes once, which the calls of this size pay back
 * when a model runs repeatedly (at this size a lookup already beats the
 * kernel's exp and log). */
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

/* Four results t[a[j]], j = i..i+3, as one little-endian word. */
#define LOOKUP16_WORD(t, a, i)                                     \
    ((uint64_t)(t)[(a)[(i)]] | (uint64_t)(t)[(a)[(i) + 1]] << 16 | \
     (uint64_t)(t)[(a)[(i) + 2]] << 32 | (uint64_t)(t)[(a)[(i) + 3]] << 48)

/*
 * o[i] = t[a[i]], with plain loads, four results stored as one 8-byte
 * word, two words a step.  Words of four results beat a 2-byte store
 * each, AVX2 gathers of 8 and AVX-512 gathers of 16 (vpgatherdd at 2
 * a[i], narrowed): so it stays scalar, and out of the CPU dispatch
 * (simd.h).  Two words a step beat one (four are no better): two loads
 * an element, near the pace of loads that the core issues, where one
 * word a step waits on its chain of shifts and ors.  A float16 cbrt table
 * that stays in L1 (cbrt(2^(3q+r) m) = 2^q cbrt(2^r m): 20 KiB of
 * results and a 64-entry step by sign and exponent, the same results
 * for every code) measured slower, scalar or with AVX-512 (vpermi2w for
 * the step, then gathers or plain loads from a buffer of indices).  So
 * did the transcendentals computed in registers between conversions
 * (float16 exp by hand in AVX-512, the kernel's formula).
 */
static void
lookup16(const void *table, const uint16_t *a, uint16_t *o, size_t n)
{
    const uint16_t *t = table;
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        uint64_t lo = LOOKUP16_WORD(t, a, i);
        uint64_t hi = LOOKUP16_WORD(t, a, i + 4);
        memcpy(o + i, &lo, sizeof lo);
        memcpy(o + i + 4, &hi, sizeof hi);
    }
    for (; i < n; i++) {
        o[i] = t[a[i]];
    }
}

/*
 * With AVX-512 the cheap ops are computed instead, faster than lookup16
 * (compute16_find has the figures).  square, reciprocal and sqrt: each
 * step of 16 codes is widened to float32 in registers
 * (kernel_codes16.h: the kernel's conversions), put through the float32
 * instructions of the kernel's loop (kernel_elementwise.c,
 * DEFINE_FLOAT_KERNELS: x * x, 1 / x, sqrtf) and narrowed in
 * registers: the same operations on the same values as the table's, so
 * the same bits.  relu and sign are the same on the codes themselves.
 * test_kernel_table16 checks every code.  The transcendentals keep the
 * table: their float32 loops (kernel_math.h, vectorised by the compiler)
 * between such conversions measured slower than lookup16 for most (tanh,
 * sigmoid and gelu on float16, every one on bfloat16) and no faster for
 * the rest (exp, sin, cos and log on float16).
 */
#if NRTEMU_X86_CLONES
/* op of 16 float32 lanes, as the kernel's float32 loop computes it. */
CODES16_TARGET static inline __attribute__((always_inline)) __m512
compute16_op(enum nrtemu_op op, __m512 x)
{
    const __m512 one = _mm512_set1_ps(1.0f);

    switch (op) {
    case NRTEMU_OP_SQUARE:
        return _mm512_mul_ps(x, x);
    case NRTEMU_OP_RECIPROCAL:
        return _mm512_div_ps(one, x);
    case NRTEMU_OP_SQRT:
    default: /* (COMPUTE16_OPS holds no other op) */
        return _mm512_sqrt_ps(x);
    }
}

/* o[i] = op(a[i]) over n codes of float16 (`half`) or bfloat16; o may be
 * a (each step is loaded before it is stored). */
CODES16_TARGET static inline __attribute__((always_inline)) void
compute16_loop(enum nrtemu_op op, bool half, const uint16_t *a, uint16_t *o,
               size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = codes16_mask(n - i);
        codes16_store(o + i, m, compute16_op(op, codes16_load(a + i, m, half)),
                      half);
    }
}

/*
 * relu or sign of 32 codes (16-bit lanes) on their bits: what the
 * kernel's FLOAT_MAX(x, 0) and FLOAT_SIGN(x) give between the
 * conversions, without them.  A finite
 * code widens and narrows back to itself; a NaN narrows quieted, as
 * codes16_store has it (float16: the quiet bit set, the payload kept;
 * bfloat16: its sign and 0x7fc0).
 */
CODES16_TARGET static inline __attribute__((always_inline)) __m512i
compute16_bits(enum nrtemu_op op, bool half, __m512i c)
{
    const __m512i sign = _mm512_set1_epi16(-0x8000);
    const __m512i one = _mm512_set1_epi16(half ? 0x3c00 : 0x3f80);
    __m512i mag = _mm512_andnot_si512(sign, c);
    __mmask32 nan = _mm512_cmpgt_epu16_mask(
        mag, _mm512_set1_epi16(half ? 0x7c00 : 0x7f80));
    __mmask32 neg = _mm512_movepi16_mask(c);
    __mmask32 zero = _mm512_cmpeq_epi16_mask(mag, _mm512_setzero_si512());
    __m512i quiet = half ? _mm512_or_si512(c, _mm512_set1_epi16(0x0200))
                         : _mm512_or_si512(_mm512_and_si512(c, sign),
                                           _mm512_set1_epi16(0x7fc0));
    __m512i r;

    if (op == NRTEMU_OP_RELU) { /* max(x, +0): negatives and -0 give +0 */
        r = _mm512_maskz_mov_epi16(~neg, c);
    } else { /* +-1, or the zero itself */
        r = _mm512_mask_mov_epi16(one, neg, _mm512_or_si512(one, sign));
        r = _mm512_mask_mov_epi16(r, zero, c);
    }
    return _mm512_mask_mov_epi16(r, nan, quiet);
}

/* compute16_bits over n codes; o may be a. */
CODES16_TARGET static inline __attribute__((always_inline)) void
compute16_bits_loop(enum nrtemu_op op, bool half, const uint16_t *a,
                    uint16_t *o, size_t n)
{
    size_t i = 0;

    for (; i + 32 <= n; i += 32) {
        _mm512_storeu_si512(
            (void *)(o + i),
            compute16_bits(op, half,
                           _mm512_loadu_si512((const void *)(a + i))));
    }
    if (i < n) {
        __mmask32 m = (__mmask32)((1u << (n - i)) - 1);
        tail_store_epi16(o + i, m,
                         compute16_bits(op, half, tail_load_epi16(m, a + i)));
    }
}

#define COMPUTE16_OPS(X) \
    X(SQUARE, square) X(RECIPROCAL, reciprocal) X(SQRT, sqrt)

#define COMPUTE16_FNS(SUFFIX, name)                                \
    CODES16_TARGET static void compute16_##name##_f16(             \
        const void *ctx, const uint16_t *a, uint16_t *o, size_t n) \
    {                                                              \
        (void)ctx;                                                 \
        compute16_loop(NRTEMU_OP_##SUFFIX, true, a, o, n);         \
    }                                                              \
    CODES16_TARGET static void compute16_##name##_bf16(            \
        const void *ctx, const uint16_t *a, uint16_t *o, size_t n) \
    {                                                              \
        (void)ctx;                                                 \
        compute16_loop(NRTEMU_OP_##SUFFIX, false, a, o, n);        \
    }
COMPUTE16_OPS(COMPUTE16_FNS)
#undef COMPUTE16_FNS
#define COMPUTE16_BITS_FNS(SUFFIX, name)                           \
    CODES16_TARGET static void compute16_##name##_f16(             \
        const void *ctx, const uint16_t *a, uint16_t *o, size_t n) \
    {                                                              \
        (void)ctx;                                                 \
        compute16_bits_loop(NRTEMU_OP_##SUFFIX, true, a, o, n);    \
    }                                                              \
    CODES16_TARGET static void compute16_##name##_bf16(            \
        const void *ctx, const uint16_t *a, uint16_t *o, size_t n) \
    {                                                              \
        (void)ctx;                                                 \
        compute16_bits_loop(NRTEMU_OP_##SUFFIX, false, a, o, n);   \
    }
COMPUTE16_BITS_FNS(RELU, relu)
COMPUTE16_BITS_FNS(SIGN, sign)
#undef COMPUTE16_BITS_FNS
#endif

/*
 * The loop computing op on codes of dt where this CPU and build have one,
 * else NULL (the table).  relu and sign, square and reciprocal, and sqrt
 * each measured faster than lookup16 on both dtypes, warm and with
 * operand and out evicted first (lookup16 is slower on float16, whose
 * codes spread over more of the table).  rsqrt (a division and a square
 * root a step) keeps the table: it is no faster than lookup16, on one
 * thread or two.
 */
static kstream_map16_fn *
compute16_find(enum nrtemu_op op, enum nrtemu_dtype dt)
{
#if NRTEMU_X86_CLONES
    bool half = dt == NRTEMU_DTYPE_FLOAT16;

    if (!nrtemu__cpu_has(NRTEMU_CPU_V4) ||
        (!half && dt != NRTEMU_DTYPE_BFLOAT16)) {
        return NULL;
    }
    switch (op) {
#define COMPUTE16_CASE(SUFFIX, name) \
    case NRTEMU_OP_##SUFFIX:         \
        return half ? compute16_##name##_f16 : compute16_##name##_bf16;
        COMPUTE16_OPS(COMPUTE16_CASE)
        COMPUTE16_CASE(RELU, relu)
        COMPUTE16_CASE(SIGN, sign)
#undef COMPUTE16_CASE
    default: /* a selector: other ops take the table */
        return NULL;
    }
#else
    (void)op, (void)dt;
    return NULL;
#endif
}

bool
nrtemu__kernel_table16_computed(enum nrtemu_op op, enum nrtemu_dtype dt)
{
    return compute16_find(op, dt) != NULL;
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
    kstream_map16_fn *fn;
    const uint16_t *t, *a;
    uint16_t *o;
    size_t n;

    if (!table16_applies(op, out, in, n_in)) {
        return false;
    }
    a = in->data;
    o = out->data;
    n = (size_t)nrtemu__array_count(out);
    fn = in->dtype == compute && out->dtype == compute
             ? compute16_find(op, compute)
             : NULL;
    if (fn != NULL) {
#ifdef TABLE16_CSR_MODES
        /* the default modes, as the table is built in */
        unsigned csr = _mm_getcsr();
        _mm_setcsr(csr & ~TABLE16_CSR_MODES);
#endif
        kstream_map16(fn, NULL, a, o, n, stream);
#ifdef TABLE16_CSR_MODES
        _mm_setcsr(csr);
#endif
        return true;
    }
    t = table16_get(op, compute, in->dtype, out->dtype, s);
    if (t == NULL) {
        return false;
    }
    kstream_map16(lookup16, t, a, o, n, stream);
    return true;
}
