/*
 * profile.c - nrt_profile_start/stop: per-op timings of executions.
 *
 * The hardware runtime writes an NTFF, whose format is not public.  The
 * emulator writes the same information as a Chrome trace-event JSON
 * (one complete "X" event per execution and per program op, one track per
 * vnc), which Perfetto and chrome://tracing open:
 *
 *   {"traceEvents":[...], "displayTimeUnit":"ns",
 *    "otherData":{"format":"nrtpy-emulator-profile","version":1,...}}
 *
 * Consecutive ops of one execution that carry the same "note" (the
 * program's free-form op field: NKI gives every op of an instruction the
 * instruction's description) are one event named by the note, whose args
 * list the ops.
 *
 * Timestamps are microseconds since nrt_profile_start().  A profile keeps
 * at most MAX_OPS ops; later ones are counted in otherData.dropped_ops.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/error.h"
#include "util/export.h"
#include "util/fork.h"
#include "device/instance.h"
#include "abi/model.h"
#include "abi/profile.h"
#include "util/strbuf.h"

#define MAX_OPS 1000000u

struct profiled_exec {
    uint64_t exec_id;
    uint32_t vnc;
    uint64_t start_ns, end_ns;
};

/* One nrt_profile_start() not stopped yet. */
struct session {
    struct session *next;
    char *filename;           /* owned */
    const nrt_model_t *model; /* watched; NULL once unloaded */
    char model_name[NRTEMU_MODEL_NAME_MAX];
    uint64_t origin_ns;          /* CLOCK_MONOTONIC at start */
    struct profiled_exec *execs; /* owned */
    size_t exec_count, exec_capacity;
    struct nrtemu_profile_op *ops; /* owned, with their strings */
    size_t op_count, op_capacity;
    uint64_t dropped_ops;
};

static struct {
    pthread_mutex_t lock;
    struct session *sessions;
} prof = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

/* Sessions alive, readable without the lock (the execute fast path). */
static atomic_int session_count;

static void
op_clear(struct nrtemu_profile_op *op)
{
    free(op->name);
    free(op->shapes);
    free(op->note);
}

/* Make room for one more element of `size` bytes in *items. */
static bool
grow(void **items, size_t *capacity, size_t count, size_t size)
{
    size_t cap;
    void *p;

    if (count < *capacity) {
        return true;
    }
    cap = *capacity ? *capacity * 2 : 16;
    p = realloc(*items, cap * size);
    if (p == NULL) {
        return false;
    }
    *items = p;
    *capacity = cap;
    return true;
}

/* ------------------------------------------------------- execution side */

void
nrtemu__profile_atfork(enum nrtemu_fork_phase phase)
{
    nrtemu__fork_leaf_lock(&prof.lock, phase);
}

bool
nrtemu__profile_watching(const nrt_model_t *model)
{
    bool watching = false;

    if (atomic_load_explicit(&session_count, memory_order_relaxed) == 0) {
        return false;
    }
    pthread_mutex_lock(&prof.lock);
    for (struct session *s = prof.sessions; s != NULL; s = s->next) {
        if (s->model == model) {
            watching = true;
            break;
        }
    }
    pthread_mutex_unlock(&prof.lock);
    return watching;
}

void
nrtemu__profile_rec_init(struct nrtemu_profile_rec *rec)
{
    memset(rec, 0, sizeof *rec);
}

void
nrtemu__profile_rec_free(struct nrtemu_profile_rec *rec)
{
    for (size_t i = 0; i < rec->count; i++) {
        op_clear(&rec->ops[i]);
    }
    free(rec->ops);
    memset(rec, 0, sizeof *rec);
}

void
nrtemu__profile_observe(void *ctx, size_t index, const char *op,
                        const char *shapes, const char *note,
                        uint64_t start_ns, uint64_t end_ns)
{
    struct nrtemu_profile_rec *rec = ctx;
    struct nrtemu_profile_op *slot;

    if (rec->count >= MAX_OPS || !grow((void **)&rec->ops, &rec->capacity,
                                       rec->count, sizeof *rec->ops)) {
        rec->truncated = true;
        return;
    }
    slot = &rec->ops[rec->count];
    slot->name = strdup(op != NULL ? op : "?");
    slot->shapes = strdup(shapes != NULL ? shapes : "");
    slot->note = note != NULL ? strdup(note) : NULL;
    if (slot->name == NULL || slot->shapes == NULL ||
        (note != NULL && slot->note == NULL)) {
        op_clear(slot);
        rec->truncated = true;
        return;
    }
    slot->index = index;
    slot->exec_id = 0;
    slot->vnc = rec->vnc;
    slot->start_ns = start_ns;
    slot->end_ns = end_ns;
    rec->count++;
}

