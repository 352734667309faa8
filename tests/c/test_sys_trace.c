/*
 * test_sys_trace.c - nrt_sys_trace_*: capture, filters, fetch and JSON.
 *
 * The fetched JSON is parsed with the emulator's own reader (json.c,
 * linked in), so every fetch is also checked to be valid JSON.
 */
#include <pthread.h>

#include "util/json.h"
#include "neff_image.h"
#include "test.h"

#define ADD_DEF                                                           \
    "{\"var\": {"                                                         \
    "\"a\": {\"type\": \"input\", \"size\": 16, \"shape\": [4], "         \
    "\"dtype\": \"float32\"}, "                                           \
    "\"b\": {\"type\": \"input\", \"size\": 16, \"shape\": [4], "         \
    "\"dtype\": \"float32\"}, "                                           \
    "\"output_0\": {\"type\": \"output\", \"size\": 16, \"shape\": [4], " \
    "\"dtype\": \"float32\"}}, "                                          \
    "\"emulator_program\": \"program.json\"}"

#define ADD_PROGRAM                                                          \
    "{\"format\": \"nrtpy-emulator-program\", \"version\": 1, "              \
    "\"buffers\": {"                                                         \
    "\"a\": {\"kind\": \"input\", \"dtype\": \"float32\", \"shape\": [4]}, " \
    "\"b\": {\"kind\": \"input\", \"dtype\": \"float32\", \"shape\": [4]}, " \
    "\"output_0\": {\"kind\": \"output\", \"dtype\": \"float32\", "          \
    "\"shape\": [4]}}, "                                                     \
    "\"ops\": [{\"op\": \"add\", \"in\": [\"a\", \"b\"], "                   \
    "\"out\": \"output_0\"}]}"

#define MAX_EVENTS 4096

/* The fields of one fetched event the tests look at. */
struct event {
    char type[32];
    bool stop;
    int64_t tracking_id, nc_idx, timestamp_ns;
    int64_t nc_timestamp_ns, exec_id, device_core_idx; /* -1: absent */
    char model_name[64];
};

struct fetched {
    struct event events[MAX_EVENTS];
    size_t count;
};

static int64_t
int_field(const struct nrtemu_json *obj, const char *key)
{
    int64_t v;

    return nrtemu__json_get_int(obj, key, &v) ? v : -1;
}

/* Fetch (nc_idx < 0: every vnc; max 0: no limit) and parse. */
static void
fetch(struct fetched *f, int64_t nc_idx, uint64_t max)
{
    nrt_sys_trace_fetch_options_t *opt = NULL;
    const struct nrtemu_json *root, *events;
    struct nrtemu_json_doc *doc;
    char *buf = NULL, err[256];
    size_t len = 0;

    ASSERT_OK(nrt_sys_trace_fetch_options_allocate(&opt));
    if (nc_idx >= 0) {
        nrt_sys_trace_fetch_options_set_nc_idx(opt, (uint64_t)nc_idx);
    }
    if (max > 0) {
        nrt_sys_trace_fetch_options_set_max_events_per_nc(opt, max);
    }
    ASSERT_OK(nrt_sys_trace_fetch_events(&buf, &len, opt));
    nrt_sys_trace_fetch_options_free(opt);
    ASSERT_NOT_NULL(buf);
    ASSERT_UEQ(len, strlen(buf));
    doc = nrtemu__json_parse(buf, len, err, sizeof err);
    if (doc == NULL) {
        TEST_FAIL_("invalid JSON (%s): %s", err, buf);
    }
    root = nrtemu__json_root(doc);
    events = nrtemu__json_get(root, "events");
    ASSERT_TRUE(events != NULL && events->type == NRTEMU_JSON_ARRAY);
    ASSERT_ULE(events->u.array.count, MAX_EVENTS);
    f->count = events->u.array.count;
    for (size_t i = 0; i < f->count; i++) {
        const struct nrtemu_json *ev = events->u.array.items[i];
        const struct nrtemu_json *data = nrtemu__json_get(ev, "data");
        struct event *e = &f->events[i];
        const char *s;

        ASSERT_TRUE(nrtemu__json_get_string(ev, "event_type", &s));
        snprintf(e->type, sizeof e->type, "%s", s);
        ASSERT_TRUE(nrtemu__json_get_string(ev, "phase", &s));
        ASSERT_TRUE(strcmp(s, "start") == 0 || strcmp(s, "stop") == 0);
        e->stop = strcmp(s, "stop") == 0;
        e->tracking_id = int_field(ev, "tracking_id");
        e->nc_idx = int_field(ev, "nc_idx");
        e->timestamp_ns = int_field(ev, "timestamp_ns");
        ASSERT_TRUE(data != NULL && data->type == NRTEMU_JSON_OBJECT);
        e->nc_timestamp_ns = int_field(data, "nc_timestamp_ns");
        e->exec_id = int_field(data, "exec_id");
        e->device_core_idx = int_field(data, "device_core_idx");
        e->model_name[0] = '\0';
        if (nrtemu__json_get_string(data, "model_name", &s)) {
            snprintf(e->model_name, sizeof e->model_name, "%s", s);
        }
        ASSERT_TRUE(e->tracking_id > 0 && e->nc_idx >= 0 &&
                    e->timestamp_ns > 0);
    }
    nrtemu__json_free(doc);
    nrt_sys_trace_buffer_free(buf);
}

