/* Building programs under the reproducibility policy: the prelude, the build options, the option and
 * source checks, the per-context cache of reprocl's own programs, and the public rcl_program API. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "build/binary_cache.h"
#include "build/program.h"
#include "build/program_unit.h"
#include "core/alloc.h"
#include "core/kernel_source.h"

/* ---- policy: build options ------------------------------------------------------------------------ */

/* Options that allow results to differ between devices, with the reason shown to the user. Matched as
 * whole tokens, or as prefixes where the entry ends in '='. */
static const struct {
  const char *opt;
  const char *why;
} forbidden[] = {
    {"-cl-mad-enable", "allows a*b+c to be contracted into a mad with unspecified rounding"},
    {"-cl-fast-relaxed-math", "relaxes IEEE semantics and flushes denormals"},
    {"-cl-unsafe-math-optimizations", "allows re-association and approximate operations"},
    {"-cl-finite-math-only", "assumes no inf/NaN, changing results that have them"},
    {"-cl-no-signed-zeros", "allows -0 and +0 to be exchanged"},
    {"-cl-denorms-are-zero", "flushes denormals to zero"},
    {"-ffast-math", "relaxes IEEE semantics"},
    {"-funsafe-math-optimizations", "allows re-association and approximate operations"},
    {"-ffp-contract=", "changes FMA contraction"},
    {"-fp-relaxed", "lets the FPGA compiler re-associate floating-point trees"},
    {"-fpc", "lets the FPGA compiler drop intermediate roundings"},
    /* clang and LLVM spellings that OpenCL compilers built on them may pass through */
    {"-ffp-model=", "selects a floating-point model that may contract or relax IEEE semantics"},
    {"-fassociative-math", "allows re-association"},
    {"-freciprocal-math", "allows x/y to become x*(1/y)"},
    {"-fapprox-func", "allows approximate library functions"},
    {"-fno-honor-nans", "assumes no NaN, changing results that have them"},
    {"-fno-honor-infinities", "assumes no inf, changing results that have them"},
    {"-fdenormal-fp-math=", "flushes denormals"},
    {"-menable-unsafe-fp-math", "allows re-association and approximate operations"},
    {"-fp-contract=", "changes FMA contraction (LLVM's spelling, e.g. after -mllvm)"},
    {"-enable-unsafe-fp-math", "allows re-association and approximate operations (LLVM's spelling)"},
    {"-cl-fp32-correctly-rounded-divide-sqrt", NULL}, /* allowed: the policy adds it itself */
};

static int check_option_macros(const char *options, int lint_values);

int rcl_policy_check_options(const char *options) {
  if (!options) return 0;
  int rc = check_option_macros(options, 0);
  if (rc) return rc;
  const char *p = options;
  while (*p) {
    while (isspace((unsigned char)*p)) p++;
    const char *start = p;
    while (*p && !isspace((unsigned char)*p)) p++;
    size_t len = (size_t)(p - start);
    if (len == 0) break;
    for (size_t i = 0; i < sizeof forbidden / sizeof forbidden[0]; i++) {
      size_t fl = strlen(forbidden[i].opt);
      int prefix = forbidden[i].opt[fl - 1] == '=';
      int match = prefix ? (len >= fl && strncmp(start, forbidden[i].opt, fl) == 0)
                         : (len == fl && strncmp(start, forbidden[i].opt, fl) == 0);
      if (match && forbidden[i].why)
        return rcl__fail(RCL_ERR_POLICY, "build option \"%.*s\" is refused in reproducible mode: it %s", (int)len,
                         start, forbidden[i].why);
    }
  }
  return 0;
}

/* ---- policy: source lint ------------------------------------------------------------------------- */

/* Builtins whose result OpenCL does not pin to one value (ulp bounds > 0, or implementation-defined
 * evaluation such as mad's rounding), so two conforming devices may return different bits. */
