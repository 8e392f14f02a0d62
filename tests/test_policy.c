/* The reproducibility policy: refused build options, the source lint (also over every kernel of cl/),
 * and building the caller's own programs under the policy on every device: options, build logs, the
 * prelude requirement on devices without IEEE fp32 guarantees, and FP_CONTRACT OFF taking effect. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "testlib.h"

START_TEST(forbidden_options_refused) {
  static const char *bad[] = {"-cl-mad-enable", "-cl-fast-relaxed-math", "-cl-unsafe-math-optimizations",
                              "-cl-finite-math-only", "-cl-no-signed-zeros", "-cl-denorms-are-zero", "-ffast-math",
                              "-ffp-contract=fast", "-ffp-contract=on", "-fp-relaxed", "-fpc"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char opts[128];
    snprintf(opts, sizeof opts, "-DX=1  %s -cl-std=CL1.2", bad[i]);
    int rc = rcl_policy_check_options(opts);
    ck_assert_msg(rc == RCL_ERR_POLICY, "%s accepted", bad[i]);
    ck_assert_msg(strstr(rcl_error_last(), bad[i]) != NULL, "message \"%s\" does not name %s", rcl_error_last(), bad[i]);
  }
  rt_ok(rcl_policy_check_options(NULL));
  rt_ok(rcl_policy_check_options(""));
  rt_ok(rcl_policy_check_options("-DFOO=1 -cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt -I /tmp -cl-mad"));
}
END_TEST

START_TEST(lint_finds_inexact_constructs) {
  static const struct {
    const char *src;
    int line;
  } bad[] = {{"__kernel void k(__global float *a) {\n  a[0] = exp(a[1]);\n}\n", 2},
             {"float f(float x) { return native_sin (x); }", 1},
             {"\n\nfloat f(float x, float y, float z) { return mad(x, y, z); }", 3},
             {"/* ok */\n#pragma OPENCL FP_CONTRACT ON\n", 2},
             {"#  pragma   OPENCL  FP_CONTRACT   DEFAULT\n", 1},
             {"float f(float4 a) { return length(a); }\n", 1},
             {"float f(float a) { return half_sqrt(a); }\n", 1}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = rcl_policy_lint_source(bad[i].src, strlen(bad[i].src), "t.cl");
    ck_assert_msg(rc == RCL_ERR_POLICY, "case %zu accepted", i);
    char where[32];
    snprintf(where, sizeof where, "t.cl:%d:", bad[i].line);
    ck_assert_msg(strstr(rcl_error_last(), where), "case %zu: \"%s\" lacks %s", i, rcl_error_last(), where);
  }
  static const char *good[] = {
      "float f(float x) { return sqrt(x) + fabs(x) + fma(x, x, x); }  // exp(x) in a comment\n",
      "/* mad(a,b,c) */ const char *s = \"exp(1)\";\n#pragma OPENCL FP_CONTRACT OFF\n",
      "float explode(float x) { return x; } float g(float half_width) { return explode(half_width); }\n",
      "int f(int a, int b, int c) { return mad24(a, b, c) + mad_hi(a, b, c); }\n"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    int rc = rcl_policy_lint_source(good[i], strlen(good[i]), "ok.cl");
    ck_assert_msg(rc == 0, "good case %zu refused: %s", i, rcl_error_last());
  }
}
END_TEST

/* reprocl's own kernels obey the policy they impose. */
START_TEST(library_kernels_pass_the_lint) {
  const char *dir = REPROCL_SOURCE_DIR "/cl";
  DIR *d = opendir(dir);
  ck_assert_msg(d != NULL, "cannot open %s", dir);
  struct dirent *e;
  size_t checked = 0;
  while ((e = readdir(d)) != NULL) {
    size_t l = strlen(e->d_name);
    if (l < 4 || strcmp(e->d_name + l - 3, ".cl")) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char *buf = malloc(1 << 20);
    size_t n = fread(buf, 1, 1 << 20, f);
    fclose(f);
    int rc = rcl_policy_lint_source(buf, n, e->d_name);
    free(buf);
    ck_assert_msg(rc == 0, "%s", rcl_error_last());
    checked++;
  }
  closedir(d);
  ck_assert_uint_ge(checked, 5);
}
END_TEST

