/* reprocl fingerprint: the suite's digests on each device with the device profiles, library and contract
 * versions, in the stable JSON format of docs/fingerprint.md — to compare across machines. */
#include <getopt.h>
#include <string.h>

#include "suite.h"

static void help(void) {
  printf("usage: reprocl fingerprint -o FILE.json [--suite quick|full] [--family F[,F...]|all] [--device D|all]\n\n"
         "Runs the standard suite in reproducible mode on the chosen devices (default: all) and writes, per case,\n"
         "the SHA-256 of the host reference and of every device's result, with the device profiles, the library\n"
         "version and the contract versions (docs/fingerprint.md). Compare files from different machines with\n"
         "`reprocl compare`. Exit status 1 if a device already disagrees with the reference here.\n");
}

int cmd_fingerprint(int argc, char **argv) {
  static const struct option opts[] = {{"output", required_argument, 0, 'o'}, {"suite", required_argument, 0, 's'},
                                       {"family", required_argument, 0, 'f'}, {"device", required_argument, 0, 'd'},
                                       {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
  const char *out = NULL, *families = "all", *device = "all";
  int quick = 0, c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
    switch (c) {
    case 'o': out = optarg; break;
    case 's':
      if (!strcmp(optarg, "quick")) quick = 1;
      else if (!strcmp(optarg, "full")) quick = 0;
      else return cli_error("--suite expects quick or full, got \"%s\"", optarg);
      break;
    case 'f': families = optarg; break;
    case 'd': device = optarg; break;
    case 'h': help(); return 0;
    default: return 2;
    }
  }
  if (optind < argc) return cli_error("unexpected argument \"%s\"", argv[optind]);
  if (!out) return cli_error("-o FILE.json is required");
  suite_list l;
  int rc = suite_collect(&l, families, quick);
  if (rc) return rc;
  cli_devices devs;
  if ((rc = cli_devices_open(&devs, device, RCL_MODE_REPRODUCIBLE)) != 0) {
    suite_free(&l);
    return rc;
  }
  json_t *doc;
  int bad = suite_execute(&doc, &l, &devs, NULL, 0);
  json_object_set_new(doc, "suite", json_string(quick ? "quick" : "full"));
  if (json_dump_file(doc, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0) rc = cli_error("cannot write %s", out);
  else
    fprintf(stderr, "wrote %s: %zu case(s) x %zu device(s), %d disagreement(s) with the host reference\n", out,
            l.count, devs.count, bad);
  json_decref(doc);
  cli_devices_close(&devs);
  suite_free(&l);
  return rc ? rc : bad ? 1 : 0;
}
