/*
 * nrtpy_tensor.c - NrtpyTensor: a device tensor with a shape and a NumPy
 * dtype, moved to and from NumPy arrays with one copy.
 *
 * It is written in C because its three methods are the per-call hot path
 * of the API: the whole of from_numpy(), numpy() and write_from_numpy()
 * runs here, without returning to Python in between.
 */
#include "ext.h"
#include "numpy_api.h"

#include <string.h>

/* ------------------------------------------------------ construction */

/* A dtype NumPy can describe and that holds no Python objects. */
static PyArray_Descr *
dtype_convert(PyObject *obj)
{
    PyArray_Descr *descr = NULL;
    if (!PyArray_DescrConverter(obj, &descr)) {
        return NULL;
    }
    if (PyDataType_REFCHK(descr)) {
        PyErr_Format(PyExc_TypeError,
                     "dtype %R holds Python objects, which cannot live in "
                     "device memory",
                     (PyObject *)descr);
        Py_DECREF(descr);
        return NULL;
    }
    return descr;
}

/* Shape as a new tuple of non-negative exact ints (an int means a 1-d
 * shape), and its element count, overflow-checked.  The caller's sequence
 * is never modified. */
static PyObject *
shape_convert(PyObject *obj, size_t *count)
{
    PyObject *seq =
        PyLong_Check(obj) ? PyTuple_Pack(1, obj) : PySequence_Tuple(obj);
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t ndim = PyTuple_GET_SIZE(seq);
    PyObject *tuple = NULL;
    if (ndim > NPY_MAXDIMS) {
        PyErr_Format(PyExc_ValueError,
                     "shape has %zd dimensions; at most %d are supported",
                     ndim, NPY_MAXDIMS);
        goto fail;
    }
    tuple = PyTuple_New(ndim);
    if (tuple == NULL) {
        goto fail;
    }
    size_t n = 1;
    for (Py_ssize_t i = 0; i < ndim; i++) {
        /* Exact ints, so the shape compares equal to NumPy's. */
        PyObject *d = PyNumber_Index(PyTuple_GET_ITEM(seq, i));
        if (d == NULL) {
            goto fail;
        }
        PyTuple_SET_ITEM(tuple, i, d);
        Py_ssize_t v = PyLong_AsSsize_t(d);
        if (v == -1 && PyErr_Occurred()) {
            goto fail;
        }
        if (v < 0) {
            PyErr_Format(PyExc_ValueError, "shape %R has a negative dimension",
                         obj);
            goto fail;
        }
        if (v != 0 && n > SIZE_MAX / (size_t)v) {
            PyErr_Format(PyExc_ValueError, "shape %R is too large", obj);
            goto fail;
        }
        n *= (size_t)v;
    }
    Py_DECREF(seq);
    *count = n;
    return tuple;
fail:
    Py_XDECREF(tuple);
    Py_DECREF(seq);
    return NULL;
}

/*
 * Set every field, without checks: callers have validated them.  The shape
 * tuple is built only when asked for: from_numpy() of a small array is
 * dominated by object creation, and numpy() reads `dims` directly.
 */
