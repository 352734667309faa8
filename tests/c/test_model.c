/*
 * test_model.c - nrt_load/nrt_unload, model info and nrt_execute.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "neff_image.h"
#include "nrt/nrtemu.h"
#include "test.h"

#define ADD_VARS                                                          \
    "\"var\": {"                                                          \
    "\"a\": {\"type\": \"input\", \"var_id\": 0, \"size\": 128, "         \
    "\"shape\": [4, 8], \"dtype\": \"float32\"}, "                        \
    "\"b\": {\"type\": \"input\", \"var_id\": 1, \"size\": 128, "         \
    "\"shape\": [4, 8], \"dtype\": \"float32\"}, "                        \
    "\"output_0\": {\"type\": \"output\", \"var_id\": 2, \"size\": 128, " \
    "\"shape\": [4, 8], \"dtype\": \"float32\"}}"

#define ADD_DEF "{" ADD_VARS ", \"emulator_program\": \"program.json\"}"

/* The same I/O, compiled for hardware: no emulator program. */
#define HW_DEF "{" ADD_VARS "}"

#define ADD_PROGRAM                                                 \
    "{\"format\": \"nrtpy-emulator-program\", \"version\": 1, "     \
    "\"buffers\": {"                                                \
    "\"a\": {\"kind\": \"input\", \"dtype\": \"float32\", "         \
    "\"shape\": [4, 8]}, "                                          \
    "\"b\": {\"kind\": \"input\", \"dtype\": \"float32\", "         \
    "\"shape\": [4, 8]}, "                                          \
    "\"output_0\": {\"kind\": \"output\", \"dtype\": \"float32\", " \
    "\"shape\": [4, 8]}}, "                                         \
    "\"ops\": [{\"op\": \"add\", \"in\": [\"a\", \"b\"], "          \
    "\"out\": \"output_0\"}]}"

#define ADD_ELEMS 32
#define ADD_BYTES (ADD_ELEMS * sizeof(float))

static void
init_runtime(void)
{
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
}

static nrt_model_t *
load(const char *name, const char *def, const char *program, int vnc)
{
    nrt_model_t *model = NULL;
    size_t size;
    unsigned char *image = neff_image_simple(name, def, program, &size);

    ASSERT_OK(nrt_load(image, size, vnc, -1, &model));
    free(image);
    ASSERT_NOT_NULL(model);
    return model;
}

static nrt_tensor_t *
tensor_f32(nrt_tensor_placement_t placement, int vnc, const float *data,
           size_t count, const char *name)
{
    nrt_tensor_t *t = NULL;

    ASSERT_OK(
        nrt_tensor_allocate(placement, vnc, count * sizeof *data, name, &t));
    if (data != NULL) {
        ASSERT_OK(nrt_tensor_write(t, data, 0, count * sizeof *data));
    }
    return t;
}

/* The add model's sets on `vnc`, with a[i] = i * scale, b[i] = 1000. */
struct add_io {
    nrt_tensor_t *a, *b, *out;
    nrt_tensor_set_t *in_set, *out_set;
};

static void
add_io_make(struct add_io *io, int vnc, float scale)
{
    float a[ADD_ELEMS], b[ADD_ELEMS];

    for (int i = 0; i < ADD_ELEMS; i++) {
        a[i] = (float)i * scale;
        b[i] = 1000.0f;
    }
    io->a = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, vnc, a, ADD_ELEMS, "a");
    io->b = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, vnc, b, ADD_ELEMS, "b");
    io->out =
        tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, vnc, NULL, ADD_ELEMS, "out");
    ASSERT_OK(nrt_allocate_tensor_set(&io->in_set));
    ASSERT_OK(nrt_allocate_tensor_set(&io->out_set));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io->in_set, "a", io->a));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io->in_set, "b", io->b));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io->out_set, "output_0", io->out));
}

static void
add_io_check(const struct add_io *io, float scale)
{
    float out[ADD_ELEMS];

    ASSERT_OK(nrt_tensor_read(io->out, out, 0, sizeof out));
    for (int i = 0; i < ADD_ELEMS; i++) {
        ASSERT_TRUE(out[i] == (float)i * scale + 1000.0f);
    }
}

static void
add_io_free(struct add_io *io)
{
    nrt_destroy_tensor_set(&io->in_set);
    nrt_destroy_tensor_set(&io->out_set);
    nrt_tensor_free(&io->a);
    nrt_tensor_free(&io->b);
    nrt_tensor_free(&io->out);
}

/* -------------------------------------------------------------- tests */

static void
test_load_before_init(void)
{
    nrt_model_t *model = NULL;
    size_t size;
    unsigned char *image =
        neff_image_simple("add", ADD_DEF, ADD_PROGRAM, &size);

    ASSERT_STATUS(nrt_load(image, size, 0, -1, &model), NRT_UNINITIALIZED);
    ASSERT_NULL(model);
    free(image);
}

