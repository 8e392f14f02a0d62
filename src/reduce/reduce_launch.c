/* The reductions' launch layer (cl/reduce.cl, cl/reduce_task.cl): what a configuration launches (the
 * plan: kernel, work-group size, groups, launches) and the enqueueing of it, with the configuration given
 * explicitly; axpy and scal with a given work-group size. Any launch geometry gives the same bits; it only
 * changes speed. Used by the public front (reduce.c) and the tuner plug-in (reduce_tune.c); calls neither. */
#include <string.h>

#include "reduce/reduce_internal.h"

/* Keep in sync with cl/reduce.cl and cl/rcl_exact.cl. */
#define RED_L 64u
#define RED_B (RED_L * 32u)
#define XACC_F32_SUM 10u
#define XACC_F32_DOT 19u
#define XACC_F64_SUM 67u
#define XACC_F64_DOT 133u
#define XACC_MAX_TERMS_PER_GROUP ((size_t)1 << 29)

static size_t xacc_digits(rcl_dtype dt, int dot) {
  return dt == RCL_F64 ? (dot ? XACC_F64_DOT : XACC_F64_SUM) : (dot ? XACC_F32_DOT : XACC_F32_SUM);
}

/* Chunks of one term (rcl_exact.cl): a significand or product shifted into 32-bit digits. */
static size_t xacc_chunks(rcl_dtype dt, int dot) { return dt == RCL_F64 ? (dot ? 5 : 3) : (dot ? 3 : 2); }

/* Limbs of a work-item's window in the group's tree: the digit window's chunks + 1; the fast window's
 * NF = chunks limbs spread over NF + 2 digits. */
/* The fast window's highest base bit FMAX (cl/reduce.cl, XSUM_FMAX and XDOT_FMAX). */
static size_t xacc_fast_fmax(rcl_dtype dt, int dot) { return dt == RCL_F64 ? (dot ? 3967 : 1983) : (dot ? 447 : 222); }

static size_t xacc_tree_limbs(rcl_dtype dt, int dot, int fast) { return xacc_chunks(dt, dot) + (fast ? 2 : 1); }

static size_t ceil_div(size_t a, size_t b) { return a / b + (a % b != 0); }

/* Checks a requested (or picks a default) power-of-two work-group size against the kernel's limit and
 * the local memory it needs (bytes_per_item * W + fixed). */
static int pick_local(size_t *out, size_t requested, size_t fallback, size_t kmax, const rcl_context *ctx,
                      size_t bytes_per_item, size_t fixed, const char *kname) {
  size_t lmem = (size_t)ctx->profile.local_mem_size;
  if (requested) {
    if (!rcl__is_pow2(requested))
      return rcl__fail(RCL_ERR_INVALID_ARG, "local_size %zu is not a power of two", requested);
    if (requested > kmax)
      return rcl__fail(RCL_ERR_INVALID_ARG, "local_size %zu exceeds %s's limit of %zu on %s", requested, kname, kmax,
                       ctx->profile.device_name);
    if (requested > ctx->profile.max_work_item_sizes[0])
      return rcl__fail(RCL_ERR_INVALID_ARG, "local_size %zu exceeds the maximum work-item size %zu of %s", requested,
                       ctx->profile.max_work_item_sizes[0], ctx->profile.device_name);
    if (bytes_per_item * requested + fixed > lmem)
      return rcl__fail(RCL_ERR_INVALID_ARG, "local_size %zu needs %zu bytes of local memory, %s has %zu", requested,
                       bytes_per_item * requested + fixed, ctx->profile.device_name, lmem);
    *out = requested;
    return 0;
  }
  size_t w = rcl__floor_pow2(fallback < kmax ? fallback : kmax);
  while (w > 1 && bytes_per_item * w + fixed > lmem) w /= 2;
  if (bytes_per_item * w + fixed > lmem)
    return rcl__fail(RCL_ERR_UNSUPPORTED, "%s needs %zu bytes of local memory, %s has %zu", kname,
                     bytes_per_item + fixed, ctx->profile.device_name, lmem);
  *out = w;
  return 0;
}

