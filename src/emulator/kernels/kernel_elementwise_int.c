/*
 * kernel_elementwise_int.c - the integer rules of the elementwise ops
 * (arithmetic that wraps, XLA's division and remainder, comparisons), and
 * the ops on bits and truth values whatever the type: logical, bitwise
 * and shifts, where (kernel_elementwise.h).
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/kernel.h"
#include "kernels/kernel_elementwise.h"
#include "kernels/kernel_math_vec.h"
#include "kernels/simd.h"

/* Integers: arithmetic wraps (it is done on uint64_t). */
static inline int64_t
i64_wrap(uint64_t v)
{
    return (int64_t)v;
}

static inline int64_t
i64_floor_divide(int64_t a, int64_t b)
{
    int64_t q;

    if (b == 0) {
        return 0; /* NumPy gives 0 (and warns) */
    }
    if (b == -1) {
        return i64_wrap(0u - (uint64_t)a); /* INT64_MIN / -1 wraps */
    }
    q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) {
        q--;
    }
    return q;
}

static inline int64_t
i64_mod(int64_t a, int64_t b)
{
    int64_t r;

    if (b == 0 || b == -1) {
        return 0;
    }
    r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) {
        r += b;
    }
    return r;
}

/* Exponentiation by squaring, wrapping.  A negative exponent (an error in
 * NumPy) gives the truncated 1 / a^-e: 0 unless |a| is 1. */
static inline uint64_t
u64_pow(uint64_t a, uint64_t e)
{
    uint64_t r = 1;

    while (e != 0) {
        if (e & 1) {
            r *= a;
        }
        a *= a;
        e >>= 1;
    }
    return r;
}

static inline int64_t
i64_pow(int64_t a, int64_t e)
{
    if (e < 0) {
        if (a == 1) {
            return 1;
        }
        if (a == -1) {
            return (e & 1) ? -1 : 1;
        }
        return 0;
    }
    return i64_wrap(u64_pow((uint64_t)a, (uint64_t)e));
}

/*
 * XLA's integer division and remainder: truncated; x / 0 is -1 (all
 * ones for unsigned), x rem 0 is x; INT_MIN / -1 wraps to INT_MIN and
 * INT_MIN rem -1 is 0 (at every width: narrower types compute here in
 * 64 bits, where the quotient wraps when stored).
 */
static inline int64_t
i64_trunc_divide(int64_t a, int64_t b)
{
    if (b == 0) {
        return -1;
    }
    if (b == -1) {
        return i64_wrap(0u - (uint64_t)a);
    }
    return a / b;
}

static inline int64_t
i64_rem(int64_t a, int64_t b)
{
    if (b == 0) {
        return a;
    }
    if (b == -1) {
        return 0;
    }
    return a % b;
}

/*
 * The cases every integer rule switch shares: the unary ops that are the
 * identity on integers (NumPy 2: an integer is its own floor and
 * rounding), and the rows of the class no integer computes (float only:
 * the validator refuses them on integers) with those of other classes.
 */
#define INT_SELF_UNARY_CASES   \
    case NRTEMU_OP_FLOOR:      \
    case NRTEMU_OP_CEIL:       \
    case NRTEMU_OP_ROUND_EVEN: \
    case NRTEMU_OP_ROUND_AWAY:
#define INT_NO_UNARY_CASES  \
    case NRTEMU_OP_EXP:     \
    case NRTEMU_OP_LOG:     \
    case NRTEMU_OP_SQRT:    \
    case NRTEMU_OP_RSQRT:   \
    case NRTEMU_OP_TANH:    \
    case NRTEMU_OP_SIGMOID: \
    case NRTEMU_OP_GELU:    \
    case NRTEMU_OP_SIN:     \
    case NRTEMU_OP_COS:     \
    case NRTEMU_OP_EXPM1:   \
    case NRTEMU_OP_LOG1P:   \
    case NRTEMU_OP_CBRT:    \
    case NRTEMU_OP_ERF:     \
        NRTEMU_OP_CASES_OUTSIDE(UNARY)
#define INT_NO_BINARY_CASES  \
    case NRTEMU_OP_ATAN2:    \
    case NRTEMU_OP_COPYSIGN: \
        NRTEMU_OP_CASES_OUTSIDE(BINARY)

