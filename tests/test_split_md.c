/* Molecular dynamics over a split of several devices (rcl_split_md_create): bitwise against the host
 * reference (rcl_md_create with ctx NULL) and rcl_md on one device — positions, velocities, the int64
 * fixed-point forces and the thermo records (pe, ke, etotal, temperature, pressure, virial) — for every
 * pair of devices present, PoCL's sub-devices ("pocl:/2", "pocl:/3"), all devices together; f32 and f64
 * (devices without fp64 left out, or refused with strict); the gather and symmetric paths (devices without
 * 64-bit integer atomics left out, or refused with strict); weights 1:0, 1:1, 3:1, 1:3 and random; jittered
 * hot fcc lattices (atoms crossing slab boundaries and periodic wraps, neighbour rebuilds and migrations),
 * one so small that slabs are thinner than cutoff + skin (ghosts from several slabs, and from the slab's
 * own other side), LAMMPS's melt.data; 0, 1, 50 and 300 steps; the state and forces after each of many steps
 * (a ghost's position left stale for one step changes its partners' forces at once); and the errors rcl_md
 * gives. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "testlib.h"

#define DATA REPROCL_SOURCE_DIR "/tests/data/md/"
#define NWEIGHTS 5
#define MAX_THERMO 64

/* What a run leaves: the state, the fixed-point forces and the thermo records it reported. */
typedef struct {
  size_t n;
  rcl_dtype dt;
  void *pos, *vel;
  int64_t *f;
  rcl_md_thermo th[MAX_THERMO];
  size_t nth;
} md_out;

static int record(rcl_md *md, const rcl_md_thermo *t, void *user) {
  md_out *o = user;
  (void)md;
  ck_assert_uint_lt(o->nth, MAX_THERMO);
  o->th[o->nth++] = *t;
  return 0;
}

static void out_free(md_out *o) {
  free(o->pos);
  free(o->vel);
  free(o->f);
  memset(o, 0, sizeof *o);
}

/* Runs md `steps` steps (thermo every `every`), then reads everything and frees md. */
static void finish(md_out *o, rcl_md *md, size_t steps, size_t every) {
  o->n = rcl_md_natoms(md);
  o->dt = rcl_md_dtype(md);
  size_t es = rcl_dtype_size(o->dt);
  o->pos = malloc(3 * o->n * es);
  o->vel = malloc(3 * o->n * es);
  o->f = malloc(3 * o->n * sizeof *o->f);
  rt_ok(rcl_md_run(md, steps, 0.005, every, every ? record : NULL, o));
  rt_ok(rcl_md_get_state(md, o->pos, o->vel));
  rt_ok(rcl_md_get_forces(md, NULL, o->f));
  rt_ok(rcl_md_thermo_get(md, &o->th[o->nth++]));
  rcl_md_free(md);
}

/* The state and fixed-point forces of md now (no thermo records), into o's arrays (allocated once). */
static void snapshot(md_out *o, rcl_md *md) {
  o->n = rcl_md_natoms(md);
  o->dt = rcl_md_dtype(md);
  size_t es = rcl_dtype_size(o->dt);
  if (!o->pos) {
    o->pos = malloc(3 * o->n * es);
    o->vel = malloc(3 * o->n * es);
    o->f = malloc(3 * o->n * sizeof *o->f);
  }
  rt_ok(rcl_md_get_state(md, o->pos, o->vel));
  rt_ok(rcl_md_get_forces(md, NULL, o->f));
}

static void assert_same(const md_out *got, const md_out *want, const char *what) {
  ck_assert_uint_eq(got->n, want->n);
  rt_assert_bits_eq(got->pos, want->pos, 3 * got->n, got->dt, "positions: %s", what);
  rt_assert_bits_eq(got->vel, want->vel, 3 * got->n, got->dt, "velocities: %s", what);
  ck_assert_msg(memcmp(got->f, want->f, 3 * got->n * sizeof *got->f) == 0, "fixed-point forces differ: %s", what);
  ck_assert_msg(got->nth == want->nth, "%zu thermo records, want %zu: %s", got->nth, want->nth, what);
  for (size_t k = 0; k < got->nth; k++) {
    const rcl_md_thermo *a = &got->th[k], *b = &want->th[k];
    double va[6] = {a->pe, a->ke, a->etotal, a->temperature, a->pressure, a->virial};
    double vb[6] = {b->pe, b->ke, b->etotal, b->temperature, b->pressure, b->virial};
    ck_assert_msg(a->step == b->step, "thermo record %zu at step %zu, want %zu: %s", k, a->step, b->step, what);
    rt_assert_bits_eq(va, vb, 6, RCL_F64, "thermo at step %zu: %s", a->step, what);
  }
}

