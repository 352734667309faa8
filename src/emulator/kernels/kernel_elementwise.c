/*
 * kernel_elementwise.c - elementwise ops with NumPy broadcasting.
 *
 * The driver walks the broadcast shape (kernel_iter.h) and hands the
 * innermost run, in blocks, to a loop specialised for the op and the
 * compute type.  An operand that already has the compute type and is
 * contiguous or a scalar along that run is read in place; any other is
 * first converted into a block of scratch.  Results go straight to the
 * output when it has the compute type, else through scratch and one
 * conversion.  So float32 chains, scalar and row broadcasts run as plain
 * loops over memory that GCC vectorises, and every other dtype mix costs
 * one conversion per operand.
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/convert.h"
#include "kernels/kernel.h"
#include "kernels/kernel_binary16.h"
#include "kernels/kernel_elementwise.h"
#include "kernels/kernel_iter.h"
#include "kernels/kernel_math.h"
#include "kernels/kernel_math_vec.h"
#include "kernels/kernel_stream.h"
#include "kernels/kernel_table.h"
#include "kernels/kernel_where.h"
#include "kernels/simd.h"

/* The loop family of each op, from its row of NRTEMU_OP_LIST. */
static const unsigned char op_class[NRTEMU_OP_COUNT] = {
#define OP_CLASS(suffix, name, arity, cls, check, run, cost, attrs, flags) \
    [NRTEMU_OP_##suffix] = NRTEMU_OPC_##cls,
    NRTEMU_OP_LIST(OP_CLASS)
#undef OP_CLASS
};

/* Elements per block: the blocks of all operands stay in L1/L2. */
#define BLOCK 1024

/* Whether logical_truth() does `op` on these arrays. */
static bool
logical_truth_applies(enum nrtemu_op op, const struct nrtemu_array *out,
                      const struct nrtemu_array *in, int n_in)
{
    size_t size = nrtemu__dtype_size(in[0].dtype);

    if ((enum nrtemu_op_class)op_class[op] != NRTEMU_OPC_LOGICAL ||
        out->dtype != NRTEMU_DTYPE_BOOL || (size != 4 && size != 8) ||
        n_in != (op == NRTEMU_OP_LOGICAL_NOT ? 1 : 2)) {
        return false;
    }
    return nrtemu__arrays_match(out, in, n_in, in[0].dtype);
}

enum nrtemu_dtype
nrtemu__kernel_dtype(enum nrtemu_dtype dt)
{
    if (dt == NRTEMU_DTYPE_FLOAT64) {
        return NRTEMU_DTYPE_FLOAT64;
    }
    if (nrtemu__dtype_is_float(dt)) {
        return NRTEMU_DTYPE_FLOAT32;
    }
    if (nrtemu__dtype_is_unsigned_int(dt)) {
        return NRTEMU_DTYPE_UINT64;
    }
    return NRTEMU_DTYPE_INT64;
}

/* How the driver reads one operand. */
struct operand {
    const char *base;
    enum nrtemu_dtype dtype;   /* as stored */
    enum nrtemu_dtype compute; /* the op's compute dtype */
    enum nrtemu_dtype load;    /* what the loop reads: kernel dtype or bool */
    size_t size;               /* bytes per stored element */
    bool direct;               /* read in place when the run allows it */
    bool two_step;             /* round to the compute dtype on the way */
    void *block;               /* scratch for a converted block */
};

static void
operand_init(struct operand *op, const struct nrtemu_array *a,
             enum nrtemu_dtype compute, enum nrtemu_dtype load)
{
    op->base = a->data;
    op->dtype = a->dtype;
    op->compute = compute;
    op->load = load;
    op->size = nrtemu__dtype_size(a->dtype);
    op->direct =
        a->dtype == load && (load == NRTEMU_DTYPE_BOOL || compute == load);
    /* NumPy casts an operand to the compute dtype first: a float32
     * operand of a float16 op is rounded to float16.  Widening from the
     * compute dtype to the load type is exact. */
    op->two_step = !op->direct && load != NRTEMU_DTYPE_BOOL &&
                   a->dtype != compute && compute != load;
}

/*
 * Pointer to the run of `len` elements of `op` at element offset `off`
 * with stride `stride`, in its load type.  `*scalar` is set when one
 * element stands for all (the loops hoist it); `materialize` asks for
 * `len` real elements even then.  `tmp` holds BLOCK wide elements.
 */
static const void *
operand_block(const struct operand *op, ptrdiff_t off, ptrdiff_t stride,
              size_t len, bool materialize, void *tmp, bool *scalar)
{
    const char *src = op->base + off * (ptrdiff_t)op->size;
    size_t count;

    *scalar = stride == 0 && !materialize;
    if (op->direct && (stride == 1 || *scalar)) {
        return src;
    }
    count = *scalar ? 1 : len;
    if (op->two_step) {
        nrtemu__convert(op->compute, tmp, op->dtype, src, stride, count);
        nrtemu__convert(op->load, op->block, op->compute, tmp, 1, count);
    } else {
        nrtemu__convert(op->load, op->block, op->dtype, src, stride, count);
    }
    return op->block;
}

/* Run one block through the loop of `op`: the float rules for a float
 * kernel type, the integer and bit rules for the rest. */
static void
run_block(enum nrtemu_op op, enum nrtemu_op_class cls, enum nrtemu_dtype kt,
          enum nrtemu_dtype compute, size_t n, const void *const *in,
          const bool *scalar, void *out)
{
    bool float_rule =
        (kt == NRTEMU_DTYPE_FLOAT32 || kt == NRTEMU_DTYPE_FLOAT64) &&
        (cls == NRTEMU_OPC_UNARY || cls == NRTEMU_OPC_BINARY ||
         cls == NRTEMU_OPC_COMPARE || cls == NRTEMU_OPC_TEST);

    if (float_rule) {
        nrtemu__ew_float_block(op, cls, kt, compute, n, in, scalar, out);
    } else {
        nrtemu__ew_int_block(op, cls, kt, compute, n, in, scalar, out);
    }
}

/* cast, copy: one conversion per run, straight into the output (a copy
 * to be streamed: through kstream_copy). */
__attribute__((noinline)) static void
convert_driver(const struct nrtemu_array *out, const struct nrtemu_array *in,
               bool stream)
{
    struct kiter it;
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    ptrdiff_t off[2] = {0, 0};
    size_t in_size = nrtemu__dtype_size(in->dtype);
    size_t out_size = nrtemu__dtype_size(out->dtype);
    uint64_t outer;
    size_t len;

    kiter_init(&it, out->ndim, out->shape, 2);
    kiter_broadcast(&it, 0, in->ndim, in->shape);
    kiter_broadcast(&it, 1, out->ndim, out->shape);
    kiter_collapse(&it);
    outer = kiter_outer_count(&it);
    len = it.shape[it.ndim - 1];
    stream = stream && in->dtype == out->dtype &&
             in->dtype != NRTEMU_DTYPE_BOOL && it.stride[0][it.ndim - 1] == 1;
    for (uint64_t o = 0; o < outer; o++) {
        char *dst = (char *)out->data + off[1] * out_size;
        const char *src = (const char *)in->data + off[0] * (ptrdiff_t)in_size;
        if (stream) {
            kstream_copy(dst, src, len * out_size);
        } else {
            nrtemu__convert(out->dtype, dst, in->dtype, src,
                            it.stride[0][it.ndim - 1], len);
        }
        kiter_next(&it, idx, off);
    }
    if (stream) {
        kstream_fence();
    }
}

/*
 * neg and abs of a float of 8 or 16 bits (float16, bfloat16, the fp8
 * formats) are its sign bit flipped or cleared, NaN and zeros included:
 * that is what NumPy (float16) and ml_dtypes (bfloat16, fp8) compute, bit
 * for bit, and it runs at copy speed, where the float32 round trip costs
 * two conversions and canonicalises NaN payloads.  `keep` masks each code,
 * `flip` is then xor-ed in.
 */
#define DEFINE_SIGN_BITS(SFX, T)                                              \
    NRTEMU_MULTIVERSION                                                       \
    static void SFX##_sign_bits(size_t n, const T *a, ptrdiff_t stride, T *o, \
                                T keep, T flip)                               \
    {                                                                         \
        if (stride == 1) {                                                    \
            for (size_t i = 0; i < n; i++) {                                  \
                o[i] = (T)((a[i] & keep) ^ flip);                             \
            }                                                                 \
        } else {                                                              \
            for (size_t i = 0; i < n; i++) {                                  \
                o[i] = (T)((a[(ptrdiff_t)i * stride] & keep) ^ flip);         \
            }                                                                 \
        }                                                                     \
    }

