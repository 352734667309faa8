/*
 * env_parse.c - parsers of the emulator's environment values.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util/env_parse.h"
#include "util/error.h"

static bool
is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
           c == '\v';
}

static const char *
skip_blanks(const char *p)
{
    while (is_blank(*p)) {
        p++;
    }
    return p;
}

bool
nrtemu__env_blank(const char *text)
{
    return *skip_blanks(text) == '\0';
}

/*
 * Digits only: strtoul would accept a sign, a base prefix and leading
 * blanks of its own, none of which belong in these values.
 */
static bool
parse_u64(const char **pp, uint64_t max, uint64_t *out)
{
    const char *p = *pp;
    uint64_t value = 0;

    if (*p < '0' || *p > '9') {
        return false;
    }
    for (; *p >= '0' && *p <= '9'; p++) {
        uint64_t digit = (uint64_t)(*p - '0');
        if (value > (max - digit) / 10) {
            return false;
        }
        value = value * 10 + digit;
    }
    *pp = p;
    *out = value;
    return true;
}

NRT_STATUS
nrtemu__parse_visible_cores(const char *text, uint32_t total, uint32_t *first,
                            uint32_t *count, char *err, size_t err_len)
{
    const char *p = text;
    uint64_t range_first = 0, range_last = 0;
    bool have_range = false;

    for (;;) {
        uint64_t lo, hi;

        p = skip_blanks(p);
        if (!parse_u64(&p, UINT32_MAX, &lo)) {
            snprintf(err, err_len,
                     "expected a core index at offset %zu (format: 0, 0-3, "
                     "3,4,5 or 3-5,6)",
                     (size_t)(p - text));
            return NRT_INVALID;
        }
        p = skip_blanks(p);
        hi = lo;
        if (*p == '-') {
            p = skip_blanks(p + 1);
            if (!parse_u64(&p, UINT32_MAX, &hi)) {
                snprintf(err, err_len,
                         "expected the end of a range at offset %zu",
                         (size_t)(p - text));
                return NRT_INVALID;
            }
            p = skip_blanks(p);
        }
        if (hi < lo) {
            snprintf(err, err_len, "range %llu-%llu is decreasing",
                     (unsigned long long)lo, (unsigned long long)hi);
            return NRT_INVALID;
        }
        if (have_range && lo != range_last + 1) {
            snprintf(err, err_len,
                     "cores must be increasing and contiguous, but %llu "
                     "follows %llu",
                     (unsigned long long)lo, (unsigned long long)range_last);
            return NRT_INVALID;
        }
        if (hi >= total) {
            snprintf(err, err_len,
                     "core %llu does not exist: the instance has %u "
                     "(0-%u)",
                     (unsigned long long)hi, total, total > 0 ? total - 1 : 0);
            return NRT_INVALID;
        }
        if (!have_range) {
            range_first = lo;
            have_range = true;
        }
        range_last = hi;
        if (*p == '\0') {
            break;
        }
        if (*p != ',') {
            snprintf(err, err_len, "unexpected '%c' at offset %zu", *p,
                     (size_t)(p - text));
            return NRT_INVALID;
        }
        p++;
    }
    *first = (uint32_t)range_first;
    *count = (uint32_t)(range_last - range_first + 1);
    return NRT_SUCCESS;
}

NRT_STATUS
nrtemu__parse_num_cores(const char *text, uint32_t total, uint32_t *count,
                        char *err, size_t err_len)
{
    const char *p = skip_blanks(text);
    uint64_t n;

    if (!parse_u64(&p, UINT32_MAX, &n) || *skip_blanks(p) != '\0') {
        snprintf(err, err_len, "not a core count (a decimal integer >= 0)");
        return NRT_INVALID;
    }
    if (n > total) {
        snprintf(err, err_len, "%llu cores requested, the instance has %u",
                 (unsigned long long)n, total);
        return NRT_RESOURCE;
    }
    *count = n == 0 ? total : (uint32_t)n;
    return NRT_SUCCESS;
}

