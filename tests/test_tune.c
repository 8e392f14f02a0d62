/* The autotuner on every device: tuned parameters give the reference bits for every reduction kernel;
 * the search never launches invalid candidates, times clamped duplicates once and excludes (and reports)
 * a candidate whose output differs; the modes on/off/force by API and environment; in-place kernels
 * tuned on scratch copies; get/set/export/import; the program binary cache and offline bundles. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"
#include "build/cache_dir.h"
#include "context/registry.h"
#include "core/internal.h"
#include "tune/params.h"
#include "tune/platform.h"
#include "tune/tune.h"
#include "tune/tune_cache.h"

static char *tmpdir(const char *tag) {
  char *p = malloc(256);
  snprintf(p, 256, "%s/tune-%s-XXXXXX", REPROCL_BINARY_DIR, tag);
  ck_assert_ptr_nonnull(mkdtemp(p));
  return p;
}

static void rm_rf(const char *path) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
  ck_assert_int_eq(system(cmd), 0);
}

static rcl_context *make_ctx(int dev, const char *dir, rcl_tuning_mode mode) {
  char spec[16];
  snprintf(spec, sizeof spec, "%d", dev);
  rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
  o.device = spec;
  o.cache_dir = dir;
  o.tuning = mode;
  rcl_context *c = NULL;
  int rc = rcl_context_create(&c, &o);
  ck_assert_msg(rc == 0, "context on device %d: %s", dev, rcl_error_last());
  return c;
}

/* Sets an environment variable for one test and puts the previous value back afterwards. */
static char *env_saved;
static void env_push(const char *name, const char *value) {
  const char *old = getenv(name);
  env_saved = old ? strdup(old) : NULL;
  setenv(name, value, 1);
}
static void env_pop(const char *name) {
  if (env_saved)
    setenv(name, env_saved, 1);
  else
    unsetenv(name);
  free(env_saved);
  env_saved = NULL;
}

static size_t param(const rcl_tune_choice *c, const char *name) {
  for (size_t i = 0; i < c->count; i++)
    if (!strcmp(c->params[i].name, name)) return c->params[i].value;
  ck_abort_msg("%s has no parameter %s", c->kernel, name);
  return 0;
}

/* The tuning data of reduce_tune.c, rebuilt here: uniform x (seed 0x7e57) and y (0x7e58). */
static void tuning_data(void *x, void *y, rcl_dtype dt, size_t n) {
  ck_assert_int_eq(rcl_generate(x, dt, n, RCL_GEN_UNIFORM, 0x7e57), 0);
  ck_assert_int_eq(rcl_generate(y, dt, n, RCL_GEN_UNIFORM, 0x7e58), 0);
}

/* Every reduction kernel tuned (small budget) on every device: no candidate may differ from the default
 * configuration, the default's output is the host reference's, and the chosen parameters (used by the
 * context from now on, and passed explicitly) give the reference bits on test data. */
