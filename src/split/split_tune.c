/* Tuned weights of a split: the family's real split call (for SpMV a few CG iterations, the split
 * matrix's main use, whose dots and halo exchanges an SpMV alone misses) timed with candidate weight
 * vectors — each device alone, the probe-proportional (measured) weights and a blend of the best two — and
 * the fastest kept, cached on disk per (the split's devices, family, dtype, size bucket) next to the
 * per-device probe cache: <cache>/split/tuned-<devices>-<family>-<dtype>-b<bucket> (read by every call whose
 * weights are measured: split_weights.c). So a split learns where one device alone beats it (transfers, a
 * slow device's share). With tuning off nothing is timed or written. Weights never change a bit. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "build/cache_dir.h"
#include "build/cache_state.h"
#include "reprocl/datagen.h"
#include "reprocl/grid.h"
#include "split/split_internal.h"

#define TUNE_REPEATS 3
#define STENCIL_ITERS 4
#define CG_ITERS 4

/* The tuning problem: the size asked for, up to 2^27 elements, 2^22 rows or 8192 grid rows (larger buckets
 * are tuned on that size). */
static size_t cap_of(rcl_family f) {
  return f == RCL_FAMILY_REDUCE ? (size_t)1 << 27 : f == RCL_FAMILY_SPMV ? (size_t)1 << 22 : 8192;
}

/* ---- the cache (read by split_weights.c) ------------------------------------------------------- */

/* A failed write leaves the weights tuned for this split only: a cache never fails a computation. */
static void cache_store(const rcl_split *s, const char *name, const double *w, double seconds) {
  const char *dir = rcl__cache_dir(s->ctx[0]);
  char sub[4096], text[4096];
  if (!dir) return;
  snprintf(sub, sizeof sub, "%s/split", dir);
  size_t len = (size_t)snprintf(text, sizeof text, "weights");
  for (size_t i = 0; i < s->count && len < sizeof text; i++)
    len += (size_t)snprintf(text + len, sizeof text - len, " %.9g", w[i]);
  if (len < sizeof text) len += (size_t)snprintf(text + len, sizeof text - len, "\nseconds %.9g\n", seconds);
  if (len >= sizeof text || rcl__cache_dir_writable(sub) || rcl__cache_write_atomic(sub, name, text, len))
    rcl_error_clear();
}

/* ---- the tuning problem: the family's split call on deterministic data ------------------------- */

typedef struct {
  rcl_split *s;
  rcl_family family;
  rcl_dtype dt;
  size_t n; /* elements, rows of a poisson2d matrix, or the side of a square grid */
  void *x, *y;
  size_t ybytes;
  rcl_csr *A;
  rcl_split_matrix *M;
} problem;

static int problem_make(problem *p, size_t size) {
  size_t es = rcl_dtype_size(p->dt), cap = cap_of(p->family);
  size_t n = size < cap ? size : cap, len;
  if (p->family == RCL_FAMILY_SPMV) {
    size_t side = (size_t)floor(sqrt((double)n));
    int rc = rcl_csr_poisson2d(&p->A, p->dt, side < 2 ? 2 : side);
    if (rc) return rc;
    len = p->A->nrows;
  } else {
    len = p->family == RCL_FAMILY_STENCIL ? n * n : n;
  }
  p->n = n;
  p->x = rcl__malloc(len * es);
  p->y = rcl__calloc(len, es);
  p->ybytes = len * es;
  if (!p->x || !p->y) return RCL_ERR_OUT_OF_MEMORY;
  return rcl_generate(p->x, p->dt, len, RCL_GEN_UNIFORM, 1);
}

static void problem_free(problem *p) {
  rcl_split_matrix_free(p->M);
  rcl_csr_free(p->A);
  rcl__free(p->x);
  rcl__free(p->y);
}

static int problem_run(problem *p) {
  rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
  switch (p->family) {
  case RCL_FAMILY_REDUCE:
    return rcl_split_reduce(p->y, p->s, RCL_OP_SUM, p->dt, p->n, p->x, NULL, NULL);
  case RCL_FAMILY_SPMV: { /* a few CG iterations: an SpMV each, and the dots, norms and axpys CG adds */
    rcl_cg_options co = RCL_CG_OPTIONS_INIT;
    rcl_cg_result r;
    co.tol = 0;
    co.max_iterations = CG_ITERS;
    memset(p->y, 0, p->ybytes); /* x0 = 0 */
    int rc = rcl_split_cg(p->y, &r, p->M, p->x, &co);
    rcl_cg_result_free(&r);
    return rc == RCL_ERR_NO_CONVERGENCE ? 0 : rc;
  }
  default:
    return rcl_split_stencil(p->y, p->s, &st, p->dt, p->n, p->n, STENCIL_ITERS, p->x);
  }
}

