/*
 * execute.c - running a loaded model: the I/O tensors pinned for the call,
 * the model's reusable tensor sets, and the call without the GIL.
 *
 * Both Nrtpy.execute (any mapping of names to tensors) and the checked
 * fast path of NrtpyModel.__call__ (model_call.c) end here.
 * The per-call cost is what the emulated device cannot hide for small
 * models, so nothing here allocates on the common path: mappings of up to
 * IO_ON_STACK tensors are pinned on the stack, and each model keeps the
 * tensor sets of its last call, refreshed in place when called again with
 * the same names.
 */
#include "ext.h"

#include <string.h>

#define IO_ON_STACK 16

/* One mapping entry, pinned for the call. */
typedef struct {
    PyObject *key; /* str, owned */
    const char *ckey;
    NrtTensorObject *tensor; /* owned, in use (tensor_op_begin) */
} io_entry;

typedef struct {
    io_entry *e; /* `stack`, or a PyMem block for large mappings */
    Py_ssize_t n;
    io_entry stack[IO_ON_STACK];
} io_list;

static void
io_list_release(io_list *list)
{
    for (Py_ssize_t i = 0; i < list->n; i++) {
        Py_DECREF(list->e[i].key);
        tensor_op_end(list->e[i].tensor);
        Py_DECREF(list->e[i].tensor);
    }
    if (list->e != list->stack) {
        PyMem_Free(list->e);
    }
    list->e = list->stack;
    list->n = 0;
}

/* Pin one (name, tensor) pair as entry list->n. */
static int
io_list_push(io_list *list, PyObject *key, PyObject *value, const char *what)
{
    if (!PyUnicode_Check(key)) {
        PyErr_Format(PyExc_TypeError, "%s keys must be str, not %s", what,
                     Py_TYPE(key)->tp_name);
        return -1;
    }
    NrtTensorObject *t = tensor_from_object(value, what);
    if (t == NULL) {
        return -1;
    }
    if (tensor_is_freed(t)) {
        raise_handle_error(t->token,
                           "Tensor '%U' is freed. Unable to add it into the "
                           "tensor set. Please check the lifetime of the "
                           "tensor.",
                           key);
        return -1;
    }
    if (t->handle == NULL) {
        raise_nrtpy_error("Tensor '%U' has no device memory (0 bytes); "
                          "models take tensors of at least one byte.",
                          key);
        return -1;
    }
    const char *ckey = tensor_name_utf8(key, what, " key");
    if (ckey == NULL) {
        return -1;
    }
    io_entry *e = &list->e[list->n++];
    e->key = Py_NewRef(key);
    e->ckey = ckey;
    e->tensor = (NrtTensorObject *)Py_NewRef((PyObject *)t);
    tensor_op_begin(t);
    return 0;
}

/* Pin the tensors of a mapping: str keys, NrtTensor/NrtpyTensor values,
 * none freed.  A dict is walked in place; other mappings (dict
 * subclasses included) through items().  0, or -1 with an exception and
 * nothing pinned. */
static int
io_list_pin(io_list *list, PyObject *mapping, const char *what)
{
    PyObject *items = NULL;
    Py_ssize_t count;

    list->e = list->stack;
    list->n = 0;
    /* An exact dict is walked in place; a subclass may override items(). */
    if (PyDict_CheckExact(mapping)) {
        count = PyDict_GET_SIZE(mapping);
    } else {
        if (!PyMapping_Check(mapping) ||
            !PyObject_HasAttrString(mapping, "items")) {
            PyErr_Format(PyExc_TypeError,
                         "%s must be a mapping of str to NrtTensor, not %s",
                         what, Py_TYPE(mapping)->tp_name);
            return -1;
        }
        items = PyMapping_Items(mapping);
        if (items == NULL) {
            return -1;
        }
        count = PyList_GET_SIZE(items);
    }
    if (count > IO_ON_STACK) {
        list->e = PyMem_Calloc((size_t)count, sizeof *list->e);
        if (list->e == NULL) {
            list->e = list->stack;
            Py_XDECREF(items);
            PyErr_NoMemory();
            return -1;
        }
    }
    if (items == NULL) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        /* tensor_from_object may run Python code (the tensor_ref of an
         * NrtpyTensor subclass), which could change the dict: a change of
         * size ends the call rather than trust `pos`. */
        while (PyDict_Next(mapping, &pos, &key, &value)) {
            /* Owned for the push: it may run Python code that changes
             * the dict. */
            Py_INCREF(key);
            Py_INCREF(value);
            int rc =
                list->n == count ? -1 : io_list_push(list, key, value, what);
            Py_DECREF(key);
            Py_DECREF(value);
            if (rc < 0) {
                if (!PyErr_Occurred()) {
                    PyErr_Format(PyExc_RuntimeError,
                                 "%s changed size during the call", what);
                }
                io_list_release(list);
                return -1;
            }
        }
        if (list->n != PyDict_GET_SIZE(mapping)) {
            PyErr_Format(PyExc_RuntimeError, "%s changed size during the call",
                         what);
            io_list_release(list);
            return -1;
        }
        return 0;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *pair = PyList_GET_ITEM(items, i);
        /* items() of a user mapping can return anything. */
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_Format(PyExc_TypeError,
                         "%s.items() must give (name, tensor) pairs, got %R",
                         what, pair);
            goto fail;
        }
        if (io_list_push(list, PyTuple_GET_ITEM(pair, 0),
                         PyTuple_GET_ITEM(pair, 1), what) < 0) {
            goto fail;
        }
    }
    Py_DECREF(items);
    return 0;
