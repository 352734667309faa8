/*
 * tensor_metadata_object.c - TensorMetadata: size, dtype and shape of one
 * input or output of a loaded model.
 */
#include "ext.h"

typedef struct {
    PyObject_HEAD Py_ssize_t size;
    PyObject *dtype; /* str */
    PyObject *shape; /* tuple, copied to a new list on each access */
} TensorMetadataObject;

static void
TensorMetadata_dealloc(PyObject *op)
{
    TensorMetadataObject *self = (TensorMetadataObject *)op;
    PyTypeObject *tp = Py_TYPE(op);
    Py_CLEAR(self->dtype);
    Py_CLEAR(self->shape);
    tp->tp_free(op);
    Py_DECREF(tp);
}

static PyObject *
TensorMetadata_get_size(PyObject *op, void *c)
{
    (void)c;
    return PyLong_FromSsize_t(((TensorMetadataObject *)op)->size);
}

static PyObject *
TensorMetadata_get_dtype(PyObject *op, void *c)
{
    (void)c;
    return Py_NewRef(((TensorMetadataObject *)op)->dtype);
}

static PyObject *
TensorMetadata_get_shape(PyObject *op, void *c)
{
    (void)c;
    return PySequence_List(((TensorMetadataObject *)op)->shape);
}

static PyObject *
TensorMetadata_repr(PyObject *op)
{
    TensorMetadataObject *self = (TensorMetadataObject *)op;
    PyObject *shape = PySequence_List(self->shape);
    if (shape == NULL) {
        return NULL;
    }
    PyObject *r = PyUnicode_FromFormat("TensorMetadata(size=%zd, dtype=%R, "
                                       "shape=%R)",
                                       self->size, self->dtype, shape);
    Py_DECREF(shape);
    return r;
}

static PyGetSetDef TensorMetadata_getset[] = {
    {"size", TensorMetadata_get_size, NULL, "Size in bytes.", NULL},
    {"dtype", TensorMetadata_get_dtype, NULL,
     "Element type name (\"float32\", \"bfloat16\", ...; \"unknown\" when "
     "the NEFF does not say).",
     NULL},
    {"shape", TensorMetadata_get_shape, NULL,
     "Shape as a new list; [] when the NEFF has none.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot TensorMetadata_slots[] = {
    {Py_tp_dealloc, TensorMetadata_dealloc},
    {Py_tp_repr, TensorMetadata_repr},
    {Py_tp_getset, TensorMetadata_getset},
    {Py_tp_doc, "Size, dtype and shape of one model input or output."},
    {0, NULL},
};

static PyType_Spec TensorMetadata_spec = {
    .name = "nrtpy._nrtpy.TensorMetadata",
    .basicsize = sizeof(TensorMetadataObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = TensorMetadata_slots,
};

PyObject *
tensor_metadata_new(const nrt_tensor_info_t *ti, const char *dtype_name)
{
    TensorMetadataObject *md =
        PyObject_New(TensorMetadataObject, ext_state->TensorMetadata_Type);
    if (md == NULL) {
        return NULL;
    }
    md->size = (Py_ssize_t)ti->size;
    md->dtype = PyUnicode_FromString(dtype_name);
    uint32_t ndim = ti->shape != NULL ? ti->ndim : 0;
    md->shape = PyTuple_New(ndim);
    if (md->dtype == NULL || md->shape == NULL) {
        Py_DECREF(md);
        return NULL;
    }
    for (uint32_t d = 0; d < ndim; d++) {
        PyObject *v = PyLong_FromUnsignedLong(ti->shape[d]);
        if (v == NULL) {
            Py_DECREF(md);
            return NULL;
        }
        PyTuple_SET_ITEM(md->shape, d, v);
    }
    return (PyObject *)md;
}

int
tensor_metadata_type_init(PyObject *module)
{
    ext_state->TensorMetadata_Type = (PyTypeObject *)PyType_FromModuleAndSpec(
        module, &TensorMetadata_spec, NULL);
    if (ext_state->TensorMetadata_Type == NULL ||
        PyModule_AddType(module, ext_state->TensorMetadata_Type) < 0) {
        return -1;
    }
    return 0;
}