static int
nrtpy_tensor_set(NrtpyTensorObject *self, PyObject *ref, int ndim,
                 const npy_intp *dims, PyObject *dtype, PyObject *name,
                 size_t nbytes)
{
    Py_ssize_t *store = self->dims_inline;
    if (ndim > NRTPY_INLINE_DIMS) {
        store = PyMem_Malloc((size_t)ndim * sizeof *store);
        if (store == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    for (int i = 0; i < ndim; i++) {
        store[i] = (Py_ssize_t)dims[i];
    }
    if (self->dims != NULL && self->dims != self->dims_inline) {
        PyMem_Free(self->dims);
    }
    self->dims = store;
    self->ndim = ndim;
    Py_CLEAR(self->shape);
    Py_XSETREF(self->tensor_ref, Py_NewRef(ref));
    Py_XSETREF(self->dtype, Py_NewRef(dtype));
    Py_XSETREF(self->name, Py_NewRef(name));
    self->nbytes = nbytes;
    return 0;
}

/* NumPy's npy_intp is Py_ssize_t, so `dims` serves both NumPy's
 * dimensions and ours. */
static PyObject *
dims_tuple(int ndim, const Py_ssize_t *dims)
{
    PyObject *t = PyTuple_New(ndim);
    if (t == NULL) {
        return NULL;
    }
    for (int i = 0; i < ndim; i++) {
        PyObject *d = PyLong_FromSsize_t(dims[i]);
        if (d == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, d);
    }
    return t;
}

/* The shape tuple (borrowed), built on first use. */
static PyObject *
nrtpy_tensor_shape(NrtpyTensorObject *self)
{
    if (self->shape == NULL && self->tensor_ref != NULL) {
        self->shape = dims_tuple(self->ndim, self->dims);
    }
    return self->shape;
}

/* NrtTensor of an initialised tensor, or NULL with NrtpyError (a subclass
 * whose __init__ did not call NrtpyTensor.__init__). */
static NrtTensorObject *
nrtpy_tensor_ref(NrtpyTensorObject *self)
{
    if (self->tensor_ref == NULL) {
        raise_nrtpy_error("This %s was not initialised: its __init__ must "
                          "call NrtpyTensor.__init__.",
                          _PyType_Name(Py_TYPE(self)));
        return NULL;
    }
    return (NrtTensorObject *)self->tensor_ref;
}

/*
 * __init__: validate and set every field.  Allocation (tp_new) takes any
 * arguments and sets nothing, so subclasses may add constructor arguments
 * and call super().__init__(tensor_ref, shape, dtype, name).
 */
static int
NrtpyTensor_init(PyObject *op, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"tensor_ref", "shape", "dtype", "name", NULL};
    PyObject *ref, *shape_obj, *dtype_obj, *name = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|O:NrtpyTensor", kwlist,
                                     &ref, &shape_obj, &dtype_obj, &name)) {
        return -1;
    }
    if (((NrtpyTensorObject *)op)->tensor_ref != NULL) {
        /* Its memory is fixed for life: code that works on it with the GIL
         * released (or calls back into Python) relies on that. */
        raise_nrtpy_error("This %s is already initialised; create a new one "
                          "instead.",
                          _PyType_Name(Py_TYPE(op)));
        return -1;
    }
    if (!Py_IS_TYPE(ref, ext_state->NrtTensor_Type)) {
        PyErr_Format(PyExc_TypeError,
                     "tensor_ref must be an NrtTensor, not %s",
                     Py_TYPE(ref)->tp_name);
        return -1;
    }
    if (name != Py_None && !PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "name must be a str or None, not %s",
                     Py_TYPE(name)->tp_name);
        return -1;
    }
    /* Only kept here, but a name libnrt could not be given is refused
     * wherever a tensor is named. */
    if (name != Py_None && tensor_name_utf8(name, "name", "") == NULL) {
        return -1;
    }
    int result = -1;
    size_t count = 0;
    PyArray_Descr *descr = dtype_convert(dtype_obj);
    if (descr == NULL) {
        return -1;
    }
    PyObject *shape = shape_convert(shape_obj, &count);
    if (shape == NULL) {
        goto done;
    }
    size_t item = (size_t)PyDataType_ELSIZE(descr);
    if (item == 0) {
        PyErr_Format(PyExc_ValueError,
                     "dtype %R has no item size; give one, e.g. 'S8' or 'V4'",
                     (PyObject *)descr);
        goto done;
    }
    size_t have = ((NrtTensorObject *)ref)->size;
    if (item != 0 && count > SIZE_MAX / item) {
        PyErr_Format(PyExc_ValueError, "shape %R is too large", shape);
        goto done;
    }
    if (count * item != have) {
        PyErr_Format(PyExc_ValueError,
                     "Size mismatch: shape %R of %R needs %zu bytes, the "
                     "tensor has %zu bytes",
                     shape, (PyObject *)descr, count * item, have);
        goto done;
    }
    npy_intp dims[NPY_MAXDIMS];
    int nd = (int)PyTuple_GET_SIZE(shape);
    for (int i = 0; i < nd; i++) {
        dims[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
    }
    result = nrtpy_tensor_set((NrtpyTensorObject *)op, ref, nd, dims,
                              (PyObject *)descr, name, have);
done:
    Py_XDECREF(shape);
    Py_DECREF(descr);
    return result;
}

/* --------------------------------------------------------- from_numpy */

