/* Host references of the reduction contracts (docs/contracts.md): plain C compiled with
 * -ffp-contract=off for "reduce.ordered" and "blas1", and the shared superaccumulator code of
 * cl/rcl_exact.cl for "reduce.exact". */
#include <math.h>
#include <string.h>

#include "core/portable_host.h"
#include "rcl_softfloat.cl"
#include "rcl_exact.cl"

#include "core/internal.h"
#include "reduce/reduce_internal.h"

#define RED_L 64u
#define RED_B (64u * 32u)

static uint32_t canon_f32(float x) {
  uint32_t u = RCL_F32_TO_BITS(x);
  return rcl_sf_isnan_bits(u) ? RCL_F32_QNAN : u;
}
static uint64_t canon_f64(double x) {
  uint64_t u = RCL_F64_TO_BITS(x);
  return (u << 1) > 0xffe0000000000000u ? 0x7ff8000000000000u : u;
}

/* The ordered contract for one element type: lane sums, then the level-by-level pairwise tree. */
#define ORDERED_REF(NAME, T)                                                                                           \
  static int NAME(T *out, size_t n, const T *x, const T *y) {                                                          \
    size_t rest = n % RED_B, nleaves = (n / RED_B) * RED_L + (rest < RED_L ? rest : RED_L);                            \
    if (n == 0) {                                                                                                      \
      *out = (T)0;                                                                                                     \
      return 0;                                                                                                        \
    }                                                                                                                  \
    T *s = rcl__malloc(nleaves * sizeof(T));                                                                           \
    if (!s) return RCL_ERR_OUT_OF_MEMORY;                                                                              \
    size_t leaf = 0;                                                                                                   \
    for (size_t b = 0; b * RED_B < n; b++)                                                                             \
      for (size_t l = 0; l < RED_L && b * RED_B + l < n; l++) {                                                        \
        size_t end = (b + 1) * RED_B < n ? (b + 1) * RED_B : n, i = b * RED_B + l;                                     \
        T acc = y ? x[i] * y[i] : x[i];                                                                                \
        for (i += RED_L; i < end; i += RED_L) acc = acc + (y ? x[i] * y[i] : x[i]);                                    \
        s[leaf++] = acc;                                                                                               \
      }                                                                                                                \
    for (size_t m = nleaves; m > 1; m = (m + 1) / 2)                                                                   \
      for (size_t k = 0; k < m / 2 + m % 2; k++) s[k] = 2 * k + 1 < m ? s[2 * k] + s[2 * k + 1] : s[2 * k];            \
    *out = s[0];                                                                                                       \
    rcl__free(s);                                                                                                      \
    return 0;                                                                                                          \
  }
ORDERED_REF(ordered_f32, float)
ORDERED_REF(ordered_f64, double)

/* Carry-normalises slots so each digit is < 2^32 again (the top one keeps the sign): lets the host
 * accumulator take any number of terms. The normalised form of a value is unique. */
void rcl__xacc_normalize(int64_t *s, int nd) {
  rcl_i64 carry = 0;
  for (int k = 0; k < nd; k++) {
    rcl_i64 v = s[k] + carry, lo = v & 0xffffffff;
    carry = (v - lo) / ((rcl_i64)1 << 32);
    s[k] = (k + 1 < nd) ? lo : v;
  }
}

int rcl__xacc_digits(rcl_dtype dt, int dot) {
  return dt == RCL_F64 ? (dot ? RCL_XACC_F64_DOT_DIGITS : RCL_XACC_F64_SUM_DIGITS)
                       : (dot ? RCL_XACC_F32_DOT_DIGITS : RCL_XACC_F32_SUM_DIGITS);
}

void rcl__xacc_accumulate(int64_t *s, uint32_t *flags, rcl_dtype dt, int dot, size_t n, const void *x, const void *y) {
  int is64 = dt == RCL_F64, nd = rcl__xacc_digits(dt, dot);
  for (size_t i = 0; i < n; i++) {
    rcl_xterm t;
    if (is64) {
      rcl_u64 a, b = 0;
      memcpy(&a, (const char *)x + 8 * i, 8);
      if (dot) memcpy(&b, (const char *)y + 8 * i, 8); /* y is NULL for sums */
      t = dot ? rcl_xterm_f64_prod(a, b) : rcl_xterm_f64(a);
    } else {
      rcl_u32 a, b = 0;
      memcpy(&a, (const char *)x + 4 * i, 4);
      if (dot) memcpy(&b, (const char *)y + 4 * i, 4);
      t = dot ? rcl_xterm_f32_prod(a, b) : rcl_xterm_f32(a);
    }
    *flags |= t.flags;
    rcl_i32 d;
    rcl_u64 c[5];
    rcl_xterm_chunks(t, &d, c);
    for (int j = 0; j < 5 && d + j < nd; j++) s[d + j] += t.neg ? -(rcl_i64)c[j] : (rcl_i64)c[j];
    if ((i + 1) % (RCL_XACC_MAX_TERMS_PER_SLOT / 2) == 0) rcl__xacc_normalize(s, nd);
  }
  rcl__xacc_normalize(s, nd);
}

