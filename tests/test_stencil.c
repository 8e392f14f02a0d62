/* Stencils on every device: the 9-point, general 3x3 and 5x5 stencils bitwise against the host
 * reference for every implementation, boundary and dtype, on prime and degenerate grid sizes, over several
 * work-group and tile shapes; pitched and offset grids with the caller's queue and events; golden digests
 * (including a 1000-iteration run); and bad arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "testlib.h"

static const rcl_dtype dtypes[] = {RCL_F32, RCL_F64};
static const rcl_boundary bcs[] = {RCL_BOUNDARY_FIXED, RCL_BOUNDARY_PERIODIC, RCL_BOUNDARY_EDGE};
static const rcl_stencil_variant variants[] = {RCL_STENCIL_PLAIN, RCL_STENCIL_TILED, RCL_STENCIL_TASK};
static const char *const kind_names[] = {"nine", "general3", "general5"};

/* kind 0: SHOC's 9-point weights; 1, 2: general 3x3 / 5x5 with weights that differ at every position, so a
 * mirrored, transposed or shifted neighbourhood changes the result. */
static rcl_stencil_desc make_desc(int kind, rcl_boundary bc) {
  rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
  if (kind > 0) {
    st.kind = RCL_STENCIL_GENERAL;
    st.radius = (unsigned)kind;
    for (int k = 0; k < 25; k++) st.weights[k] = (k % 2 ? 0.0625 : -0.03125) * (1 + k % 7) + 0.01 * k;
  }
  st.boundary = bc;
  st.boundary_value = 0.75;
  return st;
}

static void *gen(rcl_dtype dt, size_t n, const char *kind, uint64_t seed) {
  void *p = malloc(n * rcl_dtype_size(dt));
  ck_assert_ptr_nonnull(p);
  rt_fill(p, dt, n, kind, seed);
  return p;
}

/* Runs the stencil on device i and compares it with want; returns 0 when the configuration was refused
 * for a reason a test may accept (a shape too large for this device), 1 when it ran. */
static int check_run(size_t i, const rcl_stencil_desc *st, rcl_dtype dt, size_t w, size_t h, size_t iters,
                     const void *in, const void *want, const rcl_stencil_options *o, const char *what) {
  size_t n = w * h;
  void *got = malloc(n * rcl_dtype_size(dt));
  int rc = rcl_stencil(got, rt_ctx(i), st, dt, w, h, iters, in, o);
  if (rc == RCL_ERR_INVALID_ARG && (strstr(rcl_error_last(), "exceeds") || strstr(rcl_error_last(), "local memory") ||
                                    strstr(rcl_error_last(), "loop iterations"))) {
    free(got);
    return 0;
  }
  ck_assert_msg(rc == 0, "%s on %s: %s", what, rt_device_name(i), rcl_error_last());
  rt_assert_bits_eq(got, want, n, dt, "%s on %s", what, rt_device_name(i));
  free(got);
  return 1;
}

/* Every kind x boundary x implementation x dtype on prime, single-point and single-row/column grids. */
START_TEST(matches_reference) {
  static const size_t grids[][2] = {{97, 89}, {1, 1}, {1, 13}, {13, 1}, {2, 3}};
  static const char *const data[] = {"uniform", "special", "wide", "uniform", "cancel"};
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_STENCIL, dt)) {
      rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
      double v = 1, o;
      rt_fails(rcl_stencil(&o, rt_ctx(_i), &st, dt, 1, 1, 1, &v, NULL), RCL_ERR_UNSUPPORTED, "fp64");
      continue;
    }
    for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
      size_t w = grids[g][0], h = grids[g][1], n = w * h;
      void *in = gen(dt, n, data[g], 100 + g), *want = malloc(n * rcl_dtype_size(dt));
      for (int kind = 0; kind < 3; kind++)
        for (size_t b = 0; b < 3; b++) {
          rcl_stencil_desc st = make_desc(kind, bcs[b]);
          size_t iters = 3;
          rt_ok(rcl_ref_stencil(want, &st, dt, w, h, iters, in));
          for (size_t v = 0; v < 3; v++) {
            rcl_stencil_options o = RCL_STENCIL_OPTIONS_INIT;
            o.variant = variants[v];
            char what[160];
            snprintf(what, sizeof what, "%s %s %s %s %zux%zu %s x%zu", kind_names[kind], rcl_dtype_name(dt),
                     rcl_boundary_name(bcs[b]), rcl_stencil_variant_name(variants[v]), w, h, data[g], iters);
            ck_assert_msg(check_run(_i, &st, dt, w, h, iters, in, want, &o, what), "%s: default shape refused: %s",
                          what, rcl_error_last());
          }
        }
      free(in);
      free(want);
    }
  }
}
END_TEST

