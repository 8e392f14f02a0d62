/* Hostile inputs to the file readers (docs/reliability.md, catalogues R1-R14 and M1-M24) beyond the
 * malformed-file tables of test_sparse_io.c, test_grid_io.c and test_md.c: sizes the input cannot justify, devices that
 * never end, NUL and non-UTF-8 bytes, megabyte lines, and the special values a decimal can spell. Tests named "bug_"
 * failed before the fix they name. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
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
  } v[] = {{"nan", 0x7fc00000u, 0x7ff8000000000000u},   {"-inf", 0xff800000u, 0xfff0000000000000u},
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

/* ---- the MD readers (LAMMPS data, extended XYZ) and the checks rcl_md_check adds ------------------- */

static char md_dir[256];

/* Writes len bytes to md_dir/name; returns the path (static storage, one at a time). */
static const char *md_file(const char *name, const char *text, size_t len) {
  static char path[400];
  if (!md_dir[0]) {
    snprintf(md_dir, sizeof md_dir, "/tmp/reprocl-hostile-md-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(md_dir));
  }
  snprintf(path, sizeof path, "%s/%s", md_dir, name);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(text, 1, len, f), len);
  fclose(f);
  return path;
}

/* Removes this test's directory (each check test runs in its own process, with its own md_dir). */
static void md_cleanup(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", md_dir);
  if (md_dir[0]) ck_assert_int_eq(system(cmd), 0);
  md_dir[0] = '\0';
}

/* Reading name (holding text) fails with status and a message containing "name" and needle. */
static void md_fails(const char *name, const char *text, size_t len, int status, const char *needle) {
  const char *path = md_file(name, text, len);
  rcl_md_system *s = (rcl_md_system *)1;
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rt_fails(rcl_md_read(&s, &lj, path), status, needle);
  ck_assert_ptr_null(s);
  ck_assert_msg(strstr(rcl_error_last(), name) != NULL, "%s: the message does not name the file: %s", name,
                rcl_error_last());
  unlink(path);
}
#define MD_FAILS(name, text, needle) md_fails(name, text, sizeof(text) - 1, RCL_ERR_PARSE, needle)

#define LHEAD(n) "LAMMPS data file\n\n" n " atoms\n1 atom types\n\n0 10 xlo xhi\n0 10 ylo yhi\n0 10 zlo zhi\n\n"
#define LMASS "Masses\n\n1 1.0\n\n"

/* M1, M2 (bug): a one-line claim of 10^9 atoms made the readers allocate 72 GiB (LAMMPS: the atom table
 * before reading a line) or 56 GiB (XYZ: the system). Claims are now checked against the bytes that
 * follow; a plausible count is still read. Found while writing fuzz_md_lammps / fuzz_md_xyz. */
START_TEST(bug_md_absurd_atom_count) {
  MD_FAILS("m1.data", LHEAD("1000000000") LMASS "Atoms\n\n1 1 1 1 1\n",
           "m1.data: the header declares 1000000000 atoms but only");
  MD_FAILS("m2.xyz", "1000000000\ncomment\nAr 0 0 0\n", "m2.xyz:1: the file declares 1000000000 atoms but only");
  MD_FAILS("m2b.data", LHEAD("1073741825") LMASS, "more than reprocl supports (2^30)");
  MD_FAILS("m2c.xyz", "1073741825\n\n", "more than reprocl supports (2^30)");
  MD_FAILS("m2d.xyz", "99999999999999999999\n\n", "an XYZ file starts with the number of atoms");
  MD_FAILS("m2e.data", LHEAD("-5") LMASS, "m2e.data:3: the header declares -5 atoms");
  MD_FAILS("m2f.data", "LAMMPS data file\n\n2 atoms\n99 atom types\n", "declares 99 atom types; reprocl supports 1..8");
  /* above 4096 atoms the claim must fit the bytes that follow: 4097 minimal lines do */
  size_t cap = 16 + 4097 * 8, n = (size_t)snprintf(NULL, 0, "4097\n\n");
  char *text = malloc(cap);
  memcpy(text, "4097\n\n", n);
  for (int i = 0; i < 4097; i++) n += (size_t)sprintf(text + n, "H %d 0 0\n", i % 10);
  const char *ok = md_file("m2ok.xyz", text, n - 1); /* no newline after the last line */
  free(text);
  rcl_md_system *s;
  rt_ok(rcl_md_read(&s, NULL, ok));
  ck_assert_uint_eq(s->natoms, 4097);
  rcl_md_system_free(s);
  MD_FAILS("m2g.xyz", "4097\n\nH 0 0 0\n", "m2g.xyz:1: the file declares 4097 atoms but only 8 bytes");
  md_cleanup();
}
END_TEST

