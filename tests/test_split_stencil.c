/* Stencils and red-black SOR over a split of several devices (rcl_split_stencil, rcl_split_sor): bitwise
 * against the host references (rcl_ref_stencil, rcl_ref_sor: grid and residual norm) for every pair of
 * devices present and the sub-devices of each device that has them, splits 1:0, 1:1, 3:1, 1:3 and random
 * weights, f32 and f64 (devices without fp64 left out, or refused with strict), the nine-point and general
 * 3x3 / 5x5 stencils with trap weights, SOR with and without a right-hand side, every boundary, odd and
 * degenerate sizes (1, 2, 3 rows), 0, 1, 2 and 7 iterations, and 1, 2, 3 or the chosen number of steps
 * between halo exchanges; blocks thinner than the halo (halo rows from two blocks away, and from the block
 * itself); the block geometry on the host; and bad arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "split/split_stencil.h"
#include "stencil/stencil_internal.h"
#include "testlib.h"

static const rcl_dtype dtypes[] = {RCL_F32, RCL_F64};
static const rcl_boundary bcs[] = {RCL_BOUNDARY_FIXED, RCL_BOUNDARY_PERIODIC, RCL_BOUNDARY_EDGE};
static const size_t iter_counts[] = {0, 1, 2, 7};
static const char *const kind_names[] = {"nine", "general3", "general5"};
#define NWEIGHTS 5

static void *gen(rcl_dtype dt, size_t n, const char *kind, uint64_t seed) {
  void *p = malloc((n ? n : 1) * rcl_dtype_size(dt));
  ck_assert_ptr_nonnull(p);
  rt_fill(p, dt, n, kind, seed);
  return p;
}

/* kind 0: SHOC's 9-point weights; 1, 2: general 3x3 / 5x5 with trap weights: mixed signs and magnitudes
 * that differ at every position, on inputs of nearly cancelling pairs, so a neighbour read from the wrong
 * row, a stale halo or any other order changes the bits (trap_is_armed checks it). */
static rcl_stencil_desc make_desc(int kind, rcl_boundary bc) {
  rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
  if (kind > 0) {
    st.kind = RCL_STENCIL_GENERAL;
    st.radius = (unsigned)kind;
    for (int k = 0; k < 25; k++) st.weights[k] = (k % 2 ? 0.4375 : -0.15625) * (1 + k % 7) / 8 + 0x1p-20 * k;
  }
  st.boundary = bc;
  st.boundary_value = 0.75;
  return st;
}

static rcl_sor_desc make_sor(rcl_boundary bc, int with_b) {
  rcl_sor_desc s = RCL_SOR_DESC_INIT;
  s.boundary = bc;
  s.omega = with_b ? 1.0 : 1.25;
  s.boundary_value = 0.5;
  return s;
}

/* Weight set k for a split of n devices: 1:0, 1:1, 3:1, 1:3 (the first two devices; the others 1), or
 * random in [0.05, 1). */
static void weight_set(double *w, size_t n, size_t k, uint64_t seed) {
  static const double fixed[4][2] = {{1, 0}, {1, 1}, {3, 1}, {1, 3}};
  rt_rng r = {seed};
  for (size_t i = 0; i < n; i++) w[i] = k < 4 ? (i < 2 ? fixed[k][i] : 1) : 0.05 + 0.95 * rt_uniform(&r);
}

/* A split over the contexts of devices i and j (borrowed). */
static rcl_split *pair(size_t i, size_t j) {
  rcl_context *c[2] = {rt_ctx(i), rt_ctx(j)};
  rcl_split *s = NULL;
  rt_ok(rcl_split_wrap(&s, c, 2, NULL));
  return s;
}

/* Sub-device contexts made here: their devices stay retained until the end (Intel's CPU runtime
 * invalidates a released sub-device although a context still holds it). */
#define MAX_SUBS 16
static cl_device_id subs_kept[MAX_SUBS];
static rcl_context *subs_ctx[MAX_SUBS];
static size_t nsubs_kept;

