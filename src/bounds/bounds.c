/* Volatility bounds (include/reprocl/bounds.h): the interval of values an expression can take under
 * every evaluation order and FMA contraction, by dynamic programming over parse trees.
 *
 * Why a DP over summaries is exact (docs/bounds.md has the full argument): IEEE round-to-nearest is
 * monotone, so a ⊕ b, a ⊗ b (for a fixed sign of the other factor) and fma(a, b, c) are monotone in each
 * argument on the extended reals, also with signed zeros ordered -0 < +0. The operands of one operation
 * come from disjoint subtrees, so they vary independently; the smallest result over all evaluations
 * of a sum is therefore made from the smallest results of its two parts, and we only need to carry, per
 * subexpression, (smallest value, largest value, whether some evaluation is non-NaN, whether some is NaN).
 * Infinities need care only where +inf meets -inf (NaN) or 0 meets inf in a product; the rules below
 * are exact where they say so and otherwise widen to a safe answer and clear `tight`. */
#include <float.h>
#include <math.h>
#include <string.h>
#include <strings.h>

#include "core/internal.h"

/* ---- expressions ----------------------------------------------------------------------------------- */
typedef enum { NODE_VALUE = 0, NODE_PRODUCT = 1, NODE_SUM = 2 } node_kind;
typedef struct {
  node_kind kind;
  int used;     /* already a child of another node */
  double value; /* NODE_VALUE (a float's value held exactly) */
  size_t first; /* children: kids[first .. first + count) */
  size_t count;
} expr_node;

struct rcl_expr {
  rcl_dtype dtype;
  expr_node *nodes;
  size_t n, cap;
  size_t *kids;
  size_t nkids, kcap;
};

int rcl_expr_create(rcl_expr **out, rcl_dtype dtype) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_expr_create: NULL argument");
  *out = NULL;
  if (dtype != RCL_F32 && dtype != RCL_F64)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_expr_create: unknown dtype %d", (int)dtype);
  rcl_expr *e = rcl__calloc(1, sizeof *e);
  if (!e) return RCL_ERR_OUT_OF_MEMORY;
  e->dtype = dtype;
  *out = e;
  return 0;
}

void rcl_expr_free(rcl_expr *e) {
  if (!e) return;
  rcl__free(e->nodes);
  rcl__free(e->kids);
  rcl__free(e);
}

rcl_dtype rcl_expr_dtype(const rcl_expr *e) { return e ? e->dtype : (rcl_dtype)0; }
size_t rcl_expr_size(const rcl_expr *e) { return e ? e->n : 0; }

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap : 16, bytes;
  while (c < need) c *= 2;
  if (rcl__mul_size(&bytes, c, elem, "expression")) return RCL_ERR_OVERFLOW;
  void *q = rcl__realloc(*p, bytes);
  if (!q) return RCL_ERR_OUT_OF_MEMORY;
  *p = q;
  *cap = c;
  return 0;
}

static int add_node(rcl_expr *e, size_t *node, expr_node nd, size_t count, const size_t *children) {
  for (size_t i = 0; i < count; i++) {
    if (children[i] >= e->n)
      return rcl__fail(RCL_ERR_INVALID_ARG,
                       "expression child %zu (argument %zu) does not exist: the expression has %zu nodes", children[i],
                       i, e->n);
    if (e->nodes[children[i]].used)
      return rcl__fail(RCL_ERR_INVALID_ARG,
                       "expression node %zu is already a child of another node: expressions are trees", children[i]);
  }
  int rc;
  if ((rc = grow((void **)&e->nodes, &e->cap, e->n + 1, sizeof *e->nodes)) != 0) return rc;
  if ((rc = grow((void **)&e->kids, &e->kcap, e->nkids + count, sizeof *e->kids)) != 0) return rc;
  /* Mark the children; one met twice in this list is refused, and the marks made so far are undone. */
  for (size_t i = 0; i < count; i++) {
    if (e->nodes[children[i]].used) {
      for (size_t j = 0; j < i; j++) e->nodes[children[j]].used = 0;
      return rcl__fail(RCL_ERR_INVALID_ARG, "expression node %zu is given twice: expressions are trees", children[i]);
    }
    e->nodes[children[i]].used = 1;
  }
  nd.first = e->nkids;
  nd.count = count;
  nd.used = 0;
  if (count) memcpy(e->kids + e->nkids, children, count * sizeof *children);
  e->nkids += count;
  e->nodes[e->n] = nd;
  if (node) *node = e->n;
  e->n++;
  return 0;
}

int rcl_expr_value(rcl_expr *e, size_t *node, const void *value) {
  if (!e || !value) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_expr_value: NULL argument");
  expr_node nd = {NODE_VALUE, 0, 0.0, 0, 0};
  if (e->dtype == RCL_F32) {
    float f;
    memcpy(&f, value, 4);
    nd.value = f;
  } else {
    memcpy(&nd.value, value, 8);
  }
  return add_node(e, node, nd, 0, NULL);
}

int rcl_expr_product(rcl_expr *e, size_t *node, size_t a, size_t b) {
  if (!e) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_expr_product: NULL argument");
  size_t kids[2] = {a, b};
  expr_node nd = {NODE_PRODUCT, 0, 0.0, 0, 0};
  return add_node(e, node, nd, 2, kids);
}

int rcl_expr_sum(rcl_expr *e, size_t *node, size_t count, const size_t *children) {
  if (!e || (count && !children)) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_expr_sum: NULL argument");
  expr_node nd = {NODE_SUM, 0, 0.0, 0, 0};
  return add_node(e, node, nd, count, children);
}

