/* The spatial decomposition of MD that a decomposed simulation shares (contracts §10.4): the in-process split
 * over several devices (src/split/split_md.c) and the MPI layer's (src/mpi/mpi_md.c, through the RCL_SIBLING
 * exports). Slabs along the box's longest axis, the owner of an atom, the ghosts of a slab (the periodic
 * nearest image, within (cutoff + skin) * MD_DOM_GHOST_MARGIN), the rebuild test (any atom moved more than
 * skin/2 since the last decomposition), the local simulation of a slab's owned atoms and ghosts on a device,
 * the per-atom integration of a subset of atoms with the reference's functions, and the exact halving of the
 * full-list energy and virial sums. Why the bits are one device's: split_md.c's header comment. */
#include <math.h>

#include "md/md_internal.h"

int rcl__md_dom_axis(const double *lo, const double *hi) {
  int axis = 0;
  for (int d = 1; d < 3; d++)
    if (hi[d] - lo[d] > hi[axis] - lo[axis]) axis = d;
  return axis;
}

void rcl__md_dom_bounds(double *bound, const size_t *units, size_t count, size_t total, double lo, double hi) {
  double len = hi - lo;
  for (size_t k = 0; k <= count; k++) bound[k] = lo + len * ((double)units[k] / (double)total);
  bound[count] = hi;
}

size_t rcl__md_dom_slab_of(const double *bound, size_t count, double x) {
  size_t last = 0;
  for (size_t k = 0; k < count; k++) {
    if (!(bound[k + 1] > bound[k])) continue; /* empty slab */
    if (x < bound[k + 1]) return k;
    last = k;
  }
  return last;
}

/* Distance along the axis from x to slab k (periodic axes: the nearest image of x). */
static double slab_distance(const rcl_md *md, int axis, const double *bound, size_t k, double x) {
  double b0 = bound[k], b1 = bound[k + 1], L = md->len[axis], best = INFINITY;
  for (int im = -1; im <= 1; im++) {
    if (im && !md->periodic[axis]) continue;
    double y = x + im * L, dd = y < b0 ? b0 - y : y >= b1 ? y - b1 : 0.0;
    if (dd < best) best = dd;
  }
  return best;
}

int rcl__md_dom_near(const rcl_md *md, int axis, const double *bound, size_t k, double x) {
  return slab_distance(md, axis, bound, k, x) <= (md->cutoff + md->skin) * MD_DOM_GHOST_MARGIN;
}

double rcl__md_dom_coord(const rcl_md *md, const void *pos, size_t i, int d) {
  return md->dtype == RCL_F32 ? (double)((const float *)pos)[3 * i + (size_t)d]
                              : ((const double *)pos)[3 * i + (size_t)d];
}

int rcl__md_dom_moved_far(const rcl_md *md, size_t n, const void *pos, const double *pos0) {
  double lim = 0.25 * md->skin * md->skin;
  for (size_t i = 0; i < n; i++) {
    double d2 = 0;
    for (int d = 0; d < 3; d++) {
      double dx = rcl__md_dom_coord(md, pos, i, d) - pos0[3 * i + (size_t)d];
      if (md->periodic[d] && dx > 0.5 * md->len[d]) dx -= md->len[d];
      if (md->periodic[d] && dx < -0.5 * md->len[d]) dx += md->len[d];
      d2 += dx * dx;
    }
    if (!(d2 <= lim)) return 1;
  }
  return 0;
}

void rcl__md_dom_save(const rcl_md *md, size_t n, const void *pos, double *pos0) {
  for (size_t i = 0; i < 3 * n; i++) pos0[i] = rcl__md_dom_coord(md, pos, i / 3, (int)(i % 3));
}

void rcl__md_dom_system(rcl_md_system *sys, const rcl_md *md, size_t natoms) {
  sys->natoms = natoms;
  sys->ntypes = md->nt;
  for (int a = 0; a < 3; a++) {
    sys->lo[a] = md->lo[a];
    sys->hi[a] = md->hi[a];
    sys->periodic[a] = md->periodic[a];
  }
  for (int t = 0; t < md->nt; t++) sys->mass[t] = md->mass[t];
}

/* The energy and virial per local atom: the local simulation's own (full lists), or for the symmetric path
 * a gather simulation of the same atoms (its creation computes them). */
static int dom_ev(rcl_md *local, const md_dom_eval *a, int64_t *e, int64_t *w) {
  if (a->o.path != RCL_MD_PATH_SYMMETRIC) return rcl__md_dev_atom_ev(local, e, w);
  rcl_md_options o = a->o;
  o.path = RCL_MD_PATH_GATHER;
  o.local_size = 0;
  rcl_md *g = NULL;
  int rc = rcl__md_build_be(&g, &rcl__md_device_backend, NULL, a->step, a->ctx, NULL, a->dtype, a->sys, a->lj, o, NULL);
  if (!rc) rc = rcl__md_dev_atom_ev(g, e, w);
  rcl_md_free(g);
  return rc;
}

int rcl__md_dom_eval(rcl_md **local, const md_dom_eval *a, int64_t *fq, int64_t *e, int64_t *w) {
  int rc;
  if (a->rebuilt) { /* a new local simulation: its creation builds the lists and computes the forces */
    rcl_md_free(*local);
    *local = NULL;
    rc = rcl__md_build_be(local, &rcl__md_device_backend, NULL, a->step, a->ctx, NULL, a->dtype, a->sys, a->lj, a->o,
                          NULL);
  } else {
    (*local)->step = a->step;
    rc = rcl__md_dev_set_positions(*local, a->sys->pos);
    if (!rc) rc = (*local)->be->forces(*local, a->ev && a->o.path != RCL_MD_PATH_SYMMETRIC);
  }
  if (!rc) rc = rcl_md_get_forces(*local, NULL, fq);
  if (!rc && a->ev) rc = dom_ev(*local, a, e, w);
  return rc;
}

/* The reference's integration of n atoms: md itself with n atoms. */
int rcl__md_dom_kick(const rcl_md *md, size_t n, void *vel, const void *coef, const int *type, const int64_t *f) {
  rcl_md c = *md;
  c.n = n;
  return rcl__md_host_kick(&c, vel, coef, type, f);
}

int rcl__md_dom_drift(const rcl_md *md, size_t n, void *pos, const void *vel) {
  rcl_md c = *md;
  c.n = n;
  return rcl__md_host_drift(&c, pos, vel);
}

int rcl__md_dom_kinetic(const rcl_md *md, size_t n, const void *vel, const void *coef, const int *type, md_sum *out) {
  rcl_md c = *md;
  c.n = n;
  return rcl__md_host_kinetic(&c, vel, coef, type, out);
}

int rcl__md_dom_halve(md_sum *pe, md_sum *virial, const char *who) {
  /* every pair was counted from both of its atoms: the sums are exactly even */
  if (!md_sum_halve(pe) || !md_sum_halve(virial))
    return rcl__fail(RCL_ERR_INTERNAL, "%s: a full-list energy or virial sum is odd (a bug; please report)", who);
  return 0;
}
