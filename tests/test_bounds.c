/* Volatility bounds: the DP against brute-force enumeration of every parenthesisation (and, for the
 * any-order mode, every permutation) and every FMA contraction choice, bit for bit; concrete evaluation
 * orders (reprocl's ordered contract, left-to-right, right-to-left, pairwise, random trees, fma chains)
 * inside the interval; points for exact integer data; NaN and infinity rules; the large-sum enclosure;
 * argument errors; and the values each device computes (reproducible and native) inside the bounds. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "testlib.h"

/* ---- the dtype's operations in double (values of a float are exact in a double) ------------------ */
static int F32;
static double rnd(double v) { return F32 ? (double)(float)v : v; }
static double add(double a, double b) { return F32 ? (double)((float)a + (float)b) : a + b; }
static double mul(double a, double b) { return F32 ? (double)((float)a * (float)b) : a * b; }
static double fmad(double a, double b, double c) {
  return F32 ? (double)fmaf((float)a, (float)b, (float)c) : fma(a, b, c);
}
/* The total order of the bounds: -0 below +0. */
static int tlt(double a, double b) { return a < b || (a == b && signbit(a) && !signbit(b)); }
static int same_bits(double a, double b) { return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b)); }

/* ---- value sets: every result the brute force finds ---------------------------------------------- */
typedef struct {
  double *v;
  size_t n, cap;
  int nan;
} vset;

static void vs_add(vset *s, double x) {
  if (isnan(x)) {
    s->nan = 1;
    return;
  }
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 8;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
    ck_assert_ptr_nonnull(s->v);
  }
  s->v[s->n++] = x;
}
static int cmp_bits(const void *a, const void *b) {
  uint64_t x, y;
  memcpy(&x, a, 8);
  memcpy(&y, b, 8);
  return x < y ? -1 : x > y;
}
/* Sorts by bit pattern and drops duplicates (keeps the sets small between steps). */
static void vs_norm(vset *s) {
  if (s->n < 2) return;
  qsort(s->v, s->n, sizeof *s->v, cmp_bits);
  size_t k = 1;
  for (size_t i = 1; i < s->n; i++)
    if (!same_bits(s->v[i], s->v[k - 1])) s->v[k++] = s->v[i];
  s->n = k;
}
static void vs_free(vset *s) {
  free(s->v);
  memset(s, 0, sizeof *s);
}

/* ---- a mirror of the expression, evaluated by brute force ------------------------------------------ */
#define MAXN 64
#define MAXK 8
typedef struct {
  int kind; /* 0 value, 1 product, 2 sum */
  double value;
  size_t nk;
  size_t kid[MAXK];
} tnode;
typedef struct {
  rcl_expr *e;
  tnode node[MAXN];
  size_t n;
} texpr;

static void tx_init(texpr *t, rcl_dtype dt) {
  memset(t, 0, sizeof *t);
  rt_ok(rcl_expr_create(&t->e, dt));
}
static size_t tx_value(texpr *t, double v) {
  size_t id;
  if (F32) {
    float f = (float)v;
    rt_ok(rcl_expr_value(t->e, &id, &f));
  } else {
    rt_ok(rcl_expr_value(t->e, &id, &v));
  }
  ck_assert_uint_eq(id, t->n);
  t->node[t->n] = (tnode){0, rnd(v), 0, {0}};
  return t->n++;
}
static size_t tx_product(texpr *t, size_t a, size_t b) {
  size_t id;
  rt_ok(rcl_expr_product(t->e, &id, a, b));
  ck_assert_uint_eq(id, t->n);
  t->node[t->n] = (tnode){1, 0, 2, {a, b}};
  return t->n++;
}
static size_t tx_sum(texpr *t, size_t k, const size_t *kids) {
  size_t id;
  rt_ok(rcl_expr_sum(t->e, &id, k, kids));
  ck_assert_uint_eq(id, t->n);
  t->node[t->n] = (tnode){2, 0, k, {0}};
  memcpy(t->node[t->n].kid, kids, k * sizeof *kids);
  return t->n++;
}

/* An operand of a sum being evaluated: its set of values; a product child keeps its factor sets too. */
typedef struct {
  vset v;
  int prod;
  vset x, y;
} operand;

static int bf_fma, bf_any;

/* Every way to finish a sum whose remaining operands are ops[0..k): pick any two (adjacent ones only
 * without commutativity), add them (or fuse a product operand into the addition), recurse. This visits
 * every binary tree over every permutation (many several times) and every contraction choice. */
static void bf_sum(vset *out, operand *ops, size_t k) {
  if (k == 1) {
    for (size_t i = 0; i < ops[0].v.n; i++) vs_add(out, ops[0].v.v[i]);
    out->nan |= ops[0].v.nan;
    return;
  }
  for (size_t i = 0; i < k; i++)
    for (size_t j = i + 1; j < k; j++) {
      if (!bf_any && j != i + 1) continue;
      operand nw = {0};
      for (size_t a = 0; a < ops[i].v.n; a++)
        for (size_t b = 0; b < ops[j].v.n; b++) vs_add(&nw.v, add(ops[i].v.v[a], ops[j].v.v[b]));
      nw.v.nan |= ops[i].v.nan || ops[j].v.nan;
      for (int side = 0; side < 2 && bf_fma; side++) {
        operand *p = side ? &ops[j] : &ops[i], *o = side ? &ops[i] : &ops[j];
        if (!p->prod) continue;
        for (size_t a = 0; a < p->x.n; a++)
          for (size_t b = 0; b < p->y.n; b++)
            for (size_t c = 0; c < o->v.n; c++) vs_add(&nw.v, fmad(p->x.v[a], p->y.v[b], o->v.v[c]));
        if (p->x.nan || p->y.nan || o->v.nan) nw.v.nan = 1;
      }
      vs_norm(&nw.v);
      operand rest[MAXN];
      size_t r = 0;
      for (size_t q = 0; q < k; q++) {
        if (q == i)
          rest[r++] = nw;
        else if (q != j)
          rest[r++] = ops[q];
      }
      bf_sum(out, rest, k - 1);
      vs_free(&nw.v);
    }
}

