/* The failing-allocator test mode: each scenario (a sequence of API calls) runs once to count its host
 * allocations, then once more for every k in 1..count with the k-th allocation failing. Each run must
 * return a status (RCL_ERR_OUT_OF_MEMORY with its message; the CLI an exit status and an error line),
 * never crash, and leave behind nothing it took: no host block (the wrappers' live count returns to
 * where it was) and no OpenCL object (the context's reference count returns to where it was, checked on
 * PoCL, whose objects each hold one on their context). Run under ASan/LSan or valgrind, the same runs
 * also prove that no byte leaks and no freed memory is touched. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "testlib.h"

/* ---- scenarios ---------------------------------------------------------------------------------- */

typedef struct {
  size_t dev; /* device index, for device scenarios */
  int cli_exit; /* CLI scenarios: the exit status */
} scen_arg;

typedef int (*scen_fn)(scen_arg *a);

static int open_ctx(rcl_context **c, size_t dev, rcl_mode mode) {
  rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
  char spec[32];
  snprintf(spec, sizeof spec, "%zu", dev);
  o.device = spec;
  o.mode = mode;
  o.cache_dir = "/nonexistent/reprocl-failalloc-cache"; /* exercises the strdup; never written here */
  return rcl_context_create(c, &o);
}

static int scen_devices(scen_arg *a) {
  (void)a;
  rcl_device_info *list, d;
  size_t n;
  int rc = rcl_devices(&list, &n);
  if (rc) return rc;
  rcl_devices_free(list);
  if ((rc = rcl_device_find(&d, "0")) != 0) return rc;
  return rcl_device_find(&d, "portable:");
}

static int scen_reference(scen_arg *a) {
  (void)a;
  static float xf[3000], yf[3000];
  static double xd[3000], yd[3000];
  rcl_generate(xf, RCL_F32, 3000, RCL_GEN_SPECIAL, 1);
  rcl_generate(yf, RCL_F32, 3000, RCL_GEN_WIDE, 2);
  rcl_generate(xd, RCL_F64, 3000, RCL_GEN_CANCEL, 3);
  rcl_generate(yd, RCL_F64, 3000, RCL_GEN_UNIFORM, 4);
  for (int op = 0; op < 3; op++)
    for (int m = 0; m < 2; m++) {
      unsigned char out[8];
      int rc = rcl_ref_reduce(out, (rcl_reduce_op)op, RCL_F32, (rcl_reduce_mode)m, 3000, xf, yf);
      if (!rc) rc = rcl_ref_reduce(out, (rcl_reduce_op)op, RCL_F64, (rcl_reduce_mode)m, 3000, xd, yd);
      if (rc) return rc;
    }
  return 0;
}

static int scen_context(scen_arg *a) {
  rcl_context *c, *n;
  int rc = open_ctx(&c, a->dev, RCL_MODE_REPRODUCIBLE);
  if (rc) return rc;
  rc = rcl_context_clone(&n, c, RCL_MODE_NATIVE);
  if (!rc) rcl_context_free(n);
  rcl_context_free(c);
  return rc;
}

/* Wrapping the caller's objects: the caller's context must get back every reference it lent. */
static int scen_wrap(scen_arg *a) {
  rcl_context *base = rt_ctx(a->dev), *c;
  int rc = rcl_context_wrap(&c, rcl_context_cl_context(base), rcl_context_cl_device(base), rcl_context_cl_queue(base),
                            NULL);
  if (rc) return rc;
  float x[5] = {1, 2, 3, 4, 5}, r;
  rc = rcl_sum_f32(&r, c, x, 5, NULL);
  rcl_context_free(c);
  return rc;
}

static const char user_src[] = "__kernel void k(__global float *a) { a[0] = rcl_add_f32(a[0], 1.0f); }\n";

static int scen_program(scen_arg *a) {
  rcl_program_options po = RCL_PROGRAM_OPTIONS_INIT;
  po.flags = RCL_PROGRAM_PRELUDE_OPS;
  po.options = "-DUSER_OPTION=1";
  rcl_program *p;
  int rc = rcl_program_build(&p, rt_ctx(a->dev), user_src, 0, &po);
  if (rc) return rc;
  cl_kernel k;
  rc = rcl_program_create_kernel(&k, p, "k");
  if (!rc) clReleaseKernel(k);
  rcl_program_free(p);
  return rc;
}

