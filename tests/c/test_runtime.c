/*
 * test_runtime.c - init/close lifecycle, instance profiles, visible cores,
 * HBM limits, memory statistics, version and logging.
 */
#include <fcntl.h>

#include "test.h"

#define GIB ((uint64_t)1 << 30)

static nrt_tensor_t *
alloc_device(int vnc, size_t size, NRT_STATUS expected)
{
    nrt_tensor_t *t = NULL;

    ASSERT_STATUS(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, size, "t", &t),
        expected);
    return t;
}

static nrt_vnc_memory_stats_t
stats_of(uint32_t vnc)
{
    nrt_vnc_memory_stats_t stats;
    size_t out = 0;

    ASSERT_OK(nrt_get_vnc_memory_stats(vnc, &stats, sizeof stats, &out));
    ASSERT_UEQ(out, sizeof stats);
    return stats;
}

/* Must run first: it checks the state of a process that never called init. */
static void
test_before_init(void)
{
    nrt_vnc_memory_stats_t stats;
    nrt_tensor_t *t = NULL;
    uint32_t n = 0;

    ASSERT_STATUS(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 8, "early", &t),
        NRT_UNINITIALIZED);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "nrt_tensor_allocate: ");
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "not initialized");
    ASSERT_NULL(t);
    ASSERT_STATUS(nrt_tensor_allocate_empty("early", &t), NRT_UNINITIALIZED);
    ASSERT_STATUS(nrt_get_vnc_memory_stats(0, &stats, sizeof stats, NULL),
                  NRT_UNINITIALIZED);
    nrt_close(); /* a no-op, and still "never initialized" afterwards */
    ASSERT_STATUS(nrt_get_vnc_memory_stats(0, &stats, sizeof stats, NULL),
                  NRT_UNINITIALIZED);
    /* The queries documented as callable before init. */
    ASSERT_OK(nrt_get_total_vnc_count(&n));
    ASSERT_UEQ(n, 2);
    ASSERT_OK(nrt_get_visible_vnc_count(&n));
    ASSERT_UEQ(n, 2);
    ASSERT_STR_EQ(nrtemu_instance_name(), "trn1.2xlarge");
}

static void
test_init_close_reinit(void)
{
    nrt_tensor_t *t;

    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_FAILURE);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "nrt_init: ");
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "already initialized");
    t = alloc_device(1, 64, NRT_SUCCESS);
    nrt_tensor_free(&t);
    nrt_close();

    alloc_device(0, 64, NRT_CLOSED);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "closed");
    nrt_close(); /* closing twice is harmless */

    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_PYTORCH, NULL, NULL));
    t = alloc_device(0, 64, NRT_SUCCESS);
    nrt_tensor_free(&t);
    nrt_close();
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "spike", "1.0"));
    nrt_close();
}

static void
test_init_rejects_bad_framework(void)
{
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_INVALID, "", ""), NRT_INVALID);
    ASSERT_STATUS(nrt_init((nrt_framework_type_t)42, "", ""), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "framework type 42");
}

struct profile_case {
    const char *name;
    const char *lnc;        /* NEURON_LOGICAL_NC_CONFIG, or NULL */
    const char *vcore_size; /* NEURON_RT_VIRTUAL_CORE_SIZE, or NULL */
    uint32_t total;
    uint32_t family;
    uint32_t size;
    const char *arch;
    const char *revision;
    uint64_t hbm_per_vnc;
};

