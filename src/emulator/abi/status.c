/*
 * status.c - status names, generated from the one list in nrt_status.h.
 */
#include "nrt/nrt.h"

#include "util/export.h"

NRTEMU_EXPORT const char *
nrt_get_status_as_str(NRT_STATUS status)
{
    /*
     * A switch rather than a table: the values are sparse (0..15, 101,
     * 1002..1206), and the compiler turns the cases into a jump table or
     * a binary search as it sees fit.
     */
    switch ((int)status) {
#define NRTEMU_STATUS_NAME_CASE(name, value, text) \
    case value:                                    \
        return #name;
        NRTEMU_STATUS_LIST(NRTEMU_STATUS_NAME_CASE)
#undef NRTEMU_STATUS_NAME_CASE
    }
    return "UNKNOWN STATUS";
}
