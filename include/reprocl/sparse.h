/* reprocl: sparse matrices — CSR on the host, Matrix Market and Harwell-Boeing input, deterministic
 * generators, bit-reproducible SpMV (y = alpha*A*x + beta*y) and a Conjugate Gradient solver whose whole
 * convergence history is identical on every device. The numerical contracts ("spmv.ordered",
 * "spmv.exact", "cg") are in docs/contracts.md (§6); the user guide is docs/sparse.md. */
#ifndef REPROCL_SPARSE_H
#define REPROCL_SPARSE_H
#include "reprocl/common.h"
#include "reprocl/context.h"
#include "reprocl/reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==== CSR matrices on the host ===================================================================== */

/* The largest row or column count: row and column indices are 32-bit unsigned on the device. */
#define RCL_CSR_MAX_DIM 0xffffffffu

/* A compressed sparse row matrix. Rows are 0-based; row i holds entries row_ptr[i] .. row_ptr[i+1]-1.
 * Matrices made by reprocl (readers, generators) have strictly increasing column indices within each
 * row; a CSR given through rcl_csr_create() may have any column order (and repeated columns): the
 * ordered SpMV contract sums a row in its stored order. */
typedef struct {
  rcl_dtype dtype;
  size_t nrows, ncols, nnz;
  uint64_t *row_ptr; /* nrows + 1 offsets: row_ptr[0] = 0, non-decreasing, row_ptr[nrows] = nnz */
  uint32_t *col_idx; /* nnz column indices, each < ncols */
  void *values;      /* nnz values of dtype (float or double) */
} rcl_csr;

/* A validated copy of caller-provided CSR arrays: row pointers must start at 0, never decrease and end at
 * nnz; every column index must be < ncols; nrows and ncols at most RCL_CSR_MAX_DIM. RCL_ERR_INVALID_ARG
 * names the first offending row or entry. values may be NULL when nnz is 0. */
RCL_API int rcl_csr_create(rcl_csr **out, rcl_dtype dtype, size_t nrows, size_t ncols, size_t nnz,
                           const uint64_t *row_ptr, const uint32_t *col_idx, const void *values);
/* Checks the invariants above of a matrix built by hand; 0 or RCL_ERR_INVALID_ARG naming the problem. */
RCL_API int rcl_csr_validate(const rcl_csr *A);
/* A zero-filled matrix of the given shape (the caller fills it, then may call rcl_csr_validate). */
RCL_API int rcl_csr_alloc(rcl_csr **out, rcl_dtype dtype, size_t nrows, size_t ncols, size_t nnz);
RCL_API void rcl_csr_free(rcl_csr *A);
/* SHA-256 (hex) of the matrix: dtype, shape, row pointers, column indices and value bytes, in that order
 * as little-endian 64-bit counts followed by the arrays. Equal digests mean identical matrices. */
RCL_API void rcl_csr_digest(char hex[65], const rcl_csr *A);

/* ==== reading and writing ========================================================================== */

/* Reads a sparse matrix file, detecting the format: Matrix Market when the file starts with
 * "%%MatrixMarket", Harwell-Boeing otherwise. Values are converted from their decimal text straight to
 * dtype with correct rounding (strtof/strtod, which glibc rounds correctly; never through double for f32).
 * Malformed input gives RCL_ERR_PARSE with "FILE:LINE: problem"; unsupported kinds (complex, hermitian,
 * elemental) RCL_ERR_UNSUPPORTED; an unreadable file RCL_ERR_IO. */
RCL_API int rcl_matrix_read(rcl_csr **out, const char *path, rcl_dtype dtype);

/* Matrix Market: "coordinate" with field real, integer or pattern and symmetry general, symmetric or
 * skew-symmetric; "array" real or integer, general, symmetric or skew-symmetric. Comments (%) and blank
 * lines may appear anywhere after the banner. Symmetric files store the lower triangle (entries above
 * the diagonal are an error), skew-symmetric files the strict lower triangle; the mirrored entry of
 * (i, j, v) is (j, i, v), or (j, i, -v) for skew-symmetric. Duplicate (i, j) entries are summed in dtype
 * in file order, left to right (a mirrored entry takes the file position of its source line); explicit
 * zeros are kept as entries. Pattern values are 1. */
