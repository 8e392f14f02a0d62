/* reprocl stencil: a stencil or SOR run on one or every device, compared by SHA-256 digest with each other
 * and with the host reference of the contract; --native adds the vendor-default build beside it and shows
 * its drift (and a difference image). Inputs from a generator or a file (raw, PGM, PNG); the result can be
 * written raw and as an image. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run_common.h"

typedef struct {
  int sor;
  rcl_stencil_desc st;
  rcl_sor_desc sd;
  rcl_stencil_options opts;
  rcl_dtype dt;
  size_t w, h, iters;
  const void *in;  /* w*h values */
  const void *rhs; /* SOR b or NULL */
} job;

typedef struct {
  double v[25];
  size_t n;
} weight_list;

/* What stencil was asked for (the options), the job they describe, and the results. */
typedef struct {
  const char *kind, *init, *input, *rhs_spec, *device, *out, *image, *diff_image;
  const char *grid_s, *iters_s, *omega_s; /* options whose presence matters, parsed after the others */
  weight_list weights;
  double bval;
  rcl_boundary bc;
  uint64_t seed;
  int native, json, no_reference, reference;
  job j;
  rcl_grid in, rhs;
  size_t n, bytes;                           /* points, bytes of a grid */
  unsigned char *ref, *first, *val, *nval;   /* grids: the reference, the first device, a device, its native build */
  unsigned char ref_res[8], res[8], nres[8]; /* SOR residuals */
  char refhex[RCL_SHA256_HEX_SIZE];
  cli_split_opts split;
  cli_split_run sr;
} stencil_cmd;

/* Allocates the buffers of a run on ctx: a (the input), b (the result), s (a stencil's scratch), rhs, res. */
static int make_buffers(cl_mem m[5], rcl_context *ctx, const job *j) {
  size_t es = rcl_dtype_size(j->dt), bytes = j->w * j->h * es;
  cl_context clc = rcl_context_cl_context(ctx);
  cl_int err = CL_SUCCESS;
  m[0] = clCreateBuffer(clc, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, (void *)j->in, &err);
  m[1] = m[0] ? clCreateBuffer(clc, CL_MEM_READ_WRITE, bytes, NULL, &err) : NULL;
  m[2] = m[1] && !j->sor ? clCreateBuffer(clc, CL_MEM_READ_WRITE, bytes, NULL, &err) : NULL;
  m[3] =
      m[1] && j->rhs ? clCreateBuffer(clc, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, (void *)j->rhs, &err) : NULL;
  m[4] = m[1] && j->sor ? clCreateBuffer(clc, CL_MEM_READ_WRITE, es, NULL, &err) : NULL;
  if (!m[1] || (!j->sor && !m[2]) || (j->rhs && !m[3]) || (j->sor && !m[4]))
    return cli_error("cannot allocate device buffers for a %zux%zu grid on %s: %s", j->w, j->h,
                     rcl_context_profile(ctx)->device_name, rcl_cl_error_name(err));
  return 0;
}

/* One iteration that builds the program and, on PoCL, the kernel for this work-group size. */
static int warm_up(rcl_context *ctx, const job *j, cl_mem a, cl_mem b, cl_mem rhs) {
  cl_command_queue q = rcl_context_cl_queue(ctx);
  size_t bytes = j->w * j->h * rcl_dtype_size(j->dt);
  if (j->sor) {
    if (clEnqueueCopyBuffer(q, a, b, 0, 0, bytes, 0, NULL, NULL) != CL_SUCCESS ||
        rcl_sor_enqueue(b, 0, 0, ctx, &j->sd, j->dt, j->w, j->h, 1, rhs, 0, 0, &j->opts, NULL))
      return 1;
  } else if (rcl_stencil_enqueue(b, 0, 0, ctx, &j->st, j->dt, j->w, j->h, 1, a, 0, 0, NULL, &j->opts, NULL)) {
    return 1;
  }
  return clFinish(q) != CL_SUCCESS;
}

/* One run on one context: the final grid into result (w*h values), SOR's residual into *residual,
 * the seconds of the timed run (after a one-iteration warm-up that builds the kernels). */
