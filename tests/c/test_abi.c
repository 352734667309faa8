/*
 * test_abi.c - every exported function, with good and bad arguments.
 *
 * The exports test checks that each exported name is called in this file,
 * so a function added to the library without a call here fails the build's
 * tests.  Deeper behaviour of the older groups has its own tests
 * (test_tensor.c, test_model.c, test_sys_trace.c...); here each function is
 * called at least once the way a client would and once with NULL or
 * out-of-range arguments, and the new groups (device queries, completion
 * counts, inspect and continuous-profile options, the nrta_* queues) are
 * tested in depth.
 */
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include "neff_image.h"
#include "test.h"

/* ADD4_DEF, ADD4_PROGRAM: the 4-float add model (neff_image.h). */

static nrt_model_t *
load_add(int vnc)
{
    nrt_model_t *model = NULL;
    size_t size;
    unsigned char *image =
        neff_image_simple("add", ADD4_DEF, ADD4_PROGRAM, &size);

    ASSERT_STATUS(nrt_load(NULL, size, vnc, -1, &model), NRT_INVALID);
    ASSERT_STATUS(nrt_load(image, size, 99, -1, &model), NRT_INVALID);
    ASSERT_STATUS(nrt_load(image, size, vnc, -1, NULL), NRT_INVALID);
    ASSERT_OK(nrt_load(image, size, vnc, -1, &model));
    free(image);
    return model;
}

struct add_io {
    nrt_tensor_t *a, *b, *out;
    nrt_tensor_set_t *in, *outs;
};

static void
add_io_make(struct add_io *io, int vnc)
{
    const float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40};

    ASSERT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, 16, "a",
                                  &io->a));
    ASSERT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, 16, "b",
                                  &io->b));
    ASSERT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, 16, "o",
                                  &io->out));
    ASSERT_OK(nrt_tensor_write(io->a, a, 0, sizeof a));
    ASSERT_OK(nrt_tensor_write(io->b, b, 0, sizeof b));
    ASSERT_OK(nrt_allocate_tensor_set(&io->in));
    ASSERT_OK(nrt_allocate_tensor_set(&io->outs));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io->in, "a", io->a));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io->in, "b", io->b));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(io->outs, "output_0", io->out));
}

static void
add_io_free(struct add_io *io)
{
    nrt_destroy_tensor_set(&io->in);
    nrt_destroy_tensor_set(&io->outs);
    nrt_tensor_free(&io->a);
    nrt_tensor_free(&io->b);
    nrt_tensor_free(&io->out);
}

/* ------------------------------------------------------- before nrt_init */

static void
test_before_init(void)
{
    nrt_version_t ver;
    nrt_instance_info_t info;
    uint32_t n = 0, id = 99, map[4];
    nrt_tensor_t *t = NULL;
    nrta_error_tracker_t *tracker = NULL;
    nrta_seq_t seq;

    ASSERT_OK(nrt_get_version(&ver, sizeof ver));
    ASSERT_UEQ(ver.rt_major, NRT_MAJOR_VERSION);
    ASSERT_STATUS(nrt_get_version(NULL, sizeof ver), NRT_INVALID);
    ASSERT_STR_EQ(nrt_get_status_as_str(NRT_TIMEOUT), "NRT_TIMEOUT");
    ASSERT_STR_EQ(nrt_get_status_as_str((NRT_STATUS)12345), "UNKNOWN STATUS");
    ASSERT_OK(nrt_get_instance_info(&info, sizeof info));
    ASSERT_STATUS(nrt_get_instance_info(NULL, sizeof info), NRT_INVALID);
    ASSERT_OK(nrt_get_total_vnc_count(&n));
    ASSERT_UEQ(n, 2);
    ASSERT_STATUS(nrt_get_total_vnc_count(NULL), NRT_INVALID);
    ASSERT_OK(nrt_get_total_nc_count(&n));
    ASSERT_STATUS(nrt_get_total_nc_count(NULL), NRT_INVALID);
    ASSERT_OK(nrt_get_visible_vnc_count(&n));
    ASSERT_STATUS(nrt_get_visible_vnc_count(NULL), NRT_INVALID);
    ASSERT_OK(nrt_get_visible_nc_count(&n));
    ASSERT_STATUS(nrt_get_visible_nc_count(NULL), NRT_INVALID);
    ASSERT_STR_EQ(nrtemu_instance_name(), "trn1.2xlarge");

    /* Device ids are instance facts: known before nrt_init. */
    ASSERT_OK(nrt_host_device_id_get(0, &id));
    ASSERT_UEQ(id, 0);
    ASSERT_STATUS(nrt_host_device_id_get(1, &id), NRT_INVALID);
    ASSERT_STATUS(nrt_host_device_id_get(-1, &id), NRT_INVALID);
    ASSERT_STATUS(nrt_host_device_id_get(0, NULL), NRT_INVALID);
    n = 0;
    ASSERT_STATUS(nrt_host_device_id_rid_map_get(&n, map), NRT_RESOURCE);
    ASSERT_UEQ(n, 1); /* the size needed */
    map[0] = 77;
    n = 4;
    ASSERT_OK(nrt_host_device_id_rid_map_get(&n, map));
    ASSERT_UEQ(n, 1);
    ASSERT_UEQ(map[0], 0);
    ASSERT_STATUS(nrt_host_device_id_rid_map_get(NULL, map), NRT_INVALID);
    ASSERT_STATUS(nrt_host_device_id_rid_map_get(&n, NULL), NRT_INVALID);

    /* Calls that need a runtime say it has not started. */
    ASSERT_STATUS(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 8, "t", &t),
        NRT_UNINITIALIZED);
    ASSERT_STATUS(nrta_error_tracker_create(0, &tracker), NRT_UNINITIALIZED);
    ASSERT_STATUS(nrta_get_sequence(0, NRTA_XU_COMPUTE, 0, &seq),
                  NRT_UNINITIALIZED);
    ASSERT_STATUS(nrt_async_drain_queued_execs(0), NRT_UNINITIALIZED);
    ASSERT_STATUS(nrt_inspect_begin(), NRT_UNINITIALIZED);
    ASSERT_STATUS(nrt_profile_continuous_stop(), NRT_UNINITIALIZED);
    ASSERT_STATUS(nrt_init((nrt_framework_type_t)77, "", ""), NRT_INVALID);
}

/* --------------------------------------------------------------- tensors */

