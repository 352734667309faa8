/*
 * fabric.c - libfabric through dlopen() (design in fabric.h).
 *
 * The types and the inline calls (fi_domain, fi_tsend, fi_cq_read, ...)
 * come from the build machine's <rdma/fabric.h> (Debian libfabric-dev);
 * the inline calls go through the objects' operation tables, so only the
 * few real functions below are looked up with dlsym().
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective/fabric.h"

#ifdef NRTEMU_HAVE_FABRIC_H

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

_Static_assert(sizeof(struct fi_context2) <= NRTEMU_FABRIC_CTX_BYTES,
               "the context room of fabric.h is too small");

/* The functions of libfabric.so.1 used here (X: name, return, args). */
static struct {
    uint32_t (*version)(void);
    int (*getinfo)(uint32_t, const char *, const char *, uint64_t,
                   const struct fi_info *, struct fi_info **);
    void (*freeinfo)(struct fi_info *);
    struct fi_info *(*dupinfo)(const struct fi_info *);
    int (*fabric)(struct fi_fabric_attr *, struct fid_fabric **, void *);
    const char *(*strerror)(int);
    bool loaded;
    char error[200];
} lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

/* Debian's libfabric links the PSM provider's libinfinipath, whose
 * constructor takes SIGINT, SIGTERM, SIGSEGV and others for itself: its
 * handler calls exit(), which deadlocks in libfabric's own destructor when
 * the signal lands inside libfabric, and Ctrl-C stops raising
 * KeyboardInterrupt.  The application owns its signals, so what it had
 * before the dlopen() is put back. */
static void
signals_save(struct sigaction *saved, bool *have)
{
    for (int sig = 1; sig < NSIG; sig++) {
        have[sig] = sigaction(sig, NULL, &saved[sig]) == 0;
    }
}

static void
signals_restore(const struct sigaction *saved, const bool *have)
{
    for (int sig = 1; sig < NSIG; sig++) {
        if (have[sig] && sig != SIGKILL && sig != SIGSTOP) {
            sigaction(sig, &saved[sig], NULL);
        }
    }
}

static void
lib_open(void)
{
    static struct sigaction saved[NSIG]; /* (once per process) */
    static bool have[NSIG];
    void *h;

    signals_save(saved, have);
    h = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
    signals_restore(saved, have);
    if (h == NULL) {
        snprintf(lib.error, sizeof lib.error,
                 "libfabric.so.1 cannot be loaded (%.120s); install Debian's "
                 "libfabric1",
                 dlerror());
        return;
    }
    /* (POSIX: a data pointer from dlsym converts to a function pointer) */
    *(void **)&lib.version = dlsym(h, "fi_version");
    *(void **)&lib.getinfo = dlsym(h, "fi_getinfo");
    *(void **)&lib.freeinfo = dlsym(h, "fi_freeinfo");
    *(void **)&lib.dupinfo = dlsym(h, "fi_dupinfo");
    *(void **)&lib.fabric = dlsym(h, "fi_fabric");
    *(void **)&lib.strerror = dlsym(h, "fi_strerror");
    if (lib.version == NULL || lib.getinfo == NULL || lib.freeinfo == NULL ||
        lib.dupinfo == NULL || lib.fabric == NULL || lib.strerror == NULL) {
        snprintf(lib.error, sizeof lib.error,
                 "libfabric.so.1 lacks fi_getinfo or another function");
        dlclose(h);
        return;
    }
    lib.loaded = true; /* (kept open for the life of the process) */
}

bool
nrtemu__fabric_load(char *why, size_t why_size)
{
    pthread_once(&lib_once, lib_open);
    if (!lib.loaded) {
        snprintf(why, why_size, "%s", lib.error);
    }
    return lib.loaded;
}

struct nrtemu_fabric {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    fi_addr_t *peers;
    uint32_t world;
    int shm_lock; /* shm: the lock on its own segment (see below), or -1 */
};

