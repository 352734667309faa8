/*
 * test.h - a minimal harness for the emulator's C tests.
 *
 * ASSERT_* macros print the expression, both values and the location, then
 * abort the test program: one failure is enough to investigate, and the
 * exit status is what meson looks at.
 *
 * test_begin() gives every test program a private lock namespace
 * ("<NRTPY_EMU_NAMESPACE or name>-<pid>") so that test programs running in
 * parallel, several build trees and a developer's own processes never
 * share emulated cores; the namespace directory is removed at exit.
 */
#ifndef NRTEMU_TEST_H
#define NRTEMU_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <ftw.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nrt/nrt.h"
#include "nrt/nrtemu.h"

/*
 * Time bounds in the tests are set for optimised builds.  Under the
 * sanitizers (make test-sanitize) the same work runs several times slower
 * (ThreadSanitizer instruments every memory access), so a bound is
 * multiplied by TEST_TIME_FACTOR there: it still catches a quadratic
 * regression, which is what the bounds are for.
 */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define TEST_TIME_FACTOR 10
#else
#define TEST_TIME_FACTOR 1
#endif

#define TEST_FAIL_(...)                                               \
    do {                                                              \
        fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, __func__); \
        fprintf(stderr, __VA_ARGS__);                                 \
        fprintf(stderr, "\n  last error: %s\n", nrtemu_last_error()); \
        fflush(stderr);                                               \
        abort();                                                      \
    } while (0)

