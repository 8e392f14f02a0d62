/* The prelude's operations on every device against the host's IEEE hardware: the plain path where the
 * device guarantees IEEE fp32, the exact-emulation path (forced with -DRCL_EMULATE_F32_* on every device
 * so it is tested on PoCL too), binary64, and NaN canonicalisation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "testlib.h"

static const char kernels[] =
    "__kernel void ops32(__global const float *a, __global const float *b, __global float *o) {\n"
    "  size_t i = get_global_id(0);\n"
    "  float x = a[i], y = b[i];\n"
    "  o[6*i+0] = rcl_canon_f32(rcl_add_f32(x, y));\n"
    "  o[6*i+1] = rcl_canon_f32(rcl_sub_f32(x, y));\n"
    "  o[6*i+2] = rcl_canon_f32(rcl_mul_f32(x, y));\n"
    "  o[6*i+3] = rcl_canon_f32(rcl_div_f32(x, y));\n"
    "  o[6*i+4] = rcl_canon_f32(rcl_sqrt_f32(x));\n"
    "  o[6*i+5] = rcl_canon_f32(rcl_add_f32(rcl_mul_f32(x, y), y));\n"
    "}\n"
    "#ifdef RCL_HAS_FP64\n"
    "__kernel void ops64(__global const double *a, __global const double *b, __global double *o) {\n"
    "  size_t i = get_global_id(0);\n"
    "  double x = a[i], y = b[i];\n"
    "  o[6*i+0] = rcl_canon_f64(rcl_add_f64(x, y));\n"
    "  o[6*i+1] = rcl_canon_f64(rcl_sub_f64(x, y));\n"
    "  o[6*i+2] = rcl_canon_f64(rcl_mul_f64(x, y));\n"
    "  o[6*i+3] = rcl_canon_f64(rcl_div_f64(x, y));\n"
    "  o[6*i+4] = rcl_canon_f64(rcl_sqrt_f64(x));\n"
    "  o[6*i+5] = rcl_canon_f64(rcl_add_f64(rcl_mul_f64(x, y), y));\n"
    "}\n"
    "#endif\n";

static void canon32(float *v) {
  if (isnan(*v)) {
    uint32_t q = 0x7fc00000u;
    memcpy(v, &q, 4);
  }
}
static void canon64(double *v) {
  if (isnan(*v)) {
    uint64_t q = 0x7ff8000000000000u;
    memcpy(v, &q, 8);
  }
}

/* Operands mixing every binade, subnormal pairs, near-cancelling pairs and products near underflow. */
static void operands(void *a, void *b, size_t n, rcl_dtype dt) {
  rt_fill(a, dt, n, "special", 1);
  rt_fill(b, dt, n, "wide", 2);
  rt_rng r = {3};
  for (size_t i = 0; i < n; i += 3) {
    if (dt == RCL_F32) {
      uint32_t u = (uint32_t)rt_next(&r);
      uint32_t x = (i % 2) ? (u & 0x80ffffffu) : ((u & 0x807fffffu) | ((uint32_t)(20u + rt_next(&r) % 50u) << 23));
      memcpy((float *)a + i, &x, 4);
      uint32_t y = (i % 6) ? (x ^ 0x80000000u) + (uint32_t)(rt_next(&r) % 8u) : (uint32_t)rt_next(&r) & 0x80ffffffu;
      memcpy((float *)b + i, &y, 4);
    } else {
      uint64_t u = rt_next(&r);
      uint64_t x = (i % 2) ? (u & 0x801fffffffffffffu) : ((u & 0x800fffffffffffffu) | ((20u + rt_next(&r) % 500u) << 52));
      memcpy((double *)a + i, &x, 8);
      uint64_t y = (x ^ 0x8000000000000000u) + rt_next(&r) % 8u;
      memcpy((double *)b + i, &y, 8);
    }
  }
}

