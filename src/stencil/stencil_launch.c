/* The stencils' and red-black SOR's launch layer (cl/stencil.cl): the launch configuration (variant,
 * work-group shape, tile shape, points per work-item) resolved from the caller's options and the tuner's
 * values (given by the caller, never looked up here), and the launch sequence (one launch per iteration or
 * half-sweep, several for the task variant on drivers with a loop limit), on arguments the front
 * (stencil.c) checked. Used by the front and the tuner plug-in (stencil_tune.c); calls neither. The
 * configuration only changes speed: every one gives the bits of the host reference (stencil_ref.c). */
#include <string.h>

#include "stencil/stencil_internal.h"

/* ---- launch configuration ---------------------------------------------------------------------------- */

typedef rcl_stencil_kernel_kind kernel_kind;

/* The plain kernels' register blocks: points_per_item is a compile-time constant of the program (one
 * program per shape), so it is bounded; SOR's plain kernel (in place, every other point) is not blocked. */
#define PLAIN_MAX_PX 8
#define PLAIN_MAX_PY 16

static size_t ceil_div(size_t a, size_t b) { return a / b + (a % b != 0); }

static const char *kernel_name(kernel_kind kk, rcl_stencil_variant v) {
  static const char *const names[3][3] = {
      {"rcl_stencil_nine_plain", "rcl_stencil_nine_tiled", "rcl_stencil_nine_task"},
      {"rcl_stencil_general_plain", "rcl_stencil_general_tiled", "rcl_stencil_general_task"},
      {"rcl_sor_plain", "rcl_sor_tiled", "rcl_sor_task"}};
  unsigned idx = (unsigned)v - (unsigned)RCL_STENCIL_PLAIN;
  return idx < 3 ? names[kk][idx] : "rcl_stencil_invalid_variant";
}

static const char *radius_define(unsigned int radius) { return radius == 2 ? "-DST_R=2" : "-DST_R=1"; }

/* Loop iterations one task work-item spends per point (the general stencil's weight loop counts where the
 * compiler keeps it). */
static size_t task_cost(kernel_kind kk, unsigned int radius) {
  return kk == RCL_STK_GENERAL ? (2 * radius + 1) * (2 * radius + 1) + 1 : 1;
}

/* Whether the caller's shape fields (local_size, tile, points_per_item) can be used by variant v. */
static int shape_fits(const rcl_stencil_options *o, rcl_stencil_variant v) {
  for (int d = 0; o && d < 2; d++) {
    if (v == RCL_STENCIL_TASK && (o->local_size[d] || o->tile[d] || o->points_per_item[d])) return 0;
    if (v == RCL_STENCIL_PLAIN && o->points_per_item[d] > (d ? PLAIN_MAX_PY : PLAIN_MAX_PX)) return 0;
  }
  return 1;
}

/* The variant: the caller's; else the tuned, cached or platform one (soft: skipped when the caller's
 * shape fields do not fit it); else tiled on GPUs and accelerators, plain on CPUs. */
static rcl_stencil_variant pick_variant(const rcl_context *ctx, const rcl_stencil_options *o, const size_t *soft) {
  if (o && o->variant != RCL_STENCIL_AUTO) return o->variant;
  if (soft && soft[RCL_ST_P_VARIANT] >= RCL_STENCIL_PLAIN && soft[RCL_ST_P_VARIANT] <= RCL_STENCIL_TASK &&
      shape_fits(o, (rcl_stencil_variant)soft[RCL_ST_P_VARIANT]))
    return (rcl_stencil_variant)soft[RCL_ST_P_VARIANT];
  return (ctx->profile.type & CL_DEVICE_TYPE_CPU) ? RCL_STENCIL_PLAIN : RCL_STENCIL_TILED;
}

