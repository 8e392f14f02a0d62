/* The flat form of a part (reduce_partial.h): at most RCL_FLAT_MAX words, no pointers, merged without allocating,
 * so that MPI_Allreduce with a user operation joins every rank's part in one collective (src/mpi/mpi_reduce.c).
 * w[0]: state (bits 0-1) | op << 2 | dtype << 4 | mode << 6 | flags << 8 | words / 4 << 12 | shape << 16 (exact:
 * lo | hi << 8, the window; ordered: count | budget << 8) | total << 32; w[1]: first | end << 32; then the data
 * (exact: the window's digits; ordered: the nodes' value bits, their levels and indices those of the slice's
 * layout). Ordered merges are rcl_partial_merge's on a part that lives on the stack: no cut block, so no terms,
 * no allocation. Exact results round from the window (the digits below it are 0), as spmv.cl's rows do. */
#include <string.h>

#include "core/portable_host.h"
#include "rcl_softfloat.cl"
#include "rcl_exact.cl"

#include "reduce/reduce_partial.h"

enum { HEAD = RCL_FLAT_HEAD, CAP_MAX = RCL_FLAT_MAX - RCL_FLAT_HEAD };
#define SAME_REDUCTION 0xffffffff0000f0fcu /* op, dtype, mode, words, total */
#define SHAPE_STATE 0xffff0003u

int rcl__partial_flat_state(const uint64_t *f) { return (int)(f[0] & 3); }
int rcl__partial_flat_words(const uint64_t *f) { return (int)(f[0] >> 12 & 15) * 4; }
static uint64_t shape_a(const uint64_t *f) { return f[0] >> 16 & 0xff; }
static uint64_t shape_b(const uint64_t *f) { return f[0] >> 24 & 0xff; }
static uint64_t first_of(const uint64_t *f) { return f[1] & 0xffffffffu; }
static uint64_t end_of(const uint64_t *f) { return f[1] >> 32; }

/* f = a dead part of words words: nothing but its size. */
static void kill(uint64_t *f, int words) {
  memset(f, 0, (size_t)words * sizeof *f);
  f[0] = (uint64_t)(words / 4) << 12;
}

/* The state of data of need words in a form of words words, where the parts' data are all there (held). */
static int fit(uint64_t need, int words, int held) {
  return held && need <= (uint64_t)(words - HEAD) ? RCL_FLAT_HELD : need <= CAP_MAX ? RCL_FLAT_DEFERRED : RCL_FLAT_DEAD;
}

/* f's state and shape (a | b << 8); the data past the used words zeroed (all unless held), everything when
 * dead. */
static void settle(uint64_t *f, int words, int state, uint64_t a, uint64_t b, uint64_t used) {
  if (state == RCL_FLAT_DEAD) {
    kill(f, words);
    return;
  }
  f[0] = (f[0] & ~(uint64_t)SHAPE_STATE) | (uint64_t)state | a << 16 | b << 24;
  used = state == RCL_FLAT_HELD ? used : 0;
  memset(f + HEAD + used, 0, (size_t)((uint64_t)(words - HEAD) - used) * sizeof *f);
}

/* The balanced digits of the normalised accumulator s (nd digits) into d, [*lo, *hi) the window where they are
 * not 0 (empty: the value is 0). The digits above the value are its sign extension (0, or 2^32 - 1 under a top
 * digit -1): the loop stops below them, where they add 0 or -1 at one digit. */
static void balance(int64_t *d, int *lo, int *hi, const int64_t *s, int nd) {
  int k0 = 0, t = nd - 2;
  int64_t ext = s[nd - 1], carry = 0;
  *lo = *hi = 0;
  while (k0 + 4 <= nd && !(s[k0] | s[k0 + 1] | s[k0 + 2] | s[k0 + 3])) k0 += 4; /* 4 at a time: no branch */
  while (k0 < nd && !s[k0]) k0++;
  if (k0 == nd) return;
  int64_t fill = ext ? 0xffffffff : 0;
  while ((ext == 0 || ext == -1) && t - 3 >= k0 &&
         !((s[t] ^ fill) | (s[t - 1] ^ fill) | (s[t - 2] ^ fill) | (s[t - 3] ^ fill)))
    t -= 4;
  while ((ext == 0 || ext == -1) && t >= k0 && s[t] == fill) t--;
  *lo = nd;
  for (int k = k0; k <= t + 1; k++) {
    int64_t v = (k <= t ? s[k] : ext) + carry, b = v;
    if (k <= t) b = (int64_t)(((uint64_t)v + 0x80000000u) & 0xffffffffu) - 0x80000000;
    carry = (v - b) / ((int64_t)1 << 32);
    d[k] = b;
    if (b) *lo = *lo < k ? *lo : k, *hi = k + 1;
  }
  if (*hi == 0) *lo = 0;
}

