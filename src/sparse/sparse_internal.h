/* Internals shared by the sparse modules (sparse_csr.c, mmio.c, hbio.c, sparse_gen.c, spmv*.c, cg.c).
 * Not installed. Dependencies run one way: cg.c -> spmv.c (the front) -> spmv_tune.c -> spmv_launch.c ->
 * spmv_matrix.c -> sparse_csr.c; the readers and generators use sparse_csr.c and sparse_text.c. */
#ifndef REPROCL_SPARSE_INTERNAL_H
#define REPROCL_SPARSE_INTERNAL_H
#include <string.h>

#include "build/program.h"
#include "core/internal.h"
#include "tune/params.h"
#include "tune/tune.h"
#include "reprocl/sparse.h"

/* Entries in file order, before assembly into CSR: (row, col) 0-based, values in dtype. */
typedef struct {
  rcl_dtype dtype;
  size_t n, cap;
  uint32_t *row, *col;
  unsigned char *val; /* n values of dtype */
} rcl_coo;

/* Reserves room for cap entries (the caller has checked that the input justifies it). */
RCL_INTERNAL int rcl__coo_init(rcl_coo *c, rcl_dtype dtype, size_t cap);
RCL_INTERNAL void rcl__coo_free(rcl_coo *c);
/* Appends one entry; the value is dtype bytes. Grows the arrays if needed. */
RCL_INTERNAL int rcl__coo_push(rcl_coo *c, uint32_t row, uint32_t col, const void *val);
/* Assembles CSR: entries ordered by (row, col), duplicates summed in dtype in entry order (left to
 * right: s = v1; s = s + v2; ...). Frees nothing of c. */
RCL_INTERNAL int rcl__csr_from_coo(rcl_csr **out, const rcl_coo *c, size_t nrows, size_t ncols);

/* Whether a claimed row count is justified by an input of `input_bytes` bytes. CSR needs 8 bytes of row
 * pointer per row whatever the file holds, so a one-line header ("4294967295 1 0") could otherwise make a
 * reader allocate and fill 32 GiB. Accepted: row pointers of at most RCL_READER_FREE_ROW_BYTES, or of at
 * most RCL_READER_ROW_BYTES_PER_INPUT_BYTE times the input's size (every real matrix file passes: its
 * rows carry entries). */
#define RCL_READER_FREE_ROW_BYTES ((uint64_t)256 << 20)
#define RCL_READER_ROW_BYTES_PER_INPUT_BYTE 64u
static inline int rcl__rows_justified(uint64_t nrows, uint64_t input_bytes) {
  uint64_t need = (nrows + 2) * 8; /* nrows <= RCL_CSR_MAX_DIM: no overflow */
  return need <= RCL_READER_FREE_ROW_BYTES || need / RCL_READER_ROW_BYTES_PER_INPUT_BYTE <= input_bytes;
}

/* Whether a dtype value is +0 or -0, by its bits (how the SpMV launches and the reference test beta). */
static inline int rcl__real_is_zero(const void *v, rcl_dtype dt) {
  if (dt == RCL_F32) {
    uint32_t u;
    memcpy(&u, v, 4);
    return (u << 1) == 0;
  }
  uint64_t u;
  memcpy(&u, v, 8);
  return (u << 1) == 0;
}

/* Reads a whole file into a NUL-terminated buffer (rcl__free it). Errors name the file. */
RCL_INTERNAL int rcl__read_file(char **buf, size_t *len, const char *path);

/* Converts a decimal (or C hexadecimal) number token to dtype with correct rounding, in the C locale
 * whatever the caller's locale (strtof/strtod: glibc rounds correctly). tok need not be NUL-terminated.
 * Returns 0, or -1 if the whole token is not a number. */
RCL_INTERNAL int rcl__parse_real(void *out, rcl_dtype dtype, const char *tok, size_t len);
/* Switches the calling thread to the C locale for number parsing; restore with rcl__locale_end. */
typedef struct {
  void *saved, *c;
} rcl_locale_guard;
RCL_INTERNAL int rcl__locale_begin(rcl_locale_guard *g);
RCL_INTERNAL void rcl__locale_end(rcl_locale_guard *g);

