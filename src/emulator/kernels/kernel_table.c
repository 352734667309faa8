/*
 * kernel_table.c - elementwise ops on 1-byte operands as table lookups.
 *
 * An elementwise op whose operands and result all have 1-byte elements
 * (the fp8 formats, bool, int8, uint8) has at most 256 results for one
 * operand and 65536 for two.  So the first time an op meets one such
 * combination of op, compute dtype and dtypes, it runs through the
 * elementwise kernel once over every code (every pair of codes), and from
 * then on the op is a lookup per element: with AVX-512 VBMI 64 codes at a
 * time from a table held in four registers (one operand), with AVX2 32
 * at a time by vpshufb and byte blends (one operand), or AVX2 gathers
 * (two), where the kernel decodes each operand to float32, computes and
 * rounds back.  The results are the kernel's own, bit for
 * bit, since an elementwise result depends on its operands' values only.
 * where(c, x, y) with a bool c is a select, then a lookup of what where
 * makes of the code selected (NaN codes come back canonical).  fp8
 * compares, maximum and minimum need no table of pairs: they compare
 * order keys of the codes (keys_get).
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

#include "kernels/cpu.h"
#include "kernels/convert.h"
#include "kernels/kernel.h"
#include "kernels/kernel_table.h"
#include "kernels/simd.h"
#include "kernels/simd_tail.h"

#if NRTEMU_X86_CLONES
#include <immintrin.h>
#endif

/* Elements of the out, at least, for a lookup: one operand (or an order
 * key per operand), a table of pairs. */
#define TABLE_MIN_UNARY ((uint64_t)1 << 12)
#define TABLE_MIN_BINARY ((uint64_t)1 << 16)

#define TABLE_SLOTS 64

struct fp8_arith;
static struct fp8_arith *fp8_arith_get(enum nrtemu_op op,
                                       enum nrtemu_dtype compute,
                                       const enum nrtemu_dtype *in_dt,
                                       enum nrtemu_dtype out_dt,
                                       const uint8_t *table);

struct table {
    enum nrtemu_op op;
    enum nrtemu_dtype compute, in[2], out;
    int n_in;
    uint8_t *data;           /* 256 or 65536 results, and a 64-byte tail */
    struct fp8_arith *arith; /* fp8 arithmetic computed (NULL: looked up) */
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
            /* where(true, codes, codes), or op(codes, codes) of maximum
             * and minimum: what the op makes of each code it selects */
            in[0] = (struct nrtemu_array){
                codes + 2 * n, NRTEMU_DTYPE_BOOL, 1, {n}};
            in[1] = (struct nrtemu_array){codes, in_dt[0], 1, {n}};
            in[2] = (struct nrtemu_array){codes + n, in_dt[0], 1, {n}};
        }
        building = true;
        if (n_in == 3 && op != NRTEMU_OP_WHERE) {
            st = nrtemu__kernel_elementwise(op, compute, &out, in + 1, 2, s);
        } else {
            st = nrtemu__kernel_elementwise(op, compute, &out, in, n_in, s);
        }
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
static const struct table *
table_get(enum nrtemu_op op, enum nrtemu_dtype compute,
          const enum nrtemu_dtype *in_dt, enum nrtemu_dtype out_dt, int n_in,
          struct nrtemu_scratch *s)
{
    const struct table *found = NULL;

    pthread_mutex_lock(&tables.lock);
    for (size_t i = 0; i < tables.count && found == NULL; i++) {
        const struct table *t = &tables.slot[i];
        if (t->op == op && t->compute == compute && t->out == out_dt &&
            t->n_in == n_in && t->in[0] == in_dt[0] &&
            (n_in != 2 || t->in[1] == in_dt[1])) {
            found = t;
        }
    }
    if (found == NULL && tables.count < TABLE_SLOTS) {
        uint8_t *data = table_build(op, compute, in_dt, out_dt, n_in, s);
        if (data != NULL) {
            struct table *t = &tables.slot[tables.count++];
            *t = (struct table){
                op,     compute, {in_dt[0], n_in == 2 ? in_dt[1] : in_dt[0]},
                out_dt, n_in,    data,
                NULL};
            if (n_in == 2) {
                t->arith = fp8_arith_get(op, compute, in_dt, out_dt, data);
            }
            found = t;
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
        __m512i x = tail_load_epi8(m, a + i);
        if (c != NULL) {
            __m512i k = tail_load_epi8(m, c + i);
            x = _mm512_mask_blend_epi8(_mm512_test_epi8_mask(k, k),
                                       tail_load_epi8(m, b + i), x);
        }
        __m512i lo = _mm512_permutex2var_epi8(t0, x, t1);
        __m512i hi = _mm512_permutex2var_epi8(t2, x, t3);
        __m512i r = _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi);
        tail_store_epi8(o + i, m, r);
    }
}

/*
 * 32 codes x looked up in a 256-byte table for CPUs without VBMI (its
 * sixteen 16-byte rows in `row`, each in both lanes): vpshufb looks up
 * the low 4 bits in each row, and a tree of 15 byte blends on the code's
 * bits 4 to 7 (each shifted to the top bit, which vpblendvb reads) picks
 * the row.
 */
__attribute__((target("avx2"))) static inline __m256i
lookup32(const __m256i *row, __m256i x)
{
    const __m256i lo = _mm256_and_si256(x, _mm256_set1_epi8(0x0f));
    const __m256i b4 = _mm256_slli_epi16(x, 3), b5 = _mm256_slli_epi16(x, 2);
    const __m256i b6 = _mm256_slli_epi16(x, 1);
    __m256i q[8], r[4];

    for (int k = 0; k < 8; k++) {
        q[k] = _mm256_blendv_epi8(_mm256_shuffle_epi8(row[2 * k], lo),
                                  _mm256_shuffle_epi8(row[2 * k + 1], lo), b4);
    }
    for (int k = 0; k < 4; k++) {
        r[k] = _mm256_blendv_epi8(q[2 * k], q[2 * k + 1], b5);
    }
    return _mm256_blendv_epi8(_mm256_blendv_epi8(r[0], r[1], b6),
                              _mm256_blendv_epi8(r[2], r[3], b6), x);
}