static size_t
count_type(const struct fetched *f, const char *type)
{
    size_t n = 0;

    for (size_t i = 0; i < f->count; i++) {
        n += strcmp(f->events[i].type, type) == 0;
    }
    return n;
}

static void
start_trace(int nc, bool enabled)
{
    nrt_sys_trace_config_t *cfg = NULL;

    ASSERT_OK(nrt_sys_trace_config_allocate(&cfg));
    if (nc >= 0) {
        nrt_sys_trace_config_set_capture_enabled_for_nc(cfg, (uint32_t)nc,
                                                        enabled);
    }
    ASSERT_OK(nrt_sys_trace_start(cfg));
    /* Spike frees the config right after start. */
    nrt_sys_trace_config_free(cfg);
}

struct add_model {
    nrt_model_t *model;
    nrt_tensor_t *a, *b, *out;
    nrt_tensor_set_t *in_set, *out_set;
};

static void
add_model_load(struct add_model *m, int vnc)
{
    static const float ones[4] = {1, 1, 1, 1};
    size_t size;
    unsigned char *image =
        neff_image_simple("add", ADD_DEF, ADD_PROGRAM, &size);

    ASSERT_OK(nrt_load(image, size, vnc, -1, &m->model));
    free(image);
    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, 16, "a", &m->a));
    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, 16, "b", &m->b));
    ASSERT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, 16, "o",
                                  &m->out));
    ASSERT_OK(nrt_tensor_write(m->a, ones, 0, 16));
    ASSERT_OK(nrt_tensor_write(m->b, ones, 0, 16));
    ASSERT_OK(nrt_allocate_tensor_set(&m->in_set));
    ASSERT_OK(nrt_allocate_tensor_set(&m->out_set));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(m->in_set, "a", m->a));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(m->in_set, "b", m->b));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(m->out_set, "output_0", m->out));
}

static void
add_model_run(struct add_model *m)
{
    ASSERT_OK(nrt_execute(m->model, m->in_set, m->out_set));
}

static void
add_model_free(struct add_model *m)
{
    nrt_destroy_tensor_set(&m->in_set);
    nrt_destroy_tensor_set(&m->out_set);
    nrt_tensor_free(&m->a);
    nrt_tensor_free(&m->b);
    nrt_tensor_free(&m->out);
    ASSERT_OK(nrt_unload(m->model));
}

static struct fetched f;

/* -------------------------------------------------------------- tests */

static void
test_before_init(void)
{
    char *buf = NULL;
    size_t len = 0;

    ASSERT_STATUS(nrt_sys_trace_start(NULL), NRT_UNINITIALIZED);
    ASSERT_STATUS(nrt_sys_trace_fetch_events(&buf, &len, NULL), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "sys trace not started");
    ASSERT_NULL(buf);
    ASSERT_OK(nrt_sys_trace_stop());
}

static void
test_event_types(void)
{
    nrt_sys_trace_config_t *cfg = NULL;
    const char **types = NULL;
    size_t count = 0;
    bool exec = false, load = false, hw = false;

    ASSERT_OK(nrt_sys_trace_get_event_types(&types, &count));
    for (size_t i = 0; i < count; i++) {
        hw = hw || strcmp(types[i], "nc_exec_running") == 0;
        exec = exec || strcmp(types[i], "nrt_execute") == 0;
        load = load || strcmp(types[i], "nrt_load") == 0;
    }
    ASSERT_TRUE(hw && exec && load);
    nrt_sys_trace_free_event_types(types, count);
    nrt_sys_trace_free_event_types(NULL, 0);

    ASSERT_OK(nrt_sys_trace_config_allocate(&cfg));
    ASSERT_STATUS(nrt_sys_trace_config_set_capture_enabled_for_event_type(
                      cfg, "no_such_event", true),
                  NRT_INVALID);
    ASSERT_OK(nrt_sys_trace_config_set_capture_enabled_for_event_type(
        cfg, "software", false));
    ASSERT_OK(
        nrt_sys_trace_config_get_enabled_event_types(cfg, &types, &count));
    ASSERT_UEQ(count, 2);
    ASSERT_STR_EQ(types[0], "nc_exec_running");
    ASSERT_STR_EQ(types[1], "cc_running");
    nrt_sys_trace_free_event_types(types, count);
    ASSERT_OK(nrt_sys_trace_config_set_capture_enabled_for_event_type(
        cfg, "nc_exec_running", false));
    ASSERT_OK(nrt_sys_trace_config_set_capture_enabled_for_event_type(
        cfg, "cc_running", false));
    ASSERT_OK(
        nrt_sys_trace_config_get_enabled_event_types(cfg, &types, &count));
    ASSERT_UEQ(count, 0);
    nrt_sys_trace_free_event_types(types, count);
    nrt_sys_trace_config_set_defaults(cfg);
    ASSERT_OK(
        nrt_sys_trace_config_get_enabled_event_types(cfg, &types, &count));
    ASSERT_UEQ(count, 4);
    nrt_sys_trace_free_event_types(types, count);
    nrt_sys_trace_config_free(cfg);
    nrt_sys_trace_config_free(NULL);
}