DEFINE_SIGN_BITS(u8, uint8_t)
DEFINE_SIGN_BITS(u16, uint16_t)

/* Whether sign_driver() does `op` on these arrays: the operand, the
 * output and the compute dtype all one small float type. */
static bool
sign_op_applies(enum nrtemu_op op, enum nrtemu_dtype compute,
                const struct nrtemu_array *out, const struct nrtemu_array *in)
{
    return (op == NRTEMU_OP_NEG || op == NRTEMU_OP_ABS) &&
           nrtemu__dtype_is_float(compute) &&
           nrtemu__dtype_size(compute) <= 2 && in->dtype == compute &&
           out->dtype == compute;
}

static void
sign_driver(enum nrtemu_op op, const struct nrtemu_array *out,
            const struct nrtemu_array *in)
{
    struct kiter it;
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    ptrdiff_t off[2] = {0, 0};
    size_t size = nrtemu__dtype_size(out->dtype);
    bool neg = op == NRTEMU_OP_NEG;
    uint64_t outer;
    size_t len;
    ptrdiff_t stride;

    kiter_init(&it, out->ndim, out->shape, 2);
    kiter_broadcast(&it, 0, in->ndim, in->shape);
    kiter_broadcast(&it, 1, out->ndim, out->shape);
    kiter_collapse(&it);
    outer = kiter_outer_count(&it);
    len = it.shape[it.ndim - 1];
    stride = it.stride[0][it.ndim - 1];
    for (uint64_t o = 0; o < outer; o++) {
        if (size == 1) {
            u8_sign_bits(len, (const uint8_t *)in->data + off[0], stride,
                         (uint8_t *)out->data + off[1], neg ? 0xffu : 0x7fu,
                         neg ? 0x80u : 0u);
        } else {
            u16_sign_bits(len, (const uint16_t *)in->data + off[0], stride,
                          (uint16_t *)out->data + off[1],
                          neg ? 0xffffu : 0x7fffu, neg ? 0x8000u : 0u);
        }
        kiter_next(&it, idx, off);
    }
}

