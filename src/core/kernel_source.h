/* Kernel sources (kernel_source.c): the embedded cl/ files, or $REPROCL_KERNEL_DIR. Not installed. */
#ifndef REPROCL_CORE_KERNEL_SOURCE_H
#define REPROCL_CORE_KERNEL_SOURCE_H
#include <stddef.h>

#include "core/error.h"

typedef struct {
  const char *name;
  const char *text;
  size_t size;
} rcl_embedded_source;
extern const rcl_embedded_source rcl_embedded_sources[]; /* generated; NULL-terminated */

/* The text of cl/<name>: embedded, or read from $REPROCL_KERNEL_DIR/<name> when that is set.
 * *text is owned by the caller (rcl__free). */
RCL_INTERNAL int rcl__kernel_source(char **text, size_t *size, const char *name);

#endif
