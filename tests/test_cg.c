/* Conjugate Gradient on every device: iteration count, residual history and solution bit-identical to
 * the host reference (hence to every other device) for each dtype, preconditioner, dot mode, SpMV
 * contract and variant; golden digests; stopping on tolerance and on max iterations; breakdown on
 * indefinite matrices and bad diagonals; argument errors. */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "pkgdata.h"
#include "testlib.h"

#define PKG_R "/usr/lib/R/library/Matrix/external/"

static const rcl_dtype dtypes[] = {RCL_F32, RCL_F64};

/* D A D for the 2D Poisson matrix with D = diag(1 + i mod 7): SPD with a varying diagonal, so Jacobi
 * changes the iteration. Every product is a small integer: exact in both dtypes. */
static rcl_csr *scaled_poisson(rcl_dtype dt, size_t n) {
  rcl_csr *A;
  rt_ok(rcl_csr_poisson2d(&A, dt, n));
  for (size_t i = 0; i < A->nrows; i++)
    for (uint64_t k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
      double s = (double)(1 + i % 7) * (double)(1 + A->col_idx[k] % 7);
      if (dt == RCL_F32)
        ((float *)A->values)[k] *= (float)s;
      else
        ((double *)A->values)[k] *= s;
    }
  return A;
}

static void *gen(rcl_dtype dt, size_t n, const char *kind, uint64_t seed) {
  void *p = malloc((n ? n : 1) * rcl_dtype_size(dt));
  rt_fill(p, dt, n, kind, seed);
  return p;
}

/* Runs CG on the device and the reference from x0 = 0 and compares everything. */
static void compare(size_t dev, const rcl_csr *A, const void *b, const rcl_cg_options *o, const char *what,
                    int expect_rc) {
  rcl_dtype dt = A->dtype;
  size_t es = rcl_dtype_size(dt), n = A->nrows;
  void *xr = calloc(n ? n : 1, es), *xd = calloc(n ? n : 1, es);
  rcl_cg_result rr, rd;
  int rc1 = rcl_ref_cg(xr, &rr, A, b, o);
  ck_assert_msg(rc1 == expect_rc, "%s: reference returned %s (%s), expected %s", what, rcl_status_name(rc1),
                rcl_error_last(), rcl_status_name(expect_rc));
  rcl_spmv_matrix *M;
  rt_ok(rcl_spmv_matrix_create(&M, rt_ctx(dev), A));
  int rc2 = rcl_cg(xd, &rd, M, b, o);
  ck_assert_msg(rc2 == expect_rc, "%s on %s: returned %s (%s), expected %s", what, rt_device_name(dev),
                rcl_status_name(rc2), rcl_error_last(), rcl_status_name(expect_rc));
  ck_assert_msg(rd.iterations == rr.iterations, "%s on %s: %zu iterations, reference %zu", what, rt_device_name(dev),
                rd.iterations, rr.iterations);
  ck_assert_uint_eq(rd.history_len, rr.history_len);
  ck_assert_uint_eq(rd.history_len, rd.iterations + 1);
  rt_assert_bits_eq(rd.history, rr.history, rr.history_len, dt, "%s residual history on %s", what, rt_device_name(dev));
  ck_assert_str_eq(rd.history_sha256, rr.history_sha256);
  rt_assert_bits_eq(xd, xr, n, dt, "%s solution on %s", what, rt_device_name(dev));
  ck_assert_int_eq(rd.converged, rr.converged);
  rcl_cg_result_free(&rr);
  rcl_cg_result_free(&rd);
  rcl_spmv_matrix_free(M);
  free(xr);
  free(xd);
}

