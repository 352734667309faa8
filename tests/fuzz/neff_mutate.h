/*
 * neff_mutate.h - a structure-aware mutation for the NEFF fuzz target.
 *
 * Byte-level mutations of a NEFF mostly break its container: an insertion
 * into a tar member shifts every header after it, so few mutated programs
 * get past the reader.  neff_mutate_member() instead edits the contents of
 * one member of a raw (uncompressed) tar payload with a caller's byte
 * mutator, then rebuilds the archive around it: the member's size, the
 * header checksums and the NEFF data_size are rewritten, so the edit
 * reaches the JSON and .npy parsers and the program validator.  Members
 * named program.json are picked half of the time.
 *
 * Used by the libFuzzer custom mutator (fuzz_neff.c) and by the standalone
 * driver; header-only so that each build takes what it needs.
 */
#ifndef NEFF_MUTATE_H
#define NEFF_MUTATE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NEFF_MUTATE_MAX_MEMBERS 256
/* Bound on the size of one edited member. */
#define NEFF_MUTATE_MAX_MEMBER ((size_t)256 << 10)

/* A byte mutator: edits data[0, size) in place within max_size bytes and
 * returns the new size. */
typedef size_t (*neff_byte_mutator)(uint8_t *data, size_t size,
                                    size_t max_size);

struct neff_member {
    size_t header; /* offset of its 512-byte header */
    size_t size;   /* bytes of data after the header */
};

static inline uint64_t
neff_mutate_rand(uint64_t *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 0x2545f4914f6cdd1dull;
}

/* The tar member size field (octal); SIZE_MAX when not octal. */
static inline size_t
neff_mutate_octal(const uint8_t *p, size_t len)
{
    size_t v = 0;
    size_t i = 0;

    while (i < len && p[i] == ' ') {
        i++;
    }
    for (; i < len && p[i] >= '0' && p[i] <= '7'; i++) {
        if (v > (SIZE_MAX >> 3)) {
            return SIZE_MAX;
        }
        v = v * 8 + (size_t)(p[i] - '0');
    }
    return v;
}

static inline void
neff_mutate_checksum(uint8_t *h)
{
    unsigned sum = 0;
    char text[8];

    memset(h + 148, ' ', 8);
    for (int i = 0; i < 512; i++) {
        sum += h[i];
    }
    snprintf(text, sizeof text, "%06o", sum & 0777777);
    memcpy(h + 148, text, 7); /* six digits and a NUL, then the space */
}

static inline void
neff_mutate_put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

/*
 * Token-level edits of a JSON document that keep it valid JSON: replace
 * one number with an interesting one (zero, one, limits of 32 and 64
 * bits, 2^55, huge floats...), or one string with another string of the
 * document or a word of programs (op and dtype names, kinds).  They reach
 * the shape and attribute arithmetic that byte edits seldom get to
 * without breaking the syntax first.
 */
static const char *const neff_mutate_numbers[] = {
    "0",
    "1",
    "2",
    "3",
    "-1",
    "-2",
    "7",
    "8",
    "9",
    "64",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "1099511627776",
    "36028797018963968",
    "72057594037927936",
    "4611686018427387904",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "18446744073709551616",
    "1.5",
    "-0.0",
    "1e308",
    "1e-320",
    "[]",
    "null",
    "true",
};

static const char *const neff_mutate_words[] = {
    "\"input\"",        "\"output\"",        "\"const\"",       "\"temp\"",
    "\"bool\"",         "\"int8\"",          "\"uint8\"",       "\"int64\"",
    "\"uint64\"",       "\"float16\"",       "\"float32\"",     "\"float64\"",
    "\"bfloat16\"",     "\"float8_e4m3fn\"", "\"float8_e5m2\"", "\"matmul\"",
    "\"take\"",         "\"slice\"",         "\"concatenate\"", "\"reshape\"",
    "\"transpose\"",    "\"iota\"",          "\"full\"",        "\"sum\"",
    "\"argmax\"",       "\"softmax\"",       "\"where\"",       "\"cast\"",
    "\"broadcast_to\"", "\"nan\"",           "\"-inf\"",
};

