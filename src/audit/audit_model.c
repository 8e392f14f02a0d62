/* The model every reader of the compiled-code audit builds (audit_model.h): appending functions, their
 * calls and the contract-breaking instructions found in them, and which functions a kernel reaches. Below
 * both the readers (audit_ptx.c, audit_llvm.c, audit_spirv.c, audit_elf.c) and the dispatcher (audit.c),
 * which reports from it. */
#include <string.h>

#include "audit/audit_model.h"

/* ---- building the model ------------------------------------------------------------------------------ */

static char *dup_n(const char *s, size_t len) {
  char *d = rcl__malloc(len + 1);
  if (d) {
    memcpy(d, s, len);
    d[len] = '\0';
  }
  return d;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t nc = *cap ? *cap * 2 : 8, bytes;
  while (nc < need) nc *= 2;
  int rc = rcl__mul_size(&bytes, nc, elem, "audit tables");
  if (rc) return rc;
  void *g = rcl__realloc(*p, bytes);
  if (!g) return RCL_ERR_OUT_OF_MEMORY;
  *p = g;
  *cap = nc;
  return 0;
}

int rcl__audit_fn_add(size_t *index, rcl__audit_module *m, const char *name, size_t len, int is_kernel) {
  int rc = grow((void **)&m->fns, &m->cap, m->n + 1, sizeof *m->fns);
  if (rc) return rc;
  rcl__audit_fn *f = &m->fns[m->n];
  memset(f, 0, sizeof *f);
  f->name = dup_n(name, len);
  if (!f->name) return RCL_ERR_OUT_OF_MEMORY;
  f->is_kernel = is_kernel;
  *index = m->n++;
  return 0;
}

int rcl__audit_hit_add(rcl__audit_fn *f, unsigned classes, const char *what, size_t count) {
  for (size_t i = 0; i < f->nhits; i++)
    if (!strcmp(f->hits[i].what, what)) {
      f->hits[i].classes |= classes;
      f->hits[i].count += count;
      return 0;
    }
  int rc = grow((void **)&f->hits, &f->hcap, f->nhits + 1, sizeof *f->hits);
  if (rc) return rc;
  char *w = rcl__strdup(what);
  if (!w) return RCL_ERR_OUT_OF_MEMORY;
  f->hits[f->nhits++] = (rcl__audit_hit){classes, w, count};
  return 0;
}

int rcl__audit_call_add(rcl__audit_fn *f, const char *name, size_t len) {
  for (size_t i = 0; i < f->ncallees; i++)
    if (strlen(f->callees[i]) == len && !memcmp(f->callees[i], name, len)) return 0;
  int rc = grow((void **)&f->callees, &f->ccap, f->ncallees + 1, sizeof *f->callees);
  if (rc) return rc;
  char *c = dup_n(name, len);
  if (!c) return RCL_ERR_OUT_OF_MEMORY;
  f->callees[f->ncallees++] = c;
  return 0;
}

long rcl__audit_fn_find(const rcl__audit_module *m, const char *name) {
  for (size_t i = 0; i < m->n; i++)
    if (!strcmp(m->fns[i].name, name)) return (long)i;
  return -1;
}

int rcl__audit_reach(const rcl__audit_module *m, size_t start, unsigned char *reach) {
  /* Depth-first with an explicit stack: call graphs of real programs are shallow, but recursion in a
   * malformed binary must not recurse here. */
  size_t *stack = rcl__malloc((m->n ? m->n : 1) * sizeof *stack), top = 0;
  if (!stack) return RCL_ERR_OUT_OF_MEMORY;
  reach[start] = 1;
  stack[top++] = start;
  while (top) {
    const rcl__audit_fn *f = &m->fns[stack[--top]];
    for (size_t c = 0; c < f->ncallees; c++) {
      long j = rcl__audit_fn_find(m, f->callees[c]);
      if (j >= 0 && !reach[j]) {
        reach[j] = 1;
        stack[top++] = (size_t)j;
      }
    }
  }
  rcl__free(stack);
  return 0;
}

void rcl__audit_module_free(rcl__audit_module *m) {
  for (size_t i = 0; i < m->n; i++) {
    rcl__audit_fn *f = &m->fns[i];
    for (size_t h = 0; h < f->nhits; h++) rcl__free(f->hits[h].what);
    for (size_t c = 0; c < f->ncallees; c++) rcl__free(f->callees[c]);
    rcl__free(f->name);
    rcl__free(f->hits);
    rcl__free(f->callees);
  }
  rcl__free(m->fns);
  memset(m, 0, sizeof *m);
}
