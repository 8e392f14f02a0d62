/* SpMV on every device: bitwise against the host reference for every variant x contract x dtype, on
 * matrices with empty rows, unsorted and repeated columns, special values, one very long row (> 100k
 * entries), 1x1 and 0-row shapes and real matrices; launch options swept; the exact contract against
 * MPFR; golden digests; beta = 0 semantics; enqueue offsets and events; argument errors. */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "pkgdata.h"
#include "testlib.h"

#define PKG_R "/usr/lib/R/library/Matrix/external/"
#define PKG_SUPERLU "/usr/share/doc/libsuperlu-dev/examples/"
#define DATA REPROCL_SOURCE_DIR "/tests/data/matrices/"

static const rcl_dtype dtypes[] = {RCL_F32, RCL_F64};
static const rcl_spmv_contract contracts[] = {RCL_SPMV_ORDERED, RCL_SPMV_EXACT};
static const rcl_spmv_variant variants[] = {RCL_SPMV_SCALAR, RCL_SPMV_VECTOR, RCL_SPMV_ADAPTIVE, RCL_SPMV_SELL,
                                            RCL_SPMV_TASK};
#define NVARIANTS (sizeof variants / sizeof variants[0])

static void *gen(rcl_dtype dt, size_t n, const char *kind, uint64_t seed) {
  void *p = malloc((n ? n : 1) * rcl_dtype_size(dt));
  ck_assert_ptr_nonnull(p);
  rt_fill(p, dt, n, kind, seed);
  return p;
}

/* Rows of many lengths (some empty), columns unsorted and repeated (a valid CSR given through the API:
 * the ordered contract follows the stored order), values with NaN, inf, zeros and subnormals. */
static rcl_csr *edge_matrix(rcl_dtype dt) {
  size_t nrows = 40, ncols = 30;
  uint64_t rp[41];
  rp[0] = 0;
  for (size_t i = 0; i < nrows; i++) rp[i + 1] = rp[i] + ((i == 5 || i == 17) ? 0 : (i * 7) % 23);
  size_t nnz = rp[nrows];
  uint32_t *ci = malloc(nnz * 4);
  rt_rng r = {99};
  for (size_t k = 0; k < nnz; k++) ci[k] = (uint32_t)(rt_next(&r) % ncols);
  void *v = gen(dt, nnz, "special", 12);
  rcl_csr *A;
  rt_ok(rcl_csr_create(&A, dt, nrows, ncols, nnz, rp, ci, v));
  free(ci);
  free(v);
  return A;
}

/* Six rows, the third with LONG entries (one per column): longer than any loop limit allows one
 * work-item in one launch, so every variant must carry the row over launches or segments. */
#define LONG 150001u
static rcl_csr *long_row_matrix(rcl_dtype dt) {
  size_t nrows = 6, ncols = LONG, nnz = LONG + 4 * 3;
  uint64_t rp[7] = {0, 3, 6, 6 + LONG, 9 + LONG, 9 + LONG, 12 + LONG};
  uint32_t *ci = malloc(nnz * 4);
  size_t k = 0;
  for (size_t i = 0; i < nrows; i++) {
    if (i == 2) {
      for (uint32_t c = 0; c < LONG; c++) ci[k++] = c;
    } else if (i != 4) {
      ci[k++] = 0;
      ci[k++] = 5;
      ci[k++] = 7;
    }
  }
  ck_assert_uint_eq(k, nnz);
  void *v = gen(dt, nnz, "cancel", 21);
  rcl_csr *A;
  rt_ok(rcl_csr_create(&A, dt, nrows, ncols, nnz, rp, ci, v));
  free(ci);
  free(v);
  return A;
}

static rcl_csr *shape_matrix(rcl_dtype dt, size_t nrows, size_t ncols, int one_entry) {
  uint64_t rp[8] = {0};
  uint32_t ci[1] = {0};
  double v64[1] = {-0.75};
  float v32[1] = {-0.75f};
  if (one_entry) rp[1] = 1;
  rcl_csr *A;
  rt_ok(rcl_csr_create(&A, dt, nrows, ncols, one_entry ? 1 : 0, rp, ci, dt == RCL_F32 ? (void *)v32 : (void *)v64));
  return A;
}

/* The test matrices: name and constructor. Real files from packages may be absent (NULL, noted). */
enum { M_EDGE, M_POWER, M_1X1, M_0X0, M_0X5, M_5X0, M_EMPTY4, M_PORES, M_G20, M_UTM300, M_LUND, NMAT };
static const char *const mat_names[NMAT] = {
    "edge", "powerlaw:1500x1500:2:3", "1x1", "0x0", "0x5", "5x0", "4x4-empty", "pores_1", "g20", "utm300", "lund_a"};

