/*
 * op_list.h - the operations of emulator programs, as one list of rows.
 *
 * The one fact every layer reads about an op: the emulator expands it into
 * enum nrtemu_op (kernel.h), its op table (program_ops.c) and the kernels'
 * loop families; the CPython extension into _nrtpy.OPS (src/ext/ops.c),
 * which the tracer, the HLO compiler, the benchmarks and the fuzz
 * dictionary read.  This header therefore includes nothing and defines
 * nothing but the lists, the enum and bits they give, so that both can
 * include it.
 */
#ifndef NRTEMU_OP_LIST_H
#define NRTEMU_OP_LIST_H

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
 *            nested op lists of its attributes and has no out; IN_PLACE:
 *            its out may be its first operand itself (the op changes it
 *            where it writes, reading no other element of it); 0 for none
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
X(ATAN2,         "atan2",          2, BINARY,  arith,       elementwise, elements, 0,               STREAMS | FLOAT_ONLY) \
X(COPYSIGN,      "copysign",       2, BINARY,  arith,       elementwise, elements, 0,               STREAMS | FLOAT_ONLY) \
X(ROUND_EVEN,    "round_even",     1, UNARY,   arith,       elementwise, elements, 0,               STREAMS)              \
X(ROUND_AWAY,    "round_away",     1, UNARY,   arith,       elementwise, elements, 0,               STREAMS)              \
X(IS_FINITE,     "is_finite",      1, TEST,    is_finite,   elementwise, elements, 0,               STREAMS | FLOAT_ONLY) \
X(BITCAST,       "bitcast",        1, NONE,    bitcast,     reshape,     elements, 0,               STREAMS)              \
X(SCATTER,       "scatter",        3, NONE,    scatter,     scatter,     elements, MODE,            IN_PLACE)             \
X(ARGSORT,       "argsort",        1, NONE,    argsort,     argsort,     sort,     AXIS | DESCENDING, 0)                  \
X(UPDATE_SLICE,  "update_slice",   2, NONE,    update_slice, update_slice, elements, START | STEP, IN_PLACE) \
X(DYNAMIC_SLICE, "dynamic_slice",  2, NONE,    dynamic_slice, dynamic_slice, elements, BOUNDS,      0)          \
X(DYNAMIC_UPDATE_SLICE, "dynamic_update_slice", 3, NONE, dynamic_update_slice, dynamic_update_slice, elements, BOUNDS, IN_PLACE)
/* clang-format on */

/*
 * The attributes of ops: suffix (NRTEMU_ATTR_<suffix>, and the name the
 * attrs column of NRTEMU_OP_LIST uses) and the key in an op's JSON.
 */
#define NRTEMU_ATTR_LIST(X)             \
    X(AXES, "axes")                     \
    X(KEEPDIMS, "keepdims")             \
    X(COND, "cond")                     \
    X(PRED, "pred")                     \
    X(BODY, "body")                     \
    X(BRANCHES, "branches")             \
    X(AXIS, "axis")                     \
    X(PERM, "perm")                     \
    X(START, "start")                   \
    X(STEP, "step")                     \
    X(VALUE, "value")                   \
    X(MODE, "mode")                     \
    X(DESCENDING, "descending")         \
    X(REDUCE, "reduce")                 \
    X(REPLICA_GROUPS, "replica_groups") \
    X(SPLIT_AXIS, "split_axis")         \
    X(CONCAT_AXIS, "concat_axis")       \
    X(PAIRS, "pairs")                   \
    X(BOUNDS, "bounds")

enum nrtemu_attr {
#define NRTEMU_ATTR_ENUM(suffix, key) NRTEMU_ATTR_##suffix,
    NRTEMU_ATTR_LIST(NRTEMU_ATTR_ENUM)
#undef NRTEMU_ATTR_ENUM
        NRTEMU_ATTR_COUNT
};

/* Flags of an op (the flags column of NRTEMU_OP_LIST). */
#define NRTEMU_OPF_STREAMS 1u
#define NRTEMU_OPF_FLOAT_ONLY 2u
#define NRTEMU_OPF_CONTROL 4u
#define NRTEMU_OPF_IN_PLACE 8u

/*
 * The names the attrs and flags columns of the rows use (AXES | KEEPDIMS,
 * STREAMS | FLOAT_ONLY), as bits: written once, at file scope, by each
 * file that expands the rows into a table of its own.
 */
#define NRTEMU_OP_ATTR_BIT_(suffix, key) suffix = 1u << NRTEMU_ATTR_##suffix,
#define NRTEMU_OP_COLUMN_NAMES                      \
    enum { NRTEMU_ATTR_LIST(NRTEMU_OP_ATTR_BIT_) }; \
    enum {                                          \
        STREAMS = NRTEMU_OPF_STREAMS,               \
        FLOAT_ONLY = NRTEMU_OPF_FLOAT_ONLY,         \
        CONTROL = NRTEMU_OPF_CONTROL,               \
        IN_PLACE = NRTEMU_OPF_IN_PLACE,             \
    }

#endif /* NRTEMU_OP_LIST_H */
