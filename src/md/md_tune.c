/* The MD family's tuner plug-in (docs/tuning.md, "Plugging a family in"): per force path (gather,
 * symmetric, allpairs, task) the tunables of a simulation step — the fixed-point conversion, the force
 * kernel's work-group size (the tile of allpairs) and the work-group size of the cell-list, neighbour-list,
 * integration and thermo kernels. The validity predicate is the launch planner rcl_md_create uses
 * (rcl__md_plan, after the programs are built). A run creates a simulation of the tuning system (a
 * scratch copy, generated here: the caller's system is never seen by the tuner) on the tuner's queue and
 * advances it RCL_MD_TUNE_STEPS steps — MD steps are in place, so every run starts again from the pristine
 * system; the digest covers the positions, velocities and forces (the exact fixed-point sums) it reached. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "md/md_internal.h"

static const size_t convert_values[] = {RCL_MD_CONVERT_BUILTIN, RCL_MD_CONVERT_FLOAT64, RCL_MD_CONVERT_INTEGER};
static const char *const convert_labels[] = {"builtin", "float64", "integer"};
static const size_t local_values[] = {32, 64, 128, 256};
static const size_t build_values[] = {32, 64, 128, 256};

/* Indexed by RCL_MD_P_*; the names are the rcl_md_options fields. */
static const rcl_tune_param_def md_params[] = {
    {"convert", convert_values, 3, convert_labels},
    {"local_size", local_values, sizeof local_values / sizeof local_values[0], NULL},
    {"build_local_size", build_values, sizeof build_values / sizeof build_values[0], NULL},
};

/* ---- the tuning problem (shared with the tests) --------------------------------------------------------- */

int rcl__md_tune_system(rcl_md_system **out, rcl_md_lj *lj, size_t n) {
  size_t cells = 3;
  while (4 * (cells + 1) * (cells + 1) * (cells + 1) <= n) cells++;
  int rc = rcl_md_lattice(out, "fcc", cells, 0.8442, 3.0, RCL_MD_TUNE_SEED);
  if (rc) return rc;
  /* Off the lattice: on a perfect one every force cancels to exactly zero, and a wrong summation would
   * still give zero. */
  rc = rcl_md_displace(*out, 0.1, RCL_MD_TUNE_SEED + 1);
  if (rc) {
    rcl_md_system_free(*out);
    *out = NULL;
    return rc;
  }
  *lj = (rcl_md_lj)RCL_MD_LJ_INIT;
  return 0;
}

/* ---- callbacks ------------------------------------------------------------------------------------------ */

typedef struct {
  rcl_context *ctx;
  rcl_md_path path;
  rcl_dtype dt;
  rcl_md_system *sys;
  rcl_md_lj lj;
  size_t defv[RCL_TUNE_MAX_PARAMS]; /* the default point's values (check() of the default runs first) */
  rcl_md *md;                       /* the simulation of the last run */
} md_state;

static void md_teardown(void *p) {
  md_state *s = p;
  if (!s) return;
  rcl_md_free(s->md);
  rcl_md_system_free(s->sys);
  rcl__free(s);
}

static int md_setup_path(void **out, rcl_context *ctx, rcl_dtype dt, size_t n, rcl_md_path path) {
  md_state *s = rcl__calloc(1, sizeof *s);
  if (!s) return RCL_ERR_OUT_OF_MEMORY;
  s->ctx = ctx;
  s->path = path;
  s->dt = dt;
  int rc = rcl__md_tune_system(&s->sys, &s->lj, n);
  if (!rc) rc = rcl_md_check(s->sys, &s->lj, dt);
  /* Builds the programs now (a first call pays for that anyway; the budget counts launches), and refuses
   * a path the device cannot run at all (symmetric without int64 atomics) or a system too large for it. */
  rcl_md_options o = RCL_MD_OPTIONS_INIT;
  o.path = path;
  if (!rc) rc = rcl__md_plan(&o, ctx, dt, s->sys->natoms, s->sys->ntypes, NULL);
  if (rc) {
    md_teardown(s);
    return rc;
  }
  *out = s;
  return 0;
}

/* The options of a point: every parameter explicit (strict); the task path has no work-group size. */
static rcl_md_options opts_of(const md_state *s, const size_t *v) {
  rcl_md_options o = RCL_MD_OPTIONS_INIT;
  o.path = s->path;
  o.convert = (rcl_md_convert)v[RCL_MD_P_CONVERT];
  o.local_size = s->path == RCL_MD_PATH_TASK ? 0 : v[RCL_MD_P_LOCAL];
  o.build_local_size = v[RCL_MD_P_BUILD];
  return o;
}

/* Validity: the planner of rcl_md_create. The default point resolves like a call that leaves everything
 * open with the platform values as the tuner's (soft); every other point like explicit options (strict:
 * what the device cannot launch is refused, never clamped). */
