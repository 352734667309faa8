/*
 * dtypes.c - the element types, as the extension and Python see them.
 *
 * Generated from NRTEMU_DTYPE_LIST (nrt/nrtemu.h), the list the emulator's
 * own table comes from, so that the names libnrt codes map to, and the
 * table nrtpy's Python code reads (_nrtpy.DTYPES), cannot disagree with
 * the emulator.  The list is compiled in rather than read from the loaded
 * library because the real runtime has no such table.
 */
#include "ext.h"

#include <string.h>

static const struct {
    const char *name;
    const char *neff_name;
    size_t size;
    nrt_dtype_t code;
    char kind;
} dtype_rows[] = {
#define DTYPE_ROW(suffix, name, neff, size, code, kind) \
    {name, neff, size, code, kind},
    NRTEMU_DTYPE_LIST(DTYPE_ROW)
#undef DTYPE_ROW
};

#define DTYPE_ROW_COUNT (sizeof dtype_rows / sizeof dtype_rows[0])

const char *
dtype_name_of_code(nrt_dtype_t code)
{
    /* Row 0 is "unknown"; the first row with a code is what it stands
     * for (float8_e4m3 for NRT_DTYPE_FP8_E4). */
    for (size_t i = 1; i < DTYPE_ROW_COUNT; i++) {
        if (dtype_rows[i].code == code && code != NRT_DTYPE_UNKNOWN) {
            return dtype_rows[i].name;
        }
    }
    return dtype_rows[0].name;
}

int
dtype_row_of_name(const char *name, nrt_dtype_t *code, char *kind)
{
    for (size_t i = 1; i < DTYPE_ROW_COUNT; i++) {
        if (strcmp(dtype_rows[i].name, name) == 0) {
            *code = dtype_rows[i].code;
            *kind = dtype_rows[i].kind;
            return 1;
        }
    }
    return 0;
}

int
dtypes_add_to_module(PyObject *module)
{
    /* DTYPES: name -> (libnrt code, item size, kind, NEFF name), in the
     * list's order, "unknown" first. */
    PyObject *table = PyDict_New();
    if (table == NULL) {
        return -1;
    }
    for (size_t i = 0; i < DTYPE_ROW_COUNT; i++) {
        PyObject *row = Py_BuildValue(
            "(inCs)", (int)dtype_rows[i].code, (Py_ssize_t)dtype_rows[i].size,
            (int)dtype_rows[i].kind, dtype_rows[i].neff_name);
        if (row == NULL ||
            PyDict_SetItemString(table, dtype_rows[i].name, row) < 0) {
            Py_XDECREF(row);
            Py_DECREF(table);
            return -1;
        }
        Py_DECREF(row);
    }
    int rc = PyModule_AddObjectRef(module, "DTYPES", table);
    Py_DECREF(table);
    return rc;
}
