/* Conjugate Gradient (contract "cg" v1, docs/contracts.md (§6)), with optional Jacobi
 * preconditioning, built only from reprocl's SpMV, dot/nrm2, axpy and scal. One algorithm (rcl__cg_run,
 * declared in sparse_internal.h) drives every back end: the device (rcl_cg_solve), the host reference
 * (rcl_ref_cg) and the split over several devices (src/split/split_sparse.c), so all perform the same
 * operations in the same order. The scalars alpha = r'z / p'Ap and beta = r'z_new / r'z are divided on
 * the host, in the dtype, from values read back from the device: IEEE division of identical inputs gives
 * identical bits on every host, so the whole iteration (and its residual history) is bit-identical on
 * every device. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparse/sparse_internal.h"

enum { V_X = RCL_CG_X, V_B = RCL_CG_B, V_R = RCL_CG_R, V_P = RCL_CG_P, V_Q = RCL_CG_Q, V_Z = RCL_CG_Z, NV = RCL_CG_NV };

void rcl_cg_result_free(rcl_cg_result *r) {
  if (!r) return;
  rcl__free(r->history);
  r->history = NULL;
  r->history_len = 0;
}

/* ---- the algorithm ----------------------------------------------------------------------------------------- */

/* A dtype value held in a double (exact: float widens exactly) and its bytes. */
static double get_val(const void *p, rcl_dtype dt) {
  if (dt == RCL_F32) {
    float f;
    memcpy(&f, p, 4);
    return f;
  }
  double d;
  memcpy(&d, p, 8);
  return d;
}

static void put_val(void *p, double v, rcl_dtype dt) {
  if (dt == RCL_F32) {
    float f = (float)v; /* exact: v holds a float value */
    memcpy(p, &f, 4);
  } else {
    memcpy(p, &v, 8);
  }
}

/* a / b rounded in dtype (a and b hold dtype values). */
static double div_dt(double a, double b, rcl_dtype dt) {
  if (dt == RCL_F32) {
    float q = (float)a / (float)b;
    return q;
  }
  return a / b;
}

static int push_history(rcl_cg_result *res, size_t *cap, double v, rcl_dtype dt) {
  size_t es = rcl_dtype_size(dt);
  if (res->history_len == *cap) {
    size_t nc = *cap ? *cap * 2 : 64;
    void *h = rcl__realloc(res->history, nc * es);
    if (!h) return RCL_ERR_OUT_OF_MEMORY;
    res->history = h;
    *cap = nc;
  }
  put_val((unsigned char *)res->history + res->history_len * es, v, dt);
  res->history_len++;
  return 0;
}

static int stop(rcl_cg_result *res, int status, const char *fmt, ...) RCL_PRINTF(3, 4);
static int stop(rcl_cg_result *res, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(res->message, sizeof res->message, fmt, ap);
  va_end(ap);
  return status ? rcl__fail(status, "CG: %s", res->message) : 0;
}

