/* SpMV and CG benchmarks: every variant and a few launch shapes per variant, reproducible (ordered and
 * exact contracts) beside the same kernels built natively and beside a conventional CSR-vector kernel
 * with a tree reduction, on real matrices from Debian packages and on generated ones (a 3D Poisson
 * matrix with about 12M non-zeros in full mode). Each (matrix, dtype) ends with a summary record: the
 * fastest reproducible ordered configuration against the fastest native one and the copy bandwidth. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "peers.h"
#include "sparse_cli.h"

typedef struct {
  rcl_spmv_matrix *M;
  cl_mem y, x;
  unsigned char alpha[8], beta[8];
  rcl_spmv_options o;
  int baseline;
  size_t lanes, local;
  cl_command_queue q;
  int reps;                /* launches per timed sample */
  peer_viennacl_matrix *V; /* set: ViennaCL's SpMV instead */
} bench_run;

static int bench_once(void *p) {
  bench_run *r = p;
  if (r->V) return peer_viennacl_spmv(r->V, r->y, r->x, r->reps) ? RCL_ERR_OPENCL : 0;
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
  double best_repro, best_native, best_exact;
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
  char what[256];
  snprintf(what, sizeof what, "%s %s", label, name);
  if (r->V && rc) { /* the peer failed on this device: say why and go on */
    cli_bench_skip(b, "spmv", "spmv", what, peer_viennacl_error());
    return 0;
  }
  if (rc == RCL_ERR_INVALID_ARG || rc == RCL_ERR_UNSUPPORTED) { /* a shape beyond this device's limits */
    cli_bench_skip(b, "spmv", "spmv", what, rcl_error_last());
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
                r->V          ? "none (peer)"
                : r->baseline ? "none (tree)"
                              : rcl_spmv_contract_name(r->o.contract),
                "rows", (json_int_t)A->nrows, "nnz", (json_int_t)A->nnz, "launches_per_sample", (json_int_t)r->reps);
  cli_bench_record(b, "spmv", "spmv", name, mode, A->dtype, label, (double)A->nnz, med, mn, mx,
                   cli_sparse_spmv_bytes(A, 0), 2.0 * (double)A->nnz, extra);
  *secs = med;
  return 0;
}

/* ViennaCL's y against reprocl's ordered y (default launch), as drift_vs_reprocl in the peer's record
 * (the last one appended): a peer that computes something else cannot pass for a fast one. */
static int peer_drift(cli_bench *b, rcl_spmv_matrix *M, bench_run *r, const rcl_csr *A) {
  size_t es = rcl_dtype_size(A->dtype), bytes = A->nrows * es;
  unsigned char *got = malloc(bytes ? bytes : 1), *ref = malloc(bytes ? bytes : 1);
  cl_command_queue q = rcl_context_cl_queue(b->ctx);
  int rc = got && ref ? 0 : RCL_ERR_OUT_OF_MEMORY;
  r->reps = 1;
  if (!rc) rc = bench_once(r);
  if (!rc && clEnqueueReadBuffer(q, r->y, CL_TRUE, 0, bytes, got, 0, NULL, NULL)) rc = RCL_ERR_OPENCL;
  bench_run o = {M, r->y, r->x, {0}, {0}, RCL_SPMV_OPTIONS_INIT, 0, 0, 0, q, 1, NULL};
  memcpy(o.alpha, r->alpha, 8);
  memcpy(o.beta, r->beta, 8);
  if (!rc) rc = bench_once(&o);
  if (!rc && clEnqueueReadBuffer(q, r->y, CL_TRUE, 0, bytes, ref, 0, NULL, NULL)) rc = RCL_ERR_OPENCL;
  if (!rc) {
    cli_drift d;
    cli_drift_compute(&d, ref, got, A->nrows, A->dtype);
    json_object_set_new(json_array_get(b->results, json_array_size(b->results) - 1), "drift_vs_reprocl",
                        cli_drift_json(&d));
  }
  free(got);
  free(ref);
  return rc;
}