static const struct profile_case profiles[] = {
    {"inf2.xlarge", NULL, NULL, 2, NRT_INSTANCE_INF2, NRT_INSTANCE_SIZE_1XL,
     "inferentia2", "v2", 16 * GIB},
    {"inf2.8xlarge", NULL, NULL, 2, NRT_INSTANCE_INF2, NRT_INSTANCE_SIZE_8XL,
     "inferentia2", "v2", 16 * GIB},
    {"inf2.24xlarge", NULL, NULL, 12, NRT_INSTANCE_INF2,
     NRT_INSTANCE_SIZE_24XL, "inferentia2", "v2", 16 * GIB},
    {"inf2.48xlarge", NULL, NULL, 24, NRT_INSTANCE_INF2,
     NRT_INSTANCE_SIZE_48XL, "inferentia2", "v2", 16 * GIB},
    {"trn1.2xlarge", NULL, NULL, 2, NRT_INSTANCE_TRN1, NRT_INSTANCE_SIZE_2XL,
     "trainium", "v2", 16 * GIB},
    /* The logical core size does not apply before Trn2: ignored. */
    {"trn1.2xlarge", "1", NULL, 2, NRT_INSTANCE_TRN1, NRT_INSTANCE_SIZE_2XL,
     "trainium", "v2", 16 * GIB},
    {"trn1.32xlarge", NULL, NULL, 32, NRT_INSTANCE_TRN1,
     NRT_INSTANCE_SIZE_32XL, "trainium", "v2", 16 * GIB},
    {"trn1n.32xlarge", NULL, NULL, 32, NRT_INSTANCE_TRN1N,
     NRT_INSTANCE_SIZE_32XL, "trainium", "v2", 16 * GIB},
    {"trn2.48xlarge", NULL, NULL, 64, NRT_INSTANCE_TRN2,
     NRT_INSTANCE_SIZE_48XL, "trainium2", "v3", 24 * GIB},
    {"trn2.48xlarge", "2", NULL, 64, NRT_INSTANCE_TRN2, NRT_INSTANCE_SIZE_48XL,
     "trainium2", "v3", 24 * GIB},
    {"trn2.48xlarge", "1", NULL, 128, NRT_INSTANCE_TRN2,
     NRT_INSTANCE_SIZE_48XL, "trainium2", "v3", 12 * GIB},
    {"trn2.48xlarge", NULL, "1", 128, NRT_INSTANCE_TRN2,
     NRT_INSTANCE_SIZE_48XL, "trainium2", "v3", 12 * GIB},
    {"trn2.48xlarge", "1", "1", 128, NRT_INSTANCE_TRN2, NRT_INSTANCE_SIZE_48XL,
     "trainium2", "v3", 12 * GIB},
    {"trn2u.48xlarge", NULL, NULL, 64, NRT_INSTANCE_TRN2U,
     NRT_INSTANCE_SIZE_48XL, "trainium2", "v3", 24 * GIB},
};

static void
test_instance_profiles(void)
{
    for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++) {
        const struct profile_case *p = &profiles[i];
        nrt_instance_info_t info;
        nrt_vnc_memory_stats_t stats;
        uint32_t n = 0;

        test_reset_env();
        setenv("NRTPY_EMU_INSTANCE", p->name, 1);
        if (p->lnc != NULL) {
            setenv("NEURON_LOGICAL_NC_CONFIG", p->lnc, 1);
        }
        if (p->vcore_size != NULL) {
            setenv("NEURON_RT_VIRTUAL_CORE_SIZE", p->vcore_size, 1);
        }
        fprintf(stderr, "   %s lnc=%s vcs=%s\n", p->name,
                p->lnc ? p->lnc : "-", p->vcore_size ? p->vcore_size : "-");
        ASSERT_OK(nrt_get_total_vnc_count(&n));
        ASSERT_UEQ(n, p->total);
        ASSERT_OK(nrt_get_total_nc_count(&n));
        ASSERT_UEQ(n, p->total);
        ASSERT_OK(nrt_get_visible_vnc_count(&n));
        ASSERT_UEQ(n, p->total);
        memset(&info, 0x55, sizeof info);
        ASSERT_OK(nrt_get_instance_info(&info, sizeof info));
        ASSERT_UEQ(info.family, p->family);
        ASSERT_UEQ(info.size, p->size);
        ASSERT_STR_EQ(info.arch_name, p->arch);
        ASSERT_STR_EQ(info.device_revision, p->revision);
        ASSERT_STR_EQ(nrtemu_instance_name(), p->name);

        /* Claim the last core only: enough to see the per-vnc limit. */
        char last[16];
        snprintf(last, sizeof last, "%u", p->total - 1);
        setenv("NEURON_RT_VISIBLE_CORES", last, 1);
        ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
        ASSERT_OK(nrt_get_visible_nc_count(&n));
        ASSERT_UEQ(n, 1);
        ASSERT_OK(nrt_get_total_vnc_count(&n));
        ASSERT_UEQ(n, p->total);
        stats = stats_of(0);
        ASSERT_UEQ(stats.bytes_used, 0);
        ASSERT_UEQ(stats.bytes_limit, p->hbm_per_vnc);
        ASSERT_OK(nrt_get_instance_info(&info, sizeof info));
        ASSERT_UEQ(info.family, p->family);
        ASSERT_STR_EQ(nrtemu_instance_name(), p->name);
        nrt_close();
    }
}

