/* prelude.cl — prepended (after rcl_portable.cl, rcl_softfloat.cl and rcl_exact.cl) to every program
 * reprocl builds, its own and the caller's. It carries the reproducibility policy into the source:
 *
 *  - '#pragma OPENCL FP_CONTRACT OFF': a*b+c is two rounded operations, never a fused one.
 *  - rcl_{add,sub,mul,div,sqrt}_f32/_f64: IEEE 754 round-to-nearest-even operations on every device.
 *    Where the device reports fp32 subnormals and correctly rounded div/sqrt they are the plain
 *    operators; where it does not, the host defines RCL_EMULATE_F32_SUBNORMALS and/or
 *    RCL_EMULATE_F32_DIV_SQRT and the cases that could differ go through rcl_softfloat.cl.
 *  - real_t and R_ADD .. R_SQRT: the same for the program's dtype (RCL_DTYPE_F32 or RCL_DTYPE_F64).
 *  - rcl_canon_f32/_f64 and R_CANON: every NaN a kernel stores is the canonical quiet NaN, because
 *    devices disagree on NaN payloads and signs.
 *
 * In native mode (RCL_NATIVE) the pragma is absent and every operation is the plain operator, so the
 * same kernels show how far default compilation drifts.
 *
 * Macros the host defines: RCL_REPRODUCIBLE or RCL_NATIVE; RCL_HAS_FP64; RCL_HAS_INT64_ATOMICS;
 * RCL_EMULATE_F32_SUBNORMALS; RCL_EMULATE_F32_DIV_SQRT; RCL_DTYPE_F32 or RCL_DTYPE_F64. */
#ifndef RCL_PRELUDE_CL
#define RCL_PRELUDE_CL

#ifndef RCL_NATIVE
#pragma OPENCL FP_CONTRACT OFF
#endif
#ifdef RCL_HAS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#ifdef RCL_HAS_INT64_ATOMICS
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#endif

/* ---- binary32 ---------------------------------------------------------------------------------- */

RCL_FN float rcl_canon_f32(float x) {
  return rcl_sf_isnan_bits(as_uint(x)) ? as_float(RCL_F32_QNAN) : x;
}

RCL_FN float rcl_neg_f32(float x) { return as_float(as_uint(x) ^ RCL_F32_SIGN); } /* exact on every device */

#if defined(RCL_NATIVE)
/* Native mode: plain operators inside one expression, so the compiler may contract a*b+c as it does
 * in ordinary code (functions would hide the expression from it). */
#define rcl_add_f32(a, b) ((a) + (b))
#define rcl_sub_f32(a, b) ((a) - (b))
#define rcl_mul_f32(a, b) ((a) * (b))
#define rcl_div_f32(a, b) ((a) / (b))
#define rcl_sqrt_f32(a) sqrt(a)
#elif !defined(RCL_EMULATE_F32_SUBNORMALS)
RCL_FN float rcl_add_f32(float a, float b) { return a + b; }
RCL_FN float rcl_sub_f32(float a, float b) { return a - b; }
RCL_FN float rcl_mul_f32(float a, float b) { return a * b; }
#else
/* Fast path unless an operand is non-zero and below 2^-102: then a sum of the two can be subnormal
 * (a non-zero sum of values >= 2^-102 is a multiple of 2^-125, hence normal). */
RCL_FN int rcl__tiny_f32(uint u) { return ((u & 0x7fffffffu) - 1u) < ((25u << 23) - 1u); }
RCL_FN float rcl_add_f32(float a, float b) {
  uint ua = as_uint(a), ub = as_uint(b);
  if (rcl__tiny_f32(ua) || rcl__tiny_f32(ub)) return as_float(rcl_sf_add(ua, ub));
  return a + b;
}
RCL_FN float rcl_sub_f32(float a, float b) { return rcl_add_f32(a, rcl_neg_f32(b)); }
/* Fast path when both operands are zero or normal with exponent fields summing to >= 128 (product
 * >= 2^-126, normal), or when one is zero and the other not subnormal-times-inf. */
RCL_FN float rcl_mul_f32(float a, float b) {
  uint ua = as_uint(a), ub = as_uint(b);
  uint ea = (ua >> 23) & 0xffu, eb = (ub >> 23) & 0xffu;
  if ((ua & 0x7fffffffu) != 0 && (ub & 0x7fffffffu) != 0 && (ea == 0 || eb == 0 || ea + eb < 128u))
    return as_float(rcl_sf_mul(ua, ub));
  return a * b;
}
#endif

#if defined(RCL_NATIVE)
#elif !(defined(RCL_EMULATE_F32_DIV_SQRT) || defined(RCL_EMULATE_F32_SUBNORMALS))
RCL_FN float rcl_div_f32(float a, float b) { return a / b; }
RCL_FN float rcl_sqrt_f32(float a) { return sqrt(a); }
#else
RCL_FN float rcl_div_f32(float a, float b) { return as_float(rcl_sf_div(as_uint(a), as_uint(b))); }
RCL_FN float rcl_sqrt_f32(float a) { return as_float(rcl_sf_sqrt(as_uint(a))); }
#endif

