/* Tests of the compiled-code audit: each format's reader on fixtures whose findings are counted by hand
 * (PTX, LLVM IR, SPIR-V words, PoCL containers), malformed inputs, opaque binaries, and on every device
 * the library's own programs: clean in reproducible mode; on PoCL contracted (llvm.fmuladd) in native
 * mode; on Rusticl read as front-end SPIR-V only. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "audit/audit_internal.h"
#include "testlib.h"

#define DATA REPROCL_SOURCE_DIR "/tests/data/audit/"

static char *slurp(size_t *len, const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  ck_assert(b && fread(b, 1, (size_t)n, f) == (size_t)n);
  b[n] = '\0';
  fclose(f);
  *len = (size_t)n;
  return b;
}

static const rcl_audit_kernel *kernel(const rcl_audit_report *r, const char *name) {
  for (size_t i = 0; i < r->nkernels; i++)
    if (!strcmp(r->kernels[i].name, name)) return &r->kernels[i];
  ck_abort_msg("no kernel %s in the report (%zu kernels)", name, r->nkernels);
  return NULL;
}

/* The finding of k whose text is what (and, if where is given, in that function), or NULL. */
static const rcl_audit_finding *finding(const rcl_audit_kernel *k, const char *what, const char *where) {
  for (size_t i = 0; i < k->nfindings; i++)
    if (!strcmp(k->findings[i].what, what) && (!where || !strcmp(k->findings[i].where, where))) return &k->findings[i];
  return NULL;
}

static void expect_finding(const rcl_audit_kernel *k, const char *what, const char *where, unsigned classes,
                           size_t count) {
  const rcl_audit_finding *f = finding(k, what, where);
  ck_assert_msg(f != NULL, "%s: no finding \"%s\" in %s", k->name, what, where ? where : "(any)");
  ck_assert_msg(f->classes == classes, "%s: \"%s\" has classes 0x%x, expected 0x%x", k->name, what, f->classes,
                classes);
  ck_assert_msg(f->count == count, "%s: \"%s\" counted %zu times, expected %zu", k->name, what, f->count, count);
}

static void expect_counts(const rcl_audit_kernel *k, size_t fma, size_t approx, size_t ftz, size_t fast) {
  ck_assert_msg(k->count[0] == fma && k->count[1] == approx && k->count[2] == ftz && k->count[3] == fast,
                "%s: counts fma %zu approx %zu ftz %zu fast-math %zu, expected %zu %zu %zu %zu", k->name, k->count[0],
                k->count[1], k->count[2], k->count[3], fma, approx, ftz, fast);
}

/* ---- PTX --------------------------------------------------------------------------------------------- */

START_TEST(ptx_fixture) {
  size_t len;
  char *ptx = slurp(&len, DATA "nvidia-sample.ptx");
  rcl_audit_report *r;
  rt_ok(rcl_audit_binary(&r, ptx, len + 1, NULL)); /* with the trailing NUL, as NVIDIA returns it */
  ck_assert_int_eq(r->format, RCL_BINARY_PTX);
  ck_assert_int_eq(r->depth, RCL_AUDIT_DEPTH_ASSEMBLY);
  ck_assert_uint_eq(r->nkernels, 2); /* the .func is not a kernel */
  ck_assert_str_eq(r->kernels[0].name, "rcl_sample_native");
  const rcl_audit_kernel *k = kernel(r, "rcl_sample_native");
  expect_finding(k, "fma.rn.f32", "rcl_sample_native", RCL_AUDIT_FMA, 2);
  expect_finding(k, "div.full.f32 (2 ulp)", "rcl_sample_native", RCL_AUDIT_APPROX, 1);
  expect_finding(k, "sqrt.approx.ftz.f32", "rcl_sample_norm", RCL_AUDIT_APPROX | RCL_AUDIT_FTZ, 1);
  expect_finding(k, "add.f32 (after a mul without a rounding modifier: ptxas may fuse them)", "rcl_sample_norm",
                 RCL_AUDIT_FMA, 1);
  ck_assert_uint_eq(k->nfindings, 4); /* not mad.lo.s32, nor anything in comments */
  expect_counts(k, 3, 2, 1, 0);
  k = kernel(r, "rcl_sample_reproducible");
  ck_assert_msg(k->nfindings == 0,
                "mul.rn/add.rn/div.rn/sqrt.rn/rcp.rn are correctly rounded, and a bare add after mul.rn is not fused, "
                "yet \"%s\" was found",
                k->nfindings ? k->findings[0].what : "");
  ck_assert(rcl_audit_report_has_findings(r));
  rcl_audit_report_free(r);
  /* without the NUL, too */
  rt_ok(rcl_audit_binary(&r, ptx, len, NULL));
  ck_assert_uint_eq(r->nkernels, 2);
  rcl_audit_report_free(r);
  free(ptx);
}
END_TEST

/* What a reader returns for text (the model it builds is dropped). */
static int parse(int (*reader)(rcl__audit_module *, const char *, size_t), const char *text) {
  rcl__audit_module m = {0};
  int rc = reader(&m, text, strlen(text));
  rcl__audit_module_free(&m);
  return rc;
}

