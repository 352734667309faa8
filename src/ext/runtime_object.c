/*
 * runtime_object.c - Nrtpy: the low-level runtime, one live per process.
 *
 * Creating one runs nrt_init(); close() runs nrt_close() once every
 * operation in flight on another thread has finished.  Tensors hold the
 * runtime's token, not the runtime, so a runtime collected before its
 * tensors leaves them safely "freed".
 */
#include "ext.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

NrtTensorObject *tensor_slice(NrtTensorObject *src, size_t offset, size_t size,
                              PyObject *name);

int
runtime_check_open(NrtpyObject *rt)
{
    if (atomic_load(&rt->token->closed)) {
        raise_handle_error(rt->token,
                           "The runtime is closed. Create a new one, or use "
                           "nrtpy.get_nrtpy_singleton().");
        return -1;
    }
    return 0;
}

/* A non-negative int that fits in size_t; TypeError otherwise, as nrtpy
 * documents for sizes, offsets and core ids. */
static int
size_converter(PyObject *obj, void *out)
{
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "expected a non-negative int, got %s",
                     Py_TYPE(obj)->tp_name);
        return 0;
    }
    size_t v = PyLong_AsSize_t(obj);
    if (v == (size_t)-1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "expected a non-negative int that fits in 64 bits, "
                         "got %R",
                         obj);
        }
        return 0;
    }
    *(size_t *)out = v;
    return 1;
}

/* ------------------------------------------------------------ core ids */

/* How many NeuronCores an index may name: the visible ones (logical
 * indices, what calls take), or with `physical` the instance's (what
 * NEURON_RT_VISIBLE_CORES lists).  0 when libnrt cannot say: then only
 * the type and sign are checked, and the runtime refuses the rest. */
static uint32_t
core_count(bool physical)
{
    uint32_t n = 0;
    NRT_STATUS st = NRT_FAILURE;
    if (!physical) {
        st = libnrt.nrt_get_visible_nc_count(&n);
    } else if (libnrt.nrt_get_total_nc_count != NULL) {
        st = libnrt.nrt_get_total_nc_count(&n);
    }
    return st == NRT_SUCCESS ? n : 0;
}

int
core_id_check(PyObject *obj, const char *what, bool physical, uint32_t *out)
{
    /* bool is an int to Python, never a core to us; NumPy integers are
     * ints (__index__), as everywhere else in NumPy. */
    PyObject *index = NULL;
    if (PyLong_CheckExact(obj)) {
        index = Py_NewRef(obj);
    } else if (!PyBool_Check(obj) && PyIndex_Check(obj)) {
        index = PyNumber_Index(obj);
        if (index == NULL) {
            return -1;
        }
    }
    if (index == NULL) {
        PyErr_Format(PyExc_TypeError, "%s must %s, got %R: %.200R", what,
                     physical ? "contain integers" : "be an int",
                     (PyObject *)Py_TYPE(obj), obj);
        return -1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow < 0 || (overflow == 0 && v < 0)) {
        PyErr_Format(PyExc_ValueError, "%s must be non-negative, got %.200R",
                     physical ? "Core ID" : what, obj);
        return -1;
    }
    /* Core 0 exists whenever a runtime can run at all: the common call
     * asks libnrt nothing. */
    uint32_t count = overflow == 0 && v == 0 ? 1 : core_count(physical);
    if (overflow > 0 || v > INT32_MAX || (count > 0 && v >= count)) {
        if (count == 0) {
            PyErr_Format(PyExc_ValueError, "%s %.200R is out of range", what,
                         obj);
        } else if (physical) {
            PyErr_Format(PyExc_ValueError,
                         "%s: core %.200R does not exist; the instance's "
                         "NeuronCores are 0 to %u",
                         what, obj, (unsigned)count - 1);
        } else {
            PyErr_Format(PyExc_ValueError,
                         "%s %.200R does not exist; the visible NeuronCores "
                         "are %s 0 to %u",
                         what, obj, what, (unsigned)count - 1);
        }
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

int
core_id_converter(PyObject *obj, void *out)
{
    return core_id_check(obj, "core_id", false, out) == 0;
}

/* Nrtpy._check_core_id(value, what="core_id", physical=False) -> int: the
 * same check for the Python entry points (configure, memory_stats). */
static PyObject *
Nrtpy_check_core_id(PyObject *cls, PyObject *args, PyObject *kwargs)
{
    (void)cls;
    static char *kwlist[] = {"value", "what", "physical", NULL};
    PyObject *value;
    const char *what = "core_id";
    int physical = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|sp:_check_core_id",
                                     kwlist, &value, &what, &physical)) {
        return NULL;
    }
    uint32_t core;
    if (core_id_check(value, what, physical != 0, &core) < 0) {
        return NULL;
    }
    return PyLong_FromUnsignedLong(core);
}

