/* Launching (launch.c): kernel arguments, chains of enqueues, buffers, support checks, and the tuner's timing capture.
 * Not installed. */
#ifndef REPROCL_CORE_LAUNCH_H
#define REPROCL_CORE_LAUNCH_H
#include "core/context.h"

/* Sets kernel arguments from a list of (size, pointer) pairs; names the kernel and index on failure. */
RCL_INTERNAL int rcl__set_args(cl_kernel k, const char *name, unsigned int nargs, ...);
/* The queue of a call: q->queue, else the context's. Fails clearly when neither exists. */
RCL_INTERNAL int rcl__queue_of(cl_command_queue *out, const rcl_context *ctx, const rcl_queue_args *q);
/* A chain of enqueues on one queue: the first waits on the caller's list, each later one on the
 * previous, so the chain is ordered on out-of-order queues too; the last event is handed to the
 * caller (q->event) or released. A lazy chain (rcl__chain_lazy) asks for no events at all. */
typedef struct {
  cl_command_queue queue;
  cl_uint nwait;
  const cl_event *wait;
  cl_event last;
  int lazy;     /* in-order queue, no event wanted: commands are enqueued without events */
  int pending;  /* a lazy chain enqueued something (it has no event to wait on) */
  cl_event sub; /* the event of an enqueue-form call made with rcl__chain_args */
} rcl_chain;
RCL_INTERNAL void rcl__chain_begin(rcl_chain *c, cl_command_queue queue, const rcl_queue_args *q);
/* Makes the chain lazy where that is safe: its queue is in order, the caller wants no event and no
 * tuner capture is running. Then no command gets an event, since the queue's order is the chain's
 * order. Why: on NVIDIA's OpenCL an event costs about 8 µs per launch (docs/performance.md), which a
 * reduction of 2^26 elements (about 100 µs) notices. */
RCL_INTERNAL int rcl__chain_lazy(rcl_chain *c, rcl_context *ctx, const rcl_queue_args *q);
/* After a failed call: waits until nothing the chain enqueued can still run, and drops its event. */
RCL_INTERNAL void rcl__chain_abort(rcl_chain *c);
/* Ends an enqueue call with status rc: on failure aborts the chain (q->event NULL) and returns rc; on
 * success hands the last event to q->event, a marker on the caller's wait list where the call enqueued
 * nothing, and returns 0 (or the marker's failure). */
RCL_INTERNAL int rcl__chain_finish(rcl_chain *c, const rcl_queue_args *q, int rc);
/* Whether a queue executes in order (the context's queue is asked once and remembered). */
RCL_INTERNAL int rcl__queue_in_order(int *out, rcl_context *ctx, cl_command_queue queue);
RCL_INTERNAL int rcl__chain_kernel(rcl_chain *c, cl_kernel k, const char *name, size_t global, size_t local);
/* The same for a 1-, 2- or 3-dimensional range (local may be NULL: the driver picks). */
RCL_INTERNAL int rcl__chain_kernel_nd(rcl_chain *c, cl_kernel k, const char *name, cl_uint dims, const size_t *global,
                                      const size_t *local);
RCL_INTERNAL int rcl__chain_fill(rcl_chain *c, cl_mem buf, const void *pattern, size_t pattern_size, size_t offset,
                                 size_t size);
/* Finishes the chain: hands the last event to q->event or releases it. */
RCL_INTERNAL void rcl__chain_end(rcl_chain *c, const rcl_queue_args *q);
/* Host-array forms run their device work as one chain on the context's queue: rcl__chain_host begins
 * it (lazy where the queue is in order), each enqueue-form call takes the queue arguments of
 * rcl__chain_args (it waits on the chain and, unless the chain is lazy, hands its event back into it)
 * and passes its status through rcl__chain_adopt, transfers go through rcl__chain_read /
 * rcl__chain_write, and rcl__chain_finish(c, NULL, rc) ends it. So an out-of-order queue runs them in
 * order, and an in-order one without events:
 *   rcl_queue_args qa = rcl__chain_args(&ch);
 *   rc = rcl__chain_adopt(&ch, rcl_x_enqueue(..., &qa)); */
RCL_INTERNAL int rcl__chain_host(rcl_chain *c, rcl_context *ctx);
RCL_INTERNAL rcl_queue_args rcl__chain_args(rcl_chain *c);
/* After a call given rcl__chain_args: its event becomes the chain's last; returns its status rc. */
RCL_INTERNAL int rcl__chain_adopt(rcl_chain *c, int rc);
/* Reads after the chain's commands: blocking where done is NULL, else without blocking, with *done the
 * read's event for the caller to wait on and release (later commands of the chain follow the read). */
RCL_INTERNAL int rcl__chain_read(rcl_chain *c, cl_mem buf, size_t offset, size_t bytes, void *dst, cl_event *done,
                                 const char *what);
/* A blocking write (src may be reused on return) after the chain's commands; later ones follow it. */
RCL_INTERNAL int rcl__chain_write(rcl_chain *c, cl_mem buf, size_t offset, size_t bytes, const void *src,
                                  const char *what);
/* Checks that a cl_mem holds at least `need` bytes; names the argument. */
RCL_INTERNAL int rcl__check_buffer(cl_mem buf, size_t need, const char *what);
/* Creates a device buffer, refusing sizes above CL_DEVICE_MAX_MEM_ALLOC_SIZE before allocating. */
RCL_INTERNAL int rcl__buffer_create(cl_mem *out, rcl_context *ctx, cl_mem_flags flags, size_t size, void *host,
                                    const char *what);
/* The same holding a copy of size bytes of host data (CL_MEM_COPY_HOST_PTR added to flags). */
RCL_INTERNAL int rcl__buffer_copy(cl_mem *out, rcl_context *ctx, cl_mem_flags flags, const void *data, size_t size,
                                  const char *what);
/* Whether the family can run on the context's device for dtype; RCL_ERR_UNSUPPORTED with the reason. */
RCL_INTERNAL int rcl__require_support(const rcl_context *ctx, rcl_family family, rcl_dtype dtype);
/* CL_KERNEL_WORK_GROUP_SIZE of a kernel on the context's device. */
RCL_INTERNAL int rcl__kernel_wg_max(size_t *out, cl_kernel k, const rcl_context *ctx, const char *name);
/* Loop iterations a kernel may plan per work-item on this device: half the driver's loop limit (the
 * other half is left for the kernel's fixed loops), or SIZE_MAX where there is none. */
RCL_INTERNAL size_t rcl__loop_budget(const rcl_context *ctx);
RCL_INTERNAL int rcl__is_pow2(size_t x);
/* Largest power of two <= x (x >= 1). */
RCL_INTERNAL size_t rcl__floor_pow2(size_t x);

/* ---- timing capture ---------------------------------------------------------------------------- */
/* While a capture is active on a thread, rcl__chain_kernel/_fill retain the first and last event they
 * create, so the tuner can time a whole multi-launch operation from its first start to its last end. */
typedef struct {
  cl_event first, last;
  unsigned count;
} rcl_capture;
RCL_INTERNAL void rcl__capture_begin(rcl_capture *c);
RCL_INTERNAL void rcl__capture_end(rcl_capture *c); /* stops capturing; c keeps its events */
RCL_INTERNAL void rcl__capture_release(rcl_capture *c);

/* Seconds on the monotonic clock (for measurements: tuning, split weights). */
RCL_INTERNAL double rcl__now_s(void);

#endif