RCL_API int rcl_mm_read(rcl_csr **out, const char *path, rcl_dtype dtype);
/* The same for text in memory; name is used in messages ("name:line: problem"). */
RCL_API int rcl_mm_parse(rcl_csr **out, const char *text, size_t length, const char *name, rcl_dtype dtype);
/* Writes coordinate real general (values with 9 or 17 significant digits: reading it back gives the same
 * bits in the same dtype). */
RCL_API int rcl_mm_write(const char *path, const rcl_csr *A);

/* Harwell-Boeing (fixed-format Fortran): types RUA, RSA, RZA (real unsymmetric, symmetric, skew) and
 * PUA, PSA, PZA (pattern); I/F/E/D edit descriptors with repeat counts and a 1P scale factor; values
 * whose exponent letter is D or missing ("1.0-100") are read as Fortran does. Right-hand sides are
 * ignored. Duplicates and symmetry follow the Matrix Market rules in column-major file order. */
RCL_API int rcl_hb_read(rcl_csr **out, const char *path, rcl_dtype dtype);
RCL_API int rcl_hb_parse(rcl_csr **out, const char *text, size_t length, const char *name, rcl_dtype dtype);

/* ==== generators: the same bytes on every machine (integer arithmetic and exact operations) ========= */

/* The 5-point Laplacian on an n x n grid (n*n rows: 4 on the diagonal, -1 for each neighbour). SPD. */
RCL_API int rcl_csr_poisson2d(rcl_csr **out, rcl_dtype dtype, size_t n);
/* The 7-point Laplacian on an n x n x n grid (6 on the diagonal, -1 per neighbour). SPD. */
RCL_API int rcl_csr_poisson3d(rcl_csr **out, rcl_dtype dtype, size_t n);
/* per_row distinct random columns per row (min(per_row, ncols)), values uniform in [-1, 1). */
RCL_API int rcl_csr_random(rcl_csr **out, rcl_dtype dtype, size_t nrows, size_t ncols, size_t per_row, uint64_t seed);
/* Power-law row lengths: row i has min(ncols, floor(min_len / u_i)) entries for u_i uniform in (0, 1]
 * (a Pareto tail: a few very long rows), random distinct columns, values uniform in [-1, 1). */
RCL_API int rcl_csr_powerlaw(rcl_csr **out, rcl_dtype dtype, size_t nrows, size_t ncols, size_t min_len, uint64_t seed);
/* From a spec string (the CLI's --gen): "poisson2d:N", "poisson3d:N", "random:ROWS[xCOLS]:PERROW[:SEED]",
 * "powerlaw:ROWS[xCOLS]:MINLEN[:SEED]" (seed default 1). */
RCL_API int rcl_csr_generate(rcl_csr **out, rcl_dtype dtype, const char *spec);

/* ==== SpMV: y = alpha*A*x + beta*y ================================================================= */

typedef enum {
  /* Row sum s_i = (((+0 + p_1) + p_2) + ...) + p_m over the rounded products p_k = a_k * x[col_k] in stored
   * order: exactly plain sequential C with -ffp-contract=off. */
  RCL_SPMV_ORDERED = 0,
  /* s_i = the correctly rounded exact value of +0 + sum p_k (products exact), via the superaccumulator. */
  RCL_SPMV_EXACT = 1
} rcl_spmv_contract;
RCL_API const char *rcl_spmv_contract_name(rcl_spmv_contract c); /* "ordered", "exact" */
RCL_API int rcl_spmv_contract_parse(rcl_spmv_contract *out, const char *name);

/* Implementations: each gives the same bits for either contract on every device and launch shape. */
typedef enum {
  RCL_SPMV_AUTO = 0,     /* reprocl picks: scalar on CPUs; on GPUs sell for regular rows (longest row at
                            most twice the mean + 16), adaptive otherwise */
  RCL_SPMV_SCALAR = 1,   /* one work-item per row */
  RCL_SPMV_VECTOR = 2,   /* `lanes` work-items per row load and multiply; one of them sums in order */
  RCL_SPMV_ADAPTIVE = 3, /* CSR-adaptive: a work-group stages a block of rows' products (<= block_nnz) in
                            local memory with coalesced loads, then one work-item per row sums them */
  RCL_SPMV_SELL = 4,     /* sliced ELLPACK copy of the matrix (slice rows padded, column-major): one
                            work-item per row, coalesced loads across the slice */
  RCL_SPMV_TASK = 5,     /* one work-item walks the rows in order: plain pipelinable loops (FPGA form) */
  RCL_SPMV_VARIANT_COUNT = 6
} rcl_spmv_variant;
RCL_API const char *rcl_spmv_variant_name(rcl_spmv_variant v); /* "auto", "scalar", ... */
RCL_API int rcl_spmv_variant_parse(rcl_spmv_variant *out, const char *name);

