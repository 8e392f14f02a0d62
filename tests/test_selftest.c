/* First-use self-verification (docs/selftest.md) and the code-generation environment in cache keys:
 * the pass path on every device and family, the conservative retry and the unsupported path through the
 * test hook, the verdict cache (reused without a second self-test; a new one when a codegen variable
 * changes), wrapped contexts without a queue, native mode and REPROCL_SELFTEST=off; and the binary cache
 * rebuilding when a codegen variable changes. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/internal.h"
#include "context/selftest_internal.h"
#include "testlib.h"

static char *tmpdir(const char *tag) {
  char *p = malloc(256);
  snprintf(p, 256, "%s/selftest-%s-XXXXXX", REPROCL_BINARY_DIR, tag);
  ck_assert_ptr_nonnull(mkdtemp(p));
  return p;
}

static void rm_rf(char *path) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
  ck_assert_int_eq(system(cmd), 0);
  free(path);
}

/* A reproducible context on device i with its own cache directory (NULL: the default one). */
static rcl_context *ctx_in(size_t i, const char *dir) { return rt_ctx_new(i, RCL_MODE_REPRODUCIBLE, dir); }

/* rcl_sum_f32 of trap-like data on ctx equals the host reference. */
static void sum_matches(rcl_context *ctx) {
  float x[333], got, want;
  rt_fill(x, RCL_F32, 333, "cancel", 5);
  rt_ok(rcl_sum_f32(&got, ctx, x, 333, NULL));
  rt_ok(rcl_ref_reduce(&want, RCL_OP_SUM, RCL_F32, RCL_REDUCE_ORDERED, 333, x, NULL));
  rt_assert_bits_eq(&got, &want, 1, RCL_F32, "sum after the self-test");
}

/* Every family and dtype the device runs passes its self-test (the conservative build counts as a pass
 * of the self-test; the note says which). */
START_TEST(pass_every_family) {
  rcl_context *ctx = rt_ctx(_i);
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  for (int f = 0; f < RCL_FAMILY_COUNT; f++)
    for (int d = 0; d < 2; d++) {
      rcl_verdict v;
      const char *why = NULL;
      rt_ok(rcl_context_verdict(&v, &why, ctx, (rcl_family)f, dts[d]));
      ck_assert_ptr_nonnull(why);
      const char *skip;
      if (rcl_device_profile_support(rcl_context_profile(ctx), (rcl_family)f, dts[d], &skip) == RCL_SUPPORT_NONE) {
        ck_assert_int_eq(v, RCL_VERDICT_NOT_TESTED);
        continue;
      }
      ck_assert_msg(v == RCL_VERDICT_VERIFIED || v == RCL_VERDICT_CONSERVATIVE, "%s %s on %s: %s: %s",
                    rcl_family_name((rcl_family)f), rcl_dtype_name(dts[d]), rt_device_name(_i), rcl_verdict_name(v),
                    why);
      if (v != RCL_VERDICT_VERIFIED)
        rt_note("%s %s on %s: %s (%s)", rcl_family_name((rcl_family)f), rcl_dtype_name(dts[d]), rt_device_name(_i),
                rcl_verdict_name(v), why);
    }
  sum_matches(ctx);
}
END_TEST

/* The hook breaks the normal build: the conservative build is verified and used; the calls give the
 * reference bits. Breaking both: the family is refused with the inputs that differed. */
START_TEST(conservative_and_unsupported) {
  if (!rt_supported(_i, RCL_FAMILY_REDUCE, RCL_F32)) return;
  setenv("REPROCL_NO_SELFTEST_CACHE", "1", 1); /* verdicts of the hook never reach the shared cache */
  long before = rcl__selftest_runs();
  rcl__selftest_inject(1u);
  rcl_context *ctx = ctx_in(_i, NULL);
  rcl_verdict v;
  const char *why;
  rt_ok(rcl_context_verdict(&v, &why, ctx, RCL_FAMILY_REDUCE, RCL_F32));
  ck_assert_msg(v == RCL_VERDICT_CONSERVATIVE, "verdict %s: %s", rcl_verdict_name(v), why);
  ck_assert_msg(strstr(why, "normal build failed the self-test") && strstr(why, "element 0"), "reason: %s", why);
  ck_assert_int_eq(rcl__selftest_runs() - before, 2); /* normal, then conservative */
  sum_matches(ctx);                                   /* through the conservative build */
  rcl_context_free(ctx);

  rcl__selftest_inject(3u);
  ctx = ctx_in(_i, NULL);
  float x[4] = {1, 2, 3, 4}, out;
  rt_fails(rcl_sum_f32(&out, ctx, x, 4, NULL), RCL_ERR_UNSUPPORTED, "self-test failed: sum ordered n=37");
  rt_fails(rcl_sum_f32(&out, ctx, x, 4, NULL), RCL_ERR_UNSUPPORTED, "conservative build");
  rt_ok(rcl_context_verdict(&v, &why, ctx, RCL_FAMILY_REDUCE, RCL_F32));
  ck_assert_int_eq(v, RCL_VERDICT_UNSUPPORTED);
  ck_assert_str_eq(rcl_verdict_name(v), "unsupported");
  /* another family is not affected by the refusal of this one */
  rcl__selftest_inject(0u);
  if (rt_supported(_i, RCL_FAMILY_SPMV, RCL_F32)) {
    rt_ok(rcl_context_verdict(&v, &why, ctx, RCL_FAMILY_SPMV, RCL_F32));
    ck_assert_msg(v != RCL_VERDICT_UNSUPPORTED, "spmv: %s", why);
  }
  rcl_context_free(ctx);
  unsetenv("REPROCL_NO_SELFTEST_CACHE");
}
END_TEST