fail:
    Py_DECREF(items);
    io_list_release(list);
    return -1;
}

/* ----------------------------------------------------- reusable sets */

/* 1 when the names of `list`, in order, are those of the cached set. */
static int
same_names(PyObject *names, const io_list *list)
{
    if (names == NULL || PyTuple_GET_SIZE(names) != list->n) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < list->n; i++) {
        PyObject *a = PyTuple_GET_ITEM(names, i), *b = list->e[i].key;
        if (a != b &&
            (!PyUnicode_CheckExact(b) || PyUnicode_Compare(a, b) != 0)) {
            PyErr_Clear();
            return 0;
        }
    }
    return 1;
}

/* The names of `list` as a tuple of exact str (a key of a str subclass
 * could change its value later). */
static PyObject *
names_of(const io_list *list)
{
    PyObject *names = PyTuple_New(list->n);
    for (Py_ssize_t i = 0; names != NULL && i < list->n; i++) {
        PyObject *k = PyUnicode_FromObject(list->e[i].key);
        if (k == NULL) {
            Py_CLEAR(names);
            break;
        }
        PyTuple_SET_ITEM(names, i, k);
    }
    return names;
}

void
model_sets_clear(NrtModelObject *m)
{
    for (int i = 0; i < 2; i++) {
        if (m->sets[i] != NULL) {
            libnrt.nrt_destroy_tensor_set(&m->sets[i]);
            m->sets[i] = NULL;
        }
        Py_CLEAR(m->set_names[i]);
        PyMem_Free(m->set_handles[i]);
        m->set_handles[i] = NULL;
    }
}

/*
 * Fill `set` from `list` without the GIL; NRT_SUCCESS or the failure.
 * With `handles` (a reused set: what each name holds now), a name that
 * already holds its tensor is skipped.
 */
static NRT_STATUS
set_fill(nrt_tensor_set_t *set, const io_list *list, nrt_tensor_t **handles)
{
    for (Py_ssize_t i = 0; i < list->n; i++) {
        nrt_tensor_t *h = list->e[i].tensor->handle;
        if (handles != NULL && handles[i] == h) {
            continue;
        }
        NRT_STATUS st =
            libnrt.nrt_add_tensor_to_tensor_set(set, list->e[i].ckey, h);
        if (st != NRT_SUCCESS) {
            return st;
        }
        if (handles != NULL) {
            handles[i] = h;
        }
    }
    return NRT_SUCCESS;
}

/* --------------------------------------------------------- execution */

static int
execute_functions_present(bool save_trace)
{
    if (LIBNRT_REQUIRE(nrt_execute) < 0 ||
        LIBNRT_REQUIRE(nrt_allocate_tensor_set) < 0 ||
        LIBNRT_REQUIRE(nrt_add_tensor_to_tensor_set) < 0 ||
        LIBNRT_REQUIRE(nrt_destroy_tensor_set) < 0 ||
        (save_trace && (LIBNRT_REQUIRE(nrt_profile_start) < 0 ||
                        LIBNRT_REQUIRE(nrt_profile_stop) < 0))) {
        return -1;
    }
    return 0;
}

/*
 * Run `m` once on the pinned I/O.  The model's cached sets are used when
 * free (another thread may be executing the same model meanwhile: then
 * this call builds sets of its own); they are rebuilt when the names
 * differ from the last call's.  Sets only ever hold tensors re-added in
 * this call, so a set never refers to a tensor of an earlier one.
 */
