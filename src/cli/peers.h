/* Peer libraries compared in `reprocl bench` (optional; see CMakeLists.txt). */
#ifndef REPROCL_CLI_PEERS_H
#define REPROCL_CLI_PEERS_H
#include <string.h>

#include "reprocl/reprocl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CLBlast: op is "sum", "asum", "dot", "nrm2" (result[0] = op(x[, y])) or "axpy" (y = 0.5 x + y).
 * Blocks until done. Returns 0, or CLBlast's / OpenCL's status. */
int peer_clblast_available(void);
int peer_clblast_run(const char *op, rcl_dtype dt, size_t n, cl_mem result, cl_mem x, cl_mem y, cl_command_queue q);

/* ViennaCL (Debian's libviennacl-dev, header-only C++; peer_viennacl.cpp, compiled only when found): its
 * compressed_matrix SpMV and CG solver on reprocl's own OpenCL context and queue. A matrix is uploaded in
 * ViennaCL's layout (32-bit row pointers); vectors are the caller's cl_mem buffers, used in place. Every
 * call returns 0, or -1 with the reason in peer_viennacl_error() (ViennaCL's exceptions never escape). */
typedef struct peer_viennacl_matrix peer_viennacl_matrix;
int peer_viennacl_available(void);
const char *peer_viennacl_error(void);
int peer_viennacl_matrix_create(peer_viennacl_matrix **out, cl_command_queue q, const rcl_csr *A);
void peer_viennacl_matrix_free(peer_viennacl_matrix *M);
/* y = A x, `reps` times, then waits for the queue. */
int peer_viennacl_spmv(peer_viennacl_matrix *M, cl_mem y, cl_mem x, int reps);
/* ViennaCL's CG (the pipelined solver; with jacobi, its Jacobi-preconditioned one) from x0 = 0 for exactly
 * `iterations` iterations (tolerance 0), writing the solution to x; *done receives the iterations made. */
int peer_viennacl_cg(peer_viennacl_matrix *M, cl_mem x, cl_mem b, size_t iterations, int jacobi, size_t *done);

/* OpenMM (the PyPI package `openmm`; peer_openmm.c) as the MD benchmark's peer: scripts/peer_openmm.py run
 * with $REPROCL_PYTHON or python3 from PATH, on the same system and initial state. The script path:
 * peer_openmm_script (0, or -1 with the reason in peer_openmm_error()). */
const char *peer_openmm_python(void);
int peer_openmm_script(char *path, size_t cap);
const char *peer_openmm_error(void);
/* Runs argv (argv[0] the python, argv[1] the script; NULL-terminated) without a shell: 0 and *json_text (its
 * stdout, malloc'd) when it exits 0, else -1 with the reason in peer_openmm_error(). */
int peer_openmm_run(char **json_text, char *const argv[]);
/* The indices OpenMM's OpenCL platform takes for dev (OpenCLPlatformIndex, DeviceIndex): 0, or -1. */
int peer_openmm_opencl_index(cl_device_id dev, int *platform_index, int *device_index);
/* OpenMM's platforms on dev's hardware: "Reference,CPU,OpenCL" on a CPU, "OpenCL,CUDA" on an NVIDIA GPU,
 * "OpenCL,HIP" on an AMD GPU, else "OpenCL". */
const char *peer_openmm_platforms(cl_device_id dev);
#ifdef __cplusplus
}
#endif
#endif
