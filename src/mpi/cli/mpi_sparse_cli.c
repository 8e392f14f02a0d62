/* reprocl-mpi spmv and cg: reprocl's spmv and cg over the ranks of MPI_COMM_WORLD. Rank 0 reads the matrix
 * file once (or generates the matrix) with the inputs and computes the host reference; the matrix is
 * scattered by rows cut by non-zeros (rcl_mpi_matrix_scatter), the vectors by the same cut; every rank runs
 * its rows on its own device (rcl_mpi_spmv, rcl_mpi_cg); rank 0 gathers the result and prints the digests
 * `reprocl spmv` / `reprocl cg` print on one device, which they equal for any number of ranks and devices.
 * --out is written once, by rank 0, whole or not at all. */
#include <stdlib.h>
#include <string.h>

#include "mpi_cli.h"
#include "sparse_cli.h"

/* What both commands share: the options, the matrix on rank 0, its rows here. */
typedef struct {
  const char *matrix, *gen, *device, *map, *out, *vspec, *vspec2;
  rcl_dtype dt;
  int json, rank, size;
  rcl_csr *A; /* rank 0 */
  char label[256];
  rcl_context *ctx;
  rcl_mpi_matrix *M;
  size_t r0, nr, c0, nc, nrows, ncols, es;
  rank_row *rows;
  double secs;
  int phases;        /* --phases */
  int noref;         /* --no-reference */
  rcl_mpi_phases ph; /* this rank's, of the timed call */
  json_t *phj;       /* rank 0: every rank's (mpi_cli_phases_json) */
} mpi_sparse;

#define MPI_SPARSE_OPTS(s)                                                                                             \
  CLI_STR("matrix", &(s)->matrix, "FILE", "Matrix Market (.mtx) or Harwell-Boeing file, read once by rank 0"),         \
      CLI_STR("gen", &(s)->gen, "SPEC", "a generated matrix (as for reprocl spmv: poisson2d:N, ...)"),                 \
      CLI_OPT_DTYPE(&(s)->dt),                                                                                         \
      CLI_STR("device", &(s)->device, "D",                                                                             \
              "every rank's device without --device-map (default: " CLI_DEFAULT_DEVICE ")"),                           \
      CLI_STR("device-map", &(s)->map, "MAP",                                                                          \
              "local:SPEC,SPEC,... (local rank r of a node takes the (r mod count)-th) or\n"                           \
              "rank:SPEC,SPEC,... (rank r takes the (r mod count)-th); specs as for --device"),                        \
      CLI_NOT_HERE("native", "reprocl-mpi runs the reproducible build only"), CLI_OPT_JSON(&(s)->json),                \
      MPI_CLI_OPT_PHASES(&(s)->phases), MPI_CLI_OPT_NO_REFERENCE(&(s)->noref)

static void sparse_free(mpi_sparse *s) {
  json_decref(s->phj);
  rcl_mpi_matrix_free(s->M);
  rcl_context_free(s->ctx);
  rcl_csr_free(s->A);
  free(s->rows);
}

/* Rank 0's inputs (prep: the command's, after the matrix), shared status; the ranks' devices; the matrix
 * scattered; this rank's rows and columns. Returns 0 or the exit status (the same on every rank). */
static int sparse_open(mpi_sparse *s, int (*prep)(void *job), void *job) {
  MPI_Comm_rank(MPI_COMM_WORLD, &s->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s->size);
  s->es = rcl_dtype_size(s->dt);
  int rc = 0;
  if (s->rank == 0) {
    rc = cli_sparse_load(&s->A, s->label, sizeof s->label, s->matrix, s->gen, s->dt);
    if (!rc) rc = prep(job);
  }
  if ((rc = mpi_cli_share_status(rc)) != 0) return rc;
  if ((rc = mpi_cli_open(&s->ctx, s->device, s->map)) != 0) return rc;
  if (rcl_mpi_matrix_scatter(&s->M, MPI_COMM_WORLD, 0, s->A, 1.0, s->ctx)) return cli_fail("distributing the matrix");
  rcl_mpi_matrix_rows(s->M, &s->r0, &s->nr, &s->nrows);
  rcl_mpi_matrix_cols(s->M, &s->c0, &s->nc, &s->ncols);
  return mpi_cli_gather_ranks(&s->rows, s->ctx, s->r0, s->nr);
}

static void *zalloc(size_t n, size_t es) { return calloc(n ? n : 1, es); }

/* ---- spmv ------------------------------------------------------------------------------------------------ */

