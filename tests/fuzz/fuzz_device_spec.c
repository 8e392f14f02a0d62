/* libFuzzer target: device specs (rcl_device_find: an index, "platform:device" substrings, or one
 * substring), as given to --device and $REPROCL_DEVICE, against the OpenCL devices present. */
#include <ctype.h>
#include <stdlib.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = fuzz_cstr(data, size);
  rcl_device_info d;
  int rc = rcl_device_find(&d, s);
  FUZZ_CHECK(rc == 0 || rc == RCL_ERR_NOT_FOUND, "status %d: %s", rc, rcl_error_last());
  if (rc == RCL_ERR_NOT_FOUND && *s)
    FUZZ_CHECK(strstr(rcl_error_last(), "no OpenCL device") != NULL, "message: %s", rcl_error_last());
  if (rc == 0 && *s && isdigit((unsigned char)s[0])) {
    size_t i = 0;
    while (isdigit((unsigned char)s[i])) i++;
    if (s[i] == '\0') FUZZ_CHECK(d.index == strtoull(s, NULL, 10), "\"%s\" found device %zu", s, d.index);
  }
  free(s);
  return 0;
}
