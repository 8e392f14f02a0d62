/* Internals of the molecular-dynamics family. Its files, each using only those below it:
 *   md.c         the public front: rcl_md_create (checks, the tuner's launch values, the simulation)
 *   md_tune.c    the tuner's descriptors (they create and run simulations through md_sim.c)
 *   md_sim.c     the simulation: checks, coefficient tables, creation with explicit launch values, the
 *                step loop, thermo quantities, accessors
 *   md_device.c  the OpenCL backend and its launch planner; md_ref.c the host C reference backend
 *   md_io.c      readers (LAMMPS data, extended XYZ), the lattice generator, XYZ output
 *   md_fixed.c   exact fixed-point totals and the status-bit errors (the simulation and both backends)
 *   md_system.c  the names of MD's enumerations, the system object and LJ pair coefficients */
#ifndef REPROCL_MD_INTERNAL_H
#define REPROCL_MD_INTERNAL_H
#include <string.h>

#include "core/internal.h"
#include "reprocl/md.h"
#include "build/program.h"
#include "tune/params.h"
#include "tune/tune.h"

/* Keep in sync with cl/md.cl. */
#define MD_ERR_RANGE 1u
#define MD_ERR_NONFINITE 2u
#define MD_ERR_CAPACITY 4u
#define MD_ERR_PARTNERS 8u
#define MD_ERR_KINETIC 16u
#define MD_ERR_ESCAPED 32u
#define MD_ERR_CELLS 64u
#define MD_ERR_LOST 128u
#define MD_ERR_STALE 256u

/* Coefficient table layout (cl/md.cl): [lj1 | lj2 | lj3 | lj4 | offset] of nt*nt each, mass[nt], dtfm[nt]. */
#define MD_NCOEF(nt) (5 * (nt) * (nt) + 2 * (nt))
#define MD_C_LJ1(nt) 0
#define MD_C_LJ2(nt) ((nt) * (nt))
#define MD_C_LJ3(nt) (2 * (nt) * (nt))
#define MD_C_LJ4(nt) (3 * (nt) * (nt))
#define MD_C_OFF(nt) (4 * (nt) * (nt))
#define MD_C_MASS(nt) (5 * (nt) * (nt))
#define MD_C_DTFM(nt) (5 * (nt) * (nt) + (nt))

/* An exact fixed-point total: hi * 2^32 + lo, with lo in [0, 2^32) after md_sum_normalize (md_fixed.c). */
typedef struct {
  int64_t hi;
  int64_t lo;
} md_sum;
RCL_SIBLING void md_sum_add(md_sum *s, int64_t q); /* s += q */
RCL_SIBLING void md_sum_normalize(md_sum *s);      /* carries lo into hi */
double md_sum_to_double(md_sum s, int bits);       /* correctly rounded (s * 2^-bits) */
int md_sum_halve(md_sum *s);                       /* s /= 2; 0 if s was odd (a broken invariant) */

/* The thermo sums of one step, each pair counted once (contract md.thermo). */
typedef struct {
  md_sum pe, virial, mv2; /* fixed point: sum of pair energies, of r2 * fpair, of m v^2 */
  int native;             /* native mode: the floating-point sums below are used instead */
  double pe_f, virial_f, mv2_f;
} md_sums;

typedef struct md_backend md_backend;

struct rcl_md {
  rcl_context *ctx;       /* NULL: host reference */
  cl_command_queue queue; /* the queue of every command (the tuner's profiling queue); NULL: the context's */
  rcl_dtype dtype;
  int bits; /* fixed-point scale */
  size_t n;
  int nt;
  double lo[3], hi[3], len[3];
  int periodic[3];
  double cutoff, skin;
  rcl_md_path path;
  rcl_md_options opts;
  /* tables in binary64 (rounded to the dtype where they are used): coef as laid out for cl/md.cl */
  double coef[MD_NCOEF(RCL_MD_MAX_TYPES)];
  double mass[RCL_MD_MAX_TYPES];
  double dt; /* the time step the dtfm entries were made for (0: none yet) */
  size_t step;
  size_t steps_taken;
  size_t builds;
  int have_ev; /* the energy and virial of the current step were computed */
  const md_backend *be;
  void *bs;     /* backend state */
  void *be_arg; /* what rcl__md_build_be handed to the backend's init (NULL for the device and reference) */
};