/* Checks a work-group shape against the kernel and the device. */
static int check_local(const size_t l[2], size_t kmax, const rcl_context *ctx, const char *kname) {
  const rcl_device_profile *p = &ctx->profile;
  if (l[0] == 0 || l[1] == 0) return rcl__fail(RCL_ERR_INVALID_ARG, "local_size %zux%zu has a zero side", l[0], l[1]);
  if (l[0] > p->max_work_item_sizes[0] || l[1] > p->max_work_item_sizes[1])
    return rcl__fail(RCL_ERR_INVALID_ARG, "local_size %zux%zu exceeds %s's work-item sizes %zux%zu", l[0], l[1],
                     p->device_name, p->max_work_item_sizes[0], p->max_work_item_sizes[1]);
  if (l[0] > kmax || l[1] > kmax || l[0] * l[1] > kmax)
    return rcl__fail(RCL_ERR_INVALID_ARG, "local_size %zux%zu (%zu work-items) exceeds %s's limit of %zu on %s", l[0],
                     l[1], l[0] * l[1], kname, kmax, p->device_name);
  return 0;
}

/* A default work-group shape: x as wide as allowed up to want_x (coalesced rows), then y. */
static void default_local(size_t l[2], size_t want_x, size_t want_y, size_t kmax, const rcl_context *ctx) {
  size_t x = want_x < kmax ? want_x : kmax;
  if (x > ctx->profile.max_work_item_sizes[0]) x = ctx->profile.max_work_item_sizes[0];
  if (x < 1) x = 1;
  size_t y = kmax / x < want_y ? kmax / x : want_y;
  if (y > ctx->profile.max_work_item_sizes[1]) y = ctx->profile.max_work_item_sizes[1];
  l[0] = x;
  l[1] = y < 1 ? 1 : y;
}

/* Resolves the tiled shape per dimension: tile = local * points_per_item; any two given determine the
 * third, all three must agree. */
static int resolve_tiled_dim(size_t *L, size_t *P, size_t *T, size_t dl, size_t dp, int d) {
  const char *axis = d ? "y" : "x";
  if (*T) {
    if (*L && *P) {
      if (*L > *T / *P || *L * *P != *T)
        return rcl__fail(RCL_ERR_INVALID_ARG,
                         "tile[%d] = %zu is not local_size[%d] * points_per_item[%d] = %zu * %zu (%s)", d, *T, d, d, *L,
                         *P, axis);
    } else if (*L) {
      if (*T % *L)
        return rcl__fail(RCL_ERR_INVALID_ARG, "tile[%d] = %zu is not a multiple of local_size[%d] = %zu", d, *T, d, *L);
      *P = *T / *L;
    } else if (*P) {
      if (*T % *P)
        return rcl__fail(RCL_ERR_INVALID_ARG, "tile[%d] = %zu is not a multiple of points_per_item[%d] = %zu", d, *T, d,
                         *P);
      *L = *T / *P;
    } else {
      *P = (*T % dp == 0 && *T / dp >= 1) ? dp : 1;
      *L = *T / *P;
    }
  } else {
    if (!*L) *L = dl;
    if (!*P) *P = dp;
    if (*P > 4096 || *L > 4096)
      return rcl__fail(RCL_ERR_INVALID_ARG, "%s tile of %zu x %zu is too large", axis, *L, *P);
    *T = *L * *P;
  }
  return 0;
}

static int check_plain_points(const rcl_stencil_options *o, kernel_kind kk, const rcl_context *ctx) {
  const size_t px = o->points_per_item[0], py = o->points_per_item[1];
  if (kk == RCL_STK_SOR && (px != 1 || py != 1))
    return rcl__fail(RCL_ERR_INVALID_ARG,
                     "points_per_item %zux%zu: the plain SOR kernel computes one point per work-item (use the "
                     "tiled variant for several)",
                     px, py);
  if (px > PLAIN_MAX_PX || py > PLAIN_MAX_PY)
    return rcl__fail(RCL_ERR_INVALID_ARG,
                     "points_per_item %zux%zu is too large for the plain variant (at most %dx%d: the block is held "
                     "in registers)",
                     px, py, PLAIN_MAX_PX, PLAIN_MAX_PY);
  /* Loop iterations of one work-item: its rows, each with its columns (edge blocks: every point). */
  size_t iters = py * (1 + px);
  if (iters > rcl__loop_budget(ctx))
    return rcl__fail(RCL_ERR_INVALID_ARG,
                     "points_per_item %zux%zu needs %zu loop iterations per work-item, past %s's limit of %llu", px, py,
                     iters, ctx->profile.device_name, (unsigned long long)ctx->profile.loop_iteration_limit);
  return 0;
}