/* A context on one sub-device, or NULL (noted) where rcl_context_wrap refuses it. */
static rcl_context *subdevice_context(cl_device_id sub, size_t i) {
  cl_platform_id plat;
  ck_assert_int_eq(clGetDeviceInfo(sub, CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL), CL_SUCCESS);
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0};
  cl_int err;
  cl_context c = clCreateContext(props, 1, &sub, NULL, NULL, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  cl_command_queue q = clCreateCommandQueue(c, sub, 0, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  rcl_context *ctx = NULL;
  if (rcl_context_wrap(&ctx, c, sub, q, NULL) != 0)
    rt_note("no sub-device contexts on %s: %s", rt_device_name(i), rcl_error_last());
  clReleaseCommandQueue(q);
  clReleaseContext(c);
  return ctx;
}

/* A split over n sub-devices of device i, or NULL (noted) where the device has none. */
static rcl_split *subdevices(size_t i, unsigned n) {
  cl_device_id d = rcl_context_cl_device(rt_ctx(i)), sub[8];
  cl_uint cu = 0, made = 0;
  ck_assert_int_eq(clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL), CL_SUCCESS);
  cl_device_partition_property props[] = {CL_DEVICE_PARTITION_EQUALLY, (cl_device_partition_property)(cu / n), 0};
  const char *platform = rcl_context_profile(rt_ctx(i))->platform_name;
  if (cu < n || n > 8 || nsubs_kept + n > MAX_SUBS || strstr(platform, "rusticl") ||
      clCreateSubDevices(d, props, n, sub, &made) != CL_SUCCESS || made < n) {
    rt_note("no %u sub-devices of %s (%u compute units, %s)", n, rt_device_name(i), cu, platform);
    return NULL;
  }
  rcl_context *c[8];
  for (unsigned k = 0; k < n; k++) {
    subs_kept[nsubs_kept] = sub[k];
    c[k] = subs_ctx[nsubs_kept++] = subdevice_context(sub[k], i);
    if (!c[k]) return NULL;
  }
  rcl_split *s = NULL;
  rt_ok(rcl_split_wrap(&s, c, n, NULL));
  return s;
}

/* Whether every device of s with a share runs dt (the others must be left out with a note). */
static void check_shares(rcl_split *s, size_t height, const char *what) {
  size_t covered = 0;
  for (size_t d = 0; d < rcl_split_count(s); d++) {
    size_t first, count;
    const char *note;
    rt_ok(rcl_split_share(&first, &count, &note, s, d));
    ck_assert_msg(!count || first == covered, "%s: device %zu starts at row %zu, not %zu", what, d, first, covered);
    ck_assert_msg(!note || !count, "%s: device %zu left out (%s) but given rows", what, d, note);
    covered += count;
  }
  ck_assert_msg(covered == height, "%s: the shares cover %zu of %zu rows", what, covered, height);
}

static int dev_usable(rcl_split *s, size_t d, rcl_dtype dt) {
  const rcl_device_profile *p = rcl_context_profile(rcl_split_context(s, d));
  return rcl_device_profile_support(p, RCL_FAMILY_STENCIL, dt, NULL) != RCL_SUPPORT_NONE;
}

static int usable(rcl_split *s, rcl_dtype dt) {
  for (size_t d = 0; d < rcl_split_count(s); d++)
    if (dev_usable(s, d, dt)) return 1;
  return 0;
}

/* Weights 1:0 where the first device cannot run dt: nothing is left to run it, which is refused. */
static int nothing_left(rcl_split *s, size_t k, rcl_dtype dt) {
  if (k != 0 || dev_usable(s, 0, dt)) return 0;
  rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
  rcl_sor_desc d = RCL_SOR_DESC_INIT;
  double g[4] = {1, 2, 3, 4}, o[4];
  rt_fails(rcl_split_stencil(o, s, &st, dt, 2, 2, 1, g), RCL_ERR_UNSUPPORTED, "no device left");
  rt_fails(rcl_split_sor(g, NULL, s, &d, dt, 2, 2, 1, NULL), RCL_ERR_UNSUPPORTED, "no device left");
  return 1;
}