struct md_backend {
  /* Uploads the system (rounded to the dtype) and builds what the backend needs. */
  int (*init)(rcl_md *md, const rcl_md_system *sys);
  void (*destroy)(rcl_md *md);
  /* New coefficient values (after dt changed). */
  int (*set_coef)(rcl_md *md);
  /* Forces at the current positions (energy and virial too with ev), rebuilding lists when needed. */
  int (*forces)(rcl_md *md, int ev);
  /* One velocity-Verlet step: half kick and drift, rebuild when needed, forces (ev), half kick. With
   * complete = 0 the backend may defer the last half kick into the next step (no one reads the state
   * in between). */
  int (*step)(rcl_md *md, int ev, int complete);
  /* The thermo sums of the current step (the last forces call computed ev). */
  int (*sums)(rcl_md *md, md_sums *out);
  int (*get_state)(rcl_md *md, void *pos, void *vel);
  int (*get_forces)(rcl_md *md, int64_t *fixed, void *native_force);
  int (*get_neighbors)(rcl_md *md, size_t atom, size_t *count, size_t *list, size_t cap);
  /* Reports any error the device flagged since the last check (end of a run). */
  int (*check)(rcl_md *md);
  /* Fills the backend's counters (kernel times, neighbour pairs); NULL: none. */
  int (*stats)(rcl_md *md, rcl_md_stats *out);
};

/* rcl_md_read on an open, seekable stream (md_io.c; the fuzz targets read from memory with fmemopen):
 * *out and lj as there, path names the input in messages. Does not close f. */
RCL_INTERNAL int rcl__md_read_stream(rcl_md_system **out, rcl_md_lj *lj, FILE *f, const char *path);

extern const md_backend rcl__md_ref_backend;
extern const md_backend rcl__md_device_backend;

/* The dtype value of a binary64 table entry (float rounding for f32). */
static inline void md_put_real(void *dst, size_t i, rcl_dtype dt, double v) {
  if (dt == RCL_F32) {
    float f = (float)v;
    memcpy((char *)dst + 4 * i, &f, 4);
  } else {
    memcpy((char *)dst + 8 * i, &v, 8);
  }
}
/* The type tag in the w of a position: 1.0 + type ulps, a normal number whatever the type. */
static inline uint32_t md_type_bits32(int t) { return 0x3f800000u | (uint32_t)t; }
static inline uint64_t md_type_bits64(int t) { return 0x3ff0000000000000u | (uint64_t)t; }

/* ---- launch planning and tuning (md_device.c, md_tune.c; docs/tuning.md) ---------------------------- */

/* The tunable parameters of MD, in the order of their rcl_tune_param_def table (md_tune.c): the
 * fixed-point conversion (rcl_md_convert), the force kernel's work-group size (allpairs: the tile) and
 * that of the build, integration and thermo kernels. The force path is not tuned: it is the caller's
 * choice (AUTO = gather), since paths differ in what rcl_md_get_neighbors returns and in device needs. */
enum { RCL_MD_P_CONVERT, RCL_MD_P_LOCAL, RCL_MD_P_BUILD, RCL_MD_NPARAMS };