static void
test_tensors(void)
{
    unsigned char buf[64], out[64];
    nrt_tensor_t *t = NULL, *h = NULL, *s = NULL, *e = NULL;
    nrt_tensor_batch_op_t op = {.offset = 8, .size = 8, .buffer = buf};
    nrt_tensor_batch_t batch = {.ops = &op, .num_ops = 1};
    nrt_tensor_batch_t bad_batch = {.ops = &op, .num_ops = 1};
    nrt_tensor_device_allocation_info_t ai;
    nrt_vnc_memory_stats_t stats;
    size_t written = 0;

    for (size_t i = 0; i < sizeof buf; i++) {
        buf[i] = (unsigned char)(i + 1);
    }
    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, 64, "t", &t));
    ASSERT_STATUS(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, 0, "t", &h),
        NRT_RESOURCE);
    ASSERT_STATUS(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 5, 8, "t", &h),
        NRT_INVALID);
    ASSERT_STATUS(
        nrt_tensor_allocate((nrt_tensor_placement_t)9, 0, 8, "t", &h),
        NRT_INVALID);
    ASSERT_STATUS(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 8, "t", NULL),
        NRT_INVALID);
    ASSERT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, -1, 64, "h", &h));
    ASSERT_UEQ(nrt_tensor_get_size(t), 64);
    ASSERT_UEQ(nrt_tensor_get_size(NULL), 0);

    ASSERT_OK(nrt_tensor_write(t, buf, 0, sizeof buf));
    ASSERT_STATUS(nrt_tensor_write(t, buf, 1, sizeof buf), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_write(NULL, buf, 0, 1), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_write(t, NULL, 0, 1), NRT_INVALID);
    ASSERT_OK(nrt_tensor_read(t, out, 0, sizeof out));
    ASSERT_TRUE(memcmp(buf, out, sizeof out) == 0);
    ASSERT_STATUS(nrt_tensor_read(t, out, SIZE_MAX, 2), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_read(NULL, out, 0, 1), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_read(t, NULL, 0, 1), NRT_INVALID);

    batch.tensor = h;
    ASSERT_OK(nrt_tensor_write_batch(&batch, 1, false));
    ASSERT_STATUS(nrt_tensor_write_batch(NULL, 1, false), NRT_INVALID);
    op.offset = 60; /* past the end with size 8 */
    bad_batch.tensor = h;
    ASSERT_STATUS(nrt_tensor_write_batch(&bad_batch, 1, true), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_read_batch(&bad_batch, 1, true), NRT_INVALID);
    op.offset = 8;
    op.buffer = out;
    memset(out, 0, sizeof out);
    ASSERT_OK(nrt_tensor_read_batch(&batch, 1, false));
    ASSERT_TRUE(memcmp(out, buf, 8) == 0);
    ASSERT_STATUS(nrt_tensor_read_batch(NULL, 2, false), NRT_INVALID);

    ASSERT_OK(nrt_tensor_copy(t, 0, h, 0, 64));
    ASSERT_STATUS(nrt_tensor_copy(t, 1, h, 0, 64), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_copy(NULL, 0, h, 0, 1), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_copy(t, 0, NULL, 0, 1), NRT_INVALID);
    ASSERT_OK(nrt_tensor_memset(h, 4, 0xab, 4));
    ASSERT_OK(nrt_tensor_read(h, out, 0, 8));
    ASSERT_EQ(out[3], 4);
    ASSERT_EQ(out[4], 0xab);
    ASSERT_STATUS(nrt_tensor_memset(h, 64, 0, 1), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_memset(NULL, 0, 0, 1), NRT_INVALID);

    ASSERT_OK(nrt_tensor_allocate_slice(t, 16, 16, "s", &s));
    ASSERT_UEQ(nrt_tensor_get_size(s), 16);
    ASSERT_STATUS(nrt_tensor_allocate_slice(t, 60, 16, "s", &e), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_allocate_slice(NULL, 0, 1, "s", &e), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_allocate_slice(t, 0, 1, "s", NULL), NRT_INVALID);
    ASSERT_PTR_EQ(nrt_tensor_get_va(s),
                  (unsigned char *)nrt_tensor_get_va(t) + 16);
    ASSERT_NULL(nrt_tensor_get_va(NULL));

    ASSERT_OK(nrt_tensor_allocate_empty("e", &e));
    ASSERT_STATUS(nrt_tensor_allocate_empty("e", NULL), NRT_INVALID);
    ASSERT_OK(nrt_tensor_attach_buffer(e, buf, sizeof buf));
    ASSERT_PTR_EQ(nrt_tensor_get_va(e), buf);
    ASSERT_STATUS(nrt_tensor_attach_buffer(e, NULL, 8), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_attach_buffer(NULL, buf, 8), NRT_INVALID);

    /* Device allocation info: the whole allocation behind a slice. */
    ASSERT_OK(nrt_tensor_get_device_allocation_info(s, &ai));
    ASSERT_UEQ(ai.physical_address, (uintptr_t)nrt_tensor_get_va(t));
    ASSERT_TRUE(ai.size >= 64);
    ASSERT_EQ(ai.hbm_index, 1);
    ASSERT_STATUS(nrt_tensor_get_device_allocation_info(h, &ai), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "not a device tensor");
    ASSERT_STATUS(nrt_tensor_get_device_allocation_info(e, &ai), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_get_device_allocation_info(NULL, &ai),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_get_device_allocation_info(t, NULL), NRT_INVALID);

    ASSERT_OK(nrt_get_vnc_memory_stats(1, &stats, sizeof stats, &written));
    ASSERT_UEQ(written, sizeof stats);
    ASSERT_TRUE(stats.bytes_used >= 64);
    ASSERT_STATUS(nrt_get_vnc_memory_stats(2, &stats, sizeof stats, NULL),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_get_vnc_memory_stats(0, NULL, sizeof stats, NULL),
                  NRT_INVALID);

    /* Completion counts without executions. */
    ASSERT_OK(nrt_tensor_check_output_completion(t, 0, 0));
    ASSERT_STATUS(nrt_tensor_check_output_completion(t, 0, 1), NRT_TIMEOUT);
    ASSERT_STATUS(nrt_tensor_check_output_completion(t, 2000, 1), NRT_TIMEOUT);
    ASSERT_STATUS(nrt_tensor_check_output_completion(NULL, 0, 0), NRT_INVALID);
    ASSERT_OK(nrt_tensor_reset_output_completion(t));
    ASSERT_STATUS(nrt_tensor_reset_output_completion(NULL), NRT_INVALID);

    nrt_tensor_free(&s);
    ASSERT_NULL(s);
    nrt_tensor_free(&s);   /* *tensor == NULL: accepted */
    nrt_tensor_free(NULL); /* accepted */
    nrt_tensor_free(&e);
    nrt_tensor_free(&h);
    nrt_tensor_free(&t);
}

