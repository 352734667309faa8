/*
 * test_tensor_set.c - the name -> tensor map.
 */
#include <stdint.h>
#include <stdio.h>

#include "test.h"

static void
test_sets_work_without_a_runtime(void)
{
    nrt_tensor_set_t *set = NULL;
    nrt_tensor_t *fake = (nrt_tensor_t *)(uintptr_t)0x1000, *got = NULL;

    /* Sets are host containers: no runtime needed, and handles borrowed. */
    ASSERT_OK(nrt_allocate_tensor_set(&set));
    ASSERT_NOT_NULL(set);
    ASSERT_OK(nrt_add_tensor_to_tensor_set(set, "a", fake));
    ASSERT_OK(nrt_get_tensor_from_tensor_set(set, "a", &got));
    ASSERT_PTR_EQ(got, fake);
    nrt_destroy_tensor_set(&set);
    ASSERT_NULL(set);
}

static void
test_add_get_replace(void)
{
    nrt_tensor_set_t *set;
    nrt_tensor_t *a, *b, *got;
    char name[32];

    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    ASSERT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 8, "a", &a));
    ASSERT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, 8, "b", &b));
    ASSERT_OK(nrt_allocate_tensor_set(&set));

    ASSERT_OK(nrt_add_tensor_to_tensor_set(set, "input0", a));
    ASSERT_OK(nrt_add_tensor_to_tensor_set(set, "output0", b));
    ASSERT_OK(nrt_get_tensor_from_tensor_set(set, "input0", &got));
    ASSERT_PTR_EQ(got, a);
    ASSERT_OK(nrt_get_tensor_from_tensor_set(set, "output0", &got));
    ASSERT_PTR_EQ(got, b);
    /* The key need not be the tensor's name; adding again replaces. */
    ASSERT_OK(nrt_add_tensor_to_tensor_set(set, "input0", b));
    ASSERT_OK(nrt_get_tensor_from_tensor_set(set, "input0", &got));
    ASSERT_PTR_EQ(got, b);

    /* Keys are copied: the caller's buffer can change afterwards. */
    snprintf(name, sizeof name, "temp");
    ASSERT_OK(nrt_add_tensor_to_tensor_set(set, name, a));
    snprintf(name, sizeof name, "gone");
    ASSERT_OK(nrt_get_tensor_from_tensor_set(set, "temp", &got));
    ASSERT_PTR_EQ(got, a);

    /* A miss is NRT_FAILURE and leaves the output alone. */
    got = (nrt_tensor_t *)(uintptr_t)0x42;
    ASSERT_STATUS(nrt_get_tensor_from_tensor_set(set, "gone", &got),
                  NRT_FAILURE);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "no tensor named 'gone'");
    ASSERT_STATUS(nrt_get_tensor_from_tensor_set(set, "", &got), NRT_FAILURE);
    ASSERT_PTR_EQ(got, (nrt_tensor_t *)(uintptr_t)0x42);

    /* Growth past the initial capacity. */
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "t%d", i);
        ASSERT_OK(nrt_add_tensor_to_tensor_set(set, name, i % 2 ? a : b));
    }
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "t%d", i);
        ASSERT_OK(nrt_get_tensor_from_tensor_set(set, name, &got));
        ASSERT_PTR_EQ(got, i % 2 ? a : b);
    }

    /* Destroying the set leaves the tensors alive. */
    nrt_destroy_tensor_set(&set);
    ASSERT_OK(nrt_tensor_write(a, "x", 0, 1));
    nrt_tensor_free(&a);
    nrt_tensor_free(&b);
    nrt_close();
}

static void
test_invalid_arguments(void)
{
    nrt_tensor_set_t *set;
    nrt_tensor_t *t = (nrt_tensor_t *)(uintptr_t)0x1000, *got = NULL;
    int not_a_set[32] = {0};

    ASSERT_STATUS(nrt_allocate_tensor_set(NULL), NRT_INVALID);
    ASSERT_OK(nrt_allocate_tensor_set(&set));
    ASSERT_STATUS(nrt_add_tensor_to_tensor_set(NULL, "a", t), NRT_INVALID);
    ASSERT_STATUS(nrt_add_tensor_to_tensor_set(set, NULL, t), NRT_INVALID);
    ASSERT_STATUS(nrt_add_tensor_to_tensor_set(set, "a", NULL), NRT_INVALID);
    ASSERT_STATUS(nrt_get_tensor_from_tensor_set(NULL, "a", &got),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_get_tensor_from_tensor_set(set, NULL, &got),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_get_tensor_from_tensor_set(set, "a", NULL), NRT_INVALID);
    /* A pointer that is not a set is refused, not trusted. */
    ASSERT_STATUS(nrt_add_tensor_to_tensor_set(not_a_set, "a", t),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_get_tensor_from_tensor_set(not_a_set, "a", &got),
                  NRT_INVALID);
    ASSERT_NULL(got);
    nrt_destroy_tensor_set(&set);
    nrt_destroy_tensor_set(&set); /* *set is NULL now: a no-op */
    nrt_destroy_tensor_set(NULL);
}

/* Thousands of names: every one found (growth rehashes the index), each
 * replaced in place, and a name never added is absent. */
static void
test_many_names(void)
{
    enum { N = 5000 };
    nrt_tensor_set_t *set = NULL;
    nrt_tensor_t *got = NULL;
    char name[32];

    ASSERT_OK(nrt_allocate_tensor_set(&set));
    for (uintptr_t i = 0; i < N; i++) {
        snprintf(name, sizeof name, "w%lu", (unsigned long)i);
        ASSERT_OK(
            nrt_add_tensor_to_tensor_set(set, name, (nrt_tensor_t *)(i + 1)));
    }
    for (uintptr_t i = 0; i < N; i += 7) {
        snprintf(name, sizeof name, "w%lu", (unsigned long)i);
        ASSERT_OK(
            nrt_add_tensor_to_tensor_set(set, name, (nrt_tensor_t *)(i + 2)));
    }
    for (uintptr_t i = 0; i < N; i++) {
        snprintf(name, sizeof name, "w%lu", (unsigned long)i);
        ASSERT_OK(nrt_get_tensor_from_tensor_set(set, name, &got));
        ASSERT_PTR_EQ(got, (nrt_tensor_t *)(i + (i % 7 == 0 ? 2 : 1)));
    }
    ASSERT_STATUS(nrt_get_tensor_from_tensor_set(set, "w5000", &got),
                  NRT_FAILURE);
    ASSERT_STATUS(nrt_get_tensor_from_tensor_set(set, "", &got), NRT_FAILURE);
    nrt_destroy_tensor_set(&set);
    ASSERT_NULL(set);
}

int
main(void)
{
    test_begin("test_tensor_set");
    RUN_TEST(test_sets_work_without_a_runtime);
    RUN_TEST(test_add_get_replace);
    RUN_TEST(test_invalid_arguments);
    RUN_TEST(test_many_names);
    return 0;
}
