/* Molecular dynamics over a split (rcl_split_md_create): spatial decomposition into slabs, bit-identical to
 * rcl_md on one device and to the host reference (docs/contracts.md §9, §10.4).
 *
 * The decomposition. The box is cut into slabs along its longest axis, one per device, at fractions given
 * by the split's weights (a device left out, or of weight 0, gets an empty slab). At a decomposition every
 * atom belongs to the slab holding its coordinate on that axis (atoms outside an open box to the first or
 * last slab). A device holds its owned atoms and, as ghosts, every other atom whose distance along the axis
 * to its slab (periodic: the nearest image) is within (cutoff + skin) * 1.001 — from one neighbour or from
 * several when slabs are thinner than that. Ghosts keep their raw coordinates: the device computes dx and
 * the minimum-image test of contract md.lj with the whole box, exactly as one device does.
 *
 * Why the bits are one device's. Until the next decomposition no atom moves more than skin/2 (the test
 * below, over all atoms together), so any pair within the cutoff now was within cutoff + skin then, and an
 * owned atom's partner is then within that distance of the slab: it is an owned atom or a ghost of the
 * same device. Each device runs the family's own kernels (a simulation of its owned atoms and ghosts, with
 * neighbour lists built at the decomposition); an owned atom's fixed-point force is the integer sum over
 * all its pairs (contract md.lj: any assignment of pairs gives the same integers), so it equals one
 * device's. Forces of ghosts are incomplete and never used. Energy and virial: every owned atom's sums
 * over its full list (gather, task, allpairs; for the symmetric path a gather evaluation of the same local
 * atoms at the steps that ask for them, since its per-atom sums split each pair by internal index), added
 * over all devices' owned atoms, count every pair exactly twice: the total is halved exactly. Integration
 * (contract md.nve) is per atom: each device runs the family's md.nve kernels on its local atoms, so every
 * owned atom's position and velocity is the contract's. Atoms migrate at each decomposition. Rebuild times
 * never change a bit.
 *
 * Device-resident steps (md_domain.c's md_dom_part). Between decompositions each device keeps its owned
 * atoms and ghosts, positions and velocities, and runs kick, drift, forces, kick itself; each step only the
 * positions of the atoms that are ghosts elsewhere leave a device (gathered there by a kernel) and the
 * ghosts' come in (scattered into the local positions before the forces). Ghosts are integrated locally
 * too, with their incomplete forces, but their positions are overwritten by the exchange before any force
 * uses them (and their velocities zeroed). The rebuild test is each device's displacement flag (every local
 * atom, ghosts too: a superset of the test of the owned atoms, so at most an extra decomposition), OR-ed
 * over the devices. The whole state comes to the host only at a decomposition and when asked for; at thermo
 * steps only each device's sums over its owned atoms.
 *
 * The same decomposition runs over MPI ranks (src/mpi/mpi_md.c, one slab per rank): the pieces both use (slab
 * bounds, owner, ghosts, the rebuild test, the local simulation, per-atom integration, the exact halving) are
 * src/md/md_domain.c's. There what the host copies here (ghost coordinates each step, owned atoms at a
 * decomposition, the rebuild test, the integer sums) are messages, and a rank holds its owned atoms and ghosts
 * only. In this in-process form the host gathers the whole state in system order at a decomposition. */
#include <math.h>

#include "md/md_internal.h"
#include "split/split_internal.h"

#define SLAB_UNITS ((size_t)1 << 20) /* the weights cut the axis on multiples of len / 2^20 */

typedef struct {
  md_dom_part p; /* the local simulation: owned atoms (p.nown) first, then ghosts */
  size_t nloc;
  size_t *glob; /* nloc system indices */
  size_t *send; /* p.nsend local indices of the owned atoms that are ghosts elsewhere */
  size_t *from; /* per ghost: its owner device and its place in that device's sent positions */
  void *buf;    /* the owned atoms' state read at a decomposition */
  size_t cap_glob, cap_send, cap_from, cap_buf; /* the buffers above, kept between decompositions (bytes) */
  int far, ev, complete, exchanged;
  md_sum sums[3];
} md_dom;

