/* reprocl md: a Lennard-Jones NVE simulation on one or every device — thermo output, the SHA-256
 * digests of the step-0 forces and of the final positions and velocities per device, and whether all
 * devices (and optionally the host reference and a native build) agree. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run_common.h"

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
  if (r->print) cli_md_thermo_line(stdout, t);
  if (r->logf) cli_md_thermo_line(r->logf, t);
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

/* One simulation on ctx (NULL: the host reference) or with split s non-NULL over its devices. Failures are
 * recorded in r->why, not fatal. */
static void run_one(run_result *r, rcl_context *ctx, rcl_split *s, const run_spec *sp, FILE *traj, FILE *logf,
                    int print) {
  memset(r, 0, sizeof *r);
  size_t n3 = 3 * sp->sys->natoms, es = rcl_dtype_size(sp->dt);
  rcl_md *md = NULL;
  int native = ctx && rcl_context_mode(ctx) == RCL_MODE_NATIVE;
  run_ctx rc = {&r->log, traj,      logf,  sp->every, traj ? sp->dump_every : sp->every, sp->steps, sp->sys,
                sp->dt,  sp->dtime, print, 0};
  int64_t *f = malloc(n3 * (native ? es : 8));
  r->state = malloc(2 * n3 * es);
  if (!f || !r->state) {
    snprintf(r->why, sizeof r->why, "out of host memory");
    r->status = RCL_ERR_OUT_OF_MEMORY;
    free(f);
    return;
  }
  int st = s ? rcl_split_md_create(&md, s, sp->dt, sp->sys, sp->lj, &sp->opts)
             : rcl_md_create(&md, ctx, sp->dt, sp->sys, sp->lj, &sp->opts);
  if (!st) st = native ? rcl_md_get_forces(md, f, NULL) : rcl_md_get_forces(md, NULL, f);
  if (!st) cli_digest(r->forces_hex, f, n3 * (native ? es : 8));
  free(f);
  if (!st && print) fputs(cli_md_thermo_head, stdout);
  if (!st && logf) fputs(cli_md_thermo_head, logf);
  double t1 = cli_now();
  if (!st) st = rcl_md_run(md, sp->steps, sp->dtime, gcd(rc.thermo_every, rc.dump_every), on_thermo, &rc);
  r->seconds = cli_now() - t1;
  if (!st && rc.failed) st = RCL_ERR_IO;
  if (!st) st = rcl_md_thermo_get(md, &r->last);
  if (!st) st = rcl_md_get_state(md, r->state, (char *)r->state + n3 * es);
  if (!st) {
    cli_digest(r->state_hex, r->state, 2 * n3 * es);
    r->path = rcl_md_path_used(md);
    r->ok = 1;
  } else {
    r->status = st;
    snprintf(r->why, sizeof r->why, "%s", rc.failed && st == RCL_ERR_IO ? "writing output failed" : rcl_error_last());
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
                   "forces_sha256", r->forces_hex, "state_sha256", r->state_hex, "time_s", r->seconds, "steps_per_s",
                   r->seconds > 0 ? (double)r->last.step / r->seconds : 0.0, "neighbor_builds",
                   (json_int_t)r->last.neighbor_builds, "thermo", thermo_json(&r->log, natoms));
}

/* What md was asked for, the system it describes, and the devices' results. */
typedef struct {
  cli_md_args a; /* the system and integration options */
  const char *device, *outpath, *logpath;
  size_t dump;
  int native, reference, json;
  run_spec sp;
  rcl_md_lj lj;
  rcl_md_system *sys;
  char what[512];
  FILE *traj, *logf;
  run_result *res;      /* per device */
  cli_split_opts split; /* --split: one more row, the simulation over several devices at once */
  cli_split_run sr;
  size_t first, failed; /* the first device that ran ((size_t)-1: none); devices that failed */
  int status;           /* the exit status of the first failure */
} md_cmd;

static const char md_synopsis[] =
    "(--input FILE.data|FILE.xyz | --lattice fcc|bcc|sc --cells N --density R --temp T\n"
    "                   [--seed S]) [--cutoff 2.5] [--shift] [--mixing geometric|arithmetic] [--skin 0.3]\n"
    "                  [--dt 0.005] [--steps S] [--thermo K] [--dtype f32|f64] [--device D|all]\n"
    "                  [--path auto|gather|symmetric|allpairs|task] [--local L] [--native] [--reference]\n"
    "                  [--split DEVICES [--split-weights W1:W2:...]] [--out traj.xyz] [--dump K]\n"
    "                  [--log thermo.txt] [--json]";

