/* reprocl cg: Conjugate Gradient (optionally Jacobi-preconditioned) on one or every device; per device
 * the iteration count, final residual, residual-history digest and solution digest, compared with each
 * other and with the host reference; --native adds the vendor-default build beside it. */
#include <stdlib.h>
#include <string.h>

#include "sparse_cli.h"

/* What cg was asked for, and the inputs and the host reference's solve. */
typedef struct {
  const char *matrix, *gen, *bspec, *device, *out;
  rcl_cg_options co;
  rcl_dtype dt;
  int native, json;
  rcl_csr *A;
  char label[256];
  size_t n, es;
  void *b;
  unsigned char *xr, *x, *first; /* the solution of the reference, of a device, of the first device */
  rcl_cg_result rr;              /* the reference's result */
  int rrc;                       /* and its status */
  char rxhex[RCL_SHA256_HEX_SIZE];
  cli_split_opts split;
  cli_split_run sr;
} cg_job;

/* One solve after the warm-up; x receives the solution, *st the CG status (0, NO_CONVERGENCE, BREAKDOWN).
 * Returns 0, or the exit status after printing another error. */
static int solve_on(int *st, void *x, rcl_cg_result *res, double *secs, rcl_spmv_matrix *M, const cg_job *j) {
  rcl_cg_options w = cli_cg_warm_options(&j->co);
  rcl_cg_result wr;
  memset(x, 0, j->n * j->es);
  cli_cg_warm_done(rcl_cg(x, &wr, M, j->b, &w), &wr);
  memset(x, 0, j->n * j->es);
  double t0 = cli_now();
  *st = rcl_cg(x, res, M, j->b, &j->co);
  *secs = cli_now() - t0;
  if (!cli_cg_ended(*st)) return cli_fail("cg on %s", rcl_context_profile(rcl_spmv_matrix_context(M))->device_name);
  return 0;
}

/* Parses the options into j. Returns 0, CLI_OPT_HELP or an exit status. */
static int cg_parse(cg_job *j, int argc, char **argv) {
  const cli_opt opts[] = {
      CLI_STR("matrix", &j->matrix, "FILE", "Matrix Market (.mtx) or Harwell-Boeing (.rua/.rsa) file"),
      CLI_STR("gen", &j->gen, "SPEC", "a generated matrix (as for reprocl spmv: poisson2d:N, ...)"),
      CLI_STR("rhs", &j->bspec, "ones|random:SEED|FILE", "b (default: ones)"),
      CLI_CG_SOLVER_OPTS(&j->co),
      CLI_OPT_DTYPE(&j->dt),
      CLI_OPT_DEVICE(&j->device, CLI_DEFAULT_DEVICE),
      CLI_OPT_NATIVE(&j->native),
      CLI_OPT_OUT(&j->out, "write the first device's solution x (raw little-endian values) to FILE"),
      CLI_OPT_JSON(&j->json),
      CLI_OPT_SPLIT(&j->split),
      CLI_SPARSE_TUNABLES("tunables (of the SpMVs)", &j->co.spmv),
      CLI_END};
  const cli_cmd_spec spec = {
      "cg",
      "--matrix FILE | --gen SPEC [--rhs ones|random:SEED|FILE] [--tol T] [--maxit K] [--jacobi]\n"
      "                  [--dots ordered|exact] [--contract ordered|exact] [--dtype f32|f64] [--device D|all]\n"
      "                  [--native] [--out x.bin] [--json] [--split DEVICES [--split-weights W1:W2:...]]\n"
      "                  [tunables]",
      "Solves A x = b from x0 = 0 with CG (default tol 1e-8, maxit 1000, rhs ones) and prints per device the\n"
      "iteration count, the final residual norm, the SHA-256 of the residual history (the norms, raw values\n"
      "of the dtype) and of the solution (the bytes --out writes), the time per iteration, and whether all\n"
      "devices and the host reference agree. --dots picks the dot/norm contract, --contract the SpMV one.\n"
      "A run that stops at --maxit or breaks down (the matrix is not SPD) is reported as such, not as a\n"
      "failure. --split adds a row for the solve cut by rows over several devices (rcl_split_cg) with each\n"
      "device's share of the rows.",
      opts,
      CLI_RUN_FINDING,
      0,
      0};
  return cli_opt_parse(&spec, argc, argv, NULL, NULL);
}

