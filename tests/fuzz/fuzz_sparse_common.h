/* Shared checks of the sparse-reader fuzz targets: a parse either gives a valid CSR matrix or a status
 * of the documented kinds with a message naming the input. */
#ifndef REPROCL_FUZZ_SPARSE_COMMON_H
#define REPROCL_FUZZ_SPARSE_COMMON_H
#include "fuzz_common.h"

typedef int (*sparse_parse_fn)(rcl_csr **out, const char *text, size_t length, const char *name, rcl_dtype dtype);

static inline void fuzz_sparse(sparse_parse_fn parse, const char *name, const uint8_t *data, size_t size) {
  if (size == 0) return;
  rcl_dtype dt = (data[0] & 1) ? RCL_F64 : RCL_F32;
  size_t n = size - 1;
  char *text = malloc(n ? n : 1); /* exactly the text's length: ASan sees any over-read */
  if (!text) abort();
  if (n) memcpy(text, data + 1, n);
  rcl_csr *A = (rcl_csr *)text; /* must be reset on failure */
  int rc = parse(&A, text, n, name, dt);
  if (rc == 0) {
    FUZZ_CHECK(A != NULL, "success without a matrix");
    FUZZ_CHECK(rcl_csr_validate(A) == 0, "the matrix read is not valid CSR: %s", rcl_error_last());
    FUZZ_CHECK(A->dtype == dt, "dtype %d, asked %d", (int)A->dtype, (int)dt);
    for (size_t i = 0; i + 1 < A->nrows + 1 && i < A->nrows; i++)
      for (uint64_t k = A->row_ptr[i] + 1; k < A->row_ptr[i + 1]; k++)
        FUZZ_CHECK(A->col_idx[k - 1] < A->col_idx[k], "row %zu: columns not strictly increasing", i);
    rcl_csr_free(A);
  } else {
    FUZZ_CHECK(A == NULL, "failure left *out set");
    FUZZ_CHECK(rc == RCL_ERR_PARSE || rc == RCL_ERR_UNSUPPORTED || rc == RCL_ERR_OVERFLOW ||
                   rc == RCL_ERR_OUT_OF_MEMORY,
               "status %s: %s", rcl_status_name(rc), rcl_error_last());
    if (rc == RCL_ERR_PARSE)
      FUZZ_CHECK(!strncmp(rcl_error_last(), name, strlen(name)) && rcl_error_last()[strlen(name)] == ':',
                 "message does not start with \"%s:\": %s", name, rcl_error_last());
  }
  free(text);
}
#endif