/* The launch planner: resolves o (path AUTO, convert AUTO, local sizes 0) into the launch a simulation of
 * n atoms of nt types makes on ctx's device, building the programs to read each kernel's
 * CL_KERNEL_WORK_GROUP_SIZE. Values the caller set in o are strict (refused with RCL_ERR_INVALID_ARG or
 * RCL_ERR_UNSUPPORTED, naming the limit, if the device cannot launch them); soft values (RCL_MD_P_*, 0:
 * none; soft may be NULL) fill what o leaves open and are clamped, never refused; what neither sets takes
 * the built-in rule. On return o->path, ->convert, ->local_size (1 for the task path) and
 * ->build_local_size are set. */
RCL_INTERNAL int rcl__md_plan(rcl_md_options *o, rcl_context *ctx, rcl_dtype dtype, size_t n, int nt,
                              const size_t *soft);
/* rcl_md_create on queue q (NULL: the context's) with soft launch values (NULL: none), never tuning:
 * the tuner's own simulations. */
RCL_INTERNAL int rcl__md_create_on(rcl_md **out, rcl_context *ctx, cl_command_queue q, rcl_dtype dtype,
                                   const rcl_md_system *sys, const rcl_md_lj *lj, const rcl_md_options *opts,
                                   const size_t *soft);
/* One tunable kernel per force path (md.gather, md.symmetric, md.allpairs, md.task). */
extern const rcl_tune_kernel rcl__tk_md_gather, rcl__tk_md_symmetric, rcl__tk_md_allpairs, rcl__tk_md_task;
RCL_INTERNAL const rcl_tune_kernel *rcl__md_tune_kernel(rcl_md_path path);
/* The tuning problem for n atoms (shared with the tests): the largest fcc lattice of cells^3 unit cells
 * (cells >= 3) with at most n atoms — density 0.8442, temperature 3.0, velocity seed RCL_MD_TUNE_SEED —
 * its coordinates displaced by 0.1 * (u - 0.5) (u = rcl_rng_uniform, seed RCL_MD_TUNE_SEED + 1) and
 * wrapped once into the box; LJ cutoff 2.5; RCL_MD_TUNE_STEPS steps of dt 0.005 after the creation. */
#define RCL_MD_TUNE_SEED 7301
#define RCL_MD_TUNE_STEPS 10
#define RCL_MD_TUNE_DT 0.005
RCL_INTERNAL int rcl__md_tune_system(rcl_md_system **sys, rcl_md_lj *lj, size_t n);

/* Error text for a status word of the kernels at a step (md_fixed.c). */
int md_status_error(const rcl_md *md, unsigned bits, const char *where);

/* ---- creation (md_sim.c), in two steps so that the front (md.c) can consult the tuner between them ---- */

/* The argument checks of rcl_md_create (messages name it): *out = NULL, then o = *opts (or the defaults)
 * with the skin (0: 0.3) and the path (AUTO: gather) filled in. */
RCL_SIBLING int rcl__md_prepare(rcl_md_options *o, rcl_md **out, rcl_context *ctx, rcl_dtype dtype,
                                const rcl_md_system *sys, const rcl_md_lj *lj, const rcl_md_options *opts);
/* The simulation of prepared options o: on a device the launch planned (rcl__md_plan) from o and soft
 * (NULL: none), on queue q (NULL: the context's); the tables, the backend and the first forces. */
RCL_INTERNAL int rcl__md_build(rcl_md **out, rcl_context *ctx, cl_command_queue q, rcl_dtype dtype,
                               const rcl_md_system *sys, const rcl_md_lj *lj, rcl_md_options o, const size_t *soft);
/* rcl__md_build with the backend named (be; be_arg is md->be_arg during its init) and the simulation's step
 * counter starting at step (error messages name it): the device backend for the local simulations of a
 * split (src/split/split_md.c), which also has a backend of its own. rcl__md_build is this with the device
 * backend (ctx) or the reference (ctx NULL), no argument and step 0. */
RCL_SIBLING int rcl__md_build_be(rcl_md **out, const md_backend *be, void *be_arg, size_t step, rcl_context *ctx,
                                 cl_command_queue q, rcl_dtype dtype, const rcl_md_system *sys, const rcl_md_lj *lj,
                                 rcl_md_options o, const size_t *soft);

