/* The distributed CSR matrix (rcl_mpi_matrix_scatter, _read): root cuts the rows by non-zeros and the ranks'
 * weights (rcl__csr_row_bounds, the cut of the split over devices), scatters each rank's rows (row pointers,
 * columns, values: MPI_Scatterv), and every rank builds its rows as a matrix of their own (rcl__csr_local:
 * columns renumbered into a halo before, its own columns, a halo after) and the plan of its halo exchange
 * (which of its halo entries come from which rank, which of its own entries go to which). The Jacobi
 * preconditioner's rows travel the same way (root builds it once). SpMV and CG: mpi_sparse.c. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "mpi/mpi_sparse.h"

void rcl_mpi_matrix_free(rcl_mpi_matrix *M) {
  if (!M) return;
  rcl_spmv_matrix_free(M->M);
  rcl_spmv_matrix_free(M->D);
  for (int i = 0; i < 3; i++) rcl_spmv_matrix_free(M->P[i]);
  rcl__csr_local_free(&M->L);
  rcl__csr_local_free(&M->J);
  rcl__free(M->bounds);
  rcl__free(M->cbounds);
  rcl__free(M->rcount);
  rcl__free(M->rdispl);
  rcl__free(M->scount);
  rcl__free(M->sdispl);
  rcl__free(M->sidx);
  rcl__free(M->sdirect);
  rcl__free(M->sbuf);
  rcl__free(M);
}

void rcl_mpi_matrix_rows(const rcl_mpi_matrix *M, size_t *first, size_t *count, size_t *total) {
  size_t f = M ? M->bounds[M->rank] : 0, c = M ? M->bounds[M->rank + 1] - f : 0;
  if (first) *first = f;
  if (count) *count = c;
  if (total) *total = M ? M->nrows : 0;
}

void rcl_mpi_matrix_cols(const rcl_mpi_matrix *M, size_t *first, size_t *count, size_t *total) {
  size_t f = M ? M->cbounds[M->rank] : 0, c = M ? M->cbounds[M->rank + 1] - f : 0;
  if (first) *first = f;
  if (count) *count = c;
  if (total) *total = M ? M->ncols : 0;
}

/* ---- root's plan: the shape, the cut, the preconditioner ----------------------------------------------- */

/* What root broadcasts before the rows: the shape, whether the Jacobi preconditioner exists (or why not). */
typedef struct {
  uint64_t nrows, ncols, nnz, dtype;
  int64_t jacobi_rc; /* 0: D exists; 1: not square (no D, no reason); < 0: why not (msg) */
  char msg[256];
} mat_head;

/* Root: the matrix checked, the cut by the gathered weights, the preconditioner. */
static int root_plan(rcl_mpi_matrix *M, mat_head *h, rcl_csr **D, const rcl_csr *A, const double *w) {
  int rc = A ? rcl_csr_validate(A) : rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_matrix_scatter: NULL matrix on root");
  if (rc) return rc;
  if (A->nnz > INT_MAX || A->nrows >= INT_MAX) /* MPI's int counts and displacements */
    return rcl__fail(RCL_ERR_OVERFLOW, "a matrix of %zu rows and %zu non-zeros is above MPI's count limit (%d)",
                     A->nrows, A->nnz, INT_MAX);
  *h = (mat_head){A->nrows, A->ncols, A->nnz, (uint64_t)A->dtype, 1, ""};
  size_t granule = A->nrows / (size_t)M->size >= MPI_ROW_GRANULE * 8 ? MPI_ROW_GRANULE : 1;
  rc = rcl__csr_row_bounds(M->bounds, A, w, (size_t)M->size, granule);
  if (rc || A->nrows != A->ncols) return rc;
  rc = rcl__csr_jacobi(D, A);
  h->jacobi_rc = rc;
  if (rc == RCL_ERR_BREAKDOWN || rc == RCL_ERR_INVALID_ARG) {
    snprintf(h->msg, sizeof h->msg, "%s", rcl_error_last());
    rcl_error_clear();
    return 0;
  }
  return rc;
}

