/* Errors of the library (error.c): the thread-local message every failure sets, and the attributes of internal symbols.
 * Not installed. */
#ifndef REPROCL_CORE_ERROR_H
#define REPROCL_CORE_ERROR_H
#include "reprocl/reprocl.h"

#define RCL_INTERNAL __attribute__((visibility("hidden")))
/* An internal symbol that reprocl's sibling libraries (reprocl_mpi) call: exported from the shared library,
 * so they report and allocate through the same thread-local message and allocator, but in no installed
 * header. */
#define RCL_SIBLING __attribute__((visibility("default")))
#define RCL_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Sets this thread's error message and returns status, so call sites read `return rcl__fail(...)`. */
RCL_SIBLING int rcl__fail(int status, const char *fmt, ...) RCL_PRINTF(2, 3);
/* An OpenCL failure: "what: CL_ERROR_NAME (code)". */
RCL_SIBLING int rcl__fail_cl(cl_int err, const char *what, ...) RCL_PRINTF(2, 3);
/* Appends to the current message (e.g. a build log after the headline). */
RCL_INTERNAL void rcl__error_append(const char *fmt, ...) RCL_PRINTF(1, 2);

#endif
