/* reprocl-mpi stencil: reprocl's stencil (and SOR, --kind sor) over the ranks of MPI_COMM_WORLD. Rank 0 makes
 * or reads the grid (and SOR's b) once and computes the host reference; rank r gets its block of rows
 * (rcl_mpi_grid_rows), steps it on its own device with the halo rows exchanged between the ranks
 * (rcl_mpi_stencil, rcl_mpi_sor); rank 0 gathers the grid and prints the SHA-256 `reprocl stencil` prints on
 * one device (and SOR's residual norm), which it equals for any number of ranks and devices. --out is
 * written once, by rank 0, whole or not at all. */
#include <stdlib.h>
#include <string.h>

#include "mpi_cli.h"

typedef struct {
  const char *kind, *weights_s, *iters_s, *omega_s, *rhs_spec, *grid_s, *init, *input, *device, *map, *out;
  rcl_boundary bc;
  double bval;
  uint64_t seed;
  rcl_dtype dt;
  int json, sor, has_rhs, rank, size;
  rcl_stencil_desc st;
  rcl_sor_desc sd;
  size_t w, h, iters, es, first, count;
  rcl_grid in, rhs;              /* rank 0: the whole inputs */
  unsigned char *ref, *all;      /* rank 0: the reference's grid and the gathered one */
  unsigned char *mine, *mrhs;    /* this rank's rows */
  unsigned char rres[8], res[8]; /* SOR residual norms: the reference's and the ranks' */
  rcl_context *ctx;
  rank_row *rows;
  double secs;
  int ok, phases;    /* phases: --phases */
  int noref;         /* --no-reference */
  rcl_mpi_phases ph; /* this rank's, of the run */
  json_t *phj;       /* rank 0: every rank's */
  char refhex[RCL_SHA256_HEX_SIZE], hex[RCL_SHA256_HEX_SIZE];
} mpi_stencil_job;

static int parse(mpi_stencil_job *j, int argc, char **argv) {
  const cli_opt opts[] = {
      CLI_SECTION("what to compute (as for reprocl stencil)"),
      CLI_STR("kind", &j->kind, "nine|laplace5|general|sor", "the stencil, or red-black SOR (default: nine)"),
      CLI_STR("iters", &j->iters_s, "N", "iterations, or SOR sweeps (required)"),
      CLI_STR("weights", &j->weights_s, "W,W,...", "nine: wc,wa,wd; general: 9 (3x3) or 25 (5x5) values"),
      CLI_STR("omega", &j->omega_s, "W", "SOR's relaxation factor, in (0, 2) (default: 1.25)"),
      CLI_STR("rhs", &j->rhs_spec, "FILE|INIT", "SOR's b: a file or a generator as for --init"),
      CLI_VAL("boundary", &j->bc, cli_opt_boundary, "fixed|periodic|edge", "the boundary (default: fixed)"),
      CLI_VAL("boundary-value", &j->bval, cli_opt_double, "V", "the value outside a fixed boundary (default: 0)"),
      CLI_OPT_DTYPE(&j->dt),
      CLI_SECTION("input (made or read once, by rank 0)"),
      CLI_STR("grid", &j->grid_s, "WxH", "grid size for a generator (--init), or of a raw --input file"),
      CLI_STR("init", &j->init, "shoc|random|point|zero", "the generator (default shoc; random uses --seed)"),
      CLI_VAL("seed", &j->seed, cli_opt_u64, "S", "seed of the random generator (default: 42)"),
      CLI_STR("input", &j->input, "FILE", "raw little-endian values (needs --grid), PGM or greyscale PNG"),
      CLI_SECTION("devices and output"),
      CLI_STR("device", &j->device, "D", "every rank's device without --device-map (default: " CLI_DEFAULT_DEVICE ")"),
      CLI_STR("device-map", &j->map, "MAP", "local:SPEC,... or rank:SPEC,... (as for reprocl-mpi run reduce)"),
      CLI_NOT_HERE("native", "reprocl-mpi runs the reproducible build only"),
      CLI_OPT_OUT(&j->out, "rank 0 writes the final grid (raw little-endian) to FILE, whole or not at all"),
      CLI_OPT_JSON(&j->json),
      MPI_CLI_OPT_PHASES(&j->phases),
      MPI_CLI_OPT_NO_REFERENCE(&j->noref),
      CLI_END};
  const cli_cmd_spec spec = {
      "stencil",
      "--kind nine|laplace5|general|sor (--grid WxH [--init I] [--seed S] | --input FILE) --iters N\n"
      "                       [--weights W,...] [--omega W] [--rhs FILE|INIT] [--boundary B] [--boundary-value V]\n"
      "                       [--dtype f32|f64] [--device D] [--device-map MAP] [--out FILE] [--no-reference] [--json]",
      "Under mpirun: N iterations of a 2D stencil (or N red-black SOR sweeps) with the grid's rows cut into\n"
      "blocks over the ranks, each on its own device, halo rows exchanged between them. Rank 0 prints each\n"
      "rank's rows and device and the SHA-256 of the final grid: the digest `reprocl stencil` prints.",
      opts,
      "the final grid (or residual) differs from the host reference",
      0,
      0};
  int rc = cli_opt_parse(&spec, argc, argv, NULL, NULL);
  if (!rc && j->grid_s) rc = cli_parse_dims(&j->w, &j->h, "--grid", j->grid_s);
  if (!rc && !j->iters_s) rc = cli_error("--iters is required (iterations, or SOR sweeps)");
  if (!rc) rc = cli_parse_size(&j->iters, "--iters", j->iters_s);
  if (!rc && j->omega_s) rc = cli_parse_double(&j->sd.omega, "--omega", j->omega_s);
  return rc;
}

