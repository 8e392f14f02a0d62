/* The stencil family's tuner plug-in (docs/tuning.md, "Plugging a family in"): the tunables of the
 * nine-point, general (3x3 and 5x5: one program each) and SOR kernels — variant, work-group shape and
 * points per work-item — the validity predicate (the launch planner of stencil_launch.c, after the program
 * is built) and run/digest callbacks on scratch grids of deterministic data. SOR sweeps in place, so its
 * scratch grid is restored from a pristine copy before every launch: tuning never touches a caller's grid. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stencil/stencil_internal.h"

static const size_t variant_values[] = {RCL_STENCIL_PLAIN, RCL_STENCIL_TILED, RCL_STENCIL_TASK};
static const char *const variant_labels[] = {"plain", "tiled", "task"};
static const size_t local_x_values[] = {16, 32, 64, 128};
static const size_t local_y_values[] = {1, 2, 4, 8};
static const size_t points_x_values[] = {1, 2, 4};
static const size_t points_y_values[] = {1, 4, 8};

/* Indexed by RCL_ST_P_*. local_x/local_y are rcl_stencil_options.local_size[0]/[1], points_x/points_y
 * .points_per_item[0]/[1]. */
static const rcl_tune_param_def stencil_params[] = {
    {"variant", variant_values, 3, variant_labels},
    {"local_x", local_x_values, sizeof local_x_values / sizeof local_x_values[0], NULL},
    {"local_y", local_y_values, sizeof local_y_values / sizeof local_y_values[0], NULL},
    {"points_x", points_x_values, sizeof points_x_values / sizeof points_x_values[0], NULL},
    {"points_y", points_y_values, sizeof points_y_values / sizeof points_y_values[0], NULL},
};

/* ---- the tuning problem (shared with the tests) ------------------------------------------------------- */

void rcl__stencil_tune_grid(size_t *width, size_t *height, size_t n) {
  size_t w = (size_t)sqrt((double)(n ? n : 1));
  while (w > 1 && w * w > n) w--;
  while ((w + 1) * (w + 1) <= n) w++;
  if (w < 1) w = 1;
  *width = w;
  *height = n / w ? n / w : 1;
}

void rcl__stencil_tune_desc(rcl_stencil_desc *st, rcl_stencil_kernel_kind kind, unsigned int radius) {
  rcl_stencil_desc d = RCL_STENCIL_DESC_INIT; /* SHOC's nine-point weights, fixed boundary 0 */
  if (kind == RCL_STK_GENERAL) {
    d.kind = RCL_STENCIL_GENERAL;
    d.radius = radius;
    size_t kk = (2 * radius + 1) * (2 * radius + 1);
    /* Weights of both signs, exact in binary32: k/16 - 1/4 ... (a different summation order changes bits). */
    for (size_t k = 0; k < kk; k++) d.weights[k] = (double)((k * 7) % 11) / 16.0 - 0.25;
  }
  *st = d;
}

/* ---- callbacks ------------------------------------------------------------------------------------------ */

typedef struct {
  rcl_context *ctx;
  rcl_stencil_kernel_kind kind;
  unsigned int radius;
  rcl_dtype dt;
  size_t w, h;
  rcl_stencil_desc st;
  rcl_sor_desc sor;
  size_t defv[RCL_TUNE_MAX_PARAMS]; /* the default point's values (check() of the default runs first) */
  cl_mem in;                        /* the input grid (SOR: the pristine copy) */
  cl_mem out;                       /* the output grid (SOR: the grid swept in place) */
} st_state;

static void st_teardown(void *p) {
  st_state *s = p;
  if (!s) return;
  if (s->in) clReleaseMemObject(s->in);
  if (s->out) clReleaseMemObject(s->out);
  rcl__free(s);
}

static int st_setup_kind(void **out, rcl_context *ctx, rcl_dtype dt, size_t n, rcl_stencil_kernel_kind kind,
                         unsigned int radius) {
  st_state *s = rcl__calloc(1, sizeof *s);
  if (!s) return RCL_ERR_OUT_OF_MEMORY;
  s->ctx = ctx;
  s->kind = kind;
  s->radius = radius;
  s->dt = dt;
  rcl__stencil_tune_grid(&s->w, &s->h, n);
  rcl__stencil_tune_desc(&s->st, kind, radius);
  s->sor = (rcl_sor_desc)RCL_SOR_DESC_INIT;
  size_t bytes;
  int rc = rcl__grid_check_dims(s->w, s->h, rcl_dtype_size(dt), "stencil tuning grid");
  if (!rc) rc = rcl__mul_size(&bytes, s->w * s->h, rcl_dtype_size(dt), "stencil tuning grid");
  void *h = rc ? NULL : rcl__malloc(bytes);
  if (!rc && !h) rc = RCL_ERR_OUT_OF_MEMORY;
  if (!rc) rc = rcl_generate(h, dt, s->w * s->h, RCL_GEN_UNIFORM, RCL_STENCIL_TUNE_SEED);
  if (!rc) rc = rcl__buffer_create(&s->in, ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h, "tuning grid");
  if (!rc) rc = rcl__buffer_create(&s->out, ctx, CL_MEM_READ_WRITE, bytes, NULL, "tuning output grid");
  /* Builds the program now (a first call pays for that anyway; the budget counts launches). */
  rcl_stencil_options used;
  if (!rc) rc = rcl__stencil_config(&used, ctx, dt, kind, radius, NULL, NULL);
  rcl__free(h);
  if (rc) {
    st_teardown(s);
    return rc;
  }
  *out = s;
  return 0;
}

