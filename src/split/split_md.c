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
 * (contract md.nve) is per atom, on the host with the reference's functions (md_ref.c), so every position
 * and velocity is the contract's. Atoms migrate at each decomposition. Rebuild times never change a bit.
 *
 * The same decomposition runs over MPI ranks (src/mpi/mpi_md.c, one slab per rank): the pieces both use (slab
 * bounds, owner, ghosts, the rebuild test, the local simulation, per-atom integration, the exact halving) are
 * src/md/md_domain.c's. There what the host copies here (ghost coordinates each step, owned atoms at a
 * decomposition, the rebuild test, the integer sums) are messages, and a rank holds its owned atoms and ghosts
 * only. In this in-process form the host keeps the whole state in system order. */
#include <math.h>

#include "md/md_internal.h"
#include "split/split_internal.h"

#define SLAB_UNITS ((size_t)1 << 20) /* the weights cut the axis on multiples of len / 2^20 */

typedef struct {
  size_t nown, nloc; /* owned atoms first, then ghosts */
  size_t *glob;      /* nloc system indices */
  rcl_md_system sys; /* the local atoms (binary64 copies of the dtype values), the whole box */
  rcl_md *md;        /* the local simulation on the device; NULL without owned atoms */
  int64_t *fq, *e, *w;
} md_dom;

typedef struct {
  rcl_split *s;
  rcl_md_lj lj;
  rcl_md_options o; /* of the local simulations */
  size_t count;
  int axis;
  double *bound;          /* count + 1 slab boundaries along axis */
  void *pos, *vel, *coef; /* the whole state in system order (dtype values); coef rounded to the dtype */
  int *type;              /* 0-based */
  int64_t *f, *e, *w;     /* fixed-point forces [3n]; per-atom energy and virial [n] (full lists) */
  double *pos0;           /* positions at the last decomposition */
  size_t *run;            /* count + 1: rcl__split_each's shares, non-empty where a device owns atoms */
  md_dom *d;
  int decomposed, have_ev;
} split_md;

typedef struct { /* what rcl_split_md_create hands to init */
  rcl_split *s;
  const rcl_md_lj *lj;
  rcl_md_options o;
  int axis;
  double *bound;
} split_md_arg;

static double coord(const rcl_md *md, const split_md *m, size_t i, int d) {
  return rcl__md_dom_coord(md, m->pos, i, d);
}

/* ---- the decomposition (md_domain.c's functions of the positions and the slab boundaries) ---------- */

static void dom_clear(md_dom *d) {
  rcl_md_free(d->md);
  rcl__free(d->glob);
  rcl__free(d->sys.pos);
  rcl__free(d->sys.type);
  rcl__free(d->fq);
  rcl__free(d->e);
  rcl__free(d->w);
  memset(d, 0, sizeof *d);
}

/* The local atoms of slab k: the owned ones (owner[i] == k) in system order, then the ghosts. */
static int dom_atoms(md_dom *d, const rcl_md *md, const split_md *m, const size_t *owner, size_t k) {
  size_t nloc = 0;
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < md->n; i++) {
      int mine = owner[i] == k;
      if (pass == 0 ? !mine : mine || !rcl__md_dom_near(md, m->axis, m->bound, k, coord(md, m, i, m->axis))) continue;
      d->nown += pass == 0;
      if (d->glob) d->glob[nloc] = i;
      nloc++;
    }
  d->nloc = nloc;
  return 0;
}

