/*
 * nrt/nrt_profile.h - profiling of the libnrt ABI: per-model profiles,
 * continuous profiling and the "inspect" capture.
 *
 * Clean-room header of the nrtpy project: names and signatures are those
 * of the Neuron runtime's header of the same name.
 *
 * In the emulator, nrt_profile_start/stop record executions (a Chrome
 * trace-event JSON instead of an NTFF, whose format is not public).  The
 * option objects of continuous profiling and inspect are complete (they
 * keep and validate every setting), but the captures themselves write
 * device profiles the emulator does not have: starting one returns
 * NRT_INVALID with a detail saying so; use nrt_sys_trace_* (nrt_sys_trace.h)
 * for timings of emulated executions.
 *
 * Thread safety: every function may be called from any thread; an options
 * or config object must not be used by two threads at once.
 */
#ifndef NRT_NRT_PROFILE_H
#define NRT_NRT_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nrt_profile_continuous_options
    nrt_profile_continuous_options_t;                   /* opaque */
typedef struct nrt_inspect_config nrt_inspect_config_t; /* opaque */

/* ---------------------------------------------------------- model profile */

/**
 * Record the next executions of `model` for nrt_profile_stop(`filename`).
 * Starting again with the same filename restarts the recording.
 * @param filename where nrt_profile_stop() will write; copied.
 */
NRT_STATUS nrt_profile_start(nrt_model_t *model, const char *filename);

/**
 * End the recording started with `filename` and write it there.  The
 * emulator writes a Chrome trace-event JSON (one "execute" event per
 * execution and one event per program op), which Perfetto and
 * chrome://tracing open, not an NTFF.  As on hardware, nothing is written
 * when no execution succeeded.
 * @return NRT_SUCCESS; NRT_INVALID for NULL or a filename that no
 *         nrt_profile_start() used; NRT_FAILURE when nothing was recorded
 *         or the file cannot be written (the detail has the errno text).
 */
NRT_STATUS nrt_profile_stop(const char *filename);

/* ---------------------------------------------------- continuous profiling */

/**
 * New options with the defaults (output directory "./output").
 * Ownership: free them with nrt_profile_continuous_options_free().
 * @return NRT_SUCCESS; NRT_INVALID for NULL; NRT_RESOURCE.
 */
NRT_STATUS nrt_profile_continuous_options_allocate(
    nrt_profile_continuous_options_t **options);

/** Free options; NULL is accepted.  @return NRT_SUCCESS. */
NRT_STATUS
nrt_profile_continuous_options_free(nrt_profile_continuous_options_t *options);

/**
 * Where the profiles go; the string is copied.
 * @return NRT_SUCCESS; NRT_INVALID for NULL or an empty path;
 *         NRT_RESOURCE.
 */
NRT_STATUS nrt_profile_continuous_options_set_output_dir(
    nrt_profile_continuous_options_t *options, const char *output_dir);

/**
 * Start continuous device profiling.  The emulator has no device profile.
 * @return NRT_INVALID with a detail saying so; NRT_UNINITIALIZED or
 *         NRT_CLOSED before that.
 */
NRT_STATUS
nrt_profile_continuous_start(nrt_profile_continuous_options_t *options);

/** Save the profile of `vnc` so far.  As nrt_profile_continuous_start(). */
NRT_STATUS
nrt_profile_continuous_save(uint32_t vnc,
                            nrt_profile_continuous_options_t *options);

/** Stop continuous profiling.  As nrt_profile_continuous_start(). */
NRT_STATUS nrt_profile_continuous_stop(void);

/* ----------------------------------------------------------------- inspect */

/**
 * New inspect config with the defaults: session id 1, output "./output",
 * every activity, every vnc and event type, inspect and inspect-on-fail
 * off.  Ownership: free it with nrt_inspect_config_free().
 * @return NRT_SUCCESS; NRT_INVALID for NULL; NRT_RESOURCE.
 */