/* The vectors x (deterministic uniform values) and y on the context; x or y NULL when they could not be made. */
static void bench_vectors(cl_mem *x, cl_mem *y, cli_bench *b, const rcl_csr *A) {
  cl_context clc = rcl_context_cl_context(b->ctx);
  size_t es = rcl_dtype_size(A->dtype);
  void *hx = malloc((A->ncols ? A->ncols : 1) * es);
  cl_int err;
  if (hx) {
    rcl_generate(hx, A->dtype, A->ncols, RCL_GEN_UNIFORM, 7);
    *x = clCreateBuffer(clc, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (A->ncols ? A->ncols : 1) * es, hx, &err);
    *y = *x ? clCreateBuffer(clc, CL_MEM_READ_WRITE, (A->nrows ? A->nrows : 1) * es, NULL, &err) : NULL;
  }
  free(hx);
}

/* The peer first: ViennaCL's compressed_matrix SpMV on the same context, queue and vectors. */
static int bench_peer(double *peer_secs, cli_bench *b, rcl_spmv_matrix *M, cl_mem x, cl_mem y, const rcl_csr *A,
                      const char *label) {
  int rc = 0;
  if (cli_bench_peer_runs(b, "spmv", "viennacl", peer_viennacl_available())) {
    peer_viennacl_matrix *V = NULL;
    if (peer_viennacl_matrix_create(&V, rcl_context_cl_queue(b->ctx), A)) {
      char what[256];
      snprintf(what, sizeof what, "%s viennacl", label);
      cli_bench_skip(b, "spmv", "spmv", what, peer_viennacl_error());
    } else {
      bench_run r = {M, y, x, {0}, {0}, RCL_SPMV_OPTIONS_INIT, 0, 0, 0, rcl_context_cl_queue(b->ctx), 1, V};
      cli_sparse_scalar(r.alpha, "alpha", "1", A->dtype);
      cli_sparse_scalar(r.beta, "beta", "0", A->dtype);
      rc = bench_case(b, &r, A, label, "viennacl", "peer:viennacl", peer_secs);
      if (!rc && *peer_secs > 0) rc = peer_drift(b, M, &r, A);
    }
    peer_viennacl_matrix_free(V);
  }
  return rc;
}

/* One launch shape sh of reprocl's kernels (mode 0 reproducible on M, 1 native on N; contract c 0
 * ordered, 1 exact), its time kept in bst where it is the fastest so far. */
static int bench_shape(cli_bench *b, rcl_spmv_matrix *M, rcl_spmv_matrix *N, cl_mem x, cl_mem y, const rcl_csr *A,
                       const char *label, int mode, int c, const shape *sh, best *bst) {
  char name[96];
  shape_name(name, sizeof name, sh, 0);
  char full[112];
  snprintf(full, sizeof full, "%s/%s", c ? "exact" : "ordered", name);
  if (sh->v == RCL_SPMV_TASK && A->nnz > ((size_t)1 << 20)) {
    char what[256];
    snprintf(what, sizeof what, "%s %s", label, full);
    cli_bench_skip(b, "spmv", "spmv", what, "one work-item: benchmarked on matrices up to 2^20 entries only");
    return 0;
  }
  bench_run r = {
      mode ? N : M, y, x, {0}, {0}, RCL_SPMV_OPTIONS_INIT, 0, 0, 0, rcl_context_cl_queue(mode ? b->native : b->ctx), 1,
      NULL};
  cli_sparse_scalar(r.alpha, "alpha", "1", A->dtype);
  cli_sparse_scalar(r.beta, "beta", "0", A->dtype);
  r.o.contract = c ? RCL_SPMV_EXACT : RCL_SPMV_ORDERED;
  r.o.variant = sh->v;
  r.o.local_size = sh->local;
  r.o.lanes = sh->lanes;
  r.o.block_nnz = sh->block;
  r.o.slice = sh->slice;
  double secs;
  int rc = bench_case(b, &r, A, label, full, mode ? "native" : "reproducible", &secs);
  if (!rc && secs > 0 && c == 0) {
    double *bp = mode ? &bst->best_native : &bst->best_repro;
    if (secs < *bp) {
      *bp = secs;
      snprintf(mode ? bst->native_name : bst->repro_name, sizeof bst->repro_name, "%s", name);
    }
  }
  if (!rc && secs > 0 && c == 1 && mode == 0 && secs < bst->best_exact) bst->best_exact = secs;
  return rc;
}

