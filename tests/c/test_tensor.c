/*
 * test_tensor.c - every tensor function, on its success and failure paths.
 */
#include <time.h>

#include "test.h"

static void
init_with(const char *hbm_per_core)
{
    if (hbm_per_core != NULL) {
        setenv("NRTPY_EMU_HBM_PER_CORE", hbm_per_core, 1);
    }
    ASSERT_OK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
}

static nrt_tensor_t *
alloc(nrt_tensor_placement_t placement, int vnc, size_t size, const char *name)
{
    nrt_tensor_t *t = NULL;

    ASSERT_OK(nrt_tensor_allocate(placement, vnc, size, name, &t));
    ASSERT_NOT_NULL(t);
    return t;
}

static nrt_tensor_t *
alloc_dev(int vnc, size_t size)
{
    return alloc(NRT_TENSOR_PLACEMENT_DEVICE, vnc, size, "dev");
}

static size_t
used(uint32_t vnc)
{
    nrt_vnc_memory_stats_t stats;

    ASSERT_OK(nrt_get_vnc_memory_stats(vnc, &stats, sizeof stats, NULL));
    return stats.bytes_used;
}

static void
fill(nrt_tensor_t *t, size_t size, unsigned seed)
{
    unsigned char buf[256];

    for (size_t off = 0; off < size; off += sizeof buf) {
        size_t n = size - off < sizeof buf ? size - off : sizeof buf;
        for (size_t i = 0; i < n; i++) {
            buf[i] = (unsigned char)(seed + off + i);
        }
        ASSERT_OK(nrt_tensor_write(t, buf, off, n));
    }
}

static void
expect_fill(const nrt_tensor_t *t, size_t offset, size_t size, unsigned seed)
{
    unsigned char buf[256];

    for (size_t off = 0; off < size; off += sizeof buf) {
        size_t n = size - off < sizeof buf ? size - off : sizeof buf;
        ASSERT_OK(nrt_tensor_read(t, buf, offset + off, n));
        for (size_t i = 0; i < n; i++) {
            ASSERT_UEQ(buf[i], (unsigned char)(seed + offset + off + i));
        }
    }
}

/* First in main: the process has never called nrt_init(). */
static void
test_before_init(void)
{
    nrt_tensor_t *t = NULL;

    ASSERT_STATUS(nrt_tensor_read_batch(NULL, 0, false), NRT_UNINITIALIZED);
    ASSERT_STATUS(nrt_tensor_write_batch(NULL, 0, true), NRT_UNINITIALIZED);
    ASSERT_STATUS(nrt_tensor_allocate_empty("e", &t), NRT_UNINITIALIZED);
    ASSERT_STATUS(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_VIRTUAL, -1, 8, "v", &t),
        NRT_UNINITIALIZED);
    ASSERT_NULL(t);
    ASSERT_NULL(nrt_tensor_get_va(NULL));
    ASSERT_UEQ(nrt_tensor_get_size(NULL), 0);
}

