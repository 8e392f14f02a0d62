/* Reduction benchmarks: sum, dot, nrm2 in ordered and exact mode, reproducible beside native. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "peers.h"

/* Where a call's time goes: the host time of the rcl_reduce_enqueue call itself (in the timed calls, which
 * ask for no event, as most callers would), and the device time of its kernel (the event's START to END on
 * the context's profiling queue, from as many extra calls that ask for one). The rest of the wall time is
 * the driver's launch and completion latency. The last BREAKDOWN_MAX values of each are kept. */
#define BREAKDOWN_MAX 64

typedef struct {
  rcl_context *ctx;
  rcl_reduce_op op;
  rcl_dtype dt;
  size_t n;
  cl_mem x, y, r;
  rcl_reduce_options o;
  int profile; /* ask for an event and keep its device time */
  double enq[BREAKDOWN_MAX], dev[BREAKDOWN_MAX];
  int calls, dev_calls;
} red_case;

static int red_once(void *p) {
  red_case *c = p;
  rcl_queue_args q = RCL_QUEUE_ARGS_INIT;
  cl_event ev = NULL;
  q.event = c->profile ? &ev : NULL;
  double t0 = cli_now();
  int rc = rcl_reduce_enqueue(c->r, 0, c->ctx, c->op, c->dt, c->n, c->x, 0, c->y, 0, &c->o, &q);
  double t1 = cli_now();
  if (!rc && clFinish(rcl_context_cl_queue(c->ctx)) != CL_SUCCESS) rc = RCL_ERR_OPENCL;
  double d;
  if (!rc && !c->profile) c->enq[c->calls++ % BREAKDOWN_MAX] = t1 - t0;
  if (!rc && cli_event_seconds(&d, ev)) c->dev[c->dev_calls++ % BREAKDOWN_MAX] = d;
  if (ev) clReleaseEvent(ev);
  return rc;
}

/* The median of the last `count` values of a ring of BREAKDOWN_MAX written `calls` times. */
static double ring_median(const double *ring, int calls, int count) {
  double t[BREAKDOWN_MAX];
  if (count > BREAKDOWN_MAX) count = BREAKDOWN_MAX;
  if (count > calls) count = calls;
  for (int i = 0; i < count; i++) t[i] = ring[(calls - 1 - i) % BREAKDOWN_MAX];
  return cli_median(t, count);
}

/* host_enqueue_s of a case's timed calls, and device_s from `repeats` more calls with an event (null
 * where the queue does not profile). */
static json_t *breakdown_json(red_case *c, int repeats) {
  c->profile = 1;
  for (int i = 0; i < repeats; i++)
    if (red_once(c)) break;
  c->profile = 0;
  json_t *o = json_object();
  json_object_set_new(o, "host_enqueue_s", json_real(ring_median(c->enq, c->calls, repeats)));
  json_object_set_new(o, "device_s",
                      c->dev_calls ? json_real(ring_median(c->dev, c->dev_calls, repeats)) : json_null());
  return o;
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
  int rc =
      rcl_axpy_enqueue(c->y, 0, c->ctx, c->dt, c->n, c->dt == RCL_F32 ? (void *)&a32 : (void *)&a64, c->x, 0, 0, NULL);
  if (!rc && clFinish(rcl_context_cl_queue(c->ctx)) != CL_SUCCESS) rc = RCL_ERR_OPENCL;
  return rc;
}

/* One size and dtype of bench_size: the two input vectors x, y and the result r on the device, the size's
 * label and the JSON fields every record of it carries (nj). */
typedef struct {
  rcl_dtype dt;
  size_t n, es;
  const char *size;
  cl_mem x, y, r;
  json_t *nj;
} size_case;

/* x and y filled with the same deterministic uniform values. */
static int upload_vectors(cli_bench *b, const size_case *s) {
  void *h = malloc(s->n * s->es);
  int rc = h ? 0 : RCL_ERR_OUT_OF_MEMORY;
  if (!rc) {
    rcl_generate(h, s->dt, s->n, RCL_GEN_UNIFORM, 7);
    if (clEnqueueWriteBuffer(rcl_context_cl_queue(b->ctx), s->x, CL_TRUE, 0, s->n * s->es, h, 0, NULL, NULL) ||
        clEnqueueWriteBuffer(rcl_context_cl_queue(b->ctx), s->y, CL_TRUE, 0, s->n * s->es, h, 0, NULL, NULL))
      rc = RCL_ERR_OPENCL;
  }
  free(h);
  return rc;
}

