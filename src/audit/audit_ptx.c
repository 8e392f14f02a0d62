/* Reader of NVIDIA PTX (the text NVIDIA's OpenCL returns as a program binary) for the audit.
 *
 * Every '.entry' is a kernel and every '.func' a function it may call. In their bodies an instruction
 * breaks a contract when it
 *   - fuses a multiply-add: fma.* or mad.* on a floating-point type (reprocl's kernels never call fma, so
 *     one in their code is the compiler's contraction), or is a floating-point add/sub without a rounding
 *     modifier that takes the result of a mul without one: the PTX ISA lets the assembler (ptxas) fuse
 *     such "mul/add sequences with no rounding modifiers" into an fma. A bare add fed by mul.rn (what
 *     NVIDIA emits under FP_CONTRACT OFF) may not be fused, nor may a bare add of loaded values;
 *   - approximates: any .approx (div, sqrt, rcp, rsqrt, ex2, lg2, sin, cos, tanh) and div.full (2 ulp);
 *   - flushes subnormals: any .ftz.
 * Correctly rounded forms (div.rn, sqrt.rn, rcp.rn, add.rn, mul.rn) are what the contracts need. */
#include <ctype.h>
#include <string.h>

#include "audit/audit_internal.h"

/* The text with comments replaced by spaces (newlines kept, so line numbers stay right). */
static char *strip_comments(const char *s, size_t n) {
  char *t = rcl__malloc(n + 1);
  if (!t) return NULL;
  size_t i = 0;
  while (i < n) {
    if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') t[i++] = ' ';
    } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
      t[i] = t[i + 1] = ' ';
      i += 2;
      while (i < n && !(s[i] == '*' && i + 1 < n && s[i + 1] == '/')) {
        t[i] = s[i] == '\n' ? '\n' : ' ';
        i++;
      }
      for (size_t k = 0; k < 2 && i < n; k++) t[i++] = ' ';
    } else if (s[i] == '"') { /* strings (.pragma "nounroll";) are kept whole */
      t[i] = s[i];
      i++;
      while (i < n && s[i] != '"' && s[i] != '\n') {
        t[i] = s[i];
        i++;
      }
      if (i < n) {
        t[i] = s[i];
        i++;
      }
    } else {
      t[i] = s[i] ? s[i] : ' '; /* the trailing NUL of NVIDIA's binary */
      i++;
    }
  }
  t[n] = '\0';
  return t;
}

static int is_ident(char c) { return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '%'; }

/* Whether the token tok (a directive like ".entry") occurs as a whole token in s[0..n). */
static const char *find_token(const char *s, size_t n, const char *tok) {
  size_t tl = strlen(tok);
  for (size_t i = 0; i + tl <= n; i++)
    if (!memcmp(s + i, tok, tl) && (i == 0 || isspace((unsigned char)s[i - 1])) &&
        (i + tl == n || !is_ident(s[i + tl])))
      return s + i;
  return NULL;
}

/* Skips a balanced group opened at s[*i] (one of "({") within n; 0, or -1 when it is not closed before
 * the end of its statement (a ';'). */
static int skip_group(const char *s, size_t n, size_t *i) {
  char open = s[*i], close = open == '(' ? ')' : '}';
  int depth = 0;
  for (; *i < n && s[*i] != ';'; (*i)++) {
    if (s[*i] == open) depth++;
    if (s[*i] == close && --depth == 0) {
      (*i)++;
      return 0;
    }
  }
  return -1;
}

static int is_float_type(const char *m, size_t l) {
  static const char *const types[] = {"f16", "f16x2", "bf16", "bf16x2", "f32", "f32x2", "f64"};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (strlen(types[i]) == l && !memcmp(m, types[i], l)) return 1;
  return 0;
}

/* The classes of an opcode ("fma.rn.f32"), with *note set to a short explanation or "". */
static unsigned classify(const char *op, size_t len, const char **note, int *bare) {
  size_t bl = 0;
  while (bl < len && op[bl] != '.') bl++;
  int is_float = 0, rounding = 0, approx = 0, ftz = 0, full = 0;
  for (size_t i = bl; i < len;) {
    size_t s = ++i;
    while (i < len && op[i] != '.') i++;
    const char *m = op + s;
    size_t ml = i - s;
    if (is_float_type(m, ml)) is_float = 1;
#define MOD(x) (ml == sizeof(x) - 1 && !memcmp(m, x, ml))
    if (MOD("rn") || MOD("rz") || MOD("rm") || MOD("rp")) rounding = 1;
    if (MOD("approx")) approx = 1;
    if (MOD("ftz")) ftz = 1;
    if (MOD("full")) full = 1;
#undef MOD
  }
#define BASE(x) (bl == sizeof(x) - 1 && !memcmp(op, x, bl))
  unsigned c = 0;
  *note = "";
  *bare = 0;
  if (is_float && (BASE("fma") || BASE("mad"))) c |= RCL_AUDIT_FMA;
  /* a bare (unrounded) float mul or add/sub: only a pair of them can be fused (see instruction()) */
  if (is_float && !rounding && BASE("mul")) *bare = 1;
  if (is_float && !rounding && (BASE("add") || BASE("sub"))) *bare = 2;
  if (approx) c |= RCL_AUDIT_APPROX;
  if (BASE("div") && full) {
    c |= RCL_AUDIT_APPROX;
    *note = " (2 ulp)";
  }
#undef BASE
  if (ftz) c |= RCL_AUDIT_FTZ;
  return c;
}

