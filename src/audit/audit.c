/* The compiled-code audit: recognises the format of a program binary (PTX, PoCL's container, LLVM
 * bitcode, SPIR-V, x86-64 ELF), hands it to the reader of that format, and reports per kernel the instructions that
 * would break a reproducibility contract — those of the kernel and of every function it calls. Also audits the
 * library's own programs, as bundles list them (the tuner's registry), in the context's mode. */
#include <stdlib.h>
#include <string.h>

#include "audit/audit_internal.h"
#include "build/program.h"
#include "context/registry.h"

static const char *const class_names[RCL_AUDIT_NCLASSES] = {"fma", "approx", "ftz", "fast-math"};

const char *rcl_audit_class_name(unsigned i) { return i < RCL_AUDIT_NCLASSES ? class_names[i] : NULL; }

const char *rcl_binary_format_name(rcl_binary_format f) {
  switch (f) {
  case RCL_BINARY_PTX:
    return "ptx";
  case RCL_BINARY_POCL:
    return "pocl";
  case RCL_BINARY_BITCODE:
    return "llvm-bitcode";
  case RCL_BINARY_SPIRV:
    return "spir-v";
  case RCL_BINARY_ELF:
    return "elf";
  case RCL_BINARY_OPAQUE:
    break;
  }
  return "opaque";
}

const char *rcl_audit_depth_name(rcl_audit_depth d) {
  switch (d) {
  case RCL_AUDIT_DEPTH_FRONT_END:
    return "front-end";
  case RCL_AUDIT_DEPTH_IR:
    return "ir";
  case RCL_AUDIT_DEPTH_ASSEMBLY:
    return "assembly";
  case RCL_AUDIT_DEPTH_MACHINE:
    return "machine";
  case RCL_AUDIT_DEPTH_OPAQUE:
    break;
  }
  return "opaque";
}

/* ---- reports ------------------------------------------------------------------------------------- */

void rcl_audit_report_free(rcl_audit_report *r) {
  if (!r) return;
  for (size_t k = 0; k < r->nkernels; k++) {
    rcl_audit_kernel *kr = &r->kernels[k];
    for (size_t i = 0; i < kr->nfindings; i++) {
      rcl__free(kr->findings[i].what);
      rcl__free(kr->findings[i].where);
    }
    rcl__free(kr->findings);
    rcl__free(kr->name);
  }
  rcl__free(r->kernels);
  rcl__free(r->note);
  rcl__free(r);
}

int rcl_audit_report_has_findings(const rcl_audit_report *r) {
  if (!r) return 0;
  for (size_t k = 0; k < r->nkernels; k++)
    if (r->kernels[k].nfindings) return 1;
  return 0;
}

static int new_report(rcl_audit_report **out, rcl_binary_format format, rcl_audit_depth depth, const char *note) {
  rcl_audit_report *r = rcl__calloc(1, sizeof *r);
  if (!r) return RCL_ERR_OUT_OF_MEMORY;
  r->format = format;
  r->depth = depth;
  r->note = rcl__strdup(note ? note : "");
  if (!r->note) {
    rcl__free(r);
    return RCL_ERR_OUT_OF_MEMORY;
  }
  *out = r;
  return 0;
}

/* One kernel's findings: every hit of every function it reaches, the kernel's own first. */
static int kernel_findings(rcl_audit_kernel *kr, const rcl__audit_module *m, size_t ki, unsigned char *reach) {
  memset(reach, 0, m->n);
  int rc = rcl__audit_reach(m, ki, reach);
  size_t total = 0;
  for (size_t i = 0; !rc && i < m->n; i++) total += reach[i] ? m->fns[i].nhits : 0;
  if (rc || total == 0) return rc;
  kr->findings = rcl__calloc(total, sizeof *kr->findings);
  if (!kr->findings) return RCL_ERR_OUT_OF_MEMORY;
  for (size_t pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < m->n; i++) {
      if (!reach[i] || (pass == 0) != (i == ki)) continue;
      const rcl__audit_fn *f = &m->fns[i];
      for (size_t h = 0; h < f->nhits; h++) {
        rcl_audit_finding *fd = &kr->findings[kr->nfindings++]; /* counted first: freed with the report */
        fd->what = rcl__strdup(f->hits[h].what);
        fd->where = fd->what ? rcl__strdup(f->name) : NULL;
        if (!fd->where) return RCL_ERR_OUT_OF_MEMORY;
        fd->classes = f->hits[h].classes;
        fd->count = f->hits[h].count;
        for (unsigned c = 0; c < RCL_AUDIT_NCLASSES; c++)
          if (fd->classes & (1u << c)) kr->count[c] += fd->count;
      }
    }
  return 0;
}