/* A build that fails: without injected failures it returns RCL_ERR_BUILD (see expect_ok below). */
static int scen_build_error(scen_arg *a) {
  rcl_program_options po = RCL_PROGRAM_OPTIONS_INIT;
  po.flags = RCL_PROGRAM_PRELUDE_OPS;
  rcl_program *p = NULL;
  int rc = rcl_program_build(&p, rt_ctx(a->dev), "__kernel void k(__global float *a) { a[0] = undefined_x; }\n",
                             0, &po);
  rcl_program_free(p);
  return rc;
}

/* Every reduction entry point on a context, f64 where the device has it. */
static int reductions(rcl_context *c, size_t dev) {
  static float xf[5000], yf[5000];
  static double xd[5000];
  rcl_generate(xf, RCL_F32, 5000, RCL_GEN_WIDE, 5);
  rcl_generate(yf, RCL_F32, 5000, RCL_GEN_UNIFORM, 6);
  rcl_generate(xd, RCL_F64, 5000, RCL_GEN_CANCEL, 7);
  rcl_reduce_options o = RCL_REDUCE_OPTIONS_INIT;
  float rf, alpha = 0.5f;
  double rd;
  int rc = 0;
  for (int m = 0; m < 2 && !rc; m++) {
    o.mode = (rcl_reduce_mode)m;
    rc = rcl_sum_f32(&rf, c, xf, 5000, &o);
    if (!rc) rc = rcl_dot_f32(&rf, c, xf, yf, 5000, &o);
    if (!rc) rc = rcl_nrm2_f32(&rf, c, yf, 5000, &o);
    if (!rc && rcl_device_profile_support(rcl_context_profile(c), RCL_FAMILY_REDUCE, RCL_F64, NULL) != RCL_SUPPORT_NONE)
      rc = rcl_sum_f64(&rd, c, xd, 5000, &o);
  }
  if (!rc) rc = rcl_axpy(yf, c, RCL_F32, 5000, &alpha, xf, 0);
  if (!rc) rc = rcl_scal(yf, c, RCL_F32, 5000, &alpha, 0);
  (void)dev;
  return rc;
}

/* A fresh context: every program is built (and its source copied) during the run. */
static int scen_reduce_cold(scen_arg *a) {
  rcl_context *c;
  int rc = open_ctx(&c, a->dev, RCL_MODE_REPRODUCIBLE);
  if (rc) return rc;
  rc = reductions(c, a->dev);
  rcl_context_free(c);
  return rc;
}

/* The shared context of the suite: programs come from its cache; the enqueue path alone. */
static int scen_reduce_warm(scen_arg *a) { return reductions(rt_ctx(a->dev), a->dev); }

/* Kernels read from disk (REPROCL_KERNEL_DIR): the file reader's growing buffer. */
static int scen_kernel_dir(scen_arg *a) {
  setenv("REPROCL_KERNEL_DIR", REPROCL_SOURCE_DIR "/cl", 1);
  rcl_context *c;
  int rc = open_ctx(&c, a->dev, RCL_MODE_REPRODUCIBLE);
  if (!rc) {
    float x[300], r;
    rcl_generate(x, RCL_F32, 300, RCL_GEN_WIDE, 8);
    rc = rcl_sum_f32(&r, c, x, 300, NULL);
    rcl_context_free(c);
  }
  unsetenv("REPROCL_KERNEL_DIR");
  return rc;
}

/* ---- the readers and the other kernel families ---------------------------------------------------- */

static int scen_matrix_readers(scen_arg *a) {
  (void)a;
  rcl_csr *A = NULL;
  int rc = rcl_matrix_read(&A, REPROCL_SOURCE_DIR "/tests/data/matrices/LFAT5.mtx", RCL_F64);
  rcl_csr_free(A);
  A = NULL;
  if (!rc) rc = rcl_matrix_read(&A, REPROCL_SOURCE_DIR "/tests/data/matrices/m_05_05_crk.mtx", RCL_F32);
  rcl_csr_free(A);
  A = NULL;
  static const char hb[] = "Test matrix                                                             TEST    \n"
                           "             4             1             1             2             0\n"
                           "RUA                        3             3             4             0\n"
                           "(4I4)           (4I4)           (2E12.4)            \n"
                           "   1   3   4   5\n"
                           "   1   2   1   3\n"
                           "  1.0000E+00  2.0000E+00\n"
                           "  3.0000E+00  4.0000E+00\n";
  if (!rc) rc = rcl_hb_parse(&A, hb, sizeof hb - 1, "t.rua", RCL_F32);
  rcl_csr_free(A);
  return rc;
}

