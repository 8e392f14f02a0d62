/* Stencils and red-black SOR over MPI ranks: the grid cut into equal blocks of rows (rcl_mpi_grid_rows), each
 * rank stepping its block on its device (src/stencil/stencil_block.c: the family's own kernels on the block
 * plus its halo rows), the halo rows exchanged point to point between rounds of `per` steps, the SOR residual
 * norm joined from every rank's part (rcl_mpi_partial_allreduce). Why a block's own rows get the whole grid's
 * bits: stencil_internal.h, "one block of rows"; the same driver over the devices of one process:
 * src/split/split_stencil.c.
 *
 * The exchange: every rank computes every block's geometry, so it knows which of its edge rows each rank
 * needs (in that rank's halo order) and which rank owns each of its own halo rows, with no message about the
 * plan. A halo row may come from any rank, two or more blocks away where blocks are thinner than the halo,
 * or from the rank itself across the wrap of a periodic grid (a message to itself). The first round's
 * exchange fills the halo (each rank starts from its own rows only). A rank whose device fails keeps taking
 * part in every exchange and reports at the end, so no rank waits forever. */
#include <limits.h>
#include <string.h>

#include "mpi/mpi_sparse.h"
#include "reprocl/split.h"
#include "stencil/stencil_internal.h"

enum { GRID_TAG = 0x4a11 };

typedef struct {
  MPI_Comm comm;
  int size, rank;
  rcl_context *ctx;
  const rcl_stencil_desc *st;
  const rcl_sor_desc *sor;
  rcl_dtype dt;
  size_t es, width, height, steps, row; /* row: bytes of one grid row */
  size_t halo, per, rounds;
  size_t *bounds; /* size + 1: rank r computes rows [bounds[r], bounds[r + 1]) */
  rcl__block_geom g;
  rcl__stencil_block *blk;
  int *rcount, *rdispl, *scount, *sdispl; /* halo rows received from / edge rows sent to each rank */
  size_t *sidx;                           /* the sent rows' indices among this rank's edge rows */
  int *at;                                /* rows taken from each rank's message so far */
  unsigned char *edge, *sbuf, *rbuf, *hrows;
  int err;            /* this rank's first failure not yet agreed */
  rcl__mpi_clock clk; /* the phases (collecting or not) */
} mgrid;

static int grid_bounds(size_t *bounds, size_t count, size_t height, size_t granule) {
  double *w = rcl__malloc(count * sizeof *w);
  if (!w) return RCL_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < count; i++) w[i] = 1.0;
  int rc = rcl_split_partition(bounds, w, count, height, granule);
  rcl__free(w);
  return rc;
}

int rcl_mpi_grid_rows(size_t *first, size_t *count, MPI_Comm comm, size_t height, size_t granule) {
  int size, rank, rc = rcl__mpi_shape(&size, &rank, comm);
  if (rc) return rc;
  if (!first || !count) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_grid_rows: NULL output");
  size_t *b = rcl__malloc(((size_t)size + 1) * sizeof *b);
  if (!b) return RCL_ERR_OUT_OF_MEMORY;
  rc = grid_bounds(b, (size_t)size, height, granule);
  if (!rc) *first = b[rank], *count = b[rank + 1] - b[rank];
  rcl__free(b);
  return rc;
}

/* The rank computing global row `row` (a rank with rows). */
static int owner(const mgrid *m, size_t row) { return rcl__mpi_owner(m->bounds, m->size, row); }

static size_t own(const mgrid *m) { return m->g.r1 - m->g.r0; }
static size_t halo_rows(const rcl__block_geom *g) { return g->above + g->below; }
/* The global row of halo row k of a block (its above rows, then its below rows). */
static size_t halo_row(const rcl__block_geom *g, size_t k) {
  return rcl__block_global_row(g, k < g->above ? k : k + g->r1 - g->r0);
}

