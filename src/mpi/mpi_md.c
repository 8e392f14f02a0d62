/* Molecular dynamics over MPI ranks (rcl_mpi_md_create): the spatial decomposition of the in-process split
 * (src/split/split_md.c, whose header comment says why the bits are one device's; the shared pieces are
 * src/md/md_domain.c's), with one slab per rank and messages where the split copies on the host:
 *
 *   - creation: root reads nothing more than the caller's system; it owns every atom until the first
 *     decomposition, which migrates each atom to its slab's rank (one MPI_Alltoallv) — the root holds the whole
 *     system only then; afterwards a rank holds its owned atoms and their ghosts only;
 *   - every step (md_domain.c's device-resident md_dom_part, as the split's): the first half of the step on
 *     the rank's device (its owned atoms and ghosts stay there between decompositions), the rebuild test (the
 *     device's displacement flag: an MPI_Allreduce(MAX) of each rank's), then either the ghosts' positions from
 *     their owners (gathered on the owner's device, one MPI_Alltoallv of their bytes, scattered on the
 *     receiver's device) or at a rebuild a new decomposition: the owned atoms' state from the device, their
 *     migration to their new slabs' ranks and new ghost lists (each owned atom within (cutoff + skin) * 1.001
 *     of another rank's slab, nearest periodic image, is sent to it: from several ranks when slabs are thin)
 *     and a new local simulation; then the forces and the second kick on the device;
 *   - thermo: each rank's exact sums (md_sum: normalised int64 pieces, no overflow) gathered to every rank and
 *     added in rank order, then halved exactly: the same values on every rank.
 *
 * Every failure (an allocation, a device error, an overflow naming the step, an atom lost) is agreed with
 * rcl_mpi_agree before the next collective call, so every rank returns the same status and none waits. Records
 * travel as binary64 (exact for f32 and f64 values, types and atom indices below 2^30); ghost positions as the
 * kernels hold them (4 reals of the dtype, the type tag in w). */
#include <limits.h>
#include <string.h>

#include "md/md_internal.h"
#include "mpi/mpi_internal.h"
#include "reprocl/split.h"

#define SLAB_UNITS ((size_t)1 << 20) /* the slabs cut the axis on multiples of len / 2^20, as the split's */
enum { MIG_W = 8 };                  /* doubles per migrating atom (index, type, pos, vel) */
enum { PH_STATE, PH_PACK, PH_MPI, PH_UNPACK, PH_GHOSTS, PH_FILL, PH_BUILD, PH_N = RCL_MPI_MD_DECOMPOSE_PHASES };

typedef struct {   /* a set of owned atoms: their host buffers kept and grown between decompositions (caps: bytes) */
  size_t *glob;    /* system indices */
  int *type;       /* 0-based */
  void *pos, *vel; /* dtype values */
  size_t cap[4];
} own_set;

typedef struct {
  MPI_Comm comm; /* a duplicate of the caller's, errors returned */
  int size, rank, dup;
  int axis;
  double *bound; /* size + 1 slab boundaries */
  /* the owned atoms (host copies: current at a decomposition): own[cur]; a migration that reorders them
   * writes the other set */
  size_t nown, nleave;
  own_set own[2];
  int cur;
  /* a decomposition's scratch, kept: the owned atoms' coordinates along the axis and slabs, the migrants */
  double *x, *mig_s, *mig_r;
  size_t *dest, cap_x, cap_dest, cap_mig_s, cap_mig_r, cap_send, cap_sbuf, cap_rbuf;
  /* the ghost exchange, fixed between decompositions: per rank, in bytes (4 reals of the dtype per atom) */
  int *scount, *sdispl, *rcount, *rdispl;
  size_t nsend, nghost;
  size_t *send;       /* owned atoms sent, grouped by destination rank */
  void *sbuf, *rbuf;  /* the ghosts' first exchange at a decomposition */
  md_dom_part p;      /* the local simulation on the device: owned atoms, then ghosts */
  int64_t *sums;      /* 6 per rank: the thermo sums' pieces */
  double seconds[3];  /* in the ghost exchange, in decompositions, in the steps' device work (wall clock) */
  double phase[PH_N]; /* the decompositions' phases (rcl_mpi_md_decompose_times) */
  int decomposed;
} mpi_md;

typedef struct { /* what rcl_mpi_md_create hands to init */
  MPI_Comm comm;
  int root;
  rcl_context *ctx;
  const rcl_md_lj *lj;
  rcl_md_options o;
} mpi_md_arg;

static const md_backend mpi_backend;

static int agree(const mpi_md *m, int rc) { return rcl_mpi_agree(m->comm, rc, NULL); }

/* ---- the owned atoms ------------------------------------------------------------------------------ */

