/* The spatial decomposition of MD that a decomposed simulation shares (contracts §10.4): the in-process split
 * over several devices (src/split/split_md.c) and the MPI layer's (src/mpi/mpi_md.c, through the RCL_SIBLING
 * exports). Slabs along the box's longest axis, the owner of an atom, the ghosts of a slab (the periodic
 * nearest image, within (cutoff + skin) * MD_DOM_GHOST_MARGIN), the local simulation of a slab's owned atoms
 * and ghosts kept on its device between decompositions (md_dom_part: the device-resident step, the owned
 * atoms' sums and state), and the exact halving of the full-list energy and virial sums. Why the bits are one
 * device's: split_md.c's header comment. */
#include <math.h>
#include <stdlib.h>

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

void rcl__md_dom_reals(double *dst, size_t dstride, const void *src, size_t sstride, size_t n, rcl_dtype dt) {
  if (dt == RCL_F32) {
    const float *f = src;
    for (size_t i = 0; i < n; i++) dst[i * dstride] = (double)f[i * sstride];
  } else {
    const double *f = src;
    for (size_t i = 0; i < n; i++) dst[i * dstride] = f[i * sstride];
  }
}

void rcl__md_dom_scatter(void *dst, const size_t *idx, const void *src, size_t n, rcl_dtype dt) {
  if (dt == RCL_F32) {
    float *o = dst;
    const float *f = src;
    for (size_t j = 0; j < n; j++)
      o[3 * idx[j]] = f[3 * j], o[3 * idx[j] + 1] = f[3 * j + 1], o[3 * idx[j] + 2] = f[3 * j + 2];
  } else {
    double *o = dst;
    const double *f = src;
    for (size_t j = 0; j < n; j++)
      o[3 * idx[j]] = f[3 * j], o[3 * idx[j] + 1] = f[3 * j + 1], o[3 * idx[j] + 2] = f[3 * j + 2];
  }
}

void rcl__md_dom_axis_coords(double *x, const rcl_md *md, const void *pos, size_t n, int axis) {
  if (md->dtype == RCL_F32) {
    const float *f = (const float *)pos + axis;
    for (size_t i = 0; i < n; i++) x[i] = (double)f[3 * i];
  } else {
    const double *f = (const double *)pos + axis;
    for (size_t i = 0; i < n; i++) x[i] = f[3 * i];
  }
}

void rcl__md_dom_slabs(size_t *slab, const double *bound, size_t count, const double *x, size_t n) {
  for (size_t i = 0; i < n; i++) slab[i] = rcl__md_dom_slab_of(bound, count, x[i]);
}

