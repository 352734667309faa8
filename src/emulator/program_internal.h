/*
 * program_internal.h - the representation of a loaded program, shared by
 * program.c (reading), program_validate.c (op rules) and program_run.c
 * (internal).
 */
#ifndef NRTEMU_PROGRAM_INTERNAL_H
#define NRTEMU_PROGRAM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"
#include "kernel.h"
#include "neff.h"
#include "program.h"

enum buffer_kind {
    BUFFER_INPUT,
    BUFFER_OUTPUT,
    BUFFER_CONST,
    BUFFER_TEMP,
};

struct buffer {
    char *name; /* owned */
    enum buffer_kind kind;
    enum nrtemu_dtype dtype;
    uint32_t ndim;
    uint64_t shape[NRTEMU_MAX_DIMS];
    uint64_t count; /* elements */
    size_t bytes;
    size_t io_index;  /* input, output: index into neff->io */
    const void *data; /* const: into the NEFF payload or `owned` */
    void *owned;      /* const copied for alignment; temp memory */
};

/* Largest operand count: where has 3, concatenate any. */
struct op {
    enum nrtemu_op op;
    size_t index;
    size_t n_in;
    size_t *in; /* owned: buffer indices */
    size_t out;
    enum nrtemu_dtype compute;
    /* Attributes, as the class of the op uses them. */
    uint32_t axes; /* reduce: bit per input axis */
    uint32_t axis; /* argreduce, softmax, concatenate, take, iota */
    bool flatten;  /* argreduce, take without an axis: over all elements */
    uint32_t perm[NRTEMU_MAX_DIMS];
    int64_t start[NRTEMU_MAX_DIMS], step[NRTEMU_MAX_DIMS];
    unsigned char value[8]; /* full: one element of the out dtype */
    bool via_scratch; /* out is also an operand: compute aside, then copy */
    char *shapes;     /* owned: "float32[2,3], ... -> float32[2,3]" */
};

/* A buffer name and its index, for lookups by name (sorted). */
struct buffer_name {
    const char *name;
    size_t index;
};

struct nrtemu_program {
    char path[64]; /* "sg00/program.json", for messages */
    struct buffer *buffers;
    size_t buffer_count;
    struct buffer_name *by_name; /* owned, sorted by name */
    struct op *ops;
    size_t op_count;
    bool temps_ready;
    struct nrtemu_scratch scratch; /* kernels' working memory */
    struct nrtemu_scratch result;  /* results of via_scratch ops */
};

/* Context of the op being validated, for messages. */
struct op_ctx {
    const char *func;
    const struct nrtemu_program *program;
    const struct op *op;
    const struct nrtemu_json *json;
};

/*
 * Check the shapes, dtypes and attributes of `op` (operands already
 * resolved) and fill its attributes and compute dtype.
 * @return NRT_SUCCESS or NRT_INVALID with a detail naming the op.
 */
NRT_STATUS nrtemu__program_check_op(const struct op_ctx *ctx, struct op *op);

/* Record NRT_INVALID with "<path>: op N (name): <detail>". */
NRT_STATUS nrtemu__op_invalid(const struct op_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "float32[2,3]" into buf. */
void nrtemu__describe_buffer(const struct buffer *b, char *buf, size_t len);

#endif /* NRTEMU_PROGRAM_INTERNAL_H */