static void
test_add_executes(void)
{
    nrt_tensor_info_array_t *info = NULL;
    nrt_model_info_t minfo = {99};
    struct add_io io;
    uint32_t count = 0;
    size_t written = 0;
    nrt_model_t *model;

    init_runtime();
    model = load("add", ADD_DEF, ADD_PROGRAM, 0);

    ASSERT_OK(nrt_get_model_tensor_info(model, &info));
    ASSERT_UEQ(info->tensor_count, 3);
    ASSERT_STR_EQ(info->tensor_array[0].name, "a");
    ASSERT_STR_EQ(info->tensor_array[1].name, "b");
    ASSERT_STR_EQ(info->tensor_array[2].name, "output_0");
    for (int i = 0; i < 3; i++) {
        const nrt_tensor_info_t *t = &info->tensor_array[i];
        ASSERT_EQ(t->usage,
                  i < 2 ? NRT_TENSOR_USAGE_INPUT : NRT_TENSOR_USAGE_OUTPUT);
        ASSERT_UEQ(t->size, ADD_BYTES);
        ASSERT_EQ(t->dtype, NRT_DTYPE_FLOAT32);
        ASSERT_UEQ(t->ndim, 2);
        ASSERT_NOT_NULL(t->shape);
        ASSERT_UEQ(t->shape[0], 4);
        ASSERT_UEQ(t->shape[1], 8);
    }
    ASSERT_OK(nrt_free_model_tensor_info(info));
    ASSERT_OK(nrt_free_model_tensor_info(NULL));

    ASSERT_OK(nrt_get_model_vnc_count(model, &count));
    ASSERT_UEQ(count, 1);
    count = 0;
    ASSERT_OK(nrt_get_model_nc_count(model, &count));
    ASSERT_UEQ(count, 1);
    ASSERT_OK(nrt_get_model_instance_count(model, &count));
    ASSERT_UEQ(count, 1);
    ASSERT_OK(nrt_get_model_info(model, &minfo, sizeof minfo, &written));
    ASSERT_UEQ(minfo.vnc, 0);
    ASSERT_UEQ(written, sizeof minfo);
    ASSERT_OK(nrt_get_model_info(model, &minfo, 0, &written));
    ASSERT_UEQ(written, 0);

    add_io_make(&io, 0, 2.0f);
    ASSERT_OK(nrt_execute(model, io.in_set, io.out_set));
    add_io_check(&io, 2.0f);
    ASSERT_OK(nrt_execute_repeat(model, io.in_set, io.out_set, 3));
    add_io_check(&io, 2.0f);
    ASSERT_STATUS(nrt_execute_repeat(model, io.in_set, io.out_set, 0),
                  NRT_INVALID);
    add_io_free(&io);
    ASSERT_OK(nrt_unload(model));
    nrt_close();
}

static void
test_host_tensors_and_extra_names(void)
{
    float a[ADD_ELEMS], b[ADD_ELEMS], out[ADD_ELEMS];
    nrt_tensor_t *ta, *tb, *tout, *extra;
    nrt_tensor_set_t *in_set, *out_set;
    nrt_model_t *model;

    init_runtime();
    model = load("add", ADD_DEF, ADD_PROGRAM, 1);
    for (int i = 0; i < ADD_ELEMS; i++) {
        a[i] = (float)-i;
        b[i] = 0.5f;
    }
    ta = tensor_f32(NRT_TENSOR_PLACEMENT_VIRTUAL, -1, a, ADD_ELEMS, "a");
    tb = tensor_f32(NRT_TENSOR_PLACEMENT_HOST, -1, b, ADD_ELEMS, "b");
    tout = tensor_f32(NRT_TENSOR_PLACEMENT_VIRTUAL, -1, NULL, ADD_ELEMS, "o");
    /* On another vnc and of another size, but not part of the model. */
    extra = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, a, 4, "extra");
    ASSERT_OK(nrt_allocate_tensor_set(&in_set));
    ASSERT_OK(nrt_allocate_tensor_set(&out_set));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(in_set, "a", ta));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(in_set, "b", tb));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(in_set, "unused", extra));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(out_set, "output_0", tout));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(out_set, "output_1", extra));
    ASSERT_OK(nrt_execute(model, in_set, out_set));
    ASSERT_OK(nrt_tensor_read(tout, out, 0, sizeof out));
    for (int i = 0; i < ADD_ELEMS; i++) {
        ASSERT_TRUE(out[i] == (float)-i + 0.5f);
    }
    nrt_destroy_tensor_set(&in_set);
    nrt_destroy_tensor_set(&out_set);
    nrt_tensor_free(&ta);
    nrt_tensor_free(&tb);
    nrt_tensor_free(&tout);
    nrt_tensor_free(&extra);
    ASSERT_OK(nrt_unload(model));
    nrt_close();
}