/* Term i of fragment fr of p, its bits in a word. */
static uint64_t term_bits(const rcl_partial *p, const rcl_pfrag *fr, size_t i) {
  uint64_t u = 0;
  uint32_t v = 0;
  if (p->dtype == RCL_F64) memcpy(&u, fr->terms + 8 * i, 8);
  if (p->dtype == RCL_F32) memcpy(&v, fr->terms + 4 * i, 4), u = v;
  return u;
}

void rcl__partial_flatten(uint64_t *f, const rcl_partial *p, int words) {
  kill(f, words);
  if (!p || p->total > 0xffffffffu) return;
  f[0] |= (uint64_t)p->op << 2 | (uint64_t)p->dtype << 4 | (uint64_t)p->mode << 6 | (uint64_t)p->flags << 8 |
          (uint64_t)p->total << 32;
  f[1] = (uint64_t)p->first | (uint64_t)(p->first + p->n) << 32;
  if (p->mode == RCL_REDUCE_EXACT) {
    int64_t d[RCL_XACC_MAX_DIGITS_HOST];
    int lo, hi;
    balance(d, &lo, &hi, p->digits, p->nd);
    int st = fit((uint64_t)(hi - lo), words, 1);
    for (int k = lo; k < hi && st == RCL_FLAT_HELD; k++) f[HEAD + k - lo] = (uint64_t)d[k];
    settle(f, words, st, (uint64_t)lo, (uint64_t)hi, (uint64_t)(hi - lo));
    return;
  }
  size_t used = p->head.count + p->nnodes + p->tail.count, h = p->head.count;
  int st = fit(used, words, 1);
  for (size_t i = 0; i < used && st == RCL_FLAT_HELD; i++)
    f[HEAD + i] = i < h               ? term_bits(p, &p->head, i)
                  : i < h + p->nnodes ? p->nodes[i - h].bits
                                      : term_bits(p, &p->tail, i - h - p->nnodes);
  settle(f, words, st, used, used, used);
}

/* b = a's digits added to b's over the union of their windows (no carries: the sums stay far from overflow). */
static void merge_exact(const uint64_t *a, uint64_t *b, int words, int held) {
  uint64_t alo = shape_a(a), ahi = shape_b(a), blo = shape_a(b), bhi = shape_b(b), lo = blo, hi = bhi;
  if (alo != ahi) {
    lo = blo == bhi || alo < blo ? alo : blo;
    hi = blo == bhi || ahi > bhi ? ahi : bhi;
  }
  int st = fit(hi - lo, words, held);
  uint64_t *d = b + HEAD; /* b's digits from blo; past them 0 (held) */
  if (st == RCL_FLAT_HELD && blo != bhi && lo < blo) {
    memmove(d + (blo - lo), d, (size_t)(bhi - blo) * sizeof *d);
    memset(d, 0, (size_t)(blo - lo) * sizeof *d);
  }
  for (uint64_t k = alo; k < ahi && st == RCL_FLAT_HELD; k++) d[k - lo] += a[HEAD + k - alo];
  settle(b, words, st, lo, hi, hi - lo);
}

/* An ordered part built on the stack, without allocating: p's nodes and fragments (their terms here, not in
 * p: head's in head, the pending fragment's, p.tail, in pend). Mirrors reduce_partial.c's building, for
 * fragments of at most CAP_MAX terms. */
typedef struct {
  rcl_partial p;
  uint64_t head[CAP_MAX], pend[CAP_MAX];
} builder;