/* The program defines of a kernel: the radius, and a plain kernel's register block when it is not 1 x 1. */
static const char *kernel_defines(char *buf, size_t n, unsigned int radius, const rcl_stencil_options *o) {
  if (o->variant != RCL_STENCIL_PLAIN || (o->points_per_item[0] <= 1 && o->points_per_item[1] <= 1))
    return radius == 2 ? "-DST_R=2" : "-DST_R=1";
  snprintf(buf, n, "-DST_R=%u -DST_PX=%zu -DST_PY=%zu", radius == 2 ? 2u : 1u, o->points_per_item[0],
           o->points_per_item[1]);
  return buf;
}

typedef struct {
  rcl_stencil_options o; /* resolved */
  size_t lmem;           /* bytes of local memory (TILED) */
} launch_cfg;

/* PLAIN: points per work-item: the caller's; else the tuned or cached ones where those are for plain (a
 * tiled choice's points are not); else 1 x 1. tile = local_size * points_per_item, any two given. */
static int resolve_plain(rcl_stencil_options *o, const rcl_stencil_options *in, const size_t *soft, size_t kmax,
                         rcl_context *ctx, kernel_kind kk, const char *kname) {
  int rc;
  const int soft_plain = soft[RCL_ST_P_VARIANT] == RCL_STENCIL_PLAIN;
  const size_t dp[2] = {soft_plain && soft[RCL_ST_P_POINTS_X] ? soft[RCL_ST_P_POINTS_X] : 1,
                        soft_plain && soft[RCL_ST_P_POINTS_Y] ? soft[RCL_ST_P_POINTS_Y] : 1};
  size_t dl[2];
  default_local(dl,
                in->local_size[0]        ? in->local_size[0]
                : soft[RCL_ST_P_LOCAL_X] ? soft[RCL_ST_P_LOCAL_X]
                                         : 64,
                soft[RCL_ST_P_LOCAL_Y] ? soft[RCL_ST_P_LOCAL_Y] : 4, kmax, ctx);
  if (in->local_size[0] && in->local_size[1] && (rc = check_local(in->local_size, kmax, ctx, kname)))
    return rc; /* the device's limit names the problem better than the shape's size */
  for (int d = 0; d < 2; d++) {
    o->local_size[d] = in->local_size[d];
    o->points_per_item[d] = in->points_per_item[d];
    o->tile[d] = in->tile[d];
    if ((rc = resolve_tiled_dim(&o->local_size[d], &o->points_per_item[d], &o->tile[d], dl[d], dp[d], d))) return rc;
  }
  if ((rc = check_local(o->local_size, kmax, ctx, kname))) return rc;
  return check_plain_points(o, kk, ctx);
}

/* TILED: x first, then a default y that fits the kernel's limit beside the x chosen. */
static int resolve_tiled(rcl_stencil_options *o, const rcl_stencil_options *in, const size_t *soft, size_t kmax,
                         rcl_context *ctx, const char *kname) {
  int rc;
  const size_t dp[2] = {soft[RCL_ST_P_POINTS_X] ? soft[RCL_ST_P_POINTS_X] : 1,
                        soft[RCL_ST_P_POINTS_Y] ? soft[RCL_ST_P_POINTS_Y] : 8};
  for (int d = 0; d < 2; d++) {
    size_t dl[2];
    default_local(dl, d == 0 ? (soft[RCL_ST_P_LOCAL_X] ? soft[RCL_ST_P_LOCAL_X] : 32) : o->local_size[0],
                  soft[RCL_ST_P_LOCAL_Y] ? soft[RCL_ST_P_LOCAL_Y] : 8, kmax, ctx);
    o->local_size[d] = in->local_size[d];
    o->points_per_item[d] = in->points_per_item[d];
    o->tile[d] = in->tile[d];
    if ((rc = resolve_tiled_dim(&o->local_size[d], &o->points_per_item[d], &o->tile[d], dl[d], dp[d], d))) return rc;
  }
  return check_local(o->local_size, kmax, ctx, kname);
}

/* A tiled shape's limits: the tile with its halo in local memory (cfg->lmem), and the loop iterations of one
 * work-item within the device's budget. */
