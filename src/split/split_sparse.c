/* SpMV and CG over a split's devices (include/reprocl/split.h). The rows are cut by non-zeros and weights;
 * each device holds its rows as a matrix of their own (src/sparse/csr_local.c: columns renumbered into a
 * halo before, the device's own slice, a halo after), so each row's sum is the same sequence of operations
 * as on one device. CG runs the one driver of src/sparse/cg.c over ops that keep every vector on the
 * devices as row slices: before a SpMV the entries of p that other devices own are read back (only the
 * range of a device's rows that others reference) and written into each device's halo; dots and norms are
 * partial reductions (reduce.h; all devices' parts enqueued at once, then merged in row order), which give exactly the
 * one-device bits; axpy and scal work per slice (element-wise). Hence the history and solution equal rcl_cg's and
 * rcl_ref_cg's. A cut that gives one device every row holds the whole matrix there and runs rcl_spmv_host and
 * rcl_cg themselves. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "reduce/reduce_internal.h"
#include "sparse/sparse_internal.h"
#include "split/split_internal.h"

/* 2048 rows: the block of reduce.ordered, so that a part's slice of the CG vectors holds whole blocks and
 * its partial dots only complete subtrees (speed only: any cut gives the same bits). Used where every
 * device gets at least this many granules. */
#define SPLIT_ROW_GRANULE 2048
#define SPLIT_MIN_GRANULES 8

typedef struct {
  rcl_csr_local L;    /* the device's rows (host copy: halo columns, sizes) */
  rcl_csr_local J;    /* the Jacobi preconditioner's rows (square A whose diagonal allows it) */
  rcl_spmv_matrix *M; /* L.A on the device */
  rcl_spmv_matrix *D; /* J.A on the device */
  size_t lo, hi;      /* the global rows of this part that other parts' halos reference */
} sm_part;

struct rcl_split_matrix {
  rcl_split *s;
  rcl_dtype dt;
  size_t nrows, ncols, nnz;
  size_t *bounds; /* s->count + 1 */
  size_t alone;   /* the device with every row (its part is the whole matrix, M only), or SIZE_MAX */
  sm_part *part;
  int jacobi_rc; /* 0, or why the Jacobi preconditioner does not exist (message in jacobi_msg) */
  char jacobi_msg[256];
};

static size_t part_rows(const rcl_split_matrix *A, size_t i) { return A->bounds[i + 1] - A->bounds[i]; }

static void record_shares(const rcl_split_matrix *A) {
  for (size_t i = 0; i < A->s->count; i++) {
    A->s->first[i] = A->bounds[i];
    A->s->size[i] = part_rows(A, i);
  }
}

void rcl_split_matrix_free(rcl_split_matrix *A) {
  if (!A) return;
  for (size_t i = 0; A->part && i < A->s->count; i++) {
    rcl_spmv_matrix_free(A->part[i].M);
    rcl_spmv_matrix_free(A->part[i].D);
    rcl__csr_local_free(&A->part[i].L);
    rcl__csr_local_free(&A->part[i].J);
  }
  rcl__free(A->part);
  rcl__free(A->bounds);
  rcl__free(A);
}

/* ---- creation ------------------------------------------------------------------------------------------ */

typedef struct {
  rcl_split_matrix *A;
  const rcl_csr *csr, *jac;
} make_arg;

/* Device i's part: its rows (the owned columns are its rows' range, where the matrix has them), uploaded;
 * a device with every row: the matrix itself, as rcl_spmv_matrix_create makes it for one device. */
