/* The reductions' public front (cl/reduce.cl): names, argument checks, the configuration of a call (the
 * caller's values, the rest from the tuner), and the host-array forms. What a configuration launches is
 * reduce_launch.c's. */
#include <string.h>
#include <strings.h>

#include "reduce/reduce_internal.h"

const char *rcl_reduce_mode_name(rcl_reduce_mode m) {
  return m == RCL_REDUCE_ORDERED ? "ordered" : m == RCL_REDUCE_EXACT ? "exact" : "unknown-mode";
}

int rcl_reduce_mode_parse(rcl_reduce_mode *out, const char *name) {
  if (!out || !name) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_reduce_mode_parse: NULL argument");
  if (!strcasecmp(name, "ordered"))
    *out = RCL_REDUCE_ORDERED;
  else if (!strcasecmp(name, "exact"))
    *out = RCL_REDUCE_EXACT;
  else
    return rcl__fail(RCL_ERR_INVALID_ARG, "unknown reduction mode \"%s\" (expected ordered or exact)", name);
  return 0;
}

const char *rcl_reduce_variant_name(rcl_reduce_variant v) {
  return v == RCL_REDUCE_VARIANT_DEFAULT   ? "default"
         : v == RCL_REDUCE_VARIANT_NDRANGE ? "ndrange"
         : v == RCL_REDUCE_VARIANT_TASK    ? "task"
                                           : "unknown-variant";
}

int rcl_reduce_variant_parse(rcl_reduce_variant *out, const char *name) {
  if (!out || !name) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_reduce_variant_parse: NULL argument");
  for (int i = 0; i <= RCL_REDUCE_VARIANT_TASK; i++)
    if (!strcasecmp(name, rcl_reduce_variant_name((rcl_reduce_variant)i))) {
      *out = (rcl_reduce_variant)i;
      return 0;
    }
  return rcl__fail(RCL_ERR_INVALID_ARG, "unknown reduction variant \"%s\" (expected default, ndrange or task)", name);
}

const char *rcl_reduce_op_name(rcl_reduce_op op) {
  static const char *names[] = {"sum", "dot", "nrm2"};
  return (unsigned)op <= RCL_OP_NRM2 ? names[op] : "unknown-op";
}

int rcl_reduce_op_parse(rcl_reduce_op *out, const char *name) {
  if (!out || !name) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_reduce_op_parse: NULL argument");
  for (int i = 0; i <= RCL_OP_NRM2; i++)
    if (!strcasecmp(name, rcl_reduce_op_name((rcl_reduce_op)i))) {
      *out = (rcl_reduce_op)i;
      return 0;
    }
  return rcl__fail(RCL_ERR_INVALID_ARG, "unknown reduction \"%s\" (expected sum, dot or nrm2)", name);
}

int rcl__reduce_validate_inputs(rcl_context *ctx, rcl_reduce_op op, rcl_dtype dtype, size_t n, cl_mem x, size_t xoff,
                                cl_mem y, size_t yoff, const rcl_reduce_options *opts) {
  if (!ctx) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_reduce: NULL context");
  if ((unsigned)op > RCL_OP_NRM2) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_reduce: unknown op %d", (int)op);
  if (opts && opts->version != RCL_REDUCE_OPTIONS_VERSION && opts->version != 1)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_reduce_options.version is %u, expected %u (use RCL_REDUCE_OPTIONS_INIT)",
                     opts->version, RCL_REDUCE_OPTIONS_VERSION);
  if (opts && opts->version >= 2 && (unsigned)opts->variant > RCL_REDUCE_VARIANT_TASK)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_reduce_options.variant %d is not an rcl_reduce_variant",
                     (int)opts->variant);
  if (opts && opts->mode != RCL_REDUCE_ORDERED && opts->mode != RCL_REDUCE_EXACT)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_reduce_options.mode %d is neither ordered nor exact", (int)opts->mode);
  int rc = rcl__require_support(ctx, RCL_FAMILY_REDUCE, dtype);
  if (rc) return rc;
  size_t es = rcl_dtype_size(dtype), need;
  if (xoff > SIZE_MAX - n) return rcl__fail(RCL_ERR_OVERFLOW, "x offset %zu + n %zu overflows", xoff, n);
  if (n > 0 && ((rc = rcl__mul_size(&need, xoff + n, es, "x")) || (rc = rcl__check_buffer(x, need, "x")))) return rc;
  if (op == RCL_OP_DOT && n > 0) {
    if (yoff > SIZE_MAX - n) return rcl__fail(RCL_ERR_OVERFLOW, "y offset %zu + n %zu overflows", yoff, n);
    if ((rc = rcl__mul_size(&need, yoff + n, es, "y")) || (rc = rcl__check_buffer(y, need, "y"))) return rc;
  }
  return 0;
}