/*
 * The signed integer ops that wrap, for int64 and int32 (suffix SFX,
 * type T, its unsigned twin U): arithmetic is done on U, whose conversion
 * back GCC defines as modulo 2^width.  Unary ops whole; the binary ones
 * both widths share are the cases INT_WRAPPING_BINARY_CASES, which
 * SFX##_binary adds to.
 */
#define DEFINE_INT_UNARY(SFX, T, U)                                        \
    NRTEMU_MULTIVERSION                                                    \
    static void SFX##_unary(enum nrtemu_op op, size_t n, const T *a, T *o) \
    {                                                                      \
        switch (op) {                                                      \
        case NRTEMU_OP_NEG:                                                \
            UN_LOOP(T, (T)(0u - (U)x));                                    \
            break;                                                         \
        case NRTEMU_OP_ABS:                                                \
            UN_LOOP(T, x < 0 ? (T)(0u - (U)x) : x);                        \
            break;                                                         \
        case NRTEMU_OP_SQUARE:                                             \
            UN_LOOP(T, (T)((U)x * (U)x));                                  \
            break;                                                         \
        case NRTEMU_OP_RECIPROCAL:                                         \
            /* Integer 1 / x; NumPy leaves 1 / 0 undefined, here 0. */     \
            UN_LOOP(T, (x == 1 || x == -1) ? x : 0);                       \
            break;                                                         \
        case NRTEMU_OP_RELU:                                               \
            UN_LOOP(T, x > 0 ? x : 0);                                     \
            break;                                                         \
        case NRTEMU_OP_SIGN:                                               \
            UN_LOOP(T, (x > 0) - (x < 0));                                 \
            break;                                                         \
            INT_SELF_UNARY_CASES                                           \
            UN_LOOP(T, x);                                                 \
            break;                                                         \
            INT_NO_UNARY_CASES                                             \
            break;                                                         \
        }                                                                  \
    }

#define INT_WRAPPING_BINARY_CASES(T, U) \
    case NRTEMU_OP_ADD:                 \
        BIN_LOOP(T, (T)((U)x + (U)y));  \
        break;                          \
    case NRTEMU_OP_SUB:                 \
        BIN_LOOP(T, (T)((U)x - (U)y));  \
        break;                          \
    case NRTEMU_OP_MUL:                 \
        BIN_LOOP(T, (T)((U)x * (U)y));  \
        break;                          \
    case NRTEMU_OP_MAXIMUM:             \
        BIN_LOOP(T, x > y ? x : y);     \
        break;                          \
    case NRTEMU_OP_MINIMUM:             \
        BIN_LOOP(T, x < y ? x : y);     \
        break;

NRTEMU_RULES_BEGIN
DEFINE_INT_UNARY(i64, int64_t, uint64_t)

NRTEMU_MULTIVERSION
static void
u64_unary(enum nrtemu_op op, size_t n, const uint64_t *a, uint64_t *o)
{
    switch (op) {
    case NRTEMU_OP_NEG:
        UN_LOOP(uint64_t, 0u - x);
        break;
    case NRTEMU_OP_SQUARE:
        UN_LOOP(uint64_t, x * x);
        break;
    case NRTEMU_OP_RECIPROCAL:
        UN_LOOP(uint64_t, x == 1 ? 1 : 0);
        break;
    case NRTEMU_OP_SIGN:
        UN_LOOP(uint64_t, x != 0);
        break;
    case NRTEMU_OP_ABS:
    case NRTEMU_OP_RELU:
        INT_SELF_UNARY_CASES
        UN_LOOP(uint64_t, x);
        break;
        INT_NO_UNARY_CASES
        break;
    }
}

NRTEMU_MULTIVERSION
static void
i64_binary(enum nrtemu_op op, size_t n, const int64_t *a, bool sa,
           const int64_t *b, bool sb, int64_t *o)
{
    switch (op) {
        INT_WRAPPING_BINARY_CASES(int64_t, uint64_t)
    case NRTEMU_OP_DIV:
    case NRTEMU_OP_FLOOR_DIVIDE:
        BIN_LOOP(int64_t, i64_floor_divide(x, y));
        break;
    case NRTEMU_OP_POW:
        BIN_LOOP(int64_t, i64_pow(x, y));
        break;
    case NRTEMU_OP_MOD:
        BIN_LOOP(int64_t, i64_mod(x, y));
        break;
    case NRTEMU_OP_REM:
        BIN_LOOP(int64_t, i64_rem(x, y));
        break;
    case NRTEMU_OP_TRUNC_DIVIDE:
        BIN_LOOP(int64_t, i64_trunc_divide(x, y));
        break;
        INT_NO_BINARY_CASES
        break;
    }
}

