/*
 * pool.c - the worker threads that kernels share (pool.h).
 *
 * A job is posted under `lock` with a new generation number; every
 * worker wakes and, if the job is still posted, joins it: claims tasks
 * from the job's atomic counter alongside the caller, and reports when it
 * has finished with the job, which lives on the caller's stack and so
 * must outlive every worker's use of it.  Once the caller has run out of
 * tasks to claim it withdraws the job and waits only for the workers that
 * joined: a worker that the scheduler has not woken yet (the machine busy
 * with other processes) costs the caller nothing, the caller having done
 * that worker's share itself.
 * `submit` admits one job at a time; a caller that finds it taken runs
 * its tasks itself rather than wait, so that a job posted from inside a
 * task (or by two cores at once) cannot deadlock.
 *
 * Waking a thread parked on a futex takes tens of microseconds, on a
 * virtual machine notably, and either way: a worker starts a short job
 * late, and the caller, done with its share, notices the worker's end
 * late.  So a worker polls `generation` for POOL_SPIN_NS after each job before
 * it parks (kernels of one execution, and executions called back to
 * back, post their jobs within microseconds of each other), and a caller
 * polls `busy` for the workers that joined, up to POOL_SPIN_NS, before
 * it sleeps.  Past that the pool is parked and costs no CPU.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/fork.h"
#include "kernels/pool.h"

/* Threads in all, the caller included, at most. */
#define POOL_MAX_THREADS 64

/* How long a thread polls before it parks (see above). */
#define POOL_SPIN_NS 100000u

struct job {
    nrtemu_pool_fn fn;           /* or NULL: slot_fn */
    nrtemu_pool_slot_fn slot_fn; /* with slots */
    void *arg;
    uint32_t count;
    uint32_t slots;    /* slot_fn: threads that may take part */
    atomic_uint next;  /* the next task to claim */
    atomic_uint taken; /* slot_fn: slots claimed */
};

static struct {
    pthread_mutex_t submit; /* held by the caller whose job runs */
    pthread_mutex_t lock;   /* guards everything below */
    pthread_cond_t wake;    /* workers: a new generation */
    pthread_cond_t done;    /* the caller: busy reached 0 */
    /* generation and busy change under `lock`, and are also read
     * without it by a thread polling before it parks. */
    _Atomic uint64_t generation;
    struct job *job;
    uint32_t workers; /* started: tids[0, workers) */
    pthread_t tids[POOL_MAX_THREADS];
    cpu_set_t allowed; /* the process's CPUs when the workers started */
    bool have_allowed;
    int kept_off;          /* the CPU the workers' affinity excludes, or -1 */
    _Atomic uint32_t busy; /* workers in the current job, not yet finished */
    bool started;          /* start tried, in this process */
} pool = {
    .submit = PTHREAD_MUTEX_INITIALIZER,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
};

static uint32_t
cpus_allowed(void)
{
    cpu_set_t set;
    long n;

    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) {
        n = CPU_COUNT(&set);
    } else {
        n = sysconf(_SC_NPROCESSORS_ONLN);
    }
    if (n < 1) {
        n = 1;
    }
    return n > POOL_MAX_THREADS ? POOL_MAX_THREADS : (uint32_t)n;
}

/* A spinning thread's hint to the CPU (fewer cycles taken from the
 * other hyper-thread, no memory-order mis-speculation on exit). */
static inline void
spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Poll until *v differs from `old` or POOL_SPIN_NS pass: whether it
 * did.  Acquire: what was written before *v changed is visible. */
static bool
poll_change64(_Atomic uint64_t *v, uint64_t old)
{
    uint64_t until = nrtemu__monotonic_ns() + POOL_SPIN_NS;

    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (atomic_load_explicit(v, memory_order_acquire) != old) {
                return true;
            }
            spin_pause();
        }
        if (nrtemu__monotonic_ns() >= until) {
            return false;
        }
    }
}

static bool
poll_zero32(_Atomic uint32_t *v)
{
    uint64_t until = nrtemu__monotonic_ns() + POOL_SPIN_NS;

    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (atomic_load_explicit(v, memory_order_acquire) == 0) {
                return true;
            }
            spin_pause();
        }
        if (nrtemu__monotonic_ns() >= until) {
            return false;
        }
    }
}

/* The tasks a thread claims; `caller`: the thread that posted the job,
 * which has slot 0 (its share of the work is what the back-off below
 * weighs), where workers take the others as they join. */
static void
job_work(struct job *j, bool caller)
{
    if (j->fn == NULL) {
        /* A slot first: a worker past the last one leaves the tasks to
         * those that have one. */
        uint32_t slot = caller ? 0
                               : atomic_fetch_add_explicit(
                                     &j->taken, 1, memory_order_relaxed);
        if (slot >= j->slots) {
            return;
        }
        for (;;) {
            uint32_t t =
                atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
            if (t >= j->count) {
                return;
            }
            j->slot_fn(j->arg, t, slot);
        }
    }
    for (;;) {
        uint32_t t =
            atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (t >= j->count) {
            return;
        }
        j->fn(j->arg, t);
    }
}

