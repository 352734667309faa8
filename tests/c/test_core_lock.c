/*
 * test_core_lock.c - cores are owned by one process at a time.
 *
 * A forked child plays the other process: it calls nrt_init() with the
 * environment the parent prepared, reports the status through a pipe and
 * holds its cores until told to exit or killed.
 */
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "test.h"

struct holder {
    pid_t pid;
    int release_fd; /* closing it lets the child exit */
};

static struct holder
holder_start(NRT_STATUS expected)
{
    struct holder h;
    int up[2], down[2];
    int status = -1;

    ASSERT_EQ(pipe(up), 0);
    ASSERT_EQ(pipe(down), 0);
    h.pid = fork();
    ASSERT_TRUE(h.pid >= 0);
    if (h.pid == 0) {
        char c;
        close(up[0]);
        close(down[1]);
        status = (int)nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
        if (write(up[1], &status, sizeof status) != sizeof status) {
            _exit(2);
        }
        /* Hold the cores until the parent closes its end. */
        while (read(down[0], &c, 1) < 0 && errno == EINTR) {
        }
        _exit(0);
    }
    close(up[1]);
    close(down[0]);
    ASSERT_EQ(read(up[0], &status, sizeof status), sizeof status);
    close(up[0]);
    ASSERT_STATUS((NRT_STATUS)status, expected);
    h.release_fd = down[1];
    return h;
}

static void
holder_stop(struct holder *h, bool crash)
{
    int wstatus = 0;

    if (crash) {
        /* The kernel drops the child's locks; nothing else cleans up. */
        ASSERT_EQ(kill(h->pid, SIGKILL), 0);
    }
    close(h->release_fd);
    ASSERT_EQ(waitpid(h->pid, &wstatus, 0), h->pid);
    if (!crash) {
        ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
    }
}

static char xdg_dir[256];

/* A private XDG_RUNTIME_DIR, so lock file paths are known to the test. */
static void
xdg_begin(void)
{
    snprintf(xdg_dir, sizeof xdg_dir, "/tmp/nrtpy-ctest-xdg-XXXXXX");
    ASSERT_NOT_NULL(mkdtemp(xdg_dir));
    setenv("XDG_RUNTIME_DIR", xdg_dir, 1);
}

static int
remove_entry(const char *path, const struct stat *st, int flag,
             struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void
xdg_end(void)
{
    nftw(xdg_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    unsetenv("XDG_RUNTIME_DIR");
}

/* PID written in a lock file, 0 when empty. */
static long
lock_file_pid(const char *instance, unsigned core)
{
    char path[512], buf[32] = {0};
    FILE *f;

    snprintf(path, sizeof path, "%s/nrtpy-emu/%s/%s/nc%u.lock", xdg_dir,
             getenv("NRTPY_EMU_NAMESPACE"), instance, core);
    f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    if (fgets(buf, sizeof buf, f) == NULL) {
        buf[0] = '\0';
    }
    fclose(f);
    return strtol(buf, NULL, 10);
}

static void
test_busy_core_names_holder(void)
{
    char pid_text[64];
    struct holder child;

    xdg_begin();
    setenv("NEURON_RT_VISIBLE_CORES", "1", 1);
    child = holder_start(NRT_SUCCESS);
    snprintf(pid_text, sizeof pid_text, "Held by PID %ld", (long)child.pid);
    ASSERT_EQ(lock_file_pid("trn1.2xlarge", 1), child.pid);

    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_RESOURCE);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "nrt_init: NeuronCore(s) not available - "
                        "Requested:nc1-nc1 Busy:nc1-nc1");
    ASSERT_STR_CONTAINS(nrtemu_last_error(), pid_text);

    /* All cores (the default): refused, and core 0 is not left locked. */
    unsetenv("NEURON_RT_VISIBLE_CORES");
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_RESOURCE);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "Requested:nc0-nc1 Busy:nc1-nc1");
    ASSERT_EQ(lock_file_pid("trn1.2xlarge", 0), 0);

    setenv("NEURON_RT_VISIBLE_CORES", "0", 1);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    ASSERT_EQ(lock_file_pid("trn1.2xlarge", 0), getpid());
    nrt_close();
    ASSERT_EQ(lock_file_pid("trn1.2xlarge", 0), 0);

    /* NUM_CORES takes the first free cores. */
    unsetenv("NEURON_RT_VISIBLE_CORES");
    setenv("NEURON_RT_NUM_CORES", "1", 1);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    ASSERT_EQ(lock_file_pid("trn1.2xlarge", 0), getpid());
    nrt_close();
    setenv("NEURON_RT_NUM_CORES", "2", 1);
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_RESOURCE);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "Requested:2 contiguous Available:1 Busy:nc1-nc1");
    ASSERT_STR_CONTAINS(nrtemu_last_error(), pid_text);
    unsetenv("NEURON_RT_NUM_CORES");

    /* Another namespace is another machine. */
    setenv("NRTPY_EMU_NAMESPACE", "ctest-core-lock-other", 1);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    nrt_close();
    test_reset_env();

    /* Another instance profile is another machine, too. */
    setenv("NRTPY_EMU_INSTANCE", "inf2.xlarge", 1);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    nrt_close();
    unsetenv("NRTPY_EMU_INSTANCE");

    /* A crashed holder frees its cores. */
    holder_stop(&child, true);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    ASSERT_EQ(lock_file_pid("trn1.2xlarge", 1), getpid());
    nrt_close();
    xdg_end();
}