static void
test_bad_instance_settings(void)
{
    nrt_instance_info_t info;
    uint32_t n = 77;

    setenv("NRTPY_EMU_INSTANCE", "p5.48xlarge", 1);
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "'p5.48xlarge'");
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "trn1.2xlarge");
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "trn2.48xlarge");
    ASSERT_STATUS(nrt_get_total_vnc_count(&n), NRT_INVALID);
    ASSERT_STATUS(nrt_get_visible_vnc_count(&n), NRT_INVALID);
    ASSERT_STATUS(nrt_get_instance_info(&info, sizeof info), NRT_INVALID);
    ASSERT_UEQ(n, 77);
    ASSERT_STR_EQ(nrtemu_instance_name(), "unknown");

    /* A blank value means the default profile. */
    setenv("NRTPY_EMU_INSTANCE", "  ", 1);
    ASSERT_STR_EQ(nrtemu_instance_name(), "trn1.2xlarge");

    setenv("NRTPY_EMU_INSTANCE", "trn2.48xlarge", 1);
    setenv("NEURON_LOGICAL_NC_CONFIG", "4", 1);
    ASSERT_STATUS(nrt_get_total_vnc_count(&n), NRT_INVALID);
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "NEURON_LOGICAL_NC_CONFIG='4'");
    setenv("NEURON_LOGICAL_NC_CONFIG", "2", 1);
    setenv("NEURON_RT_VIRTUAL_CORE_SIZE", "1", 1);
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "disagree");
    unsetenv("NEURON_LOGICAL_NC_CONFIG");
    setenv("NEURON_RT_VIRTUAL_CORE_SIZE", "x", 1);
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "NEURON_RT_VIRTUAL_CORE_SIZE");

    /* A failed init leaves nothing open. */
    test_reset_env();
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    nrt_close();
}