static const char md_about[] =
    "Runs a Lennard-Jones NVE simulation (velocity Verlet, LJ units) on the chosen devices (default:\n"
    "$REPROCL_DEVICE or device 0; 'all' for every device) and prints the thermo output (energies per atom,\n"
    "as LAMMPS prints them in lj units) and, per device, the SHA-256 digest of the step-0 forces (the\n"
    "int64 fixed-point sums) and of the final positions and velocities. --steps 0 computes the forces\n"
    "and energies of the input only. --thermo K prints every K steps (0: first and last). --native also\n"
    "runs the same kernels built with the vendor's defaults and float accumulation, and shows how far\n"
    "they drift; --reference also runs the O(N^2) host reference of the contract (small systems).\n"
    "--out writes extended-XYZ frames of the first device every --dump K steps (default: the thermo\n"
    "interval), --log its thermo log. --split DEVICES also runs the simulation over several devices at once\n"
    "(slabs of the box, rcl_split_md_create) and says whether it gives the first device's bits.";

/* Parses the options into m. Returns 0, CLI_OPT_HELP or an exit status. */
static int md_parse(md_cmd *m, int argc, char **argv) {
  const cli_opt opts[] = {
      CLI_MD_OPTS(&m->a),
      CLI_OPT_DTYPE(&m->sp.dt),
      CLI_SECTION("devices"),
      CLI_OPT_DEVICE(&m->device, CLI_DEFAULT_DEVICE),
      CLI_VAL("path", &m->sp.opts.path, cli_opt_md_path, "auto|gather|symmetric|allpairs|task",
              "the force computation (every one gives the same bits)"),
      CLI_VAL("local", &m->sp.opts.local_size, cli_opt_size, "L", "work-group size (0: default)"),
      CLI_OPT_NATIVE(&m->native),
      CLI_FLAG("reference", &m->reference, "also run the O(N^2) host reference of the contract (small systems)"),
      CLI_OPT_SPLIT(&m->split),
      CLI_SECTION("output"),
      CLI_OPT_OUT(&m->outpath, "extended-XYZ frames of the first device"),
      CLI_VAL("dump", &m->dump, cli_opt_size, "K", "a frame every K steps (default: the thermo interval)"),
      CLI_STR("log", &m->logpath, "FILE", "the first device's thermo log"),
      CLI_OPT_JSON(&m->json),
      CLI_END};
  const cli_cmd_spec spec = {"md", md_synopsis, md_about, opts, CLI_RUN_FINDING, 0, 0};
  return cli_md_args_check(&m->a, cli_opt_parse(&spec, argc, argv, NULL, NULL));
}

/* The system (read or generated), its potential checked, and the run's description m->sp. */
static int md_system(md_cmd *m) {
  if (cli_md_system(&m->sys, &m->lj, m->what, sizeof m->what, &m->a))
    return m->a.input ? cli_fail("reading %s", m->a.input) : cli_fail("--lattice");
  m->sp.opts.skin = m->a.skin;
  m->sp.sys = m->sys;
  m->sp.lj = &m->lj;
  m->sp.steps = m->a.steps;
  m->sp.every = m->a.every ? m->a.every : (m->a.steps ? m->a.steps : 1);
  m->sp.dump_every = m->dump ? m->dump : m->sp.every;
  m->sp.dtime = m->a.dtime;
  if (rcl_md_check(m->sys, &m->lj, m->sp.dt)) return cli_error("%s", rcl_error_last());
  if (m->outpath && !(m->traj = fopen(m->outpath, "w"))) return cli_error("cannot open %s for writing", m->outpath);
  if (m->logpath && !(m->logf = fopen(m->logpath, "w"))) return cli_error("cannot open %s for writing", m->logpath);
  return 0;
}

/* A device skipped: it cannot run this configuration. */
static void skipped(cli_run *r, const char *name, const char *why, int json) {
  r->tally.unsupported++;
  if (!json) printf("  skipped: %s\n", why);
  json_array_append_new(r->jdevs, json_pack("{s:s,s:s}", "name", name, "skipped", why));
}

/* The native build beside device result r: its line and jd's "native" (a failure there is reported, not fatal). */
static void native_row(const md_cmd *m, json_t *jd, const run_result *r, rcl_context *nctx) {
  run_result nr;
  double n = (double)m->sys->natoms;
  run_one(&nr, nctx, NULL, &m->sp, NULL, NULL, 0);
  if (nr.ok) {
    cli_drift d;
    cli_drift_compute(&d, r->state, nr.state, 6 * m->sys->natoms, m->sp.dt);
    json_object_set_new(jd, "native",
                        json_pack("{s:f,s:f,s:f,s:s,s:f,s:o}", "pe", nr.last.pe / n, "etotal", nr.last.etotal / n,
                                  "pressure", nr.last.pressure, "state_sha256", nr.state_hex, "time_s", nr.seconds,
                                  "state_drift", cli_drift_json(&d)));
    if (!m->json)
      printf("  native build: %.3f s, final state %s (%zu of %zu values differ, max |diff| %.3g); "
             "Etot/N %.8f vs %.8f\n",
             nr.seconds, d.differing ? "differs" : "identical", d.differing, d.n, d.max_abs, nr.last.etotal / n,
             r->last.etotal / n);
  } else {
    json_object_set_new(jd, "native", json_pack("{s:s}", "error", nr.why));
    if (!m->json) printf("  native build: error: %s\n", nr.why);
  }
  result_free(&nr);
}