/* the conventional kernel: strided lane sums and a tree, built natively */
static int bench_baseline(cli_bench *b, rcl_spmv_matrix *N, cl_mem x, cl_mem y, const rcl_csr *A, const char *label,
                          best *bst) {
  static const size_t lanes[] = {0, 4, 8, 16, 32};
  int rc = 0;
  for (size_t l = 0; l < 5 && !rc; l++) {
    if (b->quick && l) break;
    bench_run r = {N, y, x, {0}, {0}, RCL_SPMV_OPTIONS_INIT, 1, lanes[l], 0, rcl_context_cl_queue(b->native), 1, NULL};
    cli_sparse_scalar(r.alpha, "alpha", "1", A->dtype);
    cli_sparse_scalar(r.beta, "beta", "0", A->dtype);
    shape sh = {RCL_SPMV_VECTOR, 0, lanes[l], 0, 0};
    char name[96];
    shape_name(name, sizeof name, &sh, 1);
    double secs;
    rc = bench_case(b, &r, A, label, name, "native", &secs);
    if (!rc && secs > 0 && secs < bst->best_native) {
      bst->best_native = secs;
      snprintf(bst->native_name, sizeof bst->native_name, "%s", name);
    }
  }
  return rc;
}

/* The summary of the matrix: the fastest reproducible ordered configuration (what a tuned run would
 * pick) against the fastest native one, the fastest exact one and the peer. */
static void bench_summary(cli_bench *b, const rcl_csr *A, const char *label, const best *bst, double peer_secs) {
  double bytes = cli_sparse_spmv_bytes(A, 0), gb = bytes / bst->best_repro / 1e9;
  json_t *s = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:s,s:s,s:f,s:f,s:f,s:f,s:f}", "record", "summary", "family", "spmv",
                        "kernel", "spmv", "size", label, "dtype", rcl_dtype_name(A->dtype), "n", (json_int_t)A->nnz,
                        "device", b->device_name, "fastest_reproducible_ordered", bst->repro_name, "reproducible_gbps",
                        gb, "fastest_native_gbps", bytes / bst->best_native / 1e9, "reproducible_over_native_time",
                        bst->best_repro / bst->best_native, "reproducible_gflops",
                        2.0 * (double)A->nnz / bst->best_repro / 1e9, "copy_gbps", b->copy_gbps);
  json_object_set_new(s, "fastest_native", json_string(bst->native_name));
  json_object_set_new(s, "reproducible_copy_fraction", b->copy_gbps > 0 ? json_real(gb / b->copy_gbps) : json_null());
  json_object_set_new(s, "exact_over_ordered_time",
                      isfinite(bst->best_exact) ? json_real(bst->best_exact / bst->best_repro) : json_null());
  json_object_set_new(s, "reproducible_over_viennacl_time",
                      peer_secs > 0 ? json_real(bst->best_repro / peer_secs) : json_null());
  json_array_append_new(b->results, s);
  char peer[64] = "";
  if (peer_secs > 0) snprintf(peer, sizeof peer, ", %.2fx ViennaCL's", bst->best_repro / peer_secs);
  fprintf(stderr,
          "  spmv     summary %s %s: reproducible ordered %s %.1f GB/s (%.0f%% of copy), %.2fx the time of "
          "native %s%s\n",
          label, rcl_dtype_name(A->dtype), bst->repro_name, gb, b->copy_gbps > 0 ? 100.0 * gb / b->copy_gbps : 0.0,
          bst->best_repro / bst->best_native, bst->native_name, peer);
}

/* Every configuration of one matrix: the peer, reprocl's shapes (reproducible and native, ordered and
 * exact), the conventional kernel, then the summary. */
