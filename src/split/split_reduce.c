/* Reductions, axpy and scal over a split's devices (include/reprocl/split.h). A reduction cuts the vector
 * by the weights, each device computes its slice's part (rcl_reduce_partial, on its own thread), and the
 * parts merged in order give exactly rcl_reduce's bits (docs/contracts.md §10), for every cut. axpy and scal
 * are element-wise: each device updates its slice. A cut that gives one device everything runs that
 * device's one-device call (rcl_reduce; axpy and scal on the calling thread). */
#include <stdint.h>
#include <string.h>

#include "split/split_internal.h"

/* reduce.ordered's block: slices of whole blocks (2048 * 2^q elements) hold only complete subtrees, so a
 * part carries no cut block (speed only: any cut gives the same bits). Used where every device gets at
 * least SPLIT_MIN_GRANULES of them; smaller vectors are cut anywhere. */
#define SPLIT_BLOCK 2048
#define SPLIT_MIN_GRANULES 8

typedef struct {
  rcl_split *s;
  const size_t *bounds;
  rcl_reduce_op op;
  rcl_dtype dt;
  size_t n, es;
  const char *x, *y;
  void *out; /* axpy's y, scal's x */
  const void *alpha;
  const rcl_reduce_options *opts;
  rcl_partial **parts;
} split_job;

static size_t granule_of(const rcl_split *s, size_t n) {
  size_t g = SPLIT_BLOCK;
  if (n / s->count < (size_t)SPLIT_BLOCK * SPLIT_MIN_GRANULES) return 1;
  while (n / s->count >= 2 * g * SPLIT_MIN_GRANULES) g *= 2;
  return g;
}

static int reduce_part(void *arg, size_t i) {
  split_job *j = arg;
  size_t a = j->bounds[i], m = j->bounds[i + 1] - a;
  return rcl_reduce_partial(&j->parts[i], j->s->ctx[i], j->op, j->dt, j->n, a, m, j->x + a * j->es,
                            j->y ? j->y + a * j->es : NULL, j->opts);
}

/* The parts of the devices with a share, in order, merged; then the result. */
static int merge_result(void *out, split_job *j) {
  rcl_partial **have = rcl__malloc(j->s->count * sizeof *have), *all = NULL;
  size_t k = 0;
  if (!have) return RCL_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < j->s->count; i++)
    if (j->parts[i]) have[k++] = j->parts[i];
  int rc = rcl_partial_merge(&all, have, k);
  if (!rc) rc = rcl_partial_result(out, all);
  rcl_partial_free(all);
  rcl__free(have);
  return rc;
}

/* The cut of n elements for the reduce family's weights (granule as the caller says), in *bounds. */
static int plan(size_t **bounds, rcl_split *s, rcl_dtype dt, size_t n, size_t granule) {
  if (!(*bounds = rcl__malloc((s->count + 1) * sizeof **bounds))) return RCL_ERR_OUT_OF_MEMORY;
  int rc = rcl__split_plan(*bounds, s, RCL_FAMILY_REDUCE, dt, n, granule, rcl__split_probe(RCL_FAMILY_REDUCE));
  if (rc) {
    rcl__free(*bounds);
    *bounds = NULL;
  }
  return rc;
}

int rcl_split_reduce(void *out, rcl_split *s, rcl_reduce_op op, rcl_dtype dtype, size_t n, const void *x, const void *y,
                     const rcl_reduce_options *opts) {
  if (!out || !s) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_reduce: NULL output or split");
  size_t es = rcl_dtype_size(dtype);
  if (!es) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_reduce: unknown dtype %d", (int)dtype);
  if (n > 0 && (!x || (op == RCL_OP_DOT && !y)))
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_reduce: %s is NULL but n = %zu", x ? "y" : "x", n);
  if (n == 0) { /* nothing for any device; the part of an empty vector gives +0 (checking op and mode) */
    rcl_partial *p;
    int rc = rcl_ref_reduce_partial(&p, op, dtype, opts ? opts->mode : RCL_REDUCE_ORDERED, 0, 0, 0, NULL, NULL);
    if (!rc) rc = rcl_partial_result(out, p);
    rcl_partial_free(p);
    return rc;
  }
  split_job j = {s, NULL, op, dtype, n, es, x, op == RCL_OP_DOT ? y : NULL, NULL, NULL, opts, NULL};
  size_t *bounds;
  int rc = plan(&bounds, s, dtype, n, granule_of(s, n));
  if (rc) return rc;
  j.bounds = bounds;
  size_t alone = rcl__split_alone(s, bounds);
  if (alone != SIZE_MAX) { /* one device has it all: its own call */
    rc = rcl_reduce(out, s->ctx[alone], op, dtype, n, x, j.y, opts);
    rcl__free(bounds);
    return rc;
  }
  if (!(j.parts = rcl__calloc(s->count, sizeof *j.parts))) rc = RCL_ERR_OUT_OF_MEMORY;
  if (!rc) rc = rcl__split_each(s, bounds, reduce_part, &j);
  if (!rc) rc = merge_result(out, &j);
  for (size_t i = 0; j.parts && i < s->count; i++) rcl_partial_free(j.parts[i]);
  rcl__free(j.parts);
  rcl__free(bounds);
  return rc;
}

static int blas1_part(void *arg, size_t i) {
  split_job *j = arg;
  size_t a = j->bounds[i], m = j->bounds[i + 1] - a;
  char *v = (char *)j->out + a * j->es;
  return j->x ? rcl_axpy(v, j->s->ctx[i], j->dt, m, j->alpha, j->x + a * j->es, 0)
              : rcl_scal(v, j->s->ctx[i], j->dt, m, j->alpha, 0);
}

/* axpy (x given) or scal over the split: each device its slice. */
static int split_blas1(void *v, rcl_split *s, rcl_dtype dt, size_t n, const void *alpha, const void *x,
                       const char *name) {
  if (!s || !alpha) return rcl__fail(RCL_ERR_INVALID_ARG, "%s: NULL split or alpha", name);
  size_t es = rcl_dtype_size(dt);
  if (!es) return rcl__fail(RCL_ERR_INVALID_ARG, "%s: unknown dtype %d", name, (int)dt);
  if (n == 0) return 0;
  if (!v || (!x && !strcmp(name, "rcl_split_axpy")))
    return rcl__fail(RCL_ERR_INVALID_ARG, "%s: NULL vector with n = %zu", name, n);
  split_job j = {s, NULL, RCL_OP_SUM, dt, n, es, x, NULL, v, alpha, NULL, NULL};
  size_t *bounds;
  int rc = plan(&bounds, s, dt, n, 1);
  if (rc) return rc;
  j.bounds = bounds;
  rc = rcl__split_each(s, bounds, blas1_part, &j);
  rcl__free(bounds);
  return rc;
}

int rcl_split_axpy(void *y, rcl_split *s, rcl_dtype dtype, size_t n, const void *alpha, const void *x) {
  return split_blas1(y, s, dtype, n, alpha, x, "rcl_split_axpy");
}

int rcl_split_scal(void *x, rcl_split *s, rcl_dtype dtype, size_t n, const void *alpha) {
  return split_blas1(x, s, dtype, n, alpha, NULL, "rcl_split_scal");
}