NRTEMU_MULTIVERSION
static void
u64_binary(enum nrtemu_op op, size_t n, const uint64_t *a, bool sa,
           const uint64_t *b, bool sb, uint64_t *o)
{
    switch (op) {
    case NRTEMU_OP_ADD:
        BIN_LOOP(uint64_t, x + y);
        break;
    case NRTEMU_OP_SUB:
        BIN_LOOP(uint64_t, x - y);
        break;
    case NRTEMU_OP_MUL:
        BIN_LOOP(uint64_t, x * y);
        break;
    case NRTEMU_OP_DIV:
    case NRTEMU_OP_FLOOR_DIVIDE:
        BIN_LOOP(uint64_t, y != 0 ? x / y : 0);
        break;
    case NRTEMU_OP_POW:
        BIN_LOOP(uint64_t, u64_pow(x, y));
        break;
    case NRTEMU_OP_MAXIMUM:
        BIN_LOOP(uint64_t, x > y ? x : y);
        break;
    case NRTEMU_OP_MINIMUM:
        BIN_LOOP(uint64_t, x < y ? x : y);
        break;
    case NRTEMU_OP_MOD:
        BIN_LOOP(uint64_t, y != 0 ? x % y : 0);
        break;
    case NRTEMU_OP_REM:
        BIN_LOOP(uint64_t, y != 0 ? x % y : x);
        break;
    case NRTEMU_OP_TRUNC_DIVIDE:
        BIN_LOOP(uint64_t, y != 0 ? x / y : UINT64_MAX);
        break;
        INT_NO_BINARY_CASES
        break;
    }
}

NRTEMU_RULES_END

/*
 * int32 ops whose int64 result wrapped to int32 equals the int32 result
 * computed with wrap-around (NumPy's int32 arithmetic): + - * negation,
 * abs, square, the comparisons, max/min and selections.  They run in
 * int32, twice the elements per vector and half the bytes of scratch as
 * int64, with results bit for bit those of the int64 loops.  So do
 * division, remainder and power (kernel_math_vec.h: float64 quotients,
 * INT32_MIN / -1 and friends selected apart).
 */
bool
nrtemu__ew_i32_native(enum nrtemu_op op)
{
    switch (op) {
    case NRTEMU_OP_NEG:
    case NRTEMU_OP_ABS:
    case NRTEMU_OP_SQUARE:
    case NRTEMU_OP_RECIPROCAL:
    case NRTEMU_OP_RELU:
    case NRTEMU_OP_SIGN:
    case NRTEMU_OP_FLOOR:
    case NRTEMU_OP_CEIL:
    case NRTEMU_OP_ADD:
    case NRTEMU_OP_SUB:
    case NRTEMU_OP_MUL:
    case NRTEMU_OP_MAXIMUM:
    case NRTEMU_OP_MINIMUM:
    case NRTEMU_OP_EQUAL:
    case NRTEMU_OP_NOT_EQUAL:
    case NRTEMU_OP_LESS:
    case NRTEMU_OP_LESS_EQUAL:
    case NRTEMU_OP_GREATER:
    case NRTEMU_OP_GREATER_EQUAL:
    case NRTEMU_OP_WHERE:
    case NRTEMU_OP_BITWISE_AND:
    case NRTEMU_OP_BITWISE_OR:
    case NRTEMU_OP_BITWISE_XOR:
    case NRTEMU_OP_BITWISE_NOT:
    case NRTEMU_OP_SHL:
    case NRTEMU_OP_SHR_LOGICAL:
    case NRTEMU_OP_SHR_ARITH:
    case NRTEMU_OP_ROUND_EVEN:
    case NRTEMU_OP_ROUND_AWAY:
    case NRTEMU_OP_DIV:
    case NRTEMU_OP_FLOOR_DIVIDE:
    case NRTEMU_OP_MOD:
    case NRTEMU_OP_REM:
    case NRTEMU_OP_TRUNC_DIVIDE:
    case NRTEMU_OP_POW:
        return true;
    default:
        return false;
    }
}

NRTEMU_RULES_BEGIN
DEFINE_INT_UNARY(i32, int32_t, uint32_t)
NRTEMU_RULES_END

