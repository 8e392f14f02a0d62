/* queue_scratch.c — one small device buffer per (context, in-order queue) for the single-launch
 * reductions: a control block (the ticket that finds a launch's last work-group, the exact-mode flags
 * and digit sums) followed by room for partial results. Every such launch leaves the control block zero
 * again (its last work-group restores it), and the commands of an in-order queue never overlap, so one
 * buffer serves every call on that queue without a fill per call: the call costs one kernel launch.
 * Out-of-order queues get a fresh zeroed buffer per call instead. */
#include <string.h>

#include "internal.h"

struct rcl_queue_scratch {
  cl_command_queue queue; /* retained: its handle cannot be reused while the entry exists */
  cl_mem buf;
  size_t size;
  struct rcl_queue_scratch *next;
};

/* Queues remembered per context; calls on further queues get a buffer each (still correct, slower). */
#define QUEUE_SCRATCH_MAX_ENTRIES 64

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
  cl_command_queue_properties props = 0;
  cl_int err = clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
  if (err != CL_SUCCESS) return rcl__fail_cl(err, "clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)");
  if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) return create_zeroed(out, ctx, size);
  pthread_mutex_lock(&ctx->lock);
  struct rcl_queue_scratch *e = ctx->scratch;
  size_t entries = 0;
  for (; e && e->queue != queue; e = e->next) entries++;
  int rc = 0;
  if (!e && entries >= QUEUE_SCRATCH_MAX_ENTRIES) {
    pthread_mutex_unlock(&ctx->lock);
    return create_zeroed(out, ctx, size);
  }
  if (!e) {
    e = rcl__calloc(1, sizeof *e);
    if (!e) {
      pthread_mutex_unlock(&ctx->lock);
      return RCL_ERR_OUT_OF_MEMORY;
    }
    clRetainCommandQueue(queue);
    e->queue = queue;
    e->next = ctx->scratch;
    ctx->scratch = e;
  }
  if (e->size < size) {
    /* Grown, never shrunk. The old buffer lives on until the commands already enqueued with it finish;
     * commands enqueued from now on use the new one, zeroed before anyone can enqueue with it. */
    size_t want = e->size * 2 > size ? e->size * 2 : size;
    cl_mem nb;
    rc = create_zeroed(&nb, ctx, want);
    if (!rc) {
      if (e->buf) clReleaseMemObject(e->buf);
      e->buf = nb;
      e->size = want;
    }
  }
  if (!rc) {
    clRetainMemObject(e->buf);
    *out = e->buf;
  }
  pthread_mutex_unlock(&ctx->lock);
  return rc;
}

void rcl__queue_scratch_free(rcl_context *ctx) {
  struct rcl_queue_scratch *e = ctx->scratch;
  while (e) {
    struct rcl_queue_scratch *next = e->next;
    if (e->buf) clReleaseMemObject(e->buf);
    clReleaseCommandQueue(e->queue);
    rcl__free(e);
    e = next;
  }
  ctx->scratch = NULL;
}