/* --weights into w (at most 25 values); *n their count. */
static int read_weights(double *w, size_t *n, const char *s) {
  *n = 0;
  for (const char *p = s; p && *p;) {
    char tok[64];
    size_t len = strcspn(p, ",");
    if (*n == 25 || len == 0 || len >= sizeof tok) return cli_error("--weights: up to 25 comma-separated numbers");
    memcpy(tok, p, len);
    tok[len] = '\0';
    int rc = cli_parse_double(&w[(*n)++], "--weights", tok);
    if (rc) return rc;
    p = p[len] ? p + len + 1 : NULL;
  }
  return 0;
}

/* The stencil or SOR of --kind and --weights (reprocl stencil's rules). */
static int set_kind(mpi_stencil_job *j) {
  double w[25];
  size_t n = 0;
  int rc = j->weights_s ? read_weights(w, &n, j->weights_s) : 0;
  if (rc) return rc;
  if (!j->kind) j->kind = n == 9 || n == 25 ? "general" : "nine";
  j->sor = !strcmp(j->kind, "sor");
  int nine = !strcmp(j->kind, "nine"), lap = !strcmp(j->kind, "laplace5"), gen = !strcmp(j->kind, "general");
  if (!j->sor && !nine && !lap && !gen)
    return cli_error("unknown --kind \"%s\" (expected nine, laplace5, general or sor)", j->kind);
  if ((j->sor || lap) && n) return cli_error("--weights does not apply to --kind %s", j->kind);
  if ((nine && n && n != 3) || (gen && n != 9 && n != 25))
    return cli_error("--kind %s takes %s weights, got %zu", j->kind, nine ? "3" : "9 or 25", n);
  if (!nine && !j->sor) {
    j->st.kind = RCL_STENCIL_GENERAL;
    j->st.radius = n == 25 ? 2 : 1;
    memset(j->st.weights, 0, sizeof j->st.weights);
    j->st.weights[1] = j->st.weights[3] = j->st.weights[5] = j->st.weights[7] = 0.25; /* laplace5 */
  }
  if (n) memcpy(j->st.weights, w, n * sizeof *w);
  if (j->omega_s && !j->sor) return cli_error("--omega applies to --kind sor only");
  if (j->rhs_spec && !j->sor) return cli_error("--rhs applies to --kind sor only");
  j->st.boundary = j->sd.boundary = j->bc;
  j->st.boundary_value = j->sd.boundary_value = j->bval;
  return 0;
}

/* A grid from a generator name or a file (rank 0). */
static int load_grid(rcl_grid *g, const char *spec, int have_dims, size_t w, size_t h, rcl_dtype dt, uint64_t seed,
                     const char *opt) {
  rcl_grid_init init;
  int generated = !rcl_grid_init_parse(&init, spec);
  if (generated && !have_dims) return cli_error("%s %s needs --grid WxH", opt, spec);
  int rc = generated ? rcl_grid_alloc(g, dt, w, h) : 0;
  if (!rc)
    rc = generated ? rcl_grid_generate(g, init, seed)
                   : rcl_grid_read(g, spec, RCL_GRID_FORMAT_AUTO, dt, have_dims ? w : 0, have_dims ? h : 0);
  return rc ? cli_error("%s: %s", opt, rcl_error_last()) : 0;
}

