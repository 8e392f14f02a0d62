/* A block of a CSR matrix's rows as a matrix of its own, for splitting a matrix over devices
 * (src/split/split_sparse.c) and MPI ranks: the rows keep their values and stored order, their columns are
 * renumbered into a compressed vector (halo before, the owned columns, halo after), with the map back to
 * global columns. And the cut of the rows into parts by non-zeros and weights. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sparse/sparse_internal.h"

void rcl__csr_local_free(rcl_csr_local *L) {
  if (!L) return;
  rcl_csr_free(L->A);
  rcl__free(L->halo);
  memset(L, 0, sizeof *L);
}

/* map[c] = 1 for every column outside [c0, c1) that rows [r0, r1) reference; the count of such columns. */
static size_t mark_halo(uint32_t *map, const rcl_csr *A, size_t r0, size_t r1, size_t c0, size_t c1) {
  size_t count = 0;
  for (uint64_t k = A->row_ptr[r0]; k < A->row_ptr[r1]; k++) {
    uint32_t c = A->col_idx[k];
    if ((c < c0 || c >= c1) && !map[c]) {
      map[c] = 1;
      count++;
    }
  }
  return count;
}

/* Numbers the marked columns in order: map[c] = 1 + their place in the compressed vector; fills L->halo. */
static void number_halo(uint32_t *map, rcl_csr_local *L, size_t ncols) {
  size_t h = 0, own = L->c1 - L->c0;
  for (size_t c = 0; c < L->c0; c++)
    if (map[c]) {
      L->halo[h] = (uint32_t)c;
      map[c] = (uint32_t)(h++ + 1);
    }
  L->nbefore = h;
  for (size_t c = L->c1; c < ncols; c++)
    if (map[c]) {
      L->halo[h] = (uint32_t)c;
      map[c] = (uint32_t)(h++ + own + 1);
    }
  L->nafter = h - L->nbefore;
}

static void fill_local(rcl_csr_local *L, const rcl_csr *A, const uint32_t *map) {
  uint64_t base = A->row_ptr[L->r0];
  size_t es = rcl_dtype_size(A->dtype), nnz = L->A->nnz;
  for (size_t i = 0; i <= L->r1 - L->r0; i++) L->A->row_ptr[i] = A->row_ptr[L->r0 + i] - base;
  for (size_t k = 0; k < nnz; k++) {
    uint32_t c = A->col_idx[base + k];
    L->A->col_idx[k] = c >= L->c0 && c < L->c1 ? (uint32_t)(c - L->c0 + L->nbefore) : map[c] - 1;
  }
  if (nnz) memcpy(L->A->values, (const unsigned char *)A->values + base * es, nnz * es);
}

int rcl__csr_local(rcl_csr_local *out, const rcl_csr *A, size_t r0, size_t r1, size_t c0, size_t c1) {
  memset(out, 0, sizeof *out);
  if (r0 > r1 || r1 > A->nrows)
    return rcl__fail(RCL_ERR_INVALID_ARG, "CSR rows [%zu, %zu) are not inside the matrix's %zu rows", r0, r1, A->nrows);
  if (c0 > c1 || c1 > A->ncols)
    return rcl__fail(RCL_ERR_INVALID_ARG, "owned columns [%zu, %zu) are not inside the matrix's %zu columns", c0, c1,
                     A->ncols);
  uint32_t *map = rcl__calloc(A->ncols ? A->ncols : 1, sizeof *map);
  if (!map) return RCL_ERR_OUT_OF_MEMORY;
  out->r0 = r0, out->r1 = r1, out->c0 = c0, out->c1 = c1;
  size_t nh = mark_halo(map, A, r0, r1, c0, c1);
  out->halo = rcl__malloc((nh ? nh : 1) * sizeof *out->halo);
  int rc = out->halo ? 0 : RCL_ERR_OUT_OF_MEMORY;
  if (!rc) number_halo(map, out, A->ncols);
  if (!rc)
    rc = rcl_csr_alloc(&out->A, A->dtype, r1 - r0, out->nbefore + (c1 - c0) + out->nafter,
                       (size_t)(A->row_ptr[r1] - A->row_ptr[r0]));
  if (!rc) fill_local(out, A, map);
  rcl__free(map);
  if (rc) rcl__csr_local_free(out);
  return rc;
}

void rcl__csr_local_gather_halo(void *halo, const rcl_csr_local *L, const void *x) {
  size_t es = rcl_dtype_size(L->A->dtype), nh = L->nbefore + L->nafter;
  unsigned char *h = halo;
  const unsigned char *xs = x;
  for (size_t k = 0; k < nh; k++) memcpy(h + k * es, xs + (size_t)L->halo[k] * es, es);
}

void rcl__csr_local_gather(void *xe, const rcl_csr_local *L, const void *x) {
  size_t es = rcl_dtype_size(L->A->dtype), own = L->c1 - L->c0;
  unsigned char *e = xe;
  const unsigned char *xs = x;
  for (size_t k = 0; k < L->nbefore; k++) memcpy(e + k * es, xs + (size_t)L->halo[k] * es, es);
  if (own) memcpy(e + L->nbefore * es, xs + L->c0 * es, own * es);
  for (size_t k = 0; k < L->nafter; k++)
    memcpy(e + (L->nbefore + own + k) * es, xs + (size_t)L->halo[L->nbefore + k] * es, es);
}

/* ---- the cut of the rows ------------------------------------------------------------------------------ */

/* The first row r with cost(r) = row_ptr[r] + r >= target. */
static size_t row_at_cost(const rcl_csr *A, double target) {
  size_t lo = 0, hi = A->nrows;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if ((double)(A->row_ptr[mid] + mid) >= target)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

int rcl__csr_row_bounds(size_t *bounds, const rcl_csr *A, const double *weights, size_t count, size_t granule) {
  if (count == 0 || granule == 0)
    return rcl__fail(RCL_ERR_INVALID_ARG, "CSR row cut: %zu parts, granule %zu", count, granule);
  double total = 0;
  for (size_t i = 0; i < count; i++) {
    if (!(weights[i] >= 0) || isinf(weights[i]))
      return rcl__fail(RCL_ERR_INVALID_ARG, "CSR row cut: weight %zu is %g (weights are finite and >= 0)", i,
                       weights[i]);
    total += weights[i];
  }
  if (!(total > 0)) return rcl__fail(RCL_ERR_INVALID_ARG, "CSR row cut: every weight is 0");
  size_t n = A->nrows;
  double cost = (double)(A->row_ptr[n] + n), acc = 0;
  bounds[0] = 0;
  for (size_t i = 1; i < count; i++) {
    acc += weights[i - 1];
    size_t r = row_at_cost(A, cost * (acc / total));
    size_t b = r >= n ? n : (size_t)floor((double)r / (double)granule + 0.5) * granule;
    if (b > n) b = n;
    bounds[i] = b < bounds[i - 1] ? bounds[i - 1] : b;
  }
  bounds[count] = n;
  for (size_t i = 0; i < count; i++) /* a part of weight 0 gets nothing, even where rounding would give it rows */
    if (weights[i] == 0 && i + 1 < count) bounds[i + 1] = bounds[i];
  return 0;
}
