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
#include "reprocl/reduce.h"
#include "reprocl/stencil.h"

/* ---- checks and constants (stencil_check.c) ------------------------------------------------------- */

/* Checks width and height (1 .. RCL_GRID_MAX_DIM) and that width*height*es fits in size_t. */
RCL_SIBLING int rcl__grid_check_dims(size_t width, size_t height, size_t es, const char *what);

/* Checks a stencil description; *radius receives 1 or 2. */
RCL_SIBLING int rcl__stencil_check(const rcl_stencil_desc *st, unsigned int *radius);
/* Checks an SOR description for a grid (omega in (0, 2), the boundary, periodic sizes). */
RCL_SIBLING int rcl__sor_check(const rcl_sor_desc *s, size_t width, size_t height);

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

/* ---- one block of rows of a grid (stencil_block.c): what one device or one MPI rank computes --------
 * A W x H grid is cut into blocks of rows. A block computes rows [r0, r1) and holds `above` halo rows
 * before them and `below` after them: a local grid of `rows` = above + (r1 - r0) + below rows of W points,
 * whose local row l is global row (r0 - above + l) mod H. The family's kernels run on the local grid with
 * the grid's boundary rule, so x is the grid's own, and so are the top and bottom where the local grid
 * ends at the grid's top or bottom (fixed, edge: no halo there). A halo row is computed too, but it saw
 * the local grid's edge instead of its neighbours, so each step spoils `reach` more rows from each halo
 * edge inwards (reach: the radius per stencil iteration, 1 row per SOR half-sweep): with halo rows of
 * depth d a block can take d / reach steps, after which its own rows are still exact and its halo rows
 * must be replaced by their owners' rows (an exchange) before the next step. A halo row may belong to any
 * block, even the block itself (periodic, small grids) or one two blocks away (blocks thinner than the
 * halo); it always lies among the first or last min(d, r1 - r0) rows of its owner (rcl__block_edge). */
typedef struct {
  size_t width, height; /* the grid */
  size_t r0, r1;        /* the rows the block computes */
  size_t halo;          /* the halo depth asked (rcl__stencil_block_step checks its steps against it) */
  size_t above, below;  /* halo rows held before r0 and after r1 */
  size_t rows;          /* above + (r1 - r0) + below: the local grid's height (0 for an empty block) */
} rcl__block_geom;

/* The geometry of the block [r0, r1) with halo depth `halo`: no halo for an empty block or one that is
 * the whole grid; periodic: `halo` rows on each side (wrapping); else up to `halo` rows, stopping at the
 * grid's top and bottom. */
RCL_SIBLING void rcl__block_geom_init(rcl__block_geom *g, size_t width, size_t height, size_t r0, size_t r1,
                                      size_t halo, rcl_boundary bc);
/* The global row of local row l. */
RCL_SIBLING size_t rcl__block_global_row(const rcl__block_geom *g, size_t l);
/* The rows of this block that others need as halo rows of depth `halo`: its first e and its last e rows
 * (e = min(halo, r1 - r0); they overlap when the block is thinner than 2e). Returns e. Where global row
 * `row` (which the block computes) is among them: index row - r0 in the first e, else e + row - (r1 - e). */
RCL_SIBLING size_t rcl__block_edge(const rcl__block_geom *g, size_t halo);
RCL_SIBLING size_t rcl__block_edge_index(const rcl__block_geom *g, size_t halo, size_t row);
/* Copies the block's local grid (rows x W values of es bytes, local order) out of a whole grid. */
RCL_INTERNAL void rcl__block_gather(void *local, const void *grid, const rcl__block_geom *g, size_t es);

/* A block on a device: its local grid (and right-hand side) in device buffers, and the steps. */
typedef struct rcl__stencil_block rcl__stencil_block;
/* Uploads a block's local grid `local` (rows x W values, local order; rcl__block_gather) for the stencil st,
 * or for SOR sor (exactly one of st and sor; SOR's local rhs, laid out alike, may be NULL). SOR needs
 * r0 - above even (the red-black colours are the grid's: blocks start at even rows and halos are even),
 * as the whole grid (a block of every row) always is. The descriptions are checked by the caller. */
RCL_SIBLING int rcl__stencil_block_create(rcl__stencil_block **out, rcl_context *ctx, const rcl_stencil_desc *st,
                                          const rcl_sor_desc *sor, rcl_dtype dtype, const rcl__block_geom *g,
                                          const void *local, const void *local_rhs);
RCL_SIBLING void rcl__stencil_block_free(rcl__stencil_block *b);
/* k steps: k stencil iterations, or k SOR sweeps (2k half-sweeps: needs halos of 2k rows where there are
 * halos). Blocks until done. */
RCL_SIBLING int rcl__stencil_block_step(rcl__stencil_block *b, size_t k);
/* Reads / writes n local rows from local row l0 of the current grid (n x W values in host memory). */
RCL_SIBLING int rcl__stencil_block_read(void *host, rcl__stencil_block *b, size_t l0, size_t n);
RCL_SIBLING int rcl__stencil_block_write(rcl__stencil_block *b, size_t l0, size_t n, const void *host);
/* SOR: this block's part of the residual norm (reduce.ordered nrm2 over the residuals of rows [r0, r1) as a
 * slice of the grid's row-major residual vector, rcl_reduce_partial): its halo rows (depth >= 1) must be
 * current. */
RCL_SIBLING int rcl__stencil_block_residual(rcl_partial **out, rcl__stencil_block *b);

#endif
