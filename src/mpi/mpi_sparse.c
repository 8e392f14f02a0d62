/* SpMV and CG over a distributed CSR matrix (mpi_matrix.c). Each rank's rows are a matrix of their own whose
 * columns are a halo before, the rank's own entries of x, a halo after (src/sparse/csr_local.c), so every row
 * sum is the same sequence of operations as on one device once the halo holds the other ranks' entries: an
 * exchange point to point with the ranks that share entries (MPI_Isend / MPI_Irecv), before every SpMV. CG
 * runs the one driver of src/sparse/cg.c (rcl__cg_run) over ops that keep the vectors on this rank's device:
 * axpy, scal and copies per slice; dots and norms as this rank's part (rcl_reduce_partial_enqueue; a norm of
 * x as the dot x'x, which a following dot x'x reuses), the parts a step needs joined in one call
 * (rcl__mpi_partial_allreduce_many, the bits of rcl_mpi_partial_allreduce for each), so every rank holds the
 * same scalars, equal to one device's, and takes the same steps. A halo destination's values that are one run
 * of own entries are sent in place (no packing). A rank whose device fails goes on taking part in every
 * exchange; its status travels with the next reduction (every CG iteration has some) or the final agreement,
 * so no rank waits forever. */
#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_sparse.h"
#include "reduce/reduce_partial.h"

enum { HALO_TAG = 0x4a10 };

/* ---- the phases' clock ------------------------------------------------------------------------------------ */

static _Thread_local rcl_mpi_phases *tl_phases; /* this thread's collector (rcl_mpi_phases_collect) */

int rcl_mpi_phases_collect(rcl_mpi_phases *p) {
  if (p && p->version != RCL_MPI_PHASES_VERSION)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_phases.version is %u, expected %u (use RCL_MPI_PHASES_INIT)",
                     p->version, RCL_MPI_PHASES_VERSION);
  tl_phases = p;
  return 0;
}

void rcl__mpi_clock_start(rcl__mpi_clock *c) {
  c->p = tl_phases;
  c->t = c->t0 = c->p ? MPI_Wtime() : 0;
}

double rcl__mpi_clock_lap(rcl__mpi_clock *c) {
  double now = MPI_Wtime(), d = now - c->t;
  c->t = now;
  return d;
}

void rcl__mpi_clock_stop(rcl__mpi_clock *c) {
  if (!c->p) return;
  c->p->setup_s += rcl__mpi_clock_lap(c);
  c->p->calls++;
  c->p->total_s += c->t - c->t0;
}

/* ---- the halo exchange ------------------------------------------------------------------------------------ */

/* The values sent to rank r: straight from own where they are one run of own entries (sdirect), else
 * gathered into sbuf. */
static const unsigned char *send_from(rcl_mpi_matrix *M, const unsigned char *own, int r) {
  size_t es = M->es, k0 = (size_t)M->sdispl[r], k1 = k0 + (size_t)M->scount[r];
  if (M->sdirect[r]) return own + M->sidx[k0] * es;
  for (size_t k = k0; k < k1; k++) memcpy(M->sbuf + k * es, own + M->sidx[k] * es, es);
  return M->sbuf + k0 * es;
}

int rcl__mpi_halo_exchange(rcl_mpi_matrix *M, const void *own, void *halo) {
  size_t es = M->es;
  unsigned char *out = halo ? halo : M->sbuf + M->nsend * es;
  MPI_Datatype t = M->dt == RCL_F32 ? MPI_FLOAT : MPI_DOUBLE;
  MPI_Request *req = rcl__malloc(2 * (size_t)M->size * sizeof *req);
  if (!req) return RCL_ERR_OUT_OF_MEMORY; /* then MPI_Abort would be the only way out; the agreement follows */
  int n = 0, rc = 0;
  for (int r = 0; r < M->size && !rc; r++)
    if (M->rcount[r])
      rc = rcl__mpi_check(MPI_Irecv(out + (size_t)M->rdispl[r] * es, M->rcount[r], t, r, HALO_TAG, M->comm, &req[n++]),
                          "MPI_Irecv (halo)");
  for (int r = 0; r < M->size && !rc; r++)
    if (M->scount[r])
      rc = rcl__mpi_check(MPI_Isend(send_from(M, own, r), M->scount[r], t, r, HALO_TAG, M->comm, &req[n++]),
                          "MPI_Isend (halo)");
  int wrc = rcl__mpi_check(MPI_Waitall(n, req, MPI_STATUSES_IGNORE), "MPI_Waitall (halo)");
  rcl__free(req);
  return rc ? rc : wrc;
}