/* ---- binary64: OpenCL requires IEEE operations with subnormals wherever fp64 exists ------------- */
#ifdef RCL_HAS_FP64
RCL_FN double rcl_canon_f64(double x) {
  return ((as_ulong(x) << 1) > 0xffe0000000000000ul) ? as_double(0x7ff8000000000000ul) : x;
}
RCL_FN double rcl_neg_f64(double x) { return as_double(as_ulong(x) ^ 0x8000000000000000ul); }
#if defined(RCL_NATIVE)
#define rcl_add_f64(a, b) ((a) + (b))
#define rcl_sub_f64(a, b) ((a) - (b))
#define rcl_mul_f64(a, b) ((a) * (b))
#define rcl_div_f64(a, b) ((a) / (b))
#define rcl_sqrt_f64(a) sqrt(a)
#else
RCL_FN double rcl_add_f64(double a, double b) { return a + b; }
RCL_FN double rcl_sub_f64(double a, double b) { return a - b; }
RCL_FN double rcl_mul_f64(double a, double b) { return a * b; }
RCL_FN double rcl_div_f64(double a, double b) { return a / b; }
RCL_FN double rcl_sqrt_f64(double a) { return sqrt(a); }
#endif
#endif

/* ---- the program's dtype ---------------------------------------------------------------------- */
#if defined(RCL_DTYPE_F64)
typedef double real_t;
typedef ulong real_bits_t;
#define R_ADD rcl_add_f64
#define R_SUB rcl_sub_f64
#define R_MUL rcl_mul_f64
#define R_DIV rcl_div_f64
#define R_SQRT rcl_sqrt_f64
#define R_NEG rcl_neg_f64
#define R_CANON rcl_canon_f64
#define R_AS_BITS(x) as_ulong(x)
#define R_FROM_BITS(u) as_double(u)
#elif defined(RCL_DTYPE_F32)
typedef float real_t;
typedef uint real_bits_t;
#define R_ADD rcl_add_f32
#define R_SUB rcl_sub_f32
#define R_MUL rcl_mul_f32
#define R_DIV rcl_div_f32
#define R_SQRT rcl_sqrt_f32
#define R_NEG rcl_neg_f32
#define R_CANON rcl_canon_f32
#define R_AS_BITS(x) as_uint(x)
#define R_FROM_BITS(u) as_float(u)
#endif

/* ---- ordered loops ----------------------------------------------------------------------------------
 * A loop that adds floating-point values in an order a contract fixes (a row sum, a stencil's weighted
 * sum, a lane sum) must not be vectorised across that order: a vectoriser that keeps several partial
 * sums reassociates it. FP_CONTRACT OFF does not forbid that, and Intel's OpenCL CPU compiler does it to
 * the work-items it runs outside its SIMD groups. Every such loop has two defences:
 *  - RCL_ORDERED_LOOP, written right before the loop: clang's loop pragma that turns the vectoriser
 *    and interleaver off for it (clang-based compilers; unrolling stays allowed);
 *  - R_SEAL(acc, z) after every add, with z from RCL_OPAQUE_ZERO(z) once per work-item: an integer xor
 *    with a zero the compiler cannot know (read through a volatile), so the running value is no longer a
 *    floating-point reduction any optimiser recognises, whether or not it honours the pragma. It is
 *    bit-neutral: the results are those of the plain loop.
 * Native mode (RCL_NATIVE) keeps the plain loops: it shows what default compilation does. */
#if defined(RCL_NATIVE)
#define RCL_ORDERED_LOOP
#define RCL_OPAQUE_ZERO(z) const uint z = 0u
#define rcl_seal_f32(x, z) (x)
#define rcl_seal_f64(x, z) (x)
#else
#if defined(__clang__)
#define RCL_ORDERED_LOOP _Pragma("clang loop vectorize(disable) interleave(disable)")
#else
#define RCL_ORDERED_LOOP
#endif
#define RCL_OPAQUE_ZERO(z)                                                                                             \
  volatile uint z##_opaque = 0u;                                                                                       \
  const uint z = z##_opaque
#define rcl_seal_f32(x, z) as_float(as_uint(x) ^ (z))
#define rcl_seal_f64(x, z) as_double(as_ulong(x) ^ ((ulong)(z) << 32)) /* one 32-bit op on 32-bit ALUs */
#endif
#if defined(RCL_DTYPE_F64)
#define R_SEAL rcl_seal_f64
#elif defined(RCL_DTYPE_F32)
#define R_SEAL rcl_seal_f32
#endif

#endif
