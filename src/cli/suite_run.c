/* Runs the standard suite on devices and records everything in one JSON document — the common core of
 * `reprocl check` (table, HTML report) and `reprocl fingerprint` (the stable file format). */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"

/* Differing-value mask of a grid-shaped output, as a string of '0'/'1' rows (for difference images). */
static json_t *diff_mask(const void *a, const void *b, const suite_case *c) {
  size_t es = rcl_dtype_size(c->dtype), n = c->width * c->height;
  char *m = malloc(n + 1);
  if (!m) return json_null();
  for (size_t i = 0; i < n; i++) m[i] = memcmp((const char *)a + i * es, (const char *)b + i * es, es) ? '1' : '0';
  m[n] = '\0';
  json_t *s = json_pack("{s:I,s:I,s:s}", "width", (json_int_t)c->width, "height", (json_int_t)c->height, "mask", m);
  free(m);
  return s;
}

/* The native run of case c on nctx beside the reproducible output out: digest, drift, ulp histogram and,
 * for a grid, the mask of differing values. */
static json_t *native_result(const suite_case *c, rcl_context *nctx, const void *out, size_t obytes, cli_progress *pb) {
  char hex[RCL_SHA256_HEX_SIZE];
  json_t *jn;
  void *nout = NULL;
  size_t nbytes = 0;
  cli_progress_step(pb, c->name);
  int rc = c->family->run(c, nctx, &nout, &nbytes);
  if (rc || nbytes != obytes) {
    jn = json_pack("{s:s,s:s}", "status", "error", "reason", rcl_error_last());
  } else {
    cli_drift dr;
    size_t bins[SUITE_ULP_BINS], n = obytes / rcl_dtype_size(c->dtype);
    cli_drift_compute(&dr, out, nout, n, c->dtype);
    suite_ulp_histogram(bins, out, nout, n, c->dtype);
    json_t *jh = json_array();
    for (int b = 0; b < SUITE_ULP_BINS; b++) json_array_append_new(jh, json_integer((json_int_t)bins[b]));
    cli_digest(hex, nout, nbytes);
    jn = json_pack("{s:s,s:s,s:o,s:o}", "status", "ok", "sha256", hex, "drift", cli_drift_json(&dr), "ulp_histogram",
                   jh);
    if (c->width && c->height && dr.differing) json_object_set_new(jn, "diff", diff_mask(out, nout, c));
  }
  free(nout);
  return jn;
}

/* Case c on device d: the reproducible result's digest against the reference (ref, rbytes), why it did not
 * run, and with ndevs the native run; *mismatches counts results that differ or fail. */
static json_t *device_result(const suite_case *c, size_t d, const cli_devices *devs, const cli_devices *ndevs,
                             const void *ref, size_t rbytes, int *mismatches, cli_progress *pb) {
  const char *why;
  char hex[RCL_SHA256_HEX_SIZE];
  json_t *jd = json_pack("{s:I}", "device", (json_int_t)d);
  rcl_support s = rcl_device_profile_support(rcl_context_profile(devs->ctx[d]), c->kind, c->dtype, &why);
  cli_progress_step(pb, c->name);
  if (s == RCL_SUPPORT_NONE) {
    json_object_set_new(jd, "status", json_string("unsupported"));
    json_object_set_new(jd, "reason", json_string(why));
    if (ndevs) cli_progress_step(pb, c->name);
    return jd;
  }
  void *out = NULL;
  size_t obytes = 0;
  int rc = c->family->run(c, devs->ctx[d], &out, &obytes);
  if (rc == RCL_ERR_UNSUPPORTED) { /* a variant the device lacks a feature for (MD's symmetric path) */
    json_object_set_new(jd, "status", json_string("unsupported"));
    json_object_set_new(jd, "reason", json_string(rcl_error_last()));
    if (ndevs) cli_progress_step(pb, c->name);
    return jd;
  }
  if (rc) {
    json_object_set_new(jd, "status", json_string("error"));
    json_object_set_new(jd, "reason", json_string(rcl_error_last()));
    (*mismatches)++;
    if (ndevs) cli_progress_step(pb, c->name);
    return jd;
  }
  cli_digest(hex, out, obytes);
  int agrees = obytes == rbytes && memcmp(out, ref, rbytes) == 0;
  *mismatches += !agrees;
  json_object_set_new(jd, "status", json_string("ok"));
  json_object_set_new(jd, "sha256", json_string(hex));
  json_object_set_new(jd, "agrees", json_boolean(agrees));
  if (ndevs) json_object_set_new(jd, "native", native_result(c, ndevs->ctx[d], out, obytes, pb));
  free(out);
  return jd;
}

