/* Molecular dynamics on every device: forces, energies, virial and trajectories bitwise against the
 * host reference of the contract (md_ref.c) over every force path, several work-group and tile sizes,
 * conversion methods and neighbour skins; golden digests; canonical neighbour lists; agreement with
 * LAMMPS on the melt example and the HEAT data file; and the errors of bad input. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "md/md_internal.h"
#include "testlib.h"

#define DATA REPROCL_SOURCE_DIR "/tests/data/md/"
/* HEAT/data.lj of the lammps-examples package; REPROCL_LAMMPS_EXAMPLES overrides the directory (hosts
 * where the package is unpacked elsewhere) */
static const char *heat_data(void) {
  static char path[512];
  const char *dir = getenv("REPROCL_LAMMPS_EXAMPLES");
  snprintf(path, sizeof path, "%s/HEAT/data.lj", dir && *dir ? dir : "/usr/share/lammps/examples");
  return path;
}
#define HEAT_DATA heat_data()

static const rcl_dtype dtypes[] = {RCL_F32, RCL_F64};

/* ---- systems ------------------------------------------------------------------------------------------- */

/* An fcc lattice at liquid density with every coordinate jittered by up to +-jitter: a disordered
 * configuration with non-zero forces and no overlaps. */
static rcl_md_system *jittered(size_t cells, double density, double temp, double jitter, uint64_t seed) {
  rcl_md_system *s;
  rt_ok(rcl_md_lattice(&s, "fcc", cells, density, temp, seed));
  rt_rng r = {seed * 7 + 1};
  for (size_t i = 0; i < 3 * s->natoms; i++) {
    int d = (int)(i % 3);
    double x = s->pos[i] + jitter * (2 * rt_uniform(&r) - 1);
    if (x < s->lo[d]) x += s->hi[d] - s->lo[d];
    if (x >= s->hi[d]) x -= s->hi[d] - s->lo[d];
    s->pos[i] = x;
  }
  return s;
}

/* S1: 256 atoms of one type. */
static rcl_md_system *system1(void) { return jittered(4, 0.8442, 2.0, 0.08, 11); }

/* S2: three types (masses 1, 2, 0.5), arithmetic mixing, one explicit pair, energy shift, at a lower
 * density in a box of 4 cells. */
static rcl_md_system *system2(rcl_md_lj *lj) {
  rcl_md_system *s = jittered(4, 0.7, 1.5, 0.1, 23);
  s->ntypes = 3;
  s->mass[1] = 2.0;
  s->mass[2] = 0.5;
  rt_rng r = {99};
  for (size_t i = 0; i < s->natoms; i++) s->type[i] = 1 + (int)(rt_next(&r) % 3);
  *lj = (rcl_md_lj)RCL_MD_LJ_INIT;
  lj->mixing = RCL_MD_MIX_ARITHMETIC;
  lj->shift = 1;
  lj->epsilon[1] = 0.8;
  lj->sigma[1] = 1.1;
  lj->epsilon[2] = 1.2;
  lj->sigma[2] = 0.9;
  rt_ok(rcl_md_lj_set_pair(lj, 1, 3, 0.5, 1.05));
  return s;
}

/* S3: S1 with open boundaries along x (atoms may leave the box there). */
static rcl_md_system *system3(void) {
  rcl_md_system *s = system1();
  s->periodic[0] = 0;
  return s;
}

/* ---- helpers ------------------------------------------------------------------------------------------- */

typedef struct {
  int64_t *fixed;
  void *force;
  rcl_md_thermo th;
  void *state; /* positions then velocities */
} snapshot;

static void snap(snapshot *sn, rcl_md *md) {
  size_t n3 = 3 * rcl_md_natoms(md), es = rcl_dtype_size(rcl_md_dtype(md));
  sn->fixed = malloc(n3 * 8);
  sn->force = malloc(n3 * es);
  sn->state = malloc(2 * n3 * es);
  ck_assert(sn->fixed && sn->force && sn->state);
  rt_ok(rcl_md_get_forces(md, sn->force, sn->fixed));
  rt_ok(rcl_md_thermo_get(md, &sn->th));
  rt_ok(rcl_md_get_state(md, sn->state, (char *)sn->state + n3 * es));
}

static void snap_free(snapshot *sn) {
  free(sn->fixed);
  free(sn->force);
  free(sn->state);
}

static void assert_thermo_eq(const rcl_md_thermo *a, const rcl_md_thermo *b, const char *what) {
  const double va[6] = {a->pe, a->ke, a->etotal, a->temperature, a->pressure, a->virial};
  const double vb[6] = {b->pe, b->ke, b->etotal, b->temperature, b->pressure, b->virial};
  ck_assert_msg(a->step == b->step, "%s: step %zu vs %zu", what, a->step, b->step);
  rt_assert_bits_eq(va, vb, 6, RCL_F64, "%s: thermo (pe ke etotal temperature pressure virial) at step %zu", what,
                    a->step);
}

static void assert_snap_eq(const snapshot *got, const snapshot *want, size_t n, rcl_dtype dt, const char *what) {
  ck_assert_msg(memcmp(got->fixed, want->fixed, 3 * n * 8) == 0, "%s: fixed-point forces differ", what);
  rt_assert_bits_eq(got->force, want->force, 3 * n, dt, "%s: forces", what);
  assert_thermo_eq(&got->th, &want->th, what);
  rt_assert_bits_eq(got->state, want->state, 6 * n, dt, "%s: positions and velocities", what);
}

/* Golden digests (tests/data/golden/md.txt): golden_ref for the host reference (recorded under
 * REPROCL_UPDATE_GOLDEN=1), golden_device for a device's result (only compared). */
static void golden_ref(const char *name, const void *data, size_t bytes) { rt_golden_ref("md.txt", name, data, bytes); }
static void golden_device(size_t dev, const char *name, const void *data, size_t bytes) {
  rt_golden_device("md.txt", name, data, bytes, rt_device_name(dev));
}

static void golden_snap(const char *sys, rcl_dtype dt, const char *what, const snapshot *sn, size_t n) {
  char name[128];
  snprintf(name, sizeof name, "md.%s.%s.%s.forces", sys, rcl_dtype_name(dt), what);
  golden_ref(name, sn->fixed, 3 * n * 8);
  snprintf(name, sizeof name, "md.%s.%s.%s.state", sys, rcl_dtype_name(dt), what);
  golden_ref(name, sn->state, 6 * n * rcl_dtype_size(dt));
}

/* Creates a simulation, or returns NULL when the options are refused for this device's limits (a
 * work-group size above a kernel's maximum) — which the test counts and reports. */
static rcl_md *create_or_skip(rcl_context *c, rcl_dtype dt, const rcl_md_system *s, const rcl_md_lj *lj,
                              const rcl_md_options *o, int *skipped) {
  rcl_md *md = NULL;
  int rc = rcl_md_create(&md, c, dt, s, lj, o);
  if (rc == RCL_ERR_INVALID_ARG && strstr(rcl_error_last(), "exceeds")) {
    (*skipped)++;
    return NULL;
  }
  ck_assert_msg(rc == 0, "rcl_md_create (path %s, local %zu, build local %zu, convert %s): %s",
                rcl_md_path_name(o->path), o->local_size, o->build_local_size, rcl_md_convert_name(o->convert),
                rcl_error_last());
  return md;
}

/* The launch variants every bitwise test sweeps: each path, several group/tile sizes, conversions. */
typedef struct {
  rcl_md_path path;
  size_t local, build_local;
  rcl_md_convert convert;
} variant;
static const variant variants[] = {
    {RCL_MD_PATH_GATHER, 0, 0, RCL_MD_CONVERT_AUTO},       {RCL_MD_PATH_GATHER, 8, 16, RCL_MD_CONVERT_BUILTIN},
    {RCL_MD_PATH_GATHER, 64, 32, RCL_MD_CONVERT_FLOAT64},  {RCL_MD_PATH_GATHER, 32, 8, RCL_MD_CONVERT_INTEGER},
    {RCL_MD_PATH_SYMMETRIC, 0, 0, RCL_MD_CONVERT_AUTO},    {RCL_MD_PATH_SYMMETRIC, 16, 64, RCL_MD_CONVERT_BUILTIN},
    {RCL_MD_PATH_ALLPAIRS, 0, 0, RCL_MD_CONVERT_AUTO},     {RCL_MD_PATH_ALLPAIRS, 16, 0, RCL_MD_CONVERT_AUTO},
    {RCL_MD_PATH_ALLPAIRS, 128, 0, RCL_MD_CONVERT_AUTO},   {RCL_MD_PATH_TASK, 0, 32, RCL_MD_CONVERT_AUTO}};
