/* MD benchmark: an fcc Lennard-Jones liquid (density 0.8442, cutoff 2.5, skin 0.3, T = 3) of 500, 4k, 32k,
 * 256k and 1M atoms (864 with --quick; $REPROCL_BENCH_MD_ATOMS, a comma-separated list of 4 k^3 atom counts,
 * chooses others); time per velocity-Verlet step (neighbour-list rebuilds included, no thermo output) and
 * pair evaluations per second of the force kernel, reproducible beside native (the same kernels built
 * with the vendor's defaults and accumulating in floating point), for each force path the device runs;
 * and OpenMM on the same system and initial state where the `openmm` Python package is importable. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "peers.h"

typedef struct {
  rcl_md *md;
  size_t steps;
} md_case;

static int md_once(void *p) {
  md_case *c = p;
  return rcl_md_run(c->md, c->steps, 0.005, 0, NULL, NULL);
}

/* Device seconds per step in the force kernel: kernel times cost an event per launch (rcl_md_options
 * .kernel_times; ~8 us each on NVIDIA's OpenCL), so the timed runs go without and this separate run of the
 * same steps measures them. 0 where the queue does not profile or the run fails. */
static double force_time(rcl_context *ctx, rcl_dtype dt, const rcl_md_system *sys, rcl_md_path path, size_t steps) {
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rcl_md_options o = RCL_MD_OPTIONS_INIT;
  o.path = path;
  o.kernel_times = 1;
  rcl_md *md = NULL;
  rcl_md_stats s0, s1;
  int rc = rcl_md_create(&md, ctx, dt, sys, &lj, &o);
  if (!rc) rc = rcl_md_get_stats(md, &s0);
  if (!rc) rc = rcl_md_run(md, steps, 0.005, 0, NULL, NULL);
  if (!rc) rc = rcl_md_get_stats(md, &s1);
  rcl_md_free(md);
  return rc || !steps ? 0 : (s1.force_seconds - s0.force_seconds) / (double)steps;
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
  double force_per_step = force_time(ctx, dt, sys, path, steps);
  /* some drivers (Mesa 22.3's Rusticl) return profiling timestamps that do not measure the kernel:
   * below 1 ps per pair evaluation the time is reported as unknown (0) */
  if (force_per_step * 1e12 < pairs) force_per_step = 0;
  double builds_per_step = nsteps > 0 ? (double)(s1.neighbor_builds - s0.neighbor_builds) / nsteps : 0;
  *per_step = med / (double)steps;
  json_t *extra =
      json_pack("{s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "natoms", (json_int_t)sys->natoms, "steps", (json_int_t)steps,
                "time_per_step_s", *per_step, "force_time_per_step_s", force_per_step, "neighbors_per_atom",
                pairs / (double)sys->natoms, "pair_evals_per_s", force_per_step > 0 ? pairs / force_per_step : 0.0,
                "pair_evals_per_s_wall", pairs / *per_step, "builds_per_step", builds_per_step, "setup_s", setup);
  json_object_set_new(extra, "force_time_from", json_string("a separate run of the same steps with kernel_times"));
  if (native_per_step > 0) json_object_set_new(extra, "time_vs_native", json_real(*per_step / native_per_step));
  /* bytes: per step the force kernel reads each list entry and partner position once (a lower bound);
   * flops: ~30 per pair evaluation (the kernels' operation count, division counted once) */
  double es = (double)rcl_dtype_size(dt);
  cli_bench_record(b, "md", "step", rcl_md_path_name(path), native ? "native" : "reproducible", dt, size,
                   (double)sys->natoms, med, mn, mx, (double)steps * pairs * (4.0 + 4.0 * es),
                   (double)steps * pairs * 30.0, extra);
  if (!b->quick || isatty(1))
    fprintf(stderr, "  %-8s %-14s %-12s %-16s %-4s %9.3f ms/step, force %9.3f ms/step, %7.2f G pair evals/s%s\n", "md",
            rcl_md_path_name(path), size, native ? "native" : "reproducible", rcl_dtype_name(dt), *per_step * 1e3,
            force_per_step * 1e3, force_per_step > 0 ? pairs / force_per_step / 1e9 : 0.0, "");
  rcl_md_free(c.md);
  return 0;
}

/* ---- the OpenMM peer (scripts/peer_openmm.py) ---------------------------------------------------- */

/* What the peer is given and compared with, for one size: the initial state, and a check state (the
 * initial one after 20 reprocl steps, off the lattice) with reprocl's potential energies of both. */
