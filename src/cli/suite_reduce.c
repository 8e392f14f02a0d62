/* The reduction family's cases in the standard suite: every op, dtype and mode on generated inputs of
 * three kinds, plus axpy and scal. */
#include <stdlib.h>
#include <string.h>

#include "suite.h"

enum { P_OP, P_MODE, P_KIND, P_N, P_BLAS1 };

static int cases(suite_list *l) {
  static const rcl_gen_kind kinds[] = {RCL_GEN_UNIFORM, RCL_GEN_CANCEL, RCL_GEN_SPECIAL};
  for (int d = 0; d < 2; d++) {
    rcl_dtype dt = d ? RCL_F64 : RCL_F32;
    for (int size = 0; size < 2; size++) {
      uint64_t n = size ? 4194301 : 100003; /* primes: no block is full at the end */
      for (int k = 0; k < 3; k++) {
        for (int op = RCL_OP_SUM; op <= RCL_OP_NRM2; op++)
          for (int m = 0; m < 2; m++) {
            suite_case *c = suite_add(
                l, &suite_reduce, RCL_FAMILY_REDUCE, dt, size == 0, m ? "reduce.exact.v1" : "reduce.ordered.v1",
                "reduce %s %s %s %s n=%llu", rcl_reduce_op_name((rcl_reduce_op)op), rcl_dtype_name(dt),
                rcl_reduce_mode_name((rcl_reduce_mode)m), rcl_gen_kind_name(kinds[k]), (unsigned long long)n);
            if (!c) return -1;
            c->p[P_OP] = (uint64_t)op, c->p[P_MODE] = (uint64_t)m, c->p[P_KIND] = kinds[k], c->p[P_N] = n;
          }
        for (int b = 1; b <= 2; b++) {
          suite_case *c = suite_add(l, &suite_reduce, RCL_FAMILY_REDUCE, dt, size == 0, "blas1.v1",
                                    "blas1 %s %s %s n=%llu", b == 1 ? "axpy" : "scal", rcl_dtype_name(dt),
                                    rcl_gen_kind_name(kinds[k]), (unsigned long long)n);
          if (!c) return -1;
          c->p[P_BLAS1] = (uint64_t)b, c->p[P_KIND] = kinds[k], c->p[P_N] = n;
        }
      }
    }
  }
  return 0;
}

/* Inputs: x from seed 7, y from seed 8; alpha = 0.7071067811865476 rounded to the dtype. */
static int inputs(const suite_case *c, void **x, void **y, size_t *es) {
  size_t n = (size_t)c->p[P_N];
  *es = rcl_dtype_size(c->dtype);
  *x = malloc(n * *es);
  *y = malloc(n * *es);
  if (!*x || !*y) {
    free(*x);
    free(*y);
    return RCL_ERR_OUT_OF_MEMORY;
  }
  rcl_generate(*x, c->dtype, n, (rcl_gen_kind)c->p[P_KIND], 7);
  rcl_generate(*y, c->dtype, n, (rcl_gen_kind)c->p[P_KIND], 8);
  return 0;
}

static void alpha_of(const suite_case *c, double *a64, float *a32, const void **alpha) {
  *a64 = 0.7071067811865476;
  *a32 = (float)*a64;
  *alpha = c->dtype == RCL_F32 ? (const void *)a32 : (const void *)a64;
}

static int compute(const suite_case *c, const suite_target *t, void **out, size_t *bytes) {
  void *x, *y;
  size_t es, n = (size_t)c->p[P_N];
  int rc = inputs(c, &x, &y, &es);
  if (rc) return rc;
  if (c->p[P_BLAS1]) {
    double a64;
    float a32;
    const void *alpha;
    alpha_of(c, &a64, &a32, &alpha);
    int scal = c->p[P_BLAS1] == 2;
    void *v = scal ? x : y;
    if (scal)
      rc = !t         ? (rcl_ref_scal(v, c->dtype, n, alpha), 0)
           : t->split ? rcl_split_scal(v, t->split, c->dtype, n, alpha)
                      : rcl_scal(v, t->ctx, c->dtype, n, alpha, 0);
    else
      rc = !t         ? (rcl_ref_axpy(v, c->dtype, n, alpha, x), 0)
           : t->split ? rcl_split_axpy(v, t->split, c->dtype, n, alpha, x)
                      : rcl_axpy(v, t->ctx, c->dtype, n, alpha, x, 0);
    free(scal ? y : x);
    *out = v;
    *bytes = n * es;
    return rc;
  }
  void *r = malloc(8);
  if (!r) rc = RCL_ERR_OUT_OF_MEMORY;
  rcl_reduce_options o = RCL_REDUCE_OPTIONS_INIT;
  o.mode = (rcl_reduce_mode)c->p[P_MODE];
  rcl_reduce_op op = (rcl_reduce_op)c->p[P_OP];
  if (!rc)
    rc = !t         ? rcl_ref_reduce(r, op, c->dtype, o.mode, n, x, y)
         : t->split ? rcl_split_reduce(r, t->split, op, c->dtype, n, x, y, &o)
                    : rcl_reduce(r, t->ctx, op, c->dtype, n, x, y, &o);
  free(x);
  free(y);
  if (rc)
    free(r);
  else {
    *out = r;
    *bytes = es;
  }
  return rc;
}

static int reference(const suite_case *c, void **out, size_t *bytes) { return compute(c, NULL, out, bytes); }
static int run(const suite_case *c, rcl_context *ctx, void **out, size_t *bytes) {
  suite_target t = {ctx, NULL};
  return compute(c, &t, out, bytes);
}
static int run_split(const suite_case *c, rcl_split *s, void **out, size_t *bytes) {
  suite_target t = {NULL, s};
  return compute(c, &t, out, bytes);
}

const suite_family suite_reduce = {"reduce", cases, reference, run, run_split};
