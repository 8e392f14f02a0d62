/* reprocl-mpi md: the Lennard-Jones NVE simulation of `reprocl md` over the ranks of MPI_COMM_WORLD
 * (rcl_mpi_md_create: one slab of the box per rank, each rank on its own device). Rank 0 reads the input (a
 * LAMMPS data or XYZ file) or generates the lattice, and the library scatters the atoms; rank 0 prints the thermo
 * output and the SHA-256 digests of the step-0 forces and of the final positions and velocities — the digests
 * `reprocl md` prints for the same run on one device — and writes --out (extended-XYZ frames, gathered at each
 * dump) and --log whole or not at all after the run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_cli.h"

enum { BD_N = 6 + RCL_MPI_MD_DECOMPOSE_PHASES }; /* the breakdown's values */
/* The breakdown's keys of rcl_mpi_md_decompose_times' phases (parts of decompose_s). */
static const char *const phase_keys[RCL_MPI_MD_DECOMPOSE_PHASES] = {
    "decompose_state_s",  "decompose_migrate_pack_s", "decompose_migrate_mpi_s", "decompose_migrate_unpack_s",
    "decompose_ghosts_s", "decompose_local_fill_s",   "decompose_local_build_s"};

typedef struct {
  cli_md_args a; /* the system and integration options */
  const char *device, *map, *outpath, *logpath;
  size_t dump;
  int json, rank, size;
  rcl_dtype dt;
  rcl_md_options opts;
  rcl_md_lj lj;
  rcl_md_system *sys; /* rank 0 only */
  char what[512];
  rcl_context *ctx;
  rcl_md *md;
  size_t natoms, builds;
  void *state;      /* rank 0: positions then velocities [6N] of the dtype */
  char *traj, *log; /* rank 0: --out and --log in memory until the run ended */
  size_t traj_len, log_len;
  FILE *trajf, *logf;
  char forces_hex[RCL_SHA256_HEX_SIZE], state_hex[RCL_SHA256_HEX_SIZE];
  rcl_md_thermo last;
  double seconds;
  double breakdown[BD_N]; /* the largest over the ranks: rcl_mpi_md_times' three, the kernel times of rcl_md_stats,
                            rcl_mpi_md_decompose_times' phases (each the largest over the ranks on its own) */
  int failed;             /* a callback failed (rank 0's output) */
} mpi_md_job;

static int parse(mpi_md_job *j, int argc, char **argv) {
  const cli_opt opts[] = {
      CLI_MD_OPTS(&j->a),
      CLI_OPT_DTYPE(&j->dt),
      CLI_SECTION("devices"),
      CLI_STR("device", &j->device, "D", "every rank's device without --device-map (default: " CLI_DEFAULT_DEVICE ")"),
      CLI_STR("device-map", &j->map, "MAP",
              "local:SPEC,SPEC,... (local rank r of a node takes the (r mod count)-th) or\n"
              "rank:SPEC,SPEC,... (rank r takes the (r mod count)-th); specs as for --device"),
      CLI_VAL("path", &j->opts.path, cli_opt_md_path, "auto|gather|symmetric",
              "the force computation (every one gives the same bits)"),
      CLI_VAL("local", &j->opts.local_size, cli_opt_size, "L", "work-group size (0: default)"),
      CLI_NOT_HERE("native", "reprocl-mpi runs the reproducible build only (reprocl md --native)"),
      CLI_SECTION("output (rank 0)"),
      CLI_OPT_OUT(&j->outpath, "extended-XYZ frames, written whole after the run"),
      CLI_VAL("dump", &j->dump, cli_opt_size, "K", "a frame every K steps (default: the thermo interval)"),
      CLI_STR("log", &j->logpath, "FILE", "the thermo log, written whole after the run"),
      CLI_OPT_JSON(&j->json),
      CLI_END};
  const cli_cmd_spec spec = {
      "md",
      "(--input FILE | --lattice fcc|bcc|sc --cells N --density R --temp T [--seed S]) [--cutoff RC]\n"
      "                  [--shift] [--mixing M] [--skin D] [--dt T] [--steps S] [--thermo K] [--dtype f32|f64]\n"
      "                  [--device D] [--device-map MAP] [--path auto|gather|symmetric] [--local L]\n"
      "                  [--out traj.xyz] [--dump K] [--log thermo.txt] [--json]",
      "Under mpirun: the simulation of `reprocl md` over K ranks, the box cut into one slab per rank along its\n"
      "longest axis, each rank holding its atoms and their ghosts on its own device. Rank 0 prints the thermo\n"
      "output and the digests of the step-0 forces and of the final state: those `reprocl md` prints on one\n"
      "device for the same options, for any K and any mix of devices.",
      opts,
      NULL,
      0,
      0};
  int rc = cli_md_args_check(&j->a, cli_opt_parse(&spec, argc, argv, NULL, NULL));
  if (rc) return rc;
  if (j->device && !strcmp(j->device, "all"))
    return cli_error("--device all: each rank drives one device (give --device-map to spread the ranks)");
  j->a.every = j->a.every ? j->a.every : (j->a.steps ? j->a.steps : 1);
  j->dump = j->dump ? j->dump : j->a.every;
  return 0;
}

