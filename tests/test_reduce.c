/* Deterministic reductions on every device: bitwise against the host reference of each contract, for
 * every op, dtype, mode and input kind, over several work-group sizes and grids; exact mode also
 * against MPFR; offsets, events, large n and bad arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce/reduce_internal.h"
#include "testlib.h"

static const rcl_dtype dtypes[] = {RCL_F32, RCL_F64};
static const rcl_reduce_op ops[] = {RCL_OP_SUM, RCL_OP_DOT, RCL_OP_NRM2};
static const rcl_reduce_mode modes[] = {RCL_REDUCE_ORDERED, RCL_REDUCE_EXACT};
static const char *kinds[] = {"uniform", "wide", "cancel", "special"};

static void *gen(rcl_dtype dt, size_t n, const char *kind, uint64_t seed) {
  void *p = malloc((n ? n : 1) * rcl_dtype_size(dt));
  ck_assert_ptr_nonnull(p);
  rt_fill(p, dt, n, kind, seed);
  return p;
}

/* Every op/dtype/mode/kind over sizes around the block and lane boundaries, default launch. */
START_TEST(matches_reference) {
  static const size_t sizes[] = {0, 1, 2, 3, 63, 64, 65, 2047, 2048, 2049, 4161, 65537, 1000003};
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_REDUCE, dt)) {
      double r, v = 1.0;
      rt_fails(rcl_reduce(&r, rt_ctx(_i), RCL_OP_SUM, dt, 1, &v, NULL, NULL), RCL_ERR_UNSUPPORTED, "fp64");
      continue;
    }
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
      for (size_t k = 0; k < 4; k++) {
        size_t n = sizes[s];
        void *x = gen(dt, n, kinds[k], 11 + s), *y = gen(dt, n, kinds[k], 1000 + s);
        for (size_t o = 0; o < 3; o++)
          for (size_t m = 0; m < 2; m++) {
            double want = 0, got = 0;
            rcl_reduce_options opts = RCL_REDUCE_OPTIONS_INIT;
            opts.mode = modes[m];
            rt_ok(rcl_ref_reduce(&want, ops[o], dt, modes[m], n, x, y));
            rt_ok(rcl_reduce(&got, rt_ctx(_i), ops[o], dt, n, x, y, &opts));
            rt_assert_bits_eq(&got, &want, 1, dt, "%s %s %s %s n=%zu on %s", rcl_reduce_op_name(ops[o]),
                              rcl_dtype_name(dt), rcl_reduce_mode_name(modes[m]), kinds[k], n, rt_device_name(_i));
          }
        free(x);
        free(y);
      }
  }
}
END_TEST

/* Work-group sizes and grids change nothing: the same bits as the reference for each. */
START_TEST(launch_invariance) {
  static const size_t sizes[] = {1, 2049, 131071, (1u << 20) + 3};
  static const size_t locals[] = {1, 2, 32, 64, 128, 256, 1024};
  static const size_t groups[] = {0, 1, 3};
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_REDUCE, dt)) continue;
    const rcl_device_profile *p = rcl_context_profile(rt_ctx(_i));
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      size_t n = sizes[s];
      void *x = gen(dt, n, s % 2 ? "cancel" : "special", 77 + s), *y = gen(dt, n, "wide", 99 + s);
      for (size_t o = 0; o < 3; o++)
        for (size_t m = 0; m < 2; m++) {
          double want = 0;
          rt_ok(rcl_ref_reduce(&want, ops[o], dt, modes[m], n, x, y));
          size_t tried = 0;
          for (size_t l = 0; l < sizeof locals / sizeof locals[0]; l++) {
            if (locals[l] > p->max_work_group_size) continue;
            for (size_t g = 0; g < 3; g++) {
              double got = 0;
              rcl_reduce_options opts = RCL_REDUCE_OPTIONS_INIT;
              opts.mode = modes[m];
              opts.local_size = locals[l];
              opts.num_groups = groups[g];
              int rc = rcl_reduce(&got, rt_ctx(_i), ops[o], dt, n, x, y, &opts);
              /* A size over the kernel's limit, or a grid too small for a driver's loop limit, is refused
               * (and said so); every accepted configuration must give the reference bits. */
              if (rc == RCL_ERR_INVALID_ARG &&
                  (strstr(rcl_error_last(), "local_size") || strstr(rcl_error_last(), "too few")))
                continue;
              ck_assert_msg(rc == 0, "%s", rcl_error_last());
              rt_assert_bits_eq(&got, &want, 1, dt, "%s %s %s n=%zu local=%zu groups=%zu on %s",
                                rcl_reduce_op_name(ops[o]), rcl_dtype_name(dt), rcl_reduce_mode_name(modes[m]), n,
                                locals[l], groups[g], rt_device_name(_i));
              tried++;
            }
          }
          ck_assert_msg(tried >= 3, "only %zu launch configurations were valid on %s", tried, rt_device_name(_i));
        }
      free(x);
      free(y);
    }
  }
}
END_TEST

/* Each call is one launch whose control block the launch leaves zero again: many calls alternating
 * ordered and exact on the context's queue (one buffer kept and reused), a second in-order queue and an
 * out-of-order queue (where the device has them; a fresh buffer per call) all give the reference bits. */