/*
 * The segments of the shm provider.  Each shm endpoint is a segment in
 * /dev/shm (16 MiB) that libfabric removes when the endpoint closes, or
 * on SIGINT and SIGTERM; a rank killed with SIGKILL leaves it behind for
 * good.  So the endpoints of this library have names of its own (the
 * provider takes a source address with a prefix as the segment's name,
 * fi_shm(7)): SHM_STEM, the creating process's pid, '-', then hex digits
 * and '-' (a provider may append ':' and numbers), and every rank removes
 * the segments of dead ranks when it opens an endpoint (at each
 * rendezvous) and when it closes one (when its world ends or fails).
 * A segment is removed only when all of these hold:
 *  - its name has that form: other programs' segments, and the provider's
 *    own names (<pid>:<uid>:<index>), are never touched;
 *  - it is a regular file of this effective user;
 *  - no process of its pid lives (ESRCH), or that process is a zombie (it
 *    has closed its files and unmapped its memory);
 *  - it is not locked: its creator holds a shared flock() on it from just
 *    after its creation to its close, and the kernel drops that lock when
 *    the creator dies, however it dies.  So a pid that only looks dead
 *    (a process of another pid namespace sharing this /dev/shm) never
 *    loses its segment; before the lock is taken, its creator's pid is
 *    alive.
 * A pid reused by a new process keeps a dead rank's segment until that
 * process ends: the rules only ever err towards keeping a segment.
 */
#define SHM_STEM "nrtemu-fi-"

/* The pid in the name of a segment of this library (the form above), or
 * 0 for any other name. */
static pid_t
shm_owner(const char *name)
{
    const char *p = name + strlen(SHM_STEM);
    long long pid = 0;
    int digits = 0;

    if (strncmp(name, SHM_STEM, strlen(SHM_STEM)) != 0) {
        return 0;
    }
    for (; *p >= '0' && *p <= '9' && digits < 10; p++, digits++) {
        pid = pid * 10 + (*p - '0');
    }
    if (digits == 0 || *p != '-' || pid <= 0 || pid > INT_MAX ||
        p[strspn(p, "0123456789abcdef-:")] != '\0') {
        return 0;
    }
    return (pid_t)pid;
}

/* Whether process `pid` is gone: none of that pid (in this pid
 * namespace), or a zombie. */
static bool
pid_dead(pid_t pid)
{
    char path[40], text[256];
    const char *state;
    ssize_t n;
    int fd;

    if (pid == getpid()) {
        return false;
    }
    if (kill(pid, 0) != 0) {
        return errno == ESRCH; /* (EPERM: it lives, as another user) */
    }
    /* "pid (comm) state ...": the command may hold ')', the state
     * follows the last one. */
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) {
        return false;
    }
    text[n] = '\0';
    state = strrchr(text, ')');
    return state != NULL && state[1] == ' ' &&
           (state[2] == 'Z' || state[2] == 'X');
}

/* Remove the segments of dead ranks (the rules above).  errno is kept. */
static void
shm_sweep(void)
{
    int saved = errno;
    DIR *d = opendir("/dev/shm");
    struct dirent *e;

    if (d == NULL) {
        errno = saved;
        return;
    }
    while ((e = readdir(d)) != NULL) {
        char path[NAME_MAX + 2];
        pid_t pid = shm_owner(e->d_name);
        struct stat st;
        int fd;

        if (pid == 0 || !pid_dead(pid)) {
            continue;
        }
        snprintf(path, sizeof path, "/%s", e->d_name);
        fd = shm_open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
        if (fd < 0) {
            continue; /* (removed by another rank meanwhile) */
        }
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
            st.st_uid == geteuid() && flock(fd, LOCK_EX | LOCK_NB) == 0) {
            shm_unlink(path);
        }
        close(fd); /* (and its lock) */
    }
    closedir(d);
    errno = saved;
}

/* The source address that names this process's next shm endpoint (the
 * form above; unique in this boot: the pid, the time and a count), into
 * a new string (NULL when out of memory). */