START_TEST(tuned_parameters_are_bit_identical) {
  static const struct {
    const char *kernel;
    rcl_reduce_op op;
    rcl_reduce_mode mode;
  } ks[] = {
      {"reduce.sum.ordered", RCL_OP_SUM, RCL_REDUCE_ORDERED},   {"reduce.dot.ordered", RCL_OP_DOT, RCL_REDUCE_ORDERED},
      {"reduce.nrm2.ordered", RCL_OP_NRM2, RCL_REDUCE_ORDERED}, {"reduce.sum.exact", RCL_OP_SUM, RCL_REDUCE_EXACT},
      {"reduce.dot.exact", RCL_OP_DOT, RCL_REDUCE_EXACT},       {"reduce.nrm2.exact", RCL_OP_NRM2, RCL_REDUCE_EXACT}};
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  rcl_context *c = make_ctx(_i, NULL, RCL_TUNING_OFF);
  size_t n = (1u << 16) + 77;
  for (int d = 0; d < 2; d++) {
    rcl_dtype dt = dts[d];
    if (!rt_supported(_i, RCL_FAMILY_REDUCE, dt)) {
      rcl_tune_report r;
      rt_fails(rcl_tune(&r, c, "reduce.sum.ordered", dt, n, NULL), RCL_ERR_UNSUPPORTED, "fp64");
      continue;
    }
    size_t es = rcl_dtype_size(dt);
    void *x = malloc(n * es), *y = malloc(n * es), *tx = malloc(n * es), *ty = malloc(n * es);
    rt_fill(x, dt, n, "special", 5);
    rt_fill(y, dt, n, "wide", 6);
    tuning_data(tx, ty, dt, n);
    for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++) {
      rcl_tune_report rep;
      rcl_tune_options to = RCL_TUNE_OPTIONS_INIT;
      to.budget_ms = 600;
      to.samples = 3;
      to.store = 0;
      rt_ok(rcl_tune(&rep, c, ks[k].kernel, dt, n, &to));
      ck_assert_msg(rep.mismatches == 0, "%s on %s: %s", ks[k].kernel, rt_device_name(_i), rep.mismatch);
      ck_assert_uint_ge(rep.launches, 1);
      /* variant x local_size x groups_per_cu; exact mode also x accum (window, fast). */
      ck_assert_uint_eq(rep.candidates, 2 * 6 * 7 * (ks[k].mode == RCL_REDUCE_EXACT ? 2 : 1));
      /* The reference digest is the host reference's output on the tuning data. */
      double want = 0;
      char hex[RCL_SHA256_HEX_SIZE];
      rt_ok(rcl_ref_reduce(&want, ks[k].op, dt, ks[k].mode, n, tx, ty));
      rcl_sha256_hex(hex, &want, es);
      ck_assert_str_eq(rep.reference_digest, hex);
      /* The context now uses the choice (tuning is off: it came from rcl_tune). */
      rcl_tune_choice ch;
      rt_ok(rcl_tune_get(&ch, c, ks[k].kernel, dt, n));
      ck_assert_int_eq(ch.origin, RCL_TUNE_FROM_TUNING);
      rcl_reduce_options o = RCL_REDUCE_OPTIONS_INIT;
      o.mode = ks[k].mode;
      double got = 0;
      rt_ok(rcl_ref_reduce(&want, ks[k].op, dt, ks[k].mode, n, x, y));
      rt_ok(rcl_reduce(&got, c, ks[k].op, dt, n, x, y, &o));
      rt_assert_bits_eq(&got, &want, 1, dt, "%s tuned (implicit) on %s", ks[k].kernel, rt_device_name(_i));
      o.variant = (rcl_reduce_variant)param(&ch, "variant");
      o.local_size = param(&ch, "local_size");
      o.num_groups = param(&ch, "groups_per_cu") * rcl_context_profile(c)->compute_units;
      got = 0;
      rt_ok(rcl_reduce(&got, c, ks[k].op, dt, n, x, y, &o));
      rt_assert_bits_eq(&got, &want, 1, dt, "%s tuned (explicit %s) on %s", ks[k].kernel, ch.params[0].label,
                        rt_device_name(_i));
    }
    free(x);
    free(y);
    free(tx);
    free(ty);
  }
  rcl_context_free(c);
}
END_TEST

/* ---- a test family: checks the search itself ----------------------------------------------------- */

/* Parameters a in {1,2,3,4} and b in {10,20}: a = 4 is invalid, b = 20 is clamped to 10 (so it is the
 * same launch), and a = 3 produces different output bits (a deliberately broken candidate). */
static const size_t a_values[] = {1, 2, 3, 4};
static const size_t b_values[] = {10, 20};
static const rcl_tune_param_def fake_params[] = {{"a", a_values, 4, NULL}, {"b", b_values, 2, NULL}};
typedef struct {
  rcl_context *ctx;
  cl_mem buf;
  size_t last_a;
  size_t launches[5];
  size_t invalid_launched, prepared;
} fake_state;
static fake_state *fake_last;

static int fake_setup(void **st, rcl_context *ctx, rcl_dtype dt, size_t n) {
  (void)dt;
  (void)n;
  fake_state *s = calloc(1, sizeof *s);
  s->ctx = ctx;
  cl_int err;
  s->buf = clCreateBuffer(rcl_context_cl_context(ctx), CL_MEM_READ_WRITE, 64, NULL, &err);
  fake_last = s;
  *st = s;
  return 0;
}

static int fake_check(void *st, rcl_tune_point *p, int is_default, char *why, size_t wl) {
  (void)st;
  if (is_default) {
    if (!p->v[0]) p->v[0] = 1;
    if (!p->v[1]) p->v[1] = 10;
  }
  if (p->v[0] == 4) {
    snprintf(why, wl, "a = 4 does not fit");
    return 0;
  }
  memset(p->eff, 0, sizeof p->eff);
  p->eff[0] = p->v[0];
  p->eff[1] = 10; /* b is clamped */
  return 1;
}

static int fake_prepare(void *st, cl_command_queue q) {
  (void)q;
  ((fake_state *)st)->prepared++;
  return 0;
}

