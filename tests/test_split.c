/* The multi-device split itself (src/split/split.c, split_weights.c): partitions, device lists and
 * sub-devices, weights (given, measured and cached, equal with tuning off), devices left out or refused,
 * and errors of a device's share named with the device. The families over a split are tested in
 * test_split_<family>.c. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "split/split_internal.h"
#include "testlib.h"

static void check_bounds(const size_t *b, const double *w, size_t count, size_t n, size_t granule) {
  ck_assert_uint_eq(b[0], 0);
  ck_assert_uint_eq(b[count], n);
  double total = 0;
  for (size_t i = 0; i < count; i++) total += w[i];
  for (size_t i = 0; i < count; i++) {
    ck_assert_msg(b[i] <= b[i + 1], "bounds decrease at %zu", i);
    if (i > 0 && b[i] < n)
      ck_assert_msg(b[i] % granule == 0, "bound %zu = %zu is not a multiple of %zu", i, b[i], granule);
    if (w[i] == 0) ck_assert_msg(b[i] == b[i + 1], "device %zu of weight 0 got [%zu, %zu)", i, b[i], b[i + 1]);
    /* Proportional up to rounding to granules: within one granule per bound. */
    double want = (double)n * w[i] / total, got = (double)(b[i + 1] - b[i]);
    ck_assert_msg(got <= want + 2.0 * (double)granule + 1 && got >= want - 2.0 * (double)granule - 1,
                  "device %zu: %g elements for %g", i, got, want);
  }
}

START_TEST(partition_properties) {
  rt_rng r = {7};
  size_t b[9];
  for (int t = 0; t < 2000; t++) {
    size_t count = 1 + rt_next(&r) % 8, granule = 1 + rt_next(&r) % 3000, n = rt_next(&r) % 100000;
    if (t % 5 == 0) n = rt_next(&r) % 4;
    double w[8];
    int positive = 0;
    for (size_t i = 0; i < count; i++) {
      w[i] = rt_next(&r) % 4 == 0 ? 0 : rt_uniform(&r) * 10;
      positive |= w[i] > 0;
    }
    if (!positive) w[0] = 1;
    rt_ok(rcl_split_partition(b, w, count, n, granule));
    check_bounds(b, w, count, n, granule);
  }
  double w3[3] = {1, 0, 3};
  rt_ok(rcl_split_partition(b, w3, 3, 8000, 1000));
  ck_assert_uint_eq(b[1], 2000);
  ck_assert_uint_eq(b[2], 2000);
  double bad[2] = {1, -1}, zero[2] = {0, 0}, inf[2] = {1, 1.0 / 0.0};
  rt_fails(rcl_split_partition(b, bad, 2, 10, 1), RCL_ERR_INVALID_ARG, "weight 1 is -1");
  rt_fails(rcl_split_partition(b, zero, 2, 10, 1), RCL_ERR_INVALID_ARG, "every weight is 0");
  rt_fails(rcl_split_partition(b, inf, 2, 10, 1), RCL_ERR_INVALID_ARG, "weight 1 is inf");
  rt_fails(rcl_split_partition(b, w3, 3, 10, 0), RCL_ERR_INVALID_ARG, "granule 0");
}
END_TEST

static rcl_split *make(const char *devices, int strict) {
  rcl_split_options o = RCL_SPLIT_OPTIONS_INIT;
  o.devices = devices;
  o.strict = strict;
  rcl_split *s = NULL;
  rt_ok(rcl_split_create(&s, &o));
  return s;
}