static int validate(rcl_context *ctx, rcl_reduce_op op, rcl_dtype dtype, size_t n, cl_mem result, size_t roff, cl_mem x,
                    size_t xoff, cl_mem y, size_t yoff, const rcl_reduce_options *opts) {
  int rc = rcl__reduce_validate_inputs(ctx, op, dtype, n, x, xoff, y, yoff, opts);
  size_t need;
  if (!rc && !(rc = rcl__mul_size(&need, roff + 1, rcl_dtype_size(dtype), "result offset")))
    rc = rcl__check_buffer(result, need, "result");
  return rc;
}

/* The configuration of a call: the caller's values (strict: refused when invalid), the rest from the
 * tuner (tuned, cached or platform defaults: soft, clamped to what the device can launch). */
int rcl__reduce_resolve_cfg(rcl_red_cfg *cfg, rcl_context *ctx, rcl_reduce_op op, rcl_reduce_mode mode, rcl_dtype dt,
                            size_t n, const rcl_reduce_options *opts) {
  memset(cfg, 0, sizeof *cfg);
  size_t variant = opts && opts->version >= 2 ? (size_t)opts->variant : 0;
  cfg->local = opts ? opts->local_size : 0;
  cfg->groups = opts ? opts->num_groups : 0;
  cfg->local_strict = cfg->local != 0;
  cfg->groups_strict = cfg->groups != 0;
  if (n > 0 && (!variant || !cfg->local || !cfg->groups)) {
    size_t tv[RCL_TUNE_MAX_PARAMS];
    int rc = rcl__tune_lookup(tv, ctx, rcl__reduce_tune_kernel(op, mode), dt, n);
    if (rc) return rc;
    if (!variant) variant = tv[RCL_RED_P_VARIANT];
    if (!cfg->local) cfg->local = tv[RCL_RED_P_LOCAL];
    if (!cfg->groups && tv[RCL_RED_P_GPC]) cfg->groups = tv[RCL_RED_P_GPC] * (size_t)ctx->profile.compute_units;
    if (mode == RCL_REDUCE_EXACT) cfg->accum = tv[RCL_RED_P_ACCUM];
  }
  cfg->variant = variant == RCL_REDUCE_VARIANT_TASK ? RCL_REDUCE_VARIANT_TASK : RCL_REDUCE_VARIANT_NDRANGE;
  return 0;
}

int rcl_reduce_enqueue(cl_mem result, size_t roff, rcl_context *ctx, rcl_reduce_op op, rcl_dtype dtype, size_t n,
                       cl_mem x, size_t xoff, cl_mem y, size_t yoff, const rcl_reduce_options *opts,
                       const rcl_queue_args *q) {
  int rc = validate(ctx, op, dtype, n, result, roff, x, xoff, y, yoff, opts);
  if (rc) return rc;
  rcl_reduce_mode mode = opts ? opts->mode : RCL_REDUCE_ORDERED;
  rcl_red_cfg cfg;
  if ((rc = rcl__reduce_resolve_cfg(&cfg, ctx, op, mode, dtype, n, opts)) != 0) return rc;
  return rcl__reduce_enqueue_cfg(result, roff, ctx, op, mode, dtype, n, x, xoff, y, yoff, &cfg, q);
}

/* Copies host data to a new read-only buffer (a 1-byte one for n = 0). */
int rcl__reduce_upload(cl_mem *out, rcl_context *ctx, const void *data, size_t n, size_t es, const char *what) {
  size_t bytes;
  int rc = rcl__mul_size(&bytes, n, es, what);
  if (rc) return rc;
  if (n > 0 && !data) return rcl__fail(RCL_ERR_INVALID_ARG, "%s is NULL but n = %zu", what, n);
  return n ? rcl__buffer_copy(out, ctx, CL_MEM_READ_ONLY, data, bytes, what)
           : rcl__buffer_create(out, ctx, CL_MEM_READ_ONLY, 0, NULL, what);
}