static void
test_visible_cores(void)
{
    nrt_vnc_memory_stats_t stats;
    nrt_tensor_t *t;
    uint32_t n = 0;

    setenv("NRTPY_EMU_INSTANCE", "trn1.32xlarge", 1);
    setenv("NEURON_RT_VISIBLE_CORES", "3-5,6", 1);
    ASSERT_OK(nrt_get_visible_vnc_count(&n));
    ASSERT_UEQ(n, 4);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    ASSERT_OK(nrt_get_visible_vnc_count(&n));
    ASSERT_UEQ(n, 4);
    ASSERT_OK(nrt_get_total_vnc_count(&n));
    ASSERT_UEQ(n, 32);
    /* Renumbered from 0: vnc 3 is global core 6, vnc 4 does not exist. */
    t = alloc_device(3, 128, NRT_SUCCESS);
    ASSERT_UEQ(stats_of(3).bytes_used, 128);
    nrt_tensor_free(&t);
    alloc_device(4, 128, NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "vnc 4 is not visible (4 visible)");
    alloc_device(-1, 128, NRT_INVALID);
    alloc_device(100000, 128, NRT_INVALID);
    ASSERT_STATUS(nrt_get_vnc_memory_stats(4, &stats, sizeof stats, NULL),
                  NRT_INVALID);
    ASSERT_STATUS(
        nrt_get_vnc_memory_stats(UINT32_MAX, &stats, sizeof stats, NULL),
        NRT_INVALID);
    /* After init the count is the runtime's, whatever the env says now. */
    setenv("NEURON_RT_VISIBLE_CORES", "0", 1);
    ASSERT_OK(nrt_get_visible_vnc_count(&n));
    ASSERT_UEQ(n, 4);
    nrt_close();
    ASSERT_OK(nrt_get_visible_vnc_count(&n));
    ASSERT_UEQ(n, 1);

    /* Bad values: init and the pre-init count agree. */
    static const char *const bad[] = {"3,5", "31-32", "x", "1-0", "0,,1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char quoted[64];
        setenv("NEURON_RT_VISIBLE_CORES", bad[i], 1);
        n = 99;
        ASSERT_STATUS(nrt_get_visible_vnc_count(&n), NRT_INVALID);
        ASSERT_UEQ(n, 99);
        ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
        snprintf(quoted, sizeof quoted, "NEURON_RT_VISIBLE_CORES='%s'",
                 bad[i]);
        ASSERT_STR_CONTAINS(nrtemu_last_error(), quoted);
    }

    /* VISIBLE_CORES wins over NUM_CORES. */
    setenv("NEURON_RT_VISIBLE_CORES", "7-8", 1);
    setenv("NEURON_RT_NUM_CORES", "5", 1);
    ASSERT_OK(nrt_get_visible_vnc_count(&n));
    ASSERT_UEQ(n, 2);
    /* An empty VISIBLE_CORES counts as unset. */
    setenv("NEURON_RT_VISIBLE_CORES", "", 1);
    ASSERT_OK(nrt_get_visible_vnc_count(&n));
    ASSERT_UEQ(n, 5);
    unsetenv("NEURON_RT_VISIBLE_CORES");
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    ASSERT_OK(nrt_get_visible_vnc_count(&n));
    ASSERT_UEQ(n, 5);
    nrt_close();

    setenv("NEURON_RT_NUM_CORES", "0", 1);
    ASSERT_OK(nrt_get_visible_vnc_count(&n));
    ASSERT_UEQ(n, 32);
    setenv("NEURON_RT_NUM_CORES", "33", 1);
    ASSERT_STATUS(nrt_get_visible_vnc_count(&n), NRT_RESOURCE);
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_RESOURCE);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "33 cores requested");
    setenv("NEURON_RT_NUM_CORES", "some", 1);
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "NEURON_RT_NUM_CORES='some'");
}

static void
test_hbm_per_core(void)
{
    nrt_tensor_t *a, *b;

    setenv("NRTPY_EMU_HBM_PER_CORE", "1M", 1);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    ASSERT_UEQ(stats_of(0).bytes_limit, 1 << 20);
    ASSERT_UEQ(stats_of(1).bytes_limit, 1 << 20);
    a = alloc_device(0, 1 << 20, NRT_SUCCESS);
    alloc_device(0, 1, NRT_RESOURCE);
    b = alloc_device(1, 1 << 19, NRT_SUCCESS);
    ASSERT_UEQ(stats_of(1).bytes_used, 1 << 19);
    nrt_tensor_free(&a);
    nrt_tensor_free(&b);
    nrt_close();

    setenv("NRTPY_EMU_HBM_PER_CORE", "0", 1);
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    alloc_device(0, 1, NRT_RESOURCE);
    nrt_close();

    setenv("NRTPY_EMU_HBM_PER_CORE", "lots", 1);
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "NRTPY_EMU_HBM_PER_CORE='lots'");
    setenv("NRTPY_EMU_HBM_PER_CORE", "99999999999T", 1);
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    /* The override does not apply to the counts, which ignore memory. */
    uint32_t n;
    ASSERT_OK(nrt_get_total_vnc_count(&n));
}

