/*
 * fork.c - the extension in a process forked from one with a runtime.
 *
 * A runtime belongs to the process that started it (nrt/nrt.h).  In a
 * forked child the runtime that was live in the parent is closed for good:
 * its token is marked forked and closed, so every tensor, model and
 * runtime method of it raises NrtpyError naming fork, and nothing of it is
 * ever passed to libnrt again (the real runtime must not be called for the
 * parent's handles, and closing them there would be the parent's business).
 * nrtpy.reset() then drops it, and a new runtime claims free cores.
 *
 * The hook runs from os.register_at_fork(after_in_child=...), with the GIL
 * held and before any other Python code of the child.
 */
#include "ext.h"

#include <stdarg.h>
#include <unistd.h>

PyObject *
raise_forked_error(const char *owned_by, long pid)
{
    return raise_nrtpy_error(
        "%s process %ld: this process (%ld) was forked from it, and a "
        "runtime is not shared across fork(). Call nrtpy.reset(), then "
        "start a new runtime.",
        owned_by, pid, (long)getpid());
}

static PyObject *
raise_forked(const runtime_token *token)
{
    return raise_forked_error(
        "this runtime, and its tensors and models, belong to", token->pid);
}

PyObject *
raise_handle_error(const runtime_token *token, const char *fmt, ...)
{
    if (token != NULL && atomic_load(&token->forked)) {
        return raise_forked(token);
    }
    va_list ap;
    va_start(ap, fmt);
    PyObject *text = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (text == NULL) {
        return NULL;
    }
    raise_nrtpy_error("%U", text);
    Py_DECREF(text);
    return NULL;
}

/* The token of a runtime, tensor or model; NULL for anything else. */
static const runtime_token *
token_of(PyObject *obj)
{
    if (Py_IS_TYPE(obj, ext_state->Nrtpy_Type)) {
        return ((NrtpyObject *)obj)->token;
    }
    if (Py_IS_TYPE(obj, ext_state->NrtTensor_Type)) {
        return ((NrtTensorObject *)obj)->token;
    }
    if (Py_IS_TYPE(obj, ext_state->NrtModel_Type)) {
        return ((NrtModelObject *)obj)->token;
    }
    return NULL;
}

static PyObject *
module_raise_if_forked(PyObject *module, PyObject *obj)
{
    (void)module;
    const runtime_token *token = token_of(obj);
    if (token == NULL) {
        PyErr_Format(PyExc_TypeError,
                     "expected an Nrtpy, NrtTensor or NrtModel, not %s",
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    if (atomic_load(&token->forked)) {
        return raise_forked(token);
    }
    Py_RETURN_NONE;
}

static PyObject *
after_fork_in_child(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    /* (a fork during interpreter teardown may find the module gone) */
    if (ext_state == NULL) {
        Py_RETURN_NONE;
    }
    NrtpyObject *rt = ext_state->live_runtime;
    if (rt != NULL) {
        atomic_store(&rt->token->forked, true);
        atomic_store(&rt->token->closed, true);
        ext_state->live_runtime = NULL;
    }
    /* A thread of the parent that was starting a runtime does not exist
     * here; its runtime, if it started, was the parent's. */
    ext_state->initializing = false;
    /* The parent's trace sessions are the parent's (sys_trace_object.c):
     * the child's first session starts a trace of its own. */
    ext_state->live_sessions = 0;
    Py_RETURN_NONE;
}

static PyMethodDef after_fork_def = {
    "_after_fork_in_child", after_fork_in_child, METH_NOARGS,
    "Close the parent's runtime in a forked child (fork.c)."};

static PyMethodDef fork_methods[] = {
    {"_raise_if_forked", module_raise_if_forked, METH_O,
     "_raise_if_forked(obj)\n--\n\nRaise NrtpyError when obj (an Nrtpy, "
     "NrtTensor or NrtModel) belongs\nto the runtime of the process this "
     "one was forked from."},
    {NULL, NULL, 0, NULL},
};

int
fork_support_init(PyObject *module)
{
    if (PyModule_AddFunctions(module, fork_methods) < 0) {
        return -1;
    }
    /* No module reference in the hook: it outlives the module, and finds
     * the state (or its absence) through ext_state. */
    PyObject *hook = PyCFunction_NewEx(&after_fork_def, NULL, NULL);
    PyObject *os = PyImport_ImportModule("os");
    PyObject *kwargs = Py_BuildValue("{sO}", "after_in_child", hook);
    PyObject *args = PyTuple_New(0);
    PyObject *result = NULL;
    if (hook != NULL && os != NULL && kwargs != NULL && args != NULL) {
        PyObject *reg = PyObject_GetAttrString(os, "register_at_fork");
        if (reg != NULL) {
            result = PyObject_Call(reg, args, kwargs);
            Py_DECREF(reg);
        }
    }
    Py_XDECREF(hook);
    Py_XDECREF(os);
    Py_XDECREF(kwargs);
    Py_XDECREF(args);
    if (result == NULL) {
        return -1;
    }
    Py_DECREF(result);
    return 0;
}
