/* Molecular dynamics over MPI ranks (rcl_mpi_md_create; run by ctest under mpirun -n 1..4): the gathered
 * positions, velocities, int64 fixed-point forces and every thermo record equal, bit for bit, the host
 * reference (rcl_md_create with ctx NULL) and rcl_md on one device, and the thermo records are the same on
 * every rank — each device on every rank, mixed devices (rank r on device r + shift), f32 and f64, the gather
 * and symmetric paths (a rank whose device cannot run them: every rank refused, naming it), hot jittered fcc
 * lattices: 3^3 cells (5.04 sigma: with 2 or more ranks every slab is thinner than cutoff + skin = 2.8, so
 * ghosts come from several ranks and, periodic, from the other side) and 4^3, 0, 1, 50 and 300 steps
 * (neighbour rebuilds, atoms migrating between ranks and across the periodic wrap), a root other than rank 0;
 * and errors agreed on every rank (an overflow naming the step, bad arguments).
 *
 * Every collective call of a test runs on every rank before any assertion, so a failed assertion on one rank
 * never leaves another rank waiting in a collective. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpi/mpi_internal.h"
#include "reprocl/mpi.h"
#include "testlib.h"

#define MAX_THERMO 16

static int rank, nranks;

/* What a run leaves on root: the state, the fixed-point forces and the thermo records (on every rank). */
typedef struct {
  size_t n;
  int64_t *f;      /* one allocation: the forces [3n], then positions and velocities [3n] of the dtype each */
  void *pos, *vel; /* in it */
  rcl_md_thermo th[MAX_THERMO];
  size_t nth;
  int rc;
  char msg[512];
} md_out;

static int record(rcl_md *md, const rcl_md_thermo *t, void *user) {
  md_out *o = user;
  (void)md;
  if (o->nth < MAX_THERMO) o->th[o->nth++] = *t;
  return 0;
}

static void out_free(md_out *o) {
  free(o->f);
  *o = (md_out){0};
}

/* Runs md (every rank) `steps` steps with thermo every `every`, then the state on root (gathered for an MPI
 * simulation); frees md. The first failing status is kept in o->rc with its message. */
static void finish(md_out *o, rcl_md *md, int mpi, int root, size_t steps, size_t every) {
  o->n = rcl_md_natoms(md);
  size_t es = rcl_dtype_size(rcl_md_dtype(md));
  o->f = calloc(3 * o->n, 8 + 2 * es);
  ck_assert_ptr_nonnull(o->f);
  o->pos = o->f + 3 * o->n;
  o->vel = (char *)o->pos + 3 * o->n * es;
  int rc = rcl_md_run(md, steps, 0.005, every, every ? record : NULL, o);
  if (!rc && mpi) rc = rcl_mpi_md_gather_state(o->pos, o->vel, o->f, md, root);
  if (!rc && !mpi) rc = rcl_md_get_state(md, o->pos, o->vel);
  if (!rc && !mpi) rc = rcl_md_get_forces(md, NULL, o->f);
  if (!rc && o->nth < MAX_THERMO) rc = rcl_md_thermo_get(md, &o->th[o->nth++]);
  o->rc = rc;
  snprintf(o->msg, sizeof o->msg, "%s", rc ? rcl_error_last() : "");
  rcl_md_free(md);
}

static void assert_same(const md_out *got, const md_out *want, rcl_dtype dt, int state, const char *what) {
  ck_assert_msg(got->rc == 0 && want->rc == 0, "%s: %s%s", what, got->msg, want->msg);
  ck_assert_uint_eq(got->n, want->n);
  if (state) {
    rt_assert_bits_eq(got->pos, want->pos, 3 * got->n, dt, "positions: %s", what);
    rt_assert_bits_eq(got->vel, want->vel, 3 * got->n, dt, "velocities: %s", what);
    ck_assert_msg(memcmp(got->f, want->f, 3 * got->n * sizeof *got->f) == 0, "fixed-point forces differ: %s", what);
  }
  /* the thermo records: step and the six values of each, as one array of binary64 */
  ck_assert_msg(got->nth == want->nth, "%zu thermo records, want %zu: %s", got->nth, want->nth, what);
  double rows[2][7 * MAX_THERMO];
  const md_out *both[2] = {got, want};
  for (size_t s = 0; s < 2; s++)
    for (size_t k = 0; k < got->nth; k++) {
      const rcl_md_thermo *t = &both[s]->th[k];
      double row[7] = {(double)t->step, t->pe, t->ke, t->etotal, t->temperature, t->pressure, t->virial};
      memcpy(rows[s] + 7 * k, row, sizeof row);
    }
  rt_assert_bits_eq(rows[0], rows[1], 7 * got->nth, RCL_F64, "thermo (step pe ke etotal T P W per record): %s", what);
}

