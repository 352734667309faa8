/*
 * board.c - shared memory between the ranks of one machine (design in
 * board.h).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collective/board.h"

#define BOARD_MAGIC 0x4e52544255ull /* "NRTBU" */

/* A record of one exchange: `key` is its number + 1 (0 while written),
 * set last and read first and last (a sequence lock). */
struct board_said {
    _Atomic uint64_t key;
    _Atomic uint64_t words[NRTEMU_BOARD_RECORD / 8];
};

/* Cache lines of their own per rank: no rank's writes slow another's
 * reads. */
struct board_slot {
    _Atomic uint64_t progress;
    char pad[64 - 8];
    struct board_said said[NRTEMU_BOARD_SAID];
    char pad2[(64 - NRTEMU_BOARD_SAID * sizeof(struct board_said) % 64) % 64];
};
_Static_assert(sizeof(struct board_slot) % 64 == 0, "slots stay aligned");

struct board_head {
    uint64_t magic;
    uint32_t world;
    _Atomic uint32_t bell;     /* futex word: changes at every publish */
    _Atomic uint32_t sleepers; /* ranks in (or entering) a futex wait */
    _Atomic uint32_t failed;   /* 0, then 1 while the reason is written,
                                  then 2 */
    int32_t status;
    char why[420];
};
_Static_assert(sizeof(struct board_head) % 64 == 0, "slots start aligned");

/* The data areas: AREA_BUDGET bytes in all, each between AREA_MIN and
 * AREA_MAX bytes (pages are only touched as far as collectives need). */
#define AREA_BUDGET ((size_t)32 << 20)
#define AREA_MIN ((size_t)512 << 10)
#define AREA_MAX ((size_t)4 << 20)

struct nrtemu_board {
    struct board_head *head;
    struct board_slot *slots;
    char *areas;
    size_t size, area;
    uint32_t world, rank;
    char name[NRTEMU_BOARD_NAME_MAX];
    bool named; /* rank 0 until it unlinks the name */
};

static void
board_sizes(struct nrtemu_board *b, uint32_t world)
{
    size_t area = AREA_BUDGET / (world != 0 ? world : 1);
    size_t slots = (size_t)world * sizeof(struct board_slot);

    b->world = world;
    b->area = area < AREA_MIN ? AREA_MIN : area > AREA_MAX ? AREA_MAX : area;
    /* the areas start on a page */
    b->size = ((sizeof(struct board_head) + slots + 4095) & ~(size_t)4095) +
              (size_t)world * b->area;
}

static int
board_map(struct nrtemu_board *b, int fd, char *why, size_t why_size)
{
    void *p = mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

    close(fd);
    if (p == MAP_FAILED) {
        snprintf(why, why_size, "cannot map the shared board: %s",
                 strerror(errno));
        return -1;
    }
    b->head = p;
    b->slots = (struct board_slot *)(b->head + 1);
    b->areas = (char *)p + b->size - (size_t)b->world * b->area;
    return 0;
}

/* Boards left in /dev/shm by a rank 0 killed during its rendezvous (its
 * pid is in the name): removed when the next board is made. */
static void
board_sweep(void)
{
    DIR *d = opendir("/dev/shm");
    struct dirent *e;

    if (d == NULL) {
        return;
    }
    while ((e = readdir(d)) != NULL) {
        char path[NAME_MAX + 2];
        int pid;
        if (sscanf(e->d_name, "nrtemu-cc-%d-", &pid) == 1 && pid > 0 &&
            kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            snprintf(path, sizeof path, "/%s", e->d_name);
            shm_unlink(path);
        }
    }
    closedir(d);
}

int
nrtemu__board_create(uint32_t world, char *name, struct nrtemu_board **out,
                     char *why, size_t why_size)
{
    struct nrtemu_board *b = calloc(1, sizeof *b);
    struct timespec now;
    int fd = -1, rc;

    if (b == NULL) {
        snprintf(why, why_size, "out of host memory");
        return -1;
    }
    b->rank = 0;
    board_sizes(b, world);
    board_sweep();
    /* A name no other world of this machine uses: the pid and the time
     * (and the number of the try, past a name left by a crashed world). */
    clock_gettime(CLOCK_MONOTONIC, &now);
    for (int tries = 0; fd < 0 && tries < 8; tries++) {
        snprintf(b->name, sizeof b->name, "/nrtemu-cc-%d-%llx-%lx-%d",
                 (int)getpid(), (unsigned long long)now.tv_sec,
                 (unsigned long)now.tv_nsec, tries);
        fd = shm_open(b->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    }
    if (fd < 0) {
        snprintf(why, why_size, "cannot create the shared board: %s",
                 strerror(errno));
        free(b);
        return -1;
    }
    b->named = true;
    /* Reserved now: a /dev/shm too small fails here, rather than with a
     * SIGBUS when a page is first touched. */
    rc = posix_fallocate(fd, 0, (off_t)b->size);
    if (rc != 0) {
        snprintf(why, why_size,
                 "cannot reserve the shared board (%zu bytes): %s", b->size,
                 strerror(rc));
        close(fd);
        nrtemu__board_unlink(b);
        free(b);
        return -1;
    }
    if (board_map(b, fd, why, why_size) != 0) {
        nrtemu__board_unlink(b);
        free(b);
        return -1;
    }
    b->head->world = world;
    b->head->magic = BOARD_MAGIC;
    snprintf(name, NRTEMU_BOARD_NAME_MAX, "%s", b->name);
    *out = b;
    return 0;
}

int
nrtemu__board_attach(const char *name, uint32_t world, uint32_t rank,
                     struct nrtemu_board **out, char *why, size_t why_size)
{
    struct nrtemu_board *b = calloc(1, sizeof *b);
    struct stat st;
    int fd;

    if (b == NULL) {
        snprintf(why, why_size, "out of host memory");
        return -1;
    }
    b->rank = rank;
    board_sizes(b, world);
    fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) {
        /* (another machine's /dev/shm, or another container's) */
        snprintf(why, why_size, "cannot open the shared board '%.64s': %s",
                 name, strerror(errno));
        free(b);
        return -1;
    }
    if (fstat(fd, &st) != 0 || (size_t)st.st_size != b->size) {
        snprintf(why, why_size,
                 "the shared board '%.64s' is not this "
                 "world's",
                 name);
        close(fd);
        free(b);
        return -1;
    }
    if (board_map(b, fd, why, why_size) != 0) {
        free(b);
        return -1;
    }
    if (b->head->magic != BOARD_MAGIC || b->head->world != world) {
        snprintf(why, why_size,
                 "the shared board '%.64s' is not this "
                 "world's",
                 name);
        nrtemu__board_close(b);
        return -1;
    }
    *out = b;
    return 0;
}