static int check_tiled_limits(launch_cfg *cfg, rcl_context *ctx, rcl_dtype dt, kernel_kind kk, unsigned int radius) {
  const rcl_stencil_options *o = &cfg->o;
  size_t budget = rcl__loop_budget(ctx);
  size_t es = rcl_dtype_size(dt), h = 2 * radius;
  if (o->tile[0] > 65536 || o->tile[1] > 65536)
    return rcl__fail(RCL_ERR_INVALID_ARG, "tile %zux%zu is too large", o->tile[0], o->tile[1]);
  cfg->lmem = (o->tile[0] + h) * (o->tile[1] + h) * es;
  if (cfg->lmem > ctx->profile.local_mem_size)
    return rcl__fail(RCL_ERR_INVALID_ARG, "tile %zux%zu plus its halo needs %zu bytes of local memory, %s has %llu",
                     o->tile[0], o->tile[1], cfg->lmem, ctx->profile.device_name,
                     (unsigned long long)ctx->profile.local_mem_size);
  /* Loop iterations of one work-item: loading the tile, then its points (and the weight loop). */
  size_t load = ceil_div(o->tile[1] + h, o->local_size[1]) * (1 + ceil_div(o->tile[0] + h, o->local_size[0]));
  size_t per_point = kk == RCL_STK_GENERAL ? task_cost(kk, radius) : 1;
  size_t iters = load + o->points_per_item[0] * (1 + o->points_per_item[1] * per_point);
  if (iters > budget)
    return rcl__fail(RCL_ERR_INVALID_ARG,
                     "tile %zux%zu with local_size %zux%zu needs %zu loop iterations per work-item, past %s's limit "
                     "of %llu (use fewer points per work-item)",
                     o->tile[0], o->tile[1], o->local_size[0], o->local_size[1], iters, ctx->profile.device_name,
                     (unsigned long long)ctx->profile.loop_iteration_limit);
  return 0;
}

/* Resolves opts for a kernel whose variant is already picked; k is that kernel. soft (or NULL) holds the
 * tuned, cached or platform values (RCL_ST_P_*; 0: none) used where the caller left a field at 0, as the
 * built-in defaults are: clamped to the kernel's work-group limit. */
static int resolve(launch_cfg *cfg, rcl_context *ctx, rcl_dtype dt, kernel_kind kk, unsigned int radius,
                   rcl_stencil_variant v, cl_kernel k, const char *kname, const rcl_stencil_options *opts,
                   const size_t *soft) {
  static const size_t none[RCL_TUNE_MAX_PARAMS];
  if (!soft) soft = none;
  rcl_stencil_options in = opts ? *opts : (rcl_stencil_options)RCL_STENCIL_OPTIONS_INIT;
  rcl_stencil_options *o = &cfg->o;
  memset(cfg, 0, sizeof *cfg);
  o->version = RCL_STENCIL_OPTIONS_VERSION;
  o->variant = v;
  size_t kmax;
  int rc = rcl__kernel_wg_max(&kmax, k, ctx, kname);
  if (rc) return rc;
  if (v == RCL_STENCIL_TASK) {
    for (int d = 0; d < 2; d++)
      if (in.local_size[d] || in.tile[d] || in.points_per_item[d])
        return rcl__fail(RCL_ERR_INVALID_ARG, "the task variant is one work-item: local_size, tile and "
                                              "points_per_item must be 0");
    return 0;
  }
  if (v == RCL_STENCIL_PLAIN) return resolve_plain(o, &in, soft, kmax, ctx, kk, kname);
  if ((rc = resolve_tiled(o, &in, soft, kmax, ctx, kname))) return rc;
  return check_tiled_limits(cfg, ctx, dt, kk, radius);
}

/* Gets variant v's kernel and resolves the configuration with it. A plain kernel with a register block is
 * another program: it is built once the block is known and the work-group shape checked against it too. */
static int prepare_variant(launch_cfg *cfg, cl_kernel *k, rcl_context *ctx, rcl_dtype dt, kernel_kind kk,
                           unsigned int radius, rcl_stencil_variant v, const rcl_stencil_options *opts,
                           const size_t *soft) {
  const char *name = kernel_name(kk, v);
  int rc = rcl__kernel_get(k, ctx, "stencil.cl", dt, radius_define(radius), name);
  if (!rc) rc = resolve(cfg, ctx, dt, kk, radius, v, *k, name, opts, soft);
  char defs[64];
  const char *blocked = rc ? NULL : kernel_defines(defs, sizeof defs, radius, &cfg->o);
  if (blocked && blocked == defs) {
    size_t kmax;
    clReleaseKernel(*k);
    *k = NULL;
    rc = rcl__kernel_get(k, ctx, "stencil.cl", dt, blocked, name);
    if (!rc) rc = rcl__kernel_wg_max(&kmax, *k, ctx, name);
    if (!rc) rc = check_local(cfg->o.local_size, kmax, ctx, name);
  }
  if (rc && *k) {
    clReleaseKernel(*k);
    *k = NULL;
  }
  return rc;
}