/* M3 (bug): reprocl md --input /dev/zero read one line forever, doubling its buffer until memory ran out.
 * Devices, directories and pipes are refused (the reader rewinds, so it needs a regular file). */
START_TEST(bug_md_not_a_file) {
  rcl_md_system *s = (rcl_md_system *)1;
  rt_fails(rcl_md_read(&s, NULL, "/dev/zero"), RCL_ERR_IO, "/dev/zero is not a regular file but a device");
  ck_assert_ptr_null(s);
  rt_fails(rcl_md_read(&s, NULL, "/tmp"), RCL_ERR_IO, "/tmp is not a regular file but a directory");
  char fifo[400];
  md_file("x", "", 0);
  snprintf(fifo, sizeof fifo, "%s/fifo", md_dir);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  int fd = open(fifo, O_RDWR | O_NONBLOCK); /* a writer, so that opening for reading does not block */
  ck_assert_int_ge(fd, 0);
  rt_fails(rcl_md_read(&s, NULL, fifo), RCL_ERR_IO, "is not a regular file but a pipe");
  close(fd);
  unlink(fifo);
  md_cleanup();
}
END_TEST

/* M4-M6 (bug): boxes that are not finite intervals. An open XYZ box whose margin of 1 is lost to
 * rounding (|x| >= 2^53 gave lo == hi; found by fuzz_md_lammps), a span that overflows, and a Lattice
 * plus Origin that overflows to inf were returned as systems. */
START_TEST(bug_md_box_overflow) {
  MD_FAILS("m4.xyz", "1\nno box\nAr 0 0 -2e25\n",
           "m4.xyz: the atoms span z = -2e+25 .. -2e+25: too large for an open box");
  MD_FAILS("m5.xyz", "2\n\nAr -1.7e308 0 0\nAr 1.7e308 0 0\n", "too large for an open box");
  MD_FAILS("m6.xyz", "1\nLattice=\"1e308 0 0 0 1 0 0 0 1\" Origin=\"1.5e308 0 0\"\nAr 1.6e308 0.5 0.5\n",
           "m6.xyz:2: Origin 1.5e+308 plus Lattice length 1e+308 is not a finite number");
  MD_FAILS("m6b.data", "LAMMPS data file\n\n1 atoms\n1 atom types\n\n5 5 xlo xhi\n0 1 ylo yhi\n0 1 zlo zhi\n\n" LMASS,
           "m6b.data: box xlo 5 is not below xhi 5");
  MD_FAILS("m6c.data", "LAMMPS data file\n\n1 atoms\n1 atom types\n\n0 1 xlo xhi\n0 1 ylo yhi\n0 1e999 zlo zhi\n\n",
           "m6c.data:8: the upper box bound \"1e999\" is not a number");
  md_cleanup();
}
END_TEST