/* Whether an elementwise op over these arrays streams its result
 * (kernel_stream.h). */
bool
nrtemu__kernel_stream_wanted(const struct nrtemu_array *out,
                             const struct nrtemu_array *in, int n_in)
{
    uint64_t out_bytes =
        nrtemu__array_count(out) * nrtemu__dtype_size(out->dtype);
    uint64_t bytes = out_bytes;

    for (int k = 0; k < n_in; k++) {
        bytes += nrtemu__array_count(&in[k]) * nrtemu__dtype_size(in[k].dtype);
    }
    return kstream_wanted(bytes, out_bytes);
}

/*
 * A unary op of kernel_math_vec.h's over int32 operands in float64 (sin,
 * cos, gelu, log1p, cbrt, exp, log, expm1, tanh, sigmoid) into a float64
 * out: one call per contiguous run, converting in its vector loop (no
 * block of scratch, no block-sized calls).  False, nothing written, where
 * that does not apply: then the blocks of the driver.  `it`: the driver's
 * iterator over out and in.
 */
static bool
i32_f64_runs(enum nrtemu_op op, enum nrtemu_op_class cls,
             enum nrtemu_dtype compute, const struct nrtemu_array *out,
             const struct nrtemu_array *in, const struct kiter *it,
             uint64_t outer, size_t len, bool stream)
{
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    ptrdiff_t off[KITER_MAX_OPS] = {0};
    const char *ib = in[0].data, *ob = out->data;
    size_t in_bytes = nrtemu__array_count(&in[0]) * sizeof(int32_t);
    size_t out_bytes = nrtemu__array_count(out) * sizeof(double);

    if (cls != NRTEMU_OPC_UNARY || compute != NRTEMU_DTYPE_FLOAT64 ||
        in[0].dtype != NRTEMU_DTYPE_INT32 ||
        out->dtype != NRTEMU_DTYPE_FLOAT64 ||
        it->stride[0][it->ndim - 1] != 1 ||
        !(ob + out_bytes <= ib || ib + in_bytes <= ob)) {
        return false;
    }
    for (uint64_t o = 0; o < outer; o++) {
        if (!nrtemu__vmath_i32_f64_unary(
                op, len, (const int32_t *)in[0].data + off[0],
                (double *)out->data + off[1], stream)) {
            return false; /* (at the first run: not one of these ops) */
        }
        kiter_next(it, idx, off);
    }
    if (stream) {
        kstream_fence();
    }
    return true;
}