/* The value of a complete block of n <= 64 terms: one term per lane, then the pairwise tree (§1.2). */
static uint64_t block_value(const uint64_t *t, size_t n, rcl_dtype dt) {
  double d[CAP_MAX];
  float f[CAP_MAX];
  for (size_t i = 0; i < n; i++) {
    uint32_t u = (uint32_t)t[i];
    memcpy(dt == RCL_F64 ? (void *)&d[i] : (void *)&f[i], dt == RCL_F64 ? (const void *)&t[i] : (const void *)&u,
           dt == RCL_F64 ? 8 : 4);
  }
  for (size_t m = n; m > 1; m = (m + 1) / 2)
    for (size_t k = 0; k < (m + 1) / 2; k++) {
      if (dt == RCL_F64) d[k] = 2 * k + 1 < m ? d[2 * k] + d[2 * k + 1] : d[2 * k];
      if (dt == RCL_F32) f[k] = 2 * k + 1 < m ? f[2 * k] + f[2 * k + 1] : f[2 * k];
    }
  uint64_t r = 0;
  uint32_t u = 0;
  if (dt == RCL_F64) memcpy(&r, &d[0], 8);
  if (dt == RCL_F32) memcpy(&u, &f[0], 4), r = u;
  return r;
}

/* The pending fragment is followed by something else: a complete block becomes its node, a cut one the head. */
static int build_settle(builder *b) {
  rcl_partial *p = &b->p;
  rcl_pfrag f = p->tail;
  if (!f.count) return 0;
  memset(&p->tail, 0, sizeof p->tail);
  if (rcl__partial_frag_complete(p, &f))
    return rcl__partial_take_node(p, 0, f.start / RCL_PART_B, block_value(b->pend, f.count, p->dtype));
  if (p->nnodes || p->head.count) return 1; /* a cut block inside a part */
  p->head = f;
  memcpy(b->head, b->pend, f.count * sizeof *b->pend);
  return 0;
}

/* Terms of elements [start, start + count) of one block: joined to the pending fragment, or a new one. */
static int build_terms(builder *b, size_t start, size_t count, const uint64_t *terms) {
  rcl_pfrag *t = &b->p.tail;
  int rc = 0;
  if (!count) return 0;
  if (!(t->count && t->start / RCL_PART_B == start / RCL_PART_B && t->start + t->count == start)) {
    rc = build_settle(b);
    t->start = start;
  }
  if (rc || t->count + count > CAP_MAX) return 1;
  memcpy(b->pend + t->count, terms, count * sizeof *terms);
  t->count += count;
  return rcl__partial_frag_complete(&b->p, t) ? build_settle(b) : 0;
}

/* Feeds held ordered flat part f into b: head terms, nodes (levels and indices from its layout), tail terms. */
static int build_feed(builder *b, const uint64_t *f) {
  rcl_playout lo;
  rcl_pnode nodes[RCL_PART_MAX_NODES];
  size_t m;
  rcl__partial_layout(&lo, (size_t)(f[0] >> 32), (size_t)first_of(f), (size_t)(end_of(f) - first_of(f)));
  rcl__partial_nodes(nodes, &m, lo.nb, lo.c0, lo.c1);
  if (lo.head_count + m + lo.tail_count != shape_a(f)) return 1;
  const uint64_t *d = f + HEAD;
  int rc = build_terms(b, lo.head_start, lo.head_count, d);
  for (size_t i = 0; i < m && !rc; i++)
    if (!(rc = build_settle(b)))
      rc = rcl__partial_take_node(&b->p, nodes[i].level, nodes[i].index, d[lo.head_count + i]);
  return rc ? rc : build_terms(b, lo.tail_start, lo.tail_count, d + lo.head_count + m);
}

/* b->p (on the caller's stack) = the held ordered flat parts x and y merged (0), nonzero where they do not. */
static int build_merge(builder *b, const uint64_t *x, const uint64_t *y) {
  rcl_partial *p = &b->p;
  p->op = (rcl_reduce_op)(x[0] >> 2 & 3);
  p->dtype = (rcl_dtype)(x[0] >> 4 & 3);
  p->mode = RCL_REDUCE_ORDERED;
  p->total = (size_t)(x[0] >> 32);
  p->first = (size_t)first_of(x);
  p->n = (size_t)(end_of(y) - first_of(x));
  memset(&p->head, 0, sizeof p->head);
  memset(&p->tail, 0, sizeof p->tail);
  p->nnodes = 0;
  p->nd = 0;
  p->flags = 0;
  p->digits = NULL;
  int rc = build_feed(b, x);
  if (!rc) rc = build_feed(b, y);
  if (!rc && p->tail.count && !p->nnodes && !p->head.count) rc = build_settle(b); /* a lone cut block: the head */
  return rc ? rc : rcl__partial_close(p);
}