static int bench_matrix(cli_bench *b, const rcl_csr *A, const char *label) {
  size_t es = rcl_dtype_size(A->dtype);
  const rcl_device_profile *p = rcl_context_profile(b->ctx);
  char what[256];
  snprintf(what, sizeof what, "%s %s", label, rcl_dtype_name(A->dtype));
  if ((double)A->nnz * (double)(es + 4) > (double)p->max_mem_alloc_size) {
    cli_bench_skip(b, "spmv", "spmv", what, "matrix larger than the device's largest buffer");
    return 0;
  }
  rcl_spmv_matrix *M = NULL, *N = NULL;
  if (rcl_spmv_matrix_create(&M, b->ctx, A) || rcl_spmv_matrix_share(&N, M, b->native)) {
    rcl_spmv_matrix_free(M);
    cli_bench_skip(b, "spmv", "spmv", what, rcl_error_last());
    return 0;
  }
  cl_mem x = NULL, y = NULL;
  bench_vectors(&x, &y, b, A);
  int rc = 0;
  double peer_secs = 0;
  if (!y) {
    cli_bench_skip(b, "spmv", "spmv", what, "device buffers could not be allocated");
    goto out;
  }
  rc = bench_peer(&peer_secs, b, M, x, y, A, label);
  best bst = {INFINITY, INFINITY, INFINITY, "", ""};
  for (int mode = 0; mode < 2 && !rc; mode++) /* reproducible, native */
    for (int c = 0; c < 2 && !rc; c++) {      /* ordered, exact */
      for (size_t s = 0; s < NSHAPES && !rc; s++) {
        const shape *sh = &shapes[s];
        int is_default = s == 0 || shapes[s - 1].v != sh->v;
        /* exact and quick mode: the default shape of each variant only; task: one work-item, small only */
        if ((c == 1 || b->quick) && !is_default) continue;
        rc = bench_shape(b, M, N, x, y, A, label, mode, c, sh, &bst);
      }
    }
  if (!rc) rc = bench_baseline(b, N, x, y, A, label, &bst);
  if (!rc && isfinite(bst.best_repro) && isfinite(bst.best_native)) bench_summary(b, A, label, &bst, peer_secs);
out:
  if (x) clReleaseMemObject(x);
  if (y) clReleaseMemObject(y);
  rcl_spmv_matrix_free(N);
  rcl_spmv_matrix_free(M);
  return rc;
}

/* Real matrices from Debian packages, then generated ones, in increasing size (so that a time budget cuts
 * the largest): the 3D Poisson matrix (120^3 rows, 12.0M entries) is the target case; the power-law
 * matrix (19.2M entries, one full row) comes last. nnz (approximate for the files) drives the budget. */
typedef struct {
  const char *spec; /* "file:PATH" or a rcl_csr_generate spec */
  double nnz;
  const char *package;
} matrix_def;
static const matrix_def full_matrices[] = {
    {"file:/usr/share/doc/libsuperlu-dev/examples/g20.rua", 1920, "libsuperlu-doc"},
    {"file:/usr/lib/R/library/Matrix/external/lund_a.mtx", 2449, "r-cran-matrix"},
    {"file:/usr/lib/R/library/Matrix/external/utm300.rua", 3155, "r-cran-matrix"},
    {"file:/usr/lib/x86_64-linux-gnu/superlu-dist/tests/EXAMPLE/big.rua", 23884, "libsuperlu-dist-dev"},
    {"poisson2d:236", 277536, NULL},
    {"random:16384x16384:165:1", 2703360, NULL},
    {"poisson3d:120", 12009600, NULL},
    {"powerlaw:500000x500000:3:1", 19169114, NULL}};
static const matrix_def quick_matrices[] = {
    {"file:/usr/share/doc/libsuperlu-dev/examples/g20.rua", 1920, "libsuperlu-doc"},
    {"file:/usr/lib/R/library/Matrix/external/lund_a.mtx", 2449, "r-cran-matrix"},
    {"poisson3d:12", 11232, NULL},
    {"random:1024x1024:32:1", 32768, NULL},
    {"powerlaw:4000x4000:2:1", 59955, NULL}};

