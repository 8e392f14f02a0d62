/* Sparse matrix input without a device: the Matrix Market and Harwell-Boeing readers on real files from
 * Debian packages and on every malformed case (each error names file, line and problem), correct
 * rounding of values against MPFR, duplicate and symmetry rules, CSR validation, the generators and
 * their golden digests, and the writer's round trip. */
#include <locale.h>
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <unistd.h>

#include "pkgdata.h"
#include "testlib.h"

#define PKG_R "/usr/lib/R/library/Matrix/external/"
#define PKG_SUPERLU "/usr/share/doc/libsuperlu-dev/examples/"
#define DATA REPROCL_SOURCE_DIR "/tests/data/matrices/"

static rcl_csr *parse_mm(const char *text, rcl_dtype dt) {
  rcl_csr *A = NULL;
  rt_ok(rcl_mm_parse(&A, text, strlen(text), "t.mtx", dt));
  return A;
}

static double val(const rcl_csr *A, size_t k) {
  return A->dtype == RCL_F32 ? (double)((const float *)A->values)[k] : ((const double *)A->values)[k];
}

/* The value at (i, j) (0-based), asserting it is stored exactly once. */
static double at(const rcl_csr *A, size_t i, uint32_t j) {
  for (uint64_t k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++)
    if (A->col_idx[k] == j) return val(A, k);
  ck_abort_msg("entry (%zu, %u) is not stored", i, j);
  return 0;
}

static void assert_sorted(const rcl_csr *A) {
  rt_ok(rcl_csr_validate(A));
  for (size_t i = 0; i < A->nrows; i++)
    for (uint64_t k = A->row_ptr[i] + 1; k < A->row_ptr[i + 1]; k++)
      ck_assert_msg(A->col_idx[k - 1] < A->col_idx[k], "row %zu: columns not strictly increasing", i);
}

/* ---- real files ---------------------------------------------------------------------------------------- */

START_TEST(real_matrix_market_files) {
  static const struct {
    const char *path;
    size_t m, n, nnz;
  } files[] = {{DATA "jgl009.mtx", 9, 9, 50},
               {DATA "pores_1.mtx", 30, 30, 180},
               {DATA "LFAT5.mtx", 14, 14, 46},
               {DATA "amesos2_test_mat0.mtx", 6, 6, 12},
               {DATA "m_05_05_crk.mtx", 5, 5, 8}};
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = d ? RCL_F64 : RCL_F32;
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
      rcl_csr *A = NULL;
      rt_ok(rcl_matrix_read(&A, files[f].path, dt));
      ck_assert_uint_eq(A->nrows, files[f].m);
      ck_assert_uint_eq(A->ncols, files[f].n);
      ck_assert_uint_eq(A->nnz, files[f].nnz);
      assert_sorted(A);
      rcl_csr_free(A);
    }
    rcl_csr *A;
    rt_ok(rcl_matrix_read(&A, DATA "pores_1.mtx", dt));
    ck_assert(at(A, 0, 0) == (dt == RCL_F32 ? (double)-9.4810113490000e+02f : -9.4810113490000e+02));
    ck_assert(at(A, 1, 0) == (dt == RCL_F32 ? (double)-7.1785016460000e+06f : -7.1785016460000e+06));
    rcl_csr_free(A);
    /* symmetric: mirrored entries */
    rt_ok(rcl_matrix_read(&A, DATA "LFAT5.mtx", dt));
    ck_assert(at(A, 3, 0) == at(A, 0, 3));
    ck_assert(at(A, 0, 3) == (dt == RCL_F32 ? (double)-94.2528f : -94.2528));
    rcl_csr_free(A);
    /* skew-symmetric: the mirror is negated */
    rt_ok(rcl_matrix_read(&A, DATA "m_05_05_crk.mtx", dt));
    ck_assert(at(A, 4, 0) == 15.0 && at(A, 0, 4) == -15.0);
    ck_assert(at(A, 3, 1) == 24.0 && at(A, 1, 3) == -24.0);
    for (size_t i = 0; i < 5; i++)
      for (uint64_t k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) ck_assert_uint_ne(A->col_idx[k], i);
    rcl_csr_free(A);
    /* pattern: every value 1 */
    rt_ok(rcl_matrix_read(&A, DATA "jgl009.mtx", dt));
    for (size_t k = 0; k < A->nnz; k++) ck_assert(val(A, k) == 1.0);
    rcl_csr_free(A);
  }
  /* R's own malformed example */
  rcl_csr *A = NULL;
  rt_fails(rcl_matrix_read(&A, DATA "wrong.mtx", RCL_F64), RCL_ERR_PARSE, "wrong.mtx:3: row index 0 is outside 1..2");
  ck_assert_ptr_null(A);
}
END_TEST