/* One stencil run over s against the reference; per 0 goes through the public call. */
static void run_stencil(rcl_split *s, const rcl_stencil_desc *st, rcl_dtype dt, size_t w, size_t h, size_t iters,
                        size_t per, uint64_t seed, const char *what) {
  size_t n = w * h, es = rcl_dtype_size(dt);
  void *in = gen(dt, n, "cancel", seed), *want = malloc(n * es), *got = malloc(n * es);
  memset(got, 0xa5, n * es);
  rt_ok(rcl_ref_stencil(want, st, dt, w, h, iters, in));
  if (per == 0) {
    int rc = rcl_split_stencil(got, s, st, dt, w, h, iters, in);
    ck_assert_msg(rc == 0, "%s: %s", what, rcl_error_last());
  } else {
    rcl__split_grid_job j = {st, NULL, dt, w, h, iters, in, NULL, got, NULL, per};
    int rc = rcl__split_grid_run(s, &j);
    ck_assert_msg(rc == 0, "%s: %s", what, rcl_error_last());
  }
  rt_assert_bits_eq(got, want, n, dt, "%s", what);
  check_shares(s, h, what);
  free(in);
  free(want);
  free(got);
}

/* One SOR run over s against the reference (grid and residual norm). */
static void run_sor(rcl_split *s, const rcl_sor_desc *d, rcl_dtype dt, size_t w, size_t h, size_t sweeps, int with_b,
                    size_t per, uint64_t seed, const char *what) {
  size_t n = w * h, es = rcl_dtype_size(dt);
  void *grid = gen(dt, n, "uniform", seed), *rhs = gen(dt, n, "uniform", seed + 1), *want = malloc(n * es);
  double want_res = 0, got_res = 0;
  memcpy(want, grid, n * es);
  rt_ok(rcl_ref_sor(want, &want_res, d, dt, w, h, sweeps, with_b ? rhs : NULL));
  rcl__split_grid_job j = {NULL, d, dt, w, h, sweeps, grid, with_b ? rhs : NULL, grid, &got_res, per};
  int rc = per ? rcl__split_grid_run(s, &j) : rcl_split_sor(grid, &got_res, s, d, dt, w, h, sweeps, j.rhs);
  ck_assert_msg(rc == 0, "%s: %s", what, rcl_error_last());
  rt_assert_bits_eq(grid, want, n, dt, "%s", what);
  rt_assert_bits_eq(&got_res, &want_res, 1, dt, "residual of %s", what);
  check_shares(s, h, what);
  free(grid);
  free(rhs);
  free(want);
}

/* Case c of a sweep: stencil `variant` (nine, general3, general5) or SOR (variant: with b or not) on
 * boundary bc after `steps` steps, with per steps between exchanges (sizes vary with c). */
static void one_case(rcl_split *s, const char *name, int sor, int variant, rcl_dtype dt, rcl_boundary bc, size_t steps,
                     size_t k, size_t per, size_t c) {
  static const size_t sizes[][2] = {{13, 11}, {7, 3}, {5, 2}, {9, 1}, {1, 7}, {17, 23}};
  static const size_t even[][2] = {{12, 10}, {4, 2}, {6, 1}, {1, 8}, {2, 4}, {8, 14}}; /* periodic SOR */
  const size_t *sz = sor && bc == RCL_BOUNDARY_PERIODIC ? even[c % 6] : sizes[c % 6];
  char what[200];
  snprintf(what, sizeof what, "%s: %s %s %s %zux%zu, %zu steps, weights %zu, %zu per exchange", name,
           sor ? (variant ? "sor with b" : "sor") : kind_names[variant], rcl_dtype_name(dt), rcl_boundary_name(bc),
           sz[0], sz[1], steps, k, per);
  if (sor) {
    rcl_sor_desc d = make_sor(bc, variant);
    run_sor(s, &d, dt, sz[0], sz[1], steps, variant, per, 300 + c, what);
  } else {
    rcl_stencil_desc st = make_desc(variant, bc);
    run_stencil(s, &st, dt, sz[0], sz[1], steps, per, c, what);
  }
}

/* Every stencil (or SOR with and without b), boundary, dtype, weight set and step count on split s. */
static void cases_on(rcl_split *s, const char *name, int sor) {
  size_t nd = rcl_split_count(s), c = 0;
  double *wt = malloc(nd * sizeof *wt);
  for (size_t di = 0; di < 2; di++) {
    if (!usable(s, dtypes[di])) continue;
    for (int variant = 0; variant < (sor ? 2 : 3); variant++)
      for (size_t b = 0; b < 3; b++)
        for (size_t k = 0; k < NWEIGHTS; k++) {
          weight_set(wt, nd, k, 100 + c);
          rt_ok(rcl_split_set_weights(s, wt, nd));
          if (nothing_left(s, k, dtypes[di])) continue;
          for (size_t it = 0; it < 4; it++, c++)
            one_case(s, name, sor, variant, dtypes[di], bcs[b], iter_counts[it], k, (c + c / 4) % 4, c);
        }
  }
  free(wt);
}

