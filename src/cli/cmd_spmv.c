/* reprocl spmv: y = alpha*A*x + beta*y on one or every device for a matrix file or a generated matrix;
 * per device the SHA-256 of y (the bytes --out writes), the time and whether every device and the host
 * reference agree; --native adds the vendor-default build beside it. */
#include <stdlib.h>
#include <string.h>

#include "sparse_cli.h"

/* What spmv was asked for, and the inputs and results of the run. */
typedef struct {
  const char *matrix, *gen, *xspec, *yspec, *device, *out, *alpha_s, *beta_s;
  rcl_spmv_options so;
  rcl_dtype dt;
  int native, json, repeats;
  unsigned char alpha[8], beta[8];
  rcl_csr *A;
  char label[256];
  void *x, *y0;
  unsigned char *ref, *val, *nval, *first; /* y of the reference, a device, its native build, the first device */
  size_t ybytes;
  double bytes; /* moved per SpMV */
  char refhex[RCL_SHA256_HEX_SIZE];
  cli_split_opts split;
  cli_split_run sr;
  rcl_split_matrix *SM; /* the matrix cut over the split */
} spmv_job;

typedef struct {
  rcl_spmv_matrix *M;
  cl_mem y, x;
  const unsigned char *alpha, *beta;
  rcl_spmv_options o;
  cl_command_queue q;
} spmv_run;

static int run_once(void *p) {
  spmv_run *r = p;
  int rc = rcl_spmv_enqueue(r->y, 0, r->M, r->alpha, r->x, 0, r->beta, &r->o, NULL);
  if (!rc && clFinish(r->q) != CL_SUCCESS) rc = RCL_ERR_OPENCL;
  return rc;
}

/* Writes y0 to r->y, runs once and reads y back. */
static int run_result(unsigned char *y, spmv_run *r, const rcl_csr *A, const void *y0, const char *device) {
  size_t es = rcl_dtype_size(A->dtype);
  cl_int err = CL_SUCCESS;
  if (A->nrows) err = clEnqueueWriteBuffer(r->q, r->y, CL_TRUE, 0, A->nrows * es, y0, 0, NULL, NULL);
  if (err != CL_SUCCESS) return (cli_error("writing y0: %s", rcl_cl_error_name(err)), CLI_EXIT_FAILED);
  if (run_once(r)) return cli_fail_on("spmv", device);
  if (A->nrows) err = clEnqueueReadBuffer(r->q, r->y, CL_TRUE, 0, A->nrows * es, y, 0, NULL, NULL);
  if (err != CL_SUCCESS) return (cli_error("reading y: %s", rcl_cl_error_name(err)), CLI_EXIT_FAILED);
  return 0;
}

/* Runs on one matrix handle: times `repeats` runs on a scratch y, then computes y from y0 once. */
static int run_on(unsigned char *y, double *secs, rcl_spmv_matrix *M, const spmv_job *j) {
  const rcl_csr *A = j->A;
  rcl_context *ctx = rcl_spmv_matrix_context(M);
  cl_context clc = rcl_context_cl_context(ctx);
  const char *device = rcl_context_profile(ctx)->device_name;
  size_t es = rcl_dtype_size(A->dtype), nx = A->ncols ? A->ncols : 1, ny = A->nrows ? A->nrows : 1;
  cl_int err;
  spmv_run r = {M, NULL, NULL, j->alpha, j->beta, j->so, rcl_context_cl_queue(ctx)};
  r.x = clCreateBuffer(clc, CL_MEM_READ_ONLY | (A->ncols ? CL_MEM_COPY_HOST_PTR : 0), nx * es, A->ncols ? j->x : NULL,
                       &err);
  r.y = r.x ? clCreateBuffer(clc, CL_MEM_READ_WRITE | (A->nrows ? CL_MEM_COPY_HOST_PTR : 0), ny * es,
                             A->nrows ? j->y0 : NULL, &err)
            : NULL;
  int rc = r.y ? 0 : cli_error("cannot allocate device buffers: %s", rcl_cl_error_name(err));
  double mn, mx;
  *secs = 0;
  if (!rc && cli_bench_time(secs, &mn, &mx, j->repeats, run_once, &r)) rc = cli_fail_on("spmv", device);
  if (!rc) rc = run_result(y, &r, A, j->y0, device); /* the result: a fresh y0, one run */
  if (r.x) clReleaseMemObject(r.x);
  if (r.y) clReleaseMemObject(r.y);
  return rc;
}