typedef struct {
  rcl_split *s;
  rcl_md_lj lj;
  rcl_md_options o; /* of the local simulations */
  size_t count;
  int axis;
  double *bound;   /* count + 1 slab boundaries along axis */
  void *pos, *vel; /* the whole state in system order (dtype values), current where fresh */
  int *type;       /* 0-based */
  int64_t *f;      /* fixed-point forces [3n] (gathered when asked for) */
  double *x;       /* per atom: its coordinate along axis at the decomposition, */
  size_t *owner;   /* per atom: its slab, */
  size_t *lidx;    /* its index among its slab's local atoms, */
  size_t *spos;    /* its place in its slab's sent positions (SIZE_MAX: a ghost nowhere) */
  size_t *run;     /* count + 1: rcl__split_each's shares, non-empty where a device owns atoms */
  md_dom *d;
  rcl_md *md;
  int decomposed, fresh;
} split_md;

typedef struct { /* what rcl_split_md_create hands to init */
  rcl_split *s;
  const rcl_md_lj *lj;
  rcl_md_options o;
  int axis;
  double *bound;
} split_md_arg;

/* ---- the decomposition (md_domain.c's functions of the positions and the slab boundaries) ---------- */

static void dom_clear(md_dom *d) {
  rcl__md_dom_part_free(&d->p);
  rcl__free(d->glob);
  rcl__free(d->send);
  rcl__free(d->from);
  rcl__free(d->buf);
}

/* The local simulation dropped (its kernel times kept); the host buffers kept for the next decomposition. */
static void dom_reset(md_dom *d) {
  rcl_md_stats past; /* the kernel times of the local simulations so far */
  if (rcl__md_dom_part_stats(&d->p, &past)) past = d->p.past;
  rcl_md_free(d->p.md);
  d->p.md = NULL;
  d->p.past = past;
  d->p.nown = d->p.nsend = 0;
  d->nloc = 0;
}

/* The local atoms of slab k: the owned ones (owner[i] == k) in system order, then the ghosts (in system order);
 * their indices into glob with fill, else only counted. */
static void dom_atoms(md_dom *d, const rcl_md *md, split_md *m, size_t k, int fill) {
  size_t nown = 0;
  for (size_t i = 0; i < md->n; i++) {
    if (m->owner[i] != k) continue;
    if (fill) {
      d->glob[nown] = i;
      m->lidx[i] = nown;
    }
    nown++;
  }
  size_t ng = rcl__md_dom_near_list(fill ? d->glob + nown : NULL, md, m->axis, m->bound, k, m->x, md->n, m->owner);
  d->p.nown = nown;
  d->nloc = nown + ng;
}

/* Slab k's local system (none when it owns no atom): owned atoms with their velocities, then ghosts. */
static int dom_build(md_dom *d, const rcl_md *md, split_md *m, size_t k) {
  dom_reset(d);
  dom_atoms(d, md, m, k, 0); /* counts */
  if (d->p.nown == 0) {
    d->nloc = 0;
    return 0;
  }
  size_t n = d->nloc, nown = d->p.nown;
  if (rcl__grow((void **)&d->glob, &d->cap_glob, n * sizeof *d->glob) ||
      rcl__grow((void **)&d->from, &d->cap_from, 2 * (n - nown + 1) * sizeof *d->from))
    return RCL_ERR_OUT_OF_MEMORY;
  int rc = rcl__md_dom_part_alloc(&d->p, md, nown, n);
  if (rc) return rc;
  dom_atoms(d, md, m, k, 1); /* the indices */
  for (size_t j = 0; j < n; j++) {
    size_t g = d->glob[j];
    d->p.sys.type[j] = m->type[g] + 1;
    for (size_t a = 0; a < 3; a++) d->p.sys.pos[3 * j + a] = md_dom_real(m->pos, 3 * g + a, md->dtype);
  }
  for (size_t j = 0; j < nown; j++)
    for (size_t a = 0; a < 3; a++) d->p.sys.vel[3 * j + a] = md_dom_real(m->vel, 3 * d->glob[j] + a, md->dtype);
  return 0;
}

