/*
 * inspect.c - continuous profiling and "inspect" captures of nrt_profile.h.
 *
 * The option objects are complete: every setting is validated and kept,
 * and the system-trace part of an inspect config (vncs, event types, ring
 * size) is a sys-trace config, so the two APIs accept the same names.  The
 * captures themselves write device profiles (NTFF and the neuron-explorer
 * formats), which the emulated cores do not produce: starting one is
 * refused with NRT_INVALID and a detail pointing to nrt_sys_trace_*.
 */
#include <stdlib.h>
#include <string.h>

#include "nrt/nrt_profile.h"
#include "nrt/nrt_sys_trace.h"

#include "util/error.h"
#include "util/export.h"
#include "device/instance.h"
#include "abi/runtime.h"

#define DEFAULT_OUTPUT_DIR "./output"
#define DEFAULT_SESSION_ID 1

#define NO_DEVICE_PROFILE_HINT                                               \
    "the emulated cores produce no device profile; use nrt_sys_trace_* for " \
    "execution timings"

/* ------------------------------------------------- continuous profiling */

#define CONTINUOUS_MAGIC 0x6e72436fu /* "oCrn" */

struct nrt_profile_continuous_options {
    uint32_t magic;
    char *output_dir; /* owned */
};

static NRT_STATUS
continuous_check(const char *func,
                 const nrt_profile_continuous_options_t *options)
{
    if (options == NULL) {
        return nrtemu__reject(NRT_INVALID, func, "NULL options");
    }
    if (options->magic != CONTINUOUS_MAGIC) {
        return nrtemu__reject(NRT_INVALID, func,
                              "options are not live continuous-profile "
                              "options (freed or corrupt)");
    }
    return NRT_SUCCESS;
}

