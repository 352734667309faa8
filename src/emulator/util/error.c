/*
 * error.c - thread-local last error and runtime-style log lines.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nrt/nrtemu.h"

#include "util/env_parse.h"
#include "util/error.h"
#include "util/export.h"

static _Thread_local char last_error[NRTEMU_LAST_ERROR_MAX];

static atomic_int log_level = NRTEMU_LOG_ERROR;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

void
nrtemu__log_configure(void)
{
    /* The module-specific variable wins, as it does in the runtime. */
    static const char *const names[] = {"NEURON_RT_LOG_LEVEL_NRT",
                                        "NEURON_RT_LOG_LEVEL"};
    int level = NRTEMU_LOG_ERROR;

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *value = getenv(names[i]);
        int parsed = value != NULL ? nrtemu__parse_log_level(value) : -1;
        if (parsed >= 0) {
            level = parsed;
            break;
        }
    }
    atomic_store_explicit(&log_level, level, memory_order_relaxed);
}

static void
log_configure_once(void)
{
    nrtemu__log_configure();
}

bool
nrtemu__log_enabled(enum nrtemu_log_level level)
{
    pthread_once(&log_once, log_configure_once);
    return level != NRTEMU_LOG_QUIET &&
           (int)level <=
               atomic_load_explicit(&log_level, memory_order_relaxed);
}

static const char *
level_name(enum nrtemu_log_level level)
{
    switch (level) {
    case NRTEMU_LOG_ERROR:
        return "ERROR";
    case NRTEMU_LOG_WARN:
        return "WARN";
    case NRTEMU_LOG_INFO:
        return "INFO";
    case NRTEMU_LOG_DEBUG:
        return "DEBUG";
    case NRTEMU_LOG_TRACE:
        return "TRACE";
    case NRTEMU_LOG_QUIET:
        break;
    }
    return "?";
}

static void
log_write(enum nrtemu_log_level level, const char *func, const char *text)
{
    /* Month names of our own: strftime's %b would follow the locale. */
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr",
                                         "May", "Jun", "Jul", "Aug",
                                         "Sep", "Oct", "Nov", "Dec"};
    char line[NRTEMU_LAST_ERROR_MAX + 160];
    struct timespec now;
    struct tm tm;
    int n;

    clock_gettime(CLOCK_REALTIME, &now);
    localtime_r(&now.tv_sec, &tm);
    n = snprintf(line, sizeof line,
                 "%04d-%s-%02d %02d:%02d:%02d.%06ld %ld:%ld %-6s NRT:%s %s\n",
                 tm.tm_year + 1900, months[tm.tm_mon % 12], tm.tm_mday,
                 tm.tm_hour, tm.tm_min, tm.tm_sec, now.tv_nsec / 1000,
                 (long)getpid(), (long)syscall(SYS_gettid), level_name(level),
                 func, text);
    if (n < 0) {
        return;
    }
    if ((size_t)n >= sizeof line) {
        n = (int)sizeof line - 1;
        line[n - 1] = '\n';
    }
    /* One write per line keeps lines of concurrent threads whole. */
    ssize_t ignored = write(STDERR_FILENO, line, (size_t)n);
    (void)ignored;
}

void
nrtemu__log(enum nrtemu_log_level level, const char *func, const char *fmt,
            ...)
{
    char text[NRTEMU_LAST_ERROR_MAX];
    va_list ap;

    if (!nrtemu__log_enabled(level)) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    log_write(level, func, text);
}

static NRT_STATUS
fail_v(enum nrtemu_log_level level, NRT_STATUS status, const char *func,
       const char *fmt, va_list ap)
{
    int prefix = snprintf(last_error, sizeof last_error, "%s: ", func);

    if (prefix < 0 || (size_t)prefix >= sizeof last_error) {
        return status;
    }
    vsnprintf(last_error + prefix, sizeof last_error - (size_t)prefix, fmt,
              ap);
    if (nrtemu__log_enabled(level)) {
        log_write(level, func, last_error + prefix);
    }
    return status;
}

NRT_STATUS
nrtemu__fail(NRT_STATUS status, const char *func, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    status = fail_v(NRTEMU_LOG_ERROR, status, func, fmt, ap);
    va_end(ap);
    return status;
}

NRT_STATUS
nrtemu__reject(NRT_STATUS status, const char *func, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    status = fail_v(NRTEMU_LOG_WARN, status, func, fmt, ap);
    va_end(ap);
    return status;
}

NRT_STATUS
nrtemu__fail_at(enum nrtemu_log_level level, NRT_STATUS status,
                const char *func, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    status = fail_v(level, status, func, fmt, ap);
    va_end(ap);
    return status;
}

NRTEMU_EXPORT const char *
nrtemu_last_error(void)
{
    return last_error;
}

NRT_STATUS
nrtemu__unsupported(const char *func, const char *what, const char *hint)
{
    return nrtemu__reject(
        NRT_INVALID, func, "%s is not available in the nrtpy emulator%s%s",
        what, hint != NULL ? ": " : "", hint != NULL ? hint : "");
}