static const char *const inexact_builtins[] = {"mad",
                                               "exp",
                                               "exp2",
                                               "exp10",
                                               "expm1",
                                               "log",
                                               "log2",
                                               "log10",
                                               "log1p",
                                               "logb",
                                               "pow",
                                               "pown",
                                               "powr",
                                               "rootn",
                                               "cbrt",
                                               "rsqrt",
                                               "hypot",
                                               "sin",
                                               "cos",
                                               "tan",
                                               "sincos",
                                               "asin",
                                               "acos",
                                               "atan",
                                               "atan2",
                                               "sinh",
                                               "cosh",
                                               "tanh",
                                               "asinh",
                                               "acosh",
                                               "atanh",
                                               "sinpi",
                                               "cospi",
                                               "tanpi",
                                               "asinpi",
                                               "acospi",
                                               "atanpi",
                                               "atan2pi",
                                               "erf",
                                               "erfc",
                                               "lgamma",
                                               "lgamma_r",
                                               "tgamma",
                                               "dot",
                                               "cross",
                                               "distance",
                                               "length",
                                               "normalize",
                                               "fast_distance",
                                               "fast_length",
                                               "fast_normalize",
                                               "mix",
                                               "smoothstep",
                                               "degrees",
                                               "radians",
                                               "atomic_add_float"};
static const char *const inexact_prefixes[] = {"native_", "half_"};
static const char *const half_fns[] = {"cos",   "divide", "exp",   "exp2",  "exp10", "log",  "log2",
                                       "log10", "powr",   "recip", "rsqrt", "sin",   "sqrt", "tan"};

static int is_inexact(const char *id, size_t len) {
  for (size_t i = 0; i < sizeof inexact_builtins / sizeof inexact_builtins[0]; i++)
    if (strlen(inexact_builtins[i]) == len && !strncmp(id, inexact_builtins[i], len)) return 1;
  for (size_t i = 0; i < 2; i++) {
    size_t pl = strlen(inexact_prefixes[i]);
    if (len > pl && !strncmp(id, inexact_prefixes[i], pl))
      for (size_t j = 0; j < sizeof half_fns / sizeof half_fns[0]; j++)
        if (strlen(half_fns[j]) == len - pl && !strncmp(id + pl, half_fns[j], len - pl)) return 1;
  }
  return 0;
}

/* Translation phases 2 and 3 of C, so the lint sees what the compiler sees: backslash-newlines are
 * spliced and every comment becomes one blank, while the newlines they held are emitted after the next
 * real newline (so each logical line keeps the number of the physical line it starts on). String and
 * character literals are copied as they are. out must hold len + 1 bytes; returns the length. */
