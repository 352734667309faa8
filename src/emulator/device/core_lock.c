/*
 * core_lock.c - NeuronCore ownership across processes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device/core_lock.h"
#include "util/env_parse.h"
#include "util/error.h"

#define MAX_HOLDERS 8

/*
 * How often a claim starts again when sweeps keep removing the namespace
 * folder under it.  Each retry means another process completed a sweep,
 * so running out takes a namespace opened and closed in a tight loop by
 * others; the claim then fails rather than spin.
 */
#define NAMESPACE_RETRIES 64

/* What a failed claim found, for the error message. */
struct busy_report {
    bool busy[NRTEMU_MAX_VNC];
    long holders[MAX_HOLDERS]; /* distinct PIDs; 0: unknown */
    uint32_t n_holders;
    bool more_holders;
    uint32_t n_busy;
};

enum lock_result {
    LOCK_TAKEN,
    LOCK_BUSY,
    LOCK_ERROR,
};

void
nrtemu__core_locks_init(struct nrtemu_core_locks *locks)
{
    for (size_t i = 0; i < NRTEMU_MAX_PHYSICAL_CORES; i++) {
        locks->fds[i] = -1;
    }
    locks->root[0] = '\0';
    locks->ns[0] = '\0';
}

/*
 * Create (if needed) and open a directory that only we can write to.  A
 * directory planted by someone else, or opened up to others, would let
 * them fake or steal core ownership, so it is refused rather than fixed.
 */
static int
open_private_dir(int parent, const char *name, const char *shown,
                 bool *vanished, char *why, size_t why_len)
{
    struct stat st;
    int fd;

    *vanished = false;
    if (mkdirat(parent, name, 0700) != 0 && errno != EEXIST) {
        snprintf(why, why_len, "cannot create %s: %s", shown, strerror(errno));
        return -1;
    }
    fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        /* There a moment ago: a sweep removed it in between. */
        *vanished = errno == ENOENT;
        snprintf(why, why_len, "cannot open %s: %s", shown, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0) {
        snprintf(why, why_len, "cannot stat %s: %s", shown, strerror(errno));
        close(fd);
        return -1;
    }
    if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        snprintf(why, why_len,
                 "refusing %s: it must be owned by uid %ld and not writable "
                 "by group or others (owner %ld, mode %04o)",
                 shown, (long)geteuid(), (long)st.st_uid,
                 (unsigned)(st.st_mode & 07777));
        close(fd);
        return -1;
    }
    return fd;
}

static bool
xdg_runtime_dir_usable(const char *dir)
{
    struct stat st;

    return dir != NULL && dir[0] == '/' && stat(dir, &st) == 0 &&
           S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
           access(dir, W_OK | X_OK) == 0;
}

/* flock() through signals: the waits are short, so EINTR just retries. */
static int
flock_retry(int fd, int op)
{
    while (flock(fd, op) != 0) {
        if (errno != EINTR) {
            return -1;
        }
    }
    return 0;
}

/*
 * Whether `fd` is still the directory `name` of `parent`.  A sweep may
 * have removed it, and a claimant made another under the same name,
 * between our open and our flock.
 */
