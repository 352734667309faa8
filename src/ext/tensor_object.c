/*
 * tensor_object.c - NrtTensor: one libnrt tensor handle, and the runtime
 * token that tells whether the handle may still be used.
 */
#include "ext.h"

#include <stdlib.h>
#include <unistd.h>

/* --------------------------------------------------------------- token */

runtime_token *
token_create(void)
{
    runtime_token *token = PyMem_RawMalloc(sizeof *token);
    if (token == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    atomic_init(&token->refcnt, 1);
    atomic_init(&token->closed, false);
    atomic_init(&token->busy, 0);
    atomic_init(&token->forked, false);
    token->pid = (long)getpid();
    return token;
}

void
token_incref(runtime_token *token)
{
    atomic_fetch_add(&token->refcnt, 1);
}

void
token_decref(runtime_token *token)
{
    if (token != NULL && atomic_fetch_sub(&token->refcnt, 1) == 1) {
        PyMem_RawFree(token);
    }
}

/* -------------------------------------------------------------- tensor */

int
tensor_is_freed(NrtTensorObject *t)
{
    if (t->free_pending || atomic_load(&t->token->closed)) {
        return 1;
    }
    /* A 0-byte tensor never has a handle; it is freed only explicitly,
     * which marks it with free_pending. */
    return t->handle == NULL && t->size != 0;
}

static void tensor_settle(NrtTensorObject *t);

static void
tensor_release_handle(NrtTensorObject *t)
{
    nrt_tensor_t *h = t->handle;
    t->handle = NULL;
    if (h == NULL) {
        return;
    }
    /* After nrt_close() the real libnrt is never called again: it has
     * released what the handle referred to.  The emulator documents that a
     * tensor outliving its runtime keeps its host memory until freed, so
     * there the handle is still freed. */
    if (token_may_release(t->token)) {
        libnrt.nrt_tensor_free(&h);
    }
    if (t->parent != NULL) {
        NrtTensorObject *parent = (NrtTensorObject *)t->parent;
        parent->slices--;
        tensor_settle(parent);
    }
}

/*
 * Release the handle of a tensor the user freed once nothing needs it: no
 * operation in flight on another thread, and no live slice reading its
 * memory (libnrt is not known to keep a parent's memory for its slices).
 */
static void
tensor_settle(NrtTensorObject *t)
{
    if (!t->free_pending || t->users > 0 || t->slices > 0) {
        return;
    }
    tensor_release_handle(t);
    Py_CLEAR(t->parent);
}

void
tensor_free(NrtTensorObject *t)
{
    t->free_pending = true;
    tensor_settle(t);
}

void
tensor_op_begin(NrtTensorObject *t)
{
    Py_INCREF(t);
    t->users++;
}

void
tensor_op_end(NrtTensorObject *t)
{
    t->users--;
    tensor_settle(t);
    Py_DECREF(t);
}

int
tensor_write_bytes(NrtTensorObject *t, const void *buf, size_t offset,
                   size_t size)
{
    if (tensor_is_freed(t)) {
        raise_handle_error(t->token,
                           "Unable to write to a freed tensor. Please check "
                           "the lifetime of the tensor.");
        return -1;
    }
    if (offset > t->size || size > t->size - offset) {
        raise_nrtpy_error("The write operation exceeds the tensor bound. "
                          "Tensor size: %zu bytes; Input size: %zu bytes; "
                          "Offset: %zu bytes.",
                          t->size, size, offset);
        return -1;
    }
    if (size == 0) {
        return 0;
    }
    NRT_STATUS st;
    tensor_op_begin(t);
    atomic_fetch_add(&t->token->busy, 1);
    Py_BEGIN_ALLOW_THREADS
        st = libnrt.nrt_tensor_write(t->handle, buf, offset, size);
        atomic_fetch_sub(&t->token->busy, 1);
    Py_END_ALLOW_THREADS
    if (st != NRT_SUCCESS) {
        raise_nrt_error(st, "Failed to write tensor");
    }
    tensor_op_end(t);
    return st == NRT_SUCCESS ? 0 : -1;
}

int
tensor_read_bytes(NrtTensorObject *t, void *buf, size_t offset, size_t size)
{
    if (tensor_is_freed(t)) {
        raise_handle_error(t->token,
                           "Unable to read from a freed tensor. Please check "
                           "the lifetime of the tensor.");
        return -1;
    }
    if (offset > t->size || size > t->size - offset) {
        raise_nrtpy_error("The read operation exceeds the tensor bound. "
                          "Tensor size: %zu bytes; Read size: %zu bytes; "
                          "Offset: %zu bytes.",
                          t->size, size, offset);
        return -1;
    }
    if (size == 0) {
        return 0;
    }
    NRT_STATUS st;
    tensor_op_begin(t);
    atomic_fetch_add(&t->token->busy, 1);
    Py_BEGIN_ALLOW_THREADS
        st = libnrt.nrt_tensor_read(t->handle, buf, offset, size);
        atomic_fetch_sub(&t->token->busy, 1);
    Py_END_ALLOW_THREADS
    if (st != NRT_SUCCESS) {
        raise_nrt_error(st, "Failed to read tensor");
    }
    tensor_op_end(t);
    return st == NRT_SUCCESS ? 0 : -1;
}

NrtTensorObject *
tensor_allocate(NrtpyObject *rt, size_t size, uint32_t core_id, PyObject *name,
                bool allow_empty)
{
    const char *cname = "unnamed_tensor";
    if (name != NULL && name != Py_None) {
        if (!PyUnicode_Check(name)) {
            PyErr_Format(PyExc_TypeError, "name must be a str or None, not %s",
                         Py_TYPE(name)->tp_name);
            return NULL;
        }
        cname = tensor_name_utf8(name, "name", "");
        if (cname == NULL) {
            return NULL;
        }
    } else {
        name = ext_state->str_unnamed;
    }
    if (runtime_check_open(rt) < 0) {
        return NULL;
    }
    nrt_tensor_t *h = NULL;
    if (size != 0 || !allow_empty) {
        NRT_STATUS st = libnrt.nrt_tensor_allocate(
            NRT_TENSOR_PLACEMENT_DEVICE, (int)core_id, size, cname, &h);
        if (st != NRT_SUCCESS) {
            return (NrtTensorObject *)raise_nrt_error(
                st, "Failed to allocate tensor");
        }
    }
    NrtTensorObject *t =
        PyObject_New(NrtTensorObject, ext_state->NrtTensor_Type);
    if (t == NULL) {
        if (h != NULL) {
            libnrt.nrt_tensor_free(&h);
        }
        return NULL;
    }
    t->handle = h;
    t->token = rt->token;
    token_incref(t->token);
    t->parent = NULL;
    t->size = size;
    t->core_id = core_id;
    t->users = 0;
    t->slices = 0;
    t->free_pending = false;
    /* An exact str: NrtTensor is not GC-tracked, so it must not hold an
     * object (a str subclass with a __dict__) that could refer back. */
    t->name = PyUnicode_CheckExact(name) ? Py_NewRef(name)
                                         : PyUnicode_FromObject(name);
    if (t->name == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    return t;
}

/* Used by Nrtpy.slice_from_tensor. */
NrtTensorObject *tensor_slice(NrtTensorObject *src, size_t offset, size_t size,
                              PyObject *name);

NrtTensorObject *
tensor_slice(NrtTensorObject *src, size_t offset, size_t size, PyObject *name)
{
    const char *cname = "unnamed_tensor";
    if (name != NULL && name != Py_None) {
        if (!PyUnicode_Check(name)) {
            PyErr_Format(PyExc_TypeError, "name must be a str or None, not %s",
                         Py_TYPE(name)->tp_name);
            return NULL;
        }
        cname = tensor_name_utf8(name, "name", "");
        if (cname == NULL) {
            return NULL;
        }
    } else {
        name = ext_state->str_unnamed;
    }
    if (tensor_is_freed(src)) {
        return (NrtTensorObject *)raise_handle_error(
            src->token,
            "Unable to allocate tensor slice from a source tensor that is "
            "freed. Please check the lifetime of the source tensor.");
    }
    if (src->handle == NULL || size == 0) {
        return (NrtTensorObject *)raise_nrtpy_error(
            "Cannot slice %zu bytes at offset %zu of a %zu-byte tensor: "
            "slices have at least one byte.",
            size, offset, src->size);
    }
    if (offset > src->size || size > src->size - offset) {
        return (NrtTensorObject *)raise_nrtpy_error(
            "The slice [%zu, %zu + %zu) exceeds the source tensor bound of "
            "%zu bytes.",
            offset, offset, size, src->size);
    }
    nrt_tensor_t *h = NULL;
    NRT_STATUS st =
        libnrt.nrt_tensor_allocate_slice(src->handle, offset, size, cname, &h);
    if (st != NRT_SUCCESS) {
        return (NrtTensorObject *)raise_nrt_error(
            st, "Failed to allocate tensor slice");
    }
    NrtTensorObject *t =
        PyObject_New(NrtTensorObject, ext_state->NrtTensor_Type);
    if (t == NULL) {
        libnrt.nrt_tensor_free(&h);
        return NULL;
    }
    t->handle = h;
    t->token = src->token;
    token_incref(t->token);
    t->parent = Py_NewRef((PyObject *)src);
    src->slices++;
    t->size = size;
    t->core_id = src->core_id;
    t->users = 0;
    t->slices = 0;
    t->free_pending = false;
    /* An exact str: NrtTensor is not GC-tracked, so it must not hold an
     * object (a str subclass with a __dict__) that could refer back. */
    t->name = PyUnicode_CheckExact(name) ? Py_NewRef(name)
                                         : PyUnicode_FromObject(name);
    if (t->name == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    return t;
}

NrtTensorObject *
tensor_from_object(PyObject *obj, const char *argname)
{
    if (Py_IS_TYPE(obj, ext_state->NrtTensor_Type)) {
        return (NrtTensorObject *)obj;
    }
    if (PyObject_TypeCheck(obj, ext_state->NrtpyTensor_Type)) {
        PyObject *ref = ((NrtpyTensorObject *)obj)->tensor_ref;
        if (ref == NULL) {
            PyErr_Format(PyExc_TypeError, "%s is an uninitialised %s", argname,
                         Py_TYPE(obj)->tp_name);
        }
        return (NrtTensorObject *)ref;
    }
    PyErr_Format(PyExc_TypeError,
                 "%s must be an NrtTensor or an NrtpyTensor, not %s", argname,
                 Py_TYPE(obj)->tp_name);
    return NULL;
}

static void
NrtTensor_dealloc(PyObject *op)
{
    NrtTensorObject *t = (NrtTensorObject *)op;
    PyTypeObject *tp = Py_TYPE(op);
    /* users is 0 here: every operation holds a reference. */
    tensor_release_handle(t);
    Py_CLEAR(t->parent);
    Py_CLEAR(t->name);
    token_decref(t->token);
    tp->tp_free(op);
    Py_DECREF(tp);
}

static PyObject *
NrtTensor_get_core_id(PyObject *op, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(((NrtTensorObject *)op)->core_id);
}

static PyObject *
NrtTensor_get_size(PyObject *op, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(((NrtTensorObject *)op)->size);
}

static PyObject *
NrtTensor_get_name(PyObject *op, void *closure)
{
    (void)closure;
    return Py_NewRef(((NrtTensorObject *)op)->name);
}

static PyObject *
NrtTensor_get_va(PyObject *op, void *closure)
{
    (void)closure;
    NrtTensorObject *t = (NrtTensorObject *)op;
    if (tensor_is_freed(t) || t->handle == NULL) {
        return PyLong_FromLong(0);
    }
    return PyLong_FromVoidPtr(libnrt.nrt_tensor_get_va(t->handle));
}

static PyObject *
NrtTensor_get_is_freed(PyObject *op, void *closure)
{
    (void)closure;
    return PyBool_FromLong(tensor_is_freed((NrtTensorObject *)op));
}

static PyObject *
NrtTensor_repr(PyObject *op)
{
    NrtTensorObject *t = (NrtTensorObject *)op;
    return PyUnicode_FromFormat(
        "NrtTensor(name=%R, size=%zu, core_id=%u, is_slice=%s, freed=%s)",
        t->name, t->size, (unsigned)t->core_id, t->parent ? "True" : "False",
        tensor_is_freed(t) ? "True" : "False");
}

static PyGetSetDef NrtTensor_getset[] = {
    {"core_id", NrtTensor_get_core_id, NULL,
     "NeuronCore (vnc) the tensor lives on.", NULL},
    {"size", NrtTensor_get_size, NULL, "Size in bytes.", NULL},
    {"name", NrtTensor_get_name, NULL, "Name given at allocation.", NULL},
    {"va", NrtTensor_get_va, NULL,
     "Host-visible address of the first byte; 0 once freed.", NULL},
    {"is_freed", NrtTensor_get_is_freed, NULL,
     "True once freed, explicitly or by closing its runtime.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot NrtTensor_slots[] = {
    {Py_tp_dealloc, NrtTensor_dealloc},
    {Py_tp_repr, NrtTensor_repr},
    {Py_tp_getset, NrtTensor_getset},
    {Py_tp_doc, "A block of device memory (HBM) on one NeuronCore.\n\n"
                "Created by Nrtpy.allocate_tensor() and "
                "Nrtpy.slice_from_tensor();\nfreed when the last reference "
                "goes or by Nrtpy.free_tensor()."},
    {0, NULL},
};

static PyType_Spec NrtTensor_spec = {
    .name = "nrtpy._nrtpy.NrtTensor",
    .basicsize = sizeof(NrtTensorObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = NrtTensor_slots,
};

int
tensor_type_init(PyObject *module)
{
    ext_state->NrtTensor_Type = (PyTypeObject *)PyType_FromModuleAndSpec(
        module, &NrtTensor_spec, NULL);
    if (ext_state->NrtTensor_Type == NULL) {
        return -1;
    }
    return PyModule_AddType(module, ext_state->NrtTensor_Type);
}