static int make_part(void *arg, size_t i) {
  make_arg *m = arg;
  rcl_split_matrix *A = m->A;
  sm_part *p = &A->part[i];
  if (A->alone == i) return rcl_spmv_matrix_create(&p->M, A->s->ctx[i], m->csr);
  size_t r0 = A->bounds[i], r1 = A->bounds[i + 1];
  size_t c0 = r0 < A->ncols ? r0 : A->ncols, c1 = r1 < A->ncols ? r1 : A->ncols;
  int rc = rcl__csr_local(&p->L, m->csr, r0, r1, c0, c1);
  if (!rc) rc = rcl_spmv_matrix_create(&p->M, A->s->ctx[i], p->L.A);
  if (!rc && m->jac) rc = rcl__csr_local(&p->J, m->jac, r0, r1, r0, r1);
  if (!rc && m->jac) rc = rcl_spmv_matrix_create(&p->D, A->s->ctx[i], p->J.A);
  return rc;
}

/* The owner of global row r (a part with rows). */
static size_t owner_of(const rcl_split_matrix *A, size_t r) {
  size_t lo = 0, hi = A->s->count - 1;
  while (lo < hi) { /* the last part i with bounds[i] <= r */
    size_t mid = lo + (hi - lo + 1) / 2;
    if (A->bounds[mid] <= r)
      lo = mid;
    else
      hi = mid - 1;
  }
  while (lo > 0 && part_rows(A, lo) == 0) lo--;
  return lo;
}

/* Each part's [lo, hi): the smallest range of its rows covering every halo entry of the others. */
static void exchange_ranges(rcl_split_matrix *A) {
  size_t count = A->s->count;
  for (size_t j = 0; j < count; j++) A->part[j].lo = A->bounds[j + 1], A->part[j].hi = A->bounds[j];
  for (size_t i = 0; i < count; i++) {
    const rcl_csr_local *L = &A->part[i].L;
    for (size_t k = 0; L->A && k < L->nbefore + L->nafter; k++) {
      size_t c = L->halo[k];
      if (c >= A->nrows) continue; /* a column no part's rows own (rectangular A): never exchanged */
      sm_part *o = &A->part[owner_of(A, c)];
      if (c < o->lo) o->lo = c;
      if (c + 1 > o->hi) o->hi = c + 1;
    }
  }
  for (size_t j = 0; j < count; j++)
    if (A->part[j].hi <= A->part[j].lo) A->part[j].lo = A->part[j].hi = 0;
}

/* The Jacobi preconditioner of a square A, or why there is none (reported when CG asks for it). */
static int make_jacobi(rcl_csr **D, rcl_split_matrix *A, const rcl_csr *csr) {
  *D = NULL;
  if (csr->nrows != csr->ncols) return 0;
  int rc = rcl__csr_jacobi(D, csr);
  if (rc == RCL_ERR_BREAKDOWN || rc == RCL_ERR_INVALID_ARG) {
    A->jacobi_rc = rc;
    snprintf(A->jacobi_msg, sizeof A->jacobi_msg, "%s", rcl_error_last());
    rcl_error_clear();
    return 0;
  }
  return rc;
}

static int plan_rows(rcl_split_matrix *A, const rcl_csr *csr) {
  rcl_split *s = A->s;
  double *w = rcl__malloc(s->count * sizeof *w);
  if (!w) return RCL_ERR_OUT_OF_MEMORY;
  int rc = rcl__split_weights_sized(w, s, RCL_FAMILY_SPMV, csr->dtype, csr->nrows, rcl__split_probe(RCL_FAMILY_SPMV));
  size_t active = 0;
  for (size_t i = 0; !rc && i < s->count; i++) active += w[i] > 0;
  size_t granule = !rc && csr->nrows / active >= SPLIT_ROW_GRANULE * SPLIT_MIN_GRANULES ? SPLIT_ROW_GRANULE : 1;
  if (!rc) rc = rcl__csr_row_bounds(A->bounds, csr, w, s->count, granule);
  rcl__free(w);
  return rc;
}

