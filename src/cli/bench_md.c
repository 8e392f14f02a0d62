/* MD benchmark: an fcc Lennard-Jones liquid (density 0.8442, cutoff 2.5, skin 0.3, T = 1.5) of 32k, 256k
 * and 1M atoms; time per velocity-Verlet step (neighbour-list rebuilds included, no thermo output) and
 * pair evaluations per second of the force kernel, reproducible beside native (the same kernels built
 * with the vendor's defaults and accumulating in floating point), for each force path the device runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"

typedef struct {
  rcl_md *md;
  size_t steps;
} md_case;

static int md_once(void *p) {
  md_case *c = p;
  return rcl_md_run(c->md, c->steps, 0.005, 0, NULL, NULL);
}

/* One size, dtype, path and mode: returns the median seconds per step in *per_step (0 when skipped). */
static int bench_one(cli_bench *b, const rcl_md_system *sys, const char *size, rcl_dtype dt, rcl_md_path path,
                     int native, size_t steps, double native_per_step, double *per_step) {
  rcl_context *ctx = native ? b->native : b->ctx;
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rcl_md_options o = RCL_MD_OPTIONS_INIT;
  o.path = path;
  md_case c = {NULL, steps};
  *per_step = 0;
  double t0 = cli_now();
  if (rcl_md_create(&c.md, ctx, dt, sys, &lj, &o)) {
    cli_bench_skip(b, "md", "step", rcl_md_path_name(path), rcl_error_last());
    return 0;
  }
  double setup = cli_now() - t0;
  rcl_md_stats s0, s1;
  double med, mn, mx;
  int rc = rcl_md_get_stats(c.md, &s0);
  if (!rc) rc = cli_bench_time(&med, &mn, &mx, b->repeats, md_once, &c);
  if (!rc) rc = rcl_md_get_stats(c.md, &s1);
  if (rc) {
    rcl_md_free(c.md);
    return cli_fail("md benchmark (%s, %s)", size, rcl_md_path_name(path));
  }
  /* counters cover the warm-up and the timed runs: (repeats + 1) * steps */
  double nsteps = (double)(s1.steps - s0.steps), pairs = (double)s1.neighbor_pairs;
  double force_per_step = nsteps > 0 ? (s1.force_seconds - s0.force_seconds) / nsteps : 0;
  /* some drivers (Mesa 22.3's Rusticl) return profiling timestamps that do not measure the kernel:
   * below 1 ps per pair evaluation the time is reported as unknown (0) */
  if (force_per_step * 1e12 < pairs) force_per_step = 0;
  double builds_per_step = nsteps > 0 ? (double)(s1.neighbor_builds - s0.neighbor_builds) / nsteps : 0;
  *per_step = med / (double)steps;
  json_t *extra = json_pack("{s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "natoms", (json_int_t)sys->natoms, "steps",
                            (json_int_t)steps, "time_per_step_s", *per_step, "force_time_per_step_s", force_per_step,
                            "neighbors_per_atom", pairs / (double)sys->natoms, "pair_evals_per_s",
                            force_per_step > 0 ? pairs / force_per_step : 0.0, "pair_evals_per_s_wall",
                            pairs / *per_step, "builds_per_step", builds_per_step, "setup_s", setup);
  if (native_per_step > 0) json_object_set_new(extra, "time_vs_native", json_real(*per_step / native_per_step));
  /* bytes: per step the force kernel reads each list entry and partner position once (a lower bound);
   * flops: ~30 per pair evaluation (the kernels' operation count, division counted once) */
  double es = (double)rcl_dtype_size(dt);
  cli_bench_record(b, "md", "step", rcl_md_path_name(path), native ? "native" : "reproducible", dt, size,
                   (double)sys->natoms, med, mn, mx,
                   (double)steps * pairs * (4.0 + 4.0 * es), (double)steps * pairs * 30.0, extra);
  if (!b->quick || isatty(1))
    fprintf(stderr, "  %-8s %-14s %-12s %-16s %-4s %9.3f ms/step, force %9.3f ms/step, %7.2f G pair evals/s%s\n", "md",
            rcl_md_path_name(path), size, native ? "native" : "reproducible", rcl_dtype_name(dt), *per_step * 1e3,
            force_per_step * 1e3, force_per_step > 0 ? pairs / force_per_step / 1e9 : 0.0,
            "");
  rcl_md_free(c.md);
  return 0;
}

int cli_bench_md(cli_bench *b) {
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  static const struct {
    size_t cells, steps;
    const char *label;
  } full[] = {{20, 100, "32k"}, {40, 50, "256k"}, {63, 20, "1M"}}, quick[] = {{6, 10, "864"}};
  const rcl_device_profile *p = rcl_context_profile(b->ctx);
  size_t nsizes = b->quick ? 1 : 3;
  for (size_t z = 0; z < nsizes; z++) {
    size_t cells = b->quick ? quick[z].cells : full[z].cells, steps = b->quick ? quick[z].steps : full[z].steps;
    const char *label = b->quick ? quick[z].label : full[z].label;
    /* the work grows by atoms x steps from one size to the next */
    double growth = z == 0 || b->quick ? 1.0
                                       : (double)(cells * cells * cells * steps) /
                                             (double)(full[z - 1].cells * full[z - 1].cells * full[z - 1].cells *
                                                      full[z - 1].steps);
    if (cli_bench_out_of_time(b, "md", label, growth)) continue;
    rcl_md_system *sys;
    if (rcl_md_lattice(&sys, "fcc", cells, 0.8442, 1.5, 87287)) return cli_fail("md benchmark lattice");
    for (int d = 0; d < 2; d++) {
      const char *why;
      if (rcl_device_profile_support(p, RCL_FAMILY_MD, dts[d], &why) == RCL_SUPPORT_NONE) {
        cli_bench_skip(b, "md", "step", rcl_dtype_name(dts[d]), why);
        continue;
      }
      for (int path = RCL_MD_PATH_GATHER; path <= RCL_MD_PATH_SYMMETRIC; path++) {
        if (path == RCL_MD_PATH_SYMMETRIC && !p->int64_atomics) {
          cli_bench_skip(b, "md", "step", "symmetric", "no 64-bit integer atomics on this device");
          continue;
        }
        double tn = 0, tr = 0;
        int rc = bench_one(b, sys, label, dts[d], (rcl_md_path)path, 1, steps, 0, &tn);
        if (!rc) rc = bench_one(b, sys, label, dts[d], (rcl_md_path)path, 0, steps, tn, &tr);
        if (rc) {
          rcl_md_system_free(sys);
          return rc;
        }
        if (tn > 0 && tr > 0 && (!b->quick || isatty(1)))
          fprintf(stderr, "  md       %-14s %-12s reproducible / native time per step: %.3f\n",
                  rcl_md_path_name((rcl_md_path)path), label, tr / tn);
      }
    }
    rcl_md_system_free(sys);
  }
  return 0;
}
