/* Shared by the stencil launcher (stencil.c), its host reference (stencil_ref.c) and its tuner plug-in
 * (stencil_tune.c): the checks of a stencil or SOR description and the values derived from it, so all
 * accept the same inputs and use the same rounded constants; the tunables and the tuning problem. Not
 * installed. */
#ifndef REPROCL_STENCIL_INTERNAL_H
#define REPROCL_STENCIL_INTERNAL_H
#include "build/program.h"
#include "core/internal.h"
#include "tune/params.h"
#include "tune/tune.h"
#include "reprocl/grid.h"
#include "reprocl/stencil.h"

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

/* The configuration a call with opts would launch, where soft (RCL_ST_P_*, 0: none; or NULL) fills what
 * the caller left at 0 as the tuner's values do: clamped, and replaced by the built-in defaults if they
 * cannot launch. The launch planner the validity predicate runs (the same code as a call). */
RCL_INTERNAL int rcl__stencil_config(rcl_stencil_options *out, rcl_context *ctx, rcl_dtype dt,
                                     rcl_stencil_kernel_kind kind, unsigned int radius, const rcl_stencil_options *opts,
                                     const size_t *soft);

/* The tuning problem of a kernel at problem size n (grid points), shared with the tests: a width x height
 * grid (the most square one with width * height <= n, at least 1 x 1), the description (SOR: RCL_SOR_DESC_INIT,
 * Laplace), and input values rcl_generate(RCL_GEN_UNIFORM, RCL_STENCIL_TUNE_SEED). */
#define RCL_STENCIL_TUNE_SEED 0x57e11
RCL_INTERNAL void rcl__stencil_tune_grid(size_t *width, size_t *height, size_t n);
RCL_INTERNAL void rcl__stencil_tune_desc(rcl_stencil_desc *st, rcl_stencil_kernel_kind kind, unsigned int radius);

#endif
