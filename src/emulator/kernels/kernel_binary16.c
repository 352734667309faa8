/*
 * kernel_binary16.c - binary ops of two float16 or bfloat16 arrays of the
 * out's shape and dtype, with AVX-512, converting in registers.
 *
 * The driver (kernel_elementwise.c) widens each block of such operands to
 * float32 in one pass, runs the float32 loop over the block, and narrows
 * the results in another: for the cheap ops (arithmetic, division-like,
 * the narrow pow) the two passes and their stores cost more than the op.
 * Here each step of 16 elements loads the codes, converts them in
 * registers (kernel_codes16.h), computes and stores codes, with the same
 * bits as the driver: the conversions are the driver's; add, sub and mul
 * are the float32 instructions themselves; mod, floor_divide and rem take
 * narrow_divmod's float32 quotients (kernel_elementwise.c, where the
 * argument for their exactness is) on steps whose every pair is
 * NARROW_DIVMOD_OK, and the float32 kernel on the others; pow is
 * kernel_math_pow.c's narrow pow (nrtemu__vmath_pow16).  On CPUs without
 * AVX-512, and in the builds without CPU dispatch, nothing applies and the
 * driver computes as before.
 */
#include <stdbool.h>
#include <stdint.h>

#include "kernels/cpu.h"
#include "kernels/kernel.h"
#include "kernels/kernel_binary16.h"
#include "kernels/kernel_codes16.h"
#include "kernels/kernel_math_vec.h"
#include "kernels/kernel_stream.h"

#if NRTEMU_X86_CLONES
/* Whether the CPU runs CODES16_TARGET code. */
static bool
b16_ready(void)
{
    return nrtemu__cpu_has(NRTEMU_CPU_V4);
}

/* The lanes where narrow_divmod's float32 quotient is exact
 * (NARROW_DIVMOD_OK, the same float32 operations). */
CODES16_TARGET static inline __attribute__((always_inline)) __mmask16
divmod16_ok(__m512 x, __m512 y)
{
    __m512 ax = _mm512_abs_ps(x), ay = _mm512_abs_ps(y);
    __mmask16 ok = _mm512_cmp_ps_mask(
        ax, _mm512_mul_ps(_mm512_set1_ps(0x1p12f), ay), _CMP_LT_OQ);

    ok &= _mm512_cmp_ps_mask(ay, _mm512_set1_ps(__builtin_inff()), _CMP_LT_OQ);
    ok &= _mm512_cmp_ps_mask(_mm512_mul_ps(ax, _mm512_set1_ps(0x1p24f)), ay,
                             _CMP_GE_OQ) |
          _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ);
    return ok;
}

/* op(x, y) on lanes that are all divmod16_ok: narrow_mod, narrow_rem and
 * floorf of the quotient (kernel_elementwise.c). */
CODES16_TARGET static inline __attribute__((always_inline)) __m512
divmod16(enum nrtemu_op op, __m512 x, __m512 y)
{
    const __m512 sign = _mm512_set1_ps(-0.0f);
    __m512 q = _mm512_div_ps(x, y);

    if (op == NRTEMU_OP_FLOOR_DIVIDE) {
        return _mm512_roundscale_ps(q,
                                    _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    }
    /* x - trunc(q) y, exact */
    __m512 r = _mm512_fnmadd_ps(
        _mm512_roundscale_ps(q, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC), y, x);
    __mmask16 zero = _mm512_cmp_ps_mask(r, _mm512_setzero_ps(), _CMP_EQ_OQ);
    if (op == NRTEMU_OP_REM) {
        /* a zero takes x's sign */
        return _mm512_mask_mov_ps(r, zero, _mm512_and_ps(x, sign));
    }
    /* mod: r + y where r and y differ in sign; a zero takes y's sign */
    __mmask16 flip = _mm512_cmp_ps_mask(r, _mm512_setzero_ps(), _CMP_LT_OQ) ^
                     _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_LT_OQ);
    __m512 t = _mm512_mask_add_ps(r, flip, r, y);
    return _mm512_mask_mov_ps(t, zero, _mm512_and_ps(y, sign));
}

/* op of 16 lanes (m of them real) of float32 values. */
CODES16_TARGET static inline __attribute__((always_inline)) __m512
binary16_lanes(enum nrtemu_op op, __m512 x, __m512 y, __mmask16 m)
{
    switch (op) {
    case NRTEMU_OP_ADD:
        return _mm512_add_ps(x, y);
    case NRTEMU_OP_SUB:
        return _mm512_sub_ps(x, y);
    case NRTEMU_OP_MUL:
        return _mm512_mul_ps(x, y);
    default: /* the division-like ops and pow (binary16_applies): below */
        break;
    }
    if ((divmod16_ok(x, y) & m) == m) {
        return divmod16(op, x, y);
    }
    /* a lane outside: the step through the float32 kernel (the lanes past
     * m are zeros, whose results are not stored) */
    float xs[16], ys[16], ts[16];
    _mm512_storeu_ps(xs, x);
    _mm512_storeu_ps(ys, y);
    nrtemu__vmath_f32_binary(op, 16, xs, false, ys, false, ts);
    return _mm512_loadu_ps(ts);
}

