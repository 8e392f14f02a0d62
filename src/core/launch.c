/* Launch plumbing shared by every kernel family: argument setting, the caller's queue and event chain,
 * buffer checks, and the support check against the device profile. */
#include <time.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "core/alloc.h"
#include "core/launch.h"

int rcl__set_args(cl_kernel k, const char *name, unsigned int nargs, ...) {
  va_list ap;
  va_start(ap, nargs);
  int rc = 0;
  for (unsigned int i = 0; i < nargs && rc == 0; i++) {
    size_t size = va_arg(ap, size_t);
    const void *val = va_arg(ap, const void *);
    cl_int err = clSetKernelArg(k, i, size, val);
    if (err != CL_SUCCESS) rc = rcl__fail_cl(err, "clSetKernelArg(%s, arg %u, %zu bytes)", name, i, size);
  }
  va_end(ap);
  return rc;
}

int rcl__queue_of(cl_command_queue *out, const rcl_context *ctx, const rcl_queue_args *q) {
  if (q && q->version != RCL_QUEUE_ARGS_VERSION)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_queue_args.version is %u, expected %u (use RCL_QUEUE_ARGS_INIT)",
                     q->version, RCL_QUEUE_ARGS_VERSION);
  if (q && q->num_events_in_wait_list > 0 && !q->event_wait_list)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_queue_args: %u wait events but a NULL list", q->num_events_in_wait_list);
  *out = (q && q->queue) ? q->queue : ctx->queue;
  if (!*out)
    return rcl__fail(RCL_ERR_INVALID_ARG, "no command queue: the context was wrapped without one and none was passed");
  return 0;
}

void rcl__chain_begin(rcl_chain *c, cl_command_queue queue, const rcl_queue_args *q) {
  c->queue = queue;
  c->nwait = q ? q->num_events_in_wait_list : 0;
  c->wait = q ? q->event_wait_list : NULL;
  c->last = NULL;
  c->lazy = 0;
  c->pending = 0;
  c->sub = NULL;
}

/* The tuner's capture of this thread (launch.h), or NULL. */
static _Thread_local rcl_capture *tl_capture;

void rcl__capture_begin(rcl_capture *c) {
  c->first = c->last = NULL;
  c->count = 0;
  tl_capture = c;
}

void rcl__capture_end(rcl_capture *c) {
  if (tl_capture == c) tl_capture = NULL;
}

void rcl__capture_release(rcl_capture *c) {
  if (c->first) clReleaseEvent(c->first);
  if (c->last) clReleaseEvent(c->last);
  c->first = c->last = NULL;
  c->count = 0;
}

/* After an enqueue: the new event becomes the one the next command waits on. A lazy chain's commands
 * have none (ev NULL): later ones follow by the queue's order, and the chain notes that it has work in
 * flight. */
static void chain_follow(rcl_chain *c, cl_event ev) {
  if (!ev) {
    c->pending = 1;
    c->nwait = 0;
    c->wait = NULL;
    return;
  }
  if (c->last) clReleaseEvent(c->last);
  c->last = ev;
  c->nwait = 1;
  c->wait = &c->last;
}

/* The same for a launch of the chain's own, which a running tuner capture also counts. */
static void chain_advance(rcl_chain *c, cl_event ev) {
  if (ev && tl_capture) {
    if (!tl_capture->first && clRetainEvent(ev) == CL_SUCCESS) tl_capture->first = ev;
    if (clRetainEvent(ev) == CL_SUCCESS) {
      if (tl_capture->last) clReleaseEvent(tl_capture->last);
      tl_capture->last = ev;
    }
    tl_capture->count++;
  }
  chain_follow(c, ev);
}

/* After a blocking transfer that waited on the chain: everything the chain enqueued has finished. */
static void chain_drained(rcl_chain *c) {
  if (c->last) clReleaseEvent(c->last);
  c->last = NULL;
  c->nwait = 0;
  c->wait = NULL;
  c->pending = 0;
}

int rcl__queue_in_order(int *out, rcl_context *ctx, cl_command_queue queue) {
  int own = queue == ctx->queue;
  if (own) {
    pthread_mutex_lock(&ctx->lock);
    *out = ctx->queue_in_order;
    pthread_mutex_unlock(&ctx->lock);
    if (*out >= 0) return 0;
  }
  cl_command_queue_properties props = 0;
  cl_int err = clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
  if (err != CL_SUCCESS) return rcl__fail_cl(err, "clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)");
  *out = (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) == 0;
  if (own) { /* a queue's properties do not change */
    pthread_mutex_lock(&ctx->lock);
    ctx->queue_in_order = *out;
    pthread_mutex_unlock(&ctx->lock);
  }
  return 0;
}