START_TEST(ptx_malformed) {
  rt_fails(parse(rcl__audit_parse_ptx, ".version 8.4\n.target sm_90\n.entry k(\n)\n{\n\tadd.rn.f32 %f1, %f2, %f3;\n"),
           RCL_ERR_PARSE, "line 3: the body of k is not closed");
  rt_fails(parse(rcl__audit_parse_ptx, ".version 8.4\n.target sm_90\n}\n"), RCL_ERR_PARSE,
           "line 3: '}' without a function");
  rt_fails(parse(rcl__audit_parse_ptx, ".version 8.4\n.target sm_90\n.entry (\n)\n{\n}\n"), RCL_ERR_PARSE,
           "without a name");
  rt_fails(parse(rcl__audit_parse_ptx, ".version 8.4\n.target sm_90\n\n{\nret;\n}\n"), RCL_ERR_PARSE,
           "line 4: '{' outside a function");
  rt_fails(parse(rcl__audit_parse_ptx, ".entry k()\n{\n\tld.v2.f32 {%f1, %f2, [%rd1];\n}\n"), RCL_ERR_PARSE,
           "line 3: '{' is not closed");
  /* a well-formed module with nested blocks and a prototype */
  rcl__audit_module m = {0};
  const char *ok =
      ".version 8.4\n.target sm_90\n.extern .func foo(.param .b32 a);\n.entry k(\n.param .u64 p\n)\n"
      "{\n{\n.reg .b32 t;\ncall.uni foo, (t);\n}\n@%p1 bra $L1;\n$L1:\nfma.rn.f64 %fd1, %fd2, %fd3, %fd4;\n"
      "ex2.approx.ftz.f32 %f1, %f2;\nret;\n}\n";
  rt_ok(rcl__audit_parse_ptx(&m, ok, strlen(ok)));
  ck_assert_uint_eq(m.n, 1);
  ck_assert_uint_eq(m.fns[0].ncallees, 1);
  ck_assert_str_eq(m.fns[0].callees[0], "foo");
  ck_assert_uint_eq(m.fns[0].nhits, 2);
  ck_assert_str_eq(m.fns[0].hits[0].what, "fma.rn.f64");
  ck_assert_str_eq(m.fns[0].hits[1].what, "ex2.approx.ftz.f32");
  rcl__audit_module_free(&m);
}
END_TEST

/* ---- LLVM IR ------------------------------------------------------------------------------------------ */

START_TEST(llvm_fixture) {
  size_t len;
  char *ll = slurp(&len, DATA "pocl-sample.ll");
  rcl__audit_module m = {0};
  rt_ok(rcl__audit_parse_llvm(&m, ll, len));
  rcl_audit_report *r;
  rt_ok(rcl__audit_report_build(&r, &m, RCL_BINARY_BITCODE, RCL_AUDIT_DEPTH_IR, "fixture"));
  rcl__audit_module_free(&m);
  ck_assert_uint_eq(r->nkernels, 3);
  const rcl_audit_kernel *k = kernel(r, "rcl_sample_native");
  expect_finding(k, "call llvm.fmuladd.f32", "rcl_sample_native", RCL_AUDIT_FMA, 1);
  expect_finding(k, "fdiv !fpmath 2.5 ulp", "rcl_sample_native", RCL_AUDIT_APPROX, 1);
  expect_finding(k, "fmul fast", "helper_fast", RCL_AUDIT_FMA | RCL_AUDIT_APPROX | RCL_AUDIT_FAST_MATH, 1);
  expect_finding(k, "fadd contract", "helper_fast", RCL_AUDIT_FMA, 1);
  expect_finding(k, "call afn llvm.sqrt.f32", "helper_fast", RCL_AUDIT_APPROX, 1);
  expect_finding(k, "denormal-fp-math-f32=preserve-sign,preserve-sign", "helper_fast", RCL_AUDIT_FTZ, 1);
  expect_finding(k, "no-nans-fp-math=true", "helper_fast", RCL_AUDIT_FAST_MATH, 1);
  ck_assert_uint_eq(k->nfindings, 7);
  expect_counts(k, 3, 3, 1, 2);
  k = kernel(r, "rcl_sample_reproducible");
  ck_assert_msg(k->nfindings == 0, "plain fmul/fadd/fdiv and llvm.sqrt are exact, yet \"%s\" was found",
                k->nfindings ? k->findings[0].what : "");
  k = kernel(r, "rcl_sample_meta"); /* a kernel known by its !kernel_arg metadata */
  expect_finding(k, "call _Z3madfff", NULL, RCL_AUDIT_FMA, 1);
  expect_finding(k, "call _Z10native_expf", NULL, RCL_AUDIT_APPROX, 1);
  rcl_audit_report_free(r);
  free(ll);
}
END_TEST

START_TEST(llvm_malformed) {
  rt_fails(parse(rcl__audit_parse_llvm, "; x\ndefine void @k() {\n  ret void\n"), RCL_ERR_PARSE,
           "line 2: the body of @k is not closed");
  rt_fails(parse(rcl__audit_parse_llvm, "define void @a() {\ndefine void @b() {\n}\n"), RCL_ERR_PARSE,
           "line 2: a definition inside the body of @a");
  rt_fails(parse(rcl__audit_parse_llvm, "define void () {\n}\n"), RCL_ERR_PARSE, "line 1: a definition without a name");
  /* quoted names, and a call whose callee is reached */
  rcl__audit_module m = {0};
  const char *ok = "define spir_kernel void @\"k 1\"() {\n  call void @h()\n  ret void\n}\n"
                   "define void @h() {\n  %x = fmul reassoc nsz float 1.0, 2.0 ; fast in a comment\n  ret void\n}\n";
  rt_ok(rcl__audit_parse_llvm(&m, ok, strlen(ok)));
  ck_assert_uint_eq(m.n, 2);
  ck_assert_str_eq(m.fns[0].name, "k 1");
  ck_assert(m.fns[0].is_kernel && !m.fns[1].is_kernel);
  ck_assert_str_eq(m.fns[0].callees[0], "h");
  ck_assert_uint_eq(m.fns[1].nhits, 1);
  ck_assert_str_eq(m.fns[1].hits[0].what, "fmul reassoc nsz");
  ck_assert_uint_eq(m.fns[1].hits[0].classes, RCL_AUDIT_FAST_MATH);
  rcl__audit_module_free(&m);
}
END_TEST

/* ---- SPIR-V -------------------------------------------------------------------------------------------- */

#define OP(op, wc) ((uint32_t)(wc) << 16 | (uint32_t)(op))
#define STR4(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)

/* A module with three kernels, written word by word: k_native (fma, an unprotected fmul+fadd with no
 * ContractionOff, an FPFastMathMode Fast fadd, an fp32 OpFDiv, native_exp, DenormFlushToZero, and a call
 * of helper, whose fp32 sqrt is approximate), k_repro (ContractionOff, fabs) and k_plain (fmul+fadd
 * without ContractionOff; one more fmul protected by NoContraction). */