/* Parses the options into j. Returns 0, CLI_OPT_HELP or an exit status. */
static int spmv_parse(spmv_job *j, int argc, char **argv) {
  const cli_opt opts[] = {
      CLI_STR("matrix", &j->matrix, "FILE", "Matrix Market (.mtx) or Harwell-Boeing (.rua/.rsa) file"),
      CLI_STR("gen", &j->gen, "SPEC",
              "a generated matrix: poisson2d:N, poisson3d:N, random:ROWS[xCOLS]:PERROW[:SEED],\n"
              "powerlaw:ROWS[xCOLS]:MINLEN[:SEED]"),
      CLI_STR("x", &j->xspec, "ones|random:SEED|FILE", "x (default: ones)"),
      CLI_STR("y0", &j->yspec, "zeros|ones|random:SEED|FILE", "y before the product (default: zeros)"),
      CLI_STR("alpha", &j->alpha_s, "A", "alpha (default: 1)"),
      CLI_STR("beta", &j->beta_s, "B", "beta (default: 0)"),
      CLI_VAL("contract", &j->so.contract, cli_opt_spmv_contract, "ordered|exact",
              "the row sums' contract (default: ordered)"),
      CLI_OPT_DTYPE(&j->dt),
      CLI_OPT_DEVICE(&j->device, CLI_DEFAULT_DEVICE),
      CLI_OPT_NATIVE(&j->native),
      CLI_OPT_OUT(&j->out, "write the first device's y (raw little-endian values of the dtype) to FILE"),
      CLI_VAL("repeats", &j->repeats, cli_opt_repeats, "R", "timed runs per device (default: 3)"),
      CLI_OPT_JSON(&j->json),
      CLI_OPT_SPLIT(&j->split),
      CLI_SPARSE_TUNABLES("tunables", &j->so),
      CLI_END};
  const cli_cmd_spec spec = {
      "spmv",
      "--matrix FILE | --gen SPEC [--x ones|random:SEED|FILE] [--y0 zeros|ones|random:SEED|FILE]\n"
      "                    [--alpha A] [--beta B] [--contract ordered|exact] [--dtype f32|f64] [--device D|all]\n"
      "                    [--native] [--out y.bin] [--repeats R] [--json]\n"
      "                    [--split DEVICES [--split-weights W1:W2:...]] [tunables]",
      "Computes y = alpha*A*x + beta*y0 (default alpha 1, beta 0, x ones) on the chosen devices (default:\n"
      "$REPROCL_DEVICE or device 0; 'all' for every device) and prints per device the SHA-256 of y, which\n"
      "equals `sha256sum` of the file --out writes (raw little-endian values of the dtype), the median time\n"
      "of R runs and the bandwidth, and whether all devices and the host reference agree.\n"
      "FILE is Matrix Market (.mtx) or Harwell-Boeing (.rua/.rsa); values are read with correct rounding\n"
      "to the dtype. SPEC: poisson2d:N, poisson3d:N, random:ROWS[xCOLS]:PERROW[:SEED],\n"
      "powerlaw:ROWS[xCOLS]:MINLEN[:SEED]. --x/--y0 FILE: raw little-endian values of the dtype, exactly\n"
      "as many as the matrix has columns/rows. --native also runs the same kernels built with the vendor's\n"
      "defaults and shows how far they drift. --split adds a row for the product cut by rows over several\n"
      "devices (rcl_split_spmv) with each device's share of the rows.",
      opts,
      CLI_RUN_FINDING,
      0,
      0};
  int rc = cli_opt_parse(&spec, argc, argv, NULL, NULL);
  if (!rc && !(rc = cli_sparse_scalar(j->alpha, "--alpha", j->alpha_s, j->dt)))
    rc = cli_sparse_scalar(j->beta, "--beta", j->beta_s, j->dt);
  return rc;
}

/* The matrix, x, y0, the result buffers and the host reference's y. */
static int spmv_prepare(spmv_job *j) {
  int rc = cli_sparse_load(&j->A, j->label, sizeof j->label, j->matrix, j->gen, j->dt);
  if (rc) return rc;
  size_t es = rcl_dtype_size(j->dt);
  j->ybytes = j->A->nrows * es;
  if ((rc = cli_sparse_vector(&j->x, j->xspec, j->A->ncols, j->dt, "--x")) ||
      (rc = cli_sparse_vector(&j->y0, j->yspec, j->A->nrows, j->dt, "--y0")))
    return rc;
  j->ref = malloc(j->ybytes + 1);
  j->val = malloc(j->ybytes + 1);
  j->nval = malloc(j->ybytes + 1);
  j->first = malloc(j->ybytes + 1);
  if (!j->ref || !j->val || !j->nval || !j->first) return cli_error("cannot allocate host memory for y");
  memcpy(j->ref, j->y0, j->ybytes);
  if (rcl_ref_spmv(j->ref, j->A, j->so.contract, j->alpha, j->x, j->beta)) return cli_fail("host reference");
  cli_digest(j->refhex, j->ref, j->ybytes);
  j->bytes = cli_sparse_spmv_bytes(j->A, memcmp(j->beta, "\0\0\0\0\0\0\0", es - 1) || (j->beta[es - 1] & 0x7f));
  return 0;
}

