/* reprocl run KERNEL: one kernel on one or every device, compared by digest with each other and with the
 * host reference of the contract; --native adds the vendor-default build beside it. Kernels: reduce. */
#include <stdlib.h>
#include <string.h>

#include "cli_run_common.h"

typedef struct {
  rcl_context *ctx;
  rcl_reduce_op op;
  rcl_dtype dt;
  size_t n;
  cl_mem x, y, r;
  rcl_reduce_options opts;
} run_args;

/* What `run reduce` was asked for: the reduction, its inputs and where to run it. */
typedef struct {
  run_args a;
  uint64_t seed;
  rcl_gen_kind dist;
  const char *device, *out;
  int native, json;
  const unsigned char *x, *y; /* the inputs, n values each */
  unsigned char ref[8];       /* the host reference's result */
  unsigned char first[8];     /* the first device's result (--out) */
  unsigned char sval[8];      /* the split's result */
  char refhex[RCL_SHA256_HEX_SIZE];
  cli_split_opts split;
  cli_split_run sr;
} reduce_job;

static int run_once(void *p) {
  run_args *a = p;
  int rc = rcl_reduce_enqueue(a->r, 0, a->ctx, a->op, a->dt, a->n, a->x, 0, a->y, 0, &a->opts, NULL);
  if (!rc && clFinish(rcl_context_cl_queue(a->ctx)) != CL_SUCCESS) rc = -1;
  return rc;
}

/* The device buffers of a run on ctx: x (and y for dot) holding the inputs, r for the result. */
static int make_buffers(run_args *a, rcl_context *ctx, const void *x, const void *y) {
  size_t es = rcl_dtype_size(a->dt), bytes = (a->n ? a->n : 1) * es;
  cl_mem_flags in = CL_MEM_READ_ONLY | (a->n ? CL_MEM_COPY_HOST_PTR : 0);
  cl_int err;
  cl_context clc = rcl_context_cl_context(ctx);
  a->ctx = ctx;
  a->x = clCreateBuffer(clc, in, bytes, a->n ? (void *)x : NULL, &err);
  a->y = a->x && a->op == RCL_OP_DOT ? clCreateBuffer(clc, in, bytes, a->n ? (void *)y : NULL, &err) : NULL;
  a->r = clCreateBuffer(clc, CL_MEM_READ_WRITE, es, NULL, &err);
  if (!a->x || !a->r || (a->op == RCL_OP_DOT && !a->y))
    return cli_error("cannot allocate device buffers: %s", rcl_cl_error_name(err));
  return 0;
}

/* Runs on one context; value receives the result bytes, seconds the median of 3 timed runs. */
static int run_on(unsigned char *value, double *seconds, rcl_context *ctx, run_args *a, const void *x, const void *y) {
  size_t es = rcl_dtype_size(a->dt);
  const rcl_device_profile *p = rcl_context_profile(ctx);
  if ((a->n ? a->n : 1) * es > p->max_mem_alloc_size)
    return cli_error("%zu elements exceed %s's largest buffer (%llu bytes)", a->n, p->device_name,
                     (unsigned long long)p->max_mem_alloc_size);
  int rc = make_buffers(a, ctx, x, y);
  double med = 0, mn, mx;
  if (!rc && cli_bench_time(&med, &mn, &mx, 3, run_once, a)) rc = cli_fail_on("reduction", p->device_name);
  if (!rc) {
    cl_int err = clEnqueueReadBuffer(rcl_context_cl_queue(ctx), a->r, CL_TRUE, 0, es, value, 0, NULL, NULL);
    if (err != CL_SUCCESS) rc = (cli_error("reading the result: %s", rcl_cl_error_name(err)), CLI_EXIT_FAILED);
  }
  *seconds = med;
  if (a->x) clReleaseMemObject(a->x);
  if (a->y) clReleaseMemObject(a->y);
  if (a->r) clReleaseMemObject(a->r);
  return rc;
}