/* The rows of lookup32 of table t. */
__attribute__((target("avx2"))) static inline void
lookup32_rows(__m256i *row, const uint8_t *t)
{
    for (int k = 0; k < 16; k++) {
        row[k] = _mm256_broadcastsi128_si256(
            _mm_loadu_si128((const void *)(t + 16 * k)));
    }
}

/* o[i] = t[a[i]] (with c: t[c[i] ? a[i] : b[i]]) without VBMI, 32 codes
 * per step (lookup32); returns the count done (whole steps).  Several
 * times faster than the byte loads of lookup1's loop. */
__attribute__((target("avx2"))) static size_t
lookup1_avx2(const uint8_t *t, const uint8_t *c, const uint8_t *a,
             const uint8_t *b, uint8_t *o, size_t n)
{
    __m256i row[16];
    const __m256i zero = _mm256_setzero_si256();
    size_t i = 0;

    lookup32_rows(row, t);
    for (; i + 32 <= n; i += 32) {
        __m256i x = _mm256_loadu_si256((const void *)(a + i));
        if (c != NULL) {
            __m256i k = _mm256_loadu_si256((const void *)(c + i));
            x = _mm256_blendv_epi8(x,
                                   _mm256_loadu_si256((const void *)(b + i)),
                                   _mm256_cmpeq_epi8(k, zero));
        }
        _mm256_storeu_si256((void *)(o + i), lookup32(row, x));
    }
    return i;
}

/* o[i] = t[a[i] << 8 | b[i]], 8 per gather (4-byte reads: the table has
 * a tail), 32 a step: the unpacks of a and b make the indices, the packs
 * undo their order.  Measured faster than 16-lane AVX-512 gathers, and
 * than widening 8 codes at a time. */
__attribute__((target("avx2"))) static size_t
lookup2_avx2(const uint8_t *t, const uint8_t *a, const uint8_t *b, uint8_t *o,
             size_t n)
{
    size_t i = 0;
    const __m256i zero = _mm256_setzero_si256();
    const __m256i lowbyte = _mm256_set1_epi32(0xff);

    for (; i + 32 <= n; i += 32) {
        __m256i x = _mm256_loadu_si256((const void *)(a + i));
        __m256i y = _mm256_loadu_si256((const void *)(b + i));
        /* a << 8 | b in 16-bit lanes, then 32-bit ones */
        __m256i w0 = _mm256_unpacklo_epi8(y, x),
                w1 = _mm256_unpackhi_epi8(y, x);
        __m256i g[4] = {
            _mm256_i32gather_epi32((const int *)t,
                                   _mm256_unpacklo_epi16(w0, zero), 1),
            _mm256_i32gather_epi32((const int *)t,
                                   _mm256_unpackhi_epi16(w0, zero), 1),
            _mm256_i32gather_epi32((const int *)t,
                                   _mm256_unpacklo_epi16(w1, zero), 1),
            _mm256_i32gather_epi32((const int *)t,
                                   _mm256_unpackhi_epi16(w1, zero), 1)};
        __m256i p0 = _mm256_packus_epi32(_mm256_and_si256(g[0], lowbyte),
                                         _mm256_and_si256(g[1], lowbyte));
        __m256i p1 = _mm256_packus_epi32(_mm256_and_si256(g[2], lowbyte),
                                         _mm256_and_si256(g[3], lowbyte));
        _mm256_storeu_si256((void *)(o + i), _mm256_packus_epi16(p0, p1));
    }
    return i;
}

/*
 * o[i] = t[a[i] << 8 | b[i]] from registers, 64 a step, while the codes
 * stay in a window of 32 x 32 pairs (a in [a0, a0 + 32), b in [b0, b0 +
 * 32)): its 1024 results, copied from t, are 16 registers, two per 4 rows;
 * vpermi2b looks up row % 4 and the column in each pair, and three blends
 * on the row's bits pick the pair.  About 28 instructions for 64 results,
 * where the gathers take a cycle a result: operands of few codes (values
 * of one or two binades, as a ** b over [0.5, 2) has, 17 codes each) are
 * common.  A step with a code outside takes the gathers, and moves the
 * window to its smallest codes while moves have paid: at most 4 + hits /
 * 16 of them (a move, about 200 cycles, saves about 50 a step that hits),
 * so codes all over take the gathers after 4.  Returns the count done
 * (whole steps).
 */
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static size_t
lookup2_window_vbmi(const uint8_t *t, const uint8_t *a, const uint8_t *b,
                    uint8_t *o, size_t n)
{
    uint8_t w[1024] __attribute__((aligned(64)));
    __m512i tw[16];
    __m512i a0 = _mm512_setzero_si512(), b0 = a0;
    const __m512i n32 = _mm512_set1_epi8(32);
    const __m512i hi3 = _mm512_set1_epi8((char)0xe0);
    const __m512i bit3 = _mm512_set1_epi8(8), bit4 = _mm512_set1_epi8(16);
    bool have = false;
    size_t i = 0, hits = 0, moves = 0;

    for (int k = 0; k < 16; k++) {
        tw[k] = a0; /* filled at the first step */
    }

    for (; i + 64 <= n; i += 64) {
        __m512i x = _mm512_loadu_si512(a + i), y = _mm512_loadu_si512(b + i);
        __m512i dr = _mm512_sub_epi8(x, a0), dc = _mm512_sub_epi8(y, b0);
        __mmask64 in =
            _mm512_cmplt_epu8_mask(dr, n32) & _mm512_cmplt_epu8_mask(dc, n32);
        if (!have || ~in != 0) {
            if (moves >= 4 + hits / 16) {
                lookup2_avx2(t, a + i, b + i, o + i, 64);
                continue;
            }
            /* the window at this step's smallest codes */
            unsigned amin = 255, bmin = 255;
            for (int l = 0; l < 64; l++) {
                amin = a[i + l] < amin ? a[i + l] : amin;
                bmin = b[i + l] < bmin ? b[i + l] : bmin;
            }
            unsigned cols = 256 - bmin < 32 ? 256 - bmin : 32;
            memset(w, 0, sizeof w);
            for (unsigned r = 0; r < 32 && amin + r < 256; r++) {
                memcpy(w + 32 * r, t + ((amin + r) << 8) + bmin, cols);
            }
            for (int k = 0; k < 16; k++) {
                tw[k] = _mm512_load_si512(w + 64 * k);
            }
            a0 = _mm512_set1_epi8((char)amin);
            b0 = _mm512_set1_epi8((char)bmin);
            have = true;
            moves++;
            dr = _mm512_sub_epi8(x, a0);
            dc = _mm512_sub_epi8(y, b0);
            in = _mm512_cmplt_epu8_mask(dr, n32) &
                 _mm512_cmplt_epu8_mask(dc, n32);
            if (~in != 0) {
                lookup2_avx2(t, a + i, b + i, o + i, 64);
                continue;
            }
        }
        hits++;
        /* (row % 4) * 32 + column in bits 0-6; bit 7 (row's bit 2) is
         * not an index bit of vpermi2b */
        __m512i idx =
            _mm512_ternarylogic_epi32(hi3, _mm512_slli_epi16(dr, 5), dc, 0xca);
        __mmask64 r2 = _mm512_movepi8_mask(idx);
        __mmask64 r3 = _mm512_test_epi8_mask(dr, bit3);
        __mmask64 r4 = _mm512_test_epi8_mask(dr, bit4);
        __m512i p[8];
        for (int g = 0; g < 8; g++) {
            p[g] = _mm512_permutex2var_epi8(tw[2 * g], idx, tw[2 * g + 1]);
        }
        __m512i q0 = _mm512_mask_blend_epi8(r2, p[0], p[1]);
        __m512i q1 = _mm512_mask_blend_epi8(r2, p[2], p[3]);
        __m512i q2 = _mm512_mask_blend_epi8(r2, p[4], p[5]);
        __m512i q3 = _mm512_mask_blend_epi8(r2, p[6], p[7]);
        __m512i s0 = _mm512_mask_blend_epi8(r3, q0, q1);
        __m512i s1 = _mm512_mask_blend_epi8(r3, q2, q3);
        _mm512_storeu_si512(o + i, _mm512_mask_blend_epi8(r4, s0, s1));
    }
    return i;
}
#endif