START_TEST(device_lists) {
  rcl_split *s = make("all", 0);
  ck_assert_uint_eq(rcl_split_count(s), rt_ndevices());
  for (size_t i = 0; i < rt_ndevices(); i++)
    ck_assert_str_eq(rcl_context_profile(rcl_split_context(s, i))->device_name, rt_device_name(i));
  ck_assert_ptr_null(rcl_split_context(s, rt_ndevices()));
  rcl_split_free(s);
  rcl_split_options o = RCL_SPLIT_OPTIONS_INIT;
  o.devices = "0,0";
  rt_fails(rcl_split_create(&s, &o), RCL_ERR_INVALID_ARG, "devices 0 and 1 are the same device");
  ck_assert_ptr_null(s);
  o.devices = "0,,1";
  rt_fails(rcl_split_create(&s, &o), RCL_ERR_INVALID_ARG, "empty device in \"0,,1\"");
  o.devices = "0/x";
  rt_fails(rcl_split_create(&s, &o), RCL_ERR_INVALID_ARG, "after '/' a number of sub-devices is expected");
  o.devices = "0/0";
  rt_fails(rcl_split_create(&s, &o), RCL_ERR_INVALID_ARG, "sub-devices");
  o.devices = "no-such-device-xyz";
  rt_fails(rcl_split_create(&s, &o), RCL_ERR_NOT_FOUND, "no-such-device-xyz");
  o.devices = "";
  rt_fails(rcl_split_create(&s, &o), RCL_ERR_INVALID_ARG, "no devices named");
  o.devices = "0";
  o.version = 99;
  rt_fails(rcl_split_create(&s, &o), RCL_ERR_INVALID_ARG, "options version 99");
  rt_fails(rcl_split_wrap(&s, NULL, 0, NULL), RCL_ERR_INVALID_ARG, "no contexts");
}
END_TEST

/* Sub-devices: two equal halves of a device are two devices of the split (PoCL supports them; a driver
 * that does not is refused with its name). */
START_TEST(subdevices) {
  for (size_t i = 0; i < rt_ndevices(); i++) {
    const rcl_device_profile *p = rcl_context_profile(rt_ctx(i));
    char spec[32];
    snprintf(spec, sizeof spec, "%zu/2", i);
    rcl_split_options o = RCL_SPLIT_OPTIONS_INIT;
    o.devices = spec;
    rcl_split *s = NULL;
    int rc = rcl_split_create(&s, &o);
    if (p->compute_units < 2) {
      ck_assert_int_eq(rc, RCL_ERR_INVALID_ARG);
      rt_note("%s: %u compute unit(s), no sub-devices to test", p->device_name, p->compute_units);
      continue;
    }
    if (rc == RCL_ERR_UNSUPPORTED) {
      ck_assert_msg(strstr(rcl_error_last(), "cannot be partitioned"), "message: %s", rcl_error_last());
      rt_note("%s does not partition: %s", p->device_name, rcl_error_last());
      continue;
    }
    rt_ok(rc);
    ck_assert_uint_eq(rcl_split_count(s), 2);
    ck_assert_ptr_ne(rcl_context_cl_device(rcl_split_context(s, 0)), rcl_context_cl_device(rcl_split_context(s, 1)));
    ck_assert_uint_eq(rcl_context_profile(rcl_split_context(s, 0))->compute_units, p->compute_units / 2);
    float x[3000], out = 0, want = 0;
    rt_fill(x, RCL_F32, 3000, "cancel", 3);
    rt_ok(rcl_reduce(&out, rcl_split_context(s, 1), RCL_OP_SUM, RCL_F32, 3000, x, NULL, NULL));
    rt_ok(rcl_ref_reduce(&want, RCL_OP_SUM, RCL_F32, RCL_REDUCE_ORDERED, 3000, x, NULL));
    rt_assert_bits_eq(&out, &want, 1, RCL_F32, "sum on a sub-device of %s", p->device_name);
    rcl_split_free(s);
  }
}
END_TEST

