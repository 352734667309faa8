/*
 * strbuf.h - a growable text buffer, and JSON string quoting (internal).
 *
 * The writers of JSON output (sys trace events, profiles) append to a
 * buffer and check for failure once at the end: after an allocation fails
 * the buffer ignores further appends and reports `failed`.
 */
#ifndef NRTEMU_STRBUF_H
#define NRTEMU_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

struct nrtemu_strbuf {
    char *data; /* owned; NUL-terminated when len > 0 */
    size_t len; /* bytes before the NUL */
    size_t cap;
    bool failed; /* an append ran out of memory */
};

#define NRTEMU_STRBUF_INIT \
    {                      \
        NULL, 0, 0, false  \
    }

void nrtemu__strbuf_append(struct nrtemu_strbuf *sb, const char *text,
                           size_t len);
void nrtemu__strbuf_puts(struct nrtemu_strbuf *sb, const char *text);
void nrtemu__strbuf_printf(struct nrtemu_strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Append `text` as a quoted JSON string, escaping what JSON requires. */
void nrtemu__strbuf_json_string(struct nrtemu_strbuf *sb, const char *text);

/*
 * The text, NUL-terminated even when empty; NULL when an append failed.
 * Ownership: the caller's (free()); the buffer is left empty either way.
 */
char *nrtemu__strbuf_take(struct nrtemu_strbuf *sb);

void nrtemu__strbuf_free(struct nrtemu_strbuf *sb);

#endif /* NRTEMU_STRBUF_H */
