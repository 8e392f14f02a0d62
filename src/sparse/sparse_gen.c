/* Deterministic sparse matrix generators. Only integer arithmetic and exactly rounded operations
 * (one division, one conversion to dtype), so a seed gives the same matrix bytes on every machine. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sparse/sparse_internal.h"

static void put(rcl_csr *A, size_t k, double v) {
  if (A->dtype == RCL_F32)
    ((float *)A->values)[k] = (float)v;
  else
    ((double *)A->values)[k] = v;
}

int rcl_csr_poisson2d(rcl_csr **out, rcl_dtype dt, size_t n) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_csr_poisson2d: NULL output");
  *out = NULL;
  if (n > 65535)
    return rcl__fail(RCL_ERR_INVALID_ARG, "poisson2d: n = %zu gives more than %u rows (n <= 65535)", n,
                     RCL_CSR_MAX_DIM);
  size_t N = n * n, nnz = n ? 5 * N - 4 * n : 0;
  rcl_csr *A;
  int rc = rcl_csr_alloc(&A, dt, N, N, nnz);
  if (rc) return rc;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      size_t r = i * n + j;
      A->row_ptr[r] = k;
      /* neighbours in increasing column order */
      if (i > 0) A->col_idx[k] = (uint32_t)(r - n), put(A, k++, -1.0);
      if (j > 0) A->col_idx[k] = (uint32_t)(r - 1), put(A, k++, -1.0);
      A->col_idx[k] = (uint32_t)r, put(A, k++, 4.0);
      if (j + 1 < n) A->col_idx[k] = (uint32_t)(r + 1), put(A, k++, -1.0);
      if (i + 1 < n) A->col_idx[k] = (uint32_t)(r + n), put(A, k++, -1.0);
    }
  A->row_ptr[N] = k;
  *out = A;
  return 0;
}

int rcl_csr_poisson3d(rcl_csr **out, rcl_dtype dt, size_t n) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_csr_poisson3d: NULL output");
  *out = NULL;
  if (n > 1625)
    return rcl__fail(RCL_ERR_INVALID_ARG, "poisson3d: n = %zu gives more than %u rows (n <= 1625)", n, RCL_CSR_MAX_DIM);
  size_t N = n * n * n, nn = n * n, nnz = n ? 7 * N - 6 * nn : 0;
  rcl_csr *A;
  int rc = rcl_csr_alloc(&A, dt, N, N, nnz);
  if (rc) return rc;
  size_t k = 0;
  for (size_t z = 0; z < n; z++)
    for (size_t y = 0; y < n; y++)
      for (size_t x = 0; x < n; x++) {
        size_t r = (z * n + y) * n + x;
        A->row_ptr[r] = k;
        if (z > 0) A->col_idx[k] = (uint32_t)(r - nn), put(A, k++, -1.0);
        if (y > 0) A->col_idx[k] = (uint32_t)(r - n), put(A, k++, -1.0);
        if (x > 0) A->col_idx[k] = (uint32_t)(r - 1), put(A, k++, -1.0);
        A->col_idx[k] = (uint32_t)r, put(A, k++, 6.0);
        if (x + 1 < n) A->col_idx[k] = (uint32_t)(r + 1), put(A, k++, -1.0);
        if (y + 1 < n) A->col_idx[k] = (uint32_t)(r + n), put(A, k++, -1.0);
        if (z + 1 < n) A->col_idx[k] = (uint32_t)(r + nn), put(A, k++, -1.0);
      }
  A->row_ptr[N] = k;
  *out = A;
  return 0;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* k distinct sorted values in [0, m) (k <= m), drawn by rejection: draw, sort, drop repeats, repeat for
 * the missing ones. tmp holds at least k values. */
static size_t distinct(uint32_t *v, size_t k, uint64_t m, rcl_rng *g) {
  size_t have = 0;
  while (have < k) {
    for (size_t i = have; i < k; i++) v[i] = (uint32_t)(rcl_rng_next(g) % m);
    qsort(v, k, sizeof *v, cmp_u32);
    have = 0;
    for (size_t i = 0; i < k; i++)
      if (i == 0 || v[i] != v[have - 1]) v[have++] = v[i];
  }
  return have;
}