static void geom_of(const mgrid *m, rcl__block_geom *g, int r) {
  rcl_boundary bc = m->sor ? m->sor->boundary : m->st->boundary;
  rcl__block_geom_init(g, m->width, m->height, m->bounds[r], m->bounds[r + 1], m->halo, bc);
}

/* What this rank sends to each rank (its edge rows in their halo order) and receives from each (its own
 * halo rows by owner). */
static int plan_exchange(mgrid *m) {
  size_t K = (size_t)m->size, nsend = 0, n = halo_rows(&m->g), e = rcl__block_edge(&m->g, m->halo);
  if (!(m->rcount = rcl__calloc(K, sizeof(int))) || !(m->rdispl = rcl__calloc(K, sizeof(int))) ||
      !(m->scount = rcl__calloc(K, sizeof(int))) || !(m->sdispl = rcl__calloc(K, sizeof(int))) ||
      !(m->at = rcl__calloc(K, sizeof(int))))
    return RCL_ERR_OUT_OF_MEMORY;
  for (size_t k = 0; k < n; k++) m->rcount[owner(m, halo_row(&m->g, k))]++;
  for (int pass = 0; pass < 2; pass++) { /* count, then fill sidx */
    nsend = 0;
    for (int r = 0; r < m->size; r++) {
      rcl__block_geom gr;
      geom_of(m, &gr, r);
      m->sdispl[r] = (int)nsend;
      for (size_t k = 0; k < halo_rows(&gr); k++) {
        size_t row = halo_row(&gr, k);
        if (owner(m, row) != m->rank) continue;
        if (pass) m->sidx[nsend] = rcl__block_edge_index(&m->g, m->halo, row);
        nsend++;
      }
      m->scount[r] = (int)(nsend - (size_t)m->sdispl[r]);
    }
    if (!pass && !(m->sidx = rcl__malloc((nsend ? nsend : 1) * sizeof *m->sidx))) return RCL_ERR_OUT_OF_MEMORY;
  }
  for (size_t r = 1; r < K; r++) m->rdispl[r] = m->rdispl[r - 1] + m->rcount[r - 1];
  if ((nsend > n ? nsend : n) > INT_MAX / m->row)
    return rcl__fail(RCL_ERR_OVERFLOW, "halo rows of %zu bytes: above MPI's count limit", m->row);
  m->edge = rcl__malloc((2 * e + 1) * m->row);
  m->sbuf = rcl__malloc((nsend + 1) * m->row);
  m->rbuf = rcl__malloc((n + 1) * m->row);
  m->hrows = rcl__malloc((n + 1) * m->row);
  return m->edge && m->sbuf && m->rbuf && m->hrows ? 0 : RCL_ERR_OUT_OF_MEMORY;
}

/* The messages of one exchange: sbuf to every rank that needs rows, rbuf from every rank that owns some. */
static int exchange_messages(mgrid *m) {
  MPI_Request *req = rcl__malloc(2 * (size_t)m->size * sizeof *req);
  if (!req) return RCL_ERR_OUT_OF_MEMORY;
  int n = 0, rc = 0, row = (int)m->row;
  for (int r = 0; r < m->size && !rc; r++)
    if (m->rcount[r])
      rc = rcl__mpi_check(MPI_Irecv(m->rbuf + (size_t)m->rdispl[r] * m->row, m->rcount[r] * row, MPI_BYTE, r, GRID_TAG,
                                    m->comm, &req[n++]),
                          "MPI_Irecv (halo rows)");
  for (int r = 0; r < m->size && !rc; r++)
    if (m->scount[r])
      rc = rcl__mpi_check(MPI_Isend(m->sbuf + (size_t)m->sdispl[r] * m->row, m->scount[r] * row, MPI_BYTE, r, GRID_TAG,
                                    m->comm, &req[n++]),
                          "MPI_Isend (halo rows)");
  int wrc = rcl__mpi_check(MPI_Waitall(n, req, MPI_STATUSES_IGNORE), "MPI_Waitall (halo rows)");
  rcl__free(req);
  return rc ? rc : wrc;
}