/* ---- plans: what a configuration launches ----------------------------------------------------------- */

/* Loop iterations of one ordered-task launch per block (the element loop, the pushes and merges). */
#define TASK_ORDERED_ITERS_PER_BLOCK (RED_B + 4u * RED_L)
/* Terms of one exact-task launch on devices without a loop limit: the slots stay far from overflow. */
#define TASK_EXACT_MAX_TERMS ((size_t)1 << 28)

/* The single-launch kernel of an op and mode. nrm2 has its own, which loads each element once (the dot
 * kernel given x twice loads it twice: the compiler cannot know the two arguments are one buffer). */
static const char *fused_kernel_name(rcl_reduce_op op, rcl_reduce_mode mode, int fast) {
  static const char *const names[3][3] = {{"rcl_ordered_sum", "rcl_ordered_dot", "rcl_ordered_nrm2"},
                                          {"rcl_exact_sum", "rcl_exact_dot", "rcl_exact_nrm2"},
                                          {"rcl_exact_sum_fast", "rcl_exact_dot_fast", "rcl_exact_nrm2_fast"}};
  return names[mode == RCL_REDUCE_EXACT ? 1 + (fast != 0) : 0][op == RCL_OP_SUM ? 0 : op == RCL_OP_DOT ? 1 : 2];
}

static const char *task_kernel_name(rcl_reduce_op op, rcl_reduce_mode mode) {
  if (mode == RCL_REDUCE_EXACT) return op == RCL_OP_SUM ? "rcl_exact_sum_task" : "rcl_exact_dot_task";
  return op == RCL_OP_SUM ? "rcl_ordered_sum_task" : "rcl_ordered_dot_task";
}

static int plan_task(rcl_red_plan *pl, rcl_context *ctx, rcl_reduce_op op, rcl_reduce_mode mode, rcl_dtype dt,
                     size_t n) {
  const char *name = task_kernel_name(op, mode);
  int rc = rcl__kernel_take(&pl->k1, ctx, "reduce_task.cl", dt, NULL, name);
  if (rc) return rc;
  size_t budget = rcl__loop_budget(ctx);
  pl->task = 1;
  if (mode == RCL_REDUCE_ORDERED) {
    size_t nblocks = ceil_div(n, RED_B);
    pl->per_launch =
        budget == SIZE_MAX ? nblocks : (budget > 1024 ? (budget - 1024) / TASK_ORDERED_ITERS_PER_BLOCK : 1);
    if (pl->per_launch == 0) pl->per_launch = 1;
    pl->launches = ceil_div(nblocks, pl->per_launch);
  } else {
    /* Per term: the term loop and its chunk loop; fixed: the load, normalisation and rounding loops. */
    size_t D = xacc_digits(dt, op != RCL_OP_SUM), fixed = D * 8 + 64, per_term = op == RCL_OP_SUM ? 4 : 7;
    pl->per_launch = budget == SIZE_MAX ? TASK_EXACT_MAX_TERMS : (budget > fixed ? (budget - fixed) / per_term : 1);
    if (pl->per_launch > TASK_EXACT_MAX_TERMS) pl->per_launch = TASK_EXACT_MAX_TERMS;
    if (pl->per_launch == 0) pl->per_launch = 1;
    pl->launches = ceil_div(n, pl->per_launch);
  }
  return 0;
}

/* The reduction scratch (queue_scratch.c) as cl/reduce.cl reads it: a control block of RED_CTL_WORDS
 * 32-bit words (the ticket, the exact flags, from word 16 the exact digit sums: 2 x up to 133 words),
 * then the ordered partials from byte RED_PART_OFF. */
#define RED_CTL_DIGITS 16u
#define RED_PART_OFF ((size_t)1280)

static size_t floor_pow2_min1(size_t x) { return x ? rcl__floor_pow2(x) : 1; }
static size_t ceil_pow2(size_t x) {
  size_t p = 1;
  while (p < x) p *= 2;
  return p;
}

