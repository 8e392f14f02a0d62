/* SpMV and CG over several devices (rcl_split_matrix, rcl_split_spmv, rcl_split_cg): every device alone,
 * every pair of devices present and PoCL cut into two sub-devices, with weights 1:0, 0:1, 1:1, 3:1, 1:3 and
 * random ones; y, x, the residual history, iteration count, status and message compared bit for bit with
 * the host references rcl_ref_spmv / rcl_ref_cg (which equal rcl_cg on one device: tests/test_cg.c). The
 * matrices put rows that any reordering changes (trap rows) across every cut, cut inside 2048-element
 * blocks (the CG dots' partial reductions) and on them (large matrices), give devices fewer rows than
 * devices, empty rows and rectangular shapes. Also the local row blocks themselves (csr_local.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "reprocl/split.h"
#include "sparse/sparse_internal.h"
#include "testlib.h"

static const rcl_dtype dtypes[] = {RCL_F32, RCL_F64};

/* ---- the splits under test: loop index k = a device alone, a pair, or PoCL's sub-devices ---------------- */

static size_t npairs(void) { return rt_ndevices() * (rt_ndevices() - 1) / 2; }
static size_t nconfigs(void) { return rt_ndevices() + npairs() + 1; }

typedef struct {
  rcl_split *s;
  size_t count;
  double w[2]; /* the weights set */
  char name[256];
} cfg;

/* The pair of index p: (a, b) with a < b. */
static void pair_of(size_t p, size_t *a, size_t *b) {
  size_t n = rt_ndevices();
  for (*a = 0; p >= n - 1 - *a; (*a)++) p -= n - 1 - *a;
  *b = *a + 1 + p;
}

/* Opens configuration k; 0 when it cannot run here (noted). */
static int cfg_open(cfg *c, size_t k) {
  memset(c, 0, sizeof *c);
  size_t n = rt_ndevices();
  if (k < n + npairs()) {
    rcl_context *ctx[2];
    size_t a = k, b = 0;
    c->count = k < n ? 1 : 2;
    if (k >= n) pair_of(k - n, &a, &b);
    ctx[0] = rt_ctx(a);
    ctx[1] = c->count == 2 ? rt_ctx(b) : NULL;
    rt_ok(rcl_split_wrap(&c->s, ctx, c->count, NULL));
    snprintf(c->name, sizeof c->name, "%s%s%s", rt_device_name(a), c->count == 2 ? " + " : "",
             c->count == 2 ? rt_device_name(b) : "");
    return 1;
  }
  rcl_split_options o = RCL_SPLIT_OPTIONS_INIT;
  o.devices = "pocl:/2";
  int rc = rcl_split_create(&c->s, &o);
  if (rc) {
    rt_note("skip the sub-device split \"pocl:/2\": %s", rcl_error_last());
    return 0;
  }
  c->count = rcl_split_count(c->s);
  snprintf(c->name, sizeof c->name, "pocl:/2 (two sub-devices of %s)",
           rcl_context_profile(rcl_split_context(c->s, 0))->device_name);
  return 1;
}

/* Weight set w of a configuration: 1:0, 0:1, 1:1, 3:1, 1:3, random (a single device: 1). */
#define NWEIGHTS 6
static void weights_of(double w[2], size_t set, uint64_t seed) {
  static const double fixed[5][2] = {{1, 0}, {0, 1}, {1, 1}, {3, 1}, {1, 3}};
  if (set < 5) {
    w[0] = fixed[set][0], w[1] = fixed[set][1];
    return;
  }
  rt_rng r = {seed};
  w[0] = 0.05 + rt_uniform(&r), w[1] = 0.05 + rt_uniform(&r);
}

static int cfg_weights(cfg *c, size_t set, uint64_t seed, char *what, size_t cap) {
  double w[2];
  if (c->count == 1 && set > 0) return 0;
  weights_of(w, set, seed);
  if (c->count == 1) w[0] = 1;
  rt_ok(rcl_split_set_weights(c->s, w, c->count));
  c->w[0] = w[0], c->w[1] = w[1];
  snprintf(what, cap, "%s, weights %.3g:%.3g", c->name, w[0], c->count == 2 ? w[1] : 0.0);
  return 1;
}

