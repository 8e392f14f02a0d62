/* Partial reductions, host side (docs/contracts.md §10): a slice's part, how parts of consecutive slices
 * merge, the result of a part covering the whole vector, the host reference of a part and the byte form.
 * Ordered mode: a part is the slice's maximal complete aligned nodes of the contract's tree over blocks of
 * 2048, plus the terms of the at most two blocks a slice boundary cuts; merging joins fragments into blocks
 * and siblings into parents, so any grouping reaches the one canonical form. Exact mode: a part is the
 * normalised superaccumulator; merging adds it. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reduce/reduce_partial.h"

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

void rcl__partial_layout(rcl_playout *lo, size_t total, size_t first, size_t n) {
  const size_t B = RCL_PART_B, end = first + n;
  memset(lo, 0, sizeof *lo);
  lo->nb = total / B + (total % B != 0);
  if (n == 0) return;
  size_t bf = first / B, bl = (end - 1) / B;
  int head_cut = first % B != 0 || min_sz((bf + 1) * B, total) > end;
  int tail_cut = bl != bf && end != min_sz((bl + 1) * B, total);
  if (head_cut) {
    lo->head_start = first;
    lo->head_count = min_sz(end, (bf + 1) * B) - first;
  }
  if (tail_cut) {
    lo->tail_start = bl * B;
    lo->tail_count = end - bl * B;
  }
  lo->c0 = bf + (size_t)head_cut;
  lo->c1 = bl + 1 - (size_t)tail_cut;
  if (lo->c1 < lo->c0) lo->c1 = lo->c0; /* one cut block: no complete one */
}

/* The top level of a tree of nb blocks: the smallest K with 2^K >= nb. */
static uint32_t top_level(size_t nb) {
  uint32_t K = 0;
  while (K < 63 && ((size_t)1 << K) < nb) K++;
  return K;
}

void rcl__partial_nodes(rcl_pnode *nodes, size_t *count, size_t nb, size_t c0, size_t c1) {
  uint32_t K = top_level(nb);
  size_t m = 0;
  for (size_t pos = c0; pos < c1;) {
    uint32_t k = 0;
    while (k < K && pos % ((size_t)2 << k) == 0 && min_sz(pos + ((size_t)2 << k), nb) <= c1) k++;
    nodes[m].level = k;
    nodes[m].index = pos >> k;
    nodes[m].bits = 0;
    m++;
    pos = min_sz(pos + ((size_t)1 << k), nb);
  }
  *count = m;
}

int rcl__partial_new(rcl_partial **out, rcl_reduce_op op, rcl_dtype dtype, rcl_reduce_mode mode, size_t total,
                     size_t first, size_t n) {
  *out = NULL;
  if ((unsigned)op > RCL_OP_NRM2) return rcl__fail(RCL_ERR_INVALID_ARG, "partial reduction: unknown op %d", (int)op);
  if (dtype != RCL_F32 && dtype != RCL_F64)
    return rcl__fail(RCL_ERR_INVALID_ARG, "partial reduction: unknown dtype %d", (int)dtype);
  if (mode != RCL_REDUCE_ORDERED && mode != RCL_REDUCE_EXACT)
    return rcl__fail(RCL_ERR_INVALID_ARG, "partial reduction: mode %d is neither ordered nor exact", (int)mode);
  if (first > total || n > total - first)
    return rcl__fail(RCL_ERR_INVALID_ARG, "partial reduction: slice [%zu, %zu + %zu) is not inside [0, total = %zu)",
                     first, first, n, total);
  if (total > SIZE_MAX / 8) return rcl__fail(RCL_ERR_INVALID_ARG, "partial reduction: total %zu is too large", total);
  rcl_partial *p = rcl__calloc(1, sizeof *p);
  if (!p) return RCL_ERR_OUT_OF_MEMORY;
  p->op = op;
  p->dtype = dtype;
  p->mode = mode;
  p->total = total;
  p->first = first;
  p->n = n;
  if (mode == RCL_REDUCE_EXACT) {
    p->nd = rcl__xacc_digits(dtype, op != RCL_OP_SUM);
    p->digits = rcl__calloc((size_t)p->nd, sizeof *p->digits);
    if (!p->digits) {
      rcl__free(p);
      return RCL_ERR_OUT_OF_MEMORY;
    }
  }
  *out = p;
  return 0;
}

