/*
 * errors.c - from libnrt statuses and nrtpy misuse to Python exceptions.
 */
#include "ext.h"

#include <stdarg.h>
#include <stdio.h>

const char *
status_name(NRT_STATUS status)
{
    switch ((int)status) {
#define STATUS_CASE(name, value, text) \
    case value:                        \
        return #name;
        NRTEMU_STATUS_LIST(STATUS_CASE)
#undef STATUS_CASE
    default:
        return "UNKNOWN STATUS";
    }
}

void
nrt_error_detail(char *buf, size_t len)
{
    const char *detail = NULL;
    if (libnrt.nrtemu_last_error != NULL) {
        detail = libnrt.nrtemu_last_error();
    }
    snprintf(buf, len, "%s", detail != NULL ? detail : "");
}

PyObject *
raise_nrt_error(NRT_STATUS status, const char *action)
{
    char detail[1024];
    nrt_error_detail(detail, sizeof detail);
    return raise_nrt_error_detail(status, action, detail);
}

PyObject *
raise_nrt_error_detail(NRT_STATUS status, const char *action,
                       const char *detail)
{
    PyObject *msg;
    if (detail != NULL && detail[0] != '\0') {
        msg = PyUnicode_FromFormat("NRT Error %s(%d): %s: %s",
                                   status_name(status), (int)status, action,
                                   detail);
    } else {
        msg = PyUnicode_FromFormat("NRT Error %s(%d): %s", status_name(status),
                                   (int)status, action);
    }
    if (msg == NULL) {
        return NULL;
    }
    PyObject *exc = PyObject_CallOneArg(ext_state->NrtError, msg);
    Py_DECREF(msg);
    if (exc == NULL) {
        return NULL;
    }
    PyObject *code = PyLong_FromLong((long)status);
    PyObject *name = PyUnicode_FromString(status_name(status));
    if (code == NULL || name == NULL ||
        PyObject_SetAttrString(exc, "status_code", code) < 0 ||
        PyObject_SetAttrString(exc, "status_name", name) < 0) {
        Py_XDECREF(code);
        Py_XDECREF(name);
        Py_DECREF(exc);
        return NULL;
    }
    Py_DECREF(code);
    Py_DECREF(name);
    PyErr_SetObject(ext_state->NrtError, exc);
    Py_DECREF(exc);
    return NULL;
}

PyObject *
raise_nrtpy_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *text = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (text == NULL) {
        return NULL;
    }
    PyErr_Format(ext_state->NrtpyError, "Nrtpy Error: %U", text);
    Py_DECREF(text);
    return NULL;
}