static char *
shm_source(void)
{
    static _Atomic unsigned serial;
    struct timespec now;
    char text[96];

    clock_gettime(CLOCK_MONOTONIC, &now);
    snprintf(text, sizeof text, "fi_ns://" SHM_STEM "%d-%llx-%lx-%x",
             (int)getpid(), (unsigned long long)now.tv_sec,
             (unsigned long)now.tv_nsec, atomic_fetch_add(&serial, 1));
    return strdup(text);
}

/* Lock this endpoint's own segment, named by its address `addr` (`len`
 * bytes, from fi_getname) after the prefix, for as long as it lives.
 * @return the locked descriptor, or -1 (no lock: its name is not what
 * the provider was given, and only its pid keeps it then). */
static int
shm_lock(const unsigned char *addr, size_t len)
{
    char name[NRTEMU_FABRIC_ADDR_MAX + 2], text[NRTEMU_FABRIC_ADDR_MAX + 1];
    const char *start;
    int fd;

    if (len > NRTEMU_FABRIC_ADDR_MAX) {
        return -1;
    }
    memcpy(text, addr, len);
    text[len] = '\0';
    start = strstr(text, "://");
    start = start != NULL ? start + 3 : text;
    if (shm_owner(start) != getpid()) {
        return -1;
    }
    snprintf(name, sizeof name, "/%s", start);
    fd = shm_open(name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd >= 0 && flock(fd, LOCK_SH) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static int
fail(char *why, size_t why_size, const char *what, int rc)
{
    snprintf(why, why_size, "libfabric %s: %s", what, lib.strerror(-rc));
    return -1;
}

int
nrtemu__fabric_open(const char *prov, uint32_t world,
                    struct nrtemu_fabric **out, unsigned char *addr,
                    size_t *addr_len, char *why, size_t why_size)
{
    struct nrtemu_fabric *f = calloc(1, sizeof *f);
    struct fi_info *hints = NULL;
    struct fi_cq_attr cq_attr;
    struct fi_av_attr av_attr;
    uint32_t version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
    bool shm = prov != NULL && strcmp(prov, "shm") == 0;
    int rc;

    if (prov == NULL || world == 0 || out == NULL || addr == NULL ||
        addr_len == NULL || why == NULL) {
        if (why != NULL) {
            snprintf(why, why_size, "no provider, world, endpoint or address");
        }
        free(f);
        return -1;
    }
    if (f == NULL || !nrtemu__fabric_load(why, why_size)) {
        if (f == NULL) {
            snprintf(why, why_size, "out of host memory");
        }
        free(f);
        return -1;
    }
    f->shm_lock = -1;
    /* What dead ranks left, before this rank adds its own segment. */
    shm_sweep();
    f->world = world;
    f->peers = calloc(world, sizeof *f->peers);
    hints = lib.dupinfo(NULL);
    if (f->peers == NULL || hints == NULL) {
        snprintf(why, why_size, "out of host memory");
        goto fail;
    }
    /* An older libfabric than the headers: ask for its own version. */
    if (lib.version() < version) {
        version = lib.version();
    }
    /* Tagged messages on a reliable datagram endpoint, no memory
     * registration (the buffers are plain host memory), the
     * per-operation context the provider may want, one thread at a time. */
    hints->caps = FI_TAGGED;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = 0;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->fabric_attr->prov_name = strdup(prov);
    if (hints->fabric_attr->prov_name == NULL) {
        snprintf(why, why_size, "out of host memory");
        goto fail;
    }
    /* shm: the segment's name (see shm_sweep); fi_freeinfo frees it. */
    if (shm) {
        hints->addr_format = FI_ADDR_STR;
        hints->src_addr = shm_source();
        if (hints->src_addr == NULL) {
            snprintf(why, why_size, "out of host memory");
            goto fail;
        }
        hints->src_addrlen = strlen(hints->src_addr) + 1;
    }
    rc = lib.getinfo(version, NULL, NULL, 0, hints, &f->info);
    if (rc != 0) {
        snprintf(why, why_size,
                 "libfabric has no provider '%.40s' for tagged reliable "
                 "datagrams here (fi_getinfo: %s)",
                 prov, lib.strerror(-rc));
        goto fail;
    }
    rc = lib.fabric(f->info->fabric_attr, &f->fabric, NULL);
    if (rc != 0) {
        fail(why, why_size, "fi_fabric", rc);
        goto fail;
    }
    rc = fi_domain(f->fabric, f->info, &f->domain, NULL);
    if (rc != 0) {
        fail(why, why_size, "fi_domain", rc);
        goto fail;
    }
    memset(&av_attr, 0, sizeof av_attr);
    av_attr.type = FI_AV_TABLE;
    av_attr.count = world;
    rc = fi_av_open(f->domain, &av_attr, &f->av, NULL);
    if (rc != 0) {
        fail(why, why_size, "fi_av_open", rc);
        goto fail;
    }
    memset(&cq_attr, 0, sizeof cq_attr);
    cq_attr.format = FI_CQ_FORMAT_CONTEXT;
    cq_attr.wait_obj = FI_WAIT_NONE;
    rc = fi_cq_open(f->domain, &cq_attr, &f->cq, NULL);
    if (rc != 0) {
        fail(why, why_size, "fi_cq_open", rc);
        goto fail;
    }
    rc = fi_endpoint(f->domain, f->info, &f->ep, NULL);
    if (rc == 0) {
        rc = fi_ep_bind(f->ep, &f->av->fid, 0);
    }
    if (rc == 0) {
        rc = fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV);
    }
    if (rc == 0) {
        rc = fi_enable(f->ep);
    }
    if (rc != 0) {
        fail(why, why_size, "endpoint", rc);
        goto fail;
    }
    rc = fi_getname(&f->ep->fid, addr, addr_len);
    if (rc != 0) {
        fail(why, why_size, "fi_getname", rc);
        goto fail;
    }
    if (shm) {
        f->shm_lock = shm_lock(addr, *addr_len);
    }
    lib.freeinfo(hints);
    *out = f;
    return 0;

fail:
    if (hints != NULL) {
        lib.freeinfo(hints);
    }
    nrtemu__fabric_close(f);
    return -1;
}

const char *
nrtemu__fabric_name(const struct nrtemu_fabric *f)
{
    return f->info->fabric_attr->prov_name;
}

size_t
nrtemu__fabric_max_msg(const struct nrtemu_fabric *f)
{
    return f->info->ep_attr->max_msg_size;
}

int
nrtemu__fabric_insert(struct nrtemu_fabric *f, uint32_t world,
                      const unsigned char *const *addrs, const size_t *lens,
                      char *why, size_t why_size)
{
    (void)lens; /* (the provider knows its address format's length) */
    for (uint32_t k = 0; k < world && k < f->world; k++) {
        int rc = fi_av_insert(f->av, addrs[k], 1, &f->peers[k], 0, NULL);
        if (rc != 1) {
            return fail(why, why_size, "fi_av_insert",
                        rc < 0 ? rc : -FI_EINVAL);
        }
    }
    return 0;
}

int
nrtemu__fabric_post(struct nrtemu_fabric *f, bool recv, uint32_t peer,
                    void *buf, size_t len, uint64_t tag, void *ctx, char *why,
                    size_t why_size)
{
    ssize_t rc;

    if (recv) {
        rc = fi_trecv(f->ep, buf, len, NULL, f->peers[peer], tag, 0, ctx);
    } else {
        rc = fi_tsend(f->ep, buf, len, NULL, f->peers[peer], tag, ctx);
    }
    if (rc == -FI_EAGAIN) {
        return 1;
    }
    return rc == 0
               ? 0
               : fail(why, why_size, recv ? "fi_trecv" : "fi_tsend", (int)rc);
}

int
nrtemu__fabric_poll(struct nrtemu_fabric *f, void **ctxs, int max,
                    void **failed, char *why, size_t why_size)
{
    struct fi_cq_entry entries[16];
    ssize_t n;

    *failed = NULL;
    n = fi_cq_read(f->cq, entries, (size_t)(max < 16 ? max : 16));
    if (n == -FI_EAGAIN) {
        return 0;
    }
    if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry err;
        memset(&err, 0, sizeof err);
        if (fi_cq_readerr(f->cq, &err, 0) > 0) {
            *failed = err.op_context;
            snprintf(
                why, why_size, "libfabric: %s (provider: %.120s)",
                lib.strerror(err.err),
                fi_cq_strerror(f->cq, err.prov_errno, err.err_data, NULL, 0));
            switch (err.err) {
            case FI_ENOTCONN:
            case FI_ECONNRESET:
            case FI_ECONNABORTED:
            case EPIPE:
            case FI_ESHUTDOWN:
                return NRTEMU_FABRIC_PEER_GONE;
            default:
                return -1;
            }
        }
        return fail(why, why_size, "fi_cq_readerr", -FI_EOTHER);
    }
    if (n < 0) {
        return fail(why, why_size, "fi_cq_read", (int)n);
    }
    for (ssize_t k = 0; k < n; k++) {
        ctxs[k] = entries[k].op_context;
    }
    return (int)n;
}

