/* reprocl spmv: y = alpha*A*x + beta*y on one or every device for a matrix file or a generated matrix;
 * per device the SHA-256 of y (the bytes --out writes), the time and whether every device and the host
 * reference agree; --native adds the vendor-default build beside it. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "sparse_cli.h"

static void help(void) {
  printf(
      "usage: reprocl spmv --matrix FILE | --gen SPEC [--x ones|random:SEED|FILE] [--y0 zeros|ones|random:SEED|FILE]\n"
      "                    [--alpha A] [--beta B] [--contract ordered|exact] [--dtype f32|f64] [--device D|all]\n"
      "                    [--native] [--out y.bin] [--repeats R] [--json] [tunables]\n\n"
      "Computes y = alpha*A*x + beta*y0 (default alpha 1, beta 0, x ones) on the chosen devices (default:\n"
      "$REPROCL_DEVICE or device 0; 'all' for every device) and prints per device the SHA-256 of y, which\n"
      "equals `sha256sum` of the file --out writes (raw little-endian values of the dtype), the median time\n"
      "of R runs and the bandwidth, and whether all devices and the host reference agree.\n"
      "FILE is Matrix Market (.mtx) or Harwell-Boeing (.rua/.rsa); values are read with correct rounding\n"
      "to the dtype. SPEC: poisson2d:N, poisson3d:N, random:ROWS[xCOLS]:PERROW[:SEED],\n"
      "powerlaw:ROWS[xCOLS]:MINLEN[:SEED]. --x/--y0 FILE: raw little-endian values of the dtype, exactly\n"
      "as many as the matrix has columns/rows. --native also runs the same kernels built with the vendor's\n"
      "defaults and shows how far they drift. Exit status 1 when reproducible results disagree.\n"
      "tunables:\n" CLI_SPARSE_TUNABLE_HELP);
}

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

/* Runs on one matrix handle: times `repeats` runs on a scratch y, then computes y from y0 once. */
static int run_on(unsigned char *y, double *secs, rcl_spmv_matrix *M, const rcl_csr *A, const void *x, const void *y0,
                  const unsigned char *alpha, const unsigned char *beta, const rcl_spmv_options *o, int repeats) {
  rcl_context *ctx = rcl_spmv_matrix_context(M);
  cl_context clc = rcl_context_cl_context(ctx);
  size_t es = rcl_dtype_size(A->dtype), nx = A->ncols ? A->ncols : 1, ny = A->nrows ? A->nrows : 1;
  cl_int err;
  spmv_run r = {M, NULL, NULL, alpha, beta, *o, rcl_context_cl_queue(ctx)};
  r.x = clCreateBuffer(clc, CL_MEM_READ_ONLY | (A->ncols ? CL_MEM_COPY_HOST_PTR : 0), nx * es,
                       A->ncols ? (void *)x : NULL, &err);
  r.y = r.x ? clCreateBuffer(clc, CL_MEM_READ_WRITE | (A->nrows ? CL_MEM_COPY_HOST_PTR : 0), ny * es,
                             A->nrows ? (void *)y0 : NULL, &err)
            : NULL;
  int rc = r.y ? 0 : cli_error("cannot allocate device buffers: %s", rcl_cl_error_name(err));
  double mn, mx;
  *secs = 0;
  if (!rc && cli_bench_time(secs, &mn, &mx, repeats, run_once, &r))
    rc = cli_fail("spmv on %s", rcl_context_profile(ctx)->device_name);
  /* the result: a fresh y0, one run */
  if (!rc && A->nrows) {
    err = clEnqueueWriteBuffer(r.q, r.y, CL_TRUE, 0, A->nrows * es, y0, 0, NULL, NULL);
    if (err != CL_SUCCESS) rc = cli_error("writing y0: %s", rcl_cl_error_name(err));
  }
  if (!rc && run_once(&r)) rc = cli_fail("spmv on %s", rcl_context_profile(ctx)->device_name);
  if (!rc && A->nrows) {
    err = clEnqueueReadBuffer(r.q, r.y, CL_TRUE, 0, A->nrows * es, y, 0, NULL, NULL);
    if (err != CL_SUCCESS) rc = cli_error("reading y: %s", rcl_cl_error_name(err));
  }
  if (r.x) clReleaseMemObject(r.x);
  if (r.y) clReleaseMemObject(r.y);
  return rc;
}