/* ---- systems --------------------------------------------------------------------------------------- */

/* An fcc lattice of cells^3 unit cells at the melt density, hot (temperature), jittered off the lattice. */
static rcl_md_system *lattice(size_t cells, double temperature, uint64_t seed) {
  rcl_md_system *sys = NULL;
  rt_ok(rcl_md_lattice(&sys, "fcc", cells, 0.8442, temperature, seed));
  rt_ok(rcl_md_displace(sys, 0.2, seed + 1));
  return sys;
}

typedef struct {
  const char *name;
  rcl_md_system *sys;
  rcl_md_lj lj;
  size_t steps, every;
  md_out ref[2]; /* per dtype: the host reference, computed once */
  int have[2];
} md_problem;

static const md_out *reference(md_problem *p, rcl_dtype dt) {
  int k = dt == RCL_F64;
  if (!p->have[k]) {
    rcl_md *md = NULL;
    rt_ok(rcl_md_create(&md, NULL, dt, p->sys, &p->lj, NULL));
    finish(&p->ref[k], md, p->steps, p->every);
    p->have[k] = 1;
  }
  return &p->ref[k];
}

static void problem_free(md_problem *p) {
  rcl_md_system_free(p->sys);
  out_free(&p->ref[0]);
  out_free(&p->ref[1]);
}

/* ---- splits ---------------------------------------------------------------------------------------- */

/* Weight set k for n devices: 1:0, 1:1, 3:1, 1:3 (the first two devices; the others 1), or random. */
static void weight_set(double *w, size_t n, size_t k, uint64_t seed) {
  static const double fixed[4][2] = {{1, 0}, {1, 1}, {3, 1}, {1, 3}};
  rt_rng r = {seed};
  for (size_t i = 0; i < n; i++) w[i] = k < 4 ? (i < 2 ? fixed[k][i] : 1) : 0.05 + 0.95 * rt_uniform(&r);
}

static int md_usable(rcl_context *c, rcl_dtype dt, rcl_md_path path) {
  const rcl_device_profile *p = rcl_context_profile(c);
  if (rcl_device_profile_support(p, RCL_FAMILY_MD, dt, NULL) == RCL_SUPPORT_NONE) return 0;
  return path != RCL_MD_PATH_SYMMETRIC || p->int64_atomics;
}

/* The shares: owned atoms of the last rebuild cover the system; devices left out own nothing. */
static void check_shares(rcl_split *s, size_t n, rcl_dtype dt, rcl_md_path path, const char *what) {
  size_t covered = 0;
  for (size_t d = 0; d < rcl_split_count(s); d++) {
    size_t first, count;
    const char *note;
    rt_ok(rcl_split_share(&first, &count, &note, s, d));
    ck_assert_msg(first == covered, "%s: device %zu's atoms start at %zu, not %zu", what, d, first, covered);
    ck_assert_msg(md_usable(rcl_split_context(s, d), dt, path) || (count == 0 && note),
                  "%s: device %zu cannot run it but owns %zu atoms (note %s)", what, d, count, note ? note : "none");
    covered += count;
  }
  ck_assert_msg(covered == n, "%s: the shares cover %zu of %zu atoms", what, covered, n);
}

/* Problem p over split s with weights w (n of them): equal to the reference, or refused where no device of
 * a weight > 0 can run it. */
