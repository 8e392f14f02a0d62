/* The flat form of a part (reduce_partial.h): fixed size, no pointers, merged without allocating, so that
 * MPI_Allreduce with a user operation joins every rank's part in one collective (src/mpi/mpi_reduce.c). Words:
 * w[0] held | op << 8 | dtype << 16 | mode << 24 | flags << 32; total, first, n; then exact: lo | hi << 32 and
 * the window's digits; ordered: count | budget << 32 and the nodes (index << 8 | level, value bits). Ordered
 * merges are rcl_partial_merge's on a part that lives on the stack: no cut block, so no terms, no allocation. */
#include <string.h>

#include "reduce/reduce_partial.h"

enum { W_KIND, W_TOTAL, W_FIRST, W_N, W_SHAPE, DATA = RCL_FLAT_WORDS - RCL_FLAT_HEAD };

static uint64_t kind_word(const rcl_partial *p) {
  return 1u | (uint64_t)p->op << 8 | (uint64_t)p->dtype << 16 | (uint64_t)p->mode << 24 | (uint64_t)p->flags << 32;
}

/* The exact part's digits, balanced, into the window of f (held cleared where it does not fit). */
static void flatten_exact(rcl_partial_flat *f, const rcl_partial *p) {
  int64_t d[RCL_XACC_MAX_DIGITS_HOST], carry = 0;
  int lo = p->nd, hi = 0, k0 = 0;
  while (k0 < p->nd && !p->digits[k0]) k0++; /* below: 0, no carry */
  for (int k = k0; k < p->nd; k++) {
    int64_t v = p->digits[k] + carry, b = v;
    if (k + 1 < p->nd) b = (int64_t)(((uint64_t)v + 0x80000000u) & 0xffffffffu) - 0x80000000;
    carry = (v - b) / ((int64_t)1 << 32);
    d[k] = b;
    if (b) lo = lo < k ? lo : k, hi = k + 1;
  }
  if (hi < lo) lo = hi = 0;
  if (hi - lo > DATA) {
    f->w[W_KIND] = 0;
    return;
  }
  f->w[W_SHAPE] = (uint64_t)lo | (uint64_t)hi << 32;
  for (int k = lo; k < hi; k++) f->w[RCL_FLAT_HEAD + k - lo] = (uint64_t)d[k];
}

/* The ordered part's nodes (count, budget) into f, held cleared where they do not fit. */
static void flatten_ordered(rcl_partial_flat *f, const rcl_partial *p, uint64_t budget) {
  if (p->head.count || p->tail.count || budget > DATA / 2 || p->nnodes > budget) {
    f->w[W_KIND] = 0;
    return;
  }
  f->w[W_SHAPE] = p->nnodes | budget << 32;
  for (size_t i = 0; i < p->nnodes; i++) {
    f->w[RCL_FLAT_HEAD + 2 * i] = p->nodes[i].index << 8 | p->nodes[i].level;
    f->w[RCL_FLAT_HEAD + 2 * i + 1] = p->nodes[i].bits;
  }
}

static void flatten_budget(rcl_partial_flat *f, const rcl_partial *p, uint64_t budget) {
  memset(f, 0, sizeof *f);
  if (!p) return;
  f->w[W_KIND] = kind_word(p);
  f->w[W_TOTAL] = p->total;
  f->w[W_FIRST] = p->first;
  f->w[W_N] = p->n;
  if (p->mode == RCL_REDUCE_EXACT)
    flatten_exact(f, p);
  else
    flatten_ordered(f, p, budget);
}

void rcl__partial_flatten(rcl_partial_flat *f, const rcl_partial *p) { flatten_budget(f, p, p ? p->nnodes : 0); }