/* M7-M12: zero atoms, non-finite and out-of-box positions, velocities, masses and coefficients. */
START_TEST(md_values) {
  MD_FAILS("m7.xyz", "0\n\n", "m7.xyz:1: the file declares 0 atoms");
  MD_FAILS("m7b.data", LHEAD("0"), "m7b.data: the file declares 0 atoms");
  MD_FAILS("m8.data", LHEAD("1") LMASS "Atoms\n\n1 1 inf 1 1\n", "m8.data:16: the coordinate is inf");
  MD_FAILS("m8b.data", LHEAD("1") LMASS "Atoms\n\n1 1 1 -nan 1\n", "m8b.data:16: the coordinate is -nan");
  MD_FAILS("m8c.xyz", "1\n\nAr 1 NaN 1\n", "m8c.xyz:3: the coordinate is NaN");
  MD_FAILS("m8d.xyz", "1\n\nAr 1 1e400 1\n", "m8d.xyz:3: the coordinate \"1e400\" is not a number");
  MD_FAILS("m8e.xyz", "1\n\nAr 1 0x1p99999 1\n", "the coordinate \"0x1p99999\" is not a number");
  MD_FAILS("m9.xyz", "1\nLattice=\"5 0 0 0 5 0 0 0 5\"\nAr 1 6 1\n", "m9.xyz:3: atom 1 lies outside the box: y = 6");
  MD_FAILS("m9b.data", LHEAD("1") LMASS "Atoms\n\n1 1 1 1 -1e-300\n",
           "m9b.data:16: atom 1 lies outside the box: z = -1e-300 is not in [0, 10]");
  MD_FAILS("m10.data", LHEAD("1") LMASS "Atoms\n\n1 1 1 1 1\n\nVelocities\n\n1 0 nan 0\n",
           "m10.data:20: the velocity is nan");
  MD_FAILS("m10b.xyz", "1\nProperties=species:S:1:pos:R:3:vel:R:3\nAr 0 0 0 1 inf 1\n",
           "m10b.xyz:3: the velocity is inf");
  MD_FAILS("m11.data", LHEAD("1") "Masses\n\n1 -1\n\nAtoms\n\n1 1 1 1 1\n",
           "m11.data:12: the mass of type 1 is -1; it must be positive");
  MD_FAILS("m11b.data", LHEAD("1") "Masses\n\n1 0\n\nAtoms\n\n1 1 1 1 1\n", "the mass of type 1 is 0");
  MD_FAILS("m12.data", LHEAD("1") LMASS "Pair Coeffs\n\n1 -1 1\n\n", "m12.data:16: epsilon -1 and sigma 1");
  MD_FAILS("m12b.data", LHEAD("1") LMASS "PairIJ Coeffs\n\n1 1 1 0\n\n", "epsilon 1 and sigma 0");
  MD_FAILS("m12c.data", LHEAD("1") LMASS "Pair Coeffs\n\n2 1 1\n\n", "m12c.data:16: coefficients for type 2 2");
  md_cleanup();
}
END_TEST

/* M13-M16: what the reader accepts is then checked against the force field: a cutoff above half the
 * box, outside [0.01, 1000], or a system whose atoms sit on top of each other. */
START_TEST(md_checks_after_reading) {
  const char *path = md_file("m13.data", LHEAD("2") LMASS "Atoms\n\n1 1 1 1 1\n2 1 2 2 2\n",
                             sizeof(LHEAD("2") LMASS "Atoms\n\n1 1 1 1 1\n2 1 2 2 2\n") - 1);
  rcl_md_system *s;
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rt_ok(rcl_md_read(&s, &lj, path));
  lj.cutoff = 5.5; /* box 10: half is 5 */
  rt_fails(rcl_md_check(s, &lj, RCL_F32), RCL_ERR_INVALID_ARG,
           "cutoff 5.5 is larger than half the periodic box length along x");
  lj.cutoff = 1e-3;
  rt_fails(rcl_md_check(s, &lj, RCL_F64), RCL_ERR_INVALID_ARG, "is outside [0.01, 1000]");
  lj.cutoff = NAN;
  rt_fails(rcl_md_check(s, &lj, RCL_F64), RCL_ERR_INVALID_ARG, "cutoff");
  lj.cutoff = 2.5;
  rt_ok(rcl_md_check(s, &lj, RCL_F32));
  s->pos[0] = NAN; /* a caller-built system: rcl_md_check catches what a reader would have refused */
  rt_fails(rcl_md_check(s, &lj, RCL_F32), RCL_ERR_INVALID_ARG, "non-finite position x = nan");
  s->pos[0] = 11;
  rt_fails(rcl_md_check(s, &lj, RCL_F32), RCL_ERR_INVALID_ARG, "atom 1 lies outside the box");
  s->pos[0] = 1;
  s->type[1] = 3;
  rt_fails(rcl_md_check(s, &lj, RCL_F32), RCL_ERR_INVALID_ARG, "atom 2 has type 3");
  rcl_md_system_free(s);
  unlink(path);
  md_cleanup();
}
END_TEST

/* M17-M24: malformed structure: huge lines, NUL and non-UTF-8 bytes, too many species, long names,
 * CRLF, a missing last newline, foreign sections, a title only. */
