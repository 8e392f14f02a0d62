/* Text helpers of the sparse matrix readers: whole-file reads and number conversion with correct
 * rounding in the C locale. */
#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "sparse/sparse_internal.h"

int rcl__read_file(char **buf, size_t *len, const char *path) {
  *buf = NULL;
  *len = 0;
  if (!path) return rcl__fail(RCL_ERR_INVALID_ARG, "NULL file name");
  /* A device never ends (/dev/zero, /dev/urandom): the whole-file read would grow until memory runs
   * out. Regular files and pipes (a matrix on standard input) are read. */
  rcl_file_error e;
  int rc = rcl__file_read(buf, len, path, RCL_FILE_NO_DIRECTORY | RCL_FILE_NO_DEVICE, &e);
  if (rc != RCL_ERR_IO) return rc;
  switch (e.problem) {
  case RCL_FILE_ABSENT:
  case RCL_FILE_OPEN:
    return rcl__fail(e.problem == RCL_FILE_ABSENT ? RCL_ERR_NOT_FOUND : RCL_ERR_IO, "%s: cannot open: %s", path,
                     strerror(e.errnum));
  case RCL_FILE_DIRECTORY:
    return rcl__fail(RCL_ERR_IO, "%s: is a directory", path);
  case RCL_FILE_DEVICE:
    return rcl__fail(RCL_ERR_IO, "%s: is a device, not a file", path);
  case RCL_FILE_TOO_LARGE:
    return rcl__fail(RCL_ERR_OVERFLOW, "%s: file too large", path);
  default:
    return rcl__fail(RCL_ERR_IO, "%s: read error: %s", path, strerror(e.errnum));
  }
}

int rcl__locale_begin(rcl_locale_guard *g) {
  g->saved = NULL;
  g->c = NULL;
  locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
  if (!c) return rcl__fail(RCL_ERR_OUT_OF_MEMORY, "cannot create the C locale for number parsing");
  g->c = (void *)c;
  g->saved = (void *)uselocale(c);
  return 0;
}

void rcl__locale_end(rcl_locale_guard *g) {
  if (g->c) {
    uselocale((locale_t)g->saved);
    freelocale((locale_t)g->c);
  }
  g->c = NULL;
}

/* The longest number token: an exact binary64 decimal has at most 767 significant digits. */
#define MAX_NUMBER_TOKEN 2047

int rcl__parse_real(void *out, rcl_dtype dtype, const char *tok, size_t len) {
  char buf[MAX_NUMBER_TOKEN + 1];
  if (len == 0 || len > MAX_NUMBER_TOKEN) return -1;
  memcpy(buf, tok, len);
  buf[len] = '\0';
  /* strtod would skip leading blanks; the token has none, but refuse them to be sure. */
  if (buf[0] == ' ' || buf[0] == '\t') return -1;
  char *end;
  if (dtype == RCL_F32) {
    float v = strtof(buf, &end); /* correctly rounded to binary32 directly: no double rounding */
    if (end != buf + len) return -1;
    memcpy(out, &v, 4);
  } else {
    double v = strtod(buf, &end);
    if (end != buf + len) return -1;
    memcpy(out, &v, 8);
  }
  return 0;
}