/* ----------------------------------------------------------- tensor sets */

static void
test_tensor_sets(void)
{
    nrt_tensor_set_t *set = NULL;
    nrt_tensor_t *t = NULL, *got = NULL;

    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_VIRTUAL, -1, 8, "t", &t));
    ASSERT_OK(nrt_allocate_tensor_set(&set));
    ASSERT_STATUS(nrt_allocate_tensor_set(NULL), NRT_INVALID);
    ASSERT_OK(nrt_add_tensor_to_tensor_set(set, "x", t));
    ASSERT_STATUS(nrt_add_tensor_to_tensor_set(NULL, "x", t), NRT_INVALID);
    ASSERT_STATUS(nrt_add_tensor_to_tensor_set(set, NULL, t), NRT_INVALID);
    ASSERT_OK(nrt_get_tensor_from_tensor_set(set, "x", &got));
    ASSERT_PTR_EQ(got, t);
    ASSERT_STATUS(nrt_get_tensor_from_tensor_set(set, "y", &got), NRT_FAILURE);
    ASSERT_STATUS(nrt_get_tensor_from_tensor_set(NULL, "x", &got),
                  NRT_INVALID);
    nrt_destroy_tensor_set(&set);
    ASSERT_NULL(set);
    nrt_destroy_tensor_set(NULL);
    nrt_tensor_free(&t);
}

/* ---------------------------------------------------------------- models */

static void
test_models(void)
{
    nrt_model_t *model = load_add(0), *coll = NULL;
    nrt_tensor_info_array_t *info = NULL;
    nrt_model_info_t mi;
    const char *dtype = NULL;
    size_t mi_size = 0, size;
    uint32_t n = 0;
    struct add_io io;
    float out[4];
    unsigned char *image;

    ASSERT_OK(nrt_get_model_tensor_info(model, &info));
    ASSERT_UEQ(info->tensor_count, 3);
    ASSERT_STATUS(nrt_get_model_tensor_info(NULL, &info), NRT_INVALID);
    ASSERT_STATUS(nrt_get_model_tensor_info(model, NULL), NRT_INVALID);
    ASSERT_OK(nrt_free_model_tensor_info(info));
    ASSERT_OK(nrt_free_model_tensor_info(NULL));
    ASSERT_OK(nrtemu_get_model_tensor_dtype(model, 2, &dtype));
    ASSERT_STR_EQ(dtype, "float32");
    ASSERT_STATUS(nrtemu_get_model_tensor_dtype(model, 3, &dtype),
                  NRT_INVALID);
    ASSERT_STATUS(nrtemu_get_model_tensor_dtype(NULL, 0, &dtype), NRT_INVALID);
    ASSERT_STATUS(nrtemu_get_model_tensor_dtype(model, 0, NULL), NRT_INVALID);
    ASSERT_OK(nrt_get_model_vnc_count(model, &n));
    ASSERT_UEQ(n, 1);
    ASSERT_STATUS(nrt_get_model_vnc_count(NULL, &n), NRT_INVALID);
    ASSERT_OK(nrt_get_model_nc_count(model, &n));
    ASSERT_STATUS(nrt_get_model_nc_count(model, NULL), NRT_INVALID);
    ASSERT_OK(nrt_get_model_instance_count(model, &n));
    ASSERT_UEQ(n, 1);
    ASSERT_STATUS(nrt_get_model_instance_count(NULL, &n), NRT_INVALID);
    ASSERT_OK(nrt_get_model_info(model, &mi, sizeof mi, &mi_size));
    ASSERT_UEQ(mi.vnc, 0);
    ASSERT_UEQ(mi_size, sizeof mi);
    ASSERT_STATUS(nrt_get_model_info(NULL, &mi, sizeof mi, NULL), NRT_INVALID);

    add_io_make(&io, 0);
    ASSERT_OK(nrt_execute(model, io.in, io.outs));
    ASSERT_OK(nrt_tensor_read(io.out, out, 0, sizeof out));
    ASSERT_TRUE(out[0] == 11.0f && out[3] == 44.0f);
    ASSERT_STATUS(nrt_execute(NULL, io.in, io.outs), NRT_INVALID);
    ASSERT_STATUS(nrt_execute(model, NULL, io.outs), NRT_INVALID);
    ASSERT_STATUS(nrt_execute(model, io.outs, io.outs), NRT_INVALID);
    ASSERT_OK(nrt_execute_repeat(model, io.in, io.outs, 2));
    ASSERT_STATUS(nrt_execute_repeat(model, io.in, io.outs, 0), NRT_INVALID);

    /* Each successful execution counted once for the output tensor. */
    ASSERT_OK(nrt_tensor_check_output_completion(io.out, 0, 3));
    ASSERT_STATUS(nrt_tensor_check_output_completion(io.out, 0, 4),
                  NRT_TIMEOUT);
    ASSERT_OK(nrt_tensor_check_output_completion(io.a, 0, 0));
    ASSERT_STATUS(nrt_tensor_check_output_completion(io.a, 0, 1), NRT_TIMEOUT);
    ASSERT_OK(nrt_tensor_reset_output_completion(io.out));
    ASSERT_STATUS(nrt_tensor_check_output_completion(io.out, 0, 1),
                  NRT_TIMEOUT);
    ASSERT_OK(nrt_execute(model, io.in, io.outs));
    ASSERT_OK(nrt_tensor_check_output_completion(io.out, -1, 1));

    ASSERT_OK(nrt_profile_start(model, "abi-test.json"));
    ASSERT_STATUS(nrt_profile_start(NULL, "abi-test.json"), NRT_INVALID);
    ASSERT_STATUS(nrt_profile_start(model, NULL), NRT_INVALID);
    ASSERT_STATUS(nrt_profile_stop(NULL), NRT_INVALID);
    ASSERT_STATUS(nrt_profile_stop("never-started.json"), NRT_INVALID);
    /* Nothing executed while recording: nothing is written. */
    ASSERT_STATUS(nrt_profile_stop("abi-test.json"), NRT_FAILURE);

    image = neff_image_simple("add", ADD4_DEF, ADD4_PROGRAM, &size);
    ASSERT_OK(nrt_load_collectives(image, size, 1, -1, 0, 1, &coll));
    ASSERT_STATUS(nrt_load_collectives(image, size, 1, -1, 2, 2, &coll),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_load_collectives(NULL, size, 1, -1, 0, 1, &coll),
                  NRT_INVALID);
    free(image);
    ASSERT_OK(nrt_unload(coll));
    ASSERT_STATUS(nrt_unload(NULL), NRT_INVALID);
    add_io_free(&io);
    ASSERT_OK(nrt_unload(model));
}

