/* reprocl cg: Conjugate Gradient (optionally Jacobi-preconditioned) on one or every device; per device
 * the iteration count, final residual, residual-history digest and solution digest, compared with each
 * other and with the host reference; --native adds the vendor-default build beside it. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "sparse_cli.h"

static void help(void) {
  printf("usage: reprocl cg --matrix FILE | --gen SPEC [--rhs ones|random:SEED|FILE] [--tol T] [--maxit K] [--jacobi]\n"
         "                  [--dots ordered|exact] [--contract ordered|exact] [--dtype f32|f64] [--device D|all]\n"
         "                  [--native] [--out x.bin] [--json] [tunables]\n\n"
         "Solves A x = b from x0 = 0 with CG (default tol 1e-8, maxit 1000, rhs ones) and prints per device the\n"
         "iteration count, the final residual norm, the SHA-256 of the residual history (the norms, raw values\n"
         "of the dtype) and of the solution (the bytes --out writes), the time per iteration, and whether all\n"
         "devices and the host reference agree. --dots picks the dot/norm contract, --contract the SpMV one.\n"
         "A run that stops at --maxit or breaks down (the matrix is not SPD) is reported as such; the exit\n"
         "status is 1 only when reproducible results disagree.\n"
         "tunables (of the SpMVs):\n" CLI_SPARSE_TUNABLE_HELP);
}

static const char *status_word(int rc) {
  return rc == 0                        ? "converged"
         : rc == RCL_ERR_NO_CONVERGENCE ? "no-convergence"
         : rc == RCL_ERR_BREAKDOWN      ? "breakdown"
                                        : "error";
}

/* One solve; x receives the solution. Returns the CG status (0, NO_CONVERGENCE, BREAKDOWN) or -100 after
 * printing another error. */
static int solve_on(void *x, rcl_cg_result *res, double *secs, rcl_spmv_matrix *M, const void *b, size_t n, size_t es,
                    const rcl_cg_options *o) {
  memset(x, 0, n * es);
  double t0 = cli_now();
  int rc = rcl_cg(x, res, M, b, o);
  *secs = cli_now() - t0;
  if (rc && rc != RCL_ERR_NO_CONVERGENCE && rc != RCL_ERR_BREAKDOWN) {
    cli_fail("cg on %s", rcl_context_profile(rcl_spmv_matrix_context(M))->device_name);
    return -100;
  }
  return rc;
}

