/* Tuned parameters are bit-identical for every kernel family on every device (the reductions are in
 * test_tune.c): each stencil and SpMV kernel is tuned with a small budget (REPROCL_TUNE_BUDGET_MS-sized),
 * no candidate may differ from the default configuration, the default's output is the host reference's
 * on the tuning data, and the choice — used implicitly by the context, and passed explicitly — gives the
 * host reference's and the default configuration's bytes on other data. CG runs on the tuned SpMV and
 * reductions. MD is tuned per force path on its scratch system; tuning on first use never touches the
 * caller's system. A candidate whose output differs (injected here, test-only) is excluded and reported. */
#include <stdlib.h>

#include "md/md_internal.h"
#include "sparse/sparse_internal.h"
#include "stencil/stencil_internal.h"
#include "testlib.h"

/* One context per device with tuning off (choices come only from rcl_tune), shared by the tests so that
 * each program is built once (Rusticl builds take seconds and return no binaries to cache). */
static rcl_context *ctxs[16];
static rcl_context *tuning_off_ctx(int dev) {
  ck_assert_int_lt(dev, 16);
  if (ctxs[dev]) return ctxs[dev];
  char spec[16];
  snprintf(spec, sizeof spec, "%d", dev);
  rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
  o.device = spec;
  o.tuning = RCL_TUNING_OFF;
  int rc = rcl_context_create(&ctxs[dev], &o);
  ck_assert_msg(rc == 0, "context on device %d: %s", dev, rcl_error_last());
  return ctxs[dev];
}

static size_t param(const rcl_tune_choice *c, const char *name) {
  for (size_t i = 0; i < c->count; i++)
    if (!strcmp(c->params[i].name, name)) return c->params[i].value;
  ck_abort_msg("%s has no parameter %s", c->kernel, name);
  return 0;
}

/* A small search: the budget of tuning on first use in the test environment, at least 300 ms. */
static rcl_tune_options small_budget(void) {
  rcl_tune_options to = RCL_TUNE_OPTIONS_INIT;
  const char *e = getenv("REPROCL_TUNE_BUDGET_MS");
  to.budget_ms = e && atof(e) > 300 ? atof(e) : 300;
  to.samples = 3;
  to.store = 0;
  return to;
}

static void tune_checked(rcl_tune_report *rep, rcl_context *c, const char *kernel, rcl_dtype dt, size_t n, int dev) {
  rcl_tune_options to = small_budget();
  rt_ok(rcl_tune(rep, c, kernel, dt, n, &to));
  ck_assert_msg(rep->mismatches == 0, "%s %s on %s: %s", kernel, rcl_dtype_name(dt), rt_device_name(dev),
                rep->mismatch);
  ck_assert_uint_ge(rep->launches, 1);
  ck_assert_uint_ge(rep->timed, 1);
  rcl_tune_choice ch;
  rt_ok(rcl_tune_get(&ch, c, kernel, dt, n));
  ck_assert_int_eq(ch.origin, RCL_TUNE_FROM_TUNING);
}

static void digest_of(char hex[RCL_SHA256_HEX_SIZE], const void *data, size_t bytes) {
  rcl_sha256_hex(hex, data, bytes);
}

/* ---- stencils ---------------------------------------------------------------------------------------- */

static const struct {
  const char *kernel;
  rcl_stencil_kernel_kind kind;
  unsigned radius;
} stencils[] = {{"stencil.nine", RCL_STK_NINE, 1},
                {"stencil.general.r1", RCL_STK_GENERAL, 1},
                {"stencil.general.r2", RCL_STK_GENERAL, 2},
                {"stencil.sor", RCL_STK_SOR, 1}};

/* One application (SOR: one sweep) of kernel k on in (w x h) into out, on the device with opts or by the
 * host reference (c NULL). */