/* ---- hooks for a decomposed simulation (md_domain.c; contracts §10.4) ----------------------------------- */

/* Device backend, the local simulation of a decomposed one (md_domain.c; contracts §10.4): its atoms are
 * the slab's owned ones (system index < nown), then ghosts; it never rebuilds its lists on its own (a rebuild
 * request is a new decomposition: a new local simulation, or the old one reloaded). Its creation's be_arg
 * (rcl__md_build_be; read by the backend's init only): NULL, or a const size_t of atoms the per-atom buffers
 * take at least (the headroom of rcl__md_dev_reload). rcl__md_dev_link, after the creation and each reload: the
 * internal indices of the atoms whose positions other devices need (send: nsend local indices, repeats
 * allowed) and of the ghosts, kept on the device. */
RCL_INTERNAL int rcl__md_dev_link(rcl_md *md, const size_t *send, size_t nsend, size_t nown);
/* A local simulation reloaded in place with the atoms of sys (the box, types and coefficients md's) at step: as
 * if freed and created anew (rcl__md_build_be at step: the same bits) — the step, status, counters, kernel
 * times, pending window and kick reset, sys uploaded, the first forces, energy and virial computed — but with
 * md's buffers, kernels and neighbour-list slots kept. 1 (nothing changed) where they do not fit: more atoms
 * than the buffers' stride, or a launch plan that depends on the atom count (local sizes, thermo groups,
 * the cell grid's dilute rule) differs; 0, or an error (md then only fit to be freed). rcl__md_dev_link
 * follows, as after a creation. */
RCL_INTERNAL int rcl__md_dev_reload(rcl_md *md, const rcl_md_system *sys, size_t step);
/* The windows a device simulation ran again so far: out[0] because its lists went stale (builds launched every
 * M-th step, REPROCL_MD_BUILD_EVERY), out[1] because they overflowed. For tests. */
RCL_SIBLING int rcl__md_dev_replays(size_t out[2], const rcl_md *md);
/* The first half of a step (the deferred half kick, half kick, drift and the displacement test) on every
 * local atom, then the positions of the atoms sent (4 reals of the dtype each, the w the type tag) into
 * sent; *far: some local atom moved more than skin/2 since the creation (the status checked: errors name
 * md->step). */
RCL_INTERNAL int rcl__md_dev_half1(rcl_md *md, void *sent, int *far);
/* The rest of a step: the ghosts' positions (ghosts non-NULL; as half1 sends them) into place — overwriting
 * what the local integration made of them, before any force uses them — and the ghosts' velocities zeroed;
 * with forces the forces (and with ev the energy and virial); the second half kick (complete = 0: deferred
 * into the next half1). Errors surface at the next status read. */
RCL_INTERNAL int rcl__md_dev_half2(rcl_md *md, const void *ghosts, int forces, int ev, int complete);
/* The owned atoms' positions and velocities (each may be NULL; 3 reals of the dtype per atom, in system order)
 * gathered on the device by the indices of rcl__md_dev_link: only they cross to the host (the status checked). */
RCL_INTERNAL int rcl__md_dev_owned_state(rcl_md *md, void *pos, void *vel);
/* The exact thermo sums (energy, virial from the last force computation with energy; m v^2) of the atoms
 * of system index < nown. */
RCL_INTERNAL int rcl__md_dev_owned_sums(rcl_md *md, size_t nown, md_sum out[3]);
/* The host reference's integration and kinetic sum (md_ref.c, contract md.nve / md.thermo) on caller arrays
 * of md->n atoms of the dtype: vel, pos [3n]; coef the tables rounded to the dtype (md_put_real); type
 * 0-based; f [3n] fixed-point forces. Errors name md->step. */