static void
test_load_arguments(void)
{
    nrt_model_t *model = NULL, *other = NULL;
    nrt_model_info_t minfo;
    size_t size;
    unsigned char *image =
        neff_image_simple("add", ADD_DEF, ADD_PROGRAM, &size);
    static const unsigned char junk[2048] = {1, 2, 3};

    init_runtime();
    ASSERT_STATUS(nrt_load(image, size, 0, -1, NULL), NRT_INVALID);
    ASSERT_STATUS(nrt_load(NULL, size, 0, -1, &model), NRT_INVALID);
    ASSERT_STATUS(nrt_load(image, 0, 0, -1, &model), NRT_INVALID);
    ASSERT_STATUS(nrt_load(image, size, 7, -1, &model), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "Could not find VNC id 7");
    ASSERT_STATUS(nrt_load(image, size, -2, -1, &model), NRT_INVALID);
    ASSERT_STATUS(nrt_load(image, size, 0, 3, &model), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "vnc_count 3");
    ASSERT_STATUS(nrt_load(image, size, 0, 0, &model), NRT_INVALID);
    ASSERT_STATUS(nrt_load(junk, sizeof junk, 0, -1, &model), NRT_INVALID);
    ASSERT_NULL(model);

    /* -1 is vnc 0; vnc_count 1 is what Spike passes. */
    ASSERT_OK(nrt_load(image, size, -1, 1, &model));
    ASSERT_OK(nrt_get_model_info(model, &minfo, sizeof minfo, NULL));
    ASSERT_UEQ(minfo.vnc, 0);
    ASSERT_OK(nrt_unload(model));
    model = NULL;

    /* Rank 0 of two, then rank 1 of the same world on its vnc. */
    ASSERT_OK(nrt_load_collectives(image, size, 0, 1, 0, 2, &model));
    ASSERT_STATUS(nrt_load_collectives(image, size, 0, 1, 1, 2, &other),
                  NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "already on vnc 0");
    ASSERT_NULL(other);
    ASSERT_OK(nrt_unload(model));
    model = NULL;
    ASSERT_STATUS(nrt_load_collectives(image, size, 0, 1, 1, 1, &model),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_load_collectives(image, size, 0, 1, 0, 0, &model),
                  NRT_INVALID);
    ASSERT_NULL(model);
    ASSERT_OK(nrt_load_collectives(image, size, 1, 1, 0, 1, &model));
    ASSERT_OK(nrt_get_model_info(model, &minfo, sizeof minfo, NULL));
    ASSERT_UEQ(minfo.vnc, 1);
    ASSERT_OK(nrt_unload(model));

    ASSERT_STATUS(nrt_unload(NULL), NRT_INVALID);
    free(image);
    nrt_close();
}

static void
test_load_environment(void)
{
    nrt_model_t *model = NULL;
    size_t size;
    unsigned char *image =
        neff_image_simple("add", ADD_DEF, ADD_PROGRAM, &size);

    init_runtime();
    setenv("NEURON_RT_EXEC_TIMEOUT", "soon", 1);
    ASSERT_STATUS(nrt_load(image, size, 0, -1, &model), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "NEURON_RT_EXEC_TIMEOUT");
    setenv("NEURON_RT_EXEC_TIMEOUT", "-1", 1);
    ASSERT_STATUS(nrt_load(image, size, 0, -1, &model), NRT_INVALID);
    setenv("NEURON_RT_EXEC_TIMEOUT", "99999999999", 1);
    ASSERT_STATUS(nrt_load(image, size, 0, -1, &model), NRT_INVALID);
    setenv("NEURON_RT_EXEC_TIMEOUT", " 0 ", 1);
    setenv("NEURON_RT_VALIDATE_HASH", "maybe", 1);
    ASSERT_STATUS(nrt_load(image, size, 0, -1, &model), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "NEURON_RT_VALIDATE_HASH");
    ASSERT_NULL(model);
    setenv("NEURON_RT_VALIDATE_HASH", "FALSE", 1);
    ASSERT_OK(nrt_load(image, size, 0, -1, &model));
    ASSERT_OK(nrt_unload(model));
    unsetenv("NEURON_RT_EXEC_TIMEOUT");
    unsetenv("NEURON_RT_VALIDATE_HASH");
    free(image);
    nrt_close();
}