/* Appends the value x[i] of dtype. */
static int push_elem(rcl_expr *e, size_t *node, const void *x, size_t i) {
  return rcl_expr_value(e, node, (const char *)x + i * rcl_dtype_size(e->dtype));
}

/* Builds sum, dot or an SpMV row: the terms' nodes (after a +0 node for a row) go into a temporary list,
 * then one sum node over them. */
static int build_flat(rcl_expr **out, rcl_dtype dtype, size_t n, const void *x, const void *y, int zero_first,
                      const char *fn) {
  if (!out || (n && !x)) return rcl__fail(RCL_ERR_INVALID_ARG, "%s: NULL argument", fn);
  *out = NULL;
  rcl_expr *e;
  int rc = rcl_expr_create(&e, dtype);
  if (rc) return rc;
  size_t bytes, *terms = NULL, k = 0;
  if (n > SIZE_MAX - 1 || rcl__mul_size(&bytes, n + 1, sizeof *terms, fn))
    rc = RCL_ERR_OVERFLOW;
  else if (!(terms = rcl__malloc(bytes)))
    rc = RCL_ERR_OUT_OF_MEMORY;
  if (!rc && zero_first) {
    double zero = 0.0;
    float zf = 0.0f;
    rc = rcl_expr_value(e, &terms[k++], dtype == RCL_F32 ? (const void *)&zf : (const void *)&zero);
  }
  for (size_t i = 0; !rc && i < n; i++) {
    size_t a, b;
    rc = push_elem(e, &a, x, i);
    if (!rc && y) {
      if (!(rc = push_elem(e, &b, y, i))) rc = rcl_expr_product(e, &a, a, b);
    }
    terms[k++] = a;
  }
  if (!rc) rc = rcl_expr_sum(e, NULL, k, terms);
  rcl__free(terms);
  if (rc)
    rcl_expr_free(e);
  else
    *out = e;
  return rc;
}

int rcl_expr_sum_of(rcl_expr **out, rcl_dtype dtype, size_t n, const void *x) {
  return build_flat(out, dtype, n, x, NULL, 0, "rcl_expr_sum_of");
}

int rcl_expr_dot(rcl_expr **out, rcl_dtype dtype, size_t n, const void *x, const void *y) {
  if (n && !y) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_expr_dot: NULL argument");
  return build_flat(out, dtype, n, x, y, 0, "rcl_expr_dot");
}

int rcl_expr_spmv_row(rcl_expr **out, rcl_dtype dtype, size_t n, const void *a, const void *x) {
  if (n && !x) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_expr_spmv_row: NULL argument");
  return build_flat(out, dtype, n, a, x, 1, "rcl_expr_spmv_row");
}

int rcl_expr_stencil9(rcl_expr **out, rcl_dtype dtype, const void *w, const void *v) {
  if (!out || !w || !v) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_expr_stencil9: NULL argument");
  *out = NULL;
  rcl_expr *e;
  int rc = rcl_expr_create(&e, dtype);
  if (rc) return rc;
  size_t nw[3], nv[9], prod[3], s1, s2;
  for (size_t i = 0; !rc && i < 3; i++) rc = push_elem(e, &nw[i], w, i);
  for (size_t i = 0; !rc && i < 9; i++) rc = push_elem(e, &nv[i], v, i);
  if (!rc) rc = rcl_expr_product(e, &prod[0], nw[0], nv[0]);
  if (!rc) rc = rcl_expr_sum(e, &s1, 4, nv + 1);
  if (!rc) rc = rcl_expr_product(e, &prod[1], nw[1], s1);
  if (!rc) rc = rcl_expr_sum(e, &s2, 4, nv + 5);
  if (!rc) rc = rcl_expr_product(e, &prod[2], nw[2], s2);
  if (!rc) rc = rcl_expr_sum(e, NULL, 3, prod);
  if (rc)
    rcl_expr_free(e);
  else
    *out = e;
  return rc;
}

/* ---- interval summaries -------------------------------------------------------------------------- */
/* What the evaluations of a subexpression can give: the smallest and largest non-NaN value (attained),
 * whether a non-NaN value exists at all, and whether NaN can occur. */
typedef struct {
  double lo, hi;
  int val, nan;
} iv;

static const iv IV_EMPTY = {NAN, NAN, 0, 0};           /* no evaluation yet (identity of iv_union) */
static const iv IV_NAN = {NAN, NAN, 0, 1};             /* every evaluation is NaN */
static const iv IV_FULL = {-INFINITY, INFINITY, 1, 1}; /* anything: the safe answer where we cannot be exact */

/* The total order of non-NaN values used throughout: numeric, with -0 below +0. IEEE addition,
 * multiplication and fma are monotone in it too (docs/bounds.md). */
static int tlt(double a, double b) { return a < b || (a == b && signbit(a) && !signbit(b)); }
static double tmin(double a, double b) { return tlt(b, a) ? b : a; }
static double tmax(double a, double b) { return tlt(a, b) ? b : a; }
static int same(double a, double b) { return a == b && signbit(a) == signbit(b); }
static int is_point(iv a) { return a.val && same(a.lo, a.hi); }
static int has_inf(iv a) { return isinf(a.lo) || isinf(a.hi); }
static int has_zero(iv a) { return a.lo <= 0 && a.hi >= 0; }