/* Whether a device of the split given a weight > 0 can run dtype; if none can, asserts the split refuses
 * clearly (notes it). */
static int cfg_can(cfg *c, rcl_dtype dt, const rcl_csr *A) {
  for (size_t i = 0; i < c->count; i++) {
    const char *why = NULL;
    if (c->w[i] > 0 && rcl_device_profile_support(rcl_context_profile(rcl_split_context(c->s, i)), RCL_FAMILY_SPMV, dt,
                                                  &why) != RCL_SUPPORT_NONE)
      return 1;
  }
  rcl_split_matrix *M = NULL;
  rt_fails(rcl_split_matrix_create(&M, c->s, A), RCL_ERR_UNSUPPORTED, "no device left");
  ck_assert_ptr_null(M);
  rt_note("skip %s on %s, weights %g:%g: no device given work supports it (the refusal is checked)", rcl_dtype_name(dt),
          c->name, c->w[0], c->w[1]);
  return 0;
}

/* ---- matrices ---------------------------------------------------------------------------------------- */

/* Trap rows: each row i holds 1, B, 1, -B, 1 (B = 2^53 or 2^24) at columns spread over the whole matrix
 * (descending, with a repeat), so with x = 1 the ordered sum is 1 and any other order gives 0, 2 or 3. */
static rcl_csr *trap_matrix(rcl_dtype dt, size_t n) {
  rcl_csr *A;
  rt_ok(rcl_csr_alloc(&A, dt, n, n, 5 * n));
  double big = dt == RCL_F32 ? 16777216.0 : 9007199254740992.0, v[5] = {1, big, 1, -big, 1};
  for (size_t i = 0; i < n; i++) {
    size_t c[5] = {(i * 7 + 13) % n, (i * 3) % n, (i * 7 + 13) % n, n - 1 - i, (i + n / 2) % n};
    A->row_ptr[i + 1] = 5 * (i + 1);
    for (int k = 0; k < 5; k++) {
      A->col_idx[5 * i + k] = (uint32_t)c[k];
      if (dt == RCL_F32)
        ((float *)A->values)[5 * i + k] = (float)v[k];
      else
        ((double *)A->values)[5 * i + k] = v[k];
    }
  }
  rt_ok(rcl_csr_validate(A));
  return A;
}

/* Every third row empty: a random matrix with those rows dropped. */
static rcl_csr *empty_rows_matrix(rcl_dtype dt) {
  rcl_csr *R, *A;
  rt_ok(rcl_csr_random(&R, dt, 90, 120, 6, 7));
  size_t es = rcl_dtype_size(dt), nnz = 0;
  rt_ok(rcl_csr_alloc(&A, dt, 90, 120, R->nnz));
  for (size_t i = 0; i < 90; i++) {
    if (i % 3 != 1)
      for (uint64_t k = R->row_ptr[i]; k < R->row_ptr[i + 1]; k++, nnz++) {
        A->col_idx[nnz] = R->col_idx[k];
        memcpy((unsigned char *)A->values + nnz * es, (unsigned char *)R->values + k * es, es);
      }
    A->row_ptr[i + 1] = nnz;
  }
  A->nnz = nnz;
  rcl_csr_free(R);
  return A;
}

#define NMATRICES 8
static const char *const spmv_names[NMATRICES] = {"poisson2d:23",          "poisson3d:7",       "random:300:9:3",
                                                  "powerlaw:200:3:5",      "trap:301",          "one row (poisson2d:1)",
                                                  "every third row empty", "random:150x333:7:2"};

static rcl_csr *spmv_matrix(size_t m, rcl_dtype dt) {
  static const char *const spec[NMATRICES] = {
      "poisson2d:23", "poisson3d:7", "random:300:9:3",    "powerlaw:200:3:5", NULL,
      "poisson2d:1",  NULL,          "random:150x333:7:2"};
  rcl_csr *A = NULL;
  if (m == 4) return trap_matrix(dt, 301);
  if (m == 6) return empty_rows_matrix(dt);
  rt_ok(rcl_csr_generate(&A, dt, spec[m]));
  return A;
}

static void *vec(rcl_dtype dt, size_t n, const char *kind, uint64_t seed) {
  void *p = malloc((n ? n : 1) * rcl_dtype_size(dt));
  rt_fill(p, dt, n, kind, seed);
  return p;
}