static void
lookup1(const uint8_t *t, const uint8_t *c, const uint8_t *a, const uint8_t *b,
        uint8_t *o, size_t n)
{
    size_t i = 0;

#if NRTEMU_X86_CLONES
    if (nrtemu__cpu_has(NRTEMU_CPU_V4_VBMI)) {
        lookup1_vbmi(t, c, a, b, o, n);
        return;
    }
    if (nrtemu__cpu_has(NRTEMU_CPU_V3)) {
        i = lookup1_avx2(t, c, a, b, o, n);
    }
#endif
    if (c != NULL) {
        for (; i < n; i++) {
            o[i] = t[c[i] != 0 ? a[i] : b[i]];
        }
        return;
    }
    for (; i < n; i++) {
        o[i] = t[a[i]];
    }
}

static void
lookup2(const uint8_t *t, const uint8_t *a, const uint8_t *b, uint8_t *o,
        size_t n)
{
    size_t i = 0;

#if NRTEMU_X86_CLONES
    if (nrtemu__cpu_has(NRTEMU_CPU_V4_VBMI)) {
        i = lookup2_window_vbmi(t, a, b, o, n);
    }
    if (nrtemu__cpu_has(NRTEMU_CPU_V3)) {
        i += lookup2_avx2(t, a + i, b + i, o + i, n - i);
    }
#endif
    for (; i < n; i++) {
        o[i] = t[(size_t)a[i] << 8 | b[i]];
    }
}

/*
 * fp8 arithmetic computed rather than looked up.  The gathers from a
 * table of pairs cost about a cycle a result, short of the memory's pace;
 * add, sub, mul, div, rem, mod and floor_divide of two operands of one
 * fp8 format compute 64 results a step with AVX-512 VBMI instead, in well
 * under the gathers' time:
 * - decode: every fp8 value is exact in bfloat16, so a magnitude's float32
 *   is two bytes, each looked up for 64 codes at once by vpermi2b over a
 *   128-byte table (the sign bit is the code's own top bit);
 * - the op in float32, as the kernel does it: add, sub, mul and div
 *   rounded once, floor_divide as floor(x / y), rem and mod as x - q y
 *   with q = trunc(x / y) and floor(x / y): for fp8 operands (but
 *   float8_e5m2's, whose quotients reach 2^31) the quotient is below 2^18
 *   and a non-integer one is farther from an integer than its rounding, so
 *   q is the true one, and q y and x - q y are exact, fmod's result;
 * - encode: arith_round and arith_codes, f32_to_fp8 (convert.c) in fewer
 *   vector steps.
 * The lanes of a special operand (infinite or NaN, a zero divisor) take
 * the table's result instead, so that the vector code need not follow
 * the kernel's every rule for them.  And a format's computed path is used
 * only if it gives the table's results for all 65536 pairs, checked when
 * the table is built: the results stay the kernel's, bit for bit, by
 * construction, whatever the kernel's code (the comparison fails, and the
 * gathers stay, for float8_e5m2's rem and mod, or a compute dtype that
 * would round twice).
 */
enum arith_kind {
    ARITH_ADD,
    ARITH_SUB,
    ARITH_MUL,
    ARITH_DIV,
    ARITH_REM,
    ARITH_MOD,
    ARITH_FLOOR_DIVIDE
};

struct fp8_arith {
    enum arith_kind kind;
    /* The float32 bits 31-24 and 23-16 of each magnitude's value (the low
     * 16 are zero). */
    uint8_t hi[128], lo[128];
    /* The encoding's constants for the format (arith_round): the scale's
     * float32 bits, the shift of the rounded bits, just under half their
     * last unit, the mask of a rounded magnitude, the infinity code. */
    uint32_t scale, shift, half, mag_mask, inf_code;
};

