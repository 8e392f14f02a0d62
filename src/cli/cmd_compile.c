/* reprocl compile: program binaries for offline use (the FPGA flow). Writes a bundle of every program
 * reprocl builds for a device, the complete sources and options for an offline compiler, or packs the
 * offline compiler's outputs into a bundle. The library loads a bundle with rcl_program_bundle_load or
 * $REPROCL_BINARIES and then never compiles. */
#include <string.h>

#include "cli.h"
#include "opt.h"

/* Writes what the options ask for on the device of d. */
static int compile_run(cli_devices *d, const char *out, const char *emit, const char *pack) {
  size_t n = 0;
  if (emit) {
    char manifest[4096];
    if (rcl_program_sources_write(d->ctx[0], emit, &n)) return cli_fail("writing sources to %s", emit);
    cli_path_join(manifest, sizeof manifest, emit, "manifest.txt");
    printf("wrote %zu program sources for %s to %s (see %s)\n", n, d->name[0], emit, manifest);
  } else if (pack) {
    if (rcl_program_bundle_pack(d->ctx[0], pack, out, &n)) return cli_fail("packing %s", pack);
    printf("packed %zu offline-compiled programs for %s into %s\n", n, d->name[0], out);
  } else {
    if (rcl_program_bundle_write(d->ctx[0], out, &n)) return cli_fail("compiling for %s", d->name[0]);
    printf("wrote %zu program binaries for %s to %s (load with REPROCL_BINARIES=%s)\n", n, d->name[0], out, out);
  }
  return 0;
}

int cmd_compile(int argc, char **argv) {
  const char *device = NULL, *out = NULL, *emit = NULL, *pack = NULL;
  const cli_opt opts[] = {CLI_OPT_DEVICE(&device, CLI_DEFAULT_DEVICE), CLI_OPT_OUTPUT(&out, "the bundle to write"),
                          CLI_STR("emit-source", &emit, "DIR", "write DIR/<key>.cl + <key>.options + manifest.txt"),
                          CLI_STR("pack", &pack, "DIR", "bundle DIR/<key>.bin (offline-compiled) into -o FILE"),
                          CLI_END};
  const cli_cmd_spec spec = {
      "compile",
      "[--device D] -o FILE            bundle of this device's program binaries\n"
      "       reprocl compile [--device D] --emit-source DIR   DIR/<key>.cl + <key>.options + manifest.txt\n"
      "       reprocl compile [--device D] --pack DIR -o FILE  bundle of DIR/<key>.bin (offline-compiled)",
      "Run a program with REPROCL_BINARIES=FILE (or rcl_program_bundle_load) to load its kernels with\n"
      "clCreateProgramWithBinary instead of compiling. A bundle holds binaries for one device and driver\n"
      "(its fingerprint); loading it elsewhere is refused. platforms/intel-fpga.conf and xilinx.conf give\n"
      "the offline-compile commands and the flags that keep the contracts.",
      opts,
      NULL,
      0,
      0};
  CLI_PARSE(&spec, argc, argv, NULL, NULL);
  if (device && !strcmp(device, "all")) return cli_error("--device all: a bundle is for one device; name one");
  if (emit && (out || pack)) return cli_error("--emit-source writes sources only; it takes no -o or --pack");
  if (!emit && !out) return cli_error("-o FILE (or --emit-source DIR) is required");
  cli_devices d;
  int rc = cli_devices_open(&d, device, RCL_MODE_REPRODUCIBLE);
  if (rc) return rc;
  rc = compile_run(&d, out, emit, pack);
  cli_devices_close(&d);
  return rc;
}
