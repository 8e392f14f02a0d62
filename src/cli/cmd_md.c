/* reprocl md: a Lennard-Jones NVE simulation on one or every device — thermo output, the SHA-256
 * digests of the step-0 forces and of the final positions and velocities per device, and whether all
 * devices (and optionally the host reference and a native build) agree. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void) {
  printf("usage: reprocl md (--input FILE.data|FILE.xyz | --lattice fcc|bcc|sc --cells N --density R --temp T\n"
         "                   [--seed S]) [--cutoff 2.5] [--shift] [--mixing geometric|arithmetic] [--skin 0.3]\n"
         "                  [--dt 0.005] [--steps S] [--thermo K] [--dtype f32|f64] [--device D|all]\n"
         "                  [--path auto|gather|symmetric|allpairs|task] [--local L] [--native] [--reference]\n"
         "                  [--out traj.xyz] [--dump K] [--log thermo.txt] [--json]\n\n"
         "Runs a Lennard-Jones NVE simulation (velocity Verlet, LJ units) on the chosen devices (default:\n"
         "$REPROCL_DEVICE or device 0; 'all' for every device) and prints the thermo output (energies per atom,\n"
         "as LAMMPS prints them in lj units) and, per device, the SHA-256 digest of the step-0 forces (the\n"
         "int64 fixed-point sums) and of the final positions and velocities. --steps 0 computes the forces\n"
         "and energies of the input only. --thermo K prints every K steps (0: first and last). --native also\n"
         "runs the same kernels built with the vendor's defaults and float accumulation, and shows how far\n"
         "they drift; --reference also runs the O(N^2) host reference of the contract (small systems).\n"
         "--out writes extended-XYZ frames of the first device every --dump K steps (default: the thermo\n"
         "interval), --log its thermo log. Exit status 1 when reproducible results disagree.\n");
}

typedef struct {
  double *v; /* 6 per row: step pe ke etotal temperature pressure (totals) */
  size_t n, cap;
} thermo_log;

typedef struct run_ctx {
  thermo_log *log;
  FILE *traj, *logf;
  size_t thermo_every, dump_every, last_step; /* the callback comes at multiples of their gcd */
  const rcl_md_system *sys;
  rcl_dtype dt;
  double dtime;
  int print;
  int failed;
} run_ctx;

static void thermo_line(FILE *f, const rcl_md_thermo *t) {
  double n = (double)t->natoms;
  fprintf(f, "  %10zu %15.8f %15.8f %15.8f %15.8f %15.8f\n", t->step, t->pe / n, t->ke / n, t->etotal / n,
          t->temperature, t->pressure);
}

static const char thermo_head[] = "        Step            PE/N            KE/N          Etot/N            Temp"
                                  "           Press\n";

/* One extended-XYZ frame of the current state; sets r->failed on error. */
static int write_frame(rcl_md *md, const rcl_md_thermo *t, run_ctx *r) {
  size_t n3 = 3 * rcl_md_natoms(md), es = rcl_dtype_size(r->dt);
  void *p = malloc(2 * n3 * es);
  if (!p || rcl_md_get_state(md, p, (char *)p + n3 * es) ||
      rcl_md_write_xyz(r->traj, r->sys, r->dt, p, (char *)p + n3 * es, t->step, (double)t->step * r->dtime)) {
    fprintf(stderr, "reprocl md: error: writing the trajectory: %s\n", p ? rcl_error_last() : "out of memory");
    r->failed = 1;
  }
  free(p);
  return r->failed;
}

static int on_thermo(rcl_md *md, const rcl_md_thermo *t, void *user) {
  run_ctx *r = user;
  thermo_log *L = r->log;
  int wanted = t->step % r->thermo_every == 0 || t->step == r->last_step;
  if (r->traj && t->step % r->dump_every == 0 && write_frame(md, t, r)) return 1;
  if (!wanted) return 0;
  if (L->n == L->cap) {
    size_t nc = L->cap ? 2 * L->cap : 64;
    double *nv = realloc(L->v, nc * 6 * sizeof *nv);
    if (!nv) {
      r->failed = 1;
      return 1;
    }
    L->v = nv;
    L->cap = nc;
  }
  double row[6] = {(double)t->step, t->pe, t->ke, t->etotal, t->temperature, t->pressure};
  if (L->n && L->v[6 * (L->n - 1)] == row[0]) L->n--; /* a run's first row repeats the previous last */
  memcpy(L->v + 6 * L->n++, row, sizeof row);
  if (r->print) thermo_line(stdout, t);
  if (r->logf) thermo_line(r->logf, t);
  return 0;
}

