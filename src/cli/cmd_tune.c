/* reprocl tune: tunes kernels on devices now (whatever REPROCL_TUNING says) and stores the choices in
 * the tuning cache, so later runs start tuned. Every candidate's output is checked bit for bit against
 * the default configuration's; a mismatch is reported and makes the exit status 1. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void) {
  printf("usage: reprocl tune [--kernel K[,K...]|all] [--device D|all] [--budget-ms B] [--dtype f32|f64|all]\n"
         "                    [--size N] [--samples S] [--no-store] [--json]\n\n"
         "Tunes each kernel's launch parameters on each device for problems of N elements (default: the\n"
         "kernel's standard size, 2^22 for reductions) within a budget of B ms per kernel and dtype\n"
         "(default 10000), and stores the choice in the tuning cache (`reprocl cache path`). Prints per kernel\n"
         "the default and tuned time, the speed-up, the choice, the tuning time and the candidates checked.\n"
         "Kernels:");
  for (size_t i = 0; rcl_tune_kernel_name(i); i++) printf(" %s", rcl_tune_kernel_name(i));
  printf("\n");
}

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

int cmd_tune(int argc, char **argv) {
  static const struct option opts[] = {{"kernel", required_argument, 0, 'k'},
                                       {"device", required_argument, 0, 'd'},
                                       {"budget-ms", required_argument, 0, 'b'},
                                       {"dtype", required_argument, 0, 't'},
                                       {"size", required_argument, 0, 'n'},
                                       {"samples", required_argument, 0, 's'},
                                       {"no-store", no_argument, 0, 'S'},
                                       {"json", no_argument, 0, 'j'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *kernels = "all", *device = NULL, *dtypes = "all";
  double budget = 10000;
  size_t size = 0;
  int samples = 0, store = 1, json = 0, c, rc = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case 'k':
      kernels = optarg;
      break;
    case 'd':
      device = optarg;
      break;
    case 'b':
      rc = cli_parse_double(&budget, "--budget-ms", optarg);
      if (!rc && !(budget > 0)) rc = cli_error("--budget-ms must be positive, got %s", optarg);
      break;
    case 't':
      dtypes = optarg;
      break;
    case 'n':
      rc = cli_parse_size(&size, "--size", optarg);
      break;
    case 's':
      rc = cli_parse_int(&samples, "--samples", optarg, 3, 31);
      break;
    case 'S':
      store = 0;
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
  if (strcmp(dtypes, "all") && strcmp(dtypes, "f32") && strcmp(dtypes, "f64"))
    return cli_error("--dtype expects f32, f64 or all, got \"%s\"", dtypes);
  size_t nk = 0;
  for (size_t i = 0; rcl_tune_kernel_name(i); i++) nk += kernel_selected(kernels, rcl_tune_kernel_name(i));
  if (nk == 0) return cli_error("--kernel \"%s\" names no tunable kernel (see reprocl tune --help)", kernels);
  cli_devices devs;
  if ((rc = cli_devices_open(&devs, device, RCL_MODE_REPRODUCIBLE)) != 0) return rc;
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  cli_progress prog;
  cli_progress_start(&prog, devs.count * nk * (strcmp(dtypes, "all") ? 1 : 2), "tuning", json);
  json_t *results = json_array();
  size_t mismatches = 0;
  if (!json)
    printf("%-30.30s %-20s %-4s %-6s %10s %10s %7s %7s  %s\n", "device", "kernel", "type", "size", "default", "tuned",
           "speedup", "tuning", "choice");
  for (size_t d = 0; d < devs.count && !rc; d++) {
    for (size_t i = 0; rcl_tune_kernel_name(i) && !rc; i++) {
      const char *kn = rcl_tune_kernel_name(i);
      if (!kernel_selected(kernels, kn)) continue;
      for (int t = 0; t < 2 && !rc; t++) {
        if (strcmp(dtypes, "all") && strcmp(dtypes, rcl_dtype_name(dts[t]))) continue;
        char what[96];
        snprintf(what, sizeof what, "%s %s", kn, rcl_dtype_name(dts[t]));
        cli_progress_step(&prog, what);
        rcl_tune_options to = RCL_TUNE_OPTIONS_INIT;
        to.budget_ms = budget;
        to.samples = samples;
        to.store = store;
        to.progress = on_progress;
        rcl_tune_report r;
        size_t n = size ? size : rcl_tune_kernel_default_size(kn);
        int trc = rcl_tune(&r, devs.ctx[d], kn, dts[t], n, &to);
        if (trc == RCL_ERR_UNSUPPORTED) {
          json_array_append_new(results, json_pack("{s:s,s:s,s:s,s:s}", "device", devs.name[d], "kernel", kn, "dtype",
                                                   rcl_dtype_name(dts[t]), "skipped", rcl_error_last()));
          continue;
        }
        if (trc) {
          cli_progress_end(&prog);
          rc = cli_fail("tuning %s on %s", what, devs.name[d]);
          break;
        }
        mismatches += r.mismatches;
        char choice[256] = "";
        json_t *jp = json_object();
        for (size_t j = 0; j < r.choice.count; j++) {
          snprintf(choice + strlen(choice), sizeof choice - strlen(choice), "%s%s=%s", j ? " " : "",
                   r.choice.params[j].name, r.choice.params[j].label);
          json_object_set_new(jp, r.choice.params[j].name, json_string(r.choice.params[j].label));
        }
        double speedup = r.choice.time_s > 0 ? r.choice.default_time_s / r.choice.time_s : 1.0;
        json_t *o = json_pack(
            "{s:s,s:s,s:s,s:I,s:I,s:o,s:f,s:f,s:f,s:f,s:I,s:b,s:b,s:f,s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I},s:s}", "device",
            devs.name[d], "kernel", kn, "dtype", rcl_dtype_name(dts[t]), "n", (json_int_t)n, "size_log2",
            (json_int_t)r.choice.size_log2, "choice", jp, "default_time_s", r.choice.default_time_s, "tuned_time_s",
            r.choice.time_s, "speedup", speedup, "spread", r.choice.spread, "samples", (json_int_t)r.choice.samples,
            "improved", r.improved, "budget_exhausted", r.budget_exhausted, "tuning_s", r.tuning_s, "candidates",
            "space", (json_int_t)r.candidates, "invalid", (json_int_t)r.invalid, "duplicates", (json_int_t)r.duplicates,
            "timed", (json_int_t)r.timed, "pruned", (json_int_t)r.pruned, "mismatches", (json_int_t)r.mismatches,
            "launches", (json_int_t)r.launches, "reference_digest", r.reference_digest);
        if (r.mismatches) json_object_set_new(o, "mismatch", json_string(r.mismatch));
        json_object_set_new(o, "timing", json_string(r.host_timing ? "host" : "profiling events"));
        json_array_append_new(results, o);
        if (!json) {
          cli_progress_end(&prog);
          char sz[16], dt[16], tt[16];
          snprintf(sz, sizeof sz, "2^%u", r.choice.size_log2);
          if (r.choice.samples) {
            snprintf(dt, sizeof dt, "%.3f ms", r.choice.default_time_s * 1e3);
            snprintf(tt, sizeof tt, "%.3f ms", r.choice.time_s * 1e3);
          } else {
            snprintf(dt, sizeof dt, "-");
            snprintf(tt, sizeof tt, "-");
          }
          printf("%-30.30s %-20s %-4s %-6s %10s %10s %6.2fx %6.1fs  %s%s\n", devs.name[d], kn, rcl_dtype_name(dts[t]),
                 sz, dt, tt, speedup, r.tuning_s, choice,
                 r.budget_exhausted && !r.choice.samples ? " (budget too small to measure: default kept)" : "");
          if (r.mismatches) printf("  MISMATCH: %s\n", r.mismatch);
          fflush(stdout);
        }
      }
    }
    const char *w = rcl_cache_warning(devs.ctx[d]);
    if (w && !json) fprintf(stderr, "reprocl tune: note: %s\n", w);
  }
  cli_progress_end(&prog);
  if (!rc && json) {
    const char *dir = devs.count ? rcl_cache_dir(devs.ctx[0]) : NULL;
    cli_json_print(json_pack("{s:s,s:s,s:f,s:s?,s:I,s:o}", "reprocl", REPROCL_VERSION_STRING, "command", "tune",
                             "budget_ms", budget, "cache_dir", dir, "mismatches", (json_int_t)mismatches, "results",
                             results));
    results = NULL;
  }
  json_decref(results);
  cli_devices_close(&devs);
  if (!rc && mismatches) {
    fprintf(stderr,
            "reprocl tune: %zu candidate(s) gave different bits than the default configuration (a bug; "
            "they were excluded)\n",
            mismatches);
    rc = 1;
  }
  return rc;
}
