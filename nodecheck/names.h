/*
 * NVIDIA device names -> skypool accelerator model keys and form factors.
 *
 * Self-contained (libc only) on purpose: skypool-nodecheck compiles it, and the core compiles
 * the same file to classify `nvidia-smi --query-gpu=name,...` output on a node that cannot run
 * the nodecheck binary. The keys are those of core/accel.c.
 */
#ifndef SKYPOOL_NODECHECK_NAMES_H
#define SKYPOOL_NODECHECK_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* Form factors, in the order the JSON report names them (nc_form_factor_name). */
enum nc_form_factor { NC_FF_UNKNOWN = 0, NC_FF_SXM = 1, NC_FF_PCIE = 2, NC_FF_NVL = 3 };

/*
 * The model key of a device as NVML or nvidia-smi name it ("NVIDIA H100 80GB HBM3" ->
 * "H100-SXM"), or NULL when skypool has no key for that card. mem_mib (0: unknown) splits
 * names that do not say their memory (A100, V100). *form_factor (may be NULL) is set to an
 * NC_FF_* value, NC_FF_UNKNOWN when the name does not tell.
 */
const char *nc_model_key(const char *device_name, unsigned long long mem_mib, int *form_factor);

/* The same, consulting the board part number (nvmlDeviceGetBoardPartNumber; may be NULL) when
 * the name leaves the form factor open. */
const char *nc_model_key_board(const char *device_name, unsigned long long mem_mib,
                               const char *board_part_number, int *form_factor);

/* The form factor a board part number implies, NC_FF_UNKNOWN when it implies none. */
int nc_form_factor_from_board(const char *board_part_number);

/* "sxm", "pcie", "nvl" or "unknown". */
const char *nc_form_factor_name(int form_factor);
/* The NC_FF_* value of "sxm", "pcie" or "nvl" (any case); -1 for anything else. */
int nc_form_factor_parse(const char *name);

/* Every model key nodecheck accepts in --expect-model, NVIDIA and AWS Neuron, in catalog order. */
const char *const *nc_model_keys(size_t *n);
/* The canonical spelling of a model key matched case-insensitively, or NULL if unknown. */
const char *nc_model_key_canonical(const char *key);
/* Whether a (canonical) key names an AWS Neuron device (Inferentia, Trainium). */
bool nc_model_is_neuron(const char *key);

/* The MIG profile in a MIG device's name ("NVIDIA A100-SXM4-40GB MIG 1g.5gb" -> "1g.5gb"), a
 * pointer into name; NULL if the name has no " MIG " part. */
const char *nc_mig_profile_of(const char *mig_device_name);

#endif
