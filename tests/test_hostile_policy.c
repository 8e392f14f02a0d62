/* Hostile inputs to the reproducibility policy (docs/reliability.md, catalogue P1-P24): constructs that
 * used to slip past the source lint or the option check and change result bits (each test is named
 * after the bug it pins), and malformed sources (non-UTF-8, NUL bytes, megabyte lines, unterminated
 * comments) that must get an answer, not a crash. */
#include <stdio.h>
#include <stdlib.h>

#include "testlib.h"

static void lint_refuses(const char *src, const char *where, const char *needle) {
  int rc = rcl_policy_lint_source(src, strlen(src), "h.cl");
  ck_assert_msg(rc == RCL_ERR_POLICY, "accepted:\n%s", src);
  ck_assert_msg(strstr(rcl_error_last(), where) != NULL, "\"%s\" lacks \"%s\"", rcl_error_last(), where);
  ck_assert_msg(strstr(rcl_error_last(), needle) != NULL, "\"%s\" lacks \"%s\"", rcl_error_last(), needle);
}

static void lint_accepts(const char *src) {
  int rc = rcl_policy_lint_source(src, strlen(src), "h.cl");
  ck_assert_msg(rc == 0, "refused: %s\nsource:\n%s", rcl_error_last(), src);
}

#define FMA_KERNEL "__kernel void k(__global float *o, __global const float *i) { o[0] = i[0] * i[1] + i[2]; }\n"

/* Bug: '#pragma clang fp contract(fast)' (clang's own pragma) re-enabled contraction after the
 * prelude's FP_CONTRACT OFF; PoCL then fused a*b+c. Found by reading the lint against clang's pragmas. */
START_TEST(bug_lint_clang_fp_pragma) {
  lint_refuses("#pragma clang fp contract(fast)\n" FMA_KERNEL, "h.cl:1:", "clang fp contract(fast)");
  lint_refuses("__kernel void k() {\n  #pragma clang fp contract(on)\n}\n", "h.cl:2:", "contraction");
  lint_refuses("#pragma clang fp reassociate(on)\n", "h.cl:1:", "re-association");
  lint_refuses("#pragma clang fp eval_method(extended)\n", "h.cl:1:", "precision");
  lint_refuses("#pragma float_control(precise, off)\n", "h.cl:1:", "IEEE");
  lint_accepts("#pragma clang fp contract(off)\n#pragma clang fp exceptions(ignore)\n#pragma float_control(push)\n");
}
END_TEST

/* Bug: '#pragma STDC FP_CONTRACT ON' and '#pragma STDC FENV_ROUND' were not checked. */
START_TEST(bug_lint_stdc_pragmas) {
  lint_refuses("#pragma STDC FP_CONTRACT ON\n", "h.cl:1:", "contraction");
  lint_refuses("#pragma STDC FP_CONTRACT DEFAULT\n", "h.cl:1:", "contraction");
  lint_refuses("#pragma STDC FENV_ROUND FE_UPWARD\n", "h.cl:1:", "rounding mode");
  lint_accepts("#pragma STDC FP_CONTRACT OFF\n#pragma STDC FENV_ROUND FE_TONEAREST\n#pragma STDC FENV_ACCESS ON\n");
}
END_TEST

/* Bug: the _Pragma operator is a pragma too: _Pragma("OPENCL FP_CONTRACT ON") passed. */
START_TEST(bug_lint_pragma_operator) {
  lint_refuses("_Pragma(\"OPENCL FP_CONTRACT ON\")\n" FMA_KERNEL, "h.cl:1:", "_Pragma(\"OPENCL FP_CONTRACT ON\")");
  lint_refuses("\n#define FAST _Pragma ( \"clang fp contract(fast)\" )\n", "h.cl:2:", "contraction");
  lint_accepts("_Pragma(\"unroll\") _Pragma(\"OPENCL FP_CONTRACT OFF\")\n");
}
END_TEST

/* Bug: a comment or a continuation line inside the directive hid it: the lint compared the raw text,
 * comment included, while the compiler sees "OPENCL FP_CONTRACT ON". */
START_TEST(bug_lint_pragma_split_by_comment_or_continuation) {
  lint_refuses("#pragma OPENCL /* x */ FP_CONTRACT ON\n", "h.cl:1:", "contraction");
  lint_refuses("#pragma OPENCL \\\nFP_CONTRACT ON\n", "h.cl:1:", "contraction");
  lint_refuses("# /*\n*/ pragma OPENCL FP_CONTRACT ON\n", "h.cl:1:", "contraction");
  /* line numbers after continuation lines are those of the physical lines */
  lint_refuses("#define A \\\n  1\nfloat f(float x) { return exp(x); }\n", "h.cl:3:", "exp()");
  lint_refuses("/* one\n two */ float f(float x) {\n return exp(x); }\n", "h.cl:3:", "exp()");
}
END_TEST

