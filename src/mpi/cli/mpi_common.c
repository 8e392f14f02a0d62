/* Helpers of the reprocl-mpi commands (mpi_cli.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpi_cli.h"

void mpi_cli_slice(size_t *first, size_t *count, size_t n, int rank, int size) {
  size_t r = (size_t)rank, k = (size_t)size, base = n / k, extra = n % k;
  *first = r * base + (r < extra ? r : extra);
  *count = base + (r < extra ? 1 : 0);
}

int mpi_cli_write_atomic(const char *path, const void *data, size_t bytes, char *why, size_t why_size) {
  size_t len = strlen(path) + 16;
  char *tmp = malloc(len);
  if (!tmp) return snprintf(why, why_size, "out of memory"), RCL_ERR_OUT_OF_MEMORY;
  snprintf(tmp, len, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp), rc = 0;
  if (fd < 0) {
    snprintf(why, why_size, "cannot create a temporary file beside %s: %s", path, strerror(errno));
    free(tmp);
    return RCL_ERR_IO;
  }
  if (fchmod(fd, 0644) != 0) rc = RCL_ERR_IO; /* mkstemp's 0600 is for the temporary file only */
  const char *p = data;
  size_t left = bytes;
  while (left && !rc) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      rc = RCL_ERR_IO;
    else
      p += w, left -= (size_t)w;
  }
  if (close(fd) != 0) rc = RCL_ERR_IO;
  if (!rc && rename(tmp, path) != 0) rc = RCL_ERR_IO;
  if (rc) {
    snprintf(why, why_size, "cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
  }
  free(tmp);
  return rc;
}

void mpi_cli_test_die(int rank) {
  const char *s = getenv("REPROCL_MPI_TEST_DIE_RANK");
  if (s && *s && atoi(s) == rank) raise(SIGKILL);
}