int rcl_reduce(void *out, rcl_context *ctx, rcl_reduce_op op, rcl_dtype dtype, size_t n, const void *x, const void *y,
               const rcl_reduce_options *opts) {
  if (!out || !ctx) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_reduce: NULL output or context");
  if (!ctx->queue) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_reduce: the context has no queue (wrapped without one)");
  size_t es = rcl_dtype_size(dtype);
  if (!es) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_reduce: unknown dtype %d", (int)dtype);
  int rc = rcl__require_support(ctx, RCL_FAMILY_REDUCE, dtype);
  if (rc) return rc;
  cl_mem bx = NULL, by = NULL, br = NULL;
  rcl_chain ch;
  if ((rc = rcl__chain_host(&ch, ctx)) != 0) return rc;
  rc = rcl__reduce_upload(&bx, ctx, x, n, es, "x");
  if (!rc && op == RCL_OP_DOT) rc = rcl__reduce_upload(&by, ctx, y, n, es, "y");
  if (!rc) rc = rcl__buffer_create(&br, ctx, CL_MEM_WRITE_ONLY, es, NULL, "result");
  if (!rc) {
    rcl_queue_args qa = rcl__chain_args(&ch);
    rc = rcl__chain_adopt(&ch, rcl_reduce_enqueue(br, 0, ctx, op, dtype, n, bx, 0, by, 0, opts, &qa));
  }
  if (!rc) rc = rcl__chain_read(&ch, br, 0, es, out, NULL, "result");
  rc = rcl__chain_finish(&ch, NULL, rc);
  if (bx) clReleaseMemObject(bx);
  if (by) clReleaseMemObject(by);
  if (br) clReleaseMemObject(br);
  return rc;
}

int rcl_sum_f32(float *out, rcl_context *ctx, const float *x, size_t n, const rcl_reduce_options *opts) {
  return rcl_reduce(out, ctx, RCL_OP_SUM, RCL_F32, n, x, NULL, opts);
}
int rcl_sum_f64(double *out, rcl_context *ctx, const double *x, size_t n, const rcl_reduce_options *opts) {
  return rcl_reduce(out, ctx, RCL_OP_SUM, RCL_F64, n, x, NULL, opts);
}
int rcl_dot_f32(float *out, rcl_context *ctx, const float *x, const float *y, size_t n,
                const rcl_reduce_options *opts) {
  return rcl_reduce(out, ctx, RCL_OP_DOT, RCL_F32, n, x, y, opts);
}
int rcl_dot_f64(double *out, rcl_context *ctx, const double *x, const double *y, size_t n,
                const rcl_reduce_options *opts) {
  return rcl_reduce(out, ctx, RCL_OP_DOT, RCL_F64, n, x, y, opts);
}
int rcl_nrm2_f32(float *out, rcl_context *ctx, const float *x, size_t n, const rcl_reduce_options *opts) {
  return rcl_reduce(out, ctx, RCL_OP_NRM2, RCL_F32, n, x, NULL, opts);
}
int rcl_nrm2_f64(double *out, rcl_context *ctx, const double *x, size_t n, const rcl_reduce_options *opts) {
  return rcl_reduce(out, ctx, RCL_OP_NRM2, RCL_F64, n, x, NULL, opts);
}

/* ---- axpy / scal ------------------------------------------------------------------------------------ */

/* axpy (is_axpy) or scal: the argument checks, then the launch with the caller's work-group size, else
 * with the tuned or default one as a soft value (clamped to the kernel's limit). */
