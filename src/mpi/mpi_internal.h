/* The MPI layer's private pieces (library reprocl_mpi, src/mpi/): the agreement every collective entry point
 * uses, and MPI's failures as library statuses. Not installed. */
#ifndef REPROCL_MPI_INTERNAL_H
#define REPROCL_MPI_INTERNAL_H
#include "core/alloc.h"
#include "core/error.h"
#include "reprocl/mpi.h"

/* rc of an MPI call named what: 0 for MPI_SUCCESS, else RCL_ERR_IO with MPI's error string (only reachable
 * where the communicator's error handler returns: MPI's default aborts the job). */
RCL_INTERNAL int rcl__mpi_check(int rc, const char *what);
/* rcl_mpi_partial_allreduce where this rank's part could not be made: status is its negative rcl_status and
 * rcl_error_last() its reason (mine may then be NULL), which every rank returns as rcl_mpi_agree does. */
RCL_INTERNAL int rcl__mpi_partial_allreduce_status(void *out, MPI_Comm comm, const rcl_partial *mine, int status);
/* The number of ranks up to which rcl_mpi_partial_allreduce gathers the flat parts (above: MPI_Allreduce with a
 * user operation): set to ranks (at most 16; 0: never gather) and the old value returned; ranks < 0 only reads
 * it. For tests of both paths; every rank must set the same value. */
RCL_SIBLING int rcl__mpi_flat_gather_max(int ranks);
/* This rank's local simulations of an rcl_mpi_md so far (md_dom_part's counters): counts[0] reloaded in place,
 * counts[1] reloads refused (they did not fit), counts[2] created anew. For tests. */
RCL_SIBLING int rcl__mpi_md_local_counts(size_t counts[3], const rcl_md *md);
/* n (1 to RCL_MPI_MANY_MAX) such reductions in one call: out[i] = the join of every rank's mine[i], each the
 * bits rcl_mpi_partial_allreduce gives it alone; the flat parts travel in one exchange, a part that does not
 * join that way alone by the path above (the same parts on every rank). */
enum { RCL_MPI_MANY_MAX = 4 };
RCL_INTERNAL int rcl__mpi_partial_allreduce_many(void *const *out, MPI_Comm comm, const rcl_partial *const *mine, int n,
                                                 int status);
/* The size of the communicator and this rank in it. */
RCL_INTERNAL int rcl__mpi_shape(int *size, int *rank, MPI_Comm comm);

/* The piece holding index x of a cut into size pieces (bounds[0..size], non-decreasing): the r with
 * bounds[r] <= x < bounds[r + 1] (a piece that is not empty). */
RCL_INTERNAL int rcl__mpi_owner(const size_t *bounds, int size, size_t x);

#endif