START_TEST(given_weights) {
  rcl_context *c[2] = {rt_ctx(0), rt_ctx(rt_ndevices() > 1 ? 1 : 0)};
  size_t n = rt_ndevices() > 1 ? 2 : 1;
  double w[2] = {1, 3}, got[2];
  rcl_split_options o = RCL_SPLIT_OPTIONS_INIT;
  o.weights = w;
  o.nweights = n;
  rcl_split *s = NULL;
  rt_ok(rcl_split_wrap(&s, c, n, &o));
  rt_ok(rcl_split_weights(got, s, RCL_FAMILY_REDUCE, RCL_F32));
  for (size_t i = 0; i < n; i++) ck_assert(got[i] == w[i]);
  double three[3] = {1, 1, 1}, neg[2] = {1, -2};
  rt_fails(rcl_split_set_weights(s, three, 3), RCL_ERR_INVALID_ARG, "3 weights given for");
  if (n == 2) {
    rt_fails(rcl_split_set_weights(s, neg, 2), RCL_ERR_INVALID_ARG, "weight 1 is -2");
    double zero[2] = {0, 0};
    rt_fails(rcl_split_set_weights(s, zero, 2), RCL_ERR_INVALID_ARG, "every weight is 0");
  }
  rcl_split_free(s);
  o.weights = NULL;
  rt_fails(rcl_split_wrap(&s, c, n, &o), RCL_ERR_INVALID_ARG, "weights is NULL");
  o.nweights = 0;
  o.devices = "0";
  rt_fails(rcl_split_wrap(&s, c, n, &o), RCL_ERR_INVALID_ARG, "wrap takes contexts");
  if (n == 2 && rcl_context_cl_device(c[0]) != rcl_context_cl_device(c[1])) {
    rcl_context *same[2] = {c[0], c[0]};
    rt_fails(rcl_split_wrap(&s, same, 2, NULL), RCL_ERR_INVALID_ARG, "are the same device");
  }
}
END_TEST

/* Measured weights: the probe runs once per device, family and dtype, its time is cached on disk and read
 * back by the next split; tuning off gives equal weights without measuring. */
START_TEST(measured_weights_cached) {
  char dir[] = "/tmp/rcl-split-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  rcl_context *c = rt_ctx_new(0, RCL_MODE_REPRODUCIBLE, dir);
  rcl_split *s = NULL;
  rt_ok(rcl_split_wrap(&s, &c, 1, NULL));
  double w[1] = {0}, w2[1] = {0};
  rt_ok(rcl_split_weights(w, s, RCL_FAMILY_REDUCE, RCL_F32));
  ck_assert_msg(w[0] > 0, "measured weight %g", w[0]);
  char path[512];
  snprintf(path, sizeof path, "%s/split/%.16s-reduce-f32-reproducible", dir, rcl_context_profile(c)->fingerprint);
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "no cache file %s", path);
  double sec = 0;
  ck_assert_int_eq(fscanf(f, "seconds %lf", &sec), 1);
  fclose(f);
  ck_assert_msg(w[0] > 0.999999 / sec && w[0] < 1.000001 / sec, "weight %g, cached seconds %g", w[0], sec);
  /* A changed cache entry is what the next split reads: the probe is not run again. */
  f = fopen(path, "w");
  fprintf(f, "seconds 0.25\n");
  fclose(f);
  rt_ok(rcl_split_weights(w2, s, RCL_FAMILY_REDUCE, RCL_F32));
  ck_assert(w2[0] == 4);
  rcl_split_free(s);
  rcl_context_free(c);
  setenv("REPROCL_TUNING", "off", 1);
  c = rt_ctx_new(0, RCL_MODE_REPRODUCIBLE, dir);
  rt_ok(rcl_split_wrap(&s, &c, 1, NULL));
  rt_ok(rcl_split_weights(w2, s, RCL_FAMILY_STENCIL, RCL_F32));
  ck_assert(w2[0] == 1);
  snprintf(path, sizeof path, "%s/split/%.16s-stencil-f32-reproducible", dir, rcl_context_profile(c)->fingerprint);
  ck_assert_msg(access(path, F_OK) != 0, "tuning off measured anyway: %s exists", path);
  unsetenv("REPROCL_TUNING");
  rcl_split_free(s);
  rcl_context_free(c);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* A device that cannot run a dtype is left out (weight 0, a note) or, strict, refused by name. */
