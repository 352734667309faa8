/*
 * test_core_lock.c - cores are owned by one process at a time, and a
 * namespace's folder goes with its last process.
 *
 * A forked child plays the other process: it calls nrt_init() with the
 * environment the parent prepared, reports the status through a pipe and
 * holds its cores until told to exit (it then closes its runtime) or
 * killed.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
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
        nrt_close();
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

/* PID written in a lock file, 0 when empty, -1 when there is none (the
 * sweep at a release removes the files of free cores). */
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

    /* All cores (the default): refused, and core 0 is not left locked
     * (its lock file is swept away). */
    unsetenv("NEURON_RT_VISIBLE_CORES");
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_RESOURCE);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "Requested:nc0-nc1 Busy:nc1-nc1");
    ASSERT_EQ(lock_file_pid("trn1.2xlarge", 0), -1);

    setenv("NEURON_RT_VISIBLE_CORES", "0", 1);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    ASSERT_EQ(lock_file_pid("trn1.2xlarge", 0), getpid());
    nrt_close();
    ASSERT_EQ(lock_file_pid("trn1.2xlarge", 0), -1);

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
    /* Physical core 2 was taken and given back (and its file swept). */
    ASSERT_EQ(lock_file_pid(inst, 2), -1);

    /* Two free contiguous vncs: 0 is free but 1 is not, so 2-3 (0's
     * files, given back within the claim, stay until a release). */
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

/* Whether `path` exists (-1 on an error other than ENOENT). */
static int
exists(const char *path)
{
    struct stat st;

    if (stat(path, &st) == 0) {
        return 1;
    }
    return errno == ENOENT ? 0 : -1;
}

static void
test_namespace_folder_goes_with_last_process(void)
{
    char root[512], ns_dir[600], notes[700];
    struct holder child;
    FILE *f;

    xdg_begin();
    snprintf(root, sizeof root, "%s/nrtpy-emu", xdg_dir);
    snprintf(ns_dir, sizeof ns_dir, "%s/%s", root,
             getenv("NRTPY_EMU_NAMESPACE"));

    /* Alone: the folder goes with our close; the root, shared by every
     * namespace, stays. */
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    ASSERT_EQ(exists(ns_dir), 1);
    nrt_close();
    ASSERT_EQ(exists(ns_dir), 0);
    ASSERT_EQ(exists(root), 1);

    /* Another process still holds a core: the folder stays (our free lock
     * file goes) until that process closes too. */
    setenv("NEURON_RT_VISIBLE_CORES", "1", 1);
    child = holder_start(NRT_SUCCESS);
    setenv("NEURON_RT_VISIBLE_CORES", "0", 1);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    nrt_close();
    ASSERT_EQ(exists(ns_dir), 1);
    ASSERT_EQ(lock_file_pid("trn1.2xlarge", 1), child.pid);
    ASSERT_EQ(lock_file_pid("trn1.2xlarge", 0), -1);
    holder_stop(&child, false);
    ASSERT_EQ(exists(ns_dir), 0);

    /* A refused claim sweeps too: the lock file of the core it took and
     * gave back goes, the holder's stays. */
    setenv("NEURON_RT_VISIBLE_CORES", "1", 1);
    child = holder_start(NRT_SUCCESS);
    unsetenv("NEURON_RT_VISIBLE_CORES");
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_RESOURCE);
    ASSERT_EQ(lock_file_pid("trn1.2xlarge", 0), -1);
    ASSERT_EQ(lock_file_pid("trn1.2xlarge", 1), child.pid);
    holder_stop(&child, false);
    ASSERT_EQ(exists(ns_dir), 0);

    /* A crashed holder cannot remove anything; the next process out
     * removes the folder, the crashed holder's lock file with it. */
    setenv("NEURON_RT_VISIBLE_CORES", "1", 1);
    child = holder_start(NRT_SUCCESS);
    holder_stop(&child, true);
    ASSERT_EQ(exists(ns_dir), 1);
    setenv("NEURON_RT_VISIBLE_CORES", "0", 1);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    nrt_close();
    ASSERT_EQ(exists(ns_dir), 0);

    /* Cores of another instance in the same namespace keep it, too. */
    setenv("NRTPY_EMU_INSTANCE", "inf2.xlarge", 1);
    child = holder_start(NRT_SUCCESS);
    unsetenv("NRTPY_EMU_INSTANCE");
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    nrt_close();
    ASSERT_EQ(lock_file_pid("inf2.xlarge", 0), child.pid);
    holder_stop(&child, false);
    ASSERT_EQ(exists(ns_dir), 0);

    /* A file that is not a lock file is left alone, and keeps its
     * folders. */
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    snprintf(notes, sizeof notes, "%s/trn1.2xlarge/notes.txt", ns_dir);
    f = fopen(notes, "w");
    ASSERT_NOT_NULL(f);
    fclose(f);
    nrt_close();
    ASSERT_EQ(exists(notes), 1);
    ASSERT_EQ(lock_file_pid("trn1.2xlarge", 0), -1);
    ASSERT_EQ(unlink(notes), 0);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    nrt_close();
    ASSERT_EQ(exists(ns_dir), 0);
    unsetenv("NEURON_RT_VISIBLE_CORES");
    xdg_end();
}