static int fake_run(void *st, const rcl_tune_point *p, cl_command_queue q) {
  fake_state *s = st;
  if (p->v[0] >= 4) s->invalid_launched++;
  s->launches[p->v[0]]++;
  s->last_a = p->v[0];
  rcl_chain ch;
  rcl_queue_args qa = RCL_QUEUE_ARGS_INIT;
  qa.queue = q;
  rcl__chain_begin(&ch, q, &qa);
  unsigned pattern = 7;
  int rc = rcl__chain_fill(&ch, s->buf, &pattern, 4, 0, 64);
  rcl__chain_end(&ch, NULL);
  return rc;
}

static int fake_digest(void *st, cl_command_queue q, char hex[RCL_SHA256_HEX_SIZE]) {
  fake_state *s = st;
  unsigned char b[64];
  clEnqueueReadBuffer(q, s->buf, CL_TRUE, 0, 64, b, 0, NULL, NULL);
  if (s->last_a == 3) b[5] ^= 1; /* the broken candidate */
  rcl_sha256_hex(hex, b, 64);
  return 0;
}

static void fake_teardown(void *st) {
  fake_state *s = st;
  clReleaseMemObject(s->buf);
  /* kept for inspection: fake_last; freed by the test */
}

static const rcl_tune_kernel fake_kernel = {
    "test.fake",  RCL_FAMILY_REDUCE, "reduce.cl", NULL,         1, 1, 1, 2, fake_params, fake_setup, fake_check,
    fake_prepare, fake_run,          fake_digest, fake_teardown};

START_TEST(search_rules) {
  rcl_context *c = make_ctx(_i, NULL, RCL_TUNING_OFF);
  rcl_tune_report rep;
  rt_ok(rcl__tune_search(&rep, c, &fake_kernel, RCL_F32, 1000, 5000, 5));
  fake_state *s = fake_last;
  ck_assert_uint_eq(rep.candidates, 8);
  ck_assert_uint_eq(rep.invalid, 2); /* (4,10), (4,20): never launched */
  ck_assert_uint_eq(s->invalid_launched, 0);
  ck_assert_uint_eq(rep.duplicates, 4); /* (1,10) is the default; (1,20), (2,20), (3,20) are clamped copies */
  ck_assert_uint_eq(rep.mismatches, 1);
  ck_assert_ptr_nonnull(strstr(rep.mismatch, "a=3 b=10"));
  ck_assert_ptr_nonnull(strstr(rep.mismatch, "please report"));
  /* Each distinct launch: one warm-up, then 5 samples; the broken one only its warm-up. On a loaded
   * machine the (equally fast) non-default candidate a=2 may time several times slower than the default
   * in the first 3 rounds and be pruned then (warm-up + 3 samples): that is the pruning rule working. The
   * default (a=1) is never pruned. */
  ck_assert_uint_le(rep.pruned, 1);
  size_t want2 = rep.pruned ? 4 : 6;
  ck_assert_uint_eq(s->launches[1], 6);
  ck_assert_uint_eq(s->launches[2], want2);
  ck_assert_uint_eq(s->launches[3], 1);
  ck_assert_uint_eq(s->prepared, 6 + want2 + 1); /* every launch restores its scratch inputs first */
  ck_assert_uint_eq(rep.choice.samples, 5);
  ck_assert_uint_ne(param(&rep.choice, "a"), 3);
  ck_assert_uint_eq(rep.timed, 2);
  free(s);
  /* A budget that ends the search during the warm-ups keeps the default (measured or not). */
  rt_ok(rcl__tune_search(&rep, c, &fake_kernel, RCL_F32, 1000, 1e-6, 5));
  ck_assert(rep.budget_exhausted);
  ck_assert_uint_eq(param(&rep.choice, "a"), 1);
  ck_assert(!rep.improved);
  free(fake_last);
  rcl_context_free(c);
}
END_TEST