static void run_split(rcl_split *s, md_problem *p, rcl_dtype dt, rcl_md_path path, const double *w, const char *name) {
  size_t nd = rcl_split_count(s);
  int any = 0;
  for (size_t d = 0; d < nd; d++) any |= w[d] > 0 && md_usable(rcl_split_context(s, d), dt, path);
  rt_ok(rcl_split_set_weights(s, w, nd));
  char what[400];
  snprintf(what, sizeof what, "%s: %s %s %s, %zu steps, weights %g:%g%s", name, p->name, rcl_dtype_name(dt),
           rcl_md_path_name(path), p->steps, w[0], nd > 1 ? w[1] : 0.0, nd > 2 ? ":..." : "");
  rcl_md_options o = RCL_MD_OPTIONS_INIT;
  o.path = path;
  rcl_md *md = NULL;
  if (!any) {
    rt_fails(rcl_split_md_create(&md, s, dt, p->sys, &p->lj, &o), RCL_ERR_UNSUPPORTED, "no device left");
    return;
  }
  int rc = rcl_split_md_create(&md, s, dt, p->sys, &p->lj, &o);
  ck_assert_msg(rc == 0, "%s: %s", what, rcl_error_last());
  md_out got = {0};
  finish(&got, md, p->steps, p->every);
  assert_same(&got, reference(p, dt), what);
  check_shares(s, p->sys->natoms, dt, path, what);
  out_free(&got);
}

/* Every dtype, path and weight set of problem p on split s. */
static void sweep(rcl_split *s, md_problem *p, const char *name, size_t nweights) {
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  static const rcl_md_path paths[] = {RCL_MD_PATH_GATHER, RCL_MD_PATH_SYMMETRIC};
  size_t nd = rcl_split_count(s);
  double *w = malloc(nd * sizeof *w);
  for (size_t di = 0; di < 2; di++)
    for (size_t pi = 0; pi < 2; pi++)
      for (size_t k = 0; k < nweights; k++) {
        weight_set(w, nd, k, 17 * k + di + 2 * pi);
        run_split(s, p, dts[di], paths[pi], w, name);
      }
  free(w);
}

static rcl_split *pair(size_t i, size_t j) {
  rcl_context *c[2] = {rt_ctx(i), rt_ctx(j)};
  rcl_split *s = NULL;
  rt_ok(rcl_split_wrap(&s, c, 2, NULL));
  return s;
}

/* A split of n PoCL sub-devices, or NULL (noted) where there is none. */
static rcl_split *pocl_subdevices(unsigned n) {
  char spec[32];
  snprintf(spec, sizeof spec, "pocl:/%u", n);
  rcl_split_options o = RCL_SPLIT_OPTIONS_INIT;
  o.devices = spec;
  o.tuning = RCL_TUNING_OFF;
  rcl_split *s = NULL;
  if (rcl_split_create(&s, &o) != 0) {
    rt_note("no split \"%s\": %s", spec, rcl_error_last());
    return NULL;
  }
  return s;
}

/* ---- tests ----------------------------------------------------------------------------------------- */

/* Device _i with every later device: a hot jittered 4^3 fcc lattice (256 atoms), 50 steps, thermo every
 * 10 steps, every dtype, path and weight set. */
START_TEST(pairs) {
  md_problem p = {"fcc 4^3 hot", lattice(4, 3.0, 11), RCL_MD_LJ_INIT, 50, 10, {{0}}, {0, 0}};
  for (size_t j = _i + 1; j < rt_ndevices(); j++) {
    char name[256];
    snprintf(name, sizeof name, "%s + %s", rt_device_name(_i), rt_device_name(j));
    rcl_split *s = pair(_i, j);
    sweep(s, &p, name, NWEIGHTS);
    rcl_split_free(s);
  }
  problem_free(&p);
}
END_TEST

/* PoCL as 2 and 3 sub-devices where it has the compute units (f64 over several devices where Rusticl
 * cannot): the same sweep, and the 3^3 lattice whose slabs are thinner than cutoff + skin. */
