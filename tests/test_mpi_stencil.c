/* Distributed grids (reprocl_mpi; run by ctest under mpirun -n 1..4): rcl_mpi_stencil and rcl_mpi_sor on each
 * device and on a mix of devices give every rank exactly its rows of rcl_ref_stencil / rcl_ref_sor over the
 * whole grid (memcmp), and the SOR residual norm on every rank: nine-point and general 3x3 / 5x5 stencils with
 * trap weights on nearly cancelling inputs (a stale or misplaced halo row changes the bits), every boundary,
 * grids with fewer rows than ranks (ranks without rows; blocks thinner than the halo, whose halo rows come
 * from two ranks away or, across a periodic wrap, from the rank itself), tall grids whose blocks take several
 * steps between exchanges, 0, 1 and 7 iterations, SOR with and without a right-hand side; deep halos (one
 * exchange for a short call, also at 5 ranks); the row cut (rcl_mpi_grid_rows); and bad arguments on one rank
 * failing every rank. */
#include <stdlib.h>

#include "mpi_testlib.h"

static const rcl_dtype dtypes[] = {RCL_F32, RCL_F64};
static const rcl_boundary bcs[] = {RCL_BOUNDARY_FIXED, RCL_BOUNDARY_PERIODIC, RCL_BOUNDARY_EDGE};
/* Grids (width x height): fewer rows than ranks, odd, and tall (several steps between exchanges); the last,
 * deep_cases' only: blocks of 520 rows or more up to 5 ranks (deep halos, more than 8 steps between exchanges). */
static const size_t sizes[][2] = {{6, 1}, {9, 2}, {5, 3}, {17, 23}, {12, 200}, {8, 2600}};
static const size_t sor_sizes[][2] = {{4, 2}, {6, 4}, {16, 22}, {8, 200}};

/* kind 0: SHOC's 9-point weights; 1, 2: general 3x3 / 5x5 with trap weights: alternating signs, magnitudes
 * from 1/16 to 2 that differ at every position, so a neighbour from a wrong or stale halo row changes the bits. */
static rcl_stencil_desc make_desc(int kind, rcl_boundary bc) {
  rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
  st.boundary = bc;
  st.boundary_value = -0.375;
  if (kind == 0) return st;
  st.kind = RCL_STENCIL_GENERAL;
  st.radius = (unsigned)kind;
  for (int k = 0; k < (2 * kind + 1) * (2 * kind + 1); k++)
    st.weights[k] = (k & 1 ? -1.0 : 1.0) * (1.0 + k) / 16.0 + 0x1p-23 * k;
  return st;
}

/* The phases of one timed grid call: one call, at most one exchange per step and SOR's one reduction; no time
 * negative; the phases (laps of one clock) cover the call. */
static void grid_phases(const rcl_mpi_phases *p, size_t steps, int sor, const char *what) {
  double parts = p->halo_read_s + p->halo_mpi_s + p->halo_write_s + p->reduce_part_s + p->reduce_allreduce_s;
  parts += p->kernels_s + p->setup_s;
  int neg = p->halo_read_s < 0 || p->halo_mpi_s < 0 || p->halo_write_s < 0 || p->reduce_part_s < 0 ||
            p->reduce_allreduce_s < 0 || p->kernels_s < 0 || p->setup_s < 0;
  if (p->calls != 1 || neg || p->exchanges > steps + (size_t)sor || p->reductions != (size_t)sor ||
      parts > p->total_s + 1e-6 || parts < p->total_s - 1e-3 - 0.01 * p->total_s)
    mt_fail("rank %d: %s: %zu call(s), %zu exchange(s), %zu reduction(s), %g s in the phases of %g s", mt_rank, what,
            p->calls, p->exchanges, p->reductions, parts, p->total_s);
}

/* One stencil problem: this rank's rows against the reference's (timed, rcl_mpi_phases_collect, for the
 * first kind: the same bits, and its phases checked). */
static size_t stencil_case(rcl_context *c, rcl_dtype dt, int kind, rcl_boundary bc, size_t s, size_t iters,
                           const char *where) {
  size_t W = sizes[s][0], H = sizes[s][1], es = rcl_dtype_size(dt), first = 0, count = 0;
  rcl_stencil_desc st = make_desc(kind, bc);
  unsigned char *in = mt_vec(dt, W * H, "cancel", 31 + s), *ref = mt_vec(dt, W * H, "uniform", 1);
  unsigned char *out = mt_vec(dt, W * H, "uniform", 2);
  rt_ok(rcl_ref_stencil(ref, &st, dt, W, H, iters, in));
  mt_expect(rcl_mpi_grid_rows(&first, &count, MPI_COMM_WORLD, H, 1), 0, "rcl_mpi_grid_rows");
  rcl_mpi_phases ph = RCL_MPI_PHASES_INIT;
  if (kind == 0) rt_ok(rcl_mpi_phases_collect(&ph));
  int rc = rcl_mpi_stencil(out + first * W * es, MPI_COMM_WORLD, c, &st, dt, W, H, iters, in + first * W * es);
  rt_ok(rcl_mpi_phases_collect(NULL));
  char what[300];
  snprintf(what, sizeof what, "%s: stencil %d %s %s %zux%zu, %zu iterations, rows [%zu, %zu)", where, kind,
           rcl_dtype_name(dt), rcl_boundary_name(bc), W, H, iters, first, first + count);
  mt_expect(rc, 0, what);
  if (!rc && kind == 0) grid_phases(&ph, iters, 0, what);
  if (!rc) mt_same(out + first * W * es, ref + first * W * es, count * W, dt, what);
  free(in), free(ref), free(out);
  return ph.exchanges;
}