static iv iv_point(double v) {
  iv r = {v, v, 1, 0};
  return isnan(v) ? IV_NAN : r;
}

static void iv_union(iv *acc, iv x) {
  acc->nan |= x.nan;
  if (!x.val) return;
  if (!acc->val) {
    acc->lo = x.lo;
    acc->hi = x.hi;
    acc->val = 1;
  } else {
    acc->lo = tmin(acc->lo, x.lo);
    acc->hi = tmax(acc->hi, x.hi);
  }
}

typedef struct {
  int f32;
  int fma;
  int tight;
  size_t enclosed;
} bctx;

/* The dtype's operations, rounded to nearest even (the library is built with -ffp-contract=off, and
 * glibc's fma/fmaf are correctly rounded). A float's value is exact in a double. */
static double op_add(int f32, double a, double b) { return f32 ? (double)((float)a + (float)b) : a + b; }
static double op_mul(int f32, double a, double b) { return f32 ? (double)((float)a * (float)b) : a * b; }
static double op_fma(int f32, double a, double b, double c) {
  return f32 ? (double)fmaf((float)a, (float)b, (float)c) : fma(a, b, c);
}

static iv full(bctx *c) {
  c->tight = 0;
  return IV_FULL;
}

/* {a ⊕ b : a in A, b in B}. Exact: NaN arises only from +inf meeting -inf, whose presence the attained
 * endpoints tell; apart from those pairs ⊕ is monotone, so the extremes come from the extremes. */
static iv add_iv(int f32, iv a, iv b) {
  if (!a.val || !b.val) return IV_NAN;
  iv r = {NAN, NAN, 0, a.nan || b.nan};
  if (isfinite(a.lo) && isfinite(a.hi) && isfinite(b.lo) && isfinite(b.hi)) {
    r.lo = op_add(f32, a.lo, b.lo);
    r.hi = op_add(f32, a.hi, b.hi);
    r.val = 1;
    return r;
  }
  if ((a.hi == INFINITY && b.lo == -INFINITY) || (a.lo == -INFINITY && b.hi == INFINITY)) r.nan = 1;
  int ok = 1;
  /* lo: (a.lo, b.lo) is a valid pair unless they are opposite infinities; then one side is {+inf} and the
   * smallest valid result is +inf, if the other side has anything but -inf. */
  if (a.lo == -INFINITY && b.lo == INFINITY)
    ok &= a.hi != -INFINITY, r.lo = INFINITY;
  else if (b.lo == -INFINITY && a.lo == INFINITY)
    ok &= b.hi != -INFINITY, r.lo = INFINITY;
  else
    r.lo = op_add(f32, a.lo, b.lo);
  if (a.hi == INFINITY && b.hi == -INFINITY)
    ok &= a.lo != INFINITY, r.hi = -INFINITY;
  else if (b.hi == INFINITY && a.hi == -INFINITY)
    ok &= b.lo != INFINITY, r.hi = -INFINITY;
  else
    r.hi = op_add(f32, a.hi, b.hi);
  if (!ok) return IV_NAN; /* {+inf} + {-inf}: every pair is NaN */
  r.val = 1;
  return r;
}

/* {x ⊗ y}: monotone in x with the direction of y's sign and vice versa, so the extremes are at corners
 * unless 0 may meet inf (NaN, and which zeros or infinities are attained is not known from the endpoints). */
static iv mul_iv(bctx *c, iv x, iv y) {
  if (!x.val || !y.val) return IV_NAN;
  if (is_point(x) && is_point(y)) {
    double p = op_mul(c->f32, x.lo, y.lo);
    iv r = iv_point(p);
    r.nan |= x.nan || y.nan;
    return r;
  }
  if ((has_zero(x) && has_inf(y)) || (has_inf(x) && has_zero(y))) return full(c);
  double p[4] = {op_mul(c->f32, x.lo, y.lo), op_mul(c->f32, x.lo, y.hi), op_mul(c->f32, x.hi, y.lo),
                 op_mul(c->f32, x.hi, y.hi)};
  iv r = {p[0], p[0], 1, x.nan || y.nan};
  for (int k = 1; k < 4; k++) r.lo = tmin(r.lo, p[k]), r.hi = tmax(r.hi, p[k]);
  return r;
}

/* {fma(x, y, o)}: the product x*y is exact (finite for finite factors), so fma is monotone in o without
 * NaN, and in x and y by the other's sign: the extremes are fma(corner, o.lo) and fma(corner, o.hi).
 * Returns IV_EMPTY where the fused evaluation adds nothing to the unfused one. */
static iv fused_iv(bctx *c, iv x, iv y, iv o) {
  if (!x.val || !y.val || !o.val) return IV_NAN;
  if (isfinite(x.lo) && isfinite(x.hi) && isfinite(y.lo) && isfinite(y.hi)) {
    double xs[2] = {x.lo, x.hi}, ys[2] = {y.lo, y.hi};
    iv r = {INFINITY, -INFINITY, 1, x.nan || y.nan || o.nan};
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2; j++) {
        r.lo = tmin(r.lo, op_fma(c->f32, xs[i], ys[j], o.lo));
        r.hi = tmax(r.hi, op_fma(c->f32, xs[i], ys[j], o.hi));
      }
    return r;
  }
  /* An infinite point factor: the exact product is ±inf (or NaN), so fma(x, y, o) is the same as the
   * rounded product plus o — the unfused candidate already has it. */
  if (is_point(x) && is_point(y)) return IV_EMPTY;
  return full(c);
}