/* The square matrix, b, the solution buffers and the host reference's solve. */
static int cg_prepare(cg_job *j) {
  int rc = cli_sparse_load(&j->A, j->label, sizeof j->label, j->matrix, j->gen, j->dt);
  if (rc) return rc;
  if (j->A->nrows != j->A->ncols)
    return cli_error("CG needs a square matrix; %s is %zu x %zu", j->label, j->A->nrows, j->A->ncols);
  j->n = j->A->nrows;
  j->es = rcl_dtype_size(j->dt);
  if ((rc = cli_sparse_vector(&j->b, j->bspec, j->n, j->dt, "--rhs")) != 0) return rc;
  j->xr = calloc(j->n ? j->n : 1, j->es);
  j->x = calloc(j->n ? j->n : 1, j->es);
  j->first = calloc(j->n ? j->n : 1, j->es);
  if (!j->xr || !j->x || !j->first) return cli_error("cannot allocate host memory for x");
  j->rrc = rcl_ref_cg(j->xr, &j->rr, j->A, j->b, &j->co);
  if (!cli_cg_ended(j->rrc)) return cli_fail("host reference");
  cli_digest(j->rxhex, j->xr, j->n * j->es);
  return 0;
}

static void print_head(const cg_job *j) {
  printf("cg %s (%zu x %zu, %zu nnz) %s jacobi=%s dots=%s spmv=%s/%s tol=%g maxit=%zu rhs=%s\n", j->label, j->n, j->n,
         j->A->nnz, rcl_dtype_name(j->dt), j->co.jacobi ? "yes" : "no", rcl_reduce_mode_name(j->co.dot_mode),
         rcl_spmv_contract_name(j->co.spmv.contract), rcl_spmv_variant_name(j->co.spmv.variant), j->co.tol,
         j->co.max_iterations, j->bspec);
  printf("  %-40s %6s %-14s %-12s %-16s %-16s %s\n", "device", "iters", "status", "||r||", "sha256(history)",
         "sha256(x)", "time/iter");
  printf("  %-40s %6zu %-14s %-12.6g %-16.16s %-16.16s -\n", "host reference", j->rr.iterations,
         cli_cg_status_word(j->rrc), j->rr.residual_norm, j->rr.history_sha256, j->rxhex);
}

/* The native build beside device M's solution j->x: its line and jd's "native". */
static int native_row(cg_job *j, json_t *jd, rcl_spmv_matrix *M, rcl_context *nctx, const char *name) {
  rcl_spmv_matrix *N = NULL;
  unsigned char *nx = calloc(j->n ? j->n : 1, j->es);
  rcl_cg_result r;
  double secs;
  int nst, rc = !nx                                  ? cli_error("native context on %s: out of host memory", name)
                : rcl_spmv_matrix_share(&N, M, nctx) ? cli_fail("native context on %s", name)
                                                     : 0;
  if (!rc && !(rc = solve_on(&nst, nx, &r, &secs, N, j))) {
    cli_drift d;
    char xhex[RCL_SHA256_HEX_SIZE];
    cli_drift_compute(&d, j->x, nx, j->n, j->dt);
    cli_digest(xhex, nx, j->n * j->es);
    json_object_set_new(jd, "native",
                        json_pack("{s:s,s:I,s:f,s:s,s:s,s:f,s:o}", "status", cli_cg_status_word(nst), "iterations",
                                  (json_int_t)r.iterations, "residual_norm", r.residual_norm, "history_sha256",
                                  r.history_sha256, "solution_sha256", xhex, "time_s", secs, "solution_drift",
                                  cli_drift_json(&d)));
    if (!j->json)
      printf("  %-40s %6zu %-14s %-12.6g %-16.16s %-16.16s %s\n", "  native build", r.iterations,
             cli_cg_status_word(nst), r.residual_norm, r.history_sha256, xhex,
             d.differing ? "differs from reproducible" : "same bits as reproducible");
    rcl_cg_result_free(&r);
  }
  rcl_spmv_matrix_free(N);
  free(nx);
  return rc;
}