static PyObject *
Nrtpy_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"verbose_level", NULL};
    int verbose = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|i:Nrtpy", kwlist,
                                     &verbose)) {
        return NULL;
    }
    if (ext_state->live_runtime != NULL || ext_state->initializing) {
        return raise_nrtpy_error(
            "Cannot create Nrtpy instance: a previous instance still exists. "
            "Call close() on the existing instance or delete it with all "
            "tensors/models first.");
    }
    NrtpyObject *self = (NrtpyObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->verbose_level = verbose;
    self->token = token_create();
    if (self->token == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    /* Until init succeeds the object is "closed": its dealloc must not
     * call nrt_close(). */
    atomic_store(&self->token->closed, true);
    if (verbose > 0) {
        PySys_WriteStdout("Initializing Nrtpy Runtime\n");
    }
    NRT_STATUS st;
    ext_state->initializing = true;
    Py_BEGIN_ALLOW_THREADS
        st = libnrt.nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "nrtpy", "1.0");
    Py_END_ALLOW_THREADS
    ext_state->initializing = false;
    if (st != NRT_SUCCESS) {
        raise_nrt_error(st, "Failed to initialize NRT runtime");
        Py_DECREF(self);
        return NULL;
    }
    atomic_store(&self->token->closed, false);
    ext_state->live_runtime = self;
    return (PyObject *)self;
}

static void
runtime_close(NrtpyObject *self)
{
    if (atomic_exchange(&self->token->closed, true)) {
        return;
    }
    /* New operations now fail.  Wait for those running without the GIL
     * (they never need the GIL to finish), then close libnrt. */
    Py_BEGIN_ALLOW_THREADS
        while (atomic_load(&self->token->busy) > 0) {
            struct timespec pause = {0, 50 * 1000};
            nanosleep(&pause, NULL);
        }
        libnrt.nrt_close();
    Py_END_ALLOW_THREADS
    /* (at interpreter exit the module, and its state, may go first) */
    if (ext_state != NULL && ext_state->live_runtime == self) {
        ext_state->live_runtime = NULL;
    }
}

static PyObject *
Nrtpy_close(PyObject *op, PyObject *unused)
{
    (void)unused;
    runtime_close((NrtpyObject *)op);
    return PyLong_FromLong(0);
}

static void
Nrtpy_dealloc(PyObject *op)
{
    NrtpyObject *self = (NrtpyObject *)op;
    PyTypeObject *tp = Py_TYPE(op);
    if (self->token != NULL) {
        runtime_close(self);
        token_decref(self->token);
    }
    tp->tp_free(op);
    Py_DECREF(tp);
}

static PyObject *
Nrtpy_get_visible_neuron_core_count(PyObject *cls, PyObject *unused)
{
    (void)cls;
    (void)unused;
    uint32_t n = 0;
    NRT_STATUS st = libnrt.nrt_get_visible_nc_count(&n);
    if (st != NRT_SUCCESS) {
        return raise_nrt_error(st, "Failed to get visible NC count");
    }
    return PyLong_FromUnsignedLong(n);
}

static PyObject *
Nrtpy_allocate_tensor(PyObject *op, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"size", "core_id", "name", NULL};
    size_t size;
    uint32_t core_id = 0;
    PyObject *name = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|O&O:allocate_tensor",
                                     kwlist, size_converter, &size,
                                     core_id_converter, &core_id, &name)) {
        return NULL;
    }
    return (PyObject *)tensor_allocate((NrtpyObject *)op, size, core_id, name,
                                       false);
}

static PyObject *
Nrtpy_slice_from_tensor(PyObject *op, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"source", "offset", "size", "name", NULL};
    PyObject *source;
    size_t offset = 0, size = 0;
    PyObject *name = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O&O&O:slice_from_tensor",
                                     kwlist, &source, size_converter, &offset,
                                     size_converter, &size, &name)) {
        return NULL;
    }
    NrtTensorObject *src = tensor_from_object(source, "source");
    if (src == NULL || runtime_check_open((NrtpyObject *)op) < 0) {
        return NULL;
    }
    if (size == 0) {
        /* 0 means "to the end"; an offset past the end is an error, not a
         * wrapped-around size. */
        if (offset > src->size) {
            return raise_nrtpy_error("Slice offset %zu is past the end of the "
                                     "source tensor (%zu bytes).",
                                     offset, src->size);
        }
        size = src->size - offset;
    }
    return (PyObject *)tensor_slice(src, offset, size, name);
}

