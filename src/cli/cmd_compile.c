/* reprocl compile: program binaries for offline use (the FPGA flow). Writes a bundle of every program
 * reprocl builds for a device, the complete sources and options for an offline compiler, or packs the
 * offline compiler's outputs into a bundle. The library loads a bundle with rcl_program_bundle_load or
 * $REPROCL_BINARIES and then never compiles. */
#include <getopt.h>
#include <string.h>

#include "cli.h"

static void help(void) {
  printf("usage: reprocl compile [--device D] -o FILE            bundle of this device's program binaries\n"
         "       reprocl compile [--device D] --emit-source DIR   DIR/<key>.cl + <key>.options + manifest.txt\n"
         "       reprocl compile [--device D] --pack DIR -o FILE  bundle of DIR/<key>.bin (offline-compiled)\n\n"
         "Run a program with REPROCL_BINARIES=FILE (or rcl_program_bundle_load) to load its kernels with\n"
         "clCreateProgramWithBinary instead of compiling. A bundle holds binaries for one device and driver\n"
         "(its fingerprint); loading it elsewhere is refused. platforms/intel-fpga.conf and xilinx.conf give\n"
         "the offline-compile commands and the flags that keep the contracts.\n");
}

int cmd_compile(int argc, char **argv) {
  static const struct option opts[] = {{"device", required_argument, 0, 'd'},
                                       {"output", required_argument, 0, 'o'},
                                       {"emit-source", required_argument, 0, 'e'},
                                       {"pack", required_argument, 0, 'p'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *device = NULL, *out = NULL, *emit = NULL, *pack = NULL;
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
    switch (c) {
    case 'd':
      device = optarg;
      break;
    case 'o':
      out = optarg;
      break;
    case 'e':
      emit = optarg;
      break;
    case 'p':
      pack = optarg;
      break;
    case 'h':
      help();
      return 0;
    default:
      return 2;
    }
  }
  if (optind < argc) return cli_error("unexpected argument \"%s\"", argv[optind]);
  if (device && !strcmp(device, "all")) return cli_error("--device all: a bundle is for one device; name one");
  if (emit && (out || pack)) return cli_error("--emit-source writes sources only; it takes no -o or --pack");
  if (!emit && !out) return cli_error("-o FILE (or --emit-source DIR) is required");
  cli_devices d;
  int rc = cli_devices_open(&d, device, RCL_MODE_REPRODUCIBLE);
  if (rc) return rc;
  size_t n = 0;
  if (emit) {
    if (rcl_program_sources_write(d.ctx[0], emit, &n))
      rc = cli_fail("writing sources to %s", emit);
    else
      printf("wrote %zu program sources for %s to %s (see %s/manifest.txt)\n", n, d.name[0], emit, emit);
  } else if (pack) {
    if (rcl_program_bundle_pack(d.ctx[0], pack, out, &n))
      rc = cli_fail("packing %s", pack);
    else
      printf("packed %zu offline-compiled programs for %s into %s\n", n, d.name[0], out);
  } else {
    if (rcl_program_bundle_write(d.ctx[0], out, &n))
      rc = cli_fail("compiling for %s", d.name[0]);
    else
      printf("wrote %zu program binaries for %s to %s (load with REPROCL_BINARIES=%s)\n", n, d.name[0], out, out);
  }
  cli_devices_close(&d);
  return rc;
}
