/*
 * model_tensor_info_object.c - ModelTensorInfo: the inputs and outputs of
 * a loaded model (Nrtpy.get_tensor_info).
 */
#include "ext.h"

typedef struct {
    PyObject_HEAD PyObject
        *inputs;       /* dict name -> TensorMetadata, NEFF order */
    PyObject *outputs; /* idem */
} ModelTensorInfoObject;

static void
ModelTensorInfo_dealloc(PyObject *op)
{
    ModelTensorInfoObject *self = (ModelTensorInfoObject *)op;
    PyTypeObject *tp = Py_TYPE(op);
    Py_CLEAR(self->inputs);
    Py_CLEAR(self->outputs);
    tp->tp_free(op);
    Py_DECREF(tp);
}

static PyObject *
ModelTensorInfo_get_inputs(PyObject *op, void *c)
{
    (void)c;
    return PyDict_Copy(((ModelTensorInfoObject *)op)->inputs);
}

static PyObject *
ModelTensorInfo_get_outputs(PyObject *op, void *c)
{
    (void)c;
    return PyDict_Copy(((ModelTensorInfoObject *)op)->outputs);
}

static PyObject *
ModelTensorInfo_repr(PyObject *op)
{
    ModelTensorInfoObject *self = (ModelTensorInfoObject *)op;
    return PyUnicode_FromFormat(
        "ModelTensorInfo(inputs=%zd tensors, outputs=%zd tensors)",
        PyDict_GET_SIZE(self->inputs), PyDict_GET_SIZE(self->outputs));
}

static PyGetSetDef ModelTensorInfo_getset[] = {
    {"inputs", ModelTensorInfo_get_inputs, NULL,
     "dict name -> TensorMetadata, in NEFF order (a new dict each time).",
     NULL},
    {"outputs", ModelTensorInfo_get_outputs, NULL,
     "dict name -> TensorMetadata, in NEFF order (a new dict each time).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot ModelTensorInfo_slots[] = {
    {Py_tp_dealloc, ModelTensorInfo_dealloc},
    {Py_tp_repr, ModelTensorInfo_repr},
    {Py_tp_getset, ModelTensorInfo_getset},
    {Py_tp_doc, "The inputs and outputs of a loaded model."},
    {0, NULL},
};

static PyType_Spec ModelTensorInfo_spec = {
    .name = "nrtpy._nrtpy.ModelTensorInfo",
    .basicsize = sizeof(ModelTensorInfoObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = ModelTensorInfo_slots,
};
PyObject *
model_tensor_info_new(PyObject *inputs, PyObject *outputs)
{
    ModelTensorInfoObject *info =
        PyObject_New(ModelTensorInfoObject, ext_state->ModelTensorInfo_Type);
    if (info != NULL) {
        info->inputs = Py_NewRef(inputs);
        info->outputs = Py_NewRef(outputs);
    }
    return (PyObject *)info;
}

int
model_tensor_info_type_init(PyObject *module)
{
    ext_state->ModelTensorInfo_Type = (PyTypeObject *)PyType_FromModuleAndSpec(
        module, &ModelTensorInfo_spec, NULL);
    if (ext_state->ModelTensorInfo_Type == NULL ||
        PyModule_AddType(module, ext_state->ModelTensorInfo_Type) < 0) {
        return -1;
    }
    return 0;
}
