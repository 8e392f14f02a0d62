/* reprocl: one problem over several OpenCL devices of one process (GPUs, CPUs, sub-devices, any mix of
 * vendors), bit-identical to one device and to the host reference for every split.
 *
 * A split is a list of contexts with weights. Each call partitions its index space (elements, rows, grid
 * rows) by the weights, runs each device's share through the same kernels as a one-device call, exchanges
 * what the devices need from each other (the vector of a SpMV, the halo rows of a stencil) and combines the
 * partial results exactly (rcl_partial_* in reduce.h). The weights decide only who computes what: the
 * results never depend on them (docs/contracts.md, "Decomposition independence"; user guide
 * docs/scaleout.md). */
#ifndef REPROCL_SPLIT_H
#define REPROCL_SPLIT_H
#include "reprocl/common.h"
#include "reprocl/context.h"
#include "reprocl/md.h"
#include "reprocl/profile.h"
#include "reprocl/reduce.h"
#include "reprocl/sparse.h"
#include "reprocl/stencil.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rcl_split rcl_split;

#define RCL_SPLIT_OPTIONS_VERSION 1
typedef struct {
  unsigned int version;
  /* Devices, comma-separated, each a device spec of rcl_device_find ("pocl:", "1", ":h100"), optionally
   * followed by "/N": N equal sub-devices of that device (clCreateSubDevices, CL_DEVICE_PARTITION_EQUALLY);
   * "all" is every device. A device may not appear twice. */
  const char *devices;
  rcl_mode mode;          /* of every context: RCL_MODE_REPRODUCIBLE (default) or RCL_MODE_NATIVE */
  rcl_tuning_mode tuning; /* of every context; also whether weights are measured (see weights) */
  const char *cache_dir;  /* as rcl_context_options.cache_dir; measured weights are cached there too */
  /* One weight >= 0 per device (after sub-device expansion), at least one > 0; NULL: measured per family
   * and dtype on first use and cached on disk (equal weights when tuning is off). */
  const double *weights;
  size_t nweights;
  /* A device that cannot run a family and dtype bit-exactly (its self-test verdict or profile says
   * unsupported) is left out of that family's calls (0, default; rcl_split_share reports it) or makes
   * them fail with RCL_ERR_UNSUPPORTED naming it (1). Never does a device run with other bits. */
  int strict;
} rcl_split_options;
#define RCL_SPLIT_OPTIONS_INIT                                                                                         \
  { RCL_SPLIT_OPTIONS_VERSION, NULL, RCL_MODE_REPRODUCIBLE, RCL_TUNING_ENV, NULL, NULL, 0, 0 }

RCL_API int rcl_split_create(rcl_split **out, const rcl_split_options *opts);
/* A split over the caller's contexts (borrowed: they must outlive the split), with opts' weights and strict
 * (opts->devices must be NULL; NULL opts: defaults). */
RCL_API int rcl_split_wrap(rcl_split **out, rcl_context *const *contexts, size_t count, const rcl_split_options *opts);
RCL_API void rcl_split_free(rcl_split *s);
RCL_API size_t rcl_split_count(const rcl_split *s);
RCL_API rcl_context *rcl_split_context(const rcl_split *s, size_t i);
/* Replaces the weights (count values, as in the options); NULL: back to measured weights. */
RCL_API int rcl_split_set_weights(rcl_split *s, const double *weights, size_t count);
/* The weights a call of family and dtype uses (count values; 0 for a device left out), measuring them
 * first when they are neither given nor cached. */
RCL_API int rcl_split_weights(double *weights, rcl_split *s, rcl_family family, rcl_dtype dtype);
/* The operations whose weights rcl_split_tune_op tunes, each on its own split call. */
typedef enum {
  RCL_SPLIT_OP_REDUCE = 0,  /* rcl_split_reduce (a sum; dot, nrm2, axpy and scal use its weights) */
  RCL_SPLIT_OP_SPMV = 1,    /* one rcl_split_spmv, x and y on the host */
  RCL_SPLIT_OP_CG = 2,      /* rcl_split_cg (a few iterations) */
  RCL_SPLIT_OP_STENCIL = 3, /* rcl_split_stencil (rcl_split_sor uses its weights) */
  RCL_SPLIT_OP_COUNT = 4
} rcl_split_op;

/* Why rcl_split_tune_op kept what it kept (the times are the least of repeated runs). */
typedef struct {
  int split_kept; /* 1: weights over several devices; 0: one device alone (device `alone`) */
  size_t alone;   /* the fastest device alone */
  double alone_s; /* its time; 0 where nothing was timed (tuning off, or an entry without times) */
  double split_s; /* the fastest split candidate's time; 0 where none ran (one usable device) */
  double margin;  /* the fraction by which a split had to beat alone_s: the repeats' spread, at least 5% */
  int cached;     /* 1: read from the cache, 0: timed now */
} rcl_split_tune_info;

