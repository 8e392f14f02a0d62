/* Red-black SOR on every device: sweeps and residual norms bitwise against the host reference for every
 * implementation, boundary and dtype, with and without a right-hand side, on prime and degenerate sizes,
 * over several work-group and tile shapes; pitched grids with the caller's queue; golden digests;
 * convergence to the known solution of a Laplace problem; and bad arguments (omega outside (0, 2)). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "testlib.h"

static const rcl_dtype dtypes[] = {RCL_F32, RCL_F64};
static const rcl_boundary bcs[] = {RCL_BOUNDARY_FIXED, RCL_BOUNDARY_PERIODIC, RCL_BOUNDARY_EDGE};
static const rcl_stencil_variant variants[] = {RCL_STENCIL_PLAIN, RCL_STENCIL_TILED, RCL_STENCIL_TASK};

static void *gen(rcl_dtype dt, size_t n, const char *kind, uint64_t seed) {
  void *p = malloc(n * rcl_dtype_size(dt));
  ck_assert_ptr_nonnull(p);
  rt_fill(p, dt, n, kind, seed);
  return p;
}

static rcl_sor_desc make_sor(rcl_boundary bc, double omega) {
  rcl_sor_desc s = RCL_SOR_DESC_INIT;
  s.boundary = bc;
  s.omega = omega;
  s.boundary_value = 0.5;
  return s;
}

/* Runs SOR on device i from grid0 and compares grid and residual with the reference's; returns 0 when the
 * launch shape was refused as too large for the device. */
static int check_sor(size_t i, const rcl_sor_desc *s, rcl_dtype dt, size_t w, size_t h, size_t sweeps,
                     const void *grid0, const void *rhs, const void *want, const void *want_res,
                     const rcl_stencil_options *o, const char *what) {
  size_t bytes = w * h * rcl_dtype_size(dt);
  void *got = malloc(bytes);
  double res = 0;
  memcpy(got, grid0, bytes);
  int rc = rcl_sor(got, &res, rt_ctx(i), s, dt, w, h, sweeps, rhs, o);
  if (rc == RCL_ERR_INVALID_ARG && (strstr(rcl_error_last(), "exceeds") || strstr(rcl_error_last(), "local memory"))) {
    free(got);
    return 0;
  }
  ck_assert_msg(rc == 0, "%s on %s: %s", what, rt_device_name(i), rcl_error_last());
  rt_assert_bits_eq(got, want, w * h, dt, "%s on %s", what, rt_device_name(i));
  rt_assert_bits_eq(&res, want_res, 1, dt, "residual of %s on %s", what, rt_device_name(i));
  free(got);
  return 1;
}

/* Every boundary x implementation x dtype, with and without b, including sizes 1 and single rows. */
START_TEST(sor_matches_reference) {
  static const size_t odd_grids[][2] = {{97, 89}, {1, 1}, {1, 13}, {13, 1}, {3, 2}};
  static const size_t even_grids[][2] = {{34, 26}, {1, 1}, {1, 14}, {14, 1}, {2, 4}}; /* periodic */
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_STENCIL, dt)) {
      rcl_sor_desc s = RCL_SOR_DESC_INIT;
      double v = 1;
      rt_fails(rcl_sor(&v, NULL, rt_ctx(_i), &s, dt, 1, 1, 1, NULL, NULL), RCL_ERR_UNSUPPORTED, "fp64");
      continue;
    }
    size_t es = rcl_dtype_size(dt);
    for (size_t b = 0; b < 3; b++)
      for (size_t g = 0; g < 5; g++) {
        size_t w = bcs[b] == RCL_BOUNDARY_PERIODIC ? even_grids[g][0] : odd_grids[g][0];
        size_t h = bcs[b] == RCL_BOUNDARY_PERIODIC ? even_grids[g][1] : odd_grids[g][1], n = w * h;
        void *grid0 = gen(dt, n, g == 4 ? "special" : "uniform", 30 + g), *rhs = gen(dt, n, "uniform", 60 + g);
        void *want = malloc(n * es);
        for (int with_b = 0; with_b < 2; with_b++) {
          rcl_sor_desc s = make_sor(bcs[b], with_b ? 1.0 : 1.25);
          double want_res = 0;
          memcpy(want, grid0, n * es);
          rt_ok(rcl_ref_sor(want, &want_res, &s, dt, w, h, 3, with_b ? rhs : NULL));
          for (size_t v = 0; v < 3; v++) {
            rcl_stencil_options o = RCL_STENCIL_OPTIONS_INIT;
            o.variant = variants[v];
            char what[128];
            snprintf(what, sizeof what, "sor %s %s %s %zux%zu%s", rcl_dtype_name(dt), rcl_boundary_name(bcs[b]),
                     rcl_stencil_variant_name(variants[v]), w, h, with_b ? " with b" : "");
            ck_assert_msg(check_sor(_i, &s, dt, w, h, 3, grid0, with_b ? rhs : NULL, want, &want_res, &o, what),
                          "%s: default shape refused: %s", what, rcl_error_last());
          }
        }
        free(grid0);
        free(rhs);
        free(want);
      }
  }
}
END_TEST