/* Loads a matrix of the table in dtype; *A = NULL (and a skip recorded) when its file is absent. */
static int load_matrix(cli_bench *b, rcl_csr **A, const char **label, const matrix_def *m, rcl_dtype dt) {
  *A = NULL;
  if (strncmp(m->spec, "file:", 5)) {
    *label = m->spec;
    return rcl_csr_generate(A, dt, m->spec) ? cli_fail("generating %s", m->spec) : 0;
  }
  const char *file = m->spec + 5;
  *label = strrchr(file, '/') + 1;
  /* installed, or unpacked under $REPROCL_DATA_PREFIX (dpkg -x on a host without the packages) */
  char path[1024];
  const char *pre = getenv("REPROCL_DATA_PREFIX");
  snprintf(path, sizeof path, "%s%s", access(file, R_OK) != 0 && pre ? pre : "", file);
  if (access(path, R_OK) != 0) {
    char what[128], why[160];
    snprintf(what, sizeof what, "%s %s", *label, rcl_dtype_name(dt));
    snprintf(why, sizeof why, "file absent: install %s", m->package);
    cli_bench_skip(b, "spmv", "spmv", what, why);
    return 0;
  }
  return rcl_matrix_read(A, path, dt) ? cli_fail("reading %s", path) : 0;
}

int cli_bench_spmv(cli_bench *b) {
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  const rcl_device_profile *p = rcl_context_profile(b->ctx);
  cli_bench_peer_on(b, "spmv", "viennacl", peer_viennacl_available());
  int supported[2];
  for (int d = 0; d < 2; d++) {
    const char *why;
    supported[d] = rcl_device_profile_support(p, RCL_FAMILY_SPMV, dts[d], &why) != RCL_SUPPORT_NONE;
    if (!supported[d]) cli_bench_skip(b, "spmv", "all", rcl_dtype_name(dts[d]), why);
  }
  const matrix_def *list = b->quick ? quick_matrices : full_matrices;
  size_t nm = b->quick ? sizeof quick_matrices / sizeof *quick_matrices : sizeof full_matrices / sizeof *full_matrices;
  for (size_t g = 0; g < nm; g++) {
    /* the time of a matrix grows with its entries once they outweigh the per-case overhead (~1e5) */
    double growth = g ? fmax(1.0, list[g].nnz / fmax(list[g - 1].nnz, 1e5)) : 1.0;
    const char *name = strrchr(list[g].spec, '/') ? strrchr(list[g].spec, '/') + 1 : list[g].spec;
    if (cli_bench_out_of_time(b, "spmv", name, growth)) continue;
    for (int d = 0; d < 2; d++) {
      if (!supported[d]) continue;
      rcl_csr *A;
      const char *label;
      int rc = load_matrix(b, &A, &label, &list[g], dts[d]);
      if (!rc && A) rc = bench_matrix(b, A, label);
      rcl_csr_free(A);
      if (rc) return cli_fail("spmv benchmark on %s", list[g].spec);
    }
  }
  return 0;
}

/* ---- CG: time per iteration at a fixed iteration count ----------------------------------------------- */

typedef struct {
  rcl_spmv_matrix *M;      /* reprocl, or */
  peer_viennacl_matrix *V; /* ViennaCL */
  cl_command_queue q;
  cl_mem x, b;
  size_t es, n, iters, done;
  rcl_cg_options o;
} cg_run;

/* One solve from x0 = 0 (the zero fill is part of the time: one write of x, negligible beside the
 * iterations) for exactly o.max_iterations iterations. */
static int cg_once(void *p) {
  cg_run *r = p;
  r->done = 0;
  if (r->V) return peer_viennacl_cg(r->V, r->x, r->b, r->iters, r->o.jacobi, &r->done) ? RCL_ERR_OPENCL : 0;
  uint64_t zero = 0;
  if (clEnqueueFillBuffer(r->q, r->x, &zero, r->es, 0, r->n * r->es, 0, NULL, NULL)) return RCL_ERR_OPENCL;
  rcl_cg_result res;
  memset(&res, 0, sizeof res);
  int st = rcl_cg_solve(&res, r->M, r->x, r->b, &r->o, NULL);
  r->done = res.iterations;
  rcl_cg_result_free(&res);
  return st == RCL_ERR_NO_CONVERGENCE ? 0 : st;
}

