/* Stencils and red-black SOR over a split: the grid cut into blocks of rows by the weights, each device
 * stepping its block (src/stencil/stencil_block.c: the family's own kernels on the block plus its halo
 * rows), the halo rows exchanged through the host between rounds of per_step steps, the SOR residual norm
 * assembled from every block's partial nrm2 (rcl_partial_merge). The bits are the one-device call's and the
 * host reference's for every split (docs/contracts.md, "Decomposition independence").
 *
 * A round is one rcl__split_each: every device writes the halo rows the last round staged, takes its
 * steps, and stages the edge rows others need. Two stage areas alternate, so a device staging its rows of
 * this round never overwrites rows another device still reads from the last. A cut that gives one device
 * every row runs that device's rcl_stencil or rcl_sor instead. */
#include <stdint.h>
#include <string.h>

#include "split/split_stencil.h"
#include "stencil/stencil_internal.h"

typedef struct {
  rcl_split *s;
  const rcl__split_grid_job *job;
  size_t count, es, halo, per, rounds, round;
  int exchange_last; /* the last round stages its edges too (the residual needs fresh halo rows) */
  size_t *bounds;    /* count + 1: device i computes rows [bounds[i], bounds[i + 1]) */
  rcl__block_geom *geom;
  rcl__stencil_block **blk;
  size_t *stage_off; /* device i's edge rows start at element stage_off[i] of each stage area */
  unsigned char *stage[2];
  rcl_partial **part; /* SOR residual parts */
} grid_run;

/* The device whose block computes global row `row`. */
static size_t owner(const grid_run *r, size_t row) {
  size_t lo = 0, hi = r->count; /* bounds[lo] <= row < bounds[hi] */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->bounds[mid] <= row)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* Device i's halo rows (above and below its own) from the owners' staged edge rows. */
static int write_halos(grid_run *r, size_t i, const unsigned char *stage) {
  const rcl__block_geom *g = &r->geom[i];
  size_t own = g->r1 - g->r0, row = g->width * r->es, n = g->above + g->below;
  if (n == 0) return 0;
  unsigned char *h = rcl__malloc(n * row);
  if (!h) return RCL_ERR_OUT_OF_MEMORY;
  for (size_t k = 0; k < n; k++) {
    size_t l = k < g->above ? k : own + k;
    size_t gr = rcl__block_global_row(g, l), j = owner(r, gr);
    size_t idx = rcl__block_edge_index(&r->geom[j], r->halo, gr);
    memcpy(h + k * row, stage + (r->stage_off[j] + idx * g->width) * r->es, row);
  }
  int rc = rcl__stencil_block_write(r->blk[i], 0, g->above, h);
  if (!rc) rc = rcl__stencil_block_write(r->blk[i], g->above + own, g->below, h + g->above * row);
  rcl__free(h);
  return rc;
}

/* Device i's first and last e rows into its place in a stage area. */
static int stage_edges(grid_run *r, size_t i, unsigned char *stage) {
  const rcl__block_geom *g = &r->geom[i];
  size_t e = rcl__block_edge(g, r->halo), own = g->r1 - g->r0;
  unsigned char *dst = stage + r->stage_off[i] * r->es;
  int rc = rcl__stencil_block_read(dst, r->blk[i], g->above, e);
  if (!rc) rc = rcl__stencil_block_read(dst + e * g->width * r->es, r->blk[i], g->above + own - e, e);
  return rc;
}

/* A block's local rows of a whole grid: the grid's own rows where they are consecutive (no wrap), else a
 * copy in *tmp (NULL on failure, with *tmp NULL too). */
static const void *local_rows(void **tmp, const void *grid, const rcl__block_geom *g, size_t es) {
  *tmp = NULL;
  if (g->above <= g->r0 && g->r1 + g->below <= g->height)
    return (const unsigned char *)grid + (g->r0 - g->above) * g->width * es;
  if ((*tmp = rcl__malloc(g->rows * g->width * es)) != NULL) rcl__block_gather(*tmp, grid, g, es);
  return *tmp;
}

static int setup_fn(void *arg, size_t i) {
  grid_run *r = arg;
  const rcl__split_grid_job *j = r->job;
  const rcl__block_geom *g = &r->geom[i];
  void *t1, *t2 = NULL;
  const void *local = local_rows(&t1, j->in, g, r->es), *lrhs = j->rhs ? local_rows(&t2, j->rhs, g, r->es) : NULL;
  int rc = local && (lrhs || !j->rhs) ? 0 : RCL_ERR_OUT_OF_MEMORY;
  if (!rc)
    rc = rcl__stencil_block_create(&r->blk[i], rcl_split_context(r->s, i), j->st, j->sor, j->dtype, g, local, lrhs);
  rcl__free(t1);
  rcl__free(t2);
  return rc;
}

