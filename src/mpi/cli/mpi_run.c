/* reprocl-mpi run reduce: one reduction of rcl_generate's data over the ranks of MPI_COMM_WORLD. Rank r holds
 * the r-th balanced slice of the n elements and reduces it on its own device (the device map picks it); the
 * parts meet in rcl_mpi_reduce, so every rank holds the bits one device gives over the whole vector. The host
 * reference is computed the same way (each rank's reference part, joined by rcl_mpi_partial_allreduce), so no
 * rank ever holds more than its slice after generating it. */
#include <stdlib.h>
#include <string.h>

#include "mpi_cli.h"

typedef struct {
  rcl_reduce_op op;
  rcl_dtype dt;
  rcl_reduce_options opts;
  size_t n;
  uint64_t seed;
  rcl_gen_kind dist;
  const char *device, *map, *out;
  int json;
  int rank, size;
  size_t first, count;  /* this rank's slice */
  unsigned char *x, *y; /* its elements */
  rcl_context *ctx;
  unsigned char ref[8], val[8];
  char refhex[RCL_SHA256_HEX_SIZE], hex[RCL_SHA256_HEX_SIZE];
  double secs;
  int same; /* every rank holds the same bits */
} mpi_reduce_job;

static int parse(mpi_reduce_job *j, int argc, char **argv) {
  const char *n_text = NULL;
  const cli_opt opts[] = {
      CLI_VAL("op", &j->op, cli_opt_reduce_op, "sum|dot|nrm2", "the reduction (default: sum)"),
      CLI_OPT_DTYPE(&j->dt),
      CLI_VAL("mode", &j->opts.mode, cli_opt_reduce_mode, "ordered|exact",
              "ordered: the contract's fixed tree; exact: correctly rounded (default: ordered)"),
      CLI_STR("n", &n_text, "N", "the number of elements over all ranks (required; k/M/G suffixes and 2^k)"),
      CLI_VAL("seed", &j->seed, cli_opt_u64, "S", "the inputs' seed (default: 1)"),
      CLI_VAL("dist", &j->dist, cli_opt_gen_kind, "uniform|wide|cancel|special",
              "the inputs' distribution (default: uniform)"),
      CLI_STR("device", &j->device, "D", "every rank's device without --device-map (default: " CLI_DEFAULT_DEVICE ")"),
      CLI_STR("device-map", &j->map, "MAP",
              "local:SPEC,SPEC,... (local rank r of a node takes the (r mod count)-th) or\n"
              "rank:SPEC,SPEC,... (rank r takes the (r mod count)-th); specs as for --device"),
      CLI_SECTION("launch (any gives the same bits; default: the tuned or platform choice)"),
      CLI_VAL("local", &j->opts.local_size, cli_opt_size, "L", "work-group size, a power of two"),
      CLI_VAL("groups", &j->opts.num_groups, cli_opt_size, "G", "number of work-groups"),
      CLI_VAL("variant", &j->opts.variant, cli_opt_reduce_variant, "ndrange|task", "the implementation"),
      CLI_SECTION("output"),
      CLI_NOT_HERE("native", "reprocl-mpi runs the reproducible build only (reprocl run reduce --native)"),
      CLI_OPT_OUT(&j->out, "rank 0 writes the result (one raw little-endian value) to FILE, whole or not at all"),
      CLI_OPT_JSON(&j->json),
      CLI_END};
  const cli_cmd_spec spec = {
      "run reduce",
      "--op sum|dot|nrm2 --dtype f32|f64 --mode ordered|exact --n N\n"
      "                          [--seed S] [--dist uniform|wide|cancel|special] [--device D] [--device-map MAP]\n"
      "                          [--local L] [--groups G] [--variant ndrange|task] [--out FILE] [--json]",
      "Under mpirun: rank r of K reduces the r-th of K balanced slices of the inputs on its own device, and the\n"
      "parts are joined in rank order (rcl_mpi_reduce): every rank holds the bits `reprocl run reduce` gives\n"
      "on one device for the same --n, --seed and --dist, for any K and any mix of devices. Rank 0 prints the\n"
      "host reference, each rank's device and slice, and the result with its SHA-256 digest.",
      opts,
      "the result differs from the host reference, or between ranks",
      0,
      0};
  int rc = cli_opt_parse(&spec, argc, argv, NULL, NULL);
  if (rc) return rc;
  if (!n_text) return cli_error("--n is required (the number of elements)");
  if ((rc = cli_parse_size(&j->n, "--n", n_text)) != 0) return rc;
  if (j->n > SIZE_MAX / rcl_dtype_size(j->dt) / 2) return cli_error("--n %zu is too large", j->n);
  if (j->device && !strcmp(j->device, "all"))
    return cli_error("--device all: each rank drives one device (give --device-map to spread the ranks)");
  return 0;
}