/* ---- problems -------------------------------------------------------------------------------------- */

typedef struct {
  const char *name;
  size_t cells;
  double temperature;
  uint64_t seed;
  size_t steps, every;
} md_problem;

/* A hot fcc lattice of cells^3 unit cells at the melt density, jittered off the lattice (every rank builds
 * it; only root's is read by rcl_mpi_md_create). */
static rcl_md_system *lattice(const md_problem *p) {
  rcl_md_system *sys = NULL;
  rt_ok(rcl_md_lattice(&sys, "fcc", p->cells, 0.8442, p->temperature, p->seed));
  rt_ok(rcl_md_displace(sys, 0.2, p->seed + 1));
  return sys;
}

/* Whether this rank's device runs dtype and path, asked of every rank: 1 where every rank can. */
static int all_usable(rcl_context *c, rcl_dtype dt, rcl_md_path path) {
  const rcl_device_profile *p = rcl_context_profile(c);
  int mine = rcl_device_profile_support(p, RCL_FAMILY_MD, dt, NULL) != RCL_SUPPORT_NONE &&
             (path != RCL_MD_PATH_SYMMETRIC || p->int64_atomics);
  int all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all;
}

/* The thermo records of root on every rank: each rank's equal to them. */
static int thermo_everywhere(const md_out *o, int root) {
  md_out r = *o;
  MPI_Bcast(r.th, (int)sizeof r.th, MPI_BYTE, root, MPI_COMM_WORLD);
  return memcmp(r.th, o->th, o->nth * sizeof *o->th) == 0;
}

/* Problem p over the ranks (this rank on c) with dtype, path and root: equal to the reference and, where
 * one_device is set, to rcl_md on root's device; or refused on every rank where a rank's device cannot. */
static void run_mpi(rcl_context *c, const md_problem *p, rcl_dtype dt, rcl_md_path path, int root, int one_device,
                    const char *where) {
  char what[400];
  snprintf(what, sizeof what, "%s: %s %s %s, %zu steps, root %d, rank %d of %d", where, p->name, rcl_dtype_name(dt),
           rcl_md_path_name(path), p->steps, root, rank, nranks);
  rcl_md_system *sys = lattice(p);
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rcl_md_options o = RCL_MD_OPTIONS_INIT;
  o.path = path;
  rcl_md *md = NULL;
  int usable = all_usable(c, dt, path);
  int rc =
      rcl_mpi_md_create(&md, MPI_COMM_WORLD, root, c, dt, rank == root ? sys : NULL, rank == root ? &lj : NULL, &o);
  if (!usable) {
    rcl_md_system_free(sys);
    ck_assert_msg(rc == RCL_ERR_UNSUPPORTED && strncmp(rcl_error_last(), "rank ", 5) == 0 && md == NULL,
                  "%s: gave %d: %s", what, rc, rcl_error_last());
    return;
  }
  md_out got = {0}, ref = {0}, one = {0};
  if (!rc) finish(&got, md, 1, root, p->steps, p->every);
  int same_thermo = thermo_everywhere(&got, root);
  ck_assert_msg(rc == 0, "%s: %s", what, rcl_error_last());
  ck_assert_msg(same_thermo, "%s: thermo differs from root's", what);
  rt_ok(rcl_md_create(&md, NULL, dt, sys, &lj, &o));
  finish(&ref, md, 0, 0, p->steps, p->every);
  assert_same(&got, &ref, dt, rank == root, what);
  if (one_device && rank == root) {
    rt_ok(rcl_md_create(&md, c, dt, sys, &lj, &o));
    finish(&one, md, 0, 0, p->steps, p->every);
    assert_same(&got, &one, dt, 1, what);
  }
  out_free(&got);
  out_free(&ref);
  out_free(&one);
  rcl_md_system_free(sys);
}

