/* rcl_context: one device with its OpenCL context and queue (created here or the caller's), its
 * profile, and the programs built for it. Creating one wires the layers' state into it: the caches'
 * state (build/cache_state.c), the tuner's (with the table of every family's kernels) and the first-use
 * self-test, installed as the gate of every program build. The structure and its plain accessors are
 * core's (core/context.c). Every context holds one reference on each OpenCL object it
 * uses and releases it in rcl_context_free(). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "build/cache_state.h"
#include "build/program.h"
#include "context/registry.h"
#include "context/selftest_internal.h"
#include "core/alloc.h"
#include "core/profile.h"
#include "core/scratch.h"
#include "tune/tune.h"

static int options_ok(const rcl_context_options *opts) {
  if (opts && opts->version != RCL_CONTEXT_OPTIONS_VERSION)
    return rcl__fail(RCL_ERR_INVALID_ARG,
                     "rcl_context_options.version is %u, expected %u (use RCL_CONTEXT_OPTIONS_INIT)", opts->version,
                     RCL_CONTEXT_OPTIONS_VERSION);
  if (opts && opts->mode != RCL_MODE_REPRODUCIBLE && opts->mode != RCL_MODE_NATIVE)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_context_options.mode %d is neither reproducible nor native",
                     (int)opts->mode);
  if (opts && (unsigned)opts->tuning > RCL_TUNING_FORCE)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_context_options.tuning %d is not an rcl_tuning_mode", (int)opts->tuning);
  return 0;
}

static int resolve_tuning(rcl_tuning_mode *out, rcl_tuning_mode requested) {
  if (requested != RCL_TUNING_ENV) {
    *out = requested;
    return 0;
  }
  const char *e = getenv("REPROCL_TUNING");
  if (!e || !*e || !strcasecmp(e, "on"))
    *out = RCL_TUNING_ON;
  else if (!strcasecmp(e, "off"))
    *out = RCL_TUNING_OFF;
  else if (!strcasecmp(e, "force"))
    *out = RCL_TUNING_FORCE;
  else
    return rcl__fail(RCL_ERR_INVALID_ARG, "REPROCL_TUNING=\"%s\": expected on, off or force", e);
  return 0;
}

/* Allocates a context around objects already retained for it; on failure releases them. The device is
 * retained too: a sub-device is reference-counted, and some drivers' contexts do not keep theirs (PoCL 3.1
 * lists the parent as the context's device); for a root device retaining does nothing. */
static int context_new(rcl_context **out, cl_context c, cl_device_id d, cl_command_queue q,
                       const rcl_context_options *opts) {
  clRetainDevice(d);
  rcl_context *ctx = rcl__calloc(1, sizeof *ctx);
  int rc = ctx ? 0 : RCL_ERR_OUT_OF_MEMORY;
  if (!rc) {
    ctx->cl_ctx = c;
    ctx->device = d;
    ctx->queue = q;
    ctx->queue_in_order = -1;
    ctx->mode = opts ? opts->mode : RCL_MODE_REPRODUCIBLE;
    rc = resolve_tuning(&ctx->tuning, opts ? opts->tuning : RCL_TUNING_ENV);
  }
  if (!rc && opts && opts->cache_dir) {
    ctx->cache_dir = rcl__strdup(opts->cache_dir);
    if (!ctx->cache_dir) rc = RCL_ERR_OUT_OF_MEMORY;
  }
  if (!rc) rc = rcl_device_profile_query(&ctx->profile, d);
  if (!rc && pthread_mutex_init(&ctx->lock, NULL) != 0)
    rc = rcl__fail(RCL_ERR_INTERNAL, "pthread_mutex_init failed");
  else if (!rc && (rc = rcl__cache_state_create(ctx, ctx->cache_dir)) != 0)
    pthread_mutex_destroy(&ctx->lock);
  else if (!rc && (rc = rcl__tune_ctx_create(ctx, rcl__tune_kernels)) != 0) {
    rcl__cache_state_free(ctx);
    pthread_mutex_destroy(&ctx->lock);
  } else if (!rc && (rc = rcl__selftest_create(ctx)) != 0) {
    rcl__tune_ctx_free(ctx);
    rcl__cache_state_free(ctx);
    pthread_mutex_destroy(&ctx->lock);
  }
  /* Every build of reprocl's own programs passes the first-use self-test (selftest.c). */
  if (!rc) ctx->gate = rcl__selftest_gate;
  if (rc) {
    if (ctx) rcl__free(ctx->cache_dir);
    rcl__free(ctx);
    if (q) clReleaseCommandQueue(q);
    clReleaseContext(c);
    clReleaseDevice(d);
    return rc;
  }
  *out = ctx;
  return 0;
}