int rcl__audit_report_build(rcl_audit_report **out, const rcl__audit_module *m, rcl_binary_format format,
                            rcl_audit_depth depth, const char *note) {
  rcl_audit_report *r;
  int rc = new_report(&r, format, depth, note);
  if (rc) return rc;
  size_t nk = 0;
  for (size_t i = 0; i < m->n; i++) nk += m->fns[i].is_kernel != 0;
  unsigned char *reach = nk ? rcl__malloc(m->n) : NULL;
  if (nk && (!reach || !(r->kernels = rcl__calloc(nk, sizeof *r->kernels)))) rc = RCL_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; !rc && i < m->n; i++) {
    if (!m->fns[i].is_kernel) continue;
    rcl_audit_kernel *kr = &r->kernels[r->nkernels++];
    kr->name = rcl__strdup(m->fns[i].name);
    rc = kr->name ? kernel_findings(kr, m, i, reach) : RCL_ERR_OUT_OF_MEMORY;
  }
  rcl__free(reach);
  if (rc) {
    rcl_audit_report_free(r);
    return rc;
  }
  *out = r;
  return 0;
}

/* ---- formats --------------------------------------------------------------------------------------- */

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Whether the bytes are PTX: text whose first directives (after comments) include .version and .target. */
static int is_ptx(const unsigned char *b, size_t size) {
  size_t n = size < 8192 ? size : 8192;
  int version = 0, target = 0;
  for (size_t i = 0; i < n; i++) {
    if (b[i] == 0) {
      /* NVIDIA's binary ends with a NUL; an earlier one means binary data */
      for (size_t j = i; j < size; j++)
        if (b[j]) return 0;
      break;
    }
    if (b[i] != '.' || (i > 0 && b[i - 1] != '\n' && b[i - 1] != ' ' && b[i - 1] != '\t')) continue;
    if (n - i > 9 && !memcmp(b + i, ".version", 8) && (b[i + 8] == ' ' || b[i + 8] == '\t')) version = 1;
    if (n - i > 8 && !memcmp(b + i, ".target", 7) && (b[i + 7] == ' ' || b[i + 7] == '\t')) target = 1;
  }
  return version && target;
}

/* Where a SPIR-V module starts: 0 for a bare module (either byte order), 12 for Rusticl's container (a
 * uint32 version, the module's size, the binary type, then the module); -1 if neither. */
static long spirv_offset(const unsigned char *b, size_t size) {
  static const unsigned char le[4] = {0x03, 0x02, 0x23, 0x07}, be[4] = {0x07, 0x23, 0x02, 0x03};
  if (size >= 20 && (!memcmp(b, le, 4) || !memcmp(b, be, 4))) return 0;
  if (size >= 32 && !memcmp(b + 12, le, 4) && le32(b + 4) == size - 12) return 12;
  return -1;
}

static const char *elf_machine(unsigned m) {
  switch (m) {
  case 3:
    return "x86";
  case 62:
    return "x86-64";
  case 183:
    return "AArch64";
  case 190:
    return "NVIDIA CUDA";
  case 224:
    return "AMDGPU";
  case 243:
    return "RISC-V";
  default:
    return "unknown machine";
  }
}

/* The report of a disassembler's output (text, used and why are freed here): when it gave none, opaque
 * with the note unread + why; else what parse reads in it, at depth, with the note read_pre + the tool used
 * + read_post. */
static int report_of_text(rcl_audit_report **out, rcl_binary_format format, rcl_audit_depth depth,
                          int (*parse)(rcl__audit_module *, const char *, size_t), char *text, size_t len, char *used,
                          char *why, const char *unread, const char *read_pre, const char *read_post) {
  char note[768];
  int rc;
  if (!text) {
    snprintf(note, sizeof note, "%s: %s", unread, why ? why : "no disassembler");
    rc = new_report(out, format, RCL_AUDIT_DEPTH_OPAQUE, note);
  } else {
    rcl__audit_module m = {0};
    rc = parse(&m, text, len);
    snprintf(note, sizeof note, "%s%s%s", read_pre, used, read_post);
    if (!rc) rc = rcl__audit_report_build(out, &m, format, depth, note);
    rcl__audit_module_free(&m);
  }
  rcl__free(text);
  rcl__free(used);
  rcl__free(why);
  return rc;
}

