/*
 * model_object.c - NrtModel: a NEFF loaded on a NeuronCore.  Loading and
 * executing are Nrtpy methods (runtime_object.c); the execution itself is
 * in execute.c.  The model also holds the signature NrtpyModel checks its
 * calls against, so that a well-formed call is checked and run in C.
 */
#include "ext.h"
#include "numpy_api.h"

int
model_is_unloaded(NrtModelObject *m)
{
    return m->handle == NULL || m->unload_pending ||
           atomic_load(&m->token->closed);
}

void
model_release_handle(NrtModelObject *m)
{
    nrt_model_t *h = m->handle;
    m->handle = NULL;
    /* As for tensors: never call the real libnrt after nrt_close(), but
     * let the emulator release the model's host memory. */
    if (token_may_release(m->token)) {
        model_sets_clear(m);
        if (h != NULL) {
            (void)libnrt.nrt_unload(h);
        }
    }
}

void
model_unload(NrtModelObject *m)
{
    if (m->users > 0) {
        m->unload_pending = true;
        return;
    }
    model_release_handle(m);
}

/* ---------------------------------------------------------- signature */

static void
specs_free(NrtModelObject *m)
{
    Py_ssize_t n = m->n_inputs + m->n_outputs;
    for (Py_ssize_t i = 0; m->specs != NULL && i < n; i++) {
        Py_XDECREF(m->specs[i].name);
        Py_XDECREF(m->specs[i].dtype);
    }
    PyMem_Free(m->specs);
    m->specs = NULL;
    m->n_inputs = m->n_outputs = 0;
    m->auto_outputs = false;
}

/* Read one (name, shape or None, size, dtype or None) entry into *spec;
 * its dims go to *dims (advanced). */
static int
spec_read(PyObject *entry, io_spec *spec, Py_ssize_t **dims)
{
    PyObject *name, *shape, *size, *dtype;
    if (!PyTuple_Check(entry) ||
        !PyArg_ParseTuple(entry,
                          "O!OO!O;signature entries are (name, shape, "
                          "size, dtype)",
                          &PyUnicode_Type, &name, &shape, &PyLong_Type, &size,
                          &dtype)) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError,
                         "signature entries are (name, shape, size, dtype) "
                         "tuples, not %s",
                         Py_TYPE(entry)->tp_name);
        }
        return -1;
    }
    spec->size = PyLong_AsSize_t(size);
    if (spec->size == (size_t)-1 && PyErr_Occurred()) {
        return -1;
    }
    if (dtype != Py_None && !PyArray_DescrCheck(dtype)) {
        PyErr_Format(PyExc_TypeError,
                     "dtype must be a numpy.dtype or None, "
                     "not %s",
                     Py_TYPE(dtype)->tp_name);
        return -1;
    }
    spec->ndim = -1;
    spec->dims = *dims;
    if (shape != Py_None) {
        if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > 64) {
            PyErr_SetString(PyExc_TypeError,
                            "shape must be a tuple of at most 64 ints");
            return -1;
        }
        spec->ndim = (int)PyTuple_GET_SIZE(shape);
        for (int d = 0; d < spec->ndim; d++) {
            spec->dims[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
            if (spec->dims[d] == -1 && PyErr_Occurred()) {
                return -1;
            }
        }
        *dims += spec->ndim;
    }
    spec->name = PyUnicode_FromObject(name);
    spec->dtype = dtype != Py_None ? Py_NewRef(dtype) : NULL;
    return spec->name != NULL ? 0 : -1;
}

static Py_ssize_t
dims_in(PyObject *entries)
{
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(entries); i++) {
        PyObject *e = PyTuple_GET_ITEM(entries, i);
        PyObject *shape = PyTuple_Check(e) && PyTuple_GET_SIZE(e) == 4
                              ? PyTuple_GET_ITEM(e, 1)
                              : NULL;
        if (shape != NULL && PyTuple_Check(shape)) {
            total += PyTuple_GET_SIZE(shape);
        }
    }
    return total;
}