/* Bug: a call written "mad\n(", with a comment before its parenthesis, or as "(mad)(" was not seen. */
START_TEST(bug_lint_call_across_newline_or_comment) {
  lint_refuses("float f(float a) { return mad\n(a, a, a); }\n", "h.cl:1:", "mad()");
  lint_refuses("float f(float a) { return mad/**/(a, a, a); }\n", "h.cl:1:", "mad()");
  lint_refuses("float f(float a) { return (exp)(a); }\n", "h.cl:1:", "exp()");
  lint_refuses("float f(float a) { return ex\\\np(a); }\n", "h.cl:1:", "exp()");
  lint_accepts("float f(float length, float dot) { return length * dot + 1.5e-3f; }\n");
}
END_TEST

/* Bug: directive lines were skipped whole, so '#define F(a,b,c) mad(a,b,c)' passed. */
START_TEST(bug_lint_define_body) {
  lint_refuses("#define F(a, b, c) mad(a, b, c)\nfloat f(float x) { return F(x, x, x); }\n", "h.cl:1:", "mad()");
  lint_refuses("#define F native_exp\n", "h.cl:1:", "native_exp()");
  lint_refuses("#define G(x) (sin)(x)\n", "h.cl:1:", "sin()");
  lint_accepts("#define LEN 4\n#define length(v) ((v) * 2)\n#define SQ(x) ((x) * (x))\n#define K sqrt(2.0f)\n");
}
END_TEST

/* Bug: build options could smuggle an inexact builtin in through a macro ("-DF=mad"). */
START_TEST(bug_options_macro_to_inexact) {
  rcl_context *c = rt_ctx(_i);
  rcl_program_options po = RCL_PROGRAM_OPTIONS_INIT;
  po.flags = RCL_PROGRAM_PRELUDE_OPS;
  rcl_program *p = NULL;
  const char *src = "__kernel void k(__global float *o) { o[0] = F(o[0], o[1], o[2]); }\n";
  static const char *bad[] = {"-DF=mad", "-D F=mad", "-DX=1 -DF(a,b,c)=native_exp(a)", "-DF=half_sqrt"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    po.options = bad[i];
    rt_fails(rcl_program_build(&p, c, src, 0, &po), RCL_ERR_POLICY, "whose result bits OpenCL does not fix");
  }
  /* With inexact builtins allowed explicitly, the same options build. */
  po.options = "-DF=mad";
  po.flags |= RCL_PROGRAM_ALLOW_INEXACT_BUILTINS;
  rt_ok(rcl_program_build(&p, c, src, 0, &po));
  rcl_program_free(p);
}
END_TEST

/* Bug: -U and -D of the policy's own names were accepted, so "-URCL_EMULATE_F32_SUBNORMALS" switched
 * the exact fp32 emulation off on Rusticl while the build still claimed reproducible mode. */
START_TEST(bug_options_reserved_rcl_names) {
  static const char *bad[] = {"-URCL_EMULATE_F32_SUBNORMALS", "-DRCL_REPRODUCIBLE=0", "-U RCL_EMULATE_F32_DIV_SQRT",
                              "-Drcl_add_f32(a,b)=((a)+(b))",
                              /* found by fuzz_policy_options: a lone -U used to swallow the next option */
                              "-U -URCL_EMULATE_F32_SUBNORMALS", "-D\n-Drcl_x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = rcl_policy_check_options(bad[i]);
    ck_assert_msg(rc == RCL_ERR_POLICY, "%s accepted", bad[i]);
    ck_assert_msg(strstr(rcl_error_last(), "reserved") != NULL, "%s: %s", bad[i], rcl_error_last());
  }
  rt_ok(rcl_policy_check_options("-DRCLX=1 -DMY_RCL_=2 -UFOO -D -U"));
  /* Defining an emulation switch only forces the exact path (same bits): allowed (test_prelude uses it). */
  rt_ok(rcl_policy_check_options("-DRCL_EMULATE_F32_SUBNORMALS=1 -DRCL_EMULATE_F32_DIV_SQRT"));
  rt_fails(rcl_policy_check_options("-DRCL_EMULATE_F32_SUBNORMALSX=1"), RCL_ERR_POLICY, "reserved");
}
END_TEST

/* Newer compiler spellings of the refused options (clang's -ffp-model=fast and friends, LLVM's own
 * -fp-contract after -mllvm) are refused like the OpenCL ones. */
