/* The split run of run reduce, spmv, cg and stencil (--split DEVICES, --split-weights W1:W2:...): the same
 * computation over several devices at once through rcl_split, one more row beside the devices' rows, with
 * each device's share (see cli_run_common.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run_common.h"

int cli_opt_split_weights(void *target, const char *opt, const char *value) {
  cli_split_opts *o = target;
  char buf[64];
  int positive = 0;
  o->nweights = 0;
  for (const char *p = value;;) {
    const char *c = strchr(p, ':');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (o->nweights == CLI_SPLIT_MAX_WEIGHTS)
      return cli_error("%s takes at most %d weights", opt, CLI_SPLIT_MAX_WEIGHTS);
    if (len == 0 || len >= sizeof buf)
      return cli_error("%s expects numbers separated by ':' (e.g. 3:1), got \"%s\"", opt, value);
    memcpy(buf, p, len);
    buf[len] = '\0';
    double *w = &o->weights[o->nweights++];
    int rc = cli_parse_double(w, opt, buf);
    if (rc) return rc;
    if (!(*w >= 0) || isinf(*w))
      return cli_error("%s: weight %zu is %s in \"%s\" (weights are finite and >= 0)", opt, o->nweights - 1, buf,
                       value);
    positive |= *w > 0;
    if (!c) break;
    p = c + 1;
  }
  if (!positive) return cli_error("%s \"%s\": every weight is 0 (at least one must be > 0)", opt, value);
  return 0;
}

int cli_split_open(cli_split_run *r, const cli_split_opts *o) {
  memset(r, 0, sizeof *r);
  r->opts = o;
  if (!o->devices) {
    if (o->nweights) return cli_error("--split-weights needs --split DEVICES");
    return 0;
  }
  rcl_split_options so = RCL_SPLIT_OPTIONS_INIT;
  so.devices = o->devices;
  so.weights = o->nweights ? o->weights : NULL;
  so.nweights = o->nweights;
  if (rcl_split_create(&r->s, &so)) return cli_fail("--split %s", o->devices);
  size_t n = rcl_split_count(r->s);
  snprintf(r->label, sizeof r->label, "split over %zu device%s (%s)", n, n == 1 ? "" : "s", o->devices);
  return 0;
}

int cli_split_fail(const cli_split_run *r) { return cli_fail("the %s", r->label); }

int cli_split_tune(cli_split_run *r, rcl_split_op op, rcl_dtype dt, size_t size) {
  r->tune_s = 0;
  if (!r->s || r->opts->nweights) return 0;
  size_t count = rcl_split_count(r->s);
  double *w = malloc(count * sizeof *w), t0 = cli_now();
  int rc = w ? rcl_split_tune_op(w, NULL, r->s, op, dt, size) : RCL_ERR_OUT_OF_MEMORY;
  /* The operation's own weights for the row (a split matrix would otherwise be cut by CG's for an SpMV). */
  if (!rc) rc = rcl_split_set_weights(r->s, w, count);
  r->tune_s = cli_now() - t0;
  free(w);
  return rc ? cli_split_fail(r) : 0;
}

/* Device i's share: its JSON entry, and its line in text mode. */
static json_t *share_entry(const cli_split_run *r, size_t i, size_t total, const char *unit, int json) {
  size_t first = 0, count = 0;
  const char *note = NULL;
  rcl_split_share(&first, &count, &note, r->s, i);
  const rcl_device_profile *p = rcl_context_profile(rcl_split_context(r->s, i));
  json_t *e = json_pack("{s:I,s:s,s:s,s:I,s:I}", "index", (json_int_t)i, "platform", p->platform_name, "device",
                        p->device_name, "first", (json_int_t)first, "count", (json_int_t)count);
  if (r->opts->nweights) json_object_set_new(e, "weight", json_real(r->opts->weights[i]));
  if (note) json_object_set_new(e, "left_out", json_string(note));
  if (json) return e;
  char name[160];
  snprintf(name, sizeof name, "[%zu] %s", i, p->device_name);
  if (note)
    printf("    %-42.42s left out: %s\n", name, note);
  else
    printf("    %-42.42s %s [%zu, %zu), %.1f%%\n", name, unit, first, first + count,
           total ? 100.0 * (double)count / (double)total : 0.0);
  return e;
}

void cli_split_report(cli_split_run *r, const char *hex, double secs, int ok, const char *unit, int json,
                      json_t *extra) {
  size_t n = rcl_split_count(r->s), total = 0;
  for (size_t i = 0; i < n; i++) {
    size_t count = 0;
    rcl_split_share(NULL, &count, NULL, r->s, i);
    total += count;
  }
  json_t *shares = json_array();
  for (size_t i = 0; i < n; i++) json_array_append_new(shares, share_entry(r, i, total, unit, json));
  r->ran = 1;
  r->ok = ok;
  r->j = json_pack("{s:s,s:I,s:s,s:s,s:f,s:f,s:b,s:o}", "devices", r->opts->devices, "count", (json_int_t)n, "weights",
                   r->opts->nweights ? "given" : "auto", "sha256", hex, "time_s", secs, "tune_s", r->tune_s,
                   "matches_reference", ok, "shares", shares);
  if (extra) {
    json_object_update(r->j, extra);
    json_decref(extra);
  }
}

int cli_split_status(const cli_split_run *r, int rc) { return !rc && r->ran && !r->ok ? CLI_EXIT_FINDING : rc; }

void cli_split_summary(const cli_split_run *r) {
  if (r->ran)
    printf("%s: the %s %s\n", r->ok ? "SPLIT AGREES" : "SPLIT DIFFERS", r->label,
           r->ok ? "gives the reference's bits" : "DIFFERS from the reference");
}

void cli_split_json(const cli_split_run *r, json_t *top) {
  if (r->j) json_object_set(top, "split", r->j);
}

void cli_split_close(cli_split_run *r) {
  json_decref(r->j);
  rcl_split_free(r->s);
  memset(r, 0, sizeof *r);
}