static void
test_execute_validation(void)
{
    nrt_tensor_t *small, *other_vnc, *empty;
    nrt_tensor_set_t *bad;
    struct add_io io;
    nrt_model_t *model;

    init_runtime();
    model = load("add", ADD_DEF, ADD_PROGRAM, 0);
    add_io_make(&io, 0, 1.0f);
    small = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, NULL, 16, "small");
    other_vnc =
        tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 1, NULL, ADD_ELEMS, "far");
    ASSERT_OK(nrt_tensor_allocate_empty("empty", &empty));

    ASSERT_STATUS(nrt_execute(NULL, io.in_set, io.out_set), NRT_INVALID);
    ASSERT_STATUS(nrt_execute(model, NULL, io.out_set), NRT_INVALID);
    ASSERT_STATUS(nrt_execute(model, io.in_set, NULL), NRT_INVALID);

    ASSERT_OK(nrt_allocate_tensor_set(&bad));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(bad, "a", io.a));
    ASSERT_STATUS(nrt_execute(model, bad, io.out_set), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "input 'b' missing from the input set");
    ASSERT_STATUS(nrt_execute(model, io.in_set, bad), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "output 'output_0' missing from the output set");

    ASSERT_OK(nrt_add_tensor_to_tensor_set(bad, "b", small));
    ASSERT_STATUS(nrt_execute(model, bad, io.out_set), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "input 'b' is 64 bytes, the model expects 128");
    ASSERT_OK(nrt_add_tensor_to_tensor_set(bad, "b", empty));
    ASSERT_STATUS(nrt_execute(model, bad, io.out_set), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "is 0 bytes");
    ASSERT_OK(nrt_add_tensor_to_tensor_set(bad, "b", other_vnc));
    ASSERT_STATUS(nrt_execute(model, bad, io.out_set), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "input 'b' is on vnc 1, model 'add' is on vnc 0");
    ASSERT_OK(nrt_add_tensor_to_tensor_set(bad, "b", io.b));
    ASSERT_OK(nrt_execute(model, bad, io.out_set));
    add_io_check(&io, 1.0f);

    nrt_destroy_tensor_set(&bad);
    nrt_tensor_free(&small);
    nrt_tensor_free(&other_vnc);
    nrt_tensor_free(&empty);
    add_io_free(&io);
    ASSERT_OK(nrt_unload(model));
    nrt_close();
}

/*
 * The binding of a model's I/O cached between executions with the same
 * sets: every change to a set, a set destroyed and another allocated
 * (perhaps at its address), a tensor freed and another put in its place,
 * and a model unloaded and another loaded all give the new tensors.
 */
static void
test_bind_cache(void)
{
    float a[ADD_ELEMS];
    struct add_io io;
    nrt_tensor_t *a2, *out2, *small;
    nrt_model_t *model;

    init_runtime();
    model = load("add", ADD_DEF, ADD_PROGRAM, 0);
    add_io_make(&io, 0, 1.0f);
    ASSERT_OK(nrt_execute(model, io.in_set, io.out_set));
    add_io_check(&io, 1.0f);
    ASSERT_OK(nrt_execute(model, io.in_set, io.out_set));
    add_io_check(&io, 1.0f);

    /* A name given another tensor, in each set. */
    for (int i = 0; i < ADD_ELEMS; i++) {
        a[i] = (float)i * 3.0f;
    }
    a2 = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, a, ADD_ELEMS, "a2");
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io.in_set, "a", a2));
    ASSERT_OK(nrt_execute(model, io.in_set, io.out_set));
    add_io_check(&io, 3.0f);
    out2 = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, NULL, ADD_ELEMS, "o2");
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io.out_set, "output_0", out2));
    ASSERT_OK(nrt_tensor_write(io.out, a, 0, ADD_BYTES)); /* not written */
    ASSERT_OK(nrt_execute(model, io.in_set, io.out_set));
    {
        struct add_io view = io;
        view.out = out2;
        add_io_check(&view, 3.0f);
    }
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io.out_set, "output_0", io.out));

    /* A name added that the model does not read changes nothing it
     * binds; one given a tensor it rejects fails the call, and the
     * checks hold for a binding made before. */
    small = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, NULL, 16, "small");
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io.in_set, "extra", small));
    ASSERT_OK(nrt_execute(model, io.in_set, io.out_set));
    add_io_check(&io, 3.0f);
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io.in_set, "b", small));
    ASSERT_STATUS(nrt_execute(model, io.in_set, io.out_set), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "input 'b' is 64 bytes, the model expects 128");
    ASSERT_STATUS(nrt_execute(model, io.in_set, io.out_set), NRT_INVALID);
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io.in_set, "b", io.b));

    /* A tensor freed, another allocated (perhaps at its address) with
     * other values, and put under its name. */
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io.in_set, "a", io.a));
    ASSERT_OK(nrt_execute(model, io.in_set, io.out_set));
    add_io_check(&io, 1.0f);
    nrt_tensor_free(&a2);
    for (int i = 0; i < ADD_ELEMS; i++) {
        a[i] = (float)i * 5.0f;
    }
    a2 = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, a, ADD_ELEMS, "a2");
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io.in_set, "a", a2));
    ASSERT_OK(nrt_execute(model, io.in_set, io.out_set));
    add_io_check(&io, 5.0f);

    /* The sets destroyed and others allocated (perhaps at their
     * addresses) with other tensors. */
    nrt_destroy_tensor_set(&io.in_set);
    nrt_destroy_tensor_set(&io.out_set);
    ASSERT_OK(nrt_allocate_tensor_set(&io.in_set));
    ASSERT_OK(nrt_allocate_tensor_set(&io.out_set));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io.in_set, "a", io.a));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io.in_set, "b", io.b));
    ASSERT_STATUS(nrt_execute(model, io.in_set, io.out_set), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "output 'output_0' missing from the output set");
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io.out_set, "output_0", io.out));
    ASSERT_OK(nrt_execute(model, io.in_set, io.out_set));
    add_io_check(&io, 1.0f);

    /* The model unloaded and another loaded (perhaps at its address),
     * with the sets unchanged, then changed. */
    ASSERT_OK(nrt_unload(model));
    model = load("add", ADD_DEF, ADD_PROGRAM, 0);
    ASSERT_OK(nrt_execute(model, io.in_set, io.out_set));
    add_io_check(&io, 1.0f);
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io.in_set, "a", a2));
    ASSERT_OK(nrt_execute(model, io.in_set, io.out_set));
    add_io_check(&io, 5.0f);

    nrt_tensor_free(&a2);
    nrt_tensor_free(&out2);
    nrt_tensor_free(&small);
    add_io_free(&io);
    ASSERT_OK(nrt_unload(model));
    nrt_close();
}