START_TEST(compiler_spellings_refused) {
  static const char *bad[] = {"-ffp-model=fast", "-fassociative-math", "-freciprocal-math", "-fno-honor-nans",
                              "-fno-honor-infinities", "-fapprox-func", "-fdenormal-fp-math=preserve-sign",
                              "-mllvm -fp-contract=fast", "-menable-unsafe-fp-math", "-Xclang -ffp-contract=fast"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = rcl_policy_check_options(bad[i]);
    ck_assert_msg(rc == RCL_ERR_POLICY, "%s accepted", bad[i]);
  }
}
END_TEST

/* End to end on every device: the bypasses above are refused by rcl_program_build in reproducible
 * mode; in native mode (no policy) the pragma really changes the bits where the device fuses. */
START_TEST(bypasses_refused_on_device) {
  static const char *srcs[] = {"#pragma clang fp contract(fast)\n" FMA_KERNEL, "#pragma STDC FP_CONTRACT ON\n" FMA_KERNEL,
                               "_Pragma(\"OPENCL FP_CONTRACT ON\")\n" FMA_KERNEL,
                               "#pragma OPENCL /**/ FP_CONTRACT ON\n" FMA_KERNEL};
  rcl_program_options po = RCL_PROGRAM_OPTIONS_INIT;
  po.flags = RCL_PROGRAM_PRELUDE_OPS;
  rcl_program *p = NULL;
  for (size_t i = 0; i < sizeof srcs / sizeof srcs[0]; i++) {
    rt_fails(rcl_program_build(&p, rt_ctx(_i), srcs[i], 0, &po), RCL_ERR_POLICY, "user.cl:1:");
    /* ALLOW_INEXACT_BUILTINS does not let a contraction pragma through */
    po.flags |= RCL_PROGRAM_ALLOW_INEXACT_BUILTINS;
    rt_fails(rcl_program_build(&p, rt_ctx(_i), srcs[i], 0, &po), RCL_ERR_POLICY, "user.cl:1:");
    po.flags = RCL_PROGRAM_PRELUDE_OPS;
  }
  /* What the pragma would do: in native mode the first source runs; a*b+c with a*b = 1 - 2^-46 and
   * c = -1 is 0 unfused and -2^-46 fused. */
  rt_ok(rcl_program_build(&p, rt_ctx_native(_i), srcs[0], 0, &po));
  cl_kernel k;
  rt_ok(rcl_program_create_kernel(&k, p, "k"));
  float in[3] = {1.0f + 0x1p-23f, 1.0f - 0x1p-23f, -1.0f}, out = 1;
  cl_int err;
  cl_context cc = rcl_context_cl_context(rt_ctx_native(_i));
  cl_command_queue q = rcl_context_cl_queue(rt_ctx_native(_i));
  cl_mem mo = clCreateBuffer(cc, CL_MEM_READ_WRITE, 4, NULL, &err);
  cl_mem mi = clCreateBuffer(cc, CL_MEM_COPY_HOST_PTR, sizeof in, in, &err);
  clSetKernelArg(k, 0, sizeof mo, &mo);
  clSetKernelArg(k, 1, sizeof mi, &mi);
  size_t one = 1;
  ck_assert_int_eq(clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL), CL_SUCCESS);
  ck_assert_int_eq(clEnqueueReadBuffer(q, mo, CL_TRUE, 0, 4, &out, 0, NULL, NULL), CL_SUCCESS);
  rt_note("%s: native build with '#pragma clang fp contract(fast)': a*b+c = %a (%s)", rt_device_name(_i), out,
          out != 0 ? "fused: the pragma changes bits here" : "not fused on this device");
  ck_assert(out == 0.0f || out == -0x1p-46f);
  clReleaseMemObject(mo);
  clReleaseMemObject(mi);
  clReleaseKernel(k);
  rcl_program_free(p);
}
END_TEST

/* Malformed sources get an answer (accept or a located refusal), never a crash or an over-read; the
 * buffers are exactly as long as the source, so ASan and valgrind see any read past the end. */
static int lint_exact(const char *data, size_t len) {
  char *buf = malloc(len ? len : 1);
  memcpy(buf, data, len);
  int rc = rcl_policy_lint_source(buf, len, "h.cl");
  free(buf);
  return rc;
}