/* Picks the variant, gets its kernel and resolves the configuration. soft (or NULL) holds the tuner's
 * values for a call that leaves a choice: they are soft, and if they cannot launch the built-in defaults
 * are used, so a tuned or platform value never makes a call fail. */
static int plan(launch_cfg *cfg, cl_kernel *k, rcl_context *ctx, rcl_dtype dt, kernel_kind kk, unsigned int radius,
                const rcl_stencil_options *opts, const size_t *soft) {
  rcl_stencil_variant v = pick_variant(ctx, opts, soft);
  *k = NULL;
  int rc = prepare_variant(cfg, k, ctx, dt, kk, radius, v, opts, soft);
  if (rc == RCL_ERR_INVALID_ARG && soft) {
    rcl_error_clear();
    rc = prepare_variant(cfg, k, ctx, dt, kk, radius, pick_variant(ctx, opts, NULL), opts, NULL);
  }
  return rc;
}

int rcl__stencil_config(rcl_stencil_options *out, rcl_context *ctx, rcl_dtype dt, kernel_kind kk, unsigned int radius,
                        const rcl_stencil_options *opts, const size_t *soft) {
  launch_cfg cfg;
  cl_kernel k = NULL;
  int rc = rcl__stencil_opts_check(opts);
  if (!rc) rc = plan(&cfg, &k, ctx, dt, kk, radius, opts, soft);
  if (k) clReleaseKernel(k);
  if (!rc) *out = cfg.o;
  return rc;
}

/* ---- launching ------------------------------------------------------------------------------------ */

static int set_arg(cl_kernel k, const char *name, cl_uint idx, size_t size, const void *val) {
  cl_int err = clSetKernelArg(k, idx, size, val);
  return err == CL_SUCCESS ? 0 : rcl__fail_cl(err, "clSetKernelArg(%s, arg %u, %zu bytes)", name, idx, size);
}

/* A grid in a buffer (checked by rcl__grid_ref_check). */
typedef rcl__grid_ref grid_ref;

/* The task variant's rectangles: as many whole rows per launch as the loop budget allows, else pieces of
 * one row. */
typedef struct {
  size_t rows, cols; /* per launch */
} task_split;

static task_split task_plan(const rcl_context *ctx, size_t w, size_t h, size_t cost) {
  size_t budget = rcl__loop_budget(ctx);
  task_split s = {h, w};
  if (budget == SIZE_MAX) return s;
  size_t per_row = w * cost + 1;
  if (per_row <= budget) {
    s.rows = budget / per_row;
    if (s.rows > h) s.rows = h;
  } else {
    s.rows = 1;
    s.cols = (budget - 1) / cost;
  }
  return s;
}

/* Enqueues k, whose arguments before `extra` are set, over a w x h grid as the configuration says. The
 * variant's own arguments follow from index `extra`: TILED px, py and the local tile; TASK x0, x1, y0, y1.
 * cost: task loop iterations per point. half_x: the plain kernel covers every other point of a row (SOR). */