static size_t own_rows(const rcl_mpi_matrix *A) { return A->bounds[A->rank + 1] - A->bounds[A->rank]; }
static size_t own_cols(const rcl_mpi_matrix *A) { return A->cbounds[A->rank + 1] - A->cbounds[A->rank]; }

/* ---- SpMV with host arrays ---------------------------------------------------------------------------- */

static int check_spmv(rcl_mpi_matrix *A, const void *y, const void *alpha, const void *x, const void *beta,
                      const rcl_spmv_options *opts) {
  if (!alpha || !beta) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_spmv: NULL alpha or beta");
  if ((own_rows(A) && !y) || (own_cols(A) && !x)) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_spmv: NULL x or y");
  if (opts && opts->version != RCL_SPMV_OPTIONS_VERSION)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv_options.version is %u, expected %u (use RCL_SPMV_OPTIONS_INIT)",
                     opts->version, RCL_SPMV_OPTIONS_VERSION);
  return 0;
}

static int spmv_timed(rcl__mpi_clock *c, void *y, rcl_mpi_matrix *A, const void *alpha, const void *x, const void *beta,
                      const rcl_spmv_options *opts) {
  if (!A) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_spmv: NULL matrix");
  int rc = rcl_mpi_agree(A->comm, check_spmv(A, y, alpha, x, beta, opts), NULL);
  if (rc) return rc;
  size_t es = A->es, ne = A->L.A->ncols, nb = A->L.nbefore;
  RCL_MPI_LAP(c, setup_s);
  rc = rcl__mpi_halo_exchange(A, x, NULL);
  RCL_MPI_LAP(c, halo_mpi_s);
  if (c->p) c->p->exchanges++;
  unsigned char *xe = rcl__malloc((ne ? ne : 1) * es), *h = A->sbuf + A->nsend * es;
  if (!rc && !xe) rc = RCL_ERR_OUT_OF_MEMORY;
  if (!rc && own_rows(A)) {
    memcpy(xe, h, nb * es);
    if (own_cols(A)) memcpy(xe + nb * es, x, own_cols(A) * es);
    memcpy(xe + (nb + own_cols(A)) * es, h + nb * es, A->L.nafter * es);
    for (int i = 0; !rc && i < 4; i++) /* A whole (M), or its pieces */
      if (i == 0 ? A->M != NULL : A->P[i - 1] != NULL)
        rc = rcl_spmv_host((char *)y + (i ? A->pr[i - 1] : 0) * es, i ? A->P[i - 1] : A->M, alpha, xe, beta, opts);
  }
  rcl__free(xe);
  RCL_MPI_LAP(c, kernels_s);
  return rcl_mpi_agree(A->comm, rc, NULL);
}

int rcl_mpi_spmv(void *y, rcl_mpi_matrix *A, const void *alpha, const void *x, const void *beta,
                 const rcl_spmv_options *opts) {
  rcl__mpi_clock c;
  rcl__mpi_clock_start(&c);
  int rc = spmv_timed(&c, y, A, alpha, x, beta, opts);
  rcl__mpi_clock_stop(&c);
  return rc;
}

/* ---- CG: the ops of cg.c's driver on this rank's device -------------------------------------------------- */

typedef struct {
  rcl_mpi_matrix *A;
  size_t es, n, off; /* own rows, and where they start in every vector (the halo before) */
  cl_command_queue q;
  int in_order;        /* q runs its commands in order */
  cl_mem v[RCL_CG_NV]; /* each halo before + own rows + halo after (as L's columns) */
  cl_mem stage;        /* pinned host memory (CL_MEM_ALLOC_HOST_PTR), mapped for the whole solve: host, halo */
  unsigned char *host; /* the own rows of a vector, read back for the exchange */
  unsigned char *halo; /* the halo received (L's halo order), written to the device */
  size_t *runs, nruns; /* the runs [start, start + count) of own rows that other ranks need (pairs), or none */
  rcl_reduce_options ro;
  rcl_spmv_options so;
  int err; /* this rank's first failure not yet agreed (0: none) */
  unsigned char slots[3 * 8];
  rcl_partial *part[RCL_MPI_MANY_MAX]; /* the parts of this step's reductions, joined by the fetch */
  void *out[RCL_MPI_MANY_MAX];         /* and where their results go (slots) */
  int npart;
  rcl_partial *sq; /* the dot x'x of vector sq_vec behind the last norm, until x changes (NULL: none) */
  int sq_vec;
  rcl__mpi_clock clk; /* the phases (collecting or not) */
} mcg;

