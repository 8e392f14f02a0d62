/* CLBlast (Debian's libclblast-dev) as the peer of the reduction benchmark: the library users would
 * pick instead for BLAS level 1 on OpenCL. Linked only into the reprocl tool, and only when found at
 * configure time; otherwise the benchmark records that the peer is absent. */
#include "peers.h"

#ifdef REPROCL_HAVE_CLBLAST
#include <clblast_c.h>

int peer_clblast_available(void) { return 1; }

int peer_clblast_run(const char *op, rcl_dtype dt, size_t n, cl_mem result, cl_mem x, cl_mem y, cl_command_queue q) {
  cl_event ev = NULL;
  CLBlastStatusCode s;
  int d = dt == RCL_F64;
  if (!strcmp(op, "dot"))
    s = d ? CLBlastDdot(n, result, 0, x, 0, 1, y, 0, 1, &q, &ev) : CLBlastSdot(n, result, 0, x, 0, 1, y, 0, 1, &q, &ev);
  else if (!strcmp(op, "nrm2"))
    s = d ? CLBlastDnrm2(n, result, 0, x, 0, 1, &q, &ev) : CLBlastSnrm2(n, result, 0, x, 0, 1, &q, &ev);
  else if (!strcmp(op, "sum"))
    s = d ? CLBlastDsum(n, result, 0, x, 0, 1, &q, &ev) : CLBlastSsum(n, result, 0, x, 0, 1, &q, &ev);
  else if (!strcmp(op, "asum"))
    s = d ? CLBlastDasum(n, result, 0, x, 0, 1, &q, &ev) : CLBlastSasum(n, result, 0, x, 0, 1, &q, &ev);
  else if (!strcmp(op, "axpy"))
    s = d ? CLBlastDaxpy(n, 0.5, x, 0, 1, y, 0, 1, &q, &ev) : CLBlastSaxpy(n, 0.5f, x, 0, 1, y, 0, 1, &q, &ev);
  else
    return -1;
  if (s != CLBlastSuccess) return (int)s;
  cl_int err = clWaitForEvents(1, &ev);
  clReleaseEvent(ev);
  return err;
}
#else
int peer_clblast_available(void) { return 0; }
int peer_clblast_run(const char *op, rcl_dtype dt, size_t n, cl_mem result, cl_mem x, cl_mem y, cl_command_queue q) {
  (void)op, (void)dt, (void)n, (void)result, (void)x, (void)y, (void)q;
  return -1;
}
#endif