START_TEST(queue_scratch_reuse) {
  rcl_context *ctx = rt_ctx(_i);
  cl_context cc = rcl_context_cl_context(ctx);
  cl_device_id dev = rcl_context_cl_device(ctx);
  cl_int err;
  cl_command_queue qs[3] = {rcl_context_cl_queue(ctx), clCreateCommandQueue(cc, dev, 0, &err), NULL};
  ck_assert_msg(qs[1] != NULL, "clCreateCommandQueue: %d", err);
  cl_command_queue_properties props = 0;
  clGetDeviceInfo(dev, CL_DEVICE_QUEUE_PROPERTIES, sizeof props, &props, NULL);
  if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
    qs[2] = clCreateCommandQueue(cc, dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
  else
    fprintf(stderr, "  note: no out-of-order queue on %s: that path is not exercised here\n", rt_device_name(_i));
  const size_t n = 70001;
  float *x = gen(RCL_F32, n, "cancel", 5), *y = gen(RCL_F32, n, "wide", 6);
  cl_mem bx = clCreateBuffer(cc, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * 4, x, &err);
  cl_mem by = clCreateBuffer(cc, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * 4, y, &err);
  cl_mem br = clCreateBuffer(cc, CL_MEM_READ_WRITE, 64 * 4, NULL, &err);
  ck_assert_ptr_nonnull(br);
  float want[2][3], got[64];
  for (int m = 0; m < 2; m++)
    for (int o = 0; o < 3; o++) rt_ok(rcl_ref_reduce(&want[m][o], ops[o], RCL_F32, modes[m], n, x, y));
  size_t k = 0;
  for (int round = 0; round < 3; round++)
    for (int qi = 0; qi < 3; qi++) {
      if (!qs[qi]) continue;
      for (int o = 0; o < 3; o++)
        for (int m = 0; m < 2; m++, k++) {
          rcl_reduce_options opts = RCL_REDUCE_OPTIONS_INIT;
          opts.mode = modes[m];
          rcl_queue_args q = RCL_QUEUE_ARGS_INIT;
          q.queue = qs[qi];
          rt_ok(rcl_reduce_enqueue(br, k % 64, ctx, ops[o], RCL_F32, n, bx, 0, by, 0, &opts, &q));
          ck_assert_int_eq(clFinish(qs[qi]), CL_SUCCESS);
          ck_assert_int_eq(clEnqueueReadBuffer(qs[qi], br, CL_TRUE, (k % 64) * 4, 4, &got[k % 64], 0, NULL, NULL),
                           CL_SUCCESS);
          rt_assert_bits_eq(&got[k % 64], &want[m][o], 1, RCL_F32, "%s %s call %zu on queue %d of %s",
                            rcl_reduce_op_name(ops[o]), rcl_reduce_mode_name(modes[m]), k, qi, rt_device_name(_i));
        }
    }
  clReleaseMemObject(bx);
  clReleaseMemObject(by);
  clReleaseMemObject(br);
  for (int qi = 1; qi < 3; qi++)
    if (qs[qi]) clReleaseCommandQueue(qs[qi]);
  free(x);
  free(y);
}
END_TEST

/* The single-work-item task variants compute the same contracts bit for bit: every op, dtype, mode and
 * input kind over sizes around the lane, block and stack boundaries (on llvmpipe the larger ones are
 * split over several launches that carry the state). local_size and num_groups (ignored by the task
 * variant) are given so that the tuner is never consulted. */
START_TEST(task_variant_matches_reference) {
  static const size_t sizes[] = {1, 2, 63, 64, 65, 2047, 2048, 2049, 4161, 6144, 12325, 14336, 65537, 300007};
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_REDUCE, dt)) continue;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
      for (size_t k = 0; k < 4; k++) {
        size_t n = sizes[s];
        if (n > 70000 && k != 2) continue; /* one large problem per mode keeps the test short */
        void *x = gen(dt, n, kinds[k], 31 + s), *y = gen(dt, n, kinds[k], 3100 + s);
        for (size_t o = 0; o < 3; o++)
          for (size_t m = 0; m < 2; m++) {
            double want = 0, got = 0;
            rcl_reduce_options opts = RCL_REDUCE_OPTIONS_INIT;
            opts.mode = modes[m];
            opts.variant = RCL_REDUCE_VARIANT_TASK;
            opts.local_size = 1;
            opts.num_groups = 1;
            rt_ok(rcl_ref_reduce(&want, ops[o], dt, modes[m], n, x, y));
            rt_ok(rcl_reduce(&got, rt_ctx(_i), ops[o], dt, n, x, y, &opts));
            rt_assert_bits_eq(&got, &want, 1, dt, "task %s %s %s %s n=%zu on %s", rcl_reduce_op_name(ops[o]),
                              rcl_dtype_name(dt), rcl_reduce_mode_name(modes[m]), kinds[k], n, rt_device_name(_i));
          }
        free(x);
        free(y);
      }
  }
  /* Version-1 options (no variant field) are still accepted; a bad variant is refused. */
  float x[3] = {1, 2, 3}, r;
  rcl_reduce_options o = RCL_REDUCE_OPTIONS_INIT;
  o.version = 1;
  rt_ok(rcl_reduce(&r, rt_ctx(_i), RCL_OP_SUM, RCL_F32, 3, x, NULL, &o));
  ck_assert_float_eq(r, 6.0f);
  o = (rcl_reduce_options)RCL_REDUCE_OPTIONS_INIT;
  o.variant = (rcl_reduce_variant)7;
  rt_fails(rcl_reduce(&r, rt_ctx(_i), RCL_OP_SUM, RCL_F32, 3, x, NULL, &o), RCL_ERR_INVALID_ARG, "variant 7");
  rcl_reduce_variant v;
  rt_ok(rcl_reduce_variant_parse(&v, "task"));
  ck_assert_int_eq(v, RCL_REDUCE_VARIANT_TASK);
  rt_fails(rcl_reduce_variant_parse(&v, "fpga"), RCL_ERR_INVALID_ARG, "\"fpga\"");
}
END_TEST

