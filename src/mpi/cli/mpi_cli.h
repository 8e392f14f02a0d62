/* The commands of reprocl-mpi (src/mpi/cli/): one file each, on the helpers of reprocl's CLI (cli.h, opt.h,
 * cli_run_common.h) and the MPI layer (reprocl/mpi.h). */
#ifndef REPROCL_MPI_CLI_H
#define REPROCL_MPI_CLI_H
#include <mpi.h>

#include "cli_run_common.h"
#include "reprocl/mpi.h"

/* reprocl-mpi run KERNEL (run reduce), spmv, cg, stencil, bench allreduce. */
int mpi_cmd_run(int argc, char **argv);
int mpi_cmd_spmv(int argc, char **argv);
int mpi_cmd_cg(int argc, char **argv);
int mpi_cmd_stencil(int argc, char **argv);
int mpi_cmd_bench(int argc, char **argv);
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

/* This rank's context: --device for every rank, or the --device-map (rcl_mpi_context_create). Returns 0 or the
 * exit status (every rank the same; rank 0 prints the reason, naming the failing rank). */
int mpi_cli_open(rcl_context **ctx, const char *device, const char *map);

/* Each rank's device and piece [first, first + count), gathered on rank 0 (*rows: size entries there, NULL
 * elsewhere; free it). Returns 0 or the exit status. */
typedef struct {
  char name[260];
  uint64_t first, count;
} rank_row;
int mpi_cli_gather_ranks(rank_row **rows, rcl_context *ctx, size_t first, size_t count);
/* "    rank R   [first, end) device" and the JSON array of the rows. */
void mpi_cli_print_rank(const rank_row *row, int rank);
json_t *mpi_cli_ranks_json(const rank_row *rows, int size);

/* --out (path NULL: nothing): rank 0 writes data whole or not at all (mpi_cli_write_atomic); every rank learns
 * whether it was written. Returns 0 or the exit status. */
int mpi_cli_write_out(const char *path, const void *data, size_t bytes);

/* The pieces of a vector distributed by ranks: rank r holds [first_r, first_r + count_r) (values of es bytes).
 * scatter: from all (rank 0's whole vector; ignored elsewhere) into mine; gather: mine into all on rank 0.
 * Returns 0 or the exit status. */
int mpi_cli_scatter(void *mine, const void *all, size_t first, size_t count, size_t es);
int mpi_cli_gather(void *all, const void *mine, size_t first, size_t count, size_t es);
/* Rank 0's exit status (after a step only rank 0 took, e.g. reading the inputs) to every rank. */
int mpi_cli_share_status(int rc);

/* --phases: the library's per-phase wall times (rcl_mpi_phases) of the timed call. mpi_cli_phases_json gathers
 * every rank's on rank 0 (collective) as the JSON object "phases": per phase the slowest rank's seconds (the
 * rank of the largest total), the most of any rank and the mean, the counts, and each rank's; NULL on the other
 * ranks. mpi_cli_phases_print prints it as text (rank 0). */
#define MPI_CLI_OPT_PHASES(target)                                                                                     \
  CLI_FLAG("phases", target, "time the phases on every rank (halo exchange, reductions, kernels): JSON \"phases\"")
#define MPI_CLI_OPT_NO_REFERENCE(target)                                                                               \
  CLI_FLAG("no-reference", target, "skip rank 0's host reference (large runs): the digests are printed, not checked")
json_t *mpi_cli_phases_json(const rcl_mpi_phases *mine);
void mpi_cli_phases_print(const json_t *phases);
/* --phases around the timed call: mpi_cli_phases_on starts collecting into *ph (when want); mpi_cli_phases_off
 * stops and returns mpi_cli_phases_json's object (when want: collective), NULL otherwise. */
void mpi_cli_phases_on(int want, rcl_mpi_phases *ph);
json_t *mpi_cli_phases_off(int want, const rcl_mpi_phases *ph);
/* Rank 0: the result's JSON top with "out" (when written), "phases" (when timed) and, with --no-reference,
 * "reference" and "matches_reference" null, printed. */
void mpi_cli_json_print(json_t *top, const char *out, json_t *phases, int noref);
/* Rank 0: the text form's last line — the verdict against the reference, or that none was checked
 * (--no-reference); why (the solver's message, or "") in parentheses after it. */
void mpi_cli_verdict(int noref, int size, int ok, const char *why);

#endif
