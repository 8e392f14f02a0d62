/* The distributed CSR matrix (reprocl_mpi; run by ctest under mpirun -n 1..4): rcl_mpi_spmv and rcl_mpi_cg on
 * each device and on a mix of devices (rank r on device r mod count) give every rank exactly its rows of
 * rcl_ref_spmv and rcl_ref_cg over the whole matrix (memcmp), CG's history and status on every rank, for
 * equal, unequal and zero weights (a rank without rows), matrices with fewer rows than ranks, wide and tall
 * ones, power-law long rows and trap rows (sums that any reordering changes) reaching across every cut; a
 * failure on one rank (root cannot read the file, a NULL argument on one rank) fails every rank, naming it. The
 * shapes case (also at 5 ranks): ranks whose rows all wait for the halo, ranks with nothing to exchange; CG's
 * joint reduction call (rcl__mpi_partial_allreduce_many) by both exchanges, and a failure in it.
 *
 * Every rank builds the whole matrix (the test's reference needs it) but only root's copy is scattered. */
#include <stdlib.h>

#include "mpi/mpi_internal.h"
#include "mpi_testlib.h"

static const rcl_dtype dtypes[] = {RCL_F32, RCL_F64};

static void set_real(void *p, rcl_dtype dt, double v) {
  if (dt == RCL_F32)
    *(float *)p = (float)v;
  else
    *(double *)p = v;
}

/* Trap rows: row i holds 1 at (i + n/2) mod n, B at i, 1 at (i + n/3) mod n, -B at (i + 1) mod n, stored in that
 * order (B = 2^24 or 2^53): with x = 1 a left-to-right sum gives ((1 + B) + 1) - B = 0, the exact sum 2, other
 * orders 0, 1 or 2, so a reordering or a lost entry across a cut shows. Each row reaches half and a third of
 * the matrix away: into other ranks' columns. */
static rcl_csr *trap_matrix(rcl_dtype dt, size_t n) {
  rcl_csr *A;
  rt_ok(rcl_csr_alloc(&A, dt, n, n, 4 * n));
  double big = dt == RCL_F32 ? 0x1p24 : 0x1p53;
  for (size_t i = 0, k = 0; i < n; i++) {
    const size_t col[4] = {(i + n / 2) % n, i, (i + n / 3) % n, (i + 1) % n};
    const double val[4] = {1, big, 1, -big};
    for (int e = 0; e < 4; e++, k++) {
      A->col_idx[k] = (uint32_t)col[e];
      set_real((char *)A->values + k * rcl_dtype_size(dt), dt, val[e]);
    }
    A->row_ptr[i + 1] = k;
  }
  rt_ok(rcl_csr_validate(A));
  return A;
}

#define NMATRICES 7
static const char *const spec[NMATRICES] = {"poisson2d:23",       "powerlaw:300:3:5",   NULL,          "poisson2d:1",
                                            "random:150x333:7:2", "random:333x150:7:2", "random:3:2:9"};

static rcl_csr *spmv_matrix(size_t m, rcl_dtype dt) {
  rcl_csr *A = NULL;
  if (!spec[m]) return trap_matrix(dt, 301);
  rt_ok(rcl_csr_generate(&A, dt, spec[m]));
  return A;
}

/* This rank's weight in weight set w: equal; rank + 1; rank 0 without rows (where there are other ranks). */
static double weight(int w) { return w == 0 ? 1.0 : w == 1 ? mt_rank + 1.0 : mt_rank == 0 && mt_size > 1 ? 0.0 : 1.0; }