START_TEST(real_package_files) {
  /* lund_a in both formats must give the same matrix; utm300 has D exponents and touching fields. */
  static const char *const need[] = {PKG_R "lund_a.mtx", PKG_R "lund_a.rsa", PKG_R "utm300.rua", PKG_SUPERLU "g20.rua"};
  const char *at_[4];
  for (size_t i = 0; i < 4; i++)
    if (!(at_[i] = pkg_file(need[i]))) {
      rt_note("skip: %s is absent (install r-cran-matrix and libsuperlu-doc; CI does)", need[i]);
      return;
    }
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = d ? RCL_F64 : RCL_F32;
    rcl_csr *a, *b, *u, *g;
    rt_ok(rcl_matrix_read(&a, at_[0], dt));
    rt_ok(rcl_matrix_read(&b, at_[1], dt));
    char ha[65], hb[65];
    rcl_csr_digest(ha, a);
    rcl_csr_digest(hb, b);
    ck_assert_str_eq(ha, hb);
    ck_assert_uint_eq(a->nrows, 147);
    ck_assert_uint_eq(a->nnz, 2 * 1298 - 147);
    rt_ok(rcl_matrix_read(&u, at_[2], dt));
    ck_assert_uint_eq(u->nrows, 300);
    ck_assert_uint_eq(u->nnz, 3155);
    assert_sorted(u);
    /* utm300's first values (column 1: rows 1 and 51) as printed, touching:
     * "-.707106816579618E+000.707106745793467E+00" */
    ck_assert(at(u, 0, 0) ==
              (dt == RCL_F32 ? (double)strtof("-.707106816579618E+00", NULL) : strtod("-.707106816579618E+00", NULL)));
    ck_assert(at(u, 50, 0) ==
              (dt == RCL_F32 ? (double)strtof("0.707106745793467E+00", NULL) : strtod("0.707106745793467E+00", NULL)));
    rt_ok(rcl_matrix_read(&g, at_[3], dt));
    ck_assert_uint_eq(g->nrows, 400);
    ck_assert_uint_eq(g->nnz, 1920);
    assert_sorted(g);
    ck_assert(at(g, 0, 0) == 4.0);
    rcl_csr_free(a);
    rcl_csr_free(b);
    rcl_csr_free(u);
    rcl_csr_free(g);
  }
}
END_TEST

/* ---- Matrix Market rules ---------------------------------------------------------------------------- */

START_TEST(mm_comments_blank_lines_crlf_case) {
  const char *t = "%%matrixmarket MATRIX Coordinate REAL General\r\n"
                  "% a comment\r\n"
                  "\r\n"
                  "   \t\r\n"
                  "3 4 3\r\n"
                  "% between entries\r\n"
                  "1\t4   2.5\r\n"
                  "\r\n"
                  "3 1 -1e-3\r\n"
                  "2 2 7\r\n"
                  "% trailing comment\r\n\r\n";
  rcl_csr *A = parse_mm(t, RCL_F64);
  ck_assert_uint_eq(A->nnz, 3);
  ck_assert(at(A, 0, 3) == 2.5 && at(A, 2, 0) == -1e-3 && at(A, 1, 1) == 7);
  rcl_csr_free(A);
  /* no final newline */
  A = parse_mm("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 5", RCL_F32);
  ck_assert(at(A, 0, 0) == 5);
  rcl_csr_free(A);
  /* empty shapes */
  A = parse_mm("%%MatrixMarket matrix coordinate real general\n0 0 0\n", RCL_F64);
  ck_assert_uint_eq(A->nrows, 0);
  rcl_csr_free(A);
  A = parse_mm("%%MatrixMarket matrix coordinate real general\n3 2 0\n", RCL_F64);
  ck_assert_uint_eq(A->nrows, 3);
  ck_assert_uint_eq(A->row_ptr[3], 0);
  rcl_csr_free(A);
}
END_TEST

START_TEST(mm_duplicates_and_zeros) {
  /* In float, 1e8 + 1 rounds back to 1e8: summing in file order (1e8, 1, -1e8) gives 0, any other order 1.
   * Explicit zeros stay as entries. */
  const char *t = "%%MatrixMarket matrix coordinate real general\n2 2 6\n"
                  "1 1 1e8\n2 2 0\n1 1 1\n2 1 3\n1 1 -1e8\n2 1 4\n";
  rcl_csr *A = parse_mm(t, RCL_F32);
  ck_assert_uint_eq(A->nnz, 3);
  ck_assert(at(A, 0, 0) == 0.0);
  ck_assert(at(A, 1, 1) == 0.0);
  ck_assert(at(A, 1, 0) == 7.0);
  rcl_csr_free(A);
  A = parse_mm(t, RCL_F64);
  ck_assert(at(A, 0, 0) == 1.0); /* exact in double */
  rcl_csr_free(A);
  /* symmetric duplicates: a mirrored entry takes the position of its source line */
  const char *s = "%%MatrixMarket matrix coordinate real symmetric\n2 2 4\n2 1 1e8\n1 1 2\n2 1 1\n2 1 -1e8\n";
  A = parse_mm(s, RCL_F32);
  ck_assert_uint_eq(A->nnz, 3);
  ck_assert(at(A, 1, 0) == 0.0 && at(A, 0, 1) == 0.0 && at(A, 0, 0) == 2.0);
  rcl_csr_free(A);
}
END_TEST

START_TEST(mm_field_kinds) {
  rcl_csr *A =
      parse_mm("%%MatrixMarket matrix coordinate integer general\n1 2 2\n1 1 -7\n1 2 9007199254740993\n", RCL_F64);
  ck_assert(at(A, 0, 0) == -7.0);
  ck_assert(at(A, 0, 1) == 9007199254740992.0); /* the tie rounds to even */
  rcl_csr_free(A);
  A = parse_mm("%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 16777217\n", RCL_F32);
  ck_assert(at(A, 0, 0) == 16777216.0);
  rcl_csr_free(A);
  /* array general (column-major), symmetric (lower triangle by columns), skew (strict lower) */
  A = parse_mm("%%MatrixMarket matrix array real general\n2 3\n1\n2\n3\n4\n5\n0\n", RCL_F64);
  ck_assert_uint_eq(A->nnz, 6);
  ck_assert(at(A, 0, 0) == 1 && at(A, 1, 0) == 2 && at(A, 0, 1) == 3 && at(A, 1, 2) == 0);
  rcl_csr_free(A);
  A = parse_mm("%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n", RCL_F64);
  ck_assert_uint_eq(A->nnz, 9);
  ck_assert(at(A, 1, 0) == 2 && at(A, 0, 1) == 2 && at(A, 2, 1) == 5 && at(A, 1, 2) == 5 && at(A, 2, 2) == 6);
  rcl_csr_free(A);
  A = parse_mm("%%MatrixMarket matrix array integer skew-symmetric\n3 3\n1\n2\n3\n", RCL_F32);
  ck_assert_uint_eq(A->nnz, 6);
  ck_assert(at(A, 1, 0) == 1 && at(A, 0, 1) == -1 && at(A, 2, 1) == 3 && at(A, 1, 2) == -3);
  rcl_csr_free(A);
}
END_TEST

