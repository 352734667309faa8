/*
 * env_parse.h - parsers of the emulator's environment values (internal).
 *
 * Pure functions: no globals, no logging, no allocation, so they are unit
 * tested directly (tests/c/test_env_parse.c).  The NRT_STATUS functions
 * write a reason without the variable's name into `err` on failure; the
 * caller adds the name and the quoted value.
 */
#ifndef NRTEMU_ENV_PARSE_H
#define NRTEMU_ENV_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"

/* True when `text` holds nothing but blanks: such a variable counts as unset.
 */
bool nrtemu__env_blank(const char *text);

/*
 * NEURON_RT_VISIBLE_CORES: "0", "0-3", "3,4,5", "3-5,6", blanks allowed
 * around numbers and separators.  The cores must be increasing and
 * contiguous and lie in [0, total).
 * @param first[out], count[out] the range selected.
 * @return NRT_SUCCESS or NRT_INVALID.
 */
NRT_STATUS nrtemu__parse_visible_cores(const char *text, uint32_t total,
                                       uint32_t *first, uint32_t *count,
                                       char *err, size_t err_len);

/*
 * NEURON_RT_NUM_CORES: a decimal count; 0 means all `total` cores.
 * @return NRT_SUCCESS, NRT_INVALID when not a number, NRT_RESOURCE when
 *         more than `total`.
 */
NRT_STATUS nrtemu__parse_num_cores(const char *text, uint32_t total,
                                   uint32_t *count, char *err, size_t err_len);

/*
 * A byte count with an optional binary suffix: "4096", "64K", "64KiB",
 * "512 MB", "1G", "2TiB".  Suffixes are case-insensitive and K, KB and KiB
 * all mean 1024 (the values configure memory sizes, which are binary).
 * @return NRT_SUCCESS or NRT_INVALID (also on overflow).
 */
NRT_STATUS nrtemu__parse_byte_size(const char *text, uint64_t *bytes,
                                   char *err, size_t err_len);

/* Logical NeuronCore size: "1" or "2".  @return NRT_SUCCESS or NRT_INVALID. */
NRT_STATUS nrtemu__parse_lnc(const char *text, uint32_t *lnc, char *err,
                             size_t err_len);

/*
 * NEURON_RT_LOG_LEVEL value, case-insensitive: QUIET, ERROR, WARNING or
 * WARN, INFO, DEBUG, TRACE.
 * @return an enum nrtemu_log_level value, or -1 when unknown.
 */
int nrtemu__parse_log_level(const char *text);

/*
 * A boolean setting: 1/0, true/false in any case, with surrounding blanks.
 * @return false (and `*out` untouched) for anything else.
 */
bool nrtemu__parse_bool(const char *text, bool *out);

/* NRTPY_EMU_NAMESPACE: [A-Za-z0-9._-]{1,64}, and not "." or "..". */
bool nrtemu__namespace_valid(const char *name);

#endif /* NRTEMU_ENV_PARSE_H */
