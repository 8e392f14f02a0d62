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

void mpi_cli_json_print(json_t *top, const char *out, json_t *phases, int noref) {
  if (out) json_object_set_new(top, "out", json_string(out));
  if (phases) json_object_set(top, "phases", phases);
  if (noref) {
    json_object_set_new(top, "reference", json_null());
    json_object_set_new(top, "matches_reference", json_null());
  }
  cli_json_print(top);
}

void mpi_cli_verdict(int noref, int size, int ok, const char *why) {
  const char *open = *why ? " (" : "", *close = *why ? ")" : "";
  if (noref)
    printf("RAN: %d rank(s) ran; no host reference (--no-reference)%s%s%s\n", size, open, why, close);
  else
    printf("%s: %d rank(s) ran, %s the reference%s%s%s\n", ok ? "AGREE" : "DISAGREE", size,
           ok ? "equal to" : "DIFFERENT from", open, why, close);
}

int mpi_cli_share_status(int rc) {
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return rc;
}

/* ---- --phases ---------------------------------------------------------------------------------------------- */

/* The phases in the order they travel and print: JSON key, text label. */
static const char *const phase_key[] = {"total_s",       "halo_read_s",        "halo_mpi_s", "halo_write_s",
                                        "reduce_part_s", "reduce_allreduce_s", "kernels_s",  "setup_s"};
static const char *const phase_label[] = {"total",        "halo d2h",  "halo mpi", "halo h2d",
                                          "reduce parts", "allreduce", "kernels",  "setup"};
enum { NPHASE = 8, NWORD = NPHASE + 3 };

static void phase_words(double *w, const rcl_mpi_phases *p) {
  const double t[NPHASE] = {p->total_s,       p->halo_read_s,        p->halo_mpi_s, p->halo_write_s,
                            p->reduce_part_s, p->reduce_allreduce_s, p->kernels_s,  p->setup_s};
  memcpy(w, t, sizeof t);
  w[NPHASE] = (double)p->calls, w[NPHASE + 1] = (double)p->exchanges, w[NPHASE + 2] = (double)p->reductions;
}

/* Rank 0: the object of the gathered words (size ranks of NWORD). */
static json_t *phases_object(const double *all, int size) {
  int slow = 0;
  for (int r = 1; r < size; r++)
    if (all[r * NWORD] > all[slow * NWORD]) slow = r;
  json_t *o = json_pack("{s:i,s:I,s:I,s:I}", "slowest_rank", slow, "calls", (json_int_t)all[NPHASE], "exchanges",
                        (json_int_t)all[NPHASE + 1], "reductions", (json_int_t)all[NPHASE + 2]);
  json_t *ranks = json_array();
  for (int r = 0; r < size; r++) {
    json_t *one = json_object();
    for (int k = 0; k < NPHASE; k++) json_object_set_new(one, phase_key[k], json_real(all[r * NWORD + k]));
    json_array_append_new(ranks, one);
  }
  for (int k = 0; k < NPHASE; k++) {
    double mx = 0, sum = 0;
    for (int r = 0; r < size; r++) mx = all[r * NWORD + k] > mx ? all[r * NWORD + k] : mx, sum += all[r * NWORD + k];
    json_object_set_new(o, phase_key[k],
                        json_pack("{s:f,s:f,s:f}", "slowest", all[slow * NWORD + k], "max", mx, "mean", sum / size));
  }
  json_object_set_new(o, "ranks", ranks);
  return o;
}

json_t *mpi_cli_phases_json(const rcl_mpi_phases *mine) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double w[NWORD], *all = rank == 0 ? calloc((size_t)size * NWORD, sizeof *all) : NULL;
  phase_words(w, mine);
  MPI_Gather(w, NWORD, MPI_DOUBLE, all, NWORD, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  json_t *o = all ? phases_object(all, size) : NULL;
  free(all);
  return o;
}

void mpi_cli_phases_on(int want, rcl_mpi_phases *ph) {
  if (!want) return;
  *ph = (rcl_mpi_phases)RCL_MPI_PHASES_INIT;
  rcl_mpi_phases_collect(ph);
}

json_t *mpi_cli_phases_off(int want, const rcl_mpi_phases *ph) {
  if (!want) return NULL;
  rcl_mpi_phases_collect(NULL);
  return mpi_cli_phases_json(ph);
}

void mpi_cli_phases_print(const json_t *ph) {
  if (!ph) return;
  printf("  phases (seconds; slowest rank %d / mean of the ranks; %d call(s), %d exchange(s), %d reduction(s))\n   ",
         (int)json_integer_value(json_object_get(ph, "slowest_rank")),
         (int)json_integer_value(json_object_get(ph, "calls")),
         (int)json_integer_value(json_object_get(ph, "exchanges")),
         (int)json_integer_value(json_object_get(ph, "reductions")));
  for (int k = 0; k < NPHASE; k++) {
    const json_t *p = json_object_get(ph, phase_key[k]);
    printf(" %s %.4f/%.4f%s", phase_label[k], json_real_value(json_object_get(p, "slowest")),
           json_real_value(json_object_get(p, "mean")),
           k == 3           ? "\n   "
           : k < NPHASE - 1 ? ","
                            : "\n");
  }
}
