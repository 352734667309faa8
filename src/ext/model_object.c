/*
 * model_object.c - NrtModel: a NEFF loaded on a NeuronCore.  Loading and
 * executing are Nrtpy methods (runtime_object.c).
 */
#include "ext.h"

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
    if (h != NULL && (!atomic_load(&m->token->closed) || libnrt.emulated)) {
        (void)libnrt.nrt_unload(h);
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

static void
NrtModel_dealloc(PyObject *op)
{
    NrtModelObject *self = (NrtModelObject *)op;
    PyTypeObject *tp = Py_TYPE(op);
    model_release_handle(self);
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