/* ----------------------------------------------------- system and extras */

static void
test_system(void)
{
    unsigned char buf[16];
    void *addr = NULL;
    size_t size = 0, len = sizeof buf;
    int fd = -1, err = 0;
    char msg[256] = "";
    char bdf[32];
    nrt_ucode_info ucode;

    ASSERT_STATUS(nrt_get_hbm_mmap_va(0, 0, &addr, &size), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "not available in the nrtpy");
    ASSERT_NULL(addr);
    ASSERT_STATUS(nrt_get_hbm_mmap_va(0, 0, NULL, &size), NRT_INVALID);
    ASSERT_STATUS(nrt_get_hbm_mmap_va(-1, 0, &addr, &size), NRT_INVALID);

    ASSERT_STATUS(nrt_get_dmabuf_fd((uintptr_t)buf, sizeof buf, &fd),
                  NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "dma-buf");
    ASSERT_EQ(fd, -1);
    ASSERT_STATUS(nrt_get_dmabuf_fd((uintptr_t)buf, sizeof buf, NULL),
                  NRT_INVALID);

    ASSERT_STATUS(nrt_get_attached_efa_bdf(buf, bdf, &len), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "EFA");
    ASSERT_STATUS(nrt_get_attached_efa_bdf(NULL, bdf, &len), NRT_INVALID);

    ASSERT_STATUS(nrt_memcpy_to_device(buf, buf + 8, 8), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "nrt_tensor_write");
    ASSERT_STATUS(nrt_memcpy_to_device(NULL, buf, 8), NRT_INVALID);

    ASSERT_STATUS(nrt_trace_start(true), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "nrt_sys_trace_start");
    ASSERT_STATUS(nrt_trace_stop("trace.out"), NRT_INVALID);
    ASSERT_STATUS(nrt_trace_stop(NULL), NRT_INVALID);

    memset(&ucode, 0, sizeof ucode);
    ASSERT_STATUS(nrt_set_pool_eng_ucode(&ucode), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "microcode");
    ASSERT_STATUS(nrt_set_pool_eng_ucode(NULL), NRT_INVALID);

    ASSERT_NULL(nrt_get_libnccl_net(&err, msg, sizeof msg));
    ASSERT_EQ(err, NRT_INVALID);
    ASSERT_STR_CONTAINS(msg, "NCCL");
    ASSERT_NULL(nrt_get_libnccl_net(NULL, NULL, 0));

    ASSERT_OK(nrt_register_async_exec_callback(NULL, NULL));

    ASSERT_OK(nrt_async_drain_queued_execs(0));
    ASSERT_STATUS(nrt_async_drain_queued_execs(2), NRT_INVALID);
    ASSERT_STATUS(nrt_async_drain_queued_execs(-1), NRT_INVALID);
}

/* A client per vnc, pollable, and always empty: the emulated cores emit
 * no debug events. */
static void
test_debug_stream(void)
{
    ndebug_stream_event_header_t header;
    void *payload = NULL;
    struct pollfd pfd;
    int fd = -1, fd1 = -1, other = -1;

    ASSERT_OK(nrt_debug_client_connect(0, &fd));
    ASSERT_TRUE(fd >= 0);
    ASSERT_STATUS(nrt_debug_client_connect(0, &other), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "already has a debug client");
    ASSERT_EQ(other, -1);
    ASSERT_OK(nrt_debug_client_connect(1, &fd1));
    ASSERT_STATUS(nrt_debug_client_connect(2, &other), NRT_INVALID);
    ASSERT_STATUS(nrt_debug_client_connect(-1, &other), NRT_INVALID);
    ASSERT_STATUS(nrt_debug_client_connect(0, NULL), NRT_INVALID);
    pfd.fd = fd;
    pfd.events = POLLIN;
    ASSERT_EQ(poll(&pfd, 1, 0), 0);
    ASSERT_STATUS(nrt_debug_client_read_one_event(fd, &header, &payload),
                  NRT_QUEUE_EMPTY);
    ASSERT_NULL(payload);
    ASSERT_STATUS(nrt_debug_client_read_one_event(fd, NULL, &payload),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_debug_client_read_one_event(-5, &header, &payload),
                  NRT_INVALID);
    nrt_debug_client_connect_close(fd);
    nrt_debug_client_connect_close(-5); /* ignored */
    ASSERT_STATUS(nrt_debug_client_read_one_event(fd, &header, &payload),
                  NRT_INVALID);
    /* Closed: the vnc takes a new client. */
    ASSERT_OK(nrt_debug_client_connect(0, &fd));
    nrt_debug_client_connect_close(fd);
    nrt_debug_client_connect_close(fd1);
}

static void
test_sendrecv(void)
{
    nrt_async_sendrecv_comm_t *comm = NULL;
    nrt_async_sendrecv_request_t *req = NULL;
    nrt_tensor_t *t = NULL;
    bool done = false;
    size_t size = 0;
    int n = -1;

    ASSERT_STATUS(nrt_async_sendrecv_get_max_num_communicators_per_lnc(&n),
                  NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "EFA");
    ASSERT_STATUS(nrt_async_sendrecv_get_max_num_communicators_per_lnc(NULL),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_async_sendrecv_get_max_num_pending_request(&n),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_async_sendrecv_get_max_num_pending_request(NULL),
                  NRT_INVALID);
    ASSERT_EQ(n, -1);
    ASSERT_STATUS(nrt_async_sendrecv_init(0), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "not available");
    ASSERT_STATUS(nrt_async_sendrecv_init(2), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "does not exist");
    ASSERT_STATUS(nrt_async_sendrecv_close(0), NRT_INVALID);
    ASSERT_STATUS(nrt_async_sendrecv_close(-1), NRT_INVALID);
    ASSERT_STATUS(nrt_async_sendrecv_flush(0), NRT_INVALID);
    ASSERT_STATUS(nrt_async_sendrecv_flush(99), NRT_INVALID);
    ASSERT_STATUS(nrt_async_sendrecv_connect("10.0.0.1", 0, 0, &comm),
                  NRT_INVALID);
    ASSERT_NULL(comm);
    ASSERT_STATUS(nrt_async_sendrecv_connect(NULL, 0, 0, &comm), NRT_INVALID);
    ASSERT_STATUS(nrt_async_sendrecv_accept("10.0.0.1", 0, 0, &comm),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_async_sendrecv_accept("10.0.0.1", 0, 0, NULL),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_async_sendrecv_test_comm(NULL, &done), NRT_INVALID);
    ASSERT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 8, "t", &t));
    ASSERT_STATUS(nrt_async_sendrecv_send_tensor(t, 0, 8, NULL, &req),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_async_sendrecv_send_tensor(NULL, 0, 8, NULL, &req),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_async_sendrecv_recv_tensor(t, 0, 8, NULL, &req),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_async_sendrecv_recv_tensor(NULL, 0, 8, NULL, &req),
                  NRT_INVALID);
    ASSERT_NULL(req);
    ASSERT_STATUS(nrt_async_sendrecv_test_request(NULL, &done, &size),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_async_sendrecv_test_request(NULL, &done, NULL),
                  NRT_INVALID);
    nrt_tensor_free(&t);
}