/* The registers a function's bare float muls wrote (see classify), so that a bare add reading one is
 * reported as a fusable pair. Names are short (%f123); longer ones are compared on their first 15 bytes. */
typedef struct {
  char (*reg)[16];
  size_t n, cap;
} bare_muls;

/* The i-th comma-separated operand of s[0..n) (0: the destination), trimmed, or len 0. */
static void operand(const char *s, size_t n, int idx, const char **o, size_t *ol) {
  size_t i = 0;
  for (int k = 0; k < idx && i < n; i++)
    if (s[i] == ',') k++;
  while (i < n && isspace((unsigned char)s[i])) i++;
  size_t st = i;
  while (i < n && is_ident(s[i])) i++;
  *o = s + st;
  *ol = i - st;
}

static int reg_eq(const char *a, const char *r, size_t l) {
  size_t rl = l < 15 ? l : 15;
  return strlen(a) == rl && !memcmp(a, r, rl);
}

/* One statement of a function body (labels, predicate, opcode, operands), without its ';'. */
static int instruction(rcl__audit_fn *f, bare_muls *bm, const char *s, size_t n) {
  size_t i = 0;
  for (;;) {
    while (i < n && isspace((unsigned char)s[i])) i++;
    size_t st = i;
    while (i < n && is_ident(s[i])) i++;
    if (i > st && i < n && s[i] == ':') { /* a label */
      i++;
      continue;
    }
    i = st;
    break;
  }
  if (i < n && s[i] == '@') { /* a guard predicate: @%p1 or @!%p1 */
    while (i < n && !isspace((unsigned char)s[i])) i++;
    while (i < n && isspace((unsigned char)s[i])) i++;
  }
  size_t op = i;
  while (i < n && !isspace((unsigned char)s[i]) && s[i] != '(' && s[i] != ',') i++;
  size_t ol = i - op;
  if (ol == 0 || s[op] == '.') return 0; /* empty, or a directive (.reg, .local, .pragma, .loc) */
  if ((ol == 4 && !memcmp(s + op, "call", 4)) || (ol > 4 && !memcmp(s + op, "call.", 5))) {
    /* call[.uni] [(ret),] callee, (args) */
    while (i < n && isspace((unsigned char)s[i])) i++;
    if (i < n && s[i] == '(') {
      if (skip_group(s, n, &i)) return 0;
      while (i < n && (isspace((unsigned char)s[i]) || s[i] == ',')) i++;
    }
    size_t c = i;
    while (i < n && is_ident(s[i])) i++;
    if (i > c && s[c] != '%') return rcl__audit_call_add(f, s + c, i - c); /* %reg: indirect call */
    return 0;
  }
  const char *note;
  int bare;
  unsigned cls = classify(s + op, ol, &note, &bare);
  const char *ops = s + i, *r;
  size_t nops = n - i, rl;
  if (bare == 1) { /* remember the destination */
    operand(ops, nops, 0, &r, &rl);
    if (rl) {
      if (bm->n == bm->cap) {
        size_t cap = bm->cap ? 2 * bm->cap : 32;
        char(*g)[16] = rcl__realloc(bm->reg, cap * sizeof *g);
        if (!g) return RCL_ERR_OUT_OF_MEMORY;
        bm->reg = g;
        bm->cap = cap;
      }
      size_t l = rl < 15 ? rl : 15;
      memcpy(bm->reg[bm->n], r, l);
      bm->reg[bm->n++][l] = '\0';
    }
  } else if (bare == 2) { /* reads a bare mul's result: the pair may be fused */
    for (int k = 1; k <= 2 && !cls; k++) {
      operand(ops, nops, k, &r, &rl);
      for (size_t j = 0; j < bm->n && rl && !cls; j++)
        if (reg_eq(bm->reg[j], r, rl)) {
          cls = RCL_AUDIT_FMA;
          note = " (after a mul without a rounding modifier: ptxas may fuse them)";
        }
    }
  }
  if (!cls) return 0;
  char what[96];
  snprintf(what, sizeof what, "%.*s%s", (int)(ol < 48 ? ol : 48), s + op, note);
  return rcl__audit_hit_add(f, cls, what, 1);
}