static int run_on(void *result, void *residual, double *secs, rcl_context *ctx, const job *j) {
  size_t es = rcl_dtype_size(j->dt), bytes = j->w * j->h * es;
  cl_command_queue q = rcl_context_cl_queue(ctx);
  cl_mem m[5] = {NULL, NULL, NULL, NULL, NULL}, a, b, s, rhs, res;
  int rc = make_buffers(m, ctx, j);
  a = m[0], b = m[1], s = m[2], rhs = m[3], res = m[4];
  if (!rc) rc = warm_up(ctx, j, a, b, rhs);
  double t0 = cli_now();
  if (!rc) {
    if (j->sor)
      rc = rcl_sor_enqueue(a, 0, 0, ctx, &j->sd, j->dt, j->w, j->h, j->iters, rhs, 0, 0, &j->opts, NULL);
    else
      rc = rcl_stencil_enqueue(b, 0, 0, ctx, &j->st, j->dt, j->w, j->h, j->iters, a, 0, 0, s, &j->opts, NULL);
    if (!rc && clFinish(q) != CL_SUCCESS) rc = 1;
  }
  *secs = cli_now() - t0;
  if (!rc && j->sor)
    rc = rcl_sor_residual_enqueue(res, 0, ctx, &j->sd, j->dt, j->w, j->h, a, 0, 0, rhs, 0, 0, &j->opts, NULL);
  if (!rc && clEnqueueReadBuffer(q, j->sor ? a : b, CL_TRUE, 0, bytes, result, 0, NULL, NULL) != CL_SUCCESS) rc = 1;
  if (!rc && j->sor && clEnqueueReadBuffer(q, res, CL_TRUE, 0, es, residual, 0, NULL, NULL) != CL_SUCCESS) rc = 1;
  if (rc == 1 || rc < 0) rc = cli_fail_on(j->sor ? "SOR" : "stencil", rcl_context_profile(ctx)->device_name);
  for (int k = 0; k < 5; k++)
    if (m[k]) clReleaseMemObject(m[k]);
  return rc;
}

/* --weights "1,2.5,-3": up to 25 numbers into a weight_list. */
static int opt_weights(void *target, const char *opt, const char *s) {
  weight_list *l = target;
  size_t max = sizeof l->v / sizeof l->v[0];
  char buf[64];
  l->n = 0;
  for (const char *p = s;;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (l->n == max) return cli_error("%s takes at most %zu values", opt, max);
    if (len == 0 || len >= sizeof buf) return cli_error("%s expects comma-separated numbers, got \"%s\"", opt, s);
    memcpy(buf, p, len);
    buf[len] = '\0';
    int rc = cli_parse_double(&l->v[l->n++], opt, buf);
    if (rc) return rc;
    if (!c) return 0;
    p = c + 1;
  }
}

/* The grid from a generator name or a file. */
static int load_grid(rcl_grid *g, const char *spec, int have_dims, size_t w, size_t h, rcl_dtype dt, uint64_t seed,
                     const char *opt) {
  rcl_grid_init init;
  if (!rcl_grid_init_parse(&init, spec)) {
    if (!have_dims) return cli_error("%s %s needs --grid WxH", opt, spec);
    if (rcl_grid_alloc(g, dt, w, h) || rcl_grid_generate(g, init, seed))
      return cli_error("%s: %s", opt, rcl_error_last()); /* too large for the host, too: an input error */
    return 0;
  }
  if (rcl_grid_read(g, spec, RCL_GRID_FORMAT_AUTO, dt, have_dims ? w : 0, have_dims ? h : 0))
    return cli_error("%s: %s", opt, rcl_error_last());
  return 0;
}

/* FILE.png -> FILE-3.png when several devices each write one. */
static void indexed_name(char *out, size_t size, const char *path, size_t index, int several) {
  const char *dot = strrchr(path, '.');
  if (!several || !dot || strchr(dot, '/')) {
    snprintf(out, size, "%s", path);
    return;
  }
  snprintf(out, size, "%.*s-%zu%s", (int)(dot - path), path, index, dot);
}

