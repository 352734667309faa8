/*
 * test_status.c - nrt_get_status_as_str() against the status list.
 */
#include "test.h"

static void
test_every_listed_status_has_its_name(void)
{
#define CHECK_NAME(name, value, text)                                 \
    ASSERT_STR_EQ(nrt_get_status_as_str((NRT_STATUS)(value)), #name); \
    ASSERT_EQ(name, value);
    NRTEMU_STATUS_LIST(CHECK_NAME)
#undef CHECK_NAME
}

static void
test_unknown_values(void)
{
    static const int unknown[] = {-1, 8, 12, 16, 100, 1000, 1001, 1207, 99999};

    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        ASSERT_STR_EQ(nrt_get_status_as_str((NRT_STATUS)unknown[i]),
                      "UNKNOWN STATUS");
    }
}

static void
test_last_error_starts_empty(void)
{
    ASSERT_STR_EQ(nrtemu_last_error(), "");
}

int
main(void)
{
    test_begin("test_status");
    RUN_TEST(test_last_error_starts_empty);
    RUN_TEST(test_every_listed_status_has_its_name);
    RUN_TEST(test_unknown_values);
    return 0;
}
