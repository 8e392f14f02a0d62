/* Reader of LLVM IR text (as llvm-dis prints PoCL's program bitcode) for the audit.
 *
 * Kernels are the 'spir_kernel' definitions (or those carrying !kernel_arg_* metadata). In the bodies of
 * defined functions these break a contract:
 *   - multiply-add: calls of llvm.fmuladd.* (the front-end's contraction of a*b+c) or llvm.fma.*, calls of
 *     OpenCL's fma/mad not yet lowered, and the 'contract' fast-math flag (lets the backend fuse);
 *   - approximation: the 'afn' and 'arcp' flags, '!fpmath' accuracy metadata (fdiv allowed 2.5 ulp),
 *     calls of native_* / half_* and of transcendental builtins and intrinsics;
 *   - flush to zero: a "denormal-fp-math" or "denormal-fp-math-f32" function attribute of preserve-sign
 *     or positive-zero;
 *   - fast math: the 'reassoc', 'nnan', 'ninf', 'nsz' flags ('fast' is all of them) and the function
 *     attributes "unsafe-fp-math", "no-nans-fp-math", "no-infs-fp-math", "no-signed-zeros-fp-math". */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit_internal.h"

typedef struct {
  const char *s;
  size_t n;
} span;

/* The lines of the text (pointers into it, without the newline). */
static int split_lines(span **lines, size_t *count, const char *t, size_t len) {
  size_t n = 1;
  for (size_t i = 0; i < len; i++) n += t[i] == '\n';
  span *l = rcl__malloc(n * sizeof *l);
  if (!l) return RCL_ERR_OUT_OF_MEMORY;
  size_t k = 0, st = 0;
  for (size_t i = 0; i <= len; i++)
    if (i == len || t[i] == '\n') {
      l[k++] = (span){t + st, i - st};
      st = i + 1;
    }
  *lines = l;
  *count = k;
  return 0;
}

static int starts(span l, const char *p) { return l.n >= strlen(p) && !memcmp(l.s, p, strlen(p)); }

static int name_char(char c) { return isalnum((unsigned char)c) || c == '-' || c == '$' || c == '.' || c == '_'; }

/* The global name at s[i] == '@' (quoted or plain): start and length, 0 if none. */
static size_t global_name(const char **name, const char *s, size_t n, size_t i) {
  if (i >= n || s[i] != '@') return 0;
  i++;
  if (i < n && s[i] == '"') {
    size_t st = ++i;
    while (i < n && s[i] != '"') i++;
    *name = s + st;
    return i - st;
  }
  size_t st = i;
  while (i < n && name_char(s[i])) i++;
  *name = s + st;
  return i - st;
}

/* The part of a line before its comment (';' outside quotes). */
static size_t code_len(span l) {
  int q = 0;
  for (size_t i = 0; i < l.n; i++) {
    if (l.s[i] == '"') q = !q;
    if (l.s[i] == ';' && !q) return i;
  }
  return l.n;
}

/* ---- attribute groups and metadata ---------------------------------------------------------------- */

/* The line "attributes #id = { ... }" or "!id = ...", or an empty span. */
static span find_def(const span *lines, size_t nl, char kind, const char *id, size_t idl) {
  for (size_t i = 0; i < nl; i++) {
    span l = lines[i];
    const char *p = l.s;
    size_t n = l.n;
    if (kind == '#') {
      if (!starts(l, "attributes #")) continue;
      p += 12;
      n -= 12;
    } else if (n == 0 || *p != '!') {
      continue;
    } else {
      p++;
      n--;
    }
    if (n > idl && !memcmp(p, id, idl) && (p[idl] == ' ' || p[idl] == '=')) return l;
  }
  return (span){NULL, 0};
}

static int contains(const char *s, size_t n, const char *needle) {
  size_t k = strlen(needle);
  for (size_t j = 0; j + k <= n; j++)
    if (!memcmp(s + j, needle, k)) return 1;
  return 0;
}