/* This rank's slice of x = rcl_generate(dist, seed) and y (seed + 1): the whole vector is generated (the
 * generator is sequential) and the slice kept. The rank's status and its reason in *why. */
static int make_slice(mpi_reduce_job *j, char *why, size_t why_size) {
  size_t es = rcl_dtype_size(j->dt);
  unsigned char *all = malloc(j->n ? j->n * es : 1);
  j->x = malloc(j->count ? j->count * es : 1);
  j->y = malloc(j->count ? j->count * es : 1);
  int rc = 0;
  if (!all || !j->x || !j->y) {
    snprintf(why, why_size, "cannot allocate %zu bytes of host memory for the inputs", (j->n + 2 * j->count) * es);
    rc = RCL_ERR_OUT_OF_MEMORY;
  }
  for (int k = 0; k < 2 && !rc; k++) {
    if ((rc = rcl_generate(all, j->dt, j->n, j->dist, j->seed + (uint64_t)k)) != 0)
      snprintf(why, why_size, "rcl_generate: %s", rcl_error_last());
    else
      memcpy(k ? j->y : j->x, all + j->first * es, j->count * es);
  }
  free(all);
  return rc;
}

/* The host reference over all ranks: each rank's reference part, joined. */
static int reference(mpi_reduce_job *j) {
  char why[256] = "";
  int rc = make_slice(j, why, sizeof why);
  rc = rcl_mpi_agree(MPI_COMM_WORLD, rc, rc ? why : NULL);
  if (rc) return cli_fail("making the inputs");
  rcl_partial *part = NULL;
  rc = rcl_ref_reduce_partial(&part, j->op, j->dt, j->opts.mode, j->n, j->first, j->count, j->x, j->y);
  if ((rc = rcl_mpi_agree(MPI_COMM_WORLD, rc, NULL)) == 0) rc = rcl_mpi_partial_allreduce(j->ref, MPI_COMM_WORLD, part);
  rcl_partial_free(part);
  if (rc) return cli_fail("host reference");
  cli_digest(j->refhex, j->ref, rcl_dtype_size(j->dt));
  return 0;
}

static int run_once(void *p) {
  mpi_reduce_job *j = p;
  return rcl_mpi_reduce(j->val, MPI_COMM_WORLD, j->ctx, j->op, j->dt, j->count, j->x, j->y, &j->opts);
}

/* The reduction over the ranks (median of 3 after a warm-up), and whether every rank holds the same bits. */
static int run(mpi_reduce_job *j) {
  double mn, mx;
  if (cli_bench_time(&j->secs, &mn, &mx, 3, run_once, j)) return cli_fail("the reduction over %d ranks", j->size);
  size_t es = rcl_dtype_size(j->dt);
  unsigned char *all = malloc((size_t)j->size * 8);
  int rc = rcl_mpi_agree(MPI_COMM_WORLD, all ? 0 : RCL_ERR_OUT_OF_MEMORY, all ? NULL : "out of memory");
  if (rc) {
    free(all);
    return cli_fail("comparing the ranks' results");
  }
  MPI_Allgather(j->val, 8, MPI_BYTE, all, 8, MPI_BYTE, MPI_COMM_WORLD);
  j->same = 1;
  for (int r = 0; r < j->size; r++) j->same &= memcmp(all + (size_t)r * 8, j->val, es) == 0;
  free(all);
  cli_digest(j->hex, j->val, es);
  return 0;
}