static bool
still_linked(int parent, const char *name, int fd)
{
    struct stat mine, now;

    return fstat(fd, &mine) == 0 &&
           fstatat(parent, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
           mine.st_dev == now.st_dev && mine.st_ino == now.st_ino;
}

/*
 * Open the namespace folder and take its flock shared, so that no sweep
 * runs until the claim is done.  -1 with `why` set on failure.
 */
static int
open_namespace(int root_fd, const char *ns, const char *shown, char *why,
               size_t why_len)
{
    for (int attempt = 0; attempt <= NAMESPACE_RETRIES; attempt++) {
        bool vanished;
        int fd = open_private_dir(root_fd, ns, shown, &vanished, why, why_len);
        if (fd < 0) {
            if (vanished) {
                continue;
            }
            return -1;
        }
        if (flock_retry(fd, LOCK_SH) != 0) {
            snprintf(why, why_len, "cannot lock %s: %s", shown,
                     strerror(errno));
            close(fd);
            return -1;
        }
        if (still_linked(root_fd, ns, fd)) {
            return fd;
        }
        flock(fd, LOCK_UN);
        close(fd);
    }
    snprintf(why, why_len,
             "%s was removed %d times while this process opened it", shown,
             NAMESPACE_RETRIES + 1);
    return -1;
}

/*
 * Open the instance's lock folder for a claim, remembering the root and
 * namespace in `locks` for the sweep at release.  On success the caller
 * holds `*ns_fd` (flocked shared) and `*inst_fd`, and gives both back
 * with close_lock_dir() once the claim is done.
 */
static NRT_STATUS
open_lock_dir(const char *func, const struct nrtemu_config *cfg,
              struct nrtemu_core_locks *locks, int *ns_out, int *inst_out)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    const char *ns = getenv("NRTPY_EMU_NAMESPACE");
    const char *inst = cfg->instance->name;
    char root[4096], shown[4096 + 160], why[4096 + 320];
    int root_fd, ns_fd, inst_fd = -1;
    bool vanished;

    if (ns == NULL || ns[0] == '\0') {
        ns = "default";
    }
    if (!nrtemu__namespace_valid(ns)) {
        return nrtemu__fail(NRT_INVALID, func,
                            "invalid NRTPY_EMU_NAMESPACE='%.80s': use 1 to "
                            "64 of A-Z a-z 0-9 . _ -",
                            ns);
    }
    if (xdg_runtime_dir_usable(xdg) && strlen(xdg) < sizeof root - 16) {
        snprintf(root, sizeof root, "%s/nrtpy-emu", xdg);
    } else {
        snprintf(root, sizeof root, "/tmp/nrtpy-emu-%ld", (long)geteuid());
    }
    root_fd =
        open_private_dir(AT_FDCWD, root, root, &vanished, why, sizeof why);
    if (root_fd < 0) {
        goto fail;
    }
    /* From here on a release sweeps this namespace, even after a failed
     * claim: the folder may have been made for it. */
    snprintf(locks->root, sizeof locks->root, "%s", root);
    snprintf(locks->ns, sizeof locks->ns, "%s", ns);
    snprintf(shown, sizeof shown, "%s/%s", root, ns);
    ns_fd = open_namespace(root_fd, ns, shown, why, sizeof why);
    if (ns_fd < 0) {
        goto fail_root;
    }
    snprintf(shown, sizeof shown, "%s/%s/%s", root, ns, inst);
    inst_fd = open_private_dir(ns_fd, inst, shown, &vanished, why, sizeof why);
    if (inst_fd < 0) {
        flock(ns_fd, LOCK_UN);
        close(ns_fd);
    }
fail_root:
    close(root_fd);
    if (inst_fd >= 0) {
        *ns_out = ns_fd;
        *inst_out = inst_fd;
        return NRT_SUCCESS;
    }
fail:
    return nrtemu__fail(NRT_FAILURE, func, "core lock directory: %s", why);
}

/* The claim is done: let sweeps of the namespace run again. */
static void
close_lock_dir(int ns_fd, int inst_fd)
{
    close(inst_fd);
    /* Explicitly: a fork's copy of the descriptor would keep it locked. */
    flock(ns_fd, LOCK_UN);
    close(ns_fd);
}

static long
read_holder(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    char *end;
    long pid;

    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    pid = strtol(buf, &end, 10);
    return end != buf && pid > 0 ? pid : 0;
}

