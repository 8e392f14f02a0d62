/* The commands of reprocl-mpi (src/mpi/cli/): one file each, on the helpers of reprocl's CLI (cli.h, opt.h,
 * cli_run_common.h) and the MPI layer (reprocl/mpi.h). */
#ifndef REPROCL_MPI_CLI_H
#define REPROCL_MPI_CLI_H
#include <mpi.h>

#include "cli_run_common.h"
#include "reprocl/mpi.h"

/* reprocl-mpi run KERNEL (run reduce). */
int mpi_cmd_run(int argc, char **argv);
/* reprocl-mpi md (mpi_md_cmd.c). */
int mpi_cmd_md(int argc, char **argv);

/* The slice [*first, *first + *count) of n elements that rank of size ranks holds: balanced, in rank order
 * (the first n mod size ranks hold one more; ranks past n hold none). */
void mpi_cli_slice(size_t *first, size_t *count, size_t n, int rank, int size);

/* Writes bytes to path whole or not at all: a temporary file beside it, renamed over it (never a partial file;
 * the temporary one is removed on failure). Returns 0, or RCL_ERR_IO with *why set (a static message). */
int mpi_cli_write_atomic(const char *path, const void *data, size_t bytes, char *why, size_t why_size);

/* The test hook of the fault tests (tests/cli_mpi.sh): with REPROCL_MPI_TEST_DIE_RANK=r, rank r kills itself
 * (SIGKILL) here. */
void mpi_cli_test_die(int rank);

#endif