/* Room for n owned atoms in s (its contents kept). */
static int own_room(const rcl_md *md, own_set *s, size_t n) {
  size_t k = n ? n : 1, es = rcl_dtype_size(md->dtype);
  void **p[] = {(void **)&s->glob, (void **)&s->type, &s->pos, &s->vel};
  size_t bytes[] = {k * sizeof *s->glob, k * sizeof *s->type, 3 * k * es, 3 * k * es};
  for (int i = 0; i < 4; i++)
    if (rcl__grow(p[i], &s->cap[i], bytes[i])) return RCL_ERR_OUT_OF_MEMORY;
  return 0;
}

/* Root owns the whole system (rounded to the dtype) until the first decomposition. */
static int own_system(rcl_md *md, mpi_md *m, const rcl_md_system *sys) {
  own_set *s = &m->own[m->cur];
  int rc = own_room(md, s, md->n);
  if (rc) return rc;
  m->nown = md->n;
  for (size_t i = 0; i < md->n; i++) {
    s->glob[i] = i;
    s->type[i] = sys->type[i] - 1;
  }
  for (size_t i = 0; i < 3 * md->n; i++) {
    md_put_real(s->pos, i, md->dtype, sys->pos[i]);
    md_put_real(s->vel, i, md->dtype, sys->vel ? sys->vel[i] : 0.0);
  }
  return 0;
}

/* The per-rank counts of an exchange of elements of elem bytes (scount set): every rank's receive counts and
 * displacements, *rbuf (kept, *cap bytes) grown for them (*rtotal elements). Collective; the status agreed. */
static int exchange_counts(mpi_md *m, size_t elem, void **rbuf, size_t *cap, size_t *rtotal) {
  int rc = rcl__mpi_check(MPI_Alltoall(m->scount, 1, MPI_INT, m->rcount, 1, MPI_INT, m->comm), "MPI_Alltoall (MD)");
  if (rc) return rc;
  size_t st = 0, rt = 0;
  for (int k = 0; k < m->size; k++) {
    m->sdispl[k] = (int)st;
    m->rdispl[k] = (int)rt;
    st += (size_t)m->scount[k];
    rt += (size_t)m->rcount[k];
  }
  if (rt > INT_MAX) rc = rcl__fail(RCL_ERR_OVERFLOW, "MPI MD: %zu items to receive exceed MPI's count limit", rt);
  if (!rc) rc = rcl__grow(rbuf, cap, (rt ? rt : 1) * elem);
  *rtotal = rt;
  return agree(m, rc);
}

static int exchange(const mpi_md *m, const void *sbuf, void *rbuf, MPI_Datatype type) {
  return rcl__mpi_check(MPI_Alltoallv(sbuf, m->scount, m->sdispl, type, rbuf, m->rcount, m->rdispl, type, m->comm),
                        "MPI_Alltoallv (MD)");
}

/* The owned atoms that leave this rank's slab packed by the rank of their new slab (MIG_W doubles each, in owned
 * order within a rank); m->dest holds every owned atom's slab, m->nleave their count. */
static int pack_migrants(rcl_md *md, mpi_md *m) {
  const own_set *s = &m->own[m->cur];
  size_t n = m->nown, nleave = 0;
  m->nleave = 0;
  if (m->size == 1) return 0; /* every atom stays */
  if (rcl__grow((void **)&m->x, &m->cap_x, (n ? n : 1) * sizeof *m->x) ||
      rcl__grow((void **)&m->dest, &m->cap_dest, (n ? n : 1) * sizeof *m->dest))
    return RCL_ERR_OUT_OF_MEMORY;
  rcl__md_dom_axis_coords(m->x, md, s->pos, n, m->axis);
  rcl__md_dom_slabs(m->dest, m->bound, (size_t)m->size, m->x, n);
  memset(m->scount, 0, (size_t)m->size * sizeof *m->scount);
  for (size_t i = 0; i < n; i++) nleave += m->dest[i] != (size_t)m->rank;
  m->nleave = nleave;
  if (nleave * MIG_W > INT_MAX)
    return rcl__fail(RCL_ERR_OVERFLOW, "MPI MD: %zu atoms leaving rank %d exceed MPI's count limit", nleave, m->rank);
  if (rcl__grow((void **)&m->mig_s, &m->cap_mig_s, (nleave ? nleave : 1) * MIG_W * sizeof *m->mig_s))
    return RCL_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n; i++)
    if (m->dest[i] != (size_t)m->rank) m->scount[m->dest[i]] += MIG_W;
  for (int k = 0, at = 0; k < m->size; k++) { /* sdispl: the write positions */
    m->sdispl[k] = at;
    at += m->scount[k];
  }
  for (size_t i = 0; i < n; i++) {
    if (m->dest[i] == (size_t)m->rank) continue;
    double *p = m->mig_s + m->sdispl[m->dest[i]];
    m->sdispl[m->dest[i]] += MIG_W;
    p[0] = (double)s->glob[i];
    p[1] = s->type[i];
    for (size_t d = 0; d < 3; d++) {
      p[2 + d] = md_dom_real(s->pos, 3 * i + d, md->dtype);
      p[5 + d] = md_dom_real(s->vel, 3 * i + d, md->dtype);
    }
  }
  return 0;
}