static enum lock_result
lock_physical(int dir_fd, uint32_t phys, int *fd_out, long *holder, int *error)
{
    struct flock fl;
    char name[32], pid[32];
    int fd, len;

    snprintf(name, sizeof name, "nc%u.lock", phys);
    fd = openat(dir_fd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        *error = errno;
        return LOCK_ERROR;
    }
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
        int e = errno;
        if (e == EAGAIN || e == EACCES) {
            *holder = read_holder(fd);
            close(fd);
            return LOCK_BUSY;
        }
        close(fd);
        *error = e;
        return LOCK_ERROR;
    }
    /* The PID is a hint for error messages; failing to write it is fine. */
    len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) == 0) {
        ssize_t ignored = pwrite(fd, pid, (size_t)len, 0);
        (void)ignored;
    }
    *fd_out = fd;
    return LOCK_TAKEN;
}

static void
unlock_physical(struct nrtemu_core_locks *locks, uint32_t phys)
{
    int fd = locks->fds[phys];

    if (fd >= 0) {
        /* Clear the PID so nobody blames us after we are gone. */
        int ignored = ftruncate(fd, 0);
        (void)ignored;
        close(fd);
        locks->fds[phys] = -1;
    }
}

static void
unlock_vnc(const struct nrtemu_config *cfg, struct nrtemu_core_locks *locks,
           uint32_t vnc)
{
    for (uint32_t p = vnc * cfg->lnc; p < (vnc + 1) * cfg->lnc; p++) {
        unlock_physical(locks, p);
    }
}

static void
note_holder(struct busy_report *report, long pid)
{
    for (uint32_t i = 0; i < report->n_holders; i++) {
        if (report->holders[i] == pid) {
            return;
        }
    }
    if (report->n_holders < MAX_HOLDERS) {
        report->holders[report->n_holders++] = pid;
    } else {
        report->more_holders = true;
    }
}

/*
 * Claim every physical core of `vnc`.  On LOCK_BUSY the vnc is noted in
 * `report`; on anything but LOCK_TAKEN nothing of the vnc stays held.
 */
static enum lock_result
lock_vnc(const struct nrtemu_config *cfg, int dir_fd, uint32_t vnc,
         struct nrtemu_core_locks *locks, struct busy_report *report,
         int *error)
{
    enum lock_result result = LOCK_TAKEN;

    for (uint32_t p = vnc * cfg->lnc; p < (vnc + 1) * cfg->lnc; p++) {
        long holder = 0;
        enum lock_result r =
            lock_physical(dir_fd, p, &locks->fds[p], &holder, error);
        if (r == LOCK_ERROR) {
            unlock_vnc(cfg, locks, vnc);
            return LOCK_ERROR;
        }
        if (r == LOCK_BUSY) {
            note_holder(report, holder);
            result = LOCK_BUSY;
        }
    }
    if (result == LOCK_BUSY) {
        unlock_vnc(cfg, locks, vnc);
        report->busy[vnc] = true;
        report->n_busy++;
    }
    return result;
}

/* "nc1-nc3,nc7 Held by PID 1234,5678" */
static void
format_busy(const struct busy_report *report, uint32_t total, char *buf,
            size_t len)
{
    size_t used = 0;
    bool first = true;

#define APPEND(...)                                             \
    do {                                                        \
        int n_ = snprintf(buf + used, len - used, __VA_ARGS__); \
        if (n_ < 0 || (size_t)n_ >= len - used) {               \
            return;                                             \
        }                                                       \
        used += (size_t)n_;                                     \
    } while (0)

    buf[0] = '\0';
    for (uint32_t v = 0; v < total; v++) {
        uint32_t end = v;
        if (!report->busy[v]) {
            continue;
        }
        while (end + 1 < total && report->busy[end + 1]) {
            end++;
        }
        APPEND("%snc%u-nc%u", first ? "" : ",", v, end);
        first = false;
        v = end;
    }
    APPEND(" Held by PID ");
    for (uint32_t i = 0; i < report->n_holders; i++) {
        if (report->holders[i] > 0) {
            APPEND("%s%ld", i ? "," : "", report->holders[i]);
        } else {
            APPEND("%sunknown", i ? "," : "");
        }
    }
    if (report->more_holders) {
        APPEND(",...");
    }
#undef APPEND
}

/* ------------------------------------------------------------ sweeping */