/* Every malformed case: the status and a message naming the file, the line and the problem. */
START_TEST(mm_malformed) {
  static const struct {
    const char *text;
    int status;
    const char *msg;
  } cases[] = {
      {"", RCL_ERR_PARSE, "t.mtx:1: empty input"},
      {"1 1 1\n", RCL_ERR_PARSE, "t.mtx:1: missing the Matrix Market banner"},
      {"%%MatrixMarket matrix coordinate real\n1 1 0\n", RCL_ERR_PARSE, "t.mtx:1: the banner needs 4 words"},
      {"%%MatrixMarket vector coordinate real general\n", RCL_ERR_UNSUPPORTED, "t.mtx:1: object \"vector\""},
      {"%%MatrixMarket matrix sparse real general\n", RCL_ERR_PARSE, "t.mtx:1: unknown format \"sparse\""},
      {"%%MatrixMarket matrix coordinate complex general\n", RCL_ERR_UNSUPPORTED, "t.mtx:1: complex"},
      {"%%MatrixMarket matrix coordinate float general\n", RCL_ERR_PARSE, "t.mtx:1: unknown field \"float\""},
      {"%%MatrixMarket matrix coordinate real hermitian\n", RCL_ERR_UNSUPPORTED, "t.mtx:1: hermitian"},
      {"%%MatrixMarket matrix coordinate real upper\n", RCL_ERR_PARSE, "t.mtx:1: unknown symmetry \"upper\""},
      {"%%MatrixMarket matrix array pattern general\n", RCL_ERR_PARSE, "t.mtx:1: \"array pattern\""},
      {"%%MatrixMarket matrix coordinate real general\n% only\n\n", RCL_ERR_PARSE,
       "t.mtx:3: the input ends before the size line"},
      {"%%MatrixMarket matrix coordinate real general\n2 2\n", RCL_ERR_PARSE,
       "t.mtx:2: the size line needs 3 integers"},
      {"%%MatrixMarket matrix coordinate real general\n2 2 1 1\n", RCL_ERR_PARSE, "t.mtx:2: the size line needs 3"},
      {"%%MatrixMarket matrix coordinate real general\n3 x 4\n", RCL_ERR_PARSE,
       "t.mtx:2: column count \"x\" is not a non-negative integer"},
      {"%%MatrixMarket matrix coordinate real general\n-3 3 1\n", RCL_ERR_PARSE,
       "t.mtx:2: row count \"-3\" is not a non-negative integer"},
      {"%%MatrixMarket matrix coordinate real general\n99999999999999999999 1 1\n", RCL_ERR_PARSE,
       "t.mtx:2: row count 99999999999999999999 does not fit in 64 bits"},
      {"%%MatrixMarket matrix coordinate real general\n5000000000 5 1\n1 1 1\n", RCL_ERR_UNSUPPORTED,
       "t.mtx:2: a 5000000000 x 5 matrix exceeds reprocl's limit"},
      {"%%MatrixMarket matrix array real general\n4294967296 4294967296\n1\n", RCL_ERR_PARSE,
       "t.mtx:2: the array size 4294967296 x 4294967296 overflows 64 bits"},
      {"%%MatrixMarket matrix array real general\n18446744073709551615 2\n1\n", RCL_ERR_PARSE, "overflows 64 bits"},
      {"%%MatrixMarket matrix coordinate real general\n2 2 1000000000000\n1 1 1\n", RCL_ERR_PARSE,
       "t.mtx:2: the size line claims 1000000000000 entries but only 6 bytes follow"},
      {"%%MatrixMarket matrix coordinate pattern general\n2 2 18446744073709551615\n1 1\n", RCL_ERR_PARSE,
       "t.mtx:2: the size line claims 18446744073709551615 entries"},
      {"%%MatrixMarket matrix array real general\n100000 100000\n1\n", RCL_ERR_PARSE,
       "t.mtx:2: the size line claims 10000000000 entries"},
      {"%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 1\n2 2 1\n\n\n\n\n\n\n\n\n\n\n\n\n\n", RCL_ERR_PARSE,
       "t.mtx:17: the input ends after 2 of the 4 entries declared on line 2"},
      {"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n2 2 2\n", RCL_ERR_PARSE,
       "t.mtx:4: more entries than the 1 declared on line 2"},
      {"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 3 1\n", RCL_ERR_PARSE,
       "t.mtx:3: column index 3 is outside 1..2"},
      {"%%MatrixMarket matrix coordinate real general\n2 2 1\n0 1 1\n", RCL_ERR_PARSE,
       "t.mtx:3: row index 0 is outside 1..2"},
      {"%%MatrixMarket matrix coordinate real general\n2 2 1\n18446744073709551616 1 1\n", RCL_ERR_PARSE,
       "t.mtx:3: row index 18446744073709551616 is outside 1..2"},
      {"%%MatrixMarket matrix coordinate real general\n2 2 1\n1.5 1 1\n", RCL_ERR_PARSE,
       "t.mtx:3: \"1.5\" is not a row index"},
      {"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 -1 1\n", RCL_ERR_PARSE,
       "t.mtx:3: \"-1\" is not a column index"},
      {"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 abc\n", RCL_ERR_PARSE,
       "t.mtx:3: \"abc\" is not a number"},
      {"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1.0.0\n", RCL_ERR_PARSE, "\"1.0.0\" is not a number"},
      {"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1e\n", RCL_ERR_PARSE, "\"1e\" is not a number"},
      {"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 \x01\x02\n", RCL_ERR_PARSE, "\"??\" is not a number"},
      {"%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 1.5\n", RCL_ERR_PARSE,
       "t.mtx:3: \"1.5\" is not an integer (the field is integer)"},
      {"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1     \n", RCL_ERR_PARSE,
       "t.mtx:3: expected row, column and value, found 2"},
      {"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1 7\n", RCL_ERR_PARSE,
       "t.mtx:3: unexpected \"7\" after the value"},
      {"%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1 3\n", RCL_ERR_PARSE,
       "t.mtx:3: unexpected \"3\" after the column (the field is pattern)"},
      {"%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 2 1\n", RCL_ERR_PARSE,
       "t.mtx:3: entry (1, 2) lies above the diagonal"},
      {"%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 2 1\n", RCL_ERR_PARSE,
       "t.mtx:3: entry (2, 2) is not below the diagonal"},
      {"%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n", RCL_ERR_PARSE,
       "t.mtx:2: a symmetric matrix must be square, this one is 2 x 3"},
      {"%%MatrixMarket matrix array real general\n2 1\n1 2\n2\n", RCL_ERR_PARSE,
       "t.mtx:3: unexpected \"2\" after the value"},
      {"%%MatrixMarket matrix array real general\n2 2\n1\n2\n% a comment\n3\n", RCL_ERR_PARSE,
       "t.mtx:6: the input ends after 3 of the 4 entries"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (size_t d = 0; d < 2; d++) {
      rcl_csr *A = (rcl_csr *)1;
      int rc = rcl_mm_parse(&A, cases[c].text, strlen(cases[c].text), "t.mtx", d ? RCL_F64 : RCL_F32);
      ck_assert_msg(rc == cases[c].status, "case %zu: status %s, expected %s (%s)", c, rcl_status_name(rc),
                    rcl_status_name(cases[c].status), rcl_error_last());
      ck_assert_msg(strstr(rcl_error_last(), cases[c].msg) != NULL, "case %zu: message \"%s\" lacks \"%s\"", c,
                    rcl_error_last(), cases[c].msg);
      ck_assert_ptr_null(A);
    }
  /* a number token longer than any exact decimal of a double */
  char *t = malloc(4200);
  strcpy(t, "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1.");
  size_t l = strlen(t);
  memset(t + l, '5', 3000);
  t[l + 3000] = '\0';
  rcl_csr *A = NULL;
  rt_fails(rcl_mm_parse(&A, t, strlen(t), "t.mtx", RCL_F64), RCL_ERR_PARSE, "t.mtx:3: \"1.555");
  free(t);
  /* a missing file names the file */
  rt_fails(rcl_matrix_read(&A, "/nonexistent/m.mtx", RCL_F64), RCL_ERR_NOT_FOUND, "/nonexistent/m.mtx: cannot open");
  rt_fails(rcl_matrix_read(&A, REPROCL_SOURCE_DIR "/tests", RCL_F64), RCL_ERR_IO, "is a directory");
}
END_TEST

/* ---- correct rounding ---------------------------------------------------------------------------------- */

static void oracle_round(void *out, const char *s, rcl_dtype dt) {
  mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
  mpfr_set_emin(dt == RCL_F32 ? -148 : -1073);
  mpfr_set_emax(dt == RCL_F32 ? 128 : 1024);
  mpfr_t t;
  mpfr_init2(t, dt == RCL_F32 ? 24 : 53);
  int inex = mpfr_strtofr(t, s, NULL, 10, MPFR_RNDN);
  inex = mpfr_check_range(t, inex, MPFR_RNDN);
  mpfr_subnormalize(t, inex, MPFR_RNDN);
  if (dt == RCL_F32)
    *(float *)out = mpfr_get_flt(t, MPFR_RNDN);
  else
    *(double *)out = mpfr_get_d(t, MPFR_RNDN);
  mpfr_clear(t);
  mpfr_set_emin(emin);
  mpfr_set_emax(emax);
}

START_TEST(values_correctly_rounded) {
  static const char *const hard64[] = {"2.2250738585072011e-308",
                                       "2.2250738585072012e-308",
                                       "9007199254740993",
                                       "9007199254740993.0000000001",
                                       "1.7976931348623157e308",
                                       "1.7976931348623158e308",
                                       "1.7976931348623159e308",
                                       "4.9406564584124654e-324",
                                       "2.4703282292062327e-324",
                                       "2.4703282292062328e-324",
                                       "0.1",
                                       "1e23",
                                       "8.988465674311579e307",
                                       "-0.0",
                                       "1e-400",
                                       "123456789012345678901234567890",
                                       "0.30000000000000001665"};
  static const char *const hard32[] = {"1.00000005960464477539062500000000008673617379884035",
                                       "1.000000059604644775390625",
                                       "7.038531e-26",
                                       "3.4028235e38",
                                       "3.4028236e38",
                                       "1.4e-45",
                                       "7.006492321624085e-46",
                                       "7.006492321624086e-46",
                                       "16777217",
                                       "0.1",
                                       "1.17549435e-38",
                                       "1.1754942e-38",
                                       "-2.5e-46"};
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = d ? RCL_F64 : RCL_F32;
    const char *const *list = d ? hard64 : hard32;
    size_t n = d ? sizeof hard64 / sizeof *hard64 : sizeof hard32 / sizeof *hard32;
    for (size_t i = 0; i < n; i++) {
      char text[256];
      snprintf(text, sizeof text, "%%%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 %s\n", list[i]);
      rcl_csr *A = parse_mm(text, dt);
      unsigned char want[8];
      oracle_round(want, list[i], dt);
      rt_assert_bits_eq(A->values, want, 1, dt, "\"%s\" read as %s", list[i], rcl_dtype_name(dt));
      rcl_csr_free(A);
    }
  }
  /* The first f32 case is a double-rounding trap: through double it would round to 1, directly to 1+2^-23.
   * This shows that the check above can fail for a reader that went through strtod. */
  const char *trap = hard32[0];
  float direct = strtof(trap, NULL), via_double = (float)strtod(trap, NULL);
  ck_assert(direct != via_double);
  ck_assert(direct == 1.0f + 0x1p-23f);
}
END_TEST

START_TEST(values_independent_of_locale) {
  char dir[900], cmd[2048];
  snprintf(dir, sizeof dir, "%s/test-locale", REPROCL_BINARY_DIR);
  snprintf(cmd, sizeof cmd, "mkdir -p %s && localedef -i de_DE -f UTF-8 %s/de_DE.UTF-8 >/dev/null 2>&1", dir, dir);
  if (system(cmd) != 0) {
    rt_note("skip: localedef could not build de_DE.UTF-8 (a locale with a decimal comma) to test with");
    return;
  }
  setenv("LOCPATH", dir, 1);
  if (!setlocale(LC_NUMERIC, "de_DE.UTF-8")) {
    unsetenv("LOCPATH");
    rt_note("skip: the de_DE.UTF-8 locale built in %s cannot be selected", dir);
    return;
  }
  ck_assert(strtod("1.5", NULL) == 1.0); /* the decimal comma is in force for the caller */
  rcl_csr *A = parse_mm("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1.5\n", RCL_F64);
  setlocale(LC_NUMERIC, "C");
  unsetenv("LOCPATH");
  ck_assert(at(A, 0, 0) == 1.5);
  rcl_csr_free(A);
}
END_TEST

/* ---- Harwell-Boeing -------------------------------------------------------------------------------------- */

/* A 3x3 RUA with 4 entries: columns {1: rows 1,2}, {2: row 1}, {3: row 3}. */
static const char hb_ok[] = "Test matrix                                                             TEST    \n"
                            "             4             1             1             2             0\n"
                            "RUA                        3             3             4             0\n"
                            "(4I4)           (4I4)           (2E12.4)            \n"
                            "   1   3   4   5\n"
                            "   1   2   1   3\n"
                            "  1.0000E+00  2.0000E+00\n"
                            "  3.0000E+00  4.0000E+00\n";

static char *hb_edit(const char *from, const char *to) {
  const char *p = strstr(hb_ok, from);
  ck_assert_msg(p != NULL, "'%s' not in the template", from);
  char *s = malloc(sizeof hb_ok + strlen(to) + 1);
  size_t a = (size_t)(p - hb_ok);
  memcpy(s, hb_ok, a);
  strcpy(s + a, to);
  strcat(s, p + strlen(from));
  return s;
}

START_TEST(hb_valid_forms) {
  rcl_csr *A = NULL;
  rt_ok(rcl_hb_parse(&A, hb_ok, strlen(hb_ok), "t.rua", RCL_F64));
  ck_assert_uint_eq(A->nnz, 4);
  ck_assert(at(A, 0, 0) == 1 && at(A, 1, 0) == 2 && at(A, 0, 1) == 3 && at(A, 2, 2) == 4);
  rcl_csr_free(A);
  /* Fortran number forms: touching fields, D exponents, exponents without a letter, implied decimals,
   * the 1P scale factor (ignored when the field has an exponent, applied to F fields without one). */
  static const struct {
    const char *fmt, *l1, *l2;
    double v[4];
  } forms[] = {
      {"(2E12.4)    ", "-1.00000E+00-2.00000E+00", "  3.0000D+02  4.0000d-01", {-1, -2, 300, 0.4}},
      /* no decimal point: the rightmost d = 4 digits are the fraction, as Fortran reads "1E1" in E12.4 */
      {"(2E12.4)    ", "     1.0-100      2.5+03", "       -3.25       1E1", {1e-100, 2500, -3.25, 0.001}},
      {"(2F12.2)    ", "         150       -1234", "       1.5E3         7.", {1.5, -12.34, 1500, 7}},
      {"(1P,2E12.4) ", "  1.0000E+00  2.5000E-01", "  3.0000E+00  4.0000E+00", {1, 0.25, 3, 4}},
      {"(1P2F12.2)  ", "      150.00     -1.5   ", "    3.00E+00       40.  ", {15, -0.15, 3, 4}},
  };
  for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
    char *t = hb_edit("(2E12.4)            \n", "");
    char *u = malloc(strlen(t) + 256);
    /* rebuild the format line and the value lines */
    const char *fl = strstr(t, "(4I4)           (4I4)           ");
    size_t head = (size_t)(fl - t) + 32;
    memcpy(u, t, head);
    sprintf(u + head, "%s\n   1   3   4   5\n   1   2   1   3\n%s\n%s\n", forms[f].fmt, forms[f].l1, forms[f].l2);
    rt_ok(rcl_hb_parse(&A, u, strlen(u), "t.rua", RCL_F64));
    double got[4] = {at(A, 0, 0), at(A, 1, 0), at(A, 0, 1), at(A, 2, 2)};
    for (int i = 0; i < 4; i++)
      ck_assert_msg(got[i] == forms[f].v[i], "format %s value %d: got %.17g, want %.17g", forms[f].fmt, i, got[i],
                    forms[f].v[i]);
    rcl_csr_free(A);
    free(t);
    free(u);
  }
  /* symmetric and pattern */
  char *s0 = hb_edit("RUA", "RSA"), *s = malloc(strlen(s0) + 1);
  strcpy(s, s0);
  memcpy(strstr(s, "   1   2   1   3\n"), "   1   2   2   3", 16); /* column 2 holds (2, 2) */
  free(s0);
  rt_ok(rcl_hb_parse(&A, s, strlen(s), "t.rsa", RCL_F32));
  ck_assert_uint_eq(A->nnz, 5);
  ck_assert(at(A, 1, 0) == 2 && at(A, 0, 1) == 2 && at(A, 1, 1) == 3 && at(A, 2, 2) == 4);
  rcl_csr_free(A);
  free(s);
  /* pattern: no value cards */
  s0 = hb_edit("             4             1             1             2             0\n",
               "             2             1             1             0             0\n");
  s = hb_edit("RUA", "PUA");
  free(s);
  s = malloc(strlen(s0) + 1);
  strcpy(s, s0);
  memcpy(strstr(s, "RUA"), "PUA", 3);
  *strstr(s, "  1.0000E+00  2.0000E+00\n") = '\0'; /* drop the value lines */
  rt_ok(rcl_hb_parse(&A, s, strlen(s), "t.pua", RCL_F64));
  ck_assert_uint_eq(A->nnz, 4);
  for (size_t k = 0; k < 4; k++) ck_assert(val(A, k) == 1.0);
  rcl_csr_free(A);
  free(s);
  free(s0);
}
END_TEST

