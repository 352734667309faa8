/*
 * kernel_elementwise.h - the loops of the elementwise ops, by compute
 * type, as kernel_elementwise.c's driver calls them (internal to the
 * elementwise kernels).
 *
 * The driver hands each block of an op to one of two families:
 * kernel_elementwise_float.c (the float rules: unary, binary, comparison
 * and test ops computed in float32 or float64) and
 * kernel_elementwise_int.c (the integer rules, and the ops on bits and
 * truth values whatever the type: logical, bitwise, where).  A block is n
 * elements of each operand, `in[k]` with `scalar[k]` when operand k is one
 * element read for all n, of kernel type `kt` (nrtemu__kernel_dtype() of
 * the compute dtype `compute`), into `out`.
 */
#ifndef NRTEMU_KERNEL_ELEMENTWISE_H
#define NRTEMU_KERNEL_ELEMENTWISE_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/kernel.h"

/*
 * Loops of a binary op where either operand may be a scalar (flags sa,
 * sb); a scalar is hoisted so that each loop vectorises.
 */
#define BIN_LOOP(T, EXPR)                    \
    do {                                     \
        if (sa) {                            \
            const T x = a[0];                \
            for (size_t i = 0; i < n; i++) { \
                const T y = b[i];            \
                o[i] = (EXPR);               \
            }                                \
        } else if (sb) {                     \
            const T y = b[0];                \
            for (size_t i = 0; i < n; i++) { \
                const T x = a[i];            \
                o[i] = (EXPR);               \
            }                                \
        } else {                             \
            for (size_t i = 0; i < n; i++) { \
                const T x = a[i];            \
                const T y = b[i];            \
                o[i] = (EXPR);               \
            }                                \
        }                                    \
    } while (0)

#define UN_LOOP(T, EXPR)                 \
    do {                                 \
        for (size_t i = 0; i < n; i++) { \
            const T x = a[i];            \
            o[i] = (EXPR);               \
        }                                \
    } while (0)

/* Comparisons write bool bytes.  The rule switches of the family (this
 * one and the files') are instantiated between NRTEMU_RULES_BEGIN and
 * NRTEMU_RULES_END (kernel.h): no default, every enumerator a case
 * (NRTEMU_OP_CASES_OUTSIDE), so a row of the class without its rule fails
 * to compile. */
#define DEFINE_COMPARE(SFX, T)                                          \
    NRTEMU_MULTIVERSION                                                 \
    static void SFX##_compare(enum nrtemu_op op, size_t n, const T *a,  \
                              bool sa, const T *b, bool sb, uint8_t *o) \
    {                                                                   \
        switch (op) {                                                   \
        case NRTEMU_OP_EQUAL:                                           \
            BIN_LOOP(T, x == y);                                        \
            break;                                                      \
        case NRTEMU_OP_NOT_EQUAL:                                       \
            BIN_LOOP(T, x != y);                                        \
            break;                                                      \
        case NRTEMU_OP_LESS:                                            \
            BIN_LOOP(T, x < y);                                         \
            break;                                                      \
        case NRTEMU_OP_LESS_EQUAL:                                      \
            BIN_LOOP(T, x <= y);                                        \
            break;                                                      \
        case NRTEMU_OP_GREATER:                                         \
            BIN_LOOP(T, x > y);                                         \
            break;                                                      \
        case NRTEMU_OP_GREATER_EQUAL:                                   \
            BIN_LOOP(T, x >= y);                                        \
            break;                                                      \
            NRTEMU_OP_CASES_OUTSIDE(COMPARE)                            \
            break;                                                      \
        }                                                               \
    }

/* A float op's block: classes UNARY, BINARY, COMPARE and TEST with kt
 * float32 (float16 and bfloat16 values widened) or float64. */
void nrtemu__ew_float_block(enum nrtemu_op op, enum nrtemu_op_class cls,
                            enum nrtemu_dtype kt, enum nrtemu_dtype compute,
                            size_t n, const void *const *in,
                            const bool *scalar, void *out);

/* float32 unary and binary ops on n elements (a, b scalars when sa, sb),
 * the loops of nrtemu__ew_float_block, for the driver's dense runs. */
void nrtemu__ew_f32_unary(enum nrtemu_op op, size_t n, const float *a,
                          float *o);
void nrtemu__ew_f32_binary(enum nrtemu_op op, size_t n, const float *a,
                           bool sa, const float *b, bool sb, float *o);

/* where of 32-bit codes over n elements, any of c, x, y one element for
 * all (sc, sx, sy), for the driver's dense runs. */
void nrtemu__ew_where32_runs(size_t n, const uint8_t *c, bool sc,
                             const uint32_t *x, bool sx, const uint32_t *y,
                             bool sy, uint32_t *o);

/* Every other block: integer kt, and the LOGICAL, BITWISE and WHERE
 * classes of any kt. */
void nrtemu__ew_int_block(enum nrtemu_op op, enum nrtemu_op_class cls,
                          enum nrtemu_dtype kt, enum nrtemu_dtype compute,
                          size_t n, const void *const *in, const bool *scalar,
                          void *out);

/*
 * mod, floor_divide or rem of two bfloat16 arrays of out's shape and
 * dtype, whole (the driver's parts skipped).  False, nothing written,
 * for anything else.
 */
bool nrtemu__ew_bf16_divmod_run(enum nrtemu_op op, enum nrtemu_dtype compute,
                                const struct nrtemu_array *out,
                                const struct nrtemu_array *in, int n_in,
                                bool stream);

/* A logical op on n elements of one 4- or 8-byte dtype, read as truth
 * values (b NULL for logical_not), into bool bytes. */
void nrtemu__ew_logical_truth(enum nrtemu_op op, enum nrtemu_dtype dtype,
                              size_t n, const void *a, const void *b,
                              uint8_t *o);

/* Whether int32 computes `op` natively (kernel_elementwise_int.c). */
bool nrtemu__ew_i32_native(enum nrtemu_op op);

#endif /* NRTEMU_KERNEL_ELEMENTWISE_H */