/* A C-contiguous ndarray for `obj`: itself when it already is one. */
static PyArrayObject *
as_contiguous_array(PyObject *obj)
{
    if (PyArray_Check(obj) && PyArray_IS_C_CONTIGUOUS((PyArrayObject *)obj)) {
        return (PyArrayObject *)Py_NewRef(obj);
    }
    PyObject *arr = PyArray_FROM_OF(obj, NPY_ARRAY_C_CONTIGUOUS);
    return (PyArrayObject *)arr;
}

static PyObject *
NrtpyTensor_from_numpy(PyObject *cls, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames)
{
    static const char *const names[] = {"array", "name", "core_id"};
    PyObject *argv[3] = {NULL, Py_None, NULL};
    if (parse_args("from_numpy", args, nargs, kwnames, names, 3, 1, argv) <
        0) {
        return NULL;
    }
    PyObject *name = argv[1];
    uint32_t core_id = 0;
    if (argv[2] != NULL &&
        core_id_check(argv[2], "core_id", false, &core_id) < 0) {
        return NULL;
    }
    if (name != Py_None && !PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "name must be a str or None, not %s",
                     Py_TYPE(name)->tp_name);
        return NULL;
    }
    /* Before the array is converted (tensor_allocate checks it again). */
    if (name != Py_None && tensor_name_utf8(name, "name", "") == NULL) {
        return NULL;
    }

    PyObject *result = NULL, *shape = NULL;
    NrtTensorObject *ref = NULL;
    host_memory mem = {0};
    PyArrayObject *arr = as_contiguous_array(argv[0]);
    if (arr == NULL) {
        return NULL;
    }
    if (host_memory_get((PyObject *)arr, false, &mem) < 0) {
        goto done;
    }
    NrtpyObject *rt = default_runtime_get();
    if (rt == NULL) {
        goto done;
    }
    ref = tensor_allocate(rt, mem.len, core_id, name, true);
    if (ref == NULL) {
        goto done;
    }
    if (tensor_write_bytes(ref, mem.buf, 0, mem.len) < 0) {
        goto done;
    }
    PyObject *dtype = (PyObject *)PyArray_DESCR(arr);
    if ((PyTypeObject *)cls == ext_state->NrtpyTensor_Type) {
        result = ext_state->NrtpyTensor_Type->tp_alloc(
            ext_state->NrtpyTensor_Type, 0);
        if (result != NULL &&
            nrtpy_tensor_set((NrtpyTensorObject *)result, (PyObject *)ref,
                             PyArray_NDIM(arr), PyArray_DIMS(arr), dtype, name,
                             mem.len) < 0) {
            Py_CLEAR(result);
        }
    } else {
        /* Subclasses get their own __init__/__new__ run. */
        shape = dims_tuple(PyArray_NDIM(arr), PyArray_DIMS(arr));
        if (shape != NULL) {
            result = PyObject_CallFunctionObjArgs(cls, (PyObject *)ref, shape,
                                                  dtype, name, NULL);
        }
    }
done:
    host_memory_release(&mem);
    Py_XDECREF(shape);
    Py_XDECREF(ref);
    Py_DECREF(arr);
    return result;
}

/* ------------------------------------------------------ numpy / write */

/*
 * Which host arrays a tensor copies to and from.  The tensor's own dtype
 * and shape, checked first with pointer compares (NumPy shares one
 * descriptor per builtin type, and from_numpy keeps the array's); else,
 * in match_slow():
 *   - a plain byte view, by byte count alone: an array of uint8, int8 or
 *     unstructured void (the documented way to copy raw bytes), or any
 *     array into or out of a tensor of void dtype (one whose type the
 *     NEFF does not say);
 *   - a 1-byte ml_dtypes type (fp8) for an int8 tensor: libnrt reports
 *     fp8 tensors as int8;
 *   - the tensor's dtype in the other byte order: the values are
 *     converted, not the bytes copied;
 * and nothing else: a wrong dtype raises ValueError naming both.  Shapes
 * (but for byte views) must be the same up to dimensions of size 1.
 */
enum { MATCH_EXACT, MATCH_BYTES, MATCH_SWAPPED };