static void stencil_apply(void *out, rcl_context *c, size_t k, rcl_dtype dt, size_t w, size_t h, const void *in,
                          const rcl_stencil_options *o) {
  size_t bytes = w * h * rcl_dtype_size(dt);
  if (stencils[k].kind == RCL_STK_SOR) {
    rcl_sor_desc s = RCL_SOR_DESC_INIT;
    memcpy(out, in, bytes);
    if (c)
      rt_ok(rcl_sor(out, NULL, c, &s, dt, w, h, 1, NULL, o));
    else
      rt_ok(rcl_ref_sor(out, NULL, &s, dt, w, h, 1, NULL));
    return;
  }
  rcl_stencil_desc st;
  rcl__stencil_tune_desc(&st, stencils[k].kind, stencils[k].radius);
  if (c)
    rt_ok(rcl_stencil(out, c, &st, dt, w, h, 1, in, o));
  else
    rt_ok(rcl_ref_stencil(out, &st, dt, w, h, 1, in));
}

START_TEST(stencil_tuned_parameters_are_bit_identical) {
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  rcl_context *c = tuning_off_ctx(_i);
  size_t n = (1u << 16) + 77, w, h;
  rcl__stencil_tune_grid(&w, &h, n);
  ck_assert_uint_eq(w * h <= n, 1);
  for (int d = 0; d < 2; d++) {
    rcl_dtype dt = dts[d];
    if (!rt_supported(_i, RCL_FAMILY_STENCIL, dt)) {
      rcl_tune_report r;
      rt_fails(rcl_tune(&r, c, "stencil.nine", dt, n, NULL), RCL_ERR_UNSUPPORTED, "fp64");
      continue;
    }
    size_t bytes = w * h * rcl_dtype_size(dt);
    unsigned char *tin = malloc(bytes), *in = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes),
                  *dflt = malloc(bytes);
    ck_assert_int_eq(rcl_generate(tin, dt, w * h, RCL_GEN_UNIFORM, RCL_STENCIL_TUNE_SEED), 0);
    rt_fill(in, dt, w * h, "uniform", 31);
    for (size_t k = 0; k < sizeof stencils / sizeof stencils[0]; k++) {
      const char *kn = stencils[k].kernel;
      /* The default configuration's bytes on the test data, before tuning. */
      stencil_apply(dflt, c, k, dt, w, h, in, NULL);
      rcl_tune_report rep;
      tune_checked(&rep, c, kn, dt, n, _i);
      ck_assert_uint_eq(rep.candidates, 3 * 4 * 4 * 3 * 3); /* variant x local_x x local_y x points_x x points_y */
      /* The reference digest is the host reference's output on the tuning data. */
      char hex[RCL_SHA256_HEX_SIZE];
      stencil_apply(want, NULL, k, dt, w, h, tin, NULL);
      digest_of(hex, want, bytes);
      ck_assert_msg(!strcmp(rep.reference_digest, hex),
                    "%s %s on %s: the default's digest %.16s is not the host "
                    "reference's %.16s",
                    kn, rcl_dtype_name(dt), rt_device_name(_i), rep.reference_digest, hex);
      /* The context uses the choice from now on; with it (implicit and explicit) the output is the host
       * reference's and the default configuration's. */
      rcl_tune_choice ch;
      rt_ok(rcl_tune_get(&ch, c, kn, dt, n));
      stencil_apply(want, NULL, k, dt, w, h, in, NULL);
      rt_assert_bits_eq(dflt, want, w * h, dt, "%s default on %s", kn, rt_device_name(_i));
      stencil_apply(got, c, k, dt, w, h, in, NULL);
      rt_assert_bits_eq(got, want, w * h, dt, "%s tuned (implicit) on %s", kn, rt_device_name(_i));
      rcl_stencil_options o = RCL_STENCIL_OPTIONS_INIT, used;
      o.variant = (rcl_stencil_variant)param(&ch, "variant");
      if (o.variant != RCL_STENCIL_TASK) {
        o.local_size[0] = param(&ch, "local_x");
        o.local_size[1] = param(&ch, "local_y");
      }
      if (o.variant != RCL_STENCIL_TASK) { /* tiled, and plain's register block */
        o.points_per_item[0] = param(&ch, "points_x");
        o.points_per_item[1] = param(&ch, "points_y");
      }
      rcl_stencil_desc st;
      rcl__stencil_tune_desc(&st, stencils[k].kind, stencils[k].radius);
      rcl_stencil_options implicit;
      rt_ok(rcl_stencil_resolve_launch(&implicit, c, dt, stencils[k].kind == RCL_STK_SOR ? NULL : &st, w, h, NULL));
      ck_assert_int_eq(implicit.variant, o.variant);
      /* The choice as explicit options: accepted (it is what a call launches) and the same bits. */
      rt_ok(rcl_stencil_resolve_launch(&used, c, dt, stencils[k].kind == RCL_STK_SOR ? NULL : &st, w, h, &o));
      ck_assert_int_eq(memcmp(&used, &implicit, sizeof used), 0);
      stencil_apply(got, c, k, dt, w, h, in, &o);
      rt_assert_bits_eq(got, want, w * h, dt, "%s tuned (explicit %s) on %s", kn, ch.params[0].label,
                        rt_device_name(_i));
    }
    free(tin);
    free(in);
    free(want);
    free(got);
    free(dflt);
  }
}
END_TEST

