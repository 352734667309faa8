/*
 * program_ops.c - the op table: one row per op of NRTEMU_OP_LIST
 * (kernel.h), with its name, operand count, attributes, flags, validator,
 * kernel call and cost; and the lookup of ops by name.
 */
#include <pthread.h>
#include <string.h>

#include "util/hash.h"
#include "program/program_internal.h"

NRTEMU_OP_COLUMN_NAMES;

const struct nrtemu_op_def nrtemu__op_defs[NRTEMU_OP_COUNT] = {
#define OP_ROW(suffix, name, arity, cls, check, run, cost, attrs, flags) \
    [NRTEMU_OP_##suffix] = {name,                                        \
                            arity,                                       \
                            attrs,                                       \
                            flags,                                       \
                            nrtemu__op_check_##check,                    \
                            nrtemu__op_run_##run,                        \
                            nrtemu__op_cost_##cost},
    NRTEMU_OP_LIST(OP_ROW)
#undef OP_ROW
};

static const char *const attr_keys[NRTEMU_ATTR_COUNT] = {
#define ATTR_KEY(suffix, key) [NRTEMU_ATTR_##suffix] = key,
    NRTEMU_ATTR_LIST(ATTR_KEY)
#undef ATTR_KEY
};

/*
 * Ops by name: an open-addressing hash of the names, built once.  Slots
 * hold op + 1 (0: empty); at most half of them are used, so a probe for
 * a name that is not there ends soon.
 */
#define OP_SLOTS 256

_Static_assert(NRTEMU_OP_COUNT * 2 <= OP_SLOTS, "grow OP_SLOTS");
_Static_assert(NRTEMU_OP_COUNT < 256, "op slots hold a byte");

static unsigned char op_slots[OP_SLOTS];
static pthread_once_t op_slots_once = PTHREAD_ONCE_INIT;

static void
op_slots_build(void)
{
    for (int op = 0; op < NRTEMU_OP_COUNT; op++) {
        uint32_t i =
            (uint32_t)nrtemu__name_hash(nrtemu__op_defs[op].name) % OP_SLOTS;
        while (op_slots[i] != 0) {
            i = (i + 1) % OP_SLOTS;
        }
        op_slots[i] = (unsigned char)(op + 1);
    }
}

bool
nrtemu__op_find(const char *name, enum nrtemu_op *out)
{
    uint32_t i;

    pthread_once(&op_slots_once, op_slots_build);
    for (i = (uint32_t)(nrtemu__name_hash(name) % OP_SLOTS); op_slots[i] != 0;
         i = (i + 1) % OP_SLOTS) {
        int op = op_slots[i] - 1;
        if (strcmp(name, nrtemu__op_defs[op].name) == 0) {
            *out = (enum nrtemu_op)op;
            return true;
        }
    }
    return false;
}

bool
nrtemu__op_is_collective(const char *name)
{
    enum nrtemu_op op;

    return nrtemu__op_find(name, &op) &&
           nrtemu__op_defs[op].run == nrtemu__op_run_collective;
}

const char *
nrtemu__op_name(enum nrtemu_op op)
{
    return (unsigned)op < NRTEMU_OP_COUNT ? nrtemu__op_defs[op].name
                                          : "unknown";
}

const char *
nrtemu__attr_key(enum nrtemu_attr attr)
{
    return (unsigned)attr < NRTEMU_ATTR_COUNT ? attr_keys[attr] : "unknown";
}

/* The elements of the largest operand or result. */
static uint64_t
largest_count(const struct nrtemu_program *p, const struct op *op, uint64_t w)
{
    w = p->buffers[op->out].count > w ? p->buffers[op->out].count : w;
    for (size_t k = 0; k < op->n_in; k++) {
        uint64_t n = p->buffers[op->in[k]].count;
        w = n > w ? n : w;
    }
    return w;
}

uint64_t
nrtemu__op_cost_elements(const struct nrtemu_program *p, const struct op *op)
{
    return largest_count(p, op, 0);
}

/* Elements times the comparisons per element of a merge sort along the
 * axis, log2 of its length (at least 1). */
uint64_t
nrtemu__op_cost_sort(const struct nrtemu_program *p, const struct op *op)
{
    const struct buffer *in = &p->buffers[op->in[0]];
    uint64_t len = in->ndim == 0 ? 1 : in->shape[op->axis], w;
    uint64_t depth = 1;

    while (depth < 64 && (1ull << depth) < len) {
        depth++;
    }
    if (__builtin_mul_overflow(in->count, depth, &w)) {
        w = UINT64_MAX;
    }
    return largest_count(p, op, w);
}

/* Result elements times the contracted length. */
uint64_t
nrtemu__op_cost_matmul(const struct nrtemu_program *p, const struct op *op)
{
    const struct buffer *a = &p->buffers[op->in[0]];
    uint64_t k = a->ndim == 0 ? 1 : a->shape[a->ndim - 1], w;

    if (__builtin_mul_overflow(p->buffers[op->out].count, k, &w)) {
        w = UINT64_MAX;
    }
    return largest_count(p, op, w);
}

/* Control ops: the costliest op of their lists (one run of it; loops
 * are bounded by the deadline, not by this estimate). */
uint64_t
nrtemu__op_cost_control(const struct nrtemu_program *p, const struct op *op)
{
    uint64_t w = 0;

    for (size_t k = 0; k < op->n_lists; k++) {
        const struct op_list *list = &op->lists[k];
        for (size_t i = 0; i < list->count; i++) {
            const struct op *o = &list->ops[i];
            uint64_t c = nrtemu__op_defs[o->op].cost(p, o);
            w = c > w ? c : w;
        }
    }
    return w;
}
