/* Stencil benchmarks: the 9-point stencil at 1024^2, 4096^2 and 8192^2 (the 5x5 stencil and SOR at the
 * first two), plain vs tiled (vs task at the smallest size), reproducible beside native, with effective
 * bandwidth and GFLOP/s; on GPUs a sweep of tiled and register-blocked plain shapes for the 9-point f32
 * stencil shows what tuning can reach. Effective bytes per iteration: one read and one write of the grid (2 * points * element
 * size); per SOR sweep 3 * points * element size (each half-sweep reads the grid and writes half of it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct {
  rcl_context *ctx;
  int sor;
  rcl_stencil_desc st;
  rcl_sor_desc sd;
  rcl_stencil_options o;
  rcl_dtype dt;
  size_t w, h, iters;
  cl_mem a, b, s;
} st_case;

static int st_once(void *p) {
  st_case *c = p;
  int rc = c->sor ? rcl_sor_enqueue(c->a, 0, 0, c->ctx, &c->sd, c->dt, c->w, c->h, c->iters, NULL, 0, 0, &c->o, NULL)
                  : rcl_stencil_enqueue(c->b, 0, 0, c->ctx, &c->st, c->dt, c->w, c->h, c->iters, c->a, 0, 0, c->s,
                                        &c->o, NULL);
  if (!rc && clFinish(rcl_context_cl_queue(c->ctx)) != CL_SUCCESS) rc = RCL_ERR_OPENCL;
  return rc;
}

/* A case slower than this per iteration is recorded as skipped, and so are its larger sizes. */
#define SLOW_ITERATION_S 5.0

typedef struct {
  const char *name; /* kernel label */
  int sor;
  unsigned radius; /* 1: nine, 2: general 5x5 */
  size_t nsizes;   /* how many of the sizes it runs */
} kernel_def;

/* Times one configuration: a warm-up (builds the kernels), a sizing run, then b->repeats timed runs of
 * enough iterations to last about target seconds. Returns 1 if it was too slow (recorded as skipped). */
static int bench_case(cli_bench *b, st_case *c, const kernel_def *k, const char *variant, int native, const char *size,
                      int *rc) {
  const char *mode = native ? "native" : "reproducible";
  double target = b->quick ? 0.002 : 0.2, med, mn, mx;
  c->iters = 1;
  if ((*rc = st_once(c)) != 0) return 0;
  double t0 = cli_now();
  if ((*rc = st_once(c)) != 0) return 0;
  double one = cli_now() - t0;
  if (one > SLOW_ITERATION_S) {
    char why[160];
    snprintf(why, sizeof why, "%s %s at %s: one iteration took %.1f s; larger sizes skipped too", variant, mode, size,
             one);
    cli_bench_skip(b, "stencil", k->name, variant, why);
    return 1;
  }
  c->iters = one > 0 ? (size_t)(target / one) : 100;
  if (c->iters < 1) c->iters = 1;
  if (c->iters > 1000) c->iters = 1000;
  if ((*rc = cli_bench_time(&med, &mn, &mx, b->repeats, st_once, c)) != 0) return 0;
  size_t es = rcl_dtype_size(c->dt), n = c->w * c->h;
  double per = c->sor ? 3.0 : 2.0, flops = c->sor ? 6.0 : (double)rcl_stencil_flops_per_point(&c->st);
  rcl_stencil_options used;
  json_t *cfg = json_null();
  if (!rcl_stencil_resolve_launch(&used, c->ctx, c->dt, c->sor ? NULL : &c->st, c->w, c->h, &c->o))
    cfg = json_pack("{s:s,s:[I,I],s:[I,I],s:[I,I]}", "variant", rcl_stencil_variant_name(used.variant), "local_size",
                    (json_int_t)used.local_size[0], (json_int_t)used.local_size[1], "tile", (json_int_t)used.tile[0],
                    (json_int_t)used.tile[1], "points_per_item", (json_int_t)used.points_per_item[0],
                    (json_int_t)used.points_per_item[1]);
  /* times, bytes and flops per iteration (a sample runs c->iters of them), like the other families' per
   * call, per SpMV, per CG iteration and per MD step */
  double it = (double)c->iters;
  cli_bench_record(b, "stencil", k->name, variant, mode, c->dt, size, (double)n, med / it, mn / it, mx / it,
                   per * (double)(n * es), flops * (double)n,
                   json_pack("{s:I,s:I,s:I,s:o}", "width", (json_int_t)c->w, "height", (json_int_t)c->h,
                             "iterations_per_sample", (json_int_t)c->iters, "config", cfg));
  return 0;
}