/* ---- SpMV and CG ---------------------------------------------------------------------------------------- */

static const struct {
  const char *kernel;
  int exact, irregular;
} spmvs[] = {{"spmv.regular.ordered", 0, 0},
             {"spmv.regular.exact", 1, 0},
             {"spmv.irregular.ordered", 0, 1},
             {"spmv.irregular.exact", 1, 1}};

START_TEST(spmv_tuned_parameters_are_bit_identical) {
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  rcl_context *c = tuning_off_ctx(_i);
  size_t n = (1u << 16) + 77;
  for (int d = 0; d < 2; d++) {
    rcl_dtype dt = dts[d];
    if (!rt_supported(_i, RCL_FAMILY_SPMV, dt)) {
      rcl_tune_report r;
      rt_fails(rcl_tune(&r, c, "spmv.regular.ordered", dt, n, NULL), RCL_ERR_UNSUPPORTED, "fp64");
      continue;
    }
    size_t es = rcl_dtype_size(dt);
    double a64 = 1.0, b64 = 0.0, a2 = -0.75, b2 = 0.5;
    float a32 = 1.0f, b32 = 0.0f, a2f = -0.75f, b2f = 0.5f;
    const void *one = dt == RCL_F32 ? (void *)&a32 : (void *)&a64, *zero = dt == RCL_F32 ? (void *)&b32 : (void *)&b64;
    const void *alpha = dt == RCL_F32 ? (void *)&a2f : (void *)&a2, *beta = dt == RCL_F32 ? (void *)&b2f : (void *)&b2;
    for (size_t k = 0; k < sizeof spmvs / sizeof spmvs[0]; k++) {
      const char *kn = spmvs[k].kernel;
      rcl_spmv_contract contract = spmvs[k].exact ? RCL_SPMV_EXACT : RCL_SPMV_ORDERED;
      rcl_csr *A;
      rt_ok(rcl__spmv_tune_matrix(&A, spmvs[k].irregular, dt, n));
      ck_assert_msg(A->nnz >= n && A->nnz < 2 * n, "%s: tuning matrix of %zu non-zeros for n = %zu", kn, A->nnz, n);
      rcl_spmv_matrix *M;
      rt_ok(rcl_spmv_matrix_create(&M, c, A));
      ck_assert_ptr_eq(rcl__spmv_tune_kernel_of(M, spmvs[k].exact),
                       rcl__spmv_tune_kernel(spmvs[k].exact, spmvs[k].irregular));
      void *tx = malloc(A->ncols * es), *x = malloc(A->ncols * es), *y0 = malloc(A->nrows * es);
      void *want = malloc(A->nrows * es), *got = malloc(A->nrows * es), *dflt = malloc(A->nrows * es);
      ck_assert_int_eq(rcl_generate(tx, dt, A->ncols, RCL_GEN_UNIFORM, RCL_SPMV_TUNE_SEED + 1), 0);
      rt_fill(x, dt, A->ncols, "wide", 41);
      rt_fill(y0, dt, A->nrows, "uniform", 42);
      rcl_spmv_options o = RCL_SPMV_OPTIONS_INIT;
      o.contract = contract;
      /* The default configuration's bytes, before tuning. */
      memcpy(dflt, y0, A->nrows * es);
      rt_ok(rcl_spmv_host(dflt, M, alpha, x, beta, &o));
      rcl_tune_report rep;
      tune_checked(&rep, c, kn, dt, n, _i);
      ck_assert_uint_eq(rep.candidates, 5 * 4 * 4 * 3 * 3 * 3);
      char hex[RCL_SHA256_HEX_SIZE];
      rt_ok(rcl_ref_spmv(want, A, contract, one, tx, zero));
      digest_of(hex, want, A->nrows * es);
      ck_assert_msg(!strcmp(rep.reference_digest, hex),
                    "%s %s on %s: the default's digest %.16s is not the host "
                    "reference's %.16s",
                    kn, rcl_dtype_name(dt), rt_device_name(_i), rep.reference_digest, hex);
      /* Other data, same matrix: implicit (the context's tuned choice for this bucket) and explicit. */
      memcpy(want, y0, A->nrows * es);
      rt_ok(rcl_ref_spmv(want, A, contract, alpha, x, beta));
      rt_assert_bits_eq(dflt, want, A->nrows, dt, "%s default on %s", kn, rt_device_name(_i));
      memcpy(got, y0, A->nrows * es);
      rt_ok(rcl_spmv_host(got, M, alpha, x, beta, &o));
      rt_assert_bits_eq(got, want, A->nrows, dt, "%s tuned (implicit) on %s", kn, rt_device_name(_i));
      rcl_tune_choice ch;
      rt_ok(rcl_tune_get(&ch, c, kn, dt, A->nnz));
      ck_assert_int_eq(ch.origin, RCL_TUNE_FROM_TUNING);
      rcl_spmv_options e = o;
      e.variant = (rcl_spmv_variant)param(&ch, "variant");
      e.local_size = param(&ch, "local_size");
      e.lanes = param(&ch, "lanes");
      e.block_nnz = param(&ch, "block_nnz");
      e.slice = param(&ch, "slice");
      e.long_row = param(&ch, "long_row") == SIZE_MAX ? 0 : param(&ch, "long_row");
      memcpy(got, y0, A->nrows * es);
      if (rcl_spmv_host(got, M, alpha, x, beta, &e) == 0) /* refused only where the tuner clamped a value */
        rt_assert_bits_eq(got, want, A->nrows, dt, "%s tuned (explicit %s) on %s", kn, ch.params[0].label,
                          rt_device_name(_i));
      rcl_error_clear();
      /* CG on the regular (SPD) matrix through the tuned SpMV: the whole history is the reference's. */
      if (!spmvs[k].irregular) {
        rcl_cg_options co = RCL_CG_OPTIONS_INIT;
        co.spmv.contract = contract;
        co.max_iterations = 12;
        co.tol = 0;
        void *b = malloc(A->nrows * es), *xd = calloc(A->nrows, es), *xr = calloc(A->nrows, es);
        rt_fill(b, dt, A->nrows, "uniform", 43);
        rcl_cg_result rd, rr;
        memset(&rd, 0, sizeof rd);
        memset(&rr, 0, sizeof rr);
        int rc1 = rcl_cg(xd, &rd, M, b, &co), rc2 = rcl_ref_cg(xr, &rr, A, b, &co);
        ck_assert_msg(rc1 == rc2, "CG status %d vs reference %d: %s", rc1, rc2, rcl_error_last());
        ck_assert_str_eq(rd.history_sha256, rr.history_sha256);
        rt_assert_bits_eq(xd, xr, A->nrows, dt, "CG solution with tuned %s on %s", kn, rt_device_name(_i));
        rcl_cg_result_free(&rd);
        rcl_cg_result_free(&rr);
        free(b);
        free(xd);
        free(xr);
      }
      rcl_error_clear();
      free(tx);
      free(x);
      free(y0);
      free(want);
      free(got);
      free(dflt);
      rcl_spmv_matrix_free(M);
      rcl_csr_free(A);
    }
  }
}
END_TEST

