/* reprocl stencil: a stencil or SOR run on one or every device, compared by SHA-256 digest with each other
 * and with the host reference of the contract; --native adds the vendor-default build beside it and shows
 * its drift (and a difference image). Inputs from a generator or a file (raw, PGM, PNG); the result can be
 * written raw and as an image. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void) {
  printf("usage: reprocl stencil --kind nine|laplace5|general|sor (--grid WxH [--init I] [--seed S] | --input FILE)\n"
         "                       --iters N [--weights W,W,...] [--omega W] [--rhs FILE|INIT]\n"
         "                       [--boundary fixed|periodic|edge] [--boundary-value V] [--dtype f32|f64]\n"
         "                       [--device D|all] [--variant auto|plain|tiled|task] [--local XxY] [--tile XxY]\n"
         "                       [--points XxY] [--native] [--no-reference] [--out FILE] [--image FILE]\n"
         "                       [--diff-image FILE] [--json]\n\n"
         "Runs N iterations of a 2D stencil (or N red-black SOR sweeps) on the chosen devices (default:\n"
         "$REPROCL_DEVICE or device 0; 'all' for every device) and prints per device the SHA-256 digest of the\n"
         "final grid, the time, and whether all devices and the host reference agree.\n\n"
         "  --kind nine      SHOC Stencil2D: wc*c + wa*(N+S+E+W) + wd*(NE+SE+NW+SW); --weights wc,wa,wd\n"
         "                   (default 0.25,0.15,0.05)\n"
         "  --kind laplace5  a Jacobi sweep of the 5-point Laplacian: (N+S+E+W)/4, as the general 3x3 stencil\n"
         "                   with weights 0,.25,0,.25,0,.25,0,.25,0\n"
         "  --kind general   --weights with 9 (3x3) or 25 (5x5) values, row-major from the top-left neighbour;\n"
         "                   9 or 25 weights without --kind select it too\n"
         "  --kind sor       red-black SOR for Laplace/Poisson, --omega in (0, 2) (default 1.25); --rhs gives\n"
         "                   b (h^2 f) as a file or a generator; prints the residual norm too\n"
         "  --grid WxH       grid size for a generator (--init shoc|random|point|zero, default shoc: x*y;\n"
         "                   random uses --seed), or of a raw --input file\n"
         "  --input FILE     raw little-endian f32/f64 (needs --grid), PGM (P2/P5) or greyscale PNG (values\n"
         "                   sample/maxval in [0, 1])\n"
         "  --variant, --local, --tile, --points   the launch configuration (any gives the same bits;\n"
         "                   default: the tuned or platform choice for the grid size, see reprocl tune)\n"
         "  --native         also run the kernels built with the vendor's default options (contraction\n"
         "                   allowed) and show the drift: differing points, max |diff|, max ulp\n"
         "  --no-reference   skip the host reference (large runs); devices are still compared\n"
         "  --out FILE       the first device's final grid, raw little-endian\n"
         "  --image FILE     the same as an 8-bit .png or .pgm image (scaled to its finite range)\n"
         "  --diff-image F   every point where native differs from reproducible (with --native), else where a\n"
         "                   device differs from the reference (with --no-reference: from the first device),\n"
         "                   in red (.png) or white (.pgm); with several devices the device index is added\n"
         "                   to the name\n\n"
         "Exit status: 0 when every device that ran agrees (and matches the reference), 1 when reproducible\n"
         "results disagree or none could run, 2 for usage and input errors.\n");
}

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

/* One run on one context: the final grid into result (w*h values), SOR's residual into *residual,
 * the seconds of the timed run (after a one-iteration warm-up that builds the kernels). */
