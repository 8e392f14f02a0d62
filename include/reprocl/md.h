/* reprocl: molecular dynamics — bit-reproducible Lennard-Jones 12-6 forces, energies and virial, neighbour
 * lists built on the device, and velocity-Verlet NVE integration. The same simulation gives the same
 * trajectory, bit for bit, on every device, work-group size and force path. The numerical contract is in
 * docs/contracts.md §9 ("md.lj", "md.nve", "md.thermo"); user documentation in docs/md.md.
 *
 * Units are LAMMPS "lj" units (epsilon, sigma, mass of the atoms; time in tau). Forces, energies and the
 * virial are accumulated in 64-bit fixed point: every pair contribution v is converted once, as
 * round-to-nearest-even(v * 2^RCL_MD_FIXED_BITS_*), and integer sums do not depend on order, so the result
 * is the same whichever atom, work-item or kernel adds it. */
#ifndef REPROCL_MD_H
#define REPROCL_MD_H
#include <stdio.h>

#include "reprocl/common.h"
#include "reprocl/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Atom types are numbered 1..ntypes (as in LAMMPS data files). */
#define RCL_MD_MAX_TYPES 8
/* Fixed-point scale: a force, energy or virial contribution v is stored as rte(v * 2^bits). */
#define RCL_MD_FIXED_BITS_F32 32
#define RCL_MD_FIXED_BITS_F64 38
/* Every pair contribution must satisfy |v * 2^bits| < 2^51, and no atom may have more than
 * RCL_MD_MAX_NEIGHBORS partners within cutoff + skin: then no per-atom sum can leave the int64 range
 * (1024 * 2^51 = 2^61). A violation stops the computation with RCL_ERR_OVERFLOW; it never wraps. */
#define RCL_MD_FIXED_LIMIT_LOG2 51
#define RCL_MD_MAX_NEIGHBORS 1024

/* ---- the system ------------------------------------------------------------------------------------ */

/* Atoms, box and masses. Host arrays in binary64; rcl_md_create rounds them to the simulation's dtype.
 * Atoms are kept in the order given (the readers sort by LAMMPS atom ID). */
typedef struct {
  size_t natoms;
  int ntypes;                    /* 1..RCL_MD_MAX_TYPES */
  double lo[3], hi[3];           /* orthorhombic box; atoms lie in [lo, hi] */
  int periodic[3];               /* per dimension: 1 periodic (minimum image), 0 open */
  double *pos;                   /* [3 * natoms]: x y z of atom 0, then atom 1, ... */
  double *vel;                   /* [3 * natoms], or NULL for zero velocities */
  int *type;                     /* [natoms], 1..ntypes */
  long long *id;                 /* [natoms] atom IDs for output (the readers keep the file's IDs) */
  double mass[RCL_MD_MAX_TYPES]; /* mass of type t at [t - 1] */
} rcl_md_system;

/* A system with natoms atoms (arrays allocated, zeroed, vel allocated; ids 1..natoms; masses 1; all
 * dimensions periodic). natoms may be 0 (rcl_md_create then refuses it). */
RCL_API int rcl_md_system_alloc(rcl_md_system **out, size_t natoms, int ntypes);
RCL_API void rcl_md_system_free(rcl_md_system *sys);

/* ---- the force field ------------------------------------------------------------------------------- */

typedef enum {
  RCL_MD_MIX_GEOMETRIC = 0, /* eps_ij = sqrt(eps_i eps_j), sigma_ij = sqrt(sigma_i sigma_j) (LAMMPS default) */
  RCL_MD_MIX_ARITHMETIC = 1 /* eps_ij = sqrt(eps_i eps_j), sigma_ij = (sigma_i + sigma_j) / 2 (Lorentz-Berthelot) */
} rcl_md_mixing;
RCL_API const char *rcl_md_mixing_name(rcl_md_mixing m); /* "geometric", "arithmetic" */
RCL_API int rcl_md_mixing_parse(rcl_md_mixing *out, const char *name);