/* The options of a point: the caller-style (strict) form of its values. */
static rcl_stencil_options opts_of(const size_t *v) {
  rcl_stencil_options o = RCL_STENCIL_OPTIONS_INIT;
  o.variant = (rcl_stencil_variant)v[RCL_ST_P_VARIANT];
  if (o.variant == RCL_STENCIL_TASK) return o; /* one work-item: no shape */
  o.local_size[0] = v[RCL_ST_P_LOCAL_X];
  o.local_size[1] = v[RCL_ST_P_LOCAL_Y];
  o.points_per_item[0] = v[RCL_ST_P_POINTS_X];
  o.points_per_item[1] = v[RCL_ST_P_POINTS_Y];
  return o;
}

/* The plain variant's register blocks the tuner tries (points x, y): one point, 4-wide rows (vector loads)
 * of 1, 4 and 8 rows, and 2 x 8. Each is its own program, so the rest of the product is not worth its
 * compile time. */
static int plain_block_tried(const size_t pts[2]) {
  static const size_t tried[][2] = {{1, 1}, {4, 1}, {4, 4}, {4, 8}, {2, 8}};
  for (size_t i = 0; i < sizeof tried / sizeof tried[0]; i++)
    if (pts[0] == tried[i][0] && pts[1] == tried[i][1]) return 1;
  return 0;
}

/* Validity: the launch planner of a call. The default point resolves like a call that leaves everything
 * at 0 with the platform values as the tuner's (soft); every other point like explicit options (strict:
 * what the device cannot launch is refused, never clamped). */
static int st_check(void *p, rcl_tune_point *pt, int is_default, char *why, size_t wl) {
  st_state *s = p;
  rcl_stencil_options used, o = opts_of(pt->v);
  if (!is_default && o.variant == RCL_STENCIL_PLAIN && !plain_block_tried(o.points_per_item)) {
    snprintf(why, wl, "plain with points %zux%zu is not among the register blocks tried", o.points_per_item[0],
             o.points_per_item[1]);
    return 0;
  }
  int rc = is_default ? rcl__stencil_config(&used, s->ctx, s->dt, s->kind, s->radius, NULL, pt->v)
                      : rcl__stencil_config(&used, s->ctx, s->dt, s->kind, s->radius, &o, NULL);
  if (rc == RCL_ERR_INVALID_ARG && !is_default) {
    snprintf(why, wl, "%s", rcl_error_last());
    rcl_error_clear();
    return 0;
  }
  if (rc) return rc;
  memset(pt->eff, 0, sizeof pt->eff);
  pt->eff[RCL_ST_P_VARIANT] = (size_t)used.variant;
  if (used.variant != RCL_STENCIL_TASK) {
    pt->eff[RCL_ST_P_LOCAL_X] = used.local_size[0];
    pt->eff[RCL_ST_P_LOCAL_Y] = used.local_size[1];
  }
  if (used.variant != RCL_STENCIL_TASK) {
    pt->eff[RCL_ST_P_POINTS_X] = used.points_per_item[0];
    pt->eff[RCL_ST_P_POINTS_Y] = used.points_per_item[1];
  }
  if (is_default) {
    /* Every parameter of a choice has a value (a cache record names them all); those the variant
     * ignores keep the platform value or the built-in fallback. */
    static const size_t fallback[RCL_ST_NPARAMS] = {0, 64, 4, 1, 8};
    pt->v[RCL_ST_P_VARIANT] = (size_t)used.variant;
    for (int i = RCL_ST_P_LOCAL_X; i < RCL_ST_NPARAMS; i++)
      if (pt->eff[i])
        pt->v[i] = pt->eff[i];
      else if (!pt->v[i])
        pt->v[i] = fallback[i];
    memcpy(s->defv, pt->v, sizeof s->defv);
  } else {
    /* Parameters this launch ignores take the default's values: a choice never carries a value that was
     * not timed into a later call where it would matter (and such points are the same candidate). */
    for (int i = RCL_ST_P_LOCAL_X; i < RCL_ST_NPARAMS; i++)
      if (!pt->eff[i]) pt->v[i] = s->defv[i];
  }
  return 1;
}