START_TEST(cg_matches_reference) {
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_SPMV, dt)) continue;
    for (int m = 0; m < 2; m++) {
      rcl_csr *A = m ? scaled_poisson(dt, 9) : NULL;
      if (!m) rt_ok(rcl_csr_generate(&A, dt, "poisson2d:11"));
      void *b = gen(dt, A->nrows, "uniform", 40 + (uint64_t)m);
      for (int jac = 0; jac < 2; jac++)
        for (int dm = 0; dm < 2; dm++)
          for (int sc = 0; sc < 2; sc++) {
            rcl_cg_options o = RCL_CG_OPTIONS_INIT;
            o.tol = dt == RCL_F32 ? 1e-5 : 1e-10;
            o.max_iterations = 2000;
            o.jacobi = jac;
            o.dot_mode = dm ? RCL_REDUCE_EXACT : RCL_REDUCE_ORDERED;
            o.spmv.contract = sc ? RCL_SPMV_EXACT : RCL_SPMV_ORDERED;
            o.spmv.variant = (jac + dm + sc) % 2 ? RCL_SPMV_SCALAR : RCL_SPMV_ADAPTIVE;
            char what[160];
            snprintf(what, sizeof what, "CG %s %s jacobi=%d dots=%s spmv=%s/%s",
                     m ? "scaled poisson 9" : "poisson2d:11", rcl_dtype_name(dt), jac, rcl_reduce_mode_name(o.dot_mode),
                     rcl_spmv_contract_name(o.spmv.contract), rcl_spmv_variant_name(o.spmv.variant));
            compare(_i, A, b, &o, what, 0);
          }
      free(b);
      rcl_csr_free(A);
    }
  }
}
END_TEST

/* Jacobi makes a difference on the scaled matrix (so the preconditioned tests prove something). */
START_TEST(jacobi_changes_the_iteration) {
  rcl_csr *A = scaled_poisson(RCL_F64, 14);
  double *b = gen(RCL_F64, A->nrows, "uniform", 41), *x = calloc(A->nrows, 8);
  rcl_cg_options o = RCL_CG_OPTIONS_INIT;
  o.tol = 1e-10;
  rcl_cg_result r0, r1;
  rt_ok(rcl_ref_cg(x, &r0, A, b, &o));
  memset(x, 0, A->nrows * 8);
  o.jacobi = 1;
  rt_ok(rcl_ref_cg(x, &r1, A, b, &o));
  ck_assert_msg(r1.iterations < r0.iterations, "Jacobi took %zu iterations, plain CG %zu", r1.iterations,
                r0.iterations);
  /* and the solution solves the system: ||b - A x|| small */
  double *ax = calloc(A->nrows, 8), one = 1, zero = 0;
  rt_ok(rcl_ref_spmv(ax, A, RCL_SPMV_ORDERED, &one, x, &zero));
  double err = 0, bn = 0;
  for (size_t i = 0; i < A->nrows; i++) {
    err += (b[i] - ax[i]) * (b[i] - ax[i]);
    bn += b[i] * b[i];
  }
  ck_assert_msg(sqrt(err) <= 1e-9 * sqrt(bn), "residual %g of ||b|| %g", sqrt(err), sqrt(bn));
  rcl_cg_result_free(&r0);
  rcl_cg_result_free(&r1);
  free(ax);
  free(b);
  free(x);
  rcl_csr_free(A);
}
END_TEST

/* Golden "iterations/history/solution" digests: the reference reproduces them and every device too. */
static int golden_case(size_t g, rcl_dtype dt, rcl_csr **A, rcl_cg_options *o, char *key) {
  static const char *const names[] = {"poisson2d:20", "scaled-poisson:14", "scaled-poisson:14+jacobi", "lund_a+jacobi"};
  *o = (rcl_cg_options)RCL_CG_OPTIONS_INIT;
  o->tol = dt == RCL_F32 ? 1e-5 : 1e-10;
  o->jacobi = g > 1;
  *A = NULL;
  if (g == 0)
    rt_ok(rcl_csr_generate(A, dt, "poisson2d:20"));
  else if (g < 3)
    *A = scaled_poisson(dt, 14);
  else if (pkg_file(PKG_R "lund_a.mtx")) {
    rt_ok(rcl_matrix_read(A, pkg_file(PKG_R "lund_a.mtx"), dt));
    o->max_iterations = 5000;
    o->tol = dt == RCL_F32 ? 1e-4 : 1e-9;
  } else {
    rt_note("skip golden CG on lund_a: " PKG_R "lund_a.mtx is absent (install r-cran-matrix)");
    return 0;
  }
  sprintf(key, "%s/%s", names[g], rcl_dtype_name(dt));
  return 1;
}

static void golden_line(char *line, const rcl_cg_result *r, const void *x, size_t n, rcl_dtype dt) {
  char hx[65];
  rcl_sha256_hex(hx, x, n * rcl_dtype_size(dt));
  sprintf(line, "%zu/%s/%s", r->iterations, r->history_sha256, hx);
}