static bool
arith_kind_of(enum nrtemu_op op, enum arith_kind *kind)
{
    switch (op) {
    case NRTEMU_OP_ADD:
        *kind = ARITH_ADD;
        return true;
    case NRTEMU_OP_SUB:
        *kind = ARITH_SUB;
        return true;
    case NRTEMU_OP_MUL:
        *kind = ARITH_MUL;
        return true;
    case NRTEMU_OP_DIV:
        *kind = ARITH_DIV;
        return true;
    case NRTEMU_OP_REM:
        *kind = ARITH_REM;
        return true;
    case NRTEMU_OP_MOD:
        *kind = ARITH_MOD;
        return true;
    case NRTEMU_OP_FLOOR_DIVIDE:
        *kind = ARITH_FLOOR_DIVIDE;
        return true;
    default: /* a selector: other ops have no table loop */
        return false;
    }
}

#if NRTEMU_X86_CLONES
#define ARITH_TARGET \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vbmi")))

/* The float32 values of 64 codes (their magnitudes' unless `sign`), in
 * four vectors; the order of the elements is the unpacks' (the packs of
 * arith_loop undo it). */
ARITH_TARGET static inline void
arith_widen(const __m512i *t, __m512i x, __m512 *f, bool sign)
{
    const __m512i zero = _mm512_setzero_si512();
    __m512i hi = _mm512_permutex2var_epi8(t[0], x, t[1]);
    /* hi | (x & 0x80): the sign joins the top byte */
    if (sign) {
        hi = _mm512_ternarylogic_epi32(hi, x, _mm512_set1_epi8((char)0x80),
                                       0xf8);
    }
    __m512i lo = _mm512_permutex2var_epi8(t[2], x, t[3]);
    __m512i w0 = _mm512_unpacklo_epi8(lo, hi),
            w1 = _mm512_unpackhi_epi8(lo, hi);

    f[0] = _mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, w0));
    f[1] = _mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, w0));
    f[2] = _mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, w1));
    f[3] = _mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, w1));
}

/*
 * f32_to_fp8 (convert.c) of 16 values, first step.  Scaled by 2^(bias -
 * 127), a value's float32 bits are its code's, shifted: the exponent
 * field is the code's, and a value in the format's subnormal range is a
 * float32 subnormal whose bits count the format's subnormal steps.  So the
 * rounding to nearest even of the bits to the code's mantissa is
 * f32_to_fp8's, normal or subnormal, the carry into the exponent
 * included.  (The scaling is exact for the results of these ops but some
 * quotients, whose rounding there the check of every pair covers.)  The
 * result: the rounded bits shifted down, the sign at bit 31 - shift.
 */
ARITH_TARGET static inline __m512i
arith_scale(const struct fp8_arith *c, __m512 v)
{
    return _mm512_castps_si512(_mm512_mul_ps(
        v, _mm512_castsi512_ps(_mm512_set1_epi32((int)c->scale))));
}

ARITH_TARGET static inline __m512i
arith_round(const struct fp8_arith *c, __m512i b)
{
    const __m128i shift = _mm_cvtsi32_si128((int)c->shift);
    __m512i odd =
        _mm512_and_si512(_mm512_srl_epi32(b, shift), _mm512_set1_epi32(1));

    return _mm512_srl_epi32(
        _mm512_add_epi32(_mm512_add_epi32(b, _mm512_set1_epi32((int)c->half)),
                         odd),
        shift);
}

/* Whether the four scaled results are codes already, shifted: none has a
 * bit below the code's (then arith_round is only the shift).  fmod's
 * results always are (x - q y is exact and as fine as y, and no larger),
 * mod's unless the operands' signs differ, floor_divide's when the
 * quotients are small integers: so their rounding is skipped a step at a
 * time when it would change nothing. */
ARITH_TARGET static inline bool
arith_exact(const struct fp8_arith *c, const __m512i *b)
{
    /* b0 | b1 | b2, then | b3, against the bits below the code's */
    __m512i any = _mm512_or_si512(
        _mm512_ternarylogic_epi32(b[0], b[1], b[2], 0xfe), b[3]);

    return _mm512_test_epi32_mask(
               any, _mm512_set1_epi32((int)((1u << c->shift) - 1))) == 0;
}

/* The codes of 32 rounded values (16-bit lanes): beyond the largest
 * finite one infinity (e4m3fn: NaN), as in f32_to_fp8, and the sign. */
ARITH_TARGET static inline __m512i
arith_codes(const struct fp8_arith *c, __m512i w)
{
    const __m128i down = _mm_cvtsi32_si128((int)(24 - c->shift));
    __m512i mag = _mm512_min_epu16(
        _mm512_and_si512(w, _mm512_set1_epi16((short)c->mag_mask)),
        _mm512_set1_epi16((short)c->inf_code));

    /* mag | (w >> down & 0x80) */
    return _mm512_ternarylogic_epi32(mag, _mm512_srl_epi16(w, down),
                                     _mm512_set1_epi16(0x80), 0xf8);
}

/* The op, lane by lane, for operands that are not special.  rem and mod
 * are x - q y with q = trunc(x / y), floor(x / y): the exact result (see
 * above), whose sign arith_loop takes from the operands (x's for rem,
 * y's for mod, as fmod and mod_f32 give, zeros included). */
