/* reprocl check: the standard suite on every device (or those chosen), reproducible and native; a table
 * a person reads at a glance, JSON for machines, and a self-contained HTML report. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

static void help(void) {
  printf("usage: reprocl check [--suite quick|full] [--family F[,F...]|all] [--device D|all] [--no-native]\n"
         "                     [--json] [--report report.html]\n\n"
         "Runs the standard suite (every kernel family x dtype x contract on documented inputs) on every device\n"
         "(default: all) in reproducible mode, comparing each result's SHA-256 with the host reference, and in\n"
         "native mode, showing how many values drift and by how much (max ulp and relative difference against\n"
         "the reproducible result). Under each device, the first-use self-test verdicts that are not plainly\n"
         "\"verified\" (docs/selftest.md). Exit status 1 if any reproducible result differs from the reference\n"
         "or a self-test could not run.\n");
}

/* "[0] PoCL" style short column names. */
static void short_name(char *buf, size_t size, size_t i, const char *name) {
  const char *colon = strchr(name, ':');
  const char *dev = colon ? colon + 2 : name;
  snprintf(buf, size, "[%zu] %.14s", i, dev);
}

/* The first-use self-test verdicts of a device (the "selftest" object of cli_verdicts_json): "all
 * verified", else each family and dtype that is not plainly verified, with the reason. */
static void print_verdicts(json_t *st) {
  const char *fam;
  json_t *f;
  int shown = 0;
  json_object_foreach(st, fam, f) {
    const char *dt;
    json_t *v;
    json_object_foreach(f, dt, v) {
      const char *verdict = json_string_value(json_object_get(v, "verdict"));
      if (!verdict || !strcmp(verdict, "verified") || !strcmp(verdict, "not tested")) continue;
      printf("      self-test %s %s: %s%s%s\n", fam, dt, verdict,
             *json_string_value(json_object_get(v, "reason")) ? ": " : "",
             json_string_value(json_object_get(v, "reason")));
      shown = 1;
    }
  }
  if (st && !shown)
    printf("      self-test: every family verified, or not run (native mode, REPROCL_SELFTEST=off, unsupported)\n");
}

static void print_table(json_t *doc, int native) {
  json_t *devs = json_object_get(doc, "devices"), *cases = json_object_get(doc, "cases");
  size_t nd = json_array_size(devs), i;
  json_t *d, *c;
  printf("devices:\n");
  json_array_foreach(devs, i, d) {
    printf("  [%zu] %s\n", i, json_string_value(json_object_get(d, "name")));
    print_verdicts(json_object_get(d, "selftest"));
  }
  printf("\nreproducible: digest of each result, and whether it equals the host reference (C, -ffp-contract=off)\n");
  printf("%-52s %-10s", "case", "reference");
  for (size_t k = 0; k < nd; k++) {
    char sn[40];
    short_name(sn, sizeof sn, k, json_string_value(json_object_get(json_array_get(devs, k), "name")));
    printf(" %-19.19s", sn);
  }
  printf("\n");
  json_array_foreach(cases, i, c) {
    const char *status = json_string_value(json_object_get(c, "status"));
    printf("%-52.52s ", json_string_value(json_object_get(c, "name")));
    if (strcmp(status, "ok")) {
      printf("%s: %s\n", status, json_string_value(json_object_get(c, "reason")));
      continue;
    }
    printf("%-10.8s", json_string_value(json_object_get(c, "reference")));
    size_t k;
    json_t *r;
    json_array_foreach(json_object_get(c, "results"), k, r) {
      const char *st = json_string_value(json_object_get(r, "status"));
      if (!strcmp(st, "ok"))
        /* The marks are 3 bytes of UTF-8 but one column wide: pad by hand. */
        printf(" %.8s %s", json_string_value(json_object_get(r, "sha256")),
               json_is_true(json_object_get(r, "agrees")) ? "\u2713         " : "\u2717 DIFFERS ");
      else printf(" %s", !strcmp(st, "unsupported") ? "n/a                " : "\u2717 ERROR            ");
    }
    printf("\n");
  }
  if (!native) return;
  printf("\nnative (vendor default options): values differing from the reproducible result / max ulp / max rel\n");
  printf("%-52s %-10s", "case", "");
  for (size_t k = 0; k < nd; k++) {
    char sn[40];
    short_name(sn, sizeof sn, k, json_string_value(json_object_get(json_array_get(devs, k), "name")));
    printf(" %-26.26s", sn);
  }
  printf("\n");
  json_array_foreach(cases, i, c) {
    if (strcmp(json_string_value(json_object_get(c, "status")), "ok")) continue;
    printf("%-52.52s %-10s", json_string_value(json_object_get(c, "name")), "");
    size_t k;
    json_t *r;
    json_array_foreach(json_object_get(c, "results"), k, r) {
      json_t *n = json_object_get(r, "native");
      if (!n || strcmp(json_string_value(json_object_get(n, "status")), "ok")) {
        printf(" %-26s", n ? "error" : "n/a");
        continue;
      }
      json_t *dr = json_object_get(n, "drift");
      json_int_t diff = json_integer_value(json_object_get(dr, "differing"));
      char cell[64];
      if (!diff) snprintf(cell, sizeof cell, "same bits");
      else {
        json_t *u = json_object_get(dr, "max_ulp"), *rel = json_object_get(dr, "max_rel");
        char us[16], rs[16];
        if (json_is_number(u)) snprintf(us, sizeof us, "%.3g", json_number_value(u));
        else snprintf(us, sizeof us, "%s", json_string_value(u));
        if (json_is_number(rel)) snprintf(rs, sizeof rs, "%.1e", json_number_value(rel));
        else snprintf(rs, sizeof rs, "%s", json_string_value(rel));
        snprintf(cell, sizeof cell, "%lld/%s/%s", (long long)diff, us, rs);
      }
      printf(" %-26.26s", cell);
    }
    printf("\n");
  }
}