/* Rank 0: the kind, the inputs, the reference. */
static int prepare(mpi_stencil_job *j) {
  int rc = set_kind(j);
  if (!rc && !j->input && !j->grid_s) rc = cli_error("give --grid WxH (with --init) or --input FILE");
  if (!rc)
    rc = load_grid(&j->in, j->input ? j->input : j->init, !!j->grid_s, j->w, j->h, j->dt, j->seed,
                   j->input ? "--input" : "--init");
  if (rc) return rc;
  j->w = j->in.width, j->h = j->in.height;
  if (j->rhs_spec && (rc = load_grid(&j->rhs, j->rhs_spec, 1, j->w, j->h, j->dt, j->seed + 1, "--rhs"))) return rc;
  size_t bytes = j->w * j->h * j->es;
  if (!(j->ref = malloc(bytes)) || !(j->all = malloc(bytes))) return cli_error("out of host memory for the grids");
  if (j->noref) return 0;
  memcpy(j->ref, j->in.data, bytes);
  rc = j->sor ? rcl_ref_sor(j->ref, j->rres, &j->sd, j->dt, j->w, j->h, j->iters, j->rhs.data)
              : rcl_ref_stencil(j->ref, &j->st, j->dt, j->w, j->h, j->iters, j->in.data);
  if (rc) return cli_error("%s", rcl_error_last());
  cli_digest(j->refhex, j->ref, bytes);
  return 0;
}

