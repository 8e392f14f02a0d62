/* reprocl: the command-line tool for cross-vendor reproducibility testing. One file per command. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "opt.h"
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
  fprintf(f, "\nenvironment: REPROCL_DEVICE (default device), REPROCL_KERNEL_DIR (kernels from disk),\n"
             "             REPROCL_TUNING=on|off|force, REPROCL_TUNE_BUDGET_MS, REPROCL_CACHE_DIR,\n"
             "             REPROCL_BINARIES (offline program bundle), RUSTICL_ENABLE=llvmpipe (Mesa's CPU device)\n"
             "exit status: 0 success, every result agrees; 1 a reproducible result disagrees (or the command's\n"
             "             finding); 2 bad usage or input; 3 could not run. Options and statuses: docs/cli.md\n");
}

static const cli_command *find_command(const char *name) {
  for (const cli_command *c = cli_commands; c->name; c++)
    if (!strcmp(c->name, name)) return c;
  return NULL;
}

/* "unknown command" with the nearest command's name, then the usage; exit status 2. */
static int unknown_command(const char *name) {
  const char *names[32];
  size_t n = 0;
  for (const cli_command *c = cli_commands; c->name && n < 32; c++) names[n++] = c->name;
  const char *near = cli_opt_nearest(name, strlen(name), names, n);
  fprintf(stderr, "reprocl: unknown command \"%s\"", name);
  if (near) fprintf(stderr, " (did you mean %s?)", near);
  fprintf(stderr, "\n\n");
  usage(stderr);
  return CLI_EXIT_USAGE;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return CLI_EXIT_USAGE;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    if (argc > 2 && strcmp(argv[1], "help") == 0) { /* reprocl help CMD: CMD --help */
      const cli_command *c = find_command(argv[2]);
      if (!c) return unknown_command(argv[2]);
      char *args[] = {argv[2], "--help", NULL};
      cli_progname = c->name;
      return c->fn(2, args);
    }
    usage(stdout);
    return CLI_EXIT_OK;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("reprocl %s\n", REPROCL_VERSION_STRING);
    return CLI_EXIT_OK;
  }
  const cli_command *c = find_command(argv[1]);
  if (!c) return unknown_command(argv[1]);
  cli_progname = c->name;
  return c->fn(argc - 1, argv + 1);
}
