/* First-use self-verification (docs/selftest.md). Before a kernel family runs for a dtype for the first
 * time on a device, driver, build options, kernel sources and code-generation environment, trap inputs
 * run through the family's real entry points on a private in-order queue and are compared bit for bit
 * with the host reference: sums that any reordering changes (in full and leftover work-items), products
 * whose contraction into an FMA changes them, subnormals, inexact division and square root, NaN payloads.
 * When the normal build fails, the conservative build (RCL_CONSERVATIVE_OPTIONS) is tried; if it passes
 * the family uses it from then on, else the family is refused with the inputs that differed. Verdicts
 * are kept per context and in the cache directory (selftest/<key>.txt). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "md/md_internal.h"
#include "build/cache_dir.h"
#include "build/cache_state.h"
#include "build/program.h"
#include "build/program_unit.h"
#include "context/selftest_internal.h"
#include "tune/tune.h"

#define ST_MAGIC "reprocl-selftest 1"
#define ST_DIR "selftest"

enum { ST_UNKNOWN = 0, ST_RUNNING, ST_DONE };

typedef struct {
  atomic_int state;         /* ST_DONE is stored last (release): verdict and reason never change after */
  int testing_conservative; /* while running: the build level under test */
  rcl_verdict verdict;
  char reason[600];
} st_entry;

struct rcl_selftest {
  pthread_mutex_t mu; /* recursive: a self-test's own calls come back through the gate */
  st_entry e[RCL_FAMILY_COUNT][2];
};

static atomic_uint inject_mask;
static atomic_long runs;

void rcl__selftest_inject(unsigned mask) { atomic_store(&inject_mask, mask); }
long rcl__selftest_runs(void) { return atomic_load(&runs); }

const char *rcl_verdict_name(rcl_verdict v) {
  switch (v) {
  case RCL_VERDICT_VERIFIED:
    return "verified";
  case RCL_VERDICT_CONSERVATIVE:
    return "verified (conservative build)";
  case RCL_VERDICT_UNSUPPORTED:
    return "unsupported";
  case RCL_VERDICT_NOT_TESTED:
    return "not tested";
  }
  return "?";
}

/* The word of a verdict in the cache file. */
static const char *const verdict_word[] = {"verified", "conservative", "unsupported", "not-tested"};

int rcl__selftest_create(rcl_context *ctx) {
  struct rcl_selftest *s = rcl__calloc(1, sizeof *s);
  if (!s) return RCL_ERR_OUT_OF_MEMORY;
  pthread_mutexattr_t a;
  int ok = pthread_mutexattr_init(&a) == 0;
  if (ok) {
    ok = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE) == 0 && pthread_mutex_init(&s->mu, &a) == 0;
    pthread_mutexattr_destroy(&a);
  }
  if (!ok) {
    rcl__free(s);
    return rcl__fail(RCL_ERR_INTERNAL, "pthread_mutex_init (recursive) failed");
  }
  ctx->selftest = s;
  return 0;
}

void rcl__selftest_free(rcl_context *ctx) {
  if (!ctx->selftest) return;
  pthread_mutex_destroy(&ctx->selftest->mu);
  rcl__free(ctx->selftest);
  ctx->selftest = NULL;
}

/* The family of reprocl's own program file, or -1. */
static int family_of(const char *file) {
  static const struct {
    const char *file;
    rcl_family family;
  } map[] = {{"reduce.cl", RCL_FAMILY_REDUCE},
             {"reduce_task.cl", RCL_FAMILY_REDUCE},
             {"stencil.cl", RCL_FAMILY_STENCIL},
             {"spmv.cl", RCL_FAMILY_SPMV},
             {"md.cl", RCL_FAMILY_MD}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(file, map[i].file)) return (int)map[i].family;
  return -1;
}

/* ---- one run of the trap inputs ------------------------------------------------------------------ */

typedef struct {
  rcl_context *ctx;
  cl_command_queue q;
  rcl_queue_args qa;
  rcl_dtype dt;
  size_t es;     /* element size */
  int level;     /* 0 normal, 1 conservative */
  int mismatch;  /* a comparison failed (why says where) */
  char why[400]; /* the first difference */
} st_run;

/* Deterministic trap values: magnitudes whose sums change with any reordering (1 next to +-B where B's
 * ulp exceeds 2), inexact products and quotients, subnormals; with `special`, NaNs with payloads,
 * infinities and signed zeros too (rarely, so that sums keep their information elsewhere). */
