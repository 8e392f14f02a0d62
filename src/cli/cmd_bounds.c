/* reprocl bounds: the interval of values one expression (a reduction, a dot product, ...) can take under
 * every evaluation order and FMA contraction (include/reprocl/bounds.h), and where concrete evaluations
 * fall inside it: the host's plain orders, reprocl's contracts, and each device's reproducible and
 * native results. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"
#include "sparse_cli.h"

/* One concrete evaluation shown against the interval. */
typedef struct {
  char where[160]; /* "host" or the device's name */
  char what[96];   /* "left-to-right", "reproducible (reduce.ordered)", "native build" */
  unsigned char value[8];
  int covered;     /* the interval's evaluation set includes this evaluation */
  char note[192];  /* why not covered, or a remark */
  int unsupported; /* a device that cannot run this dtype bit-exactly: no value */
  int mismatch;    /* a reproducible result that differs from the host reference: always a failure */
} row;

typedef struct {
  rcl_dtype dt;
  rcl_bounds b;
  row *rows;
  size_t nrows, cap;
} report;

static row *add_row(report *r, const char *where, const char *what, const void *value, int covered, const char *note) {
  if (r->nrows == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 16;
    row *n = realloc(r->rows, cap * sizeof *n);
    if (!n) return NULL;
    r->rows = n;
    r->cap = cap;
  }
  row *w = &r->rows[r->nrows++];
  memset(w, 0, sizeof *w);
  snprintf(w->where, sizeof w->where, "%s", where);
  snprintf(w->what, sizeof w->what, "%s", what);
  if (value) memcpy(w->value, value, rcl_dtype_size(r->dt));
  w->covered = covered;
  if (note) snprintf(w->note, sizeof w->note, "%s", note);
  return w;
}

/* ---- host evaluations in the dtype (the CLI is built with -ffp-contract=off) ----------------------- */
typedef struct {
  rcl_dtype dt;
  size_t n;
  const void *x, *y; /* y NULL for a sum */
} terms;
static double get(const terms *t, const void *p, size_t i) {
  return t->dt == RCL_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}
static double rnd_add(const terms *t, double a, double b) {
  return t->dt == RCL_F32 ? (double)((float)a + (float)b) : a + b;
}
static double term_at(const terms *t, size_t i) {
  if (!t->y) return get(t, t->x, i);
  return t->dt == RCL_F32 ? (double)((float)get(t, t->x, i) * (float)get(t, t->y, i))
                          : get(t, t->x, i) * get(t, t->y, i);
}
static double left_to_right(const terms *t) {
  double s = term_at(t, 0);
  for (size_t i = 1; i < t->n; i++) s = rnd_add(t, s, term_at(t, i));
  return s;
}
static double right_to_left(const terms *t) {
  double s = term_at(t, t->n - 1);
  for (size_t i = t->n - 1; i-- > 0;) s = rnd_add(t, term_at(t, i), s);
  return s;
}
static double pairwise(const terms *t, size_t lo, size_t n) {
  if (n == 1) return term_at(t, lo);
  return rnd_add(t, pairwise(t, lo, n / 2), pairwise(t, lo + n / 2, n - n / 2));
}
static double fma_chain(const terms *t) { /* s = x0*y0; s = fma(x_i, y_i, s): what a contracting compiler makes */
  double s = term_at(t, 0);
  for (size_t i = 1; i < t->n; i++)
    s = t->dt == RCL_F32 ? (double)fmaf((float)get(t, t->x, i), (float)get(t, t->y, i), (float)s)
                         : fma(get(t, t->x, i), get(t, t->y, i), s);
  return s;
}
static int add_host(report *r, const char *what, double v, int covered, const char *note) {
  unsigned char buf[8];
  if (r->dt == RCL_F32) {
    float f = (float)v;
    memcpy(buf, &f, 4);
  } else {
    memcpy(buf, &v, 8);
  }
  return add_row(r, "host", what, buf, covered, note) ? 0 : cli_error("out of memory");
}

/* ---- output ------------------------------------------------------------------------------------------ */
static void hex_of(char *buf, size_t size, const void *v, rcl_dtype dt) {
  if (dt == RCL_F32) {
    uint32_t u;
    memcpy(&u, v, 4);
    snprintf(buf, size, "0x%08x", u);
  } else {
    uint64_t u;
    memcpy(&u, v, 8);
    snprintf(buf, size, "0x%016llx", (unsigned long long)u);
  }
}
static void endpoint(unsigned char *out, double v, rcl_dtype dt) {
  if (dt == RCL_F32) {
    float f = (float)v;
    memcpy(out, &f, 4);
  } else {
    memcpy(out, &v, 8);
  }
}

/* A 22-column picture of the position: [----*-----], or the marker outside the brackets. */
static void ruler(char *buf, int inside, double from, double width) {
  enum { W = 20 };
  if (isnan(from)) {
    snprintf(buf, 32, "  (NaN)");
    return;
  }
  if (!inside) {
    snprintf(buf, 32, from < 0 ? "*[--------------------]" : "[--------------------]*");
    return;
  }
  char bar[W + 1];
  memset(bar, '-', W);
  bar[W] = '\0';
  int pos = width > 0 ? (int)floor(from / width * (W - 1) + 0.5) : 0;
  bar[pos < 0 ? 0 : pos > W - 1 ? W - 1 : pos] = '*';
  snprintf(buf, 32, "[%s]", bar);
}