static const char user_src[] =
    "__kernel void fma_probe(__global const float *a, __global const float *b, __global const float *c,\n"
    "                        __global float *o) {\n"
    "  size_t i = get_global_id(0);\n"
    "  o[i] = a[i] * b[i] + c[i];\n"
    "}\n";

/* Plain a*b+c in the caller's kernel: two roundings under the policy; native mode may fuse it. */
static size_t fused_count(rcl_context *c, int *ran) {
  rcl_program_options po = RCL_PROGRAM_OPTIONS_INIT;
  rcl_program *p;
  *ran = 0;
  int rc = rcl_program_build(&p, c, user_src, 0, &po);
  if (rc == RCL_ERR_UNSUPPORTED) return 0; /* devices without IEEE fp32 guarantees: see below */
  ck_assert_msg(rc == 0, "%s", rcl_error_last());
  size_t n = 100000;
  float *a = malloc(n * 4), *b = malloc(n * 4), *cc = malloc(n * 4), *o = malloc(n * 4);
  rt_fill(a, RCL_F32, n, "uniform", 1);
  rt_fill(b, RCL_F32, n, "uniform", 2);
  rt_fill(cc, RCL_F32, n, "uniform", 3);
  cl_int err;
  cl_context clc = rcl_context_cl_context(c);
  cl_mem m[4];
  float *h[4] = {a, b, cc, o};
  for (int i = 0; i < 4; i++) m[i] = clCreateBuffer(clc, i < 3 ? CL_MEM_COPY_HOST_PTR : 0, n * 4, i < 3 ? h[i] : NULL, &err);
  cl_kernel k;
  rt_ok(rcl_program_create_kernel(&k, p, "fma_probe"));
  for (int i = 0; i < 4; i++) clSetKernelArg(k, (cl_uint)i, sizeof(cl_mem), &m[i]);
  cl_command_queue q = rcl_context_cl_queue(c);
  ck_assert_int_eq(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL), CL_SUCCESS);
  clEnqueueReadBuffer(q, m[3], CL_TRUE, 0, n * 4, o, 0, NULL, NULL);
  size_t fused = 0;
  for (size_t i = 0; i < n; i++) {
    volatile float prod = a[i] * b[i];
    float two = prod + cc[i];
    fused += memcmp(&two, &o[i], 4) != 0;
  }
  for (int i = 0; i < 4; i++) clReleaseMemObject(m[i]);
  clReleaseKernel(k);
  rcl_program_free(p);
  free(a);
  free(b);
  free(cc);
  free(o);
  *ran = 1;
  return fused;
}

START_TEST(fp_contract_off_takes_effect) {
  int ran;
  size_t repro = fused_count(rt_ctx(_i), &ran);
  if (!ran) {
    rt_note("plain-operator user kernel refused on %s (no IEEE fp32 guarantee), as required", rt_device_name(_i));
    return;
  }
  ck_assert_msg(repro == 0, "%zu of 100000 a*b+c results on %s are not two roundings under the policy", repro,
                rt_device_name(_i));
  size_t native = fused_count(rt_ctx_native(_i), &ran);
  const rcl_device_profile *p = rcl_context_profile(rt_ctx(_i));
  rt_note("native build on %s: %zu of 100000 a*b+c results fused", rt_device_name(_i), native);
  /* PoCL contracts by default where the CPU has FMA (measured); the policy exists because of it. */
  if (strstr(p->platform_name, "Portable Computing Language") && p->fp32_fma)
    ck_assert_msg(native > 0, "PoCL's native build no longer contracts a*b+c: docs/contracts.md must be updated");
}
END_TEST

