/* reprocl: deterministic reductions (sum, dot, nrm2) and vector updates (axpy, scal).
 * The numerical contracts are in docs/contracts.md ("reduce.ordered", "reduce.exact", "blas1"). */
#ifndef REPROCL_REDUCE_H
#define REPROCL_REDUCE_H
#include "reprocl/common.h"
#include "reprocl/context.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  /* A fixed summation tree defined by the index space alone: lanes of 64 interleaved elements summed
   * left to right in blocks of 2048, then a pairwise tree. Same bits on every device and launch size. */
  RCL_REDUCE_ORDERED = 0,
  /* The correctly rounded (to nearest, ties to even) value of the exact sum, via a fixed-point
   * superaccumulator in integer arithmetic. Equals MPFR's correctly rounded sum. */
  RCL_REDUCE_EXACT = 1
} rcl_reduce_mode;
RCL_API const char *rcl_reduce_mode_name(rcl_reduce_mode m); /* "ordered", "exact" */
RCL_API int rcl_reduce_mode_parse(rcl_reduce_mode *out, const char *name);

typedef enum { RCL_OP_SUM = 0, RCL_OP_DOT = 1, RCL_OP_NRM2 = 2 } rcl_reduce_op;
RCL_API const char *rcl_reduce_op_name(rcl_reduce_op op); /* "sum", "dot", "nrm2" */
RCL_API int rcl_reduce_op_parse(rcl_reduce_op *out, const char *name);

/* How the reduction is launched. Every variant computes the same contract, bit for bit. */
typedef enum {
  RCL_REDUCE_VARIANT_DEFAULT = 0, /* tuned, or the platform default (task on FPGAs, ndrange elsewhere) */
  RCL_REDUCE_VARIANT_NDRANGE = 1, /* work-groups of local_size work-items, a grid of num_groups */
  /* One work-item with plain loops (the shape FPGA compilers pipeline): ordered mode keeps 64 lane
   * accumulators and folds the leaves into a binary counter; exact mode one private superaccumulator.
   * local_size and num_groups are ignored. */
  RCL_REDUCE_VARIANT_TASK = 2
} rcl_reduce_variant;
RCL_API const char *rcl_reduce_variant_name(rcl_reduce_variant v); /* "default", "ndrange", "task" */
RCL_API int rcl_reduce_variant_parse(rcl_reduce_variant *out, const char *name);

/* The NDRange variant is one kernel launch per call: its last work-group to finish combines the groups'
 * results, through a small control buffer that the launch leaves as it found it. On the context's own
 * queue (when in-order) the context keeps that buffer; a call on another queue creates a fresh zeroed
 * one (a few microseconds more per call). */
/* Launch configuration. Zeros mean "tuned or built-in default" (see tune.h: kernels
 * "reduce.<op>.<mode>"); any valid value gives the same bits. Version 1 (without variant) is accepted. */
#define RCL_REDUCE_OPTIONS_VERSION 2
typedef struct {
  unsigned int version;
  rcl_reduce_mode mode;
  size_t local_size; /* work-group size; a power of two, at most the device's limit */
  size_t num_groups; /* work-groups of the one launch (ordered: at most this many, each an aligned chunk of
                      * blocks, and at most 1024; exact: grid-stride); 0: enough to fill the device */
  rcl_reduce_variant variant;
} rcl_reduce_options;
#define RCL_REDUCE_OPTIONS_INIT                                                                                        \
  { RCL_REDUCE_OPTIONS_VERSION, RCL_REDUCE_ORDERED, 0, 0, RCL_REDUCE_VARIANT_DEFAULT }

/* result[result_offset] = op(x[x_offset .. x_offset+n-1], y[...]) on the device (y is ignored for SUM
 * and NRM2 and may be NULL). Offsets count elements. n = 0 gives +0. NaN results are the canonical quiet
 * NaN (0x7fc00000 / 0x7ff8000000000000). Temporary buffers are allocated per call and released when the
 * commands finish. */
RCL_API int rcl_reduce_enqueue(cl_mem result, size_t result_offset, rcl_context *ctx, rcl_reduce_op op, rcl_dtype dtype,
                               size_t n, cl_mem x, size_t x_offset, cl_mem y, size_t y_offset,
                               const rcl_reduce_options *opts, const rcl_queue_args *q);

/* Host-array forms: *out (a float or double, by dtype) receives the result; blocks until done. */
RCL_API int rcl_reduce(void *out, rcl_context *ctx, rcl_reduce_op op, rcl_dtype dtype, size_t n, const void *x,
                       const void *y, const rcl_reduce_options *opts);
RCL_API int rcl_sum_f32(float *out, rcl_context *ctx, const float *x, size_t n, const rcl_reduce_options *opts);
RCL_API int rcl_sum_f64(double *out, rcl_context *ctx, const double *x, size_t n, const rcl_reduce_options *opts);
RCL_API int rcl_dot_f32(float *out, rcl_context *ctx, const float *x, const float *y, size_t n,
                        const rcl_reduce_options *opts);
