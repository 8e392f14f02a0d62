/* rcl_portable.cl — the common subset of OpenCL C and C11 that reprocl's shared numerical code is
 * written in. On the device the prelude includes it first; on the host, src/portable_host.h defines the
 * same names for C before including the shared sources. Keep every function here free of floating-point
 * operations: they work on bit patterns with integer arithmetic, which every device does exactly. */
#ifndef RCL_PORTABLE_CL
#define RCL_PORTABLE_CL

#ifdef __OPENCL_VERSION__
#define RCL_FN static inline
typedef uint rcl_u32;
typedef int rcl_i32;
typedef ulong rcl_u64;
typedef long rcl_i64;
#define RCL_F32_TO_BITS(x) as_uint(x)
#define RCL_BITS_TO_F32(u) as_float(u)
#define RCL_CLZ64(x) ((rcl_i32)clz((rcl_u64)(x))) /* clz(0) = 64 in OpenCL */
#define RCL_MULHI64(a, b) mul_hi((rcl_u64)(a), (rcl_u64)(b))
#ifdef RCL_HAS_FP64
#define RCL_F64_TO_BITS(x) as_ulong(x)
#define RCL_BITS_TO_F64(u) as_double(u)
#endif
#endif /* __OPENCL_VERSION__ */

#endif