static void
test_close_releases_cores(void)
{
    struct holder child;

    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    nrt_close();
    /* The child inherits a closed runtime and must get every core. */
    child = holder_start(NRT_SUCCESS);
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_RESOURCE);
    holder_stop(&child, false);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    nrt_close();
}

static void
test_logical_core_sizes_share_physical_cores(void)
{
    struct holder child;
    const char *inst = "trn2.48xlarge";
    uint32_t n;

    xdg_begin();
    setenv("NRTPY_EMU_INSTANCE", inst, 1);
    /* LNC=1: vnc 3 is physical core 3, half of LNC=2's vnc 1. */
    setenv("NEURON_LOGICAL_NC_CONFIG", "1", 1);
    setenv("NEURON_RT_VISIBLE_CORES", "3", 1);
    child = holder_start(NRT_SUCCESS);

    setenv("NEURON_LOGICAL_NC_CONFIG", "2", 1);
    setenv("NEURON_RT_VISIBLE_CORES", "1", 1);
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_RESOURCE);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "Requested:nc1-nc1 Busy:nc1-nc1");
    /* Physical core 2 was taken and given back. */
    ASSERT_EQ(lock_file_pid(inst, 2), 0);

    /* Two free contiguous vncs: 0 is free but 1 is not, so 2-3. */
    unsetenv("NEURON_RT_VISIBLE_CORES");
    setenv("NEURON_RT_NUM_CORES", "2", 1);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    ASSERT_OK(nrt_get_visible_vnc_count(&n));
    ASSERT_UEQ(n, 2);
    ASSERT_EQ(lock_file_pid(inst, 0), 0);
    ASSERT_EQ(lock_file_pid(inst, 1), 0);
    ASSERT_EQ(lock_file_pid(inst, 3), child.pid);
    for (unsigned p = 4; p < 8; p++) {
        ASSERT_EQ(lock_file_pid(inst, p), getpid());
    }
    nrt_close();
    holder_stop(&child, false);
    xdg_end();
}

static void
test_lock_directory_checks(void)
{
    char path[512];

    xdg_begin();
    /* A root opened up to others is refused, not repaired. */
    snprintf(path, sizeof path, "%s/nrtpy-emu", xdg_dir);
    ASSERT_EQ(mkdir(path, 0700), 0);
    ASSERT_EQ(chmod(path, 0777), 0);
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_FAILURE);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "refusing");
    ASSERT_STR_CONTAINS(nrtemu_last_error(), path);
    ASSERT_EQ(chmod(path, 0700), 0);

    /* The same for the namespace directory. */
    snprintf(path, sizeof path, "%s/nrtpy-emu/%s", xdg_dir,
             getenv("NRTPY_EMU_NAMESPACE"));
    ASSERT_EQ(mkdir(path, 0700), 0);
    ASSERT_EQ(chmod(path, 0770), 0);
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_FAILURE);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "refusing");
    ASSERT_EQ(chmod(path, 0700), 0);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    nrt_close();

    /* Namespaces are single path components. */
    static const char *const bad[] = {"../escape", "a/b", ".", "..",
                                      "white space"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("NRTPY_EMU_NAMESPACE", bad[i], 1);
        ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
        ASSERT_STR_CONTAINS(nrtemu_last_error(), "NRTPY_EMU_NAMESPACE");
    }
    test_reset_env();
    xdg_end();

    /* An unusable XDG_RUNTIME_DIR falls back to /tmp/nrtpy-emu-<uid>. */
    struct stat st;
    setenv("XDG_RUNTIME_DIR", "/nonexistent/xdg", 1);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    snprintf(path, sizeof path, "/tmp/nrtpy-emu-%ld/%s/trn1.2xlarge/nc0.lock",
             (long)geteuid(), getenv("NRTPY_EMU_NAMESPACE"));
    ASSERT_EQ(stat(path, &st), 0);
    snprintf(path, sizeof path, "/tmp/nrtpy-emu-%ld", (long)geteuid());
    ASSERT_EQ(stat(path, &st), 0);
    ASSERT_EQ(st.st_mode & 0777, 0700);
    nrt_close();
    unsetenv("XDG_RUNTIME_DIR");
}

int
main(void)
{
    test_begin("test_core_lock");
    RUN_TEST(test_busy_core_names_holder);
    RUN_TEST(test_close_releases_cores);
    RUN_TEST(test_logical_core_sizes_share_physical_cores);
    RUN_TEST(test_lock_directory_checks);
    return 0;
}