START_TEST(subdevices) {
  md_problem p = {"fcc 4^3 hot", lattice(4, 3.0, 12), RCL_MD_LJ_INIT, 50, 10, {{0}}, {0, 0}};
  md_problem thin = {"fcc 3^3 (thin slabs)", lattice(3, 3.0, 13), RCL_MD_LJ_INIT, 50, 25, {{0}}, {0, 0}};
  for (unsigned n = 2; n <= 3; n++) {
    rcl_split *s = pocl_subdevices(n);
    if (!s) continue;
    char name[64];
    snprintf(name, sizeof name, "pocl:/%u", n);
    sweep(s, &p, name, NWEIGHTS);
    sweep(s, &thin, name, NWEIGHTS);
    rcl_split_free(s);
  }
  problem_free(&p);
  problem_free(&thin);
}
END_TEST

/* Every device present together, plus two PoCL sub-devices where there are: the small lattice (slabs of
 * about 1.7 sigma, cutoff + skin 2.8: ghosts from two slabs away and, periodic, from the other side),
 * 300 steps at a high temperature (rebuilds, migrations, wraps), and 0 and 1 steps. */
START_TEST(all_devices_long) {
  size_t nd = rt_ndevices(), m = 0;
  rcl_split *subs = pocl_subdevices(2);
  rcl_context **c = calloc(nd + 2, sizeof *c);
  for (size_t i = 0; i < nd; i++) c[m++] = rt_ctx(i);
  for (size_t i = 0; subs && i < 2; i++) c[m++] = rcl_split_context(subs, i);
  rcl_split *s = NULL;
  rt_ok(rcl_split_wrap(&s, c, m, NULL));
  double *w = malloc(m * sizeof *w);
  static const size_t steps[] = {0, 1, 300};
  for (size_t k = 0; k < 3; k++) {
    md_problem p = {"fcc 3^3 (thin slabs)", lattice(3, 4.0, 20 + k), RCL_MD_LJ_INIT, steps[k], 50, {{0}}, {0, 0}};
    for (size_t wk = 1; wk < NWEIGHTS; wk += 3) {
      weight_set(w, m, wk, k);
      run_split(s, &p, RCL_F32, RCL_MD_PATH_GATHER, w, "all devices");
      run_split(s, &p, RCL_F64, k == 2 ? RCL_MD_PATH_SYMMETRIC : RCL_MD_PATH_GATHER, w, "all devices");
    }
    problem_free(&p);
  }
  /* the 300 steps rebuilt the lists many times (atoms crossed slab boundaries) */
  rcl_md_system *sys = lattice(3, 4.0, 22);
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rcl_md *md = NULL;
  rt_ok(rcl_split_md_create(&md, s, RCL_F32, sys, &lj, NULL));
  rt_ok(rcl_md_run(md, 300, 0.005, 0, NULL, NULL));
  rcl_md_stats st;
  rt_ok(rcl_md_get_stats(md, &st));
  ck_assert_msg(st.neighbor_builds >= 5, "only %zu decompositions in 300 hot steps", st.neighbor_builds);
  rcl_md_free(md);
  rcl_md_system_free(sys);
  free(w);
  free(c);
  rcl_split_free(s);
  rcl_split_free(subs);
}
END_TEST

/* LAMMPS's melt.data (4000 atoms, from LAMMPS itself) over the first two devices, 0 and 10 steps, against
 * rcl_md on each device alone and the reference. */
START_TEST(melt_data) {
  if (rt_ndevices() < 2) {
    rt_note("skipped: one device");
    return;
  }
  for (size_t steps = 0; steps <= 10; steps += 10) {
    md_problem p = {"melt.data", NULL, RCL_MD_LJ_INIT, steps, 5, {{0}}, {0, 0}};
    rt_ok(rcl_md_read(&p.sys, &p.lj, DATA "melt.data"));
    rcl_split *s = pair(0, rt_ndevices() - 1);
    double w[2] = {1, 1.7};
    run_split(s, &p, RCL_F32, RCL_MD_PATH_GATHER, w, "first + last device");
    for (size_t d = 0; d < 2; d++) { /* each device alone through rcl_md */
      rcl_md *md = NULL;
      rcl_context *c = rcl_split_context(s, d);
      if (!md_usable(c, RCL_F32, RCL_MD_PATH_GATHER)) continue;
      rt_ok(rcl_md_create(&md, c, RCL_F32, p.sys, &p.lj, NULL));
      md_out one = {0};
      finish(&one, md, p.steps, p.every);
      assert_same(&one, reference(&p, RCL_F32), "melt.data on one device");
      out_free(&one);
    }
    rcl_split_free(s);
    problem_free(&p);
  }
}
END_TEST

