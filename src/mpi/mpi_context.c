/* rcl_mpi_context_create: which device each rank drives (the device map), and the context on it, agreed over
 * the communicator so that a rank that cannot open its device fails every rank, naming itself. */
#include <stdio.h>
#include <string.h>

#include "mpi/mpi_internal.h"

/* This rank's index among the ranks of its node (MPI_COMM_TYPE_SHARED). */
static int local_rank(int *out, MPI_Comm comm) {
  MPI_Comm node;
  int rc = rcl__mpi_check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
                          "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
  if (rc) return rc;
  rc = rcl__mpi_check(MPI_Comm_rank(node, out), "MPI_Comm_rank (node)");
  MPI_Comm_free(&node);
  return rc;
}

/* The index of the spec the map gives (0 .. count-1) and where the spec list starts: "local:" counts by the
 * local rank, "rank:" by the rank. */
static int map_kind(const char **list, int *by_local, const char *map) {
  if (!strncmp(map, "local:", 6))
    *by_local = 1, *list = map + 6;
  else if (!strncmp(map, "rank:", 5))
    *by_local = 0, *list = map + 5;
  else
    return rcl__fail(RCL_ERR_INVALID_ARG,
                     "device map \"%s\": expected \"local:SPEC,SPEC,...\" or \"rank:SPEC,SPEC,...\"", map);
  if (!**list) return rcl__fail(RCL_ERR_INVALID_ARG, "device map \"%s\" lists no device", map);
  return 0;
}

/* *spec (allocated) = the (index mod count)-th comma-separated item of list. */
static int pick_spec(char **spec, const char *map, const char *list, int index) {
  size_t count = 1;
  for (const char *p = list; *p; p++) count += *p == ',';
  size_t want = (size_t)index % count;
  const char *s = list;
  for (size_t i = 0; i < want; i++) s = strchr(s, ',') + 1;
  size_t len = strcspn(s, ",");
  if (len == 0) return rcl__fail(RCL_ERR_INVALID_ARG, "device map \"%s\": item %zu is empty", map, want + 1);
  if (!(*spec = rcl__malloc(len + 1))) return RCL_ERR_OUT_OF_MEMORY;
  memcpy(*spec, s, len);
  (*spec)[len] = '\0';
  return 0;
}

/* This rank's context by the map; index: the rank or, for "local:", the local rank. */
static int open_mapped(rcl_context **out, int index, const char *map, const rcl_context_options *opts) {
  rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
  if (opts) o = *opts;
  if (!map || !*map) return rcl_context_create(out, &o);
  const char *list = NULL;
  int by_local = 0;
  char *spec = NULL;
  int rc = map_kind(&list, &by_local, map);
  if (!rc) rc = pick_spec(&spec, map, list, index);
  if (!rc) {
    o.device = spec;
    rc = rcl_context_create(out, &o);
  }
  rcl__free(spec);
  return rc;
}

int rcl_mpi_context_create(rcl_context **out, MPI_Comm comm, const char *device_map, const rcl_context_options *opts) {
  int size, rank, rc = rcl__mpi_shape(&size, &rank, comm);
  if (rc) return rc;
  if (out) *out = NULL;
  /* The node split is collective: every rank given a "local:" map makes it first, whatever else fails. */
  int index = rank;
  if (device_map && !strncmp(device_map, "local:", 6)) rc = local_rank(&index, comm);
  if (!rc && !out) rc = rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_context_create: NULL output");
  if (!rc && opts && opts->version != RCL_CONTEXT_OPTIONS_VERSION)
    rc = rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_context_create: options version %u (expected %u)", opts->version,
                   (unsigned)RCL_CONTEXT_OPTIONS_VERSION);
  rcl_context *ctx = NULL;
  if (!rc) rc = open_mapped(&ctx, index, device_map, opts);
  rc = rcl_mpi_agree(comm, rc, NULL);
  if (rc) {
    rcl_context_free(ctx);
    return rc;
  }
  *out = ctx;
  return 0;
}
