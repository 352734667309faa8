/*
 * ops.c - the operations of emulator programs, as Python sees them.
 *
 * Generated from NRTEMU_OP_LIST and NRTEMU_ATTR_LIST (the emulator's
 * op_list.h, which depends on nothing), the rows its own op
 * table comes from, so that the ops nrtpy's tracer and HLO compiler
 * write, and what they know of each (_nrtpy.OPS), cannot disagree with the
 * emulator.  Compiled in, as the dtype table is (dtypes.c): compiling a
 * NEFF needs no library loaded.
 */
#include "ext.h"

#include "../emulator/kernels/op_list.h"

NRTEMU_OP_COLUMN_NAMES;

static const char *const attr_keys[NRTEMU_ATTR_COUNT] = {
#define ATTR_KEY(suffix, key) [NRTEMU_ATTR_##suffix] = key,
    NRTEMU_ATTR_LIST(ATTR_KEY)
#undef ATTR_KEY
};

static const struct {
    const char *name;
    const char *family; /* the loop family; "NONE": a kernel of its own */
    int arity;
    unsigned attrs, flags;
} op_rows[] = {
#define OP_ROW(suffix, name, arity, cls, check, run, cost, attrs, flags) \
    {name, #cls, arity, attrs, flags},
    NRTEMU_OP_LIST(OP_ROW)
#undef OP_ROW
};

/* "UNARY" -> "unary"; "NONE" -> None. */
static PyObject *
family_of(const char *cls)
{
    char lower[32];
    size_t n = 0;

    if (strcmp(cls, "NONE") == 0) {
        return Py_NewRef(Py_None);
    }
    for (; cls[n] != '\0' && n + 1 < sizeof lower; n++) {
        lower[n] =
            (char)(cls[n] >= 'A' && cls[n] <= 'Z' ? cls[n] + 32 : cls[n]);
    }
    return PyUnicode_FromStringAndSize(lower, (Py_ssize_t)n);
}

static PyObject *
attrs_of(unsigned attrs)
{
    PyObject *keys = PyList_New(0);
    for (int i = 0; keys != NULL && i < NRTEMU_ATTR_COUNT; i++) {
        if ((attrs & (1u << i)) != 0) {
            PyObject *k = PyUnicode_FromString(attr_keys[i]);
            if (k == NULL || PyList_Append(keys, k) < 0) {
                Py_XDECREF(k);
                Py_CLEAR(keys);
                break;
            }
            Py_DECREF(k);
        }
    }
    if (keys == NULL) {
        return NULL;
    }
    PyObject *t = PyList_AsTuple(keys);
    Py_DECREF(keys);
    return t;
}

int
ops_add_to_module(PyObject *module)
{
    /* OPS: name -> {"arity", "family", "attrs", "float_only", "streams",
     * "control"}, in the list's order. */
    PyObject *table = PyDict_New();
    if (table == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof op_rows / sizeof op_rows[0]; i++) {
        PyObject *family = family_of(op_rows[i].family);
        PyObject *attrs = family != NULL ? attrs_of(op_rows[i].attrs) : NULL;
        PyObject *row =
            attrs != NULL
                ? Py_BuildValue(
                      "{s:i,s:O,s:O,s:O,s:O,s:O}", "arity", op_rows[i].arity,
                      "family", family, "attrs", attrs, "float_only",
                      (op_rows[i].flags & FLOAT_ONLY) ? Py_True : Py_False,
                      "streams",
                      (op_rows[i].flags & STREAMS) ? Py_True : Py_False,
                      "control",
                      (op_rows[i].flags & CONTROL) ? Py_True : Py_False)
                : NULL;
        Py_XDECREF(family);
        Py_XDECREF(attrs);
        if (row == NULL ||
            PyDict_SetItemString(table, op_rows[i].name, row) < 0) {
            Py_XDECREF(row);
            Py_DECREF(table);
            return -1;
        }
        Py_DECREF(row);
    }
    int rc = PyModule_AddObjectRef(module, "OPS", table);
    Py_DECREF(table);
    return rc;
}