int rcl_split_matrix_create(rcl_split_matrix **out, rcl_split *s, const rcl_csr *csr) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_matrix_create: NULL output");
  *out = NULL;
  if (!s) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_matrix_create: NULL split");
  int rc = rcl_csr_validate(csr);
  if (rc) return rc;
  rcl_split_matrix *A = rcl__calloc(1, sizeof *A);
  if (!A) return RCL_ERR_OUT_OF_MEMORY;
  A->s = s;
  A->dt = csr->dtype;
  A->nrows = csr->nrows, A->ncols = csr->ncols, A->nnz = csr->nnz;
  A->bounds = rcl__calloc(s->count + 1, sizeof *A->bounds);
  A->part = rcl__calloc(s->count, sizeof *A->part);
  rc = A->bounds && A->part ? plan_rows(A, csr) : RCL_ERR_OUT_OF_MEMORY;
  A->alone = rc ? SIZE_MAX : rcl__split_alone(s, A->bounds);
  make_arg m = {A, csr, NULL};
  rcl_csr *D = NULL;
  if (!rc) rc = make_jacobi(&D, A, csr);
  if (A->alone != SIZE_MAX) { /* rcl_cg makes its own preconditioner; make_jacobi found whether one exists */
    rcl_csr_free(D);
    D = NULL;
  }
  m.jac = D;
  if (!rc) rc = rcl__split_each(s, A->bounds, make_part, &m);
  rcl_csr_free(D);
  if (rc) {
    rcl_split_matrix_free(A);
    return rc;
  }
  exchange_ranges(A);
  record_shares(A);
  *out = A;
  return 0;
}

/* ---- SpMV with x and y on the host --------------------------------------------------------------------- */

typedef struct {
  rcl_split_matrix *A;
  void *y;
  const void *alpha, *x, *beta;
  const rcl_spmv_options *opts;
} spmv_arg;

static int spmv_part(void *arg, size_t i) {
  spmv_arg *a = arg;
  sm_part *p = &a->A->part[i];
  size_t es = rcl_dtype_size(a->A->dt), ne = p->L.A->ncols;
  void *xe = rcl__malloc((ne ? ne : 1) * es);
  if (!xe) return RCL_ERR_OUT_OF_MEMORY;
  rcl__csr_local_gather(xe, &p->L, a->x);
  int rc = rcl_spmv_host((unsigned char *)a->y + a->A->bounds[i] * es, p->M, a->alpha, xe, a->beta, a->opts);
  rcl__free(xe);
  return rc;
}

int rcl_split_spmv(void *y, rcl_split_matrix *A, const void *alpha, const void *x, const void *beta,
                   const rcl_spmv_options *opts) {
  if (!A) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_spmv: NULL matrix");
  if (!alpha || !beta) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_spmv: NULL alpha or beta");
  if ((A->nrows && !y) || (A->ncols && !x)) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_spmv: NULL x or y");
  if (opts && opts->version != RCL_SPMV_OPTIONS_VERSION)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv_options.version is %u, expected %u (use RCL_SPMV_OPTIONS_INIT)",
                     opts->version, RCL_SPMV_OPTIONS_VERSION);
  record_shares(A);
  if (A->alone != SIZE_MAX) return rcl_spmv_host(y, A->part[A->alone].M, alpha, x, beta, opts);
  spmv_arg a = {A, y, alpha, x, beta, opts};
  return rcl__split_each(A->s, A->bounds, spmv_part, &a);
}

/* ---- CG: the ops of cg.c's driver over the devices --------------------------------------------------- */

#define NV RCL_CG_NV

typedef struct {
  rcl_reduce_op op;
  int a, b, slot;
} pending_reduce;

typedef struct {
  rcl_split_matrix *A;
  rcl_split *s;
  size_t count, es;
  rcl_dtype dt;
  rcl_chain *ch;     /* one per device: its commands in order (out-of-order queues too) */
  int *begun;        /* ch[i] was begun */
  cl_mem (*v)[NV];   /* per device: the vectors, each halo before + own rows + halo after (as L's columns) */
  unsigned char *hv; /* nrows values: the rows read back for the halos, at their global index */
  unsigned char *hs; /* the largest halo's values */
  rcl_reduce_options ro;
  rcl_spmv_options so;
  pending_reduce pend[3]; /* reductions asked for and not yet computed (run together, one trip per fetch) */
  int npend;
  rcl_red_pending **wait; /* 3 x count: the parts enqueued */
  rcl_partial **parts;    /* 3 x count: the parts computed */
  rcl_partial **row;      /* count: one reduction's parts, in row order */
  unsigned char slots[3 * 8];
} scg;

