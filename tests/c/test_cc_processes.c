/*
 * test_cc_processes.c - the host-level collectives (nrt_build_global_comm,
 * nrt_barrier, nrt_all_gather) across two processes that meet through
 * NEURON_RT_ROOT_COMM_ID on loopback, each on its own core of one
 * emulated machine; two collective models and the host-level collectives
 * of each process on its one communicator, and models executed in another
 * order on each rank, which fail naming both; and a rank whose peer never
 * starts, which times out naming it.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "neff_image.h"
#include "test.h"

#include "nrt/nrt_experimental.h"

#define CHILD_ALARM_S 60

/* A port no one listens on now (the kernel's choice). */
static int
free_port(void)
{
    struct sockaddr_in sa = {0};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    ASSERT_TRUE(fd >= 0);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    ASSERT_EQ(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

/* Rank `rank` of 2 on core `rank`: barrier, all-gather, barrier. */
static void
rank_main(uint32_t rank)
{
    uint64_t in = 0x1000 + rank, out[2] = {0, 0};
    char core[8];

    alarm(CHILD_ALARM_S);
    snprintf(core, sizeof core, "%u", rank);
    setenv("NEURON_RT_VISIBLE_CORES", core, 1);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    ASSERT_OK(nrt_build_global_comm(0, rank, 2));
    ASSERT_OK(nrt_barrier(0, rank, 2));
    ASSERT_OK(nrt_all_gather(0, rank, 2, sizeof in, &in, out));
    ASSERT_UEQ(out[0], 0x1000);
    ASSERT_UEQ(out[1], 0x1001);
    ASSERT_OK(nrt_barrier(0, rank, 2));
    nrt_close();
    _exit(0);
}

/* A NEFF of one all_reduce of float32[4] "x" ("sum" or "max") into
 * "output_0". */
#define AR_DEF                                                           \
    "{\"var\": {"                                                        \
    "\"x\": {\"type\": \"input\", \"var_id\": 0, \"size\": 16, "         \
    "\"shape\": [4], \"dtype\": \"float32\"}, "                          \
    "\"output_0\": {\"type\": \"output\", \"var_id\": 1, \"size\": 16, " \
    "\"shape\": [4], \"dtype\": \"float32\"}}, "                         \
    "\"emulator_program\": \"program.json\"}"
#define AR_PROGRAM(reduce)                                                   \
    "{\"format\": \"nrtpy-emulator-program\", \"version\": 1, "              \
    "\"buffers\": {"                                                         \
    "\"x\": {\"kind\": \"input\", \"dtype\": \"float32\", \"shape\": [4]}, " \
    "\"output_0\": {\"kind\": \"output\", \"dtype\": \"float32\", "          \
    "\"shape\": [4]}}, "                                                     \
    "\"ops\": [{\"op\": \"all_reduce\", \"in\": [\"x\"], "                   \
    "\"out\": \"output_0\", \"reduce\": \"" reduce "\"}]}"

/* One rank's model, and its I/O: x = {rank + 1, ...}. */
struct ar_model {
    nrt_model_t *model;
    nrt_tensor_t *x, *out;
    nrt_tensor_set_t *in_set, *out_set;
};

static void
ar_load(struct ar_model *m, const char *name, const char *program,
        uint32_t rank)
{
    float x[4];
    size_t size;
    unsigned char *image = neff_image_simple(name, AR_DEF, program, &size);

    for (int i = 0; i < 4; i++) {
        x[i] = (float)(rank + 1) * (float)(i + 1);
    }
    ASSERT_OK(nrt_load_collectives(image, size, 0, 1, rank, 2, &m->model));
    free(image);
    ASSERT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, sizeof x,
                                  "x", &m->x));
    ASSERT_OK(nrt_tensor_write(m->x, x, 0, sizeof x));
    ASSERT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, sizeof x,
                                  "output_0", &m->out));
    ASSERT_OK(nrt_allocate_tensor_set(&m->in_set));
    ASSERT_OK(nrt_allocate_tensor_set(&m->out_set));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(m->in_set, "x", m->x));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(m->out_set, "output_0", m->out));
}

/* Execute; output_0[i] must be want * (i + 1). */
static void
ar_run(struct ar_model *m, float want)
{
    float out[4];

    ASSERT_OK(nrt_execute(m->model, m->in_set, m->out_set));
    ASSERT_OK(nrt_tensor_read(m->out, out, 0, sizeof out));
    for (int i = 0; i < 4; i++) {
        ASSERT_TRUE(out[i] == want * (float)(i + 1));
    }
}

