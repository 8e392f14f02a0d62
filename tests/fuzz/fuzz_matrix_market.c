/* libFuzzer target: the Matrix Market reader (rcl_mm_parse). The first byte picks the dtype (bit 0:
 * f64), the rest is the file's text. A parse must give valid CSR (rcl_csr_validate, strictly increasing
 * columns per row) or RCL_ERR_PARSE/UNSUPPORTED/OVERFLOW with "name:line: problem". */
#include "fuzz_sparse_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_sparse(rcl_mm_parse, "fuzz.mtx", data, size);
  return 0;
}
