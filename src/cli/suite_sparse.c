/* The sparse family's cases in the standard suite: SpMV (ordered and exact) and CG on generated matrices
 * and on real matrices from Debian packages (input-missing when a package is absent). Inputs are those of
 * tests/data/golden/spmv.txt: y = 1.5*A*x - 0.25*y0, x = rcl_generate(uniform, 7), y0 = (uniform, 8); CG
 * from x0 = 0 with b = rcl_generate(uniform, 5), its output the residual history then the solution. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suite.h"

enum { P_KIND, P_CONTRACT, P_MATRIX, P_JACOBI };
enum { K_SPMV, K_CG };

/* Matrices: a generator spec, or a file of a Debian package. */
static const struct {
  const char *spec;
  int quick;
} mats[] = {{"poisson3d:12", 1},
            {"powerlaw:2000x2000:2:5", 1},
            {"/usr/lib/R/library/Matrix/external/utm300.rua", 1},
            {"/usr/share/doc/libsuperlu-dev/examples/g20.rua", 1},
            {"/usr/lib/R/library/Matrix/external/lund_a.mtx", 1},
            {"/usr/lib/R/library/Matrix/external/pores_1.mtx", 0},
            {"poisson3d:64", 0},
            {"random:16384x16384:32:1", 0},
            {"poisson2d:32", 1}};
#define M_CG_POISSON 8
#define M_CG_LUND 4

static const char *short_name(const char *spec) { return spec[0] == '/' ? strrchr(spec, '/') + 1 : spec; }

static int cases(suite_list *l) {
  for (int d = 0; d < 2; d++) {
    rcl_dtype dt = d ? RCL_F64 : RCL_F32;
    for (size_t m = 0; m < sizeof mats / sizeof mats[0]; m++) {
      if (m == M_CG_POISSON) continue;
      for (int c = 0; c < 2; c++) {
        suite_case *sc =
            suite_add(l, &suite_sparse, RCL_FAMILY_SPMV, dt, mats[m].quick, c ? "spmv.exact.v1" : "spmv.ordered.v1",
                      "spmv %s %s %s", rcl_dtype_name(dt), c ? "exact" : "ordered", short_name(mats[m].spec));
        if (!sc) return -1;
        sc->p[P_KIND] = K_SPMV, sc->p[P_CONTRACT] = (uint64_t)c, sc->p[P_MATRIX] = m;
        if (mats[m].spec[0] == '/') snprintf(sc->input, sizeof sc->input, "%s", mats[m].spec);
      }
    }
    static const size_t cgm[] = {M_CG_POISSON, M_CG_LUND};
    for (int k = 0; k < 2; k++)
      for (int jac = 0; jac < 2; jac++) {
        size_t m = cgm[k];
        suite_case *sc = suite_add(l, &suite_sparse, RCL_FAMILY_SPMV, dt, 1, "cg.v1", "cg %s %s %s", rcl_dtype_name(dt),
                                   jac ? "jacobi" : "plain", short_name(mats[m].spec));
        if (!sc) return -1;
        sc->p[P_KIND] = K_CG, sc->p[P_MATRIX] = m, sc->p[P_JACOBI] = (uint64_t)jac;
        if (mats[m].spec[0] == '/') snprintf(sc->input, sizeof sc->input, "%s", mats[m].spec);
      }
  }
  return 0;
}

static int load(rcl_csr **A, const suite_case *c) {
  const char *spec = mats[c->p[P_MATRIX]].spec;
  if (spec[0] != '/') return rcl_csr_generate(A, c->dtype, spec);
  char path[1024];
  const char *pre = getenv("REPROCL_DATA_PREFIX");
  snprintf(path, sizeof path, "%s%s", access(spec, R_OK) != 0 && pre ? pre : "", spec);
  if (access(path, R_OK) != 0) return RCL_ERR_NOT_FOUND;
  return rcl_matrix_read(A, path, c->dtype);
}

static int compute(const suite_case *c, const suite_target *t, void **out, size_t *bytes) {
  rcl_csr *A;
  int rc = load(&A, c);
  if (rc) return rc;
  size_t es = rcl_dtype_size(c->dtype), n = A->nrows;
  rcl_spmv_matrix *M = NULL;
  rcl_split_matrix *SM = NULL;
  if (t && t->ctx) rc = rcl_spmv_matrix_create(&M, t->ctx, A);
  if (t && t->split) rc = rcl_split_matrix_create(&SM, t->split, A);
  if (rc) {
    rcl_csr_free(A);
    return rc;
  }
  if (c->p[P_KIND] == K_SPMV) {
    void *x = malloc((A->ncols ? A->ncols : 1) * es), *y = malloc((n ? n : 1) * es);
    unsigned char alpha[8], beta[8];
    if (c->dtype == RCL_F32) {
      float a = 1.5f, b = -0.25f;
      memcpy(alpha, &a, 4), memcpy(beta, &b, 4);
    } else {
      double a = 1.5, b = -0.25;
      memcpy(alpha, &a, 8), memcpy(beta, &b, 8);
    }
    if (!x || !y) rc = RCL_ERR_OUT_OF_MEMORY;
    if (!rc) {
      rcl_generate(x, c->dtype, A->ncols, RCL_GEN_UNIFORM, 7);
      rcl_generate(y, c->dtype, n, RCL_GEN_UNIFORM, 8);
      rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
      o.contract = c->p[P_CONTRACT] ? RCL_SPMV_EXACT : RCL_SPMV_ORDERED;
      rc = M    ? rcl_spmv_host(y, M, alpha, x, beta, &o)
           : SM ? rcl_split_spmv(y, SM, alpha, x, beta, &o)
                : rcl_ref_spmv(y, A, o.contract, alpha, x, beta);
    }
    free(x);
    if (rc)
      free(y);
    else
      *out = y, *bytes = n * es;
  } else {
    rcl_cg_options o = RCL_CG_OPTIONS_INIT;
    o.tol = c->dtype == RCL_F32 ? 1e-4 : 1e-9;
    o.max_iterations = 5000;
    o.jacobi = (int)c->p[P_JACOBI];
    void *b = malloc(n * es), *x = calloc(n, es);
    rcl_cg_result r;
    memset(&r, 0, sizeof r);
    if (!b || !x) rc = RCL_ERR_OUT_OF_MEMORY;
    if (!rc) {
      rcl_generate(b, c->dtype, n, RCL_GEN_UNIFORM, 5);
      rc = M ? rcl_cg(x, &r, M, b, &o) : SM ? rcl_split_cg(x, &r, SM, b, &o) : rcl_ref_cg(x, &r, A, b, &o);
      if (rc == RCL_ERR_NO_CONVERGENCE || rc == RCL_ERR_BREAKDOWN) rc = 0; /* the history is the result */
    }
    unsigned char *res = rc ? NULL : malloc(r.history_len * es + n * es);
    if (!rc && !res) rc = RCL_ERR_OUT_OF_MEMORY;
    if (!rc) {
      memcpy(res, r.history, r.history_len * es);
      memcpy(res + r.history_len * es, x, n * es);
      *out = res;
      *bytes = r.history_len * es + n * es;
    }
    rcl_cg_result_free(&r);
    free(b);
    free(x);
  }
  rcl_spmv_matrix_free(M);
  rcl_split_matrix_free(SM);
  rcl_csr_free(A);
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

const suite_family suite_sparse = {"spmv", cases, reference, run, run_split};