static const md_problem thin = {"fcc 3^3 hot (thin slabs)", 3, 3.0, 13, 50, 25};
static const md_problem cube4 = {"fcc 4^3 hot", 4, 3.0, 11, 50, 10};

/* Every dtype and path of the problems on context c (this rank's device). */
static void sweep(rcl_context *c, const char *where) {
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  static const rcl_md_path paths[] = {RCL_MD_PATH_GATHER, RCL_MD_PATH_SYMMETRIC};
  for (size_t k = 0; k < 4; k++) {
    run_mpi(c, &thin, dts[k / 2], paths[k % 2], 0, k == 0, where);
    run_mpi(c, &cube4, dts[k / 2], paths[k % 2], nranks - 1, 0, where);
  }
}

static rcl_context *mpi_ctx(const char *map) {
  rcl_context *c = NULL;
  rt_ok(rcl_mpi_context_create(&c, MPI_COMM_WORLD, map, NULL));
  return c;
}

/* ---- tests ----------------------------------------------------------------------------------------- */

/* Device _i on every rank. */
START_TEST(mpi_md_device) {
  char map[64], where[160];
  snprintf(map, sizeof map, "rank:%zu", (size_t)_i);
  snprintf(where, sizeof where, "%s (every rank)", rt_device_name((size_t)_i));
  rcl_context *c = mpi_ctx(map);
  sweep(c, where);
  rcl_context_free(c);
}
END_TEST

/* The device map "rank:" of every device from shift on (rank r on device (r + shift) mod count), with f64 only
 * those that run MD in f64; "" when none. */
static void mixed_map(char *map, size_t size, size_t shift, int f64) {
  size_t nd = rt_ndevices(), used = (size_t)snprintf(map, size, "rank:");
  for (size_t k = 0; k < nd && used < size; k++) {
    size_t dev = (k + shift) % nd;
    if (!f64 || rt_supported(dev, RCL_FAMILY_MD, RCL_F64))
      used += (size_t)snprintf(map + used, size - used, "%s%zu", map[used - 1] == ':' ? "" : ",", dev);
  }
  if (map[used - 1] == ':') map[0] = '\0';
}

/* Mixed drivers: rank r on device (r + shift) mod count, and on the devices that run f64 (f64 mixes too). */
START_TEST(mpi_md_mixed) {
  size_t nd = rt_ndevices();
  ck_assert(nd > 0);
  for (size_t shift = 0; shift < (nd > 1 ? 3 : 1); shift++) {
    char map[128];
    mixed_map(map, sizeof map, shift, shift == 2);
    if (!*map) continue;
    rcl_context *c = mpi_ctx(map);
    sweep(c, map);
    rcl_context_free(c);
  }
}
END_TEST

/* Mixed drivers, long and short runs of the thin-slab lattice: 0 and 1 steps, and 300 hot steps (many
 * decompositions: atoms migrate between ranks and across the periodic wrap; their phases within their time). */
START_TEST(mpi_md_long) {
  char map[128];
  mixed_map(map, sizeof map, 0, 0);
  rcl_context *c = mpi_ctx(map);
  static const md_problem runs[] = {{"fcc 3^3 0 steps", 3, 4.0, 20, 0, 1},
                                    {"fcc 3^3 1 step", 3, 4.0, 21, 1, 1},
                                    {"fcc 3^3 300 hot steps", 3, 4.0, 22, 300, 50}};
  for (size_t k = 0; k < 3; k++) run_mpi(c, &runs[k], RCL_F32, RCL_MD_PATH_GATHER, 0, k == 2, "mixed, long");
  /* the 300 steps decomposed many times */
  rcl_md_system *sys = lattice(&runs[2]);
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rcl_md *md = NULL;
  rcl_md_thermo th = {0};
  double t[3] = {0}, ph[RCL_MPI_MD_DECOMPOSE_PHASES] = {0}, sum = 0;
  int rc = rcl_mpi_md_create(&md, MPI_COMM_WORLD, 0, c, RCL_F32, sys, &lj, NULL);
  if (!rc) rc = rcl_md_run(md, 300, 0.005, 0, NULL, NULL);
  if (!rc) rc = rcl_md_thermo_get(md, &th);
  if (!rc) rc = rcl_mpi_md_times(t, md);
  if (!rc) rc = rcl_mpi_md_decompose_times(ph, md);
  rcl_md_free(md);
  rcl_md_system_free(sys);
  rcl_context_free(c);
  ck_assert_msg(rc == 0, "%s", rcl_error_last());
  ck_assert_msg(th.neighbor_builds >= 5, "only %zu decompositions in 300 hot steps", th.neighbor_builds);
  /* the decompositions' phases: parts of their total (rcl_mpi_md_times' t[1]), the local builds among them */
  for (int k = 0; k < RCL_MPI_MD_DECOMPOSE_PHASES; k++) {
    ck_assert_msg(ph[k] >= 0, "phase %d: %g s", k, ph[k]);
    sum += ph[k];
  }
  ck_assert_msg(sum <= t[1] + 1e-6 && t[1] > 0, "the phases add to %g s, the decompositions took %g s", sum, t[1]);
}
END_TEST

