/*
 * nrt/nrtemu.h - extras of the nrtpy emulator, outside the libnrt ABI.
 *
 * These functions exist only in the emulator's libnrt.so.1.  Clients that
 * may also run on the real runtime should resolve them with dlsym() and
 * treat their absence as "not the emulator".  This header also includes
 * every libnrt header, for code that wants the whole ABI at once.
 */
#ifndef NRT_NRTEMU_H
#define NRT_NRTEMU_H

#include <stddef.h>
#include <stdint.h>

#include "nrt/ndebug_stream.h"
#include "nrt/nrt.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_async_sendrecv.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_profile.h"
#include "nrt/nrt_sys_trace.h"
#include "nrt/nrt_version.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The element types the emulator knows: the one list that the emulator's
 * dtype table, the nrtpy extension's and the Python package's are all
 * generated from.  Columns:
 *   suffix     NRTEMU_DTYPE_<suffix> inside the emulator
 *   name       the NumPy / ml_dtypes name; also the "dtype" string of the
 *              def.json var entries that nrtpy writes
 *   neff_name  the NEFF DMA-descriptor name of the type ("" where the
 *              hardware has none); accepted in def.json too
 *   size       bytes per element
 *   code       the libnrt nrt_dtype_t (NRT_DTYPE_UNKNOWN where libnrt has
 *              no code; both e4m3 variants share NRT_DTYPE_FP8_E4).  A
 *              model's fp8 tensors are another matter: like the real
 *              runtime, nrt_get_model_tensor_info() reports them as
 *              NRT_DTYPE_INT8 (nrtemu_get_model_tensor_dtype() names them)
 *   kind       NumPy's kind letter: 'b' bool, 'i' signed, 'u' unsigned,
 *              'f' floating (16- and 8-bit floats included)
 * The first row with a code is the type a bare nrt_dtype_t stands for.
 */
#define NRTEMU_DTYPE_LIST(X)                                            \
    X(UNKNOWN, "unknown", "", 0, NRT_DTYPE_UNKNOWN, 'V')                \
    X(BOOL, "bool", "", 1, NRT_DTYPE_UNKNOWN, 'b')                      \
    X(INT8, "int8", "int8", 1, NRT_DTYPE_INT8, 'i')                     \
    X(INT16, "int16", "int16", 2, NRT_DTYPE_INT16, 'i')                 \
    X(INT32, "int32", "int32", 4, NRT_DTYPE_INT32, 'i')                 \
    X(INT64, "int64", "int64", 8, NRT_DTYPE_INT64, 'i')                 \
    X(UINT8, "uint8", "uint8", 1, NRT_DTYPE_UINT8, 'u')                 \
    X(UINT16, "uint16", "uint16", 2, NRT_DTYPE_UINT16, 'u')             \
    X(UINT32, "uint32", "uint32", 4, NRT_DTYPE_UINT32, 'u')             \
    X(UINT64, "uint64", "uint64", 8, NRT_DTYPE_UINT64, 'u')             \
    X(FLOAT16, "float16", "float16", 2, NRT_DTYPE_FLOAT16, 'f')         \
    X(BFLOAT16, "bfloat16", "bfloat16", 2, NRT_DTYPE_BFLOAT16, 'f')     \
    X(FLOAT32, "float32", "float32", 4, NRT_DTYPE_FLOAT32, 'f')         \
    X(FLOAT64, "float64", "", 8, NRT_DTYPE_UNKNOWN, 'f')                \
    X(FLOAT8_E4M3, "float8_e4m3", "float8e4", 1, NRT_DTYPE_FP8_E4, 'f') \
    X(FLOAT8_E4M3FN, "float8_e4m3fn", "", 1, NRT_DTYPE_FP8_E4, 'f')     \
    X(FLOAT8_E5M2, "float8_e5m2", "float8e5", 1, NRT_DTYPE_FP8_E5, 'f') \
    X(FLOAT8_E3M4, "float8_e3m4", "float8e3", 1, NRT_DTYPE_FP8_E3, 'f')