int rcl__chain_lazy(rcl_chain *c, rcl_context *ctx, const rcl_queue_args *q) {
  int in_order;
  if ((q && q->event) || tl_capture) return 0; /* a capture spans whole calls: decided once per chain */
  int rc = rcl__queue_in_order(&in_order, ctx, c->queue);
  if (!rc) c->lazy = in_order;
  return rc;
}

void rcl__chain_abort(rcl_chain *c) {
  if (c->last) {
    clWaitForEvents(1, &c->last);
    clReleaseEvent(c->last);
    c->last = NULL;
  } else if (c->pending) {
    clFinish(c->queue); /* no event to wait on: the queue's earlier commands are waited for too */
  }
  c->pending = 0;
}

int rcl__chain_finish(rcl_chain *c, const rcl_queue_args *q, int rc) {
  if (!rc && !c->last && q && q->event) { /* nothing enqueued: the caller's event follows its wait list */
    cl_event ev = NULL;
    cl_int err = clEnqueueMarkerWithWaitList(c->queue, c->nwait, c->wait, &ev);
    if (err != CL_SUCCESS) rc = rcl__fail_cl(err, "clEnqueueMarkerWithWaitList");
    c->last = ev;
  }
  if (rc) {
    rcl__chain_abort(c); /* nothing of a failed call may run on after it returns */
    if (q && q->event) *q->event = NULL;
    return rc;
  }
  rcl__chain_end(c, q);
  return 0;
}

int rcl__chain_kernel(rcl_chain *c, cl_kernel k, const char *name, size_t global, size_t local) {
  return rcl__chain_kernel_nd(c, k, name, 1, &global, local ? &local : NULL);
}

int rcl__chain_kernel_nd(rcl_chain *c, cl_kernel k, const char *name, cl_uint dims, const size_t *global,
                         const size_t *local) {
  cl_event ev = NULL;
  cl_int err = clEnqueueNDRangeKernel(c->queue, k, dims, NULL, global, local, c->nwait, c->wait, c->lazy ? NULL : &ev);
  if (err != CL_SUCCESS) {
    if (dims == 1)
      return rcl__fail_cl(err, "clEnqueueNDRangeKernel(%s, global %zu, local %zu)", name, global[0],
                          local ? local[0] : 0);
    return rcl__fail_cl(err, "clEnqueueNDRangeKernel(%s, global %zux%zu, local %zux%zu)", name, global[0], global[1],
                        local ? local[0] : 0, local ? local[1] : 0);
  }
  chain_advance(c, ev);
  return 0;
}

int rcl__chain_fill(rcl_chain *c, cl_mem buf, const void *pattern, size_t pattern_size, size_t offset, size_t size) {
  cl_event ev = NULL;
  cl_int err =
      clEnqueueFillBuffer(c->queue, buf, pattern, pattern_size, offset, size, c->nwait, c->wait, c->lazy ? NULL : &ev);
  if (err != CL_SUCCESS) return rcl__fail_cl(err, "clEnqueueFillBuffer(%zu bytes at %zu)", size, offset);
  chain_advance(c, ev);
  return 0;
}

int rcl__chain_host(rcl_chain *c, rcl_context *ctx) {
  if (!ctx->queue) return rcl__fail(RCL_ERR_INVALID_ARG, "the context has no queue (wrapped without one)");
  rcl__chain_begin(c, ctx->queue, NULL);
  return rcl__chain_lazy(c, ctx, NULL);
}

rcl_queue_args rcl__chain_args(rcl_chain *c) {
  rcl_queue_args qa = RCL_QUEUE_ARGS_INIT;
  qa.queue = c->queue;
  qa.num_events_in_wait_list = c->nwait;
  qa.event_wait_list = c->nwait ? c->wait : NULL;
  c->sub = NULL;
  qa.event = c->lazy ? NULL : &c->sub;
  return qa;
}

int rcl__chain_adopt(rcl_chain *c, int rc) {
  cl_event ev = c->sub;
  c->sub = NULL;
  if (ev || (!rc && c->lazy)) chain_follow(c, ev); /* a failed call has waited for its own commands */
  return rc;
}