static void stencils_on(rcl_split *s, const char *name) { cases_on(s, name, 0); }
static void sor_on(rcl_split *s, const char *name) { cases_on(s, name, 1); }

/* fn on device i with every later device, and on i's own sub-devices (the same device twice). */
static void on_splits_of(size_t i, void (*fn)(rcl_split *, const char *)) {
  char name[256];
  for (size_t j = i + 1; j < rt_ndevices(); j++) {
    rcl_split *s = pair(i, j);
    snprintf(name, sizeof name, "%s + %s", rt_device_name(i), rt_device_name(j));
    fn(s, name);
    rcl_split_free(s);
  }
  rcl_split *s = subdevices(i, 2);
  if (s) {
    snprintf(name, sizeof name, "%s as 2 sub-devices", rt_device_name(i));
    fn(s, name);
    rcl_split_free(s);
  }
}

START_TEST(stencil_pairs) { on_splits_of(_i, stencils_on); }
END_TEST

START_TEST(sor_pairs) { on_splits_of(_i, sor_on); }
END_TEST

/* A split of device _i alone (the one-device path: no halo, every step in one round) equals the one-device
 * call and the reference. */
START_TEST(one_device) {
  rcl_context *c = rt_ctx(_i);
  rcl_split *s = NULL;
  rt_ok(rcl_split_wrap(&s, &c, 1, NULL));
  for (size_t di = 0; di < 2; di++) {
    rcl_dtype dt = dtypes[di];
    if (!rt_supported(_i, RCL_FAMILY_STENCIL, dt)) {
      rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
      double v = 1, o = 0;
      rt_fails(rcl_split_stencil(&o, s, &st, dt, 1, 1, 1, &v), RCL_ERR_UNSUPPORTED, "no device left");
      continue;
    }
    const size_t w = 29, h = 31, n = w * h, es = rcl_dtype_size(dt);
    void *in = gen(dt, n, "cancel", 7), *one = malloc(n * es), *got = malloc(n * es);
    for (int kind = 0; kind < 3; kind++) {
      rcl_stencil_desc st = make_desc(kind, bcs[kind]);
      rt_ok(rcl_stencil(one, c, &st, dt, w, h, 5, in, NULL));
      rt_ok(rcl_split_stencil(got, s, &st, dt, w, h, 5, in));
      rt_assert_bits_eq(got, one, n, dt, "%s on %s alone", kind_names[kind], rt_device_name(_i));
    }
    double res_one = 0, res_got = 0;
    rcl_sor_desc d = make_sor(RCL_BOUNDARY_EDGE, 1);
    memcpy(one, in, n * es);
    memcpy(got, in, n * es);
    rt_ok(rcl_sor(one, &res_one, c, &d, dt, w, h, 4, in, NULL));
    rt_ok(rcl_split_sor(got, &res_got, s, &d, dt, w, h, 4, in));
    rt_assert_bits_eq(got, one, n, dt, "sor on %s alone", rt_device_name(_i));
    rt_assert_bits_eq(&res_got, &res_one, 1, dt, "sor residual on %s alone", rt_device_name(_i));
    free(in);
    free(one);
    free(got);
  }
  rcl_split_free(s);
}
END_TEST

/* Every device present plus two sub-devices of the first device that has them, equal or random weights, on
 * grids of 1 to 7 rows: blocks of 0, 1 or 2 rows, thinner than the halo (5x5: 2 rows a step, up to 3 steps
 * between exchanges), whose halo rows come from two or more blocks away or (periodic) from the block
 * itself. */