/* Work-group shapes, tile shapes and points per work-item change nothing. Each kind and dtype runs a
 * rotating subset of the shapes (PoCL compiles a kernel once per work-group size, so the full product
 * would cost minutes of compilation and show nothing more). */
START_TEST(launch_invariance) {
  static const size_t plain_locals[][2] = {{1, 1}, {7, 3}, {32, 1}, {16, 4}};
  /* local x, local y, points x, points y */
  static const size_t tiles[][4] = {{8, 4, 1, 1}, {16, 2, 2, 4}, {4, 8, 3, 1}, {32, 1, 1, 8}, {5, 3, 2, 3}};
  size_t w = 61, h = 53, n = w * h;
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_STENCIL, dt)) continue;
    void *in = gen(dt, n, d ? "wide" : "uniform", 7 + d), *want = malloc(n * rcl_dtype_size(dt));
    for (int kind = 0; kind < 3; kind++) {
      rcl_stencil_desc st = make_desc(kind, bcs[(kind + d) % 3]);
      size_t rot = (size_t)kind + 3 * d, ran = 0;
      rt_ok(rcl_ref_stencil(want, &st, dt, w, h, 2, in));
      char what[160];
      for (size_t l = rot; l < rot + 2; l++) {
        rcl_stencil_options o = RCL_STENCIL_OPTIONS_INIT;
        o.variant = RCL_STENCIL_PLAIN;
        o.local_size[0] = plain_locals[l % 4][0];
        o.local_size[1] = plain_locals[l % 4][1];
        snprintf(what, sizeof what, "%s %s %s plain local %zux%zu", kind_names[kind], rcl_dtype_name(dt),
                 rcl_boundary_name(st.boundary), o.local_size[0], o.local_size[1]);
        ran += (size_t)check_run(_i, &st, dt, w, h, 2, in, want, &o, what);
      }
      for (size_t t = rot; t < rot + 3; t++) {
        const size_t *sh = tiles[t % 5];
        rcl_stencil_options o = RCL_STENCIL_OPTIONS_INIT;
        o.variant = RCL_STENCIL_TILED;
        /* Give the shape as local + points, as tile + points, or all three: all must resolve alike. */
        if (t % 3 != 1) {
          o.local_size[0] = sh[0];
          o.local_size[1] = sh[1];
        }
        if (t % 3 != 0) {
          o.tile[0] = sh[0] * sh[2];
          o.tile[1] = sh[1] * sh[3];
        }
        o.points_per_item[0] = sh[2];
        o.points_per_item[1] = sh[3];
        rcl_stencil_options r;
        rt_ok(rcl_stencil_resolve_options(&r, rt_ctx(_i), dt, &st, &o));
        ck_assert_uint_eq(r.local_size[0], sh[0]);
        ck_assert_uint_eq(r.local_size[1], sh[1]);
        ck_assert_uint_eq(r.tile[0], sh[0] * sh[2]);
        ck_assert_uint_eq(r.tile[1], sh[1] * sh[3]);
        snprintf(what, sizeof what, "%s %s %s tiled local %zux%zu points %zux%zu", kind_names[kind], rcl_dtype_name(dt),
                 rcl_boundary_name(st.boundary), sh[0], sh[1], sh[2], sh[3]);
        ran += (size_t)check_run(_i, &st, dt, w, h, 2, in, want, &o, what);
      }
      ck_assert_msg(ran >= 4, "only %zu launch shapes were accepted on %s", ran, rt_device_name(_i));
    }
    free(in);
    free(want);
  }
}
END_TEST

/* The enqueue form on pitched, offset grids: the caller's queue, wait list and event; padding untouched;
 * with and without a caller's scratch grid; iterations 0, 1, 2 and 5 (both ping-pong parities). */