/* Own row (0-based in the block) of edge row idx: the first e rows, then the last e. */
static size_t edge_own(const mgrid *m, size_t idx) {
  size_t e = rcl__block_edge(&m->g, m->halo);
  return idx < e ? idx : own(m) - e + (idx - e);
}

/* One exchange of rows: this rank's rows that others need, from src (its edge rows when from_edge, else all
 * its own rows), sent; its halo rows received into hrows (halo order: above, then below). */
static int swap_rows(mgrid *m, const unsigned char *src, int from_edge) {
  size_t nsend = (size_t)m->sdispl[m->size - 1] + (size_t)m->scount[m->size - 1], n = halo_rows(&m->g);
  for (size_t k = 0; k < nsend; k++)
    memcpy(m->sbuf + k * m->row, src + (from_edge ? m->sidx[k] : edge_own(m, m->sidx[k])) * m->row, m->row);
  int rc = exchange_messages(m);
  if (rc) return rc;
  memset(m->at, 0, (size_t)m->size * sizeof *m->at);
  for (size_t k = 0; k < n; k++) {
    int r = owner(m, halo_row(&m->g, k));
    memcpy(m->hrows + k * m->row, m->rbuf + (size_t)(m->rdispl[r] + m->at[r]++) * m->row, m->row);
  }
  return 0;
}

/* The exchange between rounds: edge rows read from the device, halo rows written to it (device steps are
 * skipped after a failure; the messages never are). */
static int exchange(mgrid *m) {
  size_t e = rcl__block_edge(&m->g, m->halo);
  RCL_MPI_LAP(&m->clk, kernels_s);
  if (!m->err && m->blk) {
    m->err = rcl__stencil_block_read(m->edge, m->blk, m->g.above, e);
    if (!m->err) m->err = rcl__stencil_block_read(m->edge + e * m->row, m->blk, m->g.above + own(m) - e, e);
  }
  RCL_MPI_LAP(&m->clk, halo_read_s);
  int rc = swap_rows(m, m->edge, 1);
  RCL_MPI_LAP(&m->clk, halo_mpi_s);
  if (m->clk.p) m->clk.p->exchanges++;
  if (rc || m->err || !m->blk) return rc;
  if (m->g.above) m->err = rcl__stencil_block_write(m->blk, 0, m->g.above, m->hrows);
  if (!m->err && m->g.below)
    m->err = rcl__stencil_block_write(m->blk, m->g.above + own(m), m->g.below, m->hrows + m->g.above * m->row);
  RCL_MPI_LAP(&m->clk, halo_write_s);
  return 0;
}

/* Steps between exchanges: all of them where one rank has every row; else as many as keep the halo rows a
 * rank computes in vain to about 1/32 of the thinnest block (1 to MAX_PER), and no more than the call's steps
 * (a call of fewer steps than that: one deep exchange before the first step and none after). Fewer, deeper
 * exchanges: each costs a device round trip and the neighbours' wait, whatever its depth. The bits never
 * depend on it. */
enum { MAX_PER = 32 };
static void plan_steps(mgrid *m, size_t reach) {
  size_t thin = m->height, busy = 0, steps = m->steps ? m->steps : 1;
  for (int r = 0; r < m->size; r++) {
    size_t n = m->bounds[r + 1] - m->bounds[r];
    busy += n > 0;
    if (n && n < thin) thin = n;
  }
  size_t per = thin / (32 * reach);
  per = per < 1 ? 1 : per > MAX_PER ? MAX_PER : per;
  m->per = busy <= 1 || per > steps ? steps : per;
  m->halo = busy <= 1 ? 0 : m->per * reach;
  m->rounds = m->steps / m->per + (m->steps % m->per != 0);
}

