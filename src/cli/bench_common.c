/* Benchmark plumbing shared by the families' benchmarks: timing (median of repeated runs after a
 * warm-up), the device's copy bandwidth as the physical limit, and the JSON record of each case. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double cli_median(double *t, int n) {
  if (n < 1) return 0.0;
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  return t[n / 2];
}

int cli_event_seconds(double *secs, cl_event ev) {
  cl_ulong t0, t1;
  if (!ev || clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) != CL_SUCCESS ||
      clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) != CL_SUCCESS || t1 < t0)
    return 0;
  *secs = (double)(t1 - t0) * 1e-9;
  return 1;
}

void cli_time_stats(double *median, double *min, double *max, double *t, int n) {
  *median = cli_median(t, n); /* sorts t */
  *min = t[0];
  *max = t[n - 1];
}

int cli_bench_time(double *median, double *min, double *max, int repeats, cli_timed_fn fn, void *arg) {
  if (repeats < 1) repeats = 1;
  double *t = malloc((size_t)repeats * sizeof *t);
  if (!t) return RCL_ERR_OUT_OF_MEMORY;
  int rc = fn(arg); /* warm-up: builds programs, and PoCL compiles per work-group size */
  for (int i = 0; i < repeats && !rc; i++) {
    double t0 = cli_now();
    rc = fn(arg);
    t[i] = cli_now() - t0;
  }
  if (!rc) cli_time_stats(median, min, max, t, repeats);
  free(t);
  return rc;
}

static const char copy_src[] = "__kernel void rcl_bench_copy(__global const uint4 *a, __global uint4 *b, ulong n) {\n"
                               "  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) b[i] = a[i];\n"
                               "}\n";

typedef struct {
  cl_command_queue q;
  cl_kernel k;
  size_t global, local;
  int profile;    /* ask for an event (the timed calls do not: on some drivers an event costs µs) */
  double dev_min; /* the least device time (event START to END) of the profiled calls, 0 if none */
} copy_args;

static int copy_once(void *p) {
  copy_args *a = p;
  cl_event ev = NULL;
  cl_int err = clEnqueueNDRangeKernel(a->q, a->k, 1, NULL, &a->global, &a->local, 0, NULL, a->profile ? &ev : NULL);
  if (!err) err = clFinish(a->q);
  double d;
  if (!err && cli_event_seconds(&d, ev) && (a->dev_min == 0 || d < a->dev_min)) a->dev_min = d;
  if (ev) clReleaseEvent(ev);
  return err ? RCL_ERR_OPENCL : 0;
}

/* Median seconds of one copy of `bytes` (a multiple of 4096) with the plain copy kernel, finish included;
 * *dev_secs (if not NULL) the least device time of one copy, 0 where the queue does not profile. */
static int copy_seconds(double *secs, double *dev_secs, rcl_context *ctx, size_t bytes, int repeats) {
  rcl_program_options po = RCL_PROGRAM_OPTIONS_INIT;
  po.name = "bench_copy.cl";
  po.flags = RCL_PROGRAM_PRELUDE_OPS; /* no floating-point arithmetic at all */
  rcl_program *prog = NULL;
  copy_args a = {rcl_context_cl_queue(ctx), NULL, 0, 0, 0, 0};
  cl_mem in = NULL, out = NULL;
  cl_int err;
  int rc = rcl_program_build(&prog, ctx, copy_src, 0, &po);
  if (!rc) rc = rcl_program_create_kernel(&a.k, prog, "rcl_bench_copy");
  if (!rc) {
    in = clCreateBuffer(rcl_context_cl_context(ctx), CL_MEM_READ_WRITE, bytes, NULL, &err);
    out = in ? clCreateBuffer(rcl_context_cl_context(ctx), CL_MEM_READ_WRITE, bytes, NULL, &err) : NULL;
    if (!out) rc = RCL_ERR_OPENCL;
  }
  if (!rc) {
    /* Enough work-items for one uint4 each, within the loop limit of drivers that have one. */
    cl_ulong n = bytes / 16;
    size_t kmax = 256;
    clGetKernelWorkGroupInfo(a.k, rcl_context_cl_device(ctx), CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax, NULL);
    a.local = kmax < 256 ? kmax : 256;
    a.global = (size_t)((n + a.local - 1) / a.local) * a.local;
    uint8_t zero = 0;
    clEnqueueFillBuffer(a.q, in, &zero, 1, 0, bytes, 0, NULL, NULL);
    clSetKernelArg(a.k, 0, sizeof in, &in);
    clSetKernelArg(a.k, 1, sizeof out, &out);
    clSetKernelArg(a.k, 2, sizeof n, &n);
    double med, mn, mx;
    rc = cli_bench_time(&med, &mn, &mx, repeats, copy_once, &a);
    if (!rc) *secs = med;
    a.profile = 1;
    for (int i = 0; i < repeats && !rc && dev_secs; i++) rc = copy_once(&a);
    if (!rc && dev_secs) *dev_secs = a.dev_min;
  }
  if (in) clReleaseMemObject(in);
  if (out) clReleaseMemObject(out);
  if (a.k) clReleaseKernel(a.k);
  rcl_program_free(prog);
  return rc;
}