void rcl_partial_free(rcl_partial *p) {
  if (!p) return;
  rcl__free(p->head.terms);
  rcl__free(p->tail.terms);
  rcl__free(p->digits);
  rcl__free(p);
}

/* ---- values ------------------------------------------------------------------------------------------ */

static uint64_t get_bits(rcl_dtype dt, const void *v) {
  if (dt == RCL_F64) {
    uint64_t u;
    memcpy(&u, v, 8);
    return u;
  }
  uint32_t u;
  memcpy(&u, v, 4);
  return u;
}

static void put_bits(rcl_dtype dt, void *v, uint64_t u) {
  if (dt == RCL_F64) {
    memcpy(v, &u, 8);
  } else {
    uint32_t w = (uint32_t)u;
    memcpy(v, &w, 4);
  }
}

static uint64_t canon_bits(rcl_dtype dt, uint64_t u) {
  if (dt == RCL_F64) return (u << 1) > 0xffe0000000000000u ? 0x7ff8000000000000u : u;
  return (u & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u : u;
}

/* a (+) b, or a (x) b (mul), in the dtype, NaN canonical (the host is compiled with -ffp-contract=off). */
static uint64_t op_bits(rcl_dtype dt, uint64_t a, uint64_t b, int mul) {
  if (dt == RCL_F64) {
    double x, y, r;
    memcpy(&x, &a, 8);
    memcpy(&y, &b, 8);
    r = mul ? x * y : x + y;
    return canon_bits(dt, get_bits(dt, &r));
  }
  float x, y, r;
  uint32_t u = (uint32_t)a, w = (uint32_t)b;
  memcpy(&x, &u, 4);
  memcpy(&y, &w, 4);
  r = mul ? x * y : x + y;
  return canon_bits(dt, get_bits(dt, &r));
}

/* The term of element i: x_i, x_i (x) y_i (dot) or x_i (x) x_i (nrm2), NaN canonical. */
static uint64_t term_bits(const rcl_partial *p, const void *x, const void *y, size_t i) {
  size_t es = rcl_dtype_size(p->dtype);
  uint64_t a = get_bits(p->dtype, (const char *)x + i * es);
  if (p->op == RCL_OP_SUM) return canon_bits(p->dtype, a);
  return op_bits(p->dtype, a, p->op == RCL_OP_DOT ? get_bits(p->dtype, (const char *)y + i * es) : a, 1);
}

/* ---- building a part (ordered) ------------------------------------------------------------------------ */

int rcl__partial_frag_complete(const rcl_partial *p, const rcl_pfrag *f) {
  size_t b = f->start / RCL_PART_B;
  return f->start == b * RCL_PART_B && f->start + f->count == min_sz((b + 1) * RCL_PART_B, p->total);
}

/* Appends a node, then merges siblings (k, 2i), (k, 2i+1) into (k+1, i) = left (+) right and promotes a
 * node (k, 2i) without a right sibling to (k+1, i), below the top level, until nothing changes. */
static int push_node(rcl_partial *p, uint32_t level, uint64_t index, uint64_t bits) {
  size_t nb = p->total / RCL_PART_B + (p->total % RCL_PART_B != 0);
  uint32_t K = top_level(nb);
  if (p->tail.count || p->nnodes == RCL_PART_MAX_NODES || level > K || (index << level) >= nb)
    return rcl__fail(RCL_ERR_INTERNAL, "partial reduction: node (level %u, index %llu) out of place", level,
                     (unsigned long long)index);
  p->nodes[p->nnodes++] = (rcl_pnode){level, index, canon_bits(p->dtype, bits)};
  for (;;) {
    rcl_pnode *t = &p->nodes[p->nnodes - 1], *l = t - 1;
    if (t->level < K && (t->index & 1) == 0 && ((t->index + 1) << t->level) >= nb) {
      t->level++;
      t->index >>= 1;
    } else if (p->nnodes >= 2 && l->level == t->level && (l->index & 1) == 0 && l->index + 1 == t->index) {
      l->bits = op_bits(p->dtype, l->bits, t->bits, 0);
      l->level++;
      l->index >>= 1;
      p->nnodes--;
    } else {
      return 0;
    }
  }
}

/* The pending fragment (p->tail) is followed by something else: a complete block becomes its level-0 node
 * (the contract's lanes and 64-leaf tree: the reference over the block's terms); a cut one is the head. */
static int settle(rcl_partial *p) {
  rcl_pfrag f = p->tail;
  if (!f.count) return 0;
  if (rcl__partial_frag_complete(p, &f)) {
    unsigned char v[8];
    int rc = rcl_ref_reduce(v, RCL_OP_SUM, p->dtype, RCL_REDUCE_ORDERED, f.count, f.terms, NULL);
    rcl__free(f.terms);
    memset(&p->tail, 0, sizeof p->tail);
    return rc ? rc : push_node(p, 0, f.start / RCL_PART_B, get_bits(p->dtype, v));
  }
  if (p->nnodes || p->head.count)
    return rcl__fail(RCL_ERR_INTERNAL, "partial reduction: a cut block at element %zu inside a part", f.start);
  p->head = f;
  memset(&p->tail, 0, sizeof p->tail);
  return 0;
}

/* Room for count terms of elements [start, start + count) of one block in the pending fragment. */
static int pending(unsigned char **dst, rcl_partial *p, size_t start, size_t count) {
  size_t es = rcl_dtype_size(p->dtype);
  rcl_pfrag *t = &p->tail;
  *dst = NULL;
  if (start / RCL_PART_B != (start + count - 1) / RCL_PART_B || start + count > p->total)
    return rcl__fail(RCL_ERR_INTERNAL, "partial reduction: terms [%zu, %zu) are not inside one block", start,
                     start + count);
  if (!(t->count && t->start / RCL_PART_B == start / RCL_PART_B && t->start + t->count == start)) {
    int rc = settle(p);
    if (rc) return rc;
    if (!(t->terms = rcl__malloc(RCL_PART_B * es))) return RCL_ERR_OUT_OF_MEMORY;
    t->start = start;
  }
  *dst = t->terms + (start - t->start) * es;
  t->count += count;
  return 0;
}

static int take_terms(rcl_partial *p, const rcl_pfrag *f) {
  unsigned char *dst;
  if (!f->count) return 0;
  int rc = pending(&dst, p, f->start, f->count);
  if (rc) return rc;
  memcpy(dst, f->terms, f->count * rcl_dtype_size(p->dtype));
  return rcl__partial_frag_complete(p, &p->tail) ? settle(p) : 0;
}

int rcl__partial_take_elems(rcl_partial *p, size_t start, size_t count, const void *x, const void *y) {
  unsigned char *dst;
  if (!count) return 0;
  int rc = pending(&dst, p, start, count);
  if (rc) return rc;
  for (size_t i = 0; i < count; i++) put_bits(p->dtype, dst + i * rcl_dtype_size(p->dtype), term_bits(p, x, y, i));
  return rcl__partial_frag_complete(p, &p->tail) ? settle(p) : 0;
}

int rcl__partial_take_node(rcl_partial *p, uint32_t level, uint64_t index, uint64_t bits) {
  int rc = settle(p);
  return rc ? rc : push_node(p, level, index, bits);
}

/* Whether p's fragments and nodes are those of its slice's layout: NULL, or what differs. */
static const char *layout_mismatch(const rcl_partial *p, char *why, size_t cap) {
  rcl_playout lo;
  rcl_pnode want[RCL_PART_MAX_NODES];
  size_t m;
  why[0] = 0;
  rcl__partial_layout(&lo, p->total, p->first, p->n);
  rcl__partial_nodes(want, &m, lo.nb, lo.c0, lo.c1);
  if (p->head.start != lo.head_start || p->head.count != lo.head_count)
    snprintf(why, cap, "head fragment [%zu, +%zu), expected [%zu, +%zu)", p->head.start, p->head.count, lo.head_start,
             lo.head_count);
  else if (p->tail.start != lo.tail_start || p->tail.count != lo.tail_count)
    snprintf(why, cap, "tail fragment [%zu, +%zu), expected [%zu, +%zu)", p->tail.start, p->tail.count, lo.tail_start,
             lo.tail_count);
  else if (p->nnodes != m)
    snprintf(why, cap, "%zu nodes, expected %zu", p->nnodes, m);
  else
    for (size_t i = 0; i < m; i++)
      if (p->nodes[i].level != want[i].level || p->nodes[i].index != want[i].index) {
        snprintf(why, cap, "node %zu is (level %u, index %llu), expected (level %u, index %llu)", i, p->nodes[i].level,
                 (unsigned long long)p->nodes[i].index, want[i].level, (unsigned long long)want[i].index);
        return why;
      }
  return why[0] ? why : NULL;
}

int rcl__partial_close(rcl_partial *p) {
  char why[160] = "";
  if (p->mode != RCL_REDUCE_ORDERED) return 0;
  if (p->tail.count && !p->nnodes && !p->head.count) {
    p->head = p->tail;
    memset(&p->tail, 0, sizeof p->tail);
  }
  if (layout_mismatch(p, why, sizeof why))
    return rcl__fail(RCL_ERR_INTERNAL, "partial reduction of [%zu, +%zu): %s", p->first, p->n, why);
  return 0;
}

/* ---- the public host side ---------------------------------------------------------------------------- */

/* Elements [start, start + count) of the slice whose element p->first is xs[0] (ys: y or NULL). */
static int take_range(rcl_partial *p, size_t start, size_t count, const char *xs, const char *ys) {
  size_t off = (start - p->first) * rcl_dtype_size(p->dtype);
  return count ? rcl__partial_take_elems(p, start, count, xs + off, ys ? ys + off : NULL) : 0;
}

int rcl_ref_reduce_partial(rcl_partial **out, rcl_reduce_op op, rcl_dtype dtype, rcl_reduce_mode mode, size_t total,
                           size_t first, size_t n, const void *x, const void *y) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_ref_reduce_partial: out is NULL");
  *out = NULL;
  if (n > 0 && (!x || (op == RCL_OP_DOT && !y)))
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_ref_reduce_partial: %s is NULL but n = %zu", x ? "y" : "x", n);
  rcl_partial *p;
  int rc = rcl__partial_new(&p, op, dtype, mode, total, first, n);
  if (rc) return rc;
  size_t es = rcl_dtype_size(dtype);
  const char *xs = x, *ys = op == RCL_OP_DOT ? y : op == RCL_OP_NRM2 ? x : NULL;
  if (mode == RCL_REDUCE_EXACT) {
    rcl__xacc_accumulate(p->digits, &p->flags, dtype, op != RCL_OP_SUM, n, x, ys);
    *out = p;
    return 0;
  }
  /* Ordered: every node straight from its definition, the reference over the node's elements. */
  rcl_playout lo;
  rcl_pnode nodes[RCL_PART_MAX_NODES];
  size_t m;
  rcl__partial_layout(&lo, total, first, n);
  rcl__partial_nodes(nodes, &m, lo.nb, lo.c0, lo.c1);
  rc = take_range(p, lo.head_start, lo.head_count, xs, ys);
  if (!rc) rc = settle(p);
  for (size_t i = 0; i < m && !rc; i++) {
    size_t a = (size_t)nodes[i].index << nodes[i].level, b = min_sz(a + ((size_t)1 << nodes[i].level), lo.nb);
    size_t e0 = a * RCL_PART_B - first, e1 = min_sz(b * RCL_PART_B, total) - first;
    unsigned char v[8];
    rc = rcl_ref_reduce(v, op == RCL_OP_SUM ? RCL_OP_SUM : RCL_OP_DOT, dtype, mode, e1 - e0, xs + e0 * es,
                        ys ? ys + e0 * es : NULL);
    nodes[i].bits = canon_bits(dtype, get_bits(dtype, v));
    p->nodes[p->nnodes++] = nodes[i];
  }
  if (!rc) rc = take_range(p, lo.tail_start, lo.tail_count, xs, ys);
  if (!rc) rc = rcl__partial_close(p);
  if (rc) rcl_partial_free(p);
  *out = rc ? NULL : p;
  return rc;
}