/* A context of its own on device `dev` that tunes every kernel on first use (REPROCL_TUNING=force). */
static rcl_context *forced_tuning_context(int dev) {
  char spec[16];
  snprintf(spec, sizeof spec, "%d", dev);
  rcl_context_options co = RCL_CONTEXT_OPTIONS_INIT;
  co.device = spec;
  co.tuning = RCL_TUNING_FORCE;
  rcl_context *c;
  rt_ok(rcl_context_create(&c, &co));
  return c;
}

/* SOR sweeps in place: tuning it on first use (forced here) works on scratch grids, so the caller's grid
 * is swept exactly as many times as asked, and the stencils' input is never written. */
START_TEST(in_place_kernels_tuned_on_scratch) {
  if (!rt_supported(_i, RCL_FAMILY_STENCIL, RCL_F32)) return;
  rcl_context *c = forced_tuning_context(_i);
  size_t w = 256, h = 257, n = w * h;
  float *g = malloc(n * 4), *want = malloc(n * 4), *in = malloc(n * 4), *keep = malloc(n * 4), res, wres;
  rt_fill(g, RCL_F32, n, "uniform", 51);
  memcpy(want, g, n * 4);
  rcl_sor_desc sd = RCL_SOR_DESC_INIT;
  rt_ok(rcl_ref_sor(want, &wres, &sd, RCL_F32, w, h, 2, NULL));
  rt_ok(rcl_sor(g, &res, c, &sd, RCL_F32, w, h, 2, NULL, NULL));
  rt_assert_bits_eq(g, want, n, RCL_F32, "SOR tuned on first use on %s", rt_device_name(_i));
  rt_assert_bits_eq(&res, &wres, 1, RCL_F32, "SOR residual after tuning on first use");
  rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
  rt_fill(in, RCL_F32, n, "uniform", 52);
  memcpy(keep, in, n * 4);
  rt_ok(rcl_ref_stencil(want, &st, RCL_F32, w, h, 3, in));
  /* The enqueue form on the caller's buffers: the first call tunes (on its own grids), then runs once. */
  cl_int err;
  cl_mem bin = clCreateBuffer(rcl_context_cl_context(c), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * 4, in, &err);
  cl_mem bout = clCreateBuffer(rcl_context_cl_context(c), CL_MEM_READ_WRITE, n * 4, NULL, &err);
  ck_assert_ptr_nonnull(bout);
  rt_ok(rcl_stencil_enqueue(bout, 0, 0, c, &st, RCL_F32, w, h, 3, bin, 0, 0, NULL, NULL, NULL));
  cl_command_queue q = rcl_context_cl_queue(c);
  ck_assert_int_eq(clEnqueueReadBuffer(q, bout, CL_TRUE, 0, n * 4, g, 0, NULL, NULL), CL_SUCCESS);
  ck_assert_int_eq(clEnqueueReadBuffer(q, bin, CL_TRUE, 0, n * 4, in, 0, NULL, NULL), CL_SUCCESS);
  clReleaseMemObject(bin);
  clReleaseMemObject(bout);
  rt_assert_bits_eq(g, want, n, RCL_F32, "nine-point stencil tuned on first use on %s", rt_device_name(_i));
  rt_assert_bits_eq(in, keep, n, RCL_F32, "the stencil's input buffer after tuning on first use");
  rcl_cache_stats cs;
  rcl_cache_stats_get(&cs, c);
  /* stencil.sor (the residual reuses it), the residual norm's reduce.nrm2.ordered, stencil.nine */
  ck_assert_uint_eq(cs.tunings, 3);
  ck_assert_msg(rcl_cache_warning(c) == NULL || !strstr(rcl_cache_warning(c), "tuning"), "%s", rcl_cache_warning(c));
  rcl_context_free(c);
  free(g);
  free(want);
  free(in);
  free(keep);
}
END_TEST