static vset bf_node(const texpr *t, size_t id) {
  const tnode *nd = &t->node[id];
  vset r = {0};
  if (nd->kind == 0) {
    vs_add(&r, nd->value);
  } else if (nd->kind == 1) {
    vset a = bf_node(t, nd->kid[0]), b = bf_node(t, nd->kid[1]);
    for (size_t i = 0; i < a.n; i++)
      for (size_t j = 0; j < b.n; j++) vs_add(&r, mul(a.v[i], b.v[j]));
    r.nan |= a.nan || b.nan;
    vs_norm(&r);
    vs_free(&a);
    vs_free(&b);
  } else if (nd->nk == 0) {
    vs_add(&r, 0.0);
  } else {
    operand ops[MAXK];
    for (size_t k = 0; k < nd->nk; k++) {
      const tnode *ch = &t->node[nd->kid[k]];
      memset(&ops[k], 0, sizeof ops[k]);
      ops[k].v = bf_node(t, nd->kid[k]);
      ops[k].prod = ch->kind == 1;
      if (ops[k].prod) {
        ops[k].x = bf_node(t, ch->kid[0]);
        ops[k].y = bf_node(t, ch->kid[1]);
      }
    }
    bf_sum(&r, ops, nd->nk);
    vs_norm(&r);
    for (size_t k = 0; k < nd->nk; k++) {
      vs_free(&ops[k].v);
      vs_free(&ops[k].x);
      vs_free(&ops[k].y);
    }
  }
  return r;
}

/* Checks the DP's bounds of t's last node against the brute force, in the given mode: bit for bit
 * when the DP says tight, containment otherwise. Returns whether the DP said tight. */
static int check_tree(texpr *t, rcl_bounds_order order, int fma_on, const char *what) {
  rcl_bounds_options o = RCL_BOUNDS_OPTIONS_INIT;
  o.order = order;
  o.no_fma = !fma_on;
  rcl_bounds b;
  rt_ok(rcl_bounds_compute(&b, t->e, t->n - 1, &o));
  bf_fma = fma_on;
  bf_any = order == RCL_BOUNDS_ANY_ORDER;
  vset s = bf_node(t, t->n - 1);
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < s.n; i++) {
    if (i == 0 || tlt(s.v[i], lo)) lo = s.v[i];
    if (i == 0 || tlt(hi, s.v[i])) hi = s.v[i];
  }
  const char *ord = rcl_bounds_order_name(order);
  ck_assert_msg(b.order == order && b.fma == fma_on, "%s: the result does not echo the options", what);
  if (b.tight) {
    ck_assert_msg(b.has_value == (s.n > 0), "%s (%s, fma %d): has_value %d, brute force found %zu values", what, ord,
                  fma_on, b.has_value, s.n);
    ck_assert_msg(b.may_be_nan == s.nan, "%s (%s, fma %d): may_be_nan %d, brute force %d", what, ord, fma_on,
                  b.may_be_nan, s.nan);
    if (s.n)
      ck_assert_msg(same_bits(b.lo, lo) && same_bits(b.hi, hi),
                    "%s (%s, fma %d): DP [%a, %a], brute force [%a, %a] over %zu distinct values", what, ord, fma_on,
                    b.lo, b.hi, lo, hi, s.n);
  } else {
    ck_assert_msg(!s.n || (b.has_value && !tlt(lo, b.lo) && !tlt(b.hi, hi)),
                  "%s (%s, fma %d): enclosure [%a, %a] misses brute force [%a, %a]", what, ord, fma_on, b.lo, b.hi, lo,
                  hi);
    ck_assert_msg(!s.nan || b.may_be_nan, "%s: enclosure misses NaN", what);
  }
  vs_free(&s);
  return b.tight;
}

/* ---- test data ----------------------------------------------------------------------------------- */
/* Kinds: rcl_generate's four, plus values built to hit rounding ties and cancellation in short sums,
 * values near the overflow threshold, and small integers. */
static double draw(rt_rng *r, int kind, size_t i, const double *prev) {
  double maxv = F32 ? FLT_MAX : DBL_MAX;
  int p = F32 ? 24 : 53;
  switch (kind) {
  case 0:
    return rnd(2 * rt_uniform(r) - 1);
  case 1: { /* ties: integers around 2^p, and halves/quarters, so partial sums round at ties */
    double m = (double)(rt_next(r) % 9) - 4;
    return rnd(ldexp(m, (int)(rt_next(r) % 4)) + (rt_next(r) % 2 ? ldexp(1.0, p) : 0) * (rt_next(r) % 2 ? 1 : -1));
  }
  case 2: /* cancellation: negated earlier values, large and small magnitudes */
    if (i > 0 && rt_next(r) % 2) return -prev[rt_next(r) % i];
    return rnd(ldexp(2 * rt_uniform(r) - 1, (int)(rt_next(r) % 60) - 30));
  case 3: {                                                                        /* wide exponents incl. subnormals */
    int e = F32 ? (int)(rt_next(r) % 278) - 150 : (int)(rt_next(r) % 2099) - 1075; /* no overflow */
    return rnd(ldexp(2 * rt_uniform(r) - 1, e));
  }
  case 4: /* near overflow */
    return rnd((rt_next(r) % 2 ? 1 : -1) * maxv * (0.5 + 0.5 * rt_uniform(r)));
  case 5: { /* specials sprinkled in ordinary values */
    static const double sp[] = {INFINITY, -INFINITY, NAN, 0.0, -0.0, 1.0};
    return rt_next(r) % 3 ? rnd(2 * rt_uniform(r) - 1) : sp[rt_next(r) % 6];
  }
  case 6:
    return (double)((int)(rt_next(r) % 41) - 20); /* small integers */
  default: {                                      /* signed zeros and tiny values, for the sign-of-zero rules */
    static const double z[] = {0.0, -0.0};
    return rt_next(r) % 2 ? z[rt_next(r) % 2] : rnd((rt_next(r) % 2 ? 1 : -1) * (F32 ? 0x1p-149 : 0x1p-1074));
  }
  }
}
#define NKINDS 8