ARITH_TARGET static inline __m512
arith_op(enum arith_kind kind, __m512 x, __m512 y)
{
    __m512 q;

    switch (kind) {
    case ARITH_ADD:
        return _mm512_add_ps(x, y);
    case ARITH_SUB:
        return _mm512_sub_ps(x, y);
    case ARITH_MUL:
        return _mm512_mul_ps(x, y);
    case ARITH_DIV:
        return _mm512_div_ps(x, y);
    case ARITH_FLOOR_DIVIDE:
        return _mm512_roundscale_ps(_mm512_div_ps(x, y),
                                    _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    case ARITH_REM:
        q = _mm512_roundscale_ps(_mm512_div_ps(x, y),
                                 _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        break;
    default: /* MOD */
        q = _mm512_roundscale_ps(_mm512_div_ps(x, y),
                                 _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
        break;
    }
    return _mm512_fnmadd_ps(q, y, x);
}

/* Where the operands' signs give the result's, whatever the magnitudes:
 * the op runs on magnitudes and the sign is set last (fewer steps).
 * mul and div: x's sign xor y's (zeros too, as IEEE 754 has them); rem:
 * x's (fmod).  The others need the signed values. */
static inline bool
arith_signless(enum arith_kind kind)
{
    return kind == ARITH_MUL || kind == ARITH_DIV || kind == ARITH_REM;
}

/* The loop, for one kind (a constant where inlined). */
ARITH_TARGET static inline __attribute__((always_inline)) void
arith_loop(const struct fp8_arith *c, enum arith_kind kind,
           const uint8_t *table, const uint8_t *a, const uint8_t *b,
           uint8_t *o, size_t n)
{
    const bool signless = arith_signless(kind);
    const __m512i inf = _mm512_set1_epi8((char)c->inf_code);
    const __m512i bit7 = _mm512_set1_epi8((char)0x80);
    const __m128i shift = _mm_cvtsi32_si128((int)c->shift);
    __m512i t[4];

    for (int k = 0; k < 2; k++) {
        t[k] = _mm512_loadu_si512(c->hi + 64 * k);
        t[2 + k] = _mm512_loadu_si512(c->lo + 64 * k);
    }
    for (size_t i = 0; i < n; i += 64) {
        __mmask64 m =
            n - i >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (n - i)) - 1;
        __m512i x = tail_load_epi8(m, a + i);
        __m512i y = tail_load_epi8(m, b + i);
        __m512 fx[4], fy[4];
        __m512i e[4], r;
        /* An operand infinite or NaN (the magnitudes from the infinity
         * code up), or a zero divisor: those lanes from the table.  (The
         * mask from the operands alone is known early: a branch on it
         * that goes wrong costs little.) */
        __mmask64 special =
            m & (_mm512_cmpge_epu8_mask(_mm512_andnot_si512(bit7, x), inf) |
                 _mm512_cmpge_epu8_mask(_mm512_andnot_si512(bit7, y), inf));

        if (kind != ARITH_ADD && kind != ARITH_SUB && kind != ARITH_MUL) {
            special |=
                _mm512_mask_testn_epi8_mask(m, y, _mm512_set1_epi8(0x7f));
        }

        arith_widen(t, x, fx, !signless);
        arith_widen(t, y, fy, !signless);
        for (int k = 0; k < 4; k++) {
            e[k] = arith_scale(c, arith_op(kind, fx[k], fy[k]));
        }
        if (kind == ARITH_REM ||
            ((kind == ARITH_MOD || kind == ARITH_FLOOR_DIVIDE) &&
             arith_exact(c, e))) {
            for (int k = 0; k < 4; k++) {
                e[k] = _mm512_srl_epi32(e[k], shift);
            }
        } else {
            for (int k = 0; k < 4; k++) {
                e[k] = arith_round(c, e[k]);
            }
        }
        /* the packs undo the unpacks' order */
        if (kind == ARITH_ADD || kind == ARITH_SUB) {
            /* the sign from the result's bits (x + -x is +0, -0 + -0
             * -0) */
            r = _mm512_packus_epi16(
                arith_codes(c, _mm512_packus_epi32(e[0], e[1])),
                arith_codes(c, _mm512_packus_epi32(e[2], e[3])));
        } else {
            /* the magnitudes' codes (beyond the largest finite one
             * infinity, e4m3fn: NaN), then the sign, which the operands
             * give: x ^ y for mul, div and floor_divide, x for rem, y for
             * mod (zeros included) */
            const __m512i mask = _mm512_set1_epi16((short)c->mag_mask);
            const __m512i top = _mm512_set1_epi16((short)c->inf_code);
            __m512i mag = _mm512_packus_epi16(
                _mm512_min_epu16(
                    _mm512_and_si512(_mm512_packus_epi32(e[0], e[1]), mask),
                    top),
                _mm512_min_epu16(
                    _mm512_and_si512(_mm512_packus_epi32(e[2], e[3]), mask),
                    top));
            if (kind == ARITH_REM || kind == ARITH_MOD) {
                /* mag | (s & 0x80) */
                r = _mm512_ternarylogic_epi32(mag, kind == ARITH_REM ? x : y,
                                              bit7, 0xf8);
            } else {
                /* mag | ((x ^ y) & 0x80) */
                r = _mm512_or_si512(
                    mag, _mm512_ternarylogic_epi32(x, y, bit7, 0x28));
            }
        }
        tail_store_epi8(o + i, m, r);
        if (special != 0) {
            /* the operands' codes as loaded: the out may be one of them,
             * already written */
            _Alignas(64) uint8_t xs[64], ys[64];
            _mm512_store_si512(xs, x);
            _mm512_store_si512(ys, y);
            while (special != 0) {
                int j = __builtin_ctzll(special);
                o[i + (size_t)j] = table[(size_t)xs[j] << 8 | ys[j]];
                special &= special - 1;
            }
        }
    }
}

ARITH_TARGET static void
arith_vbmi(const struct fp8_arith *c, const uint8_t *table, const uint8_t *a,
           const uint8_t *b, uint8_t *o, size_t n)
{
    switch (c->kind) {
    case ARITH_ADD:
        arith_loop(c, ARITH_ADD, table, a, b, o, n);
        break;
    case ARITH_SUB:
        arith_loop(c, ARITH_SUB, table, a, b, o, n);
        break;
    case ARITH_MUL:
        arith_loop(c, ARITH_MUL, table, a, b, o, n);
        break;
    case ARITH_DIV:
        arith_loop(c, ARITH_DIV, table, a, b, o, n);
        break;
    case ARITH_REM:
        arith_loop(c, ARITH_REM, table, a, b, o, n);
        break;
    case ARITH_MOD:
        arith_loop(c, ARITH_MOD, table, a, b, o, n);
        break;
    default:
        arith_loop(c, ARITH_FLOOR_DIVIDE, table, a, b, o, n);
        break;
    }
}
#endif

/* MXCSR: flush to zero, denormals are zero, the rounding mode. */
#define ARITH_CSR_MODES 0xe040u

static void
fp8_arith_run(const struct fp8_arith *c, const uint8_t *table,
              const uint8_t *a, const uint8_t *b, uint8_t *o, size_t n)
{
#if NRTEMU_X86_CLONES
    /* The scaled results of arith_round are float32 subnormals, and the
     * results must round as when the table was built: with the default
     * modes, whatever the calling thread's (the kernel's own fp8 steps
     * see no subnormal float32, and the table holds its results). */
    unsigned csr = _mm_getcsr();

    _mm_setcsr(csr & ~ARITH_CSR_MODES);
    arith_vbmi(c, table, a, b, o, n); /* c exists only with VBMI */
    _mm_setcsr(csr);
#else
    (void)c;
    lookup2(table, a, b, o, n);
#endif
}

/* The computed path of a binary op's table, when it has one: the
 * constants, checked against every pair of the table; NULL otherwise.
 * tables.lock held. */
static struct fp8_arith *
fp8_arith_get(enum nrtemu_op op, enum nrtemu_dtype compute,
              const enum nrtemu_dtype *in_dt, enum nrtemu_dtype out_dt,
              const uint8_t *table)
{
    enum nrtemu_dtype dt = out_dt;
    enum arith_kind kind;
    struct fp8_arith *c;
    uint8_t codes[256], *a, *b, *got;
    float v[256];
    int m, bias;
    bool finite, ok = true;

    if (!arith_kind_of(op, &kind) || in_dt[0] != dt || in_dt[1] != dt ||
        dt < NRTEMU_DTYPE_FLOAT8_E4M3 || dt > NRTEMU_DTYPE_FLOAT8_E3M4 ||
        (compute != dt && compute != NRTEMU_DTYPE_FLOAT32)) {
        return NULL;
    }
#if NRTEMU_X86_CLONES
    if (!nrtemu__cpu_has(NRTEMU_CPU_V4_VBMI)) {
        return NULL;
    }
#else
    return NULL;
#endif
    c = calloc(1, sizeof *c);
    a = malloc(3 * 65536);
    if (c == NULL || a == NULL) {
        free(c);
        free(a);
        return NULL;
    }
    b = a + 65536;
    got = b + 65536;
    for (int k = 0; k < 256; k++) {
        codes[k] = (uint8_t)k;
    }
    nrtemu__convert(NRTEMU_DTYPE_FLOAT32, v, dt, codes, 1, 256);
    for (int k = 0; k < 128; k++) {
        uint32_t u, neg;
        memcpy(&u, &v[k], sizeof u);
        memcpy(&neg, &v[k + 128], sizeof neg);
        /* (true of every fp8 format; the check keeps the rule honest) */
        ok = ok && (u & 0xffff) == 0 && neg == (u | 0x80000000u);
        c->hi[k] = (uint8_t)(u >> 24);
        c->lo[k] = (uint8_t)(u >> 16);
    }
    nrtemu__fp8_layout(dt, &m, &bias, &finite);
    {
        /* as FP8_STORE (convert.c): e4m3fn's infinity is its NaN */
        const uint32_t ones = (1u << (7 - m)) - 1;
        c->inf_code = finite ? (ones << m) | ((1u << m) - 1) : ones << m;
    }
    c->kind = kind;
    c->scale = (uint32_t)bias << 23;
    c->shift = 23 - (uint32_t)m;
    c->half = (1u << (c->shift - 1)) - 1;
    c->mag_mask = (1u << (31 - c->shift)) - 1;
    for (size_t i = 0; i < 65536; i++) {
        a[i] = (uint8_t)(i >> 8);
        b[i] = (uint8_t)i;
    }
    if (ok) {
        fp8_arith_run(c, table, a, b, got, 65536);
        /* the special pairs came from the table: compare the rest */
        ok = memcmp(got, table, 65536) == 0;
    }
    free(a);
    if (!ok) {
        free(c);
        return NULL;
    }
    return c;
}

/*
 * Compares, maximum and minimum of two operands of one fp8 dtype compare
 * values, which an order key per code gives without a table of pairs:
 * the rank of the code's value among the format's values (zeros of
 * either sign one rank), 255 for NaN (a format has at most 254 other
 * values).  The keys are built from the codes' float32 values; the
 * kernel compares the same values.  maximum and minimum then look up
 * what the op makes of the code they select (a diagonal table: op(x, x),
 * NaN canonical), as where does.
 */
static uint8_t keys[4][256];
static bool keys_ready[4];

/* The keys of fp8 dtype `dt`; tables.lock held. */
static const uint8_t *
keys_get(enum nrtemu_dtype dt)
{
    int f = (int)dt - (int)NRTEMU_DTYPE_FLOAT8_E4M3;
    uint8_t codes[256];
    float v[256], u[256];
    size_t m = 0;

    if (keys_ready[f]) {
        return keys[f];
    }
    for (int c = 0; c < 256; c++) {
        codes[c] = (uint8_t)c;
    }
    nrtemu__convert(NRTEMU_DTYPE_FLOAT32, v, dt, codes, 1, 256);
    /* u: the distinct values, ascending (an insertion sort of 256). */
    for (int c = 0; c < 256; c++) {
        size_t at = 0;
        if (v[c] != v[c]) {
            continue;
        }
        while (at < m && u[at] < v[c]) {
            at++;
        }
        if (at < m && u[at] == v[c]) {
            continue;
        }
        memmove(u + at + 1, u + at, (m - at) * sizeof *u);
        u[at] = v[c];
        m++;
    }
    for (int c = 0; c < 256; c++) {
        uint8_t k = 255;
        for (size_t i = 0; i < m && v[c] == v[c]; i++) {
            k = u[i] == v[c] ? (uint8_t)i : k;
        }
        keys[f][c] = k;
    }
    keys_ready[f] = true;
    return keys[f];
}

static bool
keyed(enum nrtemu_op op)
{
    switch (op) {
    case NRTEMU_OP_EQUAL:
    case NRTEMU_OP_NOT_EQUAL:
    case NRTEMU_OP_LESS:
    case NRTEMU_OP_LESS_EQUAL:
    case NRTEMU_OP_GREATER:
    case NRTEMU_OP_GREATER_EQUAL:
    case NRTEMU_OP_MAXIMUM:
    case NRTEMU_OP_MINIMUM:
        return true;
    default: /* a selector: other ops are not keyed */
        return false;
    }
}

/* Whether the keyed op takes operand a: a compare's result, or maximum's
 * and minimum's choice of a over b (NaN wins, b on ties: NRTEMU_FLOAT_MAX
 * in kernel.h). */
static inline bool
keyed_one(enum nrtemu_op op, uint8_t ka, uint8_t kb)
{
    bool na = ka == 255, nb = kb == 255;

    switch (op) {
    case NRTEMU_OP_EQUAL:
        return !na && !nb && ka == kb;
    case NRTEMU_OP_NOT_EQUAL:
        return na || nb || ka != kb;
    case NRTEMU_OP_LESS:
        return !na && !nb && ka < kb;
    case NRTEMU_OP_LESS_EQUAL:
        return !na && !nb && ka <= kb;
    case NRTEMU_OP_GREATER:
        return !na && !nb && ka > kb;
    case NRTEMU_OP_GREATER_EQUAL:
        return !na && !nb && ka >= kb;
    case NRTEMU_OP_MAXIMUM:
        return na || (!nb && ka > kb);
    case NRTEMU_OP_MINIMUM:
    default: /* (keyed() admits no other op) */
        return na || (!nb && ka < kb);
    }
}

#if NRTEMU_X86_CLONES
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static inline __m512i
lookup64(const __m512i *t, __m512i x)
{
    __m512i lo = _mm512_permutex2var_epi8(t[0], x, t[1]);
    __m512i hi = _mm512_permutex2var_epi8(t[2], x, t[3]);
    return _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi);
}

__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static void
keyed_vbmi(enum nrtemu_op op, const uint8_t *key, const uint8_t *diag,
           const uint8_t *a, const uint8_t *b, uint8_t *o, size_t n)
{
    const __m512i none = _mm512_set1_epi8((char)255);
    const __m512i one = _mm512_set1_epi8(1);
    __m512i tk[4], td[4];

    for (int q = 0; q < 4; q++) {
        tk[q] = _mm512_loadu_si512(key + 64 * q);
        td[q] = diag != NULL ? _mm512_loadu_si512(diag + 64 * q) : none;
    }
    for (size_t i = 0; i < n; i += 64) {
        __mmask64 m =
            n - i >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (n - i)) - 1;
        __m512i x = tail_load_epi8(m, a + i);
        __m512i y = tail_load_epi8(m, b + i);
        __m512i kx = lookup64(tk, x), ky = lookup64(tk, y);
        __mmask64 nx = _mm512_cmpeq_epu8_mask(kx, none);
        __mmask64 ny = _mm512_cmpeq_epu8_mask(ky, none);
        __mmask64 both = ~nx & ~ny, r;
        switch (op) {
        case NRTEMU_OP_EQUAL:
            r = both & _mm512_cmpeq_epu8_mask(kx, ky);
            break;
        case NRTEMU_OP_NOT_EQUAL:
            r = ~(both & _mm512_cmpeq_epu8_mask(kx, ky));
            break;
        case NRTEMU_OP_LESS:
            r = both & _mm512_cmplt_epu8_mask(kx, ky);
            break;
        case NRTEMU_OP_LESS_EQUAL:
            r = both & _mm512_cmple_epu8_mask(kx, ky);
            break;
        case NRTEMU_OP_GREATER:
            r = both & _mm512_cmpgt_epu8_mask(kx, ky);
            break;
        case NRTEMU_OP_GREATER_EQUAL:
            r = both & _mm512_cmpge_epu8_mask(kx, ky);
            break;
        case NRTEMU_OP_MAXIMUM:
            r = nx | (~ny & _mm512_cmpgt_epu8_mask(kx, ky));
            break;
        case NRTEMU_OP_MINIMUM:
        default: /* (keyed() admits no other op) */
            r = nx | (~ny & _mm512_cmplt_epu8_mask(kx, ky));
            break;
        }
        if (diag != NULL) {
            tail_store_epi8(o + i, m,
                            lookup64(td, _mm512_mask_blend_epi8(r, y, x)));
        } else {
            tail_store_epi8(o + i, m, _mm512_maskz_mov_epi8(r, one));
        }
    }
}