static size_t lint_clean(char *out, const char *src, size_t len) {
  size_t o = 0, pending = 0;
  char quote = 0; /* inside a literal: its quote */
  for (size_t i = 0; i < len;) {
    if (src[i] == '\\' && i + 1 < len &&
        (src[i + 1] == '\n' || (src[i + 1] == '\r' && i + 2 < len && src[i + 2] == '\n'))) {
      i += src[i + 1] == '\n' ? 2 : 3;
      pending++;
      continue;
    }
    char c = src[i];
    if (quote) {
      out[o++] = c;
      i++;
      if (c == '\\' && i < len && src[i] != '\n')
        out[o++] = src[i++];
      else if (c == quote || c == '\n')
        quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
      out[o++] = c;
      i++;
    } else if (c == '/' && i + 1 < len && src[i + 1] == '/') {
      /* to the end of the logical line; splices inside continue the comment */
      while (i < len && src[i] != '\n') {
        if (src[i] == '\\' && i + 1 < len && src[i + 1] == '\n') pending++, i++;
        i++;
      }
      out[o++] = ' ';
    } else if (c == '/' && i + 1 < len && src[i + 1] == '*') {
      for (i += 2; i < len && !(src[i] == '*' && i + 1 < len && src[i + 1] == '/'); i++) pending += src[i] == '\n';
      i = i < len ? i + 2 : len;
      out[o++] = ' ';
    } else {
      out[o++] = c;
      i++;
      if (c == '\n')
        for (; pending > 0; pending--) out[o++] = '\n';
    }
  }
  for (; pending > 0; pending--) out[o++] = '\n';
  out[o] = '\0';
  return o;
}

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }
static int is_ident(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Whether an identifier ending at i is called: the next token is '(' (newlines allowed between), or
 * it is parenthesised, "(exp)(x)". */
static int is_called(const char *s, size_t len, size_t i) {
  while (i < len && (is_blank(s[i]) || s[i] == '\n')) i++;
  if (i < len && s[i] == '(') return 1;
  if (i < len && s[i] == ')') {
    for (i++; i < len && (is_blank(s[i]) || s[i] == '\n');) i++;
    return i < len && s[i] == '(';
  }
  return 0;
}

/* A pragma's text, blanks removed and upper-cased ("OPENCLFP_CONTRACTON"), against the pragmas that
 * change floating-point semantics. Returns what it would do, or NULL when it is harmless. */
static const char *fp_pragma_effect(const char *t) {
  if (!strncmp(t, "OPENCLFP_CONTRACT", 17)) return strcmp(t + 17, "OFF") ? "re-enables contraction of a*b+c" : NULL;
  if (!strncmp(t, "STDCFP_CONTRACT", 15)) return strcmp(t + 15, "OFF") ? "re-enables contraction of a*b+c" : NULL;
  if (!strncmp(t, "STDCFENV_ROUND", 14)) return strcmp(t + 14, "FE_TONEAREST") ? "changes the rounding mode" : NULL;
  if (!strncmp(t, "CLANGFP", 7)) {
    /* clauses: only contract(off) and exceptions(...) keep IEEE semantics */
    for (const char *p = t + 7; *p;) {
      if (!strncmp(p, "CONTRACT(OFF)", 13))
        p += 13;
      else if (!strncmp(p, "EXCEPTIONS(", 11) && strchr(p, ')'))
        p = strchr(p, ')') + 1;
      else
        return "changes contraction, re-association or evaluation precision";
    }
    return NULL;
  }
  if (!strncmp(t, "FLOAT_CONTROL", 13)) return strstr(t, "OFF") ? "relaxes IEEE semantics" : NULL;
  return NULL;
}

/* Normalises a pragma's text [p, end) (blanks removed, upper-cased) into buf; returns 0 when it does
 * not fit (a floating-point pragma that long is refused rather than half-read). */
static int pragma_norm(char *buf, size_t cap, const char *p, const char *end) {
  size_t n = 0;
  for (; p < end; p++) {
    if (is_blank(*p) || *p == '\n') continue;
    if (n + 1 >= cap) {
      buf[n] = '\0'; /* what fits, terminated: the caller still looks at it */
      return 0;
    }
    buf[n++] = (char)toupper((unsigned char)*p);
  }
  buf[n] = '\0';
  return 1;
}

/* how: "#pragma" or "_Pragma", for the message. */
static int check_pragma(const char *name, size_t line, const char *p, const char *end, const char *how) {
  char buf[512];
  int whole = pragma_norm(buf, sizeof buf, p, end);
  const char *effect = whole ? fp_pragma_effect(buf) : NULL;
  if (!whole && (strstr(buf, "FP") || strstr(buf, "FLOAT") || strstr(buf, "FENV"))) effect = "is too long to check";
  if (!effect) return 0;
  while (p < end && is_blank(*p)) p++;
  int show = (int)(end - p > 120 ? 120 : end - p);
  int op = how[0] == '_';
  return rcl__fail(RCL_ERR_POLICY, "%s:%zu: %s%s%.*s%s %s", name, line, how, op ? "(\"" : " ", show, p, op ? "\")" : "",
                   effect);
}

/* _Pragma("...") is #pragma written as an operator: checks its string (i: just after "_Pragma"). */
static int check_pragma_operator(const char *s, size_t len, size_t k, const char *name, size_t line) {
  while (k < len && (is_blank(s[k]) || s[k] == '\n')) k++;
  if (k >= len || s[k] != '(') return 0;
  for (k++; k < len && (is_blank(s[k]) || s[k] == '\n');) k++;
  if (k >= len || s[k] != '"') return 0;
  char text[512];
  size_t n = 0;
  for (k++; k < len && s[k] != '"' && s[k] != '\n' && n + 1 < sizeof text; k++) {
    if (s[k] == '\\' && k + 1 < len && (s[k + 1] == '"' || s[k + 1] == '\\')) k++;
    text[n++] = s[k];
  }
  text[n] = '\0';
  return check_pragma(name, line, text, text + n, "_Pragma");
}

/* The replacement list of a "#define" [dn, end) (dn: just after "define") is code that runs wherever the
 * macro is used: lints its calls, and a macro that is only an inexact builtin's name ("#define F mad"). */
static int lint_define(const char *s, size_t dn, size_t end, const char *name, size_t line, int builtins) {
  size_t b = dn;
  while (b < end && is_blank(s[b])) b++;
  while (b < end && is_ident(s[b])) b++; /* the macro's name */
  if (b < end && s[b] == '(')            /* its parameters */
    while (b < end && s[b] != ')') b++;
  if (b < end) b++;
  while (b < end && is_blank(s[b])) b++;
  size_t e = end;
  while (e > b && is_blank(s[e - 1])) e--;
  for (size_t k = b; k < e;) {
    if (isalpha((unsigned char)s[k]) || s[k] == '_') {
      size_t st = k;
      while (k < e && is_ident(s[k])) k++;
      int alias = st == b && k == e;
      if (k - st == 7 && !strncmp(s + st, "_Pragma", 7)) {
        int rc = check_pragma_operator(s, e, k, name, line);
        if (rc) return rc;
      } else if (builtins && (alias || is_called(s, e, k)) && is_inexact(s + st, k - st))
        return rcl__fail(RCL_ERR_POLICY,
                         "%s:%zu: macro uses %.*s(): OpenCL does not fix its result bits, so devices may "
                         "differ (RCL_PROGRAM_ALLOW_INEXACT_BUILTINS accepts it)",
                         name, line, (int)(k - st), s + st);
    } else if (isdigit((unsigned char)s[k])) {
      while (k < e && is_ident(s[k])) k++;
    } else {
      k++;
    }
  }
  return 0;
}

/* A preprocessor line [i, end) (s[i] is the '#'): a #pragma is checked, a #define's replacement linted. */
static int lint_directive(const char *s, size_t i, size_t end, const char *name, size_t line, int builtins) {
  size_t d = i + 1;
  while (d < end && is_blank(s[d])) d++;
  size_t dn = d;
  while (dn < end && is_ident(s[dn])) dn++;
  if (dn - d == 6 && !strncmp(s + d, "pragma", 6)) return check_pragma(name, line, s + dn, s + end, "#pragma");
  if (dn - d == 6 && !strncmp(s + d, "define", 6)) return lint_define(s, dn, end, name, line, builtins);
  return 0;
}

/* An identifier starting at *i (moved past it): a _Pragma is checked, a call of an inexact builtin
 * refused when `builtins` is set. */
static int lint_identifier(const char *s, size_t len, size_t *i, const char *name, size_t line, int builtins) {
  size_t st = *i;
  while (*i < len && is_ident(s[*i])) (*i)++;
  if (*i - st == 7 && !strncmp(s + st, "_Pragma", 7)) return check_pragma_operator(s, len, *i, name, line);
  if (builtins && is_called(s, len, *i) && is_inexact(s + st, *i - st))
    return rcl__fail(RCL_ERR_POLICY,
                     "%s:%zu: call of %.*s(): OpenCL does not fix its result bits, so devices may differ "
                     "(RCL_PROGRAM_ALLOW_INEXACT_BUILTINS accepts it)",
                     name, line, (int)(*i - st), s + st);
  return 0;
}

/* Lints the clean text (lint_clean) of a source: floating-point pragmas always, calls of inexact
 * builtins when `builtins` is set. */
static int lint_text(const char *s, size_t len, const char *name, int builtins) {
  size_t line = 1;
  int line_start = 1;
  for (size_t i = 0; i < len;) {
    char c = s[i];
    if (c == '\n') {
      line++;
      line_start = 1;
      i++;
      continue;
    }
    if (is_blank(c)) {
      i++;
      continue;
    }
    if (c == '"' || c == '\'') {
      for (i++; i < len && s[i] != c && s[i] != '\n'; i++)
        if (s[i] == '\\' && i + 1 < len) i++;
      i++;
      line_start = 0;
      continue;
    }
    if (c == '#' && line_start) {
      size_t end = i;
      while (end < len && s[end] != '\n') end++;
      int rc = lint_directive(s, i, end, name, line, builtins);
      if (rc) return rc;
      i = end;
      continue;
    }
    line_start = 0;
    if (isalpha((unsigned char)c) || c == '_') {
      int rc = lint_identifier(s, len, &i, name, line, builtins);
      if (rc) return rc;
      continue;
    }
    if (isdigit((unsigned char)c)) { /* a number's suffixes are not identifiers: 1.5e-3f */
      while (i < len && (is_ident(s[i]) || s[i] == '.')) i++;
      continue;
    }
    i++;
  }
  return 0;
}

static int lint_source(const char *src, size_t len, const char *name, int builtins) {
  if (!src) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_policy_lint_source: NULL source");
  if (!name) name = "user.cl";
  size_t cap;
  int rc = rcl__mul_size(&cap, 1, len + 1, "source lint");
  if (rc || len == SIZE_MAX) return rc ? rc : rcl__fail(RCL_ERR_OVERFLOW, "source lint: length overflows");
  /* Spliced lines can add at most one '\n' per input byte pair; len + 1 always suffices. */
  char *clean = rcl__malloc(len + 1);
  if (!clean) return RCL_ERR_OUT_OF_MEMORY;
  size_t n = lint_clean(clean, src, len);
  rc = lint_text(clean, n, name, builtins);
  rcl__free(clean);
  return rc;
}

int rcl_policy_lint_source(const char *src, size_t len, const char *name) { return lint_source(src, len, name, 1); }

/* -D and -U options of the caller: names reserved for the policy (RCL_*, rcl_*) are refused, and -D
 * values are linted like source ("-DF=mad" makes F(a,b,c) an inexact call). */
static int check_option_macros(const char *options, int lint_values) {
  const char *p = options;
  while (p && *p) {
    while (isspace((unsigned char)*p)) p++;
    const char *t = p;
    while (*p && !isspace((unsigned char)*p)) p++;
    if (p - t < 2 || t[0] != '-' || (t[1] != 'D' && t[1] != 'U')) continue;
    char kind = t[1];
    const char *m = t + 2, *mend = p;
    if (m == mend) { /* "-D NAME=VALUE": the macro is the next token, unless that is an option itself
                        (then both readings are checked: it is also checked as an option) */
      const char *q = p;
      while (isspace((unsigned char)*q)) q++;
      if (*q == '-') continue;
      m = q;
      while (*q && !isspace((unsigned char)*q)) q++;
      mend = p = q;
    }
    size_t nl = 0;
    while (m + nl < mend && is_ident(m[nl])) nl++;
    /* Defining an emulation switch only forces the exact integer path (the prelude tests defined()),
     * which gives the same bits: allowed, e.g. to test that path on a device that does not need it. */
    int force_exact = kind == 'D' && ((nl == 26 && !strncmp(m, "RCL_EMULATE_F32_SUBNORMALS", 26)) ||
                                      (nl == 24 && !strncmp(m, "RCL_EMULATE_F32_DIV_SQRT", 24)));
    if (!force_exact && nl >= 4 && (!strncmp(m, "RCL_", 4) || !strncmp(m, "rcl_", 4)))
      return rcl__fail(RCL_ERR_POLICY,
                       "build option \"-%c%.*s\" is refused: names beginning RCL_ or rcl_ are reserved for "
                       "the reproducibility policy and the prelude",
                       kind, (int)(mend - m), m);
    const char *eq = memchr(m, '=', (size_t)(mend - m));
    if (kind == 'D' && eq && lint_values) {
      for (const char *v = eq + 1; v < mend;) {
        if (isalpha((unsigned char)*v) || *v == '_') {
          const char *st = v;
          while (v < mend && is_ident(*v)) v++;
          if (is_inexact(st, (size_t)(v - st)))
            return rcl__fail(RCL_ERR_POLICY,
                             "build option \"-D%.*s\" makes a macro expand to %.*s, whose result bits OpenCL does "
                             "not fix (RCL_PROGRAM_ALLOW_INEXACT_BUILTINS accepts it)",
                             (int)(mend - m), m, (int)(v - st), st);
        } else {
          v++;
        }
      }
    }
  }
  return 0;
}

/* ---- composing and building ----------------------------------------------------------------------- */

/* Builds prelude + body. `body_name` names the body in #line directives and messages. A program whose
 * binary is in a loaded bundle or the binary cache comes from there (binary_cache.c) instead. */
static int build(cl_program *out, rcl_context *ctx, const char *body, size_t body_len, const char *body_name,
                 const char *options) {
  rcl_unit u;
  int rc = rcl__unit_compose(&u, ctx, body, body_len, body_name);
  if (rc) return rc;
  cl_program cached;
  if ((rc = rcl__binary_lookup(&cached, ctx, u.ns, u.strs, u.lens, options)) != 0) {
    rcl__unit_free(&u);
    return rc;
  }
  if (cached) {
    *out = cached;
    rcl__unit_free(&u);
    return 0;
  }
  cl_int err;
  cl_program prog = clCreateProgramWithSource(ctx->cl_ctx, u.ns, u.strs, u.lens, &err);
  if (!prog) {
    rc = rcl__fail_cl(err, "clCreateProgramWithSource(%s)", body_name);
  } else {
    err = clBuildProgram(prog, 1, &ctx->device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
      size_t loglen = 0;
      rc = err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BUILD_OPTIONS ? RCL_ERR_BUILD : RCL_ERR_OPENCL;
      rcl__fail(rc, "building %s for %s failed: %s (%d)\noptions: %s\nbuild log:\n", body_name,
                ctx->profile.device_name, rcl_cl_error_name(err), (int)err, options);
      if (clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &loglen) == CL_SUCCESS &&
          loglen > 1) {
        char *log = malloc(loglen + 1); /* not rcl__malloc: failing here must not replace the message */
        if (log && clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, loglen, log, NULL) == CL_SUCCESS) {
          log[loglen] = '\0';
          rcl__error_append("%s", log);
        }
        free(log);
      }
      clReleaseProgram(prog);
    } else {
      rcl__binary_store(ctx, prog, u.ns, u.strs, u.lens, options);
      *out = prog;
    }
  }
  rcl__unit_free(&u);
  return rc;
}