static json_t *num_json(const void *v, rcl_dtype dt) {
  char buf[64];
  cli_format_value(buf, sizeof buf, v, dt);
  return json_string(buf);
}
static json_t *ulps_json(double u) { return isnan(u) ? json_null() : json_real(u); }

/* Prints the report (text or JSON); returns the exit status. */
/* The text header: the interval, its endpoints and whether it is tight. */
static void print_interval(const report *r, const char *title, const rcl_bounds_options *o, const char *slo,
                           const char *xlo, const char *shi, const char *xhi, double width) {
  const rcl_bounds *b = &r->b;
  const char *orders = b->order == RCL_BOUNDS_ANY_ORDER ? "any order (re-association and commutativity)"
                                                        : "re-association of the written order";
  size_t limit = b->order == RCL_BOUNDS_ANY_ORDER ? (o->max_any ? o->max_any : RCL_BOUNDS_ANY_DEFAULT)
                                                  : (o->max_assoc ? o->max_assoc : RCL_BOUNDS_ASSOC_DEFAULT);
  printf("%s\n", title);
  printf("evaluations: %s, %s\n", orders, b->fma ? "any FMA contraction" : "no FMA contraction");
  if (b->has_value) {
    printf("  lo     %-26s %s\n  hi     %-26s %s\n", slo, xlo, shi, xhi);
    printf("  width  %.0f ulps\n", width);
  } else {
    printf("  every evaluation gives NaN\n");
  }
  if (b->may_be_nan && b->has_value) printf("  NaN    some evaluations give NaN\n");
  if (b->tight)
    printf("  tight  yes: lo and hi are each the value of some evaluation (exact DP; largest sum %zu terms)\n",
           b->largest_sum);
  else if (b->enclosed_sums)
    printf("  tight  no: a rigorous enclosure; a sum of %zu terms exceeds the exact %s-order limit of %zu\n"
           "         (raise --max-%s up to %u%s; see docs/bounds.md)\n",
           b->largest_sum, rcl_bounds_order_name(b->order), limit, rcl_bounds_order_name(b->order),
           b->order == RCL_BOUNDS_ANY_ORDER ? RCL_BOUNDS_ANY_LIMIT : RCL_BOUNDS_ASSOC_LIMIT,
           b->order == RCL_BOUNDS_ANY_ORDER ? ", or use --order assoc" : "");
  else
    printf("  tight  no: a rigorous enclosure (an infinity may meet a zero in a product; see docs/bounds.md)\n");
  printf("\n  %-36s %-32s %-*s %-22s %s\n", "where", "evaluation", r->dt == RCL_F32 ? 15 : 23, "value", "position",
         "ulps from lo / to hi");
}

/* One evaluation against the interval, as a table row or into jrows. Returns 1 when it counts as a
 * failure (covered but outside, or differing from its reference); *shown counts the rows with values. */
static int print_row(json_t *jrows, const report *r, const row *w, double width, int json, size_t *shown) {
  int vw = r->dt == RCL_F32 ? 15 : 23; /* the value column: %.9g / %.17g */
  char val[64], bar[32];
  if (w->unsupported) {
    if (!json)
      printf("  %-44.44s unsupported: %s\n", w->where, w->note);
    else
      json_array_append_new(
          jrows, json_pack("{s:s,s:s,s:s}", "where", w->where, "evaluation", "unsupported", "note", w->note));
    return 0;
  }
  double from, to;
  int inside = rcl_bounds_locate(&r->b, w->value, &from, &to);
  cli_format_value(val, sizeof val, w->value, r->dt);
  ruler(bar, inside, from, width);
  (*shown)++;
  const char *verdict = inside ? "inside" : w->covered ? "OUTSIDE" : "outside";
  if (!json) {
    printf("  %-36.36s %-32.32s %-*s %s", w->where, w->what, vw, val, bar);
    if (!isnan(from)) printf(" %.0f / %.0f", from, to);
    printf("  %s%s%s\n", verdict, *w->note ? ": " : "", w->note);
  } else {
    json_t *jr = json_pack("{s:s,s:s,s:o,s:b,s:b,s:o,s:o}", "where", w->where, "evaluation", w->what, "value",
                           num_json(w->value, r->dt), "inside", inside, "covered", w->covered, "ulps_from_lo",
                           ulps_json(from), "ulps_to_hi", ulps_json(to));
    if (*w->note) json_object_set_new(jr, "note", json_string(w->note));
    if (w->mismatch) json_object_set_new(jr, "matches_reference", json_false());
    json_array_append_new(jrows, jr);
  }
  return (w->covered && !inside) || w->mismatch;
}