int rcl__cg_run(const rcl_cg_ops *o, rcl_dtype dt, size_t n, const rcl_cg_options *opt, rcl_cg_result *res) {
  size_t cap = 0, es = rcl_dtype_size(dt);
  unsigned char s[3 * 8], va[8], vb[8];
  int jac = opt->jacobi, Z = jac ? V_Z : V_R;
  const double one = 1.0;
  unsigned char p1[8], m1[8], z0[8];
  put_val(p1, one, dt);
  put_val(m1, -one, dt);
  put_val(z0, 0.0, dt);
#define S(i) get_val(s + (i)*es, dt)
  /* r = b - A x0 as -1 * (A x0) + 1 * r; z = D^-1 r; p = z; rz = r'z; ||b||; ||r|| */
  int rc = o->copy(o->st, V_R, V_B);
  if (!rc) rc = o->spmv(o->st, 0, V_R, V_X, m1, p1);
  if (!rc && jac) rc = o->spmv(o->st, 1, V_Z, V_R, p1, z0);
  if (!rc) rc = o->copy(o->st, V_P, Z);
  if (!rc) rc = o->reduce(o->st, RCL_OP_NRM2, V_B, V_B, 0);
  if (!rc) rc = o->reduce(o->st, RCL_OP_NRM2, V_R, V_R, 1);
  if (!rc) rc = o->reduce(o->st, RCL_OP_DOT, V_R, Z, 2);
  if (!rc) rc = o->fetch(o->st, s);
  if (rc) return rc;
  double bnorm = S(0), rnorm = S(1), rz = S(2), rz_new = 0;
  res->rhs_norm = bnorm;
  if ((rc = push_history(res, &cap, rnorm, dt)) != 0) return rc;
  size_t k = 0;
  (void)n;
  for (;;) {
    res->iterations = k;
    res->residual_norm = rnorm;
    if (rnorm <= opt->tol * bnorm) {
      res->converged = 1;
      return stop(res, 0, "converged after %zu iterations: ||r|| = %.6g <= %.3g * ||b|| = %.6g", k, rnorm, opt->tol,
                  opt->tol * bnorm);
    }
    if (isnan(rnorm)) return stop(res, RCL_ERR_BREAKDOWN, "the residual norm is NaN after %zu iterations", k);
    if (k == opt->max_iterations)
      return stop(res, RCL_ERR_NO_CONVERGENCE, "no convergence in %zu iterations: ||r|| = %.6g > %.3g * ||b|| = %.6g",
                  k, rnorm, opt->tol, opt->tol * bnorm);
    if (k > 0) { /* p = z + beta p, as beta*p (scal) then 1*z + (beta*p) (axpy) */
      if (!(rz_new > 0))
        return stop(res, RCL_ERR_BREAKDOWN,
                    "r'z = %.6g is not positive at iteration %zu: the %s is not positive definite", rz_new, k + 1,
                    jac ? "preconditioner" : "matrix");
      put_val(vb, div_dt(rz_new, rz, dt), dt);
      if ((rc = o->scal(o->st, V_P, vb)) || (rc = o->axpy(o->st, V_P, p1, Z))) return rc;
      rz = rz_new;
    } else if (!(rz > 0)) {
      return stop(res, RCL_ERR_BREAKDOWN, "r'z = %.6g is not positive: the %s is not positive definite", rz,
                  jac ? "preconditioner" : "matrix");
    }
    if ((rc = o->spmv(o->st, 0, V_Q, V_P, p1, z0)) || (rc = o->reduce(o->st, RCL_OP_DOT, V_P, V_Q, 0)) ||
        (rc = o->fetch(o->st, s)))
      return rc;
    double pq = S(0);
    if (!(pq > 0))
      return stop(res, RCL_ERR_BREAKDOWN,
                  "p'Ap = %.6g is not positive at iteration %zu: the matrix is not positive definite", pq, k + 1);
    double alpha = div_dt(rz, pq, dt);
    put_val(va, alpha, dt);
    if ((rc = o->axpy(o->st, V_X, va, V_P))) return rc;
    put_val(va, -alpha, dt);
    if ((rc = o->axpy(o->st, V_R, va, V_Q))) return rc;
    k++;
    /* ||r|| and the next r'z together (the latter is unused when this iteration converges). */
    if ((rc = o->reduce(o->st, RCL_OP_NRM2, V_R, V_R, 1))) return rc;
    if (jac && (rc = o->spmv(o->st, 1, V_Z, V_R, p1, z0))) return rc;
    if ((rc = o->reduce(o->st, RCL_OP_DOT, V_R, Z, 2)) || (rc = o->fetch(o->st, s))) return rc;
    rnorm = S(1);
    rz_new = S(2);
    if ((rc = push_history(res, &cap, rnorm, dt)) != 0) return rc;
  }
#undef S
}

static int check_options(const rcl_cg_options *o) {
  if (o->version != RCL_CG_OPTIONS_VERSION)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_cg_options.version is %u, expected %u (use RCL_CG_OPTIONS_INIT)",
                     o->version, RCL_CG_OPTIONS_VERSION);
  if (!(o->tol >= 0)) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_cg_options.tol = %g must be >= 0", o->tol);
  if (o->dot_mode != RCL_REDUCE_ORDERED && o->dot_mode != RCL_REDUCE_EXACT)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_cg_options.dot_mode %d is neither ordered nor exact", (int)o->dot_mode);
  if (o->spmv.contract != RCL_SPMV_ORDERED && o->spmv.contract != RCL_SPMV_EXACT)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_cg_options.spmv.contract %d is neither ordered nor exact",
                     (int)o->spmv.contract);
  return 0;
}

/* Common end of the back ends: the digest, and the empty system. */
int rcl__cg_finish(rcl_cg_result *res, rcl_dtype dt, int rc) {
  rcl_sha256_hex(res->history_sha256, res->history ? res->history : "", res->history_len * rcl_dtype_size(dt));
  return rc;
}

