/* Host definitions of the names that the shared numerical sources in cl/ use (cl/rcl_portable.cl has
 * the device ones), so that the host references compile the very same code as the kernels. */
#ifndef REPROCL_PORTABLE_HOST_H
#define REPROCL_PORTABLE_HOST_H
#include <stdint.h>
#include <string.h>

#define RCL_FN static inline
typedef uint32_t rcl_u32;
typedef int32_t rcl_i32;
typedef uint64_t rcl_u64;
typedef int64_t rcl_i64;
#define RCL_HAS_FP64 1

static inline rcl_u32 rcl_host_f32_bits(float x) { rcl_u32 u; memcpy(&u, &x, 4); return u; }
static inline float rcl_host_bits_f32(rcl_u32 u) { float x; memcpy(&x, &u, 4); return x; }
static inline rcl_u64 rcl_host_f64_bits(double x) { rcl_u64 u; memcpy(&u, &x, 8); return u; }
static inline double rcl_host_bits_f64(rcl_u64 u) { double x; memcpy(&x, &u, 8); return x; }
static inline rcl_i32 rcl_host_clz64(rcl_u64 x) { return x ? (rcl_i32)__builtin_clzll(x) : 64; }
static inline rcl_u64 rcl_host_mulhi64(rcl_u64 a, rcl_u64 b) {
  __extension__ typedef unsigned __int128 u128;
  return (rcl_u64)(((u128)a * (u128)b) >> 64);
}
#define RCL_F32_TO_BITS(x) rcl_host_f32_bits(x)
#define RCL_BITS_TO_F32(u) rcl_host_bits_f32(u)
#define RCL_F64_TO_BITS(x) rcl_host_f64_bits(x)
#define RCL_BITS_TO_F64(u) rcl_host_bits_f64(u)
#define RCL_CLZ64(x) rcl_host_clz64(x)
#define RCL_MULHI64(a, b) rcl_host_mulhi64(a, b)
/* Marks the shared sources as compiled on the host; rcl_portable.cl's device section is skipped. */
#define RCL_PORTABLE_CL 1
#endif