/* keyed_vbmi without VBMI, 32 a step (lookup32); returns the count done
 * (whole steps).  Bytes compare signed in AVX2, so the unsigned keys
 * compare through their minimum and maximum.  (Like lookup1_avx2, many
 * times faster than keyed_run's loop.) */
__attribute__((target("avx2"))) static size_t
keyed_avx2(enum nrtemu_op op, const uint8_t *key, const uint8_t *diag,
           const uint8_t *a, const uint8_t *b, uint8_t *o, size_t n)
{
    const __m256i none = _mm256_set1_epi8((char)255);
    const __m256i one = _mm256_set1_epi8(1);
    __m256i tk[16], td[16];
    size_t i = 0;

    lookup32_rows(tk, key);
    lookup32_rows(td, diag != NULL ? diag : key);
    for (; i + 32 <= n; i += 32) {
        __m256i x = _mm256_loadu_si256((const void *)(a + i));
        __m256i y = _mm256_loadu_si256((const void *)(b + i));
        __m256i kx = lookup32(tk, x), ky = lookup32(tk, y);
        __m256i nx = _mm256_cmpeq_epi8(kx, none);
        __m256i ny = _mm256_cmpeq_epi8(ky, none);
        __m256i both = _mm256_andnot_si256(_mm256_or_si256(nx, ny), none);
        __m256i le = _mm256_cmpeq_epi8(_mm256_min_epu8(kx, ky), kx);
        __m256i ge = _mm256_cmpeq_epi8(_mm256_max_epu8(kx, ky), kx);
        __m256i r;
        switch (op) {
        case NRTEMU_OP_EQUAL:
            r = _mm256_and_si256(both, _mm256_and_si256(le, ge));
            break;
        case NRTEMU_OP_NOT_EQUAL:
            r = _mm256_andnot_si256(
                _mm256_and_si256(both, _mm256_and_si256(le, ge)), none);
            break;
        case NRTEMU_OP_LESS:
            r = _mm256_andnot_si256(ge, both);
            break;
        case NRTEMU_OP_LESS_EQUAL:
            r = _mm256_and_si256(both, le);
            break;
        case NRTEMU_OP_GREATER:
            r = _mm256_andnot_si256(le, both);
            break;
        case NRTEMU_OP_GREATER_EQUAL:
            r = _mm256_and_si256(both, ge);
            break;
        case NRTEMU_OP_MAXIMUM: /* not ny, not le: kx > ky */
            r = _mm256_or_si256(
                nx, _mm256_andnot_si256(_mm256_or_si256(ny, le),
                                        _mm256_set1_epi8((char)-1)));
            break;
        case NRTEMU_OP_MINIMUM: /* not ny, not ge: kx < ky */
        default:                /* (keyed() admits no other op) */
            r = _mm256_or_si256(
                nx, _mm256_andnot_si256(_mm256_or_si256(ny, ge),
                                        _mm256_set1_epi8((char)-1)));
            break;
        }
        _mm256_storeu_si256((void *)(o + i),
                            diag != NULL
                                ? lookup32(td, _mm256_blendv_epi8(y, x, r))
                                : _mm256_and_si256(r, one));
    }
    return i;
}
#endif