/* Launch configuration. Every field is a tunable: 0 means the built-in (or tuned) default, any valid
 * value gives the same bits; invalid values are refused with RCL_ERR_INVALID_ARG naming the field.
 * Rows with more than long_row entries are handled by the long-row path (one work-group per row: the
 * products in parallel, then the ordered sum by one work-item carried over launches of `window` entries,
 * or exact segments of `window` entries combined per row), whatever the variant. */
#define RCL_SPMV_OPTIONS_VERSION 1
typedef struct {
  unsigned int version;
  rcl_spmv_contract contract;
  rcl_spmv_variant variant;
  size_t local_size; /* work-group size of the vector, adaptive, sell and long-row kernels: a power of two */
  size_t lanes;      /* vector: work-items per row, a power of two <= local_size */
  size_t block_nnz;  /* adaptive: products staged per work-group, a multiple of local_size */
  size_t slice;      /* sell: rows per slice, a power of two <= local_size */
  size_t long_row;   /* rows with more entries take the long-row path (>= 1) */
  size_t window;     /* long-row path: ordered entries per launch, or exact entries per segment (>= 1) */
} rcl_spmv_options;
#define RCL_SPMV_OPTIONS_INIT                                                                                          \
  { RCL_SPMV_OPTIONS_VERSION, RCL_SPMV_ORDERED, RCL_SPMV_AUTO, 0, 0, 0, 0, 0, 0 }

/* A CSR matrix on a device (uploaded once, used by any number of SpMVs). Opaque. Thread-safe: the
 * layouts some variants derive (adaptive row blocks, sliced ELL) are built on first use under a lock. */
typedef struct rcl_spmv_matrix rcl_spmv_matrix;
RCL_API int rcl_spmv_matrix_create(rcl_spmv_matrix **out, rcl_context *ctx, const rcl_csr *A);
/* A second handle on the same device buffers for another context on the same cl_context (e.g. the
 * native-mode clone of a context, for comparisons without a second upload). */
RCL_API int rcl_spmv_matrix_share(rcl_spmv_matrix **out, const rcl_spmv_matrix *M, rcl_context *ctx);
RCL_API void rcl_spmv_matrix_free(rcl_spmv_matrix *M);
RCL_API rcl_dtype rcl_spmv_matrix_dtype(const rcl_spmv_matrix *M);
RCL_API size_t rcl_spmv_matrix_nrows(const rcl_spmv_matrix *M);
RCL_API size_t rcl_spmv_matrix_ncols(const rcl_spmv_matrix *M);
RCL_API size_t rcl_spmv_matrix_nnz(const rcl_spmv_matrix *M);
RCL_API rcl_context *rcl_spmv_matrix_context(const rcl_spmv_matrix *M);

/* y[y_offset + i] = alpha * s_i + beta * y[y_offset + i] for every row i, where s_i is the row sum of the
 * chosen contract and each of the three operations is rounded; with beta = +0 or -0, y is not read and
 * y_i = alpha * s_i (so NaN or inf in y do not propagate). alpha and beta point to a float or double (the
 * matrix's dtype). NaN results are the canonical quiet NaN. x (ncols values) and y (nrows values) must
 * not overlap. Several launches may be chained; q->event completes after the last. */
RCL_API int rcl_spmv_enqueue(cl_mem y, size_t y_offset, rcl_spmv_matrix *A, const void *alpha, cl_mem x,
                             size_t x_offset, const void *beta, const rcl_spmv_options *opts, const rcl_queue_args *q);
/* Host-array form: uploads A, x and y, runs on the context's queue and reads y back. */
RCL_API int rcl_spmv(void *y, rcl_context *ctx, const rcl_csr *A, const void *alpha, const void *x, const void *beta,
                     const rcl_spmv_options *opts);