static PyObject *
NrtModel_set_signature(PyObject *op, PyObject *args)
{
    NrtModelObject *m = (NrtModelObject *)op;
    PyObject *inputs, *outputs;
    int auto_outputs = 0;
    if (!PyArg_ParseTuple(args, "O!O!|p:_set_signature", &PyTuple_Type,
                          &inputs, &PyTuple_Type, &outputs, &auto_outputs)) {
        return NULL;
    }
    Py_ssize_t n_in = PyTuple_GET_SIZE(inputs),
               n_out = PyTuple_GET_SIZE(outputs);
    Py_ssize_t n_dims = dims_in(inputs) + dims_in(outputs);
    /* One block: the specs, then every dimension. */
    size_t bytes = (size_t)(n_in + n_out) * sizeof(io_spec) +
                   (size_t)n_dims * sizeof(Py_ssize_t);
    io_spec *specs = PyMem_Calloc(1, bytes > 0 ? bytes : 1);
    if (specs == NULL) {
        return PyErr_NoMemory();
    }
    specs_free(m);
    m->specs = specs;
    m->n_inputs = n_in;
    m->n_outputs = n_out;
    Py_ssize_t *dims = (Py_ssize_t *)(specs + n_in + n_out);
    for (Py_ssize_t i = 0; i < n_in + n_out; i++) {
        PyObject *e = i < n_in ? PyTuple_GET_ITEM(inputs, i)
                               : PyTuple_GET_ITEM(outputs, i - n_in);
        if (spec_read(e, &specs[i], &dims) < 0) {
            specs_free(m);
            return NULL;
        }
    }
    /* Allocating outputs needs each one's shape and dtype. */
    m->auto_outputs = auto_outputs;
    for (Py_ssize_t i = n_in; i < n_in + n_out; i++) {
        if (specs[i].ndim < 0 || specs[i].dtype == NULL) {
            m->auto_outputs = false;
        }
    }
    Py_RETURN_NONE;
}

/* 1 when `mapping` holds exactly the specs' names, each an NrtpyTensor
 * (not a subclass: its attributes could be overridden) of the spec's
 * core, size, shape and dtype; 0 when anything differs; -1 on error. */
int
mapping_matches(NrtModelObject *m, PyObject *mapping, const io_spec *specs,
                Py_ssize_t n)
{
    if (!PyDict_CheckExact(mapping) || PyDict_GET_SIZE(mapping) != n) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const io_spec *spec = &specs[i];
        PyObject *v = PyDict_GetItemWithError(mapping, spec->name);
        if (v == NULL) {
            return PyErr_Occurred() ? -1 : 0;
        }
        if (!Py_IS_TYPE(v, ext_state->NrtpyTensor_Type)) {
            return 0;
        }
        NrtpyTensorObject *t = (NrtpyTensorObject *)v;
        NrtTensorObject *ref = (NrtTensorObject *)t->tensor_ref;
        if (ref == NULL || ref->core_id != m->core_id ||
            ref->size != spec->size) {
            return 0;
        }
        if (spec->ndim >= 0 &&
            (t->ndim != spec->ndim ||
             memcmp(t->dims, spec->dims,
                    (size_t)spec->ndim * sizeof *spec->dims) != 0)) {
            return 0;
        }
        if (spec->dtype != NULL && t->dtype != spec->dtype &&
            !PyArray_EquivTypes((PyArray_Descr *)t->dtype,
                                (PyArray_Descr *)spec->dtype)) {
            return 0;
        }
    }
    return 1;
}

int
model_execute_checked(NrtModelObject *m, PyObject *inputs, PyObject *outputs)
{
    if (model_is_unloaded(m)) {
        raise_handle_error(m->token,
                           "Unable to execute an unloaded model. Please "
                           "check the lifetime of the model.");
        return -1;
    }
    int ok = m->specs != NULL
                 ? mapping_matches(m, inputs, m->specs, m->n_inputs)
                 : 0;
    if (ok > 0) {
        ok = mapping_matches(m, outputs, m->specs + m->n_inputs, m->n_outputs);
    }
    if (ok <= 0) {
        return ok; /* 0: the caller checks in full and says why */
    }
    return model_execute(m, inputs, outputs, NULL) < 0 ? -1 : 1;
}

static PyMethodDef NrtModel_methods[] = {
    {"_set_signature", NrtModel_set_signature, METH_VARARGS,
     "_set_signature(inputs, outputs, auto_outputs=False)\n--\n\n"
     "The (name, shape or None, size, dtype or None) of each input and "
     "output,\nin NEFF order, that NrtpyModel.__call__'s C path requires; "
     "with auto_outputs,\ncalls without outputs may allocate them from it "
     "(no output aliases an input)."},
    {NULL, NULL, 0, NULL},
};

