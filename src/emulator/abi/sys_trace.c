/*
 * sys_trace.c - the nrt_sys_trace_* capture of execution events.
 *
 * Events go into one ring buffer per vnc, which grows on demand up to the
 * configured capacity (a million events per vnc by default would be tens
 * of MB if allocated up front) and then overwrites its oldest events.
 * nrt_sys_trace_fetch_events() renders buffered events as JSON and
 * consumes them.  One mutex guards the whole state; while no capture runs,
 * the emitting side costs one atomic load.
 *
 * Clocks: "timestamp_ns" is the host's CLOCK_REALTIME; the emulated core's
 * clock ("nc_timestamp_ns") is CLOCK_MONOTONIC, which never jumps, so
 * device durations are stop - start as on hardware.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/error.h"
#include "util/export.h"
#include "util/fork.h"
#include "device/instance.h"
#include "abi/runtime.h"
#include "util/strbuf.h"
#include "abi/sys_trace.h"

#define DEFAULT_MAX_EVENTS_PER_NC 1000000u
#define RING_INITIAL_CAPACITY 64u
#define CONFIG_MAGIC 0x6e727443u  /* "Ctrn" */
#define OPTIONS_MAGIC 0x6e72744fu /* "Otrn" */
#define ALL UINT64_MAX

static const struct {
    const char *name;
    bool hardware;
} trace_types[NRTEMU_TRACE_TYPE_COUNT] = {
#define NRTEMU_TRACE_ENTRY(suffix, name, hw) {name, hw},
    NRTEMU_TRACE_TYPE_LIST(NRTEMU_TRACE_ENTRY)
#undef NRTEMU_TRACE_ENTRY
};

struct nrt_sys_trace_config {
    uint32_t magic;
    uint64_t max_events_per_nc;
    bool nc_enabled[NRTEMU_MAX_VNC];
    bool type_enabled[NRTEMU_TRACE_TYPE_COUNT];
};

struct nrt_sys_trace_fetch_options {
    uint32_t magic;
    uint64_t max_events_per_nc; /* ALL: no limit */
    uint64_t nc_idx;            /* ALL: every vnc */
};

struct trace_event {
    uint64_t tracking_id;
    uint64_t exec_id;
    uint64_t timestamp_ns;
    uint64_t nc_timestamp_ns;
    const char *model_name; /* interned; NULL: none */
    int32_t status;         /* stop events */
    uint8_t type;           /* enum nrtemu_trace_type */
    bool stop;
};

struct ring {
    struct trace_event *events; /* owned */
    size_t capacity;
    size_t head; /* oldest event */
    size_t count;
};

/* A model name, kept until the capture stops. */
struct interned {
    struct interned *next;
    char name[];
};

static struct {
    pthread_mutex_t lock;
    atomic_bool capturing; /* == started, readable without the lock */
    bool started;
    uint64_t max_events; /* per vnc */
    bool nc_enabled[NRTEMU_MAX_VNC];
    bool type_enabled[NRTEMU_TRACE_TYPE_COUNT];
    uint64_t first_tracking_id; /* of this capture session */
    struct ring rings[NRTEMU_MAX_VNC];
    struct interned *names;
    uint64_t dropped; /* events lost to host memory exhaustion */
} tr = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

static atomic_uint_fast64_t last_tracking_id;

/* --------------------------------------------------------- capture side */

/* Drop every buffered event and name.  Called with the lock held. */
static void
clear_locked(void)
{
    for (size_t i = 0; i < NRTEMU_MAX_VNC; i++) {
        free(tr.rings[i].events);
        memset(&tr.rings[i], 0, sizeof tr.rings[i]);
    }
    while (tr.names != NULL) {
        struct interned *next = tr.names->next;
        free(tr.names);
        tr.names = next;
    }
    tr.dropped = 0;
}

static const char *
intern_locked(const char *name)
{
    struct interned *n;
    size_t len;

    if (name == NULL) {
        return NULL;
    }
    for (n = tr.names; n != NULL; n = n->next) {
        if (strcmp(n->name, name) == 0) {
            return n->name;
        }
    }
    len = strlen(name);
    n = malloc(sizeof *n + len + 1);
    if (n == NULL) {
        return NULL;
    }
    memcpy(n->name, name, len + 1);
    n->next = tr.names;
    tr.names = n;
    return n->name;
}