static void
test_allocate_sizes_and_placements(void)
{
    static const size_t sizes[] = {
        1,       63,
        64,      4096,
        65535,   65536,
        65537,   (2 << 20) - 1,
        2 << 20, (3 << 20) + 1,
    };
    static const nrt_tensor_placement_t placements[] = {
        NRT_TENSOR_PLACEMENT_DEVICE,
        NRT_TENSOR_PLACEMENT_HOST,
        NRT_TENSOR_PLACEMENT_VIRTUAL,
    };

    init_with(NULL);
    for (size_t p = 0; p < 3; p++) {
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            int vnc = placements[p] == NRT_TENSOR_PLACEMENT_DEVICE ? 1 : -1;
            nrt_tensor_t *t = alloc(placements[p], vnc, sizes[i], NULL);
            uintptr_t va = (uintptr_t)nrt_tensor_get_va(t);

            ASSERT_UEQ(nrt_tensor_get_size(t), sizes[i]);
            ASSERT_TRUE(va != 0);
            ASSERT_UEQ(va % 64, 0);
            if (sizes[i] >= (2u << 20)) {
                ASSERT_UEQ(va % (2u << 20), 0);
            }
            fill(t, sizes[i], (unsigned)i);
            expect_fill(t, 0, sizes[i], (unsigned)i);
            if (placements[p] == NRT_TENSOR_PLACEMENT_DEVICE) {
                ASSERT_UEQ(used(1), sizes[i]);
            }
            ASSERT_UEQ(used(0), 0);
            nrt_tensor_free(&t);
            ASSERT_NULL(t);
            ASSERT_UEQ(used(1), 0);
        }
    }
    /* Host placements ignore the vnc. */
    nrt_tensor_t *h = alloc(NRT_TENSOR_PLACEMENT_HOST, 12345, 16, "h");
    nrt_tensor_free(&h);
    nrt_tensor_free(NULL);
    nrt_tensor_free(&h);
    nrt_close();
}

static void
test_allocate_failures(void)
{
    nrt_tensor_t *sentinel = (nrt_tensor_t *)(uintptr_t)0x1234;
    nrt_tensor_t *t = sentinel;

    init_with(NULL);
    ASSERT_STATUS(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 8, "x", NULL),
        NRT_INVALID);
    ASSERT_STATUS(
        nrt_tensor_allocate((nrt_tensor_placement_t)3, 0, 8, "x", &t),
        NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "placement 3");
    ASSERT_STATUS(
        nrt_tensor_allocate((nrt_tensor_placement_t)-1, 0, 8, "x", &t),
        NRT_INVALID);
    ASSERT_STATUS(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 2, 8, "x", &t),
        NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "vnc 2 is not visible");
    ASSERT_STATUS(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, -1, 8, "x", &t),
        NRT_INVALID);
    ASSERT_STATUS(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 0, "zero", &t),
        NRT_RESOURCE);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "nrt_tensor_allocate: cannot allocate a 0-byte "
                        "tensor 'zero'");
    ASSERT_STATUS(
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_VIRTUAL, -1, 0, NULL, &t),
        NRT_RESOURCE);
    /* Beyond any budget, and beyond the address space. */
    ASSERT_STATUS(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, SIZE_MAX,
                                      "huge", &t),
                  NRT_RESOURCE);
    ASSERT_STATUS(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_VIRTUAL, -1,
                                      SIZE_MAX, "huge", &t),
                  NRT_RESOURCE);
    ASSERT_STATUS(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_VIRTUAL, -1,
                                      SIZE_MAX - 4096, "huge", &t),
                  NRT_RESOURCE);
    ASSERT_PTR_EQ(t, sentinel);
    ASSERT_UEQ(used(0), 0);
    nrt_close();
}