static int st_prepare(void *p, cl_command_queue q) {
  st_state *s = p;
  size_t bytes = s->w * s->h * rcl_dtype_size(s->dt);
  cl_int err = clEnqueueCopyBuffer(q, s->in, s->out, 0, 0, bytes, 0, NULL, NULL);
  return err == CL_SUCCESS ? 0 : rcl__fail_cl(err, "restoring the SOR tuning grid");
}

/* One application (SOR: one red-black sweep) with the launch the checker resolved, as explicit options. */
static int st_run(void *p, const rcl_tune_point *pt, cl_command_queue q) {
  st_state *s = p;
  size_t v[RCL_TUNE_MAX_PARAMS];
  memcpy(v, pt->eff, sizeof v);
  rcl_stencil_options o = opts_of(v);
  rcl_queue_args qa = RCL_QUEUE_ARGS_INIT;
  qa.queue = q;
  /* The grids the setup created: offset 0, rows of width w; SOR without a right-hand side. */
  const rcl__grid_ref in = {s->in, 0, s->w}, out = {s->out, 0, s->w}, none = {NULL, 0, 0};
  if (s->kind == RCL_STK_SOR) return rcl__sor_run(q, s->ctx, &s->sor, s->dt, s->w, s->h, 1, &out, &none, &o, NULL, &qa);
  return rcl__stencil_run(q, s->ctx, &s->st, s->radius, s->dt, s->w, s->h, 1, &in, &out, NULL, &o, NULL, &qa);
}

static int st_digest(void *p, cl_command_queue q, char hex[RCL_SHA256_HEX_SIZE]) {
  st_state *s = p;
  size_t bytes = s->w * s->h * rcl_dtype_size(s->dt);
  void *h = rcl__malloc(bytes);
  if (!h) return RCL_ERR_OUT_OF_MEMORY;
  cl_int err = clEnqueueReadBuffer(q, s->out, CL_TRUE, 0, bytes, h, 0, NULL, NULL);
  int rc = err == CL_SUCCESS ? 0 : rcl__fail_cl(err, "reading the stencil tuning output");
  if (!rc) rcl_sha256_hex(hex, h, bytes);
  rcl__free(h);
  return rc;
}

/* ---- descriptors ----------------------------------------------------------------------------------------- */

static int setup_nine(void **out, rcl_context *ctx, rcl_dtype dt, size_t n) {
  return st_setup_kind(out, ctx, dt, n, RCL_STK_NINE, 1);
}
static int setup_general_r1(void **out, rcl_context *ctx, rcl_dtype dt, size_t n) {
  return st_setup_kind(out, ctx, dt, n, RCL_STK_GENERAL, 1);
}
static int setup_general_r2(void **out, rcl_context *ctx, rcl_dtype dt, size_t n) {
  return st_setup_kind(out, ctx, dt, n, RCL_STK_GENERAL, 2);
}
static int setup_sor(void **out, rcl_context *ctx, rcl_dtype dt, size_t n) {
  return st_setup_kind(out, ctx, dt, n, RCL_STK_SOR, 1);
}

/* Grids below 2^16 points (256 x 256) are launch-bound: they keep the defaults. The contract versions are
 * those of docs/contracts.md (stencil.nine, stencil.general, stencil.sor: v1). */
#define ST_KERNEL(VAR, NAME, DEFINES, SETUP, PREPARE)                                                                  \
  const rcl_tune_kernel VAR = {NAME,     RCL_FAMILY_STENCIL, "stencil.cl",   DEFINES, 1,        1u << 16,              \
                               1u << 22, RCL_ST_NPARAMS,     stencil_params, SETUP,   st_check, PREPARE,               \
                               st_run,   st_digest,          st_teardown};
ST_KERNEL(rcl__tk_stencil_nine, "stencil.nine", "-DST_R=1", setup_nine, NULL)
ST_KERNEL(rcl__tk_stencil_general_r1, "stencil.general.r1", "-DST_R=1", setup_general_r1, NULL)
ST_KERNEL(rcl__tk_stencil_general_r2, "stencil.general.r2", "-DST_R=2", setup_general_r2, NULL)
ST_KERNEL(rcl__tk_stencil_sor, "stencil.sor", "-DST_R=1", setup_sor, st_prepare)

const rcl_tune_kernel *rcl__stencil_tune_kernel(rcl_stencil_kernel_kind kind, unsigned int radius) {
  if (kind == RCL_STK_SOR) return &rcl__tk_stencil_sor;
  if (kind == RCL_STK_NINE) return &rcl__tk_stencil_nine;
  return radius == 2 ? &rcl__tk_stencil_general_r2 : &rcl__tk_stencil_general_r1;
}