START_TEST(enqueue_pitch_offsets_events) {
  rcl_context *c = rt_ctx(_i);
  const size_t w = 37, h = 23, ip = 41, op = 40, io = 5, oo = 3, es = 4;
  size_t isz = io + ip * h, osz = oo + op * h;
  float *in = gen(RCL_F32, isz, "uniform", 5), *dense = malloc(w * h * es), *want = malloc(w * h * es);
  float *got = malloc(osz * es), *fill = malloc(osz * es);
  for (size_t y = 0; y < h; y++) memcpy(dense + y * w, in + io + y * ip, w * es);
  for (size_t k = 0; k < osz; k++) fill[k] = -7.0f;
  cl_int err;
  cl_context clc = rcl_context_cl_context(c);
  cl_command_queue q = clCreateCommandQueue(clc, rcl_context_cl_device(c), 0, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  cl_mem bin = clCreateBuffer(clc, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, isz * es, in, &err);
  cl_mem bout = clCreateBuffer(clc, CL_MEM_READ_WRITE, osz * es, NULL, &err);
  cl_mem bscr = clCreateBuffer(clc, CL_MEM_READ_WRITE, osz * es, NULL, &err);
  static const size_t iters[] = {0, 1, 2, 5};
  for (int kind = 0; kind < 3; kind++)
    for (size_t it = 0; it < 4; it++)
      for (int use_scratch = 0; use_scratch < 2; use_scratch++) {
        rcl_stencil_desc st = make_desc(kind, bcs[it % 3]);
        rcl_stencil_options o = RCL_STENCIL_OPTIONS_INIT;
        o.variant = variants[(it + (size_t)use_scratch) % 3];
        if (o.variant == RCL_STENCIL_PLAIN && use_scratch) { /* a register block past the grid's right edge */
          o.local_size[0] = 8;
          o.local_size[1] = 4;
          o.points_per_item[0] = 4;
          o.points_per_item[1] = kind ? 3 : 8;
        }
        cl_event wrote, done = NULL;
        ck_assert_int_eq(clEnqueueWriteBuffer(q, bout, CL_FALSE, 0, osz * es, fill, 0, NULL, &wrote), CL_SUCCESS);
        rcl_queue_args qa = RCL_QUEUE_ARGS_INIT;
        qa.queue = q;
        qa.num_events_in_wait_list = 1;
        qa.event_wait_list = &wrote;
        qa.event = &done;
        rt_ok(rcl_stencil_enqueue(bout, oo, op, c, &st, RCL_F32, w, h, iters[it], bin, io, ip,
                                  use_scratch ? bscr : NULL, &o, &qa));
        ck_assert_ptr_nonnull(done);
        ck_assert_int_eq(clWaitForEvents(1, &done), CL_SUCCESS);
        clReleaseEvent(done);
        clReleaseEvent(wrote);
        ck_assert_int_eq(clEnqueueReadBuffer(q, bout, CL_TRUE, 0, osz * es, got, 0, NULL, NULL), CL_SUCCESS);
        rt_ok(rcl_ref_stencil(want, &st, RCL_F32, w, h, iters[it], dense));
        for (size_t y = 0; y < h; y++) {
          rt_assert_bits_eq(got + oo + y * op, want + y * w, w, RCL_F32, "%s row %zu, %zu iterations, %s on %s",
                            kind_names[kind], y, iters[it], rcl_stencil_variant_name(o.variant), rt_device_name(_i));
          size_t pad_end = y + 1 < h ? op - w : 0;
          for (size_t k = 0; k < pad_end; k++) ck_assert_float_eq(got[oo + y * op + w + k], -7.0f);
        }
        for (size_t k = 0; k < oo; k++) ck_assert_float_eq(got[k], -7.0f);
      }
  clReleaseMemObject(bin);
  clReleaseMemObject(bout);
  clReleaseMemObject(bscr);
  clReleaseCommandQueue(q);
  free(in);
  free(dense);
  free(want);
  free(got);
  free(fill);
}
END_TEST

/* The plain variant's register blocks (points per work-item, no local memory): block shapes x boundaries x
 * dtypes x kinds on grids the blocks do not divide (prime, single row/column, smaller than one block) and
 * on a width of whole 4-wide blocks (the vector path on every row). Each kind x dtype runs a rotating
 * subset of shapes and grids (every program is one compile per device). */
START_TEST(plain_blocks) {
  /* local x, local y, points x, points y: 8 x 4 = 32 work-items, Rusticl's usual limit */
  static const size_t shapes[][4] = {{8, 4, 4, 8}, {8, 4, 4, 4}, {8, 4, 2, 8}, {8, 4, 4, 1}, {4, 8, 3, 5}, {8, 4, 8, 2}};
  static const size_t grids[][2] = {{97, 89}, {64, 37}, {13, 1}, {1, 13}, {3, 2}, {61, 53}};
  const size_t ns = sizeof shapes / sizeof shapes[0], ng = sizeof grids / sizeof grids[0];
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_STENCIL, dt)) continue;
    for (int kind = 0; kind < 3; kind++) {
      size_t ran = 0, tried = 0;
      for (size_t k = 0; k < (kind == 0 ? 4 : 1); k++) {
        const size_t *sh = shapes[(k + (size_t)kind * 2 + d) % ns];
        for (size_t b = 0; b < 3; b++) {
          const size_t *gr = grids[(k * 3 + b + d) % ng];
          size_t w = gr[0], h = gr[1], n = w * h;
          rcl_stencil_desc st = make_desc(kind, bcs[b]);
          void *in = gen(dt, n, b == 1 ? "special" : "uniform", 300 + k * 3 + b), *want = malloc(n * rcl_dtype_size(dt));
          rt_ok(rcl_ref_stencil(want, &st, dt, w, h, 2, in));
          rcl_stencil_options o = RCL_STENCIL_OPTIONS_INIT, r;
          o.variant = RCL_STENCIL_PLAIN;
          o.local_size[0] = sh[0];
          o.local_size[1] = sh[1];
          o.points_per_item[0] = sh[2];
          o.points_per_item[1] = sh[3];
          rt_ok(rcl_stencil_resolve_options(&r, rt_ctx(_i), dt, &st, &o));
          ck_assert_int_eq(r.variant, RCL_STENCIL_PLAIN);
          ck_assert_uint_eq(r.points_per_item[0], sh[2]);
          ck_assert_uint_eq(r.points_per_item[1], sh[3]);
          ck_assert_uint_eq(r.tile[0], sh[0] * sh[2]);
          ck_assert_uint_eq(r.tile[1], sh[1] * sh[3]);
          char what[160];
          snprintf(what, sizeof what, "%s %s %s plain local %zux%zu points %zux%zu on %zux%zu", kind_names[kind],
                   rcl_dtype_name(dt), rcl_boundary_name(bcs[b]), sh[0], sh[1], sh[2], sh[3], w, h);
          ran += (size_t)check_run(_i, &st, dt, w, h, 2, in, want, &o, what);
          tried++;
          free(in);
          free(want);
        }
      }
      ck_assert_msg(ran == tried, "%s %s: only %zu of %zu plain block shapes ran on %s", kind_names[kind],
                    rcl_dtype_name(dt), ran, tried, rt_device_name(_i));
    }
  }
}
END_TEST

