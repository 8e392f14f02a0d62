/* libFuzzer target: rcl_policy_lint_source on arbitrary bytes (not NUL-terminated: the buffer has
 * exactly the input's length, so any read past it is caught by ASan). A refusal must name the source
 * and a line that exists. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *src = malloc(size ? size : 1);
  if (!src) abort();
  if (size) memcpy(src, data, size);
  int rc = rcl_policy_lint_source(src, size, "fuzz.cl");
  FUZZ_CHECK(rc == 0 || rc == RCL_ERR_POLICY, "status %d: %s", rc, rcl_error_last());
  if (rc == RCL_ERR_POLICY) {
    size_t lines = 1;
    for (size_t i = 0; i < size; i++) lines += src[i] == '\n';
    unsigned long line = 0;
    FUZZ_CHECK(sscanf(rcl_error_last(), "fuzz.cl:%lu:", &line) == 1, "message without file:line: %s", rcl_error_last());
    FUZZ_CHECK(line >= 1 && line <= lines, "line %lu outside 1..%zu: %s", line, lines, rcl_error_last());
  }
  free(src);
  return 0;
}
