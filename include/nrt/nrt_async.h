/*
 * nrt/nrt_async.h - the explicit asynchronous API of the libnrt ABI
 * ("nrta"): tensor transfers and executions queued on execution units,
 * with sequence ids to wait on.
 *
 * Clean-room header of the nrtpy project: names, signatures, enum values
 * and struct layouts are those of the Neuron runtime's header of the same
 * name (the 2.28 interface, with error trackers).
 *
 * The emulator's model of it:
 *  - Each vnc has one worker thread, started by the first request queued
 *    on the vnc and stopped by nrt_close().  It runs the vnc's requests one
 *    at a time in the order they were queued.
 *  - An execution unit (XU) is a (vnc, nrta_xu_t, queue) triple; its id is
 *    the top 16 bits of every sequence id it hands out, and its sequence
 *    numbers count 1, 2, 3...  Requests of one XU complete in order, so a
 *    sequence id is complete when its number is at most the XU's last
 *    completed one.  Queues per vnc: 2 for each tensor XU (read, write,
 *    op), 1 for compute, 3 for collectives.
 *  - A request's arguments are checked when it is queued (a bad one is
 *    refused with its status and never queued); failures while it runs
 *    (e.g. the runtime closed meanwhile) complete it anyway and are
 *    recorded in the error tracker passed with it, if any.
 *  - Tensor requests run on the vnc of their device tensor (a copy: of its
 *    destination when that is on the device, else of its source), or on
 *    vnc 0 when no device tensor is involved.
 *  - Ownership: buffers, tensors, models and tensor sets named by a
 *    request are borrowed until it completes; the caller keeps them alive
 *    and unchanged until then.
 *  - Collective requests (nrta_cc_*) are not available: the emulator
 *    supports a world of one rank only.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef NRT_NRT_ASYNC_H
#define NRT_NRT_ASYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sequence id: XU id in the top 16 bits, sequence number in the low 48. */
typedef uint64_t nrta_seq_t;
typedef uint16_t nrta_xu_id_t;

#define NRTA_SEQ_NUM_MAX ((1ull << 48) - 1)
#define NRTA_SEQ_GET_SEQ_NUM(seq) ((seq)&NRTA_SEQ_NUM_MAX)
#define NRTA_SEQ_GET_XU_ID(seq) ((seq) >> 48)

typedef enum {
    NRTA_XU_TENSOR_READ = 0,
    NRTA_XU_TENSOR_WRITE = 1,
    NRTA_XU_TENSOR_OP = 2,
    NRTA_XU_COMPUTE = 3,
    NRTA_XU_COLLECTIVES = 4,
    NRTA_XU_TYPE_NUM = 5,
} nrta_xu_t;

/* A failed request: its sequence id and its NRT_STATUS. */
typedef struct nrta_error {
    nrta_seq_t seq_id;
    uint64_t error_code;
} nrta_error_t;

typedef struct nrta_error_tracker nrta_error_tracker_t; /* opaque */

#if defined(__x86_64__) || defined(__aarch64__)
#ifdef __cplusplus
static_assert(sizeof(nrta_error_t) == 16, "nrta_error_t");
#else
_Static_assert(sizeof(nrta_error_t) == 16, "nrta_error_t");
#endif
#endif

/**
 * Queue a write of `size` bytes of `buf` into `tensor` at `offset` on
 * queue `queue` of the tensor-write XU.
 * @param err          tracker that records the request's failure; may be
 *                     NULL.
 * @param req_sequence [out] the request's sequence id.
 * @return NRT_SUCCESS (queued); NRT_INVALID for a bad argument, range or
 *         queue; NRT_UNINITIALIZED or NRT_CLOSED; NRT_RESOURCE.
 */
NRT_STATUS nrta_tensor_write(nrt_tensor_t *tensor, const void *buf,
                             uint64_t offset, uint64_t size, int queue,
                             nrta_error_tracker_t *err,
                             nrta_seq_t *req_sequence);

/** Queue a read of the tensor into `buf` (tensor-read XU); as above. */
NRT_STATUS nrta_tensor_read(void *buf, nrt_tensor_t *tensor, uint64_t offset,
                            uint64_t size, int queue,
                            nrta_error_tracker_t *err,
                            nrta_seq_t *req_sequence);

