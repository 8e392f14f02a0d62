/* Shared checks of the MD-reader fuzz targets (fuzz_md_lammps, fuzz_md_xyz): the input is read from memory
 * (fmemopen, so the reader's own line and seek logic runs unchanged) by the reader rcl_md_read uses. A read
 * either gives a system that satisfies everything rcl_md_system documents (atoms >= 1 and within the box,
 * types in 1..ntypes, finite positive masses, finite velocities), or RCL_ERR_PARSE with "name:" or
 * "name:line:" first. A system read is then checked by rcl_md_check (cutoff against the box, coefficient
 * ranges) in both dtypes, which must answer 0 or RCL_ERR_INVALID_ARG / RCL_ERR_OVERFLOW with a message. */
#ifndef REPROCL_FUZZ_MD_COMMON_H
#define REPROCL_FUZZ_MD_COMMON_H
#include <math.h>

#include "fuzz_common.h"
#include "md/md_internal.h"

static inline void fuzz_md_check_system(const rcl_md_system *s, const rcl_md_lj *lj) {
  FUZZ_CHECK(s->natoms >= 1 && s->natoms <= (1u << 30), "%zu atoms", s->natoms);
  FUZZ_CHECK(s->ntypes >= 1 && s->ntypes <= RCL_MD_MAX_TYPES, "%d types", s->ntypes);
  for (int d = 0; d < 3; d++)
    FUZZ_CHECK(isfinite(s->lo[d]) && isfinite(s->hi[d]) && s->lo[d] < s->hi[d], "box %d: [%g, %g]", d, s->lo[d],
               s->hi[d]);
  for (int t = 0; t < s->ntypes; t++) FUZZ_CHECK(isfinite(s->mass[t]) && s->mass[t] > 0, "mass %g", s->mass[t]);
  for (size_t i = 0; i < s->natoms; i++) {
    FUZZ_CHECK(s->type[i] >= 1 && s->type[i] <= s->ntypes, "atom %zu: type %d of %d", i, s->type[i], s->ntypes);
    for (int d = 0; d < 3; d++) {
      double x = s->pos[3 * i + d];
      FUZZ_CHECK(isfinite(x) && x >= s->lo[d] && x <= s->hi[d], "atom %zu: %c = %g outside [%g, %g]", i, 'x' + d, x,
                 s->lo[d], s->hi[d]);
      FUZZ_CHECK(!s->vel || isfinite(s->vel[3 * i + d]), "atom %zu: velocity not finite", i);
    }
    if (i) FUZZ_CHECK(s->id[i] > s->id[i - 1] || s->id[i] == (long long)i + 1, "atom ids not sorted at %zu", i);
  }
  for (int t = 0; t < s->ntypes; t++)
    FUZZ_CHECK(lj->epsilon[t] >= 0 && lj->sigma[t] > 0, "type %d: epsilon %g sigma %g", t + 1, lj->epsilon[t],
               lj->sigma[t]);
  rcl_md_lj c = *lj;
  for (int k = 0; k < 2; k++) {
    c.cutoff = k ? 2.5 : 1e300; /* the default, and a cutoff no box can hold */
    for (int dt = 0; dt < 2; dt++) {
      int rc = rcl_md_check(s, &c, dt ? RCL_F64 : RCL_F32);
      FUZZ_CHECK(rc == 0 || rc == RCL_ERR_INVALID_ARG || rc == RCL_ERR_OVERFLOW || rc == RCL_ERR_UNSUPPORTED,
                 "rcl_md_check: status %s: %s", rcl_status_name(rc), rcl_error_last());
      FUZZ_CHECK(rc == 0 || rcl_error_last()[0], "rcl_md_check failed without a message");
      if (k == 0) FUZZ_CHECK(rc != 0, "a cutoff of 1e300 was accepted");
    }
  }
}

static inline void fuzz_md_read(const char *name, const uint8_t *data, size_t size) {
  /* fmemopen of 0 bytes fails on older glibc; the empty file is a case the tests cover. */
  if (size == 0) return;
  char *copy = malloc(size); /* exactly the input: ASan sees any over-read */
  if (!copy) abort();
  memcpy(copy, data, size);
  FILE *f = fmemopen(copy, size, "rb");
  if (!f) abort();
  rcl_md_system *s = NULL;
  rcl_md_lj lj = RCL_MD_LJ_INIT;
  int rc = rcl__md_read_stream(&s, &lj, f, name);
  fclose(f);
  if (rc == 0) {
    FUZZ_CHECK(s != NULL, "success without a system");
    fuzz_md_check_system(s, &lj);
    rcl_md_system_free(s);
  } else {
    FUZZ_CHECK(s == NULL, "failure left *out set");
    FUZZ_CHECK(rc == RCL_ERR_PARSE || rc == RCL_ERR_OUT_OF_MEMORY, "status %s: %s", rcl_status_name(rc),
               rcl_error_last());
    if (rc == RCL_ERR_PARSE)
      FUZZ_CHECK(!strncmp(rcl_error_last(), name, strlen(name)) && rcl_error_last()[strlen(name)] == ':',
                 "message does not start with \"%s:\": %s", name, rcl_error_last());
  }
  free(copy);
}
#endif
