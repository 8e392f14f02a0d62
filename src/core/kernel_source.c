/* Kernel sources: the .cl files of cl/ embedded at build time (scripts/embed_cl.cmake), or, when
 * REPROCL_KERNEL_DIR is set, the files of that directory — for kernel development without rebuilding. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/internal.h"

static int read_file(char **text, size_t *size, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return rcl__fail(RCL_ERR_IO, "cannot open kernel source %s: %s", path, strerror(errno));
  /* A device (a kernel file linked to /dev/zero) would be read until memory runs out. */
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) {
    fclose(f);
    return rcl__fail(RCL_ERR_IO, "kernel source %s is a device, not a file", path);
  }
  char *buf = NULL;
  size_t len = 0, cap = 0;
  int rc = 0;
  for (;;) {
    if (cap - len < 4096) {
      size_t ncap = cap ? cap * 2 : 16384;
      char *nb = rcl__realloc(buf, ncap + 1);
      if (!nb) {
        rc = RCL_ERR_OUT_OF_MEMORY;
        break;
      }
      buf = nb;
      cap = ncap;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) {
      if (ferror(f)) rc = rcl__fail(RCL_ERR_IO, "error reading kernel source %s", path);
      break;
    }
  }
  fclose(f);
  if (rc) {
    rcl__free(buf);
    return rc;
  }
  buf[len] = '\0';
  *text = buf;
  *size = len;
  return 0;
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
