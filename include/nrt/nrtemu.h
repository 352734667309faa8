/*
 * nrt/nrtemu.h - extras of the nrtpy emulator, outside the libnrt ABI.
 *
 * These functions exist only in the emulator's libnrt.so.1.  Clients that
 * may also run on the real runtime should resolve them with dlsym() and
 * treat their absence as "not the emulator".
 */
#ifndef NRT_NRTEMU_H
#define NRT_NRTEMU_H

#include "nrt/nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Description of the last failure of an nrt_* call on the calling thread,
 * e.g. "nrt_tensor_allocate: 4096 bytes requested on vnc 0, 1024 free".
 * Empty when no call has failed yet.
 * Ownership: thread-local storage, valid until the next failing call on
 * the same thread.
 */
const char *nrtemu_last_error(void);

/**
 * Name of the emulated instance profile, e.g. "trn1.2xlarge", as chosen by
 * NRTPY_EMU_INSTANCE.  Callable at any time; "unknown" when the variable
 * names no profile.  Ownership: static string.
 */
const char *nrtemu_instance_name(void);

#ifdef __cplusplus
}
#endif

#endif /* NRT_NRTEMU_H */
