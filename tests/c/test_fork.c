/*
 * test_fork.c - a forked child and the runtime it inherits.
 *
 * The parent holds vncs 0-1 of a trn1.32xlarge (nc0-nc1) with a tensor, an
 * add model and, in one test, a long execution running on another thread
 * at the moment of the fork.  The child must never hang (alarm() turns a
 * hang into SIGALRM, which fails the test), must see NRT_CLOSED naming
 * fork and the parent's PID on every inherited handle, must find the
 * parent's cores busy under the parent's PID, and must run a runtime of
 * its own on nc2-nc3, async requests included (the parent's worker thread
 * is not the child's).  Afterwards the parent still owns its cores under
 * its own PID and still computes.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "neff_image.h"
#include "nrt/nrt_async.h"
#include "test.h"

#define CHILD_ALARM_S 60

/*
 * ThreadSanitizer cannot follow a child that starts a thread after a fork
 * from a multi-threaded parent: it still counts the parent's threads, and
 * dies when glibc hands their stacks to new ones.  Under it, the child of
 * the async test checks all but its own worker.
 */
#ifdef __SANITIZE_THREAD__
#define CHILD_MAY_START_THREADS 0
#else
#define CHILD_MAY_START_THREADS 1
#endif

/* ADD4_DEF, ADD4_PROGRAM: the 4-float add model (neff_image.h). */

#define BIG 512 /* the slow model's matrices are BIG x BIG */
#define BIG_BYTES (BIG * BIG * 4)

static nrt_model_t *
load(const char *def, const char *program, int vnc)
{
    nrt_model_t *model = NULL;
    size_t size;
    unsigned char *image = neff_image_simple("m", def, program, &size);

    ASSERT_OK(nrt_load(image, size, vnc, -1, &model));
    free(image);
    return model;
}

static nrt_tensor_t *
tensor_f32(int vnc, size_t bytes, const char *name)
{
    nrt_tensor_t *t = NULL;

    ASSERT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, bytes,
                                  name, &t));
    ASSERT_OK(nrt_tensor_memset(t, 0, 0, bytes));
    return t;
}

/* An add model on `vnc` with its tensors, a = {1,2,3,4}, b = {10,...}. */
struct add {
    nrt_model_t *model;
    nrt_tensor_t *a, *b, *out;
    nrt_tensor_set_t *in, *outs;
};

static void
add_make(struct add *m, int vnc)
{
    static const float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40};

    m->model = load(ADD4_DEF, ADD4_PROGRAM, vnc);
    m->a = tensor_f32(vnc, sizeof a, "a");
    m->b = tensor_f32(vnc, sizeof b, "b");
    m->out = tensor_f32(vnc, sizeof a, "out");
    ASSERT_OK(nrt_tensor_write(m->a, a, 0, sizeof a));
    ASSERT_OK(nrt_tensor_write(m->b, b, 0, sizeof b));
    ASSERT_OK(nrt_allocate_tensor_set(&m->in));
    ASSERT_OK(nrt_allocate_tensor_set(&m->outs));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(m->in, "a", m->a));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(m->in, "b", m->b));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(m->outs, "output_0", m->out));
}

static void
add_run_and_check(struct add *m)
{
    float out[4];

    ASSERT_OK(nrt_execute(m->model, m->in, m->outs));
    ASSERT_OK(nrt_tensor_read(m->out, out, 0, sizeof out));
    ASSERT_TRUE(out[0] == 11 && out[1] == 22 && out[2] == 33 && out[3] == 44);
}

static void
add_free(struct add *m)
{
    nrt_destroy_tensor_set(&m->in);
    nrt_destroy_tensor_set(&m->outs);
    nrt_tensor_free(&m->a);
    nrt_tensor_free(&m->b);
    nrt_tensor_free(&m->out);
    ASSERT_OK(nrt_unload(m->model));
}

/* `status` with a last error naming fork and the parent. */
static void
assert_forked(NRT_STATUS status, pid_t parent)
{
    char pid[32];

    ASSERT_STATUS(status, NRT_CLOSED);
    snprintf(pid, sizeof pid, "process %ld", (long)parent);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "fork");
    ASSERT_STR_CONTAINS(nrtemu_last_error(), pid);
}

/* NRT_RESOURCE from nrt_init naming `holder` as the owner of the cores. */
static void
assert_cores_held_by(pid_t holder)
{
    char text[64];

    snprintf(text, sizeof text, "Held by PID %ld", (long)holder);
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_RESOURCE);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), text);
}