static void trap_fill(void *out, rcl_dtype dt, size_t n, uint64_t seed, int special) {
  static const double pool64[] = {1.0,  1e16, -1e16, 1.0,    0.1,     -1.0 / 3, 3.0,   1.0 + 0x1p-30, 1.0 - 0x1p-30,
                                  7e15, -2.5, 1e-3,  3e-310, -5e-320, 0.7,      -1e16, 1e16,          1.0};
  static const float pool32[] = {
      1.0f,  1e8f,   -1e8f,   1.0f, 0.1f,  -1.0f / 3, 3.0f, 1.0f + 0x1p-12f, 1.0f - 0x1p-12f, 7e7f, -2.5f,
      1e-3f, 3e-39f, -5e-44f, 0.7f, -1e8f, 1e8f,      1.0f};
  static const uint64_t special64[] = {0x7ff4000000000001ull, 0xfff8000000000abcull, 0x7ff0000000000000ull,
                                       0x8000000000000000ull};
  static const uint32_t special32[] = {0x7fa00001u, 0xffc12345u, 0x7f800000u, 0x80000000u};
  const size_t np = sizeof pool64 / sizeof pool64[0];
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    size_t k = (size_t)(s >> 33) % np;
    int sp = special && (s >> 20) % 29 == 0;
    size_t j = (size_t)(s >> 40) % 4;
    /* Every block of five starts 1, B, 1, -B, 1: whatever the vector width, some work-item's loop holds
     * a sum that reassociation changes. */
    size_t b = i % 16;
    if (b < 5) k = (size_t[]){0, 1, 3, 2, 17}[b];
    if (dt == RCL_F64) {
      double v = pool64[k];
      if (sp) memcpy(&v, &special64[j], 8);
      memcpy((char *)out + 8 * i, &v, 8);
    } else {
      float v = pool32[k];
      if (sp) memcpy(&v, &special32[j], 4);
      memcpy((char *)out + 4 * i, &v, 4);
    }
  }
}

static int upload(cl_mem *out, st_run *r, const void *host, size_t bytes, const char *what) {
  return rcl__buffer_copy(out, r->ctx, CL_MEM_READ_WRITE, host, bytes, what);
}

