/* reprocl: building OpenCL programs under the reproducibility policy — for reprocl's own kernels and
 * for the caller's. */
#ifndef REPROCL_PROGRAM_H
#define REPROCL_PROGRAM_H
#include "reprocl/common.h"
#include "reprocl/context.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rcl_program rcl_program;

/* The source uses the prelude's operations (rcl_add_f32, rcl_mul_f32, rcl_div_f32, rcl_sqrt_f32, ...)
 * for all fp32 arithmetic. Without this flag, building for a device that does not guarantee fp32
 * subnormals or correctly rounded div/sqrt is refused: plain operators could silently differ there. */
#define RCL_PROGRAM_PRELUDE_OPS 0x1u
/* Skip the part of the source lint that refuses builtins whose accuracy OpenCL leaves open (exp, sin,
 * mad, native_*, half_*, ..., also through -D macros). Results that use them are not reproducible across
 * devices. Floating-point pragmas are checked regardless. */
#define RCL_PROGRAM_ALLOW_INEXACT_BUILTINS 0x2u

#define RCL_PROGRAM_OPTIONS_VERSION 1
typedef struct {
  unsigned int version;
  const char *options; /* extra build options; in reproducible mode, ones that break it are refused */
  const char *name;    /* the source's name in #line directives and messages; default "user.cl" */
  unsigned int flags;  /* RCL_PROGRAM_* */
} rcl_program_options;
#define RCL_PROGRAM_OPTIONS_INIT {RCL_PROGRAM_OPTIONS_VERSION, NULL, NULL, 0u}

/* Builds the caller's OpenCL C source for the context's device under the context's mode: the prelude
 * (cl/prelude.cl: '#pragma OPENCL FP_CONTRACT OFF', exact fp32 operations, NaN canonicalisation) is
 * prepended and the policy's options are added. A failed build returns RCL_ERR_BUILD with the log. */
RCL_API int rcl_program_build(rcl_program **out, rcl_context *ctx, const char *source, size_t length,
                              const rcl_program_options *opts);
RCL_API void rcl_program_free(rcl_program *program);
RCL_API cl_program rcl_program_cl(const rcl_program *program); /* borrowed */
RCL_API const char *rcl_program_build_options(const rcl_program *program); /* the full option string */
RCL_API int rcl_program_create_kernel(cl_kernel *out, const rcl_program *program, const char *name);

/* Checks a build-option string against the policy: 0, or RCL_ERR_POLICY naming the offending option
 * (-cl-mad-enable, -cl-fast-relaxed-math, -cl-unsafe-math-optimizations, -cl-finite-math-only,
 * -cl-no-signed-zeros, -cl-denorms-are-zero, and compiler spellings of the same: -ffast-math,
 * -ffp-contract=*, -ffp-model=*, -fassociative-math, -freciprocal-math, -fno-honor-nans, ..., LLVM's
 * -fp-contract=*, -fp-relaxed, -fpc), and -D/-U of names beginning RCL_ or rcl_ (reserved for the
 * policy's own defines and the prelude), except -D of RCL_EMULATE_F32_SUBNORMALS and
 * RCL_EMULATE_F32_DIV_SQRT, which only force the exact path (same bits). */
RCL_API int rcl_policy_check_options(const char *options);

/* Lints OpenCL C source as the compiler sees it (comments removed, continuation lines joined):
 * RCL_ERR_POLICY names file:line and the construct for pragmas that change floating-point semantics
 * ('#pragma OPENCL FP_CONTRACT ON|DEFAULT', '#pragma STDC FP_CONTRACT', '#pragma STDC FENV_ROUND',
 * '#pragma clang fp ...' other than contract(off), '#pragma float_control(..., off)', and the same as
 * _Pragma("...")), and for calls of builtins whose results OpenCL does not pin to one value, also inside
 * #define bodies. It reads only the text given: macros from included headers or token pasting are not
 * followed (docs/reliability.md). */
RCL_API int rcl_policy_lint_source(const char *source, size_t length, const char *name);

#ifdef __cplusplus
}
#endif
#endif