int rcl__cg_empty(rcl_cg_result *res, rcl_dtype dt) {
  size_t cap = 0;
  int rc = push_history(res, &cap, 0.0, dt);
  if (rc) return rc;
  res->converged = 1;
  snprintf(res->message, sizeof res->message, "empty system (0 rows): nothing to solve");
  return rcl__cg_finish(res, dt, 0);
}

/* ---- device back end ------------------------------------------------------------------------------------- */

typedef struct {
  rcl_spmv_matrix *A, *D;
  rcl_context *ctx;
  cl_command_queue q;
  cl_mem v[NV], s;
  cl_event last; /* every command waits on the one before: correct on out-of-order queues too */
  int lazy;      /* an in-order queue and no event for the caller: the queue's order is enough, no events */
  size_t n, es;
  rcl_dtype dt;
  rcl_reduce_options ro;
  rcl_spmv_options so;
} dev_state;

/* Queue arguments chained on the previous command. */
static rcl_queue_args dev_qa(dev_state *d, cl_event *ev) {
  rcl_queue_args qa = RCL_QUEUE_ARGS_INIT;
  qa.queue = d->q;
  qa.num_events_in_wait_list = d->last ? 1 : 0;
  qa.event_wait_list = d->last ? &d->last : NULL;
  qa.event = d->lazy ? NULL : ev;
  return qa;
}

static int dev_advance(dev_state *d, int rc, cl_event ev) {
  if (rc) return rc;
  if (d->last) clReleaseEvent(d->last);
  d->last = ev;
  return 0;
}

static int dev_copy(void *st, int dst, int src) {
  dev_state *d = st;
  cl_event ev = NULL;
  cl_int err = clEnqueueCopyBuffer(d->q, d->v[src], d->v[dst], 0, 0, d->n * d->es, d->last ? 1 : 0,
                                   d->last ? &d->last : NULL, d->lazy ? NULL : &ev);
  if (err != CL_SUCCESS) return rcl__fail_cl(err, "CG: clEnqueueCopyBuffer");
  return dev_advance(d, 0, ev);
}

static int dev_spmv(void *st, int jac, int dst, int src, const void *alpha, const void *beta) {
  dev_state *d = st;
  cl_event ev = NULL;
  rcl_queue_args qa = dev_qa(d, &ev);
  int rc = rcl_spmv_enqueue(d->v[dst], 0, jac ? d->D : d->A, alpha, d->v[src], 0, beta, &d->so, &qa);
  return dev_advance(d, rc, ev); /* ev is read after the call has set it */
}

static int dev_reduce(void *st, rcl_reduce_op op, int a, int b, int slot) {
  dev_state *d = st;
  cl_event ev = NULL;
  rcl_queue_args qa = dev_qa(d, &ev);
  int rc = rcl_reduce_enqueue(d->s, (size_t)slot, d->ctx, op, d->dt, d->n, d->v[a], 0, d->v[b], 0, &d->ro, &qa);
  return dev_advance(d, rc, ev);
}

static int dev_axpy(void *st, int dst, const void *alpha, int src) {
  dev_state *d = st;
  cl_event ev = NULL;
  rcl_queue_args qa = dev_qa(d, &ev);
  int rc = rcl_axpy_enqueue(d->v[dst], 0, d->ctx, d->dt, d->n, alpha, d->v[src], 0, 0, &qa);
  return dev_advance(d, rc, ev);
}

static int dev_scal(void *st, int dst, const void *alpha) {
  dev_state *d = st;
  cl_event ev = NULL;
  rcl_queue_args qa = dev_qa(d, &ev);
  int rc = rcl_scal_enqueue(d->v[dst], 0, d->ctx, d->dt, d->n, alpha, 0, &qa);
  return dev_advance(d, rc, ev);
}

static int dev_fetch(void *st, void *slots) {
  dev_state *d = st;
  cl_int err =
      clEnqueueReadBuffer(d->q, d->s, CL_TRUE, 0, 3 * d->es, slots, d->last ? 1 : 0, d->last ? &d->last : NULL, NULL);
  return err == CL_SUCCESS ? 0 : rcl__fail_cl(err, "CG: reading the scalars back");
}