static int launch(rcl_chain *ch, rcl_context *ctx, cl_kernel k, const char *name, const launch_cfg *cfg, cl_uint extra,
                  size_t w, size_t h, size_t cost, int half_x) {
  const rcl_stencil_options *o = &cfg->o;
  int rc = 0;
  if (o->variant == RCL_STENCIL_TASK) {
    task_split s = task_plan(ctx, w, h, cost);
    const size_t one = 1;
    for (size_t y0 = 0; y0 < h && !rc; y0 += s.rows)
      for (size_t x0 = 0; x0 < w && !rc; x0 += s.cols) {
        cl_int r[4] = {(cl_int)x0, (cl_int)(x0 + s.cols < w ? x0 + s.cols : w), (cl_int)y0,
                       (cl_int)(y0 + s.rows < h ? y0 + s.rows : h)};
        for (cl_uint a = 0; a < 4 && !rc; a++) rc = set_arg(k, name, extra + a, sizeof r[a], &r[a]);
        if (!rc) rc = rcl__chain_kernel_nd(ch, k, name, 1, &one, &one);
      }
    return rc;
  }
  size_t global[2], span[2] = {half_x ? (w + 1) / 2 : w, h};
  for (int d = 0; d < 2; d++) global[d] = ceil_div(span[d], o->tile[d]) * o->local_size[d];
  if (o->variant == RCL_STENCIL_TILED) {
    cl_int px = (cl_int)o->points_per_item[0], py = (cl_int)o->points_per_item[1];
    if (!rc) rc = set_arg(k, name, extra, sizeof px, &px);
    if (!rc) rc = set_arg(k, name, extra + 1, sizeof py, &py);
    if (!rc) rc = set_arg(k, name, extra + 2, cfg->lmem, NULL);
  }
  if (!rc) rc = rcl__chain_kernel_nd(ch, k, name, 2, global, o->local_size);
  return rc;
}

/* Sets a grid kernel's leading arguments: out, ooff, opitch, in, ioff, ipitch, W, H, bc, bval. */
static int set_grid_args(cl_kernel k, const char *name, const grid_ref *out, const grid_ref *in, size_t w, size_t h,
                         rcl_boundary bc, const void *bval, size_t es) {
  cl_int W = (cl_int)w, H = (cl_int)h, b = (cl_int)bc;
  return rcl__set_args(k, name, 10, sizeof(cl_mem), &out->buf, sizeof out->off, &out->off, sizeof out->pitch,
                       &out->pitch, sizeof(cl_mem), &in->buf, sizeof in->off, &in->off, sizeof in->pitch, &in->pitch,
                       sizeof W, &W, sizeof H, &H, sizeof b, &b, es, bval);
}

/* SOR kernels' leading arguments: g, goff, gpitch, W, H, bc, bval, rhs, roff, rpitch, has_b. */
static int set_sor_args(cl_kernel k, const char *name, const grid_ref *g, const grid_ref *b, size_t w, size_t h,
                        rcl_boundary bc, const void *bval, size_t es) {
  cl_int W = (cl_int)w, H = (cl_int)h, bci = (cl_int)bc, has_b = b->buf != NULL;
  return rcl__set_args(k, name, 11, sizeof(cl_mem), &g->buf, sizeof g->off, &g->off, sizeof g->pitch, &g->pitch,
                       sizeof W, &W, sizeof H, &H, sizeof bci, &bci, es, bval, sizeof(cl_mem), &b->buf, sizeof b->off,
                       &b->off, sizeof b->pitch, &b->pitch, sizeof has_b, &has_b);
}

/* ---- stencils ------------------------------------------------------------------------------------ */