static int print_report(const report *r, const char *title, json_t *desc, const rcl_bounds_options *o, int json) {
  const rcl_bounds *b = &r->b;
  unsigned char lo[8], hi[8];
  endpoint(lo, b->lo, r->dt);
  endpoint(hi, b->hi, r->dt);
  double width = rcl_bounds_width_ulps(b);
  size_t bad = 0, shown = 0;
  char slo[64], shi[64], xlo[24], xhi[24];
  cli_format_value(slo, sizeof slo, lo, r->dt);
  cli_format_value(shi, sizeof shi, hi, r->dt);
  hex_of(xlo, sizeof xlo, lo, r->dt);
  hex_of(xhi, sizeof xhi, hi, r->dt);
  json_t *jrows = json_array();
  if (!json) print_interval(r, title, o, slo, xlo, shi, xhi, width);
  for (size_t i = 0; i < r->nrows; i++) bad += (size_t)print_row(jrows, r, &r->rows[i], width, json, &shown);
  if (json) {
    json_t *jb = json_pack("{s:o,s:o,s:s,s:s,s:b,s:b,s:b,s:s,s:b,s:o,s:I,s:I}", "lo",
                           b->has_value ? num_json(lo, r->dt) : json_null(), "hi",
                           b->has_value ? num_json(hi, r->dt) : json_null(), "lo_bits", xlo, "hi_bits", xhi,
                           "has_value", b->has_value, "may_be_nan", b->may_be_nan, "tight", b->tight, "order",
                           rcl_bounds_order_name(b->order), "fma", b->fma, "width_ulps", ulps_json(width),
                           "largest_sum", (json_int_t)b->largest_sum, "enclosed_sums", (json_int_t)b->enclosed_sums);
    json_object_set_new(desc, "command", json_string("bounds"));
    json_object_set_new(desc, "bounds", jb);
    json_object_set_new(desc, "values", jrows);
    json_object_set_new(desc, "all_inside", json_boolean(bad == 0));
    cli_json_print(desc);
  } else {
    json_decref(jrows);
    json_decref(desc);
    if (bad)
      printf("FAIL: %zu of %zu value(s) lie outside the interval that covers their evaluation, or differ from\n"
             "      the host reference of their contract\n",
             bad, shown);
    else
      printf("INSIDE: every value whose evaluation the interval covers lies inside it (%zu shown)\n", shown);
  }
  return bad ? CLI_EXIT_FINDING : CLI_EXIT_OK;
}

/* ---- devices ------------------------------------------------------------------------------------------ */
/* The reproducible and native results of each device for one device computation. run() fills value (the
 * result bytes) for a context; covered says whether the interval covers the device's evaluation order. */
typedef int (*device_fn)(unsigned char *value, rcl_context *ctx, void *arg);

static int add_devices(report *r, const char *spec, rcl_family family, device_fn run, void *arg, const char *what,
                       const unsigned char *ref, int covered, const char *note) {
  if (spec && !strcmp(spec, "none")) return 0;
  cli_devices devs, ndevs;
  int rc = cli_devices_open(&devs, spec, RCL_MODE_REPRODUCIBLE);
  if (rc) return rc;
  if ((rc = cli_devices_clone(&ndevs, &devs, RCL_MODE_NATIVE)) != 0) {
    cli_devices_close(&devs);
    return rc;
  }
  for (size_t i = 0; i < devs.count && !rc; i++) {
    const char *why;
    rcl_support sup = rcl_device_profile_support(rcl_context_profile(devs.ctx[i]), family, r->dt, &why);
    if (sup == RCL_SUPPORT_NONE) { /* a row without a value, saying why */
      row *w = add_row(r, devs.name[i], "unsupported", NULL, 0, why);
      if (!w)
        rc = cli_error("out of memory");
      else
        w->unsupported = 1;
      continue;
    }
    unsigned char v[8], nv[8];
    if (run(v, devs.ctx[i], arg))
      rc = cli_fail("%s on %s", what, devs.name[i]);
    else if (run(nv, ndevs.ctx[i], arg))
      rc = cli_fail("%s (native build) on %s", what, devs.name[i]);
    else {
      char w1[96], w2[96], n1[192], n2[192];
      size_t es = rcl_dtype_size(r->dt);
      int same_ref = !ref || !memcmp(v, ref, es), same_native = !memcmp(v, nv, es);
      snprintf(w1, sizeof w1, "reproducible (%s)", what);
      snprintf(w2, sizeof w2, "native build (%s)", what);
      snprintf(n1, sizeof n1, "%s%s%s", same_ref ? "= host reference" : "DIFFERS from the host reference",
               note ? "; " : "", note ? note : "");
      snprintf(n2, sizeof n2, "%s%s%s", same_native ? "= reproducible" : "differs from reproducible", note ? "; " : "",
               note ? note : "");
      row *a = add_row(r, devs.name[i], w1, v, covered, n1),
          *b = a ? add_row(r, devs.name[i], w2, nv, covered, n2) : NULL;
      if (!b)
        rc = cli_error("out of memory");
      else
        r->rows[r->nrows - 2].mismatch = !same_ref;
    }
  }
  cli_devices_close(&ndevs);
  cli_devices_close(&devs);
  return rc;
}

/* ---- kinds ---------------------------------------------------------------------------------------------- */
typedef struct {
  const char *kind, *device;
  rcl_dtype dt;
  size_t n;
  uint64_t seed;
  rcl_gen_kind dist;
  rcl_bounds_options opts;
  int json;
  const char *matrix, *gen; /* spmv-row */
  size_t row;
  int have_row;
  size_t w, h, px, py; /* stencil */
  int have_point;
  double weights[3], boundary_value;
  rcl_boundary boundary;
  int native; /* --native: accepted; the native build is always shown */
} args;