/* A thread giving the name "a" of one set two tensors in turn while
 * another executes with it: each execution reads one or the other. */
struct swapper {
    nrt_tensor_set_t *set;
    nrt_tensor_t *t[2];
    atomic_bool stop;
};

static void *
swapper_main(void *arg)
{
    struct swapper *w = arg;

    for (int i = 0; !atomic_load(&w->stop); i++) {
        ASSERT_OK(nrt_add_tensor_to_tensor_set(w->set, "a", w->t[i & 1]));
    }
    return NULL;
}

static void
test_bind_cache_concurrent_change(void)
{
    float a[ADD_ELEMS], out[ADD_ELEMS];
    struct add_io io;
    struct swapper w;
    pthread_t thread;
    nrt_model_t *model;
    int seen[2] = {0, 0};

    init_runtime();
    model = load("add", ADD_DEF, ADD_PROGRAM, 0);
    add_io_make(&io, 0, 1.0f);
    for (int i = 0; i < ADD_ELEMS; i++) {
        a[i] = (float)i * 2.0f;
    }
    w.set = io.in_set;
    w.t[0] = io.a;
    w.t[1] = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, a, ADD_ELEMS, "a2");
    atomic_init(&w.stop, false);
    ASSERT_EQ(pthread_create(&thread, NULL, swapper_main, &w), 0);
    for (int n = 0; n < 2000; n++) {
        float scale;
        ASSERT_OK(nrt_execute(model, io.in_set, io.out_set));
        ASSERT_OK(nrt_tensor_read(io.out, out, 0, sizeof out));
        scale = out[1] - 1000.0f;
        ASSERT_TRUE(scale == 1.0f || scale == 2.0f);
        seen[scale == 2.0f]++;
        for (int i = 0; i < ADD_ELEMS; i++) {
            ASSERT_TRUE(out[i] == (float)i * scale + 1000.0f);
        }
    }
    atomic_store(&w.stop, true);
    ASSERT_EQ(pthread_join(thread, NULL), 0);
    ASSERT_TRUE(seen[0] + seen[1] == 2000);
    /* Unchanged since: the last tensor given. */
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io.in_set, "a", w.t[1]));
    ASSERT_OK(nrt_execute(model, io.in_set, io.out_set));
    add_io_check(&io, 2.0f);
    nrt_tensor_free(&w.t[1]);
    add_io_free(&io);
    ASSERT_OK(nrt_unload(model));
    nrt_close();
}

static void
test_neff_without_program(void)
{
    nrt_tensor_info_array_t *info = NULL;
    struct add_io io;
    nrt_model_t *model;

    init_runtime();
    model = load("hw_only", HW_DEF, NULL, 0);
    ASSERT_OK(nrt_get_model_tensor_info(model, &info));
    ASSERT_UEQ(info->tensor_count, 3);
    ASSERT_STR_EQ(info->tensor_array[2].name, "output_0");
    ASSERT_OK(nrt_free_model_tensor_info(info));
    add_io_make(&io, 0, 1.0f);
    ASSERT_STATUS(nrt_execute(model, io.in_set, io.out_set), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "model 'hw_only' has no emulator program: it needs "
                        "Neuron hardware");
    add_io_free(&io);
    ASSERT_OK(nrt_unload(model));
    nrt_close();
}

