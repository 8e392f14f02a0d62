/* reprocl bench: every kernel family at several sizes, reproducible (tuned) beside native and the peer
 * libraries, with the device's measured copy bandwidth as the physical limit. One JSON document. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "peers.h"

const cli_bench_family cli_bench_families[] = {
    {"reduce", cli_bench_reduce},
    {"spmv", cli_bench_spmv},
    {"cg", cli_bench_cg},
    {"stencil", cli_bench_stencil},
    {"md", cli_bench_md},
    {NULL, NULL}};

static void help(void) {
  printf("usage: reprocl bench [--family F[,F...]|all] [--device D|all] [--quick] [--repeats R]\n"
         "                     [--max-seconds S] [--skip-peer [FAMILY:]PEER[,...]] [-o FILE.json]\n\n"
         "Benchmarks each kernel family on each device: time (median of R runs, min, max), GB/s, GFLOP/s and\n"
         "the fraction of the device's copy bandwidth measured in the same run; reproducible and native side\n"
         "by side, and the peer libraries where present (CLBlast for the reductions, ViennaCL for SpMV and\n"
         "CG). --quick uses tiny sizes (CI keeps it working; it asserts nothing about speed). --max-seconds\n"
         "is a time budget per device: each family gets an equal share of what is left when it starts and\n"
         "skips (and records) the sizes that would not fit. With -o the file is rewritten after each family,\n"
         "so an interrupted run keeps what it measured. --skip-peer leaves a peer (clblast, viennacl) out,\n"
         "everywhere or in one family (cg:viennacl), recorded as skipped, e.g. where its kernels crash a\n"
         "driver's compiler. Families:");
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

/* The host's 1-minute load average (Linux /proc/loadavg), or null: a benchmark on a shared machine is
 * read together with how busy the machine was. */
static json_t *load_average(void) {
  FILE *f = fopen("/proc/loadavg", "r");
  double l;
  int ok = f && fscanf(f, "%lf", &l) == 1;
  if (f) fclose(f);
  return ok ? json_real(l) : json_null();
}

