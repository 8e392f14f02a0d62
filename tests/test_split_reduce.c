/* Reductions, axpy and scal over a split (split.h): every pair of devices present, PoCL cut into two
 * sub-devices, splits 1:0, 1:1, 3:1, 1:3 and random weights, sizes smaller than the device count, every op,
 * mode and dtype: the bits of rcl_ref_reduce / rcl_ref_axpy / rcl_ref_scal, compared with memcmp. */
#include <stdio.h>
#include <stdlib.h>

#include "testlib.h"

#define B 2048u
static const rcl_dtype dtypes[] = {RCL_F32, RCL_F64};
static const rcl_reduce_op ops[] = {RCL_OP_SUM, RCL_OP_DOT, RCL_OP_NRM2};
static const rcl_reduce_mode modes[] = {RCL_REDUCE_ORDERED, RCL_REDUCE_EXACT};
static const size_t sizes[] = {0, 1, 2, 2049, 3 * B + 5, 40 * B + 3, 100003};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static size_t checks; /* results compared */

static int any_supports(rcl_split *s, rcl_dtype dt) {
  for (size_t i = 0; i < rcl_split_count(s); i++)
    if (rcl_device_profile_support(rcl_context_profile(rcl_split_context(s, i)), RCL_FAMILY_REDUCE, dt, NULL) !=
        RCL_SUPPORT_NONE)
      return 1;
  return 0;
}

/* Every op, mode, dtype and size over split s with its current weights; name says which split. */
static void check_split(rcl_split *s, const char *name, size_t max_size) {
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    size_t es = rcl_dtype_size(dt);
    if (!any_supports(s, dt)) continue;
    double w[8];
    if (rcl_split_weights(w, s, RCL_FAMILY_REDUCE, dt) == RCL_ERR_UNSUPPORTED) { /* only unsupported weighted */
      double one = 1, r;
      rt_fails(rcl_split_reduce(&r, s, RCL_OP_SUM, dt, 1, &one, NULL, NULL), RCL_ERR_UNSUPPORTED, "no device left");
      continue;
    }
    for (size_t z = 0; z < NSIZES && sizes[z] <= max_size; z++) {
      size_t n = sizes[z];
      void *x = malloc((n + 1) * es), *y = malloc((n + 1) * es), *v = malloc((n + 1) * es), *w = malloc((n + 1) * es);
      rt_fill(x, dt, n, z % 2 ? "cancel" : "special", 50 + z);
      rt_fill(y, dt, n, "cancel", 90 + z);
      for (size_t o = 0; o < 3; o++)
        for (size_t m = 0; m < 2; m++) {
          rcl_reduce_options opts = RCL_REDUCE_OPTIONS_INIT;
          opts.mode = modes[m];
          unsigned char got[8], want[8];
          rt_ok(rcl_ref_reduce(want, ops[o], dt, modes[m], n, x, y));
          rt_ok(rcl_split_reduce(got, s, ops[o], dt, n, x, y, &opts));
          checks++;
          rt_assert_bits_eq(got, want, 1, dt, "split %s: %s %s %s n=%zu", name, rcl_reduce_op_name(ops[o]),
                            rcl_dtype_name(dt), rcl_reduce_mode_name(modes[m]), n);
        }
      double a64 = -1.75;
      float a32 = -1.75f;
      const void *alpha = dt == RCL_F64 ? (const void *)&a64 : (const void *)&a32;
      memcpy(v, y, n * es);
      memcpy(w, y, n * es);
      rcl_ref_axpy(w, dt, n, alpha, x);
      rt_ok(rcl_split_axpy(v, s, dt, n, alpha, x));
      rt_assert_bits_eq(v, w, n, dt, "split %s: axpy n=%zu", name, n);
      rcl_ref_scal(w, dt, n, alpha);
      rt_ok(rcl_split_scal(v, s, dt, n, alpha));
      rt_assert_bits_eq(v, w, n, dt, "split %s: scal n=%zu", name, n);
      free(x);
      free(y);
      free(v);
      free(w);
    }
  }
}