static int md_check(void *p, rcl_tune_point *pt, int is_default, char *why, size_t wl) {
  md_state *s = p;
  rcl_md_options o = RCL_MD_OPTIONS_INIT;
  o.path = s->path;
  if (!is_default) o = opts_of(s, pt->v);
  int rc = rcl__md_plan(&o, s->ctx, s->dt, s->sys->natoms, s->sys->ntypes, is_default ? pt->v : NULL);
  if ((rc == RCL_ERR_INVALID_ARG || rc == RCL_ERR_UNSUPPORTED) && !is_default) {
    snprintf(why, wl, "%s", rcl_error_last());
    rcl_error_clear();
    return 0;
  }
  if (rc) return rc;
  memset(pt->eff, 0, sizeof pt->eff);
  pt->eff[RCL_MD_P_CONVERT] = (size_t)o.convert;
  pt->eff[RCL_MD_P_LOCAL] = s->path == RCL_MD_PATH_TASK ? 0 : o.local_size;
  pt->eff[RCL_MD_P_BUILD] = o.build_local_size;
  if (is_default) {
    /* Every parameter of a choice has a value; the task path's ignored work-group size keeps the
     * platform value or the built-in fallback. */
    pt->v[RCL_MD_P_CONVERT] = pt->eff[RCL_MD_P_CONVERT];
    pt->v[RCL_MD_P_BUILD] = pt->eff[RCL_MD_P_BUILD];
    if (pt->eff[RCL_MD_P_LOCAL])
      pt->v[RCL_MD_P_LOCAL] = pt->eff[RCL_MD_P_LOCAL];
    else if (!pt->v[RCL_MD_P_LOCAL])
      pt->v[RCL_MD_P_LOCAL] = 128;
    memcpy(s->defv, pt->v, sizeof s->defv);
  } else if (!pt->eff[RCL_MD_P_LOCAL]) {
    pt->v[RCL_MD_P_LOCAL] = s->defv[RCL_MD_P_LOCAL]; /* ignored: the default's value (the same candidate) */
  }
  return 1;
}

/* A fresh simulation of the pristine tuning system with the launch the checker resolved (explicit
 * options), RCL_MD_TUNE_STEPS steps: every kernel launch goes through rcl__chain_kernel on q. */
static int md_run(void *p, const rcl_tune_point *pt, cl_command_queue q) {
  md_state *s = p;
  rcl_md_free(s->md);
  s->md = NULL;
  rcl_md_options o = opts_of(s, pt->eff);
  int rc = rcl__md_create_on(&s->md, s->ctx, q, s->dt, s->sys, &s->lj, &o, NULL);
  if (!rc) rc = rcl_md_run(s->md, RCL_MD_TUNE_STEPS, RCL_MD_TUNE_DT, 0, NULL, NULL);
  return rc;
}

/* Positions and velocities (the dtype) and the forces: the exact int64 sums, or in native mode the
 * floating-point forces. */
static int md_digest(void *p, cl_command_queue q, char hex[RCL_SHA256_HEX_SIZE]) {
  md_state *s = p;
  (void)q; /* the simulation reads on its own queue, q */
  if (!s->md) return rcl__fail(RCL_ERR_INTERNAL, "MD tuning: digest before a run");
  size_t n3 = 3 * s->sys->natoms, es = rcl_dtype_size(s->dt);
  unsigned char *h = rcl__malloc(n3 * (2 * es + 8));
  if (!h) return RCL_ERR_OUT_OF_MEMORY;
  int native = s->ctx->mode == RCL_MODE_NATIVE;
  int rc = rcl_md_get_state(s->md, h, h + n3 * es);
  if (!rc)
    rc = native ? rcl_md_get_forces(s->md, h + 2 * n3 * es, NULL)
                : rcl_md_get_forces(s->md, NULL, (int64_t *)(void *)(h + 2 * n3 * es));
  if (!rc) rcl_sha256_hex(hex, h, n3 * (native ? 3 * es : 2 * es + 8));
  rcl__free(h);
  return rc;
}

/* ---- descriptors ------------------------------------------------------------------------------------------ */

static int setup_gather(void **out, rcl_context *ctx, rcl_dtype dt, size_t n) {
  return md_setup_path(out, ctx, dt, n, RCL_MD_PATH_GATHER);
}
static int setup_symmetric(void **out, rcl_context *ctx, rcl_dtype dt, size_t n) {
  return md_setup_path(out, ctx, dt, n, RCL_MD_PATH_SYMMETRIC);
}
static int setup_allpairs(void **out, rcl_context *ctx, rcl_dtype dt, size_t n) {
  return md_setup_path(out, ctx, dt, n, RCL_MD_PATH_ALLPAIRS);
}
static int setup_task(void **out, rcl_context *ctx, rcl_dtype dt, size_t n) {
  return md_setup_path(out, ctx, dt, n, RCL_MD_PATH_TASK);
}

/* Systems below 2^12 atoms are launch-bound: they keep the defaults. `reprocl tune` tunes 2^15 atoms by
 * default (allpairs, O(N^2) and limited to 16384 atoms: 2^12). The program defines are those of a
 * one-type system with the built-in conversion, the program bundles hold; the contract version is that
 * of md.nve (docs/contracts.md §9: v1), which includes md.lj. */
#define MD_KERNEL(VAR, NAME, SETUP, TUNE_N)                                                                            \
  const rcl_tune_kernel VAR = {NAME,      RCL_FAMILY_MD, "md.cl",    "-DMD_NT=1 -DMD_EV=0 -DMD_RTE=0",                 \
                               1,         1u << 12,      TUNE_N,     RCL_MD_NPARAMS,                                   \
                               md_params, SETUP,         md_check,   NULL,                                             \
                               md_run,    md_digest,     md_teardown};
MD_KERNEL(rcl__tk_md_gather, "md.gather", setup_gather, 1u << 15)
MD_KERNEL(rcl__tk_md_symmetric, "md.symmetric", setup_symmetric, 1u << 15)
MD_KERNEL(rcl__tk_md_allpairs, "md.allpairs", setup_allpairs, 1u << 12)
MD_KERNEL(rcl__tk_md_task, "md.task", setup_task, 1u << 15)

const rcl_tune_kernel *rcl__md_tune_kernel(rcl_md_path path) {
  switch (path) {
  case RCL_MD_PATH_SYMMETRIC:
    return &rcl__tk_md_symmetric;
  case RCL_MD_PATH_ALLPAIRS:
    return &rcl__tk_md_allpairs;
  case RCL_MD_PATH_TASK:
    return &rcl__tk_md_task;
  default:
    return &rcl__tk_md_gather;
  }
}