/* ---- the context's cache of reprocl's own programs ------------------------------------------------- */

struct rcl_program_entry {
  rcl_program_entry *next;
  char *key;
  cl_program program;
};

int rcl__program_get(cl_program *out, rcl_context *ctx, const char *file, rcl_dtype dtype, const char *extra) {
  char opts[1024], key[1200];
  /* The context's gate (the family's first-use self-test, context/selftest.c) may refuse the family or
   * send it to the conservative build. */
  int conservative = 0;
  int rc = ctx->gate ? ctx->gate(&conservative, ctx, file, dtype) : 0;
  if (!rc) rc = rcl__program_options(opts, sizeof opts, ctx, file, dtype, extra);
  if (rc) return rc;
  if (conservative) snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " %s", RCL_CONSERVATIVE_OPTIONS);
  snprintf(key, sizeof key, "%s|%s", file, opts);
  pthread_mutex_lock(&ctx->lock);
  for (rcl_program_entry *e = ctx->programs; e; e = e->next) {
    if (strcmp(e->key, key) == 0) {
      *out = e->program;
      pthread_mutex_unlock(&ctx->lock);
      return 0;
    }
  }
  char *src = NULL;
  size_t len = 0;
  rcl_program_entry *e = NULL;
  cl_program prog = NULL;
  rc = rcl__kernel_source(&src, &len, file);
  if (!rc) rc = build(&prog, ctx, src, len, file, opts);
  if (!rc) {
    e = rcl__calloc(1, sizeof *e);
    if (e) e->key = rcl__strdup(key);
    if (!e || !e->key) {
      rc = RCL_ERR_OUT_OF_MEMORY;
      if (e) rcl__free(e);
      clReleaseProgram(prog);
    } else {
      e->program = prog;
      e->next = ctx->programs;
      ctx->programs = e;
      *out = prog;
    }
  }
  pthread_mutex_unlock(&ctx->lock);
  rcl__free(src);
  return rc;
}

