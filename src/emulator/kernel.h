/*
 * kernel.h - the operations of emulator programs, and their kernels
 * (internal).
 *
 * program.c validates an op against docs/neff-emulator-format.md §3 and
 * then calls one of the kernels below; the kernels trust their arguments
 * (shapes agree, axes are in range, dtypes are allowed for the op).
 * Arrays are dense and C-ordered.  Kernels compute in one of four types
 * (float32, float64, int64, uint64: see kernel_compute_dtype()), loading
 * operands into it and rounding or wrapping results once when stored.
 */
#ifndef NRTEMU_KERNEL_H
#define NRTEMU_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

#include "dtype.h"
#include "neff.h"

/* What an op is, for validation and dispatch. */
enum nrtemu_op_class {
    NRTEMU_OPC_UNARY,   /* elementwise, one operand */
    NRTEMU_OPC_BINARY,  /* elementwise, two operands */
    NRTEMU_OPC_COMPARE, /* elementwise, two operands, bool result */
    NRTEMU_OPC_LOGICAL, /* elementwise on truth values, bool result */
    NRTEMU_OPC_WHERE,
    NRTEMU_OPC_CAST,
    NRTEMU_OPC_COPY,
    NRTEMU_OPC_MATMUL,
    NRTEMU_OPC_REDUCE,
    NRTEMU_OPC_ARGREDUCE,
    NRTEMU_OPC_SOFTMAX,
    NRTEMU_OPC_TRANSPOSE,
    NRTEMU_OPC_RESHAPE,
    NRTEMU_OPC_BROADCAST,
    NRTEMU_OPC_CONCATENATE,
    NRTEMU_OPC_SLICE,
    NRTEMU_OPC_TAKE,
    NRTEMU_OPC_IOTA,
    NRTEMU_OPC_FULL,
};

/* X(suffix, name, operand count (-1: one or more), class) */
#define NRTEMU_OP_LIST(X)                          \
    X(NEG, "neg", 1, UNARY)                        \
    X(ABS, "abs", 1, UNARY)                        \
    X(EXP, "exp", 1, UNARY)                        \
    X(LOG, "log", 1, UNARY)                        \
    X(SQRT, "sqrt", 1, UNARY)                      \
    X(RSQRT, "rsqrt", 1, UNARY)                    \
    X(RECIPROCAL, "reciprocal", 1, UNARY)          \
    X(SQUARE, "square", 1, UNARY)                  \
    X(TANH, "tanh", 1, UNARY)                      \
    X(SIGMOID, "sigmoid", 1, UNARY)                \
    X(RELU, "relu", 1, UNARY)                      \
    X(GELU, "gelu", 1, UNARY)                      \
    X(SIN, "sin", 1, UNARY)                        \
    X(COS, "cos", 1, UNARY)                        \
    X(FLOOR, "floor", 1, UNARY)                    \
    X(CEIL, "ceil", 1, UNARY)                      \
    X(SIGN, "sign", 1, UNARY)                      \
    X(LOGICAL_NOT, "logical_not", 1, LOGICAL)      \
    X(ADD, "add", 2, BINARY)                       \
    X(SUB, "sub", 2, BINARY)                       \
    X(MUL, "mul", 2, BINARY)                       \
    X(DIV, "div", 2, BINARY)                       \
    X(POW, "pow", 2, BINARY)                       \
    X(MAXIMUM, "maximum", 2, BINARY)               \
    X(MINIMUM, "minimum", 2, BINARY)               \
    X(MOD, "mod", 2, BINARY)                       \
    X(FLOOR_DIVIDE, "floor_divide", 2, BINARY)     \
    X(EQUAL, "equal", 2, COMPARE)                  \
    X(NOT_EQUAL, "not_equal", 2, COMPARE)          \
    X(LESS, "less", 2, COMPARE)                    \
    X(LESS_EQUAL, "less_equal", 2, COMPARE)        \
    X(GREATER, "greater", 2, COMPARE)              \
    X(GREATER_EQUAL, "greater_equal", 2, COMPARE)  \
    X(LOGICAL_AND, "logical_and", 2, LOGICAL)      \
    X(LOGICAL_OR, "logical_or", 2, LOGICAL)        \
    X(LOGICAL_XOR, "logical_xor", 2, LOGICAL)      \
    X(WHERE, "where", 3, WHERE)                    \
    X(CAST, "cast", 1, CAST)                       \
    X(COPY, "copy", 1, COPY)                       \
    X(MATMUL, "matmul", 2, MATMUL)                 \
    X(SUM, "sum", 1, REDUCE)                       \
    X(MEAN, "mean", 1, REDUCE)                     \
    X(MAX, "max", 1, REDUCE)                       \
    X(MIN, "min", 1, REDUCE)                       \
    X(PROD, "prod", 1, REDUCE)                     \
    X(ARGMAX, "argmax", 1, ARGREDUCE)              \
    X(ARGMIN, "argmin", 1, ARGREDUCE)              \
    X(SOFTMAX, "softmax", 1, SOFTMAX)              \
    X(TRANSPOSE, "transpose", 1, TRANSPOSE)        \
    X(RESHAPE, "reshape", 1, RESHAPE)              \
    X(BROADCAST_TO, "broadcast_to", 1, BROADCAST)  \
    X(CONCATENATE, "concatenate", -1, CONCATENATE) \
    X(SLICE, "slice", 1, SLICE)                    \
    X(TAKE, "take", 2, TAKE)                       \
    X(IOTA, "iota", 0, IOTA)                       \
    X(FULL, "full", 0, FULL)