static size_t scg_off(const scg *g, size_t i) { return g->A->part[i].L.nbefore; }

/* A failure of device i, named as rcl__split_each names them. */
static int scg_fail(const scg *g, size_t i, int rc) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s", rcl_error_last());
  return rcl__fail(rc, "device %zu (%s): %s", i, rcl_context_profile(g->s->ctx[i])->device_name, msg);
}

/* Device i's parts of the pending reductions, enqueued (rcl__reduce_partial_begin: non-blocking). */
static int scg_begin(scg *g, size_t i) {
  size_t off = scg_off(g, i), n = part_rows(g->A, i);
  for (int k = 0; k < g->npend; k++) {
    const pending_reduce *p = &g->pend[k];
    int dot = p->op == RCL_OP_DOT;
    rcl_queue_args qa = rcl__chain_args(&g->ch[i]);
    int rc =
        rcl__chain_adopt(&g->ch[i], rcl__reduce_partial_begin(&g->wait[k * g->count + i], g->s->ctx[i], p->op, g->dt,
                                                              g->A->nrows, g->A->bounds[i], n, g->v[i][p->a], off,
                                                              dot ? g->v[i][p->b] : NULL, dot ? off : 0, &g->ro, &qa));
    if (rc) return scg_fail(g, i, rc);
  }
  return 0;
}

static int scg_merge(scg *g, int k) {
  rcl_partial **in = &g->parts[(size_t)k * g->count], *all = NULL;
  size_t m = 0;
  for (size_t i = 0; i < g->count; i++)
    if (in[i]) g->row[m++] = in[i];
  int rc = rcl_partial_merge(&all, g->row, m);
  if (!rc) rc = rcl_partial_result(g->slots + (size_t)g->pend[k].slot * g->es, all);
  rcl_partial_free(all);
  return rc;
}

/* The pending reductions: every device's parts enqueued at once, then waited for and merged in row order
 * into the slots. */
static int scg_flush(scg *g) {
  if (!g->npend) return 0;
  int rc = 0;
  for (size_t i = 0; !rc && i < g->count; i++)
    if (part_rows(g->A, i)) rc = scg_begin(g, i);
  for (size_t i = 0; i < g->count; i++)
    if (part_rows(g->A, i)) clFlush(g->ch[i].queue);
  for (size_t j = 0; j < 3 * g->count; j++) { /* every begun part is ended, also after a failure */
    if (!g->wait[j]) continue;
    int erc = rcl__reduce_partial_end(rc ? NULL : &g->parts[j], g->wait[j]);
    g->wait[j] = NULL;
    if (!rc && erc) rc = scg_fail(g, j % g->count, erc);
  }
  for (int k = 0; !rc && k < g->npend; k++) rc = scg_merge(g, k);
  for (size_t j = 0; j < 3 * g->count; j++) {
    rcl_partial_free(g->parts[j]);
    g->parts[j] = NULL;
  }
  g->npend = 0;
  return rc;
}

/* Before vector dst is written: the pending reductions that read it are computed first. */
static int scg_writes(scg *g, int dst) {
  for (int k = 0; k < g->npend; k++)
    if (g->pend[k].a == dst || g->pend[k].b == dst) return scg_flush(g);
  return 0;
}

static int scg_reduce(void *st, rcl_reduce_op op, int a, int b, int slot) {
  scg *g = st;
  int rc = 0;
  for (int k = 0; !rc && k < g->npend; k++)
    if (g->pend[k].slot == slot) rc = scg_flush(g);
  if (rc) return rc;
  g->pend[g->npend++] = (pending_reduce){op, a, b, slot};
  return 0;
}