/* The columns of one row: len distinct columns of ncols, sorted. For dense rows the excluded columns are
 * drawn instead, so the cost stays proportional to the row. scratch holds ncols values. */
static void row_columns(uint32_t *cols, size_t len, size_t ncols, rcl_rng *g, uint32_t *scratch) {
  if (len * 2 <= ncols) {
    distinct(cols, len, ncols, g);
    return;
  }
  size_t skip = ncols - len, s = 0, m = 0;
  if (skip) distinct(scratch, skip, ncols, g);
  for (size_t c = 0; c < ncols; c++) {
    if (s < skip && scratch[s] == c) {
      s++;
      continue;
    }
    cols[m++] = (uint32_t)c;
  }
}

/* Fills A (row_ptr already set) with random columns and values. */
static int fill_random(rcl_csr *A, uint64_t seed) {
  rcl_rng g = {seed ^ 0x5851f42d4c957f2du};
  uint32_t *scratch = rcl__malloc((A->ncols ? A->ncols : 1) * sizeof *scratch);
  if (!scratch) return RCL_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < A->nrows; i++) {
    size_t k0 = A->row_ptr[i], len = A->row_ptr[i + 1] - k0;
    row_columns(A->col_idx + k0, len, A->ncols, &g, scratch);
    for (size_t k = k0; k < k0 + len; k++) put(A, k, 2.0 * rcl_rng_uniform(&g) - 1.0); /* exact in double */
  }
  rcl__free(scratch);
  return 0;
}

int rcl_csr_random(rcl_csr **out, rcl_dtype dt, size_t nrows, size_t ncols, size_t per_row, uint64_t seed) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_csr_random: NULL output");
  *out = NULL;
  size_t k = per_row < ncols ? per_row : ncols, nnz;
  int rc = rcl__mul_size(&nnz, nrows, k, "random matrix entries");
  rcl_csr *A;
  if (!rc) rc = rcl_csr_alloc(&A, dt, nrows, ncols, nnz);
  if (rc) return rc;
  for (size_t i = 0; i <= nrows; i++) A->row_ptr[i] = (uint64_t)i * k;
  rc = fill_random(A, seed);
  if (rc) {
    rcl_csr_free(A);
    return rc;
  }
  *out = A;
  return 0;
}

int rcl_csr_powerlaw(rcl_csr **out, rcl_dtype dt, size_t nrows, size_t ncols, size_t min_len, uint64_t seed) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_csr_powerlaw: NULL output");
  *out = NULL;
  if (min_len == 0 || min_len > (1u << 30))
    return rcl__fail(RCL_ERR_INVALID_ARG, "powerlaw: min_len %zu must be in 1..2^30", min_len);
  if (nrows > RCL_CSR_MAX_DIM || ncols > RCL_CSR_MAX_DIM)
    return rcl__fail(RCL_ERR_INVALID_ARG, "powerlaw: %zu x %zu exceeds the limit of %u rows and columns", nrows, ncols,
                     RCL_CSR_MAX_DIM);
  uint64_t *len = rcl__malloc((nrows + 1) * sizeof *len);
  if (!len) return RCL_ERR_OUT_OF_MEMORY;
  rcl_rng g = {seed};
  size_t nnz = 0;
  int rc = 0;
  for (size_t i = 0; i < nrows; i++) {
    double u = (double)((rcl_rng_next(&g) >> 11) + 1) * 0x1.0p-53; /* (0, 1], exact */
    double l = floor((double)min_len / u);                         /* one correctly rounded division */
    len[i] = l >= (double)ncols ? ncols : (uint64_t)l;
    if (nnz > SIZE_MAX - len[i]) rc = rcl__fail(RCL_ERR_OVERFLOW, "powerlaw: too many entries");
    nnz += len[i];
  }
  rcl_csr *A = NULL;
  if (!rc) rc = rcl_csr_alloc(&A, dt, nrows, ncols, nnz);
  if (!rc) {
    A->row_ptr[0] = 0;
    for (size_t i = 0; i < nrows; i++) A->row_ptr[i + 1] = A->row_ptr[i] + len[i];
    rc = fill_random(A, seed);
  }
  rcl__free(len);
  if (rc) {
    rcl_csr_free(A);
    return rc;
  }
  *out = A;
  return 0;
}

