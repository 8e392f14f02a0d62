/* reprocl over MPI (library reprocl_mpi, built when CMake finds MPI): one problem over many processes, each
 * driving its own OpenCL device, with the same bits as one device for any number of ranks.
 *
 * Every function is collective over comm: all ranks call it with matching arguments, and all return the
 * same status. A failure on any rank (a bad input, a device that cannot be opened or cannot run the dtype)
 * makes every rank return an error whose message names the rank and its reason; no rank is left waiting.
 * Distributed data are in rank order: rank r holds the r-th piece (elements, rows, grid rows). User guide:
 * docs/scaleout.md. */
#ifndef REPROCL_MPI_H
#define REPROCL_MPI_H
#include <mpi.h>

#include "reprocl/common.h"
#include "reprocl/context.h"
#include "reprocl/reduce.h"
#include "reprocl/sparse.h"
#include "reprocl/stencil.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* A CSR matrix distributed by rows: rank r owns rows [row_first, row_first + row_count), cut by non-zeros,
 * and keeps the columns it needs for the halo exchange of x. */
typedef struct rcl_mpi_matrix rcl_mpi_matrix;
/* From a matrix on root (ignored elsewhere): the rows are cut and scattered; no rank but root holds more
 * than its own rows. */
RCL_API int rcl_mpi_matrix_scatter(rcl_mpi_matrix **out, MPI_Comm comm, int root, const rcl_csr *A, rcl_context *ctx);
/* Read once by root (rcl_matrix_read: Matrix Market, Harwell-Boeing) and scattered. */
RCL_API int rcl_mpi_matrix_read(rcl_mpi_matrix **out, MPI_Comm comm, int root, const char *path, rcl_dtype dtype,
                                rcl_context *ctx);
RCL_API void rcl_mpi_matrix_free(rcl_mpi_matrix *M);
RCL_API void rcl_mpi_matrix_rows(const rcl_mpi_matrix *M, size_t *first, size_t *count, size_t *total);
/* y, x, b, x0: this rank's rows of the global vectors. Same bits as rcl_spmv_host / rcl_cg on one device. */
RCL_API int rcl_mpi_spmv(void *y, rcl_mpi_matrix *A, const void *alpha, const void *x, const void *beta,
                         const rcl_spmv_options *opts);
RCL_API int rcl_mpi_cg(void *x, rcl_cg_result *res, rcl_mpi_matrix *A, const void *b, const rcl_cg_options *opts);

/* Grids distributed by blocks of rows: rank r holds rows [*first, *first + *count) of a width x height grid
 * (rcl_mpi_grid_rows gives the cut every rank uses). in/out, grid and rhs are this rank's rows. */
RCL_API int rcl_mpi_grid_rows(size_t *first, size_t *count, MPI_Comm comm, size_t height, size_t granule);
RCL_API int rcl_mpi_stencil(void *out, MPI_Comm comm, rcl_context *ctx, const rcl_stencil_desc *st, rcl_dtype dtype,
                            size_t width, size_t height, size_t iters, const void *in);
RCL_API int rcl_mpi_sor(void *grid, void *residual, MPI_Comm comm, rcl_context *ctx, const rcl_sor_desc *d,
                        rcl_dtype dtype, size_t width, size_t height, size_t sweeps, const void *rhs);

#ifdef __cplusplus
}
#endif
#endif