/* clang-format off */
static const uint32_t spirv_words[] = {
    0x07230203, 0x00010000, 0, 50, 0,
    OP(17, 2), 6,                                                         /* OpCapability Kernel */
    OP(11, 5), 1, STR4('O', 'p', 'e', 'n'), STR4('C', 'L', '.', 's'), STR4('t', 'd', 0, 0),
    OP(14, 3), 2, 2,                                                      /* OpMemoryModel */
    OP(15, 6), 6, 10, STR4('k', '_', 'n', 'a'), STR4('t', 'i', 'v', 'e'), 0,
    OP(15, 5), 6, 20, STR4('k', '_', 'r', 'e'), STR4('p', 'r', 'o', 0),
    OP(15, 5), 6, 40, STR4('k', '_', 'p', 'l'), STR4('a', 'i', 'n', 0),
    OP(16, 3), 20, 31,                                                    /* ContractionOff */
    OP(16, 4), 10, 4460, 32,                                              /* DenormFlushToZero 32 */
    OP(5, 4), 30, STR4('h', 'e', 'l', 'p'), STR4('e', 'r', 0, 0),        /* OpName %30 "helper" */
    OP(71, 3), 24, 42,                                                    /* NoContraction */
    OP(71, 3), 43, 42,
    OP(71, 4), 13, 40, 0x10,                                              /* FPFastMathMode Fast */
    OP(22, 3), 2, 32,                                                     /* %2 float */
    OP(19, 2), 3,                                                         /* %3 void */
    OP(33, 3), 4, 3,                                                      /* %4 void() */
    OP(33, 4), 5, 2, 2,                                                   /* %5 float(float) */
    OP(43, 4), 2, 6, 0x3f800000,                                          /* %6 1.0f */
    /* helper */
    OP(54, 5), 2, 30, 0, 5, OP(55, 3), 2, 31, OP(248, 2), 32,
    OP(12, 6), 2, 33, 1, 61, 31,                                          /* sqrt */
    OP(254, 2), 33, OP(56, 1),
    /* k_native */
    OP(54, 5), 3, 10, 0, 4, OP(248, 2), 11,
    OP(133, 5), 2, 12, 6, 6,                                              /* fmul */
    OP(129, 5), 2, 13, 12, 6,                                             /* fadd (Fast) */
    OP(12, 8), 2, 14, 1, 26, 6, 6, 6,                                     /* fma */
    OP(136, 5), 2, 15, 14, 13,                                            /* fdiv */
    OP(57, 5), 2, 16, 30, 15,                                             /* call helper */
    OP(12, 6), 2, 17, 1, 83, 16,                                          /* native_exp */
    OP(253, 1), OP(56, 1),
    /* k_repro */
    OP(54, 5), 3, 20, 0, 4, OP(248, 2), 21,
    OP(133, 5), 2, 22, 6, 6, OP(129, 5), 2, 23, 22, 6, OP(133, 5), 2, 24, 23, 6,
    OP(12, 6), 2, 25, 1, 23, 24,                                          /* fabs: exact */
    OP(253, 1), OP(56, 1),
    /* k_plain */
    OP(54, 5), 3, 40, 0, 4, OP(248, 2), 44,
    OP(133, 5), 2, 41, 6, 6, OP(129, 5), 2, 42, 41, 6, OP(133, 5), 2, 43, 42, 6,
    OP(253, 1), OP(56, 1)};
/* clang-format on */

static void check_spirv_report(const rcl_audit_report *r) {
  ck_assert_int_eq(r->format, RCL_BINARY_SPIRV);
  ck_assert_int_eq(r->depth, RCL_AUDIT_DEPTH_FRONT_END);
  ck_assert_msg(strstr(r->note, "front-end IR only (final code opaque)") != NULL, "note: %s", r->note);
  ck_assert_uint_eq(r->nkernels, 3);
  const rcl_audit_kernel *k = kernel(r, "k_native");
  expect_finding(k, "OpExtInst fma", "k_native", RCL_AUDIT_FMA, 1);
  expect_finding(k, "OpFMul without ContractionOff (the driver may fuse)", "k_native", RCL_AUDIT_FMA, 1);
  expect_finding(k, "OpFAdd FPFastMathMode Fast", "k_native", RCL_AUDIT_FMA | RCL_AUDIT_APPROX | RCL_AUDIT_FAST_MATH,
                 1);
  expect_finding(k, "OpFDiv f32 (2.5 ulp allowed)", "k_native", RCL_AUDIT_APPROX, 1);
  expect_finding(k, "OpExtInst native_exp", "k_native", RCL_AUDIT_APPROX, 1);
  expect_finding(k, "DenormFlushToZero", "k_native", RCL_AUDIT_FTZ, 1);
  expect_finding(k, "OpExtInst sqrt f32 (3 ulp allowed)", "helper", RCL_AUDIT_APPROX, 1);
  expect_counts(k, 3, 4, 1, 1);
  k = kernel(r, "k_repro");
  ck_assert_msg(k->nfindings == 0, "k_repro: \"%s\"", k->nfindings ? k->findings[0].what : "");
  k = kernel(r, "k_plain");
  ck_assert_uint_eq(k->nfindings, 1);
  expect_finding(k, "OpFMul without ContractionOff (the driver may fuse)", "k_plain", RCL_AUDIT_FMA, 1);
}

