/*
 * dtype.c - the element-type table of emulator programs.
 *
 * Everything is generated from NRTEMU_DTYPE_LIST (nrt/nrtemu.h), the list
 * the extension and the Python package read too, so names, sizes, codes
 * and kinds cannot drift apart.  Conversions between types live in
 * convert.c.
 */
#include <string.h>

#include "kernels/dtype.h"
#include "util/export.h"

static const nrtemu_dtype_info_t dtype_table[NRTEMU_DTYPE_COUNT] = {
#define NRTEMU_DTYPE_INFO(suffix, name, neff, size, code, kind) \
    {name, neff, size, code, kind},
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
    if (name == NULL || name[0] == '\0') {
        return false;
    }
    /* "unknown" is a placeholder, never a name a program may use.  NumPy
     * names win over NEFF names (none is both with another meaning). */
    for (int i = NRTEMU_DTYPE_UNKNOWN + 1; i < NRTEMU_DTYPE_COUNT; i++) {
        if (strcmp(name, dtype_table[i].name) == 0) {
            *out = (enum nrtemu_dtype)i;
            return true;
        }
    }
    for (int i = NRTEMU_DTYPE_UNKNOWN + 1; i < NRTEMU_DTYPE_COUNT; i++) {
        if (strcmp(name, dtype_table[i].neff_name) == 0) {
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
    return dtype_valid(dt) ? dtype_table[dt].code : NRT_DTYPE_UNKNOWN;
}

static char
dtype_kind(enum nrtemu_dtype dt)
{
    return dtype_valid(dt) ? dtype_table[dt].kind : 'V';
}

nrt_dtype_t
nrtemu__dtype_model_report(enum nrtemu_dtype dt)
{
    /* The 1-byte floats are the fp8 variants. */
    if (dtype_kind(dt) == 'f' && nrtemu__dtype_size(dt) == 1) {
        return NRT_DTYPE_INT8;
    }
    return nrtemu__dtype_nrt(dt);
}

bool
nrtemu__dtype_is_float(enum nrtemu_dtype dt)
{
    return dtype_kind(dt) == 'f';
}

bool
nrtemu__dtype_is_signed_int(enum nrtemu_dtype dt)
{
    return dtype_kind(dt) == 'i';
}

bool
nrtemu__dtype_is_unsigned_int(enum nrtemu_dtype dt)
{
    return dtype_kind(dt) == 'u';
}

NRTEMU_EXPORT const nrtemu_dtype_info_t *
nrtemu_dtype_info(size_t index, size_t *count)
{
    if (count != NULL) {
        *count = NRTEMU_DTYPE_COUNT;
    }
    return index < NRTEMU_DTYPE_COUNT ? &dtype_table[index] : NULL;
}