/* The cut, the steps, the exchange plan and its buffers (no message). */
static int plan(mgrid *m) {
  size_t reach = m->sor ? 2 : m->st->kind == RCL_STENCIL_GENERAL ? m->st->radius : 1;
  if (!(m->bounds = rcl__malloc(((size_t)m->size + 1) * sizeof *m->bounds))) return RCL_ERR_OUT_OF_MEMORY;
  int rc = grid_bounds(m->bounds, (size_t)m->size, m->height, m->sor ? 2 : 1);
  if (rc) return rc;
  plan_steps(m, reach);
  geom_of(m, &m->g, m->rank);
  return plan_exchange(m);
}

/* A local grid (rows x W, local order) of src (this rank's own rows), its halo rows from their owners. */
static int local_grid(unsigned char **out, mgrid *m, const unsigned char *src) {
  int rc = swap_rows(m, src, 0);
  if (rc || !own(m)) return rc;
  if (!(*out = rcl__malloc(m->g.rows * m->row))) return m->err = RCL_ERR_OUT_OF_MEMORY, 0;
  memcpy(*out, m->hrows, m->g.above * m->row);
  memcpy(*out + m->g.above * m->row, src, own(m) * m->row);
  memcpy(*out + (m->g.above + own(m)) * m->row, m->hrows + m->g.above * m->row, m->g.below * m->row);
  return 0;
}

/* This rank's block, from its own rows of in (and rhs) and the halo rows the first exchange brings. */
static int setup(mgrid *m, const void *in, const void *rhs) {
  unsigned char *local = NULL, *lrhs = NULL;
  int rc = local_grid(&local, m, in);
  if (!rc && rhs) rc = local_grid(&lrhs, m, rhs);
  if (!rc && !m->err && own(m))
    m->err = rcl__stencil_block_create(&m->blk, m->ctx, m->st, m->sor, m->dt, &m->g, local, lrhs);
  rcl__free(local);
  rcl__free(lrhs);
  return rc;
}

static void grid_free(mgrid *m) {
  rcl__stencil_block_free(m->blk);
  void *p[] = {m->bounds, m->rcount, m->rdispl, m->scount, m->sdispl, m->at,
               m->sidx,   m->edge,   m->sbuf,   m->rbuf,   m->hrows};
  for (size_t i = 0; i < sizeof p / sizeof *p; i++) rcl__free(p[i]);
}

/* SOR's residual norm: this rank's part (an empty one without rows) joined over the ranks, with every rank's
 * status so far. */
static int residual_norm(mgrid *m, void *residual) {
  rcl_partial *part = NULL;
  int rc = m->rounds && m->halo ? exchange(m) : 0; /* fresh halo rows */
  if (rc) return rc;
  rc = m->err;
  if (!rc && m->blk)
    rc = rcl__stencil_block_residual(&part, m->blk);
  else if (!rc)
    rc = rcl_ref_reduce_partial(&part, RCL_OP_NRM2, m->dt, RCL_REDUCE_ORDERED, m->width * m->height, m->g.r0 * m->width,
                                0, NULL, NULL);
  m->err = 0;
  RCL_MPI_LAP(&m->clk, reduce_part_s);
  rc = rcl__mpi_partial_allreduce_status(residual, m->comm, part, rc);
  rcl_partial_free(part);
  RCL_MPI_LAP(&m->clk, reduce_allreduce_s);
  if (m->clk.p) m->clk.p->reductions++;
  return rc;
}

/* The rounds of steps with the exchanges between them, the residual, this rank's rows into out. */
static int run(mgrid *m, void *out, void *residual) {
  int rc = 0;
  for (size_t r = 0; !rc && r < m->rounds; r++) {
    size_t k = m->steps - r * m->per < m->per ? m->steps - r * m->per : m->per;
    if (r > 0 && m->halo) rc = exchange(m);
    if (!rc && !m->err && m->blk) m->err = rcl__stencil_block_step(m->blk, k);
    RCL_MPI_LAP(&m->clk, kernels_s);
  }
  if (!rc && residual) rc = residual_norm(m, residual);
  if (!rc && !m->err && m->blk) m->err = rcl__stencil_block_read(out, m->blk, m->g.above, own(m));
  return rc ? rc : rcl_mpi_agree(m->comm, m->err, NULL);
}

