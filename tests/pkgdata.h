/* Real test matrices shipped by Debian packages: the file at its installed path, or under
 * $REPROCL_DATA_PREFIX (e.g. /tmp/ocl on a host where the .deb files were unpacked with dpkg -x rather
 * than installed). NULL when neither is readable; the caller notes the skip. */
#ifndef REPROCL_TEST_PKGDATA_H
#define REPROCL_TEST_PKGDATA_H
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *pkg_file(const char *path) {
  static char buf[8][1024];
  static int next;
  if (access(path, R_OK) == 0) return path;
  const char *pre = getenv("REPROCL_DATA_PREFIX");
  if (!pre || !*pre) return NULL;
  char *b = buf[next++ % 8];
  snprintf(b, sizeof buf[0], "%s%s", pre, path);
  return access(b, R_OK) == 0 ? b : NULL;
}

#endif
