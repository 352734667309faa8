/*
 * dtype.c - the element-type table of emulator programs.
 *
 * Everything is generated from NRTEMU_DTYPE_LIST, so names, sizes and NRT
 * codes cannot drift apart.  Conversions between types live in convert.c.
 */
#include <string.h>

#include "dtype.h"

struct dtype_info {
    const char *name;
    size_t size;
    nrt_dtype_t nrt;
};

static const struct dtype_info dtype_table[NRTEMU_DTYPE_COUNT] = {
#define NRTEMU_DTYPE_INFO(suffix, name, size, code) {name, size, code},
    NRTEMU_DTYPE_LIST(NRTEMU_DTYPE_INFO)
#undef NRTEMU_DTYPE_INFO
};

static bool
dtype_valid(enum nrtemu_dtype dt)
{
    return (unsigned)dt < NRTEMU_DTYPE_COUNT;
}

bool
nrtemu__dtype_from_name(const char *name, enum nrtemu_dtype *out)
{
    if (name == NULL) {
        return false;
    }
    /* "unknown" is a placeholder, never a name a program may use. */
    for (int i = NRTEMU_DTYPE_UNKNOWN + 1; i < NRTEMU_DTYPE_COUNT; i++) {
        if (strcmp(name, dtype_table[i].name) == 0) {
            *out = (enum nrtemu_dtype)i;
            return true;
        }
    }
    return false;
}

const char *
nrtemu__dtype_name(enum nrtemu_dtype dt)
{
    return dtype_valid(dt) ? dtype_table[dt].name : "unknown";
}

size_t
nrtemu__dtype_size(enum nrtemu_dtype dt)
{
    return dtype_valid(dt) ? dtype_table[dt].size : 0;
}

nrt_dtype_t
nrtemu__dtype_nrt(enum nrtemu_dtype dt)
{
    return dtype_valid(dt) ? dtype_table[dt].nrt : NRT_DTYPE_UNKNOWN;
}

bool
nrtemu__dtype_is_float(enum nrtemu_dtype dt)
{
    switch (dt) {
    case NRTEMU_DTYPE_FLOAT16:
    case NRTEMU_DTYPE_BFLOAT16:
    case NRTEMU_DTYPE_FLOAT32:
    case NRTEMU_DTYPE_FLOAT64:
    case NRTEMU_DTYPE_FLOAT8_E4M3:
    case NRTEMU_DTYPE_FLOAT8_E4M3FN:
    case NRTEMU_DTYPE_FLOAT8_E5M2:
    case NRTEMU_DTYPE_FLOAT8_E3M4:
        return true;
    default:
        return false;
    }
}

bool
nrtemu__dtype_is_signed_int(enum nrtemu_dtype dt)
{
    switch (dt) {
    case NRTEMU_DTYPE_INT8:
    case NRTEMU_DTYPE_INT16:
    case NRTEMU_DTYPE_INT32:
    case NRTEMU_DTYPE_INT64:
        return true;
    default:
        return false;
    }
}

bool
nrtemu__dtype_is_unsigned_int(enum nrtemu_dtype dt)
{
    switch (dt) {
    case NRTEMU_DTYPE_UINT8:
    case NRTEMU_DTYPE_UINT16:
    case NRTEMU_DTYPE_UINT32:
    case NRTEMU_DTYPE_UINT64:
        return true;
    default:
        return false;
    }
}