static int plan_ordered(rcl_red_plan *pl, rcl_context *ctx, rcl_reduce_op op, rcl_dtype dt, size_t n,
                        const rcl_red_cfg *cfg) {
  const char *k1name = fused_kernel_name(op, RCL_REDUCE_ORDERED, 0);
  size_t es = rcl_dtype_size(dt), kmax, W, lmem = (size_t)ctx->profile.local_mem_size;
  int rc = rcl__kernel_take(&pl->k1, ctx, "reduce.cl", dt, NULL, k1name);
  if (!rc) rc = rcl__kernel_wg_max(&kmax, pl->k1.kernel, ctx, k1name);
  /* A super-block keeps max(W, 64) values in local memory (and the final reduction P of them). */
  if (!rc)
    rc = pick_local(&W, cfg->local_strict ? cfg->local : 0, cfg->local && !cfg->local_strict ? cfg->local : 256, kmax,
                    ctx, es, es * RED_L + 16, k1name);
  if (rc) return rc;
  size_t G = W >= RED_L ? W / RED_L : 1, S = G * RED_L;
  size_t nleaves = (n / (RED_L * 32)) * RED_L + (n % (RED_L * 32) < RED_L ? n % (RED_L * 32) : RED_L);
  size_t nsuper = ceil_div(nleaves, S);
  size_t target = cfg->groups ? cfg->groups : (size_t)ctx->profile.compute_units * 32;
  /* The last group reduces the partials by one tree in local memory: at most 1024 of them (fewer where
   * local memory is small), unless a driver's loop limit needs more groups (then as many as it holds). */
  size_t pcap = 1024;
  while (pcap > S && pcap * es + 16 > lmem) pcap /= 2;
  if (target > pcap) target = pcap;
  /* Each group takes an aligned chunk of super-blocks (a power of two): the smallest chunk whose groups
   * fit the target. Loop iterations per super-block of one work-item: its slots' lane sums, then the tree
   * levels; a driver's loop limit caps the chunk. */
  size_t chunk = 1;
  while (ceil_div(nsuper, chunk) > target) chunk *= 2;
  size_t per_super = ceil_div(S, W) * 33 + 4 * 16 + 4, budget = rcl__loop_budget(ctx);
  if (budget != SIZE_MAX) {
    size_t cmax = floor_pow2_min1(budget / per_super);
    if (chunk > cmax) {
      if (cfg->groups_strict)
        return rcl__fail(RCL_ERR_INVALID_ARG,
                         "num_groups %zu is too few on %s: each work-item would loop past the driver's limit of %llu "
                         "iterations (at least %zu groups)",
                         target, ctx->profile.device_name, (unsigned long long)ctx->profile.loop_iteration_limit,
                         ceil_div(nsuper, cmax));
      chunk = cmax; /* more groups than pcap: P grows below, within local memory */
    }
  }
  size_t groups = ceil_div(nsuper, chunk), P = ceil_pow2(groups);
  if (P > pcap && (P * es + 16 > lmem || P > ((size_t)1 << 16)))
    return rcl__fail(RCL_ERR_INVALID_ARG,
                     "n = %zu is too large for one ordered reduction on %s: %zu work-groups within the driver's loop "
                     "limit, more partials than local memory holds",
                     n, ctx->profile.device_name, groups);
  pl->W = W;
  pl->P = P;
  pl->groups = groups;
  pl->chunk = chunk;
  return 0;
}