START_TEST(cg_golden_reference) {
  for (size_t d = 0; d < 2; d++)
    for (size_t g = 0; g < 4; g++) {
      rcl_csr *A;
      rcl_cg_options o;
      char key[128], line[256];
      if (!golden_case(g, dtypes[d], &A, &o, key)) continue;
      void *b = gen(dtypes[d], A->nrows, "uniform", 5), *x = calloc(A->nrows, rcl_dtype_size(dtypes[d]));
      rcl_cg_result r;
      int rc = rcl_ref_cg(x, &r, A, b, &o);
      ck_assert_msg(rc == 0, "%s: %s", key, rcl_error_last());
      golden_line(line, &r, x, A->nrows, dtypes[d]);
      rt_golden_ref_value("cg.txt", key, line);
      rcl_cg_result_free(&r);
      free(b);
      free(x);
      rcl_csr_free(A);
    }
}
END_TEST

START_TEST(cg_golden_devices) {
  for (size_t d = 0; d < 2; d++) {
    if (!rt_supported(_i, RCL_FAMILY_SPMV, dtypes[d])) continue;
    for (size_t g = 0; g < 4; g++) {
      rcl_csr *A;
      rcl_cg_options o;
      char key[128], line[256];
      if (!golden_case(g, dtypes[d], &A, &o, key)) continue;
      void *b = gen(dtypes[d], A->nrows, "uniform", 5), *x = calloc(A->nrows, rcl_dtype_size(dtypes[d]));
      rcl_spmv_matrix *M;
      rt_ok(rcl_spmv_matrix_create(&M, rt_ctx(_i), A));
      rcl_cg_result r;
      char want[512];
      rt_golden_get("cg.txt", key, want, sizeof want);
      /* twice on one matrix: the second solve uses the Jacobi preconditioner the first one kept */
      for (int solve = 0; solve < 2; solve++) {
        memset(x, 0, A->nrows * rcl_dtype_size(dtypes[d]));
        rt_ok(rcl_cg(x, &r, M, b, &o));
        golden_line(line, &r, x, A->nrows, dtypes[d]);
        ck_assert_msg(want[0] && !strcmp(want, line), "CG %s on %s (solve %d): %s, golden %s", key, rt_device_name(_i),
                      solve + 1, line, want[0] ? want : "(none)");
        rcl_cg_result_free(&r);
      }
      rcl_spmv_matrix_free(M);
      free(b);
      free(x);
      rcl_csr_free(A);
    }
  }
}
END_TEST

START_TEST(cg_stops) {
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_SPMV, dt)) continue;
    size_t es = rcl_dtype_size(dt);
    rcl_csr *A;
    rt_ok(rcl_csr_generate(&A, dt, "poisson2d:12"));
    void *b = gen(dt, A->nrows, "uniform", 3);
    /* the iteration limit: RCL_ERR_NO_CONVERGENCE with the history so far, the same everywhere */
    rcl_cg_options o = RCL_CG_OPTIONS_INIT;
    o.max_iterations = 5;
    compare(_i, A, b, &o, "CG with max_iterations 5", RCL_ERR_NO_CONVERGENCE);
    rcl_spmv_matrix *M;
    rt_ok(rcl_spmv_matrix_create(&M, rt_ctx(_i), A));
    void *x = calloc(A->nrows, es);
    rcl_cg_result r;
    rt_fails(rcl_cg(x, &r, M, b, &o), RCL_ERR_NO_CONVERGENCE, "no convergence in 5 iterations");
    ck_assert_uint_eq(r.iterations, 5);
    ck_assert_uint_eq(r.history_len, 6);
    ck_assert(!r.converged);
    ck_assert(strstr(r.message, "no convergence") != NULL);
    rcl_cg_result_free(&r);
    /* tol = 0 with max_iterations 0: the initial residual only */
    o.tol = 0;
    o.max_iterations = 0;
    rt_fails(rcl_cg(x, &r, M, b, &o), RCL_ERR_NO_CONVERGENCE, "no convergence in 0 iterations");
    ck_assert_uint_eq(r.history_len, 1);
    rcl_cg_result_free(&r);
    /* the exact solution as the initial guess: b - A x0 is exactly 0, converged after 0 iterations */
    unsigned char one[8], zero[8];
    if (dt == RCL_F32) {
      float f1 = 1, f0 = 0;
      memcpy(one, &f1, 4);
      memcpy(zero, &f0, 4);
    } else {
      double d1 = 1, d0 = 0;
      memcpy(one, &d1, 8);
      memcpy(zero, &d0, 8);
    }
    void *xt = gen(dt, A->nrows, "uniform", 9), *bt = calloc(A->nrows, es);
    rt_ok(rcl_ref_spmv(bt, A, RCL_SPMV_ORDERED, one, xt, zero));
    o = (rcl_cg_options)RCL_CG_OPTIONS_INIT;
    o.tol = 0;
    rt_ok(rcl_cg(xt, &r, M, bt, &o));
    ck_assert_uint_eq(r.iterations, 0);
    ck_assert(r.converged && r.residual_norm == 0);
    rcl_cg_result_free(&r);
    free(xt);
    free(bt);
    free(x);
    free(b);
    rcl_spmv_matrix_free(M);
    rcl_csr_free(A);
  }
}
END_TEST