static int run_on(void *result, void *residual, double *secs, rcl_context *ctx, const job *j) {
  size_t es = rcl_dtype_size(j->dt), bytes = j->w * j->h * es;
  cl_context clc = rcl_context_cl_context(ctx);
  cl_command_queue q = rcl_context_cl_queue(ctx);
  cl_int err = CL_SUCCESS;
  cl_mem a = clCreateBuffer(clc, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, (void *)j->in, &err);
  cl_mem b = a ? clCreateBuffer(clc, CL_MEM_READ_WRITE, bytes, NULL, &err) : NULL;
  cl_mem s = b && !j->sor ? clCreateBuffer(clc, CL_MEM_READ_WRITE, bytes, NULL, &err) : NULL;
  cl_mem rhs =
      b && j->rhs ? clCreateBuffer(clc, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, (void *)j->rhs, &err) : NULL;
  cl_mem res = b && j->sor ? clCreateBuffer(clc, CL_MEM_READ_WRITE, es, NULL, &err) : NULL;
  int rc = 0;
  if (!b || (!j->sor && !s) || (j->rhs && !rhs) || (j->sor && !res))
    rc = cli_error("cannot allocate device buffers for a %zux%zu grid on %s: %s", j->w, j->h,
                   rcl_context_profile(ctx)->device_name, rcl_cl_error_name(err));
  if (!rc) { /* warm-up: builds the program and, on PoCL, the kernel for this work-group size */
    if (j->sor) {
      if (clEnqueueCopyBuffer(q, a, b, 0, 0, bytes, 0, NULL, NULL) != CL_SUCCESS ||
          rcl_sor_enqueue(b, 0, 0, ctx, &j->sd, j->dt, j->w, j->h, 1, rhs, 0, 0, &j->opts, NULL))
        rc = 1;
    } else if (rcl_stencil_enqueue(b, 0, 0, ctx, &j->st, j->dt, j->w, j->h, 1, a, 0, 0, NULL, &j->opts, NULL)) {
      rc = 1;
    }
    if (!rc && clFinish(q) != CL_SUCCESS) rc = 1;
  }
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
  if (rc == 1 || rc < 0) rc = cli_fail("%s on %s", j->sor ? "SOR" : "stencil", rcl_context_profile(ctx)->device_name);
  if (a) clReleaseMemObject(a);
  if (b) clReleaseMemObject(b);
  if (s) clReleaseMemObject(s);
  if (rhs) clReleaseMemObject(rhs);
  if (res) clReleaseMemObject(res);
  return rc;
}