static int plan_exact(rcl_red_plan *pl, rcl_context *ctx, rcl_reduce_op op, rcl_dtype dt, size_t n,
                      const rcl_red_cfg *cfg) {
  int dot = op != RCL_OP_SUM;
  size_t D = xacc_digits(dt, dot), kmax, W;
  size_t chunks = xacc_chunks(dt, dot);
  /* Loop iterations of a work-item on drivers with a loop limit, counted as if the compiler unrolled none
   * of the limb loops: per term the term loop and 3 limb loops of chunks + 1 iterations (the fast window:
   * one more of chunks); fixed, the group's tree and flushes, and for the fast window its moves (at most
   * FMAX / 16 + 2 folds of 2 chunks pieces, each through the digit window's loops). Where the moves alone
   * would take half the budget (f64 dot products), the fast window is not used: the digit window gives the
   * same bits. */
  size_t budget = rcl__loop_budget(ctx), per_term = 1 + 3 * (chunks + 1), fixed = D * 4 + 64;
  size_t fast_fixed = (xacc_fast_fmax(dt, dot) / 16 + 2) * 2 * chunks * (4 * chunks + 2) + 4 * (chunks + 2);
  pl->fast = cfg->accum == RCL_RED_ACCUM_FAST && (budget == SIZE_MAX || fast_fixed < budget / 2);
  if (pl->fast) {
    per_term += chunks + 1;
    fixed += fast_fixed;
  }
  const char *k1name = fused_kernel_name(op, RCL_REDUCE_EXACT, pl->fast);
  int rc = rcl__kernel_take(&pl->k1, ctx, "reduce.cl", dt, NULL, k1name);
  if (!rc) rc = rcl__kernel_wg_max(&kmax, pl->k1.kernel, ctx, k1name);
  /* Each work-item keeps its window's limbs in local memory for the group's tree. */
  if (!rc)
    rc = pick_local(&W, cfg->local_strict ? cfg->local : 0, cfg->local && !cfg->local_strict ? cfg->local : 256, kmax,
                    ctx, xacc_tree_limbs(dt, dot, pl->fast) * 8, D * 8 + 16, k1name);
  if (rc) return rc;
  size_t groups = cfg->groups ? cfg->groups : (size_t)ctx->profile.compute_units * 8;
  size_t min_groups = ceil_div(n, XACC_MAX_TERMS_PER_GROUP);
  if (cfg->groups_strict && groups < min_groups)
    return rcl__fail(RCL_ERR_INVALID_ARG, "num_groups %zu is too few for %zu terms: each group takes at most 2^29",
                     groups, n);
  /* On drivers with a loop limit, also bound the terms per work-item (iterations counted above). */
  if (budget != SIZE_MAX) {
    size_t lg = budget > fixed ? (budget - fixed) / per_term : 1;
    size_t need = ceil_div(n, W * lg);
    if (cfg->groups_strict && groups < need)
      return rcl__fail(RCL_ERR_INVALID_ARG,
                       "num_groups %zu is too few on %s: each work-item would loop past the driver's limit of %llu "
                       "iterations (at least %zu groups)",
                       groups, ctx->profile.device_name, (unsigned long long)ctx->profile.loop_iteration_limit, need);
    if (need > min_groups) min_groups = need;
  }
  if (groups < min_groups) groups = min_groups;
  if (groups > ceil_div(n, W)) groups = ceil_div(n, W);
  if (groups > UINT32_MAX) return rcl__fail(RCL_ERR_INVALID_ARG, "num_groups %zu is too large", groups);
  pl->W = W;
  pl->groups = groups;
  return 0;
}

int rcl__reduce_plan(rcl_red_plan *pl, rcl_context *ctx, rcl_reduce_op op, rcl_reduce_mode mode, rcl_dtype dt, size_t n,
                     const rcl_red_cfg *cfg) {
  memset(pl, 0, sizeof *pl);
  pl->ctx = ctx;
  int rc;
  if (cfg->variant == RCL_REDUCE_VARIANT_TASK)
    rc = plan_task(pl, ctx, op, mode, dt, n);
  else if (mode == RCL_REDUCE_ORDERED)
    rc = plan_ordered(pl, ctx, op, dt, n, cfg);
  else
    rc = plan_exact(pl, ctx, op, dt, n, cfg);
  if (rc) rcl__reduce_plan_release(pl);
  return rc;
}

void rcl__reduce_plan_release(rcl_red_plan *pl) { rcl__kernel_give(pl->ctx, &pl->k1); }

/* ---- enqueueing a plan ------------------------------------------------------------------------------ */

/* Ordered and exact modes: one launch on the queue's scratch (its last work-group finishes the call).
 * fin: the kernel's finalize (cl/reduce.cl), 0 for the op's own (1, or 2 for nrm2). */