/* ---- golden digests ------------------------------------------------------------------------------- */

typedef struct {
  const char *name;
  int kind;
  rcl_dtype dt;
  rcl_boundary bc;
  size_t w, h, iters;
  rcl_grid_init init; /* RANDOM uses seed 42 */
} golden_case;

static const golden_case goldens[] = {
    {"stencil.nine.v1 f32 shoc 97x89 fixed iters=10", 0, RCL_F32, RCL_BOUNDARY_FIXED, 97, 89, 10, RCL_GRID_INIT_SHOC},
    {"stencil.nine.v1 f64 shoc 97x89 fixed iters=10", 0, RCL_F64, RCL_BOUNDARY_FIXED, 97, 89, 10, RCL_GRID_INIT_SHOC},
    {"stencil.nine.v1 f32 random 61x67 periodic iters=7", 0, RCL_F32, RCL_BOUNDARY_PERIODIC, 61, 67, 7, RCL_GRID_INIT_RANDOM},
    {"stencil.nine.v1 f64 random 61x67 edge iters=7", 0, RCL_F64, RCL_BOUNDARY_EDGE, 61, 67, 7, RCL_GRID_INIT_RANDOM},
    {"stencil.general.v1 3x3 f32 random 61x67 edge iters=5", 1, RCL_F32, RCL_BOUNDARY_EDGE, 61, 67, 5, RCL_GRID_INIT_RANDOM},
    {"stencil.general.v1 3x3 f64 point 31x29 fixed iters=5", 1, RCL_F64, RCL_BOUNDARY_FIXED, 31, 29, 5, RCL_GRID_INIT_POINT},
    {"stencil.general.v1 5x5 f32 random 61x67 periodic iters=5", 2, RCL_F32, RCL_BOUNDARY_PERIODIC, 61, 67, 5, RCL_GRID_INIT_RANDOM},
    {"stencil.general.v1 5x5 f64 random 61x67 fixed iters=5", 2, RCL_F64, RCL_BOUNDARY_FIXED, 61, 67, 5, RCL_GRID_INIT_RANDOM},
    /* The cross-device check: 1000 iterations of SHOC's stencil from SHOC's i*j grid. */
    {"stencil.nine.v1 f32 shoc 64x64 fixed iters=1000", 0, RCL_F32, RCL_BOUNDARY_FIXED, 64, 64, 1000, RCL_GRID_INIT_SHOC},
};

