/*
 * sys_trace_object.c - SystemTraceSession: device-side execution events.
 *
 * libnrt's system trace is process-wide, so sessions share it: the first
 * live session starts the trace and the last one stops it.  Events are
 * consumed per core by fetch, so sessions on different cores (one thread
 * benchmarking per core) never take each other's events.
 */
#include "ext.h"

#include <unistd.h>

typedef struct {
    PyObject_HEAD bool started;
    bool has_core;
    uint32_t core_id;
    long pid; /* the process whose trace it is (fork.c) */
} SystemTraceSessionObject;

static int
trace_functions_present(void)
{
    if (LIBNRT_REQUIRE(nrt_sys_trace_config_allocate) < 0 ||
        LIBNRT_REQUIRE(nrt_sys_trace_config_free) < 0 ||
        LIBNRT_REQUIRE(nrt_sys_trace_config_set_capture_enabled_for_nc) < 0 ||
        LIBNRT_REQUIRE(nrt_sys_trace_start) < 0 ||
        LIBNRT_REQUIRE(nrt_sys_trace_stop) < 0 ||
        LIBNRT_REQUIRE(nrt_sys_trace_fetch_options_allocate) < 0 ||
        LIBNRT_REQUIRE(nrt_sys_trace_fetch_options_free) < 0 ||
        LIBNRT_REQUIRE(nrt_sys_trace_fetch_options_set_nc_idx) < 0 ||
        LIBNRT_REQUIRE(nrt_sys_trace_fetch_events) < 0 ||
        LIBNRT_REQUIRE(nrt_sys_trace_buffer_free) < 0) {
        return -1;
    }
    return 0;
}

static int
trace_start(void)
{
    nrt_sys_trace_config_t *cfg = NULL;
    NRT_STATUS st = libnrt.nrt_sys_trace_config_allocate(&cfg);
    if (st != NRT_SUCCESS) {
        raise_nrt_error(st, "Failed to allocate sys trace config");
        return -1;
    }
    /* The defaults capture every core; the per-session filter is applied
     * when fetching. */
    st = libnrt.nrt_sys_trace_start(cfg);
    libnrt.nrt_sys_trace_config_free(cfg);
    if (st != NRT_SUCCESS) {
        raise_nrt_error(st, "Failed to start sys trace");
        return -1;
    }
    return 0;
}

static PyObject *
SystemTraceSession_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"core_id", NULL};
    PyObject *core = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:SystemTraceSession",
                                     kwlist, &core)) {
        return NULL;
    }
    uint32_t core_id = 0;
    if (core != Py_None &&
        core_id_check(core, "core_id", false, &core_id) < 0) {
        return NULL;
    }
    /* libnrt's own answer without a runtime speaks of nrt_init, which a
     * Python user never calls. */
    if (ext_state->live_runtime == NULL) {
        return raise_nrtpy_error(
            "SystemTraceSession needs a running runtime: start one first, "
            "e.g. with nrtpy.get_nrtpy_singleton() or by loading a model.");
    }
    if (trace_functions_present() < 0) {
        return NULL;
    }
    SystemTraceSessionObject *self =
        (SystemTraceSessionObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->has_core = core != Py_None;
    self->core_id = core_id;
    if (ext_state->live_sessions == 0 && trace_start() < 0) {
        Py_DECREF(self);
        return NULL;
    }
    ext_state->live_sessions++;
    self->started = true;
    self->pid = (long)getpid();
    return (PyObject *)self;
}

static void
session_stop(SystemTraceSessionObject *self)
{
    if (!self->started) {
        return;
    }
    self->started = false;
    if (self->pid != (long)getpid()) {
        return; /* the parent's, inherited through fork(): not ours */
    }
    /* (at interpreter exit the module, and its state, may go first: the
     * process is ending, so the trace is left to nrt_close) */
    if (ext_state != NULL && --ext_state->live_sessions == 0) {
        (void)libnrt.nrt_sys_trace_stop();
    }
}

/* Fetch this session's events; NULL with an exception, else a str
 * ("" when nothing came back). */
