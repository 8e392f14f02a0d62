/* Internal declarations shared by reprocl's modules. Not installed. */
#ifndef REPROCL_INTERNAL_H
#define REPROCL_INTERNAL_H
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "reprocl/reprocl.h"

#define RCL_INTERNAL __attribute__((visibility("hidden")))
#define RCL_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* ---- errors (error.c) ------------------------------------------------------------------------- */
/* Sets this thread's error message and returns status, so call sites read `return rcl__fail(...)`. */
RCL_INTERNAL int rcl__fail(int status, const char *fmt, ...) RCL_PRINTF(2, 3);
/* An OpenCL failure: "what: CL_ERROR_NAME (code)". */
RCL_INTERNAL int rcl__fail_cl(cl_int err, const char *what, ...) RCL_PRINTF(2, 3);
/* Appends to the current message (e.g. a build log after the headline). */
RCL_INTERNAL void rcl__error_append(const char *fmt, ...) RCL_PRINTF(1, 2);

/* ---- allocation (alloc.c): every host allocation goes through these, so the failing-allocator test
 * mode can make each one fail in turn. They set the error message on failure. */
RCL_INTERNAL void *rcl__malloc(size_t size);
RCL_INTERNAL void *rcl__calloc(size_t n, size_t size);
RCL_INTERNAL void *rcl__realloc(void *p, size_t size);
RCL_INTERNAL char *rcl__strdup(const char *s);
RCL_INTERNAL void rcl__free(void *p);
/* Test hooks of the failing-allocator mode (tests/test_failalloc.c): from now on the n-th allocation
 * fails (n = 0: none, only counted; n < 0: off); the allocations counted since; the blocks allocated
 * through these wrappers and not yet freed. */
RCL_INTERNAL void rcl__alloc_fail_at(long n);
RCL_INTERNAL long rcl__alloc_count(void);
RCL_INTERNAL long rcl__alloc_live(void);
/* Overflow-checked n*size; sets RCL_ERR_OVERFLOW naming what. */
RCL_INTERNAL int rcl__mul_size(size_t *out, size_t n, size_t size, const char *what);

/* ---- kernel sources (kernel_source.c) ---------------------------------------------------------- */
typedef struct {
  const char *name;
  const char *text;
  size_t size;
} rcl_embedded_source;
extern const rcl_embedded_source rcl_embedded_sources[]; /* generated; NULL-terminated */

/* The text of cl/<name>: embedded, or read from $REPROCL_KERNEL_DIR/<name> when that is set.
 * *text is owned by the caller (rcl__free). */
RCL_INTERNAL int rcl__kernel_source(char **text, size_t *size, const char *name);

/* ---- context (context.c) ---------------------------------------------------------------------- */
typedef struct rcl_program_entry rcl_program_entry;
/* A created kernel with what it was made from: taken from and given back to the pool (program.c). */
#define RCL_KERNEL_POOL_MAX 48
typedef struct {
  cl_kernel kernel;
  cl_program program;
  char name[64];
} rcl_kernel_slot;

struct rcl_context {
  cl_context cl_ctx;
  cl_device_id device;
  cl_command_queue queue; /* may be NULL for a wrapped context without one */
  rcl_device_profile profile;
  rcl_mode mode;
  int own_objects;
  rcl_tuning_mode tuning;
  char *cache_dir;
  pthread_mutex_t lock; /* guards programs and scratch */
  rcl_program_entry *programs;
  cl_mem scratch; /* the reductions' control buffer for the context's queue (queue_scratch.c) */
  size_t scratch_size;
  int queue_in_order;                               /* whether that queue is in-order; -1 until asked */
  rcl_kernel_slot kernel_pool[RCL_KERNEL_POOL_MAX]; /* kernels given back for reuse (program.c) */
  size_t kernel_pool_size;
  struct rcl_tune_ctx *tune;     /* tuning choices, cache state and statistics (tune.c) */
  struct rcl_selftest *selftest; /* first-use self-test verdicts per family and dtype (selftest.c) */
};

/* ---- programs (program.c) --------------------------------------------------------------------- */
/* The built program of reprocl's own cl/<file> for dtype in the context's mode (cached per context).
 * extra_defines may add "-DNAME=VALUE ..." for variants. The program is owned by the context. */
RCL_INTERNAL int rcl__program_get(cl_program *out, rcl_context *ctx, const char *file, rcl_dtype dtype,
                                  const char *extra_defines);
/* Creates a kernel of a library program. */
RCL_INTERNAL int rcl__kernel_get(cl_kernel *out, rcl_context *ctx, const char *file, rcl_dtype dtype,
                                 const char *extra_defines, const char *kernel);
/* The same from the context's pool of given-back kernels when one is there (no clCreateKernel), with
 * its program and name; give it back with rcl__kernel_give after enqueueing (also on failure). */
RCL_INTERNAL int rcl__kernel_take(rcl_kernel_slot *out, rcl_context *ctx, const char *file, rcl_dtype dtype,
                                  const char *extra_defines, const char *kernel);
RCL_INTERNAL void rcl__kernel_give(rcl_context *ctx, rcl_kernel_slot *s);
/* Releases the pool and the programs. */
RCL_INTERNAL void rcl__programs_free(rcl_context *ctx);
/* The device-dependent policy defines and options for a build in the context's mode. */
RCL_INTERNAL int rcl__policy_options(char *buf, size_t size, const rcl_context *ctx, rcl_dtype dtype, int have_dtype);

/* ---- first-use self-test (selftest.c, docs/selftest.md) ------------------------------------------- */
RCL_INTERNAL int rcl__selftest_create(rcl_context *ctx);
RCL_INTERNAL void rcl__selftest_free(rcl_context *ctx);
/* Gate of rcl__program_get for reprocl's own cl/<file>: the first time the file's family runs for dtype
 * on the context, its self-test runs (or its verdict comes from the cache). 0 with *conservative set
 * when the family must use the conservative build; RCL_ERR_UNSUPPORTED with the reason when neither
 * build passed; another error when the self-test could not run (nothing is cached then). */
RCL_INTERNAL int rcl__selftest_gate(int *conservative, rcl_context *ctx, const char *file, rcl_dtype dtype);
/* The extra build options of the conservative build. */
#define RCL_CONSERVATIVE_OPTIONS "-cl-opt-disable -DRCL_CONSERVATIVE=1"
/* SHA-256 (hex) of the environment variables that change drivers' code generation (sorted NAME=VALUE of
 * the prefixes listed in device_profile.c and docs/tuning.md), or "" when none is set: part of the keys
 * of the binary cache, the tuning cache and the self-test verdicts. */
RCL_INTERNAL void rcl__codegen_env(char hex[65]);

/* ---- reduction scratch (queue_scratch.c) -------------------------------------------------------------- */
/* A device buffer of at least size bytes for one call on queue, zero where the kernels that use it leave
 * it zero: the single-launch reductions' control block. The context's own queue, when in-order, reuses
 * one (its kernels never overlap); any other queue gets a new zeroed one. *out is the caller's reference
 * (release it after enqueueing). */
RCL_INTERNAL int rcl__queue_scratch(cl_mem *out, rcl_context *ctx, cl_command_queue queue, size_t size);
RCL_INTERNAL void rcl__queue_scratch_free(rcl_context *ctx);

/* ---- launching (launch.c) --------------------------------------------------------------------- */
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

#endif