void
nrtemu__board_unlink(struct nrtemu_board *b)
{
    if (b != NULL && b->named) {
        shm_unlink(b->name);
        b->named = false;
    }
}

void
nrtemu__board_close(struct nrtemu_board *b)
{
    if (b == NULL) {
        return;
    }
    nrtemu__board_unlink(b);
    if (b->head != NULL) {
        munmap(b->head, b->size);
    }
    free(b);
}

void *
nrtemu__board_area(const struct nrtemu_board *b, uint32_t rank)
{
    return b->areas + (size_t)rank * b->area;
}

size_t
nrtemu__board_area_size(const struct nrtemu_board *b)
{
    return b->area;
}

static long
futex(_Atomic uint32_t *word, int op, uint32_t val,
      const struct timespec *timeout)
{
    /* (shared between processes: not FUTEX_PRIVATE_FLAG) */
    return syscall(SYS_futex, word, op, val, timeout, NULL, 0);
}

void
nrtemu__board_publish(struct nrtemu_board *b, uint64_t progress)
{
    /* The counter after the area's data (a sequentially consistent store
     * releases them), the bell after the counter, and the sleepers read
     * last (see nrtemu__board_sleep). */
    atomic_store(&b->slots[b->rank].progress, progress);
    atomic_fetch_add(&b->head->bell, 1);
    if (atomic_load(&b->head->sleepers) != 0) {
        futex(&b->head->bell, FUTEX_WAKE, INT32_MAX, NULL);
    }
}

uint64_t
nrtemu__board_progress(const struct nrtemu_board *b, uint32_t rank)
{
    return atomic_load(&b->slots[rank].progress);
}

uint32_t
nrtemu__board_bell(const struct nrtemu_board *b)
{
    return atomic_load(&b->head->bell);
}

/*
 * The waiter read the bell, then found a counter short; a publisher
 * stores its counter, then rings, then reads the sleepers.  Either the
 * publisher sees this sleeper and wakes it, or its ring came before the
 * futex wait, which then returns at once: no wake-up is lost (all
 * sequentially consistent).
 */
void
nrtemu__board_sleep(struct nrtemu_board *b, uint32_t bell, uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u),
                          (long)(ns % 1000000000u)};

    atomic_fetch_add(&b->head->sleepers, 1);
    futex(&b->head->bell, FUTEX_WAIT, bell, &ts);
    atomic_fetch_sub(&b->head->sleepers, 1);
}

void
nrtemu__board_say(struct nrtemu_board *b, uint64_t seq,
                  const unsigned char *record)
{
    struct board_said *s = &b->slots[b->rank].said[seq % NRTEMU_BOARD_SAID];
    uint64_t w;

    atomic_store_explicit(&s->key, 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (size_t k = 0; k < NRTEMU_BOARD_RECORD / 8; k++) {
        memcpy(&w, record + 8 * k, 8);
        atomic_store_explicit(&s->words[k], w, memory_order_relaxed);
    }
    atomic_store_explicit(&s->key, seq + 1, memory_order_release);
}

bool
nrtemu__board_said(const struct nrtemu_board *b, uint32_t rank, uint64_t seq,
                   unsigned char *record)
{
    struct board_said *s = &b->slots[rank].said[seq % NRTEMU_BOARD_SAID];
    uint64_t w;

    if (atomic_load_explicit(&s->key, memory_order_acquire) != seq + 1) {
        return false;
    }
    for (size_t k = 0; k < NRTEMU_BOARD_RECORD / 8; k++) {
        w = atomic_load_explicit(&s->words[k], memory_order_relaxed);
        memcpy(record + 8 * k, &w, 8);
    }
    atomic_thread_fence(memory_order_acquire);
    /* (rewritten meanwhile: the record may be torn) */
    return atomic_load_explicit(&s->key, memory_order_relaxed) == seq + 1;
}

void
nrtemu__board_fail(struct nrtemu_board *b, int status, const char *why)
{
    uint32_t none = 0;

    if (atomic_compare_exchange_strong(&b->head->failed, &none, 1)) {
        b->head->status = status;
        snprintf(b->head->why, sizeof b->head->why, "%s", why);
        atomic_store(&b->head->failed, 2);
    }
    atomic_fetch_add(&b->head->bell, 1);
    futex(&b->head->bell, FUTEX_WAKE, INT32_MAX, NULL);
}

bool
nrtemu__board_failed(const struct nrtemu_board *b, int *status, char *why,
                     size_t why_size)
{
    if (atomic_load(&b->head->failed) != 2) {
        return false; /* (1: the reason comes at the next look) */
    }
    *status = b->head->status;
    snprintf(why, why_size, "%s", b->head->why);
    return true;
}