static void set_dtype(rcl_dtype dt) { F32 = dt == RCL_F32; }
static const rcl_dtype dtypes[] = {RCL_F32, RCL_F64};

/* ---- tests ------------------------------------------------------------------------------------------ */
/* Flat sums x_1 + ... + x_n, n <= 6 (any order) and n <= 7 (re-association), every data kind. */
START_TEST(sum_matches_brute_force) {
  for (size_t d = 0; d < 2; d++) {
    set_dtype(dtypes[d]);
    rt_rng r = {100 + d};
    for (int kind = 0; kind < NKINDS; kind++)
      for (size_t n = 0; n <= 7; n++)
        for (int rep = 0; rep < (n <= 5 ? 12 : 3); rep++) {
          texpr t;
          tx_init(&t, dtypes[d]);
          double prev[MAXK];
          size_t kids[MAXK];
          for (size_t i = 0; i < n; i++) kids[i] = tx_value(&t, prev[i] = draw(&r, kind, i, prev));
          tx_sum(&t, n, kids);
          char what[96];
          snprintf(what, sizeof what, "%s sum kind %d n=%zu rep %d", rcl_dtype_name(dtypes[d]), kind, n, rep);
          /* Sums have no products: the DP is exact for every input, infinities and NaN included. */
          if (n <= 6) ck_assert_msg(check_tree(&t, RCL_BOUNDS_ANY_ORDER, 1, what), "%s: not tight", what);
          ck_assert_msg(check_tree(&t, RCL_BOUNDS_ASSOCIATIVE, 1, what), "%s: not tight", what);
          rcl_expr_free(t.e);
        }
  }
}
END_TEST

/* Dot products sum x_k*y_k (one SpMV row), with and without contraction, n <= 5 / 6. */
START_TEST(dot_matches_brute_force) {
  for (size_t d = 0; d < 2; d++) {
    set_dtype(dtypes[d]);
    rt_rng r = {200 + d};
    for (int kind = 0; kind < NKINDS; kind++)
      for (size_t n = 1; n <= 6; n++)
        for (int rep = 0; rep < (n <= 4 ? 10 : 2); rep++) {
          texpr t;
          tx_init(&t, dtypes[d]);
          double px[MAXK], py[MAXK];
          size_t kids[MAXK];
          for (size_t i = 0; i < n; i++) {
            size_t a = tx_value(&t, px[i] = draw(&r, kind, i, px));
            size_t b = tx_value(&t, py[i] = draw(&r, kind == 4 ? 6 : kind, i, py)); /* near-MAX times a small int */
            kids[i] = tx_product(&t, a, b);
          }
          tx_sum(&t, n, kids);
          char what[96];
          snprintf(what, sizeof what, "%s dot kind %d n=%zu rep %d", rcl_dtype_name(dtypes[d]), kind, n, rep);
          for (int f = 0; f < 2; f++) {
            /* Point factors: tight for every input. */
            if (n <= 5) ck_assert_msg(check_tree(&t, RCL_BOUNDS_ANY_ORDER, f, what), "%s: not tight", what);
            ck_assert_msg(check_tree(&t, RCL_BOUNDS_ASSOCIATIVE, f, what), "%s: not tight", what);
          }
          rcl_expr_free(t.e);
        }
  }
}
END_TEST

static void build_stencil(texpr *t, const double *w, const double *v) {
  size_t nw[3], nv[9], p[3], s;
  for (int i = 0; i < 3; i++) nw[i] = tx_value(t, w[i]);
  for (int i = 0; i < 9; i++) nv[i] = tx_value(t, v[i]);
  p[0] = tx_product(t, nw[0], nv[0]);
  s = tx_sum(t, 4, nv + 1);
  p[1] = tx_product(t, nw[1], s);
  s = tx_sum(t, 4, nv + 5);
  p[2] = tx_product(t, nw[2], s);
  tx_sum(t, 3, p);
}

/* The 9-point stencil point, with weights of both signs (a negative weight flips the inner sum's
 * interval) and zeros; also that rcl_expr_stencil9 builds the same expression. */
START_TEST(stencil_matches_brute_force) {
  for (size_t d = 0; d < 2; d++) {
    set_dtype(dtypes[d]);
    rt_rng r = {300 + d};
    for (int kind = 0; kind < NKINDS; kind++)
      for (int rep = 0; rep < 12; rep++) {
        double w[3], v[9];
        for (int i = 0; i < 3; i++)
          w[i] = rep % 4 == 0 ? draw(&r, kind, (size_t)i, w) : rnd((rt_uniform(&r) - 0.5) * 3);
        if (rep % 6 == 1) w[rt_next(&r) % 3] = 0.0;
        for (int i = 0; i < 9; i++) v[i] = draw(&r, kind, (size_t)i, v);
        texpr t;
        tx_init(&t, dtypes[d]);
        build_stencil(&t, w, v);
        char what[96];
        snprintf(what, sizeof what, "%s stencil kind %d rep %d", rcl_dtype_name(dtypes[d]), kind, rep);
        int tight = 0;
        for (int f = 0; f < 2; f++) {
          tight += check_tree(&t, RCL_BOUNDS_ANY_ORDER, f, what);
          tight += check_tree(&t, RCL_BOUNDS_ASSOCIATIVE, f, what);
        }
        /* Only infinities inside an inner sum can make the DP fall back to an enclosure. */
        if (kind <= 2 || kind >= 6) ck_assert_msg(tight == 4, "%s: not tight", what);
        /* The library's builder gives the same bounds. */
        rcl_bounds a, b;
        float wf[3], vf[9];
        for (int i = 0; i < 3; i++) wf[i] = (float)w[i];
        for (int i = 0; i < 9; i++) vf[i] = (float)v[i];
        rt_ok(rcl_bounds_compute(&a, t.e, t.n - 1, NULL));
        rt_ok(rcl_bounds_stencil9(&b, dtypes[d], F32 ? (void *)wf : (void *)w, F32 ? (void *)vf : (void *)v, NULL));
        ck_assert_msg(same_bits(a.lo, b.lo) && same_bits(a.hi, b.hi) && a.tight == b.tight, "%s: stencil9 differs",
                      what);
        rcl_expr_free(t.e);
      }
  }
}
END_TEST