#define NVARIANTS (sizeof variants / sizeof variants[0])

/* Whether a variant can run here; if not, asserts the refusal is the documented one. */
static int variant_ok(const variant *v, rcl_context *c, rcl_dtype dt, const rcl_md_system *s, const rcl_md_lj *lj) {
  const rcl_device_profile *p = rcl_context_profile(c);
  rcl_md_options o = RCL_MD_OPTIONS_INIT;
  o.path = v->path;
  o.convert = v->convert;
  rcl_md *md = NULL;
  if (v->path == RCL_MD_PATH_SYMMETRIC && !p->int64_atomics) {
    rt_fails(rcl_md_create(&md, c, dt, s, lj, &o), RCL_ERR_UNSUPPORTED, "64-bit integer atomics");
    return 0;
  }
  if (v->convert == RCL_MD_CONVERT_FLOAT64 && !p->fp64) {
    rt_fails(rcl_md_create(&md, c, dt, s, lj, &o), RCL_ERR_UNSUPPORTED, "needs fp64");
    return 0;
  }
  if (v->convert == RCL_MD_CONVERT_INTEGER && dt != RCL_F32) {
    rt_fails(rcl_md_create(&md, c, dt, s, lj, &o), RCL_ERR_INVALID_ARG, "f32 only");
    return 0;
  }
  return 1;
}

static rcl_md_options variant_options(const variant *v, double skin) {
  rcl_md_options o = RCL_MD_OPTIONS_INIT;
  o.path = v->path;
  o.local_size = v->local;
  o.build_local_size = v->build_local;
  o.convert = v->convert;
  o.skin = skin;
  return o;
}

/* ---- forces and energies ------------------------------------------------------------------------------ */

static void check_forces(size_t dev, rcl_dtype dt, const char *name, rcl_md_system *s, const rcl_md_lj *lj) {
  rcl_md *ref;
  rt_ok(rcl_md_create(&ref, NULL, dt, s, lj, NULL));
  snapshot want;
  snap(&want, ref);
  rcl_md_free(ref);
  golden_snap(name, dt, "step0", &want, s->natoms);
  rcl_context *c = rt_ctx(dev);
  int ran = 0, skipped = 0;
  for (size_t k = 0; k < NVARIANTS; k++) {
    if (!variant_ok(&variants[k], c, dt, s, lj)) continue;
    rcl_md_options o = variant_options(&variants[k], 0);
    rcl_md *md = create_or_skip(c, dt, s, lj, &o, &skipped);
    if (!md) continue;
    snapshot got;
    snap(&got, md);
    char what[256];
    snprintf(what, sizeof what, "%s %s on %s, path %s local %zu build %zu convert %s", name, rcl_dtype_name(dt),
             rt_device_name(dev), rcl_md_path_name(variants[k].path), variants[k].local, variants[k].build_local,
             rcl_md_convert_name(variants[k].convert));
    assert_snap_eq(&got, &want, s->natoms, dt, what);
    snap_free(&got);
    rcl_md_free(md);
    ran++;
  }
  ck_assert_msg(ran >= 5, "only %d variants ran on %s (%d refused for limits)", ran, rt_device_name(dev), skipped);
  snap_free(&want);
}

START_TEST(forces_bitwise) {
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_MD, dt)) {
      rcl_md_system *s = system1();
      rcl_md_lj lj = RCL_MD_LJ_INIT;
      rcl_md *md = NULL;
      rt_fails(rcl_md_create(&md, rt_ctx(_i), dt, s, &lj, NULL), RCL_ERR_UNSUPPORTED, "fp64");
      rcl_md_system_free(s);
      continue;
    }
    rcl_md_lj lj = RCL_MD_LJ_INIT, lj2;
    rcl_md_system *s1 = system1(), *s2 = system2(&lj2), *s3 = system3();
    check_forces(_i, dt, "s1", s1, &lj);
    check_forces(_i, dt, "s2", s2, &lj2);
    check_forces(_i, dt, "s3", s3, &lj);
    rcl_md_system_free(s1);
    rcl_md_system_free(s2);
    rcl_md_system_free(s3);
  }
}
END_TEST

/* ---- trajectories ------------------------------------------------------------------------------------- */

#define TRAJ_STEPS 60
#define TRAJ_EVERY 20

typedef struct {
  rcl_md_thermo rows[8];
  size_t n;
} thermo_rows;

static int collect(rcl_md *md, const rcl_md_thermo *t, void *user) {
  (void)md;
  thermo_rows *r = user;
  ck_assert(r->n < 8);
  r->rows[r->n++] = *t;
  return 0;
}

static void check_trajectory(size_t dev, rcl_dtype dt, const char *name, rcl_md_system *s, const rcl_md_lj *lj) {
  rcl_md *ref;
  thermo_rows want_rows = {.n = 0};
  rt_ok(rcl_md_create(&ref, NULL, dt, s, lj, NULL));
  rt_ok(rcl_md_run(ref, TRAJ_STEPS, 0.005, TRAJ_EVERY, collect, &want_rows));
  snapshot want;
  snap(&want, ref);
  rcl_md_free(ref);
  golden_snap(name, dt, "step60", &want, s->natoms);
  static const double skins[] = {0.3, 0.1, 1.0};
  rcl_context *c = rt_ctx(dev);
  int ran = 0, skipped = 0;
  for (size_t k = 0; k < NVARIANTS; k++) {
    if (!variant_ok(&variants[k], c, dt, s, lj)) continue;
    for (size_t sk = 0; sk < (variants[k].path == RCL_MD_PATH_GATHER && k == 0 ? 3u : 1u); sk++) {
      rcl_md_options o = variant_options(&variants[k], skins[(sk + k) % 3]);
      rcl_md *md = create_or_skip(c, dt, s, lj, &o, &skipped);
      if (!md) continue;
      thermo_rows rows = {.n = 0};
      /* two runs, so that a run boundary (and the deferred half kick) is crossed too */
      rt_ok(rcl_md_run(md, 25, 0.005, TRAJ_EVERY, collect, &rows));
      rt_ok(rcl_md_run(md, TRAJ_STEPS - 25, 0.005, TRAJ_EVERY, collect, &rows));
      snapshot got;
      snap(&got, md);
      char what[256];
      snprintf(what, sizeof what, "%s %s trajectory on %s, path %s local %zu build %zu convert %s skin %g", name,
               rcl_dtype_name(dt), rt_device_name(dev), rcl_md_path_name(o.path), o.local_size, o.build_local_size,
               rcl_md_convert_name(o.convert), o.skin);
      assert_snap_eq(&got, &want, s->natoms, dt, what);
      /* thermo rows: the reference's every TRAJ_EVERY steps; the device's also at the run boundary */
      size_t m = 0;
      for (size_t r = 0; r < rows.n; r++) {
        if (rows.rows[r].step % TRAJ_EVERY) continue;
        while (m < want_rows.n && want_rows.rows[m].step < rows.rows[r].step) m++;
        ck_assert_msg(m < want_rows.n, "%s: unexpected thermo step %zu", what, rows.rows[r].step);
        assert_thermo_eq(&rows.rows[r], &want_rows.rows[m], what);
      }
      if (o.path != RCL_MD_PATH_ALLPAIRS)
        ck_assert_msg(got.th.neighbor_builds >= 2, "%s: the lists were never rebuilt (%zu builds)", what,
                      got.th.neighbor_builds);
      snap_free(&got);
      rcl_md_free(md);
      ran++;
    }
  }
  ck_assert_msg(ran >= 5, "only %d variants ran on %s (%d refused for limits)", ran, rt_device_name(dev), skipped);
  snap_free(&want);
}