static PyObject *
Nrtpy_free_tensor(PyObject *op, PyObject *arg)
{
    (void)op;
    NrtTensorObject *t = tensor_from_object(arg, "tensor");
    if (t == NULL) {
        return NULL;
    }
    tensor_free(t);
    Py_RETURN_NONE;
}

static PyObject *
Nrtpy_tensor_write(PyObject *op, PyObject *args, PyObject *kwargs)
{
    (void)op;
    static char *kwlist[] = {"tensor", "data", "offset", NULL};
    PyObject *tensor;
    PyObject *data;
    size_t offset = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!|O&:tensor_write",
                                     kwlist, &tensor, &PyBytes_Type, &data,
                                     size_converter, &offset)) {
        return NULL;
    }
    NrtTensorObject *t = tensor_from_object(tensor, "tensor");
    if (t == NULL) {
        return NULL;
    }
    /* bytes are immutable, so the buffer stays valid without the GIL. */
    Py_INCREF(data);
    int rc = tensor_write_bytes(t, PyBytes_AS_STRING(data), offset,
                                (size_t)PyBytes_GET_SIZE(data));
    Py_DECREF(data);
    if (rc < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
Nrtpy_tensor_read(PyObject *op, PyObject *args, PyObject *kwargs)
{
    (void)op;
    static char *kwlist[] = {"tensor", "offset", "size", NULL};
    PyObject *tensor;
    size_t offset = 0, size = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O&O&:tensor_read",
                                     kwlist, &tensor, size_converter, &offset,
                                     size_converter, &size)) {
        return NULL;
    }
    NrtTensorObject *t = tensor_from_object(tensor, "tensor");
    if (t == NULL) {
        return NULL;
    }
    if (size == 0) {
        if (offset > t->size) {
            return raise_nrtpy_error(
                "The read operation exceeds the tensor bound. Tensor size: "
                "%zu bytes; Read size: 0 bytes; Offset: %zu bytes.",
                t->size, offset);
        }
        size = t->size - offset;
    }
    if (tensor_is_freed(t)) {
        /* Report the freed tensor before allocating the result. */
        return raise_handle_error(t->token,
                                  "Unable to read from a freed tensor. Please "
                                  "check the lifetime of the tensor.");
    }
    if (offset > t->size || size > t->size - offset) {
        return raise_nrtpy_error(
            "The read operation exceeds the tensor bound. Tensor size: %zu "
            "bytes; Read size: %zu bytes; Offset: %zu bytes.",
            t->size, size, offset);
    }
    /* Read straight into the bytes object: one copy. */
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (out == NULL) {
        return NULL;
    }
    if (tensor_read_bytes(t, PyBytes_AS_STRING(out), offset, size) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* Raise RuntimeError("<msg>: <reason>") with the buffer error as its
 * __context__, as the nrtpy contract specifies for buffer-protocol
 * failures; the reason is in the message too, where users read it. */
static PyObject *
chain_buffer_error(const char *msg)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *reason = value != NULL ? PyObject_Str(value) : NULL;
    if (reason == NULL) {
        PyErr_Clear();
        PyErr_SetString(PyExc_RuntimeError, msg);
    } else {
        PyErr_Format(PyExc_RuntimeError, "%s: %s: %U", msg,
                     _PyType_Name((PyTypeObject *)type), reason);
        Py_DECREF(reason);
    }
    if (value != NULL) {
        PyObject *t2, *v2, *tb2;
        PyErr_Fetch(&t2, &v2, &tb2);
        PyErr_NormalizeException(&t2, &v2, &tb2);
        if (tb != NULL) {
            PyException_SetTraceback(value, tb);
        }
        PyException_SetContext(v2, value); /* steals value */
        PyErr_Restore(t2, v2, tb2);
    }
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return NULL;
}