static json_t *config_json(const rcl_stencil_options *o) {
  return json_pack("{s:s,s:[I,I],s:[I,I],s:[I,I]}", "variant", rcl_stencil_variant_name(o->variant), "local_size",
                   (json_int_t)o->local_size[0], (json_int_t)o->local_size[1], "tile", (json_int_t)o->tile[0],
                   (json_int_t)o->tile[1], "points_per_item", (json_int_t)o->points_per_item[0],
                   (json_int_t)o->points_per_item[1]);
}

static void config_text(char *buf, size_t size, const rcl_stencil_options *o) {
  if (o->variant == RCL_STENCIL_TASK)
    snprintf(buf, size, "task");
  else if (o->variant == RCL_STENCIL_PLAIN && o->points_per_item[0] * o->points_per_item[1] > 1)
    snprintf(buf, size, "plain %zux%zu x %zux%zu", o->local_size[0], o->local_size[1], o->points_per_item[0],
             o->points_per_item[1]);
  else if (o->variant == RCL_STENCIL_PLAIN)
    snprintf(buf, size, "plain %zux%zu", o->local_size[0], o->local_size[1]);
  else
    snprintf(buf, size, "tiled %zux%zu x %zux%zu", o->local_size[0], o->local_size[1], o->points_per_item[0],
             o->points_per_item[1]);
}

static const char stencil_synopsis[] =
    "--kind nine|laplace5|general|sor (--grid WxH [--init I] [--seed S] | --input FILE)\n"
    "                       --iters N [--weights W,W,...] [--omega W] [--rhs FILE|INIT]\n"
    "                       [--boundary fixed|periodic|edge] [--boundary-value V] [--dtype f32|f64]\n"
    "                       [--device D|all] [--variant auto|plain|tiled|task] [--local XxY] [--tile XxY]\n"
    "                       [--points XxY] [--split DEVICES [--split-weights W1:W2:...]] [--native]\n"
    "                       [--no-reference] [--out FILE] [--image FILE] [--diff-image FILE] [--json]";

static const char stencil_about[] =
    "Runs N iterations of a 2D stencil (or N red-black SOR sweeps) on the chosen devices (default:\n"
    "$REPROCL_DEVICE or device 0; 'all' for every device) and prints per device the SHA-256 digest of the\n"
    "final grid, the time, and whether all devices and the host reference agree. --split adds a row for\n"
    "the run cut into blocks of rows over several devices (rcl_split_stencil, rcl_split_sor: halo rows\n"
    "exchanged) with each device's share of the grid rows.";

