/* Traps for compilers that reorder ordered sums (issue 15). Every kernel whose contract fixes the order of a
 * floating-point sum — the ordered SpMV row sums, the general stencils' weighted sums, the ordered reductions'
 * lane sums — gets terms that cancel only when added in that order, in every row, grid point and lane, through
 * every variant and many work-group sizes (odd ones and ones that do not divide the problem where the options
 * allow them), f32 and f64, compared bit for bit with the host reference. A compiler that vectorises such a
 * loop with several partial sums — Intel's OpenCL CPU compiler does it to the work-items it runs outside its
 * SIMD groups — fails here; RCL_ORDERED_LOOP and R_SEAL (cl/prelude.cl) are the defence. */
#include <stdio.h>
#include <stdlib.h>

#include "testlib.h"

static const rcl_dtype dtypes[] = {RCL_F32, RCL_F64};

/* ---- the trap ---------------------------------------------------------------------------------------- */

/* Term k of 1, B, 1, -B, 1, B, ... with B = 2^24 (f32) or 2^53 (f64): the power of two above which the
 * spacing is 2, so B + 1 rounds back to B (ties to even). Left to right every four terms bring the sum back
 * to 0 (the 1 after B is lost), so 4m + 1 terms sum to 1; split into two partial sums (even and odd terms)
 * none of the 1s is lost. Every value and product with 1 is exact in either dtype. */
static double trap_term(rcl_dtype dt, size_t k) {
  double b = dt == RCL_F32 ? 0x1p24 : 0x1p53;
  return k % 2 == 0 ? 1.0 : k % 4 == 1 ? b : -b;
}

static double add_in(rcl_dtype dt, double a, double b) { return dt == RCL_F32 ? (double)((float)a + (float)b) : a + b; }

/* Terms first, first + step, ... below n added left to right in dt, starting from the first. */
static double trap_sum(rcl_dtype dt, size_t first, size_t step, size_t n) {
  double s = 0.0;
  for (size_t k = first; k < n; k += step) s = k == first ? trap_term(dt, k) : add_in(dt, s, trap_term(dt, k));
  return s;
}

/* Asserts that the first n terms added left to right differ from every two-way split a vectoriser with two
 * partial sums can make: even and odd terms summed apart and then added (either way round), over all n terms
 * or over the even-length prefix followed by the last term. Returns the left-to-right sum. */
static double trap_check(rcl_dtype dt, size_t n) {
  double seq = trap_sum(dt, 0, 1, n);
  size_t m = n & ~(size_t)1;
  double e = trap_sum(dt, 0, 2, n), o = trap_sum(dt, 1, 2, n);
  double split[3] = {add_in(dt, e, o), add_in(dt, o, e), add_in(dt, trap_sum(dt, 0, 2, m), trap_sum(dt, 1, 2, m))};
  if (m < n) split[2] = add_in(dt, split[2], trap_term(dt, n - 1));
  for (int s = 0; s < 3; s++)
    ck_assert_msg(split[s] != seq, "%s trap of %zu terms: split %d gives the ordered sum %g", rcl_dtype_name(dt), n, s,
                  seq);
  return seq;
}

static void *alloc_n(rcl_dtype dt, size_t n) {
  void *p = malloc((n ? n : 1) * rcl_dtype_size(dt));
  ck_assert_ptr_nonnull(p);
  return p;
}

static void put(void *p, rcl_dtype dt, size_t i, double v) {
  if (dt == RCL_F32)
    ((float *)p)[i] = (float)v;
  else
    ((double *)p)[i] = v;
}

/* Whether a configuration was refused for a size beyond this device's limits (said so): work-groups over
 * llvmpipe's 32 work-items, or too few groups for its loop limit. Each test still requires most to run. */
static int refused_for_size(int rc) {
  const char *m = rcl_error_last();
  return rc == RCL_ERR_INVALID_ARG && (strstr(m, "exceeds") || strstr(m, "local memory") || strstr(m, "loop"));
}

/* ---- SpMV: every row a trap ---------------------------------------------------------------------------- */