/* Random trees: sums of 1..4 children that are values, products (of values or of sums, so factors are
 * intervals of either sign) or nested sums. */
static size_t random_tree(texpr *t, rt_rng *r, int depth, int kind) {
  int what = depth <= 0 ? 0 : (int)(rt_next(r) % 3);
  if (what == 0) return tx_value(t, draw(r, kind, 0, NULL));
  if (what == 1) {
    size_t a = random_tree(t, r, depth - 1, kind), b = random_tree(t, r, depth - 1, kind);
    return tx_product(t, a, b);
  }
  size_t k = 1 + (size_t)(rt_next(r) % 4), kids[MAXK];
  for (size_t i = 0; i < k; i++) kids[i] = random_tree(t, r, depth - 1, kind);
  return tx_sum(t, k, kids);
}

START_TEST(random_trees_match_brute_force) {
  for (size_t d = 0; d < 2; d++) {
    set_dtype(dtypes[d]);
    rt_rng r = {400 + d};
    size_t tight = 0, total = 0;
    for (int kind = 0; kind < NKINDS; kind++)
      for (int rep = 0; rep < 40; rep++) {
        texpr t;
        tx_init(&t, dtypes[d]);
        size_t kids[4];
        /* The root is a sum of products of subtrees, so fused alternatives always exist. */
        for (int i = 0; i < 3; i++) {
          size_t a = random_tree(&t, &r, 1, kind == 2 ? 0 : kind), b = random_tree(&t, &r, 1, kind == 2 ? 0 : kind);
          kids[i] = tx_product(&t, a, b);
        }
        kids[3] = random_tree(&t, &r, 2, kind == 2 ? 0 : kind);
        tx_sum(&t, 4, kids);
        char what[96];
        snprintf(what, sizeof what, "%s random tree kind %d rep %d", rcl_dtype_name(dtypes[d]), kind, rep);
        for (int f = 0; f < 2; f++) {
          tight += check_tree(&t, RCL_BOUNDS_ANY_ORDER, f, what);
          tight += check_tree(&t, RCL_BOUNDS_ASSOCIATIVE, f, what);
          total += 2;
        }
        rcl_expr_free(t.e);
      }
    /* The fallback is for 0 meeting inf only; most trees must be tight. */
    ck_assert_msg(tight * 10 >= total * 8, "%s: only %zu of %zu random trees were tight", rcl_dtype_name(dtypes[d]),
                  tight, total);
  }
}
END_TEST

/* ---- concrete evaluation orders ------------------------------------------------------------------ */
static double get(const void *x, size_t i) { return F32 ? (double)((const float *)x)[i] : ((const double *)x)[i]; }
static double term(const void *x, const void *y, size_t i) { return y ? mul(get(x, i), get(y, i)) : get(x, i); }
static double left_to_right(const void *x, const void *y, size_t n) {
  double s = term(x, y, 0);
  for (size_t i = 1; i < n; i++) s = add(s, term(x, y, i));
  return s;
}
static double right_to_left(const void *x, const void *y, size_t n) {
  double s = term(x, y, n - 1);
  for (size_t i = n - 1; i-- > 0;) s = add(term(x, y, i), s);
  return s;
}
static double pairwise(const void *x, const void *y, size_t lo, size_t n) {
  if (n == 1) return term(x, y, lo);
  return add(pairwise(x, y, lo, n / 2), pairwise(x, y, lo + n / 2, n - n / 2));
}
/* A random tree over a random permutation, contracting products at random where an addition has one. */
static double random_order(const void *x, const void *y, size_t n, rt_rng *r) {
  double *v = malloc(n * sizeof *v);
  int *prod = malloc(n * sizeof *prod);
  size_t *idx = malloc(n * sizeof *idx);
  for (size_t i = 0; i < n; i++) v[i] = term(x, y, i), prod[i] = y != NULL, idx[i] = i;
  for (size_t k = n; k > 1; k--) {
    size_t i = rt_next(r) % k, j = rt_next(r) % (k - 1);
    if (j >= i) j++;
    if (prod[i] && rt_next(r) % 2)
      v[i] = fmad(get(x, idx[i]), get(y, idx[i]), v[j]);
    else if (prod[j] && rt_next(r) % 2)
      v[i] = fmad(get(x, idx[j]), get(y, idx[j]), v[i]);
    else
      v[i] = add(v[i], v[j]);
    prod[i] = 0;
    v[j] = v[k - 1], prod[j] = prod[k - 1], idx[j] = idx[k - 1];
  }
  double s = v[0];
  free(v);
  free(prod);
  free(idx);
  return s;
}

static void assert_inside(const rcl_bounds *b, double v, const char *what) {
  float f = (float)v;
  const void *p = F32 ? (const void *)&f : (const void *)&v;
  double from, to;
  int in = rcl_bounds_locate(b, p, &from, &to);
  ck_assert_msg(in, "%s: %a lies outside [%a, %a] (tight %d; %g ulps from lo, %g to hi)", what, v, b->lo, b->hi,
                b->tight, from, to);
  if (!isnan(v)) ck_assert_msg(from >= 0 && to >= 0, "%s: inside but ulps %g %g", what, from, to);
}

/* reprocl's ordered contract, left-to-right, right-to-left, pairwise and random orders (with random
 * contraction for dots) all lie inside: exactly bounded sums (n <= 16 any order; n <= 300 in written
 * order, where only orders of consecutive terms count) and enclosed large sums. */
