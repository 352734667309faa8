/*
 * test_device_memory.c - device memory like a device: fresh tensors read
 * as zero (or as the poison pattern), the reuse cache keeps alignment, and
 * an allocation the host cannot back, keeping a margin for the rest of
 * the machine, fails with NRT_RESOURCE.
 */
#include <inttypes.h>
#include <math.h>

#include "test.h"

#define MIB ((size_t)1 << 20)

static void
init_runtime(void)
{
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
}

/* Every byte of the tensor, read back. */
static unsigned char *
read_all(const nrt_tensor_t *t)
{
    size_t size = nrt_tensor_get_size(t);
    unsigned char *buf = malloc(size);

    ASSERT_NOT_NULL(buf);
    ASSERT_OK(nrt_tensor_read(t, buf, 0, size));
    return buf;
}

static size_t
count_nonzero(const unsigned char *buf, size_t size)
{
    size_t n = 0;

    for (size_t i = 0; i < size; i++) {
        n += buf[i] != 0;
    }
    return n;
}

/* Fill a tensor with a pattern, free it, allocate the same size again
 * (served from the heap or the reuse cache): it reads as zero. */
static void
check_zero_after_reuse(nrt_tensor_placement_t placement, size_t size)
{
    nrt_tensor_t *t = NULL;
    unsigned char *buf;

    for (int round = 0; round < 3; round++) {
        ASSERT_OK(nrt_tensor_allocate(placement, 0, size, "t", &t));
        buf = read_all(t);
        ASSERT_UEQ(count_nonzero(buf, size), 0);
        memset(buf, 0x5a, size);
        ASSERT_OK(nrt_tensor_write(t, buf, 0, size));
        free(buf);
        nrt_tensor_free(&t);
    }
}

static void
test_fresh_tensors_read_zero(void)
{
    static const size_t sizes[] = {1,         40,  4096,    64 * 1024 - 1,
                                   64 * 1024, MIB, 2 * MIB, 3 * MIB + 5};

    init_runtime();
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        check_zero_after_reuse(NRT_TENSOR_PLACEMENT_DEVICE, sizes[i]);
        check_zero_after_reuse(NRT_TENSOR_PLACEMENT_VIRTUAL, sizes[i]);
    }
    nrt_close();
}

/* Each way of touching fresh memory sees zeros outside what was written. */
static void
test_partial_access_sees_zero(void)
{
    const size_t size = 2 * MIB;
    nrt_tensor_t *t = NULL, *s = NULL, *u = NULL;
    unsigned char *buf, *va;
    unsigned char ones[16];

    init_runtime();
    memset(ones, 0xff, sizeof ones);
    /* Dirty the cache so fresh allocations get old data underneath. */
    check_zero_after_reuse(NRT_TENSOR_PLACEMENT_DEVICE, size);

    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, size, "t", &t));
    ASSERT_OK(nrt_tensor_write(t, ones, 100, sizeof ones));
    buf = read_all(t);
    ASSERT_UEQ(count_nonzero(buf, size), sizeof ones);
    ASSERT_EQ(buf[100], 0xff);
    free(buf);
    nrt_tensor_free(&t);

    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, size, "t", &t));
    ASSERT_OK(nrt_tensor_allocate_slice(t, MIB, 64, "s", &s));
    buf = read_all(s);
    ASSERT_UEQ(count_nonzero(buf, 64), 0);
    free(buf);
    nrt_tensor_free(&s);
    nrt_tensor_free(&t);

    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, size, "t", &t));
    va = nrt_tensor_get_va(t);
    ASSERT_NOT_NULL(va);
    ASSERT_UEQ(count_nonzero(va, size), 0);
    nrt_tensor_free(&t);

    /* A copy into part of a fresh tensor leaves the rest zero. */
    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, size, "t", &t));
    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "u", &u));
    ASSERT_OK(nrt_tensor_write(u, ones, 0, sizeof ones));
    ASSERT_OK(nrt_tensor_copy(u, 0, t, 8, 16));
    buf = read_all(t);
    ASSERT_UEQ(count_nonzero(buf, size), 16);
    free(buf);
    nrt_tensor_free(&u);
    nrt_tensor_free(&t);
    nrt_close();
}

/* A write of the whole tensor is what a read returns: nothing zeroes it
 * afterwards. */
static void
test_whole_write_kept(void)
{
    const size_t size = 3 * MIB;
    nrt_tensor_t *t = NULL;
    unsigned char *in = malloc(size), *out;

    ASSERT_NOT_NULL(in);
    init_runtime();
    for (size_t i = 0; i < size; i++) {
        in[i] = (unsigned char)(i * 13 + 7);
    }
    for (int round = 0; round < 2; round++) {
        ASSERT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, size,
                                      "t", &t));
        ASSERT_OK(nrt_tensor_write(t, in, 0, size));
        out = read_all(t);
        ASSERT_TRUE(memcmp(in, out, size) == 0);
        free(out);
        nrt_tensor_free(&t);
    }
    free(in);
    nrt_close();
}

