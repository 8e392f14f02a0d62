/* SpMV and CG benchmarks: every variant and a few launch shapes per variant, reproducible (ordered and
 * exact contracts) beside the same kernels built natively and beside a conventional CSR-vector kernel
 * with a tree reduction, on real matrices from Debian packages and on generated ones (a 3D Poisson
 * matrix with about 12M non-zeros in full mode). Each (matrix, dtype) ends with a summary record: the
 * fastest reproducible ordered configuration against the fastest native one and the copy bandwidth. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sparse_cli.h"

typedef struct {
  rcl_spmv_matrix *M;
  cl_mem y, x;
  unsigned char alpha[8], beta[8];
  rcl_spmv_options o;
  int baseline;
  size_t lanes, local;
  cl_command_queue q;
  int reps; /* launches per timed sample */
} bench_run;

static int bench_once(void *p) {
  bench_run *r = p;
  int rc = 0;
  for (int i = 0; i < r->reps && !rc; i++)
    rc = r->baseline ? rcl_spmv_baseline_enqueue(r->y, 0, r->M, r->alpha, r->x, 0, r->beta, r->lanes, r->local, NULL)
                     : rcl_spmv_enqueue(r->y, 0, r->M, r->alpha, r->x, 0, r->beta, &r->o, NULL);
  if (!rc && clFinish(r->q) != CL_SUCCESS) rc = RCL_ERR_OPENCL;
  return rc;
}

/* Launch shapes tried per variant (0 = default). The first of each variant is its default. */
typedef struct {
  rcl_spmv_variant v;
  size_t local, lanes, block, slice;
} shape;
static const shape shapes[] = {{RCL_SPMV_SCALAR, 0, 0, 0, 0},        {RCL_SPMV_SCALAR, 128, 0, 0, 0},
                               {RCL_SPMV_SCALAR, 512, 0, 0, 0},      {RCL_SPMV_VECTOR, 0, 0, 0, 0},
                               {RCL_SPMV_VECTOR, 256, 4, 0, 0},      {RCL_SPMV_VECTOR, 256, 8, 0, 0},
                               {RCL_SPMV_VECTOR, 256, 16, 0, 0},     {RCL_SPMV_VECTOR, 256, 32, 0, 0},
                               {RCL_SPMV_ADAPTIVE, 0, 0, 0, 0},      {RCL_SPMV_ADAPTIVE, 128, 0, 1024, 0},
                               {RCL_SPMV_ADAPTIVE, 256, 0, 2048, 0}, {RCL_SPMV_ADAPTIVE, 256, 0, 4096, 0},
                               {RCL_SPMV_ADAPTIVE, 512, 0, 4096, 0}, {RCL_SPMV_ADAPTIVE, 1024, 0, 8192, 0},
                               {RCL_SPMV_SELL, 0, 0, 0, 0},          {RCL_SPMV_SELL, 128, 0, 0, 32},
                               {RCL_SPMV_SELL, 256, 0, 0, 32},       {RCL_SPMV_SELL, 256, 0, 0, 64},
                               {RCL_SPMV_SELL, 512, 0, 0, 128},      {RCL_SPMV_TASK, 0, 0, 0, 0}};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

static void shape_name(char *buf, size_t n, const shape *s, int baseline) {
  int w = snprintf(buf, n, "%s", baseline ? "baseline-tree" : rcl_spmv_variant_name(s->v));
  if (s->local) w += snprintf(buf + w, n - (size_t)w, ",local=%zu", s->local);
  if (s->lanes) w += snprintf(buf + w, n - (size_t)w, ",lanes=%zu", s->lanes);
  if (s->block) w += snprintf(buf + w, n - (size_t)w, ",block=%zu", s->block);
  if (s->slice) snprintf(buf + w, n - (size_t)w, ",slice=%zu", s->slice);
}

typedef struct {
  double best_repro, best_native;
  char repro_name[96], native_name[96];
} best;