/* Rank 0's system (read or generated) and its checks; every rank learns the outcome. */
static int make_system(mpi_md_job *j) {
  int rc = 0;
  if (j->rank == 0) {
    rc = cli_md_system(&j->sys, &j->lj, j->what, sizeof j->what, &j->a);
    if (!rc) rc = rcl_md_check(j->sys, &j->lj, j->dt);
    if (!rc && j->outpath && !(j->trajf = open_memstream(&j->traj, &j->traj_len))) rc = RCL_ERR_OUT_OF_MEMORY;
    if (!rc && j->logpath && !(j->logf = open_memstream(&j->log, &j->log_len))) rc = RCL_ERR_OUT_OF_MEMORY;
  }
  if (rcl_mpi_agree(MPI_COMM_WORLD, rc, NULL)) return cli_fail("%s", j->a.input ? j->a.input : "--lattice");
  return 0;
}

/* This rank's seconds so far: rcl_mpi_md_times' three, the kernel times of rcl_md_stats, then the phases of
 * the decompositions. */
static int times_now(const mpi_md_job *j, double t[BD_N]) {
  rcl_md_stats st;
  int rc = rcl_mpi_md_times(t, j->md);
  if (!rc) rc = rcl_md_get_stats(j->md, &st);
  t[3] = rc ? 0 : st.force_seconds;
  t[4] = rc ? 0 : st.build_seconds;
  t[5] = rc ? 0 : st.integrate_seconds;
  if (!rc) rc = rcl_mpi_md_decompose_times(t + 6, j->md);
  return rc;
}

