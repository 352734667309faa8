/*
 * instance.h - emulated instance profiles and the configuration read from
 * the environment (internal).
 */
#ifndef NRTEMU_INSTANCE_H
#define NRTEMU_INSTANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

/* Largest instance: trn2.48xlarge, 16 devices x 8 physical cores. */
#define NRTEMU_MAX_PHYSICAL_CORES 128
/* Logical cores are never more than physical ones (LNC >= 1). */
#define NRTEMU_MAX_VNC NRTEMU_MAX_PHYSICAL_CORES

#define NRTEMU_DEFAULT_INSTANCE "trn1.2xlarge"

struct nrtemu_instance {
    const char *name;            /* e.g. "trn1.2xlarge" */
    uint32_t family;             /* NRT_INSTANCE_* */
    uint32_t size;               /* NRT_INSTANCE_SIZE_* */
    const char *arch_name;       /* fits nrt_instance_info_t.arch_name */
    const char *device_revision; /* fits .device_revision */
    uint32_t devices;
    uint32_t cores_per_device; /* physical NeuronCores */
    bool lnc_configurable;     /* Trn2: NEURON_LOGICAL_NC_CONFIG applies */
    uint32_t default_lnc;
    uint64_t hbm_per_device; /* bytes */
};

/* What nrt_init() and the pre-init queries derive from the environment. */
struct nrtemu_config {
    const struct nrtemu_instance *instance;
    uint32_t lnc; /* physical cores per vnc */
    uint32_t vnc_per_device;
    uint32_t total_vnc;   /* whole instance, visibility ignored */
    uint64_t hbm_per_vnc; /* bytes_limit of each vnc */
    /* NRTPY_EMU_POISON: fresh tensors read as signalling NaNs, not zero. */
    bool poison;
};

/* NULL when `name` is not a known profile. */
const struct nrtemu_instance *nrtemu__instance_find(const char *name);

/*
 * Read NRTPY_EMU_INSTANCE, the logical core size (NEURON_LOGICAL_NC_CONFIG
 * or its alias NEURON_RT_VIRTUAL_CORE_SIZE) and, when `with_memory`,
 * NRTPY_EMU_HBM_PER_CORE and NRTPY_EMU_POISON.  Failures are recorded against
 * `func`.
 * @return NRT_SUCCESS or NRT_INVALID.
 */
NRT_STATUS nrtemu__config_from_env(const char *func, bool with_memory,
                                   struct nrtemu_config *cfg);

#endif /* NRTEMU_INSTANCE_H */
