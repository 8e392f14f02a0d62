/* queue_scratch.c — the small device buffer of the single-launch reductions: a control block (the ticket
 * that finds a launch's last work-group, the exact-mode flags and digit sums) followed by room for
 * partial results. Every such launch leaves the control block zero again (its last work-group restores
 * it), and the commands of an in-order queue never overlap, so one buffer serves every call on the
 * context's own queue without a fill per call: the call costs one kernel launch. That queue is the
 * context's (it holds a reference for its lifetime). A caller's queue, or an out-of-order one, gets a
 * fresh zeroed buffer per call: keeping one per foreign queue would mean holding that queue (and a
 * driver's thread behind it) alive until the context is freed, or reusing a buffer by a handle the
 * caller may have released and the driver reissued. */
#include <string.h>

#include "core/alloc.h"
#include "core/launch.h"
#include "core/scratch.h"

/* A buffer of size bytes whose contents start zero (copied from zeroed host memory at creation). */
static int create_zeroed(cl_mem *out, rcl_context *ctx, size_t size) {
  void *zeros = rcl__calloc(1, size);
  if (!zeros) return RCL_ERR_OUT_OF_MEMORY;
  int rc = rcl__buffer_create(out, ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, size, zeros, "reduction scratch");
  rcl__free(zeros);
  return rc;
}

int rcl__queue_scratch(cl_mem *out, rcl_context *ctx, cl_command_queue queue, size_t size) {
  *out = NULL;
  int in_order = 0;
  int rc = queue == ctx->queue ? rcl__queue_in_order(&in_order, ctx, queue) : 0;
  if (rc) return rc;
  if (!in_order) return create_zeroed(out, ctx, size); /* another queue, or commands that may overlap */
  pthread_mutex_lock(&ctx->lock);
  if (ctx->scratch_size < size) {
    /* Grown, never shrunk. The old buffer lives on until the commands already enqueued with it finish;
     * commands enqueued from now on use the new one, zeroed before anyone can enqueue with it. */
    size_t want = ctx->scratch_size * 2 > size ? ctx->scratch_size * 2 : size;
    cl_mem nb;
    rc = create_zeroed(&nb, ctx, want);
    if (!rc) {
      if (ctx->scratch) clReleaseMemObject(ctx->scratch);
      ctx->scratch = nb;
      ctx->scratch_size = want;
    }
  }
  if (!rc) {
    clRetainMemObject(ctx->scratch);
    *out = ctx->scratch;
  }
  pthread_mutex_unlock(&ctx->lock);
  return rc;
}

void rcl__queue_scratch_free(rcl_context *ctx) {
  if (ctx->scratch) clReleaseMemObject(ctx->scratch);
  ctx->scratch = NULL;
  ctx->scratch_size = 0;
}
