/*
 * nrt/nrt_version.h - the runtime version query of the libnrt ABI.
 *
 * Clean-room header of the nrtpy project: names and the struct layout are
 * those of the Neuron runtime's header of the same name.
 */
#ifndef NRT_NRT_VERSION_H
#define NRT_NRT_VERSION_H

#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RT_VERSION_DETAIL_LEN 128
#define GIT_HASH_LEN 64

typedef struct nrt_version {
    uint64_t rt_major;
    uint64_t rt_minor;
    uint64_t rt_patch;
    uint64_t rt_maintenance;
    char rt_detail[RT_VERSION_DETAIL_LEN];
    char git_hash[GIT_HASH_LEN];
} nrt_version_t;

#if defined(__x86_64__) || defined(__aarch64__)
#ifdef __cplusplus
#define NRT_VERSION_ASSERT_ static_assert
#else
#define NRT_VERSION_ASSERT_ _Static_assert
#endif
NRT_VERSION_ASSERT_(sizeof(nrt_version_t) == 224, "nrt_version_t");
NRT_VERSION_ASSERT_(offsetof(nrt_version_t, rt_detail) == 32, "rt_detail");
NRT_VERSION_ASSERT_(offsetof(nrt_version_t, git_hash) == 160, "git_hash");
#undef NRT_VERSION_ASSERT_
#endif

/**
 * Fill `*ver`, writing at most `size` bytes (callers built against an
 * older, shorter struct get its prefix).  Callable before nrt_init() and
 * from any thread.
 * @return NRT_SUCCESS; NRT_INVALID for NULL.
 */
NRT_STATUS nrt_get_version(nrt_version_t *ver, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* NRT_NRT_VERSION_H */
