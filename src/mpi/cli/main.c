/* reprocl-mpi: the reprocl tool under mpirun. Every rank runs the command on its own device and slice of the
 * problem; rank 0 prints (the other ranks' stdout and stderr are silent, their failures reach rank 0 through
 * the MPI layer's agreement, naming the rank); every rank exits with the same status (the rule of cli.h). */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "mpi_cli.h"

static const cli_command mpi_commands[] = {
    {"run", mpi_cmd_run, "run a kernel over the ranks (one problem, sliced) and compare with the host reference"},
    {"spmv", mpi_cmd_spmv, "y = alpha*A*x + beta*y, A's rows cut over the ranks (the digest of reprocl spmv)"},
    {"cg", mpi_cmd_cg, "Conjugate Gradient over the ranks (the digests of reprocl cg)"},
    {"bench", mpi_cmd_bench, "bench allreduce: the reproducible allreduce's time against MPI_Allreduce"},
    {"stencil", mpi_cmd_stencil, "a stencil or SOR over blocks of rows on the ranks (the digest of reprocl stencil)"},
    {"md", mpi_cmd_md, "a Lennard-Jones MD simulation over the ranks (one slab each): the digests of reprocl md"},
    {NULL, NULL, NULL}};

static void usage(FILE *f) {
  fprintf(f, "usage: mpirun -n K reprocl-mpi <command> [options]   (reprocl-mpi <command> --help for its options)\n\n"
             "commands:\n");
  for (const cli_command *c = mpi_commands; c->name; c++) fprintf(f, "  %-12s %s\n", c->name, c->summary);
  fprintf(f, "\nRank 0 prints; every rank exits with the same status. Environment as for reprocl (reprocl --help).\n"
             "exit status: 0 success, every result agrees; 1 a reproducible result disagrees; 2 bad usage or\n"
             "             input (on any rank); 3 could not run (on any rank). Guide: docs/scaleout.md\n");
}

/* The other ranks print nothing: rank 0 speaks for all. */
static void silence(void) {
  int fd = open("/dev/null", O_WRONLY);
  if (fd < 0) return;
  fflush(stdout);
  fflush(stderr);
  dup2(fd, STDOUT_FILENO);
  dup2(fd, STDERR_FILENO);
  close(fd);
}

static int dispatch(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return CLI_EXIT_USAGE;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return CLI_EXIT_OK;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("reprocl-mpi %s\n", REPROCL_VERSION_STRING);
    return CLI_EXIT_OK;
  }
  for (const cli_command *c = mpi_commands; c->name; c++)
    if (!strcmp(c->name, argv[1])) {
      cli_progname = c->name;
      return c->fn(argc - 1, argv + 1);
    }
  fprintf(stderr, "reprocl-mpi: unknown command \"%s\"\n\n", argv[1]);
  usage(stderr);
  return CLI_EXIT_USAGE;
}

int main(int argc, char **argv) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
    fprintf(stderr, "reprocl-mpi: error: MPI_Init failed\n");
    return CLI_EXIT_FAILED;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) silence();
  cli_toolname = "reprocl-mpi";
  int rc = dispatch(argc, argv);
  fflush(stdout);
  MPI_Finalize();
  return rc;
}