/* count migrant records into s from atom at on. */
static void put_records(const rcl_md *md, own_set *s, size_t at, const double *rec, size_t count) {
  for (size_t i = 0; i < count; i++, at++) {
    const double *p = rec + MIG_W * i;
    s->glob[at] = (size_t)p[0];
    s->type[at] = (int)p[1];
    for (size_t d = 0; d < 3; d++) {
      md_put_real(s->pos, 3 * at + d, md->dtype, p[2 + d]);
      md_put_real(s->vel, 3 * at + d, md->dtype, p[5 + d]);
    }
  }
}

/* Owned atoms [i, j) of a (all staying) to b from atom at on. */
static void copy_run(const rcl_md *md, own_set *b, size_t at, const own_set *a, size_t i, size_t j) {
  size_t r3 = 3 * rcl_dtype_size(md->dtype);
  memcpy(b->glob + at, a->glob + i, (j - i) * sizeof *b->glob);
  memcpy(b->type + at, a->type + i, (j - i) * sizeof *b->type);
  memcpy((char *)b->pos + at * r3, (const char *)a->pos + i * r3, (j - i) * r3);
  memcpy((char *)b->vel + at * r3, (const char *)a->vel + i * r3, (j - i) * r3);
}

/* The new owned atoms in the order a migration of every atom through MPI_Alltoallv would give (by source rank,
 * each in its owned order): those from ranks below this one, those that stay, those from ranks above. In place
 * when none leaves and none comes from below (always with one rank); else into the other set. */
static int unpack_migrants(rcl_md *md, mpi_md *m, size_t nrecv) {
  own_set *a = &m->own[m->cur], *b = &m->own[!m->cur];
  size_t nstay = m->nown - m->nleave, nbelow = m->size > 1 ? (size_t)m->rdispl[m->rank] / MIG_W : 0;
  if (m->nleave == 0 && nbelow == 0) {
    if (own_room(md, a, nstay + nrecv)) return RCL_ERR_OUT_OF_MEMORY;
    put_records(md, a, nstay, m->mig_r, nrecv);
  } else {
    if (own_room(md, b, nstay + nrecv)) return RCL_ERR_OUT_OF_MEMORY;
    put_records(md, b, 0, m->mig_r, nbelow);
    size_t at = nbelow;
    for (size_t i = 0, j; i < m->nown; i = j) { /* runs of staying atoms */
      for (j = i; j < m->nown && m->dest[j] == (size_t)m->rank; j++) {
      }
      copy_run(md, b, at, a, i, j);
      at += j - i;
      if (j == i) j++;
    }
    put_records(md, b, at, m->mig_r + MIG_W * nbelow, nrecv - nbelow);
    m->cur = !m->cur;
  }
  m->nown = nstay + nrecv;
  return 0;
}

/* Every owned atom to the rank of its slab (only those that change rank travel; none with one rank); the total
 * checked (an atom lost is an error, not a wrong run). */
static int migrate(rcl_md *md, mpi_md *m) {
  double t0 = MPI_Wtime();
  size_t rt = 0;
  int rc = pack_migrants(md, m);
  double t1 = MPI_Wtime();
  rc = agree(m, rc);
  if (!rc && m->size > 1) rc = exchange_counts(m, sizeof *m->mig_r, (void **)&m->mig_r, &m->cap_mig_r, &rt);
  if (!rc && m->size > 1) rc = exchange(m, m->mig_s, m->mig_r, MPI_DOUBLE);
  double t2 = MPI_Wtime(), t3 = t2;
  if (!rc) {
    rc = unpack_migrants(md, m, rt / MIG_W);
    t3 = MPI_Wtime();
    rc = agree(m, rc);
  }
  if (!rc) {
    unsigned long long mine = m->nown, all = 0;
    rc = rcl__mpi_check(MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, m->comm), "MPI_Allreduce");
    if (!rc && all != md->n)
      rc = rcl__fail(RCL_ERR_INTERNAL, "MPI MD: %llu atoms of %zu after the migration at step %zu (a bug)", all, md->n,
                     md->step);
  }
  m->phase[PH_PACK] += t1 - t0; /* the agreements (waits for the other ranks) are the messages' */
  m->phase[PH_MPI] += t2 - t1 + MPI_Wtime() - t3;
  m->phase[PH_UNPACK] += t3 - t2;
  return rc;
}