/**
 * Queue a tensor-to-tensor copy (tensor-op XU); the rules of
 * nrt_tensor_copy() apply.  As nrta_tensor_write() otherwise.
 */
NRT_STATUS nrta_tensor_copy(nrt_tensor_t *src, uint64_t src_offset,
                            nrt_tensor_t *dst, uint64_t dst_offset,
                            uint64_t size, int queue,
                            nrta_error_tracker_t *err,
                            nrta_seq_t *req_sequence);

/**
 * Queue an execution of `model` on the compute XU of its first vnc;
 * `queue` must be 0.  Completion counts for the output tensors as
 * nrt_execute() does (nrt_tensor_check_output_completion()).
 * @return as nrta_tensor_write(); NRT_INVALID also for a bad model.
 */
NRT_STATUS nrta_execute_schedule(nrt_model_t *model,
                                 const nrt_tensor_set_t *input,
                                 nrt_tensor_set_t *output, int queue,
                                 nrta_error_tracker_t *err,
                                 nrta_seq_t *req_sequence);

/**
 * Prepare a collective operation.  Not available in the emulator.
 * @return NRT_INVALID with a detail saying so, or for NULL arguments.
 */
NRT_STATUS nrta_cc_prepare(nrt_cc_comm_t *comm, nrt_tensor_list_t *input,
                           nrt_tensor_list_t *output, nrt_dtype_t dtype,
                           nrt_op_type_t op, nrt_cc_op_type_t cc_op,
                           nrt_cc_context_t **cc_ctx);

/** Queue a prepared collective.  As nrta_cc_prepare(). */
NRT_STATUS nrta_cc_schedule(nrt_cc_context_t **cc_ctx, int queue,
                            nrta_error_tracker_t *err,
                            nrta_seq_t *req_sequence);

/**
 * Whether the request `seq` has completed (successfully or not).
 * @return NRT_SUCCESS; NRT_INVALID for NULL, an XU that does not exist or
 *         a sequence number not handed out yet.
 */
NRT_STATUS nrta_is_completed(nrta_seq_t seq, bool *is_completed);

/**
 * The sequence id of the last request queued on XU (`lnc`, `xu`,
 * `queue`); its number is 0 when none was.  A request with this id or an
 * earlier one is complete once nrta_is_completed() says so.
 * @return NRT_SUCCESS; NRT_INVALID for NULL or an XU that does not exist.
 */
NRT_STATUS nrta_get_sequence(uint32_t lnc, nrta_xu_t xu, int queue,
                             nrta_seq_t *seq);

/**
 * A file descriptor (an eventfd) that becomes readable when `seq`
 * completes, for poll()/epoll.  Ownership: the caller closes it.
 * @return NRT_SUCCESS; NRT_INVALID as nrta_is_completed(); NRT_RESOURCE
 *         when no descriptor can be created.
 */
NRT_STATUS nrta_get_completion_handle(nrta_seq_t seq, int *fd);

/**
 * New error tracker for requests on vnc `lnc_idx`.
 * Ownership: destroy it with nrta_error_tracker_destroy(); requests still
 * queued with it keep it alive until they complete.
 * @return NRT_SUCCESS; NRT_INVALID for NULL or a vnc that is not visible;
 *         NRT_UNINITIALIZED or NRT_CLOSED; NRT_RESOURCE.
 */
NRT_STATUS nrta_error_tracker_create(uint32_t lnc_idx,
                                     nrta_error_tracker_t **error_tracker);

/** Destroy a tracker; NULL is accepted. */
void nrta_error_tracker_destroy(nrta_error_tracker_t *error_tracker);

/**
 * The failures recorded since the previous call, oldest first; each one
 * is returned once.
 * Ownership: the list belongs to the tracker and stays valid until the
 * next call on it or its destruction.
 * @return NRT_SUCCESS; NRT_INVALID for NULL.
 */
NRT_STATUS nrta_error_tracker_get_list(nrta_error_tracker_t *error_tracker,
                                       const nrta_error_t **list,
                                       size_t *error_count);

#ifdef __cplusplus
}
#endif

#endif /* NRT_NRT_ASYNC_H */
