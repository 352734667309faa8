/*
 * test_cc_processes.c - the host-level collectives (nrt_build_global_comm,
 * nrt_barrier, nrt_all_gather) across two processes that meet through
 * NEURON_RT_ROOT_COMM_ID on loopback, each on its own core of one
 * emulated machine; and a rank whose peer never starts, which times out
 * naming it.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

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
    RUN_TEST(test_missing_process);
    return 0;
}
