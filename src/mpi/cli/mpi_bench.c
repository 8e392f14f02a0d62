/* reprocl-mpi bench allreduce: what the reproducible allreduce costs against MPI's own. Every rank makes its part of
 * one reduction over its slice of n values once (the host reference part, rcl_ref_reduce_partial), then the ranks
 * time R calls of rcl_mpi_partial_allreduce (the parts joined, every rank holding the one-device bits) and R calls
 * of MPI_Allreduce(MPI_SUM) of one value of the dtype (what a plain code does after summing its slice). The time
 * per call is the slowest rank's mean over the R calls, after R/10 warm-up calls. */
#include <stdlib.h>
#include <string.h>

#include "mpi_cli.h"

typedef struct {
  rcl_dtype dt;
  rcl_reduce_mode mode;
  const char *n_text;
  size_t n, reps;
  int json;
} bench_job;

static int parse(bench_job *j, int argc, char **argv) {
  const cli_opt opts[] = {
      CLI_OPT_DTYPE(&j->dt),
      CLI_VAL("mode", &j->mode, cli_opt_reduce_mode, "ordered|exact", "the parts' contract (default: ordered)"),
      CLI_STR("n", &j->n_text, "N", "values over all ranks (default: 1; k/M/G suffixes and 2^k)"),
      CLI_VAL("reps", &j->reps, cli_opt_size, "R", "timed calls of each (default: 20000)"),
      CLI_OPT_JSON(&j->json),
      CLI_END};
  const cli_cmd_spec spec = {
      "bench allreduce",
      "[--dtype f32|f64] [--mode ordered|exact] [--n N] [--reps R] [--json]",
      "Under mpirun: the time of one rcl_mpi_partial_allreduce (every rank's part of a sum of N values, joined\n"
      "so that every rank holds the one-device bits) against one MPI_Allreduce(MPI_SUM) of one value, per call,\n"
      "the slowest rank's mean over R calls.",
      opts,
      NULL,
      0,
      0};
  int rc = cli_opt_parse(&spec, argc, argv, NULL, NULL);
  if (!rc && j->n_text) rc = cli_parse_size(&j->n, "--n", j->n_text);
  if (!rc && j->reps == 0) rc = cli_error("--reps must be at least 1");
  return rc;
}

/* Seconds per call of fn over reps calls (after reps/10 warm-up calls), the slowest rank's. */
static double per_call(int (*fn)(void *), void *arg, size_t reps, int *rc) {
  for (size_t i = 0; i < reps / 10 && !*rc; i++) *rc = fn(arg);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (size_t i = 0; i < reps && !*rc; i++) *rc = fn(arg);
  double mine = (MPI_Wtime() - t0) / (double)reps, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
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

static int bench_allreduce(int argc, char **argv) {
  bench_job j = {.dt = RCL_F64, .mode = RCL_REDUCE_ORDERED, .n = 1, .reps = 20000};
  int rc = parse(&j, argc, argv), rank, size;
  if (rc) return rc == CLI_OPT_HELP ? 0 : rc;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t first, count, es = rcl_dtype_size(j.dt);
  mpi_cli_slice(&first, &count, j.n, rank, size);
  void *x = malloc((count ? count : 1) * es);
  bench_arg a = {NULL, j.dt, {0}, {0}};
  rc = x && !rcl_generate(x, j.dt, count, RCL_GEN_UNIFORM, 7 + (uint64_t)rank) ? 0 : RCL_ERR_OUT_OF_MEMORY;
  if (!rc) rc = rcl_ref_reduce_partial(&a.part, RCL_OP_SUM, j.dt, j.mode, j.n, first, count, x, NULL);
  free(x);
  if (rcl_mpi_agree(MPI_COMM_WORLD, rc, NULL)) return cli_fail("making the parts");
  double t_rcl = per_call(call_partial, &a, j.reps, &rc), t_mpi = per_call(call_mpi, &a, j.reps, &rc);
  rcl_partial_free(a.part);
  if (rcl_mpi_agree(MPI_COMM_WORLD, rc, NULL)) return cli_fail("the allreduce");
  if (rank == 0 && j.json)
    cli_json_print(json_pack("{s:s,s:i,s:s,s:s,s:I,s:I,s:f,s:f,s:f}", "command", "bench allreduce", "ranks", size,
                             "dtype", rcl_dtype_name(j.dt), "mode", rcl_reduce_mode_name(j.mode), "n", (json_int_t)j.n,
                             "reps", (json_int_t)j.reps, "rcl_mpi_partial_allreduce_s", t_rcl, "mpi_allreduce_s", t_mpi,
                             "ratio", t_rcl / t_mpi));
  else if (rank == 0)
    printf("allreduce over %d rank(s), sum of %zu %s value(s), %s parts: rcl_mpi_partial_allreduce %.3f us, "
           "MPI_Allreduce(MPI_SUM, 1 value) %.3f us, ratio %.2f\n",
           size, j.n, rcl_dtype_name(j.dt), rcl_reduce_mode_name(j.mode), t_rcl * 1e6, t_mpi * 1e6, t_rcl / t_mpi);
  return 0;
}

static const cli_command bench_kinds[] = {{"allreduce", bench_allreduce, NULL}, {NULL, NULL, NULL}};

int mpi_cmd_bench(int argc, char **argv) {
  if (argc >= 2)
    for (const cli_command *k = bench_kinds; k->name; k++)
      if (!strcmp(k->name, argv[1])) return k->fn(argc - 1, argv + 1);
  return cli_error("give a benchmark: reprocl-mpi bench allreduce [options] (`reprocl-mpi bench allreduce --help`)");
}