int cmd_check(int argc, char **argv) {
  static const struct option opts[] = {{"suite", required_argument, 0, 's'},  {"family", required_argument, 0, 'f'},
                                       {"device", required_argument, 0, 'd'}, {"no-native", no_argument, 0, 'n'},
                                       {"json", no_argument, 0, 'j'},        {"report", required_argument, 0, 'r'},
                                       {"help", no_argument, 0, 'h'},        {0, 0, 0, 0}};
  const char *families = "all", *device = "all", *report = NULL;
  int quick = 0, native = 1, json = 0, c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case 's':
      if (!strcmp(optarg, "quick")) quick = 1;
      else if (!strcmp(optarg, "full")) quick = 0;
      else return cli_error("--suite expects quick or full, got \"%s\"", optarg);
      break;
    case 'f': families = optarg; break;
    case 'd': device = optarg; break;
    case 'n': native = 0; break;
    case 'j': json = 1; break;
    case 'r': report = optarg; break;
    case 'h': help(); return 0;
    default: return 2;
    }
  }
  if (optind < argc) return cli_error("unexpected argument \"%s\"", argv[optind]);
  suite_list l;
  int rc = suite_collect(&l, families, quick);
  if (rc) return rc;
  cli_devices devs, ndevs;
  if ((rc = cli_devices_open(&devs, device, RCL_MODE_REPRODUCIBLE)) != 0) {
    suite_free(&l);
    return rc;
  }
  if (native && (rc = cli_devices_clone(&ndevs, &devs, RCL_MODE_NATIVE)) != 0) {
    cli_devices_close(&devs);
    suite_free(&l);
    return rc;
  }
  json_t *doc;
  int bad = suite_execute(&doc, &l, &devs, native ? &ndevs : NULL, json);
  json_object_set_new(doc, "suite", json_string(quick ? "quick" : "full"));
  if (report && suite_write_html(report, doc)) rc = 1;
  if (json) cli_json_print(json_incref(doc));
  else {
    print_table(doc, native);
    printf("\n%s: %zu case(s) x %zu device(s); %d reproducible result(s) differ from the reference or failed\n",
           bad ? "DISAGREE" : "AGREE", l.count, devs.count, bad);
    if (report && !rc) printf("report written to %s\n", report);
  }
  json_decref(doc);
  if (native) cli_devices_close(&ndevs);
  cli_devices_close(&devs);
  suite_free(&l);
  return rc ? rc : bad ? 1 : 0;
}
