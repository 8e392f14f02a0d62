/* The SpMV device matrix as the SpMV files share it (spmv_matrix.c owns it, spmv_launch.c plans and launches
 * on it, spmv.c is the public front). Private to src/sparse/spmv*.c: other modules use sparse_internal.h. */
#ifndef REPROCL_SPMV_INTERNAL_H
#define REPROCL_SPMV_INTERNAL_H
#include "sparse/sparse_internal.h"

static inline size_t ceil_div(size_t a, size_t b) { return a / b + (a % b != 0); }

/* A derived layout, cached per key. */
typedef struct layout {
  struct layout *next;
  int kind;
  size_t key[3];
  cl_mem mem[3];
  size_t count; /* long rows, segments, blocks or slices */
  size_t extra; /* longest long row / most segments of one row */
} layout;

typedef struct kentry {
  struct kentry *next;
  int exact;
  const char *name;
  cl_kernel k;
  size_t wg_max;
} kentry;

struct rcl_spmv_matrix {
  rcl_context *ctx;
  rcl_dtype dtype;
  size_t nrows, ncols, nnz, max_row;
  int rp64;
  cl_mem rp, ci, va;
  uint64_t *hrp;
  pthread_mutex_t lock; /* guards layouts, kernels (and their arguments during a launch) */
  layout *layouts;
  kentry *kernels;
  /* The Jacobi preconditioner, built by CG on first use and kept: the matrix never changes, and building
   * it reads the whole matrix back from the device (on the H100 that cost ~75 ms per 7M-non-zero solve,
   * more than the iterations it preconditions). Guarded by lock. */
  rcl_spmv_matrix *jacobi;
};

/* Regular rows: the longest at most twice the mean + 16 (the tuner keys its choices on this too). */
RCL_INTERNAL int rcl__spmv_regular(const rcl_spmv_matrix *M);

#endif