/* (sparse_csr.c) The Jacobi preconditioner of A as a diagonal matrix: entry (i, i) = 1 / d_i rounded in dtype, where
 * d_i is the sum (in stored order) of row i's diagonal entries. RCL_ERR_BREAKDOWN names the first row whose d_i is
 * missing, not positive or NaN. A must be square. */
RCL_SIBLING int rcl__csr_jacobi(rcl_csr **out, const rcl_csr *A);
/* (spmv_matrix.c) The same for a matrix on a device (its arrays are read back once); the result lives on A's context.
 */
RCL_INTERNAL int rcl__spmv_jacobi(rcl_spmv_matrix **out, rcl_spmv_matrix *A);
/* A's Jacobi preconditioner, built once and kept with A (borrowed: freed with A). */
RCL_INTERNAL int rcl__spmv_jacobi_of(rcl_spmv_matrix **out, rcl_spmv_matrix *A);

/* ---- tuning (spmv_tune.c; docs/tuning.md) ----------------------------------------------------------- */

/* The tunable parameters of SpMV, in the order of their rcl_tune_param_def table: the variant
 * (rcl_spmv_variant, scalar .. task) and the rcl_spmv_options fields of the same names. `window` is not
 * tuned: its default is the most a work-item may loop over per launch, the fewest launches. */
enum {
  RCL_SP_P_VARIANT,
  RCL_SP_P_LOCAL,
  RCL_SP_P_LANES,
  RCL_SP_P_BLOCK,
  RCL_SP_P_SLICE,
  RCL_SP_P_LONG_ROW,
  RCL_SP_NPARAMS
};

/* The extra build defines of the SpMV program for a contract and row-pointer width (what spmv_launch.c builds,
 * what the descriptors and bundles name). */
RCL_INTERNAL const char *rcl__spmv_defines(int exact, int rp64);
/* The descriptors: per contract, one for matrices with regular rows (the longest at most twice the mean
 * + 16) and one for irregular ones, tuned on matrices of that kind. */
extern const rcl_tune_kernel rcl__tk_spmv_regular_ordered, rcl__tk_spmv_regular_exact, rcl__tk_spmv_irregular_ordered,
    rcl__tk_spmv_irregular_exact;
RCL_INTERNAL const rcl_tune_kernel *rcl__spmv_tune_kernel(int exact, int irregular);
RCL_INTERNAL const rcl_tune_kernel *rcl__spmv_tune_kernel_of(const rcl_spmv_matrix *M, int exact);

/* What a call launches (the validity predicate runs this: the same planner as a call). */
typedef struct {
  rcl_spmv_variant variant;
  size_t W, WL, L, B, C, T, window; /* variant and long-row work-group sizes, lanes, block, slice, threshold */
  int has_long;                     /* the matrix has rows longer than T (the long-row path runs) */
} rcl_spmv_launch;
/* The launch of opts on M, soft (RCL_SP_P_*, 0: none; or NULL) filling what opts leaves at 0 as tuned
 * values do (clamped, never refused); RCL_ERR_INVALID_ARG for options the device cannot launch. */
RCL_INTERNAL int rcl__spmv_resolve(rcl_spmv_launch *out, rcl_spmv_matrix *M, const rcl_spmv_options *opts,
                                   const size_t *soft);
/* rcl_spmv_enqueue with the soft values given instead of looked up (NULL: built-in defaults only). */
RCL_INTERNAL int rcl__spmv_enqueue_soft(cl_mem y, size_t yoff, rcl_spmv_matrix *M, const void *alpha, cl_mem x,
                                        size_t xoff, const void *beta, const rcl_spmv_options *opts, const size_t *soft,
                                        const rcl_queue_args *q);

/* The tuning problem at problem size n (non-zeros), shared with the tests: regular, the 2D Poisson matrix
 * on a side of floor(sqrt(n / 5)) (at least 2); irregular, power-law rows rcl_csr_powerlaw(max(64, n / 24)
 * rows and columns, min_len 2, seed RCL_SPMV_TUNE_SEED). x = rcl_generate(RCL_GEN_UNIFORM,
 * RCL_SPMV_TUNE_SEED + 1); y = 1 * A x + 0 * y. */