/* ---- ghosts and the local system -------------------------------------------------------------------- */

/* The send list: each owned atom near another rank's non-empty slab, for that rank (counts in scount). */
static int ghost_lists(rcl_md *md, mpi_md *m) {
  size_t r4 = 4 * rcl_dtype_size(md->dtype), n = m->nown, ns = 0;
  m->nsend = 0;
  m->scount[0] = 0;
  if (m->size == 1) return 0; /* no other slab */
  if (rcl__grow((void **)&m->x, &m->cap_x, (n ? n : 1) * sizeof *m->x)) return RCL_ERR_OUT_OF_MEMORY;
  rcl__md_dom_axis_coords(m->x, md, m->own[m->cur].pos, n, m->axis);
  for (int pass = 0; pass < 2; pass++) {
    ns = 0;
    for (int k = 0; k < m->size; k++) {
      if (pass == 0) m->scount[k] = 0;
      if (k == m->rank || !(m->bound[k + 1] > m->bound[k])) continue;
      size_t c = rcl__md_dom_near_list(pass ? m->send + ns : NULL, md, m->axis, m->bound, (size_t)k, m->x, n, NULL);
      if (pass == 0 && c * r4 <= INT_MAX) m->scount[k] = (int)(c * r4);
      ns += c;
    }
    if (pass) break;
    if (ns * r4 > INT_MAX)
      return rcl__fail(RCL_ERR_OVERFLOW, "MPI MD: %zu ghosts from rank %d exceed MPI's count limit", ns, m->rank);
    if (rcl__grow((void **)&m->send, &m->cap_send, (ns ? ns : 1) * sizeof *m->send) ||
        rcl__grow(&m->sbuf, &m->cap_sbuf, (ns ? ns : 1) * r4))
      return RCL_ERR_OUT_OF_MEMORY;
  }
  m->nsend = ns;
  return 0;
}

/* The positions of the atoms sent as the kernels hold them (4 reals of the dtype, the type tag in w). */
static void pack_ghosts(rcl_md *md, mpi_md *m) {
  const own_set *s = &m->own[m->cur];
  for (size_t j = 0; j < m->nsend; j++) {
    size_t i = m->send[j];
    if (md->dtype == RCL_F32) {
      float *o = (float *)m->sbuf + 4 * j;
      const float *q = (const float *)s->pos + 3 * i;
      uint32_t w = md_type_bits32(s->type[i]);
      o[0] = q[0], o[1] = q[1], o[2] = q[2];
      memcpy(o + 3, &w, sizeof w);
    } else {
      double *o = (double *)m->sbuf + 4 * j;
      const double *q = (const double *)s->pos + 3 * i;
      uint64_t w = md_type_bits64(s->type[i]);
      o[0] = q[0], o[1] = q[1], o[2] = q[2];
      memcpy(o + 3, &w, sizeof w);
    }
  }
}

/* The local system: the owned atoms with their velocities, then the ghosts received. */
static int local_fill(rcl_md *md, mpi_md *m) {
  const own_set *s = &m->own[m->cur];
  size_t es = rcl_dtype_size(md->dtype), no = m->nown;
  md_dom_part *p = &m->p;
  int rc = rcl__md_dom_part_alloc(p, md, no, no + m->nghost);
  if (rc) return rc;
  for (size_t i = 0; i < no; i++) p->sys.type[i] = s->type[i] + 1;
  rcl__md_dom_reals(p->sys.pos, 1, s->pos, 1, 3 * no, md->dtype);
  rcl__md_dom_reals(p->sys.vel, 1, s->vel, 1, 3 * no, md->dtype);
  for (size_t j = 0; j < m->nghost; j++) { /* the type's low bits (little end) */
    unsigned char w = ((const unsigned char *)m->rbuf)[(4 * j + 3) * es];
    p->sys.type[no + j] = (int)w + 1;
  }
  for (size_t d = 0; d < 3; d++) /* element 4 j + d of the received reals */
    rcl__md_dom_reals(p->sys.pos + 3 * no + d, 3, (const char *)m->rbuf + d * es, 4, m->nghost, md->dtype);
  return 0;
}

/* The local system at a decomposition: the owned atoms with their velocities, then the ghosts from their
 * owners (one MPI_Alltoallv of the positions as the kernels hold them); its local simulation. */