static void set_real(void *p, rcl_dtype dt, double v) {
  if (dt == RCL_F32)
    *(float *)p = (float)v;
  else
    *(double *)p = v;
}

static void *ones(rcl_dtype dt, size_t n) {
  unsigned char *p = malloc((n ? n : 1) * rcl_dtype_size(dt));
  for (size_t i = 0; i < n; i++) set_real(p + i * rcl_dtype_size(dt), dt, 1);
  return p;
}

/* ---- the local row blocks (host) ------------------------------------------------------------------------- */

/* Each block's rows times the gathered compressed x equal the matrix's rows times x, bit for bit; the halos are
 * sorted, unique, outside the owned columns and exactly the columns referenced there. */
START_TEST(local_blocks_keep_every_row) {
  for (size_t d = 0; d < 2; d++)
    for (size_t m = 0; m < NMATRICES; m++) {
      rcl_dtype dt = dtypes[d];
      rcl_csr *A = spmv_matrix(m, dt);
      size_t es = rcl_dtype_size(dt), n = A->nrows;
      void *x = m == 4 ? ones(dt, A->ncols) : vec(dt, A->ncols, "special", 3 + m), *y = vec(dt, n, "uniform", 1);
      void *yl = vec(dt, n, "uniform", 1);
      double one = 1, zero = 0;
      float one32 = 1, zero32 = 0;
      const void *a1 = dt == RCL_F32 ? (void *)&one32 : &one, *b0 = dt == RCL_F32 ? (void *)&zero32 : &zero;
      rt_ok(rcl_ref_spmv(y, A, RCL_SPMV_ORDERED, a1, x, b0));
      size_t cuts[][2] = {{0, n}, {0, n / 3}, {n / 3, n}, {n / 2, n / 2}, {n > 5 ? 5 : 0, n > 5 ? n - 5 : n}};
      for (size_t c = 0; c < 5; c++) {
        size_t r0 = cuts[c][0], r1 = cuts[c][1], c0 = r0 < A->ncols ? r0 : A->ncols, c1 = r1 < A->ncols ? r1 : A->ncols;
        rcl_csr_local L;
        rt_ok(rcl__csr_local(&L, A, r0, r1, c0, c1));
        ck_assert_uint_eq(L.A->nrows, r1 - r0);
        ck_assert_uint_eq(L.A->ncols, L.nbefore + (c1 - c0) + L.nafter);
        for (size_t k = 0; k < L.nbefore + L.nafter; k++) {
          ck_assert(k < L.nbefore ? L.halo[k] < c0 : L.halo[k] >= c1);
          if (k > 0 && k != L.nbefore) ck_assert(L.halo[k - 1] < L.halo[k]);
        }
        void *xe = malloc((L.A->ncols ? L.A->ncols : 1) * es);
        rcl__csr_local_gather(xe, &L, x);
        rt_ok(rcl_ref_spmv((unsigned char *)yl + r0 * es, L.A, RCL_SPMV_ORDERED, a1, xe, b0));
        rt_assert_bits_eq((unsigned char *)yl + r0 * es, (unsigned char *)y + r0 * es, r1 - r0, dt,
                          "%s %s rows [%zu, %zu)", spmv_names[m], rcl_dtype_name(dt), r0, r1);
        free(xe);
        rcl__csr_local_free(&L);
      }
      rcl_csr_local L;
      rt_fails(rcl__csr_local(&L, A, 1, 0, 0, 0), RCL_ERR_INVALID_ARG, "rows [1, 0)");
      rt_fails(rcl__csr_local(&L, A, 0, 0, 0, A->ncols + 1), RCL_ERR_INVALID_ARG, "owned columns");
      free(x), free(y), free(yl);
      rcl_csr_free(A);
    }
}
END_TEST