/* One matrix: SpMV in both contracts (x = 1 for the trap matrix), this rank's rows against the reference. */
static void spmv_case(rcl_context *c, rcl_dtype dt, size_t m, int w, const char *where) {
  rcl_csr *A = spmv_matrix(m, dt);
  size_t es = rcl_dtype_size(dt), r0, nr, c0, nc;
  void *x = mt_vec(dt, A->ncols, "uniform", 7 + m), *y0 = mt_vec(dt, A->nrows, "uniform", 9 + m);
  void *yref = mt_vec(dt, A->nrows, "uniform", 9 + m), *y = mt_vec(dt, A->nrows, "uniform", 9 + m);
  for (size_t i = 0; !spec[m] && i < A->ncols; i++) set_real((char *)x + i * es, dt, 1.0);
  rcl_mpi_matrix *M = NULL;
  int rc = rcl_mpi_matrix_scatter(&M, MPI_COMM_WORLD, 0, mt_rank == 0 ? A : NULL, weight(w), c);
  mt_expect(rc, 0, "rcl_mpi_matrix_scatter");
  for (int k = 0; !rc && k < 4; k++) {
    rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
    o.contract = k % 2 ? RCL_SPMV_EXACT : RCL_SPMV_ORDERED;
    unsigned char alpha[8], beta[8];
    set_real(alpha, dt, k < 2 ? 1.0 : -1.5);
    set_real(beta, dt, k < 2 ? 0.0 : 0.75);
    rcl_mpi_matrix_rows(M, &r0, &nr, NULL);
    rcl_mpi_matrix_cols(M, &c0, &nc, NULL);
    memcpy(y, y0, A->nrows * es);
    memcpy(yref, y0, A->nrows * es);
    rt_ok(rcl_ref_spmv(yref, A, o.contract, alpha, x, beta));
    mt_expect(rcl_mpi_spmv((char *)y + r0 * es, M, alpha, (char *)x + c0 * es, beta, &o), 0, "rcl_mpi_spmv");
    char what[300];
    snprintf(what, sizeof what, "%s: SpMV %s %s %s alpha/beta %d weights %d, rows [%zu, %zu)", where,
             spec[m] ? spec[m] : "trap:301", rcl_dtype_name(dt), rcl_spmv_contract_name(o.contract), k / 2, w, r0,
             r0 + nr);
    mt_same((char *)y + r0 * es, (char *)yref + r0 * es, nr, dt, what);
  }
  rcl_mpi_matrix_free(M);
  rcl_csr_free(A);
  free(x), free(y0), free(y), free(yref);
}

/* ---- CG ---------------------------------------------------------------------------------------------------- */

/* An SPD matrix whose diagonal varies (so Jacobi preconditioning changes every step): tridiagonal -1, 5 + i mod 7,
 * -1, plus -1/8 couplings between every 11th row and the rows 97 apart (reaching across the ranks' cuts). */
static rcl_csr *varied_spd(rcl_dtype dt, size_t n) {
  rcl_csr *A;
  rt_ok(rcl_csr_alloc(&A, dt, n, n, 5 * n));
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int far = i % 11 == 0 && i + 97 < n, back = i >= 97 && (i - 97) % 11 == 0;
    const size_t col[5] = {back ? i - 97 : n, i ? i - 1 : n, i, i + 1 < n ? i + 1 : n, far ? i + 97 : n};
    const double val[5] = {-0.125, -1, 5.0 + (double)(i % 7), -1, -0.125};
    for (int e = 0; e < 5; e++)
      if (col[e] < n) {
        A->col_idx[k] = (uint32_t)col[e];
        set_real((char *)A->values + k++ * rcl_dtype_size(dt), dt, val[e]);
      }
    A->row_ptr[i + 1] = k;
  }
  A->nnz = k;
  rt_ok(rcl_csr_validate(A));
  return A;
}