static int local_system(rcl_md *md, mpi_md *m) {
  size_t es = rcl_dtype_size(md->dtype), rt = 0;
  double t0 = MPI_Wtime();
  int rc = exchange_counts(m, 1, &m->rbuf, &m->cap_rbuf, &rt); /* counts in bytes */
  if (rc) return rc;
  m->nghost = rt / (4 * es);
  pack_ghosts(md, m);
  if ((rc = exchange(m, m->sbuf, m->rbuf, MPI_BYTE)) != 0) return rc;
  double t1 = MPI_Wtime();
  rc = local_fill(md, m);
  double t2 = MPI_Wtime(); /* the agreements (waits for the other ranks) are the build's */
  if (!(rc = agree(m, rc))) rc = agree(m, rcl__md_dom_part_build(&m->p, md, m->send, m->nsend));
  m->phase[PH_GHOSTS] += t1 - t0;
  m->phase[PH_FILL] += t2 - t1;
  m->phase[PH_BUILD] += MPI_Wtime() - t2;
  return rc;
}

/* A decomposition at the current positions: the owned atoms' state from the device, migration, ghost lists, the
 * local simulation (its creation computes the forces). */
static int decompose(rcl_md *md, mpi_md *m) {
  double t0 = MPI_Wtime();
  own_set *s = &m->own[m->cur];
  int rc = agree(m, m->decomposed ? rcl__md_dom_part_state(&m->p, s->pos, s->vel, NULL) : 0);
  m->phase[PH_STATE] += MPI_Wtime() - t0;
  if (!rc) rc = migrate(md, m);
  double t1 = MPI_Wtime();
  if (!rc) rc = agree(m, ghost_lists(md, m));
  m->phase[PH_GHOSTS] += MPI_Wtime() - t1;
  if (!rc) rc = local_system(md, m);
  m->seconds[1] += MPI_Wtime() - t0;
  if (rc) return rc;
  m->decomposed = 1;
  md->builds++;
  return 0;
}

/* ---- the backend ---------------------------------------------------------------------------------- */

/* The forces at the current positions: the first decomposition, or the local simulation's. */
static int mpi_forces(rcl_md *md, int ev) {
  mpi_md *m = md->bs;
  if (!m->decomposed) return decompose(md, m);
  return agree(m, rcl__md_dom_part_forces(&m->p, md, ev));
}

/* One velocity-Verlet step (contract md.nve) on the rank's device: the first half, the rebuild test over every
 * rank, the ghost exchange or a new decomposition, the second half. */
static int mpi_step(rcl_md *md, int ev, int complete) {
  mpi_md *m = md->bs;
  double t[4] = {MPI_Wtime(), 0, 0, 0};
  int far = 0, any = 0, rc = agree(m, rcl__md_dom_part_half1(&m->p, md, &far));
  t[1] = MPI_Wtime();
  if (!rc) rc = rcl__mpi_check(MPI_Allreduce(&far, &any, 1, MPI_INT, MPI_MAX, m->comm), "MPI_Allreduce (MD rebuild)");
  if (!rc && any) rc = decompose(md, m); /* timed there */
  t[2] = MPI_Wtime();
  if (!rc && !any) rc = exchange(m, m->p.sent, m->p.ghost, MPI_BYTE);
  t[3] = MPI_Wtime();
  if (!rc) rc = agree(m, rcl__md_dom_part_half2(&m->p, !any, ev, complete));
  m->seconds[0] += t[3] - t[2] + (any ? 0 : t[2] - t[1]); /* the agreement, the rebuild test, the messages */
  m->seconds[2] += t[1] - t[0] + MPI_Wtime() - t[3];
  return rc;
}

/* The exact sums of every rank, added in rank order on every rank. */
static int mpi_sums(rcl_md *md, md_sums *out) {
  mpi_md *m = md->bs;
  memset(out, 0, sizeof *out);
  md_sum s[3];
  int rc = agree(m, rcl__md_dom_part_sums(&m->p, md, s));
  if (rc) return rc;
  int64_t mine[6];
  for (int k = 0; k < 3; k++) {
    md_sum_normalize(&s[k]); /* lo in [0, 2^32): the pieces of every rank add without overflow */
    mine[2 * k] = s[k].hi;
    mine[2 * k + 1] = s[k].lo;
  }
  rc = rcl__mpi_check(MPI_Allgather(mine, 6, MPI_INT64_T, m->sums, 6, MPI_INT64_T, m->comm), "MPI_Allgather (MD)");
  if (rc) return rc;
  md_sum *t[3] = {&out->pe, &out->virial, &out->mv2};
  for (int r = 0; r < m->size; r++)
    for (int k = 0; k < 3; k++) {
      t[k]->hi += m->sums[6 * r + 2 * k];
      t[k]->lo += m->sums[6 * r + 2 * k + 1];
      md_sum_normalize(t[k]);
    }
  return rcl__md_dom_halve(&out->pe, &out->virial, "MPI MD");
}