/* Parses the options into c. Returns 0, CLI_OPT_HELP or an exit status. */
static int stencil_parse(stencil_cmd *c, int argc, char **argv) {
  job *j = &c->j;
  const cli_opt opts[] = {
      CLI_SECTION("what to compute"),
      CLI_STR("kind", &c->kind, "nine|laplace5|general|sor",
              "nine: SHOC Stencil2D, wc*c + wa*(N+S+E+W) + wd*(NE+SE+NW+SW); --weights wc,wa,wd\n"
              "(default 0.25,0.15,0.05)\n"
              "laplace5: a Jacobi sweep of the 5-point Laplacian: (N+S+E+W)/4, as the general 3x3\n"
              "stencil with weights 0,.25,0,.25,0,.25,0,.25,0\n"
              "general: --weights with 9 (3x3) or 25 (5x5) values, row-major from the top-left\n"
              "neighbour; 9 or 25 weights without --kind select it too\n"
              "sor: red-black SOR for Laplace/Poisson, --omega in (0, 2) (default 1.25); --rhs gives\n"
              "b (h^2 f) as a file or a generator; prints the residual norm too"),
      CLI_STR("iters", &c->iters_s, "N", "iterations, or SOR sweeps (required)"),
      CLI_VAL("weights", &c->weights, opt_weights, "W,W,...", "the stencil's weights (see --kind)"),
      CLI_STR("omega", &c->omega_s, "W", "SOR's relaxation factor, in (0, 2) (default: 1.25)"),
      CLI_STR("rhs", &c->rhs_spec, "FILE|INIT", "SOR's b (h^2 f): a file or a generator as for --init"),
      CLI_VAL("boundary", &c->bc, cli_opt_boundary, "fixed|periodic|edge", "the boundary (default: fixed)"),
      CLI_VAL("boundary-value", &c->bval, cli_opt_double, "V", "the value outside a fixed boundary (default: 0)"),
      CLI_OPT_DTYPE(&j->dt),
      CLI_SECTION("input"),
      CLI_STR("grid", &c->grid_s, "WxH", "grid size for a generator (--init), or of a raw --input file"),
      CLI_STR("init", &c->init, "shoc|random|point|zero", "the generator (default shoc: x*y; random uses --seed)"),
      CLI_VAL("seed", &c->seed, cli_opt_u64, "S", "seed of the random generator (default: 42)"),
      CLI_STR("input", &c->input, "FILE",
              "raw little-endian f32/f64 (needs --grid), PGM (P2/P5) or greyscale PNG (values\n"
              "sample/maxval in [0, 1])"),
      CLI_SECTION("devices and launch (any launch gives the same bits; default: the tuned or platform choice)"),
      CLI_OPT_DEVICE(&c->device, CLI_DEFAULT_DEVICE),
      CLI_VAL("variant", &j->opts.variant, cli_opt_stencil_variant, "auto|plain|tiled|task", "the implementation"),
      CLI_VAL("local", j->opts.local_size, cli_opt_dims, "XxY", "work-group size"),
      CLI_VAL("tile", j->opts.tile, cli_opt_dims, "XxY", "tile of the tiled variant"),
      CLI_VAL("points", j->opts.points_per_item, cli_opt_dims, "XxY", "points per work-item"),
      CLI_OPT_SPLIT(&c->split),
      CLI_OPT_NATIVE(&c->native),
      CLI_FLAG("no-reference", &c->no_reference, "skip the host reference (large runs); devices are still compared"),
      CLI_SECTION("output"),
      CLI_OPT_OUT(&c->out, "the first device's final grid, raw little-endian"),
      CLI_STR("image", &c->image, "FILE", "the same as an 8-bit .png or .pgm image (scaled to its finite range)"),
      CLI_STR("diff-image", &c->diff_image, "FILE",
              "every point where native differs from reproducible (with --native), else where a\n"
              "device differs from the reference (with --no-reference: from the first device),\n"
              "in red (.png) or white (.pgm); with several devices the device index is added\n"
              "to the name"),
      CLI_OPT_JSON(&c->json),
      CLI_END};
  const cli_cmd_spec spec = {"stencil", stencil_synopsis, stencil_about, opts, CLI_RUN_FINDING, 0, 0};
  int rc = cli_opt_parse(&spec, argc, argv, NULL, NULL);
  if (!rc && c->grid_s) rc = cli_parse_dims(&j->w, &j->h, "--grid", c->grid_s);
  if (!rc && c->iters_s) rc = cli_parse_size(&j->iters, "--iters", c->iters_s);
  if (!rc && c->omega_s) rc = cli_parse_double(&j->sd.omega, "--omega", c->omega_s);
  c->reference = !c->no_reference;
  return rc;
}

/* The stencil or SOR of --kind and --weights. */
static int set_kind(stencil_cmd *c) {
  job *j = &c->j;
  size_t nw = c->weights.n;
  if (!c->kind) c->kind = nw == 9 || nw == 25 ? "general" : "nine";
  if (!strcmp(c->kind, "sor")) {
    j->sor = 1;
    if (nw) return cli_error("--weights does not apply to --kind sor");
  } else if (!strcmp(c->kind, "nine")) {
    if (nw && nw != 3)
      return cli_error("--kind nine takes 3 weights (wc,wa,wd), got %zu (9 or 25 weights are --kind general)", nw);
    for (size_t k = 0; k < nw; k++) j->st.weights[k] = c->weights.v[k];
  } else if (!strcmp(c->kind, "laplace5")) {
    if (nw) return cli_error("--kind laplace5 has fixed weights; use --kind general --weights for others");
    j->st.kind = RCL_STENCIL_GENERAL;
    j->st.radius = 1;
    memset(j->st.weights, 0, sizeof j->st.weights);
    j->st.weights[1] = j->st.weights[3] = j->st.weights[5] = j->st.weights[7] = 0.25;
  } else if (!strcmp(c->kind, "general")) {
    if (nw != 9 && nw != 25)
      return cli_error("--kind general needs --weights with 9 (3x3) or 25 (5x5) values, got %zu", nw);
    j->st.kind = RCL_STENCIL_GENERAL;
    j->st.radius = nw == 9 ? 1 : 2;
    for (size_t k = 0; k < nw; k++) j->st.weights[k] = c->weights.v[k];
  } else {
    return cli_error("unknown --kind \"%s\" (expected nine, laplace5, general or sor)", c->kind);
  }
  return 0;
}

