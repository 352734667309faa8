/*
 * test_env_parse.c - the pure environment parsers, linked in directly.
 */
#include "test.h"

#include "util/env_parse.h"
#include "util/error.h"

static char err[256];

static void
visible_ok(const char *text, uint32_t total, uint32_t first, uint32_t count)
{
    uint32_t f = 12345, c = 12345;

    err[0] = '\0';
    if (nrtemu__parse_visible_cores(text, total, &f, &c, err, sizeof err) !=
        NRT_SUCCESS) {
        TEST_FAIL_("'%s' rejected: %s", text, err);
    }
    ASSERT_UEQ(f, first);
    ASSERT_UEQ(c, count);
}

static void
visible_bad(const char *text, uint32_t total, const char *reason)
{
    uint32_t f = 12345, c = 12345;

    err[0] = '\0';
    ASSERT_STATUS(
        nrtemu__parse_visible_cores(text, total, &f, &c, err, sizeof err),
        NRT_INVALID);
    ASSERT_STR_CONTAINS(err, reason);
    ASSERT_UEQ(f, 12345);
    ASSERT_UEQ(c, 12345);
}

static void
test_visible_cores_valid(void)
{
    visible_ok("0", 2, 0, 1);
    visible_ok("1", 2, 1, 1);
    visible_ok("0-1", 2, 0, 2);
    visible_ok("0-3", 32, 0, 4);
    visible_ok("3,4,5", 32, 3, 3);
    visible_ok("3-5,6", 32, 3, 4);
    visible_ok("3,4-6,7-7", 32, 3, 5);
    visible_ok(" 3 - 5 , 6 ", 32, 3, 4);
    visible_ok("\t31\n", 32, 31, 1);
    visible_ok("0-127", 128, 0, 128);
    visible_ok("007", 8, 7, 1);
}

static void
test_visible_cores_invalid(void)
{
    visible_bad("", 2, "expected a core index");
    visible_bad(" ", 2, "expected a core index");
    visible_bad("a", 2, "expected a core index");
    visible_bad("-1", 2, "expected a core index");
    visible_bad("+1", 2, "expected a core index");
    visible_bad("0,", 2, "expected a core index");
    visible_bad(",0", 2, "expected a core index");
    visible_bad("0,,1", 2, "expected a core index");
    visible_bad("0-", 2, "end of a range");
    visible_bad("1-0", 2, "decreasing");
    visible_bad("3,5,6", 32, "contiguous");
    visible_bad("3,3", 32, "contiguous");
    visible_bad("4,3", 32, "contiguous");
    visible_bad("0-2,2", 32, "contiguous");
    visible_bad("2", 2, "does not exist");
    visible_bad("0-2", 2, "does not exist");
    visible_bad("1 2", 4, "unexpected '2'");
    visible_bad("0;1", 4, "unexpected ';'");
    visible_bad("0x1", 4, "unexpected 'x'");
    visible_bad("99999999999999999999", 4, "expected a core index");
}

static void
test_num_cores(void)
{
    uint32_t n = 99;

    ASSERT_OK(nrtemu__parse_num_cores("0", 2, &n, err, sizeof err));
    ASSERT_UEQ(n, 2);
    ASSERT_OK(nrtemu__parse_num_cores(" 1 ", 2, &n, err, sizeof err));
    ASSERT_UEQ(n, 1);
    ASSERT_OK(nrtemu__parse_num_cores("2", 2, &n, err, sizeof err));
    ASSERT_UEQ(n, 2);
    n = 99;
    ASSERT_STATUS(nrtemu__parse_num_cores("3", 2, &n, err, sizeof err),
                  NRT_RESOURCE);
    ASSERT_STR_CONTAINS(err, "3 cores requested, the instance has 2");
    ASSERT_STATUS(nrtemu__parse_num_cores("-1", 2, &n, err, sizeof err),
                  NRT_INVALID);
    ASSERT_STATUS(nrtemu__parse_num_cores("1.5", 2, &n, err, sizeof err),
                  NRT_INVALID);
    ASSERT_STATUS(nrtemu__parse_num_cores("two", 2, &n, err, sizeof err),
                  NRT_INVALID);
    ASSERT_STATUS(nrtemu__parse_num_cores("", 2, &n, err, sizeof err),
                  NRT_INVALID);
    ASSERT_UEQ(n, 99);
}

static void
size_ok(const char *text, uint64_t expected)
{
    uint64_t bytes = 0;

    if (nrtemu__parse_byte_size(text, &bytes, err, sizeof err) !=
        NRT_SUCCESS) {
        TEST_FAIL_("'%s' rejected: %s", text, err);
    }
    ASSERT_UEQ(bytes, expected);
}

