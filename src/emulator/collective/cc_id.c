/*
 * cc_id.c - the identity of an exchange, its encoding and the message of
 * a mismatch (design in cc_id.h).
 */
#include <stdio.h>
#include <string.h>

#include "collective/cc_id.h"

static void
put64(unsigned char *p, uint64_t v)
{
    for (int k = 7; k >= 0; k--) {
        p[k] = (unsigned char)v;
        v >>= 8;
    }
}

static uint64_t
get64(const unsigned char *p)
{
    uint64_t v = 0;

    for (int k = 0; k < 8; k++) {
        v = v << 8 | p[k];
    }
    return v;
}

void
nrtemu__cc_id_encode(const struct nrtemu_cc_id *id,
                     unsigned char out[NRTEMU_CC_ID_WIRE])
{
    size_t n = strnlen(id->name, sizeof id->name - 1);

    memset(out, 0, NRTEMU_CC_ID_WIRE);
    put64(out, id->seq);
    put64(out + 8, id->model);
    out[16] = (unsigned char)(id->op >> 24);
    out[17] = (unsigned char)(id->op >> 16);
    out[18] = (unsigned char)(id->op >> 8);
    out[19] = (unsigned char)id->op;
    memcpy(out + 20, id->name, n);
}

void
nrtemu__cc_id_decode(const unsigned char in[NRTEMU_CC_ID_WIRE],
                     struct nrtemu_cc_id *id)
{
    _Static_assert(20 + sizeof id->name == NRTEMU_CC_ID_WIRE,
                   "the name ends the record");
    id->seq = get64(in);
    id->model = get64(in + 8);
    id->op = (uint32_t)in[16] << 24 | (uint32_t)in[17] << 16 |
             (uint32_t)in[18] << 8 | in[19];
    memcpy(id->name, in + 20, sizeof id->name);
    id->name[sizeof id->name - 1] = '\0';
}

bool
nrtemu__cc_id_same(const struct nrtemu_cc_id *a, const struct nrtemu_cc_id *b)
{
    return a->seq == b->seq && a->model == b->model && a->op == b->op;
}

/* "op 3 of model 'x' (NEFF 1a2b3c4d)" or "nrt_barrier" */
static void
describe(char *buf, size_t size, const struct nrtemu_cc_id *id)
{
    if (id->model == NRTEMU_CC_HOST_MODEL) {
        /* (the op: the bytes per rank) */
        snprintf(buf, size, "the host-level %s of %u bytes per rank",
                 id->name[0] != '\0' ? id->name : "collective", id->op);
        return;
    }
    snprintf(buf, size, "op %u of model '%s' (NEFF %08x)", id->op, id->name,
             (unsigned)(id->model >> 32));
}

void
nrtemu__cc_id_mismatch(char *buf, size_t size, uint32_t ra,
                       const struct nrtemu_cc_id *a, uint32_t rb,
                       const struct nrtemu_cc_id *b)
{
    char da[96], db[96];

    describe(da, sizeof da, a);
    describe(db, sizeof db, b);
    if (a->seq == b->seq) {
        snprintf(buf, size,
                 "rank %u runs %s but rank %u runs %s, as exchange #%llu of "
                 "their communicator: the ranks executed different "
                 "collective models, or the same ones in a different order",
                 ra, da, rb, db, (unsigned long long)a->seq);
        return;
    }
    snprintf(buf, size,
             "rank %u runs %s as exchange #%llu of its communicator but rank "
             "%u runs %s as exchange #%llu: the ranks executed different "
             "collective models, or the same ones in a different order",
             ra, da, (unsigned long long)a->seq, rb, db,
             (unsigned long long)b->seq);
}