/* One row of NRTEMU_DTYPE_LIST. */
typedef struct nrtemu_dtype_info {
    const char *name;      /* NumPy / ml_dtypes name */
    const char *neff_name; /* NEFF DMA name, "" when none */
    size_t size;           /* bytes per element */
    nrt_dtype_t code;      /* libnrt code */
    char kind;             /* 'b', 'i', 'u', 'f'; 'V' for "unknown" */
} nrtemu_dtype_info_t;

/**
 * Row `index` of the emulator's dtype table, for 0 <= index < the count
 * written to *count (which may be NULL); NULL past the end.  Row 0 is
 * "unknown".  Ownership: static data.  Thread safety: any thread.
 */
const nrtemu_dtype_info_t *nrtemu_dtype_info(size_t index, size_t *count);

/**
 * The exact element type of entry `index` of nrt_get_model_tensor_info()'s
 * array for `model`, as a name of the dtype table.  Where that array's
 * code cannot say it (bool and float64 have none; every fp8 variant is
 * reported as NRT_DTYPE_INT8, as the real runtime reports it), this can.
 * "unknown" when the NEFF gives no dtype.
 * NRT_INVALID for a bad model, index or NULL pointer.
 * Ownership: *dtype_name is static.  Thread safety: any thread, as long
 * as the model is not unloaded meanwhile.
 */
NRT_STATUS nrtemu_get_model_tensor_dtype(nrt_model_t *model, uint64_t index,
                                         const char **dtype_name);

/*
 * The NEFF container's 1024-byte header: the one description that the
 * emulator's reader and nrtpy's writer (nrtpy.neff, through
 * _nrtpy.NEFF_HEADER_FIELDS) are both generated from.
 *   X(name, offset, length, kind)
 * kind: U64 / U32 little-endian unsigned integers; TEXT a NUL-padded
 * string (UTF-8 by convention); BYTES raw bytes.  The payload, a tar
 * archive (gzip-compressed or not), follows the header.
 */
#define NRTEMU_NEFF_HEADER_SIZE 1024
/* feature_bits outside this mask make a NEFF unsupported. */
#define NRTEMU_NEFF_FEATURES_SUPPORTED 0x80000000000000ffull
#define NRTEMU_NEFF_HEADER_FIELDS(X)        \
    X(pkg_version, 0x000, 8, U64)           \
    X(header_size, 0x008, 8, U64)           \
    X(data_size, 0x010, 8, U64)             \
    X(neff_version_major, 0x018, 8, U64)    \
    X(neff_version_minor, 0x020, 8, U64)    \
    X(neff_build_version, 0x028, 128, TEXT) \
    X(num_tpb, 0x0a8, 4, U32)               \
    X(hash, 0x0ac, 32, BYTES)               \
    X(uuid, 0x0cc, 16, BYTES)               \
    X(name, 0x0dc, 256, TEXT)               \
    X(requested_tpb_count, 0x1dc, 4, U32)   \
    X(tpb_per_node, 0x1e0, 64, BYTES)       \
    X(feature_bits, 0x220, 8, U64)          \
    X(lnc_size, 0x228, 4, U32)

/**
 * Read the NEFF image of `size` bytes with the reader nrt_load() uses
 * (same limits: bounded inflation, entry count, JSON depth and size) and
 * describe it as one JSON object:
 *   {"header": {<every NRTEMU_NEFF_HEADER_FIELDS field: integers as
 *               numbers, TEXT as strings, BYTES as lowercase hex>},
 *    "inputs": [{"name", "size", "shape", "dtype"}...],   NEFF order
 *    "outputs": [...],
 *    "subgraphs": ["sg00", ...],
 *    "emulator_program": true when every subgraph has one,
 *    "files": [archive members, sorted]}
 * "shape" is [size] and "dtype" "unknown" where the NEFF does not say.
 * Needs no nrt_init().  NRT_INVALID or NRT_UNSUPPORTED_NEFF_VERSION for a
 * bad NEFF (detail in nrtemu_last_error()), NRT_RESOURCE when out of
 * memory.
 * Ownership: *json_out is the caller's; free it with nrtemu_buffer_free().
 * Thread safety: any thread.
 */
NRT_STATUS nrtemu_neff_describe(const void *image, size_t size,
                                char **json_out);

/** Free a buffer the emulator returned to the caller; NULL is accepted. */
void nrtemu_buffer_free(char *buffer);

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