START_TEST(orders_inside) {
  static const size_t sizes[] = {1, 2, 3, 5, 8, 13, 16, 17, 64, 300, 4099, 100000};
  static const rcl_gen_kind kinds[] = {RCL_GEN_UNIFORM, RCL_GEN_WIDE, RCL_GEN_CANCEL};
  for (size_t d = 0; d < 2; d++) {
    set_dtype(dtypes[d]);
    rt_rng r = {500 + d};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
      for (size_t k = 0; k < 3; k++)
        for (int dot = 0; dot < 2; dot++) {
          size_t n = sizes[s], es = rcl_dtype_size(dtypes[d]);
          void *x = malloc(n * es), *y = malloc(n * es);
          rt_ok(rcl_generate(x, dtypes[d], n, kinds[k], 7 + s));
          rt_ok(rcl_generate(y, dtypes[d], n, kinds[k], 70 + s));
          const void *yy = dot ? y : NULL;
          char what[128];
          snprintf(what, sizeof what, "%s %s %s n=%zu", rcl_dtype_name(dtypes[d]), dot ? "dot" : "sum",
                   rcl_gen_kind_name(kinds[k]), n);
          rcl_bounds b;
          rt_ok(dot ? rcl_bounds_dot(&b, dtypes[d], n, x, y, NULL) : rcl_bounds_sum(&b, dtypes[d], n, x, NULL));
          if (n <= RCL_BOUNDS_ANY_DEFAULT) ck_assert_msg(b.tight && !b.enclosed_sums, "%s: not tight", what);
          double ord;
          rt_ok(rcl_ref_reduce(&ord, dot ? RCL_OP_DOT : RCL_OP_SUM, dtypes[d], RCL_REDUCE_ORDERED, n, x, y));
          if (F32) {
            float f;
            memcpy(&f, &ord, 4);
            ord = f;
          }
          assert_inside(&b, ord, what);
          assert_inside(&b, left_to_right(x, yy, n), what);
          assert_inside(&b, right_to_left(x, yy, n), what);
          assert_inside(&b, pairwise(x, yy, 0, n), what);
          for (int rep = 0; rep < (n < 5000 ? 20 : 2); rep++) assert_inside(&b, random_order(x, yy, n, &r), what);
          if (n <= 300) { /* the written-order DP: exact up to its default limit */
            rcl_bounds_options o = RCL_BOUNDS_OPTIONS_INIT;
            o.order = RCL_BOUNDS_ASSOCIATIVE;
            rcl_bounds a;
            rt_ok(dot ? rcl_bounds_dot(&a, dtypes[d], n, x, y, &o) : rcl_bounds_sum(&a, dtypes[d], n, x, &o));
            ck_assert_msg(a.tight, "%s: the associative DP is not tight", what);
            assert_inside(&a, left_to_right(x, yy, n), what);
            assert_inside(&a, right_to_left(x, yy, n), what);
            assert_inside(&a, pairwise(x, yy, 0, n), what);
            if (n <= 64) assert_inside(&a, ord, what); /* beyond 64 the contract strides over lanes */
            /* Commutativity only adds evaluations: the any-order interval contains this one. */
            if (b.tight) ck_assert_msg(!tlt(a.lo, b.lo) && !tlt(b.hi, a.hi), "%s: assoc not inside any", what);
          }
          free(x);
          free(y);
        }
  }
}
END_TEST

/* Exact small integers: every partial sum is exact, so every evaluation gives the exact value and the
 * interval is that point (width 0); also for dots and stencils, in both orders. */
START_TEST(integers_give_a_point) {
  for (size_t d = 0; d < 2; d++) {
    set_dtype(dtypes[d]);
    rt_rng r = {600 + d};
    for (size_t n = 1; n <= 300; n += (n < 16 ? 1 : 97)) {
      double xd[300], yd[300], sum = 0, dot = 0;
      float xf[300], yf[300];
      for (size_t i = 0; i < n; i++) {
        xd[i] = (double)((int)(rt_next(&r) % 2001) - 1000);
        yd[i] = (double)((int)(rt_next(&r) % 21) - 10);
        xf[i] = (float)xd[i], yf[i] = (float)yd[i];
        sum += xd[i];
        dot += xd[i] * yd[i];
      }
      const void *x = F32 ? (void *)xf : (void *)xd, *y = F32 ? (void *)yf : (void *)yd;
      for (int ord = 0; ord < 2; ord++) {
        rcl_bounds_options o = RCL_BOUNDS_OPTIONS_INIT;
        o.order = ord ? RCL_BOUNDS_ASSOCIATIVE : RCL_BOUNDS_ANY_ORDER;
        if (!ord && n > RCL_BOUNDS_ANY_DEFAULT) continue; /* the enclosure is never a point */
        rcl_bounds b;
        rt_ok(rcl_bounds_sum(&b, dtypes[d], n, x, &o));
        ck_assert_msg(b.tight && b.lo == sum && b.hi == sum && rcl_bounds_width_ulps(&b) == 0,
                      "%s sum of %zu integers: [%a, %a], exact %a", rcl_dtype_name(dtypes[d]), n, b.lo, b.hi, sum);
        rt_ok(rcl_bounds_dot(&b, dtypes[d], n, x, y, &o));
        ck_assert_msg(b.tight && b.lo == dot && b.hi == dot, "%s dot of %zu integers: [%a, %a], exact %a",
                      rcl_dtype_name(dtypes[d]), n, b.lo, b.hi, dot);
      }
    }
    double w[3] = {-4, 2, 1}, v[9] = {1, 2, 3, 4, 5, -6, 7, 8, 9}; /* -4 + 2*14 + 18 */
    float wf[3], vf[9];
    for (int i = 0; i < 3; i++) wf[i] = (float)w[i];
    for (int i = 0; i < 9; i++) vf[i] = (float)v[i];
    rcl_bounds b;
    rt_ok(rcl_bounds_stencil9(&b, dtypes[d], F32 ? (void *)wf : (void *)w, F32 ? (void *)vf : (void *)v, NULL));
    ck_assert_msg(b.tight && b.lo == 42 && b.hi == 42, "stencil of integers: [%a, %a]", b.lo, b.hi);
  }
}
END_TEST