/* The verdict is stored on disk and a second context reuses it without a self-test; a changed
 * code-generation variable is a new key, hence a new self-test. */
START_TEST(verdict_cached_and_env_keyed) {
  if (!rt_supported(_i, RCL_FAMILY_REDUCE, RCL_F32)) return;
  char *dir = tmpdir("verdict");
  long r0 = rcl__selftest_runs();
  rcl_context *a = ctx_in(_i, dir);
  rcl_verdict v1, v2;
  const char *why;
  rt_ok(rcl_context_verdict(&v1, &why, a, RCL_FAMILY_REDUCE, RCL_F32));
  long r1 = rcl__selftest_runs();
  ck_assert_int_ge(r1 - r0, 1);
  rt_ok(rcl_context_verdict(&v2, &why, a, RCL_FAMILY_REDUCE, RCL_F32)); /* in memory */
  ck_assert_int_eq(rcl__selftest_runs(), r1);
  rcl_context_free(a);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "grep -l '^reduce f32 ' '%s'/selftest/*.txt >/dev/null", dir);
  ck_assert_msg(system(cmd) == 0, "no verdict file in %s/selftest", dir);

  rcl_context *b = ctx_in(_i, dir);
  rt_ok(rcl_context_verdict(&v2, &why, b, RCL_FAMILY_REDUCE, RCL_F32));
  ck_assert_int_eq(v2, v1);
  ck_assert_int_eq(rcl__selftest_runs(), r1); /* from the disk: no second self-test */
  sum_matches(b);
  ck_assert_int_eq(rcl__selftest_runs(), r1);
  rcl_context_free(b);

  setenv("CL_CONFIG_USE_VECTORIZER", "False", 1);
  rcl_context *c = ctx_in(_i, dir);
  rt_ok(rcl_context_verdict(&v2, &why, c, RCL_FAMILY_REDUCE, RCL_F32));
  ck_assert_int_gt(rcl__selftest_runs(), r1);
  rcl_context_free(c);
  unsetenv("CL_CONFIG_USE_VECTORIZER");
  rm_rf(dir);
}
END_TEST

/* A wrapped context without a queue: the self-test runs on a queue of its own. */
START_TEST(wrapped_without_queue) {
  if (!rt_supported(_i, RCL_FAMILY_SPMV, RCL_F32)) return;
  setenv("REPROCL_NO_SELFTEST_CACHE", "1", 1);
  rcl_context *base = rt_ctx(_i), *w = NULL;
  rt_ok(rcl_context_wrap(&w, rcl_context_cl_context(base), rcl_context_cl_device(base), NULL, NULL));
  long r0 = rcl__selftest_runs();
  rcl_verdict v;
  const char *why;
  rt_ok(rcl_context_verdict(&v, &why, w, RCL_FAMILY_SPMV, RCL_F32));
  ck_assert_int_eq(rcl__selftest_runs() - r0, v == RCL_VERDICT_VERIFIED ? 1 : 2);
  ck_assert_msg(v == RCL_VERDICT_VERIFIED || v == RCL_VERDICT_CONSERVATIVE, "%s: %s", rcl_verdict_name(v), why);
  rcl_context_free(w);
  unsetenv("REPROCL_NO_SELFTEST_CACHE");
}
END_TEST

/* Threads asking for verdicts of one context at once: each family and dtype is tested once, and every
 * thread gets the same verdict. */
typedef struct {
  rcl_context *ctx;
  rcl_family family;
  int rc;
  rcl_verdict v;
} verdict_job;

static void *verdict_thread(void *p) {
  verdict_job *j = p;
  const char *why;
  j->rc = rcl_context_verdict(&j->v, &why, j->ctx, j->family, RCL_F32);
  return NULL;
}

