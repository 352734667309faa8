/*
 * error.h - last-error text and logging of the emulator (internal).
 *
 * Every failing ABI call records "<function>: <detail>" in a thread-local
 * buffer, readable with nrtemu_last_error(), and logs the detail in the
 * runtime's log-line format on stderr:
 *
 *   2024-Jan-09 20:27:41.059312 1234:1240 ERROR  NRT:nrt_init <detail>
 *
 * filtered by NEURON_RT_LOG_LEVEL (or NEURON_RT_LOG_LEVEL_NRT, which wins),
 * read at the first log call and again at each nrt_init().
 *
 * Which level a failure logs at:
 *  - nrtemu__fail(): ERROR.  The runtime itself could not do what was
 *    asked: every nrt_init() failure (a bad setting stops the runtime from
 *    starting, which the user must see), HBM or host memory exhausted,
 *    cores owned by another process, an unusable lock directory.
 *  - nrtemu__reject(): WARN.  The call was refused because of its
 *    arguments or the runtime state (NULL pointer, out-of-bounds range,
 *    bad vnc, called before nrt_init()...).  The caller gets the status
 *    and the detail anyway; logging these at ERROR would flood the output
 *    of programs and test suites that probe error paths on purpose.
 *  - nrtemu__fail_at(): an explicit level, for failures that are part of
 *    normal control flow (a tensor-set lookup miss logs at DEBUG).
 */
#ifndef NRTEMU_ERROR_H
#define NRTEMU_ERROR_H

#include <stdbool.h>

#include "nrt/nrt_status.h"

#define NRTEMU_LAST_ERROR_MAX 1024

enum nrtemu_log_level {
    NRTEMU_LOG_QUIET = 0,
    NRTEMU_LOG_ERROR = 1,
    NRTEMU_LOG_WARN = 2,
    NRTEMU_LOG_INFO = 3,
    NRTEMU_LOG_DEBUG = 4,
    NRTEMU_LOG_TRACE = 5,
};

/* Re-read the log level from the environment. */
void nrtemu__log_configure(void);

bool nrtemu__log_enabled(enum nrtemu_log_level level);

/* One log line attributed to `func`; no-op when the level is filtered. */
void nrtemu__log(enum nrtemu_log_level level, const char *func,
                 const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * Record "<func>: <detail>" as the thread's last error, log the detail and
 * return `status`, so that call sites read `return nrtemu__reject(...)`.
 */
NRT_STATUS nrtemu__fail(NRT_STATUS status, const char *func, const char *fmt,
                        ...) __attribute__((format(printf, 3, 4)));
NRT_STATUS nrtemu__reject(NRT_STATUS status, const char *func, const char *fmt,
                          ...) __attribute__((format(printf, 3, 4)));
NRT_STATUS nrtemu__fail_at(enum nrtemu_log_level level, NRT_STATUS status,
                           const char *func, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * Refuse a call for a feature the emulated device does not have, as the
 * runtime does on an instance without it: NRT_INVALID, with a detail
 * "<what> is not available in the nrtpy emulator[: <hint>]" logged at
 * WARN.  `hint` may be NULL.
 */
NRT_STATUS nrtemu__unsupported(const char *func, const char *what,
                               const char *hint);

#endif /* NRTEMU_ERROR_H */