/* The row cut: shares of rows + non-zeros follow the weights, inner bounds on the granule, weight 0 empty. */
START_TEST(row_bounds_follow_weights) {
  rcl_csr *A;
  rt_ok(rcl_csr_generate(&A, RCL_F32, "powerlaw:40000:3:9"));
  double w[4] = {1, 3, 0, 2};
  size_t b[5];
  rt_ok(rcl__csr_row_bounds(b, A, w, 4, 2048));
  ck_assert_uint_eq(b[0], 0);
  ck_assert_uint_eq(b[4], A->nrows);
  ck_assert_uint_eq(b[2], b[3]);
  double cost = (double)(A->nnz + A->nrows), acc = 0;
  for (size_t i = 0; i < 4; i++) {
    if (i > 0) ck_assert_uint_eq(b[i] % 2048, 0);
    double share = (double)(A->row_ptr[b[i + 1]] + b[i + 1] - A->row_ptr[b[i]] - b[i]) / cost;
    ck_assert_msg(fabs(share - w[i] / 6) < 0.08, "part %zu: %.3f of the cost for weight %g/6", i, share, w[i]);
    acc += share;
  }
  ck_assert(fabs(acc - 1) < 1e-12);
  double z[2] = {0, 0}, neg[2] = {1, -1};
  rt_fails(rcl__csr_row_bounds(b, A, z, 2, 1), RCL_ERR_INVALID_ARG, "every weight is 0");
  rt_fails(rcl__csr_row_bounds(b, A, neg, 2, 1), RCL_ERR_INVALID_ARG, "weight 1 is -1");
  rcl_csr_free(A);
}
END_TEST

/* ---- SpMV ------------------------------------------------------------------------------------------------ */

/* alpha, beta and y's contents: 1,0 ; -1.5,+0 with NaN in y ; 2,-0 with NaN in y ; 0.5,3 */
static void ab_case(size_t k, rcl_dtype dt, void *alpha, void *beta, const char **ykind) {
  static const double al[4] = {1, -1.5, 2, 0.5}, be[4] = {0, 0, -0.0, 3};
  set_real(alpha, dt, al[k]);
  set_real(beta, dt, be[k]);
  *ykind = k == 1 || k == 2 ? "nan" : "uniform";
}

static void *y_init(rcl_dtype dt, size_t n, const char *kind, uint64_t seed) {
  if (strcmp(kind, "nan")) return vec(dt, n, kind, seed);
  unsigned char *y = malloc((n ? n : 1) * rcl_dtype_size(dt));
  for (size_t i = 0; i < n; i++) set_real(y + i * rcl_dtype_size(dt), dt, NAN);
  return y;
}

static void check_shares(cfg *c, const rcl_csr *A, const char *what) {
  size_t next = 0;
  for (size_t i = 0; i < c->count; i++) {
    size_t first, count;
    const char *note;
    rt_ok(rcl_split_share(&first, &count, &note, c->s, i));
    if (count) ck_assert_msg(first == next, "%s: device %zu starts at row %zu, not %zu", what, i, first, next);
    next += count;
  }
  ck_assert_msg(next == A->nrows, "%s: the shares cover %zu of %zu rows", what, next, A->nrows);
}

static void spmv_one(cfg *c, rcl_split_matrix *M, const rcl_csr *A, const void *x, const char *what) {
  rcl_dtype dt = A->dtype;
  size_t n = A->nrows;
  for (int ct = 0; ct < 2; ct++)
    for (size_t k = 0; k < 4; k++) {
      double alpha[1], beta[1];
      const char *ykind;
      ab_case(k, dt, alpha, beta, &ykind);
      void *yr = y_init(dt, n, ykind, 9 + k), *yd = y_init(dt, n, ykind, 9 + k);
      rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
      o.contract = ct ? RCL_SPMV_EXACT : RCL_SPMV_ORDERED;
      rt_ok(rcl_ref_spmv(yr, A, o.contract, alpha, x, beta));
      rt_ok(rcl_split_spmv(yd, M, alpha, x, beta, &o));
      rt_assert_bits_eq(yd, yr, n, dt, "SpMV %s %s, alpha/beta case %zu, on %s", rcl_spmv_contract_name(o.contract),
                        rcl_dtype_name(dt), k, what);
      check_shares(c, A, what);
      free(yr), free(yd);
    }
}

