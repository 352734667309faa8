/*
 * module.c - nrtpy._nrtpy: module state, exceptions, module functions.
 */
#define NRTPY_NUMPY_IMPORT
#include "ext.h"
#include "numpy_api.h"

module_state *ext_state;

/* 0 when a libnrt is loaded, else -1 with the ImportError saying why no
 * library loaded (module_exec_without_library). */
static int
require_library(void)
{
    if (libnrt.handle != NULL) {
        return 0;
    }
    PyErr_SetObject(PyExc_ImportError,
                    ext_state != NULL && ext_state->libnrt_error != NULL
                        ? ext_state->libnrt_error
                        : Py_None);
    return -1;
}

static PyObject *
module_library_info(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    if (require_library() < 0) {
        return NULL;
    }
    PyObject *info = PyDict_New();
    PyObject *v = NULL;
    if (info == NULL) {
        return NULL;
    }
    v = PyUnicode_DecodeFSDefault(libnrt.path);
    if (v == NULL || PyDict_SetItemString(info, "library", v) < 0) {
        goto fail;
    }
    Py_CLEAR(v);
    if (PyDict_SetItemString(info, "emulated",
                             libnrt.emulated ? Py_True : Py_False) < 0) {
        goto fail;
    }
    nrt_version_t ver;
    memset(&ver, 0, sizeof ver);
    if (libnrt.nrt_get_version != NULL &&
        libnrt.nrt_get_version(&ver, sizeof ver) == NRT_SUCCESS) {
        v = PyUnicode_FromFormat(
            "%llu.%llu.%llu.%llu", (unsigned long long)ver.rt_major,
            (unsigned long long)ver.rt_minor, (unsigned long long)ver.rt_patch,
            (unsigned long long)ver.rt_maintenance);
        ver.rt_detail[sizeof ver.rt_detail - 1] = '\0';
    } else {
        v = Py_NewRef(Py_None);
    }
    if (v == NULL || PyDict_SetItemString(info, "version", v) < 0) {
        goto fail;
    }
    Py_CLEAR(v);
    v = PyUnicode_FromString(ver.rt_detail);
    if (v == NULL || PyDict_SetItemString(info, "version_detail", v) < 0) {
        goto fail;
    }
    Py_CLEAR(v);
    if (libnrt.nrtemu_instance_name != NULL) {
        v = PyUnicode_FromString(libnrt.nrtemu_instance_name());
    } else {
        v = Py_NewRef(Py_None);
    }
    if (v == NULL || PyDict_SetItemString(info, "instance", v) < 0) {
        goto fail;
    }
    Py_CLEAR(v);
    uint32_t total = 0;
    if (libnrt.nrt_get_total_nc_count != NULL &&
        libnrt.nrt_get_total_nc_count(&total) == NRT_SUCCESS) {
        v = PyLong_FromUnsignedLong(total);
    } else {
        v = Py_NewRef(Py_None);
    }
    if (v == NULL || PyDict_SetItemString(info, "total_cores", v) < 0) {
        goto fail;
    }
    Py_CLEAR(v);
    return info;
fail:
    Py_XDECREF(v);
    Py_DECREF(info);
    return NULL;
}

