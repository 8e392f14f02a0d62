/* Reduction benchmarks: sum, dot, nrm2 in ordered and exact mode, reproducible beside native. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "peers.h"

typedef struct {
  rcl_context *ctx;
  rcl_reduce_op op;
  rcl_dtype dt;
  size_t n;
  cl_mem x, y, r;
  rcl_reduce_options o;
} red_case;

static int red_once(void *p) {
  red_case *c = p;
  int rc = rcl_reduce_enqueue(c->r, 0, c->ctx, c->op, c->dt, c->n, c->x, 0, c->y, 0, &c->o, NULL);
  if (!rc && clFinish(rcl_context_cl_queue(c->ctx)) != CL_SUCCESS) rc = RCL_ERR_OPENCL;
  return rc;
}

typedef struct {
  const char *op;
  rcl_dtype dt;
  size_t n;
  cl_mem r, x, y;
  cl_command_queue q;
} peer_case;

static int peer_once(void *p) {
  peer_case *c = p;
  return peer_clblast_run(c->op, c->dt, c->n, c->r, c->x, c->y, c->q) ? RCL_ERR_OPENCL : 0;
}

typedef struct {
  rcl_context *ctx;
  rcl_dtype dt;
  size_t n;
  cl_mem x, y;
} axpy_case;

static int axpy_once(void *p) {
  axpy_case *c = p;
  double a64 = 0.5;
  float a32 = 0.5f;
  int rc = rcl_axpy_enqueue(c->y, 0, c->ctx, c->dt, c->n, c->dt == RCL_F32 ? (void *)&a32 : (void *)&a64, c->x, 0, 0,
                            NULL);
  if (!rc && clFinish(rcl_context_cl_queue(c->ctx)) != CL_SUCCESS) rc = RCL_ERR_OPENCL;
  return rc;
}

int cli_bench_reduce(cli_bench *b) {
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  static const rcl_reduce_op ops[] = {RCL_OP_SUM, RCL_OP_DOT, RCL_OP_NRM2};
  const rcl_device_profile *p = rcl_context_profile(b->ctx);
  int first_log2 = b->quick ? 10 : 20, last_log2 = b->quick ? 14 : 28;
  for (int d = 0; d < 2; d++) {
    const char *why;
    if (rcl_device_profile_support(p, RCL_FAMILY_REDUCE, dts[d], &why) == RCL_SUPPORT_NONE) {
      cli_bench_skip(b, "reduce", "all", rcl_dtype_name(dts[d]), why);
      continue;
    }
    size_t es = rcl_dtype_size(dts[d]);
    for (int lg = first_log2; lg <= last_log2; lg += 2) {
      size_t n = (size_t)1 << lg;
      char size[32];
      snprintf(size, sizeof size, "2^%d", lg);
      if (n * es > p->max_mem_alloc_size) {
        cli_bench_skip(b, "reduce", "all", size, "vector larger than the device's largest buffer");
        continue;
      }
      cl_int err;
      cl_context clc = rcl_context_cl_context(b->ctx);
      cl_mem x = clCreateBuffer(clc, CL_MEM_READ_WRITE, n * es, NULL, &err);
      cl_mem y = x ? clCreateBuffer(clc, CL_MEM_READ_WRITE, n * es, NULL, &err) : NULL;
      cl_mem r = y ? clCreateBuffer(clc, CL_MEM_READ_WRITE, es, NULL, &err) : NULL;
      if (!r) {
        if (x) clReleaseMemObject(x);
        if (y) clReleaseMemObject(y);
        cli_bench_skip(b, "reduce", "all", size, "device buffers could not be allocated");
        continue;
      }
      void *h = malloc(n * es);
      int rc = h ? 0 : RCL_ERR_OUT_OF_MEMORY;
      if (!rc) {
        rcl_generate(h, dts[d], n, RCL_GEN_UNIFORM, 7);
        clEnqueueWriteBuffer(rcl_context_cl_queue(b->ctx), x, CL_TRUE, 0, n * es, h, 0, NULL, NULL);
        clEnqueueWriteBuffer(rcl_context_cl_queue(b->ctx), y, CL_TRUE, 0, n * es, h, 0, NULL, NULL);
      }
      free(h);
      /* The peer first: CLBlast's Xsum, Xasum, Xdot, Xnrm2 and Xaxpy on the same buffers. */
      static const char *peer_ops[] = {"sum", "asum", "dot", "nrm2", "axpy"};
      for (int o = 0; o < 5 && !rc; o++) {
        if (!peer_clblast_available()) {
          if (lg == first_log2 && o == 0)
            cli_bench_skip(b, "reduce", "all", "clblast", "CLBlast not installed (libclblast-dev) at build time");
          break;
        }
        peer_case pc = {peer_ops[o], dts[d], n, r, x, y, rcl_context_cl_queue(b->ctx)};
        double med, mn, mx;
        if (cli_bench_time(&med, &mn, &mx, b->repeats, peer_once, &pc)) {
          cli_bench_skip(b, "reduce", peer_ops[o], "clblast", "CLBlast failed on this device");
          continue;
        }
        int two = !strcmp(peer_ops[o], "dot") || !strcmp(peer_ops[o], "axpy");
        double bytes = (!strcmp(peer_ops[o], "axpy") ? 3.0 : two ? 2.0 : 1.0) * (double)(n * es);
        cli_bench_record(b, "reduce", peer_ops[o], "clblast", "peer:clblast", dts[d], size, med, mn, mx, bytes,
                         two ? 2.0 * (double)n : (double)n, json_pack("{s:I}", "n", (json_int_t)n));
      }
      /* reprocl's axpy beside CLBlast's. */
      for (int native = 0; native < 2 && !rc; native++) {
        axpy_case ac = {native ? b->native : b->ctx, dts[d], n, x, y};
        double med, mn, mx;
        rc = cli_bench_time(&med, &mn, &mx, b->repeats, axpy_once, &ac);
        if (!rc)
          cli_bench_record(b, "reduce", "axpy", "blas1", native ? "native" : "reproducible", dts[d], size, med, mn, mx,
                           3.0 * (double)(n * es), 2.0 * (double)n, json_pack("{s:I}", "n", (json_int_t)n));
      }
      for (int o = 0; o < 3 && !rc; o++)
        for (int m = 0; m < 2 && !rc; m++)
          for (int native = 0; native < 2 && !rc; native++) {
            red_case c = {native ? b->native : b->ctx, ops[o], dts[d], n, x, y, r, RCL_REDUCE_OPTIONS_INIT};
            c.o.mode = m ? RCL_REDUCE_EXACT : RCL_REDUCE_ORDERED;
            double med, mn, mx;
            rc = cli_bench_time(&med, &mn, &mx, b->repeats, red_once, &c);
            if (rc) break;
            double loads = ops[o] == RCL_OP_DOT ? 2.0 : 1.0;
            cli_bench_record(b, "reduce", rcl_reduce_op_name(ops[o]), rcl_reduce_mode_name(c.o.mode),
                             native ? "native" : "reproducible", dts[d], size, med, mn, mx, loads * (double)(n * es),
                             ops[o] == RCL_OP_SUM ? (double)n : 2.0 * (double)n,
                             json_pack("{s:I}", "n", (json_int_t)n));
          }
      clReleaseMemObject(x);
      clReleaseMemObject(y);
      clReleaseMemObject(r);
      if (rc) return cli_fail("reduce benchmark");
    }
  }
  return 0;
}
