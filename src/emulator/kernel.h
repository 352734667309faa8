/*
 * kernel.h - the operations of emulator programs, and their kernels
 * (internal).
 *
 * The loader validates an op against docs/neff-emulator-format.md §3 and
 * the interpreter then calls one of the kernels below, both through the
 * op's row of NRTEMU_OP_LIST; the kernels trust their arguments (shapes
 * agree, axes are in range, dtypes are allowed for the op).
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

/*
 * The loop family of an elementwise op, which the elementwise kernel
 * dispatches on; NONE for ops with kernels of their own.
 */
enum nrtemu_op_class {
    NRTEMU_OPC_NONE,
    NRTEMU_OPC_UNARY,   /* one operand */
    NRTEMU_OPC_BINARY,  /* two operands */
    NRTEMU_OPC_COMPARE, /* two operands, bool result */
    NRTEMU_OPC_LOGICAL, /* on truth values, bool result */
    NRTEMU_OPC_WHERE,   /* select: cond, x, y */
    NRTEMU_OPC_CONVERT, /* cast, copy: one conversion, no arithmetic */
    NRTEMU_OPC_BITWISE, /* on the bits of integers (bool: logical), one or
                           two operands; the width of the compute dtype
                           matters (shifts, bool) */
    NRTEMU_OPC_TEST,    /* one float operand, bool result (is_finite) */
};

/*
 * The operations of emulator programs, one row each: everything about an
 * op is in its row, and adding an op means adding a row here, plus its
 * kernel and its test.  The rows expand into enum nrtemu_op (below) and
 * into the op table of program_ops.c, which the loader, the validator
 * and the interpreter read (program_internal.h).  Columns:
 *
 *   suffix   NRTEMU_OP_<suffix>
 *   name     the "op" of docs/neff-emulator-format.md §3
 *   arity    operand count; -1 for "one or more"
 *   class    enum nrtemu_op_class, NRTEMU_OPC_<class>
 *   check    validator nrtemu__op_check_<check> (program_validate.c)
 *   run      kernel call nrtemu__op_run_<run> (program_run.c)
 *   cost     work estimate nrtemu__op_cost_<cost> (program_ops.c)
 *   attrs    the attributes it reads (NRTEMU_ATTR_LIST in
 *            program_internal.h), or'ed; 0 for none
 *   flags    STREAMS: reads each operand element at the index it writes,
 *            so its out may be one of its operands (the others compute
 *            into scratch when it is); FLOAT_ONLY: defined only for a
 *            float compute dtype; CONTROL: control flow, which runs the
 *            nested op lists of its attributes and has no out; 0 for none
 */