static void mpi_destroy(rcl_md *md) {
  mpi_md *m = md->bs;
  if (!m) return;
  rcl__md_dom_part_free(&m->p);
  void *p[] = {m->bound,  m->x,      m->mig_s, m->mig_r, m->dest, m->scount, m->sdispl,
               m->rcount, m->rdispl, m->send,  m->sbuf,  m->rbuf, m->sums};
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) rcl__free(p[i]);
  for (int k = 0; k < 2; k++) {
    rcl__free(m->own[k].glob);
    rcl__free(m->own[k].type);
    rcl__free(m->own[k].pos);
    rcl__free(m->own[k].vel);
  }
  if (m->dup) MPI_Comm_free(&m->comm);
  rcl__free(m);
  md->bs = NULL;
}

static int mpi_set_coef(rcl_md *md) {
  mpi_md *m = md->bs;
  return agree(m, rcl__md_dom_part_coef(&m->p, md));
}

/* The per-rank arrays and the slab boundaries (equal lengths). */
static int init_arrays(rcl_md *md, mpi_md *m) {
  size_t c = (size_t)m->size;
  m->bound = rcl__malloc((c + 1) * sizeof *m->bound);
  int **ip[] = {&m->scount, &m->sdispl, &m->rcount, &m->rdispl};
  for (int i = 0; i < 4; i++) *ip[i] = rcl__calloc(c, sizeof(int));
  m->sums = rcl__malloc(6 * c * sizeof *m->sums);
  double *w = rcl__malloc(c * sizeof *w);
  size_t *units = rcl__malloc((c + 1) * sizeof *units);
  int rc =
      m->bound && m->scount && m->sdispl && m->rcount && m->rdispl && m->sums && w && units ? 0 : RCL_ERR_OUT_OF_MEMORY;
  for (size_t k = 0; !rc && k < c; k++) w[k] = 1.0;
  if (!rc) rc = rcl_split_partition(units, w, c, SLAB_UNITS, 1);
  if (!rc) rcl__md_dom_bounds(m->bound, units, c, SLAB_UNITS, md->lo[m->axis], md->hi[m->axis]);
  rcl__free(w);
  rcl__free(units);
  return rc;
}