START_TEST(sor_launch_invariance) {
  static const size_t plain_locals[][2] = {{1, 1}, {7, 3}, {32, 1}};
  static const size_t tiles[][4] = {{8, 4, 1, 1}, {16, 2, 2, 4}, {5, 3, 2, 3}, {32, 1, 1, 8}};
  size_t w = 62, h = 54, n = w * h; /* even: every boundary, periodic included */
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_STENCIL, dt)) continue;
    size_t es = rcl_dtype_size(dt);
    void *grid0 = gen(dt, n, "uniform", 3 + d), *rhs = gen(dt, n, "uniform", 9), *want = malloc(n * es);
    rcl_sor_desc s = make_sor(bcs[d + 1], 1.5);
    double want_res;
    memcpy(want, grid0, n * es);
    rt_ok(rcl_ref_sor(want, &want_res, &s, dt, w, h, 4, d ? rhs : NULL));
    size_t ran = 0;
    char what[128];
    for (size_t l = 0; l < 3; l++) {
      rcl_stencil_options o = RCL_STENCIL_OPTIONS_INIT;
      o.variant = RCL_STENCIL_PLAIN;
      o.local_size[0] = plain_locals[l][0];
      o.local_size[1] = plain_locals[l][1];
      snprintf(what, sizeof what, "sor %s plain local %zux%zu", rcl_dtype_name(dt), o.local_size[0], o.local_size[1]);
      ran += (size_t)check_sor(_i, &s, dt, w, h, 4, grid0, d ? rhs : NULL, want, &want_res, &o, what);
    }
    for (size_t t = 0; t < 4; t++) {
      rcl_stencil_options o = RCL_STENCIL_OPTIONS_INIT;
      o.variant = RCL_STENCIL_TILED;
      o.local_size[0] = tiles[t][0];
      o.local_size[1] = tiles[t][1];
      o.points_per_item[0] = tiles[t][2];
      o.points_per_item[1] = tiles[t][3];
      snprintf(what, sizeof what, "sor %s tiled local %zux%zu points %zux%zu", rcl_dtype_name(dt), tiles[t][0],
               tiles[t][1], tiles[t][2], tiles[t][3]);
      ran += (size_t)check_sor(_i, &s, dt, w, h, 4, grid0, d ? rhs : NULL, want, &want_res, &o, what);
    }
    ck_assert_msg(ran >= 5, "only %zu launch shapes were accepted on %s", ran, rt_device_name(_i));
    free(grid0);
    free(rhs);
    free(want);
  }
}
END_TEST

/* The enqueue forms on pitched, offset grid and rhs, on the caller's queue with a wait list and event;
 * the residual lands at an offset of the caller's buffer; padding is untouched. */