static int create_kernel(cl_kernel *out, cl_program prog, const char *file, const char *kernel) {
  cl_int err;
  *out = clCreateKernel(prog, kernel, &err);
  if (!*out) return rcl__fail_cl(err, "clCreateKernel(%s) from %s", kernel, file);
  return 0;
}

int rcl__kernel_get(cl_kernel *out, rcl_context *ctx, const char *file, rcl_dtype dtype, const char *extra,
                    const char *kernel) {
  cl_program prog;
  int rc = rcl__program_get(&prog, ctx, file, dtype, extra);
  return rc ? rc : create_kernel(out, prog, file, kernel);
}

/* ---- the kernel pool --------------------------------------------------------------------------------- */
/* Kernels handed back after their launch, for the next call that needs the same one: creating a kernel
 * costs microseconds, which a reduction of a million elements notices. A kernel taken from the pool is
 * the caller's alone until given back (clSetKernelArg is not thread-safe on one kernel). The pool is a
 * fixed array in the context: giving back allocates nothing and cannot fail. */
int rcl__kernel_take(rcl_kernel_slot *out, rcl_context *ctx, const char *file, rcl_dtype dtype, const char *extra,
                     const char *kernel) {
  memset(out, 0, sizeof *out);
  int rc = rcl__program_get(&out->program, ctx, file, dtype, extra);
  if (rc) return rc;
  if (strlen(kernel) < sizeof out->name) strcpy(out->name, kernel); /* else: not pooled (name "") */
  pthread_mutex_lock(&ctx->lock);
  for (size_t i = ctx->kernel_pool_size; out->name[0] && i-- > 0;) {
    rcl_kernel_slot *s = &ctx->kernel_pool[i];
    if (s->program == out->program && strcmp(s->name, kernel) == 0) {
      out->kernel = s->kernel;
      *s = ctx->kernel_pool[--ctx->kernel_pool_size];
      pthread_mutex_unlock(&ctx->lock);
      return 0;
    }
  }
  pthread_mutex_unlock(&ctx->lock);
  return create_kernel(&out->kernel, out->program, file, kernel);
}

