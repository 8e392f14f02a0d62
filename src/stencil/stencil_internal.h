/* Internals of the stencil family. Its files depend one way: the public front (stencil.c: argument checks,
 * the tuner's values where a call leaves a choice, host-array forms) uses the tuner plug-in (stencil_tune.c:
 * descriptors); both use the launch layer (stencil_launch.c: the launch configuration and sequence), which
 * uses neither; all of them, the host reference (stencil_ref.c) and grid I/O (grid_io.c) use the checks and
 * constants (stencil_check.c), so all accept the same inputs and use the same rounded constants. Not
 * installed. */
#ifndef REPROCL_STENCIL_INTERNAL_H
#define REPROCL_STENCIL_INTERNAL_H
#include "build/program.h"
#include "core/internal.h"
#include "tune/params.h"
#include "tune/tune.h"
#include "reprocl/grid.h"
#include "reprocl/stencil.h"

/* ---- checks and constants (stencil_check.c) ------------------------------------------------------- */

/* Checks width and height (1 .. RCL_GRID_MAX_DIM) and that width*height*es fits in size_t. */
RCL_INTERNAL int rcl__grid_check_dims(size_t width, size_t height, size_t es, const char *what);

/* Checks a stencil description; *radius receives 1 or 2. */
RCL_INTERNAL int rcl__stencil_check(const rcl_stencil_desc *st, unsigned int *radius);
/* Checks an SOR description for a grid (omega in (0, 2), the boundary, periodic sizes). */
RCL_INTERNAL int rcl__sor_check(const rcl_sor_desc *s, size_t width, size_t height);

/* The constants a kernel uses, rounded once to the dtype (each points to a float or a double):
 * the stencil's weights (3 for NINE, (2r+1)^2 for GENERAL) and boundary value; SOR's c1 = omega * 0.25 and
 * c0 = 1 - omega, both computed in binary64 and then rounded. */
typedef union {
  float f[25];
  double d[25];
} rcl__stencil_consts;
RCL_INTERNAL void rcl__stencil_weights(rcl__stencil_consts *w, const rcl_stencil_desc *st, unsigned int radius,
                                       rcl_dtype dtype);
RCL_INTERNAL void rcl__to_dtype(void *out, double v, rcl_dtype dtype);
RCL_INTERNAL void rcl__sor_coefficients(void *c1, void *c0, double omega, rcl_dtype dtype);

/* Checks rcl_stencil_options (NULL: the defaults): its version and variant. */
RCL_INTERNAL int rcl__stencil_opts_check(const rcl_stencil_options *o);

/* A grid in a buffer: the buffer, the element offset of its first point and its row pitch in elements. */
typedef struct {
  cl_mem buf;
  cl_ulong off, pitch;
} rcl__grid_ref;
/* Checks that buf holds a w x h grid at element offset off with row pitch pitch (0: w) of es-byte elements
 * and fills *g (what names the grid in errors). */
RCL_INTERNAL int rcl__grid_ref_check(rcl__grid_ref *g, cl_mem buf, size_t off, size_t pitch, size_t w, size_t h,
                                     size_t es, const char *what);

/* ---- tuning (stencil_tune.c) ---------------------------------------------------------------------- */

/* The kernels with a tuner descriptor each: nine-point, general (per radius: one program each) and SOR. */
typedef enum { RCL_STK_NINE, RCL_STK_GENERAL, RCL_STK_SOR } rcl_stencil_kernel_kind;

/* The tunable parameters, in the order of their rcl_tune_param_def table: the variant
 * (rcl_stencil_variant: plain, tiled, task), local_size[0..1] and points_per_item[0..1] (the tiled tile is
 * their product). */
enum { RCL_ST_P_VARIANT, RCL_ST_P_LOCAL_X, RCL_ST_P_LOCAL_Y, RCL_ST_P_POINTS_X, RCL_ST_P_POINTS_Y, RCL_ST_NPARAMS };

/* The descriptor of a kernel (radius: 1 or 2, for GENERAL). */
RCL_INTERNAL const rcl_tune_kernel *rcl__stencil_tune_kernel(rcl_stencil_kernel_kind kind, unsigned int radius);
extern const rcl_tune_kernel rcl__tk_stencil_nine, rcl__tk_stencil_general_r1, rcl__tk_stencil_general_r2,
    rcl__tk_stencil_sor;

/* The tuning problem of a kernel at problem size n (grid points), shared with the tests: a width x height
 * grid (the most square one with width * height <= n, at least 1 x 1), the description (SOR: RCL_SOR_DESC_INIT,
 * Laplace), and input values rcl_generate(RCL_GEN_UNIFORM, RCL_STENCIL_TUNE_SEED). */
#define RCL_STENCIL_TUNE_SEED 0x57e11
RCL_INTERNAL void rcl__stencil_tune_grid(size_t *width, size_t *height, size_t n);
RCL_INTERNAL void rcl__stencil_tune_desc(rcl_stencil_desc *st, rcl_stencil_kernel_kind kind, unsigned int radius);

/* ---- the launch layer (stencil_launch.c) ------------------------------------------------------------ */

/* The configuration a call with opts would launch, where soft (RCL_ST_P_*, 0: none; or NULL) fills what
 * the caller left at 0 as the tuner's values do: clamped, and replaced by the built-in defaults if they
 * cannot launch. The launch planner the validity predicate runs (the same code as a call). */
RCL_INTERNAL int rcl__stencil_config(rcl_stencil_options *out, rcl_context *ctx, rcl_dtype dt,
                                     rcl_stencil_kernel_kind kind, unsigned int radius, const rcl_stencil_options *opts,
                                     const size_t *soft);

/* The launches of rcl_stencil_enqueue, rcl_sor_enqueue and rcl_sor_residual_enqueue on arguments already
 * checked (grids by rcl__grid_ref_check, options by rcl__stencil_opts_check) on queue, q's wait list and
 * event: the configuration is opts with soft (as rcl__stencil_config; NULL where the call leaves no
 * choice or the tuner is not asked). scratch, and b's buffer, may be NULL. */
RCL_INTERNAL int rcl__stencil_run(cl_command_queue queue, rcl_context *ctx, const rcl_stencil_desc *st,
                                  unsigned int radius, rcl_dtype dtype, size_t width, size_t height, size_t iters,
                                  const rcl__grid_ref *in, const rcl__grid_ref *out, const rcl__grid_ref *scratch,
                                  const rcl_stencil_options *opts, const size_t *soft, const rcl_queue_args *q);
RCL_INTERNAL int rcl__sor_run(cl_command_queue queue, rcl_context *ctx, const rcl_sor_desc *s, rcl_dtype dtype,
                              size_t width, size_t height, size_t sweeps, const rcl__grid_ref *g,
                              const rcl__grid_ref *b, const rcl_stencil_options *opts, const size_t *soft,
                              const rcl_queue_args *q);
/* With variant AUTO the task form where soft's variant is task, else one work-item per point. */
RCL_INTERNAL int rcl__sor_residual_run(cl_command_queue queue, cl_mem result, size_t result_offset, rcl_context *ctx,
                                       const rcl_sor_desc *s, rcl_dtype dtype, size_t width, size_t height,
                                       const rcl__grid_ref *g, const rcl__grid_ref *b, const rcl_stencil_options *opts,
                                       const size_t *soft, const rcl_queue_args *q);

#endif