static int round_fn(void *arg, size_t i) {
  grid_run *r = arg;
  size_t done = r->round * r->per, k = r->job->steps - done < r->per ? r->job->steps - done : r->per;
  int rc = r->round ? write_halos(r, i, r->stage[(r->round - 1) % 2]) : 0;
  if (!rc) rc = rcl__stencil_block_step(r->blk[i], k);
  if (!rc && (r->round + 1 < r->rounds || r->exchange_last)) rc = stage_edges(r, i, r->stage[r->round % 2]);
  return rc;
}

/* The residual part (fresh halo rows first), then the block's own rows into the result. */
static int finish_fn(void *arg, size_t i) {
  grid_run *r = arg;
  const rcl__block_geom *g = &r->geom[i];
  int rc = 0;
  if (r->job->residual) {
    if (r->exchange_last) rc = write_halos(r, i, r->stage[(r->rounds - 1) % 2]);
    if (!rc) rc = rcl__stencil_block_residual(&r->part[i], r->blk[i]);
  }
  if (!rc)
    rc = rcl__stencil_block_read((unsigned char *)r->job->out + g->r0 * g->width * r->es, r->blk[i], g->above,
                                 g->r1 - g->r0);
  return rc;
}

static void run_free(grid_run *r) {
  for (size_t i = 0; i < r->count; i++) {
    if (r->blk) rcl__stencil_block_free(r->blk[i]);
    if (r->part) rcl_partial_free(r->part[i]);
  }
  rcl__free(r->bounds);
  rcl__free(r->geom);
  rcl__free(r->blk);
  rcl__free(r->stage_off);
  rcl__free(r->stage[0]);
  rcl__free(r->stage[1]);
  rcl__free(r->part);
}

/* Steps between exchanges: the job's; all of them where one device has every row (no halo, no exchange);
 * else as many as keep the halo rows a device computes in vain to about 1/16 of its thinnest block's rows
 * (at most 8, at least 1). */
static size_t pick_per(const grid_run *r, size_t reach) {
  if (r->job->per_step) return r->job->per_step;
  size_t thin = r->job->height, busy = 0;
  for (size_t i = 0; i < r->count; i++)
    if (r->bounds[i + 1] > r->bounds[i]) {
      busy++;
      if (r->bounds[i + 1] - r->bounds[i] < thin) thin = r->bounds[i + 1] - r->bounds[i];
    }
  if (busy == 1) return r->job->steps ? r->job->steps : 1;
  size_t per = thin / (32 * reach);
  return per < 1 ? 1 : per > 8 ? 8 : per;
}

/* Bounds, block geometries and the stage areas. */
static int run_plan(grid_run *r) {
  const rcl__split_grid_job *j = r->job;
  size_t n = r->count;
  r->bounds = rcl__calloc(n + 1, sizeof *r->bounds);
  r->geom = rcl__calloc(n, sizeof *r->geom);
  r->blk = rcl__calloc(n, sizeof *r->blk);
  r->stage_off = rcl__calloc(n + 1, sizeof *r->stage_off);
  r->part = rcl__calloc(n, sizeof *r->part);
  if (!r->bounds || !r->geom || !r->blk || !r->stage_off || !r->part) return RCL_ERR_OUT_OF_MEMORY;
  int rc = rcl__split_plan(r->bounds, r->s, RCL_FAMILY_STENCIL, j->dtype, j->height, j->sor ? 2 : 1,
                           rcl__split_probe(RCL_FAMILY_STENCIL));
  if (rc) return rc;
  size_t reach = j->sor ? 2 : j->st->kind == RCL_STENCIL_GENERAL ? j->st->radius : 1;
  r->per = pick_per(r, reach);
  r->halo = r->per * reach;
  for (size_t i = 0; i < n; i++) /* one device with every row: no halo rows, nothing to exchange */
    if (r->bounds[i] == 0 && r->bounds[i + 1] == j->height) r->halo = 0;
  r->rounds = j->steps / r->per + (j->steps % r->per != 0);
  r->exchange_last = j->residual && r->rounds > 0 && r->halo > 0;
  rcl_boundary bc = j->sor ? j->sor->boundary : j->st->boundary;
  for (size_t i = 0; i < n; i++) {
    rcl__block_geom_init(&r->geom[i], j->width, j->height, r->bounds[i], r->bounds[i + 1], r->halo, bc);
    r->stage_off[i + 1] = r->stage_off[i] + 2 * rcl__block_edge(&r->geom[i], r->halo) * j->width;
  }
  size_t bytes = (r->stage_off[n] ? r->stage_off[n] : 1) * r->es;
  r->stage[0] = rcl__malloc(bytes);
  r->stage[1] = rcl__malloc(bytes);
  return r->stage[0] && r->stage[1] ? 0 : RCL_ERR_OUT_OF_MEMORY;
}