static void
test_read_write_bounds(void)
{
    unsigned char buf[32] = {0};
    nrt_tensor_t *t;

    init_with(NULL);
    t = alloc_dev(0, 16);
    ASSERT_OK(nrt_tensor_write(t, "0123456789abcdef", 0, 16));
    ASSERT_OK(nrt_tensor_read(t, buf, 0, 16));
    ASSERT_TRUE(memcmp(buf, "0123456789abcdef", 16) == 0);
    ASSERT_OK(nrt_tensor_read(t, buf, 4, 3));
    ASSERT_TRUE(memcmp(buf, "456", 3) == 0);
    ASSERT_OK(nrt_tensor_write(t, "XY", 14, 2));
    ASSERT_OK(nrt_tensor_read(t, buf, 13, 3));
    ASSERT_TRUE(memcmp(buf, "dXY", 3) == 0);
    /* Empty transfers at the end, even with no buffer. */
    ASSERT_OK(nrt_tensor_read(t, buf, 16, 0));
    ASSERT_OK(nrt_tensor_read(t, NULL, 0, 0));
    ASSERT_OK(nrt_tensor_write(t, NULL, 16, 0));

    static const size_t bad[][2] = {
        {17, 0},
        {8, 9},
        {0, 17},
        {16, 1},
        {SIZE_MAX, 1},
        {1, SIZE_MAX},
        {SIZE_MAX, SIZE_MAX},
        {SIZE_MAX, 0},
        {15, SIZE_MAX - 14},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ASSERT_STATUS(nrt_tensor_read(t, buf, bad[i][0], bad[i][1]),
                      NRT_INVALID);
        ASSERT_STATUS(nrt_tensor_write(t, buf, bad[i][0], bad[i][1]),
                      NRT_INVALID);
    }
    ASSERT_STATUS(nrt_tensor_read(t, buf, 8, 9), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "nrt_tensor_read: read of 9 bytes at offset 8 is "
                        "outside tensor 'dev' of 16 bytes");
    ASSERT_STATUS(nrt_tensor_write(t, buf, SIZE_MAX, 2), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "offset 18446744073709551615");
    ASSERT_STATUS(nrt_tensor_read(t, NULL, 0, 1), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_write(t, NULL, 0, 1), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_read(NULL, buf, 0, 1), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_write(NULL, buf, 0, 1), NRT_INVALID);
    /* Failed writes changed nothing. */
    ASSERT_OK(nrt_tensor_read(t, buf, 0, 16));
    ASSERT_TRUE(memcmp(buf, "0123456789abcdXY", 16) == 0);
    nrt_tensor_free(&t);
    nrt_close();
}

static void
test_slices_share_storage(void)
{
    unsigned char buf[8];
    nrt_tensor_t *parent, *s1, *s2, *sentinel = NULL;

    init_with(NULL);
    parent = alloc_dev(1, 100);
    fill(parent, 100, 0);
    ASSERT_OK(nrt_tensor_allocate_slice(parent, 10, 20, "s1", &s1));
    ASSERT_UEQ(nrt_tensor_get_size(s1), 20);
    ASSERT_PTR_EQ(nrt_tensor_get_va(s1),
                  (unsigned char *)nrt_tensor_get_va(parent) + 10);
    ASSERT_OK(nrt_tensor_read(s1, buf, 0, 4));
    ASSERT_UEQ(buf[0], 10);
    ASSERT_UEQ(buf[3], 13);
    /* A slice of a slice adds the offsets. */
    ASSERT_OK(nrt_tensor_allocate_slice(s1, 5, 15, NULL, &s2));
    ASSERT_PTR_EQ(nrt_tensor_get_va(s2),
                  (unsigned char *)nrt_tensor_get_va(parent) + 15);
    ASSERT_OK(nrt_tensor_write(s2, "\xff", 0, 1));
    ASSERT_OK(nrt_tensor_read(parent, buf, 15, 1));
    ASSERT_UEQ(buf[0], 0xff);
    /* Slices count no memory of their own. */
    ASSERT_UEQ(used(1), 100);

    /* Bounds are the slice's, not the storage's. */
    ASSERT_STATUS(nrt_tensor_read(s1, buf, 18, 3), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "tensor 's1' of 20 bytes");
    ASSERT_STATUS(nrt_tensor_allocate_slice(parent, 90, 11, "x", &sentinel),
                  NRT_INVALID);
    ASSERT_STATUS(
        nrt_tensor_allocate_slice(parent, SIZE_MAX, 1, "x", &sentinel),
        NRT_INVALID);
    ASSERT_STATUS(
        nrt_tensor_allocate_slice(parent, 1, SIZE_MAX, "x", &sentinel),
        NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_allocate_slice(s1, 0, 21, "x", &sentinel),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_allocate_slice(parent, 100, 0, "x", &sentinel),
                  NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "empty slice");
    ASSERT_STATUS(nrt_tensor_allocate_slice(parent, 0, 0, "x", &sentinel),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_allocate_slice(NULL, 0, 1, "x", &sentinel),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_allocate_slice(parent, 0, 1, "x", NULL),
                  NRT_INVALID);
    ASSERT_NULL(sentinel);
    ASSERT_OK(nrt_tensor_allocate_slice(parent, 99, 1, "last", &sentinel));
    nrt_tensor_free(&sentinel);

    /* Freeing the parent first keeps the storage alive for the slices. */
    nrt_tensor_free(&parent);
    ASSERT_UEQ(used(1), 100);
    ASSERT_OK(nrt_tensor_read(s1, buf, 0, 1));
    ASSERT_UEQ(buf[0], 10);
    nrt_tensor_free(&s1);
    ASSERT_UEQ(used(1), 100);
    ASSERT_OK(nrt_tensor_read(s2, buf, 0, 1));
    ASSERT_UEQ(buf[0], 0xff);
    nrt_tensor_free(&s2);
    ASSERT_UEQ(used(1), 0);
    nrt_close();
}

