/* The public front of the stencils and red-black SOR (cl/stencil.cl): names, argument checks, the tuner's
 * values where a call leaves a choice, and the host-array forms. The launch configuration and sequence are
 * stencil_launch.c's; the checks shared with the reference stencil_check.c's. */
#include <string.h>
#include <strings.h>

#include "stencil/stencil_internal.h"

/* A grid in a buffer (checked by rcl__grid_ref_check). */
typedef rcl__grid_ref grid_ref;
typedef rcl_stencil_kernel_kind kernel_kind;

/* ---- names ------------------------------------------------------------------------------------------ */

static const char *const boundary_names[] = {"fixed", "periodic", "edge"};
static const char *const variant_names[] = {"auto", "plain", "tiled", "task"};

const char *rcl_boundary_name(rcl_boundary b) {
  return (unsigned)b <= RCL_BOUNDARY_EDGE ? boundary_names[b] : "unknown";
}

int rcl_boundary_parse(rcl_boundary *out, const char *name) {
  if (!out || !name) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_boundary_parse: NULL argument");
  for (int i = 0; i <= RCL_BOUNDARY_EDGE; i++)
    if (!strcasecmp(name, boundary_names[i])) {
      *out = (rcl_boundary)i;
      return 0;
    }
  return rcl__fail(RCL_ERR_INVALID_ARG, "unknown boundary \"%s\" (expected fixed, periodic or edge)", name);
}

const char *rcl_stencil_kind_name(rcl_stencil_kind k) {
  return k == RCL_STENCIL_NINE ? "nine" : k == RCL_STENCIL_GENERAL ? "general" : "unknown";
}

const char *rcl_stencil_variant_name(rcl_stencil_variant v) {
  return (unsigned)v <= RCL_STENCIL_TASK ? variant_names[v] : "unknown";
}

int rcl_stencil_variant_parse(rcl_stencil_variant *out, const char *name) {
  if (!out || !name) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_stencil_variant_parse: NULL argument");
  for (int i = 0; i <= RCL_STENCIL_TASK; i++)
    if (!strcasecmp(name, variant_names[i])) {
      *out = (rcl_stencil_variant)i;
      return 0;
    }
  return rcl__fail(RCL_ERR_INVALID_ARG, "unknown stencil variant \"%s\" (expected auto, plain, tiled or task)", name);
}

size_t rcl_stencil_flops_per_point(const rcl_stencil_desc *st) {
  if (!st) return 0;
  if (st->kind == RCL_STENCIL_NINE) return 11;
  size_t k = 2 * (size_t)(st->radius == 2 ? 2 : 1) + 1;
  return 2 * k * k - 1;
}

/* ---- the tuner's values ---------------------------------------------------------------------------- */

/* Whether a call with o leaves a choice to the tuner (a variant, or a shape the fields do not determine). */
static int leaves_choice(const rcl_stencil_options *o) {
  if (!o || o->variant == RCL_STENCIL_AUTO) return 1;
  if (o->variant == RCL_STENCIL_TASK) return 0;
  if (o->variant == RCL_STENCIL_PLAIN) return !o->local_size[0] || !o->local_size[1];
  for (int d = 0; d < 2; d++)
    if ((o->local_size[d] != 0) + (o->tile[d] != 0) + (o->points_per_item[d] != 0) < 2) return 1;
  return 0;
}

/* Checks the options; where the caller leaves a choice, *soft = tv holds the tuner's values for a grid of
 * npoints points (tuning first when the context's mode says so; with may_tune 0 only what rcl_tune_get
 * reports), else *soft is NULL. The launch layer uses them as soft values. */
static int tuned_values(const size_t **soft, size_t tv[RCL_TUNE_MAX_PARAMS], rcl_context *ctx, rcl_dtype dt,
                        kernel_kind kk, unsigned int radius, const rcl_stencil_options *opts, size_t npoints,
                        int may_tune) {
  *soft = NULL;
  int rc = rcl__stencil_opts_check(opts);
  if (rc || !leaves_choice(opts)) return rc;
  const rcl_tune_kernel *tk = rcl__stencil_tune_kernel(kk, radius);
  rc = may_tune ? rcl__tune_lookup(tv, ctx, tk, dt, npoints) : rcl__tune_peek(tv, ctx, tk, dt, npoints);
  if (!rc) *soft = tv;
  return rc;
}

