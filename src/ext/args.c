/*
 * args.c - argument parsing for the per-call hot paths.
 *
 * PyArg_ParseTupleAndKeywords needs a tuple and a dict built for every
 * call; METH_FASTCALL|METH_KEYWORDS methods get the arguments as an array
 * instead, and this matches them against the parameter names directly.
 * It serves NrtpyTensor.from_numpy and numpy (the copy path) and
 * Nrtpy.execute (the model call path), where it is a measurable part of
 * a call on small data.  Converting the values is left to the caller.
 */
#include "ext.h"

/*
 * Match positional and keyword arguments of a METH_FASTCALL|METH_KEYWORDS
 * call against `names`; unspecified optional slots keep their defaults.
 */
int
parse_args(const char *func, PyObject *const *args, Py_ssize_t nargs,
           PyObject *kwnames, const char *const *names, int nnames,
           int nrequired, PyObject **out)
{
    if (nargs > nnames) {
        PyErr_Format(PyExc_TypeError,
                     "%s() takes at most %d arguments (%zd given)", func,
                     nnames, nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        out[i] = args[i];
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int found = -1;
        for (int j = 0; j < nnames; j++) {
            if (PyUnicode_CompareWithASCIIString(key, names[j]) == 0) {
                found = j;
                break;
            }
        }
        if (found < 0) {
            PyErr_Format(PyExc_TypeError,
                         "%s() got an unexpected keyword argument %R", func,
                         key);
            return -1;
        }
        if (found < nargs) {
            PyErr_Format(PyExc_TypeError,
                         "%s() got multiple values for argument '%s'", func,
                         names[found]);
            return -1;
        }
        out[found] = args[nargs + k];
    }
    for (int j = 0; j < nrequired; j++) {
        if (out[j] == NULL) {
            PyErr_Format(PyExc_TypeError,
                         "%s() missing required argument '%s'", func,
                         names[j]);
            return -1;
        }
    }
    return 0;
}

const char *
tensor_name_utf8(PyObject *name, const char *what, const char *part)
{
    Py_ssize_t len;
    const char *text = PyUnicode_AsUTF8AndSize(name, &len);

    if (text != NULL && memchr(text, '\0', (size_t)len) != NULL) {
        PyErr_Format(PyExc_ValueError,
                     "%s%s %R contains a NUL character, which a tensor name "
                     "cannot hold (libnrt would see the name end there)",
                     what, part, name);
        return NULL;
    }
    return text;
}
