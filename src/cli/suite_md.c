/* The MD family's cases in the standard suite: a LAMMPS "melt"-style fcc lattice (density 0.8442,
 * temperature 3.0, cutoff 2.5, rcl_md_lattice seed 87287) through every force path, in both dtypes — the
 * forces and energies of the initial configuration (contract md.lj) and a short NVE trajectory (md.nve,
 * dt 0.005) — and the LAMMPS data file tests/data/md/melt.data (4000 atoms written by LAMMPS itself).
 *
 * Lattice positions are displaced by jitter: every coordinate, atom by atom and x y z in order, moves by
 * 0.1 * (u - 0.5) with u = rcl_rng_uniform of splitmix64 seed 4242 (binary64), then wraps into the box
 * once (+len below lo, -len at or above hi). On a perfect lattice every force cancels to exactly zero,
 * which would check nothing.
 *
 * The output of a case, in the case's dtype: the 3N positions, the 3N velocities and the 3N forces (each
 * the correctly rounded value of its fixed-point sum, contract md.lj "Real forces"), in the system's atom
 * order, then pe, ke and virial of the final step (md.thermo: binary64 values of the exact integer sums,
 * rounded once more to binary32 in f32 cases). The reference is the host C reference (src/md/md_ref.c). In
 * native mode the same kernels accumulate in floating point, so check reports how far those drift.
 *
 * The symmetric path needs 64-bit integer atomics: where the device lacks them the run is refused with
 * RCL_ERR_UNSUPPORTED and the result is recorded as unsupported, with the library's reason.
 *
 * Split runs (check's split column): the same case through rcl_split_md_create over all selected devices,
 * which must give the reference's bytes (a device that lacks fp64 or, for the symmetric path, 64-bit
 * integer atomics is left out of the split). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suite.h"

enum { P_PATH, P_CELLS, P_STEPS };

#define MD_DENSITY 0.8442
#define MD_TEMP 3.0
#define MD_SEED 87287
#define MD_DT 0.005
#define MD_JITTER 0.1
#define MD_JITTER_SEED 4242
static const char melt_data[] = "tests/data/md/melt.data";

static int add(suite_list *l, int quick, rcl_dtype dt, rcl_md_path path, size_t cells, size_t steps,
               const char *input) {
  char what[64];
  if (input)
    snprintf(what, sizeof what, "%s", strrchr(input, '/') + 1);
  else
    snprintf(what, sizeof what, "fcc%zu n=%zu jitter=0.1", cells, 4 * cells * cells * cells);
  suite_case *c;
  if (steps)
    c = suite_add(l, &suite_md, RCL_FAMILY_MD, dt, quick, "md.nve.v1", "md nve %s %s %s steps=%zu", rcl_dtype_name(dt),
                  rcl_md_path_name(path), what, steps);
  else
    c = suite_add(l, &suite_md, RCL_FAMILY_MD, dt, quick, "md.lj.v1", "md lj %s %s %s step=0", rcl_dtype_name(dt),
                  rcl_md_path_name(path), what);
  if (!c) return -1;
  c->p[P_PATH] = (uint64_t)path, c->p[P_CELLS] = cells, c->p[P_STEPS] = steps;
  if (input) snprintf(c->input, sizeof c->input, "%s", input);
  return 0;
}

static int cases(suite_list *l) {
  static const rcl_md_path paths[] = {RCL_MD_PATH_GATHER, RCL_MD_PATH_SYMMETRIC, RCL_MD_PATH_ALLPAIRS,
                                      RCL_MD_PATH_TASK};
  int rc = 0;
  for (int d = 0; d < 2 && !rc; d++) {
    rcl_dtype dt = d ? RCL_F64 : RCL_F32;
    /* 256 atoms: a few hundred, as LAMMPS' melt example at cells 4; every path, step 0 and 50 steps. */
    for (size_t p = 0; p < sizeof paths / sizeof paths[0] && !rc; p++) {
      rc = add(l, 1, dt, paths[p], 4, 0, NULL);
      if (!rc) rc = add(l, paths[p] != RCL_MD_PATH_TASK, dt, paths[p], 4, 50, NULL);
    }
    /* The LAMMPS data file (4000 atoms): forces and energy of LAMMPS' own configuration. */
    if (!rc) rc = add(l, 1, dt, RCL_MD_PATH_GATHER, 0, 0, melt_data);
    /* Longer and larger runs (full suite): 500 atoms, 500 steps, through several neighbour-list rebuilds. */
    if (!rc) rc = add(l, 0, dt, RCL_MD_PATH_GATHER, 5, 500, NULL);
    if (!rc) rc = add(l, 0, dt, RCL_MD_PATH_SYMMETRIC, 5, 500, NULL);
  }
  return rc;
}