typedef struct {
  rcl_reduce_op op;
  rcl_dtype dt;
  size_t n;
  const void *x, *y;
} reduce_arg;
static int run_reduce(unsigned char *value, rcl_context *ctx, void *p) {
  reduce_arg *a = p;
  return rcl_reduce(value, ctx, a->op, a->dt, a->n, a->x, a->y, NULL);
}

static int kind_reduce(const args *a) {
  int dot = !strcmp(a->kind, "dot");
  size_t es = rcl_dtype_size(a->dt);
  if (a->n == 0) return cli_error("--n must be at least 1");
  if (a->n > SIZE_MAX / 16) return cli_error("--n %zu is too large", a->n);
  unsigned char *x = malloc(a->n * es), *y = malloc(a->n * es);
  report r = {0};
  r.dt = a->dt;
  int rc = (!x || !y) ? cli_error("cannot allocate %zu bytes of host memory for the inputs", 2 * a->n * es) : 0;
  if (!rc) {
    rcl_generate(x, a->dt, a->n, a->dist, a->seed);
    rcl_generate(y, a->dt, a->n, a->dist, a->seed + 1);
    if (dot ? rcl_bounds_dot(&r.b, a->dt, a->n, x, y, &a->opts) : rcl_bounds_sum(&r.b, a->dt, a->n, x, &a->opts))
      rc = cli_fail("bounds");
  }
  terms t = {a->dt, a->n, x, dot ? y : NULL};
  /* In written order only consecutive terms are grouped: reprocl's ordered contract strides over 64
   * lanes beyond 64 terms, so --order assoc does not cover it there. */
  int assoc = a->opts.order == RCL_BOUNDS_ASSOCIATIVE, strided = assoc && a->n > 64;
  const char *why_strided = strided ? "the contract's lanes permute terms; --order assoc does not cover it" : NULL;
  if (!rc) rc = add_host(&r, "left-to-right", left_to_right(&t), 1, NULL);
  if (!rc) rc = add_host(&r, "right-to-left", right_to_left(&t), 1, NULL);
  if (!rc) rc = add_host(&r, "pairwise", pairwise(&t, 0, a->n), 1, NULL);
  if (!rc && dot) rc = add_host(&r, "fma chain (left-to-right)", fma_chain(&t), !a->opts.no_fma, NULL);
  unsigned char v[8], ref[8];
  rcl_reduce_op op = dot ? RCL_OP_DOT : RCL_OP_SUM;
  if (!rc && rcl_ref_reduce(ref, op, a->dt, RCL_REDUCE_ORDERED, a->n, x, y)) rc = cli_fail("host reference");
  if (!rc && !add_row(&r, "host", "reprocl reduce.ordered", ref, !strided, why_strided))
    rc = cli_error("out of memory");
  if (!rc && rcl_ref_reduce(v, op, a->dt, RCL_REDUCE_EXACT, a->n, x, y)) rc = cli_fail("host reference");
  if (!rc && !add_row(&r, "host", "reprocl reduce.exact", v, 0, "the correctly rounded value, not an evaluation order"))
    rc = cli_error("out of memory");
  reduce_arg ra = {op, a->dt, a->n, x, y};
  if (!rc)
    rc = add_devices(&r, a->device, RCL_FAMILY_REDUCE, run_reduce, &ra, "reduce.ordered", ref, !strided, why_strided);
  if (!rc) {
    char title[256];
    snprintf(title, sizeof title, "bounds: %s of %zu %s values (dist %s, seed %llu)", dot ? "dot product" : "sum", a->n,
             rcl_dtype_name(a->dt), rcl_gen_kind_name(a->dist), (unsigned long long)a->seed);
    json_t *desc = json_pack("{s:s,s:s,s:I,s:s,s:I}", "kind", a->kind, "dtype", rcl_dtype_name(a->dt), "n",
                             (json_int_t)a->n, "dist", rcl_gen_kind_name(a->dist), "seed", (json_int_t)a->seed);
    rc = print_report(&r, title, desc, &a->opts, a->json);
  }
  free(r.rows);
  free(x);
  free(y);
  return rc;
}

/* ---- spmv-row ----------------------------------------------------------------------------------------- */
typedef struct {
  const rcl_csr *A;
  const void *x;
  size_t row;
} spmv_arg;

/* One in the dtype, and +0: y = 1*s + 0*y reads no y (BLAS rule) and 1*s = s exactly. */
static void dtype_const(unsigned char *out, double v, rcl_dtype dt) { endpoint(out, v, dt); }

static int run_spmv(unsigned char *value, rcl_context *ctx, void *p) {
  spmv_arg *a = p;
  size_t es = rcl_dtype_size(a->A->dtype);
  unsigned char one[8], zero[8];
  dtype_const(one, 1.0, a->A->dtype);
  dtype_const(zero, 0.0, a->A->dtype);
  unsigned char *y = calloc(a->A->nrows ? a->A->nrows : 1, es);
  if (!y) return RCL_ERR_OUT_OF_MEMORY;
  rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
  int rc = rcl_spmv(y, ctx, a->A, one, a->x, zero, &o);
  if (!rc) memcpy(value, y + a->row * es, es);
  free(y);
  return rc;
}