int rcl__stencil_run(cl_command_queue queue, rcl_context *ctx, const rcl_stencil_desc *st, unsigned int radius,
                     rcl_dtype dtype, size_t width, size_t height, size_t iters, const grid_ref *in,
                     const grid_ref *out, const grid_ref *scratch, const rcl_stencil_options *opts, const size_t *soft,
                     const rcl_queue_args *q) {
  size_t es = rcl_dtype_size(dtype);
  grid_ref gin = *in, gout = *out, gscr = {NULL, 0, 0};
  if (scratch) gscr = *scratch;
  int rc;
  kernel_kind kk = st->kind == RCL_STENCIL_NINE ? RCL_STK_NINE : RCL_STK_GENERAL;
  cl_kernel k = NULL;
  cl_mem wbuf = NULL, tmp = NULL;
  launch_cfg cfg;
  rcl__stencil_consts c;
  unsigned char bval[8];
  rcl__to_dtype(bval, st->boundary_value, dtype);
  rcl__stencil_weights(&c, st, radius, dtype);
  rcl_chain ch;
  rcl__chain_begin(&ch, queue, q);
  if ((rc = rcl__chain_lazy(&ch, ctx, q)) != 0) return rc;
  if (iters == 0) {
    rc = rcl__kernel_get(&k, ctx, "stencil.cl", dtype, radius_define(radius), "rcl_grid_copy");
    if (!rc) rc = set_grid_args(k, "rcl_grid_copy", &gout, &gin, width, height, st->boundary, bval, es);
    size_t kmax, local[2], global[2];
    if (!rc) rc = rcl__kernel_wg_max(&kmax, k, ctx, "rcl_grid_copy");
    if (!rc) {
      default_local(local, 64, 4, kmax, ctx);
      global[0] = ceil_div(width, local[0]) * local[0];
      global[1] = ceil_div(height, local[1]) * local[1];
      rc = rcl__chain_kernel_nd(&ch, k, "rcl_grid_copy", 2, global, local);
    }
  } else {
    rc = plan(&cfg, &k, ctx, dtype, kk, radius, opts, soft);
    /* Only a prepared configuration has a resolved variant (a failed one may still say "auto"). */
    const char *name = rc ? "" : kernel_name(kk, cfg.o.variant);
    size_t nw = kk == RCL_STK_NINE ? 3 : (2 * radius + 1) * (2 * radius + 1);
    if (!rc && kk == RCL_STK_GENERAL)
      rc = rcl__buffer_create(&wbuf, ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, nw * es,
                              dtype == RCL_F32 ? (void *)c.f : (void *)c.d, "stencil weights");
    if (!rc && iters >= 2 && !scratch) {
      size_t bytes = (gout.off + gout.pitch * (height - 1) + width) * es; /* checked by the front */
      rc = rcl__buffer_create(&tmp, ctx, CL_MEM_READ_WRITE, bytes, NULL, "stencil scratch grid");
      gscr.buf = tmp;
      gscr.off = gout.off;
      gscr.pitch = gout.pitch;
    }
    /* The last iteration writes out; before it they alternate, so iteration i writes out when
     * iters - 1 - i is even. */
    cl_uint extra = 0;
    if (!rc && kk == RCL_STK_NINE) {
      for (cl_uint a = 0; a < 3 && !rc; a++)
        rc = set_arg(k, name, 10 + a, es, dtype == RCL_F32 ? (void *)&c.f[a] : (void *)&c.d[a]);
      extra = 13;
    } else if (!rc) {
      rc = set_arg(k, name, 10, sizeof wbuf, &wbuf);
      extra = 11;
    }
    const grid_ref *src = &gin;
    for (size_t i = 0; i < iters && !rc; i++) {
      const grid_ref *dst = (iters - 1 - i) % 2 == 0 ? &gout : &gscr;
      rc = set_grid_args(k, name, dst, src, width, height, st->boundary, bval, es);
      if (!rc) rc = launch(&ch, ctx, k, name, &cfg, extra, width, height, task_cost(kk, radius), 0);
      src = dst;
    }
  }
  if (k) clReleaseKernel(k);
  if (wbuf) clReleaseMemObject(wbuf); /* OpenCL keeps them until the enqueued commands finish */
  if (tmp) clReleaseMemObject(tmp);
  return rcl__chain_finish(&ch, q, rc); /* nothing of a failed call runs on after it */
}

/* ---- SOR ------------------------------------------------------------------------------------------ */

int rcl__sor_run(cl_command_queue queue, rcl_context *ctx, const rcl_sor_desc *s, rcl_dtype dtype, size_t width,
                 size_t height, size_t sweeps, const grid_ref *g, const grid_ref *b, const rcl_stencil_options *opts,
                 const size_t *soft, const rcl_queue_args *q) {
  int rc;
  size_t es = rcl_dtype_size(dtype);
  unsigned char bval[8], c1[8], c0[8];
  rcl__to_dtype(bval, s->boundary_value, dtype);
  rcl__sor_coefficients(c1, c0, s->omega, dtype);
  cl_kernel k = NULL;
  launch_cfg cfg;
  rcl_chain ch;
  rcl__chain_begin(&ch, queue, q);
  if ((rc = rcl__chain_lazy(&ch, ctx, q)) != 0) return rc;
  rc = plan(&cfg, &k, ctx, dtype, RCL_STK_SOR, 1, opts, soft);
  const char *name = rc ? "" : kernel_name(RCL_STK_SOR, cfg.o.variant);
  if (!rc) rc = set_sor_args(k, name, g, b, width, height, s->boundary, bval, es);
  if (!rc) rc = set_arg(k, name, 11, es, c1);
  if (!rc) rc = set_arg(k, name, 12, es, c0);
  for (size_t i = 0; i < 2 * sweeps && !rc; i++) { /* red (colour 0), then black, per sweep */
    cl_int colour = (cl_int)(i % 2);
    rc = set_arg(k, name, 13, sizeof colour, &colour);
    if (!rc) rc = launch(&ch, ctx, k, name, &cfg, 14, width, height, 1, cfg.o.variant == RCL_STENCIL_PLAIN);
  }
  if (k) clReleaseKernel(k);
  return rcl__chain_finish(&ch, q, rc); /* nothing of a failed call runs on after it */
}