int rcl_stencil_resolve_launch(rcl_stencil_options *out, rcl_context *ctx, rcl_dtype dtype, const rcl_stencil_desc *st,
                               size_t width, size_t height, const rcl_stencil_options *opts) {
  if (!out || !ctx) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_stencil_resolve_launch: NULL output or context");
  unsigned int radius = 1;
  int rc = st ? rcl__stencil_check(st, &radius) : 0;
  if (!rc) rc = rcl__require_support(ctx, RCL_FAMILY_STENCIL, dtype);
  size_t npoints = 0;
  if (!rc && (width || height)) {
    rc = rcl__grid_check_dims(width, height, rcl_dtype_size(dtype), "rcl_stencil_resolve_launch");
    npoints = width * height;
  }
  if (rc) return rc;
  kernel_kind kk = !st ? RCL_STK_SOR : st->kind == RCL_STENCIL_NINE ? RCL_STK_NINE : RCL_STK_GENERAL;
  size_t tv[RCL_TUNE_MAX_PARAMS];
  const size_t *soft;
  rc = tuned_values(&soft, tv, ctx, dtype, kk, radius, opts, npoints, 0);
  return rc ? rc : rcl__stencil_config(out, ctx, dtype, kk, radius, opts, soft);
}

int rcl_stencil_resolve_options(rcl_stencil_options *out, rcl_context *ctx, rcl_dtype dtype, const rcl_stencil_desc *st,
                                const rcl_stencil_options *opts) {
  return rcl_stencil_resolve_launch(out, ctx, dtype, st, 0, 0, opts);
}

/* ---- stencils ------------------------------------------------------------------------------------ */

int rcl_stencil_enqueue(cl_mem out, size_t out_offset, size_t out_pitch, rcl_context *ctx, const rcl_stencil_desc *st,
                        rcl_dtype dtype, size_t width, size_t height, size_t iters, cl_mem in, size_t in_offset,
                        size_t in_pitch, cl_mem scratch, const rcl_stencil_options *opts, const rcl_queue_args *q) {
  if (!ctx) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_stencil_enqueue: NULL context");
  unsigned int radius;
  size_t es = rcl_dtype_size(dtype);
  int rc = rcl__stencil_check(st, &radius);
  if (!rc) rc = rcl__require_support(ctx, RCL_FAMILY_STENCIL, dtype);
  if (!rc) rc = rcl__grid_check_dims(width, height, es, "rcl_stencil_enqueue");
  grid_ref gin, gout, gscr;
  if (!rc) rc = rcl__grid_ref_check(&gin, in, in_offset, in_pitch, width, height, es, "in");
  if (!rc) rc = rcl__grid_ref_check(&gout, out, out_offset, out_pitch, width, height, es, "out");
  if (!rc && scratch) rc = rcl__grid_ref_check(&gscr, scratch, out_offset, out_pitch, width, height, es, "scratch");
  if (!rc && (in == out || scratch == in || scratch == out))
    rc = rcl__fail(RCL_ERR_INVALID_ARG, "in, out and scratch must be distinct buffers (iterations ping-pong between "
                                        "out and scratch; in is never written)");
  cl_command_queue queue;
  if (!rc) rc = rcl__queue_of(&queue, ctx, q);
  if (rc) return rc;

  kernel_kind kk = st->kind == RCL_STENCIL_NINE ? RCL_STK_NINE : RCL_STK_GENERAL;
  size_t tv[RCL_TUNE_MAX_PARAMS];
  const size_t *soft = NULL;
  if (iters > 0 && (rc = tuned_values(&soft, tv, ctx, dtype, kk, radius, opts, width * height, 1)) != 0) return rc;
  return rcl__stencil_run(queue, ctx, st, radius, dtype, width, height, iters, &gin, &gout, scratch ? &gscr : NULL,
                          opts, soft, q);
}

