/*
 * nrt/nrt_async_sendrecv.h - experimental point-to-point tensor transfers
 * between logical cores of different hosts, over EFA.
 *
 * Clean-room header of the nrtpy project: names and signatures are those
 * of the Neuron runtime's header of the same name.  The `lnc` ids are
 * absolute host logical-core ids.
 *
 * The emulated instance has no EFA network: every call checks its
 * arguments, then returns NRT_INVALID with a detail saying that transfers
 * are not available; no communicator or request is ever created.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef NRT_NRT_ASYNC_SENDRECV_H
#define NRT_NRT_ASYNC_SENDRECV_H

#include "nrt/nrt.h"
#include "nrt/nrt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nrt_async_sendrecv_comm nrt_async_sendrecv_comm_t; /* opaque */
typedef struct nrt_async_sendrecv_request
    nrt_async_sendrecv_request_t; /* opaque */

/** Communicators one logical core may hold. */
NRT_STATUS nrt_async_sendrecv_get_max_num_communicators_per_lnc(int *num);
/** Requests one communicator may have pending. */
NRT_STATUS nrt_async_sendrecv_get_max_num_pending_request(int *num);
/** Prepare logical core `lnc` for transfers. */
NRT_STATUS nrt_async_sendrecv_init(int lnc);
/** End the transfers of logical core `lnc`. */
NRT_STATUS nrt_async_sendrecv_close(int lnc);
/** Open a sending communicator to `peer_lnc` at `peer_ip`. */
NRT_STATUS nrt_async_sendrecv_connect(const char *peer_ip, int peer_lnc,
                                      int lnc,
                                      nrt_async_sendrecv_comm_t **send_comm);
/** Accept a receiving communicator from `peer_lnc` at `peer_ip`. */
NRT_STATUS nrt_async_sendrecv_accept(const char *peer_ip, int peer_lnc,
                                     int lnc,
                                     nrt_async_sendrecv_comm_t **recv_comm);
/** Whether a communicator is ready. */
NRT_STATUS nrt_async_sendrecv_test_comm(nrt_async_sendrecv_comm_t *comm,
                                        bool *done);
/** Queue a send of [offset, offset + length) of `tensor`. */
NRT_STATUS
nrt_async_sendrecv_send_tensor(nrt_tensor_t *tensor, size_t offset,
                               size_t length,
                               nrt_async_sendrecv_comm_t *send_comm,
                               nrt_async_sendrecv_request_t **request);
/** Queue a receive into [offset, offset + length) of `tensor`. */
NRT_STATUS
nrt_async_sendrecv_recv_tensor(nrt_tensor_t *tensor, size_t offset,
                               size_t length,
                               nrt_async_sendrecv_comm_t *recv_comm,
                               nrt_async_sendrecv_request_t **request);
/** Whether a request is done, and how many bytes it moved. */
NRT_STATUS
nrt_async_sendrecv_test_request(nrt_async_sendrecv_request_t *request,
                                bool *done, size_t *size);
/** Wait for the received data of logical core `lnc` to be visible. */
NRT_STATUS nrt_async_sendrecv_flush(int lnc);

#ifdef __cplusplus
}
#endif

#endif /* NRT_NRT_ASYNC_SENDRECV_H */
