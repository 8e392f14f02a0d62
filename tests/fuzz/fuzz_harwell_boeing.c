/* libFuzzer target: the Harwell-Boeing reader (rcl_hb_parse): fixed-format Fortran headers, edit
 * descriptors, pointer/index/value blocks. Same checks as the Matrix Market target. */
#include "fuzz_sparse_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_sparse(rcl_hb_parse, "fuzz.rua", data, size);
  return 0;
}