static int merge_check(rcl_partial *const *parts, size_t count, size_t *n) {
  if (!parts || count == 0) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_partial_merge: no parts (count = %zu)", count);
  *n = 0;
  for (size_t i = 0; i < count; i++) {
    const rcl_partial *p = parts[i], *q = parts[0];
    if (!p) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_partial_merge: parts[%zu] is NULL", i);
    if (p->op != q->op || p->dtype != q->dtype || p->mode != q->mode || p->total != q->total)
      return rcl__fail(RCL_ERR_INVALID_ARG,
                       "rcl_partial_merge: parts[%zu] is %s %s %s of %zu elements, parts[0] %s %s %s of %zu", i,
                       rcl_reduce_op_name(p->op), rcl_dtype_name(p->dtype), rcl_reduce_mode_name(p->mode), p->total,
                       rcl_reduce_op_name(q->op), rcl_dtype_name(q->dtype), rcl_reduce_mode_name(q->mode), q->total);
    if (i > 0 && parts[i - 1]->first + parts[i - 1]->n != p->first)
      return rcl__fail(RCL_ERR_INVALID_ARG,
                       "rcl_partial_merge: parts[%zu] starts at element %zu but parts[%zu] ends at %zu: slices must be "
                       "consecutive, in order",
                       i, p->first, i - 1, parts[i - 1]->first + parts[i - 1]->n);
    *n += p->n;
  }
  return 0;
}