static void print_head(const spmv_job *j) {
  printf("spmv %s (%zu x %zu, %zu nnz) %s %s variant=%s alpha=%s beta=%s x=%s\n", j->label, j->A->nrows, j->A->ncols,
         j->A->nnz, rcl_dtype_name(j->dt), rcl_spmv_contract_name(j->so.contract), rcl_spmv_variant_name(j->so.variant),
         j->alpha_s, j->beta_s, j->xspec);
  printf("  %-44s %-16s %s\n", "device", "sha256(y)", "time");
  printf("  %-44s %-16.16s %s\n", "host reference (C, -ffp-contract=off)", j->refhex, "-");
}

/* The native build beside device M's result j->val: its line and jd's "native". */
static int native_row(spmv_job *j, json_t *jd, rcl_spmv_matrix *M, rcl_context *nctx, const char *name) {
  rcl_spmv_matrix *N = NULL;
  double nsecs;
  int rc = rcl_spmv_matrix_share(&N, M, nctx) ? cli_fail("native context on %s", name) : 0;
  if (!rc) rc = run_on(j->nval, &nsecs, N, j);
  rcl_spmv_matrix_free(N);
  if (rc) return rc;
  cli_drift d;
  char hex[RCL_SHA256_HEX_SIZE];
  cli_drift_compute(&d, j->val, j->nval, j->A->nrows, j->dt);
  cli_digest(hex, j->nval, j->ybytes);
  json_object_set_new(jd, "native",
                      json_pack("{s:s,s:f,s:f,s:b,s:o}", "sha256", hex, "time_s", nsecs, "gbps", j->bytes / nsecs / 1e9,
                                "differs", d.differing != 0, "drift", cli_drift_json(&d)));
  if (j->json) return 0;
  printf("  %-44s %-16.16s %.3f ms %7.2f GB/s %s\n", "  native build", hex, nsecs * 1e3, j->bytes / nsecs / 1e9,
         d.differing ? "differs from reproducible" : "same bits as reproducible");
  if (d.differing)
    printf("  %-44s %zu of %zu values differ, max |diff| %.3g, %.0f ulp\n", "", d.differing, d.n, d.max_abs, d.max_ulp);
  return 0;
}

/* Device i's result in j->val (on matrix handle M): tallied, printed, in its JSON entry jd. */
static void device_result(spmv_job *j, cli_tally *t, json_t *jd, const char *name, double secs) {
  char hex[RCL_SHA256_HEX_SIZE];
  cli_digest(hex, j->val, j->ybytes);
  int ok = memcmp(j->val, j->ref, j->ybytes) == 0;
  if (cli_tally_add(t, hex, ok)) memcpy(j->first, j->val, j->ybytes);
  double gbps = j->bytes / secs / 1e9;
  json_object_set_new(jd, "sha256", json_string(hex));
  json_object_set_new(jd, "time_s", json_real(secs));
  json_object_set_new(jd, "gbps", json_real(gbps));
  json_object_set_new(jd, "gflops", json_real(2.0 * (double)j->A->nnz / secs / 1e9));
  json_object_set_new(jd, "matches_reference", json_boolean(ok));
  if (!j->json)
    printf("  %-44.44s %-16.16s %.3f ms %7.2f GB/s %s\n", name, hex, secs * 1e3, gbps,
           ok ? "= reference" : "DIFFERS from the reference");
}

/* Device i (and its native twin): uploads the matrix, runs, reports (a cli_run_fn). */
static int device_row(void *job, cli_run *r, json_t *jd, size_t i) {
  spmv_job *j = job;
  const char *name = r->devs.name[i];
  rcl_spmv_matrix *M = NULL;
  double secs;
  if (rcl_spmv_matrix_create(&M, r->devs.ctx[i], j->A)) return cli_fail("uploading the matrix to %s", name);
  int rc = run_on(j->val, &secs, M, j);
  if (!rc) device_result(j, &r->tally, jd, name, secs);
  if (!rc && j->native) rc = native_row(j, jd, M, r->ndevs.ctx[i], name);
  rcl_spmv_matrix_free(M);
  return rc;
}