/* b = a's items merged with b's, within a budget of the sum of their word counts. */
static void merge_ordered(const uint64_t *a, uint64_t *b, int words, int held) {
  uint64_t budget = shape_b(a) + shape_b(b);
  int st = fit(budget, words, held);
  builder m;
  rcl_partial *p = &m.p;
  size_t used = 0;
  if (st == RCL_FLAT_HELD && build_merge(&m, a, b)) st = RCL_FLAT_DEAD;
  if (st == RCL_FLAT_HELD) {
    uint64_t *d = b + HEAD;
    memcpy(d, m.head, p->head.count * sizeof *d);
    for (size_t i = 0; i < p->nnodes; i++) d[p->head.count + i] = p->nodes[i].bits;
    memcpy(d + p->head.count + p->nnodes, m.pend, p->tail.count * sizeof *d);
    used = p->head.count + p->nnodes + p->tail.count;
  }
  settle(b, words, st, used, budget, used);
}

void rcl__partial_flat_merge(const uint64_t *a, uint64_t *b) {
  int words = rcl__partial_flat_words(b), sa = rcl__partial_flat_state(a), sb = rcl__partial_flat_state(b);
  if (sa == RCL_FLAT_DEAD || sb == RCL_FLAT_DEAD || ((a[0] ^ b[0]) & SAME_REDUCTION) || end_of(a) != first_of(b)) {
    kill(b, words);
    return;
  }
  b[0] |= a[0] & 0xf00u; /* the flags */
  if ((b[0] >> 6 & 1) == RCL_REDUCE_EXACT)
    merge_exact(a, b, words, sa == RCL_FLAT_HELD && sb == RCL_FLAT_HELD);
  else
    merge_ordered(a, b, words, sa == RCL_FLAT_HELD && sb == RCL_FLAT_HELD);
  if (rcl__partial_flat_state(b) != RCL_FLAT_DEAD) b[1] = first_of(a) | end_of(b) << 32;
}

/* The exact result's bits: the window's digits and one more above (for the carries; the digits below are 0)
 * rounded once, as rcl_xacc_result_bits rounds the whole accumulator. */
static uint64_t round_window(const uint64_t *f, rcl_dtype dt, int dot) {
  int nd = rcl__xacc_digits(dt, dot), lo = (int)shape_a(f), hi = (int)shape_b(f), top = hi < nd ? hi + 1 : nd;
  int base = dt == RCL_F64 ? (dot ? RCL_XACC_F64_DOT_BASE : RCL_XACC_F64_SUM_BASE)
                           : (dot ? RCL_XACC_F32_DOT_BASE : RCL_XACC_F32_SUM_BASE);
  int64_t s[CAP_MAX + 1];
  for (int k = lo; k < hi; k++) s[k - lo] = (int64_t)f[HEAD + k - lo];
  s[hi - lo] = 0;
  return rcl_xacc_result_bits(s, top - lo, base + 32 * lo, (uint32_t)(f[0] >> 8 & 15), dt == RCL_F64);
}

int rcl__partial_flat_result(void *out, const uint64_t *f) {
  uint64_t total = f[0] >> 32, r = 0;
  if (rcl__partial_flat_state(f) != RCL_FLAT_HELD || first_of(f) != 0 || end_of(f) != total) return 1;
  rcl_reduce_op op = (rcl_reduce_op)(f[0] >> 2 & 3);
  rcl_dtype dt = (rcl_dtype)(f[0] >> 4 & 3);
  if (total && (f[0] >> 6 & 1) == RCL_REDUCE_EXACT) {
    r = round_window(f, dt, op != RCL_OP_SUM);
  } else if (total) {
    if (shape_a(f) != 1) return 1;
    r = f[HEAD];
  }
  rcl__partial_finish(out, op, dt, r);
  return 0;
}