enum nrtemu_op {
#define NRTEMU_OP_ENUM(suffix, name, arity, cls) NRTEMU_OP_##suffix,
    NRTEMU_OP_LIST(NRTEMU_OP_ENUM)
#undef NRTEMU_OP_ENUM
        NRTEMU_OP_COUNT
};

/* By name; false when unknown. */
bool nrtemu__op_from_name(const char *name, enum nrtemu_op *out);
const char *nrtemu__op_name(enum nrtemu_op op);
/* Operand count; -1 for "one or more". */
int nrtemu__op_arity(enum nrtemu_op op);
enum nrtemu_op_class nrtemu__op_class(enum nrtemu_op op);
/*
 * True for ops that read each operand element at the index they write
 * (elementwise ops, cast, copy, reshape), so their out may be one of their
 * operands; the others must compute into scratch when it is.
 */
bool nrtemu__op_streams(enum nrtemu_op op);
/* Unary ops defined only on floats (exp, log, sqrt, tanh, ...). */
bool nrtemu__op_float_only(enum nrtemu_op op);

/*
 * The type a kernel computes in for compute dtype `dt`: float32 for floats
 * of at most 32 bits, float64, int64 for signed integers and bool, uint64
 * for unsigned integers.
 */
enum nrtemu_dtype nrtemu__kernel_dtype(enum nrtemu_dtype dt);

/* A dense, C-ordered array.  `ndim` 0 is a scalar (one element). */
struct nrtemu_array {
    void *data;
    enum nrtemu_dtype dtype;
    uint32_t ndim;
    uint64_t shape[NRTEMU_MAX_DIMS];
};

uint64_t nrtemu__array_count(const struct nrtemu_array *a);

/*
 * Scratch memory of a program, reused by its ops (which run one at a
 * time).  nrtemu__scratch_get() returns at least `size` bytes, 64-byte
 * aligned, with undefined contents, valid until the next call; NULL when
 * memory runs out.
 */
struct nrtemu_scratch {
    void *data;
    size_t size;
};

void *nrtemu__scratch_get(struct nrtemu_scratch *s, size_t size);
void nrtemu__scratch_free(struct nrtemu_scratch *s);

/*
 * The elements of `in` as type `kt` (the kernel dtype of `compute`),
 * converted into `buf` (room for all of them), through `compute` first
 * when that is narrower than `kt` (NumPy casts operands to the compute
 * dtype).  Returns buf.
 */
void *nrtemu__kernel_load(const struct nrtemu_array *in,
                          enum nrtemu_dtype compute, enum nrtemu_dtype kt,
                          void *buf);