/* p (memory of the caller, nd digits in digits[], normalised) = the part f holds, over [first, first + n). */
static void unflatten(rcl_partial *p, int64_t *digits, const rcl_partial_flat *f, uint64_t first, uint64_t n) {
  const uint64_t *w = f->w;
  memset(p, 0, sizeof *p);
  p->op = (rcl_reduce_op)(w[W_KIND] >> 8 & 0xff);
  p->dtype = (rcl_dtype)(w[W_KIND] >> 16 & 0xff);
  p->mode = (rcl_reduce_mode)(w[W_KIND] >> 24 & 0xff);
  p->flags = (uint32_t)(w[W_KIND] >> 32);
  p->total = (size_t)w[W_TOTAL];
  p->first = (size_t)first;
  p->n = (size_t)n;
  p->digits = digits;
  if (p->mode == RCL_REDUCE_EXACT) {
    p->nd = rcl__xacc_digits(p->dtype, p->op != RCL_OP_SUM);
    memset(digits, 0, (size_t)p->nd * sizeof *digits);
    for (uint64_t k = w[W_SHAPE] & 0xffffffffu; k < w[W_SHAPE] >> 32; k++)
      digits[k] = (int64_t)w[RCL_FLAT_HEAD + k - (w[W_SHAPE] & 0xffffffffu)];
    uint64_t lo = w[W_SHAPE] & 0xffffffffu; /* below the window: 0, no carry */
    if (lo < (uint64_t)p->nd) rcl__xacc_normalize(digits + lo, p->nd - (int)lo);
    return;
  }
  p->nnodes = (size_t)(w[W_SHAPE] & 0xffffffffu);
  for (size_t i = 0; i < p->nnodes; i++)
    p->nodes[i] = (rcl_pnode){(uint32_t)(w[RCL_FLAT_HEAD + 2 * i] & 0xff), w[RCL_FLAT_HEAD + 2 * i] >> 8,
                              w[RCL_FLAT_HEAD + 2 * i + 1]};
}

/* b = a's digits added to b's over the union of their windows (no carries: the sums stay far from overflow). */
static void merge_exact(const rcl_partial_flat *a, rcl_partial_flat *b) {
  uint64_t alo = a->w[W_SHAPE] & 0xffffffffu, ahi = a->w[W_SHAPE] >> 32;
  uint64_t blo = b->w[W_SHAPE] & 0xffffffffu, bhi = b->w[W_SHAPE] >> 32;
  if (alo == ahi) return;
  uint64_t lo = blo == bhi || alo < blo ? alo : blo, hi = blo == bhi || ahi > bhi ? ahi : bhi, d[DATA] = {0};
  if (hi - lo > DATA) {
    b->w[W_KIND] = 0;
    return;
  }
  for (uint64_t k = blo; k < bhi; k++) d[k - lo] = b->w[RCL_FLAT_HEAD + k - blo];
  for (uint64_t k = alo; k < ahi; k++) d[k - lo] += a->w[RCL_FLAT_HEAD + k - alo];
  memcpy(&b->w[RCL_FLAT_HEAD], d, sizeof d);
  b->w[W_SHAPE] = lo | hi << 32;
}

void rcl__partial_flat_merge(const rcl_partial_flat *a, rcl_partial_flat *b) {
  const uint64_t *x = a->w, *y = b->w;
  if (!(x[W_KIND] & 1) || !(y[W_KIND] & 1) || (x[W_KIND] & 0xffffffffu) != (y[W_KIND] & 0xffffffffu) ||
      x[W_TOTAL] != y[W_TOTAL] || x[W_FIRST] + x[W_N] != y[W_FIRST]) {
    b->w[W_KIND] = 0;
    return;
  }
  b->w[W_KIND] |= x[W_KIND] & 0xffffffff00000000u; /* the flags */
  b->w[W_N] += x[W_N];
  b->w[W_FIRST] = x[W_FIRST];
  if ((x[W_KIND] >> 24 & 0xff) == RCL_REDUCE_EXACT) {
    merge_exact(a, b);
    return;
  }
  rcl_partial p;
  int64_t digits[1];
  unflatten(&p, digits, a, x[W_FIRST], b->w[W_N]);
  p.flags = (uint32_t)(b->w[W_KIND] >> 32);
  int rc = 0;
  for (uint64_t i = 0; i < (y[W_SHAPE] & 0xffffffffu) && !rc; i++)
    rc = rcl__partial_take_node(&p, (uint32_t)(y[RCL_FLAT_HEAD + 2 * i] & 0xff), y[RCL_FLAT_HEAD + 2 * i] >> 8,
                                y[RCL_FLAT_HEAD + 2 * i + 1]);
  if (!rc) rc = rcl__partial_close(&p);
  if (rc)
    b->w[W_KIND] = 0;
  else
    flatten_budget(b, &p, (x[W_SHAPE] >> 32) + (y[W_SHAPE] >> 32));
}

int rcl__partial_flat_result(void *out, const rcl_partial_flat *f) {
  if (!(f->w[W_KIND] & 1)) return RCL_ERR_INVALID_ARG;
  rcl_partial p;
  int64_t digits[RCL_XACC_MAX_DIGITS_HOST];
  unflatten(&p, digits, f, f->w[W_FIRST], f->w[W_N]);
  return rcl_partial_result(out, &p);
}