/* One loop per (op, dtype), the selectors constant in each. */
CODES16_TARGET static inline __attribute__((always_inline)) void
binary16_loop(enum nrtemu_op op, bool half, size_t n, const uint16_t *a,
              const uint16_t *b, uint16_t *o)
{
    size_t i = 0;

    /* two steps at a time (measured faster: more work between the
     * branches) */
    for (; i + 32 <= n; i += 32) {
        __m512 x0 = codes16_load(a + i, 0xffff, half);
        __m512 y0 = codes16_load(b + i, 0xffff, half);
        __m512 x1 = codes16_load(a + i + 16, 0xffff, half);
        __m512 y1 = codes16_load(b + i + 16, 0xffff, half);
        __m512 r0 = binary16_lanes(op, x0, y0, 0xffff);
        __m512 r1 = binary16_lanes(op, x1, y1, 0xffff);
        codes16_store(o + i, 0xffff, r0, half);
        codes16_store(o + i + 16, 0xffff, r1, half);
    }
    for (; i < n; i += 16) {
        __mmask16 m = codes16_mask(n - i);
        __m512 x = codes16_load(a + i, m, half);
        __m512 y = codes16_load(b + i, m, half);
        codes16_store(o + i, m, binary16_lanes(op, x, y, m), half);
    }
}

#define BINARY16_LOOPS(X) \
    X(add, NRTEMU_OP_ADD) \
    X(sub, NRTEMU_OP_SUB) \
    X(mul, NRTEMU_OP_MUL) \
    X(mod, NRTEMU_OP_MOD) \
    X(rem, NRTEMU_OP_REM) \
    X(floor_divide, NRTEMU_OP_FLOOR_DIVIDE)

#define BINARY16_DEFINE(NAME, OP)                                          \
    CODES16_TARGET static void NAME##_f16(size_t n, const uint16_t *a,     \
                                          const uint16_t *b, uint16_t *o)  \
    {                                                                      \
        binary16_loop(OP, true, n, a, b, o);                               \
    }                                                                      \
    CODES16_TARGET static void NAME##_bf16(size_t n, const uint16_t *a,    \
                                           const uint16_t *b, uint16_t *o) \
    {                                                                      \
        binary16_loop(OP, false, n, a, b, o);                              \
    }
BINARY16_LOOPS(BINARY16_DEFINE)
#undef BINARY16_DEFINE

typedef void binary16_fn(size_t n, const uint16_t *a, const uint16_t *b,
                         uint16_t *o);

/* The loop of op on dt, or NULL. */
static binary16_fn *
binary16_find(enum nrtemu_op op, enum nrtemu_dtype dt)
{
    bool half = dt == NRTEMU_DTYPE_FLOAT16;

    switch (op) {
#define BINARY16_CASE(NAME, OP) \
    case OP:                    \
        return half ? NAME##_f16 : NAME##_bf16;
        BINARY16_LOOPS(BINARY16_CASE)
#undef BINARY16_CASE
    default: /* a selector: no loop of this file */
        return NULL;
    }
}
#endif

/* Whether op on dt is one of this file's: the division-like ops and pow
 * of both dtypes; add, sub and mul of float16 (bfloat16's, whose
 * conversions are shifts, vectorise in the driver already). */
static bool
binary16_applies(enum nrtemu_op op, enum nrtemu_dtype dt)
{
    switch (op) {
    case NRTEMU_OP_MOD:
    case NRTEMU_OP_FLOOR_DIVIDE:
    case NRTEMU_OP_REM:
    case NRTEMU_OP_POW:
        return dt == NRTEMU_DTYPE_FLOAT16 || dt == NRTEMU_DTYPE_BFLOAT16;
    case NRTEMU_OP_ADD:
    case NRTEMU_OP_SUB:
    case NRTEMU_OP_MUL:
        return dt == NRTEMU_DTYPE_FLOAT16;
    default: /* a selector: other ops take the driver's path */
        return false;
    }
}

/* op over n elements into o; false, nothing written, where this CPU or
 * build has no such loop. */
static bool
binary16_block(enum nrtemu_op op, enum nrtemu_dtype dt, size_t n,
               const uint16_t *a, const uint16_t *b, uint16_t *o)
{
    if (op == NRTEMU_OP_POW) {
        return nrtemu__vmath_pow16(n, a, b, o, dt);
    }
#if NRTEMU_X86_CLONES
    if (b16_ready()) {
        binary16_fn *fn = binary16_find(op, dt);
        if (fn != NULL) {
            fn(n, a, b, o);
            return true;
        }
    }
#endif
    (void)n, (void)a, (void)b, (void)o;
    return false;
}

/* kstream_parts's call of binary16_block. */
struct binary16_args {
    enum nrtemu_op op;
    enum nrtemu_dtype dt;
    const uint16_t *a, *b;
};

static bool
binary16_part(const void *ctx, size_t at, size_t count, void *dst)
{
    const struct binary16_args *g = ctx;

    return binary16_block(g->op, g->dt, count, g->a + at, g->b + at, dst);
}

bool
nrtemu__kernel_binary16_run(enum nrtemu_op op, enum nrtemu_dtype compute,
                            const struct nrtemu_array *out,
                            const struct nrtemu_array *in, int n_in,
                            bool stream)
{
    struct binary16_args g = {op, compute, NULL, NULL};

    if (n_in != 2 || !binary16_applies(op, compute) || out->dtype != compute) {
        return false;
    }
    if (!nrtemu__arrays_match(out, in, 2, compute)) {
        return false;
    }
    g.a = in[0].data;
    g.b = in[1].data;
    return kstream_parts(binary16_part, &g, out->data,
                         (size_t)nrtemu__array_count(out), sizeof(uint16_t),
                         stream);
}