/* clang-format off */
#define NRTEMU_OP_LIST(X)                                                                                                 \
X(NEG,           "neg",            1, UNARY,   arith,       elementwise, elements, 0,               STREAMS)              \
X(ABS,           "abs",            1, UNARY,   arith,       elementwise, elements, 0,               STREAMS)              \
X(EXP,           "exp",            1, UNARY,   arith,       elementwise, elements, 0,               STREAMS | FLOAT_ONLY) \
X(LOG,           "log",            1, UNARY,   arith,       elementwise, elements, 0,               STREAMS | FLOAT_ONLY) \
X(SQRT,          "sqrt",           1, UNARY,   arith,       elementwise, elements, 0,               STREAMS | FLOAT_ONLY) \
X(RSQRT,         "rsqrt",          1, UNARY,   arith,       elementwise, elements, 0,               STREAMS | FLOAT_ONLY) \
X(RECIPROCAL,    "reciprocal",     1, UNARY,   arith,       elementwise, elements, 0,               STREAMS)              \
X(SQUARE,        "square",         1, UNARY,   arith,       elementwise, elements, 0,               STREAMS)              \
X(TANH,          "tanh",           1, UNARY,   arith,       elementwise, elements, 0,               STREAMS | FLOAT_ONLY) \
X(SIGMOID,       "sigmoid",        1, UNARY,   arith,       elementwise, elements, 0,               STREAMS | FLOAT_ONLY) \
X(RELU,          "relu",           1, UNARY,   arith,       elementwise, elements, 0,               STREAMS)              \
X(GELU,          "gelu",           1, UNARY,   arith,       elementwise, elements, 0,               STREAMS | FLOAT_ONLY) \
X(SIN,           "sin",            1, UNARY,   arith,       elementwise, elements, 0,               STREAMS | FLOAT_ONLY) \
X(COS,           "cos",            1, UNARY,   arith,       elementwise, elements, 0,               STREAMS | FLOAT_ONLY) \
X(FLOOR,         "floor",          1, UNARY,   arith,       elementwise, elements, 0,               STREAMS)              \
X(CEIL,          "ceil",           1, UNARY,   arith,       elementwise, elements, 0,               STREAMS)              \
X(SIGN,          "sign",           1, UNARY,   arith,       elementwise, elements, 0,               STREAMS)              \
X(LOGICAL_NOT,   "logical_not",    1, LOGICAL, logical,     elementwise, elements, 0,               STREAMS)              \
X(ADD,           "add",            2, BINARY,  arith,       elementwise, elements, 0,               STREAMS)              \
X(SUB,           "sub",            2, BINARY,  arith,       elementwise, elements, 0,               STREAMS)              \
X(MUL,           "mul",            2, BINARY,  arith,       elementwise, elements, 0,               STREAMS)              \
X(DIV,           "div",            2, BINARY,  arith,       elementwise, elements, 0,               STREAMS)              \
X(POW,           "pow",            2, BINARY,  arith,       elementwise, elements, 0,               STREAMS)              \
X(MAXIMUM,       "maximum",        2, BINARY,  arith,       elementwise, elements, 0,               STREAMS)              \
X(MINIMUM,       "minimum",        2, BINARY,  arith,       elementwise, elements, 0,               STREAMS)              \
X(MOD,           "mod",            2, BINARY,  arith,       elementwise, elements, 0,               STREAMS)              \
X(FLOOR_DIVIDE,  "floor_divide",   2, BINARY,  arith,       elementwise, elements, 0,               STREAMS)              \
X(EQUAL,         "equal",          2, COMPARE, compare,     elementwise, elements, 0,               STREAMS)              \
X(NOT_EQUAL,     "not_equal",      2, COMPARE, compare,     elementwise, elements, 0,               STREAMS)              \
X(LESS,          "less",           2, COMPARE, compare,     elementwise, elements, 0,               STREAMS)              \
X(LESS_EQUAL,    "less_equal",     2, COMPARE, compare,     elementwise, elements, 0,               STREAMS)              \
X(GREATER,       "greater",        2, COMPARE, compare,     elementwise, elements, 0,               STREAMS)              \
X(GREATER_EQUAL, "greater_equal",  2, COMPARE, compare,     elementwise, elements, 0,               STREAMS)              \
X(LOGICAL_AND,   "logical_and",    2, LOGICAL, logical,     elementwise, elements, 0,               STREAMS)              \
X(LOGICAL_OR,    "logical_or",     2, LOGICAL, logical,     elementwise, elements, 0,               STREAMS)              \
X(LOGICAL_XOR,   "logical_xor",    2, LOGICAL, logical,     elementwise, elements, 0,               STREAMS)              \
X(WHERE,         "where",          3, WHERE,   arith,       elementwise, elements, 0,               STREAMS)              \
X(CAST,          "cast",           1, CONVERT, cast,        elementwise, elements, 0,               STREAMS)              \
X(COPY,          "copy",           1, CONVERT, copy,        elementwise, elements, 0,               STREAMS)              \
X(MATMUL,        "matmul",         2, NONE,    matmul,      matmul,      matmul,   0,               0)                    \
X(SUM,           "sum",            1, NONE,    reduce,      reduce,      elements, AXES | KEEPDIMS, 0)                    \
X(MEAN,          "mean",           1, NONE,    reduce,      reduce,      elements, AXES | KEEPDIMS, 0)                    \
X(MAX,           "max",            1, NONE,    reduce,      reduce,      elements, AXES | KEEPDIMS, 0)                    \
X(MIN,           "min",            1, NONE,    reduce,      reduce,      elements, AXES | KEEPDIMS, 0)                    \
X(PROD,          "prod",           1, NONE,    reduce,      reduce,      elements, AXES | KEEPDIMS, 0)                    \
X(ARGMAX,        "argmax",         1, NONE,    argreduce,   argreduce,   elements, AXIS | KEEPDIMS, 0)                    \
X(ARGMIN,        "argmin",         1, NONE,    argreduce,   argreduce,   elements, AXIS | KEEPDIMS, 0)                    \
X(SOFTMAX,       "softmax",        1, NONE,    softmax,     softmax,     elements, AXIS,            FLOAT_ONLY)           \
X(TRANSPOSE,     "transpose",      1, NONE,    transpose,   transpose,   elements, PERM,            0)                    \
X(RESHAPE,       "reshape",        1, NONE,    reshape,     reshape,     elements, 0,               STREAMS)              \
X(BROADCAST_TO,  "broadcast_to",   1, NONE,    copy,        broadcast,   elements, 0,               0)                    \
X(CONCATENATE,   "concatenate",   -1, NONE,    concatenate, concatenate, elements, AXIS,            0)                    \
X(SLICE,         "slice",          1, NONE,    slice,       slice,       elements, START | STEP,    0)                    \
X(TAKE,          "take",           2, NONE,    take,        take,        elements, AXIS,            0)                    \
X(WHILE,         "while",          0, NONE,    while,       while,       control,  COND | PRED | BODY, CONTROL)           \
X(CONDITIONAL,   "conditional",    1, NONE,    conditional, conditional, control,  BRANCHES,        CONTROL)              \
X(ALL_REDUCE,    "all_reduce",     1, NONE,    collective,  collective,  elements, REDUCE | REPLICA_GROUPS, 0)           \
X(ALL_GATHER,    "all_gather",     1, NONE,    collective,  collective,  elements, AXIS | REPLICA_GROUPS, 0)             \
X(REDUCE_SCATTER, "reduce_scatter", 1, NONE,   collective,  collective,  elements, AXIS | REDUCE | REPLICA_GROUPS, 0)    \
X(ALL_TO_ALL,    "all_to_all",     1, NONE,    collective,  collective,  elements, SPLIT_AXIS | CONCAT_AXIS | REPLICA_GROUPS, 0) \
X(COLLECTIVE_PERMUTE, "collective_permute", 1, NONE, collective, collective, elements, PAIRS,         0)                    \
X(IOTA,          "iota",           0, NONE,    iota,        iota,        elements, AXIS,            0)                    \
X(FULL,          "full",           0, NONE,    full,        full,        elements, VALUE,           0)                    \
X(BITWISE_AND,   "bitwise_and",    2, BITWISE, bitwise,     elementwise, elements, 0,               STREAMS)              \
X(BITWISE_OR,    "bitwise_or",     2, BITWISE, bitwise,     elementwise, elements, 0,               STREAMS)              \
X(BITWISE_XOR,   "bitwise_xor",    2, BITWISE, bitwise,     elementwise, elements, 0,               STREAMS)              \
X(BITWISE_NOT,   "bitwise_not",    1, BITWISE, bitwise,     elementwise, elements, 0,               STREAMS)              \
X(SHL,           "shift_left",     2, BITWISE, shift,       elementwise, elements, 0,               STREAMS)              \
X(SHR_LOGICAL,   "shift_right_logical", 2, BITWISE, shift,  elementwise, elements, 0,               STREAMS)              \
X(SHR_ARITH,     "shift_right_arithmetic", 2, BITWISE, shift, elementwise, elements, 0,             STREAMS)              \
X(REM,           "rem",            2, BINARY,  arith,       elementwise, elements, 0,               STREAMS)              \
X(TRUNC_DIVIDE,  "trunc_divide",   2, BINARY,  arith,       elementwise, elements, 0,               STREAMS)              \
X(EXPM1,         "expm1",          1, UNARY,   arith,       elementwise, elements, 0,               STREAMS | FLOAT_ONLY) \
X(LOG1P,         "log1p",          1, UNARY,   arith,       elementwise, elements, 0,               STREAMS | FLOAT_ONLY) \
X(CBRT,          "cbrt",           1, UNARY,   arith,       elementwise, elements, 0,               STREAMS | FLOAT_ONLY) \
X(ERF,           "erf",            1, UNARY,   arith,       elementwise, elements, 0,               STREAMS | FLOAT_ONLY) \
X(ROUND_EVEN,    "round_even",     1, UNARY,   arith,       elementwise, elements, 0,               STREAMS)              \
X(ROUND_AWAY,    "round_away",     1, UNARY,   arith,       elementwise, elements, 0,               STREAMS)              \
X(IS_FINITE,     "is_finite",      1, TEST,    is_finite,   elementwise, elements, 0,               STREAMS | FLOAT_ONLY) \
X(BITCAST,       "bitcast",        1, NONE,    bitcast,     reshape,     elements, 0,               STREAMS)              \
X(SCATTER,       "scatter",        3, NONE,    scatter,     scatter,     elements, MODE,            0)                    \
X(ARGSORT,       "argsort",        1, NONE,    argsort,     argsort,     sort,     AXIS | DESCENDING, 0)
/* clang-format on */

