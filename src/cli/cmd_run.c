/* reprocl run reduce: one reduction on one or every device, compared by digest with each other and
 * with the host reference of the contract; --native adds the vendor-default build beside it. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void) {
  printf("usage: reprocl run reduce --op sum|dot|nrm2 --dtype f32|f64 --mode ordered|exact --n N\n"
         "                          [--seed S] [--dist uniform|wide|cancel|special] [--device D|all]\n"
         "                          [--local L] [--groups G] [--variant ndrange|task] [--native] [--json]\n\n"
         "Runs the reduction on the chosen devices (default: $REPROCL_DEVICE or device 0; 'all' for every\n"
         "device) and prints per device the result, the SHA-256 digest of its bytes, the time, and whether\n"
         "all devices and the host reference agree. Inputs are rcl_generate(dist, seed) (y uses seed+1).\n"
         "--native also runs the same kernels built with the vendor's default options (contraction\n"
         "allowed) and shows how far they drift. Exit status 1 when reproducible results disagree.\n");
}

typedef struct {
  rcl_context *ctx;
  rcl_reduce_op op;
  rcl_dtype dt;
  size_t n;
  cl_mem x, y, r;
  rcl_reduce_options opts;
} run_args;

static int run_once(void *p) {
  run_args *a = p;
  int rc = rcl_reduce_enqueue(a->r, 0, a->ctx, a->op, a->dt, a->n, a->x, 0, a->y, 0, &a->opts, NULL);
  if (!rc && clFinish(rcl_context_cl_queue(a->ctx)) != CL_SUCCESS) rc = -1;
  return rc;
}

/* Runs on one context; value receives the result bytes, seconds the median of 3 timed runs. */
static int run_on(unsigned char *value, double *seconds, rcl_context *ctx, run_args *a, const void *x,
                  const void *y) {
  size_t es = rcl_dtype_size(a->dt);
  cl_int err;
  cl_context clc = rcl_context_cl_context(ctx);
  const rcl_device_profile *p = rcl_context_profile(ctx);
  if ((a->n ? a->n : 1) * es > p->max_mem_alloc_size) {
    char msg[256];
    snprintf(msg, sizeof msg, "%zu elements exceed %s's largest buffer (%llu bytes)", a->n, p->device_name,
             (unsigned long long)p->max_mem_alloc_size);
    fprintf(stderr, "reprocl run: %s\n", msg);
    return 1;
  }
  a->ctx = ctx;
  a->x = clCreateBuffer(clc, CL_MEM_READ_ONLY | (a->n ? CL_MEM_COPY_HOST_PTR : 0), (a->n ? a->n : 1) * es,
                        a->n ? (void *)x : NULL, &err);
  a->y = a->x && a->op == RCL_OP_DOT ? clCreateBuffer(clc, CL_MEM_READ_ONLY | (a->n ? CL_MEM_COPY_HOST_PTR : 0),
                                                      (a->n ? a->n : 1) * es, a->n ? (void *)y : NULL, &err)
                                     : NULL;
  a->r = clCreateBuffer(clc, CL_MEM_READ_WRITE, es, NULL, &err);
  int rc = (!a->x || !a->r || (a->op == RCL_OP_DOT && !a->y)) ? cli_error("cannot allocate device buffers: %s",
                                                                          rcl_cl_error_name(err))
                                                              : 0;
  double med = 0, mn, mx;
  if (!rc && cli_bench_time(&med, &mn, &mx, 3, run_once, a)) rc = cli_fail("reduction on %s", p->device_name);
  if (!rc) {
    err = clEnqueueReadBuffer(rcl_context_cl_queue(ctx), a->r, CL_TRUE, 0, es, value, 0, NULL, NULL);
    if (err != CL_SUCCESS) rc = cli_error("reading the result: %s", rcl_cl_error_name(err));
  }
  *seconds = med;
  if (a->x) clReleaseMemObject(a->x);
  if (a->y) clReleaseMemObject(a->y);
  if (a->r) clReleaseMemObject(a->r);
  return rc;
}

