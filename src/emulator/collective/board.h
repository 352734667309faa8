/*
 * board.h - the ranks of one machine that live in different processes
 * (internal; used by net.c only).
 *
 * A board is a POSIX shared-memory segment: cache lines of each rank's
 * own with its progress counter and the records of its last exchanges
 * (cc_id.h), then one data area per rank that only that rank writes and
 * the others read.  Rank 0 creates it during the rendezvous
 * and unlinks its name once every rank has mapped it.  Ranks wait for
 * each other on the counters: yielding the core for a while, then a
 * futex on the board's bell, so that ranks oversubscribing the cores
 * never take the core from the rank they wait for.  The data goes through the
 * areas with plain memory copies (libfabric's shm provider, or cross-memory
 * reads, pin the pages of every transfer: several times slower here).
 */
#ifndef NRTEMU_BOARD_H
#define NRTEMU_BOARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nrtemu_board;

#define NRTEMU_BOARD_NAME_MAX 64
/* Worlds over this many ranks get no board (its areas would be tiny). */
#define NRTEMU_BOARD_MAX_RANKS 64u

/*
 * Rank 0: a new board for `world` ranks, its name (for the others'
 * nrtemu__board_attach()) into `name` (NRTEMU_BOARD_NAME_MAX bytes).
 * The memory is reserved at once: a full /dev/shm fails here, not later.
 * @return 0, or -1 with the reason in `why`.  Ownership: *out is the
 * caller's (nrtemu__board_close()); the name stays until
 * nrtemu__board_unlink().
 */
int nrtemu__board_create(uint32_t world, char *name, struct nrtemu_board **out,
                         char *why, size_t why_size);

/* Another rank: map the board `name` as rank `rank` of `world`. */
int nrtemu__board_attach(const char *name, uint32_t world, uint32_t rank,
                         struct nrtemu_board **out, char *why,
                         size_t why_size);

/* Remove the board's name (the mappings stay).  Idempotent. */
void nrtemu__board_unlink(struct nrtemu_board *b);

/* Unmap.  NULL is ignored. */
void nrtemu__board_close(struct nrtemu_board *b);

/* Rank `rank`'s data area, of nrtemu__board_area_size() bytes (64-byte
 * aligned).  Only that rank writes it. */
void *nrtemu__board_area(const struct nrtemu_board *b, uint32_t rank);
size_t nrtemu__board_area_size(const struct nrtemu_board *b);

/*
 * Publish this rank's progress (after its writes to its area), then wake
 * the sleepers.  Any thread of the rank's process may call these, one at
 * a time per board.
 */
void nrtemu__board_publish(struct nrtemu_board *b, uint64_t progress);
uint64_t nrtemu__board_progress(const struct nrtemu_board *b, uint32_t rank);

/* The bell: read it before checking the counters, then sleep while it
 * has not changed, `ns` at most. */
uint32_t nrtemu__board_bell(const struct nrtemu_board *b);
void nrtemu__board_sleep(struct nrtemu_board *b, uint32_t bell, uint64_t ns);

/*
 * What a rank says of its exchanges: a record (NRTEMU_BOARD_RECORD
 * bytes, cc_id.h) of each of its last NRTEMU_BOARD_SAID exchanges, by
 * number, written before the exchange starts whatever carries its data,
 * so that a peer waiting for it sees which exchange it is at.  Only the
 * rank writes its own; any thread of its process, one at a time per
 * board.
 */
#define NRTEMU_BOARD_RECORD 64
#define NRTEMU_BOARD_SAID 4
void nrtemu__board_say(struct nrtemu_board *b, uint64_t seq,
                       const unsigned char *record);
/* Rank `rank`'s record of exchange `seq` into `record`: true, or false
 * when it has none (not there yet, or NRTEMU_BOARD_SAID exchanges
 * beyond). */
bool nrtemu__board_said(const struct nrtemu_board *b, uint32_t rank,
                        uint64_t seq, unsigned char *record);

/*
 * Fail the board for every rank (the first reason stays) and wake them;
 * nrtemu__board_failed() says whether it failed, and why.
 */
void nrtemu__board_fail(struct nrtemu_board *b, int status, const char *why);
bool nrtemu__board_failed(const struct nrtemu_board *b, int *status, char *why,
                          size_t why_size);

#endif /* NRTEMU_BOARD_H */
