/* Text helpers of the sparse matrix readers: whole-file reads and number conversion with correct
 * rounding in the C locale. */
#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sparse/sparse_internal.h"

int rcl__read_file(char **buf, size_t *len, const char *path) {
  *buf = NULL;
  *len = 0;
  if (!path) return rcl__fail(RCL_ERR_INVALID_ARG, "NULL file name");
  FILE *f = fopen(path, "rb");
  if (!f)
    return rcl__fail(errno == ENOENT ? RCL_ERR_NOT_FOUND : RCL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    fclose(f);
    return rcl__fail(RCL_ERR_IO, "%s: is a directory", path);
  }
  /* A device never ends (/dev/zero, /dev/urandom): the whole-file read would grow until memory runs
   * out. Regular files and pipes (a matrix on standard input) are read. */
  if (fstat(fileno(f), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) {
    fclose(f);
    return rcl__fail(RCL_ERR_IO, "%s: is a device, not a file", path);
  }
  /* Read in growing steps: the size is what the file actually holds, never what it claims. */
  size_t cap = (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) ? (size_t)st.st_size + 1 : 65536;
  char *b = rcl__malloc(cap);
  size_t n = 0;
  int rc = b ? 0 : RCL_ERR_OUT_OF_MEMORY;
  while (!rc) {
    if (n + 1 >= cap) {
      if (cap > SIZE_MAX / 2) {
        rc = rcl__fail(RCL_ERR_OVERFLOW, "%s: file too large", path);
        break;
      }
      char *nb = rcl__realloc(b, cap * 2);
      if (!nb) {
        rc = RCL_ERR_OUT_OF_MEMORY;
        break;
      }
      b = nb;
      cap *= 2;
    }
    size_t got = fread(b + n, 1, cap - 1 - n, f);
    n += got;
    if (got == 0) {
      if (ferror(f)) rc = rcl__fail(RCL_ERR_IO, "%s: read error: %s", path, strerror(errno));
      break;
    }
  }
  fclose(f);
  if (rc) {
    rcl__free(b);
    return rc;
  }
  b[n] = '\0';
  *buf = b;
  *len = n;
  return 0;
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