/* The emulator's own extras (nrt/nrtemu.h); test_neff.c and
 * test_convert.c test them in depth. */
static void
test_nrtemu_extras(void)
{
    const nrtemu_dtype_info_t *row;
    size_t count = 0, size;
    unsigned char *image =
        neff_image_simple("add", ADD4_DEF, ADD4_PROGRAM, &size);
    char *json = NULL;

    row = nrtemu_dtype_info(0, &count);
    ASSERT_NOT_NULL(row);
    ASSERT_STR_EQ(row->name, "unknown");
    ASSERT_TRUE(count > 10);
    ASSERT_NULL(nrtemu_dtype_info(count, NULL));
    ASSERT_OK(nrtemu_neff_describe(image, size, &json));
    ASSERT_STR_CONTAINS(json, "output_0");
    nrtemu_buffer_free(json);
    nrtemu_buffer_free(NULL);
    ASSERT_STATUS(nrtemu_neff_describe(image, 10, &json), NRT_INVALID);
    ASSERT_STATUS(nrtemu_neff_describe(NULL, size, &json), NRT_INVALID);
    ASSERT_STATUS(nrtemu_neff_describe(image, size, NULL), NRT_INVALID);
    free(image);
}

/* -------------------------------------------------- profile and inspect */

static void
test_continuous_profile(void)
{
    nrt_profile_continuous_options_t *opt = NULL;

    ASSERT_OK(nrt_profile_continuous_options_allocate(&opt));
    ASSERT_STATUS(nrt_profile_continuous_options_allocate(NULL), NRT_INVALID);
    ASSERT_OK(nrt_profile_continuous_options_set_output_dir(opt, "/tmp/x"));
    ASSERT_STATUS(nrt_profile_continuous_options_set_output_dir(opt, ""),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_profile_continuous_options_set_output_dir(opt, NULL),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_profile_continuous_options_set_output_dir(NULL, "x"),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_profile_continuous_start(opt), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "device profil");
    ASSERT_STATUS(nrt_profile_continuous_start(NULL), NRT_INVALID);
    ASSERT_STATUS(nrt_profile_continuous_save(0, opt), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "not available");
    ASSERT_STATUS(nrt_profile_continuous_save(7, opt), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "not visible");
    ASSERT_STATUS(nrt_profile_continuous_stop(), NRT_INVALID);
    ASSERT_OK(nrt_profile_continuous_options_free(opt));
    ASSERT_OK(nrt_profile_continuous_options_free(NULL));
}

static void
test_inspect(void)
{
    nrt_inspect_config_t *cfg = NULL;
    const char **list = NULL;
    size_t count = 0;

    ASSERT_OK(nrt_inspect_config_allocate(&cfg));
    ASSERT_STATUS(nrt_inspect_config_allocate(NULL), NRT_INVALID);

    ASSERT_OK(nrt_inspect_config_get_all_activity_types(&list, &count));
    ASSERT_UEQ(count, 4);
    ASSERT_STR_EQ(list[0], "system_profile");
    ASSERT_STR_EQ(list[3], "cpu_util");
    nrt_inspect_config_free_activity_types(list, count);
    nrt_inspect_config_free_activity_types(NULL, 0);
    ASSERT_STATUS(nrt_inspect_config_get_all_activity_types(NULL, &count),
                  NRT_INVALID);

    /* Defaults: every activity. */
    ASSERT_OK(
        nrt_inspect_config_get_enabled_activity_types(cfg, &list, &count));
    ASSERT_UEQ(count, 4);
    nrt_inspect_config_free_activity_types(list, count);
    ASSERT_OK(nrt_inspect_config_set_activity(cfg, "all", false));
    ASSERT_OK(nrt_inspect_config_set_activity(cfg, "host_memory", true));
    ASSERT_OK(
        nrt_inspect_config_get_enabled_activity_types(cfg, &list, &count));
    ASSERT_UEQ(count, 1);
    ASSERT_STR_EQ(list[0], "host_memory");
    nrt_inspect_config_free_activity_types(list, count);
    ASSERT_STATUS(nrt_inspect_config_set_activity(cfg, "bogus", true),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_inspect_config_set_activity(cfg, NULL, true),
                  NRT_INVALID);
    ASSERT_STATUS(
        nrt_inspect_config_get_enabled_activity_types(NULL, &list, &count),
        NRT_INVALID);
    ASSERT_OK(nrt_inspect_config_set_defaults(cfg));
    ASSERT_OK(
        nrt_inspect_config_get_enabled_activity_types(cfg, &list, &count));
    ASSERT_UEQ(count, 4);
    nrt_inspect_config_free_activity_types(list, count);
    ASSERT_STATUS(nrt_inspect_config_set_defaults(NULL), NRT_INVALID);

    ASSERT_OK(nrt_inspect_config_set_session_id(cfg, 3));
    ASSERT_STATUS(nrt_inspect_config_set_session_id(cfg, -1), NRT_INVALID);
    ASSERT_STATUS(nrt_inspect_config_set_session_id(NULL, 1), NRT_INVALID);
    ASSERT_OK(nrt_inspect_config_set_output_dir(cfg, "out"));
    ASSERT_STATUS(nrt_inspect_config_set_output_dir(cfg, NULL), NRT_INVALID);
    ASSERT_OK(nrt_inspect_config_set_sys_trace_max_events_per_nc(cfg, 10));
    ASSERT_STATUS(nrt_inspect_config_set_sys_trace_max_events_per_nc(cfg, 0),
                  NRT_INVALID);
    ASSERT_OK(nrt_inspect_config_set_capture_enabled_for_nc(cfg, 1, false));
    ASSERT_STATUS(
        nrt_inspect_config_set_capture_enabled_for_nc(cfg, 100000, true),
        NRT_INVALID);
    ASSERT_OK(nrt_inspect_config_set_capture_enabled_for_event_type_string(
        cfg, "nrt_execute", false));
    ASSERT_OK(nrt_inspect_config_set_capture_enabled_for_event_type_string(
        cfg, "hardware", true));
    ASSERT_STATUS(nrt_inspect_config_set_capture_enabled_for_event_type_string(
                      cfg, "no_such_event", true),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_inspect_config_set_capture_enabled_for_event_type_string(
                      NULL, "all", true),
                  NRT_INVALID);
    ASSERT_OK(nrt_inspect_config_set_enable_inspect(cfg, true));
    ASSERT_STATUS(nrt_inspect_config_set_enable_inspect(NULL, true),
                  NRT_INVALID);
    ASSERT_OK(nrt_inspect_config_set_enable_inspect_on_fail(cfg, true));
    ASSERT_STATUS(nrt_inspect_config_set_enable_inspect_on_fail(NULL, true),
                  NRT_INVALID);

    ASSERT_STATUS(nrt_inspect_begin(), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "nrt_sys_trace");
    ASSERT_STATUS(nrt_inspect_begin_with_options(cfg), NRT_INVALID);
    ASSERT_STATUS(nrt_inspect_begin_with_options(NULL), NRT_INVALID);
    ASSERT_STATUS(nrt_inspect_stop(), NRT_INVALID);
    ASSERT_OK(nrt_inspect_config_free(cfg));
    ASSERT_OK(nrt_inspect_config_free(NULL));
}