/* Room for one more event, growing or overwriting the oldest. */
static struct trace_event *
ring_slot_locked(struct ring *r)
{
    if (r->count == r->capacity && r->capacity < tr.max_events) {
        size_t capacity =
            r->capacity ? r->capacity * 2 : RING_INITIAL_CAPACITY;
        struct trace_event *events;

        if (capacity > tr.max_events) {
            capacity = (size_t)tr.max_events;
        }
        events = malloc(capacity * sizeof *events);
        if (events == NULL) {
            return NULL;
        }
        /* Unwrap: the oldest event goes first. */
        for (size_t i = 0; i < r->count; i++) {
            events[i] = r->events[(r->head + i) % r->capacity];
        }
        free(r->events);
        r->events = events;
        r->capacity = capacity;
        r->head = 0;
    }
    if (r->count == r->capacity) {
        /* Full at the configured size: overwrite the oldest. */
        struct trace_event *slot = &r->events[r->head];
        r->head = (r->head + 1) % r->capacity;
        return slot;
    }
    r->count++;
    return &r->events[(r->head + r->count - 1) % r->capacity];
}

static bool
wanted_locked(enum nrtemu_trace_type type, uint32_t vnc)
{
    return tr.started && vnc < NRTEMU_MAX_VNC && tr.nc_enabled[vnc] &&
           tr.type_enabled[type];
}

static void
record_locked(const struct trace_event *ev, uint32_t vnc,
              const char *model_name)
{
    struct trace_event *slot = ring_slot_locked(&tr.rings[vnc]);

    if (slot == NULL) {
        tr.dropped++;
        return;
    }
    *slot = *ev;
    slot->model_name = intern_locked(model_name);
}

void
nrtemu__sys_trace_atfork(enum nrtemu_fork_phase phase)
{
    nrtemu__fork_leaf_lock(&tr.lock, phase);
}

uint64_t
nrtemu__sys_trace_begin(enum nrtemu_trace_type type, uint32_t vnc,
                        uint64_t exec_id, const char *model_name)
{
    struct trace_event ev = {.exec_id = exec_id, .type = (uint8_t)type};

    if (!atomic_load_explicit(&tr.capturing, memory_order_relaxed)) {
        return 0;
    }
    pthread_mutex_lock(&tr.lock);
    if (!wanted_locked(type, vnc)) {
        pthread_mutex_unlock(&tr.lock);
        return 0;
    }
    ev.tracking_id = atomic_fetch_add(&last_tracking_id, 1) + 1;
    /* As late as possible: the work starts when this returns. */
    ev.timestamp_ns = nrtemu__clock_ns(CLOCK_REALTIME);
    ev.nc_timestamp_ns = nrtemu__clock_ns(CLOCK_MONOTONIC);
    record_locked(&ev, vnc, model_name);
    pthread_mutex_unlock(&tr.lock);
    return ev.tracking_id;
}

void
nrtemu__sys_trace_end(enum nrtemu_trace_type type, uint32_t vnc,
                      uint64_t tracking_id, uint64_t exec_id,
                      const char *model_name, NRT_STATUS status)
{
    struct trace_event ev = {
        .tracking_id = tracking_id,
        .exec_id = exec_id,
        .status = (int32_t)status,
        .type = (uint8_t)type,
        .stop = true,
    };

    if (tracking_id == 0 ||
        !atomic_load_explicit(&tr.capturing, memory_order_relaxed)) {
        return;
    }
    /* As early as possible: the work is over. */
    ev.timestamp_ns = nrtemu__clock_ns(CLOCK_REALTIME);
    ev.nc_timestamp_ns = nrtemu__clock_ns(CLOCK_MONOTONIC);
    pthread_mutex_lock(&tr.lock);
    /* A start of an earlier session has no partner in this one. */
    if (wanted_locked(type, vnc) && tracking_id >= tr.first_tracking_id) {
        record_locked(&ev, vnc, model_name);
    }
    pthread_mutex_unlock(&tr.lock);
}

bool
nrtemu__sys_trace_wanted(enum nrtemu_trace_type type, uint32_t vnc)
{
    bool wanted;

    if (!atomic_load_explicit(&tr.capturing, memory_order_relaxed)) {
        return false;
    }
    pthread_mutex_lock(&tr.lock);
    wanted = wanted_locked(type, vnc);
    pthread_mutex_unlock(&tr.lock);
    return wanted;
}