/* The residual norm from the parts of the devices that have rows (consecutive slices, in order). */
static int combine_residual(grid_run *r) {
  rcl_partial **parts = rcl__malloc(r->count * sizeof *parts), *all = NULL;
  if (!parts) return RCL_ERR_OUT_OF_MEMORY;
  size_t m = 0;
  for (size_t i = 0; i < r->count; i++)
    if (r->part[i]) parts[m++] = r->part[i];
  int rc = rcl_partial_merge(&all, parts, m);
  if (!rc) rc = rcl_partial_result(r->job->residual, all);
  rcl_partial_free(all);
  rcl__free(parts);
  return rc;
}

static int check_job(rcl_split *s, const rcl__split_grid_job *j, const char *fn) {
  if (!s || !j) return rcl__fail(RCL_ERR_INVALID_ARG, "%s: NULL split", fn);
  size_t es = rcl_dtype_size(j->dtype);
  if (!es) return rcl__fail(RCL_ERR_INVALID_ARG, "%s: unknown dtype %d", fn, (int)j->dtype);
  unsigned int radius;
  int rc = j->st ? rcl__stencil_check(j->st, &radius) : rcl__sor_check(j->sor, j->width, j->height);
  if (!rc) rc = rcl__grid_check_dims(j->width, j->height, es, fn);
  if (!rc && (!j->in || !j->out)) rc = rcl__fail(RCL_ERR_INVALID_ARG, "%s: NULL grid", fn);
  return rc;
}

int rcl__split_grid_run(rcl_split *s, const rcl__split_grid_job *job) {
  const char *fn = job && job->sor ? "rcl_split_sor" : "rcl_split_stencil";
  int rc = check_job(s, job, fn);
  if (rc) return rc;
  grid_run r = {.s = s, .job = job, .count = rcl_split_count(s), .es = rcl_dtype_size(job->dtype)};
  rc = run_plan(&r);
  size_t alone = rc ? SIZE_MAX : rcl__split_alone(s, r.bounds);
  if (alone != SIZE_MAX) { /* one device has every row: its one-device call */
    rcl_context *c = rcl_split_context(s, alone);
    const rcl__split_grid_job *j = job;
    rc = j->sor ? rcl_sor(j->out, j->residual, c, j->sor, j->dtype, j->width, j->height, j->steps, j->rhs, NULL)
                : rcl_stencil(j->out, c, j->st, j->dtype, j->width, j->height, j->steps, j->in, NULL);
    run_free(&r);
    return rc;
  }
  if (!rc) rc = rcl__split_each(s, r.bounds, setup_fn, &r);
  for (r.round = 0; !rc && r.round < r.rounds; r.round++) rc = rcl__split_each(s, r.bounds, round_fn, &r);
  if (!rc) rc = rcl__split_each(s, r.bounds, finish_fn, &r);
  if (!rc && job->residual) rc = combine_residual(&r);
  run_free(&r);
  return rc;
}

int rcl_split_stencil(void *out, rcl_split *s, const rcl_stencil_desc *st, rcl_dtype dtype, size_t width, size_t height,
                      size_t iters, const void *in) {
  if (!st) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_stencil: NULL stencil description");
  rcl__split_grid_job j = {st, NULL, dtype, width, height, iters, in, NULL, out, NULL, 0};
  return rcl__split_grid_run(s, &j);
}

int rcl_split_sor(void *grid, void *residual, rcl_split *s, const rcl_sor_desc *d, rcl_dtype dtype, size_t width,
                  size_t height, size_t sweeps, const void *rhs) {
  if (!d) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_sor: NULL SOR description");
  rcl__split_grid_job j = {NULL, d, dtype, width, height, sweeps, grid, rhs, grid, residual, 0};
  return rcl__split_grid_run(s, &j);
}