RCL_INTERNAL int rcl__md_host_kick(rcl_md *md, void *vel, const void *coef, const int *type, const int64_t *f);
RCL_INTERNAL int rcl__md_host_drift(rcl_md *md, void *pos, const void *vel);
RCL_INTERNAL int rcl__md_host_kinetic(rcl_md *md, const void *vel, const void *coef, const int *type, md_sum *out);

/* ---- the spatial decomposition (md_domain.c): split_md.c and, through RCL_SIBLING, src/mpi/mpi_md.c ---- */

#define MD_DOM_GHOST_MARGIN 1.001 /* ghosts within (cutoff + skin) * this of a slab: a superset is harmless */

/* The longest axis of the box lo..hi (the slabs cut it; the first of equal ones). */
RCL_SIBLING int rcl__md_dom_axis(const double *lo, const double *hi);
/* count + 1 slab boundaries in [lo, hi] at units[k] / total of the length (units as rcl_split_partition's). */
RCL_SIBLING void rcl__md_dom_bounds(double *bound, const size_t *units, size_t count, size_t total, double lo,
                                    double hi);
/* The slab owning coordinate x (empty slabs own nothing; outside an open box: the first or last slab). */
RCL_SIBLING size_t rcl__md_dom_slab_of(const double *bound, size_t count, double x);
/* The O(n) steps of a decomposition (one typed loop each, no call per atom): x[i] the coordinate along axis of
 * atom i of pos ([3n] of md's dtype); slab[i] rcl__md_dom_slab_of(bound, count, x[i]); the atoms i < n whose
 * x[i] lies within (cutoff + skin) * MD_DOM_GHOST_MARGIN of slab k (periodic: the nearest image) and with
 * skip[i] != k (skip NULL: none skipped), in increasing order, into out (NULL: only counted), their count
 * returned. */
RCL_SIBLING void rcl__md_dom_axis_coords(double *x, const rcl_md *md, const void *pos, size_t n, int axis);
RCL_SIBLING void rcl__md_dom_slabs(size_t *slab, const double *bound, size_t count, const double *x, size_t n);
RCL_SIBLING size_t rcl__md_dom_near_list(size_t *out, const rcl_md *md, int axis, const double *bound, size_t k,
                                         const double *x, size_t n, const size_t *skip);
/* Element i of a of dtype dt in binary64 (inline: for the O(n) loops of a decomposition). */
static inline double md_dom_real(const void *a, size_t i, rcl_dtype dt) {
  return dt == RCL_F32 ? (double)((const float *)a)[i] : ((const double *)a)[i];
}
/* dst[3 idx[j] + a] = src[3 j + a] for j < n, a < 3: [3n] arrays of the dtype into system order. */
RCL_SIBLING void rcl__md_dom_scatter(void *dst, const size_t *idx, const void *src, size_t n, rcl_dtype dt);
/* n reals of dtype dt as binary64: dst[i * dstride] = src[i * sstride] (strides in elements). */
RCL_SIBLING void rcl__md_dom_reals(double *dst, size_t dstride, const void *src, size_t sstride, size_t n,
                                   rcl_dtype dt);
/* A local system's box, types and masses (md's) and atom count; pos and type are the caller's. */
RCL_SIBLING void rcl__md_dom_system(rcl_md_system *sys, const rcl_md *md, size_t natoms);
/* A slab's local simulation on a device, kept there between decompositions: the owned atoms' and the
 * ghosts' positions and velocities stay on the device; each step only the sent atoms' positions leave it
 * (sent) and the ghosts' come in (ghost), exchanged by the caller (a host copy in the split, messages over
 * MPI); the state comes to the host at a decomposition and when asked for, at thermo steps only the sums. */
