/* Host-array forms on an application's OUT-OF-ORDER queue (rcl_context_wrap): every family's
 * convenience call must order its uploads, launches, multi-step loops and read-back itself, so the bits
 * equal the host reference's on such a queue too. Each call is repeated, since an unordered read-back
 * is a race that only sometimes loses (before the fix, rcl_sum_f64 returned garbage on PoCL). */
#include <stdlib.h>

#include "testlib.h"

#define REPEATS 4

static rcl_context **ooo; /* per device: the wrapped out-of-order context, or NULL where unsupported */
static int *ooo_tried;

/* The wrapped context of device i on a new cl_context and out-of-order queue, or NULL (noted) where the
 * device cannot execute out of order. */
static rcl_context *ooo_ctx(size_t i) {
  if (!ooo) {
    ooo = calloc(rt_ndevices() + 1, sizeof *ooo);
    ooo_tried = calloc(rt_ndevices() + 1, sizeof *ooo_tried);
  }
  if (ooo_tried[i]) {
    if (!ooo[i]) rt_note("%s: no out-of-order host queue; skipped", rt_device_name(i));
    return ooo[i];
  }
  ooo_tried[i] = 1;
  cl_device_id dev = rcl_context_cl_device(rt_ctx(i));
  cl_command_queue_properties props = 0;
  ck_assert(clGetDeviceInfo(dev, CL_DEVICE_QUEUE_PROPERTIES, sizeof props, &props, NULL) == CL_SUCCESS);
  if (!(props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)) {
    rt_note("%s: no out-of-order host queue (CL_DEVICE_QUEUE_PROPERTIES lacks it); skipped", rt_device_name(i));
    return NULL;
  }
  cl_int err;
  cl_context cc = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  ck_assert_msg(cc != NULL, "clCreateContext: %d", err);
  cl_command_queue q = clCreateCommandQueue(cc, dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
  ck_assert_msg(q != NULL, "clCreateCommandQueue(out of order): %d", err);
  rt_ok(rcl_context_wrap(&ooo[i], cc, dev, q, NULL));
  clReleaseCommandQueue(q); /* the wrapped context holds its own references */
  clReleaseContext(cc);
  return ooo[i];
}

static void *gen(rcl_dtype dt, size_t n, const char *kind, uint64_t seed) {
  void *p = malloc((n ? n : 1) * rcl_dtype_size(dt));
  ck_assert(p != NULL);
  rt_fill(p, dt, n, kind, seed);
  return p;
}

static const rcl_dtype dtypes[] = {RCL_F32, RCL_F64};

/* sum / dot / nrm2, ordered and exact, against rcl_ref_reduce: on uniform data (finite results) and on
 * data of every exponent. */
START_TEST(ooo_reductions) {
  rcl_context *c = ooo_ctx(_i);
  if (!c) return;
  const size_t n = 300007;
  static const rcl_reduce_op ops[] = {RCL_OP_SUM, RCL_OP_DOT, RCL_OP_NRM2};
  static const rcl_reduce_mode modes[] = {RCL_REDUCE_ORDERED, RCL_REDUCE_EXACT};
  static const char *const kinds[] = {"uniform", "wide"};
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_REDUCE, dt)) continue;
    for (size_t k = 0; k < 2; k++) {
      void *x = gen(dt, n, kinds[k], 11 + d), *y = gen(dt, n, "uniform", 12 + d);
      for (size_t o = 0; o < 3; o++)
        for (size_t m = 0; m < 2; m++) {
          double want = 0, got = 0;
          rcl_reduce_options opts = RCL_REDUCE_OPTIONS_INIT;
          opts.mode = modes[m];
          rt_ok(rcl_ref_reduce(&want, ops[o], dt, modes[m], n, x, y));
          for (int r = 0; r < REPEATS; r++) {
            memset(&got, 0xA5, sizeof got);
            rt_ok(rcl_reduce(&got, c, ops[o], dt, n, x, ops[o] == RCL_OP_DOT ? y : NULL, &opts));
            rt_assert_bits_eq(&got, &want, 1, dt, "%s %s %s on %s data, repeat %d", rcl_reduce_op_name(ops[o]),
                              rcl_dtype_name(dt), rcl_reduce_mode_name(modes[m]), kinds[k], r);
          }
        }
      free(x);
      free(y);
    }
  }
}
END_TEST