NRTEMU_MULTIVERSION
static void
i32_binary(enum nrtemu_op op, size_t n, const int32_t *a, bool sa,
           const int32_t *b, bool sb, int32_t *o)
{
    switch (op) {
        INT_WRAPPING_BINARY_CASES(int32_t, uint32_t)
    default:
        nrtemu__vmath_i32_binary(op, n, a, sa, b, sb, o);
        break;
    }
}

NRTEMU_RULES_BEGIN
DEFINE_COMPARE(i64, int64_t)
DEFINE_COMPARE(i32, int32_t)
DEFINE_COMPARE(u64, uint64_t)

/* Truth values: any nonzero byte is true. */
NRTEMU_MULTIVERSION
static void
logical(enum nrtemu_op op, size_t n, const uint8_t *a, bool sa,
        const uint8_t *b, bool sb, uint8_t *o)
{
    switch (op) {
    case NRTEMU_OP_LOGICAL_NOT:
        UN_LOOP(uint8_t, x == 0);
        break;
    case NRTEMU_OP_LOGICAL_AND:
        BIN_LOOP(uint8_t, (x != 0) & (y != 0));
        break;
    case NRTEMU_OP_LOGICAL_OR:
        BIN_LOOP(uint8_t, (x != 0) | (y != 0));
        break;
    case NRTEMU_OP_LOGICAL_XOR:
        BIN_LOOP(uint8_t, (x != 0) ^ (y != 0));
        break;
        NRTEMU_OP_CASES_OUTSIDE(LOGICAL)
        break;
    }
}

NRTEMU_RULES_END

/*
 * A logical op on two operands of one 4- or 8-byte dtype, or one for
 * not, in the out's shape (no broadcasting), into a bool out: the truth
 * of each element is tested where it is read, as the conversion to bool
 * tests it (any bit but a float's sign, so -0.0 is false and NaN true),
 * in one pass over the elements instead of a conversion of each operand
 * and a pass over the bytes, block by block, whose extra passes show even
 * in small calls.
 */
#define LOGICAL_TRUTH_LOOP(T, MASK)                                          \
    do {                                                                     \
        const T *x_ = a, *y_ = b;                                            \
        const T m_ = (T)(MASK);                                              \
        switch (op) {                                                        \
        case NRTEMU_OP_LOGICAL_NOT:                                          \
            for (size_t i = 0; i < n; i++) {                                 \
                o[i] = (uint8_t)((x_[i] & m_) == 0);                         \
            }                                                                \
            break;                                                           \
        case NRTEMU_OP_LOGICAL_AND:                                          \
            for (size_t i = 0; i < n; i++) {                                 \
                o[i] = (uint8_t)(((x_[i] & m_) != 0) & ((y_[i] & m_) != 0)); \
            }                                                                \
            break;                                                           \
        case NRTEMU_OP_LOGICAL_OR:                                           \
            for (size_t i = 0; i < n; i++) {                                 \
                o[i] = (uint8_t)(((x_[i] | y_[i]) & m_) != 0);               \
            }                                                                \
            break;                                                           \
        case NRTEMU_OP_LOGICAL_XOR:                                          \
            for (size_t i = 0; i < n; i++) {                                 \
                o[i] = (uint8_t)(((x_[i] & m_) != 0) ^ ((y_[i] & m_) != 0)); \
            }                                                                \
            break;                                                           \
            NRTEMU_OP_CASES_OUTSIDE(LOGICAL)                                 \
            break;                                                           \
        }                                                                    \
    } while (0)

NRTEMU_RULES_BEGIN
NRTEMU_MULTIVERSION
static void
logical_truth(enum nrtemu_op op, enum nrtemu_dtype dtype, size_t n,
              const void *a, const void *b, uint8_t *o)
{
    bool fl = nrtemu__dtype_is_float(dtype);

    if (nrtemu__dtype_size(dtype) == 4) {
        LOGICAL_TRUTH_LOOP(uint32_t, fl ? 0x7fffffffu : 0xffffffffu);
    } else {
        LOGICAL_TRUTH_LOOP(uint64_t, fl ? ~(1ull << 63) : ~0ull);
    }
}

NRTEMU_RULES_END

/* Not multiversioned itself: an ifunc would be exported from the library
 * whatever its visibility. */
void
nrtemu__ew_logical_truth(enum nrtemu_op op, enum nrtemu_dtype dtype, size_t n,
                         const void *a, const void *b, uint8_t *o)
{
    logical_truth(op, dtype, n, a, b, o);
}