static void
test_empty_and_attached(void)
{
    unsigned char buffer[64], other[16], buf[4];
    nrt_tensor_t *t, *dev, *slice, *sentinel = NULL;

    init_with(NULL);
    ASSERT_OK(nrt_tensor_allocate_empty("empty", &t));
    ASSERT_UEQ(nrt_tensor_get_size(t), 0);
    ASSERT_NULL(nrt_tensor_get_va(t));
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "'empty' has no storage");
    ASSERT_OK(nrt_tensor_read(t, buf, 0, 0));
    ASSERT_STATUS(nrt_tensor_read(t, buf, 0, 1), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_allocate_slice(t, 0, 1, "s", &sentinel),
                  NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_allocate_empty("x", NULL), NRT_INVALID);

    memset(buffer, 7, sizeof buffer);
    ASSERT_OK(nrt_tensor_attach_buffer(t, buffer, sizeof buffer));
    ASSERT_UEQ(nrt_tensor_get_size(t), sizeof buffer);
    ASSERT_PTR_EQ(nrt_tensor_get_va(t), buffer);
    ASSERT_OK(nrt_tensor_write(t, "abc", 10, 3));
    ASSERT_TRUE(memcmp(buffer + 10, "abc", 3) == 0);
    /* Re-attaching swaps the storage; the old buffer is left alone. */
    ASSERT_OK(nrt_tensor_attach_buffer(t, other, sizeof other));
    ASSERT_PTR_EQ(nrt_tensor_get_va(t), other);
    ASSERT_STATUS(nrt_tensor_read(t, buf, 15, 2), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_attach_buffer(t, NULL, 8), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_attach_buffer(t, other, 0), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_attach_buffer(NULL, other, 8), NRT_INVALID);
    ASSERT_PTR_EQ(nrt_tensor_get_va(t), other);
    nrt_tensor_free(&t);
    ASSERT_UEQ(buffer[10], 'a'); /* caller memory is never freed */

    /* Attaching to a device tensor with a live slice. */
    dev = alloc_dev(0, 1000);
    fill(dev, 1000, 3);
    ASSERT_OK(nrt_tensor_allocate_slice(dev, 500, 10, "tail", &slice));
    ASSERT_OK(nrt_tensor_attach_buffer(dev, buffer, sizeof buffer));
    ASSERT_UEQ(used(0), 1000); /* the slice still holds the device memory */
    expect_fill(slice, 0, 10, 3 + 500);
    /* The tensor is now host memory: copies to vnc 1 are allowed. */
    nrt_tensor_t *far = alloc_dev(1, 8);
    ASSERT_OK(nrt_tensor_copy(dev, 0, far, 0, 8));
    nrt_tensor_free(&far);
    nrt_tensor_free(&slice);
    ASSERT_UEQ(used(0), 0);
    nrt_tensor_free(&dev);
    nrt_close();
}