/* Whether a solve (status st, result r, solution in j->x, its digest into xhex) is the reference's. */
static int matches(char xhex[RCL_SHA256_HEX_SIZE], const cg_job *j, int st, const rcl_cg_result *r) {
  cli_digest(xhex, j->x, j->n * j->es);
  return st == j->rrc && r->iterations == j->rr.iterations && !strcmp(r->history_sha256, j->rr.history_sha256) &&
         !strcmp(xhex, j->rxhex);
}

/* A device's solve (status st, result r, solution in j->x): tallied, printed, in its JSON entry jd. */
static void device_result(cg_job *j, cli_tally *t, json_t *jd, const char *name, int st, const rcl_cg_result *r,
                          double secs) {
  char xhex[RCL_SHA256_HEX_SIZE], key[2 * RCL_SHA256_HEX_SIZE + 1];
  int ok = matches(xhex, j, st, r);
  snprintf(key, sizeof key, "%s %s", r->history_sha256, xhex);
  if (cli_tally_add(t, key, ok)) memcpy(j->first, j->x, j->n * j->es);
  double per = secs / (double)(r->iterations ? r->iterations : 1);
  json_object_set_new(jd, "status", json_string(cli_cg_status_word(st)));
  json_object_set_new(jd, "iterations", json_integer((json_int_t)r->iterations));
  json_object_set_new(jd, "residual_norm", json_real(r->residual_norm));
  json_object_set_new(jd, "relative_residual", json_real(r->rhs_norm > 0 ? r->residual_norm / r->rhs_norm : 0));
  json_object_set_new(jd, "history_sha256", json_string(r->history_sha256));
  json_object_set_new(jd, "solution_sha256", json_string(xhex));
  json_object_set_new(jd, "time_s", json_real(secs));
  json_object_set_new(jd, "time_per_iteration_s", json_real(per));
  json_object_set_new(jd, "message", json_string(r->message));
  json_object_set_new(jd, "matches_reference", json_boolean(ok));
  if (!j->json)
    printf("  %-40.40s %6zu %-14s %-12.6g %-16.16s %-16.16s %.3f ms %s\n", name, r->iterations, cli_cg_status_word(st),
           r->residual_norm, r->history_sha256, xhex, per * 1e3, ok ? "= reference" : "DIFFERS from the reference");
}

/* Device i (and its native twin): uploads the matrix, solves, reports (a cli_run_fn). */
static int device_row(void *job, cli_run *run, json_t *jd, size_t i) {
  cg_job *j = job;
  const char *name = run->devs.name[i];
  rcl_spmv_matrix *M = NULL;
  if (rcl_spmv_matrix_create(&M, run->devs.ctx[i], j->A)) return cli_fail("uploading the matrix to %s", name);
  rcl_cg_result r;
  double secs;
  int st, rc = solve_on(&st, j->x, &r, &secs, M, j);
  if (!rc) {
    device_result(j, &run->tally, jd, name, st, &r, secs);
    rcl_cg_result_free(&r);
  }
  if (!rc && j->native) rc = native_row(j, jd, M, run->ndevs.ctx[i], name);
  rcl_spmv_matrix_free(M);
  return rc;
}

/* The split's row (with --split): the matrix cut over the split's devices, one solve, each device's share. */
static int split_row(cg_job *j) {
  if (!j->sr.s) return 0;
  rcl_split_matrix *M = NULL;
  rcl_cg_result r;
  memset(&r, 0, sizeof r);
  int rc = cli_split_tune(&j->sr, RCL_SPLIT_OP_CG, j->dt, j->n);
  if (rc) return rc;
  if (rcl_split_matrix_create(&M, j->sr.s, j->A)) return cli_split_fail(&j->sr);
  rcl_cg_options w = cli_cg_warm_options(&j->co);
  memset(j->x, 0, j->n * j->es);
  cli_cg_warm_done(rcl_split_cg(j->x, &r, M, j->b, &w), &r);
  memset(&r, 0, sizeof r);
  memset(j->x, 0, j->n * j->es);
  double t0 = cli_now();
  int st = rcl_split_cg(j->x, &r, M, j->b, &j->co);
  double secs = cli_now() - t0, per = secs / (double)(r.iterations ? r.iterations : 1);
  rcl_split_matrix_free(M);
  if (!cli_cg_ended(st)) rc = cli_split_fail(&j->sr);
  char xhex[RCL_SHA256_HEX_SIZE];
  int ok = !rc && matches(xhex, j, st, &r);
  if (!rc && !j->json)
    printf("  %-40.40s %6zu %-14s %-12.6g %-16.16s %-16.16s %.3f ms %s\n", j->sr.label, r.iterations,
           cli_cg_status_word(st), r.residual_norm, r.history_sha256, xhex, per * 1e3,
           ok ? "= reference" : "DIFFERS from the reference");
  if (!rc)
    cli_split_report(&j->sr, xhex, secs, ok, "rows", j->json,
                     json_pack("{s:s,s:I,s:f,s:s,s:s,s:f}", "status", cli_cg_status_word(st), "iterations",
                               (json_int_t)r.iterations, "residual_norm", r.residual_norm, "history_sha256",
                               r.history_sha256, "solution_sha256", xhex, "time_per_iteration_s", per));
  rcl_cg_result_free(&r);
  return rc;
}

