/* Host reference of the SpMV contracts (docs/contracts.md (§6), "spmv.ordered" and "spmv.exact"):
 * plain C compiled with -ffp-contract=off, and for the exact contract the superaccumulator of
 * cl/rcl_exact.cl compiled for the host. */
#include <string.h>

#include "core/portable_host.h"
#include "rcl_softfloat.cl"
#include "rcl_exact.cl"

#include "sparse/sparse_internal.h"

/* Carry-normalises digits (each < 2^32, the top one signed) so any number of terms fits. */
static void normalize(rcl_i64 *s, int nd) {
  rcl_i64 carry = 0;
  for (int k = 0; k < nd; k++) {
    rcl_i64 v = s[k] + carry, lo = v & 0xffffffff;
    carry = (v - lo) / ((rcl_i64)1 << 32);
    s[k] = (k + 1 < nd) ? lo : v;
  }
}

/* The exact row sum: +0 plus every product, exactly, rounded once (the +0 makes an all -0 row +0). */
static rcl_u64 exact_row(const rcl_csr *A, size_t i, const void *x, rcl_i64 *s) {
  int f64 = A->dtype == RCL_F64;
  int nd = f64 ? RCL_XACC_F64_DOT_DIGITS : RCL_XACC_F32_DOT_DIGITS;
  int base = f64 ? RCL_XACC_F64_DOT_BASE : RCL_XACC_F32_DOT_BASE;
  memset(s, 0, (size_t)nd * sizeof *s);
  rcl_u32 flags = RCL_XF_NOT_NEGZERO;
  uint64_t n = 0;
  for (uint64_t k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
    rcl_xterm t;
    if (f64) {
      rcl_u64 a, b;
      memcpy(&a, (const char *)A->values + 8 * k, 8);
      memcpy(&b, (const char *)x + 8 * (size_t)A->col_idx[k], 8);
      t = rcl_xterm_f64_prod(a, b);
    } else {
      rcl_u32 a, b;
      memcpy(&a, (const char *)A->values + 4 * k, 4);
      memcpy(&b, (const char *)x + 4 * (size_t)A->col_idx[k], 4);
      t = rcl_xterm_f32_prod(a, b);
    }
    flags |= t.flags;
    rcl_i32 d;
    rcl_u64 c[5];
    rcl_xterm_chunks(t, &d, c);
    for (int j = 0; j < 5 && d + j < nd; j++) s[d + j] += t.neg ? -(rcl_i64)c[j] : (rcl_i64)c[j];
    if (++n % (RCL_XACC_MAX_TERMS_PER_SLOT / 2) == 0) normalize(s, nd);
  }
  normalize(s, nd);
  return rcl_xacc_result_bits(s, nd, base, flags, f64);
}

int rcl_ref_spmv(void *y, const rcl_csr *A, rcl_spmv_contract contract, const void *alpha, const void *x,
                 const void *beta) {
  int rc = rcl_csr_validate(A);
  if (rc) return rc;
  if (!alpha || !beta || (A->nrows && !y) || (A->ncols && !x))
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_ref_spmv: NULL y, x, alpha or beta");
  if (contract != RCL_SPMV_ORDERED && contract != RCL_SPMV_EXACT)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_ref_spmv: unknown contract %d", (int)contract);
  int bz = rcl__real_is_zero(beta, A->dtype);
  rcl_i64 *s = NULL;
  if (contract == RCL_SPMV_EXACT && !(s = rcl__malloc(RCL_XACC_MAX_DIGITS * sizeof *s))) return RCL_ERR_OUT_OF_MEMORY;
  if (A->dtype == RCL_F32) {
    float a, b, *yy = y;
    const float *xx = x, *v = A->values;
    memcpy(&a, alpha, 4);
    memcpy(&b, beta, 4);
    for (size_t i = 0; i < A->nrows; i++) {
      float sum = 0.0f;
      if (contract == RCL_SPMV_ORDERED) {
        for (uint64_t k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
          float p = v[k] * xx[A->col_idx[k]];
          sum = sum + p;
        }
      } else {
        sum = RCL_BITS_TO_F32((rcl_u32)exact_row(A, i, x, s));
      }
      float t = a * sum;
      if (!bz) {
        float u = b * yy[i];
        t = t + u;
      }
      rcl_u32 bits = RCL_F32_TO_BITS(t);
      if (rcl_sf_isnan_bits(bits)) bits = RCL_F32_QNAN;
      memcpy(&yy[i], &bits, 4);
    }
  } else {
    double a, b, *yy = y;
    const double *xx = x, *v = A->values;
    memcpy(&a, alpha, 8);
    memcpy(&b, beta, 8);
    for (size_t i = 0; i < A->nrows; i++) {
      double sum = 0.0;
      if (contract == RCL_SPMV_ORDERED) {
        for (uint64_t k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
          double p = v[k] * xx[A->col_idx[k]];
          sum = sum + p;
        }
      } else {
        sum = RCL_BITS_TO_F64(exact_row(A, i, x, s));
      }
      double t = a * sum;
      if (!bz) {
        double u = b * yy[i];
        t = t + u;
      }
      rcl_u64 bits = RCL_F64_TO_BITS(t);
      if ((bits << 1) > 0xffe0000000000000u) bits = 0x7ff8000000000000u;
      memcpy(&yy[i], &bits, 8);
    }
  }
  rcl__free(s);
  return 0;
}