static void
ar_unload(struct ar_model *m)
{
    nrt_destroy_tensor_set(&m->in_set);
    nrt_destroy_tensor_set(&m->out_set);
    nrt_tensor_free(&m->x);
    nrt_tensor_free(&m->out);
    ASSERT_OK(nrt_unload(m->model));
}

/* Rank `rank` of 2: two collective models and the host-level collectives
 * in turn, on the rank's one communicator; one model unloaded, the other
 * goes on.  With `mismatch`, rank 0 executes "sum" while rank 1 executes
 * "max": both fail, naming both. */
static void
models_rank_main(uint32_t rank, bool mismatch)
{
    struct ar_model sum, max;
    char core[8];

    alarm(CHILD_ALARM_S);
    snprintf(core, sizeof core, "%u", rank);
    setenv("NEURON_RT_VISIBLE_CORES", core, 1);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    ar_load(&sum, "sum", AR_PROGRAM("sum"), rank);
    ASSERT_OK(nrt_build_global_comm(0, rank, 2));
    ar_load(&max, "max", AR_PROGRAM("max"), rank);
    if (mismatch) {
        nrt_model_t *model = rank == 0 ? sum.model : max.model;
        nrt_tensor_set_t *in = rank == 0 ? sum.in_set : max.in_set;
        nrt_tensor_set_t *out = rank == 0 ? sum.out_set : max.out_set;
        ASSERT_STATUS(nrt_execute(model, in, out),
                      NRT_EXEC_HW_ERR_COLLECTIVES);
        ASSERT_STR_CONTAINS(nrtemu_last_error(), "model 'sum'");
        ASSERT_STR_CONTAINS(nrtemu_last_error(), "model 'max'");
        /* (broken for good: at once) */
        ASSERT_STATUS(nrt_barrier(0, rank, 2), NRT_EXEC_HW_ERR_COLLECTIVES);
    } else {
        for (int i = 0; i < 3; i++) {
            ar_run(&sum, 3.0f);
            ASSERT_OK(nrt_barrier(0, rank, 2));
            ar_run(&max, 2.0f);
        }
        ar_unload(&max);
        ASSERT_OK(nrt_barrier(0, rank, 2));
        ar_run(&sum, 3.0f);
    }
    nrt_close();
    _exit(0);
}

static void
child_wait(pid_t pid)
{
    int status = 0;

    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
}

static void
set_root(void)
{
    char root[32];

    snprintf(root, sizeof root, "127.0.0.1:%d", free_port());
    setenv("NEURON_RT_ROOT_COMM_ID", root, 1);
    setenv("NEURON_RT_EXEC_TIMEOUT", "20", 1);
}

static void
test_two_processes(void)
{
    pid_t pids[2];

    set_root();
    fflush(stderr);
    for (uint32_t r = 0; r < 2; r++) {
        pids[r] = fork();
        ASSERT_TRUE(pids[r] >= 0);
        if (pids[r] == 0) {
            rank_main(r);
        }
    }
    child_wait(pids[0]);
    child_wait(pids[1]);
}

static void
test_models_share_the_communicator(void)
{
    pid_t pids[2];

    for (int mismatch = 0; mismatch < 2; mismatch++) {
        set_root();
        fflush(stderr);
        for (uint32_t r = 0; r < 2; r++) {
            pids[r] = fork();
            ASSERT_TRUE(pids[r] >= 0);
            if (pids[r] == 0) {
                models_rank_main(r, mismatch);
            }
        }
        child_wait(pids[0]);
        child_wait(pids[1]);
    }
}

/* Rank 1 never starts: rank 0's barrier times out naming it. */
static void
test_missing_process(void)
{
    set_root();
    setenv("NEURON_RT_EXEC_TIMEOUT", "1", 1);
    setenv("NEURON_RT_VISIBLE_CORES", "0", 1);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    ASSERT_STATUS(nrt_barrier(0, 0, 2), NRT_TIMEOUT);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "rank 1 did not join the rendezvous");
    ASSERT_STATUS(nrt_barrier(0, 0, 2), NRT_EXEC_HW_ERR_COLLECTIVES);
    nrt_close();
    /* A malformed address is refused before anything waits. */
    setenv("NEURON_RT_ROOT_COMM_ID", "localhost", 1);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    ASSERT_STATUS(nrt_barrier(0, 0, 2), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "is not <host>:<port>");
    nrt_close();
    unsetenv("NEURON_RT_ROOT_COMM_ID");
    unsetenv("NEURON_RT_EXEC_TIMEOUT");
}

int
main(void)
{
    test_begin("cc_processes");
    RUN_TEST(test_two_processes);
    RUN_TEST(test_models_share_the_communicator);
    RUN_TEST(test_missing_process);
    return 0;
}