typedef struct {
  mpi_sparse s;
  rcl_spmv_options so;
  const char *alpha_s, *beta_s;
  unsigned char alpha[8], beta[8];
  void *x, *y0;                 /* rank 0: the whole vectors */
  unsigned char *ref, *y;       /* rank 0: the reference's y and the gathered y */
  unsigned char *mx, *my0, *my; /* this rank's pieces */
  char refhex[RCL_SHA256_HEX_SIZE], hex[RCL_SHA256_HEX_SIZE];
  int ok; /* rank 0: y equals the reference's */
} spmv_job;

static int spmv_parse(spmv_job *j, int argc, char **argv) {
  const cli_opt opts[] = {
      MPI_SPARSE_OPTS(&j->s),
      CLI_STR("x", &j->s.vspec, "ones|random:SEED|FILE", "x (default: ones)"),
      CLI_STR("y0", &j->s.vspec2, "zeros|ones|random:SEED|FILE", "y before the product (default: zeros)"),
      CLI_STR("alpha", &j->alpha_s, "A", "alpha (default: 1)"),
      CLI_STR("beta", &j->beta_s, "B", "beta (default: 0)"),
      CLI_VAL("contract", &j->so.contract, cli_opt_spmv_contract, "ordered|exact",
              "the row sums' contract (default: ordered)"),
      CLI_OPT_OUT(&j->s.out, "rank 0 writes y (raw little-endian values) to FILE, whole or not at all"),
      CLI_SPARSE_TUNABLES("tunables", &j->so),
      CLI_END};
  const cli_cmd_spec spec = {
      "spmv",
      "--matrix FILE | --gen SPEC [--x ones|random:SEED|FILE] [--y0 zeros|ones|random:SEED|FILE]\n"
      "                    [--alpha A] [--beta B] [--contract ordered|exact] [--dtype f32|f64] [--device D]\n"
      "                    [--device-map MAP] [--out y.bin] [--no-reference] [--json] [tunables]",
      "Under mpirun: y = alpha*A*x + beta*y0 with A's rows cut by non-zeros over the ranks, each rank on its own\n"
      "device, x's entries exchanged between the ranks that need them. Rank 0 reads the matrix once, prints\n"
      "each rank's rows and device and the SHA-256 of y: the digest `reprocl spmv` prints on one device.",
      opts,
      "y differs from the host reference",
      0,
      0};
  int rc = cli_opt_parse(&spec, argc, argv, NULL, NULL);
  if (!rc && !(rc = cli_sparse_scalar(j->alpha, "--alpha", j->alpha_s, j->s.dt)))
    rc = cli_sparse_scalar(j->beta, "--beta", j->beta_s, j->s.dt);
  return rc;
}

/* Rank 0: x, y0 and the reference's y. */
static int spmv_prep(void *job) {
  spmv_job *j = job;
  const rcl_csr *A = j->s.A;
  size_t es = rcl_dtype_size(j->s.dt);
  int rc = cli_sparse_vector(&j->x, j->s.vspec, A->ncols, j->s.dt, "--x");
  if (!rc) rc = cli_sparse_vector(&j->y0, j->s.vspec2, A->nrows, j->s.dt, "--y0");
  if (rc) return rc;
  if (!(j->ref = zalloc(A->nrows, es)) || !(j->y = zalloc(A->nrows, es))) return cli_error("out of host memory");
  if (j->s.noref) return 0;
  memcpy(j->ref, j->y0, A->nrows * es);
  if (rcl_ref_spmv(j->ref, A, j->so.contract, j->alpha, j->x, j->beta)) return cli_fail("host reference");
  cli_digest(j->refhex, j->ref, A->nrows * es);
  return 0;
}

static int spmv_once(void *p) {
  spmv_job *j = p;
  return rcl_mpi_spmv(j->my, j->s.M, j->alpha, j->mx, j->beta, &j->so);
}