START_TEST(md_structure) {
  size_t big = (size_t)4 << 20;
  char *t = malloc(2 * big + 512);
  /* a 4 MiB title and a 4 MiB comment line: linear time, later line numbers right */
  size_t n = 0;
  memset(t, 'T', big);
  n = big;
  n += (size_t)sprintf(t + n, "\n\n2 atoms\n1 atom types # ");
  memset(t + n, 'c', big);
  n += big;
  n += (size_t)sprintf(t + n, "\n0 1 xlo xhi\n0 1 ylo yhi\n0 1 zlo zhi\n\n" LMASS "Atoms\n\n1 1 0 0 0\n2 1 0 0 9\n");
  md_fails("m17.data", t, n, RCL_ERR_PARSE, "m17.data:16: atom 2 lies outside the box: z = 9");
  /* a 4 MiB XYZ comment line */
  n = (size_t)sprintf(t, "1\n");
  memset(t + n, 'c', big);
  n += big;
  n += (size_t)sprintf(t + n, "\nAr 0 0\n");
  md_fails("m17b.xyz", t, n, RCL_ERR_PARSE, "m17b.xyz:3: an atom line has 4 columns");
  free(t);
  static const char nul[] = LHEAD("1") LMASS "Atoms\n\n1 1 0\0 0 0\n";
  md_fails("m18.data", nul, sizeof nul - 1, RCL_ERR_PARSE,
           "m18.data:16: an Atoms line of atom_style atomic has 5 or 8");
  MD_FAILS("m18b.xyz", "1\n\nAr 0 \xc3\xa9 0\n", "m18b.xyz:3: the coordinate \"\xc3\xa9\" is not a number");
  MD_FAILS("m19.xyz", "9\n\nA 0 0 0\nB 0 0 0\nC 0 0 0\nD 0 0 0\nE 0 0 0\nF 0 0 0\nG 0 0 0\nH 0 0 0\nI 0 0 0\n",
           "m19.xyz:11: species \"I\": at most 8 species are supported");
  MD_FAILS("m20.xyz", "1\n\nAbcdefghijklmnopqrstuvwxyzabcdefghijklmnop 0 0 0\n", "at most 8 species are supported");
  MD_FAILS("m21.data", LHEAD("1") LMASS "Bonds\n\n1 1 1 1\n", "section \"Bonds\" is not supported");
  MD_FAILS("m21b.data", "LAMMPS data file\n\n1 atoms\n1 atom types\n5 bonds\n", "molecular topology is not supported");
  MD_FAILS("m22.data", "just a title", "m22.data: the header has no \"N atoms\" line");
  MD_FAILS("m22b.xyz", "1\n", "m22b.xyz:2: the file ends before the comment line");
  MD_FAILS("m22c.xyz", "2\n\nAr 0 0 0\n", "m22c.xyz:3: the file ends after 1 of 2 atoms");
  MD_FAILS("m22d.xyz", "5000\n\nAr 0 0 0\n", "m22d.xyz:1: the file declares 5000 atoms but only 9 bytes");
  /* CRLF line ends and a missing last newline are read */
  static const char crlf[] = "LAMMPS data file\r\n\r\n1 atoms\r\n1 atom types\r\n\r\n0 1 xlo xhi\r\n0 1 ylo yhi\r\n"
                             "0 1 zlo zhi\r\n\r\nMasses\r\n\r\n1 1.0\r\n\r\nAtoms\r\n\r\n1 1 0.5 0.5 0.5";
  const char *path = md_file("m23.data", crlf, sizeof crlf - 1);
  rcl_md_system *s;
  rt_ok(rcl_md_read(&s, NULL, path));
  ck_assert(s->natoms == 1 && s->pos[2] == 0.5);
  rcl_md_system_free(s);
  unlink(path);
  rcl_md_system *none = (rcl_md_system *)1;
  rt_fails(rcl_md_read(&none, NULL, md_file("m24.data", "", 0)), RCL_ERR_PARSE, "the file is empty");
  md_cleanup();
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
  tcase_add_test(host, bug_md_absurd_atom_count);
  tcase_add_test(host, bug_md_not_a_file);
  tcase_add_test(host, bug_md_box_overflow);
  tcase_add_test(host, md_values);
  tcase_add_test(host, md_checks_after_reading);
  tcase_add_test(host, md_structure);
  suite_add_tcase(s, host);
  rt_add_device_presence(s);
  TCase *dev = tcase_create("devices");
  tcase_add_test(dev, bug_reader_on_a_device);
  suite_add_tcase(s, dev);
  return rt_run(s);
}
