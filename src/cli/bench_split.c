/* reprocl bench --split DEVICES: scaling over several devices of one host. Per family, the same problem on
 * each device of the split alone (the one-device call on that device's context) and over the split
 * (rcl_split_*, with the weights rcl_split_tune_op tuned for the family's own operation and the problem's
 * size: one device alone unless a split is clearly faster), side by side in one run: the times, the ratio
 * split / fastest device alone, why the tuner kept what it kept, the split with every row on the fastest
 * device (its one-device shortcut: the overhead of a split that keeps one device), each device's share, and
 * whether every run gave the same bits. Families: a 2^26 sum (f32, f64), SpMV and CG on poisson3d:128, the
 * 9-point stencil on 8192^2. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_run_common.h"

#define SPLIT_RUN SIZE_MAX /* scase.who of the split's run */

/* One family's problem and the run in progress (on device `who` alone, or the split). */
typedef struct scase scase;
struct scase {
  const char *family, *kernel;
  char size[32];
  rcl_dtype dt;
  rcl_split *s;
  size_t who;
  double n, bytes, flops; /* the size on the plots' x axis; bytes and flops per run */
  void *x, *out;
  size_t out_bytes;
  rcl_csr *A;
  rcl_spmv_matrix *M;
  rcl_split_matrix *SM;
  rcl_cg_options co;
  size_t iterations, w, iters;
  char hist[RCL_SHA256_HEX_SIZE];
  int (*run)(scase *c);
};

static rcl_context *ctx_of(const scase *c) { return rcl_split_context(c->s, c->who); }

static int run_reduce(scase *c) {
  return c->who == SPLIT_RUN ? rcl_split_reduce(c->out, c->s, RCL_OP_SUM, c->dt, (size_t)c->n, c->x, NULL, NULL)
                             : rcl_reduce(c->out, ctx_of(c), RCL_OP_SUM, c->dt, (size_t)c->n, c->x, NULL, NULL);
}

static int run_spmv(scase *c) {
  static const double one64 = 1, zero64 = 0;
  static const float one32 = 1, zero32 = 0;
  const void *one = c->dt == RCL_F32 ? (const void *)&one32 : &one64;
  const void *zero = c->dt == RCL_F32 ? (const void *)&zero32 : &zero64;
  return c->who == SPLIT_RUN ? rcl_split_spmv(c->out, c->SM, one, c->x, zero, NULL)
                             : rcl_spmv_host(c->out, c->M, one, c->x, zero, NULL);
}

static int run_cg(scase *c) {
  rcl_cg_result r;
  memset(c->out, 0, c->out_bytes);
  int rc = c->who == SPLIT_RUN ? rcl_split_cg(c->out, &r, c->SM, c->x, &c->co) : rcl_cg(c->out, &r, c->M, c->x, &c->co);
  if (rc == RCL_ERR_NO_CONVERGENCE) rc = 0; /* a fixed number of iterations: tol 0 */
  if (!rc) {
    c->iterations = r.iterations;
    snprintf(c->hist, sizeof c->hist, "%s", r.history_sha256);
  }
  rcl_cg_result_free(&r);
  return rc;
}

static int run_stencil(scase *c) {
  rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
  return c->who == SPLIT_RUN ? rcl_split_stencil(c->out, c->s, &st, c->dt, c->w, c->w, c->iters, c->x)
                             : rcl_stencil(c->out, ctx_of(c), &st, c->dt, c->w, c->w, c->iters, c->x, NULL);
}

static int timed(void *p) {
  scase *c = p;
  return c->run(c);
}

/* ---- the problems -------------------------------------------------------------------------------- */

/* x: len values of rcl_generate; out: out_len values. */
static int alloc_data(scase *c, size_t len, size_t out_len) {
  size_t es = rcl_dtype_size(c->dt);
  c->x = malloc((len ? len : 1) * es);
  c->out_bytes = out_len * es;
  c->out = calloc(out_len ? out_len : 1, es);
  if (!c->x || !c->out) return cli_error("cannot allocate %zu bytes of host memory", (len + out_len) * es);
  rcl_generate(c->x, c->dt, len, RCL_GEN_UNIFORM, 7);
  return 0;
}

static int make_reduce(scase *c, int quick) {
  int lg = quick ? 16 : 26;
  c->n = (double)((size_t)1 << lg);
  snprintf(c->size, sizeof c->size, "2^%d", lg);
  c->bytes = c->n * (double)rcl_dtype_size(c->dt);
  c->flops = c->n;
  c->run = run_reduce;
  return alloc_data(c, (size_t)c->n, 1);
}