/* "nc<N>.lock": a name lock_physical() gives. */
static bool
is_lock_name(const char *name)
{
    size_t digits = 0;

    if (strncmp(name, "nc", 2) != 0) {
        return false;
    }
    name += 2;
    while (name[digits] >= '0' && name[digits] <= '9') {
        digits++;
    }
    return digits > 0 && strcmp(name + digits, ".lock") == 0;
}

/*
 * Unlink the lock files of an instance folder that no process holds.  A
 * file is unlinked only while we hold its lock ourselves, which proves no
 * process owns the core; the namespace's exclusive flock keeps claimants
 * from opening it meanwhile.
 */
static void
sweep_instance(int inst_fd)
{
    int dup_fd = fcntl(inst_fd, F_DUPFD_CLOEXEC, 0);
    DIR *dir = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    struct dirent *e;

    if (dir == NULL) {
        if (dup_fd >= 0) {
            close(dup_fd);
        }
        return;
    }
    while ((e = readdir(dir)) != NULL) {
        struct flock fl;
        struct stat st;
        int fd;

        if (!is_lock_name(e->d_name)) {
            continue;
        }
        /* O_NONBLOCK: a FIFO planted under a lock file's name must not
         * hang us; it is not a regular file and stays. */
        fd = openat(inst_fd, e->d_name,
                    O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0) {
            continue;
        }
        memset(&fl, 0, sizeof fl);
        fl.l_type = F_WRLCK;
        fl.l_whence = SEEK_SET;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
            fcntl(fd, F_OFD_SETLK, &fl) == 0) {
            unlinkat(inst_fd, e->d_name, 0);
        }
        close(fd);
    }
    closedir(dir);
}

/*
 * Remove the namespace's folder if no process holds a core in it.  Best
 * effort: whatever cannot be removed stays, for a later sweep.
 */
