/* The SpMV family's tuner plug-in (docs/tuning.md, "Plugging a family in"): the tunables of
 * y = alpha*A*x + beta*y — variant (scalar, vector, adaptive, sliced ELL, task), work-group size, vector
 * lanes, adaptive block size, ELL slice height and the long-row threshold — per contract, for matrices
 * with regular rows and for irregular ones (the best variant depends on the row-length spread). The
 * validity predicate is the launch planner of spmv_launch.c; runs use a scratch matrix and vectors of
 * deterministic data. CG uses these choices through its SpMVs (and the reductions' through its dots). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sparse/sparse_internal.h"

static const size_t variant_values[] = {RCL_SPMV_SCALAR, RCL_SPMV_VECTOR, RCL_SPMV_ADAPTIVE, RCL_SPMV_SELL,
                                        RCL_SPMV_TASK};
static const char *const variant_labels[] = {"scalar", "vector", "adaptive", "sell", "task"};
static const size_t local_values[] = {32, 64, 128, 256};
static const size_t lanes_values[] = {2, 4, 8, 32};
static const size_t block_values[] = {256, 1024, 4096};
static const size_t slice_values[] = {8, 32, 128};
static const size_t long_row_values[] = {256, 2048, 16384};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
/* Indexed by RCL_SP_P_*; the names are the rcl_spmv_options fields. */
static const rcl_tune_param_def spmv_params[] = {
    {"variant", variant_values, COUNT(variant_values), variant_labels},
    {"local_size", local_values, COUNT(local_values), NULL},
    {"lanes", lanes_values, COUNT(lanes_values), NULL},
    {"block_nnz", block_values, COUNT(block_values), NULL},
    {"slice", slice_values, COUNT(slice_values), NULL},
    {"long_row", long_row_values, COUNT(long_row_values), NULL},
};

/* ---- the tuning problem (shared with the tests) ---------------------------------------------------------- */

/* The matrices are sized so that their non-zeros fall in n's bucket where possible (the bucket a call
 * with the matrix looks its choice up in). */
int rcl__spmv_tune_matrix(rcl_csr **out, int irregular, rcl_dtype dtype, size_t n) {
  *out = NULL;
  if (!irregular) { /* side s: 5 s^2 - 4 s non-zeros */
    size_t side = (size_t)sqrt((double)n / 5.0);
    if (side < 2) side = 2;
    while (5 * side * side - 4 * side < n) side++;
    return rcl_csr_poisson2d(out, dtype, side);
  }
  unsigned b = rcl__tune_bucket(n);
  size_t rows = n / 24 < 64 ? 64 : n / 24;
  for (int attempt = 0;; attempt++) {
    int rc = rcl_csr_powerlaw(out, dtype, rows, rows, 2, RCL_SPMV_TUNE_SEED);
    if (rc) return rc;
    size_t nnz = (*out)->nnz;
    if (attempt == 5 || (nnz >= n && rcl__tune_bucket(nnz) == b)) return 0;
    /* The mean row length grows only with log(rows): scale the rows by the shortfall, aiming 5% above n. */
    double scale = ((double)n * 1.05) / (double)(nnz ? nnz : 1);
    size_t next = (size_t)((double)rows * scale);
    rows = next < 64 ? 64 : next == rows ? rows + (nnz < n ? 1 : -1) : next;
    rcl_csr_free(*out);
    *out = NULL;
  }
}

/* ---- callbacks ------------------------------------------------------------------------------------------- */

typedef struct {
  rcl_context *ctx;
  rcl_dtype dt;
  int exact;
  rcl_spmv_matrix *M;
  cl_mem x, y;
  size_t nrows;
  size_t soft[RCL_TUNE_MAX_PARAMS]; /* the platform values the default point resolves with */
  size_t defv[RCL_TUNE_MAX_PARAMS]; /* the default point's values (check() of the default runs first) */
} sp_state;

static void sp_teardown(void *p) {
  sp_state *s = p;
  if (!s) return;
  if (s->x) clReleaseMemObject(s->x);
  if (s->y) clReleaseMemObject(s->y);
  rcl_spmv_matrix_free(s->M);
  rcl__free(s);
}

static int sp_setup(void **out, rcl_context *ctx, rcl_dtype dt, size_t n, int exact, int irregular) {
  sp_state *s = rcl__calloc(1, sizeof *s);
  if (!s) return RCL_ERR_OUT_OF_MEMORY;
  s->ctx = ctx;
  s->dt = dt;
  s->exact = exact;
  rcl_csr *A = NULL;
  void *hx = NULL;
  size_t es = rcl_dtype_size(dt);
  int rc = rcl__spmv_tune_matrix(&A, irregular, dt, n);
  if (!rc) rc = rcl_spmv_matrix_create(&s->M, ctx, A);
  if (!rc) {
    s->nrows = A->nrows;
    hx = rcl__malloc(A->ncols * es);
    if (!hx) rc = RCL_ERR_OUT_OF_MEMORY;
  }
  if (!rc) rc = rcl_generate(hx, dt, A->ncols, RCL_GEN_UNIFORM, RCL_SPMV_TUNE_SEED + 1);
  if (!rc) rc = rcl__buffer_create(&s->x, ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, A->ncols * es, hx, "tuning x");
  if (!rc) rc = rcl__buffer_create(&s->y, ctx, CL_MEM_READ_WRITE, A->nrows * es, NULL, "tuning y");
  /* Builds the programs now (a first call pays that anyway; the budget counts launches). */
  rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
  o.contract = exact ? RCL_SPMV_EXACT : RCL_SPMV_ORDERED;
  rcl_spmv_launch l;
  if (!rc) rc = rcl__spmv_resolve(&l, s->M, &o, NULL);
  rcl__free(hx);
  rcl_csr_free(A);
  if (rc) {
    sp_teardown(s);
    return rc;
  }
  *out = s;
  return 0;
}