/* What to compute, checked, and its input grids loaded. */
static int stencil_prepare(stencil_cmd *c) {
  job *j = &c->j;
  int rc = set_kind(c);
  if (rc) return rc;
  if (c->omega_s && !j->sor) return cli_error("--omega applies to --kind sor only");
  if (c->rhs_spec && !j->sor) return cli_error("--rhs applies to --kind sor only");
  if (j->sor && !(j->sd.omega > 0 && j->sd.omega < 2))
    return cli_error("--omega %g is outside (0, 2): SOR diverges there", j->sd.omega);
  if (!c->iters_s) return cli_error("--iters is required (iterations, or SOR sweeps)");
  if (!c->input && !c->grid_s) return cli_error("give --grid WxH (with --init) or --input FILE");
  j->st.boundary = j->sd.boundary = c->bc;
  j->st.boundary_value = j->sd.boundary_value = c->bval;
  const char *what = c->input ? c->input : c->init;
  if ((rc = load_grid(&c->in, what, !!c->grid_s, j->w, j->h, j->dt, c->seed, c->input ? "--input" : "--init")))
    return rc;
  j->w = c->in.width;
  j->h = c->in.height;
  j->in = c->in.data;
  if (c->rhs_spec && (rc = load_grid(&c->rhs, c->rhs_spec, 1, j->w, j->h, j->dt, c->seed + 1, "--rhs"))) return rc;
  j->rhs = c->rhs.data;
  c->n = j->w * j->h;
  c->bytes = c->n * rcl_dtype_size(j->dt);
  c->val = malloc(c->bytes);
  c->nval = c->native ? malloc(c->bytes) : NULL;
  if (!c->val || (c->native && !c->nval))
    return cli_error("cannot allocate %zu bytes of host memory for the grids", 2 * c->bytes);
  return 0;
}

/* The contract, on the host. */
static int compute_reference(stencil_cmd *c) {
  const job *j = &c->j;
  c->ref = malloc(c->bytes);
  if (!c->ref) return cli_error("cannot allocate %zu bytes for the host reference (try --no-reference)", c->bytes);
  int r;
  if (j->sor) {
    memcpy(c->ref, j->in, c->bytes);
    r = rcl_ref_sor(c->ref, c->ref_res, &j->sd, j->dt, j->w, j->h, j->iters, j->rhs);
  } else {
    r = rcl_ref_stencil(c->ref, &j->st, j->dt, j->w, j->h, j->iters, j->in);
  }
  if (r) return r == RCL_ERR_OUT_OF_MEMORY ? cli_fail("host reference") : cli_error("%s", rcl_error_last());
  cli_digest(c->refhex, c->ref, c->bytes);
  return 0;
}

static const char *kind_name(const stencil_cmd *c) { return c->j.sor ? "sor" : c->kind; }
static const char *input_name(const stencil_cmd *c) { return c->input ? c->input : c->init; }

static void print_head(const stencil_cmd *c) {
  const job *j = &c->j;
  char buf[64];
  printf("stencil %s %s %zux%zu, %zu %s%s, boundary %s", kind_name(c), rcl_dtype_name(j->dt), j->w, j->h, j->iters,
         j->sor ? "sweep" : "iteration", j->iters == 1 ? "" : "s", rcl_boundary_name(c->bc));
  if (j->sor) printf(", omega %g%s", j->sd.omega, j->rhs ? ", with b" : "");
  printf(", input %s\n", input_name(c));
  printf("  %-44s %-16s %-11s %s\n", "device", "sha256", "time", j->sor ? "residual" : "");
  if (c->reference) {
    cli_format_value(buf, sizeof buf, c->ref_res, j->dt);
    printf("  %-44s %-16.16s %-11s %s\n", "host reference (C, -ffp-contract=off)", c->refhex, "-", j->sor ? buf : "");
  }
}