/* ---- MD ------------------------------------------------------------------------------------------------------ */

static const rcl_md_path md_paths[] = {RCL_MD_PATH_GATHER, RCL_MD_PATH_SYMMETRIC, RCL_MD_PATH_ALLPAIRS,
                                       RCL_MD_PATH_TASK};

/* The bytes the MD tuner digests: positions, velocities (the dtype) and the int64 fixed-point forces,
 * after `steps` steps of dt 0.005 from sys, on c with o (c NULL: the host reference). */
static unsigned char *md_outcome(size_t *bytes, rcl_context *c, rcl_dtype dt, const rcl_md_system *sys,
                                 const rcl_md_lj *lj, const rcl_md_options *o, size_t steps) {
  size_t n3 = 3 * sys->natoms, es = rcl_dtype_size(dt);
  *bytes = n3 * (2 * es + 8);
  unsigned char *h = malloc(*bytes);
  ck_assert_ptr_nonnull(h);
  rcl_md *md;
  rt_ok(rcl_md_create(&md, c, dt, sys, lj, o));
  if (steps) rt_ok(rcl_md_run(md, steps, RCL_MD_TUNE_DT, 0, NULL, NULL));
  rt_ok(rcl_md_get_state(md, h, h + n3 * es));
  rt_ok(rcl_md_get_forces(md, NULL, (int64_t *)(void *)(h + 2 * n3 * es)));
  rcl_md_free(md);
  return h;
}