static rcl_csr *make_matrix(int m, rcl_dtype dt) {
  rcl_csr *A = NULL;
  const char *path = NULL;
  switch (m) {
  case M_EDGE:
    return edge_matrix(dt);
  case M_POWER:
    rt_ok(rcl_csr_generate(&A, dt, "powerlaw:1500x1500:2:3"));
    rt_fill(A->values, dt, A->nnz, "cancel", 31); /* ill-conditioned rows: ordered and exact differ */
    return A;
  case M_1X1:
    return shape_matrix(dt, 1, 1, 1);
  case M_0X0:
    return shape_matrix(dt, 0, 0, 0);
  case M_0X5:
    return shape_matrix(dt, 0, 5, 0);
  case M_5X0:
    return shape_matrix(dt, 5, 0, 0);
  case M_EMPTY4:
    return shape_matrix(dt, 4, 4, 0);
  case M_PORES:
    path = DATA "pores_1.mtx";
    break;
  case M_G20:
    path = PKG_SUPERLU "g20.rua";
    break;
  case M_UTM300:
    path = PKG_R "utm300.rua";
    break;
  case M_LUND:
    path = PKG_R "lund_a.mtx";
    break;
  }
  const char *found = pkg_file(path);
  if (!found) {
    rt_note("skip %s: %s is absent (install r-cran-matrix and libsuperlu-doc; CI does)", mat_names[m], path);
    return NULL;
  }
  rt_ok(rcl_matrix_read(&A, found, dt));
  return A;
}

static void scalars(rcl_dtype dt, double a, double b, unsigned char *alpha, unsigned char *beta) {
  if (dt == RCL_F32) {
    float fa = (float)a, fb = (float)b;
    memcpy(alpha, &fa, 4);
    memcpy(beta, &fb, 4);
  } else {
    memcpy(alpha, &a, 8);
    memcpy(beta, &b, 8);
  }
}

/* Runs one configuration on the device and the reference; returns 0, or the status of a refused option. */
static int check_one(rcl_spmv_matrix *M, const rcl_csr *A, const rcl_spmv_options *o, const void *x, const void *y0,
                     double a, double b, const char *what, size_t dev, int allow_refusal) {
  rcl_dtype dt = A->dtype;
  size_t es = rcl_dtype_size(dt), n = A->nrows;
  unsigned char alpha[8], beta[8];
  scalars(dt, a, b, alpha, beta);
  void *want = malloc((n ? n : 1) * es), *got = malloc((n ? n : 1) * es);
  memcpy(want, y0, n * es);
  memcpy(got, y0, n * es);
  rt_ok(rcl_ref_spmv(want, A, o->contract, alpha, x, beta));
  int rc = rcl_spmv_host(got, M, alpha, x, beta, o);
  if (rc && allow_refusal && rc == RCL_ERR_INVALID_ARG) {
    free(want);
    free(got);
    return rc;
  }
  ck_assert_msg(rc == 0, "%s on %s: %s", what, rt_device_name(dev), rcl_error_last());
  rt_assert_bits_eq(got, want, n, dt, "%s (%s %s, alpha %g beta %g) on %s", what, rcl_dtype_name(dt),
                    rcl_spmv_contract_name(o->contract), a, b, rt_device_name(dev));
  free(want);
  free(got);
  return 0;
}

/* Every variant x contract x dtype x matrix, default launch, against the reference. */
START_TEST(variants_match_reference) {
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_SPMV, dt)) {
      rcl_csr *A = make_matrix(M_1X1, dt);
      rcl_spmv_matrix *M = NULL;
      rt_fails(rcl_spmv_matrix_create(&M, rt_ctx(_i), A), RCL_ERR_UNSUPPORTED, "fp64");
      ck_assert_ptr_null(M);
      rcl_csr_free(A);
      continue;
    }
    for (int m = 0; m < NMAT; m++) {
      rcl_csr *A = make_matrix(m, dt);
      if (!A) continue;
      rcl_spmv_matrix *M;
      rt_ok(rcl_spmv_matrix_create(&M, rt_ctx(_i), A));
      void *x = gen(dt, A->ncols, m == M_EDGE ? "special" : "uniform", 7);
      void *y0 = gen(dt, A->nrows, "uniform", 8);
      for (size_t c = 0; c < 2; c++)
        for (size_t v = 0; v < NVARIANTS; v++) {
          rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
          o.contract = contracts[c];
          o.variant = variants[v];
          char what[128];
          snprintf(what, sizeof what, "%s %s", mat_names[m], rcl_spmv_variant_name(variants[v]));
          check_one(M, A, &o, x, y0, 1.5, -0.25, what, _i, 0);
          if (v == 0) check_one(M, A, &o, x, y0, 1.0, 0.0, what, _i, 0);
        }
      /* AUTO is a valid choice too */
      rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
      check_one(M, A, &o, x, y0, -1.0, 1.0, mat_names[m], _i, 0);
      free(x);
      free(y0);
      rcl_spmv_matrix_free(M);
      rcl_csr_free(A);
    }
  }
}
END_TEST