static int scg_fetch(void *st, void *slots) {
  scg *g = st;
  int rc = scg_flush(g);
  if (!rc) memcpy(slots, g->slots, 3 * g->es);
  return rc;
}

static int scg_copy(void *st, int dst, int src) {
  scg *g = st;
  int rc = scg_writes(g, dst);
  for (size_t i = 0; !rc && i < g->count; i++) {
    if (!part_rows(g->A, i)) continue;
    size_t off = scg_off(g, i) * g->es;
    rcl_queue_args qa = rcl__chain_args(&g->ch[i]);
    cl_int err = clEnqueueCopyBuffer(qa.queue, g->v[i][src], g->v[i][dst], off, off, part_rows(g->A, i) * g->es,
                                     qa.num_events_in_wait_list, qa.event_wait_list, qa.event);
    rc = rcl__chain_adopt(&g->ch[i], err ? rcl__fail_cl(err, "CG: clEnqueueCopyBuffer") : 0);
    if (rc) rc = scg_fail(g, i, rc);
  }
  return rc;
}

static int scg_axpy(void *st, int dst, const void *alpha, int src) {
  scg *g = st;
  int rc = scg_writes(g, dst);
  for (size_t i = 0; !rc && i < g->count; i++) {
    if (!part_rows(g->A, i)) continue;
    size_t off = scg_off(g, i);
    rcl_queue_args qa = rcl__chain_args(&g->ch[i]);
    rc = rcl__chain_adopt(&g->ch[i], rcl_axpy_enqueue(g->v[i][dst], off, g->s->ctx[i], g->dt, part_rows(g->A, i), alpha,
                                                      g->v[i][src], off, 0, &qa));
    if (rc) rc = scg_fail(g, i, rc);
  }
  return rc;
}

static int scg_scal(void *st, int dst, const void *alpha) {
  scg *g = st;
  int rc = scg_writes(g, dst);
  for (size_t i = 0; !rc && i < g->count; i++) {
    if (!part_rows(g->A, i)) continue;
    rcl_queue_args qa = rcl__chain_args(&g->ch[i]);
    rc = rcl__chain_adopt(&g->ch[i], rcl_scal_enqueue(g->v[i][dst], scg_off(g, i), g->s->ctx[i], g->dt,
                                                      part_rows(g->A, i), alpha, 0, &qa));
    if (rc) rc = scg_fail(g, i, rc);
  }
  return rc;
}

/* Phase 1 of the halo exchange: every device's rows that others reference, read back into hv. */
static int halo_read(scg *g, int src) {
  int rc = 0;
  cl_event *ev = rcl__calloc(g->count, sizeof *ev);
  if (!ev) return RCL_ERR_OUT_OF_MEMORY;
  for (size_t j = 0; !rc && j < g->count; j++) {
    const sm_part *p = &g->A->part[j];
    if (p->hi == p->lo) continue;
    size_t off = (scg_off(g, j) + p->lo - g->A->bounds[j]) * g->es;
    rc = rcl__chain_read(&g->ch[j], g->v[j][src], off, (p->hi - p->lo) * g->es, g->hv + p->lo * g->es, &ev[j], "halo");
    if (rc) rc = scg_fail(g, j, rc);
  }
  for (size_t j = 0; j < g->count; j++)
    if (ev[j]) clFlush(g->ch[j].queue);
  for (size_t j = 0; j < g->count; j++) {
    if (!ev[j]) continue;
    cl_int err = clWaitForEvents(1, &ev[j]);
    if (!rc && err) rc = scg_fail(g, j, rcl__fail_cl(err, "CG: waiting for the halo's read"));
    clReleaseEvent(ev[j]);
  }
  rcl__free(ev);
  return rc;
}

