/* Partial reductions on a device (docs/contracts.md §10): a slice's part computed by the reduction
 * kernels, equal byte for byte to the host reference part (reduce_partial.c). Ordered mode: the at most two
 * cut blocks are read back and their terms computed on the host (< 2 x 2048 elements); the complete blocks
 * [c0, c1) run through the fused kernel with finalize 3 ("parts out"), each work-group writing its aligned
 * chunk's value: the middle [A0, A1), aligned to the launch's granule of Gr = 2^g blocks, as level-g nodes,
 * the unaligned head [c0, A0) and tail [A1, c1) with one block per group (level-0 nodes); the host merges
 * them. Exact mode: the kernel's last group writes the superaccumulator instead of rounding it. The task
 * variant launches once per maximal node (ordered) or keeps its state (exact). */
#include <string.h>

#include "reduce/reduce_partial.h"

struct rcl_red_pending {
  rcl_partial *part;
  rcl_playout lo;
  cl_event ev[6];
  int nev;
  unsigned char *frag; /* head x, head y, tail x, tail y: RCL_PART_B elements each */
  /* ordered: the values of head, middle and tail groups (or of the task's nodes), in order */
  size_t nhead, nmid, ntail, A0, A1, nnodes;
  uint32_t mid_level;
  int task;
  unsigned char *vals;
  rcl_pnode *nodes;
  /* exact: digits (and flags) as the device wrote them */
  int64_t *xacc;
  uint32_t xflags;
  cl_mem out, flags_out;
};

static void pending_free(rcl_red_pending *pd) {
  if (!pd) return;
  if (pd->nev) clWaitForEvents((cl_uint)pd->nev, pd->ev); /* nothing may still write into our memory */
  for (int i = 0; i < pd->nev; i++) clReleaseEvent(pd->ev[i]);
  if (pd->out) clReleaseMemObject(pd->out);
  if (pd->flags_out) clReleaseMemObject(pd->flags_out);
  rcl_partial_free(pd->part);
  rcl__free(pd->frag);
  rcl__free(pd->vals);
  rcl__free(pd->nodes);
  rcl__free(pd->xacc);
  rcl__free(pd);
}

/* A non-blocking read after the chain's commands; its event is kept for rcl__reduce_partial_end. */
static int read_into(rcl_red_pending *pd, rcl_chain *ch, cl_mem buf, size_t off, size_t bytes, void *dst,
                     const char *what) {
  if (!bytes) return 0;
  int rc = rcl__chain_read(ch, buf, off, bytes, dst, &pd->ev[pd->nev], what);
  if (!rc) pd->nev++;
  return rc;
}

static size_t elems(const rcl_partial *p, size_t a, size_t b) {
  size_t e = b * RCL_PART_B < p->total ? b * RCL_PART_B : p->total;
  return e - a * RCL_PART_B;
}

/* The cut blocks' elements (x, and y for dot) are read back. */
static int begin_frags(rcl_red_pending *pd, rcl_chain *ch, cl_mem x, size_t xoff, cl_mem y, size_t yoff) {
  const rcl_partial *p = pd->part;
  size_t es = rcl_dtype_size(p->dtype), starts[2] = {pd->lo.head_start, pd->lo.tail_start};
  size_t counts[2] = {pd->lo.head_count, pd->lo.tail_count};
  int rc = 0;
  if (!counts[0] && !counts[1]) return 0;
  if (!(pd->frag = rcl__malloc(4 * RCL_PART_B * es))) return RCL_ERR_OUT_OF_MEMORY;
  for (int f = 0; f < 2 && !rc; f++) {
    size_t off = starts[f] - p->first, bytes = counts[f] * es;
    rc = read_into(pd, ch, x, (xoff + off) * es, bytes, pd->frag + 2 * f * RCL_PART_B * es, "x (a cut block)");
    if (!rc && p->op == RCL_OP_DOT)
      rc = read_into(pd, ch, y, (yoff + off) * es, bytes, pd->frag + (2 * f + 1) * RCL_PART_B * es, "y (a cut block)");
  }
  return rc;
}

/* One launch of plan pl, modified to W work-items, chunk super-blocks and groups groups, over blocks [a, b);
 * its values go to pd->out from value index at. */