START_TEST(split_spmv_matches_reference) {
  cfg c;
  if (!cfg_open(&c, (size_t)_i)) return;
  for (size_t d = 0; d < 2; d++)
    for (size_t m = 0; m < NMATRICES; m++) {
      rcl_dtype dt = dtypes[d];
      rcl_csr *A = spmv_matrix(m, dt);
      void *x = m == 4 ? ones(dt, A->ncols) : vec(dt, A->ncols, "special", 30 + m);
      for (size_t set = 0; set < NWEIGHTS; set++) {
        char what[512], full[640];
        if (!cfg_weights(&c, set, 77 + m, what, sizeof what)) continue;
        if (!cfg_can(&c, dt, A)) continue;
        snprintf(full, sizeof full, "%s (%s)", spmv_names[m], what);
        rcl_split_matrix *M;
        rt_ok(rcl_split_matrix_create(&M, c.s, A));
        spmv_one(&c, M, A, x, full);
        rcl_split_matrix_free(M);
      }
      free(x);
      rcl_csr_free(A);
    }
  rcl_split_free(c.s);
}
END_TEST

/* ---- CG -------------------------------------------------------------------------------------------------- */

/* The 2D Poisson matrix with diagonal 4 + (i mod 5) * 3: strictly diagonally dominant, so SPD, and its
 * varying diagonal makes Jacobi change the iteration. Every value is a small integer: exact in both dtypes. */
static rcl_csr *shifted_poisson(rcl_dtype dt, size_t n) {
  rcl_csr *A;
  rt_ok(rcl_csr_poisson2d(&A, dt, n));
  for (size_t i = 0; i < A->nrows; i++)
    for (uint64_t k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++)
      if (A->col_idx[k] == i)
        set_real((unsigned char *)A->values + k * rcl_dtype_size(dt), dt, 4.0 + 3.0 * (double)(i % 5));
  return A;
}

static void negate(rcl_csr *A) {
  for (size_t k = 0; k < A->nnz; k++)
    if (A->dtype == RCL_F32)
      ((float *)A->values)[k] = -((float *)A->values)[k];
    else
      ((double *)A->values)[k] = -((double *)A->values)[k];
}

/* Split CG against the reference: status, message, iterations, history and solution. */
static void cg_compare(rcl_split_matrix *M, const rcl_csr *A, const void *b, const rcl_cg_options *o, const char *what,
                       int expect) {
  rcl_dtype dt = A->dtype;
  size_t n = A->nrows;
  char msg1[512];
  rcl_cg_result rr, rd;
  void *xr = calloc(n + 1, rcl_dtype_size(dt)), *xd = calloc(n + 1, rcl_dtype_size(dt));
  int rc1 = rcl_ref_cg(xr, &rr, A, b, o);
  snprintf(msg1, sizeof msg1, "%s", rcl_error_last());
  ck_assert_msg(rc1 == expect, "%s: the reference returned %s (%s)", what, rcl_status_name(rc1), msg1);
  int rc2 = rcl_split_cg(xd, &rd, M, b, o);
  ck_assert_msg(rc2 == rc1, "%s: returned %s (%s), the reference %s", what, rcl_status_name(rc2), rcl_error_last(),
                rcl_status_name(rc1));
  if (rc1) ck_assert_str_eq(rcl_error_last(), msg1);
  ck_assert_str_eq(rd.message, rr.message);
  ck_assert_msg(rd.iterations == rr.iterations, "%s: %zu iterations, the reference %zu", what, rd.iterations,
                rr.iterations);
  ck_assert_uint_eq(rd.history_len, rr.history_len);
  rt_assert_bits_eq(rd.history, rr.history, rr.history_len, dt, "%s: residual history", what);
  ck_assert_str_eq(rd.history_sha256, rr.history_sha256);
  rt_assert_bits_eq(xd, xr, n, dt, "%s: solution", what);
  ck_assert_int_eq(rd.converged, rr.converged);
  rcl_cg_result_free(&rr);
  rcl_cg_result_free(&rd);
  free(xr), free(xd);
}

static rcl_csr *cg_matrix(size_t m, rcl_dtype dt) {
  rcl_csr *A = NULL;
  if (m == 0) rt_ok(rcl_csr_generate(&A, dt, "poisson2d:16"));
  if (m == 1) A = shifted_poisson(dt, 9);
  if (m == 2) rt_ok(rcl_csr_generate(&A, dt, "poisson3d:5"));
  if (m == 3) rt_ok(rcl_csr_generate(&A, dt, "poisson2d:1"));
  return A;
}