/* Every rank: the weights gathered on root, root's plan, agreed; then the head and the cut broadcast. */
static int plan(rcl_mpi_matrix *M, mat_head *h, rcl_csr **D, const rcl_csr *A, double weight) {
  int is_root = M->rank == M->root, rc = 0;
  double *w = is_root ? rcl__malloc((size_t)M->size * sizeof *w) : NULL;
  if (is_root && !w && !rc) rc = RCL_ERR_OUT_OF_MEMORY;
  int mrc =
      rcl__mpi_check(MPI_Gather(&weight, 1, MPI_DOUBLE, w, 1, MPI_DOUBLE, M->root, M->comm), "MPI_Gather (weights)");
  if (!rc) rc = mrc;
  if (!rc && is_root) rc = root_plan(M, h, D, A, w);
  rcl__free(w);
  if ((rc = rcl_mpi_agree(M->comm, rc, NULL)) != 0) return rc;
  uint64_t *b = rcl__malloc(((size_t)M->size + 1) * sizeof *b);
  rc = b ? 0 : RCL_ERR_OUT_OF_MEMORY;
  for (int r = 0; b && r <= M->size; r++) b[r] = M->bounds[r];
  if ((rc = rcl_mpi_agree(M->comm, rc, NULL)) == 0)
    rc = rcl__mpi_check(MPI_Bcast(h, (int)sizeof *h, MPI_BYTE, M->root, M->comm), "MPI_Bcast (matrix head)");
  if (!rc) rc = rcl__mpi_check(MPI_Bcast(b, M->size + 1, MPI_UINT64_T, M->root, M->comm), "MPI_Bcast (row cut)");
  for (int r = 0; !rc && r <= M->size; r++) M->bounds[r] = (size_t)b[r];
  rcl__free(b);
  return rc;
}

/* ---- the scatter of the rows ----------------------------------------------------------------------------- */

/* Root's counts and displacements of one array over the ranks: per_row (row pointers: the rows) or the
 * non-zeros of each rank's rows. */
static void counts_of(int *count, int *displ, const rcl_mpi_matrix *M, const rcl_csr *A, int per_row) {
  for (int r = 0; r < M->size; r++) {
    size_t a = M->bounds[r], b = M->bounds[r + 1];
    count[r] = (int)(per_row ? b - a : A->row_ptr[b] - A->row_ptr[a]);
    displ[r] = (int)(per_row ? a : A->row_ptr[a]);
  }
}

/* This rank's rows of A (on root) as a CSR with global columns: *out (nloc rows, ncols columns). */
static int scatter_rows(rcl_csr **out, const rcl_mpi_matrix *M, const rcl_csr *A, rcl_dtype dt) {
  int is_root = M->rank == M->root, *count = NULL, *displ = NULL, rc = 0;
  size_t nloc = M->bounds[M->rank + 1] - M->bounds[M->rank];
  uint64_t mine = 0, *nnz = is_root ? rcl__malloc((size_t)M->size * sizeof *nnz) : NULL;
  if (is_root && (!nnz || !(count = rcl__malloc((size_t)M->size * sizeof *count)) ||
                  !(displ = rcl__malloc((size_t)M->size * sizeof *displ))))
    rc = RCL_ERR_OUT_OF_MEMORY;
  for (int r = 0; !rc && is_root && r < M->size; r++) nnz[r] = A->row_ptr[M->bounds[r + 1]] - A->row_ptr[M->bounds[r]];
  if ((rc = rcl_mpi_agree(M->comm, rc, NULL)) == 0)
    rc = rcl__mpi_check(MPI_Scatter(nnz, 1, MPI_UINT64_T, &mine, 1, MPI_UINT64_T, M->root, M->comm),
                        "MPI_Scatter (non-zeros)");
  if (!rc) rc = rcl_mpi_agree(M->comm, rcl_csr_alloc(out, dt, nloc, M->ncols, (size_t)mine), NULL);
  MPI_Datatype vt = dt == RCL_F32 ? MPI_FLOAT : MPI_DOUBLE;
  if (!rc && is_root) counts_of(count, displ, M, A, 1);
  if (!rc)
    rc = rcl__mpi_check(MPI_Scatterv(is_root ? A->row_ptr : NULL, count, displ, MPI_UINT64_T, (*out)->row_ptr,
                                     (int)nloc, MPI_UINT64_T, M->root, M->comm),
                        "MPI_Scatterv (row pointers)");
  if (!rc && is_root) counts_of(count, displ, M, A, 0);
  if (!rc)
    rc = rcl__mpi_check(MPI_Scatterv(is_root ? A->col_idx : NULL, count, displ, MPI_UINT32_T, (*out)->col_idx,
                                     (int)mine, MPI_UINT32_T, M->root, M->comm),
                        "MPI_Scatterv (columns)");
  if (!rc)
    rc = rcl__mpi_check(
        MPI_Scatterv(is_root ? A->values : NULL, count, displ, vt, (*out)->values, (int)mine, vt, M->root, M->comm),
        "MPI_Scatterv (values)");
  uint64_t base = !rc && nloc ? (*out)->row_ptr[0] : 0;
  for (size_t i = 0; !rc && nloc && i <= nloc; i++) /* row pointers from 0; the last is the count */
    (*out)->row_ptr[i] = i < nloc ? (*out)->row_ptr[i] - base : mine;
  rcl__free(nnz);
  rcl__free(count);
  rcl__free(displ);
  return rc;
}

