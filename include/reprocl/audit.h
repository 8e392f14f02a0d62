/* reprocl: auditing what a device compiler produced. The binary of a built program (CL_PROGRAM_BINARIES)
 * is read where its format is known — NVIDIA's PTX, PoCL's LLVM bitcode, the SPIR-V of Mesa's Rusticl,
 * the x86-64 machine code of Intel's OpenCL CPU runtime — and every instruction that would break a
 * reproducibility contract is reported per kernel: fused or contractible multiply-adds, approximate
 * division, square root, reciprocal or transcendentals, flushing of subnormals, other fast-math
 * relaxations. Opaque binaries are said to be opaque. See docs/audit.md. */
#ifndef REPROCL_AUDIT_H
#define REPROCL_AUDIT_H
#include "reprocl/common.h"
#include "reprocl/context.h"
#include "reprocl/program.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a finding breaks (bits of rcl_audit_finding.classes). */
typedef enum {
  RCL_AUDIT_FMA = 1u << 0,      /* a multiply-add fused, or allowed to fuse (contraction): one rounding less */
  RCL_AUDIT_APPROX = 1u << 1,   /* approximate division, square root, reciprocal or transcendental */
  RCL_AUDIT_FTZ = 1u << 2,      /* subnormal inputs or results flushed to zero */
  RCL_AUDIT_FAST_MATH = 1u << 3 /* re-association, or no-NaN / no-Inf / no-signed-zero assumptions */
} rcl_audit_class;
#define RCL_AUDIT_NCLASSES 4
/* "fma", "approx", "ftz", "fast-math" for the class of index i (0..3), or NULL. */
RCL_API const char *rcl_audit_class_name(unsigned i);

/* The kind of binary a device returned. */
typedef enum {
  RCL_BINARY_OPAQUE,  /* unknown, or machine code reprocl does not read (non-x86 ELF, vendor formats) */
  RCL_BINARY_PTX,     /* NVIDIA: PTX text */
  RCL_BINARY_POCL,    /* PoCL's program container, holding the program's LLVM bitcode */
  RCL_BINARY_BITCODE, /* bare LLVM bitcode */
  RCL_BINARY_SPIRV,   /* SPIR-V (Rusticl: with its own small header) */
  RCL_BINARY_ELF      /* x86-64 machine code in ELF: Intel's OpenCL CPU binary (its .ocl.obj), or an object */
} rcl_binary_format;
RCL_API const char *rcl_binary_format_name(rcl_binary_format f); /* "opaque", "ptx", "pocl", ..., "elf" */

/* How close what was read is to the code that runs. */
typedef enum {
  RCL_AUDIT_DEPTH_OPAQUE,    /* nothing could be read: nothing is known */
  RCL_AUDIT_DEPTH_FRONT_END, /* the front-end's IR (SPIR-V): the driver compiles it further, unseen */
  RCL_AUDIT_DEPTH_IR,        /* the LLVM IR the device compiles to machine code; its flags bind that step */
  RCL_AUDIT_DEPTH_ASSEMBLY,  /* PTX: the virtual ISA; its rounding and approximation modifiers are kept */
  RCL_AUDIT_DEPTH_MACHINE    /* the machine code that runs (x86-64, disassembled with objdump) */
} rcl_audit_depth;
/* "opaque", "front-end", "ir", "assembly", "machine" */
RCL_API const char *rcl_audit_depth_name(rcl_audit_depth d);

typedef struct {
  unsigned classes; /* rcl_audit_class bits */
  char *what;       /* the instruction or construct: "fma.rn.f32", "call llvm.fmuladd.f32", "fdiv !fpmath 2.5" */
  char *where;      /* the function it is in: the kernel itself or a function it calls */
  size_t count;     /* occurrences */
} rcl_audit_finding;

typedef struct {
  char *name;
  size_t count[RCL_AUDIT_NCLASSES]; /* occurrences per class (index = bit position of the class) */
  size_t nfindings;
  rcl_audit_finding *findings;
} rcl_audit_kernel;

typedef struct {
  rcl_binary_format format;
  rcl_audit_depth depth;
  char *note; /* what was read and how ("LLVM IR via llvm-dis-15"), or why nothing could be */
  size_t nkernels;
  rcl_audit_kernel *kernels; /* in the order the binary lists them */
} rcl_audit_report;

#define RCL_AUDIT_OPTIONS_VERSION 1
typedef struct {
  unsigned int version;
  /* The LLVM disassembler for PoCL's bitcode: a command name or path. NULL: $REPROCL_LLVM_DIS, else the
   * first of llvm-dis-20 ... llvm-dis-14, llvm-dis on PATH that reads the bitcode. */
  const char *llvm_dis;
} rcl_audit_options;
#define RCL_AUDIT_OPTIONS_INIT                                                                                         \
  { RCL_AUDIT_OPTIONS_VERSION, NULL }

/* Audits one binary as returned by CL_PROGRAM_BINARIES (or a PTX, SPIR-V or bitcode file). An unknown or
 * unreadable format is not an error: the report says opaque and why. Malformed input of a known format
 * is RCL_ERR_PARSE naming the place. opts may be NULL. Free the report with rcl_audit_report_free. */
RCL_API int rcl_audit_binary(rcl_audit_report **out, const void *binary, size_t size, const rcl_audit_options *opts);
/* Audits the binary of a program built with rcl_program_build. */
RCL_API int rcl_audit_program(rcl_audit_report **out, const rcl_program *program, const rcl_audit_options *opts);
RCL_API void rcl_audit_report_free(rcl_audit_report *report);
/* Whether the report holds any finding (1) or none (0). */
RCL_API int rcl_audit_report_has_findings(const rcl_audit_report *report);

/* Audits every program of reprocl's own kernels — the programs rcl_program_bundle_write bundles: every
 * registered family's, each variant, for each dtype the device supports — as built in the context's
 * mode, calling fn with each program's binary and report (both borrowed for the call; defines is NULL
 * or the program's extra build defines). A non-zero return of fn stops and is returned. *programs
 * (optional) receives the count audited. */
typedef int (*rcl_audit_fn)(void *user, const char *program, rcl_dtype dtype, const char *defines,
                            const unsigned char *binary, size_t size, const rcl_audit_report *report);
RCL_API int rcl_audit_library(rcl_context *ctx, const rcl_audit_options *opts, rcl_audit_fn fn, void *user,
                              size_t *programs);

#ifdef __cplusplus
}
#endif
#endif