void rcl__kernel_give(rcl_context *ctx, rcl_kernel_slot *s) {
  if (!s->kernel) return;
  if (s->name[0]) {
    pthread_mutex_lock(&ctx->lock);
    if (ctx->kernel_pool_size < RCL_KERNEL_POOL_MAX) {
      ctx->kernel_pool[ctx->kernel_pool_size++] = *s;
      pthread_mutex_unlock(&ctx->lock);
      s->kernel = NULL;
      return;
    }
    pthread_mutex_unlock(&ctx->lock);
  }
  clReleaseKernel(s->kernel);
  s->kernel = NULL;
}

static void kernel_pool_free(rcl_context *ctx) {
  for (size_t i = 0; i < ctx->kernel_pool_size; i++) clReleaseKernel(ctx->kernel_pool[i].kernel);
  ctx->kernel_pool_size = 0;
}

void rcl__programs_free(rcl_context *ctx) {
  kernel_pool_free(ctx);
  rcl_program_entry *e = ctx->programs;
  while (e) {
    rcl_program_entry *next = e->next;
    clReleaseProgram(e->program);
    rcl__free(e->key);
    rcl__free(e);
    e = next;
  }
  ctx->programs = NULL;
}

/* ---- the caller's programs ------------------------------------------------------------------------- */

