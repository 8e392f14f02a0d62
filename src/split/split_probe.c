/* Each family's probe: one representative call, timed, whose time per device gives the measured weights
 * (split_weights.c). The probes' sizes are large enough to fill a GPU and small enough to take well under
 * a second on a CPU. */
#include <string.h>

#include "reprocl/datagen.h"
#include "reprocl/grid.h"
#include "split/split_internal.h"

static int probe_reduce(double *seconds, rcl_context *ctx, rcl_dtype dtype) {
  const size_t n = (size_t)1 << 22;
  void *x = rcl__malloc(n * rcl_dtype_size(dtype));
  if (!x) return RCL_ERR_OUT_OF_MEMORY;
  double out[1];
  int rc = rcl_generate(x, dtype, n, RCL_GEN_UNIFORM, 1);
  if (!rc) rc = rcl_reduce(out, ctx, RCL_OP_SUM, dtype, n, x, NULL, NULL); /* builds, uploads once */
  double t0 = rcl__now_s();
  if (!rc) rc = rcl_reduce(out, ctx, RCL_OP_SUM, dtype, n, x, NULL, NULL);
  *seconds = rcl__now_s() - t0;
  rcl__free(x);
  return rc;
}

static int probe_stencil(double *seconds, rcl_context *ctx, rcl_dtype dtype) {
  rcl_grid g;
  int rc = rcl_grid_alloc(&g, dtype, 1024, 1024);
  if (rc) return rc;
  rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
  rc = rcl_grid_generate(&g, RCL_GRID_INIT_RANDOM, 1);
  if (!rc) rc = rcl_stencil(g.data, ctx, &st, dtype, g.width, g.height, 1, g.data, NULL);
  double t0 = rcl__now_s();
  if (!rc) rc = rcl_stencil(g.data, ctx, &st, dtype, g.width, g.height, 8, g.data, NULL);
  *seconds = rcl__now_s() - t0;
  rcl_grid_free(&g);
  return rc;
}

static int probe_spmv(double *seconds, rcl_context *ctx, rcl_dtype dtype) {
  rcl_csr *A = NULL;
  rcl_spmv_matrix *M = NULL;
  int rc = rcl_csr_poisson2d(&A, dtype, 512);
  if (!rc) rc = rcl_spmv_matrix_create(&M, ctx, A);
  size_t n = A ? A->nrows : 0, es = rcl_dtype_size(dtype);
  void *x = rcl__calloc(n ? n : 1, es), *y = rcl__calloc(n ? n : 1, es);
  if (!rc && (!x || !y)) rc = RCL_ERR_OUT_OF_MEMORY;
  if (!rc) rc = rcl_generate(x, dtype, n, RCL_GEN_UNIFORM, 1);
  double one64 = 1, zero64 = 0;
  float one32 = 1, zero32 = 0;
  const void *one = dtype == RCL_F32 ? (const void *)&one32 : &one64;
  const void *zero = dtype == RCL_F32 ? (const void *)&zero32 : &zero64;
  if (!rc) rc = rcl_spmv_host(y, M, one, x, zero, NULL);
  double t0 = rcl__now_s();
  for (int r = 0; !rc && r < 4; r++) rc = rcl_spmv_host(y, M, one, x, zero, NULL);
  *seconds = rcl__now_s() - t0;
  rcl__free(x);
  rcl__free(y);
  rcl_spmv_matrix_free(M);
  rcl_csr_free(A);
  return rc;
}

rcl_split_probe rcl__split_probe(rcl_family family) {
  switch (family) {
  case RCL_FAMILY_REDUCE:
    return probe_reduce;
  case RCL_FAMILY_STENCIL:
    return probe_stencil;
  case RCL_FAMILY_SPMV:
    return probe_spmv;
  default:
    return NULL; /* no split of this family yet: equal weights */
  }
}

int rcl_split_weights(double *weights, rcl_split *s, rcl_family family, rcl_dtype dtype) {
  if (!weights || !s) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_weights: NULL argument");
  if ((unsigned)family >= RCL_FAMILY_COUNT)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_weights: family %d is not an rcl_family", (int)family);
  if (rcl_dtype_size(dtype) == 0)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_weights: dtype %d is not an rcl_dtype", (int)dtype);
  return rcl__split_weights(weights, s, family, dtype, rcl__split_probe(family));
}