/* A single row of 150001 entries through every variant and contract, then with the long-row path forced
 * into small windows and segments: the partial sums carried between launches give the same bits. */
START_TEST(very_long_row) {
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_SPMV, dt)) continue;
    rcl_csr *A = long_row_matrix(dt);
    rcl_spmv_matrix *M;
    rt_ok(rcl_spmv_matrix_create(&M, rt_ctx(_i), A));
    void *x = gen(dt, A->ncols, "uniform", 3), *y0 = gen(dt, A->nrows, "uniform", 4);
    for (size_t c = 0; c < 2; c++) {
      for (size_t v = 0; v < NVARIANTS; v++) {
        rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
        o.contract = contracts[c];
        o.variant = variants[v];
        char what[128];
        snprintf(what, sizeof what, "row of %u entries, %s", LONG, rcl_spmv_variant_name(variants[v]));
        check_one(M, A, &o, x, y0, 1.5, -0.25, what, _i, 0);
      }
      static const size_t windows[] = {1000, 4097};
      for (size_t w = 0; w < 2; w++) {
        rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
        o.contract = contracts[c];
        o.variant = RCL_SPMV_SCALAR;
        o.long_row = 2;
        o.window = windows[w];
        char what[128];
        snprintf(what, sizeof what, "long-row path forced, window %zu", windows[w]);
        check_one(M, A, &o, x, y0, 1.5, -0.25, what, _i, 0);
      }
    }
    free(x);
    free(y0);
    rcl_spmv_matrix_free(M);
    rcl_csr_free(A);
  }
}
END_TEST

/* Launch shapes and tunables change nothing: every accepted configuration gives the reference bits. */
START_TEST(launch_invariance) {
  static const size_t locals[] = {0, 1, 16, 64};
  static const size_t long_rows[] = {0, 3, 40};
  static const size_t windows[] = {0, 1, 7};
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_SPMV, dt)) continue;
    rcl_csr *A;
    rt_ok(rcl_csr_generate(&A, dt, "powerlaw:300x400:2:9"));
    rt_fill(A->values, dt, A->nnz, "cancel", 5);
    rcl_spmv_matrix *M;
    rt_ok(rcl_spmv_matrix_create(&M, rt_ctx(_i), A));
    void *x = gen(dt, A->ncols, "wide", 6), *y0 = gen(dt, A->nrows, "uniform", 7);
    for (size_t c = 0; c < 2; c++) {
      size_t tried = 0, refused = 0;
      for (size_t v = 0; v < NVARIANTS; v++)
        for (size_t l = 0; l < 4; l++)
          for (size_t t = 0; t < 3; t++)
            for (size_t s = 0; s < 3; s++) {
              /* the variant's own tunable: lanes, block size, slice height or (scalar, task) the window */
              static const size_t lanes[] = {1, 4, 32}, blocks[] = {1, 4, 16}, slices[] = {1, 8, 64};
              rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
              o.contract = contracts[c];
              o.variant = variants[v];
              o.local_size = locals[l];
              o.long_row = long_rows[t];
              size_t W = locals[l] ? locals[l] : 16;
              if (variants[v] == RCL_SPMV_VECTOR)
                o.lanes = lanes[s];
              else if (variants[v] == RCL_SPMV_ADAPTIVE)
                o.block_nnz = blocks[s] * W;
              else if (variants[v] == RCL_SPMV_SELL)
                o.slice = slices[s];
              else
                o.window = windows[s];
              if (variants[v] == RCL_SPMV_ADAPTIVE && !locals[l]) o.block_nnz = 0;
              char what[160];
              snprintf(what, sizeof what, "%s local %zu long_row %zu lanes %zu block %zu slice %zu window %zu",
                       rcl_spmv_variant_name(o.variant), o.local_size, o.long_row, o.lanes, o.block_nnz, o.slice,
                       o.window);
              int rc = check_one(M, A, &o, x, y0, 0.5, 2.0, what, _i, 1);
              if (rc) { /* refused: only for a size beyond a kernel's limit, and said so */
                ck_assert_msg(strstr(rcl_error_last(), "exceeds") || strstr(rcl_error_last(), "local memory"),
                              "%s refused: %s", what, rcl_error_last());
                refused++;
              } else {
                tried++;
              }
            }
      ck_assert_msg(tried >= 100, "only %zu configurations ran on %s (%zu refused)", tried, rt_device_name(_i),
                    refused);
    }
    free(x);
    free(y0);
    rcl_spmv_matrix_free(M);
    rcl_csr_free(A);
  }
}
END_TEST

/* The exact contract equals MPFR's correctly rounded row sums (an oracle sharing no code with reprocl):
 * alpha = 1, beta = 0, so y_i is the row sum itself. A zero sum is +0 (the sum starts from +0). */