/* The name in a function header: ".entry name(" or ".func [(returns)] name(". */
static int header_name(const char **name, size_t *len, const char *s, size_t n, const char *dir) {
  size_t i = (size_t)(dir - s) + (dir[1] == 'e' ? 6 : 5);
  while (i < n && isspace((unsigned char)s[i])) i++;
  if (i < n && s[i] == '(' && skip_group(s, n, &i)) return -1;
  while (i < n && isspace((unsigned char)s[i])) i++;
  size_t st = i;
  while (i < n && is_ident(s[i])) i++;
  if (i == st) return -1;
  *name = s + st;
  *len = i - st;
  return 0;
}

static size_t line_of(const char *t, size_t pos) {
  size_t l = 1;
  for (size_t i = 0; i < pos; i++) l += t[i] == '\n';
  return l;
}

int rcl__audit_parse_ptx(rcl__audit_module *m, const char *text, size_t len) {
  char *t = strip_comments(text, len);
  if (!t) return RCL_ERR_OUT_OF_MEMORY;
  int rc = 0, depth = 0;
  size_t i = 0, fi = 0, fn_start = 0;
  bare_muls bm = {NULL, 0, 0};
  while (!rc && i < len) {
    size_t st = i;
    char term = 0;
    /* one statement: up to ';', or a '{' / '}' that opens or closes a block */
    while (i < len && !term) {
      char c = t[i];
      if (c == '"') {
        for (i++; i < len && t[i] != '"' && t[i] != '\n'; i++) {
        }
        i++;
      } else if (c == ';' || c == '}') {
        term = c;
      } else if (c == '{') {
        size_t a = st, b = i;
        while (a < b && isspace((unsigned char)t[a])) a++;
        while (b > a && isspace((unsigned char)t[b - 1])) b--;
        int header = depth == 0 && (find_token(t + a, b - a, ".entry") || find_token(t + a, b - a, ".func"));
        /* at the top level only an initializer (= {...}) is not a body; in a body, a brace after an
         * opcode groups operands ({%f1, %f2}) and any other opens a block */
        int group = depth == 0 ? a < b && t[b - 1] == '=' : a < b && t[b - 1] != ':';
        if (header || !group) {
          term = c;
        } else if (skip_group(t, len, &i)) {
          rc = rcl__fail(RCL_ERR_PARSE, "PTX: line %zu: '{' is not closed", line_of(t, b));
          break;
        }
      } else {
        i++;
      }
    }
    if (rc) break;
    size_t a = st, b = i < len ? i : len;
    while (a < b && isspace((unsigned char)t[a])) a++;
    while (b > a && isspace((unsigned char)t[b - 1])) b--;
    if (i < len) i++; /* past the terminator */
    if (depth == 0) {
      const char *e = find_token(t + a, b - a, ".entry"), *fu = e ? NULL : find_token(t + a, b - a, ".func");
      if (term == '}') {
        rc = rcl__fail(RCL_ERR_PARSE, "PTX: line %zu: '}' without a function to close", line_of(t, i - 1));
      } else if (term == '{' && !e && !fu) {
        rc = rcl__fail(RCL_ERR_PARSE, "PTX: line %zu: '{' outside a function", line_of(t, i - 1));
      } else if (term == '{') {
        const char *name;
        size_t nl;
        if (header_name(&name, &nl, t + a, b - a, e ? e : fu))
          rc = rcl__fail(RCL_ERR_PARSE, "PTX: line %zu: a %s without a name", line_of(t, a), e ? ".entry" : ".func");
        else
          rc = rcl__audit_fn_add(&fi, m, name, nl, e != NULL);
        bm.n = 0; /* registers are per function */
        depth = 1;
        fn_start = (size_t)((e ? e : fu) - t);
      }
      /* ';' at the top level: a directive, a declaration or a prototype */
    } else if (term == '{') {
      depth++;
    } else {
      if (b > a) rc = instruction(&m->fns[fi], &bm, t + a, b - a);
      if (term == '}') depth--;
    }
  }
  if (!rc && depth > 0)
    rc = rcl__fail(RCL_ERR_PARSE, "PTX: line %zu: the body of %s is not closed", line_of(t, fn_start), m->fns[fi].name);
  rcl__free(bm.reg);
  rcl__free(t);
  return rc;
}
