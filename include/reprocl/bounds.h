/* reprocl: volatility bounds — the tightest interval of values that one floating-point expression can
 * take under every evaluation order (re-association, optionally also commutativity) and every choice of
 * FMA contraction, computed by dynamic programming over parse trees. The method, its proof and its
 * limits are in docs/bounds.md; what the interval means is stated in docs/contracts.md (§8). Pure host
 * code: no OpenCL device is involved. */
#ifndef REPROCL_BOUNDS_H
#define REPROCL_BOUNDS_H
#include "reprocl/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- expressions ---------------------------------------------------------------------------------
 * An expression is a tree of nodes, built bottom-up in an arena; every builder returns the new node's
 * index. Node kinds:
 *   value   - an input or a constant (a float or double by the expression's dtype);
 *   product - a * b of two nodes; rounded once, or fused into an adjacent addition (see below);
 *   sum     - c_1 + ... + c_m of m >= 0 nodes, evaluated as any binary tree of m - 1 rounded additions
 *             (m = 0 is +0, m = 1 is c_1 itself).
 * An addition one of whose two operands is a product node p = a * b may instead be evaluated as
 * fma(a, b, other) (one rounding). Sums do not mix across nodes: a sum whose child is another sum keeps
 * that child's grouping, and a product never distributes over a sum. Each node may be used as a child at
 * most once (expressions are trees: a shared subexpression would be evaluated once, which the method's
 * independence argument does not cover). */
typedef struct rcl_expr rcl_expr;

RCL_API int rcl_expr_create(rcl_expr **out, rcl_dtype dtype);
RCL_API void rcl_expr_free(rcl_expr *e);
RCL_API rcl_dtype rcl_expr_dtype(const rcl_expr *e);
RCL_API size_t rcl_expr_size(const rcl_expr *e); /* number of nodes; the last one is the default root */

/* *node receives the new node's index. value points to one float or double (by dtype). */
RCL_API int rcl_expr_value(rcl_expr *e, size_t *node, const void *value);
RCL_API int rcl_expr_product(rcl_expr *e, size_t *node, size_t a, size_t b);
RCL_API int rcl_expr_sum(rcl_expr *e, size_t *node, size_t count, const size_t *children);

/* The expressions of the CLI's kinds (each root is the last node):
 *   rcl_expr_sum_of:   x_0 + ... + x_{n-1}                                  (a reduction)
 *   rcl_expr_dot:      x_0*y_0 + ... + x_{n-1}*y_{n-1}                      (a dot product, one SpMV row)
 *   rcl_expr_spmv_row: +0 + a_0*x_0 + ... + a_{n-1}*x_{n-1}               (one SpMV row sum: reprocl's
 *                      SpMV contracts start each row from +0, which only matters for signed zeros)
 *   rcl_expr_stencil9: wc*c + wa*(N + S + E + W) + wd*(NE + SE + NW + SW)   (the 9-point stencil point;
 *                      w = {wc, wa, wd}, v = {c, N, S, E, W, NE, SE, NW, SW}) */
RCL_API int rcl_expr_sum_of(rcl_expr **out, rcl_dtype dtype, size_t n, const void *x);
RCL_API int rcl_expr_dot(rcl_expr **out, rcl_dtype dtype, size_t n, const void *x, const void *y);
RCL_API int rcl_expr_spmv_row(rcl_expr **out, rcl_dtype dtype, size_t n, const void *a, const void *x);
RCL_API int rcl_expr_stencil9(rcl_expr **out, rcl_dtype dtype, const void *w, const void *v);

/* ---- bounds ----------------------------------------------------------------------------------------- */
typedef enum {
  /* Re-association and commutativity: each sum may be any binary tree over its children in any order.
   * Covers every order a parallel reduction can use (strided lanes, trees of partial sums). */
  RCL_BOUNDS_ANY_ORDER = 0,
  /* Re-association only: each sum is a binary tree whose leaves are its children in the written order
   * (left-to-right, right-to-left, pairwise and blocked sums of consecutive terms, ...). */
  RCL_BOUNDS_ASSOCIATIVE = 1
} rcl_bounds_order;
RCL_API const char *rcl_bounds_order_name(rcl_bounds_order o); /* "any", "assoc" */
RCL_API int rcl_bounds_order_parse(rcl_bounds_order *out, const char *name);

#define RCL_BOUNDS_ANY_DEFAULT 16u     /* sums of up to this many children: exact in any order */
#define RCL_BOUNDS_ANY_LIMIT 20u       /* the largest max_any accepted: O(3^m) time, O(2^m) memory */
#define RCL_BOUNDS_ASSOC_DEFAULT 1024u /* exact in written order: O(m^3) time, O(m^2) memory */
#define RCL_BOUNDS_ASSOC_LIMIT 2048u

#define RCL_BOUNDS_OPTIONS_VERSION 1
typedef struct {
  unsigned int version;
  rcl_bounds_order order;
  int no_fma;       /* 1: every product is rounded on its own (no contraction); 0: any contraction */
  size_t max_any;   /* 0: RCL_BOUNDS_ANY_DEFAULT; 1 .. RCL_BOUNDS_ANY_LIMIT */
  size_t max_assoc; /* 0: RCL_BOUNDS_ASSOC_DEFAULT; 1 .. RCL_BOUNDS_ASSOC_LIMIT */
  /* A sum with more children than the exact limit of its order is bounded by the rigorous but wider
   * enclosure of docs/bounds.md (the result's `tight` is then 0); with exact_only it is refused instead
   * (RCL_ERR_INVALID_ARG naming the sum's size and the limit). */
  int exact_only;
} rcl_bounds_options;
#define RCL_BOUNDS_OPTIONS_INIT                                                                                        \
  { RCL_BOUNDS_OPTIONS_VERSION, RCL_BOUNDS_ANY_ORDER, 0, 0, 0, 0 }

/* The values the expression can take. Endpoints are values of the expression's dtype (a float's are held
 * exactly in the double), ordered with -0 below +0; either may be -inf or +inf. */
typedef struct {
  rcl_dtype dtype;
  double lo, hi;  /* every non-NaN evaluation v has lo <= v <= hi (NaN when has_value is 0) */
  int has_value;  /* 0: every evaluation gives NaN */
  int may_be_nan; /* some evaluation may give NaN (exact when tight) */
  /* 1: lo and hi are each the value of some evaluation, so no narrower interval is correct, and
   * may_be_nan is exact. 0: [lo, hi] is an enclosure (a large sum, or a case listed in docs/bounds.md). */
  int tight;
  rcl_bounds_order order; /* the evaluations covered */
  int fma;                /* 1 when contraction choices are covered */
  size_t largest_sum;     /* the most children of any sum node */
  size_t enclosed_sums;   /* sum nodes bounded by the enclosure instead of the exact DP */
} rcl_bounds;

/* Bounds of the subtree at root (a node index of e). opts may be NULL (defaults). */
RCL_API int rcl_bounds_compute(rcl_bounds *out, const rcl_expr *e, size_t root, const rcl_bounds_options *opts);
/* Shorthands: build the expression, bound it, free it. */
RCL_API int rcl_bounds_sum(rcl_bounds *out, rcl_dtype dtype, size_t n, const void *x, const rcl_bounds_options *opts);
RCL_API int rcl_bounds_dot(rcl_bounds *out, rcl_dtype dtype, size_t n, const void *x, const void *y,
                           const rcl_bounds_options *opts);
RCL_API int rcl_bounds_stencil9(rcl_bounds *out, rcl_dtype dtype, const void *w, const void *v,
                                const rcl_bounds_options *opts);

/* The number of representable values one must step over from lo to hi: 0 for a point. Values are
 * counted on the ordered integer line of the dtype's bit patterns, where -0 and +0 are one point and
 * each infinity is one step beyond the largest finite value. NAN when has_value is 0. */
RCL_API double rcl_bounds_width_ulps(const rcl_bounds *b);

/* Where a computed value (a float or double by b->dtype) lies: returns 1 if it is inside [lo, hi] (a
 * NaN value: if b->may_be_nan), else 0. *from_lo and *to_hi (optional) receive its signed distances in
 * ulps (as in rcl_bounds_width_ulps) from lo and to hi: both >= 0 inside; NAN for a NaN value. */
RCL_API int rcl_bounds_locate(const rcl_bounds *b, const void *value, double *from_lo, double *to_hi);

#ifdef __cplusplus
}
#endif
#endif