/* Tuning modes by API and by REPROCL_TUNING, the budget by REPROCL_TUNE_BUDGET_MS. */
START_TEST(modes) {
  if (!rt_supported(_i, RCL_FAMILY_REDUCE, RCL_F32)) return;
  char *d = tmpdir("modes");
  env_push("REPROCL_TUNE_BUDGET_MS", "300");
  size_t n = 1u << 16;
  float *x = malloc(n * 4), want, got;
  rt_fill(x, RCL_F32, n, "uniform", 9);
  rt_ok(rcl_ref_reduce(&want, RCL_OP_SUM, RCL_F32, RCL_REDUCE_ORDERED, n, x, NULL));
  rcl_cache_stats st;
  /* off: defaults, no tuning, nothing written. */
  rcl_context *c = make_ctx(_i, d, RCL_TUNING_OFF);
  rt_ok(rcl_sum_f32(&got, c, x, n, NULL));
  rt_assert_bits_eq(&got, &want, 1, RCL_F32, "off");
  rcl_cache_stats_get(&st, c);
  ck_assert_uint_eq(st.tunings, 0);
  rcl_context_free(c);
  /* on: tuned on first use, once; the result is cached on disk. */
  c = make_ctx(_i, d, RCL_TUNING_ON);
  rt_ok(rcl_sum_f32(&got, c, x, n, NULL));
  rt_ok(rcl_sum_f32(&got, c, x, n, NULL));
  rt_assert_bits_eq(&got, &want, 1, RCL_F32, "on");
  rcl_cache_stats_get(&st, c);
  ck_assert_uint_eq(st.tunings, 1);
  ck_assert_msg(rcl_cache_warning(c) == NULL, "%s", rcl_cache_warning(c));
  rcl_context_free(c);
  /* on again, a new context: a cache hit, no tuning. */
  c = make_ctx(_i, d, RCL_TUNING_ON);
  rt_ok(rcl_sum_f32(&got, c, x, n, NULL));
  rcl_cache_stats_get(&st, c);
  ck_assert_uint_eq(st.tunings, 0);
  ck_assert_uint_eq(st.tune_cache_hits, 1);
  rcl_context_free(c);
  /* force: tuned again despite the cache. Below the tuning threshold nothing is tuned. */
  c = make_ctx(_i, d, RCL_TUNING_FORCE);
  rt_ok(rcl_sum_f32(&got, c, x, n, NULL));
  rt_ok(rcl_sum_f32(&got, c, x, 1000, NULL));
  rcl_cache_stats_get(&st, c);
  ck_assert_uint_eq(st.tunings, 1);
  rcl_context_free(c);
  /* The environment: REPROCL_TUNING=off, =force, and a bad value is refused by name. */
  setenv("REPROCL_TUNING", "off", 1);
  c = make_ctx(_i, d, RCL_TUNING_ENV);
  rt_ok(rcl_sum_f32(&got, c, x, n, NULL));
  rcl_cache_stats_get(&st, c);
  ck_assert_uint_eq(st.tunings, 0);
  rcl_context_free(c);
  setenv("REPROCL_TUNING", "force", 1);
  c = make_ctx(_i, d, RCL_TUNING_ENV);
  rt_ok(rcl_sum_f32(&got, c, x, n, NULL));
  rt_assert_bits_eq(&got, &want, 1, RCL_F32, "force (env)");
  rcl_cache_stats_get(&st, c);
  ck_assert_uint_eq(st.tunings, 1);
  rcl_context_free(c);
  setenv("REPROCL_TUNING", "sometimes", 1);
  rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
  rt_fails(rcl_context_create(&c, &o), RCL_ERR_INVALID_ARG, "REPROCL_TUNING=\"sometimes\"");
  unsetenv("REPROCL_TUNING");
  env_pop("REPROCL_TUNE_BUDGET_MS");
  free(x);
  rm_rf(d);
  free(d);
}
END_TEST

/* axpy/scal are in place: tuning on first use works on scratch copies, so the caller's vector is
 * updated exactly once. */
START_TEST(in_place_tuned_on_scratch) {
  if (!rt_supported(_i, RCL_FAMILY_REDUCE, RCL_F32)) return;
  env_push("REPROCL_TUNE_BUDGET_MS", "300");
  rcl_context *c = make_ctx(_i, NULL, RCL_TUNING_FORCE);
  size_t n = (1u << 16) + 1;
  float *x = malloc(n * 4), *y = malloc(n * 4), *want = malloc(n * 4), alpha = 0.75f;
  rt_fill(x, RCL_F32, n, "wide", 1);
  rt_fill(y, RCL_F32, n, "wide", 2);
  memcpy(want, y, n * 4);
  rcl_ref_axpy(want, RCL_F32, n, &alpha, x);
  rt_ok(rcl_axpy(y, c, RCL_F32, n, &alpha, x, 0));
  rt_assert_bits_eq(y, want, n, RCL_F32, "axpy tuned on first use on %s", rt_device_name(_i));
  rcl_ref_scal(want, RCL_F32, n, &alpha);
  rt_ok(rcl_scal(y, c, RCL_F32, n, &alpha, 0));
  rt_assert_bits_eq(y, want, n, RCL_F32, "scal tuned on first use on %s", rt_device_name(_i));
  rcl_cache_stats st;
  rcl_cache_stats_get(&st, c);
  ck_assert_uint_eq(st.tunings, 2);
  rcl_context_free(c);
  env_pop("REPROCL_TUNE_BUDGET_MS");
  free(x);
  free(y);
  free(want);
}
END_TEST