/* The exchange: each ghost's owner device and place in its sent positions, and each device's send list. */
static int exchange_plan(rcl_md *md, split_md *m) {
  for (size_t i = 0; i < md->n; i++) m->spos[i] = SIZE_MAX;
  for (size_t k = 0; k < m->count; k++) {
    md_dom *d = &m->d[k];
    for (size_t j = d->p.nown; j < d->nloc; j++) {
      size_t g = d->glob[j], o = m->owner[g];
      if (m->spos[g] == SIZE_MAX) m->spos[g] = m->d[o].p.nsend++;
      d->from[2 * (j - d->p.nown)] = o;
      d->from[2 * (j - d->p.nown) + 1] = m->spos[g];
    }
  }
  for (size_t k = 0; k < m->count; k++)
    if (rcl__grow((void **)&m->d[k].send, &m->d[k].cap_send, (m->d[k].p.nsend + 1) * sizeof *m->d[k].send))
      return RCL_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < md->n; i++)
    if (m->spos[i] != SIZE_MAX) m->d[m->owner[i]].send[m->spos[i]] = m->lidx[i];
  return 0;
}

/* Device i's part of a step, of a decomposition and of the state's gathering (rcl__split_each). */
static int pull_fn(void *arg, size_t i) { /* the owned atoms' positions and velocities into system order */
  split_md *m = arg;
  md_dom *d = &m->d[i];
  size_t es = rcl_dtype_size(m->md->dtype), nown = d->p.nown;
  int rc = rcl__grow(&d->buf, &d->cap_buf, 6 * (nown ? nown : 1) * es);
  unsigned char *buf = d->buf;
  if (!rc) rc = rcl__md_dom_part_state(&d->p, buf, buf + 3 * nown * es, NULL);
  if (!rc) rcl__md_dom_scatter(m->pos, d->glob, buf, nown, m->md->dtype);
  if (!rc) rcl__md_dom_scatter(m->vel, d->glob, buf + 3 * nown * es, nown, m->md->dtype);
  return rc;
}

static int build_fn(void *arg, size_t i) {
  split_md *m = arg;
  md_dom *d = &m->d[i];
  return rcl__md_dom_part_build(&d->p, m->md, d->send, d->p.nsend);
}

/* The host state made current (after steps it lies on the devices). */
static int pull(rcl_md *md, split_md *m) {
  if (m->fresh || !m->decomposed) return 0;
  m->md = md;
  int rc = rcl__split_each(m->s, m->run, pull_fn, m);
  m->fresh = !rc;
  return rc;
}

/* Ownership, ghosts and the local simulations at the current positions; the shares rcl_split_share reports
 * (device i owns s->size[i] atoms). */
static int decompose(rcl_md *md, split_md *m) {
  int rc = pull(md, m);
  if (!rc) {
    rcl__md_dom_axis_coords(m->x, md, m->pos, md->n, m->axis);
    rcl__md_dom_slabs(m->owner, m->bound, m->count, m->x, md->n);
  }
  size_t first = 0;
  m->run[0] = 0;
  for (size_t k = 0; k < m->count; k++) {
    if (!rc) rc = dom_build(&m->d[k], md, m, k);
    m->run[k + 1] = m->run[k] + (rc ? 0 : m->d[k].p.nown ? m->d[k].nloc : 0);
    m->s->first[k] = first;
    m->s->size[k] = rc ? 0 : m->d[k].p.nown;
    first += m->s->size[k];
  }
  if (!rc) rc = exchange_plan(md, m);
  m->md = md;
  if (!rc) rc = rcl__split_each(m->s, m->run, build_fn, m);
  if (rc) return rc;
  m->decomposed = 1;
  md->builds++;
  return 0;
}

/* ---- the steps ------------------------------------------------------------------------------------ */