/* The input file: as named (relative to the working directory), else under $REPROCL_DATA_PREFIX (the
 * source tree when run from elsewhere, as the CLI tests do). */
static int load(rcl_md_system **sys, rcl_md_lj *lj, const suite_case *c) {
  *lj = (rcl_md_lj)RCL_MD_LJ_INIT;
  if (!c->input[0]) {
    int rc = rcl_md_lattice(sys, "fcc", (size_t)c->p[P_CELLS], MD_DENSITY, MD_TEMP, MD_SEED);
    if (rc) return rc;
    rc = rcl_md_displace(*sys, MD_JITTER, MD_JITTER_SEED); /* off the lattice: forces not all zero */
    if (rc) rcl_md_system_free(*sys);
    return rc;
  }
  char path[1024];
  const char *pre = getenv("REPROCL_DATA_PREFIX");
  snprintf(path, sizeof path, "%s%s", access(c->input, R_OK) != 0 && pre ? pre : "", c->input);
  if (access(path, R_OK) != 0) { /* the reader's error names the file; the case is input-missing */
    if (rcl_md_read(sys, lj, path) == 0) rcl_md_system_free(*sys);
    *sys = NULL;
    return RCL_ERR_NOT_FOUND;
  }
  return rcl_md_read(sys, lj, path);
}

static void put(unsigned char *out, size_t i, rcl_dtype dt, double v) {
  if (dt == RCL_F32) {
    float f = (float)v;
    memcpy(out + 4 * i, &f, 4);
  } else {
    memcpy(out + 8 * i, &v, 8);
  }
}

static int compute(const suite_case *c, const suite_target *t, void **out, size_t *bytes) {
  rcl_md_system *sys = NULL;
  rcl_md_lj lj;
  int rc = load(&sys, &lj, c);
  if (rc) return rc;
  rcl_md_options o = RCL_MD_OPTIONS_INIT;
  o.path = (rcl_md_path)c->p[P_PATH];
  rcl_md *md = NULL;
  size_t n3 = 3 * sys->natoms, es = rcl_dtype_size(c->dtype);
  unsigned char *r = malloc((3 * n3 + 3) * es);
  if (!r) rc = RCL_ERR_OUT_OF_MEMORY;
  if (!rc)
    rc = t && t->split ? rcl_split_md_create(&md, t->split, c->dtype, sys, &lj, &o)
                       : rcl_md_create(&md, t ? t->ctx : NULL, c->dtype, sys, &lj, &o);
  if (!rc && c->p[P_STEPS]) rc = rcl_md_run(md, (size_t)c->p[P_STEPS], MD_DT, 0, NULL, NULL);
  if (!rc) rc = rcl_md_get_state(md, r, r + n3 * es);
  if (!rc) rc = rcl_md_get_forces(md, r + 2 * n3 * es, NULL);
  rcl_md_thermo th;
  if (!rc) rc = rcl_md_thermo_get(md, &th);
  if (!rc) {
    put(r, 3 * n3, c->dtype, th.pe);
    put(r, 3 * n3 + 1, c->dtype, th.ke);
    put(r, 3 * n3 + 2, c->dtype, th.virial);
    *out = r;
    *bytes = (3 * n3 + 3) * es;
  } else {
    free(r);
  }
  rcl_md_free(md);
  rcl_md_system_free(sys);
  return rc;
}

SUITE_TARGET_ENTRIES(compute)

const suite_family suite_md = {"md", cases, reference, run, run_split};