typedef struct {
  rcl_context *ctx; /* set by the caller: the device, the coefficients, the prepared options (rcl__md_prepare) */
  rcl_md_lj lj;
  rcl_md_options o;
  rcl_md_system sys; /* the local atoms at the decomposition: owned first (nown), then ghosts; the whole box */
  size_t nown, nsend;
  rcl_md *md;         /* the local simulation; NULL without owned atoms */
  void *sent, *ghost; /* nsend and sys.natoms - nown positions as the kernels hold them (4 reals of the dtype) */
  rcl_md_stats past;  /* the kernel times of the local simulations before md */
  size_t reloads, refusals, creations; /* local simulations reloaded in place, reloads refused, created anew */
  /* the host buffers above and a scratch for the forces' reads, kept and grown between decompositions (bytes) */
  size_t cap_pos, cap_vel, cap_type, cap_sent, cap_ghost, cap_scratch;
  void *scratch;
} md_dom_part;
/* Room for nloc local atoms (sys.pos, sys.type and sys.vel, for the caller to fill, the ghosts' velocities
 * zeroed), nown of them owned; the buffers of the previous decomposition reused where they fit. */
RCL_SIBLING int rcl__md_dom_part_alloc(md_dom_part *p, const rcl_md *md, size_t nown, size_t nloc);
/* A new local simulation of p->sys at md's step (none without owned atoms) and the exchange buffers: send the
 * local indices (< nown) of the atoms whose positions go out each step, in the order sent. The current one
 * is reloaded in place where it fits (rcl__md_dev_reload; REPROCL_MD_RELOAD=0 turns that off, a diagnostic),
 * else freed and created anew with room for n + n/8 atoms; either computes the forces, energy and virial. */
RCL_SIBLING int rcl__md_dom_part_build(md_dom_part *p, const rcl_md *md, const size_t *send, size_t nsend);
/* md's half-kick factors into the local simulation (after md's time step changed). */
RCL_SIBLING int rcl__md_dom_part_coef(md_dom_part *p, const rcl_md *md);
/* One velocity-Verlet step of md (contract md.nve, the device's kernels) in two halves around the exchange:
 * half1 fills p->sent and sets *far (this device's rebuild test; OR it over all of them); half2, after
 * p->ghost was filled (exchanged), or right after a rebuild (exchanged = 0: the creation computed the forces),
 * finishes the step. Ghost atoms are integrated locally too, but their positions are overwritten by the
 * exchange before any force uses them. */
RCL_SIBLING int rcl__md_dom_part_half1(md_dom_part *p, const rcl_md *md, int *far);
RCL_SIBLING int rcl__md_dom_part_half2(md_dom_part *p, int exchanged, int ev, int complete);
/* The forces (with ev the energy and virial) at the current positions. */
RCL_SIBLING int rcl__md_dom_part_forces(md_dom_part *p, const rcl_md *md, int ev);
/* The owned atoms' exact sums of the last step with energy: s[0] energy, s[1] virial (full lists: each pair
 * counted from both sides), s[2] m v^2. */
RCL_SIBLING int rcl__md_dom_part_sums(md_dom_part *p, const rcl_md *md, md_sum s[3]);
/* The owned atoms' positions, velocities (dtype values) and fixed-point forces in local order (each may be NULL). */
RCL_SIBLING int rcl__md_dom_part_state(md_dom_part *p, void *pos, void *vel, int64_t *fq);
/* The device's kernel times (rcl_md_stats: force, build, integration) of every local simulation p has had;
 * neighbour pairs of the current one. */
RCL_SIBLING int rcl__md_dom_part_stats(md_dom_part *p, rcl_md_stats *out);
/* The local simulation's errors flagged since the last check. */
RCL_SIBLING int rcl__md_dom_part_check(md_dom_part *p);
RCL_SIBLING void rcl__md_dom_part_free(md_dom_part *p);
/* The full-list energy and virial totals halved exactly (each pair was counted from both atoms); who names
 * the caller in the error of an odd sum (a bug). */
RCL_SIBLING int rcl__md_dom_halve(md_sum *pe, md_sum *virial, const char *who);

#endif