/* 203 rows of 4m + 1 entries (m = 1 .. 13: 5 to 53), row i's entry k the trap term k, columns spread and
 * repeated; with x = 1 every row sums to 1 in order. */
#define SP_ROWS 203u
#define SP_COLS 97u
static size_t sp_len(size_t i) { return 4 * (1 + (i * 5) % 13) + 1; }

static rcl_csr *trap_matrix(rcl_dtype dt) {
  uint64_t rp[SP_ROWS + 1];
  rp[0] = 0;
  for (size_t i = 0; i < SP_ROWS; i++) rp[i + 1] = rp[i] + sp_len(i);
  size_t nnz = rp[SP_ROWS];
  uint32_t *ci = malloc(nnz * sizeof *ci);
  void *v = alloc_n(dt, nnz);
  ck_assert_ptr_nonnull(ci);
  for (size_t i = 0; i < SP_ROWS; i++)
    for (size_t k = 0; k < sp_len(i); k++) {
      ci[rp[i] + k] = (uint32_t)((i * 3 + k * 7) % SP_COLS);
      put(v, dt, rp[i] + k, trap_term(dt, k));
    }
  rcl_csr *A;
  rt_ok(rcl_csr_create(&A, dt, SP_ROWS, SP_COLS, nnz, rp, ci, v));
  free(ci);
  free(v);
  return A;
}

/* Every variant (and the long-row path) at work-group sizes 1 .. 64, each row's sum against the reference. */
START_TEST(spmv_ordered_traps) {
  static const size_t locals[] = {1, 2, 4, 16, 32, 64};
  const size_t nl = sizeof locals / sizeof locals[0];
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_SPMV, dt)) continue;
    for (size_t m = 1; m <= 13; m++) ck_assert(trap_check(dt, 4 * m + 1) == 1.0);
    rcl_csr *A = trap_matrix(dt);
    rcl_spmv_matrix *M;
    rt_ok(rcl_spmv_matrix_create(&M, rt_ctx(_i), A));
    size_t es = rcl_dtype_size(dt);
    void *x = alloc_n(dt, SP_COLS), *want = alloc_n(dt, SP_ROWS), *got = alloc_n(dt, SP_ROWS);
    for (size_t c = 0; c < SP_COLS; c++) put(x, dt, c, 1.0);
    unsigned char one[8], zero[8] = {0};
    put(one, dt, 0, 1.0);
    rt_ok(rcl_ref_spmv(want, A, RCL_SPMV_ORDERED, one, x, zero));
    size_t ran = 0, tried = 0;
    for (size_t l = 0; l < nl; l++)
      for (int v = RCL_SPMV_SCALAR; v <= RCL_SPMV_TASK + 2; v++) {
        size_t W = locals[l];
        rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
        o.variant = v <= RCL_SPMV_TASK ? (rcl_spmv_variant)v : RCL_SPMV_SCALAR;
        if (o.variant == RCL_SPMV_TASK && l > 0) continue; /* one work-item whatever the size */
        if (o.variant != RCL_SPMV_TASK) o.local_size = W;
        if (o.variant == RCL_SPMV_VECTOR) o.lanes = W < 4 ? W : 4; /* several rows per group from 8 up */
        if (o.variant == RCL_SPMV_SELL) o.slice = W < 8 ? W : 8;
        if (v > RCL_SPMV_TASK) { /* the long-row path: rows over 8 entries, in windows of 7 or whole */
          o.long_row = 8;
          o.window = v == RCL_SPMV_TASK + 1 ? 7 : 0;
        }
        char what[160];
        snprintf(what, sizeof what, "%s trap rows, %s local %zu lanes %zu slice %zu long_row %zu window %zu",
                 rcl_dtype_name(dt), rcl_spmv_variant_name(o.variant), o.local_size, o.lanes, o.slice, o.long_row,
                 o.window);
        memset(got, 0xff, SP_ROWS * es);
        int rc = rcl_spmv_host(got, M, one, x, zero, &o);
        tried++;
        if (rc && refused_for_size(rc)) continue;
        ck_assert_msg(rc == 0, "%s on %s: %s", what, rt_device_name(_i), rcl_error_last());
        rt_assert_bits_eq(got, want, SP_ROWS, dt, "%s on %s", what, rt_device_name(_i));
        ran++;
      }
    ck_assert_msg(2 * ran >= tried, "only %zu of %zu SpMV configurations ran on %s", ran, tried, rt_device_name(_i));
    free(x);
    free(want);
    free(got);
    rcl_spmv_matrix_free(M);
    rcl_csr_free(A);
  }
}
END_TEST

