/* reprocl: status codes, error reporting, element types and queue arguments shared by every module. */
#ifndef REPROCL_COMMON_H
#define REPROCL_COMMON_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(REPROCL_BUILDING)
#define RCL_API __attribute__((visibility("default")))
#else
#define RCL_API
#endif

/* Every function returns 0 (RCL_OK) or one of these negative values; rcl_error_last() then says why. */
typedef enum {
  RCL_OK = 0,
  RCL_ERR_INVALID_ARG = -1,   /* a bad argument: NULL, a size out of range, an unknown name */
  RCL_ERR_OUT_OF_MEMORY = -2, /* host allocation failed */
  RCL_ERR_OPENCL = -3,        /* an OpenCL call failed; the message names the call and the CL error */
  RCL_ERR_BUILD = -4,         /* a program failed to compile; the message holds the build log */
  RCL_ERR_UNSUPPORTED = -5,   /* the device cannot run this bit-exactly; the message says which feature */
  RCL_ERR_NOT_FOUND = -6,     /* no device, file or entry matches */
  RCL_ERR_IO = -7,            /* a file could not be read or written */
  RCL_ERR_PARSE = -8,         /* malformed input; the message names file, line and problem */
  RCL_ERR_POLICY = -9,        /* a build option or source construct would break reproducibility */
  RCL_ERR_OVERFLOW = -10,     /* a fixed-point accumulator or a size computation would overflow */
  RCL_ERR_NO_CONVERGENCE = -11, /* an iterative solver stopped at its iteration limit */
  RCL_ERR_BREAKDOWN = -12,    /* an iterative solver broke down (division by zero, non-SPD matrix) */
  RCL_ERR_MISMATCH = -13,     /* two results that must be bit-identical differ (a bug; please report) */
  RCL_ERR_INTERNAL = -14      /* an invariant of the library failed (a bug; please report) */
} rcl_status;

/* The message of the last failed call on this thread ("" if none). Valid until the next reprocl call
 * on the same thread. Thread-safe: every thread has its own message. */
RCL_API const char *rcl_error_last(void);
/* The status of the last failed call on this thread (RCL_OK if none). */
RCL_API rcl_status rcl_error_last_status(void);
/* Clears this thread's last error. */
RCL_API void rcl_error_clear(void);
/* A constant name for a status ("RCL_ERR_BUILD"). */
RCL_API const char *rcl_status_name(int status);
/* A constant name for an OpenCL error code ("CL_OUT_OF_RESOURCES"), or "CL_UNKNOWN_ERROR". */
RCL_API const char *rcl_cl_error_name(cl_int err);

/* Element types of the kernels. */
typedef enum { RCL_F32 = 1, RCL_F64 = 2 } rcl_dtype;
RCL_API size_t rcl_dtype_size(rcl_dtype dtype); /* 4, 8, or 0 for an unknown dtype */
RCL_API const char *rcl_dtype_name(rcl_dtype dtype); /* "f32", "f64" */
RCL_API int rcl_dtype_parse(rcl_dtype *out, const char *name);

/* How kernels are built: the default is always reproducible. */
typedef enum {
  RCL_MODE_REPRODUCIBLE = 0, /* FP_CONTRACT OFF, correctly rounded div/sqrt, exact emulation where needed */
  RCL_MODE_NATIVE = 1        /* the vendor's default options: contraction allowed; for comparison only */
} rcl_mode;
RCL_API const char *rcl_mode_name(rcl_mode mode);

/* CLBlast-style queue arguments of every *_enqueue function: the caller's queue (NULL: the context's),
 * an event wait list, and an optional event that completes when the whole operation is done.
 * The library never waits on the caller's queue in an *_enqueue function unless it says so. */
#define RCL_QUEUE_ARGS_VERSION 1
typedef struct {
  unsigned int version;
  cl_command_queue queue;
  cl_uint num_events_in_wait_list;
  const cl_event *event_wait_list;
  cl_event *event; /* out, optional: the caller releases it */
} rcl_queue_args;
#define RCL_QUEUE_ARGS_INIT {RCL_QUEUE_ARGS_VERSION, NULL, 0, NULL, NULL}

#ifdef __cplusplus
}
#endif
#endif