#define ASSERT_TRUE(expr)                              \
    do {                                               \
        if (!(expr)) {                                 \
            TEST_FAIL_("assertion failed: %s", #expr); \
        }                                              \
    } while (0)

#define ASSERT_INT_OP_(a, op, b)                                           \
    do {                                                                   \
        intmax_t a_ = (intmax_t)(a), b_ = (intmax_t)(b);                   \
        if (!(a_ op b_)) {                                                 \
            TEST_FAIL_("%s %s %s: %" PRIdMAX " vs %" PRIdMAX, #a, #op, #b, \
                       a_, b_);                                            \
        }                                                                  \
    } while (0)

#define ASSERT_UINT_OP_(a, op, b)                                          \
    do {                                                                   \
        uintmax_t a_ = (uintmax_t)(a), b_ = (uintmax_t)(b);                \
        if (!(a_ op b_)) {                                                 \
            TEST_FAIL_("%s %s %s: %" PRIuMAX " vs %" PRIuMAX, #a, #op, #b, \
                       a_, b_);                                            \
        }                                                                  \
    } while (0)

#define ASSERT_EQ(a, b) ASSERT_INT_OP_(a, ==, b)
#define ASSERT_NE(a, b) ASSERT_INT_OP_(a, !=, b)
#define ASSERT_UEQ(a, b) ASSERT_UINT_OP_(a, ==, b)
#define ASSERT_ULE(a, b) ASSERT_UINT_OP_(a, <=, b)
#define ASSERT_ULT(a, b) ASSERT_UINT_OP_(a, <, b)

#define ASSERT_PTR_EQ(a, b)                                   \
    do {                                                      \
        const void *a_ = (a), *b_ = (b);                      \
        if (a_ != b_) {                                       \
            TEST_FAIL_("%s == %s: %p vs %p", #a, #b, a_, b_); \
        }                                                     \
    } while (0)

#define ASSERT_NULL(a) ASSERT_PTR_EQ(a, NULL)

#define ASSERT_NOT_NULL(a)                \
    do {                                  \
        if ((a) == NULL) {                \
            TEST_FAIL_("%s is NULL", #a); \
        }                                 \
    } while (0)

/* Compare statuses by name, so a failure reads "NRT_INVALID vs NRT_...". */
#define ASSERT_STATUS(expr, expected)                             \
    do {                                                          \
        NRT_STATUS got_ = (expr), want_ = (expected);             \
        if (got_ != want_) {                                      \
            TEST_FAIL_("%s: got %s(%d), expected %s(%d)", #expr,  \
                       nrt_get_status_as_str(got_), (int)got_,    \
                       nrt_get_status_as_str(want_), (int)want_); \
        }                                                         \
    } while (0)

#define ASSERT_OK(expr) ASSERT_STATUS(expr, NRT_SUCCESS)

#define ASSERT_STR_EQ(a, b)                                           \
    do {                                                              \
        const char *a_ = (a), *b_ = (b);                              \
        if (strcmp(a_, b_) != 0) {                                    \
            TEST_FAIL_("%s == %s: \"%s\" vs \"%s\"", #a, #b, a_, b_); \
        }                                                             \
    } while (0)

#define ASSERT_STR_CONTAINS(haystack, needle)                     \
    do {                                                          \
        const char *h_ = (haystack), *n_ = (needle);              \
        if (strstr(h_, n_) == NULL) {                             \
            TEST_FAIL_("\"%s\" does not contain \"%s\"", h_, n_); \
        }                                                         \
    } while (0)

/* The whole file at `path`, NUL-terminated (malloc'ed: the caller frees
 * it), and its length in *len; a test failure when it cannot be read. */
static inline char *
test_read_file(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    char *text;
    long n;

    ASSERT_NOT_NULL(fp);
    ASSERT_EQ(fseek(fp, 0, SEEK_END), 0);
    n = ftell(fp);
    ASSERT_TRUE(n > 0);
    rewind(fp);
    text = malloc((size_t)n + 1);
    ASSERT_NOT_NULL(text);
    ASSERT_UEQ(fread(text, 1, (size_t)n, fp), (size_t)n);
    text[n] = '\0';
    fclose(fp);
    *len = (size_t)n;
    return text;
}

/*
 * Shards: TEST_SHARD=i/n runs the i-th of n shares of a program's
 * RUN_TESTs (by their order, i from 0), so that meson can run a long test
 * program as several tests side by side, each inside its time limit
 * (tests/c/meson.build).  Unset, every test runs.  A malformed value
 * fails the program rather than running nothing.
 */
static inline bool
test_in_shard_(void)
{
    static unsigned next, index, count;
    unsigned mine = next++;

    if (count == 0) {
        const char *shard = getenv("TEST_SHARD");
        char *end;

        count = 1;
        if (shard != NULL && shard[0] != '\0') {
            unsigned long i = strtoul(shard, &end, 10), n;

            if (*end != '/' || (n = strtoul(end + 1, &end, 10)) == 0 ||
                *end != '\0' || i >= n || n > 64) {
                fprintf(stderr, "TEST_SHARD=%s: expected i/n, 0 <= i < n\n",
                        shard);
                abort();
            }
            index = (unsigned)i;
            count = (unsigned)n;
        }
    }
    return mine % count == index;
}

/* Run one test function of this shard, announcing it so a crash names
 * its test. */
#define RUN_TEST(fn)                         \
    do {                                     \
        if (test_in_shard_()) {              \
            test_reset_env();                \
            fprintf(stderr, "-- %s\n", #fn); \
            fn();                            \
        }                                    \
    } while (0)

static char test_namespace_[128];
static pid_t test_owner_pid_;

/* Variables the emulator reads: every test starts without them. */
static inline void
test_reset_env(void)
{
    static const char *const names[] = {
        "NEURON_RT_VISIBLE_CORES",  "NEURON_RT_NUM_CORES",
        "NRTPY_EMU_INSTANCE",       "NRTPY_EMU_HBM_PER_CORE",
        "NEURON_LOGICAL_NC_CONFIG", "NEURON_RT_VIRTUAL_CORE_SIZE",
        "NEURON_RT_LOG_LEVEL_NRT",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        unsetenv(names[i]);
    }
    setenv("NRTPY_EMU_NAMESPACE", test_namespace_, 1);
}

static inline int
test_remove_entry_(const char *path, const struct stat *st, int flag,
                   struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* Remove <root>/<namespace> under both possible lock roots. */
static inline void
test_remove_namespace(const char *ns)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    char path[4096];

    if (xdg != NULL && xdg[0] == '/') {
        snprintf(path, sizeof path, "%s/nrtpy-emu/%s", xdg, ns);
        nftw(path, test_remove_entry_, 8, FTW_DEPTH | FTW_PHYS);
    }
    snprintf(path, sizeof path, "/tmp/nrtpy-emu-%ld/%s", (long)geteuid(), ns);
    nftw(path, test_remove_entry_, 8, FTW_DEPTH | FTW_PHYS);
}

static inline void
test_cleanup_(void)
{
    /* Forked children exit too; only the parent owns the directory. */
    if (getpid() == test_owner_pid_) {
        test_remove_namespace(test_namespace_);
    }
}

static inline void
test_begin(const char *name)
{
    const char *base = getenv("NRTPY_EMU_NAMESPACE");

    if (base == NULL || base[0] == '\0') {
        base = name;
    }
    test_owner_pid_ = getpid();
    snprintf(test_namespace_, sizeof test_namespace_, "%.48s-%ld", base,
             (long)test_owner_pid_);
    atexit(test_cleanup_);
    /*
     * The tests fail calls on purpose; their logs would bury real output.
     * Failures print the last error anyway, and test_runtime checks the
     * log lines themselves.
     */
    if (getenv("NEURON_RT_LOG_LEVEL") == NULL) {
        setenv("NEURON_RT_LOG_LEVEL", "QUIET", 1);
    }
    test_reset_env();
}

#endif /* NRTEMU_TEST_H */