void
nrtemu__sys_trace_span(enum nrtemu_trace_type type, uint32_t vnc,
                       uint64_t exec_id, const char *model_name,
                       uint64_t start_ns, uint64_t end_ns)
{
    struct trace_event ev = {.exec_id = exec_id, .type = (uint8_t)type};
    uint64_t real_now, mono_now;

    if (!atomic_load_explicit(&tr.capturing, memory_order_relaxed)) {
        return;
    }
    /* The host clock of the two moments, from the monotonic ones. */
    real_now = nrtemu__clock_ns(CLOCK_REALTIME);
    mono_now = nrtemu__clock_ns(CLOCK_MONOTONIC);
    pthread_mutex_lock(&tr.lock);
    if (!wanted_locked(type, vnc)) {
        pthread_mutex_unlock(&tr.lock);
        return;
    }
    ev.tracking_id = atomic_fetch_add(&last_tracking_id, 1) + 1;
    ev.nc_timestamp_ns = start_ns;
    ev.timestamp_ns = real_now - (mono_now - start_ns);
    record_locked(&ev, vnc, model_name);
    ev.stop = true;
    ev.status = NRT_SUCCESS;
    ev.nc_timestamp_ns = end_ns;
    ev.timestamp_ns = real_now - (mono_now - end_ns);
    record_locked(&ev, vnc, model_name);
    pthread_mutex_unlock(&tr.lock);
}

/* --------------------------------------------------------------- config */

NRTEMU_EXPORT void
nrt_sys_trace_config_set_defaults(nrt_sys_trace_config_t *options)
{
    if (options == NULL) {
        return;
    }
    options->magic = CONFIG_MAGIC;
    options->max_events_per_nc = DEFAULT_MAX_EVENTS_PER_NC;
    for (size_t i = 0; i < NRTEMU_MAX_VNC; i++) {
        options->nc_enabled[i] = true;
    }
    for (size_t i = 0; i < NRTEMU_TRACE_TYPE_COUNT; i++) {
        options->type_enabled[i] = true;
    }
}

NRTEMU_EXPORT NRT_STATUS
nrt_sys_trace_config_allocate(nrt_sys_trace_config_t **options)
{
    nrt_sys_trace_config_t *cfg;

    if (options == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL config pointer");
    }
    cfg = malloc(sizeof *cfg);
    if (cfg == NULL) {
        return nrtemu__fail(NRT_RESOURCE, __func__, "out of host memory");
    }
    nrt_sys_trace_config_set_defaults(cfg);
    *options = cfg;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT void
nrt_sys_trace_config_free(nrt_sys_trace_config_t *options)
{
    if (options != NULL) {
        options->magic = 0;
        free(options);
    }
}

NRTEMU_EXPORT void
nrt_sys_trace_config_set_max_events_per_nc(nrt_sys_trace_config_t *options,
                                           uint64_t max_events_per_nc)
{
    if (options != NULL) {
        options->max_events_per_nc = max_events_per_nc;
    }
}

NRTEMU_EXPORT void
nrt_sys_trace_config_set_capture_enabled_for_nc(
    nrt_sys_trace_config_t *options, uint32_t nc_idx, bool enabled)
{
    if (options != NULL && nc_idx < NRTEMU_MAX_VNC) {
        options->nc_enabled[nc_idx] = enabled;
    }
}

NRTEMU_EXPORT NRT_STATUS
nrt_sys_trace_config_set_capture_enabled_for_event_type(
    nrt_sys_trace_config_t *options, const char *event_type, bool enabled)
{
    bool all, hardware, software, found = false;

    if (options == NULL || event_type == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL %s",
                              options == NULL ? "config" : "event type");
    }
    all = strcmp(event_type, "all") == 0;
    hardware = strcmp(event_type, "hardware") == 0;
    software = strcmp(event_type, "software") == 0;
    for (size_t i = 0; i < NRTEMU_TRACE_TYPE_COUNT; i++) {
        if (all || (hardware && trace_types[i].hardware) ||
            (software && !trace_types[i].hardware) ||
            strcmp(event_type, trace_types[i].name) == 0) {
            options->type_enabled[i] = enabled;
            found = true;
        }
    }
    if (!found) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "unknown event type '%.64s' (see "
                              "nrt_sys_trace_get_event_types)",
                              event_type);
    }
    return NRT_SUCCESS;
}

