/* Reader of x86-64 machine code for the audit: Intel's OpenCL CPU runtime returns, as a program binary,
 * an ELF64 container (e_type 0xff04) whose ".ocl.obj" section is the JIT-compiled x86-64 object of the
 * program (with .ocl.ir, Intel's LLVM bitcode, .ocl.meta and .ocl.ver beside it). That object, or any
 * x86-64 ELF object, is disassembled with GNU objdump and read per function.
 *
 * Global functions are kernels; Intel's vectorized form of a kernel (the vector-function ABI name
 * _ZGV<isa><mask><width><parameters>_<kernel>, run for whole groups of work-items) is reported under its
 * kernel, as a function the kernel reaches; calls and relocations name the other functions reached. In
 * a body these break a contract:
 *   - multiply-add: every FMA instruction, vfmadd*, vfmsub*, vfnmadd*, vfnmsub* (132/213/231, ss/sd/ps/
 *     pd/ph, and FMA4's forms): reprocl's kernels never call fma, so one is the compiler's contraction;
 *   - flush to zero: a write of MXCSR (ldmxcsr, vldmxcsr) that sets FTZ (bit 15, 0x8000) or DAZ (bit 6,
 *     0x40), as a value moved or OR-ed into the operand before it; a value that cannot be followed is
 *     reported too (it may set them), while restoring what stmxcsr saved, or a value with neither bit, is
 *     not;
 *   - approximation: the approximate reciprocals (rcpps, rcpss, vrcp14*, vrcp28*, vrcpph), reciprocal
 *     square roots (rsqrt*, vrsqrt14*, vrsqrt28*) and exponentials (vexp2ps/pd). divss/divps/sqrtss... are
 *     correctly rounded and are not reported. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit_internal.h"

/* ---- the ELF container ---------------------------------------------------------------------------- */

