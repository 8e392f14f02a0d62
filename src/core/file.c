/* The one whole-file reader: open (optionally not through a final symlink), refuse what the caller
 * refuses (directories, devices, anything but a regular file), then read in growing steps. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/file.h"

static int refused(const struct stat *st, unsigned flags, rcl_file_error *err) {
  if ((flags & RCL_FILE_NO_DIRECTORY) && S_ISDIR(st->st_mode))
    err->problem = RCL_FILE_DIRECTORY;
  else if ((flags & RCL_FILE_NO_DEVICE) && (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)))
    err->problem = RCL_FILE_DEVICE;
  else if ((flags & RCL_FILE_REGULAR) && !S_ISREG(st->st_mode))
    err->problem = RCL_FILE_NOT_REGULAR;
  else
    return 0;
  return 1;
}

int rcl__file_read(char **data, size_t *size, const char *path, unsigned flags, rcl_file_error *err) {
  *data = NULL;
  *size = 0;
  memset(err, 0, sizeof *err);
  int fd = open(path, O_RDONLY | O_CLOEXEC | ((flags & RCL_FILE_NOFOLLOW) ? O_NOFOLLOW : 0));
  if (fd < 0) {
    err->errnum = errno;
    err->problem = errno == ENOENT ? RCL_FILE_ABSENT : RCL_FILE_OPEN;
    return RCL_ERR_IO;
  }
  struct stat st;
  int have_st = fstat(fd, &st) == 0;
  if ((have_st && refused(&st, flags, err)) || (!have_st && (flags & RCL_FILE_REGULAR))) {
    if (!have_st) err->problem = RCL_FILE_NOT_REGULAR;
    close(fd);
    return RCL_ERR_IO;
  }
  size_t cap = have_st && S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1 : 65536, len = 0;
  char *buf = rcl__malloc(cap);
  int rc = buf ? 0 : RCL_ERR_OUT_OF_MEMORY;
  while (!rc) {
    if (len + 1 >= cap) { /* full (the file grew, or is not regular): double */
      char *nb = cap > SIZE_MAX / 2 ? NULL : rcl__realloc(buf, cap * 2);
      if (!nb) {
        if (cap > SIZE_MAX / 2) err->problem = RCL_FILE_TOO_LARGE;
        rc = cap > SIZE_MAX / 2 ? RCL_ERR_IO : RCL_ERR_OUT_OF_MEMORY;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    ssize_t got = read(fd, buf + len, cap - 1 - len);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      err->problem = RCL_FILE_READ;
      err->errnum = errno;
      rc = RCL_ERR_IO;
    }
    if (got <= 0) break;
    len += (size_t)got;
  }
  close(fd);
  if (rc) {
    rcl__free(buf);
    return rc;
  }
  buf[len] = '\0';
  *data = buf;
  *size = len;
  return 0;
}

int rcl__file_fail(const rcl_file_error *err, const char *path) {
  switch (err->problem) {
  case RCL_FILE_ABSENT:
    return rcl__fail(RCL_ERR_NOT_FOUND, "%s does not exist", path);
  case RCL_FILE_OPEN:
    return rcl__fail(RCL_ERR_IO, "cannot open %s: %s", path, strerror(err->errnum));
  case RCL_FILE_DIRECTORY:
  case RCL_FILE_NOT_REGULAR:
    return rcl__fail(RCL_ERR_IO, "%s is not a regular file", path);
  case RCL_FILE_DEVICE:
    return rcl__fail(RCL_ERR_IO, "%s is a device, not a file", path);
  case RCL_FILE_TOO_LARGE:
    return rcl__fail(RCL_ERR_OVERFLOW, "%s is too large to read", path);
  case RCL_FILE_READ:
  default:
    return rcl__fail(RCL_ERR_IO, "cannot read %s: %s", path, strerror(err->errnum));
  }
}