/* Append one op to `s`: moved when `move`, else copied. */
static void
session_add_op(struct session *s, struct nrtemu_profile_op *op, bool move)
{
    struct nrtemu_profile_op copy = *op;

    if (s->op_count >= MAX_OPS || !grow((void **)&s->ops, &s->op_capacity,
                                        s->op_count, sizeof *s->ops)) {
        s->dropped_ops++;
        return;
    }
    if (move) {
        op->name = NULL;
        op->shapes = NULL;
        op->note = NULL;
    } else {
        copy.name = strdup(op->name);
        copy.shapes = strdup(op->shapes);
        copy.note = op->note != NULL ? strdup(op->note) : NULL;
        if (copy.name == NULL || copy.shapes == NULL ||
            (op->note != NULL && copy.note == NULL)) {
            op_clear(&copy);
            s->dropped_ops++;
            return;
        }
    }
    s->ops[s->op_count++] = copy;
}

void
nrtemu__profile_commit(const nrt_model_t *model, uint64_t exec_id,
                       uint32_t vnc, uint64_t start_ns, uint64_t end_ns,
                       struct nrtemu_profile_rec *rec)
{
    struct session *last = NULL;

    pthread_mutex_lock(&prof.lock);
    /* Sessions watching the model get copies of the ops, except the last,
     * which takes the originals. */
    for (struct session *s = prof.sessions; s != NULL; s = s->next) {
        if (s->model == model) {
            last = s;
        }
    }
    for (struct session *s = prof.sessions; s != NULL; s = s->next) {
        if (s->model != model) {
            continue;
        }
        if (grow((void **)&s->execs, &s->exec_capacity, s->exec_count,
                 sizeof *s->execs)) {
            s->execs[s->exec_count++] = (struct profiled_exec){
                .exec_id = exec_id,
                .vnc = vnc,
                .start_ns = start_ns,
                .end_ns = end_ns,
            };
        }
        for (size_t i = 0; i < rec->count; i++) {
            rec->ops[i].exec_id = exec_id;
            session_add_op(s, &rec->ops[i], s == last);
        }
        if (rec->truncated) {
            s->dropped_ops++;
        }
    }
    pthread_mutex_unlock(&prof.lock);
    nrtemu__profile_rec_free(rec);
}

void
nrtemu__profile_forget(const nrt_model_t *model)
{
    if (atomic_load_explicit(&session_count, memory_order_relaxed) == 0) {
        return;
    }
    pthread_mutex_lock(&prof.lock);
    for (struct session *s = prof.sessions; s != NULL; s = s->next) {
        if (s->model == model) {
            s->model = NULL;
        }
    }
    pthread_mutex_unlock(&prof.lock);
}

/* ------------------------------------------------------------ sessions */

static void
session_free(struct session *s)
{
    for (size_t i = 0; i < s->op_count; i++) {
        op_clear(&s->ops[i]);
    }
    free(s->ops);
    free(s->execs);
    free(s->filename);
    free(s);
}

/* Unlink the session of `filename`; NULL when none.  Lock held. */
static struct session *
session_take_locked(const char *filename)
{
    for (struct session **p = &prof.sessions; *p != NULL; p = &(*p)->next) {
        struct session *s = *p;
        if (strcmp(s->filename, filename) == 0) {
            *p = s->next;
            atomic_fetch_sub(&session_count, 1);
            return s;
        }
    }
    return NULL;
}