static uint64_t le(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* Whether b[0..size) is a little-endian ELF64 x86-64 relocatable, executable or shared object. */
static int x86_64_object(const unsigned char *b, size_t size) {
  if (size < 64 ||
      memcmp(b,
             "\x7f"
             "ELF",
             4) ||
      b[4] != 2 || b[5] != 1 || le(b + 18, 2) != 62)
    return 0;
  uint64_t type = le(b + 16, 2);
  return type >= 1 && type <= 3;
}

int rcl__audit_elf_code(const unsigned char **code, size_t *code_size, const char **from, const unsigned char *b,
                        size_t size) {
  if (size < 20 || memcmp(b,
                          "\x7f"
                          "ELF",
                          4))
    return rcl__fail(RCL_ERR_NOT_FOUND, "not an ELF binary");
  if (b[4] != 2 || b[5] != 1)
    return rcl__fail(RCL_ERR_NOT_FOUND, "an ELF%s %s-endian binary: reprocl reads little-endian ELF64 only",
                     b[4] == 1 ? "32" : "", b[5] == 2 ? "big" : "little");
  if (size < 64) return rcl__fail(RCL_ERR_PARSE, "ELF: the %zu-byte binary is shorter than its 64-byte header", size);
  if (x86_64_object(b, size)) {
    *code = b;
    *code_size = size;
    *from = "the ELF object";
    return 0;
  }
  unsigned type = (unsigned)le(b + 16, 2);
  uint64_t shoff = le(b + 0x28, 8), shent = le(b + 0x3a, 2), shnum = le(b + 0x3c, 2), shstr = le(b + 0x3e, 2);
  if (shnum == 0)
    return rcl__fail(RCL_ERR_NOT_FOUND, "an ELF binary of type 0x%x without sections: no machine code found", type);
  if (shent < 64 || shoff > size || shnum * shent > size - shoff)
    return rcl__fail(RCL_ERR_PARSE,
                     "ELF: the section headers (%llu of %llu bytes at offset %llu) run past the end of the "
                     "%zu-byte binary",
                     (unsigned long long)shnum, (unsigned long long)shent, (unsigned long long)shoff, size);
  if (shstr >= shnum)
    return rcl__fail(RCL_ERR_PARSE, "ELF: the section name table is section %llu of %llu", (unsigned long long)shstr,
                     (unsigned long long)shnum);
  const unsigned char *sh = b + shoff;
  uint64_t stroff = le(sh + shstr * shent + 0x18, 8), strsize = le(sh + shstr * shent + 0x20, 8);
  if (stroff > size || strsize > size - stroff)
    return rcl__fail(RCL_ERR_PARSE, "ELF: the section name table (%llu bytes at offset %llu) runs past the end",
                     (unsigned long long)strsize, (unsigned long long)stroff);
  static const char want[] = ".ocl.obj";
  for (uint64_t i = 0; i < shnum; i++) {
    const unsigned char *h = sh + i * shent;
    uint64_t name = le(h, 4), off = le(h + 0x18, 8), sz = le(h + 0x20, 8);
    if (name >= strsize || strsize - name < sizeof want || memcmp(b + stroff + name, want, sizeof want)) continue;
    if (off > size || sz > size - off)
      return rcl__fail(RCL_ERR_PARSE,
                       "ELF: the .ocl.obj section (%llu bytes at offset %llu) runs past the end of "
                       "the %zu-byte binary",
                       (unsigned long long)sz, (unsigned long long)off, size);
    if (!x86_64_object(b + off, (size_t)sz))
      return rcl__fail(RCL_ERR_PARSE, "ELF: the .ocl.obj section at offset %llu is not an x86-64 ELF object",
                       (unsigned long long)off);
    *code = b + off;
    *code_size = (size_t)sz;
    *from = "the .ocl.obj section of Intel's OpenCL CPU program binary";
    return 0;
  }
  return rcl__fail(RCL_ERR_NOT_FOUND,
                   "an x86-64 ELF binary of type 0x%x without an .ocl.obj section: no machine "
                   "code found",
                   type);
}

int rcl__audit_objdump(char **text, size_t *len, char **used, char **why, const unsigned char *code, size_t size,
                       const char *tool) {
  static const char *const names[] = {"objdump", "x86_64-linux-gnu-objdump"};
  static const char *const args[] = {"-d", "-r", "-t", "-w", "--no-show-raw-insn", NULL};
  static const rcl__audit_tool t = {
      "REPROCL_OBJDUMP",
      names,
      sizeof names / sizeof names[0],
      args,
      "program.o",
      "no objdump found on PATH (objdump, x86_64-linux-gnu-objdump): install binutils or set REPROCL_OBJDUMP"};
  return rcl__audit_tool_output(text, len, used, why, &t, tool, code, size);
}

/* ---- objdump's output ----------------------------------------------------------------------------- */

typedef struct {
  const char *s;
  size_t n;
} span;

static int span_is(span a, const char *s) { return a.n == strlen(s) && !memcmp(a.s, s, a.n); }
static int span_starts(span a, const char *s) { return a.n >= strlen(s) && !memcmp(a.s, s, strlen(s)); }

/* The next token of l (separated by spaces or tabs) from *i. */
static span token(span l, size_t *i) {
  while (*i < l.n && (l.s[*i] == ' ' || l.s[*i] == '\t')) (*i)++;
  size_t st = *i;
  while (*i < l.n && l.s[*i] != ' ' && l.s[*i] != '\t') (*i)++;
  return (span){l.s + st, *i - st};
}

/* A symbol name without its "+0x10" / "-0x4" / "@plt" suffix. */
static span symbol(span s) {
  for (size_t i = 1; i < s.n; i++)
    if (s.s[i] == '+' || s.s[i] == '@' || (s.s[i] == '-' && i + 1 < s.n && s.s[i + 1] == '0')) return (span){s.s, i};
  return s;
}

/* MXCSR's bits that flush: FTZ (flush results) and DAZ (denormal inputs are zero). */
#define MX_FTZ 0x8000u
#define MX_DAZ 0x0040u

/* What is known of a value an instruction wrote to a location (a register or memory operand, as text),
 * followed from a stmxcsr or an immediate to the ldmxcsr that reads it. */
typedef struct {
  char loc[48];
  int kind;         /* 1: exactly value; 2: the MXCSR stmxcsr saved, with or_bits set; 3: unknown | or_bits */
  unsigned value;   /* kind 1 */
  unsigned or_bits; /* kinds 2 and 3 */
} mx_slot;

typedef struct {
  mx_slot slot[8];
  size_t next;
} mx_track;

static mx_slot *mx_find(mx_track *t, span loc) {
  for (size_t i = 0; i < 8; i++)
    if (t->slot[i].kind && strlen(t->slot[i].loc) == loc.n && !memcmp(t->slot[i].loc, loc.s, loc.n)) return &t->slot[i];
  return NULL;
}

static mx_slot *mx_set(mx_track *t, span loc, int kind, unsigned value, unsigned or_bits) {
  mx_slot *s = mx_find(t, loc);
  if (!s && loc.n < sizeof s->loc) {
    s = &t->slot[t->next];
    t->next = (t->next + 1) % 8;
  }
  if (!s) return NULL;
  memcpy(s->loc, loc.s, loc.n);
  s->loc[loc.n] = '\0';
  s->kind = kind;
  s->value = value;
  s->or_bits = or_bits;
  return s;
}

/* The operands of an AT&T instruction (commas inside parentheses do not separate). */
static size_t operands(span ops, span *out, size_t max) {
  size_t n = 0, st = 0;
  int depth = 0;
  for (size_t i = 0; i <= ops.n && n < max; i++) {
    char c = i < ops.n ? ops.s[i] : ',';
    if (c == '(') depth++;
    if (c == ')') depth--;
    if (c == ',' && depth <= 0) {
      out[n++] = (span){ops.s + st, i - st};
      st = i + 1;
    }
  }
  return ops.n ? n : 0;
}

static int immediate(span op, unsigned *v) {
  if (op.n < 2 || op.s[0] != '$') return 0;
  char buf[24];
  if (op.n - 1 >= sizeof buf) return 0;
  memcpy(buf, op.s + 1, op.n - 1);
  buf[op.n - 1] = '\0';
  char *end;
  long long x = strtoll(buf, &end, 0);
  if (*end) return 0;
  *v = (unsigned)x;
  return 1;
}

static const char *flush_bits(unsigned v) {
  return (v & MX_FTZ) && (v & MX_DAZ) ? "FTZ and DAZ" : (v & MX_FTZ) ? "FTZ" : "DAZ";
}

/* Follows the MXCSR value through mnemonic mn with operands ops; a hit for an ldmxcsr that may flush. */
static int mxcsr(rcl__audit_fn *f, mx_track *t, span mn, span ops) {
  span op[4];
  size_t n = operands(ops, op, 4);
  unsigned imm;
  char what[96];
  if (n == 1 && (span_is(mn, "stmxcsr") || span_is(mn, "vstmxcsr"))) {
    mx_set(t, op[0], 2, 0, 0);
    return 0;
  }
  if (n == 1 && (span_is(mn, "ldmxcsr") || span_is(mn, "vldmxcsr"))) {
    mx_slot *s = mx_find(t, op[0]);
    if (s && s->kind == 1 && !(s->value & (MX_FTZ | MX_DAZ))) return 0;   /* neither bit */
    if (s && s->kind == 2 && !(s->or_bits & (MX_FTZ | MX_DAZ))) return 0; /* restores what was saved */
    if (s && s->kind == 1)
      snprintf(what, sizeof what, "%.*s (sets %s: value 0x%x)", (int)mn.n, mn.s, flush_bits(s->value), s->value);
    else if (s && (s->or_bits & (MX_FTZ | MX_DAZ)))
      snprintf(what, sizeof what, "%.*s (sets %s: 0x%x OR-ed in)", (int)mn.n, mn.s, flush_bits(s->or_bits),
               s->or_bits & (MX_FTZ | MX_DAZ));
    else
      snprintf(what, sizeof what, "%.*s (value not visible: may set FTZ or DAZ)", (int)mn.n, mn.s);
    return rcl__audit_hit_add(f, RCL_AUDIT_FTZ, what, 1);
  }
  if (n == 0) return 0;
  span dst = op[n - 1];
  mx_slot *d = mx_find(t, dst), *s = n == 2 ? mx_find(t, op[0]) : NULL;
  int is_mov = span_starts(mn, "mov") && !span_starts(mn, "movs") && !span_starts(mn, "movz");
  if (n == 2 && is_mov && immediate(op[0], &imm)) {
    mx_set(t, dst, 1, imm, 0);
  } else if (n == 2 && is_mov && s) {
    mx_slot copy = *s;
    mx_set(t, dst, copy.kind, copy.value, copy.or_bits);
  } else if (n == 2 && span_starts(mn, "or") && immediate(op[0], &imm)) {
    if (d && d->kind == 1)
      d->value |= imm;
    else if (d)
      d->or_bits |= imm;
    else
      mx_set(t, dst, 3, 0, imm);
  } else if (n == 2 && span_starts(mn, "and") && immediate(op[0], &imm) && d) {
    d->value &= imm;
    d->or_bits &= imm;
  } else if (d) {
    d->kind = 0; /* written by something not followed */
  }
  return 0;
}

/* The classes of an x86 mnemonic, with *note set to a short explanation. */
static unsigned classify(span mn, const char **note) {
  static const char *const fma[] = {"vfmadd", "vfmsub", "vfnmadd", "vfnmsub"};
  static const struct {
    const char *prefix, *note;
  } approx[] = {{"rcp", " (approximate reciprocal)"},
                {"vrcp", " (approximate reciprocal)"},
                {"rsqrt", " (approximate reciprocal square root)"},
                {"vrsqrt", " (approximate reciprocal square root)"},
                {"vexp2", " (approximate 2^x)"}};
  *note = "";
  for (size_t i = 0; i < sizeof fma / sizeof fma[0]; i++)
    if (span_starts(mn, fma[i])) return RCL_AUDIT_FMA;
  for (size_t i = 0; i < sizeof approx / sizeof approx[0]; i++)
    if (span_starts(mn, approx[i].prefix)) {
      *note = approx[i].note;
      return RCL_AUDIT_APPROX;
    }
  return 0;
}

static int is_prefix(span t) {
  static const char *const prefixes[] = {
      "lock", "rep", "repz", "repnz", "repe",    "repne", "data16", "data32", "addr32", "cs",       "ds",
      "es",   "ss",  "fs",   "gs",    "notrack", "bnd",   "{vex}",  "{vex3}", "{evex}", "xacquire", "xrelease"};
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (span_is(t, prefixes[i])) return 1;
  return 0;
}

/* One instruction line "  addr:\tmnemonic operands[\treloc-addr: R_X86_64_type\tsymbol]...". */
static int instruction(rcl__audit_fn *f, mx_track *t, span l, size_t tab) {
  span rest = {l.s + tab + 1, l.n - tab - 1}, insn = rest;
  for (size_t i = 0; i < rest.n; i++)
    if (rest.s[i] == '\t') {
      insn.n = i;
      break;
    }
  size_t i = 0;
  span mn = token(insn, &i);
  while (mn.n && is_prefix(mn)) mn = token(insn, &i);
  if (!mn.n || (mn.n == 3 && !memcmp(mn.s, "...", 3))) return 0;
  while (i < insn.n && insn.s[i] == ' ') i++;
  span ops = {insn.s + i, insn.n - i};
  for (size_t c = 0; c + 1 < ops.n; c++) /* "  # 1c <foo+0x1c>": a comment */
    if (ops.s[c] == ' ' && ops.s[c + 1] == '#') {
      ops.n = c;
      break;
    }
  while (ops.n && ops.s[ops.n - 1] == ' ') ops.n--;
  int rc = 0;
  const char *note;
  unsigned cls = classify(mn, &note);
  if (cls) {
    char what[96];
    snprintf(what, sizeof what, "%.*s%s", (int)(mn.n < 32 ? mn.n : 32), mn.s, note);
    rc = rcl__audit_hit_add(f, cls, what, 1);
  }
  if (!rc) rc = mxcsr(f, t, mn, ops);
  /* a direct call or jump to another function: "call 1234 <foo>" */
  if (!rc && (span_starts(mn, "call") || span_starts(mn, "jmp"))) {
    const char *lt = memchr(ops.s, '<', ops.n), *gt = lt ? memchr(lt, '>', (size_t)(ops.s + ops.n - lt)) : NULL;
    span callee = gt ? symbol((span){lt + 1, (size_t)(gt - lt - 1)}) : (span){NULL, 0};
    if (callee.n && (strlen(f->name) != callee.n || memcmp(f->name, callee.s, callee.n)))
      rc = rcl__audit_call_add(f, callee.s, callee.n);
  }
  /* relocations (objects: the absolute address of a function called through a register) */
  for (const char *r = insn.s + insn.n; !rc && r < l.s + l.n; r++) {
    if (*r != 'R' || (size_t)(l.s + l.n - r) < 9 || memcmp(r, "R_X86_64_", 9)) continue;
    const char *e = memchr(r, '\t', (size_t)(l.s + l.n - r));
    if (!e) break;
    size_t k = 0;
    span sym = symbol(token((span){e, (size_t)(l.s + l.n - e)}, &k));
    if (sym.n && sym.s[0] != '.') rc = rcl__audit_call_add(f, sym.s, sym.n);
    r = e;
  }
  return rc;
}

/* A global function of the symbol table: "0000000000000000 g     F .ltext\t0000000000000ae7 name". */
static int symbol_line(rcl__audit_module *globals, span l) {
  size_t i = 0;
  span addr = token(l, &i);
  if (addr.n < 8 || i + 8 > l.n || l.s[i] != ' ') return 0;
  const char *fl = l.s + i + 1; /* 7 flag characters: scope, weak, ..., type */
  if (!(fl[0] == 'g' || fl[0] == 'u' || fl[1] == 'w') || fl[6] != 'F') return 0;
  i += 8;
  span name = {NULL, 0};
  for (span t = token(l, &i); t.n; t = token(l, &i)) name = t; /* the last token ("size name") */
  size_t at;
  return name.n ? rcl__audit_fn_add(&at, globals, name.s, name.n, 1) : 0;
}

/* The index of the function named s in m, or -1. */
static long find(const rcl__audit_module *m, span s) {
  for (size_t k = 0; k < m->n; k++)
    if (strlen(m->fns[k].name) == s.n && !memcmp(m->fns[k].name, s.s, s.n)) return (long)k;
  return -1;
}

/* The kernel a vector variant _ZGV<isa><mask><width><parameters>_<kernel> belongs to, or an empty span. */
static span vector_base(const char *name) {
  if (strncmp(name, "_ZGV", 4)) return (span){NULL, 0};
  const char *u = strchr(name + 4, '_');
  return u && u[1] ? (span){u + 1, strlen(u + 1)} : (span){NULL, 0};
}

int rcl__audit_parse_objdump(rcl__audit_module *m, const char *text, size_t len) {
  rcl__audit_module globals = {0};
  mx_track track;
  int rc = 0, in_symbols = 0;
  size_t fi = 0, lineno = 0;
  long cur = -1;
  for (size_t st = 0; !rc && st < len; lineno++) {
    const char *nl = memchr(text + st, '\n', len - st);
    span l = {text + st, nl ? (size_t)(nl - text - st) : len - st};
    st += l.n + 1;
    while (l.n && (l.s[l.n - 1] == '\r' || l.s[l.n - 1] == ' ')) l.n--;
    if (span_is(l, "SYMBOL TABLE:")) {
      in_symbols = 1;
      continue;
    }
    if (in_symbols) {
      if (l.n == 0)
        in_symbols = 0;
      else
        rc = symbol_line(&globals, l);
      continue;
    }
    if (l.n > 3 && isxdigit((unsigned char)l.s[0]) && l.s[l.n - 1] == ':' && l.s[l.n - 2] == '>') {
      /* "0000000000000af0 <rcl_ordered_dot>:" */
      const char *lt = memchr(l.s, '<', l.n);
      if (!lt || lt + 1 >= l.s + l.n - 2) {
        rc = rcl__fail(RCL_ERR_PARSE, "objdump output: line %zu: a function without a name", lineno + 1);
        break;
      }
      span name = {lt + 1, (size_t)(l.s + l.n - 2 - lt - 1)};
      rc = rcl__audit_fn_add(&fi, m, name.s, name.n, globals.n == 0 || find(&globals, name) >= 0);
      memset(&track, 0, sizeof track);
      cur = (long)fi;
      continue;
    }
    size_t i = 0;
    while (i < l.n && l.s[i] == ' ') i++;
    size_t a = i;
    while (i < l.n && isxdigit((unsigned char)l.s[i])) i++;
    if (i == a || i + 1 >= l.n || l.s[i] != ':' || l.s[i + 1] != '\t') continue; /* headers, blank lines */
    if (cur < 0) {
      rc = rcl__fail(RCL_ERR_PARSE, "objdump output: line %zu: an instruction outside a function", lineno + 1);
      break;
    }
    rc = instruction(&m->fns[cur], &track, l, i + 1);
  }
  /* a vector variant is reached from its kernel and is not a kernel of its own */
  for (size_t k = 0; !rc && k < m->n; k++) {
    span base = vector_base(m->fns[k].name);
    long b = base.n ? find(m, base) : -1;
    if (b < 0) continue;
    m->fns[k].is_kernel = 0;
    rc = rcl__audit_call_add(&m->fns[b], m->fns[k].name, strlen(m->fns[k].name));
  }
  rcl__audit_module_free(&globals);
  return rc;
}