START_TEST(exact_equals_mpfr) {
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_SPMV, dt)) continue;
    size_t es = rcl_dtype_size(dt);
    for (int m = 0; m < 2; m++) {
      rcl_csr *A = make_matrix(m == 0 ? M_EDGE : M_POWER, dt);
      void *x = gen(dt, A->ncols, m == 0 ? "special" : "wide", 17);
      unsigned char alpha[8], beta[8];
      scalars(dt, 1.0, 0.0, alpha, beta);
      void *got = calloc(A->nrows, es), *want = calloc(A->nrows, es);
      size_t maxlen = 0;
      for (size_t i = 0; i < A->nrows; i++) {
        size_t len = (size_t)(A->row_ptr[i + 1] - A->row_ptr[i]);
        if (len > maxlen) maxlen = len;
      }
      unsigned char *rv = malloc((maxlen + 1) * es), *rx = malloc((maxlen + 1) * es);
      for (size_t i = 0; i < A->nrows; i++) {
        size_t k0 = (size_t)A->row_ptr[i], len = (size_t)(A->row_ptr[i + 1] - k0);
        /* the contract's sum starts from +0: a leading +0 * +0 term (an exact zero sum is then +0, while a
         * tiny negative sum still rounds to -0) */
        memset(rv, 0, es);
        memset(rx, 0, es);
        for (size_t j = 0; j < len; j++) {
          memcpy(rv + (j + 1) * es, (char *)A->values + (k0 + j) * es, es);
          memcpy(rx + (j + 1) * es, (char *)x + (size_t)A->col_idx[k0 + j] * es, es);
        }
        rt_mpfr_reduce((char *)want + i * es, RCL_OP_DOT, dt, len + 1, rv, rx);
      }
      for (size_t v = 0; v < NVARIANTS; v++) {
        rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
        o.contract = RCL_SPMV_EXACT;
        o.variant = variants[v];
        rcl_spmv_matrix *M;
        rt_ok(rcl_spmv_matrix_create(&M, rt_ctx(_i), A));
        rt_ok(rcl_spmv_host(got, M, alpha, x, beta, &o));
        rt_assert_bits_eq(got, want, A->nrows, dt, "exact %s %s vs MPFR on %s", mat_names[m == 0 ? M_EDGE : M_POWER],
                          rcl_spmv_variant_name(variants[v]), rt_device_name(_i));
        rcl_spmv_matrix_free(M);
      }
      /* The two contracts are different functions on these rows (otherwise the tests above prove less). */
      rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
      rt_ok(rcl_spmv(got, rt_ctx(_i), A, alpha, x, beta, &o));
      size_t differ = 0;
      for (size_t i = 0; i < A->nrows; i++) differ += memcmp((char *)got + i * es, (char *)want + i * es, es) != 0;
      if (m == 1) ck_assert_msg(differ > 10, "ordered and exact differ in only %zu rows", differ);
      free(got);
      free(want);
      free(rv);
      free(rx);
      free(x);
      rcl_csr_free(A);
    }
  }
}
END_TEST

/* beta = +-0: y is not read (NaN in y does not propagate); otherwise it is; NaN results are canonical. */
START_TEST(alpha_beta_rules) {
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_SPMV, dt)) continue;
    size_t es = rcl_dtype_size(dt);
    rcl_csr *A;
    rt_ok(rcl_csr_generate(&A, dt, "poisson2d:6"));
    void *x = gen(dt, A->ncols, "uniform", 1), *nan = malloc(A->nrows * es), *zero = calloc(A->nrows, es),
         *got = malloc(A->nrows * es), *want = malloc(A->nrows * es);
    for (size_t i = 0; i < A->nrows; i++) {
      if (dt == RCL_F32)
        ((uint32_t *)nan)[i] = 0xffc12345u; /* a NaN with a payload and the sign set */
      else
        ((uint64_t *)nan)[i] = 0xfff8000000abcdefu;
    }
    rcl_spmv_matrix *M;
    rt_ok(rcl_spmv_matrix_create(&M, rt_ctx(_i), A));
    for (size_t c = 0; c < 2; c++)
      for (int negzero = 0; negzero < 2; negzero++) {
        rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
        o.contract = contracts[c];
        unsigned char alpha[8], beta[8];
        scalars(dt, 2.0, negzero ? -0.0 : 0.0, alpha, beta);
        memcpy(got, nan, A->nrows * es);
        rt_ok(rcl_spmv_host(got, M, alpha, x, beta, &o));
        memcpy(want, zero, A->nrows * es);
        rt_ok(rcl_ref_spmv(want, A, o.contract, alpha, x, beta));
        rt_assert_bits_eq(got, want, A->nrows, dt, "beta = %s0 ignores NaN in y on %s", negzero ? "-" : "+",
                          rt_device_name(_i));
        for (size_t i = 0; i < A->nrows; i++) {
          double v = dt == RCL_F32 ? ((float *)got)[i] : ((double *)got)[i];
          ck_assert_msg(!isnan(v), "row %zu is NaN", i);
        }
        /* beta = 1: the NaN of y propagates, canonical */
        scalars(dt, 2.0, 1.0, alpha, beta);
        memcpy(got, nan, A->nrows * es);
        rt_ok(rcl_spmv_host(got, M, alpha, x, beta, &o));
        for (size_t i = 0; i < A->nrows; i++) {
          if (dt == RCL_F32)
            ck_assert_uint_eq(((uint32_t *)got)[i], 0x7fc00000u);
          else
            ck_assert_uint_eq(((uint64_t *)got)[i], 0x7ff8000000000000u);
        }
      }
    free(x);
    free(nan);
    free(zero);
    free(got);
    free(want);
    rcl_spmv_matrix_free(M);
    rcl_csr_free(A);
  }
}
END_TEST