typedef struct {
  char dir[256], state[300], check[300];
  rcl_dtype dt;    /* of reprocl's check run: f64 where the device has it */
  double pe0, pe1; /* reprocl's potential energy per atom: initial and check state */
  double pairs;    /* partner pairs within cutoff + skin (the work measure of the records) */
} openmm_input;

static int write_xyz_file(const char *path, const rcl_md_system *sys, rcl_dtype dt, const void *pos, const void *vel) {
  FILE *f = fopen(path, "w");
  int rc = f ? rcl_md_write_xyz(f, sys, dt, pos, vel, 0, 0.0) : RCL_ERR_IO;
  if (f && fclose(f) && !rc) rc = RCL_ERR_IO;
  return rc;
}

/* reprocl's side: the initial state's file and energy, 20 steps, the check state's file and energy. */
static int openmm_prepare(cli_bench *b, const rcl_md_system *sys, openmm_input *in) {
  const char *tmp = getenv("TMPDIR");
  snprintf(in->dir, sizeof in->dir, "%s/reprocl-openmm-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(in->dir)) {
    in->dir[0] = 0;
    return cli_error("md benchmark: cannot create a folder in %s", tmp && *tmp ? tmp : "/tmp");
  }
  snprintf(in->state, sizeof in->state, "%s/state.xyz", in->dir);
  snprintf(in->check, sizeof in->check, "%s/check.xyz", in->dir);
  in->dt = rcl_context_profile(b->ctx)->fp64 ? RCL_F64 : RCL_F32;
  size_t n3 = 3 * sys->natoms;
  void *pos = malloc(n3 * rcl_dtype_size(in->dt));
  rcl_md *md = NULL;
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rcl_md_options o = RCL_MD_OPTIONS_INIT;
  rcl_md_thermo t0, t1;
  rcl_md_stats st;
  int rc = pos ? write_xyz_file(in->state, sys, RCL_F64, sys->pos, sys->vel) : RCL_ERR_OUT_OF_MEMORY;
  if (!rc) rc = rcl_md_create(&md, b->ctx, in->dt, sys, &lj, &o);
  if (!rc) rc = rcl_md_thermo_get(md, &t0);
  if (!rc) rc = rcl_md_run(md, 20, 0.005, 0, NULL, NULL);
  if (!rc) rc = rcl_md_thermo_get(md, &t1);
  if (!rc) rc = rcl_md_get_stats(md, &st);
  if (!rc) rc = rcl_md_get_state(md, pos, NULL);
  if (!rc) rc = write_xyz_file(in->check, sys, in->dt, pos, NULL);
  if (!rc) {
    in->pe0 = t0.pe / (double)sys->natoms;
    in->pe1 = t1.pe / (double)sys->natoms;
    in->pairs = (double)st.neighbor_pairs;
  }
  rcl_md_free(md);
  free(pos);
  return rc ? cli_fail("md benchmark: the OpenMM peer's input") : 0;
}

static void openmm_cleanup(const openmm_input *in) {
  if (!in->dir[0]) return;
  remove(in->state);
  remove(in->check);
  remove(in->dir);
}

static double rel_diff(double a, double ref) { return fabs(a - ref) / fabs(ref); }

