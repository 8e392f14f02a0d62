/* The SpMV device matrix (rcl_spmv_matrix): creation from a host CSR matrix, sharing with another context,
 * the accessors, and the Jacobi preconditioner CG keeps with it. The layouts and kernels it caches are
 * made by spmv_launch.c. */
#include <stdlib.h>
#include <string.h>

#include "sparse/spmv_internal.h"

rcl_dtype rcl_spmv_matrix_dtype(const rcl_spmv_matrix *M) { return M ? M->dtype : (rcl_dtype)0; }
size_t rcl_spmv_matrix_nrows(const rcl_spmv_matrix *M) { return M ? M->nrows : 0; }
size_t rcl_spmv_matrix_ncols(const rcl_spmv_matrix *M) { return M ? M->ncols : 0; }
size_t rcl_spmv_matrix_nnz(const rcl_spmv_matrix *M) { return M ? M->nnz : 0; }
rcl_context *rcl_spmv_matrix_context(const rcl_spmv_matrix *M) { return M ? M->ctx : NULL; }

void rcl_spmv_matrix_free(rcl_spmv_matrix *M) {
  if (!M) return;
  rcl_spmv_matrix_free(M->jacobi);
  for (layout *l = M->layouts; l;) {
    layout *n = l->next;
    for (int i = 0; i < 3; i++)
      if (l->mem[i]) clReleaseMemObject(l->mem[i]);
    rcl__free(l);
    l = n;
  }
  for (kentry *e = M->kernels; e;) {
    kentry *n = e->next;
    clReleaseKernel(e->k);
    rcl__free(e);
    e = n;
  }
  if (M->rp) clReleaseMemObject(M->rp);
  if (M->ci) clReleaseMemObject(M->ci);
  if (M->va) clReleaseMemObject(M->va);
  rcl__free(M->hrp);
  pthread_mutex_destroy(&M->lock);
  rcl__free(M);
}

static int matrix_new(rcl_spmv_matrix **out, rcl_context *ctx, rcl_dtype dt, size_t nrows, size_t ncols, size_t nnz,
                      const uint64_t *rp) {
  rcl_spmv_matrix *M = rcl__calloc(1, sizeof *M);
  if (!M) return RCL_ERR_OUT_OF_MEMORY;
  if (pthread_mutex_init(&M->lock, NULL) != 0) {
    rcl__free(M);
    return rcl__fail(RCL_ERR_INTERNAL, "pthread_mutex_init failed");
  }
  M->ctx = ctx;
  M->dtype = dt;
  M->nrows = nrows;
  M->ncols = ncols;
  M->nnz = nnz;
  M->rp64 = nnz > UINT32_MAX;
  M->hrp = rcl__malloc((nrows + 1) * sizeof *M->hrp);
  if (!M->hrp) {
    rcl_spmv_matrix_free(M);
    return RCL_ERR_OUT_OF_MEMORY;
  }
  memcpy(M->hrp, rp, (nrows + 1) * sizeof *M->hrp);
  for (size_t i = 0; i < nrows; i++)
    if (rp[i + 1] - rp[i] > M->max_row) M->max_row = (size_t)(rp[i + 1] - rp[i]);
  *out = M;
  return 0;
}