START_TEST(sor_enqueue_pitch_offsets) {
  rcl_context *c = rt_ctx(_i);
  const size_t w = 28, h = 30, gp = 33, go = 7, bp = 29, bo = 2, ro = 3, es = 4;
  size_t gsz = go + gp * h, bsz = bo + bp * h;
  float *g = gen(RCL_F32, gsz, "uniform", 1), *b = gen(RCL_F32, bsz, "uniform", 2);
  float *dense = malloc(w * h * es), *dense_b = malloc(w * h * es), *got = malloc(gsz * es);
  for (size_t y = 0; y < h; y++) {
    memcpy(dense + y * w, g + go + y * gp, w * es);
    memcpy(dense_b + y * w, b + bo + y * bp, w * es);
  }
  cl_int err;
  cl_context clc = rcl_context_cl_context(c);
  cl_command_queue q = clCreateCommandQueue(clc, rcl_context_cl_device(c), 0, &err);
  cl_mem bg = clCreateBuffer(clc, CL_MEM_READ_WRITE, gsz * es, NULL, &err);
  cl_mem bb = clCreateBuffer(clc, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bsz * es, b, &err);
  cl_mem br = clCreateBuffer(clc, CL_MEM_READ_WRITE, (ro + 1) * es, NULL, &err);
  for (size_t v = 0; v < 3; v++) {
    rcl_sor_desc s = make_sor(bcs[v], 1.7);
    rcl_stencil_options o = RCL_STENCIL_OPTIONS_INIT;
    o.variant = variants[v];
    cl_event wrote, swept = NULL, done = NULL;
    ck_assert_int_eq(clEnqueueWriteBuffer(q, bg, CL_FALSE, 0, gsz * es, g, 0, NULL, &wrote), CL_SUCCESS);
    rcl_queue_args qa = RCL_QUEUE_ARGS_INIT;
    qa.queue = q;
    qa.num_events_in_wait_list = 1;
    qa.event_wait_list = &wrote;
    qa.event = &swept;
    rt_ok(rcl_sor_enqueue(bg, go, gp, c, &s, RCL_F32, w, h, 5, bb, bo, bp, &o, &qa));
    ck_assert_ptr_nonnull(swept);
    qa.event_wait_list = &swept;
    qa.event = &done;
    rt_ok(rcl_sor_residual_enqueue(br, ro, c, &s, RCL_F32, w, h, bg, go, gp, bb, bo, bp, &o, &qa));
    ck_assert_int_eq(clWaitForEvents(1, &done), CL_SUCCESS);
    float res, want_res, *want = malloc(w * h * es);
    ck_assert_int_eq(clEnqueueReadBuffer(q, bg, CL_TRUE, 0, gsz * es, got, 0, NULL, NULL), CL_SUCCESS);
    ck_assert_int_eq(clEnqueueReadBuffer(q, br, CL_TRUE, ro * es, es, &res, 0, NULL, NULL), CL_SUCCESS);
    memcpy(want, dense, w * h * es);
    rt_ok(rcl_ref_sor(want, &want_res, &s, RCL_F32, w, h, 5, dense_b));
    for (size_t y = 0; y < h; y++) {
      rt_assert_bits_eq(got + go + y * gp, want + y * w, w, RCL_F32, "sor row %zu (%s) on %s", y,
                        rcl_stencil_variant_name(o.variant), rt_device_name(_i));
      if (y + 1 < h)
        rt_assert_bits_eq(got + go + y * gp + w, g + go + y * gp + w, gp - w, RCL_F32, "padding of row %zu", y);
    }
    rt_assert_bits_eq(got, g, go, RCL_F32, "elements before the offset");
    rt_assert_bits_eq(&res, &want_res, 1, RCL_F32, "residual (%s) on %s", rcl_stencil_variant_name(o.variant),
                      rt_device_name(_i));
    clReleaseEvent(wrote);
    clReleaseEvent(swept);
    clReleaseEvent(done);
    free(want);
  }
  clReleaseMemObject(bg);
  clReleaseMemObject(bb);
  clReleaseMemObject(br);
  clReleaseCommandQueue(q);
  free(g);
  free(b);
  free(dense);
  free(dense_b);
  free(got);
}
END_TEST

/* Laplace's equation with the boundary held at 1 has the solution u = 1: SOR from u = 0 gets there, with
 * a residual norm that falls monotonically (an accuracy check with a stated bound, not a bitwise one). */
START_TEST(sor_converges) {
  size_t w = 31, h = 31;
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_STENCIL, dt)) continue;
    rcl_sor_desc s = RCL_SOR_DESC_INIT;
    s.omega = 1.8;
    s.boundary_value = 1.0;
    rcl_grid g;
    rt_ok(rcl_grid_alloc(&g, dt, w, h));
    double prev = INFINITY, res = 0;
    static const size_t steps[] = {5, 20, 60, 200};
    for (size_t k = 0; k < 4; k++) {
      rt_ok(rcl_sor(g.data, &res, rt_ctx(_i), &s, dt, w, h, steps[k], NULL, NULL));
      float rf;
      memcpy(&rf, &res, sizeof rf);
      double r = dt == RCL_F32 ? (double)rf : res;
      ck_assert_msg(r < prev, "residual %g after %zu more sweeps is not below %g", r, steps[k], prev);
      prev = r;
    }
    double maxerr = 0;
    for (size_t i = 0; i < w * h; i++) {
      double v = dt == RCL_F32 ? ((float *)g.data)[i] : ((double *)g.data)[i];
      if (fabs(v - 1.0) > maxerr) maxerr = fabs(v - 1.0);
    }
    /* f32: omega/4 and 1 - omega rounded to binary32 (0.45f, -0.8f) make 4*c1 + c0 differ from 1 by ~4e-8,
     * which moves the discrete fixed point by about 1e-5 on this grid; f64 reaches rounding level. */
    ck_assert_msg(maxerr < (dt == RCL_F32 ? 1e-4 : 1e-12), "max |u - 1| = %g after 285 sweeps (%s)", maxerr,
                  rcl_dtype_name(dt));
    rcl_grid_free(&g);
  }
}
END_TEST

