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
#include "reprocl/md.h"
#include "reprocl/reduce.h"
#include "reprocl/sparse.h"
#include "reprocl/stencil.h"

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

/* ---- distributed CSR: rows cut by non-zeros, halo exchange of x ------------------------------------------- */
/* A CSR matrix distributed by rows: rank r owns rows [row_first, row_first + row_count) and the same range of
 * x's entries (clipped to ncols; the last rank also owns the columns past nrows of a wide matrix), holds only
 * its rows (uploaded once to its context) and the plan of its halo exchange: which entries of x it receives
 * from which rank, and which of its own it sends (computed once, exchanged point to point per SpMV). */
typedef struct rcl_mpi_matrix rcl_mpi_matrix;
/* From A on root (ignored elsewhere): root cuts the rows by non-zeros (rcl_split's cut: each rank's rows plus
 * non-zeros proportional to its weight, >= 0 and finite; give 1 on every rank for equal shares) and scatters
 * them; no rank but root ever holds more than its own rows. ctx: this rank's context (rcl_mpi_context_create),
 * which must outlive the matrix. Non-zeros and rows at most INT_MAX (MPI's counts). */
RCL_API int rcl_mpi_matrix_scatter(rcl_mpi_matrix **out, MPI_Comm comm, int root, const rcl_csr *A, double weight,
                                   rcl_context *ctx);
/* Read once by root (rcl_matrix_read: Matrix Market, Harwell-Boeing; path ignored elsewhere) and scattered
 * with equal weights. */
RCL_API int rcl_mpi_matrix_read(rcl_mpi_matrix **out, MPI_Comm comm, int root, const char *path, rcl_dtype dtype,
                                rcl_context *ctx);
RCL_API void rcl_mpi_matrix_free(rcl_mpi_matrix *M);
/* This rank's rows and the global row count; its columns (entries of x) and the global column count. */
RCL_API void rcl_mpi_matrix_rows(const rcl_mpi_matrix *M, size_t *first, size_t *count, size_t *total);
RCL_API void rcl_mpi_matrix_cols(const rcl_mpi_matrix *M, size_t *first, size_t *count, size_t *total);
/* y, x: this rank's rows of y and entries of x (rcl_mpi_matrix_rows, _cols). The same bits as rcl_spmv_host
 * of the whole matrix on one device (both contracts). */
RCL_API int rcl_mpi_spmv(void *y, rcl_mpi_matrix *A, const void *alpha, const void *x, const void *beta,
                         const rcl_spmv_options *opts);
/* As rcl_cg (square A; x: this rank's rows of the initial guess in, of the solution out; b: its rows). res
 * (history, iterations, norms) is the same on every rank, and equals rcl_cg's on one device bit for bit, as
 * does the solution: the dots and norms are partial reductions joined by rcl_mpi_partial_allreduce. */
RCL_API int rcl_mpi_cg(void *x, rcl_cg_result *res, rcl_mpi_matrix *A, const void *b, const rcl_cg_options *opts);

/* ---- distributed grids: blocks of rows, halo rows exchanged with the ranks that own them ---------------- */
/* The rows [*first, *first + *count) of a grid of `height` rows that this rank holds: height cut into
 * size equal blocks (rcl_split_partition with equal weights; every inner bound a multiple of granule; ranks
 * past the rows hold none). rcl_mpi_stencil uses granule 1, rcl_mpi_sor granule 2. */
RCL_API int rcl_mpi_grid_rows(size_t *first, size_t *count, MPI_Comm comm, size_t height, size_t granule);
/* As rcl_stencil and rcl_sor over a width x height grid of which in/out, grid and rhs are this rank's rows
 * (rcl_mpi_grid_rows; out may equal in; rhs and residual may be NULL). Each rank steps its block with the
 * family's own kernels; halo rows (also from ranks two or more away where blocks are thin, and across the
 * wrap for periodic grids) are exchanged point to point every few steps; the SOR residual norm is joined
 * from every rank's part. The bits are the one-device call's for any number of ranks; residual on every
 * rank. */
RCL_API int rcl_mpi_stencil(void *out, MPI_Comm comm, rcl_context *ctx, const rcl_stencil_desc *st, rcl_dtype dtype,
                            size_t width, size_t height, size_t iters, const void *in);