/* Golden digests of y for each matrix, dtype and contract: the reference must still produce them (so
 * the contract has not drifted) and every variant on every device must equal them. */
static const char *const golden_mats[] = {
    "poisson3d:6",    "powerlaw:1000x1000:2:5", "random:300x200:7:5", DATA "pores_1.mtx", DATA "jgl009.mtx",
    DATA "LFAT5.mtx", DATA "m_05_05_crk.mtx",   PKG_R "lund_a.mtx",   PKG_R "utm300.rua", PKG_SUPERLU "g20.rua"};
#define NGOLDEN (sizeof golden_mats / sizeof golden_mats[0])

static rcl_csr *golden_matrix(size_t g, rcl_dtype dt, char *key) {
  rcl_csr *A = NULL;
  const char *s = golden_mats[g];
  if (s[0] == '/') {
    const char *found = pkg_file(s);
    if (!found) {
      rt_note("skip golden %s: absent (its Debian package is not installed)", s);
      return NULL;
    }
    rt_ok(rcl_matrix_read(&A, found, dt));
    s = strrchr(s, '/') + 1;
  } else {
    rt_ok(rcl_csr_generate(&A, dt, s));
  }
  strcpy(key, s);
  return A;
}

/* y for the golden configuration: y = 1.5 A x - 0.25 y0 (on the device when M is given). */
static void golden_y(char hex[65], const rcl_csr *A, rcl_spmv_matrix *M, const rcl_spmv_options *o) {
  rcl_dtype dt = A->dtype;
  size_t es = rcl_dtype_size(dt);
  void *x = gen(dt, A->ncols, "uniform", 7), *y = gen(dt, A->nrows, "uniform", 8);
  unsigned char alpha[8], beta[8];
  scalars(dt, 1.5, -0.25, alpha, beta);
  if (M)
    rt_ok(rcl_spmv_host(y, M, alpha, x, beta, o));
  else
    rt_ok(rcl_ref_spmv(y, A, o->contract, alpha, x, beta));
  rcl_sha256_hex(hex, y, A->nrows * es);
  free(x);
  free(y);
}

START_TEST(golden_reference) {
  for (size_t d = 0; d < 2; d++)
    for (size_t g = 0; g < NGOLDEN; g++) {
      char name[256], key[300], hex[65];
      rcl_csr *A = golden_matrix(g, dtypes[d], name);
      if (!A) continue;
      for (size_t c = 0; c < 2; c++) {
        rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
        o.contract = contracts[c];
        golden_y(hex, A, NULL, &o);
        snprintf(key, sizeof key, "%s/%s/%s", name, rcl_dtype_name(dtypes[d]), rcl_spmv_contract_name(contracts[c]));
        rt_golden_ref_value("spmv.txt", key, hex);
      }
      rcl_csr_free(A);
    }
}
END_TEST

START_TEST(golden_devices) {
  for (size_t d = 0; d < 2; d++) {
    if (!rt_supported(_i, RCL_FAMILY_SPMV, dtypes[d])) continue;
    for (size_t g = 0; g < NGOLDEN; g++) {
      char name[256], key[300], hex[65];
      rcl_csr *A = golden_matrix(g, dtypes[d], name);
      if (!A) continue;
      rcl_spmv_matrix *M;
      rt_ok(rcl_spmv_matrix_create(&M, rt_ctx(_i), A));
      for (size_t c = 0; c < 2; c++) {
        snprintf(key, sizeof key, "%s/%s/%s", name, rcl_dtype_name(dtypes[d]), rcl_spmv_contract_name(contracts[c]));
        char want[512];
        ck_assert_msg(rt_golden_get("spmv.txt", key, want, sizeof want)[0], "no golden digest for %s", key);
        for (size_t v = 0; v < NVARIANTS; v++) {
          rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
          o.contract = contracts[c];
          o.variant = variants[v];
          golden_y(hex, A, M, &o);
          ck_assert_msg(!strcmp(hex, want), "%s %s on %s: digest %s, golden %s", key,
                        rcl_spmv_variant_name(variants[v]), rt_device_name(_i), hex, want);
        }
      }
      rcl_spmv_matrix_free(M);
      rcl_csr_free(A);
    }
  }
}
END_TEST