START_TEST(md_tuned_parameters_are_bit_identical) {
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  rcl_context *c = tuning_off_ctx(_i);
  size_t n = 500; /* 5^3 fcc cells: 500 atoms */
  for (int d = 0; d < 2; d++) {
    rcl_dtype dt = dts[d];
    if (!rt_supported(_i, RCL_FAMILY_MD, dt)) {
      rcl_tune_report r;
      rt_fails(rcl_tune(&r, c, "md.gather", dt, n, NULL), RCL_ERR_UNSUPPORTED, "fp64");
      continue;
    }
    rcl_md_system *tsys, *other;
    rcl_md_lj lj;
    rt_ok(rcl__md_tune_system(&tsys, &lj, n));
    ck_assert_uint_eq(tsys->natoms, 500);
    /* The reference digest: the host reference on the tuning system, as the tuner runs it. */
    size_t bytes;
    unsigned char *tref = md_outcome(&bytes, NULL, dt, tsys, &lj, NULL, RCL_MD_TUNE_STEPS);
    char hex[RCL_SHA256_HEX_SIZE];
    digest_of(hex, tref, bytes);
    free(tref);
    /* Other data of the same size bucket: a colder lattice from another seed, 20 steps. */
    rt_ok(rcl_md_lattice(&other, "fcc", 5, 0.8442, 1.5, 99));
    other->pos[0] += 0.05; /* off the lattice: forces that do not cancel */
    other->pos[4] -= 0.05;
    unsigned char *want = md_outcome(&bytes, NULL, dt, other, &lj, NULL, 20);
    for (size_t k = 0; k < sizeof md_paths / sizeof md_paths[0]; k++) {
      const char *kn = rcl__md_tune_kernel(md_paths[k])->name;
      if (md_paths[k] == RCL_MD_PATH_SYMMETRIC && !rcl_context_profile(c)->int64_atomics) {
        rcl_tune_report r;
        rt_fails(rcl_tune(&r, c, kn, dt, n, NULL), RCL_ERR_UNSUPPORTED, "atomics");
        continue;
      }
      rcl_md_options o = RCL_MD_OPTIONS_INIT;
      o.path = md_paths[k];
      unsigned char *dflt = md_outcome(&bytes, c, dt, other, &lj, &o, 20); /* before tuning */
      ck_assert_msg(!memcmp(dflt, want, bytes), "%s default %s on %s differs from the host reference", kn,
                    rcl_dtype_name(dt), rt_device_name(_i));
      free(dflt);
      rcl_tune_report rep;
      tune_checked(&rep, c, kn, dt, n, _i);
      ck_assert_uint_eq(rep.candidates, 3 * 4 * 4);
      ck_assert_msg(!strcmp(rep.reference_digest, hex),
                    "%s %s on %s: the default's digest %.16s is not the host reference's %.16s", kn, rcl_dtype_name(dt),
                    rt_device_name(_i), rep.reference_digest, hex);
      /* The choice, implicit (the context uses it for this size bucket) and explicit. */
      unsigned char *got = md_outcome(&bytes, c, dt, other, &lj, &o, 20);
      ck_assert_msg(!memcmp(got, want, bytes), "%s tuned (implicit) %s on %s differs from the host reference", kn,
                    rcl_dtype_name(dt), rt_device_name(_i));
      free(got);
      rcl_tune_choice ch;
      rt_ok(rcl_tune_get(&ch, c, kn, dt, other->natoms));
      ck_assert_int_eq(ch.origin, RCL_TUNE_FROM_TUNING);
      rcl_md_options e = o;
      e.convert = (rcl_md_convert)param(&ch, "convert");
      e.local_size = md_paths[k] == RCL_MD_PATH_TASK ? 0 : param(&ch, "local_size");
      e.build_local_size = param(&ch, "build_local_size");
      got = md_outcome(&bytes, c, dt, other, &lj, &e, 20);
      ck_assert_msg(!memcmp(got, want, bytes),
                    "%s tuned (explicit convert=%s local_size=%zu build_local_size=%zu) %s on %s differs", kn,
                    ch.params[0].label, e.local_size, e.build_local_size, rcl_dtype_name(dt), rt_device_name(_i));
      free(got);
    }
    free(want);
    rcl_md_system_free(tsys);
    rcl_md_system_free(other);
  }
}
END_TEST