/* Phase 2: each device's halo values, from hv, written before and after its own rows. */
static int halo_write(scg *g, int src) {
  int rc = 0;
  for (size_t i = 0; !rc && i < g->count; i++) {
    const rcl_csr_local *L = &g->A->part[i].L;
    if (!part_rows(g->A, i) || L->nbefore + L->nafter == 0) continue;
    rcl__csr_local_gather_halo(g->hs, L, g->hv);
    size_t after = (L->nbefore + part_rows(g->A, i)) * g->es;
    if (L->nbefore) rc = rcl__chain_write(&g->ch[i], g->v[i][src], 0, L->nbefore * g->es, g->hs, "halo");
    if (!rc && L->nafter)
      rc = rcl__chain_write(&g->ch[i], g->v[i][src], after, L->nafter * g->es, g->hs + L->nbefore * g->es, "halo");
    if (rc) rc = scg_fail(g, i, rc);
  }
  return rc;
}

static int scg_spmv(void *st, int jac, int dst, int src, const void *alpha, const void *beta) {
  scg *g = st;
  int rc = scg_writes(g, dst);
  if (!rc && !jac) rc = halo_read(g, src);
  if (!rc && !jac) rc = halo_write(g, src);
  for (size_t i = 0; !rc && i < g->count; i++) {
    if (!part_rows(g->A, i)) continue;
    size_t off = scg_off(g, i);
    const sm_part *p = &g->A->part[i];
    rcl_queue_args qa = rcl__chain_args(&g->ch[i]);
    rc = rcl__chain_adopt(&g->ch[i], rcl_spmv_enqueue(g->v[i][dst], off, jac ? p->D : p->M, alpha, g->v[i][src],
                                                      jac ? off : 0, beta, &g->so, &qa));
    if (rc) rc = scg_fail(g, i, rc);
  }
  return rc;
}

static void scg_free(scg *g, int rc) {
  for (size_t i = 0; g->begun && i < g->count; i++) {
    if (g->begun[i]) rcl__chain_finish(&g->ch[i], NULL, rc);
    for (int k = 0; g->v && k < NV; k++)
      if (g->v[i][k]) clReleaseMemObject(g->v[i][k]);
  }
  for (size_t j = 0; g->parts && j < 3 * g->count; j++) rcl_partial_free(g->parts[j]);
  rcl__free(g->ch);
  rcl__free(g->begun);
  rcl__free(g->v);
  rcl__free(g->hv);
  rcl__free(g->hs);
  rcl__free(g->parts);
  rcl__free(g->wait);
  rcl__free(g->row);
}

static int scg_alloc(scg *g) {
  size_t c = g->count, halo = 1;
  for (size_t i = 0; i < c; i++) {
    const rcl_csr_local *L = &g->A->part[i].L;
    if (L->nbefore + L->nafter > halo) halo = L->nbefore + L->nafter;
  }
  g->ch = rcl__calloc(c, sizeof *g->ch);
  g->begun = rcl__calloc(c, sizeof *g->begun);
  g->v = rcl__calloc(c, sizeof *g->v);
  g->hv = rcl__malloc(g->A->nrows * g->es);
  g->hs = rcl__malloc(halo * g->es);
  g->parts = rcl__calloc(3 * c, sizeof *g->parts);
  g->wait = rcl__calloc(3 * c, sizeof *g->wait);
  g->row = rcl__calloc(c, sizeof *g->row);
  return g->ch && g->begun && g->v && g->hv && g->hs && g->parts && g->wait && g->row ? 0 : RCL_ERR_OUT_OF_MEMORY;
}