static PyObject *
Nrtpy_tensor_write_from_pybuffer(PyObject *op, PyObject *args,
                                 PyObject *kwargs)
{
    (void)op;
    static char *kwlist[] = {"tensor", "buffer", "offset", NULL};
    PyObject *tensor, *buffer;
    size_t offset = 0;
    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs, "OO|O&:tensor_write_from_pybuffer", kwlist, &tensor,
            &buffer, size_converter, &offset)) {
        return NULL;
    }
    NrtTensorObject *t = tensor_from_object(tensor, "tensor");
    if (t == NULL) {
        return NULL;
    }
    host_memory mem;
    if (host_memory_get(buffer, false, &mem) < 0) {
        return chain_buffer_error("Object does not support buffer protocol");
    }
    int rc = tensor_write_bytes(t, mem.buf, offset, mem.len);
    host_memory_release(&mem);
    if (rc < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
Nrtpy_tensor_read_to_pybuffer(PyObject *op, PyObject *args, PyObject *kwargs)
{
    (void)op;
    static char *kwlist[] = {"tensor", "buffer", "offset", "size", NULL};
    PyObject *tensor, *buffer;
    size_t offset = 0, size = 0;
    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs, "OO|O&O&:tensor_read_to_pybuffer", kwlist, &tensor,
            &buffer, size_converter, &offset, size_converter, &size)) {
        return NULL;
    }
    NrtTensorObject *t = tensor_from_object(tensor, "tensor");
    if (t == NULL) {
        return NULL;
    }
    host_memory mem;
    if (host_memory_get(buffer, true, &mem) < 0) {
        return chain_buffer_error(
            "Object does not support writable buffer protocol");
    }
    if (size == 0 && offset <= t->size) {
        size = t->size - offset;
    }
    int rc = -1;
    /* Check the destination before touching the device. */
    if (mem.len < size) {
        raise_nrtpy_error("Buffer too small for tensor data: buffer %zu "
                          "bytes, read %zu bytes",
                          mem.len, size);
    } else {
        rc = tensor_read_bytes(t, mem.buf, offset, size);
    }
    host_memory_release(&mem);
    if (rc < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* --------------------------------------------------------- load_model */

static int
bool_converter(PyObject *obj, void *out)
{
    if (!PyBool_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "expected True or False, got %R", obj);
        return 0;
    }
    *(bool *)out = obj == Py_True;
    return 1;
}

static int
u32_converter(PyObject *obj, void *out)
{
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "expected a non-negative int, got %s",
                     Py_TYPE(obj)->tp_name);
        return 0;
    }
    unsigned long v = PyLong_AsUnsignedLong(obj);
    if (v == (unsigned long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "expected a non-negative int below 2**31, got %R", obj);
        return 0;
    }
    if (v > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "%R is out of range", obj);
        return 0;
    }
    *(uint32_t *)out = (uint32_t)v;
    return 1;
}