/* Hits of one attribute group's string attributes for the function f. */
static int group_hits(rcl__audit_fn *f, span g) {
  static const struct {
    const char *key;
    unsigned classes;
  } bools[] = {{"unsafe-fp-math", RCL_AUDIT_FAST_MATH | RCL_AUDIT_FMA | RCL_AUDIT_APPROX},
               {"no-nans-fp-math", RCL_AUDIT_FAST_MATH},
               {"no-infs-fp-math", RCL_AUDIT_FAST_MATH},
               {"no-signed-zeros-fp-math", RCL_AUDIT_FAST_MATH},
               {"approx-func-fp-math", RCL_AUDIT_APPROX},
               {"less-precise-fpmad", RCL_AUDIT_FMA}};
  int rc = 0;
  for (size_t i = 0; !rc && i + 1 < g.n; i++) {
    if (g.s[i] != '"') continue;
    size_t ks = i + 1, ke = ks;
    while (ke < g.n && g.s[ke] != '"') ke++;
    if (ke + 2 >= g.n || g.s[ke + 1] != '=' || g.s[ke + 2] != '"') {
      i = ke;
      continue;
    }
    size_t vs = ke + 3, ve = vs;
    while (ve < g.n && g.s[ve] != '"') ve++;
    const char *k = g.s + ks, *v = g.s + vs;
    size_t kl = ke - ks, vl = ve - vs;
    char what[160];
    if ((kl == 16 && !memcmp(k, "denormal-fp-math", 16)) || (kl == 20 && !memcmp(k, "denormal-fp-math-f32", 20))) {
      if (contains(v, vl, "preserve-sign") || contains(v, vl, "positive-zero")) {
        snprintf(what, sizeof what, "%.*s=%.*s", (int)kl, k, (int)(vl < 64 ? vl : 64), v);
        rc = rcl__audit_hit_add(f, RCL_AUDIT_FTZ, what, 1);
      }
    } else if (vl == 4 && !memcmp(v, "true", 4)) {
      for (size_t b = 0; b < sizeof bools / sizeof bools[0]; b++)
        if (strlen(bools[b].key) == kl && !memcmp(k, bools[b].key, kl)) {
          snprintf(what, sizeof what, "%.*s=true", (int)kl, k);
          rc = rcl__audit_hit_add(f, bools[b].classes, what, 1);
        }
    }
    i = ve;
  }
  return rc;
}

/* ---- instructions --------------------------------------------------------------------------------- */

static const struct {
  const char *flag;
  unsigned classes;
} fm_flags[] = {{"fast", RCL_AUDIT_FMA | RCL_AUDIT_APPROX | RCL_AUDIT_FAST_MATH},
                {"contract", RCL_AUDIT_FMA},
                {"afn", RCL_AUDIT_APPROX},
                {"arcp", RCL_AUDIT_APPROX},
                {"reassoc", RCL_AUDIT_FAST_MATH},
                {"nnan", RCL_AUDIT_FAST_MATH},
                {"ninf", RCL_AUDIT_FAST_MATH},
                {"nsz", RCL_AUDIT_FAST_MATH}};

static unsigned flag_classes(const char *w, size_t l) {
  for (size_t i = 0; i < sizeof fm_flags / sizeof fm_flags[0]; i++)
    if (strlen(fm_flags[i].flag) == l && !memcmp(fm_flags[i].flag, w, l)) return fm_flags[i].classes;
  return 0;
}

/* OpenCL builtins whose results the implementation may approximate (as in rcl_policy_lint_source). */
static const char *const inexact[] = {
    "exp",    "exp2",   "exp10",  "expm1",   "log",   "log2",  "log10",  "log1p",    "logb",   "pow",   "pown",
    "powr",   "rootn",  "cbrt",   "rsqrt",   "hypot", "sin",   "cos",    "tan",      "sincos", "asin",  "acos",
    "atan",   "atan2",  "sinh",   "cosh",    "tanh",  "asinh", "acosh",  "atanh",    "sinpi",  "cospi", "tanpi",
    "asinpi", "acospi", "atanpi", "atan2pi", "erf",   "erfc",  "lgamma", "lgamma_r", "tgamma"};