static int half1_fn(void *arg, size_t i) {
  split_md *m = arg;
  return rcl__md_dom_part_half1(&m->d[i].p, m->md, &m->d[i].far);
}

static int half2_fn(void *arg, size_t i) {
  split_md *m = arg;
  md_dom *d = &m->d[i];
  return rcl__md_dom_part_half2(&d->p, d->exchanged, d->ev, d->complete);
}

/* Each ghost's position from the sent positions of its owner. */
static void copy_ghosts(const rcl_md *md, split_md *m) {
  size_t r4 = 4 * rcl_dtype_size(md->dtype);
  for (size_t k = 0; k < m->count; k++) {
    md_dom *d = &m->d[k];
    for (size_t j = 0; j + d->p.nown < d->nloc; j++)
      memcpy((char *)d->p.ghost + j * r4, (char *)m->d[d->from[2 * j]].p.sent + d->from[2 * j + 1] * r4, r4);
  }
}

/* One velocity-Verlet step (contract md.nve) on the devices: the first half, the exchange or at a rebuild a
 * new decomposition (whose local simulations compute the forces), the second half. */
static int split_step(rcl_md *md, int ev, int complete) {
  split_md *m = md->bs;
  m->md = md;
  m->fresh = 0;
  int rc = rcl__split_each(m->s, m->run, half1_fn, m), far = 0;
  for (size_t k = 0; k < m->count; k++) far |= m->d[k].p.md && m->d[k].far;
  if (rc) return rc;
  if (far && (rc = decompose(md, m)) != 0) return rc;
  if (!far) copy_ghosts(md, m);
  for (size_t k = 0; k < m->count; k++) {
    m->d[k].exchanged = !far;
    m->d[k].ev = ev;
    m->d[k].complete = complete;
  }
  rc = rcl__split_each(m->s, m->run, half2_fn, m);
  m->fresh = 0; /* the host state (pulled at a decomposition) is now behind */
  return rc;
}

static int forces_fn(void *arg, size_t i) {
  split_md *m = arg;
  return rcl__md_dom_part_forces(&m->d[i].p, m->md, m->d[i].ev);
}

/* The forces at the current positions: the first decomposition, or each device's. */
static int split_forces(rcl_md *md, int ev) {
  split_md *m = md->bs;
  if (!m->decomposed) return decompose(md, m);
  m->md = md;
  for (size_t k = 0; k < m->count; k++) m->d[k].ev = ev;
  return rcl__split_each(m->s, m->run, forces_fn, m);
}

/* ---- the backend ---------------------------------------------------------------------------------- */

static void split_destroy(rcl_md *md) {
  split_md *m = md->bs;
  if (!m) return;
  for (size_t k = 0; m->d && k < m->count; k++) dom_clear(&m->d[k]);
  void *p[] = {m->bound, m->pos, m->vel, m->type, m->f, m->x, m->owner, m->lidx, m->spos, m->run, m->d};
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) rcl__free(p[i]);
  rcl__free(m);
  md->bs = NULL;
}

static int split_set_coef(rcl_md *md) {
  split_md *m = md->bs;
  int rc = 0;
  for (size_t k = 0; k < m->count && !rc; k++) rc = rcl__md_dom_part_coef(&m->d[k].p, md);
  return rc;
}