enum nrtemu_op {
#define NRTEMU_OP_ENUM(suffix, name, arity, cls, check, run, cost, attrs, \
                       flags)                                             \
    NRTEMU_OP_##suffix,
    NRTEMU_OP_LIST(NRTEMU_OP_ENUM)
#undef NRTEMU_OP_ENUM
        NRTEMU_OP_COUNT
};

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

/* Whether each of the n arrays `in` has dtype `dt` and out's shape: the
 * operands a same-shape fast path reads element for element with its
 * output (no broadcast). */
bool nrtemu__arrays_match(const struct nrtemu_array *out,
                          const struct nrtemu_array *in, int n,
                          enum nrtemu_dtype dt);

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
 * Elementwise ops (any class but NONE): operands broadcast to the `out`
 * shape.  `compute` is the op's compute dtype: operands are converted to
 * it, the result is rounded or wrapped to it and then converted to the out
 * dtype.  For COMPARE it is the common operand type; LOGICAL and
 * CONVERT ignore it.
 * @return NRT_SUCCESS, or NRT_RESOURCE without scratch memory.
 */
NRT_STATUS nrtemu__kernel_elementwise(enum nrtemu_op op,
                                      enum nrtemu_dtype compute,
                                      const struct nrtemu_array *out,
                                      const struct nrtemu_array *in, int n_in,
                                      struct nrtemu_scratch *s);

