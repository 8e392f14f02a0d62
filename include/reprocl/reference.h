/* reprocl: host C references. Each implements a kernel's contract (docs/contracts.md) with plain C
 * compiled with -ffp-contract=off, so that a device result can be compared with memcmp. They need no
 * OpenCL device. */
#ifndef REPROCL_REFERENCE_H
#define REPROCL_REFERENCE_H
#include "reprocl/common.h"
#include "reprocl/reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The contract of rcl_reduce(): *out (float or double) = op(x, y) in the given mode. Exact mode
 * allocates a superaccumulator: RCL_ERR_OUT_OF_MEMORY is possible. */
RCL_API int rcl_ref_reduce(void *out, rcl_reduce_op op, rcl_dtype dtype, rcl_reduce_mode mode, size_t n,
                           const void *x, const void *y);
RCL_API void rcl_ref_axpy(void *y, rcl_dtype dtype, size_t n, const void *alpha, const void *x);
RCL_API void rcl_ref_scal(void *x, rcl_dtype dtype, size_t n, const void *alpha);

/* The prelude's exact fp32 operations, compiled for the host (the same source as on the device).
 * They equal IEEE 754 binary32 round-to-nearest-even with gradual underflow, for every input. */
RCL_API float rcl_ref_add_f32(float a, float b);
RCL_API float rcl_ref_mul_f32(float a, float b);
RCL_API float rcl_ref_div_f32(float a, float b);
RCL_API float rcl_ref_sqrt_f32(float a);

#ifdef __cplusplus
}
#endif
#endif