static char img_dir[] = "/tmp/reprocl-failalloc-img-XXXXXX";

static int scen_grid_io(scen_arg *a) {
  (void)a;
  char png[96], pgm[96], raw[96];
  snprintf(png, sizeof png, "%s/g.png", img_dir);
  snprintf(pgm, sizeof pgm, "%s/g.pgm", img_dir);
  snprintf(raw, sizeof raw, "%s/g.raw", img_dir);
  rcl_grid g = {0}, h = {0};
  int rc = rcl_grid_alloc(&g, RCL_F32, 7, 5);
  if (!rc) rc = rcl_grid_generate(&g, RCL_GRID_INIT_RANDOM, 3);
  if (!rc) rc = rcl_grid_write_image(&g, png, RCL_GRID_FORMAT_AUTO, 0, 0);
  if (!rc) rc = rcl_grid_write_image(&g, pgm, RCL_GRID_FORMAT_AUTO, 0, 0);
  if (!rc) rc = rcl_grid_write_raw(&g, raw);
  if (!rc) rc = rcl_grid_read(&h, png, RCL_GRID_FORMAT_AUTO, RCL_F64, 0, 0);
  rcl_grid_free(&h);
  if (!rc) rc = rcl_grid_read(&h, pgm, RCL_GRID_FORMAT_AUTO, RCL_F32, 0, 0);
  rcl_grid_free(&h);
  if (!rc) rc = rcl_grid_read(&h, raw, RCL_GRID_FORMAT_RAW, RCL_F32, 7, 5);
  rcl_grid_free(&h);
  rcl_grid_free(&g);
  return rc;
}

/* SpMV (both contracts), CG, a stencil and SOR on the suite's warm context. */
static int scen_other_families(scen_arg *a) {
  rcl_context *c = rt_ctx(a->dev);
  rcl_csr *A = NULL;
  int rc = rcl_csr_poisson2d(&A, RCL_F32, 12);
  float x[144], y[144], one = 1.0f, zero = 0.0f;
  rcl_generate(x, RCL_F32, 144, RCL_GEN_UNIFORM, 9);
  for (int k = 0; k < 2 && !rc; k++) {
    rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
    o.contract = k ? RCL_SPMV_EXACT : RCL_SPMV_ORDERED;
    rc = rcl_spmv(y, c, A, &one, x, &zero, &o);
  }
  rcl_spmv_matrix *M = NULL;
  if (!rc) rc = rcl_spmv_matrix_create(&M, c, A);
  if (!rc) {
    rcl_cg_options co = RCL_CG_OPTIONS_INIT;
    co.max_iterations = 5;
    rcl_cg_result res = {0};
    rc = rcl_cg(y, &res, M, x, &co);
    if (rc == RCL_ERR_NO_CONVERGENCE) rc = 0; /* 5 iterations are not meant to converge */
    rcl_cg_result_free(&res);
  }
  rcl_spmv_matrix_free(M);
  rcl_csr_free(A);
  float g[100], out[100];
  rcl_generate(g, RCL_F32, 100, RCL_GEN_UNIFORM, 4);
  rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
  if (!rc) rc = rcl_stencil(out, c, &st, RCL_F32, 10, 10, 3, g, NULL);
  rcl_sor_desc sd = RCL_SOR_DESC_INIT;
  float resid;
  if (!rc) rc = rcl_sor(g, &resid, c, &sd, RCL_F32, 10, 10, 2, NULL, NULL);
  return rc;
}

/* ---- the CLI, in process (its sources are compiled into this test with main renamed) ----------- */
#ifdef REPROCL_HAVE_CLI

int rcl_cli_main(int argc, char **argv);

static char cli_err_path[] = "/tmp/reprocl-failalloc-XXXXXX";
static int cli_err_fd = -1;

/* Runs the CLI with stdout to /dev/null and stderr to a file, restoring both. */
static int run_cli(scen_arg *a, char **argv) {
  int argc = 0;
  while (argv[argc]) argc++;
  if (cli_err_fd < 0) cli_err_fd = mkstemp(cli_err_path);
  ck_assert_int_ge(cli_err_fd, 0);
  fflush(stdout);
  fflush(stderr);
  int so = dup(1), se = dup(2), devnull = open("/dev/null", O_WRONLY);
  ck_assert_int_ge(devnull, 0);
  ck_assert_int_eq(ftruncate(cli_err_fd, 0), 0);
  lseek(cli_err_fd, 0, SEEK_SET);
  dup2(devnull, 1);
  dup2(cli_err_fd, 2);
  a->cli_exit = rcl_cli_main(argc, argv);
  fflush(stdout);
  fflush(stderr);
  dup2(so, 1);
  dup2(se, 2);
  close(so);
  close(se);
  close(devnull);
  return a->cli_exit;
}

