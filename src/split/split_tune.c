/* Tuned weights of a split, per operation: the operation's real split call (one SpMV, a few CG iterations,
 * a sum, a few stencil iterations) timed with candidate weight vectors — each usable device alone (which
 * runs exactly that device's one-device call: split.c's shortcut), the probe-proportional (measured)
 * weights, weights proportional to the devices' speeds alone, and a blend of the best of those with the
 * fastest device alone — each the least of TUNE_REPEATS runs after an untimed one. A split is kept only
 * where it beats the fastest device alone by more than the margin (the larger relative spread of the two
 * candidates' repeats, at least MIN_MARGIN): so a split is never kept that is not clearly faster than one
 * device. Cached on disk per (the split's devices, operation, dtype, size bucket) next to the per-device
 * probe cache, with every candidate's time: <cache>/split/tuned-<devices and rule>-<op>-<dtype>-b<bucket>
 * (read by every call whose weights are measured: split_weights.c). With tuning off nothing is timed or
 * written. Weights never change a bit. */
#include <math.h>
#include <stdarg.h>
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
#define MIN_MARGIN 0.05

static rcl_family family_of(rcl_split_op op) {
  return op == RCL_SPLIT_OP_REDUCE    ? RCL_FAMILY_REDUCE
         : op == RCL_SPLIT_OP_STENCIL ? RCL_FAMILY_STENCIL
                                      : RCL_FAMILY_SPMV;
}

/* The tuning problem: the size asked for, up to 2^27 elements, 2^22 rows or 8192 grid rows (larger buckets
 * are tuned on that size). */
static size_t cap_of(rcl_family f) {
  return f == RCL_FAMILY_REDUCE ? (size_t)1 << 27 : f == RCL_FAMILY_SPMV ? (size_t)1 << 22 : 8192;
}

/* ---- the record: the cache entry's text (read by split_weights.c: weights first, then why) ------------ */

typedef struct {
  char text[4096];
  size_t len;
} record;

static void rec_add(record *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (r->len < sizeof r->text) {
    int n = vsnprintf(r->text + r->len, sizeof r->text - r->len, fmt, ap);
    r->len = n < 0 ? sizeof r->text : r->len + (size_t)n;
  }
  va_end(ap);
}

static void rec_weights(record *r, const char *key, const double *w, size_t count) {
  rec_add(r, "%s", key);
  for (size_t i = 0; i < count; i++) rec_add(r, " %.9g", w[i]);
}

/* A failed write leaves the weights tuned for this split only: a cache never fails a computation. */
static void cache_store(const rcl_split *s, const char *name, const record *r) {
  const char *dir = rcl__cache_dir(s->ctx[0]);
  char sub[4096];
  if (!dir) return;
  snprintf(sub, sizeof sub, "%s/split", dir);
  if (r->len >= sizeof r->text || rcl__cache_dir_writable(sub) || rcl__cache_write_atomic(sub, name, r->text, r->len))
    rcl_error_clear();
}

/* ---- the tuning problem: the operation's split call on deterministic data -------------------------- */

typedef struct {
  rcl_split *s;
  rcl_split_op op;
  rcl_dtype dt;
  size_t n; /* elements, rows of a poisson3d matrix, or the side of a square grid */
  void *x, *y;
  size_t ybytes;
  rcl_csr *A;
  rcl_split_matrix *M;
} problem;

