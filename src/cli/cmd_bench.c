/* reprocl bench: every kernel family at several sizes, reproducible (tuned) beside native and the peer
 * libraries, with the device's measured copy bandwidth as the physical limit. One JSON document. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_run_common.h"
#include "opt.h"
#include "peers.h"

const cli_bench_family cli_bench_families[] = {{"reduce", cli_bench_reduce}, {"spmv", cli_bench_spmv},
                                               {"cg", cli_bench_cg},         {"stencil", cli_bench_stencil},
                                               {"md", cli_bench_md},         {NULL, NULL}};

int cli_bench_selected(const char *list, const char *family) {
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

/* The options of a benchmark run. */
typedef struct {
  const char *families, *device, *outpath, *skip_peers;
  int quick, repeats, json;
  double max_seconds;
  cli_split_opts split;
} bench_opts;

/* Writes the document to -o's file (after each family and at the end) and prints it on stdout at the end
 * with --json or without -o. */
static int write_doc(json_t *top, const bench_opts *o, int final) {
  if (final && (o->json || !o->outpath)) cli_json_print(json_incref(top));
  if (!o->outpath) return 0;
  if (json_dump_file(top, o->outpath, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0)
    return cli_error("cannot write %s", o->outpath);
  if (final) fprintf(stderr, "wrote %s\n", o->outpath);
  return 0;
}

static int opt_max_seconds(void *target, const char *opt, const char *value) {
  int rc = cli_parse_double(target, opt, value);
  if (!rc && !(*(double *)target >= 0)) rc = cli_error("%s must be >= 0 (0: no limit), not %s", opt, value);
  return rc;
}

static int known_family(const char *name, size_t len) {
  for (const cli_bench_family *f = cli_bench_families; f->family; f++)
    if (strlen(f->family) == len && !strncmp(f->family, name, len)) return 1;
  return 0;
}

/* --skip-peer [FAMILY:]PEER[,...]: every item names a known family (if any) and peer. */
static int opt_skip_peer(void *target, const char *opt, const char *value) {
  (void)opt;
  for (const char *p = value; *p;) {
    const char *fam, *peer, *item = p;
    size_t fl, pl;
    p = cli_skip_peer_item(p, &fam, &fl, &peer, &pl);
    if (fam && !known_family(fam, fl))
      return cli_error("unknown family \"%.*s\" in --skip-peer %.*s", (int)fl, fam, (int)(peer + pl - item), item);
    if (!((pl == 7 && !strncmp(peer, "clblast", 7)) || (pl == 8 && !strncmp(peer, "viennacl", 8))))
      return cli_error("unknown peer \"%.*s\" in --skip-peer (clblast, viennacl; FAMILY:PEER for one family)", (int)pl,
                       peer);
  }
  *(const char **)target = value;
  return 0;
}

/* --family: every item a benchmark family. */
static int check_families(const char *families) {
  for (const char *p = families; strcmp(families, "all") && *p;) {
    const char *cm = strchr(p, ',');
    size_t l = cm ? (size_t)(cm - p) : strlen(p);
    if (!known_family(p, l)) return cli_error("unknown family \"%.*s\" in --family", (int)l, p);
    p += l + (cm != NULL);
  }
  return 0;
}

/* The document's head: the command line as given, and which peers this build has, so a reader can rerun
 * and compare; devices and results are filled in as the run goes. */
static json_t *bench_doc(int argc, char **argv, const bench_opts *o, json_t *jdev, json_t *results) {
  char cmdline[1024] = "reprocl";
  for (int i = 0; i < argc; i++) {
    size_t l = strlen(cmdline);
    snprintf(cmdline + l, sizeof cmdline - l, " %s", argv[i]);
  }
  const char *tuning = getenv("REPROCL_TUNING");
  json_t *top = json_pack("{s:s,s:s,s:s,s:b,s:i,s:f,s:s,s:{s:b,s:b},s:o,s:o}", "reprocl", REPROCL_VERSION_STRING,
                          "command", "bench", "command_line", cmdline, "quick", o->quick, "repeats",
                          o->quick ? 2 : o->repeats, "max_seconds", o->max_seconds, "tuning", tuning ? tuning : "on",
                          "peers", "clblast", peer_clblast_available(), "viennacl", peer_viennacl_available(),
                          "devices", json_incref(jdev), "results", json_incref(results));
  json_object_set_new(top, "load_average_start", load_average());
  return top;
}

/* The device's copy bandwidth and launch latency, measured now, in its entry of the device list. */
static void bench_device_entry(cli_bench *b, json_t *jdev) {
  if (cli_bench_copy_gbps(&b->copy_gbps, b->ctx, b->quick ? (1u << 22) : (size_t)1 << 30, b->repeats))
    fprintf(stderr, "  copy bandwidth not measured: %s\n", rcl_error_last());
  else
    fprintf(stderr, "  copy bandwidth %.1f GB/s (read + write)\n", b->copy_gbps);
  json_t *pj = cli_profile_json(rcl_context_profile(b->ctx));
  json_object_set_new(pj, "name", json_string(b->device_name));
  json_object_set_new(pj, "copy_gbps", json_real(b->copy_gbps));
  double launch = 0, launch_dev = 0;
  if (cli_bench_launch_seconds(&launch, &launch_dev, b->ctx, b->repeats))
    fprintf(stderr, "  launch latency not measured: %s\n", rcl_error_last());
  else
    fprintf(stderr, "  launch + finish of one small kernel %.1f us\n", launch * 1e6);
  json_object_set_new(pj, "launch_seconds", launch > 0 ? json_real(launch) : json_null());
  json_object_set_new(pj, "launch_device_seconds", launch_dev > 0 ? json_real(launch_dev) : json_null());
  json_array_append_new(jdev, pj);
}

/* Every selected family on one device, each within its share of --max-seconds; the document is
 * rewritten after each. */
static int bench_device(cli_bench *b, const bench_opts *o, json_t *top, json_t *jdev) {
  size_t left = 0;
  for (const cli_bench_family *f = cli_bench_families; f->family; f++)
    left += cli_bench_selected(o->families, f->family) != 0;
  double dev_t0 = cli_now();
  fprintf(stderr, "device %s\n", b->device_name);
  bench_device_entry(b, jdev);
  int rc = 0;
  for (const cli_bench_family *f = cli_bench_families; f->family && !rc; f++) {
    if (!cli_bench_selected(o->families, f->family)) continue;
    b->family_t0 = cli_now();
    b->size_t0 = 0;
    b->budget_s = o->max_seconds > 0 ? (o->max_seconds - (b->family_t0 - dev_t0)) / (double)left : 0;
    if (o->max_seconds > 0 && b->budget_s < 0) b->budget_s = 1e-9; /* spent: every size is skipped */
    left--;
    rc = f->fn(b);
    fprintf(stderr, "  %s: %.1f s\n", f->family, cli_now() - b->family_t0);
    json_object_set_new(top, "load_average_end", load_average());
    if (!rc) rc = write_doc(top, o, 0);
  }
  return rc;
}

/* --split: the scaling run (bench_split.c) over the split's devices instead of the per-device benchmarks. */
static int bench_split_run(int argc, char **argv, const bench_opts *o) {
  for (const cli_bench_family *f = cli_bench_families; f->family; f++)
    if (strcmp(o->families, "all") && cli_bench_selected(o->families, f->family) && !cli_bench_split_has(f->family))
      return cli_error("--family %s: bench --split has no %s problem (it runs reduce, spmv, cg, stencil)", f->family,
                       f->family);
  if (o->device) return cli_error("--device does not apply with --split (the split's devices are benchmarked)");
  cli_split_run sr;
  int rc = cli_split_open(&sr, &o->split);
  json_t *jdev = json_array(), *results = json_array();
  json_t *top = bench_doc(argc, argv, o, jdev, results);
  cli_bench b = {NULL, NULL, NULL, o->quick, o->quick ? 2 : o->repeats, 0, results, 0, 0, 0, NULL};
  if (!rc) rc = cli_bench_split(&b, &sr, o->families, jdev);
  json_object_set_new(top, "load_average_end", load_average());
  if (!rc) rc = write_doc(top, o, 1);
  json_decref(top);
  json_decref(jdev);
  json_decref(results);
  cli_split_close(&sr);
  return rc;
}

static int bench_run(int argc, char **argv, const bench_opts *o) {
  if (o->split.devices) return bench_split_run(argc, argv, o);
  cli_devices devs, ndevs;
  int rc;
  if ((rc = cli_devices_open(&devs, o->device, RCL_MODE_REPRODUCIBLE)) != 0) return rc;
  if ((rc = cli_devices_clone(&ndevs, &devs, RCL_MODE_NATIVE)) != 0) {
    cli_devices_close(&devs);
    return rc;
  }
  json_t *jdev = json_array(), *results = json_array();
  json_t *top = bench_doc(argc, argv, o, jdev, results);
  for (size_t i = 0; i < devs.count && !rc; i++) {
    int repeats = o->quick ? 2 : o->repeats;
    cli_bench b = {devs.ctx[i], ndevs.ctx[i], devs.name[i], o->quick, repeats, 0, results, 0, 0, 0, o->skip_peers};
    rc = bench_device(&b, o, top, jdev);
  }
  if (!rc) rc = write_doc(top, o, 1);
  json_decref(top);
  json_decref(jdev);
  json_decref(results);
  cli_devices_close(&ndevs);
  cli_devices_close(&devs);
  return rc;
}

int cmd_bench(int argc, char **argv) {
  bench_opts o = {"all", NULL, NULL, NULL, 0, 5, 0, 0, {NULL, {0}, 0}};
  const cli_opt opts[] = {
      CLI_STR("family", &o.families, "F[,F...]|all", "families to run (default: all; listed below)"),
      CLI_OPT_DEVICE(&o.device, CLI_DEFAULT_DEVICE),
      CLI_FLAG("quick", &o.quick, "tiny sizes, for CI (asserts nothing about speed)"),
      CLI_VAL("repeats", &o.repeats, cli_opt_repeats, "R", "timed runs per case, the median reported (default 5)"),
      CLI_VAL("max-seconds", &o.max_seconds, opt_max_seconds, "S", "time budget per device (default 0: none)"),
      CLI_VAL("skip-peer", &o.skip_peers, opt_skip_peer, "[FAMILY:]PEER[,...]", "leave a peer library out"),
      CLI_OPT_OUTPUT(&o.outpath, "write the benchmark JSON to FILE (rewritten after each family)"),
      CLI_FLAG("json", &o.json, "print the benchmark JSON on stdout (the default without -o)"),
      CLI_SECTION("scaling over several devices"),
      CLI_OPT_SPLIT(&o.split),
      CLI_END};
  char about[2048];
  int w =
      snprintf(about, sizeof about, "%s",
               "Benchmarks each kernel family on each device: time (median of R runs, min, max), GB/s, GFLOP/s and\n"
               "the fraction of the device's copy bandwidth measured in the same run; reproducible and native side\n"
               "by side, and the peer libraries where present (CLBlast for the reductions, ViennaCL for SpMV and\n"
               "CG). --quick uses tiny sizes (CI keeps it working; it asserts nothing about speed). --max-seconds\n"
               "is a time budget per device: each family gets an equal share of what is left when it starts and\n"
               "skips (and records) the sizes that would not fit. With -o the file is rewritten after each family,\n"
               "so an interrupted run keeps what it measured. --skip-peer leaves a peer (clblast, viennacl) out,\n"
               "everywhere or in one family (cg:viennacl), recorded as skipped, e.g. where its kernels crash a\n"
               "driver's compiler. --split DEVICES runs the scaling benchmark instead: per family one problem\n"
               "(a 2^26 sum in f32 and f64, SpMV and 20 CG iterations on poisson3d:128, 10 iterations of the\n"
               "9-point stencil on 8192^2) on each device of the split alone and over the split, with the ratio\n"
               "split / fastest device alone and each device's share. Families:");
  for (const cli_bench_family *f = cli_bench_families; f->family && w > 0 && (size_t)w < sizeof about; f++)
    w += snprintf(about + w, sizeof about - (size_t)w, " %s", f->family);
  const cli_cmd_spec spec = {"bench",
                             "[--family F[,F...]|all] [--device D|all] [--quick] [--repeats R]\n"
                             "                     [--max-seconds S] [--skip-peer [FAMILY:]PEER[,...]] [-o FILE.json]"
                             " [--json]\n"
                             "                     [--split DEVICES [--split-weights W1:W2:...]]",
                             about,
                             opts,
                             NULL,
                             0,
                             0};
  CLI_PARSE(&spec, argc, argv, NULL, NULL);
  int rc = check_families(o.families);
  return rc ? rc : bench_run(argc, argv, &o);
}
