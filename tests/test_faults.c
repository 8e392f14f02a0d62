/* Device and numeric faults (docs/reliability.md, "Faults"). Each device fault must give a clear
 * status and message, leave nothing behind (host blocks: the allocator's live count; OpenCL objects:
 * the context's reference count on PoCL, whose objects each hold one) and leave the context usable: a
 * reduction is run and checked after every fault. Numeric faults (NaN, inf, overflow, signed zeros,
 * subnormals) must give the documented bits on every device, equal to the host reference. */
/* MAP_ANONYMOUS and MAP_NORESERVE are not POSIX. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/internal.h"
#include "testlib.h"

/* ---- leak accounting and the "still usable" check ----------------------------------------------- */

typedef struct {
  long live;
  cl_uint refs;
  int check_refs;
} baseline;

static cl_uint ctx_refs(rcl_context *c) {
  cl_uint r = 0;
  clGetContextInfo(rcl_context_cl_context(c), CL_CONTEXT_REFERENCE_COUNT, sizeof r, &r, NULL);
  return r;
}

static baseline take_baseline(rcl_context *c) {
  clFinish(rcl_context_cl_queue(c));
  baseline b = {rcl__alloc_live(), 0, strstr(rcl_context_profile(c)->platform_name, "Portable") != NULL};
  if (b.check_refs) b.refs = ctx_refs(c);
  return b;
}

/* Nothing leaked since the baseline, and the context still computes a reduction exactly. */
static void still_sound(rcl_context *c, baseline b, const char *after) {
  clFinish(rcl_context_cl_queue(c));
  ck_assert_msg(rcl__alloc_live() == b.live, "after %s: %ld host block(s) leaked", after, rcl__alloc_live() - b.live);
  if (b.check_refs)
    ck_assert_msg(ctx_refs(c) == b.refs, "after %s: %d OpenCL object(s) leaked", after, (int)(ctx_refs(c) - b.refs));
  float x[4097], r, want;
  rt_fill(x, RCL_F32, 4097, "cancel", 77);
  rt_ok(rcl_sum_f32(&r, c, x, 4097, NULL));
  rt_ok(rcl_ref_reduce(&want, RCL_OP_SUM, RCL_F32, RCL_REDUCE_ORDERED, 4097, x, NULL));
  rt_assert_bits_eq(&r, &want, 1, RCL_F32, "reduction after %s", after);
}

/* A read-only mapping of zero pages that costs no memory: host "data" for sizes the library must
 * refuse before it reads a byte. */
static void *huge_zero_map(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ck_assert_msg(p != MAP_FAILED, "mmap of %zu bytes: %s", bytes, strerror(errno));
  return p;
}

/* ---- device faults --------------------------------------------------------------------------------- */

/* Buffers above CL_DEVICE_MAX_MEM_ALLOC_SIZE are refused by the library before the driver is asked
 * (so no driver-specific behaviour, and nothing is read from the host array), with the limit named. */
START_TEST(buffer_above_max_alloc_refused) {
  rcl_context *c = rt_ctx(_i);
  const rcl_device_profile *p = rcl_context_profile(c);
  baseline b = take_baseline(c);
  size_t n = (size_t)(p->max_mem_alloc_size / 4) + 1, bytes = n * 4;
  void *x = huge_zero_map(bytes);
  float r;
  float alpha = 2.0f;
  rt_fails(rcl_sum_f32(&r, c, x, n, NULL), RCL_ERR_UNSUPPORTED, "CL_DEVICE_MAX_MEM_ALLOC_SIZE");
  rt_fails(rcl_dot_f32(&r, c, x, x, n, NULL), RCL_ERR_UNSUPPORTED, "CL_DEVICE_MAX_MEM_ALLOC_SIZE");
  rt_fails(rcl_nrm2_f32(&r, c, x, n, NULL), RCL_ERR_UNSUPPORTED, "CL_DEVICE_MAX_MEM_ALLOC_SIZE");
  rt_fails(rcl_scal((void *)x, c, RCL_F32, n, &alpha, 0), RCL_ERR_UNSUPPORTED, "CL_DEVICE_MAX_MEM_ALLOC_SIZE");
  ck_assert_msg(strstr(rcl_error_last(), p->device_name) != NULL, "the message names no device: %s", rcl_error_last());
  munmap(x, bytes);
  /* Sizes whose byte count overflows size_t are refused as such. */
  rt_fails(rcl_sum_f32(&r, c, &r, SIZE_MAX / 2, NULL), RCL_ERR_OVERFLOW, "overflows");
  rt_fails(rcl_axpy(&r, c, RCL_F32, SIZE_MAX / 2, &alpha, &r, 0), RCL_ERR_OVERFLOW, "overflows");
  still_sound(c, b, "buffers above the allocation limit");
}
END_TEST