int rcl_spmv_matrix_create(rcl_spmv_matrix **out, rcl_context *ctx, const rcl_csr *A) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv_matrix_create: NULL output");
  *out = NULL;
  if (!ctx) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv_matrix_create: NULL context");
  int rc = rcl_csr_validate(A);
  if (!rc) rc = rcl__require_support(ctx, RCL_FAMILY_SPMV, A->dtype);
  if (rc) return rc;
  rcl_spmv_matrix *M;
  if ((rc = matrix_new(&M, ctx, A->dtype, A->nrows, A->ncols, A->nnz, A->row_ptr)) != 0) return rc;
  size_t es = rcl_dtype_size(A->dtype), rps = M->rp64 ? 8 : 4, b;
  void *rpbuf = A->row_ptr;
  uint32_t *rp32 = NULL;
  if (!M->rp64) { /* 32-bit row pointers whenever nnz allows: 4 bytes per row less to read */
    rp32 = rcl__malloc((A->nrows + 1) * sizeof *rp32);
    if (!rp32) rc = RCL_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; !rc && i <= A->nrows; i++) rp32[i] = (uint32_t)A->row_ptr[i];
    rpbuf = rp32;
  }
  cl_mem_flags ro = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
  if (!rc) rc = rcl__mul_size(&b, A->nrows + 1, rps, "CSR row pointers");
  if (!rc) rc = rcl__buffer_create(&M->rp, ctx, ro, b, rpbuf, "CSR row pointers");
  if (!rc) rc = rcl__mul_size(&b, A->nnz, 4, "CSR column indices");
  if (!rc)
    rc = rcl__buffer_create(&M->ci, ctx, A->nnz ? ro : CL_MEM_READ_ONLY, b, A->nnz ? A->col_idx : NULL,
                            "CSR column indices");
  if (!rc) rc = rcl__mul_size(&b, A->nnz, es, "CSR values");
  if (!rc)
    rc = rcl__buffer_create(&M->va, ctx, A->nnz ? ro : CL_MEM_READ_ONLY, b, A->nnz ? A->values : NULL, "CSR values");
  rcl__free(rp32);
  if (rc) {
    rcl_spmv_matrix_free(M);
    return rc;
  }
  *out = M;
  return 0;
}

int rcl_spmv_matrix_share(rcl_spmv_matrix **out, const rcl_spmv_matrix *S, rcl_context *ctx) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv_matrix_share: NULL output");
  *out = NULL;
  if (!S || !ctx) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv_matrix_share: NULL matrix or context");
  if (ctx->cl_ctx != S->ctx->cl_ctx || ctx->device != S->ctx->device)
    return rcl__fail(RCL_ERR_INVALID_ARG,
                     "rcl_spmv_matrix_share: the context is on another cl_context or device than the matrix");
  int rc = rcl__require_support(ctx, RCL_FAMILY_SPMV, S->dtype);
  rcl_spmv_matrix *M;
  if (!rc) rc = matrix_new(&M, ctx, S->dtype, S->nrows, S->ncols, S->nnz, S->hrp);
  if (rc) return rc;
  M->rp = S->rp;
  M->ci = S->ci;
  M->va = S->va;
  clRetainMemObject(M->rp);
  clRetainMemObject(M->ci);
  clRetainMemObject(M->va);
  *out = M;
  return 0;
}

int rcl__spmv_regular(const rcl_spmv_matrix *M) {
  size_t mean = M->nrows ? ceil_div(M->nnz, M->nrows) : 0;
  return M->max_row <= 2 * mean + 16;
}

/* ---- Jacobi preconditioner (for CG) -------------------------------------------------------------------- */

int rcl__spmv_jacobi_of(rcl_spmv_matrix **out, rcl_spmv_matrix *M) {
  pthread_mutex_lock(&M->lock);
  int rc = M->jacobi ? 0 : rcl__spmv_jacobi(&M->jacobi, M);
  *out = M->jacobi;
  pthread_mutex_unlock(&M->lock);
  return rc;
}

int rcl__spmv_jacobi(rcl_spmv_matrix **out, rcl_spmv_matrix *M) {
  *out = NULL;
  if (!M->ctx->queue) return rcl__fail(RCL_ERR_INVALID_ARG, "Jacobi: the context has no queue to read the matrix back");
  rcl_csr *A = NULL, *D = NULL;
  size_t es = rcl_dtype_size(M->dtype);
  int rc = rcl_csr_alloc(&A, M->dtype, M->nrows, M->ncols, M->nnz);
  if (rc) return rc;
  memcpy(A->row_ptr, M->hrp, (M->nrows + 1) * sizeof *A->row_ptr);
  if (M->nnz) {
    cl_int err = clEnqueueReadBuffer(M->ctx->queue, M->ci, CL_TRUE, 0, M->nnz * 4, A->col_idx, 0, NULL, NULL);
    if (err == CL_SUCCESS)
      err = clEnqueueReadBuffer(M->ctx->queue, M->va, CL_TRUE, 0, M->nnz * es, A->values, 0, NULL, NULL);
    if (err != CL_SUCCESS) rc = rcl__fail_cl(err, "reading the matrix back for its diagonal");
  }
  if (!rc) rc = rcl__csr_jacobi(&D, A);
  if (!rc) rc = rcl_spmv_matrix_create(out, M->ctx, D);
  rcl_csr_free(A);
  rcl_csr_free(D);
  return rc;
}