/*
 * float32 unary and binary ops of float32 arrays whose runs are dense (or,
 * for one operand of a binary op, one element), and where of a bool
 * condition and float32 values (any of them one element): the loop on
 * each run, as the driver below would call it with no conversion, less
 * the driver's setup (a fused chain calls this on every block of a few
 * thousand elements) and, for where, its materialising of operands of
 * one element.  False, nothing written, where that does not apply.
 */
static bool
f32_runs(enum nrtemu_op op, enum nrtemu_op_class cls,
         enum nrtemu_dtype compute, const struct nrtemu_array *out,
         const struct nrtemu_array *in, int n_in, bool stream)
{
    struct kiter it;
    ptrdiff_t st[3] = {1, 1, 1};
    uint64_t outer;
    size_t len;
    int last;

    if (stream || compute != NRTEMU_DTYPE_FLOAT32 ||
        out->dtype != NRTEMU_DTYPE_FLOAT32 ||
        !((cls == NRTEMU_OPC_UNARY && n_in == 1) ||
          (cls == NRTEMU_OPC_BINARY && n_in == 2) ||
          (cls == NRTEMU_OPC_WHERE && n_in == 3 &&
           in[0].dtype == NRTEMU_DTYPE_BOOL))) {
        return false;
    }
    for (int k = cls == NRTEMU_OPC_WHERE ? 1 : 0; k < n_in; k++) {
        if (in[k].dtype != NRTEMU_DTYPE_FLOAT32) {
            return false;
        }
    }
    kiter_init(&it, out->ndim, out->shape, n_in + 1);
    for (int k = 0; k < n_in; k++) {
        kiter_broadcast(&it, k, in[k].ndim, in[k].shape);
    }
    kiter_broadcast(&it, n_in, out->ndim, out->shape);
    kiter_collapse(&it);
    last = it.ndim - 1;
    if (it.stride[n_in][last] != 1) {
        return false;
    }
    for (int k = 0; k < n_in; k++) {
        st[k] = it.stride[k][last];
        if (st[k] != 1 && (st[k] != 0 || cls == NRTEMU_OPC_UNARY)) {
            return false;
        }
    }
    if (cls == NRTEMU_OPC_BINARY && st[0] == 0 && st[1] == 0) {
        return false; /* the driver materialises one of them */
    }
    outer = kiter_outer_count(&it);
    len = it.shape[last];
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    ptrdiff_t off[KITER_MAX_OPS] = {0};
    for (uint64_t o = 0; o < outer; o++) {
        float *dst = (float *)out->data + off[n_in];
        if (cls == NRTEMU_OPC_WHERE) {
            nrtemu__ew_where32_runs(
                len, (const uint8_t *)in[0].data + off[0], st[0] == 0,
                (const uint32_t *)in[1].data + off[1], st[1] == 0,
                (const uint32_t *)in[2].data + off[2], st[2] == 0,
                (uint32_t *)dst);
        } else if (cls == NRTEMU_OPC_UNARY) {
            nrtemu__ew_f32_unary(op, len, (const float *)in[0].data + off[0],
                                 dst);
        } else {
            nrtemu__ew_f32_binary(
                op, len, (const float *)in[0].data + off[0], st[0] == 0,
                (const float *)in[1].data + off[1], st[1] == 0, dst);
        }
        kiter_next(&it, idx, off);
    }
    return true;
}

NRT_STATUS
nrtemu__kernel_elementwise(enum nrtemu_op op, enum nrtemu_dtype compute,
                           const struct nrtemu_array *out,
                           const struct nrtemu_array *in, int n_in,
                           struct nrtemu_scratch *s)
{
    return nrtemu__kernel_elementwise_part(
        op, compute, out, in, n_in, s,
        nrtemu__kernel_stream_wanted(out, in, n_in));
}