/* The enqueue form: the caller's queue, a wait list and an event, offsets, x and y in one buffer. */
START_TEST(enqueue_offsets_and_events) {
  rcl_context *c = rt_ctx(_i);
  rcl_csr *A;
  rt_ok(rcl_csr_generate(&A, RCL_F32, "random:200x150:9:2"));
  rcl_spmv_matrix *M;
  rt_ok(rcl_spmv_matrix_create(&M, c, A));
  size_t xo = 5, yo = 300; /* x at [5, 155), y at [300, 500) of one buffer */
  size_t total = 520;
  float *h = gen(RCL_F32, total, "uniform", 3), *want = malloc(total * 4), *got = malloc(total * 4);
  memcpy(want, h, total * 4);
  float alpha = 0.75f, beta = -2.0f;
  rt_ok(rcl_ref_spmv(want + yo, A, RCL_SPMV_ORDERED, &alpha, h + xo, &beta));
  cl_int err;
  cl_context clc = rcl_context_cl_context(c);
  cl_command_queue q = clCreateCommandQueue(clc, rcl_context_cl_device(c), 0, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  cl_mem buf = clCreateBuffer(clc, CL_MEM_READ_WRITE, total * 4, NULL, &err);
  cl_event wrote, done = NULL;
  ck_assert_int_eq(clEnqueueWriteBuffer(q, buf, CL_FALSE, 0, total * 4, h, 0, NULL, &wrote), CL_SUCCESS);
  rcl_queue_args qa = RCL_QUEUE_ARGS_INIT;
  qa.queue = q;
  qa.num_events_in_wait_list = 1;
  qa.event_wait_list = &wrote;
  qa.event = &done;
  rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
  o.variant = RCL_SPMV_VECTOR;
  rt_ok(rcl_spmv_enqueue(buf, yo, M, &alpha, buf, xo, &beta, &o, &qa));
  ck_assert_ptr_nonnull(done);
  ck_assert_int_eq(clWaitForEvents(1, &done), CL_SUCCESS);
  clReleaseEvent(done);
  ck_assert_int_eq(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, total * 4, got, 0, NULL, NULL), CL_SUCCESS);
  rt_assert_bits_eq(got, want, total, RCL_F32, "spmv with offsets in one buffer on %s", rt_device_name(_i));
  /* overlapping x and y are refused */
  rt_fails(rcl_spmv_enqueue(buf, 100, M, &alpha, buf, 0, &beta, &o, &qa), RCL_ERR_INVALID_ARG, "x and y overlap");
  /* a 0-row matrix still hands back an event */
  rcl_csr *E;
  uint64_t z = 0;
  rt_ok(rcl_csr_create(&E, RCL_F32, 0, 3, 0, &z, NULL, NULL));
  rcl_spmv_matrix *ME;
  rt_ok(rcl_spmv_matrix_create(&ME, c, E));
  done = NULL;
  rt_ok(rcl_spmv_enqueue(buf, 0, ME, &alpha, buf, 0, &beta, NULL, &qa));
  ck_assert_ptr_nonnull(done);
  ck_assert_int_eq(clWaitForEvents(1, &done), CL_SUCCESS);
  clReleaseEvent(done);
  rcl_spmv_matrix_free(ME);
  rcl_csr_free(E);
  clReleaseEvent(wrote);
  clReleaseMemObject(buf);
  clReleaseCommandQueue(q);
  free(h);
  free(want);
  free(got);
  rcl_spmv_matrix_free(M);
  rcl_csr_free(A);
}
END_TEST