/* One SOR problem (rhs or not): this rank's rows and the residual norm against the reference's. */
static void sor_case(rcl_context *c, rcl_dtype dt, rcl_boundary bc, size_t s, size_t sweeps, int with_b,
                     const char *where) {
  size_t W = sor_sizes[s][0], H = sor_sizes[s][1], es = rcl_dtype_size(dt), first = 0, count = 0;
  rcl_sor_desc d = RCL_SOR_DESC_INIT;
  d.boundary = bc;
  d.omega = with_b ? 1.0 : 1.25;
  d.boundary_value = 0.5;
  unsigned char *ref = mt_vec(dt, W * H, "cancel", 41 + s), *grid = mt_vec(dt, W * H, "cancel", 41 + s);
  unsigned char *b = with_b ? mt_vec(dt, W * H, "uniform", 43 + s) : NULL, rres[8] = {0}, res[8] = {0};
  rt_ok(rcl_ref_sor(ref, rres, &d, dt, W, H, sweeps, b));
  mt_expect(rcl_mpi_grid_rows(&first, &count, MPI_COMM_WORLD, H, 2), 0, "rcl_mpi_grid_rows");
  size_t off = first * W * es;
  rcl_mpi_phases ph = RCL_MPI_PHASES_INIT;
  if (with_b) rt_ok(rcl_mpi_phases_collect(&ph));
  int rc = rcl_mpi_sor(grid + off, res, MPI_COMM_WORLD, c, &d, dt, W, H, sweeps, b ? b + off : NULL);
  rt_ok(rcl_mpi_phases_collect(NULL));
  char what[300];
  snprintf(what, sizeof what, "%s: SOR %s %s %zux%zu, %zu sweeps, rhs %d, rows [%zu, %zu)", where, rcl_dtype_name(dt),
           rcl_boundary_name(bc), W, H, sweeps, with_b, first, first + count);
  mt_expect(rc, 0, what);
  if (!rc && with_b) grid_phases(&ph, sweeps, 1, what);
  if (!rc) mt_same(grid + off, ref + off, count * W, dt, what);
  if (!rc) mt_same(res, rres, 1, dt, "residual norm");
  free(ref), free(grid), free(b);
}

static void grid_cases(rcl_context *c, const char *where) {
  static const size_t iters[] = {0, 1, 7};
  for (size_t d = 0; d < 2; d++) {
    if (!mt_all_support(c, RCL_FAMILY_STENCIL, dtypes[d])) {
      rt_note("%s: %s skipped: a rank's device cannot run stencils in it bit-exactly", where,
              rcl_dtype_name(dtypes[d]));
      continue;
    }
    for (size_t k = 0; k < 3 * 3 * 5; k++) { /* kind x boundary x size; iterations 1 and 7, and 0 once */
      size_t s = k % 5;
      for (size_t i = s == 2 ? 0 : 1; i < 3; i++)
        stencil_case(c, dtypes[d], (int)(k / 15), bcs[k / 5 % 3], s, iters[i], where);
    }
    for (size_t k = 0; k < 3 * 4; k++)
      for (size_t i = k % 4 == 1 ? 0 : 1; i < 3; i++)
        sor_case(c, dtypes[d], bcs[k / 4], k % 4, iters[i], (int)(k + i) % 2, where);
  }
}

/* Deep halos: a call of fewer steps than a block's halo allows makes one deep exchange before its first step
 * and none after (checked: 0 exchanges between 15 steps on 2 to 5 ranks, where 8 steps apart made 1); more
 * steps, fewer and deeper exchanges than 8 steps apart. The 9-point stencil, and the 5x5 (reach 2) for 15 steps;
 * fixed and periodic boundaries. */
