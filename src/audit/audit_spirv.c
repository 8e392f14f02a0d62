/* Reader of SPIR-V (Mesa Rusticl's program binary) for the audit. SPIR-V is the front-end's output: the
 * driver compiles it further, and what that step does is not visible here. What the front-end decided is:
 *   - multiply-add: OpExtInst fma or mad of OpenCL.std, and a kernel that has floating-point multiplies
 *     and adds but no ContractionOff execution mode (the driver may then fuse them; reprocl's
 *     reproducible builds set '#pragma OPENCL FP_CONTRACT OFF', which becomes ContractionOff);
 *   - approximation: OpExtInst native_* and half_*, transcendental OpenCL.std functions, and fp32 OpFDiv
 *     or sqrt (OpenCL allows them 2.5 and 3 ulp unless built with -cl-fp32-correctly-rounded-divide-sqrt,
 *     which SPIR-V does not record), FPFastMathMode AllowRecip;
 *   - flush to zero: the DenormFlushToZero execution mode;
 *   - fast math: FPFastMathMode NotNaN, NotInf, NSZ, Fast decorations.
 * NoContraction decorations are counted: they protect the operation they decorate. */
#include <stdlib.h>
#include <string.h>

#include "audit/audit_internal.h"

enum {
  OP_NAME = 5,
  OP_EXT_INST_IMPORT = 11,
  OP_EXT_INST = 12,
  OP_ENTRY_POINT = 15,
  OP_EXECUTION_MODE = 16,
  OP_TYPE_FLOAT = 22,
  OP_TYPE_VECTOR = 23,
  OP_FUNCTION = 54,
  OP_FUNCTION_END = 56,
  OP_FUNCTION_CALL = 57,
  OP_DECORATE = 71,
  OP_FADD = 129,
  OP_FSUB = 131,
  OP_FMUL = 133,
  OP_FDIV = 136,
  OP_EXECUTION_MODE_ID = 331,
  MODE_CONTRACTION_OFF = 31,
  MODE_DENORM_FLUSH_TO_ZERO = 4460,
  DEC_FP_FAST_MATH_MODE = 40,
  DEC_NO_CONTRACTION = 42,
  MODEL_KERNEL = 6
};

/* OpenCL.std extended instructions 0..94 (the math section) */
static const char *const ocl_math[] = {
    "acos",         "acosh",        "acospi",      "asin",        "asinh",        "asinpi",        "atan",
    "atan2",        "atanh",        "atanpi",      "atan2pi",     "cbrt",         "ceil",          "copysign",
    "cos",          "cosh",         "cospi",       "erfc",        "erf",          "exp",           "exp2",
    "exp10",        "expm1",        "fabs",        "fdim",        "floor",        "fma",           "fmax",
    "fmin",         "fmod",         "fract",       "frexp",       "hypot",        "ilogb",         "ldexp",
    "lgamma",       "lgamma_r",     "log",         "log2",        "log10",        "log1p",         "logb",
    "mad",          "maxmag",       "minmag",      "modf",        "nan",          "nextafter",     "pow",
    "pown",         "powr",         "remainder",   "remquo",      "rint",         "rootn",         "round",
    "rsqrt",        "sin",          "sincos",      "sinh",        "sinpi",        "sqrt",          "tan",
    "tanh",         "tanpi",        "tgamma",      "trunc",       "half_cos",     "half_divide",   "half_exp",
    "half_exp2",    "half_exp10",   "half_log",    "half_log2",   "half_log10",   "half_powr",     "half_recip",
    "half_rsqrt",   "half_sin",     "half_sqrt",   "half_tan",    "native_cos",   "native_divide", "native_exp",
    "native_exp2",  "native_exp10", "native_log",  "native_log2", "native_log10", "native_powr",   "native_recip",
    "native_rsqrt", "native_sin",   "native_sqrt", "native_tan"};
#define N_OCL_MATH (sizeof ocl_math / sizeof ocl_math[0])

/* Exact (correctly rounded or exact by definition) OpenCL.std math functions. */
static int ocl_exact(unsigned k) {
  static const unsigned exact[] = {12, 13, 23, 24, 25, 27, 28, 29, 30, 31, 33,
                                   34, 43, 44, 45, 46, 47, 51, 52, 53, 55, 66};
  for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
    if (exact[i] == k) return 1;
  return 0;
}

typedef struct {
  const unsigned char *b;
  size_t words;
  int swap;
} module;