/* ---- pinned launches: every path of the kernels, whatever the tuner picks ---------------------------
 * Each call below gives local_size, num_groups and variant, so resolve_cfg (src/reduce/reduce.c) never asks the
 * tuner: which code of cl/reduce.cl and cl/reduce_task.cl runs depends on these values alone, never on
 * timing. Ordered mode, with S = max(W, 64) leaves per super-block and 64 leaves per full 2048-block:
 * - n = 14336 (7 blocks, 448 leaves), 1 group: W <= 64 gives one group of 7 super-blocks whose stack
 *   holds three subtrees (4 + 2 + 1) folded as s0 + (s1 + s2); W = 256 two super-blocks merged once.
 * - n = 12325 (6 blocks + 37 elements), 1 group: a last block of fewer than 64 elements (fewer leaves
 *   than lanes), a partial last super-block.
 * - n = 3048 (1 block + 1000 elements), 1 group: lanes of 15 or 16 elements in the last block, which
 *   carries half the sum (so a change of its lane sums shows).
 * - n = 1000003 (488 blocks + 579 elements: up to 10 per lane in the last block), 2, 4 and 8 groups:
 *   the last group's tree over 2, 4, 8 partials; stacks of 5, 4, 3 subtrees in the last group.
 * - n = 300007, 3 and 5 groups: a last-group tree over a count of partials that is not a power of two.
 * The task variant (task_variant_matches_reference, also pinned) takes n = 14336 (448 leaves: a final fold
 * of three subtrees), 12325 (421 leaves: five) and, on llvmpipe, 300007 in many launches that carry the
 * stack or the superaccumulator from one to the next. */
typedef struct {
  size_t n, groups;
} pinned_case;

static const pinned_case pinned_ordered_cases[] = {{14336, 1},   {12325, 1},   {3048, 1},   {1000003, 2},
                                                   {1000003, 4}, {1000003, 8}, {300007, 3}, {300007, 5}};
static const pinned_case pinned_exact_cases[] = {{14336, 1}, {12325, 1}, {100003, 2}, {100003, 4}, {1000003, 8}};
static const size_t pinned_locals[] = {32, 64, 256};
#define NPINNED_LOCALS (sizeof pinned_locals / sizeof pinned_locals[0])

/* One pinned call compared bit for bit with want: 1 if it ran, 0 if the configuration is refused as
 * invalid on this device (a local size over the kernel's limit; too few groups for a driver's loop
 * limit: then *loop_limited is set); any other failure fails the test. */
static int pinned_call(size_t dev, rcl_reduce_op op, rcl_dtype dt, rcl_reduce_mode mode, size_t local, size_t groups,
                       size_t n, const void *x, const void *y, const void *want, const char *data, int *loop_limited) {
  rcl_reduce_options opts = RCL_REDUCE_OPTIONS_INIT;
  opts.mode = mode;
  opts.variant = RCL_REDUCE_VARIANT_NDRANGE; /* variant, local_size and num_groups all given: no tuner */
  opts.local_size = local;
  opts.num_groups = groups;
  double got = 0;
  int rc = rcl_reduce(&got, rt_ctx(dev), op, dt, n, x, y, &opts);
  if (rc == RCL_ERR_INVALID_ARG && strstr(rcl_error_last(), "too few")) *loop_limited = 1;
  if (rc == RCL_ERR_INVALID_ARG && (strstr(rcl_error_last(), "exceeds") || strstr(rcl_error_last(), "too few")))
    return 0;
  ck_assert_msg(rc == 0, "pinned %s %s n=%zu local=%zu groups=%zu on %s: %s", rcl_reduce_mode_name(mode),
                rcl_reduce_op_name(op), n, local, groups, rt_device_name(dev), rcl_error_last());
  rt_assert_bits_eq(&got, want, 1, dt, "pinned %s %s %s %s n=%zu local=%zu groups=%zu on %s",
                    rcl_reduce_mode_name(mode), rcl_reduce_op_name(op), rcl_dtype_name(dt), data, n, local, groups,
                    rt_device_name(dev));
  return 1;
}

/* The pinned cases of one mode: every op, dtype, two seeds, every local size; want from the host
 * reference (exact mode: checked against MPFR where n is small; exact_equals_mpfr has larger n). Each case
 * must run with at least one local size, unless the device's loop limit refuses its few groups. */