START_TEST(thin_blocks) {
  size_t nd = rt_ndevices(), m = 0;
  rcl_split *subs = NULL;
  for (size_t i = 0; i < nd && !subs; i++) subs = subdevices(i, 2);
  rcl_context **c = calloc(nd + 2, sizeof *c);
  for (size_t i = 0; i < nd; i++) c[m++] = rt_ctx(i);
  for (size_t i = 0; subs && i < 2; i++) c[m++] = rcl_split_context(subs, i);
  rcl_split *s = NULL;
  rt_ok(rcl_split_wrap(&s, c, m, NULL));
  double *wt = malloc(m * sizeof *wt);
  size_t cnt = 0;
  for (size_t di = 0; di < 2; di++)
    for (size_t h = 1; h <= 7; h++)
      for (size_t b = 0; b < 3; b++)
        for (size_t per = 1; per <= 3; per++, cnt++) {
          for (size_t k = 0; k < m; k++) wt[k] = 1;
          if (cnt % 2) weight_set(wt, m, 4, cnt);
          rt_ok(rcl_split_set_weights(s, wt, m));
          rcl_stencil_desc st = make_desc(2, bcs[b]);
          char what[200];
          snprintf(what, sizeof what, "%zu devices: general5 %s %s 6x%zu, %zu per exchange", m,
                   rcl_dtype_name(dtypes[di]), rcl_boundary_name(bcs[b]), h, per);
          run_stencil(s, &st, dtypes[di], 6, h, 7, per, cnt, what);
          if (bcs[b] == RCL_BOUNDARY_PERIODIC && h % 2 && h > 1) continue;
          rcl_sor_desc d = make_sor(bcs[b], (int)(cnt % 2));
          snprintf(what, sizeof what, "%zu devices: sor %s %s 6x%zu, %zu per exchange", m, rcl_dtype_name(dtypes[di]),
                   rcl_boundary_name(bcs[b]), h, per);
          run_sor(s, &d, dtypes[di], 6, h, 7, (int)(cnt % 2), per, 500 + cnt, what);
        }
  free(wt);
  free(c);
  rcl_split_free(s);
  rcl_split_free(subs);
}
END_TEST

/* A device that cannot run f64 (Rusticl) beside one that can: left out (no rows, a note) and the bits
 * unchanged; with strict the call fails naming it. */
START_TEST(fp64_left_out) {
  size_t nd = rt_ndevices(), no = nd, yes = nd;
  for (size_t i = 0; i < nd; i++) {
    const rcl_device_profile *p = rcl_context_profile(rt_ctx(i));
    if (rcl_device_profile_support(p, RCL_FAMILY_STENCIL, RCL_F64, NULL) == RCL_SUPPORT_NONE)
      no = no < nd ? no : i;
    else
      yes = yes < nd ? yes : i;
  }
  if (no == nd || yes == nd) {
    rt_note("skipped: needs one device without fp64 and one with it (%zu devices)", nd);
    return;
  }
  rcl_context *c[2] = {rt_ctx(no), rt_ctx(yes)};
  rcl_split_options o = RCL_SPLIT_OPTIONS_INIT;
  const double w[2] = {1, 1};
  o.weights = w;
  o.nweights = 2;
  rcl_split *s = NULL;
  rt_ok(rcl_split_wrap(&s, c, 2, &o));
  rcl_stencil_desc st = make_desc(1, RCL_BOUNDARY_PERIODIC);
  run_stencil(s, &st, RCL_F64, 11, 9, 3, 0, 1, "f64 with a device left out");
  size_t first, count;
  const char *note;
  rt_ok(rcl_split_share(&first, &count, &note, s, 0));
  ck_assert_msg(count == 0 && note != NULL, "%s got %zu rows of f64 (note %s)", rt_device_name(no), count,
                note ? note : "none");
  rcl_sor_desc d = make_sor(RCL_BOUNDARY_FIXED, 1);
  run_sor(s, &d, RCL_F64, 11, 9, 3, 1, 0, 2, "f64 SOR with a device left out");
  run_stencil(s, &st, RCL_F32, 11, 9, 3, 0, 3, "f32 on both"); /* and f32 still uses both */
  rt_ok(rcl_split_share(&first, &count, &note, s, 0));
  ck_assert_msg(count > 0 && !note, "%s left out of f32", rt_device_name(no));
  rcl_split_free(s);
  o.strict = 1;
  rt_ok(rcl_split_wrap(&s, c, 2, &o));
  double in[4] = {1, 2, 3, 4}, out[4];
  rt_fails(rcl_split_stencil(out, s, &st, RCL_F64, 2, 2, 1, in), RCL_ERR_UNSUPPORTED, "cannot run stencil f64");
  rt_fails(rcl_split_sor(in, NULL, s, &d, RCL_F64, 2, 2, 1, NULL), RCL_ERR_UNSUPPORTED, rt_device_name(no));
  rcl_split_free(s);
}
END_TEST