static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
static const kernel_def kernels[] = {{"nine", 0, 1, 3}, {"general5", 0, 2, 2}, {"sor", 1, 1, 2}};
static const rcl_stencil_variant variants[] = {RCL_STENCIL_PLAIN, RCL_STENCIL_TILED, RCL_STENCIL_TASK};
/* GPU tile sweep for the 9-point f32 stencil: local x, local y, points x, points y. */
/* Shapes (local x, local y, points x, points y) of the tiled and of the register-blocked plain variant
 * (no local memory: several points along x per work-item, rows loaded once). */
static const size_t sweep[][4] = {{32, 8, 1, 4}, {32, 8, 1, 8},   {32, 8, 1, 16}, {64, 4, 1, 8}, {128, 2, 1, 8},
                                  {32, 4, 2, 8}, {256, 1, 1, 16}, {64, 8, 1, 4},  {32, 4, 4, 8}};
static const size_t plain_sweep[][4] = {{32, 4, 4, 8}, {32, 8, 4, 4}, {64, 4, 4, 4}, {64, 4, 4, 1},
                                        {32, 4, 2, 8}, {32, 8, 4, 8}, {64, 2, 4, 8}};

/* The case of kernel k in dtype dt on a w x w grid, with its three device buffers (NULL where they could
 * not be made). */
static void case_init(st_case *c, cli_bench *b, const kernel_def *k, rcl_dtype dt, size_t w) {
  size_t n = w * w, es = rcl_dtype_size(dt);
  cl_int err;
  cl_context clc = rcl_context_cl_context(b->ctx);
  memset(c, 0, sizeof *c);
  c->sor = k->sor;
  c->st = (rcl_stencil_desc)RCL_STENCIL_DESC_INIT;
  if (k->radius == 2) {
    c->st.kind = RCL_STENCIL_GENERAL;
    c->st.radius = 2;
    for (int q = 0; q < 25; q++) c->st.weights[q] = 1.0 / 25.0;
  }
  c->sd = (rcl_sor_desc)RCL_SOR_DESC_INIT;
  c->dt = dt;
  c->w = c->h = w;
  c->a = clCreateBuffer(clc, CL_MEM_READ_WRITE, n * es, NULL, &err);
  c->b = c->a ? clCreateBuffer(clc, CL_MEM_READ_WRITE, n * es, NULL, &err) : NULL;
  c->s = c->b ? clCreateBuffer(clc, CL_MEM_READ_WRITE, n * es, NULL, &err) : NULL;
}

/* Every variant, reproducible and native, of one case at size index si; slow[v][native] marks those
 * too slow (then skipped at larger sizes). */
static int bench_variants(cli_bench *b, st_case *c, const kernel_def *k, size_t si, const char *size, int slow[3][2]) {
  int rc = 0;
  for (size_t v = 0; v < 3 && !rc; v++) {
    if (variants[v] == RCL_STENCIL_TASK && si > 0) continue; /* one work-item: the smallest size only */
    for (int native = 0; native < 2 && !rc; native++) {
      if (slow[v][native]) continue;
      c->ctx = native ? b->native : b->ctx;
      c->o = (rcl_stencil_options)RCL_STENCIL_OPTIONS_INIT;
      c->o.variant = variants[v];
      slow[v][native] = bench_case(b, c, k, rcl_stencil_variant_name(variants[v]), native, size, &rc);
    }
  }
  return rc;
}

/* What tuning the tiled and blocked plain shapes can reach (GPUs; everywhere at the smallest
 * size). */
static int bench_sweep(cli_bench *b, st_case *c, const kernel_def *k, const char *size) {
  const size_t nsweep = sizeof sweep / sizeof sweep[0], nplain = sizeof plain_sweep / sizeof plain_sweep[0];
  int rc = 0;
  for (size_t t = 0; t < nsweep + nplain && !rc; t++) {
    const int plain = t >= nsweep;
    const size_t *sh = plain ? plain_sweep[t - nsweep] : sweep[t];
    for (int native = 0; native < 2 && !rc; native++) {
      char label[48];
      snprintf(label, sizeof label, "%s-%zux%zu-%zux%zu", plain ? "plain" : "tiled", sh[0], sh[1], sh[2], sh[3]);
      c->ctx = native ? b->native : b->ctx;
      c->o = (rcl_stencil_options)RCL_STENCIL_OPTIONS_INIT;
      c->o.variant = plain ? RCL_STENCIL_PLAIN : RCL_STENCIL_TILED;
      for (int q = 0; q < 2; q++) {
        c->o.local_size[q] = sh[q];
        c->o.points_per_item[q] = sh[2 + q];
      }
      rcl_stencil_options used;
      if (rcl_stencil_resolve_launch(&used, c->ctx, c->dt, &c->st, c->w, c->h, &c->o)) {
        cli_bench_skip(b, "stencil", "nine", label, rcl_error_last());
        break;
      }
      bench_case(b, c, k, label, native, size, &rc);
    }
  }
  return rc;
}