/* The same with a matrix already on the device. */
RCL_API int rcl_spmv_host(void *y, rcl_spmv_matrix *A, const void *alpha, const void *x, const void *beta,
                          const rcl_spmv_options *opts);

/* The conventional CSR-vector kernel, for benchmarks only: lanes work-items per row (0: from the mean row
 * length) each sum every lanes-th product, then a tree over the lanes combines them. NOT a reprocl
 * contract: its bits depend on lanes and on the build mode. local_size 0: default. */
RCL_API int rcl_spmv_baseline_enqueue(cl_mem y, size_t y_offset, rcl_spmv_matrix *A, const void *alpha, cl_mem x,
                                      size_t x_offset, const void *beta, size_t lanes, size_t local_size,
                                      const rcl_queue_args *q);

/* The host reference of both contracts (plain C with -ffp-contract=off; exact: the superaccumulator of
 * cl/rcl_exact.cl compiled for the host). Same arguments as rcl_spmv. */
RCL_API int rcl_ref_spmv(void *y, const rcl_csr *A, rcl_spmv_contract contract, const void *alpha, const void *x,
                         const void *beta);

/* ==== Conjugate Gradient (contract "cg" v1) ======================================================== */

#define RCL_CG_OPTIONS_VERSION 1
typedef struct {
  unsigned int version;
  double tol;               /* converged when ||r_k|| <= tol * ||b|| (compared in double on the host); >= 0 */
  size_t max_iterations;    /* stop after this many iterations (RCL_ERR_NO_CONVERGENCE) */
  int jacobi;               /* precondition with the inverse diagonal (each 1/a_ii rounded once on the host) */
  rcl_reduce_mode dot_mode; /* dots and norms: RCL_REDUCE_ORDERED or RCL_REDUCE_EXACT */
  rcl_spmv_options spmv;    /* contract and launch of the SpMVs */
} rcl_cg_options;
#define RCL_CG_OPTIONS_INIT                                                                                            \
  { RCL_CG_OPTIONS_VERSION, 1e-8, 1000, 0, RCL_REDUCE_ORDERED, RCL_SPMV_OPTIONS_INIT }

typedef struct {
  size_t iterations;    /* iterations done */
  int converged;        /* 1 when ||r|| <= tol * ||b|| */
  double residual_norm; /* ||r|| after the last iteration (the dtype value, widened) */
  double rhs_norm;      /* ||b|| */
  void *history;        /* iterations + 1 residual norms in dtype: [0] = ||b - A x0|| (rcl_cg_result_free) */
  size_t history_len;
  char history_sha256[65]; /* SHA-256 of the history bytes */
  char message[256];       /* why it stopped, in words */
} rcl_cg_result;
RCL_API void rcl_cg_result_free(rcl_cg_result *r); /* frees history; the struct itself is the caller's */

/* Solves A x = b for SPD A (square). x holds the initial guess on entry and the last iterate on return.
 * Returns 0 when converged; RCL_ERR_NO_CONVERGENCE after max_iterations; RCL_ERR_BREAKDOWN when p'Ap or
 * r'z is not positive (A or the preconditioner is not positive definite) or a norm is NaN. In those cases
 * *res is filled too (the history up to the stop). Blocks: the scalars are read back every iteration. */
RCL_API int rcl_cg(void *x, rcl_cg_result *res, rcl_spmv_matrix *A, const void *b, const rcl_cg_options *opts);
/* The same on device buffers (x and b hold nrows values of the matrix's dtype), on q->queue or the
 * context's queue; waits for q's wait list first. */
RCL_API int rcl_cg_solve(rcl_cg_result *res, rcl_spmv_matrix *A, cl_mem x, cl_mem b, const rcl_cg_options *opts,
                         const rcl_queue_args *q);
/* The host reference: the same operations through rcl_ref_spmv, rcl_ref_reduce, rcl_ref_axpy and
 * rcl_ref_scal, so its history and solution equal every device's bit for bit. */
RCL_API int rcl_ref_cg(void *x, rcl_cg_result *res, const rcl_csr *A, const void *b, const rcl_cg_options *opts);

#ifdef __cplusplus
}
#endif
#endif