START_TEST(golden_digests) {
  for (size_t g = 0; g < sizeof goldens / sizeof goldens[0]; g++) {
    const golden_case *c = &goldens[g];
    rcl_stencil_desc st = make_desc(c->kind, c->bc);
    if (c->kind == 0) st.boundary_value = 0.0; /* the SHOC configuration exactly */
    rcl_grid in, want;
    rt_ok(rcl_grid_alloc(&in, c->dt, c->w, c->h));
    rt_ok(rcl_grid_generate(&in, c->init, 42));
    rt_ok(rcl_grid_alloc(&want, c->dt, c->w, c->h));
    size_t n = c->w * c->h, bytes = n * rcl_dtype_size(c->dt);
    rt_ok(rcl_ref_stencil(want.data, &st, c->dt, c->w, c->h, c->iters, in.data));
    rt_golden_ref("stencil.txt", c->name, want.data, bytes);
    if (rt_supported(_i, RCL_FAMILY_STENCIL, c->dt)) {
      /* Every device, with its default implementation, the tiled one where that is not the default, and
       * plain with a 4 x 8 register block: the reference's bits, hence the golden digest. */
      for (int v = 0; v < 3; v++) {
        rcl_stencil_options o = RCL_STENCIL_OPTIONS_INIT;
        o.variant = v == 2 ? RCL_STENCIL_PLAIN : v ? RCL_STENCIL_TILED : RCL_STENCIL_AUTO;
        if (v == 2) {
          o.local_size[0] = 8;
          o.local_size[1] = 4;
          o.points_per_item[0] = 4;
          o.points_per_item[1] = 8;
        }
        void *got = malloc(bytes);
        rt_ok(rcl_stencil(got, rt_ctx(_i), &st, c->dt, c->w, c->h, c->iters, in.data, &o));
        rt_assert_bits_eq(got, want.data, n, c->dt, "%s (%s) on %s", c->name, rcl_stencil_variant_name(o.variant),
                          rt_device_name(_i));
        free(got);
        if (c->iters >= 1000) break; /* the long run once per device */
      }
    }
    rcl_grid_free(&in);
    rcl_grid_free(&want);
  }
}
END_TEST

/* A real image: scikit-image's camera.png (Debian python3-skimage), 512x512 greyscale. */
START_TEST(camera_image) {
  const char *path = "/usr/lib/python3/dist-packages/skimage/data/camera.png";
  FILE *f = fopen(path, "rb");
  if (!f) {
    rt_note("skip camera_image: %s is absent (install python3-skimage to run this test on a real image)", path);
    return;
  }
  fclose(f);
  rcl_grid g, want;
  rt_ok(rcl_grid_read(&g, path, RCL_GRID_FORMAT_AUTO, RCL_F32, 0, 0));
  ck_assert_uint_eq(g.width, 512);
  ck_assert_uint_eq(g.height, 512);
  rt_ok(rcl_grid_alloc(&want, RCL_F32, 512, 512));
  rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
  st.boundary = RCL_BOUNDARY_EDGE;
  rt_ok(rcl_ref_stencil(want.data, &st, RCL_F32, 512, 512, 20, g.data));
  rt_golden_ref("stencil.txt", "stencil.nine.v1 f32 camera.png edge iters=20", want.data, 512 * 512 * 4);
  for (size_t v = 0; v < 2; v++) {
    rcl_stencil_options o = RCL_STENCIL_OPTIONS_INIT;
    o.variant = variants[v];
    char what[96];
    snprintf(what, sizeof what, "camera.png nine x20 %s", rcl_stencil_variant_name(o.variant));
    check_run(_i, &st, RCL_F32, 512, 512, 20, g.data, want.data, &o, what);
  }
  rcl_grid_free(&g);
  rcl_grid_free(&want);
}
END_TEST