/* Every other op: the special cases' kernels, else conversions into
 * blocks around the op's loop.  Out of line, so that the common cases
 * above do not pay for its frame. */
__attribute__((noinline)) static NRT_STATUS
elementwise_general(enum nrtemu_op op, enum nrtemu_op_class cls,
                    enum nrtemu_dtype compute, const struct nrtemu_array *out,
                    const struct nrtemu_array *in, int n_in,
                    struct nrtemu_scratch *s, bool stream);

NRT_STATUS
nrtemu__kernel_elementwise_part(enum nrtemu_op op, enum nrtemu_dtype compute,
                                const struct nrtemu_array *out,
                                const struct nrtemu_array *in, int n_in,
                                struct nrtemu_scratch *s, bool stream)
{
    enum nrtemu_op_class cls = (enum nrtemu_op_class)op_class[op];

    if (nrtemu__array_count(out) == 0) {
        return NRT_SUCCESS;
    }
    if (cls == NRTEMU_OPC_CONVERT) {
        convert_driver(out, &in[0], stream);
        return NRT_SUCCESS;
    }
    if (f32_runs(op, cls, compute, out, in, n_in, stream)) {
        return NRT_SUCCESS;
    }
    return elementwise_general(op, cls, compute, out, in, n_in, s, stream);
}

static NRT_STATUS
elementwise_general(enum nrtemu_op op, enum nrtemu_op_class cls,
                    enum nrtemu_dtype compute, const struct nrtemu_array *out,
                    const struct nrtemu_array *in, int n_in,
                    struct nrtemu_scratch *s, bool stream)
{
    enum nrtemu_dtype kt = nrtemu__kernel_dtype(compute);
    enum nrtemu_dtype rt; /* what the loop writes */
    struct operand ops[3];
    struct kiter it;
    uint64_t idx[NRTEMU_MAX_DIMS] = {0};
    ptrdiff_t off[KITER_MAX_OPS] = {0};
    size_t out_size = nrtemu__dtype_size(out->dtype);
    bool out_direct, out_two_step;
    char *scratch, *out_block, *tmp;
    uint64_t outer;
    size_t len, block;
    int n_scalar;

    if (cls == NRTEMU_OPC_TEST && !nrtemu__dtype_is_float(in[0].dtype) &&
        out->dtype == NRTEMU_DTYPE_BOOL) {
        /* Every integer (and bool) converts to a finite float. */
        memset(out->data, 1, (size_t)nrtemu__array_count(out));
        return NRT_SUCCESS;
    }
    if (logical_truth_applies(op, out, in, n_in)) {
        nrtemu__ew_logical_truth(op, in[0].dtype,
                                 (size_t)nrtemu__array_count(out), in[0].data,
                                 n_in > 1 ? in[1].data : NULL, out->data);
        return NRT_SUCCESS;
    }
    if (sign_op_applies(op, compute, out, &in[0])) {
        sign_driver(op, out, &in[0]);
        return NRT_SUCCESS;
    }
    if (nrtemu__kernel_binary16_run(op, compute, out, in, n_in, stream) ||
        nrtemu__ew_bf16_divmod_run(op, compute, out, in, n_in, stream) ||
        nrtemu__kernel_round16_run(op, compute, out, in, n_in, stream) ||
        nrtemu__kernel_where_run(op, compute, out, in, n_in, stream) ||
        nrtemu__kernel_table_run(op, compute, out, in, n_in, s) ||
        nrtemu__kernel_table16_run(op, compute, out, in, n_in, s, stream)) {
        return NRT_SUCCESS;
    }
    if (compute == NRTEMU_DTYPE_INT32 && nrtemu__ew_i32_native(op)) {
        kt = NRTEMU_DTYPE_INT32;
    }
    rt = (cls == NRTEMU_OPC_COMPARE || cls == NRTEMU_OPC_LOGICAL ||
          cls == NRTEMU_OPC_TEST)
             ? NRTEMU_DTYPE_BOOL
             : kt;
    /* One block per operand, one for the result, one for two-step
     * conversions; 8 bytes covers every load type. */
    scratch = nrtemu__scratch_get(s, (size_t)(n_in + 2) * BLOCK * 8);
    if (scratch == NULL) {
        return NRT_RESOURCE;
    }
    for (int k = 0; k < n_in; k++) {
        enum nrtemu_dtype load = kt;
        if (cls == NRTEMU_OPC_LOGICAL || (cls == NRTEMU_OPC_WHERE && k == 0)) {
            load = NRTEMU_DTYPE_BOOL;
        }
        operand_init(&ops[k], &in[k], compute, load);
        ops[k].block = scratch + (size_t)k * BLOCK * 8;
    }
    out_block = scratch + (size_t)n_in * BLOCK * 8;
    tmp = out_block + BLOCK * 8;
    out_direct =
        out->dtype == rt && (rt == NRTEMU_DTYPE_BOOL || compute == rt);
    out_two_step = !out_direct && rt != NRTEMU_DTYPE_BOOL &&
                   out->dtype != compute && compute != rt;