static PyObject *
module_memory_stats(PyObject *module, PyObject *arg)
{
    (void)module;
    long core = PyLong_AsLong(arg);
    if (core == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (core < 0 || core > INT32_MAX) {
        PyErr_Format(PyExc_ValueError,
                     "core_id must be a non-negative int, got %ld", core);
        return NULL;
    }
    if (require_library() < 0 ||
        LIBNRT_REQUIRE(nrt_get_vnc_memory_stats) < 0) {
        return NULL;
    }
    nrt_vnc_memory_stats_t stats = {0, 0};
    size_t written = 0;
    NRT_STATUS st = libnrt.nrt_get_vnc_memory_stats((uint32_t)core, &stats,
                                                    sizeof stats, &written);
    if (st != NRT_SUCCESS) {
        return raise_nrt_error(st, "Failed to get memory stats");
    }
    return Py_BuildValue("{s:n,s:n}", "bytes_used",
                         (Py_ssize_t)stats.bytes_used, "bytes_limit",
                         (Py_ssize_t)stats.bytes_limit);
}

static PyObject *
module_status_name(PyObject *module, PyObject *arg)
{
    (void)module;
    long code = PyLong_AsLong(arg);
    if (code == -1 && PyErr_Occurred()) {
        return NULL;
    }
    return PyUnicode_FromString(status_name((NRT_STATUS)code));
}

static PyMethodDef module_methods[] = {
    {"library_info", module_library_info, METH_NOARGS,
     "library_info()\n--\n\nThe loaded libnrt: library path, "
     "emulated, version, instance, total_cores."},
    {"memory_stats", module_memory_stats, METH_O,
     "memory_stats(core_id)\n--\n\nbytes_used and bytes_limit of a "
     "core's device memory (the runtime must be initialised)."},
    {"_model_call_method", module_model_call_method, METH_VARARGS,
     "_model_call_method(cls, logger)\n--\n\nNrtpyModel.__call__, "
     "implemented in C (model_call.c): a method\nof `cls`, logging to "
     "`logger`."},
    {"neff_describe", module_neff_describe, METH_O,
     "neff_describe(path)\n--\n\nThe NEFF at path as JSON text (header, "
     "I/O table, subgraphs, files),\nread with the emulator's NEFF reader "
     "and its limits.  OSError for an\nunreadable file, ValueError for an "
     "invalid NEFF."},
    {"status_name", module_status_name, METH_O,
     "status_name(code)\n--\n\nName of an NRT_STATUS value."},
    {NULL, NULL, 0, NULL},
};

static int
add_exceptions(PyObject *module, module_state *st)
{
    PyObject *attrs = Py_BuildValue("{s:O,s:O}", "status_code", Py_None,
                                    "status_name", Py_None);
    if (attrs == NULL) {
        return -1;
    }
    st->NrtpyRuntimeError = PyErr_NewExceptionWithDoc(
        "nrtpy._nrtpy.NrtpyRuntimeError",
        "Base of the errors raised by nrtpy.", PyExc_RuntimeError, NULL);
    if (st->NrtpyRuntimeError == NULL) {
        goto fail;
    }
    st->NrtpyError = PyErr_NewExceptionWithDoc(
        "nrtpy._nrtpy.NrtpyError",
        "Misuse detected by nrtpy itself: a freed tensor, a closed runtime, "
        "an out-of-bounds access.",
        st->NrtpyRuntimeError, NULL);
    if (st->NrtpyError == NULL) {
        goto fail;
    }
    st->NrtError = PyErr_NewExceptionWithDoc(
        "nrtpy._nrtpy.NrtError",
        "A libnrt call failed.  status_code is the NRT_STATUS value and "
        "status_name its name.",
        st->NrtpyRuntimeError, attrs);
    if (st->NrtError == NULL) {
        goto fail;
    }
    Py_DECREF(attrs);
    if (PyModule_AddObjectRef(module, "NrtpyRuntimeError",
                              st->NrtpyRuntimeError) < 0 ||
        PyModule_AddObjectRef(module, "NrtpyError", st->NrtpyError) < 0 ||
        PyModule_AddObjectRef(module, "NrtError", st->NrtError) < 0) {
        return -1;
    }
    return 0;
fail:
    Py_DECREF(attrs);
    return -1;
}

/*
 * When no libnrt loads, the module still offers what needs none: the
 * exceptions, the dtype table, the NEFF constants and neff_describe (the
 * extension's own reader), so that the tools which only compile or print
 * paths (nrtpy-cc, python -m nrtpy cflags) work.  Nothing that would call
 * into the library exists then: the runtime, tensor, model and trace
 * types are not added, library_info and memory_stats raise, and the
 * reason is LIBNRT_ERROR, which nrtpy/__init__.py raises as ImportError
 * for every other importer.  Any error but the library's (a warning
 * turned into an error, no memory) fails the import as before.
 */
static int
module_exec_without_library(PyObject *module, module_state *st)
{
    PyObject *type, *value, *tb, *reason = NULL;

    if (!PyErr_ExceptionMatches(PyExc_ImportError)) {
        ext_state = NULL;
        return -1;
    }
    PyErr_Fetch(&type, &value, &tb);
    if (value != NULL) {
        reason = PyObject_Str(value);
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    if (reason == NULL ||
        PyModule_AddObjectRef(module, "LIBNRT_ERROR", reason) < 0 ||
        add_exceptions(module, st) < 0 || dtypes_add_to_module(module) < 0 ||
        ops_add_to_module(module) < 0 ||
        neff_constants_add_to_module(module) < 0) {
        Py_XDECREF(reason);
        ext_state = NULL;
        return -1;
    }
    st->libnrt_error = reason;
    return 0;
}

static int
module_exec(PyObject *module)
{
    if (ext_state != NULL) {
        PyErr_SetString(PyExc_ImportError,
                        "nrtpy._nrtpy can be loaded only once per process "
                        "(libnrt is a process-wide runtime)");
        return -1;
    }
    if (PyArray_ImportNumPyAPI() < 0) {
        return -1;
    }
    module_state *st = PyModule_GetState(module);
    ext_state = st;
    if (libnrt_load() < 0) {
        return module_exec_without_library(module, st);
    }
    if (PyModule_AddObjectRef(module, "LIBNRT_ERROR", Py_None) < 0) {
        goto fail;
    }
    st->str_unnamed = PyUnicode_InternFromString("unnamed_tensor");
    if (st->str_unnamed == NULL || add_exceptions(module, st) < 0 ||
        runtime_type_init(module) < 0 || tensor_type_init(module) < 0 ||
        nrtpy_tensor_type_init(module) < 0 || model_type_init(module) < 0 ||
        tensor_metadata_type_init(module) < 0 ||
        model_tensor_info_type_init(module) < 0 ||
        sys_trace_type_init(module) < 0 || dtypes_add_to_module(module) < 0 ||
        ops_add_to_module(module) < 0 ||
        neff_constants_add_to_module(module) < 0 ||
        fork_support_init(module) < 0) {
        goto fail;
    }
    return 0;
fail:
    ext_state = NULL;
    return -1;
}

static int
module_traverse(PyObject *module, visitproc visit, void *arg)
{
    module_state *st = PyModule_GetState(module);
    Py_VISIT(st->NrtpyRuntimeError);
    Py_VISIT(st->NrtpyError);
    Py_VISIT(st->NrtError);
    Py_VISIT(st->Nrtpy_Type);
    Py_VISIT(st->NrtTensor_Type);
    Py_VISIT(st->NrtpyTensor_Type);
    Py_VISIT(st->NrtModel_Type);
    Py_VISIT(st->TensorMetadata_Type);
    Py_VISIT(st->ModelTensorInfo_Type);
    Py_VISIT(st->SystemTraceSession_Type);
    Py_VISIT(st->default_runtime);
    Py_VISIT(st->libnrt_error);
    return 0;
}

static int
module_clear(PyObject *module)
{
    module_state *st = PyModule_GetState(module);
    Py_CLEAR(st->NrtpyRuntimeError);
    Py_CLEAR(st->NrtpyError);
    Py_CLEAR(st->NrtError);
    Py_CLEAR(st->Nrtpy_Type);
    Py_CLEAR(st->NrtTensor_Type);
    Py_CLEAR(st->NrtpyTensor_Type);
    Py_CLEAR(st->NrtModel_Type);
    Py_CLEAR(st->TensorMetadata_Type);
    Py_CLEAR(st->ModelTensorInfo_Type);
    Py_CLEAR(st->SystemTraceSession_Type);
    Py_CLEAR(st->default_runtime);
    Py_CLEAR(st->str_unnamed);
    Py_CLEAR(st->libnrt_error);
    return 0;
}

/* The module's state goes with the module; the process-wide pointer to
 * it must not outlive it (a later import would otherwise be refused). */
static void
module_free(void *module)
{
    module_clear((PyObject *)module);
    if (ext_state == PyModule_GetState((PyObject *)module)) {
        ext_state = NULL;
    }
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
#ifdef Py_mod_gil
    /* Tensors and models count their users and the runtime its sessions
     * under the GIL: on a free-threaded build the GIL must stay on. */
    {Py_mod_gil, Py_MOD_GIL_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "nrtpy._nrtpy",
    .m_doc = "nrtpy native runtime bindings (plain C over the libnrt ABI).",
    .m_size = sizeof(module_state),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC
PyInit__nrtpy(void)
{
    return PyModuleDef_Init(&module_def);
}
