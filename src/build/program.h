/* Building programs under the reproducibility policy (program.c): reprocl's own programs, cached per
 * context and gated by the context's rcl_program_gate, and the pool of created kernels. Not installed. */
#ifndef REPROCL_BUILD_PROGRAM_H
#define REPROCL_BUILD_PROGRAM_H
#include "core/context.h"

/* The built program of reprocl's own cl/<file> for dtype in the context's mode (cached per context).
 * extra_defines may add "-DNAME=VALUE ..." for variants. The program is owned by the context. */
RCL_INTERNAL int rcl__program_get(cl_program *out, rcl_context *ctx, const char *file, rcl_dtype dtype,
                                  const char *extra_defines);
/* Creates a kernel of a library program. */
RCL_INTERNAL int rcl__kernel_get(cl_kernel *out, rcl_context *ctx, const char *file, rcl_dtype dtype,
                                 const char *extra_defines, const char *kernel);
/* The same from the context's pool of given-back kernels when one is there (no clCreateKernel), with
 * its program and name; give it back with rcl__kernel_give after enqueueing (also on failure). */
RCL_INTERNAL int rcl__kernel_take(rcl_kernel_slot *out, rcl_context *ctx, const char *file, rcl_dtype dtype,
                                  const char *extra_defines, const char *kernel);
RCL_INTERNAL void rcl__kernel_give(rcl_context *ctx, rcl_kernel_slot *s);
/* Releases the pool and the programs. */
RCL_INTERNAL void rcl__programs_free(rcl_context *ctx);
/* The extra build options of the conservative build (a gate's *conservative). */
#define RCL_CONSERVATIVE_OPTIONS "-cl-opt-disable -DRCL_CONSERVATIVE=1"

#endif