static void pinned_ndrange(size_t dev, rcl_reduce_mode mode, const pinned_case *cases, size_t ncases,
                           const char *const kinds2[2]) {
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(dev, RCL_FAMILY_REDUCE, dt)) continue;
    for (size_t c = 0; c < ncases; c++) {
      size_t n = cases[c].n, ran = 0, tried = 0;
      int loop_limited = 0;
      for (size_t s = 0; s < 2; s++) {
        char data[64];
        snprintf(data, sizeof data, "%s seeds=%zu,%zu", kinds2[s], 40 + c * 2 + s, 400 + c * 2 + s);
        void *x = gen(dt, n, kinds2[s], 40 + c * 2 + s), *y = gen(dt, n, kinds2[s], 400 + c * 2 + s);
        for (size_t o = 0; o < 3; o++) {
          double want = 0;
          rt_ok(rcl_ref_reduce(&want, ops[o], dt, mode, n, x, y));
          if (mode == RCL_REDUCE_EXACT && n <= 20000) {
            double mp = 0;
            rt_mpfr_reduce(&mp, ops[o], dt, n, x, y);
            rt_assert_bits_eq(&want, &mp, 1, dt, "reference exact %s %s %s n=%zu vs MPFR", rcl_reduce_op_name(ops[o]),
                              rcl_dtype_name(dt), data, n);
          }
          for (size_t l = 0; l < NPINNED_LOCALS; l++, tried++)
            ran += (size_t)pinned_call(dev, ops[o], dt, mode, pinned_locals[l], cases[c].groups, n, x, y, &want, data,
                                       &loop_limited);
        }
        free(x);
        free(y);
      }
      if (ran < tried)
        rt_note("pinned %s %s n=%zu groups=%zu on %s: %zu of %zu calls ran, the others refused (local sizes over "
                "the kernel's limit%s)",
                rcl_reduce_mode_name(mode), rcl_dtype_name(dt), n, cases[c].groups, rt_device_name(dev), ran, tried,
                loop_limited ? "; too few groups for the driver's loop limit" : "");
      ck_assert_msg(ran > 0 || loop_limited, "pinned %s %s n=%zu groups=%zu: no local size ran on %s",
                    rcl_reduce_mode_name(mode), rcl_dtype_name(dt), n, cases[c].groups, rt_device_name(dev));
    }
  }
}

START_TEST(pinned_ordered) {
  static const char *const k2[2] = {"cancel", "uniform"};
  pinned_ndrange(_i, RCL_REDUCE_ORDERED, pinned_ordered_cases,
                 sizeof pinned_ordered_cases / sizeof pinned_ordered_cases[0], k2);
}
END_TEST

START_TEST(pinned_exact) {
  static const char *const k2[2] = {"wide", "cancel"};
  pinned_ndrange(_i, RCL_REDUCE_EXACT, pinned_exact_cases, sizeof pinned_exact_cases / sizeof pinned_exact_cases[0],
                 k2);
}
END_TEST

/* The exact mode equals MPFR's correctly rounded result (an oracle that shares no code with reprocl). */
START_TEST(exact_equals_mpfr) {
  static const size_t sizes[] = {1, 2, 1000, 4099, 100000};
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_REDUCE, dt)) continue;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
      for (size_t k = 0; k < 4; k++) {
        size_t n = sizes[s];
        void *x = gen(dt, n, kinds[k], 5 + s), *y = gen(dt, n, kinds[k], 50 + s);
        for (size_t o = 0; o < 3; o++) {
          double want = 0, got = 0;
          rcl_reduce_options opts = RCL_REDUCE_OPTIONS_INIT;
          opts.mode = RCL_REDUCE_EXACT;
          rt_mpfr_reduce(&want, ops[o], dt, n, x, y);
          rt_ok(rcl_reduce(&got, rt_ctx(_i), ops[o], dt, n, x, y, &opts));
          rt_assert_bits_eq(&got, &want, 1, dt, "exact %s %s %s n=%zu vs MPFR on %s", rcl_reduce_op_name(ops[o]),
                            rcl_dtype_name(dt), kinds[k], n, rt_device_name(_i));
        }
        free(x);
        free(y);
      }
  }
}
END_TEST

/* A sum that cancels to one ulp of a small number: exact mode finds it, on every device. */
START_TEST(exact_cancellation_to_one_ulp) {
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_REDUCE, dt)) continue;
    size_t n = 30001;
    double *v = calloc(n, sizeof *v);
    float *vf = calloc(n, sizeof *vf);
    rt_rng r = {42};
    for (size_t i = 0; i + 1 < n; i += 2) { /* +-big pairs, scattered */
      v[i] = ldexp(rt_uniform(&r) + 0.5, (int)(rt_next(&r) % 200u) - 100);
      v[i + 1] = -v[i];
    }
    v[n - 1] = dt == RCL_F32 ? (double)0x1p-149f : 0x1p-1074; /* the smallest subnormal */
    for (size_t i = 0; i < n; i++) {                          /* swap pairs apart so no two neighbours cancel */
      size_t j = (size_t)(rt_next(&r) % n);
      double t = v[i];
      v[i] = v[j];
      v[j] = t;
    }
    for (size_t i = 0; i < n; i++) vf[i] = (float)v[i];
    void *x = dt == RCL_F32 ? (void *)vf : (void *)v;
    double got = 0, want = 0;
    rcl_reduce_options opts = RCL_REDUCE_OPTIONS_INIT;
    opts.mode = RCL_REDUCE_EXACT;
    rt_ok(rcl_reduce(&got, rt_ctx(_i), RCL_OP_SUM, dt, n, x, NULL, &opts));
    rt_mpfr_reduce(&want, RCL_OP_SUM, dt, n, x, NULL);
    rt_assert_bits_eq(&got, &want, 1, dt, "exact cancellation on %s", rt_device_name(_i));
    if (dt == RCL_F32) {
      float gf;
      memcpy(&gf, &got, 4);
      ck_assert_float_eq(gf, 0x1p-149f);
    } else {
      ck_assert_double_eq(got, 0x1p-1074);
    }
    free(v);
    free(vf);
  }
}
END_TEST