int rcl__cg_check(rcl_cg_result *res, const rcl_cg_options *opts, size_t nrows, size_t ncols) {
  if (!res) return rcl__fail(RCL_ERR_INVALID_ARG, "CG: NULL result");
  memset(res, 0, sizeof *res);
  int rc = opts ? check_options(opts) : 0;
  if (rc) return rc;
  if (nrows != ncols)
    return rcl__fail(RCL_ERR_INVALID_ARG, "CG needs a square matrix, this one is %zu x %zu", nrows, ncols);
  return 0;
}

int rcl_cg_solve(rcl_cg_result *res, rcl_spmv_matrix *A, cl_mem x, cl_mem b, const rcl_cg_options *opts,
                 const rcl_queue_args *q) {
  static const rcl_cg_options defaults = RCL_CG_OPTIONS_INIT;
  if (!A) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_cg_solve: NULL matrix");
  int rc = rcl__cg_check(res, opts, rcl_spmv_matrix_nrows(A), rcl_spmv_matrix_ncols(A));
  if (rc) return rc;
  if (!opts) opts = &defaults;
  dev_state d;
  memset(&d, 0, sizeof d);
  d.A = A;
  d.ctx = rcl_spmv_matrix_context(A);
  d.dt = rcl_spmv_matrix_dtype(A);
  d.n = rcl_spmv_matrix_nrows(A);
  d.es = rcl_dtype_size(d.dt);
  d.ro = (rcl_reduce_options)RCL_REDUCE_OPTIONS_INIT;
  d.ro.mode = opts->dot_mode;
  d.so = opts->spmv;
  if ((rc = rcl__queue_of(&d.q, d.ctx, q)) != 0) return rc;
  if ((rc = rcl__require_support(d.ctx, RCL_FAMILY_REDUCE, d.dt)) != 0) return rc;
  if (d.n && ((rc = rcl__check_buffer(x, d.n * d.es, "x")) || (rc = rcl__check_buffer(b, d.n * d.es, "b")))) return rc;
  if (q && q->num_events_in_wait_list) {
    cl_int err = clWaitForEvents(q->num_events_in_wait_list, q->event_wait_list);
    if (err != CL_SUCCESS) return rcl__fail_cl(err, "CG: waiting for the caller's events");
  }
  if (!(q && q->event) && (rc = rcl__queue_in_order(&d.lazy, d.ctx, d.q)) != 0) return rc;
  if (d.n == 0) return rcl__cg_empty(res, d.dt);
  d.v[V_X] = x;
  d.v[V_B] = b;
  for (int i = V_R; i < NV && !rc; i++)
    if (i != V_Z || opts->jacobi)
      rc = rcl__buffer_create(&d.v[i], d.ctx, CL_MEM_READ_WRITE, d.n * d.es, NULL, "CG vector");
  if (!rc) rc = rcl__buffer_create(&d.s, d.ctx, CL_MEM_READ_WRITE, 3 * d.es, NULL, "CG scalars");
  if (!rc && opts->jacobi) rc = rcl__spmv_jacobi_of(&d.D, A); /* kept with A for the next solve */
  rcl_cg_ops o = {&d, dev_copy, dev_spmv, dev_reduce, dev_axpy, dev_scal, dev_fetch};
  if (!rc) rc = rcl__cg_run(&o, d.dt, d.n, opts, res);
  if (d.lazy) clFinish(d.q); /* no events: what was enqueued is done when the queue is */
  if (d.last) {
    clWaitForEvents(1, &d.last);
    if (q && q->event && (rc == 0 || rc == RCL_ERR_NO_CONVERGENCE || rc == RCL_ERR_BREAKDOWN))
      *q->event = d.last;
    else
      clReleaseEvent(d.last);
  } else if (q && q->event) {
    *q->event = NULL;
  }
  for (int i = V_R; i < NV; i++)
    if (d.v[i]) clReleaseMemObject(d.v[i]);
  if (d.s) clReleaseMemObject(d.s);
  return rcl__cg_finish(res, d.dt, rc);
}

