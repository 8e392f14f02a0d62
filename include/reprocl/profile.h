/* reprocl: device enumeration and device profiles — what each OpenCL device guarantees, and therefore
 * which kernels and precisions reprocl runs on it bit-exactly. */
#ifndef REPROCL_PROFILE_H
#define REPROCL_PROFILE_H
#include "reprocl/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One OpenCL device as enumerated by reprocl: platforms in ICD order, devices in platform order.
 * Platforms that report no device (e.g. Rusticl without RUSTICL_ENABLE) are skipped. */
typedef struct {
  size_t index; /* position in the enumeration: the number accepted by device specs */
  cl_platform_id platform;
  cl_device_id device;
  char platform_name[128];
  char device_name[128];
} rcl_device_info;

/* All devices of all platforms. *out is allocated; free it with rcl_devices_free(). Zero devices is not
 * an error (*count = 0). */
RCL_API int rcl_devices(rcl_device_info **out, size_t *count);
RCL_API void rcl_devices_free(rcl_device_info *devices);

/* Finds the device named by spec:
 *   NULL or ""      -> $REPROCL_DEVICE if set, else device 0;
 *   "3"             -> device index 3;
 *   "plat:dev"      -> first device whose platform name contains "plat" and whose device name contains
 *                      "dev" (case-insensitive; either side may be empty: "pocl:", ":h100");
 *   "text"          -> first device whose platform or device name contains "text";
 *   "plat:dev#k", "text#k"
 *                   -> the k-th (0-based) such device: "nvidia:#1" is the second of two identical GPUs.
 * Platform parts also accept the aliases pocl (Portable Computing Language), amd, intel and cuda.
 * RCL_ERR_NOT_FOUND names the spec and lists nothing else; `reprocl devices` lists what exists. */
RCL_API int rcl_device_find(rcl_device_info *out, const char *spec);

/* How a kernel family runs on a device. */
typedef enum {
  RCL_SUPPORT_NATIVE = 0,   /* bit-exact with the device's own IEEE operations */
  RCL_SUPPORT_EMULATED = 1, /* bit-exact; fp32 operations the device does not guarantee (subnormals,
                               correctly rounded div/sqrt) are computed exactly in integer arithmetic */
  RCL_SUPPORT_NONE = 2      /* refused with RCL_ERR_UNSUPPORTED; the reason says why */
} rcl_support;
RCL_API const char *rcl_support_name(rcl_support s); /* "native", "emulated", "unsupported" */

typedef enum {
  RCL_FAMILY_REDUCE = 0,  /* sum, dot, nrm2, axpy, scal */
  RCL_FAMILY_STENCIL = 1, /* 2D stencils and SOR */
  RCL_FAMILY_SPMV = 2,    /* CSR SpMV and CG */
  RCL_FAMILY_MD = 3,      /* Lennard-Jones forces, neighbour lists, integration */
  RCL_FAMILY_COUNT = 4
} rcl_family;
RCL_API const char *rcl_family_name(rcl_family f); /* "reduce", "stencil", "spmv", "md" */

#define RCL_DEVICE_PROFILE_VERSION 1
typedef struct {
  unsigned int version;
  /* identity */
  char platform_name[128];
  char platform_vendor[128];
  char platform_version[128];
  char device_name[128];
  char device_vendor[128];
  char device_version[128];
  char driver_version[128];
  char opencl_c_version[128];
  cl_device_type type;
  cl_uint vendor_id;
  cl_uint compute_units;
  cl_uint address_bits;
  size_t max_work_group_size;
  size_t max_work_item_sizes[3];
  cl_ulong local_mem_size;
  cl_ulong global_mem_size;
  cl_ulong max_mem_alloc_size;
  /* what the device reports it guarantees (CL_DEVICE_SINGLE_FP_CONFIG, DOUBLE_FP_CONFIG, extensions) */
  int fp32_denormals;
  int fp32_inf_nan;
  int fp32_round_to_nearest;
  int fp32_fma;
  int fp32_correctly_rounded_div_sqrt;
  int fp64;          /* cl_khr_fp64 (or fp64 support in the OpenCL C version) */
  int fp64_denormals;
  int fp64_fma;
  int int64_atomics; /* cl_khr_int64_base_atomics: global 64-bit atomic add, needed by MD's symmetric path */
  int little_endian;
  /* Loop back-edges one work-item may take before the driver silently ends its loops; 0 = no limit.
   * Mesa's llvmpipe (Rusticl's CPU device) stops every loop of a work-item after 65535 iterations in
   * total (LP_MAX_TGSI_LOOP_ITERATIONS) without an error, so reprocl sizes grids to stay below it. */
  cl_ulong loop_iteration_limit;
  /* derived: how reprocl keeps fp32 exact on this device */
  int fp32_emulate_subnormals; /* + - * take an exact integer path when an operand or result may be subnormal */
  int fp32_emulate_div_sqrt;   /* / and sqrt are computed exactly in integer arithmetic */
  /* SHA-256 (hex) of platform name+version, vendor, device name, driver version, device version and
   * compute units: the device part of every cache key. A driver upgrade changes it. */
  char fingerprint[65];
} rcl_device_profile;

/* Fills *out for a device. */
RCL_API int rcl_device_profile_query(rcl_device_profile *out, cl_device_id device);

/* Whether the family runs bit-exactly on the device for dtype, and how. *reason (optional) receives a
 * static or profile-lifetime string explaining an EMULATED or NONE answer ("" for NATIVE). */
RCL_API rcl_support rcl_device_profile_support(const rcl_device_profile *p, rcl_family family, rcl_dtype dtype,
                                               const char **reason);

#ifdef __cplusplus
}
#endif
#endif