/* Device i's successful run r: compared with the first device, tallied, printed. */
static void device_result(md_cmd *m, cli_tally *t, const run_result *r, const cli_devices *devs) {
  const run_result *f = &m->res[m->first];
  int lead = r == f;
  int same = !strcmp(r->state_hex, f->state_hex) && !strcmp(r->forces_hex, f->forces_hex);
  int tsame = thermo_equal(&r->log, &f->log);
  cli_tally_add(t, r->state_hex, same && tsame);
  if (m->json) return;
  if (!lead)
    printf("  thermo output %s device [%zu]'s\n", tsame ? "identical to" : "DIFFERS from", devs->index[m->first]);
  printf("  forces(step 0) sha256 %s\n  final state    sha256 %s\n", r->forces_hex, r->state_hex);
  printf("  %.3f s for %zu steps (%.1f steps/s), path %s, %zu neighbour-list builds\n", r->seconds, m->a.steps,
         r->seconds > 0 ? (double)m->a.steps / r->seconds : 0.0, rcl_md_path_name(r->path), r->last.neighbor_builds);
}

/* Device i (and its native twin): runs (the first to run writes --out and --log and prints the thermo). */
static void device_row(md_cmd *m, cli_run *run, size_t i) {
  const cli_devices *devs = &run->devs;
  const char *why;
  if (!m->json) printf("[%zu] %s\n", devs->index[i], devs->name[i]);
  if (rcl_device_profile_support(rcl_context_profile(devs->ctx[i]), RCL_FAMILY_MD, m->sp.dt, &why) ==
      RCL_SUPPORT_NONE) {
    skipped(run, devs->name[i], why, m->json);
    return;
  }
  int lead = m->first == (size_t)-1;
  run_result *r = &m->res[i];
  run_one(r, devs->ctx[i], NULL, &m->sp, lead ? m->traj : NULL, lead ? m->logf : NULL, lead && !m->json);
  if (!r->ok && r->status == RCL_ERR_UNSUPPORTED) { /* e.g. the symmetric path without int64 atomics */
    skipped(run, devs->name[i], r->why, m->json);
    return;
  }
  json_t *jd = result_json(r, devs->name[i], m->sys->natoms);
  json_array_append_new(run->jdevs, jd);
  if (!r->ok) {
    if (!m->json) printf("  error: %s\n", r->why);
    if (!m->failed++) m->status = cli_exit_status(r->status);
    return;
  }
  if (lead) m->first = i;
  device_result(m, &run->tally, r, devs);
  if (m->native) native_row(m, jd, r, run->ndevs.ctx[i]);
}

/* --reference: the host reference against the first device. Returns its JSON entry; *agrees, *status. */
static json_t *reference_row(const md_cmd *m, int *agrees, int *status) {
  run_result rr;
  const run_result *f = &m->res[m->first];
  run_one(&rr, NULL, NULL, &m->sp, NULL, NULL, 0);
  *agrees = rr.ok && !strcmp(rr.state_hex, f->state_hex) && !strcmp(rr.forces_hex, f->forces_hex) &&
            thermo_equal(&rr.log, &f->log);
  *status = rr.ok ? (*agrees ? CLI_EXIT_OK : CLI_EXIT_FINDING) : cli_exit_status(rr.status);
  json_t *jref = result_json(&rr, "host reference", m->sys->natoms);
  json_object_set_new(jref, "agrees", json_boolean(*agrees));
  if (!m->json && rr.ok)
    printf("host reference: %.3f s, forces %.16s..., state %.16s... — %s\n", rr.seconds, rr.forces_hex, rr.state_hex,
           *agrees ? "identical to the devices" : "DIFFERS from the devices");
  else if (!m->json)
    printf("host reference: error: %s\n", rr.why);
  result_free(&rr);
  return jref;
}