static int kind_spmv(const args *a) {
  if (!a->have_row) return cli_error("--kind spmv-row needs --row I (the row to bound)");
  rcl_csr *A = NULL;
  char label[256];
  int rc = cli_sparse_load(&A, label, sizeof label, a->matrix, a->gen, a->dt);
  if (rc) return rc;
  if (a->row >= A->nrows) {
    rc = cli_error("--row %zu is outside the matrix %s (%zu rows)", a->row, label, A->nrows);
    rcl_csr_free(A);
    return rc;
  }
  size_t es = rcl_dtype_size(a->dt), first = (size_t)A->row_ptr[a->row], m = (size_t)A->row_ptr[a->row + 1] - first;
  unsigned char *x = malloc((A->ncols ? A->ncols : 1) * es), *av = malloc((m + 1) * es), *xv = malloc((m + 1) * es),
                *y = calloc(A->nrows ? A->nrows : 1, es);
  report r = {0};
  r.dt = a->dt;
  rcl_expr *e = NULL;
  if (!x || !av || !xv || !y) rc = cli_error("out of host memory for the inputs");
  if (!rc) {
    rcl_generate(x, a->dt, A->ncols, a->dist, a->seed);
    /* The row's terms with a leading 0*1 term, which evaluates like the contract's +0 start (0*1 = +0 and
     * fma(0, 1, c) = +0 + c), so the host's orders below include it. */
    dtype_const(av, 0.0, a->dt);
    dtype_const(xv, 1.0, a->dt);
    for (size_t k = 0; k < m; k++) {
      memcpy(av + (k + 1) * es, (const char *)A->values + (first + k) * es, es);
      memcpy(xv + (k + 1) * es, x + (size_t)A->col_idx[first + k] * es, es);
    }
    if (rcl_expr_spmv_row(&e, a->dt, m, av + es, xv + es) ||
        rcl_bounds_compute(&r.b, e, rcl_expr_size(e) - 1, &a->opts))
      rc = cli_fail("bounds");
  }
  terms t = {a->dt, m + 1, av, xv};
  unsigned char ref[8], one[8], zero[8];
  dtype_const(one, 1.0, a->dt);
  dtype_const(zero, 0.0, a->dt);
  if (!rc) rc = add_host(&r, "right-to-left", right_to_left(&t), 1, NULL);
  if (!rc) rc = add_host(&r, "pairwise", pairwise(&t, 0, m + 1), 1, NULL);
  if (!rc) rc = add_host(&r, "fma chain (contracted loop)", fma_chain(&t), !a->opts.no_fma, NULL);
  if (!rc && rcl_ref_spmv(y, A, RCL_SPMV_ORDERED, one, x, zero)) rc = cli_fail("host reference");
  if (!rc) memcpy(ref, y + a->row * es, es);
  if (!rc && !add_row(&r, "host", "reprocl spmv.ordered", ref, 1, "left-to-right from +0"))
    rc = cli_error("out of memory");
  if (!rc && rcl_ref_spmv(y, A, RCL_SPMV_EXACT, one, x, zero)) rc = cli_fail("host reference");
  if (!rc && !add_row(&r, "host", "reprocl spmv.exact", y + a->row * es, 0,
                      "the correctly rounded value, not an evaluation order"))
    rc = cli_error("out of memory");
  spmv_arg sa = {A, x, a->row};
  if (!rc) rc = add_devices(&r, a->device, RCL_FAMILY_SPMV, run_spmv, &sa, "spmv.ordered", ref, 1, NULL);
  if (!rc) {
    char title[512];
    snprintf(title, sizeof title, "bounds: row %zu of %s (%zu entries) times x, %s (dist %s, seed %llu)", a->row, label,
             m, rcl_dtype_name(a->dt), rcl_gen_kind_name(a->dist), (unsigned long long)a->seed);
    json_t *desc =
        json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:s,s:I}", "kind", a->kind, "dtype", rcl_dtype_name(a->dt), "matrix",
                  label, "rows", (json_int_t)A->nrows, "nnz", (json_int_t)A->nnz, "row", (json_int_t)a->row,
                  "row_entries", (json_int_t)m, "dist", rcl_gen_kind_name(a->dist), "seed", (json_int_t)a->seed);
    rc = print_report(&r, title, desc, &a->opts, a->json);
  }
  rcl_expr_free(e);
  free(r.rows);
  free(x);
  free(av);
  free(xv);
  free(y);
  rcl_csr_free(A);
  return rc;
}

/* ---- stencil ------------------------------------------------------------------------------------------- */
typedef struct {
  const rcl_stencil_desc *st;
  rcl_dtype dt;
  size_t w, h, px, py;
  const void *in;
} stencil_arg;

static int run_stencil(unsigned char *value, rcl_context *ctx, void *p) {
  stencil_arg *a = p;
  size_t es = rcl_dtype_size(a->dt);
  unsigned char *out = malloc(a->w * a->h * es);
  if (!out) return RCL_ERR_OUT_OF_MEMORY;
  int rc = rcl_stencil(out, ctx, a->st, a->dt, a->w, a->h, 1, a->in, NULL);
  if (!rc) memcpy(value, out + (a->py * a->w + a->px) * es, es);
  free(out);
  return rc;
}