START_TEST(concurrent_first_use) {
  if (!rt_supported(_i, RCL_FAMILY_REDUCE, RCL_F32) || !rt_supported(_i, RCL_FAMILY_SPMV, RCL_F32)) return;
  setenv("REPROCL_NO_SELFTEST_CACHE", "1", 1);
  rcl_context *ctx = ctx_in(_i, NULL);
  long r0 = rcl__selftest_runs();
  verdict_job jobs[6];
  pthread_t th[6];
  for (int t = 0; t < 6; t++) {
    jobs[t] = (verdict_job){ctx, t % 2 ? RCL_FAMILY_SPMV : RCL_FAMILY_REDUCE, -1, RCL_VERDICT_NOT_TESTED};
    ck_assert_int_eq(pthread_create(&th[t], NULL, verdict_thread, &jobs[t]), 0);
  }
  long extra = 0;
  for (int t = 0; t < 6; t++) {
    ck_assert_int_eq(pthread_join(th[t], NULL), 0);
    ck_assert_int_eq(jobs[t].rc, 0);
    ck_assert_int_eq(jobs[t].v, jobs[t % 2].v);
    if (t < 2) extra += jobs[t].v == RCL_VERDICT_CONSERVATIVE; /* a second run at the conservative level */
  }
  ck_assert_int_eq(rcl__selftest_runs() - r0, 2 + extra);
  rcl_context_free(ctx);
  unsetenv("REPROCL_NO_SELFTEST_CACHE");
}
END_TEST

/* Native mode and REPROCL_SELFTEST=off run no self-test. */
START_TEST(native_and_off) {
  long r0 = rcl__selftest_runs();
  rcl_verdict v;
  const char *why;
  rt_ok(rcl_context_verdict(&v, &why, rt_ctx_native(_i), RCL_FAMILY_STENCIL, RCL_F32));
  ck_assert_int_eq(v, RCL_VERDICT_NOT_TESTED);
  ck_assert_str_eq(why, "native mode");
  setenv("REPROCL_SELFTEST", "off", 1);
  rcl_context *c = ctx_in(_i, NULL);
  rt_ok(rcl_context_verdict(&v, &why, c, RCL_FAMILY_MD, RCL_F32));
  ck_assert_int_eq(v, RCL_VERDICT_NOT_TESTED);
  ck_assert_str_eq(why, "REPROCL_SELFTEST=off");
  rcl_context_free(c);
  unsetenv("REPROCL_SELFTEST");
  ck_assert_int_eq(rcl__selftest_runs(), r0);
  rt_fails(rcl_context_verdict(&v, &why, rt_ctx(_i), RCL_FAMILY_COUNT, RCL_F32), RCL_ERR_INVALID_ARG, "family");
}
END_TEST

/* The binary cache: a second context loads every program; a changed code-generation variable (Intel's
 * vectorizer switch, PoCL's vectorizer) rebuilds; back to the old environment, the old binaries load. */
START_TEST(binary_cache_notices_env) {
  if (!rt_supported(_i, RCL_FAMILY_REDUCE, RCL_F32)) return;
  char *dir = tmpdir("bincache");
  static const char *const vars[][2] = {
      {NULL, NULL}, {"CL_CONFIG_USE_VECTORIZER", "False"}, {"POCL_VECTORIZER_REMOVE_BARRIERS", "1"}, {NULL, NULL}};
  for (int step = 0; step < 4; step++) {
    if (vars[step][0]) setenv(vars[step][0], vars[step][1], 1);
    rcl_context *c = ctx_in(_i, dir);
    sum_matches(c);
    rcl_cache_stats st;
    rcl_cache_stats_get(&st, c);
    rcl_context_free(c);
    if (vars[step][0]) unsetenv(vars[step][0]);
    if (step == 0 && st.binary_stored == 0) {
      rt_note("%s: no program binary was stored (the driver gives none): nothing to check", rt_device_name(_i));
      break;
    }
    if (step == 0 || step == 1 || step == 2) /* a new key each time: built from source */
      ck_assert_msg(st.binary_misses > 0 && st.binary_hits == 0, "step %d: %zu misses, %zu hits", step,
                    st.binary_misses, st.binary_hits);
    else /* the first environment again: its binaries load */
      ck_assert_msg(st.binary_hits > 0 && st.binary_misses == 0, "step %d: %zu misses, %zu hits", step,
                    st.binary_misses, st.binary_hits);
  }
  rm_rf(dir);
}
END_TEST

/* The tuning cache: a stored choice is found by a second context, not under a changed code-generation
 * variable (its key's options hash differs), and again once the variable is gone. */