static int make_sparse(scase *c, int quick, int cg) {
  size_t side = quick ? 12 : 128;
  if (rcl_csr_poisson3d(&c->A, c->dt, side)) return cli_fail("poisson3d:%zu", side);
  snprintf(c->size, sizeof c->size, "poisson3d:%zu", side);
  double es = (double)rcl_dtype_size(c->dt), nnz = (double)c->A->nnz, rows = (double)c->A->nrows;
  c->co = (rcl_cg_options)RCL_CG_OPTIONS_INIT;
  c->co.tol = 0; /* every run takes max_iterations */
  c->co.max_iterations = quick ? 5 : 20;
  /* per run: an SpMV, or per CG iteration an SpMV and about 10 vector passes (2 dots, 3 axpys) */
  double its = cg ? (double)c->co.max_iterations : 1, vec = cg ? 10 : 2;
  c->n = nnz;
  c->bytes = its * (nnz * (es + 4) + (rows + 1) * 4 + vec * rows * es);
  c->flops = its * (2 * nnz + (cg ? 10 * rows : 0));
  c->run = cg ? run_cg : run_spmv;
  return alloc_data(c, c->A->nrows, c->A->nrows);
}

static int make_stencil(scase *c, int quick) {
  c->w = quick ? 128 : 8192;
  c->iters = quick ? 2 : 10;
  snprintf(c->size, sizeof c->size, "%zu^2", c->w);
  c->n = (double)(c->w * c->w);
  c->bytes = 2 * c->n * (double)rcl_dtype_size(c->dt) * (double)c->iters;
  c->flops = 17 * c->n * (double)c->iters;
  c->run = run_stencil;
  return alloc_data(c, c->w * c->w, c->w * c->w);
}

static void scase_free(scase *c) {
  rcl_split_matrix_free(c->SM);
  rcl_spmv_matrix_free(c->M);
  rcl_csr_free(c->A);
  free(c->x);
  free(c->out);
}

/* ---- runs and records ---------------------------------------------------------------------------- */

/* What one run (a device alone or the split) gave: its time and digest. */
typedef struct {
  double med, mn, mx;
  char key[2 * RCL_SHA256_HEX_SIZE + 2];
} outcome;

static json_t *shares_json(rcl_split *s) {
  json_t *a = json_array();
  for (size_t i = 0; i < rcl_split_count(s); i++) {
    size_t first = 0, count = 0;
    const char *note = NULL;
    rcl_split_share(&first, &count, &note, s, i);
    json_t *e = json_pack("{s:s,s:I,s:I}", "device", rcl_context_profile(rcl_split_context(s, i))->device_name, "first",
                          (json_int_t)first, "count", (json_int_t)count);
    if (note) json_object_set_new(e, "left_out", json_string(note));
    json_array_append_new(a, e);
  }
  return a;
}

/* The family of this problem. */
static rcl_family family_of(const scase *c) {
  return c->run == run_reduce ? RCL_FAMILY_REDUCE : c->A ? RCL_FAMILY_SPMV : RCL_FAMILY_STENCIL;
}

/* The operation rcl_split_tune_op tunes for this problem, and its size (elements, matrix rows, grid rows). */
static rcl_split_op op_of(const scase *c, size_t *size) {
  *size = c->A ? c->A->nrows : c->run == run_stencil ? c->w : (size_t)c->n;
  return c->run == run_reduce ? RCL_SPLIT_OP_REDUCE
         : c->run == run_spmv ? RCL_SPLIT_OP_SPMV
         : c->run == run_cg   ? RCL_SPLIT_OP_CG
                              : RCL_SPLIT_OP_STENCIL;
}

/* The split's weights for the next run: w (count values), or the given ones (--split-weights) when w is
 * NULL. */
static int set_weights(cli_split_run *sr, const double *w) {
  const cli_split_opts *o = sr->opts;
  int rc = w ? rcl_split_set_weights(sr->s, w, rcl_split_count(sr->s))
             : rcl_split_set_weights(sr->s, o->nweights ? o->weights : NULL, o->nweights);
  return rc ? cli_split_fail(sr) : 0;
}

/* What the tuner kept, why, and the weights (JSON). */
static json_t *tune_json(const rcl_split_tune_info *t, const double *w, size_t n, int given) {
  json_t *ws = json_array();
  for (size_t i = 0; i < n; i++) json_array_append_new(ws, json_real(w[i]));
  return json_pack("{s:s,s:I,s:f,s:f,s:f,s:b,s:o}", "kept",
                   given           ? "given"
                   : t->split_kept ? "split"
                                   : "alone",
                   "alone_device", (json_int_t)t->alone, "alone_s", t->alone_s, "split_s", t->split_s, "margin",
                   t->margin, "cached", t->cached, "weights", ws);
}