/* The enqueue form: offsets into the caller's buffers, the caller's queue, a wait list and an event. */
START_TEST(enqueue_offsets_and_events) {
  rcl_context *c = rt_ctx(_i);
  size_t n = 5000, xo = 17, yo = 3, ro = 5;
  float *x = gen(RCL_F32, n + xo, "uniform", 1), *y = gen(RCL_F32, n + yo, "uniform", 2);
  cl_int err;
  cl_context clc = rcl_context_cl_context(c);
  cl_command_queue q = clCreateCommandQueue(clc, rcl_context_cl_device(c), 0, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  cl_mem bx = clCreateBuffer(clc, CL_MEM_READ_WRITE, (n + xo) * 4, NULL, &err);
  cl_mem by = clCreateBuffer(clc, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (n + yo) * 4, y, &err);
  cl_mem br = clCreateBuffer(clc, CL_MEM_READ_WRITE, (ro + 1) * 4, NULL, &err);
  cl_event wrote, done = NULL;
  ck_assert_int_eq(clEnqueueWriteBuffer(q, bx, CL_FALSE, 0, (n + xo) * 4, x, 0, NULL, &wrote), CL_SUCCESS);
  rcl_queue_args qa = RCL_QUEUE_ARGS_INIT;
  qa.queue = q;
  qa.num_events_in_wait_list = 1;
  qa.event_wait_list = &wrote;
  qa.event = &done;
  for (size_t m = 0; m < 2; m++) {
    rcl_reduce_options opts = RCL_REDUCE_OPTIONS_INIT;
    opts.mode = modes[m];
    rt_ok(rcl_reduce_enqueue(br, ro, c, RCL_OP_DOT, RCL_F32, n, bx, xo, by, yo, &opts, &qa));
    ck_assert_ptr_nonnull(done);
    ck_assert_int_eq(clWaitForEvents(1, &done), CL_SUCCESS);
    clReleaseEvent(done);
    done = NULL;
    float got, want;
    ck_assert_int_eq(clEnqueueReadBuffer(q, br, CL_TRUE, ro * 4, 4, &got, 0, NULL, NULL), CL_SUCCESS);
    rt_ok(rcl_ref_reduce(&want, RCL_OP_DOT, RCL_F32, modes[m], n, x + xo, y + yo));
    rt_assert_bits_eq(&got, &want, 1, RCL_F32, "dot with offsets (%s) on %s", rcl_reduce_mode_name(modes[m]),
                      rt_device_name(_i));
  }
  /* n = 0 writes +0 at the offset, still through the event chain. */
  rt_ok(rcl_reduce_enqueue(br, ro, c, RCL_OP_SUM, RCL_F32, 0, bx, 0, NULL, 0, NULL, &qa));
  ck_assert_int_eq(clWaitForEvents(1, &done), CL_SUCCESS);
  clReleaseEvent(done);
  uint32_t zero = 1;
  clEnqueueReadBuffer(q, br, CL_TRUE, ro * 4, 4, &zero, 0, NULL, NULL);
  ck_assert_uint_eq(zero, 0);
  clReleaseEvent(wrote);
  clReleaseMemObject(bx);
  clReleaseMemObject(by);
  clReleaseMemObject(br);
  clReleaseCommandQueue(q);
  free(x);
  free(y);
}
END_TEST

START_TEST(axpy_scal_match_reference) {
  static const size_t sizes[] = {0, 1, 1000, 65539};
  static const size_t locals[] = {0, 1, 64, 256};
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_REDUCE, dt)) continue;
    size_t es = rcl_dtype_size(dt);
    for (size_t s = 0; s < 4; s++) {
      size_t n = sizes[s];
      void *x = gen(dt, n, "special", 3), *y = gen(dt, n, "wide", 4), *got = malloc(n * es + 1),
           *want = malloc(n * es + 1);
      double a64 = -1.0 / 3.0;
      float a32 = (float)a64;
      const void *alpha = dt == RCL_F32 ? (const void *)&a32 : (const void *)&a64;
      for (size_t l = 0; l < 4; l++) {
        memcpy(got, y, n * es);
        memcpy(want, y, n * es);
        int rc = rcl_axpy(got, rt_ctx(_i), dt, n, alpha, x, locals[l]);
        if (rc == RCL_ERR_INVALID_ARG && strstr(rcl_error_last(), "exceeds the kernel's limit")) continue;
        ck_assert_msg(rc == 0, "%s", rcl_error_last());
        rcl_ref_axpy(want, dt, n, alpha, x);
        rt_assert_bits_eq(got, want, n, dt, "axpy %s n=%zu local=%zu on %s", rcl_dtype_name(dt), n, locals[l],
                          rt_device_name(_i));
        memcpy(got, x, n * es);
        memcpy(want, x, n * es);
        rt_ok(rcl_scal(got, rt_ctx(_i), dt, n, alpha, locals[l]));
        rcl_ref_scal(want, dt, n, alpha);
        rt_assert_bits_eq(got, want, n, dt, "scal %s n=%zu local=%zu on %s", rcl_dtype_name(dt), n, locals[l],
                          rt_device_name(_i));
      }
      free(x);
      free(y);
      free(got);
      free(want);
    }
  }
}
END_TEST