START_TEST(trajectory_bitwise) {
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_MD, dt)) continue;
    rcl_md_lj lj = RCL_MD_LJ_INIT, lj2;
    rcl_md_system *s1 = system1(), *s2 = system2(&lj2);
    check_trajectory(_i, dt, "s1", s1, &lj);
    check_trajectory(_i, dt, "s2", s2, &lj2);
    rcl_md_system_free(s1);
    rcl_md_system_free(s2);
  }
}
END_TEST

/* ---- neighbour lists ------------------------------------------------------------------------------------ */

/* The lists equal the brute-force set of partners within cutoff + skin (computed in the dtype with the
 * contract's operations), are the same for every work-group size, and have the same digest on every
 * device (golden). */
START_TEST(neighbor_lists_canonical) {
  rcl_md_system *s = system1();
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  size_t n = s->natoms, cap = RCL_MD_MAX_NEIGHBORS;
  size_t *lists[2], counts[2][256];
  static const size_t wb[2] = {8, 32};
  ck_assert(n == 256);
  for (int v = 0; v < 2; v++) {
    rcl_md_options o = RCL_MD_OPTIONS_INIT;
    o.build_local_size = wb[v];
    rcl_md *md = NULL;
    int skipped = 0;
    lists[v] = calloc(n * cap, sizeof(size_t));
    md = create_or_skip(rt_ctx(_i), RCL_F32, s, &lj, &o, &skipped);
    ck_assert_msg(md != NULL, "build_local_size %zu refused on %s", wb[v], rt_device_name(_i));
    for (size_t i = 0; i < n; i++) rt_ok(rcl_md_get_neighbors(md, i, &counts[v][i], lists[v] + i * cap, cap));
    rcl_md_free(md);
  }
  for (size_t i = 0; i < n; i++) {
    ck_assert_msg(counts[0][i] == counts[1][i] && !memcmp(lists[0] + i * cap, lists[1] + i * cap, counts[0][i] * sizeof(size_t)),
                  "atom %zu: the neighbour list depends on the work-group size on %s", i, rt_device_name(_i));
    /* the set: partners within (cutoff + skin) in binary32, minimum image */
    float rcs2 = (float)((2.5 + 0.3) * (2.5 + 0.3));
    size_t want = 0;
    for (size_t j = 0; j < n; j++) {
      if (j == i) continue;
      float r2 = 0;
      for (int d = 0; d < 3; d++) {
        float len = (float)(s->hi[d] - s->lo[d]), dd = (float)s->pos[3 * i + d] - (float)s->pos[3 * j + d];
        if (dd > len / 2) dd -= len;
        else if (dd < -len / 2) dd += len;
        r2 = d == 0 ? dd * dd : r2 + dd * dd;
      }
      if (!(r2 < rcs2)) continue;
      want++;
      int found = 0;
      for (size_t k = 0; k < counts[0][i]; k++) found |= lists[0][i * cap + k] == j;
      ck_assert_msg(found, "atom %zu: partner %zu (r2 %g) missing from its list on %s", i, j, (double)r2,
                    rt_device_name(_i));
    }
    ck_assert_msg(want == counts[0][i], "atom %zu: %zu partners in its list, %zu within cutoff + skin", i, counts[0][i],
                  want);
  }
  /* digest of all lists in list order: canonical means the same bytes on every device */
  uint32_t *flat = malloc(n * (cap + 1) * 4);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    flat[m++] = (uint32_t)counts[0][i];
    for (size_t k = 0; k < counts[0][i]; k++) flat[m++] = (uint32_t)lists[0][i * cap + k];
  }
  golden_device(_i, "md.s1.f32.neighbors", flat, m * 4);
  free(flat);
  free(lists[0]);
  free(lists[1]);
  rcl_md_system_free(s);
}
END_TEST

/* ---- LAMMPS ------------------------------------------------------------------------------------------------ */

typedef struct {
  double pe, ke, temp, press, pvirial;
  double *f; /* [3n] in atom ID order */
} lammps_ref;

static void read_ref(lammps_ref *r, const char *ref_path, const char *forces_path, size_t n) {
  char line[512];
  memset(r, 0, sizeof *r);
  FILE *f = fopen(ref_path, "r");
  ck_assert_msg(f != NULL, "cannot open %s", ref_path);
  ck_assert(fgets(line, sizeof line, f) != NULL);
  fclose(f);
  const char *keys[] = {"pe", "ke", "temp", "press", "pvirial"};
  double *dst[] = {&r->pe, &r->ke, &r->temp, &r->press, &r->pvirial};
  for (int k = 0; k < 5; k++) {
    char pat[16];
    snprintf(pat, sizeof pat, " %s ", keys[k]);
    const char *p = strstr(line, pat);
    *dst[k] = p ? strtod(p + strlen(pat), NULL) : NAN;
  }
  r->f = calloc(3 * n, sizeof(double));
  f = fopen(forces_path, "r");
  ck_assert_msg(f != NULL, "cannot open %s", forces_path);
  size_t got = 0;
  long id;
  double fx, fy, fz;
  while (fscanf(f, "%ld %lf %lf %lf", &id, &fx, &fy, &fz) == 4) {
    ck_assert(id >= 1 && (size_t)id <= n);
    r->f[3 * (id - 1)] = fx;
    r->f[3 * (id - 1) + 1] = fy;
    r->f[3 * (id - 1) + 2] = fz;
    got++;
  }
  fclose(f);
  ck_assert_msg(got == n, "%s has %zu force rows, expected %zu", forces_path, got, n);
}

static double rel(double got, double want) { return fabs(got - want) / fabs(want); }

/* Our forces against LAMMPS's: the largest component error relative to the largest force component. */
static double force_error(const void *force, rcl_dtype dt, const lammps_ref *r, size_t n) {
  double emax = 0, big = 0;
  for (size_t i = 0; i < 3 * n; i++) {
    double v = dt == RCL_F32 ? (double)((const float *)force)[i] : ((const double *)force)[i];
    emax = fmax(emax, fabs(v - r->f[i]));
    big = fmax(big, fabs(r->f[i]));
  }
  return emax / big;
}

/* One LAMMPS comparison for one dtype. Bounds: binary64 1e-12 relative (energies, pressure; forces
 * relative to the largest, limited by the fixed-point resolution 2^-38 per pair); binary32, when LAMMPS
 * saw the same binary32-rounded positions, 1e-6 for energies and 1e-5 for the virial pressure (its terms
 * cancel) and the forces (lj1 r6inv - lj2 cancels near the potential minimum; measured 7.7e-6); against
 * binary64 positions 3e-5, since rounding the coordinates to binary32 (an absolute 1e-6 at |x| ~ 16)
 * moves the forces by ~1e-5 of the largest before any arithmetic. */
