/* Helpers of the reprocl-mpi commands (mpi_cli.h). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpi_cli.h"

void mpi_cli_slice(size_t *first, size_t *count, size_t n, int rank, int size) {
  size_t r = (size_t)rank, k = (size_t)size, base = n / k, extra = n % k;
  *first = r * base + (r < extra ? r : extra);
  *count = base + (r < extra ? 1 : 0);
}

int mpi_cli_write_atomic(const char *path, const void *data, size_t bytes, char *why, size_t why_size) {
  size_t len = strlen(path) + 16;
  char *tmp = malloc(len);
  if (!tmp) return snprintf(why, why_size, "out of memory"), RCL_ERR_OUT_OF_MEMORY;
  snprintf(tmp, len, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp), rc = 0;
  if (fd < 0) {
    snprintf(why, why_size, "cannot create a temporary file beside %s: %s", path, strerror(errno));
    free(tmp);
    return RCL_ERR_IO;
  }
  if (fchmod(fd, 0644) != 0) rc = RCL_ERR_IO; /* mkstemp's 0600 is for the temporary file only */
  const char *p = data;
  size_t left = bytes;
  while (left && !rc) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      rc = RCL_ERR_IO;
    else
      p += w, left -= (size_t)w;
  }
  if (close(fd) != 0) rc = RCL_ERR_IO;
  if (!rc && rename(tmp, path) != 0) rc = RCL_ERR_IO;
  if (rc) {
    snprintf(why, why_size, "cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
  }
  free(tmp);
  return rc;
}

void mpi_cli_test_die(int rank) {
  const char *s = getenv("REPROCL_MPI_TEST_DIE_RANK");
  if (s && *s && atoi(s) == rank) raise(SIGKILL);
}

int mpi_cli_open(rcl_context **ctx, const char *device, const char *map) {
  rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
  o.device = device;
  if (rcl_mpi_context_create(ctx, MPI_COMM_WORLD, map, &o)) return cli_fail("opening the ranks' devices");
  return 0;
}

int mpi_cli_gather_ranks(rank_row **rows, rcl_context *ctx, size_t first, size_t count) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  rank_row mine = {"", first, count};
  const rcl_device_profile *p = rcl_context_profile(ctx);
  snprintf(mine.name, sizeof mine.name, "%s: %s", p->platform_name, p->device_name);
  *rows = rank == 0 ? calloc((size_t)size, sizeof **rows) : NULL;
  int rc = rcl_mpi_agree(MPI_COMM_WORLD, rank == 0 && !*rows ? RCL_ERR_OUT_OF_MEMORY : 0, "out of memory");
  if (rc) return cli_fail("gathering the ranks' devices");
  MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, *rows, (int)sizeof mine, MPI_BYTE, 0, MPI_COMM_WORLD);
  return 0;
}

void mpi_cli_print_rank(const rank_row *row, int rank) {
  printf("    rank %-3d [%llu, %llu) %s\n", rank, (unsigned long long)row->first,
         (unsigned long long)(row->first + row->count), row->name);
}

json_t *mpi_cli_ranks_json(const rank_row *rows, int size) {
  json_t *a = json_array();
  for (int r = 0; r < size; r++)
    json_array_append_new(a, json_pack("{s:i,s:s,s:I,s:I}", "rank", r, "device", rows[r].name, "first",
                                       (json_int_t)rows[r].first, "n", (json_int_t)rows[r].count));
  return a;
}

int mpi_cli_write_out(const char *path, const void *data, size_t bytes) {
  char why[512] = "";
  int rank, rc = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (path && rank == 0) rc = mpi_cli_write_atomic(path, data, bytes, why, sizeof why);
  if (rcl_mpi_agree(MPI_COMM_WORLD, rc, why)) return cli_fail("--out");
  return 0;
}

/* Rank 0's counts and displacements of every rank's piece in elements (NULL elsewhere), agreed: pieces travel
 * as elements of es bytes (an MPI type of its own), so a vector may hold up to INT_MAX elements — a 32768^2 grid
 * of f64 is 8 GiB. */
static int piece_layout(int **counts, int **displs, size_t first, size_t count) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  uint64_t mine[2] = {first, count}, *all = rank == 0 ? calloc(2 * (size_t)size, sizeof *all) : NULL;
  *counts = rank == 0 ? calloc((size_t)size, sizeof **counts) : NULL;
  *displs = rank == 0 ? calloc((size_t)size, sizeof **displs) : NULL;
  const char *why = rank == 0 && (!all || !*counts || !*displs) ? "out of memory" : NULL;
  if (!why && first + count > INT_MAX) why = "a vector of more elements than MPI's count limit (INT_MAX)";
  int rc = rcl_mpi_agree(MPI_COMM_WORLD, why ? RCL_ERR_OVERFLOW : 0, why);
  if (!rc) MPI_Gather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  for (int r = 0; !rc && rank == 0 && r < size; r++) {
    (*counts)[r] = (int)all[2 * r + 1];
    (*displs)[r] = (int)all[2 * r];
  }
  free(all);
  return rc ? cli_fail("laying out a vector over the ranks") : 0;
}

/* Rank 0's vector all [first + count of every rank] scattered (to_ranks) or gathered, elements of es bytes. */
static int pieces(int to_ranks, void *all, void *mine, size_t first, size_t count, size_t es) {
  int *counts = NULL, *displs = NULL, rc = piece_layout(&counts, &displs, first, count);
  MPI_Datatype el;
  if (!rc) {
    MPI_Type_contiguous((int)es, MPI_BYTE, &el);
    MPI_Type_commit(&el);
    if (to_ranks)
      MPI_Scatterv(all, counts, displs, el, mine, (int)count, el, 0, MPI_COMM_WORLD);
    else
      MPI_Gatherv(mine, (int)count, el, all, counts, displs, el, 0, MPI_COMM_WORLD);
    MPI_Type_free(&el);
  }
  free(counts);
  free(displs);
  return rc;
}

int mpi_cli_scatter(void *mine, const void *all, size_t first, size_t count, size_t es) {
  return pieces(1, (void *)all, mine, first, count, es);
}

int mpi_cli_gather(void *all, const void *mine, size_t first, size_t count, size_t es) {
  return pieces(0, all, (void *)mine, first, count, es);
}

int mpi_cli_share_status(int rc) {
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return rc;
}
