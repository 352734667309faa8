/*
 * nrt/nrt_sys_trace.h - the system trace of the libnrt ABI.
 *
 * Clean-room header of the nrtpy project: names and signatures are those
 * of the Neuron runtime's header of the same name.
 */
#ifndef NRT_NRT_SYS_TRACE_H
#define NRT_NRT_SYS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nrt/nrt.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * System trace: events of every execution, kept per vnc in ring buffers
 * until fetched.  Event types: "nc_exec_running" (hardware group; one
 * start/stop pair per execution on each vnc of the model, with the
 * emulated core's clock in data.nc_timestamp_ns), "nrt_load" and
 * "nrt_execute" (software group).  Thread safety: every function may be
 * called from any thread; a config or options object must not be used by
 * two threads at once.
 */
typedef struct nrt_sys_trace_config nrt_sys_trace_config_t;
typedef struct nrt_sys_trace_fetch_options nrt_sys_trace_fetch_options_t;

/**
 * New capture config with the defaults: every vnc, every event type,
 * 1,000,000 events per vnc.  Free it with nrt_sys_trace_config_free().
 */
NRT_STATUS nrt_sys_trace_config_allocate(nrt_sys_trace_config_t **options);
/** Reset a config to the defaults. */
void nrt_sys_trace_config_set_defaults(nrt_sys_trace_config_t *options);
/** Free a config; NULL is accepted. */
void nrt_sys_trace_config_free(nrt_sys_trace_config_t *options);
/** Ring buffer size per vnc; the oldest events are overwritten. */
void
nrt_sys_trace_config_set_max_events_per_nc(nrt_sys_trace_config_t *options,
                                           uint64_t max_events_per_nc);
/** Capture on vnc `nc_idx` or not; out-of-range indices are ignored. */
void nrt_sys_trace_config_set_capture_enabled_for_nc(
    nrt_sys_trace_config_t *options, uint32_t nc_idx, bool enabled);
/**
 * Capture events of `event_type` or not.  Besides the names of
 * nrt_sys_trace_get_event_types(), "hardware", "software" and "all" name
 * groups.
 * @return NRT_SUCCESS; NRT_INVALID for an unknown name.
 */
NRT_STATUS nrt_sys_trace_config_set_capture_enabled_for_event_type(
    nrt_sys_trace_config_t *options, const char *event_type, bool enabled);
/**
 * The event types the config enables.
 * Ownership: free the list with nrt_sys_trace_free_event_types().
 */
NRT_STATUS nrt_sys_trace_config_get_enabled_event_types(
    nrt_sys_trace_config_t *options, const char ***event_types, size_t *count);
/**
 * Every event type the emulator can capture.
 * Ownership: malloc'd array of malloc'd strings; free it with
 * nrt_sys_trace_free_event_types().
 */
NRT_STATUS nrt_sys_trace_get_event_types(const char ***event_types,
                                         size_t *count);
/** Free a list of event types; NULL is accepted. */
void nrt_sys_trace_free_event_types(const char **event_types, size_t count);

/**
 * Start capturing as `options` says (NULL: the defaults).  The config is
 * copied: the caller may free it right away.  Starting again restarts the
 * capture and drops buffered events.
 * @return NRT_SUCCESS; NRT_INVALID for a max of 0 events;
 *         NRT_UNINITIALIZED or NRT_CLOSED.
 */
NRT_STATUS nrt_sys_trace_start(nrt_sys_trace_config_t *options);
/** Stop capturing and drop the events not fetched yet. */
NRT_STATUS nrt_sys_trace_stop(void);

/**
 * New fetch options with the defaults: every vnc, every buffered event.
 * Free them with nrt_sys_trace_fetch_options_free().
 */
NRT_STATUS
nrt_sys_trace_fetch_options_allocate(nrt_sys_trace_fetch_options_t **options);
/** Reset fetch options to the defaults. */
void nrt_sys_trace_fetch_options_set_defaults(
    nrt_sys_trace_fetch_options_t *options);
/** Free fetch options; NULL is accepted. */
void nrt_sys_trace_fetch_options_free(nrt_sys_trace_fetch_options_t *options);
/** Fetch at most this many events of each vnc, the oldest first (0: all). */
void nrt_sys_trace_fetch_options_set_max_events_per_nc(
    nrt_sys_trace_fetch_options_t *options, uint64_t max_events_per_nc);
/** Fetch the events of vnc `nc_idx` only. */
void
nrt_sys_trace_fetch_options_set_nc_idx(nrt_sys_trace_fetch_options_t *options,
                                       uint64_t nc_idx);

/**
 * Take the buffered events as a NUL-terminated JSON text
 * {"events":[...]}; fetched events are never returned again.  Events of
 * one vnc are in capture order, vncs in increasing order.
 * @param buffer[out]       the text; free it with nrt_sys_trace_buffer_free().
 * @param written_size[out] strlen() of the text (the NUL excluded).
 * @param options           NULL for the defaults.
 * @return NRT_SUCCESS; NRT_INVALID when the trace is not started or
 *         `nc_idx` is out of range; NRT_RESOURCE when host memory runs
 *         out (the events are then kept).
 */
NRT_STATUS
nrt_sys_trace_fetch_events(char **buffer, size_t *written_size,
                           const nrt_sys_trace_fetch_options_t *options);
/** Free a buffer of nrt_sys_trace_fetch_events(); NULL is accepted. */
void nrt_sys_trace_buffer_free(char *buffer);

#ifdef __cplusplus
}
#endif

#endif /* NRT_NRT_SYS_TRACE_H */