/* Writes the document (to stdout at the end when there is no -o). */
static int write_doc(json_t *top, const char *outpath, int final) {
  if (!outpath) {
    if (final) cli_json_print(json_incref(top));
    return 0;
  }
  if (json_dump_file(top, outpath, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0)
    return cli_error("cannot write %s", outpath);
  if (final) fprintf(stderr, "wrote %s\n", outpath);
  return 0;
}

int cmd_bench(int argc, char **argv) {
  static const struct option opts[] = {{"family", required_argument, 0, 'f'},
                                       {"device", required_argument, 0, 'd'},
                                       {"quick", no_argument, 0, 'q'},
                                       {"repeats", required_argument, 0, 'r'},
                                       {"max-seconds", required_argument, 0, 's'},
                                       {"output", required_argument, 0, 'o'},
                                       {"skip-peer", required_argument, 0, 'P'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *families = "all", *device = NULL, *outpath = NULL, *skip_peers = NULL;
  int quick = 0, repeats = 5, c, rc = 0;
  double max_seconds = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
    switch (c) {
    case 'f':
      families = optarg;
      break;
    case 'd':
      device = optarg;
      break;
    case 'q':
      quick = 1;
      break;
    case 'r':
      rc = cli_parse_int(&repeats, "--repeats", optarg, 1, 1000);
      break;
    case 's':
      rc = cli_parse_double(&max_seconds, "--max-seconds", optarg);
      if (!rc && !(max_seconds >= 0)) rc = cli_error("--max-seconds must be >= 0 (0: no limit), not %s", optarg);
      break;
    case 'o':
      outpath = optarg;
      break;
    case 'P':
      skip_peers = optarg;
      for (const char *p = optarg; *p;) {
        const char *fam, *peer;
        size_t fl, pl;
        const char *item = p;
        p = cli_skip_peer_item(p, &fam, &fl, &peer, &pl);
        int known_family = !fam;
        for (const cli_bench_family *f = cli_bench_families; fam && f->family; f++)
          if (strlen(f->family) == fl && !strncmp(fam, f->family, fl)) known_family = 1;
        if (!known_family)
          return cli_error("unknown family \"%.*s\" in --skip-peer %.*s", (int)fl, fam, (int)(peer + pl - item), item);
        if (!((pl == 7 && !strncmp(peer, "clblast", 7)) || (pl == 8 && !strncmp(peer, "viennacl", 8))))
          return cli_error("unknown peer \"%.*s\" in --skip-peer (clblast, viennacl; FAMILY:PEER for one family)",
                           (int)pl, peer);
      }
      break;
    case 'h':
      help();
      return 0;
    default:
      return 2;
    }
    if (rc) return rc;
  }
  if (optind < argc) return cli_error("unexpected argument \"%s\"", argv[optind]);
  size_t nfam = 0;
  for (const cli_bench_family *f = cli_bench_families; f->family; f++) nfam += selected(families, f->family) != 0;
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
  /* The command line as given, and which peers this build has, so a reader can rerun and compare. */
  char cmdline[1024] = "reprocl";
  for (int i = 0; i < argc; i++) {
    size_t l = strlen(cmdline);
    snprintf(cmdline + l, sizeof cmdline - l, " %s", argv[i]);
  }
  const char *tuning = getenv("REPROCL_TUNING");
  json_t *jdev = json_array(), *results = json_array();
  json_t *top =
      json_pack("{s:s,s:s,s:s,s:b,s:i,s:f,s:s,s:{s:b,s:b},s:o,s:o}", "reprocl", REPROCL_VERSION_STRING, "command",
                "bench", "command_line", cmdline, "quick", quick, "repeats", quick ? 2 : repeats, "max_seconds",
                max_seconds, "tuning", tuning ? tuning : "on", "peers", "clblast", peer_clblast_available(), "viennacl",
                peer_viennacl_available(), "devices", json_incref(jdev), "results", json_incref(results));
  json_object_set_new(top, "load_average_start", load_average());
  for (size_t i = 0; i < devs.count && !rc; i++) {
    cli_bench b = {devs.ctx[i], ndevs.ctx[i], devs.name[i], quick, quick ? 2 : repeats, 0, results, 0, 0, 0, skip_peers};
    double dev_t0 = cli_now();
    fprintf(stderr, "device %s\n", devs.name[i]);
    if (cli_bench_copy_gbps(&b.copy_gbps, b.ctx, quick ? (1u << 22) : (size_t)1 << 30, b.repeats))
      fprintf(stderr, "  copy bandwidth not measured: %s\n", rcl_error_last());
    else
      fprintf(stderr, "  copy bandwidth %.1f GB/s (read + write)\n", b.copy_gbps);
    json_t *pj = cli_profile_json(rcl_context_profile(b.ctx));
    json_object_set_new(pj, "name", json_string(devs.name[i]));
    json_object_set_new(pj, "copy_gbps", json_real(b.copy_gbps));
    double launch = 0, launch_dev = 0;
    if (cli_bench_launch_seconds(&launch, &launch_dev, b.ctx, b.repeats))
      fprintf(stderr, "  launch latency not measured: %s\n", rcl_error_last());
    else
      fprintf(stderr, "  launch + finish of one small kernel %.1f us\n", launch * 1e6);
    json_object_set_new(pj, "launch_seconds", launch > 0 ? json_real(launch) : json_null());
    json_object_set_new(pj, "launch_device_seconds", launch_dev > 0 ? json_real(launch_dev) : json_null());
    json_array_append_new(jdev, pj);
    size_t left = nfam;
    for (const cli_bench_family *f = cli_bench_families; f->family && !rc; f++) {
      if (!selected(families, f->family)) continue;
      b.family_t0 = cli_now();
      b.size_t0 = 0;
      b.budget_s = max_seconds > 0 ? (max_seconds - (b.family_t0 - dev_t0)) / (double)left : 0;
      if (max_seconds > 0 && b.budget_s < 0) b.budget_s = 1e-9; /* spent: every size is skipped */
      left--;
      rc = f->fn(&b);
      fprintf(stderr, "  %s: %.1f s\n", f->family, cli_now() - b.family_t0);
      json_object_set_new(top, "load_average_end", load_average());
      if (!rc) rc = write_doc(top, outpath, 0);
    }
  }
  if (!rc) rc = write_doc(top, outpath, 1);
  json_decref(top);
  json_decref(jdev);
  json_decref(results);
  cli_devices_close(&ndevs);
  cli_devices_close(&devs);
  return rc;
}