static void
test_copy(void)
{
    unsigned char buf[16];
    nrt_tensor_t *a0, *b0, *c1, *h;

    init_with(NULL);
    a0 = alloc_dev(0, 64);
    b0 = alloc_dev(0, 64);
    c1 = alloc_dev(1, 64);
    h = alloc(NRT_TENSOR_PLACEMENT_VIRTUAL, -1, 64, "host");
    fill(a0, 64, 100);

    ASSERT_OK(nrt_tensor_copy(a0, 8, b0, 0, 16));
    ASSERT_OK(nrt_tensor_read(b0, buf, 0, 1));
    ASSERT_UEQ(buf[0], 108);
    ASSERT_STATUS(nrt_tensor_copy(a0, 0, c1, 0, 16), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "different vncs");
    /* Through host memory is fine in both directions. */
    ASSERT_OK(nrt_tensor_copy(a0, 0, h, 0, 64));
    ASSERT_OK(nrt_tensor_copy(h, 0, c1, 0, 64));
    expect_fill(c1, 0, 64, 100);

    /* Overlapping ranges of one storage behave like memmove. */
    ASSERT_OK(nrt_tensor_copy(a0, 0, a0, 4, 16));
    ASSERT_OK(nrt_tensor_read(a0, buf, 4, 16));
    for (int i = 0; i < 16; i++) {
        ASSERT_UEQ(buf[i], 100 + i);
    }
    ASSERT_OK(nrt_tensor_copy(a0, 4, a0, 0, 16));
    ASSERT_OK(nrt_tensor_read(a0, buf, 0, 16));
    for (int i = 0; i < 16; i++) {
        ASSERT_UEQ(buf[i], 100 + i);
    }

    ASSERT_OK(nrt_tensor_copy(a0, 64, b0, 64, 0));
    ASSERT_STATUS(nrt_tensor_copy(a0, 60, b0, 0, 8), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "copy source");
    ASSERT_STATUS(nrt_tensor_copy(a0, 0, b0, 60, 8), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "copy destination");
    ASSERT_STATUS(nrt_tensor_copy(a0, SIZE_MAX, b0, 0, 1), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_copy(a0, 0, b0, 1, SIZE_MAX), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_copy(NULL, 0, b0, 0, 1), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_copy(a0, 0, NULL, 0, 1), NRT_INVALID);

    nrt_tensor_free(&a0);
    nrt_tensor_free(&b0);
    nrt_tensor_free(&c1);
    nrt_tensor_free(&h);
    nrt_close();
}

static void
test_memset(void)
{
    unsigned char buf[32];
    nrt_tensor_t *t;

    init_with(NULL);
    t = alloc_dev(0, 32);
    ASSERT_OK(nrt_tensor_memset(t, 0, 0, 32));
    ASSERT_OK(nrt_tensor_memset(t, 8, 0x1ab, 4));
    ASSERT_OK(nrt_tensor_memset(t, 32, 1, 0));
    ASSERT_OK(nrt_tensor_read(t, buf, 0, 32));
    for (int i = 0; i < 32; i++) {
        ASSERT_UEQ(buf[i], i >= 8 && i < 12 ? 0xab : 0);
    }
    ASSERT_STATUS(nrt_tensor_memset(t, 30, 1, 3), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_memset(t, UINT64_MAX, 1, 1), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_memset(t, 1, 1, SIZE_MAX), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_memset(NULL, 0, 1, 1), NRT_INVALID);
    nrt_tensor_free(&t);
    nrt_close();
}