static int launch_range(rcl_chain *ch, const rcl_red_plan *pl, size_t W, size_t chunk, size_t groups,
                        rcl_red_pending *pd, rcl_context *ctx, size_t a, size_t b, size_t at, cl_mem x, size_t xoff,
                        cl_mem y, size_t yoff) {
  const rcl_partial *p = pd->part;
  if (a >= b) return 0;
  rcl_red_plan lp = *pl;
  lp.W = W;
  lp.chunk = chunk;
  lp.groups = groups;
  lp.P = 1;
  size_t off = a * RCL_PART_B - p->first;
  return rcl__reduce_enqueue_parts(ch, &lp, pd->out, at, NULL, ctx, p->op, p->mode, p->dtype, elems(p, a, b), x,
                                   xoff + off, y, yoff + off);
}

static size_t log2_sz(size_t v) {
  size_t k = 0;
  while (((size_t)1 << k) < v) k++;
  return k;
}

/* The launches of the complete blocks: head [c0, A0), middle [A0, A1) of granule Gr, tail [A1, c1); or
 * with the task variant one launch per maximal node. */
static int begin_nodes(rcl_red_pending *pd, rcl_chain *ch, const rcl_red_plan *pl, rcl_context *ctx, cl_mem x,
                       size_t xoff, cl_mem y, size_t yoff) {
  const rcl_playout *lo = &pd->lo;
  size_t es = rcl_dtype_size(pd->part->dtype), count, c0 = lo->c0, c1 = lo->c1;
  int rc = 0;
  if (pl->task) {
    if (!(pd->nodes = rcl__malloc(RCL_PART_MAX_NODES * sizeof *pd->nodes))) return RCL_ERR_OUT_OF_MEMORY;
    rcl__partial_nodes(pd->nodes, &pd->nnodes, lo->nb, c0, c1);
    count = pd->nnodes;
  } else {
    size_t G = pl->W >= 64 ? pl->W / 64 : 1, Gr = G * pl->chunk;
    pd->A0 = (c0 + Gr - 1) / Gr * Gr;
    pd->A1 = c1 == lo->nb ? c1 : c1 / Gr * Gr;
    if (pd->A0 >= pd->A1) pd->A0 = pd->A1 = c1;
    pd->nhead = pd->A0 - c0;
    pd->nmid = (pd->A1 - pd->A0 + Gr - 1) / Gr;
    pd->ntail = c1 - pd->A1;
    pd->mid_level = (uint32_t)log2_sz(Gr);
    count = pd->nhead + pd->nmid + pd->ntail;
  }
  if (!(pd->vals = rcl__malloc(count * es))) return RCL_ERR_OUT_OF_MEMORY;
  rc = rcl__buffer_create(&pd->out, ctx, CL_MEM_READ_WRITE, count * es, NULL, "partial reduction values");
  for (size_t i = 0; pl->task && i < pd->nnodes && !rc; i++) {
    size_t a = (size_t)pd->nodes[i].index << pd->nodes[i].level, b = a + ((size_t)1 << pd->nodes[i].level);
    rc = launch_range(ch, pl, pl->W, pl->chunk, 1, pd, ctx, a, b < lo->nb ? b : lo->nb, i, x, xoff, y, yoff);
  }
  if (!pl->task) {
    size_t Ws = pl->W < 64 ? pl->W : 64;
    if (!rc) rc = launch_range(ch, pl, Ws, 1, pd->nhead, pd, ctx, c0, pd->A0, 0, x, xoff, y, yoff);
    if (!rc)
      rc = launch_range(ch, pl, pl->W, pl->chunk, pd->nmid, pd, ctx, pd->A0, pd->A1, pd->nhead, x, xoff, y, yoff);
    if (!rc) rc = launch_range(ch, pl, Ws, 1, pd->ntail, pd, ctx, pd->A1, c1, pd->nhead + pd->nmid, x, xoff, y, yoff);
  }
  return rc ? rc : read_into(pd, ch, pd->out, 0, count * es, pd->vals, "partial reduction values");
}

/* The launch plan for m elements under the caller's options. */
static int plan_for(rcl_red_plan *pl, rcl_context *ctx, const rcl_partial *p, size_t m,
                    const rcl_reduce_options *opts) {
  rcl_red_cfg cfg;
  int rc = rcl__reduce_resolve_cfg(&cfg, ctx, p->op, p->mode, p->dtype, m, opts);
  return rc ? rc : rcl__reduce_plan(pl, ctx, p->op, p->mode, p->dtype, m, &cfg);
}

