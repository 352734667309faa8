/*
 * hbm.h - device memory accounting per vnc (internal).
 *
 * Each vnc has a byte budget (bytes_limit) and a count of bytes held by
 * live device tensors (bytes_used).  The accounting of a vnc belongs to one
 * runtime epoch: nrt_init() opens the visible vncs under its epoch and
 * nrt_close() ends it.  A charge or uncharge for another epoch is refused
 * or ignored, so tensors that outlive their runtime never corrupt the
 * counts of the next one.
 */
#ifndef NRTEMU_HBM_H
#define NRTEMU_HBM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

/*
 * Records and returns why a charge to `vnc` for a tensor of `epoch` is
 * refused when the vnc is not open in that epoch: the runtime closed or
 * reopened meanwhile, or the vnc is not one of its cores.  The runtime,
 * which owns the epochs, gives it (so that this layer never calls up).
 */
typedef NRT_STATUS (*nrtemu_hbm_refusal)(const char *func, int vnc,
                                         uint32_t epoch);

/* Start accounting for vncs [0, num_vnc) in `epoch`, all empty; `refuse`
 * explains the charges refused from then on. */
void nrtemu__hbm_open(uint32_t epoch, uint32_t num_vnc, size_t limit,
                      nrtemu_hbm_refusal refuse);

/* End the accounting of every vnc; later uncharges are ignored. */
void nrtemu__hbm_close(void);

/*
 * Take `size` bytes of the budget of `vnc` for a tensor of `epoch`.
 * @return NRT_SUCCESS; NRT_RESOURCE when the budget is exhausted; NRT_CLOSED
 *         or NRT_INVALID when the vnc is not open in `epoch` (the runtime
 *         closed meanwhile, or the vnc is not visible).
 */
NRT_STATUS nrtemu__hbm_charge(const char *func, int vnc, uint32_t epoch,
                              size_t size);

/* Give back a charge; ignored when `epoch` is no longer the vnc's. */
void nrtemu__hbm_uncharge(int vnc, uint32_t epoch, size_t size);

/* Current counts; false when `vnc` is not open in `epoch`. */
bool nrtemu__hbm_stats(uint32_t vnc, uint32_t epoch, size_t *used,
                       size_t *limit);

#endif /* NRTEMU_HBM_H */