/* Measured weights (the stencil probe, cached): any weights give the reference's bits. */
START_TEST(measured_weights) {
  size_t nd = rt_ndevices();
  if (nd < 2) {
    rt_note("skipped: one device");
    return;
  }
  rcl_split *s = pair(0, nd - 1);
  double w[2];
  rt_ok(rcl_split_weights(w, s, RCL_FAMILY_STENCIL, RCL_F32));
  ck_assert_msg(w[0] > 0 && w[1] > 0, "measured weights %g, %g", w[0], w[1]);
  rcl_stencil_desc st = make_desc(0, RCL_BOUNDARY_EDGE);
  run_stencil(s, &st, RCL_F32, 40, 33, 7, 0, 9, "measured weights");
  rcl_sor_desc d = make_sor(RCL_BOUNDARY_PERIODIC, 0);
  run_sor(s, &d, RCL_F32, 40, 34, 7, 0, 0, 10, "SOR with measured weights");
  rcl_split_free(s);
}
END_TEST

/* The traps are armed: a block of rows computed alone (its edge read through the boundary rule instead of
 * its neighbours' rows) differs from the whole grid's rows, for every stencil and boundary, in the row next
 * to the cut; so a missing or stale halo row could not pass the tests above. */
START_TEST(trap_is_armed) {
  const size_t w = 13, h = 11, cut = 5, n = w * h;
  for (size_t di = 0; di < 2; di++) {
    rcl_dtype dt = dtypes[di];
    size_t es = rcl_dtype_size(dt);
    char *in = gen(dt, n, "cancel", 77), *whole = malloc(n * es), *part = malloc(n * es);
    for (int kind = 0; kind < 3; kind++)
      for (size_t b = 0; b < 3; b++) {
        rcl_stencil_desc st = make_desc(kind, bcs[b]);
        rt_ok(rcl_ref_stencil(whole, &st, dt, w, h, 1, in));
        rt_ok(rcl_ref_stencil(part, &st, dt, w, cut, 1, in));
        ck_assert_msg(memcmp(part + (cut - 1) * w * es, whole + (cut - 1) * w * es, w * es) != 0,
                      "%s %s %s: the row beside the cut does not depend on the next block", kind_names[kind],
                      rcl_boundary_name(bcs[b]), rcl_dtype_name(dt));
      }
    free(in);
    free(whole);
    free(part);
  }
}
END_TEST

/* The block geometry: for every partition of grids of 1 to 12 rows into up to 4 blocks and halos of 0 to 6
 * rows, every halo row of every block is its owner's row, found among the owner's staged edge rows. */
START_TEST(block_geometry) {
  rt_rng r = {42};
  for (size_t h = 1; h <= 12; h++)
    for (size_t halo = 0; halo <= 6; halo++)
      for (size_t b = 0; b < 3; b++)
        for (int t = 0; t < 20; t++) {
          size_t bounds[5] = {0, 0, 0, 0, h};
          for (int k = 1; k < 4; k++) bounds[k] = (size_t)(rt_uniform(&r) * (double)(h + 1));
          for (int k = 1; k < 4; k++)
            for (int q = k; q > 1 && bounds[q] < bounds[q - 1]; q--) {
              size_t x = bounds[q];
              bounds[q] = bounds[q - 1];
              bounds[q - 1] = x;
            }
          rcl__block_geom g[4];
          for (int k = 0; k < 4; k++) rcl__block_geom_init(&g[k], 3, h, bounds[k], bounds[k + 1], halo, bcs[b]);
          for (int k = 0; k < 4; k++) {
            size_t own = g[k].r1 - g[k].r0;
            ck_assert_uint_eq(g[k].rows, own ? g[k].above + own + g[k].below : 0);
            for (size_t l = 0; l < g[k].rows; l++) {
              size_t row = rcl__block_global_row(&g[k], l);
              long want = (long)g[k].r0 - (long)g[k].above + (long)l;
              ck_assert_uint_eq(row, (size_t)(((want % (long)h) + (long)h) % (long)h));
              if (l >= g[k].above && l < g[k].above + own) continue;
              ck_assert_msg(bcs[b] == RCL_BOUNDARY_PERIODIC || (want >= 0 && want < (long)h), "row %ld", want);
              int o = 0;
              while (!(bounds[o] <= row && row < bounds[o + 1])) o++;
              size_t e = rcl__block_edge(&g[o], halo), idx = rcl__block_edge_index(&g[o], halo, row);
              ck_assert_msg(idx < 2 * e, "halo row %zu of block %d (h %zu, halo %zu): index %zu of %zu", row, k, h,
                            halo, idx, 2 * e);
              size_t back = idx < e ? g[o].r0 + idx : g[o].r1 - e + (idx - e);
              ck_assert_uint_eq(back, row);
            }
          }
        }
}
END_TEST