/* Replace `*slot` by a copy of `dir`. */
static NRT_STATUS
set_dir(const char *func, char **slot, const char *dir)
{
    char *copy;

    if (dir == NULL || dir[0] == '\0') {
        return nrtemu__reject(NRT_INVALID, func, "%s output directory",
                              dir == NULL ? "NULL" : "empty");
    }
    copy = strdup(dir);
    if (copy == NULL) {
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    free(*slot);
    *slot = copy;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_profile_continuous_options_allocate(
    nrt_profile_continuous_options_t **options)
{
    nrt_profile_continuous_options_t *opt;

    if (options == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL options pointer");
    }
    opt = calloc(1, sizeof *opt);
    if (opt == NULL || set_dir(__func__, &opt->output_dir,
                               DEFAULT_OUTPUT_DIR) != NRT_SUCCESS) {
        free(opt);
        return nrtemu__fail(NRT_RESOURCE, __func__, "out of host memory");
    }
    opt->magic = CONTINUOUS_MAGIC;
    *options = opt;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_profile_continuous_options_free(nrt_profile_continuous_options_t *options)
{
    if (options == NULL) {
        return NRT_SUCCESS;
    }
    if (options->magic != CONTINUOUS_MAGIC) {
        return continuous_check(__func__, options);
    }
    options->magic = 0;
    free(options->output_dir);
    free(options);
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_profile_continuous_options_set_output_dir(
    nrt_profile_continuous_options_t *options, const char *output_dir)
{
    NRT_STATUS st = continuous_check(__func__, options);

    if (st != NRT_SUCCESS) {
        return st;
    }
    return set_dir(__func__, &options->output_dir, output_dir);
}

NRTEMU_EXPORT NRT_STATUS
nrt_profile_continuous_start(nrt_profile_continuous_options_t *options)
{
    NRT_STATUS st = continuous_check(__func__, options);

    if (st == NRT_SUCCESS) {
        st = nrtemu__runtime_check(__func__, 0);
    }
    if (st != NRT_SUCCESS) {
        return st;
    }
    return nrtemu__unsupported(__func__, "continuous device profiling",
                               NO_DEVICE_PROFILE_HINT);
}

NRTEMU_EXPORT NRT_STATUS
nrt_profile_continuous_save(uint32_t vnc,
                            nrt_profile_continuous_options_t *options)
{
    NRT_STATUS st = continuous_check(__func__, options);

    if (st == NRT_SUCCESS) {
        st = nrtemu__vnc_check(__func__, vnc);
    }
    if (st != NRT_SUCCESS) {
        return st;
    }
    return nrtemu__unsupported(__func__, "continuous device profiling",
                               NO_DEVICE_PROFILE_HINT);
}

NRTEMU_EXPORT NRT_STATUS
nrt_profile_continuous_stop(void)
{
    NRT_STATUS st = nrtemu__runtime_check(__func__, 0);

    if (st != NRT_SUCCESS) {
        return st;
    }
    return nrtemu__unsupported(__func__, "continuous device profiling",
                               NO_DEVICE_PROFILE_HINT);
}

/* --------------------------------------------------------------- inspect */

/* X(bit, name): the activity types of an inspect capture. */
#define ACTIVITY_LIST(X)   \
    X(0, "system_profile") \
    X(1, "device_profile") \
    X(2, "host_memory")    \
    X(3, "cpu_util")

static const char *const activity_names[] = {
#define ACTIVITY_NAME(bit, name) [bit] = name,
    ACTIVITY_LIST(ACTIVITY_NAME)
#undef ACTIVITY_NAME
};

#define ACTIVITY_COUNT (sizeof activity_names / sizeof activity_names[0])
#define ACTIVITY_ALL ((1u << ACTIVITY_COUNT) - 1)

#define INSPECT_MAGIC 0x6e724973u /* "sIrn" */

struct nrt_inspect_config {
    uint32_t magic;
    int session_id;
    char *output_dir;              /* owned */
    nrt_sys_trace_config_t *trace; /* owned: vncs, event types, ring size */
    unsigned activities;           /* bit i: activity_names[i] */
    bool enable_inspect;
    bool enable_inspect_on_fail;
};

static NRT_STATUS
inspect_check(const char *func, const nrt_inspect_config_t *options)
{
    if (options == NULL) {
        return nrtemu__reject(NRT_INVALID, func, "NULL inspect config");
    }
    if (options->magic != INSPECT_MAGIC) {
        return nrtemu__reject(NRT_INVALID, func,
                              "not a live inspect config (freed or "
                              "corrupt)");
    }
    return NRT_SUCCESS;
}

/* Defaults of every field but the owned objects, which are reset. */
static NRT_STATUS
inspect_defaults(const char *func, nrt_inspect_config_t *options)
{
    NRT_STATUS st = set_dir(func, &options->output_dir, DEFAULT_OUTPUT_DIR);

    if (st != NRT_SUCCESS) {
        return st;
    }
    nrt_sys_trace_config_set_defaults(options->trace);
    options->session_id = DEFAULT_SESSION_ID;
    options->activities = ACTIVITY_ALL;
    options->enable_inspect = false;
    options->enable_inspect_on_fail = false;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_inspect_config_allocate(nrt_inspect_config_t **options)
{
    nrt_inspect_config_t *cfg;
    NRT_STATUS st;

    if (options == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL config pointer");
    }
    cfg = calloc(1, sizeof *cfg);
    if (cfg == NULL) {
        return nrtemu__fail(NRT_RESOURCE, __func__, "out of host memory");
    }
    st = nrt_sys_trace_config_allocate(&cfg->trace);
    if (st != NRT_SUCCESS) {
        goto fail_cfg;
    }
    st = inspect_defaults(__func__, cfg);
    if (st != NRT_SUCCESS) {
        goto fail_trace;
    }
    cfg->magic = INSPECT_MAGIC;
    *options = cfg;
    return NRT_SUCCESS;

fail_trace:
    nrt_sys_trace_config_free(cfg->trace);
fail_cfg:
    free(cfg);
    return st;
}

NRTEMU_EXPORT NRT_STATUS
nrt_inspect_config_set_defaults(nrt_inspect_config_t *options)
{
    NRT_STATUS st = inspect_check(__func__, options);

    if (st != NRT_SUCCESS) {
        return st;
    }
    return inspect_defaults(__func__, options);
}

NRTEMU_EXPORT NRT_STATUS
nrt_inspect_config_free(nrt_inspect_config_t *options)
{
    if (options == NULL) {
        return NRT_SUCCESS;
    }
    if (options->magic != INSPECT_MAGIC) {
        return inspect_check(__func__, options);
    }
    options->magic = 0;
    nrt_sys_trace_config_free(options->trace);
    free(options->output_dir);
    free(options);
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_inspect_config_set_session_id(nrt_inspect_config_t *options,
                                  int session_id)
{
    NRT_STATUS st = inspect_check(__func__, options);

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (session_id < 0) {
        return nrtemu__reject(NRT_INVALID, __func__, "negative session id %d",
                              session_id);
    }
    options->session_id = session_id;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_inspect_config_set_output_dir(nrt_inspect_config_t *options,
                                  const char *output_dir)
{
    NRT_STATUS st = inspect_check(__func__, options);

    if (st != NRT_SUCCESS) {
        return st;
    }
    return set_dir(__func__, &options->output_dir, output_dir);
}

NRTEMU_EXPORT NRT_STATUS
nrt_inspect_config_set_sys_trace_max_events_per_nc(
    nrt_inspect_config_t *options, uint64_t sys_trace_max_events_per_nc)
{
    NRT_STATUS st = inspect_check(__func__, options);

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (sys_trace_max_events_per_nc == 0) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "a ring of 0 events per vnc");
    }
    nrt_sys_trace_config_set_max_events_per_nc(options->trace,
                                               sys_trace_max_events_per_nc);
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_inspect_config_set_capture_enabled_for_nc(nrt_inspect_config_t *options,
                                              uint32_t nc_idx, bool enabled)
{
    NRT_STATUS st = inspect_check(__func__, options);

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (nc_idx >= NRTEMU_MAX_VNC) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "vnc %u is past the last (%u)", nc_idx,
                              NRTEMU_MAX_VNC - 1);
    }
    nrt_sys_trace_config_set_capture_enabled_for_nc(options->trace, nc_idx,
                                                    enabled);
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_inspect_config_set_capture_enabled_for_event_type_string(
    nrt_inspect_config_t *options, const char *event_type, bool enabled)
{
    NRT_STATUS st = inspect_check(__func__, options);

    if (st != NRT_SUCCESS) {
        return st;
    }
    return nrt_sys_trace_config_set_capture_enabled_for_event_type(
        options->trace, event_type, enabled);
}

NRTEMU_EXPORT NRT_STATUS
nrt_inspect_config_set_enable_inspect(nrt_inspect_config_t *options,
                                      bool enable_inspect)
{
    NRT_STATUS st = inspect_check(__func__, options);

    if (st == NRT_SUCCESS) {
        options->enable_inspect = enable_inspect;
    }
    return st;
}

NRTEMU_EXPORT NRT_STATUS
nrt_inspect_config_set_enable_inspect_on_fail(nrt_inspect_config_t *options,
                                              bool enable_inspect_on_fail)
{
    NRT_STATUS st = inspect_check(__func__, options);

    if (st == NRT_SUCCESS) {
        options->enable_inspect_on_fail = enable_inspect_on_fail;
    }
    return st;
}

NRTEMU_EXPORT void
nrt_inspect_config_free_activity_types(const char **activity_types,
                                       size_t count)
{
    if (activity_types == NULL) {
        return;
    }
    for (size_t i = 0; i < count; i++) {
        free((void *)activity_types[i]);
    }
    free(activity_types);
}

/* A malloc'd list of malloc'd copies of the activity names in `mask`. */
static NRT_STATUS
activity_list(const char *func, unsigned mask, const char ***activity_types,
              size_t *count)
{
    const char **list;
    size_t n = 0;

    if (activity_types == NULL || count == NULL) {
        return nrtemu__reject(NRT_INVALID, func, "NULL %s pointer",
                              activity_types == NULL ? "list" : "count");
    }
    /* One spare entry, so that an empty list is still a valid pointer. */
    list = calloc(ACTIVITY_COUNT + 1, sizeof *list);
    if (list == NULL) {
        return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
    }
    for (size_t i = 0; i < ACTIVITY_COUNT; i++) {
        if ((mask & (1u << i)) == 0) {
            continue;
        }
        list[n] = strdup(activity_names[i]);
        if (list[n] == NULL) {
            nrt_inspect_config_free_activity_types(list, n);
            return nrtemu__fail(NRT_RESOURCE, func, "out of host memory");
        }
        n++;
    }
    *activity_types = list;
    *count = n;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_inspect_config_get_all_activity_types(const char ***activity_types,
                                          size_t *count)
{
    return activity_list(__func__, ACTIVITY_ALL, activity_types, count);
}

NRTEMU_EXPORT NRT_STATUS
nrt_inspect_config_get_enabled_activity_types(nrt_inspect_config_t *options,
                                              const char ***activity_types,
                                              size_t *count)
{
    NRT_STATUS st = inspect_check(__func__, options);

    if (st != NRT_SUCCESS) {
        return st;
    }
    return activity_list(__func__, options->activities, activity_types, count);
}

NRTEMU_EXPORT NRT_STATUS
nrt_inspect_config_set_activity(nrt_inspect_config_t *options,
                                const char *activity_type, bool enabled)
{
    unsigned bits = 0;
    NRT_STATUS st = inspect_check(__func__, options);

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (activity_type == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL activity type");
    }
    if (strcmp(activity_type, "all") == 0) {
        bits = ACTIVITY_ALL;
    }
    for (size_t i = 0; i < ACTIVITY_COUNT; i++) {
        if (strcmp(activity_type, activity_names[i]) == 0) {
            bits = 1u << i;
        }
    }
    if (bits == 0) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "unknown activity type '%.64s' (see "
                              "nrt_inspect_config_get_all_activity_types)",
                              activity_type);
    }
    options->activities =
        enabled ? options->activities | bits : options->activities & ~bits;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_inspect_begin(void)
{
    NRT_STATUS st = nrtemu__runtime_check(__func__, 0);

    if (st != NRT_SUCCESS) {
        return st;
    }
    return nrtemu__unsupported(__func__, "inspect capture",
                               NO_DEVICE_PROFILE_HINT);
}

NRTEMU_EXPORT NRT_STATUS
nrt_inspect_begin_with_options(nrt_inspect_config_t *options)
{
    NRT_STATUS st =
        options != NULL ? inspect_check(__func__, options) : NRT_SUCCESS;

    if (st == NRT_SUCCESS) {
        st = nrtemu__runtime_check(__func__, 0);
    }
    if (st != NRT_SUCCESS) {
        return st;
    }
    return nrtemu__unsupported(__func__, "inspect capture",
                               NO_DEVICE_PROFILE_HINT);
}

NRTEMU_EXPORT NRT_STATUS
nrt_inspect_stop(void)
{
    NRT_STATUS st = nrtemu__runtime_check(__func__, 0);

    if (st != NRT_SUCCESS) {
        return st;
    }
    return nrtemu__unsupported(__func__, "inspect capture",
                               NO_DEVICE_PROFILE_HINT);
}
