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

#include "kernels/dtype.h"
#include "kernels/op_list.h"

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

enum nrtemu_op {
#define NRTEMU_OP_ENUM(suffix, name, arity, cls, check, run, cost, attrs, \
                       flags)                                             \
    NRTEMU_OP_##suffix,
    NRTEMU_OP_LIST(NRTEMU_OP_ENUM)
#undef NRTEMU_OP_ENUM
        NRTEMU_OP_COUNT
};

/*
 * NRTEMU_OP_CASES_OUTSIDE(CLASS): `case NRTEMU_OP_<suffix>:` for every row
 * of NRTEMU_OP_LIST whose class is not CLASS (and NRTEMU_OP_COUNT).  A
 * switch that holds the rules of one loop family lists its class's rows
 * by hand, each with its rule, and the others through this, with no
 * default: compiled with -Wswitch-enum as an error (the rule files turn it
 * on around those switches), a row added to the family without its rule
 * does not build.  Defined for the classes whose rules are switches, and
 * for REDUCE: the rows that nrtemu__kernel_reduce runs (run column
 * reduce), whose class is NONE.
 *
 * NRTEMU_RULES_BEGIN and NRTEMU_RULES_END go around the code that holds
 * such switches (the instantiations of the macros that define them).
 */
#define NRTEMU_RULES_BEGIN         \
    _Pragma("GCC diagnostic push") \
        _Pragma("GCC diagnostic error \"-Wswitch-enum\"")
#define NRTEMU_RULES_END _Pragma("GCC diagnostic pop")
#define NRTEMU_PP_CAT(a, b) NRTEMU_PP_CAT_(a, b)
#define NRTEMU_PP_CAT_(a, b) a##b
#define NRTEMU_PP_SECOND(a, b, ...) b
#define NRTEMU_PP_TEST(...) NRTEMU_PP_SECOND(__VA_ARGS__, 0, ~)
#define NRTEMU_PP_IF_1(yes, no) yes
#define NRTEMU_PP_IF_0(yes, no) no
/* NRTEMU_SAME_<A>_<B> is "~, 1" exactly when A and B are one class. */
#define NRTEMU_SAME_UNARY_UNARY ~, 1
#define NRTEMU_SAME_BINARY_BINARY ~, 1
#define NRTEMU_SAME_COMPARE_COMPARE ~, 1
#define NRTEMU_SAME_LOGICAL_LOGICAL ~, 1
#define NRTEMU_SAME_BITWISE_BITWISE ~, 1
#define NRTEMU_SAME_reduce_REDUCE ~, 1
#define NRTEMU_OP_CASE_OUTSIDE(CLASS, suffix, cls)                            \
    NRTEMU_PP_CAT(NRTEMU_PP_IF_, NRTEMU_PP_TEST(NRTEMU_SAME_##cls##_##CLASS)) \
    (, case NRTEMU_OP_##suffix:)
#define NRTEMU_OP_CASE_OUTSIDE_UNARY(suffix, name, arity, cls, ...) \
    NRTEMU_OP_CASE_OUTSIDE(UNARY, suffix, cls)
#define NRTEMU_OP_CASE_OUTSIDE_BINARY(suffix, name, arity, cls, ...) \
    NRTEMU_OP_CASE_OUTSIDE(BINARY, suffix, cls)
#define NRTEMU_OP_CASE_OUTSIDE_COMPARE(suffix, name, arity, cls, ...) \
    NRTEMU_OP_CASE_OUTSIDE(COMPARE, suffix, cls)
#define NRTEMU_OP_CASE_OUTSIDE_LOGICAL(suffix, name, arity, cls, ...) \
    NRTEMU_OP_CASE_OUTSIDE(LOGICAL, suffix, cls)
#define NRTEMU_OP_CASE_OUTSIDE_BITWISE(suffix, name, arity, cls, ...) \
    NRTEMU_OP_CASE_OUTSIDE(BITWISE, suffix, cls)
#define NRTEMU_OP_CASE_OUTSIDE_REDUCE(suffix, name, arity, cls, check, run, \
                                      ...)                                  \
    NRTEMU_OP_CASE_OUTSIDE(REDUCE, suffix, run)
#define NRTEMU_OP_CASES_OUTSIDE(CLASS)             \
    NRTEMU_OP_LIST(NRTEMU_OP_CASE_OUTSIDE_##CLASS) \
    case NRTEMU_OP_COUNT:

/*
 * np.maximum / np.minimum: the one rule of every kernel that takes a
 * larger or smaller value (elementwise, reductions, scatter, collectives).
 * Of floats, NaN in either operand wins (the first when both are), and of
 * two operands that compare equal (+0 and -0) the second, as NumPy gives
 * (and so a reduction keeps the later of equal elements); of integers,
 * the larger or smaller.
 */
#define NRTEMU_FLOAT_MAX(x, y) (((x) > (y) || (x) != (x)) ? (x) : (y))
#define NRTEMU_FLOAT_MIN(x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))
#define NRTEMU_INT_MAX(x, y) ((x) > (y) ? (x) : (y))
#define NRTEMU_INT_MIN(x, y) ((x) < (y) ? (x) : (y))

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
/* out = operand (unless out is operand), then out[start + i * step ...]
 * = update[i...] per dimension: the inverse of a slice. */
void nrtemu__kernel_update_slice(const struct nrtemu_array *out,
                                 const struct nrtemu_array *operand,
                                 const struct nrtemu_array *update,
                                 const int64_t *start, const int64_t *step);
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

/* The out-of-range rule of dynamic_slice and dynamic_update_slice
 * ("bounds"): X(suffix, name). */
#define NRTEMU_BOUNDS_LIST(X) \
    X(CLAMP, "clamp")         \
    X(CHECK, "check")

enum nrtemu_bounds {
#define NRTEMU_BOUNDS_ENUM(suffix, name) NRTEMU_BOUNDS_##suffix,
    NRTEMU_BOUNDS_LIST(NRTEMU_BOUNDS_ENUM)
#undef NRTEMU_BOUNDS_ENUM
        NRTEMU_BOUNDS_COUNT
};

/* A start that "check" refuses: its dimension and its value, the bits of
 * a uint64 when the starts are unsigned. */
struct nrtemu_bad_start {
    uint32_t dim;
    bool is_unsigned;
    int64_t value;
};

/*
 * The first element of a window of `sizes` (sizes[d] <= shape[d]) in an
 * array of `shape` (`ndim` dimensions) from `starts`, one integer of any
 * integer dtype per dimension, read without wrapping: CLAMP moves each
 * start into [0, shape[d] - sizes[d]] (XLA's dynamic-slice); CHECK
 * returns NRT_EXEC_OOB at the first outside it, stored in *bad.
 */
NRT_STATUS nrtemu__kernel_window_start(enum nrtemu_bounds bounds,
                                       const struct nrtemu_array *starts,
                                       uint32_t ndim, const uint64_t *shape,
                                       const uint64_t *sizes, int64_t *start,
                                       struct nrtemu_bad_start *bad);
/* out[i...] = in[start + i...]: the window of out's shape (in range). */
void nrtemu__kernel_read_window(const struct nrtemu_array *out,
                                const struct nrtemu_array *in,
                                const int64_t *start);
/* out = operand (unless out is operand), then out[start + i...] =
 * update[i...] (in range); out must not overlap update. */
void nrtemu__kernel_write_window(const struct nrtemu_array *out,
                                 const struct nrtemu_array *operand,
                                 const struct nrtemu_array *update,
                                 const int64_t *start);

#endif /* NRTEMU_KERNEL_H */