static int download(st_run *r, void *host, cl_mem buf, size_t bytes) {
  cl_int err = clEnqueueReadBuffer(r->q, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
  return err ? rcl__fail_cl(err, "clEnqueueReadBuffer(self-test result)") : 0;
}

/* Compares n elements of size es; the first difference of the run is described in r->why. */
static void compare(st_run *r, void *got, const void *want, size_t n, size_t es, const char *what) {
  if (n && (atomic_load(&inject_mask) >> r->level) & 1u) ((unsigned char *)got)[0] ^= 1u; /* test hook */
  if (r->mismatch || !memcmp(got, want, n * es)) {
    if (memcmp(got, want, n * es)) r->mismatch = 1;
    return;
  }
  for (size_t i = 0; i < n; i++) {
    uint64_t g = 0, w = 0;
    memcpy(&g, (const char *)got + i * es, es);
    memcpy(&w, (const char *)want + i * es, es);
    if (g != w) {
      snprintf(r->why, sizeof r->why, "%s: element %zu is 0x%0*llx, the reference 0x%0*llx", what, i, (int)(2 * es),
               (unsigned long long)g, (int)(2 * es), (unsigned long long)w);
      break;
    }
  }
  r->mismatch = 1;
}

/* A refusal of one configuration (a variant the device cannot launch) skips it: the family's calls
 * refuse it the same way. */
static int skippable(int rc) { return rc == RCL_ERR_UNSUPPORTED || rc == RCL_ERR_INVALID_ARG; }

static void release(cl_mem *m, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (m[i]) clReleaseMemObject(m[i]);
}

/* ---- reduce: sum, dot, nrm2 in both modes, a leftover-sized and a multi-group n ---------------------- */
static int test_reduce(st_run *r) {
  static const size_t sizes[] = {37, 1000};
  const size_t nmax = 1000;
  char *x = rcl__malloc(nmax * r->es), *y = rcl__malloc(nmax * r->es);
  int rc = x && y ? 0 : RCL_ERR_OUT_OF_MEMORY;
  for (int special = 0; special < 2 && !rc; special++) {
    trap_fill(x, r->dt, nmax, 1 + (uint64_t)special, special);
    trap_fill(y, r->dt, nmax, 7, 0);
    cl_mem b[3] = {NULL, NULL, NULL};
    rc = upload(&b[0], r, x, nmax * r->es, "self-test x");
    if (!rc) rc = upload(&b[1], r, y, nmax * r->es, "self-test y");
    if (!rc) rc = rcl__buffer_create(&b[2], r->ctx, CL_MEM_READ_WRITE, 8, NULL, "self-test result");
    for (size_t si = 0; si < 2 && !rc; si++)
      for (int op = 0; op < 3 && !rc; op++)
        for (int m = 0; m < 2 && !rc; m++) {
          rcl_reduce_options o = RCL_REDUCE_OPTIONS_INIT;
          o.mode = (rcl_reduce_mode)m;
          unsigned char got[8], want[8];
          rc = rcl_reduce_enqueue(b[2], 0, r->ctx, (rcl_reduce_op)op, r->dt, sizes[si], b[0], 0, b[1], 0, &o, &r->qa);
          if (!rc) rc = download(r, got, b[2], r->es);
          if (!rc) rc = rcl_ref_reduce(want, (rcl_reduce_op)op, r->dt, (rcl_reduce_mode)m, sizes[si], x, y);
          if (!rc) {
            char what[96];
            snprintf(what, sizeof what, "%s %s n=%zu%s", rcl_reduce_op_name((rcl_reduce_op)op),
                     rcl_reduce_mode_name((rcl_reduce_mode)m), sizes[si], special ? " (NaN/inf inputs)" : "");
            compare(r, got, want, 1, r->es, what);
          }
        }
    release(b, 3);
  }
  rcl__free(x);
  rcl__free(y);
  return rc;
}

/* How many of a family's variants to test (the default one first): all of them, except in a context
 * that runs from a program bundle (offline-compiled, as for an FPGA): it can only load, not compile, so
 * its self-test runs the default configuration, whose programs the bundle holds. */
static size_t variants(const st_run *r, size_t all) { return rcl__bundle_of(r->ctx) ? 1 : all; }

/* ---- stencil: a nine-point and a radius-2 general stencil, every variant; SOR with its residual ------ */
static int stencil_case(st_run *r, const rcl_stencil_desc *st, size_t w, size_t h, rcl_stencil_variant v,
                        const char *in, cl_mem bin, char *got, char *want) {
  cl_mem bout = NULL;
  rcl_stencil_options o = RCL_STENCIL_OPTIONS_INIT;
  o.variant = v;
  int rc = rcl__buffer_create(&bout, r->ctx, CL_MEM_READ_WRITE, w * h * r->es, NULL, "self-test grid");
  if (!rc) rc = rcl_stencil_enqueue(bout, 0, 0, r->ctx, st, r->dt, w, h, 2, bin, 0, 0, NULL, &o, &r->qa);
  if (!rc) rc = download(r, got, bout, w * h * r->es);
  if (!rc) rc = rcl_ref_stencil(want, st, r->dt, w, h, 2, in);
  if (!rc) {
    char what[96];
    snprintf(what, sizeof what, "stencil %s r=%u %s %zux%zu variant %s", rcl_stencil_kind_name(st->kind), st->radius,
             rcl_boundary_name(st->boundary), w, h, rcl_stencil_variant_name(v));
    compare(r, got, want, w * h, r->es, what);
  } else if (skippable(rc)) {
    rc = 0;
  }
  if (bout) clReleaseMemObject(bout);
  return rc;
}

static int sor_case(st_run *r, const rcl_sor_desc *s, size_t w, size_t h, rcl_stencil_variant v, const char *grid,
                    const char *rhs, char *got, char *want) {
  cl_mem b[3] = {NULL, NULL, NULL};
  rcl_stencil_options o = RCL_STENCIL_OPTIONS_INIT;
  o.variant = v;
  unsigned char res[8], res_ref[8];
  size_t bytes = w * h * r->es;
  int rc = upload(&b[0], r, grid, bytes, "self-test grid");
  if (!rc) rc = upload(&b[1], r, rhs, bytes, "self-test rhs");
  if (!rc) rc = rcl__buffer_create(&b[2], r->ctx, CL_MEM_READ_WRITE, 8, NULL, "self-test residual");
  if (!rc) rc = rcl_sor_enqueue(b[0], 0, 0, r->ctx, s, r->dt, w, h, 2, b[1], 0, 0, &o, &r->qa);
  if (!rc) rc = rcl_sor_residual_enqueue(b[2], 0, r->ctx, s, r->dt, w, h, b[0], 0, 0, b[1], 0, 0, &o, &r->qa);
  if (!rc) rc = download(r, got, b[0], bytes);
  if (!rc) rc = download(r, res, b[2], r->es);
  if (!rc) {
    memcpy(want, grid, bytes);
    rc = rcl_ref_sor(want, res_ref, s, r->dt, w, h, 2, rhs);
  }
  if (!rc) {
    char what[96];
    snprintf(what, sizeof what, "SOR %s %zux%zu variant %s", rcl_boundary_name(s->boundary), w, h,
             rcl_stencil_variant_name(v));
    compare(r, got, want, w * h, r->es, what);
    snprintf(what + strlen(what), sizeof what - strlen(what), ", residual");
    compare(r, res, res_ref, 1, r->es, what);
  } else if (skippable(rc)) {
    rc = 0;
  }
  release(b, 3);
  return rc;
}

static int test_stencil(st_run *r) {
  enum { W = 19, H = 7, N = W * H };
  char *in = rcl__malloc(N * r->es), *rhs = rcl__malloc(N * r->es);
  char *got = rcl__malloc(N * r->es), *want = rcl__malloc(N * r->es);
  int rc = in && rhs && got && want ? 0 : RCL_ERR_OUT_OF_MEMORY;
  cl_mem bin = NULL;
  if (!rc) {
    trap_fill(in, r->dt, N, 11, 1);
    trap_fill(rhs, r->dt, N, 12, 0);
    rc = upload(&bin, r, in, N * r->es, "self-test grid");
  }
  rcl_stencil_desc nine = RCL_STENCIL_DESC_INIT, general = RCL_STENCIL_DESC_INIT;
  nine.weights[0] = 1.0 / 3;
  nine.weights[1] = 0.1;
  nine.weights[2] = -0.7;
  nine.boundary_value = 0.1;
  general.kind = RCL_STENCIL_GENERAL;
  general.radius = 2;
  general.boundary = RCL_BOUNDARY_PERIODIC;
  for (int i = 0; i < 25; i++) general.weights[i] = (i % 3 ? 0.1 : -1.0 / 3) * (1 + i);
  static const rcl_stencil_variant vs[] = {RCL_STENCIL_AUTO, RCL_STENCIL_PLAIN, RCL_STENCIL_TILED, RCL_STENCIL_TASK};
  for (size_t v = 0; v < variants(r, 4) && !rc; v++) {
    rc = stencil_case(r, &nine, W, H, vs[v], in, bin, got, want);
    if (!rc) rc = stencil_case(r, &general, W, H, vs[v], in, bin, got, want);
  }
  rcl_sor_desc sor = RCL_SOR_DESC_INIT;
  sor.boundary_value = 0.1;
  trap_fill(in, r->dt, N, 13, 0); /* no NaN: the sweeps would spread it over the grid */
  for (size_t v = 0; v < variants(r, 4) && !rc; v++) {
    sor.boundary = v % 2 ? RCL_BOUNDARY_PERIODIC : RCL_BOUNDARY_FIXED;
    /* periodic SOR needs an even grid: 18 x 6 of the same data */
    rc = sor_case(r, &sor, v % 2 ? W - 1 : W, v % 2 ? H - 1 : H, vs[v], in, rhs, got, want);
  }
  if (bin) clReleaseMemObject(bin);
  rcl__free(in);
  rcl__free(rhs);
  rcl__free(got);
  rcl__free(want);
  return rc;
}

/* ---- spmv: rows of 0 to 45 entries in both contracts and the one-row-per-item variants ---------------- */
static int test_spmv(st_run *r) {
  enum { ROWS = 40, COLS = 50 };
  uint64_t ptr[ROWS + 1];
  ptr[0] = 0;
  for (size_t i = 0; i < ROWS; i++) ptr[i + 1] = ptr[i] + (i == ROWS - 1 ? 45 : (i * 7) % 23);
  size_t nnz = (size_t)ptr[ROWS];
  uint32_t *col = rcl__malloc(nnz * sizeof *col);
  char *val = rcl__malloc(nnz * r->es), *x = rcl__malloc(COLS * r->es);
  char *y0 = rcl__malloc(ROWS * r->es), *got = rcl__malloc(ROWS * r->es), *want = rcl__malloc(ROWS * r->es);
  int rc = col && val && x && y0 && got && want ? 0 : RCL_ERR_OUT_OF_MEMORY;
  rcl_csr *A = NULL;
  rcl_spmv_matrix *M = NULL;
  cl_mem b[2] = {NULL, NULL};
  if (!rc) {
    for (size_t i = 0; i < ROWS; i++)
      for (uint64_t k = ptr[i]; k < ptr[i + 1]; k++) col[k] = (uint32_t)((i * 3 + k * 5) % COLS);
    trap_fill(val, r->dt, nnz, 21, 0);
    trap_fill(x, r->dt, COLS, 22, 0);
    trap_fill(y0, r->dt, ROWS, 23, 1);
    rc = rcl_csr_create(&A, r->dt, ROWS, COLS, nnz, ptr, col, val);
  }
  if (!rc) rc = rcl_spmv_matrix_create(&M, r->ctx, A);
  if (!rc) rc = upload(&b[0], r, x, COLS * r->es, "self-test x");
  double a64 = 1.0 / 3, b64 = 0.1;
  float a32 = 1.0f / 3, b32 = 0.1f;
  const void *alpha = r->dt == RCL_F64 ? (const void *)&a64 : (const void *)&a32;
  const void *beta = r->dt == RCL_F64 ? (const void *)&b64 : (const void *)&b32;
  static const rcl_spmv_variant vs[] = {RCL_SPMV_AUTO, RCL_SPMV_SCALAR, RCL_SPMV_VECTOR, RCL_SPMV_TASK};
  for (int c = 0; c < 2 && !rc; c++)
    for (size_t v = 0; v < variants(r, 4) && !rc; v++) {
      rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
      o.contract = (rcl_spmv_contract)c;
      o.variant = vs[v];
      rc = upload(&b[1], r, y0, ROWS * r->es, "self-test y");
      if (!rc) rc = rcl_spmv_enqueue(b[1], 0, M, alpha, b[0], 0, beta, &o, &r->qa);
      if (!rc) rc = download(r, got, b[1], ROWS * r->es);
      if (!rc) {
        memcpy(want, y0, ROWS * r->es);
        rc = rcl_ref_spmv(want, A, o.contract, alpha, x, beta);
      }
      if (!rc) {
        char what[96];
        snprintf(what, sizeof what, "spmv %s variant %s", rcl_spmv_contract_name(o.contract),
                 rcl_spmv_variant_name(vs[v]));
        compare(r, got, want, ROWS, r->es, what);
      } else if (skippable(rc)) {
        rc = 0;
      }
      if (b[1]) clReleaseMemObject(b[1]);
      b[1] = NULL;
    }
  release(b, 2);
  rcl_spmv_matrix_free(M);
  rcl_csr_free(A);
  rcl__free(col);
  rcl__free(val);
  rcl__free(x);
  rcl__free(y0);
  rcl__free(got);
  rcl__free(want);
  return rc;
}

/* ---- md: forces of a displaced fcc lattice (divisions), then a few steps --------------------------- */
static int md_compare(st_run *r, rcl_md *dev, rcl_md *ref, size_t n, char *got, char *want, const char *when) {
  char what[96];
  int rc = rcl_md_get_forces(dev, NULL, (int64_t *)(void *)got);
  if (!rc) rc = rcl_md_get_forces(ref, NULL, (int64_t *)(void *)want);
  if (!rc) {
    snprintf(what, sizeof what, "md forces %s (fixed point)", when);
    compare(r, got, want, 3 * n, 8, what);
    rc = rcl_md_get_state(dev, got, NULL);
  }
  if (!rc) rc = rcl_md_get_state(ref, want, NULL);
  if (!rc) {
    snprintf(what, sizeof what, "md positions %s", when);
    compare(r, got, want, 3 * n, r->es, what);
  }
  return rc;
}

static int test_md(st_run *r) {
  rcl_md_system *sys = NULL;
  rcl_md *dev = NULL, *ref = NULL;
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rcl_md_options o = RCL_MD_OPTIONS_INIT;
  char *got = NULL, *want = NULL;
  int rc = rcl_md_lattice(&sys, "fcc", 3, 0.8442, 1.0, 5);
  if (!rc) rc = rcl_md_displace(sys, 0.1, 6);
  size_t n = sys ? sys->natoms : 0;
  if (!rc) {
    got = rcl__malloc(3 * n * 8);
    want = rcl__malloc(3 * n * 8);
    if (!got || !want) rc = RCL_ERR_OUT_OF_MEMORY;
  }
  if (!rc) rc = rcl__md_create_on(&dev, r->ctx, r->q, r->dt, sys, &lj, &o, NULL);
  if (!rc) rc = rcl_md_create(&ref, NULL, r->dt, sys, &lj, &o);
  if (!rc) rc = md_compare(r, dev, ref, n, got, want, "at step 0");
  if (!rc) rc = rcl_md_run(dev, 3, 0.005, 0, NULL, NULL);
  if (!rc) rc = rcl_md_run(ref, 3, 0.005, 0, NULL, NULL);
  if (!rc) rc = md_compare(r, dev, ref, n, got, want, "after 3 steps");
  if (skippable(rc)) rc = 0;
  rcl_md_free(dev);
  rcl_md_free(ref);
  rcl_md_system_free(sys);
  rcl__free(got);
  rcl__free(want);
  return rc;
}

/* Runs the family's trap inputs at one build level: 0, with *mismatch and why set when bits differed. */
static int run_level(int *mismatch, char *why, size_t why_size, rcl_context *ctx, rcl_family f, rcl_dtype dt,
                     int level) {
  static int (*const tests[RCL_FAMILY_COUNT])(st_run *) = {test_reduce, test_stencil, test_spmv, test_md};
  st_run r;
  memset(&r, 0, sizeof r);
  r.ctx = ctx;
  r.dt = dt;
  r.es = rcl_dtype_size(dt);
  r.level = level;
  cl_int err;
  /* A queue of its own: the context's may be missing (wrapped without one) or out of order. */
  r.q = clCreateCommandQueue(ctx->cl_ctx, ctx->device, 0, &err);
  if (!r.q) return rcl__fail_cl(err, "clCreateCommandQueue for the self-test");
  rcl_queue_args qa = RCL_QUEUE_ARGS_INIT;
  qa.queue = r.q;
  r.qa = qa;
  atomic_fetch_add(&runs, 1);
  int held = rcl__tune_hold(1);
  int rc = tests[f](&r);
  rcl__tune_hold(held);
  clFinish(r.q);
  clReleaseCommandQueue(r.q);
  *mismatch = r.mismatch;
  snprintf(why, why_size, "%s", r.why);
  return rc;
}

/* ---- the verdict cache ------------------------------------------------------------------------------- */

/* The key: library version, device fingerprint and driver, family, dtype, the program keys (full source
 * with the prelude, and options) of the family's files, the conservative options, and the code-generation
 * environment. */
static int verdict_key(char hex[RCL_SHA256_HEX_SIZE], rcl_context *ctx, rcl_family f, rcl_dtype dt) {
  static const char *const files[RCL_FAMILY_COUNT][2] = {
      {"reduce.cl", "reduce_task.cl"}, {"stencil.cl", NULL}, {"spmv.cl", NULL}, {"md.cl", NULL}};
  rcl_sha256_ctx h;
  rcl_sha256_init(&h);
  const char *ids[] = {
      ST_MAGIC,           REPROCL_VERSION_STRING, ctx->profile.fingerprint, ctx->profile.driver_version,
      rcl_family_name(f), rcl_dtype_name(dt),     RCL_CONSERVATIVE_OPTIONS};
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) rcl_sha256_update(&h, ids[i], strlen(ids[i]) + 1);
  for (int i = 0; i < 2 && files[f][i]; i++) {
    char *text = NULL, *opts = NULL, key[RCL_SHA256_HEX_SIZE];
    size_t len;
    int rc = rcl__program_unit(&text, &len, &opts, key, ctx, files[f][i], dt, NULL);
    rcl__free(text);
    rcl__free(opts);
    if (rc) return rc;
    rcl_sha256_update(&h, key, 64);
  }
  char env[RCL_SHA256_HEX_SIZE];
  rcl__codegen_env(env);
  rcl_sha256_update(&h, env, strlen(env) + 1);
  rcl_sha256_final_hex(&h, hex);
  return 0;
}