void
nrtemu__fabric_close(struct nrtemu_fabric *f)
{
    if (f == NULL) {
        return;
    }
    /* The endpoint first: it cancels what is posted. */
    if (f->ep != NULL) {
        fi_close(&f->ep->fid);
    }
    if (f->cq != NULL) {
        fi_close(&f->cq->fid);
    }
    if (f->av != NULL) {
        fi_close(&f->av->fid);
    }
    if (f->domain != NULL) {
        fi_close(&f->domain->fid);
    }
    if (f->fabric != NULL) {
        fi_close(&f->fabric->fid);
    }
    if (f->info != NULL) {
        lib.freeinfo(f->info);
    }
    /* The provider removed this rank's segment with its endpoint: only
     * then may its lock go (a segment is never unlocked while in use). */
    if (f->shm_lock >= 0) {
        close(f->shm_lock);
    }
    free(f->peers);
    free(f);
    /* What ranks that died in this world left (a world ends, or fails,
     * when one dies). */
    shm_sweep();
}

#else /* no <rdma/fabric.h> at build time */

struct nrtemu_fabric {
    int unused;
};

bool
nrtemu__fabric_load(char *why, size_t why_size)
{
    snprintf(why, why_size,
             "this build had no libfabric headers (Debian libfabric-dev)");
    return false;
}