/* The native build beside the reproducible grid c->val: its line and jd's "native". */
static int native_row(stencil_cmd *c, json_t *jd, rcl_context *nctx) {
  const job *j = &c->j;
  char hex[RCL_SHA256_HEX_SIZE], buf[64];
  double nsecs;
  int rc = run_on(c->nval, c->nres, &nsecs, nctx, j);
  if (rc) return rc;
  cli_drift d;
  cli_drift_compute(&d, c->val, c->nval, c->n, j->dt);
  cli_digest(hex, c->nval, c->bytes);
  json_t *jn = json_pack("{s:s,s:f,s:b,s:o}", "sha256", hex, "time_s", nsecs, "differs", d.differing != 0, "drift",
                         cli_drift_json(&d));
  json_object_set_new(jd, "native", jn);
  if (j->sor) {
    cli_format_value(buf, sizeof buf, c->nres, j->dt);
    json_object_set_new(jn, "residual", json_string(buf));
  }
  if (c->json) return 0;
  printf("  %-44s %-16.16s %8.3f ms %s%s", "  native build", hex, nsecs * 1e3, j->sor ? buf : "", j->sor ? " " : "");
  if (d.differing)
    printf("differs at %zu of %zu points: max |diff| %.3g, max %.0f ulp\n", d.differing, c->n, d.max_abs, d.max_ulp);
  else
    printf("same bits as reproducible\n");
  return 0;
}

/* --diff-image of device i: c->val against the native build, the reference or the first device. */
static int diff_image(stencil_cmd *c, json_t *jd, const cli_devices *devs, size_t i) {
  const job *j = &c->j;
  rcl_grid ga = {j->dt, j->w, j->h, c->val}, gb = {j->dt, j->w, j->h, NULL};
  if (c->native)
    gb.data = c->nval;
  else if (c->reference)
    gb.data = c->ref;
  else if (i > 0)
    gb.data = c->first; /* without a reference: against the first device */
  if (!c->diff_image || !gb.data) return 0;
  char name[1024];
  size_t differing;
  indexed_name(name, sizeof name, c->diff_image, devs->index[i], devs->count > 1);
  if (rcl_grid_write_diff_image(name, RCL_GRID_FORMAT_AUTO, &ga, &gb, &differing))
    return cli_error("--diff-image: %s", rcl_error_last());
  json_object_set_new(jd, "diff_image", json_pack("{s:s,s:I}", "path", name, "differing", (json_int_t)differing));
  if (!c->json)
    printf("  %-44s %s: %zu differing point(s) against %s\n", "", name, differing,
           c->native      ? "native"
           : c->reference ? "the reference"
                          : "the first device");
  return 0;
}

/* Device i's grid c->val (and SOR residual), run with launch `used`: tallied, printed, in its JSON entry jd. */
static int device_result(stencil_cmd *c, cli_tally *t, json_t *jd, const char *name, const rcl_stencil_options *used,
                         double secs) {
  const job *j = &c->j;
  char hex[RCL_SHA256_HEX_SIZE], buf[64] = "", cfg[64];
  cli_digest(hex, c->val, c->bytes);
  int ok = !c->reference || (memcmp(c->val, c->ref, c->bytes) == 0 &&
                             (!j->sor || memcmp(c->res, c->ref_res, rcl_dtype_size(j->dt)) == 0));
  if (cli_tally_add(t, hex, ok)) {
    if (!(c->first = malloc(c->bytes))) return cli_error("out of host memory");
    memcpy(c->first, c->val, c->bytes);
  }
  config_text(cfg, sizeof cfg, used);
  json_object_set_new(jd, "sha256", json_string(hex));
  json_object_set_new(jd, "time_s", json_real(secs));
  json_object_set_new(jd, "config", config_json(used));
  if (c->reference) json_object_set_new(jd, "matches_reference", json_boolean(ok));
  if (j->sor) {
    cli_format_value(buf, sizeof buf, c->res, j->dt);
    json_object_set_new(jd, "residual", json_string(buf));
  }
  if (!c->json)
    printf("  %-44.44s %-16.16s %8.3f ms %s%s%s (%s)\n", name, hex, secs * 1e3, buf, j->sor ? " " : "",
           !c->reference ? ""
           : ok          ? "= reference"
                         : "DIFFERS from the reference",
           cfg);
  return 0;
}