START_TEST(unsupported_left_out_or_refused) {
  for (size_t i = 0; i < rt_ndevices(); i++) {
    if (rt_supported(i, RCL_FAMILY_REDUCE, RCL_F64)) continue;
    rcl_context *c[2] = {rt_ctx(i), NULL};
    size_t other = rt_ndevices();
    for (size_t j = 0; j < rt_ndevices(); j++)
      if (j != i && rcl_device_profile_support(rcl_context_profile(rt_ctx(j)), RCL_FAMILY_REDUCE, RCL_F64, NULL) !=
                        RCL_SUPPORT_NONE)
        other = j;
    if (other == rt_ndevices()) continue;
    c[1] = rt_ctx(other);
    rcl_split *s = NULL;
    rt_ok(rcl_split_wrap(&s, c, 2, NULL));
    double w[2];
    const char *note = NULL;
    rt_ok(rcl_split_weights(w, s, RCL_FAMILY_REDUCE, RCL_F64));
    ck_assert(w[0] == 0 && w[1] > 0);
    size_t bounds[3];
    rt_ok(rcl__split_plan(bounds, s, RCL_FAMILY_REDUCE, RCL_F64, 100, 1, NULL));
    size_t first = 9, count = 9;
    rt_ok(rcl_split_share(&first, &count, &note, s, 0));
    ck_assert_uint_eq(count, 0);
    ck_assert_ptr_nonnull(note);
    rcl_split_free(s);
    rcl_split_options o = RCL_SPLIT_OPTIONS_INIT;
    o.strict = 1;
    rt_ok(rcl_split_wrap(&s, c, 2, &o));
    rt_fails(rcl_split_weights(w, s, RCL_FAMILY_REDUCE, RCL_F64), RCL_ERR_UNSUPPORTED, "device 0 (");
    rcl_split_free(s);
    return;
  }
  rt_note("every device runs f64 (or none does): nothing to leave out");
}
END_TEST

static int fail_on_second(void *arg, size_t i) {
  int *ran = arg;
  ran[i] = 1;
  return i == 1 ? rcl__fail(RCL_ERR_IO, "share %zu could not run", i) : 0;
}

/* Every device with work runs; the first failure is reported with the device's index and name. */
START_TEST(each_names_the_failing_device) {
  if (rt_ndevices() < 2) {
    rt_note("one device: nothing to name");
    return;
  }
  rcl_context *c[2] = {rt_ctx(0), rt_ctx(1)};
  rcl_split *s = NULL;
  rt_ok(rcl_split_wrap(&s, c, 2, NULL));
  int ran[2] = {0, 0};
  size_t bounds[3] = {0, 5, 9};
  char want[300];
  snprintf(want, sizeof want, "device 1 (%s): share 1 could not run", rt_device_name(1));
  rt_fails(rcl__split_each(s, bounds, fail_on_second, ran), RCL_ERR_IO, want);
  ck_assert(ran[0] && ran[1]);
  size_t empty[3] = {0, 9, 9};
  ran[0] = ran[1] = 0;
  rt_ok(rcl__split_each(s, empty, fail_on_second, ran));
  ck_assert(ran[0] && !ran[1]);
  rcl_split_free(s);
}
END_TEST

/* The path of the one tuned-weights file of dir for name's suffix ("-reduce-f32-b16"), or "" when none. */
static void tuned_file(char *path, size_t cap, const char *dir, const char *suffix) {
  char sub[400];
  snprintf(sub, sizeof sub, "%s/split", dir);
  path[0] = 0;
  DIR *d = opendir(sub);
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
    size_t l = strlen(e->d_name), sl = strlen(suffix);
    if (!strncmp(e->d_name, "tuned-", 6) && l > sl && !strcmp(e->d_name + l - sl, suffix))
      snprintf(path, cap, "%s/%s", sub, e->d_name);
  }
  if (d) closedir(d);
}