static void deep_cases(rcl_context *c, const char *where) {
  static const size_t iters[] = {15, 45};
  if (!mt_all_support(c, RCL_FAMILY_STENCIL, RCL_F32)) {
    rt_note("%s: skipped: a rank's device cannot run stencils in f32 bit-exactly", where);
    return;
  }
  for (size_t k = 0; k < 2 * 2 * 2; k++) {
    int kind = k / 4 ? 2 : 0;
    if (kind && k % 2) continue; /* the 5x5's 45 steps: no path the 9-point's do not take */
    size_t ex = stencil_case(c, RCL_F32, kind, bcs[k / 2 % 2], 5, iters[k % 2], where);
    if (kind == 0 && k % 2 == 0 && ex != 0)
      mt_fail("rank %d: %s: %zu exchanges between 15 steps on blocks of %zu rows or more", mt_rank, where, ex,
              sizes[5][1] / (size_t)mt_size);
  }
}

START_TEST(mpi_stencil_deep) { mt_on_device(_i, deep_cases); }
END_TEST

START_TEST(mpi_stencil_device) { mt_on_device(_i, grid_cases); }
END_TEST

START_TEST(mpi_stencil_mixed) { mt_on_mixes(grid_cases); }
END_TEST

/* The cut: consecutive blocks covering the rows, even inner bounds with granule 2, ranks past the rows empty. */
START_TEST(mpi_grid_rows_cut) {
  for (size_t H = 0; H < 12; H++)
    for (size_t g = 1; g <= 2; g++) {
      size_t first = 0, count = 0, prev_end = 0;
      mt_expect(rcl_mpi_grid_rows(&first, &count, MPI_COMM_WORLD, H, g), 0, "rcl_mpi_grid_rows");
      unsigned long long mine[2] = {first, count}, *all = calloc(2 * (size_t)mt_size, sizeof *all);
      MPI_Allgather(mine, 2, MPI_UNSIGNED_LONG_LONG, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
      for (int r = 0; r < mt_size; r++) {
        if (all[2 * r] != prev_end) mt_fail("height %zu granule %zu: rank %d starts at %llu", H, g, r, all[2 * r]);
        if (r + 1 < mt_size && (all[2 * r] + all[2 * r + 1]) % g && all[2 * r] + all[2 * r + 1] != H)
          mt_fail("height %zu granule %zu: rank %d ends at an odd row", H, g, r);
        prev_end = (size_t)(all[2 * r] + all[2 * r + 1]);
      }
      if (prev_end != H) mt_fail("height %zu: the blocks end at %zu", H, prev_end);
      free(all);
    }
  mt_end();
}
END_TEST

/* A NULL grid on the last rank fails every rank, naming it; a bad SOR description fails all; rhs on some
 * ranks only is refused. */
START_TEST(mpi_stencil_errors) {
  rcl_context *c = mt_ctx("rank:0");
  float g[64 * 8] = {0}, res = 0;
  rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
  int bad = mt_size - 1, rc = rcl_mpi_stencil(g, MPI_COMM_WORLD, c, &st, RCL_F32, 8, 64, 1, mt_rank == bad ? NULL : g);
  char want[32];
  snprintf(want, sizeof want, "rank %d: ", bad);
  if (rc != RCL_ERR_INVALID_ARG || !strstr(rcl_error_last(), want) || !strstr(rcl_error_last(), "NULL grid"))
    mt_fail("rank %d: a NULL grid on rank %d gave %s: %s", mt_rank, bad, rcl_status_name(rc), rcl_error_last());
  rcl_sor_desc d = RCL_SOR_DESC_INIT;
  d.omega = 2.5;
  rc = rcl_mpi_sor(g, &res, MPI_COMM_WORLD, c, &d, RCL_F32, 8, 64, 1, NULL);
  if (rc != RCL_ERR_INVALID_ARG || !strstr(rcl_error_last(), "omega"))
    mt_fail("rank %d: omega 2.5 gave %s: %s", mt_rank, rcl_status_name(rc), rcl_error_last());
  d.omega = 1.0;
  rc = rcl_mpi_sor(g, &res, MPI_COMM_WORLD, c, &d, RCL_F32, 8, 64, 1, mt_rank == bad ? g : NULL);
  if (mt_size > 1 && (rc != RCL_ERR_INVALID_ARG || !strstr(rcl_error_last(), "rhs given on some ranks")))
    mt_fail("rank %d: rhs on one rank gave %s: %s", mt_rank, rcl_status_name(rc), rcl_error_last());
  rcl_context_free(c);
  mt_end();
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("mpi_stencil");
  rt_add_device_presence(s);
  RT_ADD_DEVICE_CASE(s, mpi_stencil_device);
  RT_ADD_DEVICE_CASE(s, mpi_stencil_deep);
  TCase *tc = tcase_create("mpi_stencil_mixed");
  tcase_add_test(tc, mpi_stencil_mixed);
  tcase_add_test(tc, mpi_grid_rows_cut);
  tcase_add_test(tc, mpi_stencil_errors);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) { return mt_main(argc, argv, make, "test_mpi_stencil"); }
