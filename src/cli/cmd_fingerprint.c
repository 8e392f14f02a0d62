/* reprocl fingerprint: the suite's digests on each device with the device profiles, library and contract
 * versions, in the stable JSON format of docs/fingerprint.md — to compare across machines. */
#include <string.h>

#include "suite.h"

/* Writes the fingerprint to out (when given) and prints it on stdout (with --json). */
static int fingerprint_write(json_t *doc, const char *out, int json, const suite_run *r, int bad) {
  if (out && json_dump_file(doc, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0)
    return cli_error("cannot write %s", out);
  if (out)
    fprintf(stderr, "wrote %s: %zu case(s) x %zu device(s), %d disagreement(s) with the host reference\n", out,
            r->cases.count, r->devs.count, bad);
  if (json) cli_json_print(json_incref(doc));
  return 0;
}

int cmd_fingerprint(int argc, char **argv) {
  suite_options so = SUITE_OPTIONS_INIT;
  const char *out = NULL;
  int json = 0;
  const cli_opt opts[] = {CLI_OPT_OUTPUT(&out, "write the fingerprint to FILE (JSON)"), SUITE_OPTS(&so),
                          CLI_FLAG("json", &json, "print the fingerprint JSON on stdout (as -o writes it)"),
                          CLI_NOT_HERE("native",
                                       "a fingerprint holds reproducible digests, the only ones comparable across\n"
                                       "machines; `reprocl check` shows the native drift"),
                          CLI_END};
  char about[2048];
  const cli_cmd_spec spec = {
      "fingerprint",
      "-o FILE.json|--json [--suite quick|full] [--family F[,F...]|all]\n"
      "                           [--device D|all]",
      suite_about(about, sizeof about,
                  "Runs the standard suite in reproducible mode on the chosen devices (default: all) and writes, per\n"
                  "case, the SHA-256 of the host reference and of every device's result, with the device profiles,\n"
                  "the library version and the contract versions (docs/fingerprint.md). Compare files from\n"
                  "different machines with `reprocl compare`."),
      opts,
      "a device already disagrees with the reference here",
      0,
      0};
  CLI_PARSE(&spec, argc, argv, NULL, NULL);
  if (!out && !json) return cli_error("-o FILE.json (or --json) is required");
  suite_run r;
  int rc = suite_open(&r, &so);
  if (rc) return rc;
  json_t *doc;
  int bad = suite_execute(&doc, &r.cases, &r.devs, NULL, NULL, 0);
  json_object_set_new(doc, "suite", json_string(so.quick ? "quick" : "full"));
  rc = fingerprint_write(doc, out, json, &r, bad);
  json_decref(doc);
  suite_close(&r);
  return rc ? rc : bad ? CLI_EXIT_FINDING : CLI_EXIT_OK;
}
