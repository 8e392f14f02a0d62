/* reprocl bench: every kernel family at several sizes, reproducible (tuned) beside native and the peer
 * libraries, with the device's measured copy bandwidth as the physical limit. One JSON document. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const cli_bench_family cli_bench_families[] = {
    {"reduce", cli_bench_reduce},
    {"spmv", cli_bench_spmv},
    {"cg", cli_bench_cg},
    {"stencil", cli_bench_stencil},
    {"md", cli_bench_md},
    {NULL, NULL}};

static void help(void) {
  printf("usage: reprocl bench [--family F[,F...]|all] [--device D|all] [--quick] [--repeats R] [-o FILE.json]\n\n"
         "Benchmarks each kernel family on each device: time (median of R runs, min, max), GB/s, GFLOP/s and\n"
         "the fraction of the device's copy bandwidth measured in the same run; reproducible and native side\n"
         "by side (and peer libraries where present). --quick uses tiny sizes (CI keeps it working; it\n"
         "asserts nothing about speed). Families:");
  for (const cli_bench_family *f = cli_bench_families; f->family; f++) printf(" %s", f->family);
  printf("\n");
}

static int selected(const char *list, const char *family) {
  if (!list || !strcmp(list, "all")) return 1;
  size_t fl = strlen(family);
  for (const char *p = list; *p;) {
    const char *c = strchr(p, ',');
    size_t l = c ? (size_t)(c - p) : strlen(p);
    if (l == fl && !strncmp(p, family, l)) return 1;
    p += l + (c != NULL);
  }
  return 0;
}

int cmd_bench(int argc, char **argv) {
  static const struct option opts[] = {{"family", required_argument, 0, 'f'}, {"device", required_argument, 0, 'd'},
                                       {"quick", no_argument, 0, 'q'},        {"repeats", required_argument, 0, 'r'},
                                       {"output", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *families = "all", *device = NULL, *outpath = NULL;
  int quick = 0, repeats = 5, c, rc = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
    switch (c) {
    case 'f': families = optarg; break;
    case 'd': device = optarg; break;
    case 'q': quick = 1; break;
    case 'r': rc = cli_parse_int(&repeats, "--repeats", optarg, 1, 1000); break;
    case 'o': outpath = optarg; break;
    case 'h': help(); return 0;
    default: return 2;
    }
    if (rc) return rc;
  }
  if (optind < argc) return cli_error("unexpected argument \"%s\"", argv[optind]);
  for (const char *p = families; strcmp(families, "all") && *p;) {
    const char *cm = strchr(p, ',');
    size_t l = cm ? (size_t)(cm - p) : strlen(p);
    int known = 0;
    for (const cli_bench_family *f = cli_bench_families; f->family; f++)
      known |= strlen(f->family) == l && !strncmp(f->family, p, l);
    if (!known) return cli_error("unknown family \"%.*s\" in --family", (int)l, p);
    p += l + (cm != NULL);
  }
  cli_devices devs, ndevs;
  if ((rc = cli_devices_open(&devs, device, RCL_MODE_REPRODUCIBLE)) != 0) return rc;
  if ((rc = cli_devices_clone(&ndevs, &devs, RCL_MODE_NATIVE)) != 0) {
    cli_devices_close(&devs);
    return rc;
  }
  json_t *jdev = json_array(), *results = json_array();
  for (size_t i = 0; i < devs.count && !rc; i++) {
    cli_bench b = {devs.ctx[i], ndevs.ctx[i], devs.name[i], quick, quick ? 2 : repeats, 0, results};
    fprintf(stderr, "device %s\n", devs.name[i]);
    if (cli_bench_copy_gbps(&b.copy_gbps, b.ctx, quick ? (1u << 22) : (size_t)1 << 30, b.repeats))
      fprintf(stderr, "  copy bandwidth not measured: %s\n", rcl_error_last());
    else fprintf(stderr, "  copy bandwidth %.1f GB/s (read + write)\n", b.copy_gbps);
    json_t *pj = cli_profile_json(rcl_context_profile(b.ctx));
    json_object_set_new(pj, "name", json_string(devs.name[i]));
    json_object_set_new(pj, "copy_gbps", json_real(b.copy_gbps));
    json_array_append_new(jdev, pj);
    for (const cli_bench_family *f = cli_bench_families; f->family && !rc; f++)
      if (selected(families, f->family)) rc = f->fn(&b);
  }
  if (!rc) {
    json_t *top = json_pack("{s:s,s:s,s:b,s:i,s:o,s:o}", "reprocl", REPROCL_VERSION_STRING, "command", "bench", "quick",
                            quick, "repeats", quick ? 2 : repeats, "devices", jdev, "results", results);
    if (outpath) {
      if (json_dump_file(top, outpath, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0)
        rc = cli_error("cannot write %s", outpath);
      else fprintf(stderr, "wrote %s\n", outpath);
      json_decref(top);
    } else {
      cli_json_print(top);
    }
  } else {
    json_decref(jdev);
    json_decref(results);
  }
  cli_devices_close(&ndevs);
  cli_devices_close(&devs);
  return rc;
}