NRT_STATUS
nrtemu__parse_byte_size(const char *text, uint64_t *bytes, char *err,
                        size_t err_len)
{
    static const struct {
        const char *suffix;
        unsigned shift;
    } units[] = {
        {"", 0},     {"B", 0},   {"K", 10},   {"KB", 10},  {"KiB", 10},
        {"M", 20},   {"MB", 20}, {"MiB", 20}, {"G", 30},   {"GB", 30},
        {"GiB", 30}, {"T", 40},  {"TB", 40},  {"TiB", 40},
    };
    const char *p = skip_blanks(text);
    const char *end;
    uint64_t value;
    size_t len;

    if (!parse_u64(&p, UINT64_MAX, &value)) {
        snprintf(err, err_len,
                 "not a byte count (examples: 1048576, 64K, 512MiB, 2G)");
        return NRT_INVALID;
    }
    p = skip_blanks(p);
    for (end = p; *end != '\0' && !is_blank(*end); end++) {
    }
    len = (size_t)(end - p);
    if (*skip_blanks(end) != '\0') {
        snprintf(err, err_len, "unexpected text after the unit");
        return NRT_INVALID;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strlen(units[i].suffix) == len &&
            strncasecmp(p, units[i].suffix, len) == 0) {
            if (value > (UINT64_MAX >> units[i].shift)) {
                snprintf(err, err_len, "too large");
                return NRT_INVALID;
            }
            *bytes = value << units[i].shift;
            return NRT_SUCCESS;
        }
    }
    snprintf(err, err_len, "unknown unit '%.*s' (use K, M, G or T)",
             (int)(len > 16 ? 16 : len), p);
    return NRT_INVALID;
}

NRT_STATUS
nrtemu__parse_lnc(const char *text, uint32_t *lnc, char *err, size_t err_len)
{
    const char *p = skip_blanks(text);
    uint64_t value;

    if (!parse_u64(&p, UINT32_MAX, &value) || *skip_blanks(p) != '\0' ||
        (value != 1 && value != 2)) {
        snprintf(err, err_len, "the logical core size must be 1 or 2");
        return NRT_INVALID;
    }
    *lnc = (uint32_t)value;
    return NRT_SUCCESS;
}

int
nrtemu__parse_log_level(const char *text)
{
    static const struct {
        const char *name;
        int level;
    } levels[] = {
        {"QUIET", NRTEMU_LOG_QUIET},  {"ERROR", NRTEMU_LOG_ERROR},
        {"WARNING", NRTEMU_LOG_WARN}, {"WARN", NRTEMU_LOG_WARN},
        {"INFO", NRTEMU_LOG_INFO},    {"DEBUG", NRTEMU_LOG_DEBUG},
        {"TRACE", NRTEMU_LOG_TRACE},
    };
    const char *p = skip_blanks(text);
    size_t len = 0;

    while (p[len] != '\0' && !is_blank(p[len])) {
        len++;
    }
    if (*skip_blanks(p + len) != '\0') {
        return -1;
    }
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        if (strlen(levels[i].name) == len &&
            strncasecmp(p, levels[i].name, len) == 0) {
            return levels[i].level;
        }
    }
    return -1;
}

bool
nrtemu__namespace_valid(const char *name)
{
    size_t len = strlen(name);
    bool only_dots = true;

    if (len == 0 || len > 64) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
        if (!ok) {
            return false;
        }
        only_dots = only_dots && c == '.';
    }
    /* "." and ".." pass the character test but name other directories. */
    return !only_dots;
}

bool
nrtemu__parse_bool(const char *text, bool *out)
{
    size_t start = 0, end = strlen(text);
    static const struct {
        const char *word;
        bool value;
    } words[] = {{"1", true}, {"0", false}, {"true", true}, {"false", false}};

    while (start < end && isspace((unsigned char)text[start])) {
        start++;
    }
    while (end > start && isspace((unsigned char)text[end - 1])) {
        end--;
    }
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        if (strlen(words[i].word) == end - start &&
            strncasecmp(text + start, words[i].word, end - start) == 0) {
            *out = words[i].value;
            return true;
        }
    }
    return false;
}