static int begin_exact(rcl_red_pending *pd, rcl_chain *ch, rcl_context *ctx, cl_mem x, size_t xoff, cl_mem y,
                       size_t yoff, const rcl_reduce_options *opts) {
  const rcl_partial *p = pd->part;
  size_t D = (size_t)p->nd;
  rcl_red_plan pl;
  if (p->n == 0) return 0;
  int rc = plan_for(&pl, ctx, p, p->n, opts);
  if (rc) return rc;
  if (!(pd->xacc = rcl__calloc(D + 1, sizeof *pd->xacc))) rc = RCL_ERR_OUT_OF_MEMORY;
  if (!rc) rc = rcl__buffer_create(&pd->out, ctx, CL_MEM_READ_WRITE, (D + 1) * 8, NULL, "partial superaccumulator");
  if (!rc && pl.task) rc = rcl__buffer_create(&pd->flags_out, ctx, CL_MEM_READ_WRITE, 4, NULL, "partial flags");
  if (!rc)
    rc = rcl__reduce_enqueue_parts(ch, &pl, pd->out, 0, pd->flags_out, ctx, p->op, p->mode, p->dtype, p->n, x, xoff, y,
                                   yoff);
  if (!rc) rc = read_into(pd, ch, pd->out, 0, (pl.task ? D : D + 1) * 8, pd->xacc, "partial superaccumulator");
  if (!rc && pl.task) rc = read_into(pd, ch, pd->flags_out, 0, 4, &pd->xflags, "partial flags");
  pd->task = pl.task;
  rcl__reduce_plan_release(&pl);
  return rc;
}

int rcl__reduce_partial_begin(rcl_red_pending **out, rcl_context *ctx, rcl_reduce_op op, rcl_dtype dtype, size_t total,
                              size_t first, size_t n, cl_mem x, size_t xoff, cl_mem y, size_t yoff,
                              const rcl_reduce_options *opts, const rcl_queue_args *q) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "partial reduction: out is NULL");
  *out = NULL;
  int rc = rcl__reduce_validate_inputs(ctx, op, dtype, n, x, xoff, y, yoff, opts);
  rcl_red_pending *pd = rc ? NULL : rcl__calloc(1, sizeof *pd);
  if (rc || !pd) return rc ? rc : RCL_ERR_OUT_OF_MEMORY;
  rc = rcl__partial_new(&pd->part, op, dtype, opts ? opts->mode : RCL_REDUCE_ORDERED, total, first, n);
  rcl_queue_args qa = RCL_QUEUE_ARGS_INIT; /* the caller's queue and wait list; the reads give the events */
  if (q) qa = *q;
  qa.event = NULL;
  cl_command_queue queue;
  rcl_chain ch;
  if (!rc) rc = rcl__queue_of(&queue, ctx, &qa);
  if (rc) {
    pending_free(pd);
    return rc;
  }
  rcl__chain_begin(&ch, queue, &qa);
  if ((rc = rcl__chain_lazy(&ch, ctx, &qa)) == 0) {
    rcl__partial_layout(&pd->lo, total, first, n);
    if (pd->part->mode == RCL_REDUCE_EXACT) {
      rc = begin_exact(pd, &ch, ctx, x, xoff, y, yoff, opts);
    } else {
      rc = begin_frags(pd, &ch, x, xoff, y, yoff);
      rcl_red_plan pl;
      if (!rc && pd->lo.c1 > pd->lo.c0 &&
          !(rc = plan_for(&pl, ctx, pd->part, elems(pd->part, pd->lo.c0, pd->lo.c1), opts))) {
        pd->task = pl.task;
        rc = begin_nodes(pd, &ch, &pl, ctx, x, xoff, y, yoff);
        rcl__reduce_plan_release(&pl);
      }
    }
  }
  rc = rcl__chain_finish(&ch, NULL, rc);
  if (rc) pending_free(pd);
  *out = rc ? NULL : pd;
  return rc;
}

