/* Internals of the reduction family. Its files depend one way: reduce.c (the public front: checks, the
 * configuration of a call from the tuner) uses reduce_tune.c (the tuner plug-in: descriptors), and both use
 * reduce_launch.c (plans and enqueues with an explicit configuration), which uses neither. Not installed. */
#ifndef REPROCL_REDUCE_INTERNAL_H
#define REPROCL_REDUCE_INTERNAL_H
#include "build/program.h"
#include "core/internal.h"
#include "tune/params.h"
#include "tune/tune.h"

/* The tunable parameters of the reductions, in the order of their rcl_tune_param_def tables. */
enum { RCL_RED_P_VARIANT = 0, RCL_RED_P_LOCAL = 1, RCL_RED_P_GPC = 2, RCL_RED_P_ACCUM = 3 /* exact only */ };
/* Exact mode's accumulation (cl/reduce.cl): the digit window (rcl_exact_*) or the fast window in front of
 * it (rcl_exact_*_fast). The same bits; 0 = the window. */
enum { RCL_RED_ACCUM_WINDOW = 1, RCL_RED_ACCUM_FAST = 2 };

/* A launch configuration. Strict values are the caller's and are refused when the device cannot launch
 * them; soft ones (tuned or defaults) are clamped to what it can. 0 = the built-in fallback. */
typedef struct {
  rcl_reduce_variant variant; /* RCL_REDUCE_VARIANT_NDRANGE or _TASK */
  size_t accum;               /* exact NDRange: RCL_RED_ACCUM_* (0: the window) */
  size_t local, groups;       /* groups: absolute first-pass work-groups */
  int local_strict, groups_strict;
} rcl_red_cfg;

/* What a configuration launches, with its kernels. */
typedef struct {
  int task;
  int fast;                    /* exact NDRange: the fast-window kernel */
  size_t W, groups;            /* NDRange: work-group size and work-groups of the one launch */
  size_t chunk, P;             /* ordered: super-blocks per group, partials per final subtree */
  size_t per_launch, launches; /* task: blocks (ordered) or terms (exact) per launch */
  rcl_kernel_slot k1;          /* from the context's kernel pool, given back by rcl__reduce_plan_release */
  rcl_context *ctx;
} rcl_red_plan;

/* ---- the public front's checks (reduce.c), shared with the partial reductions --------------------------- */
/* The checks of rcl_reduce_enqueue but the result's: context, op, options, support, x and y buffers. */
RCL_INTERNAL int rcl__reduce_validate_inputs(rcl_context *ctx, rcl_reduce_op op, rcl_dtype dtype, size_t n, cl_mem x,
                                             size_t xoff, cl_mem y, size_t yoff, const rcl_reduce_options *opts);
/* The configuration of a call: the caller's values (strict), the rest from the tuner (soft). */
RCL_INTERNAL int rcl__reduce_resolve_cfg(rcl_red_cfg *cfg, rcl_context *ctx, rcl_reduce_op op, rcl_reduce_mode mode,
                                         rcl_dtype dt, size_t n, const rcl_reduce_options *opts);
/* Copies n host elements to a new read-only buffer (a 0-byte one for n = 0). */
RCL_INTERNAL int rcl__reduce_upload(cl_mem *out, rcl_context *ctx, const void *data, size_t n, size_t es,
                                    const char *what);

/* ---- the launch layer (reduce_launch.c) ------------------------------------------------------------- */

RCL_INTERNAL int rcl__reduce_plan(rcl_red_plan *pl, rcl_context *ctx, rcl_reduce_op op, rcl_reduce_mode mode,
                                  rcl_dtype dt, size_t n, const rcl_red_cfg *cfg);
RCL_INTERNAL void rcl__reduce_plan_release(rcl_red_plan *pl);
/* rcl_reduce_enqueue with a resolved configuration (arguments already validated). */
RCL_INTERNAL int rcl__reduce_enqueue_cfg(cl_mem result, size_t roff, rcl_context *ctx, rcl_reduce_op op,
                                         rcl_reduce_mode mode, rcl_dtype dtype, size_t n, cl_mem x, size_t xoff,
                                         cl_mem y, size_t yoff, const rcl_red_cfg *cfg, const rcl_queue_args *q);