static void
test_take_out_of_bounds(void)
{
    static const char def[] =
        "{\"var\": {"
        "\"data\": {\"type\": \"input\", \"size\": 16, \"shape\": [4], "
        "\"dtype\": \"float32\"}, "
        "\"idx\": {\"type\": \"input\", \"size\": 8, \"shape\": [2], "
        "\"dtype\": \"int32\"}, "
        "\"output_0\": {\"type\": \"output\", \"size\": 8, \"shape\": [2], "
        "\"dtype\": \"float32\"}}, "
        "\"emulator_program\": \"program.json\"}";
    static const char program[] =
        "{\"format\": \"nrtpy-emulator-program\", \"version\": 1, "
        "\"buffers\": {"
        "\"data\": {\"kind\": \"input\", \"dtype\": \"float32\", "
        "\"shape\": [4]}, "
        "\"idx\": {\"kind\": \"input\", \"dtype\": \"int32\", "
        "\"shape\": [2]}, "
        "\"output_0\": {\"kind\": \"output\", \"dtype\": \"float32\", "
        "\"shape\": [2]}}, "
        "\"ops\": [{\"op\": \"take\", \"in\": [\"data\", \"idx\"], "
        "\"out\": \"output_0\", \"axis\": 0}]}";
    static const float data[4] = {10, 11, 12, 13};
    int32_t idx[2] = {3, 1};
    nrt_tensor_set_t *in_set, *out_set;
    nrt_tensor_t *td, *ti, *to;
    float out[2];
    nrt_model_t *model;

    init_runtime();
    model = load("take", def, program, 0);
    td = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, data, 4, "data");
    ASSERT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, sizeof idx,
                                  "idx", &ti));
    ASSERT_OK(nrt_tensor_write(ti, idx, 0, sizeof idx));
    to = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, NULL, 2, "out");
    ASSERT_OK(nrt_allocate_tensor_set(&in_set));
    ASSERT_OK(nrt_allocate_tensor_set(&out_set));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(in_set, "data", td));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(in_set, "idx", ti));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(out_set, "output_0", to));

    ASSERT_OK(nrt_execute(model, in_set, out_set));
    ASSERT_OK(nrt_tensor_read(to, out, 0, sizeof out));
    ASSERT_TRUE(out[0] == 13 && out[1] == 11);
    idx[1] = 10;
    ASSERT_OK(nrt_tensor_write(ti, idx, 0, sizeof idx));
    ASSERT_STATUS(nrt_execute(model, in_set, out_set), NRT_EXEC_OOB);

    nrt_destroy_tensor_set(&in_set);
    nrt_destroy_tensor_set(&out_set);
    nrt_tensor_free(&td);
    nrt_tensor_free(&ti);
    nrt_tensor_free(&to);
    ASSERT_OK(nrt_unload(model));
    nrt_close();
}

static void
test_after_close(void)
{
    nrt_tensor_info_array_t *info = NULL;
    nrt_model_t *model, *other = NULL;
    struct add_io io;
    size_t size;
    unsigned char *image =
        neff_image_simple("add", ADD_DEF, ADD_PROGRAM, &size);

    init_runtime();
    model = load("add", ADD_DEF, ADD_PROGRAM, 0);
    add_io_make(&io, 0, 1.0f);
    nrt_close();
    ASSERT_STATUS(nrt_execute(model, io.in_set, io.out_set), NRT_CLOSED);
    ASSERT_STATUS(nrt_load(image, size, 0, -1, &other), NRT_CLOSED);
    /* Host-side metadata stays readable until the model is unloaded. */
    ASSERT_OK(nrt_get_model_tensor_info(model, &info));
    ASSERT_OK(nrt_free_model_tensor_info(info));

    /* A model of an earlier runtime cannot run in the next one. */
    init_runtime();
    ASSERT_STATUS(nrt_execute(model, io.in_set, io.out_set), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "has been closed");
    add_io_free(&io);
    ASSERT_OK(nrt_unload(model));
    nrt_close();

    /* Unload after close frees host memory and succeeds. */
    init_runtime();
    model = load("add", ADD_DEF, ADD_PROGRAM, 0);
    nrt_close();
    ASSERT_OK(nrt_unload(model));
    free(image);
}