/* Where the run's time went (since `before`, the times at its start), the largest over the ranks (collective). */
static int breakdown(mpi_md_job *j, const double *before) {
  double mine[BD_N] = {0};
  int rc = times_now(j, mine);
  for (int k = 0; k < BD_N; k++) mine[k] -= before[k];
  rc = rcl_mpi_agree(MPI_COMM_WORLD, rc, NULL);
  if (!rc && MPI_Allreduce(mine, j->breakdown, BD_N, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
    rc = RCL_ERR_IO;
  return rc;
}

/* The state gathered on rank 0 (every rank calls it): into j->state. */
static int gather(mpi_md_job *j) {
  size_t n3 = 3 * j->natoms, es = rcl_dtype_size(j->dt);
  return rcl_mpi_md_gather_state(j->state, j->state ? (char *)j->state + n3 * es : NULL, NULL, j->md, 0);
}

/* Every rank at every thermo or dump step: a frame gathered and written by rank 0, its thermo line. */
static int on_thermo(rcl_md *md, const rcl_md_thermo *t, void *user) {
  mpi_md_job *j = user;
  (void)md;
  if (t->step > 0) mpi_cli_test_die(j->rank); /* the fault test's rank dies mid-run */
  if (j->outpath && t->step % j->dump == 0) {
    size_t n3 = 3 * j->natoms, es = rcl_dtype_size(j->dt);
    if (gather(j)) return j->failed = 1;
    if (j->rank == 0 && rcl_md_write_xyz(j->trajf, j->sys, j->dt, j->state, (char *)j->state + n3 * es, t->step,
                                         (double)t->step * j->a.dtime))
      j->failed = 1;
  }
  if (j->rank == 0 && (t->step % j->a.every == 0 || t->step == j->a.steps)) {
    if (!j->json) cli_md_thermo_line(stdout, t);
    if (j->logf) cli_md_thermo_line(j->logf, t);
  }
  return 0;
}

/* The simulation: created (forces digested), run, the final state gathered and digested on rank 0. */
static int simulate(mpi_md_job *j) {
  size_t n3 = 3 * j->natoms, es = rcl_dtype_size(j->dt);
  int64_t *f = NULL;
  if (j->rank == 0) {
    f = malloc(n3 * sizeof *f);
    j->state = malloc(2 * n3 * es);
  }
  int rc = rcl_mpi_agree(MPI_COMM_WORLD, j->rank == 0 && (!f || !j->state) ? RCL_ERR_OUT_OF_MEMORY : 0, NULL);
  if (!rc) rc = rcl_mpi_md_create(&j->md, MPI_COMM_WORLD, 0, j->ctx, j->dt, j->sys, &j->lj, &j->opts);
  if (!rc) rc = rcl_mpi_md_gather_state(NULL, NULL, f, j->md, 0);
  if (!rc && j->rank == 0) cli_digest(j->forces_hex, f, n3 * sizeof *f);
  free(f);
  if (rc) return cli_fail("creating the simulation over %d ranks", j->size);
  if (j->rank == 0 && !j->json) fputs(cli_md_thermo_head, stdout);
  if (j->logf) fputs(cli_md_thermo_head, j->logf);
  double before[BD_N] = {0};
  times_now(j, before); /* its failure comes again after the run */
  double t0 = MPI_Wtime();
  size_t every = j->outpath ? j->a.every < j->dump ? j->a.every : j->dump : j->a.every;
  while (j->outpath && (j->a.every % every || j->dump % every)) every--; /* their gcd */
  rc = rcl_md_run(j->md, j->a.steps, j->a.dtime, every, on_thermo, j);
  j->seconds = MPI_Wtime() - t0;
  if (!rc) rc = breakdown(j, before);
  if (!rc) rc = rcl_mpi_agree(MPI_COMM_WORLD, j->failed ? RCL_ERR_IO : 0, "writing the trajectory failed");
  if (!rc) rc = rcl_md_thermo_get(j->md, &j->last);
  if (!rc) rc = gather(j);
  if (rc) return cli_fail("the run over %d ranks", j->size);
  if (j->rank == 0) cli_digest(j->state_hex, j->state, 2 * n3 * es);
  return 0;
}

/* --out and --log by rank 0, whole or not at all; every rank learns whether they were written. */
static int write_outputs(mpi_md_job *j) {
  char why[512] = "";
  int rc = 0;
  if (j->rank == 0) {
    if (j->trajf && fclose(j->trajf) != 0) rc = RCL_ERR_IO;
    if (j->logf && fclose(j->logf) != 0) rc = RCL_ERR_IO;
    j->trajf = j->logf = NULL;
    if (rc) snprintf(why, sizeof why, "out of memory for the output");
    if (!rc && j->outpath) rc = mpi_cli_write_atomic(j->outpath, j->traj, j->traj_len, why, sizeof why);
    if (!rc && j->logpath) rc = mpi_cli_write_atomic(j->logpath, j->log, j->log_len, why, sizeof why);
  }
  if (rcl_mpi_agree(MPI_COMM_WORLD, rc, why)) return cli_fail("writing the output");
  return 0;
}

static void print_result(const mpi_md_job *j) {
  double n = (double)j->natoms;
  if (j->json) {
    json_t *top = json_pack(
        "{s:s,s:s,s:I,s:s,s:f,s:b,s:f,s:I,s:i,s:s,s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:I,s:f}", "command", "md", "input",
        j->what, "natoms", (json_int_t)j->natoms, "dtype", rcl_dtype_name(j->dt), "cutoff", j->a.cutoff, "shift",
        j->a.shift, "dt", j->a.dtime, "steps", (json_int_t)j->a.steps, "ranks", j->size, "path",
        rcl_md_path_name(rcl_md_path_used(j->md)), "forces_sha256", j->forces_hex, "state_sha256", j->state_hex, "pe",
        j->last.pe / n, "ke", j->last.ke / n, "etotal", j->last.etotal / n, "temperature", j->last.temperature,
        "pressure", j->last.pressure, "neighbor_builds", (json_int_t)j->last.neighbor_builds, "time_s", j->seconds);
    const double *b = j->breakdown;
    json_t *bd = json_pack("{s:s,s:f,s:f,s:f,s:f,s:f,s:f}", "of", "the largest over the ranks", "exchange_s", b[0],
                           "decompose_s", b[1], "device_s", b[2], "force_kernels_s", b[3], "build_kernels_s", b[4],
                           "integrate_kernels_s", b[5]);
    for (int k = 0; k < RCL_MPI_MD_DECOMPOSE_PHASES; k++) json_object_set_new(bd, phase_keys[k], json_real(b[6 + k]));
    json_object_set_new(top, "breakdown", bd);
    cli_json_print(top);
    return;
  }
  printf("  forces(step 0) sha256 %s\n  final state    sha256 %s\n", j->forces_hex, j->state_hex);
  printf("  %.3f s for %zu steps (%.1f steps/s) over %d rank(s), path %s, %zu decompositions\n", j->seconds, j->a.steps,
         j->seconds > 0 ? (double)j->a.steps / j->seconds : 0.0, j->size, rcl_md_path_name(rcl_md_path_used(j->md)),
         j->last.neighbor_builds);
  printf("  largest over the ranks: %.3f s ghost exchange, %.3f s decompositions, %.3f s on the device (kernels: "
         "%.3f s force, %.3f s build, %.3f s integration)\n",
         j->breakdown[0], j->breakdown[1], j->breakdown[2], j->breakdown[3], j->breakdown[4], j->breakdown[5]);
  const double *d = j->breakdown + 6;
  printf("  decompositions: %.3f s state read, migration %.3f s pack, %.3f s messages, %.3f s unpack, %.3f s ghost "
         "lists, %.3f s local system, %.3f s local simulation built\n",
         d[0], d[1], d[2], d[3], d[4], d[5], d[6]);
  if (j->outpath) printf("wrote %s (%zu bytes)\n", j->outpath, j->traj_len);
}

/* Each rank's device, printed by rank 0 (in rank order). */
static void print_ranks(const mpi_md_job *j) {
  char mine[260], *all = j->rank == 0 ? malloc((size_t)j->size * sizeof mine) : NULL;
  const rcl_device_profile *p = rcl_context_profile(j->ctx);
  snprintf(mine, sizeof mine, "%s: %s", p->platform_name, p->device_name);
  MPI_Gather(mine, (int)sizeof mine, MPI_BYTE, all, all ? (int)sizeof mine : 0, MPI_BYTE, 0, MPI_COMM_WORLD);
  for (int r = 0; all && !j->json && r < j->size; r++) printf("  rank %-3d %s\n", r, all + (size_t)r * sizeof mine);
  free(all);
}

int mpi_cmd_md(int argc, char **argv) {
  mpi_md_job j = {.a = CLI_MD_ARGS_INIT, .dt = RCL_F32, .opts = RCL_MD_OPTIONS_INIT, .lj = RCL_MD_LJ_INIT};
  MPI_Comm_rank(MPI_COMM_WORLD, &j.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &j.size);
  int rc = parse(&j, argc, argv); /* the same arguments on every rank: the same outcome */
  if (rc) return rc == CLI_OPT_HELP ? 0 : rc;
  j.opts.skin = j.a.skin;
  rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
  o.device = j.device;
  if (!(rc = make_system(&j)) && rcl_mpi_context_create(&j.ctx, MPI_COMM_WORLD, j.map, &o))
    rc = cli_fail("opening the ranks' devices");
  if (!rc) {
    unsigned long long n = j.rank == 0 ? j.sys->natoms : 0;
    MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    j.natoms = (size_t)n;
    if (j.rank == 0 && !j.json)
      printf("md: %zu atoms (%s), %s, cutoff %g%s, dt %g, %zu steps, %d rank(s)\n", j.natoms, j.what,
             rcl_dtype_name(j.dt), j.a.cutoff, j.a.shift ? " shifted" : "", j.a.dtime, j.a.steps, j.size);
    print_ranks(&j);
    if (!(rc = simulate(&j)) && !(rc = write_outputs(&j)) && j.rank == 0) print_result(&j);
  }
  if (j.trajf) fclose(j.trajf);
  if (j.logf) fclose(j.logf);
  free(j.traj);
  free(j.log);
  free(j.state);
  rcl_md_free(j.md);
  rcl_md_system_free(j.sys);
  rcl_context_free(j.ctx);
  return rc;
}