static int
execute_pinned(NrtModelObject *m, io_list *in, io_list *out, const char *ntff)
{
    if (model_is_unloaded(m)) {
        raise_handle_error(m->token,
                           "Unable to execute an unloaded model. Please "
                           "check the lifetime of the model.");
        return -1;
    }
    bool use_cache = !m->sets_busy;
    nrt_tensor_set_t *sets[2] = {NULL, NULL};
    const io_list *lists[2] = {in, out};
    if (use_cache) {
        for (int i = 0; i < 2; i++) {
            if (m->sets[i] == NULL || !same_names(m->set_names[i], lists[i])) {
                PyObject *names = names_of(lists[i]);
                nrt_tensor_t **handles =
                    names != NULL
                        ? PyMem_Calloc(lists[i]->n + 1, sizeof *handles)
                        : NULL;
                if (handles == NULL) {
                    if (names != NULL) {
                        Py_DECREF(names);
                        PyErr_NoMemory();
                    }
                    return -1;
                }
                if (m->sets[i] != NULL) {
                    libnrt.nrt_destroy_tensor_set(&m->sets[i]);
                    m->sets[i] = NULL;
                }
                Py_XSETREF(m->set_names[i], names);
                PyMem_Free(m->set_handles[i]);
                m->set_handles[i] = handles;
            }
        }
        m->sets_busy = true;
    }

    NRT_STATUS st = NRT_SUCCESS, prof_start = NRT_SUCCESS,
               prof_stop = NRT_SUCCESS;
    /* Only its first byte set: zeroing all of it shows in a small call. */
    char detail[1024];
    detail[0] = '\0';
    bool fill_failed = false;
    Py_INCREF(m);
    m->users++;
    atomic_fetch_add(&m->token->busy, 1);
    Py_BEGIN_ALLOW_THREADS
        for (int i = 0; i < 2 && st == NRT_SUCCESS; i++) {
            sets[i] = use_cache ? m->sets[i] : NULL;
            if (sets[i] == NULL) {
                st = libnrt.nrt_allocate_tensor_set(&sets[i]);
            }
            if (st == NRT_SUCCESS) {
                st = set_fill(sets[i], lists[i],
                              use_cache ? m->set_handles[i] : NULL);
            }
        }
        if (st != NRT_SUCCESS) {
            fill_failed = true;
        } else if (ntff != NULL) {
            prof_start = libnrt.nrt_profile_start(m->handle, ntff);
            st = libnrt.nrt_execute(m->handle, sets[0], sets[1]);
            prof_stop = libnrt.nrt_profile_stop(ntff);
        } else {
            st = libnrt.nrt_execute(m->handle, sets[0], sets[1]);
        }
        /* Read the failure's detail before the clean-up calls below can
         * replace it. */
        if (st != NRT_SUCCESS) {
            nrt_error_detail(detail, sizeof detail);
        }
        if (!use_cache) {
            for (int i = 0; i < 2; i++) {
                if (sets[i] != NULL) {
                    libnrt.nrt_destroy_tensor_set(&sets[i]);
                }
            }
        }
        atomic_fetch_sub(&m->token->busy, 1);
    Py_END_ALLOW_THREADS
    if (use_cache) {
        m->sets[0] = sets[0];
        m->sets[1] = sets[1];
        m->sets_busy = false;
        if (fill_failed) {
            /* Half-filled: start afresh next time. */
            model_sets_clear(m);
        }
    }
    m->users--;
    if (m->users == 0 && m->unload_pending) {
        model_release_handle(m);
    }
    Py_DECREF(m);

    if (st != NRT_SUCCESS) {
        raise_nrt_error_detail(st,
                               fill_failed ? "Failed to add tensor to set"
                                           : "Failed to execute model",
                               detail);
        return -1;
    }
    if (ntff != NULL &&
        (prof_start != NRT_SUCCESS || prof_stop != NRT_SUCCESS)) {
        NRT_STATUS bad = prof_start != NRT_SUCCESS ? prof_start : prof_stop;
        if (PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                             "the trace %s was not saved: profiling failed "
                             "with %s(%d)",
                             ntff, status_name(bad), (int)bad) < 0) {
            return -1;
        }
    }
    return 0;
}

int
model_execute(NrtModelObject *m, PyObject *inputs, PyObject *outputs,
              const char *ntff)
{
    io_list in, out;
    if (execute_functions_present(ntff != NULL) < 0 ||
        io_list_pin(&in, inputs, "inputs") < 0) {
        return -1;
    }
    if (io_list_pin(&out, outputs, "outputs") < 0) {
        io_list_release(&in);
        return -1;
    }
    int rc = execute_pinned(m, &in, &out, ntff);
    io_list_release(&out);
    io_list_release(&in);
    return rc;
}