int rcl_partial_merge(rcl_partial **out, rcl_partial *const *parts, size_t count) {
  size_t n = 0;
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_partial_merge: out is NULL");
  *out = NULL;
  int rc = merge_check(parts, count, &n);
  rcl_partial *p, *const q = rc ? NULL : parts[0];
  if (rc || (rc = rcl__partial_new(&p, q->op, q->dtype, q->mode, q->total, q->first, n)) != 0) return rc;
  for (size_t i = 0; i < count && !rc; i++) {
    const rcl_partial *a = parts[i];
    if (p->mode == RCL_REDUCE_EXACT) {
      for (int k = 0; k < p->nd; k++) p->digits[k] += a->digits[k];
      rcl__xacc_normalize(p->digits, p->nd);
      p->flags |= a->flags;
      continue;
    }
    rc = take_terms(p, &a->head);
    for (size_t k = 0; k < a->nnodes && !rc; k++)
      rc = rcl__partial_take_node(p, a->nodes[k].level, a->nodes[k].index, a->nodes[k].bits);
    if (!rc) rc = take_terms(p, &a->tail);
  }
  if (!rc) rc = rcl__partial_close(p);
  if (rc) rcl_partial_free(p);
  *out = rc ? NULL : p;
  return rc;
}

int rcl_partial_result(void *out, const rcl_partial *p) {
  if (!out || !p) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_partial_result: NULL argument");
  if (p->first != 0 || p->n != p->total)
    return rcl__fail(RCL_ERR_INVALID_ARG,
                     "rcl_partial_result: the part covers elements [%zu, %zu) of [0, %zu): merge the parts of the "
                     "missing elements first",
                     p->first, p->first + p->n, p->total);
  uint64_t r = 0; /* the empty sum is +0 */
  if (p->total > 0 && p->mode == RCL_REDUCE_EXACT) {
    int64_t s[RCL_XACC_MAX_DIGITS_HOST];
    unsigned char v[8];
    memcpy(s, p->digits, (size_t)p->nd * sizeof *s);
    rcl__xacc_round(v, s, p->flags, p->dtype, p->op != RCL_OP_SUM);
    r = get_bits(p->dtype, v);
  } else if (p->total > 0) {
    if (p->nnodes != 1 || p->head.count || p->tail.count)
      return rcl__fail(RCL_ERR_INTERNAL, "rcl_partial_result: %zu nodes in a whole part", p->nnodes);
    r = p->nodes[0].bits;
  }
  rcl__partial_finish(out, p->op, p->dtype, r);
  return 0;
}