/* ---- the halo plan ------------------------------------------------------------------------------------ */

/* Counts and displacements of the halo: received from each rank (the halo's entries are sorted by column,
 * so each owner's are consecutive), and sent (learned with MPI_Alltoall), and the own entries to send. */
static int halo_plan(rcl_mpi_matrix *M) {
  size_t K = (size_t)M->size, nh = M->L.nbefore + M->L.nafter;
  M->rcount = rcl__calloc(K, sizeof(int));
  M->rdispl = rcl__calloc(K, sizeof(int));
  M->scount = rcl__calloc(K, sizeof(int));
  M->sdispl = rcl__calloc(K, sizeof(int));
  M->sdirect = rcl__calloc(K, sizeof(int));
  int rc = M->rcount && M->rdispl && M->scount && M->sdispl && M->sdirect ? 0 : RCL_ERR_OUT_OF_MEMORY;
  for (size_t k = 0; !rc && k < nh; k++) M->rcount[rcl__mpi_owner(M->cbounds, M->size, M->L.halo[k])]++;
  for (size_t r = 1; !rc && r < K; r++) M->rdispl[r] = M->rdispl[r - 1] + M->rcount[r - 1];
  if ((rc = rcl_mpi_agree(M->comm, rc, NULL)) != 0) return rc;
  rc = rcl__mpi_check(MPI_Alltoall(M->rcount, 1, MPI_INT, M->scount, 1, MPI_INT, M->comm), "MPI_Alltoall (halo)");
  if (rc) return rc;
  size_t ns = 0;
  for (size_t r = 0; r < K; r++) M->sdispl[r] = (int)ns, ns += (size_t)M->scount[r];
  M->nsend = ns;
  M->sidx = rcl__malloc((ns ? ns : 1) * sizeof *M->sidx);
  M->sbuf = rcl__malloc((ns + nh + 1) * M->es);
  rc = M->sidx && M->sbuf ? 0 : RCL_ERR_OUT_OF_MEMORY;
  if ((rc = rcl_mpi_agree(M->comm, rc, NULL)) != 0) return rc;
  rc = rcl__mpi_check(MPI_Alltoallv(M->L.halo, M->rcount, M->rdispl, MPI_UINT32_T, M->sidx, M->scount, M->sdispl,
                                    MPI_UINT32_T, M->comm),
                      "MPI_Alltoallv (halo columns)");
  for (size_t k = 0; !rc && k < ns; k++) M->sidx[k] -= (uint32_t)M->cbounds[M->rank]; /* into own entries */
  for (size_t r = 0; !rc && r < K; r++) { /* a destination's entries in one run: sent in place */
    size_t k0 = (size_t)M->sdispl[r], k1 = k0 + (size_t)M->scount[r];
    M->sdirect[r] = 1;
    for (size_t k = k0 + 1; k < k1 && M->sdirect[r]; k++) M->sdirect[r] = M->sidx[k] == M->sidx[k - 1] + 1;
  }
  return rc;
}

