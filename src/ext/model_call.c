/*
 * model_call.c - NrtpyModel.__call__, whose common case runs in C.
 *
 * A call with no trace and nothing to log is checked against the model's
 * signature (NrtModel._set_signature) and executed without running any
 * Python code: with the caller's outputs, or with outputs allocated from
 * the signature when none are given.  Every other call, and any call
 * that does not match the signature exactly, goes to NrtpyModel._call,
 * the Python implementation, which checks in full and says what is
 * wrong.
 * The function is installed on the class as a method descriptor (the kind
 * of object C types' methods are), which the interpreter calls with
 * `self` prepended and without making a bound method first.
 */
#include "ext.h"

static const char *const call_names[] = {"inputs", "outputs", "save_trace",
                                         "ntff_name"};

/* nrtpy's logger.isEnabledFor, the logger's level cache (a dict, or
 * NULL), the int 20 (INFO), and the interned attribute name "model_ref":
 * set once, by module_model_call_method, and kept for the process. */
static PyObject *log_enabled_for, *log_cache, *log_info, *str_model_ref;

/* 1 when the logger would log at INFO, 0 when not, -1 on error. */
static int
logging_info(void)
{
    if (log_enabled_for == NULL) {
        return 1; /* not set up: let the Python path decide */
    }
    /* logging keeps each logger's answers in a dict it clears (in place)
     * whenever levels change; a cached False is the common case, read
     * without calling Python.  A missing or True entry asks the logger,
     * so a cache that is not what we expect only costs time. */
    if (log_cache != NULL) {
        PyObject *cached = PyDict_GetItemWithError(log_cache, log_info);
        if (cached == Py_False) {
            return 0;
        }
        if (cached == NULL && PyErr_Occurred()) {
            return -1;
        }
    }
    PyObject *r = PyObject_CallOneArg(log_enabled_for, log_info);
    if (r == NULL) {
        return -1;
    }
    int on = PyObject_IsTrue(r);
    Py_DECREF(r);
    return on;
}

/*
 * New output tensors for `m` from its signature (auto_outputs), in a new
 * dict by name, on the model's core.  NULL with an exception.
 */
static PyObject *
outputs_allocate(NrtModelObject *m)
{
    NrtpyObject *rt = default_runtime_get();
    PyObject *outputs = rt != NULL ? PyDict_New() : NULL;
    if (outputs == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = m->n_inputs; i < m->n_inputs + m->n_outputs; i++) {
        const io_spec *spec = &m->specs[i];
        NrtTensorObject *ref =
            tensor_allocate(rt, spec->size, m->core_id, spec->name, false);
        PyObject *t =
            ref != NULL
                ? nrtpy_tensor_wrap((PyObject *)ref, spec->ndim, spec->dims,
                                    spec->dtype, spec->name, spec->size)
                : NULL;
        Py_XDECREF(ref);
        if (t == NULL || PyDict_SetItem(outputs, spec->name, t) < 0) {
            Py_XDECREF(t);
            Py_DECREF(outputs);
            return NULL;
        }
        Py_DECREF(t);
    }
    return outputs;
}

/* The common call without outputs: new ones, then as with outputs.  NULL
 * without an exception when the call needs the Python path. */
static PyObject *
call_auto(NrtModelObject *m, PyObject *inputs)
{
    if (!m->auto_outputs || model_is_unloaded(m)) {
        return NULL;
    }
    int ok = mapping_matches(m, inputs, m->specs, m->n_inputs);
    if (ok <= 0) {
        return NULL;
    }
    PyObject *outputs = outputs_allocate(m);
    if (outputs == NULL) {
        return NULL;
    }
    if (model_execute(m, inputs, outputs, NULL) < 0) {
        Py_CLEAR(outputs);
    }
    return outputs;
}

static PyObject *
model_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
           PyObject *kwnames)
{
    PyObject *argv[4] = {NULL, Py_None, Py_False, Py_None};
    if (parse_args("__call__", args, nargs, kwnames, call_names, 4, 1, argv) <
        0) {
        return NULL;
    }
    /* (an ntff_name of the wrong type goes to the Python path, which
     * refuses it even when there is no trace to write) */
    if (argv[2] == Py_False &&
        (argv[3] == Py_None || PyUnicode_Check(argv[3]))) {
        int info = logging_info();
        if (info < 0) {
            return NULL;
        }
        PyObject *ref = info ? NULL : PyObject_GetAttr(self, str_model_ref);
        if (ref != NULL && Py_IS_TYPE(ref, ext_state->NrtModel_Type)) {
            NrtModelObject *m = (NrtModelObject *)ref;
            PyObject *result = NULL;
            int done;
            if (argv[1] != Py_None) {
                done = model_execute_checked(m, argv[0], argv[1]);
                result = done > 0 ? Py_NewRef(Py_None) : NULL;
            } else {
                result = call_auto(m, argv[0]);
                done = result != NULL ? 1 : PyErr_Occurred() ? -1 : 0;
            }
            Py_DECREF(ref);
            if (done != 0) {
                return result; /* the result, or NULL with the error */
            }
        } else if (ref != NULL) {
            Py_DECREF(ref);
        } else if (!info) {
            return NULL; /* no model_ref: AttributeError */
        }
    }
    return PyObject_CallMethod(self, "_call", "OOOO", argv[0], argv[1],
                               argv[2], argv[3]);
}

/* A method of the class: the descriptor checks `self` is an instance. */
static PyMethodDef model_call_def = {
    "__call__", (PyCFunction)(void (*)(void))model_call,
    METH_FASTCALL | METH_KEYWORDS,
    "__call__($self, /, inputs, outputs=None, save_trace=False, "
    "ntff_name=None)\n--\n\n"
    "Execute once.\n\n"
    "Returns the outputs (new tensors, by output name) when ``outputs`` is "
    "None,\nelse None.  An output ``<o>`` whose input "
    "``<o>.must_alias_input`` is given\nis that input tensor, updated in "
    "place, not a new one.  With ``save_trace``\nthe emulator writes a "
    "trace of the execution to ``ntff_name`` (default: the\nNEFF path with "
    "``.ntff``) in Chrome trace-event JSON, which Perfetto opens.\n\n"
    "Raises:\n"
    "    ValueError: unknown or missing names, or a tensor whose shape, "
    "dtype,\n        size or core does not match (the message lists what "
    "the model\n        expects).\n"
    "    NrtError: the execution failed (e.g. NRT_EXEC_OOB for an "
    "out-of-bounds\n        gather).\n"
    "    NrtpyError: the model is unloaded, or a tensor is freed."};

PyObject *
module_model_call_method(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *cls, *logger;
    if (!PyArg_ParseTuple(args, "O!O:_model_call_method", &PyType_Type, &cls,
                          &logger)) {
        return NULL;
    }
    PyObject *is_enabled_for = PyObject_GetAttrString(logger, "isEnabledFor");
    if (is_enabled_for == NULL) {
        return NULL;
    }
    PyObject *cache = PyObject_GetAttrString(logger, "_cache");
    if (cache == NULL) {
        PyErr_Clear();
    } else if (!PyDict_CheckExact(cache)) {
        Py_CLEAR(cache);
    }
    Py_XSETREF(log_cache, cache);
    if (log_info == NULL && (log_info = PyLong_FromLong(20)) == NULL) {
        return NULL;
    }
    if (str_model_ref == NULL &&
        (str_model_ref = PyUnicode_InternFromString("model_ref")) == NULL) {
        return NULL;
    }
    Py_XSETREF(log_enabled_for, is_enabled_for);
    return PyDescr_NewMethod((PyTypeObject *)cls, &model_call_def);
}