void rcl__partial_finish(void *out, rcl_reduce_op op, rcl_dtype dtype, uint64_t r) {
  if (op == RCL_OP_NRM2 && dtype == RCL_F64) {
    double d;
    memcpy(&d, &r, 8);
    d = sqrt(d);
    r = get_bits(RCL_F64, &d);
  } else if (op == RCL_OP_NRM2) {
    uint32_t u = (uint32_t)r;
    float f;
    memcpy(&f, &u, 4);
    f = sqrtf(f);
    r = get_bits(RCL_F32, &f);
  }
  put_bits(dtype, out, canon_bits(dtype, r));
}

int rcl_partial_info(const rcl_partial *p, rcl_reduce_op *op, rcl_dtype *dtype, rcl_reduce_mode *mode, size_t *total,
                     size_t *first, size_t *n) {
  if (!p) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_partial_info: the part is NULL");
  if (op) *op = p->op;
  if (dtype) *dtype = p->dtype;
  if (mode) *mode = p->mode;
  if (total) *total = p->total;
  if (first) *first = p->first;
  if (n) *n = p->n;
  return 0;
}

/* ---- the byte form ----------------------------------------------------------------------------------- */
/* "RCLPART\0", u32 version 1, u32 op, dtype, mode, reserved 0, u64 total, first, n; then ordered: u64 head
 * start and count, count terms; u64 node count, each node u32 level, u64 index, u64 value bits; u64 tail
 * start and count, count terms; exact: u32 digits, u32 flags, the digits as i64. All little-endian. */
