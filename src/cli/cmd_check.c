/* reprocl check: the standard suite on every device (or those chosen), reproducible and native; a table
 * a person reads at a glance, JSON for machines, and a self-contained HTML report. */
#include <stdlib.h>
#include <string.h>

#include "suite.h"

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

/* A case's row of the reproducible table: reference digest, each device's digest and verdict, the split. */
static void print_case_row(json_t *c) {
  const char *status = json_string_value(json_object_get(c, "status"));
  printf("%-52.52s ", json_string_value(json_object_get(c, "name")));
  if (strcmp(status, "ok")) {
    printf("%s: %s\n", status, json_string_value(json_object_get(c, "reason")));
    return;
  }
  printf("%-10.8s", json_string_value(json_object_get(c, "reference")));
  size_t k;
  json_t *r;
  json_array_foreach(json_object_get(c, "results"), k, r) {
    const char *st = json_string_value(json_object_get(r, "status"));
    if (!strcmp(st, "ok")) /* The marks are 3 bytes of UTF-8 but one column wide: pad by hand. */
      printf(" %.8s %s", json_string_value(json_object_get(r, "sha256")),
             json_is_true(json_object_get(r, "agrees")) ? "\u2713         " : "\u2717 DIFFERS ");
    else
      printf(" %s", !strcmp(st, "unsupported") ? "n/a                " : "\u2717 ERROR            ");
  }
  suite_split_print_cell(c);
  printf("\n");
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
  if (json_object_get(doc, "split")) printf(" %-19.19s", "split (all, 2 ways)");
  printf("\n");
  json_array_foreach(cases, i, c) print_case_row(c);
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
      if (!diff)
        snprintf(cell, sizeof cell, "same bits");
      else {
        json_t *u = json_object_get(dr, "max_ulp"), *rel = json_object_get(dr, "max_rel");
        char us[16], rs[16];
        if (json_is_number(u))
          snprintf(us, sizeof us, "%.3g", json_number_value(u));
        else
          snprintf(us, sizeof us, "%s", json_string_value(u));
        if (json_is_number(rel))
          snprintf(rs, sizeof rs, "%.1e", json_number_value(rel));
        else
          snprintf(rs, sizeof rs, "%s", json_string_value(rel));
        snprintf(cell, sizeof cell, "%lld/%s/%s", (long long)diff, us, rs);
      }
      printf(" %-26.26s", cell);
    }
    printf("\n");
  }
}

/* Runs the suite (and its native twin) and prints the table or the JSON; the report when asked. */
static int check_run(suite_run *r, int native, int split, int json, const char *report) {
  cli_devices ndevs;
  rcl_split *s = NULL;
  int rc = split ? suite_split_open(&s, &r->devs) : 0;
  if (!rc && native) rc = cli_devices_clone(&ndevs, &r->devs, RCL_MODE_NATIVE);
  if (rc) {
    rcl_split_free(s);
    return rc;
  }
  json_t *doc;
  int bad = suite_execute(&doc, &r->cases, &r->devs, native ? &ndevs : NULL, s, json);
  json_object_set_new(doc, "suite", json_string(r->quick ? "quick" : "full"));
  int split_ran = s != NULL;
  if (s) json_object_set_new(doc, "split", json_pack("{s:i}", "patterns", SUITE_SPLIT_PATTERNS));
  rcl_split_free(s);
  if (report) rc = suite_write_html(report, doc); /* 0, or 2: the file cannot be written */
  if (json)
    cli_json_print(json_incref(doc));
  else {
    print_table(doc, native);
    printf("\n%s: %zu case(s) x %zu device(s)%s; %d reproducible result(s) differ from the reference or failed\n",
           bad ? "DISAGREE" : "AGREE", r->cases.count, r->devs.count, split_ran ? " + split runs" : "", bad);
    if (report && !rc) printf("report written to %s\n", report);
  }
  json_decref(doc);
  if (native) cli_devices_close(&ndevs);
  return rc ? rc : bad ? CLI_EXIT_FINDING : CLI_EXIT_OK;
}

int cmd_check(int argc, char **argv) {
  suite_options so = SUITE_OPTIONS_INIT;
  const char *report = NULL;
  int native = 0, no_native = 0, no_split = 0, json = 0;
  const cli_opt opts[] = {SUITE_OPTS(&so),
                          CLI_FLAG("native", &native, "show each result's native drift (the default)"),
                          CLI_FLAG("no-native", &no_native, "leave the native runs out"),
                          CLI_FLAG("no-split", &no_split, "leave the split runs (all devices together) out"),
                          CLI_OPT_JSON(&json),
                          CLI_STR("report", &report, "FILE.html", "also write a self-contained HTML report"),
                          CLI_END};
  char about[2048];
  const cli_cmd_spec spec = {
      "check",
      "[--suite quick|full] [--family F[,F...]|all] [--device D|all] [--no-native]\n"
      "                     [--no-split] [--json] [--report FILE.html]",
      suite_about(about, sizeof about,
                  "Runs the standard suite (every kernel family x dtype x contract on documented inputs) on every\n"
                  "device (default: all) in reproducible mode, comparing each result's SHA-256 with the host\n"
                  "reference, and in native mode, showing how many values drift and by how much (max ulp and\n"
                  "relative difference against the reproducible result). With two devices or more, every case of\n"
                  "the reduce, spmv, stencil and md families also runs over all of them together (one split,\n"
                  "uneven and random weights: docs/scaleout.md) and must give the same bits. Under each device, the\n"
                  "first-use self-test verdicts that are not plainly \"verified\" (docs/selftest.md)."),
      opts,
      "a reproducible result differs from the reference, or a self-test could not run",
      0,
      0};
  CLI_PARSE(&spec, argc, argv, NULL, NULL);
  if (native && no_native) return cli_error("--native and --no-native contradict each other");
  suite_run r;
  int rc = suite_open(&r, &so);
  if (rc) return rc;
  rc = check_run(&r, !no_native, !no_split, json, report);
  suite_close(&r);
  return rc;
}
