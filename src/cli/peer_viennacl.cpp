/* ViennaCL (Debian's libviennacl-dev, header-only C++ with an OpenCL backend) as the peer of the SpMV and
 * CG benchmarks: the library users would pick instead for sparse linear algebra on OpenCL. Compiled into
 * the reprocl tool only when CMake finds ViennaCL and a C++ compiler, never into the library. ViennaCL
 * runs on reprocl's own cl_context and queue (viennacl::ocl::setup_context), one ViennaCL context id per
 * OpenCL context; ViennaCL retains the handles it is given, so reprocl may release its own first.
 * ViennaCL reports errors by exceptions: each entry point catches them all and keeps the message. */
#define VIENNACL_WITH_OPENCL 1
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS 1

#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <viennacl/compressed_matrix.hpp>
#include <viennacl/linalg/cg.hpp>
#include <viennacl/linalg/jacobi_precond.hpp>
#include <viennacl/linalg/prod.hpp>
#include <viennacl/ocl/backend.hpp>
#include <viennacl/vector.hpp>

#include "peers.h"

namespace {

std::string last_error;

/* ViennaCL context ids by OpenCL context: 0 is ViennaCL's own default, never used here. */
std::map<cl_context, long> context_ids;

/* Makes the ViennaCL context of q's cl_context current (setting it up on first use with q). */
void use_queue(cl_command_queue q) {
  cl_context c = NULL;
  cl_device_id d = NULL;
  if (clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof c, &c, NULL) != CL_SUCCESS ||
      clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof d, &d, NULL) != CL_SUCCESS)
    throw std::runtime_error("clGetCommandQueueInfo failed on the benchmark's queue");
  std::map<cl_context, long>::iterator it = context_ids.find(c);
  if (it == context_ids.end()) {
    long id = (long)context_ids.size() + 1;
    std::vector<cl_device_id> devices(1, d);
    std::vector<cl_command_queue> queues(1, q);
    viennacl::ocl::setup_context(id, c, devices, queues);
    it = context_ids.insert(std::make_pair(c, id)).first;
  }
  viennacl::ocl::switch_context(it->second);
}

int fail(const char *what, const std::exception &e) {
  last_error = std::string("ViennaCL ") + what + ": " + e.what();
  return -1;
}

struct matrix_base {
  virtual ~matrix_base() {}
  virtual void spmv(cl_mem y, cl_mem x, int reps) = 0;
  virtual size_t cg(cl_mem x, cl_mem b, size_t iterations, bool jacobi) = 0;
};

template <typename T> struct matrix : matrix_base {
  cl_command_queue q;
  viennacl::compressed_matrix<T> A;

  matrix(cl_command_queue queue, const rcl_csr *csr) : q(queue), A(csr->nrows, csr->ncols, csr->nnz) {
    /* ViennaCL's layout: 32-bit row pointers and column indices, values as they are */
    std::vector<unsigned int> rows(csr->nrows + 1), cols(csr->col_idx, csr->col_idx + csr->nnz);
    for (size_t i = 0; i <= csr->nrows; i++) rows[i] = (unsigned int)csr->row_ptr[i];
    A.set(&rows[0], &cols[0], static_cast<const T *>(csr->values), csr->nrows, csr->ncols, csr->nnz);
    viennacl::backend::finish();
  }

  void spmv(cl_mem y, cl_mem x, int reps) {
    use_queue(q);
    viennacl::vector<T> xv(x, A.size2()), yv(y, A.size1());
    for (int i = 0; i < reps; i++) yv = viennacl::linalg::prod(A, xv);
    if (clFinish(q) != CL_SUCCESS) throw std::runtime_error("clFinish failed after the SpMVs");
  }

  size_t cg(cl_mem x, cl_mem b, size_t iterations, bool jacobi) {
    use_queue(q);
    viennacl::vector<T> xv(x, A.size1()), bv(b, A.size1());
    /* tolerance 0: runs every iteration (the relative residual is never below 0) */
    viennacl::linalg::cg_tag tag(0.0, (unsigned int)iterations);
    if (jacobi) {
      viennacl::linalg::jacobi_precond<viennacl::compressed_matrix<T>> pre(A, viennacl::linalg::jacobi_tag());
      xv = viennacl::linalg::solve(A, bv, tag, pre);
    } else {
      xv = viennacl::linalg::solve(A, bv, tag);
    }
    if (clFinish(q) != CL_SUCCESS) throw std::runtime_error("clFinish failed after CG");
    return (size_t)tag.iters();
  }
};

} // namespace

struct peer_viennacl_matrix {
  matrix_base *m;
};

extern "C" {

int peer_viennacl_available(void) { return 1; }

const char *peer_viennacl_error(void) { return last_error.c_str(); }

int peer_viennacl_matrix_create(peer_viennacl_matrix **out, cl_command_queue q, const rcl_csr *A) {
  *out = NULL;
  if (A->nrows == 0 || A->ncols == 0 || A->nnz == 0 || A->nnz > UINT32_MAX) {
    last_error = "ViennaCL: the matrix is empty or has 2^32 entries or more (32-bit row pointers)";
    return -1;
  }
  try {
    use_queue(q);
    peer_viennacl_matrix *M = new peer_viennacl_matrix;
    M->m = NULL;
    try {
      if (A->dtype == RCL_F64)
        M->m = new matrix<double>(q, A);
      else
        M->m = new matrix<float>(q, A);
    } catch (...) {
      delete M;
      throw;
    }
    *out = M;
    return 0;
  } catch (const std::exception &e) {
    return fail("matrix upload", e);
  }
}

void peer_viennacl_matrix_free(peer_viennacl_matrix *M) {
  if (!M) return;
  try {
    delete M->m;
  } catch (...) {
  }
  delete M;
}

int peer_viennacl_spmv(peer_viennacl_matrix *M, cl_mem y, cl_mem x, int reps) {
  try {
    M->m->spmv(y, x, reps);
    return 0;
  } catch (const std::exception &e) {
    return fail("SpMV", e);
  }
}

int peer_viennacl_cg(peer_viennacl_matrix *M, cl_mem x, cl_mem b, size_t iterations, int jacobi, size_t *done) {
  try {
    *done = M->m->cg(x, b, iterations, jacobi != 0);
    return 0;
  } catch (const std::exception &e) {
    return fail("CG", e);
  }
}

} // extern "C"