/* rcl_md_create tunes on first use (forced here) on its own scratch system: the caller's system is not
 * modified, and the simulation starts from the caller's data (the host reference's trajectory). */
START_TEST(md_tuned_on_first_use_leaves_the_system_alone) {
  if (!rt_supported(_i, RCL_FAMILY_MD, RCL_F32)) return;
  rcl_context *c = forced_tuning_context(_i);
  rcl_md_system *sys;
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  rt_ok(rcl_md_lattice(&sys, "fcc", 11, 0.8442, 1.5, 5)); /* 5324 atoms: above md.gather's min_tune_n */
  ck_assert_uint_ge(sys->natoms, rcl__tk_md_gather.min_tune_n);
  sys->pos[0] += 0.05;
  size_t n3 = 3 * sys->natoms;
  double *keep = malloc(2 * n3 * sizeof *keep);
  memcpy(keep, sys->pos, n3 * sizeof *keep);
  memcpy(keep + n3, sys->vel, n3 * sizeof *keep);
  size_t bytes;
  unsigned char *want = md_outcome(&bytes, NULL, RCL_F32, sys, &lj, NULL, 3);
  unsigned char *got = md_outcome(&bytes, c, RCL_F32, sys, &lj, NULL, 3); /* tunes md.gather first */
  ck_assert_msg(!memcmp(got, want, bytes), "MD tuned on first use on %s differs from the host reference",
                rt_device_name(_i));
  ck_assert_msg(!memcmp(keep, sys->pos, n3 * sizeof *keep) && !memcmp(keep + n3, sys->vel, n3 * sizeof *keep),
                "tuning modified the caller's system");
  rcl_cache_stats cs;
  rcl_cache_stats_get(&cs, c);
  ck_assert_uint_eq(cs.tunings, 1);
  ck_assert_msg(rcl_cache_warning(c) == NULL || !strstr(rcl_cache_warning(c), "tuning"), "%s", rcl_cache_warning(c));
  rcl_tune_choice ch;
  rt_ok(rcl_tune_get(&ch, c, "md.gather", RCL_F32, sys->natoms));
  ck_assert_int_eq(ch.origin, RCL_TUNE_FROM_TUNING);
  free(want);
  free(got);
  free(keep);
  rcl_md_system_free(sys);
  rcl_context_free(c);
}
END_TEST

/* ---- an injected mismatch, for every family ---------------------------------------------------------------- */

/* A real family descriptor whose digest of one chosen candidate (the first one warmed up after the
 * default: the nearest) is corrupted — standing in for a variant with a bug. The tuner must exclude it,
 * report it by its parameters, and never choose it. */
static const rcl_tune_kernel *wrapped;
static size_t digests, bad_index;
static size_t last_v[RCL_TUNE_MAX_PARAMS], bad_v[RCL_TUNE_MAX_PARAMS];

static int w_run(void *st, const rcl_tune_point *p, cl_command_queue q) {
  memcpy(last_v, p->v, sizeof last_v);
  return wrapped->run(st, p, q);
}

