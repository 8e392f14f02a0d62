/* Internals shared by the sparse modules (sparse_csr.c, mmio.c, hbio.c, sparse_gen.c, spmv*.c, cg.c).
 * Not installed. */
#ifndef REPROCL_SPARSE_INTERNAL_H
#define REPROCL_SPARSE_INTERNAL_H
#include "internal.h"
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

/* The Jacobi preconditioner of A as a diagonal matrix: entry (i, i) = 1 / d_i rounded in dtype, where d_i
 * is the sum (in stored order) of row i's diagonal entries. RCL_ERR_BREAKDOWN names the first row whose
 * d_i is missing, not positive or NaN. A must be square. */
RCL_INTERNAL int rcl__csr_jacobi(rcl_csr **out, const rcl_csr *A);
/* The same for a matrix on a device (its arrays are read back once); the result lives on A's context. */
RCL_INTERNAL int rcl__spmv_jacobi(rcl_spmv_matrix **out, rcl_spmv_matrix *A);

#endif
