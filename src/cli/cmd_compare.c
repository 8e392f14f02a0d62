/* reprocl compare: compares fingerprints made on different machines (or at different times) case by
 * case: every digest of a case — host references and devices, in every file — must be the same. */
#include <stdlib.h>
#include <string.h>

#include "suite.h"

typedef struct {
  const char *file;
  json_t *doc;
} fp_file;

/* A string member, or dflt when it is absent or not a string (only for what is printed). */
static const char *jstr(json_t *o, const char *key, const char *dflt) {
  const char *v = json_string_value(json_object_get(o, key));
  return v ? v : dflt;
}

/* Checks every part of a fingerprint that the comparison reads, before it reads any, so a malformed
 * or hostile file gets a message naming the file and the place instead of a crash: "devices" an array
 * of objects; "cases" an array of objects with a unique string "name" and a string "status"; a case
 * with status "ok" has a string "reference" and an array "results" of objects with a string "status",
 * and an "ok" result has an integer "device" indexing "devices" and a string "sha256". Returns 0 or the
 * exit status 2. */
static int fp_validate(const char *file, json_t *doc) {
  json_t *devices = json_object_get(doc, "devices"), *cases = json_object_get(doc, "cases"), *c, *r;
  size_t i, k;
  if (!json_is_array(cases) || !json_is_array(devices))
    return cli_error("%s: \"cases\" and \"devices\" must be arrays", file);
  json_array_foreach(devices, i, c) if (!json_is_object(c)) return cli_error("%s: devices[%zu] is not an object", file,
                                                                             i);
  json_t *names = json_object();
  int rc = 0;
  json_array_foreach(cases, i, c) {
    const char *name = json_string_value(json_object_get(c, "name"));
    const char *status = json_string_value(json_object_get(c, "status"));
    if (!json_is_object(c) || !name || !status) {
      rc = cli_error("%s: cases[%zu] needs a string \"name\" and a string \"status\"", file, i);
      break;
    }
    if (json_object_get(names, name)) {
      rc = cli_error("%s: cases[%zu]: the case \"%s\" appears twice", file, i, name);
      break;
    }
    json_object_set_new(names, name, json_true());
    if (strcmp(status, "ok")) continue;
    json_t *results = json_object_get(c, "results");
    if (!json_string_value(json_object_get(c, "reference")) || !json_is_array(results)) {
      rc = cli_error("%s: case \"%s\" has status ok but no string \"reference\" or no \"results\" array", file, name);
      break;
    }
    json_array_foreach(results, k, r) {
      const char *rs = json_string_value(json_object_get(r, "status"));
      json_t *dev = json_object_get(r, "device");
      if (!rs)
        rc = cli_error("%s: case \"%s\": results[%zu] needs a string \"status\"", file, name, k);
      else if (!strcmp(rs, "ok") && (!json_is_integer(dev) || json_integer_value(dev) < 0 ||
                                     (size_t)json_integer_value(dev) >= json_array_size(devices) ||
                                     !json_string_value(json_object_get(r, "sha256"))))
        rc = cli_error("%s: case \"%s\": results[%zu] has status ok but no \"device\" index below %zu or no string "
                       "\"sha256\"",
                       file, name, k, json_array_size(devices));
      if (rc) break;
    }
    if (rc) break;
  }
  json_decref(names);
  return rc;
}

static json_t *find_case(json_t *doc, const char *name) {
  size_t i;
  json_t *c;
  json_array_foreach(json_object_get(doc, "cases"), i, c) if (!strcmp(jstr(c, "name", ""), name)) return c;
  return NULL;
}

static const char *device_name(json_t *doc, json_int_t idx) {
  json_t *d = idx >= 0 ? json_array_get(json_object_get(doc, "devices"), (size_t)idx) : NULL;
  return jstr(d, "name", "?");
}