static void
keyed_run(enum nrtemu_op op, const uint8_t *key, const uint8_t *diag,
          const uint8_t *a, const uint8_t *b, uint8_t *o, size_t n)
{
    size_t i = 0;

#if NRTEMU_X86_CLONES
    if (nrtemu__cpu_has(NRTEMU_CPU_V4_VBMI)) {
        keyed_vbmi(op, key, diag, a, b, o, n);
        return;
    }
    if (nrtemu__cpu_has(NRTEMU_CPU_V3)) {
        i = keyed_avx2(op, key, diag, a, b, o, n);
    }
#endif
    for (; i < n; i++) {
        bool r = keyed_one(op, key[a[i]], key[b[i]]);
        o[i] = diag != NULL ? diag[r ? a[i] : b[i]] : (uint8_t)r;
    }
}

/* The keyed path for these arrays, when it applies: true when done. */
static bool
keyed_try(enum nrtemu_op op, enum nrtemu_dtype compute,
          const struct nrtemu_array *out, const struct nrtemu_array *in,
          struct nrtemu_scratch *s, uint64_t count)
{
    enum nrtemu_dtype dt = in[0].dtype;
    bool select = op == NRTEMU_OP_MAXIMUM || op == NRTEMU_OP_MINIMUM;
    const uint8_t *key, *diag = NULL;