static int mpi_init(rcl_md *md, const rcl_md_system *sys) {
  const mpi_md_arg *a = md->be_arg;
  mpi_md *m = rcl__calloc(1, sizeof *m);
  int rc = m ? rcl__mpi_shape(&m->size, &m->rank, a->comm) : RCL_ERR_OUT_OF_MEMORY;
  md->bs = m;
  if (!rc) {
    m->p.ctx = a->ctx;
    m->p.lj = *a->lj;
    m->p.o = a->o;
    m->axis = rcl__md_dom_axis(md->lo, md->hi);
    rc = init_arrays(md, m);
  }
  if ((rc = rcl_mpi_agree(a->comm, rc, NULL)) != 0) return rc;
  rc = rcl__mpi_check(MPI_Comm_dup(a->comm, &m->comm), "MPI_Comm_dup");
  m->dup = !rc;
  if (!rc) rc = rcl__mpi_check(MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  if (!rc && m->rank == a->root) rc = own_system(md, m, sys); /* root owns every atom until the first forces */
  return m && m->dup ? agree(m, rc) : rc;
}

static int mpi_get_state(rcl_md *md, void *pos, void *vel) {
  (void)md, (void)pos, (void)vel;
  return rcl__fail(RCL_ERR_INVALID_ARG, "an MPI simulation's state is distributed: use rcl_mpi_md_gather_state");
}

static int mpi_get_forces(rcl_md *md, int64_t *fixed, void *native_force) {
  (void)native_force;
  return mpi_get_state(md, fixed, NULL);
}

static int mpi_check(rcl_md *md) { /* errors the device flagged since its last status read */
  mpi_md *m = md->bs;
  return agree(m, rcl__md_dom_part_check(&m->p));
}

static int mpi_stats(rcl_md *md, rcl_md_stats *out) { /* this rank's device: not collective */
  mpi_md *m = md->bs;
  rcl_md_stats st;
  int rc = rcl__md_dom_part_stats(&m->p, &st);
  out->neighbor_pairs = st.neighbor_pairs;
  out->force_seconds = st.force_seconds;
  out->build_seconds = st.build_seconds;
  out->integrate_seconds = st.integrate_seconds;
  return rc;
}

static const md_backend mpi_backend = {mpi_init,      mpi_destroy,    mpi_set_coef, mpi_forces, mpi_step, mpi_sums,
                                       mpi_get_state, mpi_get_forces, NULL,         mpi_check,  mpi_stats};

/* ---- creation and the gathered state -------------------------------------------------------------- */

/* What root checked and every rank needs. */
typedef struct {
  int status, dtype, ntypes;
  size_t natoms;
  double lo[3], hi[3], mass[RCL_MD_MAX_TYPES];
  int periodic[3];
  rcl_md_options o;
  rcl_md_lj lj;
} md_head;

/* This rank's own checks: its device runs the dtype and the path bit-exactly. */
static int rank_checks(rcl_context *ctx, rcl_dtype dtype, rcl_md_path path) {
  if (!ctx) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_md_create: NULL context");
  const rcl_device_profile *p = rcl_context_profile(ctx);
  if (rcl_context_mode(ctx) == RCL_MODE_NATIVE)
    return rcl__fail(RCL_ERR_UNSUPPORTED, "rcl_mpi_md_create: %s is in native mode (no bit promise)", p->device_name);
  if (rcl_device_profile_support(p, RCL_FAMILY_MD, dtype, NULL) == RCL_SUPPORT_NONE)
    return rcl__fail(RCL_ERR_UNSUPPORTED, "%s cannot run MD in %s bit-exactly", p->device_name, rcl_dtype_name(dtype));
  if (path == RCL_MD_PATH_SYMMETRIC && !p->int64_atomics)
    return rcl__fail(RCL_ERR_UNSUPPORTED, "%s cannot run the symmetric MD path: it has no 64-bit integer atomics",
                     p->device_name);
  return 0;
}

/* Root's checks of the arguments, broadcast with the header every rank builds its simulation from. */
static int create_head(md_head *h, rcl_md **out, MPI_Comm comm, int root, rcl_dtype dtype, const rcl_md_system *sys,
                       const rcl_md_lj *lj, const rcl_md_options *opts) {
  int size, rank, rc = rcl__mpi_shape(&size, &rank, comm);
  if (rc) return rc;
  if (root < 0 || root >= size)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_md_create: root %d is not a rank of %d", root, size);
  memset(h, 0, sizeof *h);
  if (rank == root) {
    h->status = rcl__md_prepare(&h->o, out, NULL, dtype, sys, lj, opts);
    if (!h->status) {
      h->natoms = sys->natoms;
      h->ntypes = sys->ntypes;
      memcpy(h->lo, sys->lo, sizeof h->lo);
      memcpy(h->hi, sys->hi, sizeof h->hi);
      memcpy(h->mass, sys->mass, sizeof h->mass);
      memcpy(h->periodic, sys->periodic, sizeof h->periodic);
      h->lj = *lj;
    }
  }
  h->dtype = (int)dtype;
  rc = rcl_mpi_agree(comm, rank == root ? h->status : 0, NULL);
  if (!rc) rc = rcl__mpi_check(MPI_Bcast(h, (int)sizeof *h, MPI_BYTE, root, comm), "MPI_Bcast (MD header)");
  if (rc) return rc;
  if (h->dtype != (int)dtype)
    rc = rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_md_create: dtype %s differs from root's", rcl_dtype_name(dtype));
  return rc;
}

int rcl_mpi_md_create(rcl_md **out, MPI_Comm comm, int root, rcl_context *ctx, rcl_dtype dtype,
                      const rcl_md_system *sys, const rcl_md_lj *lj, const rcl_md_options *opts) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_md_create: NULL output");
  *out = NULL;
  md_head h;
  int rc = create_head(&h, out, comm, root, dtype, sys, lj, opts);
  if (rc == 0 || h.status == 0) rc = rcl_mpi_agree(comm, rc ? rc : rank_checks(ctx, dtype, h.o.path), NULL);
  if (rc) return rc;
  rcl_md_system head = {0};
  head.natoms = h.natoms;
  head.ntypes = h.ntypes;
  memcpy(head.lo, h.lo, sizeof h.lo);
  memcpy(head.hi, h.hi, sizeof h.hi);
  memcpy(head.mass, h.mass, sizeof h.mass);
  memcpy(head.periodic, h.periodic, sizeof h.periodic);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  mpi_md_arg a = {comm, root, ctx, &h.lj, h.o};
  return rcl__md_build_be(out, &mpi_backend, &a, 0, NULL, NULL, dtype, rank == root ? sys : &head, &h.lj, h.o, NULL);
}

/* One atom of the gathered state. */
typedef struct {
  int64_t glob, f[3];
  double pos[3], vel[3];
} state_rec;

/* Root's receive counts and displacements (bytes) and buffer for every rank's records; agreed. */
static int gather_room(mpi_md *m, int root, int mine, int *count, int *displ, state_rec **all) {
  int rc = rcl__mpi_check(MPI_Gather(&mine, 1, MPI_INT, count, 1, MPI_INT, root, m->comm), "MPI_Gather (MD)");
  if (!rc && m->rank == root) {
    size_t total = 0;
    for (int k = 0; k < m->size; k++) {
      displ[k] = (int)total;
      total += (size_t)count[k];
    }
    *all = rcl__malloc(total ? total : 1);
    if (!*all) rc = RCL_ERR_OUT_OF_MEMORY;
  }
  return agree(m, rc);
}