/* One case: its host reference, then its result on every device. */
static json_t *case_result(const suite_case *c, const cli_devices *devs, const cli_devices *ndevs, rcl_split *split,
                           int *mismatches, cli_progress *pb) {
  void *ref = NULL;
  size_t rbytes = 0;
  char hex[RCL_SHA256_HEX_SIZE];
  json_t *jc = json_pack("{s:s,s:s,s:s,s:s}", "name", c->name, "family", c->family->name, "contract", c->contract,
                         "dtype", rcl_dtype_name(c->dtype));
  if (c->input[0]) json_object_set_new(jc, "input", json_string(c->input));
  int rc = c->family->reference(c, &ref, &rbytes);
  if (rc) {
    json_object_set_new(jc, "status", json_string(rc == RCL_ERR_NOT_FOUND ? "input-missing" : "error"));
    json_object_set_new(jc, "reason", json_string(rcl_error_last()));
    for (size_t d = 0; d < devs->count * (ndevs ? 2 : 1); d++) cli_progress_step(pb, c->name);
    for (int p = 0; split && c->family->run_split && p < SUITE_SPLIT_PATTERNS; p++) cli_progress_step(pb, c->name);
    return jc;
  }
  cli_digest(hex, ref, rbytes);
  json_object_set_new(jc, "status", json_string("ok"));
  json_object_set_new(jc, "reference", json_string(hex));
  json_object_set_new(jc, "values", json_integer((json_int_t)(rbytes / rcl_dtype_size(c->dtype))));
  json_t *jr = json_array();
  for (size_t d = 0; d < devs->count; d++)
    json_array_append_new(jr, device_result(c, d, devs, ndevs, ref, rbytes, mismatches, pb));
  json_object_set_new(jc, "results", jr);
  if (split && c->family->run_split)
    json_object_set_new(jc, "splits", suite_split_results(c, split, ref, rbytes, mismatches, pb));
  free(ref);
  return jc;
}

/* The devices' profiles, names and self-test verdicts; a verdict that could not be had counts in *mismatches. */
static json_t *devices_json(const cli_devices *devs, int *mismatches) {
  json_t *jdevs = json_array();
  for (size_t d = 0; d < devs->count; d++) {
    json_t *p = cli_profile_json(rcl_context_profile(devs->ctx[d]));
    json_object_set_new(p, "name", json_string(devs->name[d]));
    json_t *st = NULL;
    if (cli_verdicts_json(&st, devs->ctx[d])) (*mismatches)++; /* a verdict that could not be had fails the check */
    json_object_set_new(p, "selftest", st);
    json_array_append_new(jdevs, p);
  }
  return jdevs;
}

int suite_execute(json_t **doc, const suite_list *l, const cli_devices *devs, const cli_devices *ndevs,
                  rcl_split *split, int json_mode) {
  cli_progress pb;
  size_t steps = l->count * devs->count * (ndevs ? 2 : 1);
  for (size_t ci = 0; split && ci < l->count; ci++) steps += l->items[ci].family->run_split ? SUITE_SPLIT_PATTERNS : 0;
  cli_progress_start(&pb, steps, "suite", json_mode);
  json_t *jcases = json_array();
  int mismatches = 0;
  for (size_t ci = 0; ci < l->count; ci++)
    json_array_append_new(jcases, case_result(&l->items[ci], devs, ndevs, split, &mismatches, &pb));
  cli_progress_end(&pb);
  json_t *jdevs = devices_json(devs, &mismatches);
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  char when[64];
  time_t now = time(NULL);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  *doc = json_pack("{s:s,s:i,s:s,s:s,s:s,s:o,s:o,s:o,s:i}", "format", "reprocl-fingerprint", "format_version", 1,
                   "reprocl", REPROCL_VERSION_STRING, "created", when, "host", host, "contracts",
                   suite_contract_versions(l), "devices", jdevs, "cases", jcases, "mismatches", mismatches);
  return mismatches;
}