/* dir/selftest (allocated) and the file name of a key. */
static char *verdict_dir(const char *dir) {
  size_t n = strlen(dir) + sizeof ST_DIR + 2;
  char *p = rcl__malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, ST_DIR);
  return p;
}

/* File: "reprocl-selftest 1 <key>\n<family> <dtype> <verdict>\n<reason>\n". 1 when e was filled. */
static int verdict_parse(st_entry *e, const char *data, size_t len, const char *key) {
  char head[128];
  int hl = snprintf(head, sizeof head, "%s %s\n", ST_MAGIC, key);
  if (len < (size_t)hl || memcmp(data, head, (size_t)hl) || memchr(data, '\0', len)) return 0;
  const char *l2 = data + hl, *end = data + len;
  const char *nl2 = memchr(l2, '\n', (size_t)(end - l2));
  if (!nl2) return 0;
  const char *sp = nl2;
  while (sp > l2 && sp[-1] != ' ') sp--;
  if (sp == l2) return 0;
  sp--; /* the blank before the verdict word */
  int v = -1;
  for (int i = 0; i < 3; i++)
    if ((size_t)(nl2 - sp - 1) == strlen(verdict_word[i]) && !strncmp(sp + 1, verdict_word[i], strlen(verdict_word[i])))
      v = i;
  const char *l3 = nl2 + 1;
  const char *nl3 = l3 < end ? memchr(l3, '\n', (size_t)(end - l3)) : NULL;
  if (v < 0 || !nl3) return 0;
  e->verdict = (rcl_verdict)v;
  snprintf(e->reason, sizeof e->reason, "%.*s", (int)(nl3 - l3), l3);
  return 1;
}

