/*
 * strbuf.c - growable text buffer.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

/* Room for `extra` more bytes plus the NUL. */
static bool
reserve(struct nrtemu_strbuf *sb, size_t extra)
{
    size_t need, cap;
    char *data;

    if (sb->failed) {
        return false;
    }
    if (extra > SIZE_MAX - sb->len - 1) {
        sb->failed = true;
        return false;
    }
    need = sb->len + extra + 1;
    if (need <= sb->cap) {
        return true;
    }
    cap = sb->cap ? sb->cap : 256;
    while (cap < need) {
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    }
    data = realloc(sb->data, cap);
    if (data == NULL) {
        sb->failed = true;
        return false;
    }
    sb->data = data;
    sb->cap = cap;
    return true;
}

void
nrtemu__strbuf_append(struct nrtemu_strbuf *sb, const char *text, size_t len)
{
    if (!reserve(sb, len)) {
        return;
    }
    memcpy(sb->data + sb->len, text, len);
    sb->len += len;
    sb->data[sb->len] = '\0';
}

void
nrtemu__strbuf_puts(struct nrtemu_strbuf *sb, const char *text)
{
    nrtemu__strbuf_append(sb, text, strlen(text));
}

void
nrtemu__strbuf_printf(struct nrtemu_strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    int n;

    /* Most appends are short: try the free space first. */
    if (!reserve(sb, 64)) {
        return;
    }
    va_start(ap, fmt);
    n = vsnprintf(sb->data + sb->len, sb->cap - sb->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
        sb->failed = true;
        return;
    }
    if ((size_t)n >= sb->cap - sb->len) {
        if (!reserve(sb, (size_t)n)) {
            return;
        }
        va_start(ap, fmt);
        vsnprintf(sb->data + sb->len, sb->cap - sb->len, fmt, ap);
        va_end(ap);
    }
    sb->len += (size_t)n;
}

/*
 * Length of the well-formed UTF-8 sequence at `p`, 0 when it is not one
 * (overlong forms, surrogates and values past U+10FFFF included).
 */
static size_t
utf8_length(const unsigned char *p)
{
    uint32_t cp;
    size_t n;

    if (p[0] < 0xc2 || p[0] > 0xf4) {
        return 0;
    }
    n = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : 2;
    cp = p[0] & (0x7fu >> n);
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return 0;
        }
        cp = cp << 6 | (p[i] & 0x3fu);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) {
        return 0;
    }
    return n;
}

void
nrtemu__strbuf_json_string(struct nrtemu_strbuf *sb, const char *text)
{
    const unsigned char *p = (const unsigned char *)text;
    const unsigned char *run = p;

    nrtemu__strbuf_append(sb, "\"", 1);
    while (*p != '\0') {
        char esc[8];
        size_t n;

        if (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\') {
            p++;
            continue;
        }
        if (*p >= 0x80 && (n = utf8_length(p)) > 0) {
            p += n;
            continue;
        }
        nrtemu__strbuf_append(sb, (const char *)run, (size_t)(p - run));
        switch (*p) {
        case '"':
            nrtemu__strbuf_append(sb, "\\\"", 2);
            break;
        case '\\':
            nrtemu__strbuf_append(sb, "\\\\", 2);
            break;
        case '\n':
            nrtemu__strbuf_append(sb, "\\n", 2);
            break;
        case '\t':
            nrtemu__strbuf_append(sb, "\\t", 2);
            break;
        default:
            if (*p >= 0x80) {
                /* Not UTF-8 (names come from files): a replacement. */
                nrtemu__strbuf_append(sb, "\\ufffd", 6);
                break;
            }
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            nrtemu__strbuf_append(sb, esc, 6);
            break;
        }
        p++;
        run = p;
    }
    nrtemu__strbuf_append(sb, (const char *)run, (size_t)(p - run));
    nrtemu__strbuf_append(sb, "\"", 1);
}

char *
nrtemu__strbuf_take(struct nrtemu_strbuf *sb)
{
    char *text = NULL;

    if (!sb->failed && reserve(sb, 0)) {
        text = sb->data;
        text[sb->len] = '\0';
        sb->data = NULL;
    }
    nrtemu__strbuf_free(sb);
    return text;
}

void
nrtemu__strbuf_free(struct nrtemu_strbuf *sb)
{
    free(sb->data);
    sb->data = NULL;
    sb->len = 0;
    sb->cap = 0;
    sb->failed = false;
}