/* The pieces scattered, timed runs on a scratch y, then y from y0 once, gathered on rank 0. */
static int spmv_run(spmv_job *j) {
  mpi_sparse *s = &j->s;
  j->mx = zalloc(s->nc, s->es);
  j->my0 = zalloc(s->nr, s->es);
  j->my = zalloc(s->nr, s->es);
  int rc = rcl_mpi_agree(MPI_COMM_WORLD, j->mx && j->my0 && j->my ? 0 : RCL_ERR_OUT_OF_MEMORY, "out of memory");
  if (rc) return cli_fail("vectors");
  if ((rc = mpi_cli_scatter(j->mx, j->x, s->c0, s->nc, s->es)) ||
      (rc = mpi_cli_scatter(j->my0, j->y0, s->r0, s->nr, s->es)))
    return rc;
  double mn, mx;
  memcpy(j->my, j->my0, s->nr * s->es);
  if (cli_bench_time(&s->secs, &mn, &mx, 3, spmv_once, j)) return cli_fail("spmv over %d ranks", s->size);
  memcpy(j->my, j->my0, s->nr * s->es);
  mpi_cli_phases_on(s->phases, &s->ph);
  rc = spmv_once(j);
  s->phj = mpi_cli_phases_off(s->phases, &s->ph);
  if (rc) return cli_fail("spmv over %d ranks", s->size);
  if ((rc = mpi_cli_gather(j->y, j->my, s->r0, s->nr, s->es)) != 0) return rc;
  if (s->rank == 0) cli_digest(j->hex, j->y, s->nrows * s->es);
  j->ok = mpi_cli_share_status(s->rank == 0 && (s->noref || !memcmp(j->y, j->ref, s->nrows * s->es)));
  return 0;
}

static void spmv_print(const spmv_job *j) {
  const mpi_sparse *s = &j->s;
  size_t bytes = s->nrows * s->es;
  int ok = j->ok;
  if (s->json) {
    json_t *top =
        json_pack("{s:s,s:o,s:s,s:s,s:{s:s},s:o,s:s,s:f,s:b}", "command", "spmv", "matrix",
                  cli_sparse_matrix_json(s->A, s->label), "dtype", rcl_dtype_name(s->dt), "contract",
                  rcl_spmv_contract_name(j->so.contract), "reference", "sha256", j->refhex, "ranks",
                  mpi_cli_ranks_json(s->rows, s->size), "sha256", j->hex, "time_s", s->secs, "matches_reference", ok);
    mpi_cli_json_print(top, s->out, s->phj, s->noref);
    return;
  }
  printf("spmv %s (%zu x %zu, %zu nnz) %s %s alpha=%s beta=%s x=%s\n", s->label, s->nrows, s->ncols, s->A->nnz,
         rcl_dtype_name(s->dt), rcl_spmv_contract_name(j->so.contract), j->alpha_s, j->beta_s, s->vspec);
  printf("  %-44s %-16s %s\n", "device", "sha256(y)", "time");
  if (!s->noref) printf("  %-44s %-16.16s %s\n", "host reference (C, -ffp-contract=off)", j->refhex, "-");
  for (int r = 0; r < s->size; r++) mpi_cli_print_rank(&s->rows[r], r);
  char label[64];
  snprintf(label, sizeof label, "%d rank(s), rcl_mpi_spmv", s->size);
  printf("  %-44s %-16.16s %.3f ms %s\n", label, j->hex, s->secs * 1e3,
         s->noref ? "(no reference)"
         : ok     ? "= reference"
                  : "DIFFERS from the reference");
  mpi_cli_phases_print(s->phj);
  if (s->out) printf("wrote y (%zu bytes, sha256 %s) to %s\n", bytes, j->hex, s->out);
  mpi_cli_verdict(s->noref, s->size, ok, "");
}

int mpi_cmd_spmv(int argc, char **argv) {
  spmv_job j = {.s = {.vspec = "ones", .vspec2 = "zeros", .dt = RCL_F64},
                .alpha_s = "1",
                .beta_s = "0",
                .so = RCL_SPMV_OPTIONS_INIT};
  int rc = spmv_parse(&j, argc, argv);
  if (rc) return rc == CLI_OPT_HELP ? 0 : rc;
  if (!(rc = sparse_open(&j.s, spmv_prep, &j)) && !(rc = spmv_run(&j)) &&
      !(rc = mpi_cli_write_out(j.s.out, j.y, j.s.nrows * j.s.es))) {
    if (j.s.rank == 0) spmv_print(&j);
    rc = j.ok ? CLI_EXIT_OK : CLI_EXIT_FINDING;
  }
  sparse_free(&j.s);
  free(j.x), free(j.y0), free(j.ref), free(j.y), free(j.mx), free(j.my0), free(j.my);
  return rc;
}

/* ---- cg -------------------------------------------------------------------------------------------------- */

typedef struct {
  mpi_sparse s;
  rcl_cg_options co;
  void *b;                /* rank 0: the whole b */
  unsigned char *xr, *x;  /* rank 0: the reference's solution and the gathered one */
  unsigned char *mb, *mx; /* this rank's pieces */
  rcl_cg_result rr, res;  /* the reference's (rank 0) and the ranks' */
  int rrc, st, ok;
  char rxhex[RCL_SHA256_HEX_SIZE], xhex[RCL_SHA256_HEX_SIZE];
} cg_job;