/* Times one configuration and records it; *secs = 0 when it was skipped. */
static int bench_case(cli_bench *b, bench_run *r, const rcl_csr *A, const char *label, const char *name,
                      const char *mode, double *secs) {
  *secs = 0;
  /* Enough launches per sample to last about 2 ms: launch overhead then stays in the noise. */
  r->reps = 1;
  double t0 = cli_now();
  int rc = bench_once(r);
  if (rc == RCL_ERR_INVALID_ARG || rc == RCL_ERR_UNSUPPORTED) { /* a shape beyond this device's limits */
    cli_bench_skip(b, "spmv", label, name, rcl_error_last());
    return 0;
  }
  if (rc) return rc;
  double t1 = cli_now() - t0;
  r->reps = t1 > 0 ? (int)fmin(100.0, fmax(1.0, ceil(2e-3 / t1))) : 1;
  if (b->quick) r->reps = 1;
  double med, mn, mx;
  if ((rc = cli_bench_time(&med, &mn, &mx, b->repeats, bench_once, r)) != 0) return rc;
  med /= r->reps;
  mn /= r->reps;
  mx /= r->reps;
  json_t *extra =
      json_pack("{s:s,s:s,s:I,s:I,s:I}", "matrix", label, "contract",
                r->baseline ? "none (tree)" : rcl_spmv_contract_name(r->o.contract), "rows", (json_int_t)A->nrows,
                "nnz", (json_int_t)A->nnz, "launches_per_sample", (json_int_t)r->reps);
  cli_bench_record(b, "spmv", label, name, mode, A->dtype, label, med, mn, mx, cli_sparse_spmv_bytes(A, 0),
                   2.0 * (double)A->nnz, extra);
  *secs = med;
  return 0;
}

static int bench_matrix(cli_bench *b, const rcl_csr *A, const char *label) {
  cl_context clc = rcl_context_cl_context(b->ctx);
  size_t es = rcl_dtype_size(A->dtype);
  const rcl_device_profile *p = rcl_context_profile(b->ctx);
  if ((double)A->nnz * (double)(es + 4) > (double)p->max_mem_alloc_size) {
    cli_bench_skip(b, "spmv", label, rcl_dtype_name(A->dtype), "matrix larger than the device's largest buffer");
    return 0;
  }
  rcl_spmv_matrix *M = NULL, *N = NULL;
  if (rcl_spmv_matrix_create(&M, b->ctx, A) || rcl_spmv_matrix_share(&N, M, b->native)) {
    rcl_spmv_matrix_free(M);
    cli_bench_skip(b, "spmv", label, rcl_dtype_name(A->dtype), rcl_error_last());
    return 0;
  }
  void *hx = malloc((A->ncols ? A->ncols : 1) * es);
  cl_int err;
  cl_mem x = NULL, y = NULL;
  if (hx) {
    rcl_generate(hx, A->dtype, A->ncols, RCL_GEN_UNIFORM, 7);
    x = clCreateBuffer(clc, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (A->ncols ? A->ncols : 1) * es, hx, &err);
    y = x ? clCreateBuffer(clc, CL_MEM_READ_WRITE, (A->nrows ? A->nrows : 1) * es, NULL, &err) : NULL;
  }
  free(hx);
  int rc = 0;
  if (!y) {
    cli_bench_skip(b, "spmv", label, rcl_dtype_name(A->dtype), "device buffers could not be allocated");
    goto out;
  }
  best bst = {INFINITY, INFINITY, "", ""};
  for (int mode = 0; mode < 2 && !rc; mode++) /* reproducible, native */
    for (int c = 0; c < 2 && !rc; c++) {      /* ordered, exact */
      for (size_t s = 0; s < NSHAPES && !rc; s++) {
        const shape *sh = &shapes[s];
        int is_default = s == 0 || shapes[s - 1].v != sh->v;
        /* exact and quick mode: the default shape of each variant only; task: one work-item, small only */
        if ((c == 1 || b->quick) && !is_default) continue;
        char name[96];
        shape_name(name, sizeof name, sh, 0);
        if (sh->v == RCL_SPMV_TASK && A->nnz > ((size_t)1 << 20)) {
          cli_bench_skip(b, "spmv", label, name, "one work-item: benchmarked on matrices up to 2^20 entries only");
          continue;
        }
        bench_run r = {mode ? N : M,
                       y,
                       x,
                       {0},
                       {0},
                       RCL_SPMV_OPTIONS_INIT,
                       0,
                       0,
                       0,
                       rcl_context_cl_queue(mode ? b->native : b->ctx),
                       1};
        cli_sparse_scalar(r.alpha, "alpha", "1", A->dtype);
        cli_sparse_scalar(r.beta, "beta", "0", A->dtype);
        r.o.contract = c ? RCL_SPMV_EXACT : RCL_SPMV_ORDERED;
        r.o.variant = sh->v;
        r.o.local_size = sh->local;
        r.o.lanes = sh->lanes;
        r.o.block_nnz = sh->block;
        r.o.slice = sh->slice;
        double secs;
        char full[128];
        snprintf(full, sizeof full, "%s/%s", rcl_spmv_contract_name(r.o.contract), name);
        rc = bench_case(b, &r, A, label, full, mode ? "native" : "reproducible", &secs);
        if (!rc && secs > 0 && c == 0) {
          double *bp = mode ? &bst.best_native : &bst.best_repro;
          if (secs < *bp) {
            *bp = secs;
            snprintf(mode ? bst.native_name : bst.repro_name, sizeof bst.repro_name, "%s", name);
          }
        }
      }
    }
  /* the conventional kernel: strided lane sums and a tree, built natively */
  static const size_t lanes[] = {0, 4, 8, 16, 32};
  for (size_t l = 0; l < 5 && !rc; l++) {
    if (b->quick && l) break;
    bench_run r = {N, y, x, {0}, {0}, RCL_SPMV_OPTIONS_INIT, 1, lanes[l], 0, rcl_context_cl_queue(b->native), 1};
    cli_sparse_scalar(r.alpha, "alpha", "1", A->dtype);
    cli_sparse_scalar(r.beta, "beta", "0", A->dtype);
    shape sh = {RCL_SPMV_VECTOR, 0, lanes[l], 0, 0};
    char name[96];
    shape_name(name, sizeof name, &sh, 1);
    double secs;
    rc = bench_case(b, &r, A, label, name, "native", &secs);
    if (!rc && secs > 0 && secs < bst.best_native) {
      bst.best_native = secs;
      snprintf(bst.native_name, sizeof bst.native_name, "%s", name);
    }
  }
  if (!rc && isfinite(bst.best_repro) && isfinite(bst.best_native)) {
    double bytes = cli_sparse_spmv_bytes(A, 0), gb = bytes / bst.best_repro / 1e9;
    json_t *s =
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:f,s:f,s:f,s:f,s:f}", "family", "spmv", "kernel", "summary", "matrix",
                  label, "dtype", rcl_dtype_name(A->dtype), "device", b->device_name, "fastest_reproducible_ordered",
                  bst.repro_name, "reproducible_gbps", gb, "fastest_native_gbps", bytes / bst.best_native / 1e9,
                  "reproducible_over_native_time", bst.best_repro / bst.best_native, "reproducible_gflops",
                  2.0 * (double)A->nnz / bst.best_repro / 1e9, "copy_gbps", b->copy_gbps);
    json_object_set_new(s, "fastest_native", json_string(bst.native_name));
    if (b->copy_gbps > 0) json_object_set_new(s, "reproducible_copy_fraction", json_real(gb / b->copy_gbps));
    json_array_append_new(b->results, s);
    fprintf(stderr,
            "  spmv     summary %s %s: reproducible ordered %s %.1f GB/s (%.0f%% of copy), %.2fx the time of "
            "native %s\n",
            label, rcl_dtype_name(A->dtype), bst.repro_name, gb, b->copy_gbps > 0 ? 100.0 * gb / b->copy_gbps : 0.0,
            bst.best_repro / bst.best_native, bst.native_name);
  }
