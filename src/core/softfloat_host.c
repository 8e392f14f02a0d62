/* The prelude's integer-exact fp32 operations (cl/rcl_softfloat.cl) compiled for the host: the same
 * source the kernels use on devices that need them, exposed for tests and host references. */
#include "core/portable_host.h"
#include "rcl_softfloat.cl"

#include "core/internal.h"

float rcl_ref_add_f32(float a, float b) { return RCL_BITS_TO_F32(rcl_sf_add(RCL_F32_TO_BITS(a), RCL_F32_TO_BITS(b))); }
float rcl_ref_mul_f32(float a, float b) { return RCL_BITS_TO_F32(rcl_sf_mul(RCL_F32_TO_BITS(a), RCL_F32_TO_BITS(b))); }
float rcl_ref_div_f32(float a, float b) { return RCL_BITS_TO_F32(rcl_sf_div(RCL_F32_TO_BITS(a), RCL_F32_TO_BITS(b))); }
float rcl_ref_sqrt_f32(float a) { return RCL_BITS_TO_F32(rcl_sf_sqrt(RCL_F32_TO_BITS(a))); }