/* ------------------------------------------------------------- sys trace */

static void
test_sys_trace(void)
{
    nrt_sys_trace_config_t *cfg = NULL;
    nrt_sys_trace_fetch_options_t *opt = NULL;
    const char **types = NULL;
    size_t count = 0, len = 0;
    char *json = NULL;

    ASSERT_OK(nrt_sys_trace_get_event_types(&types, &count));
    ASSERT_TRUE(count >= 3);
    nrt_sys_trace_free_event_types(types, count);
    ASSERT_STATUS(nrt_sys_trace_get_event_types(NULL, &count), NRT_INVALID);
    nrt_sys_trace_free_event_types(NULL, 0);

    ASSERT_OK(nrt_sys_trace_config_allocate(&cfg));
    ASSERT_STATUS(nrt_sys_trace_config_allocate(NULL), NRT_INVALID);
    nrt_sys_trace_config_set_defaults(cfg);
    nrt_sys_trace_config_set_defaults(NULL);
    nrt_sys_trace_config_set_max_events_per_nc(cfg, 16);
    nrt_sys_trace_config_set_max_events_per_nc(NULL, 16);
    nrt_sys_trace_config_set_capture_enabled_for_nc(cfg, 0, true);
    nrt_sys_trace_config_set_capture_enabled_for_nc(NULL, 0, true);
    ASSERT_OK(nrt_sys_trace_config_set_capture_enabled_for_event_type(
        cfg, "nrt_load", false));
    ASSERT_STATUS(nrt_sys_trace_config_set_capture_enabled_for_event_type(
                      cfg, "bogus", false),
                  NRT_INVALID);
    ASSERT_OK(
        nrt_sys_trace_config_get_enabled_event_types(cfg, &types, &count));
    nrt_sys_trace_free_event_types(types, count);
    ASSERT_STATUS(
        nrt_sys_trace_config_get_enabled_event_types(NULL, &types, &count),
        NRT_INVALID);

    ASSERT_OK(nrt_sys_trace_start(cfg));
    nrt_sys_trace_config_free(cfg);
    nrt_sys_trace_config_free(NULL);
    ASSERT_OK(nrt_sys_trace_fetch_options_allocate(&opt));
    ASSERT_STATUS(nrt_sys_trace_fetch_options_allocate(NULL), NRT_INVALID);
    nrt_sys_trace_fetch_options_set_defaults(opt);
    nrt_sys_trace_fetch_options_set_defaults(NULL);
    nrt_sys_trace_fetch_options_set_max_events_per_nc(opt, 5);
    nrt_sys_trace_fetch_options_set_max_events_per_nc(NULL, 5);
    nrt_sys_trace_fetch_options_set_nc_idx(opt, 1);
    nrt_sys_trace_fetch_options_set_nc_idx(NULL, 1);
    ASSERT_OK(nrt_sys_trace_fetch_events(&json, &len, opt));
    ASSERT_STR_CONTAINS(json, "\"events\"");
    ASSERT_UEQ(len, strlen(json));
    nrt_sys_trace_buffer_free(json);
    nrt_sys_trace_buffer_free(NULL);
    ASSERT_STATUS(nrt_sys_trace_fetch_events(NULL, &len, opt), NRT_INVALID);
    nrt_sys_trace_fetch_options_set_nc_idx(opt, 100000);
    ASSERT_STATUS(nrt_sys_trace_fetch_events(&json, &len, opt), NRT_INVALID);
    nrt_sys_trace_fetch_options_free(opt);
    nrt_sys_trace_fetch_options_free(NULL);
    ASSERT_OK(nrt_sys_trace_stop());
}

/* ---------------------------------------------------------- nrta_* async */