/* --split: the simulation over the split's devices, against the first device's forces, thermo and state. */
static int split_row(md_cmd *m) {
  cli_split_run *sr = &m->sr;
  if (!sr->s) return 0;
  run_result r; /* weights: given, else the split's own for MD (rcl_split_tune has no MD problem) */
  run_one(&r, NULL, sr->s, &m->sp, NULL, NULL, 0);
  if (!r.ok) {
    result_free(&r);
    return cli_split_fail(sr);
  }
  const run_result *f = m->first == (size_t)-1 ? NULL : &m->res[m->first];
  int ok =
      f && !strcmp(r.state_hex, f->state_hex) && !strcmp(r.forces_hex, f->forces_hex) && thermo_equal(&r.log, &f->log);
  double sps = r.seconds > 0 ? (double)m->a.steps / r.seconds : 0.0;
  if (!m->json)
    printf("%s: forces %.16s..., state %.16s..., %.3f s (%.1f steps/s), %zu decompositions — %s\n", sr->label,
           r.forces_hex, r.state_hex, r.seconds, sps, r.last.neighbor_builds,
           ok  ? "identical to the first device"
           : f ? "DIFFERS from the first device"
               : "no device to compare with");
  cli_split_report(sr, r.state_hex, r.seconds, ok, "atoms", m->json,
                   json_pack("{s:s,s:s,s:f,s:I}", "forces_sha256", r.forces_hex, "state_sha256", r.state_hex,
                             "steps_per_s", sps, "decompositions", (json_int_t)r.last.neighbor_builds));
  result_free(&r);
  return 0;
}

/* The summary (JSON or the last line). Returns the exit status. */
static int report(md_cmd *m, const cli_tally *t, json_t *jdevs, json_t *jref, int ref_status, size_t devices) {
  int ok = cli_tally_ok(t) && ref_status == 0 && !m->failed;
  if (m->json) {
    json_t *top =
        json_pack("{s:s,s:s,s:I,s:s,s:s,s:f,s:b,s:f,s:I,s:O,s:I,s:I,s:b}", "command", "md", "input", m->what, "natoms",
                  (json_int_t)m->sys->natoms, "dtype", rcl_dtype_name(m->sp.dt), "units", "lj", "cutoff", m->a.cutoff,
                  "shift", m->a.shift, "dt", m->a.dtime, "steps", (json_int_t)m->a.steps, "devices", jdevs, "ran",
                  (json_int_t)t->ran, "unsupported", (json_int_t)t->unsupported, "all_agree", ok);
    if (jref) json_object_set(top, "reference", jref);
    cli_split_json(&m->sr, top);
    cli_json_print(top);
  } else if (m->failed) {
    printf("FAILED: the simulation stopped with an error on %zu device(s)\n", m->failed);
  } else {
    printf("%s: %zu of %zu device(s) ran, %zu agree (forces, thermo, final state)%s\n", ok ? "AGREE" : "DISAGREE",
           t->ran, devices, t->agree, t->unsupported ? "; the others cannot run this configuration" : "");
    cli_split_summary(&m->sr);
  }
  if (m->failed) return m->status;
  if (!cli_tally_ok(t)) return cli_tally_status(t);
  return cli_split_status(&m->sr, ref_status);
}

int cmd_md(int argc, char **argv) {
  md_cmd m;
  memset(&m, 0, sizeof m);
  m.lj = (rcl_md_lj)RCL_MD_LJ_INIT;
  m.sp.opts = (rcl_md_options)RCL_MD_OPTIONS_INIT;
  m.sp.dt = RCL_F32;
  m.a = (cli_md_args)CLI_MD_ARGS_INIT;
  m.first = (size_t)-1;
  int rc = md_parse(&m, argc, argv);
  if (rc) return rc == CLI_OPT_HELP ? 0 : rc;
  json_t *jref = NULL;
  cli_run r;
  cli_run_init(&r);
  if ((rc = md_system(&m)) || (rc = cli_run_open(&r, m.device, m.native)) || (rc = cli_split_open(&m.sr, &m.split)))
    goto out;
  if (!(m.res = calloc(r.devs.count, sizeof *m.res))) {
    rc = cli_error("out of host memory");
    goto out;
  }
  if (!m.json)
    printf("md: %zu atoms (%s), %s, cutoff %g%s, dt %g, %zu steps\n", m.sys->natoms, m.what, rcl_dtype_name(m.sp.dt),
           m.a.cutoff, m.a.shift ? " shifted" : "", m.a.dtime, m.a.steps);
  for (size_t i = 0; i < r.devs.count; i++) device_row(&m, &r, i);
  int ref_status = 0, ref_agrees = 1;
  if (m.reference && m.first != (size_t)-1) jref = reference_row(&m, &ref_agrees, &ref_status);
  if ((rc = split_row(&m)) != 0) goto out;
  rc = report(&m, &r.tally, r.jdevs, jref, ref_status, r.devs.count);
out:
  json_decref(jref);
  for (size_t i = 0; m.res && i < r.devs.count; i++) result_free(&m.res[i]);
  free(m.res);
  cli_run_close(&r);
  cli_split_close(&m.sr);
  if (m.traj && fclose(m.traj) != 0 && !rc) rc = cli_error("writing %s failed", m.outpath);
  if (m.logf && fclose(m.logf) != 0 && !rc) rc = cli_error("writing %s failed", m.logpath);
  rcl_md_system_free(m.sys);
  return rc;
}