/* The longest run [pr[1], pr[2]) of rows of L that reference own entries of x only (L's columns [nbefore,
 * ncols - nafter)); pr[0] = 0, pr[3] = the rows. */
static void interior_rows(size_t *pr, const rcl_csr_local *L) {
  const rcl_csr *A = L->A;
  size_t lo = L->nbefore, hi = A->ncols - L->nafter, start = 0;
  pr[0] = pr[1] = pr[2] = 0, pr[3] = A->nrows;
  for (size_t i = 0; i <= A->nrows; i++) {
    int inner = i < A->nrows;
    for (uint64_t k = inner ? A->row_ptr[i] : 0; inner && k < A->row_ptr[i + 1]; k++)
      inner = A->col_idx[k] >= lo && A->col_idx[k] < hi;
    if (inner) continue;
    if (i - start > pr[2] - pr[1]) pr[1] = start, pr[2] = i;
    start = i + 1;
  }
}

/* Rows [r0, r1) of A as a matrix of their own on ctx (*out NULL for no rows). */
static int piece(rcl_spmv_matrix **out, rcl_context *ctx, const rcl_csr *A, size_t r0, size_t r1) {
  rcl_csr *P = NULL;
  size_t k0 = A->row_ptr[r0], nnz = A->row_ptr[r1] - k0, es = rcl_dtype_size(A->dtype);
  int rc = r0 < r1 ? rcl_csr_alloc(&P, A->dtype, r1 - r0, A->ncols, nnz) : 0;
  if (rc || r0 == r1) return rc;
  for (size_t i = 0; i <= r1 - r0; i++) P->row_ptr[i] = A->row_ptr[r0 + i] - k0;
  if (nnz) memcpy(P->col_idx, A->col_idx + k0, nnz * sizeof *P->col_idx);
  if (nnz) memcpy(P->values, (const char *)A->values + k0 * es, nnz * es);
  rc = rcl_spmv_matrix_create(out, ctx, P);
  rcl_csr_free(P);
  return rc;
}

/* L.A on the context: in pieces where it has a halo and at least half its rows are interior, else whole. */
static int upload_rows(rcl_mpi_matrix *M) {
  interior_rows(M->pr, &M->L);
  if (M->L.nbefore + M->L.nafter == 0 || 2 * (M->pr[2] - M->pr[1]) < M->pr[3])
    return rcl_spmv_matrix_create(&M->M, M->ctx, M->L.A);
  int rc = 0;
  for (int i = 0; !rc && i < 3; i++) rc = piece(&M->P[i], M->ctx, M->L.A, M->pr[i], M->pr[i + 1]);
  return rc;
}

/* This rank's part: its rows (and the preconditioner's) as local matrices, uploaded; the halo plan. */
static int build_local(rcl_mpi_matrix *M, rcl_csr *rows, rcl_csr *drows) {
  size_t nloc = M->bounds[M->rank + 1] - M->bounds[M->rank], c0 = M->cbounds[M->rank], c1 = M->cbounds[M->rank + 1];
  int rc = rcl__csr_local(&M->L, rows, 0, nloc, c0, c1);
  if (!rc && drows) rc = rcl__csr_local(&M->J, drows, 0, nloc, c0, c1);
  if (!rc && nloc) rc = upload_rows(M);
  if (!rc && nloc && drows) rc = rcl_spmv_matrix_create(&M->D, M->ctx, M->J.A);
  if ((rc = rcl_mpi_agree(M->comm, rc, NULL)) != 0) return rc;
  return halo_plan(M);
}