/* Slab k's local system and result arrays (none when it owns no atom). */
static int dom_build(md_dom *d, const rcl_md *md, const split_md *m, const size_t *owner, size_t k) {
  dom_clear(d);
  dom_atoms(d, md, m, owner, k); /* counts */
  if (d->nown == 0) {
    d->nloc = 0;
    return 0;
  }
  size_t n = d->nloc;
  d->glob = rcl__malloc(n * sizeof *d->glob);
  d->sys.pos = rcl__malloc(3 * n * sizeof *d->sys.pos);
  d->sys.type = rcl__malloc(n * sizeof *d->sys.type);
  d->fq = rcl__malloc(3 * n * sizeof *d->fq);
  d->e = rcl__malloc(n * sizeof *d->e);
  d->w = rcl__malloc(n * sizeof *d->w);
  if (!d->glob || !d->sys.pos || !d->sys.type || !d->fq || !d->e || !d->w) return RCL_ERR_OUT_OF_MEMORY;
  d->nown = 0;
  dom_atoms(d, md, m, owner, k); /* the indices */
  rcl__md_dom_system(&d->sys, md, n);
  for (size_t j = 0; j < n; j++) d->sys.type[j] = m->type[d->glob[j]] + 1;
  return 0;
}

/* Ownership, ghosts and the local systems at the current positions; the shares rcl_split_share reports
 * (device i owns s->size[i] atoms). */
static int decompose(rcl_md *md, split_md *m) {
  size_t *owner = rcl__malloc((md->n ? md->n : 1) * sizeof *owner);
  if (!owner) return RCL_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < md->n; i++) owner[i] = rcl__md_dom_slab_of(m->bound, m->count, coord(md, m, i, m->axis));
  int rc = 0;
  size_t first = 0;
  m->run[0] = 0;
  for (size_t k = 0; k < m->count; k++) {
    if (!rc) rc = dom_build(&m->d[k], md, m, owner, k);
    m->run[k + 1] = m->run[k] + (rc ? 0 : m->d[k].nown ? m->d[k].nloc : 0);
    m->s->first[k] = first;
    m->s->size[k] = rc ? 0 : m->d[k].nown;
    first += m->s->size[k];
  }
  rcl__free(owner);
  if (rc) return rc;
  rcl__md_dom_save(md, md->n, m->pos, m->pos0);
  m->decomposed = 1;
  md->builds++;
  return 0;
}

/* ---- the forces of every device's owned atoms ----------------------------------------------------- */

typedef struct {
  rcl_md *md;
  split_md *m;
  int ev, rebuilt;
} force_job;

static int force_fn(void *arg, size_t i) {
  force_job *j = arg;
  md_dom *d = &j->m->d[i];
  md_dom_eval a = {j->m->s->ctx[i], j->md->dtype, j->md->step, &d->sys, &j->m->lj, j->m->o, j->rebuilt, j->ev};
  int rc = rcl__md_dom_eval(&d->md, &a, d->fq, d->e, d->w);
  if (rc) return rc;
  for (size_t k = 0; k < d->nown; k++) { /* owned atoms only: disjoint between devices */
    size_t g = d->glob[k];
    memcpy(j->m->f + 3 * g, d->fq + 3 * k, 3 * sizeof *d->fq);
    if (j->ev) {
      j->m->e[g] = d->e[k];
      j->m->w[g] = d->w[k];
    }
  }
  return 0;
}

static int split_forces(rcl_md *md, int ev) {
  split_md *m = md->bs;
  int rebuilt = !m->decomposed || rcl__md_dom_moved_far(md, md->n, m->pos, m->pos0), rc = 0;
  if (rebuilt && (rc = decompose(md, m)) != 0) return rc;
  for (size_t k = 0; k < m->count; k++) /* the local atoms' coordinates (ghosts: as their owners moved them) */
    for (size_t j = 0; j < m->d[k].nloc; j++)
      for (int a = 0; a < 3; a++) m->d[k].sys.pos[3 * j + (size_t)a] = coord(md, m, m->d[k].glob[j], a);
  force_job job = {md, m, ev, rebuilt};
  m->have_ev = 0;
  rc = rcl__split_each(m->s, m->run, force_fn, &job);
  m->have_ev = !rc && ev;
  return rc;
}

/* ---- the backend ---------------------------------------------------------------------------------- */

static void split_destroy(rcl_md *md) {
  split_md *m = md->bs;
  if (!m) return;
  for (size_t k = 0; m->d && k < m->count; k++) dom_clear(&m->d[k]);
  void *p[] = {m->bound, m->pos, m->vel, m->coef, m->type, m->f, m->e, m->w, m->pos0, m->run, m->d};
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) rcl__free(p[i]);
  rcl__free(m);
  md->bs = NULL;
}