static void run(size_t dev, rcl_dtype dt, const char *extra) {
  rcl_context *c = rt_ctx(dev);
  rcl_program_options po = RCL_PROGRAM_OPTIONS_INIT;
  po.flags = RCL_PROGRAM_PRELUDE_OPS;
  po.options = extra;
  rcl_program *prog;
  rt_ok(rcl_program_build(&prog, c, kernels, 0, &po));
  size_t n = 1 << 16, es = rcl_dtype_size(dt);
  void *a = malloc(n * es), *b = malloc(n * es), *got = malloc(6 * n * es), *want = malloc(6 * n * es);
  operands(a, b, n, dt);
  for (size_t i = 0; i < n; i++) {
    if (dt == RCL_F32) {
      volatile float x = ((float *)a)[i], y = ((float *)b)[i];
      float *w = (float *)want + 6 * i, p = x * y;
      w[0] = x + y, w[1] = x - y, w[2] = x * y, w[3] = x / y, w[4] = sqrtf(x), w[5] = p + y;
      for (int k = 0; k < 6; k++) canon32(&w[k]);
    } else {
      volatile double x = ((double *)a)[i], y = ((double *)b)[i];
      double *w = (double *)want + 6 * i, p = x * y;
      w[0] = x + y, w[1] = x - y, w[2] = x * y, w[3] = x / y, w[4] = sqrt(x), w[5] = p + y;
      for (int k = 0; k < 6; k++) canon64(&w[k]);
    }
  }
  cl_int err;
  cl_context clc = rcl_context_cl_context(c);
  cl_mem ba = clCreateBuffer(clc, CL_MEM_COPY_HOST_PTR, n * es, a, &err);
  cl_mem bb = clCreateBuffer(clc, CL_MEM_COPY_HOST_PTR, n * es, b, &err);
  cl_mem bo = clCreateBuffer(clc, CL_MEM_WRITE_ONLY, 6 * n * es, NULL, &err);
  cl_kernel k;
  rt_ok(rcl_program_create_kernel(&k, prog, dt == RCL_F32 ? "ops32" : "ops64"));
  clSetKernelArg(k, 0, sizeof ba, &ba);
  clSetKernelArg(k, 1, sizeof bb, &bb);
  clSetKernelArg(k, 2, sizeof bo, &bo);
  cl_command_queue q = rcl_context_cl_queue(c);
  ck_assert_int_eq(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL), CL_SUCCESS);
  ck_assert_int_eq(clEnqueueReadBuffer(q, bo, CL_TRUE, 0, 6 * n * es, got, 0, NULL, NULL), CL_SUCCESS);
  rt_assert_bits_eq(got, want, 6 * n, dt, "prelude %s ops (%s) on %s [order: add sub mul div sqrt mul+add]",
                    rcl_dtype_name(dt), extra ? extra : "policy defaults", rt_device_name(dev));
  clReleaseKernel(k);
  clReleaseMemObject(ba);
  clReleaseMemObject(bb);
  clReleaseMemObject(bo);
  rcl_program_free(prog);
  free(a);
  free(b);
  free(got);
  free(want);
}

START_TEST(f32_ops_are_ieee) { run(_i, RCL_F32, NULL); }
END_TEST

START_TEST(f32_emulated_ops_are_ieee) {
  run(_i, RCL_F32, "-DRCL_EMULATE_F32_SUBNORMALS=1 -DRCL_EMULATE_F32_DIV_SQRT=1");
}
END_TEST

START_TEST(f64_ops_are_ieee) {
  if (!rcl_context_profile(rt_ctx(_i))->fp64) {
    rt_note("skip f64 prelude ops on %s: the device has no fp64", rt_device_name(_i));
    return;
  }
  run(_i, RCL_F64, NULL);
}
END_TEST

int main(void) {
  Suite *s = suite_create("prelude");
  rt_add_device_presence(s);
  TCase *tc = tcase_create("devices");
  rt_add_device_loop(tc, f32_ops_are_ieee);
  rt_add_device_loop(tc, f32_emulated_ops_are_ieee);
  rt_add_device_loop(tc, f64_ops_are_ieee);
  suite_add_tcase(s, tc);
  return rt_run(s);
}