/* A local step's status: kept (the step returns 0, the rank goes on taking part) until the next agreement. */
static int keep(mcg *g, int rc) {
  if (rc && !g->err) g->err = rc;
  return 0;
}

/* Vector v changes: a kept x'x of it is stale. */
static void touch(mcg *g, int v) {
  if (g->sq && g->sq_vec == v) rcl_partial_free(g->sq), g->sq = NULL;
}

/* A vector op enqueued: its status kept, its time the kernels'. */
static int enqueued(mcg *g, int rc) {
  RCL_MPI_LAP(&g->clk, kernels_s);
  return keep(g, rc);
}

static int mcg_copy(void *st, int dst, int src) {
  mcg *g = st;
  touch(g, dst);
  if (g->err || !g->n) return 0;
  size_t off = g->off * g->es;
  cl_int e = clEnqueueCopyBuffer(g->q, g->v[src], g->v[dst], off, off, g->n * g->es, 0, NULL, NULL);
  return enqueued(g, e ? rcl__fail_cl(e, "CG: clEnqueueCopyBuffer") : 0);
}

static int mcg_axpy(void *st, int dst, const void *alpha, int src) {
  mcg *g = st;
  touch(g, dst);
  if (g->err || !g->n) return 0;
  return enqueued(g, rcl_axpy_enqueue(g->v[dst], g->off, g->A->ctx, g->A->dt, g->n, alpha, g->v[src], g->off, 0, NULL));
}

static int mcg_scal(void *st, int dst, const void *alpha) {
  mcg *g = st;
  touch(g, dst);
  if (g->err || !g->n) return 0;
  return enqueued(g, rcl_scal_enqueue(g->v[dst], g->off, g->A->ctx, g->A->dt, g->n, alpha, 0, NULL));
}

enum { MAX_RUNS = 64 }; /* more runs of rows to send than this: all own rows are read back */

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* g->runs: the own rows that other ranks need (sidx sorted, neighbours joined), when at most MAX_RUNS runs. */
static int send_runs(mcg *g) {
  const rcl_mpi_matrix *A = g->A;
  uint32_t *idx = rcl__malloc((A->nsend ? A->nsend : 1) * sizeof *idx);
  if (!idx || !(g->runs = rcl__malloc(2 * MAX_RUNS * sizeof *g->runs))) {
    rcl__free(idx);
    return RCL_ERR_OUT_OF_MEMORY;
  }
  if (A->nsend) memcpy(idx, A->sidx, A->nsend * sizeof *idx);
  qsort(idx, A->nsend, sizeof *idx, cmp_u32);
  size_t m = 0;
  for (size_t k = 0; k < A->nsend && m <= MAX_RUNS; k++) {
    if (m && idx[k] <= g->runs[2 * m - 2] + g->runs[2 * m - 1]) { /* inside or just after the last run */
      size_t end = (size_t)idx[k] + 1, last = g->runs[2 * m - 2] + g->runs[2 * m - 1];
      g->runs[2 * m - 1] += end > last ? end - last : 0;
    } else if (m < MAX_RUNS) {
      g->runs[2 * m] = idx[k];
      g->runs[2 * m + 1] = 1;
      m++;
    } else {
      m = MAX_RUNS + 1; /* too many: read all */
    }
  }
  rcl__free(idx);
  g->nruns = m;
  return 0;
}

/* The own rows of src that other ranks need into g->host (all of them where they are in too many runs), not
 * blocking: the last read's event in *ev (none without reads), or, ev NULL, waited for (clFinish). */
static cl_int read_sent(mcg *g, int src, cl_event *ev) {
  size_t es = g->es, all = g->nruns > MAX_RUNS, m = all ? 1 : g->nruns;
  cl_int e = 0;
  for (size_t i = 0; i < m && !e; i++) {
    size_t at = all ? 0 : g->runs[2 * i], len = all ? g->n : g->runs[2 * i + 1];
    e = clEnqueueReadBuffer(g->q, g->v[src], CL_FALSE, (g->off + at) * es, len * es, g->host + at * es, 0, NULL,
                            ev && i + 1 == m ? ev : NULL);
  }
  return e || ev ? e : clFinish(g->q);
}

