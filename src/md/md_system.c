/* The inputs of a simulation: the names of MD's enumerations, the system object (rcl_md_system) and the
 * Lennard-Jones pair coefficients. The readers and generators (md_io.c) build systems with these. */
#include <stdlib.h>
#include <strings.h>

#include "md/md_internal.h"

/* ---- names -------------------------------------------------------------------------------------------- */

const char *rcl_md_mixing_name(rcl_md_mixing m) {
  return m == RCL_MD_MIX_GEOMETRIC ? "geometric" : m == RCL_MD_MIX_ARITHMETIC ? "arithmetic" : "unknown-mixing";
}

int rcl_md_mixing_parse(rcl_md_mixing *out, const char *name) {
  if (!out || !name) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_mixing_parse: NULL argument");
  if (!strcasecmp(name, "geometric"))
    *out = RCL_MD_MIX_GEOMETRIC;
  else if (!strcasecmp(name, "arithmetic"))
    *out = RCL_MD_MIX_ARITHMETIC;
  else
    return rcl__fail(RCL_ERR_INVALID_ARG, "unknown mixing rule \"%s\" (expected geometric or arithmetic)", name);
  return 0;
}

static const char *const path_names[] = {"auto", "gather", "symmetric", "allpairs", "task"};

const char *rcl_md_path_name(rcl_md_path p) { return (unsigned)p <= RCL_MD_PATH_TASK ? path_names[p] : "unknown-path"; }

int rcl_md_path_parse(rcl_md_path *out, const char *name) {
  if (!out || !name) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_path_parse: NULL argument");
  for (int i = 0; i <= RCL_MD_PATH_TASK; i++)
    if (!strcasecmp(name, path_names[i])) {
      *out = (rcl_md_path)i;
      return 0;
    }
  return rcl__fail(RCL_ERR_INVALID_ARG,
                   "unknown force path \"%s\" (expected auto, gather, symmetric, allpairs or task)", name);
}

const char *rcl_md_convert_name(rcl_md_convert c) {
  static const char *const names[] = {"auto", "builtin", "float64", "integer"};
  return (unsigned)c <= RCL_MD_CONVERT_INTEGER ? names[c] : "unknown-conversion";
}

int rcl_md_lj_set_pair(rcl_md_lj *lj, int ti, int tj, double epsilon, double sigma) {
  if (!lj) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_lj_set_pair: NULL coefficients");
  if (ti < 1 || ti > RCL_MD_MAX_TYPES || tj < 1 || tj > RCL_MD_MAX_TYPES)
    return rcl__fail(RCL_ERR_INVALID_ARG, "pair coefficients for types %d %d: types are 1..%d", ti, tj,
                     RCL_MD_MAX_TYPES);
  lj->pair_epsilon[ti - 1][tj - 1] = lj->pair_epsilon[tj - 1][ti - 1] = epsilon;
  lj->pair_sigma[ti - 1][tj - 1] = lj->pair_sigma[tj - 1][ti - 1] = sigma;
  lj->pair_set[ti - 1][tj - 1] = lj->pair_set[tj - 1][ti - 1] = 1;
  return 0;
}

/* ---- systems ------------------------------------------------------------------------------------------ */

int rcl_md_system_alloc(rcl_md_system **out, size_t natoms, int ntypes) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_system_alloc: NULL output");
  *out = NULL;
  if (ntypes < 1 || ntypes > RCL_MD_MAX_TYPES)
    return rcl__fail(RCL_ERR_INVALID_ARG, "%d atom types: reprocl supports 1..%d", ntypes, RCL_MD_MAX_TYPES);
  size_t b3, b1;
  int rc = rcl__mul_size(&b3, natoms ? natoms : 1, 3 * sizeof(double), "positions");
  if (!rc) rc = rcl__mul_size(&b1, natoms ? natoms : 1, sizeof(long long), "atom ids");
  if (rc) return rc;
  rcl_md_system *s = rcl__calloc(1, sizeof *s);
  if (!s) return RCL_ERR_OUT_OF_MEMORY;
  s->natoms = natoms;
  s->ntypes = ntypes;
  s->pos = rcl__calloc(1, b3);
  s->vel = rcl__calloc(1, b3);
  s->type = rcl__calloc(natoms ? natoms : 1, sizeof(int));
  s->id = rcl__calloc(1, b1);
  if (!s->pos || !s->vel || !s->type || !s->id) {
    rcl_md_system_free(s);
    return RCL_ERR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < natoms; i++) {
    s->type[i] = 1;
    s->id[i] = (long long)i + 1;
  }
  for (int d = 0; d < 3; d++) {
    s->hi[d] = 1.0;
    s->periodic[d] = 1;
  }
  for (int t = 0; t < RCL_MD_MAX_TYPES; t++) s->mass[t] = 1.0;
  *out = s;
  return 0;
}

void rcl_md_system_free(rcl_md_system *s) {
  if (!s) return;
  rcl__free(s->pos);
  rcl__free(s->vel);
  rcl__free(s->type);
  rcl__free(s->id);
  rcl__free(s);
}
