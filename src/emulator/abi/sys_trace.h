/*
 * sys_trace.h - events for the system trace of nrt_sys_trace_* (internal).
 *
 * The executing code brackets its work with begin/end calls.  While no
 * trace is capturing, each call is one atomic load.  A begin returns a
 * tracking id (0 when the event was not captured) that the matching end
 * takes back; an end whose begin belonged to an earlier capture session is
 * dropped, so start/stop pairs in one session always match.
 */
#ifndef NRTEMU_SYS_TRACE_H
#define NRTEMU_SYS_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "nrt/nrt.h"
#include "nrt/nrt_sys_trace.h"

/* X(enum suffix, name, hardware group) */
#define NRTEMU_TRACE_TYPE_LIST(X)               \
    X(NC_EXEC_RUNNING, "nc_exec_running", true) \
    X(CC_RUNNING, "cc_running", true)           \
    X(NRT_LOAD, "nrt_load", false)              \
    X(NRT_EXECUTE, "nrt_execute", false)

enum nrtemu_trace_type {
#define NRTEMU_TRACE_ENUM(suffix, name, hw) NRTEMU_TRACE_##suffix,
    NRTEMU_TRACE_TYPE_LIST(NRTEMU_TRACE_ENUM)
#undef NRTEMU_TRACE_ENUM
        NRTEMU_TRACE_TYPE_COUNT
};

/*
 * A "start" event of `type` on `vnc`.  `model_name` is copied (interned);
 * `exec_id` is 0 for events outside an execution.
 * @return the tracking id for the end call; 0 when not captured.
 */
uint64_t nrtemu__sys_trace_begin(enum nrtemu_trace_type type, uint32_t vnc,
                                 uint64_t exec_id, const char *model_name);

/* The "stop" event matching `tracking_id`; `status` of the work done. */
void nrtemu__sys_trace_end(enum nrtemu_trace_type type, uint32_t vnc,
                           uint64_t tracking_id, uint64_t exec_id,
                           const char *model_name, NRT_STATUS status);

/* Whether an event of `type` on `vnc` would be captured now (one atomic
 * load while nothing captures). */
bool nrtemu__sys_trace_wanted(enum nrtemu_trace_type type, uint32_t vnc);

/*
 * A start and a stop event of `type` on `vnc` for work already done
 * between start_ns and end_ns (CLOCK_MONOTONIC): cc_running, for each
 * collective op of an execution, the time this rank spent in it (waiting
 * for the others included).
 */
void nrtemu__sys_trace_span(enum nrtemu_trace_type type, uint32_t vnc,
                            uint64_t exec_id, const char *model_name,
                            uint64_t start_ns, uint64_t end_ns);

/* nc_exec_running around the run of one execution on one vnc. */
static inline uint64_t
nrtemu__sys_trace_exec_begin(uint32_t vnc, uint64_t exec_id,
                             const char *model_name)
{
    return nrtemu__sys_trace_begin(NRTEMU_TRACE_NC_EXEC_RUNNING, vnc, exec_id,
                                   model_name);
}

static inline void
nrtemu__sys_trace_exec_end(uint32_t vnc, uint64_t tracking_id,
                           uint64_t exec_id, const char *model_name,
                           NRT_STATUS status)
{
    nrtemu__sys_trace_end(NRTEMU_TRACE_NC_EXEC_RUNNING, vnc, tracking_id,
                          exec_id, model_name, status);
}

#endif /* NRTEMU_SYS_TRACE_H */
