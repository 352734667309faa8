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
#include "nrt/nrtemu.h" /* NRTEMU_DTYPE_LIST, the one list */

/* The most dimensions an array has: a NEFF's tensors, a program's buffers. */
#define NRTEMU_MAX_DIMS 8

enum nrtemu_dtype {
#define NRTEMU_DTYPE_ENUM(suffix, name, neff, size, code, kind) \
    NRTEMU_DTYPE_##suffix,
    NRTEMU_DTYPE_LIST(NRTEMU_DTYPE_ENUM)
#undef NRTEMU_DTYPE_ENUM
        NRTEMU_DTYPE_COUNT
};

/* By NumPy name, or by NEFF name; false when unknown. */
bool nrtemu__dtype_from_name(const char *name, enum nrtemu_dtype *out);
const char *nrtemu__dtype_name(enum nrtemu_dtype dt);
size_t nrtemu__dtype_size(enum nrtemu_dtype dt);
nrt_dtype_t nrtemu__dtype_nrt(enum nrtemu_dtype dt);
/*
 * The code nrt_get_model_tensor_info() gives a NEFF tensor of type `dt`:
 * the one the real runtime gives.  That is the type's libnrt code, except
 * that every fp8 variant is NRT_DTYPE_INT8 (the runtime has no code for
 * the fp8 types it loads) and a type without a code is NRT_DTYPE_UNKNOWN.
 */
nrt_dtype_t nrtemu__dtype_model_report(enum nrtemu_dtype dt);
bool nrtemu__dtype_is_float(enum nrtemu_dtype dt);
bool nrtemu__dtype_is_signed_int(enum nrtemu_dtype dt);
bool nrtemu__dtype_is_unsigned_int(enum nrtemu_dtype dt);

#endif /* NRTEMU_DTYPE_H */
