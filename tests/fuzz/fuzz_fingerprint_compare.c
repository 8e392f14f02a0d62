/* libFuzzer target: fingerprint JSON as `reprocl compare` reads it (src/cli/cmd_compare.c, in process).
 * The input is two documents separated by a NUL byte (JSON text cannot contain one); without a NUL
 * the input is compared with a small valid fingerprint (the real one is a seed; comparing every input
 * with its 22 KB would make the target ten times slower). Both orders run, in JSON and text
 * output. The exit status must be one of the documented ones (0, 1, 2, 3): never a crash, a sanitizer
 * report or a leak. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "suite.h"

static char dir[] = "/dev/shm/reprocl-fuzz-compare-XXXXXX";
static char path_a[64], path_b[64], path_ref[64];
static const char small_ref[] =
    "{\"format\":\"reprocl-fingerprint\",\"format_version\":1,\"reprocl\":\"0.1.0\",\"suite\":\"quick\","
    "\"devices\":[{\"name\":\"pocl: cpu\",\"driver_version\":\"3.1\"}],\"cases\":["
    "{\"name\":\"reduce sum f32 ordered uniform n=100003\",\"contract\":\"reduce.ordered.v1\",\"status\":\"ok\","
    "\"reference\":\"ab\",\"results\":[{\"device\":0,\"status\":\"ok\",\"sha256\":\"ab\"}]},"
    "{\"name\":\"b\",\"contract\":\"x.v1\",\"status\":\"ok\",\"reference\":\"cd\",\"results\":[]}]}";
static void put(const char *path, const uint8_t *d, size_t n);

static void cleanup(void) {
  unlink(path_a);
  unlink(path_b);
  unlink(path_ref);
  rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  if (!mkdtemp(dir)) {
    memcpy(dir, "/tmp/", 5); /* no /dev/shm: "/tmp/" over "/dev/shm/" leaves a valid template */
    memmove(dir + 5, dir + 9, sizeof dir - 9);
    if (!mkdtemp(dir)) abort();
  }
  snprintf(path_a, sizeof path_a, "%s/a.json", dir);
  snprintf(path_b, sizeof path_b, "%s/b.json", dir);
  snprintf(path_ref, sizeof path_ref, "%s/ref.json", dir);
  put(path_ref, (const uint8_t *)small_ref, sizeof small_ref - 1);
  atexit(cleanup);
  /* compare's report and error lines go to the streams; libFuzzer and the sanitizers keep fds 1 and 2 */
  FILE *devnull = fopen("/dev/null", "w");
  if (!devnull) abort();
  stdout = devnull;
  stderr = devnull;
  return 0;
}

static void put(const char *path, const uint8_t *d, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) abort();
  while (n > 0) {
    ssize_t w = write(fd, d, n);
    if (w <= 0) abort();
    d += w;
    n -= (size_t)w;
  }
  close(fd);
}

static void compare(const char *a, const char *b, int json) {
  char *argv[] = {"compare", (char *)a, (char *)b, json ? "--json" : NULL, NULL};
  int rc = cmd_compare(json ? 4 : 3, argv);
  FUZZ_CHECK(rc == 0 || rc == 1 || rc == 2 || rc == 3, "compare exit status %d", rc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  put(path_a, data, nul ? (size_t)(nul - data) : size);
  const char *b = path_ref;
  if (nul) {
    put(path_b, nul + 1, size - (size_t)(nul - data) - 1);
    b = path_b;
  }
  compare(path_a, b, 1);
  compare(b, path_a, 0);
  return 0;
}