size_t rcl__md_dom_near_list(size_t *out, const rcl_md *md, int axis, const double *bound, size_t k, const double *x,
                             size_t n, const size_t *skip) {
  double reach = (md->cutoff + md->skin) * MD_DOM_GHOST_MARGIN;
  size_t c = 0;
  for (size_t i = 0; i < n; i++) {
    if (skip && skip[i] == k) continue;
    if (!(slab_distance(md, axis, bound, k, x[i]) <= reach)) continue;
    if (out) out[c] = i;
    c++;
  }
  return c;
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

/* ---- the device-resident local simulation of a slab ------------------------------------------------ */

int rcl__md_dom_part_alloc(md_dom_part *p, const rcl_md *md, size_t nown, size_t nloc) {
  size_t k = nloc ? nloc : 1;
  if (rcl__grow((void **)&p->sys.pos, &p->cap_pos, 3 * k * sizeof *p->sys.pos) ||
      rcl__grow((void **)&p->sys.vel, &p->cap_vel, 3 * k * sizeof *p->sys.vel) ||
      rcl__grow((void **)&p->sys.type, &p->cap_type, k * sizeof *p->sys.type))
    return RCL_ERR_OUT_OF_MEMORY;
  memset(p->sys.vel + 3 * nown, 0, 3 * (nloc - nown) * sizeof *p->sys.vel);
  rcl__md_dom_system(&p->sys, md, nloc);
  p->nown = nown;
  return 0;
}

/* The local simulation's half-kick factors: md's (the same binary64 values, rounded alike). */
int rcl__md_dom_part_coef(md_dom_part *p, const rcl_md *md) {
  rcl_md *l = p->md;
  if (!l) return 0;
  l->dt = md->dt;
  memcpy(l->coef + MD_C_DTFM(md->nt), md->coef + MD_C_DTFM(md->nt), (size_t)md->nt * sizeof *l->coef);
  return l->be->set_coef(l);
}

int rcl__md_dom_part_stats(md_dom_part *p, rcl_md_stats *out) {
  *out = p->past;
  rcl_md_stats st;
  int rc = p->md ? rcl_md_get_stats(p->md, &st) : 0;
  if (!rc && p->md) {
    out->neighbor_pairs = st.neighbor_pairs;
    out->force_seconds += st.force_seconds;
    out->build_seconds += st.build_seconds;
    out->integrate_seconds += st.integrate_seconds;
  }
  return rc;
}

int rcl__md_dom_part_build(md_dom_part *p, const rcl_md *md, const size_t *send, size_t nsend) {
  size_t es = rcl_dtype_size(md->dtype), ng = p->sys.natoms - p->nown;
  int rc = rcl__md_dom_part_stats(p, &p->past);
  if (rc) return rc;
  p->nsend = nsend;
  if (rcl__grow(&p->sent, &p->cap_sent, (nsend ? nsend : 1) * 4 * es) ||
      rcl__grow(&p->ghost, &p->cap_ghost, (ng ? ng : 1) * 4 * es))
    return RCL_ERR_OUT_OF_MEMORY;
  const char *env = getenv("REPROCL_MD_RELOAD"); /* 0: a new local simulation every time (a diagnostic) */
  rc = p->md && p->nown && !(env && !strcmp(env, "0")) ? rcl__md_dev_reload(p->md, &p->sys, md->step) : 1;
  if (rc <= 0) {
    p->reloads += !rc;
  } else {
    p->refusals += p->md && p->nown;
    rcl_md_free(p->md);
    p->md = NULL;
    if (!p->nown) return 0;
    size_t room = p->sys.natoms + p->sys.natoms / 8; /* the headroom of later reloads */
    rc = rcl__md_build_be(&p->md, &rcl__md_device_backend, &room, md->step, p->ctx, NULL, md->dtype, &p->sys, &p->lj,
                          p->o, NULL);
    p->creations += !rc;
  }
  if (!rc) rc = rcl__md_dom_part_coef(p, md);
  if (!rc) rc = rcl__md_dev_link(p->md, send, nsend, p->nown);
  return rc;
}

int rcl__md_dom_part_half1(md_dom_part *p, const rcl_md *md, int *far) {
  *far = 0;
  if (!p->md) return 0;
  p->md->step = md->step;
  return rcl__md_dev_half1(p->md, p->sent, far);
}

int rcl__md_dom_part_half2(md_dom_part *p, int exchanged, int ev, int complete) {
  if (!p->md) return 0;
  return rcl__md_dev_half2(p->md, exchanged ? p->ghost : NULL, exchanged, ev && p->o.path != RCL_MD_PATH_SYMMETRIC,
                           complete);
}

int rcl__md_dom_part_forces(md_dom_part *p, const rcl_md *md, int ev) {
  if (!p->md) return 0;
  p->md->step = md->step;
  return p->md->be->forces(p->md, ev && p->o.path != RCL_MD_PATH_SYMMETRIC);
}

/* The symmetric path's per-atom sums split each pair by internal index: the full-list energy and virial of
 * the owned atoms from a gather evaluation of the same local atoms at their current positions. */
static int symmetric_ev(md_dom_part *p, const rcl_md *md, md_sum s[3]) {
  size_t n3 = 3 * p->sys.natoms;
  void *pos = rcl__malloc(n3 * rcl_dtype_size(md->dtype));
  int rc = pos ? rcl_md_get_state(p->md, pos, NULL) : RCL_ERR_OUT_OF_MEMORY;
  if (!rc) rcl__md_dom_reals(p->sys.pos, 1, pos, 1, n3, md->dtype);
  rcl__free(pos);
  rcl_md_options o = p->o;
  o.path = RCL_MD_PATH_GATHER;
  o.local_size = 0;
  rcl_md *g = NULL;
  md_sum t[3];
  if (!rc)
    rc = rcl__md_build_be(&g, &rcl__md_device_backend, NULL, md->step, p->ctx, NULL, md->dtype, &p->sys, &p->lj, o,
                          NULL);
  if (!rc) rc = rcl__md_dev_owned_sums(g, p->nown, t);
  rcl_md_free(g);
  s[0] = t[0];
  s[1] = t[1];
  return rc;
}

int rcl__md_dom_part_sums(md_dom_part *p, const rcl_md *md, md_sum s[3]) {
  for (int q = 0; q < 3; q++) s[q] = (md_sum){0, 0};
  if (!p->md) return 0;
  int rc = rcl__md_dev_owned_sums(p->md, p->nown, s);
  return !rc && p->o.path == RCL_MD_PATH_SYMMETRIC ? symmetric_ev(p, md, s) : rc;
}

int rcl__md_dom_part_state(md_dom_part *p, void *pos, void *vel, int64_t *fq) {
  if (!p->md) return 0;
  /* the scratch: the local atoms' forces; the owned atoms come first */
  int rc = fq ? rcl__grow(&p->scratch, &p->cap_scratch, 3 * p->sys.natoms * sizeof *fq + 1) : 0;
  if (!rc && (pos || vel)) rc = rcl__md_dev_owned_state(p->md, pos, vel);
  if (!rc && fq) rc = rcl_md_get_forces(p->md, NULL, p->scratch);
  if (!rc && fq) memcpy(fq, p->scratch, 3 * p->nown * sizeof *fq);
  return rc;
}

int rcl__md_dom_part_check(md_dom_part *p) { return p->md ? p->md->be->check(p->md) : 0; }

void rcl__md_dom_part_free(md_dom_part *p) {
  rcl_md_free(p->md);
  rcl__free(p->sys.pos);
  rcl__free(p->sys.vel);
  rcl__free(p->sys.type);
  rcl__free(p->sent);
  rcl__free(p->ghost);
  rcl__free(p->scratch);
  p->md = NULL;
  p->sys.pos = p->sys.vel = NULL;
  p->sys.type = NULL;
  p->sent = p->ghost = p->scratch = NULL;
  p->nown = p->nsend = 0;
  p->cap_pos = p->cap_vel = p->cap_type = p->cap_sent = p->cap_ghost = p->cap_scratch = 0;
}

int rcl__md_dom_halve(md_sum *pe, md_sum *virial, const char *who) {
  /* every pair was counted from both of its atoms: the sums are exactly even */
  if (!md_sum_halve(pe) || !md_sum_halve(virial))
    return rcl__fail(RCL_ERR_INTERNAL, "%s: a full-list energy or virial sum is odd (a bug; please report)", who);
  return 0;
}