static void cg_options(rcl_cg_options *o, rcl_dtype dt, int combo) {
  *o = (rcl_cg_options)RCL_CG_OPTIONS_INIT;
  o->tol = dt == RCL_F32 ? 1e-5 : 1e-10;
  o->jacobi = combo & 1;
  o->dot_mode = combo & 2 ? RCL_REDUCE_EXACT : RCL_REDUCE_ORDERED;
  o->spmv.contract = combo & 4 ? RCL_SPMV_EXACT : RCL_SPMV_ORDERED;
}

START_TEST(split_cg_matches_reference) {
  cfg c;
  if (!cfg_open(&c, (size_t)_i)) return;
  for (size_t d = 0; d < 2; d++)
    for (size_t m = 0; m < 4; m++) {
      rcl_dtype dt = dtypes[d];
      rcl_csr *A = cg_matrix(m, dt);
      void *b = vec(dt, A->nrows, "uniform", 50 + m);
      for (size_t set = 0; set < NWEIGHTS; set++) {
        char what[512], full[700];
        if (!cfg_weights(&c, set, 91 + m, what, sizeof what)) continue;
        if (!cfg_can(&c, dt, A)) continue;
        rcl_split_matrix *M;
        rt_ok(rcl_split_matrix_create(&M, c.s, A));
        /* all eight combinations at 1:1 and alone, two elsewhere */
        for (int combo = 0; combo < 8; combo++) {
          if (set != 2 && c.count > 1 && combo != (int)(set % 4) && combo != 7 - (int)(set % 4)) continue;
          rcl_cg_options o;
          cg_options(&o, dt, combo);
          snprintf(full, sizeof full, "CG matrix %zu %s jacobi=%d dots=%s spmv=%s on %s", m, rcl_dtype_name(dt),
                   o.jacobi, rcl_reduce_mode_name(o.dot_mode), rcl_spmv_contract_name(o.spmv.contract), what);
          cg_compare(M, A, b, &o, full, 0);
        }
        rcl_split_matrix_free(M);
      }
      free(b);
      rcl_csr_free(A);
    }
  rcl_split_free(c.s);
}
END_TEST

/* Stops: no convergence, breakdown of p'Ap (a negative definite matrix), of the Jacobi diagonal, of a NaN
 * norm (NaN in b), and the empty system: the same status, message, history and x as the reference. */
START_TEST(split_cg_stops_as_reference) {
  cfg c;
  if (!cfg_open(&c, (size_t)_i)) return;
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    rcl_csr *A, *N, *E;
    rt_ok(rcl_csr_generate(&A, dt, "poisson2d:12"));
    rt_ok(rcl_csr_generate(&N, dt, "poisson2d:12"));
    negate(N);
    rt_ok(rcl_csr_alloc(&E, dt, 0, 0, 0));
    void *b = vec(dt, A->nrows, "uniform", 61), *bn = vec(dt, A->nrows, "uniform", 61);
    set_real((unsigned char *)bn + 77 * rcl_dtype_size(dt), dt, NAN);
    char what[512], full[700];
    if (!cfg_weights(&c, c.count == 1 ? 0 : 3, 5, what, sizeof what) || !cfg_can(&c, dt, A)) goto next;
    rcl_split_matrix *MA, *MN, *ME;
    rt_ok(rcl_split_matrix_create(&MA, c.s, A));
    rt_ok(rcl_split_matrix_create(&MN, c.s, N));
    rt_ok(rcl_split_matrix_create(&ME, c.s, E));
    for (int combo = 0; combo < 8; combo += 3) {
      rcl_cg_options o;
      cg_options(&o, dt, combo);
      o.max_iterations = 4;
      snprintf(full, sizeof full, "CG max 4 iterations, combo %d, %s on %s", combo, rcl_dtype_name(dt), what);
      cg_compare(MA, A, b, &o, full, RCL_ERR_NO_CONVERGENCE);
      o.max_iterations = 1000;
      snprintf(full, sizeof full, "CG -poisson, combo %d, %s on %s", combo, rcl_dtype_name(dt), what);
      cg_compare(MN, N, b, &o, full, RCL_ERR_BREAKDOWN);
      snprintf(full, sizeof full, "CG NaN in b, combo %d, %s on %s", combo, rcl_dtype_name(dt), what);
      cg_compare(MA, A, bn, &o, full, RCL_ERR_BREAKDOWN);
      snprintf(full, sizeof full, "CG empty system, combo %d, %s on %s", combo, rcl_dtype_name(dt), what);
      cg_compare(ME, E, b, &o, full, 0);
    }
    rcl_split_matrix_free(MA), rcl_split_matrix_free(MN), rcl_split_matrix_free(ME);
  next:
    free(b), free(bn);
    rcl_csr_free(A), rcl_csr_free(N), rcl_csr_free(E);
  }
  rcl_split_free(c.s);
}
END_TEST