/* The peer first: CLBlast's Xsum, Xasum, Xdot, Xnrm2 and Xaxpy on the same buffers. Its sum, dot and
 * nrm2 are compared with reprocl's ordered result (drift_vs_reprocl), so a peer that returns garbage
 * on some device cannot pass for a fast one. */
static int bench_peer(cli_bench *b, const size_case *s) {
  static const char *peer_ops[] = {"sum", "asum", "dot", "nrm2", "axpy"};
  static const int peer_ref[] = {RCL_OP_SUM, -1, RCL_OP_DOT, RCL_OP_NRM2, -1};
  size_t es = s->es, n = s->n;
  rcl_dtype dt = s->dt;
  cl_command_queue q = rcl_context_cl_queue(b->ctx);
  int rc = 0;
  for (int o = 0; o < 5 && !rc && cli_bench_peer_runs(b, "reduce", "clblast", peer_clblast_available()); o++) {
    unsigned char ref[8], got[8];
    if (peer_ref[o] >= 0) {
      red_case c = {
          b->ctx, (rcl_reduce_op)peer_ref[o], dt, n, s->x, s->y, s->r, RCL_REDUCE_OPTIONS_INIT, 0, {0}, {0}, 0, 0};
      if ((rc = red_once(&c)) != 0 || clEnqueueReadBuffer(q, s->r, CL_TRUE, 0, es, ref, 0, NULL, NULL)) {
        rc = rc ? rc : RCL_ERR_OPENCL;
        break;
      }
    }
    peer_case pc = {peer_ops[o], dt, n, s->r, s->x, s->y, q};
    double med, mn, mx;
    if (cli_bench_time(&med, &mn, &mx, b->repeats, peer_once, &pc)) {
      cli_bench_skip(b, "reduce", peer_ops[o], "clblast", "CLBlast failed on this device");
      continue;
    }
    json_t *extra = json_deep_copy(s->nj);
    if (peer_ref[o] >= 0 && !clEnqueueReadBuffer(q, s->r, CL_TRUE, 0, es, got, 0, NULL, NULL)) {
      cli_drift d;
      cli_drift_compute(&d, ref, got, 1, dt);
      json_object_set_new(extra, "drift_vs_reprocl", cli_drift_json(&d));
    }
    int two = !strcmp(peer_ops[o], "dot") || !strcmp(peer_ops[o], "axpy");
    double bytes = (!strcmp(peer_ops[o], "axpy") ? 3.0 : two ? 2.0 : 1.0) * (double)(n * es);
    cli_bench_record(b, "reduce", peer_ops[o], "clblast", "peer:clblast", dt, s->size, (double)n, med, mn, mx, bytes,
                     two ? 2.0 * (double)n : (double)n, extra);
  }
  return rc;
}

/* reprocl's axpy beside CLBlast's, reproducible and native. */
static int bench_axpy(cli_bench *b, const size_case *s) {
  int rc = 0;
  for (int native = 0; native < 2 && !rc; native++) {
    axpy_case ac = {native ? b->native : b->ctx, s->dt, s->n, s->x, s->y};
    double med, mn, mx;
    rc = cli_bench_time(&med, &mn, &mx, b->repeats, axpy_once, &ac);
    if (!rc)
      cli_bench_record(b, "reduce", "axpy", "blas1", native ? "native" : "reproducible", s->dt, s->size, (double)s->n,
                       med, mn, mx, 3.0 * (double)(s->n * s->es), 2.0 * (double)s->n, json_deep_copy(s->nj));
  }
  return rc;
}