/* ---- general stencils: every point a trap ---------------------------------------------------------------- */

/* Weights the trap terms, a grid of 1s (the fixed boundary value too): every point's weighted sum is a trap
 * of 9 or 25 terms, 1 in order. */
START_TEST(stencil_general_traps) {
  static const size_t W = 61, H = 53;
  /* plain local shapes; tiled local x, local y, points x, points y; plain register blocks likewise */
  static const size_t plain[][2] = {{1, 1}, {2, 1}, {3, 1}, {7, 3}, {16, 4}, {32, 1}, {64, 1}};
  static const size_t tiled[][4] = {{1, 1, 1, 1}, {3, 1, 2, 2}, {7, 3, 1, 2}, {16, 2, 2, 4}, {32, 1, 1, 8}};
  static const size_t blocks[][4] = {{8, 4, 4, 8}, {4, 8, 3, 5}, {1, 1, 2, 3}};
  static const rcl_boundary bcs[] = {RCL_BOUNDARY_FIXED, RCL_BOUNDARY_PERIODIC, RCL_BOUNDARY_EDGE};
  const size_t np = sizeof plain / sizeof plain[0], nt = sizeof tiled / sizeof tiled[0];
  const size_t nb = sizeof blocks / sizeof blocks[0];
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_STENCIL, dt)) continue;
    size_t es = rcl_dtype_size(dt);
    void *in = alloc_n(dt, W * H), *want = alloc_n(dt, W * H), *got = alloc_n(dt, W * H);
    for (size_t i = 0; i < W * H; i++) put(in, dt, i, 1.0);
    for (unsigned r = 1; r <= 2; r++) {
      size_t kk = (2 * r + 1) * (2 * r + 1);
      ck_assert(trap_check(dt, kk) == 1.0);
      rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
      st.kind = RCL_STENCIL_GENERAL;
      st.radius = r;
      for (size_t k = 0; k < kk; k++) st.weights[k] = trap_term(dt, k);
      st.boundary = bcs[(r + d) % 3];
      st.boundary_value = 1.0;
      rt_ok(rcl_ref_stencil(want, &st, dt, W, H, 1, in));
      size_t ran = 0, tried = 0;
      for (size_t c = 0; c < np + nt + nb + 1; c++) {
        rcl_stencil_options o = RCL_STENCIL_OPTIONS_INIT;
        const size_t *sh = c < np             ? plain[c]
                           : c < np + nt      ? tiled[c - np]
                           : c < np + nt + nb ? blocks[c - np - nt]
                                              : NULL;
        o.variant = c < np || (c >= np + nt && sh) ? RCL_STENCIL_PLAIN : sh ? RCL_STENCIL_TILED : RCL_STENCIL_TASK;
        if (sh) {
          o.local_size[0] = sh[0];
          o.local_size[1] = sh[1];
        }
        if (sh && c >= np) {
          o.points_per_item[0] = sh[2];
          o.points_per_item[1] = sh[3];
        }
        char what[160];
        snprintf(what, sizeof what, "general %ux%u %s %s trap, %s local %zux%zu points %zux%zu", 2 * r + 1, 2 * r + 1,
                 rcl_dtype_name(dt), rcl_boundary_name(st.boundary), rcl_stencil_variant_name(o.variant),
                 o.local_size[0], o.local_size[1], o.points_per_item[0], o.points_per_item[1]);
        memset(got, 0xff, W * H * es);
        int rc = rcl_stencil(got, rt_ctx(_i), &st, dt, W, H, 1, in, &o);
        tried++;
        if (rc && refused_for_size(rc)) continue;
        ck_assert_msg(rc == 0, "%s on %s: %s", what, rt_device_name(_i), rcl_error_last());
        rt_assert_bits_eq(got, want, W * H, dt, "%s on %s", what, rt_device_name(_i));
        ran++;
      }
      ck_assert_msg(2 * ran >= tried, "only %zu of %zu stencil shapes ran on %s", ran, tried, rt_device_name(_i));
    }
    free(in);
    free(want);
    free(got);
  }
}
END_TEST