/* Everything one run produced. */
typedef struct {
  int ok;
  int status; /* the failing call's status */
  char why[512];
  thermo_log log;
  rcl_md_thermo last;
  char forces_hex[RCL_SHA256_HEX_SIZE], state_hex[RCL_SHA256_HEX_SIZE];
  void *state; /* positions then velocities, [6N] of the dtype */
  double seconds;
  rcl_md_path path;
} run_result;

typedef struct {
  const rcl_md_system *sys;
  const rcl_md_lj *lj;
  rcl_md_options opts;
  rcl_dtype dt;
  size_t steps, every, dump_every;
  double dtime;
} run_spec;

static size_t gcd(size_t a, size_t b) {
  while (b) {
    size_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

static void result_free(run_result *r) {
  free(r->log.v);
  free(r->state);
  memset(r, 0, sizeof *r);
}

/* One simulation on ctx (NULL: the host reference). Failures are recorded in r->why, not fatal. */
static void run_one(run_result *r, rcl_context *ctx, const run_spec *sp, FILE *traj, FILE *logf, int print) {
  memset(r, 0, sizeof *r);
  size_t n3 = 3 * sp->sys->natoms, es = rcl_dtype_size(sp->dt);
  rcl_md *md = NULL;
  int native = ctx && rcl_context_mode(ctx) == RCL_MODE_NATIVE;
  run_ctx rc = {&r->log, traj, logf, sp->every, traj ? sp->dump_every : sp->every, sp->steps, sp->sys, sp->dt,
                sp->dtime, print, 0};
  int64_t *f = malloc(n3 * (native ? es : 8));
  r->state = malloc(2 * n3 * es);
  if (!f || !r->state) {
    snprintf(r->why, sizeof r->why, "out of host memory");
    free(f);
    return;
  }
  int st = rcl_md_create(&md, ctx, sp->dt, sp->sys, sp->lj, &sp->opts);
  if (!st) st = native ? rcl_md_get_forces(md, f, NULL) : rcl_md_get_forces(md, NULL, f);
  if (!st) cli_digest(r->forces_hex, f, n3 * (native ? es : 8));
  free(f);
  if (!st && print) fputs(thermo_head, stdout);
  if (!st && logf) fputs(thermo_head, logf);
  double t1 = cli_now();
  if (!st) st = rcl_md_run(md, sp->steps, sp->dtime, gcd(rc.thermo_every, rc.dump_every), on_thermo, &rc);
  r->seconds = cli_now() - t1;
  if (!st && rc.failed) st = -1;
  if (!st) st = rcl_md_thermo_get(md, &r->last);
  if (!st) st = rcl_md_get_state(md, r->state, (char *)r->state + n3 * es);
  if (!st) {
    cli_digest(r->state_hex, r->state, 2 * n3 * es);
    r->path = rcl_md_path_used(md);
    r->ok = 1;
  } else {
    r->status = st;
    snprintf(r->why, sizeof r->why, "%s", rc.failed && st == -1 ? "writing output failed" : rcl_error_last());
  }
  rcl_md_free(md);
}

static int thermo_equal(const thermo_log *a, const thermo_log *b) {
  return a->n == b->n && (a->n == 0 || memcmp(a->v, b->v, a->n * 6 * sizeof(double)) == 0);
}

static json_t *thermo_json(const thermo_log *L, size_t natoms) {
  json_t *a = json_array();
  double n = (double)natoms;
  for (size_t i = 0; i < L->n; i++) {
    const double *v = L->v + 6 * i;
    json_array_append_new(a, json_pack("{s:I,s:f,s:f,s:f,s:f,s:f}", "step", (json_int_t)v[0], "pe", v[1] / n, "ke",
                                       v[2] / n, "etotal", v[3] / n, "temperature", v[4], "pressure", v[5]));
  }
  return a;
}

static json_t *result_json(const run_result *r, const char *name, size_t natoms) {
  if (!r->ok) return json_pack("{s:s,s:s}", "name", name, "error", r->why);
  double n = (double)natoms;
  return json_pack("{s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:s,s:s,s:f,s:f,s:I,s:o}", "name", name, "path",
                   rcl_md_path_name(r->path), "pe", r->last.pe / n, "ke", r->last.ke / n, "etotal", r->last.etotal / n,
                   "temperature", r->last.temperature, "pressure", r->last.pressure, "pe_total", r->last.pe,
                   "forces_sha256", r->forces_hex, "state_sha256", r->state_hex, "time_s", r->seconds,
                   "steps_per_s", r->seconds > 0 ? (double)r->last.step / r->seconds : 0.0, "neighbor_builds",
                   (json_int_t)r->last.neighbor_builds, "thermo", thermo_json(&r->log, natoms));
}

int cmd_md(int argc, char **argv) {
  static const struct option opts[] = {
      {"input", required_argument, 0, 'i'},  {"lattice", required_argument, 0, 'L'}, {"cells", required_argument, 0, 'c'},
      {"density", required_argument, 0, 'r'}, {"temp", required_argument, 0, 'T'},   {"seed", required_argument, 0, 'S'},
      {"cutoff", required_argument, 0, 'C'}, {"shift", no_argument, 0, 'H'},         {"mixing", required_argument, 0, 'M'},
      {"skin", required_argument, 0, 'k'},   {"dt", required_argument, 0, 't'},      {"steps", required_argument, 0, 's'},
      {"thermo", required_argument, 0, 'e'}, {"dtype", required_argument, 0, 'y'},   {"device", required_argument, 0, 'd'},
      {"path", required_argument, 0, 'p'},   {"local", required_argument, 0, 'l'},   {"native", no_argument, 0, 'N'},
      {"reference", no_argument, 0, 'R'},    {"out", required_argument, 0, 'o'},     {"dump", required_argument, 0, 'D'},
      {"log", required_argument, 0, 'g'},    {"json", no_argument, 0, 'j'},          {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  const char *input = NULL, *lattice = NULL, *device = NULL, *outpath = NULL, *logpath = NULL;
  size_t cells = 0, steps = 0, every = 0, dump = 0;
  double density = 0, temp = 0, cutoff = 2.5, skin = 0, dtime = 0.005;
  uint64_t seed = 87287;
  int have_density = 0, have_temp = 0, have_cells = 0, shift = 0, native = 0, reference = 0, json = 0, c, rc = 0;
  rcl_md_mixing mixing = RCL_MD_MIX_GEOMETRIC;
  int have_mixing = 0;
  run_spec sp;
  memset(&sp, 0, sizeof sp);
  sp.opts = (rcl_md_options)RCL_MD_OPTIONS_INIT;
  sp.dt = RCL_F32;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case 'i': input = optarg; break;
    case 'L': lattice = optarg; break;
    case 'c': rc = cli_parse_size(&cells, "--cells", optarg); have_cells = 1; break;
    case 'r': rc = cli_parse_double(&density, "--density", optarg); have_density = 1; break;
    case 'T': rc = cli_parse_double(&temp, "--temp", optarg); have_temp = 1; break;
    case 'S': rc = cli_parse_u64(&seed, "--seed", optarg); break;
    case 'C': rc = cli_parse_double(&cutoff, "--cutoff", optarg); break;
    case 'H': shift = 1; break;
    case 'M': rc = rcl_md_mixing_parse(&mixing, optarg) ? cli_error("--mixing: %s", rcl_error_last()) : 0; have_mixing = 1; break;
    case 'k': rc = cli_parse_double(&skin, "--skin", optarg); break;
    case 't': rc = cli_parse_double(&dtime, "--dt", optarg); break;
    case 's': rc = cli_parse_size(&steps, "--steps", optarg); break;
    case 'e': rc = cli_parse_size(&every, "--thermo", optarg); break;
    case 'y': rc = rcl_dtype_parse(&sp.dt, optarg) ? cli_error("--dtype: %s", rcl_error_last()) : 0; break;
    case 'd': device = optarg; break;
    case 'p': rc = rcl_md_path_parse(&sp.opts.path, optarg) ? cli_error("--path: %s", rcl_error_last()) : 0; break;
    case 'l': rc = cli_parse_size(&sp.opts.local_size, "--local", optarg); break;
    case 'N': native = 1; break;
    case 'R': reference = 1; break;
    case 'o': outpath = optarg; break;
    case 'D': rc = cli_parse_size(&dump, "--dump", optarg); break;
    case 'g': logpath = optarg; break;
    case 'j': json = 1; break;
    case 'h': help(); return 0;
    default: return 2;
    }
    if (rc) return rc;
  }
  if (optind < argc) return cli_error("unexpected argument \"%s\"", argv[optind]);
  if (!input == !lattice) return cli_error("give either --input FILE or --lattice fcc|bcc|sc (see --help)");
  if (lattice && (!have_cells || !have_density || !have_temp))
    return cli_error("--lattice needs --cells N, --density R and --temp T");
  if (input && (have_cells || have_density || have_temp))
    return cli_error("--cells, --density and --temp describe a --lattice, not an --input file");
  if (!(dtime > 0) || !isfinite(dtime)) return cli_error("--dt %g is not a positive time step", dtime);
  sp.opts.skin = skin;

  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rcl_md_system *sys = NULL;
  char what[512];
  if (input) {
    if (rcl_md_read(&sys, &lj, input)) return cli_fail("reading %s", input);
    snprintf(what, sizeof what, "%s", input);
  } else {
    if (rcl_md_lattice(&sys, lattice, cells, density, temp, seed)) return cli_fail("--lattice");
    snprintf(what, sizeof what, "lattice %s %zu^3, density %g, temperature %g, seed %llu", lattice, cells, density,
             temp, (unsigned long long)seed);
  }
  lj.cutoff = cutoff;
  lj.shift = shift;
  if (have_mixing) lj.mixing = mixing;
  sp.sys = sys;
  sp.lj = &lj;
  sp.steps = steps;
  sp.every = every ? every : (steps ? steps : 1);
  sp.dump_every = dump ? dump : sp.every;
  sp.dtime = dtime;

  if (rcl_md_check(sys, &lj, sp.dt)) {
    rc = cli_error("%s", rcl_error_last());
    rcl_md_system_free(sys);
    return rc;
  }
  FILE *traj = NULL, *logf = NULL;
  if (outpath && !(traj = fopen(outpath, "w"))) {
    rcl_md_system_free(sys);
    return cli_error("cannot open %s for writing", outpath);
  }
  if (logpath && !(logf = fopen(logpath, "w"))) {
    if (traj) fclose(traj);
    rcl_md_system_free(sys);
    return cli_error("cannot open %s for writing", logpath);
  }
  cli_devices devs, ndevs = {0};
  memset(&devs, 0, sizeof devs);
  if ((rc = cli_devices_open(&devs, device, RCL_MODE_REPRODUCIBLE)) != 0) goto out;
  if (native && (rc = cli_devices_clone(&ndevs, &devs, RCL_MODE_NATIVE)) != 0) goto out;

  if (!json)
    printf("md: %zu atoms (%s), %s, cutoff %g%s, dt %g, %zu steps\n", sys->natoms, what, rcl_dtype_name(sp.dt), cutoff,
           shift ? " shifted" : "", dtime, steps);
  run_result *res = calloc(devs.count, sizeof *res);
  json_t *jdevs = json_array();
  size_t ran = 0, agree = 0, unsupported = 0, failed = 0, first = (size_t)-1;
  for (size_t i = 0; i < devs.count && res; i++) {
    const char *why;
    if (rcl_device_profile_support(rcl_context_profile(devs.ctx[i]), RCL_FAMILY_MD, sp.dt, &why) == RCL_SUPPORT_NONE) {
      unsupported++;
      if (!json) printf("[%zu] %s\n  skipped: %s\n", devs.index[i], devs.name[i], why);
      json_array_append_new(jdevs, json_pack("{s:s,s:s}", "name", devs.name[i], "skipped", why));
      continue;
    }
    int lead = first == (size_t)-1;
    if (!json) printf("[%zu] %s\n", devs.index[i], devs.name[i]);
    run_one(&res[i], devs.ctx[i], &sp, lead ? traj : NULL, lead ? logf : NULL, lead && !json);
    run_result *r = &res[i];
    if (!r->ok && r->status == RCL_ERR_UNSUPPORTED) { /* e.g. the symmetric path without int64 atomics */
      unsupported++;
      if (!json) printf("  skipped: %s\n", r->why);
      json_array_append_new(jdevs, json_pack("{s:s,s:s}", "name", devs.name[i], "skipped", r->why));
      continue;
    }
    json_t *jd = result_json(r, devs.name[i], sys->natoms);
    if (!r->ok) {
      if (!json) printf("  error: %s\n", r->why);
      failed++;
      rc = 1;
      json_array_append_new(jdevs, jd);
      continue;
    }
    ran++;
    if (lead) first = i;
    int same = !strcmp(r->state_hex, res[first].state_hex) && !strcmp(r->forces_hex, res[first].forces_hex);
    int tsame = thermo_equal(&r->log, &res[first].log);
    agree += same && tsame;
    if (!json) {
      if (!lead) printf("  thermo output %s device [%zu]'s\n", tsame ? "identical to" : "DIFFERS from", devs.index[first]);
      printf("  forces(step 0) sha256 %s\n  final state    sha256 %s\n", r->forces_hex, r->state_hex);
      printf("  %.3f s for %zu steps (%.1f steps/s), path %s, %zu neighbour-list builds\n", r->seconds, steps,
             r->seconds > 0 ? (double)steps / r->seconds : 0.0, rcl_md_path_name(r->path), r->last.neighbor_builds);
    }
    if (native) {
      run_result nr;
      run_one(&nr, ndevs.ctx[i], &sp, NULL, NULL, 0);
      if (nr.ok) {
        cli_drift d;
        cli_drift_compute(&d, r->state, nr.state, 6 * sys->natoms, sp.dt);
        json_object_set_new(jd, "native",
                            json_pack("{s:f,s:f,s:f,s:s,s:f,s:o}", "pe", nr.last.pe / (double)sys->natoms, "etotal",
                                      nr.last.etotal / (double)sys->natoms, "pressure", nr.last.pressure,
                                      "state_sha256", nr.state_hex, "time_s", nr.seconds, "state_drift",
                                      cli_drift_json(&d)));
        if (!json)
          printf("  native build: %.3f s, final state %s (%zu of %zu values differ, max |diff| %.3g); "
                 "Etot/N %.8f vs %.8f\n", nr.seconds, d.differing ? "differs" : "identical", d.differing, d.n,
                 d.max_abs, nr.last.etotal / (double)sys->natoms, r->last.etotal / (double)sys->natoms);
      } else {
        json_object_set_new(jd, "native", json_pack("{s:s}", "error", nr.why));
        if (!json) printf("  native build: error: %s\n", nr.why);
      }
      result_free(&nr);
    }
    json_array_append_new(jdevs, jd);
  }
  json_t *jref = NULL;
  int ref_agree = 1;
  if (reference && first != (size_t)-1) {
    run_result rr;
    run_one(&rr, NULL, &sp, NULL, NULL, 0);
    ref_agree = rr.ok && !strcmp(rr.state_hex, res[first].state_hex) && !strcmp(rr.forces_hex, res[first].forces_hex) &&
                thermo_equal(&rr.log, &res[first].log);
    jref = result_json(&rr, "host reference", sys->natoms);
    json_object_set_new(jref, "agrees", json_boolean(ref_agree));
    if (!json) {
      if (rr.ok)
        printf("host reference: %.3f s, forces %.16s..., state %.16s... — %s\n", rr.seconds, rr.forces_hex,
               rr.state_hex, ref_agree ? "identical to the devices" : "DIFFERS from the devices");
      else
        printf("host reference: error: %s\n", rr.why);
    }
    result_free(&rr);
  }
  int ok = res && ran > 0 && agree == ran && ref_agree && rc == 0;
  if (json) {
    json_t *top = json_pack("{s:s,s:s,s:I,s:s,s:s,s:f,s:b,s:f,s:I,s:o,s:I,s:I,s:b}", "command", "md", "input", what,
                            "natoms", (json_int_t)sys->natoms, "dtype", rcl_dtype_name(sp.dt), "units", "lj", "cutoff",
                            cutoff, "shift", shift, "dt", dtime, "steps", (json_int_t)steps, "devices", jdevs, "ran",
                            (json_int_t)ran, "unsupported", (json_int_t)unsupported, "all_agree", ok);
    if (jref) json_object_set_new(top, "reference", jref);
    cli_json_print(top);
  } else {
    json_decref(jdevs);
    json_decref(jref);
    if (failed)
      printf("FAILED: the simulation stopped with an error on %zu device(s)\n", failed);
    else
      printf("%s: %zu of %zu device(s) ran, %zu agree (forces, thermo, final state)%s\n", ok ? "AGREE" : "DISAGREE",
             ran, devs.count, agree, unsupported ? "; the others cannot run this configuration" : "");
  }
  if (!rc) rc = ok ? 0 : 1;
  for (size_t i = 0; res && i < devs.count; i++) result_free(&res[i]);
  free(res);
out:
  cli_devices_close(&ndevs);
  cli_devices_close(&devs);
  if (traj && fclose(traj) != 0 && !rc) rc = cli_error("writing %s failed", outpath);
  if (logf && fclose(logf) != 0 && !rc) rc = cli_error("writing %s failed", logpath);
  rcl_md_system_free(sys);
  return rc;
}