/* LLVM bitcode (from a PoCL container or bare): disassembled with llvm-dis and read as IR. */
static int audit_bitcode(rcl_audit_report **out, rcl_binary_format format, const unsigned char *bc, size_t size,
                         const rcl_audit_options *opts) {
  char *text = NULL, *used = NULL, *why = NULL, unread[64];
  size_t len = 0;
  int rc = rcl__audit_llvm_dis(&text, &len, &used, &why, bc, size, opts ? opts->llvm_dis : NULL);
  if (rc) return rc;
  snprintf(unread, sizeof unread, "LLVM bitcode (%zu bytes) not read", size);
  return report_of_text(out, format, RCL_AUDIT_DEPTH_IR, rcl__audit_parse_llvm, text, len, used, why, unread,
                        "LLVM IR of the program (disassembled with ",
                        format == RCL_BINARY_POCL
                            ? ") from PoCL's program container; the machine code is generated from it when kernels "
                              "are launched, bound by these instructions and flags"
                            : "); the machine code is generated from it when kernels are launched, bound by these "
                              "instructions and flags");
}

/* x86-64 machine code in ELF (Intel's CPU runtime: the .ocl.obj section), disassembled with objdump. */
static int audit_elf(rcl_audit_report **out, const unsigned char *b, size_t size) {
  const unsigned char *code;
  size_t cs, len = 0;
  const char *from;
  char note[640], pre[160], *text = NULL, *used = NULL, *why = NULL;
  int rc = rcl__audit_elf_code(&code, &cs, &from, b, size);
  if (rc == RCL_ERR_NOT_FOUND) {
    snprintf(note, sizeof note, "ELF object for x86-64: %s; opaque to reprocl", rcl_error_last());
    rcl_error_clear();
    return new_report(out, RCL_BINARY_OPAQUE, RCL_AUDIT_DEPTH_OPAQUE, note);
  }
  if (!rc) rc = rcl__audit_objdump(&text, &len, &used, &why, code, cs, NULL);
  if (rc) return rc;
  snprintf(note, sizeof note, "x86-64 machine code (%s, %zu bytes) not read", from, cs);
  snprintf(pre, sizeof pre, "x86-64 machine code (%s), disassembled with ", from);
  return report_of_text(out, RCL_BINARY_ELF, RCL_AUDIT_DEPTH_MACHINE, rcl__audit_parse_objdump, text, len, used, why,
                        note, pre, ": the code that runs, with each kernel's vectorized form (_ZGV...)");
}

int rcl_audit_binary(rcl_audit_report **out, const void *binary, size_t size, const rcl_audit_options *opts) {
  if (!out || (!binary && size)) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_audit_binary: NULL argument");
  *out = NULL;
  if (opts && opts->version != RCL_AUDIT_OPTIONS_VERSION)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_audit_options.version is %u, expected %u (use RCL_AUDIT_OPTIONS_INIT)",
                     opts->version, RCL_AUDIT_OPTIONS_VERSION);
  const unsigned char *b = binary;
  rcl__audit_module m = {0};
  int rc;
  char note[256];
  if (size >= 8 && !memcmp(b, "poclbin", 8)) {
    const unsigned char *bc;
    size_t bcs;
    rc = rcl__audit_pocl_bitcode(&bc, &bcs, b, size);
    if (rc == RCL_ERR_NOT_FOUND) {
      rcl_error_clear();
      return new_report(out, RCL_BINARY_POCL, RCL_AUDIT_DEPTH_OPAQUE,
                        "PoCL program container without a /program.bc entry: opaque");
    }
    return rc ? rc : audit_bitcode(out, RCL_BINARY_POCL, bc, bcs, opts);
  }
  if (size >= 4 && (!memcmp(b, "BC\xc0\xde", 4) || le32(b) == 0x0B17C0DEu))
    return audit_bitcode(out, RCL_BINARY_BITCODE, b, size, opts);
  long so = spirv_offset(b, size);
  if (so >= 0) {
    rc = rcl__audit_parse_spirv(&m, b + so, size - (size_t)so);
    if (!rc)
      rc = rcl__audit_report_build(out, &m, RCL_BINARY_SPIRV, RCL_AUDIT_DEPTH_FRONT_END,
                                   "SPIR-V: front-end IR only (final code opaque); the driver compiles it "
                                   "further, where contraction and approximations may still be chosen");
    rcl__audit_module_free(&m);
    return rc;
  }
  if (size && is_ptx(b, size)) {
    rc = rcl__audit_parse_ptx(&m, binary, size);
    if (!rc)
      rc = rcl__audit_report_build(out, &m, RCL_BINARY_PTX, RCL_AUDIT_DEPTH_ASSEMBLY,
                                   "PTX: the driver assembles it to machine code keeping every rounding, "
                                   "approximation and flush-to-zero modifier read here");
    rcl__audit_module_free(&m);
    return rc;
  }
  if (size >= 20 && !memcmp(b,
                            "\x7f"
                            "ELF",
                            4)) {
    unsigned mach = b[5] == 2 ? (unsigned)b[18] << 8 | b[19] : (unsigned)b[18] | (unsigned)b[19] << 8;
    if (mach == 62) return audit_elf(out, b, size);
    snprintf(note, sizeof note, "ELF object for %s (e_machine %u): machine code, opaque to reprocl", elf_machine(mach),
             mach);
    return new_report(out, RCL_BINARY_OPAQUE, RCL_AUDIT_DEPTH_OPAQUE, note);
  }
  snprintf(note, sizeof note, "%s: a format reprocl does not read (opaque)",
           size == 0 ? "empty binary" : "unrecognised binary");
  return new_report(out, RCL_BINARY_OPAQUE, RCL_AUDIT_DEPTH_OPAQUE, note);
}