/* A split over the first and the last device, with their own contexts on cache dir. */
static rcl_split *tune_split(rcl_context *c[2], const char *dir) {
  c[0] = rt_ctx_new(0, RCL_MODE_REPRODUCIBLE, dir);
  c[1] = rt_ctx_new(rt_ndevices() - 1, RCL_MODE_REPRODUCIBLE, dir);
  rcl_split *s = NULL;
  rt_ok(rcl_split_wrap(&s, c, 2, NULL));
  return s;
}

static void tune_split_free(rcl_split *s, rcl_context *c[2]) {
  rcl_split_free(s);
  rcl_context_free(c[0]);
  rcl_context_free(c[1]);
}

/* A sum over the split of n trap values: the reference's bits, whatever the weights; *count0:
 * device 0's share. */
static void split_sum_checked(rcl_split *s, size_t n, size_t *count0) {
  float *x = malloc(n * sizeof *x), got = 0, want = 0;
  rcl_generate(x, RCL_F32, n, RCL_GEN_CANCEL, 5);
  rt_ok(rcl_split_reduce(&got, s, RCL_OP_SUM, RCL_F32, n, x, NULL, NULL));
  rt_ok(rcl_ref_reduce(&want, RCL_OP_SUM, RCL_F32, RCL_REDUCE_ORDERED, n, x, NULL));
  rt_assert_bits_eq(&got, &want, 1, RCL_F32, "split sum of %zu", n);
  rt_ok(rcl_split_share(NULL, count0, NULL, s, 0));
  free(x);
}

/* Tuned weights: rcl_split_tune times the candidates and caches the fastest per set of devices, family,
 * dtype and size bucket; the cache is what the next tune and every call of that bucket read (a changed
 * entry moves the cut; the bits stay the reference's); a call of an untuned bucket uses the measured
 * weights and writes nothing; with tuning off rcl_split_tune times and writes nothing. */