static void
test_async_tensors(void)
{
    nrt_tensor_t *t = NULL, *h = NULL;
    nrta_error_tracker_t *tracker = NULL;
    const nrta_error_t *errors = NULL;
    size_t nerr = 99;
    unsigned char in[32], out[32];
    nrta_seq_t w1, w2, r1, c1, last;
    bool done = false;
    struct pollfd pfd;
    int fd = -1;

    for (size_t i = 0; i < sizeof in; i++) {
        in[i] = (unsigned char)(3 * i + 1);
    }
    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, 32, "t", &t));
    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, 32, "h", &h));
    ASSERT_OK(nrta_error_tracker_create(1, &tracker));
    ASSERT_STATUS(nrta_error_tracker_create(2, &tracker), NRT_INVALID);
    ASSERT_STATUS(nrta_error_tracker_create(0, NULL), NRT_INVALID);

    /* Before any request: sequence number 0 of the XU. */
    ASSERT_OK(nrta_get_sequence(1, NRTA_XU_TENSOR_WRITE, 0, &last));
    ASSERT_UEQ(NRTA_SEQ_GET_SEQ_NUM(last), 0);
    ASSERT_STATUS(nrta_get_sequence(2, NRTA_XU_TENSOR_WRITE, 0, &last),
                  NRT_INVALID);
    ASSERT_STATUS(nrta_get_sequence(1, NRTA_XU_TYPE_NUM, 0, &last),
                  NRT_INVALID);
    ASSERT_STATUS(nrta_get_sequence(1, NRTA_XU_COMPUTE, 1, &last),
                  NRT_INVALID);
    ASSERT_STATUS(nrta_get_sequence(1, NRTA_XU_COMPUTE, 0, NULL), NRT_INVALID);

    ASSERT_OK(nrta_tensor_write(t, in, 0, 16, 0, tracker, &w1));
    ASSERT_OK(nrta_tensor_write(t, in + 16, 16, 16, 0, tracker, &w2));
    ASSERT_UEQ(NRTA_SEQ_GET_XU_ID(w1), NRTA_SEQ_GET_XU_ID(w2));
    ASSERT_UEQ(NRTA_SEQ_GET_SEQ_NUM(w1), 1);
    ASSERT_UEQ(NRTA_SEQ_GET_SEQ_NUM(w2), 2);
    ASSERT_OK(nrta_get_sequence(1, NRTA_XU_TENSOR_WRITE, 0, &last));
    ASSERT_UEQ(last, w2);
    ASSERT_OK(nrta_tensor_copy(t, 0, h, 0, 32, 1, tracker, &c1));
    ASSERT_OK(nrta_tensor_read(out, h, 0, 32, 0, NULL, &r1));
    ASSERT_OK(nrta_get_completion_handle(r1, &fd));
    pfd.fd = fd;
    pfd.events = POLLIN;
    ASSERT_EQ(poll(&pfd, 1, 10000), 1);
    close(fd);
    ASSERT_OK(nrta_is_completed(r1, &done));
    ASSERT_TRUE(done);
    /* One worker per vnc, in queue order: the earlier ones are done. */
    ASSERT_OK(nrta_is_completed(w1, &done));
    ASSERT_TRUE(done);
    ASSERT_OK(nrta_is_completed(c1, &done));
    ASSERT_TRUE(done);
    ASSERT_TRUE(memcmp(in, out, sizeof in) == 0);
    /* A completed request: the handle is readable at once. */
    ASSERT_OK(nrta_get_completion_handle(w2, &fd));
    pfd.fd = fd;
    ASSERT_EQ(poll(&pfd, 1, 0), 1);
    close(fd);

    /* Refused at queueing: bad range, queue, pointers. */
    ASSERT_STATUS(nrta_tensor_write(t, in, 20, 16, 0, tracker, &w1),
                  NRT_INVALID);
    ASSERT_STATUS(nrta_tensor_write(t, in, 0, 16, 2, tracker, &w1),
                  NRT_INVALID);
    ASSERT_STATUS(nrta_tensor_write(t, in, 0, 16, -1, tracker, &w1),
                  NRT_INVALID);
    ASSERT_STATUS(nrta_tensor_write(NULL, in, 0, 16, 0, tracker, &w1),
                  NRT_INVALID);
    ASSERT_STATUS(nrta_tensor_read(NULL, t, 0, 16, 0, tracker, &w1),
                  NRT_INVALID);
    ASSERT_STATUS(nrta_tensor_copy(t, 8, h, 0, 32, 0, tracker, &w1),
                  NRT_INVALID);
    ASSERT_STATUS(nrta_tensor_copy(t, 0, h, 0, 32, 5, tracker, &w1),
                  NRT_INVALID);
    ASSERT_STATUS(nrta_is_completed(w2, NULL), NRT_INVALID);
    ASSERT_STATUS(nrta_is_completed(w2 + 100, &done), NRT_INVALID);
    ASSERT_STATUS(nrta_is_completed(~0ull, &done), NRT_INVALID);
    ASSERT_STATUS(nrta_get_completion_handle(w2 + 100, &fd), NRT_INVALID);
    ASSERT_STATUS(nrta_get_completion_handle(w2, NULL), NRT_INVALID);

    /* Nothing failed while running. */
    ASSERT_OK(nrta_error_tracker_get_list(tracker, &errors, &nerr));
    ASSERT_UEQ(nerr, 0);
    ASSERT_STATUS(nrta_error_tracker_get_list(NULL, &errors, &nerr),
                  NRT_INVALID);
    ASSERT_STATUS(nrta_error_tracker_get_list(tracker, NULL, &nerr),
                  NRT_INVALID);
    nrta_error_tracker_destroy(tracker);
    nrta_error_tracker_destroy(NULL);
    nrt_tensor_free(&t);
    nrt_tensor_free(&h);
}

static void
test_async_execute(void)
{
    nrt_model_t *model = load_add(0);
    nrta_error_tracker_t *tracker = NULL;
    const nrta_error_t *errors = NULL;
    nrt_tensor_set_t *empty = NULL;
    size_t nerr = 0;
    struct add_io io;
    nrta_seq_t s1, s2, bad;
    bool done = false;
    float out[4];

    add_io_make(&io, 0);
    ASSERT_OK(nrt_allocate_tensor_set(&empty));
    ASSERT_OK(nrta_error_tracker_create(0, &tracker));
    ASSERT_OK(nrta_execute_schedule(model, io.in, io.outs, 0, tracker, &s1));
    ASSERT_OK(nrta_execute_schedule(model, io.in, io.outs, 0, tracker, &s2));
    /* Fails while running (no inputs): recorded in the tracker. */
    ASSERT_OK(nrta_execute_schedule(model, empty, io.outs, 0, tracker, &bad));
    ASSERT_OK(nrt_tensor_check_output_completion(io.out, 10 * 1000 * 1000, 2));
    ASSERT_OK(nrt_async_drain_queued_execs(0));
    ASSERT_OK(nrta_is_completed(bad, &done));
    ASSERT_TRUE(done);
    ASSERT_OK(nrt_tensor_read(io.out, out, 0, sizeof out));
    ASSERT_TRUE(out[1] == 22.0f);
    ASSERT_OK(nrta_error_tracker_get_list(tracker, &errors, &nerr));
    ASSERT_UEQ(nerr, 1);
    ASSERT_UEQ(errors[0].seq_id, bad);
    ASSERT_UEQ(errors[0].error_code, NRT_INVALID);
    /* Each error is returned once. */
    ASSERT_OK(nrta_error_tracker_get_list(tracker, &errors, &nerr));
    ASSERT_UEQ(nerr, 0);

    ASSERT_STATUS(nrta_execute_schedule(model, io.in, io.outs, 1, NULL, &s1),
                  NRT_INVALID);
    ASSERT_STATUS(nrta_execute_schedule(NULL, io.in, io.outs, 0, NULL, &s1),
                  NRT_INVALID);
    ASSERT_STATUS(nrta_execute_schedule(model, NULL, io.outs, 0, NULL, &s1),
                  NRT_INVALID);

    ASSERT_STATUS(nrta_cc_prepare(NULL, NULL, NULL, NRT_DTYPE_FLOAT32,
                                  NRT_OP_ADD, NRT_CC_ALLREDUCE, NULL),
                  NRT_INVALID);
    {
        nrt_cc_comm_t comm;
        nrt_tensor_list_t list = {.tensors = &io.a, .num_tensors = 1};
        nrt_cc_context_t *ctx = NULL;
        memset(&comm, 0, sizeof comm);
        ASSERT_STATUS(nrta_cc_prepare(&comm, &list, &list, NRT_DTYPE_FLOAT32,
                                      NRT_OP_ADD, NRT_CC_ALLREDUCE, &ctx),
                      NRT_INVALID);
        ASSERT_STR_CONTAINS(nrtemu_last_error(), "collectives");
        ASSERT_NULL(ctx);
        ASSERT_STATUS(nrta_cc_schedule(&ctx, 0, NULL, &s1), NRT_INVALID);
        ASSERT_STATUS(nrta_cc_schedule(NULL, 0, NULL, &s1), NRT_INVALID);
    }

    nrta_error_tracker_destroy(tracker);
    nrt_destroy_tensor_set(&empty);
    add_io_free(&io);
    ASSERT_OK(nrt_unload(model));
}