static void
test_byte_size(void)
{
    uint64_t bytes = 7;

    size_ok("0", 0);
    size_ok("4096", 4096);
    size_ok("4096B", 4096);
    size_ok("64K", 64 << 10);
    size_ok("64k", 64 << 10);
    size_ok("64KB", 64 << 10);
    size_ok("64KiB", 64 << 10);
    size_ok("64kib", 64 << 10);
    size_ok("512M", (uint64_t)512 << 20);
    size_ok(" 512 MiB ", (uint64_t)512 << 20);
    size_ok("1G", (uint64_t)1 << 30);
    size_ok("24GiB", (uint64_t)24 << 30);
    size_ok("1T", (uint64_t)1 << 40);
    size_ok("18446744073709551615", UINT64_MAX);
    ASSERT_STATUS(nrtemu__parse_byte_size("", &bytes, err, sizeof err),
                  NRT_INVALID);
    ASSERT_STATUS(nrtemu__parse_byte_size("G", &bytes, err, sizeof err),
                  NRT_INVALID);
    ASSERT_STATUS(nrtemu__parse_byte_size("-1", &bytes, err, sizeof err),
                  NRT_INVALID);
    ASSERT_STATUS(nrtemu__parse_byte_size("1.5G", &bytes, err, sizeof err),
                  NRT_INVALID);
    ASSERT_STATUS(nrtemu__parse_byte_size("12X", &bytes, err, sizeof err),
                  NRT_INVALID);
    ASSERT_STR_CONTAINS(err, "unknown unit 'X'");
    ASSERT_STATUS(nrtemu__parse_byte_size("1 G B", &bytes, err, sizeof err),
                  NRT_INVALID);
    ASSERT_STATUS(nrtemu__parse_byte_size("18446744073709551616", &bytes, err,
                                          sizeof err),
                  NRT_INVALID);
    ASSERT_STATUS(
        nrtemu__parse_byte_size("16777216T", &bytes, err, sizeof err),
        NRT_INVALID);
    ASSERT_STR_CONTAINS(err, "too large");
    ASSERT_UEQ(bytes, 7);
}

static void
test_lnc(void)
{
    uint32_t lnc = 0;

    ASSERT_OK(nrtemu__parse_lnc("1", &lnc, err, sizeof err));
    ASSERT_UEQ(lnc, 1);
    ASSERT_OK(nrtemu__parse_lnc(" 2 ", &lnc, err, sizeof err));
    ASSERT_UEQ(lnc, 2);
    ASSERT_STATUS(nrtemu__parse_lnc("0", &lnc, err, sizeof err), NRT_INVALID);
    ASSERT_STATUS(nrtemu__parse_lnc("4", &lnc, err, sizeof err), NRT_INVALID);
    ASSERT_STATUS(nrtemu__parse_lnc("two", &lnc, err, sizeof err),
                  NRT_INVALID);
    ASSERT_UEQ(lnc, 2);
}

static void
test_log_level(void)
{
    ASSERT_EQ(nrtemu__parse_log_level("ERROR"), NRTEMU_LOG_ERROR);
    ASSERT_EQ(nrtemu__parse_log_level("error"), NRTEMU_LOG_ERROR);
    ASSERT_EQ(nrtemu__parse_log_level("Warning"), NRTEMU_LOG_WARN);
    ASSERT_EQ(nrtemu__parse_log_level("warn"), NRTEMU_LOG_WARN);
    ASSERT_EQ(nrtemu__parse_log_level(" INFO "), NRTEMU_LOG_INFO);
    ASSERT_EQ(nrtemu__parse_log_level("debug"), NRTEMU_LOG_DEBUG);
    ASSERT_EQ(nrtemu__parse_log_level("TRACE"), NRTEMU_LOG_TRACE);
    ASSERT_EQ(nrtemu__parse_log_level("quiet"), NRTEMU_LOG_QUIET);
    ASSERT_EQ(nrtemu__parse_log_level(""), -1);
    ASSERT_EQ(nrtemu__parse_log_level("LOUD"), -1);
    ASSERT_EQ(nrtemu__parse_log_level("ERROR X"), -1);
}

static void
test_namespace(void)
{
    char long_name[66];

    ASSERT_TRUE(nrtemu__namespace_valid("default"));
    ASSERT_TRUE(nrtemu__namespace_valid("a"));
    ASSERT_TRUE(nrtemu__namespace_valid("ctest-tensor_1.2"));
    ASSERT_TRUE(nrtemu__namespace_valid(".hidden"));
    ASSERT_TRUE(!nrtemu__namespace_valid("..."));
    ASSERT_TRUE(!nrtemu__namespace_valid(""));
    ASSERT_TRUE(!nrtemu__namespace_valid("."));
    ASSERT_TRUE(!nrtemu__namespace_valid(".."));
    ASSERT_TRUE(!nrtemu__namespace_valid("a/b"));
    ASSERT_TRUE(!nrtemu__namespace_valid("../x"));
    ASSERT_TRUE(!nrtemu__namespace_valid("a b"));
    ASSERT_TRUE(!nrtemu__namespace_valid("caf\xc3\xa9"));
    memset(long_name, 'x', 64);
    long_name[64] = '\0';
    ASSERT_TRUE(nrtemu__namespace_valid(long_name));
    long_name[64] = 'x';
    long_name[65] = '\0';
    ASSERT_TRUE(!nrtemu__namespace_valid(long_name));
}

static void
test_env_blank(void)
{
    ASSERT_TRUE(nrtemu__env_blank(""));
    ASSERT_TRUE(nrtemu__env_blank(" \t\n"));
    ASSERT_TRUE(!nrtemu__env_blank(" 0 "));
}

int
main(void)
{
    test_begin("test_env_parse");
    RUN_TEST(test_visible_cores_valid);
    RUN_TEST(test_visible_cores_invalid);
    RUN_TEST(test_num_cores);
    RUN_TEST(test_byte_size);
    RUN_TEST(test_lnc);
    RUN_TEST(test_log_level);
    RUN_TEST(test_namespace);
    RUN_TEST(test_env_blank);
    return 0;
}