static void check_lammps(size_t dev, const char *what, rcl_dtype dt, const char *data, double cutoff, int shift,
                         const char *ref_path, const char *forces_path, int with_velocities, double tol_e,
                         double tol_p, double tol_f) {
  if (!rt_supported(dev, RCL_FAMILY_MD, dt)) return;
  rcl_md_system *s;
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rt_ok(rcl_md_read(&s, &lj, data));
  lj.cutoff = cutoff;
  lj.shift = shift;
  lammps_ref r;
  read_ref(&r, ref_path, forces_path, s->natoms);
  rcl_md *md;
  rt_ok(rcl_md_create(&md, rt_ctx(dev), dt, s, &lj, NULL));
  rcl_md_thermo th;
  rt_ok(rcl_md_thermo_get(md, &th));
  void *force = malloc(3 * s->natoms * rcl_dtype_size(dt));
  rt_ok(rcl_md_get_forces(md, force, NULL));
  double vol = (s->hi[0] - s->lo[0]) * (s->hi[1] - s->lo[1]) * (s->hi[2] - s->lo[2]);
  double pvir = th.virial / (3.0 * vol), ef = force_error(force, dt, &r, s->natoms);
  rt_note("LAMMPS %s %s on %s: pe rel %.2g, virial pressure rel %.2g, pressure rel %.2g, forces rel %.2g", what,
          rcl_dtype_name(dt), rt_device_name(dev), rel(th.pe, r.pe), rel(pvir, r.pvirial),
          with_velocities ? rel(th.pressure, r.press) : 0.0, ef);
  ck_assert_msg(rel(th.pe, r.pe) <= tol_e, "%s %s: pe %.17g vs LAMMPS %.17g", what, rcl_dtype_name(dt), th.pe, r.pe);
  if (with_velocities) {
    ck_assert_msg(rel(th.ke, r.ke) <= tol_e, "%s %s: ke %.17g vs %.17g", what, rcl_dtype_name(dt), th.ke, r.ke);
    ck_assert_msg(rel(th.temperature, r.temp) <= tol_e, "%s: temperature %.17g vs %.17g", what, th.temperature, r.temp);
    ck_assert_msg(rel(th.pressure, r.press) <= tol_p, "%s: pressure %.17g vs %.17g", what, th.pressure, r.press);
  } else {
    ck_assert_msg(rel(pvir, r.pvirial) <= tol_p, "%s %s: virial pressure %.17g vs LAMMPS %.17g", what,
                  rcl_dtype_name(dt), pvir, r.pvirial);
  }
  ck_assert_msg(ef <= tol_f, "%s %s: forces differ from LAMMPS by %.3g of the largest", what, rcl_dtype_name(dt), ef);
  /* the device's forces are the reference's bits, with the recorded digest */
  int64_t *q = malloc(3 * s->natoms * 8);
  rt_ok(rcl_md_get_forces(md, NULL, q));
  char name[96];
  snprintf(name, sizeof name, "md.%s.%s.forces", what, rcl_dtype_name(dt));
  golden_device(dev, name, q, 3 * s->natoms * 8);
  free(q);
  free(force);
  rcl_md_free(md);
  free(r.f);
  rcl_md_system_free(s);
}

START_TEST(lammps_melt) {
  check_lammps(_i, "melt", RCL_F64, DATA "melt.data", 2.5, 0, DATA "melt.ref", DATA "melt.forces", 0, 1e-12, 1e-12,
               1e-12);
  check_lammps(_i, "melt_f32", RCL_F32, DATA "melt_f32.data", 2.5, 0, DATA "melt_f32.ref", DATA "melt_f32.forces", 0,
               1e-6, 1e-5, 1e-5);
  check_lammps(_i, "melt", RCL_F32, DATA "melt.data", 2.5, 0, DATA "melt.ref", DATA "melt.forces", 0, 1e-6, 1e-5, 3e-5);
}
END_TEST

START_TEST(lammps_heat) {
  FILE *f = fopen(HEAT_DATA, "r");
  ck_assert_msg(f != NULL, "%s is missing: install the Debian package lammps-examples (or point "
                "REPROCL_LAMMPS_EXAMPLES at its examples directory)", HEAT_DATA);
  fclose(f);
  check_lammps(_i, "heat_lj", RCL_F64, HEAT_DATA, 3.0, 1, DATA "heat_lj.ref", DATA "heat_lj.forces", 1, 1e-12, 1e-12,
               1e-12);
  check_lammps(_i, "heat_lj", RCL_F32, HEAT_DATA, 3.0, 1, DATA "heat_lj.ref", DATA "heat_lj.forces", 1, 1e-6, 1e-5,
               3e-5);
}
END_TEST

/* The host reference against LAMMPS too (it shares no code with the kernels), and the golden digests of
 * the LAMMPS configurations' forces from the reference, which the devices must match. */
START_TEST(lammps_reference) {
  const struct {
    const char *name, *data, *ref, *forces;
    rcl_dtype dt;
    double cutoff;
    int shift;
  } cases[] = {{"melt", DATA "melt.data", DATA "melt.ref", DATA "melt.forces", RCL_F64, 2.5, 0},
               {"melt", DATA "melt.data", DATA "melt.ref", DATA "melt.forces", RCL_F32, 2.5, 0},
               {"melt_f32", DATA "melt_f32.data", DATA "melt_f32.ref", DATA "melt_f32.forces", RCL_F32, 2.5, 0},
               {"heat_lj", HEAT_DATA, DATA "heat_lj.ref", DATA "heat_lj.forces", RCL_F64, 3.0, 1},
               {"heat_lj", HEAT_DATA, DATA "heat_lj.ref", DATA "heat_lj.forces", RCL_F32, 3.0, 1}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    rcl_md_system *s;
    rcl_md_lj lj = RCL_MD_LJ_INIT;
    rt_ok(rcl_md_read(&s, &lj, cases[k].data));
    lj.cutoff = cases[k].cutoff;
    lj.shift = cases[k].shift;
    lammps_ref r;
    read_ref(&r, cases[k].ref, cases[k].forces, s->natoms);
    rcl_md *md;
    rt_ok(rcl_md_create(&md, NULL, cases[k].dt, s, &lj, NULL));
    rcl_md_thermo th;
    rt_ok(rcl_md_thermo_get(md, &th));
    void *force = malloc(3 * s->natoms * 8);
    int64_t *q = malloc(3 * s->natoms * 8);
    rt_ok(rcl_md_get_forces(md, force, q));
    if (cases[k].dt == RCL_F64) {
      ck_assert_msg(rel(th.pe, r.pe) <= 1e-12, "reference %s pe %.17g vs LAMMPS %.17g", cases[k].name, th.pe, r.pe);
      ck_assert_msg(force_error(force, RCL_F64, &r, s->natoms) <= 1e-12, "reference %s forces differ from LAMMPS",
                    cases[k].name);
    }
    char name[96];
    snprintf(name, sizeof name, "md.%s.%s.forces", cases[k].name, rcl_dtype_name(cases[k].dt));
    golden_ref(name, q, 3 * s->natoms * 8);
    free(q);
    free(force);
    free(r.f);
    rcl_md_free(md);
    rcl_md_system_free(s);
  }
}
END_TEST

/* ---- errors -------------------------------------------------------------------------------------------------- */

static char tmpdir[256];

static const char *write_tmp(const char *name, const char *text) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "w");
  ck_assert(f != NULL);
  fputs(text, f);
  fclose(f);
  return path;
}

static void read_fails(const char *name, const char *text, const char *needle) {
  const char *path = write_tmp(name, text);
  rcl_md_system *s = (rcl_md_system *)1;
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rt_fails(rcl_md_read(&s, &lj, path), RCL_ERR_PARSE, needle);
  ck_assert_ptr_null(s);
}

#define HDR "LAMMPS data file\n\n2 atoms\n1 atom types\n\n0 10 xlo xhi\n0 10 ylo yhi\n0 10 zlo zhi\n\n"
#define MASS "Masses\n\n1 1.0\n\n"