/* The weights of this problem's operation, tuned (or cached) and set for the split's run; with
 * --split-weights the given ones. *j: what was kept and why. */
static int tune(rcl_split_tune_info *info, json_t **j, scase *c, cli_split_run *sr) {
  memset(info, 0, sizeof *info);
  sr->tune_s = 0;
  size_t size, n = rcl_split_count(sr->s);
  if (sr->opts->nweights) {
    *j = tune_json(info, sr->opts->weights, n, 1);
    return set_weights(sr, NULL);
  }
  rcl_split_op op = op_of(c, &size);
  double *w = malloc(n * sizeof *w), t0 = cli_now();
  int rc = w ? rcl_split_tune_op(w, info, sr->s, op, c->dt, size) : RCL_ERR_OUT_OF_MEMORY;
  sr->tune_s = cli_now() - t0;
  rc = rc ? cli_split_fail(sr) : set_weights(sr, w);
  if (!rc) *j = tune_json(info, w, n, 0);
  free(w);
  return rc;
}

/* c's matrix on c->who (the whole matrix there, or for the split cut by its weights now). */
static int prepare(scase *c) {
  if (!c->A) return 0;
  if (c->who == SPLIT_RUN) {
    rcl_split_matrix_free(c->SM);
    c->SM = NULL;
    return rcl_split_matrix_create(&c->SM, c->s, c->A);
  }
  rcl_spmv_matrix_free(c->M);
  c->M = NULL;
  return rcl_spmv_matrix_create(&c->M, ctx_of(c), c->A);
}

/* Records o (c's last run on c->who: its output's digest) under device `name` as `variant`. */
static void record(outcome *o, scase *c, cli_bench *b, const char *name, const char *variant, cli_split_run *sr) {
  char hex[RCL_SHA256_HEX_SIZE];
  cli_digest(hex, c->out, c->out_bytes);
  snprintf(o->key, sizeof o->key, "%s%s%s", hex, c->hist[0] ? " " : "", c->hist);
  json_t *extra = json_pack("{s:s}", "sha256", hex);
  if (c->A) {
    json_object_set_new(extra, "matrix", json_string(c->size));
    json_object_set_new(extra, "contract", json_string("ordered"));
    json_object_set_new(extra, "nnz", json_integer((json_int_t)c->A->nnz));
  }
  if (c->run == run_cg) json_object_set_new(extra, "iterations", json_integer((json_int_t)c->iterations));
  if (c->who == SPLIT_RUN) json_object_set_new(extra, "shares", shares_json(c->s));
  if (c->who == SPLIT_RUN) json_object_set_new(extra, "tune_s", json_real(sr->tune_s));
  b->device_name = name;
  cli_bench_record(b, c->family, c->kernel, variant, "reproducible", c->dt, c->size, c->n, o->med, o->mn, o->mx,
                   c->bytes, c->flops, extra);
}

/* Runs c on c->who, times it, records it under device `name` as `variant`. */
static int run_one(outcome *o, scase *c, cli_bench *b, const char *name, const char *variant, cli_split_run *sr) {
  int rc = prepare(c);
  if (!rc) rc = cli_bench_time(&o->med, &o->mn, &o->mx, b->repeats, timed, c);
  if (rc) return cli_fail("%s %s %s on %s", c->family, rcl_dtype_name(c->dt), c->size, name);
  record(o, c, b, name, variant, sr);
  return 0;
}

/* The split and device `fastest` alone timed in turn (a warm-up of each, then alone, split, alone, split ...
 * repeats times), so both meet the same state of the machine — the clocks, the other device's threads after
 * the tuner's runs: their ratio is the benchmark's verdict. Recorded as variants alone-paired and split. */