static void
test_batches(void)
{
    unsigned char r1[4], r2[4], r3[8], w1[4] = {1, 2, 3, 4}, w2[2] = {9, 9};
    nrt_tensor_t *a, *b;

    init_with(NULL);
    a = alloc_dev(0, 16);
    b = alloc(NRT_TENSOR_PLACEMENT_VIRTUAL, -1, 16, "b");
    fill(a, 16, 0);
    fill(b, 16, 50);

    nrt_tensor_batch_op_t a_ops[] = {{0, 4, r1}, {12, 4, r2}};
    nrt_tensor_batch_op_t b_ops[] = {{8, 8, r3}};
    nrt_tensor_batch_t reads[] = {{a, a_ops, 2}, {b, b_ops, 1}};
    ASSERT_OK(nrt_tensor_read_batch(reads, 2, false));
    ASSERT_UEQ(r1[0], 0);
    ASSERT_UEQ(r2[3], 15);
    ASSERT_UEQ(r3[0], 58);

    nrt_tensor_batch_op_t wa_ops[] = {{4, 4, w1}};
    nrt_tensor_batch_op_t wb_ops[] = {{0, 2, w2}, {14, 2, w2}};
    nrt_tensor_batch_t writes[] = {{a, wa_ops, 1}, {b, wb_ops, 2}};
    ASSERT_OK(nrt_tensor_write_batch(writes, 2, true));
    ASSERT_OK(nrt_tensor_read(a, r1, 4, 4));
    ASSERT_TRUE(memcmp(r1, w1, 4) == 0);
    ASSERT_OK(nrt_tensor_read(b, r1, 14, 2));
    ASSERT_UEQ(r1[0], 9);

    /* Empty batches and ops are fine. */
    ASSERT_OK(nrt_tensor_read_batch(NULL, 0, false));
    nrt_tensor_batch_t none[] = {{a, NULL, 0}};
    ASSERT_OK(nrt_tensor_write_batch(none, 1, false));

    /* One bad op anywhere: nothing at all is written. */
    memset(w1, 0xee, sizeof w1);
    nrt_tensor_batch_op_t bad_ops[] = {{0, 2, w2}, {15, 2, w2}};
    nrt_tensor_batch_t bad[] = {{a, wa_ops, 1}, {b, bad_ops, 2}};
    ASSERT_STATUS(nrt_tensor_write_batch(bad, 2, false), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "write of 2 bytes at offset 15");
    ASSERT_OK(nrt_tensor_read(a, r1, 4, 4));
    ASSERT_UEQ(r1[0], 1);
    ASSERT_STATUS(nrt_tensor_read_batch(bad, 2, false), NRT_INVALID);

    nrt_tensor_batch_op_t huge_ops[] = {{UINT64_MAX, 2, w2}};
    nrt_tensor_batch_t huge[] = {{a, huge_ops, 1}};
    ASSERT_STATUS(nrt_tensor_read_batch(huge, 1, false), NRT_INVALID);
    nrt_tensor_batch_op_t null_buf_ops[] = {{0, 1, NULL}};
    nrt_tensor_batch_t null_buf[] = {{a, null_buf_ops, 1}};
    ASSERT_STATUS(nrt_tensor_read_batch(null_buf, 1, false), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "batch 0 op 0: NULL buffer");
    nrt_tensor_batch_t null_ops[] = {{a, NULL, 3}};
    ASSERT_STATUS(nrt_tensor_write_batch(null_ops, 1, false), NRT_INVALID);
    nrt_tensor_batch_t null_tensor[] = {{NULL, a_ops, 1}};
    ASSERT_STATUS(nrt_tensor_read_batch(null_tensor, 1, false), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_read_batch(NULL, 1, false), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_write_batch(NULL, 1, false), NRT_INVALID);

    nrt_tensor_free(&a);
    nrt_tensor_free(&b);
    nrt_close();
}

static void
test_out_of_memory(void)
{
    nrt_tensor_t *a, *b, *h, *t = NULL;

    init_with("1M");
    a = alloc_dev(0, 512 << 10);
    ASSERT_STATUS(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0,
                                      600 << 10, "big", &t),
                  NRT_RESOURCE);
    ASSERT_NULL(t);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "out of device memory on vnc 0");
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "614400 bytes requested");
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "524288 free");
    /* The exact remainder still fits; other cores and host are separate. */
    b = alloc_dev(0, 512 << 10);
    ASSERT_UEQ(used(0), 1 << 20);
    t = alloc_dev(1, 1 << 20);
    h = alloc(NRT_TENSOR_PLACEMENT_HOST, -1, 4 << 20, "host");
    nrt_tensor_free(&a);
    nrt_tensor_free(&b);
    nrt_tensor_free(&t);
    nrt_tensor_free(&h);
    ASSERT_UEQ(used(0), 0);
    ASSERT_UEQ(used(1), 0);
    nrt_close();
}