/* Every rank: the description, the size and whether there is a b, as rank 0 settled them. */
static void share_problem(mpi_stencil_job *j) {
  uint64_t v[4] = {j->w, j->h, (uint64_t)j->sor, j->rhs.data != NULL};
  MPI_Bcast(v, 4, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  MPI_Bcast(&j->st, (int)sizeof j->st, MPI_BYTE, 0, MPI_COMM_WORLD);
  MPI_Bcast(&j->sd, (int)sizeof j->sd, MPI_BYTE, 0, MPI_COMM_WORLD);
  j->w = (size_t)v[0], j->h = (size_t)v[1], j->sor = (int)v[2], j->has_rhs = (int)v[3];
}

/* An untimed one-iteration run (every rank: it is collective) on a copy of this rank's rows: the kernels are
 * built (on NVIDIA's driver also JIT-compiled) before the clock starts. Its result is dropped; an error it meets
 * (or no memory for the copy: then no warm-up) is the timed run's to report. */
static void warm_up(mpi_stencil_job *j, size_t row) {
  unsigned char *copy = malloc(j->count * row + 1), res[8];
  int have = rcl_mpi_agree(MPI_COMM_WORLD, copy ? 0 : RCL_ERR_OUT_OF_MEMORY, "out of memory") == 0;
  if (have) {
    memcpy(copy, j->mine, j->count * row);
    if (j->sor)
      rcl_mpi_sor(copy, res, MPI_COMM_WORLD, j->ctx, &j->sd, j->dt, j->w, j->h, 1, j->mrhs);
    else
      rcl_mpi_stencil(copy, MPI_COMM_WORLD, j->ctx, &j->st, j->dt, j->w, j->h, 1, j->mine);
  }
  rcl_error_clear();
  free(copy);
}

/* The cut, this rank's rows scattered, the run, the grid gathered; rank 0's verdict to every rank. */
static int run(mpi_stencil_job *j) {
  share_problem(j);
  int has_rhs = j->has_rhs, rc;
  if (rcl_mpi_grid_rows(&j->first, &j->count, MPI_COMM_WORLD, j->h, j->sor ? 2 : 1)) return cli_fail("the row cut");
  size_t row = j->w * j->es;
  j->mine = malloc(j->count * row + 1);
  j->mrhs = has_rhs ? malloc(j->count * row + 1) : NULL;
  if (rcl_mpi_agree(MPI_COMM_WORLD, j->mine && (j->mrhs || !has_rhs) ? 0 : RCL_ERR_OUT_OF_MEMORY, "out of memory"))
    return cli_fail("grids");
  if ((rc = mpi_cli_scatter(j->mine, j->in.data, j->first, j->count, row)) != 0) return rc;
  if (has_rhs && (rc = mpi_cli_scatter(j->mrhs, j->rhs.data, j->first, j->count, row)) != 0) return rc;
  mpi_cli_test_die(j->rank);
  warm_up(j, row);
  mpi_cli_phases_on(j->phases, &j->ph);
  double t0 = cli_now();
  rc = j->sor ? rcl_mpi_sor(j->mine, j->res, MPI_COMM_WORLD, j->ctx, &j->sd, j->dt, j->w, j->h, j->iters, j->mrhs)
              : rcl_mpi_stencil(j->mine, MPI_COMM_WORLD, j->ctx, &j->st, j->dt, j->w, j->h, j->iters, j->mine);
  j->secs = cli_now() - t0;
  j->phj = mpi_cli_phases_off(j->phases && !rc, &j->ph);
  rcl_mpi_phases_collect(NULL);
  if (rc) return cli_fail("%s over %d ranks", j->sor ? "SOR" : "stencil", j->size);
  if ((rc = mpi_cli_gather(j->all, j->mine, j->first, j->count, row)) != 0) return rc;
  if (j->rank == 0) cli_digest(j->hex, j->all, j->w * j->h * j->es);
  j->ok = mpi_cli_share_status(j->rank == 0 && (j->noref || (!memcmp(j->all, j->ref, j->w * j->h * j->es) &&
                                                             (!j->sor || !memcmp(j->res, j->rres, j->es)))));
  return mpi_cli_gather_ranks(&j->rows, j->ctx, j->first, j->count);
}

static void print(const mpi_stencil_job *j) {
  char rbuf[64] = "", buf[64] = "", label[64];
  if (j->sor) cli_format_value(rbuf, sizeof rbuf, j->rres, j->dt), cli_format_value(buf, sizeof buf, j->res, j->dt);
  if (j->json) {
    json_t *top =
        json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:s,s:{s:s,s:s},s:o,s:s,s:s,s:f,s:b}", "command", "stencil", "kind",
                  j->sor ? "sor" : j->kind, "dtype", rcl_dtype_name(j->dt), "width", (json_int_t)j->w, "height",
                  (json_int_t)j->h, "iterations", (json_int_t)j->iters, "boundary", rcl_boundary_name(j->bc),
                  "reference", "sha256", j->refhex, "residual", rbuf, "ranks", mpi_cli_ranks_json(j->rows, j->size),
                  "sha256", j->hex, "residual", buf, "time_s", j->secs, "matches_reference", j->ok);
    mpi_cli_json_print(top, j->out, j->phj, j->noref);
    return;
  }
  printf("stencil %s %s %zux%zu, %zu %s%s, boundary %s", j->sor ? "sor" : j->kind, rcl_dtype_name(j->dt), j->w, j->h,
         j->iters, j->sor ? "sweep" : "iteration", j->iters == 1 ? "" : "s", rcl_boundary_name(j->bc));
  if (j->sor) printf(", omega %g%s", j->sd.omega, j->has_rhs ? ", with b" : "");
  printf(", input %s\n", j->input ? j->input : j->init);
  printf("  %-44s %-16s %-11s %s\n", "device", "sha256", "time", j->sor ? "residual" : "");
  if (!j->noref) printf("  %-44s %-16.16s %-11s %s\n", "host reference (C, -ffp-contract=off)", j->refhex, "-", rbuf);
  for (int r = 0; r < j->size; r++) mpi_cli_print_rank(&j->rows[r], r);
  snprintf(label, sizeof label, "%d rank(s), rcl_mpi_%s", j->size, j->sor ? "sor" : "stencil");
  printf("  %-44s %-16.16s %8.3f ms %s%s%s\n", label, j->hex, j->secs * 1e3, buf, j->sor ? " " : "",
         j->noref ? "(no reference)"
         : j->ok  ? "= reference"
                  : "DIFFERS from the reference");
  mpi_cli_phases_print(j->phj);
  if (j->out) printf("wrote the grid (%zu bytes, sha256 %s) to %s\n", j->w * j->h * j->es, j->hex, j->out);
  mpi_cli_verdict(j->noref, j->size, j->ok, "");
}

int mpi_cmd_stencil(int argc, char **argv) {
  mpi_stencil_job j = {.init = "shoc", .seed = 42, .dt = RCL_F32, .st = RCL_STENCIL_DESC_INIT, .sd = RCL_SOR_DESC_INIT};
  MPI_Comm_rank(MPI_COMM_WORLD, &j.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &j.size);
  int rc = parse(&j, argc, argv);
  if (rc) return rc == CLI_OPT_HELP ? 0 : rc;
  j.es = rcl_dtype_size(j.dt);
  rc = mpi_cli_share_status(j.rank == 0 ? prepare(&j) : 0);
  if (!rc && !(rc = mpi_cli_open(&j.ctx, j.device, j.map)) && !(rc = run(&j)) &&
      !(rc = mpi_cli_write_out(j.out, j.all, j.w * j.h * j.es))) {
    if (j.rank == 0) print(&j);
    rc = j.ok ? CLI_EXIT_OK : CLI_EXIT_FINDING;
  }
  rcl_grid_free(&j.in);
  rcl_grid_free(&j.rhs);
  free(j.ref), free(j.all), free(j.mine), free(j.mrhs), free(j.rows);
  json_decref(j.phj);
  rcl_context_free(j.ctx);
  return rc;
}