/* NaN and infinity rules, on hand-made cases (the brute-force tests cover random ones). */
START_TEST(nan_and_inf) {
  rcl_bounds b;
  double v;
  /* A NaN input: every evaluation is NaN. */
  double a1[] = {1, NAN, 2};
  rt_ok(rcl_bounds_sum(&b, RCL_F64, 3, a1, NULL));
  ck_assert(b.tight && !b.has_value && b.may_be_nan && isnan(b.lo) && isnan(b.hi));
  ck_assert(isnan(rcl_bounds_width_ulps(&b)));
  v = NAN;
  ck_assert_int_eq(rcl_bounds_locate(&b, &v, NULL, NULL), 1);
  v = 1;
  ck_assert_int_eq(rcl_bounds_locate(&b, &v, NULL, NULL), 0);
  /* +inf and -inf inputs: NaN in every order. */
  double a2[] = {INFINITY, 1, -INFINITY};
  rt_ok(rcl_bounds_sum(&b, RCL_F64, 3, a2, NULL));
  ck_assert(b.tight && !b.has_value && b.may_be_nan);
  /* One infinity: that infinity, never NaN. */
  double a3[] = {1, -INFINITY, 1e308, 2};
  rt_ok(rcl_bounds_sum(&b, RCL_F64, 4, a3, NULL));
  ck_assert(b.tight && b.has_value && !b.may_be_nan && b.lo == -INFINITY && b.hi == -INFINITY);
  /* ... unless finite terms can overflow to the other infinity: 1e308 + 1e308 = inf, then inf - inf. */
  double a3b[] = {-INFINITY, 1e308, 1e308};
  rt_ok(rcl_bounds_sum(&b, RCL_F64, 3, a3b, NULL));
  ck_assert(b.tight && b.has_value && b.may_be_nan && b.lo == -INFINITY && b.hi == -INFINITY);
  /* Overflow of finite inputs: MAX + MAX - MAX - MAX can be inf, -inf, 0 or NaN depending on the order. */
  float a4[] = {FLT_MAX, FLT_MAX, -FLT_MAX, -FLT_MAX};
  rt_ok(rcl_bounds_sum(&b, RCL_F32, 4, a4, NULL));
  ck_assert(b.tight && b.has_value && b.may_be_nan && b.lo == -INFINITY && b.hi == INFINITY);
  float f0 = 0.0f;
  ck_assert_int_eq(rcl_bounds_locate(&b, &f0, NULL, NULL), 1);
  /* 0 * inf in a dot: NaN in every evaluation, fused or not. */
  double x5[] = {0, 1}, y5[] = {INFINITY, 2};
  rt_ok(rcl_bounds_dot(&b, RCL_F64, 2, x5, y5, NULL));
  ck_assert(b.tight && !b.has_value && b.may_be_nan);
  /* An SpMV row starts from +0: products of -0 give +0 in every order, while their plain sum is -0. */
  rcl_expr *row;
  double ra[] = {-0.0, 2.0}, rx[] = {1.0, -0.0};
  rt_ok(rcl_expr_spmv_row(&row, RCL_F64, 2, ra, rx));
  rt_ok(rcl_bounds_compute(&b, row, rcl_expr_size(row) - 1, NULL));
  ck_assert(b.tight && b.lo == 0 && !signbit(b.lo) && !signbit(b.hi));
  ck_assert_uint_eq(b.largest_sum, 3);
  rcl_expr_free(row);
  rt_ok(rcl_bounds_dot(&b, RCL_F64, 2, ra, rx, NULL));
  ck_assert(b.tight && b.lo == 0 && signbit(b.lo) && signbit(b.hi));
  /* The empty sum is +0; signed zeros are ordered -0 < +0. */
  rt_ok(rcl_bounds_sum(&b, RCL_F32, 0, NULL, NULL));
  ck_assert(b.tight && b.lo == 0 && !signbit(b.lo) && !signbit(b.hi));
  double z[] = {-0.0, -0.0};
  rt_ok(rcl_bounds_sum(&b, RCL_F64, 2, z, NULL));
  ck_assert(b.lo == 0 && signbit(b.lo) && signbit(b.hi));
  v = 0.0; /* +0 is not a value of -0 + -0 */
  ck_assert_int_eq(rcl_bounds_locate(&b, &v, NULL, NULL), 0);
  /* A product by zero of a sum that may overflow: an enclosure, said so. */
  rcl_expr *e;
  rt_ok(rcl_expr_create(&e, RCL_F64));
  size_t n[3], s, w, p;
  double vals[3] = {DBL_MAX, DBL_MAX, -DBL_MAX}, zero = 0; /* the sum is DBL_MAX or +inf */
  for (int i = 0; i < 3; i++) rt_ok(rcl_expr_value(e, &n[i], &vals[i]));
  rt_ok(rcl_expr_sum(e, &s, 3, n));
  rt_ok(rcl_expr_value(e, &w, &zero));
  rt_ok(rcl_expr_product(e, &p, w, s));
  rt_ok(rcl_bounds_compute(&b, e, p, NULL));
  ck_assert(!b.tight && b.may_be_nan && b.lo == -INFINITY && b.hi == INFINITY);
  rcl_expr_free(e);
}
END_TEST

/* The enclosure of large sums contains the exact any-order interval (forced on small sums with max_any)
 * and is reported as such; exact_only refuses instead. */