/* Splits 1:0, 1:1, 3:1, 1:3 and two random ones over the two contexts. */
static void check_weights(rcl_split *s, const char *devs) {
  static const double fixed[4][2] = {{1, 0}, {1, 1}, {3, 1}, {1, 3}};
  rt_rng r = {7};
  for (int k = 0; k < 6; k++) {
    double w[2] = {k < 4 ? fixed[k][0] : 0.05 + rt_uniform(&r), k < 4 ? fixed[k][1] : 0.05 + rt_uniform(&r)};
    char name[160];
    snprintf(name, sizeof name, "%s, weights %.3g:%.3g", devs, w[0], w[1]);
    rt_ok(rcl_split_set_weights(s, w, 2));
    check_split(s, name, k == 1 || k == 4 ? SIZE_MAX : 3 * B + 5); /* the large sizes: 1:1 and one random */
    size_t first, count;
    const char *note = NULL; /* the last call (scal, f64 where a device runs it) was split unless left out */
    rt_ok(rcl_split_share(&first, &count, &note, s, 1));
    ck_assert_msg(k == 0 ? count == 0 : count > 0 || note, "%s: device 1 got [%zu, +%zu)", name, first, count);
  }
}

START_TEST(every_pair_of_devices) {
  size_t nd = rt_ndevices();
  if (nd < 2) rt_note("one device: the pairs are skipped (the sub-device case still runs)");
  for (size_t i = 0; i < nd; i++)
    for (size_t j = i + 1; j < nd; j++) {
      rcl_context *c[2] = {rt_ctx(i), rt_ctx(j)};
      rcl_split *s;
      char devs[128];
      snprintf(devs, sizeof devs, "devices %zu+%zu", i, j);
      rt_ok(rcl_split_wrap(&s, c, 2, NULL));
      check_weights(s, devs);
      rcl_split_free(s);
    }
  rt_note("%zu reductions compared", checks);
}
END_TEST

/* One device as two: PoCL's sub-devices (clCreateSubDevices), the way CI tests a split of one CPU. */
START_TEST(pocl_sub_devices) {
  rcl_split_options o = RCL_SPLIT_OPTIONS_INIT;
  o.devices = "pocl:/2";
  o.tuning = RCL_TUNING_OFF;
  rcl_split *s = NULL;
  int rc = rcl_split_create(&s, &o);
  if (rc == RCL_ERR_NOT_FOUND) {
    rt_note("no PoCL device: %s", rcl_error_last());
    return;
  }
  rt_ok(rc);
  ck_assert_uint_eq(rcl_split_count(s), 2);
  check_weights(s, "PoCL/2");
  rcl_split_free(s);
}
END_TEST

START_TEST(bad_arguments) {
  rcl_context *c[1] = {rt_ctx(0)};
  rcl_split *s;
  rt_ok(rcl_split_wrap(&s, c, 1, NULL));
  float x[4] = {1, 2, 3, 4}, r;
  rt_fails(rcl_split_reduce(&r, s, RCL_OP_DOT, RCL_F32, 4, x, NULL, NULL), RCL_ERR_INVALID_ARG, "y is NULL");
  rt_fails(rcl_split_reduce(&r, s, (rcl_reduce_op)9, RCL_F32, 4, x, x, NULL), RCL_ERR_INVALID_ARG, "op 9");
  rt_fails(rcl_split_reduce(&r, s, (rcl_reduce_op)9, RCL_F32, 0, x, x, NULL), RCL_ERR_INVALID_ARG, "op 9");
  rt_fails(rcl_split_axpy(x, s, RCL_F32, 4, NULL, x), RCL_ERR_INVALID_ARG, "alpha");
  rt_fails(rcl_split_axpy(x, s, RCL_F32, 4, &r, NULL), RCL_ERR_INVALID_ARG, "NULL vector");
  rt_fails(rcl_split_scal(x, s, (rcl_dtype)7, 4, &r), RCL_ERR_INVALID_ARG, "dtype 7");
  rcl_split_free(s);
}
END_TEST

int main(void) {
  Suite *s = suite_create("split_reduce");
  rt_add_device_presence(s);
  TCase *tc = tcase_create("split_reduce");
  tcase_set_timeout(tc, 1200);
  tcase_add_test(tc, every_pair_of_devices);
  tcase_add_test(tc, pocl_sub_devices);
  tcase_add_test(tc, bad_arguments);
  suite_add_tcase(s, tc);
  return rt_run(s);
}