/* Parses the options into j. Returns 0, CLI_OPT_HELP or an exit status. */
static int reduce_parse(reduce_job *j, int argc, char **argv) {
  const char *n_text = NULL;
  const cli_opt opts[] = {
      CLI_VAL("op", &j->a.op, cli_opt_reduce_op, "sum|dot|nrm2", "the reduction (default: sum)"),
      CLI_OPT_DTYPE(&j->a.dt),
      CLI_VAL("mode", &j->a.opts.mode, cli_opt_reduce_mode, "ordered|exact",
              "ordered: the contract's fixed tree; exact: correctly rounded (default: ordered)"),
      CLI_STR("n", &n_text, "N", "the number of elements (required; k/M/G suffixes and 2^k accepted)"),
      CLI_VAL("seed", &j->seed, cli_opt_u64, "S", "the inputs' seed (default: 1)"),
      CLI_VAL("dist", &j->dist, cli_opt_gen_kind, "uniform|wide|cancel|special",
              "the inputs' distribution (default: uniform)"),
      CLI_OPT_DEVICE(&j->device, CLI_DEFAULT_DEVICE),
      CLI_SECTION("launch (any gives the same bits; default: the tuned or platform choice)"),
      CLI_VAL("local", &j->a.opts.local_size, cli_opt_size, "L", "work-group size, a power of two"),
      CLI_VAL("groups", &j->a.opts.num_groups, cli_opt_size, "G", "number of work-groups"),
      CLI_VAL("variant", &j->a.opts.variant, cli_opt_reduce_variant, "ndrange|task", "the implementation"),
      CLI_SECTION("several devices at once"),
      CLI_OPT_SPLIT(&j->split),
      CLI_SECTION("output"),
      CLI_OPT_NATIVE(&j->native),
      CLI_OPT_OUT(&j->out, "write the first device's result (one raw little-endian value) to FILE"),
      CLI_OPT_JSON(&j->json),
      CLI_END};
  const cli_cmd_spec spec = {
      "run reduce",
      "--op sum|dot|nrm2 --dtype f32|f64 --mode ordered|exact --n N\n"
      "                          [--seed S] [--dist uniform|wide|cancel|special] [--device D|all]\n"
      "                          [--local L] [--groups G] [--variant ndrange|task]\n"
      "                          [--split DEVICES [--split-weights W1:W2:...]] [--native] [--out FILE] [--json]",
      "Runs the reduction on the chosen devices (default: $REPROCL_DEVICE or device 0; 'all' for every\n"
      "device) and prints per device the result, the SHA-256 digest of its bytes, the time, and whether\n"
      "all devices and the host reference agree. Inputs are rcl_generate(dist, seed) (y uses seed+1).\n"
      "--native also runs the same kernels built with the vendor's default options (contraction\n"
      "allowed) and shows how far they drift. --split adds a row for the reduction cut over several devices\n"
      "(rcl_split_reduce) with each device's share of the elements.",
      opts,
      CLI_RUN_FINDING,
      0,
      0};
  int rc = cli_opt_parse(&spec, argc, argv, NULL, NULL);
  if (rc) return rc;
  if (!n_text) return cli_error("--n is required (the number of elements)");
  if ((rc = cli_parse_size(&j->a.n, "--n", n_text)) != 0) return rc;
  if (j->a.n > SIZE_MAX / rcl_dtype_size(j->a.dt) / 2) return cli_error("--n %zu is too large", j->a.n);
  return 0;
}

/* Sizes a device cannot hold are refused before host memory is allocated (and filled) for them. */
static int check_sizes(const reduce_job *j, const cli_devices *devs) {
  size_t bytes = j->a.n * rcl_dtype_size(j->a.dt);
  for (size_t i = 0; i < devs->count; i++) {
    const rcl_device_profile *p = rcl_context_profile(devs->ctx[i]);
    if (rcl_device_profile_support(p, RCL_FAMILY_REDUCE, j->a.dt, NULL) != RCL_SUPPORT_NONE &&
        bytes > p->max_mem_alloc_size)
      return cli_error("--n %zu needs %zu-byte buffers, above %s's CL_DEVICE_MAX_MEM_ALLOC_SIZE of %llu bytes", j->a.n,
                       bytes, devs->name[i], (unsigned long long)p->max_mem_alloc_size);
  }
  return 0;
}

/* The inputs x and y (rcl_generate with seed and seed+1) and the host reference's result. */
static int make_inputs(reduce_job *j, unsigned char **x, unsigned char **y) {
  size_t bytes = j->a.n * rcl_dtype_size(j->a.dt);
  *x = malloc(bytes ? bytes : 1);
  *y = malloc(bytes ? bytes : 1);
  if (!*x || !*y) return cli_error("cannot allocate %zu bytes of host memory for the inputs", 2 * bytes);
  rcl_generate(*x, j->a.dt, j->a.n, j->dist, j->seed);
  rcl_generate(*y, j->a.dt, j->a.n, j->dist, j->seed + 1);
  j->x = *x;
  j->y = *y;
  if (rcl_ref_reduce(j->ref, j->a.op, j->a.dt, j->a.opts.mode, j->a.n, *x, *y)) return cli_fail("host reference");
  cli_digest(j->refhex, j->ref, rcl_dtype_size(j->a.dt));
  return 0;
}