/* The rows of A and of D (when root has it) scattered, and the local part built. */
static int distribute(rcl_mpi_matrix *M, const rcl_csr *A, const rcl_csr *D) {
  rcl_csr *rows = NULL, *drows = NULL;
  size_t K = (size_t)M->size;
  for (size_t r = 0; r <= K; r++) M->cbounds[r] = r == K || M->bounds[r] > M->ncols ? M->ncols : M->bounds[r];
  int rc = scatter_rows(&rows, M, A, M->dt);
  if (!rc && M->jacobi_rc == 0) rc = scatter_rows(&drows, M, D, M->dt);
  if (!rc) rc = build_local(M, rows, drows);
  rcl_csr_free(rows);
  rcl_csr_free(drows);
  return rc;
}

/* A matrix of this rank (its place in comm), checked arguments first. */
static int matrix_new(rcl_mpi_matrix **M, rcl_mpi_matrix **out, MPI_Comm comm, int root, rcl_context *ctx) {
  int size, rank, rc = rcl__mpi_shape(&size, &rank, comm);
  if (rc) return rc;
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_matrix_scatter: NULL output");
  if (!ctx) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_matrix_scatter: NULL context");
  if (root < 0 || root >= size)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_matrix_scatter: root %d is not a rank of %d", root, size);
  if (!(*M = rcl__calloc(1, sizeof **M))) return RCL_ERR_OUT_OF_MEMORY;
  (*M)->comm = comm, (*M)->size = size, (*M)->rank = rank, (*M)->root = root, (*M)->ctx = ctx;
  (*M)->bounds = rcl__calloc((size_t)size + 1, sizeof *(*M)->bounds);
  (*M)->cbounds = rcl__calloc((size_t)size + 1, sizeof *(*M)->cbounds);
  return (*M)->bounds && (*M)->cbounds ? 0 : RCL_ERR_OUT_OF_MEMORY;
}

/* The scatter, with rc this rank's status so far (root: whether it could read the matrix): agreed before any
 * other collective step, so a rank that fails early (root that cannot read the file) fails every rank. */
static int scatter(rcl_mpi_matrix **out, MPI_Comm comm, int root, const rcl_csr *A, double weight, rcl_context *ctx,
                   int rc) {
  rcl_mpi_matrix *M = NULL;
  if (out) *out = NULL;
  int mrc = matrix_new(&M, out, comm, root, ctx);
  rc = rcl_mpi_agree(comm, rc ? rc : mrc, NULL);
  mat_head h = {0};
  rcl_csr *D = NULL;
  if (!rc) rc = plan(M, &h, &D, A, weight);
  if (!rc) {
    M->nrows = h.nrows, M->ncols = h.ncols, M->nnz = h.nnz, M->dt = (rcl_dtype)h.dtype;
    M->es = rcl_dtype_size(M->dt), M->jacobi_rc = (int)h.jacobi_rc;
    snprintf(M->jacobi_msg, sizeof M->jacobi_msg, "%s", h.msg);
    rc = distribute(M, A, D);
  }
  rcl_csr_free(D);
  if (rc) {
    rcl_mpi_matrix_free(M);
    return rc;
  }
  *out = M;
  return 0;
}

int rcl_mpi_matrix_scatter(rcl_mpi_matrix **out, MPI_Comm comm, int root, const rcl_csr *A, double weight,
                           rcl_context *ctx) {
  return scatter(out, comm, root, A, weight, ctx, 0);
}

int rcl_mpi_matrix_read(rcl_mpi_matrix **out, MPI_Comm comm, int root, const char *path, rcl_dtype dtype,
                        rcl_context *ctx) {
  int rank, size, rc = rcl__mpi_shape(&size, &rank, comm);
  if (rc) return rc;
  rcl_csr *A = NULL;
  if (rank == root) rc = path ? rcl_matrix_read(&A, path, dtype) : rcl__fail(RCL_ERR_INVALID_ARG, "NULL path");
  rc = scatter(out, comm, root, A, 1.0, ctx, rc);
  rcl_csr_free(A);
  return rc;
}