int
nrtemu__fabric_open(const char *prov, uint32_t world,
                    struct nrtemu_fabric **out, unsigned char *addr,
                    size_t *addr_len, char *why, size_t why_size)
{
    (void)prov, (void)world, (void)out, (void)addr, (void)addr_len;
    nrtemu__fabric_load(why, why_size);
    return -1;
}

const char *
nrtemu__fabric_name(const struct nrtemu_fabric *f)
{
    (void)f;
    return "";
}

size_t
nrtemu__fabric_max_msg(const struct nrtemu_fabric *f)
{
    (void)f;
    return 0;
}

int
nrtemu__fabric_insert(struct nrtemu_fabric *f, uint32_t world,
                      const unsigned char *const *addrs, const size_t *lens,
                      char *why, size_t why_size)
{
    (void)f, (void)world, (void)addrs, (void)lens;
    return nrtemu__fabric_load(why, why_size) ? 0 : -1;
}

int
nrtemu__fabric_post(struct nrtemu_fabric *f, bool recv, uint32_t peer,
                    void *buf, size_t len, uint64_t tag, void *ctx, char *why,
                    size_t why_size)
{
    (void)f, (void)recv, (void)peer, (void)buf, (void)len, (void)tag;
    (void)ctx;
    return nrtemu__fabric_load(why, why_size) ? 0 : -1;
}

int
nrtemu__fabric_poll(struct nrtemu_fabric *f, void **ctxs, int max,
                    void **failed, char *why, size_t why_size)
{
    (void)f, (void)ctxs, (void)max;
    *failed = NULL;
    return nrtemu__fabric_load(why, why_size) ? 0 : -1;
}

void
nrtemu__fabric_close(struct nrtemu_fabric *f)
{
    (void)f;
}

#endif