static void
sweep_namespace(const char *root, const char *ns)
{
    const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int root_fd, ns_fd, dup_fd;
    struct stat st;
    struct dirent *e;
    DIR *dir;

    root_fd = open(root, flags);
    if (root_fd < 0) {
        return;
    }
    ns_fd = openat(root_fd, ns, flags);
    if (ns_fd < 0) {
        close(root_fd);
        return;
    }
    /* A folder we would refuse to claim in is not ours to clean either. */
    if (fstat(ns_fd, &st) != 0 || st.st_uid != geteuid() ||
        (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 ||
        flock_retry(ns_fd, LOCK_EX) != 0) {
        goto out;
    }
    /* Another sweep may have removed it (and a claim made it anew) since
     * our open: that folder is someone else's concern now. */
    if (!still_linked(root_fd, ns, ns_fd)) {
        goto unlock;
    }
    dup_fd = fcntl(ns_fd, F_DUPFD_CLOEXEC, 0);
    dir = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (dir == NULL) {
        if (dup_fd >= 0) {
            close(dup_fd);
        }
        goto unlock;
    }
    while ((e = readdir(dir)) != NULL) {
        int inst_fd;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        inst_fd = openat(ns_fd, e->d_name, flags);
        if (inst_fd < 0) {
            continue; /* not a folder: it stays, and so does the namespace */
        }
        sweep_instance(inst_fd);
        close(inst_fd);
        /* Fails, harmlessly, while anything is left in it. */
        unlinkat(ns_fd, e->d_name, AT_REMOVEDIR);
    }
    closedir(dir);
    unlinkat(root_fd, ns, AT_REMOVEDIR);
unlock:
    flock(ns_fd, LOCK_UN);
out:
    close(ns_fd);
    close(root_fd);
}

NRT_STATUS
nrtemu__core_locks_acquire(const char *func, const struct nrtemu_config *cfg,
                           uint32_t first, uint32_t count,
                           struct nrtemu_core_locks *locks)
{
    struct busy_report report;
    char busy[512];
    int ns_fd, dir_fd, error = 0;
    NRT_STATUS st;

    st = open_lock_dir(func, cfg, locks, &ns_fd, &dir_fd);
    if (st != NRT_SUCCESS) {
        return st;
    }
    memset(&report, 0, sizeof report);
    /* Probe every core, even past the first busy one, to name them all. */
    for (uint32_t v = first; v < first + count; v++) {
        if (lock_vnc(cfg, dir_fd, v, locks, &report, &error) == LOCK_ERROR) {
            goto fail_error;
        }
    }
    close_lock_dir(ns_fd, dir_fd);
    if (report.n_busy > 0) {
        nrtemu__core_locks_release(locks);
        format_busy(&report, cfg->total_vnc, busy, sizeof busy);
        return nrtemu__fail(
            NRT_RESOURCE, func,
            "NeuronCore(s) not available - Requested:nc%u-nc%u "
            "Busy:%s",
            first, first + count - 1, busy);
    }
    return NRT_SUCCESS;

fail_error:
    close_lock_dir(ns_fd, dir_fd);
    nrtemu__core_locks_release(locks);
    return nrtemu__fail(NRT_FAILURE, func, "cannot lock a NeuronCore: %s",
                        strerror(error));
}

NRT_STATUS
nrtemu__core_locks_acquire_any(const char *func,
                               const struct nrtemu_config *cfg, uint32_t count,
                               uint32_t *first,
                               struct nrtemu_core_locks *locks)
{
    struct busy_report report;
    uint32_t run_first = 0, run_len = 0;
    char busy[512];
    int ns_fd, dir_fd, error = 0;
    NRT_STATUS st;

    st = open_lock_dir(func, cfg, locks, &ns_fd, &dir_fd);
    if (st != NRT_SUCCESS) {
        return st;
    }
    memset(&report, 0, sizeof report);
    for (uint32_t v = 0; v < cfg->total_vnc && run_len < count; v++) {
        enum lock_result r = lock_vnc(cfg, dir_fd, v, locks, &report, &error);
        if (r == LOCK_ERROR) {
            goto fail_error;
        }
        if (r == LOCK_BUSY) {
            /* The run is broken: give its cores back to others. */
            for (uint32_t u = run_first; u < run_first + run_len; u++) {
                unlock_vnc(cfg, locks, u);
            }
            run_first = v + 1;
            run_len = 0;
            continue;
        }
        run_len++;
    }
    close_lock_dir(ns_fd, dir_fd);
    if (run_len < count) {
        nrtemu__core_locks_release(locks);
        format_busy(&report, cfg->total_vnc, busy, sizeof busy);
        return nrtemu__fail(NRT_RESOURCE, func,
                            "NeuronCore(s) not available - Requested:%u "
                            "contiguous Available:%u Busy:%s",
                            count, cfg->total_vnc - report.n_busy, busy);
    }
    *first = run_first;
    return NRT_SUCCESS;

fail_error:
    close_lock_dir(ns_fd, dir_fd);
    nrtemu__core_locks_release(locks);
    return nrtemu__fail(NRT_FAILURE, func, "cannot lock a NeuronCore: %s",
                        strerror(error));
}

void
nrtemu__core_locks_forget(struct nrtemu_core_locks *locks)
{
    for (uint32_t p = 0; p < NRTEMU_MAX_PHYSICAL_CORES; p++) {
        /* Closing our descriptor leaves the lock to the other descriptors
         * of its open file description (the parent's); truncating the file
         * would erase the parent's PID from it. */
        if (locks->fds[p] >= 0) {
            close(locks->fds[p]);
            locks->fds[p] = -1;
        }
    }
    locks->ns[0] = '\0';
}

void
nrtemu__core_locks_release(struct nrtemu_core_locks *locks)
{
    for (uint32_t p = 0; p < NRTEMU_MAX_PHYSICAL_CORES; p++) {
        unlock_physical(locks, p);
    }
    /* After our own cores are free, so that the last process out finds
     * nothing held and removes the folder. */
    if (locks->ns[0] != '\0') {
        sweep_namespace(locks->root, locks->ns);
        locks->ns[0] = '\0';
    }
}