static int cg_parse(cg_job *j, int argc, char **argv) {
  const cli_opt opts[] = {MPI_SPARSE_OPTS(&j->s),
                          CLI_STR("rhs", &j->s.vspec, "ones|random:SEED|FILE", "b (default: ones)"),
                          CLI_CG_SOLVER_OPTS(&j->co),
                          CLI_OPT_OUT(&j->s.out, "rank 0 writes the solution x (raw little-endian values) to FILE"),
                          CLI_SPARSE_TUNABLES("tunables (of the SpMVs)", &j->co.spmv),
                          CLI_END};
  const cli_cmd_spec spec = {
      "cg",
      "--matrix FILE | --gen SPEC [--rhs ones|random:SEED|FILE] [--tol T] [--maxit K] [--jacobi]\n"
      "                  [--dots ordered|exact] [--contract ordered|exact] [--dtype f32|f64] [--device D]\n"
      "                  [--device-map MAP] [--out x.bin] [--no-reference] [--json] [tunables]",
      "Under mpirun: CG from x0 = 0 with A's rows cut by non-zeros over the ranks, each rank on its own device;\n"
      "the dots and norms are joined over the ranks reproducibly, so every rank takes the same steps. Rank 0\n"
      "reads the matrix once and prints the iterations, the SHA-256 of the residual history and of x: the\n"
      "digests `reprocl cg` prints on one device.",
      opts,
      "the history or the solution differs from the host reference",
      0,
      0};
  int rc = cli_opt_parse(&spec, argc, argv, NULL, NULL);
  if (!rc && !(j->co.tol >= 0)) rc = cli_error("--tol must be >= 0, got %g", j->co.tol);
  return rc;
}

/* Rank 0: a square matrix, b, the reference's solve. */
static int cg_prep(void *job) {
  cg_job *j = job;
  const rcl_csr *A = j->s.A;
  if (A->nrows != A->ncols)
    return cli_error("CG needs a square matrix; %s is %zu x %zu", j->s.label, A->nrows, A->ncols);
  int rc = cli_sparse_vector(&j->b, j->s.vspec, A->nrows, j->s.dt, "--rhs");
  if (rc) return rc;
  if (!(j->xr = zalloc(A->nrows, j->s.es)) || !(j->x = zalloc(A->nrows, j->s.es)))
    return cli_error("out of host memory");
  if (j->s.noref) return 0;
  j->rrc = rcl_ref_cg(j->xr, &j->rr, A, j->b, &j->co);
  if (!cli_cg_ended(j->rrc)) return cli_fail("host reference");
  cli_digest(j->rxhex, j->xr, A->nrows * j->s.es);
  return 0;
}

/* b scattered, the solve, x gathered; rank 0's verdict to every rank. */
static int cg_run(cg_job *j) {
  mpi_sparse *s = &j->s;
  j->mb = zalloc(s->nr, s->es);
  j->mx = zalloc(s->nr, s->es);
  int rc = rcl_mpi_agree(MPI_COMM_WORLD, j->mb && j->mx ? 0 : RCL_ERR_OUT_OF_MEMORY, "out of memory");
  if (rc) return cli_fail("vectors");
  if ((rc = mpi_cli_scatter(j->mb, j->b, s->r0, s->nr, s->es)) != 0) return rc;
  mpi_cli_test_die(s->rank);
  /* The untimed one-iteration warm-up (every rank: it is collective). */
  rcl_cg_options w = cli_cg_warm_options(&j->co);
  cli_cg_warm_done(rcl_mpi_cg(j->mx, &j->res, s->M, j->mb, &w), &j->res);
  memset(j->mx, 0, s->nr * s->es);
  mpi_cli_phases_on(s->phases, &s->ph);
  double t0 = cli_now();
  j->st = rcl_mpi_cg(j->mx, &j->res, s->M, j->mb, &j->co);
  s->secs = cli_now() - t0;
  s->phj = mpi_cli_phases_off(s->phases, &s->ph);
  if (!cli_cg_ended(j->st)) return cli_fail("cg over %d ranks", s->size);
  if ((rc = mpi_cli_gather(j->x, j->mx, s->r0, s->nr, s->es)) != 0) return rc;
  if (s->rank == 0) cli_digest(j->xhex, j->x, s->nrows * s->es);
  j->ok = mpi_cli_share_status(s->rank == 0 && (s->noref || (j->st == j->rrc && j->res.iterations == j->rr.iterations &&
                                                             !strcmp(j->res.history_sha256, j->rr.history_sha256) &&
                                                             !strcmp(j->xhex, j->rxhex))));
  return 0;
}

