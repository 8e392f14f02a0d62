/* The reduction family's tuner plug-in: the tunables of each reduction and of axpy/scal, the validity
 * predicate (the launch planner of reduce_launch.c, after the programs are built) and the run/digest callbacks
 * on scratch buffers of deterministic data. See docs/tuning.md, "Plugging a family in". */
#include <stdlib.h>
#include <string.h>

#include "reduce/reduce_internal.h"

static const size_t variant_values[] = {RCL_REDUCE_VARIANT_NDRANGE, RCL_REDUCE_VARIANT_TASK};
static const char *const variant_labels[] = {"ndrange", "task"};
static const size_t local_values[] = {32, 64, 128, 256, 512, 1024};
static const size_t gpc_values[] = {1, 2, 4, 8, 16, 32, 64};
static const size_t blas1_local_values[] = {32, 64, 128, 256, 512, 1024};
static const size_t accum_values[] = {RCL_RED_ACCUM_WINDOW, RCL_RED_ACCUM_FAST};
static const char *const accum_labels[] = {"window", "fast"};

/* Indexed by RCL_RED_P_*. */
static const rcl_tune_param_def reduce_params[] = {
    {"variant", variant_values, 2, variant_labels},
    {"local_size", local_values, sizeof local_values / sizeof local_values[0], NULL},
    {"groups_per_cu", gpc_values, sizeof gpc_values / sizeof gpc_values[0], NULL},
};
/* Exact mode: the same, and the accumulation (RCL_RED_ACCUM_*: the bits are the same). */
static const rcl_tune_param_def exact_params[] = {
    {"variant", variant_values, 2, variant_labels},
    {"local_size", local_values, sizeof local_values / sizeof local_values[0], NULL},
    {"groups_per_cu", gpc_values, sizeof gpc_values / sizeof gpc_values[0], NULL},
    {"accum", accum_values, 2, accum_labels},
};
static const rcl_tune_param_def blas1_params[] = {
    {"local_size", blas1_local_values, sizeof blas1_local_values / sizeof blas1_local_values[0], NULL},
};

typedef struct {
  rcl_context *ctx;
  int blas1; /* 0: a reduction; 1: axpy; 2: scal */
  rcl_reduce_op op;
  rcl_reduce_mode mode;
  rcl_dtype dt;
  size_t n;
  cl_mem x, y, r; /* inputs and output (for axpy/scal: y is the pristine copy, r the scratch one) */
} red_state;

static int make_input(cl_mem *out, rcl_context *ctx, rcl_dtype dt, size_t n, rcl_gen_kind kind, uint64_t seed) {
  size_t es = rcl_dtype_size(dt), bytes;
  int rc = rcl__mul_size(&bytes, n, es, "tuning input");
  if (rc) return rc;
  void *h = rcl__malloc(bytes);
  if (!h) return RCL_ERR_OUT_OF_MEMORY;
  rc = rcl_generate(h, dt, n, kind, seed);
  if (!rc) rc = rcl__buffer_create(out, ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h, "tuning input");
  rcl__free(h);
  return rc;
}

static void state_free(void *p) {
  red_state *s = p;
  if (!s) return;
  if (s->x) clReleaseMemObject(s->x);
  if (s->y) clReleaseMemObject(s->y);
  if (s->r) clReleaseMemObject(s->r);
  rcl__free(s);
}

/* Uniform data in [-1, 1): typical values, so the timings are representative (the exact kernels' speed
 * depends on the spread of exponents: ill-conditioned data would time a different workload), and a
 * different summation tree in ordered mode would still show in the rounded bits. */