/*
 * The same on a part of a larger op (a piece on the worker pool), which
 * streams its results past the cache when `stream` is true: what
 * nrtemu__kernel_stream_wanted() says of the whole op (kernel_stream.h).
 * Thread-safe for disjoint outs, each call with scratch of its own.
 */
NRT_STATUS nrtemu__kernel_elementwise_part(enum nrtemu_op op,
                                           enum nrtemu_dtype compute,
                                           const struct nrtemu_array *out,
                                           const struct nrtemu_array *in,
                                           int n_in, struct nrtemu_scratch *s,
                                           bool stream);
bool nrtemu__kernel_stream_wanted(const struct nrtemu_array *out,
                                  const struct nrtemu_array *in, int n_in);

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
/* memmove of `bytes`, on the worker pool when they are many and the two
 * ranges do not overlap. */
void nrtemu__kernel_copy_bytes(void *dst, const void *src, size_t bytes);
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
/* The reductions of collective operations ("reduce" of all_reduce and
 * reduce_scatter). */
enum nrtemu_reduce {
    NRTEMU_REDUCE_SUM,
    NRTEMU_REDUCE_PROD,
    NRTEMU_REDUCE_MAX,
    NRTEMU_REDUCE_MIN,
};

/*
 * out[i] = in[0][i] (op) in[1][i] (op) ... in[n_in - 1][i] for `count`
 * elements of `dtype`, combined in that order in the kernel dtype and
 * rounded once (max/min propagate NaN; integers wrap).  `out` may be
 * in[0] but no other operand.
 */
void nrtemu__kernel_combine(enum nrtemu_reduce op, enum nrtemu_dtype dtype,
                            void *out, const void *const *in, size_t n_in,
                            size_t count);

/* out = the index along `axis`, converted to the out dtype. */
void nrtemu__kernel_iota(const struct nrtemu_array *out, uint32_t axis);
/* Fill with `value`, one element of the out dtype. */
void nrtemu__kernel_full(const struct nrtemu_array *out, const void *value);

/* The "mode" of scatter: X(suffix, name). */
#define NRTEMU_SCATTER_MODE_LIST(X) \
    X(ASSIGN, "assign")             \
    X(ADD, "add")                   \
    X(MUL, "mul")                   \
    X(MAX, "max")                   \
    X(MIN, "min")

enum nrtemu_scatter_mode {
#define NRTEMU_SCATTER_MODE_ENUM(suffix, name) NRTEMU_SCATTER_##suffix,
    NRTEMU_SCATTER_MODE_LIST(NRTEMU_SCATTER_MODE_ENUM)
#undef NRTEMU_SCATTER_MODE_ENUM
        NRTEMU_SCATTER_MODE_COUNT
};

/*
 * out = operand (the same dtype and shape; out may be operand), then in
 * order for each update i: k = indices.flat[i] (any integer dtype, as
 * many as updates, which have the out dtype); when 0 <= k < count(out),
 * out.flat[k] = combine(out.flat[k], updates.flat[i]), stored (rounded)
 * each time; other indices are skipped.  out must not overlap indices
 * or updates.
 */
NRT_STATUS nrtemu__kernel_scatter(enum nrtemu_scatter_mode mode,
                                  const struct nrtemu_array *out,
                                  const struct nrtemu_array *operand,
                                  const struct nrtemu_array *indices,
                                  const struct nrtemu_array *updates,
                                  struct nrtemu_scratch *s);

/*
 * The stable sorting permutation of `keys` along `axis` into int32 `out`
 * (same shape; the axis is shorter than 2^31): floats in XLA's total
 * order (-NaN first, +NaN last, -0 before +0); `descending` reverses the
 * order, equal keys keeping theirs.  out must not overlap keys.
 */
NRT_STATUS nrtemu__kernel_argsort(const struct nrtemu_array *out,
                                  const struct nrtemu_array *keys,
                                  uint32_t axis, bool descending,
                                  struct nrtemu_scratch *s);

#endif /* NRTEMU_KERNEL_H */
