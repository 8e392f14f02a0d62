/* The model of a compiled program the audit's readers build and its dispatcher reports from
 * (audit_model.c): the functions of the module, which of them are kernels, what each one calls, and the
 * contract-breaking instructions found in each body. Not installed. */
#ifndef REPROCL_AUDIT_MODEL_H
#define REPROCL_AUDIT_MODEL_H
#include "core/internal.h"
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

/* ---- building the model ------------------------------------------------------------------------------ */
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

#endif