out:
  if (x) clReleaseMemObject(x);
  if (y) clReleaseMemObject(y);
  rcl_spmv_matrix_free(N);
  rcl_spmv_matrix_free(M);
  return rc;
}

static const char *const real_files[] = {"/usr/lib/R/library/Matrix/external/utm300.rua",
                                         "/usr/lib/R/library/Matrix/external/lund_a.mtx",
                                         "/usr/share/doc/libsuperlu-dev/examples/g20.rua"};

int cli_bench_spmv(cli_bench *b) {
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  /* full: the 3D Poisson matrix (120^3 rows, 11.9M entries), a SHOC-style random matrix (16384 rows,
   * 2.7M entries) and a 2D mesh Laplacian (55696 rows), a power-law matrix with very unbalanced rows */
  static const char *const full[] = {"poisson3d:120", "random:16384x16384:165:1", "poisson2d:236",
                                     "powerlaw:500000x500000:3:1"};
  static const char *const quick[] = {"poisson3d:12", "random:1024x1024:32:1", "powerlaw:4000x4000:2:1"};
  const rcl_device_profile *p = rcl_context_profile(b->ctx);
  for (int d = 0; d < 2; d++) {
    const char *why;
    if (rcl_device_profile_support(p, RCL_FAMILY_SPMV, dts[d], &why) == RCL_SUPPORT_NONE) {
      cli_bench_skip(b, "spmv", "all", rcl_dtype_name(dts[d]), why);
      continue;
    }
    size_t ng = b->quick ? sizeof quick / sizeof *quick : sizeof full / sizeof *full;
    for (size_t g = 0; g < ng; g++) {
      const char *spec = b->quick ? quick[g] : full[g];
      rcl_csr *A;
      if (rcl_csr_generate(&A, dts[d], spec)) return cli_fail("generating %s", spec);
      int rc = bench_matrix(b, A, spec);
      rcl_csr_free(A);
      if (rc) return cli_fail("spmv benchmark on %s", spec);
    }
    for (size_t f = 0; f < sizeof real_files / sizeof *real_files; f++) {
      const char *label = strrchr(real_files[f], '/') + 1;
      /* installed, or unpacked under $REPROCL_DATA_PREFIX (dpkg -x on a host without the packages) */
      char path[1024];
      const char *pre = getenv("REPROCL_DATA_PREFIX");
      snprintf(path, sizeof path, "%s%s", access(real_files[f], R_OK) != 0 && pre ? pre : "", real_files[f]);
      if (access(path, R_OK) != 0) {
        cli_bench_skip(b, "spmv", label, rcl_dtype_name(dts[d]),
                       "file absent: install r-cran-matrix and libsuperlu-doc");
        continue;
      }
      rcl_csr *A;
      if (rcl_matrix_read(&A, path, dts[d])) return cli_fail("reading %s", path);
      int rc = bench_matrix(b, A, label);
      rcl_csr_free(A);
      if (rc) return cli_fail("spmv benchmark on %s", label);
    }
  }
  return 0;
}

