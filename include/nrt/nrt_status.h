/*
 * nrt/nrt_status.h - status codes of the libnrt ABI.
 *
 * Clean-room header of the nrtpy project.  Names and numeric values match
 * the Neuron runtime so that binaries built against either header agree.
 */
#ifndef NRT_NRT_STATUS_H
#define NRT_NRT_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The one list of status codes.  Everything that names or describes a
 * status (the enum below, nrt_get_status_as_str() in the emulator, the
 * status names of nrtpy.NrtError) is generated from it.
 *
 * X(name, value, description)
 */
#define NRTEMU_STATUS_LIST(X)                                                \
    X(NRT_SUCCESS, 0, "success")                                             \
    X(NRT_FAILURE, 1, "non-specific failure")                                \
    X(NRT_INVALID, 2, "invalid argument, NEFF or I/O set")                   \
    X(NRT_INVALID_HANDLE, 3, "invalid handle")                               \
    X(NRT_RESOURCE, 4, "resource exhausted (memory, cores)")                 \
    X(NRT_TIMEOUT, 5, "operation timed out")                                 \
    X(NRT_HW_ERROR, 6, "hardware failure")                                   \
    X(NRT_QUEUE_FULL, 7, "execution queue full")                             \
    X(NRT_LOAD_NOT_ENOUGH_NC, 9, "not enough NeuronCores to load the NEFF")  \
    X(NRT_UNSUPPORTED_NEFF_VERSION, 10,                                      \
      "unsupported NEFF version or feature")                                 \
    X(NRT_FAIL_HOST_MEM_ALLOC, 11, "host memory allocation failed (legacy)") \
    X(NRT_UNINITIALIZED, 13, "runtime not initialized")                      \
    X(NRT_CLOSED, 14, "runtime closed")                                      \
    X(NRT_QUEUE_EMPTY, 15, "queue empty")                                    \
    X(NRT_EXEC_UNIT_UNRECOVERABLE, 101, "execution unit unrecoverable")      \
    X(NRT_EXEC_BAD_INPUT, 1002, "invalid input to execute")                  \
    X(NRT_EXEC_COMPLETED_WITH_NUM_ERR, 1003,                                 \
      "completed with numerical errors")                                     \
    X(NRT_EXEC_COMPLETED_WITH_ERR, 1004, "completed with errors")            \
    X(NRT_EXEC_NC_BUSY, 1005, "NeuronCore busy")                             \
    X(NRT_EXEC_OOB, 1006, "out-of-bounds indirect access")                   \
    X(NRT_COLL_PENDING, 1100, "collective still pending")                    \
    X(NRT_EXEC_HW_ERR_COLLECTIVES, 1200, "stuck in a collective")            \
    X(NRT_EXEC_HW_ERR_HBM_UE, 1201, "uncorrectable HBM error")               \
    X(NRT_EXEC_HW_ERR_NC_UE, 1202, "NeuronCore SRAM parity error")           \
    X(NRT_EXEC_HW_ERR_DMA_ABORT, 1203, "DMA engine error")                   \
    X(NRT_EXEC_SW_NQ_OVERFLOW, 1204, "notification queue overflow")          \
    X(NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE, 1205, "repairable HBM error")       \
    X(NRT_NETWORK_PROXY_FAILURE, 1206, "network proxy failure")

#define NRTEMU_STATUS_ENUM_ENTRY(name, value, text) name = value,
typedef enum { NRTEMU_STATUS_LIST(NRTEMU_STATUS_ENUM_ENTRY) } NRT_STATUS;
#undef NRTEMU_STATUS_ENUM_ENTRY

/**
 * Name of a status, e.g. "NRT_INVALID".  Never NULL: unknown values give
 * "UNKNOWN STATUS".  Callable at any time, from any thread.
 * Ownership: static string.
 */
const char *nrt_get_status_as_str(NRT_STATUS status);

#ifdef __cplusplus
}
#endif

#endif /* NRT_NRT_STATUS_H */