static int cli_stderr_contains(const char *needle) {
  char buf[8192];
  ssize_t n = pread(cli_err_fd, buf, sizeof buf - 1, 0);
  if (n < 0) return 0;
  buf[n] = '\0';
  return strstr(buf, needle) != NULL;
}

static int scen_cli_run(scen_arg *a) {
  char dev[32];
  snprintf(dev, sizeof dev, "%zu", a->dev);
  char *argv[] = {"reprocl", "run", "reduce", "--op", "dot", "--mode", "exact", "--n", "3000", "--dist", "special",
                  "--device", dev, "--native", "--json", NULL};
  return run_cli(a, argv);
}

static int scen_cli_devices(scen_arg *a) {
  char *argv[] = {"reprocl", "devices", "--json", NULL};
  return run_cli(a, argv);
}
#else
static int cli_err_fd = -1;
static char cli_err_path[] = "";
static int cli_stderr_contains(const char *needle) {
  (void)needle;
  return 0;
}
#endif

/* ---- the driver ------------------------------------------------------------------------------------ */

typedef struct {
  const char *name;
  scen_fn fn;
  int on_device;
  int is_cli;
  int expect_rc; /* the status of a run without injected failures */
} scenario;

static cl_uint ctx_refs(size_t dev) {
  cl_uint r = 0;
  clGetContextInfo(rcl_context_cl_context(rt_ctx(dev)), CL_CONTEXT_REFERENCE_COUNT, sizeof r, &r, NULL);
  return r;
}

/* The context's reference count once the device is idle: PoCL drops the references of finished commands'
 * buffers and events from its worker threads, a moment after clFinish returns, so a busy machine may see
 * them briefly. A real leak never settles: after 2 s the count is taken as it is. */
static cl_uint ctx_refs_settled(size_t dev, cl_uint want) {
  clFinish(rcl_context_cl_queue(rt_ctx(dev)));
  cl_uint r = ctx_refs(dev);
  for (int i = 0; i < 400 && r != want; i++) {
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
    r = ctx_refs(dev);
  }
  return r;
}

/* The baseline: the count once two reads 20 ms apart agree. */
static cl_uint ctx_refs_baseline(size_t dev) {
  clFinish(rcl_context_cl_queue(rt_ctx(dev)));
  cl_uint r = ctx_refs(dev), prev;
  do {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    prev = r;
    r = ctx_refs(dev);
  } while (r != prev);
  return r;
}

static int is_pocl(size_t dev) { return strstr(rcl_context_profile(rt_ctx(dev))->platform_name, "Portable") != NULL; }