static PyObject *
runtime_load_model(NrtpyObject *rt, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"neff_file", "core_id",    "cc_enabled",
                             "rank_id",   "world_size", NULL};
    PyObject *path_obj;
    uint32_t core_id = 0, rank_id = 0, world_size = 1;
    bool cc = false;
    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs, "O|O&O&O&O&:load_model", kwlist, &path_obj,
            core_id_converter, &core_id, bool_converter, &cc, u32_converter,
            &rank_id, u32_converter, &world_size)) {
        return NULL;
    }
    if (!PyUnicode_Check(path_obj)) {
        PyErr_Format(PyExc_TypeError, "neff_file must be a str, not %s",
                     Py_TYPE(path_obj)->tp_name);
        return NULL;
    }
    if (LIBNRT_REQUIRE(nrt_load) < 0 || LIBNRT_REQUIRE(nrt_unload) < 0 ||
        (cc && LIBNRT_REQUIRE(nrt_load_collectives) < 0) ||
        runtime_check_open(rt) < 0) {
        return NULL;
    }
    PyObject *fs_path = NULL;
    if (!PyUnicode_FSConverter(path_obj, &fs_path)) {
        return NULL;
    }
    const char *path = PyBytes_AS_STRING(fs_path);
    unsigned char *image = NULL;
    size_t size = 0;
    int err;
    NRT_STATUS st = NRT_SUCCESS;
    nrt_model_t *handle = NULL;

    atomic_fetch_add(&rt->token->busy, 1);
    Py_BEGIN_ALLOW_THREADS
        err = neff_file_read(path, &image, &size);
        if (err == 0) {
            if (cc) {
                st = libnrt.nrt_load_collectives(image, size, (int32_t)core_id,
                                                 -1, rank_id, world_size,
                                                 &handle);
            } else {
                st = libnrt.nrt_load(image, size, (int32_t)core_id, -1,
                                     &handle);
            }
            free(image);
        }
        atomic_fetch_sub(&rt->token->busy, 1);
    Py_END_ALLOW_THREADS

    if (err != 0) {
        char detail[1024];
        snprintf(detail, sizeof detail, "Failed to open NEFF file: %s: %s",
                 path, strerror(err));
        Py_DECREF(fs_path);
        return raise_nrt_error_detail(NRT_FAILURE, "Failed to load model",
                                      detail);
    }
    Py_DECREF(fs_path);
    if (st != NRT_SUCCESS) {
        return raise_nrt_error(st, "Failed to load model");
    }
    /* An exact str: NrtModel is not GC-tracked, so it must not hold an
     * object (a str subclass with a __dict__) that could refer back. */
    PyObject *path_str = PyUnicode_FromObject(path_obj);
    NrtModelObject *m =
        path_str != NULL
            ? PyObject_New(NrtModelObject, ext_state->NrtModel_Type)
            : NULL;
    if (m == NULL) {
        Py_XDECREF(path_str);
        libnrt.nrt_unload(handle);
        return NULL;
    }
    m->handle = handle;
    m->token = rt->token;
    token_incref(m->token);
    m->neff_path = path_str;
    m->core_id = core_id;
    m->rank_id = rank_id;
    m->world_size = world_size;
    m->is_collective = cc;
    m->users = 0;
    m->unload_pending = false;
    m->sets[0] = m->sets[1] = NULL;
    m->set_names[0] = m->set_names[1] = NULL;
    m->set_handles[0] = m->set_handles[1] = NULL;
    m->sets_busy = false;
    m->specs = NULL;
    m->n_inputs = m->n_outputs = 0;
    m->auto_outputs = false;
    return (PyObject *)m;
}