/* ------------------------------------------------------------ NrtModel */

static void
NrtModel_dealloc(PyObject *op)
{
    NrtModelObject *self = (NrtModelObject *)op;
    PyTypeObject *tp = Py_TYPE(op);
    model_release_handle(self);
    /* (sets left by a closed real runtime are abandoned, as its tensors) */
    Py_CLEAR(self->set_names[0]);
    Py_CLEAR(self->set_names[1]);
    PyMem_Free(self->set_handles[0]);
    PyMem_Free(self->set_handles[1]);
    specs_free(self);
    Py_CLEAR(self->neff_path);
    token_decref(self->token);
    tp->tp_free(op);
    Py_DECREF(tp);
}

static PyObject *
NrtModel_repr(PyObject *op)
{
    NrtModelObject *m = (NrtModelObject *)op;
    char ptr[32];
    if (model_is_unloaded(m)) {
        snprintf(ptr, sizeof ptr, "0");
    } else {
        snprintf(ptr, sizeof ptr, "%p", (void *)m->handle);
    }
    return PyUnicode_FromFormat(
        "NrtModel(ptr=%s, core_id=%u, rank_id=%u, world_size=%u, "
        "is_collective=%s, is_owner=True)",
        ptr, (unsigned)m->core_id, (unsigned)m->rank_id,
        (unsigned)m->world_size, m->is_collective ? "True" : "False");
}

#define MODEL_UINT_GETTER(field)                                       \
    static PyObject *NrtModel_get_##field(PyObject *op, void *c)       \
    {                                                                  \
        (void)c;                                                       \
        return PyLong_FromUnsignedLong(((NrtModelObject *)op)->field); \
    }
MODEL_UINT_GETTER(core_id)
MODEL_UINT_GETTER(rank_id)
MODEL_UINT_GETTER(world_size)
#undef MODEL_UINT_GETTER

static PyObject *
NrtModel_get_neff_path(PyObject *op, void *c)
{
    (void)c;
    return Py_NewRef(((NrtModelObject *)op)->neff_path);
}

static PyObject *
NrtModel_get_is_collective(PyObject *op, void *c)
{
    (void)c;
    return PyBool_FromLong(((NrtModelObject *)op)->is_collective);
}

static PyObject *
NrtModel_get_is_unloaded(PyObject *op, void *c)
{
    (void)c;
    return PyBool_FromLong(model_is_unloaded((NrtModelObject *)op));
}

static PyGetSetDef NrtModel_getset[] = {
    {"neff_path", NrtModel_get_neff_path, NULL,
     "The NEFF path as given to load_model.", NULL},
    {"core_id", NrtModel_get_core_id, NULL, "NeuronCore it is loaded on.",
     NULL},
    {"rank_id", NrtModel_get_rank_id, NULL, "Collective rank.", NULL},
    {"world_size", NrtModel_get_world_size, NULL, "Collective world size.",
     NULL},
    {"is_collective", NrtModel_get_is_collective, NULL,
     "Loaded with cc_enabled=True.", NULL},
    {"is_unloaded", NrtModel_get_is_unloaded, NULL,
     "True once unloaded, explicitly or by closing its runtime.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot NrtModel_slots[] = {
    {Py_tp_dealloc, NrtModel_dealloc},
    {Py_tp_repr, NrtModel_repr},
    {Py_tp_getset, NrtModel_getset},
    {Py_tp_methods, NrtModel_methods},
    {Py_tp_doc, "A NEFF loaded on a NeuronCore (Nrtpy.load_model); unloaded "
                "when the last\nreference goes or by "
                "Nrtpy.unload_model()."},
    {0, NULL},
};

static PyType_Spec NrtModel_spec = {
    .name = "nrtpy._nrtpy.NrtModel",
    .basicsize = sizeof(NrtModelObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = NrtModel_slots,
};

int
model_type_init(PyObject *module)
{
    ext_state->NrtModel_Type =
        (PyTypeObject *)PyType_FromModuleAndSpec(module, &NrtModel_spec, NULL);
    if (ext_state->NrtModel_Type == NULL ||
        PyModule_AddType(module, ext_state->NrtModel_Type) < 0) {
        return -1;
    }
    return 0;
}