/* A matrix large enough for block-aligned cuts (multiples of 2048 rows) and cuts by non-zeros: the shares,
 * and a few CG iterations and a SpMV equal to the reference. */
START_TEST(split_large_cuts_on_blocks) {
  cfg c;
  if (!cfg_open(&c, (size_t)_i)) return;
  rcl_dtype dt = RCL_F32;
  rcl_csr *A;
  rt_ok(rcl_csr_generate(&A, dt, "poisson2d:200"));
  void *b = vec(dt, A->nrows, "uniform", 71);
  char what[512];
  if (!cfg_weights(&c, c.count == 1 ? 0 : 3, 1, what, sizeof what)) goto done;
  rcl_split_matrix *M;
  rt_ok(rcl_split_matrix_create(&M, c.s, A));
  for (size_t i = 0; i < c.count; i++) {
    size_t first, count;
    rt_ok(rcl_split_share(&first, &count, NULL, c.s, i));
    if (first && first < A->nrows) ck_assert_msg(first % 2048 == 0, "%s: device %zu starts at %zu", what, i, first);
  }
  for (int combo = 0; combo < 8; combo += 7) {
    rcl_cg_options o;
    cg_options(&o, dt, combo);
    o.max_iterations = 6;
    cg_compare(M, A, b, &o, what, RCL_ERR_NO_CONVERGENCE);
  }
  spmv_one(&c, M, A, b, what);
  rcl_split_matrix_free(M);
done:
  free(b);
  rcl_csr_free(A);
  rcl_split_free(c.s);
}
END_TEST

/* ---- devices that cannot run a dtype ----------------------------------------------------------------------- */

/* A device without fp64 in a pair: left out (its share empty, a note saying why) with the same bits, or with
 * strict a clear refusal naming it. */
START_TEST(split_leaves_out_or_refuses_fp64) {
  size_t n = rt_ndevices(), without = n, with = n;
  for (size_t i = 0; i < n; i++) {
    const char *why;
    int ok =
        rcl_device_profile_support(rcl_context_profile(rt_ctx(i)), RCL_FAMILY_SPMV, RCL_F64, &why) != RCL_SUPPORT_NONE;
    if (ok && with == n) with = i;
    if (!ok && without == n) without = i;
  }
  if (without == n || with == n) {
    rt_note("skip: needs one device with fp64 and one without (Rusticl has none)");
    return;
  }
  rcl_context *ctx[2] = {rt_ctx(without), rt_ctx(with)};
  rcl_split *s;
  rt_ok(rcl_split_wrap(&s, ctx, 2, NULL));
  double w[2] = {3, 1};
  rt_ok(rcl_split_set_weights(s, w, 2));
  rcl_csr *A;
  rt_ok(rcl_csr_generate(&A, RCL_F64, "poisson2d:10"));
  rcl_split_matrix *M;
  rt_ok(rcl_split_matrix_create(&M, s, A));
  size_t first, count;
  const char *note;
  rt_ok(rcl_split_share(&first, &count, &note, s, 0));
  ck_assert_uint_eq(count, 0);
  ck_assert_msg(note && *note, "no note says why %s was left out", rt_device_name(without));
  void *b = vec(RCL_F64, A->nrows, "uniform", 3);
  rcl_cg_options o;
  cg_options(&o, RCL_F64, 3);
  cg_compare(M, A, b, &o, "f64 CG with a device left out", 0);
  rcl_split_matrix_free(M);
  rcl_split_free(s);
  rcl_split_options so = RCL_SPLIT_OPTIONS_INIT;
  so.strict = 1;
  rt_ok(rcl_split_wrap(&s, ctx, 2, &so));
  rt_fails(rcl_split_matrix_create(&M, s, A), RCL_ERR_UNSUPPORTED, rt_device_name(without));
  rcl_split_free(s);
  free(b);
  rcl_csr_free(A);
}
END_TEST

