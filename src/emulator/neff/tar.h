/*
 * tar.h - an index of the members of an in-memory tar archive (internal).
 *
 * Reads ustar, GNU (long names, base-256 sizes) and PAX (path and size
 * records) headers.  Nothing is extracted: each member's data points into
 * the archive, and its path is only ever used as a lookup key, so ".."
 * components are kept as they are.
 */
#ifndef NRTEMU_TAR_H
#define NRTEMU_TAR_H

#include <stdbool.h>
#include <stddef.h>

#include "nrt/nrt_status.h"

#include "neff/neff.h"

/* Longest member path accepted (GNU long names and PAX paths). */
#define NRTEMU_TAR_MAX_PATH 4096

/*
 * Index the regular files of the `size`-byte archive `data`.  Paths are
 * normalised: empty and "." components are dropped (so "./sg00//def.json"
 * is "sg00/def.json"), as is any leading or trailing '/'.  The result is
 * sorted by path (strcmp order) with unique paths: when a path appears
 * twice, the later member wins, as it does when tar extracts.
 * @param files[out] an array of *count members; free it with
 *        nrtemu__tar_free().  data pointers point into `data`.
 * @return NRT_SUCCESS; NRT_INVALID with a detail for a malformed archive or
 *         more than `max_entries` members; NRT_RESOURCE without memory.
 */
NRT_STATUS nrtemu__tar_index(const char *func, const unsigned char *data,
                             size_t size, size_t max_entries,
                             struct nrtemu_neff_file **files, size_t *count);
void nrtemu__tar_free(struct nrtemu_neff_file *files, size_t count);

/* True when the n bytes at p are all zero (tar end blocks, padding). */
bool nrtemu__all_zero(const unsigned char *p, size_t n);

/*
 * For a reader that streams an archive: the bytes the 512-byte header
 * block `h` and its member's data take (512 + the size rounded up to 512),
 * or 0 for an all-zero block (two make the end of the archive).  False
 * when the size field is malformed, and for PAX headers, which may change
 * the size of the member after them.
 */
bool nrtemu__tar_header_span(const unsigned char *h, uint64_t *span);

#endif /* NRTEMU_TAR_H */
