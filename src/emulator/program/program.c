/*
 * program.c - reading and validating an emulator program at load.
 *
 * docs/neff-emulator-format.md §3.  Everything a run could trip over is
 * checked here, once: buffers against the NEFF's I/O table and constants,
 * operand names, what may be written, that every temporary is written
 * before it is read and every output is written, and (program_validate.c)
 * the shape rules of each op.  The run then only binds memory and calls
 * kernels.  Errors are NRT_INVALID with "<sgNN/program.json>: ..." and,
 * for an op, "op N (name): ..." in the detail.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "program/program_internal.h"
#include "util/strbuf.h"

#define PROGRAM_FORMAT "nrtpy-emulator-program"
#define PROGRAM_VERSION 1

static NRT_STATUS invalid(const char *func, const struct nrtemu_program *p,
                          const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static NRT_STATUS
invalid(const char *func, const struct nrtemu_program *p, const char *fmt, ...)
{
    char detail[NRTEMU_LAST_ERROR_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return nrtemu__reject(NRT_INVALID, func, "%s: %s", p->path, detail);
}

NRT_STATUS
nrtemu__op_invalid(const struct op_ctx *ctx, const char *fmt, ...)
{
    char detail[NRTEMU_LAST_ERROR_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return nrtemu__reject(NRT_INVALID, ctx->func, "%s: %sop %zu (%s): %s",
                          ctx->program->path, ctx->op->where, ctx->op->index,
                          nrtemu__op_name(ctx->op->op), detail);
}

static NRT_STATUS
out_of_memory(const char *func, const struct nrtemu_program *p,
              const char *what)
{
    return nrtemu__fail(NRT_RESOURCE, func, "%s: out of host memory for %s",
                        p->path, what);
}

void
nrtemu__describe_buffer(const struct buffer *b, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "%s[", nrtemu__dtype_name(b->dtype));

    for (uint32_t d = 0; d < b->ndim && n < len; d++) {
        n += (size_t)snprintf(buf + n, len - n, "%s%llu", d ? "," : "",
                              (unsigned long long)b->shape[d]);
    }
    if (n < len) {
        snprintf(buf + n, len - n, "]");
    }
}

static const char *
kind_name(enum buffer_kind kind)
{
    static const char *const names[] = {"input", "output", "const", "temp"};
    return names[kind];
}

/* A JSON shape: at most NRTEMU_MAX_DIMS non-negative integers. */
static bool
parse_shape(const struct nrtemu_json *j, struct buffer *b, const char **why)
{
    uint64_t count = 1;
    size_t size = nrtemu__dtype_size(b->dtype);

    if (j == NULL || j->type != NRTEMU_JSON_ARRAY) {
        *why = "\"shape\" must be a list of integers";
        return false;
    }
    if (j->u.array.count > NRTEMU_MAX_DIMS) {
        *why = "\"shape\" has more than 8 dimensions";
        return false;
    }
    b->ndim = (uint32_t)j->u.array.count;
    for (uint32_t d = 0; d < b->ndim; d++) {
        const struct nrtemu_json *v = j->u.array.items[d];
        if (v->type != NRTEMU_JSON_NUMBER || !v->u.number.is_int ||
            v->u.number.ivalue < 0) {
            *why = "\"shape\" must be a list of non-negative integers";
            return false;
        }
        b->shape[d] = (uint64_t)v->u.number.ivalue;
    }
    /*
     * Overflow-safe: the byte size must fit comfortably in size_t.  As in
     * NumPy, the bound is on the product of the non-zero dimensions, even
     * when a zero makes the buffer empty: the kernels multiply partial
     * products of the shape (strides, loop counts), which must not
     * overflow either.
     */
    for (uint32_t d = 0; d < b->ndim; d++) {
        if (b->shape[d] == 0) {
            continue;
        }
        if (count > (UINT64_MAX >> 8) / b->shape[d]) {
            *why = "the buffer is too large";
            return false;
        }
        count *= b->shape[d];
    }
    for (uint32_t d = 0; d < b->ndim; d++) {
        if (b->shape[d] == 0) {
            count = 0;
        }
    }
    if (count > ((uint64_t)1 << 56) / size || count * size > SIZE_MAX / 2) {
        *why = "the buffer is too large";
        return false;
    }
    b->count = count;
    b->bytes = (size_t)(count * size);
    return true;
}

/* The def.json variable named `name`, NULL when absent. */
static const struct nrtemu_json *
def_var(const struct nrtemu_json *def, const char *name)
{
    return nrtemu__json_get(nrtemu__json_get(def, "var"), name);
}