    kiter_init(&it, out->ndim, out->shape, n_in + 1);
    for (int k = 0; k < n_in; k++) {
        kiter_broadcast(&it, k, in[k].ndim, in[k].shape);
    }
    kiter_broadcast(&it, n_in, out->ndim, out->shape);
    kiter_collapse(&it);
    outer = kiter_outer_count(&it);
    len = it.shape[it.ndim - 1];

    /* Operands that are one element along the run: a binary loop takes
     * one of them as a scalar, the others are materialised. */
    n_scalar = 0;
    for (int k = 0; k < n_in; k++) {
        n_scalar += it.stride[k][it.ndim - 1] == 0;
    }
    /* Without conversions the whole run is one loop. */
    block = len;
    for (int k = 0; k < n_in; k++) {
        ptrdiff_t st = it.stride[k][it.ndim - 1];
        if (!ops[k].direct || st > 1 || st < 0 ||
            (st == 0 && (cls == NRTEMU_OPC_UNARY || cls == NRTEMU_OPC_WHERE ||
                         n_in == 1))) {
            block = BLOCK;
        }
    }
    if (!out_direct || n_scalar == n_in) {
        block = BLOCK;
    }
    /* Results to stream: a block computed into cache, then copied out. */
    stream = stream && out_direct;
    if (stream && block > KSTREAM_BLOCK / out_size) {
        block = KSTREAM_BLOCK / out_size;
    }

    if (i32_f64_runs(op, cls, compute, out, in, &it, outer, len, stream)) {
        return NRT_SUCCESS;
    }
    for (uint64_t o = 0; o < outer; o++) {
        for (size_t j = 0; j < len; j += block) {
            size_t n = len - j < block ? len - j : block;
            const void *ptr[3];
            bool scalar[3] = {false, false, false};
            char *dst = (char *)out->data +
                        (off[n_in] + (ptrdiff_t)j) * (ptrdiff_t)out_size;
            void *res;

            for (int k = 0; k < n_in; k++) {
                ptrdiff_t st = it.stride[k][it.ndim - 1];
                /* Only binary loops take a scalar, and only one. */
                bool materialize = cls == NRTEMU_OPC_UNARY ||
                                   cls == NRTEMU_OPC_WHERE || n_in == 1 ||
                                   (n_scalar == n_in && k == 0);
                ptr[k] = operand_block(&ops[k], off[k] + (ptrdiff_t)j * st, st,
                                       n, materialize, tmp, &scalar[k]);
            }
            res = out_direct && !stream ? (void *)dst : (void *)out_block;
            run_block(op, cls, kt, compute, n, ptr, scalar, res);
            if (stream) {
                kstream_copy(dst, out_block, n * out_size);
            } else if (!out_direct) {
                if (out_two_step) {
                    nrtemu__convert(compute, tmp, rt, out_block, 1, n);
                    nrtemu__convert(out->dtype, dst, compute, tmp, 1, n);
                } else {
                    nrtemu__convert(out->dtype, dst, rt, out_block, 1, n);
                }
            }
        }
        kiter_next(&it, idx, off);
    }
    if (stream) {
        kstream_fence();
    }
    return NRT_SUCCESS;
}