/*
 * Keep the workers off their caller's CPU.  The scheduler may wake a
 * parked worker on the CPU of the thread that woke it, with another one
 * idle, and there (since Linux 6.6's EEVDF scheduler lets the running
 * caller finish its slice) it waits for the caller to finish its share:
 * a job of two halves then runs them one after the other, even on an
 * idle machine (the per-thread run and wait times of
 * /proc/<pid>/task/<tid>/schedstat show the worker runnable for most of
 * the caller's time).  A worker that moves itself once it runs is too
 * late.  So the caller, when its
 * CPU is not the one the workers were last kept off, narrows every
 * worker's affinity to the others before it wakes them, and the wakeup
 * places them there.  With `lock` held.
 */
static void
workers_place(int caller_cpu)
{
    cpu_set_t other;

    if (caller_cpu == pool.kept_off || caller_cpu < 0 ||
        caller_cpu >= CPU_SETSIZE || !pool.have_allowed) {
        return;
    }
    other = pool.allowed;
    CPU_CLR(caller_cpu, &other);
    if (CPU_COUNT(&other) == 0) {
        return;
    }
    for (uint32_t i = 0; i < pool.workers; i++) {
        pthread_setaffinity_np(pool.tids[i], sizeof other, &other);
    }
    pool.kept_off = caller_cpu;
}

/* `start`: the generation when the worker was created; any later one is
 * a job for it, even one posted before it first took the lock. */
static void *
worker_main(void *start)
{
    uint64_t seen = (uint64_t)(uintptr_t)start;

    for (;;) {
        struct job *j;
        /* Polled first, then parked. */
        poll_change64(&pool.generation, seen);
        pthread_mutex_lock(&pool.lock);
        while (pool.generation == seen) {
            pthread_cond_wait(&pool.wake, &pool.lock);
        }
        seen = pool.generation;
        j = pool.job;
        if (j == NULL) {
            pthread_mutex_unlock(&pool.lock);
            continue; /* withdrawn before this worker woke */
        }
        pool.busy++;
        pthread_mutex_unlock(&pool.lock);
        job_work(j, false);
        pthread_mutex_lock(&pool.lock);
        /* Release: the caller may reuse the job once it reads 0. */
        if (atomic_fetch_sub_explicit(&pool.busy, 1, memory_order_release) ==
            1) {
            pthread_cond_signal(&pool.done);
        }
        pthread_mutex_unlock(&pool.lock);
    }
    return NULL;
}

/* With `submit` held: start the workers, once per process.  They block
 * every signal, which stay with the application's threads. */