START_TEST(enclosure_contains_exact) {
  static const rcl_gen_kind kinds[] = {RCL_GEN_UNIFORM, RCL_GEN_WIDE, RCL_GEN_CANCEL};
  for (size_t d = 0; d < 2; d++) {
    set_dtype(dtypes[d]);
    for (size_t n = 2; n <= 14; n += 3)
      for (size_t k = 0; k < 3; k++)
        for (int dot = 0; dot < 2; dot++) {
          size_t es = rcl_dtype_size(dtypes[d]);
          unsigned char x[14 * 8], y[14 * 8];
          rt_ok(rcl_generate(x, dtypes[d], n, kinds[k], 900 + n));
          rt_ok(rcl_generate(y, dtypes[d], n, kinds[k], 990 + n));
          (void)es;
          rcl_bounds exact, enc;
          rcl_bounds_options o = RCL_BOUNDS_OPTIONS_INIT;
          rt_ok(dot ? rcl_bounds_dot(&exact, dtypes[d], n, x, y, &o) : rcl_bounds_sum(&exact, dtypes[d], n, x, &o));
          o.max_any = 1;
          rt_ok(dot ? rcl_bounds_dot(&enc, dtypes[d], n, x, y, &o) : rcl_bounds_sum(&enc, dtypes[d], n, x, &o));
          ck_assert(exact.tight && exact.enclosed_sums == 0);
          ck_assert(!exact.may_be_nan || enc.may_be_nan);
          if (!exact.has_value) continue; /* NaN in every evaluation: the enclosure says so too (exactly) */
          if (isfinite(exact.lo) && isfinite(exact.hi)) ck_assert(!enc.tight && enc.enclosed_sums == 1);
          ck_assert_msg(enc.has_value && !tlt(exact.lo, enc.lo) && !tlt(enc.hi, exact.hi),
                        "%s %s n=%zu: enclosure [%a, %a] misses exact [%a, %a]", rcl_dtype_name(dtypes[d]),
                        dot ? "dot" : "sum", n, enc.lo, enc.hi, exact.lo, exact.hi);
          o.exact_only = 1;
          rt_fails(dot ? rcl_bounds_dot(&enc, dtypes[d], n, x, y, &o) : rcl_bounds_sum(&enc, dtypes[d], n, x, &o),
                   RCL_ERR_INVALID_ARG, "exceeds the exact any-order limit of 1");
        }
  }
  /* Overflow possible in a large sum: the whole line, NaN possible. */
  double big[40];
  for (int i = 0; i < 40; i++) big[i] = (i % 2 ? -1 : 1) * DBL_MAX / 8;
  rcl_bounds b;
  rt_ok(rcl_bounds_sum(&b, RCL_F64, 40, big, NULL));
  ck_assert(!b.tight && b.may_be_nan && b.lo == -INFINITY && b.hi == INFINITY);
  /* NaN in a large sum is still exact. */
  big[17] = NAN;
  rt_ok(rcl_bounds_sum(&b, RCL_F64, 40, big, NULL));
  ck_assert(b.tight && !b.has_value);
}
END_TEST

/* The largest exact sizes run within the documented limits (kept small here: 2 CPU cores). */
START_TEST(limits_and_errors) {
  double x[20];
  for (int i = 0; i < 20; i++) x[i] = 1.0 / (i + 3);
  rcl_bounds b;
  rcl_bounds_options o = RCL_BOUNDS_OPTIONS_INIT;
  o.max_any = 17;
  rt_ok(rcl_bounds_sum(&b, RCL_F64, 17, x, &o));
  ck_assert(b.tight && b.largest_sum == 17 && b.enclosed_sums == 0 && b.lo < b.hi);
  o.max_any = 21;
  rt_fails(rcl_bounds_sum(&b, RCL_F64, 18, x, &o), RCL_ERR_INVALID_ARG, "max_any 21 exceeds 20");
  o = (rcl_bounds_options)RCL_BOUNDS_OPTIONS_INIT;
  o.max_assoc = 5000;
  rt_fails(rcl_bounds_sum(&b, RCL_F64, 18, x, &o), RCL_ERR_INVALID_ARG, "max_assoc 5000 exceeds 2048");
  o = (rcl_bounds_options)RCL_BOUNDS_OPTIONS_INIT;
  o.version = 99;
  rt_fails(rcl_bounds_sum(&b, RCL_F64, 18, x, &o), RCL_ERR_INVALID_ARG, "version is 99");
  o = (rcl_bounds_options)RCL_BOUNDS_OPTIONS_INIT;
  o.order = (rcl_bounds_order)7;
  rt_fails(rcl_bounds_sum(&b, RCL_F64, 18, x, &o), RCL_ERR_INVALID_ARG, "order 7");
  rt_fails(rcl_bounds_sum(NULL, RCL_F64, 18, x, NULL), RCL_ERR_INVALID_ARG, "NULL");
  rt_fails(rcl_bounds_sum(&b, RCL_F64, 18, NULL, NULL), RCL_ERR_INVALID_ARG, "NULL");
  rt_fails(rcl_bounds_dot(&b, RCL_F64, 18, x, NULL, NULL), RCL_ERR_INVALID_ARG, "NULL");
  rt_fails(rcl_bounds_sum(&b, (rcl_dtype)9, 18, x, NULL), RCL_ERR_INVALID_ARG, "unknown dtype 9");
  rcl_bounds_order ord;
  rt_fails(rcl_bounds_order_parse(&ord, "sideways"), RCL_ERR_INVALID_ARG, "unknown evaluation order \"sideways\"");
  rt_ok(rcl_bounds_order_parse(&ord, "assoc"));
  ck_assert_int_eq(ord, RCL_BOUNDS_ASSOCIATIVE);
  /* Expressions are trees. */
  rcl_expr *e;
  size_t a, c, s;
  rt_ok(rcl_expr_create(&e, RCL_F64));
  rt_ok(rcl_expr_value(e, &a, &x[0]));
  rt_ok(rcl_expr_value(e, &c, &x[1]));
  size_t kids[2] = {a, c};
  rt_ok(rcl_expr_sum(e, &s, 2, kids));
  rt_fails(rcl_expr_product(e, NULL, a, s), RCL_ERR_INVALID_ARG, "node 0 is already a child");
  rt_fails(rcl_expr_product(e, NULL, s, 7), RCL_ERR_INVALID_ARG, "child 7 (argument 1) does not exist");
  size_t twice[2] = {s, s};
  rt_fails(rcl_expr_sum(e, NULL, 2, twice), RCL_ERR_INVALID_ARG, "given twice");
  rt_fails(rcl_bounds_compute(&b, e, 3, NULL), RCL_ERR_INVALID_ARG, "root 3 does not exist");
  /* A subtree can be bounded on its own: the sum node. */
  rt_ok(rcl_bounds_compute(&b, e, s, NULL));
  ck_assert(b.tight && b.lo == x[0] + x[1]);
  ck_assert_uint_eq(rcl_expr_size(e), 3);
  rcl_expr_free(e);
  rt_fails(rcl_expr_create(&e, (rcl_dtype)0), RCL_ERR_INVALID_ARG, "unknown dtype");
}
END_TEST

