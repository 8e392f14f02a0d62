/* reprocl: the context — one device, its queue, and the programs reprocl built for it. */
#ifndef REPROCL_CONTEXT_H
#define REPROCL_CONTEXT_H
#include "reprocl/common.h"
#include "reprocl/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque. Thread-safety: a context may be used from several threads at once; its program cache is
 * locked and every call creates its own cl_kernel objects. Calls that take no queue argument use the
 * context's queue, which OpenCL makes safe to share but which serialises their work. */
typedef struct rcl_context rcl_context;

/* Autotuning behaviour (see tune.h). RCL_TUNING_ENV reads $REPROCL_TUNING (on|off|force), default on. */
typedef enum { RCL_TUNING_ENV = 0, RCL_TUNING_ON = 1, RCL_TUNING_OFF = 2, RCL_TUNING_FORCE = 3 } rcl_tuning_mode;

#define RCL_CONTEXT_OPTIONS_VERSION 1
typedef struct {
  unsigned int version;
  const char *device;   /* device spec, see rcl_device_find(); ignored by rcl_context_wrap() */
  rcl_mode mode;        /* RCL_MODE_REPRODUCIBLE (default) or RCL_MODE_NATIVE */
  int profiling;        /* create the context's own queue with CL_QUEUE_PROFILING_ENABLE */
  rcl_tuning_mode tuning;
  const char *cache_dir; /* NULL: $REPROCL_CACHE_DIR, $XDG_CACHE_HOME/reprocl, ~/.cache/reprocl */
} rcl_context_options;
#define RCL_CONTEXT_OPTIONS_INIT {RCL_CONTEXT_OPTIONS_VERSION, NULL, RCL_MODE_REPRODUCIBLE, 1, RCL_TUNING_ENV, NULL}

/* Creates an OpenCL context and an in-order queue on the device that opts->device selects. */
RCL_API int rcl_context_create(rcl_context **out, const rcl_context_options *opts);

/* Wraps the caller's own OpenCL objects (retained here, released by rcl_context_free): reprocl creates
 * no second context or queue. queue may be NULL; then every call must pass a queue in rcl_queue_args and
 * the host-array convenience functions refuse with RCL_ERR_INVALID_ARG. */
RCL_API int rcl_context_wrap(rcl_context **out, cl_context context, cl_device_id device, cl_command_queue queue,
                             const rcl_context_options *opts);

/* A second context on the same OpenCL objects with another mode (the CLI's native comparisons). */
RCL_API int rcl_context_clone(rcl_context **out, const rcl_context *ctx, rcl_mode mode);

RCL_API void rcl_context_free(rcl_context *ctx);

RCL_API cl_context rcl_context_cl_context(const rcl_context *ctx);
RCL_API cl_device_id rcl_context_cl_device(const rcl_context *ctx);
RCL_API cl_command_queue rcl_context_cl_queue(const rcl_context *ctx);
RCL_API const rcl_device_profile *rcl_context_profile(const rcl_context *ctx);
RCL_API rcl_mode rcl_context_mode(const rcl_context *ctx);

/* First-use self-verification (docs/selftest.md): before a family runs for a dtype on a device for the
 * first time, trap inputs run through its real kernels and are compared bit for bit with the host
 * reference. The verdict is cached on disk (per device, driver, build options, kernel sources and
 * code-generation environment) and in the context. */
typedef enum {
  RCL_VERDICT_VERIFIED = 0,     /* the normal build passed */
  RCL_VERDICT_CONSERVATIVE = 1, /* the normal build failed, the conservative one (no optimisation) passed
                                 * and is what the family uses */
  RCL_VERDICT_UNSUPPORTED = 2,  /* both failed: the family's calls return RCL_ERR_UNSUPPORTED */
  RCL_VERDICT_NOT_TESTED = 3    /* native mode, REPROCL_SELFTEST=off, or the profile refuses the family */
} rcl_verdict;
/* "verified", "verified (conservative build)", "unsupported", "not tested" */
RCL_API const char *rcl_verdict_name(rcl_verdict v);
/* The verdict of family/dtype on ctx, running the self-test if none is known yet. *reason (optional)
 * receives a context-lifetime string: which inputs differed, or why it was not tested ("" otherwise).
 * Errors are those of the self-test's own calls (a failed build, out of memory). */
RCL_API int rcl_context_verdict(rcl_verdict *out, const char **reason, rcl_context *ctx, rcl_family family,
                                rcl_dtype dtype);

#ifdef __cplusplus
}
#endif
#endif