/* v(x, y) by the contract's boundary rule (docs/contracts.md (§5)). */
static double neighbour(const args *a, const void *in, long x, long y) {
  long W = (long)a->w, H = (long)a->h;
  if (x < 0 || y < 0 || x >= W || y >= H) {
    if (a->boundary == RCL_BOUNDARY_FIXED)
      return a->dt == RCL_F32 ? (double)(float)a->boundary_value : a->boundary_value;
    if (a->boundary == RCL_BOUNDARY_PERIODIC)
      x = ((x % W) + W) % W, y = ((y % H) + H) % H;
    else
      x = x < 0 ? 0 : x >= W ? W - 1 : x, y = y < 0 ? 0 : y >= H ? H - 1 : y;
  }
  size_t i = (size_t)y * a->w + (size_t)x;
  return a->dt == RCL_F32 ? (double)((const float *)in)[i] : ((const double *)in)[i];
}

/* The grid's data, the nine values around (px, py) by the boundary rule and the weights, rounded to the dtype
 * (v, w), and the interval of rcl_bounds_stencil9 in r. */
static int stencil_interval(report *r, double v[9], double w[3], const args *a, unsigned char *in, size_t px,
                            size_t py) {
  size_t es = rcl_dtype_size(a->dt);
  /* C, N, S, E, W, NE, SE, NW, SW, with N = v(x, y-1) (row 0 at the top); weights rounded to the dtype. */
  static const int d[9][2] = {{0, 0}, {0, -1}, {0, 1}, {1, 0}, {-1, 0}, {1, -1}, {1, 1}, {-1, -1}, {-1, 1}};
  unsigned char vb[9 * 8], wb[3 * 8];
  rcl_generate(in, a->dt, a->w * a->h, a->dist, a->seed);
  for (int i = 0; i < 9; i++) {
    v[i] = neighbour(a, in, (long)px + d[i][0], (long)py + d[i][1]);
    endpoint(vb + i * es, v[i], a->dt);
  }
  for (int i = 0; i < 3; i++) {
    w[i] = a->dt == RCL_F32 ? (double)(float)a->weights[i] : a->weights[i];
    endpoint(wb + i * es, w[i], a->dt);
  }
  if (rcl_bounds_stencil9(&r->b, a->dt, wb, vb, &a->opts)) return cli_fail("bounds");
  return 0;
}

/* Host evaluations in the dtype: other groupings and a fully contracted form. */
static int stencil_host_rows(report *r, const args *a, const double v[9], const double w[3]) {
  terms t = {a->dt, 0, NULL, NULL};
  double as = rnd_add(&t, rnd_add(&t, rnd_add(&t, v[1], v[2]), v[3]), v[4]);
  double ds = rnd_add(&t, rnd_add(&t, rnd_add(&t, v[5], v[6]), v[7]), v[8]);
  double as2 = rnd_add(&t, rnd_add(&t, v[1], v[2]), rnd_add(&t, v[3], v[4]));
  double ds2 = rnd_add(&t, rnd_add(&t, v[5], v[6]), rnd_add(&t, v[7], v[8]));
  int rc;
#define MULD(p, q) (a->dt == RCL_F32 ? (double)((float)(p) * (float)(q)) : (p) * (q))
#define FMAD(p, q, o) (a->dt == RCL_F32 ? (double)fmaf((float)(p), (float)(q), (float)(o)) : fma(p, q, o))
  rc = add_host(r, "pairs: (N+S)+(E+W), ...",
                rnd_add(&t, rnd_add(&t, MULD(w[0], v[0]), MULD(w[1], as2)), MULD(w[2], ds2)), 1, NULL);
  if (!rc)
    rc = add_host(r, "reversed: wd*d + wa*a + wc*C",
                  rnd_add(&t, rnd_add(&t, MULD(w[2], ds), MULD(w[1], as)), MULD(w[0], v[0])), 1, NULL);
  if (!rc)
    rc = add_host(r, "fma(wd,d,fma(wa,a,wc*C))", FMAD(w[2], ds, FMAD(w[1], as, MULD(w[0], v[0]))), !a->opts.no_fma,
                  NULL);
#undef MULD
#undef FMAD
  return rc;
}

/* The report's title and JSON description of the stencil case, then the report. */
static int stencil_print(const report *r, const args *a, size_t px, size_t py, const double w[3]) {
  char title[512];
  snprintf(title, sizeof title,
           "bounds: 9-point stencil at (%zu, %zu) of a %zux%zu %s grid (dist %s, seed %llu), weights %.9g %.9g "
           "%.9g, boundary %s",
           px, py, a->w, a->h, rcl_dtype_name(a->dt), rcl_gen_kind_name(a->dist), (unsigned long long)a->seed, w[0],
           w[1], w[2], rcl_boundary_name(a->boundary));
  json_t *desc =
      json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:[f,f,f],s:s,s:s,s:I}", "kind", a->kind, "dtype", rcl_dtype_name(a->dt),
                "width", (json_int_t)a->w, "height", (json_int_t)a->h, "x", (json_int_t)px, "y", (json_int_t)py,
                "weights", w[0], w[1], w[2], "boundary", rcl_boundary_name(a->boundary), "dist",
                rcl_gen_kind_name(a->dist), "seed", (json_int_t)a->seed);
  return print_report(r, title, desc, &a->opts, a->json);
}