/* A sum's children: each child's summary, and for a product child its factors (the fused alternative). */
typedef struct {
  iv v;
  int prod;
  iv x, y;
} term;

/* One binary addition of two groups of a sum: the plain ⊕, and fma where a group is a single product. */
static iv combine(bctx *c, iv l, iv r, const term *lt, const term *rt) {
  iv acc = add_iv(c->f32, l, r);
  if (lt) iv_union(&acc, fused_iv(c, lt->x, lt->y, r));
  if (rt) iv_union(&acc, fused_iv(c, rt->x, rt->y, l));
  return acc;
}

/* Re-association only: R(i, j) over ranges of consecutive children, the O(m^3) interval DP. */
static int dp_assoc(iv *out, bctx *c, size_t m, const term *t) {
  size_t cells = m * (m + 1) / 2, bytes;
  if (rcl__mul_size(&bytes, cells, sizeof(iv), "bounds DP table")) return RCL_ERR_OVERFLOW;
  iv *R = rcl__malloc(bytes);
  if (!R) return RCL_ERR_OUT_OF_MEMORY;
#define CELL(i, j) R[(j) * ((j) + 1) / 2 + (i)]
  for (size_t i = 0; i < m; i++) CELL(i, i) = t[i].v;
  for (size_t len = 2; len <= m; len++)
    for (size_t i = 0; i + len <= m; i++) {
      size_t j = i + len - 1;
      iv acc = IV_EMPTY;
      for (size_t k = i; k < j; k++) {
        const term *lt = c->fma && k == i && t[i].prod ? &t[i] : NULL;
        const term *rt = c->fma && k + 1 == j && t[j].prod ? &t[j] : NULL;
        iv_union(&acc, combine(c, CELL(i, k), CELL(k + 1, j), lt, rt));
      }
      CELL(i, j) = acc;
    }
  *out = CELL(0, m - 1);
#undef CELL
  rcl__free(R);
  return 0;
}

/* Re-association and commutativity: R(S) over subsets of children, O(3^m). Each unordered split
 * {A, S \ A} is visited once, with A holding S's lowest child (a ⊕ b = b ⊕ a bit for bit). */
static int dp_any(iv *out, bctx *c, size_t m, const term *t) {
  size_t full_set = ((size_t)1 << m) - 1;
  iv *R = rcl__malloc(((size_t)1 << m) * sizeof(iv));
  if (!R) return RCL_ERR_OUT_OF_MEMORY;
  for (size_t s = 1; s <= full_set; s++) {
    size_t low = s & (~s + 1), rest = s ^ low;
    if (!rest) {
      R[s] = t[__builtin_ctzll(s)].v;
      continue;
    }
    iv acc = IV_EMPTY;
    const term *lt = c->fma && t[__builtin_ctzll(low)].prod ? &t[__builtin_ctzll(low)] : NULL;
    for (size_t sub = rest;; sub = (sub - 1) & rest) { /* every submask of rest */
      if (sub != rest) {                               /* A = low | sub, B = rest ^ sub (non-empty) */
        size_t a = low | sub, b = rest ^ sub;
        const term *la = sub == 0 ? lt : NULL;
        const term *rb = c->fma && (b & (b - 1)) == 0 && t[__builtin_ctzll(b)].prod ? &t[__builtin_ctzll(b)] : NULL;
        iv_union(&acc, combine(c, R[a], R[b], la, rb));
      }
      if (sub == 0) break;
    }
    R[s] = acc;
  }
  *out = R[full_set];
  rcl__free(R);
  return 0;
}

/* ---- fast paths ---------------------------------------------------------------------------------------
 * When every child is finite and never NaN (and so are product factors), add_iv and fused_iv reduce to
 * plain arithmetic on the endpoints as long as no partial result overflows. These loops are the DPs above
 * in the dtype itself, without the special cases; the first infinite cell sends the sum back to the
 * general DP (return 1), so their results are those of the general DP, bit for bit. */
static int fast_ok(size_t m, const term *t, int fma) {
  for (size_t k = 0; k < m; k++) {
    const iv *v[3] = {&t[k].v, &t[k].x, &t[k].y};
    for (int j = 0; j < (fma && t[k].prod ? 3 : 1); j++)
      if (!v[j]->val || v[j]->nan || !isfinite(v[j]->lo) || !isfinite(v[j]->hi)) return 0;
  }
  return 1;
}

#define TLT(a, b) ((a) < (b) || ((a) == (b) && signbit(a) && !signbit(b)))
/* Candidate extremes of fusing product child k into an addition with the group whose extremes are ol, oh. */
#define FUSE_INTO(T, FMA, k, ol, oh)                                                                                   \
  do {                                                                                                                 \
    for (int fi = 0; fi < 2; fi++)                                                                                     \
      for (int fj = 0; fj < 2; fj++) {                                                                                 \
        T fx = (T)(fi ? t[k].x.hi : t[k].x.lo), fy = (T)(fj ? t[k].y.hi : t[k].y.lo);                                  \
        T l_ = FMA(fx, fy, ol), h_ = FMA(fx, fy, oh);                                                                  \
        if (TLT(l_, bl)) bl = l_;                                                                                      \
        if (TLT(bh, h_)) bh = h_;                                                                                      \
      }                                                                                                                \
  } while (0)