START_TEST(bad_input_files) {
  snprintf(tmpdir, sizeof tmpdir, "%s/md-bad-inputs", REPROCL_BINARY_DIR);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", tmpdir);
  ck_assert(system(cmd) == 0);
  /* a good file first, so that the failures below are the lines named */
  const char *good = write_tmp("good.data", HDR MASS "Atoms # atomic\n\n2 1 1 1 1\n1 1 2 2 2 0 0 0\n\n"
                                                     "Velocities\n\n1 0.1 0 0\n2 0 0.2 0\n");
  rcl_md_system *s;
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rt_ok(rcl_md_read(&s, &lj, good));
  ck_assert_int_eq(s->natoms, 2);
  ck_assert(s->id[0] == 1 && s->pos[0] == 2.0 && s->vel[0] == 0.1 && s->vel[4] == 0.2);
  rcl_md_system_free(s);

  read_fails("num.data", HDR MASS "Atoms\n\n1 1 1.2.3 1 1\n2 1 2 2 2\n", "num.data:16: the coordinate \"1.2.3\" is not a number");
  read_fails("nan.data", HDR MASS "Atoms\n\n1 1 nan 1 1\n2 1 2 2 2\n", "nan.data:16: the coordinate is nan");
  read_fails("cols.data", HDR MASS "Atoms\n\n1 1 1 1\n2 1 2 2 2\n", "cols.data:16: an Atoms line of atom_style atomic has 5 or 8 columns");
  read_fails("outside.data", HDR MASS "Atoms\n\n1 1 1 1 1\n2 1 2 12 2\n", "outside.data:17: atom 2 lies outside the box: y = 12");
  read_fails("type.data", HDR MASS "Atoms\n\n1 1 1 1 1\n2 3 2 2 2\n", "type.data:17: atom 2 has type 3");
  read_fails("dup.data", HDR MASS "Atoms\n\n1 1 1 1 1\n1 1 2 2 2\n", "atom ID 1 appears twice");
  read_fails("short.data", HDR MASS "Atoms\n\n1 1 1 1 1\n", "the file ends inside section \"Atoms\"");
  read_fails("zero.data", "LAMMPS data file\n\n0 atoms\n1 atom types\n\n0 10 xlo xhi\n0 10 ylo yhi\n0 10 zlo zhi\n",
             "declares 0 atoms");
  read_fails("nobox.data", "LAMMPS data file\n\n2 atoms\n1 atom types\n\n0 10 xlo xhi\n0 10 ylo yhi\n\n" MASS, "no \"zlo zhi\"");
  read_fails("header.data", "LAMMPS data file\n\n2 atoms\n1 atom types\nfoo bar\n", "header.data:5: unknown header line \"foo bar\"");
  read_fails("tri.data", HDR "0 0 0 xy xz yz\n\n" MASS, "triclinic");
  read_fails("style.data", HDR MASS "Atoms # full\n\n1 1 1 1 1\n2 1 2 2 2\n", "style.data:14: Atoms section of atom_style \"full\"");
  read_fails("bonds.data", HDR MASS "Bonds\n\n1 1 1 2\n", "section \"Bonds\" is not supported");
  read_fails("vel.data", HDR MASS "Atoms\n\n1 1 1 1 1\n2 1 2 2 2\n\nVelocities\n\n1 0 0 0\n7 0 0 0\n",
             "vel.data:22: velocity for atom 7");
  read_fails("mass.data", HDR "Atoms\n\n1 1 1 1 1\n2 1 2 2 2\n", "no mass for atom type 1");
  read_fails("bad.xyz", "3\ncomment\nAr 0 0 0\nAr 1 1\n", "bad.xyz:4: an atom line has 4 columns");
  read_fails("count.xyz", "-3\ncomment\n", "count.xyz:1: the file declares -3 atoms");
  read_fails("tri.xyz", "1\nLattice=\"5 1 0 0 5 0 0 0 5\"\nAr 1 1 1\n", "tri.xyz:2: the Lattice is not orthorhombic");
  read_fails("pbc.xyz", "1\npbc=\"T T T\"\nAr 1 1 1\n", "pbc.xyz:2: pbc asks for periodic axes but there is no Lattice");
  rcl_md_system *none = NULL;
  rt_fails(rcl_md_read(&none, NULL, "/nonexistent/file.data"), RCL_ERR_IO, "cannot open /nonexistent/file.data");
}
END_TEST

/* rcl_md_displace: every coordinate moves by at most amplitude / 2 (modulo the box) and stays in the
 * box, the same seed gives the same bits; bad arguments are refused and leave the system untouched. */
START_TEST(displace) {
  rcl_md_system *a, *b;
  rt_ok(rcl_md_lattice(&a, "fcc", 4, 0.8442, 1.0, 3));
  rt_ok(rcl_md_lattice(&b, "fcc", 4, 0.8442, 1.0, 3));
  size_t m = 3 * a->natoms;
  double *orig = malloc(m * sizeof *orig);
  ck_assert_ptr_nonnull(orig);
  memcpy(orig, a->pos, m * sizeof *orig);
  rt_ok(rcl_md_displace(a, 0.3, 11));
  rt_ok(rcl_md_displace(b, 0.3, 11));
  ck_assert(memcmp(a->pos, b->pos, m * sizeof *orig) == 0);
  size_t moved = 0;
  for (size_t i = 0; i < m; i++) {
    int d = (int)(i % 3);
    double len = a->hi[d] - a->lo[d], dx = fabs(a->pos[i] - orig[i]);
    ck_assert(a->pos[i] >= a->lo[d] && a->pos[i] < a->hi[d]);
    ck_assert_msg(fmin(dx, len - dx) <= 0.15, "coordinate %zu moved by %g", i, dx);
    moved += dx != 0;
  }
  ck_assert_msg(moved > m / 2, "only %zu of %zu coordinates moved", moved, m);
  memcpy(b->pos, a->pos, m * sizeof *orig);
  double side = a->hi[0] - a->lo[0];
  rt_fails(rcl_md_displace(NULL, 0.1, 1), RCL_ERR_INVALID_ARG, "NULL system");
  rt_fails(rcl_md_displace(a, -0.1, 1), RCL_ERR_INVALID_ARG, "amplitude -0.1 is not in [0,");
  rt_fails(rcl_md_displace(a, NAN, 1), RCL_ERR_INVALID_ARG, "amplitude nan");
  rt_fails(rcl_md_displace(a, side, 1), RCL_ERR_INVALID_ARG, "(the shortest box side)");
  ck_assert(memcmp(a->pos, b->pos, m * sizeof *orig) == 0);
  free(orig);
  rcl_md_system_free(a);
  rcl_md_system_free(b);
}
END_TEST

/* Bad systems and options are refused by rcl_md_create, on every device and by the reference. */
START_TEST(bad_systems) {
  rcl_context *c = rt_ctx(_i);
  rcl_context *ctxs[2] = {NULL, c};
  for (int k = 0; k < 2; k++) {
    rcl_md_system *s = system1();
    rcl_md_lj lj = RCL_MD_LJ_INIT;
    rcl_md *md = NULL;
    s->pos[7] = NAN;
    rt_fails(rcl_md_create(&md, ctxs[k], RCL_F32, s, &lj, NULL), RCL_ERR_INVALID_ARG, "atom 3 has a non-finite position y");
    s->pos[7] = s->hi[1] + 0.5;
    rt_fails(rcl_md_create(&md, ctxs[k], RCL_F32, s, &lj, NULL), RCL_ERR_INVALID_ARG, "atom 3 lies outside the box");
    s->pos[7] = 1.0;
    lj.cutoff = 3.5;
    rt_fails(rcl_md_create(&md, ctxs[k], RCL_F32, s, &lj, NULL), RCL_ERR_INVALID_ARG, "larger than half the periodic box");
    rt_fails(rcl_md_check(s, &lj, RCL_F32), RCL_ERR_INVALID_ARG, "larger than half the periodic box");
    lj.cutoff = 2.5;
    s->type[5] = 2;
    rt_fails(rcl_md_create(&md, ctxs[k], RCL_F32, s, &lj, NULL), RCL_ERR_INVALID_ARG, "atom 6 has type 2");
    s->type[5] = 1;
    s->mass[0] = 0;
    rt_fails(rcl_md_create(&md, ctxs[k], RCL_F32, s, &lj, NULL), RCL_ERR_INVALID_ARG, "mass of type 1");
    s->mass[0] = 1;
    lj.sigma[0] = 1e-30;
    rt_fails(rcl_md_create(&md, ctxs[k], RCL_F32, s, &lj, NULL), RCL_ERR_INVALID_ARG, "sigma");
    lj.sigma[0] = 1;
    lj.epsilon[0] = 1e-9; /* within the documented range, but 48 eps sigma^12 far below 2^-60 with sigma 0.01 */
    lj.sigma[0] = 0.01;
    lj.cutoff = 0.5;
    rt_fails(rcl_md_create(&md, ctxs[k], RCL_F32, s, &lj, NULL), RCL_ERR_INVALID_ARG, "outside the supported range");
    rt_fails(rcl_md_check(s, &lj, RCL_F32), RCL_ERR_INVALID_ARG, "outside the supported range");
    lj.epsilon[0] = 1;
    lj.sigma[0] = 1;
    lj.cutoff = 2.5;
    rt_ok(rcl_md_check(s, &lj, RCL_F32));
    rcl_md_options o = RCL_MD_OPTIONS_INIT;
    o.local_size = 48;
    rt_fails(rcl_md_create(&md, ctxs[k], RCL_F32, s, &lj, &o), RCL_ERR_INVALID_ARG, "not a power of two");
    o = (rcl_md_options)RCL_MD_OPTIONS_INIT;
    o.skin = -1;
    rt_fails(rcl_md_create(&md, ctxs[k], RCL_F32, s, &lj, &o), RCL_ERR_INVALID_ARG, "skin");
    o = (rcl_md_options)RCL_MD_OPTIONS_INIT;
    o.version = 7;
    rt_fails(rcl_md_create(&md, ctxs[k], RCL_F32, s, &lj, &o), RCL_ERR_INVALID_ARG, "version");
    o = (rcl_md_options)RCL_MD_OPTIONS_INIT;
    o.path = (rcl_md_path)9;
    rt_fails(rcl_md_create(&md, ctxs[k], RCL_F32, s, &lj, &o), RCL_ERR_INVALID_ARG, "not a force path");
    if (k == 1) {
      o = (rcl_md_options)RCL_MD_OPTIONS_INIT;
      o.local_size = (size_t)1 << 20;
      rt_fails(rcl_md_create(&md, c, RCL_F32, s, &lj, &o), RCL_ERR_INVALID_ARG, "exceeds");
    }
    rcl_md_system *e;
    rt_ok(rcl_md_system_alloc(&e, 0, 1));
    rt_fails(rcl_md_create(&md, ctxs[k], RCL_F32, e, &lj, NULL), RCL_ERR_INVALID_ARG, "the system has no atoms");
    rcl_md_system_free(e);
    ck_assert_ptr_null(md);
    rcl_md_system_free(s);
  }
}
END_TEST