static int kind_stencil(const args *a) {
  size_t es = rcl_dtype_size(a->dt), px = a->have_point ? a->px : a->w / 2, py = a->have_point ? a->py : a->h / 2;
  if (px >= a->w || py >= a->h) return cli_error("--point %zu,%zu is outside the %zux%zu grid", px, py, a->w, a->h);
  if (a->w > SIZE_MAX / a->h / 8) return cli_error("--grid %zux%zu is too large", a->w, a->h);
  unsigned char *in = malloc(a->w * a->h * es), *out = malloc(a->w * a->h * es);
  report r = {0};
  r.dt = a->dt;
  int rc = (!in || !out) ? cli_error("cannot allocate the %zux%zu grid", a->w, a->h) : 0;
  rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
  for (int i = 0; i < 3; i++) st.weights[i] = a->weights[i];
  st.boundary = a->boundary;
  st.boundary_value = a->boundary_value;
  double v[9], w[3];
  if (!rc) rc = stencil_interval(&r, v, w, a, in, px, py);
  if (!rc) rc = stencil_host_rows(&r, a, v, w);
  unsigned char ref[8];
  if (!rc && rcl_ref_stencil(out, &st, a->dt, a->w, a->h, 1, in)) rc = cli_fail("host reference");
  if (!rc) memcpy(ref, out + (py * a->w + px) * es, es);
  if (!rc && !add_row(&r, "host", "reprocl stencil.nine", ref, 1, NULL)) rc = cli_error("out of memory");
  stencil_arg sa = {&st, a->dt, a->w, a->h, px, py, in};
  if (!rc) rc = add_devices(&r, a->device, RCL_FAMILY_STENCIL, run_stencil, &sa, "stencil.nine", ref, 1, NULL);
  if (!rc) rc = stencil_print(&r, a, px, py, w);
  free(r.rows);
  free(in);
  free(out);
  return rc;
}

/* ---- options ------------------------------------------------------------------------------------------ */
/* --point X,Y (into args). */
static int opt_point(void *target, const char *opt, const char *s) {
  args *a = target;
  const char *comma = strchr(s, ',');
  char first[64];
  if (!comma || (size_t)(comma - s) >= sizeof first)
    return cli_error("%s expects X,Y (e.g. 10,20), got \"%s\"", opt, s);
  memcpy(first, s, (size_t)(comma - s));
  first[comma - s] = '\0';
  a->have_point = 1;
  int rc = cli_parse_size(&a->px, opt, first);
  return rc ? rc : cli_parse_size(&a->py, opt, comma + 1);
}

/* --weights WC,WA,WD (into a double[3]). */
static int opt_weights(void *target, const char *opt, const char *s) {
  double *w = target;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  char *save = NULL, *tok = strtok_r(buf, ",", &save);
  int k = 0;
  for (; tok && k < 3; tok = strtok_r(NULL, ",", &save), k++) {
    int rc = cli_parse_double(&w[k], opt, tok);
    if (rc) return rc;
  }
  if (k != 3 || tok) return cli_error("%s expects three numbers WC,WA,WD, got \"%s\"", opt, s);
  return 0;
}

/* --row I (into args). */
static int opt_row(void *target, const char *opt, const char *s) {
  args *a = target;
  a->have_row = 1;
  return cli_parse_size(&a->row, opt, s);
}

/* --grid WxH (into args). */
static int opt_grid(void *target, const char *opt, const char *s) {
  args *a = target;
  return cli_parse_dims(&a->w, &a->h, opt, s);
}

/* The library's name parsers: --dist, --order, --boundary. */
static int opt_dist(void *target, const char *opt, const char *s) {
  return rcl_gen_kind_parse(target, s) ? cli_error("%s: %s", opt, rcl_error_last()) : 0;
}
static int opt_order(void *target, const char *opt, const char *s) {
  return rcl_bounds_order_parse(target, s) ? cli_error("%s: %s", opt, rcl_error_last()) : 0;
}
static int opt_boundary(void *target, const char *opt, const char *s) {
  return rcl_boundary_parse(target, s) ? cli_error("%s: %s", opt, rcl_error_last()) : 0;
}

static const char bounds_about[] =
    "Computes the tightest interval [lo, hi] of values that the expression can take under any evaluation\n"
    "order and any choice of FMA contraction (docs/bounds.md), and shows where concrete evaluations fall\n"
    "inside it: other orders on the host, reprocl's contracts (host references), and on each device the\n"
    "reproducible result and the native build's result. Inputs are rcl_generate(dist, seed); y uses seed+1.\n"
    "\n"
    "  --kind sum       x_1 + ... + x_n                    --kind dot   x_1*y_1 + ... + x_n*y_n\n"
    "  --n N            terms (default 16)\n"
    "  --kind spmv-row  row I of y = A*x: +0 + a_1*x_c1 + ... (contract spmv.ordered starts from +0); A from\n"
    "                   --matrix (Matrix Market or Harwell-Boeing) or --gen (poisson2d:N, poisson3d:N,\n"
    "                   random:ROWSxCOLS:PERROW[:SEED], powerlaw:ROWSxCOLS:MINLEN[:SEED]), x from dist/seed\n"
    "  --kind stencil   the 9-point stencil (stencil.nine) at one point: wc*C + wa*(N+S+E+W) +\n"
    "                   wd*(NE+SE+NW+SW) on a grid from dist/seed (default 64x64, the centre, SHOC's\n"
    "                   weights 0.25,0.15,0.05, fixed boundary 0; negative weights: --weights=-1,0.5,0.25)\n"
    "  --order any      re-association and commutativity (default): every order a parallel reduction uses;\n"
    "                   exact up to --max-any terms (default %u, at most %u; O(3^n) time)\n"
    "  --order assoc    re-association of the written order only; exact up to --max-assoc terms\n"
    "                   (default %u, at most %u; O(n^3) time)\n"
    "  Larger sums get a rigorous enclosure (marked 'enclosure'), or an error with --exact-only.\n"
    "  --no-fma         products are always rounded on their own (no contraction choices)\n"
    "  --device none    host evaluations only";

