/* CSR matrices on the host: creation with validation, assembly from entries in file order (sorting and
 * duplicate summation in a fixed order), digests, and the Jacobi preconditioner CG uses. */
#include <stdlib.h>
#include <string.h>

#include "sparse/sparse_internal.h"

static int check_dtype(rcl_dtype dt) {
  if (rcl_dtype_size(dt) == 0) return rcl__fail(RCL_ERR_INVALID_ARG, "unknown dtype %d", (int)dt);
  return 0;
}

int rcl_csr_alloc(rcl_csr **out, rcl_dtype dtype, size_t nrows, size_t ncols, size_t nnz) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_csr_alloc: NULL output");
  *out = NULL;
  int rc = check_dtype(dtype);
  if (rc) return rc;
  if (nrows > RCL_CSR_MAX_DIM || ncols > RCL_CSR_MAX_DIM)
    return rcl__fail(RCL_ERR_INVALID_ARG, "a %zu x %zu matrix exceeds the limit of %u rows and columns", nrows, ncols,
                     RCL_CSR_MAX_DIM);
  size_t es = rcl_dtype_size(dtype), brp, bci, bv;
  if ((rc = rcl__mul_size(&brp, nrows + 1, sizeof(uint64_t), "CSR row pointers")) ||
      (rc = rcl__mul_size(&bci, nnz, sizeof(uint32_t), "CSR column indices")) ||
      (rc = rcl__mul_size(&bv, nnz, es, "CSR values")))
    return rc;
  rcl_csr *A = rcl__calloc(1, sizeof *A);
  if (!A) return RCL_ERR_OUT_OF_MEMORY;
  A->dtype = dtype;
  A->nrows = nrows;
  A->ncols = ncols;
  A->nnz = nnz;
  A->row_ptr = rcl__calloc(nrows + 1, sizeof(uint64_t));
  A->col_idx = A->row_ptr ? rcl__calloc(nnz ? nnz : 1, sizeof(uint32_t)) : NULL;
  A->values = A->col_idx ? rcl__calloc(nnz ? nnz : 1, es) : NULL;
  if (!A->values) {
    rcl_csr_free(A);
    return RCL_ERR_OUT_OF_MEMORY;
  }
  *out = A;
  return 0;
}

void rcl_csr_free(rcl_csr *A) {
  if (!A) return;
  rcl__free(A->row_ptr);
  rcl__free(A->col_idx);
  rcl__free(A->values);
  rcl__free(A);
}

static int validate_arrays(rcl_dtype dtype, size_t nrows, size_t ncols, size_t nnz, const uint64_t *rp,
                           const uint32_t *ci, const void *v) {
  int rc = check_dtype(dtype);
  if (rc) return rc;
  if (nrows > RCL_CSR_MAX_DIM || ncols > RCL_CSR_MAX_DIM)
    return rcl__fail(RCL_ERR_INVALID_ARG, "a %zu x %zu matrix exceeds the limit of %u rows and columns", nrows, ncols,
                     RCL_CSR_MAX_DIM);
  if (!rp) return rcl__fail(RCL_ERR_INVALID_ARG, "CSR: row_ptr is NULL");
  if (nnz > 0 && (!ci || !v))
    return rcl__fail(RCL_ERR_INVALID_ARG, "CSR: col_idx or values is NULL with nnz = %zu", nnz);
  if (rp[0] != 0)
    return rcl__fail(RCL_ERR_INVALID_ARG, "CSR: row_ptr[0] is %llu, must be 0", (unsigned long long)rp[0]);
  for (size_t i = 0; i < nrows; i++)
    if (rp[i + 1] < rp[i])
      return rcl__fail(RCL_ERR_INVALID_ARG, "CSR: row_ptr decreases at row %zu (%llu then %llu)", i,
                       (unsigned long long)rp[i], (unsigned long long)rp[i + 1]);
  if (rp[nrows] != nnz)
    return rcl__fail(RCL_ERR_INVALID_ARG, "CSR: row_ptr[%zu] is %llu, must equal nnz = %zu", nrows,
                     (unsigned long long)rp[nrows], nnz);
  for (size_t i = 0; i < nrows; i++)
    for (uint64_t k = rp[i]; k < rp[i + 1]; k++)
      if (ci[k] >= ncols)
        return rcl__fail(RCL_ERR_INVALID_ARG, "CSR: entry %llu (row %zu) has column %u, outside 0..%zu",
                         (unsigned long long)k, i, ci[k], ncols ? ncols - 1 : 0);
  return 0;
}