/* Kernel ki in dtype index d at size index si (grid w x w): a uniform grid uploaded, every variant, and
 * on the 9-point f32 stencil the sweep. */
static int bench_kernel(cli_bench *b, size_t ki, int d, size_t si, size_t w, const char *size, int slow[3][2],
                        int gpu) {
  size_t n = w * w, es = rcl_dtype_size(dts[d]);
  st_case c;
  case_init(&c, b, &kernels[ki], dts[d], w);
  void *h = c.s ? malloc(n * es) : NULL;
  int rc = 0;
  if (!h) {
    cli_bench_skip(b, "stencil", kernels[ki].name, size, "device or host buffers could not be allocated");
  } else {
    rcl_generate(h, c.dt, n, RCL_GEN_UNIFORM, 7);
    if (clEnqueueWriteBuffer(rcl_context_cl_queue(b->ctx), c.a, CL_TRUE, 0, n * es, h, 0, NULL, NULL) != CL_SUCCESS)
      rc = RCL_ERR_OPENCL;
    if (!rc) rc = bench_variants(b, &c, &kernels[ki], si, size, slow);
    if (!rc && !b->quick && ki == 0 && d == 0 && (gpu || si == 0)) rc = bench_sweep(b, &c, &kernels[ki], size);
  }
  free(h);
  if (c.a) clReleaseMemObject(c.a);
  if (c.b) clReleaseMemObject(c.b);
  if (c.s) clReleaseMemObject(c.s);
  if (rc) return cli_fail("stencil benchmark (%s %s %s)", kernels[ki].name, rcl_dtype_name(dts[d]), size);
  return 0;
}

int cli_bench_stencil(cli_bench *b) {
  static const size_t full[] = {1024, 4096, 8192}, quick[] = {64, 128};
  const rcl_device_profile *p = rcl_context_profile(b->ctx);
  int gpu = !(p->type & CL_DEVICE_TYPE_CPU);
  const size_t *sizes = b->quick ? quick : full;
  size_t nsizes = b->quick ? 2 : 3;
  int supported[2], slow[2][3][3][2] = {{{{0}}}}; /* dtype, kernel, variant, native: too slow at a smaller size */
  for (int d = 0; d < 2; d++) {
    const char *why;
    supported[d] = rcl_device_profile_support(p, RCL_FAMILY_STENCIL, dts[d], &why) != RCL_SUPPORT_NONE;
    if (!supported[d]) cli_bench_skip(b, "stencil", "all", rcl_dtype_name(dts[d]), why);
  }
  /* Sizes outer, smallest first, so that a time budget cuts the largest grids of every kernel and dtype. */
  for (size_t si = 0; si < nsizes; si++) {
    size_t w = sizes[si], n = w * w;
    char size[32];
    snprintf(size, sizeof size, "%zu^2", w);
    /* Each case times about 0.2 s of iterations whatever the grid (bench_case sizes the count), so a
     * larger grid costs little more until one iteration takes longer than that: allow for a doubling. */
    double growth = si ? 2.0 : 1.0;
    if (cli_bench_out_of_time(b, "stencil", size, growth)) continue;
    for (int d = 0; d < 2; d++) {
      if (!supported[d]) continue;
      size_t es = rcl_dtype_size(dts[d]);
      for (size_t k = 0; k < 3; k++) {
        if (si >= kernels[k].nsizes) continue;
        if (n * es > p->max_mem_alloc_size) {
          cli_bench_skip(b, "stencil", kernels[k].name, size, "grid larger than the device's largest buffer");
          continue;
        }
        int rc = bench_kernel(b, k, d, si, w, size, slow[d][k], gpu);
        if (rc) return rc;
      }
    }
  }
  return 0;
}