/* One result of the peer: a measurement (with the energies beside reprocl's), or a skipped record. */
static void openmm_record(cli_bench *b, json_t *r, const json_t *doc, const openmm_input *in, const char *size,
                          size_t natoms) {
  const char *plat = json_string_value(json_object_get(r, "platform")), *skipped;
  const char *prec = json_string_value(json_object_get(r, "precision"));
  char variant[64];
  snprintf(variant, sizeof variant, "openmm-%s-%s", plat ? plat : "?", prec ? prec : "?");
  for (char *c = variant; *c; c++) *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
  if ((skipped = json_string_value(json_object_get(r, "skipped")))) {
    cli_bench_skip(b, "md", "step", variant, skipped);
    return;
  }
  json_t *t = json_object_get(r, "time_s");
  double med = json_number_value(json_object_get(t, "median")),
         steps = json_number_value(json_object_get(doc, "steps"));
  double pe0 = json_number_value(json_object_get(r, "pe_per_atom"));
  double pe1 = json_number_value(json_object_get(r, "check_pe_per_atom"));
  double d0 = rel_diff(pe0, in->pe0), d1 = rel_diff(pe1, in->pe1), per_step = med / steps;
  rcl_dtype dt = prec && !strcmp(prec, "double") ? RCL_F64 : RCL_F32;
  /* relative, per atom: binary64 sums of the same pairs agree to ~1e-12, binary32 ones (OpenMM's single
   * precision and CPU platform) to ~1e-6 */
  double tol = dt == RCL_F64 ? 1e-5 : 1e-4;
  json_t *extra =
      json_pack("{s:I,s:I,s:f,s:f,s:f,s:f,s:O,s:s,s:s,s:O,s:O,s:f,s:f,s:f,s:f,s:f,s:f,s:s,s:f,s:b}", "natoms",
                (json_int_t)natoms, "steps", (json_int_t)steps, "time_per_step_s", per_step, "steps_per_s",
                1.0 / per_step, "pair_evals_per_s", in->pairs / per_step, "pair_evals_per_s_wall", in->pairs / per_step,
                "openmm_version", json_object_get(doc, "openmm_version"), "openmm_platform", plat, "openmm_precision",
                prec, "openmm_device", json_object_get(r, "device"), "setup_s", json_object_get(r, "setup_s"),
                "pe_per_atom", pe0, "reprocl_pe_per_atom", in->pe0, "pe_rel_diff", d0, "check_pe_per_atom", pe1,
                "reprocl_check_pe_per_atom", in->pe1, "check_pe_rel_diff", d1, "reprocl_check_dtype",
                rcl_dtype_name(in->dt), "energy_tolerance", tol, "energy_agrees", d0 <= tol && d1 <= tol);
  double es = (double)rcl_dtype_size(dt);
  cli_bench_record(b, "md", "step", variant, "peer:openmm", dt, size, (double)natoms, med,
                   json_number_value(json_object_get(t, "min")), json_number_value(json_object_get(t, "max")),
                   steps * in->pairs * (4.0 + 4.0 * es), steps * in->pairs * 30.0, extra);
  fprintf(stderr, "  %-8s %-14s %-12s %-16s %-4s %9.3f ms/step, %9.1f steps/s, energy per atom vs reprocl %.1e, %.1e\n",
          "md", variant, size, "peer:openmm", rcl_dtype_name(dt), per_step * 1e3, 1.0 / per_step, d0, d1);
}

/* Runs the peer script on in's files: 0 and its document, or -1 and the reason in why. */
static int openmm_spawn(cli_bench *b, const openmm_input *in, const char *script, size_t steps, json_t **doc, char *why,
                        size_t cap) {
  char st[32], rep[32], pi[16] = "0", di[16] = "0";
  int pidx, didx;
  cl_device_id dev = rcl_context_cl_device(b->ctx);
  if (!peer_openmm_opencl_index(dev, &pidx, &didx)) {
    snprintf(pi, sizeof pi, "%d", pidx);
    snprintf(di, sizeof di, "%d", didx);
  }
  snprintf(st, sizeof st, "%zu", steps);
  snprintf(rep, sizeof rep, "%d", b->repeats);
  const char *opts[][2] = {{"--state", in->state},
                           {"--check", in->check},
                           {"--steps", st},
                           {"--repeats", rep},
                           {"--platforms", peer_openmm_platforms(dev)},
                           {"--opencl-platform", pi},
                           {"--opencl-device", di},
                           {"--gpu-device", di}};
  const char *argv[2 + 2 * sizeof opts / sizeof *opts + 1] = {peer_openmm_python(), script}; /* NULL-terminated */
  for (size_t i = 0; i < sizeof opts / sizeof *opts; i++) {
    argv[2 + 2 * i] = opts[i][0];
    argv[3 + 2 * i] = opts[i][1];
  }
  char *text = NULL;
  if (peer_openmm_run(&text, (char *const *)argv)) {
    snprintf(why, cap, "%s", peer_openmm_error());
    return -1;
  }
  json_error_t e;
  *doc = json_loads(text, 0, &e);
  free(text);
  if (!*doc) snprintf(why, cap, "peer_openmm.py's output is not JSON (line %d: %s)", e.line, e.text);
  return *doc ? 0 : -1;
}

/* The OpenMM peer at one size. Where it cannot run (no python, no openmm, no script) the reason is
 * recorded once per device and *absent set: never a failure of the benchmark. */
static int bench_openmm(cli_bench *b, const rcl_md_system *sys, const char *size, size_t steps, int *absent) {
  char script[4096], why[4608];
  if (*absent) return 0;
  if (peer_openmm_script(script, sizeof script)) {
    cli_bench_skip(b, "md", "step", "openmm", peer_openmm_error());
    *absent = 1;
    return 0;
  }
  openmm_input in;
  memset(&in, 0, sizeof in);
  int rc = openmm_prepare(b, sys, &in);
  json_t *doc = NULL;
  if (!rc && openmm_spawn(b, &in, script, steps, &doc, why, sizeof why)) {
    cli_bench_skip(b, "md", "step", "openmm", why);
    *absent = 1;
  }
  const char *skipped = json_string_value(json_object_get(doc, "skipped"));
  if (skipped) {
    cli_bench_skip(b, "md", "step", "openmm", skipped);
    *absent = 1;
  }
  json_t *r, *res = json_object_get(doc, "results");
  size_t i;
  json_array_foreach(res, i, r) openmm_record(b, r, doc, &in, size, sys->natoms);
  json_decref(doc);
  openmm_cleanup(&in);
  return rc;
}