int cmd_spmv(int argc, char **argv) {
  static const struct option opts[] = {{"matrix", required_argument, 0, 'm'},
                                       {"gen", required_argument, 0, 'g'},
                                       {"x", required_argument, 0, 'x'},
                                       {"y0", required_argument, 0, 'y'},
                                       {"alpha", required_argument, 0, 'a'},
                                       {"beta", required_argument, 0, 'b'},
                                       {"contract", required_argument, 0, 'c'},
                                       {"dtype", required_argument, 0, 't'},
                                       {"device", required_argument, 0, 'd'},
                                       {"native", no_argument, 0, 'N'},
                                       {"out", required_argument, 0, 'o'},
                                       {"repeats", required_argument, 0, 'r'},
                                       {"json", no_argument, 0, 'j'},
                                       {"help", no_argument, 0, 'h'},
                                       CLI_SPARSE_TUNABLE_OPTIONS,
                                       {0, 0, 0, 0}};
  const char *matrix = NULL, *gen = NULL, *xspec = "ones", *yspec = "zeros", *device = NULL, *out = NULL;
  const char *alpha_s = "1", *beta_s = "0";
  rcl_spmv_options so = RCL_SPMV_OPTIONS_INIT;
  rcl_dtype dt = RCL_F64;
  int native = 0, json = 0, repeats = 3, c, rc = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    if (cli_sparse_tunable(&so, c, optarg, &rc)) {
      if (rc) return rc;
      continue;
    }
    switch (c) {
    case 'm':
      matrix = optarg;
      break;
    case 'g':
      gen = optarg;
      break;
    case 'x':
      xspec = optarg;
      break;
    case 'y':
      yspec = optarg;
      break;
    case 'a':
      alpha_s = optarg;
      break;
    case 'b':
      beta_s = optarg;
      break;
    case 'c':
      rc = rcl_spmv_contract_parse(&so.contract, optarg) ? cli_error("--contract: %s", rcl_error_last()) : 0;
      break;
    case 't':
      rc = rcl_dtype_parse(&dt, optarg) ? cli_error("--dtype: %s", rcl_error_last()) : 0;
      break;
    case 'd':
      device = optarg;
      break;
    case 'N':
      native = 1;
      break;
    case 'o':
      out = optarg;
      break;
    case 'r':
      rc = cli_parse_int(&repeats, "--repeats", optarg, 1, 1000);
      break;
    case 'j':
      json = 1;
      break;
    case 'h':
      help();
      return 0;
    default:
      return 2;
    }
    if (rc) return rc;
  }
  if (optind < argc) return cli_error("unexpected argument \"%s\"", argv[optind]);
  unsigned char alpha[8], beta[8];
  if ((rc = cli_sparse_scalar(alpha, "--alpha", alpha_s, dt)) || (rc = cli_sparse_scalar(beta, "--beta", beta_s, dt)))
    return rc;
  rcl_csr *A;
  char label[256];
  if ((rc = cli_sparse_load(&A, label, sizeof label, matrix, gen, dt)) != 0) return rc;
  size_t es = rcl_dtype_size(dt), ybytes = A->nrows * es;
  void *x = NULL, *y0 = NULL;
  unsigned char *ref = NULL, *val = NULL, *nval = NULL, *first = NULL;
  cli_devices devs = {0}, ndevs = {0};
  json_t *jdevs = NULL;
  if ((rc = cli_sparse_vector(&x, xspec, A->ncols, dt, "--x")) ||
      (rc = cli_sparse_vector(&y0, yspec, A->nrows, dt, "--y0")))
    goto out;
  ref = malloc(ybytes + 1);
  val = malloc(ybytes + 1);
  nval = malloc(ybytes + 1);
  first = malloc(ybytes + 1);
  if (!ref || !val || !nval || !first) {
    rc = cli_error("cannot allocate host memory for y");
    goto out;
  }
  memcpy(ref, y0, ybytes);
  if (rcl_ref_spmv(ref, A, so.contract, alpha, x, beta)) {
    rc = cli_fail("host reference");
    goto out;
  }
  char refhex[RCL_SHA256_HEX_SIZE], hex[RCL_SHA256_HEX_SIZE];
  cli_digest(refhex, ref, ybytes);
  if ((rc = cli_devices_open(&devs, device, RCL_MODE_REPRODUCIBLE)) != 0) goto out;
  if (native && (rc = cli_devices_clone(&ndevs, &devs, RCL_MODE_NATIVE)) != 0) goto out;
  double bytes = cli_sparse_spmv_bytes(A, memcmp(beta, "\0\0\0\0\0\0\0", es - 1) || (beta[es - 1] & 0x7f));
  if (!json) {
    printf("spmv %s (%zu x %zu, %zu nnz) %s %s variant=%s alpha=%s beta=%s x=%s\n", label, A->nrows, A->ncols, A->nnz,
           rcl_dtype_name(dt), rcl_spmv_contract_name(so.contract), rcl_spmv_variant_name(so.variant), alpha_s, beta_s,
           xspec);
    printf("  %-44s %-16s %s\n", "device", "sha256(y)", "time");
    printf("  %-44s %-16.16s %s\n", "host reference (C, -ffp-contract=off)", refhex, "-");
  }
  jdevs = json_array();
  size_t ran = 0, agree = 0, unsupported = 0;
  char firsthex[RCL_SHA256_HEX_SIZE] = "";
  int all_same = 1;
  for (size_t i = 0; i < devs.count && !rc; i++) {
    json_t *jd;
    if (!cli_device_entry(&jd, jdevs, &devs, i, RCL_FAMILY_SPMV, dt, json, 44)) {
      unsupported++;
      continue;
    }
    rcl_spmv_matrix *M = NULL;
    double secs;
    if (rcl_spmv_matrix_create(&M, devs.ctx[i], A)) {
      rc = cli_fail("uploading the matrix to %s", devs.name[i]);
      break;
    }
    rc = run_on(val, &secs, M, A, x, y0, alpha, beta, &so, repeats);
    if (rc) {
      rcl_spmv_matrix_free(M);
      break;
    }
    ran++;
    cli_digest(hex, val, ybytes);
    int ok = memcmp(val, ref, ybytes) == 0;
    agree += ok;
    if (!*firsthex) {
      strcpy(firsthex, hex);
      memcpy(first, val, ybytes);
    } else if (strcmp(firsthex, hex)) {
      all_same = 0;
    }
    json_object_set_new(jd, "sha256", json_string(hex));
    json_object_set_new(jd, "time_s", json_real(secs));
    json_object_set_new(jd, "gbps", json_real(bytes / secs / 1e9));
    json_object_set_new(jd, "gflops", json_real(2.0 * (double)A->nnz / secs / 1e9));
    json_object_set_new(jd, "matches_reference", json_boolean(ok));
    if (!json)
      printf("  %-44.44s %-16.16s %.3f ms %7.2f GB/s %s\n", devs.name[i], hex, secs * 1e3, bytes / secs / 1e9,
             ok ? "= reference" : "DIFFERS from the reference");
    if (native) {
      rcl_spmv_matrix *N = NULL;
      double nsecs;
      if (rcl_spmv_matrix_share(&N, M, ndevs.ctx[i])) rc = cli_fail("native context on %s", devs.name[i]);
      if (!rc) rc = run_on(nval, &nsecs, N, A, x, y0, alpha, beta, &so, repeats);
      rcl_spmv_matrix_free(N);
      if (!rc) {
        cli_drift d;
        cli_drift_compute(&d, val, nval, A->nrows, dt);
        cli_digest(hex, nval, ybytes);
        json_object_set_new(jd, "native",
                            json_pack("{s:s,s:f,s:f,s:b,s:o}", "sha256", hex, "time_s", nsecs, "gbps",
                                      bytes / nsecs / 1e9, "differs", d.differing != 0, "drift", cli_drift_json(&d)));
        if (!json) {
          printf("  %-44s %-16.16s %.3f ms %7.2f GB/s %s\n", "  native build", hex, nsecs * 1e3, bytes / nsecs / 1e9,
                 d.differing ? "differs from reproducible" : "same bits as reproducible");
          if (d.differing)
            printf("  %-44s %zu of %zu values differ, max |diff| %.3g, %.0f ulp\n", "", d.differing, d.n, d.max_abs,
                   d.max_ulp);
        }
      }
    }
    rcl_spmv_matrix_free(M);
  }
  if (!rc && out) {
    if (!ran)
      rc = cli_error("--out: no device ran, nothing to write");
    else
      rc = cli_write_file(out, first, ybytes);
  }
  if (!rc) {
    int ok = ran > 0 && agree == ran && all_same;
    if (json) {
      json_t *top =
          json_pack("{s:s,s:o,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:{s:s},s:o,s:I,s:I,s:b}", "command", "spmv", "matrix",
                    cli_sparse_matrix_json(A, label), "dtype", rcl_dtype_name(dt), "contract",
                    rcl_spmv_contract_name(so.contract), "variant", rcl_spmv_variant_name(so.variant), "x", xspec, "y0",
                    yspec, "alpha", alpha_s, "beta", beta_s, "reference", "sha256", refhex, "devices", jdevs, "ran",
                    (json_int_t)ran, "unsupported", (json_int_t)unsupported, "all_agree", ok);
      if (out) json_object_set_new(top, "out", json_string(out));
      jdevs = NULL;
      cli_json_print(top);
    } else {
      if (out) printf("wrote y (%zu bytes, sha256 %s) to %s\n", ybytes, firsthex, out);
      printf("%s: %zu of %zu device(s) ran, %zu agree with the reference%s\n", ok ? "AGREE" : "DISAGREE", ran,
             devs.count, agree, unsupported ? " (the others cannot run this dtype bit-exactly)" : "");
    }
    rc = ok ? 0 : 1;
  }
out:
  json_decref(jdevs);
  cli_devices_close(&ndevs);
  cli_devices_close(&devs);
  free(x);
  free(y0);
  free(ref);
  free(val);
  free(nval);
  free(first);
  rcl_csr_free(A);
  return rc;
}