RCL_API int rcl_mpi_sor(void *grid, void *residual, MPI_Comm comm, rcl_context *ctx, const rcl_sor_desc *d,
                        rcl_dtype dtype, size_t width, size_t height, size_t sweeps, const void *rhs);
/* ---- where the time goes: per-phase wall times of this rank ------------------------------------------------ */
/* Seconds this rank spent in each phase of rcl_mpi_spmv, rcl_mpi_cg, rcl_mpi_stencil and rcl_mpi_sor, host wall
 * clocks (MPI_Wtime) around the phases, summed over the calls made while collecting. Kernels run asynchronously:
 * while collecting, CG waits for its queue (clFinish) before each reduction's part and before reading the
 * halo rows, so the kernels' time lands in kernels_s rather than in the phase that would wait for them (not
 * collecting, nothing is timed and nothing waits). The bits never depend on it. */
#define RCL_MPI_PHASES_VERSION 1
typedef struct {
  unsigned int version;      /* RCL_MPI_PHASES_VERSION */
  size_t calls;              /* calls timed */
  size_t exchanges;          /* halo exchanges (CG: one per SpMV of A; stencils: one per round of steps) */
  size_t reductions;         /* global reductions (CG's dots and norms, SOR's residual) */
  double total_s;            /* wall time inside the timed calls */
  double halo_read_s;        /* halo exchange: the rows other ranks need, device -> host */
  double halo_mpi_s;         /* halo exchange: the messages (waiting for the neighbours included) */
  double halo_write_s;       /* halo exchange: the halo received, host -> device */
  double reduce_part_s;      /* global reductions: this rank's part (its reduction on the device, read back) */
  double reduce_allreduce_s; /* global reductions: rcl_mpi_partial_allreduce (waiting for the others included) */
  double kernels_s;          /* kernels and queue waits: SpMVs, vector updates, stencil steps, clFinish */
  double setup_s; /* the rest: arguments agreed, vectors and blocks created and uploaded, the result read back */
} rcl_mpi_phases;
#define RCL_MPI_PHASES_INIT                                                                                            \
  { RCL_MPI_PHASES_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }
/* Starts collecting into *p (initialised with RCL_MPI_PHASES_INIT; times are added to it) the phases of the
 * calls above that this thread makes, or stops with p NULL. Not collective (each rank decides; a rank that
 * collects waits for its queue more often, and only its own time changes). RCL_ERR_INVALID_ARG for a wrong
 * version. */
RCL_API int rcl_mpi_phases_collect(rcl_mpi_phases *p);

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
/* This rank's wall-clock seconds in the steps of an rcl_mpi_md_create simulation since its creation (not
 * collective): t[0] the ghost exchange (the rebuild test's agreement and the ghosts' positions between ranks),
 * t[1] the decompositions (the owned atoms' state from the device, migration, ghost lists, the new local
 * simulation), t[2] the rest on the device (integration, forces, the positions sent and received, and the
 * waits for them). The device's kernel times: rcl_md_get_stats. */
RCL_API int rcl_mpi_md_times(double t[3], const rcl_md *md);
/* The decompositions' part of rcl_mpi_md_times (its t[1]) by phase: this rank's wall-clock seconds since the
 * creation (not collective). t[0] the owned atoms' state read from the device (the kernels queued before it
 * waited for); the migration: t[1] the packing of the atoms that change rank, t[2] its messages (counts, the
 * atoms, the total's check and the agreements on every rank's status: the waits for other ranks), t[3] the
 * unpacking into the new owned atoms; t[4] the ghost lists and the ghosts' first positions (packed, exchanged);
 * t[5] the local system filled on the host; t[6] the new local simulation (device buffers, upload, neighbour
 * lists and first forces, waited for; the agreements around it). Their sum is t[1] of rcl_mpi_md_times less the
 * moments between the clock reads. */
#define RCL_MPI_MD_DECOMPOSE_PHASES 7
RCL_API int rcl_mpi_md_decompose_times(double t[RCL_MPI_MD_DECOMPOSE_PHASES], const rcl_md *md);

#ifdef __cplusplus
}
#endif
#endif