static void
test_exec_timeout(void)
{
    static const char def[] =
        "{\"var\": {"
        "\"x\": {\"type\": \"input\", \"size\": 4194304, "
        "\"shape\": [1024, 1024], \"dtype\": \"float32\"}, "
        "\"w\": {\"type\": \"input\", \"size\": 4194304, "
        "\"shape\": [1024, 1024], \"dtype\": \"float32\"}, "
        "\"output_0\": {\"type\": \"output\", \"size\": 4194304, "
        "\"shape\": [1024, 1024], \"dtype\": \"float32\"}}, "
        "\"emulator_program\": \"program.json\"}";
    nrt_tensor_set_t *in_set, *out_set;
    nrt_tensor_t *x, *w, *out;
    struct timespec t0, t1;
    char *program = matmul_chain_program(1000, 1024, true);
    nrt_model_t *model;
    double seconds;

    init_runtime();
    setenv("NEURON_RT_EXEC_TIMEOUT", "1", 1);
    model = load("slow", def, program, 0);
    unsetenv("NEURON_RT_EXEC_TIMEOUT");
    free(program);
    x = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, NULL, 1024 * 1024, "x");
    w = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, NULL, 1024 * 1024, "w");
    out = tensor_f32(NRT_TENSOR_PLACEMENT_DEVICE, 0, NULL, 1024 * 1024, "o");
    ASSERT_OK(nrt_tensor_memset(x, 0, 0, 1024 * 1024 * 4));
    ASSERT_OK(nrt_tensor_memset(w, 0, 0, 1024 * 1024 * 4));
    ASSERT_OK(nrt_allocate_tensor_set(&in_set));
    ASSERT_OK(nrt_allocate_tensor_set(&out_set));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(in_set, "x", x));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(in_set, "w", w));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(out_set, "output_0", out));

    clock_gettime(CLOCK_MONOTONIC, &t0);
    ASSERT_STATUS(nrt_execute(model, in_set, out_set), NRT_TIMEOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    seconds = (double)(t1.tv_sec - t0.tv_sec) +
              (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ASSERT_TRUE(seconds >= 0.9 && seconds < 30.0);

    nrt_destroy_tensor_set(&in_set);
    nrt_destroy_tensor_set(&out_set);
    nrt_tensor_free(&x);
    nrt_tensor_free(&w);
    nrt_tensor_free(&out);
    ASSERT_OK(nrt_unload(model));
    nrt_close();
}

struct worker {
    nrt_model_t *model;
    float scale;
    int iterations;
};

static void *
worker_main(void *arg)
{
    struct worker *w = arg;
    struct add_io io;

    add_io_make(&io, 0, w->scale);
    for (int i = 0; i < w->iterations; i++) {
        ASSERT_OK(nrt_execute(w->model, io.in_set, io.out_set));
        add_io_check(&io, w->scale);
    }
    add_io_free(&io);
    return NULL;
}

static void
test_concurrent_executions(void)
{
    struct worker workers[4];
    pthread_t threads[4];
    nrt_model_t *model;

    init_runtime();
    model = load("add", ADD_DEF, ADD_PROGRAM, 0);
    for (int i = 0; i < 4; i++) {
        workers[i] = (struct worker){model, (float)(i + 1), 200};
        ASSERT_EQ(pthread_create(&threads[i], NULL, worker_main, &workers[i]),
                  0);
    }
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(pthread_join(threads[i], NULL), 0);
    }
    ASSERT_OK(nrt_unload(model));
    nrt_close();
}

/* The dtype table and the exact dtypes of a model's tensors, where the
 * reported nrt_dtype_t has no code (bool, float64) or, as the real
 * runtime's, says int8 for every fp8 variant. */
static void
test_exact_dtypes(void)
{
    static const char def[] =
        "{\"var\": {"
        "\"flag\": {\"type\": \"input\", \"size\": 4, \"shape\": [4], "
        "\"dtype\": \"bool\"}, "
        "\"wide\": {\"type\": \"input\", \"size\": 32, \"shape\": [4], "
        "\"dtype\": \"float64\"}, "
        "\"fn\": {\"type\": \"output\", \"size\": 4, \"shape\": [4], "
        "\"dtype\": \"float8_e4m3fn\"}, "
        "\"e5\": {\"type\": \"output\", \"size\": 4, \"shape\": [4], "
        "\"dtype\": \"float8e5\"}, "
        "\"e4\": {\"type\": \"output\", \"size\": 4, \"shape\": [4], "
        "\"dtype\": \"float8e4\"}, "
        "\"e3\": {\"type\": \"output\", \"size\": 4, \"shape\": [4], "
        "\"dtype\": \"float8_e3m4\"}, "
        "\"raw\": {\"type\": \"output\", \"size\": 16}}}";
    static const char *want[] = {"bool",        "float64",     "float8_e4m3fn",
                                 "float8_e5m2", "float8_e4m3", "float8_e3m4",
                                 "unknown"};
    static const nrt_dtype_t want_code[] = {
        NRT_DTYPE_UNKNOWN, NRT_DTYPE_UNKNOWN, NRT_DTYPE_INT8,   NRT_DTYPE_INT8,
        NRT_DTYPE_INT8,    NRT_DTYPE_INT8,    NRT_DTYPE_UNKNOWN};
    static const size_t want_size[] = {4, 32, 4, 4, 4, 4, 16};
    nrt_tensor_info_array_t *info = NULL;
    const char *name = NULL;
    size_t count = 0;

    /* The table: row 0 is "unknown", names unique, sizes and kinds set. */
    ASSERT_STR_EQ(nrtemu_dtype_info(0, &count)->name, "unknown");
    ASSERT_EQ(count, 18);
    ASSERT_NULL(nrtemu_dtype_info(count, NULL));
    for (size_t i = 1; i < count; i++) {
        const nrtemu_dtype_info_t *row = nrtemu_dtype_info(i, NULL);
        ASSERT_TRUE(row->size == 1 || row->size == 2 || row->size == 4 ||
                    row->size == 8);
        ASSERT_NOT_NULL(strchr("biuf", row->kind));
        for (size_t j = 1; j < i; j++) {
            ASSERT_TRUE(strcmp(row->name, nrtemu_dtype_info(j, NULL)->name));
        }
    }

    init_runtime();
    nrt_model_t *model = load("dtypes", def, NULL, 0);
    ASSERT_OK(nrt_get_model_tensor_info(model, &info));
    ASSERT_UEQ(info->tensor_count, 7);
    for (uint64_t i = 0; i < info->tensor_count; i++) {
        ASSERT_OK(nrtemu_get_model_tensor_dtype(model, i, &name));
        ASSERT_STR_EQ(name, want[i]);
        ASSERT_EQ(info->tensor_array[i].dtype, want_code[i]);
        ASSERT_UEQ(info->tensor_array[i].size, want_size[i]);
    }
    ASSERT_OK(nrt_free_model_tensor_info(info));
    ASSERT_STATUS(nrtemu_get_model_tensor_dtype(model, 7, &name), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "index 7 out of range");
    ASSERT_STATUS(nrtemu_get_model_tensor_dtype(model, 0, NULL), NRT_INVALID);
    ASSERT_STATUS(nrtemu_get_model_tensor_dtype(NULL, 0, &name), NRT_INVALID);
    ASSERT_OK(nrt_unload(model));
    nrt_close();
}

