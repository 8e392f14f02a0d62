/* Where the caches live and whether they may be written: the location rules ($REPROCL_CACHE_DIR,
 * $XDG_CACHE_HOME/reprocl, ~/.cache/reprocl, else memory only), the ownership checks that keep a cache
 * in a shared directory such as /tmp from being redirected by another user (a symlinked directory owned
 * by someone else is never written through), and atomic file replacement (temporary file in the same
 * directory, fsync, rename, fsync of the directory). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "build/cache_dir.h"
#include "core/alloc.h"
#include "core/file.h"

#ifndef S_ISVTX
#define S_ISVTX 01000 /* the sticky bit: POSIX names it only with the XSI option */
#endif

static char *join(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *p = rcl__malloc(n);
  if (p) snprintf(p, n, "%s/%s", a, b);
  return p;
}

int rcl__cache_dir_resolve(char **dir, char **warning, const char *configured) {
  *dir = NULL;
  *warning = NULL;
  const char *e;
  if (configured && *configured) {
    *dir = rcl__strdup(configured);
  } else if ((e = getenv("REPROCL_CACHE_DIR")) != NULL && *e) {
    *dir = rcl__strdup(e);
  } else if ((e = getenv("XDG_CACHE_HOME")) != NULL && *e == '/') {
    /* The XDG spec says relative paths are invalid and must be ignored. */
    *dir = join(e, "reprocl");
  } else if ((e = getenv("HOME")) != NULL && *e == '/') {
    *dir = join(e, ".cache/reprocl");
  } else {
    static const char why[] = "no cache directory: REPROCL_CACHE_DIR, XDG_CACHE_HOME and HOME are unset; "
                              "tuning results and program binaries are kept in memory only";
    *warning = rcl__strdup(why);
    return *warning ? 0 : RCL_ERR_OUT_OF_MEMORY;
  }
  return *dir ? 0 : RCL_ERR_OUT_OF_MEMORY;
}

/* Creates path and its missing parents with mode 0700 (like mkdir -p). */
static int mkdir_p(const char *path) {
  char *p = rcl__strdup(path);
  if (!p) return RCL_ERR_OUT_OF_MEMORY;
  int rc = 0;
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == '\0') {
      char c = *s;
      *s = '\0';
      if (mkdir(p, 0700) != 0 && errno != EEXIST) {
        rc = rcl__fail(RCL_ERR_IO, "cannot create cache directory %s: %s", p, strerror(errno));
        break;
      }
      *s = c;
      if (c == '\0') break;
    }
  }
  rcl__free(p);
  return rc;
}

/* The ownership rule shared by writing and trusting: the directory (after following symlinks) must be a
 * directory owned by us (or, when trusting for reads, by root), and not writable by others unless the
 * sticky bit keeps them from replacing our files. A symlink itself must be owned by us or root. */
static int check_owner(const char *dir, int allow_root, char *why, size_t whylen) {
  struct stat ls, st;
  if (lstat(dir, &ls) != 0) {
    snprintf(why, whylen, "cannot stat %s: %s", dir, strerror(errno));
    return 0;
  }
  uid_t me = geteuid();
  if (S_ISLNK(ls.st_mode) && ls.st_uid != me && ls.st_uid != 0) {
    snprintf(why, whylen, "%s is a symlink owned by uid %u, not by this user (uid %u)", dir, (unsigned)ls.st_uid,
             (unsigned)me);
    return 0;
  }
  if (stat(dir, &st) != 0) {
    snprintf(why, whylen, "cannot stat %s: %s", dir, strerror(errno));
    return 0;
  }
  if (!S_ISDIR(st.st_mode)) {
    snprintf(why, whylen, "%s is not a directory", dir);
    return 0;
  }
  if (st.st_uid != me && !(allow_root && st.st_uid == 0)) {
    snprintf(why, whylen, "%s%s is owned by uid %u, not by this user (uid %u)", dir,
             S_ISLNK(ls.st_mode) ? " (through a symlink)" : "", (unsigned)st.st_uid, (unsigned)me);
    return 0;
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
    snprintf(why, whylen, "%s is writable by other users", dir);
    return 0;
  }
  return 1;
}

int rcl__cache_dir_writable(const char *dir) {
  if (!dir) return rcl__fail(RCL_ERR_IO, "no cache directory");
  struct stat ls;
  if (lstat(dir, &ls) != 0) {
    if (errno != ENOENT) return rcl__fail(RCL_ERR_IO, "cannot stat cache directory %s: %s", dir, strerror(errno));
    int rc = mkdir_p(dir);
    if (rc) return rc;
  }
  char why[512];
  if (!check_owner(dir, 0, why, sizeof why)) return rcl__fail(RCL_ERR_IO, "cache directory not written: %s", why);
  if (access(dir, W_OK | X_OK) != 0)
    return rcl__fail(RCL_ERR_IO, "cache directory %s is read-only: %s", dir, strerror(errno));
  return 0;
}

int rcl__cache_dir_trusted(const char *dir) {
  char why[512];
  return dir && check_owner(dir, 1, why, sizeof why);
}

int rcl__cache_read_file(char **data, size_t *size, const char *path) {
  rcl_file_error e;
  int rc = rcl__file_read(data, size, path, RCL_FILE_NOFOLLOW | RCL_FILE_REGULAR, &e);
  return rc == RCL_ERR_IO ? rcl__file_fail(&e, path) : rc;
}

static int write_all(int fd, const void *data, size_t size) {
  const char *p = data;
  while (size > 0) {
    ssize_t w = write(fd, p, size);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    p += w;
    size -= (size_t)w;
  }
  return 0;
}

int rcl__cache_write_atomic(const char *dir, const char *name, const void *data, size_t size) {
  size_t n = strlen(dir) + strlen(name) + 32;
  char *tmp = rcl__malloc(n), *dst = rcl__malloc(n);
  if (!tmp || !dst) {
    rcl__free(tmp);
    rcl__free(dst);
    return RCL_ERR_OUT_OF_MEMORY;
  }
  snprintf(tmp, n, "%s/.%s.XXXXXX", dir, name);
  snprintf(dst, n, "%s/%s", dir, name);
  int rc = 0;
  /* mkstemp opens with O_EXCL and mode 0600: never an existing file, never through a symlink. */
  int fd = mkstemp(tmp);
  if (fd < 0) {
    rc = rcl__fail(RCL_ERR_IO, "cannot create a temporary file in %s: %s", dir, strerror(errno));
  } else {
    int bad = write_all(fd, data, size) != 0 || fsync(fd) != 0;
    int e = errno;
    if (close(fd) != 0 && !bad) {
      bad = 1;
      e = errno;
    }
    if (!bad && chmod(tmp, 0644) != 0) {
      bad = 1;
      e = errno;
    }
    if (!bad && rename(tmp, dst) != 0) {
      bad = 1;
      e = errno;
    }
    if (bad) {
      unlink(tmp);
      rc = rcl__fail(RCL_ERR_IO, "cannot write %s: %s (the previous file is unchanged)", dst, strerror(e));
    } else {
      /* Make the rename itself durable. */
      int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
      }
    }
  }
  rcl__free(tmp);
  rcl__free(dst);
  return rc;
}
