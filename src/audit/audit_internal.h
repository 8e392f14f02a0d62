/* Internal interface of the compiled-code audit (audit.c) and its readers, one per binary format
 * (audit_ptx.c, audit_llvm.c, audit_spirv.c, audit_bitcode.c, audit_elf.c). Not installed.
 *
 * Each reader turns a binary into the same small model (audit_model.h, built by audit_model.c, below
 * both): the functions of the module, which of them are kernels, what each one calls, and the
 * contract-breaking instructions found in each body (a "hit": the instruction text, its classes, how
 * often). audit.c then reports per kernel every hit of the kernel and of every function it reaches through
 * calls, since those are compiled into it. */
#ifndef REPROCL_AUDIT_INTERNAL_H
#define REPROCL_AUDIT_INTERNAL_H
#include "audit/audit_model.h"

/* ---- reports (audit.c) ------------------------------------------------------------------------------- */
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
/* An external tool the audit runs on a binary: its environment variable, the names tried in order when
 * neither a tool nor the variable is given, the arguments before the input file, the input file's name
 * (in a temporary directory) and what to say when none of the names is on PATH. */
typedef struct {
  const char *env;
  const char *const *names;
  size_t nnames;
  const char *const *args; /* NULL-terminated, at most 12 */
  const char *file;
  const char *none;
} rcl__audit_tool;
/* Runs the first tool of t that can be run (tool if given, else $env, else the names on PATH) as
 * "tool args... file" with in[0..size) in file, until one exits with status 0 and prints something:
 * *text (rcl__free) is its standard output and *used (rcl__free) its name. When none could, returns 0
 * with *text NULL and *why (rcl__free) saying what was tried and each tool's first error line. */
RCL_INTERNAL int rcl__audit_tool_output(char **text, size_t *len, char **used, char **why, const rcl__audit_tool *t,
                                        const char *tool, const unsigned char *in, size_t size);
/* Disassembles LLVM bitcode with llvm-dis: tool (a name or path) if given, else $REPROCL_LLVM_DIS, else
 * the first of llvm-dis-20 ... llvm-dis-14, llvm-dis found on PATH that reads it (a newer one reads older
 * bitcode, not the reverse). *text (rcl__free) is the IR and *used (rcl__free) the tool that produced
 * it; when none could, returns 0 with *text NULL and *why (rcl__free) saying what was tried. */
RCL_INTERNAL int rcl__audit_llvm_dis(char **text, size_t *len, char **used, char **why, const unsigned char *bc,
                                     size_t size, const char *tool);

/* ---- machine code (audit_elf.c) ------------------------------------------------------------------ */
/* The x86-64 code of an ELF binary: the binary itself when it is a little-endian ELF64 x86-64 object,
 * shared object or executable, or the ".ocl.obj" section of Intel's OpenCL CPU program binary (an ELF64
 * container of type 0xff04 whose sections .ocl.ir, .ocl.meta, .ocl.obj and .ocl.ver hold the program's
 * LLVM bitcode, kernel metadata, the JIT-compiled x86-64 object and a version). *code points into bin and
 * *from says which ("the .ocl.obj section of Intel's OpenCL CPU program binary" or "the ELF object").
 * RCL_ERR_NOT_FOUND (with the reason as message) when it holds no x86-64 code reprocl reads, and
 * RCL_ERR_PARSE when a header or section runs past the end. */
RCL_INTERNAL int rcl__audit_elf_code(const unsigned char **code, size_t *code_size, const char **from,
                                     const unsigned char *bin, size_t size);
/* Disassembles x86-64 machine code with GNU objdump ("objdump -d -r -t -w --no-show-raw-insn"): as
 * rcl__audit_tool_output, with tool, else $REPROCL_OBJDUMP, else objdump or x86_64-linux-gnu-objdump. */
RCL_INTERNAL int rcl__audit_objdump(char **text, size_t *len, char **used, char **why, const unsigned char *code,
                                    size_t size, const char *tool);
/* objdump's output (audit_elf.c): the symbol table says which functions are global (kernels; a vector
 * variant _ZGV..._name is reported under its kernel name), the disassembly what each one holds. Errors
 * name the line. */
RCL_INTERNAL int rcl__audit_parse_objdump(rcl__audit_module *m, const char *text, size_t len);

#endif