START_TEST(hb_malformed) {
  static const struct {
    const char *from, *to;
    int status;
    const char *msg;
  } cases[] = {
      {"             4             1             1             2             0\n", "", RCL_ERR_PARSE,
       "t.rua:2: \"RUA\" is not a card count"},
      {"             4             1", "             5             1", RCL_ERR_PARSE,
       "t.rua:2: TOTCRD 5 is not PTRCRD + INDCRD + VALCRD + RHSCRD"},
      {"RUA", "XUA", RCL_ERR_PARSE, "t.rua:3: matrix type \"XUA\" is not a Harwell-Boeing type"},
      {"RUA", "CUA", RCL_ERR_UNSUPPORTED, "t.rua:3: complex matrices"},
      {"RUA", "RHA", RCL_ERR_UNSUPPORTED, "t.rua:3: hermitian"},
      {"RUA", "RUE", RCL_ERR_UNSUPPORTED, "t.rua:3: elemental"},
      {"RUA                        3             3", "RSA                        3             4", RCL_ERR_PARSE,
       "t.rua:3: a symmetric matrix must be square"},
      {"             4             0\n", "       1000000             0\n", RCL_ERR_PARSE,
       "t.rua:3: the header claims 3 columns and 1000000 entries but only"},
      {"(4I4)           (4I4)", "(4X4)           (4I4)", RCL_ERR_PARSE,
       "t.rua:4: pointer format \"(4X4)\" is not a Fortran format"},
      {"(2E12.4)", "(2I12)  ", RCL_ERR_PARSE, "t.rua:4: the value format (2I12) is not a real format"},
      {"             4             1             1             2",
       "             5             2             1             2", RCL_ERR_PARSE,
       "t.rua:2: PTRCRD is 2, but 4 column pointer values in 4 per line take 1 lines"},
      {"   1   3   4   5\n", "   2   3   4   5\n", RCL_ERR_PARSE, "t.rua:5: the first column pointer is 2, must be 1"},
      {"   1   3   4   5\n", "   1   3   2   5\n", RCL_ERR_PARSE, "t.rua:5: column pointer 3 (2) is smaller than"},
      {"   1   3   4   5\n", "   1   3   4   4\n", RCL_ERR_PARSE,
       "t.rua:5: the last column pointer is 4, must be NNZERO + 1 = 5"},
      {"   1   2   1   3\n", "   1   2   1   4\n", RCL_ERR_PARSE, "t.rua:6: entry 4: row index 4 is outside 1..3"},
      {"   1   2   1   3\n", "   1  a2   1   3\n", RCL_ERR_PARSE,
       "t.rua:6: entry 2: row index \"  a2\" is not an integer"},
      {"  1.0000E+00  2.0000E+00\n", "  1.0000X+00  2.0000E+00\n", RCL_ERR_PARSE,
       "t.rua:7: value 1 \"  1.0000X+00\" is not a number in format (2E12.4)"},
      {"  3.0000E+00  4.0000E+00\n", "  3.0000E+00\n", RCL_ERR_PARSE,
       "t.rua:8: value 4 is missing: the line has 12 characters, format (2E12.4) needs 24"},
      {"  3.0000E+00  4.0000E+00\n", "", RCL_ERR_PARSE, "the input ends in the value section after 2 of 4 values"},
      {"  3.0000E+00  4.0000E+00\n", "  3.0000E+00  4.0000E+00  5.0\n", RCL_ERR_PARSE,
       "t.rua:8: unexpected \"5.0\" after the 2 fields of format (2E12.4)"},
      {"  3.0000E+00  4.0000E+00\n", "  3.0000E+00  4.0000E+00\nextra\n", RCL_ERR_PARSE,
       "t.rua:9: unexpected data after the 4 declared lines"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char *t = hb_edit(cases[c].from, cases[c].to);
    rcl_csr *A = (rcl_csr *)1;
    int rc = rcl_hb_parse(&A, t, strlen(t), "t.rua", RCL_F64);
    ck_assert_msg(rc == cases[c].status, "case %zu: status %s, expected %s (%s)", c, rcl_status_name(rc),
                  rcl_status_name(cases[c].status), rcl_error_last());
    ck_assert_msg(strstr(rcl_error_last(), cases[c].msg) != NULL, "case %zu: message \"%s\" lacks \"%s\"", c,
                  rcl_error_last(), cases[c].msg);
    ck_assert_ptr_null(A);
    free(t);
  }
  /* the template's entry (1, 2) lies above the diagonal: refused in a symmetric file */
  char *t = hb_edit("RUA", "RSA");
  rcl_csr *A = NULL;
  rt_fails(rcl_hb_parse(&A, t, strlen(t), "t.rsa", RCL_F64), RCL_ERR_PARSE,
           "t.rsa:6: entry (1, 2) is not on or below the diagonal: a symmetric file stores the lower triangle");
  free(t);
  rt_fails(rcl_hb_parse(&A, "", 0, "t.rua", RCL_F64), RCL_ERR_PARSE, "t.rua:1: empty input");
  rt_fails(rcl_hb_parse(&A, "title\n", 6, "t.rua", RCL_F64), RCL_ERR_PARSE, "the input ends before the card counts");
}
END_TEST

/* ---- CSR through the API ---------------------------------------------------------------------------------- */

START_TEST(csr_validation) {
  uint64_t rp[4] = {0, 2, 2, 3};
  uint32_t ci[3] = {2, 0, 1};
  double v[3] = {1, 2, 3};
  rcl_csr *A = NULL;
  rt_ok(rcl_csr_create(&A, RCL_F64, 3, 3, 3, rp, ci, v)); /* unsorted columns are a valid CSR */
  ck_assert_uint_eq(A->col_idx[0], 2);
  rcl_csr_free(A);
  uint64_t bad0[4] = {1, 2, 2, 3}, dec[4] = {0, 2, 1, 3}, end[4] = {0, 1, 2, 2};
  rt_fails(rcl_csr_create(&A, RCL_F64, 3, 3, 3, bad0, ci, v), RCL_ERR_INVALID_ARG, "row_ptr[0] is 1");
  rt_fails(rcl_csr_create(&A, RCL_F64, 3, 3, 3, dec, ci, v), RCL_ERR_INVALID_ARG, "row_ptr decreases at row 1");
  rt_fails(rcl_csr_create(&A, RCL_F64, 3, 3, 3, end, ci, v), RCL_ERR_INVALID_ARG,
           "row_ptr[3] is 2, must equal nnz = 3");
  uint32_t far[3] = {2, 0, 3};
  rt_fails(rcl_csr_create(&A, RCL_F64, 3, 3, 3, rp, far, v), RCL_ERR_INVALID_ARG, "entry 2 (row 2) has column 3");
  rt_fails(rcl_csr_create(&A, RCL_F64, 3, 3, 3, rp, NULL, v), RCL_ERR_INVALID_ARG, "NULL");
  rt_fails(rcl_csr_create(&A, RCL_F64, (size_t)1 << 33, 3, 3, rp, ci, v), RCL_ERR_INVALID_ARG, "exceeds the limit");
  rt_fails(rcl_csr_create(&A, (rcl_dtype)7, 3, 3, 3, rp, ci, v), RCL_ERR_INVALID_ARG, "dtype");
  ck_assert_ptr_null(A);
  uint64_t z = 0;
  rt_ok(rcl_csr_create(&A, RCL_F32, 0, 0, 0, &z, NULL, NULL));
  rcl_csr_free(A);
}
END_TEST

/* ---- generators --------------------------------------------------------------------------------------------- */

START_TEST(generators) {
  rcl_csr *A;
  rt_ok(rcl_csr_generate(&A, RCL_F64, "poisson2d:7"));
  ck_assert_uint_eq(A->nrows, 49);
  ck_assert_uint_eq(A->nnz, 5 * 49 - 4 * 7);
  assert_sorted(A);
  for (size_t i = 0; i < A->nrows; i++) {
    double s = 0;
    for (uint64_t k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
      s += val(A, k);
      ck_assert(at(A, A->col_idx[k], (uint32_t)i) == val(A, k)); /* symmetric */
    }
    ck_assert(s >= 0 && at(A, i, (uint32_t)i) == 4.0);
  }
  rcl_csr_free(A);
  rt_ok(rcl_csr_generate(&A, RCL_F32, "poisson3d:5"));
  ck_assert_uint_eq(A->nrows, 125);
  ck_assert_uint_eq(A->nnz, 7 * 125 - 6 * 25);
  assert_sorted(A);
  rcl_csr_free(A);
  rt_ok(rcl_csr_generate(&A, RCL_F64, "random:100x300:40:9"));
  ck_assert_uint_eq(A->nnz, 100 * 40);
  assert_sorted(A);
  for (size_t k = 0; k < A->nnz; k++) ck_assert(val(A, k) >= -1 && val(A, k) < 1);
  rcl_csr_free(A);
  rt_ok(rcl_csr_generate(&A, RCL_F64, "random:3x10:8")); /* dense rows: drawn as excluded columns */
  ck_assert_uint_eq(A->nnz, 24);
  assert_sorted(A);
  rcl_csr_free(A);
  rt_ok(rcl_csr_generate(&A, RCL_F32, "powerlaw:5000x5000:2:3"));
  assert_sorted(A);
  size_t longest = 0;
  for (size_t i = 0; i < A->nrows; i++)
    if (A->row_ptr[i + 1] - A->row_ptr[i] > longest) longest = A->row_ptr[i + 1] - A->row_ptr[i];
  ck_assert_msg(longest > 500, "power-law rows: the longest has %zu entries, expected a heavy tail", longest);
  rcl_csr_free(A);
  static const char *const bad[] = {"poisson2d",      "poisson2d:x",        "poisson2d:5:1", "cube:3",
                                    "random:10",      "random:10:",         "random:10x:3",  "powerlaw:10:0",
                                    "poisson3d:2000", "random:5000000000:1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    A = (rcl_csr *)1;
    int rc = rcl_csr_generate(&A, RCL_F64, bad[i]);
    ck_assert_msg(rc == RCL_ERR_INVALID_ARG, "--gen %s: %s", bad[i], rcl_status_name(rc));
    ck_assert_ptr_null(A);
  }
}
END_TEST

/* The matrices the other sparse tests use, as digests: readers and generators cannot drift. */
START_TEST(matrix_golden_digests) {
  static const char *const gens[] = {"poisson2d:12", "poisson3d:6", "random:300x200:7:5", "powerlaw:1000x1000:2:5"};
  static const char *const files[] = {DATA "jgl009.mtx",      DATA "pores_1.mtx", DATA "LFAT5.mtx",
                                      DATA "m_05_05_crk.mtx", PKG_R "lund_a.mtx", PKG_R "utm300.rua",
                                      PKG_SUPERLU "g20.rua"};
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = d ? RCL_F64 : RCL_F32;
    char key[256], hex[65];
    for (size_t g = 0; g < sizeof gens / sizeof gens[0]; g++) {
      rcl_csr *A;
      rt_ok(rcl_csr_generate(&A, dt, gens[g]));
      rcl_csr_digest(hex, A);
      snprintf(key, sizeof key, "%s/%s", gens[g], rcl_dtype_name(dt));
      rt_golden_ref_value("sparse_matrices.txt", key, hex);
      rcl_csr_free(A);
    }
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
      const char *path = pkg_file(files[f]);
      if (!path) {
        rt_note("skip %s: absent (its Debian package is not installed)", files[f]);
        continue;
      }
      rcl_csr *A;
      rt_ok(rcl_matrix_read(&A, path, dt));
      rcl_csr_digest(hex, A);
      snprintf(key, sizeof key, "%s/%s", strrchr(files[f], '/') + 1, rcl_dtype_name(dt));
      rt_golden_ref_value("sparse_matrices.txt", key, hex);
      rcl_csr_free(A);
    }
  }
}
END_TEST