/* A partial reduction's launch of plan pl (reduce_partial_dev.c) over n elements, on chain ch. NDRange
 * (finalize 3, "parts out"): ordered, each of pl->groups groups of pl->W work-items reduces pl->chunk
 * super-blocks and writes its value to out[ooff + group]; exact, the superaccumulator's digits and flags as
 * D + 1 longs to out. Task: ordered, the tree of the n elements to out[ooff]; exact, the normalised digits
 * (D longs) to out and the flags (a uint) to flags_out. */
RCL_INTERNAL int rcl__reduce_enqueue_parts(rcl_chain *ch, const rcl_red_plan *pl, cl_mem out, size_t ooff,
                                           cl_mem flags_out, rcl_context *ctx, rcl_reduce_op op, rcl_reduce_mode mode,
                                           rcl_dtype dt, size_t n, cl_mem x, size_t xoff, cl_mem y, size_t yoff);
/* axpy (is_axpy) or scal on queue (arguments already validated) with the work-group size local (strict:
 * refused when the kernel or device cannot launch it), or if 0 with soft clamped to the kernel's limit. */
RCL_INTERNAL int rcl__blas1_launch(int is_axpy, cl_command_queue queue, cl_mem y, size_t yoff, rcl_context *ctx,
                                   rcl_dtype dt, size_t n, const void *alpha, cl_mem x, size_t xoff, size_t local,
                                   size_t soft, const rcl_queue_args *q);
/* CL_KERNEL_WORK_GROUP_SIZE of rcl_axpy / rcl_scal. */
RCL_INTERNAL int rcl__blas1_kmax(size_t *kmax, rcl_context *ctx, rcl_dtype dt, int is_axpy);

/* ---- the host reference's superaccumulator (reduce_ref.c), shared with the partial reductions -------- */
/* Digits of the exact accumulator of dt (dot: products, also nrm2). */
RCL_INTERNAL int rcl__xacc_digits(rcl_dtype dt, int dot);
/* Carry-normalises nd slots: digits 0..nd-2 in [0, 2^32), the top one signed (a unique form). */
RCL_INTERNAL void rcl__xacc_normalize(int64_t *s, int nd);
/* Adds the n terms of x (dot: x[i]*y[i] exactly) into the normalised slots s, ORing their flags; leaves s
 * normalised. */
RCL_INTERNAL void rcl__xacc_accumulate(int64_t *s, uint32_t *flags, rcl_dtype dt, int dot, size_t n, const void *x,
                                       const void *y);
/* *out (float or double bits) = the accumulator rounded once (contract reduce.exact); s is clobbered. */
RCL_INTERNAL void rcl__xacc_round(void *out, int64_t *s, uint32_t flags, rcl_dtype dt, int dot);

/* ---- partial reductions on a device (reduce_partial_dev.c), non-blocking ----------------------------------- */
/* rcl__reduce_partial_begin checks the arguments as rcl_reduce_partial_enqueue does, enqueues the kernels
 * and non-blocking reads of a slice's part on q's queue (or the context's) and returns; end waits for the
 * reads and builds the part (*out), freeing pending in every case (out NULL: only frees it). So several
 * devices compute their slices at once (src/split/split_reduce.c). */
typedef struct rcl_red_pending rcl_red_pending;
RCL_INTERNAL int rcl__reduce_partial_begin(rcl_red_pending **pending, rcl_context *ctx, rcl_reduce_op op,
                                           rcl_dtype dtype, size_t total, size_t first, size_t n, cl_mem x, size_t xoff,
                                           cl_mem y, size_t yoff, const rcl_reduce_options *opts,
                                           const rcl_queue_args *q);
RCL_INTERNAL int rcl__reduce_partial_end(rcl_partial **out, rcl_red_pending *pending);

/* ---- the tuner descriptors (reduce_tune.c) ---------------------------------------------------------- */
RCL_INTERNAL const rcl_tune_kernel *rcl__reduce_tune_kernel(rcl_reduce_op op, rcl_reduce_mode mode);
extern const rcl_tune_kernel rcl__tk_reduce_sum_ordered, rcl__tk_reduce_dot_ordered, rcl__tk_reduce_nrm2_ordered,
    rcl__tk_reduce_sum_exact, rcl__tk_reduce_dot_exact, rcl__tk_reduce_nrm2_exact, rcl__tk_reduce_axpy,
    rcl__tk_reduce_scal;

#endif
