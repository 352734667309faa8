/*
 * test_profile.c - nrt_profile_start/stop and the trace-event JSON.
 */
#include <sys/stat.h>

#include "util/json.h"
#include "neff_image.h"
#include "test.h"

#define DEF                                                                  \
    "{\"var\": {"                                                            \
    "\"a\": {\"type\": \"input\", \"size\": 64, \"shape\": [2, 8], "         \
    "\"dtype\": \"float32\"}, "                                              \
    "\"b\": {\"type\": \"input\", \"size\": 32, \"shape\": [8], "            \
    "\"dtype\": \"float32\"}, "                                              \
    "\"output_0\": {\"type\": \"output\", \"size\": 64, \"shape\": [2, 8], " \
    "\"dtype\": \"float32\"}}, "                                             \
    "\"emulator_program\": \"program.json\"}"

#define PROGRAM                                                              \
    "{\"format\": \"nrtpy-emulator-program\", \"version\": 1, "              \
    "\"buffers\": {"                                                         \
    "\"a\": {\"kind\": \"input\", \"dtype\": \"float32\", "                  \
    "\"shape\": [2, 8]}, "                                                   \
    "\"b\": {\"kind\": \"input\", \"dtype\": \"float32\", \"shape\": [8]}, " \
    "\"t0\": {\"kind\": \"temp\", \"dtype\": \"float32\", "                  \
    "\"shape\": [2, 8]}, "                                                   \
    "\"output_0\": {\"kind\": \"output\", \"dtype\": \"float32\", "          \
    "\"shape\": [2, 8]}}, "                                                  \
    "\"ops\": ["                                                             \
    "{\"op\": \"add\", \"in\": [\"a\", \"b\"], \"out\": \"t0\"}, "           \
    "{\"op\": \"exp\", \"in\": [\"t0\"], \"out\": \"output_0\"}]}"

struct model_io {
    nrt_model_t *model;
    nrt_tensor_t *a, *b, *out;
    nrt_tensor_set_t *in_set, *out_set;
};

static void
model_io_make(struct model_io *m)
{
    size_t size;
    unsigned char *image = neff_image_simple("addexp", DEF, PROGRAM, &size);

    ASSERT_OK(nrt_load(image, size, 0, 1, &m->model));
    free(image);
    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "a", &m->a));
    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 32, "b", &m->b));
    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "o", &m->out));
    ASSERT_OK(nrt_tensor_memset(m->a, 0, 0, 64));
    ASSERT_OK(nrt_tensor_memset(m->b, 0, 0, 32));
    ASSERT_OK(nrt_allocate_tensor_set(&m->in_set));
    ASSERT_OK(nrt_allocate_tensor_set(&m->out_set));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(m->in_set, "a", m->a));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(m->in_set, "b", m->b));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(m->out_set, "output_0", m->out));
}

static void
model_io_free(struct model_io *m)
{
    nrt_destroy_tensor_set(&m->in_set);
    nrt_destroy_tensor_set(&m->out_set);
    nrt_tensor_free(&m->a);
    nrt_tensor_free(&m->b);
    nrt_tensor_free(&m->out);
    ASSERT_OK(nrt_unload(m->model));
}

static bool
exists(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0;
}

static char dir[64];