int rcl_csr_validate(const rcl_csr *A) {
  if (!A) return rcl__fail(RCL_ERR_INVALID_ARG, "CSR: NULL matrix");
  return validate_arrays(A->dtype, A->nrows, A->ncols, A->nnz, A->row_ptr, A->col_idx, A->values);
}

int rcl_csr_create(rcl_csr **out, rcl_dtype dtype, size_t nrows, size_t ncols, size_t nnz, const uint64_t *row_ptr,
                   const uint32_t *col_idx, const void *values) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_csr_create: NULL output");
  *out = NULL;
  int rc = validate_arrays(dtype, nrows, ncols, nnz, row_ptr, col_idx, values);
  rcl_csr *A = NULL;
  if (!rc) rc = rcl_csr_alloc(&A, dtype, nrows, ncols, nnz);
  if (rc) return rc;
  memcpy(A->row_ptr, row_ptr, (nrows + 1) * sizeof(uint64_t));
  if (nnz) {
    memcpy(A->col_idx, col_idx, nnz * sizeof(uint32_t));
    memcpy(A->values, values, nnz * rcl_dtype_size(dtype));
  }
  *out = A;
  return 0;
}

void rcl_csr_digest(char hex[65], const rcl_csr *A) {
  rcl_sha256_ctx c;
  rcl_sha256_init(&c);
  uint64_t head[4] = {(uint64_t)A->dtype, A->nrows, A->ncols, A->nnz};
  rcl_sha256_update(&c, head, sizeof head);
  rcl_sha256_update(&c, A->row_ptr, (A->nrows + 1) * sizeof(uint64_t));
  rcl_sha256_update(&c, A->col_idx, A->nnz * sizeof(uint32_t));
  rcl_sha256_update(&c, A->values, A->nnz * rcl_dtype_size(A->dtype));
  rcl_sha256_final_hex(&c, hex);
}

/* ---- assembly from entries -------------------------------------------------------------------------- */

int rcl__coo_init(rcl_coo *c, rcl_dtype dtype, size_t cap) {
  memset(c, 0, sizeof *c);
  c->dtype = dtype;
  if (cap == 0) cap = 16;
  size_t b;
  int rc = rcl__mul_size(&b, cap, 8 + rcl_dtype_size(dtype), "matrix entries");
  if (rc) return rc;
  c->row = rcl__malloc(cap * sizeof(uint32_t));
  c->col = c->row ? rcl__malloc(cap * sizeof(uint32_t)) : NULL;
  c->val = c->col ? rcl__malloc(cap * rcl_dtype_size(dtype)) : NULL;
  if (!c->val) {
    rcl__coo_free(c);
    return RCL_ERR_OUT_OF_MEMORY;
  }
  c->cap = cap;
  return 0;
}

void rcl__coo_free(rcl_coo *c) {
  rcl__free(c->row);
  rcl__free(c->col);
  rcl__free(c->val);
  memset(c, 0, sizeof *c);
}

int rcl__coo_push(rcl_coo *c, uint32_t row, uint32_t col, const void *val) {
  size_t es = rcl_dtype_size(c->dtype);
  if (c->n == c->cap) {
    if (c->cap > SIZE_MAX / 2 / (8 + es)) return rcl__fail(RCL_ERR_OVERFLOW, "too many matrix entries");
    size_t cap = c->cap * 2;
    uint32_t *r = rcl__realloc(c->row, cap * sizeof *r);
    if (!r) return RCL_ERR_OUT_OF_MEMORY;
    c->row = r;
    uint32_t *k = rcl__realloc(c->col, cap * sizeof *k);
    if (!k) return RCL_ERR_OUT_OF_MEMORY;
    c->col = k;
    unsigned char *v = rcl__realloc(c->val, cap * es);
    if (!v) return RCL_ERR_OUT_OF_MEMORY;
    c->val = v;
    c->cap = cap;
  }
  c->row[c->n] = row;
  c->col[c->n] = col;
  memcpy(c->val + c->n * es, val, es);
  c->n++;
  return 0;
}

/* Sort keys of one row: (column, entry index); unique, so any correct sort gives one order. */
typedef struct {
  uint32_t col;
  size_t k;
} colkey;

static int cmp_colkey(const void *a, const void *b) {
  const colkey *x = a, *y = b;
  if (x->col != y->col) return x->col < y->col ? -1 : 1;
  return (x->k > y->k) - (x->k < y->k);
}