START_TEST(cg_breakdown) {
  rcl_context *c = rt_ctx(_i);
  /* indefinite: diag(2, -1, 3) */
  uint64_t rp[4] = {0, 1, 2, 3};
  uint32_t ci[3] = {0, 1, 2};
  float v[3] = {2, -1, 3}, b[3] = {1, 1, 1}, x[3] = {0, 0, 0};
  rcl_csr *A;
  rt_ok(rcl_csr_create(&A, RCL_F32, 3, 3, 3, rp, ci, v));
  rcl_cg_options o = RCL_CG_OPTIONS_INIT;
  compare(_i, A, b, &o, "CG on an indefinite matrix", RCL_ERR_BREAKDOWN);
  rcl_spmv_matrix *M;
  rt_ok(rcl_spmv_matrix_create(&M, c, A));
  rcl_cg_result r;
  rt_fails(rcl_cg(x, &r, M, b, &o), RCL_ERR_BREAKDOWN, "not positive");
  ck_assert(strstr(r.message, "p'Ap") != NULL);
  rcl_cg_result_free(&r);
  /* Jacobi: a non-positive diagonal entry, and a missing one */
  o.jacobi = 1;
  rt_fails(rcl_cg(x, &r, M, b, &o), RCL_ERR_BREAKDOWN, "row 1 has a non-positive diagonal entry");
  rcl_cg_result_free(&r);
  rcl_spmv_matrix_free(M);
  rcl_csr_free(A);
  uint32_t off[3] = {1, 0, 2};
  rt_ok(rcl_csr_create(&A, RCL_F32, 3, 3, 3, rp, off, v));
  rt_ok(rcl_spmv_matrix_create(&M, c, A));
  rt_fails(rcl_cg(x, &r, M, b, &o), RCL_ERR_BREAKDOWN, "row 0 has no diagonal");
  rcl_cg_result_free(&r);
  rt_fails(rcl_ref_cg(x, &r, A, b, &o), RCL_ERR_BREAKDOWN, "row 0 has no diagonal");
  rcl_cg_result_free(&r);
  rcl_spmv_matrix_free(M);
  rcl_csr_free(A);
}
END_TEST