/* The child's whole life: runs under alarm(), exits 0 when all holds. */
static void
child_main(pid_t parent, struct add *inherited)
{
    nrt_vnc_memory_stats_t stats;
    nrt_tensor_t *t = NULL;
    nrt_model_t *model = NULL;
    uint32_t visible = 0;
    size_t size;
    unsigned char *image;
    float out[4];
    struct add own;

    alarm(CHILD_ALARM_S);
    /* Every handle and call of the parent's runtime fails, naming it. */
    assert_forked(nrt_tensor_read(inherited->out, out, 0, sizeof out), parent);
    assert_forked(nrt_tensor_write(inherited->a, out, 0, sizeof out), parent);
    assert_forked(
        nrt_execute(inherited->model, inherited->in, inherited->outs), parent);
    assert_forked(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "new", &t),
        parent);
    ASSERT_NULL(t);
    assert_forked(nrt_get_vnc_memory_stats(0, &stats, sizeof stats, NULL),
                  parent);
    image = neff_image_simple("m", ADD4_DEF, ADD4_PROGRAM, &size);
    assert_forked(nrt_load(image, size, 0, -1, &model), parent);
    free(image);
    ASSERT_NULL(model);

    /* Closing is harmless, and the cores stay the parent's, under its
     * PID. */
    nrt_close();
    nrt_close();
    assert_cores_held_by(parent);

    /* A runtime of our own, on free cores, where the parent's thread may
     * have been executing on our vnc 0 (its own vnc 0) at the fork. */
    setenv("NEURON_RT_VISIBLE_CORES", "2-3", 1);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    ASSERT_OK(nrt_get_visible_vnc_count(&visible));
    ASSERT_UEQ(visible, 2);
    add_make(&own, 0);
    add_run_and_check(&own);
    add_free(&own);
    /* The inherited handles stay the parent's, even now. */
    assert_forked(nrt_tensor_read(inherited->out, out, 0, sizeof out), parent);
    assert_forked(
        nrt_execute(inherited->model, inherited->in, inherited->outs), parent);
    nrt_close();
    /* Freeing them releases only our copies. */
    add_free(inherited);
    _exit(0);
}

/* Wait for a child; a test failure unless it exited with 0. */
static void
child_wait(pid_t pid)
{
    int wstatus = 0;

    ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
    if (WIFSIGNALED(wstatus)) {
        TEST_FAIL_("the child died of signal %d%s", WTERMSIG(wstatus),
                   WTERMSIG(wstatus) == SIGALRM ? " (it hung)" : "");
    }
    ASSERT_TRUE(WIFEXITED(wstatus));
    ASSERT_EQ(WEXITSTATUS(wstatus), 0);
}

/* Fork a child that runs child_main, and check that it passed. */
static void
fork_and_check_child(struct add *inherited)
{
    pid_t parent = getpid(), pid;

    fflush(stderr);
    pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        child_main(parent, inherited);
    }
    child_wait(pid);
}

/* After a child came and went, the parent still owns its cores under its
 * own PID (another child, which inherits nothing usable, probes them). */
static void
parent_still_owns_cores(void)
{
    pid_t parent = getpid(), pid;

    fflush(stderr);
    pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        alarm(CHILD_ALARM_S);
        assert_cores_held_by(parent);
        _exit(0);
    }
    child_wait(pid);
}

static void
parent_setup(void)
{
    setenv("NRTPY_EMU_INSTANCE", "trn1.32xlarge", 1);
    setenv("NRTPY_EMU_HBM_PER_CORE", "256MiB", 1);
    setenv("NEURON_RT_VISIBLE_CORES", "0-1", 1);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
}

static void
test_fork_idle(void)
{
    struct add m;

    parent_setup();
    add_make(&m, 0);
    add_run_and_check(&m);
    fork_and_check_child(&m);
    parent_still_owns_cores();
    add_run_and_check(&m);
    add_free(&m);
    nrt_close();
}

/* ----------------------------------------- fork during an execution */

struct slow {
    nrt_model_t *model;
    nrt_tensor_t *x, *out;
    nrt_tensor_set_t *in, *outs;
    atomic_bool started;
    NRT_STATUS status;
};

static void *
slow_main(void *arg)
{
    struct slow *s = arg;

    atomic_store(&s->started, true);
    s->status = nrt_execute(s->model, s->in, s->outs);
    return NULL;
}