START_TEST(tuned_weights_cached) {
  if (rt_ndevices() < 2) {
    rt_note("one device: a split of one has nothing to tune");
    return;
  }
  char dir[] = "/tmp/rcl-split-tune-XXXXXX", path[600];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  rcl_context *c[2];
  rcl_split *s = tune_split(c, dir);
  double w[2] = {0, 0}, w2[2] = {0, 0};
  rt_ok(rcl_split_tune(w, s, RCL_FAMILY_REDUCE, RCL_F32, (size_t)1 << 16));
  ck_assert_msg(w[0] >= 0 && w[1] >= 0 && fabs(w[0] + w[1] - 1) < 1e-9, "tuned weights %g %g", w[0], w[1]);
  tuned_file(path, sizeof path, dir, "-reduce-f32-b16");
  ck_assert_msg(path[0], "no tuned-*-reduce-f32-b16 in %s/split", dir);
  FILE *f = fopen(path, "r");
  ck_assert_int_eq(fscanf(f, "weights %lf %lf", &w2[0], &w2[1]), 2);
  fclose(f);
  ck_assert_msg(fabs(w2[0] - w[0]) < 1e-8 && fabs(w2[1] - w[1]) < 1e-8, "cached %g %g, tuned %g %g", w2[0], w2[1], w[0],
                w[1]);
  f = fopen(path, "w"); /* a changed entry is what the next tune and the calls of bucket 16 read */
  fprintf(f, "weights 0 1\nseconds 0.001\n");
  fclose(f);
  rt_ok(rcl_split_tune(w2, s, RCL_FAMILY_REDUCE, RCL_F32, 100000));
  ck_assert(w2[0] == 0 && w2[1] == 1);
  size_t count0 = 99;
  split_sum_checked(s, 100000, &count0);
  ck_assert_uint_eq(count0, 0);
  f = fopen(path, "w");
  fprintf(f, "weights 1 0\n");
  fclose(f);
  split_sum_checked(s, 90001, &count0);
  ck_assert_uint_eq(count0, 90001);
  split_sum_checked(s, (size_t)1 << 17, &count0); /* bucket 17: measured weights; a call never tunes */
  tuned_file(path, sizeof path, dir, "-reduce-f32-b17");
  ck_assert_msg(!path[0], "a call tuned bucket 17: %s", path);
  tune_split_free(s, c);
  rt_fails(rcl_split_tune(w, NULL, RCL_FAMILY_REDUCE, RCL_F32, 10), RCL_ERR_INVALID_ARG, "NULL argument");
  setenv("REPROCL_TUNING", "off", 1);
  s = tune_split(c, dir);
  rt_ok(rcl_split_tune(w, s, RCL_FAMILY_REDUCE, RCL_F32, (size_t)1 << 18)); /* the equal weights, untimed */
  ck_assert_msg(w[0] == 0.5 && w[1] == 0.5, "tuning off: %g %g", w[0], w[1]);
  split_sum_checked(s, (size_t)1 << 18, &count0);
  ck_assert_msg(count0 > 100000 && count0 < 160000, "tuning off: device 0 got %zu of 2^18", count0);
  tuned_file(path, sizeof path, dir, "-reduce-f32-b18");
  ck_assert_msg(!path[0], "tuning off tuned anyway: %s", path);
  unsetenv("REPROCL_TUNING");
  tune_split_free(s, c);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Writes text as the tuned-weights entry whose name ends in suffix (which must exist). */
static void entry_write(const char *dir, const char *suffix, const char *text) {
  char path[600];
  tuned_file(path, sizeof path, dir, suffix);
  ck_assert_msg(path[0], "no tuned-*%s in %s/split", suffix, dir);
  FILE *f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
}

static int count_lines(const char *path, const char *prefix) {
  FILE *f = fopen(path, "r");
  char line[1024];
  int n = 0;
  while (f && fgets(line, sizeof line, f)) n += !strncmp(line, prefix, strlen(prefix));
  if (f) fclose(f);
  return n;
}

/* The tuner's rule: a split only where it beat the fastest device alone by more than the margin; else that
 * device alone. The entry holds every candidate's time (each device alone among them). */
static void check_rule(const double *w, const rcl_split_tune_info *t, const char *dir, const char *suffix) {
  char path[600];
  ck_assert_msg(!t->cached && t->alone_s > 0 && t->margin >= 0.05 && t->alone < 2, "info %g %g %zu", t->alone_s,
                t->margin, t->alone);
  if (t->split_kept)
    ck_assert_msg(w[0] > 0 && w[1] > 0 && t->split_s < t->alone_s * (1 - t->margin), "kept %g:%g, %g s vs %g s", w[0],
                  w[1], t->split_s, t->alone_s);
  else
    ck_assert_msg(w[t->alone] == 1 && w[1 - t->alone] == 0, "alone %zu but weights %g:%g", t->alone, w[0], w[1]);
  tuned_file(path, sizeof path, dir, suffix);
  ck_assert_msg(path[0], "no tuned-*%s", suffix);
  ck_assert_int_ge(count_lines(path, "candidate"), 3); /* two devices alone and at least one split */
}

/* The bits and the cut of a split matrix cut by the cached entries: all rows on device `on`, its one-device
 * calls' bits. */
static void check_matrix_on(rcl_split *s, rcl_context *c[2], const rcl_csr *A, size_t on) {
  rcl_split_matrix *M = NULL;
  rcl_spmv_matrix *D = NULL;
  size_t n = A->nrows, count = 0;
  float *b = malloc(n * sizeof *b), *x1 = calloc(n, sizeof *x1), *x2 = calloc(n, sizeof *x2);
  rcl_generate(b, RCL_F32, n, RCL_GEN_UNIFORM, 3);
  rt_ok(rcl_split_matrix_create(&M, s, A));
  rt_ok(rcl_split_share(NULL, &count, NULL, s, on));
  ck_assert_uint_eq(count, n);
  rt_ok(rcl_spmv_matrix_create(&D, c[on], A));
  rcl_cg_options co = RCL_CG_OPTIONS_INIT;
  co.jacobi = 1, co.max_iterations = 7, co.tol = 0; /* 7 iterations, preconditioned */
  rcl_cg_result r1, r2;
  ck_assert_int_eq(rcl_split_cg(x1, &r1, M, b, &co), RCL_ERR_NO_CONVERGENCE);
  ck_assert_int_eq(rcl_cg(x2, &r2, D, b, &co), RCL_ERR_NO_CONVERGENCE);
  rt_assert_bits_eq(x1, x2, n, RCL_F32, "split CG on device %zu alone", on);
  ck_assert_str_eq(r1.history_sha256, r2.history_sha256);
  float one = 1, zero = 0;
  rt_ok(rcl_split_spmv(x1, M, &one, b, &zero, NULL));
  rt_ok(rcl_spmv_host(x2, D, &one, b, &zero, NULL));
  rt_assert_bits_eq(x1, x2, n, RCL_F32, "split SpMV on device %zu alone", on);
  rcl_cg_result_free(&r1);
  rcl_cg_result_free(&r2);
  rcl_split_matrix_free(M);
  rcl_spmv_matrix_free(D);
  free(b);
  free(x1);
  free(x2);
}

/* Per operation: tuning SpMV times its own candidates (never CG's entry), each entry follows the rule, and
 * the cached choices are honoured: a split matrix is cut by CG's entry, else SpMV's; rcl_split_tune of the
 * SpMV family is CG's. */
START_TEST(tune_per_operation) {
  char dir[] = "/tmp/rcl-split-tuneop-XXXXXX", path[600];
  rcl_context *c[2];
  rcl_split *s = rt_ndevices() < 2 ? NULL : tune_split(c, mkdtemp(dir));
  if (!s) {
    rt_note("one device: a split of one has nothing to tune");
    return;
  }
  double w[2];
  rcl_split_tune_info t;
  rt_ok(rcl_split_tune_op(w, &t, s, RCL_SPLIT_OP_CG, RCL_F32, 4096));
  check_rule(w, &t, dir, "-cg-f32-b12");
  tuned_file(path, sizeof path, dir, "-spmv-f32-b12");
  ck_assert_msg(!path[0], "tuning CG wrote %s", path);
  rt_ok(rcl_split_tune_op(w, &t, s, RCL_SPLIT_OP_SPMV, RCL_F32, 4096)); /* timed: CG's entry is not SpMV's */
  check_rule(w, &t, dir, "-spmv-f32-b12");
  entry_write(dir, "-cg-f32-b12", "weights 0 1\n");
  entry_write(dir, "-spmv-f32-b12", "weights 1 0\nseconds 0.5\nalone 0 0.5\nsplit 0.75\nmargin 0.1\n");
  rt_ok(rcl_split_tune_op(w, &t, s, RCL_SPLIT_OP_SPMV, RCL_F32, 5000));
  ck_assert(w[0] == 1 && w[1] == 0 && t.cached && !t.split_kept && t.alone == 0);
  ck_assert(t.alone_s == 0.5 && t.split_s == 0.75 && t.margin == 0.1);
  rt_ok(rcl_split_tune_op(w, &t, s, RCL_SPLIT_OP_CG, RCL_F32, 5000));
  ck_assert(w[0] == 0 && w[1] == 1 && t.cached && t.alone == 1);
  rt_ok(rcl_split_tune(w, s, RCL_FAMILY_SPMV, RCL_F32, 5000));
  ck_assert(w[0] == 0 && w[1] == 1);
  rt_fails(rcl_split_tune_op(w, NULL, s, RCL_SPLIT_OP_COUNT, RCL_F32, 10), RCL_ERR_INVALID_ARG, "not an rcl_split_op");
  rcl_csr *A = NULL;
  rt_ok(rcl_csr_poisson3d(&A, RCL_F32, 16)); /* 4096 rows: bucket 12 */
  check_matrix_on(s, c, A, 1);
  tuned_file(path, sizeof path, dir, "-cg-f32-b12");
  ck_assert_int_eq(remove(path), 0);
  check_matrix_on(s, c, A, 0);
  rcl_csr_free(A);
  tune_split_free(s, c);
  char cmd[600];
  ck_assert_int_eq(system((snprintf(cmd, sizeof cmd, "rm -rf %s", dir), cmd)), 0);
}
END_TEST

/* Weights that give one device everything run its one-device call: the same bits as rcl_reduce,
 * rcl_stencil and rcl_sor there, in every op and mode, and the share says so. */
START_TEST(one_device_shortcut) {
  if (rt_ndevices() < 2) {
    rt_note("one device: nothing to leave out");
    return;
  }
  const double w[2] = {0, 1}; /* device 1 alone: given in the options */
  rcl_split_options so = RCL_SPLIT_OPTIONS_INIT;
  so.weights = w, so.nweights = 2;
  rcl_context *c[2] = {rt_ctx(0), rt_ctx(1)};
  rcl_split *s = NULL;
  rt_ok(rcl_split_wrap(&s, c, 2, &so));
  const size_t n = 300007, side = 37;
  float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), got, want;
  rcl_generate(x, RCL_F32, n, RCL_GEN_CANCEL, 11);
  rcl_generate(y, RCL_F32, n, RCL_GEN_UNIFORM, 12);
  rcl_reduce_options o = RCL_REDUCE_OPTIONS_INIT;
  for (int mode = 0; mode < 2; mode++)
    for (rcl_reduce_op op = RCL_OP_SUM; op <= RCL_OP_NRM2; op++) {
      o.mode = mode ? RCL_REDUCE_EXACT : RCL_REDUCE_ORDERED;
      rt_ok(rcl_split_reduce(&got, s, op, RCL_F32, n, x, y, &o));
      rt_ok(rcl_reduce(&want, c[1], op, RCL_F32, n, x, y, &o));
      rt_assert_bits_eq(&got, &want, 1, RCL_F32, "op %d mode %d on device 1 alone", (int)op, mode);
    }
  size_t first = 9, count = 9;
  rt_ok(rcl_split_share(&first, &count, NULL, s, 0));
  ck_assert(count == 0);
  rt_ok(rcl_split_share(&first, &count, NULL, s, 1));
  ck_assert(first == 0 && count == n);
  rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
  rt_ok(rcl_split_stencil(y, s, &st, RCL_F32, side, side, 3, x));
  rt_ok(rcl_stencil(x + side * side, c[1], &st, RCL_F32, side, side, 3, x, NULL));
  rt_assert_bits_eq(y, x + side * side, side * side, RCL_F32, "stencil on device 1 alone");
  rcl_sor_desc d = RCL_SOR_DESC_INIT;
  float r1 = 0, r2 = 0;
  memcpy(y, x, side * side * sizeof *x);
  rt_ok(rcl_split_sor(y, &r1, s, &d, RCL_F32, side, side, 4, NULL));
  rt_ok(rcl_sor(x, &r2, c[1], &d, RCL_F32, side, side, 4, NULL, NULL));
  rt_assert_bits_eq(y, x, side * side, RCL_F32, "SOR on device 1 alone");
  rt_assert_bits_eq(&r1, &r2, 1, RCL_F32, "SOR residual on device 1 alone");
  rcl_split_free(s);
  free(x);
  free(y);
}
END_TEST

int main(void) {
  Suite *s = suite_create("split");
  TCase *host = tcase_create("host");
  tcase_add_test(host, partition_properties);
  suite_add_tcase(s, host);
  TCase *tc = tcase_create("devices");
  tcase_add_test(tc, device_lists);
  tcase_add_test(tc, subdevices);
  tcase_add_test(tc, given_weights);
  tcase_add_test(tc, measured_weights_cached);
  tcase_add_test(tc, tuned_weights_cached);
  tcase_add_test(tc, tune_per_operation);
  tcase_add_test(tc, one_device_shortcut);
  tcase_add_test(tc, unsupported_left_out_or_refused);
  tcase_add_test(tc, each_names_the_failing_device);
  suite_add_tcase(s, tc);
  rt_add_device_presence(s);
  return rt_run(s);
}