static int setup_common(void **out, rcl_context *ctx, rcl_dtype dt, size_t n, int blas1, rcl_reduce_op op,
                        rcl_reduce_mode mode) {
  red_state *s = rcl__calloc(1, sizeof *s);
  if (!s) return RCL_ERR_OUT_OF_MEMORY;
  s->ctx = ctx;
  s->blas1 = blas1;
  s->op = op;
  s->mode = mode;
  s->dt = dt;
  s->n = n ? n : 1;
  size_t es = rcl_dtype_size(dt);
  int rc = make_input(&s->x, ctx, dt, s->n, RCL_GEN_UNIFORM, 0x7e57);
  if (!rc && (blas1 || op == RCL_OP_DOT)) rc = make_input(&s->y, ctx, dt, s->n, RCL_GEN_UNIFORM, 0x7e58);
  if (!rc) rc = rcl__buffer_create(&s->r, ctx, CL_MEM_READ_WRITE, blas1 ? s->n * es : es, NULL, "tuning output");
  if (rc) {
    state_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

static rcl_red_cfg cfg_of(const red_state *s, const rcl_tune_point *p, int is_default) {
  rcl_red_cfg c;
  memset(&c, 0, sizeof c);
  c.variant = p->v[RCL_RED_P_VARIANT] == RCL_REDUCE_VARIANT_TASK ? RCL_REDUCE_VARIANT_TASK : RCL_REDUCE_VARIANT_NDRANGE;
  c.local = p->v[RCL_RED_P_LOCAL];
  c.local_strict = !is_default && c.local != 0;
  c.groups = p->v[RCL_RED_P_GPC] * (size_t)s->ctx->profile.compute_units;
  c.groups_strict = 0; /* a grid too large for the problem (or too small for a loop limit) is clamped */
  c.accum = s->mode == RCL_REDUCE_EXACT ? p->v[RCL_RED_P_ACCUM] : 0;
  return c;
}

static int red_check(void *st, rcl_tune_point *p, int is_default, char *why, size_t wl) {
  red_state *s = st;
  rcl_red_cfg c = cfg_of(s, p, is_default);
  rcl_red_plan pl;
  int rc = rcl__reduce_plan(&pl, s->ctx, s->op, s->mode, s->dt, s->n, &c);
  if (rc == RCL_ERR_INVALID_ARG && !is_default) {
    snprintf(why, wl, "%s", rcl_error_last());
    return 0;
  }
  if (rc) return rc;
  memset(p->eff, 0, sizeof p->eff);
  p->eff[0] = pl.task ? RCL_REDUCE_VARIANT_TASK : RCL_REDUCE_VARIANT_NDRANGE;
  if (!pl.task) {
    p->eff[1] = pl.W;
    p->eff[2] = pl.groups;
  }
  if (is_default) {
    p->v[RCL_RED_P_VARIANT] = (size_t)c.variant;
    /* Record what the default really launches: a platform default larger than the device allows (256
     * for exact f64 sums on a GPU with 48 KiB of local memory) is clamped by the planner, and a choice
     * handed back by rcl_tune_get must be valid when passed explicitly. */
    if (!pl.task)
      p->v[RCL_RED_P_LOCAL] = pl.W;
    else if (!p->v[RCL_RED_P_LOCAL])
      p->v[RCL_RED_P_LOCAL] = 256;
    if (!p->v[RCL_RED_P_GPC]) p->v[RCL_RED_P_GPC] = s->mode == RCL_REDUCE_ORDERED ? 32 : 4;
    if (s->mode == RCL_REDUCE_EXACT && !p->v[RCL_RED_P_ACCUM]) p->v[RCL_RED_P_ACCUM] = RCL_RED_ACCUM_WINDOW;
  }
  rcl__reduce_plan_release(&pl);
  return 1;
}

static int red_run(void *st, const rcl_tune_point *p, cl_command_queue q) {
  red_state *s = st;
  rcl_red_cfg c = cfg_of(s, p, 0);
  c.local_strict = 0; /* checked already; the default point may rely on clamping */
  rcl_queue_args qa = RCL_QUEUE_ARGS_INIT;
  qa.queue = q;
  return rcl__reduce_enqueue_cfg(s->r, 0, s->ctx, s->op, s->mode, s->dt, s->n, s->x, 0, s->y, 0, &c, &qa);
}

static int read_digest(red_state *s, cl_command_queue q, cl_mem buf, size_t bytes, char hex[RCL_SHA256_HEX_SIZE]) {
  void *h = rcl__malloc(bytes);
  if (!h) return RCL_ERR_OUT_OF_MEMORY;
  cl_int err = clEnqueueReadBuffer(q, buf, CL_TRUE, 0, bytes, h, 0, NULL, NULL);
  int rc = err == CL_SUCCESS ? 0 : rcl__fail_cl(err, "reading the tuning output");
  if (!rc) rcl_sha256_hex(hex, h, bytes);
  rcl__free(h);
  (void)s;
  return rc;
}

static int red_digest(void *st, cl_command_queue q, char hex[RCL_SHA256_HEX_SIZE]) {
  red_state *s = st;
  return read_digest(s, q, s->r, rcl_dtype_size(s->dt), hex);
}

/* ---- axpy / scal: in place, so every run starts from a fresh copy of the pristine data ------------- */

static int blas1_check(void *st, rcl_tune_point *p, int is_default, char *why, size_t wl) {
  red_state *s = st;
  size_t kmax;
  int rc = rcl__blas1_kmax(&kmax, s->ctx, s->dt, s->blas1 == 1);
  if (rc) return rc;
  size_t w = p->v[0];
  if (is_default) {
    if (!w) w = 256;
    if (w > kmax) w = rcl__floor_pow2(kmax);
    p->v[0] = w;
  } else if (w > kmax || w > s->ctx->profile.max_work_item_sizes[0]) {
    snprintf(why, wl, "local_size %zu exceeds the kernel's limit %zu", w, kmax);
    return 0;
  }
  memset(p->eff, 0, sizeof p->eff);
  p->eff[0] = w;
  return 1;
}

static int blas1_prepare(void *st, cl_command_queue q) {
  red_state *s = st;
  size_t bytes = s->n * rcl_dtype_size(s->dt);
  cl_int err = clEnqueueCopyBuffer(q, s->y, s->r, 0, 0, bytes, 0, NULL, NULL);
  return err == CL_SUCCESS ? 0 : rcl__fail_cl(err, "restoring the tuning scratch copy");
}

static int blas1_run(void *st, const rcl_tune_point *p, cl_command_queue q) {
  red_state *s = st;
  rcl_queue_args qa = RCL_QUEUE_ARGS_INIT;
  qa.queue = q;
  double a64 = -1.0 / 3.0;
  float a32 = (float)a64;
  const void *alpha = s->dt == RCL_F32 ? (const void *)&a32 : (const void *)&a64;
  return rcl__blas1_launch(s->blas1 == 1, q, s->r, 0, s->ctx, s->dt, s->n, alpha, s->x, 0, p->eff[0], 256, &qa);
}

static int blas1_digest(void *st, cl_command_queue q, char hex[RCL_SHA256_HEX_SIZE]) {
  red_state *s = st;
  return read_digest(s, q, s->r, s->n * rcl_dtype_size(s->dt), hex);
}

/* ---- descriptors ----------------------------------------------------------------------------------- */

#define RED_SETUP(NAME, OP, MODE)                                                                                      \
  static int NAME(void **out, rcl_context *ctx, rcl_dtype dt, size_t n) {                                              \
    return setup_common(out, ctx, dt, n, 0, OP, MODE);                                                                 \
  }
RED_SETUP(setup_sum_ordered, RCL_OP_SUM, RCL_REDUCE_ORDERED)
RED_SETUP(setup_dot_ordered, RCL_OP_DOT, RCL_REDUCE_ORDERED)
RED_SETUP(setup_nrm2_ordered, RCL_OP_NRM2, RCL_REDUCE_ORDERED)
RED_SETUP(setup_sum_exact, RCL_OP_SUM, RCL_REDUCE_EXACT)
RED_SETUP(setup_dot_exact, RCL_OP_DOT, RCL_REDUCE_EXACT)
RED_SETUP(setup_nrm2_exact, RCL_OP_NRM2, RCL_REDUCE_EXACT)
static int setup_axpy(void **out, rcl_context *ctx, rcl_dtype dt, size_t n) {
  return setup_common(out, ctx, dt, n, 1, RCL_OP_SUM, RCL_REDUCE_ORDERED);
}
static int setup_scal(void **out, rcl_context *ctx, rcl_dtype dt, size_t n) {
  return setup_common(out, ctx, dt, n, 2, RCL_OP_SUM, RCL_REDUCE_ORDERED);
}

/* Problems below 2^16 elements are launch-bound: they keep the defaults. */
#define RED_KERNEL(VAR, NAME, SETUP, NP, PARAMS)                                                                       \
  const rcl_tune_kernel VAR = {NAME,                                                                                   \
                               RCL_FAMILY_REDUCE,                                                                      \
                               "reduce.cl,reduce_task.cl",                                                             \
                               NULL,                                                                                   \
                               1,                                                                                      \
                               1u << 16,                                                                               \
                               1u << 22,                                                                               \
                               NP,                                                                                     \
                               PARAMS,                                                                                 \
                               SETUP,                                                                                  \
                               red_check,                                                                              \
                               NULL,                                                                                   \
                               red_run,                                                                                \
                               red_digest,                                                                             \
                               state_free};
RED_KERNEL(rcl__tk_reduce_sum_ordered, "reduce.sum.ordered", setup_sum_ordered, 3, reduce_params)
RED_KERNEL(rcl__tk_reduce_dot_ordered, "reduce.dot.ordered", setup_dot_ordered, 3, reduce_params)
RED_KERNEL(rcl__tk_reduce_nrm2_ordered, "reduce.nrm2.ordered", setup_nrm2_ordered, 3, reduce_params)
RED_KERNEL(rcl__tk_reduce_sum_exact, "reduce.sum.exact", setup_sum_exact, 4, exact_params)
RED_KERNEL(rcl__tk_reduce_dot_exact, "reduce.dot.exact", setup_dot_exact, 4, exact_params)
RED_KERNEL(rcl__tk_reduce_nrm2_exact, "reduce.nrm2.exact", setup_nrm2_exact, 4, exact_params)

const rcl_tune_kernel rcl__tk_reduce_axpy = {"reduce.axpy", RCL_FAMILY_REDUCE, "reduce.cl", NULL,         1,
                                             1u << 16,      1u << 22,          1,           blas1_params, setup_axpy,
                                             blas1_check,   blas1_prepare,     blas1_run,   blas1_digest, state_free};
const rcl_tune_kernel rcl__tk_reduce_scal = {"reduce.scal", RCL_FAMILY_REDUCE, "reduce.cl", NULL,         1,
                                             1u << 16,      1u << 22,          1,           blas1_params, setup_scal,
                                             blas1_check,   blas1_prepare,     blas1_run,   blas1_digest, state_free};

const rcl_tune_kernel *rcl__reduce_tune_kernel(rcl_reduce_op op, rcl_reduce_mode mode) {
  static const rcl_tune_kernel *const table[2][3] = {
      {&rcl__tk_reduce_sum_ordered, &rcl__tk_reduce_dot_ordered, &rcl__tk_reduce_nrm2_ordered},
      {&rcl__tk_reduce_sum_exact, &rcl__tk_reduce_dot_exact, &rcl__tk_reduce_nrm2_exact}};
  return table[mode == RCL_REDUCE_EXACT][op == RCL_OP_DOT ? 1 : op == RCL_OP_NRM2 ? 2 : 0];
}
