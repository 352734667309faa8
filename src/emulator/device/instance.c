/*
 * instance.c - the emulated instance profiles.
 *
 * Device counts, cores per device and HBM sizes are the hardware table of
 * libnrt-abi.md section 4.1.  The arch_name and device_revision strings of
 * the real runtime are undocumented; ours name the chip and the NeuronCore
 * generation (NC-v2 on Inferentia2 and Trainium, NC-v3 on Trainium2).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/env_parse.h"
#include "util/error.h"
#include "device/instance.h"

#define GIB (UINT64_C(1) << 30)

static const struct nrtemu_instance instances[] = {
    {"inf2.xlarge", NRT_INSTANCE_INF2, NRT_INSTANCE_SIZE_1XL, "inferentia2",
     "v2", 1, 2, false, 1, 32 * GIB},
    {"inf2.8xlarge", NRT_INSTANCE_INF2, NRT_INSTANCE_SIZE_8XL, "inferentia2",
     "v2", 1, 2, false, 1, 32 * GIB},
    {"inf2.24xlarge", NRT_INSTANCE_INF2, NRT_INSTANCE_SIZE_24XL, "inferentia2",
     "v2", 6, 2, false, 1, 32 * GIB},
    {"inf2.48xlarge", NRT_INSTANCE_INF2, NRT_INSTANCE_SIZE_48XL, "inferentia2",
     "v2", 12, 2, false, 1, 32 * GIB},
    {"trn1.2xlarge", NRT_INSTANCE_TRN1, NRT_INSTANCE_SIZE_2XL, "trainium",
     "v2", 1, 2, false, 1, 32 * GIB},
    {"trn1.32xlarge", NRT_INSTANCE_TRN1, NRT_INSTANCE_SIZE_32XL, "trainium",
     "v2", 16, 2, false, 1, 32 * GIB},
    {"trn1n.32xlarge", NRT_INSTANCE_TRN1N, NRT_INSTANCE_SIZE_32XL, "trainium",
     "v2", 16, 2, false, 1, 32 * GIB},
    {"trn2.48xlarge", NRT_INSTANCE_TRN2, NRT_INSTANCE_SIZE_48XL, "trainium2",
     "v3", 16, 8, true, 2, 96 * GIB},
    {"trn2u.48xlarge", NRT_INSTANCE_TRN2U, NRT_INSTANCE_SIZE_48XL, "trainium2",
     "v3", 16, 8, true, 2, 96 * GIB},
};

#define INSTANCE_COUNT (sizeof instances / sizeof instances[0])

const struct nrtemu_instance *
nrtemu__instance_find(const char *name)
{
    for (size_t i = 0; i < INSTANCE_COUNT; i++) {
        if (strcmp(instances[i].name, name) == 0) {
            return &instances[i];
        }
    }
    return NULL;
}

static void
known_names(char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < INSTANCE_COUNT && used < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
                         instances[i].name);
        if (n < 0) {
            break;
        }
        used += (size_t)n;
    }
}

static NRT_STATUS
lnc_from_env(const char *func, const struct nrtemu_instance *inst,
             uint32_t *lnc)
{
    const char *primary = getenv("NEURON_LOGICAL_NC_CONFIG");
    const char *alias = getenv("NEURON_RT_VIRTUAL_CORE_SIZE");
    uint32_t from_primary = 0, from_alias = 0;
    char err[128];

    *lnc = inst->default_lnc;
    if (!inst->lnc_configurable) {
        /* The knob only exists on Trn2 and later: ignore it elsewhere. */
        return NRT_SUCCESS;
    }
    if (primary != NULL && !nrtemu__env_blank(primary)) {
        if (nrtemu__parse_lnc(primary, &from_primary, err, sizeof err) !=
            NRT_SUCCESS) {
            return nrtemu__fail(NRT_INVALID, func,
                                "invalid NEURON_LOGICAL_NC_CONFIG='%.32s': %s",
                                primary, err);
        }
        *lnc = from_primary;
    }
    if (alias != NULL && !nrtemu__env_blank(alias)) {
        if (nrtemu__parse_lnc(alias, &from_alias, err, sizeof err) !=
            NRT_SUCCESS) {
            return nrtemu__fail(
                NRT_INVALID, func,
                "invalid NEURON_RT_VIRTUAL_CORE_SIZE='%.32s': %s", alias, err);
        }
        if (from_primary != 0 && from_alias != from_primary) {
            return nrtemu__fail(NRT_INVALID, func,
                                "NEURON_LOGICAL_NC_CONFIG=%u and "
                                "NEURON_RT_VIRTUAL_CORE_SIZE=%u disagree",
                                from_primary, from_alias);
        }
        *lnc = from_alias;
    }
    return NRT_SUCCESS;
}

NRT_STATUS
nrtemu__config_from_env(const char *func, bool with_memory,
                        struct nrtemu_config *cfg)
{
    const char *name = getenv("NRTPY_EMU_INSTANCE");
    const struct nrtemu_instance *inst;
    NRT_STATUS st;

    if (name == NULL || nrtemu__env_blank(name)) {
        name = NRTEMU_DEFAULT_INSTANCE;
    }
    inst = nrtemu__instance_find(name);
    if (inst == NULL) {
        char names[512];
        known_names(names, sizeof names);
        return nrtemu__fail(NRT_INVALID, func,
                            "unknown NRTPY_EMU_INSTANCE='%.64s' (known: %s)",
                            name, names);
    }
    cfg->instance = inst;
    st = lnc_from_env(func, inst, &cfg->lnc);
    if (st != NRT_SUCCESS) {
        return st;
    }
    cfg->vnc_per_device = inst->cores_per_device / cfg->lnc;
    cfg->total_vnc = inst->devices * cfg->vnc_per_device;
    cfg->hbm_per_vnc = inst->hbm_per_device / cfg->vnc_per_device;
    if (with_memory) {
        const char *hbm = getenv("NRTPY_EMU_HBM_PER_CORE");
        char err[128];
        if (hbm != NULL && !nrtemu__env_blank(hbm)) {
            uint64_t bytes;
            if (nrtemu__parse_byte_size(hbm, &bytes, err, sizeof err) !=
                NRT_SUCCESS) {
                return nrtemu__fail(
                    NRT_INVALID, func,
                    "invalid NRTPY_EMU_HBM_PER_CORE='%.32s': %s", hbm, err);
            }
#if SIZE_MAX < UINT64_MAX
            if (bytes > SIZE_MAX) {
                return nrtemu__fail(NRT_INVALID, func,
                                    "NRTPY_EMU_HBM_PER_CORE='%.32s' does "
                                    "not fit in size_t",
                                    hbm);
            }
#endif
            cfg->hbm_per_vnc = bytes;
        }
    }
    cfg->poison = false;
    if (with_memory) {
        const char *poison = getenv("NRTPY_EMU_POISON");
        if (poison != NULL && !nrtemu__env_blank(poison) &&
            !nrtemu__parse_bool(poison, &cfg->poison)) {
            return nrtemu__fail(NRT_INVALID, func,
                                "invalid NRTPY_EMU_POISON='%.32s': expected "
                                "1, 0, true or false",
                                poison);
        }
    }
    return NRT_SUCCESS;
}