static PyObject *
runtime_unload_model(NrtpyObject *rt, PyObject *arg)
{
    (void)rt;
    if (!Py_IS_TYPE(arg, ext_state->NrtModel_Type)) {
        PyErr_Format(PyExc_TypeError, "model must be an NrtModel, not %s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    model_unload((NrtModelObject *)arg);
    Py_RETURN_NONE;
}

/* ---------------------------------------------------- get_tensor_info */

/*
 * name -> dtype name of the model's inputs and outputs, from its NEFF,
 * read with the emulator's reader (nrtpy.neff.inspect's).  For the real
 * runtime, which cannot name every type.  Best effort: an empty dict when
 * the NEFF cannot be read again (it is loaded already).
 */
static PyObject *
model_neff_dtypes(NrtModelObject *m)
{
    PyObject *out = PyDict_New(), *text = NULL, *doc = NULL;
    if (out == NULL) {
        return NULL;
    }
    text = module_neff_describe(NULL, m->neff_path);
    PyObject *json = text != NULL ? PyImport_ImportModule("json") : NULL;
    if (json != NULL) {
        doc = PyObject_CallMethod(json, "loads", "O", text);
        Py_DECREF(json);
    }
    for (int k = 0; doc != NULL && PyDict_Check(doc) && k < 2; k++) {
        PyObject *list = PyDict_GetItemString(doc, k ? "outputs" : "inputs");
        for (Py_ssize_t j = 0;
             list != NULL && PyList_Check(list) && j < PyList_GET_SIZE(list);
             j++) {
            PyObject *e = PyList_GET_ITEM(list, j);
            PyObject *name =
                PyDict_Check(e) ? PyDict_GetItemString(e, "name") : NULL;
            PyObject *dt =
                PyDict_Check(e) ? PyDict_GetItemString(e, "dtype") : NULL;
            if (name != NULL && dt != NULL && PyUnicode_Check(dt)) {
                (void)PyDict_SetItem(out, name, dt);
            }
        }
    }
    PyErr_Clear(); /* best effort */
    Py_XDECREF(doc);
    Py_XDECREF(text);
    return out;
}

/* The NEFF's dtype for `ti` when it agrees with what libnrt reported (the
 * same code, or int8 for an fp8 type, as hardware reports them); else
 * `reported`. */
static const char *
exact_dtype(PyObject *neff_dtypes, const nrt_tensor_info_t *ti,
            const char *reported)
{
    PyObject *dt = neff_dtypes != NULL
                       ? PyDict_GetItemString(neff_dtypes, ti->name)
                       : NULL;
    const char *name = dt != NULL ? PyUnicode_AsUTF8(dt) : NULL;
    nrt_dtype_t code;
    char kind;
    if (name == NULL || !dtype_row_of_name(name, &code, &kind)) {
        PyErr_Clear();
        return reported;
    }
    bool fp8 = kind == 'f' && strncmp(name, "float8_", 7) == 0;
    if (code == ti->dtype || (ti->dtype == NRT_DTYPE_INT8 && fp8)) {
        return name; /* (kept alive by neff_dtypes) */
    }
    return reported;
}

static PyObject *
runtime_get_tensor_info(NrtpyObject *rt, PyObject *arg)
{
    (void)rt;
    if (!Py_IS_TYPE(arg, ext_state->NrtModel_Type)) {
        PyErr_Format(PyExc_TypeError, "model must be an NrtModel, not %s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    NrtModelObject *m = (NrtModelObject *)arg;
    if (model_is_unloaded(m)) {
        return raise_handle_error(m->token,
                                  "Unable to get model tensor info from an "
                                  "unloaded model. Please check the lifetime "
                                  "of the model.");
    }
    if (LIBNRT_REQUIRE(nrt_get_model_tensor_info) < 0 ||
        LIBNRT_REQUIRE(nrt_free_model_tensor_info) < 0) {
        return NULL;
    }
    nrt_tensor_info_array_t *arr = NULL;
    NRT_STATUS st = libnrt.nrt_get_model_tensor_info(m->handle, &arr);
    if (st != NRT_SUCCESS) {
        return raise_nrt_error(st, "Failed to get tensor info");
    }
    PyObject *info = NULL, *neff_dtypes = NULL;
    PyObject *inputs = PyDict_New();
    PyObject *outputs = PyDict_New();
    if (inputs == NULL || outputs == NULL) {
        goto done;
    }
    for (uint64_t i = 0; i < arr->tensor_count; i++) {
        const nrt_tensor_info_t *ti = &arr->tensor_array[i];
        if (ti->shape != NULL && ti->ndim > 64) {
            raise_nrtpy_error("Tensor has unreasonably large ndim: %u",
                              (unsigned)ti->ndim);
            goto done;
        }
        PyObject *target = ti->usage == NRT_TENSOR_USAGE_INPUT    ? inputs
                           : ti->usage == NRT_TENSOR_USAGE_OUTPUT ? outputs
                                                                  : NULL;
        if (target == NULL) {
            continue;
        }
        /* libnrt's code cannot name every type (bool and float64 have
         * none) and both the real runtime and the emulator report every
         * fp8 variant as int8.  The emulator names the exact type; with
         * the real runtime the NEFF's own var table says, where it has
         * dtypes (the NEFFs nrtpy writes do). */
        const char *dtype_name = NULL;
        if (libnrt.nrtemu_get_model_tensor_dtype == NULL ||
            libnrt.nrtemu_get_model_tensor_dtype(m->handle, i, &dtype_name) !=
                NRT_SUCCESS) {
            dtype_name = dtype_name_of_code(ti->dtype);
            if ((ti->dtype == NRT_DTYPE_INT8 ||
                 ti->dtype == NRT_DTYPE_UNKNOWN ||
                 ti->dtype == NRT_DTYPE_FP8_E4) &&
                neff_dtypes == NULL) {
                neff_dtypes = model_neff_dtypes(m);
            }
            dtype_name = exact_dtype(neff_dtypes, ti, dtype_name);
        }
        PyObject *md = tensor_metadata_new(ti, dtype_name);
        if (md == NULL) {
            goto done;
        }
        int rc = PyDict_SetItemString(target, ti->name, md);
        Py_DECREF(md);
        if (rc < 0) {
            goto done;
        }
    }
    info = model_tensor_info_new(inputs, outputs);
done:
    /* Freed on every path, the error paths included. */
    st = libnrt.nrt_free_model_tensor_info(arr);
    Py_XDECREF(neff_dtypes);
    Py_XDECREF(inputs);
    Py_XDECREF(outputs);
    if (info != NULL && st != NRT_SUCCESS) {
        Py_CLEAR(info);
        raise_nrt_error(st, "Failed to free tensor info");
    }
    return info;
}

/* ------------------------------------------------------------ execute */

static PyObject *
runtime_execute(NrtpyObject *rt, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames)
{
    (void)rt;
    static const char *const names[] = {"model", "inputs", "outputs",
                                        "ntff_name", "save_trace"};
    PyObject *argv[5] = {NULL, NULL, NULL, Py_None, Py_False};
    bool save_trace = false;
    if (parse_args("execute", args, nargs, kwnames, names, 5, 3, argv) < 0 ||
        !bool_converter(argv[4], &save_trace)) {
        return NULL;
    }
    PyObject *model_obj = argv[0], *inputs = argv[1], *outputs = argv[2],
             *ntff_obj = argv[3];
    if (!Py_IS_TYPE(model_obj, ext_state->NrtModel_Type)) {
        PyErr_Format(PyExc_TypeError, "model must be an NrtModel, not %s",
                     Py_TYPE(model_obj)->tp_name);
        return NULL;
    }
    if (ntff_obj != Py_None && !PyUnicode_Check(ntff_obj)) {
        PyErr_Format(PyExc_TypeError,
                     "ntff_name must be a str or None, not %s",
                     Py_TYPE(ntff_obj)->tp_name);
        return NULL;
    }
    const char *ntff = "profile.ntff";
    if (ntff_obj != Py_None) {
        ntff = PyUnicode_AsUTF8(ntff_obj);
        if (ntff == NULL) {
            return NULL;
        }
    }
    if (model_execute((NrtModelObject *)model_obj, inputs, outputs,
                      save_trace ? ntff : NULL) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
Nrtpy_get_is_closed(PyObject *op, void *closure)
{
    (void)closure;
    return PyBool_FromLong(atomic_load(&((NrtpyObject *)op)->token->closed));
}

static PyObject *
Nrtpy_load_model(PyObject *op, PyObject *args, PyObject *kwargs)
{
    return runtime_load_model((NrtpyObject *)op, args, kwargs);
}

static PyObject *
Nrtpy_unload_model(PyObject *op, PyObject *arg)
{
    return runtime_unload_model((NrtpyObject *)op, arg);
}

static PyObject *
Nrtpy_get_tensor_info(PyObject *op, PyObject *arg)
{
    return runtime_get_tensor_info((NrtpyObject *)op, arg);
}

static PyObject *
Nrtpy_execute(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
              PyObject *kwnames)
{
    return runtime_execute((NrtpyObject *)op, args, nargs, kwnames);
}

static PyMethodDef Nrtpy_methods[] = {
    {"_check_core_id", (PyCFunction)(void (*)(void))Nrtpy_check_core_id,
     METH_VARARGS | METH_KEYWORDS | METH_STATIC,
     "_check_core_id(value, what='core_id', physical=False)\n--\n\n"
     "The NeuronCore index `value` as an int: TypeError for a bool or a "
     "non-int,\nValueError when negative or past the visible cores (with "
     "`physical`, the\ninstance's cores; `what` names the argument)."},
    {"get_visible_neuron_core_count", Nrtpy_get_visible_neuron_core_count,
     METH_NOARGS | METH_STATIC,
     "get_visible_neuron_core_count()\n--\n\n"
     "Number of NeuronCores visible to this process (works before init)."},
    {"close", Nrtpy_close, METH_NOARGS,
     "close()\n--\n\nClose the runtime; idempotent. Returns 0."},
    {"allocate_tensor", (PyCFunction)(void (*)(void))Nrtpy_allocate_tensor,
     METH_VARARGS | METH_KEYWORDS,
     "allocate_tensor(size, core_id=0, name=None)\n--\n\n"
     "Allocate `size` bytes of device memory on `core_id`."},
    {"slice_from_tensor", (PyCFunction)(void (*)(void))Nrtpy_slice_from_tensor,
     METH_VARARGS | METH_KEYWORDS,
     "slice_from_tensor(source, offset=0, size=0, name=None)\n"
     "--\n\nA view of `size` bytes (0: to the end) at `offset`; keeps the "
     "source alive."},
    {"free_tensor", Nrtpy_free_tensor, METH_O,
     "free_tensor(tensor)\n--\n\nFree an NrtTensor or NrtpyTensor's "
     "memory; a no-op if already freed."},
    {"tensor_write", (PyCFunction)(void (*)(void))Nrtpy_tensor_write,
     METH_VARARGS | METH_KEYWORDS,
     "tensor_write(tensor, data, offset=0)\n--\n\n"
     "Write `data` (bytes) at `offset`."},
    {"tensor_read", (PyCFunction)(void (*)(void))Nrtpy_tensor_read,
     METH_VARARGS | METH_KEYWORDS,
     "tensor_read(tensor, offset=0, size=0)\n--\n\n"
     "Read `size` bytes (0: to the end) at `offset`."},
    {"tensor_write_from_pybuffer",
     (PyCFunction)(void (*)(void))Nrtpy_tensor_write_from_pybuffer,
     METH_VARARGS | METH_KEYWORDS,
     "tensor_write_from_pybuffer(tensor, buffer, offset=0)\n--\n\n"
     "Write a C-contiguous buffer or NumPy array at `offset`."},
    {"tensor_read_to_pybuffer",
     (PyCFunction)(void (*)(void))Nrtpy_tensor_read_to_pybuffer,
     METH_VARARGS | METH_KEYWORDS,
     "tensor_read_to_pybuffer(tensor, buffer, offset=0, size=0)\n"
     "--\n\nRead into the start of a writable C-contiguous buffer."},
    {"load_model", (PyCFunction)(void (*)(void))Nrtpy_load_model,
     METH_VARARGS | METH_KEYWORDS,
     "load_model(neff_file, core_id=0, cc_enabled=False, rank_id=0, "
     "world_size=1)\n--\n\nRead a NEFF file and load it on "
     "`core_id` (GIL released)."},
    {"unload_model", Nrtpy_unload_model, METH_O,
     "unload_model(model)\n--\n\nUnload; a no-op if already "
     "unloaded."},
    {"get_tensor_info", Nrtpy_get_tensor_info, METH_O,
     "get_tensor_info(model)\n--\n\nThe model's inputs "
     "and outputs, in NEFF order."},
    {"execute", (PyCFunction)(void (*)(void))Nrtpy_execute,
     METH_FASTCALL | METH_KEYWORDS,
     "execute(model, inputs, outputs, ntff_name=None, "
     "save_trace=False)\n--\n\nRun the model once on tensors given by name "
     "(GIL "
     "released; the\ntensors and the model are held for the call)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Nrtpy_getset[] = {
    {"is_closed", Nrtpy_get_is_closed, NULL, "True once closed.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot Nrtpy_slots[] = {
    {Py_tp_new, Nrtpy_new},
    {Py_tp_dealloc, Nrtpy_dealloc},
    {Py_tp_methods, Nrtpy_methods},
    {Py_tp_getset, Nrtpy_getset},
    {Py_tp_doc, "Nrtpy(verbose_level=0)\n--\n\n"
                "The low-level Neuron runtime: nrt_init() on creation, "
                "nrt_close() on close().\nAt most one is alive per "
                "process; most code uses get_nrtpy_singleton()."},
    {0, NULL},
};

static PyType_Spec Nrtpy_spec = {
    .name = "nrtpy._nrtpy.Nrtpy",
    .basicsize = sizeof(NrtpyObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = Nrtpy_slots,
};

int
runtime_type_init(PyObject *module)
{
    ext_state->Nrtpy_Type =
        (PyTypeObject *)PyType_FromModuleAndSpec(module, &Nrtpy_spec, NULL);
    if (ext_state->Nrtpy_Type == NULL) {
        return -1;
    }
    return PyModule_AddType(module, ext_state->Nrtpy_Type);
}

NrtpyObject *
default_runtime_get(void)
{
    PyObject *rt = ext_state->default_runtime;
    if (rt != NULL && !atomic_load(&((NrtpyObject *)rt)->token->closed)) {
        return (NrtpyObject *)rt;
    }
    /* The singleton policy (locking, logging, configure) is Python's. */
    PyObject *pkg = PyImport_ImportModule("nrtpy");
    if (pkg == NULL) {
        return NULL;
    }
    PyObject *fresh = PyObject_CallMethod(pkg, "get_nrtpy_singleton", NULL);
    Py_DECREF(pkg);
    if (fresh == NULL) {
        return NULL;
    }
    if (!Py_IS_TYPE(fresh, ext_state->Nrtpy_Type)) {
        PyErr_Format(PyExc_TypeError,
                     "get_nrtpy_singleton() returned %s, not Nrtpy",
                     Py_TYPE(fresh)->tp_name);
        Py_DECREF(fresh);
        return NULL;
    }
    Py_XSETREF(ext_state->default_runtime, fresh);
    return (NrtpyObject *)fresh;
}