int rcl__csr_from_coo(rcl_csr **out, const rcl_coo *c, size_t nrows, size_t ncols) {
  *out = NULL;
  size_t n = c->n, es = rcl_dtype_size(c->dtype);
  uint64_t *rp = rcl__calloc(nrows + 2, sizeof *rp);
  colkey *keys = rp ? rcl__malloc((n ? n : 1) * sizeof *keys) : NULL;
  if (!keys) {
    rcl__free(rp);
    return RCL_ERR_OUT_OF_MEMORY;
  }
  /* Counting sort by row keeps entry order within a row; then each row is sorted by (column, index). */
  for (size_t k = 0; k < n; k++) rp[c->row[k] + 2]++;
  for (size_t i = 0; i < nrows; i++) rp[i + 2] += rp[i + 1];
  for (size_t k = 0; k < n; k++) {
    colkey *e = &keys[rp[c->row[k] + 1]++];
    e->col = c->col[k];
    e->k = k;
  }
  /* Now rp[i] is the start of row i. Count the distinct columns. */
  size_t unique = 0;
  for (size_t i = 0; i < nrows; i++) {
    colkey *row = keys + rp[i];
    size_t len = rp[i + 1] - rp[i];
    int sorted = 1;
    for (size_t j = 1; j < len && sorted; j++) sorted = row[j - 1].col < row[j].col;
    if (!sorted) qsort(row, len, sizeof *row, cmp_colkey);
    for (size_t j = 0; j < len; j++) unique += j == 0 || row[j].col != row[j - 1].col;
  }
  rcl_csr *A;
  int rc = rcl_csr_alloc(&A, c->dtype, nrows, ncols, unique);
  if (rc) {
    rcl__free(rp);
    rcl__free(keys);
    return rc;
  }
  size_t m = 0;
  for (size_t i = 0; i < nrows; i++) {
    A->row_ptr[i] = m;
    for (uint64_t j = rp[i]; j < rp[i + 1]; j++) {
      const unsigned char *v = c->val + keys[j].k * es;
      if (j > rp[i] && keys[j].col == keys[j - 1].col) {
        /* A duplicate: added to the running sum, in entry order, rounded in dtype. */
        if (c->dtype == RCL_F32) {
          float s, t;
          memcpy(&s, (unsigned char *)A->values + (m - 1) * es, 4);
          memcpy(&t, v, 4);
          s = s + t;
          memcpy((unsigned char *)A->values + (m - 1) * es, &s, 4);
        } else {
          double s, t;
          memcpy(&s, (unsigned char *)A->values + (m - 1) * es, 8);
          memcpy(&t, v, 8);
          s = s + t;
          memcpy((unsigned char *)A->values + (m - 1) * es, &s, 8);
        }
        continue;
      }
      A->col_idx[m] = keys[j].col;
      memcpy((unsigned char *)A->values + m * es, v, es);
      m++;
    }
  }
  A->row_ptr[nrows] = m;
  rcl__free(rp);
  rcl__free(keys);
  *out = A;
  return 0;
}

/* ---- the Jacobi preconditioner (for CG) ------------------------------------------------------------------ */

int rcl__csr_jacobi(rcl_csr **out, const rcl_csr *A) {
  *out = NULL;
  if (A->nrows != A->ncols)
    return rcl__fail(RCL_ERR_INVALID_ARG, "Jacobi: the matrix is %zu x %zu, not square", A->nrows, A->ncols);
  rcl_csr *D;
  int rc = rcl_csr_alloc(&D, A->dtype, A->nrows, A->ncols, A->nrows);
  if (rc) return rc;
  for (size_t i = 0; i < A->nrows; i++) {
    double d = 0;
    float df = 0;
    int have = 0;
    for (uint64_t k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
      if (A->col_idx[k] != i) continue;
      if (A->dtype == RCL_F32)
        df = have ? df + ((const float *)A->values)[k] : ((const float *)A->values)[k];
      else
        d = have ? d + ((const double *)A->values)[k] : ((const double *)A->values)[k];
      have = 1;
    }
    if (A->dtype == RCL_F32) d = df;
    if (!have || !(d > 0)) {
      rcl_csr_free(D);
      return rcl__fail(RCL_ERR_BREAKDOWN, "Jacobi: row %zu has %s diagonal%s: the matrix is not positive definite", i,
                       have ? "a non-positive" : "no", have ? " entry" : " entry (a zero diagonal)");
    }
    D->row_ptr[i] = i;
    D->col_idx[i] = (uint32_t)i;
    if (A->dtype == RCL_F32)
      ((float *)D->values)[i] = 1.0f / df; /* one correctly rounded division */
    else
      ((double *)D->values)[i] = 1.0 / d;
  }
  D->row_ptr[A->nrows] = A->nrows;
  *out = D;
  return 0;
}