/* Device i (and its native twin): checks the launch, runs, reports, writes its difference image (a cli_run_fn). */
static int device_row(void *cmd, cli_run *r, json_t *jd, size_t i) {
  stencil_cmd *c = cmd;
  const cli_devices *devs = &r->devs;
  const job *j = &c->j;
  const rcl_stencil_desc *st = j->sor ? NULL : &j->st;
  rcl_stencil_options used;
  double secs;
  /* Options the device cannot launch are a usage error (exit 2), found before anything runs. */
  if (rcl_stencil_resolve_launch(&used, devs->ctx[i], j->dt, st, j->w, j->h, &j->opts))
    return cli_error("%s", rcl_error_last());
  int rc = run_on(c->val, c->res, &secs, devs->ctx[i], j);
  if (rc) return rc;
  /* What the run used (after it: a first run may have tuned the launch for this grid size). */
  if (rcl_stencil_resolve_launch(&used, devs->ctx[i], j->dt, st, j->w, j->h, &j->opts))
    return cli_error("launch configuration on %s: %s", devs->name[i], rcl_error_last());
  if ((rc = device_result(c, &r->tally, jd, devs->name[i], &used, secs)) != 0) return rc;
  if (c->native && (rc = native_row(c, jd, r->ndevs.ctx[i])) != 0) return rc;
  return diff_image(c, jd, devs, i);
}

/* iters iterations (SOR sweeps) over the split into c->val (and c->res). */
static int split_run(stencil_cmd *c, size_t iters) {
  const job *j = &c->j;
  if (!j->sor) return rcl_split_stencil(c->val, c->sr.s, &j->st, j->dt, j->w, j->h, iters, j->in);
  memcpy(c->val, j->in, c->bytes);
  return rcl_split_sor(c->val, c->res, c->sr.s, &j->sd, j->dt, j->w, j->h, iters, j->rhs);
}

/* The split's row (with --split): the grid cut into blocks of rows over the split's devices (timed after a
 * one-iteration warm-up that builds the kernels, as the devices' rows), compared with the reference (with
 * --no-reference: with the first device). */
static int split_row(stencil_cmd *c) {
  const job *j = &c->j;
  if (!c->sr.s) return 0;
  double t0 = 0;
  int rc = cli_split_tune(&c->sr, RCL_SPLIT_OP_STENCIL, j->dt, j->h);
  if (rc) return rc;
  rc = split_run(c, 1);
  if (!rc) t0 = cli_now(), rc = split_run(c, j->iters);
  double secs = cli_now() - t0;
  if (rc) return cli_split_fail(&c->sr);
  char hex[RCL_SHA256_HEX_SIZE], buf[64] = "";
  cli_digest(hex, c->val, c->bytes);
  const unsigned char *want = c->reference ? c->ref : c->first;
  int ok = !want || (memcmp(c->val, want, c->bytes) == 0 &&
                     (!j->sor || !c->reference || memcmp(c->res, c->ref_res, rcl_dtype_size(j->dt)) == 0));
  if (j->sor) cli_format_value(buf, sizeof buf, c->res, j->dt);
  if (!c->json)
    printf("  %-44.44s %-16.16s %8.3f ms %s%s%s\n", c->sr.label, hex, secs * 1e3, buf, j->sor ? " " : "",
           !want ? ""
           : ok  ? (c->reference ? "= reference" : "= first device")
                 : (c->reference ? "DIFFERS from the reference" : "DIFFERS from the first device"));
  cli_split_report(&c->sr, hex, secs, ok, "grid rows", c->json, j->sor ? json_pack("{s:s}", "residual", buf) : NULL);
  return 0;
}