NRTEMU_RULES_BEGIN
/*
 * Bitwise ops and shifts on the 64-bit load type of a compute dtype of
 * `width` bits (1 for bool).  Signed values arrive sign-extended and
 * unsigned zero-extended; results wrap to the width when stored.  XLA's
 * shifts: a count of at least the width (a negative count reads as a
 * huge unsigned one) gives 0, or the sign fill for the arithmetic shift,
 * which sees the bits as signed whatever the type.  On bool, not is
 * logical (the others keep 0/1 as they are).
 */
NRTEMU_MULTIVERSION
static void
bitwise(enum nrtemu_op op, uint32_t width, size_t n, const uint64_t *a,
        bool sa, const uint64_t *b, bool sb, uint64_t *o)
{
    const uint64_t mask =
        width >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << width) - 1;
    const uint32_t up = 64 - width; /* to sign-extend from the width */

    switch (op) {
    case NRTEMU_OP_BITWISE_AND:
        BIN_LOOP(uint64_t, x & y);
        break;
    case NRTEMU_OP_BITWISE_OR:
        BIN_LOOP(uint64_t, x | y);
        break;
    case NRTEMU_OP_BITWISE_XOR:
        BIN_LOOP(uint64_t, x ^ y);
        break;
    case NRTEMU_OP_BITWISE_NOT:
        if (width == 1) {
            UN_LOOP(uint64_t, x ^ 1u);
        } else {
            UN_LOOP(uint64_t, ~x);
        }
        break;
    case NRTEMU_OP_SHL:
        BIN_LOOP(uint64_t, y < width ? x << y : 0);
        break;
    case NRTEMU_OP_SHR_LOGICAL:
        BIN_LOOP(uint64_t, y < width ? (x & mask) >> y : 0);
        break;
    case NRTEMU_OP_SHR_ARITH:
        BIN_LOOP(uint64_t, (uint64_t)(((int64_t)(x << up) >> up) >>
                                      (y < width ? y : width - 1)));
        break;
        NRTEMU_OP_CASES_OUTSIDE(BITWISE)
        break;
    }
}

/* The same on int32 compute, in place (no widening): the width is 32. */
NRTEMU_MULTIVERSION
static void
bitwise32(enum nrtemu_op op, size_t n, const uint32_t *a, bool sa,
          const uint32_t *b, bool sb, uint32_t *o)
{
    switch (op) {
    case NRTEMU_OP_BITWISE_AND:
        BIN_LOOP(uint32_t, x & y);
        break;
    case NRTEMU_OP_BITWISE_OR:
        BIN_LOOP(uint32_t, x | y);
        break;
    case NRTEMU_OP_BITWISE_XOR:
        BIN_LOOP(uint32_t, x ^ y);
        break;
    case NRTEMU_OP_BITWISE_NOT:
        UN_LOOP(uint32_t, ~x);
        break;
    case NRTEMU_OP_SHL:
        BIN_LOOP(uint32_t, y < 32 ? x << y : 0);
        break;
    case NRTEMU_OP_SHR_LOGICAL:
        BIN_LOOP(uint32_t, y < 32 ? x >> y : 0);
        break;
    case NRTEMU_OP_SHR_ARITH:
        BIN_LOOP(uint32_t, (uint32_t)((int32_t)x >> (y < 32 ? y : 31)));
        break;
        NRTEMU_OP_CASES_OUTSIDE(BITWISE)
        break;
    }
}

NRTEMU_RULES_END

/* where(c, x, y) on 4- or 8-byte elements; no operand is a scalar.
 * Both are read whatever c says: `c[i] ? x[i] : y[i]` reads one, which
 * GCC vectorises as two loads masked by c, and masked loads from memory
 * are much slower than plain loads and a blend (simd_tail.h). */
#define DEFINE_WHERE(SFX, T)                                        \
    NRTEMU_MULTIVERSION                                             \
    static void SFX##_where(size_t n, const uint8_t *c, const T *x, \
                            const T *y, T *o)                       \
    {                                                               \
        for (size_t i = 0; i < n; i++) {                            \
            T a = x[i], b = y[i];                                   \
            o[i] = c[i] != 0 ? a : b;                               \
        }                                                           \
    }

DEFINE_WHERE(w32, uint32_t)
DEFINE_WHERE(w64, uint64_t)

/* where of 32-bit codes, any of c, x, y one element for all (sc, sx, sy):
 * the same selection as w32_where of the materialised operands. */