static int blas1_enqueue(int is_axpy, cl_mem y, size_t yoff, rcl_context *ctx, rcl_dtype dt, size_t n,
                         const void *alpha, cl_mem x, size_t xoff, size_t local, const rcl_queue_args *q) {
  const char *name = is_axpy ? "rcl_axpy" : "rcl_scal";
  if (!ctx || !alpha) return rcl__fail(RCL_ERR_INVALID_ARG, "%s: NULL context or alpha", name);
  int rc = rcl__require_support(ctx, RCL_FAMILY_REDUCE, dt);
  size_t es = rcl_dtype_size(dt), need;
  cl_command_queue queue;
  if (!rc) rc = rcl__queue_of(&queue, ctx, q);
  if (rc) return rc;
  if (yoff > SIZE_MAX - n || (is_axpy && xoff > SIZE_MAX - n))
    return rcl__fail(RCL_ERR_OVERFLOW, "%s: offset + n overflows", name);
  if (n > 0 &&
      ((rc = rcl__mul_size(&need, yoff + n, es, name)) || (rc = rcl__check_buffer(y, need, is_axpy ? "y" : "x"))))
    return rc;
  if (n > 0 && is_axpy && ((rc = rcl__mul_size(&need, xoff + n, es, name)) || (rc = rcl__check_buffer(x, need, "x"))))
    return rc;
  size_t soft = 256;
  if (n > 0 && !local) {
    size_t tv[RCL_TUNE_MAX_PARAMS];
    rc = rcl__tune_lookup(tv, ctx, is_axpy ? &rcl__tk_reduce_axpy : &rcl__tk_reduce_scal, dt, n);
    if (rc) return rc;
    if (tv[0]) soft = tv[0];
  }
  return rcl__blas1_launch(is_axpy, queue, y, yoff, ctx, dt, n, alpha, x, xoff, local, soft, q);
}

int rcl_axpy_enqueue(cl_mem y, size_t yoff, rcl_context *ctx, rcl_dtype dt, size_t n, const void *alpha, cl_mem x,
                     size_t xoff, size_t local, const rcl_queue_args *q) {
  return blas1_enqueue(1, y, yoff, ctx, dt, n, alpha, x, xoff, local, q);
}

int rcl_scal_enqueue(cl_mem x, size_t xoff, rcl_context *ctx, rcl_dtype dt, size_t n, const void *alpha, size_t local,
                     const rcl_queue_args *q) {
  return blas1_enqueue(0, x, xoff, ctx, dt, n, alpha, NULL, 0, local, q);
}

static int blas1_host(int is_axpy, void *y, rcl_context *ctx, rcl_dtype dt, size_t n, const void *alpha, const void *x,
                      size_t local) {
  if (!ctx) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_%s: NULL context", is_axpy ? "axpy" : "scal");
  if (!ctx->queue) return rcl__fail(RCL_ERR_INVALID_ARG, "the context has no queue (wrapped without one)");
  size_t es = rcl_dtype_size(dt), bytes;
  if (!es) return rcl__fail(RCL_ERR_INVALID_ARG, "unknown dtype %d", (int)dt);
  int rc = rcl__require_support(ctx, RCL_FAMILY_REDUCE, dt);
  if (!rc) rc = rcl__mul_size(&bytes, n, es, "vector");
  if (rc) return rc;
  if (n == 0) return 0;
  if (!y || (is_axpy && !x)) return rcl__fail(RCL_ERR_INVALID_ARG, "NULL vector with n = %zu", n);
  cl_mem by = NULL, bx = NULL;
  rcl_chain ch;
  if ((rc = rcl__chain_host(&ch, ctx)) != 0) return rc;
  rc = rcl__buffer_create(&by, ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, y, "y");
  if (!rc && is_axpy) rc = rcl__reduce_upload(&bx, ctx, x, n, es, "x");
  if (!rc) {
    rcl_queue_args qa = rcl__chain_args(&ch);
    rc = rcl__chain_adopt(&ch, blas1_enqueue(is_axpy, by, 0, ctx, dt, n, alpha, bx, 0, local, &qa));
  }
  if (!rc) rc = rcl__chain_read(&ch, by, 0, bytes, y, NULL, "y");
  rc = rcl__chain_finish(&ch, NULL, rc);
  if (by) clReleaseMemObject(by);
  if (bx) clReleaseMemObject(bx);
  return rc;
}

int rcl_axpy(void *y, rcl_context *ctx, rcl_dtype dt, size_t n, const void *alpha, const void *x, size_t local) {
  return blas1_host(1, y, ctx, dt, n, alpha, x, local);
}

int rcl_scal(void *x, rcl_context *ctx, rcl_dtype dt, size_t n, const void *alpha, size_t local) {
  return blas1_host(0, x, ctx, dt, n, alpha, NULL, local);
}