struct rcl_program {
  cl_program program;
  char *options;
};

int rcl_program_build(rcl_program **out, rcl_context *ctx, const char *source, size_t length,
                      const rcl_program_options *opts) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_program_build: NULL output");
  *out = NULL;
  if (!ctx || !source) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_program_build: NULL context or source");
  if (opts && opts->version != RCL_PROGRAM_OPTIONS_VERSION)
    return rcl__fail(RCL_ERR_INVALID_ARG,
                     "rcl_program_options.version is %u, expected %u (use RCL_PROGRAM_OPTIONS_INIT)", opts->version,
                     RCL_PROGRAM_OPTIONS_VERSION);
  if (length == 0) length = strlen(source);
  const char *name = opts && opts->name ? opts->name : "user.cl";
  const char *user = opts && opts->options ? opts->options : "";
  unsigned flags = opts ? opts->flags : 0u;
  int rc;
  if (ctx->mode == RCL_MODE_REPRODUCIBLE) {
    if ((rc = rcl_policy_check_options(user)) != 0) return rc;
    /* Floating-point pragmas are checked even when inexact builtins are allowed. */
    int builtins = !(flags & RCL_PROGRAM_ALLOW_INEXACT_BUILTINS);
    if ((rc = lint_source(source, length, name, builtins)) != 0 || (rc = check_option_macros(user, builtins)) != 0)
      return rc;
    const rcl_device_profile *p = &ctx->profile;
    if ((p->fp32_emulate_subnormals || p->fp32_emulate_div_sqrt) && !(flags & RCL_PROGRAM_PRELUDE_OPS))
      return rcl__fail(RCL_ERR_UNSUPPORTED,
                       "%s: %s does not guarantee %s, so plain fp32 operators could differ from other devices; "
                       "write fp32 arithmetic with the prelude's rcl_*_f32 operations and pass RCL_PROGRAM_PRELUDE_OPS",
                       name, p->device_name,
                       p->fp32_emulate_subnormals && p->fp32_emulate_div_sqrt
                           ? "fp32 subnormals or correctly rounded div/sqrt"
                       : p->fp32_emulate_subnormals ? "fp32 subnormals"
                                                    : "correctly rounded fp32 div/sqrt");
  }
  char popts[1024];
  if ((rc = rcl__policy_options(popts, sizeof popts, ctx, RCL_F32, 0)) != 0) return rc;
  size_t olen = strlen(popts) + 1 + strlen(user) + 1;
  char *options = rcl__malloc(olen);
  if (!options) return RCL_ERR_OUT_OF_MEMORY;
  snprintf(options, olen, "%s%s%s", popts, *user ? " " : "", user);
  rcl_program *prog = rcl__calloc(1, sizeof *prog);
  if (!prog) {
    rcl__free(options);
    return RCL_ERR_OUT_OF_MEMORY;
  }
  rc = build(&prog->program, ctx, source, length, name, options);
  if (rc) {
    rcl__free(options);
    rcl__free(prog);
    return rc;
  }
  prog->options = options;
  *out = prog;
  return 0;
}

void rcl_program_free(rcl_program *program) {
  if (!program) return;
  clReleaseProgram(program->program);
  rcl__free(program->options);
  rcl__free(program);
}

cl_program rcl_program_cl(const rcl_program *program) { return program ? program->program : NULL; }
const char *rcl_program_build_options(const rcl_program *program) { return program ? program->options : ""; }

int rcl_program_create_kernel(cl_kernel *out, const rcl_program *program, const char *name) {
  if (!out || !program || !name) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_program_create_kernel: NULL argument");
  cl_int err;
  *out = clCreateKernel(program->program, name, &err);
  if (!*out) return rcl__fail_cl(err, "clCreateKernel(%s)", name);
  return 0;
}