#define FAST_DP(SUF, T, FMA)                                                                                           \
  static int fast_any_##SUF(iv *out, size_t m, const term *t, int fuse) {                                              \
    size_t nset = (size_t)1 << m;                                                                                      \
    T *lo = rcl__malloc(2 * nset * sizeof(T)), *hi;                                                                    \
    if (!lo) return RCL_ERR_OUT_OF_MEMORY;                                                                             \
    hi = lo + nset;                                                                                                    \
    int over = 0;                                                                                                      \
    for (size_t s = 1; s < nset && !over; s++) {                                                                       \
      size_t low = s & (~s + 1), rest = s ^ low, kl = (size_t)__builtin_ctzll(low);                                    \
      if (!rest) {                                                                                                     \
        lo[s] = (T)t[kl].v.lo;                                                                                         \
        hi[s] = (T)t[kl].v.hi;                                                                                         \
        continue;                                                                                                      \
      }                                                                                                                \
      T bl = (T)INFINITY, bh = (T)-INFINITY;                                                                           \
      for (size_t sub = rest;; sub = (sub - 1) & rest) {                                                               \
        if (sub != rest) {                                                                                             \
          size_t a = low | sub, b = rest ^ sub;                                                                        \
          T l = lo[a] + lo[b], h = hi[a] + hi[b];                                                                      \
          if (TLT(l, bl)) bl = l;                                                                                      \
          if (TLT(bh, h)) bh = h;                                                                                      \
          if (fuse && sub == 0 && t[kl].prod) FUSE_INTO(T, FMA, kl, lo[b], hi[b]);                                     \
          if (fuse && !(b & (b - 1)) && t[__builtin_ctzll(b)].prod)                                                    \
            FUSE_INTO(T, FMA, (size_t)__builtin_ctzll(b), lo[a], hi[a]);                                               \
        }                                                                                                              \
        if (!sub) break;                                                                                               \
      }                                                                                                                \
      over = !isfinite(bl) || !isfinite(bh);                                                                           \
      lo[s] = bl;                                                                                                      \
      hi[s] = bh;                                                                                                      \
    }                                                                                                                  \
    iv r = {lo[nset - 1], hi[nset - 1], 1, 0};                                                                         \
    *out = r;                                                                                                          \
    rcl__free(lo);                                                                                                     \
    return over;                                                                                                       \
  }                                                                                                                    \
  /* Cells (i, k) are read along a row and cells (k + 1, j) along a column, so each is kept twice: row-major           \
   * in rl/rh and column-major in cl/ch, making both inner-loop streams contiguous. */                                 \
  static int fast_assoc_##SUF(iv *out, size_t m, const term *t, int fuse) {                                            \
    size_t bytes;                                                                                                      \
    if (rcl__mul_size(&bytes, 4 * m, m * sizeof(T), "bounds DP table")) return RCL_ERR_OVERFLOW;                       \
    T *rl = rcl__malloc(bytes), *rh, *cl, *ch;                                                                         \
    if (!rl) return RCL_ERR_OUT_OF_MEMORY;                                                                             \
    rh = rl + m * m, cl = rh + m * m, ch = cl + m * m;                                                                 \
    int over = 0;                                                                                                      \
    for (size_t i = 0; i < m; i++) {                                                                                   \
      rl[i * m + i] = cl[i * m + i] = (T)t[i].v.lo;                                                                    \
      rh[i * m + i] = ch[i * m + i] = (T)t[i].v.hi;                                                                    \
    }                                                                                                                  \
    for (size_t len = 2; len <= m && !over; len++)                                                                     \
      for (size_t i = 0; i + len <= m && !over; i++) {                                                                 \
        size_t j = i + len - 1;                                                                                        \
        const T *al = rl + i * m, *ah = rh + i * m, *bl_ = cl + j * m + 1, *bh_ = ch + j * m + 1;                      \
        T bl = (T)INFINITY, bh = (T)-INFINITY;                                                                         \
        for (size_t k = i; k < j; k++) { /* (i..k) + (k+1..j) */                                                       \
          T l = al[k] + bl_[k], h = ah[k] + bh_[k];                                                                    \
          if (TLT(l, bl)) bl = l;                                                                                      \
          if (TLT(bh, h)) bh = h;                                                                                      \
        }                                                                                                              \
        if (fuse && t[i].prod) FUSE_INTO(T, FMA, i, cl[j * m + i + 1], ch[j * m + i + 1]);                             \
        if (fuse && t[j].prod) FUSE_INTO(T, FMA, j, rl[i * m + j - 1], rh[i * m + j - 1]);                             \
        over = !isfinite(bl) || !isfinite(bh);                                                                         \
        rl[i * m + j] = cl[j * m + i] = bl;                                                                            \
        rh[i * m + j] = ch[j * m + i] = bh;                                                                            \
      }                                                                                                                \
    iv r = {rl[m - 1], rh[m - 1], 1, 0}; /* cell (0, m - 1) */                                                         \
    *out = r;                                                                                                          \
    rcl__free(rl);                                                                                                     \
    return over;                                                                                                       \
  }
FAST_DP(f32, float, fmaf)
FAST_DP(f64, double, fma)

/* The exact DP of one sum: the fast path where it applies, else (or on overflow) the general one. */
static int dp_sum(iv *out, bctx *c, size_t m, const term *t, int any) {
  if (fast_ok(m, t, c->fma)) {
    int rc = any ? (c->f32 ? fast_any_f32(out, m, t, c->fma) : fast_any_f64(out, m, t, c->fma))
                 : (c->f32 ? fast_assoc_f32(out, m, t, c->fma) : fast_assoc_f64(out, m, t, c->fma));
    if (rc <= 0) return rc;
  }
  return any ? dp_any(out, c, m, t) : dp_assoc(out, c, m, t);
}

