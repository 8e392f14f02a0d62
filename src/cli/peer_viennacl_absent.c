/* The ViennaCL peer when this build has none (CMake did not find libviennacl-dev and a C++ compiler):
 * the benchmarks record that it is absent and run the rest. The real one is peer_viennacl.cpp. */
#include "peers.h"

#ifndef REPROCL_HAVE_VIENNACL
int peer_viennacl_available(void) { return 0; }
const char *peer_viennacl_error(void) { return "ViennaCL not found at build time"; }
int peer_viennacl_matrix_create(peer_viennacl_matrix **out, cl_command_queue q, const rcl_csr *A) {
  (void)q, (void)A;
  *out = NULL;
  return -1;
}
void peer_viennacl_matrix_free(peer_viennacl_matrix *M) { (void)M; }
int peer_viennacl_spmv(peer_viennacl_matrix *M, cl_mem y, cl_mem x, int reps) {
  (void)M, (void)y, (void)x, (void)reps;
  return -1;
}
int peer_viennacl_cg(peer_viennacl_matrix *M, cl_mem x, cl_mem b, size_t iterations, int jacobi, size_t *done) {
  (void)M, (void)x, (void)b, (void)iterations, (void)jacobi;
  *done = 0;
  return -1;
}
#else
typedef int peer_viennacl_absent_unused; /* ISO C: a translation unit is not empty */
#endif