static void
test_poison(void)
{
    nrt_tensor_t *t = NULL;
    float f[4];
    uint32_t bits;
    uint16_t half;

    setenv("NRTPY_EMU_POISON", "1", 1);
    init_runtime();
    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "t", &t));
    ASSERT_OK(nrt_tensor_read(t, f, 0, sizeof f));
    memcpy(&bits, &f[2], sizeof bits);
    ASSERT_TRUE(isnan(f[2]));
    ASSERT_UEQ(bits & 0x00400000u, 0); /* quiet bit clear: signalling */
    memcpy(&half, (unsigned char *)f + 2, sizeof half);
    /* A bfloat16 signalling NaN too: exponent all ones, quiet bit clear. */
    ASSERT_UEQ(half & 0x7f80u, 0x7f80u);
    ASSERT_UEQ(half & 0x0040u, 0);
    ASSERT_TRUE((half & 0x007fu) != 0);
    nrt_tensor_free(&t);
    /* Large, fresh pages are poisoned too. */
    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 4 * MIB, "t", &t));
    ASSERT_OK(nrt_tensor_read(t, f, 3 * MIB, sizeof f));
    ASSERT_TRUE(isnan(f[0]) && isnan(f[3]));
    nrt_tensor_free(&t);
    nrt_close();

    setenv("NRTPY_EMU_POISON", "sometimes", 1);
    ASSERT_STATUS(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "NRTPY_EMU_POISON");
    setenv("NRTPY_EMU_POISON", "0", 1);
    init_runtime();
    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "t", &t));
    ASSERT_OK(nrt_tensor_read(t, f, 0, sizeof f));
    ASSERT_TRUE(f[0] == 0.0f && f[3] == 0.0f);
    nrt_tensor_free(&t);
    nrt_close();
    unsetenv("NRTPY_EMU_POISON");
}

/* A 2 MiB tensor is 2 MiB aligned, even in a block a 2 MiB - 1 tensor
 * freed (same rounded size, smaller alignment). */
static void
test_reuse_keeps_alignment(void)
{
    nrt_tensor_t *t = NULL;

    init_runtime();
    ASSERT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 2 * MIB - 1,
                                  "t", &t));
    nrt_tensor_free(&t);
    ASSERT_OK(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 2 * MIB, "t", &t));
    ASSERT_UEQ((uintptr_t)nrt_tensor_get_va(t) % (2 * MIB), 0);
    nrt_tensor_free(&t);
    nrt_close();
}

/* More device memory than the host has: refused, with the reason and the
 * setting to change, and the runtime still works afterwards. */
static void
test_host_cannot_back(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t host = (size_t)pages * (size_t)page;
    nrt_tensor_t *t = NULL;
    char limit[64];

    ASSERT_TRUE(pages > 0 && page > 0);
    snprintf(limit, sizeof limit, "%zu", 4 * host);
    setenv("NRTPY_EMU_HBM_PER_CORE", limit, 1);
    init_runtime();
    ASSERT_STATUS(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 2 * host,
                                      "big", &t),
                  NRT_RESOURCE);
    ASSERT_NULL(t);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "host memory");
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "NRTPY_EMU_HBM_PER_CORE");
    ASSERT_STATUS(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_VIRTUAL, -1,
                                      2 * host, "big", &t),
                  NRT_RESOURCE);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "host memory");
    /* A tensor the host can back is still granted. */
    ASSERT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 4 * MIB,
                                  "small", &t));
    nrt_tensor_free(&t);
    nrt_close();
    unsetenv("NRTPY_EMU_HBM_PER_CORE");
}

/* A "<key>: <n> kB" line of /proc/meminfo, in bytes; 0 when absent. */
static uint64_t
meminfo_bytes(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    size_t len = strlen(key);
    uint64_t kib = 0;

    ASSERT_NOT_NULL(f);
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, key, len) == 0 && line[len] == ':') {
            ASSERT_EQ(sscanf(line + len + 1, "%" SCNu64, &kib), 1);
            break;
        }
    }
    fclose(f);
    return kib * 1024;
}

/*
 * A tensor the host could back, but only by using MemAvailable to its
 * last 64 MiB, is refused: the margin (docs/device.md: the larger of 256 MiB
 * and 1/32 of RAM) stays for the rest of the machine, and the message
 * says so with the sizes.  Nothing is touched, so nothing is really
 * allocated, granted or not.
 */
static void
test_host_keeps_a_margin(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t ram = (uint64_t)pages * (uint64_t)page;
    uint64_t margin = ram / 32 > 256 * MIB ? ram / 32 : 256 * MIB;
    uint64_t available = meminfo_bytes("MemAvailable");
    nrt_tensor_t *t = NULL;
    char text[128];
    size_t most;

    ASSERT_TRUE(pages > 0 && page > 0);
    /* The test needs a host with the margin and 256 MiB more free. */
    ASSERT_TRUE(available > margin + 256 * MIB);
    snprintf(text, sizeof text, "%" PRIu64, 4 * ram);
    setenv("NRTPY_EMU_HBM_PER_CORE", text, 1);
    init_runtime();
    most = (size_t)(available - 64 * MIB) & ~(2 * MIB - 1);
    ASSERT_STATUS(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, most, "most", &t),
        NRT_RESOURCE);
    ASSERT_NULL(t);
    snprintf(text, sizeof text, "a %zu-byte device tensor", most);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), text);
    snprintf(text, sizeof text,
             "of which %" PRIu64 " are kept free for the rest of the host",
             margin);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), text);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "MemAvailable");
    /* 64 MiB, with the margin to spare, is granted. */
    ASSERT_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64 * MIB,
                                  "some", &t));
    nrt_tensor_free(&t);
    nrt_close();
    unsetenv("NRTPY_EMU_HBM_PER_CORE");
}

int
main(void)
{
    test_begin("device_memory");
    RUN_TEST(test_fresh_tensors_read_zero);
    RUN_TEST(test_partial_access_sees_zero);
    RUN_TEST(test_whole_write_kept);
    RUN_TEST(test_poison);
    RUN_TEST(test_reuse_keeps_alignment);
    RUN_TEST(test_host_cannot_back);
    RUN_TEST(test_host_keeps_a_margin);
    return 0;
}