/* The options of a point (strict, as a caller's): the fields its variant uses, the others left at 0 (their
 * built-in defaults, so an unused field can neither refuse nor change a launch). */
static rcl_spmv_options opts_of(const sp_state *s, const size_t *v) {
  rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
  o.contract = s->exact ? RCL_SPMV_EXACT : RCL_SPMV_ORDERED;
  o.variant = (rcl_spmv_variant)v[RCL_SP_P_VARIANT];
  o.local_size = v[RCL_SP_P_LOCAL]; /* also the long-row kernels' (the task variant's only use of it) */
  o.long_row = v[RCL_SP_P_LONG_ROW];
  if (o.variant == RCL_SPMV_VECTOR) o.lanes = v[RCL_SP_P_LANES];
  if (o.variant == RCL_SPMV_ADAPTIVE) o.block_nnz = v[RCL_SP_P_BLOCK];
  if (o.variant == RCL_SPMV_SELL) o.slice = v[RCL_SP_P_SLICE];
  return o;
}

/* The launch of a point (rcl_tune_point.eff): what the variant uses; the long-row path's sizes only where
 * the matrix has long rows. */
static void launch_of(size_t eff[RCL_TUNE_MAX_PARAMS], const sp_state *s, const rcl_spmv_launch *l) {
  memset(eff, 0, sizeof(size_t) * RCL_TUNE_MAX_PARAMS);
  eff[0] = (size_t)l->variant;
  if (l->variant != RCL_SPMV_TASK) eff[1] = l->W;
  if (l->variant == RCL_SPMV_VECTOR) eff[2] = l->L;
  if (l->variant == RCL_SPMV_ADAPTIVE || (l->has_long && !s->exact)) eff[3] = l->B;
  if (l->variant == RCL_SPMV_SELL) eff[4] = l->C;
  if (l->has_long) {
    eff[5] = l->T;
    eff[6] = l->WL;
    eff[7] = l->window;
  }
}

static int sp_check(void *p, rcl_tune_point *pt, int is_default, char *why, size_t wl) {
  sp_state *s = p;
  rcl_spmv_launch l;
  rcl_spmv_options o = opts_of(s, pt->v), d = RCL_SPMV_OPTIONS_INIT;
  d.contract = o.contract;
  int rc;
  if (is_default) {
    memcpy(s->soft, pt->v, sizeof s->soft);
    rc = rcl__spmv_resolve(&l, s->M, &d, s->soft);
  } else {
    rc = rcl__spmv_resolve(&l, s->M, &o, NULL);
  }
  if (rc == RCL_ERR_INVALID_ARG && !is_default) {
    snprintf(why, wl, "%s", rcl_error_last());
    rcl_error_clear();
    return 0;
  }
  if (rc) return rc;
  launch_of(pt->eff, s, &l);
  if (!is_default) {
    /* Parameters this launch ignores take the default's values (if the launch stays the same): a choice
     * never carries a value that was not timed into a later call where it would matter. */
    size_t v[RCL_TUNE_MAX_PARAMS], eff[RCL_TUNE_MAX_PARAMS];
    memcpy(v, pt->v, sizeof v);
    if (!pt->eff[1] && !pt->eff[6]) v[RCL_SP_P_LOCAL] = s->defv[RCL_SP_P_LOCAL];
    if (!pt->eff[2]) v[RCL_SP_P_LANES] = s->defv[RCL_SP_P_LANES];
    if (!pt->eff[3]) v[RCL_SP_P_BLOCK] = s->defv[RCL_SP_P_BLOCK];
    if (!pt->eff[4]) v[RCL_SP_P_SLICE] = s->defv[RCL_SP_P_SLICE];
    if (!pt->eff[5]) v[RCL_SP_P_LONG_ROW] = s->defv[RCL_SP_P_LONG_ROW];
    rcl_spmv_options n = opts_of(s, v);
    if (memcmp(v, pt->v, sizeof v) && rcl__spmv_resolve(&l, s->M, &n, NULL) == 0) {
      launch_of(eff, s, &l);
      if (!memcmp(eff, pt->eff, sizeof eff)) memcpy(pt->v, v, sizeof v);
    }
    rcl_error_clear();
    return 1;
  }
  {
    /* Every parameter of a choice has a value (a cache record names them all): the resolved ones, and
     * for those the variant does not use the platform value or the built-in fallback. */
    size_t *v = pt->v;
    v[RCL_SP_P_VARIANT] = (size_t)l.variant;
    v[RCL_SP_P_LOCAL] = l.variant != RCL_SPMV_TASK ? l.W : v[RCL_SP_P_LOCAL] ? v[RCL_SP_P_LOCAL] : l.WL;
    if (l.variant == RCL_SPMV_VECTOR || !v[RCL_SP_P_LANES]) v[RCL_SP_P_LANES] = l.L ? l.L : 4;
    if (l.variant == RCL_SPMV_ADAPTIVE || !v[RCL_SP_P_BLOCK]) v[RCL_SP_P_BLOCK] = l.B;
    if (l.variant == RCL_SPMV_SELL || !v[RCL_SP_P_SLICE]) v[RCL_SP_P_SLICE] = l.C ? l.C : 32;
    v[RCL_SP_P_LONG_ROW] = l.T;
    memcpy(s->defv, v, sizeof s->defv);
  }
  return 1;
}