static int problem_make(problem *p, size_t size) {
  rcl_family f = family_of(p->op);
  size_t es = rcl_dtype_size(p->dt), cap = cap_of(f);
  size_t n = size < cap ? size : cap, len;
  if (f == RCL_FAMILY_SPMV) {
    size_t side = (size_t)floor(cbrt((double)n) + 0.5);
    int rc = rcl_csr_poisson3d(&p->A, p->dt, side < 2 ? 2 : side);
    if (rc) return rc;
    len = p->A->nrows;
  } else {
    len = f == RCL_FAMILY_STENCIL ? n * n : n;
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

static int run_cg(problem *p) {
  rcl_cg_options co = RCL_CG_OPTIONS_INIT;
  rcl_cg_result r;
  co.tol = 0;
  co.max_iterations = CG_ITERS;
  memset(p->y, 0, p->ybytes); /* x0 = 0 */
  int rc = rcl_split_cg(p->y, &r, p->M, p->x, &co);
  rcl_cg_result_free(&r);
  return rc == RCL_ERR_NO_CONVERGENCE ? 0 : rc;
}

static int problem_run(problem *p) {
  static const double one64 = 1, zero64 = 0;
  static const float one32 = 1, zero32 = 0;
  rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
  switch (p->op) {
  case RCL_SPLIT_OP_REDUCE:
    return rcl_split_reduce(p->y, p->s, RCL_OP_SUM, p->dt, p->n, p->x, NULL, NULL);
  case RCL_SPLIT_OP_SPMV:
    return p->dt == RCL_F32 ? rcl_split_spmv(p->y, p->M, &one32, p->x, &zero32, NULL)
                            : rcl_split_spmv(p->y, p->M, &one64, p->x, &zero64, NULL);
  case RCL_SPLIT_OP_CG:
    return run_cg(p);
  default:
    return rcl_split_stencil(p->y, p->s, &st, p->dt, p->n, p->n, STENCIL_ITERS, p->x);
  }
}

/* One candidate's time: the least of TUNE_REPEATS runs, and how far the next least lies above it. */
typedef struct {
  double least, spread;
} timing;

/* Times the problem with weights w (after one untimed run: builds, uploads). */
static int time_weights(timing *t, problem *p, const double *w) {
  int rc = rcl_split_set_weights(p->s, w, p->s->count);
  if (!rc && family_of(p->op) == RCL_FAMILY_SPMV) { /* the rows are cut when the matrix is made */
    rcl_split_matrix_free(p->M);
    p->M = NULL;
    rc = rcl_split_matrix_create(&p->M, p->s, p->A);
  }
  if (!rc) rc = problem_run(p);
  double v[TUNE_REPEATS];
  for (int r = 0; !rc && r < TUNE_REPEATS; r++) {
    double t0 = rcl__now_s();
    rc = problem_run(p);
    v[r] = rcl__now_s() - t0;
    for (int k = r; k > 0 && v[k] < v[k - 1]; k--) { /* sorted */
      double x = v[k];
      v[k] = v[k - 1];
      v[k - 1] = x;
    }
  }
  if (!rc) {
    t->least = v[0] > 0 ? v[0] : 1e-9;
    t->spread = TUNE_REPEATS > 1 ? (v[1] - v[0]) / t->least : 0;
  }
  return rc;
}

/* ---- the search -------------------------------------------------------------------------------- */

static void normalize(double *w, size_t count) {
  double total = 0;
  for (size_t i = 0; i < count; i++) total += w[i];
  for (size_t i = 0; i < count && total > 0; i++) w[i] /= total;
}

typedef struct {
  problem *p;
  size_t count;
  record rec;
  double *split; /* the fastest split candidate so far */
  timing split_t;
  int have_split;
  size_t alone; /* the fastest device alone */
  timing alone_t;
  int have_alone;
  double *c;      /* scratch: a candidate */
  double *talone; /* each device's time alone (0: not usable) */
} search;

/* Times candidate w (normalized here), records it, and keeps it where it is the fastest of its kind. */
static int try_candidate(search *S, double *w, int is_alone, size_t device) {
  timing t;
  normalize(w, S->count);
  int rc = time_weights(&t, S->p, w);
  if (rc) return rc;
  rec_weights(&S->rec, "\ncandidate", w, S->count);
  rec_add(&S->rec, ": %.6g s, spread %.1f%%", t.least, 100 * t.spread);
  if (is_alone) S->talone[device] = t.least;
  if (is_alone && (!S->have_alone || t.least < S->alone_t.least)) {
    S->alone = device, S->alone_t = t, S->have_alone = 1;
  } else if (!is_alone && (!S->have_split || t.least < S->split_t.least)) {
    memcpy(S->split, w, S->count * sizeof *w), S->split_t = t, S->have_split = 1;
  }
  return 0;
}

/* The split candidates: the measured weights m, weights proportional to the speeds alone (1 / time), and
 * the best of those blended with the fastest device alone. */
static int try_splits(search *S, const double *m, const double *speed) {
  size_t n = S->count;
  int rc = 0;
  memcpy(S->c, m, n * sizeof *m);
  rc = try_candidate(S, S->c, 0, 0);
  if (!rc) memcpy(S->c, speed, n * sizeof *m);
  if (!rc) rc = try_candidate(S, S->c, 0, 0);
  for (size_t i = 0; !rc && i < n; i++) S->c[i] = (S->split[i] + (double)(i == S->alone)) / 2;
  if (!rc) rc = try_candidate(S, S->c, 0, 0);
  return rc;
}

/* best[0..count): the fastest device alone, unless the fastest split beats it by more than the margin. */
static int run_search(double *best, rcl_split_tune_info *info, search *S, const double *m) {
  size_t n = S->count, usable = 0;
  int rc = 0;
  for (size_t k = 0; !rc && k < n; k++) {
    if (!(m[k] > 0)) continue;
    for (size_t i = 0; i < n; i++) S->c[i] = (double)(i == k);
    rc = try_candidate(S, S->c, 1, k);
    usable++;
  }
  double *speed = S->c + n;
  for (size_t k = 0; k < n; k++) speed[k] = S->talone[k] > 0 ? 1 / S->talone[k] : 0;
  if (!rc && usable >= 2) rc = try_splits(S, m, speed);
  if (rc) return rc;
  memset(info, 0, sizeof *info);
  info->alone = S->alone, info->alone_s = S->alone_t.least;
  info->split_s = S->have_split ? S->split_t.least : 0;
  double margin = MIN_MARGIN;
  if (S->have_split && S->split_t.spread > margin) margin = S->split_t.spread;
  if (S->alone_t.spread > margin) margin = S->alone_t.spread;
  info->margin = margin;
  info->split_kept = S->have_split && S->split_t.least < S->alone_t.least * (1 - margin);
  for (size_t i = 0; i < n; i++) best[i] = info->split_kept ? S->split[i] : (double)(i == S->alone);
  return 0;
}

/* The record's head: the kept weights, the time, and why. */
static void rec_head(record *r, const double *w, size_t count, const rcl_split_tune_info *info) {
  rec_weights(r, "weights", w, count);
  rec_add(r, "\nseconds %.9g\nalone %zu %.9g\nsplit %.9g\nmargin %.4g\n",
          info->split_kept ? info->split_s : info->alone_s, info->alone, info->alone_s, info->split_s, info->margin);
  if (info->split_kept)
    rec_add(r, "kept the split: %.6g s is below %.6g s (device %zu alone) by more than %.1f%%", info->split_s,
            info->alone_s, info->alone, 100 * info->margin);
  else if (info->split_s > 0)
    rec_add(r, "kept device %zu alone: the best split's %.6g s is not below its %.6g s by more than %.1f%%",
            info->alone, info->split_s, info->alone_s, 100 * info->margin);
  else
    rec_add(r, "kept device %zu alone: the only device that can run it", info->alone);
}

/* Times the candidates and caches the choice (candidates after the head, one line each). */
static int tune_timed(double *w, rcl_split_tune_info *info, problem *p, const double *m, const char *name) {
  size_t n = p->s->count;
  search *S = rcl__calloc(1, sizeof *S);
  double *mem = rcl__calloc(4 * n, sizeof *mem);
  int rc = S && mem ? 0 : RCL_ERR_OUT_OF_MEMORY;
  if (!rc) {
    S->p = p, S->count = n, S->split = mem, S->c = mem + n, S->talone = mem + 3 * n;
    rc = run_search(w, info, S, m);
  }
  if (!rc) {
    record *head = rcl__calloc(1, sizeof *head);
    if (head) {
      rec_head(head, w, n, info);
      rec_add(head, "%s\n", S->rec.text);
      cache_store(p->s, name, head);
    }
    rcl__free(head);
  }
  rcl__free(mem);
  rcl__free(S);
  return rc;
}

/* Tunes now: the caller's weights are set aside while the candidates run, and restored. */
static int tune_now(double *w, rcl_split_tune_info *info, rcl_split *s, rcl_split_op op, rcl_dtype dtype, size_t size,
                    const char *name) {
  double *given = s->given, *m = rcl__malloc(s->count * sizeof *m);
  if (!m) return RCL_ERR_OUT_OF_MEMORY;
  s->given = NULL;
  rcl_family family = family_of(op);
  int rc = rcl__split_weights_sized(m, s, family, dtype, 0, rcl__split_probe(family));
  problem p = {s, op, dtype, 0, NULL, NULL, 0, NULL, NULL};
  memset(info, 0, sizeof *info);
  if (!rc && s->ctx[0]->tuning == RCL_TUNING_OFF) { /* nothing timed, nothing written: the measured weights */
    memcpy(w, m, s->count * sizeof *m);
    normalize(w, s->count);
    for (size_t i = 0; i < s->count; i++) info->split_kept += w[i] > 0;
    info->split_kept = info->split_kept > 1;
  } else if (!rc) {
    rc = problem_make(&p, size);
    if (!rc) rc = tune_timed(w, info, &p, m, name);
  }
  problem_free(&p);
  rcl__free(s->given);
  s->given = given;
  rcl__free(m);
  return rc;
}

int rcl_split_tune_op(double *weights, rcl_split_tune_info *info, rcl_split *s, rcl_split_op op, rcl_dtype dtype,
                      size_t size) {
  if (!weights || !s) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_tune: NULL argument");
  if ((unsigned)op >= RCL_SPLIT_OP_COUNT)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_tune_op: operation %d is not an rcl_split_op", (int)op);
  if (rcl_dtype_size(dtype) == 0)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_tune: dtype %d is not an rcl_dtype", (int)dtype);
  rcl_split_tune_info local;
  if (!info) info = &local;
  char name[128];
  rcl__split_tuned_name(name, sizeof name, s, op, dtype, size);
  if (s->ctx[0]->tuning != RCL_TUNING_FORCE && rcl__split_tuned_load(weights, info, s, name)) return 0;
  return tune_now(weights, info, s, op, dtype, size ? size : 1, name);
}

int rcl_split_tune(double *weights, rcl_split *s, rcl_family family, rcl_dtype dtype, size_t size) {
  if (family != RCL_FAMILY_REDUCE && family != RCL_FAMILY_SPMV && family != RCL_FAMILY_STENCIL)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_tune: family %d is not reduce, spmv or stencil", (int)family);
  rcl_split_op op = family == RCL_FAMILY_REDUCE ? RCL_SPLIT_OP_REDUCE
                    : family == RCL_FAMILY_SPMV ? RCL_SPLIT_OP_CG
                                                : RCL_SPLIT_OP_STENCIL;
  return rcl_split_tune_op(weights, NULL, s, op, dtype, size);
}
