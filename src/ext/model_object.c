/*
 * model_object.c - NrtModel (a loaded NEFF), TensorMetadata and
 * ModelTensorInfo, and the model methods of Nrtpy: load_model,
 * unload_model, get_tensor_info, execute.
 */
#include "ext.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* Largest NEFF we read into memory: far above any real one, and a bound on
 * what a mistaken path (a disk image, /dev/zero) can make us allocate. */
#define NEFF_MAX_BYTES ((size_t)16 << 30)

/* ------------------------------------------------------ TensorMetadata */

typedef struct {
    PyObject_HEAD Py_ssize_t size;
    PyObject *dtype; /* str */
    PyObject *shape; /* tuple, copied to a new list on each access */
} TensorMetadataObject;

typedef struct {
    PyObject_HEAD PyObject
        *inputs;       /* dict name -> TensorMetadata, NEFF order */
    PyObject *outputs; /* idem */
} ModelTensorInfoObject;

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

/* A copy with another dtype name: libnrt has no code for some dtypes a
 * NEFF can record (bool, float64, float8_e4m3fn), and nrtpy reports the
 * NEFF's own name for them. */
static PyObject *
TensorMetadata_with_dtype(PyObject *op, PyObject *dtype)
{
    TensorMetadataObject *self = (TensorMetadataObject *)op;
    if (!PyUnicode_CheckExact(dtype)) {
        PyErr_Format(PyExc_TypeError, "dtype must be a str, not %s",
                     Py_TYPE(dtype)->tp_name);
        return NULL;
    }
    TensorMetadataObject *md = PyObject_New(TensorMetadataObject, Py_TYPE(op));
    if (md == NULL) {
        return NULL;
    }
    md->size = self->size;
    md->dtype = Py_NewRef(dtype);
    md->shape = Py_NewRef(self->shape);
    return (PyObject *)md;
}

static PyMethodDef TensorMetadata_methods[] = {
    {"_with_dtype", TensorMetadata_with_dtype, METH_O,
     "_with_dtype(dtype)\n--\n\nA copy reporting another dtype name."},
    {NULL, NULL, 0, NULL},
};

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
    {Py_tp_methods, TensorMetadata_methods},
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

/* ------------------------------------------------------------ NrtModel */

int
model_is_unloaded(NrtModelObject *m)
{
    return m->handle == NULL || m->unload_pending ||
           atomic_load(&m->token->closed);
}

static void
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
model_types_init(PyObject *module)
{
    ext_state->NrtModel_Type =
        (PyTypeObject *)PyType_FromModuleAndSpec(module, &NrtModel_spec, NULL);
    if (ext_state->NrtModel_Type == NULL ||
        PyModule_AddType(module, ext_state->NrtModel_Type) < 0) {
        return -1;
    }
    ext_state->TensorMetadata_Type = (PyTypeObject *)PyType_FromModuleAndSpec(
        module, &TensorMetadata_spec, NULL);
    if (ext_state->TensorMetadata_Type == NULL ||
        PyModule_AddType(module, ext_state->TensorMetadata_Type) < 0) {
        return -1;
    }
    ext_state->ModelTensorInfo_Type = (PyTypeObject *)PyType_FromModuleAndSpec(
        module, &ModelTensorInfo_spec, NULL);
    if (ext_state->ModelTensorInfo_Type == NULL ||
        PyModule_AddType(module, ext_state->ModelTensorInfo_Type) < 0) {
        return -1;
    }
    return 0;
}

/* --------------------------------------------------------- load_model */