START_TEST(get_set_export_import) {
  if (!rt_supported(_i, RCL_FAMILY_REDUCE, RCL_F32)) return;
  /* A cache of its own: another test's (or the user's) records must not stand in for the defaults. */
  char *gdir = tmpdir("getset");
  rcl_context *c = make_ctx(_i, gdir, RCL_TUNING_OFF);
  rcl_tune_choice ch;
  rt_ok(rcl_tune_get(&ch, c, "reduce.dot.exact", RCL_F32, 5000000));
  ck_assert_int_eq(ch.origin, RCL_TUNE_FROM_DEFAULTS);
  ck_assert_uint_eq(ch.size_log2, 22);
  ck_assert_uint_eq(ch.count, 4); /* variant, local_size, groups_per_cu, accum */
  /* Pin, read back, and run with it. */
  for (size_t i = 0; i < ch.count; i++) {
    if (!strcmp(ch.params[i].name, "groups_per_cu")) ch.params[i].value = 1;
    if (!strcmp(ch.params[i].name, "variant")) {
      ch.params[i].value = 0;
      snprintf(ch.params[i].label, sizeof ch.params[i].label, "task");
    }
  }
  rt_ok(rcl_tune_set(c, &ch));
  rcl_tune_choice got;
  rt_ok(rcl_tune_get(&got, c, "reduce.dot.exact", RCL_F32, 4194304 + 5));
  ck_assert_int_eq(got.origin, RCL_TUNE_FROM_USER);
  ck_assert_str_eq(got.params[0].label, "task");
  ck_assert_uint_eq(param(&got, "groups_per_cu"), 1);
  /* Bad pins are refused by name. */
  rcl_tune_choice bad = ch;
  snprintf(bad.params[0].name, sizeof bad.params[0].name, "warp");
  rt_fails(rcl_tune_set(c, &bad), RCL_ERR_INVALID_ARG, "no parameter \"warp\"");
  bad = ch;
  bad.params[0].value = 9;
  rt_fails(rcl_tune_set(c, &bad), RCL_ERR_INVALID_ARG, "not one of its values");
  snprintf(bad.kernel, sizeof bad.kernel, "reduce.nope");
  rt_fails(rcl_tune_set(c, &bad), RCL_ERR_NOT_FOUND, "reduce.nope");
  /* Export in the cache format, import into a fresh context: the same choice, from "cache". */
  char *text;
  rt_ok(rcl_tune_export(&text, c));
  ck_assert_ptr_nonnull(strstr(text, "kernel=reduce.dot.exact"));
  ck_assert_ptr_nonnull(strstr(text, "variant=task"));
  char *gdir2 = tmpdir("getset2");
  rcl_context *c2 = make_ctx(_i, gdir2, RCL_TUNING_ON);
  size_t loaded, skipped;
  rt_ok(rcl_tune_import(c2, text, &loaded, &skipped));
  ck_assert_uint_eq(loaded, 1);
  ck_assert_uint_eq(skipped, 0);
  rt_ok(rcl_tune_get(&got, c2, "reduce.dot.exact", RCL_F32, 4194304));
  ck_assert_int_eq(got.origin, RCL_TUNE_FROM_CACHE);
  ck_assert_str_eq(got.params[0].label, "task");
  /* A record of another device is skipped on import. */
  char *other = strdup(text);
  char *fp = strstr(other, "fp=");
  fp[3] = fp[3] == 'a' ? 'b' : 'a';
  rt_ok(rcl_tune_import(c2, other, &loaded, &skipped));
  ck_assert_uint_eq(loaded, 0);
  ck_assert_uint_ge(skipped, 1);
  free(other);
  free(text);
  /* Unpinned, the defaults are back. */
  rcl_tune_unpin_all(c);
  rt_ok(rcl_tune_get(&got, c, "reduce.dot.exact", RCL_F32, 5000000));
  ck_assert_int_eq(got.origin, RCL_TUNE_FROM_DEFAULTS);
  rcl_context_free(c);
  rcl_context_free(c2);
  rm_rf(gdir);
  rm_rf(gdir2);
  free(gdir);
  free(gdir2);
}
END_TEST

