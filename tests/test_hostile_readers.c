/* Hostile inputs to the file readers (docs/reliability.md, catalogue R1-R14) beyond the malformed-file
 * tables of test_sparse_io.c and test_grid_io.c: sizes the input cannot justify, devices that never end,
 * NUL and non-UTF-8 bytes, megabyte lines, and the special values a decimal can spell. Tests named
 * "bug_" failed before the fix they name. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "testlib.h"

static const char mm_head[] = "%%MatrixMarket matrix coordinate real general\n";

static int mm(rcl_csr **A, const char *text, size_t len, rcl_dtype dt) {
  char *buf = malloc(len ? len : 1); /* exactly the text's length: ASan sees any over-read */
  memcpy(buf, text, len);
  int rc = rcl_mm_parse(A, buf, len, "h.mtx", dt);
  free(buf);
  return rc;
}

/* Bug: a size line claiming 512M (or 2^32-1) rows and no entries made the reader allocate and fill a
 * 4 GiB (32 GiB) row-pointer array for a 60-byte file. Found by fuzz_matrix_market. */
START_TEST(bug_mm_absurd_row_count) {
  rcl_csr *A = NULL;
  static const char *const sizes[] = {"536870912 1 0\n", "4294967295 4294967295 0\n", "4294967295 1 1\n1 1 1\n"};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    char t[256];
    snprintf(t, sizeof t, "%s%s", mm_head, sizes[i]);
    rt_fails(mm(&A, t, strlen(t), RCL_F32), RCL_ERR_PARSE, "h.mtx:2:");
    ck_assert_ptr_nonnull(strstr(rcl_error_last(), "refused as implausible"));
    ck_assert_ptr_null(A);
  }
  /* A million empty rows (8 MB of row pointers) is plausible and read. */
  char t[256];
  snprintf(t, sizeof t, "%s1000000 1000000 1\n1000000 1 2.5\n", mm_head);
  rt_ok(mm(&A, t, strlen(t), RCL_F64));
  ck_assert_uint_eq(A->nrows, 1000000);
  ck_assert_uint_eq(A->nnz, 1);
  rcl_csr_free(A);
}
END_TEST

/* The same hole in the Harwell-Boeing reader (NROW on the type line). */
START_TEST(bug_hb_absurd_row_count) {
  static const char hb[] = "Hostile                                                                 HOSTILE \n"
                           "             3             1             1             1             0\n"
                           "RUA                536870912             1             1             0\n"
                           "(2I4)           (1I4)           (1E12.4)            \n"
                           "   1   2\n"
                           "   1\n"
                           "  1.0000E+00\n";
  rcl_csr *A = NULL;
  rt_fails(rcl_hb_parse(&A, hb, sizeof hb - 1, "h.rua", RCL_F64), RCL_ERR_PARSE, "refused as implausible");
  ck_assert_ptr_null(A);
}
END_TEST

/* Bug: reading /dev/zero (or a kernel file linked to it) never ended: the whole-file reader doubled its
 * buffer until memory ran out. Devices are refused; pipes (standard input) are still read. */
START_TEST(bug_reader_on_a_device) {
  rcl_csr *A = NULL;
  rt_fails(rcl_matrix_read(&A, "/dev/zero", RCL_F32), RCL_ERR_IO, "/dev/zero: is a device, not a file");
  rt_fails(rcl_mm_read(&A, "/dev/urandom", RCL_F32), RCL_ERR_IO, "is a device");
  rcl_grid g;
  rt_fails(rcl_grid_read(&g, "/dev/zero", RCL_GRID_FORMAT_AUTO, RCL_F32, 4, 4), RCL_ERR_IO, "not a regular file");
  /* The kernel-source reader behind REPROCL_KERNEL_DIR: a directory whose reduce.cl is /dev/zero. */
  char dir[] = "/tmp/reprocl-hostile-XXXXXX", link[64];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  static const char *const parts[] = {"rcl_portable.cl", "rcl_softfloat.cl", "rcl_exact.cl", "prelude.cl"};
  for (size_t i = 0; i < 4; i++) {
    char from[512], to[128];
    snprintf(from, sizeof from, "%s/cl/%s", REPROCL_SOURCE_DIR, parts[i]);
    snprintf(to, sizeof to, "%s/%s", dir, parts[i]);
    ck_assert_int_eq(symlink(from, to), 0);
  }
  snprintf(link, sizeof link, "%s/reduce.cl", dir);
  ck_assert_int_eq(symlink("/dev/zero", link), 0);
  setenv("REPROCL_KERNEL_DIR", dir, 1);
  rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
  o.device = "0";
  rcl_context *c;
  rt_ok(rcl_context_create(&c, &o));
  float x[3] = {1, 2, 3}, r;
  rt_fails(rcl_sum_f32(&r, c, x, 3, NULL), RCL_ERR_IO, "is a device, not a file");
  rcl_context_free(c);
  unsetenv("REPROCL_KERNEL_DIR");
  for (size_t i = 0; i < 4; i++) {
    char to[128];
    snprintf(to, sizeof to, "%s/%s", dir, parts[i]);
    unlink(to);
  }
  unlink(link);
  rmdir(dir);
}
END_TEST