/* Outward-rounded double arithmetic for the enclosure: a round-to-nearest result is within half an ulp
 * of the exact value, so one step outward bounds it (also for subnormal and overflowing results). */
static double dn(double r) { return nextafter(r, -INFINITY); }
static double up(double r) { return nextafter(r, INFINITY); }

/* The smallest value of the dtype >= x, and the largest <= x (x a double bound). */
static double ceil_to(int f32, double x) {
  if (!f32 || isinf(x)) return x;
  float f = (float)x;
  if ((double)f < x) f = nextafterf(f, INFINITY);
  return f;
}
static double floor_to(int f32, double x) {
  if (!f32 || isinf(x)) return x;
  float f = (float)x;
  if ((double)f > x) f = nextafterf(f, -INFINITY);
  return f;
}

/* The enclosure of a sum too large for the exact DP (docs/bounds.md, "Large sums"). Every evaluation is
 * sum_c t_c (1 + θ_c) with |θ_c| <= γ_{m-1} = (m-1)u / (1 - (m-1)u) (Higham, Accuracy and Stability of
 * Numerical Algorithms, 2nd ed., eq. 4.4), where t_c is child c's value as it enters an addition: the
 * child's own value, or for a fused product the exact product. Hence
 * sum lo(t_c) - γ sum |t_c|max <= result <= sum hi(t_c) + γ sum |t_c|max, evaluated with outward rounding,
 * provided no partial sum can overflow, which (1 + γ) sum |t_c|max < MAX guarantees. Additions are
 * exact when their result is subnormal, but an fma's is not (x*y + c may need more bits than the
 * subnormal grid holds): each fused product adds at most half a subnormal spacing η, carried by later
 * additions, so the bound grows by (number of products) * η * (1 + γ). */
static iv enclose(bctx *c, size_t m, const term *t) {
  double u = c->f32 ? 0x1p-24 : 0x1p-53, maxv = c->f32 ? FLT_MAX : DBL_MAX;
  int pos_inf = 0, neg_inf = 0;
  size_t bad = 0;
  for (size_t i = 0; i < m; i++)
    if (!t[i].v.val) return IV_NAN; /* every evaluation of that child is NaN, and NaN propagates */
  for (size_t i = 0; i < m; i++) {
    iv v = t[i].v;
    int fused = c->fma && t[i].prod;
    if (!v.nan && is_point(v) && isinf(v.lo) &&
        (!fused || (is_point(t[i].x) && is_point(t[i].y) && (isinf(t[i].x.lo) || isinf(t[i].y.lo)))))
      *(v.lo > 0 ? &pos_inf : &neg_inf) = 1; /* an infinite child, also when fused */
    else if (v.nan || has_inf(v) || (fused && (has_inf(t[i].x) || has_inf(t[i].y))))
      bad++;
  }
  if (pos_inf && neg_inf) return IV_NAN; /* a subtree holding +inf gives +inf or NaN; one holding both, NaN */
  if (bad) return full(c);
  /* Bounds of each t_c, and their sums, rounded outward. */
  double slo = 0, shi = 0, smag = 0;
  for (size_t i = 0; i < m; i++) {
    double lo = t[i].v.lo, hi = t[i].v.hi;
    if (isinf(lo) || isinf(hi)) continue; /* the infinite children, handled below */
    if (c->fma && t[i].prod) {
      double xs[2] = {t[i].x.lo, t[i].x.hi}, ys[2] = {t[i].y.lo, t[i].y.hi};
      for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
          double p = xs[a] * ys[b]; /* exact for f32 factors; for f64 within half an ulp */
          lo = fmin(lo, c->f32 ? p : dn(p));
          hi = fmax(hi, c->f32 ? p : up(p));
        }
    }
    slo = dn(slo + lo);
    shi = up(shi + hi);
    smag = up(smag + fmax(fabs(lo), fabs(hi)));
  }
  if ((double)(m - 1) * u >= 0.5) return full(c);
  double g = up(((double)(m - 1) * u) / dn(1.0 - (double)(m - 1) * u));
  size_t products = 0;
  for (size_t i = 0; c->fma && i < m; i++) products += t[i].prod;
  double eta = c->f32 ? 0x1p-149 : 0x1p-1074; /* a whole spacing: more than half, and representable */
  double err = up(up(g * smag) + up(up((double)products * eta) * up(1.0 + g))), bound = up(smag + err);
  int may_overflow = !(bound < maxv);
  c->enclosed++;
  if (pos_inf || neg_inf) {
    /* Growing the sum outward from an infinite child never leaves that infinity, so it is a value of
     * some evaluation; NaN needs a finite part to overflow to the other infinity, which bound < MAX
     * excludes (otherwise we cannot tell, and say so). */
    double inf = pos_inf ? INFINITY : -INFINITY;
    iv r = {inf, inf, 1, may_overflow};
    if (may_overflow) c->tight = 0;
    return r;
  }
  if (may_overflow) return full(c);
  c->tight = 0;
  iv r = {ceil_to(c->f32, dn(slo - err)), floor_to(c->f32, up(shi + err)), 1, 0};
  return r;
}

/* ---- computing -------------------------------------------------------------------------------------- */
const char *rcl_bounds_order_name(rcl_bounds_order o) {
  return o == RCL_BOUNDS_ANY_ORDER ? "any" : o == RCL_BOUNDS_ASSOCIATIVE ? "assoc" : "unknown-order";
}

