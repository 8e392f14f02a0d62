/* Leak canary: proves that the driver suppressions of the sanitizer and valgrind jobs do not hide
 * reprocl's own leaks. Run as `leak_canary clean` it does ordinary work on every device and frees
 * everything: the tools must report nothing. Run as `leak_canary leak` it additionally drops, on every
 * device, what a buggy reprocl could forget — a host block allocated inside the library, a built user
 * program (its host struct and cl_program), a device buffer made by the library's own
 * rcl__buffer_create, and a whole context — and the tools must report the lost host memory with
 * reprocl's frames in the stack (scripts/ci-reliability.sh checks both). */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

static const char src[] = "__kernel void k(__global float *a) { a[0] = rcl_add_f32(a[0], 1.0f); }\n";

/* Kept out of line so the frames below are distinct in the reports. */
__attribute__((noinline)) static void leak_on(rcl_context *c) {
  rcl_device_info *list;
  size_t n;
  if (rcl_devices(&list, &n) == 0) list = NULL; /* rcl__calloc'd list dropped */
  rcl_program_options po = RCL_PROGRAM_OPTIONS_INIT;
  po.flags = RCL_PROGRAM_PRELUDE_OPS;
  rcl_program *p;
  if (rcl_program_build(&p, c, src, 0, &po) == 0) p = NULL; /* program dropped */
  cl_mem m;
  if (rcl__buffer_create(&m, c, CL_MEM_READ_WRITE, 4096, NULL, "canary") == 0) m = NULL; /* buffer dropped */
}

int main(int argc, char **argv) {
  int leak = argc > 1 && !strcmp(argv[1], "leak");
  rcl_device_info *list;
  size_t n;
  if (rcl_devices(&list, &n)) {
    fprintf(stderr, "leak_canary: %s\n", rcl_error_last());
    return 2;
  }
  for (size_t i = 0; i < n; i++) {
    rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
    char spec[32];
    snprintf(spec, sizeof spec, "%zu", i);
    o.device = spec;
    rcl_context *c;
    float x[1000], r;
    for (int k = 0; k < 1000; k++) x[k] = (float)k;
    if (rcl_context_create(&c, &o) || rcl_sum_f32(&r, c, x, 1000, NULL)) {
      fprintf(stderr, "leak_canary: device %zu: %s\n", i, rcl_error_last());
      return 2;
    }
    printf("device %zu (%s): sum %.1f\n", i, list[i].device_name, r);
    if (leak) {
      leak_on(c);
      c = NULL; /* the context itself dropped */
    }
    rcl_context_free(c);
  }
  rcl_devices_free(list);
  return 0;
}