START_TEST(writer_round_trip) {
  char path[1024];
  snprintf(path, sizeof path, "%s/test-roundtrip.mtx", REPROCL_BINARY_DIR);
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = d ? RCL_F64 : RCL_F32;
    rcl_csr *A, *B;
    rt_ok(rcl_csr_generate(&A, dt, "powerlaw:300x400:1:11"));
    /* values over every binade */
    rcl_generate(A->values, dt, A->nnz, RCL_GEN_WIDE, 5);
    rt_ok(rcl_mm_write(path, A));
    rt_ok(rcl_mm_read(&B, path, dt));
    char ha[65], hb[65];
    rcl_csr_digest(ha, A);
    rcl_csr_digest(hb, B);
    ck_assert_str_eq(ha, hb);
    rcl_csr_free(A);
    rcl_csr_free(B);
  }
  unlink(path);
  rcl_csr *A;
  rt_ok(rcl_csr_generate(&A, RCL_F64, "poisson2d:3"));
  rt_fails(rcl_mm_write("/nonexistent/dir/x.mtx", A), RCL_ERR_IO, "/nonexistent/dir/x.mtx: cannot open for writing");
  rcl_csr_free(A);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sparse_io");
  TCase *tc = tcase_create("io");
  tcase_add_test(tc, real_matrix_market_files);
  tcase_add_test(tc, real_package_files);
  tcase_add_test(tc, mm_comments_blank_lines_crlf_case);
  tcase_add_test(tc, mm_duplicates_and_zeros);
  tcase_add_test(tc, mm_field_kinds);
  tcase_add_test(tc, mm_malformed);
  tcase_add_test(tc, values_correctly_rounded);
  tcase_add_test(tc, values_independent_of_locale);
  tcase_add_test(tc, hb_valid_forms);
  tcase_add_test(tc, hb_malformed);
  tcase_add_test(tc, csr_validation);
  tcase_add_test(tc, generators);
  tcase_add_test(tc, matrix_golden_digests);
  tcase_add_test(tc, writer_round_trip);
  suite_add_tcase(s, tc);
  return rt_run(s);
}