/* An allocation the device cannot satisfy although it is below its limit: a child process limits its
 * address space (RLIMIT_AS) so the driver's own allocation fails, then asks for a 512 MiB input. The
 * CPU drivers overcommit, so without the limit they would accept any size (tried: 32 GiB of buffers on
 * a 16 GiB PoCL device). The child (this binary run with --oom-child) reports on stdout. */
static int oom_child(size_t dev, int fd) {
  rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
  char spec[32], msg[1024];
  snprintf(spec, sizeof spec, "%zu", dev);
  o.device = spec;
  rcl_context *c;
  float small[1000], r;
  for (int i = 0; i < 1000; i++) small[i] = 1.0f;
  if (rcl_context_create(&c, &o) || rcl_sum_f32(&r, c, small, 1000, NULL)) { /* builds the programs */
    dprintf(fd, "setup failed: %s", rcl_error_last());
    return 1;
  }
  size_t n = (size_t)1 << 27; /* 512 MiB of f32 */
  float *x = mmap(NULL, n * 4, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  long vm_kb = 0;
  char line[256];
  FILE *f = fopen("/proc/self/status", "r");
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmSize:", 7)) vm_kb = atol(line + 7);
  if (f) fclose(f);
  struct rlimit rl;
  rl.rlim_cur = rl.rlim_max = (rlim_t)(vm_kb + 128 * 1024) * 1024;
  if (x == MAP_FAILED || vm_kb == 0 || setrlimit(RLIMIT_AS, &rl) != 0) {
    dprintf(fd, "setup failed: mmap/rlimit");
    return 1;
  }
  void *probe = malloc((size_t)256 << 20);
  if (probe) { /* the limit has no effect here (a sanitizer's or valgrind's allocator) */
    free(probe);
    dprintf(fd, "skip: RLIMIT_AS does not limit allocations in this process (sanitizer or valgrind)");
    return 0;
  }
  long live0 = rcl__alloc_live();
  int rc = rcl_sum_f32(&r, c, x, n, NULL);
  snprintf(msg, sizeof msg, "%s", rcl_error_last());
  int rc2 = rcl_sum_f32(&r, c, small, 1000, NULL);
  dprintf(fd, "rc=%d live=%ld after=%d sum=%.1f msg=%s", rc, rcl__alloc_live() - live0, rc2, (double)r, msg);
  rcl_context_free(c);
  return 0;
}

START_TEST(device_out_of_memory) {
  /* A fresh process (this binary again): the drivers' threads do not survive a fork. */
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  fflush(NULL);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    char dev[32];
    snprintf(dev, sizeof dev, "%d", _i);
    dup2(p[1], 1);
    close(p[0]);
    close(p[1]);
    /* Under ASan the probe allocation must fail with NULL, not abort the child. */
    const char *ao = getenv("ASAN_OPTIONS");
    char opts[1024];
    snprintf(opts, sizeof opts, "%s%sallocator_may_return_null=1", ao ? ao : "", ao && *ao ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
    /* by path, not /proc/self/exe, which under valgrind is valgrind itself */
    execl(REPROCL_BINARY_DIR "/tests/test_faults", "test_faults", "--oom-child", dev, (char *)NULL);
    _exit(127);
  }
  close(p[1]);
  char buf[2048];
  ssize_t got = 0, n;
  while (got < (ssize_t)sizeof buf - 1 && (n = read(p[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0) got += n;
  buf[got > 0 ? got : 0] = '\0';
  close(p[0]);
  int st;
  waitpid(pid, &st, 0);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %s (status 0x%x)", buf, st);
  if (!strncmp(buf, "skip:", 5)) {
    rt_note("%s: %s", rt_device_name(_i), buf);
    return;
  }
  int rc = 0, rc2 = -1;
  long leaked = -1;
  double sum = 0;
  ck_assert_msg(sscanf(buf, "rc=%d live=%ld after=%d sum=%lf", &rc, &leaked, &rc2, &sum) == 4, "child said: %s", buf);
  rt_note("%s: 512 MiB input under RLIMIT_AS: %s", rt_device_name(_i), strstr(buf, "msg=") ? strstr(buf, "msg=") + 4 : buf);
  ck_assert_msg(rc == RCL_ERR_OPENCL, "status %d: %s", rc, buf);
  ck_assert_msg(strstr(buf, "clCreateBuffer(x, 536870912 bytes)") &&
                    (strstr(buf, "CL_OUT_OF_HOST_MEMORY") || strstr(buf, "CL_OUT_OF_RESOURCES") ||
                     strstr(buf, "CL_MEM_OBJECT_ALLOCATION_FAILURE")),
                "the message does not name the allocation and the CL error: %s", buf);
  ck_assert_msg(leaked == 0, "%ld host block(s) leaked", leaked);
  ck_assert_msg(rc2 == 0 && sum == 1000.0, "the context did not work afterwards: %s", buf);
}
END_TEST

/* A user kernel that does not compile: RCL_ERR_BUILD with the device, the options and the compiler's
 * log; nothing leaked; the context works. */
START_TEST(user_build_failure) {
  rcl_context *c = rt_ctx(_i);
  baseline b = take_baseline(c);
  rcl_program_options po = RCL_PROGRAM_OPTIONS_INIT;
  po.flags = RCL_PROGRAM_PRELUDE_OPS;
  po.name = "broken.cl";
  rcl_program *p = (rcl_program *)&po; /* must be reset to NULL on failure */
  rt_fails(rcl_program_build(&p, c, "__kernel void k(__global float *a) {\n  a[0] = undeclared_name;\n}\n", 0, &po),
           RCL_ERR_BUILD, "building broken.cl");
  ck_assert_ptr_null(p);
  const char *m = rcl_error_last();
  ck_assert_msg(strstr(m, rcl_context_profile(c)->device_name) && strstr(m, "build log:") && strstr(m, "undeclared_name"),
                "message lacks the device, the log or the offending name: %s", m);
  /* A kernel name that does not exist in a program that built. */
  rt_ok(rcl_program_build(&p, c, "__kernel void k(__global float *a) { a[0] = 1.0f; }\n", 0, &po));
  cl_kernel k;
  rt_fails(rcl_program_create_kernel(&k, p, "no_such_kernel"), RCL_ERR_OPENCL, "CL_INVALID_KERNEL_NAME");
  rcl_program_free(p);
  still_sound(c, b, "a failed build");
}
END_TEST

/* The closest defined stand-in for a device lost mid-run: a command whose prerequisite failed. A user
 * event set to an error status makes every command waiting on it terminate without running
 * (CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST): the reduction must not touch its result, must hand
 * back an event that carries the failure, and must leave the context working. (A released or
 * otherwise invalid queue handle is undefined behaviour in OpenCL, and CPU drivers offer no way to
 * remove a device, so those are not tested: docs/reliability.md.) */
START_TEST(failed_prerequisite_event) {
  rcl_context *c = rt_ctx(_i);
  cl_context cc = rcl_context_cl_context(c);
  cl_int err;
  float x[3000], sentinel = -123.0f, got = 0;
  rt_fill(x, RCL_F32, 3000, "uniform", 5);
  /* Both modes once before the baseline: the first use of a kernel may tune it and keep the choice in the
   * context (memory the context owns, not a leak). */
  for (int mode = 0; mode < 2; mode++) {
    rcl_reduce_options o = RCL_REDUCE_OPTIONS_INIT;
    o.mode = (rcl_reduce_mode)mode;
    rt_ok(rcl_reduce(&got, c, RCL_OP_SUM, RCL_F32, 3000, x, NULL, &o));
  }
  baseline b = take_baseline(c);
  cl_mem bx = clCreateBuffer(cc, CL_MEM_COPY_HOST_PTR, sizeof x, x, &err);
  cl_mem br = clCreateBuffer(cc, CL_MEM_COPY_HOST_PTR, 4, &sentinel, &err);
  ck_assert_ptr_nonnull(br);
  for (int mode = 0; mode < 2; mode++) {
    cl_event gate = clCreateUserEvent(cc, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    cl_event done = NULL;
    rcl_queue_args q = RCL_QUEUE_ARGS_INIT;
    q.num_events_in_wait_list = 1;
    q.event_wait_list = &gate;
    q.event = &done;
    rcl_reduce_options o = RCL_REDUCE_OPTIONS_INIT;
    o.mode = (rcl_reduce_mode)mode;
    rt_ok(rcl_reduce_enqueue(br, 0, c, RCL_OP_SUM, RCL_F32, 3000, bx, 0, NULL, 0, &o, &q));
    ck_assert_ptr_nonnull(done);
    clSetUserEventStatus(gate, -1); /* the prerequisite fails */
    err = clWaitForEvents(1, &done);
    cl_int st = 0;
    clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    ck_assert_msg(err != CL_SUCCESS || st < 0, "%s: the failure did not reach the returned event (wait %s, status %d)",
                  rt_device_name(_i), rcl_cl_error_name(err), st);
    clReleaseEvent(done);
    clReleaseEvent(gate);
    ck_assert_int_eq(clEnqueueReadBuffer(rcl_context_cl_queue(c), br, CL_TRUE, 0, 4, &got, 0, NULL, NULL), CL_SUCCESS);
    ck_assert_msg(got == sentinel, "%s: the result was written although its prerequisite failed (%g)",
                  rt_device_name(_i), (double)got);
  }
  clReleaseMemObject(bx);
  clReleaseMemObject(br);
  still_sound(c, b, "a failed prerequisite event");
}
END_TEST

/* Wrapping OpenCL objects that do not belong together is refused at once, with the reason, instead of
 * failing in the first build. */
START_TEST(wrap_mismatched_objects) {
  rcl_context *c = rt_ctx(_i), *w;
  size_t other = ((size_t)_i + 1) % rt_ndevices();
  if (other == (size_t)_i) {
    rt_note("one device only: no foreign device to wrap");
    return;
  }
  rt_fails(rcl_context_wrap(&w, rcl_context_cl_context(c), rcl_context_cl_device(rt_ctx(other)), NULL, NULL),
           RCL_ERR_INVALID_ARG, "not a device of the context");
  rt_fails(rcl_context_wrap(&w, rcl_context_cl_context(c), rcl_context_cl_device(c), rcl_context_cl_queue(rt_ctx(other)),
                            NULL),
           RCL_ERR_INVALID_ARG, "another context or device");
  ck_assert_ptr_null(w);
  still_sound(c, take_baseline(c), "a refused wrap");
}
END_TEST

/* ---- numeric faults ---------------------------------------------------------------------------------- */

/* One reduction case: inputs as bit patterns, the expected result per mode (documented in
 * docs/reliability.md; derived from the contracts in docs/contracts.md). */
typedef struct {
  const char *what;
  rcl_reduce_op op;
  int n;
  uint64_t x[4], y[4];
  uint64_t want_ordered, want_exact;
} num_case;

#define QNAN32 0x7fc00000u
#define INF32 0x7f800000u
#define NINF32 0xff800000u
#define MAX32 0x7f7fffffu
#define NMAX32 0xff7fffffu
#define ONE32 0x3f800000u
#define NZERO32 0x80000000u
#define SUB32 0x00000001u  /* smallest subnormal */
#define SNAN32 0x7fa00001u /* signalling, with payload */
#define NNAN32 0xffc00123u /* negative quiet NaN with payload */

static const num_case f32_cases[] = {
    {"signalling NaN among finite values", RCL_OP_SUM, 3, {ONE32, SNAN32, ONE32}, {0}, QNAN32, QNAN32},
    {"negative NaN with payload", RCL_OP_SUM, 2, {NNAN32, ONE32}, {0}, QNAN32, QNAN32},
    {"+inf and finite", RCL_OP_SUM, 2, {INF32, NMAX32}, {0}, INF32, INF32},
    {"+inf + -inf", RCL_OP_SUM, 2, {INF32, NINF32}, {0}, QNAN32, QNAN32},
    {"max + max overflows", RCL_OP_SUM, 2, {MAX32, MAX32}, {0}, INF32, INF32},
    /* the ordered tree overflows at (max + max); the exact sum is max */
    {"max + max - max", RCL_OP_SUM, 3, {MAX32, MAX32, NMAX32}, {0}, INF32, MAX32},
    {"-0 + -0", RCL_OP_SUM, 2, {NZERO32, NZERO32}, {0}, NZERO32, NZERO32},
    {"-0 + +0", RCL_OP_SUM, 2, {NZERO32, 0}, {0}, 0, 0},
    {"subnormals", RCL_OP_SUM, 3, {SUB32, SUB32, 0x80000002u}, {0}, 0, 0},
    {"subnormal + 1 - 1", RCL_OP_SUM, 3, {SUB32, ONE32, 0xbf800000u}, {0}, 0, SUB32},
    {"inf * 0", RCL_OP_DOT, 2, {INF32, ONE32}, {0, ONE32}, QNAN32, QNAN32},
    {"max * max overflows", RCL_OP_DOT, 1, {MAX32}, {MAX32}, INF32, INF32},
    {"-inf * 2", RCL_OP_DOT, 1, {NINF32}, {0x40000000u}, NINF32, NINF32},
    {"NaN * 0", RCL_OP_DOT, 1, {SNAN32}, {0}, QNAN32, QNAN32},
    {"nrm2 of -inf", RCL_OP_NRM2, 2, {NINF32, ONE32}, {0}, INF32, INF32},
    {"nrm2 of NaN", RCL_OP_NRM2, 1, {NNAN32}, {0}, QNAN32, QNAN32},
    {"nrm2 of 2^64 overflows in the dot", RCL_OP_NRM2, 1, {0x5f800000u}, {0}, INF32, INF32},
    {"nrm2 of the smallest subnormal", RCL_OP_NRM2, 1, {SUB32}, {0}, 0, 0},
};

static const num_case f64_cases[] = {
    {"signalling NaN", RCL_OP_SUM, 2, {0x7ff4000000000001u, 0x3ff0000000000000u}, {0}, 0x7ff8000000000000u,
     0x7ff8000000000000u},
    {"+inf + -inf", RCL_OP_SUM, 2, {0x7ff0000000000000u, 0xfff0000000000000u}, {0}, 0x7ff8000000000000u,
     0x7ff8000000000000u},
    {"max + max - max", RCL_OP_SUM, 3, {0x7fefffffffffffffu, 0x7fefffffffffffffu, 0xffefffffffffffffu}, {0},
     0x7ff0000000000000u, 0x7fefffffffffffffu},
    {"-0 + -0", RCL_OP_SUM, 2, {0x8000000000000000u, 0x8000000000000000u}, {0}, 0x8000000000000000u,
     0x8000000000000000u},
    {"inf * 0", RCL_OP_DOT, 1, {0x7ff0000000000000u}, {0}, 0x7ff8000000000000u, 0x7ff8000000000000u},
    {"nrm2 of 2^600 overflows in the dot", RCL_OP_NRM2, 1, {0x6570000000000000u}, {0}, 0x7ff0000000000000u,
     0x7ff0000000000000u},
};

static void pack(void *dst, const uint64_t *bits, int n, rcl_dtype dt) {
  for (int i = 0; i < n; i++) {
    if (dt == RCL_F32) {
      uint32_t u = (uint32_t)bits[i];
      memcpy((char *)dst + 4 * i, &u, 4);
    } else {
      memcpy((char *)dst + 8 * i, &bits[i], 8);
    }
  }
}

static void run_numeric(size_t dev, const num_case *cases, size_t ncases, rcl_dtype dt) {
  rcl_context *c = rt_ctx(dev);
  size_t es = rcl_dtype_size(dt);
  for (size_t k = 0; k < ncases; k++) {
    const num_case *nc = &cases[k];
    unsigned char x[32], y[32], got[8], ref[8], want[8];
    pack(x, nc->x, nc->n, dt);
    pack(y, nc->y, nc->n, dt);
    for (int mode = 0; mode < 2; mode++) {
      rcl_reduce_options o = RCL_REDUCE_OPTIONS_INIT;
      o.mode = (rcl_reduce_mode)mode;
      uint64_t w = mode ? nc->want_exact : nc->want_ordered;
      pack(want, &w, 1, dt);
      rt_ok(rcl_ref_reduce(ref, nc->op, dt, o.mode, (size_t)nc->n, x, y));
      rt_assert_bits_eq(ref, want, 1, dt, "host reference, %s %s: %s", rcl_dtype_name(dt), rcl_reduce_mode_name(o.mode),
                        nc->what);
      rt_ok(rcl_reduce(got, c, nc->op, dt, (size_t)nc->n, x, y, &o));
      rt_assert_bits_eq(got, want, 1, dt, "%s, %s %s: %s", rt_device_name(dev), rcl_dtype_name(dt),
                        rcl_reduce_mode_name(o.mode), nc->what);
    }
  }
  (void)es;
}

START_TEST(reduction_special_values) {
  run_numeric((size_t)_i, f32_cases, sizeof f32_cases / sizeof f32_cases[0], RCL_F32);
  if (rt_supported((size_t)_i, RCL_FAMILY_REDUCE, RCL_F64))
    run_numeric((size_t)_i, f64_cases, sizeof f64_cases / sizeof f64_cases[0], RCL_F64);
  else {
    double d[2] = {1, 2}, r;
    rt_fails(rcl_sum_f64(&r, rt_ctx(_i), d, 2, NULL), RCL_ERR_UNSUPPORTED, "fp64");
  }
}
END_TEST

/* axpy and scal with NaN, inf and overflowing alphas: every element canonical and as documented. */
START_TEST(blas1_special_values) {
  rcl_context *c = rt_ctx(_i);
  static const uint32_t xs[6] = {ONE32, 0, NZERO32, INF32, SNAN32, MAX32};
  static const struct {
    uint32_t alpha;
    uint32_t scal[6]; /* alpha * x */
  } cases[] = {
      {INF32, {INF32, QNAN32, QNAN32, INF32, QNAN32, INF32}},
      {QNAN32 | 0x80000000u, {QNAN32, QNAN32, QNAN32, QNAN32, QNAN32, QNAN32}},
      {0x40000000u /* 2 */, {0x40000000u, 0, NZERO32, INF32, QNAN32, INF32}},
      {NZERO32, {NZERO32, NZERO32, 0, QNAN32, QNAN32, NZERO32}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    float alpha, x[6], y[6], ref[6];
    memcpy(&alpha, &cases[k].alpha, 4);
    memcpy(x, xs, sizeof x);
    memcpy(ref, x, sizeof x);
    rcl_ref_scal(ref, RCL_F32, 6, &alpha);
    rt_assert_bits_eq(ref, cases[k].scal, 6, RCL_F32, "host scal, alpha 0x%08x", cases[k].alpha);
    rt_ok(rcl_scal(x, c, RCL_F32, 6, &alpha, 0));
    rt_assert_bits_eq(x, cases[k].scal, 6, RCL_F32, "%s scal, alpha 0x%08x", rt_device_name(_i), cases[k].alpha);
    /* axpy onto y = -(alpha * x): finite results cancel to +0, the rest follow IEEE */
    memcpy(x, xs, sizeof x);
    for (int i = 0; i < 6; i++) {
      uint32_t u = cases[k].scal[i] ^ 0x80000000u;
      memcpy(&y[i], &u, 4);
    }
    memcpy(ref, y, sizeof y);
    rcl_ref_axpy(ref, RCL_F32, 6, &alpha, x);
    rt_ok(rcl_axpy(y, c, RCL_F32, 6, &alpha, x, 0));
    rt_assert_bits_eq(y, ref, 6, RCL_F32, "%s axpy, alpha 0x%08x", rt_device_name(_i), cases[k].alpha);
    for (int i = 0; i < 6; i++) {
      uint32_t u;
      memcpy(&u, &y[i], 4);
      uint32_t s = cases[k].scal[i];
      int finite = (s & 0x7f800000u) != 0x7f800000u;
      ck_assert_msg(u == (finite ? 0u : QNAN32), "axpy alpha 0x%08x element %d: 0x%08x", cases[k].alpha, i, u);
    }
  }
}
END_TEST

/* SpMV (contracts spmv.ordered and spmv.exact, docs/contracts-sparse.md): rows that meet inf, -inf,
 * NaN (also times a zero coefficient) and overflow, y = A*x with beta = 0. */
START_TEST(spmv_special_values) {
  /* 4x2: row 0 = inf*1 + 1*1, row 1 = inf*1 + (-inf)*1, row 2 = 0*NaN, row 3 = max*1 + max*1 */
  static const uint64_t rp[5] = {0, 2, 4, 5, 7};
  static const uint32_t ci[7] = {0, 1, 0, 1, 1, 0, 0};
  const float inf = INFINITY, mx = 0x1.fffffep127f;
  const float vals[7] = {inf, 1.0f, inf, -inf, 0.0f, mx, mx};
  const float x[2] = {1.0f, 1.0f}, xnan[2] = {1.0f, NAN};
  static const uint32_t want_ordered[4] = {INF32, QNAN32, QNAN32, INF32}, want_exact[4] = {INF32, QNAN32, QNAN32, INF32};
  rcl_csr *A;
  /* row 3 repeats column 0 on purpose: a CSR given by the caller may repeat a column */
  rt_ok(rcl_csr_create(&A, RCL_F32, 4, 2, 7, rp, ci, vals));
  const float one = 1.0f, zero = 0.0f;
  for (int k = 0; k < 2; k++) {
    rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
    o.contract = k ? RCL_SPMV_EXACT : RCL_SPMV_ORDERED;
    const float *xx;
    float y[4] = {0}, ref[4] = {0};
    /* row 2 reads x[1]: with x[1] = NaN its 0*NaN is NaN; with x[1] = 1 it is 0 */
    for (int withnan = 0; withnan < 2; withnan++) {
      xx = withnan ? xnan : x;
      rt_ok(rcl_ref_spmv(ref, A, o.contract, &one, xx, &zero));
      rt_ok(rcl_spmv(y, rt_ctx(_i), A, &one, xx, &zero, &o));
      rt_assert_bits_eq(y, ref, 4, RCL_F32, "%s spmv %s, x[1] %s", rt_device_name(_i), k ? "exact" : "ordered",
                        withnan ? "NaN" : "1");
      uint32_t want[4];
      memcpy(want, k ? want_exact : want_ordered, sizeof want);
      if (!withnan) want[2] = 0; /* 0 * 1 */
      if (withnan) want[0] = QNAN32; /* inf*1 + 1*NaN */
      rt_assert_bits_eq(y, want, 4, RCL_F32, "%s spmv %s documented bits, x[1] %s", rt_device_name(_i),
                        k ? "exact" : "ordered", withnan ? "NaN" : "1");
    }
  }
  rcl_csr_free(A);
}
END_TEST

/* The 9-point stencil (contract stencil.nine): one NaN in a 5x5 grid of ones reaches exactly its 3x3
 * neighbourhood per iteration (canonical NaN), an inf its neighbourhood as inf; the rest is the host
 * reference's. */
START_TEST(stencil_special_values) {
  rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
  float in[25], out[25], ref[25];
  for (int special = 0; special < 2; special++) {
    for (int i = 0; i < 25; i++) in[i] = 1.0f;
    uint32_t bits = special ? 0xffc00001u : INF32; /* a negative NaN with payload, or +inf */
    memcpy(&in[12], &bits, 4);
    rt_ok(rcl_ref_stencil(ref, &st, RCL_F32, 5, 5, 1, in));
    rt_ok(rcl_stencil(out, rt_ctx(_i), &st, RCL_F32, 5, 5, 1, in, NULL));
    rt_assert_bits_eq(out, ref, 25, RCL_F32, "%s stencil with %s", rt_device_name(_i), special ? "NaN" : "inf");
    for (int y = 0; y < 5; y++)
      for (int x = 0; x < 5; x++) {
        uint32_t u;
        memcpy(&u, &out[y * 5 + x], 4);
        int near = x >= 1 && x <= 3 && y >= 1 && y <= 3;
        if (near) ck_assert_msg(u == (special ? QNAN32 : INF32), "(%d,%d) = 0x%08x", x, y, u);
        else ck_assert_msg((u & 0x7f800000u) != 0x7f800000u, "(%d,%d) = 0x%08x is not finite", x, y, u);
      }
  }
}
END_TEST

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--oom-child")) return oom_child((size_t)strtoul(argv[2], NULL, 10), 1);
  Suite *s = suite_create("faults");
  rt_add_device_presence(s);
  TCase *dev = tcase_create("devices");
  rt_add_device_loop(dev, buffer_above_max_alloc_refused);
  rt_add_device_loop(dev, device_out_of_memory);
  rt_add_device_loop(dev, user_build_failure);
  rt_add_device_loop(dev, failed_prerequisite_event);
  rt_add_device_loop(dev, wrap_mismatched_objects);
  suite_add_tcase(s, dev);
  TCase *num = tcase_create("numeric");
  rt_add_device_loop(num, reduction_special_values);
  rt_add_device_loop(num, blas1_special_values);
  rt_add_device_loop(num, spmv_special_values);
  rt_add_device_loop(num, stencil_special_values);
  suite_add_tcase(s, num);
  return rt_run(s);
}
