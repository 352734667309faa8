/*
 * test_threads.c - many threads allocating, writing, reading, slicing and
 * freeing at once; every byte read back must be the thread's own.
 */
#include <pthread.h>

#include "test.h"

#define THREADS 8
#define ROUNDS 300

struct worker {
    pthread_t thread;
    unsigned id;
    size_t peak;
};

/* A small deterministic generator: tests must not depend on rand(). */
static uint32_t
next_random(uint32_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    return *state;
}

static void *
worker_main(void *arg)
{
    struct worker *w = arg;
    static const size_t sizes[] = {1, 24, 4096, 70000, 1 << 20, 3 << 20};
    unsigned char *in = malloc(3 << 20), *out = malloc(3 << 20);
    uint32_t rng = 0x9e3779b9u * (w->id + 1);
    nrt_tensor_set_t *set;

    ASSERT_NOT_NULL(in);
    ASSERT_NOT_NULL(out);
    ASSERT_OK(nrt_allocate_tensor_set(&set));
    for (int round = 0; round < ROUNDS; round++) {
        size_t size = sizes[next_random(&rng) % 6];
        int vnc = (int)(next_random(&rng) % 2);
        unsigned char tag = (unsigned char)(w->id * 31 + round);
        nrt_tensor_t *t, *slice, *got;
        nrt_vnc_memory_stats_t stats;
        size_t half = size / 2;

        ASSERT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, size,
                                      "worker", &t));
        memset(in, tag, size);
        in[size - 1] = (unsigned char)~tag;
        ASSERT_OK(nrt_tensor_write(t, in, 0, size));
        ASSERT_OK(nrt_tensor_read(t, out, 0, size));
        ASSERT_TRUE(memcmp(in, out, size) == 0);

        ASSERT_OK(
            nrt_tensor_allocate_slice(t, half, size - half, "half", &slice));
        ASSERT_OK(nrt_add_tensor_to_tensor_set(set, "slice", slice));
        ASSERT_OK(nrt_get_tensor_from_tensor_set(set, "slice", &got));
        ASSERT_PTR_EQ(got, slice);
        /* Free the parent first: the slice keeps the storage. */
        nrt_tensor_free(&t);
        ASSERT_OK(nrt_tensor_read(slice, out, 0, size - half));
        ASSERT_TRUE(memcmp(in + half, out, size - half) == 0);
        ASSERT_OK(nrt_tensor_memset(slice, 0, tag ^ 0x55, 1));
        ASSERT_OK(nrt_tensor_read(slice, out, 0, 1));
        ASSERT_UEQ(out[0], (unsigned char)(tag ^ 0x55));
        nrt_tensor_free(&slice);

        ASSERT_OK(nrt_get_vnc_memory_stats((uint32_t)vnc, &stats, sizeof stats,
                                           NULL));
        ASSERT_ULE(stats.bytes_used, stats.bytes_limit);
        if (stats.bytes_used > w->peak) {
            w->peak = stats.bytes_used;
        }
    }
    nrt_destroy_tensor_set(&set);
    free(in);
    free(out);
    return NULL;
}

static void
test_concurrent_tensors(void)
{
    struct worker workers[THREADS];
    nrt_vnc_memory_stats_t stats;
    size_t peak = 0;

    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    for (unsigned i = 0; i < THREADS; i++) {
        workers[i].id = i;
        workers[i].peak = 0;
        ASSERT_EQ(
            pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]),
            0);
    }
    for (unsigned i = 0; i < THREADS; i++) {
        ASSERT_EQ(pthread_join(workers[i].thread, NULL), 0);
        peak = workers[i].peak > peak ? workers[i].peak : peak;
    }
    fprintf(stderr, "   peak bytes_used seen: %zu\n", peak);
    for (uint32_t vnc = 0; vnc < 2; vnc++) {
        ASSERT_OK(nrt_get_vnc_memory_stats(vnc, &stats, sizeof stats, NULL));
        ASSERT_UEQ(stats.bytes_used, 0);
    }
    nrt_close();
}

/* Budget contention: the sum charged never exceeds the limit. */
static void *
hog_main(void *arg)
{
    size_t *granted = arg;

    for (int i = 0; i < 200; i++) {
        nrt_tensor_t *t = NULL;
        NRT_STATUS st = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0,
                                            100000, "hog", &t);
        if (st == NRT_SUCCESS) {
            (*granted)++;
            nrt_tensor_free(&t);
        } else {
            ASSERT_STATUS(st, NRT_RESOURCE);
        }
    }
    return NULL;
}

static void
test_budget_under_contention(void)
{
    pthread_t threads[THREADS];
    size_t granted[THREADS] = {0};
    nrt_vnc_memory_stats_t stats;
    nrt_tensor_t *hold;

    setenv("NRTPY_EMU_HBM_PER_CORE", "400000", 1);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    ASSERT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 150000,
                                  "hold", &hold));
    for (int i = 0; i < THREADS; i++) {
        ASSERT_EQ(pthread_create(&threads[i], NULL, hog_main, &granted[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        ASSERT_EQ(pthread_join(threads[i], NULL), 0);
    }
    ASSERT_OK(nrt_get_vnc_memory_stats(0, &stats, sizeof stats, NULL));
    ASSERT_UEQ(stats.bytes_used, 150000);
    nrt_tensor_free(&hold);
    ASSERT_OK(nrt_get_vnc_memory_stats(0, &stats, sizeof stats, NULL));
    ASSERT_UEQ(stats.bytes_used, 0);
    nrt_close();
}

/* Closing while other threads work: they see NRT_CLOSED, never a crash. */
static void *
racer_main(void *arg)
{
    unsigned char buf[64];
    (void)arg;

    for (int i = 0; i < 2000; i++) {
        nrt_tensor_t *t = NULL;
        NRT_STATUS st = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0,
                                            sizeof buf, "racer", &t);
        if (st != NRT_SUCCESS) {
            ASSERT_TRUE(st == NRT_CLOSED || st == NRT_INVALID);
            continue;
        }
        st = nrt_tensor_write(t, buf, 0, sizeof buf);
        ASSERT_TRUE(st == NRT_SUCCESS || st == NRT_CLOSED ||
                    st == NRT_INVALID);
        nrt_tensor_free(&t);
    }
    return NULL;
}

static void
test_close_while_busy(void)
{
    pthread_t threads[4];
    nrt_vnc_memory_stats_t stats;

    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(pthread_create(&threads[i], NULL, racer_main, NULL), 0);
    }
    for (int i = 0; i < 20; i++) {
        nrt_close();
        ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    }
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(pthread_join(threads[i], NULL), 0);
    }
    ASSERT_OK(nrt_get_vnc_memory_stats(0, &stats, sizeof stats, NULL));
    ASSERT_UEQ(stats.bytes_used, 0);
    nrt_close();
}

int
main(void)
{
    test_begin("test_threads");
    RUN_TEST(test_concurrent_tensors);
    RUN_TEST(test_budget_under_contention);
    RUN_TEST(test_close_while_busy);
    return 0;
}