static int sp_run(void *p, const rcl_tune_point *pt, cl_command_queue q) {
  sp_state *s = p;
  double a64 = 1.0, b64 = 0.0;
  float a32 = 1.0f, b32 = 0.0f;
  const void *alpha = s->dt == RCL_F32 ? (const void *)&a32 : (const void *)&a64;
  const void *beta = s->dt == RCL_F32 ? (const void *)&b32 : (const void *)&b64;
  rcl_queue_args qa = RCL_QUEUE_ARGS_INIT;
  qa.queue = q;
  /* The default point launches as a call that leaves everything at 0 (with the platform values); every
   * other point with its explicit options. */
  if (pt->is_default) {
    rcl_spmv_options d = RCL_SPMV_OPTIONS_INIT;
    d.contract = s->exact ? RCL_SPMV_EXACT : RCL_SPMV_ORDERED;
    return rcl__spmv_enqueue_soft(s->y, 0, s->M, alpha, s->x, 0, beta, &d, s->soft, &qa);
  }
  rcl_spmv_options o = opts_of(s, pt->v);
  return rcl__spmv_enqueue_soft(s->y, 0, s->M, alpha, s->x, 0, beta, &o, NULL, &qa);
}

static int sp_digest(void *p, cl_command_queue q, char hex[RCL_SHA256_HEX_SIZE]) {
  sp_state *s = p;
  size_t bytes = s->nrows * rcl_dtype_size(s->dt);
  void *h = rcl__malloc(bytes ? bytes : 1);
  if (!h) return RCL_ERR_OUT_OF_MEMORY;
  cl_int err = clEnqueueReadBuffer(q, s->y, CL_TRUE, 0, bytes, h, 0, NULL, NULL);
  int rc = err == CL_SUCCESS ? 0 : rcl__fail_cl(err, "reading the SpMV tuning output");
  if (!rc) rcl_sha256_hex(hex, h, bytes);
  rcl__free(h);
  return rc;
}

/* ---- descriptors ------------------------------------------------------------------------------------------ */

#define SP_SETUP(NAME, EXACT, IRREGULAR)                                                                               \
  static int NAME(void **out, rcl_context *ctx, rcl_dtype dt, size_t n) {                                              \
    return sp_setup(out, ctx, dt, n, EXACT, IRREGULAR);                                                                \
  }
SP_SETUP(setup_regular_ordered, 0, 0)
SP_SETUP(setup_regular_exact, 1, 0)
SP_SETUP(setup_irregular_ordered, 0, 1)
SP_SETUP(setup_irregular_exact, 1, 1)

/* Matrices below 2^16 non-zeros are launch-bound: they keep the defaults. Contract versions: spmv.ordered
 * and spmv.exact v1 (docs/contracts.md). */
#define SP_KERNEL(VAR, NAME, EXACT, SETUP)                                                                             \
  const rcl_tune_kernel VAR = {NAME,        RCL_FAMILY_SPMV, "spmv.cl",  EXACT ? "-DRCL_SPMV_EXACT=1" : NULL,          \
                               1,           1u << 16,        1u << 22,   RCL_SP_NPARAMS,                               \
                               spmv_params, SETUP,           sp_check,   NULL,                                         \
                               sp_run,      sp_digest,       sp_teardown};
SP_KERNEL(rcl__tk_spmv_regular_ordered, "spmv.regular.ordered", 0, setup_regular_ordered)
SP_KERNEL(rcl__tk_spmv_regular_exact, "spmv.regular.exact", 1, setup_regular_exact)
SP_KERNEL(rcl__tk_spmv_irregular_ordered, "spmv.irregular.ordered", 0, setup_irregular_ordered)
SP_KERNEL(rcl__tk_spmv_irregular_exact, "spmv.irregular.exact", 1, setup_irregular_exact)

const rcl_tune_kernel *rcl__spmv_tune_kernel(int exact, int irregular) {
  return irregular ? (exact ? &rcl__tk_spmv_irregular_exact : &rcl__tk_spmv_irregular_ordered)
                   : (exact ? &rcl__tk_spmv_regular_exact : &rcl__tk_spmv_regular_ordered);
}
