/* Helpers of the MPI layer's distributed tests (test_mpi_sparse.c, test_mpi_stencil.c): contexts made
 * collectively, collective support questions, and failures recorded instead of asserted, so that every rank
 * reaches every collective call of a test before any assertion ends the test on one rank. */
#ifndef REPROCL_MPI_TESTLIB_H
#define REPROCL_MPI_TESTLIB_H
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "reprocl/mpi.h"
#include "testlib.h"

/* The first failure of the running test on this rank ("" while none). */
static char mt_failure[1024];
static int mt_rank, mt_size;

static void mt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void mt_fail(const char *fmt, ...) {
  if (mt_failure[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(mt_failure, sizeof mt_failure, fmt, ap);
  va_end(ap);
}

/* Records rc != want, with the library's message. */
static void mt_expect(int rc, int want, const char *what) {
  if (rc != want)
    mt_fail("rank %d: %s returned %s (expected %s): %s", mt_rank, what, rcl_status_name(rc), rcl_status_name(want),
            rcl_error_last());
}

/* Records the first differing element of two arrays of n values. */
static void mt_same(const void *got, const void *want, size_t n, rcl_dtype dt, const char *what) {
  size_t es = rcl_dtype_size(dt);
  for (size_t i = 0; i < n; i++)
    if (memcmp((const char *)got + i * es, (const char *)want + i * es, es)) {
      double g = dt == RCL_F32 ? ((const float *)got)[i] : ((const double *)got)[i];
      double w = dt == RCL_F32 ? ((const float *)want)[i] : ((const double *)want)[i];
      mt_fail("rank %d of %d: %s: element %zu is %.17g, the reference %.17g", mt_rank, mt_size, what, i, g, w);
      return;
    }
}

/* Ends a test: asserts that no rank recorded a failure (every rank learns whether any did). */
static void mt_end(void) {
  int mine = mt_failure[0] != 0, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  char msg[sizeof mt_failure];
  snprintf(msg, sizeof msg, "%s", mt_failure);
  mt_failure[0] = '\0';
  ck_assert_msg(!mine, "%s", msg);
  ck_assert_msg(!any, "another rank failed (its message is in its own output)");
}

/* A context for this rank by the device map, made collectively (NULL where any rank failed). */
static rcl_context *mt_ctx(const char *map) {
  rcl_context *c = NULL;
  mt_expect(rcl_mpi_context_create(&c, MPI_COMM_WORLD, map, NULL), 0, map);
  return c;
}

/* Whether every rank's device runs the family in dtype (the same answer on every rank). */
static int mt_all_support(rcl_context *c, rcl_family family, rcl_dtype dt) {
  int mine = c && rcl_device_profile_support(rcl_context_profile(c), family, dt, NULL) != RCL_SUPPORT_NONE, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all;
}

/* The device maps of the mixed cases: rank r on device (r + shift) mod count, for shift 0 .. 2 (one map where
 * there is one device). *map is "" past the last. */
static void mt_mixed_map(char *map, size_t size, size_t shift) {
  size_t nd = rt_ndevices();
  map[0] = '\0';
  if (nd == 0 || (nd == 1 && shift > 0) || shift > 2) return;
  snprintf(map, size, "rank:");
  for (size_t k = 0; k < nd; k++)
    snprintf(map + strlen(map), size - strlen(map), "%s%zu", k ? "," : "", (k + shift) % nd);
}

/* n values of dt from rt_fill(kind, seed) (at least one allocated). */
static void *mt_vec(rcl_dtype dt, size_t n, const char *kind, uint64_t seed) {
  void *p = malloc((n ? n : 1) * rcl_dtype_size(dt));
  ck_assert_ptr_nonnull(p);
  rt_fill(p, dt, n, kind, seed);
  return p;
}

/* The cases of a test on a context, named by where. */
typedef void (*mt_cases)(rcl_context *c, const char *where);

/* Every rank on device i. */
static void mt_on_device(int i, mt_cases cases) {
  char map[32];
  snprintf(map, sizeof map, "rank:%d", i);
  rcl_context *c = mt_ctx(map);
  if (c) cases(c, rt_device_name((size_t)i));
  rcl_context_free(c);
  mt_end();
}

/* Every mixed device map (mt_mixed_map) in turn. */
static void mt_on_mixes(mt_cases cases) {
  char map[128];
  for (size_t shift = 0; mt_mixed_map(map, sizeof map, shift), map[0]; shift++) {
    rcl_context *c = mt_ctx(map);
    if (c) cases(c, map);
    rcl_context_free(c);
  }
  mt_end();
}

/* MPI up, at most 8 ranks, the suite run, every rank's verdict joined. */
static int mt_main(int argc, char **argv, Suite *(*make)(void), const char *name) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
  if (mt_size > 8) {
    fprintf(stderr, "%s: at most 8 ranks (got %d)\n", name, mt_size);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int rc = rt_run(make()), all = 0;
  MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return all;
}

#endif