static void cg_print(const cg_job *j) {
  const mpi_sparse *s = &j->s;
  double per = s->secs / (double)(j->res.iterations ? j->res.iterations : 1);
  if (s->json) {
    json_t *top =
        json_pack("{s:s,s:o,s:s,s:b,s:s,s:s,s:{s:s,s:I,s:s,s:s},s:o,s:s,s:I,s:f,s:s,s:s,s:f,s:b}", "command", "cg",
                  "matrix", cli_sparse_matrix_json(s->A, s->label), "dtype", rcl_dtype_name(s->dt), "jacobi",
                  j->co.jacobi, "dots", rcl_reduce_mode_name(j->co.dot_mode), "spmv_contract",
                  rcl_spmv_contract_name(j->co.spmv.contract), "reference", "status", cli_cg_status_word(j->rrc),
                  "iterations", (json_int_t)j->rr.iterations, "history_sha256", j->rr.history_sha256, "solution_sha256",
                  j->rxhex, "ranks", mpi_cli_ranks_json(s->rows, s->size), "status", cli_cg_status_word(j->st),
                  "iterations", (json_int_t)j->res.iterations, "residual_norm", j->res.residual_norm, "history_sha256",
                  j->res.history_sha256, "solution_sha256", j->xhex, "time_s", s->secs, "matches_reference", j->ok);
    mpi_cli_json_print(top, s->out, s->phj, s->noref);
    return;
  }
  printf("cg %s (%zu x %zu, %zu nnz) %s jacobi=%s dots=%s spmv=%s tol=%g maxit=%zu rhs=%s\n", s->label, s->nrows,
         s->ncols, s->A->nnz, rcl_dtype_name(s->dt), j->co.jacobi ? "yes" : "no", rcl_reduce_mode_name(j->co.dot_mode),
         rcl_spmv_contract_name(j->co.spmv.contract), j->co.tol, j->co.max_iterations, s->vspec);
  printf("  %-40s %6s %-14s %-12s %-16s %-16s %s\n", "device", "iters", "status", "||r||", "sha256(history)",
         "sha256(x)", "time/iter");
  if (!s->noref)
    printf("  %-40s %6zu %-14s %-12.6g %-16.16s %-16.16s -\n", "host reference", j->rr.iterations,
           cli_cg_status_word(j->rrc), j->rr.residual_norm, j->rr.history_sha256, j->rxhex);
  for (int r = 0; r < s->size; r++) mpi_cli_print_rank(&s->rows[r], r);
  char label[64];
  snprintf(label, sizeof label, "%d rank(s), rcl_mpi_cg", s->size);
  printf("  %-40s %6zu %-14s %-12.6g %-16.16s %-16.16s %.3f ms %s\n", label, j->res.iterations,
         cli_cg_status_word(j->st), j->res.residual_norm, j->res.history_sha256, j->xhex, per * 1e3,
         s->noref ? "(no reference)"
         : j->ok  ? "= reference"
                  : "DIFFERS from the reference");
  mpi_cli_phases_print(s->phj);
  if (s->out) printf("wrote x (%zu bytes, sha256 %s) to %s\n", s->nrows * s->es, j->xhex, s->out);
  mpi_cli_verdict(s->noref, s->size, j->ok, j->res.message);
}

int mpi_cmd_cg(int argc, char **argv) {
  cg_job j = {.s = {.vspec = "ones", .dt = RCL_F64}, .co = RCL_CG_OPTIONS_INIT, .st = -1};
  int rc = cg_parse(&j, argc, argv);
  if (rc) return rc == CLI_OPT_HELP ? 0 : rc;
  if (!(rc = sparse_open(&j.s, cg_prep, &j)) && !(rc = cg_run(&j)) &&
      !(rc = mpi_cli_write_out(j.s.out, j.x, j.s.nrows * j.s.es))) {
    if (j.s.rank == 0) cg_print(&j);
    rc = j.ok ? CLI_EXIT_OK : CLI_EXIT_FINDING;
  }
  if (cli_cg_ended(j.st)) rcl_cg_result_free(&j.res);
  rcl_cg_result_free(&j.rr);
  sparse_free(&j.s);
  free(j.b), free(j.xr), free(j.x), free(j.mb), free(j.mx);
  return rc;
}