static void print_json(const cg_job *j, const cli_tally *t, json_t *jdevs) {
  json_t *top = json_pack(
      "{s:s,s:o,s:s,s:b,s:s,s:s,s:s,s:f,s:I,s:s,s:{s:s,s:I,s:f,s:s,s:s},s:o,s:I,s:I,s:b}", "command", "cg", "matrix",
      cli_sparse_matrix_json(j->A, j->label), "dtype", rcl_dtype_name(j->dt), "jacobi", j->co.jacobi, "dots",
      rcl_reduce_mode_name(j->co.dot_mode), "spmv_contract", rcl_spmv_contract_name(j->co.spmv.contract), "variant",
      rcl_spmv_variant_name(j->co.spmv.variant), "tol", j->co.tol, "maxit", (json_int_t)j->co.max_iterations, "rhs",
      j->bspec, "reference", "status", cli_cg_status_word(j->rrc), "iterations", (json_int_t)j->rr.iterations,
      "residual_norm", j->rr.residual_norm, "history_sha256", j->rr.history_sha256, "solution_sha256", j->rxhex,
      "devices", jdevs, "ran", (json_int_t)t->ran, "unsupported", (json_int_t)t->unsupported, "all_agree",
      cli_tally_ok(t));
  if (j->out) json_object_set_new(top, "out", json_string(j->out));
  cli_split_json(&j->sr, top);
  cli_json_print(top);
}

/* --out, then the summary. Returns the exit status. */
static int report(const cg_job *j, const cli_tally *t, json_t *jdevs, size_t devices) {
  int rc = cli_tally_write(t, j->out, j->first, j->n * j->es);
  if (rc) return rc;
  if (j->json) {
    print_json(j, t, json_incref(jdevs));
    return cli_split_status(&j->sr, cli_tally_status(t));
  }
  printf("%s: %zu of %zu device(s) ran, %zu agree with the reference (%s)%s\n", cli_tally_ok(t) ? "AGREE" : "DISAGREE",
         t->ran, devices, t->agree, j->rr.message,
         t->unsupported ? "; the others cannot run this dtype bit-exactly" : "");
  if (j->out) printf("wrote x (%zu bytes, sha256 %s) to %s\n", j->n * j->es, t->first + RCL_SHA256_HEX_SIZE, j->out);
  cli_split_summary(&j->sr);
  return cli_split_status(&j->sr, cli_tally_status(t));
}

int cmd_cg(int argc, char **argv) {
  cg_job j = {.bspec = "ones", .co = RCL_CG_OPTIONS_INIT, .dt = RCL_F64};
  int rc = cg_parse(&j, argc, argv);
  if (rc) return rc == CLI_OPT_HELP ? 0 : rc;
  cli_run r;
  cli_run_init(&r);
  if ((rc = cg_prepare(&j)) || (rc = cli_run_open(&r, j.device, j.native)) || (rc = cli_split_open(&j.sr, &j.split)))
    goto out;
  if (!j.json) print_head(&j);
  rc = cli_run_each(&r, RCL_FAMILY_SPMV, j.dt, j.json, 40, device_row, &j);
  if (!rc) rc = split_row(&j);
  if (!rc) rc = report(&j, &r.tally, r.jdevs, r.devs.count);
out:
  cli_split_close(&j.sr);
  cli_run_close(&r);
  rcl_cg_result_free(&j.rr);
  free(j.b);
  free(j.xr);
  free(j.x);
  free(j.first);
  rcl_csr_free(j.A);
  return rc;
}