static int enqueue_fused(rcl_chain *ch, const rcl_red_plan *pl, cl_mem result, size_t roff, rcl_context *ctx,
                         rcl_reduce_op op, rcl_reduce_mode mode, rcl_dtype dt, size_t n, cl_mem x, size_t xoff,
                         cl_mem y, size_t yoff, cl_mem *bufs, cl_uint fin) {
  int dot = op != RCL_OP_SUM, exact = mode == RCL_REDUCE_EXACT;
  const char *name = fused_kernel_name(op, mode, pl->fast);
  size_t es = rcl_dtype_size(dt), W = pl->W, P = pl->P;
  size_t bytes = exact ? RED_PART_OFF : RED_PART_OFF + pl->groups * es;
  int rc = rcl__queue_scratch(&bufs[0], ctx, ch->queue, bytes);
  if (rc) return rc;
  cl_ulong xo = xoff, yo = op == RCL_OP_NRM2 ? xoff : yoff, nn = n, ro = roff;
  cl_mem ybuf = op == RCL_OP_DOT ? y : x; /* nrm2 is sqrt of the dot of x with itself */
  if (!fin) fin = op == RCL_OP_NRM2 ? 2u : 1u;
  if (exact) {
    size_t D = xacc_digits(dt, dot), limbs = xacc_tree_limbs(dt, dot, pl->fast);
    rc = rcl__set_args(pl->k1.kernel, name, 12, sizeof(cl_mem), &x, sizeof xo, &xo, sizeof(cl_mem), &ybuf, sizeof yo,
                       &yo, sizeof nn, &nn, sizeof(cl_mem), &bufs[0], sizeof(cl_mem), &result, sizeof ro, &ro,
                       sizeof fin, &fin, limbs * 8 * W, NULL, D * 8, NULL, (size_t)16, NULL);
  } else {
    size_t G = W >= RED_L ? W / RED_L : 1, S = G * RED_L;
    cl_uint chunk = (cl_uint)pl->chunk, p32 = (cl_uint)P;
    cl_ulong poff = RED_PART_OFF;
    rc = rcl__set_args(pl->k1.kernel, name, 14, sizeof(cl_mem), &x, sizeof xo, &xo, sizeof(cl_mem), &ybuf, sizeof yo,
                       &yo, sizeof nn, &nn, sizeof chunk, &chunk, sizeof(cl_mem), &bufs[0], sizeof poff, &poff,
                       sizeof p32, &p32, sizeof(cl_mem), &result, sizeof ro, &ro, sizeof fin, &fin,
                       (S > P ? S : P) * es, NULL, (size_t)4, NULL);
  }
  if (!rc) rc = rcl__chain_kernel(ch, pl->k1.kernel, name, pl->groups * W, W);
  return rc;
}

/* The task variants: one work-item per launch, the state carried in bufs between launches (created where
 * NULL). keep: no launch finalizes, the state stays in bufs (exact mode's partial reduction). */
