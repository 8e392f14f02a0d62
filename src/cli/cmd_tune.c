/* reprocl tune: tunes kernels on devices now (whatever REPROCL_TUNING says) and stores the choices in
 * the tuning cache, so later runs start tuned. Every candidate's output is checked bit for bit against
 * the default configuration's; a mismatch is reported and makes the exit status 1. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

static int kernel_selected(const char *list, const char *name) {
  if (!list || !strcmp(list, "all")) return 1;
  size_t nl = strlen(name);
  for (const char *p = list; *p;) {
    const char *c = strchr(p, ',');
    size_t l = c ? (size_t)(c - p) : strlen(p);
    if (l == nl && !strncmp(p, name, l)) return 1;
    /* a family prefix selects all its kernels: "reduce" */
    if (l < nl && !strncmp(p, name, l) && name[l] == '.') return 1;
    p += l + (c != NULL);
  }
  return 0;
}

static void on_progress(void *user, size_t done, size_t total) {
  (void)user;
  (void)done;
  (void)total;
}

/* The options of a tuning run. */
typedef struct {
  const char *kernels, *device, *dtypes;
  double budget;
  size_t size;
  int samples, no_store, json;
} tune_opts;

static int opt_budget(void *target, const char *opt, const char *value) {
  int rc = cli_parse_double(target, opt, value);
  if (!rc && !(*(double *)target > 0)) rc = cli_error("%s must be positive, got %s", opt, value);
  return rc;
}

static int opt_samples(void *target, const char *opt, const char *value) {
  return cli_parse_int(target, opt, value, 3, 31);
}

static int opt_dtypes(void *target, const char *opt, const char *value) {
  if (strcmp(value, "all") && strcmp(value, "f32") && strcmp(value, "f64"))
    return cli_error("%s expects f32, f64 or all, got \"%s\"", opt, value);
  *(const char **)target = value;
  return 0;
}

/* One tuning's result: a JSON object, and a table row unless --json. Returns the mismatches. */
static size_t report_one(json_t *results, const rcl_tune_report *r, const char *dev, const char *kn, rcl_dtype dt,
                         size_t n, int json) {
  char choice[256] = "";
  json_t *jp = json_object();
  for (size_t j = 0; j < r->choice.count; j++) {
    snprintf(choice + strlen(choice), sizeof choice - strlen(choice), "%s%s=%s", j ? " " : "", r->choice.params[j].name,
             r->choice.params[j].label);
    json_object_set_new(jp, r->choice.params[j].name, json_string(r->choice.params[j].label));
  }
  double speedup = r->choice.time_s > 0 ? r->choice.default_time_s / r->choice.time_s : 1.0;
  json_t *o = json_pack("{s:s,s:s,s:s,s:I,s:I,s:o,s:f,s:f,s:f,s:f,s:I,s:b,s:b,s:f,s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I},s:s}",
                        "device", dev, "kernel", kn, "dtype", rcl_dtype_name(dt), "n", (json_int_t)n, "size_log2",
                        (json_int_t)r->choice.size_log2, "choice", jp, "default_time_s", r->choice.default_time_s,
                        "tuned_time_s", r->choice.time_s, "speedup", speedup, "spread", r->choice.spread, "samples",
                        (json_int_t)r->choice.samples, "improved", r->improved, "budget_exhausted", r->budget_exhausted,
                        "tuning_s", r->tuning_s, "candidates", "space", (json_int_t)r->candidates, "invalid",
                        (json_int_t)r->invalid, "duplicates", (json_int_t)r->duplicates, "timed", (json_int_t)r->timed,
                        "pruned", (json_int_t)r->pruned, "mismatches", (json_int_t)r->mismatches, "launches",
                        (json_int_t)r->launches, "reference_digest", r->reference_digest);
  if (r->mismatches) json_object_set_new(o, "mismatch", json_string(r->mismatch));
  json_object_set_new(o, "timing", json_string(r->host_timing ? "host" : "profiling events"));
  json_array_append_new(results, o);
  if (json) return r->mismatches;
  char sz[16], dts[16], tt[16];
  snprintf(sz, sizeof sz, "2^%u", r->choice.size_log2);
  if (r->choice.samples) {
    snprintf(dts, sizeof dts, "%.3f ms", r->choice.default_time_s * 1e3);
    snprintf(tt, sizeof tt, "%.3f ms", r->choice.time_s * 1e3);
  } else {
    snprintf(dts, sizeof dts, "-");
    snprintf(tt, sizeof tt, "-");
  }
  printf("%-30.30s %-20s %-4s %-6s %10s %10s %6.2fx %6.1fs  %s%s\n", dev, kn, rcl_dtype_name(dt), sz, dts, tt, speedup,
         r->tuning_s, choice,
         r->budget_exhausted && !r->choice.samples ? " (budget too small to measure: default kept)" : "");
  if (r->mismatches) printf("  MISMATCH: %s\n", r->mismatch);
  fflush(stdout);
  return r->mismatches;
}