static inline bool
match_fast(NrtpyTensorObject *self, PyArrayObject *arr)
{
    PyArray_Descr *d = PyArray_DESCR(arr);
    if ((PyObject *)d != self->dtype &&
        !PyArray_EquivTypes(d, (PyArray_Descr *)self->dtype)) {
        return false;
    }
    int nd = PyArray_NDIM(arr);
    if (nd != self->ndim) {
        return false;
    }
    const npy_intp *dims = PyArray_DIMS(arr);
    for (int i = 0; i < nd; i++) {
        if (dims[i] != self->dims[i]) {
            return false;
        }
    }
    return true;
}

/* Bytes without a type: an unstructured void dtype. */
static bool
is_untyped(PyArray_Descr *d)
{
    return d->type_num == NPY_VOID && !PyDataType_HASFIELDS(d) &&
           !PyDataType_HASSUBARRAY(d);
}

/* An array of bytes: uint8, int8 or untyped. */
static bool
is_plain_bytes(PyArray_Descr *d)
{
    return d->type_num == NPY_UBYTE || d->type_num == NPY_BYTE ||
           is_untyped(d);
}

/* The same shape up to dimensions of size 1: (10,) is (1, 10), whose
 * elements lie in the same order, but (6,) is not (2, 3). */
static bool
same_dims(int na, const npy_intp *a, int nb, const Py_ssize_t *b)
{
    int i = 0, j = 0;
    for (;;) {
        while (i < na && a[i] == 1) {
            i++;
        }
        while (j < nb && b[j] == 1) {
            j++;
        }
        if (i == na || j == nb) {
            return i == na && j == nb;
        }
        if (a[i++] != b[j++]) {
            return false;
        }
    }
}

/* `role` is "source" (write_from_numpy) or "out" (numpy).  A MATCH_ kind,
 * or -1 with ValueError. */
static int
match_slow(NrtpyTensorObject *self, PyArrayObject *arr, const char *role)
{
    PyArray_Descr *have = PyArray_DESCR(arr);
    PyArray_Descr *want = (PyArray_Descr *)self->dtype;
    size_t nbytes = (size_t)PyArray_NBYTES(arr);
    int kind = -1;
    if (PyDataType_REFCHK(have)) {
        PyErr_Format(PyExc_TypeError,
                     "arrays of dtype %R hold Python objects and cannot be "
                     "copied to or from a device",
                     (PyObject *)have);
        return -1;
    }
    if (PyArray_EquivTypes(have, want)) {
        kind = MATCH_EXACT;
    } else if (is_plain_bytes(have) || is_untyped(want)) {
        kind = MATCH_BYTES;
    } else if (want->type_num == NPY_BYTE && have->type_num >= NPY_USERDEF &&
               PyDataType_ELSIZE(have) == 1) {
        kind = MATCH_EXACT;
    } else {
        PyArray_Descr *swapped = PyArray_DescrNewByteorder(have, NPY_SWAP);
        if (swapped == NULL) {
            return -1;
        }
        if (PyArray_EquivTypes(swapped, want)) {
            kind = MATCH_SWAPPED;
        }
        Py_DECREF(swapped);
    }
    if (kind >= 0 && nbytes != self->nbytes) {
        if (role[0] == 'o') {
            PyErr_Format(PyExc_ValueError,
                         "Size mismatch: out has %zu bytes, the tensor %zu "
                         "bytes",
                         nbytes, self->nbytes);
        } else {
            PyErr_Format(PyExc_ValueError,
                         "Size mismatch: source %zu bytes, target %zu bytes",
                         nbytes, self->nbytes);
        }
        return -1;
    }
    if (kind == MATCH_BYTES) {
        return kind;
    }
    if (kind >= 0 && same_dims(PyArray_NDIM(arr), PyArray_DIMS(arr),
                               self->ndim, self->dims)) {
        return kind;
    }
    PyObject *shape = dims_tuple(PyArray_NDIM(arr), PyArray_DIMS(arr));
    PyObject *tshape = nrtpy_tensor_shape(self);
    if (shape != NULL && tshape != NULL) {
        PyErr_Format(PyExc_ValueError,
                     "%s mismatch: %s array of dtype %S and shape %R, "
                     "tensor of dtype %S and shape %R; convert the array "
                     "(astype, reshape), or use a uint8 view to copy raw "
                     "bytes",
                     kind < 0 ? "Dtype" : "Shape", role, (PyObject *)have,
                     shape, (PyObject *)want, tshape);
    }
    Py_XDECREF(shape);
    return -1;
}