START_TEST(spirv_words_fixture) {
  size_t n = sizeof spirv_words;
  rcl_audit_report *r;
  rt_ok(rcl_audit_binary(&r, spirv_words, n, NULL));
  check_spirv_report(r);
  rcl_audit_report_free(r);
  /* the other byte order */
  unsigned char *be = malloc(n);
  for (size_t i = 0; i < n / 4; i++)
    for (int b = 0; b < 4; b++) be[4 * i + (size_t)b] = (unsigned char)(spirv_words[i] >> (8 * (3 - b)));
  rt_ok(rcl_audit_binary(&r, be, n, NULL));
  check_spirv_report(r);
  rcl_audit_report_free(r);
  free(be);
  /* Rusticl's container: version, module size, binary type, module */
  uint32_t *rb = malloc(n + 12);
  rb[0] = 1;
  rb[1] = (uint32_t)n;
  rb[2] = 4;
  memcpy(rb + 3, spirv_words, n);
  rt_ok(rcl_audit_binary(&r, rb, n + 12, NULL));
  check_spirv_report(r);
  rcl_audit_report_free(r);
  /* malformed: cut short, a zero-length instruction, an impossible id bound */
  rt_fails(rcl_audit_binary(&r, spirv_words, n - 4, NULL), RCL_ERR_PARSE, "no OpFunctionEnd");
  rt_fails(rcl_audit_binary(&r, spirv_words, 4 * 10, NULL), RCL_ERR_PARSE, "word 7: an instruction runs past the end");
  memcpy(rb, spirv_words, n);
  rb[5] = OP(17, 0);
  rt_fails(rcl_audit_binary(&r, rb, n, NULL), RCL_ERR_PARSE, "word 5: an instruction of length 0");
  memcpy(rb, spirv_words, n);
  rb[3] = 0x7fffffff;
  rt_fails(rcl_audit_binary(&r, rb, n, NULL), RCL_ERR_PARSE, "word 3: the id bound");
  free(rb);
}
END_TEST

/* ---- containers and opaque binaries ------------------------------------------------------------------- */

/* "poclbin" + padding + an entry "/other" + the entry "/program.bc" holding body. */
static size_t pocl_container(unsigned char *out, const unsigned char *body, size_t n, uint32_t claimed) {
  size_t at = 0;
  memcpy(out, "poclbin\0\x5a\xfb\xb7\xc2\x84\x16\xed\x00", 16);
  at = 16;
  const char *names[] = {"/other", "/program.bc"};
  for (int e = 0; e < 2; e++) {
    uint32_t l = (uint32_t)strlen(names[e]);
    memcpy(out + at, &l, 4);
    memcpy(out + at + 4, names[e], l);
    at += 4 + l;
    uint32_t sz = e ? claimed : 3;
    memcpy(out + at, &sz, 4);
    at += 4;
    memcpy(out + at, e ? body : (const unsigned char *)"abc", e ? n : 3);
    at += e ? n : 3;
  }
  return at;
}