/* Whether the ranks agree on which optional arrays they pass (rhs: the ranks with rows; residual: all). */
static int check_optional(mgrid *m, const void *rhs, const void *residual, size_t count) {
  int mine[4] = {count && rhs, count && !rhs, residual != NULL, residual == NULL}, all[4];
  int rc = rcl__mpi_check(MPI_Allreduce(mine, all, 4, MPI_INT, MPI_MAX, m->comm), "MPI_Allreduce (arguments)");
  if (!rc && all[0] && all[1])
    rc = rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_sor: rhs given on some ranks, NULL on others");
  if (!rc && all[2] && all[3])
    rc = rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_sor: residual given on some ranks, NULL on others");
  return rc;
}

static int check_args(mgrid *m, const void *in, const void *out, size_t count, const char *fn) {
  unsigned int radius;
  if (!m->es) return rcl__fail(RCL_ERR_INVALID_ARG, "%s: unknown dtype %d", fn, (int)m->dt);
  int rc = m->st ? rcl__stencil_check(m->st, &radius) : rcl__sor_check(m->sor, m->width, m->height);
  if (!rc) rc = rcl__grid_check_dims(m->width, m->height, m->es, fn);
  if (!rc && !m->ctx) rc = rcl__fail(RCL_ERR_INVALID_ARG, "%s: NULL context", fn);
  if (!rc && count && (!in || !out)) rc = rcl__fail(RCL_ERR_INVALID_ARG, "%s: NULL grid", fn);
  return rc;
}

static int grid_timed(mgrid *m, void *out, void *residual, const void *in, const void *rhs) {
  const char *fn = m->sor ? "rcl_mpi_sor" : "rcl_mpi_stencil";
  int rc = rcl__mpi_shape(&m->size, &m->rank, m->comm);
  if (rc) return rc;
  m->es = rcl_dtype_size(m->dt);
  m->row = m->width * m->es;
  size_t first = 0, count = 0;
  rc = rcl_mpi_grid_rows(&first, &count, m->comm, m->height, m->sor ? 2 : 1);
  if (!rc) rc = check_args(m, in, out, count, fn);
  if ((rc = rcl_mpi_agree(m->comm, rc, NULL)) != 0) return rc;
  if (m->sor && (rc = check_optional(m, rhs, residual, count)) != 0) return rc;
  rc = rcl_mpi_agree(m->comm, plan(m), NULL);
  if (!rc) rc = setup(m, in, rhs);
  if (!rc) rc = rcl_mpi_agree(m->comm, m->err, NULL);
  m->err = 0;
  RCL_MPI_LAP(&m->clk, setup_s);
  if (!rc) rc = run(m, out, residual);
  grid_free(m);
  return rc;
}

static int grid_run(mgrid *m, void *out, void *residual, const void *in, const void *rhs) {
  rcl__mpi_clock_start(&m->clk);
  int rc = grid_timed(m, out, residual, in, rhs);
  rcl__mpi_clock_stop(&m->clk);
  return rc;
}

int rcl_mpi_stencil(void *out, MPI_Comm comm, rcl_context *ctx, const rcl_stencil_desc *st, rcl_dtype dtype,
                    size_t width, size_t height, size_t iters, const void *in) {
  if (!st) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_stencil: NULL stencil description");
  mgrid m = {.comm = comm, .ctx = ctx, .st = st, .dt = dtype, .width = width, .height = height, .steps = iters};
  return grid_run(&m, out, NULL, in, NULL);
}

int rcl_mpi_sor(void *grid, void *residual, MPI_Comm comm, rcl_context *ctx, const rcl_sor_desc *d, rcl_dtype dtype,
                size_t width, size_t height, size_t sweeps, const void *rhs) {
  if (!d) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_sor: NULL SOR description");
  mgrid m = {.comm = comm, .ctx = ctx, .sor = d, .dt = dtype, .width = width, .height = height, .steps = sweeps};
  return grid_run(&m, grid, residual, grid, rhs);
}