/* An ndarray for write_from_numpy's argument, checked against the
 * tensor: C-contiguous, in the tensor's byte order.  New reference, or
 * NULL with an exception. */
static PyArrayObject *
write_source(NrtpyTensorObject *self, PyObject *obj)
{
    if (PyObject_TypeCheck(obj, ext_state->NrtpyTensor_Type) ||
        Py_IS_TYPE(obj, ext_state->NrtTensor_Type)) {
        PyErr_Format(PyExc_TypeError,
                     "write_from_numpy() takes a NumPy array, not an %s: "
                     "copy through the host, t.write_from_numpy(other."
                     "numpy())",
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyArrayObject *arr;
    if (PyArray_Check(obj)) {
        arr = as_contiguous_array(obj);
    } else if (PyBytes_Check(obj) || PyByteArray_Check(obj)) {
        /* bytes hold bytes: a plain byte view */
        arr = (PyArrayObject *)PyArray_FromBuffer(
            obj, PyArray_DescrFromType(NPY_UBYTE), -1, 0);
    } else {
        /* sequences and scalars become NumPy's array of them */
        arr = as_contiguous_array(obj);
        if (arr != NULL && PyDataType_REFCHK(PyArray_DESCR(arr))) {
            PyErr_Format(PyExc_TypeError,
                         "write_from_numpy() takes a NumPy array (or "
                         "numbers), not %.200R",
                         obj);
            Py_CLEAR(arr);
        }
    }
    if (arr == NULL || match_fast(self, arr)) {
        return arr;
    }
    int kind = match_slow(self, arr, "source");
    if (kind == MATCH_SWAPPED) {
        Py_INCREF(self->dtype); /* stolen */
        Py_SETREF(arr, (PyArrayObject *)PyArray_CastToType(
                           arr, (PyArray_Descr *)self->dtype, 0));
    } else if (kind < 0) {
        Py_CLEAR(arr);
    }
    return arr;
}

static PyObject *
NrtpyTensor_numpy(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                  PyObject *kwnames)
{
    NrtpyTensorObject *self = (NrtpyTensorObject *)op;
    static const char *const names[] = {"out"};
    PyObject *argv[1] = {NULL};
    if (parse_args("numpy", args, nargs, kwnames, names, 1, 0, argv) < 0) {
        return NULL;
    }
    NrtTensorObject *ref = nrtpy_tensor_ref(self);
    if (ref == NULL) {
        return NULL;
    }
    /* Check first: an old tensor must fail without touching any runtime. */
    if (tensor_is_freed(ref)) {
        return raise_handle_error(ref->token,
                                  "Unable to read from a freed tensor. Please "
                                  "check the lifetime of the tensor.");
    }
    PyObject *out = argv[0];
    int kind = MATCH_EXACT;
    if (out == NULL || out == Py_None) {
        PyArray_Descr *descr = (PyArray_Descr *)self->dtype;
        Py_INCREF(descr); /* stolen by NewFromDescr */
        out = PyArray_NewFromDescr(&PyArray_Type, descr, self->ndim,
                                   self->dims, NULL, NULL, 0, NULL);
        if (out == NULL) {
            return NULL;
        }
    } else {
        /* Another object with the buffer protocol is bytes to fill. */
        if (PyArray_Check(out) && !match_fast(self, (PyArrayObject *)out) &&
            (kind = match_slow(self, (PyArrayObject *)out, "out")) < 0) {
            return NULL;
        }
        Py_INCREF(out);
    }
    host_memory mem;
    if (host_memory_get(out, true, &mem) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    int rc = -1;
    if (mem.len != self->nbytes) {
        PyErr_Format(PyExc_ValueError,
                     "Size mismatch: out has %zu bytes, the tensor %zu bytes",
                     mem.len, self->nbytes);
    } else {
        rc = tensor_read_bytes(ref, mem.buf, 0, mem.len);
    }
    host_memory_release(&mem);
    if (rc == 0 && kind == MATCH_SWAPPED) {
        /* The tensor's byte order read into an array of the other one:
         * swap in place, which converts the values. */
        PyObject *same = PyArray_Byteswap((PyArrayObject *)out, NPY_TRUE);
        if (same == NULL) {
            rc = -1;
        }
        Py_XDECREF(same);
    }
    if (rc < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

static PyObject *
NrtpyTensor_write_from_numpy(PyObject *op, PyObject *array)
{
    NrtpyTensorObject *self = (NrtpyTensorObject *)op;
    NrtTensorObject *ref = nrtpy_tensor_ref(self);
    if (ref == NULL) {
        return NULL;
    }
    if (tensor_is_freed(ref)) {
        return raise_handle_error(ref->token,
                                  "Unable to write to a freed tensor. Please "
                                  "check the lifetime of the tensor.");
    }
    PyArrayObject *arr = write_source(self, array);
    if (arr == NULL) {
        return NULL;
    }
    host_memory mem;
    int rc = host_memory_get((PyObject *)arr, false, &mem);
    Py_DECREF(arr);
    if (rc < 0) {
        return NULL;
    }
    if (mem.len != self->nbytes) {
        PyErr_Format(PyExc_ValueError,
                     "Size mismatch: source %zu bytes, target %zu bytes",
                     mem.len, self->nbytes);
        rc = -1;
    } else {
        rc = tensor_write_bytes(ref, mem.buf, 0, mem.len);
    }
    host_memory_release(&mem);
    if (rc < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------- object */

static int
NrtpyTensor_traverse(PyObject *op, visitproc visit, void *arg)
{
    NrtpyTensorObject *self = (NrtpyTensorObject *)op;
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(self->tensor_ref);
    Py_VISIT(self->shape);
    Py_VISIT(self->dtype);
    Py_VISIT(self->name);
    return 0;
}

static int
NrtpyTensor_clear(PyObject *op)
{
    NrtpyTensorObject *self = (NrtpyTensorObject *)op;
    Py_CLEAR(self->tensor_ref);
    Py_CLEAR(self->shape);
    Py_CLEAR(self->dtype);
    Py_CLEAR(self->name);
    if (self->dims != NULL && self->dims != self->dims_inline) {
        PyMem_Free(self->dims);
    }
    self->dims = NULL;
    return 0;
}

static void
NrtpyTensor_dealloc(PyObject *op)
{
    PyTypeObject *tp = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    NrtpyTensor_clear(op);
    tp->tp_free(op);
    Py_DECREF(tp);
}

static PyObject *
NrtpyTensor_repr(PyObject *op)
{
    NrtpyTensorObject *self = (NrtpyTensorObject *)op;
    if (self->tensor_ref == NULL) {
        return PyUnicode_FromFormat("<%s, not initialised>",
                                    _PyType_Name(Py_TYPE(op)));
    }
    PyObject *shape = nrtpy_tensor_shape(self);
    PyObject *dt = shape != NULL ? PyObject_Str(self->dtype) : NULL;
    if (dt == NULL) {
        return NULL;
    }
    PyObject *r;
    if (self->name == Py_None) {
        r = PyUnicode_FromFormat("%s(shape=%R, dtype=%U, name=None)",
                                 _PyType_Name(Py_TYPE(op)), shape, dt);
    } else {
        r = PyUnicode_FromFormat("%s(shape=%R, dtype=%U, name=%U)",
                                 _PyType_Name(Py_TYPE(op)), shape, dt,
                                 self->name);
    }
    Py_DECREF(dt);
    return r;
}

static PyObject *
NrtpyTensor_get_tensor_ref(PyObject *op, void *c)
{
    (void)c;
    PyObject *v = ((NrtpyTensorObject *)op)->tensor_ref;
    return Py_NewRef(v != NULL ? v : Py_None);
}

static PyObject *
NrtpyTensor_get_shape(PyObject *op, void *c)
{
    (void)c;
    NrtpyTensorObject *self = (NrtpyTensorObject *)op;
    if (self->tensor_ref == NULL) {
        Py_RETURN_NONE;
    }
    PyObject *v = nrtpy_tensor_shape(self);
    return v != NULL ? Py_NewRef(v) : NULL;
}

static PyObject *
NrtpyTensor_get_dtype(PyObject *op, void *c)
{
    (void)c;
    PyObject *v = ((NrtpyTensorObject *)op)->dtype;
    return Py_NewRef(v != NULL ? v : Py_None);
}

static PyObject *
NrtpyTensor_get_name(PyObject *op, void *c)
{
    (void)c;
    PyObject *v = ((NrtpyTensorObject *)op)->name;
    return Py_NewRef(v != NULL ? v : Py_None);
}

static PyObject *
NrtpyTensor_get_nbytes(PyObject *op, void *c)
{
    (void)c;
    return PyLong_FromSize_t(((NrtpyTensorObject *)op)->nbytes);
}

static PyObject *
NrtpyTensor_get_core_id(PyObject *op, void *c)
{
    (void)c;
    NrtTensorObject *ref = nrtpy_tensor_ref((NrtpyTensorObject *)op);
    return ref != NULL ? PyLong_FromUnsignedLong(ref->core_id) : NULL;
}

static PyGetSetDef NrtpyTensor_getset[] = {
    {"tensor_ref", NrtpyTensor_get_tensor_ref, NULL,
     "The NrtTensor holding the device memory.", NULL},
    {"shape", NrtpyTensor_get_shape, NULL, "Shape, a tuple of ints.", NULL},
    {"dtype", NrtpyTensor_get_dtype, NULL, "NumPy dtype.", NULL},
    {"name", NrtpyTensor_get_name, NULL, "Name, or None.", NULL},
    {"nbytes", NrtpyTensor_get_nbytes, NULL, "Size in bytes.", NULL},
    {"core_id", NrtpyTensor_get_core_id, NULL,
     "NeuronCore the tensor lives on.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/*
 * from_numpy is a classmethod whose binding to NrtpyTensor itself is made
 * once: the builtin classmethod descriptor allocates a new bound method on
 * every `NrtpyTensor.from_numpy` lookup, a quarter of the cost of the
 * whole call on a small array.  Subclasses get a fresh binding, so
 * Sub.from_numpy() still returns a Sub.
 */
static PyMethodDef from_numpy_def = {
    "from_numpy", (PyCFunction)(void (*)(void))NrtpyTensor_from_numpy,
    METH_FASTCALL | METH_KEYWORDS,
    "from_numpy(array, name=None, core_id=0)\n--\n\n"
    "Allocate a device tensor and copy `array` into it (made contiguous "
    "first).\nThe tensor keeps the array's shape and dtype."};

typedef struct {
    PyObject_HEAD PyTypeObject
        *owner;      /* the class the cached binding is for */
    PyObject *bound; /* from_numpy bound to owner */
} CachedClassMethodObject;

static PyObject *
CachedClassMethod_get(PyObject *op, PyObject *obj, PyObject *type)
{
    CachedClassMethodObject *self = (CachedClassMethodObject *)op;
    if (type == NULL) {
        type = (PyObject *)Py_TYPE(obj);
    }
    if (type == (PyObject *)self->owner) {
        return Py_NewRef(self->bound);
    }
    return PyCFunction_NewEx(&from_numpy_def, type, NULL);
}

static int
CachedClassMethod_traverse(PyObject *op, visitproc visit, void *arg)
{
    CachedClassMethodObject *self = (CachedClassMethodObject *)op;
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(self->owner);
    Py_VISIT(self->bound);
    return 0;
}

static int
CachedClassMethod_clear(PyObject *op)
{
    CachedClassMethodObject *self = (CachedClassMethodObject *)op;
    Py_CLEAR(self->owner);
    Py_CLEAR(self->bound);
    return 0;
}

static void
CachedClassMethod_dealloc(PyObject *op)
{
    PyTypeObject *tp = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    CachedClassMethod_clear(op);
    tp->tp_free(op);
    Py_DECREF(tp);
}

static PyObject *
CachedClassMethod_get_doc(PyObject *op, void *c)
{
    (void)op;
    (void)c;
    return PyUnicode_FromString(from_numpy_def.ml_doc);
}

static PyGetSetDef CachedClassMethod_getset[] = {
    {"__doc__", CachedClassMethod_get_doc, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot CachedClassMethod_slots[] = {
    {Py_tp_descr_get, CachedClassMethod_get},
    {Py_tp_traverse, CachedClassMethod_traverse},
    {Py_tp_clear, CachedClassMethod_clear},
    {Py_tp_dealloc, CachedClassMethod_dealloc},
    {Py_tp_getset, CachedClassMethod_getset},
    {0, NULL},
};

static PyType_Spec CachedClassMethod_spec = {
    .name = "nrtpy._nrtpy._cached_classmethod",
    .basicsize = sizeof(CachedClassMethodObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = CachedClassMethod_slots,
};

static int
add_from_numpy(PyObject *module, PyTypeObject *owner)
{
    PyTypeObject *tp = (PyTypeObject *)PyType_FromModuleAndSpec(
        module, &CachedClassMethod_spec, NULL);
    if (tp == NULL) {
        return -1;
    }
    CachedClassMethodObject *d = PyObject_GC_New(CachedClassMethodObject, tp);
    Py_DECREF(tp); /* the instance holds the type */
    if (d == NULL) {
        return -1;
    }
    d->owner = (PyTypeObject *)Py_NewRef((PyObject *)owner);
    d->bound = PyCFunction_NewEx(&from_numpy_def, (PyObject *)owner, NULL);
    PyObject_GC_Track((PyObject *)d);
    int rc = d->bound == NULL
                 ? -1
                 : PyObject_SetAttrString((PyObject *)owner, "from_numpy",
                                          (PyObject *)d);
    Py_DECREF(d);
    return rc;
}

static PyMethodDef NrtpyTensor_methods[] = {
    {"numpy", (PyCFunction)(void (*)(void))NrtpyTensor_numpy,
     METH_FASTCALL | METH_KEYWORDS,
     "numpy(out=None)\n--\n\n"
     "Read the tensor into a new array of its shape and dtype, or into "
     "`out`,\na writable C-contiguous array of its dtype (either byte "
     "order) and shape\n(dimensions of size 1 aside), or a uint8/int8/void "
     "array or buffer of its\nbyte size; `out` is returned.  ValueError "
     "for another dtype, shape or size."},
    {"write_from_numpy", NrtpyTensor_write_from_numpy, METH_O,
     "write_from_numpy(array)\n--\n\n"
     "Overwrite the tensor with `array` (made contiguous first): an array "
     "of the\ntensor's dtype (the other byte order is converted) and shape "
     "(dimensions\nof size 1 aside), or a uint8/int8/void array, bytes or "
     "bytearray of its\nbyte size.  ValueError for another dtype, shape or "
     "size."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot NrtpyTensor_slots[] = {
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, NrtpyTensor_init},
    {Py_tp_dealloc, NrtpyTensor_dealloc},
    {Py_tp_traverse, NrtpyTensor_traverse},
    {Py_tp_clear, NrtpyTensor_clear},
    {Py_tp_repr, NrtpyTensor_repr},
    {Py_tp_getset, NrtpyTensor_getset},
    {Py_tp_methods, NrtpyTensor_methods},
    {Py_tp_doc,
     "NrtpyTensor(tensor_ref, shape, dtype, name=None)\n--\n\n"
     "A tensor resident in device memory (HBM), with a shape and a NumPy "
     "dtype.\nThe memory is freed when the tensor is garbage collected, or "
     "explicitly\nwith nrtpy.get_nrtpy_singleton().free_tensor(tensor)."},
    {0, NULL},
};

static PyType_Spec NrtpyTensor_spec = {
    .name = "nrtpy._nrtpy.NrtpyTensor",
    .basicsize = sizeof(NrtpyTensorObject),
    /* GC: the name (a str subclass) and the dtype's metadata can refer
     * back to the tensor. */
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = NrtpyTensor_slots,
};

int
nrtpy_tensor_type_init(PyObject *module)
{
    ext_state->NrtpyTensor_Type = (PyTypeObject *)PyType_FromModuleAndSpec(
        module, &NrtpyTensor_spec, NULL);
    if (ext_state->NrtpyTensor_Type == NULL ||
        add_from_numpy(module, ext_state->NrtpyTensor_Type) < 0) {
        return -1;
    }
    return PyModule_AddType(module, ext_state->NrtpyTensor_Type);
}

_Static_assert(sizeof(npy_intp) == sizeof(Py_ssize_t),
               "NrtpyTensor dims are npy_intp and Py_ssize_t alike");

PyObject *
nrtpy_tensor_wrap(PyObject *ref, int ndim, const Py_ssize_t *dims,
                  PyObject *dtype, PyObject *name, size_t nbytes)
{
    PyObject *t =
        ext_state->NrtpyTensor_Type->tp_alloc(ext_state->NrtpyTensor_Type, 0);
    if (t != NULL &&
        nrtpy_tensor_set((NrtpyTensorObject *)t, ref, ndim,
                         (const npy_intp *)dims, dtype, name, nbytes) < 0) {
        Py_CLEAR(t);
    }
    return t;
}