/* A second context skips compilation; a corrupt cached binary is discarded and rebuilt. */
START_TEST(binary_cache) {
  if (!rt_supported(_i, RCL_FAMILY_REDUCE, RCL_F32)) return;
  char *d = tmpdir("bin");
  float x[100], want, got;
  rt_fill(x, RCL_F32, 100, "wide", 4);
  rt_ok(rcl_ref_reduce(&want, RCL_OP_SUM, RCL_F32, RCL_REDUCE_ORDERED, 100, x, NULL));
  rcl_cache_stats st;
  rcl_context *c = make_ctx(_i, d, RCL_TUNING_OFF);
  rt_ok(rcl_sum_f32(&got, c, x, 100, NULL));
  rcl_cache_stats_get(&st, c);
  ck_assert_uint_eq(st.binary_hits, 0);
  ck_assert_uint_eq(st.binary_misses, 1);
  if (st.binary_stored == 0) {
    rt_note("skip binary_cache on %s: the driver returns no program binaries (%s)", rt_device_name(_i),
            rcl_cache_warning(c) ? rcl_cache_warning(c) : "");
    rcl_context_free(c);
    rm_rf(d);
    free(d);
    return;
  }
  rcl_context_free(c);
  c = make_ctx(_i, d, RCL_TUNING_OFF);
  rt_ok(rcl_sum_f32(&got, c, x, 100, NULL));
  rt_assert_bits_eq(&got, &want, 1, RCL_F32, "from the binary cache");
  rcl_cache_stats_get(&st, c);
  ck_assert_uint_eq(st.binary_hits, 1);
  ck_assert_uint_eq(st.binary_misses, 0);
  rcl_context_free(c);
  /* Corrupt every cached binary (one payload byte): rejected, deleted, rebuilt, stored again. */
  char cmd[700];
  snprintf(cmd, sizeof cmd,
           "for f in '%s'/binaries/*.bin; do s=$(stat -c %%s \"$f\"); printf '\\377' | dd of=\"$f\" bs=1 seek=$((s-7)) "
           "conv=notrunc 2>/dev/null; done",
           d);
  ck_assert_int_eq(system(cmd), 0);
  c = make_ctx(_i, d, RCL_TUNING_OFF);
  rt_ok(rcl_sum_f32(&got, c, x, 100, NULL));
  rt_assert_bits_eq(&got, &want, 1, RCL_F32, "after a corrupt binary");
  rcl_cache_stats_get(&st, c);
  ck_assert_uint_eq(st.binary_rejected, 1);
  ck_assert_uint_eq(st.binary_stored, 1);
  rcl_context_free(c);
  /* A truncated one too. */
  snprintf(cmd, sizeof cmd, "for f in '%s'/binaries/*.bin; do truncate -s 100 \"$f\"; done", d);
  ck_assert_int_eq(system(cmd), 0);
  c = make_ctx(_i, d, RCL_TUNING_OFF);
  rt_ok(rcl_sum_f32(&got, c, x, 100, NULL));
  rt_assert_bits_eq(&got, &want, 1, RCL_F32, "after a truncated binary");
  rcl_cache_stats_get(&st, c);
  ck_assert_uint_eq(st.binary_rejected, 1);
  rcl_context_free(c);
  /* clear removes binaries and records. */
  size_t removed;
  rt_ok(rcl_cache_clear(d, NULL, &removed));
  ck_assert_uint_ge(removed, 1);
  rm_rf(d);
  free(d);
}
END_TEST

/* Offline binaries: a bundle written for the device is loaded instead of compiling, with the same bits;
 * the emit-source / offline-compile / pack flow (with the device's own compiler standing in for aoc);
 * a bundle of another device is refused. */