START_TEST(sor_golden_digests) {
  static const struct {
    const char *name;
    rcl_dtype dt;
    rcl_boundary bc;
    double omega;
    size_t w, h, sweeps;
    int with_b;
  } cases[] = {
      {"stencil.sor.v1 f32 random 61x67 fixed omega=1.25 sweeps=50 (grid, residual)", RCL_F32, RCL_BOUNDARY_FIXED, 1.25, 61, 67, 50, 0},
      {"stencil.sor.v1 f64 random 61x67 fixed omega=1.25 sweeps=50 (grid, residual)", RCL_F64, RCL_BOUNDARY_FIXED, 1.25, 61, 67, 50, 0},
      {"stencil.sor.v1 f32 random 64x48 periodic omega=1.9 b=point sweeps=30 (grid, residual)", RCL_F32, RCL_BOUNDARY_PERIODIC, 1.9, 64, 48, 30, 1},
      {"stencil.sor.v1 f64 random 53x47 edge omega=0.7 b=point sweeps=30 (grid, residual)", RCL_F64, RCL_BOUNDARY_EDGE, 0.7, 53, 47, 30, 1},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    rcl_dtype dt = cases[k].dt;
    size_t w = cases[k].w, h = cases[k].h, es = rcl_dtype_size(dt), bytes = w * h * es;
    rcl_sor_desc s = make_sor(cases[k].bc, cases[k].omega);
    rcl_grid g0, b, want;
    rt_ok(rcl_grid_alloc(&g0, dt, w, h));
    rt_ok(rcl_grid_generate(&g0, RCL_GRID_INIT_RANDOM, 42));
    rt_ok(rcl_grid_alloc(&b, dt, w, h));
    rt_ok(rcl_grid_generate(&b, RCL_GRID_INIT_POINT, 0));
    rt_ok(rcl_grid_alloc(&want, dt, w, h));
    memcpy(want.data, g0.data, bytes);
    double res = 0;
    const void *rhs = cases[k].with_b ? b.data : NULL;
    rt_ok(rcl_ref_sor(want.data, &res, &s, dt, w, h, cases[k].sweeps, rhs));
    unsigned char *both = malloc(bytes + es); /* the golden digest covers the grid, then the residual */
    memcpy(both, want.data, bytes);
    memcpy(both + bytes, &res, es);
    rt_golden_ref("stencil.txt", cases[k].name, both, bytes + es);
    if (rt_supported(_i, RCL_FAMILY_STENCIL, dt)) {
      double got_res = 0;
      void *got = malloc(bytes);
      memcpy(got, g0.data, bytes);
      rt_ok(rcl_sor(got, &got_res, rt_ctx(_i), &s, dt, w, h, cases[k].sweeps, rhs, NULL));
      rt_assert_bits_eq(got, want.data, w * h, dt, "%s on %s", cases[k].name, rt_device_name(_i));
      rt_assert_bits_eq(&got_res, &res, 1, dt, "residual of %s on %s", cases[k].name, rt_device_name(_i));
      free(got);
    }
    free(both);
    rcl_grid_free(&g0);
    rcl_grid_free(&b);
    rcl_grid_free(&want);
  }
}
END_TEST