void rcl__xacc_round(void *out, int64_t *s, uint32_t flags, rcl_dtype dt, int dot) {
  int is64 = dt == RCL_F64;
  int base = is64 ? (dot ? RCL_XACC_F64_DOT_BASE : RCL_XACC_F64_SUM_BASE)
                  : (dot ? RCL_XACC_F32_DOT_BASE : RCL_XACC_F32_SUM_BASE);
  rcl_u64 bits = rcl_xacc_result_bits(s, rcl__xacc_digits(dt, dot), base, flags, is64);
  if (is64)
    memcpy(out, &bits, 8);
  else {
    rcl_u32 b32 = (rcl_u32)bits;
    memcpy(out, &b32, 4);
  }
}

static int exact_ref(void *out, rcl_dtype dt, int dot, size_t n, const void *x, const void *y) {
  if (n == 0) { /* the empty sum is +0 */
    memset(out, 0, rcl_dtype_size(dt));
    return 0;
  }
  rcl_i64 *s = rcl__calloc((size_t)rcl__xacc_digits(dt, dot), sizeof *s);
  if (!s) return RCL_ERR_OUT_OF_MEMORY;
  rcl_u32 flags = 0;
  rcl__xacc_accumulate(s, &flags, dt, dot, n, x, y);
  rcl__xacc_round(out, s, flags, dt, dot);
  rcl__free(s);
  return 0;
}

int rcl_ref_reduce(void *out, rcl_reduce_op op, rcl_dtype dt, rcl_reduce_mode mode, size_t n, const void *x,
                   const void *y) {
  if (!out || (n > 0 && !x) || (n > 0 && op == RCL_OP_DOT && !y))
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_ref_reduce: NULL argument");
  if (rcl_dtype_size(dt) == 0 || (unsigned)op > RCL_OP_NRM2 || (mode != RCL_REDUCE_ORDERED && mode != RCL_REDUCE_EXACT))
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_ref_reduce: bad dtype, op or mode");
  const void *yy = op == RCL_OP_SUM ? NULL : op == RCL_OP_NRM2 ? x : y;
  int rc;
  if (dt == RCL_F32) {
    float r;
    rc = mode == RCL_REDUCE_EXACT ? exact_ref(&r, dt, op != RCL_OP_SUM, n, x, yy) : ordered_f32(&r, n, x, yy);
    if (rc) return rc;
    if (op == RCL_OP_NRM2) r = sqrtf(r);
    uint32_t u = canon_f32(r);
    memcpy(out, &u, 4);
  } else {
    double r;
    rc = mode == RCL_REDUCE_EXACT ? exact_ref(&r, dt, op != RCL_OP_SUM, n, x, yy) : ordered_f64(&r, n, x, yy);
    if (rc) return rc;
    if (op == RCL_OP_NRM2) r = sqrt(r);
    uint64_t u = canon_f64(r);
    memcpy(out, &u, 8);
  }
  return 0;
}

void rcl_ref_axpy(void *y, rcl_dtype dt, size_t n, const void *alpha, const void *x) {
  if (dt == RCL_F32) {
    float a, *yy = y;
    const float *xx = x;
    memcpy(&a, alpha, 4);
    for (size_t i = 0; i < n; i++) {
      float prod = a * xx[i];
      uint32_t u = canon_f32(prod + yy[i]);
      memcpy(&yy[i], &u, 4);
    }
  } else if (dt == RCL_F64) {
    double a, *yy = y;
    const double *xx = x;
    memcpy(&a, alpha, 8);
    for (size_t i = 0; i < n; i++) {
      double prod = a * xx[i];
      uint64_t u = canon_f64(prod + yy[i]);
      memcpy(&yy[i], &u, 8);
    }
  }
}

void rcl_ref_scal(void *x, rcl_dtype dt, size_t n, const void *alpha) {
  if (dt == RCL_F32) {
    float a, *xx = x;
    memcpy(&a, alpha, 4);
    for (size_t i = 0; i < n; i++) {
      uint32_t u = canon_f32(a * xx[i]);
      memcpy(&xx[i], &u, 4);
    }
  } else if (dt == RCL_F64) {
    double a, *xx = x;
    memcpy(&a, alpha, 8);
    for (size_t i = 0; i < n; i++) {
      uint64_t u = canon_f64(a * xx[i]);
      memcpy(&xx[i], &u, 8);
    }
  }
}