/* axpy and scal against rcl_ref_axpy / rcl_ref_scal. */
START_TEST(ooo_blas1) {
  rcl_context *c = ooo_ctx(_i);
  if (!c) return;
  const size_t n = 200003;
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_REDUCE, dt)) continue;
    size_t bytes = n * rcl_dtype_size(dt);
    void *x = gen(dt, n, "uniform", 21 + d), *y0 = gen(dt, n, "wide", 22 + d);
    void *want = malloc(bytes), *got = malloc(bytes);
    unsigned char alpha[8];
    rt_fill(alpha, dt, 1, "uniform", 23 + d);
    for (int axpy = 0; axpy < 2; axpy++) {
      memcpy(want, y0, bytes);
      if (axpy)
        rcl_ref_axpy(want, dt, n, alpha, x);
      else
        rcl_ref_scal(want, dt, n, alpha);
      for (int r = 0; r < REPEATS; r++) {
        memcpy(got, y0, bytes);
        rt_ok(axpy ? rcl_axpy(got, c, dt, n, alpha, x, 0) : rcl_scal(got, c, dt, n, alpha, 0));
        rt_assert_bits_eq(got, want, n, dt, "%s %s, repeat %d", axpy ? "axpy" : "scal", rcl_dtype_name(dt), r);
      }
    }
    free(x);
    free(y0);
    free(want);
    free(got);
  }
}
END_TEST

/* The nine-point stencil and a general 5x5 one, several iterations (ping-pong through a scratch grid). */
START_TEST(ooo_stencil) {
  rcl_context *c = ooo_ctx(_i);
  if (!c) return;
  const size_t w = 301, h = 203, iters = 5;
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_STENCIL, dt)) continue;
    void *in = gen(dt, w * h, "uniform", 31 + d);
    void *want = malloc(w * h * rcl_dtype_size(dt)), *got = malloc(w * h * rcl_dtype_size(dt));
    for (int general = 0; general < 2; general++) {
      rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
      if (general) {
        st.kind = RCL_STENCIL_GENERAL;
        st.radius = 2;
        for (int k = 0; k < 25; k++) st.weights[k] = (k % 7 + 1) / 64.0;
        st.boundary = RCL_BOUNDARY_PERIODIC;
      }
      rt_ok(rcl_ref_stencil(want, &st, dt, w, h, iters, in));
      for (int r = 0; r < REPEATS; r++) {
        memset(got, 0xA5, w * h * rcl_dtype_size(dt));
        rt_ok(rcl_stencil(got, c, &st, dt, w, h, iters, in, NULL));
        rt_assert_bits_eq(got, want, w * h, dt, "%s %s, repeat %d", general ? "general r2" : "nine", rcl_dtype_name(dt),
                          r);
      }
    }
    free(in);
    free(want);
    free(got);
  }
}
END_TEST

/* SOR sweeps with a right-hand side, then the residual norm: two enqueue forms in sequence. */
START_TEST(ooo_sor) {
  rcl_context *c = ooo_ctx(_i);
  if (!c) return;
  const size_t w = 200, h = 150, sweeps = 6;
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_STENCIL, dt)) continue;
    size_t bytes = w * h * rcl_dtype_size(dt);
    void *g0 = gen(dt, w * h, "uniform", 41 + d), *rhs = gen(dt, w * h, "uniform", 42 + d);
    void *want = malloc(bytes), *got = malloc(bytes);
    double want_res = 0, got_res = 0;
    rcl_sor_desc s = RCL_SOR_DESC_INIT;
    s.omega = 1.5;
    memcpy(want, g0, bytes);
    rt_ok(rcl_ref_sor(want, &want_res, &s, dt, w, h, sweeps, rhs));
    for (int r = 0; r < REPEATS; r++) {
      memcpy(got, g0, bytes);
      memset(&got_res, 0xA5, sizeof got_res);
      rt_ok(rcl_sor(got, &got_res, c, &s, dt, w, h, sweeps, rhs, NULL));
      rt_assert_bits_eq(got, want, w * h, dt, "SOR grid %s, repeat %d", rcl_dtype_name(dt), r);
      rt_assert_bits_eq(&got_res, &want_res, 1, dt, "SOR residual %s, repeat %d", rcl_dtype_name(dt), r);
    }
    free(g0);
    free(rhs);
    free(want);
    free(got);
  }
}
END_TEST