NRTEMU_MULTIVERSION
static void
w32_where_runs(size_t n, const uint8_t *c, bool sc, const uint32_t *x, bool sx,
               const uint32_t *y, bool sy, uint32_t *o)
{
    if (sc) {
        const uint32_t *v = c[0] != 0 ? x : y;
        bool sv = c[0] != 0 ? sx : sy;
        for (size_t i = 0; i < n; i++) {
            o[i] = v[sv ? 0 : i];
        }
    } else if (!sx && !sy) {
        w32_where(n, c, x, y, o);
    } else if (sx && sy) {
        const uint32_t a = x[0], b = y[0];
        for (size_t i = 0; i < n; i++) {
            o[i] = c[i] != 0 ? a : b;
        }
    } else if (sy) {
        const uint32_t b = y[0];
        for (size_t i = 0; i < n; i++) {
            uint32_t a = x[i];
            o[i] = c[i] != 0 ? a : b;
        }
    } else {
        const uint32_t a = x[0];
        for (size_t i = 0; i < n; i++) {
            uint32_t b = y[i];
            o[i] = c[i] != 0 ? a : b;
        }
    }
}

/* Not multiversioned itself: an ifunc would be exported from the library. */
void
nrtemu__ew_where32_runs(size_t n, const uint8_t *c, bool sc, const uint32_t *x,
                        bool sx, const uint32_t *y, bool sy, uint32_t *o)
{
    w32_where_runs(n, c, sc, x, sx, y, sy, o);
}

void
nrtemu__ew_int_block(enum nrtemu_op op, enum nrtemu_op_class cls,
                     enum nrtemu_dtype kt, enum nrtemu_dtype compute, size_t n,
                     const void *const *in, const bool *scalar, void *out)
{
    switch (cls) {
    case NRTEMU_OPC_BITWISE:
        if (kt == NRTEMU_DTYPE_INT32) {
            bitwise32(op, n, in[0], scalar[0],
                      op == NRTEMU_OP_BITWISE_NOT ? NULL : in[1],
                      op == NRTEMU_OP_BITWISE_NOT ? false : scalar[1], out);
            break;
        }
        bitwise(op,
                compute == NRTEMU_DTYPE_BOOL
                    ? 1
                    : 8 * (uint32_t)nrtemu__dtype_size(compute),
                n, in[0], scalar[0],
                op == NRTEMU_OP_BITWISE_NOT ? NULL : in[1],
                op == NRTEMU_OP_BITWISE_NOT ? false : scalar[1], out);
        break;
    case NRTEMU_OPC_UNARY:
        switch (kt) {
        case NRTEMU_DTYPE_UINT64:
            u64_unary(op, n, in[0], out);
            break;
        case NRTEMU_DTYPE_INT32:
            i32_unary(op, n, in[0], out);
            break;
        default:
            i64_unary(op, n, in[0], out);
            break;
        }
        break;
    case NRTEMU_OPC_BINARY:
        switch (kt) {
        case NRTEMU_DTYPE_UINT64:
            u64_binary(op, n, in[0], scalar[0], in[1], scalar[1], out);
            break;
        case NRTEMU_DTYPE_INT32:
            i32_binary(op, n, in[0], scalar[0], in[1], scalar[1], out);
            break;
        default:
            i64_binary(op, n, in[0], scalar[0], in[1], scalar[1], out);
            break;
        }
        break;
    case NRTEMU_OPC_COMPARE:
        switch (kt) {
        case NRTEMU_DTYPE_UINT64:
            u64_compare(op, n, in[0], scalar[0], in[1], scalar[1], out);
            break;
        case NRTEMU_DTYPE_INT32:
            i32_compare(op, n, in[0], scalar[0], in[1], scalar[1], out);
            break;
        default:
            i64_compare(op, n, in[0], scalar[0], in[1], scalar[1], out);
            break;
        }
        break;
    case NRTEMU_OPC_LOGICAL:
        logical(op, n, in[0], scalar[0],
                op == NRTEMU_OP_LOGICAL_NOT ? NULL : in[1],
                op == NRTEMU_OP_LOGICAL_NOT ? false : scalar[1], out);
        break;
    case NRTEMU_OPC_WHERE:
        if (kt == NRTEMU_DTYPE_FLOAT32 || kt == NRTEMU_DTYPE_INT32) {
            w32_where(n, in[0], in[1], in[2], out);
        } else {
            w64_where(n, in[0], in[1], in[2], out);
        }
        break;
    default:
        break;
    }
}