static void
pool_start(void)
{
    uint32_t want = nrtemu__pool_threads() - 1;
    sigset_t all, old;
    pthread_attr_t attr;

    pool.started = true;
    pool.kept_off = -1;
    pool.have_allowed =
        pthread_getaffinity_np(pthread_self(), sizeof pool.allowed,
                               &pool.allowed) == 0;
    if (want == 0 || pthread_attr_init(&attr) != 0) {
        return;
    }
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (uint32_t i = 0; i < want; i++) {
        pthread_t tid;
        /* Counted under the lock: a worker reads generation there. */
        pthread_mutex_lock(&pool.lock);
        if (pthread_create(&tid, &attr, worker_main,
                           (void *)(uintptr_t)pool.generation) != 0) {
            pthread_mutex_unlock(&pool.lock);
            break;
        }
        pool.tids[pool.workers++] = tid;
        pthread_mutex_unlock(&pool.lock);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
}

/* The CPU count, read once: kernels split their work by it. */
static uint32_t cpu_total = 1;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

static void
cpu_count_read(void)
{
    cpu_total = cpus_allowed();
}

uint32_t
nrtemu__pool_threads(void)
{
    pthread_once(&cpu_once, cpu_count_read);
    return cpu_total;
}

/* The last-level cache, read once: sysfs says what this machine (or VM)
 * has; sysconf may report the host's. */
static uint64_t llc_bytes = (uint64_t)32 << 20;
static pthread_once_t llc_once = PTHREAD_ONCE_INIT;

static void
llc_read(void)
{
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    unsigned long long n = 0;
    char unit = 0;
    long conf;

    if (f != NULL) {
        if (fscanf(f, "%llu%c", &n, &unit) >= 1) {
            n *= unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1;
        }
        fclose(f);
    }
    if (n == 0) {
        conf = sysconf(_SC_LEVEL3_CACHE_SIZE);
        n = conf > 0 ? (unsigned long long)conf : 0;
    }
    if (n != 0) {
        llc_bytes = n;
    }
}

uint64_t
nrtemu__pool_llc_bytes(void)
{
    pthread_once(&llc_once, llc_read);
    return llc_bytes;
}

/*
 * Back-off when the machine is oversubscribed.  A worker that joined a
 * job and was then descheduled (more runnable threads than CPUs) holds
 * its task, and the caller waits for it once it has done the rest: with
 * other processes busy, that wait can be a scheduler time slice, many
 * times the job.  So when the caller waited for stragglers longer than it
 * worked itself, and more than POOL_STRAGGLE_NS, jobs run on the caller
 * alone for the next POOL_BACKOFF_NS, after which the pool is tried again.
 * A quiet machine never backs off: its workers keep up.
 */
#define POOL_STRAGGLE_NS 200000u
#define POOL_BACKOFF_NS 50000000u

static _Atomic uint64_t serial_until_ns;

static void
run_job(struct job *j)
{
    uint32_t count = j->count;
    bool posted = false;
    uint64_t start = 0, worked = 0, waited;

    atomic_init(&j->next, 0);
    atomic_init(&j->taken, 1);
    if (count > 1) {
        start = nrtemu__monotonic_ns();
    }
    if (count > 1 && (j->fn != NULL || j->slots > 1) &&
        start >=
            atomic_load_explicit(&serial_until_ns, memory_order_relaxed) &&
        pthread_mutex_trylock(&pool.submit) == 0) {
        if (!pool.started) {
            pool_start();
        }
        pthread_mutex_lock(&pool.lock);
        if (pool.workers > 0) {
            pool.job = j;
            workers_place(sched_getcpu());
            pool.busy = 0;
            pool.generation++;
            pthread_cond_broadcast(&pool.wake);
            posted = true;
        }
        pthread_mutex_unlock(&pool.lock);
        if (!posted) {
            pthread_mutex_unlock(&pool.submit);
        }
    }
    job_work(j, true);
    if (posted) {
        worked = nrtemu__monotonic_ns();
        pthread_mutex_lock(&pool.lock);
        pool.job = NULL; /* no worker joins from now on */
        pthread_mutex_unlock(&pool.lock);
        /* Polled first, then slept on. */
        if (!poll_zero32(&pool.busy)) {
            pthread_mutex_lock(&pool.lock);
            while (pool.busy > 0) {
                pthread_cond_wait(&pool.done, &pool.lock);
            }
            pthread_mutex_unlock(&pool.lock);
        }
        pthread_mutex_unlock(&pool.submit);
        waited = nrtemu__monotonic_ns() - worked;
        if (waited > POOL_STRAGGLE_NS && waited > worked - start) {
            atomic_store_explicit(&serial_until_ns,
                                  worked + waited + POOL_BACKOFF_NS,
                                  memory_order_relaxed);
        }
    }
}

void
nrtemu__pool_run(nrtemu_pool_fn fn, void *arg, uint32_t count)
{
    struct job j = {.fn = fn, .arg = arg, .count = count};

    run_job(&j);
}

void
nrtemu__pool_run_slots(nrtemu_pool_slot_fn fn, void *arg, uint32_t count,
                       uint32_t slots)
{
    struct job j = {.slot_fn = fn,
                    .arg = arg,
                    .count = count,
                    .slots = slots > 0 ? slots : 1};

    run_job(&j);
}

uint32_t
nrtemu__pool_tasks(uint64_t units, uint64_t min_units)
{
    uint64_t threads = nrtemu__pool_threads();
    uint64_t most = units / (min_units > 0 ? min_units : 1);
    uint64_t want = threads * NRTEMU_POOL_TASKS_PER_THREAD;

    if (threads < 2 || most < 2) {
        return 1;
    }
    return (uint32_t)(want < most ? want : most);
}

void
nrtemu__pool_atfork(enum nrtemu_fork_phase phase)
{
    /* Held across fork(): a job in flight finishes first, so the child
     * copies no half-claimed job.  The child has none of the workers. */
    switch (phase) {
    case NRTEMU_FORK_PREPARE:
        pthread_mutex_lock(&pool.submit);
        pthread_mutex_lock(&pool.lock);
        break;
    case NRTEMU_FORK_PARENT:
        pthread_mutex_unlock(&pool.lock);
        pthread_mutex_unlock(&pool.submit);
        break;
    case NRTEMU_FORK_CHILD:
        pthread_mutex_init(&pool.submit, NULL);
        pthread_mutex_init(&pool.lock, NULL);
        pthread_cond_init(&pool.wake, NULL);
        pthread_cond_init(&pool.done, NULL);
        pool.generation = 0;
        pool.job = NULL;
        pool.workers = 0;
        pool.busy = 0;
        pool.started = false;
        break;
    }
}