/* dst = alpha A src + beta dst over the rows of piece i of A (mpi_sparse.h; the whole of A for piece -1). */
static void spmv_piece(mcg *g, int i, int dst, int src, const void *alpha, const void *beta) {
  const rcl_mpi_matrix *A = g->A;
  if (i < 0 || A->P[i])
    enqueued(g, rcl_spmv_enqueue(g->v[dst], g->off + (i < 0 ? 0 : A->pr[i]), i < 0 ? A->M : A->P[i], alpha, g->v[src],
                                 0, beta, &g->so, NULL));
}

/* The halo of vector src (the own rows other ranks need read back, exchanged, the halo written before and
 * after them) and dst = alpha A src + beta dst. One wait per exchange, the reads': on an in-order queue they
 * follow the kernels, and the halo's writes do not block (the next exchange's wait, or the solve's end, finds
 * them done before g->halo changes). Where A is in pieces (an in-order queue) the interior rows' product is
 * enqueued after the reads and runs while the messages travel; the boundary rows' follow the halo. */
static void mcg_spmv_halo(mcg *g, int dst, int src, const void *alpha, const void *beta) {
  const rcl_csr_local *L = &g->A->L;
  size_t es = g->es, nb = L->nbefore, na = L->nafter;
  int overlap = g->in_order && g->A->P[1], ok = !g->err && g->n;
  cl_event ev = NULL;
  cl_int e = 0;
  /* a wrapped out-of-order queue: the reads wait for themselves only; timing: the kernels are the kernels' */
  if (ok && (!g->in_order || g->clk.p)) e = clFinish(g->q);
  RCL_MPI_LAP(&g->clk, kernels_s);
  if (!e && ok) e = read_sent(g, src, overlap ? &ev : NULL);
  if (!e && ok && overlap) spmv_piece(g, 1, dst, src, alpha, beta); /* the interior, while the halo travels */
  if (!e && ev) e = clFlush(g->q);
  if (!e && ev) e = clWaitForEvents(1, &ev);
  if (ev) clReleaseEvent(ev);
  keep(g, e ? rcl__fail_cl(e, "CG: reading the rows for the halo") : 0);
  RCL_MPI_LAP(&g->clk, halo_read_s);
  keep(g, rcl__mpi_halo_exchange(g->A, g->host, g->halo)); /* every rank, whatever failed */
  RCL_MPI_LAP(&g->clk, halo_mpi_s);
  if (g->clk.p) g->clk.p->exchanges++;
  if (g->err || !g->n) return;
  /* timing without the overlap: the writes' time is theirs */
  cl_bool block = g->in_order && (overlap || !g->clk.p) ? CL_FALSE : CL_TRUE;
  if (nb) e = clEnqueueWriteBuffer(g->q, g->v[src], block, 0, nb * es, g->halo, 0, NULL, NULL);
  if (!e && na)
    e = clEnqueueWriteBuffer(g->q, g->v[src], block, (nb + g->n) * es, na * es, g->halo + nb * es, 0, NULL, NULL);
  keep(g, e ? rcl__fail_cl(e, "CG: writing the halo") : 0);
  RCL_MPI_LAP(&g->clk, halo_write_s);
  if (g->err) return;
  if (!overlap) spmv_piece(g, -1, dst, src, alpha, beta);
  for (int i = 0; overlap && i < 3; i += 2) spmv_piece(g, i, dst, src, alpha, beta);
}

static int mcg_spmv(void *st, int jac, int dst, int src, const void *alpha, const void *beta) {
  mcg *g = st;
  touch(g, dst);
  if (!jac) return mcg_spmv_halo(g, dst, src, alpha, beta), 0;
  if (g->err || !g->n) return 0;
  return enqueued(g, rcl_spmv_enqueue(g->v[dst], g->off, g->A->D, alpha, g->v[src], g->off, beta, &g->so, NULL));
}

/* This rank's part of a reduction over its rows (an empty one without rows). A norm of x is made as the dot
 * x'x, kept (g->sq) until x changes, so a dot x'x that follows (CG without Jacobi: ||r|| and r'r) costs no
 * second reduction on the device. */