/* Reads a cached verdict into e: *found 1 or 0; an unreadable or foreign file is ignored. Running out
 * of host memory is reported (RCL_ERR_OUT_OF_MEMORY), never taken for a missing verdict. */
static int verdict_load(int *found, st_entry *e, rcl_context *ctx, const char *key) {
  *found = 0;
  const char *dir = rcl__cache_dir(ctx);
  if (!dir || getenv("REPROCL_NO_SELFTEST_CACHE")) return 0;
  char *sdir = verdict_dir(dir);
  int oom = !sdir;
  /* A verdict decides which bits are trusted: only from a directory no other user can write to. */
  if (sdir && rcl__cache_dir_trusted(sdir)) {
    size_t pl = strlen(sdir) + 48;
    char *path = rcl__malloc(pl), *data = NULL;
    size_t len = 0;
    oom = !path;
    if (path) {
      snprintf(path, pl, "%s/%.40s.txt", sdir, key);
      int rc = rcl__cache_read_file(&data, &len, path);
      if (rc == 0) *found = verdict_parse(e, data, len, key);
      oom = rc == RCL_ERR_OUT_OF_MEMORY;
    }
    rcl__free(data);
    rcl__free(path);
  }
  rcl__free(sdir);
  rcl_error_clear();
  return oom ? rcl__fail(RCL_ERR_OUT_OF_MEMORY, "out of host memory reading the self-test verdicts") : 0;
}