/* What the racing processes saw, in memory they share. */
struct race_tally {
    atomic_int holders;  /* processes holding core 0 right now */
    atomic_int overlaps; /* claims granted while another held it */
    atomic_int granted;  /* claims granted */
    atomic_int failed;   /* claims failed other than busy */
    char failure[256];   /* the first failure's message */
    atomic_flag failure_taken;
};

#define RACERS 4
#define RACE_ROUNDS 300

/*
 * Processes claiming and releasing one core in a loop, so that sweeps
 * (each release) run between other processes' mkdir, open and lock: the
 * core must never have two owners, and no claim may fail on a folder
 * removed under it.
 */
static void
test_sweeps_race_claims(void)
{
    struct race_tally *tally;
    char ns_dir[512];
    pid_t pids[RACERS];

    xdg_begin();
    snprintf(ns_dir, sizeof ns_dir, "%s/nrtpy-emu/%s", xdg_dir,
             getenv("NRTPY_EMU_NAMESPACE"));
    tally = mmap(NULL, sizeof *tally, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_TRUE(tally != MAP_FAILED);
    memset(tally, 0, sizeof *tally);
    atomic_flag_clear(&tally->failure_taken);
    setenv("NEURON_RT_VISIBLE_CORES", "0", 1);
    for (int i = 0; i < RACERS; i++) {
        pids[i] = fork();
        ASSERT_TRUE(pids[i] >= 0);
        if (pids[i] != 0) {
            continue;
        }
        for (int round = 0; round < RACE_ROUNDS; round++) {
            NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
            if (st == NRT_SUCCESS) {
                if (atomic_fetch_add(&tally->holders, 1) != 0) {
                    atomic_fetch_add(&tally->overlaps, 1);
                }
                atomic_fetch_add(&tally->granted, 1);
                sched_yield();
                atomic_fetch_sub(&tally->holders, 1);
                nrt_close();
            } else if (st != NRT_RESOURCE) {
                atomic_fetch_add(&tally->failed, 1);
                if (!atomic_flag_test_and_set(&tally->failure_taken)) {
                    snprintf(tally->failure, sizeof tally->failure, "%s",
                             nrtemu_last_error());
                }
            }
        }
        _exit(0);
    }
    for (int i = 0; i < RACERS; i++) {
        int wstatus = 0;
        ASSERT_EQ(waitpid(pids[i], &wstatus, 0), pids[i]);
        ASSERT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
    }
    int failed = atomic_load(&tally->failed);
    int overlaps = atomic_load(&tally->overlaps);
    int granted = atomic_load(&tally->granted);
    if (failed != 0) {
        fprintf(stderr, "first failure: %s\n", tally->failure);
    }
    ASSERT_EQ(failed, 0);
    ASSERT_EQ(overlaps, 0);
    ASSERT_TRUE(granted > 0);
    /* Every racer closed: the last one out removed the folder. */
    ASSERT_EQ(exists(ns_dir), 0);
    munmap(tally, sizeof *tally);
    unsetenv("NEURON_RT_VISIBLE_CORES");
    xdg_end();
}

int
main(void)
{
    test_begin("test_core_lock");
    RUN_TEST(test_busy_core_names_holder);
    RUN_TEST(test_close_releases_cores);
    RUN_TEST(test_logical_core_sizes_share_physical_cores);
    RUN_TEST(test_lock_directory_checks);
    RUN_TEST(test_namespace_folder_goes_with_last_process);
    RUN_TEST(test_sweeps_race_claims);
    return 0;
}