static int make_part(mcg *g, rcl_partial **part, rcl_reduce_op op, int a, int b) {
  rcl_mpi_matrix *A = g->A;
  int nrm = op == RCL_OP_NRM2, sq = nrm || (op == RCL_OP_DOT && a == b);
  if (!g->n) return rcl_ref_reduce_partial(part, op, A->dt, g->ro.mode, A->nrows, A->bounds[A->rank], 0, NULL, NULL);
  if (sq && g->sq && g->sq_vec == a && !nrm) return *part = g->sq, g->sq = NULL, 0;
  rcl_partial *p = NULL;
  int rc =
      rcl_reduce_partial_enqueue(&p, A->ctx, sq ? RCL_OP_DOT : op, A->dt, A->nrows, A->bounds[A->rank], g->n, g->v[a],
                                 g->off, op == RCL_OP_SUM ? NULL : g->v[sq ? a : b], g->off, &g->ro, NULL);
  if (rc || !nrm) return rc ? rc : (*part = p, 0);
  rc = rcl__partial_copy_as(part, p, RCL_OP_NRM2);
  rcl_partial_free(g->sq);
  g->sq = rc ? NULL : p, g->sq_vec = a;
  if (rc) rcl_partial_free(p);
  return rc;
}

/* A dot or norm: this rank's part, kept until the fetch joins the parts of this step over the ranks. */
static int mcg_reduce(void *st, rcl_reduce_op op, int a, int b, int slot) {
  mcg *g = st;
  rcl_partial *part = NULL;
  int rc = g->err;
  if (g->npart == RCL_MPI_MANY_MAX) return keep(g, rcl__fail(RCL_ERR_INTERNAL, "CG: too many reductions in a step"));
  if (g->clk.p && !rc && g->n) { /* timing: the kernels before the part are the kernels' time */
    cl_int e = clFinish(g->q);
    if (e) rc = rcl__fail_cl(e, "CG: clFinish");
    RCL_MPI_LAP(&g->clk, kernels_s);
  }
  if (!rc) rc = make_part(g, &part, op, a, b);
  keep(g, rc);
  g->part[g->npart] = part;
  g->out[g->npart++] = g->slots + (size_t)slot * g->es;
  RCL_MPI_LAP(&g->clk, reduce_part_s);
  if (g->clk.p) g->clk.p->reductions++;
  return 0;
}

/* The scalars: the parts kept since the last fetch joined over the ranks in one call, with every rank's
 * status so far. */
static int mcg_fetch(void *st, void *slots) {
  mcg *g = st;
  int rc = rcl__mpi_partial_allreduce_many(g->out, g->A->comm, (const rcl_partial *const *)g->part, g->npart, g->err);
  for (int i = 0; i < g->npart; i++) rcl_partial_free(g->part[i]);
  g->npart = 0;
  g->err = 0;
  RCL_MPI_LAP(&g->clk, reduce_allreduce_s);
  memcpy(slots, g->slots, 3 * g->es);
  return rc;
}

