/* libFuzzer target: the name parsers of the public API (dtype, data kind, reduction op and mode).
 * Each must accept exactly its documented names (case-insensitive) and refuse anything else with
 * RCL_ERR_INVALID_ARG and a message quoting the input. */
#include <stdlib.h>
#include <strings.h>

#include "fuzz_common.h"

static int is_one_of(const char *s, const char *const *names) {
  for (; *names; names++)
    if (!strcasecmp(s, *names)) return 1;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = fuzz_cstr(data, size);
  static const char *const dtypes[] = {"f32", "float", "f64", "double", NULL};
  static const char *const kinds[] = {"uniform", "wide", "cancel", "special", NULL};
  static const char *const ops[] = {"sum", "dot", "nrm2", NULL};
  static const char *const modes[] = {"ordered", "exact", NULL};
  rcl_dtype dt;
  rcl_gen_kind k;
  rcl_reduce_op op;
  rcl_reduce_mode m;
  struct {
    int rc;
    const char *const *names;
  } r[] = {{rcl_dtype_parse(&dt, s), dtypes},
           {rcl_gen_kind_parse(&k, s), kinds},
           {rcl_reduce_op_parse(&op, s), ops},
           {rcl_reduce_mode_parse(&m, s), modes}};
  for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
    int want_ok = is_one_of(s, r[i].names);
    FUZZ_CHECK(want_ok ? r[i].rc == 0 : r[i].rc == RCL_ERR_INVALID_ARG, "parser %zu: \"%s\" gave %d", i, s, r[i].rc);
  }
  if (!is_one_of(s, dtypes)) {
    rcl_dtype_parse(&dt, s);
    FUZZ_CHECK(strstr(rcl_error_last(), s) != NULL, "message does not quote the input: %s", rcl_error_last());
  } else {
    FUZZ_CHECK(rcl_dtype_size(dt) == 4 || rcl_dtype_size(dt) == 8, "dtype %d", (int)dt);
  }
  free(s);
  return 0;
}