int rcl__sor_residual_run(cl_command_queue queue, cl_mem result, size_t result_offset, rcl_context *ctx,
                          const rcl_sor_desc *s, rcl_dtype dtype, size_t width, size_t height, const grid_ref *g,
                          const grid_ref *b, const rcl_stencil_options *opts, const size_t *soft,
                          const rcl_queue_args *q) {
  size_t es = rcl_dtype_size(dtype);
  int rc;
  unsigned char bval[8];
  rcl__to_dtype(bval, s->boundary_value, dtype);
  /* One work-item per point, or the task form: the residual is one pass with no reuse to tile for. With
   * variant AUTO it follows the sweeps' tuned (or platform) choice, soft: the task form where that is task,
   * else one work-item per point with the sweeps' work-group shape as a soft default. */
  size_t n = width * height; /* checked by rcl__grid_check_dims */
  rcl_stencil_variant rv = opts ? opts->variant : RCL_STENCIL_AUTO;
  if (rv == RCL_STENCIL_AUTO && soft && soft[RCL_ST_P_VARIANT] == RCL_STENCIL_TASK &&
      shape_fits(opts, RCL_STENCIL_TASK))
    rv = RCL_STENCIL_TASK;
  launch_cfg cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.o.variant = rv == RCL_STENCIL_TASK ? RCL_STENCIL_TASK : RCL_STENCIL_PLAIN;
  const char *name = cfg.o.variant == RCL_STENCIL_TASK ? "rcl_sor_residual_task" : "rcl_sor_residual_plain";
  cl_kernel k = NULL;
  cl_mem res = NULL;
  rcl_chain ch;
  rcl__chain_begin(&ch, queue, q);
  if ((rc = rcl__chain_lazy(&ch, ctx, q)) != 0) return rc;
  rc = rcl__kernel_get(&k, ctx, "stencil.cl", dtype, radius_define(1), name);
  if (!rc && cfg.o.variant == RCL_STENCIL_PLAIN) {
    rcl_stencil_options po = RCL_STENCIL_OPTIONS_INIT;
    po.variant = RCL_STENCIL_PLAIN;
    if (opts && opts->variant == RCL_STENCIL_PLAIN) po = *opts;
    rc = resolve(&cfg, ctx, dtype, RCL_STK_SOR, 1, RCL_STENCIL_PLAIN, k, name, &po, soft);
    if (rc == RCL_ERR_INVALID_ARG && soft) {
      rcl_error_clear();
      rc = resolve(&cfg, ctx, dtype, RCL_STK_SOR, 1, RCL_STENCIL_PLAIN, k, name, &po, NULL);
    }
  }
  if (!rc) rc = rcl__buffer_create(&res, ctx, CL_MEM_READ_WRITE, n * es, NULL, "SOR residual grid");
  if (!rc) rc = set_sor_args(k, name, g, b, width, height, s->boundary, bval, es);
  if (!rc) rc = set_arg(k, name, 11, sizeof res, &res);
  if (!rc) rc = launch(&ch, ctx, k, name, &cfg, 12, width, height, 1, 0);
  if (!rc) {
    rcl_queue_args rq = rcl__chain_args(&ch);
    rcl_reduce_options ro = RCL_REDUCE_OPTIONS_INIT; /* ordered */
    rc = rcl__chain_adopt(
        &ch, rcl_reduce_enqueue(result, result_offset, ctx, RCL_OP_NRM2, dtype, n, res, 0, NULL, 0, &ro, &rq));
  }
  if (k) clReleaseKernel(k);
  if (res) clReleaseMemObject(res);
  return rcl__chain_finish(&ch, q, rc); /* nothing of a failed call runs on after it */
}