static int split_init(rcl_md *md, const rcl_md_system *sys) {
  const split_md_arg *a = md->be_arg;
  size_t n = md->n, es = rcl_dtype_size(md->dtype), c = a->s->count;
  split_md *m = rcl__calloc(1, sizeof *m);
  if (!m) return RCL_ERR_OUT_OF_MEMORY;
  md->bs = m;
  m->s = a->s;
  m->lj = *a->lj;
  m->o = a->o;
  m->count = c;
  m->axis = a->axis;
  m->fresh = 1;
  m->bound = rcl__malloc((c + 1) * sizeof *m->bound);
  m->pos = rcl__malloc(3 * n * es);
  m->vel = rcl__malloc(3 * n * es);
  m->type = rcl__malloc(n * sizeof *m->type);
  m->f = rcl__calloc(3 * n, sizeof *m->f);
  m->x = rcl__malloc((n ? n : 1) * sizeof *m->x);
  size_t **ix[] = {&m->owner, &m->lidx, &m->spos};
  for (int i = 0; i < 3; i++) *ix[i] = rcl__malloc(n * sizeof **ix[i]);
  m->run = rcl__calloc(c + 1, sizeof *m->run);
  m->d = rcl__calloc(c, sizeof *m->d);
  if (!m->bound || !m->pos || !m->vel || !m->type || !m->f || !m->x || !m->owner || !m->lidx || !m->spos || !m->run ||
      !m->d)
    return RCL_ERR_OUT_OF_MEMORY;
  memcpy(m->bound, a->bound, (c + 1) * sizeof *m->bound);
  for (size_t k = 0; k < c; k++) {
    m->d[k].p.ctx = a->s->ctx[k];
    m->d[k].p.lj = *a->lj;
    m->d[k].p.o = a->o;
  }
  for (size_t i = 0; i < 3 * n; i++) {
    md_put_real(m->pos, i, md->dtype, sys->pos[i]);
    md_put_real(m->vel, i, md->dtype, sys->vel ? sys->vel[i] : 0.0);
  }
  for (size_t i = 0; i < n; i++) m->type[i] = sys->type[i] - 1;
  return 0;
}

static int sums_fn(void *arg, size_t i) {
  split_md *m = arg;
  return rcl__md_dom_part_sums(&m->d[i].p, m->md, m->d[i].sums);
}

/* Each device's exact sums over its owned atoms, added (exactly: in any order); energy and virial halved. */
static int split_sums(rcl_md *md, md_sums *out) {
  split_md *m = md->bs;
  memset(out, 0, sizeof *out);
  m->md = md;
  int rc = rcl__split_each(m->s, m->run, sums_fn, m);
  md_sum *t[3] = {&out->pe, &out->virial, &out->mv2};
  for (size_t k = 0; !rc && k < m->count; k++)
    for (int q = 0; m->d[k].p.md && q < 3; q++) {
      t[q]->hi += m->d[k].sums[q].hi;
      t[q]->lo += m->d[k].sums[q].lo;
      md_sum_normalize(t[q]);
    }
  return rc ? rc : rcl__md_dom_halve(&out->pe, &out->virial, "split MD");
}

static int split_get_state(rcl_md *md, void *pos, void *vel) {
  split_md *m = md->bs;
  size_t bytes = 3 * md->n * rcl_dtype_size(md->dtype);
  int rc = pull(md, m);
  if (!rc && pos) memcpy(pos, m->pos, bytes);
  if (!rc && vel) memcpy(vel, m->vel, bytes);
  return rc;
}

static int forces_out_fn(void *arg, size_t i) { /* the owned atoms' fixed-point forces into system order */
  split_md *m = arg;
  md_dom *d = &m->d[i];
  int64_t *f = rcl__malloc(3 * (d->p.nown ? d->p.nown : 1) * sizeof *f);
  int rc = f ? rcl__md_dom_part_state(&d->p, NULL, NULL, f) : RCL_ERR_OUT_OF_MEMORY;
  for (size_t j = 0; !rc && j < d->p.nown; j++) memcpy(m->f + 3 * d->glob[j], f + 3 * j, 3 * sizeof *f);
  rcl__free(f);
  return rc;
}

static int split_get_forces(rcl_md *md, int64_t *fixed, void *native_force) {
  split_md *m = md->bs;
  (void)native_force;
  m->md = md;
  int rc = rcl__split_each(m->s, m->run, forces_out_fn, m);
  if (!rc) memcpy(fixed, m->f, 3 * md->n * sizeof *fixed);
  return rc;
}

static int check_fn(void *arg, size_t i) {
  split_md *m = arg;
  return rcl__md_dom_part_check(&m->d[i].p);
}