START_TEST(bad_arguments) {
  rcl_context *c = rt_ctx(_i);
  rcl_csr *A;
  rt_ok(rcl_csr_generate(&A, RCL_F32, "poisson2d:8"));
  rcl_spmv_matrix *M;
  rt_ok(rcl_spmv_matrix_create(&M, c, A));
  float *x = gen(RCL_F32, A->ncols, "uniform", 1), *y = gen(RCL_F32, A->nrows, "uniform", 2);
  float alpha = 1, beta = 0;
  rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
  o.version = 7;
  rt_fails(rcl_spmv_host(y, M, &alpha, x, &beta, &o), RCL_ERR_INVALID_ARG, "version");
  o = (rcl_spmv_options)RCL_SPMV_OPTIONS_INIT;
  o.contract = (rcl_spmv_contract)3;
  rt_fails(rcl_spmv_host(y, M, &alpha, x, &beta, &o), RCL_ERR_INVALID_ARG, "contract");
  o = (rcl_spmv_options)RCL_SPMV_OPTIONS_INIT;
  o.variant = (rcl_spmv_variant)42;
  rt_fails(rcl_spmv_host(y, M, &alpha, x, &beta, &o), RCL_ERR_INVALID_ARG, "variant");
  o = (rcl_spmv_options)RCL_SPMV_OPTIONS_INIT;
  o.local_size = 48;
  rt_fails(rcl_spmv_host(y, M, &alpha, x, &beta, &o), RCL_ERR_INVALID_ARG, "local_size = 48 is not a power of two");
  o.local_size = (size_t)1 << 20;
  rt_fails(rcl_spmv_host(y, M, &alpha, x, &beta, &o), RCL_ERR_INVALID_ARG, "exceeds");
  o = (rcl_spmv_options)RCL_SPMV_OPTIONS_INIT;
  o.variant = RCL_SPMV_VECTOR;
  o.local_size = 8;
  o.lanes = 16;
  rt_fails(rcl_spmv_host(y, M, &alpha, x, &beta, &o), RCL_ERR_INVALID_ARG, "lanes = 16 exceeds local_size");
  o.lanes = 3;
  rt_fails(rcl_spmv_host(y, M, &alpha, x, &beta, &o), RCL_ERR_INVALID_ARG, "lanes = 3 is not a power of two");
  o = (rcl_spmv_options)RCL_SPMV_OPTIONS_INIT;
  o.variant = RCL_SPMV_ADAPTIVE;
  o.local_size = 8;
  o.block_nnz = 12;
  rt_fails(rcl_spmv_host(y, M, &alpha, x, &beta, &o), RCL_ERR_INVALID_ARG, "block_nnz = 12 is not a positive multiple");
  o.block_nnz = (size_t)1 << 30;
  rt_fails(rcl_spmv_host(y, M, &alpha, x, &beta, &o), RCL_ERR_INVALID_ARG, "does not fit in local memory");
  o = (rcl_spmv_options)RCL_SPMV_OPTIONS_INIT;
  o.variant = RCL_SPMV_SELL;
  o.slice = 6;
  rt_fails(rcl_spmv_host(y, M, &alpha, x, &beta, &o), RCL_ERR_INVALID_ARG, "slice = 6");
  /* Limits that only a driver with a loop limit (llvmpipe) imposes: refused there, accepted elsewhere. */
  o = (rcl_spmv_options)RCL_SPMV_OPTIONS_INIT;
  o.variant = RCL_SPMV_SCALAR;
  o.long_row = 1000000;
  o.window = 1000000;
  if (rcl_context_profile(c)->loop_iteration_limit) {
    rt_fails(rcl_spmv_host(y, M, &alpha, x, &beta, &o), RCL_ERR_INVALID_ARG, "long_row = 1000000: the scalar variant");
    o.long_row = 0;
    rt_fails(rcl_spmv_host(y, M, &alpha, x, &beta, &o), RCL_ERR_INVALID_ARG, "window = 1000000 exceeds");
  } else {
    rt_ok(rcl_spmv_host(y, M, &alpha, x, &beta, &o));
  }
  /* NULLs, small buffers */
  rt_fails(rcl_spmv_host(y, M, NULL, x, &beta, NULL), RCL_ERR_INVALID_ARG, "NULL");
  rt_fails(rcl_spmv_host(NULL, M, &alpha, x, &beta, NULL), RCL_ERR_INVALID_ARG, "NULL");
  rt_fails(rcl_spmv_host(y, NULL, &alpha, x, &beta, NULL), RCL_ERR_INVALID_ARG, "NULL matrix");
  cl_int err;
  cl_mem small = clCreateBuffer(rcl_context_cl_context(c), CL_MEM_READ_WRITE, 16, NULL, &err);
  cl_mem big = clCreateBuffer(rcl_context_cl_context(c), CL_MEM_READ_WRITE, A->nrows * 4, NULL, &err);
  rt_fails(rcl_spmv_enqueue(small, 0, M, &alpha, big, 0, &beta, NULL, NULL), RCL_ERR_INVALID_ARG,
           "y: buffer holds 16 bytes");
  rt_fails(rcl_spmv_enqueue(big, 0, M, &alpha, small, 0, &beta, NULL, NULL), RCL_ERR_INVALID_ARG,
           "x: buffer holds 16 bytes");
  rt_fails(rcl_spmv_enqueue(big, SIZE_MAX, M, &alpha, small, 0, &beta, NULL, NULL), RCL_ERR_OVERFLOW, "overflows");
  clReleaseMemObject(small);
  clReleaseMemObject(big);
  /* an invalid CSR is refused before upload */
  A->row_ptr[3] = A->row_ptr[4] + 1;
  rcl_spmv_matrix *M2 = NULL;
  rt_fails(rcl_spmv_matrix_create(&M2, c, A), RCL_ERR_INVALID_ARG, "row_ptr decreases at row 3");
  ck_assert_ptr_null(M2);
  /* a handle shared with a context on another device is refused; with the native clone it works */
  rcl_context *nc;
  rt_ok(rcl_context_clone(&nc, c, RCL_MODE_NATIVE));
  rt_ok(rcl_spmv_matrix_share(&M2, M, nc));
  rcl_spmv_matrix_free(M2);
  rcl_context_free(nc);
  if (rt_ndevices() > 1) {
    size_t other = _i == 0 ? 1 : 0;
    rt_fails(rcl_spmv_matrix_share(&M2, M, rt_ctx(other)), RCL_ERR_INVALID_ARG, "another cl_context");
  }
  free(x);
  free(y);
  rcl_spmv_matrix_free(M);
  rcl_csr_free(A);
}
END_TEST