/* 0..3: converging systems (one of a single row); 4: negative definite (breakdown); 5: no convergence. */
static rcl_csr *cg_matrix(size_t m, rcl_dtype dt) {
  rcl_csr *A = NULL;
  if (m == 0) rt_ok(rcl_csr_generate(&A, dt, "poisson2d:16"));
  if (m == 1) A = varied_spd(dt, 300);
  if (m == 2) rt_ok(rcl_csr_generate(&A, dt, "poisson3d:5"));
  if (m == 3) rt_ok(rcl_csr_generate(&A, dt, "poisson2d:1"));
  if (m >= 4) rt_ok(rcl_csr_generate(&A, dt, "poisson2d:12"));
  for (size_t k = 0; m == 4 && k < A->nnz; k++)
    set_real((char *)A->values + k * rcl_dtype_size(dt), dt,
             dt == RCL_F32 ? -((float *)A->values)[k] : -((double *)A->values)[k]);
  return A;
}

static void cg_options(rcl_cg_options *o, rcl_dtype dt, int combo, size_t m) {
  *o = (rcl_cg_options)RCL_CG_OPTIONS_INIT;
  o->tol = dt == RCL_F32 ? 1e-5 : 1e-10;
  o->jacobi = combo & 1;
  o->dot_mode = combo & 2 ? RCL_REDUCE_EXACT : RCL_REDUCE_ORDERED;
  o->spmv.contract = combo & 4 ? RCL_SPMV_EXACT : RCL_SPMV_ORDERED;
  if (m == 5) o->max_iterations = 4;
}

/* The phases of one timed call (rcl_mpi_phases_collect): one call; the counts of a CG of `iters` iterations (an
 * exchange per SpMV of A, three reductions per iteration and three before; a breakdown at p'Ap one more each;
 * none where the solve never started, iters (size_t)-1: a Jacobi CG without the preconditioner);
 * no time negative; the phases cover the call (they are laps of one clock). */
static void check_phases(const rcl_mpi_phases *p, size_t iters, const char *what) {
  const double t[] = {p->halo_read_s,        p->halo_mpi_s, p->halo_write_s, p->reduce_part_s,
                      p->reduce_allreduce_s, p->kernels_s,  p->setup_s};
  double sum = 0;
  int neg = p->total_s < 0;
  for (size_t k = 0; k < sizeof t / sizeof *t; k++) sum += t[k], neg |= t[k] < 0;
  if (p->calls != 1 || neg || sum > p->total_s + 1e-6 || sum < p->total_s - 1e-3 - 0.01 * p->total_s)
    mt_fail("rank %d: %s: phases of %zu call(s), total %g s, phases summing to %g s", mt_rank, what, p->calls,
            p->total_s, sum);
  if (iters == (size_t)-1 ? p->exchanges || p->reductions
                          : p->exchanges < iters + 1 || p->exchanges > iters + 2 || p->reductions < 3 * iters + 3 ||
                                p->reductions > 3 * iters + 4)
    mt_fail("rank %d: %s: %zu exchange(s) and %zu reduction(s) for %zu iterations", mt_rank, what, p->exchanges,
            p->reductions, iters);
}

/* CG against the reference: status, message, iterations, history (on every rank) and this rank's rows of x;
 * timed (rcl_mpi_phases_collect) where `timed`: the same bits, and its phases checked. */