static void
test_accounting_returns_to_zero(void)
{
    nrt_tensor_t *ts[64];
    size_t expected[2] = {0, 0};

    init_with(NULL);
    for (int i = 0; i < 64; i++) {
        size_t size = (size_t)(i * 7919 % 300000) + 1;
        ts[i] = alloc_dev(i % 2, size);
        expected[i % 2] += size;
    }
    ASSERT_UEQ(used(0), expected[0]);
    ASSERT_UEQ(used(1), expected[1]);
    for (int i = 0; i < 64; i += 2) {
        nrt_tensor_t *s;
        ASSERT_OK(nrt_tensor_allocate_slice(ts[i], 0, 1, "s", &s));
        nrt_tensor_free(&ts[i]);
        nrt_tensor_free(&s);
    }
    for (int i = 1; i < 64; i += 2) {
        nrt_tensor_free(&ts[i]);
    }
    ASSERT_UEQ(used(0), 0);
    ASSERT_UEQ(used(1), 0);
    nrt_close();
}

static double
now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void
test_large_allocations(void)
{
    const size_t gib = (size_t)1 << 30;
    unsigned char byte = 0;
    nrt_tensor_t *t;
    double start, elapsed;
    void *va;

    init_with("1T");
    /* Untouched pages cost nothing, so 1 GiB is quick both ways. */
    start = now_ms();
    t = alloc_dev(0, gib);
    nrt_tensor_free(&t);
    elapsed = now_ms() - start;
    fprintf(stderr, "   1 GiB allocate+free: %.3f ms\n", elapsed);
    ASSERT_TRUE(elapsed < 50.0);

    t = alloc_dev(0, gib);
    ASSERT_UEQ(used(0), gib);
    ASSERT_OK(nrt_tensor_write(t, "\x5a", gib - 1, 1));
    ASSERT_OK(nrt_tensor_write(t, "\xa5", 0, 1));
    ASSERT_OK(nrt_tensor_read(t, &byte, gib - 1, 1));
    ASSERT_UEQ(byte, 0x5a);
    nrt_tensor_free(&t);
    ASSERT_UEQ(used(0), 0);

    /* A freed block comes back for the next request of its size. */
    t = alloc_dev(1, 64 << 20);
    va = nrt_tensor_get_va(t);
    ASSERT_OK(nrt_tensor_memset(t, 0, 1, 64 << 20));
    nrt_tensor_free(&t);
    t = alloc_dev(1, (64 << 20) - 100);
    ASSERT_PTR_EQ(nrt_tensor_get_va(t), va);
    nrt_tensor_free(&t);
    nrt_close();
}