int rcl_bounds_order_parse(rcl_bounds_order *out, const char *name) {
  if (!out || !name) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_bounds_order_parse: NULL argument");
  if (!strcasecmp(name, "any"))
    *out = RCL_BOUNDS_ANY_ORDER;
  else if (!strcasecmp(name, "assoc"))
    *out = RCL_BOUNDS_ASSOCIATIVE;
  else
    return rcl__fail(RCL_ERR_INVALID_ARG, "unknown evaluation order \"%s\" (expected any or assoc)", name);
  return 0;
}

/* The options (opts, or the defaults when NULL) into o, checked. */
static int bounds_options(rcl_bounds_options *o, const rcl_bounds_options *opts) {
  *o = (rcl_bounds_options)RCL_BOUNDS_OPTIONS_INIT;
  if (opts) {
    if (opts->version != RCL_BOUNDS_OPTIONS_VERSION)
      return rcl__fail(RCL_ERR_INVALID_ARG,
                       "rcl_bounds_options.version is %u, expected %u (use RCL_BOUNDS_OPTIONS_INIT)", opts->version,
                       RCL_BOUNDS_OPTIONS_VERSION);
    *o = *opts;
  }
  if (o->order != RCL_BOUNDS_ANY_ORDER && o->order != RCL_BOUNDS_ASSOCIATIVE)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_bounds_options.order %d is not an rcl_bounds_order", (int)o->order);
  if (o->max_any > RCL_BOUNDS_ANY_LIMIT)
    return rcl__fail(RCL_ERR_INVALID_ARG, "max_any %zu exceeds %u (the any-order DP takes O(3^m) time)", o->max_any,
                     RCL_BOUNDS_ANY_LIMIT);
  if (o->max_assoc > RCL_BOUNDS_ASSOC_LIMIT)
    return rcl__fail(RCL_ERR_INVALID_ARG, "max_assoc %zu exceeds %u (the associative DP takes O(m^3) time)",
                     o->max_assoc, RCL_BOUNDS_ASSOC_LIMIT);
  return 0;
}

/* Marks root's subtree in in[] (one pass downward: children always have smaller indices than their
 * parent); *largest and *maxkids: the most terms of one of its sums. */
static void mark_subtree(unsigned char *in, size_t *largest, size_t *maxkids, const rcl_expr *e, size_t root) {
  in[root] = 1;
  for (size_t i = root + 1; i-- > 0;)
    if (in[i]) {
      const expr_node *nd = &e->nodes[i];
      for (size_t k = 0; k < nd->count; k++) in[e->kids[nd->first + k]] = 1;
      if (nd->kind == NODE_SUM) {
        if (nd->count > *largest) *largest = nd->count;
        if (nd->count > *maxkids) *maxkids = nd->count;
      }
    }
}

/* The bounds val[i] of node i from its children's (t: room for its terms): a sum of more than limit terms
 * is enclosed, a smaller one solved exactly. */
static int eval_node(iv *val, bctx *c, term *t, const rcl_expr *e, size_t i, size_t limit, int any_order) {
  const expr_node *nd = &e->nodes[i];
  const size_t *kid = e->kids + nd->first;
  if (nd->kind == NODE_VALUE) {
    val[i] = iv_point(nd->value);
  } else if (nd->kind == NODE_PRODUCT) {
    val[i] = mul_iv(c, val[kid[0]], val[kid[1]]);
  } else if (nd->count == 0) {
    val[i] = iv_point(0.0); /* the empty sum is +0, as in rcl_reduce */
  } else {
    for (size_t k = 0; k < nd->count; k++) {
      const expr_node *ch = &e->nodes[kid[k]];
      t[k].v = val[kid[k]];
      t[k].prod = ch->kind == NODE_PRODUCT;
      if (t[k].prod) {
        t[k].x = val[e->kids[ch->first]];
        t[k].y = val[e->kids[ch->first + 1]];
      }
    }
    if (nd->count == 1)
      val[i] = t[0].v;
    else if (nd->count > limit)
      val[i] = enclose(c, nd->count, t);
    else
      return dp_sum(&val[i], c, nd->count, t, any_order);
  }
  return 0;
}

/* The result of root's bounds r into out. */
static void bounds_result(rcl_bounds *out, const rcl_expr *e, iv r, const bctx *c, const rcl_bounds_options *o,
                          size_t largest) {
  memset(out, 0, sizeof *out);
  out->dtype = e->dtype;
  out->lo = r.val ? r.lo : NAN;
  out->hi = r.val ? r.hi : NAN;
  out->has_value = r.val;
  out->may_be_nan = r.nan;
  out->tight = c->tight;
  out->order = o->order;
  out->fma = c->fma;
  out->largest_sum = largest;
  out->enclosed_sums = c->enclosed;
}