/* Stores a verdict (best effort: a failure is a cache warning, except running out of host memory). */
static int verdict_store(rcl_context *ctx, const st_entry *e, rcl_family f, rcl_dtype dt, const char *key) {
  const char *dir = rcl__cache_dir(ctx);
  if (!dir || getenv("REPROCL_NO_SELFTEST_CACHE")) return 0;
  char *sdir = verdict_dir(dir);
  char text[800], name[48];
  int tl = snprintf(text, sizeof text, "%s %s\n%s %s %s\n%s\n", ST_MAGIC, key, rcl_family_name(f), rcl_dtype_name(dt),
                    verdict_word[e->verdict], e->reason);
  snprintf(name, sizeof name, "%.40s.txt", key);
  int rc = sdir ? 0 : RCL_ERR_OUT_OF_MEMORY;
  if (!rc && tl > 0 && (size_t)tl < sizeof text && (rc = rcl__cache_dir_writable(dir)) == 0 &&
      (rc = rcl__cache_dir_writable(sdir)) == 0)
    rc = rcl__cache_write_atomic(sdir, name, text, (size_t)tl);
  if (rc && rc != RCL_ERR_OUT_OF_MEMORY)
    rcl__cache_warn(ctx, "cannot store the self-test verdict: %s", rcl_error_last());
  rcl__free(sdir);
  rcl_error_clear();
  return rc == RCL_ERR_OUT_OF_MEMORY ? rcl__fail(rc, "out of host memory storing a self-test verdict") : 0;
}

