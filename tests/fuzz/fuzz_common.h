/* Shared helpers of the libFuzzer targets (tests/fuzz/README.md). */
#ifndef REPROCL_FUZZ_COMMON_H
#define REPROCL_FUZZ_COMMON_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reprocl/reprocl.h"

/* A property violation is a finding like a crash: print it and abort so libFuzzer saves the input.
 * Written to fd 2 directly: a target may point the stderr stream elsewhere to silence the code under
 * test. */
#define FUZZ_CHECK(cond, ...)                                                  \
  do {                                                                         \
    if (!(cond)) {                                                             \
      dprintf(2, "fuzz property violated at %s:%d: ", __FILE__, __LINE__);     \
      dprintf(2, __VA_ARGS__);                                                 \
      dprintf(2, "\n");                                                        \
      abort();                                                                 \
    }                                                                          \
  } while (0)

/* The input as a NUL-terminated string in its own allocation (so ASan sees any over-read); bytes
 * after an embedded NUL are simply not part of it. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) abort();
  if (size) memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
#endif