/* Lennard-Jones 12-6: E(r) = 4 eps ((sigma/r)^12 - (sigma/r)^6) - shift for r < cutoff, 0 beyond.
 * Per-type coefficients are mixed into pair coefficients unless a pair is given explicitly. */
#define RCL_MD_LJ_VERSION 1
typedef struct {
  unsigned int version;
  double cutoff;                 /* the same for every pair, in sigma units */
  int shift;                     /* 1: subtract E(cutoff) so the energy is continuous (pair_modify shift yes) */
  rcl_md_mixing mixing;
  double epsilon[RCL_MD_MAX_TYPES]; /* of type t at [t - 1] */
  double sigma[RCL_MD_MAX_TYPES];
  /* Explicit pair coefficients (LAMMPS "PairIJ Coeffs", pair_coeff I J): used where pair_set[i][j] is
   * non-zero (0-based type indices; set both [i][j] and [j][i] or use rcl_md_lj_set_pair). */
  double pair_epsilon[RCL_MD_MAX_TYPES][RCL_MD_MAX_TYPES];
  double pair_sigma[RCL_MD_MAX_TYPES][RCL_MD_MAX_TYPES];
  unsigned char pair_set[RCL_MD_MAX_TYPES][RCL_MD_MAX_TYPES];
} rcl_md_lj;
#define RCL_MD_LJ_INIT                                                                                        \
  {RCL_MD_LJ_VERSION, 2.5, 0, RCL_MD_MIX_GEOMETRIC, {1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1}, {{0}}, \
   {{0}}, {{0}}}
/* Sets the coefficients of the pair of types (1-based) in both orders. */
RCL_API int rcl_md_lj_set_pair(rcl_md_lj *lj, int type_i, int type_j, double epsilon, double sigma);

/* ---- options ------------------------------------------------------------------------------------ */

/* How forces are computed. Every path gives the same bits; they differ in speed and device needs. */
typedef enum {
  RCL_MD_PATH_AUTO = 0,      /* gather: runs everywhere (no atomics) */
  RCL_MD_PATH_GATHER = 1,    /* full neighbour list, each work-item sums its own atom: no atomics */
  RCL_MD_PATH_SYMMETRIC = 2, /* half list, each pair once (Newton's third law), 64-bit integer atomics */
  RCL_MD_PATH_ALLPAIRS = 3,  /* no list: tiles of the full force matrix through local memory (small systems) */
  RCL_MD_PATH_TASK = 4       /* one work-item walks the full neighbour list (the FPGA-friendly form) */
} rcl_md_path;
RCL_API const char *rcl_md_path_name(rcl_md_path p); /* "auto", "gather", "symmetric", "allpairs", "task" */
RCL_API int rcl_md_path_parse(rcl_md_path *out, const char *name);

/* How a pair contribution is rounded to the fixed-point integer: three exact implementations of
 * round-to-nearest-even, the same bits, different speed per device. */
typedef enum {
  RCL_MD_CONVERT_AUTO = 0,    /* BUILTIN on GPUs, FLOAT64 on CPUs with fp64, INTEGER without fp64 */
  RCL_MD_CONVERT_BUILTIN = 1, /* convert_long_rte (one instruction on GPUs) */
  RCL_MD_CONVERT_FLOAT64 = 2, /* add 1.5 * 2^52 in binary64 (vectorises on CPUs); needs fp64 */
  RCL_MD_CONVERT_INTEGER = 3  /* integer operations on the bits of the f32 value (f32 only) */
} rcl_md_convert;
RCL_API const char *rcl_md_convert_name(rcl_md_convert c); /* "auto", "builtin", "float64", "integer" */

/* Launch configuration and neighbour-list settings. Zeros mean defaults; no value changes any bit.
 * Version 1 (without kernel_times) is accepted. */