#define PART_MAGIC "RCLPART"
#define PART_VERSION 1u

typedef struct {
  unsigned char *b; /* NULL: count only */
  size_t pos;
} wcur;

static void put_le(wcur *w, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; i++, v >>= 8)
    if (w->b) w->b[w->pos + i] = (unsigned char)v;
  w->pos += bytes;
}

static void put_frag(wcur *w, const rcl_partial *p, const rcl_pfrag *f) {
  size_t es = rcl_dtype_size(p->dtype);
  put_le(w, f->start, 8);
  put_le(w, f->count, 8);
  for (size_t i = 0; i < f->count; i++) put_le(w, get_bits(p->dtype, f->terms + i * es), es);
}

static void put_part(wcur *w, const rcl_partial *p) {
  for (size_t i = 0; i < 8; i++) put_le(w, (unsigned char)PART_MAGIC[i], 1);
  put_le(w, PART_VERSION, 4);
  put_le(w, (uint64_t)p->op, 4);
  put_le(w, (uint64_t)p->dtype, 4);
  put_le(w, (uint64_t)p->mode, 4);
  put_le(w, 0, 4);
  put_le(w, p->total, 8);
  put_le(w, p->first, 8);
  put_le(w, p->n, 8);
  if (p->mode == RCL_REDUCE_EXACT) {
    put_le(w, (uint64_t)p->nd, 4);
    put_le(w, p->flags, 4);
    for (int k = 0; k < p->nd; k++) put_le(w, (uint64_t)p->digits[k], 8);
    return;
  }
  put_frag(w, p, &p->head);
  put_le(w, p->nnodes, 8);
  for (size_t i = 0; i < p->nnodes; i++) {
    put_le(w, p->nodes[i].level, 4);
    put_le(w, p->nodes[i].index, 8);
    put_le(w, p->nodes[i].bits, 8);
  }
  put_frag(w, p, &p->tail);
}