static void
test_memory_stats_protocol(void)
{
    nrt_vnc_memory_stats_t stats;
    nrt_tensor_t *t;
    size_t out;

    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    t = alloc_device(1, 1000, NRT_SUCCESS);

    /* An older caller that knows only bytes_used. */
    memset(&stats, 0xab, sizeof stats);
    out = 0;
    ASSERT_OK(nrt_get_vnc_memory_stats(1, &stats, sizeof(size_t), &out));
    ASSERT_UEQ(out, sizeof(size_t));
    ASSERT_UEQ(stats.bytes_used, 1000);
    ASSERT_UEQ(stats.bytes_limit, (size_t)0xabababababababab);

    /* A newer caller with a bigger struct gets what we have. */
    unsigned char big[64];
    memset(big, 0xcd, sizeof big);
    ASSERT_OK(nrt_get_vnc_memory_stats(
        1, (nrt_vnc_memory_stats_t *)(void *)big, sizeof big, &out));
    ASSERT_UEQ(out, sizeof stats);
    ASSERT_UEQ(big[sizeof stats], 0xcd);

    ASSERT_OK(nrt_get_vnc_memory_stats(1, &stats, sizeof stats, NULL));
    ASSERT_OK(nrt_get_vnc_memory_stats(1, &stats, 0, &out));
    ASSERT_UEQ(out, 0);
    ASSERT_STATUS(nrt_get_vnc_memory_stats(1, NULL, sizeof stats, &out),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_get_vnc_memory_stats(2, &stats, sizeof stats, &out),
                  NRT_INVALID);
    ASSERT_UEQ(stats_of(0).bytes_used, 0);
    nrt_tensor_free(&t);
    ASSERT_UEQ(stats_of(1).bytes_used, 0);
    nrt_close();
    ASSERT_STATUS(nrt_get_vnc_memory_stats(0, &stats, sizeof stats, NULL),
                  NRT_CLOSED);
}

static void
test_version(void)
{
    nrt_version_t v;
    unsigned char prefix[sizeof(nrt_version_t)];

    memset(&v, 0, sizeof v);
    ASSERT_OK(nrt_get_version(&v, sizeof v));
    ASSERT_UEQ(v.rt_major, 2);
    ASSERT_STR_CONTAINS(v.rt_detail, "nrtpy emulator");
    ASSERT_TRUE(strlen(v.git_hash) > 0);

    /* Only `size` bytes are written. */
    memset(prefix, 0xee, sizeof prefix);
    ASSERT_OK(nrt_get_version((nrt_version_t *)(void *)prefix, 8));
    ASSERT_UEQ(prefix[0], 2);
    ASSERT_UEQ(prefix[8], 0xee);
    ASSERT_OK(nrt_get_version(&v, 0));
    ASSERT_STATUS(nrt_get_version(NULL, sizeof v), NRT_INVALID);
}

static void
test_instance_info_sizes(void)
{
    nrt_instance_info_t info;

    /* The old 8-byte layout: family and size only. */
    memset(&info, 0x11, sizeof info);
    ASSERT_OK(nrt_get_instance_info(&info, 8));
    ASSERT_UEQ(info.family, NRT_INSTANCE_TRN1);
    ASSERT_UEQ(info.size, NRT_INSTANCE_SIZE_2XL);
    ASSERT_UEQ((unsigned char)info.arch_name[0], 0x11);
    ASSERT_OK(nrt_get_instance_info(&info, 0));
    ASSERT_STATUS(nrt_get_instance_info(NULL, sizeof info), NRT_INVALID);

    /* Callable while a runtime is open, too. */
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    ASSERT_OK(nrt_get_instance_info(&info, sizeof info));
    ASSERT_STR_EQ(info.arch_name, "trainium");
    nrt_close();
}

static void
test_null_count_pointers(void)
{
    ASSERT_STATUS(nrt_get_total_vnc_count(NULL), NRT_INVALID);
    ASSERT_STATUS(nrt_get_total_nc_count(NULL), NRT_INVALID);
    ASSERT_STATUS(nrt_get_visible_vnc_count(NULL), NRT_INVALID);
    ASSERT_STATUS(nrt_get_visible_nc_count(NULL), NRT_INVALID);
}

