/* Thread-local error state: the message of the last failed call, and status/OpenCL error names. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"

/* Large enough for a headline plus a useful build log; longer logs are cut with a note. */
#define RCL_ERROR_CAP 16384
static _Thread_local char err_msg[RCL_ERROR_CAP];
static _Thread_local rcl_status err_status = RCL_OK;

const char *rcl_error_last(void) { return err_msg; }
rcl_status rcl_error_last_status(void) { return err_status; }

void rcl_error_clear(void) {
  err_msg[0] = '\0';
  err_status = RCL_OK;
}

static void append_v(const char *fmt, va_list ap) {
  size_t used = strlen(err_msg);
  if (used + 1 >= RCL_ERROR_CAP) return;
  int n = vsnprintf(err_msg + used, RCL_ERROR_CAP - used, fmt, ap);
  if (n >= 0 && (size_t)n >= RCL_ERROR_CAP - used) {
    static const char cut[] = "\n[message truncated]";
    memcpy(err_msg + RCL_ERROR_CAP - sizeof cut, cut, sizeof cut);
  }
}

int rcl__fail(int status, const char *fmt, ...) {
  va_list ap;
  err_msg[0] = '\0';
  err_status = (rcl_status)status;
  va_start(ap, fmt);
  append_v(fmt, ap);
  va_end(ap);
  return status;
}

void rcl__error_append(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  append_v(fmt, ap);
  va_end(ap);
}

int rcl__fail_cl(cl_int err, const char *what, ...) {
  va_list ap;
  err_msg[0] = '\0';
  /* Allocation failures on the device are reported as such so callers can retry with less. */
  err_status = RCL_ERR_OPENCL;
  va_start(ap, what);
  append_v(what, ap);
  va_end(ap);
  rcl__error_append(": %s (%d)", rcl_cl_error_name(err), (int)err);
  return RCL_ERR_OPENCL;
}

const char *rcl_status_name(int status) {
  switch (status) {
  case RCL_OK: return "RCL_OK";
  case RCL_ERR_INVALID_ARG: return "RCL_ERR_INVALID_ARG";
  case RCL_ERR_OUT_OF_MEMORY: return "RCL_ERR_OUT_OF_MEMORY";
  case RCL_ERR_OPENCL: return "RCL_ERR_OPENCL";
  case RCL_ERR_BUILD: return "RCL_ERR_BUILD";
  case RCL_ERR_UNSUPPORTED: return "RCL_ERR_UNSUPPORTED";
  case RCL_ERR_NOT_FOUND: return "RCL_ERR_NOT_FOUND";
  case RCL_ERR_IO: return "RCL_ERR_IO";
  case RCL_ERR_PARSE: return "RCL_ERR_PARSE";
  case RCL_ERR_POLICY: return "RCL_ERR_POLICY";
  case RCL_ERR_OVERFLOW: return "RCL_ERR_OVERFLOW";
  case RCL_ERR_NO_CONVERGENCE: return "RCL_ERR_NO_CONVERGENCE";
  case RCL_ERR_BREAKDOWN: return "RCL_ERR_BREAKDOWN";
  case RCL_ERR_MISMATCH: return "RCL_ERR_MISMATCH";
  case RCL_ERR_INTERNAL: return "RCL_ERR_INTERNAL";
  default: return "RCL_ERR_UNKNOWN";
  }
}

const char *rcl_cl_error_name(cl_int err) {
  switch (err) {
#define E(x) \
  case x: return #x;
    E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
    E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
    E(CL_PROFILING_INFO_NOT_AVAILABLE) E(CL_MEM_COPY_OVERLAP) E(CL_IMAGE_FORMAT_MISMATCH)
    E(CL_IMAGE_FORMAT_NOT_SUPPORTED) E(CL_BUILD_PROGRAM_FAILURE) E(CL_MAP_FAILURE)
    E(CL_MISALIGNED_SUB_BUFFER_OFFSET) E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    E(CL_COMPILE_PROGRAM_FAILURE) E(CL_LINKER_NOT_AVAILABLE) E(CL_LINK_PROGRAM_FAILURE)
    E(CL_DEVICE_PARTITION_FAILED) E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) E(CL_INVALID_VALUE)
    E(CL_INVALID_DEVICE_TYPE) E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT)
    E(CL_INVALID_QUEUE_PROPERTIES) E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_HOST_PTR)
    E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) E(CL_INVALID_IMAGE_SIZE)
    E(CL_INVALID_SAMPLER) E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS) E(CL_INVALID_PROGRAM)
    E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME) E(CL_INVALID_KERNEL_DEFINITION)
    E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE)
    E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE)
    E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_EVENT_WAIT_LIST)
    E(CL_INVALID_EVENT) E(CL_INVALID_OPERATION) E(CL_INVALID_GL_OBJECT) E(CL_INVALID_BUFFER_SIZE)
    E(CL_INVALID_MIP_LEVEL) E(CL_INVALID_GLOBAL_WORK_SIZE) E(CL_INVALID_PROPERTY)
    E(CL_INVALID_IMAGE_DESCRIPTOR) E(CL_INVALID_COMPILER_OPTIONS) E(CL_INVALID_LINKER_OPTIONS)
    E(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef E
  case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
  default: return "CL_UNKNOWN_ERROR";
  }
}