/* Loads and checks one fingerprint file into f. Returns 0 or the exit status 2. */
static int fp_load(fp_file *f, const char *file) {
  json_error_t e;
  f->file = file;
  f->doc = json_load_file(file, 0, &e);
  if (!f->doc) return cli_error("%s:%d:%d: %s", file, e.line, e.column, e.text);
  if (!json_is_object(f->doc) || strcmp(jstr(f->doc, "format", ""), "reprocl-fingerprint"))
    return cli_error("%s: not a reprocl fingerprint (no \"format\": \"reprocl-fingerprint\")", file);
  if (json_integer_value(json_object_get(f->doc, "format_version")) != 1)
    return cli_error("%s: fingerprint format version %lld is not supported (this reprocl reads version 1)", file,
                     (long long)json_integer_value(json_object_get(f->doc, "format_version")));
  return fp_validate(file, f->doc);
}

/* What the comparison found: counts and the cases of each kind (JSON arrays). */
typedef struct {
  size_t compared, agree, differ, contract_changed;
  json_t *jdiff, *jcontract, *jonly;
} verdicts;

/* Every digest of case `name` in every file where it ran (host references and devices) into *digests, and
 * each such file's contract for it into *contracts; returns how many files have it. */
static int gather_case(json_t **digests, json_t **contracts, const fp_file *f, int nf, const char *name) {
  int files_with = 0;
  *digests = json_array();
  *contracts = json_object();
  for (int j = 0; j < nf; j++) {
    json_t *cj = find_case(f[j].doc, name);
    if (!cj || strcmp(jstr(cj, "status", ""), "ok")) continue;
    files_with++;
    json_object_set_new(*contracts, f[j].file, json_string(jstr(cj, "contract", "?")));
    json_array_append_new(*digests, json_pack("{s:s,s:s,s:s}", "file", f[j].file, "who", "host reference", "sha256",
                                              jstr(cj, "reference", "")));
    size_t r;
    json_t *res;
    json_array_foreach(json_object_get(cj, "results"), r, res) {
      if (strcmp(jstr(res, "status", ""), "ok")) continue;
      json_array_append_new(*digests,
                            json_pack("{s:s,s:s,s:s}", "file", f[j].file, "who",
                                      device_name(f[j].doc, json_integer_value(json_object_get(res, "device"))),
                                      "sha256", jstr(res, "sha256", "")));
    }
  }
  return files_with;
}

/* Compares case `name` across the files and records the verdict in v. */
static void compare_case(verdicts *v, const fp_file *f, int nf, const char *name) {
  json_t *digests, *contracts;
  if (gather_case(&digests, &contracts, f, nf, name) < 2) {
    json_array_append_new(v->jonly, json_string(name));
    json_decref(digests);
    json_decref(contracts);
    return;
  }
  v->compared++;
  const char *first = json_string_value(json_object_get(json_array_get(digests, 0), "sha256"));
  int same = 1, contract_same = 1;
  size_t q;
  json_t *dg, *c;
  json_array_foreach(digests, q, dg) same &= !strcmp(jstr(dg, "sha256", ""), first ? first : "");
  const char *c0 = NULL, *key;
  json_object_foreach(contracts, key, c) {
    if (!c0)
      c0 = json_string_value(c);
    else
      contract_same &= !strcmp(c0, json_string_value(c));
  }
  if (same)
    v->agree++;
  else if (!contract_same) {
    v->contract_changed++;
    json_array_append_new(v->jcontract, json_pack("{s:s,s:O}", "case", name, "contracts", contracts));
  } else {
    v->differ++;
    json_array_append_new(v->jdiff, json_pack("{s:s,s:O}", "case", name, "digests", digests));
  }
  json_decref(digests);
  json_decref(contracts);
}

/* Every case name of every file, in the order of first appearance, compared once. */
static void compare_all(verdicts *v, const fp_file *f, int nf) {
  json_t *seen = json_object();
  for (int i = 0; i < nf; i++) {
    size_t k;
    json_t *cs;
    json_array_foreach(json_object_get(f[i].doc, "cases"), k, cs) {
      const char *name = json_string_value(json_object_get(cs, "name")); /* fp_validate checked it */
      if (json_object_get(seen, name)) continue;
      json_object_set_new(seen, name, json_true());
      compare_case(v, f, nf, name);
    }
  }
  json_decref(seen);
}

