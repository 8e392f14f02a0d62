/* reprocl: bit-reproducible 2D stencils — the SHOC Stencil2D 9-point stencil, general 3x3 and 5x5 stencils
 * with user weights, and red-black SOR for the 2D Laplace/Poisson problem with its residual norm.
 * The numerical contracts are in docs/contracts.md ("stencil.nine", "stencil.general", "stencil.sor",
 * "stencil.sor_residual"). Every variant, work-group size, tile shape and device gives the same bits as
 * the host references declared at the end of this header. */
#ifndef REPROCL_STENCIL_H
#define REPROCL_STENCIL_H
#include "reprocl/common.h"
#include "reprocl/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a stencil reads outside the grid (the grid's own points are all updated). */
typedef enum {
  RCL_BOUNDARY_FIXED = 0,    /* Dirichlet halo: every point outside reads boundary_value */
  RCL_BOUNDARY_PERIODIC = 1, /* coordinates wrap around (x mod width, y mod height) */
  RCL_BOUNDARY_EDGE = 2      /* copy-edge: coordinates are clamped to the nearest grid point */
} rcl_boundary;
RCL_API const char *rcl_boundary_name(rcl_boundary b); /* "fixed", "periodic", "edge" */
RCL_API int rcl_boundary_parse(rcl_boundary *out, const char *name);

typedef enum {
  /* SHOC Stencil2D: out = wc*c + wa*(N+S+E+W) + wd*(NE+SE+NW+SW), weights[0..2] = wc, wa, wd. */
  RCL_STENCIL_NINE = 0,
  /* out = sum of weights[k] * neighbour k over the (2r+1)^2 neighbourhood in row-major order (top row
   * first, left to right), r = radius (1: 3x3, 2: 5x5), summed left to right. */
  RCL_STENCIL_GENERAL = 1
} rcl_stencil_kind;
RCL_API const char *rcl_stencil_kind_name(rcl_stencil_kind k); /* "nine", "general" */

/* The stencil: what is computed (changes bits). Weights and boundary_value are rounded once to the dtype
 * (round to nearest even) before use. */
#define RCL_STENCIL_DESC_VERSION 1
typedef struct {
  unsigned int version;
  rcl_stencil_kind kind;
  unsigned int radius; /* GENERAL: 1 or 2; NINE: 0 or 1 */
  double weights[25];  /* NINE: wc, wa, wd; GENERAL: (2r+1)^2 values, row-major, weights[0] is (-r, -r) */
  rcl_boundary boundary;
  double boundary_value; /* RCL_BOUNDARY_FIXED only */
} rcl_stencil_desc;
/* SHOC's default weights: centre 0.25, cardinal 0.15, diagonal 0.05. */
#define RCL_STENCIL_DESC_INIT                                                                                          \
  { RCL_STENCIL_DESC_VERSION, RCL_STENCIL_NINE, 1, {0.25, 0.15, 0.05}, RCL_BOUNDARY_FIXED, 0.0 }

/* SOR for the 5-point Laplace/Poisson problem (u_N + u_S + u_W + u_E - b) / 4 = u, red-black ordered. */
#define RCL_SOR_DESC_VERSION 1
typedef struct {
  unsigned int version;
  double omega;          /* relaxation factor, strictly inside (0, 2); 1 is Gauss-Seidel */
  rcl_boundary boundary; /* PERIODIC needs even width and height (the red-black colouring must wrap) */
  double boundary_value;
} rcl_sor_desc;
/* SciMark's relaxation factor 1.25. */
#define RCL_SOR_DESC_INIT                                                                                              \
  { RCL_SOR_DESC_VERSION, 1.25, RCL_BOUNDARY_FIXED, 0.0 }

/* Implementations; every one gives the same bits. */
typedef enum {
  RCL_STENCIL_AUTO = 0,  /* tiled on GPUs and accelerators, plain on CPUs */
  RCL_STENCIL_PLAIN = 1, /* one work-item per point, neighbours read from global memory */
  RCL_STENCIL_TILED = 2, /* a work-group loads a tile plus halo into local memory; each work-item computes
                            points_per_item points, sliding down columns */
  RCL_STENCIL_TASK = 3   /* one work-item loops over the grid (the single-work-item form FPGA compilers
                            pipeline); split into several launches where a driver limits loop counts */
} rcl_stencil_variant;
RCL_API const char *rcl_stencil_variant_name(rcl_stencil_variant v); /* "auto", "plain", "tiled", "task" */
RCL_API int rcl_stencil_variant_parse(rcl_stencil_variant *out, const char *name);

/* Launch configuration. Zeros mean "default": the tuned or cached choice for the grid size on this device,
 * else the platform defaults (docs/tuning.md; tuned on first use unless tuning is off). Any valid value
 * gives the same bits, only the speed changes.
 * Index [0] is x (along rows, the coalesced direction), [1] is y.
 *  - local_size: work-group shape (PLAIN and TILED).
 *  - TILED: a work-group computes a tile of tile[0] x tile[1] points, each work-item points_per_item[0]
 *    columns (strided by local_size[0]) of points_per_item[1] consecutive rows, so
 *    tile[d] = local_size[d] * points_per_item[d]. Give any two of the three per dimension (the third is
 *    derived) or all three consistently; the tile plus its halo must fit the device's local memory.
 *  - TASK takes none of them. */
