/* The status agreement of the MPI layer (rcl_mpi_agree): every rank learns whether any rank failed and, if so,
 * the status and message of the lowest failing one. Nothing is allocated, so a rank that ran out of memory still
 * takes part, and every rank reaches the same collective calls whatever failed: no rank waits forever. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "mpi/mpi_internal.h"

/* The message travels in a fixed buffer (a longer one is cut). */
enum { AGREE_MSG = 1024 };

int rcl__mpi_check(int rc, const char *what) {
  if (rc == MPI_SUCCESS) return 0;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error %d", rc);
  return rcl__fail(RCL_ERR_IO, "%s failed: %s", what, text);
}

int rcl__mpi_shape(int *size, int *rank, MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return rcl__fail(RCL_ERR_INVALID_ARG, "MPI_COMM_NULL given as the communicator");
  int rc = rcl__mpi_check(MPI_Comm_size(comm, size), "MPI_Comm_size");
  return rc ? rc : rcl__mpi_check(MPI_Comm_rank(comm, rank), "MPI_Comm_rank");
}

int rcl__mpi_owner(const size_t *bounds, int size, size_t x) {
  int lo = 0, hi = size; /* bounds[lo] <= x < bounds[hi] */
  while (hi - lo > 1) {
    int mid = lo + (hi - lo) / 2;
    if (bounds[mid] <= x)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* What the failing rank sends: its status, then its message. */
typedef struct {
  int status;
  char msg[AGREE_MSG];
} agree_msg;

int rcl_mpi_agree(MPI_Comm comm, int status, const char *message) {
  int size, rank, rc = rcl__mpi_shape(&size, &rank, comm);
  if (rc) return rc;
  if (status > 0) {
    status = rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_agree: status %d is not 0 or negative", status);
    message = NULL;
  }
  int mine = status < 0 ? rank : INT_MAX, lowest = INT_MAX;
  rc = rcl__mpi_check(MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce (status agreement)");
  if (rc || lowest == INT_MAX) return rc;
  agree_msg m = {status, ""};
  if (rank == lowest) snprintf(m.msg, sizeof m.msg, "%s", message ? message : rcl_error_last());
  rc = rcl__mpi_check(MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, lowest, comm), "MPI_Bcast (status agreement)");
  if (rc) return rc;
  m.msg[AGREE_MSG - 1] = '\0';
  return rcl__fail(m.status, "rank %d: %s", lowest, m.msg);
}