START_TEST(bundles) {
  if (!rt_supported(_i, RCL_FAMILY_REDUCE, RCL_F32)) return;
  char *d = tmpdir("bundle");
  char path[400], src[400];
  snprintf(path, sizeof path, "%s/all.bundle", d);
  snprintf(src, sizeof src, "%s/src", d);
  setenv("REPROCL_NO_BINARY_CACHE", "1", 1);
  rcl_context *c = make_ctx(_i, NULL, RCL_TUNING_OFF);
  size_t nprog;
  int rc = rcl_program_bundle_write(c, path, &nprog);
  if (rc == RCL_ERR_UNSUPPORTED) {
    rt_note("skip bundles on %s: %s", rt_device_name(_i), rcl_error_last());
    rcl_context_free(c);
    unsetenv("REPROCL_NO_BINARY_CACHE");
    rm_rf(d);
    free(d);
    return;
  }
  ck_assert_msg(rc == 0, "%s", rcl_error_last());
  ck_assert_uint_ge(nprog, 1);
  rt_ok(rcl_program_sources_write(c, src, &nprog));
  rcl_context_free(c);
  static const rcl_reduce_variant vs[] = {RCL_REDUCE_VARIANT_NDRANGE, RCL_REDUCE_VARIANT_TASK};
  size_t n = 5000;
  float *x = malloc(n * 4), want, got;
  rt_fill(x, RCL_F32, n, "cancel", 8);
  rt_ok(rcl_ref_reduce(&want, RCL_OP_SUM, RCL_F32, RCL_REDUCE_EXACT, n, x, NULL));
  rcl_cache_stats st;
  for (int v = 0; v < 2; v++) {
    c = make_ctx(_i, NULL, RCL_TUNING_OFF);
    rt_ok(rcl_program_bundle_load(c, path));
    rcl_reduce_options o = RCL_REDUCE_OPTIONS_INIT;
    o.mode = RCL_REDUCE_EXACT;
    o.variant = vs[v];
    rt_ok(rcl_sum_f32(&got, c, x, n, &o));
    rt_assert_bits_eq(&got, &want, 1, RCL_F32, "from a bundle on %s", rt_device_name(_i));
    rcl_cache_stats_get(&st, c);
    ck_assert_uint_eq(st.bundle_hits, 1);
    ck_assert_uint_eq(st.binary_misses, 0);
    rcl_context_free(c);
  }
  /* The offline flow: compile each emitted source with its options (here by the device's own compiler,
   * as aoc or v++ would offline), save the binary as <key>.bin, pack, load. */
  c = make_ctx(_i, NULL, RCL_TUNING_OFF);
  char mpath[500], line[1024];
  snprintf(mpath, sizeof mpath, "%s/manifest.txt", src);
  FILE *m = fopen(mpath, "r");
  ck_assert_ptr_nonnull(m);
  size_t compiled = 0;
  while (fgets(line, sizeof line, m)) {
    if (line[0] == '#') continue;
    char key[80], f[600], *text, *opts;
    size_t len, olen;
    ck_assert_int_eq(sscanf(line, "%79s", key), 1);
    snprintf(f, sizeof f, "%s/%s.cl", src, key);
    rt_ok(rcl__cache_read_file(&text, &len, f));
    snprintf(f, sizeof f, "%s/%s.options", src, key);
    rt_ok(rcl__cache_read_file(&opts, &olen, f));
    opts[strcspn(opts, "\n")] = '\0';
    cl_int err;
    cl_device_id dev = rcl_context_cl_device(c);
    const char *t = text;
    cl_program p = clCreateProgramWithSource(rcl_context_cl_context(c), 1, &t, &len, &err);
    ck_assert_int_eq(clBuildProgram(p, 1, &dev, opts, NULL, NULL), CL_SUCCESS);
    size_t bsz;
    clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof bsz, &bsz, NULL);
    unsigned char *bin = malloc(bsz);
    clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL);
    snprintf(f, sizeof f, "%s/%s.bin", src, key);
    FILE *o = fopen(f, "wb");
    fwrite(bin, 1, bsz, o);
    fclose(o);
    free(bin);
    clReleaseProgram(p);
    free(text);
    free(opts);
    compiled++;
  }
  fclose(m);
  ck_assert_uint_eq(compiled, nprog);
  char packed[400];
  snprintf(packed, sizeof packed, "%s/packed.bundle", d);
  rt_ok(rcl_program_bundle_pack(c, src, packed, &nprog));
  ck_assert_uint_eq(nprog, compiled);
  rcl_context_free(c);
  c = make_ctx(_i, NULL, RCL_TUNING_OFF);
  rt_ok(rcl_program_bundle_load(c, packed));
  rcl_reduce_options o = RCL_REDUCE_OPTIONS_INIT;
  o.mode = RCL_REDUCE_EXACT;
  rt_ok(rcl_sum_f32(&got, c, x, n, &o));
  rt_assert_bits_eq(&got, &want, 1, RCL_F32, "from a packed offline bundle on %s", rt_device_name(_i));
  rcl_cache_stats_get(&st, c);
  ck_assert_uint_eq(st.bundle_hits, 1);
  rcl_context_free(c);
  /* The bundle holds every family's programs: stencils (both radii), SOR and its residual, SpMV (both
   * contracts), CG — all loaded from it, none compiled, with the host reference's bits. */
  c = make_ctx(_i, NULL, RCL_TUNING_OFF);
  rt_ok(rcl_program_bundle_load(c, path));
  {
    size_t w = 37, h = 29;
    float in[37 * 29], out[37 * 29], ref[37 * 29], res, rres;
    rt_fill(in, RCL_F32, w * h, "uniform", 12);
    rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
    rt_ok(rcl_stencil(out, c, &st, RCL_F32, w, h, 2, in, NULL));
    rt_ok(rcl_ref_stencil(ref, &st, RCL_F32, w, h, 2, in));
    rt_assert_bits_eq(out, ref, w * h, RCL_F32, "nine-point stencil from a bundle");
    st.kind = RCL_STENCIL_GENERAL;
    st.radius = 2;
    for (int i = 0; i < 25; i++) st.weights[i] = (i % 5 - 2) * 0.125;
    rt_ok(rcl_stencil(out, c, &st, RCL_F32, w, h, 2, in, NULL));
    rt_ok(rcl_ref_stencil(ref, &st, RCL_F32, w, h, 2, in));
    rt_assert_bits_eq(out, ref, w * h, RCL_F32, "5x5 stencil from a bundle");
    rcl_sor_desc sd = RCL_SOR_DESC_INIT;
    memcpy(out, in, sizeof in);
    memcpy(ref, in, sizeof in);
    rt_ok(rcl_sor(out, &res, c, &sd, RCL_F32, w, h, 3, NULL, NULL));
    rt_ok(rcl_ref_sor(ref, &rres, &sd, RCL_F32, w, h, 3, NULL));
    rt_assert_bits_eq(out, ref, w * h, RCL_F32, "SOR from a bundle");
    rt_assert_bits_eq(&res, &rres, 1, RCL_F32, "SOR residual from a bundle");
    rcl_csr *A;
    rt_ok(rcl_csr_poisson2d(&A, RCL_F32, 12));
    rcl_spmv_matrix *M;
    rt_ok(rcl_spmv_matrix_create(&M, c, A));
    float xs[144], ys[144], yr[144], one = 1.0f, zero = 0.0f;
    rt_fill(xs, RCL_F32, 144, "uniform", 13);
    for (int ex = 0; ex < 2; ex++) {
      rcl_spmv_options so = RCL_SPMV_OPTIONS_INIT;
      so.contract = ex ? RCL_SPMV_EXACT : RCL_SPMV_ORDERED;
      rt_ok(rcl_spmv_host(ys, M, &one, xs, &zero, &so));
      rt_ok(rcl_ref_spmv(yr, A, so.contract, &one, xs, &zero));
      rt_assert_bits_eq(ys, yr, 144, RCL_F32, "SpMV %s from a bundle", rcl_spmv_contract_name(so.contract));
    }
    rcl_cg_options co = RCL_CG_OPTIONS_INIT;
    co.max_iterations = 5;
    co.tol = 0;
    float xc[144] = {0}, xr[144] = {0};
    rcl_cg_result rd, rr;
    memset(&rd, 0, sizeof rd);
    memset(&rr, 0, sizeof rr);
    int s1 = rcl_cg(xc, &rd, M, xs, &co), s2 = rcl_ref_cg(xr, &rr, A, xs, &co);
    ck_assert_int_eq(s1, s2);
    ck_assert_str_eq(rd.history_sha256, rr.history_sha256);
    rcl_cg_result_free(&rd);
    rcl_cg_result_free(&rr);
    rcl_error_clear();
    rcl_spmv_matrix_free(M);
    rcl_csr_free(A);
  }
  rcl_cache_stats_get(&st, c);
  ck_assert_msg(st.binary_misses == 0, "%zu programs were compiled although the bundle was loaded", st.binary_misses);
  ck_assert_uint_ge(st.bundle_hits, 5); /* stencil r1 and r2, spmv ordered and exact, reductions (CG, residual) */
  rcl_context_free(c);
  /* Another device's bundle (its fingerprint edited) is refused; so is a truncated one. */
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "sed '2s/^device ./device 0/; 2s/^device 00/device 11/' '%s' > '%s.other'", path, path);
  ck_assert_int_eq(system(cmd), 0);
  snprintf(cmd, sizeof cmd, "%s.other", path);
  c = make_ctx(_i, NULL, RCL_TUNING_OFF);
  rt_fails(rcl_program_bundle_load(c, cmd), RCL_ERR_MISMATCH, "another device");
  snprintf(cmd, sizeof cmd, "head -c 3000 '%s' > '%s.cut'", path, path);
  ck_assert_int_eq(system(cmd), 0);
  snprintf(cmd, sizeof cmd, "%s.cut", path);
  rt_fails(rcl_program_bundle_load(c, cmd), RCL_ERR_PARSE, "truncated");
  rcl_context_free(c);
  unsetenv("REPROCL_NO_BINARY_CACHE");
  free(x);
  rm_rf(d);
  free(d);
}
END_TEST

int main(void) {
  Suite *s = suite_create("tune");
  rt_add_device_presence(s);
  TCase *tc = tcase_create("devices");
  rt_add_device_loop(tc, search_rules);
  rt_add_device_loop(tc, tuned_parameters_are_bit_identical);
  rt_add_device_loop(tc, modes);
  rt_add_device_loop(tc, in_place_tuned_on_scratch);
  rt_add_device_loop(tc, get_set_export_import);
  rt_add_device_loop(tc, binary_cache);
  rt_add_device_loop(tc, bundles);
  suite_add_tcase(s, tc);
  return rt_run(s);
}
