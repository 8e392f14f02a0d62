/* Host allocation wrappers. All of reprocl's host allocations go through here so that
 * REPROCL_FAIL_ALLOC=N (a test mode) makes the N-th allocation fail, proving that every error path
 * returns a status and frees what it took. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

static long fail_at = -2; /* -2: not read yet; -1: off; 0: count only */
static long alloc_count = 0;
static long live_blocks = 0; /* allocated and not yet freed: the in-process leak check of the tests */
static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;

static int should_fail(void) {
  int fail = 0;
  pthread_mutex_lock(&alloc_lock);
  if (fail_at == -2) {
    const char *e = getenv("REPROCL_FAIL_ALLOC");
    fail_at = (e && *e) ? strtol(e, NULL, 10) : -1;
  }
  if (fail_at >= 0) fail = (++alloc_count == fail_at);
  pthread_mutex_unlock(&alloc_lock);
  return fail;
}

static void live_add(long d) {
  pthread_mutex_lock(&alloc_lock);
  live_blocks += d;
  pthread_mutex_unlock(&alloc_lock);
}

void rcl__alloc_fail_at(long n) {
  pthread_mutex_lock(&alloc_lock);
  fail_at = n < 0 ? -1 : n;
  alloc_count = 0;
  pthread_mutex_unlock(&alloc_lock);
}

long rcl__alloc_count(void) {
  pthread_mutex_lock(&alloc_lock);
  long n = alloc_count;
  pthread_mutex_unlock(&alloc_lock);
  return n;
}

long rcl__alloc_live(void) {
  pthread_mutex_lock(&alloc_lock);
  long n = live_blocks;
  pthread_mutex_unlock(&alloc_lock);
  return n;
}

void *rcl__malloc(size_t size) {
  void *p = should_fail() ? NULL : malloc(size ? size : 1);
  if (!p)
    rcl__fail(RCL_ERR_OUT_OF_MEMORY, "out of host memory allocating %zu bytes", size);
  else
    live_add(1);
  return p;
}

void *rcl__calloc(size_t n, size_t size) {
  void *p = should_fail() ? NULL : calloc(n ? n : 1, size ? size : 1);
  if (!p)
    rcl__fail(RCL_ERR_OUT_OF_MEMORY, "out of host memory allocating %zu x %zu bytes", n, size);
  else
    live_add(1);
  return p;
}

void *rcl__realloc(void *old, size_t size) {
  void *p = should_fail() ? NULL : realloc(old, size ? size : 1);
  if (!p)
    rcl__fail(RCL_ERR_OUT_OF_MEMORY, "out of host memory growing a buffer to %zu bytes", size);
  else if (!old)
    live_add(1);
  return p;
}

int rcl__grow(void **buf, size_t *cap, size_t bytes) {
  if (*buf && bytes <= *cap) return 0;
  size_t want = bytes + bytes / 4 + 64;
  void *nb = rcl__malloc(want);
  if (!nb) return RCL_ERR_OUT_OF_MEMORY;
  if (*buf) memcpy(nb, *buf, *cap);
  rcl__free(*buf);
  *buf = nb;
  *cap = want;
  return 0;
}

char *rcl__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = rcl__malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

void rcl__free(void *p) {
  if (p) live_add(-1);
  free(p);
}

int rcl__mul_size(size_t *out, size_t n, size_t size, const char *what) {
  if (size != 0 && n > SIZE_MAX / size)
    return rcl__fail(RCL_ERR_OVERFLOW, "%s: %zu x %zu bytes overflows size_t", what, n, size);
  *out = n * size;
  return 0;
}