/* Every device together and the reference in lock step: positions, velocities and fixed-point forces equal
 * after each of 150 hot steps of the thin-slab lattice (several decompositions; between them the ghosts'
 * positions come from their owners' devices every step), f32 gather and symmetric, f64 gather, over the
 * devices that can run each (at least two). */
START_TEST(step_by_step) {
  size_t nd = rt_ndevices();
  rcl_context **c = calloc(nd, sizeof *c);
  for (size_t i = 0; i < nd; i++) c[i] = rt_ctx(i);
  rcl_split *s = NULL;
  rt_ok(rcl_split_wrap(&s, c, nd, NULL));
  rcl_md_system *sys = lattice(3, 4.0, 31);
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  const rcl_dtype dts[3] = {RCL_F32, RCL_F32, RCL_F64};
  const rcl_md_path paths[3] = {RCL_MD_PATH_GATHER, RCL_MD_PATH_SYMMETRIC, RCL_MD_PATH_GATHER};
  for (int k = 0; k < 3; k++) {
    size_t usable = 0; /* the others are left out (weight 0) */
    for (size_t i = 0; i < nd; i++) usable += (size_t)md_usable(c[i], dts[k], paths[k]);
    if (usable < 2) {
      rt_note("step_by_step: fewer than 2 devices run %s %s", rcl_dtype_name(dts[k]), rcl_md_path_name(paths[k]));
      continue;
    }
    rcl_md_options o = RCL_MD_OPTIONS_INIT;
    o.path = paths[k];
    rcl_md *ref = NULL, *md = NULL;
    rt_ok(rcl_md_create(&ref, NULL, dts[k], sys, &lj, NULL));
    rt_ok(rcl_split_md_create(&md, s, dts[k], sys, &lj, &o));
    md_out a = {0}, b = {0};
    for (size_t step = 1; step <= 150; step++) {
      rt_ok(rcl_md_run(ref, 1, 0.005, 0, NULL, NULL));
      rt_ok(rcl_md_run(md, 1, 0.005, 0, NULL, NULL));
      snapshot(&a, ref);
      snapshot(&b, md);
      char what[96];
      snprintf(what, sizeof what, "all devices, step %zu, %s %s", step, rcl_dtype_name(dts[k]),
               rcl_md_path_name(paths[k]));
      assert_same(&b, &a, what);
    }
    rcl_md_stats st;
    rt_ok(rcl_md_get_stats(md, &st));
    ck_assert_msg(st.neighbor_builds >= 3, "only %zu decompositions in 150 hot steps", st.neighbor_builds);
    out_free(&a);
    out_free(&b);
    rcl_md_free(ref);
    rcl_md_free(md);
  }
  rcl_md_system_free(sys);
  rcl_split_free(s);
  free(c);
}
END_TEST

/* A split of device _i alone equals rcl_md there. */
START_TEST(one_device) {
  rcl_context *c = rt_ctx(_i);
  rcl_split *s = NULL;
  rt_ok(rcl_split_wrap(&s, &c, 1, NULL));
  rcl_md_system *sys = lattice(4, 2.0, 5);
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rcl_dtype dt = md_usable(c, RCL_F64, RCL_MD_PATH_GATHER) ? RCL_F64 : RCL_F32;
  rcl_md *md = NULL;
  md_out a = {0}, b = {0};
  rt_ok(rcl_md_create(&md, c, dt, sys, &lj, NULL));
  finish(&a, md, 40, 20);
  rt_ok(rcl_split_md_create(&md, s, dt, sys, &lj, NULL));
  finish(&b, md, 40, 20);
  assert_same(&b, &a, rt_device_name(_i));
  out_free(&a);
  out_free(&b);
  rcl_md_system_free(sys);
  rcl_split_free(s);
}
END_TEST