int rcl_partial_pack(void *buf, size_t cap, size_t *len, const rcl_partial *p) {
  if (!len || !p) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_partial_pack: NULL %s", p ? "len" : "part");
  wcur w = {NULL, 0};
  put_part(&w, p);
  *len = w.pos;
  if (!buf) return 0;
  if (cap < w.pos)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_partial_pack: the part needs %zu bytes, cap is %zu", w.pos, cap);
  w = (wcur){buf, 0};
  put_part(&w, p);
  return 0;
}

typedef struct {
  const unsigned char *b;
  size_t len, pos;
} rcur;

static int get_le(uint64_t *v, rcur *r, size_t bytes, const char *field) {
  if (r->len - r->pos < bytes)
    return rcl__fail(RCL_ERR_PARSE, "rcl_partial_unpack: truncated at byte %zu of %zu (field %s)", r->pos, r->len,
                     field);
  *v = 0;
  for (size_t i = 0; i < bytes; i++) *v |= (uint64_t)r->b[r->pos + i] << (8 * i);
  r->pos += bytes;
  return 0;
}

/* Reads a field that must equal want. */
static int get_eq(rcur *r, size_t bytes, uint64_t want, const char *field) {
  uint64_t v;
  int rc = get_le(&v, r, bytes, field);
  if (!rc && v != want)
    return rcl__fail(RCL_ERR_PARSE, "rcl_partial_unpack: field %s is %llu, expected %llu (at byte %zu)", field,
                     (unsigned long long)v, (unsigned long long)want, r->pos - bytes);
  return rc;
}

/* A value: at most the dtype's bits, a NaN only the canonical one. */
static int get_value(uint64_t *v, rcur *r, const rcl_partial *p, size_t bytes, const char *field) {
  int rc = get_le(v, r, bytes, field);
  if (!rc && (canon_bits(p->dtype, *v) != *v || (p->dtype == RCL_F32 && *v >> 32)))
    return rcl__fail(RCL_ERR_PARSE, "rcl_partial_unpack: %s 0x%llx is not a canonical %s value", field,
                     (unsigned long long)*v, rcl_dtype_name(p->dtype));
  return rc;
}

static int get_frag(rcl_partial *p, rcur *r, size_t start, size_t count, const char *which) {
  size_t es = rcl_dtype_size(p->dtype);
  int rc = get_eq(r, 8, start, which);
  if (!rc) rc = get_eq(r, 8, count, which);
  for (size_t i = 0; i < count && !rc; i++) {
    uint64_t v;
    unsigned char *dst;
    if (i == 0 && (rc = pending(&dst, p, start, count)) != 0) break;
    if (!(rc = get_value(&v, r, p, es, "term"))) put_bits(p->dtype, p->tail.terms + i * es, v);
  }
  return rc;
}

static int get_ordered(rcl_partial *p, rcur *r) {
  rcl_playout lo;
  rcl_pnode want[RCL_PART_MAX_NODES];
  size_t m;
  rcl__partial_layout(&lo, p->total, p->first, p->n);
  rcl__partial_nodes(want, &m, lo.nb, lo.c0, lo.c1);
  int rc = get_frag(p, r, lo.head_start, lo.head_count, "head fragment");
  if (!rc && lo.head_count) {
    p->head = p->tail; /* as read, not settled: a cut block */
    memset(&p->tail, 0, sizeof p->tail);
  }
  if (!rc) rc = get_eq(r, 8, m, "node count");
  for (size_t i = 0; i < m && !rc; i++) {
    rc = get_eq(r, 4, want[i].level, "node level");
    if (!rc) rc = get_eq(r, 8, want[i].index, "node index");
    if (!rc) rc = get_value(&want[i].bits, r, p, 8, "node value");
    if (!rc) p->nodes[p->nnodes++] = want[i];
  }
  if (!rc) rc = get_frag(p, r, lo.tail_start, lo.tail_count, "tail fragment");
  return rc;
}

