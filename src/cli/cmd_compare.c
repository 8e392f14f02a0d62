/* reprocl compare: compares fingerprints made on different machines (or at different times) case by
 * case: every digest of a case — host references and devices, in every file — must be the same. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

static void help(void) {
  printf("usage: reprocl compare A.json B.json [...] [--json]\n\n"
         "Compares fingerprints (reprocl fingerprint) case by case: for each case present in more than one file,\n"
         "all digests (each file's host reference and every device) must be equal. Says which cases differ, on\n"
         "which devices, and which contract versions changed between the files.\n"
         "Exit status: 0 all agree; 1 some case differs under the same contract version; 3 digests differ only\n"
         "where the contract version changed (expected: regenerate the reference fingerprint); 2 bad input.\n");
}

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
  json_array_foreach(devices, i, c) if (!json_is_object(c)) return cli_error("%s: devices[%zu] is not an object", file, i);
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
      if (!rs) rc = cli_error("%s: case \"%s\": results[%zu] needs a string \"status\"", file, name, k);
      else if (!strcmp(rs, "ok") && (!json_is_integer(dev) || json_integer_value(dev) < 0 ||
                                     (size_t)json_integer_value(dev) >= json_array_size(devices) ||
                                     !json_string_value(json_object_get(r, "sha256"))))
        rc = cli_error("%s: case \"%s\": results[%zu] has status ok but no \"device\" index below %zu or no string "
                       "\"sha256\"", file, name, k, json_array_size(devices));
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

int cmd_compare(int argc, char **argv) {
  static const struct option opts[] = {{"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
  int json = 0, c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    if (c == 'j') json = 1;
    else if (c == 'h') {
      help();
      return 0;
    } else return 2;
  }
  int nf = argc - optind;
  if (nf < 2) return cli_error("give at least two fingerprint files");
  fp_file *f = calloc((size_t)nf, sizeof *f);
  int rc = f ? 0 : cli_error("out of memory");
  for (int i = 0; i < nf && !rc; i++) {
    json_error_t e;
    f[i].file = argv[optind + i];
    f[i].doc = json_load_file(f[i].file, 0, &e);
    if (!f[i].doc) rc = cli_error("%s:%d:%d: %s", f[i].file, e.line, e.column, e.text);
    else if (!json_is_object(f[i].doc) ||
             strcmp(json_string_value(json_object_get(f[i].doc, "format")) ? json_string_value(json_object_get(f[i].doc, "format")) : "",
                    "reprocl-fingerprint"))
      rc = cli_error("%s: not a reprocl fingerprint (no \"format\": \"reprocl-fingerprint\")", f[i].file);
    else if (json_integer_value(json_object_get(f[i].doc, "format_version")) != 1)
      rc = cli_error("%s: fingerprint format version %lld is not supported (this reprocl reads version 1)", f[i].file,
                     (long long)json_integer_value(json_object_get(f[i].doc, "format_version")));
    else rc = fp_validate(f[i].file, f[i].doc);
  }
  json_t *report = json_object(), *jdiff = json_array(), *jcontract = json_array(), *jonly = json_array();
  size_t compared = 0, agree = 0, differ = 0, contract_changed = 0;
  /* Every case name, in the order of first appearance. */
  json_t *seen = json_object();
  for (int i = 0; i < nf && !rc; i++) {
    size_t k;
    json_t *cs;
    json_array_foreach(json_object_get(f[i].doc, "cases"), k, cs) {
      const char *name = json_string_value(json_object_get(cs, "name"));
      if (!name) {
        rc = cli_error("%s: case %zu has no name", f[i].file, k);
        break;
      }
      if (json_object_get(seen, name)) continue;
      json_object_set_new(seen, name, json_true());
      /* Gather this case's digests from every file. */
      json_t *digests = json_array(), *contracts = json_object();
      int files_with = 0;
      for (int j = 0; j < nf; j++) {
        json_t *cj = find_case(f[j].doc, name);
        if (!cj || strcmp(jstr(cj, "status", ""), "ok")) continue;
        files_with++;
        json_object_set_new(contracts, f[j].file, json_string(jstr(cj, "contract", "?")));
        json_array_append_new(digests, json_pack("{s:s,s:s,s:s}", "file", f[j].file, "who", "host reference", "sha256",
                                                 jstr(cj, "reference", "")));
        size_t r;
        json_t *res;
        json_array_foreach(json_object_get(cj, "results"), r, res) {
          if (strcmp(jstr(res, "status", ""), "ok")) continue;
          json_array_append_new(digests,
                                json_pack("{s:s,s:s,s:s}", "file", f[j].file, "who",
                                          device_name(f[j].doc, json_integer_value(json_object_get(res, "device"))),
                                          "sha256", jstr(res, "sha256", "")));
        }
      }
      if (files_with < 2) {
        json_array_append_new(jonly, json_string(name));
        json_decref(digests);
        json_decref(contracts);
        continue;
      }
      compared++;
      const char *first = json_string_value(json_object_get(json_array_get(digests, 0), "sha256"));
      int same = 1;
      size_t q;
      json_t *dg;
      json_array_foreach(digests, q, dg) same &= !strcmp(jstr(dg, "sha256", ""), first ? first : "");
      const char *c0 = NULL;
      int contract_same = 1;
      const char *key;
      json_t *v;
      json_object_foreach(contracts, key, v) {
        if (!c0) c0 = json_string_value(v);
        else contract_same &= !strcmp(c0, json_string_value(v));
      }
      if (same) agree++;
      else if (!contract_same) {
        contract_changed++;
        json_array_append_new(jcontract, json_pack("{s:s,s:O}", "case", name, "contracts", contracts));
      } else {
        differ++;
        json_array_append_new(jdiff, json_pack("{s:s,s:O}", "case", name, "digests", digests));
      }
      json_decref(digests);
      json_decref(contracts);
    }
  }
  json_decref(seen);
  if (!rc) {
    if (json) {
      json_object_set_new(report, "compared", json_integer((json_int_t)compared));
      json_object_set_new(report, "agree", json_integer((json_int_t)agree));
      json_object_set_new(report, "differ", jdiff);
      json_object_set_new(report, "contract_changed", jcontract);
      json_object_set_new(report, "only_in_one_file", jonly);
      jdiff = jcontract = jonly = NULL;
      cli_json_print(json_incref(report));
    } else {
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
      json_array_foreach(jdiff, k, e) {
        printf("DIFFERS  %s\n", jstr(e, "case", "?"));
        size_t q;
        json_t *dg;
        json_array_foreach(json_object_get(e, "digests"), q, dg)
          printf("         %.16s  %s: %s\n", jstr(dg, "sha256", ""), jstr(dg, "file", "?"), jstr(dg, "who", "?"));
      }
      json_array_foreach(jcontract, k, e) {
        printf("CONTRACT %s:", jstr(e, "case", "?"));
        const char *key;
        json_t *v;
        json_object_foreach(json_object_get(e, "contracts"), key, v) printf(" %s in %s;", json_string_value(v) ? json_string_value(v) : "?", key);
        printf(" digests changed with the contract version\n");
      }
      printf("%zu case(s) compared: %zu agree, %zu differ, %zu changed with their contract version; %zu in only one file\n",
             compared, agree, differ, contract_changed, json_array_size(jonly));
    }
  }
  json_decref(report);
  json_decref(jdiff);
  json_decref(jcontract);
  json_decref(jonly);
  for (int i = 0; f && i < nf; i++) json_decref(f[i].doc);
  free(f);
  if (rc) return rc;
  return differ ? 1 : contract_changed ? 3 : 0;
}