static void
test_profile_file(void)
{
    const struct nrtemu_json *root, *events, *other;
    size_t len, executes = 0, adds = 0, exps = 0;
    struct nrtemu_json_doc *doc;
    struct model_io m;
    char path[128], err[256], *text;
    const char *s;
    int64_t v;

    snprintf(path, sizeof path, "%s/addexp.ntff", dir);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    model_io_make(&m);
    ASSERT_OK(nrt_profile_start(m.model, path));
    ASSERT_OK(nrt_execute(m.model, m.in_set, m.out_set));
    ASSERT_OK(nrt_execute(m.model, m.in_set, m.out_set));
    ASSERT_OK(nrt_profile_stop(path));

    text = test_read_file(path, &len);
    doc = nrtemu__json_parse(text, len, err, sizeof err);
    if (doc == NULL) {
        TEST_FAIL_("invalid JSON (%s): %s", err, text);
    }
    root = nrtemu__json_root(doc);
    ASSERT_TRUE(nrtemu__json_get_string(root, "displayTimeUnit", &s));
    ASSERT_STR_EQ(s, "ns");
    other = nrtemu__json_get(root, "otherData");
    ASSERT_TRUE(nrtemu__json_get_string(other, "format", &s));
    ASSERT_STR_EQ(s, "nrtpy-emulator-profile");
    ASSERT_TRUE(nrtemu__json_get_int(other, "version", &v) && v == 1);
    ASSERT_TRUE(nrtemu__json_get_string(other, "model", &s));
    ASSERT_STR_EQ(s, "addexp");
    events = nrtemu__json_get(root, "traceEvents");
    ASSERT_TRUE(events != NULL && events->type == NRTEMU_JSON_ARRAY);
    for (size_t i = 0; i < events->u.array.count; i++) {
        const struct nrtemu_json *ev = events->u.array.items[i];
        const struct nrtemu_json *args = nrtemu__json_get(ev, "args");
        const char *name, *ph;

        ASSERT_TRUE(nrtemu__json_get_string(ev, "name", &name));
        ASSERT_TRUE(nrtemu__json_get_string(ev, "ph", &ph));
        ASSERT_TRUE(args != NULL);
        if (strcmp(ph, "X") != 0) {
            continue;
        }
        ASSERT_TRUE(nrtemu__json_get(ev, "ts") != NULL);
        ASSERT_TRUE(nrtemu__json_get(ev, "dur") != NULL);
        ASSERT_TRUE(nrtemu__json_get_int(ev, "tid", &v) && v == 0);
        if (strcmp(name, "execute") == 0) {
            executes++;
            continue;
        }
        ASSERT_TRUE(nrtemu__json_get_string(args, "shapes", &s));
        ASSERT_TRUE(nrtemu__json_get_int(args, "index", &v));
        if (strcmp(name, "add") == 0) {
            ASSERT_EQ(v, 0);
            adds++;
        } else if (strcmp(name, "exp") == 0) {
            ASSERT_EQ(v, 1);
            exps++;
        }
    }
    ASSERT_UEQ(executes, 2);
    ASSERT_UEQ(adds, 2);
    ASSERT_UEQ(exps, 2);
    nrtemu__json_free(doc);
    free(text);
    remove(path);
    model_io_free(&m);
    nrt_close();
}

static void
test_profile_errors(void)
{
    struct model_io m;
    char path[128], bad[160];

    snprintf(path, sizeof path, "%s/none.json", dir);
    snprintf(bad, sizeof bad, "%s/missing-dir/p.json", dir);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    model_io_make(&m);
    ASSERT_STATUS(nrt_profile_start(NULL, path), NRT_INVALID);
    ASSERT_STATUS(nrt_profile_start(m.model, NULL), NRT_INVALID);
    ASSERT_STATUS(nrt_profile_stop(NULL), NRT_INVALID);
    ASSERT_STATUS(nrt_profile_stop(path), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "no profile was started");

    /* Nothing ran: nothing is written. */
    ASSERT_OK(nrt_profile_start(m.model, path));
    ASSERT_STATUS(nrt_profile_stop(path), NRT_FAILURE);
    ASSERT_TRUE(!exists(path));
    ASSERT_STATUS(nrt_profile_stop(path), NRT_INVALID);

    ASSERT_OK(nrt_profile_start(m.model, bad));
    ASSERT_OK(nrt_execute(m.model, m.in_set, m.out_set));
    ASSERT_STATUS(nrt_profile_stop(bad), NRT_FAILURE);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "No such file or directory");

    /* Unloading a profiled model keeps what was recorded. */
    ASSERT_OK(nrt_profile_start(m.model, path));
    ASSERT_OK(nrt_execute(m.model, m.in_set, m.out_set));
    model_io_free(&m);
    ASSERT_OK(nrt_profile_stop(path));
    ASSERT_TRUE(exists(path));
    remove(path);
    nrt_close();
}

int
main(void)
{
    test_begin("test_profile");
    snprintf(dir, sizeof dir, "/tmp/nrtpy-profile-XXXXXX");
    ASSERT_NOT_NULL(mkdtemp(dir));
    RUN_TEST(test_profile_file);
    RUN_TEST(test_profile_errors);
    rmdir(dir);
    return 0;
}