static int get_exact(rcl_partial *p, rcur *r) {
  uint64_t v = 0;
  int rc = get_eq(r, 4, (uint64_t)p->nd, "digit count");
  if (!rc && !(rc = get_le(&v, r, 4, "flags")) && v > 15)
    return rcl__fail(RCL_ERR_PARSE, "rcl_partial_unpack: flags 0x%llx has unknown bits", (unsigned long long)v);
  p->flags = (uint32_t)v;
  for (int k = 0; k < p->nd && !rc; k++) {
    rc = get_le(&v, r, 8, "digit");
    p->digits[k] = (int64_t)v;
    if (!rc && k + 1 < p->nd && v >> 32)
      return rcl__fail(RCL_ERR_PARSE, "rcl_partial_unpack: digit %d (0x%llx) is not normalised", k,
                       (unsigned long long)v);
  }
  return rc;
}

/* The header: magic, version, reduction and slice; *p a new empty part of it. */
static int get_header(rcl_partial **p, rcur *r) {
  uint64_t op, dt, mode, total, first, n;
  int rc = 0;
  for (size_t i = 0; i < 8 && !rc; i++) rc = get_eq(r, 1, (unsigned char)PART_MAGIC[i], "magic");
  if (!rc) rc = get_eq(r, 4, PART_VERSION, "version");
  if (!rc) rc = get_le(&op, r, 4, "op");
  if (!rc) rc = get_le(&dt, r, 4, "dtype");
  if (!rc) rc = get_le(&mode, r, 4, "mode");
  if (!rc) rc = get_eq(r, 4, 0, "reserved");
  if (!rc) rc = get_le(&total, r, 8, "total");
  if (!rc) rc = get_le(&first, r, 8, "first");
  if (!rc) rc = get_le(&n, r, 8, "n");
  if (rc) return rc;
  if (op > RCL_OP_NRM2 || (dt != RCL_F32 && dt != RCL_F64) || mode > RCL_REDUCE_EXACT || total > SIZE_MAX / 8 ||
      first > total || n > total - first)
    return rcl__fail(RCL_ERR_PARSE,
                     "rcl_partial_unpack: bad header: op %llu, dtype %llu, mode %llu, slice [%llu, +%llu) of %llu",
                     (unsigned long long)op, (unsigned long long)dt, (unsigned long long)mode,
                     (unsigned long long)first, (unsigned long long)n, (unsigned long long)total);
  return rcl__partial_new(p, (rcl_reduce_op)op, (rcl_dtype)dt, (rcl_reduce_mode)mode, total, first, n);
}

int rcl_partial_unpack(rcl_partial **out, const void *buf, size_t len) {
  if (!out || !buf) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_partial_unpack: NULL %s", out ? "buf" : "out");
  *out = NULL;
  rcur r = {buf, len, 0};
  rcl_partial *p = NULL;
  int rc = get_header(&p, &r);
  if (!rc) rc = p->mode == RCL_REDUCE_EXACT ? get_exact(p, &r) : get_ordered(p, &r);
  if (!rc && r.pos != len)
    rc = rcl__fail(RCL_ERR_PARSE, "rcl_partial_unpack: %zu bytes after the part's %zu", len - r.pos, r.pos);
  if (rc) rcl_partial_free(p);
  *out = rc ? NULL : p;
  return rc;
}

int rcl__partial_copy_as(rcl_partial **out, const rcl_partial *p, rcl_reduce_op op) {
  size_t len = 0;
  *out = NULL;
  int rc = rcl_partial_pack(NULL, 0, &len, p);
  unsigned char *buf = rc ? NULL : rcl__malloc(len);
  if (!rc && !buf) rc = RCL_ERR_OUT_OF_MEMORY;
  if (!rc) rc = rcl_partial_pack(buf, len, &len, p);
  if (!rc) rc = rcl_partial_unpack(out, buf, len);
  rcl__free(buf);
  if (!rc) (*out)->op = op;
  return rc;
}