static void
test_three_executions(void)
{
    const struct event *starts[3], *stops[3];
    struct add_model m;
    size_t ns = 0, np = 0;

    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    add_model_load(&m, 0);
    start_trace(0, true);
    for (int i = 0; i < 3; i++) {
        add_model_run(&m);
    }
    fetch(&f, 0, 0);
    ASSERT_UEQ(count_type(&f, "nc_exec_running"), 6);
    ASSERT_UEQ(count_type(&f, "nrt_execute"), 6);
    ASSERT_UEQ(count_type(&f, "nrt_load"), 0);
    for (size_t i = 0; i < f.count; i++) {
        const struct event *e = &f.events[i];
        if (strcmp(e->type, "nc_exec_running") != 0) {
            continue;
        }
        ASSERT_EQ(e->nc_idx, 0);
        ASSERT_EQ(e->device_core_idx, 0);
        ASSERT_TRUE(e->nc_timestamp_ns > 0 && e->exec_id > 0);
        ASSERT_STR_EQ(e->model_name, "add");
        if (e->stop) {
            stops[np++] = e;
        } else {
            starts[ns++] = e;
        }
    }
    ASSERT_UEQ(ns, 3);
    ASSERT_UEQ(np, 3);
    for (size_t i = 0; i < 3; i++) {
        ASSERT_EQ(starts[i]->tracking_id, stops[i]->tracking_id);
        ASSERT_EQ(starts[i]->exec_id, stops[i]->exec_id);
        ASSERT_TRUE(stops[i]->nc_timestamp_ns > starts[i]->nc_timestamp_ns);
        if (i > 0) {
            ASSERT_TRUE(starts[i]->nc_timestamp_ns >
                        stops[i - 1]->nc_timestamp_ns);
            ASSERT_TRUE(starts[i]->exec_id > starts[i - 1]->exec_id);
        }
    }
    /* Fetched events are consumed. */
    fetch(&f, 0, 0);
    ASSERT_UEQ(f.count, 0);
    fetch(&f, -1, 0);
    ASSERT_UEQ(f.count, 0);
    ASSERT_OK(nrt_sys_trace_stop());
    add_model_free(&m);
    nrt_close();
}

static void
test_load_events(void)
{
    struct add_model m;

    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    start_trace(-1, true);
    add_model_load(&m, 1);
    fetch(&f, -1, 0);
    ASSERT_UEQ(f.count, 2);
    ASSERT_STR_EQ(f.events[0].type, "nrt_load");
    ASSERT_TRUE(!f.events[0].stop && f.events[1].stop);
    ASSERT_EQ(f.events[0].tracking_id, f.events[1].tracking_id);
    ASSERT_EQ(f.events[1].nc_idx, 1);
    ASSERT_STR_EQ(f.events[1].model_name, "add");
    ASSERT_OK(nrt_sys_trace_stop());
    add_model_free(&m);
    nrt_close();
}

static void
test_nc_filters(void)
{
    struct add_model m0, m1;

    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    add_model_load(&m0, 0);
    add_model_load(&m1, 1);
    start_trace(-1, true);
    add_model_run(&m0);
    add_model_run(&m1);
    add_model_run(&m1);

    /* Fetch filter: vnc 1 only, then the rest. */
    fetch(&f, 1, 0);
    ASSERT_UEQ(count_type(&f, "nc_exec_running"), 4);
    for (size_t i = 0; i < f.count; i++) {
        ASSERT_EQ(f.events[i].nc_idx, 1);
    }
    fetch(&f, -1, 0);
    ASSERT_UEQ(count_type(&f, "nc_exec_running"), 2);
    for (size_t i = 0; i < f.count; i++) {
        ASSERT_EQ(f.events[i].nc_idx, 0);
    }

    /* Capture filter: vnc 0 disabled. */
    start_trace(0, false);
    add_model_run(&m0);
    add_model_run(&m1);
    fetch(&f, -1, 0);
    ASSERT_UEQ(count_type(&f, "nc_exec_running"), 2);
    for (size_t i = 0; i < f.count; i++) {
        ASSERT_EQ(f.events[i].nc_idx, 1);
    }
    ASSERT_OK(nrt_sys_trace_stop());
    add_model_free(&m0);
    add_model_free(&m1);
    nrt_close();
}