static int w_digest(void *st, cl_command_queue q, char hex[RCL_SHA256_HEX_SIZE]) {
  int rc = wrapped->digest(st, q, hex);
  if (!rc && digests++ == bad_index) {
    memcpy(bad_v, last_v, sizeof bad_v);
    hex[0] = hex[0] == '0' ? '1' : '0';
  }
  return rc;
}

/* Tunes the family descriptor base with its first candidate after the default corrupted and checks the
 * search: exactly one mismatch, reported as a bug naming that candidate's parameters, and the candidate
 * not chosen. */
static void search_and_check_excluded(rcl_context *c, const rcl_tune_kernel *base, size_t n, double budget_ms,
                                      const char *device) {
  rcl_tune_kernel wk = *base, *w = &wk;
  wk.run = w_run;
  wk.digest = w_digest;
  wrapped = base;
  digests = 0;
  bad_index = 1; /* the default's warm-up is digest 0 */
  memset(bad_v, 0, sizeof bad_v);
  rcl_tune_report rep;
  rt_ok(rcl__tune_search(&rep, c, w, RCL_F32, n, budget_ms, 3));
  ck_assert_msg(rep.mismatches == 1, "%s on %s: %zu mismatches", w->name, device, rep.mismatches);
  ck_assert_ptr_nonnull(strstr(rep.mismatch, "please report"));
  char desc[200] = "";
  for (size_t i = 0; i < w->nparams; i++) {
    char val[32];
    snprintf(desc + strlen(desc), sizeof desc - strlen(desc), "%s%s=%s", i ? " " : "", w->params[i].name,
             rcl__tune_param_format(val, sizeof val, &w->params[i], bad_v[i]));
  }
  ck_assert_msg(strstr(rep.mismatch, desc) != NULL, "%s: the report \"%s\" does not name \"%s\"", w->name,
                rep.mismatch, desc);
  int same = 1;
  for (size_t i = 0; i < w->nparams; i++) same &= rep.choice.params[i].value == bad_v[i];
  ck_assert_msg(!same, "%s: the excluded candidate %s was chosen", w->name, desc);
}

START_TEST(a_differing_candidate_is_excluded_and_reported) {
  static const rcl_tune_kernel *const ks[] = {&rcl__tk_stencil_nine, &rcl__tk_stencil_sor,
                                              &rcl__tk_spmv_regular_ordered, &rcl__tk_spmv_irregular_exact};
  rcl_context *c = tuning_off_ctx(_i);
  for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++) {
    if (!rt_supported(_i, ks[k]->family, RCL_F32)) continue;
    search_and_check_excluded(c, ks[k], 1u << 16, 1000, rt_device_name(_i));
  }
}
END_TEST

/* The same for MD, on its 500-atom scratch system. */
START_TEST(md_differing_candidate_is_excluded_and_reported) {
  rcl_context *c = tuning_off_ctx(_i);
  if (!rt_supported(_i, RCL_FAMILY_MD, RCL_F32)) return;
  search_and_check_excluded(c, &rcl__tk_md_gather, 500, 2000, rt_device_name(_i));
}
END_TEST

int main(void) {
  Suite *s = suite_create("tune_families");
  rt_add_device_presence(s);
  RT_ADD_DEVICE_CASE(s, stencil_tuned_parameters_are_bit_identical);
  RT_ADD_DEVICE_CASE(s, spmv_tuned_parameters_are_bit_identical);
  RT_ADD_DEVICE_CASE(s, in_place_kernels_tuned_on_scratch);
  RT_ADD_DEVICE_CASE(s, a_differing_candidate_is_excluded_and_reported);
  RT_ADD_DEVICE_CASE(s, md_tuned_parameters_are_bit_identical);
  RT_ADD_DEVICE_CASE(s, md_tuned_on_first_use_leaves_the_system_alone);
  RT_ADD_DEVICE_CASE(s, md_differing_candidate_is_excluded_and_reported);
  int rc = rt_run(s);
  for (size_t i = 0; i < sizeof ctxs / sizeof ctxs[0]; i++) rcl_context_free(ctxs[i]);
  return rc;
}