/* State of a tuning run across devices, kernels and dtypes. */
typedef struct {
  const tune_opts *o;
  cli_progress prog;
  json_t *results;
  size_t mismatches;
} tune_run;

/* Tunes kernel kn in dtype dt on device d of devs; an unsupported one is recorded as skipped. */
static int tune_one(tune_run *t, const cli_devices *devs, size_t d, const char *kn, rcl_dtype dt) {
  char what[96];
  snprintf(what, sizeof what, "%s %s", kn, rcl_dtype_name(dt));
  cli_progress_step(&t->prog, what);
  rcl_tune_options to = RCL_TUNE_OPTIONS_INIT;
  to.budget_ms = t->o->budget;
  to.samples = t->o->samples;
  to.store = !t->o->no_store;
  to.progress = on_progress;
  rcl_tune_report r;
  size_t n = t->o->size ? t->o->size : rcl_tune_kernel_default_size(kn);
  int trc = rcl_tune(&r, devs->ctx[d], kn, dt, n, &to);
  if (trc == RCL_ERR_UNSUPPORTED) {
    json_array_append_new(t->results, json_pack("{s:s,s:s,s:s,s:s}", "device", devs->name[d], "kernel", kn, "dtype",
                                                rcl_dtype_name(dt), "skipped", rcl_error_last()));
    return 0;
  }
  if (trc) {
    cli_progress_end(&t->prog);
    return cli_fail("tuning %s on %s", what, devs->name[d]);
  }
  if (!t->o->json) cli_progress_end(&t->prog);
  t->mismatches += report_one(t->results, &r, devs->name[d], kn, dt, n, t->o->json);
  return 0;
}

/* Every selected kernel and dtype on device d. */
static int tune_device(tune_run *t, const cli_devices *devs, size_t d) {
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  int rc = 0;
  for (size_t i = 0; rcl_tune_kernel_name(i) && !rc; i++) {
    const char *kn = rcl_tune_kernel_name(i);
    if (!kernel_selected(t->o->kernels, kn)) continue;
    for (int k = 0; k < 2 && !rc; k++)
      if (!strcmp(t->o->dtypes, "all") || !strcmp(t->o->dtypes, rcl_dtype_name(dts[k])))
        rc = tune_one(t, devs, d, kn, dts[k]);
  }
  const char *w = rcl_cache_warning(devs->ctx[d]);
  if (w && !t->o->json) fprintf(stderr, "reprocl tune: note: %s\n", w);
  return rc;
}