/* NUL and non-UTF-8 bytes: in a comment they are skipped, in an entry they are a located error. */
START_TEST(mm_binary_bytes) {
  rcl_csr *A = NULL;
  static const char ok[] = "%%MatrixMarket matrix coordinate real general\n% \xff\xfe\x80 \0 comment\n1 1 1\n1 1 2\n";
  rt_ok(mm(&A, ok, sizeof ok - 1, RCL_F32));
  rcl_csr_free(A);
  static const char nul[] = "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1\0 2\n";
  rt_fails(mm(&A, nul, sizeof nul - 1, RCL_F32), RCL_ERR_PARSE, "h.mtx:3:");
  static const char utf[] = "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 \xc3\xa9\n";
  rt_fails(mm(&A, utf, sizeof utf - 1, RCL_F32), RCL_ERR_PARSE, "h.mtx:3:");
  static const char banner[] = "%%MatrixMarket\xff matrix coordinate real general\n1 1 0\n";
  rt_fails(mm(&A, banner, sizeof banner - 1, RCL_F32), RCL_ERR_PARSE, "missing the Matrix Market banner");
}
END_TEST

/* A 4 MiB comment line and a 4 MiB blank run: read in linear time, later lines keep their numbers. */
START_TEST(mm_huge_lines) {
  size_t big = (size_t)4 << 20;
  char *t = malloc(big + 256);
  size_t n = (size_t)sprintf(t, "%s%%", mm_head);
  memset(t + n, 'c', big);
  n += big;
  n += (size_t)sprintf(t + n, "\n2 2 1\n3 1 1\n");
  rcl_csr *A = NULL;
  rt_fails(mm(&A, t, n, RCL_F32), RCL_ERR_PARSE, "h.mtx:4: row index 3 is outside 1..2");
  n = (size_t)sprintf(t, "%s2 2 1\n1 1 ", mm_head);
  memset(t + n, ' ', big);
  n += big;
  t[n++] = '7';
  rt_ok(mm(&A, t, n, RCL_F32));
  ck_assert(((float *)A->values)[0] == 7.0f);
  rcl_csr_free(A);
  free(t);
}
END_TEST

/* Decimal spellings of special values are read as strtod reads them (the documented correctly rounded
 * conversion): nan, -inf, an overflowing 1e999 (+inf), an underflowing 1e-999 (+0), hexadecimal. */
START_TEST(mm_special_value_spellings) {
  static const struct {
    const char *text;
    uint32_t f32;
    uint64_t f64;
  } v[] = {{"nan", 0x7fc00000u, 0x7ff8000000000000u}, {"-inf", 0xff800000u, 0xfff0000000000000u},
           {"1e999", 0x7f800000u, 0x7ff0000000000000u}, {"1e-999", 0u, 0u},
           {"-0", 0x80000000u, 0x8000000000000000u},    {"0x1p3", 0x41000000u, 0x4020000000000000u},
           {"1e39", 0x7f800000u, 0x48078287f49c4a1du}};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    char t[256];
    snprintf(t, sizeof t, "%s1 1 1\n1 1 %s\n", mm_head, v[i].text);
    rcl_csr *A = NULL;
    rt_ok(mm(&A, t, strlen(t), RCL_F32));
    uint32_t b32;
    memcpy(&b32, A->values, 4);
    ck_assert_msg(b32 == v[i].f32, "%s as f32: 0x%08x", v[i].text, b32);
    rcl_csr_free(A);
    rt_ok(mm(&A, t, strlen(t), RCL_F64));
    uint64_t b64;
    memcpy(&b64, A->values, 8);
    ck_assert_msg(b64 == v[i].f64, "%s as f64: 0x%016llx", v[i].text, (unsigned long long)b64);
    rcl_csr_free(A);
  }
}
END_TEST

/* Raw grids whose caller-given size overflows, or does not match the file. */
START_TEST(grid_raw_sizes) {
  char path[] = "/tmp/reprocl-hostile-raw-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  float v[4] = {1, 2, 3, 4};
  ck_assert_int_eq(write(fd, v, sizeof v), (ssize_t)sizeof v);
  close(fd);
  rcl_grid g;
  int rc = rcl_grid_read(&g, path, RCL_GRID_FORMAT_RAW, RCL_F32, (size_t)1 << 30, (size_t)1 << 30);
  ck_assert_msg(rc == RCL_ERR_PARSE || rc == RCL_ERR_OVERFLOW || rc == RCL_ERR_INVALID_ARG, "%s", rcl_error_last());
  ck_assert_ptr_nonnull(strstr(rcl_error_last(), path));
  ck_assert_ptr_null(g.data);
  rc = rcl_grid_read(&g, path, RCL_GRID_FORMAT_RAW, RCL_F32, SIZE_MAX, 2);
  ck_assert_msg(rc != 0 && g.data == NULL, "SIZE_MAX width accepted");
  rc = rcl_grid_read(&g, path, RCL_GRID_FORMAT_RAW, RCL_F32, 3, 1);
  ck_assert_msg(rc == RCL_ERR_PARSE, "a 4-value file read as 3x1: %s", rcl_error_last());
  rt_ok(rcl_grid_read(&g, path, RCL_GRID_FORMAT_RAW, RCL_F32, 2, 2));
  rcl_grid_free(&g);
  unlink(path);
}
END_TEST

int main(void) {
  Suite *s = suite_create("hostile_readers");
  TCase *host = tcase_create("host");
  tcase_set_timeout(host, 0);
  tcase_add_test(host, bug_mm_absurd_row_count);
  tcase_add_test(host, bug_hb_absurd_row_count);
  tcase_add_test(host, mm_binary_bytes);
  tcase_add_test(host, mm_huge_lines);
  tcase_add_test(host, mm_special_value_spellings);
  tcase_add_test(host, grid_raw_sizes);
  suite_add_tcase(s, host);
  rt_add_device_presence(s);
  TCase *dev = tcase_create("devices");
  tcase_add_test(dev, bug_reader_on_a_device);
  suite_add_tcase(s, dev);
  return rt_run(s);
}