RCL_API int rcl_dot_f64(double *out, rcl_context *ctx, const double *x, const double *y, size_t n,
                        const rcl_reduce_options *opts);
RCL_API int rcl_nrm2_f32(float *out, rcl_context *ctx, const float *x, size_t n, const rcl_reduce_options *opts);
RCL_API int rcl_nrm2_f64(double *out, rcl_context *ctx, const double *x, size_t n, const rcl_reduce_options *opts);

/* Element-wise updates (contract "blas1"): y[i] = alpha*x[i] + y[i] (the product rounded, then the sum);
 * x[i] = alpha*x[i]. alpha is passed by value through a pointer to a float or double, by dtype.
 * local_size of 0 takes the tuned or default size (kernels "reduce.axpy", "reduce.scal"); any value gives
 * the same bits. */
RCL_API int rcl_axpy_enqueue(cl_mem y, size_t y_offset, rcl_context *ctx, rcl_dtype dtype, size_t n, const void *alpha,
                             cl_mem x, size_t x_offset, size_t local_size, const rcl_queue_args *q);
RCL_API int rcl_scal_enqueue(cl_mem x, size_t x_offset, rcl_context *ctx, rcl_dtype dtype, size_t n, const void *alpha,
                             size_t local_size, const rcl_queue_args *q);
RCL_API int rcl_axpy(void *y, rcl_context *ctx, rcl_dtype dtype, size_t n, const void *alpha, const void *x,
                     size_t local_size);
RCL_API int rcl_scal(void *x, rcl_context *ctx, rcl_dtype dtype, size_t n, const void *alpha, size_t local_size);

/* ---- partial reductions: one reduction over the slices of a vector held by several devices or processes
 * A global vector of `total` elements is cut into slices [first, first + n), each held anywhere (another
 * device, another MPI rank). rcl_reduce_partial computes a slice's part of the reduction, rcl_partial_merge
 * joins the parts of consecutive slices, and once the parts cover [0, total) rcl_partial_result gives
 * exactly the bits rcl_reduce gives over the whole vector, for every slicing, every device and every number
 * of pieces (docs/contracts.md, "Decomposition independence"). Ordered mode keeps the slice's complete,
 * aligned subtrees of the contract's tree plus the terms of a block of 2048 that a slice boundary cuts;
 * exact mode keeps the superaccumulator (merging adds integers). A part is plain data with a portable,
 * versioned byte form (rcl_partial_pack) to send between processes. */
typedef struct rcl_partial rcl_partial;
/* x (and y for DOT) hold the slice's n elements: x[0] is element `first` of the global vector. n may be 0
 * (an empty slice). opts as for rcl_reduce (mode, launch; any launch gives the same part). Blocks. */
RCL_API int rcl_reduce_partial(rcl_partial **out, rcl_context *ctx, rcl_reduce_op op, rcl_dtype dtype, size_t total,
                               size_t first, size_t n, const void *x, const void *y, const rcl_reduce_options *opts);
/* The same on device buffers (element offsets), on q's queue or the context's; blocks until the part is on
 * the host. */
RCL_API int rcl_reduce_partial_enqueue(rcl_partial **out, rcl_context *ctx, rcl_reduce_op op, rcl_dtype dtype,
                                       size_t total, size_t first, size_t n, cl_mem x, size_t x_offset, cl_mem y,
                                       size_t y_offset, const rcl_reduce_options *opts, const rcl_queue_args *q);
/* The host reference of a part (no device): what every device's part equals. */
RCL_API int rcl_ref_reduce_partial(rcl_partial **out, rcl_reduce_op op, rcl_dtype dtype, rcl_reduce_mode mode,
                                   size_t total, size_t first, size_t n, const void *x, const void *y);
/* Joins parts of the same reduction (op, dtype, mode, total) whose slices are consecutive, in order
 * (parts[i] ends where parts[i + 1] starts); empty slices may appear anywhere. Any grouping of the same
 * slices gives the same part. The inputs are not freed. */
RCL_API int rcl_partial_merge(rcl_partial **out, rcl_partial *const *parts, size_t count);
/* *out (a float or double by dtype) = the reduction, for a part covering [0, total); else
 * RCL_ERR_INVALID_ARG naming the gap. */
RCL_API int rcl_partial_result(void *out, const rcl_partial *p);
/* The slice a part covers, and its reduction. */
RCL_API int rcl_partial_info(const rcl_partial *p, rcl_reduce_op *op, rcl_dtype *dtype, rcl_reduce_mode *mode,
                             size_t *total, size_t *first, size_t *n);
/* The byte form (little-endian, versioned, no pointers): *len bytes written to buf (cap bytes); with
 * buf NULL only *len is set. rcl_partial_unpack checks every field (RCL_ERR_PARSE naming it). */
RCL_API int rcl_partial_pack(void *buf, size_t cap, size_t *len, const rcl_partial *p);
RCL_API int rcl_partial_unpack(rcl_partial **out, const void *buf, size_t len);
RCL_API void rcl_partial_free(rcl_partial *p);

#ifdef __cplusplus
}
#endif
#endif
