/*
 * cc_id.h - what one exchange of a communicator is, as each rank says it
 * (internal).
 *
 * A rank's communicator carries the collectives of all its collective
 * models, and its host-level collectives, in one sequence: the k-th
 * exchange of every rank of a group must be the same op of the same
 * model.  Every exchange carries this record (in memory between threads,
 * in the header of its data between processes, and on the shared board of
 * the ranks of one machine); a rank that meets a record that differs from
 * its own fails with NRT_EXEC_HW_ERR_COLLECTIVES and a message that names
 * both (nrtemu__cc_id_mismatch()), rather than waiting or exchanging the
 * wrong data.
 */
#ifndef NRTEMU_CC_ID_H
#define NRTEMU_CC_ID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The model of the host-level collectives (nrt_barrier, nrt_all_gather). */
#define NRTEMU_CC_HOST_MODEL 0u

struct nrtemu_cc_id {
    uint64_t seq;   /* the exchange's number in the rank's communicator */
    uint64_t model; /* the first 8 bytes of the NEFF's SHA-256, big-endian;
                       NRTEMU_CC_HOST_MODEL for the host-level ones */
    uint32_t op;    /* the op's index in its program; for the host-level
                       ones, the bytes per rank */
    char name[44];  /* the model's name (truncated), NUL-terminated */
};

/* The record on the wire and on the board: seq, model (big-endian), op,
 * name.  The functions below are pure: any thread. */
#define NRTEMU_CC_ID_WIRE 64

void nrtemu__cc_id_encode(const struct nrtemu_cc_id *id,
                          unsigned char out[NRTEMU_CC_ID_WIRE]);
/* Any bytes decode; the name comes out NUL-terminated. */
void nrtemu__cc_id_decode(const unsigned char in[NRTEMU_CC_ID_WIRE],
                          struct nrtemu_cc_id *id);

/* Whether two records are the same exchange: seq, model and op (the name
 * only says which model). */
bool nrtemu__cc_id_same(const struct nrtemu_cc_id *a,
                        const struct nrtemu_cc_id *b);

/*
 * The reason of a mismatch into buf (`size` bytes, NUL-terminated): rank
 * `ra` runs `a`, rank `rb` runs `b`, naming both models and ops, and what
 * it means (different models, or the same ones in a different order).
 */
void nrtemu__cc_id_mismatch(char *buf, size_t size, uint32_t ra,
                            const struct nrtemu_cc_id *a, uint32_t rb,
                            const struct nrtemu_cc_id *b);

#endif /* NRTEMU_CC_ID_H */