/* ---- CG: time per iteration at a fixed iteration count ----------------------------------------------- */

int cli_bench_cg(cli_bench *b) {
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  const char *spec = b->quick ? "poisson2d:24" : "poisson3d:100";
  size_t iters = b->quick ? 10 : 100;
  const rcl_device_profile *p = rcl_context_profile(b->ctx);
  for (int d = 0; d < 2; d++) {
    const char *why;
    if (rcl_device_profile_support(p, RCL_FAMILY_SPMV, dts[d], &why) == RCL_SUPPORT_NONE) {
      cli_bench_skip(b, "cg", "all", rcl_dtype_name(dts[d]), why);
      continue;
    }
    rcl_csr *A;
    if (rcl_csr_generate(&A, dts[d], spec)) return cli_fail("generating %s", spec);
    size_t n = A->nrows, es = rcl_dtype_size(dts[d]);
    void *bv = malloc(n * es), *x = malloc(n * es);
    rcl_spmv_matrix *M = NULL, *N = NULL;
    int rc = bv && x ? 0 : cli_error("out of memory");
    if (!rc && (rcl_spmv_matrix_create(&M, b->ctx, A) || rcl_spmv_matrix_share(&N, M, b->native)))
      rc = cli_fail("uploading %s", spec);
    if (!rc) rcl_generate(bv, dts[d], n, RCL_GEN_UNIFORM, 5);
    for (int jac = 0; jac < 2 && !rc; jac++)
      for (int mode = 0; mode < 2 && !rc; mode++) {
        rcl_cg_options o = RCL_CG_OPTIONS_INIT;
        o.tol = 0; /* run exactly `iters` iterations */
        o.max_iterations = iters;
        o.jacobi = jac;
        double t[64];
        int reps = b->repeats < 64 ? b->repeats : 64;
        for (int k = -1; k < reps && !rc; k++) { /* k = -1: warm-up (builds programs) */
          rcl_cg_result r;
          memset(x, 0, n * es);
          double t0 = cli_now();
          int st = rcl_cg(x, &r, mode ? N : M, bv, &o);
          double dt = cli_now() - t0;
          if (st && st != RCL_ERR_NO_CONVERGENCE)
            rc = cli_fail("cg on %s", spec);
          else if (k >= 0)
            t[k] = dt / (double)(r.iterations ? r.iterations : 1);
          rcl_cg_result_free(&r);
        }
        if (rc) break;
        for (int i = 1; i < reps; i++) /* insertion sort for the median */
          for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double s = t[j];
            t[j] = t[j - 1];
            t[j - 1] = s;
          }
        /* per iteration: one SpMV, two dots, one norm, three axpys, one scal (and the Jacobi SpMV) */
        double bytes = cli_sparse_spmv_bytes(A, 0) + (double)n * es * (2 + 2 + 1 + 3 + 3 + 3 + 2) +
                       (jac ? (double)n * (2 * es + 8) : 0.0);
        double flops = 2.0 * (double)A->nnz + 12.0 * (double)n + (jac ? 2.0 * (double)n : 0.0);
        cli_bench_record(b, "cg", spec, jac ? "jacobi" : "plain", mode ? "native" : "reproducible", dts[d], spec,
                         t[reps / 2], t[0], t[reps - 1], bytes, flops,
                         json_pack("{s:I,s:s}", "iterations", (json_int_t)iters, "time", "per iteration"));
      }
    rcl_spmv_matrix_free(N);
    rcl_spmv_matrix_free(M);
    free(bv);
    free(x);
    rcl_csr_free(A);
    if (rc) return rc;
  }
  return 0;
}