static void cg_compare(rcl_mpi_matrix *M, const rcl_csr *A, const void *b, const rcl_cg_options *o, int timed,
                       const char *what) {
  rcl_dtype dt = A->dtype;
  size_t n = A->nrows, es = rcl_dtype_size(dt), r0, nr;
  rcl_mpi_matrix_rows(M, &r0, &nr, NULL);
  char msg1[512];
  rcl_cg_result rr, rd;
  void *xr = calloc(n + 1, es), *xd = calloc(n + 1, es);
  int rc1 = rcl_ref_cg(xr, &rr, A, b, o);
  snprintf(msg1, sizeof msg1, "%s", rcl_error_last());
  rcl_mpi_phases ph = RCL_MPI_PHASES_INIT;
  if (timed) rt_ok(rcl_mpi_phases_collect(&ph));
  int rc2 = rcl_mpi_cg((char *)xd + r0 * es, &rd, M, (const char *)b + r0 * es, o);
  rt_ok(rcl_mpi_phases_collect(NULL));
  if (timed && (!rc2 || rc2 == RCL_ERR_NO_CONVERGENCE || rc2 == RCL_ERR_BREAKDOWN))
    check_phases(&ph, rd.history_len ? rd.iterations : (size_t)-1, what);
  if (rc2 != rc1 || (rc1 && strcmp(rcl_error_last(), msg1)))
    mt_fail("rank %d: %s: returned %s (%s), the reference %s (%s)", mt_rank, what, rcl_status_name(rc2),
            rcl_error_last(), rcl_status_name(rc1), msg1);
  else if (rd.iterations != rr.iterations || rd.history_len != rr.history_len || rd.converged != rr.converged ||
           strcmp(rd.message, rr.message) || strcmp(rd.history_sha256, rr.history_sha256))
    mt_fail("rank %d: %s: %zu iterations (%s), the reference %zu (%s)", mt_rank, what, rd.iterations, rd.message,
            rr.iterations, rr.message);
  else
    mt_same((char *)xd + r0 * es, (char *)xr + r0 * es, nr, dt, what);
  if (!rc2 || rc2 == RCL_ERR_NO_CONVERGENCE || rc2 == RCL_ERR_BREAKDOWN) rcl_cg_result_free(&rd);
  rcl_cg_result_free(&rr);
  free(xr), free(xd);
}

static void cg_case(rcl_context *c, rcl_dtype dt, size_t m, int w, int all_combos, const char *where) {
  rcl_csr *A = cg_matrix(m, dt);
  void *b = mt_vec(dt, A->nrows, "uniform", 50 + m);
  rcl_mpi_matrix *M = NULL;
  int rc = rcl_mpi_matrix_scatter(&M, MPI_COMM_WORLD, 0, mt_rank == 0 ? A : NULL, weight(w), c);
  mt_expect(rc, 0, "rcl_mpi_matrix_scatter");
  for (int combo = 0; !rc && combo < 8; combo++) {
    if (!all_combos && combo != (int)(m + (size_t)w) % 8 && combo != 7) continue;
    rcl_cg_options o;
    cg_options(&o, dt, combo, m);
    char what[300];
    snprintf(what, sizeof what, "%s: CG matrix %zu %s jacobi=%d dots=%s spmv=%s weights %d", where, m,
             rcl_dtype_name(dt), o.jacobi, rcl_reduce_mode_name(o.dot_mode), rcl_spmv_contract_name(o.spmv.contract),
             w);
    cg_compare(M, A, b, &o, w == 2 || combo == 7, what);
  }
  rcl_mpi_matrix_free(M);
  rcl_csr_free(A);
  free(b);
}

/* Every matrix, weight set and dtype the ranks' devices all run. */
static void sparse_cases(rcl_context *c, const char *where) {
  for (size_t d = 0; d < 2; d++) {
    if (!mt_all_support(c, RCL_FAMILY_SPMV, dtypes[d])) {
      rt_note("%s: %s skipped: a rank's device cannot run SpMV in it bit-exactly", where, rcl_dtype_name(dtypes[d]));
      continue;
    }
    for (size_t m = 0; m < NMATRICES; m++)
      for (int w = 0; w < 3; w++) spmv_case(c, dtypes[d], m, w, where);
    for (size_t m = 0; m < 6; m++)
      for (int w = 0; w < 3; w++) cg_case(c, dtypes[d], m, w, m == 0 && w == 1, where);
  }
}

/* ---- the SpMV's pieces and the exchange's shapes over the ranks ------------------------------------------ */

/* An SPD matrix of 64 rows per rank (every row 3 non-zeros, so equal weights cut it into the ranks' slabs):
 * the first and last slabs' rows couple with their mirror row n - 1 - i (the other end of the matrix) and
 * with row i ^ 1, the middle slabs' rows with their ring neighbours inside the slab. So from 2 ranks on the
 * outer ranks have no interior row (every row waits for the halo), and from 3 on the middle ranks have no
 * boundary row (nothing to exchange) while the outer ones exchange. */