/* ---- ordered reductions: every lane a trap ------------------------------------------------------------------ */

/* x[i] = trap term (i / 64) % 4: the j-th element of every lane (the contract's leaves sum x[b*2048 + l + 64 j]
 * in j order) is trap term j. n leaves a partial block whose lanes have 11 or 10 terms. */
START_TEST(reduce_ordered_traps) {
  static const size_t n = 2048 * 9 + 64 * 10 + 37;
  static const size_t locals[] = {1, 2, 4, 16, 32, 128};
  static const size_t groups[] = {0, 1, 3, 7};
  static const rcl_reduce_op ops[] = {RCL_OP_SUM, RCL_OP_DOT};
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    if (!rt_supported(_i, RCL_FAMILY_REDUCE, dt)) continue;
    ck_assert(trap_check(dt, 32) == 0.0); /* a full lane */
    trap_check(dt, 11);
    trap_check(dt, 10);
    void *x = alloc_n(dt, n), *y = alloc_n(dt, n);
    for (size_t i = 0; i < n; i++) {
      put(x, dt, i, trap_term(dt, (i / 64) % 4));
      put(y, dt, i, 1.0);
    }
    for (size_t p = 0; p < 2; p++) {
      unsigned char want[8], got[8];
      rt_ok(rcl_ref_reduce(want, ops[p], dt, RCL_REDUCE_ORDERED, n, x, y));
      size_t nl = sizeof locals / sizeof locals[0], ng = sizeof groups / sizeof groups[0], ran = 0;
      for (size_t c = 0; c <= nl * ng; c++) {
        rcl_reduce_options o = RCL_REDUCE_OPTIONS_INIT;
        o.variant = c < nl * ng ? RCL_REDUCE_VARIANT_NDRANGE : RCL_REDUCE_VARIANT_TASK;
        if (c < nl * ng) {
          o.local_size = locals[c / ng];
          o.num_groups = groups[c % ng];
        }
        int rc = rcl_reduce(got, rt_ctx(_i), ops[p], dt, n, x, y, &o);
        if (rc && refused_for_size(rc)) continue;
        ck_assert_msg(rc == 0, "%s %s on %s: %s", rcl_reduce_op_name(ops[p]), rcl_dtype_name(dt), rt_device_name(_i),
                      rcl_error_last());
        rt_assert_bits_eq(got, want, 1, dt, "%s %s trap lanes, %s local %zu groups %zu on %s",
                          rcl_reduce_op_name(ops[p]), rcl_dtype_name(dt), rcl_reduce_variant_name(o.variant),
                          o.local_size, o.num_groups, rt_device_name(_i));
        ran++;
      }
      ck_assert_msg(2 * ran >= nl * ng + 1, "only %zu of %zu reduction launches ran on %s", ran, nl * ng + 1,
                    rt_device_name(_i));
    }
    free(x);
    free(y);
  }
}
END_TEST

int main(void) {
  /* The traps test the kernels' normal build: the first-use self-test (docs/selftest.md) would otherwise
   * send a family whose kernels fall into them to the conservative build, and the results would hide it. */
  setenv("REPROCL_SELFTEST", "off", 1);
  Suite *s = suite_create("traps");
  rt_add_device_presence(s);
  RT_ADD_DEVICE_CASE(s, spmv_ordered_traps);
  RT_ADD_DEVICE_CASE(s, stencil_general_traps);
  RT_ADD_DEVICE_CASE(s, reduce_ordered_traps);
  return rt_run(s);
}