START_TEST(tune_cache_notices_env) {
  if (!rt_supported(_i, RCL_FAMILY_REDUCE, RCL_F32)) return;
  char *dir = tmpdir("tune");
  rcl_context *c = ctx_in(_i, dir);
  rcl_tune_report rep;
  rcl_tune_options o = RCL_TUNE_OPTIONS_INIT;
  o.budget_ms = 50;
  o.samples = 1;
  rt_ok(rcl_tune(&rep, c, "reduce.axpy", RCL_F32, 4096, &o));
  rcl_context_free(c);
  static const rcl_tune_origin want[] = {RCL_TUNE_FROM_CACHE, RCL_TUNE_FROM_DEFAULTS, RCL_TUNE_FROM_CACHE};
  for (int step = 0; step < 3; step++) {
    if (step == 1) setenv("POCL_WORK_GROUP_METHOD", "loopvec", 1);
    c = ctx_in(_i, dir);
    rcl_tune_choice ch;
    rt_ok(rcl_tune_get(&ch, c, "reduce.axpy", RCL_F32, 4096));
    ck_assert_msg(ch.origin == want[step], "step %d: origin %s", step, rcl_tune_origin_name(ch.origin));
    rcl_context_free(c);
    unsetenv("POCL_WORK_GROUP_METHOD");
  }
  rm_rf(dir);
}
END_TEST

/* The digest of the code-generation environment: empty without variables; changed by a value of every
 * covered prefix; indifferent to variables that only pick devices and to the order of the environment. */
START_TEST(codegen_env_digest) {
  static const char *const covered[] = {"CL_CONFIG_CPU_VECTORIZER_MODE",
                                        "POCL_VECTORIZER_REMOVE_BARRIERS",
                                        "POCL_WORK_GROUP_METHOD",
                                        "LP_NATIVE_VECTOR_WIDTH",
                                        "GALLIVM_PERF",
                                        "RUSTICL_FEATURES",
                                        "AMD_OCL_BUILD_OPTIONS_APPEND",
                                        "CUDA_FORCE_PTX_JIT"};
  char base[65], h1[65], h2[65], rusticl[128];
  const char *re = getenv("RUSTICL_ENABLE");
  snprintf(rusticl, sizeof rusticl, "%s", re ? re : "");
  rcl__codegen_env(base);
  setenv("RUSTICL_ENABLE", "llvmpipe,other", 1);
  setenv("POCL_DEBUG", "all", 1);
  setenv("POCL_KERNEL_CACHE", "0", 1);
  rcl__codegen_env(h1);
  ck_assert_str_eq(h1, base); /* device selection, logging and caches are not code generation */
  unsetenv("POCL_DEBUG");
  unsetenv("POCL_KERNEL_CACHE");
  for (size_t i = 0; i < sizeof covered / sizeof covered[0]; i++) {
    ck_assert_ptr_null(getenv(covered[i]));
    setenv(covered[i], "1", 1);
    rcl__codegen_env(h1);
    ck_assert_str_ne(h1, base);
    ck_assert_uint_eq(strlen(h1), 64);
    setenv(covered[i], "2", 1);
    rcl__codegen_env(h2);
    ck_assert_str_ne(h2, h1);
    unsetenv(covered[i]);
    rcl__codegen_env(h2);
    ck_assert_str_eq(h2, base);
  }
  /* two variables set in either order give one digest */
  setenv("LP_PERF", "x", 1);
  setenv("CL_CONFIG_A", "y", 1);
  rcl__codegen_env(h1);
  unsetenv("LP_PERF");
  unsetenv("CL_CONFIG_A");
  setenv("CL_CONFIG_A", "y", 1);
  setenv("LP_PERF", "x", 1);
  rcl__codegen_env(h2);
  ck_assert_str_eq(h1, h2);
  unsetenv("LP_PERF");
  unsetenv("CL_CONFIG_A");
  if (re)
    setenv("RUSTICL_ENABLE", rusticl, 1);
  else
    unsetenv("RUSTICL_ENABLE");
}
END_TEST

int main(void) {
  Suite *s = suite_create("selftest");
  TCase *tc = tcase_create("codegen_env_digest");
  tcase_add_test(tc, codegen_env_digest);
  suite_add_tcase(s, tc);
  rt_add_device_presence(s);
  RT_ADD_DEVICE_CASE(s, pass_every_family);
  RT_ADD_DEVICE_CASE(s, conservative_and_unsupported);
  RT_ADD_DEVICE_CASE(s, verdict_cached_and_env_keyed);
  RT_ADD_DEVICE_CASE(s, wrapped_without_queue);
  RT_ADD_DEVICE_CASE(s, concurrent_first_use);
  RT_ADD_DEVICE_CASE(s, native_and_off);
  RT_ADD_DEVICE_CASE(s, binary_cache_notices_env);
  RT_ADD_DEVICE_CASE(s, tune_cache_notices_env);
  return rt_run(s);
}