/* A liquid film drifting through the slabs: the fcc 3^3 lattice (T 0.5, jittered) in a box three times as long
 * along x (the slabs' axis), vacuum beside it, every atom given a drift of 8 along x. In 400 steps of 0.005 it
 * crosses the periodic box once: each slab fills (local simulations growing beyond their headroom: reloads
 * refused, new ones created), empties (no local simulation) and refills; between those the reloads. */
static rcl_md_system *film(void) {
  rcl_md_system *sys = NULL;
  rt_ok(rcl_md_lattice(&sys, "fcc", 3, 0.8442, 0.5, 31));
  rt_ok(rcl_md_displace(sys, 0.05, 32));
  sys->hi[0] = sys->lo[0] + 3 * (sys->hi[0] - sys->lo[0]);
  for (size_t i = 0; i < sys->natoms; i++) sys->vel[3 * i] += 8.0;
  return sys;
}

/* Device _i on every rank: the film's run over the ranks (local simulations reloaded, refused and created anew,
 * ranks emptied and refilled) equals the host reference and rcl_md on the device, bit for bit. */
START_TEST(mpi_md_reload) {
  char map[64], what[200];
  snprintf(map, sizeof map, "rank:%zu", (size_t)_i);
  snprintf(what, sizeof what, "drifting film on %s, rank %d of %d", rt_device_name((size_t)_i), rank, nranks);
  rcl_context *c = mpi_ctx(map);
  rcl_md_system *sys = film();
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rcl_md *md = NULL;
  md_out got = {0}, ref = {0}, one = {0};
  size_t counts[3] = {0, 0, 0}, all[3] = {0, 0, 0};
  int usable = all_usable(c, RCL_F32, RCL_MD_PATH_GATHER);
  int rc = usable ? rcl_mpi_md_create(&md, MPI_COMM_WORLD, 0, c, RCL_F32, sys, &lj, NULL) : 0;
  if (usable && !rc) {
    rc = rcl_md_run(md, 400, 0.005, 100, record, &got);
    if (!rc) rc = rcl__mpi_md_local_counts(counts, md);
    if (!rc)
      finish(&got, md, 1, 0, 0, 0); /* the state gathered after the run (no further steps) */
    else
      rcl_md_free(md);
  }
  MPI_Allreduce(counts, all, 3, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (usable) {
    ck_assert_msg(rc == 0 && got.rc == 0, "%s: %s%s", what, rcl_error_last(), got.msg);
    rt_ok(rcl_md_create(&md, NULL, RCL_F32, sys, &lj, NULL));
    finish(&ref, md, 0, 0, 400, 100);
    assert_same(&got, &ref, RCL_F32, rank == 0, what);
    if (rank == 0) {
      rt_ok(rcl_md_create(&md, c, RCL_F32, sys, &lj, NULL));
      finish(&one, md, 0, 0, 400, 100);
      assert_same(&got, &one, RCL_F32, 1, what);
    }
    /* reloads on one rank, refused ones and ranks refilled (created anew more than once without a refusal) */
    ck_assert_msg(all[0] >= 10, "%s: %zu reloads", what, all[0]);
    if (nranks == 1) ck_assert_msg(all[1] == 0 && all[2] == 1, "%s: %zu refused, %zu created", what, all[1], all[2]);
    if (nranks > 1)
      ck_assert_msg(all[1] > 0 && all[2] > all[1] + (size_t)nranks, "%s: %zu refused, %zu created", what, all[1],
                    all[2]);
  }
  out_free(&got);
  out_free(&ref);
  out_free(&one);
  rcl_md_system_free(sys);
  rcl_context_free(c);
}
END_TEST

/* Errors, the same status on every rank: overlapping atoms (an overflow at step 0, on the rank owning them),
 * a time step far too large (the step named), a bad root, the distributed state refused by rcl_md_get_state,
 * a simulation not of rcl_mpi_md_create refused by rcl_mpi_md_gather_state and rcl_mpi_md_decompose_times. */
START_TEST(mpi_md_errors) {
  rcl_context *c = mpi_ctx("rank:0");
  md_problem p = {"fcc 3^3", 3, 1.0, 3, 0, 0};
  rcl_md_system *sys = lattice(&p);
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rcl_md *md = NULL;
  memcpy(sys->pos + 3, sys->pos, 3 * sizeof *sys->pos);
  sys->pos[3] += 1e-3;
  int rc1 = rcl_mpi_md_create(&md, MPI_COMM_WORLD, 0, c, RCL_F32, sys, &lj, NULL);
  char msg1[512];
  snprintf(msg1, sizeof msg1, "%s", rcl_error_last());
  rcl_md_system_free(sys);
  sys = lattice(&p);
  int rc2 = rcl_mpi_md_create(&md, MPI_COMM_WORLD, 0, c, RCL_F32, sys, &lj, NULL);
  int rc3 = rc2 ? rc2 : rcl_md_run(md, 20, 0.5, 0, NULL, NULL);
  char msg3[512];
  snprintf(msg3, sizeof msg3, "%s", rcl_error_last());
  float pos[3];
  int rc4 = rcl_md_get_state(md, pos, NULL);
  rcl_md_free(md);
  int rc5 = rcl_mpi_md_create(&md, MPI_COMM_WORLD, nranks, c, RCL_F32, sys, &lj, NULL);
  rcl_md *plain = NULL;
  rt_ok(rcl_md_create(&plain, NULL, RCL_F32, sys, &lj, NULL));
  int rc6 = rcl_mpi_md_gather_state(NULL, NULL, NULL, plain, 0);
  double ph[RCL_MPI_MD_DECOMPOSE_PHASES];
  int rc7 = rcl_mpi_md_decompose_times(ph, plain);
  rcl_md_free(plain);
  rcl_md_system_free(sys);
  rcl_context_free(c);
  ck_assert_msg(rc1 == RCL_ERR_OVERFLOW && strstr(msg1, "rank ") && strstr(msg1, "(step 0)"), "%d %s", rc1, msg1);
  ck_assert_msg(rc2 == 0, "%s", rcl_error_last());
  ck_assert_msg((rc3 == RCL_ERR_OVERFLOW || rc3 == RCL_ERR_INVALID_ARG) && strstr(msg3, "(step "), "dt 0.5: %d %s", rc3,
                msg3);
  ck_assert_int_eq(rc4, RCL_ERR_INVALID_ARG);
  ck_assert_int_eq(rc5, RCL_ERR_INVALID_ARG);
  ck_assert_int_eq(rc6, RCL_ERR_INVALID_ARG);
  ck_assert_int_eq(rc7, RCL_ERR_INVALID_ARG);
}
END_TEST

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  Suite *s = suite_create("mpi_md");
  rt_add_device_presence(s);
  RT_ADD_DEVICE_CASE(s, mpi_md_device);
  RT_ADD_DEVICE_CASE(s, mpi_md_reload);
  const TTest *whole[] = {mpi_md_mixed, mpi_md_long, mpi_md_errors};
  const char *names[] = {"mpi_md_mixed", "mpi_md_long", "mpi_md_errors"};
  for (size_t k = 0; k < 3; k++) { /* one case each, for CK_RUN_CASE */
    TCase *tc = tcase_create(names[k]);
    tcase_add_test(tc, whole[k]);
    suite_add_tcase(s, tc);
  }
  int rc = rt_run(s);
  int all = 0; /* the test fails when any rank failed */
  MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return all;
}
