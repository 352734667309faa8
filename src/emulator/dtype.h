/*
 * dtype.h - element types of emulator programs (internal).
 *
 * Names are NumPy's (ml_dtypes' for bfloat16 and fp8).  16- and 8-bit
 * floats convert to and from float32 with round-to-nearest-even, as
 * ml_dtypes does, so results are bit-identical to NumPy's.
 */
#ifndef NRTEMU_DTYPE_H
#define NRTEMU_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

/* X(enum suffix, name, size in bytes, NRT_DTYPE code) */
#define NRTEMU_DTYPE_LIST(X)                               \
    X(UNKNOWN, "unknown", 0, NRT_DTYPE_UNKNOWN)            \
    X(BOOL, "bool", 1, NRT_DTYPE_UNKNOWN)                  \
    X(INT8, "int8", 1, NRT_DTYPE_INT8)                     \
    X(INT16, "int16", 2, NRT_DTYPE_INT16)                  \
    X(INT32, "int32", 4, NRT_DTYPE_INT32)                  \
    X(INT64, "int64", 8, NRT_DTYPE_INT64)                  \
    X(UINT8, "uint8", 1, NRT_DTYPE_UINT8)                  \
    X(UINT16, "uint16", 2, NRT_DTYPE_UINT16)               \
    X(UINT32, "uint32", 4, NRT_DTYPE_UINT32)               \
    X(UINT64, "uint64", 8, NRT_DTYPE_UINT64)               \
    X(FLOAT16, "float16", 2, NRT_DTYPE_FLOAT16)            \
    X(BFLOAT16, "bfloat16", 2, NRT_DTYPE_BFLOAT16)         \
    X(FLOAT32, "float32", 4, NRT_DTYPE_FLOAT32)            \
    X(FLOAT64, "float64", 8, NRT_DTYPE_UNKNOWN)            \
    X(FLOAT8_E4M3, "float8_e4m3", 1, NRT_DTYPE_FP8_E4)     \
    X(FLOAT8_E4M3FN, "float8_e4m3fn", 1, NRT_DTYPE_FP8_E4) \
    X(FLOAT8_E5M2, "float8_e5m2", 1, NRT_DTYPE_FP8_E5)     \
    X(FLOAT8_E3M4, "float8_e3m4", 1, NRT_DTYPE_FP8_E3)

enum nrtemu_dtype {
#define NRTEMU_DTYPE_ENUM(suffix, name, size, code) NRTEMU_DTYPE_##suffix,
    NRTEMU_DTYPE_LIST(NRTEMU_DTYPE_ENUM)
#undef NRTEMU_DTYPE_ENUM
        NRTEMU_DTYPE_COUNT
};

/* By name; false when unknown. */
bool nrtemu__dtype_from_name(const char *name, enum nrtemu_dtype *out);
const char *nrtemu__dtype_name(enum nrtemu_dtype dt);
size_t nrtemu__dtype_size(enum nrtemu_dtype dt);
nrt_dtype_t nrtemu__dtype_nrt(enum nrtemu_dtype dt);
bool nrtemu__dtype_is_float(enum nrtemu_dtype dt);
bool nrtemu__dtype_is_signed_int(enum nrtemu_dtype dt);
bool nrtemu__dtype_is_unsigned_int(enum nrtemu_dtype dt);

#endif /* NRTEMU_DTYPE_H */