/* A malloc'd list of malloc'd copies of the type names `enabled` marks. */
static NRT_STATUS
type_list(const char *func, const bool *enabled, const char ***event_types,
          size_t *count)
{
    const char **list;
    size_t n = 0;

    if (event_types == NULL || count == NULL) {
        return nrtemu__reject(NRT_INVALID, func, "NULL %s pointer",
                              event_types == NULL ? "list" : "count");
    }
    /* One spare entry, so that an empty list is still a valid pointer. */
    list = calloc(NRTEMU_TRACE_TYPE_COUNT + 1, sizeof *list);
    if (list == NULL) {
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    for (size_t i = 0; i < NRTEMU_TRACE_TYPE_COUNT; i++) {
        if (enabled != NULL && !enabled[i]) {
            continue;
        }
        list[n] = strdup(trace_types[i].name);
        if (list[n] == NULL) {
            nrt_sys_trace_free_event_types(list, n);
            return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
        }
        n++;
    }
    *event_types = list;
    *count = n;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_sys_trace_config_get_enabled_event_types(nrt_sys_trace_config_t *options,
                                             const char ***event_types,
                                             size_t *count)
{
    if (options == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL config");
    }
    return type_list(__func__, options->type_enabled, event_types, count);
}

NRTEMU_EXPORT NRT_STATUS
nrt_sys_trace_get_event_types(const char ***event_types, size_t *count)
{
    return type_list(__func__, NULL, event_types, count);
}

NRTEMU_EXPORT void
nrt_sys_trace_free_event_types(const char **event_types, size_t count)
{
    if (event_types == NULL) {
        return;
    }
    for (size_t i = 0; i < count; i++) {
        free((void *)event_types[i]);
    }
    free(event_types);
}

/* ---------------------------------------------------------- start, stop */

NRTEMU_EXPORT NRT_STATUS
nrt_sys_trace_start(nrt_sys_trace_config_t *options)
{
    nrt_sys_trace_config_t defaults;
    NRT_STATUS st = nrtemu__runtime_check(__func__, nrtemu__runtime_epoch());

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (options == NULL) {
        nrt_sys_trace_config_set_defaults(&defaults);
        options = &defaults;
    }
    if (options->magic != CONFIG_MAGIC) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "not a live sys trace config");
    }
    if (options->max_events_per_nc == 0) {
        return nrtemu__reject(NRT_INVALID, __func__, "max_events_per_nc is 0");
    }
    pthread_mutex_lock(&tr.lock);
    clear_locked();
    tr.max_events = options->max_events_per_nc;
    if (tr.max_events > SIZE_MAX / sizeof(struct trace_event)) {
        tr.max_events = SIZE_MAX / sizeof(struct trace_event);
    }
    memcpy(tr.nc_enabled, options->nc_enabled, sizeof tr.nc_enabled);
    memcpy(tr.type_enabled, options->type_enabled, sizeof tr.type_enabled);
    tr.first_tracking_id = atomic_load(&last_tracking_id) + 1;
    tr.started = true;
    atomic_store(&tr.capturing, true);
    pthread_mutex_unlock(&tr.lock);
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_sys_trace_stop(void)
{
    pthread_mutex_lock(&tr.lock);
    atomic_store(&tr.capturing, false);
    tr.started = false;
    clear_locked();
    pthread_mutex_unlock(&tr.lock);
    return NRT_SUCCESS;
}

/* ---------------------------------------------------------------- fetch */

NRTEMU_EXPORT void
nrt_sys_trace_fetch_options_set_defaults(
    nrt_sys_trace_fetch_options_t *options)
{
    if (options != NULL) {
        options->magic = OPTIONS_MAGIC;
        options->max_events_per_nc = ALL;
        options->nc_idx = ALL;
    }
}

NRTEMU_EXPORT NRT_STATUS
nrt_sys_trace_fetch_options_allocate(nrt_sys_trace_fetch_options_t **options)
{
    nrt_sys_trace_fetch_options_t *opt;

    if (options == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL options pointer");
    }
    opt = malloc(sizeof *opt);
    if (opt == NULL) {
        return nrtemu__fail(NRT_RESOURCE, __func__, "out of host memory");
    }
    nrt_sys_trace_fetch_options_set_defaults(opt);
    *options = opt;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT void
nrt_sys_trace_fetch_options_free(nrt_sys_trace_fetch_options_t *options)
{
    if (options != NULL) {
        options->magic = 0;
        free(options);
    }
}

NRTEMU_EXPORT void
nrt_sys_trace_fetch_options_set_max_events_per_nc(
    nrt_sys_trace_fetch_options_t *options, uint64_t max_events_per_nc)
{
    if (options != NULL) {
        options->max_events_per_nc = max_events_per_nc;
    }
}

NRTEMU_EXPORT void
nrt_sys_trace_fetch_options_set_nc_idx(nrt_sys_trace_fetch_options_t *options,
                                       uint64_t nc_idx)
{
    if (options != NULL) {
        options->nc_idx = nc_idx;
    }
}

static void
render_event(struct nrtemu_strbuf *sb, const struct trace_event *ev,
             uint32_t vnc)
{
    bool hardware = trace_types[ev->type].hardware;

    nrtemu__strbuf_puts(sb, "{\"event_type\":");
    nrtemu__strbuf_json_string(sb, trace_types[ev->type].name);
    nrtemu__strbuf_printf(
        sb,
        ",\"phase\":\"%s\",\"tracking_id\":%" PRIu64 ",\"nc_idx\":%" PRIu32
        ",\"timestamp_ns\":%" PRIu64 ",\"data\":{",
        ev->stop ? "stop" : "start", ev->tracking_id, vnc, ev->timestamp_ns);
    if (hardware) {
        nrtemu__strbuf_printf(sb,
                              "\"nc_timestamp_ns\":%" PRIu64
                              ",\"exec_id\":%" PRIu64
                              ",\"device_core_idx\":%" PRIu32,
                              ev->nc_timestamp_ns, ev->exec_id, vnc);
    } else {
        nrtemu__strbuf_printf(sb, "\"exec_id\":%" PRIu64, ev->exec_id);
    }
    if (ev->model_name != NULL) {
        nrtemu__strbuf_puts(sb, ",\"model_name\":");
        nrtemu__strbuf_json_string(sb, ev->model_name);
    }
    if (ev->stop) {
        nrtemu__strbuf_printf(sb, ",\"status\":%" PRId32, ev->status);
    }
    nrtemu__strbuf_puts(sb, "}}");
}

NRTEMU_EXPORT NRT_STATUS
nrt_sys_trace_fetch_events(char **buffer, size_t *written_size,
                           const nrt_sys_trace_fetch_options_t *options)
{
    struct nrtemu_strbuf sb = NRTEMU_STRBUF_INIT;
    nrt_sys_trace_fetch_options_t defaults;
    size_t taken[NRTEMU_MAX_VNC] = {0};
    size_t first = 0, last = NRTEMU_MAX_VNC;
    bool comma = false;
    char *text;

    if (buffer == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL buffer pointer");
    }
    if (options == NULL) {
        nrt_sys_trace_fetch_options_set_defaults(&defaults);
        options = &defaults;
    }
    if (options->magic != OPTIONS_MAGIC) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "not live sys trace fetch options");
    }
    if (options->nc_idx != ALL) {
        if (options->nc_idx >= NRTEMU_MAX_VNC) {
            return nrtemu__reject(NRT_INVALID, __func__,
                                  "nc_idx %" PRIu64 " is out of range",
                                  options->nc_idx);
        }
        first = (size_t)options->nc_idx;
        last = first + 1;
    }
    pthread_mutex_lock(&tr.lock);
    if (!tr.started) {
        pthread_mutex_unlock(&tr.lock);
        return nrtemu__reject(NRT_INVALID, __func__, "sys trace not started");
    }
    nrtemu__strbuf_puts(&sb, "{\"events\":[");
    for (size_t v = first; v < last; v++) {
        const struct ring *r = &tr.rings[v];

        taken[v] = r->count;
        /* 0 would fetch nothing, which no caller wants: no limit. */
        if (options->max_events_per_nc != 0 &&
            options->max_events_per_nc < taken[v]) {
            taken[v] = (size_t)options->max_events_per_nc;
        }
        for (size_t i = 0; i < taken[v]; i++) {
            if (comma) {
                nrtemu__strbuf_puts(&sb, ",");
            }
            render_event(&sb, &r->events[(r->head + i) % r->capacity],
                         (uint32_t)v);
            comma = true;
        }
    }
    nrtemu__strbuf_puts(&sb, "]}");
    text = nrtemu__strbuf_take(&sb);
    if (text != NULL && tr.dropped > 0) {
        nrtemu__log(NRTEMU_LOG_WARN, __func__,
                    "%" PRIu64 " events were lost: out of host memory",
                    tr.dropped);
        tr.dropped = 0;
    }
    if (text != NULL) {
        /* Consumed only once the caller is sure to get them. */
        for (size_t v = first; v < last; v++) {
            struct ring *r = &tr.rings[v];
            r->count -= taken[v];
            r->head = r->count == 0 ? 0 : (r->head + taken[v]) % r->capacity;
        }
    }
    pthread_mutex_unlock(&tr.lock);
    if (text == NULL) {
        return nrtemu__fail(NRT_RESOURCE, __func__,
                            "out of host memory for the events");
    }
    *buffer = text;
    if (written_size != NULL) {
        *written_size = strlen(text);
    }
    return NRT_SUCCESS;
}

NRTEMU_EXPORT void
nrt_sys_trace_buffer_free(char *buffer)
{
    free(buffer);
}