static void print_head(const reduce_job *j) {
  char buf[64];
  cli_format_value(buf, sizeof buf, j->ref, j->a.dt);
  printf("reduce %s %s %s n=%zu dist=%s seed=%llu\n", rcl_reduce_op_name(j->a.op), rcl_dtype_name(j->a.dt),
         rcl_reduce_mode_name(j->a.opts.mode), j->a.n, rcl_gen_kind_name(j->dist), (unsigned long long)j->seed);
  printf("  %-44s %-24s %-16s %s\n", "device", "result", "sha256", "time");
  printf("  %-44s %-24s %-16.16s %s\n", "host reference (C, -ffp-contract=off)", buf, j->refhex, "-");
}

/* The native build on the same device beside the reproducible result val: its line and jd's "native". */
static int native_row(reduce_job *j, json_t *jd, rcl_context *nctx, const unsigned char *val) {
  unsigned char nval[8];
  char hex[RCL_SHA256_HEX_SIZE], buf[64];
  double nsecs;
  int rc = run_on(nval, &nsecs, nctx, &j->a, j->x, j->y);
  if (rc) return rc;
  cli_drift d;
  cli_drift_compute(&d, val, nval, 1, j->a.dt);
  cli_digest(hex, nval, rcl_dtype_size(j->a.dt));
  cli_format_value(buf, sizeof buf, nval, j->a.dt);
  json_object_set_new(jd, "native",
                      json_pack("{s:s,s:s,s:f,s:b,s:o}", "result", buf, "sha256", hex, "time_s", nsecs, "differs",
                                d.differing != 0, "drift", cli_drift_json(&d)));
  if (!j->json)
    printf("  %-44s %-24s %-16.16s %.3f ms %s\n", "  native build", buf, hex, nsecs * 1e3,
           d.differing ? "differs from reproducible" : "same bits as reproducible");
  if (!j->json && d.differing) printf("  %-44s |diff| %.3g, %.0f ulp\n", "", d.max_abs, d.max_ulp);
  return 0;
}

/* Device i (and its native twin): runs, tallies, prints its line and fills its JSON entry jd (a cli_run_fn). */
static int device_row(void *job, cli_run *r, json_t *jd, size_t i) {
  reduce_job *j = job;
  size_t es = rcl_dtype_size(j->a.dt);
  unsigned char val[8];
  char hex[RCL_SHA256_HEX_SIZE], buf[64];
  double secs;
  int rc = run_on(val, &secs, r->devs.ctx[i], &j->a, j->x, j->y);
  if (rc) return rc;
  cli_digest(hex, val, es);
  int ok = memcmp(val, j->ref, es) == 0;
  if (cli_tally_add(&r->tally, hex, ok)) memcpy(j->first, val, es);
  cli_format_value(buf, sizeof buf, val, j->a.dt);
  json_object_set_new(jd, "result", json_string(buf));
  json_object_set_new(jd, "sha256", json_string(hex));
  json_object_set_new(jd, "time_s", json_real(secs));
  json_object_set_new(jd, "matches_reference", json_boolean(ok));
  if (!j->json)
    printf("  %-44.44s %-24s %-16.16s %.3f ms %s\n", r->devs.name[i], buf, hex, secs * 1e3,
           ok ? "= reference" : "DIFFERS from the reference");
  return j->native ? native_row(j, jd, r->ndevs.ctx[i], val) : 0;
}

static int split_once(void *p) {
  reduce_job *j = p;
  return rcl_split_reduce(j->sval, j->sr.s, j->a.op, j->a.dt, j->a.n, j->x, j->y, &j->a.opts);
}

/* The split's row (with --split): its result, digest, time (median of 3) and each device's share. */
static int split_row(reduce_job *j) {
  if (!j->sr.s) return 0;
  double med, mn, mx;
  size_t es = rcl_dtype_size(j->a.dt);
  char hex[RCL_SHA256_HEX_SIZE], buf[64];
  int rc = cli_split_tune(&j->sr, RCL_SPLIT_OP_REDUCE, j->a.dt, j->a.n);
  if (rc) return rc;
  if (cli_bench_time(&med, &mn, &mx, 3, split_once, j)) return cli_split_fail(&j->sr);
  cli_digest(hex, j->sval, es);
  cli_format_value(buf, sizeof buf, j->sval, j->a.dt);
  int ok = memcmp(j->sval, j->ref, es) == 0;
  if (!j->json)
    printf("  %-44.44s %-24s %-16.16s %.3f ms %s\n", j->sr.label, buf, hex, med * 1e3,
           ok ? "= reference" : "DIFFERS from the reference");
  cli_split_report(&j->sr, hex, med, ok, "elements", j->json, json_pack("{s:s}", "result", buf));
  return 0;
}