/* Widths and positions on the ordered line of floats. */
START_TEST(width_and_locate) {
  float x[] = {1.0f, 0x1p-24f, 0x1p-24f, 0x1p-24f};
  rcl_bounds b;
  rt_ok(rcl_bounds_sum(&b, RCL_F32, 4, x, NULL));
  /* 1 + 3*2^-24: 1 if each tiny term is added to 1 alone (ties to even), up to 1 + 2^-22 (= 1 + 2 ulps)
   * if the tiny ones are summed first (3*2^-24 exact, then 1 + 3*2^-24 rounds to 1 + 2^-22). */
  ck_assert_msg(b.tight && b.lo == 1.0 && b.hi == 1.0 + 0x1p-22, "[%a, %a]", b.lo, b.hi);
  ck_assert(rcl_bounds_width_ulps(&b) == 2);
  float v = 1.0f + 0x1p-23f, w = 1.0f + 0x1p-21f;
  double from, to;
  ck_assert_int_eq(rcl_bounds_locate(&b, &v, &from, &to), 1);
  ck_assert(from == 1 && to == 1);
  ck_assert_int_eq(rcl_bounds_locate(&b, &w, &from, &to), 0);
  ck_assert(from == 4 && to == -2);
  /* The same in f64, whose ulp line does not fit a double's mantissa. */
  double xd[] = {1.0, 0x1p-53, 0x1p-53, 0x1p-53}, vd = 1.0 + 0x1p-52;
  rt_ok(rcl_bounds_sum(&b, RCL_F64, 4, xd, NULL));
  ck_assert_msg(b.tight && b.lo == 1.0 && b.hi == 1.0 + 0x1p-51, "[%a, %a]", b.lo, b.hi);
  ck_assert(rcl_bounds_width_ulps(&b) == 2);
  ck_assert_int_eq(rcl_bounds_locate(&b, &vd, &from, &to), 1);
  ck_assert(from == 1 && to == 1);
  /* -0 and +0 are one point on the ulp line. */
  float z[] = {-1.0f, 1.0f, -0x1p-149f};
  rt_ok(rcl_bounds_sum(&b, RCL_F32, 3, z, NULL));
  /* -1 + 1 = +0, then + -tiny = -tiny; or the tiny term vanishes into -1 or 1 first, leaving +0. */
  ck_assert_msg(b.tight && b.lo == -0x1p-149 && b.hi == 0 && !signbit(b.hi), "[%a, %a]", b.lo, b.hi);
  ck_assert(rcl_bounds_width_ulps(&b) == 1);
}
END_TEST

/* On every device: reprocl's reproducible sums and dots (ordered and exact modes are evaluations of
 * fixed orders... the exact mode is the correctly rounded value, checked separately) and the native
 * build's values lie inside the bounds. */
START_TEST(device_values_inside) {
  static const size_t sizes[] = {3, 16, 1000, 70001};
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    set_dtype(dt);
    if (!rt_supported(_i, RCL_FAMILY_REDUCE, dt)) continue;
    for (size_t s = 0; s < 4; s++)
      for (int op = 0; op < 2; op++) {
        size_t n = sizes[s], es = rcl_dtype_size(dt);
        void *x = malloc(n * es), *y = malloc(n * es);
        rt_ok(rcl_generate(x, dt, n, s % 2 ? RCL_GEN_CANCEL : RCL_GEN_UNIFORM, 31 + s));
        rt_ok(rcl_generate(y, dt, n, RCL_GEN_UNIFORM, 32 + s));
        rcl_bounds b;
        rt_ok(op ? rcl_bounds_dot(&b, dt, n, x, y, NULL) : rcl_bounds_sum(&b, dt, n, x, NULL));
        for (int native = 0; native < 2; native++) {
          double got = 0;
          rcl_context *c = native ? rt_ctx_native(_i) : rt_ctx(_i);
          rt_ok(rcl_reduce(&got, c, op ? RCL_OP_DOT : RCL_OP_SUM, dt, n, x, y, NULL));
          ck_assert_msg(rcl_bounds_locate(&b, &got, NULL, NULL), "%s %s n=%zu: the %s value on %s is outside [%a, %a]",
                        rcl_dtype_name(dt), op ? "dot" : "sum", n, native ? "native" : "reproducible",
                        rt_device_name(_i), b.lo, b.hi);
        }
        free(x);
        free(y);
      }
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("bounds");
  TCase *tc = tcase_create("host");
  tcase_add_test(tc, sum_matches_brute_force);
  tcase_add_test(tc, dot_matches_brute_force);
  tcase_add_test(tc, stencil_matches_brute_force);
  tcase_add_test(tc, random_trees_match_brute_force);
  tcase_add_test(tc, orders_inside);
  tcase_add_test(tc, integers_give_a_point);
  tcase_add_test(tc, nan_and_inf);
  tcase_add_test(tc, enclosure_contains_exact);
  tcase_add_test(tc, limits_and_errors);
  tcase_add_test(tc, width_and_locate);
  suite_add_tcase(s, tc);
  TCase *dev = tcase_create("devices");
  rt_add_device_loop(dev, device_values_inside);
  suite_add_tcase(s, dev);
  rt_add_device_presence(s);
  return rt_run(s);
}