int rcl_cg(void *x, rcl_cg_result *res, rcl_spmv_matrix *A, const void *b, const rcl_cg_options *opts) {
  if (!A) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_cg: NULL matrix");
  rcl_context *ctx = rcl_spmv_matrix_context(A);
  size_t n = rcl_spmv_matrix_nrows(A), es = rcl_dtype_size(rcl_spmv_matrix_dtype(A));
  if (!ctx->queue) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_cg: the context has no queue (wrapped without one)");
  if (n && (!x || !b)) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_cg: NULL x or b");
  if (n == 0) return rcl_cg_solve(res, A, NULL, NULL, opts, NULL);
  cl_mem bx = NULL, bb = NULL;
  rcl_chain ch;
  int rc = rcl__chain_host(&ch, ctx);
  if (rc) return rc;
  rc = rcl__buffer_create(&bx, ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * es, x, "x");
  if (!rc)
    rc = rcl__buffer_create(&bb, ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * es, (void *)(uintptr_t)b, "b");
  if (!rc) {
    rcl_queue_args qa = rcl__chain_args(&ch);
    rc = rcl__chain_adopt(&ch, rcl_cg_solve(res, A, bx, bb, opts, &qa));
    if (rc == 0 || rc == RCL_ERR_NO_CONVERGENCE || rc == RCL_ERR_BREAKDOWN) {
      int rrc = rcl__chain_read(&ch, bx, 0, n * es, x, NULL, "x");
      if (rrc) {
        rcl_cg_result_free(res);
        rc = rrc;
      }
    }
  }
  rc = rcl__chain_finish(&ch, NULL, rc); /* after the read a non-converged solve has nothing left to wait for */
  if (bx) clReleaseMemObject(bx);
  if (bb) clReleaseMemObject(bb);
  return rc;
}

/* ---- host reference back end ---------------------------------------------------------------------------- */

typedef struct {
  const rcl_csr *A;
  rcl_csr *D;
  void *v[NV];
  unsigned char s[24];
  size_t n, es;
  rcl_dtype dt;
  rcl_reduce_mode mode;
  rcl_spmv_contract contract;
} ref_state;

static int ref_copy(void *st, int dst, int src) {
  ref_state *r = st;
  memcpy(r->v[dst], r->v[src], r->n * r->es);
  return 0;
}

static int ref_spmv(void *st, int jac, int dst, int src, const void *alpha, const void *beta) {
  ref_state *r = st;
  return rcl_ref_spmv(r->v[dst], jac ? r->D : r->A, r->contract, alpha, r->v[src], beta);
}

static int ref_reduce(void *st, rcl_reduce_op op, int a, int b, int slot) {
  ref_state *r = st;
  return rcl_ref_reduce(r->s + (size_t)slot * r->es, op, r->dt, r->mode, r->n, r->v[a], r->v[b]);
}

static int ref_axpy(void *st, int dst, const void *alpha, int src) {
  ref_state *r = st;
  rcl_ref_axpy(r->v[dst], r->dt, r->n, alpha, r->v[src]);
  return 0;
}

static int ref_scal(void *st, int dst, const void *alpha) {
  ref_state *r = st;
  rcl_ref_scal(r->v[dst], r->dt, r->n, alpha);
  return 0;
}

static int ref_fetch(void *st, void *slots) {
  ref_state *r = st;
  memcpy(slots, r->s, 3 * r->es);
  return 0;
}

int rcl_ref_cg(void *x, rcl_cg_result *res, const rcl_csr *A, const void *b, const rcl_cg_options *opts) {
  static const rcl_cg_options defaults = RCL_CG_OPTIONS_INIT;
  int rc = rcl_csr_validate(A);
  if (rc) return rc;
  if ((rc = rcl__cg_check(res, opts, A->nrows, A->ncols)) != 0) return rc;
  if (!opts) opts = &defaults;
  ref_state r;
  memset(&r, 0, sizeof r);
  r.A = A;
  r.dt = A->dtype;
  r.n = A->nrows;
  r.es = rcl_dtype_size(r.dt);
  r.mode = opts->dot_mode;
  r.contract = opts->spmv.contract;
  if (r.n == 0) return rcl__cg_empty(res, r.dt);
  if (!x || !b) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_ref_cg: NULL x or b");
  r.v[V_X] = x;
  r.v[V_B] = (void *)(uintptr_t)b;
  for (int i = V_R; i < NV && !rc; i++)
    if (!(r.v[i] = rcl__malloc(r.n * r.es))) rc = RCL_ERR_OUT_OF_MEMORY;
  if (!rc && opts->jacobi) rc = rcl__csr_jacobi(&r.D, A);
  rcl_cg_ops o = {&r, ref_copy, ref_spmv, ref_reduce, ref_axpy, ref_scal, ref_fetch};
  if (!rc) rc = rcl__cg_run(&o, r.dt, r.n, opts, res);
  for (int i = V_R; i < NV; i++) rcl__free(r.v[i]);
  rcl_csr_free(r.D);
  return rcl__cg_finish(res, r.dt, rc);
}