/* ---- sizes ---------------------------------------------------------------------------------------- */

typedef struct {
  size_t cells, steps;
  char label[24];
} md_size;

/* Steps per sample: about the same time per sample from 500 atoms to 1M on a GPU. */
static void md_size_set(md_size *z, size_t cells, size_t steps) {
  size_t n = 4 * cells * cells * cells;
  z->cells = cells;
  z->steps = steps ? steps : n <= 2000 ? 500 : n <= 16000 ? 200 : n <= 100000 ? 100 : n <= 500000 ? 50 : 20;
  if (n >= 1000000)
    snprintf(z->label, sizeof z->label, "%.3gM", (double)n / 1e6);
  else if (n >= 10000 || n % 1000 == 0)
    snprintf(z->label, sizeof z->label, "%.4gk", (double)n / 1e3);
  else
    snprintf(z->label, sizeof z->label, "%zu", n);
}

/* The sizes to run: --quick's one, $REPROCL_BENCH_MD_ATOMS's (each 4 k^3, k >= 3), or the default five. */
static int md_sizes(const cli_bench *b, md_size *z, size_t *count) {
  static const size_t cells[] = {5, 10, 20, 40, 63};
  const char *env = getenv("REPROCL_BENCH_MD_ATOMS");
  *count = 0;
  if (b->quick) {
    md_size_set(&z[(*count)++], 6, 10);
    return 0;
  }
  if (!env || !*env) {
    for (size_t i = 0; i < sizeof cells / sizeof *cells; i++) md_size_set(&z[(*count)++], cells[i], 0);
    return 0;
  }
  for (const char *p = env; *p && *count < 16;) {
    char *end;
    unsigned long long n = strtoull(p, &end, 10);
    size_t k = (size_t)llround(cbrt((double)n / 4.0));
    if (end == p || (*end && *end != ',') || k < 3 || 4ull * k * k * k != n)
      return cli_error("REPROCL_BENCH_MD_ATOMS=%s: each size must be an fcc lattice's atom count 4 k^3, k >= 3 "
                       "(500, 4000, 32000, 256000, ...)",
                       env);
    md_size_set(&z[(*count)++], k, 0);
    p = *end ? end + 1 : end;
  }
  return 0;
}

/* Every dtype and force path at one size, reproducible beside native. */
static int bench_size(cli_bench *b, const rcl_md_system *sys, const md_size *z) {
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  const rcl_device_profile *p = rcl_context_profile(b->ctx);
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
      int rc = bench_one(b, sys, z->label, dts[d], (rcl_md_path)path, 1, z->steps, 0, &tn);
      if (!rc) rc = bench_one(b, sys, z->label, dts[d], (rcl_md_path)path, 0, z->steps, tn, &tr);
      if (rc) return rc;
      if (tn > 0 && tr > 0 && (!b->quick || isatty(1)))
        fprintf(stderr, "  md       %-14s %-12s reproducible / native time per step: %.3f\n",
                rcl_md_path_name((rcl_md_path)path), z->label, tr / tn);
    }
  }
  return 0;
}

int cli_bench_md(cli_bench *b) {
  md_size sizes[16];
  size_t nsizes;
  int rc = md_sizes(b, sizes, &nsizes), openmm_absent = 0;
  for (size_t z = 0; z < nsizes && !rc; z++) {
    /* the work grows by atoms x steps from one size to the next */
    double c = (double)sizes[z].cells, c0 = z ? (double)sizes[z - 1].cells : c;
    double growth = z ? c * c * c * (double)sizes[z].steps / (c0 * c0 * c0 * (double)sizes[z - 1].steps) : 1.0;
    if (cli_bench_out_of_time(b, "md", sizes[z].label, growth)) continue;
    rcl_md_system *sys;
    if (rcl_md_lattice(&sys, "fcc", sizes[z].cells, 0.8442, 3.0, 87287)) return cli_fail("md benchmark lattice");
    rc = bench_size(b, sys, &sizes[z]);
    if (!rc) rc = bench_openmm(b, sys, sizes[z].label, sizes[z].steps, &openmm_absent);
    rcl_md_system_free(sys);
  }
  return rc;
}