static int enqueue_task(rcl_chain *ch, const rcl_red_plan *pl, cl_mem result, size_t roff, rcl_context *ctx,
                        rcl_reduce_op op, rcl_reduce_mode mode, rcl_dtype dt, size_t n, cl_mem x, size_t xoff, cl_mem y,
                        size_t yoff, cl_mem *bufs, int keep) {
  const char *name = task_kernel_name(op, mode);
  size_t es = rcl_dtype_size(dt), D = xacc_digits(dt, op != RCL_OP_SUM);
  int rc = bufs[0] ? 0
           : mode == RCL_REDUCE_ORDERED
               ? rcl__buffer_create(&bufs[0], ctx, CL_MEM_READ_WRITE, 64 * es, NULL, "task stack")
               : rcl__buffer_create(&bufs[0], ctx, CL_MEM_READ_WRITE, D * 8, NULL, "task superaccumulator");
  if (!rc && mode == RCL_REDUCE_EXACT && !bufs[1])
    rc = rcl__buffer_create(&bufs[1], ctx, CL_MEM_READ_WRITE, 4, NULL, "task superaccumulator flags");
  cl_ulong xo = xoff, yo = op == RCL_OP_NRM2 ? xoff : yoff, nn = n, ro = roff;
  cl_mem ybuf = op == RCL_OP_DOT ? y : x;
  size_t total = mode == RCL_REDUCE_ORDERED ? ceil_div(n, RED_B) : n;
  for (size_t first = 0; first < total && !rc; first += pl->per_launch) {
    size_t last = total - first > pl->per_launch ? first + pl->per_launch : total;
    cl_ulong f = first, l = last;
    cl_uint fin = keep || last < total ? 0u : op == RCL_OP_NRM2 ? 2u : 1u;
    if (mode == RCL_REDUCE_ORDERED)
      rc = rcl__set_args(pl->k1.kernel, name, 11, sizeof(cl_mem), &x, sizeof xo, &xo, sizeof(cl_mem), &ybuf, sizeof yo,
                         &yo, sizeof nn, &nn, sizeof f, &f, sizeof l, &l, sizeof(cl_mem), &bufs[0], sizeof(cl_mem),
                         &result, sizeof ro, &ro, sizeof fin, &fin);
    else
      rc = rcl__set_args(pl->k1.kernel, name, 11, sizeof(cl_mem), &x, sizeof xo, &xo, sizeof(cl_mem), &ybuf, sizeof yo,
                         &yo, sizeof f, &f, sizeof l, &l, sizeof(cl_mem), &bufs[0], sizeof(cl_mem), &bufs[1],
                         sizeof(cl_mem), &result, sizeof ro, &ro, sizeof fin, &fin);
    if (!rc) rc = rcl__chain_kernel(ch, pl->k1.kernel, name, 1, 1);
  }
  return rc;
}

int rcl__reduce_enqueue_cfg(cl_mem result, size_t roff, rcl_context *ctx, rcl_reduce_op op, rcl_reduce_mode mode,
                            rcl_dtype dtype, size_t n, cl_mem x, size_t xoff, cl_mem y, size_t yoff,
                            const rcl_red_cfg *cfg, const rcl_queue_args *q) {
  cl_command_queue queue;
  int rc = rcl__queue_of(&queue, ctx, q);
  if (rc) return rc;
  rcl_chain ch;
  rcl__chain_begin(&ch, queue, q);
  if ((rc = rcl__chain_lazy(&ch, ctx, q)) != 0) return rc;
  size_t es = rcl_dtype_size(dtype);
  rcl_red_plan pl;
  memset(&pl, 0, sizeof pl);
  cl_mem bufs[2] = {NULL, NULL};
  if (n == 0) {
    const uint64_t zero = 0; /* the empty sum is +0 */
    rc = rcl__chain_fill(&ch, result, &zero, es, roff * es, es);
  } else if ((rc = rcl__reduce_plan(&pl, ctx, op, mode, dtype, n, cfg)) == 0) {
    if (pl.task)
      rc = enqueue_task(&ch, &pl, result, roff, ctx, op, mode, dtype, n, x, xoff, y, yoff, bufs, 0);
    else
      rc = enqueue_fused(&ch, &pl, result, roff, ctx, op, mode, dtype, n, x, xoff, y, yoff, bufs, 0);
  }
  /* Released now; OpenCL keeps them alive until the enqueued commands finish. */
  for (int i = 0; i < 2; i++)
    if (bufs[i]) clReleaseMemObject(bufs[i]);
  rcl__reduce_plan_release(&pl);
  return rcl__chain_finish(&ch, q, rc);
}