START_TEST(cg_arguments_and_buffers) {
  rcl_context *c = rt_ctx(_i);
  rcl_csr *A;
  rt_ok(rcl_csr_generate(&A, RCL_F32, "random:4x5:2"));
  rcl_spmv_matrix *M;
  rt_ok(rcl_spmv_matrix_create(&M, c, A));
  float x[5] = {0}, b[5] = {1, 1, 1, 1, 1};
  rcl_cg_result r;
  rt_fails(rcl_cg(x, &r, M, b, NULL), RCL_ERR_INVALID_ARG, "square");
  rcl_spmv_matrix_free(M);
  rcl_csr_free(A);
  rt_ok(rcl_csr_generate(&A, RCL_F32, "poisson2d:8"));
  rt_ok(rcl_spmv_matrix_create(&M, c, A));
  float *bb = gen(RCL_F32, 64, "uniform", 2), *xx = calloc(64, 4);
  rcl_cg_options o = RCL_CG_OPTIONS_INIT;
  o.tol = -1;
  rt_fails(rcl_cg(xx, &r, M, bb, &o), RCL_ERR_INVALID_ARG, "tol");
  o.tol = NAN;
  rt_fails(rcl_cg(xx, &r, M, bb, &o), RCL_ERR_INVALID_ARG, "tol");
  o = (rcl_cg_options)RCL_CG_OPTIONS_INIT;
  o.version = 0;
  rt_fails(rcl_cg(xx, &r, M, bb, &o), RCL_ERR_INVALID_ARG, "version");
  o = (rcl_cg_options)RCL_CG_OPTIONS_INIT;
  o.dot_mode = (rcl_reduce_mode)4;
  rt_fails(rcl_cg(xx, &r, M, bb, &o), RCL_ERR_INVALID_ARG, "dot_mode");
  o = (rcl_cg_options)RCL_CG_OPTIONS_INIT;
  o.spmv.local_size = 3; /* passed on to the SpMVs, refused there */
  rt_fails(rcl_cg(xx, &r, M, bb, &o), RCL_ERR_INVALID_ARG, "local_size = 3");
  rcl_cg_result_free(&r);
  /* the buffer form on the caller's queue with a wait list and an event; the same bits as rcl_cg */
  o = (rcl_cg_options)RCL_CG_OPTIONS_INIT;
  o.tol = 1e-5;
  float *want = calloc(64, 4);
  rcl_cg_result rw;
  rt_ok(rcl_cg(want, &rw, M, bb, &o));
  cl_int err;
  cl_context clc = rcl_context_cl_context(c);
  cl_command_queue q = clCreateCommandQueue(clc, rcl_context_cl_device(c), 0, &err);
  cl_mem bx = clCreateBuffer(clc, CL_MEM_READ_WRITE, 64 * 4, NULL, &err);
  cl_mem bb_ = clCreateBuffer(clc, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 64 * 4, bb, &err);
  cl_event wrote, done = NULL;
  ck_assert_int_eq(clEnqueueWriteBuffer(q, bx, CL_FALSE, 0, 64 * 4, xx, 0, NULL, &wrote), CL_SUCCESS);
  rcl_queue_args qa = RCL_QUEUE_ARGS_INIT;
  qa.queue = q;
  qa.num_events_in_wait_list = 1;
  qa.event_wait_list = &wrote;
  qa.event = &done;
  rt_ok(rcl_cg_solve(&r, M, bx, bb_, &o, &qa));
  ck_assert_ptr_nonnull(done);
  clReleaseEvent(done);
  float got[64];
  ck_assert_int_eq(clEnqueueReadBuffer(q, bx, CL_TRUE, 0, 64 * 4, got, 0, NULL, NULL), CL_SUCCESS);
  rt_assert_bits_eq(got, want, 64, RCL_F32, "rcl_cg_solve on the caller's queue, %s", rt_device_name(_i));
  ck_assert_str_eq(r.history_sha256, rw.history_sha256);
  rcl_cg_result_free(&r);
  rcl_cg_result_free(&rw);
  clReleaseEvent(wrote);
  clReleaseMemObject(bx);
  clReleaseMemObject(bb_);
  clReleaseCommandQueue(q);
  /* an empty system is solved at once */
  rcl_csr *E;
  uint64_t z = 0;
  rt_ok(rcl_csr_create(&E, RCL_F32, 0, 0, 0, &z, NULL, NULL));
  rcl_spmv_matrix *ME;
  rt_ok(rcl_spmv_matrix_create(&ME, c, E));
  rt_ok(rcl_cg(NULL, &r, ME, NULL, NULL));
  ck_assert(r.converged && r.iterations == 0 && r.history_len == 1);
  rcl_cg_result_free(&r);
  rcl_spmv_matrix_free(ME);
  rcl_csr_free(E);
  free(want);
  free(bb);
  free(xx);
  rcl_spmv_matrix_free(M);
  rcl_csr_free(A);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cg");
  rt_add_device_presence(s);
  TCase *h = tcase_create("host");
  tcase_add_test(h, jacobi_changes_the_iteration);
  tcase_add_test(h, cg_golden_reference);
  suite_add_tcase(s, h);
  TCase *tc = tcase_create("devices");
  rt_add_device_loop(tc, cg_matches_reference);
  rt_add_device_loop(tc, cg_golden_devices);
  rt_add_device_loop(tc, cg_stops);
  rt_add_device_loop(tc, cg_breakdown);
  rt_add_device_loop(tc, cg_arguments_and_buffers);
  suite_add_tcase(s, tc);
  return rt_run(s);
}