START_TEST(pocl_container_and_opaque) {
  unsigned char body[64] = "BC\xc0\xde not really bitcode";
  unsigned char bin[256];
  size_t n = pocl_container(bin, body, 32, 32);
  const unsigned char *bc;
  size_t bcs;
  rt_ok(rcl__audit_pocl_bitcode(&bc, &bcs, bin, n));
  ck_assert_uint_eq(bcs, 32);
  ck_assert(bc == bin + n - 32);
  n = pocl_container(bin, body, 32, 33);
  rt_fails(rcl__audit_pocl_bitcode(&bc, &bcs, bin, n), RCL_ERR_PARSE, "runs past the end");
  n = pocl_container(bin, (const unsigned char *)"ELF and more bytes", 16, 16);
  rt_fails(rcl__audit_pocl_bitcode(&bc, &bcs, bin, n), RCL_ERR_PARSE, "is not LLVM bitcode");
  rt_fails(rcl__audit_pocl_bitcode(&bc, &bcs, (const unsigned char *)"poclbin\0 nothing here", 21), RCL_ERR_NOT_FOUND,
           "no /program.bc entry");

  /* a container whose bitcode no disassembler reads: opaque, saying why */
  rcl_audit_report *r;
  rcl_audit_options o = RCL_AUDIT_OPTIONS_INIT;
  o.llvm_dis = "/nonexistent/llvm-dis";
  n = pocl_container(bin, body, 32, 32);
  rt_ok(rcl_audit_binary(&r, bin, n, &o));
  ck_assert_int_eq(r->format, RCL_BINARY_POCL);
  ck_assert_int_eq(r->depth, RCL_AUDIT_DEPTH_OPAQUE);
  ck_assert_msg(strstr(r->note, "/nonexistent/llvm-dis cannot be run") != NULL, "note: %s", r->note);
  rcl_audit_report_free(r);
  rt_ok(rcl_audit_binary(&r, bin, n, NULL)); /* the installed llvm-dis rejects the fake bitcode */
  ck_assert_int_eq(r->depth, RCL_AUDIT_DEPTH_OPAQUE);
  ck_assert_msg(strstr(r->note, "not read") != NULL && strstr(r->note, "llvm-dis") != NULL, "note: %s", r->note);
  rcl_audit_report_free(r);
  rt_ok(rcl_audit_binary(&r, "poclbin\0 no entry", 17, NULL));
  ck_assert_int_eq(r->depth, RCL_AUDIT_DEPTH_OPAQUE);
  ck_assert_msg(strstr(r->note, "without a /program.bc entry") != NULL, "note: %s", r->note);
  rcl_audit_report_free(r);

  /* machine code and unknown formats are opaque, never an error */
  unsigned char elf[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  elf[18] = 224; /* AMDGPU */
  rt_ok(rcl_audit_binary(&r, elf, sizeof elf, NULL));
  ck_assert_int_eq(r->format, RCL_BINARY_OPAQUE);
  ck_assert_int_eq(r->depth, RCL_AUDIT_DEPTH_OPAQUE);
  ck_assert_msg(strstr(r->note, "ELF object for AMDGPU") != NULL, "note: %s", r->note);
  ck_assert_uint_eq(r->nkernels, 0);
  ck_assert(!rcl_audit_report_has_findings(r));
  rcl_audit_report_free(r);
  rt_ok(rcl_audit_binary(&r, "some vendor format", 18, NULL));
  ck_assert_msg(strstr(r->note, "unrecognised binary") != NULL, "note: %s", r->note);
  rcl_audit_report_free(r);
  rt_ok(rcl_audit_binary(&r, NULL, 0, NULL));
  ck_assert_msg(strstr(r->note, "empty binary") != NULL, "note: %s", r->note);
  rcl_audit_report_free(r);
  /* PTX-like text without .version/.target is not taken for PTX */
  rt_ok(rcl_audit_binary(&r, ".entry k()\n{\n}\n", 15, NULL));
  ck_assert_int_eq(r->format, RCL_BINARY_OPAQUE);
  rcl_audit_report_free(r);

  /* bad arguments */
  rt_fails(rcl_audit_binary(NULL, "x", 1, NULL), RCL_ERR_INVALID_ARG, "NULL argument");
  rt_fails(rcl_audit_binary(&r, NULL, 3, NULL), RCL_ERR_INVALID_ARG, "NULL argument");
  o.version = 99;
  rt_fails(rcl_audit_binary(&r, "x", 1, &o), RCL_ERR_INVALID_ARG, "version is 99");
  rt_fails(rcl_audit_program(&r, NULL, NULL), RCL_ERR_INVALID_ARG, "NULL argument");
  rcl_audit_report_free(NULL);
}
END_TEST

/* ---- x86-64 machine code -------------------------------------------------------------------------------- */

/* The findings of tests/data/audit/x86-sample.s, counted by hand (its header lists them). */
static void check_x86_report(const rcl_audit_report *r) {
  ck_assert_uint_eq(r->nkernels, 4); /* helper is local; _ZGVeN16v_k_vec is k_vec's vectorized form */
  const rcl_audit_kernel *k = kernel(r, "k_native");
  expect_finding(k, "vfmadd231ss", "k_native", RCL_AUDIT_FMA, 1);
  expect_finding(k, "vfmadd213pd", "k_native", RCL_AUDIT_FMA, 1);
  expect_finding(k, "vfnmsub132sd", "k_native", RCL_AUDIT_FMA, 1);
  expect_finding(k, "ldmxcsr (sets FTZ and DAZ: 0x8040 OR-ed in)", "k_native", RCL_AUDIT_FTZ, 1);
  expect_finding(k, "vrcp14ps (approximate reciprocal)", "helper", RCL_AUDIT_APPROX, 1);
  expect_finding(k, "rsqrtss (approximate reciprocal square root)", "helper", RCL_AUDIT_APPROX, 1);
  expect_finding(k, "vldmxcsr (sets FTZ and DAZ: value 0x9fc0)", "helper", RCL_AUDIT_FTZ, 1);
  ck_assert_uint_eq(k->nfindings, 7);
  expect_counts(k, 3, 2, 2, 0);
  k = kernel(r, "k_clean");
  ck_assert_msg(k->nfindings == 0,
                "vmulss/vaddss/vdivss/vsqrtss, vpmaddwd, MXCSR = 0x1f80 and the saved MXCSR restored, yet \"%s\"",
                k->nfindings ? k->findings[0].what : "");
  k = kernel(r, "k_unknown");
  ck_assert_uint_eq(k->nfindings, 1);
  expect_finding(k, "ldmxcsr (value not visible: may set FTZ or DAZ)", "k_unknown", RCL_AUDIT_FTZ, 1);
  k = kernel(r, "k_vec");
  ck_assert_uint_eq(k->nfindings, 1);
  expect_finding(k, "vfmadd231ps", "_ZGVeN16v_k_vec", RCL_AUDIT_FMA, 1);
}

/* The objdump reader on the checked-in disassembly: runs everywhere, binutils or not. */
START_TEST(x86_objdump_fixture) {
  size_t len;
  char *text = slurp(&len, DATA "x86-sample.objdump");
  rcl__audit_module m = {0};
  rt_ok(rcl__audit_parse_objdump(&m, text, len));
  ck_assert_uint_eq(m.n, 6);
  long h = rcl__audit_fn_find(&m, "helper"), c = rcl__audit_fn_find(&m, "k_clean");
  long v = rcl__audit_fn_find(&m, "_ZGVeN16v_k_vec");
  ck_assert(h >= 0 && c >= 0 && v >= 0);
  ck_assert(!m.fns[h].is_kernel && !m.fns[v].is_kernel && m.fns[c].is_kernel);
  ck_assert_uint_eq(m.fns[c].ncallees, 1); /* through the relocation of movabs $outside_fn */
  ck_assert_str_eq(m.fns[c].callees[0], "outside_fn");
  rcl_audit_report *r;
  rt_ok(rcl__audit_report_build(&r, &m, RCL_BINARY_ELF, RCL_AUDIT_DEPTH_MACHINE, "fixture"));
  rcl__audit_module_free(&m);
  ck_assert_str_eq(r->kernels[0].name, "k_native");
  check_x86_report(r);
  rcl_audit_report_free(r);
  free(text);
  /* malformed: an instruction before any function, a function without a name */
  rt_fails(parse(rcl__audit_parse_objdump, "\nDisassembly of section .text:\n   0:\tret\n"), RCL_ERR_PARSE,
           "line 3: an instruction outside a function");
  rt_fails(parse(rcl__audit_parse_objdump, "0000000000000000 <>:\n"), RCL_ERR_PARSE,
           "line 1: a function without a name");
  /* without a symbol table (a stripped object) every function is a kernel */
  const char *bare = "0000000000000000 <a>:\n   0:\tvfmadd132ps %zmm1,%zmm2,%zmm0\n   6:\tjmp    10 <b+0x2>\n"
                     "000000000000000e <b>:\n   e:\tnop\n  10:\tret\n";
  rt_ok(rcl__audit_parse_objdump(&m, bare, strlen(bare)));
  ck_assert(m.n == 2 && m.fns[0].is_kernel && m.fns[1].is_kernel);
  ck_assert_uint_eq(m.fns[0].ncallees, 1);
  ck_assert_str_eq(m.fns[0].callees[0], "b");
  ck_assert_str_eq(m.fns[0].hits[0].what, "vfmadd132ps");
  rcl__audit_module_free(&m);
}
END_TEST

/* An Intel-style program binary: an ELF64 container (type 0xff04, x86-64) with sections .ocl.ir (fake
 * bitcode), name (the object) and the section name table. Returns its size; out must hold obj_size + 512. */
static size_t intel_container(unsigned char *out, const unsigned char *obj, size_t obj_size, const char *name) {
  static const char ir[] = "BC\xc0\xde fake";
  char names[64] = "";
  size_t nl = (size_t)snprintf(names + 1, sizeof names - 1, ".ocl.ir%c%s%c.shstrtab", 0, name, 0) + 2;
  size_t at = 64 + 4 * 64; /* header, 4 section headers */
  uint64_t off[4] = {0, at, at + sizeof ir, at + sizeof ir + obj_size}, size[4] = {0, sizeof ir, obj_size, nl};
  uint32_t nm[4] = {0, 1, 9, (uint32_t)(9 + strlen(name) + 1)};
  memset(out, 0, at);
  memcpy(out,
         "\x7f"
         "ELF\x02\x01",
         6);
  out[16] = 0x04, out[17] = 0xff, out[18] = 62;  /* e_type 0xff04, e_machine x86-64 */
  out[0x28] = 64, out[0x3a] = 64, out[0x3c] = 4; /* e_shoff, e_shentsize, e_shnum */
  out[0x3e] = 3;                                 /* e_shstrndx */
  for (int i = 0; i < 4; i++) {
    unsigned char *h = out + 64 + 64 * i;
    memcpy(h, &nm[i], 4);
    memcpy(h + 0x18, &off[i], 8);
    memcpy(h + 0x20, &size[i], 8);
  }
  memcpy(out + off[1], ir, sizeof ir);
  memcpy(out + off[2], obj, obj_size);
  memcpy(out + off[3], names, nl);
  return off[3] + nl;
}

/* Finding the machine code in ELF binaries (no tool needed). */
START_TEST(x86_elf_containers) {
  unsigned char obj[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1}, bin[640];
  obj[16] = 1; /* ET_REL */
  obj[18] = 62;
  const unsigned char *code;
  size_t cs;
  const char *from;
  rt_ok(rcl__audit_elf_code(&code, &cs, &from, obj, sizeof obj)); /* an object is its own code */
  ck_assert(code == obj && cs == sizeof obj);
  size_t n = intel_container(bin, obj, sizeof obj, ".ocl.obj");
  rt_ok(rcl__audit_elf_code(&code, &cs, &from, bin, n));
  ck_assert_uint_eq(cs, sizeof obj);
  ck_assert(!memcmp(code, obj, sizeof obj));
  ck_assert_msg(strstr(from, ".ocl.obj section of Intel's") != NULL, "from: %s", from);
  /* malformed containers */
  rt_fails(rcl__audit_elf_code(&code, &cs, &from, bin, 60), RCL_ERR_PARSE, "shorter than its 64-byte header");
  rt_fails(rcl__audit_elf_code(&code, &cs, &from, bin, 200), RCL_ERR_PARSE, "the section headers (4 of 64 bytes");
  rt_fails(rcl__audit_elf_code(&code, &cs, &from, bin, n - 30), RCL_ERR_PARSE, "the section name table");
  bin[64 + 64 * 2 + 0x20] = 0xff; /* .ocl.obj's size */
  rt_fails(rcl__audit_elf_code(&code, &cs, &from, bin, n), RCL_ERR_PARSE, "the .ocl.obj section (255 bytes");
  unsigned char not_obj[64] = "not an object";
  n = intel_container(bin, not_obj, sizeof not_obj, ".ocl.obj");
  rt_fails(rcl__audit_elf_code(&code, &cs, &from, bin, n), RCL_ERR_PARSE, "is not an x86-64 ELF object");
  /* no .ocl.obj: opaque, saying why */
  n = intel_container(bin, obj, sizeof obj, ".ocl.bin");
  rt_fails(rcl__audit_elf_code(&code, &cs, &from, bin, n), RCL_ERR_NOT_FOUND, "without an .ocl.obj section");
  rcl_audit_report *r;
  rt_ok(rcl_audit_binary(&r, bin, n, NULL));
  ck_assert_int_eq(r->format, RCL_BINARY_OPAQUE);
  ck_assert_int_eq(r->depth, RCL_AUDIT_DEPTH_OPAQUE);
  ck_assert_msg(strstr(r->note, "without an .ocl.obj section") != NULL, "note: %s", r->note);
  rcl_audit_report_free(r);
  rt_fails(rcl_audit_binary(&r, bin, 100, NULL), RCL_ERR_PARSE, "section headers");
}
END_TEST

/* The sample assembled (cc -c) and read through objdump, bare and in an Intel-style container. */
START_TEST(x86_object) {
  char dir[] = "/tmp/reprocl-test-audit-XXXXXX", cmd[512], path[128];
  ck_assert(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/x86-sample.o", dir);
  snprintf(cmd, sizeof cmd, "cc -c '%s' -o '%s' 2>/dev/null", DATA "x86-sample.s", path);
  if (system(cmd) != 0) {
    rt_note("skipped: cc -c cannot assemble tests/data/audit/x86-sample.s here (no x86-64 assembler)");
    rmdir(dir);
    return;
  }
  size_t len;
  char *obj = slurp(&len, path);
  unlink(path);
  rmdir(dir);
  rcl_audit_report *r;
  rt_ok(rcl_audit_binary(&r, obj, len, NULL));
  if (r->depth == RCL_AUDIT_DEPTH_OPAQUE) { /* binutils missing: said so, never clean */
    ck_assert_msg(strstr(r->note, "not read") && strstr(r->note, "objdump"), "note: %s", r->note);
    rt_note("skipped: %s", r->note);
  } else {
    ck_assert_int_eq(r->format, RCL_BINARY_ELF);
    ck_assert_int_eq(r->depth, RCL_AUDIT_DEPTH_MACHINE);
    ck_assert_msg(strstr(r->note, "disassembled with") != NULL, "note: %s", r->note);
    check_x86_report(r);
  }
  rcl_audit_report_free(r);
  unsigned char *bin = malloc(len + 512);
  size_t n = intel_container(bin, (const unsigned char *)obj, len, ".ocl.obj");
  rt_ok(rcl_audit_binary(&r, bin, n, NULL));
  if (r->depth != RCL_AUDIT_DEPTH_OPAQUE) {
    ck_assert_msg(strstr(r->note, ".ocl.obj section of Intel's OpenCL CPU program binary") != NULL, "note: %s",
                  r->note);
    check_x86_report(r);
  }
  rcl_audit_report_free(r);
  /* a disassembler that cannot be run: opaque, naming it */
  setenv("REPROCL_OBJDUMP", "/nonexistent/objdump", 1);
  int rc = rcl_audit_binary(&r, bin, n, NULL);
  unsetenv("REPROCL_OBJDUMP");
  rt_ok(rc);
  ck_assert_int_eq(r->format, RCL_BINARY_ELF);
  ck_assert_int_eq(r->depth, RCL_AUDIT_DEPTH_OPAQUE);
  ck_assert_msg(strstr(r->note, "/nonexistent/objdump cannot be run") != NULL, "note: %s", r->note);
  ck_assert(!rcl_audit_report_has_findings(r));
  rcl_audit_report_free(r);
  free(bin);
  free(obj);
}
END_TEST

/* ---- the library's programs on every device ----------------------------------------------------------- */

typedef struct {
  size_t programs, f64, kernels, dirty, axpy, axpy_fma, opaque;
  rcl_audit_depth depth;
  char note[512];
  char first_dirty[256];
} tally;

static int count_program(void *user, const char *program, rcl_dtype dt, const char *defines,
                         const unsigned char *binary, size_t size, const rcl_audit_report *r) {
  tally *t = user;
  (void)defines;
  ck_assert(binary != NULL && size > 0);
  t->programs++;
  t->f64 += dt == RCL_F64;
  t->depth = r->depth;
  t->opaque += r->depth == RCL_AUDIT_DEPTH_OPAQUE;
  snprintf(t->note, sizeof t->note, "%s", r->note);
  for (size_t i = 0; i < r->nkernels; i++) {
    const rcl_audit_kernel *k = &r->kernels[i];
    t->kernels++;
    if (k->nfindings && !t->dirty)
      snprintf(t->first_dirty, sizeof t->first_dirty, "%s %s %s: %s", program, rcl_dtype_name(dt), k->name,
               k->findings[0].what);
    t->dirty += k->nfindings != 0;
    if (!strcmp(k->name, "rcl_axpy")) {
      t->axpy++;
      t->axpy_fma += k->count[0] != 0;
    }
  }
  return 0;
}

START_TEST(library_programs) {
  size_t i = (size_t)_i;
  const rcl_device_profile *p = rcl_context_profile(rt_ctx(i));
  int pocl = strstr(p->platform_name, "Portable Computing Language") != NULL;
  int rusticl = !strcmp(p->platform_name, "rusticl");
  int intel_cpu = !strcmp(p->platform_name, "Intel(R) OpenCL") && (p->type & CL_DEVICE_TYPE_CPU);
  tally rep = {0}, nat = {0};
  size_t n = 0;
  rt_ok(rcl_audit_library(rt_ctx(i), NULL, count_program, &rep, &n));
  rt_ok(rcl_audit_library(rt_ctx_native(i), NULL, count_program, &nat, NULL));
  ck_assert_uint_eq(n, rep.programs);
  ck_assert_msg(rep.programs > 0 && rep.programs == nat.programs, "%zu reproducible, %zu native programs", rep.programs,
                nat.programs);
  ck_assert_msg((rep.f64 > 0) == (p->fp64 != 0), "%zu f64 programs on a device with%s fp64", rep.f64,
                p->fp64 ? "" : "out");
  ck_assert_uint_eq(rep.axpy, p->fp64 ? 2 : 1);
  /* reproducible builds: nothing that breaks a contract in whatever could be read */
  ck_assert_msg(rep.dirty == 0, "%s: %zu reproducible kernels with findings, first %s", rt_device_name(i), rep.dirty,
                rep.first_dirty);
  if (pocl) {
    ck_assert_msg(rep.depth == RCL_AUDIT_DEPTH_IR && rep.opaque == 0, "PoCL read as %s: %s",
                  rcl_audit_depth_name(rep.depth), rep.note);
    ck_assert(rep.kernels > 0);
    /* native mode: PoCL contracts a*b+c (llvm.fmuladd) in rcl_axpy, for every dtype */
    ck_assert_msg(nat.axpy_fma == nat.axpy && nat.axpy > 0, "native rcl_axpy contracted in %zu of %zu programs",
                  nat.axpy_fma, nat.axpy);
  } else if (rusticl) {
    ck_assert_int_eq(rep.depth, RCL_AUDIT_DEPTH_FRONT_END);
    ck_assert_msg(strstr(rep.note, "front-end IR only (final code opaque)") != NULL, "note: %s", rep.note);
    ck_assert_msg(nat.axpy_fma == nat.axpy, "native rcl_axpy: the front-end's mad in %zu of %zu", nat.axpy_fma,
                  nat.axpy);
  } else if (intel_cpu) {
    /* the x86-64 code itself: no FMA and no MXCSR flush set-up in reproducible builds (checked above) */
    ck_assert_msg(rep.depth == RCL_AUDIT_DEPTH_MACHINE && rep.opaque == 0, "Intel CPU read as %s: %s",
                  rcl_audit_depth_name(rep.depth), rep.note);
    ck_assert_msg(strstr(rep.note, ".ocl.obj section of Intel's OpenCL CPU program binary") != NULL, "note: %s",
                  rep.note);
    ck_assert(rep.kernels > 0 && nat.kernels == rep.kernels);
    /* native mode: a*b+c contracted into vfmadd in rcl_axpy, f32 and f64 */
    ck_assert_msg(nat.axpy_fma == nat.axpy && nat.axpy > 0, "native rcl_axpy contracted in %zu of %zu programs",
                  nat.axpy_fma, nat.axpy);
  } else {
    rt_note("%s: %zu programs read as %s (%s); no expectations for this driver", rt_device_name(i), rep.programs,
            rcl_audit_depth_name(rep.depth), rep.note);
  }
}
END_TEST

/* The caller's program: a*b+c built natively is contracted on PoCL, and never in reproducible mode. */
START_TEST(user_program) {
  size_t i = (size_t)_i;
  static const char src[] = "__kernel void k(__global float *y, __global const float *a, float b) {\n"
                            "  size_t i = get_global_id(0);\n  y[i] = a[i] * b + y[i];\n}\n";
  for (int native = 0; native < 2; native++) {
    rcl_program *prog;
    rcl_program_options po = RCL_PROGRAM_OPTIONS_INIT;
    po.flags = RCL_PROGRAM_PRELUDE_OPS;
    int rc = rcl_program_build(&prog, native ? rt_ctx_native(i) : rt_ctx(i), src, sizeof src - 1, &po);
    if (rc == RCL_ERR_UNSUPPORTED) { /* plain operators on a device without exact fp32 ÷/√ */
      rt_note("%s: %s", rt_device_name(i), rcl_error_last());
      continue;
    }
    rt_ok(rc);
    rcl_audit_report *r;
    rt_ok(rcl_audit_program(&r, prog, NULL));
    ck_assert_uint_eq(r->nkernels, 1);
    ck_assert_str_eq(r->kernels[0].name, "k");
    if (!native)
      ck_assert_msg(r->kernels[0].nfindings == 0, "reproducible build: %s", r->kernels[0].findings[0].what);
    else if (r->format == RCL_BINARY_POCL)
      expect_finding(&r->kernels[0], "call llvm.fmuladd.f32", "k", RCL_AUDIT_FMA, 1);
    else if (r->format == RCL_BINARY_SPIRV)
      expect_finding(&r->kernels[0], "OpExtInst mad", "k", RCL_AUDIT_FMA, 1);
    else if (r->format == RCL_BINARY_ELF) /* Intel: the scalar kernel and its vectorized form */
      ck_assert_msg(r->kernels[0].count[0] > 0 && !strncmp(r->kernels[0].findings[0].what, "vfmadd", 6),
                    "native a*b+c on %s: %zu FMA", rt_device_name(i), r->kernels[0].count[0]);
    rcl_audit_report_free(r);
    rcl_program_free(prog);
  }
}
END_TEST

/* Intel's oneAPI OpenCL CPU runtime, whose binary holds the machine code that runs: an explicit fma()
 * is found as scalar (vfmadd...sd) and packed (vfmadd...pd: the work-items vectorized) instructions, even
 * in reproducible mode, where nothing else is (library_programs). Skipped, saying so, where Intel's CPU
 * runtime is absent. */
START_TEST(intel_cpu_fma) {
  size_t dev = SIZE_MAX;
  for (size_t i = 0; i < rt_ndevices() && dev == SIZE_MAX; i++) {
    const rcl_device_profile *p = rcl_context_profile(rt_ctx(i));
    if (!strcmp(p->platform_name, "Intel(R) OpenCL") && (p->type & CL_DEVICE_TYPE_CPU)) dev = i;
  }
  if (dev == SIZE_MAX) {
    rt_note("skipped: no device of Intel's oneAPI OpenCL CPU runtime (platform \"Intel(R) OpenCL\"): its x86-64 "
            "machine code is not audited on this machine");
    return;
  }
  static const char src[] = "__kernel void k(__global double *y, __global const double *a, double b) {\n"
                            "  size_t i = get_global_id(0);\n  y[i] = fma(a[i], b, y[i]);\n}\n";
  rcl_program *prog;
  rcl_program_options po = RCL_PROGRAM_OPTIONS_INIT;
  po.flags = RCL_PROGRAM_ALLOW_INEXACT_BUILTINS | RCL_PROGRAM_PRELUDE_OPS; /* no fp32 arithmetic */
  rt_ok(rcl_program_build(&prog, rt_ctx(dev), src, sizeof src - 1, &po));
  rcl_audit_report *r;
  rt_ok(rcl_audit_program(&r, prog, NULL));
  ck_assert_int_eq(r->format, RCL_BINARY_ELF);
  ck_assert_msg(r->depth == RCL_AUDIT_DEPTH_MACHINE, "read as %s: %s", rcl_audit_depth_name(r->depth), r->note);
  ck_assert_uint_eq(r->nkernels, 1);
  const rcl_audit_kernel *k = kernel(r, "k");
  size_t scalar = 0, packed = 0;
  for (size_t f = 0; f < k->nfindings; f++) {
    const char *w = k->findings[f].what;
    ck_assert_msg(k->findings[f].classes == RCL_AUDIT_FMA && !strncmp(w, "vfmadd", 6), "unexpected finding %s in %s", w,
                  k->findings[f].where);
    scalar += strstr(w, "sd") ? k->findings[f].count : 0;
    packed += strstr(w, "pd") ? k->findings[f].count : 0;
  }
  ck_assert_msg(scalar > 0 && packed > 0, "fma() on %s: %zu scalar and %zu packed vfmadd", rt_device_name(dev), scalar,
                packed);
  rcl_audit_report_free(r);
  rcl_program_free(prog);
}
END_TEST

int main(void) {
  Suite *s = suite_create("audit");
  TCase *tc = tcase_create("readers");
  tcase_add_test(tc, ptx_fixture);
  tcase_add_test(tc, ptx_malformed);
  tcase_add_test(tc, llvm_fixture);
  tcase_add_test(tc, llvm_malformed);
  tcase_add_test(tc, spirv_words_fixture);
  tcase_add_test(tc, pocl_container_and_opaque);
  tcase_add_test(tc, x86_objdump_fixture);
  tcase_add_test(tc, x86_elf_containers);
  tcase_add_test(tc, x86_object);
  suite_add_tcase(s, tc);
  rt_add_device_presence(s);
  RT_ADD_DEVICE_CASE(s, library_programs);
  RT_ADD_DEVICE_CASE(s, user_program);
  TCase *intel = tcase_create("intel_cpu_fma");
  tcase_add_test(intel, intel_cpu_fma);
  suite_add_tcase(s, intel);
  return rt_run(s);
}