static uint32_t w(const module *s, size_t i) {
  const unsigned char *p = s->b + 4 * i;
  return s->swap ? (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24
                 : (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A literal string starting at word i of an instruction ending before word end (NUL-terminated inside). */
static size_t literal(const char **s, const module *m, size_t i, size_t end) {
  const char *p = (const char *)(m->b + 4 * i);
  size_t max = 4 * (end - i), l = 0;
  while (l < max && p[l]) l++;
  *s = p;
  return l < max ? l : 0; /* no NUL: not a valid literal */
}

/* Per result id: decorations and facts gathered before the function bodies. */
enum { ID_NO_CONTRACTION = 1, ID_F32 = 2, ID_FLOAT = 4, ID_KERNEL = 8, ID_CONTRACTION_OFF = 16, ID_FTZ = 32 };

typedef struct {
  unsigned char *flags; /* per id */
  uint32_t *fastmath;   /* per id: FPFastMathMode mask */
  const char **name;    /* per id: OpName or entry point name (pointers into the module) */
  size_t *name_len;
  uint32_t bound;
  uint32_t opencl_std; /* id of the OpenCL.std import, 0 if none */
} ids;

static int fail_at(size_t word, const char *what) {
  return rcl__fail(RCL_ERR_PARSE, "SPIR-V: word %zu: %s", word, what);
}

/* The pass over everything before the first function: names, imports, entry points, modes, types,
 * decorations. */
static int scan_globals(ids *d, const module *m) {
  for (size_t i = 5; i < m->words;) {
    uint32_t h = w(m, i), op = h & 0xffffu, wc = h >> 16;
    if (wc == 0) return fail_at(i, "an instruction of length 0");
    if (i + wc > m->words) return fail_at(i, "an instruction runs past the end of the module");
    size_t end = i + wc;
#define ID(k) (wc > (k) && w(m, i + (k)) < d->bound ? w(m, i + (k)) : 0)
    if (op == OP_FUNCTION) break;
    if (op == OP_NAME && ID(1)) {
      const char *s;
      size_t l = literal(&s, m, i + 2, end);
      if (l && !d->name[ID(1)]) {
        d->name[ID(1)] = s;
        d->name_len[ID(1)] = l;
      }
    } else if (op == OP_EXT_INST_IMPORT && ID(1)) {
      const char *s;
      size_t l = literal(&s, m, i + 2, end);
      if (l == 10 && !memcmp(s, "OpenCL.std", 10)) d->opencl_std = ID(1);
    } else if (op == OP_ENTRY_POINT && ID(2)) {
      if (w(m, i + 1) == MODEL_KERNEL) d->flags[ID(2)] |= ID_KERNEL;
      const char *s;
      size_t l = literal(&s, m, i + 3, end);
      if (l) {
        d->name[ID(2)] = s;
        d->name_len[ID(2)] = l;
      }
    } else if ((op == OP_EXECUTION_MODE || op == OP_EXECUTION_MODE_ID) && ID(1) && wc >= 3) {
      uint32_t mode = w(m, i + 2);
      if (mode == MODE_CONTRACTION_OFF) d->flags[ID(1)] |= ID_CONTRACTION_OFF;
      if (mode == MODE_DENORM_FLUSH_TO_ZERO) d->flags[ID(1)] |= ID_FTZ;
    } else if (op == OP_TYPE_FLOAT && ID(1) && wc >= 3) {
      d->flags[ID(1)] |= ID_FLOAT | (w(m, i + 2) == 32 ? ID_F32 : 0);
    } else if (op == OP_TYPE_VECTOR && ID(1) && ID(2)) {
      d->flags[ID(1)] |= d->flags[ID(2)] & (ID_FLOAT | ID_F32);
    } else if (op == OP_DECORATE && ID(1) && wc >= 3) {
      uint32_t dec = w(m, i + 2);
      if (dec == DEC_NO_CONTRACTION) d->flags[ID(1)] |= ID_NO_CONTRACTION;
      if (dec == DEC_FP_FAST_MATH_MODE && wc >= 4) d->fastmath[ID(1)] |= w(m, i + 3);
    }
#undef ID
    i = end;
  }
  return 0;
}

/* The name of id as the report shows it: its entry point or OpName, else "%id". */
static size_t id_name(char *buf, size_t size, const ids *d, uint32_t id) {
  if (id < d->bound && d->name[id]) return (size_t)snprintf(buf, size, "%.*s", (int)d->name_len[id], d->name[id]);
  return (size_t)snprintf(buf, size, "%%%u", (unsigned)id);
}

static int fastmath_hits(rcl__audit_fn *f, const char *opname, uint32_t mask) {
  static const struct {
    uint32_t bit;
    const char *name;
    unsigned classes;
  } bits[] = {{0x1, "NotNaN", RCL_AUDIT_FAST_MATH},
              {0x2, "NotInf", RCL_AUDIT_FAST_MATH},
              {0x4, "NSZ", RCL_AUDIT_FAST_MATH},
              {0x8, "AllowRecip", RCL_AUDIT_APPROX},
              {0x10, "Fast", RCL_AUDIT_FAST_MATH | RCL_AUDIT_APPROX | RCL_AUDIT_FMA},
              {0x10000, "AllowContract", RCL_AUDIT_FMA},
              {0x20000, "AllowReassoc", RCL_AUDIT_FAST_MATH}};
  int rc = 0;
  for (size_t b = 0; !rc && b < sizeof bits / sizeof bits[0]; b++)
    if (mask & bits[b].bit) {
      char what[96];
      snprintf(what, sizeof what, "%s FPFastMathMode %s", opname, bits[b].name);
      rc = rcl__audit_hit_add(f, bits[b].classes, what, 1);
    }
  return rc;
}

/* Per function: fp multiplies and adds not protected by NoContraction (for the ContractionOff check). */
typedef struct {
  size_t fmul, fadd;
} fp_counts;

/* OpFunction: a new function of am (named, a kernel or not), with room for its counts and id (*cap of each). */
static int begin_function(size_t *cur, rcl__audit_module *am, fp_counts **counts, uint32_t **fn_ids, size_t *cap,
                          const ids *d, uint32_t res) {
  char name[160];
  size_t nl = id_name(name, sizeof name, d, res);
  if (nl >= sizeof name) nl = sizeof name - 1;
  int rc = rcl__audit_fn_add(cur, am, name, nl, (d->flags[res] & ID_KERNEL) != 0);
  if (rc) return rc;
  if (am->n > *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    fp_counts *c2 = rcl__realloc(*counts, nc * sizeof **counts);
    if (!c2) return RCL_ERR_OUT_OF_MEMORY;
    *counts = c2;
    uint32_t *i2 = rcl__realloc(*fn_ids, nc * sizeof **fn_ids);
    if (!i2) return RCL_ERR_OUT_OF_MEMORY;
    *fn_ids = i2;
    *cap = nc;
  }
  (*counts)[*cur] = (fp_counts){0, 0};
  (*fn_ids)[*cur] = res;
  return 0;
}

/* An OpenCL.std extended instruction k: fma and mad as contractions, the math functions whose accuracy is
 * left to the driver as approximations. */
static int ext_inst_hit(rcl__audit_fn *f, uint32_t k, int is_f32) {
  char what[96];
  if (k == 26 || k == 42) {
    snprintf(what, sizeof what, "OpExtInst %s", ocl_math[k]);
    return rcl__audit_hit_add(f, RCL_AUDIT_FMA, what, 1);
  }
  if (k < N_OCL_MATH && !ocl_exact(k) && (k != 61 || is_f32)) {
    snprintf(what, sizeof what, "OpExtInst %s%s", ocl_math[k],
             k == 61   ? " f32 (3 ulp allowed)"
             : k >= 67 ? ""
                       : " (accuracy left to the driver)");
    return rcl__audit_hit_add(f, RCL_AUDIT_APPROX, what, 1);
  }
  return 0;
}

/* An instruction inside function f (its counts c): calls, multiplies and adds without NoContraction,
 * divisions, extended instructions and FPFastMathMode decorations. */
static int body_instruction(rcl__audit_fn *f, fp_counts *c, const ids *d, const module *m, size_t i, uint32_t op,
                            uint32_t wc, uint32_t type, uint32_t res) {
  int rc = 0;
  const char *opname = op == OP_FADD       ? "OpFAdd"
                       : op == OP_FSUB     ? "OpFSub"
                       : op == OP_FMUL     ? "OpFMul"
                       : op == OP_FDIV     ? "OpFDiv"
                       : op == OP_EXT_INST ? "OpExtInst"
                                           : NULL;
  int is_f32 = type && (d->flags[type] & ID_F32);
  if (op == OP_FUNCTION_CALL && wc >= 4) {
    char name[160];
    size_t nl = id_name(name, sizeof name, d, w(m, i + 3));
    rc = rcl__audit_call_add(f, name, nl < sizeof name ? nl : sizeof name - 1);
  } else if ((op == OP_FADD || op == OP_FSUB || op == OP_FMUL) && res && !(d->flags[res] & ID_NO_CONTRACTION)) {
    if (op == OP_FMUL)
      c->fmul++;
    else
      c->fadd++;
  } else if (op == OP_FDIV && is_f32) {
    rc = rcl__audit_hit_add(f, RCL_AUDIT_APPROX, "OpFDiv f32 (2.5 ulp allowed)", 1);
  } else if (op == OP_EXT_INST && wc >= 5 && d->opencl_std && w(m, i + 3) == d->opencl_std) {
    rc = ext_inst_hit(f, w(m, i + 4), is_f32);
  }
  if (!rc && opname && res && d->fastmath[res]) rc = fastmath_hits(f, opname, d->fastmath[res]);
  return rc;
}

static int scan_functions(rcl__audit_module *am, fp_counts **counts, uint32_t **fn_ids, const ids *d, const module *m) {
  size_t cap = 0;
  int rc = 0;
  rcl__audit_fn *f = NULL;
  size_t cur = 0;
  for (size_t i = 5; !rc && i < m->words;) {
    uint32_t h = w(m, i), op = h & 0xffffu, wc = h >> 16;
    if (wc == 0) return fail_at(i, "an instruction of length 0");
    if (i + wc > m->words) return fail_at(i, "an instruction runs past the end of the module");
    uint32_t type = wc > 1 ? w(m, i + 1) : 0, res = wc > 2 ? w(m, i + 2) : 0;
    if (type >= d->bound) type = 0;
    if (res >= d->bound) res = 0;
    if (op == OP_FUNCTION) {
      if (f) return fail_at(i, "OpFunction inside a function");
      if (wc < 5 || !res) return fail_at(i, "a malformed OpFunction");
      if ((rc = begin_function(&cur, am, counts, fn_ids, &cap, d, res))) return rc;
      f = &am->fns[cur];
    } else if (op == OP_FUNCTION_END) {
      if (!f) return fail_at(i, "OpFunctionEnd outside a function");
      f = NULL;
    } else if (f) {
      rc = body_instruction(f, &(*counts)[cur], d, m, i, op, wc, type, res);
    }
    i += wc;
  }
  if (!rc && f) rc = fail_at(m->words, "the last function has no OpFunctionEnd");
  return rc;
}

int rcl__audit_parse_spirv(rcl__audit_module *am, const unsigned char *bin, size_t size) {
  if (size < 20 || size % 4) return rcl__fail(RCL_ERR_PARSE, "SPIR-V: %zu bytes is not a whole module", size);
  module m = {bin, size / 4, bin[0] == 0x07};
  if (w(&m, 0) != 0x07230203u) return rcl__fail(RCL_ERR_PARSE, "SPIR-V: bad magic number");
  unsigned char *copy = NULL;
  if (m.swap) { /* a big-endian module: read a little-endian copy, so literal strings read in order */
    if (!(copy = rcl__malloc(size))) return RCL_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < size; i += 4)
      for (size_t k = 0; k < 4; k++) copy[i + k] = bin[i + 3 - k];
    m = (module){copy, size / 4, 0};
  }
  uint32_t bound = w(&m, 3);
  if (bound == 0 || bound > m.words * 4 + 16) {
    rcl__free(copy);
    return fail_at(3, "the id bound does not fit the module's size");
  }
  ids d = {0};
  d.bound = bound;
  d.flags = rcl__calloc(bound, 1);
  d.fastmath = d.flags ? rcl__calloc(bound, sizeof *d.fastmath) : NULL;
  d.name = d.fastmath ? rcl__calloc(bound, sizeof *d.name) : NULL;
  d.name_len = d.name ? rcl__calloc(bound, sizeof *d.name_len) : NULL;
  fp_counts *counts = NULL;
  uint32_t *fn_ids = NULL;
  unsigned char *reach = NULL;
  int rc = d.name_len ? scan_globals(&d, &m) : RCL_ERR_OUT_OF_MEMORY;
  if (!rc) rc = scan_functions(am, &counts, &fn_ids, &d, &m);
  /* Kernels without ContractionOff whose code (callees included) multiplies and adds unprotected. */
  if (!rc && am->n && !(reach = rcl__malloc(am->n))) rc = RCL_ERR_OUT_OF_MEMORY;
  for (size_t k = 0; !rc && k < am->n; k++) {
    uint32_t id = fn_ids[k];
    if (!am->fns[k].is_kernel) continue;
    memset(reach, 0, am->n);
    rc = rcl__audit_reach(am, k, reach);
    size_t fmul = 0, fadd = 0;
    for (size_t j = 0; !rc && j < am->n; j++)
      if (reach[j]) {
        fmul += counts[j].fmul;
        fadd += counts[j].fadd;
      }
    if (!rc && fmul && fadd && !(d.flags[id] & ID_CONTRACTION_OFF)) {
      rc = rcl__audit_hit_add(&am->fns[k], RCL_AUDIT_FMA, "OpFMul without ContractionOff (the driver may fuse)", fmul);
    }
    if (!rc && (d.flags[id] & ID_FTZ)) rc = rcl__audit_hit_add(&am->fns[k], RCL_AUDIT_FTZ, "DenormFlushToZero", 1);
  }
  rcl__free(reach);
  rcl__free(counts);
  rcl__free(fn_ids);
  rcl__free(d.flags);
  rcl__free(d.fastmath);
  rcl__free(d.name);
  rcl__free(d.name_len);
  rcl__free(copy);
  return rc;
}