static int split_set_coef(rcl_md *md) {
  split_md *m = md->bs;
  for (int i = 0; i < MD_NCOEF(md->nt); i++) md_put_real(m->coef, (size_t)i, md->dtype, md->coef[i]);
  return 0;
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
  m->bound = rcl__malloc((c + 1) * sizeof *m->bound);
  m->pos = rcl__malloc(3 * n * es);
  m->vel = rcl__malloc(3 * n * es);
  m->coef = rcl__malloc((size_t)MD_NCOEF(md->nt) * es);
  m->type = rcl__malloc(n * sizeof *m->type);
  m->f = rcl__calloc(3 * n, sizeof *m->f);
  m->e = rcl__calloc(n, sizeof *m->e);
  m->w = rcl__calloc(n, sizeof *m->w);
  m->pos0 = rcl__malloc(3 * n * sizeof *m->pos0);
  m->run = rcl__calloc(c + 1, sizeof *m->run);
  m->d = rcl__calloc(c, sizeof *m->d);
  if (!m->bound || !m->pos || !m->vel || !m->coef || !m->type || !m->f || !m->e || !m->w || !m->pos0 || !m->run ||
      !m->d)
    return RCL_ERR_OUT_OF_MEMORY;
  memcpy(m->bound, a->bound, (c + 1) * sizeof *m->bound);
  for (size_t i = 0; i < 3 * n; i++) {
    md_put_real(m->pos, i, md->dtype, sys->pos[i]);
    md_put_real(m->vel, i, md->dtype, sys->vel ? sys->vel[i] : 0.0);
  }
  for (size_t i = 0; i < n; i++) m->type[i] = sys->type[i] - 1;
  return split_set_coef(md);
}

/* One velocity-Verlet step (contract md.nve): kick and drift per atom on the host, the forces on the
 * devices, kick. */
static int split_step(rcl_md *md, int ev, int complete) {
  split_md *m = md->bs;
  (void)complete;
  int rc = rcl__md_host_kick(md, m->vel, m->coef, m->type, m->f);
  if (!rc) rc = rcl__md_host_drift(md, m->pos, m->vel);
  if (!rc) rc = split_forces(md, ev);
  if (!rc) rc = rcl__md_host_kick(md, m->vel, m->coef, m->type, m->f);
  return rc;
}

static int split_sums(rcl_md *md, md_sums *out) {
  split_md *m = md->bs;
  memset(out, 0, sizeof *out);
  if (!m->have_ev) return rcl__fail(RCL_ERR_INTERNAL, "split MD: thermo sums without an energy evaluation");
  for (size_t i = 0; i < md->n; i++) {
    md_sum_add(&out->pe, m->e[i]);
    md_sum_add(&out->virial, m->w[i]);
  }
  int rc = rcl__md_dom_halve(&out->pe, &out->virial, "split MD");
  return rc ? rc : rcl__md_host_kinetic(md, m->vel, m->coef, m->type, &out->mv2);
}

static int split_get_state(rcl_md *md, void *pos, void *vel) {
  split_md *m = md->bs;
  size_t bytes = 3 * md->n * rcl_dtype_size(md->dtype);
  if (pos) memcpy(pos, m->pos, bytes);
  if (vel) memcpy(vel, m->vel, bytes);
  return 0;
}

static int split_get_forces(rcl_md *md, int64_t *fixed, void *native_force) {
  split_md *m = md->bs;
  (void)native_force;
  memcpy(fixed, m->f, 3 * md->n * sizeof *fixed);
  return 0;
}

static int split_check(rcl_md *md) {
  (void)md; /* every error is reported where it happens */
  return 0;
}

static const md_backend split_backend = {split_init, split_destroy,   split_set_coef,   split_forces, split_step,
                                         split_sums, split_get_state, split_get_forces, NULL,         split_check,
                                         NULL};

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