int rcl_bounds_compute(rcl_bounds *out, const rcl_expr *e, size_t root, const rcl_bounds_options *opts) {
  if (!out || !e) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_bounds_compute: NULL argument");
  rcl_bounds_options o;
  int rc = bounds_options(&o, opts);
  if (rc) return rc;
  size_t max_any = o.max_any ? o.max_any : RCL_BOUNDS_ANY_DEFAULT;
  size_t max_assoc = o.max_assoc ? o.max_assoc : RCL_BOUNDS_ASSOC_DEFAULT;
  size_t limit = o.order == RCL_BOUNDS_ANY_ORDER ? max_any : max_assoc;
  if (root >= e->n)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_bounds_compute: root %zu does not exist (the expression has %zu nodes)",
                     root, e->n);

  /* Children always have smaller indices than their parent, so one pass downward marks root's subtree
   * and one pass upward evaluates it, without recursion. */
  size_t largest = 0, nodes = root + 1, maxkids = 1;
  unsigned char *in = rcl__calloc(nodes, 1);
  iv *val = rcl__malloc(nodes * sizeof *val);
  if (!in || !val) {
    rcl__free(in);
    rcl__free(val);
    return RCL_ERR_OUT_OF_MEMORY;
  }
  mark_subtree(in, &largest, &maxkids, e, root);
  if (o.exact_only && largest > limit)
    rc = rcl__fail(RCL_ERR_INVALID_ARG,
                   "a sum of %zu terms exceeds the exact %s-order limit of %zu (raise max_%s up to %u, or allow the "
                   "enclosure)",
                   largest, rcl_bounds_order_name(o.order), limit, rcl_bounds_order_name(o.order),
                   o.order == RCL_BOUNDS_ANY_ORDER ? RCL_BOUNDS_ANY_LIMIT : RCL_BOUNDS_ASSOC_LIMIT);
  term *t = rc ? NULL : rcl__malloc(maxkids * sizeof *t);
  if (!rc && !t) rc = RCL_ERR_OUT_OF_MEMORY;
  bctx c = {e->dtype == RCL_F32, !o.no_fma, 1, 0};
  for (size_t i = 0; !rc && i < nodes; i++)
    if (in[i]) rc = eval_node(val, &c, t, e, i, limit, o.order == RCL_BOUNDS_ANY_ORDER);
  if (!rc) bounds_result(out, e, val[root], &c, &o, largest);
  rcl__free(t);
  rcl__free(in);
  rcl__free(val);
  return rc;
}

static int bound_built(rcl_bounds *out, rcl_expr *e, int rc, const rcl_bounds_options *opts) {
  if (!rc) rc = rcl_bounds_compute(out, e, rcl_expr_size(e) - 1, opts);
  rcl_expr_free(e);
  return rc;
}

int rcl_bounds_sum(rcl_bounds *out, rcl_dtype dtype, size_t n, const void *x, const rcl_bounds_options *opts) {
  rcl_expr *e = NULL;
  int rc = rcl_expr_sum_of(&e, dtype, n, x);
  return bound_built(out, e, rc, opts);
}

int rcl_bounds_dot(rcl_bounds *out, rcl_dtype dtype, size_t n, const void *x, const void *y,
                   const rcl_bounds_options *opts) {
  rcl_expr *e = NULL;
  int rc = rcl_expr_dot(&e, dtype, n, x, y);
  return bound_built(out, e, rc, opts);
}

int rcl_bounds_stencil9(rcl_bounds *out, rcl_dtype dtype, const void *w, const void *v,
                        const rcl_bounds_options *opts) {
  rcl_expr *e = NULL;
  int rc = rcl_expr_stencil9(&e, dtype, w, v);
  return bound_built(out, e, rc, opts);
}

/* ---- positions --------------------------------------------------------------------------------------- */
/* Steps from a to b on the ordered integer line of bit patterns: consecutive values differ by 1, -0 and
 * +0 are both 0. Keys are sign-magnitude integers; the difference is exact in int64 for keys of one sign
 * (a double's keys do not fit a double's 53 bits, so they are never converted before subtracting). */
static double steps(rcl_dtype dt, double a, double b) {
  int64_t ka, kb;
  if (dt == RCL_F32) {
    float fa = (float)a, fb = (float)b;
    uint32_t ua, ub;
    memcpy(&ua, &fa, 4);
    memcpy(&ub, &fb, 4);
    ka = (ua >> 31) ? -(int64_t)(ua & 0x7fffffffu) : (int64_t)ua;
    kb = (ub >> 31) ? -(int64_t)(ub & 0x7fffffffu) : (int64_t)ub;
  } else {
    uint64_t ua, ub;
    memcpy(&ua, &a, 8);
    memcpy(&ub, &b, 8);
    ka = (ua >> 63) ? -(int64_t)(ua & 0x7fffffffffffffffu) : (int64_t)ua;
    kb = (ub >> 63) ? -(int64_t)(ub & 0x7fffffffffffffffu) : (int64_t)ub;
  }
  if ((ka < 0) == (kb < 0)) return (double)(kb - ka);
  return (double)kb - (double)ka; /* opposite signs: |kb - ka| may exceed int64; the distance is huge anyway */
}

double rcl_bounds_width_ulps(const rcl_bounds *b) {
  if (!b || !b->has_value) return NAN;
  return steps(b->dtype, b->lo, b->hi);
}

int rcl_bounds_locate(const rcl_bounds *b, const void *value, double *from_lo, double *to_hi) {
  if (from_lo) *from_lo = NAN;
  if (to_hi) *to_hi = NAN;
  if (!b || !value) return 0;
  double v;
  if (b->dtype == RCL_F32) {
    float f;
    memcpy(&f, value, 4);
    v = f;
  } else {
    memcpy(&v, value, 8);
  }
  if (isnan(v)) return b->may_be_nan;
  if (!b->has_value) return 0;
  if (from_lo) *from_lo = steps(b->dtype, b->lo, v);
  if (to_hi) *to_hi = steps(b->dtype, v, b->hi);
  return !tlt(v, b->lo) && !tlt(b->hi, v);
}