#define RCL_SPMV_TUNE_SEED 0x5e7a
RCL_INTERNAL int rcl__spmv_tune_matrix(rcl_csr **out, int irregular, rcl_dtype dtype, size_t n);

/* ---- a block of rows as a matrix of its own (csr_local.c): splits over devices and MPI ranks ----------- */

/* Rows [r0, r1) of a matrix A, with their columns renumbered into a compressed vector `xe`: first the
 * columns < c0 the rows reference (sorted, unique: the halo before), then every column of the owned range
 * [c0, c1) whether referenced or not (so a device's own slice of x sits there unchanged), then the
 * referenced columns >= c1 (sorted, unique: the halo after). c0 = c1 gives the purely compressed vector of
 * the referenced columns. Values and their stored order are A's, so every row's sum is the same sequence of
 * operations when xe[k] = x[global column of k]. */
typedef struct {
  rcl_csr *A;             /* r1 - r0 rows; nbefore + (c1 - c0) + nafter columns */
  size_t r0, r1, c0, c1;  /* the rows, and the owned columns */
  size_t nbefore, nafter; /* halo sizes */
  uint32_t *halo;         /* nbefore + nafter global columns: those of xe[0 .. nbefore) then of the after halo */
} rcl_csr_local;
RCL_SIBLING int rcl__csr_local(rcl_csr_local *out, const rcl_csr *A, size_t r0, size_t r1, size_t c0, size_t c1);
RCL_SIBLING void rcl__csr_local_free(rcl_csr_local *L);
/* xe (L->A->ncols values of dtype) = x at the global columns of L (x: the global vector). */
RCL_INTERNAL void rcl__csr_local_gather(void *xe, const rcl_csr_local *L, const void *x);
/* halo (nbefore + nafter values) = x at the halo's global columns. */
RCL_INTERNAL void rcl__csr_local_gather_halo(void *halo, const rcl_csr_local *L, const void *x);
/* bounds[0..count]: rows [bounds[i], bounds[i+1]) for part i, cut so that each part's cost (its non-zeros
 * plus its rows) is proportional to weights[i] (>= 0, at least one > 0); every inner bound is a multiple of
 * granule (>= 1) or nrows; a part of weight 0 is empty. Deterministic. */
RCL_SIBLING int rcl__csr_row_bounds(size_t *bounds, const rcl_csr *A, const double *weights, size_t count,
                                    size_t granule);

/* ---- the CG driver (cg.c), shared by its back ends: device, host reference, and the split over devices -- */

/* CG's vectors, as a back end's ops name them. */
enum { RCL_CG_X, RCL_CG_B, RCL_CG_R, RCL_CG_P, RCL_CG_Q, RCL_CG_Z, RCL_CG_NV };
/* What the driver needs from a back end. Scalars land in three slots (dtype values) read by fetch. */
typedef struct {
  void *st;
  int (*copy)(void *st, int dst, int src);
  int (*spmv)(void *st, int jacobi, int dst, int src, const void *alpha, const void *beta);
  int (*reduce)(void *st, rcl_reduce_op op, int a, int b, int slot);
  int (*axpy)(void *st, int dst, const void *alpha, int src);
  int (*scal)(void *st, int dst, const void *alpha);
  int (*fetch)(void *st, void *slots);
} rcl_cg_ops;
/* Clears *res and checks the options (NULL: defaults) and the shape (square). */
RCL_SIBLING int rcl__cg_check(rcl_cg_result *res, const rcl_cg_options *opts, size_t nrows, size_t ncols);
/* The algorithm of contract "cg" over a back end (n > 0 rows), filling res (not its digest). */
RCL_SIBLING int rcl__cg_run(const rcl_cg_ops *o, rcl_dtype dt, size_t n, const rcl_cg_options *opt, rcl_cg_result *res);
/* The result of the empty system (0 rows), digest included. */
RCL_SIBLING int rcl__cg_empty(rcl_cg_result *res, rcl_dtype dt);
/* Sets res's history digest and returns rc. */
RCL_SIBLING int rcl__cg_finish(rcl_cg_result *res, rcl_dtype dt, int rc);

#endif