/* The least of TUNE_REPEATS timed calls with weights w (after one untimed: builds, uploads). */
static int time_weights(double *seconds, problem *p, const double *w) {
  int rc = rcl_split_set_weights(p->s, w, p->s->count);
  if (!rc && p->family == RCL_FAMILY_SPMV) { /* the rows are cut when the matrix is made */
    rcl_split_matrix_free(p->M);
    p->M = NULL;
    rc = rcl_split_matrix_create(&p->M, p->s, p->A);
  }
  if (!rc) rc = problem_run(p);
  for (int r = 0; !rc && r < TUNE_REPEATS; r++) {
    double t0 = rcl__now_s();
    rc = problem_run(p);
    double t = rcl__now_s() - t0;
    if (r == 0 || t < *seconds) *seconds = t;
  }
  return rc;
}

/* ---- the search -------------------------------------------------------------------------------- */

static void normalize(double *w, size_t count) {
  double total = 0;
  for (size_t i = 0; i < count; i++) total += w[i];
  for (size_t i = 0; i < count && total > 0; i++) w[i] /= total;
}

/* Candidate k of the first round: device k alone (k < count), or the measured weights m (k == count). */
static void candidate(double *c, const double *m, size_t count, size_t k) {
  for (size_t i = 0; i < count; i++) c[i] = k == count ? m[i] : (double)(i == k);
  normalize(c, count);
}

/* best[0..count) receives the fastest of: each usable device alone, the measured weights m (0 for a
 * device left out), and the blend of the two fastest of those. */
static int search(double *best, double *best_s, problem *p, const double *m) {
  size_t count = p->s->count;
  double *c = rcl__malloc(3 * count * sizeof *c), *second = c + count, *blend = c + 2 * count, second_s = 0;
  if (!c) return RCL_ERR_OUT_OF_MEMORY;
  int rc = 0, have = 0;
  for (size_t k = 0; k <= count && !rc; k++) {
    if (k < count && !(m[k] > 0)) continue;
    double t = 0;
    candidate(c, m, count, k);
    if ((rc = time_weights(&t, p, c)) != 0) break;
    if (have == 0 || t < *best_s) {
      if (have) memcpy(second, best, count * sizeof *c), second_s = *best_s;
      memcpy(best, c, count * sizeof *c), *best_s = t;
    } else if (have == 1 || t < second_s) {
      memcpy(second, c, count * sizeof *c), second_s = t;
    }
    have++;
  }
  if (!rc && have >= 2) {
    double t = 0;
    for (size_t i = 0; i < count; i++) blend[i] = (best[i] + second[i]) / 2;
    if ((rc = time_weights(&t, p, blend)) == 0 && t < *best_s) memcpy(best, blend, count * sizeof *c), *best_s = t;
  }
  rcl__free(c);
  return rc;
}

/* Tunes now: the caller's weights are set aside while the candidates run, and restored. */
static int tune_now(double *w, rcl_split *s, rcl_family family, rcl_dtype dtype, size_t size, const char *name) {
  double *given = s->given, *m = rcl__malloc(s->count * sizeof *m), seconds = 0;
  if (!m) return RCL_ERR_OUT_OF_MEMORY;
  s->given = NULL;
  int rc = rcl__split_weights_sized(m, s, family, dtype, 0, rcl__split_probe(family));
  problem p = {s, family, dtype, 0, NULL, NULL, 0, NULL, NULL};
  if (!rc && s->ctx[0]->tuning == RCL_TUNING_OFF) { /* nothing timed, nothing written: the measured weights */
    memcpy(w, m, s->count * sizeof *m);
    normalize(w, s->count);
    name = NULL;
  } else if (!rc) {
    rc = problem_make(&p, size);
  }
  if (!rc && name) rc = search(w, &seconds, &p, m);
  problem_free(&p);
  rcl__free(s->given);
  s->given = given;
  rcl__free(m);
  if (!rc && name) cache_store(s, name, w, seconds);
  return rc;
}

static int check_args(const double *weights, const rcl_split *s, rcl_family family, rcl_dtype dtype) {
  if (!weights || !s) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_tune: NULL argument");
  if (family != RCL_FAMILY_REDUCE && family != RCL_FAMILY_SPMV && family != RCL_FAMILY_STENCIL)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_tune: family %d is not reduce, spmv or stencil", (int)family);
  if (rcl_dtype_size(dtype) == 0)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_tune: dtype %d is not an rcl_dtype", (int)dtype);
  return 0;
}

int rcl_split_tune(double *weights, rcl_split *s, rcl_family family, rcl_dtype dtype, size_t size) {
  int rc = check_args(weights, s, family, dtype);
  if (rc) return rc;
  char name[128];
  rcl__split_tuned_name(name, sizeof name, s, family, dtype, size);
  if (s->ctx[0]->tuning != RCL_TUNING_FORCE && rcl__split_tuned_load(weights, s, name)) return 0;
  return tune_now(weights, s, family, dtype, size ? size : 1, name);
}