int cmd_cg(int argc, char **argv) {
  static const struct option opts[] = {{"matrix", required_argument, 0, 'm'},
                                       {"gen", required_argument, 0, 'g'},
                                       {"rhs", required_argument, 0, 'b'},
                                       {"tol", required_argument, 0, 'T'},
                                       {"maxit", required_argument, 0, 'K'},
                                       {"jacobi", no_argument, 0, 'J'},
                                       {"dots", required_argument, 0, 'D'},
                                       {"contract", required_argument, 0, 'c'},
                                       {"dtype", required_argument, 0, 't'},
                                       {"device", required_argument, 0, 'd'},
                                       {"native", no_argument, 0, 'N'},
                                       {"out", required_argument, 0, 'o'},
                                       {"json", no_argument, 0, 'j'},
                                       {"help", no_argument, 0, 'h'},
                                       CLI_SPARSE_TUNABLE_OPTIONS,
                                       {0, 0, 0, 0}};
  const char *matrix = NULL, *gen = NULL, *bspec = "ones", *device = NULL, *out = NULL;
  rcl_cg_options co = RCL_CG_OPTIONS_INIT;
  rcl_dtype dt = RCL_F64;
  int native = 0, json = 0, c, rc = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    if (cli_sparse_tunable(&co.spmv, c, optarg, &rc)) {
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
    case 'b':
      bspec = optarg;
      break;
    case 'T':
      rc = cli_parse_double(&co.tol, "--tol", optarg);
      if (!rc && co.tol < 0) rc = cli_error("--tol must be >= 0, got %s", optarg);
      break;
    case 'K':
      rc = cli_parse_size(&co.max_iterations, "--maxit", optarg);
      break;
    case 'J':
      co.jacobi = 1;
      break;
    case 'D':
      rc = rcl_reduce_mode_parse(&co.dot_mode, optarg) ? cli_error("--dots: %s", rcl_error_last()) : 0;
      break;
    case 'c':
      rc = rcl_spmv_contract_parse(&co.spmv.contract, optarg) ? cli_error("--contract: %s", rcl_error_last()) : 0;
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
  rcl_csr *A;
  char label[256];
  if ((rc = cli_sparse_load(&A, label, sizeof label, matrix, gen, dt)) != 0) return rc;
  if (A->nrows != A->ncols) {
    rc = cli_error("CG needs a square matrix; %s is %zu x %zu", label, A->nrows, A->ncols);
    rcl_csr_free(A);
    return rc;
  }
  size_t n = A->nrows, es = rcl_dtype_size(dt);
  void *b = NULL;
  unsigned char *xr = NULL, *x = NULL, *first = NULL;
  cli_devices devs = {0}, ndevs = {0};
  json_t *jdevs = NULL;
  rcl_cg_result rr = {0};
  if ((rc = cli_sparse_vector(&b, bspec, n, dt, "--rhs")) != 0) goto out;
  xr = calloc(n ? n : 1, es);
  x = calloc(n ? n : 1, es);
  first = calloc(n ? n : 1, es);
  if (!xr || !x || !first) {
    rc = cli_error("cannot allocate host memory for x");
    goto out;
  }
  int rrc = rcl_ref_cg(xr, &rr, A, b, &co);
  if (rrc && rrc != RCL_ERR_NO_CONVERGENCE && rrc != RCL_ERR_BREAKDOWN) {
    rc = cli_fail("host reference");
    goto out;
  }
  char xhex[RCL_SHA256_HEX_SIZE], rxhex[RCL_SHA256_HEX_SIZE], buf[64];
  cli_digest(rxhex, xr, n * es);
  if ((rc = cli_devices_open(&devs, device, RCL_MODE_REPRODUCIBLE)) != 0) goto out;
  if (native && (rc = cli_devices_clone(&ndevs, &devs, RCL_MODE_NATIVE)) != 0) goto out;
  if (!json) {
    printf("cg %s (%zu x %zu, %zu nnz) %s jacobi=%s dots=%s spmv=%s/%s tol=%g maxit=%zu rhs=%s\n", label, n, n, A->nnz,
           rcl_dtype_name(dt), co.jacobi ? "yes" : "no", rcl_reduce_mode_name(co.dot_mode),
           rcl_spmv_contract_name(co.spmv.contract), rcl_spmv_variant_name(co.spmv.variant), co.tol, co.max_iterations,
           bspec);
    printf("  %-40s %6s %-14s %-12s %-16s %-16s %s\n", "device", "iters", "status", "||r||", "sha256(history)",
           "sha256(x)", "time/iter");
    cli_format_value(buf, sizeof buf, (const char *)rr.history + (rr.history_len - 1) * es, dt);
    printf("  %-40s %6zu %-14s %-12.6g %-16.16s %-16.16s -\n", "host reference", rr.iterations, status_word(rrc),
           rr.residual_norm, rr.history_sha256, rxhex);
  }
  jdevs = json_array();
  size_t ran = 0, agree = 0, unsupported = 0;
  char firsth[RCL_SHA256_HEX_SIZE] = "", firstx[RCL_SHA256_HEX_SIZE] = "";
  int all_same = 1;
  for (size_t i = 0; i < devs.count && !rc; i++) {
    json_t *jd;
    if (!cli_device_entry(&jd, jdevs, &devs, i, RCL_FAMILY_SPMV, dt, json, 40)) {
      unsupported++;
      continue;
    }
    rcl_spmv_matrix *M = NULL;
    if (rcl_spmv_matrix_create(&M, devs.ctx[i], A)) {
      rc = cli_fail("uploading the matrix to %s", devs.name[i]);
      break;
    }
    rcl_cg_result r;
    double secs;
    int st = solve_on(x, &r, &secs, M, b, n, es, &co);
    if (st == -100) {
      rc = 1;
      rcl_spmv_matrix_free(M);
      break;
    }
    ran++;
    cli_digest(xhex, x, n * es);
    int ok = st == rrc && r.iterations == rr.iterations && !strcmp(r.history_sha256, rr.history_sha256) &&
             !strcmp(xhex, rxhex);
    agree += ok;
    if (!*firsth) {
      strcpy(firsth, r.history_sha256);
      strcpy(firstx, xhex);
      memcpy(first, x, n * es);
    } else if (strcmp(firsth, r.history_sha256) || strcmp(firstx, xhex)) {
      all_same = 0;
    }
    double per = secs / (double)(r.iterations ? r.iterations : 1);
    json_object_set_new(jd, "status", json_string(status_word(st)));
    json_object_set_new(jd, "iterations", json_integer((json_int_t)r.iterations));
    json_object_set_new(jd, "residual_norm", json_real(r.residual_norm));
    json_object_set_new(jd, "relative_residual", json_real(r.rhs_norm > 0 ? r.residual_norm / r.rhs_norm : 0));
    json_object_set_new(jd, "history_sha256", json_string(r.history_sha256));
    json_object_set_new(jd, "solution_sha256", json_string(xhex));
    json_object_set_new(jd, "time_s", json_real(secs));
    json_object_set_new(jd, "time_per_iteration_s", json_real(per));
    json_object_set_new(jd, "message", json_string(r.message));
    json_object_set_new(jd, "matches_reference", json_boolean(ok));
    if (!json)
      printf("  %-40.40s %6zu %-14s %-12.6g %-16.16s %-16.16s %.3f ms %s\n", devs.name[i], r.iterations,
             status_word(st), r.residual_norm, r.history_sha256, xhex, per * 1e3,
             ok ? "= reference" : "DIFFERS from the reference");
    rcl_cg_result_free(&r);
    if (native) {
      rcl_spmv_matrix *N = NULL;
      unsigned char *nx = calloc(n ? n : 1, es);
      if (!nx || rcl_spmv_matrix_share(&N, M, ndevs.ctx[i])) rc = cli_fail("native context on %s", devs.name[i]);
      int nst = rc ? -100 : solve_on(nx, &r, &secs, N, b, n, es, &co);
      if (nst == -100) {
        rc = 1;
      } else {
        cli_drift d;
        cli_drift_compute(&d, x, nx, n, dt);
        cli_digest(xhex, nx, n * es);
        json_object_set_new(jd, "native",
                            json_pack("{s:s,s:I,s:f,s:s,s:s,s:f,s:o}", "status", status_word(nst), "iterations",
                                      (json_int_t)r.iterations, "residual_norm", r.residual_norm, "history_sha256",
                                      r.history_sha256, "solution_sha256", xhex, "time_s", secs, "solution_drift",
                                      cli_drift_json(&d)));
        if (!json)
          printf("  %-40s %6zu %-14s %-12.6g %-16.16s %-16.16s %s\n", "  native build", r.iterations, status_word(nst),
                 r.residual_norm, r.history_sha256, xhex,
                 d.differing ? "differs from reproducible" : "same bits as reproducible");
        rcl_cg_result_free(&r);
      }
      rcl_spmv_matrix_free(N);
      free(nx);
    }
    rcl_spmv_matrix_free(M);
  }
  if (!rc && out) {
    if (!ran)
      rc = cli_error("--out: no device ran, nothing to write");
    else
      rc = cli_write_file(out, first, n * es);
  }
  if (!rc) {
    int ok = ran > 0 && agree == ran && all_same;
    if (json) {
      json_t *top = json_pack(
          "{s:s,s:o,s:s,s:b,s:s,s:s,s:s,s:f,s:I,s:s,s:{s:s,s:I,s:f,s:s,s:s},s:o,s:I,s:I,s:b}", "command", "cg",
          "matrix", cli_sparse_matrix_json(A, label), "dtype", rcl_dtype_name(dt), "jacobi", co.jacobi, "dots",
          rcl_reduce_mode_name(co.dot_mode), "spmv_contract", rcl_spmv_contract_name(co.spmv.contract), "variant",
          rcl_spmv_variant_name(co.spmv.variant), "tol", co.tol, "maxit", (json_int_t)co.max_iterations, "rhs", bspec,
          "reference", "status", status_word(rrc), "iterations", (json_int_t)rr.iterations, "residual_norm",
          rr.residual_norm, "history_sha256", rr.history_sha256, "solution_sha256", rxhex, "devices", jdevs, "ran",
          (json_int_t)ran, "unsupported", (json_int_t)unsupported, "all_agree", ok);
      if (out) json_object_set_new(top, "out", json_string(out));
      jdevs = NULL;
      cli_json_print(top);
    } else {
      printf("%s: %zu of %zu device(s) ran, %zu agree with the reference (%s)%s\n", ok ? "AGREE" : "DISAGREE", ran,
             devs.count, agree, rr.message, unsupported ? "; the others cannot run this dtype bit-exactly" : "");
      if (out) printf("wrote x (%zu bytes, sha256 %s) to %s\n", n * es, firstx, out);
    }
    rc = ok ? 0 : 1;
  }
out:
  json_decref(jdevs);
  rcl_cg_result_free(&rr);
  cli_devices_close(&ndevs);
  cli_devices_close(&devs);
  free(b);
  free(xr);
  free(x);
  free(first);
  rcl_csr_free(A);
  return rc;
}
