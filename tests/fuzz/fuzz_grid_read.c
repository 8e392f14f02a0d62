/* libFuzzer target: the grid readers (rcl_grid_read: raw, PGM P2/P5, PNG through libpng). The first
 * byte picks the format (auto, raw, pgm, png) and the dtype, the next two the width and height given
 * for raw files (0-15 each; 0 = not given), the rest is the file, written to a memory file system. A
 * read gives a grid within the documented limits (image values in [0, 1]) or an error naming the file;
 * the grid is zeroed on failure. */
#include <fcntl.h>
#include <unistd.h>

#include "fuzz_common.h"

static char path[] = "/dev/shm/reprocl-fuzz-grid-XXXXXX";
static int fd = -1;

static void cleanup(void) {
  if (fd >= 0) unlink(path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fd = mkstemp(path);
  if (fd < 0) {
    strcpy(path, "/tmp/reprocl-fuzz-grid-XXXXXX");
    fd = mkstemp(path);
  }
  if (fd < 0) abort();
  atexit(cleanup);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  rcl_grid_format fmt = (rcl_grid_format)(data[0] & 3);
  rcl_dtype dt = (data[0] & 4) ? RCL_F64 : RCL_F32;
  size_t w = data[1] & 15, h = data[2] & 15;
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data + 3, size - 3, 0) != (ssize_t)(size - 3)) abort();
  rcl_grid g;
  memset(&g, 0xab, sizeof g); /* overwritten whatever happens */
  int rc = rcl_grid_read(&g, path, fmt, dt, w, h);
  if (rc == 0) {
    FUZZ_CHECK(g.data && g.width >= 1 && g.height >= 1 && g.width <= RCL_GRID_MAX_DIM && g.height <= RCL_GRID_MAX_DIM,
               "grid %zux%zu data %p", g.width, g.height, g.data);
    FUZZ_CHECK(g.dtype == dt, "dtype %d", (int)g.dtype);
    if (fmt == RCL_GRID_FORMAT_PGM || fmt == RCL_GRID_FORMAT_PNG)
      for (size_t i = 0; i < g.width * g.height; i++) {
        double v = dt == RCL_F32 ? ((float *)g.data)[i] : ((double *)g.data)[i];
        FUZZ_CHECK(v >= 0.0 && v <= 1.0, "image value %g at %zu", v, i);
      }
    rcl_grid_free(&g);
  } else {
    FUZZ_CHECK(g.data == NULL && g.width == 0 && g.height == 0, "failure left the grid set");
    FUZZ_CHECK(rc == RCL_ERR_PARSE || rc == RCL_ERR_IO || rc == RCL_ERR_OVERFLOW || rc == RCL_ERR_INVALID_ARG ||
                   rc == RCL_ERR_UNSUPPORTED,
               "status %s: %s", rcl_status_name(rc), rcl_error_last());
    FUZZ_CHECK(strstr(rcl_error_last(), path) != NULL, "the message does not name the file: %s", rcl_error_last());
  }
  return 0;
}