/* SpMV (ordered and exact contracts) with beta != 0, through rcl_spmv and rcl_spmv_host. */
START_TEST(ooo_spmv) {
  rcl_context *c = ooo_ctx(_i);
  if (!c) return;
  static const rcl_spmv_contract contracts[] = {RCL_SPMV_ORDERED, RCL_SPMV_EXACT};
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_SPMV, dt)) continue;
    rcl_csr *A;
    rt_ok(rcl_csr_generate(&A, dt, "poisson2d:150"));
    size_t es = rcl_dtype_size(dt);
    void *x = gen(dt, A->ncols, "wide", 51 + d), *y0 = gen(dt, A->nrows, "uniform", 52 + d);
    void *want = malloc(A->nrows * es), *got = malloc(A->nrows * es);
    unsigned char alpha[8], beta[8];
    rt_fill(alpha, dt, 1, "uniform", 53 + d);
    rt_fill(beta, dt, 1, "uniform", 54 + d);
    rcl_spmv_matrix *M;
    rt_ok(rcl_spmv_matrix_create(&M, c, A));
    for (size_t k = 0; k < 2; k++) {
      rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
      o.contract = contracts[k];
      memcpy(want, y0, A->nrows * es);
      rt_ok(rcl_ref_spmv(want, A, contracts[k], alpha, x, beta));
      for (int r = 0; r < REPEATS; r++) {
        memcpy(got, y0, A->nrows * es);
        rt_ok(r % 2 ? rcl_spmv_host(got, M, alpha, x, beta, &o) : rcl_spmv(got, c, A, alpha, x, beta, &o));
        rt_assert_bits_eq(got, want, A->nrows, dt, "SpMV %s %s, repeat %d", k ? "exact" : "ordered", rcl_dtype_name(dt),
                          r);
      }
    }
    rcl_spmv_matrix_free(M);
    rcl_csr_free(A);
    free(x);
    free(y0);
    free(want);
    free(got);
  }
}
END_TEST

/* CG (with the Jacobi preconditioner, so the diagonal is read back too): solution and residual history. */
START_TEST(ooo_cg) {
  rcl_context *c = ooo_ctx(_i);
  if (!c) return;
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_SPMV, dt)) continue;
    rcl_csr *A;
    rt_ok(rcl_csr_generate(&A, dt, "poisson2d:16"));
    size_t n = A->nrows, es = rcl_dtype_size(dt);
    void *b = gen(dt, n, "uniform", 61 + d), *want = calloc(n, es), *got = malloc(n * es);
    rcl_cg_options o = RCL_CG_OPTIONS_INIT;
    o.jacobi = 1;
    o.tol = 0;
    o.max_iterations = 20;
    rcl_cg_result wr, gr;
    ck_assert_int_eq(rcl_ref_cg(want, &wr, A, b, &o), RCL_ERR_NO_CONVERGENCE);
    rcl_spmv_matrix *M;
    rt_ok(rcl_spmv_matrix_create(&M, c, A));
    for (int r = 0; r < REPEATS; r++) {
      memset(got, 0, n * es);
      int rc = rcl_cg(got, &gr, M, b, &o);
      ck_assert_msg(rc == RCL_ERR_NO_CONVERGENCE, "rcl_cg: %s: %s", rcl_status_name(rc), rcl_error_last());
      ck_assert_uint_eq(gr.iterations, wr.iterations);
      ck_assert_str_eq(gr.history_sha256, wr.history_sha256);
      rt_assert_bits_eq(got, want, n, dt, "CG x %s, repeat %d", rcl_dtype_name(dt), r);
      rcl_cg_result_free(&gr);
    }
    rcl_cg_result_free(&wr);
    rcl_spmv_matrix_free(M);
    rcl_csr_free(A);
    free(b);
    free(want);
    free(got);
  }
}
END_TEST