/* sum, dot and nrm2 in ordered and exact mode, reproducible and native, with where each call's time goes. */
static int bench_reductions(cli_bench *b, const size_case *s) {
  static const rcl_reduce_op ops[] = {RCL_OP_SUM, RCL_OP_DOT, RCL_OP_NRM2};
  size_t es = s->es, n = s->n;
  int rc = 0;
  for (int o = 0; o < 3 && !rc; o++)
    for (int m = 0; m < 2 && !rc; m++)
      for (int native = 0; native < 2 && !rc; native++) {
        red_case c = {native ? b->native : b->ctx, ops[o], s->dt, n,   s->x, s->y, s->r,
                      RCL_REDUCE_OPTIONS_INIT,     0,      {0},   {0}, 0,    0};
        c.o.mode = m ? RCL_REDUCE_EXACT : RCL_REDUCE_ORDERED;
        double med, mn, mx;
        rc = cli_bench_time(&med, &mn, &mx, b->repeats, red_once, &c);
        if (rc) break;
        double loads = ops[o] == RCL_OP_DOT ? 2.0 : 1.0;
        json_t *extra = breakdown_json(&c, b->repeats);
        json_object_update(extra, s->nj);
        cli_bench_record(b, "reduce", rcl_reduce_op_name(ops[o]), rcl_reduce_mode_name(c.o.mode),
                         native ? "native" : "reproducible", s->dt, s->size, (double)n, med, mn, mx,
                         loads * (double)(n * es), ops[o] == RCL_OP_SUM ? (double)n : 2.0 * (double)n, extra);
      }
  return rc;
}

/* One size and dtype: CLBlast (Xsum, Xasum, Xdot, Xnrm2, Xaxpy), reprocl's axpy, and sum, dot, nrm2 in
 * ordered and exact mode, reproducible beside native, all on the same two device vectors. */
static int bench_size(cli_bench *b, rcl_dtype dt, int lg) {
  const rcl_device_profile *p = rcl_context_profile(b->ctx);
  size_t es = rcl_dtype_size(dt), n = (size_t)1 << lg;
  char size[32];
  snprintf(size, sizeof size, "2^%d", lg);
  if (n * es > p->max_mem_alloc_size) {
    cli_bench_skip(b, "reduce", "all", size, "vector larger than the device's largest buffer");
    return 0;
  }
  cl_int err;
  cl_context clc = rcl_context_cl_context(b->ctx);
  size_case s = {dt, n, es, size, NULL, NULL, NULL, NULL};
  s.x = clCreateBuffer(clc, CL_MEM_READ_WRITE, n * es, NULL, &err);
  s.y = s.x ? clCreateBuffer(clc, CL_MEM_READ_WRITE, n * es, NULL, &err) : NULL;
  s.r = s.y ? clCreateBuffer(clc, CL_MEM_READ_WRITE, es, NULL, &err) : NULL;
  if (!s.r) {
    if (s.x) clReleaseMemObject(s.x);
    if (s.y) clReleaseMemObject(s.y);
    cli_bench_skip(b, "reduce", "all", size, "device buffers could not be allocated");
    return 0;
  }
  int rc = upload_vectors(b, &s);
  s.nj = json_pack("{s:I}", "n", (json_int_t)n);
  if (!rc) rc = bench_peer(b, &s);
  if (!rc) rc = bench_axpy(b, &s);
  if (!rc) rc = bench_reductions(b, &s);
  json_decref(s.nj);
  clReleaseMemObject(s.x);
  clReleaseMemObject(s.y);
  clReleaseMemObject(s.r);
  return rc ? cli_fail("reduce benchmark (%s %s)", rcl_dtype_name(dt), size) : 0;
}

int cli_bench_reduce(cli_bench *b) {
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  const rcl_device_profile *p = rcl_context_profile(b->ctx);
  int first_log2 = b->quick ? 10 : 20, last_log2 = b->quick ? 14 : 28;
  cli_bench_peer_on(b, "reduce", "clblast", peer_clblast_available());
  int supported[2];
  for (int d = 0; d < 2; d++) {
    const char *why;
    supported[d] = rcl_device_profile_support(p, RCL_FAMILY_REDUCE, dts[d], &why) != RCL_SUPPORT_NONE;
    if (!supported[d]) cli_bench_skip(b, "reduce", "all", rcl_dtype_name(dts[d]), why);
  }
  /* Sizes outer, smallest first, so that a time budget cuts the largest sizes of both dtypes. */
  for (int lg = first_log2; lg <= last_log2; lg += 2) {
    char size[32];
    snprintf(size, sizeof size, "2^%d", lg);
    if (cli_bench_out_of_time(b, "reduce", size, 4.0)) continue;
    for (int d = 0; d < 2; d++)
      if (supported[d]) {
        int rc = bench_size(b, dts[d], lg);
        if (rc) return rc;
      }
  }
  return 0;
}
