/* reprocl-mpi bench allreduce: what the reproducible allreduce costs against MPI's own. Every rank makes its part of
 * one reduction over its slice of n values once (the host reference part, rcl_ref_reduce_partial; with --device,
 * also on that device, rcl_reduce_partial, for where the time goes), then the ranks time calls of
 * rcl_mpi_partial_allreduce (the parts joined, every rank holding the one-device bits) and of
 * MPI_Allreduce(MPI_SUM) of one value of the dtype (what a plain code does after summing its slice). The two are
 * timed in turns, ROUNDS rounds of R/ROUNDS calls each (after R/10 warm-up calls), so that a busy machine
 * disturbs both alike; each time is the slowest rank's mean over a round, the least over the rounds. */
#include <stdlib.h>
#include <string.h>

#include "mpi_cli.h"

typedef struct {
  rcl_dtype dt;
  rcl_reduce_mode mode;
  const char *n_text, *per_text, *device;
  size_t n, per_rank, reps;
  int json;
} bench_job;

static int parse(bench_job *j, int argc, char **argv) {
  const cli_opt opts[] = {
      CLI_OPT_DTYPE(&j->dt),
      CLI_VAL("mode", &j->mode, cli_opt_reduce_mode, "ordered|exact", "the parts' contract (default: ordered)"),
      CLI_STR("n", &j->n_text, "N", "values over all ranks (default: 1; k/M/G suffixes and 2^k)"),
      CLI_STR("per-rank", &j->per_text, "N", "N values on each rank instead (n = N times the ranks)"),
      CLI_VAL("reps", &j->reps, cli_opt_size, "R", "timed calls of each (default: 20000)"),
      CLI_STR("device", &j->device, "D", "also time making the part on device D (every rank; default: host only)"),
      CLI_OPT_JSON(&j->json),
      CLI_END};
  const cli_cmd_spec spec = {
      "bench allreduce",
      "[--dtype f32|f64] [--mode ordered|exact] [--n N | --per-rank N] [--reps R] [--device D] [--json]",
      "Under mpirun: the time of one rcl_mpi_partial_allreduce (every rank's part of a sum of N values, joined\n"
      "so that every rank holds the one-device bits) against one MPI_Allreduce(MPI_SUM) of one value, per call,\n"
      "the slowest rank's mean, timed in turns over 5 rounds, the least round. Also the time of making this\n"
      "rank's part (host reference; on a device with --device): for large N, where the time goes.",
      opts,
      NULL,
      0,
      0};
  int rc = cli_opt_parse(&spec, argc, argv, NULL, NULL);
  if (!rc && j->n_text) rc = cli_parse_size(&j->n, "--n", j->n_text);
  if (!rc && j->per_text)
    rc = j->n_text ? cli_error("give --n or --per-rank, not both")
                   : cli_parse_size(&j->per_rank, "--per-rank", j->per_text);
  if (!rc && j->reps == 0) rc = cli_error("--reps must be at least 1");
  return rc;
}

enum { ROUNDS = 5 };

/* Seconds per call of fn over reps calls, the slowest rank's. */
static double per_call(int (*fn)(void *), void *arg, size_t reps, int *rc) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (size_t i = 0; i < reps && !*rc; i++) *rc = fn(arg);
  double mine = (MPI_Wtime() - t0) / (double)reps, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/* t[0], t[1]: the least per-call time of fn[0], fn[1] over ROUNDS rounds taken in turns, after warm-up calls. */
static void in_turns(double t[2], int (*const fn[2])(void *), void *arg, size_t reps, int *rc) {
  size_t per = reps / ROUNDS ? reps / ROUNDS : 1;
  for (int f = 0; f < 2; f++) {
    for (size_t i = 0; i < reps / 10 && !*rc; i++) *rc = fn[f](arg);
    t[f] = 1e300;
  }
  for (int r = 0; r < ROUNDS; r++)
    for (int f = 0; f < 2; f++) {
      double s = per_call(fn[f], arg, per, rc);
      t[f] = s < t[f] ? s : t[f];
    }
}

typedef struct {
  rcl_partial *part;
  rcl_dtype dt;
  unsigned char out[8], in[8];
} bench_arg;

static int call_partial(void *p) {
  bench_arg *a = p;
  return rcl_mpi_partial_allreduce(a->out, MPI_COMM_WORLD, a->part);
}