/* Run `fn` with stderr captured into `buf`. */
static void
capture_stderr(void (*fn)(void), char *buf, size_t len)
{
    FILE *tmp = tmpfile();
    int saved = dup(STDERR_FILENO);
    size_t n;

    ASSERT_NOT_NULL(tmp);
    ASSERT_TRUE(saved >= 0);
    fflush(stderr);
    ASSERT_TRUE(dup2(fileno(tmp), STDERR_FILENO) >= 0);
    fn();
    fflush(stderr);
    ASSERT_TRUE(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    rewind(tmp);
    n = fread(buf, 1, len - 1, tmp);
    buf[n] = '\0';
    fclose(tmp);
}

static void
init_unknown_instance(void)
{
    setenv("NRTPY_EMU_INSTANCE", "nope", 1);
    nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
    unsetenv("NRTPY_EMU_INSTANCE");
}

static void
init_reject_close(void)
{
    nrt_tensor_t *t = NULL;

    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 9, 8, "x", &t);
    nrt_close();
}

static void
test_log_lines(void)
{
    char out[8192];
    const char *line;

    setenv("NEURON_RT_LOG_LEVEL", "error", 1);
    capture_stderr(init_unknown_instance, out, sizeof out);
    /* "2024-Jan-09 20:27:41.059312 1234:1240 ERROR  NRT:nrt_init ..." */
    line = out;
    ASSERT_TRUE(strlen(line) > 40);
    ASSERT_TRUE(line[4] == '-' && line[8] == '-' && line[11] == ' ');
    ASSERT_TRUE(line[14] == ':' && line[17] == ':' && line[20] == '.');
    ASSERT_TRUE(line[27] == ' ');
    ASSERT_STR_CONTAINS(line, " ERROR  NRT:nrt_init unknown "
                              "NRTPY_EMU_INSTANCE='nope'");
    {
        char pid[32];
        snprintf(pid, sizeof pid, " %ld:", (long)getpid());
        ASSERT_STR_CONTAINS(line, pid);
    }
    /* Rejected arguments log at WARN: hidden at the default level... */
    capture_stderr(init_reject_close, out, sizeof out);
    ASSERT_STR_EQ(out, "");
    /* ...shown at WARN and up, with INFO lines about init and close. */
    setenv("NEURON_RT_LOG_LEVEL", "Info", 1);
    capture_stderr(init_reject_close, out, sizeof out);
    ASSERT_STR_CONTAINS(out, " WARN   NRT:nrt_tensor_allocate vnc 9 is not "
                             "visible");
    ASSERT_STR_CONTAINS(out, " INFO   NRT:nrt_init nrtpy emulator");
    ASSERT_STR_CONTAINS(out, " INFO   NRT:nrt_close runtime closed");
    /* The module variable wins over the global one. */
    setenv("NEURON_RT_LOG_LEVEL_NRT", "QUIET", 1);
    capture_stderr(init_unknown_instance, out, sizeof out);
    ASSERT_STR_EQ(out, "");
    setenv("NEURON_RT_LOG_LEVEL", "QUIET", 1);
    unsetenv("NEURON_RT_LOG_LEVEL_NRT");
    capture_stderr(init_unknown_instance, out, sizeof out);
    ASSERT_STR_EQ(out, "");
}

int
main(void)
{
    test_begin("test_runtime");
    RUN_TEST(test_before_init);
    RUN_TEST(test_init_close_reinit);
    RUN_TEST(test_init_rejects_bad_framework);
    RUN_TEST(test_instance_profiles);
    RUN_TEST(test_bad_instance_settings);
    RUN_TEST(test_visible_cores);
    RUN_TEST(test_hbm_per_core);
    RUN_TEST(test_memory_stats_protocol);
    RUN_TEST(test_version);
    RUN_TEST(test_instance_info_sizes);
    RUN_TEST(test_null_count_pointers);
    RUN_TEST(test_log_lines);
    return 0;
}