/* Read a whole file without the GIL.  0, or an errno value. */
static int
read_file(const char *path, unsigned char **out, size_t *out_size)
{
    /* O_NONBLOCK: opening a FIFO must not block (close() would wait for
     * this call forever); anything but a regular file is refused below. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        return errno;
    }
    struct stat st;
    int e = 0;
    unsigned char *buf = NULL;
    if (fstat(fd, &st) != 0) {
        e = errno;
    } else if (!S_ISREG(st.st_mode)) {
        e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
    } else if ((uint64_t)st.st_size > NEFF_MAX_BYTES) {
        e = EFBIG;
    } else if ((buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1)) ==
               NULL) {
        e = ENOMEM;
    }
    size_t size = e == 0 ? (size_t)st.st_size : 0, got = 0;
    while (e == 0 && got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            e = n < 0 ? errno : EIO; /* EIO: the file shrank meanwhile */
            break;
        }
        got += (size_t)n;
    }
    close(fd);
    if (e != 0) {
        free(buf);
        return e;
    }
    *out = buf;
    *out_size = size;
    return 0;
}

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

PyObject *
runtime_load_model(NrtpyObject *rt, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"neff_file", "core_id",    "cc_enabled",
                             "rank_id",   "world_size", NULL};
    PyObject *path_obj;
    uint32_t core_id = 0, rank_id = 0, world_size = 1;
    bool cc = false;
    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs, "O|O&O&O&O&:load_model", kwlist, &path_obj,
            u32_converter, &core_id, bool_converter, &cc, u32_converter,
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
        err = read_file(path, &image, &size);
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
    return (PyObject *)m;
}

PyObject *
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

static const char *
dtype_string(nrt_dtype_t dt)
{
    switch (dt) {
    case NRT_DTYPE_FLOAT32:
        return "float32";
    case NRT_DTYPE_FLOAT16:
        return "float16";
    case NRT_DTYPE_BFLOAT16:
        return "bfloat16";
    case NRT_DTYPE_INT8:
        return "int8";
    case NRT_DTYPE_UINT8:
        return "uint8";
    case NRT_DTYPE_INT16:
        return "int16";
    case NRT_DTYPE_UINT16:
        return "uint16";
    case NRT_DTYPE_INT32:
        return "int32";
    case NRT_DTYPE_UINT32:
        return "uint32";
    case NRT_DTYPE_INT64:
        return "int64";
    case NRT_DTYPE_UINT64:
        return "uint64";
    /* libnrt's fp8 codes name the format; ml_dtypes spells them so. */
    case NRT_DTYPE_FP8_E3:
        return "float8_e3m4";
    case NRT_DTYPE_FP8_E4:
        return "float8_e4m3";
    case NRT_DTYPE_FP8_E5:
        return "float8_e5m2";
    default:
        return "unknown";
    }
}

static PyObject *
metadata_new(const nrt_tensor_info_t *ti)
{
    TensorMetadataObject *md =
        PyObject_New(TensorMetadataObject, ext_state->TensorMetadata_Type);
    if (md == NULL) {
        return NULL;
    }
    md->size = (Py_ssize_t)ti->size;
    md->dtype = PyUnicode_FromString(dtype_string(ti->dtype));
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

PyObject *
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
        return raise_nrtpy_error("Unable to get model tensor info from an "
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
    ModelTensorInfoObject *info = NULL;
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
        PyObject *md = metadata_new(ti);
        if (md == NULL) {
            goto done;
        }
        int rc = PyDict_SetItemString(target, ti->name, md);
        Py_DECREF(md);
        if (rc < 0) {
            goto done;
        }
    }
    info =
        PyObject_New(ModelTensorInfoObject, ext_state->ModelTensorInfo_Type);
    if (info != NULL) {
        info->inputs = Py_NewRef(inputs);
        info->outputs = Py_NewRef(outputs);
    }
done:
    /* Freed on every path, the error paths included. */
    st = libnrt.nrt_free_model_tensor_info(arr);
    Py_XDECREF(inputs);
    Py_XDECREF(outputs);
    if (info != NULL && st != NRT_SUCCESS) {
        Py_CLEAR(info);
        raise_nrt_error(st, "Failed to free tensor info");
    }
    return (PyObject *)info;
}

/* ------------------------------------------------------------ execute */

/* One mapping entry, pinned for the call. */
typedef struct {
    PyObject *key; /* str, owned */
    const char *ckey;
    NrtTensorObject *tensor; /* owned */
} io_entry;