static void sweep(const scenario *s, size_t dev) {
  scen_arg a = {dev, 0};
  int check_refs = s->on_device && is_pocl(dev);
  if (s->on_device) rt_ctx(dev); /* the shared context exists before the baseline is taken */
  /* A first run warms caches outside the library (the driver's compiler, ICD loading). */
  rcl__alloc_fail_at(0);
  int rc = s->fn(&a);
  ck_assert_msg(rc == s->expect_rc, "%s: returned %d, expected %d (%s)", s->name, rc, s->expect_rc, rcl_error_last());
  long live0 = rcl__alloc_live();
  cl_uint refs0 = check_refs ? ctx_refs_baseline(dev) : 0;
  rcl__alloc_fail_at(0);
  rc = s->fn(&a);
  long count = rcl__alloc_count();
  ck_assert_msg(rc == s->expect_rc, "%s: returned %d, expected %d (%s)", s->name, rc, s->expect_rc, rcl_error_last());
  ck_assert_msg(rcl__alloc_live() == live0, "%s: %ld host block(s) not freed by a successful run", s->name,
                rcl__alloc_live() - live0);
  for (long k = 1; k <= count; k++) {
    rcl_error_clear();
    rcl__alloc_fail_at(k);
    rc = s->fn(&a);
    long reached = rcl__alloc_count();
    rcl__alloc_fail_at(-1);
    ck_assert_msg(reached >= k, "%s: allocation %ld of %ld was never made (the scenario is not deterministic)",
                  s->name, k, count);
    if (s->is_cli) {
      ck_assert_msg(rc != 0 && rc != s->expect_rc, "%s, allocation %ld failing: exit status %d", s->name, k, rc);
      ck_assert_msg(cli_stderr_contains("out of host memory"),
                    "%s, allocation %ld failing: stderr does not report the failure", s->name, k);
    } else {
      ck_assert_msg(rc == RCL_ERR_OUT_OF_MEMORY, "%s, allocation %ld of %ld failing: returned %s, expected "
                    "RCL_ERR_OUT_OF_MEMORY (%s)", s->name, k, count, rcl_status_name(rc), rcl_error_last());
      ck_assert_msg(strstr(rcl_error_last(), "out of host memory") != NULL,
                    "%s, allocation %ld failing: the message \"%s\" does not say what failed", s->name, k,
                    rcl_error_last());
    }
    ck_assert_msg(rcl__alloc_live() == live0, "%s, allocation %ld of %ld failing: %ld host block(s) leaked", s->name,
                  k, count, rcl__alloc_live() - live0);
    if (check_refs) {
      cl_uint refs = ctx_refs_settled(dev, refs0);
      ck_assert_msg(refs == refs0, "%s, allocation %ld of %ld failing: %d OpenCL object(s) leaked", s->name, k, count,
                    (int)(refs - refs0));
    }
  }
  /* The context still works after all of that. */
  if (s->on_device) {
    float x[3] = {1, 2, 4}, r = 0;
    rt_ok(rcl_sum_f32(&r, rt_ctx(dev), x, 3, NULL));
    ck_assert_float_eq(r, 7.0f);
  }
  rt_note("%s%s%s: %ld allocation(s), each failed in turn: status returned, nothing leaked", s->name,
          s->on_device ? " on " : "", s->on_device ? rt_device_name(dev) : "", count);
}

static const scenario scenarios[] = {
    {"devices", scen_devices, 0, 0, 0},
    {"host reference", scen_reference, 0, 0, 0},
#ifdef REPROCL_HAVE_CLI
    {"cli devices --json", scen_cli_devices, 0, 1, 0},
#endif
    {"context create/clone/free", scen_context, 1, 0, 0},
    {"context wrap + sum", scen_wrap, 1, 0, 0},
    {"program build", scen_program, 1, 0, 0},
    {"program build error", scen_build_error, 1, 0, RCL_ERR_BUILD},
    {"reductions, cold context", scen_reduce_cold, 1, 0, 0},
    {"reductions, warm context", scen_reduce_warm, 1, 0, 0},
    {"kernels from REPROCL_KERNEL_DIR", scen_kernel_dir, 1, 0, 0},
    {"Matrix Market and Harwell-Boeing readers", scen_matrix_readers, 0, 0, 0},
    {"grid images and raw files, written and read", scen_grid_io, 0, 0, 0},
    {"SpMV, CG, stencil and SOR", scen_other_families, 1, 0, 0},
#ifdef REPROCL_HAVE_CLI
    {"cli run reduce", scen_cli_run, 1, 1, 0},
#endif
};
#define NSCEN (sizeof scenarios / sizeof scenarios[0])

START_TEST(host_scenarios) {
  for (size_t i = 0; i < NSCEN; i++)
    if (!scenarios[i].on_device) sweep(&scenarios[i], 0);
}
END_TEST

START_TEST(device_scenarios) {
  for (size_t i = 0; i < NSCEN; i++)
    if (scenarios[i].on_device) sweep(&scenarios[i], (size_t)_i);
}
END_TEST

int main(void) {
  if (!mkdtemp(img_dir)) return 1;
  Suite *s = suite_create("failalloc");
  rt_add_device_presence(s);
  TCase *host = tcase_create("host");
  tcase_add_test(host, host_scenarios);
  suite_add_tcase(s, host);
  TCase *dev = tcase_create("devices");
  rt_add_device_loop(dev, device_scenarios);
  suite_add_tcase(s, dev);
  int rc = rt_run(s);
  if (cli_err_fd >= 0) {
    close(cli_err_fd);
    unlink(cli_err_path);
  }
  static const char *const files[] = {"g.png", "g.pgm", "g.raw"};
  for (int i = 0; i < 3; i++) {
    char p[96];
    snprintf(p, sizeof p, "%s/%s", img_dir, files[i]);
    unlink(p);
  }
  rmdir(img_dir);
  return rc;
}