/* ---- arguments --------------------------------------------------------------------------------------------- */

START_TEST(split_sparse_arguments) {
  rcl_context *ctx = rt_ctx(0);
  rcl_split *s;
  rt_ok(rcl_split_wrap(&s, &ctx, 1, NULL));
  rcl_csr *A, *R;
  rt_ok(rcl_csr_generate(&A, RCL_F32, "poisson2d:4"));
  rt_ok(rcl_csr_generate(&R, RCL_F32, "random:4x5:2"));
  rcl_split_matrix *M = NULL, *MR = NULL;
  rt_fails(rcl_split_matrix_create(NULL, s, A), RCL_ERR_INVALID_ARG, "NULL output");
  rt_fails(rcl_split_matrix_create(&M, NULL, A), RCL_ERR_INVALID_ARG, "NULL split");
  rt_fails(rcl_split_matrix_create(&M, s, NULL), RCL_ERR_INVALID_ARG, "NULL matrix");
  rt_ok(rcl_split_matrix_create(&M, s, A));
  rt_ok(rcl_split_matrix_create(&MR, s, R));
  float one = 1, x[16] = {0}, y[16];
  rcl_spmv_options so = RCL_SPMV_OPTIONS_INIT;
  so.version = 99;
  rt_fails(rcl_split_spmv(y, NULL, &one, x, &one, NULL), RCL_ERR_INVALID_ARG, "NULL matrix");
  rt_fails(rcl_split_spmv(NULL, M, &one, x, &one, NULL), RCL_ERR_INVALID_ARG, "NULL x or y");
  rt_fails(rcl_split_spmv(y, M, NULL, x, &one, NULL), RCL_ERR_INVALID_ARG, "NULL alpha");
  rt_fails(rcl_split_spmv(y, M, &one, x, &one, &so), RCL_ERR_INVALID_ARG, "version is 99");
  rcl_cg_result r;
  rcl_cg_options co = RCL_CG_OPTIONS_INIT;
  rt_fails(rcl_split_cg(x, &r, MR, y, NULL), RCL_ERR_INVALID_ARG, "4 x 5");
  rt_fails(rcl_split_cg(NULL, &r, M, y, NULL), RCL_ERR_INVALID_ARG, "NULL x or b");
  rt_fails(rcl_split_cg(x, &r, NULL, y, NULL), RCL_ERR_INVALID_ARG, "NULL matrix");
  co.tol = -1;
  rt_fails(rcl_split_cg(x, &r, M, y, &co), RCL_ERR_INVALID_ARG, "tol");
  rcl_split_matrix_free(M);
  rcl_split_matrix_free(MR);
  rcl_split_matrix_free(NULL);
  rcl_split_free(s);
  rcl_csr_free(A);
  rcl_csr_free(R);
}
END_TEST

/* A test case named after fn that runs it once per split configuration (CK_RUN_CASE=<fn> runs just it). */
#define ADD_CONFIG_CASE(suite, fn)                                                                                     \
  do {                                                                                                                 \
    TCase *tc_ = tcase_create(#fn);                                                                                    \
    if (rt_ndevices()) tcase_add_loop_test(tc_, fn, 0, (int)nconfigs());                                               \
    suite_add_tcase(suite, tc_);                                                                                       \
  } while (0)

int main(void) {
  Suite *s = suite_create("split_sparse");
  TCase *host = tcase_create("host");
  tcase_add_test(host, local_blocks_keep_every_row);
  tcase_add_test(host, row_bounds_follow_weights);
  suite_add_tcase(s, host);
  rt_add_device_presence(s);
  ADD_CONFIG_CASE(s, split_spmv_matches_reference);
  ADD_CONFIG_CASE(s, split_cg_matches_reference);
  ADD_CONFIG_CASE(s, split_cg_stops_as_reference);
  ADD_CONFIG_CASE(s, split_large_cuts_on_blocks);
  TCase *once = tcase_create("once");
  if (rt_ndevices()) {
    tcase_add_test(once, split_leaves_out_or_refuses_fp64);
    tcase_add_test(once, split_sparse_arguments);
  }
  suite_add_tcase(s, once);
  return rt_run(s);
}