START_TEST(sor_bad_arguments) {
  rcl_context *c = rt_ctx(_i);
  float g[16] = {0}, r;
  rcl_sor_desc s = RCL_SOR_DESC_INIT;
  static const double bad_omega[] = {0.0, 2.0, -0.5, 2.5, INFINITY, NAN};
  for (size_t k = 0; k < sizeof bad_omega / sizeof bad_omega[0]; k++) {
    s.omega = bad_omega[k];
    rt_fails(rcl_sor(g, &r, c, &s, RCL_F32, 4, 4, 1, NULL, NULL), RCL_ERR_INVALID_ARG, "outside (0, 2)");
    rt_fails(rcl_ref_sor(g, &r, &s, RCL_F32, 4, 4, 1, NULL), RCL_ERR_INVALID_ARG, "outside (0, 2)");
  }
  s = (rcl_sor_desc)RCL_SOR_DESC_INIT;
  s.boundary = RCL_BOUNDARY_PERIODIC;
  rt_fails(rcl_sor(g, &r, c, &s, RCL_F32, 3, 4, 1, NULL, NULL), RCL_ERR_INVALID_ARG, "odd size");
  rt_fails(rcl_sor(g, &r, c, &s, RCL_F32, 4, 5, 1, NULL, NULL), RCL_ERR_INVALID_ARG, "4x5");
  s.boundary = (rcl_boundary)4;
  rt_fails(rcl_sor(g, &r, c, &s, RCL_F32, 4, 4, 1, NULL, NULL), RCL_ERR_INVALID_ARG, "boundary");
  s = (rcl_sor_desc)RCL_SOR_DESC_INIT;
  s.version = 0;
  rt_fails(rcl_sor(g, &r, c, &s, RCL_F32, 4, 4, 1, NULL, NULL), RCL_ERR_INVALID_ARG, "version");
  s = (rcl_sor_desc)RCL_SOR_DESC_INIT;
  rt_fails(rcl_sor(NULL, &r, c, &s, RCL_F32, 4, 4, 1, NULL, NULL), RCL_ERR_INVALID_ARG, "NULL grid");
  rt_fails(rcl_sor(g, &r, c, NULL, RCL_F32, 4, 4, 1, NULL, NULL), RCL_ERR_INVALID_ARG, "NULL SOR");
  rt_fails(rcl_sor(g, &r, c, &s, RCL_F32, 0, 4, 1, NULL, NULL), RCL_ERR_INVALID_ARG, "empty");
  rcl_stencil_options o = RCL_STENCIL_OPTIONS_INIT;
  o.variant = RCL_STENCIL_TASK;
  o.points_per_item[1] = 2;
  rt_fails(rcl_sor(g, &r, c, &s, RCL_F32, 4, 4, 1, NULL, &o), RCL_ERR_INVALID_ARG, "task variant");
  cl_int err;
  cl_mem a = clCreateBuffer(rcl_context_cl_context(c), CL_MEM_READ_WRITE, 64, NULL, &err);
  cl_mem small = clCreateBuffer(rcl_context_cl_context(c), CL_MEM_READ_WRITE, 4, NULL, &err);
  rt_fails(rcl_sor_enqueue(a, 0, 0, c, &s, RCL_F32, 4, 4, 1, a, 0, 0, NULL, NULL), RCL_ERR_INVALID_ARG, "distinct");
  rt_fails(rcl_sor_enqueue(a, 0, 0, c, &s, RCL_F32, 4, 4, 1, small, 0, 0, NULL, NULL), RCL_ERR_INVALID_ARG,
           "rhs: buffer holds 4 bytes");
  rt_fails(rcl_sor_residual_enqueue(small, 1, c, &s, RCL_F32, 4, 4, a, 0, 0, NULL, 0, 0, NULL, NULL),
           RCL_ERR_INVALID_ARG, "result: buffer holds 4 bytes");
  rt_fails(rcl_sor_enqueue(a, 1, 0, c, &s, RCL_F32, 4, 4, 1, NULL, 0, 0, NULL, NULL), RCL_ERR_INVALID_ARG,
           "grid: buffer holds 64 bytes, the call needs 68");
  clReleaseMemObject(a);
  clReleaseMemObject(small);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sor");
  rt_add_device_presence(s);
  RT_ADD_DEVICE_CASE(s, sor_matches_reference);
  RT_ADD_DEVICE_CASE(s, sor_launch_invariance);
  RT_ADD_DEVICE_CASE(s, sor_enqueue_pitch_offsets);
  RT_ADD_DEVICE_CASE(s, sor_converges);
  RT_ADD_DEVICE_CASE(s, sor_golden_digests);
  RT_ADD_DEVICE_CASE(s, sor_bad_arguments);
  return rt_run(s);
}