static int call_mpi(void *p) {
  bench_arg *a = p;
  return MPI_Allreduce(a->in, a->out, 1, a->dt == RCL_F32 ? MPI_FLOAT : MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

/* The slowest rank's seconds since t0. */
static double slowest_since(double t0) {
  double mine = MPI_Wtime() - t0, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/* This rank's part of the sum of its slice (a->part, the host reference), and the time of making it: on the host
 * (t[0]) and, with --device, on that device from host data (t[1]; else 0). Returns 0 or the exit status. */
static int make_part(bench_arg *a, double t[2], const bench_job *j, int rank, int size) {
  size_t first, count, es = rcl_dtype_size(j->dt);
  mpi_cli_slice(&first, &count, j->n, rank, size);
  void *x = malloc((count ? count : 1) * es);
  int rc = x && !rcl_generate(x, j->dt, count, RCL_GEN_UNIFORM, 7 + (uint64_t)rank) ? 0 : RCL_ERR_OUT_OF_MEMORY;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  if (!rc) rc = rcl_ref_reduce_partial(&a->part, RCL_OP_SUM, j->dt, j->mode, j->n, first, count, x, NULL);
  t[0] = slowest_since(t0);
  t[1] = 0;
  rcl_context *ctx = NULL;
  if (rcl_mpi_agree(MPI_COMM_WORLD, rc, NULL) || (j->device && mpi_cli_open(&ctx, j->device, NULL))) {
    free(x);
    return ctx ? 1 : cli_fail("making the parts");
  }
  rcl_reduce_options o = RCL_REDUCE_OPTIONS_INIT;
  o.mode = j->mode;
  for (int r = 0; ctx && r < 3 && !rc; r++) { /* the first builds the kernels: the least of three */
    rcl_partial *p = NULL;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    rc = rcl_reduce_partial(&p, ctx, RCL_OP_SUM, j->dt, j->n, first, count, x, NULL, &o);
    double s = slowest_since(t0);
    t[1] = r == 0 || s < t[1] ? s : t[1];
    rcl_partial_free(p);
  }
  free(x);
  rcl_context_free(ctx);
  return rcl_mpi_agree(MPI_COMM_WORLD, rc, NULL) ? cli_fail("making the parts on the device") : 0;
}

static int bench_allreduce(int argc, char **argv) {
  bench_job j = {.dt = RCL_F64, .mode = RCL_REDUCE_ORDERED, .n = 1, .reps = 20000};
  int rc = parse(&j, argc, argv), rank, size;
  if (rc) return rc == CLI_OPT_HELP ? 0 : rc;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (j.per_text && j.per_rank > SIZE_MAX / (size_t)size)
    return cli_error("--per-rank %zu over %d ranks: too many", j.per_rank, size);
  if (j.per_text) j.n = j.per_rank * (size_t)size;
  bench_arg a = {NULL, j.dt, {0}, {0}};
  double tp[2], t[2];
  if ((rc = make_part(&a, tp, &j, rank, size)) != 0) {
    rcl_partial_free(a.part);
    return rc;
  }
  int (*const fn[2])(void *) = {call_partial, call_mpi};
  in_turns(t, fn, &a, j.reps, &rc);
  rcl_partial_free(a.part);
  if (rcl_mpi_agree(MPI_COMM_WORLD, rc, NULL)) return cli_fail("the allreduce");
  if (rank == 0 && j.json)
    cli_json_print(json_pack("{s:s,s:i,s:s,s:s,s:I,s:I,s:i,s:f,s:f,s:f,s:f,s:f}", "command", "bench allreduce", "ranks",
                             size, "dtype", rcl_dtype_name(j.dt), "mode", rcl_reduce_mode_name(j.mode), "n",
                             (json_int_t)j.n, "reps", (json_int_t)j.reps, "rounds", ROUNDS,
                             "rcl_mpi_partial_allreduce_s", t[0], "mpi_allreduce_s", t[1], "ratio", t[0] / t[1],
                             "part_host_s", tp[0], "part_device_s", tp[1]));
  char dev[64] = "";
  if (j.device) snprintf(dev, sizeof dev, ", device %.1f us", tp[1] * 1e6);
  if (rank == 0 && !j.json)
    printf("allreduce over %d rank(s), sum of %zu %s value(s), %s parts: rcl_mpi_partial_allreduce %.3f us, "
           "MPI_Allreduce(MPI_SUM, 1 value) %.3f us, ratio %.2f; making the part: host %.1f us%s\n",
           size, j.n, rcl_dtype_name(j.dt), rcl_reduce_mode_name(j.mode), t[0] * 1e6, t[1] * 1e6, t[0] / t[1],
           tp[0] * 1e6, dev);
  return 0;
}

static const cli_command bench_kinds[] = {{"allreduce", bench_allreduce, NULL}, {NULL, NULL, NULL}};

int mpi_cmd_bench(int argc, char **argv) {
  if (argc >= 2)
    for (const cli_command *k = bench_kinds; k->name; k++)
      if (!strcmp(k->name, argv[1])) return k->fn(argc - 1, argv + 1);
  return cli_error("give a benchmark: reprocl-mpi bench allreduce [options] (`reprocl-mpi bench allreduce --help`)");
}