static rcl_csr *shapes_matrix(rcl_dtype dt, size_t K) {
  size_t n = 64 * K;
  rcl_csr *A;
  rt_ok(rcl_csr_alloc(&A, dt, n, n, 3 * n));
  for (size_t i = 0, k = 0; i < n; i++) {
    size_t s = i / 64, b = s * 64, outer = s == 0 || s == K - 1;
    size_t c1 = outer ? n - 1 - i : b + (i - b + 63) % 64, c2 = outer ? i ^ 1 : b + (i - b + 1) % 64;
    size_t col[3] = {c1, i, c2};
    for (int x = 0; x < 2; x++) /* sorted columns */
      for (int y = 0; y < 2 - x; y++)
        if (col[y] > col[y + 1]) {
          size_t t = col[y];
          col[y] = col[y + 1], col[y + 1] = t;
        }
    for (int e = 0; e < 3; e++, k++) {
      A->col_idx[k] = (uint32_t)col[e];
      set_real((char *)A->values + k * rcl_dtype_size(dt), dt, col[e] == i ? 4.0 + (double)(i % 3) : -1.0);
    }
    A->row_ptr[i + 1] = k;
  }
  rt_ok(rcl_csr_validate(A));
  return A;
}

/* This rank's rows of A: how many reference only own columns (interior) and how many do not (boundary). */
static void row_kinds(int kinds[2], const rcl_csr *A, rcl_mpi_matrix *M) {
  size_t r0, nr, c0, nc;
  rcl_mpi_matrix_rows(M, &r0, &nr, NULL);
  rcl_mpi_matrix_cols(M, &c0, &nc, NULL);
  kinds[0] = kinds[1] = 0;
  for (size_t i = r0; i < r0 + nr; i++) {
    int own = 1;
    for (uint64_t k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) own &= A->col_idx[k] >= c0 && A->col_idx[k] < c0 + nc;
    kinds[own ? 0 : 1]++;
  }
}

/* CG and SpMV on the shapes matrix, equal weights and rank 0 without rows; with equal weights, from 2 ranks a
 * rank with rows but no interior row, from 3 a rank with rows but no boundary row beside one that exchanges
 * (checked: the case would otherwise cover nothing new). */