/* Devices that cannot run f64 or the symmetric path are left out with a note (above), or with strict refused
 * naming the device; errors are rcl_md's. */
START_TEST(errors) {
  size_t nd = rt_ndevices();
  rcl_md_system *sys = lattice(3, 1.0, 3);
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rcl_md *md = NULL;
  rcl_context *c[8];
  for (size_t i = 0; i < nd && i < 8; i++) c[i] = rt_ctx(i);
  rcl_split_options so = RCL_SPLIT_OPTIONS_INIT;
  so.strict = 1;
  rcl_split *s = NULL;
  rt_ok(rcl_split_wrap(&s, c, nd < 8 ? nd : 8, &so));
  rcl_md_options o = RCL_MD_OPTIONS_INIT;
  o.path = RCL_MD_PATH_SYMMETRIC;
  for (size_t i = 0; i < rcl_split_count(s); i++) {
    if (!md_usable(c[i], RCL_F64, RCL_MD_PATH_GATHER))
      rt_fails(rcl_split_md_create(&md, s, RCL_F64, sys, &lj, NULL), RCL_ERR_UNSUPPORTED, "cannot run md f64");
    else if (!md_usable(c[i], RCL_F32, RCL_MD_PATH_SYMMETRIC))
      rt_fails(rcl_split_md_create(&md, s, RCL_F32, sys, &lj, &o), RCL_ERR_UNSUPPORTED, "64-bit integer atomics");
  }
  rcl_split_free(s);
  rt_ok(rcl_split_wrap(&s, c, nd < 8 ? nd : 8, NULL));
  rt_fails(rcl_split_md_create(&md, NULL, RCL_F32, sys, &lj, NULL), RCL_ERR_INVALID_ARG, "NULL split");
  rt_fails(rcl_split_md_create(NULL, s, RCL_F32, sys, &lj, NULL), RCL_ERR_INVALID_ARG, "NULL output");
  lj.cutoff = 3.0; /* more than half the 5.04 box */
  rt_fails(rcl_split_md_create(&md, s, RCL_F32, sys, &lj, NULL), RCL_ERR_INVALID_ARG, "larger than half");
  ck_assert_ptr_null(md);
  lj.cutoff = 2.5;
  /* two atoms almost on top of each other: the force leaves the fixed-point range at creation */
  double keep[3];
  memcpy(keep, sys->pos + 3, sizeof keep);
  memcpy(sys->pos + 3, sys->pos, sizeof keep);
  sys->pos[3] += 1e-3;
  rt_fails(rcl_split_md_create(&md, s, RCL_F32, sys, &lj, NULL), RCL_ERR_OVERFLOW, "(step 0)");
  memcpy(sys->pos + 3, keep, sizeof keep);
  /* a time step far too large: an error naming the step, as rcl_md gives */
  rt_ok(rcl_split_md_create(&md, s, RCL_F32, sys, &lj, NULL));
  int rc = rcl_md_run(md, 20, 0.5, 0, NULL, NULL);
  ck_assert_msg(rc == RCL_ERR_OVERFLOW || rc == RCL_ERR_INVALID_ARG, "dt 0.5: %s", rcl_error_last());
  ck_assert_msg(strstr(rcl_error_last(), "(step "), "no step named: %s", rcl_error_last());
  rcl_md_free(md);
  rcl_split_free(s);
  rcl_md_system_free(sys);
}
END_TEST

int main(void) {
  const struct {
    const char *name;
    const TTest *test;
  } whole[] = {{"subdevices", subdevices},
               {"all_devices_long", all_devices_long},
               {"step_by_step", step_by_step},
               {"melt_data", melt_data},
               {"errors", errors}};
  Suite *s = suite_create("split_md");
  rt_add_device_presence(s);
  RT_ADD_DEVICE_CASE(s, one_device);
  RT_ADD_DEVICE_CASE(s, pairs);
  for (size_t k = 0; k < sizeof whole / sizeof whole[0]; k++) { /* one case each, for CK_RUN_CASE */
    TCase *tc = tcase_create(whole[k].name);
    tcase_add_test(tc, whole[k].test);
    suite_add_tcase(s, tc);
  }
  return rt_run(s);
}