START_TEST(bad_arguments) {
  rcl_context *c = rt_ctx(_i);
  float in[16] = {0}, out[16];
  rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
  rcl_stencil_options o = RCL_STENCIL_OPTIONS_INIT;
  rt_fails(rcl_stencil(out, NULL, &st, RCL_F32, 4, 4, 1, in, NULL), RCL_ERR_INVALID_ARG, "NULL context");
  rt_fails(rcl_stencil(out, c, NULL, RCL_F32, 4, 4, 1, in, NULL), RCL_ERR_INVALID_ARG, "NULL stencil");
  rt_fails(rcl_stencil(NULL, c, &st, RCL_F32, 4, 4, 1, in, NULL), RCL_ERR_INVALID_ARG, "NULL output");
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, 4, 4, 1, NULL, NULL), RCL_ERR_INVALID_ARG, "NULL input");
  rt_fails(rcl_stencil(out, c, &st, (rcl_dtype)7, 4, 4, 1, in, NULL), RCL_ERR_INVALID_ARG, "dtype");
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, 0, 4, 1, in, NULL), RCL_ERR_INVALID_ARG, "empty");
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, 4, 0, 1, in, NULL), RCL_ERR_INVALID_ARG, "empty");
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, (size_t)1 << 31, 4, 1, in, NULL), RCL_ERR_INVALID_ARG, "largest");
  st.version = 3;
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, 4, 4, 1, in, NULL), RCL_ERR_INVALID_ARG, "version");
  st = (rcl_stencil_desc)RCL_STENCIL_DESC_INIT;
  st.kind = (rcl_stencil_kind)5;
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, 4, 4, 1, in, NULL), RCL_ERR_INVALID_ARG, "kind");
  st.kind = RCL_STENCIL_GENERAL;
  st.radius = 3;
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, 4, 4, 1, in, NULL), RCL_ERR_INVALID_ARG, "radius 3");
  st.radius = 0;
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, 4, 4, 1, in, NULL), RCL_ERR_INVALID_ARG, "radius 0");
  st = (rcl_stencil_desc)RCL_STENCIL_DESC_INIT;
  st.radius = 2;
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, 4, 4, 1, in, NULL), RCL_ERR_INVALID_ARG, "radius 1");
  st.radius = 1;
  st.boundary = (rcl_boundary)9;
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, 4, 4, 1, in, NULL), RCL_ERR_INVALID_ARG, "boundary");
  st.boundary = RCL_BOUNDARY_FIXED;
  /* Options: version, variant, shapes that do not fit, shapes that do not belong to the variant. */
  o.version = 0;
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, 4, 4, 1, in, &o), RCL_ERR_INVALID_ARG, "version");
  o = (rcl_stencil_options)RCL_STENCIL_OPTIONS_INIT;
  o.variant = (rcl_stencil_variant)8;
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, 4, 4, 1, in, &o), RCL_ERR_INVALID_ARG, "variant 8");
  o = (rcl_stencil_options)RCL_STENCIL_OPTIONS_INIT;
  o.variant = RCL_STENCIL_PLAIN;
  o.local_size[0] = 1u << 20;
  o.local_size[1] = 1;
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, 4, 4, 1, in, &o), RCL_ERR_INVALID_ARG, "exceeds");
  o.local_size[0] = 4;
  o.points_per_item[1] = 17;
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, 4, 4, 1, in, &o), RCL_ERR_INVALID_ARG, "too large for the plain variant");
  o.points_per_item[1] = 2;
  o.tile[0] = 10;
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, 4, 4, 1, in, &o), RCL_ERR_INVALID_ARG, "not a multiple");
  o.tile[0] = 0;
  {
    rcl_sor_desc sor = RCL_SOR_DESC_INIT;
    float g[16] = {0};
    rt_fails(rcl_sor(g, NULL, c, &sor, RCL_F32, 4, 4, 1, NULL, &o), RCL_ERR_INVALID_ARG, "plain SOR kernel");
  }
  o = (rcl_stencil_options)RCL_STENCIL_OPTIONS_INIT;
  o.variant = RCL_STENCIL_TASK;
  o.local_size[0] = 4;
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, 4, 4, 1, in, &o), RCL_ERR_INVALID_ARG, "task variant");
  o = (rcl_stencil_options)RCL_STENCIL_OPTIONS_INIT;
  o.variant = RCL_STENCIL_TILED;
  o.local_size[0] = 8;
  o.tile[0] = 12;
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, 4, 4, 1, in, &o), RCL_ERR_INVALID_ARG, "not a multiple");
  o.points_per_item[0] = 2;
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, 4, 4, 1, in, &o), RCL_ERR_INVALID_ARG, "tile[0] = 12 is not");
  o = (rcl_stencil_options)RCL_STENCIL_OPTIONS_INIT;
  o.variant = RCL_STENCIL_TILED;
  o.local_size[0] = o.local_size[1] = 1;
  o.points_per_item[0] = 1024;
  o.points_per_item[1] = 1024;
  rt_fails(rcl_stencil(out, c, &st, RCL_F32, 4, 4, 1, in, &o), RCL_ERR_INVALID_ARG, "local memory");
  if (rcl_context_profile(c)->loop_iteration_limit) { /* llvmpipe: too many points per work-item */
    rcl_stencil_desc g = make_desc(1, RCL_BOUNDARY_FIXED);
    o.points_per_item[0] = 100;
    o.points_per_item[1] = 30;
    rt_fails(rcl_stencil(out, c, &g, RCL_F32, 4, 4, 1, in, &o), RCL_ERR_INVALID_ARG, "loop iterations");
  }
  /* The enqueue form: buffers too small, aliasing, pitch below the width. */
  cl_int err;
  cl_mem a = clCreateBuffer(rcl_context_cl_context(c), CL_MEM_READ_WRITE, 64, NULL, &err);
  cl_mem b = clCreateBuffer(rcl_context_cl_context(c), CL_MEM_READ_WRITE, 64, NULL, &err);
  rt_fails(rcl_stencil_enqueue(b, 0, 0, c, &st, RCL_F32, 4, 4, 1, a, 1, 0, NULL, NULL, NULL), RCL_ERR_INVALID_ARG,
           "in: buffer holds 64 bytes, the call needs 68");
  rt_fails(rcl_stencil_enqueue(b, 0, 5, c, &st, RCL_F32, 4, 4, 1, a, 0, 0, NULL, NULL, NULL), RCL_ERR_INVALID_ARG,
           "out: buffer holds 64 bytes");
  rt_fails(rcl_stencil_enqueue(b, 0, 3, c, &st, RCL_F32, 4, 4, 1, a, 0, 0, NULL, NULL, NULL), RCL_ERR_INVALID_ARG,
           "pitch 3 is less than the width 4");
  rt_fails(rcl_stencil_enqueue(a, 0, 0, c, &st, RCL_F32, 4, 4, 1, a, 0, 0, NULL, NULL, NULL), RCL_ERR_INVALID_ARG,
           "distinct");
  rt_fails(rcl_stencil_enqueue(b, 0, 0, c, &st, RCL_F32, 4, 4, 2, a, 0, 0, b, NULL, NULL), RCL_ERR_INVALID_ARG,
           "distinct");
  rt_fails(rcl_stencil_enqueue(b, SIZE_MAX - 2, 0, c, &st, RCL_F32, 4, 4, 1, a, 0, 0, NULL, NULL, NULL),
           RCL_ERR_OVERFLOW, "overflows");
  clReleaseMemObject(a);
  clReleaseMemObject(b);
}
END_TEST

int main(void) {
  Suite *s = suite_create("stencil");
  rt_add_device_presence(s);
  RT_ADD_DEVICE_CASE(s, matches_reference);
  RT_ADD_DEVICE_CASE(s, launch_invariance);
  RT_ADD_DEVICE_CASE(s, plain_blocks);
  RT_ADD_DEVICE_CASE(s, enqueue_pitch_offsets_events);
  RT_ADD_DEVICE_CASE(s, golden_digests);
  RT_ADD_DEVICE_CASE(s, camera_image);
  RT_ADD_DEVICE_CASE(s, bad_arguments);
  return rt_run(s);
}