/*
 * The I/O entries of a subgraph are two runs of neff->io: the table holds
 * the inputs of all subgraphs, then their outputs, each in subgraph order
 * (docs/neff-emulator-format.md §2; neff.c builds it so).  They are found
 * by binary search, so that loading each of thousands of subgraphs does
 * not scan an I/O table of millions of entries.
 */
struct io_run {
    size_t begin, end;
};

/* The first entry at or after (output?, subgraph) in table order. */
static size_t
io_lower_bound(const struct nrtemu_neff *neff, int output, int subgraph)
{
    size_t lo = 0, hi = neff->io_count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct nrtemu_neff_io *io = &neff->io[mid];
        int o = io->usage == NRT_TENSOR_USAGE_OUTPUT;
        if (o < output || (o == output && io->subgraph < subgraph)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* run[0]: the inputs of `subgraph`, run[1]: its outputs. */
static void
subgraph_io(const struct nrtemu_neff *neff, int subgraph, struct io_run run[2])
{
    for (int o = 0; o < 2; o++) {
        run[o].begin = io_lower_bound(neff, o, subgraph);
        run[o].end = io_lower_bound(neff, o, subgraph + 1);
    }
}

/*
 * The I/O entries of the subgraph, sorted by name, usage and index, for
 * bind_io to look buffers up in: a scan of the I/O table per buffer would
 * make a load quadratic (a hostile NEFF can have millions of both).
 */
struct io_ref {
    const char *name;
    nrt_tensor_usage_t usage;
    size_t index;
};

static int
compare_io(const struct io_ref *x, const struct io_ref *y)
{
    int c = strcmp(x->name, y->name);

    if (c != 0) {
        return c;
    }
    if (x->usage != y->usage) {
        return x->usage < y->usage ? -1 : 1;
    }
    return x->index < y->index ? -1 : x->index > y->index;
}

static int
compare_io_qsort(const void *a, const void *b)
{
    return compare_io(a, b);
}

/* The first entry (lowest index) named `name` with `usage`, or NULL. */
static const struct io_ref *
find_io(const struct io_ref *ios, size_t count, const char *name,
        nrt_tensor_usage_t usage)
{
    struct io_ref key = {name, usage, 0};
    size_t lo = 0, hi = count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (compare_io(&ios[mid], &key) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo < count && strcmp(ios[lo].name, name) == 0 &&
        ios[lo].usage == usage) {
        return &ios[lo];
    }
    return NULL;
}

/* Match an input or output buffer to its NEFF I/O entry. */
static NRT_STATUS
bind_io(const char *func, const struct nrtemu_program *p,
        const struct nrtemu_neff *neff, const struct io_ref *ios, size_t n_ios,
        struct buffer *b)
{
    nrt_tensor_usage_t usage = b->kind == BUFFER_INPUT
                                   ? NRT_TENSOR_USAGE_INPUT
                                   : NRT_TENSOR_USAGE_OUTPUT;
    const struct io_ref *ref = find_io(ios, n_ios, b->name, usage);
    char desc[128];

    nrtemu__describe_buffer(b, desc, sizeof desc);
    if (ref != NULL) {
        size_t i = ref->index;
        const struct nrtemu_neff_io *io = &neff->io[i];
        bool same_shape;
        if (io->size != b->bytes) {
            return invalid(func, p,
                           "buffer '%s' (%s, %zu bytes) does not match the "
                           "%zu bytes of %s '%s' in def.json",
                           b->name, desc, b->bytes, io->size,
                           kind_name(b->kind), io->name);
        }
        if (io->dtype != NRTEMU_DTYPE_UNKNOWN) {
            same_shape = io->dtype == b->dtype && io->ndim == b->ndim;
            for (uint32_t d = 0; same_shape && d < b->ndim; d++) {
                same_shape = io->shape[d] == b->shape[d];
            }
            if (!same_shape) {
                struct buffer as_io = {0};
                char io_desc[128];
                as_io.dtype = io->dtype;
                as_io.ndim = io->ndim;
                for (uint32_t d = 0; d < io->ndim; d++) {
                    as_io.shape[d] = io->shape[d];
                }
                nrtemu__describe_buffer(&as_io, io_desc, sizeof io_desc);
                return invalid(func, p,
                               "buffer '%s' is %s, but def.json declares %s "
                               "'%s' as %s",
                               b->name, desc, kind_name(b->kind), io->name,
                               io_desc);
            }
        }
        b->io_index = i;
        return NRT_SUCCESS;
    }
    return invalid(func, p,
                   "buffer '%s' has kind \"%s\", but def.json has no %s "
                   "variable '%s'",
                   b->name, kind_name(b->kind), kind_name(b->kind), b->name);
}

/* A constant: its .npy member, checked against the buffer. */
static NRT_STATUS
bind_const(const char *func, struct nrtemu_program *p,
           const struct nrtemu_neff *neff, const char *dir,
           const struct nrtemu_json *def, const struct nrtemu_json *jb,
           struct buffer *b)
{
    const char *var, *type, *file;
    const struct nrtemu_json *v;
    struct nrtemu_npy npy;
    char path[512];
    bool same_shape;
    size_t size = nrtemu__dtype_size(b->dtype);
    NRT_STATUS st;

    if (!nrtemu__json_get_string(jb, "var", &var)) {
        return invalid(func, p,
                       "buffer '%s': a const needs \"var\", the name of a "
                       "def.json variable of type \"file\"",
                       b->name);
    }
    v = def_var(def, var);
    if (v == NULL || !nrtemu__json_get_string(v, "type", &type) ||
        strcmp(type, "file") != 0 ||
        !nrtemu__json_get_string(v, "file_name", &file)) {
        return invalid(func, p,
                       "buffer '%s': def.json has no variable '%s' of type "
                       "\"file\" with a \"file_name\"",
                       b->name, var);
    }
    /* file_name is relative to the subgraph directory; accept a path
     * from the archive root too. */
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (nrtemu__neff_find(neff, path) == NULL &&
        nrtemu__neff_find(neff, file) != NULL) {
        snprintf(path, sizeof path, "%s", file);
    }
    st = nrtemu__neff_npy(func, neff, path, &npy);
    if (st != NRT_SUCCESS) {
        return st;
    }
    if (npy.dtype == NRTEMU_DTYPE_UNKNOWN ? npy.itemsize != size
                                          : npy.dtype != b->dtype) {
        return invalid(func, p,
                       "buffer '%s' is %s, but '%s' holds %s elements of %zu "
                       "bytes",
                       b->name, nrtemu__dtype_name(b->dtype), path,
                       npy.dtype == NRTEMU_DTYPE_UNKNOWN
                           ? "raw"
                           : nrtemu__dtype_name(npy.dtype),
                       npy.itemsize);
    }
    same_shape = npy.ndim == b->ndim;
    for (uint32_t d = 0; same_shape && d < b->ndim; d++) {
        same_shape = npy.shape[d] == b->shape[d];
    }
    if (!same_shape || npy.size != b->bytes) {
        char want[128], got[128];
        struct buffer as_npy = *b;
        as_npy.ndim = npy.ndim;
        memcpy(as_npy.shape, npy.shape, sizeof as_npy.shape);
        nrtemu__describe_buffer(b, want, sizeof want);
        nrtemu__describe_buffer(&as_npy, got, sizeof got);
        return invalid(func, p, "buffer '%s' is %s, but '%s' holds %s",
                       b->name, want, path, got);
    }
    /*
     * The data stays in the NEFF payload, which the model keeps for as
     * long as its programs; kernels read typed elements, so a member
     * that is not aligned for its type is copied.
     */
    if ((uintptr_t)npy.data % (size ? size : 1) == 0) {
        b->data = npy.data;
    } else {
        if (posix_memalign(&b->owned, 64, b->bytes ? b->bytes : 1) != 0) {
            b->owned = NULL;
            return out_of_memory(func, p, "a constant");
        }
        memcpy(b->owned, npy.data, b->bytes);
        b->data = b->owned;
    }
    return NRT_SUCCESS;
}

static int
compare_names(const void *a, const void *b)
{
    const struct buffer_name *x = a, *y = b;

    return strcmp(x->name, y->name);
}

/* Sort the names for lookups (programs may have thousands of buffers);
 * equal neighbours are names defined twice. */
static NRT_STATUS
index_names(const char *func, struct nrtemu_program *p)
{
    p->by_name =
        calloc(p->buffer_count ? p->buffer_count : 1, sizeof *p->by_name);
    if (p->by_name == NULL) {
        return out_of_memory(func, p, "the buffers");
    }
    for (size_t i = 0; i < p->buffer_count; i++) {
        p->by_name[i].name = p->buffers[i].name;
        p->by_name[i].index = i;
    }
    qsort(p->by_name, p->buffer_count, sizeof *p->by_name, compare_names);
    for (size_t i = 1; i < p->buffer_count; i++) {
        if (strcmp(p->by_name[i - 1].name, p->by_name[i].name) == 0) {
            return invalid(func, p, "buffer '%s' is defined twice",
                           p->by_name[i].name);
        }
    }
    return NRT_SUCCESS;
}

static NRT_STATUS
read_buffer_list(const char *func, struct nrtemu_program *p,
                 const struct nrtemu_neff *neff, const struct io_ref *ios,
                 size_t n_ios, const char *dir, const struct nrtemu_json *def,
                 const struct nrtemu_json *bufs)
{
    uint64_t temp_bytes = 0;

    if (bufs == NULL || bufs->type != NRTEMU_JSON_OBJECT) {
        return invalid(func, p, "\"buffers\" must be an object");
    }
    p->buffers = calloc(bufs->u.object.count ? bufs->u.object.count : 1,
                        sizeof *p->buffers);
    if (p->buffers == NULL) {
        return out_of_memory(func, p, "the buffers");
    }
    for (size_t i = 0; i < bufs->u.object.count; i++) {
        const char *name = bufs->u.object.keys[i];
        const struct nrtemu_json *jb = bufs->u.object.values[i];
        struct buffer *b = &p->buffers[i];
        const char *kind, *dtype, *why = NULL;
        NRT_STATUS st;

        p->buffer_count = i + 1;
        b->name = strdup(name);
        if (b->name == NULL) {
            return out_of_memory(func, p, "the buffers");
        }
        if (jb->type != NRTEMU_JSON_OBJECT) {
            return invalid(func, p, "buffer '%s' must be an object", name);
        }
        if (!nrtemu__json_get_string(jb, "kind", &kind)) {
            return invalid(func, p, "buffer '%s' has no \"kind\"", name);
        }
        if (strcmp(kind, "input") == 0) {
            b->kind = BUFFER_INPUT;
        } else if (strcmp(kind, "output") == 0) {
            b->kind = BUFFER_OUTPUT;
        } else if (strcmp(kind, "const") == 0) {
            b->kind = BUFFER_CONST;
        } else if (strcmp(kind, "temp") == 0) {
            b->kind = BUFFER_TEMP;
        } else {
            return invalid(func, p,
                           "buffer '%s': unknown kind \"%s\" (input, output, "
                           "const or temp)",
                           name, kind);
        }
        if (!nrtemu__json_get_string(jb, "dtype", &dtype) ||
            !nrtemu__dtype_from_name(dtype, &b->dtype)) {
            return invalid(func, p,
                           "buffer '%s': \"dtype\" must name an element type "
                           "(float32, bfloat16, int64, ...)",
                           name);
        }
        if (!parse_shape(nrtemu__json_get(jb, "shape"), b, &why)) {
            return invalid(func, p, "buffer '%s': %s", name, why);
        }
        /* Temporaries are allocated at the first run: bound them here,
         * so that a hostile program cannot have the emulator allocate
         * (and then fill) memory without bound. */
        if (b->kind == BUFFER_TEMP &&
            b->bytes > NRTEMU_PROGRAM_MAX_TEMP_BYTES - temp_bytes) {
            return invalid(func, p,
                           "buffer '%s': the temporaries need more than "
                           "the %llu-byte limit of a program",
                           name,
                           (unsigned long long)NRTEMU_PROGRAM_MAX_TEMP_BYTES);
        }
        if (b->kind == BUFFER_TEMP) {
            temp_bytes += b->bytes;
        }
        switch (b->kind) {
        case BUFFER_INPUT:
        case BUFFER_OUTPUT:
            st = bind_io(func, p, neff, ios, n_ios, b);
            break;
        case BUFFER_CONST:
            st = bind_const(func, p, neff, dir, def, jb, b);
            break;
        default:
            st = NRT_SUCCESS;
            break;
        }
        if (st != NRT_SUCCESS) {
            return st;
        }
    }
    return index_names(func, p);
}

static NRT_STATUS
read_buffers(const char *func, struct nrtemu_program *p,
             const struct nrtemu_neff *neff, int subgraph, const char *dir,
             const struct nrtemu_json *def, const struct nrtemu_json *bufs)
{
    struct io_run run[2];
    struct io_ref *ios;
    size_t n_ios = 0;
    NRT_STATUS st;

    subgraph_io(neff, subgraph, run);
    ios = calloc(run[0].end - run[0].begin + run[1].end - run[1].begin + 1,
                 sizeof *ios);
    if (ios == NULL) {
        return out_of_memory(func, p, "the I/O names");
    }
    for (int r = 0; r < 2; r++) {
        for (size_t i = run[r].begin; i < run[r].end; i++) {
            if (neff->io[i].subgraph == subgraph) {
                ios[n_ios].name = neff->io[i].name;
                ios[n_ios].usage = neff->io[i].usage;
                ios[n_ios].index = i;
                n_ios++;
            }
        }
    }
    qsort(ios, n_ios, sizeof *ios, compare_io_qsort);
    st = read_buffer_list(func, p, neff, ios, n_ios, dir, def, bufs);
    free(ios);
    return st;
}

bool
nrtemu__program_find_buffer(const struct nrtemu_program *p, const char *name,
                            size_t *out)
{
    struct buffer_name key = {name, 0};
    const struct buffer_name *hit;

    if (p->buffer_count == 0) {
        return false;
    }
    hit =
        bsearch(&key, p->by_name, p->buffer_count, sizeof key, compare_names);
    if (hit == NULL) {
        return false;
    }
    *out = hit->index;
    return true;
}

/* "float32[2,3], float32[3] -> float32[2,3]" for profiles; NULL when
 * memory runs out. */
static char *
describe_op(const struct nrtemu_program *p, const struct op *op)
{
    struct nrtemu_strbuf sb = NRTEMU_STRBUF_INIT;
    char desc[256];

    for (size_t k = 0; k < op->n_in; k++) {
        nrtemu__describe_buffer(&p->buffers[op->in[k]], desc, sizeof desc);
        nrtemu__strbuf_printf(&sb, "%s%s", k ? ", " : "", desc);
    }
    if (op->out != NO_BUFFER) {
        nrtemu__describe_buffer(&p->buffers[op->out], desc, sizeof desc);
        nrtemu__strbuf_printf(&sb, "%s-> %s", op->n_in ? " " : "", desc);
    } else if (op->op == NRTEMU_OP_WHILE) {
        nrtemu__strbuf_printf(&sb, "-> cond %zu ops, body %zu ops",
                              op->lists[0].count, op->lists[1].count);
    } else {
        nrtemu__strbuf_printf(&sb, " -> %zu branches", op->n_lists);
    }
    return nrtemu__strbuf_take(&sb);
}

void
nrtemu__written_mark(struct written_set *w, size_t b)
{
    if (!w->is[b]) {
        w->is[b] = true;
        w->log[w->len++] = b;
    }
}

/* The "out" of `op`: none for a control op, else a buffer it may write. */
static NRT_STATUS
read_out(const struct op_ctx *ctx, struct op *op)
{
    const struct nrtemu_program *p = ctx->program;
    const struct nrtemu_json *jout = nrtemu__json_get(ctx->json, "out");
    const char *out;

    if (nrtemu__op_defs[op->op].flags & NRTEMU_OPF_CONTROL) {
        op->out = NO_BUFFER;
        if (jout != NULL && jout->type != NRTEMU_JSON_NULL) {
            return nrtemu__op_invalid(ctx, "has no \"out\": its lists write "
                                           "the buffers");
        }
        return NRT_SUCCESS;
    }
    if (!nrtemu__json_get_string(ctx->json, "out", &out) ||
        !nrtemu__program_find_buffer(p, out, &op->out)) {
        return nrtemu__op_invalid(ctx, "\"out\" must be the name of a buffer");
    }
    if (p->buffers[op->out].kind == BUFFER_INPUT ||
        p->buffers[op->out].kind == BUFFER_CONST) {
        return nrtemu__op_invalid(
            ctx,
            "out '%s' is %s: inputs and consts are "
            "never written",
            out,
            p->buffers[op->out].kind == BUFFER_INPUT ? "an input" : "a const");
    }
    return NRT_SUCCESS;
}

/* Op `index` of `list`, read from `jop`, with `written` and `depth` as
 * struct op_ctx has them. */
static NRT_STATUS
read_op(const char *func, const struct nrtemu_program *p, struct op_list *list,
        size_t index, const struct nrtemu_json *jop,
        struct written_set *written, unsigned depth)
{
    struct op *op = &list->ops[index];
    struct op_ctx ctx = {func, p, op, jop, written, depth};
    const struct nrtemu_json *jin;
    const char *name, *dtype;
    int arity;
    size_t n_in;
    NRT_STATUS st;

    op->index = index;
    op->where = list->where;
    op->out = NO_BUFFER;
    if (jop->type != NRTEMU_JSON_OBJECT) {
        return invalid(func, p, "%sop %zu must be an object", list->where,
                       index);
    }
    if (!nrtemu__json_get_string(jop, "op", &name)) {
        return invalid(func, p, "%sop %zu has no \"op\" name", list->where,
                       index);
    }
    if (!nrtemu__op_find(name, &op->op)) {
        char excerpt[NRTEMU_EXCERPT_SIZE];
        return invalid(
            func, p, "%sop %zu: unknown op \"%s\"", list->where, index,
            nrtemu__excerpt(excerpt, sizeof excerpt, name, strlen(name)));
    }
    arity = nrtemu__op_defs[op->op].arity;
    jin = nrtemu__json_get(jop, "in");
    if (jin == NULL && arity == 0) {
        n_in = 0;
    } else if (jin == NULL || jin->type != NRTEMU_JSON_ARRAY) {
        return nrtemu__op_invalid(&ctx,
                                  "\"in\" must be a list of buffer names");
    } else {
        n_in = jin->u.array.count;
    }
    if (arity >= 0 ? n_in != (size_t)arity : n_in < 1) {
        if (arity >= 0) {
            return nrtemu__op_invalid(&ctx, "takes %d operand%s, not %zu",
                                      arity, arity == 1 ? "" : "s", n_in);
        }
        return nrtemu__op_invalid(&ctx, "takes at least one operand");
    }
    op->in = calloc(n_in ? n_in : 1, sizeof *op->in);
    if (op->in == NULL) {
        return out_of_memory(func, p, "the ops");
    }
    op->n_in = n_in;
    for (size_t k = 0; k < n_in; k++) {
        const struct nrtemu_json *v = jin->u.array.items[k];
        const struct buffer *b;
        if (v->type != NRTEMU_JSON_STRING ||
            !nrtemu__program_find_buffer(p, v->u.string.chars, &op->in[k])) {
            return nrtemu__op_invalid(
                &ctx, "in[%zu] is not the name of a buffer%s%s%s", k,
                v->type == NRTEMU_JSON_STRING ? " ('" : "",
                v->type == NRTEMU_JSON_STRING ? v->u.string.chars : "",
                v->type == NRTEMU_JSON_STRING ? "')" : "");
        }
        b = &p->buffers[op->in[k]];
        if ((b->kind == BUFFER_TEMP || b->kind == BUFFER_OUTPUT) &&
            !written->is[op->in[k]]) {
            return nrtemu__op_invalid(&ctx,
                                      "in[%zu] '%s' is read before any op "
                                      "writes it",
                                      k, b->name);
        }
    }
    st = read_out(&ctx, op);
    if (st != NRT_SUCCESS) {
        return st;
    }
    op->compute = NRTEMU_DTYPE_UNKNOWN;
    if (nrtemu__json_get(jop, "dtype") != NULL) {
        if (!nrtemu__json_get_string(jop, "dtype", &dtype) ||
            !nrtemu__dtype_from_name(dtype, &op->compute)) {
            return nrtemu__op_invalid(&ctx,
                                      "\"dtype\" must name an element type");
        }
    }
    st = nrtemu__program_check_op(&ctx, op);
    if (st != NRT_SUCCESS) {
        return st;
    }
    /* Ops other than elementwise ones read their operands in another
     * order than they write: an out that is also an operand is computed
     * aside first (but for the first operand of an op that changes it in
     * place). */
    if ((nrtemu__op_defs[op->op].flags & NRTEMU_OPF_STREAMS) == 0) {
        size_t first =
            (nrtemu__op_defs[op->op].flags & NRTEMU_OPF_IN_PLACE) ? 1 : 0;
        for (size_t k = first; k < n_in; k++) {
            op->via_scratch = op->via_scratch || op->in[k] == op->out;
        }
    }
    op->shapes = describe_op(p, op);
    if (op->shapes == NULL) {
        return out_of_memory(func, p, "the ops");
    }
    if (nrtemu__json_get(jop, "note") != NULL) {
        const char *note;
        if (!nrtemu__json_get_string(jop, "note", &note)) {
            return nrtemu__op_invalid(&ctx, "\"note\" must be a string");
        }
        op->note = strdup(note);
        if (op->note == NULL) {
            return out_of_memory(func, p, "the ops");
        }
    }
    if (op->out != NO_BUFFER) {
        nrtemu__written_mark(written, op->out);
    }
    return NRT_SUCCESS;
}

/* The ops of `jops` (a JSON list) into `list`, whose ops are `where`
 * (owned by the list from here on, freed with it). */
static NRT_STATUS
read_list(const char *func, const struct nrtemu_program *p,
          const struct nrtemu_json *jops, char *where,
          struct written_set *written, unsigned depth, struct op_list *list)
{
    size_t count = jops->u.array.count;
    NRT_STATUS st = NRT_SUCCESS;

    list->where = where;
    list->ops = calloc(count ? count : 1, sizeof *list->ops);
    if (list->where == NULL || list->ops == NULL) {
        return out_of_memory(func, p, "the ops");
    }
    for (size_t i = 0; i < count && st == NRT_SUCCESS; i++) {
        list->count = i + 1;
        st = read_op(func, p, list, i, jops->u.array.items[i], written, depth);
    }
    return st;
}

NRT_STATUS
nrtemu__program_read_list(const struct op_ctx *ctx,
                          const struct nrtemu_json *json, const char *label,
                          struct op_list *list)
{
    struct nrtemu_strbuf sb = NRTEMU_STRBUF_INIT;

    if (json == NULL || json->type != NRTEMU_JSON_ARRAY) {
        return nrtemu__op_invalid(ctx, "\"%s\" must be a list of ops", label);
    }
    if (ctx->depth + 1 > NRTEMU_PROGRAM_MAX_NESTING) {
        return nrtemu__op_invalid(ctx,
                                  "control ops nest more than %d deep (its "
                                  "%s would be level %u)",
                                  NRTEMU_PROGRAM_MAX_NESTING, label,
                                  ctx->depth + 1);
    }
    nrtemu__strbuf_printf(&sb, "%sop %zu (%s) %s ", ctx->op->where,
                          ctx->op->index, nrtemu__op_name(ctx->op->op), label);
    return read_list(ctx->func, ctx->program, json, nrtemu__strbuf_take(&sb),
                     ctx->written, ctx->depth + 1, list);
}

static NRT_STATUS
read_ops(const char *func, struct nrtemu_program *p,
         const struct nrtemu_neff *neff, int subgraph,
         const struct nrtemu_json *jops)
{
    struct io_run run[2];
    struct written_set written = {0};
    NRT_STATUS st = NRT_SUCCESS;

    if (jops == NULL || jops->type != NRTEMU_JSON_ARRAY) {
        return invalid(func, p, "\"ops\" must be a list");
    }
    written.is =
        calloc(p->buffer_count ? p->buffer_count : 1, sizeof *written.is);
    written.log =
        calloc(p->buffer_count ? p->buffer_count : 1, sizeof *written.log);
    if (written.is == NULL || written.log == NULL) {
        free(written.is);
        free(written.log);
        return out_of_memory(func, p, "the ops");
    }
    st = read_list(func, p, jops, strdup(""), &written, 0, &p->ops);
    for (size_t i = 0; i < p->buffer_count && st == NRT_SUCCESS; i++) {
        if (p->buffers[i].kind == BUFFER_OUTPUT && !written.is[i]) {
            st = invalid(func, p, "output '%s' is never written by an op",
                         p->buffers[i].name);
        }
    }
    free(written.is);
    free(written.log);
    /* Every output of the subgraph must come from the program. */
    subgraph_io(neff, subgraph, run);
    for (size_t i = run[1].begin; i < run[1].end && st == NRT_SUCCESS; i++) {
        const struct nrtemu_neff_io *io = &neff->io[i];
        size_t b;
        if (io->subgraph != subgraph || io->usage != NRT_TENSOR_USAGE_OUTPUT) {
            continue;
        }
        if (!nrtemu__program_find_buffer(p, io->name, &b) ||
            p->buffers[b].kind != BUFFER_OUTPUT) {
            st = invalid(func, p,
                         "def.json output '%s' is not an output buffer of "
                         "the program",
                         io->name);
        }
    }
    return st;
}

NRT_STATUS
nrtemu__program_load(const char *func, const struct nrtemu_neff *neff,
                     int subgraph, struct nrtemu_program **out)
{
    struct nrtemu_json_doc *doc = NULL;
    const struct nrtemu_json *root, *defroot;
    struct nrtemu_program *p;
    const char *dir, *file, *format;
    int64_t version;
    char path[512];
    NRT_STATUS st;

    *out = NULL;
    if (subgraph < 0 || subgraph >= neff->subgraph_count) {
        return nrtemu__reject(NRT_INVALID, func, "NEFF has no subgraph %d",
                              subgraph);
    }
    dir = neff->subgraphs[subgraph].dir;
    p = calloc(1, sizeof *p);
    if (p == NULL) {
        return nrtemu__fail(NRT_RESOURCE, func,
                            "out of host memory for a program");
    }
    /* Parsed once, by nrtemu__neff_open(). */
    snprintf(path, sizeof path, "%s/def.json", dir);
    defroot = nrtemu__json_root(neff->subgraphs[subgraph].def);
    if (nrtemu__json_get(defroot, "emulator_program") == NULL) {
        st = nrtemu__reject(NRT_INVALID, func,
                            "subgraph %s has no emulator program: it needs "
                            "Neuron hardware",
                            dir);
        goto fail;
    }
    if (!nrtemu__json_get_string(defroot, "emulator_program", &file) ||
        file[0] == '\0') {
        st = nrtemu__reject(NRT_INVALID, func,
                            "%s: \"emulator_program\" must be a file name",
                            path);
        goto fail;
    }
    snprintf(p->path, sizeof p->path, "%s/%s", dir, file);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    st = nrtemu__neff_json(func, neff, path, &doc);
    if (st != NRT_SUCCESS) {
        goto fail;
    }
    root = nrtemu__json_root(doc);
    if (!nrtemu__json_get_string(root, "format", &format) ||
        strcmp(format, PROGRAM_FORMAT) != 0) {
        st = invalid(func, p, "\"format\" must be \"%s\"", PROGRAM_FORMAT);
        goto fail;
    }
    if (!nrtemu__json_get_int(root, "version", &version) ||
        version != PROGRAM_VERSION) {
        st = invalid(func, p,
                     "\"version\" must be %d (this emulator reads version %d "
                     "programs)",
                     PROGRAM_VERSION, PROGRAM_VERSION);
        goto fail;
    }
    st = read_buffers(func, p, neff, subgraph, dir, defroot,
                      nrtemu__json_get(root, "buffers"));
    if (st != NRT_SUCCESS) {
        goto fail;
    }
    st = read_ops(func, p, neff, subgraph, nrtemu__json_get(root, "ops"));
    if (st == NRT_SUCCESS) {
        st = nrtemu__program_fuse(func, p);
    }
    if (st != NRT_SUCCESS) {
        goto fail;
    }
    nrtemu__json_free(doc);
    *out = p;
    return NRT_SUCCESS;

fail:
    nrtemu__json_free(doc);
    nrtemu__program_free(p);
    return st;
}

static uint64_t
add_saturating(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void
nrtemu__program_footprint(const struct nrtemu_program *program,
                          uint64_t *bytes, uint64_t *work)
{
    *bytes = 0;
    *work = 0;
    for (size_t i = 0; i < program->buffer_count; i++) {
        const struct buffer *b = &program->buffers[i];
        if (b->kind != BUFFER_CONST) {
            *bytes = add_saturating(*bytes, b->bytes);
        }
    }
    for (size_t i = 0; i < program->ops.count; i++) {
        const struct op *op = &program->ops.ops[i];
        uint64_t w = nrtemu__op_defs[op->op].cost(program, op);
        *work = w > *work ? w : *work;
    }
}

static void
op_list_free(struct op_list *list)
{
    for (size_t i = 0; i < list->count; i++) {
        struct op *op = &list->ops[i];
        free(op->in);
        free(op->shapes);
        free(op->note);
        free(op->coll);
        for (size_t k = 0; k < op->n_lists; k++) {
            op_list_free(&op->lists[k]);
        }
        free(op->lists);
        nrtemu__fusion_free(op->fusion);
        nrtemu__row_group_free(op->row_group);
    }
    free(list->ops);
    free(list->where);
}

void
nrtemu__program_free(struct nrtemu_program *program)
{
    if (program == NULL) {
        return;
    }
    for (size_t i = 0; i < program->buffer_count; i++) {
        free(program->buffers[i].name);
        free(program->buffers[i].owned);
    }
    free(program->buffers);
    free(program->by_name);
    op_list_free(&program->ops);
    nrtemu__scratch_free(&program->scratch);
    nrtemu__scratch_free(&program->result);
    nrtemu__scratch_free(&program->fused);
    for (uint32_t t = 0; t < program->n_task_scratch; t++) {
        nrtemu__scratch_free(&program->task_scratch[t]);
    }
    free(program->task_scratch);
    free(program);
}