static int run_paired(outcome *al, outcome *sp, scase *c, cli_bench *b, cli_split_run *sr, size_t fastest,
                      char **names) {
  int n = b->repeats < 1 ? 1 : b->repeats, rc = 0;
  double *t = malloc(2 * (size_t)n * sizeof *t);
  if (!t) return cli_error("out of host memory");
  size_t who[2] = {fastest, SPLIT_RUN};
  for (int w = 0; w < 2 && !rc; w++) c->who = who[w], rc = prepare(c);
  for (int i = -1; i < n && !rc; i++) /* i = -1: the warm-ups */
    for (int w = 0; w < 2 && !rc; w++) {
      c->who = who[w];
      double t0 = cli_now();
      rc = c->run(c);
      if (i >= 0) t[w * n + i] = cli_now() - t0;
      if (!rc && i == n - 1 && w == 0) { /* the alone run's digest, before the split's run overwrites out */
        cli_time_stats(&al->med, &al->mn, &al->mx, t, n);
        record(al, c, b, names[fastest], "alone-paired", sr);
      }
    }
  if (!rc) {
    cli_time_stats(&sp->med, &sp->mn, &sp->mx, t + n, n);
    record(sp, c, b, sr->label, "split", sr);
  }
  free(t);
  return rc ? cli_fail("%s %s %s: the split and %s in turn", c->family, rcl_dtype_name(c->dt), c->size, names[fastest])
            : 0;
}

/* The split with every index on device k (weights 1 there, 0 elsewhere): the one-device shortcut, recorded
 * as variant split-one. */
static int run_shortcut(outcome *o, scase *c, cli_bench *b, cli_split_run *sr, size_t k) {
  size_t n = rcl_split_count(c->s);
  double *w = calloc(n, sizeof *w);
  if (!w) return cli_error("out of host memory");
  w[k] = 1;
  int rc = set_weights(sr, w);
  free(w);
  c->who = SPLIT_RUN;
  sr->tune_s = 0;
  return rc ? rc : run_one(o, c, b, sr->label, "split-one", sr);
}

/* What the tuner kept and why, and the shortcut's ratio, on stderr. */
static void report_tune(const rcl_split_tune_info *t, const cli_split_run *sr, double one_ratio, size_t fastest) {
  fprintf(stderr, "           split with everything on [%zu] (its one-device call): ratio %.2f\n", fastest, one_ratio);
  if (sr->opts->nweights)
    fprintf(stderr, "           weights given (--split-weights)\n");
  else if (t->split_kept)
    fprintf(stderr, "           tuned%s: a split, %.3f ms < %.3f ms ([%zu] alone) by more than the margin %.1f%%\n",
            t->cached ? " (cached)" : "", t->split_s * 1e3, t->alone_s * 1e3, t->alone, 100 * t->margin);
  else if (t->split_s > 0)
    fprintf(stderr,
            "           tuned%s: [%zu] alone, %.3f ms; the best split's %.3f ms is not below by the margin %.1f%%\n",
            t->cached ? " (cached)" : "", t->alone, t->alone_s * 1e3, t->split_s * 1e3, 100 * t->margin);
  else
    fprintf(stderr, "           tuned%s: [%zu] alone\n", t->cached ? " (cached)" : "", t->alone);
}

/* Each usable device alone, then the split; the summary record: fastest alone, split, their ratio, and
 * whether every run gave the same bits. */
static int scale_case(scase *c, cli_bench *b, cli_split_run *sr, char **names) {
  const char *split_name = sr->label;
  outcome o, best = {0, 0, 0, ""}, sp, one;
  size_t fastest = SIZE_MAX;
  int same = 1, rc = 0;
  for (size_t i = 0; i < rcl_split_count(c->s) && !rc; i++) {
    const char *why = NULL;
    rcl_family fam = family_of(c);
    if (rcl_device_profile_support(rcl_context_profile(rcl_split_context(c->s, i)), fam, c->dt, &why) ==
        RCL_SUPPORT_NONE) {
      b->device_name = names[i];
      cli_bench_skip(b, c->family, c->kernel, "alone", why);
      continue;
    }
    c->who = i;
    if ((rc = run_one(&o, c, b, names[i], "alone", sr)) != 0) break;
    same &= fastest == SIZE_MAX || !strcmp(o.key, best.key);
    if (fastest == SIZE_MAX || o.med < best.med) best = o, fastest = i;
  }
  rcl_split_tune_info ti;
  json_t *tj = NULL;
  if (rc || fastest == SIZE_MAX || (rc = run_shortcut(&one, c, b, sr, fastest)) != 0) return rc;
  double first_s = best.med; /* the fastest device's time in the first round, alone */
  if ((rc = tune(&ti, &tj, c, sr)) != 0 || (rc = run_paired(&best, &sp, c, b, sr, fastest, names)) != 0) {
    json_decref(tj);
    return rc;
  }
  same &= !strcmp(sp.key, best.key) && !strcmp(one.key, best.key);
  json_t *sum = json_pack("{s:s,s:s,s:s,s:s,s:s,s:f,s:s,s:s,s:f,s:f,s:f,s:b}", "record", "summary", "family", c->family,
                          "kernel", c->kernel, "size", c->size, "dtype", rcl_dtype_name(c->dt), "n", c->n, "device",
                          split_name, "fastest_alone", names[fastest], "fastest_alone_s", best.med, "split_s", sp.med,
                          "ratio_split_to_fastest_alone", sp.med / best.med, "same_bits", same);
  json_object_set_new(sum, "fastest_alone_first_s", json_real(first_s));
  json_object_set_new(sum, "split_one_s", json_real(one.med));
  json_object_set_new(sum, "ratio_split_one_to_alone", json_real(one.med / first_s));
  json_object_set_new(sum, "tune", tj);
  json_array_append_new(b->results, sum);
  fprintf(stderr, "  %-8s %-5s %-4s %-14s fastest alone %10.3f ms (%s), split %10.3f ms: ratio %.2f, %s\n", c->family,
          c->kernel, rcl_dtype_name(c->dt), c->size, best.med * 1e3, names[fastest], sp.med * 1e3, sp.med / best.med,
          same ? "same bits" : "BITS DIFFER");
  report_tune(&ti, sr, one.med / first_s, fastest);
  return same ? 0 : (cli_error("%s %s: the split's or a device's bits differ", c->family, c->size), CLI_EXIT_FAILED);
}