#define RCL_MD_OPTIONS_VERSION 2
typedef struct {
  unsigned int version;
  rcl_md_path path;
  rcl_md_convert convert;
  size_t local_size;        /* force kernel work-group size (allpairs: the tile size); a power of two */
  size_t build_local_size;  /* cell-list, neighbour-list, integration and reduction kernels; a power of two */
  double skin;              /* neighbour skin in sigma units, > 0; 0: 0.3 */
  size_t neighbor_capacity; /* initial list slots per atom; 0: from the density. Grows when exceeded. */
  /* 1: rcl_md_get_stats reports device time per kernel category (needs a queue with profiling, the default
   * for contexts reprocl creates), at the price of an event per kernel launch (about 8 us each on NVIDIA's
   * OpenCL: more than a small system's whole step). 0 (the default): the kernel seconds are 0. */
  int kernel_times;
} rcl_md_options;
#define RCL_MD_OPTIONS_INIT {RCL_MD_OPTIONS_VERSION, RCL_MD_PATH_AUTO, RCL_MD_CONVERT_AUTO, 0, 0, 0.0, 0, 0}

/* ---- the simulation ----------------------------------------------------------------------------- */

typedef struct rcl_md rcl_md;

/* Thermodynamic state at a step. Energies are totals (divide by natoms for LAMMPS "lj" thermo output).
 * All values are computed on the host from the exact fixed-point integer sums, so they are the same bits
 * on every device. temperature = 2 ke / (3 natoms - 3); pressure = (2 ke + virial) / (3 volume). */
typedef struct {
  size_t step;
  size_t natoms;
  double pe, ke, etotal;
  double temperature;
  double pressure;
  double virial; /* sum over pairs of r . F */
  size_t neighbor_builds; /* so far, including the first */
} rcl_md_thermo;

/* Creates a simulation on ctx's device (ctx NULL: the host C reference of the contract, O(N^2), for
 * tests) and computes the forces, energy and virial of the initial positions. Refuses, naming the value:
 * no atoms, a type out of range, a non-finite position or velocity, an atom outside the box, a cutoff
 * larger than half a periodic box length, bad masses or coefficients, f64 on a device without it, the
 * symmetric path without int64 atomics, bad options; RCL_ERR_OVERFLOW when a force leaves the
 * fixed-point range (overlapping atoms). */
RCL_API int rcl_md_create(rcl_md **out, rcl_context *ctx, rcl_dtype dtype, const rcl_md_system *sys,
                          const rcl_md_lj *lj, const rcl_md_options *opts);
RCL_API void rcl_md_free(rcl_md *md);
/* The argument checks of rcl_md_create alone (no device, no force evaluation): 0 or the same error. */
RCL_API int rcl_md_check(const rcl_md_system *sys, const rcl_md_lj *lj, rcl_dtype dtype);

/* Called every thermo_every steps (and at the first and last step of a run); a non-zero return stops
 * the run early (rcl_md_run then returns 0). */
typedef int (*rcl_md_thermo_fn)(rcl_md *md, const rcl_md_thermo *thermo, void *user);

/* Advances `steps` velocity-Verlet steps of size dt (contract "md.nve"): half kick, drift, periodic wrap,
 * neighbour-list rebuild when any atom has moved more than skin/2 since the last build, forces, half
 * kick. thermo_every = 0: no callback. Errors: RCL_ERR_OVERFLOW (fixed-point range, at the step named in
 * the message), RCL_ERR_INVALID_ARG for a non-finite position or velocity. */
RCL_API int rcl_md_run(rcl_md *md, size_t steps, double dt, size_t thermo_every, rcl_md_thermo_fn fn,
                       void *user);

/* The thermodynamic state at the current step (computes the energy and virial if this step's force
 * evaluation skipped them). */
RCL_API int rcl_md_thermo_get(rcl_md *md, rcl_md_thermo *out);

/* Current positions and velocities ([3 * natoms] values of the dtype each, in the system's atom order);
 * either may be NULL. */
RCL_API int rcl_md_get_state(rcl_md *md, void *pos, void *vel);
/* Current forces: `force` receives the dtype values (each the correctly rounded value of the fixed-point
 * sum times 2^-bits), `fixed` the raw int64 sums; either may be NULL. */