static void
io_entries_release(io_entry *e, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_XDECREF(e[i].key);
        if (e[i].tensor != NULL) {
            tensor_op_end(e[i].tensor);
            Py_DECREF(e[i].tensor);
        }
    }
    PyMem_Free(e);
}

/* Pin the tensors of a mapping: str keys, NrtTensor/NrtpyTensor values,
 * none freed.  Returns the entries (count in *n) or NULL. */
static io_entry *
io_entries_pin(PyObject *mapping, const char *what, Py_ssize_t *n)
{
    if (!PyMapping_Check(mapping) ||
        !PyObject_HasAttrString(mapping, "items")) {
        PyErr_Format(PyExc_TypeError,
                     "%s must be a mapping of str to NrtTensor, not %s", what,
                     Py_TYPE(mapping)->tp_name);
        return NULL;
    }
    PyObject *items = PyMapping_Items(mapping);
    if (items == NULL) {
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(items);
    io_entry *e = PyMem_Calloc(count > 0 ? (size_t)count : 1, sizeof *e);
    if (e == NULL) {
        Py_DECREF(items);
        PyErr_NoMemory();
        return NULL;
    }
    Py_ssize_t done = 0;
    for (; done < count; done++) {
        PyObject *pair = PyList_GET_ITEM(items, done);
        /* items() of a user mapping can return anything. */
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_Format(PyExc_TypeError,
                         "%s.items() must give (name, tensor) pairs, got %R",
                         what, pair);
            goto fail;
        }
        PyObject *key = PyTuple_GET_ITEM(pair, 0);
        PyObject *value = PyTuple_GET_ITEM(pair, 1);
        if (!PyUnicode_Check(key)) {
            PyErr_Format(PyExc_TypeError, "%s keys must be str, not %s", what,
                         Py_TYPE(key)->tp_name);
            goto fail;
        }
        NrtTensorObject *t = tensor_from_object(value, what);
        if (t == NULL) {
            goto fail;
        }
        if (tensor_is_freed(t)) {
            raise_nrtpy_error("Tensor '%U' is freed. Unable to add it into "
                              "the tensor set. Please check the lifetime of "
                              "the tensor.",
                              key);
            goto fail;
        }
        if (t->handle == NULL) {
            raise_nrtpy_error("Tensor '%U' has no device memory (0 bytes); "
                              "models take tensors of at least one byte.",
                              key);
            goto fail;
        }
        e[done].ckey = PyUnicode_AsUTF8(key);
        if (e[done].ckey == NULL) {
            goto fail;
        }
        e[done].key = Py_NewRef(key);
        e[done].tensor = (NrtTensorObject *)Py_NewRef((PyObject *)t);
        tensor_op_begin(t);
    }
    Py_DECREF(items);
    *n = count;
    return e;
fail:
    Py_DECREF(items);
    io_entries_release(e, done);
    return NULL;
}

/* Build a tensor set without the GIL; NRT_SUCCESS or the failing status. */
static NRT_STATUS
tensor_set_build(io_entry *e, Py_ssize_t n, nrt_tensor_set_t **out)
{
    nrt_tensor_set_t *set = NULL;
    NRT_STATUS st = libnrt.nrt_allocate_tensor_set(&set);
    if (st != NRT_SUCCESS) {
        return st;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        st = libnrt.nrt_add_tensor_to_tensor_set(set, e[i].ckey,
                                                 e[i].tensor->handle);
        if (st != NRT_SUCCESS) {
            libnrt.nrt_destroy_tensor_set(&set);
            return st;
        }
    }
    *out = set;
    return NRT_SUCCESS;
}

