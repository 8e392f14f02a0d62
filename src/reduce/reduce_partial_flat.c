/* The flat form of a part (reduce_partial.h): fixed size, no pointers, merged without allocating, so that
 * MPI_Allreduce with a user operation joins every rank's part in one collective (src/mpi/mpi_reduce.c). The
 * merge is rcl_partial_merge's on a part that lives on the stack: exact adds the digits and normalises,
 * ordered takes the second part's nodes after the first's (no cut block, so no terms and no allocation). */
#include <string.h>

#include "reduce/reduce_partial.h"

enum { W_OK, W_OP, W_DTYPE, W_MODE, W_TOTAL, W_FIRST, W_N, W_FLAGS, W_COUNT };
#define FLAT_NODES ((RCL_FLAT_WORDS - RCL_FLAT_HEAD) / 2)

/* Whether an ordered part of total elements has a tree low enough for the flat form (every slice's nodes fit). */
static int tree_fits(uint64_t total) {
  uint64_t nb = total / RCL_PART_B + (total % RCL_PART_B != 0);
  return nb <= ((uint64_t)1 << RCL_FLAT_LEVELS);
}

void rcl__partial_flatten(rcl_partial_flat *f, const rcl_partial *p) {
  memset(f, 0, sizeof *f);
  if (!p || (p->mode == RCL_REDUCE_ORDERED && (p->head.count || p->tail.count || !tree_fits(p->total))) ||
      (p->mode == RCL_REDUCE_EXACT && p->nd > RCL_FLAT_WORDS - RCL_FLAT_HEAD) || p->nnodes > FLAT_NODES)
    return;
  uint64_t *w = f->w;
  w[W_OK] = 1;
  w[W_OP] = (uint64_t)p->op;
  w[W_DTYPE] = (uint64_t)p->dtype;
  w[W_MODE] = (uint64_t)p->mode;
  w[W_TOTAL] = p->total;
  w[W_FIRST] = p->first;
  w[W_N] = p->n;
  w[W_FLAGS] = p->flags;
  if (p->mode == RCL_REDUCE_EXACT) {
    w[W_COUNT] = (uint64_t)p->nd;
    for (int k = 0; k < p->nd; k++) w[RCL_FLAT_HEAD + k] = (uint64_t)p->digits[k];
    return;
  }
  w[W_COUNT] = p->nnodes;
  for (size_t i = 0; i < p->nnodes; i++) {
    w[RCL_FLAT_HEAD + 2 * i] = p->nodes[i].index << 8 | p->nodes[i].level;
    w[RCL_FLAT_HEAD + 2 * i + 1] = p->nodes[i].bits;
  }
}

/* p (memory of the caller, digits in digits[]) = the part f holds, over the slice [first, first + n). */
static void unflatten(rcl_partial *p, int64_t *digits, const rcl_partial_flat *f, uint64_t first, uint64_t n) {
  const uint64_t *w = f->w;
  memset(p, 0, sizeof *p);
  p->op = (rcl_reduce_op)w[W_OP];
  p->dtype = (rcl_dtype)w[W_DTYPE];
  p->mode = (rcl_reduce_mode)w[W_MODE];
  p->total = (size_t)w[W_TOTAL];
  p->first = (size_t)first;
  p->n = (size_t)n;
  p->flags = (uint32_t)w[W_FLAGS];
  p->digits = digits;
  if (p->mode == RCL_REDUCE_EXACT) {
    p->nd = (int)w[W_COUNT];
    for (int k = 0; k < p->nd; k++) digits[k] = (int64_t)w[RCL_FLAT_HEAD + k];
    return;
  }
  p->nnodes = (size_t)w[W_COUNT];
  for (size_t i = 0; i < p->nnodes; i++)
    p->nodes[i] = (rcl_pnode){(uint32_t)(w[RCL_FLAT_HEAD + 2 * i] & 0xff), w[RCL_FLAT_HEAD + 2 * i] >> 8,
                              w[RCL_FLAT_HEAD + 2 * i + 1]};
}

void rcl__partial_flat_merge(const rcl_partial_flat *a, rcl_partial_flat *b) {
  const uint64_t *x = a->w, *y = b->w;
  if (!x[W_OK] || !y[W_OK] || x[W_OP] != y[W_OP] || x[W_DTYPE] != y[W_DTYPE] || x[W_MODE] != y[W_MODE] ||
      x[W_TOTAL] != y[W_TOTAL] || x[W_FIRST] + x[W_N] != y[W_FIRST]) {
    b->w[W_OK] = 0;
    return;
  }
  rcl_partial p;
  int64_t digits[RCL_XACC_MAX_DIGITS_HOST];
  unflatten(&p, digits, a, x[W_FIRST], x[W_N] + y[W_N]);
  int rc = 0;
  if (p.mode == RCL_REDUCE_EXACT) {
    for (int k = 0; k < p.nd; k++) digits[k] += (int64_t)y[RCL_FLAT_HEAD + k];
    rcl__xacc_normalize(digits, p.nd);
    p.flags |= (uint32_t)y[W_FLAGS];
  } else {
    for (uint64_t i = 0; i < y[W_COUNT] && !rc; i++)
      rc = rcl__partial_take_node(&p, (uint32_t)(y[RCL_FLAT_HEAD + 2 * i] & 0xff), y[RCL_FLAT_HEAD + 2 * i] >> 8,
                                  y[RCL_FLAT_HEAD + 2 * i + 1]);
    if (!rc) rc = rcl__partial_close(&p);
  }
  if (rc)
    b->w[W_OK] = 0;
  else
    rcl__partial_flatten(b, &p);
}

int rcl__partial_flat_result(void *out, const rcl_partial_flat *f) {
  if (!f->w[W_OK]) return RCL_ERR_INVALID_ARG;
  rcl_partial p;
  int64_t digits[RCL_XACC_MAX_DIGITS_HOST];
  unflatten(&p, digits, f, f->w[W_FIRST], f->w[W_N]);
  return rcl_partial_result(out, &p);
}