NRTEMU_EXPORT NRT_STATUS
nrt_profile_start(nrt_model_t *model, const char *filename)
{
    struct session *s, *old;
    NRT_STATUS st = nrtemu__model_check(__func__, model);

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (filename == NULL || filename[0] == '\0') {
        return nrtemu__reject(NRT_INVALID, __func__, "%s profile filename",
                              filename == NULL ? "NULL" : "empty");
    }
    s = calloc(1, sizeof *s);
    if (s == NULL || (s->filename = strdup(filename)) == NULL) {
        free(s);
        return nrtemu__fail(NRT_RESOURCE, __func__, "out of host memory");
    }
    s->model = model;
    snprintf(s->model_name, sizeof s->model_name, "%s", model->name);
    s->origin_ns = nrtemu__monotonic_ns();
    pthread_mutex_lock(&prof.lock);
    /* Starting again with a filename restarts its recording. */
    old = session_take_locked(filename);
    s->next = prof.sessions;
    prof.sessions = s;
    atomic_fetch_add(&session_count, 1);
    pthread_mutex_unlock(&prof.lock);
    if (old != NULL) {
        session_free(old);
    }
    return NRT_SUCCESS;
}

static double
micros(const struct session *s, uint64_t ns)
{
    return ns > s->origin_ns ? (double)(ns - s->origin_ns) / 1000.0 : 0.0;
}

static void
render_meta(struct nrtemu_strbuf *sb, long pid, const char *what, uint32_t tid,
            const char *name)
{
    nrtemu__strbuf_printf(sb,
                          "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%ld,"
                          "\"tid\":%" PRIu32 ",\"args\":{\"name\":",
                          what, pid, tid);
    nrtemu__strbuf_json_string(sb, name);
    nrtemu__strbuf_puts(sb, "}},\n");
}

/* Ops i, i+1, ... of one execution and core with the note of op i: one
 * event named by the note.  Returns how many ops it covers. */
static size_t
render_noted(struct nrtemu_strbuf *sb, const struct session *s, size_t i,
             long pid)
{
    const struct nrtemu_profile_op *first = &s->ops[i];
    size_t n = 1;
    uint64_t end;

    while (i + n < s->op_count) {
        const struct nrtemu_profile_op *next = &s->ops[i + n];
        if (next->note == NULL || strcmp(next->note, first->note) != 0 ||
            next->exec_id != first->exec_id || next->vnc != first->vnc ||
            next->index != first->index + n) {
            break;
        }
        n++;
    }
    end = s->ops[i + n - 1].end_ns;
    nrtemu__strbuf_puts(sb, "{\"name\":");
    nrtemu__strbuf_json_string(sb, first->note);
    nrtemu__strbuf_printf(
        sb,
        ",\"cat\":\"op\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,"
        "\"pid\":%ld,\"tid\":%" PRIu32 ",\"args\":{\"ops\":[",
        micros(s, first->start_ns),
        end > first->start_ns ? (double)(end - first->start_ns) / 1000.0 : 0.0,
        pid, first->vnc);
    for (size_t k = 0; k < n; k++) {
        nrtemu__strbuf_puts(sb, k ? ",{\"name\":" : "{\"name\":");
        nrtemu__strbuf_json_string(sb, s->ops[i + k].name);
        nrtemu__strbuf_puts(sb, ",\"shapes\":");
        nrtemu__strbuf_json_string(sb, s->ops[i + k].shapes);
        nrtemu__strbuf_puts(sb, "}");
    }
    nrtemu__strbuf_puts(sb, "],\"note\":");
    nrtemu__strbuf_json_string(sb, first->note);
    nrtemu__strbuf_printf(sb, ",\"index\":%zu,\"exec_id\":%" PRIu64 "}},\n",
                          first->index, first->exec_id);
    return n;
}