/* --out and --image: the first device's grid, else the reference's. */
static int write_outputs(const stencil_cmd *c) {
  const unsigned char *result = c->first ? c->first : c->ref;
  rcl_grid gr = {c->j.dt, c->j.w, c->j.h, (void *)result};
  if (c->out && result && rcl_grid_write_raw(&gr, c->out)) return cli_error("--out: %s", rcl_error_last());
  if (c->image && result && rcl_grid_write_image(&gr, c->image, RCL_GRID_FORMAT_AUTO, 0, 0))
    return cli_error("--image: %s", rcl_error_last());
  return 0;
}

static void print_json(const stencil_cmd *c, const cli_tally *t, json_t *jdevs) {
  const job *j = &c->j;
  json_t *top =
      json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:s,s:s,s:o,s:I,s:I,s:b}", "command", "stencil", "kind", kind_name(c),
                "dtype", rcl_dtype_name(j->dt), "width", (json_int_t)j->w, "height", (json_int_t)j->h, "iterations",
                (json_int_t)j->iters, "boundary", rcl_boundary_name(c->bc), "input", input_name(c), "devices", jdevs,
                "ran", (json_int_t)t->ran, "unsupported", (json_int_t)t->unsupported, "all_agree", cli_tally_ok(t));
  if (j->sor) json_object_set_new(top, "omega", json_real(j->sd.omega));
  if (c->reference) {
    json_t *jr = json_pack("{s:s}", "sha256", c->refhex);
    if (j->sor) {
      char buf[64];
      cli_format_value(buf, sizeof buf, c->ref_res, j->dt);
      json_object_set_new(jr, "residual", json_string(buf));
    }
    json_object_set_new(top, "reference", jr);
  }
  cli_split_json(&c->sr, top);
  cli_json_print(top);
}

static void print_summary(const stencil_cmd *c, const cli_tally *t, size_t devices) {
  printf("%s: %zu of %zu device(s) ran%s%s\n", cli_tally_ok(t) ? "AGREE" : "DISAGREE", t->ran, devices,
         !c->reference        ? ", compared with each other (no host reference)"
         : t->agree == t->ran ? ", all match the host reference"
                              : ", some differ from the host reference",
         t->unsupported ? " (the others cannot run this dtype bit-exactly)" : "");
}

int cmd_stencil(int argc, char **argv) {
  stencil_cmd c;
  memset(&c, 0, sizeof c);
  c.j.st = (rcl_stencil_desc)RCL_STENCIL_DESC_INIT;
  c.j.sd = (rcl_sor_desc)RCL_SOR_DESC_INIT;
  c.j.opts = (rcl_stencil_options)RCL_STENCIL_OPTIONS_INIT;
  c.j.dt = RCL_F32;
  c.init = "shoc";
  c.bc = RCL_BOUNDARY_FIXED;
  c.seed = 42;
  int rc = stencil_parse(&c, argc, argv);
  if (rc) return rc == CLI_OPT_HELP ? 0 : rc;
  cli_run r;
  cli_run_init(&r);
  if ((rc = stencil_prepare(&c)) || (c.reference && (rc = compute_reference(&c))) ||
      (rc = cli_run_open(&r, c.device, c.native)) || (rc = cli_split_open(&c.sr, &c.split)))
    goto out;
  if (!c.json) print_head(&c);
  rc = cli_run_each(&r, RCL_FAMILY_STENCIL, c.j.dt, c.json, 44, device_row, &c);
  if (!rc) rc = split_row(&c);
  if (!rc) rc = write_outputs(&c);
  if (rc) goto out;
  if (c.json) {
    print_json(&c, &r.tally, json_incref(r.jdevs));
  } else {
    print_summary(&c, &r.tally, r.devs.count);
    cli_split_summary(&c.sr);
  }
  rc = cli_split_status(&c.sr, cli_tally_status(&r.tally));
out:
  cli_split_close(&c.sr);
  cli_run_close(&r);
  free(c.ref);
  free(c.first);
  free(c.val);
  free(c.nval);
  rcl_grid_free(&c.in);
  rcl_grid_free(&c.rhs);
  return rc;
}