static int split_once(void *p) {
  spmv_job *j = p;
  memcpy(j->val, j->y0, j->ybytes);
  return rcl_split_spmv(j->val, j->SM, j->alpha, j->x, j->beta, &j->so);
}

/* The split's row (with --split): the matrix cut over the split's devices, y's digest, the median time of
 * R runs (y0 copied in included) and each device's share of the rows. */
static int split_row(spmv_job *j) {
  if (!j->sr.s) return 0;
  double med, mn, mx;
  char hex[RCL_SHA256_HEX_SIZE];
  int rc = cli_split_tune(&j->sr, RCL_SPLIT_OP_SPMV, j->dt, j->A->nrows);
  if (rc) return rc;
  if (rcl_split_matrix_create(&j->SM, j->sr.s, j->A) || cli_bench_time(&med, &mn, &mx, j->repeats, split_once, j))
    return cli_split_fail(&j->sr);
  cli_digest(hex, j->val, j->ybytes);
  int ok = memcmp(j->val, j->ref, j->ybytes) == 0;
  double gbps = j->bytes / med / 1e9;
  if (!j->json)
    printf("  %-44.44s %-16.16s %.3f ms %7.2f GB/s %s\n", j->sr.label, hex, med * 1e3, gbps,
           ok ? "= reference" : "DIFFERS from the reference");
  cli_split_report(&j->sr, hex, med, ok, "rows", j->json, json_pack("{s:f}", "gbps", gbps));
  return 0;
}

static void print_json(const spmv_job *j, const cli_tally *t, json_t *jdevs) {
  json_t *top = json_pack("{s:s,s:o,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:{s:s},s:o,s:I,s:I,s:b}", "command", "spmv", "matrix",
                          cli_sparse_matrix_json(j->A, j->label), "dtype", rcl_dtype_name(j->dt), "contract",
                          rcl_spmv_contract_name(j->so.contract), "variant", rcl_spmv_variant_name(j->so.variant), "x",
                          j->xspec, "y0", j->yspec, "alpha", j->alpha_s, "beta", j->beta_s, "reference", "sha256",
                          j->refhex, "devices", jdevs, "ran", (json_int_t)t->ran, "unsupported",
                          (json_int_t)t->unsupported, "all_agree", cli_tally_ok(t));
  if (j->out) json_object_set_new(top, "out", json_string(j->out));
  cli_split_json(&j->sr, top);
  cli_json_print(top);
}

/* --out, then the summary. Returns the exit status. */
static int report(const spmv_job *j, const cli_tally *t, json_t *jdevs, size_t devices) {
  int rc = cli_tally_write(t, j->out, j->first, j->ybytes);
  if (rc) return rc;
  if (j->json) {
    print_json(j, t, json_incref(jdevs));
  } else {
    if (j->out) printf("wrote y (%zu bytes, sha256 %s) to %s\n", j->ybytes, t->first, j->out);
    cli_tally_print(t, devices);
    cli_split_summary(&j->sr);
  }
  return cli_split_status(&j->sr, cli_tally_status(t));
}

int cmd_spmv(int argc, char **argv) {
  spmv_job j = {.xspec = "ones",
                .yspec = "zeros",
                .alpha_s = "1",
                .beta_s = "0",
                .so = RCL_SPMV_OPTIONS_INIT,
                .dt = RCL_F64,
                .repeats = 3};
  int rc = spmv_parse(&j, argc, argv);
  if (rc) return rc == CLI_OPT_HELP ? 0 : rc;
  cli_run r;
  cli_run_init(&r);
  if ((rc = spmv_prepare(&j)) || (rc = cli_run_open(&r, j.device, j.native)) || (rc = cli_split_open(&j.sr, &j.split)))
    goto out;
  if (!j.json) print_head(&j);
  rc = cli_run_each(&r, RCL_FAMILY_SPMV, j.dt, j.json, 44, device_row, &j);
  if (!rc) rc = split_row(&j);
  if (!rc) rc = report(&j, &r.tally, r.jdevs, r.devs.count);
out:
  rcl_split_matrix_free(j.SM);
  cli_split_close(&j.sr);
  cli_run_close(&r);
  free(j.x);
  free(j.y0);
  free(j.ref);
  free(j.val);
  free(j.nval);
  free(j.first);
  rcl_csr_free(j.A);
  return rc;
}