static void print_json(const verdicts *v) {
  cli_json_print(json_pack("{s:I,s:I,s:O,s:O,s:O}", "compared", (json_int_t)v->compared, "agree", (json_int_t)v->agree,
                           "differ", v->jdiff, "contract_changed", v->jcontract, "only_in_one_file", v->jonly));
}

static void print_text(const verdicts *v, const fp_file *f, int nf) {
  for (int i = 0; i < nf; i++) {
    size_t k;
    json_t *d;
    printf("%s: reprocl %s, %s suite, %s\n", f[i].file, jstr(f[i].doc, "reprocl", "?"), jstr(f[i].doc, "suite", "?"),
           jstr(f[i].doc, "host", ""));
    json_array_foreach(json_object_get(f[i].doc, "devices"), k, d)
        printf("    [%zu] %s (driver %s)\n", k, jstr(d, "name", "?"), jstr(d, "driver_version", "?"));
  }
  size_t k;
  json_t *e;
  json_array_foreach(v->jdiff, k, e) {
    printf("DIFFERS  %s\n", jstr(e, "case", "?"));
    size_t q;
    json_t *dg;
    json_array_foreach(json_object_get(e, "digests"), q, dg)
        printf("         %.16s  %s: %s\n", jstr(dg, "sha256", ""), jstr(dg, "file", "?"), jstr(dg, "who", "?"));
  }
  json_array_foreach(v->jcontract, k, e) {
    printf("CONTRACT %s:", jstr(e, "case", "?"));
    const char *key;
    json_t *c;
    json_object_foreach(json_object_get(e, "contracts"), key, c)
        printf(" %s in %s;", json_string_value(c) ? json_string_value(c) : "?", key);
    printf(" digests changed with the contract version\n");
  }
  printf("%zu case(s) compared: %zu agree, %zu differ, %zu changed with their contract version; %zu in only one file\n",
         v->compared, v->agree, v->differ, v->contract_changed, json_array_size(v->jonly));
}

int cmd_compare(int argc, char **argv) {
  int json = 0, nf = 0;
  const cli_opt opts[] = {CLI_OPT_JSON(&json), CLI_END};
  const cli_cmd_spec spec = {
      "compare",
      "A.json B.json [...] [--json]",
      "Compares fingerprints (reprocl fingerprint) case by case: for each case present in more than one file,\n"
      "all digests (each file's host reference and every device) must be equal. Says which cases differ, on\n"
      "which devices, and which contract versions changed between the files. Exit status 3 here also means\n"
      "that digests differ only where the contract version changed: the files are not comparable there\n"
      "(expected after a contract change: regenerate the reference fingerprint).",
      opts,
      "some case differs under the same contract version",
      0,
      -1};
  const char **files = calloc((size_t)argc, sizeof *files);
  if (!files) return cli_error("out of memory");
  int rc = cli_opt_parse(&spec, argc, argv, files, &nf);
  if (!rc && nf < 2) rc = cli_error("give at least two fingerprint files");
  fp_file *f = rc ? NULL : calloc((size_t)nf, sizeof *f);
  if (!rc && !f) rc = cli_error("out of memory");
  for (int i = 0; i < nf && !rc; i++) rc = fp_load(&f[i], files[i]);
  verdicts v = {0, 0, 0, 0, json_array(), json_array(), json_array()};
  if (!rc) compare_all(&v, f, nf);
  if (!rc && json)
    print_json(&v);
  else if (!rc)
    print_text(&v, f, nf);
  json_decref(v.jdiff);
  json_decref(v.jcontract);
  json_decref(v.jonly);
  for (int i = 0; f && i < nf; i++) json_decref(f[i].doc);
  free(f);
  free(files);
  if (rc) return rc == CLI_OPT_HELP ? CLI_EXIT_OK : rc;
  return v.differ ? CLI_EXIT_FINDING : v.contract_changed ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}