/* 2^28 - 1 elements (the lower bound for n, not a power of two), both modes, f32. */
START_TEST(large_n) {
  size_t n = (1u << 28) - 1;
  rcl_context *c = rt_ctx(_i);
  if (n * 4 > rcl_context_profile(c)->max_mem_alloc_size) {
    float r, v = 0;
    rt_fails(rcl_reduce(&r, c, RCL_OP_SUM, RCL_F32, n, &v, NULL, NULL), RCL_ERR_UNSUPPORTED, "MAX_MEM_ALLOC");
    rt_note("large_n refused on %s: %s", rt_device_name(_i), rcl_error_last());
    return;
  }
  float *x = gen(RCL_F32, n, "uniform", 2024);
  for (size_t m = 0; m < 2; m++) {
    float got, want;
    rcl_reduce_options opts = RCL_REDUCE_OPTIONS_INIT;
    opts.mode = modes[m];
    rt_ok(rcl_ref_reduce(&want, RCL_OP_SUM, RCL_F32, modes[m], n, x, NULL));
    rt_ok(rcl_reduce(&got, c, RCL_OP_SUM, RCL_F32, n, x, NULL, &opts));
    rt_assert_bits_eq(&got, &want, 1, RCL_F32, "sum of 2^28-1 (%s) on %s", rcl_reduce_mode_name(modes[m]),
                      rt_device_name(_i));
  }
  free(x);
}
END_TEST

START_TEST(bad_arguments) {
  rcl_context *c = rt_ctx(_i);
  float x[4] = {1, 2, 3, 4}, r;
  rcl_reduce_options opts = RCL_REDUCE_OPTIONS_INIT;
  rt_fails(rcl_reduce(NULL, c, RCL_OP_SUM, RCL_F32, 4, x, NULL, NULL), RCL_ERR_INVALID_ARG, "NULL");
  rt_fails(rcl_reduce(&r, c, RCL_OP_SUM, RCL_F32, 4, NULL, NULL, NULL), RCL_ERR_INVALID_ARG, "x is NULL");
  rt_fails(rcl_reduce(&r, c, RCL_OP_DOT, RCL_F32, 4, x, NULL, NULL), RCL_ERR_INVALID_ARG, "y is NULL");
  rt_fails(rcl_reduce(&r, c, (rcl_reduce_op)7, RCL_F32, 4, x, NULL, NULL), RCL_ERR_INVALID_ARG, "op");
  rt_fails(rcl_reduce(&r, c, RCL_OP_SUM, (rcl_dtype)9, 4, x, NULL, NULL), RCL_ERR_INVALID_ARG, "dtype");
  opts.local_size = 48;
  rt_fails(rcl_reduce(&r, c, RCL_OP_SUM, RCL_F32, 4, x, NULL, &opts), RCL_ERR_INVALID_ARG, "power of two");
  opts.local_size = 1u << 20;
  rt_fails(rcl_reduce(&r, c, RCL_OP_SUM, RCL_F32, 4, x, NULL, &opts), RCL_ERR_INVALID_ARG, "exceeds");
  opts.local_size = 0;
  opts.mode = (rcl_reduce_mode)5;
  rt_fails(rcl_reduce(&r, c, RCL_OP_SUM, RCL_F32, 4, x, NULL, &opts), RCL_ERR_INVALID_ARG, "mode");
  opts = (rcl_reduce_options)RCL_REDUCE_OPTIONS_INIT;
  opts.version = 99;
  rt_fails(rcl_reduce(&r, c, RCL_OP_SUM, RCL_F32, 4, x, NULL, &opts), RCL_ERR_INVALID_ARG, "version");
  /* A buffer smaller than n elements is refused before any launch. */
  cl_int err;
  cl_mem small = clCreateBuffer(rcl_context_cl_context(c), CL_MEM_READ_WRITE, 8, NULL, &err);
  rt_fails(rcl_reduce_enqueue(small, 0, c, RCL_OP_SUM, RCL_F32, 4, small, 0, NULL, 0, NULL, NULL), RCL_ERR_INVALID_ARG,
           "x: buffer holds 8 bytes");
  rt_fails(rcl_reduce_enqueue(small, 2, c, RCL_OP_SUM, RCL_F32, 1, small, 0, NULL, 0, NULL, NULL), RCL_ERR_INVALID_ARG,
           "result");
  rt_fails(rcl_reduce_enqueue(small, 0, c, RCL_OP_SUM, RCL_F32, SIZE_MAX, small, 2, NULL, 0, NULL, NULL),
           RCL_ERR_OVERFLOW, "overflows");
  clReleaseMemObject(small);
}
END_TEST