/* Device i's vectors, with its slices of x and b. */
static int scg_device(scg *g, size_t i, const void *x, const void *b, int jacobi) {
  rcl_context *ctx = g->s->ctx[i];
  const rcl_csr_local *L = &g->A->part[i].L;
  size_t off = L->nbefore * g->es, bytes = part_rows(g->A, i) * g->es, r0 = g->A->bounds[i] * g->es;
  int rc = rcl__require_support(ctx, RCL_FAMILY_REDUCE, g->dt);
  if (!rc) rc = rcl__chain_host(&g->ch[i], ctx);
  g->begun[i] = !rc;
  for (int k = 0; !rc && k < NV; k++)
    if (k != RCL_CG_Z || jacobi)
      rc = rcl__buffer_create(&g->v[i][k], ctx, CL_MEM_READ_WRITE, L->A->ncols * g->es, NULL, "CG vector");
  if (!rc) rc = rcl__chain_write(&g->ch[i], g->v[i][RCL_CG_X], off, bytes, (const unsigned char *)x + r0, "x");
  if (!rc) rc = rcl__chain_write(&g->ch[i], g->v[i][RCL_CG_B], off, bytes, (const unsigned char *)b + r0, "b");
  return rc ? scg_fail(g, i, rc) : 0;
}

/* The solution's slices, read back (also after a breakdown or no convergence, as rcl_cg does). */
static int scg_read_x(scg *g, void *x) {
  int rc = 0;
  for (size_t i = 0; !rc && i < g->count; i++) {
    if (!part_rows(g->A, i)) continue;
    rc = rcl__chain_read(&g->ch[i], g->v[i][RCL_CG_X], scg_off(g, i) * g->es, part_rows(g->A, i) * g->es,
                         (unsigned char *)x + g->A->bounds[i] * g->es, NULL, "x");
    if (rc) rc = scg_fail(g, i, rc);
  }
  return rc;
}

static int scg_solve(scg *g, void *x, const void *b, rcl_cg_result *res, const rcl_cg_options *opts) {
  int rc = scg_alloc(g);
  for (size_t i = 0; !rc && i < g->count; i++)
    if (part_rows(g->A, i)) rc = scg_device(g, i, x, b, opts->jacobi);
  rcl_cg_ops o = {g, scg_copy, scg_spmv, scg_reduce, scg_axpy, scg_scal, scg_fetch};
  if (!rc) rc = rcl__cg_run(&o, g->dt, g->A->nrows, opts, res);
  if (rc == 0 || rc == RCL_ERR_NO_CONVERGENCE || rc == RCL_ERR_BREAKDOWN) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", rc ? rcl_error_last() : "");
    int rrc = scg_read_x(g, x);
    if (rrc) {
      rcl_cg_result_free(res);
      rc = rrc;
    } else if (rc) {
      rcl__fail(rc, "%s", msg); /* the solver's message, not the read's */
    }
  }
  scg_free(g, rc);
  return rc;
}

int rcl_split_cg(void *x, rcl_cg_result *res, rcl_split_matrix *A, const void *b, const rcl_cg_options *opts) {
  static const rcl_cg_options defaults = RCL_CG_OPTIONS_INIT;
  if (!A) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_cg: NULL matrix");
  int rc = rcl__cg_check(res, opts, A->nrows, A->ncols);
  if (rc) return rc;
  if (!opts) opts = &defaults;
  record_shares(A);
  if (A->nrows == 0) return rcl__cg_empty(res, A->dt);
  if (!x || !b) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_cg: NULL x or b");
  if (opts->jacobi && A->jacobi_rc) return rcl__cg_finish(res, A->dt, rcl__fail(A->jacobi_rc, "%s", A->jacobi_msg));
  if (A->alone != SIZE_MAX) return rcl_cg(x, res, A->part[A->alone].M, b, opts); /* one device: its own CG */
  scg g;
  memset(&g, 0, sizeof g);
  g.A = A;
  g.s = A->s;
  g.count = A->s->count;
  g.dt = A->dt;
  g.es = rcl_dtype_size(A->dt);
  g.ro = (rcl_reduce_options)RCL_REDUCE_OPTIONS_INIT;
  g.ro.mode = opts->dot_mode;
  g.so = opts->spmv;
  return rcl__cg_finish(res, A->dt, scg_solve(&g, x, b, res, opts));
}