NRT_STATUS nrt_inspect_config_allocate(nrt_inspect_config_t **options);
/** Reset a config to the defaults.  @return NRT_SUCCESS; NRT_INVALID. */
NRT_STATUS nrt_inspect_config_set_defaults(nrt_inspect_config_t *options);
/** Free a config; NULL is accepted.  @return NRT_SUCCESS. */
NRT_STATUS nrt_inspect_config_free(nrt_inspect_config_t *options);
/** @return NRT_SUCCESS; NRT_INVALID for NULL or a negative id. */
NRT_STATUS nrt_inspect_config_set_session_id(nrt_inspect_config_t *options,
                                             int session_id);
/** The string is copied.  @return NRT_SUCCESS; NRT_INVALID; NRT_RESOURCE. */
NRT_STATUS nrt_inspect_config_set_output_dir(nrt_inspect_config_t *options,
                                             const char *output_dir);
/** @return NRT_SUCCESS; NRT_INVALID for NULL or 0. */
NRT_STATUS nrt_inspect_config_set_sys_trace_max_events_per_nc(
    nrt_inspect_config_t *options, uint64_t sys_trace_max_events_per_nc);
/** @return NRT_SUCCESS; NRT_INVALID for NULL or a vnc past the last. */
NRT_STATUS
nrt_inspect_config_set_capture_enabled_for_nc(nrt_inspect_config_t *options,
                                              uint32_t nc_idx, bool enabled);
/**
 * Capture a system-trace event type or not; the names are those of
 * nrt_sys_trace_get_event_types(), or "hardware", "software", "all".
 * @return NRT_SUCCESS; NRT_INVALID for NULL or an unknown name.
 */
NRT_STATUS nrt_inspect_config_set_capture_enabled_for_event_type_string(
    nrt_inspect_config_t *options, const char *event_type, bool enabled);
/** @return NRT_SUCCESS; NRT_INVALID for NULL. */
NRT_STATUS nrt_inspect_config_set_enable_inspect(nrt_inspect_config_t *options,
                                                 bool enable_inspect);
/** @return NRT_SUCCESS; NRT_INVALID for NULL. */
NRT_STATUS
nrt_inspect_config_set_enable_inspect_on_fail(nrt_inspect_config_t *options,
                                              bool enable_inspect_on_fail);
/**
 * Every activity type: "system_profile", "device_profile", "host_memory",
 * "cpu_util".  Ownership: malloc'd array of malloc'd strings; free it
 * with nrt_inspect_config_free_activity_types().
 * @return NRT_SUCCESS; NRT_INVALID for NULL; NRT_RESOURCE.
 */
NRT_STATUS
nrt_inspect_config_get_all_activity_types(const char ***activity_types,
                                          size_t *count);
/** The activity types `options` enables; ownership as above. */
NRT_STATUS
nrt_inspect_config_get_enabled_activity_types(nrt_inspect_config_t *options,
                                              const char ***activity_types,
                                              size_t *count);
/** Free a list of activity types; NULL is accepted. */
void nrt_inspect_config_free_activity_types(const char **activity_types,
                                            size_t count);
/**
 * Enable or disable an activity type, or every one with "all".
 * @return NRT_SUCCESS; NRT_INVALID for NULL or an unknown name.
 */
NRT_STATUS nrt_inspect_config_set_activity(nrt_inspect_config_t *options,
                                           const char *activity_type,
                                           bool enabled);

/**
 * Start an inspect capture configured by the NEURON_RT_INSPECT_*
 * variables.  The emulator writes no inspect output.
 * @return NRT_INVALID with a detail saying so; NRT_UNINITIALIZED or
 *         NRT_CLOSED before that.
 */
NRT_STATUS nrt_inspect_begin(void);
/** As nrt_inspect_begin(), configured by `options` (NULL: defaults). */
NRT_STATUS nrt_inspect_begin_with_options(nrt_inspect_config_t *options);
/** End an inspect capture.  As nrt_inspect_begin(). */
NRT_STATUS nrt_inspect_stop(void);

#ifdef __cplusplus
}
#endif

#endif /* NRT_NRT_PROFILE_H */