/* "1,2.5,-3" into up to max doubles. */
static int parse_list(double *out, size_t *n, size_t max, const char *opt, const char *s) {
  *n = 0;
  char buf[64];
  for (const char *p = s;;) {
    const char *c = strchr(p, ',');
    size_t l = c ? (size_t)(c - p) : strlen(p);
    if (*n == max) return cli_error("%s takes at most %zu values", opt, max);
    if (l == 0 || l >= sizeof buf) return cli_error("%s expects comma-separated numbers, got \"%s\"", opt, s);
    memcpy(buf, p, l);
    buf[l] = '\0';
    int rc = cli_parse_double(&out[(*n)++], opt, buf);
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
    if (rcl_grid_alloc(g, dt, w, h) || rcl_grid_generate(g, init, seed)) {
      int status = rcl_error_last_status() == RCL_ERR_OUT_OF_MEMORY ? 1 : 2;
      cli_error("%s: %s", opt, rcl_error_last());
      return status;
    }
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

int cmd_stencil(int argc, char **argv) {
  static const struct option lopts[] = {{"kind", required_argument, 0, 'k'},
                                        {"grid", required_argument, 0, 'g'},
                                        {"init", required_argument, 0, 'I'},
                                        {"seed", required_argument, 0, 's'},
                                        {"input", required_argument, 0, 'i'},
                                        {"iters", required_argument, 0, 'n'},
                                        {"weights", required_argument, 0, 'w'},
                                        {"omega", required_argument, 0, 'W'},
                                        {"rhs", required_argument, 0, 'r'},
                                        {"boundary", required_argument, 0, 'b'},
                                        {"boundary-value", required_argument, 0, 'B'},
                                        {"dtype", required_argument, 0, 't'},
                                        {"device", required_argument, 0, 'd'},
                                        {"variant", required_argument, 0, 'v'},
                                        {"local", required_argument, 0, 'L'},
                                        {"tile", required_argument, 0, 'T'},
                                        {"points", required_argument, 0, 'P'},
                                        {"native", no_argument, 0, 'N'},
                                        {"no-reference", no_argument, 0, 'R'},
                                        {"out", required_argument, 0, 'o'},
                                        {"image", required_argument, 0, 'm'},
                                        {"diff-image", required_argument, 0, 'D'},
                                        {"json", no_argument, 0, 'j'},
                                        {"help", no_argument, 0, 'h'},
                                        {0, 0, 0, 0}};
  job j;
  memset(&j, 0, sizeof j);
  j.st = (rcl_stencil_desc)RCL_STENCIL_DESC_INIT;
  j.sd = (rcl_sor_desc)RCL_SOR_DESC_INIT;
  j.opts = (rcl_stencil_options)RCL_STENCIL_OPTIONS_INIT;
  j.dt = RCL_F32;
  const char *kind = NULL, *init = "shoc", *input = NULL, *rhs_spec = NULL, *device = NULL, *out = NULL, *image = NULL,
             *diff_image = NULL;
  double weights[25], bval = 0.0;
  size_t nweights = 0;
  int have_grid = 0, have_iters = 0, have_omega = 0, native = 0, json = 0, reference = 1, c, rc = 0;
  rcl_boundary bc = RCL_BOUNDARY_FIXED;
  uint64_t seed = 42;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
    switch (c) {
    case 'k':
      kind = optarg;
      break;
    case 'g':
      rc = cli_parse_dims(&j.w, &j.h, "--grid", optarg);
      have_grid = 1;
      break;
    case 'I':
      init = optarg;
      break;
    case 's':
      rc = cli_parse_u64(&seed, "--seed", optarg);
      break;
    case 'i':
      input = optarg;
      break;
    case 'n':
      rc = cli_parse_size(&j.iters, "--iters", optarg);
      have_iters = 1;
      break;
    case 'w':
      rc = parse_list(weights, &nweights, 25, "--weights", optarg);
      break;
    case 'W':
      rc = cli_parse_double(&j.sd.omega, "--omega", optarg);
      have_omega = 1;
      break;
    case 'r':
      rhs_spec = optarg;
      break;
    case 'b':
      rc = rcl_boundary_parse(&bc, optarg) ? cli_error("--boundary: %s", rcl_error_last()) : 0;
      break;
    case 'B':
      rc = cli_parse_double(&bval, "--boundary-value", optarg);
      break;
    case 't':
      rc = rcl_dtype_parse(&j.dt, optarg) ? cli_error("--dtype: %s", rcl_error_last()) : 0;
      break;
    case 'd':
      device = optarg;
      break;
    case 'v':
      rc = rcl_stencil_variant_parse(&j.opts.variant, optarg) ? cli_error("--variant: %s", rcl_error_last()) : 0;
      break;
    case 'L':
      rc = cli_parse_dims(&j.opts.local_size[0], &j.opts.local_size[1], "--local", optarg);
      break;
    case 'T':
      rc = cli_parse_dims(&j.opts.tile[0], &j.opts.tile[1], "--tile", optarg);
      break;
    case 'P':
      rc = cli_parse_dims(&j.opts.points_per_item[0], &j.opts.points_per_item[1], "--points", optarg);
      break;
    case 'N':
      native = 1;
      break;
    case 'R':
      reference = 0;
      break;
    case 'o':
      out = optarg;
      break;
    case 'm':
      image = optarg;
      break;
    case 'D':
      diff_image = optarg;
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
  /* What to compute. */
  if (!kind) kind = nweights == 9 || nweights == 25 ? "general" : "nine";
  if (!strcmp(kind, "sor")) {
    j.sor = 1;
    if (nweights) return cli_error("--weights does not apply to --kind sor");
  } else if (!strcmp(kind, "nine")) {
    if (nweights && nweights != 3)
      return cli_error("--kind nine takes 3 weights (wc,wa,wd), got %zu (9 or 25 weights are --kind general)",
                       nweights);
    for (size_t k = 0; k < nweights; k++) j.st.weights[k] = weights[k];
  } else if (!strcmp(kind, "laplace5")) {
    if (nweights) return cli_error("--kind laplace5 has fixed weights; use --kind general --weights for others");
    j.st.kind = RCL_STENCIL_GENERAL;
    j.st.radius = 1;
    memset(j.st.weights, 0, sizeof j.st.weights);
    j.st.weights[1] = j.st.weights[3] = j.st.weights[5] = j.st.weights[7] = 0.25;
  } else if (!strcmp(kind, "general")) {
    if (nweights != 9 && nweights != 25)
      return cli_error("--kind general needs --weights with 9 (3x3) or 25 (5x5) values, got %zu", nweights);
    j.st.kind = RCL_STENCIL_GENERAL;
    j.st.radius = nweights == 9 ? 1 : 2;
    for (size_t k = 0; k < nweights; k++) j.st.weights[k] = weights[k];
  } else {
    return cli_error("unknown --kind \"%s\" (expected nine, laplace5, general or sor)", kind);
  }
  if (have_omega && !j.sor) return cli_error("--omega applies to --kind sor only");
  if (rhs_spec && !j.sor) return cli_error("--rhs applies to --kind sor only");
  if (j.sor && !(j.sd.omega > 0 && j.sd.omega < 2))
    return cli_error("--omega %g is outside (0, 2): SOR diverges there", j.sd.omega);
  if (!have_iters) return cli_error("--iters is required (iterations, or SOR sweeps)");
  if (!input && !have_grid) return cli_error("give --grid WxH (with --init) or --input FILE");
  j.st.boundary = j.sd.boundary = bc;
  j.st.boundary_value = j.sd.boundary_value = bval;

  rcl_grid in = {0}, rhs = {0};
  if ((rc = load_grid(&in, input ? input : init, have_grid, j.w, j.h, j.dt, seed, input ? "--input" : "--init")))
    return rc;
  j.w = in.width;
  j.h = in.height;
  j.in = in.data;
  if (rhs_spec && (rc = load_grid(&rhs, rhs_spec, 1, j.w, j.h, j.dt, seed + 1, "--rhs"))) {
    rcl_grid_free(&in);
    return rc;
  }
  j.rhs = rhs.data;

  size_t es = rcl_dtype_size(j.dt), n = j.w * j.h, bytes = n * es;
  unsigned char *ref = NULL, *first = NULL, *val = malloc(bytes), *nval = native ? malloc(bytes) : NULL;
  unsigned char ref_res[8] = {0}, res[8] = {0}, nres[8] = {0};
  char refhex[RCL_SHA256_HEX_SIZE] = "", hex[RCL_SHA256_HEX_SIZE], firsthex[RCL_SHA256_HEX_SIZE] = "", buf[64], cfg[64];
  cli_devices devs = {0}, ndevs = {0};
  json_t *jdevs = json_array();
  if (!val || (native && !nval)) {
    rc = cli_error("cannot allocate %zu bytes of host memory for the grids", 2 * bytes);
    goto out;
  }
  if (reference) { /* the contract, on the host */
    ref = malloc(bytes);
    if (!ref) {
      rc = cli_error("cannot allocate %zu bytes for the host reference (try --no-reference)", bytes);
      goto out;
    }
    int r;
    if (j.sor) {
      memcpy(ref, j.in, bytes);
      r = rcl_ref_sor(ref, ref_res, &j.sd, j.dt, j.w, j.h, j.iters, j.rhs);
    } else {
      r = rcl_ref_stencil(ref, &j.st, j.dt, j.w, j.h, j.iters, j.in);
    }
    if (r) {
      rc = r == RCL_ERR_OUT_OF_MEMORY ? cli_fail("host reference") : cli_error("%s", rcl_error_last());
      goto out;
    }
    cli_digest(refhex, ref, bytes);
  }
  if ((rc = cli_devices_open(&devs, device, RCL_MODE_REPRODUCIBLE)) != 0) goto out;
  if (native && (rc = cli_devices_clone(&ndevs, &devs, RCL_MODE_NATIVE)) != 0) goto out;

  const char *what = j.sor ? "sor" : kind;
  if (!json) {
    printf("stencil %s %s %zux%zu, %zu %s%s, boundary %s", what, rcl_dtype_name(j.dt), j.w, j.h, j.iters,
           j.sor ? "sweep" : "iteration", j.iters == 1 ? "" : "s", rcl_boundary_name(bc));
    if (j.sor) printf(", omega %g%s", j.sd.omega, j.rhs ? ", with b" : "");
    printf(", input %s\n", input ? input : init);
    printf("  %-44s %-16s %-11s %s\n", "device", "sha256", "time", j.sor ? "residual" : "");
    if (reference) {
      cli_format_value(buf, sizeof buf, ref_res, j.dt);
      printf("  %-44s %-16.16s %-11s %s\n", "host reference (C, -ffp-contract=off)", refhex, "-", j.sor ? buf : "");
    }
  }
  size_t ran = 0, agree = 0, unsupported = 0;
  int all_same = 1;
  for (size_t i = 0; i < devs.count; i++) {
    json_t *jd;
    if (!cli_device_entry(&jd, jdevs, &devs, i, RCL_FAMILY_STENCIL, j.dt, json, 44)) {
      unsupported++;
      continue;
    }
    rcl_stencil_options used;
    double secs;
    /* Options the device cannot launch are a usage error (exit 2), found before anything runs. */
    if (rcl_stencil_resolve_launch(&used, devs.ctx[i], j.dt, j.sor ? NULL : &j.st, j.w, j.h, &j.opts)) {
      rc = cli_error("%s", rcl_error_last());
      goto out;
    }
    if ((rc = run_on(val, res, &secs, devs.ctx[i], &j)) != 0) goto out;
    /* What the run used (after it: a first run may have tuned the launch for this grid size). */
    if (rcl_stencil_resolve_launch(&used, devs.ctx[i], j.dt, j.sor ? NULL : &j.st, j.w, j.h, &j.opts)) {
      rc = cli_error("launch configuration on %s: %s", devs.name[i], rcl_error_last());
      goto out;
    }
    ran++;
    cli_digest(hex, val, bytes);
    int ok = !reference || (memcmp(val, ref, bytes) == 0 && (!j.sor || memcmp(res, ref_res, es) == 0));
    agree += (size_t)ok;
    if (!first) {
      first = malloc(bytes);
      if (!first) {
        rc = cli_error("out of host memory");
        goto out;
      }
      memcpy(first, val, bytes);
      strcpy(firsthex, hex);
    } else if (strcmp(firsthex, hex)) {
      all_same = 0;
    }
    config_text(cfg, sizeof cfg, &used);
    json_object_set_new(jd, "sha256", json_string(hex));
    json_object_set_new(jd, "time_s", json_real(secs));
    json_object_set_new(jd, "config", config_json(&used));
    if (reference) json_object_set_new(jd, "matches_reference", json_boolean(ok));
    if (j.sor) {
      cli_format_value(buf, sizeof buf, res, j.dt);
      json_object_set_new(jd, "residual", json_string(buf));
    }
    if (!json)
      printf("  %-44.44s %-16.16s %8.3f ms %s%s%s (%s)\n", devs.name[i], hex, secs * 1e3, j.sor ? buf : "",
             j.sor ? " " : "",
             !reference ? ""
             : ok       ? "= reference"
                        : "DIFFERS from the reference",
             cfg);
    rcl_grid ga = {j.dt, j.w, j.h, val}, gb = {j.dt, j.w, j.h, NULL};
    char name[1024];
    indexed_name(name, sizeof name, diff_image ? diff_image : "", devs.index[i], devs.count > 1);
    if (native) {
      double nsecs;
      if ((rc = run_on(nval, nres, &nsecs, ndevs.ctx[i], &j)) != 0) goto out;
      cli_drift d;
      cli_drift_compute(&d, val, nval, n, j.dt);
      cli_digest(hex, nval, bytes);
      json_t *jn = json_pack("{s:s,s:f,s:b,s:o}", "sha256", hex, "time_s", nsecs, "differs", d.differing != 0, "drift",
                             cli_drift_json(&d));
      json_object_set_new(jd, "native", jn);
      if (j.sor) {
        cli_format_value(buf, sizeof buf, nres, j.dt);
        json_object_set_new(jn, "residual", json_string(buf));
      }
      if (!json) {
        printf("  %-44s %-16.16s %8.3f ms %s%s", "  native build", hex, nsecs * 1e3, j.sor ? buf : "",
               j.sor ? " " : "");
        if (d.differing)
          printf("differs at %zu of %zu points: max |diff| %.3g, max %.0f ulp\n", d.differing, n, d.max_abs, d.max_ulp);
        else
          printf("same bits as reproducible\n");
      }
      gb.data = nval;
    } else if (reference) {
      gb.data = ref;
    } else if (i > 0) {
      gb.data = first; /* without a reference: against the first device */
    }
    if (diff_image && gb.data) {
      size_t differing;
      if (rcl_grid_write_diff_image(name, RCL_GRID_FORMAT_AUTO, &ga, &gb, &differing)) {
        rc = cli_error("--diff-image: %s", rcl_error_last());
        goto out;
      }
      json_object_set_new(jd, "diff_image", json_pack("{s:s,s:I}", "path", name, "differing", (json_int_t)differing));
      if (!json)
        printf("  %-44s %s: %zu differing point(s) against %s\n", "", name, differing,
               native ? "native" : reference ? "the reference" : "the first device");
    }
  }
  /* Outputs: the first device's grid, else the reference's. */
  const unsigned char *result = first ? first : ref;
  rcl_grid gr = {j.dt, j.w, j.h, (void *)result};
  if (out && result && rcl_grid_write_raw(&gr, out)) {
    rc = cli_error("--out: %s", rcl_error_last());
    goto out;
  }
  if (image && result && rcl_grid_write_image(&gr, image, RCL_GRID_FORMAT_AUTO, 0, 0)) {
    rc = cli_error("--image: %s", rcl_error_last());
    goto out;
  }
  int ok = ran > 0 && agree == ran && all_same;
  if (json) {
    json_t *top =
        json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:s,s:s,s:o,s:I,s:I,s:b}", "command", "stencil", "kind", what, "dtype",
                  rcl_dtype_name(j.dt), "width", (json_int_t)j.w, "height", (json_int_t)j.h, "iterations",
                  (json_int_t)j.iters, "boundary", rcl_boundary_name(bc), "input", input ? input : init, "devices",
                  jdevs, "ran", (json_int_t)ran, "unsupported", (json_int_t)unsupported, "all_agree", ok);
    jdevs = NULL;
    if (j.sor) json_object_set_new(top, "omega", json_real(j.sd.omega));
    if (reference) {
      json_t *jr = json_pack("{s:s}", "sha256", refhex);
      if (j.sor) {
        cli_format_value(buf, sizeof buf, ref_res, j.dt);
        json_object_set_new(jr, "residual", json_string(buf));
      }
      json_object_set_new(top, "reference", jr);
    }
    cli_json_print(top);
  } else {
    printf("%s: %zu of %zu device(s) ran%s%s\n", ok ? "AGREE" : "DISAGREE", ran, devs.count,
           !reference     ? ", compared with each other (no host reference)"
           : agree == ran ? ", all match the host reference"
                          : ", some differ from the host reference",
           unsupported ? " (the others cannot run this dtype bit-exactly)" : "");
  }
  rc = ok ? 0 : 1;
out:
  json_decref(jdevs);
  cli_devices_close(&ndevs);
  cli_devices_close(&devs);
  free(ref);
  free(first);
  free(val);
  free(nval);
  rcl_grid_free(&in);
  rcl_grid_free(&rhs);
  return rc;
}
