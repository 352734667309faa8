/*
 * host_memory.c - the host side of a copy: a NumPy array or any object
 * that exports the buffer protocol, as one C-contiguous byte range.
 */
#include "ext.h"
#include "numpy_api.h"

int
host_memory_get(PyObject *obj, bool writable, host_memory *mem)
{
    mem->buf = NULL;
    mem->len = 0;
    mem->owner = NULL;
    mem->has_view = false;

    if (PyArray_Check(obj)) {
        PyArrayObject *a = (PyArrayObject *)obj;
        if (PyDataType_REFCHK(PyArray_DESCR(a))) {
            PyErr_Format(PyExc_TypeError,
                         "arrays of dtype %R hold Python objects and cannot "
                         "be copied to or from a device",
                         (PyObject *)PyArray_DESCR(a));
            return -1;
        }
        if (!PyArray_IS_C_CONTIGUOUS(a)) {
            PyErr_SetString(PyExc_ValueError, "ndarray is not C-contiguous");
            return -1;
        }
        if (writable && !PyArray_ISWRITEABLE(a)) {
            PyErr_SetString(PyExc_ValueError, "ndarray is read-only");
            return -1;
        }
        mem->buf = PyArray_DATA(a);
        mem->len = (size_t)PyArray_NBYTES(a);
        mem->owner = Py_NewRef(obj);
        return 0;
    }
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &mem->view, flags) < 0) {
        return -1;
    }
    mem->buf = mem->view.buf;
    mem->len = (size_t)mem->view.len;
    mem->has_view = true;
    return 0;
}

void
host_memory_release(host_memory *mem)
{
    if (mem->has_view) {
        PyBuffer_Release(&mem->view);
        mem->has_view = false;
    }
    Py_CLEAR(mem->owner);
}
