/*
 * nrt/ndebug_stream.h - the debug event stream of the libnrt ABI: one
 * client per logical NeuronCore reads the events the device emits (debug
 * tensor reads).
 *
 * Clean-room header of the nrtpy project: names, signatures, enum values
 * and struct layouts are those of the Neuron runtime's header of the same
 * name.  The emulated cores emit no debug events: a connected client's
 * stream is pollable and stays empty.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef NRT_NDEBUG_STREAM_H
#define NRT_NDEBUG_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nrt/nrt_status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    NDEBUG_STREAM_EVENT_TYPE_INVALID = 0,
    NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ = 1,
} ndebug_stream_event_type_t;

typedef struct ndebug_stream_event_header {
    uint64_t data_size; /* bytes of the payload that follows */
    uint32_t type;      /* ndebug_stream_event_type_t */
    char reserved[52];
} ndebug_stream_event_header_t;

typedef struct ndebug_stream_payload_debug_tensor_read {
    char prefix[512];
    uint32_t logical_nc_id;
    uint32_t pipe;
    char tensor_dtype[16];
    uint64_t tensor_shape[8];
    uint64_t tensor_data_size;
    char reserved0[416];
    char tensor_data[]; /* tensor_data_size bytes */
} ndebug_stream_payload_debug_tensor_read_t;

#if defined(__x86_64__) || defined(__aarch64__)
#ifdef __cplusplus
static_assert(sizeof(ndebug_stream_event_header_t) == 64,
              "ndebug_stream_event_header_t");
#else
_Static_assert(sizeof(ndebug_stream_event_header_t) == 64,
               "ndebug_stream_event_header_t");
_Static_assert(offsetof(ndebug_stream_payload_debug_tensor_read_t,
                        tensor_data) == 1024,
               "ndebug_stream_payload_debug_tensor_read_t");
#endif
#endif

/**
 * Connect the debug client of logical core `logical_nc_idx` (a visible
 * vnc); events emitted before the connection are not kept.
 * @param stream_fd [out] a pollable descriptor, readable when an event is
 *                  waiting.  Ownership: close it with
 *                  nrt_debug_client_connect_close(), not close().
 * @return NRT_SUCCESS; NRT_INVALID for NULL, a vnc that is not visible or
 *         a vnc that already has a client; NRT_UNINITIALIZED or
 *         NRT_CLOSED; NRT_RESOURCE.
 */
NRT_STATUS nrt_debug_client_connect(int logical_nc_idx, int *stream_fd);

/** Disconnect a client; a descriptor that is not one is ignored. */
void nrt_debug_client_connect_close(int stream_fd);

/**
 * Take the oldest waiting event.
 * @param payload [out] malloc'd payload of header->data_size bytes; the
 *                caller frees it.
 * @return NRT_SUCCESS; NRT_QUEUE_EMPTY when no event is waiting (always, on
 *         the emulator); NRT_INVALID for NULL or a descriptor that is not a
 *         connected client.
 */
NRT_STATUS nrt_debug_client_read_one_event(
    int stream_fd, ndebug_stream_event_header_t *header, void **payload);

#ifdef __cplusplus
}
#endif

#endif /* NRT_NDEBUG_STREAM_H */