int cli_bench_copy_gbps(double *gbps, rcl_context *ctx, size_t bytes, int repeats) {
  const rcl_device_profile *p = rcl_context_profile(ctx);
  if (bytes > p->max_mem_alloc_size) bytes = (size_t)p->max_mem_alloc_size;
  bytes &= ~(size_t)4095;
  double secs;
  int rc = copy_seconds(&secs, NULL, ctx, bytes, repeats);
  if (!rc) *gbps = 2.0 * (double)bytes / secs / 1e9;
  return rc;
}

int cli_bench_launch_seconds(double *secs, double *dev_secs, rcl_context *ctx, int repeats) {
  return copy_seconds(secs, dev_secs, ctx, 4096, repeats < 20 ? 20 : repeats);
}

void cli_bench_record(cli_bench *b, const char *family, const char *kernel, const char *variant, const char *mode,
                      rcl_dtype dt, const char *size, double n, double median, double min, double max, double bytes,
                      double flops, json_t *extra) {
  double gbps = bytes / median / 1e9, gflops = flops / median / 1e9;
  json_t *o =
      json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:f,s:s,s:{s:f,s:f,s:f},s:i,s:f,s:f,s:f,s:f}", "record", "measurement",
                "family", family, "kernel", kernel, "variant", variant, "mode", mode, "dtype", rcl_dtype_name(dt),
                "size", size, "n", n, "device", b->device_name, "time_s", "median", median, "min", min, "max", max,
                "repeats", b->repeats, "bytes", bytes, "flops", flops, "gbps", gbps, "gflops", gflops);
  /* null when the copy bandwidth could not be measured: the field is always there */
  json_object_set_new(o, "copy_fraction", b->copy_gbps > 0 ? json_real(gbps / b->copy_gbps) : json_null());
  if (extra) {
    json_object_update(o, extra);
    json_decref(extra);
  }
  json_array_append_new(b->results, o);
  if (!b->quick || isatty(1))
    fprintf(stderr, "  %-8s %-14s %-12s %-16s %-4s %-10s %10.3f ms %8.1f GB/s %8.1f GFLOP/s\n", family, kernel, variant,
            mode, rcl_dtype_name(dt), size, median * 1e3, gbps, gflops);
}

void cli_bench_skip(cli_bench *b, const char *family, const char *kernel, const char *variant, const char *why) {
  json_array_append_new(b->results,
                        json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "record", "skipped", "family", family, "kernel", kernel,
                                  "variant", variant, "device", b->device_name, "skipped", why));
  fprintf(stderr, "  %-8s %-14s %-12s skipped: %s\n", family, kernel, variant, why);
}

int cli_bench_out_of_time(cli_bench *b, const char *family, const char *size, double growth) {
  double now = cli_now(), spent = now - b->family_t0;
  char why[200];
  if (b->size_t0 < 0) { /* a smaller size was already skipped: so is every larger one */
    snprintf(why, sizeof why, "time budget: a smaller size was already skipped (%.0f s spent, budget %.0f s)", spent,
             b->budget_s);
    cli_bench_skip(b, family, "all", size, why);
    return 1;
  }
  double last = b->size_t0 > 0 ? now - b->size_t0 : 0;
  b->size_t0 = now;
  if (b->budget_s <= 0 || spent + last * growth <= b->budget_s) return 0;
  snprintf(why, sizeof why, "time budget: %.0f s spent, the next size would take about %.0f s more (budget %.0f s)",
           spent, last * growth, b->budget_s);
  cli_bench_skip(b, family, "all", size, why);
  b->size_t0 = -1;
  return 1;
}

int cli_bench_peer_on(cli_bench *b, const char *family, const char *name, int available) {
  if (!available) {
    cli_bench_skip(b, family, "all", name,
                   !strcmp(name, "clblast") ? "CLBlast not installed (libclblast-dev) at build time"
                                            : "ViennaCL not found at build time (libviennacl-dev and a C++ compiler)");
    return 0;
  }
  if (!cli_bench_peer_runs(b, family, name, available)) {
    cli_bench_skip(b, family, "all", name, "skipped by --skip-peer");
    return 0;
  }
  return 1;
}

const char *cli_skip_peer_item(const char *p, const char **family, size_t *fl, const char **peer, size_t *pl) {
  const char *c = strchr(p, ',');
  size_t l = c ? (size_t)(c - p) : strlen(p);
  const char *colon = memchr(p, ':', l);
  *family = colon ? p : NULL;
  *fl = colon ? (size_t)(colon - p) : 0;
  *peer = colon ? colon + 1 : p;
  *pl = colon ? l - *fl - 1 : l;
  return c ? c + 1 : p + l;
}

int cli_bench_peer_runs(const cli_bench *b, const char *family, const char *name, int available) {
  size_t nl = strlen(name), ffl = strlen(family);
  for (const char *p = b->skip_peers; available && p && *p;) {
    const char *f, *peer;
    size_t fl, pl;
    p = cli_skip_peer_item(p, &f, &fl, &peer, &pl);
    if ((!f || (fl == ffl && !strncmp(f, family, fl))) && pl == nl && !strncmp(peer, name, nl)) return 0;
  }
  return available;
}