/* Overlapping atoms overflow the fixed-point range: an error on every path, never a wrapped sum. */
START_TEST(overflow_detected) {
  rcl_context *c = rt_ctx(_i);
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_MD, dt)) continue;
    for (int overlap = 0; overlap < 2; overlap++) {
      rcl_md_system *s = system1();
      rcl_md_lj lj = RCL_MD_LJ_INIT;
      /* atom 1 at distance 0.3 sigma from atom 0 (or on top of it) */
      s->pos[3] = s->pos[0] + (overlap ? 0.0 : 0.3);
      if (s->pos[3] >= s->hi[0]) s->pos[3] -= s->hi[0] - s->lo[0];
      s->pos[4] = s->pos[1];
      s->pos[5] = s->pos[2];
      rcl_md *md = NULL;
      rt_fails(rcl_md_create(&md, NULL, dt, s, &lj, NULL), RCL_ERR_OVERFLOW, "fixed-point range");
      for (size_t k = 0; k < NVARIANTS; k++) {
        if (!variant_ok(&variants[k], c, dt, s, &lj)) continue;
        rcl_md_options o = variant_options(&variants[k], 0);
        o.local_size = o.build_local_size = 0;
        rt_fails(rcl_md_create(&md, c, dt, s, &lj, &o), RCL_ERR_OVERFLOW, "fixed-point range");
        ck_assert_ptr_null(md);
      }
      rcl_md_system_free(s);
    }
    /* an atom that crosses more than half a box in one step */
    rcl_md_system *s = system1();
    rcl_md_lj lj = RCL_MD_LJ_INIT;
    s->vel[0] = 4000.0; /* 20 sigma per step: beyond half a box even after the wrap */
    rcl_md *md = NULL, *ref = NULL;
    rt_ok(rcl_md_create(&ref, NULL, dt, s, &lj, NULL));
    rt_fails(rcl_md_run(ref, 5, 0.005, 0, NULL, NULL), RCL_ERR_INVALID_ARG, "more than half a periodic box");
    rt_ok(rcl_md_create(&md, c, dt, s, &lj, NULL));
    rt_fails(rcl_md_run(md, 5, 0.005, 0, NULL, NULL), RCL_ERR_INVALID_ARG, "more than half a periodic box");
    rcl_md_free(md);
    rcl_md_free(ref);
    rcl_md_system_free(s);
  }
}
END_TEST

/* ---- deferred status reads ------------------------------------------------------------------------------ */

/* The device simulation reads its status only every REPROCL_MD_SYNC steps (the rebuild decision stays on the
 * device). Both tests below run at K = 1 (a read every step), 16 and 64. */
static const char *const sync_every[] = {"1", "16", "64"};
#define NSYNC (sizeof sync_every / sizeof sync_every[0])

/* A dilute gas imploding towards the box centre: the neighbour counts grow through the run. */
static rcl_md_system *imploding(void) {
  rcl_md_system *s;
  rt_ok(rcl_md_lattice(&s, "sc", 8, 0.3, 0.5, 21));
  for (size_t i = 0; i < 3 * s->natoms; i++) {
    int d = (int)(i % 3);
    s->vel[i] -= 0.5 * (s->pos[i] - 0.5 * (s->lo[d] + s->hi[d]));
  }
  return s;
}

/* The host reference's run of steps (dt 0.005, thermo every 40 steps into rows): its final snapshot. */
static void reference_run(snapshot *want, thermo_rows *rows, rcl_dtype dt, const rcl_md_system *s,
                          const rcl_md_lj *lj, size_t steps) {
  rcl_md *md;
  rt_ok(rcl_md_create(&md, NULL, dt, s, lj, NULL));
  rt_ok(rcl_md_run(md, steps, 0.005, 40, collect, rows));
  snap(want, md);
  rcl_md_free(md);
}

/* The largest neighbour count of any atom. */
static size_t max_neighbors(rcl_md *md) {
  size_t most = 0, count;
  for (size_t i = 0; i < rcl_md_natoms(md); i++) {
    rt_ok(rcl_md_get_neighbors(md, i, &count, NULL, 0));
    if (count > most) most = count;
  }
  return most;
}

/* Lists created with exactly the slots the first build needs outgrow them inside a window of K steps: the
 * window is restored and run again with more slots. Forces, state, thermo rows and the number of builds are
 * those of K = 1 and of the host reference. */
START_TEST(sync_window_overflow) {
  rcl_context *c = rt_ctx(_i);
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_MD, dt)) continue;
    rcl_md_system *s = imploding();
    rcl_md_lj lj = RCL_MD_LJ_INIT;
    rcl_md *md;
    thermo_rows want_rows = {.n = 0};
    snapshot want;
    reference_run(&want, &want_rows, dt, s, &lj, 120);
    rt_ok(rcl_md_create(&md, c, dt, s, &lj, NULL));
    rcl_md_options o = RCL_MD_OPTIONS_INIT;
    o.neighbor_capacity = max_neighbors(md);
    rcl_md_free(md);
    size_t builds = 0;
    for (size_t k = 0; k < NSYNC; k++) {
      setenv("REPROCL_MD_SYNC", sync_every[k], 1);
      rt_ok(rcl_md_create(&md, c, dt, s, &lj, &o));
      thermo_rows rows = {.n = 0};
      rt_ok(rcl_md_run(md, 120, 0.005, 40, collect, &rows));
      snapshot got;
      snap(&got, md);
      char what[160];
      snprintf(what, sizeof what, "imploding gas %s on %s, status read every %s steps", rcl_dtype_name(dt),
               rt_device_name(_i), sync_every[k]);
      assert_snap_eq(&got, &want, s->natoms, dt, what);
      ck_assert_uint_eq(rows.n, want_rows.n);
      for (size_t r = 0; r < rows.n; r++) assert_thermo_eq(&rows.rows[r], &want_rows.rows[r], what);
      size_t most = max_neighbors(md);
      ck_assert_msg(most > o.neighbor_capacity, "%s: the lists never outgrew %zu slots (%zu partners)", what,
                    o.neighbor_capacity, most);
      if (k == 0) builds = got.th.neighbor_builds;
      ck_assert_msg(got.th.neighbor_builds == builds, "%s: %zu builds, %zu at K = 1", what, got.th.neighbor_builds,
                    builds);
      snap_free(&got);
      rcl_md_free(md);
    }
    unsetenv("REPROCL_MD_SYNC");
    snap_free(&want);
    rcl_md_system_free(s);
  }
}
END_TEST