/* The staging memory of the exchanges: own rows, then the halo; pinned (mapped once) where the driver can. */
static cl_int stage_create(mcg *g, cl_context c) {
  size_t bytes = (g->A->L.A->ncols ? g->A->L.A->ncols : 1) * g->es;
  cl_command_queue_properties props = 0;
  cl_int e = clGetCommandQueueInfo(g->q, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
  g->in_order = !e && !(props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  if (!e) g->stage = clCreateBuffer(c, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &e);
  if (!e)
    g->host = clEnqueueMapBuffer(g->q, g->stage, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL, NULL, &e);
  if (!e) g->halo = g->host + g->n * g->es;
  return e;
}

/* The vectors on the device, with this rank's rows of x and b. */
static int mcg_setup(mcg *g, const void *x, const void *b, int jacobi) {
  rcl_context *ctx = g->A->ctx;
  cl_context c = rcl_context_cl_context(ctx);
  size_t bytes = (g->A->L.A->ncols ? g->A->L.A->ncols : 1) * g->es;
  if (!g->n) return 0;
  int rc = send_runs(g);
  if (rc) return rc;
  cl_int e = stage_create(g, c);
  if (e) return rcl__fail_cl(e, "CG: the staging memory of the halo exchange (%zu bytes)", bytes);
  for (int k = 0; !e && k < RCL_CG_NV; k++)
    if (k != RCL_CG_Z || jacobi) g->v[k] = clCreateBuffer(c, CL_MEM_READ_WRITE, bytes, NULL, &e);
  if (e) return rcl__fail_cl(e, "CG: clCreateBuffer (a vector of %zu bytes)", bytes);
  size_t off = g->off * g->es, own = g->n * g->es;
  e = clEnqueueWriteBuffer(g->q, g->v[RCL_CG_X], CL_TRUE, off, own, x, 0, NULL, NULL);
  if (!e) e = clEnqueueWriteBuffer(g->q, g->v[RCL_CG_B], CL_TRUE, off, own, b, 0, NULL, NULL);
  return e ? rcl__fail_cl(e, "CG: writing x and b") : 0;
}

/* The solve: vectors, the driver, the solution read back (also after a breakdown or no convergence, as
 * rcl_cg does); every local failure agreed. */
static int mcg_solve(mcg *g, void *x, const void *b, rcl_cg_result *res, const rcl_cg_options *opts) {
  rcl_mpi_matrix *A = g->A;
  int rc = rcl_mpi_agree(A->comm, mcg_setup(g, x, b, opts->jacobi), NULL);
  rcl_cg_ops o = {g, mcg_copy, mcg_spmv, mcg_reduce, mcg_axpy, mcg_scal, mcg_fetch};
  RCL_MPI_LAP(&g->clk, setup_s);
  if (!rc) rc = rcl__cg_run(&o, A->dt, A->nrows, opts, res); /* its status is every rank's */
  if (rc == 0 || rc == RCL_ERR_NO_CONVERGENCE || rc == RCL_ERR_BREAKDOWN) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", rc ? rcl_error_last() : "");
    cl_int e = g->err || !g->n ? 0 : clFinish(g->q);
    if (!e && !g->err && g->n)
      e = clEnqueueReadBuffer(g->q, g->v[RCL_CG_X], CL_TRUE, g->off * g->es, g->n * g->es, x, 0, NULL, NULL);
    keep(g, e ? rcl__fail_cl(e, "CG: reading the solution") : 0);
    int arc = rcl_mpi_agree(A->comm, g->err, NULL);
    if (arc) {
      rcl_cg_result_free(res);
      rc = arc;
    } else if (rc) {
      rcl__fail(rc, "%s", msg); /* the solver's message, not the agreement's */
    }
  }
  if (g->n && g->stage) clFinish(g->q); /* the last halo writes may still read the staging memory */
  if (g->host) clEnqueueUnmapMemObject(g->q, g->stage, g->host, 0, NULL, NULL);
  if (g->stage) clFinish(g->q), clReleaseMemObject(g->stage);
  for (int k = 0; k < RCL_CG_NV; k++)
    if (g->v[k]) clReleaseMemObject(g->v[k]);
  for (int i = 0; i < g->npart; i++) rcl_partial_free(g->part[i]); /* a solve that stopped between them */
  rcl_partial_free(g->sq);
  rcl__free(g->runs);
  return rc;
}

static int check_cg(rcl_mpi_matrix *A, void *x, const void *b, rcl_cg_result *res, const rcl_cg_options *opts) {
  int rc = rcl__cg_check(res, opts, A->nrows, A->ncols);
  if (!rc && own_rows(A) && (!x || !b)) rc = rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_cg: NULL x or b");
  return rc;
}

static int cg_timed(mcg *g, void *x, rcl_cg_result *res, rcl_mpi_matrix *A, const void *b, const rcl_cg_options *opts) {
  static const rcl_cg_options defaults = RCL_CG_OPTIONS_INIT;
  if (!A) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_cg: NULL matrix");
  int rc = rcl_mpi_agree(A->comm, check_cg(A, x, b, res, opts), NULL);
  if (rc) return rc;
  if (!opts) opts = &defaults;
  if (A->nrows == 0) return rcl__cg_empty(res, A->dt);
  if (opts->jacobi && A->jacobi_rc) return rcl__cg_finish(res, A->dt, rcl__fail(A->jacobi_rc, "%s", A->jacobi_msg));
  g->A = A;
  g->es = A->es;
  g->n = own_rows(A);
  g->off = A->L.nbefore;
  g->q = rcl_context_cl_queue(A->ctx);
  g->ro = (rcl_reduce_options)RCL_REDUCE_OPTIONS_INIT;
  g->ro.mode = opts->dot_mode;
  g->so = opts->spmv;
  return rcl__cg_finish(res, A->dt, mcg_solve(g, x, b, res, opts));
}

int rcl_mpi_cg(void *x, rcl_cg_result *res, rcl_mpi_matrix *A, const void *b, const rcl_cg_options *opts) {
  mcg g;
  memset(&g, 0, sizeof g);
  rcl__mpi_clock_start(&g.clk);
  int rc = cg_timed(&g, x, res, A, b, opts);
  rcl__mpi_clock_stop(&g.clk);
  return rc;
}