START_TEST(user_program_policy) {
  rcl_context *c = rt_ctx(_i);
  const rcl_device_profile *p = rcl_context_profile(c);
  rcl_program *prog = NULL;
  rcl_program_options po = RCL_PROGRAM_OPTIONS_INIT;
  const char *ok_src = "__kernel void k(__global float *a) { a[0] = rcl_mul_f32(a[0], 2.0f); }\n";
  po.flags = RCL_PROGRAM_PRELUDE_OPS;
  rt_ok(rcl_program_build(&prog, c, ok_src, 0, &po));
  ck_assert_ptr_nonnull(rcl_program_cl(prog));
  ck_assert_msg(strstr(rcl_program_build_options(prog), "-DRCL_REPRODUCIBLE=1") != NULL, "%s",
                rcl_program_build_options(prog));
  if (p->fp32_correctly_rounded_div_sqrt)
    ck_assert_ptr_nonnull(strstr(rcl_program_build_options(prog), "-cl-fp32-correctly-rounded-divide-sqrt"));
  else
    ck_assert_ptr_nonnull(strstr(rcl_program_build_options(prog), "-DRCL_EMULATE_F32_DIV_SQRT=1"));
  cl_kernel k;
  rt_fails(rcl_program_create_kernel(&k, prog, "nope"), RCL_ERR_OPENCL, "CL_INVALID_KERNEL_NAME");
  rcl_program_free(prog);
  /* Refused option, in reproducible mode only. */
  po.options = "-cl-fast-relaxed-math";
  rt_fails(rcl_program_build(&prog, c, ok_src, 0, &po), RCL_ERR_POLICY, "-cl-fast-relaxed-math");
  rt_ok(rcl_program_build(&prog, rt_ctx_native(_i), ok_src, 0, &po));
  rcl_program_free(prog);
  /* A compile error carries the build log, with the caller's file name and line. */
  po.options = NULL;
  po.name = "broken.cl";
  const char *broken = "__kernel void k(__global float *a) {\n  a[0] = undefined_thing;\n}\n";
  rt_fails(rcl_program_build(&prog, c, broken, 0, &po), RCL_ERR_BUILD, "broken.cl");
  ck_assert_msg(strstr(rcl_error_last(), "undefined_thing") != NULL, "build log missing: %s", rcl_error_last());
  /* The lint runs on the caller's source; the flag lifts it. */
  const char *inexact = "__kernel void k(__global float *a) { a[0] = exp(a[0]); }\n";
  rt_fails(rcl_program_build(&prog, c, inexact, 0, &po), RCL_ERR_POLICY, "exp()");
  po.flags |= RCL_PROGRAM_ALLOW_INEXACT_BUILTINS;
  rt_ok(rcl_program_build(&prog, c, inexact, 0, &po));
  rcl_program_free(prog);
  /* Without the prelude-ops promise, a device lacking IEEE fp32 guarantees refuses plain operators. */
  po.flags = 0;
  const char *plain = "__kernel void k(__global float *a) { a[0] = a[0] / 3.0f; }\n";
  if (p->fp32_emulate_subnormals || p->fp32_emulate_div_sqrt) {
    rt_fails(rcl_program_build(&prog, c, plain, 0, &po), RCL_ERR_UNSUPPORTED, "RCL_PROGRAM_PRELUDE_OPS");
  } else {
    rt_ok(rcl_program_build(&prog, c, plain, 0, &po));
    rcl_program_free(prog);
  }
  po.version = 7;
  rt_fails(rcl_program_build(&prog, c, plain, 0, &po), RCL_ERR_INVALID_ARG, "version");
  rt_fails(rcl_program_build(&prog, c, NULL, 0, NULL), RCL_ERR_INVALID_ARG, "NULL");
}
END_TEST

int main(void) {
  Suite *s = suite_create("policy");
  TCase *host = tcase_create("host");
  tcase_add_test(host, forbidden_options_refused);
  tcase_add_test(host, lint_finds_inexact_constructs);
  tcase_add_test(host, library_kernels_pass_the_lint);
  suite_add_tcase(s, host);
  rt_add_device_presence(s);
  TCase *tc = tcase_create("devices");
  rt_add_device_loop(tc, fp_contract_off_takes_effect);
  rt_add_device_loop(tc, user_program_policy);
  suite_add_tcase(s, tc);
  return rt_run(s);
}