static void print_text(const mpi_reduce_job *j, const rank_row *rows) {
  char buf[64];
  cli_format_value(buf, sizeof buf, j->ref, j->dt);
  printf("reduce %s %s %s n=%zu dist=%s seed=%llu\n", rcl_reduce_op_name(j->op), rcl_dtype_name(j->dt),
         rcl_reduce_mode_name(j->opts.mode), j->n, rcl_gen_kind_name(j->dist), (unsigned long long)j->seed);
  printf("  %-44s %-24s %-16s %s\n", "device", "result", "sha256", "time");
  printf("  %-44s %-24s %-16.16s %s\n", "host reference (C, -ffp-contract=off)", buf, j->refhex, "-");
  for (int r = 0; r < j->size; r++) mpi_cli_print_rank(&rows[r], r);
  int ok = !memcmp(j->val, j->ref, rcl_dtype_size(j->dt));
  char label[64];
  snprintf(label, sizeof label, "%d rank(s), rcl_mpi_reduce", j->size);
  cli_format_value(buf, sizeof buf, j->val, j->dt);
  printf("  %-44s %-24s %-16.16s %.3f ms %s\n", label, buf, j->hex, j->secs * 1e3,
         ok ? "= reference" : "DIFFERS from the reference");
  if (j->out) printf("wrote the result (%zu bytes, sha256 %s) to %s\n", rcl_dtype_size(j->dt), j->hex, j->out);
  printf("%s: %d rank(s) ran, %s, %s the reference\n", ok && j->same ? "AGREE" : "DISAGREE", j->size,
         j->same ? "every rank holds the same bits" : "the ranks' bits DIFFER", ok ? "equal to" : "DIFFERENT from");
}

static void print_json(const mpi_reduce_job *j, const rank_row *rows) {
  char ref[64], val[64];
  cli_format_value(ref, sizeof ref, j->ref, j->dt);
  cli_format_value(val, sizeof val, j->val, j->dt);
  int ok = !memcmp(j->val, j->ref, rcl_dtype_size(j->dt));
  json_t *jranks = mpi_cli_ranks_json(rows, j->size);
  json_t *top =
      json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:s,s:{s:s,s:s},s:o,s:s,s:s,s:f,s:b,s:b,s:b}", "command", "run reduce", "op",
                rcl_reduce_op_name(j->op), "dtype", rcl_dtype_name(j->dt), "mode", rcl_reduce_mode_name(j->opts.mode),
                "n", (json_int_t)j->n, "seed", (json_int_t)j->seed, "dist", rcl_gen_kind_name(j->dist), "reference",
                "result", ref, "sha256", j->refhex, "ranks", jranks, "result", val, "sha256", j->hex, "time_s", j->secs,
                "matches_reference", ok, "ranks_agree", j->same, "all_agree", ok && j->same);
  if (j->out) json_object_set_new(top, "out", json_string(j->out));
  cli_json_print(top);
}

static int cmd_run_reduce(int argc, char **argv) {
  mpi_reduce_job j = {.op = RCL_OP_SUM, .dt = RCL_F32, .opts = RCL_REDUCE_OPTIONS_INIT, .seed = 1};
  MPI_Comm_rank(MPI_COMM_WORLD, &j.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &j.size);
  int rc = parse(&j, argc, argv); /* the same arguments on every rank: the same outcome */
  if (rc) return rc == CLI_OPT_HELP ? 0 : rc;
  mpi_cli_slice(&j.first, &j.count, j.n, j.rank, j.size);
  rank_row *rows = NULL;
  if (!(rc = mpi_cli_open(&j.ctx, j.device, j.map))) {
    mpi_cli_test_die(j.rank);
    if (!(rc = reference(&j)) && !(rc = run(&j)) && !(rc = mpi_cli_gather_ranks(&rows, j.ctx, j.first, j.count)) &&
        !(rc = mpi_cli_write_out(j.out, j.val, rcl_dtype_size(j.dt)))) {
      if (j.rank == 0 && j.json)
        print_json(&j, rows);
      else if (j.rank == 0)
        print_text(&j, rows);
      rc = j.same && !memcmp(j.val, j.ref, rcl_dtype_size(j.dt)) ? CLI_EXIT_OK : CLI_EXIT_FINDING;
    }
  }
  free(rows);
  free(j.x);
  free(j.y);
  rcl_context_free(j.ctx);
  return rc;
}

static const cli_command run_kernels[] = {{"reduce", cmd_run_reduce, NULL}, {NULL, NULL, NULL}};

int mpi_cmd_run(int argc, char **argv) {
  if (argc >= 2)
    for (const cli_command *k = run_kernels; k->name; k++)
      if (!strcmp(k->name, argv[1])) return k->fn(argc - 1, argv + 1);
  return cli_error("give a kernel: reprocl-mpi run reduce [options] (`reprocl-mpi run reduce --help`)");
}