/* The binary of a program built for one device (rcl__malloc'ed). */
static int program_binary(unsigned char **bin, size_t *size, cl_program prog) {
  cl_uint ndev = 0;
  cl_int err = clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof ndev, &ndev, NULL);
  if (err != CL_SUCCESS) return rcl__fail_cl(err, "clGetProgramInfo(CL_PROGRAM_NUM_DEVICES)");
  if (ndev != 1) return rcl__fail(RCL_ERR_INVALID_ARG, "the program is built for %u devices; audit needs one", ndev);
  size_t sz = 0;
  err = clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof sz, &sz, NULL);
  if (err != CL_SUCCESS) return rcl__fail_cl(err, "clGetProgramInfo(CL_PROGRAM_BINARY_SIZES)");
  unsigned char *b = rcl__malloc(sz ? sz : 1);
  if (!b) return RCL_ERR_OUT_OF_MEMORY;
  if (sz && (err = clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof b, &b, NULL)) != CL_SUCCESS) {
    rcl__free(b);
    return rcl__fail_cl(err, "clGetProgramInfo(CL_PROGRAM_BINARIES)");
  }
  *bin = b;
  *size = sz;
  return 0;
}

int rcl_audit_program(rcl_audit_report **out, const rcl_program *program, const rcl_audit_options *opts) {
  if (!out || !program) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_audit_program: NULL argument");
  *out = NULL;
  unsigned char *bin = NULL;
  size_t size = 0;
  int rc = program_binary(&bin, &size, rcl_program_cl(program));
  if (rc) return rc;
  rc = rcl_audit_binary(out, bin, size, opts);
  rcl__free(bin);
  return rc;
}

typedef struct {
  const rcl_audit_options *opts;
  rcl_audit_fn fn;
  void *user;
} library_walk;

static int audit_one(void *user, rcl_context *ctx, const char *file, rcl_dtype dt, const char *defines) {
  library_walk *w = user;
  cl_program prog;
  unsigned char *bin = NULL;
  size_t size = 0;
  rcl_audit_report *r = NULL;
  int rc = rcl__program_get(&prog, ctx, file, dt, defines); /* owned by the context */
  if (!rc) rc = program_binary(&bin, &size, prog);
  if (!rc) rc = rcl_audit_binary(&r, bin, size, w->opts);
  if (rc)
    rcl__error_append(" (auditing %s for %s)", file, rcl_dtype_name(dt));
  else
    rc = w->fn(w->user, file, dt, defines, bin, size, r);
  rcl_audit_report_free(r);
  rcl__free(bin);
  return rc;
}

int rcl_audit_library(rcl_context *ctx, const rcl_audit_options *opts, rcl_audit_fn fn, void *user, size_t *programs) {
  if (!ctx || !fn) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_audit_library: NULL argument");
  if (opts && opts->version != RCL_AUDIT_OPTIONS_VERSION)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_audit_options.version is %u, expected %u (use RCL_AUDIT_OPTIONS_INIT)",
                     opts->version, RCL_AUDIT_OPTIONS_VERSION);
  library_walk w = {opts, fn, user};
  return rcl__program_foreach(ctx, audit_one, &w, programs);
}
