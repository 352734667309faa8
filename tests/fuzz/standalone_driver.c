/*
 * standalone_driver.c - runs a libFuzzer target without libFuzzer.
 *
 *   standalone_driver SECONDS PATH...
 *
 * Where clang (and so libFuzzer) is missing, this main() built with gcc
 * and the sanitizers still exercises the target: every file of each PATH
 * (a file or a directory) once, then deterministic random mutations of
 * them until SECONDS have passed.  Mutations are byte-level (flips,
 * interesting values, inserts, deletes, splices, truncation): a third of
 * them edit the contents of one tar member and rebuild the archive around
 * it (neff_mutate.h), the others edit the whole image and half of those
 * then repair the NEFF data_size and the tar header checksums, so that
 * mutated inputs get past those checks and reach the code behind.
 *
 * A crash (a sanitizer report, a fatal signal or a hang past 10 s) ends
 * the run with a non-zero status after the input is saved as crash-<n> in
 * $FUZZ_ARTIFACTS (default: the current directory).
 *
 * Built with or without a sanitizer: `make test-c` builds it plain and
 * replays the corpus with a few seconds of mutations (tests/fuzz/
 * meson.build), so that the fuzz target always links against the
 * library's own list of sources; tests/fuzz/run.sh builds it with ASan
 * and UBSan.
 */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The sanitizers' runtime, when linked in, calls back before it aborts;
 * without one the symbol is absent and fatal signals are caught instead. */
void __sanitizer_set_death_callback(void (*callback)(void))
    __attribute__((weak));

#include "neff_mutate.h"

#define INPUT_MAX_BYTES ((size_t)1 << 20)
#define PER_INPUT_TIMEOUT 10

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct input {
    unsigned char *data;
    size_t size;
};

static struct input *corpus;
static size_t corpus_len, corpus_cap;

/* The input being run, saved by the death callback. */
static const unsigned char *current;
static size_t current_size;
static unsigned long long execs;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t
rng(void)
{
    /* xorshift64*: deterministic, so a failure reproduces. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static size_t
below(size_t n)
{
    return n == 0 ? 0 : (size_t)(rng() % n);
}

static void
save_current(void)
{
    const char *dir = getenv("FUZZ_ARTIFACTS");
    char path[4096];
    FILE *f;

    snprintf(path, sizeof path, "%s/crash-%llu", dir != NULL ? dir : ".",
             execs);
    f = fopen(path, "wb");
    if (f != NULL) {
        fwrite(current, 1, current_size, f);
        fclose(f);
        fprintf(stderr, "standalone_driver: input saved to %s\n", path);
    }
}

static void
on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "standalone_driver: input ran past 10 s\n";
    if (write(2, msg, sizeof msg - 1) < 0) {
        /* nothing more to do */
    }
    save_current();
    _exit(3);
}

static void
on_fatal(int sig)
{
    static const char msg[] = "standalone_driver: fatal signal\n";
    if (write(2, msg, sizeof msg - 1) < 0) {
        /* nothing more to do */
    }
    save_current();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void
run(const unsigned char *data, size_t size)
{
    current = data;
    current_size = size;
    alarm(PER_INPUT_TIMEOUT);
    LLVMFuzzerTestOneInput(data, size);
    alarm(0);
    execs++;
}

static void
add_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *data;
    long n;

    if (f == NULL) {
        return;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
        (size_t)n > INPUT_MAX_BYTES || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return;
    }
    data = malloc((size_t)n + 1);
    if (data == NULL || fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        fclose(f);
        return;
    }
    fclose(f);
    if (corpus_len == corpus_cap) {
        corpus_cap = corpus_cap == 0 ? 64 : corpus_cap * 2;
        corpus = realloc(corpus, corpus_cap * sizeof *corpus);
        if (corpus == NULL) {
            abort();
        }
    }
    corpus[corpus_len].data = data;
    corpus[corpus_len].size = (size_t)n;
    corpus_len++;
}

static void
add_path(const char *path)
{
    struct stat st;
    DIR *dir;
    struct dirent *e;

    if (stat(path, &st) != 0) {
        fprintf(stderr, "standalone_driver: cannot read %s\n", path);
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        add_file(path);
        return;
    }
    dir = opendir(path);
    if (dir == NULL) {
        return;
    }
    while ((e = readdir(dir)) != NULL) {
        char child[4096];
        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        add_file(child);
    }
    closedir(dir);
}

static void
put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

/* Make a mutated image consistent where the reader would stop early. */
static void
repair(unsigned char *d, size_t n)
{
    if (n >= 1024) {
        put_le64(d + 0x10, n - 1024);
    }
    for (size_t at = 1024; n >= 512 && at <= n - 512; at += 512) {
        unsigned char *h = d + at;
        unsigned sum = 0;
        if (memcmp(h + 257, "ustar", 5) != 0) {
            continue;
        }
        memset(h + 148, ' ', 8);
        for (int i = 0; i < 512; i++) {
            sum += h[i];
        }
        snprintf((char *)h + 148, 8, "%06o", sum & 0777777);
        h[155] = ' ';
    }
}