/* Root places the records by system index; every atom exactly once. */
static int gather_place(rcl_md *md, const state_rec *all, size_t nrec, void *pos, void *vel, int64_t *forces) {
  if (nrec != md->n)
    return rcl__fail(RCL_ERR_INTERNAL, "MPI MD: %zu atoms gathered of %zu (a bug; please report)", nrec, md->n);
  for (size_t r = 0; r < nrec; r++) {
    size_t g = (size_t)all[r].glob;
    for (size_t d = 0; d < 3; d++) {
      if (pos) md_put_real(pos, 3 * g + d, md->dtype, all[r].pos[d]);
      if (vel) md_put_real(vel, 3 * g + d, md->dtype, all[r].vel[d]);
      if (forces) forces[3 * g + d] = all[r].f[d];
    }
  }
  return 0;
}

int rcl_mpi_md_times(double t[3], const rcl_md *md) {
  if (!t || !md || md->be != &mpi_backend)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_md_times: not a simulation of rcl_mpi_md_create");
  const mpi_md *m = md->bs;
  memcpy(t, m->seconds, sizeof m->seconds);
  return 0;
}

int rcl_mpi_md_decompose_times(double t[RCL_MPI_MD_DECOMPOSE_PHASES], const rcl_md *md) {
  if (!t || !md || md->be != &mpi_backend)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_md_decompose_times: not a simulation of rcl_mpi_md_create");
  const mpi_md *m = md->bs;
  memcpy(t, m->phase, sizeof m->phase);
  return 0;
}

/* mpi_internal.h */
int rcl__mpi_md_local_counts(size_t counts[3], const rcl_md *md) {
  if (!counts || !md || md->be != &mpi_backend)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl__mpi_md_local_counts: not a simulation of rcl_mpi_md_create");
  const mpi_md *m = md->bs;
  counts[0] = m->p.reloads;
  counts[1] = m->p.refusals;
  counts[2] = m->p.creations;
  return 0;
}

int rcl_mpi_md_gather_state(void *pos, void *vel, int64_t *forces, rcl_md *md, int root) {
  if (!md || md->be != &mpi_backend)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_md_gather_state: not a simulation of rcl_mpi_md_create");
  mpi_md *m = md->bs;
  if (root < 0 || root >= m->size)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_md_gather_state: root %d is not a rank of %d", root, m->size);
  int *count = rcl__calloc(2 * (size_t)m->size, sizeof *count), rc = 0;
  state_rec *mine = rcl__malloc((m->nown ? m->nown : 1) * sizeof *mine), *all = NULL;
  int64_t *fq = rcl__malloc(3 * (m->nown ? m->nown : 1) * sizeof *fq);
  if (!count || !mine || !fq) rc = RCL_ERR_OUT_OF_MEMORY;
  const own_set *s = &m->own[m->cur];
  if (!rc) rc = rcl__md_dom_part_state(&m->p, s->pos, s->vel, fq);
  if (!rc && m->nown * sizeof *mine > INT_MAX)
    rc = rcl__fail(RCL_ERR_OVERFLOW, "MPI MD: the state of %zu atoms exceeds MPI's count limit", m->nown);
  for (size_t i = 0; !rc && i < m->nown; i++) {
    mine[i].glob = (int64_t)s->glob[i];
    for (size_t d = 0; d < 3; d++) {
      mine[i].f[d] = fq[3 * i + d];
      mine[i].pos[d] = md_dom_real(s->pos, 3 * i + d, md->dtype);
      mine[i].vel[d] = md_dom_real(s->vel, 3 * i + d, md->dtype);
    }
  }
  if (!(rc = agree(m, rc))) rc = gather_room(m, root, (int)(m->nown * sizeof *mine), count, count + m->size, &all);
  if (!rc)
    rc = rcl__mpi_check(MPI_Gatherv(mine, (int)(m->nown * sizeof *mine), MPI_BYTE, all, count, count + m->size,
                                    MPI_BYTE, root, m->comm),
                        "MPI_Gatherv (MD state)");
  if (!rc && m->rank == root) {
    size_t total = 0;
    for (int k = 0; k < m->size; k++) total += (size_t)count[k];
    rc = gather_place(md, all, total / sizeof *all, pos, vel, forces);
  }
  rcl__free(count);
  rcl__free(mine);
  rcl__free(fq);
  rcl__free(all);
  return agree(m, rc);
}
