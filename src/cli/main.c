/* reprocl: the command-line tool for cross-vendor reproducibility testing. One file per command. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

const cli_command cli_commands[] = {
    {"devices", cmd_devices, "list OpenCL devices and what each guarantees"},
    {"run", cmd_run, "run a kernel on one or all devices and compare digests"},
    {"bench", cmd_bench, "benchmark kernels (reproducible vs native vs peers), JSON output"},
    {"md", cmd_md, "Lennard-Jones molecular dynamics on one or all devices, with per-device digests"},
    {NULL, NULL, NULL}};

static void usage(FILE *f) {
  fprintf(f, "usage: reprocl <command> [options]   (reprocl <command> --help for its options)\n\ncommands:\n");
  for (const cli_command *c = cli_commands; c->name; c++) fprintf(f, "  %-12s %s\n", c->name, c->summary);
  fprintf(f,
          "\nenvironment: REPROCL_DEVICE (default device), REPROCL_KERNEL_DIR (kernels from disk),\n"
          "             REPROCL_TUNING=on|off|force, REPROCL_CACHE_DIR, RUSTICL_ENABLE=llvmpipe (Mesa's CPU device)\n");
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