RCL_API int rcl_md_get_forces(rcl_md *md, void *force, int64_t *fixed);
/* The neighbour list of atom `atom` (system order) as system-order atom indices in list order, at most
 * `cap`; *count receives the full count. The list the force kernel uses: all partners within cutoff +
 * skin at the last build, or those after the atom (half lists) for the symmetric path. Refused for the
 * allpairs path and the host reference. */
RCL_API int rcl_md_get_neighbors(rcl_md *md, size_t atom, size_t *count, size_t *list, size_t cap);

/* Counters for benchmarks. Kernel times are measured only with rcl_md_options.kernel_times on a queue with
 * profiling enabled (the default for contexts reprocl creates), and always by the split and MPI simulations
 * (rcl_split_md_create, rcl_mpi_md_create), whose steps wait for their exchange anyway; they are 0
 * otherwise and for the host reference. */
typedef struct {
  size_t steps;            /* velocity-Verlet steps taken */
  size_t neighbor_builds;  /* including the first */
  uint64_t neighbor_pairs; /* ordered partner pairs within cutoff + skin at the last build (both orders) */
  double force_seconds;    /* device time in force kernels */
  double build_seconds;    /* device time in cell-list and neighbour-list kernels */
  double integrate_seconds; /* device time in integration kernels */
} rcl_md_stats;
RCL_API int rcl_md_get_stats(rcl_md *md, rcl_md_stats *out);

RCL_API size_t rcl_md_natoms(const rcl_md *md);
RCL_API size_t rcl_md_step(const rcl_md *md);
RCL_API rcl_dtype rcl_md_dtype(const rcl_md *md);
RCL_API rcl_md_path rcl_md_path_used(const rcl_md *md); /* the path AUTO resolved to */
RCL_API int rcl_md_fixed_bits(rcl_dtype dtype);         /* 32 or 38 */

/* ---- inputs and outputs (md_io.c) ----------------------------------------------------------------- */

/* Reads a LAMMPS data file (atom_style atomic: header with "atoms", "atom types", "xlo xhi", "ylo yhi",
 * "zlo zhi"; sections Masses, Atoms, optional Velocities, Pair Coeffs, PairIJ Coeffs) or an (extended)
 * XYZ file (see docs/md.md), chosen by content. Atoms are sorted by ID. Pair coefficients found in the
 * file are stored into *lj when lj is not NULL. Malformed input: RCL_ERR_PARSE with "file:line: what". */
RCL_API int rcl_md_read(rcl_md_system **out, rcl_md_lj *lj, const char *path);

/* An fcc ("fcc", 4 atoms per cell) or simple cubic ("sc") lattice of cells^3 unit cells at number
 * density `density`, all type 1 with mass 1, velocities drawn uniformly with rcl_rng(seed), zero total
 * momentum, scaled to `temperature` (dof 3N - 3), as LAMMPS "lattice fcc R" + "velocity all create T"
 * (the random numbers differ). temperature 0 gives zero velocities. */
RCL_API int rcl_md_lattice(rcl_md_system **out, const char *kind, size_t cells, double density,
                           double temperature, uint64_t seed);
/* Moves every coordinate by amplitude * (u - 0.5), u uniform from rcl_rng(seed) in coordinate order, and
 * wraps it back into the box (as LAMMPS "displace_atoms random"): a perfect lattice's forces are all
 * zero by symmetry, a displaced one's are not. RCL_ERR_INVALID_ARG for a NULL system or an amplitude
 * that is not finite, negative, or not below the shortest box side. */
RCL_API int rcl_md_displace(rcl_md_system *sys, double amplitude, uint64_t seed);

/* Appends one extended-XYZ frame (Lattice, Origin, pbc, Properties=species:S:1:pos:R:3:vel:R:3, Time)
 * with round-trip precision; pos and vel hold [3 * natoms] values of dtype (vel may be NULL). */
RCL_API int rcl_md_write_xyz(FILE *f, const rcl_md_system *sys, rcl_dtype dtype, const void *pos,
                             const void *vel, size_t step, double time);

#ifdef __cplusplus
}
#endif
#endif