START_TEST(malformed_sources) {
  /* non-UTF-8 bytes, inside and outside literals */
  static const char bin[] = "\xff\xfe\x80 float f(float x) { return x; } /* \xc3\x28 */ \"\xed\xa0\x80\"\n";
  ck_assert_int_eq(lint_exact(bin, sizeof bin - 1), 0);
  static const char bin_exp[] = "\xff\xfe\n\x80\x81 exp(1.0f)";
  ck_assert_int_eq(lint_exact(bin_exp, sizeof bin_exp - 1), RCL_ERR_POLICY);
  ck_assert_ptr_nonnull(strstr(rcl_error_last(), "h.cl:2:"));
  /* embedded NUL bytes: the length, not the terminator, bounds the source */
  static const char nul[] = "float f(float x)\0{ return exp(x); }";
  ck_assert_int_eq(lint_exact(nul, sizeof nul - 1), RCL_ERR_POLICY);
  /* unterminated comment, string, character literal, directive, _Pragma, at the very end */
  static const char *const tails[] = {"/* never closed", "\"never closed", "'x", "#pragma OPENCL FP_CONTRACT",
                                      "_Pragma(\"OPENCL FP_CONTRACT ON", "_Pragma(", "mad", "x \\", "#", "/", "exp ("};
  for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
    int rc = lint_exact(tails[i], strlen(tails[i]));
    ck_assert_msg(rc == 0 || rc == RCL_ERR_POLICY, "\"%s\": %d", tails[i], rc);
  }
  ck_assert_int_eq(lint_exact("exp (", 5), RCL_ERR_POLICY);
  ck_assert_int_eq(lint_exact("", 0), 0);
  /* a 4 MiB line, and 1M lines: linear time, right line number */
  size_t big = (size_t)4 << 20;
  char *s = malloc(big + 16);
  memset(s, 'a', big);
  memcpy(s + big, " + exp(x)", 9);
  ck_assert_int_eq(lint_exact(s, big + 9), RCL_ERR_POLICY);
  ck_assert_ptr_nonnull(strstr(rcl_error_last(), "h.cl:1:"));
  memset(s, '\n', (size_t)1 << 20);
  memcpy(s + ((size_t)1 << 20), "exp(x)", 6);
  ck_assert_int_eq(lint_exact(s, ((size_t)1 << 20) + 6), RCL_ERR_POLICY);
  ck_assert_ptr_nonnull(strstr(rcl_error_last(), "h.cl:1048577:"));
  /* a directive longer than the pragma buffer */
  memcpy(s, "#pragma clang fp ", 17);
  memset(s + 17, 'x', 2000);
  memcpy(s + 2017, "\n", 1);
  ck_assert_int_eq(lint_exact(s, 2018), RCL_ERR_POLICY);
  ck_assert_ptr_nonnull(strstr(rcl_error_last(), "too long to check"));
  free(s);
  rt_fails(rcl_policy_lint_source(NULL, 5, "x.cl"), RCL_ERR_INVALID_ARG, "NULL source");
}
END_TEST

START_TEST(malformed_options) {
  static const char *const ok[] = {"", "   ", "\t\n", "-D", "-U", "-D ", "-I", "-DX=\xff\xfe", "-cl-std=CL1.2 -w"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) rt_ok(rcl_policy_check_options(ok[i]));
  /* a 1 MiB option string of harmless defines, then a refused one at the very end */
  size_t n = (size_t)1 << 20;
  char *s = malloc(n + 32);
  for (size_t i = 0; i < n; i += 8) memcpy(s + i, "-DAB=1  ", 8);
  strcpy(s + n, "-cl-mad-enable");
  rt_fails(rcl_policy_check_options(s), RCL_ERR_POLICY, "-cl-mad-enable");
  free(s);
}
END_TEST

int main(void) {
  Suite *s = suite_create("hostile_policy");
  TCase *host = tcase_create("host");
  tcase_add_test(host, bug_lint_clang_fp_pragma);
  tcase_add_test(host, bug_lint_stdc_pragmas);
  tcase_add_test(host, bug_lint_pragma_operator);
  tcase_add_test(host, bug_lint_pragma_split_by_comment_or_continuation);
  tcase_add_test(host, bug_lint_call_across_newline_or_comment);
  tcase_add_test(host, bug_lint_define_body);
  tcase_add_test(host, bug_options_reserved_rcl_names);
  tcase_add_test(host, compiler_spellings_refused);
  tcase_add_test(host, malformed_sources);
  tcase_add_test(host, malformed_options);
  suite_add_tcase(s, host);
  rt_add_device_presence(s);
  TCase *dev = tcase_create("devices");
  rt_add_device_loop(dev, bug_options_macro_to_inexact);
  rt_add_device_loop(dev, bypasses_refused_on_device);
  suite_add_tcase(s, dev);
  return rt_run(s);
}