/* ---- the run ------------------------------------------------------------------------------------- */

static const struct {
  const char *family, *kernel;
  rcl_dtype dt;
} scale_cases[] = {{"reduce", "sum", RCL_F32},
                   {"reduce", "sum", RCL_F64},
                   {"spmv", "spmv", RCL_F64},
                   {"cg", "cg", RCL_F64},
                   {"stencil", "nine", RCL_F32}};

int cli_bench_split_has(const char *family) {
  for (size_t k = 0; k < sizeof scale_cases / sizeof scale_cases[0]; k++)
    if (!strcmp(scale_cases[k].family, family)) return 1;
  return 0;
}

/* Device entries: each device of the split (its profile and name) and the split itself. */
static char **device_entries(json_t *jdev, rcl_split *s, const char *split_name, const char *spec) {
  size_t n = rcl_split_count(s);
  char **names = calloc(n, sizeof *names);
  for (size_t i = 0; names && i < n; i++) {
    const rcl_device_profile *p = rcl_context_profile(rcl_split_context(s, i));
    size_t len = strlen(p->platform_name) + strlen(p->device_name) + 32;
    if (!(names[i] = malloc(len))) break;
    snprintf(names[i], len, "[%zu] %s: %s", i, p->platform_name, p->device_name);
    json_t *pj = cli_profile_json(p);
    json_object_set_new(pj, "name", json_string(names[i]));
    json_object_set_new(pj, "copy_gbps", json_real(0));
    json_array_append_new(jdev, pj);
  }
  json_array_append_new(jdev, json_pack("{s:s,s:f,s:s,s:I}", "name", split_name, "copy_gbps", 0.0, "split", spec,
                                        "count", (json_int_t)n));
  return names;
}

int cli_bench_split(cli_bench *b, cli_split_run *sr, const char *families, json_t *jdev) {
  size_t n = rcl_split_count(sr->s);
  char **names = device_entries(jdev, sr->s, sr->label, sr->opts->devices);
  int rc = names ? 0 : cli_error("out of host memory");
  for (size_t i = 0; !rc && i < n; i++)
    if (!names[i]) rc = cli_error("out of host memory");
  fprintf(stderr, "%s\n", sr->label);
  for (size_t k = 0; !rc && k < sizeof scale_cases / sizeof scale_cases[0]; k++) {
    if (!cli_bench_selected(families, scale_cases[k].family)) continue;
    scase c;
    memset(&c, 0, sizeof c);
    c.family = scale_cases[k].family;
    c.kernel = scale_cases[k].kernel;
    c.dt = scale_cases[k].dt;
    c.s = sr->s;
    double t0 = cli_now();
    rc = !strcmp(c.family, "reduce")    ? make_reduce(&c, b->quick)
         : !strcmp(c.family, "stencil") ? make_stencil(&c, b->quick)
                                        : make_sparse(&c, b->quick, !strcmp(c.family, "cg"));
    if (!rc) rc = scale_case(&c, b, sr, names);
    scase_free(&c);
    fprintf(stderr, "  %s %s: %.1f s\n", c.family, rcl_dtype_name(c.dt), cli_now() - t0);
  }
  for (size_t i = 0; names && i < n; i++) free(names[i]);
  free(names);
  return rc;
}