/* A token of a JSON text: offset and length. */
struct neff_token {
    size_t at, len;
};

#define NEFF_MUTATE_MAX_TOKENS 4096

/* The string (quotes included) and number tokens of text[0, n). */
static inline void
neff_mutate_tokens(const uint8_t *text, size_t n, struct neff_token *strings,
                   size_t *ns, struct neff_token *numbers, size_t *nn)
{
    *ns = 0;
    *nn = 0;
    for (size_t i = 0; i < n;) {
        if (text[i] == '"') {
            size_t j = i + 1;
            while (j < n && text[j] != '"') {
                j += text[j] == '\\' ? 2 : 1;
            }
            if (j >= n) {
                return;
            }
            if (*ns < NEFF_MUTATE_MAX_TOKENS) {
                strings[(*ns)++] = (struct neff_token){i, j + 1 - i};
            }
            i = j + 1;
        } else if (text[i] == '-' || (text[i] >= '0' && text[i] <= '9')) {
            size_t j = i + 1;
            while (j < n &&
                   ((text[j] >= '0' && text[j] <= '9') || text[j] == '.' ||
                    text[j] == 'e' || text[j] == 'E' || text[j] == '+' ||
                    text[j] == '-')) {
                j++;
            }
            if (*nn < NEFF_MUTATE_MAX_TOKENS) {
                numbers[(*nn)++] = (struct neff_token){i, j - i};
            }
            i = j;
        } else {
            i++;
        }
    }
}

/* Replace text[at, at + len) with `with` (wlen bytes); the new size, or
 * n when it would not fit max_size. */
static inline size_t
neff_mutate_splice(uint8_t *text, size_t n, size_t max_size, size_t at,
                   size_t len, const uint8_t *with, size_t wlen)
{
    if (n - len + wlen > max_size) {
        return n;
    }
    memmove(text + at + wlen, text + at + len, n - at - len);
    memcpy(text + at, with, wlen);
    return n - len + wlen;
}

static inline size_t
neff_mutate_json(uint8_t *text, size_t n, size_t max_size, uint64_t *state)
{
    static struct neff_token strings[NEFF_MUTATE_MAX_TOKENS];
    static struct neff_token numbers[NEFF_MUTATE_MAX_TOKENS];
    size_t ns, nn;
    uint8_t word[256];

    neff_mutate_tokens(text, n, strings, &ns, numbers, &nn);
    if (nn > 0 && (ns == 0 || (neff_mutate_rand(state) & 1))) {
        const struct neff_token *t = &numbers[neff_mutate_rand(state) % nn];
        const char *with =
            neff_mutate_numbers[neff_mutate_rand(state) %
                                (sizeof neff_mutate_numbers /
                                 sizeof neff_mutate_numbers[0])];
        return neff_mutate_splice(text, n, max_size, t->at, t->len,
                                  (const uint8_t *)with, strlen(with));
    }
    if (ns > 0) {
        const struct neff_token *t = &strings[neff_mutate_rand(state) % ns];
        size_t wlen;
        if (neff_mutate_rand(state) & 1) {
            const struct neff_token *o =
                &strings[neff_mutate_rand(state) % ns];
            wlen = o->len < sizeof word ? o->len : 0;
            memcpy(word, text + o->at, wlen);
        } else {
            const char *w = neff_mutate_words[neff_mutate_rand(state) %
                                              (sizeof neff_mutate_words /
                                               sizeof neff_mutate_words[0])];
            wlen = strlen(w);
            memcpy(word, w, wlen);
        }
        if (wlen > 0) {
            return neff_mutate_splice(text, n, max_size, t->at, t->len, word,
                                      wlen);
        }
    }
    return n;
}