static void
test_fork_during_execution(void)
{
    char def[1024];
    char *program = matmul_chain_program(4000, BIG, false);
    struct slow s;
    struct add m;
    pthread_t thread;

    parent_setup();
    add_make(&m, 0);
    snprintf(def, sizeof def,
             "{\"var\": {"
             "\"x\": {\"type\": \"input\", \"size\": %d, \"shape\": [%d, %d], "
             "\"dtype\": \"float32\"}, "
             "\"output_0\": {\"type\": \"output\", \"size\": %d, "
             "\"shape\": [%d, %d], \"dtype\": \"float32\"}}, "
             "\"emulator_program\": \"program.json\"}",
             BIG_BYTES, BIG, BIG, BIG_BYTES, BIG, BIG);
    /* The execution outlasts the child, then the timeout ends it. */
    setenv("NEURON_RT_EXEC_TIMEOUT", "3", 1);
    s.model = load(def, program, 0);
    unsetenv("NEURON_RT_EXEC_TIMEOUT");
    free(program);
    s.x = tensor_f32(0, BIG_BYTES, "x");
    s.out = tensor_f32(0, BIG_BYTES, "out");
    ASSERT_OK(nrt_allocate_tensor_set(&s.in));
    ASSERT_OK(nrt_allocate_tensor_set(&s.outs));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(s.in, "x", s.x));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(s.outs, "output_0", s.out));
    atomic_init(&s.started, false);

    ASSERT_EQ(pthread_create(&thread, NULL, slow_main, &s), 0);
    while (!atomic_load(&s.started)) {
        usleep(1000);
    }
    /* Well inside the execution: vnc 0's execution lock is held. */
    usleep(300 * 1000);
    fork_and_check_child(&m);
    ASSERT_EQ(pthread_join(thread, NULL), 0);
    ASSERT_STATUS(s.status, NRT_TIMEOUT);

    parent_still_owns_cores();
    add_run_and_check(&m);
    add_free(&m);
    nrt_destroy_tensor_set(&s.in);
    nrt_destroy_tensor_set(&s.outs);
    nrt_tensor_free(&s.x);
    nrt_tensor_free(&s.out);
    ASSERT_OK(nrt_unload(s.model));
    nrt_close();
}

/* Write `data` to `t` through vnc 0's async worker and wait for it. */
static void
async_write(nrt_tensor_t *t, const float data[4])
{
    nrta_seq_t seq;
    bool done = false;

    ASSERT_OK(nrta_tensor_write(t, data, 0, 4 * sizeof *data, 0, NULL, &seq));
    while (!done) {
        ASSERT_OK(nrta_is_completed(seq, &done));
        if (!done) {
            usleep(1000);
        }
    }
}

/* The parent's async worker is a thread the child does not have: the
 * child's requests must get a worker of their own. */
static void
test_fork_with_async_worker(void)
{
    static const float one[4] = {1, 1, 1, 1}, two[4] = {2, 2, 2, 2};
    nrt_tensor_t *t, *own;
    pid_t parent = getpid(), pid;
    float out[4];
    nrta_seq_t seq;

    parent_setup();
    t = tensor_f32(0, sizeof one, "t");
    async_write(t, one);
    fflush(stderr);
    pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        alarm(CHILD_ALARM_S);
        assert_forked(nrta_tensor_write(t, two, 0, sizeof two, 0, NULL, &seq),
                      parent);
        setenv("NEURON_RT_VISIBLE_CORES", "2-3", 1);
        ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
        own = tensor_f32(0, sizeof two, "own");
        if (CHILD_MAY_START_THREADS) {
            async_write(own, two);
            ASSERT_OK(nrt_tensor_read(own, out, 0, sizeof out));
            ASSERT_TRUE(memcmp(out, two, sizeof out) == 0);
        }
        nrt_tensor_free(&own);
        nrt_close();
        _exit(0);
    }
    child_wait(pid);
    /* The parent's worker carries on. */
    async_write(t, two);
    ASSERT_OK(nrt_tensor_read(t, out, 0, sizeof out));
    ASSERT_TRUE(memcmp(out, two, sizeof out) == 0);
    nrt_tensor_free(&t);
    nrt_close();
}

/* A child forked with no runtime open has nothing inherited to refuse. */
static void
test_fork_without_runtime(void)
{
    pid_t pid;

    parent_setup();
    nrt_close();
    fflush(stderr);
    pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        struct add own;

        alarm(CHILD_ALARM_S);
        ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
        add_make(&own, 0);
        add_run_and_check(&own);
        add_free(&own);
        nrt_close();
        _exit(0);
    }
    child_wait(pid);
}

int
main(void)
{
    test_begin("fork");
    RUN_TEST(test_fork_idle);
    RUN_TEST(test_fork_during_execution);
    RUN_TEST(test_fork_with_async_worker);
    RUN_TEST(test_fork_without_runtime);
    return 0;
}