static void
test_closed_and_stale_tensors(void)
{
    unsigned char buf[8] = {0};
    nrt_tensor_t *old, *old_slice, *fresh, *sentinel = NULL;

    init_with(NULL);
    old = alloc_dev(0, 1000);
    ASSERT_OK(nrt_tensor_allocate_slice(old, 0, 8, "s", &old_slice));
    ASSERT_OK(nrt_tensor_write(old, "data", 0, 4));
    nrt_close();

    ASSERT_STATUS(nrt_tensor_read(old, buf, 0, 4), NRT_CLOSED);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "nrt_tensor_read: ");
    ASSERT_STATUS(nrt_tensor_write(old, buf, 0, 4), NRT_CLOSED);
    ASSERT_STATUS(nrt_tensor_copy(old, 0, old_slice, 0, 4), NRT_CLOSED);
    ASSERT_STATUS(nrt_tensor_memset(old, 0, 0, 4), NRT_CLOSED);
    ASSERT_STATUS(nrt_tensor_attach_buffer(old, buf, 8), NRT_CLOSED);
    ASSERT_STATUS(nrt_tensor_allocate_slice(old, 0, 4, "x", &sentinel),
                  NRT_CLOSED);
    nrt_tensor_batch_op_t ops[] = {{0, 4, buf}};
    nrt_tensor_batch_t batch[] = {{old, ops, 1}};
    ASSERT_STATUS(nrt_tensor_read_batch(batch, 1, false), NRT_CLOSED);
    ASSERT_STATUS(nrt_tensor_write_batch(batch, 1, false), NRT_CLOSED);
    ASSERT_STATUS(nrt_tensor_read_batch(NULL, 0, false), NRT_CLOSED);
    ASSERT_NULL(nrt_tensor_get_va(old));
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "closed");
    ASSERT_UEQ(nrt_tensor_get_size(old), 1000); /* a property, still there */

    /* A new runtime does not adopt the old tensors. */
    init_with(NULL);
    fresh = alloc_dev(0, 100);
    ASSERT_STATUS(nrt_tensor_read(old, buf, 0, 4), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(),
                        "tensor belongs to a closed runtime");
    ASSERT_STATUS(nrt_tensor_copy(fresh, 0, old, 0, 4), NRT_INVALID);
    ASSERT_STATUS(nrt_tensor_read(old_slice, buf, 0, 4), NRT_INVALID);
    ASSERT_NULL(nrt_tensor_get_va(old));
    ASSERT_NULL(sentinel);
    /* Freeing them releases their memory without touching the new counts. */
    ASSERT_UEQ(used(0), 100);
    nrt_tensor_free(&old);
    nrt_tensor_free(&old_slice);
    ASSERT_UEQ(used(0), 100);
    nrt_tensor_free(&fresh);
    ASSERT_UEQ(used(0), 0);
    nrt_close();
}

static void
test_names(void)
{
    char long_name[1000];
    unsigned char buf[2];
    nrt_tensor_t *t;

    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    init_with(NULL);
    t = alloc(NRT_TENSOR_PLACEMENT_DEVICE, 0, 1, long_name);
    ASSERT_STATUS(nrt_tensor_read(t, buf, 0, 2), NRT_INVALID);
    /* Names are kept up to NRT_TENSOR_NAME_MAX - 1 characters. */
    long_name[NRT_TENSOR_NAME_MAX - 1] = '\0';
    ASSERT_STR_CONTAINS(nrtemu_last_error(), long_name);
    long_name[NRT_TENSOR_NAME_MAX - 1] = 'n';
    long_name[NRT_TENSOR_NAME_MAX] = '\0';
    ASSERT_TRUE(strstr(nrtemu_last_error(), long_name) == NULL);
    nrt_tensor_free(&t);
    t = alloc(NRT_TENSOR_PLACEMENT_DEVICE, 0, 1, NULL);
    ASSERT_STATUS(nrt_tensor_read(t, buf, 0, 2), NRT_INVALID);
    ASSERT_STR_CONTAINS(nrtemu_last_error(), "tensor '' of 1 bytes");
    nrt_tensor_free(&t);
    nrt_close();
}

int
main(void)
{
    test_begin("test_tensor");
    RUN_TEST(test_before_init);
    RUN_TEST(test_allocate_sizes_and_placements);
    RUN_TEST(test_allocate_failures);
    RUN_TEST(test_read_write_bounds);
    RUN_TEST(test_slices_share_storage);
    RUN_TEST(test_empty_and_attached);
    RUN_TEST(test_copy);
    RUN_TEST(test_memset);
    RUN_TEST(test_batches);
    RUN_TEST(test_out_of_memory);
    RUN_TEST(test_accounting_returns_to_zero);
    RUN_TEST(test_large_allocations);
    RUN_TEST(test_closed_and_stale_tensors);
    RUN_TEST(test_names);
    return 0;
}