static int split_check(rcl_md *md) { /* errors the devices flagged since their last status read */
  split_md *m = md->bs;
  return rcl__split_each(m->s, m->run, check_fn, m);
}

/* The devices' kernel times added; neighbour pairs of every local simulation (ghosts' pairs too). */
static int split_stats(rcl_md *md, rcl_md_stats *out) {
  split_md *m = md->bs;
  int rc = 0;
  for (size_t k = 0; k < m->count && !rc; k++) {
    rcl_md_stats st;
    if ((rc = rcl__md_dom_part_stats(&m->d[k].p, &st)) != 0) break;
    out->neighbor_pairs += st.neighbor_pairs;
    out->force_seconds += st.force_seconds;
    out->build_seconds += st.build_seconds;
    out->integrate_seconds += st.integrate_seconds;
  }
  return rc;
}

static const md_backend split_backend = {split_init, split_destroy, split_set_coef,  split_forces,
                                         split_step, split_sums,    split_get_state, split_get_forces,
                                         NULL,       split_check,   split_stats};

/* ---- creation ------------------------------------------------------------------------------------- */

/* The weights of MD on this split; for the symmetric path devices without 64-bit integer atomics are
 * left out (strict: refused). */
static int md_weights(double *w, rcl_split *s, rcl_dtype dtype, rcl_md_path path) {
  int rc = rcl__split_weights(w, s, RCL_FAMILY_MD, dtype, NULL), any = 0;
  for (size_t i = 0; !rc && i < s->count; i++) {
    const rcl_device_profile *p = rcl_context_profile(s->ctx[i]);
    if (path == RCL_MD_PATH_SYMMETRIC && !p->int64_atomics && !s->note[i]) {
      if (s->strict)
        return rcl__fail(RCL_ERR_UNSUPPORTED,
                         "device %zu (%s) cannot run the symmetric MD path: it has no 64-bit integer atomics", i,
                         p->device_name);
      s->note[i] = "no 64-bit integer atomics (the symmetric MD path needs them)";
      w[i] = 0;
    }
    any |= w[i] > 0;
  }
  if (!rc && !any)
    return rcl__fail(RCL_ERR_UNSUPPORTED, "split: no device left to run the %s MD path in %s", rcl_md_path_name(path),
                     rcl_dtype_name(dtype));
  return rc;
}

int rcl_split_md_create(rcl_md **out, rcl_split *s, rcl_dtype dtype, const rcl_md_system *sys, const rcl_md_lj *lj,
                        const rcl_md_options *opts) {
  split_md_arg a = {s, lj, RCL_MD_OPTIONS_INIT, 0, NULL};
  int rc = rcl__md_prepare(&a.o, out, NULL, dtype, sys, lj, opts);
  if (rc) return rc;
  if (!s) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_md_create: NULL split");
  for (size_t i = 0; i < s->count; i++)
    if (rcl_context_mode(s->ctx[i]) == RCL_MODE_NATIVE)
      return rcl__fail(RCL_ERR_UNSUPPORTED, "rcl_split_md_create: device %zu is in native mode (no bit promise)", i);
  a.axis = rcl__md_dom_axis(sys->lo, sys->hi);
  double *w = rcl__malloc(s->count * sizeof *w);
  size_t *units = rcl__malloc((s->count + 1) * sizeof *units);
  a.bound = rcl__malloc((s->count + 1) * sizeof *a.bound);
  rc = w && units && a.bound ? md_weights(w, s, dtype, a.o.path) : RCL_ERR_OUT_OF_MEMORY;
  if (!rc) rc = rcl_split_partition(units, w, s->count, SLAB_UNITS, 1);
  if (!rc) {
    rcl__md_dom_bounds(a.bound, units, s->count, SLAB_UNITS, sys->lo[a.axis], sys->hi[a.axis]);
    rc = rcl__md_build_be(out, &split_backend, &a, 0, NULL, NULL, dtype, sys, lj, a.o, NULL);
  }
  rcl__free(w);
  rcl__free(units);
  rcl__free(a.bound);
  return rc;
}