static void shapes_cases(rcl_context *c, const char *where) {
  for (size_t d = 0; d < 2; d++) {
    if (!mt_all_support(c, RCL_FAMILY_SPMV, dtypes[d])) {
      rt_note("%s: %s skipped: a rank's device cannot run SpMV in it bit-exactly", where, rcl_dtype_name(dtypes[d]));
      continue;
    }
    rcl_csr *A = shapes_matrix(dtypes[d], (size_t)mt_size);
    void *b = mt_vec(dtypes[d], A->nrows, "uniform", 77);
    for (int w = 0; w < 3; w += 2) {
      rcl_mpi_matrix *M = NULL;
      mt_expect(rcl_mpi_matrix_scatter(&M, MPI_COMM_WORLD, 0, mt_rank == 0 ? A : NULL, weight(w), c), 0, "scatter");
      if (!M) break;
      int k[2], no_interior = 0, no_boundary = 0, any_boundary = 0;
      row_kinds(k, A, M);
      int mine[3] = {k[1] && !k[0], k[0] && !k[1], k[1] > 0};
      MPI_Allreduce(&mine[0], &no_interior, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
      MPI_Allreduce(&mine[1], &no_boundary, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
      MPI_Allreduce(&mine[2], &any_boundary, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
      if (w == 0 && ((mt_size >= 2 && !no_interior) || (mt_size >= 3 && !(no_boundary && any_boundary))))
        mt_fail("rank %d: %s: the shapes matrix on %d ranks has no rank without interior rows (%d) or without "
                "boundary rows (%d)",
                mt_rank, where, mt_size, no_interior, no_boundary);
      for (int combo = 0; combo < 8; combo += 7) {
        rcl_cg_options o;
        cg_options(&o, dtypes[d], combo, 0);
        char what[300];
        snprintf(what, sizeof what, "%s: CG shapes %s combo %d weights %d, rank rows %d interior %d boundary", where,
                 rcl_dtype_name(dtypes[d]), combo, w, k[0], k[1]);
        cg_compare(M, A, b, &o, combo == 7, what);
      }
      rcl_mpi_matrix_free(M);
    }
    free(b);
    rcl_csr_free(A);
  }
}

START_TEST(mpi_sparse_shapes) { mt_on_device(_i, shapes_cases); }
END_TEST

START_TEST(mpi_sparse_device) { mt_on_device(_i, sparse_cases); }
END_TEST

START_TEST(mpi_sparse_mixed) { mt_on_mixes(sparse_cases); }
END_TEST

/* rcl__mpi_partial_allreduce_many (CG joins a step's parts in one call): an ordered dot whose slices hold whole
 * blocks (joined in the flat form), an ordered nrm2 cut inside blocks (alone, by the gather path) and an exact
 * sum in one call, each on every rank rcl_ref_reduce's bits, with the flat parts gathered (_i 0) or reduced by
 * MPI_Allreduce (_i 1); a failure on the last rank fails every rank, naming it. */
START_TEST(mpi_sparse_many) {
  int old = rcl__mpi_flat_gather_max(_i ? 0 : 16);
  size_t K = (size_t)mt_size, r = (size_t)mt_rank, total = K * 4096 + 77, cut = total / K;
  static const rcl_reduce_op ops[3] = {RCL_OP_DOT, RCL_OP_NRM2, RCL_OP_SUM};
  static const rcl_reduce_mode modes[3] = {RCL_REDUCE_ORDERED, RCL_REDUCE_ORDERED, RCL_REDUCE_EXACT};
  for (size_t d = 0; d < 2; d++) {
    rcl_dtype dt = dtypes[d];
    size_t es = rcl_dtype_size(dt);
    unsigned char *x = mt_vec(dt, total, "uniform", 91), *y = mt_vec(dt, total, "cancel", 92), res[3][8], ref[3][8];
    rcl_partial *parts[3];
    void *out[3];
    for (int i = 0; i < 3; i++) {
      size_t first = i == 1 ? r * cut : r * 4096, end = r + 1 == K ? total : i == 1 ? first + cut : first + 4096;
      const void *yy = ops[i] == RCL_OP_DOT ? y : NULL;
      rt_ok(rcl_ref_reduce_partial(&parts[i], ops[i], dt, modes[i], total, first, end - first, x + first * es,
                                   yy ? y + first * es : NULL));
      rt_ok(rcl_ref_reduce(ref[i], ops[i], dt, modes[i], total, x, yy));
      out[i] = res[i];
    }
    mt_expect(rcl__mpi_partial_allreduce_many(out, MPI_COMM_WORLD, (const rcl_partial *const *)parts, 3, 0), 0,
              "rcl__mpi_partial_allreduce_many");
    for (int i = 0; i < 3; i++) mt_same(res[i], ref[i], 1, dt, _i ? "many, MPI_Allreduce" : "many, gathered");
    int bad = mt_size - 1, st = mt_rank == bad ? rcl__fail(RCL_ERR_IO, "a part that failed") : 0;
    int rc = rcl__mpi_partial_allreduce_many(out, MPI_COMM_WORLD, (const rcl_partial *const *)parts, 3, st);
    char want[32];
    snprintf(want, sizeof want, "rank %d: ", bad);
    if (rc != RCL_ERR_IO || !strstr(rcl_error_last(), want))
      mt_fail("rank %d: a failed part on rank %d gave %s: %s", mt_rank, bad, rcl_status_name(rc), rcl_error_last());
    for (int i = 0; i < 3; i++) rcl_partial_free(parts[i]);
    free(x), free(y);
  }
  rcl__mpi_flat_gather_max(old);
  mt_end();
}
END_TEST

/* Root cannot read the file: every rank fails, naming rank 0 and its reason. One rank's NULL x: every rank
 * fails naming it. A CG on a rank without rows and a NULL x there is fine. */
START_TEST(mpi_sparse_errors) {
  rcl_context *c = mt_ctx("rank:0");
  rcl_mpi_matrix *M = NULL;
  int rc = rcl_mpi_matrix_read(&M, MPI_COMM_WORLD, 0, "/nonexistent/m.mtx", RCL_F32, c);
  if (rc != RCL_ERR_IO && rc != RCL_ERR_NOT_FOUND) mt_expect(rc, RCL_ERR_IO, "reading a missing file");
  if (!strstr(rcl_error_last(), "rank 0: ") || !strstr(rcl_error_last(), "/nonexistent/m.mtx"))
    mt_fail("rank %d: the message \"%s\" does not name rank 0 and the file", mt_rank, rcl_error_last());
  if (M) mt_fail("rank %d: a matrix after a failure", mt_rank);
  rcl_csr *A = NULL;
  rt_ok(rcl_csr_generate(&A, RCL_F32, "poisson2d:5"));
  mt_expect(rcl_mpi_matrix_scatter(&M, MPI_COMM_WORLD, 0, mt_rank == 0 ? A : NULL, 1.0, c), 0, "scatter");
  float x[25] = {0}, y[25] = {0}, one = 1, zero = 0;
  int bad = mt_size - 1;
  rc = M ? rcl_mpi_spmv(y, M, &one, mt_rank == bad ? NULL : x, &zero, NULL) : 0;
  char want[32];
  snprintf(want, sizeof want, "rank %d: ", bad);
  if (M && (rc != RCL_ERR_INVALID_ARG || !strstr(rcl_error_last(), want)))
    mt_fail("rank %d: a NULL x on rank %d gave %s: %s", mt_rank, bad, rcl_status_name(rc), rcl_error_last());
  rcl_mpi_matrix_free(M);
  rcl_mpi_phases ph = RCL_MPI_PHASES_INIT;
  ph.version = 99;
  if (rcl_mpi_phases_collect(&ph) != RCL_ERR_INVALID_ARG || !strstr(rcl_error_last(), "version"))
    mt_fail("rank %d: rcl_mpi_phases_collect took version 99: %s", mt_rank, rcl_error_last());
  rc = rcl_mpi_matrix_scatter(&M, MPI_COMM_WORLD, mt_size, A, 1.0, c);
  if (rc != RCL_ERR_INVALID_ARG || !strstr(rcl_error_last(), "root"))
    mt_fail("rank %d: a bad root gave %s", mt_rank, rcl_error_last());
  rcl_mpi_matrix_free(M);
  rcl_csr_free(A);
  rcl_context_free(c);
  mt_end();
}
END_TEST

static Suite *make(void) {
  Suite *s = suite_create("mpi_sparse");
  rt_add_device_presence(s);
  RT_ADD_DEVICE_CASE(s, mpi_sparse_device);
  RT_ADD_DEVICE_CASE(s, mpi_sparse_shapes);
  TCase *tc = tcase_create("mpi_sparse_mixed");
  tcase_add_test(tc, mpi_sparse_mixed);
  tcase_add_test(tc, mpi_sparse_errors);
  suite_add_tcase(s, tc);
  TCase *many = tcase_create("mpi_sparse_many");
  tcase_add_loop_test(many, mpi_sparse_many, 0, 2);
  suite_add_tcase(s, many);
  return s;
}

int main(int argc, char **argv) { return mt_main(argc, argv, make, "test_mpi_sparse"); }