#define RCL_STENCIL_OPTIONS_VERSION 1
typedef struct {
  unsigned int version;
  rcl_stencil_variant variant;
  size_t local_size[2];
  size_t tile[2];
  size_t points_per_item[2];
} rcl_stencil_options;
#define RCL_STENCIL_OPTIONS_INIT                                                                                       \
  {                                                                                                                    \
    RCL_STENCIL_OPTIONS_VERSION, RCL_STENCIL_AUTO, {0, 0}, {0, 0}, { 0, 0 }                                            \
  }

/* The launch configuration that a call with opts on a width x height grid would use on ctx (what the 0s
 * resolve to: the variant, and for TILED all three shapes), or the error it would give. st selects the
 * kernel; NULL means SOR. Fields left at 0 take the tuned or cached choice for that grid size if this
 * context has one, else the platform defaults (docs/tuning.md); this call never tunes. */
RCL_API int rcl_stencil_resolve_launch(rcl_stencil_options *out, rcl_context *ctx, rcl_dtype dtype,
                                       const rcl_stencil_desc *st, size_t width, size_t height,
                                       const rcl_stencil_options *opts);
/* The same without a grid size: the platform defaults for what opts leaves at 0. */
RCL_API int rcl_stencil_resolve_options(rcl_stencil_options *out, rcl_context *ctx, rcl_dtype dtype,
                                        const rcl_stencil_desc *st, const rcl_stencil_options *opts);

/* Grids are width x height points stored row by row: point (x, y) is element offset + y * pitch + x of
 * its buffer (elements, not bytes; pitch >= width, 0 means width). width and height are 1 .. 2^30.
 *
 * rcl_stencil_enqueue: `iters` applications of the stencil to `in` (never written), the result in `out`.
 * Iterations ping-pong between out and scratch (laid out like out; NULL: a temporary buffer, needed only
 * for iters >= 2); iters = 0 copies in to out unchanged. in, out and scratch must be distinct buffers.
 * One launch per iteration (several for TASK on drivers with a loop limit). */
RCL_API int rcl_stencil_enqueue(cl_mem out, size_t out_offset, size_t out_pitch, rcl_context *ctx,
                                const rcl_stencil_desc *st, rcl_dtype dtype, size_t width, size_t height, size_t iters,
                                cl_mem in, size_t in_offset, size_t in_pitch, cl_mem scratch,
                                const rcl_stencil_options *opts, const rcl_queue_args *q);

/* Host-array form: in and out hold width*height values (contiguous rows); out may equal in. Blocks. */
RCL_API int rcl_stencil(void *out, rcl_context *ctx, const rcl_stencil_desc *st, rcl_dtype dtype, size_t width,
                        size_t height, size_t iters, const void *in, const rcl_stencil_options *opts);

/* rcl_sor_enqueue: `sweeps` red-black SOR sweeps on grid, in place. Each sweep first updates every red
 * point ((x + y) even) from its neighbours, then every black point. rhs (NULL: Laplace, b = 0) holds b,
 * the right-hand side already scaled by h^2, laid out by rhs_offset / rhs_pitch. */
RCL_API int rcl_sor_enqueue(cl_mem grid, size_t offset, size_t pitch, rcl_context *ctx, const rcl_sor_desc *s,
                            rcl_dtype dtype, size_t width, size_t height, size_t sweeps, cl_mem rhs, size_t rhs_offset,
                            size_t rhs_pitch, const rcl_stencil_options *opts, const rcl_queue_args *q);

/* result[result_offset] = || r ||_2 with r = (u_N + u_S + u_W + u_E - b) - 4u at every point (the same
 * boundary as the sweeps), through the ordered nrm2 of rcl_reduce_enqueue. The residual kernel is the
 * task form for variant TASK and one work-item per point otherwise (with opts' local_size for PLAIN). */
RCL_API int rcl_sor_residual_enqueue(cl_mem result, size_t result_offset, rcl_context *ctx, const rcl_sor_desc *s,
                                     rcl_dtype dtype, size_t width, size_t height, cl_mem grid, size_t offset,
                                     size_t pitch, cl_mem rhs, size_t rhs_offset, size_t rhs_pitch,
                                     const rcl_stencil_options *opts, const rcl_queue_args *q);

/* Host-array form: grid (width*height values) is updated in place; rhs may be NULL; *residual (a float or
 * double by dtype; NULL to skip) receives the residual norm after the sweeps. Blocks. */
RCL_API int rcl_sor(void *grid, void *residual, rcl_context *ctx, const rcl_sor_desc *s, rcl_dtype dtype, size_t width,
                    size_t height, size_t sweeps, const void *rhs, const rcl_stencil_options *opts);

/* ---- host references (plain C compiled with -ffp-contract=off; no device needed) -------------------- */
/* The contract of rcl_stencil (contiguous grids; out may equal in). */
RCL_API int rcl_ref_stencil(void *out, const rcl_stencil_desc *st, rcl_dtype dtype, size_t width, size_t height,
                            size_t iters, const void *in);
/* The contract of rcl_sor (contiguous grids; rhs may be NULL; residual may be NULL). */
RCL_API int rcl_ref_sor(void *grid, void *residual, const rcl_sor_desc *s, rcl_dtype dtype, size_t width, size_t height,
                        size_t sweeps, const void *rhs);

/* Floating-point operations per point of one iteration: 11 for NINE, 2(2r+1)^2 - 1 for GENERAL (for
 * GFLOP/s figures; an SOR sweep costs 6 per point, 7 with a right-hand side). */
RCL_API size_t rcl_stencil_flops_per_point(const rcl_stencil_desc *st);

#ifdef __cplusplus
}
#endif
#endif
