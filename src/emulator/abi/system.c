/*
 * system.c - the device and system queries of the ABI, and the
 * experimental extras that need hardware the emulator does not have.
 *
 * What the emulated instance has is answered faithfully (device ids, the
 * routing-id map).  What it lacks (mapped HBM regions, dma-buf export, EFA
 * NICs and point-to-point transfers over them, pool-engine microcode, the
 * runtime's internal API trace, the NCCL network plugin) is refused with
 * NRT_INVALID and a detail naming the missing feature, as the runtime does
 * on an instance without it.
 */
#include <pthread.h>
#include <stdio.h>

#include "nrt/nrt.h"
#include "nrt/nrt_async_sendrecv.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrtemu.h"

#include "util/error.h"
#include "util/export.h"
#include "util/fork.h"
#include "device/instance.h"
#include "abi/runtime.h"

NRTEMU_EXPORT NRT_STATUS
nrt_get_hbm_mmap_va(int device_id, int hbm_idx, void **addr, size_t *size)
{
    if (addr == NULL || size == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "NULL address or size pointer");
    }
    if (device_id < 0 || hbm_idx < 0) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "negative device %d or HBM index %d", device_id,
                              hbm_idx);
    }
    return nrtemu__unsupported(__func__, "mapping HBM into the process",
                               "tensor memory is host memory; use "
                               "nrt_tensor_get_va()");
}

NRTEMU_EXPORT NRT_STATUS
nrt_get_dmabuf_fd(uint64_t va, uint64_t size, int *fd)
{
    if (fd == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL fd pointer");
    }
    if (va == 0 || size == 0) {
        return nrtemu__reject(
            NRT_INVALID, __func__, "empty region (va 0x%llx, %llu bytes)",
            (unsigned long long)va, (unsigned long long)size);
    }
    return nrtemu__unsupported(__func__, "dma-buf export for EFA peer-direct",
                               NULL);
}

NRTEMU_EXPORT NRT_STATUS
nrt_get_attached_efa_bdf(const void *va, char *efa_bdf, size_t *len)
{
    if (va == NULL || efa_bdf == NULL || len == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "NULL address, buffer or length pointer");
    }
    return nrtemu__unsupported(__func__, "an EFA NIC",
                               "the emulated instance has none");
}