/* ---- the verdict ------------------------------------------------------------------------------------- */

static int disabled(void) {
  const char *e = getenv("REPROCL_SELFTEST");
  return e && (!strcasecmp(e, "off") || !strcmp(e, "0"));
}

/* Runs both levels as needed and fills e (state ST_RUNNING on entry). */
static int run_verdict(st_entry *e, rcl_context *ctx, rcl_family f, rcl_dtype dt) {
  char why0[400] = "", why1[400] = "";
  int mism = 0;
  e->testing_conservative = 0;
  int rc = run_level(&mism, why0, sizeof why0, ctx, f, dt, 0);
  if (rc || !mism) {
    e->verdict = RCL_VERDICT_VERIFIED;
    e->reason[0] = '\0';
    return rc;
  }
  e->testing_conservative = 1;
  rc = run_level(&mism, why1, sizeof why1, ctx, f, dt, 1);
  if (rc && rc != RCL_ERR_OUT_OF_MEMORY) { /* the conservative build failed to build or run */
    snprintf(why1, sizeof why1, "%s", rcl_error_last());
    char *nl = strchr(why1, '\n');
    if (nl) *nl = '\0';
    mism = 1;
    rc = 0;
  }
  if (rc) return rc;
  e->verdict = mism ? RCL_VERDICT_UNSUPPORTED : RCL_VERDICT_CONSERVATIVE;
  if (mism)
    snprintf(e->reason, sizeof e->reason, "self-test failed: %s; conservative build (%s): %s", why0,
             RCL_CONSERVATIVE_OPTIONS, why1);
  else
    snprintf(e->reason, sizeof e->reason, "the normal build failed the self-test (%s)", why0);
  return 0;
}