/* The ordered part from the values read back: head fragment, nodes, tail fragment. */
static int end_ordered(rcl_red_pending *pd) {
  rcl_partial *p = pd->part;
  const rcl_playout *lo = &pd->lo;
  size_t es = rcl_dtype_size(p->dtype), B = RCL_PART_B;
  const unsigned char *f = pd->frag, *v = pd->vals;
  int dot = p->op == RCL_OP_DOT, rc = 0;
  if (lo->head_count) rc = rcl__partial_take_elems(p, lo->head_start, lo->head_count, f, dot ? f + B * es : NULL);
  uint32_t K = 0;
  while (((size_t)1 << K) < lo->nb) K++;
  uint32_t ml = pd->mid_level < K ? pd->mid_level : K;
  uint64_t bits = 0;
  for (size_t i = 0; i < pd->nnodes && !rc; i++) {
    memcpy(&bits, v + i * es, es);
    rc = rcl__partial_take_node(p, pd->nodes[i].level, pd->nodes[i].index, bits);
  }
  for (size_t i = 0; !pd->task && i < pd->nhead + pd->nmid + pd->ntail && !rc; i++) {
    memcpy(&bits, v + i * es, es); /* little-endian host: the low bytes */
    if (i < pd->nhead)
      rc = rcl__partial_take_node(p, 0, lo->c0 + i, bits);
    else if (i < pd->nhead + pd->nmid)
      rc = rcl__partial_take_node(p, ml, (pd->A0 >> pd->mid_level) + (i - pd->nhead), bits);
    else
      rc = rcl__partial_take_node(p, 0, pd->A1 + (i - pd->nhead - pd->nmid), bits);
  }
  if (!rc && lo->tail_count)
    rc = rcl__partial_take_elems(p, lo->tail_start, lo->tail_count, f + 2 * B * es, dot ? f + 3 * B * es : NULL);
  return rc ? rc : rcl__partial_close(p);
}

int rcl__reduce_partial_end(rcl_partial **out, rcl_red_pending *pd) {
  if (!out || !pd) {
    pending_free(pd);
    return out ? rcl__fail(RCL_ERR_INVALID_ARG, "partial reduction: nothing pending") : 0;
  }
  *out = NULL;
  cl_int err = pd->nev ? clWaitForEvents((cl_uint)pd->nev, pd->ev) : CL_SUCCESS;
  int rc = err != CL_SUCCESS ? rcl__fail_cl(err, "clWaitForEvents(a partial reduction's reads)") : 0;
  rcl_partial *p = pd->part;
  if (!rc && p->mode == RCL_REDUCE_EXACT && pd->xacc) {
    memcpy(p->digits, pd->xacc, (size_t)p->nd * sizeof *p->digits);
    p->flags = pd->task ? pd->xflags : (uint32_t)pd->xacc[p->nd];
    rcl__xacc_normalize(p->digits, p->nd);
  } else if (!rc && p->mode == RCL_REDUCE_ORDERED) {
    rc = end_ordered(pd);
  }
  if (!rc) {
    *out = p;
    pd->part = NULL;
  }
  pending_free(pd);
  return rc;
}

int rcl_reduce_partial_enqueue(rcl_partial **out, rcl_context *ctx, rcl_reduce_op op, rcl_dtype dtype, size_t total,
                               size_t first, size_t n, cl_mem x, size_t xoff, cl_mem y, size_t yoff,
                               const rcl_reduce_options *opts, const rcl_queue_args *q) {
  rcl_red_pending *pd;
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_reduce_partial_enqueue: out is NULL");
  *out = NULL;
  int rc = rcl__reduce_partial_begin(&pd, ctx, op, dtype, total, first, n, x, xoff, y, yoff, opts, q);
  if (!rc) rc = rcl__reduce_partial_end(out, pd);
  if (!rc && q && q->event) { /* the part is on the host: a complete event */
    cl_int err;
    *q->event = clCreateUserEvent(ctx->cl_ctx, &err);
    if (err == CL_SUCCESS) err = clSetUserEventStatus(*q->event, CL_COMPLETE);
    if (err != CL_SUCCESS) {
      if (*q->event) clReleaseEvent(*q->event);
      *q->event = NULL;
      rcl_partial_free(*out);
      *out = NULL;
      return rcl__fail_cl(err, "clCreateUserEvent(the partial reduction's event)");
    }
  }
  return rc;
}

int rcl_reduce_partial(rcl_partial **out, rcl_context *ctx, rcl_reduce_op op, rcl_dtype dtype, size_t total,
                       size_t first, size_t n, const void *x, const void *y, const rcl_reduce_options *opts) {
  if (!out || !ctx) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_reduce_partial: NULL output or context");
  *out = NULL;
  size_t es = rcl_dtype_size(dtype);
  if (!es) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_reduce_partial: unknown dtype %d", (int)dtype);
  int rc = rcl__require_support(ctx, RCL_FAMILY_REDUCE, dtype);
  cl_mem bx = NULL, by = NULL;
  if (!rc) rc = rcl__reduce_upload(&bx, ctx, x, n, es, "x");
  if (!rc && op == RCL_OP_DOT) rc = rcl__reduce_upload(&by, ctx, y, n, es, "y");
  if (!rc) rc = rcl_reduce_partial_enqueue(out, ctx, op, dtype, total, first, n, bx, 0, by, 0, opts, NULL);
  if (bx) clReleaseMemObject(bx);
  if (by) clReleaseMemObject(by);
  return rc;
}
