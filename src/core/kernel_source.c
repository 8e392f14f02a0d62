/* Kernel sources: the .cl files of cl/ embedded at build time (scripts/embed_cl.cmake), or, when
 * REPROCL_KERNEL_DIR is set, the files of that directory — for kernel development without rebuilding. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/file.h"
#include "core/kernel_source.h"

static int read_file(char **text, size_t *size, const char *path) {
  rcl_file_error e;
  int rc = rcl__file_read(text, size, path, RCL_FILE_NO_DEVICE, &e);
  if (rc != RCL_ERR_IO) return rc;
  if (e.problem == RCL_FILE_ABSENT || e.problem == RCL_FILE_OPEN)
    return rcl__fail(RCL_ERR_IO, "cannot open kernel source %s: %s", path, strerror(e.errnum));
  /* A device (a kernel file linked to /dev/zero) would be read until memory runs out. */
  if (e.problem == RCL_FILE_DEVICE) return rcl__fail(RCL_ERR_IO, "kernel source %s is a device, not a file", path);
  return rcl__fail(RCL_ERR_IO, "error reading kernel source %s", path);
}

int rcl__kernel_source(char **text, size_t *size, const char *name) {
  if (strchr(name, '/') || strstr(name, ".."))
    return rcl__fail(RCL_ERR_INVALID_ARG, "invalid kernel source name \"%s\"", name);
  const char *dir = getenv("REPROCL_KERNEL_DIR");
  if (dir && *dir) {
    size_t need = strlen(dir) + strlen(name) + 2;
    char *path = rcl__malloc(need);
    if (!path) return RCL_ERR_OUT_OF_MEMORY;
    snprintf(path, need, "%s/%s", dir, name);
    int rc = read_file(text, size, path);
    if (rc) rcl__error_append(" (REPROCL_KERNEL_DIR=%s)", dir);
    rcl__free(path);
    return rc;
  }
  for (const rcl_embedded_source *s = rcl_embedded_sources; s->name; s++) {
    if (strcmp(s->name, name) == 0) {
      char *copy = rcl__malloc(s->size + 1);
      if (!copy) return RCL_ERR_OUT_OF_MEMORY;
      memcpy(copy, s->text, s->size);
      copy[s->size] = '\0';
      *text = copy;
      *size = s->size;
      return 0;
    }
  }
  return rcl__fail(RCL_ERR_NOT_FOUND, "no embedded kernel source named \"%s\"", name);
}