static int host_checks(rcl_context *ctx, rcl_dtype dtype, size_t w, size_t h, size_t *bytes, const char *fn) {
  if (!ctx) return rcl__fail(RCL_ERR_INVALID_ARG, "%s: NULL context", fn);
  if (!ctx->queue) return rcl__fail(RCL_ERR_INVALID_ARG, "%s: the context has no queue (wrapped without one)", fn);
  size_t es = rcl_dtype_size(dtype);
  if (!es) return rcl__fail(RCL_ERR_INVALID_ARG, "%s: unknown dtype %d", fn, (int)dtype);
  int rc = rcl__require_support(ctx, RCL_FAMILY_STENCIL, dtype);
  if (!rc) rc = rcl__grid_check_dims(w, h, es, fn);
  if (!rc) *bytes = w * h * es;
  return rc;
}

int rcl_stencil(void *out, rcl_context *ctx, const rcl_stencil_desc *st, rcl_dtype dtype, size_t width, size_t height,
                size_t iters, const void *in, const rcl_stencil_options *opts) {
  size_t bytes;
  unsigned int radius;
  int rc = host_checks(ctx, dtype, width, height, &bytes, "rcl_stencil");
  if (!rc) rc = rcl__stencil_check(st, &radius);
  if (rc) return rc;
  if (!out || !in) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_stencil: NULL %s grid", out ? "input" : "output");
  cl_mem bin = NULL, bout = NULL;
  rcl_chain ch;
  if ((rc = rcl__chain_host(&ch, ctx)) != 0) return rc;
  rc = rcl__buffer_copy(&bin, ctx, CL_MEM_READ_ONLY, in, bytes, "stencil input grid");
  if (!rc) rc = rcl__buffer_create(&bout, ctx, CL_MEM_READ_WRITE, bytes, NULL, "stencil output grid");
  if (!rc) {
    rcl_queue_args qa = rcl__chain_args(&ch);
    rc = rcl__chain_adopt(
        &ch, rcl_stencil_enqueue(bout, 0, 0, ctx, st, dtype, width, height, iters, bin, 0, 0, NULL, opts, &qa));
  }
  if (!rc) rc = rcl__chain_read(&ch, bout, 0, bytes, out, NULL, "stencil output grid");
  rc = rcl__chain_finish(&ch, NULL, rc);
  if (bin) clReleaseMemObject(bin);
  if (bout) clReleaseMemObject(bout);
  return rc;
}

/* ---- SOR ------------------------------------------------------------------------------------------ */

/* The checks shared by the sweeps and the residual; sets the kernel-independent arguments' values. */
static int sor_checks(rcl_context *ctx, const rcl_sor_desc *s, rcl_dtype dtype, size_t width, size_t height,
                      grid_ref *g, cl_mem grid, size_t offset, size_t pitch, grid_ref *b, cl_mem rhs, size_t rhs_offset,
                      size_t rhs_pitch, const char *fn) {
  if (!ctx) return rcl__fail(RCL_ERR_INVALID_ARG, "%s: NULL context", fn);
  size_t es = rcl_dtype_size(dtype);
  int rc = rcl__require_support(ctx, RCL_FAMILY_STENCIL, dtype);
  if (!rc) rc = rcl__grid_check_dims(width, height, es, fn);
  if (!rc) rc = rcl__sor_check(s, width, height);
  if (!rc) rc = rcl__grid_ref_check(g, grid, offset, pitch, width, height, es, "grid");
  memset(b, 0, sizeof *b);
  if (!rc && rhs) rc = rcl__grid_ref_check(b, rhs, rhs_offset, rhs_pitch, width, height, es, "rhs");
  if (!rc && rhs == grid) rc = rcl__fail(RCL_ERR_INVALID_ARG, "%s: rhs and grid must be distinct buffers", fn);
  return rc;
}

int rcl_sor_enqueue(cl_mem grid, size_t offset, size_t pitch, rcl_context *ctx, const rcl_sor_desc *s, rcl_dtype dtype,
                    size_t width, size_t height, size_t sweeps, cl_mem rhs, size_t rhs_offset, size_t rhs_pitch,
                    const rcl_stencil_options *opts, const rcl_queue_args *q) {
  grid_ref g, b;
  int rc = sor_checks(ctx, s, dtype, width, height, &g, grid, offset, pitch, &b, rhs, rhs_offset, rhs_pitch,
                      "rcl_sor_enqueue");
  cl_command_queue queue;
  if (!rc) rc = rcl__queue_of(&queue, ctx, q);
  if (rc) return rc;
  size_t tv[RCL_TUNE_MAX_PARAMS];
  const size_t *soft;
  if ((rc = tuned_values(&soft, tv, ctx, dtype, RCL_STK_SOR, 1, opts, width * height, 1)) != 0) return rc;
  return rcl__sor_run(queue, ctx, s, dtype, width, height, sweeps, &g, &b, opts, soft, q);
}