/* Checked-in digests per contract, op, dtype and input: the host reference and every device must give
 * them, so any change of result bits is caught (and must come with a contract version bump). */
START_TEST(golden_digests) {
  static const char *golden_kinds[] = {"uniform", "cancel", "special"};
  const size_t n = 100003;
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    int on_device = rt_supported(_i, RCL_FAMILY_REDUCE, dt);
    size_t es = rcl_dtype_size(dt);
    for (size_t k = 0; k < 3; k++) {
      void *x = gen(dt, n, golden_kinds[k], 7), *y = gen(dt, n, golden_kinds[k], 8);
      for (size_t o = 0; o < 3; o++)
        for (size_t m = 0; m < 2; m++) {
          char key[160];
          snprintf(key, sizeof key, "reduce.%s.v1 %s %s %s n=%zu seeds=7,8", rcl_reduce_mode_name(modes[m]),
                   rcl_reduce_op_name(ops[o]), rcl_dtype_name(dt), golden_kinds[k], n);
          double want = 0, got = 0;
          rt_ok(rcl_ref_reduce(&want, ops[o], dt, modes[m], n, x, y));
          rt_golden_ref("reduce.txt", key, &want, es);
          if (!on_device) continue;
          /* The golden digest is the contract's: the default launch and the task variant both match it. */
          for (int v = 0; v < 2; v++) {
            rcl_reduce_options opts = RCL_REDUCE_OPTIONS_INIT;
            opts.mode = modes[m];
            opts.variant = v ? RCL_REDUCE_VARIANT_TASK : RCL_REDUCE_VARIANT_DEFAULT;
            got = 0;
            rt_ok(rcl_reduce(&got, rt_ctx(_i), ops[o], dt, n, x, y, &opts));
            rt_golden_device("reduce.txt", key, &got, es, rt_device_name(_i));
          }
        }
      /* blas1 on the same inputs */
      double a64 = 0.7071067811865476;
      float a32 = (float)a64;
      const void *alpha = dt == RCL_F32 ? (const void *)&a32 : (const void *)&a64;
      void *ref = malloc(n * es), *dev = malloc(n * es);
      for (int which = 0; which < 2; which++) {
        char key[160];
        snprintf(key, sizeof key, "blas1.v1 %s %s %s n=%zu seeds=7,8", which ? "scal" : "axpy", rcl_dtype_name(dt),
                 golden_kinds[k], n);
        memcpy(ref, which ? x : y, n * es);
        memcpy(dev, which ? x : y, n * es);
        if (which)
          rcl_ref_scal(ref, dt, n, alpha);
        else
          rcl_ref_axpy(ref, dt, n, alpha, x);
        rt_golden_ref("reduce.txt", key, ref, n * es);
        if (!on_device) continue;
        if (which)
          rt_ok(rcl_scal(dev, rt_ctx(_i), dt, n, alpha, 0));
        else
          rt_ok(rcl_axpy(dev, rt_ctx(_i), dt, n, alpha, x, 0));
        rt_golden_device("reduce.txt", key, dev, n * es, rt_device_name(_i));
      }
      free(ref);
      free(dev);
      free(x);
      free(y);
    }
  }
}
END_TEST

/* ---- exact mode's accumulations: the digit window and the fast window (tuning value accum) -------------
 * The same bits from both, for every op and dtype, over inputs that reach each path of the fast window
 * (cl/reduce.cl, RCL_EXACT_FAST): "climb" (magnitudes growing along each work-item's terms over the whole
 * range, denormals first: the window moves up again and again, every fifth term far below it goes to the
 * digit window), "zeros" (+0, -0 and denormals), "negzero" (only -0: the result is -0), "huge" (terms and
 * products out of the fast window's reach, overflowing to infinity) and rt_fill's kinds; sizes around the
 * loads in flight (XU = 8 per work-item) and groups of one to three. Calls the launch layer directly: the
 * public options have no accumulation field (the tuner picks it). */
static void fill_trap(void *p, rcl_dtype dt, size_t n, const char *kind, uint64_t seed) {
  int f32 = dt == RCL_F32, emin = f32 ? -149 : -1074, span = f32 ? 276 : 2097;
  for (size_t i = 0; i < n; i++) {
    double v;
    uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
    double sgn = (h >> 7) & 1 ? -1.0 : 1.0, m = 1.0 + (double)((h >> 20) % 1000) / 1000.0;
    if (!strcmp(kind, "climb")) { /* exponent rising with i, every fifth term near the bottom */
      int e = emin + (i % 5 == 4 ? (int)(h % 40) : (int)((double)i * span / (double)n));
      v = sgn * ldexp(f32 ? 1.0 + (double)((h >> 20) % 127) / 128.0 : m, e);
    } else if (!strcmp(kind, "zeros")) {
      v = h % 3 == 0 ? 0.0 : h % 3 == 1 ? -0.0 : sgn * ldexp(m, emin + (int)(h % 20));
    } else if (!strcmp(kind, "negzero")) {
      v = -0.0;
    } else { /* huge */
      v = sgn * (h % 4 == 0 ? ldexp(m, f32 ? 126 : 1022) : ldexp(m, (int)(h % 60) - 30));
    }
    if (f32)
      ((float *)p)[i] = (float)v;
    else
      ((double *)p)[i] = v;
  }
}