/* Tunes the weights of operation op and dtype for problems of about `size` (the index space the split cuts:
 * elements, matrix rows, grid rows): times op's own split call on deterministic data of that size (at most
 * 2^27 elements, a poisson3d matrix of at most 2^22 rows, 8192 grid rows) with each usable device alone
 * (which runs exactly that device's one-device call), the measured weights, weights proportional to the
 * devices' times alone, and a blend of the best of those with the fastest device alone; each timed after one
 * untimed run as the least of three. A split is kept only where it beats the fastest device alone by more
 * than the margin (the larger relative spread of the two candidates' repeats, at least 5%); otherwise that
 * device alone (weight 1, the others 0). Writes count values into weights (summing to 1; 0 for a device
 * left out) and, unless NULL, why into *info. Cached on disk next to the measured weights (the candidates'
 * times too), per set of devices, operation, dtype and size bucket (2^b to 2^(b+1) - 1); a cached choice is
 * returned without timing unless tuning is force; with tuning off nothing is timed or written (the
 * measured, i.e. equal, weights). A call whose weights are not given uses the cached tuned weights of its
 * size bucket: the reduce entry for reductions, axpy and scal, the stencil entry for stencils and SOR, and
 * for a split matrix (cut once, for SpMV and CG alike) the CG entry, else the SpMV entry; to cut a matrix
 * for SpMV alone, give its tuned weights (rcl_split_set_weights) before rcl_split_matrix_create. Weights
 * never change a bit. */
RCL_API int rcl_split_tune_op(double *weights, rcl_split_tune_info *info, rcl_split *s, rcl_split_op op,
                              rcl_dtype dtype, size_t size);
/* rcl_split_tune_op for a family: RCL_FAMILY_REDUCE, _STENCIL, or _SPMV (tuned as RCL_SPLIT_OP_CG, the split
 * matrix's main use). */
RCL_API int rcl_split_tune(double *weights, rcl_split *s, rcl_family family, rcl_dtype dtype, size_t size);
/* How the last call on this split cut its index space: device i computed [*first, *first + *count) (0, 0
 * when left out); *note says why a device was left out (NULL otherwise). */
RCL_API int rcl_split_share(size_t *first, size_t *count, const char **note, const rcl_split *s, size_t i);
/* bounds[0..count] with bounds[0] = 0 and bounds[count] = n: device i gets [bounds[i], bounds[i+1]),
 * proportional to weights, every inner bound a multiple of granule (>= 1). Deterministic. */
RCL_API int rcl_split_partition(size_t *bounds, const double *weights, size_t count, size_t n, size_t granule);

/* ---- the families over a split (host arrays; each blocks until done) ------------------------------- */
/* As rcl_reduce (op, mode, NaN, -0: the same bits). */
RCL_API int rcl_split_reduce(void *out, rcl_split *s, rcl_reduce_op op, rcl_dtype dtype, size_t n, const void *x,
                             const void *y, const rcl_reduce_options *opts);
RCL_API int rcl_split_axpy(void *y, rcl_split *s, rcl_dtype dtype, size_t n, const void *alpha, const void *x);
RCL_API int rcl_split_scal(void *x, rcl_split *s, rcl_dtype dtype, size_t n, const void *alpha);

/* A CSR matrix cut by rows over a split's devices (rows balanced by non-zeros and weights), uploaded once. */
typedef struct rcl_split_matrix rcl_split_matrix;
RCL_API int rcl_split_matrix_create(rcl_split_matrix **out, rcl_split *s, const rcl_csr *A);
RCL_API void rcl_split_matrix_free(rcl_split_matrix *M);
/* As rcl_spmv_host and rcl_cg: the same bits, residual history and solution as one device. */
RCL_API int rcl_split_spmv(void *y, rcl_split_matrix *A, const void *alpha, const void *x, const void *beta,
                           const rcl_spmv_options *opts);
RCL_API int rcl_split_cg(void *x, rcl_cg_result *res, rcl_split_matrix *A, const void *b, const rcl_cg_options *opts);

/* As rcl_stencil and rcl_sor (out may equal in; SOR updates grid in place, rhs and residual may be NULL):
 * the grid cut into blocks of rows by the weights (SOR: blocks of an even number of rows, so the red-black
 * colours stay the grid's), each device computing its block plus halo rows with the family's kernels, the
 * halo rows exchanged through the host every few iterations (a halo that many iterations deep; the residual
 * norm from every block's partial nrm2). The bits are the one-device call's for every split. */
RCL_API int rcl_split_stencil(void *out, rcl_split *s, const rcl_stencil_desc *st, rcl_dtype dtype, size_t width,
                              size_t height, size_t iters, const void *in);
RCL_API int rcl_split_sor(void *grid, void *residual, rcl_split *s, const rcl_sor_desc *d, rcl_dtype dtype,
                          size_t width, size_t height, size_t sweeps, const void *rhs);

/* ---- molecular dynamics -------------------------------------------------------------------------------
 * As rcl_md_create, over the split's devices: the box cut into slabs along its longest axis by the weights,
 * each device holding its own atoms and, as ghosts with their raw coordinates, the atoms within cutoff +
 * skin of its slab; atoms migrate when neighbour lists are rebuilt (any atom moved more than skin / 2).
 * The result is an rcl_md handle: run and read it with rcl_md_run, rcl_md_thermo_get, rcl_md_get_state,
 * rcl_md_get_forces, rcl_md_get_stats, rcl_md_step, and free it with rcl_md_free (the split must outlive
 * it). Trajectory, fixed-point forces and thermo are the bits of rcl_md on one device and of the host
 * reference, for every path, weights and number of devices (docs/contracts.md §10.4). Devices that cannot
 * run MD in dtype, or the symmetric path without 64-bit integer atomics, are left out (strict: refused);
 * native-mode contexts are refused. rcl_split_share reports the atoms each device owned at the last
 * rebuild; rcl_md_get_neighbors is refused (the lists are per device). Velocity-Verlet integration runs on
 * the host, per atom, with the host reference's functions; forces, energies and virials on the devices. */
RCL_API int rcl_split_md_create(rcl_md **out, rcl_split *s, rcl_dtype dtype, const rcl_md_system *sys,
                                const rcl_md_lj *lj, const rcl_md_options *opts);

#ifdef __cplusplus
}
#endif
#endif