/* The classes of a call of name (and *note, a short reason). */
static unsigned callee_classes(const char *name, size_t n, const char **note) {
  *note = "";
  if (n > 13 && !memcmp(name, "llvm.fmuladd.", 13)) return RCL_AUDIT_FMA;
  if (n > 9 && !memcmp(name, "llvm.fma.", 9)) return RCL_AUDIT_FMA;
  static const char *const intrinsics[] = {"llvm.exp.",   "llvm.exp2.", "llvm.exp10.", "llvm.log.", "llvm.log2.",
                                           "llvm.log10.", "llvm.pow.",  "llvm.sin.",   "llvm.cos.", "llvm.tan."};
  for (size_t i = 0; i < sizeof intrinsics / sizeof intrinsics[0]; i++)
    if (n > strlen(intrinsics[i]) && !memcmp(name, intrinsics[i], strlen(intrinsics[i]))) {
      *note = " (accuracy left to the target)";
      return RCL_AUDIT_APPROX;
    }
  /* Itanium-mangled OpenCL builtins: _Z<length><name><argument types> */
  if (n < 4 || memcmp(name, "_Z", 2) || !isdigit((unsigned char)name[2])) return 0;
  size_t i = 2, bl = 0;
  while (i < n && isdigit((unsigned char)name[i])) bl = bl * 10 + (size_t)(name[i++] - '0');
  if (bl == 0 || bl > n - i) return 0;
  const char *b = name + i;
  if ((bl == 3 && !memcmp(b, "fma", 3)) || (bl == 3 && !memcmp(b, "mad", 3))) return RCL_AUDIT_FMA;
  if ((bl > 7 && !memcmp(b, "native_", 7)) || (bl > 5 && !memcmp(b, "half_", 5))) return RCL_AUDIT_APPROX;
  for (size_t k = 0; k < sizeof inexact / sizeof inexact[0]; k++)
    if (strlen(inexact[k]) == bl && !memcmp(b, inexact[k], bl)) {
      *note = " (accuracy left to the implementation)";
      return RCL_AUDIT_APPROX;
    }
  return 0;
}

static void word(const char *s, size_t n, size_t *i, size_t *ws, size_t *wl) {
  while (*i < n && s[*i] == ' ') (*i)++;
  *ws = *i;
  while (*i < n && s[*i] != ' ') (*i)++;
  *wl = *i - *ws;
}

static int instruction(rcl__audit_fn *f, span l, const span *lines, size_t nl) {
  const char *s = l.s;
  size_t n = code_len(l), i = 0, ws, wl;
  while (n > 0 && isspace((unsigned char)s[n - 1])) n--;
  word(s, n, &i, &ws, &wl);
  if (wl == 0 || s[ws + wl - 1] == ':') return 0; /* a label */
  if (s[ws] == '%' || s[ws] == '@') {             /* %x = ... */
    word(s, n, &i, &ws, &wl);
    if (wl != 1 || s[ws] != '=') return 0;
    word(s, n, &i, &ws, &wl);
  }
  if ((wl == 4 && !memcmp(s + ws, "tail", 4)) || (wl == 8 && !memcmp(s + ws, "musttail", 8)) ||
      (wl == 6 && !memcmp(s + ws, "notail", 6)))
    word(s, n, &i, &ws, &wl);
  const char *op = s + ws;
  size_t opl = wl;
  char what[192];
  size_t wn = (size_t)snprintf(what, sizeof what, "%.*s", (int)(opl < 24 ? opl : 24), op);
  unsigned flags = 0;
  for (;;) {
    size_t save = i;
    word(s, n, &i, &ws, &wl);
    unsigned c = wl ? flag_classes(s + ws, wl) : 0;
    if (!c) {
      i = save;
      break;
    }
    flags |= c;
    if (wn + wl + 2 < sizeof what) wn += (size_t)snprintf(what + wn, sizeof what - wn, " %.*s", (int)wl, s + ws);
  }
  int is_call = opl == 4 && !memcmp(op, "call", 4);
  const char *callee = NULL;
  size_t cl = 0;
  if (is_call) {
    for (size_t j = i; j < n && !cl; j++)
      if (s[j] == '@') cl = global_name(&callee, s, n, j);
    if (cl && wn + cl + 2 < sizeof what) wn += (size_t)snprintf(what + wn, sizeof what - wn, " %.*s", (int)cl, callee);
  }
  int rc = 0;
  if (flags) rc = rcl__audit_hit_add(f, flags, what, 1);
  if (!rc && cl) {
    const char *note;
    unsigned c = callee_classes(callee, cl, &note);
    if (c) {
      char w2[192];
      snprintf(w2, sizeof w2, "call %.*s%s", (int)(cl < 120 ? cl : 120), callee, note);
      rc = rcl__audit_hit_add(f, c, w2, 1);
    }
    if (!rc) rc = rcl__audit_call_add(f, callee, cl);
  }
  /* !fpmath !N: the result may be off by the accuracy N holds (in ulp) */
  const char *fp = NULL;
  for (size_t j = 0; j + 9 < n && !fp; j++)
    if (!memcmp(s + j, "!fpmath !", 9)) fp = s + j + 9;
  if (!rc && fp) {
    size_t idl = 0;
    while (fp + idl < s + n && isdigit((unsigned char)fp[idl])) idl++;
    span d = find_def(lines, nl, '!', fp, idl);
    double ulp = 0;
    const char *fl = NULL;
    for (size_t j = 0; j + 6 < d.n && !fl; j++)
      if (!memcmp(d.s + j, "float ", 6)) fl = d.s + j + 6;
    if (fl) ulp = strtod(fl, NULL);
    char w2[96];
    if (fl)
      snprintf(w2, sizeof w2, "%.*s !fpmath %g ulp", (int)(opl < 24 ? opl : 24), op, ulp);
    else
      snprintf(w2, sizeof w2, "%.*s !fpmath", (int)(opl < 24 ? opl : 24), op);
    rc = rcl__audit_hit_add(f, RCL_AUDIT_APPROX, w2, 1);
  }
  return rc;
}