static PyObject *
session_fetch(SystemTraceSessionObject *self, const char *not_started,
              const char *action)
{
    if (!self->started) {
        return raise_nrtpy_error("%s", not_started);
    }
    if (self->pid != (long)getpid()) {
        return raise_forked_error("this SystemTraceSession belongs to",
                                  self->pid);
    }
    nrt_sys_trace_fetch_options_t *opts = NULL;
    NRT_STATUS st = libnrt.nrt_sys_trace_fetch_options_allocate(&opts);
    if (st != NRT_SUCCESS) {
        return raise_nrt_error(st, "Failed to allocate fetch options");
    }
    if (self->has_core) {
        libnrt.nrt_sys_trace_fetch_options_set_nc_idx(opts, self->core_id);
    }
    char *buf = NULL;
    size_t len = 0;
    st = libnrt.nrt_sys_trace_fetch_events(&buf, &len, opts);
    libnrt.nrt_sys_trace_fetch_options_free(opts);
    PyObject *text = NULL;
    if (st != NRT_SUCCESS) {
        raise_nrt_error(st, action);
    } else if (buf != NULL && len > 0) {
        text = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)len, "replace");
    } else {
        text = PyUnicode_FromString("");
    }
    /* Freed on every path, including a non-NULL empty buffer. */
    if (buf != NULL) {
        libnrt.nrt_sys_trace_buffer_free(buf);
    }
    return text;
}

static PyObject *
SystemTraceSession_fetch_events_json(PyObject *op, PyObject *unused)
{
    (void)unused;
    return session_fetch((SystemTraceSessionObject *)op,
                         "Cannot fetch events: sys trace is not started",
                         "Failed to fetch trace events");
}

static PyObject *
SystemTraceSession_drain_events(PyObject *op, PyObject *unused)
{
    (void)unused;
    PyObject *text =
        session_fetch((SystemTraceSessionObject *)op,
                      "Cannot drain events: sys trace is not started",
                      "Failed to drain trace events");
    if (text == NULL) {
        return NULL;
    }
    Py_DECREF(text);
    Py_RETURN_NONE;
}

static PyObject *
SystemTraceSession_stop(PyObject *op, PyObject *unused)
{
    (void)unused;
    session_stop((SystemTraceSessionObject *)op);
    Py_RETURN_NONE;
}

static PyObject *
SystemTraceSession_enter(PyObject *op, PyObject *unused)
{
    (void)unused;
    return Py_NewRef(op);
}

static PyObject *
SystemTraceSession_exit(PyObject *op, PyObject *args)
{
    (void)args;
    session_stop((SystemTraceSessionObject *)op);
    Py_RETURN_FALSE;
}

static PyObject *
SystemTraceSession_get_is_started(PyObject *op, void *c)
{
    (void)c;
    return PyBool_FromLong(((SystemTraceSessionObject *)op)->started);
}

static void
SystemTraceSession_dealloc(PyObject *op)
{
    PyTypeObject *tp = Py_TYPE(op);
    session_stop((SystemTraceSessionObject *)op);
    tp->tp_free(op);
    Py_DECREF(tp);
}

static PyMethodDef SystemTraceSession_methods[] = {
    {"fetch_events_json", SystemTraceSession_fetch_events_json, METH_NOARGS,
     "fetch_events_json()\n--\n\nConsume the buffered events of this "
     "session's core (all cores when\nnone was given) as JSON; \"\" when "
     "there are none."},
    {"drain_events", SystemTraceSession_drain_events, METH_NOARGS,
     "drain_events()\n--\n\nConsume and discard buffered events."},
    {"stop", SystemTraceSession_stop, METH_NOARGS,
     "stop()\n--\n\nEnd the session; idempotent."},
    {"__enter__", SystemTraceSession_enter, METH_NOARGS, NULL},
    {"__exit__", SystemTraceSession_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef SystemTraceSession_getset[] = {
    {"is_started", SystemTraceSession_get_is_started, NULL,
     "True until stop().", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot SystemTraceSession_slots[] = {
    {Py_tp_new, SystemTraceSession_new},
    {Py_tp_dealloc, SystemTraceSession_dealloc},
    {Py_tp_methods, SystemTraceSession_methods},
    {Py_tp_getset, SystemTraceSession_getset},
    {Py_tp_doc, "SystemTraceSession(core_id=None)\n--\n\n"
                "Capture device-side execution events (nc_exec_running "
                "start/stop pairs)\nfrom now until stop(); a context "
                "manager."},
    {0, NULL},
};

static PyType_Spec SystemTraceSession_spec = {
    .name = "nrtpy._nrtpy.SystemTraceSession",
    .basicsize = sizeof(SystemTraceSessionObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = SystemTraceSession_slots,
};

int
sys_trace_type_init(PyObject *module)
{
    ext_state->SystemTraceSession_Type =
        (PyTypeObject *)PyType_FromModuleAndSpec(
            module, &SystemTraceSession_spec, NULL);
    if (ext_state->SystemTraceSession_Type == NULL) {
        return -1;
    }
    return PyModule_AddType(module, ext_state->SystemTraceSession_Type);
}