/* nrtemu_neff_describe(): the reader of nrt_load, as JSON, without init. */
static void
test_neff_describe(void)
{
    size_t size;
    unsigned char *image =
        neff_image_simple("described", ADD_DEF, ADD_PROGRAM, &size);
    char *json = NULL;

    ASSERT_OK(nrtemu_neff_describe(image, size, &json));
    ASSERT_STR_CONTAINS(json, "\"name\": \"described\"");
    ASSERT_STR_CONTAINS(json, "\"inputs\": [{\"name\": \"a\", \"size\": "
                              "128, \"shape\": [4, 8], \"dtype\": "
                              "\"float32\"}");
    ASSERT_STR_CONTAINS(json, "\"subgraphs\": [\"sg00\"], "
                              "\"emulator_program\": true");
    ASSERT_STR_CONTAINS(json, "\"files\": [\"neff.json\", "
                              "\"sg00/def.json\", \"sg00/program.json\"]");
    nrtemu_buffer_free(json);
    nrtemu_buffer_free(NULL);

    ASSERT_STATUS(nrtemu_neff_describe(image, size - 1, &json), NRT_INVALID);
    ASSERT_NULL(json);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "data_size");
    ASSERT_STATUS(nrtemu_neff_describe(NULL, size, &json), NRT_INVALID);
    ASSERT_STATUS(nrtemu_neff_describe(image, size, NULL), NRT_INVALID);
    free(image);
}

/* Two threads executing with the same two sets, each the other's way
 * round (A as inputs and B as outputs, and B, A): binding takes the sets'
 * locks in one order, so neither waits for the other forever. */
struct crossed {
    nrt_model_t *model;
    nrt_tensor_set_t *in, *out;
};

static void *
crossed_main(void *arg)
{
    struct crossed *c = arg;

    for (int i = 0; i < 2000; i++) {
        ASSERT_OK(nrt_execute(c->model, c->in, c->out));
    }
    return NULL;
}

static void
test_crossed_sets(void)
{
    struct add_io io;
    nrt_tensor_set_t *a = NULL, *b = NULL;
    pthread_t threads[2];

    init_runtime();
    nrt_model_t *model = load("add", ADD_DEF, ADD_PROGRAM, 0);
    add_io_make(&io, 0, 1.0f);
    ASSERT_OK(nrt_allocate_tensor_set(&a));
    ASSERT_OK(nrt_allocate_tensor_set(&b));
    nrt_tensor_set_t *sets[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(nrt_add_tensor_to_tensor_set(sets[i], "a", io.a));
        ASSERT_OK(nrt_add_tensor_to_tensor_set(sets[i], "b", io.b));
        ASSERT_OK(nrt_add_tensor_to_tensor_set(sets[i], "output_0", io.out));
    }
    struct crossed c[2] = {{model, a, b}, {model, b, a}};
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(pthread_create(&threads[i], NULL, crossed_main, &c[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(pthread_join(threads[i], NULL), 0);
    }
    add_io_check(&io, 1.0f);
    /* one set as both */
    ASSERT_OK(nrt_execute(model, a, a));
    nrt_destroy_tensor_set(&a);
    nrt_destroy_tensor_set(&b);
    add_io_free(&io);
    ASSERT_OK(nrt_unload(model));
    nrt_close();
}

int
main(void)
{
    test_begin("test_model");
    RUN_TEST(test_load_before_init);
    RUN_TEST(test_add_executes);
    RUN_TEST(test_host_tensors_and_extra_names);
    RUN_TEST(test_load_arguments);
    RUN_TEST(test_load_environment);
    RUN_TEST(test_execute_validation);
    RUN_TEST(test_bind_cache);
    RUN_TEST(test_bind_cache_concurrent_change);
    RUN_TEST(test_neff_without_program);
    RUN_TEST(test_exact_dtypes);
    RUN_TEST(test_neff_describe);
    RUN_TEST(test_take_out_of_bounds);
    RUN_TEST(test_after_close);
    RUN_TEST(test_exec_timeout);
    RUN_TEST(test_concurrent_executions);
    RUN_TEST(test_crossed_sets);
    return 0;
}