/* ---- functions ------------------------------------------------------------------------------------ */

static int define_line(size_t *fi, rcl__audit_module *m, span l, const span *lines, size_t nl, size_t lineno) {
  const char *name = NULL;
  size_t len = 0;
  for (size_t j = 0; j < l.n && !len; j++)
    if (l.s[j] == '@') len = global_name(&name, l.s, l.n, j);
  if (!len) return rcl__fail(RCL_ERR_PARSE, "LLVM IR: line %zu: a definition without a name", lineno);
  int kernel = 0;
  for (size_t j = 0; j + 12 <= l.n && !kernel; j++)
    kernel = !memcmp(l.s + j, "spir_kernel ", 12) || !memcmp(l.s + j, "!kernel_arg_", 12);
  int rc = rcl__audit_fn_add(fi, m, name, len, kernel);
  /* attribute groups: "#N" after the parameter list */
  for (size_t j = 1; !rc && j + 1 < l.n; j++) {
    if (l.s[j] != '#' || l.s[j - 1] != ' ' || !isdigit((unsigned char)l.s[j + 1])) continue;
    size_t idl = 0;
    while (j + 1 + idl < l.n && isdigit((unsigned char)l.s[j + 1 + idl])) idl++;
    span g = find_def(lines, nl, '#', l.s + j + 1, idl);
    if (g.s) rc = group_hits(&m->fns[*fi], g);
  }
  return rc;
}

int rcl__audit_parse_llvm(rcl__audit_module *m, const char *text, size_t len) {
  span *lines;
  size_t nl;
  int rc = split_lines(&lines, &nl, text, len);
  if (rc) return rc;
  int in_fn = 0;
  size_t fi = 0, start = 0;
  for (size_t i = 0; !rc && i < nl; i++) {
    span l = lines[i];
    if (starts(l, "define ")) {
      if (in_fn)
        rc = rcl__fail(RCL_ERR_PARSE, "LLVM IR: line %zu: a definition inside the body of @%s (line %zu)", i + 1,
                       m->fns[fi].name, start + 1);
      else
        rc = define_line(&fi, m, l, lines, nl, i + 1);
      in_fn = 1;
      start = i;
    } else if (in_fn && l.n >= 1 && l.s[0] == '}') {
      in_fn = 0;
    } else if (in_fn) {
      rc = instruction(&m->fns[fi], l, lines, nl);
    }
  }
  if (!rc && in_fn)
    rc = rcl__fail(RCL_ERR_PARSE, "LLVM IR: line %zu: the body of @%s is not closed", start + 1, m->fns[fi].name);
  rcl__free(lines);
  return rc;
}