/* Up to 8 random edits of buf (capacity cap); returns the size. */
static size_t
edit(unsigned char *buf, size_t n, size_t cap)
{
    static const unsigned char interesting[] = {
        0, 1, 0x7f, 0x80, 0xff, '0', '7', ' ', '"', '[', '{', '\\'};
    int edits = 1 + (int)below(8);

    for (int e = 0; e < edits; e++) {
        size_t at = below(n), len;
        switch (below(8)) {
        case 0: /* flip a bit */
            if (n > 0) {
                buf[at] ^= (unsigned char)(1u << below(8));
            }
            break;
        case 1: /* an interesting byte */
            if (n > 0) {
                buf[at] = interesting[below(sizeof interesting)];
            }
            break;
        case 2: /* a random byte */
            if (n > 0) {
                buf[at] = (unsigned char)rng();
            }
            break;
        case 3: /* insert bytes */
            len = 1 + below(64);
            if (n + len <= cap) {
                memmove(buf + at + len, buf + at, n - at);
                for (size_t i = 0; i < len; i++) {
                    buf[at + i] = (unsigned char)rng();
                }
                n += len;
            }
            break;
        case 4: /* delete bytes */
            len = below(n - at + 1);
            if (len > 64) {
                len = 64;
            }
            memmove(buf + at, buf + at + len, n - at - len);
            n -= len;
            break;
        case 5: /* copy a chunk over another place */
            if (n > 0) {
                size_t from = below(n);
                len = below(n - (at > from ? at : from) + 1);
                memmove(buf + at, buf + from, len);
            }
            break;
        case 6: /* truncate */
            n = at;
            break;
        default: /* splice in a piece of another corpus entry */
        {
            const struct input *o = &corpus[below(corpus_len)];
            size_t from = below(o->size);
            len = below(o->size - from + 1);
            if (len > 4096) {
                len = 4096;
            }
            if (at + len <= cap) {
                memcpy(buf + at, o->data + from, len);
                if (at + len > n) {
                    n = at + len;
                }
            }
            break;
        }
        }
    }
    return n;
}

/*
 * A third of the time, edit the contents of one tar member and rebuild
 * the archive around it (neff_mutate.h); else edit the whole image, and
 * half of those times repair the sizes and checksums after.
 */
static size_t
mutate(unsigned char *buf, size_t n)
{
    if (below(3) == 0) {
        size_t m = neff_mutate_member(buf, n, INPUT_MAX_BYTES, rng(), edit);
        if (m != 0) {
            return m;
        }
    }
    n = edit(buf, n, INPUT_MAX_BYTES);
    if (below(2) == 0) {
        repair(buf, n);
    }
    return n;
}

int
main(int argc, char **argv)
{
    double seconds;
    struct timespec start, now;
    unsigned char *buf;

    if (argc < 3) {
        fprintf(stderr, "usage: %s SECONDS PATH...\n", argv[0]);
        return 2;
    }
    seconds = atof(argv[1]);
    for (int i = 2; i < argc; i++) {
        add_path(argv[i]);
    }
    if (corpus_len == 0) {
        fprintf(stderr, "standalone_driver: empty corpus\n");
        return 2;
    }
    if (__sanitizer_set_death_callback != NULL) {
        __sanitizer_set_death_callback(save_current);
    } else {
        signal(SIGSEGV, on_fatal);
        signal(SIGBUS, on_fatal);
        signal(SIGFPE, on_fatal);
        signal(SIGILL, on_fatal);
        signal(SIGABRT, on_fatal);
    }
    signal(SIGALRM, on_alarm);
    buf = malloc(INPUT_MAX_BYTES);
    if (buf == NULL) {
        return 2;
    }

    clock_gettime(CLOCK_MONOTONIC, &start);
    for (size_t i = 0; i < corpus_len; i++) {
        run(corpus[i].data, corpus[i].size);
    }
    for (;;) {
        const struct input *in = &corpus[below(corpus_len)];
        size_t n;

        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)(now.tv_sec - start.tv_sec) +
                (double)(now.tv_nsec - start.tv_nsec) / 1e9 >=
            seconds) {
            break;
        }
        memcpy(buf, in->data, in->size);
        n = mutate(buf, in->size);
        run(buf, n);
    }
    printf("standalone_driver: %llu execs over %zu corpus files in %.0f s, "
           "no crash\n",
           execs, corpus_len, seconds);
    free(buf);
    for (size_t i = 0; i < corpus_len; i++) {
        free(corpus[i].data);
    }
    free(corpus);
    return 0;
}
