/* reprocl over MPI (library reprocl_mpi, built when CMake finds MPI): one problem over many processes, each
 * driving its own OpenCL device, with the same bits as one device for any number of ranks.
 *
 * Every function is collective over comm: all ranks call it with matching arguments, and all return the
 * same status. A failure on any rank (a bad input, a device that cannot be opened or cannot run the dtype)
 * makes every rank return an error whose message names the rank and its reason; no rank is left waiting.
 * Distributed data are in rank order: rank r holds the r-th piece (elements, rows, grid rows). User guide:
 * docs/scaleout.md. Distributed CSR, CG and grids are to come (issue 17). */
#ifndef REPROCL_MPI_H
#define REPROCL_MPI_H
#include <mpi.h>

#include "reprocl/common.h"
#include "reprocl/context.h"
#include "reprocl/md.h"
#include "reprocl/reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The agreement every function here ends its collective steps with, for an application's own steps too:
 * status is this rank's (0 or a negative rcl_status), message its reason (NULL: rcl_error_last()). Returns 0
 * on every rank when every rank passed 0; otherwise, on every rank, the status of the lowest failing rank
 * with the message "rank R: <its reason>". Allocates nothing (one MPI_Allreduce; a failure adds one
 * MPI_Bcast), so a rank out of memory still takes part. A failing MPI call (under MPI_ERRORS_RETURN, never
 * under MPI's default handler, which ends the job) gives RCL_ERR_IO naming it. */
RCL_API int rcl_mpi_agree(MPI_Comm comm, int status, const char *message);

/* A context for this rank. device_map picks the device from the ranks of this node (MPI's shared-memory
 * split gives the local rank r of k): NULL or "" takes opts->device for every rank; "local:SPEC,SPEC,..."
 * gives local rank r the (r mod count)-th spec; "rank:SPEC,SPEC,..." gives rank r the (r mod count)-th
 * spec of the whole communicator. The specs are those of rcl_device_find. */
RCL_API int rcl_mpi_context_create(rcl_context **out, MPI_Comm comm, const char *device_map,
                                   const rcl_context_options *opts);

/* The reproducible allreduce: every rank gives its part of one reduction (the slices of the ranks in rank
 * order cover [0, total)), every rank receives the result: the bits of rcl_reduce over the whole vector. */
RCL_API int rcl_mpi_partial_allreduce(void *out, MPI_Comm comm, const rcl_partial *mine);
/* op over the global vector that is the concatenation of every rank's n_local elements, in rank order
 * (n_local may be 0 on any rank); *out on every rank. */
RCL_API int rcl_mpi_reduce(void *out, MPI_Comm comm, rcl_context *ctx, rcl_reduce_op op, rcl_dtype dtype,
                           size_t n_local, const void *x, const void *y, const rcl_reduce_options *opts);

/* Molecular dynamics over the ranks (contracts §10.4): the box cut into one slab per rank along its longest
 * axis (equal lengths; a rank whose slab holds no atom idles), each rank holding only its owned atoms and their
 * ghosts (atoms of other slabs within cutoff + skin, from one or several ranks), running rcl_md's kernels on its
 * own device; the bits of rcl_md on one device and of the host reference for any number of ranks and mix of
 * devices. sys and lj are read on root only (NULL elsewhere; root's are scattered); dtype, opts and root match.
 * The handle is an ordinary rcl_md whose rcl_md_run, rcl_md_thermo_get and rcl_md_free are collective (every
 * rank calls them; thermo values and statuses identical on every rank); rcl_md_get_state and rcl_md_get_forces
 * refuse (the state is distributed): use rcl_mpi_md_gather_state. The symmetric path needs 64-bit integer
 * atomics on every rank's device (else every rank is refused, naming the rank). */
RCL_API int rcl_mpi_md_create(rcl_md **out, MPI_Comm comm, int root, rcl_context *ctx, rcl_dtype dtype,
                              const rcl_md_system *sys, const rcl_md_lj *lj, const rcl_md_options *opts);
/* The whole state on root in system order (collective): positions and velocities ([3 natoms] of the dtype) and
 * fixed-point forces ([3 natoms]); any may be NULL, and every one is ignored on the other ranks. */
RCL_API int rcl_mpi_md_gather_state(void *pos, void *vel, int64_t *forces, rcl_md *md, int root);

#ifdef __cplusplus
}
#endif
#endif
