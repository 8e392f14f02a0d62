/* The split cases of `reprocl check`: every case whose family runs over several devices
 * (include/reprocl/split.h) runs once more over all the selected devices together, with uneven and with
 * random weights, and must give the host reference's bits like each device alone. */
#include <stdlib.h>
#include <string.h>

#include "suite.h"

int suite_split_open(rcl_split **out, const cli_devices *devs) {
  *out = NULL;
  if (devs->count < 2) return 0;
  if (rcl_split_wrap(out, devs->ctx, devs->count, NULL)) return cli_fail("cannot split over the devices");
  return 0;
}

/* Pattern 0: weights 1, 3, 5, ... (uneven, the last device the largest share); pattern 1: random weights
 * in [0.05, 1.05) drawn from the case's name (the same on every run). */
static void pattern(double *w, size_t count, int p, const char *name) {
  uint64_t s = 0xcbf29ce484222325ull;
  for (const char *c = name; *c; c++) s = (s ^ (unsigned char)*c) * 0x100000001b3ull;
  for (size_t i = 0; i < count; i++) {
    s += 0x9e3779b97f4a7c15ull;
    uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    w[i] = p == 0 ? (double)(2 * i + 1) : 0.05 + (double)(z >> 11) * 0x1.0p-53;
  }
}

static json_t *shares_json(const rcl_split *s) {
  json_t *a = json_array();
  for (size_t i = 0; i < rcl_split_count(s); i++) {
    size_t first = 0, count = 0;
    const char *note = NULL;
    rcl_split_share(&first, &count, &note, s, i);
    json_array_append_new(a, note ? json_pack("{s:s}", "left_out", note)
                                  : json_pack("{s:I,s:I}", "first", (json_int_t)first, "count", (json_int_t)count));
  }
  return a;
}

static json_t *one_pattern(const suite_case *c, rcl_split *s, int p, const void *ref, size_t rbytes, int *mismatches) {
  size_t n = rcl_split_count(s);
  double w[64];
  pattern(w, n < 64 ? n : 64, p, c->name);
  json_t *jw = json_array();
  for (size_t i = 0; i < n && i < 64; i++) json_array_append_new(jw, json_real(w[i]));
  json_t *jp = json_pack("{s:o}", "weights", jw);
  void *out = NULL;
  size_t bytes = 0;
  int rc = rcl_split_set_weights(s, w, n);
  if (!rc) rc = c->family->run_split(c, s, &out, &bytes);
  if (rc == RCL_ERR_UNSUPPORTED) {
    json_object_set_new(jp, "status", json_string("unsupported"));
    json_object_set_new(jp, "reason", json_string(rcl_error_last()));
  } else if (rc) {
    json_object_set_new(jp, "status", json_string("error"));
    json_object_set_new(jp, "reason", json_string(rcl_error_last()));
    (*mismatches)++;
  } else {
    char hex[RCL_SHA256_HEX_SIZE];
    cli_digest(hex, out, bytes);
    int agrees = bytes == rbytes && memcmp(out, ref, rbytes) == 0;
    *mismatches += !agrees;
    json_object_set_new(jp, "status", json_string("ok"));
    json_object_set_new(jp, "sha256", json_string(hex));
    json_object_set_new(jp, "agrees", json_boolean(agrees));
    json_object_set_new(jp, "shares", shares_json(s));
  }
  free(out);
  return jp;
}

json_t *suite_split_results(const suite_case *c, rcl_split *s, const void *ref, size_t rbytes, int *mismatches,
                            cli_progress *pb) {
  json_t *a = json_array();
  for (int p = 0; p < SUITE_SPLIT_PATTERNS; p++) {
    cli_progress_step(pb, c->name);
    json_array_append_new(a, one_pattern(c, s, p, ref, rbytes, mismatches));
  }
  return a;
}

void suite_split_print_cell(json_t *case_result) {
  json_t *splits = json_object_get(case_result, "splits"), *p;
  if (!splits) return;
  size_t i, ok = 0, bad = 0, na = 0;
  json_array_foreach(splits, i, p) {
    const char *st = json_string_value(json_object_get(p, "status"));
    if (!strcmp(st, "unsupported"))
      na++;
    else if (!strcmp(st, "ok") && json_is_true(json_object_get(p, "agrees")))
      ok++;
    else
      bad++;
  }
  if (bad)
    printf(" \u2717 DIFFERS %zu/%zu    ", bad, json_array_size(splits));
  else if (ok)
    printf(" \u2713 %zu/%zu             ", ok, json_array_size(splits));
  else
    printf(" n/a (%zu)           ", na);
}
