/* Internal interface of the compiled-code audit (audit.c) and its readers, one per binary format
 * (audit_ptx.c, audit_llvm.c, audit_spirv.c, audit_bitcode.c). Not installed.
 *
 * Each reader turns a binary into the same small model: the functions of the module, which of them are
 * kernels, what each one calls, and the contract-breaking instructions found in each body (a "hit": the
 * instruction text, its classes, how often). audit.c then reports per kernel every hit of the kernel and
 * of every function it reaches through calls, since those are compiled into it. */
#ifndef REPROCL_AUDIT_INTERNAL_H
#define REPROCL_AUDIT_INTERNAL_H
#include "internal.h"
#include "reprocl/audit.h"

typedef struct {
  unsigned classes; /* rcl_audit_class bits */
  char *what;
  size_t count;
} rcl__audit_hit;

typedef struct {
  char *name;
  int is_kernel;
  rcl__audit_hit *hits;
  size_t nhits, hcap;
  char **callees; /* by name, as the binary spells them */
  size_t ncallees, ccap;
} rcl__audit_fn;

typedef struct {
  rcl__audit_fn *fns;
  size_t n, cap;
} rcl__audit_module;

/* ---- building the model (audit.c) ----------------------------------------------------------------- */
/* Appends a function named name[0..len) and returns its index in *index. */
RCL_INTERNAL int rcl__audit_fn_add(size_t *index, rcl__audit_module *m, const char *name, size_t len, int is_kernel);
/* Records one occurrence of an instruction in function f: hits with the same text are counted together. */
RCL_INTERNAL int rcl__audit_hit_add(rcl__audit_fn *f, unsigned classes, const char *what, size_t count);
/* Records that f calls the function named name[0..len) (once per callee). */
RCL_INTERNAL int rcl__audit_call_add(rcl__audit_fn *f, const char *name, size_t len);
/* The index of the function named name, or -1. */
RCL_INTERNAL long rcl__audit_fn_find(const rcl__audit_module *m, const char *name);
/* Marks in reach[] (m->n bytes, zeroed by the caller) every function reachable from function i, i itself
 * included. Cycles (recursion) are followed once. */
RCL_INTERNAL int rcl__audit_reach(const rcl__audit_module *m, size_t i, unsigned char *reach);
RCL_INTERNAL void rcl__audit_module_free(rcl__audit_module *m);
/* The report of a model: one entry per kernel with the hits of everything it reaches. Takes note (copied). */
RCL_INTERNAL int rcl__audit_report_build(rcl_audit_report **out, const rcl__audit_module *m, rcl_binary_format format,
                                         rcl_audit_depth depth, const char *note);

/* ---- readers ---------------------------------------------------------------------------------------- */
/* NVIDIA PTX text (audit_ptx.c). Errors (RCL_ERR_PARSE) name the line. */
RCL_INTERNAL int rcl__audit_parse_ptx(rcl__audit_module *m, const char *text, size_t len);
/* LLVM IR text as llvm-dis prints it (audit_llvm.c). Errors name the line. */
RCL_INTERNAL int rcl__audit_parse_llvm(rcl__audit_module *m, const char *text, size_t len);
/* A SPIR-V module (audit_spirv.c), either byte order. Errors name the word offset. */
RCL_INTERNAL int rcl__audit_parse_spirv(rcl__audit_module *m, const unsigned char *bin, size_t size);

/* ---- containers and tools (audit_bitcode.c) -------------------------------------------------------- */
/* The LLVM bitcode of a PoCL program container ("poclbin"): its "/program.bc" entry (a little-endian
 * uint32 name length, the name, a uint32 size, the bitcode). RCL_ERR_NOT_FOUND when there is none, and
 * RCL_ERR_PARSE when the entry runs past the end or is not bitcode. *bc points into bin. */
RCL_INTERNAL int rcl__audit_pocl_bitcode(const unsigned char **bc, size_t *bc_size, const unsigned char *bin,
                                         size_t size);
/* Disassembles LLVM bitcode with llvm-dis: tool (a name or path) if given, else $REPROCL_LLVM_DIS, else
 * the first of llvm-dis-20 ... llvm-dis-14, llvm-dis found on PATH that reads it (a newer one reads older
 * bitcode, not the reverse). *text (rcl__free) is the IR and *used (rcl__free) the tool that produced
 * it; when none could, returns 0 with *text NULL and *why (rcl__free) saying what was tried. */
RCL_INTERNAL int rcl__audit_llvm_dis(char **text, size_t *len, char **used, char **why, const unsigned char *bc,
                                     size_t size, const char *tool);

#endif