/* A request queued behind a slow one is still running at nrt_close: it
 * completes with NRT_CLOSED instead of hanging or touching freed state. */
static void
test_async_close_with_queue(void)
{
    nrt_tensor_t *t = NULL;
    nrta_error_tracker_t *tracker = NULL;
    unsigned char buf[64] = {0};
    nrta_seq_t seq;

    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "t", &t));
    ASSERT_OK(nrta_error_tracker_create(0, &tracker));
    for (int i = 0; i < 100; i++) {
        ASSERT_OK(
            nrta_tensor_write(t, buf, 0, sizeof buf, i % 2, tracker, &seq));
    }
    nrt_close();
    nrta_error_tracker_destroy(tracker);
    nrt_tensor_free(&t);
}

/* ------------------------------------------------- host-level collectives */

/* One rank of the global communicator of two: vnc = rank. */
static void *
host_rank(void *arg)
{
    uint32_t rank = (uint32_t)(uintptr_t)arg;
    uint32_t in = 100 + rank, out[2] = {0, 0};

    ASSERT_OK(nrt_build_global_comm((int32_t)rank, rank, 2));
    ASSERT_OK(nrt_cc_global_comm_init(rank, rank, 2)); /* again: no-op */
    ASSERT_OK(nrt_barrier((int32_t)rank, rank, 2));
    ASSERT_OK(nrt_all_gather((int32_t)rank, rank, 2, sizeof in, &in, out));
    ASSERT_UEQ(out[0], 100);
    ASSERT_UEQ(out[1], 101);
    ASSERT_OK(nrt_barrier((int32_t)rank, rank, 2));
    return NULL;
}

static void
test_host_collectives(void)
{
    pthread_t threads[2];
    uint32_t in = 7, out = 0;

    ASSERT_STATUS(nrt_build_global_comm(2, 0, 2), NRT_INVALID); /* 2 vncs */
    ASSERT_STATUS(nrt_build_global_comm(-1, 0, 2), NRT_INVALID);
    ASSERT_STATUS(nrt_cc_global_comm_init(0, 2, 2), NRT_INVALID);
    ASSERT_STATUS(nrt_barrier(0, 0, 0), NRT_INVALID);
    ASSERT_STATUS(nrt_all_gather(0, 0, 2, 4, NULL, &out), NRT_INVALID);
    ASSERT_STATUS(nrt_all_gather(0, 0, 2, 4, &in, NULL), NRT_INVALID);
    for (uintptr_t r = 0; r < 2; r++) {
        ASSERT_EQ(pthread_create(&threads[r], NULL, host_rank, (void *)r), 0);
    }
    for (int r = 0; r < 2; r++) {
        ASSERT_EQ(pthread_join(threads[r], NULL), 0);
    }
    /* vnc 0 is rank 0 of 2 until nrt_close. */
    ASSERT_STATUS(nrt_build_global_comm(0, 1, 2), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "rank 0 of 2");
    /* Rank 1 never comes: rank 0 gives up after the timeout, naming it,
     * and the communicator stays broken. */
    setenv("NEURON_RT_EXEC_TIMEOUT", "1", 1);
    ASSERT_STATUS(nrt_barrier(0, 0, 2), NRT_TIMEOUT);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "rank 1 did not reach");
    ASSERT_STATUS(nrt_all_gather(0, 0, 2, sizeof in, &in, &out),
                  NRT_EXEC_HW_ERR_COLLECTIVES);
    unsetenv("NEURON_RT_EXEC_TIMEOUT");
}

/* ---------------------------------------------------------- after close */

static void
test_after_close(void)
{
    nrt_tensor_t *t = NULL;
    nrta_error_tracker_t *tracker = NULL;
    nrta_seq_t seq;
    uint32_t n;
    int fd;

    nrt_close(); /* a second close is accepted */
    ASSERT_STATUS(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 8, "t", &t),
        NRT_CLOSED);
    ASSERT_STATUS(nrta_error_tracker_create(0, &tracker), NRT_CLOSED);
    ASSERT_STATUS(nrta_get_sequence(0, NRTA_XU_COMPUTE, 0, &seq), NRT_CLOSED);
    ASSERT_STATUS(nrt_async_drain_queued_execs(0), NRT_CLOSED);
    ASSERT_STATUS(nrt_inspect_stop(), NRT_CLOSED);
    ASSERT_STATUS(nrt_debug_client_connect(0, &fd), NRT_CLOSED);
    /* Queries of the instance still answer, from the environment. */
    ASSERT_OK(nrt_get_visible_vnc_count(&n));
    ASSERT_UEQ(n, 2);
}

int
main(void)
{
    test_begin("abi");
    RUN_TEST(test_before_init);
    RUN_TEST(test_nrtemu_extras);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "abi-test", "1.0"));
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_FAILURE);
    RUN_TEST(test_tensors);
    RUN_TEST(test_tensor_sets);
    RUN_TEST(test_models);
    RUN_TEST(test_system);
    RUN_TEST(test_host_collectives);
    RUN_TEST(test_debug_stream);
    RUN_TEST(test_sendrecv);
    RUN_TEST(test_continuous_profile);
    RUN_TEST(test_inspect);
    RUN_TEST(test_sys_trace);
    RUN_TEST(test_async_tensors);
    RUN_TEST(test_async_execute);
    RUN_TEST(test_async_close_with_queue);
    RUN_TEST(test_after_close);
    return 0;
}