int rcl__chain_read(rcl_chain *c, cl_mem buf, size_t offset, size_t bytes, void *dst, cl_event *done,
                    const char *what) {
  cl_event ev = NULL;
  cl_int err = clEnqueueReadBuffer(c->queue, buf, done ? CL_FALSE : CL_TRUE, offset, bytes, dst, c->nwait, c->wait,
                                   done ? &ev : NULL);
  if (err != CL_SUCCESS) return rcl__fail_cl(err, "clEnqueueReadBuffer(%s, %zu bytes at %zu)", what, bytes, offset);
  if (!done) {
    chain_drained(c); /* the read finished, so did every command it waited on */
    return 0;
  }
  *done = ev;
  if (!c->lazy) clRetainEvent(ev); /* one reference for the caller, one for the chain */
  chain_follow(c, c->lazy ? NULL : ev);
  return 0;
}

int rcl__chain_write(rcl_chain *c, cl_mem buf, size_t offset, size_t bytes, const void *src, const char *what) {
  cl_event ev = NULL; /* a blocking write may return before the device has the data: later commands wait */
  cl_int err =
      clEnqueueWriteBuffer(c->queue, buf, CL_TRUE, offset, bytes, src, c->nwait, c->wait, c->lazy ? NULL : &ev);
  if (err != CL_SUCCESS) return rcl__fail_cl(err, "clEnqueueWriteBuffer(%s, %zu bytes at %zu)", what, bytes, offset);
  chain_follow(c, ev);
  return 0;
}

void rcl__chain_end(rcl_chain *c, const rcl_queue_args *q) {
  if (q && q->event) {
    *q->event = c->last;
  } else if (c->last) {
    clReleaseEvent(c->last);
  }
  c->last = NULL;
}

int rcl__check_buffer(cl_mem buf, size_t need, const char *what) {
  if (!buf) return rcl__fail(RCL_ERR_INVALID_ARG, "%s: NULL cl_mem", what);
  size_t have = 0;
  cl_int err = clGetMemObjectInfo(buf, CL_MEM_SIZE, sizeof have, &have, NULL);
  if (err != CL_SUCCESS) return rcl__fail_cl(err, "%s: clGetMemObjectInfo(CL_MEM_SIZE)", what);
  if (have < need)
    return rcl__fail(RCL_ERR_INVALID_ARG, "%s: buffer holds %zu bytes, the call needs %zu", what, have, need);
  return 0;
}

int rcl__buffer_copy(cl_mem *out, rcl_context *ctx, cl_mem_flags flags, const void *data, size_t size,
                     const char *what) {
  return rcl__buffer_create(out, ctx, flags | CL_MEM_COPY_HOST_PTR, size, (void *)(uintptr_t)data, what);
}

int rcl__buffer_create(cl_mem *out, rcl_context *ctx, cl_mem_flags flags, size_t size, void *host, const char *what) {
  *out = NULL;
  if (size > ctx->profile.max_mem_alloc_size)
    return rcl__fail(RCL_ERR_UNSUPPORTED,
                     "%s needs a %zu-byte buffer, above %s's CL_DEVICE_MAX_MEM_ALLOC_SIZE of %llu bytes", what, size,
                     ctx->profile.device_name, (unsigned long long)ctx->profile.max_mem_alloc_size);
  cl_int err;
  *out = clCreateBuffer(ctx->cl_ctx, flags, size ? size : 1, host, &err);
  if (!*out) return rcl__fail_cl(err, "clCreateBuffer(%s, %zu bytes)", what, size);
  return 0;
}

int rcl__require_support(const rcl_context *ctx, rcl_family family, rcl_dtype dtype) {
  if (rcl_dtype_size(dtype) == 0) return rcl__fail(RCL_ERR_INVALID_ARG, "unknown dtype %d", (int)dtype);
  const char *why;
  if (rcl_device_profile_support(&ctx->profile, family, dtype, &why) == RCL_SUPPORT_NONE)
    return rcl__fail(RCL_ERR_UNSUPPORTED, "%s %s kernels cannot run bit-exactly on %s: %s", rcl_family_name(family),
                     rcl_dtype_name(dtype), ctx->profile.device_name, why);
  return 0;
}

size_t rcl__loop_budget(const rcl_context *ctx) {
  cl_ulong lim = ctx->profile.loop_iteration_limit;
  return lim ? (size_t)(lim / 2) : SIZE_MAX;
}

int rcl__is_pow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

size_t rcl__floor_pow2(size_t x) {
  size_t p = 1;
  while (p <= x / 2) p *= 2;
  return p;
}

int rcl__kernel_wg_max(size_t *out, cl_kernel k, const rcl_context *ctx, const char *name) {
  cl_int err = clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof *out, out, NULL);
  if (err != CL_SUCCESS) return rcl__fail_cl(err, "clGetKernelWorkGroupInfo(%s, CL_KERNEL_WORK_GROUP_SIZE)", name);
  return 0;
}

double rcl__now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
