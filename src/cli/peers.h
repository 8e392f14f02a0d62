/* Peer libraries compared in `reprocl bench` (optional; see CMakeLists.txt). */
#ifndef REPROCL_CLI_PEERS_H
#define REPROCL_CLI_PEERS_H
#include <string.h>

#include "reprocl/reprocl.h"

/* CLBlast: op is "sum", "asum", "dot", "nrm2" (result[0] = op(x[, y])) or "axpy" (y = 0.5 x + y).
 * Blocks until done. Returns 0, or CLBlast's / OpenCL's status. */
int peer_clblast_available(void);
int peer_clblast_run(const char *op, rcl_dtype dt, size_t n, cl_mem result, cl_mem x, cl_mem y, cl_command_queue q);
#endif
