/* The public front of SpMV: rcl_spmv_enqueue resolves what the caller leaves to the tuner (the descriptor
 * of the matrix's row regularity and contract, spmv_tune.c) and calls the launch layer (spmv_launch.c)
 * with those values; the host-array forms upload, run it and read back. */
#include <stdlib.h>
#include <string.h>

#include "sparse/spmv_internal.h"

const rcl_tune_kernel *rcl__spmv_tune_kernel_of(const rcl_spmv_matrix *M, int exact) {
  return rcl__spmv_tune_kernel(exact, !rcl__spmv_regular(M));
}

/* Whether a call with o leaves a tunable field to the tuner. */
static int leaves_choice(const rcl_spmv_options *o) {
  return !o || o->variant == RCL_SPMV_AUTO || !o->local_size || !o->lanes || !o->block_nnz || !o->slice || !o->long_row;
}

int rcl_spmv_enqueue(cl_mem y, size_t yoff, rcl_spmv_matrix *M, const void *alpha, cl_mem x, size_t xoff,
                     const void *beta, const rcl_spmv_options *opts, const rcl_queue_args *q) {
  if (!M) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv_enqueue: NULL matrix");
  size_t tv[RCL_TUNE_MAX_PARAMS];
  const size_t *soft = NULL;
  int valid = !opts || (opts->version == RCL_SPMV_OPTIONS_VERSION &&
                        (opts->contract == RCL_SPMV_ORDERED || opts->contract == RCL_SPMV_EXACT));
  if (valid && M->nnz && leaves_choice(opts)) { /* (invalid options are refused below, before any tuning) */
    /* Tuned per non-zeros, for the matrix's row regularity (tuning first when the mode says so). */
    int exact = opts && opts->contract == RCL_SPMV_EXACT;
    int rc = rcl__tune_lookup(tv, M->ctx, rcl__spmv_tune_kernel_of(M, exact), M->dtype, M->nnz);
    if (rc) return rc;
    soft = tv;
  }
  return rcl__spmv_enqueue_soft(y, yoff, M, alpha, x, xoff, beta, opts, soft, q);
}

/* ---- host-array forms ------------------------------------------------------------------------------- */

int rcl_spmv_host(void *y, rcl_spmv_matrix *M, const void *alpha, const void *x, const void *beta,
                  const rcl_spmv_options *opts) {
  if (!M) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv_host: NULL matrix");
  rcl_context *ctx = M->ctx;
  if (!ctx->queue) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv: the context has no queue (wrapped without one)");
  if ((M->nrows && !y) || (M->ncols && !x)) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv: NULL x or y");
  size_t es = rcl_dtype_size(M->dtype);
  cl_mem bx = NULL, by = NULL;
  rcl_chain ch;
  int rc = rcl__chain_host(&ch, ctx);
  if (rc) return rc;
  rc = rcl__buffer_create(&bx, ctx, M->ncols ? CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR : CL_MEM_READ_ONLY,
                          M->ncols * es, M->ncols ? (void *)(uintptr_t)x : NULL, "x");
  if (!rc)
    rc = rcl__buffer_create(&by, ctx, M->nrows ? CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR : CL_MEM_READ_WRITE,
                            M->nrows * es, M->nrows ? y : NULL, "y");
  if (!rc) {
    rcl_queue_args qa = rcl__chain_args(&ch);
    rc = rcl__chain_adopt(&ch, rcl_spmv_enqueue(by, 0, M, alpha, bx, 0, beta, opts, &qa));
  }
  if (!rc && M->nrows) rc = rcl__chain_read(&ch, by, 0, M->nrows * es, y, NULL, "y");
  rc = rcl__chain_finish(&ch, NULL, rc);
  if (bx) clReleaseMemObject(bx);
  if (by) clReleaseMemObject(by);
  return rc;
}

int rcl_spmv(void *y, rcl_context *ctx, const rcl_csr *A, const void *alpha, const void *x, const void *beta,
             const rcl_spmv_options *opts) {
  rcl_spmv_matrix *M;
  int rc = rcl_spmv_matrix_create(&M, ctx, A);
  if (rc) return rc;
  rc = rcl_spmv_host(y, M, alpha, x, beta, opts);
  rcl_spmv_matrix_free(M);
  return rc;
}