int rcl_context_create(rcl_context **out, const rcl_context_options *opts) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_context_create: NULL output");
  *out = NULL;
  int rc = options_ok(opts);
  if (rc) return rc;
  rcl_device_info di;
  rc = rcl_device_find(&di, opts ? opts->device : NULL);
  if (rc) return rc;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)di.platform, 0};
  cl_int err;
  cl_context c = clCreateContext(props, 1, &di.device, NULL, NULL, &err);
  if (!c) return rcl__fail_cl(err, "clCreateContext on %s", di.device_name);
  cl_command_queue_properties qp = (!opts || opts->profiling) ? CL_QUEUE_PROFILING_ENABLE : 0;
  /* clCreateCommandQueue is deprecated in OpenCL 2.0 but is the one call every 1.2+ ICD has. */
  cl_command_queue q = clCreateCommandQueue(c, di.device, qp, &err);
  if (!q) {
    clReleaseContext(c);
    return rcl__fail_cl(err, "clCreateCommandQueue on %s", di.device_name);
  }
  return context_new(out, c, di.device, q, opts);
}

int rcl_context_wrap(rcl_context **out, cl_context context, cl_device_id device, cl_command_queue queue,
                     const rcl_context_options *opts) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_context_wrap: NULL output");
  *out = NULL;
  if (!context || !device) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_context_wrap: context and device are required");
  int rc = options_ok(opts);
  if (rc) return rc;
  /* The device must be one of the context's: otherwise every later build fails with CL_INVALID_DEVICE
   * far from the cause. */
  size_t dbytes = 0;
  cl_int derr = clGetContextInfo(context, CL_CONTEXT_DEVICES, 0, NULL, &dbytes);
  if (derr) return rcl__fail_cl(derr, "rcl_context_wrap: clGetContextInfo(CL_CONTEXT_DEVICES)");
  cl_device_id *devs = rcl__malloc(dbytes);
  if (!devs) return RCL_ERR_OUT_OF_MEMORY;
  derr = clGetContextInfo(context, CL_CONTEXT_DEVICES, dbytes, devs, NULL);
  /* PoCL 3.1 lists a sub-device's parent as the device of a context made on the sub-device. */
  cl_device_id parent = NULL;
  if (clGetDeviceInfo(device, CL_DEVICE_PARENT_DEVICE, sizeof parent, &parent, NULL) != CL_SUCCESS) parent = NULL;
  int member = 0;
  for (size_t i = 0; !derr && i < dbytes / sizeof *devs; i++)
    member |= devs[i] == device || (parent && devs[i] == parent);
  rcl__free(devs);
  if (derr) return rcl__fail_cl(derr, "rcl_context_wrap: clGetContextInfo(CL_CONTEXT_DEVICES)");
  if (!member) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_context_wrap: the device is not a device of the context");
  if (queue) {
    cl_context qctx;
    cl_device_id qdev;
    cl_int err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL);
    if (!err) err = clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof qdev, &qdev, NULL);
    if (err) return rcl__fail_cl(err, "rcl_context_wrap: clGetCommandQueueInfo");
    if (qctx != context || qdev != device)
      return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_context_wrap: the queue belongs to another context or device");
  }
  cl_int err = clRetainContext(context);
  if (err) return rcl__fail_cl(err, "rcl_context_wrap: clRetainContext");
  if (queue && (err = clRetainCommandQueue(queue)) != CL_SUCCESS) {
    clReleaseContext(context);
    return rcl__fail_cl(err, "rcl_context_wrap: clRetainCommandQueue");
  }
  return context_new(out, context, device, queue, opts);
}

int rcl_context_clone(rcl_context **out, const rcl_context *ctx, rcl_mode mode) {
  if (!out || !ctx) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_context_clone: NULL argument");
  rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
  o.mode = mode;
  o.tuning = ctx->tuning;
  o.cache_dir = ctx->cache_dir;
  return rcl_context_wrap(out, ctx->cl_ctx, ctx->device, ctx->queue, &o);
}

void rcl_context_free(rcl_context *ctx) {
  if (!ctx) return;
  rcl__programs_free(ctx);
  rcl__queue_scratch_free(ctx);
  rcl__tune_ctx_free(ctx);
  rcl__selftest_free(ctx);
  rcl__cache_state_free(ctx);
  pthread_mutex_destroy(&ctx->lock);
  if (ctx->queue) clReleaseCommandQueue(ctx->queue);
  clReleaseContext(ctx->cl_ctx);
  clReleaseDevice(ctx->device);
  rcl__free(ctx->cache_dir);
  rcl__free(ctx);
}