NRTEMU_EXPORT NRT_STATUS
nrt_host_device_id_get(int neuron_dev, uint32_t *host_device_id)
{
    struct nrtemu_config cfg;
    NRT_STATUS st;

    if (host_device_id == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL id pointer");
    }
    st = nrtemu__runtime_config(__func__, &cfg);
    if (st != NRT_SUCCESS) {
        return st;
    }
    if (neuron_dev < 0 || (uint32_t)neuron_dev >= cfg.instance->devices) {
        return nrtemu__reject(
            NRT_INVALID, __func__, "device %d does not exist (%s has %u)",
            neuron_dev, cfg.instance->name, cfg.instance->devices);
    }
    /* No container remapping: the emulated devices are the host's. */
    *host_device_id = (uint32_t)neuron_dev;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_host_device_id_rid_map_get(uint32_t *count, uint32_t *host_did_to_rid_map)
{
    struct nrtemu_config cfg;
    uint32_t devices;
    NRT_STATUS st;

    if (count == NULL || host_did_to_rid_map == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "NULL count or map pointer");
    }
    st = nrtemu__runtime_config(__func__, &cfg);
    if (st != NRT_SUCCESS) {
        return st;
    }
    devices = cfg.instance->devices;
    if (*count < devices) {
        uint32_t given = *count;
        *count = devices;
        return nrtemu__reject(NRT_RESOURCE, __func__,
                              "map of %u entries, %s has %u devices", given,
                              cfg.instance->name, devices);
    }
    /* The emulator routes device i as i. */
    for (uint32_t i = 0; i < devices; i++) {
        host_did_to_rid_map[i] = i;
    }
    *count = devices;
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_memcpy_to_device(void *dest, const void *src, size_t size)
{
    if ((dest == NULL || src == NULL) && size > 0) {
        return nrtemu__reject(NRT_INVALID, __func__,
                              "NULL destination or source");
    }
    /* No HBM region is ever mapped (nrt_get_hbm_mmap_va), so no
     * destination can be device memory. */
    return nrtemu__unsupported(__func__, "mapped device memory",
                               "use nrt_tensor_write()");
}

NRTEMU_EXPORT NRT_STATUS
nrt_trace_start(bool trace_mem)
{
    (void)trace_mem;
    return nrtemu__unsupported(__func__, "the runtime's internal API trace",
                               "use nrt_sys_trace_start()");
}

NRTEMU_EXPORT NRT_STATUS
nrt_trace_stop(const char *filename)
{
    if (filename == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL filename");
    }
    return nrtemu__unsupported(__func__, "the runtime's internal API trace",
                               "use nrt_sys_trace_start()");
}

NRTEMU_EXPORT NRT_STATUS
nrt_set_pool_eng_ucode(const nrt_ucode_info *ucode_info)
{
    if (ucode_info == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL ucode info");
    }
    return nrtemu__unsupported(__func__, "pool engine microcode",
                               "the emulated cores run no microcode");
}

NRTEMU_EXPORT void *
nrt_get_libnccl_net(int *err, char *err_msg, size_t err_msg_size)
{
    NRT_STATUS st = nrtemu__unsupported(__func__, "the NCCL network plugin",
                                        "collectives need one rank");

    if (err != NULL) {
        *err = (int)st;
    }
    if (err_msg != NULL && err_msg_size > 0) {
        snprintf(err_msg, err_msg_size, "%s", nrtemu_last_error());
    }
    return NULL;
}

/*
 * The legacy implicit-async mode is gone from the runtime: executions are
 * synchronous, so a registered callback is kept (as the runtime keeps it)
 * but has nothing to be called for.
 */
static struct {
    pthread_mutex_t lock;
    NRT_ASYNC_EXEC_STATUS_CALLBACK callback;
    void *params;
} async_callback = {.lock = PTHREAD_MUTEX_INITIALIZER};

void
nrtemu__system_atfork(enum nrtemu_fork_phase phase)
{
    nrtemu__fork_leaf_lock(&async_callback.lock, phase);
}

NRTEMU_EXPORT NRT_STATUS
nrt_register_async_exec_callback(NRT_ASYNC_EXEC_STATUS_CALLBACK callback,
                                 void *params)
{
    pthread_mutex_lock(&async_callback.lock);
    async_callback.callback = callback;
    async_callback.params = params;
    pthread_mutex_unlock(&async_callback.lock);
    return NRT_SUCCESS;
}

/* ------------------------------------------- point-to-point send/receive */

#define NO_EFA_HINT "the emulated instance has no EFA network"

/* An absolute host logical-core id of the instance. */
static NRT_STATUS
host_lnc_check(const char *func, int lnc, const char *what)
{
    struct nrtemu_config cfg;
    NRT_STATUS st = nrtemu__runtime_config(func, &cfg);

    if (st != NRT_SUCCESS) {
        return st;
    }
    if (lnc < 0 || (uint32_t)lnc >= cfg.total_vnc) {
        return nrtemu__reject(NRT_INVALID, func,
                              "%s %d does not exist (%s has %u)", what, lnc,
                              cfg.instance->name, cfg.total_vnc);
    }
    return NRT_SUCCESS;
}

NRTEMU_EXPORT NRT_STATUS
nrt_async_sendrecv_get_max_num_communicators_per_lnc(int *num)
{
    if (num == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL count pointer");
    }
    return nrtemu__unsupported(__func__, "async send/receive", NO_EFA_HINT);
}

NRTEMU_EXPORT NRT_STATUS
nrt_async_sendrecv_get_max_num_pending_request(int *num)
{
    if (num == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL count pointer");
    }
    return nrtemu__unsupported(__func__, "async send/receive", NO_EFA_HINT);
}

NRTEMU_EXPORT NRT_STATUS
nrt_async_sendrecv_init(int lnc)
{
    NRT_STATUS st = host_lnc_check(__func__, lnc, "logical core");

    if (st != NRT_SUCCESS) {
        return st;
    }
    return nrtemu__unsupported(__func__, "async send/receive", NO_EFA_HINT);
}

NRTEMU_EXPORT NRT_STATUS
nrt_async_sendrecv_close(int lnc)
{
    NRT_STATUS st = host_lnc_check(__func__, lnc, "logical core");

    if (st != NRT_SUCCESS) {
        return st;
    }
    return nrtemu__unsupported(__func__, "async send/receive", NO_EFA_HINT);
}

NRTEMU_EXPORT NRT_STATUS
nrt_async_sendrecv_flush(int lnc)
{
    NRT_STATUS st = host_lnc_check(__func__, lnc, "logical core");

    if (st != NRT_SUCCESS) {
        return st;
    }
    return nrtemu__unsupported(__func__, "async send/receive", NO_EFA_HINT);
}

static NRT_STATUS
open_comm(const char *func, const char *peer_ip, int lnc,
          nrt_async_sendrecv_comm_t **comm)
{
    NRT_STATUS st;

    if (peer_ip == NULL || comm == NULL) {
        return nrtemu__reject(NRT_INVALID, func,
                              "NULL peer address or communicator pointer");
    }
    st = host_lnc_check(func, lnc, "logical core");
    if (st != NRT_SUCCESS) {
        return st;
    }
    return nrtemu__unsupported(func, "async send/receive", NO_EFA_HINT);
}

NRTEMU_EXPORT NRT_STATUS
nrt_async_sendrecv_connect(const char *peer_ip, int peer_lnc, int lnc,
                           nrt_async_sendrecv_comm_t **send_comm)
{
    (void)peer_lnc; /* the peer's instance is unknown here */
    return open_comm(__func__, peer_ip, lnc, send_comm);
}

NRTEMU_EXPORT NRT_STATUS
nrt_async_sendrecv_accept(const char *peer_ip, int peer_lnc, int lnc,
                          nrt_async_sendrecv_comm_t **recv_comm)
{
    (void)peer_lnc;
    return open_comm(__func__, peer_ip, lnc, recv_comm);
}

/* No communicator or request is ever created: none can be valid. */
static NRT_STATUS
no_such_handle(const char *func, const void *handle, const void *out,
               const char *what)
{
    if (handle == NULL || out == NULL) {
        return nrtemu__reject(NRT_INVALID, func, "NULL %s or result pointer",
                              what);
    }
    return nrtemu__reject(NRT_INVALID, func,
                          "not a %s of this runtime (async send/receive is "
                          "not available in the nrtpy emulator: " NO_EFA_HINT
                          ")",
                          what);
}

NRTEMU_EXPORT NRT_STATUS
nrt_async_sendrecv_test_comm(nrt_async_sendrecv_comm_t *comm, bool *done)
{
    return no_such_handle(__func__, comm, done, "communicator");
}

NRTEMU_EXPORT NRT_STATUS
nrt_async_sendrecv_send_tensor(nrt_tensor_t *tensor, size_t offset,
                               size_t length,
                               nrt_async_sendrecv_comm_t *send_comm,
                               nrt_async_sendrecv_request_t **request)
{
    (void)offset;
    (void)length;
    if (tensor == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL tensor");
    }
    return no_such_handle(__func__, send_comm, request, "communicator");
}

NRTEMU_EXPORT NRT_STATUS
nrt_async_sendrecv_recv_tensor(nrt_tensor_t *tensor, size_t offset,
                               size_t length,
                               nrt_async_sendrecv_comm_t *recv_comm,
                               nrt_async_sendrecv_request_t **request)
{
    (void)offset;
    (void)length;
    if (tensor == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL tensor");
    }
    return no_such_handle(__func__, recv_comm, request, "communicator");
}

NRTEMU_EXPORT NRT_STATUS
nrt_async_sendrecv_test_request(nrt_async_sendrecv_request_t *request,
                                bool *done, size_t *size)
{
    if (size == NULL) {
        return nrtemu__reject(NRT_INVALID, __func__, "NULL size pointer");
    }
    return no_such_handle(__func__, request, done, "request");
}