/* Store results of type `kt`, rounded to `compute`, into `out`. */
void nrtemu__kernel_store(const struct nrtemu_array *out,
                          enum nrtemu_dtype compute, enum nrtemu_dtype kt,
                          const void *res);

/*
 * Elementwise ops (classes UNARY to COPY): operands broadcast to the `out`
 * shape.  `compute` is the op's compute dtype: operands are converted to
 * it, the result is rounded or wrapped to it and then converted to the out
 * dtype.  For COMPARE it is the common operand type; LOGICAL, CAST and
 * COPY ignore it.
 * @return NRT_SUCCESS, or NRT_RESOURCE without scratch memory.
 */
NRT_STATUS nrtemu__kernel_elementwise(enum nrtemu_op op,
                                      enum nrtemu_dtype compute,
                                      const struct nrtemu_array *out,
                                      const struct nrtemu_array *in, int n_in,
                                      struct nrtemu_scratch *s);

/*
 * np.matmul of `a` and `b` into `out`, computing in `compute` (16- and
 * 8-bit floats accumulate in float32).  Operands of 1 dimension are
 * promoted as NumPy does; batch dimensions broadcast.
 */
NRT_STATUS nrtemu__kernel_matmul(enum nrtemu_dtype compute,
                                 const struct nrtemu_array *out,
                                 const struct nrtemu_array *a,
                                 const struct nrtemu_array *b,
                                 struct nrtemu_scratch *s);

/*
 * sum, mean, max, min, prod over the axes set in `axes` (bit i: axis i of
 * `in`).  `out` has the element count of the kept axes (keepdims does not
 * matter here).  Empty max/min must have been rejected at load.
 */
NRT_STATUS nrtemu__kernel_reduce(enum nrtemu_op op, enum nrtemu_dtype compute,
                                 const struct nrtemu_array *out,
                                 const struct nrtemu_array *in, uint32_t axes,
                                 struct nrtemu_scratch *s);

/* argmax/argmin along `axis` into int64 `out` (first extreme; NaN wins).
 */
NRT_STATUS nrtemu__kernel_argreduce(enum nrtemu_op op,
                                    const struct nrtemu_array *out,
                                    const struct nrtemu_array *in,
                                    uint32_t axis, struct nrtemu_scratch *s);

/* exp(x - max) / sum along `axis`, computed in `compute` (a float). */
NRT_STATUS nrtemu__kernel_softmax(enum nrtemu_dtype compute,
                                  const struct nrtemu_array *out,
                                  const struct nrtemu_array *in, uint32_t axis,
                                  struct nrtemu_scratch *s);

/*
 * Layout ops move elements without converting them: `out` has the dtype
 * of the data operand, and `out` never overlaps an operand.
 */
void nrtemu__kernel_transpose(const struct nrtemu_array *out,
                              const struct nrtemu_array *in,
                              const uint32_t *perm);
/* Also copy: `in` broadcasts to the `out` shape. */
void nrtemu__kernel_broadcast(const struct nrtemu_array *out,
                              const struct nrtemu_array *in);
void nrtemu__kernel_concatenate(const struct nrtemu_array *out,
                                const struct nrtemu_array *in, int n_in,
                                uint32_t axis);
/* out[i...] = in[start + i * step ...] per dimension. */
void nrtemu__kernel_slice(const struct nrtemu_array *out,
                          const struct nrtemu_array *in, const int64_t *start,
                          const int64_t *step);
/*
 * np.take(data, indices, axis).  An index outside [-n, n) stops the op
 * with NRT_EXEC_OOB and stores it in *bad_index (before anything is
 * written).
 */
NRT_STATUS nrtemu__kernel_take(const struct nrtemu_array *out,
                               const struct nrtemu_array *data,
                               const struct nrtemu_array *indices,
                               uint32_t axis, int64_t *bad_index,
                               struct nrtemu_scratch *s);
/* out = the index along `axis`, converted to the out dtype. */
void nrtemu__kernel_iota(const struct nrtemu_array *out, uint32_t axis);
/* Fill with `value`, one element of the out dtype. */
void nrtemu__kernel_full(const struct nrtemu_array *out, const void *value);

#endif /* NRTEMU_KERNEL_H */