int rcl_sor_residual_enqueue(cl_mem result, size_t result_offset, rcl_context *ctx, const rcl_sor_desc *s,
                             rcl_dtype dtype, size_t width, size_t height, cl_mem grid, size_t offset, size_t pitch,
                             cl_mem rhs, size_t rhs_offset, size_t rhs_pitch, const rcl_stencil_options *opts,
                             const rcl_queue_args *q) {
  grid_ref g, b;
  int rc = sor_checks(ctx, s, dtype, width, height, &g, grid, offset, pitch, &b, rhs, rhs_offset, rhs_pitch,
                      "rcl_sor_residual_enqueue");
  size_t es = rcl_dtype_size(dtype), need;
  if (!rc) rc = rcl__mul_size(&need, result_offset + 1, es, "result offset");
  if (!rc) rc = rcl__check_buffer(result, need, "result");
  if (!rc) rc = rcl__stencil_opts_check(opts);
  cl_command_queue queue;
  if (!rc) rc = rcl__queue_of(&queue, ctx, q);
  if (rc) return rc;
  /* With variant AUTO the residual follows the sweeps' tuned (or platform) choice. */
  size_t tv[RCL_TUNE_MAX_PARAMS];
  const size_t *soft = NULL;
  if (!opts || opts->variant == RCL_STENCIL_AUTO) {
    if ((rc = rcl__tune_lookup(tv, ctx, rcl__stencil_tune_kernel(RCL_STK_SOR, 1), dtype, width * height)) != 0)
      return rc;
    soft = tv;
  }
  return rcl__sor_residual_run(queue, result, result_offset, ctx, s, dtype, width, height, &g, &b, opts, soft, q);
}

int rcl_sor(void *grid, void *residual, rcl_context *ctx, const rcl_sor_desc *s, rcl_dtype dtype, size_t width,
            size_t height, size_t sweeps, const void *rhs, const rcl_stencil_options *opts) {
  size_t bytes;
  int rc = host_checks(ctx, dtype, width, height, &bytes, "rcl_sor");
  if (!rc) rc = rcl__sor_check(s, width, height);
  if (rc) return rc;
  if (!grid) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_sor: NULL grid");
  cl_mem bg = NULL, bb = NULL, br = NULL;
  size_t es = rcl_dtype_size(dtype);
  rcl_chain ch;
  if ((rc = rcl__chain_host(&ch, ctx)) != 0) return rc;
  rc = rcl__buffer_copy(&bg, ctx, CL_MEM_READ_WRITE, grid, bytes, "SOR grid");
  if (!rc && rhs) rc = rcl__buffer_copy(&bb, ctx, CL_MEM_READ_ONLY, rhs, bytes, "SOR right-hand side");
  if (!rc && residual) rc = rcl__buffer_create(&br, ctx, CL_MEM_READ_WRITE, es, NULL, "SOR residual norm");
  if (!rc) {
    rcl_queue_args qa = rcl__chain_args(&ch);
    rc = rcl__chain_adopt(&ch, rcl_sor_enqueue(bg, 0, 0, ctx, s, dtype, width, height, sweeps, bb, 0, 0, opts, &qa));
  }
  if (!rc && residual) {
    rcl_queue_args qa = rcl__chain_args(&ch);
    rc = rcl__chain_adopt(&ch,
                          rcl_sor_residual_enqueue(br, 0, ctx, s, dtype, width, height, bg, 0, 0, bb, 0, 0, opts, &qa));
  }
  if (!rc) rc = rcl__chain_read(&ch, bg, 0, bytes, grid, NULL, "SOR grid");
  if (!rc && residual) rc = rcl__chain_read(&ch, br, 0, es, residual, NULL, "SOR residual norm");
  rc = rcl__chain_finish(&ch, NULL, rc);
  if (bg) clReleaseMemObject(bg);
  if (bb) clReleaseMemObject(bb);
  if (br) clReleaseMemObject(br);
  return rc;
}