int rcl__reduce_enqueue_parts(rcl_chain *ch, const rcl_red_plan *pl, cl_mem out, size_t ooff, cl_mem flags_out,
                              rcl_context *ctx, rcl_reduce_op op, rcl_reduce_mode mode, rcl_dtype dt, size_t n,
                              cl_mem x, size_t xoff, cl_mem y, size_t yoff) {
  cl_mem bufs[2] = {NULL, NULL};
  int rc, nrm2 = op == RCL_OP_NRM2;
  if (!pl->task) {
    rc = enqueue_fused(ch, pl, out, ooff, ctx, op, mode, dt, n, x, xoff, y, yoff, bufs, 3u);
  } else if (mode == RCL_REDUCE_ORDERED) { /* the tree of the n elements: finalize 1 (nrm2 as the dot) */
    rc = enqueue_task(ch, pl, out, ooff, ctx, nrm2 ? RCL_OP_DOT : op, mode, dt, n, x, xoff, nrm2 ? x : y,
                      nrm2 ? xoff : yoff, bufs, 0);
  } else { /* the state is the part: the caller's buffers keep it */
    clRetainMemObject(bufs[0] = out);
    clRetainMemObject(bufs[1] = flags_out);
    rc = enqueue_task(ch, pl, out, 0, ctx, op, mode, dt, n, x, xoff, y, yoff, bufs, 1);
  }
  for (int i = 0; i < 2; i++)
    if (bufs[i]) clReleaseMemObject(bufs[i]);
  return rc;
}

/* ---- axpy / scal ------------------------------------------------------------------------------------ */

int rcl__blas1_kmax(size_t *kmax, rcl_context *ctx, rcl_dtype dt, int is_axpy) {
  const char *name = is_axpy ? "rcl_axpy" : "rcl_scal";
  cl_kernel k = NULL;
  int rc = rcl__kernel_get(&k, ctx, "reduce.cl", dt, NULL, name);
  if (!rc) rc = rcl__kernel_wg_max(kmax, k, ctx, name);
  if (k) clReleaseKernel(k);
  return rc;
}

int rcl__blas1_launch(int is_axpy, cl_command_queue queue, cl_mem y, size_t yoff, rcl_context *ctx, rcl_dtype dt,
                      size_t n, const void *alpha, cl_mem x, size_t xoff, size_t local, size_t soft,
                      const rcl_queue_args *q) {
  const char *name = is_axpy ? "rcl_axpy" : "rcl_scal";
  size_t es = rcl_dtype_size(dt);
  rcl_chain ch;
  rcl__chain_begin(&ch, queue, q);
  int rc = rcl__chain_lazy(&ch, ctx, q);
  if (rc) return rc;
  if (n == 0) return rcl__chain_finish(&ch, q, 0); /* nothing to do; an event that follows the wait list */
  rcl_kernel_slot ks;
  size_t kmax;
  rc = rcl__kernel_take(&ks, ctx, "reduce.cl", dt, NULL, name);
  cl_kernel k = ks.kernel;
  if (!rc) rc = rcl__kernel_wg_max(&kmax, k, ctx, name);
  if (!rc && local && local > kmax)
    rc = rcl__fail(RCL_ERR_INVALID_ARG, "%s: local_size %zu exceeds the kernel's limit %zu", name, local, kmax);
  if (!rc && local && local > ctx->profile.max_work_item_sizes[0])
    rc = rcl__fail(RCL_ERR_INVALID_ARG, "%s: local_size %zu exceeds the maximum work-item size %zu", name, local,
                   ctx->profile.max_work_item_sizes[0]);
  if (!rc) {
    size_t W = local ? local : (kmax < soft ? kmax : soft);
    /* Up to 65536 groups, grid-striding beyond, unless that would exceed a driver's loop limit. */
    size_t groups = ceil_div(n, W);
    if (groups > 65536 && ceil_div(n, 65536 * W) <= rcl__loop_budget(ctx)) groups = 65536;
    cl_ulong yo = yoff, xo = xoff, nn = n;
    if (is_axpy)
      rc = rcl__set_args(k, name, 6, sizeof(cl_mem), &y, sizeof yo, &yo, es, alpha, sizeof(cl_mem), &x, sizeof xo, &xo,
                         sizeof nn, &nn);
    else
      rc = rcl__set_args(k, name, 4, sizeof(cl_mem), &y, sizeof yo, &yo, es, alpha, sizeof nn, &nn);
    if (!rc) rc = rcl__chain_kernel(&ch, k, name, groups * W, W);
  }
  rcl__kernel_give(ctx, &ks);
  return rcl__chain_finish(&ch, q, rc);
}
