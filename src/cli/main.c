/* reprocl: the command-line tool for cross-vendor reproducibility testing. One file per command. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "suite.h"

const cli_command cli_commands[] = {
    {"devices", cmd_devices, "list OpenCL devices and what each guarantees"},
    {"run", cmd_run, "run a kernel on one or all devices and compare digests"},
    {"spmv", cmd_spmv, "sparse y = alpha*A*x + beta*y on real or generated matrices, digests per device"},
    {"cg", cmd_cg, "Conjugate Gradient solve, residual history and solution digests per device"},
    {"stencil", cmd_stencil, "run a 2D stencil or SOR on one or all devices and compare digests"},
    {"check", cmd_check, "run the standard suite on every device: agreement table, native drift, HTML report"},
    {"fingerprint", cmd_fingerprint, "write the suite's digests per device to a JSON fingerprint"},
    {"compare", cmd_compare, "compare fingerprints made on different machines"},
    {"bench", cmd_bench, "benchmark kernels (reproducible vs native vs peers), JSON output"},
    {"bounds", cmd_bounds, "the interval of values an expression can take under any evaluation order and FMA"},
    {"tune", cmd_tune, "tune launch parameters per device and store them in the tuning cache"},
    {"cache", cmd_cache, "show, list or clear the tuning and program-binary caches"},
    {"compile", cmd_compile, "write program binaries for offline use (FPGA flow)"},
    {"md", cmd_md, "Lennard-Jones molecular dynamics on one or all devices, with per-device digests"},
    {"audit", cmd_audit, "inspect the compiled kernels for FMA, approximations and flush-to-zero"},
    {NULL, NULL, NULL}};

static void usage(FILE *f) {
  fprintf(f, "usage: reprocl <command> [options]   (reprocl <command> --help for its options)\n\ncommands:\n");
  for (const cli_command *c = cli_commands; c->name; c++) fprintf(f, "  %-12s %s\n", c->name, c->summary);
  fprintf(f,
          "\nenvironment: REPROCL_DEVICE (default device), REPROCL_KERNEL_DIR (kernels from disk),\n"
          "             REPROCL_TUNING=on|off|force, REPROCL_TUNE_BUDGET_MS, REPROCL_CACHE_DIR,\n"
          "             REPROCL_BINARIES (offline program bundle), RUSTICL_ENABLE=llvmpipe (Mesa's CPU device)\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    if (argc > 2 && strcmp(argv[1], "help") == 0) {
      for (const cli_command *c = cli_commands; c->name; c++)
        if (!strcmp(c->name, argv[2])) {
          char *args[] = {argv[2], "--help", NULL};
          cli_progname = c->name;
          return c->fn(2, args);
        }
    }
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("reprocl %s\n", REPROCL_VERSION_STRING);
    return 0;
  }
  for (const cli_command *c = cli_commands; c->name; c++)
    if (!strcmp(c->name, argv[1])) {
      cli_progname = c->name;
      return c->fn(argc - 1, argv + 1);
    }
  fprintf(stderr, "reprocl: unknown command \"%s\"\n\n", argv[1]);
  usage(stderr);
  return 2;
}
