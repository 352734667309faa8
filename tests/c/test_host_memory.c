/*
 * test_host_memory.c - the rule that keeps host RAM for the rest of the
 * machine (host_memory.h), on figures of any host: its functions are
 * inline, included directly.
 */
#include "test.h"

#include "device/host_memory.h"

#define MIB ((uint64_t)1 << 20)
#define GIB ((uint64_t)1 << 30)

static void
test_margin_is_the_larger_of_floor_and_share(void)
{
    ASSERT_UEQ(nrtemu__host_margin(0), 256 * MIB);
    ASSERT_UEQ(nrtemu__host_margin(4 * GIB), 256 * MIB);
    ASSERT_UEQ(nrtemu__host_margin(8 * GIB), 256 * MIB);
    ASSERT_UEQ(nrtemu__host_margin(24 * GIB), 768 * MIB);
    ASSERT_UEQ(nrtemu__host_margin(1024 * GIB), 32 * GIB);
}

static void
test_commit_keeps_the_margin(void)
{
    const uint64_t margin = 256 * MIB, budget = 16 * GIB;
    const uint64_t held = 4 * GIB, room = budget - margin - held;

    /* Up to the margin exactly, and not a byte further. */
    ASSERT_TRUE(nrtemu__host_commit_fits(budget, held, room, margin));
    ASSERT_TRUE(!nrtemu__host_commit_fits(budget, held, room + 1, margin));
    /* The fault found under stress: 64 MiB more while about 25 MB of the
     * host stayed free was granted; now it is refused. */
    ASSERT_TRUE(!nrtemu__host_commit_fits(budget, budget - 89 * MIB, 64 * MIB,
                                          margin));
    /* Already past the margin (others took memory since): nothing more. */
    ASSERT_TRUE(
        !nrtemu__host_commit_fits(budget, budget - MIB, 64 * 1024, margin));
    ASSERT_TRUE(
        !nrtemu__host_commit_fits(budget, budget + GIB, 64 * 1024, margin));
    /* A host with less than the margin available grants nothing. */
    ASSERT_TRUE(!nrtemu__host_commit_fits(128 * MIB, 0, 64 * 1024, margin));
}

/* An unreadable /proc/meminfo is an unbounded budget; no sum overflows. */
static void
test_commit_does_not_overflow(void)
{
    const uint64_t margin = 256 * MIB;

    ASSERT_TRUE(
        nrtemu__host_commit_fits(UINT64_MAX, 0, UINT64_MAX - margin, margin));
    ASSERT_TRUE(
        !nrtemu__host_commit_fits(UINT64_MAX, 1, UINT64_MAX - margin, margin));
    ASSERT_TRUE(
        !nrtemu__host_commit_fits(UINT64_MAX, UINT64_MAX - margin, 1, margin));
    ASSERT_TRUE(
        !nrtemu__host_commit_fits(16 * GIB, 8 * GIB, UINT64_MAX, margin));
}

int
main(void)
{
    test_begin("host_memory");
    RUN_TEST(test_margin_is_the_larger_of_floor_and_share);
    RUN_TEST(test_commit_keeps_the_margin);
    RUN_TEST(test_commit_does_not_overflow);
    return 0;
}