/* ---- spec strings ------------------------------------------------------------------------------------ */

static int spec_num(uint64_t *v, const char **p, const char *spec, const char *what) {
  const char *s = *p;
  uint64_t x = 0;
  if (*s < '0' || *s > '9') return rcl__fail(RCL_ERR_INVALID_ARG, "--gen \"%s\": expected %s at \"%s\"", spec, what, s);
  for (; *s >= '0' && *s <= '9'; s++) {
    if (x > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
      return rcl__fail(RCL_ERR_INVALID_ARG, "--gen \"%s\": %s is too large", spec, what);
    x = x * 10 + (uint64_t)(*s - '0');
  }
  *v = x;
  *p = s;
  return 0;
}

int rcl_csr_generate(rcl_csr **out, rcl_dtype dt, const char *spec) {
  if (!out || !spec) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_csr_generate: NULL argument");
  *out = NULL;
  const char *colon = strchr(spec, ':');
  if (!colon)
    return rcl__fail(RCL_ERR_INVALID_ARG,
                     "--gen \"%s\": expected poisson2d:N, poisson3d:N, random:ROWS[xCOLS]:PERROW[:SEED] or "
                     "powerlaw:ROWS[xCOLS]:MINLEN[:SEED]",
                     spec);
  size_t kl = (size_t)(colon - spec);
  const char *p = colon + 1;
  uint64_t a = 0, cols = 0, b = 0, seed = 1;
  int rc;
  if ((kl == 9 && !strncmp(spec, "poisson2d", 9)) || (kl == 9 && !strncmp(spec, "poisson3d", 9))) {
    if ((rc = spec_num(&a, &p, spec, "the grid size N")) != 0) return rc;
    if (*p) return rcl__fail(RCL_ERR_INVALID_ARG, "--gen \"%s\": unexpected \"%s\"", spec, p);
    return spec[7] == '2' ? rcl_csr_poisson2d(out, dt, (size_t)a) : rcl_csr_poisson3d(out, dt, (size_t)a);
  }
  int random = kl == 6 && !strncmp(spec, "random", 6), power = kl == 8 && !strncmp(spec, "powerlaw", 8);
  if (!random && !power)
    return rcl__fail(RCL_ERR_INVALID_ARG,
                     "--gen \"%s\": unknown generator \"%.*s\" (poisson2d, poisson3d, random, powerlaw)", spec, (int)kl,
                     spec);
  if ((rc = spec_num(&a, &p, spec, "the row count")) != 0) return rc;
  cols = a;
  if (*p == 'x' && ((++p, rc = spec_num(&cols, &p, spec, "the column count")) != 0)) return rc;
  if (*p != ':')
    return rcl__fail(RCL_ERR_INVALID_ARG, "--gen \"%s\": expected \":%s\" after the size", spec,
                     random ? "PERROW" : "MINLEN");
  p++;
  if ((rc = spec_num(&b, &p, spec, random ? "entries per row" : "the minimum row length")) != 0) return rc;
  if (*p == ':' && ((++p, rc = spec_num(&seed, &p, spec, "the seed")) != 0)) return rc;
  if (*p) return rcl__fail(RCL_ERR_INVALID_ARG, "--gen \"%s\": unexpected \"%s\"", spec, p);
  if (a > RCL_CSR_MAX_DIM || cols > RCL_CSR_MAX_DIM)
    return rcl__fail(RCL_ERR_INVALID_ARG, "--gen \"%s\": more than %u rows or columns", spec, RCL_CSR_MAX_DIM);
  return random ? rcl_csr_random(out, dt, (size_t)a, (size_t)cols, (size_t)b, seed)
                : rcl_csr_powerlaw(out, dt, (size_t)a, (size_t)cols, (size_t)b, seed);
}