/* The verdict of family f for dt; *conservative: the build its programs use now. */
static int resolve(rcl_verdict *out, const char **reason, int *conservative, rcl_context *ctx, rcl_family f,
                   rcl_dtype dt) {
  struct rcl_selftest *s = ctx->selftest;
  st_entry *e = &s->e[f][dt == RCL_F64];
  *conservative = 0;
  /* The path of every call after the first: no lock. */
  if (atomic_load_explicit(&e->state, memory_order_acquire) == ST_DONE) {
    *out = e->verdict;
    *reason = e->reason;
    *conservative = e->verdict == RCL_VERDICT_CONSERVATIVE;
    return 0;
  }
  pthread_mutex_lock(&s->mu);
  int rc = 0;
  if (e->state == ST_RUNNING) { /* this thread's own self-test calling back: the level under test */
    *conservative = e->testing_conservative;
    *out = RCL_VERDICT_NOT_TESTED;
    *reason = "self-test running";
    pthread_mutex_unlock(&s->mu);
    return 0;
  }
  if (e->state == ST_UNKNOWN) {
    const char *why = "";
    char key[RCL_SHA256_HEX_SIZE];
    if (ctx->mode != RCL_MODE_REPRODUCIBLE) {
      why = "native mode";
    } else if (disabled()) {
      why = "REPROCL_SELFTEST=off";
    } else if (rcl_device_profile_support(&ctx->profile, f, dt, &why) == RCL_SUPPORT_NONE) {
      /* the family's own support check refuses it with why */
    } else {
      why = NULL;
    }
    if (why) {
      e->verdict = RCL_VERDICT_NOT_TESTED;
      snprintf(e->reason, sizeof e->reason, "%s", why);
    } else {
      int found = 0;
      rc = verdict_key(key, ctx, f, dt);
      if (!rc) rc = verdict_load(&found, e, ctx, key);
      if (!rc && !found) {
        e->state = ST_RUNNING;
        rc = run_verdict(e, ctx, f, dt);
        /* a verdict that could not be stored is still this context's */
        if (!rc && (rc = verdict_store(ctx, e, f, dt, key)) != 0) e->state = ST_DONE;
      }
    }
    if (e->state != ST_DONE) e->state = rc ? ST_UNKNOWN : ST_DONE;
    if (!rc) rcl_error_clear();
  }
  if (!rc) {
    *out = e->verdict;
    *reason = e->reason;
    *conservative = e->verdict == RCL_VERDICT_CONSERVATIVE;
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int rcl__selftest_gate(int *conservative, rcl_context *ctx, const char *file, rcl_dtype dtype) {
  *conservative = 0;
  int f = family_of(file);
  if (f < 0 || !ctx->selftest || ctx->mode != RCL_MODE_REPRODUCIBLE || rcl_dtype_size(dtype) == 0) return 0;
  rcl_verdict v;
  const char *why;
  int rc = resolve(&v, &why, conservative, ctx, (rcl_family)f, dtype);
  if (!rc && v == RCL_VERDICT_UNSUPPORTED)
    return rcl__fail(RCL_ERR_UNSUPPORTED, "%s %s kernels cannot run bit-exactly on %s: %s",
                     rcl_family_name((rcl_family)f), rcl_dtype_name(dtype), ctx->profile.device_name, why);
  return rc;
}

int rcl_context_verdict(rcl_verdict *out, const char **reason, rcl_context *ctx, rcl_family family, rcl_dtype dtype) {
  if (!out || !ctx) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_context_verdict: NULL argument");
  if ((unsigned)family >= RCL_FAMILY_COUNT || rcl_dtype_size(dtype) == 0)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_context_verdict: family %d or dtype %d is unknown", (int)family,
                     (int)dtype);
  const char *why;
  int cons;
  int rc = resolve(out, &why, &cons, ctx, family, dtype);
  if (!rc && reason) *reason = why;
  return rc;
}