static char *
render(const struct session *s)
{
    struct nrtemu_strbuf sb = NRTEMU_STRBUF_INIT;
    bool seen[NRTEMU_MAX_VNC] = {false};
    long pid = (long)getpid();
    char label[64];

    nrtemu__strbuf_puts(&sb, "{\"traceEvents\":[\n");
    render_meta(&sb, pid, "process_name", 0, "nrtpy emulator");
    for (size_t i = 0; i < s->exec_count; i++) {
        uint32_t vnc = s->execs[i].vnc;
        if (vnc < NRTEMU_MAX_VNC && !seen[vnc]) {
            seen[vnc] = true;
            snprintf(label, sizeof label, "vnc %" PRIu32, vnc);
            render_meta(&sb, pid, "thread_name", vnc, label);
        }
    }
    for (size_t i = 0; i < s->exec_count; i++) {
        const struct profiled_exec *e = &s->execs[i];
        nrtemu__strbuf_printf(
            &sb,
            "{\"name\":\"execute\",\"cat\":\"execution\","
            "\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,"
            "\"pid\":%ld,\"tid\":%" PRIu32 ",\"args\":{\"model\":",
            micros(s, e->start_ns), (double)(e->end_ns - e->start_ns) / 1000.0,
            pid, e->vnc);
        nrtemu__strbuf_json_string(&sb, s->model_name);
        nrtemu__strbuf_printf(&sb, ",\"exec_id\":%" PRIu64 "}},\n",
                              e->exec_id);
    }
    for (size_t i = 0; i < s->op_count; i++) {
        const struct nrtemu_profile_op *op = &s->ops[i];
        uint64_t dur;
        if (op->note != NULL) {
            i += render_noted(&sb, s, i, pid) - 1;
            continue;
        }
        dur = op->end_ns > op->start_ns ? op->end_ns - op->start_ns : 0;
        nrtemu__strbuf_puts(&sb, "{\"name\":");
        nrtemu__strbuf_json_string(&sb, op->name);
        nrtemu__strbuf_printf(&sb,
                              ",\"cat\":\"op\",\"ph\":\"X\",\"ts\":%.3f,"
                              "\"dur\":%.3f,\"pid\":%ld,\"tid\":%" PRIu32
                              ",\"args\":{\"shapes\":",
                              micros(s, op->start_ns), (double)dur / 1000.0,
                              pid, op->vnc);
        nrtemu__strbuf_json_string(&sb, op->shapes);
        nrtemu__strbuf_printf(&sb,
                              ",\"index\":%zu,\"exec_id\":%" PRIu64 "}},\n",
                              op->index, op->exec_id);
    }
    /* Every event above ends with ",\n": drop the last comma. */
    if (!sb.failed && sb.len >= 2) {
        sb.len -= 2;
    }
    nrtemu__strbuf_puts(&sb, "\n],\n\"displayTimeUnit\":\"ns\",\n"
                             "\"otherData\":{\"format\":\"nrtpy-emulator-"
                             "profile\",\"version\":1,\"model\":");
    nrtemu__strbuf_json_string(&sb, s->model_name);
    nrtemu__strbuf_printf(
        &sb, ",\"executions\":%zu,\"dropped_ops\":%" PRIu64 "}}\n",
        s->exec_count, s->dropped_ops);
    return nrtemu__strbuf_take(&sb);
}

static NRT_STATUS
write_file(const char *func, const char *filename, const char *text)
{
    size_t len = strlen(text);
    FILE *f = fopen(filename, "w");
    int err;

    if (f == NULL) {
        err = errno;
        return nrtemu__fail(NRT_FAILURE, func, "cannot write profile '%s': %s",
                            filename, strerror(err));
    }
    if (fwrite(text, 1, len, f) != len) {
        err = errno;
        fclose(f);
        return nrtemu__fail(NRT_FAILURE, func, "cannot write profile '%s': %s",
                            filename, strerror(err));
    }
    if (fclose(f) != 0) {
        err = errno;
        return nrtemu__fail(NRT_FAILURE, func, "cannot write profile '%s': %s",
                            filename, strerror(err));
    }
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_profile_stop(const char *filename)
{
    struct session *s;
    char *text;
    NRT_STATUS st;

    if (filename == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL profile filename");
    }
    pthread_mutex_lock(&prof.lock);
    s = session_take_locked(filename);
    pthread_mutex_unlock(&prof.lock);
    if (s == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "no profile was started for '%s'", filename);
    }
    if (s->exec_count == 0) {
        /* As on hardware: a profile needs a successful execution. */
        st = nrtemu__reject(NRT_FAILURE, __func__,
                            "no successful execution of model '%s' was "
                            "profiled: nothing written to '%s'",
                            s->model_name, filename);
        session_free(s);
        return st;
    }
    text = render(s);
    session_free(s);
    if (text == NULL) {
        return nrtemu__fail(NRT_RESOURCE, __func__, "out of host memory");
    }
    st = write_file(__func__, filename, text);
    free(text);
    return st;
}