/* Build kernels launched only every M-th step (REPROCL_MD_BUILD_EVERY, the rebuild asked for early): a hot
 * liquid gives the host reference's bits, forces and thermo rows for M = 4 (early 0.7 of skin/2) and for M = 8
 * with the request at skin/2 itself, where lists go stale and windows run again (counted: at least one), at
 * status windows of 1 and 16 steps. */
START_TEST(sparse_builds) {
  rcl_context *c = rt_ctx(_i);
  static const char *const cfg[][3] = {{"4", "", "16"}, {"8", "1", "16"}, {"8", "1", "1"}};
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_MD, dt)) continue;
    rcl_md_system *s = jittered(4, 0.8442, 3.0, 0.02, 11);
    rcl_md_lj lj = RCL_MD_LJ_INIT;
    rcl_md *md;
    thermo_rows want_rows = {.n = 0};
    snapshot want;
    reference_run(&want, &want_rows, dt, s, &lj, 160);
    for (size_t k = 0; k < sizeof cfg / sizeof cfg[0]; k++) {
      setenv("REPROCL_MD_BUILD_EVERY", cfg[k][0], 1);
      setenv("REPROCL_MD_EARLY", cfg[k][1], 1);
      setenv("REPROCL_MD_SYNC", cfg[k][2], 1);
      rt_ok(rcl_md_create(&md, c, dt, s, &lj, NULL));
      thermo_rows rows = {.n = 0};
      rt_ok(rcl_md_run(md, 160, 0.005, 40, collect, &rows));
      snapshot got;
      snap(&got, md);
      char what[160];
      snprintf(what, sizeof what, "hot liquid %s on %s, builds every %s steps, early %s, status every %s",
               rcl_dtype_name(dt), rt_device_name(_i), cfg[k][0], cfg[k][1][0] ? cfg[k][1] : "0.7", cfg[k][2]);
      assert_snap_eq(&got, &want, s->natoms, dt, what);
      ck_assert_uint_eq(rows.n, want_rows.n);
      for (size_t r = 0; r < rows.n; r++) assert_thermo_eq(&rows.rows[r], &want_rows.rows[r], what);
      size_t replays[2];
      rt_ok(rcl__md_dev_replays(replays, md));
      if (cfg[k][1][0]) ck_assert_msg(replays[0] > 0, "%s: no window ran again (the lists never went stale)", what);
      snap_free(&got);
      rcl_md_free(md);
    }
    unsetenv("REPROCL_MD_BUILD_EVERY");
    unsetenv("REPROCL_MD_EARLY");
    unsetenv("REPROCL_MD_SYNC");
    snap_free(&want);
    rcl_md_system_free(s);
  }
}
END_TEST

/* The step an error message names ("(step S)"), or -1. */
static long named_step(const char *msg) {
  const char *p = strstr(msg, "(step ");
  return p ? strtol(p + 6, NULL, 10) : -1;
}

/* Two atoms of a dilute gas flying head-on into each other overlap at step 40 (a fixed-point range error):
 * every K names the step the host reference names, though the host reads the status up to K - 1 steps later. */
START_TEST(sync_error_step) {
  rcl_context *c = rt_ctx(_i);
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_MD, dt)) continue;
    rcl_md_system *s;
    rt_ok(rcl_md_lattice(&s, "sc", 2, 1e-6, 1.0, 3)); /* 8 atoms 100 apart */
    for (size_t i = 0; i < 3 * s->natoms; i++) s->vel[i] = 0;
    for (int a = 0; a < 2; a++) { /* 96.25 apart along x, closing 2.4 per step: 0.25 apart after 40 steps */
      s->pos[3 * a] = s->lo[0] + 10.0 + 96.25 * a;
      s->pos[3 * a + 1] = s->lo[1] + 50.0;
      s->pos[3 * a + 2] = s->lo[2] + 50.0;
      s->vel[3 * a] = a ? -240.0 : 240.0;
    }
    rcl_md_lj lj = RCL_MD_LJ_INIT;
    rcl_md *md;
    rt_ok(rcl_md_create(&md, NULL, dt, s, &lj, NULL));
    rt_fails(rcl_md_run(md, 100, 0.005, 0, NULL, NULL), RCL_ERR_OVERFLOW, "fixed-point range");
    long want = named_step(rcl_error_last());
    rcl_md_free(md);
    ck_assert_msg(want >= 30 && want < 48, "the reference names step %ld", want);
    for (size_t k = 0; k < NSYNC; k++) {
      setenv("REPROCL_MD_SYNC", sync_every[k], 1);
      rt_ok(rcl_md_create(&md, c, dt, s, &lj, NULL));
      rt_fails(rcl_md_run(md, 100, 0.005, 0, NULL, NULL), RCL_ERR_OVERFLOW, "fixed-point range");
      long got = named_step(rcl_error_last());
      ck_assert_msg(got == want, "%s on %s, status read every %s steps: step %ld named, the reference names %ld (%s)",
                    rcl_dtype_name(dt), rt_device_name(_i), sync_every[k], got, want, rcl_error_last());
      rcl_md_free(md);
    }
    unsetenv("REPROCL_MD_SYNC");
    rcl_md_system_free(s);
  }
}
END_TEST

/* Energy conservation of the NVE integrator (an accuracy check with a stated bound, not a bitwise one):
 * a shifted-potential liquid over 2000 steps keeps its total energy within 5e-4 relative. */
START_TEST(energy_conservation) {
  if (_i != 0) return; /* an accuracy property of the contract: the bits are the same on every device */
  rcl_md_system *s;
  rt_ok(rcl_md_lattice(&s, "fcc", 5, 0.8442, 1.0, 5));
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  lj.shift = 1;
  rcl_dtype dt = rt_supported(_i, RCL_FAMILY_MD, RCL_F64) ? RCL_F64 : RCL_F32;
  rcl_md *md;
  rt_ok(rcl_md_create(&md, rt_ctx(_i), dt, s, &lj, NULL));
  thermo_rows r0 = {.n = 0};
  rt_ok(rcl_md_run(md, 500, 0.005, 500, collect, &r0)); /* equilibrate */
  double e0 = r0.rows[r0.n - 1].etotal, worst = 0;
  for (int k = 0; k < 4; k++) {
    thermo_rows r = {.n = 0};
    rt_ok(rcl_md_run(md, 500, 0.005, 500, collect, &r));
    worst = fmax(worst, fabs(r.rows[r.n - 1].etotal - e0) / fabs(e0));
  }
  rt_note("energy drift over 2000 steps (%s, dt 0.005): %.3g relative", rcl_dtype_name(dt), worst);
  ck_assert_msg(worst < 5e-4, "total energy drifted by %.3g relative", worst);
  rcl_md_free(md);
  rcl_md_system_free(s);
}
END_TEST

/* rcl_md_options.kernel_times: off (the default, and for a version 1 struct, whatever follows it) the kernel
 * seconds are 0; on, they are measured on the profiling queue of the test's context; the bits are the
 * reference's either way, across a change of the time step (which sets the kernels' arguments anew). */
START_TEST(kernel_times) {
  rcl_context *c = rt_ctx(_i);
  rcl_md_system *s = system1();
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rcl_md *ref, *md;
  rt_ok(rcl_md_create(&ref, NULL, RCL_F32, s, &lj, NULL));
  rt_ok(rcl_md_run(ref, 30, 0.005, 0, NULL, NULL));
  rt_ok(rcl_md_run(ref, 30, 0.004, 0, NULL, NULL));
  snapshot want;
  snap(&want, ref);
  rcl_md_free(ref);
  rcl_md_options o = RCL_MD_OPTIONS_INIT;
  o.kernel_times = 2;
  rt_fails(rcl_md_create(&md, c, RCL_F32, s, &lj, &o), RCL_ERR_INVALID_ARG, "kernel_times");
  for (int mode = 0; mode < 3; mode++) { /* default, on, a version 1 struct (kernel_times not read) */
    o = (rcl_md_options)RCL_MD_OPTIONS_INIT;
    o.kernel_times = mode != 0;
    if (mode == 2) o.version = 1;
    rt_ok(rcl_md_create(&md, c, RCL_F32, s, &lj, &o));
    rt_ok(rcl_md_run(md, 30, 0.005, 0, NULL, NULL));
    rt_ok(rcl_md_run(md, 30, 0.004, 0, NULL, NULL));
    rcl_md_stats st;
    rt_ok(rcl_md_get_stats(md, &st));
    snapshot got;
    snap(&got, md);
    char what[160];
    snprintf(what, sizeof what, "kernel_times mode %d on %s", mode, rt_device_name(_i));
    assert_snap_eq(&got, &want, s->natoms, RCL_F32, what);
    double t = st.force_seconds + st.build_seconds + st.integrate_seconds;
    ck_assert_msg(st.steps == 60 && st.neighbor_builds >= 2, "%s: %zu steps, %zu builds", what, st.steps,
                  st.neighbor_builds);
    if (mode == 1)
      ck_assert_msg(st.force_seconds > 0 && st.integrate_seconds > 0, "%s: no kernel times (%g s)", what, t);
    else
      ck_assert_msg(t == 0, "%s: kernel times %g s without kernel_times", what, t);
    snap_free(&got);
    rcl_md_free(md);
  }
  snap_free(&want);
  rcl_md_system_free(s);
}
END_TEST