static int tune_run_all(const tune_opts *o, size_t nk) {
  cli_devices devs;
  int rc = cli_devices_open(&devs, o->device, RCL_MODE_REPRODUCIBLE);
  if (rc) return rc;
  tune_run t = {o, {0}, json_array(), 0};
  cli_progress_start(&t.prog, devs.count * nk * (strcmp(o->dtypes, "all") ? 1 : 2), "tuning", o->json);
  if (!o->json)
    printf("%-30.30s %-20s %-4s %-6s %10s %10s %7s %7s  %s\n", "device", "kernel", "type", "size", "default", "tuned",
           "speedup", "tuning", "choice");
  for (size_t d = 0; d < devs.count && !rc; d++) rc = tune_device(&t, &devs, d);
  cli_progress_end(&t.prog);
  if (!rc && o->json) {
    const char *dir = devs.count ? rcl_cache_dir(devs.ctx[0]) : NULL;
    cli_json_print(json_pack("{s:s,s:s,s:f,s:s?,s:I,s:o}", "reprocl", REPROCL_VERSION_STRING, "command", "tune",
                             "budget_ms", o->budget, "cache_dir", dir, "mismatches", (json_int_t)t.mismatches,
                             "results", t.results));
    t.results = NULL;
  }
  json_decref(t.results);
  cli_devices_close(&devs);
  if (!rc && t.mismatches) {
    fprintf(stderr,
            "reprocl tune: %zu candidate(s) gave different bits than the default configuration (a bug; "
            "they were excluded)\n",
            t.mismatches);
    rc = CLI_EXIT_FINDING;
  }
  return rc;
}

int cmd_tune(int argc, char **argv) {
  tune_opts o = {"all", NULL, "all", 10000, 0, 0, 0, 0};
  const cli_opt opts[] = {
      CLI_STR("kernel", &o.kernels, "K[,K...]|all", "kernels or families to tune (default: all; listed below)"),
      CLI_OPT_DEVICE(&o.device, CLI_DEFAULT_DEVICE),
      CLI_VAL("budget-ms", &o.budget, opt_budget, "B", "tuning budget per kernel and dtype in ms (default 10000)"),
      CLI_VAL("dtype", &o.dtypes, opt_dtypes, "f32|f64|all", "element type (default: all)"),
      CLI_VAL("size", &o.size, cli_opt_size, "N", "problem size in elements (default: the kernel's standard size)"),
      CLI_VAL("samples", &o.samples, opt_samples, "S", "timed samples per candidate, 3 to 31"),
      CLI_FLAG("no-store", &o.no_store, "do not write the choices to the tuning cache"),
      CLI_OPT_JSON(&o.json),
      CLI_NOT_HERE("native", "tuning keeps only candidates whose output equals the default configuration's\n"
                             "bit for bit, which only reproducible builds promise; it tunes those"),
      CLI_END};
  char about[4096];
  int w = snprintf(about, sizeof about, "%s",
                   "Tunes each kernel's launch parameters on each device for problems of N elements (default: the\n"
                   "kernel's standard size, 2^22 for reductions) within a budget of B ms per kernel and dtype\n"
                   "(default 10000), and stores the choice in the tuning cache (`reprocl cache path`). Prints per\n"
                   "kernel the default and tuned time, the speed-up, the choice, the tuning time and the candidates\n"
                   "checked.\nKernels:");
  for (size_t i = 0; rcl_tune_kernel_name(i) && w > 0 && (size_t)w < sizeof about; i++)
    w += snprintf(about + w, sizeof about - (size_t)w, " %s", rcl_tune_kernel_name(i));
  const cli_cmd_spec spec = {"tune",
                             "[--kernel K[,K...]|all] [--device D|all] [--budget-ms B] [--dtype f32|f64|all]\n"
                             "                    [--size N] [--samples S] [--no-store] [--json]",
                             about,
                             opts,
                             "a candidate gave different bits than the default configuration (a bug)",
                             0,
                             0};
  CLI_PARSE(&spec, argc, argv, NULL, NULL);
  size_t nk = 0;
  for (size_t i = 0; rcl_tune_kernel_name(i); i++) nk += kernel_selected(o.kernels, rcl_tune_kernel_name(i));
  if (nk == 0) return cli_error("--kernel \"%s\" names no tunable kernel (see reprocl tune --help)", o.kernels);
  return tune_run_all(&o, nk);
}