static int cmd_run_reduce(int argc, char **argv) {
  static const struct option opts[] = {
      {"op", required_argument, 0, 'o'},     {"dtype", required_argument, 0, 't'}, {"mode", required_argument, 0, 'm'},
      {"n", required_argument, 0, 'n'},      {"seed", required_argument, 0, 's'},  {"dist", required_argument, 0, 'D'},
      {"device", required_argument, 0, 'd'}, {"local", required_argument, 0, 'l'}, {"groups", required_argument, 0, 'g'},
      {"native", no_argument, 0, 'N'},       {"json", no_argument, 0, 'j'},        {"help", no_argument, 0, 'h'},
      {"variant", required_argument, 0, 'V'},
      {0, 0, 0, 0}};
  run_args a = {0};
  a.opts = (rcl_reduce_options)RCL_REDUCE_OPTIONS_INIT;
  a.op = RCL_OP_SUM;
  a.dt = RCL_F32;
  int have_n = 0, native = 0, json = 0, c, rc = 0;
  uint64_t seed = 1;
  rcl_gen_kind dist = RCL_GEN_UNIFORM;
  const char *device = NULL;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case 'o': rc = rcl_reduce_op_parse(&a.op, optarg) ? cli_error("--op: %s", rcl_error_last()) : 0; break;
    case 't': rc = rcl_dtype_parse(&a.dt, optarg) ? cli_error("--dtype: %s", rcl_error_last()) : 0; break;
    case 'm': rc = rcl_reduce_mode_parse(&a.opts.mode, optarg) ? cli_error("--mode: %s", rcl_error_last()) : 0; break;
    case 'n': rc = cli_parse_size(&a.n, "--n", optarg); have_n = 1; break;
    case 's': rc = cli_parse_u64(&seed, "--seed", optarg); break;
    case 'D': rc = rcl_gen_kind_parse(&dist, optarg) ? cli_error("--dist: %s", rcl_error_last()) : 0; break;
    case 'd': device = optarg; break;
    case 'l': rc = cli_parse_size(&a.opts.local_size, "--local", optarg); break;
    case 'g': rc = cli_parse_size(&a.opts.num_groups, "--groups", optarg); break;
    case 'V': rc = rcl_reduce_variant_parse(&a.opts.variant, optarg) ? cli_error("--variant: %s", rcl_error_last()) : 0; break;
    case 'N': native = 1; break;
    case 'j': json = 1; break;
    case 'h': help(); return 0;
    default: return 2;
    }
    if (rc) return rc;
  }
  if (optind < argc) return cli_error("unexpected argument \"%s\"", argv[optind]);
  if (!have_n) return cli_error("--n is required (the number of elements)");
  size_t es = rcl_dtype_size(a.dt), bytes;
  if (a.n > SIZE_MAX / es / 2) return cli_error("--n %zu is too large", a.n);
  bytes = a.n * es;
  cli_devices devs, ndevs = {0};
  unsigned char *x = NULL, *y = NULL;
  json_t *jdevs = NULL;
  if ((rc = cli_devices_open(&devs, device, RCL_MODE_REPRODUCIBLE)) != 0) return rc;
  if (native && (rc = cli_devices_clone(&ndevs, &devs, RCL_MODE_NATIVE)) != 0) goto out;
  /* Sizes a device cannot hold are refused before host memory is allocated (and filled) for them. */
  for (size_t i = 0; i < devs.count; i++) {
    const rcl_device_profile *p = rcl_context_profile(devs.ctx[i]);
    if (rcl_device_profile_support(p, RCL_FAMILY_REDUCE, a.dt, NULL) != RCL_SUPPORT_NONE && bytes > p->max_mem_alloc_size) {
      rc = cli_error("--n %zu needs %zu-byte buffers, above %s's CL_DEVICE_MAX_MEM_ALLOC_SIZE of %llu bytes", a.n, bytes,
                     devs.name[i], (unsigned long long)p->max_mem_alloc_size);
      goto out;
    }
  }
  x = malloc(bytes ? bytes : 1);
  y = malloc(bytes ? bytes : 1);
  if (!x || !y) {
    rc = cli_error("cannot allocate %zu bytes of host memory for the inputs", 2 * bytes);
    goto out;
  }
  rcl_generate(x, a.dt, a.n, dist, seed);
  rcl_generate(y, a.dt, a.n, dist, seed + 1);
  unsigned char ref[8], val[8];
  char hex[RCL_SHA256_HEX_SIZE], refhex[RCL_SHA256_HEX_SIZE], buf[64];
  if (rcl_ref_reduce(ref, a.op, a.dt, a.opts.mode, a.n, x, y)) {
    rc = cli_fail("host reference");
    goto out;
  }
  cli_digest(refhex, ref, es);

  jdevs = json_array();
  cli_format_value(buf, sizeof buf, ref, a.dt);
  if (!json) {
    printf("reduce %s %s %s n=%zu dist=%s seed=%llu\n", rcl_reduce_op_name(a.op), rcl_dtype_name(a.dt),
           rcl_reduce_mode_name(a.opts.mode), a.n, rcl_gen_kind_name(dist), (unsigned long long)seed);
    printf("  %-44s %-24s %-16s %s\n", "device", "result", "sha256", "time");
    printf("  %-44s %-24s %-16.16s %s\n", "host reference (C, -ffp-contract=off)", buf, refhex, "-");
  }
  size_t ran = 0, agree = 0, unsupported = 0;
  char first[RCL_SHA256_HEX_SIZE] = "";
  int all_same = 1;
  for (size_t i = 0; i < devs.count; i++) {
    const char *why;
    rcl_support sup = rcl_device_profile_support(rcl_context_profile(devs.ctx[i]), RCL_FAMILY_REDUCE, a.dt, &why);
    json_t *jd = json_pack("{s:I,s:s,s:s}", "index", (json_int_t)devs.index[i], "name", devs.name[i], "support",
                           rcl_support_name(sup));
    if (sup == RCL_SUPPORT_NONE) {
      unsupported++;
      json_object_set_new(jd, "reason", json_string(why));
      json_array_append_new(jdevs, jd);
      if (!json) printf("  %-44.44s unsupported: %s\n", devs.name[i], why);
      continue;
    }
    double secs;
    if ((rc = run_on(val, &secs, devs.ctx[i], &a, x, y)) != 0) {
      json_decref(jd);
      break;
    }
    ran++;
    cli_digest(hex, val, es);
    int ok = memcmp(val, ref, es) == 0;
    agree += ok;
    if (!*first) strcpy(first, hex);
    else if (strcmp(first, hex)) all_same = 0;
    cli_format_value(buf, sizeof buf, val, a.dt);
    json_object_set_new(jd, "result", json_string(buf));
    json_object_set_new(jd, "sha256", json_string(hex));
    json_object_set_new(jd, "time_s", json_real(secs));
    json_object_set_new(jd, "matches_reference", json_boolean(ok));
    if (!json)
      printf("  %-44.44s %-24s %-16.16s %.3f ms %s\n", devs.name[i], buf, hex, secs * 1e3,
             ok ? "= reference" : "DIFFERS from the reference");
    if (native) {
      unsigned char nval[8];
      double nsecs;
      if ((rc = run_on(nval, &nsecs, ndevs.ctx[i], &a, x, y)) != 0) {
        json_decref(jd);
        break;
      }
      cli_drift d;
      cli_drift_compute(&d, val, nval, 1, a.dt);
      cli_digest(hex, nval, es);
      cli_format_value(buf, sizeof buf, nval, a.dt);
      json_t *jn = json_pack("{s:s,s:s,s:f,s:b,s:o}", "result", buf, "sha256", hex, "time_s", nsecs, "differs",
                             d.differing != 0, "drift", cli_drift_json(&d));
      json_object_set_new(jd, "native", jn);
      if (!json)
        printf("  %-44s %-24s %-16.16s %.3f ms %s\n", "  native build", buf, hex, nsecs * 1e3,
               d.differing ? "differs from reproducible" : "same bits as reproducible");
      if (!json && d.differing) printf("  %-44s |diff| %.3g, %.0f ulp\n", "", d.max_abs, d.max_ulp);
    }
    json_array_append_new(jdevs, jd);
  }
  if (!rc) {
    int ok = ran > 0 && agree == ran && all_same;
    if (json) {
      cli_format_value(buf, sizeof buf, ref, a.dt);
      json_t *top = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:s,s:{s:s,s:s},s:o,s:I,s:I,s:b}", "command", "run reduce", "op",
                              rcl_reduce_op_name(a.op), "dtype", rcl_dtype_name(a.dt), "mode",
                              rcl_reduce_mode_name(a.opts.mode), "n", (json_int_t)a.n, "seed", (json_int_t)seed,
                              "dist", rcl_gen_kind_name(dist), "reference", "result", buf, "sha256", refhex, "devices",
                              jdevs, "ran", (json_int_t)ran, "unsupported", (json_int_t)unsupported, "all_agree", ok);
      cli_json_print(top);
      jdevs = NULL;
    } else {
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
  free(y);
  return rc;
}

int cmd_run(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    help();
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "reduce")) return cmd_run_reduce(argc - 1, argv + 1);
  return cli_error("unknown kernel family \"%s\" (run supports: reduce; see also reprocl stencil, spmv, md)", argv[1]);
}