/* The atoms idx[0..m) of s: a new system (box, types and masses s's). */
static rcl_md_system *subset(const rcl_md_system *s, const size_t *idx, size_t m) {
  rcl_md_system *t = NULL;
  rt_ok(rcl_md_system_alloc(&t, m, s->ntypes));
  memcpy(t->lo, s->lo, sizeof t->lo);
  memcpy(t->hi, s->hi, sizeof t->hi);
  memcpy(t->periodic, s->periodic, sizeof t->periodic);
  memcpy(t->mass, s->mass, sizeof t->mass);
  for (size_t j = 0; j < m; j++) {
    t->type[j] = s->type[idx[j]];
    for (int d = 0; d < 3; d++) t->pos[3 * j + d] = s->pos[3 * idx[j] + d], t->vel[3 * j + d] = s->vel[3 * idx[j] + d];
  }
  return t;
}

/* The atoms idx[0..m) of s as the local simulation of p (all owned, no ghosts: md_domain.c's decomposition
 * of one slab), bitwise against rcl_md_create on the same device: state, fixed-point forces, neighbour lists. */
static void part_load(md_dom_part *p, const rcl_md *whole, const rcl_md_system *s, const size_t *idx, size_t m,
                      const char *what) {
  rcl_md_system *t = subset(s, idx, m);
  rt_ok(rcl__md_dom_part_alloc(p, whole, m, m));
  memcpy(p->sys.pos, t->pos, 3 * m * sizeof *t->pos);
  memcpy(p->sys.vel, t->vel, 3 * m * sizeof *t->vel);
  memcpy(p->sys.type, t->type, m * sizeof *t->type);
  rt_ok(rcl__md_dom_part_build(p, whole, NULL, 0));
  rcl_md *one = NULL;
  rt_ok(rcl_md_create(&one, p->ctx, RCL_F32, t, &p->lj, NULL));
  float *st = calloc(12 * m, sizeof *st);
  int64_t *fq = calloc(6 * m, sizeof *fq);
  size_t cap = RCL_MD_MAX_NEIGHBORS, *nl = calloc(2 * cap, sizeof *nl), c[2];
  rt_ok(rcl__md_dom_part_state(p, st, st + 3 * m, fq));
  rt_ok(rcl_md_get_state(one, st + 6 * m, st + 9 * m));
  rt_ok(rcl_md_get_forces(one, NULL, fq + 3 * m));
  rt_assert_bits_eq(st, st + 6 * m, 6 * m, RCL_F32, "positions and velocities: %s", what);
  ck_assert_msg(!memcmp(fq, fq + 3 * m, 3 * m * sizeof *fq), "fixed-point forces differ: %s", what);
  for (size_t i = 0; i < m; i++) {
    rt_ok(rcl_md_get_neighbors(p->md, i, &c[0], nl, cap));
    rt_ok(rcl_md_get_neighbors(one, i, &c[1], nl + cap, cap));
    ck_assert_msg(c[0] == c[1] && !memcmp(nl, nl + cap, c[0] * sizeof *nl), "atom %zu's neighbour list: %s", i, what);
  }
  free(st);
  free(fq);
  free(nl);
  rcl_md_free(one);
  rcl_md_system_free(t);
}

/* A decomposition's local simulation reloaded in place (rcl__md_dev_reload): 128 atoms of S1 spread over the box
 * (every other one; 16 neighbour slots to start with, grown at the creation), then the 128 nearest the box's
 * centre (a ball: more partners per atom than the kept slots, an overflow at the reload, the lists regrown),
 * then all 256 (more than the 192 the buffers take: the reload refused, a new local simulation). Each equals
 * rcl_md_create of the same atoms (default slots), bit for bit. */
START_TEST(reload_in_place) {
  rcl_md_system *s = system1();
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rcl_md *whole = NULL, *none = NULL;
  rt_ok(rcl_md_create(&whole, NULL, RCL_F32, s, &lj, NULL)); /* the box, types, step and time step */
  md_dom_part p;
  memset(&p, 0, sizeof p);
  p.ctx = rt_ctx(_i);
  p.lj = lj;
  rt_ok(rcl__md_prepare(&p.o, &none, p.ctx, RCL_F32, s, &lj, NULL));
  p.o.neighbor_capacity = 16; /* grown by the first creation to what the spread atoms need */
  size_t n = s->natoms, idx[256], half[256];
  ck_assert(n == 256);
  for (size_t i = 0; i < n; i++) idx[i] = i;
  for (size_t j = 0; j < n / 2; j++) half[j] = 2 * j;
  part_load(&p, whole, s, half, n / 2, "128 atoms spread");
  ck_assert(p.creations == 1 && p.reloads == 0);
  double r2[256];
  for (size_t i = 0; i < n; i++) {
    r2[i] = 0;
    for (int d = 0; d < 3; d++) r2[i] += pow(s->pos[3 * i + d] - 0.5 * (s->lo[d] + s->hi[d]), 2);
  }
  for (size_t i = 1; i < n; i++) /* by the distance from the box's centre (insertion sort) */
    for (size_t k = i; k > 0 && r2[idx[k]] < r2[idx[k - 1]]; k--) {
      size_t t = idx[k];
      idx[k] = idx[k - 1];
      idx[k - 1] = t;
    }
  part_load(&p, whole, s, idx, n / 2, "a ball of 128 atoms, reloaded");
  ck_assert_msg(p.creations == 1 && p.reloads == 1 && p.refusals == 0, "%zu %zu %zu", p.creations, p.reloads,
                p.refusals);
  for (size_t i = 0; i < n; i++) idx[i] = i;
  part_load(&p, whole, s, idx, n, "all 256 atoms, the reload refused");
  ck_assert_msg(p.creations == 2 && p.reloads == 1 && p.refusals == 1, "%zu %zu %zu", p.creations, p.reloads,
                p.refusals);
  rcl__md_dom_part_free(&p);
  rcl_md_free(whole);
  rcl_md_system_free(s);
}
END_TEST

int main(void) {
  Suite *s = suite_create("md");
  rt_add_device_presence(s);
  TCase *host = tcase_create("host");
  tcase_add_test(host, bad_input_files);
  tcase_add_test(host, lammps_reference);
  tcase_add_test(host, displace);
  suite_add_tcase(s, host);
  TCase *tc = tcase_create("devices");
  rt_add_device_loop(tc, forces_bitwise);
  rt_add_device_loop(tc, trajectory_bitwise);
  rt_add_device_loop(tc, neighbor_lists_canonical);
  rt_add_device_loop(tc, lammps_melt);
  rt_add_device_loop(tc, lammps_heat);
  rt_add_device_loop(tc, bad_systems);
  rt_add_device_loop(tc, overflow_detected);
  rt_add_device_loop(tc, sync_window_overflow);
  rt_add_device_loop(tc, sync_error_step);
  rt_add_device_loop(tc, sparse_builds);
  rt_add_device_loop(tc, energy_conservation);
  rt_add_device_loop(tc, kernel_times);
  rt_add_device_loop(tc, reload_in_place);
  suite_add_tcase(s, tc);
  return rt_run(s);
}