PyObject *
runtime_execute(NrtpyObject *rt, PyObject *args, PyObject *kwargs)
{
    (void)rt;
    static char *kwlist[] = {"model",     "inputs",     "outputs",
                             "ntff_name", "save_trace", NULL};
    PyObject *model_obj, *inputs, *outputs, *ntff_obj = Py_None;
    bool save_trace = false;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|OO&:execute", kwlist,
                                     &model_obj, &inputs, &outputs, &ntff_obj,
                                     bool_converter, &save_trace)) {
        return NULL;
    }
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
    if (LIBNRT_REQUIRE(nrt_execute) < 0 ||
        LIBNRT_REQUIRE(nrt_allocate_tensor_set) < 0 ||
        LIBNRT_REQUIRE(nrt_add_tensor_to_tensor_set) < 0 ||
        LIBNRT_REQUIRE(nrt_destroy_tensor_set) < 0 ||
        (save_trace && (LIBNRT_REQUIRE(nrt_profile_start) < 0 ||
                        LIBNRT_REQUIRE(nrt_profile_stop) < 0))) {
        return NULL;
    }
    const char *ntff = "profile.ntff";
    if (ntff_obj != Py_None) {
        ntff = PyUnicode_AsUTF8(ntff_obj);
        if (ntff == NULL) {
            return NULL;
        }
    }
    NrtModelObject *m = (NrtModelObject *)model_obj;
    Py_ssize_t n_in = 0, n_out = 0;
    io_entry *in = io_entries_pin(inputs, "inputs", &n_in);
    if (in == NULL) {
        return NULL;
    }
    io_entry *out = io_entries_pin(outputs, "outputs", &n_out);
    if (out == NULL) {
        io_entries_release(in, n_in);
        return NULL;
    }
    PyObject *result = NULL;
    if (model_is_unloaded(m)) {
        raise_nrtpy_error("Unable to execute an unloaded model. Please check "
                          "the lifetime of the model.");
        goto done;
    }

    NRT_STATUS st, prof_start = NRT_SUCCESS, prof_stop = NRT_SUCCESS;
    char detail[1024] = "";
    const char *action = "Failed to execute model";
    nrt_tensor_set_t *in_set = NULL, *out_set = NULL;
    Py_INCREF(m);
    m->users++;
    atomic_fetch_add(&m->token->busy, 1);
    Py_BEGIN_ALLOW_THREADS
        st = tensor_set_build(in, n_in, &in_set);
        if (st == NRT_SUCCESS) {
            st = tensor_set_build(out, n_out, &out_set);
        }
        if (st != NRT_SUCCESS) {
            action = "Failed to add tensor to set";
        } else if (save_trace) {
            prof_start = libnrt.nrt_profile_start(m->handle, ntff);
            st = libnrt.nrt_execute(m->handle, in_set, out_set);
            prof_stop = libnrt.nrt_profile_stop(ntff);
        } else {
            st = libnrt.nrt_execute(m->handle, in_set, out_set);
        }
        /* Read the failure's detail before the clean-up calls below can
         * replace it. */
        if (st != NRT_SUCCESS) {
            nrt_error_detail(detail, sizeof detail);
        }
        if (out_set != NULL) {
            libnrt.nrt_destroy_tensor_set(&out_set);
        }
        if (in_set != NULL) {
            libnrt.nrt_destroy_tensor_set(&in_set);
        }
        atomic_fetch_sub(&m->token->busy, 1);
    Py_END_ALLOW_THREADS
    m->users--;
    if (m->users == 0 && m->unload_pending) {
        model_release_handle(m);
    }
    Py_DECREF(m);

    if (st != NRT_SUCCESS) {
        raise_nrt_error_detail(st, action, detail);
        goto done;
    }
    if (save_trace &&
        (prof_start != NRT_SUCCESS || prof_stop != NRT_SUCCESS)) {
        NRT_STATUS bad = prof_start != NRT_SUCCESS ? prof_start : prof_stop;
        if (PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                             "the trace %s was not saved: profiling failed "
                             "with %s(%d)",
                             ntff, status_name(bad), (int)bad) < 0) {
            goto done;
        }
    }
    result = Py_NewRef(Py_None);
done:
    io_entries_release(out, n_out);
    io_entries_release(in, n_in);
    return result;
}