/* A few MD steps (neighbour-list rebuilds, status reads, thermo sums) on the gather path and, where the
 * device has 64-bit atomics, the symmetric one: positions, velocities and forces as the reference's. */
START_TEST(ooo_md) {
  rcl_context *c = ooo_ctx(_i);
  if (!c) return;
  rcl_md_system *s;
  rt_ok(rcl_md_lattice(&s, "fcc", 3, 0.8442, 3.0, 7));
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  size_t n3 = 3 * s->natoms;
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_MD, dt)) continue;
    size_t es = rcl_dtype_size(dt);
    void *want = malloc(2 * n3 * es), *got = malloc(2 * n3 * es);
    int64_t *wf = malloc(n3 * sizeof *wf), *gf = malloc(n3 * sizeof *gf);
    rcl_md *ref;
    rt_ok(rcl_md_create(&ref, NULL, dt, s, &lj, NULL));
    rt_ok(rcl_md_run(ref, 30, 0.005, 0, NULL, NULL));
    rt_ok(rcl_md_get_state(ref, want, (char *)want + n3 * es));
    rt_ok(rcl_md_get_forces(ref, NULL, wf));
    rcl_md_thermo wt, gt;
    rt_ok(rcl_md_thermo_get(ref, &wt));
    rcl_md_free(ref);
    for (int path = 0; path < 2; path++) {
      rcl_md_options o = RCL_MD_OPTIONS_INIT;
      o.path = path ? RCL_MD_PATH_SYMMETRIC : RCL_MD_PATH_GATHER;
      o.skin = 0.1; /* rebuilds within the run */
      if (path && !rcl_context_profile(c)->int64_atomics) continue;
      for (int r = 0; r < REPEATS / 2; r++) {
        rcl_md *md;
        rt_ok(rcl_md_create(&md, c, dt, s, &lj, &o));
        rt_ok(rcl_md_run(md, 30, 0.005, 10, NULL, NULL));
        memset(got, 0xA5, 2 * n3 * es);
        rt_ok(rcl_md_get_state(md, got, (char *)got + n3 * es));
        rt_ok(rcl_md_get_forces(md, NULL, gf));
        rt_ok(rcl_md_thermo_get(md, &gt));
        rcl_md_free(md);
        const char *pn = path ? "symmetric" : "gather";
        rt_assert_bits_eq(got, want, 2 * n3, dt, "MD %s %s state, repeat %d", pn, rcl_dtype_name(dt), r);
        ck_assert_msg(memcmp(gf, wf, n3 * sizeof *gf) == 0, "MD %s %s forces differ, repeat %d", pn, rcl_dtype_name(dt),
                      r);
        ck_assert_msg(memcmp(&gt.pe, &wt.pe, sizeof gt.pe) == 0 &&
                          memcmp(&gt.virial, &wt.virial, sizeof gt.virial) == 0,
                      "MD %s %s thermo differs, repeat %d", pn, rcl_dtype_name(dt), r);
      }
    }
    free(want);
    free(got);
    free(wf);
    free(gf);
  }
  rcl_md_system_free(s);
}
END_TEST

int main(void) {
  Suite *s = suite_create("ooo");
  rt_add_device_presence(s);
  RT_ADD_DEVICE_CASE(s, ooo_reductions);
  RT_ADD_DEVICE_CASE(s, ooo_blas1);
  RT_ADD_DEVICE_CASE(s, ooo_stencil);
  RT_ADD_DEVICE_CASE(s, ooo_sor);
  RT_ADD_DEVICE_CASE(s, ooo_spmv);
  RT_ADD_DEVICE_CASE(s, ooo_cg);
  RT_ADD_DEVICE_CASE(s, ooo_md);
  int rc = rt_run(s);
  for (size_t i = 0; ooo && i < rt_ndevices(); i++) rcl_context_free(ooo[i]);
  free(ooo);
  free(ooo_tried);
  return rc;
}