/* Native mode runs the same kernels with the vendor's defaults. On an integer problem every operation
 * is exact, so contraction cannot change a bit: native must equal the reference here. */
START_TEST(native_mode_runs) {
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_SPMV, dt)) continue;
    size_t es = rcl_dtype_size(dt);
    rcl_csr *A;
    rt_ok(rcl_csr_generate(&A, dt, "poisson3d:7"));
    rcl_spmv_matrix *R, *N;
    rcl_context *nc;
    rt_ok(rcl_context_clone(&nc, rt_ctx(_i), RCL_MODE_NATIVE));
    rt_ok(rcl_spmv_matrix_create(&R, rt_ctx(_i), A));
    rt_ok(rcl_spmv_matrix_share(&N, R, nc));
    void *x = malloc(A->ncols * es), *y0 = malloc(A->nrows * es);
    for (size_t i = 0; i < A->ncols; i++) {
      if (dt == RCL_F32)
        ((float *)x)[i] = (float)(i % 13) - 6.0f, ((float *)y0)[i] = (float)(i % 5);
      else
        ((double *)x)[i] = (double)(i % 13) - 6.0, ((double *)y0)[i] = (double)(i % 5);
    }
    for (size_t c = 0; c < 2; c++)
      for (size_t v = 0; v < NVARIANTS; v++) {
        rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
        o.contract = contracts[c];
        o.variant = variants[v];
        check_one(N, A, &o, x, y0, 2.0, 3.0, "native, integer problem", _i, 0);
      }
    /* and the conventional baseline kernel computes the same integer result */
    unsigned char alpha[8], beta[8];
    scalars(dt, 2.0, 3.0, alpha, beta);
    void *want = malloc(A->nrows * es);
    memcpy(want, y0, A->nrows * es);
    rt_ok(rcl_ref_spmv(want, A, RCL_SPMV_ORDERED, alpha, x, beta));
    cl_int err;
    cl_context clc = rcl_context_cl_context(rt_ctx(_i));
    cl_mem bx = clCreateBuffer(clc, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, A->ncols * es, x, &err);
    cl_mem by = clCreateBuffer(clc, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, A->nrows * es, y0, &err);
    rt_ok(rcl_spmv_baseline_enqueue(by, 0, N, alpha, bx, 0, beta, 4, 0, NULL));
    void *got = malloc(A->nrows * es);
    ck_assert_int_eq(clEnqueueReadBuffer(rcl_context_cl_queue(nc), by, CL_TRUE, 0, A->nrows * es, got, 0, NULL, NULL),
                     CL_SUCCESS);
    rt_assert_bits_eq(got, want, A->nrows, dt, "baseline kernel, integer problem, on %s", rt_device_name(_i));
    clReleaseMemObject(bx);
    clReleaseMemObject(by);
    free(want);
    free(got);
    free(x);
    free(y0);
    rcl_spmv_matrix_free(N);
    rcl_spmv_matrix_free(R);
    rcl_context_free(nc);
    rcl_csr_free(A);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("spmv");
  rt_add_device_presence(s);
  TCase *g = tcase_create("golden");
  tcase_add_test(g, golden_reference);
  suite_add_tcase(s, g);
  TCase *tc = tcase_create("devices");
  rt_add_device_loop(tc, variants_match_reference);
  rt_add_device_loop(tc, very_long_row);
  rt_add_device_loop(tc, launch_invariance);
  rt_add_device_loop(tc, exact_equals_mpfr);
  rt_add_device_loop(tc, alpha_beta_rules);
  rt_add_device_loop(tc, golden_devices);
  rt_add_device_loop(tc, enqueue_offsets_and_events);
  rt_add_device_loop(tc, bad_arguments);
  rt_add_device_loop(tc, native_mode_runs);
  suite_add_tcase(s, tc);
  return rt_run(s);
}