static void accum_call(void *got, size_t dev, rcl_reduce_op op, rcl_dtype dt, size_t accum, size_t local, size_t groups,
                       size_t n, const void *x, const void *y) {
  rcl_context *ctx = rt_ctx(dev);
  size_t es = rcl_dtype_size(dt);
  cl_mem bx = NULL, by = NULL, br = NULL;
  rt_ok(rcl__reduce_upload(&bx, ctx, x, n, es, "x"));
  rt_ok(rcl__reduce_upload(&by, ctx, y, n, es, "y"));
  rt_ok(rcl__buffer_create(&br, ctx, CL_MEM_READ_WRITE, es, NULL, "result"));
  rcl_red_cfg c;
  memset(&c, 0, sizeof c);
  c.variant = RCL_REDUCE_VARIANT_NDRANGE;
  c.local = local;
  c.groups = groups;
  c.accum = accum;
  rcl_red_plan pl;
  rt_ok(rcl__reduce_plan(&pl, ctx, op, RCL_REDUCE_EXACT, dt, n, &c));
  /* The fast window runs where asked, unless a driver's loop limit leaves its moves no room (f64 dot). */
  ck_assert(pl.fast == (accum == RCL_RED_ACCUM_FAST) || (pl.fast == 0 && rcl__loop_budget(ctx) != SIZE_MAX));
  rcl__reduce_plan_release(&pl);
  rcl_queue_args qa = RCL_QUEUE_ARGS_INIT;
  rt_ok(rcl__reduce_enqueue_cfg(br, 0, ctx, op, RCL_REDUCE_EXACT, dt, n, bx, 0, by, 0, &c, &qa));
  ck_assert_int_eq(clEnqueueReadBuffer(ctx->queue, br, CL_TRUE, 0, es, got, 0, NULL, NULL), CL_SUCCESS);
  clReleaseMemObject(bx);
  clReleaseMemObject(by);
  clReleaseMemObject(br);
}

START_TEST(exact_accumulations) {
  static const char *const tk[] = {"climb", "zeros", "negzero", "huge", "uniform", "wide", "cancel", "special"};
  static const size_t sizes[] = {1, 9, 4099, 100003};
  static const size_t launches[][2] = {{32, 1}, {64, 3}};
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_REDUCE, dt)) continue;
    for (size_t k = 0; k < sizeof tk / sizeof tk[0]; k++)
      for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        void *x = gen(dt, n, "uniform", 1), *y = gen(dt, n, "uniform", 2);
        if (k < 4) {
          fill_trap(x, dt, n, tk[k], 7 + s);
          fill_trap(y, dt, n, tk[k], 70 + s);
        } else {
          rt_fill(x, dt, n, tk[k], 7 + s);
          rt_fill(y, dt, n, tk[k], 70 + s);
        }
        for (size_t o = 0; o < 3; o++) {
          double want = 0;
          rt_ok(rcl_ref_reduce(&want, ops[o], dt, RCL_REDUCE_EXACT, n, x, y));
          for (size_t a = RCL_RED_ACCUM_WINDOW; a <= RCL_RED_ACCUM_FAST; a++)
            for (size_t l = 0; l < sizeof launches / sizeof launches[0]; l++) {
              double got = 0;
              accum_call(&got, _i, ops[o], dt, a, launches[l][0], launches[l][1], n, x, y);
              rt_assert_bits_eq(&got, &want, 1, dt, "exact %s %s %s n=%zu accum=%s local=%zu groups=%zu on %s",
                                rcl_reduce_op_name(ops[o]), rcl_dtype_name(dt), tk[k], n,
                                a == RCL_RED_ACCUM_FAST ? "fast" : "window", launches[l][0], launches[l][1],
                                rt_device_name(_i));
            }
        }
        free(x);
        free(y);
      }
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("reduce");
  rt_add_device_presence(s);
  RT_ADD_DEVICE_CASE(s, golden_digests);
  RT_ADD_DEVICE_CASE(s, matches_reference);
  RT_ADD_DEVICE_CASE(s, launch_invariance);
  TCase *pinned = tcase_create("pinned"); /* CK_RUN_CASE=pinned: every launch given, no tuner (mutate-kernels.sh) */
  rt_add_device_loop(pinned, pinned_ordered);
  rt_add_device_loop(pinned, pinned_exact);
  rt_add_device_loop(pinned, task_variant_matches_reference);
  rt_add_device_loop(pinned, exact_accumulations);
  suite_add_tcase(s, pinned);
  RT_ADD_DEVICE_CASE(s, queue_scratch_reuse);
  RT_ADD_DEVICE_CASE(s, exact_equals_mpfr);
  RT_ADD_DEVICE_CASE(s, exact_cancellation_to_one_ulp);
  RT_ADD_DEVICE_CASE(s, enqueue_offsets_and_events);
  RT_ADD_DEVICE_CASE(s, axpy_scal_match_reference);
  RT_ADD_DEVICE_CASE(s, bad_arguments);
  RT_ADD_DEVICE_CASE(s, large_n);
  return rt_run(s);
}