    if (!keyed(op) || in[1].dtype != dt || dt < NRTEMU_DTYPE_FLOAT8_E4M3 ||
        dt > NRTEMU_DTYPE_FLOAT8_E3M4 ||
        (compute != dt && compute != NRTEMU_DTYPE_FLOAT32 &&
         compute != NRTEMU_DTYPE_FLOAT64) ||
        (select ? out->dtype != dt || compute != dt
                : out->dtype != NRTEMU_DTYPE_BOOL)) {
        return false;
    }
    if (select) {
        const struct table *t = table_get(op, compute, &dt, dt, 3, s);
        if (t == NULL) {
            return false;
        }
        diag = t->data;
    }
    pthread_mutex_lock(&tables.lock);
    key = keys_get(dt);
    pthread_mutex_unlock(&tables.lock);
    keyed_run(op, key, diag, in[0].data, in[1].data, out->data, (size_t)count);
    return true;
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
    const struct table *t;

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
    if (count < TABLE_MIN_UNARY) {
        return false;
    }
    if (select) {
        t = table_get(op, compute, in_dt + 1, out->dtype, 3, s);
        if (t != NULL) {
            lookup1(t->data, in[0].data, in[1].data, in[2].data, out->data,
                    (size_t)count);
        }
        return t != NULL;
    }
    if (n_in == 2 && keyed_try(op, compute, out, in, s, count)) {
        return true;
    }
    /* Logical ops of two operands compute faster than a gather: truth
     * bytes and byte logic, vectorised. */
    if (n_in == 2 &&
        (count < TABLE_MIN_BINARY || op == NRTEMU_OP_LOGICAL_AND ||
         op == NRTEMU_OP_LOGICAL_OR || op == NRTEMU_OP_LOGICAL_XOR)) {
        return false;
    }
    t = table_get(op, compute, in_dt, out->dtype, n_in, s);
    if (t == NULL) {
        return false;
    }
    if (n_in == 1) {
        lookup1(t->data, NULL, in[0].data, NULL, out->data, (size_t)count);
    } else if (t->arith != NULL) {
        fp8_arith_run(t->arith, t->data, in[0].data, in[1].data, out->data,
                      (size_t)count);
    } else {
        lookup2(t->data, in[0].data, in[1].data, out->data, (size_t)count);
    }
    return true;
}

bool
nrtemu__kernel_table_computed(enum nrtemu_op op, enum nrtemu_dtype compute,
                              enum nrtemu_dtype dt)
{
    const enum nrtemu_dtype in_dt[2] = {dt, dt};
    const struct table *t = NULL;

    struct nrtemu_scratch s = {0};

    if (nrtemu__dtype_size(dt) == 1 && !keyed(op)) {
        t = table_get(op, compute, in_dt, dt, 2, &s);
    }
    nrtemu__scratch_free(&s);
    return t != NULL && t->arith != NULL;
}