/* One dtype's CG benchmark: the matrix on both contexts and ViennaCL's, the vectors on the device, the
 * host copies of the solutions that are compared. */
typedef struct {
  const char *spec;
  rcl_dtype dt;
  rcl_csr *A;
  size_t n, es;
  void *bv, *x_repro, *x_peer;
  rcl_spmv_matrix *M, *N;
  peer_viennacl_matrix *V;
  cl_mem xb, bb;
} cg_bench;

/* The matrices, the right-hand side b and the solution x on the device, and the peer's matrix (a peer
 * that cannot take it is skipped). */
static int cg_setup(cli_bench *b, cg_bench *c) {
  size_t n = c->n, es = c->es;
  cl_int err;
  c->bv = malloc(n * es);
  c->x_repro = malloc(n * es);
  c->x_peer = malloc(n * es);
  int rc = c->bv && c->x_repro && c->x_peer ? 0 : cli_error("out of memory");
  if (!rc && (rcl_spmv_matrix_create(&c->M, b->ctx, c->A) || rcl_spmv_matrix_share(&c->N, c->M, b->native)))
    rc = cli_fail("uploading %s", c->spec);
  if (!rc) {
    rcl_generate(c->bv, c->dt, n, RCL_GEN_UNIFORM, 5);
    c->bb =
        clCreateBuffer(rcl_context_cl_context(b->ctx), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * es, c->bv, &err);
    c->xb = c->bb ? clCreateBuffer(rcl_context_cl_context(b->ctx), CL_MEM_READ_WRITE, n * es, NULL, &err) : NULL;
    if (!c->xb) rc = cli_error("cannot allocate the CG vectors (%zu values) on the device", n);
  }
  if (!rc && cli_bench_peer_runs(b, "cg", "viennacl", peer_viennacl_available()) &&
      peer_viennacl_matrix_create(&c->V, rcl_context_cl_queue(b->ctx), c->A)) {
    char what[64];
    snprintf(what, sizeof what, "viennacl %s", rcl_dtype_name(c->dt));
    cli_bench_skip(b, "cg", "cg", what, peer_viennacl_error());
  }
  return rc;
}

/* Iterations per solve: enough for about 0.3 s (at least 10, at most 100), from a 10-iteration solve
 * of reprocl's plain CG, the same for every mode and peer (the time per iteration is what counts;
 * a CPU would otherwise spend minutes here). */
static int cg_calibrate(size_t *iters, cli_bench *b, const cg_bench *c) {
  cg_run r = {c->M, NULL, rcl_context_cl_queue(b->ctx), c->xb, c->bb, c->es, c->n, 10, 0, RCL_CG_OPTIONS_INIT};
  r.o.tol = 0;
  r.o.max_iterations = 10;
  double t0 = cli_now();
  if (cg_once(&r) || cg_once(&r)) /* the first builds the programs */
    return cli_fail("cg on %s", c->spec);
  double per = (cli_now() - t0) / 20.0;
  *iters = per > 0 ? (size_t)fmin(100.0, fmax(10.0, 0.3 / per)) : 100;
  return 0;
}

/* One timed record: plain or Jacobi CG (jac) in one mode (0 reproducible, 1 native, 2 ViennaCL), with
 * the peer's drift from reprocl's solution. */