/*
 * Edit one member of the NEFF in data[0, size) (capacity max_size) with
 * `mutate` (a .json member: half of the time with neff_mutate_json()
 * instead, 1 to 4 edits).  Returns the new size, or 0 (data untouched) when
 * the input has no raw tar payload or the result would not fit.
 */
static inline size_t
neff_mutate_member(uint8_t *data, size_t size, size_t max_size, uint64_t seed,
                   neff_byte_mutator mutate)
{
    struct neff_member m[NEFF_MUTATE_MAX_MEMBERS];
    size_t count = 0, at = 1024, pick, room, new_size, total;
    uint64_t state = seed | 1;
    uint8_t *member, *out, *p;

    if (size < 1024 + 512 || (data[1024] == 0x1f && data[1025] == 0x8b)) {
        return 0;
    }
    while (at + 512 <= size && count < NEFF_MUTATE_MAX_MEMBERS) {
        const uint8_t *h = data + at;
        size_t n;
        if (h[0] == 0) {
            break; /* end of archive */
        }
        n = neff_mutate_octal(h + 124, 12);
        if (n > size - at - 512) {
            break;
        }
        m[count].header = at;
        m[count].size = n;
        count++;
        at += 512 + (n + 511) / 512 * 512;
        if (at > size) {
            break;
        }
    }
    if (count == 0) {
        return 0;
    }
    pick = (size_t)(neff_mutate_rand(&state) % count);
    if (neff_mutate_rand(&state) & 1) {
        for (size_t i = 0; i < count; i++) {
            const char *name = (const char *)data + m[i].header;
            size_t len = strnlen(name, 100);
            if (len >= 12 &&
                memcmp(name + len - 12, "program.json", 12) == 0) {
                pick = i;
                break;
            }
        }
    }
    room = m[pick].size + 4096;
    if (room > NEFF_MUTATE_MAX_MEMBER) {
        room = NEFF_MUTATE_MAX_MEMBER;
    }
    if (m[pick].size > room) {
        return 0;
    }
    member = malloc(room);
    out = malloc(max_size);
    if (member == NULL || out == NULL) {
        free(member);
        free(out);
        return 0;
    }
    memcpy(member, data + m[pick].header + 512, m[pick].size);
    {
        const char *name = (const char *)data + m[pick].header;
        size_t len = strnlen(name, 100);
        if (len >= 5 && memcmp(name + len - 5, ".json", 5) == 0 &&
            (neff_mutate_rand(&state) & 1)) {
            int edits = 1 + (int)(neff_mutate_rand(&state) % 4);
            new_size = m[pick].size;
            for (int e = 0; e < edits; e++) {
                new_size = neff_mutate_json(member, new_size, room, &state);
            }
        } else {
            new_size = mutate(member, m[pick].size, room);
        }
    }

    /* Rebuild: NEFF header, the members, two zero blocks. */
    total = 1024;
    for (size_t i = 0; i < count; i++) {
        size_t n = i == pick ? new_size : m[i].size;
        total += 512 + (n + 511) / 512 * 512;
    }
    total += 1024;
    if (total > max_size) {
        free(member);
        free(out);
        return 0;
    }
    memcpy(out, data, 1024);
    p = out + 1024;
    for (size_t i = 0; i < count; i++) {
        size_t n = i == pick ? new_size : m[i].size;
        const uint8_t *src = i == pick ? member : data + m[i].header + 512;
        memcpy(p, data + m[i].header, 512);
        if (i == pick) {
            char text[12];
            snprintf(text, sizeof text, "%011llo", (unsigned long long)n);
            memcpy(p + 124, text, 11);
            p[135] = 0;
            neff_mutate_checksum(p);
        }
        memcpy(p + 512, src, n);
        memset(p + 512 + n, 0, (n + 511) / 512 * 512 - n);
        p += 512 + (n + 511) / 512 * 512;
    }
    memset(p, 0, 1024);
    neff_mutate_put_le64(out + 0x10, total - 1024);
    memcpy(data, out, total);
    free(member);
    free(out);
    return total;
}

#endif /* NEFF_MUTATE_H */