static void print_json(const reduce_job *j, const cli_tally *t, json_t *jdevs) {
  char buf[64];
  cli_format_value(buf, sizeof buf, j->ref, j->a.dt);
  json_t *top =
      json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:s,s:{s:s,s:s},s:o,s:I,s:I,s:b}", "command", "run reduce", "op",
                rcl_reduce_op_name(j->a.op), "dtype", rcl_dtype_name(j->a.dt), "mode",
                rcl_reduce_mode_name(j->a.opts.mode), "n", (json_int_t)j->a.n, "seed", (json_int_t)j->seed, "dist",
                rcl_gen_kind_name(j->dist), "reference", "result", buf, "sha256", j->refhex, "devices", jdevs, "ran",
                (json_int_t)t->ran, "unsupported", (json_int_t)t->unsupported, "all_agree", cli_tally_ok(t));
  if (j->out) json_object_set_new(top, "out", json_string(j->out));
  cli_split_json(&j->sr, top);
  cli_json_print(top);
}

static int cmd_run_reduce(int argc, char **argv) {
  reduce_job j = {
      .a = {.op = RCL_OP_SUM, .dt = RCL_F32, .opts = RCL_REDUCE_OPTIONS_INIT}, .seed = 1, .dist = RCL_GEN_UNIFORM};
  int rc = reduce_parse(&j, argc, argv);
  if (rc) return rc == CLI_OPT_HELP ? 0 : rc;
  unsigned char *x = NULL, *y = NULL;
  cli_run r;
  cli_run_init(&r);
  if ((rc = cli_run_open(&r, j.device, j.native)) || (rc = cli_split_open(&j.sr, &j.split)) ||
      (rc = check_sizes(&j, &r.devs)) || (rc = make_inputs(&j, &x, &y)))
    goto out;
  if (!j.json) print_head(&j);
  if ((rc = cli_run_each(&r, RCL_FAMILY_REDUCE, j.a.dt, j.json, 44, device_row, &j)) || (rc = split_row(&j)) ||
      (rc = cli_tally_write(&r.tally, j.out, j.first, rcl_dtype_size(j.a.dt))))
    goto out;
  if (j.json) {
    print_json(&j, &r.tally, json_incref(r.jdevs));
  } else {
    if (j.out) printf("wrote the result (%zu bytes, sha256 %s) to %s\n", rcl_dtype_size(j.a.dt), r.tally.first, j.out);
    cli_tally_print(&r.tally, r.devs.count);
    cli_split_summary(&j.sr);
  }
  rc = cli_split_status(&j.sr, cli_tally_status(&r.tally));
out:
  cli_split_close(&j.sr);
  cli_run_close(&r);
  free(x);
  free(y);
  return rc;
}

/* The kernels of `reprocl run`, each a command of its own ("run reduce"; listed in run_spec's text). */
static const cli_command run_kernels[] = {{"reduce", cmd_run_reduce, NULL}, {NULL, NULL, NULL}};

static const cli_opt run_opts[] = {CLI_END};
static const cli_cmd_spec run_spec = {
    "run",
    "KERNEL [options]",
    "Runs one kernel on the chosen devices and compares the results by SHA-256 digest with each other and with\n"
    "the host reference of its contract. `reprocl run KERNEL --help` gives the kernel's options.\n\n"
    "kernels:\n"
    "  reduce      sum, dot or nrm2 of generated data (ordered or exact), per device\n\n"
    "The other families have commands of their own: reprocl stencil, spmv, cg, md.",
    run_opts,
    CLI_RUN_FINDING,
    0,
    0};

int cmd_run(int argc, char **argv) {
  if (argc >= 2 && argv[1][0] != '-') {
    for (const cli_command *k = run_kernels; k->name; k++)
      if (!strcmp(k->name, argv[1])) return k->fn(argc - 1, argv + 1);
    return cli_error("unknown kernel family \"%s\" (run supports: reduce; see also reprocl stencil, spmv, md)",
                     argv[1]);
  }
  if (argc >= 2) { /* an option before the kernel: --help, or an error */
    int rc = cli_opt_parse(&run_spec, argc, argv, NULL, NULL);
    if (rc) return rc == CLI_OPT_HELP ? 0 : rc;
  }
  cli_opt_help(stderr, &run_spec);
  return cli_error("give a kernel: reprocl run KERNEL [options]");
}