START_TEST(bad_arguments) {
  rcl_context *c = rt_ctx(0);
  rcl_split *s = NULL;
  rt_ok(rcl_split_wrap(&s, &c, 1, NULL));
  float g[16] = {0}, o[16];
  rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
  rcl_sor_desc d = RCL_SOR_DESC_INIT;
  rt_fails(rcl_split_stencil(o, NULL, &st, RCL_F32, 4, 4, 1, g), RCL_ERR_INVALID_ARG, "NULL split");
  rt_fails(rcl_split_stencil(o, s, NULL, RCL_F32, 4, 4, 1, g), RCL_ERR_INVALID_ARG, "NULL stencil");
  rt_fails(rcl_split_stencil(o, s, &st, RCL_F32, 0, 4, 1, g), RCL_ERR_INVALID_ARG, "empty");
  rt_fails(rcl_split_stencil(NULL, s, &st, RCL_F32, 4, 4, 1, g), RCL_ERR_INVALID_ARG, "NULL grid");
  rt_fails(rcl_split_stencil(o, s, &st, (rcl_dtype)9, 4, 4, 1, g), RCL_ERR_INVALID_ARG, "dtype 9");
  st.radius = 2;
  rt_fails(rcl_split_stencil(o, s, &st, RCL_F32, 4, 4, 1, g), RCL_ERR_INVALID_ARG, "radius 1, not 2");
  d.omega = 2;
  rt_fails(rcl_split_sor(g, NULL, s, &d, RCL_F32, 4, 4, 1, NULL), RCL_ERR_INVALID_ARG, "omega = 2");
  d = (rcl_sor_desc)RCL_SOR_DESC_INIT;
  d.boundary = RCL_BOUNDARY_PERIODIC;
  rt_fails(rcl_split_sor(g, NULL, s, &d, RCL_F32, 4, 3, 1, NULL), RCL_ERR_INVALID_ARG, "odd size");
  rt_fails(rcl_split_sor(g, NULL, s, NULL, RCL_F32, 4, 4, 1, NULL), RCL_ERR_INVALID_ARG, "NULL SOR");
  rcl_split_free(s);
}
END_TEST

static void add_case(Suite *s, const char *name, const TTest *t) {
  TCase *tc = tcase_create(name);
  tcase_add_test(tc, t);
  suite_add_tcase(s, tc);
}

int main(void) {
  Suite *s = suite_create("split_stencil");
  rt_add_device_presence(s);
  add_case(s, "block_geometry", block_geometry);
  add_case(s, "trap_is_armed", trap_is_armed);
  RT_ADD_DEVICE_CASE(s, one_device);
  RT_ADD_DEVICE_CASE(s, stencil_pairs);
  RT_ADD_DEVICE_CASE(s, sor_pairs);
  add_case(s, "thin_blocks", thin_blocks);
  add_case(s, "fp64_left_out", fp64_left_out);
  add_case(s, "measured_weights", measured_weights);
  add_case(s, "bad_arguments", bad_arguments);
  int rc = rt_run(s);
  for (size_t k = 0; k < nsubs_kept; k++) {
    rcl_context_free(subs_ctx[k]);
    clReleaseDevice(subs_kept[k]);
  }
  return rc;
}