int cmd_bounds(int argc, char **argv) {
  args a = {.kind = "sum",
            .dt = RCL_F32,
            .n = 16,
            .seed = 1,
            .dist = RCL_GEN_UNIFORM,
            .opts = RCL_BOUNDS_OPTIONS_INIT,
            .w = 64,
            .h = 64,
            .weights = {0.25, 0.15, 0.05},
            .boundary = RCL_BOUNDARY_FIXED};
  const cli_opt opts[] = {
      CLI_STR("kind", &a.kind, "sum|dot|spmv-row|stencil", "the expression (default: sum)"),
      CLI_VAL("n", &a.n, cli_opt_size, "N", "terms of sum and dot (default 16)"),
      CLI_OPT_DTYPE(&a.dt),
      CLI_VAL("dist", &a.dist, opt_dist, "uniform|wide|cancel|special", "the inputs' distribution"),
      CLI_VAL("seed", &a.seed, cli_opt_u64, "S", "the inputs' seed (default 1)"),
      CLI_VAL("order", &a.opts.order, opt_order, "any|assoc", "which evaluation orders (default: any)"),
      CLI_FLAG("no-fma", &a.opts.no_fma, "no contraction choices"),
      CLI_FLAG("exact-only", &a.opts.exact_only, "an error where only an enclosure is known"),
      CLI_VAL("max-any", &a.opts.max_any, cli_opt_size, "M", "the exact limit of --order any"),
      CLI_VAL("max-assoc", &a.opts.max_assoc, cli_opt_size, "M", "the exact limit of --order assoc"),
      CLI_STR("device", &a.device, "D|all|none",
              "device index, name substring, 'all' or 'none' (host only) (default: " CLI_DEFAULT_DEVICE ")"),
      CLI_FLAG("native", &a.native, "show each device's native build too (always on here)"),
      CLI_OPT_JSON(&a.json),
      CLI_SECTION("spmv-row"),
      CLI_STR("matrix", &a.matrix, "FILE", "Matrix Market or Harwell-Boeing file"),
      CLI_STR("gen", &a.gen, "SPEC", "a generated matrix"),
      CLI_VAL("row", &a, opt_row, "I", "the row"),
      CLI_SECTION("stencil"),
      CLI_VAL("grid", &a, opt_grid, "WxH", "the grid (default 64x64)"),
      CLI_VAL("point", &a, opt_point, "X,Y", "the point (default: the centre)"),
      CLI_VAL("weights", a.weights, opt_weights, "WC,WA,WD", "the weights (default 0.25,0.15,0.05)"),
      CLI_VAL("boundary", &a.boundary, opt_boundary, "fixed|periodic|edge", "the boundary (default: fixed)"),
      CLI_VAL("boundary-value", &a.boundary_value, cli_opt_double, "V", "the fixed boundary's value (default 0)"),
      CLI_END};
  char about[sizeof bounds_about + 64];
  snprintf(about, sizeof about, bounds_about, RCL_BOUNDS_ANY_DEFAULT, RCL_BOUNDS_ANY_LIMIT, RCL_BOUNDS_ASSOC_DEFAULT,
           RCL_BOUNDS_ASSOC_LIMIT);
  const cli_cmd_spec spec = {
      "bounds",
      "--kind sum|dot [--n N] [options]\n"
      "       reprocl bounds --kind spmv-row --matrix FILE|--gen SPEC --row I [options]\n"
      "       reprocl bounds --kind stencil [--grid WxH] [--point X,Y] [--weights WC,WA,WD]\n"
      "                      [--boundary fixed|periodic|edge] [--boundary-value V] [options]",
      about,
      opts,
      "a value whose evaluation the interval covers lies outside it, or a reproducible result differs\n"
      "from its host reference (a device computing outside IEEE arithmetic, e.g. flushing subnormals in\n"
      "native mode, or a bug)",
      0,
      0};
  CLI_PARSE(&spec, argc, argv, NULL, NULL);
  if (a.opts.max_any > RCL_BOUNDS_ANY_LIMIT)
    return cli_error("--max-any %zu exceeds %u (the any-order DP takes O(3^n) time)", a.opts.max_any,
                     RCL_BOUNDS_ANY_LIMIT);
  if (a.opts.max_assoc > RCL_BOUNDS_ASSOC_LIMIT)
    return cli_error("--max-assoc %zu exceeds %u (the associative DP takes O(n^3) time)", a.opts.max_assoc,
                     RCL_BOUNDS_ASSOC_LIMIT);
  if (!strcmp(a.kind, "sum") || !strcmp(a.kind, "dot")) return kind_reduce(&a);
  if (!strcmp(a.kind, "spmv-row")) return kind_spmv(&a);
  if (!strcmp(a.kind, "stencil")) return kind_stencil(&a);
  return cli_error("unknown --kind \"%s\" (expected sum, dot, spmv-row or stencil)", a.kind);
}