static void
test_ring_and_fetch_limits(void)
{
    nrt_sys_trace_config_t *cfg = NULL;
    nrt_sys_trace_fetch_options_t *opt = NULL;
    struct add_model m;
    int64_t last_tracking = 0;
    char *buf = NULL;
    size_t len;

    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    add_model_load(&m, 0);
    ASSERT_OK(nrt_sys_trace_config_allocate(&cfg));
    nrt_sys_trace_config_set_max_events_per_nc(cfg, 0);
    ASSERT_STATUS(nrt_sys_trace_start(cfg), NRT_INVALID);
    nrt_sys_trace_config_set_max_events_per_nc(cfg, 6);
    ASSERT_OK(nrt_sys_trace_config_set_capture_enabled_for_event_type(
        cfg, "software", false));
    ASSERT_OK(nrt_sys_trace_start(cfg));
    nrt_sys_trace_config_free(cfg);
    for (int i = 0; i < 5; i++) {
        add_model_run(&m);
    }
    /* The ring keeps the 6 newest of 10 events, the oldest first. */
    fetch(&f, 0, 2);
    ASSERT_UEQ(f.count, 2);
    ASSERT_TRUE(!f.events[0].stop && f.events[1].stop);
    fetch(&f, 0, 0);
    ASSERT_UEQ(f.count, 4);
    for (size_t i = 0; i < f.count; i++) {
        ASSERT_STR_EQ(f.events[i].type, "nc_exec_running");
        ASSERT_TRUE(f.events[i].tracking_id >= last_tracking);
        last_tracking = f.events[i].tracking_id;
    }

    ASSERT_OK(nrt_sys_trace_fetch_options_allocate(&opt));
    nrt_sys_trace_fetch_options_set_nc_idx(opt, 100000);
    ASSERT_STATUS(nrt_sys_trace_fetch_events(&buf, &len, opt), NRT_INVALID);
    nrt_sys_trace_fetch_options_set_defaults(opt);
    ASSERT_OK(nrt_sys_trace_fetch_events(&buf, &len, opt));
    ASSERT_STR_EQ(buf, "{\"events\":[]}");
    ASSERT_UEQ(len, strlen(buf));
    nrt_sys_trace_buffer_free(buf);
    nrt_sys_trace_fetch_options_free(opt);

    /* Stop drops what was not fetched; fetch then fails. */
    add_model_run(&m);
    ASSERT_OK(nrt_sys_trace_stop());
    buf = NULL;
    ASSERT_STATUS(nrt_sys_trace_fetch_events(&buf, &len, NULL), NRT_INVALID);
    ASSERT_NULL(buf);
    start_trace(-1, true);
    fetch(&f, -1, 0);
    ASSERT_UEQ(f.count, 0);
    ASSERT_OK(nrt_sys_trace_stop());
    add_model_free(&m);
    nrt_close();
}

static void *
run_many(void *arg)
{
    for (int i = 0; i < 100; i++) {
        add_model_run(arg);
    }
    return NULL;
}

static void
test_same_vnc_is_serialized(void)
{
    struct add_model m[2];
    pthread_t threads[2];
    int64_t open = -1;

    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    add_model_load(&m[0], 0);
    add_model_load(&m[1], 0);
    start_trace(-1, true);
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(pthread_create(&threads[i], NULL, run_many, &m[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(pthread_join(threads[i], NULL), 0);
    }
    fetch(&f, 0, 0);
    ASSERT_UEQ(count_type(&f, "nc_exec_running"), 400);
    /* On one core, each start is followed by its own stop. */
    for (size_t i = 0; i < f.count; i++) {
        const struct event *e = &f.events[i];
        if (strcmp(e->type, "nc_exec_running") != 0) {
            continue;
        }
        if (!e->stop) {
            ASSERT_EQ(open, -1);
            open = e->tracking_id;
        } else {
            ASSERT_EQ(open, e->tracking_id);
            open = -1;
        }
    }
    ASSERT_OK(nrt_sys_trace_stop());
    add_model_free(&m[0]);
    add_model_free(&m[1]);
    nrt_close();
}

int
main(void)
{
    test_begin("test_sys_trace");
    RUN_TEST(test_before_init);
    RUN_TEST(test_event_types);
    RUN_TEST(test_three_executions);
    RUN_TEST(test_load_events);
    RUN_TEST(test_nc_filters);
    RUN_TEST(test_ring_and_fetch_limits);
    RUN_TEST(test_same_vnc_is_serialized);
    return 0;
}