static int cg_mode(cli_bench *b, cg_bench *c, size_t iters, int jac, int mode, double bytes, double flops) {
  size_t n = c->n, es = c->es;
  cg_run r = {mode == 1 ? c->N : c->M,
              mode == 2 ? c->V : NULL,
              rcl_context_cl_queue(mode == 1 ? b->native : b->ctx),
              c->xb,
              c->bb,
              es,
              n,
              iters,
              0,
              RCL_CG_OPTIONS_INIT};
  r.o.tol = 0; /* run exactly `iters` iterations */
  r.o.max_iterations = iters;
  r.o.jacobi = jac;
  double med, mn, mx;
  int st = cli_bench_time(&med, &mn, &mx, b->repeats, cg_once, &r);
  if (st && mode == 2) {
    char what[64];
    snprintf(what, sizeof what, "viennacl %s %s", jac ? "jacobi" : "plain", rcl_dtype_name(c->dt));
    cli_bench_skip(b, "cg", "cg", what, peer_viennacl_error());
    return 0;
  }
  if (st) return cli_fail("cg on %s", c->spec);
  /* ViennaCL's solution against reprocl's (same iterations from the same start) */
  json_t *drift = NULL;
  if (mode != 1 && c->x_repro) {
    void *dst = mode == 0 ? c->x_repro : c->x_peer;
    if (clEnqueueReadBuffer(r.q, c->xb, CL_TRUE, 0, n * es, dst, 0, NULL, NULL))
      return cli_error("cannot read the CG solution back");
    if (mode == 2) {
      cli_drift dd;
      cli_drift_compute(&dd, c->x_repro, c->x_peer, n, c->dt);
      drift = cli_drift_json(&dd);
    }
  }
  double it = (double)(r.done ? r.done : 1);
  cli_bench_record(b, "cg", "cg", jac ? "jacobi" : "plain",
                   mode == 2 ? "peer:viennacl"
                   : mode    ? "native"
                             : "reproducible",
                   c->dt, c->spec, (double)c->A->nnz, med / it, mn / it, mx / it, bytes, flops,
                   json_pack("{s:s,s:I,s:I,s:s}", "matrix", c->spec, "rows", (json_int_t)n, "iterations",
                             (json_int_t)r.done, "time", "per iteration"));
  if (drift)
    json_object_set_new(json_array_get(b->results, json_array_size(b->results) - 1), "drift_vs_reprocl", drift);
  return 0;
}

/* Releases what cg_setup made, and the matrix. */
static void cg_bench_free(cg_bench *c) {
  peer_viennacl_matrix_free(c->V);
  if (c->xb) clReleaseMemObject(c->xb);
  if (c->bb) clReleaseMemObject(c->bb);
  rcl_spmv_matrix_free(c->N);
  rcl_spmv_matrix_free(c->M);
  free(c->bv);
  free(c->x_repro);
  free(c->x_peer);
  rcl_csr_free(c->A);
}

int cli_bench_cg(cli_bench *b) {
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  const char *spec = b->quick ? "poisson2d:24" : "poisson3d:100";
  size_t iters = 10;
  const rcl_device_profile *p = rcl_context_profile(b->ctx);
  cli_bench_peer_on(b, "cg", "viennacl", peer_viennacl_available());
  for (int d = 0; d < 2; d++) {
    const char *why;
    if (rcl_device_profile_support(p, RCL_FAMILY_SPMV, dts[d], &why) == RCL_SUPPORT_NONE) {
      cli_bench_skip(b, "cg", "all", rcl_dtype_name(dts[d]), why);
      continue;
    }
    if (cli_bench_out_of_time(b, "cg", rcl_dtype_name(dts[d]), 2.0)) continue;
    rcl_csr *A;
    if (rcl_csr_generate(&A, dts[d], spec)) return cli_fail("generating %s", spec);
    cg_bench c = {spec, dts[d], A, A->nrows, rcl_dtype_size(dts[d]), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    size_t n = c.n, es = c.es;
    int rc = cg_setup(b, &c);
    if (!rc && !b->quick) rc = cg_calibrate(&iters, b, &c);
    /* per iteration: one SpMV, two dots, one norm, three axpys, one scal (and the Jacobi SpMV) */
    for (int jac = 0; jac < 2 && !rc; jac++) {
      double bytes = cli_sparse_spmv_bytes(A, 0) + (double)n * es * (2 + 2 + 1 + 3 + 3 + 3 + 2) +
                     (jac ? (double)n * (2 * es + 8) : 0.0);
      double flops = 2.0 * (double)A->nnz + 12.0 * (double)n + (jac ? 2.0 * (double)n : 0.0);
      for (int mode = 0; mode < 3 && !rc; mode++) { /* reproducible, native, ViennaCL */
        if (mode == 2 && !c.V) continue;
        rc = cg_mode(b, &c, iters, jac, mode, bytes, flops);
      }
    }
    cg_bench_free(&c);
    if (rc) return rc;
  }
  return 0;
}
