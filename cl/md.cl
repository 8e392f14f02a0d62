/* md.cl — molecular dynamics: Lennard-Jones 12-6 forces, energy and virial in 64-bit fixed point,
 * cell lists and neighbour lists built on the device, and velocity-Verlet integration. Contracts
 * "md.lj", "md.nve" and "md.thermo" in docs/contracts.md §9 define every bit; src/md_ref.c implements
 * them on the host.
 *
 * Why fixed point: integer sums do not depend on order, so the gather path (every atom sums its own full
 * neighbour list), the symmetric path (every pair once, the partner's share added with 64-bit atomics),
 * the all-pairs tiles and the single-work-item task all give the same bits. Each pair contribution is
 * rounded once, to nearest even, from a value that is the exact negation on the partner's side:
 * d = xi - xj negates exactly, the minimum image is symmetric (a correction happens only strictly beyond
 * half a box length, on both sides), r2 is summed in the same order from both sides, and rounding to
 * nearest even is odd-symmetric.
 *
 * Build defines: RCL_DTYPE_F32/F64 (prelude), MD_NT (atom types, 1..8), MD_EV (1: also energy and
 * virial), MD_RTE (the implementation of the fixed-point rounding, below). In native mode (RCL_NATIVE) the same kernels accumulate in floating point instead (float
 * atomics through compare-and-swap in the symmetric path), for speed comparisons only.
 *
 * Layouts: positions and velocities are real4 per atom; the w of a position carries the atom's type in
 * the low bits of a normal number (1.0 + type ulps), so copies can never flush it. Forces are three
 * arrays of `stride` accumulators (x, then y, then z), energy and virial two more. Neighbour lists are
 * column-major: entry k of atom i at nlist[k * stride + i]. */

#ifndef MD_NT
#define MD_NT 1
#endif
#ifndef MD_EV
#define MD_EV 0
#endif
#define MD_NT2 (MD_NT * MD_NT)

/* status[] (the device decides and records; the host reads it only now and then, src/md/md_device.c):
 * [0] the step (low 32 bits) of the last rebuild request: the build kernels of step s run only when it is s,
 * [1] error bits, [2] largest neighbour count seen, [3] largest cell seen, [4..5] partner pairs within
 * cutoff + skin of the last build (low and high 32 bits), [6] the step of the first error (0: none), [7]
 * the step being computed (set by md_integrate1; the host's step count + 1), [8] builds done (mod 2^32), [9] the
 * ticket of md_cell_count's work-groups (0 between launches) */
#define MD_ST_REBUILD 0
#define MD_ST_ERRORS 1
#define MD_ST_MAXNEIGH 2
#define MD_ST_MAXCELL 3
#define MD_ST_ERRSTEP 6
#define MD_ST_STEP 7
#define MD_ST_BUILDS 8
#define MD_ST_TICKET 9
#define MD_ERR_RANGE 1u     /* a contribution outside the fixed-point range, or not a number */
#define MD_ERR_NONFINITE 2u /* a position or velocity became inf or NaN */
#define MD_ERR_CAPACITY 4u  /* a neighbour list outgrew its slots (the host grows them and rebuilds) */
#define MD_ERR_PARTNERS 8u  /* an atom has more than MD_MAX_PARTNERS partners */
#define MD_ERR_KINETIC 16u  /* a kinetic-energy term outside the fixed-point range */
#define MD_ERR_ESCAPED 32u  /* an atom moved more than half a periodic box length in one step */
#define MD_ERR_CELLS 64u    /* a cell holds more atoms than the device's loop limit lets the build scan */
#define MD_ERR_LOST 128u    /* a build's cell counts missed atoms (their atomics not seen by the scan: a bug) */
#define MD_ERR_STALE 256u   /* an atom passed skin/2 before the build launched for it (the host replays) */
#define MD_MAX_PARTNERS 1024

#if defined(RCL_DTYPE_F64)
typedef double4 real4;
#define MD_FX_BITS 38
#define MD_SCALE 0x1p38
#define MD_LIMIT 0x1p51
#define MD_KE_LIMIT 0x1p62
#define MD_ONE 1.0
#define MD_ZERO 0.0
#define MD_TYPE_OF(p) ((int)(as_long((p).w) & 0xff))
#define MD_FINITE(x) ((as_ulong(x) & 0x7ff0000000000000ul) != 0x7ff0000000000000ul)
typedef long md_key_t;
RCL_FN md_key_t md_key(double x) {
  long u = as_long(x);
  return u < 0 ? -(u & 0x7fffffffffffffffl) : u;
}
RCL_FN double md_fixed_real(long q) {
  ulong m = q < 0 ? (ulong)0 - (ulong)q : (ulong)q;
  ulong s = q < 0 ? 0x8000000000000000ul : 0ul;
  return as_double(s | rcl_round_pack(m, -MD_FX_BITS, 53, -1074, 0x7ff0000000000000ul));
}
#else
typedef float4 real4;
#define MD_FX_BITS 32
#define MD_SCALE 0x1p32f
#define MD_LIMIT 0x1p51f
#define MD_KE_LIMIT 0x1p62f
#define MD_ONE 1.0f
#define MD_ZERO 0.0f
#define MD_TYPE_OF(p) (as_int((p).w) & 0xff)
#define MD_FINITE(x) ((as_uint(x) & 0x7f800000u) != 0x7f800000u)
typedef int md_key_t;
RCL_FN md_key_t md_key(float x) {
  int u = as_int(x);
  return u < 0 ? -(u & 0x7fffffff) : u;
}
RCL_FN float md_fixed_real(long q) {
  ulong m = q < 0 ? (ulong)0 - (ulong)q : (ulong)q;
  uint s = q < 0 ? 0x80000000u : 0u;
  return as_float(s | (uint)rcl_round_pack(m, -MD_FX_BITS, 24, -149, 0x7f800000ul));
}
#endif

/* IEEE order of finite values on the bit patterns: exact on devices that flush subnormal operands of
 * comparisons too (the box bounds may be 0). */
#define MD_LT(a, b) (md_key(a) < md_key(b))
#define MD_GE(a, b) (md_key(a) >= md_key(b))

/* Accumulators: int64 fixed point, or floating point in native mode. */
#ifdef RCL_NATIVE
typedef real_t acc_t;
#define MD_CONV(v, bad) (v)
#define MD_FORCE_REAL(a) (a)
#define MD_SC(x) (x) /* no scaling: plain forces */
#else
typedef long acc_t;
/* rte(v) after checking |v| < 2^51 (false for NaN): the range that keeps every per-atom sum of at most
 * MD_MAX_PARTNERS contributions below 2^61. Three exact implementations of the same function, chosen per
 * device for speed (the host sets MD_RTE): 0 the conversion builtin (one instruction on GPUs); 1 the
 * binary64 round-to-integer by adding 1.5 * 2^52, whose ulp is then 1 (vectorises on CPUs, where the
 * builtin becomes a branchy library call); 2 integer operations on the bits (devices without fp64). */
#ifndef MD_RTE
#define MD_RTE 0
#endif
#if MD_RTE == 1
RCL_FN long md_rte(real_t v) {
  double t = (double)v + 0x1.8p52; /* exact for |v| < 2^51: the sum lies in [2^52, 2^53) */
  return as_long(t) - 0x4338000000000000l;
}
#elif MD_RTE == 2 && defined(RCL_DTYPE_F32)
RCL_FN long md_rte(float v) {
  uint u = as_uint(v);
  int e = (int)((u >> 23) & 0xffu);
  long m = (long)((u & 0x7fffffu) | (e ? 0x800000u : 0u));
  int k = 150 - (e ? e : 1); /* |v| = m * 2^-k */
  int kk = clamp(k, 1, 63);
  long q = m >> kk, rem = m - (q << kk), hv = 1l << (kk - 1);
  q += (long)((rem > hv) | ((rem == hv) & (int)(q & 1)));
  q = k <= 0 ? m << min(-k, 63) : q;
  return (u >> 31) ? -q : q;
}
#else
#define md_rte(v) convert_long_rte(v)
#endif
#define MD_CONV(v, bad) ((bad) |= !(fabs(v) < MD_LIMIT), md_rte(v))
#define MD_FORCE_REAL(a) md_fixed_real(a)
#define MD_SC(x) P_MUL((x), MD_SCALE)
#endif

/* Pair arithmetic. On a device that flushes fp32 subnormals (RCL_EMULATE_F32_SUBNORMALS) the prelude's
 * exact operations take an integer path that masked SIMD execution (llvmpipe) pays on every call. The pair
 * computation does not need it: with the coefficient ranges rcl_md_create enforces, a subnormal operand or
 * result anywhere in it cannot change a contribution's fixed-point value or the cutoff decision (the
 * "flush invariance" of contract md.lj, docs/contracts.md §9), so the plain IEEE operations — correctly
 * rounded for + - * on every OpenCL device — give the contract's bits. Division is never plain: it is
 * not correctly rounded everywhere. */
#if defined(RCL_DTYPE_F32) && defined(RCL_EMULATE_F32_SUBNORMALS) && !defined(RCL_NATIVE)
#define P_ADD(a, b) ((a) + (b))
#define P_SUB(a, b) ((a) - (b))
#define P_MUL(a, b) ((a) * (b))
#else
#define P_ADD R_ADD
#define P_SUB R_SUB
#define P_MUL R_MUL
#endif

/* Minimum image along one axis: a correction only strictly beyond half a box length, the same test on
 * both sides of a pair, so the partner's value is the exact negation. Open axes pass half = +inf. */
RCL_FN real_t md_image(real_t d, real_t len, real_t hlen) {
  if (d > hlen) return P_SUB(d, len);
  if (d < R_NEG(hlen)) return P_ADD(d, len);
  return d;
}

/* r2 = (dx^2 + dy^2) + dz^2 of the minimum-image difference pi - pj. */
RCL_FN real_t md_dist2(real4 pi, real4 pj, real4 blen, real4 bhalf, real_t *dx, real_t *dy, real_t *dz) {
  *dx = md_image(P_SUB(pi.x, pj.x), blen.x, bhalf.x);
  *dy = md_image(P_SUB(pi.y, pj.y), blen.y, bhalf.y);
  *dz = md_image(P_SUB(pi.z, pj.z), blen.z, bhalf.z);
  return P_ADD(P_ADD(P_MUL(*dx, *dx), P_MUL(*dy, *dy)), P_MUL(*dz, *dz));
}

/* Coefficient tables in __constant memory: [lj1 | lj2 | lj3 | lj4 | offset] of MD_NT2 each, then
 * mass[MD_NT], then dtfm[MD_NT] (= dt / 2 / mass). */
#define MD_C_LJ1 0
#define MD_C_LJ2 (MD_NT2)
#define MD_C_LJ3 (2 * MD_NT2)
#define MD_C_LJ4 (3 * MD_NT2)
#define MD_C_OFF (4 * MD_NT2)
#define MD_C_MASS (5 * MD_NT2)
#define MD_C_DTFM (5 * MD_NT2 + MD_NT)

/* The pair (i, j) from atom i's side (contract md.lj): adds its contributions to the five accumulators
 * and returns whether r2 < rc2. pj is never i. */
RCL_FN int md_pair(real4 pi, real4 pj, int ti, __constant const real_t *coef, real_t rc2, real4 blen, real4 bhalf,
                   acc_t *ax, acc_t *ay, acc_t *az, acc_t *ae, acc_t *aw, int *bad) {
  real_t dx, dy, dz;
  real_t r2 = md_dist2(pi, pj, blen, bhalf, &dx, &dy, &dz);
  if (!(r2 < rc2)) return 0;
#if MD_NT == 1
  const int t = 0; /* one type: the coefficients are loop invariants */
  (void)ti;
#else
  int t = ti * MD_NT + MD_TYPE_OF(pj);
#endif
  real_t r2inv = R_DIV(MD_ONE, r2);
  real_t r6inv = P_MUL(P_MUL(r2inv, r2inv), r2inv);
  real_t forcelj = P_MUL(r6inv, P_SUB(P_MUL(coef[MD_C_LJ1 + t], r6inv), coef[MD_C_LJ2 + t]));
  real_t fs = MD_SC(P_MUL(forcelj, r2inv)); /* fpair * 2^bits */
  real_t fx = P_MUL(dx, fs), fy = P_MUL(dy, fs), fz = P_MUL(dz, fs);
  int b = 0;
  *ax += MD_CONV(fx, b);
  *ay += MD_CONV(fy, b);
  *az += MD_CONV(fz, b);
#if MD_EV
  real_t e = P_SUB(P_MUL(r6inv, P_SUB(P_MUL(coef[MD_C_LJ3 + t], r6inv), coef[MD_C_LJ4 + t])), coef[MD_C_OFF + t]);
  real_t es = MD_SC(e), ws = P_MUL(r2, fs);
  *ae += MD_CONV(es, b);
  *aw += MD_CONV(ws, b);
#endif
  *bad |= b;
  return 1;
}

/* Error bits, of the first failing step only (status[6], 0 while none; steps count from 1): the flags of
 * later steps, which may be consequences, are dropped, so the bits do not depend on timing. */
RCL_FN void md_flag_at(__global volatile int *status, uint bits, int step) {
  int first = atomic_cmpxchg(&status[MD_ST_ERRSTEP], 0, step);
  if (first == 0 || first == step) atomic_or(&status[MD_ST_ERRORS], (int)bits);
}
RCL_FN void md_flag(__global volatile int *status, uint bits) { md_flag_at(status, bits, status[MD_ST_STEP]); }

/* The build kernels of step seq do nothing unless that step asked for a rebuild (md_integrate1) or the
 * host forced one (status[0] = seq): the decision stays on the device. */
#define MD_BUILD_GATE(status, seq)                                                                                     \
  if ((uint)(status)[MD_ST_REBUILD] != (seq)) return;

RCL_FN void md_store(uint i, uint stride, __global acc_t *force, __global acc_t *ev, acc_t ax, acc_t ay, acc_t az,
                     acc_t ae, acc_t aw) {
  force[i] = ax;
  force[stride + i] = ay;
  force[2 * stride + i] = az;
#if MD_EV
  ev[i] = ae;
  ev[stride + i] = aw;
#endif
}

/* Atom i over its full neighbour list: the body of the gather and task kernels. */
RCL_FN void md_gather_atom(uint i, __global const real4 *pos, __global const int *nlist,
                           __global const int *ncount, uint stride, __constant const real_t *coef, real_t rc2,
                           real4 blen, real4 bhalf, __global acc_t *force, __global acc_t *ev,
                           __global volatile int *status) {
  real4 pi = pos[i];
  int ti = MD_TYPE_OF(pi);
  acc_t ax = 0, ay = 0, az = 0, ae = 0, aw = 0;
  int bad = 0, cnt = ncount[i];
  __global const int *nl = nlist + i; /* column-major: consecutive work-items read consecutive entries */
  for (int k = 0; k < cnt; k++, nl += stride) md_pair(pi, pos[*nl], ti, coef, rc2, blen, bhalf, &ax, &ay, &az, &ae, &aw, &bad);
  md_store(i, stride, force, ev, ax, ay, az, ae, aw);
  if (bad) md_flag(status, MD_ERR_RANGE);
}

/* ---- force kernels ---------------------------------------------------------------------------------- */

__kernel void md_force_gather(__global const real4 *pos, __global const int *nlist, __global const int *ncount,
                              uint stride, uint n, __constant const real_t *coef, real_t rc2, real4 blen, real4 bhalf,
                              __global acc_t *force, __global acc_t *ev, __global volatile int *status) {
  uint i = (uint)get_global_id(0);
  if (i < n) md_gather_atom(i, pos, nlist, ncount, stride, coef, rc2, blen, bhalf, force, ev, status);
}

/* The single-work-item form: atoms [first, last) in order, one after the other (launched in chunks on
 * drivers that limit loop iterations). */
__kernel void md_force_task(__global const real4 *pos, __global const int *nlist, __global const int *ncount,
                            uint stride, uint first, uint last, __constant const real_t *coef, real_t rc2, real4 blen,
                            real4 bhalf, __global acc_t *force, __global acc_t *ev, __global volatile int *status) {
  for (uint i = first; i < last; i++)
    md_gather_atom(i, pos, nlist, ncount, stride, coef, rc2, blen, bhalf, force, ev, status);
}

/* Tiles of the full force matrix: a group of W atoms i walks all atoms j in tiles of W staged in local
 * memory. No list; each work-item counts its partners for the fixed-point range bound. */
__kernel void md_force_allpairs(__global const real4 *pos, uint n, uint stride, __constant const real_t *coef,
                                real_t rc2, real4 blen, real4 bhalf, __global acc_t *force, __global acc_t *ev,
                                __global volatile int *status, __local real4 *tile) {
  uint i = (uint)get_global_id(0), lid = (uint)get_local_id(0), W = (uint)get_local_size(0);
  real4 pi = pos[i < n ? i : 0];
  int ti = MD_TYPE_OF(pi);
  acc_t ax = 0, ay = 0, az = 0, ae = 0, aw = 0;
  int bad = 0, partners = 0;
  for (uint base = 0; base < n; base += W) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (base + lid < n) tile[lid] = pos[base + lid];
    barrier(CLK_LOCAL_MEM_FENCE);
    uint m = n - base < W ? n - base : W;
    if (i < n)
      for (uint k = 0; k < m; k++)
        if (base + k != i)
          partners += md_pair(pi, tile[k], ti, coef, rc2, blen, bhalf, &ax, &ay, &az, &ae, &aw, &bad);
  }
  if (i >= n) return;
  md_store(i, stride, force, ev, ax, ay, az, ae, aw);
  if (bad) md_flag(status, MD_ERR_RANGE);
  if (partners > MD_MAX_PARTNERS) md_flag(status, MD_ERR_PARTNERS);
}

#if defined(RCL_HAS_INT64_ATOMICS) || (defined(RCL_NATIVE) && !defined(RCL_DTYPE_F64))
#ifdef RCL_NATIVE
/* Native mode: float atomics by compare-and-swap (order-dependent, like any float atomic). */
#if defined(RCL_DTYPE_F64)
RCL_FN void md_atomic_add(__global acc_t *p, acc_t v) {
  volatile __global long *q = (volatile __global long *)p;
  long old = *q, prev;
  while ((prev = atom_cmpxchg(q, old, as_long(as_double(old) + v))) != old) old = prev;
}
#else
RCL_FN void md_atomic_add(__global acc_t *p, acc_t v) {
  volatile __global int *q = (volatile __global int *)p;
  int old = *q, prev;
  while ((prev = atomic_cmpxchg(q, old, as_int(as_float(old) + v))) != old) old = prev;
}
#endif
#else
RCL_FN void md_atomic_add(__global acc_t *p, acc_t v) { atom_add((volatile __global long *)p, v); }
#endif

/* Each pair once from its lower internal index (half list): the partner's share is the exact negation,
 * added atomically; the atom's own sum is added once at the end. Energy and virial stay per atom (each
 * pair counted once). The forces must be zeroed before. */
__kernel void md_force_symmetric(__global const real4 *pos, __global const int *nlist, __global const int *ncount,
                                 uint stride, uint n, __constant const real_t *coef, real_t rc2, real4 blen,
                                 real4 bhalf, __global acc_t *force, __global acc_t *ev,
                                 __global volatile int *status) {
  uint i = (uint)get_global_id(0);
  if (i >= n) return;
  real4 pi = pos[i];
  int ti = MD_TYPE_OF(pi);
  acc_t ax = 0, ay = 0, az = 0, ae = 0, aw = 0;
  int bad = 0, cnt = ncount[i];
  __global const int *nl = nlist + i;
  for (int k = 0; k < cnt; k++, nl += stride) {
    int j = *nl;
    acc_t fx = 0, fy = 0, fz = 0;
    if (md_pair(pi, pos[j], ti, coef, rc2, blen, bhalf, &fx, &fy, &fz, &ae, &aw, &bad)) {
      ax += fx;
      ay += fy;
      az += fz;
      md_atomic_add(&force[j], -fx);
      md_atomic_add(&force[stride + j], -fy);
      md_atomic_add(&force[2 * stride + j], -fz);
    }
  }
  md_atomic_add(&force[i], ax);
  md_atomic_add(&force[stride + i], ay);
  md_atomic_add(&force[2 * stride + i], az);
#if MD_EV
  ev[i] = ae;
  ev[stride + i] = aw;
#endif
  if (bad) md_flag(status, MD_ERR_RANGE);
}
#endif

/* ---- cell list and canonical atom order -------------------------------------------------------------
 * At each rebuild atoms are renumbered in (cell, tag) order — the cell from the positions, the tag the
 * atom's index in the system — so the internal order, the cell ranges and the neighbour lists are pure
 * functions of the positions, whichever work-item ran first. A cell holds atoms [cstart[c], cstart[c+1]). */

/* Cell coordinate along one axis: floor((x - lo) * inv) clamped to [0, nc - 1] (open axes: atoms
 * outside the box fall into the edge cells, which keeps neighbours in adjacent cells). */
RCL_FN int md_cell_coord(real_t x, real_t lo, real_t inv, int nc) {
  real_t u = R_MUL(R_SUB(x, lo), inv);
  if (!(u >= MD_ONE)) return 0; /* also NaN; u in [0, 1) is cell 0 */
  if (u >= (real_t)nc) return nc - 1;
  return convert_int(u);
}

RCL_FN int md_cell_of(real4 p, real4 blo, real4 cinv, int4 nc) {
  real_t x[3] = {p.x, p.y, p.z}, lo[3] = {blo.x, blo.y, blo.z}, inv[3] = {cinv.x, cinv.y, cinv.z};
  int n[3] = {nc.x, nc.y, nc.z}, c = 0;
  for (int d = 2; d >= 0; d--) c = c * n[d] + md_cell_coord(x[d], lo[d], inv[d], n[d]); /* (cz*ny + cy)*nx + cx */
  return c;
}

/* The cells' atom counts (atomics into ccount), then, by the launch's last work-group to arrive, the
 * exclusive scan of the counts into cstart[0..ncells] (each work-item a contiguous chunk), the counts (for
 * the next build) and the fill counters zeroed; the largest cell kept in status[3] (a cell above maxcell is
 * an error: scanning 27 of them exceeds the driver's loop limit), the pair count reset and the build
 * counted. One launch, no device-wide barrier: the last group is found by a ticket (status[9], left 0), as
 * the reductions' last group is (cl/reduce.cl). No plain load or store carries a count between work-groups:
 * each count is an atomic whose old value is used (an atomic whose value is unused may be posted — NVIDIA's
 * `red` — and still be in flight when the group takes its ticket: seen on the H100, lists missing pairs and
 * atoms overlapping), and the last group takes the counts by atomic exchange (which also zeroes them). The
 * scan's total must be n: else MD_ERR_LOST, never a silently wrong list. */
__kernel void md_cell_count(__global const real4 *pos, uint n, real4 blo, real4 cinv, int4 nc, __global int *cellof,
                            __global volatile int *ccount, __global int *cstart, __global int *cfill, uint ncells,
                            __global volatile int *status, uint seq, int maxcell, __local int *part) {
  __local volatile uint last;
  uint i = (uint)get_global_id(0), lid = (uint)get_local_id(0), W = (uint)get_local_size(0);
  MD_BUILD_GATE(status, seq)
  if (i < n) {
    int c = md_cell_of(pos[i], blo, cinv, nc);
    cellof[i] = c;
    if (atomic_inc(&ccount[c]) == INT_MAX) md_flag(status, MD_ERR_CELLS); /* the old value used (see above) */
    mem_fence(CLK_GLOBAL_MEM_FENCE);
  }
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  if (lid == 0) {
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    last = atomic_inc(&status[MD_ST_TICKET]) == (int)get_num_groups(0) - 1;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (!last) return;
  mem_fence(CLK_GLOBAL_MEM_FENCE);
  uint chunk = (ncells + W - 1) / W, a = lid * chunk, b = a + chunk < ncells ? a + chunk : ncells;
  int s = 0, mx = 0;
  for (uint c = a; c < b; c++) {
    int v = atomic_xchg(&ccount[c], 0); /* zeroed for the next build */
    cstart[c] = v;                      /* the count, until the prefix replaces it below */
    s += v;
    mx = max(mx, v);
  }
  part[lid] = s;
  part[W + lid] = mx;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0) {
    int run = 0, m = 0;
    for (uint k = 0; k < W; k++) {
      int v = part[k];
      part[k] = run;
      run += v;
      m = max(m, part[W + k]);
    }
    cstart[ncells] = run;
    status[MD_ST_MAXCELL] = max(status[MD_ST_MAXCELL], m);
    status[4] = 0;
    status[5] = 0;
    status[MD_ST_BUILDS] += 1;
    atomic_xchg(&status[MD_ST_TICKET], 0);
    if (m > maxcell) md_flag(status, MD_ERR_CELLS);
    if (run != (int)n) md_flag(status, MD_ERR_LOST);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  int run = part[lid];
  for (uint c = a; c < b; c++) {
    int v = cstart[c];
    cstart[c] = run;
    run += v;
    cfill[c] = 0;
  }
}

/* Cell members in arrival order (not canonical yet). */
__kernel void md_cell_fill(__global const int *cellof, uint n, __global const int *cstart, __global volatile int *cfill,
                           __global int *members, __global const int *status, uint seq) {
  uint i = (uint)get_global_id(0);
  MD_BUILD_GATE(status, seq)
  if (i >= n) return;
  int c = cellof[i];
  members[cstart[c] + atomic_inc(&cfill[c])] = (int)i;
}

/* Moves atom i to its canonical place: its cell's start plus the number of cell members with a smaller
 * tag, into pos0 (the positions at the build, kept for the displacement check) and the sorted velocity and
 * tag arrays; md_neigh_build copies them back. */
__kernel void md_sort_move(__global const real4 *pos, __global const real4 *vel, __global const int *tag,
                           __global const int *cellof, __global const int *cstart, __global const int *members, uint n,
                           __global real4 *pos0, __global real4 *vel_out, __global int *tag_out, __global int *cell_out,
                           __global const int *status, uint seq) {
  uint i = (uint)get_global_id(0);
  MD_BUILD_GATE(status, seq)
  if (i >= n) return;
  int c = cellof[i], s = cstart[c], e = cstart[c + 1], t = tag[i], rank = 0;
  for (int k = s; k < e; k++) rank += tag[members[k]] < t;
  int d = s + rank;
  pos0[d] = pos[i];
  vel_out[d] = vel[i];
  tag_out[d] = t;
  cell_out[d] = c;
}

/* The distinct cells along one axis next to cell c, in increasing order (1 to 3 of them). */
RCL_FN int md_axis_cells(int c, int nc, int periodic, int *out) {
  int m = 0;
  for (int d = -1; d <= 1; d++) {
    int v = c + d;
    if (v < 0 || v >= nc) {
      if (!periodic) continue;
      v = v < 0 ? v + nc : v - nc;
    }
    out[m++] = v;
  }
  /* sort three (or fewer) values, dropping duplicates (fewer than three cells along the axis) */
  for (int a = 0; a < m; a++)
    for (int b = a + 1; b < m; b++)
      if (out[b] < out[a]) {
        int t = out[a];
        out[a] = out[b];
        out[b] = t;
      }
  int u = 0;
  for (int a = 0; a < m; a++)
    if (u == 0 || out[a] != out[u - 1]) out[u++] = out[a];
  return u;
}

/* Neighbour list of atom i: the atoms j != i (half: j > i) of the adjacent cells with r2 < rcs2
 * (cutoff + skin), visited in increasing cell and then internal index order, so every list is sorted by
 * internal index. The count of all partners (both halves) is checked against MD_MAX_PARTNERS. pos holds
 * the sorted positions (pos0); the atom's sorted position, velocity and tag are copied into the state
 * arrays (pos_out, vel_out, tag_out), which always hold the current order. */
__kernel void md_neigh_build(__global const real4 *pos, __global const int *cellof, __global const int *cstart, uint n,
                             int4 nc, uint periodic, real4 blen, real4 bhalf, real_t rcs2, uint halflist, uint stride,
                             uint cap, __global int *nlist, __global int *ncount, __global volatile int *status,
                             uint seq, __global const real4 *vel_s, __global const int *tag_s, __global real4 *pos_out,
                             __global real4 *vel_out, __global int *tag_out) {
  uint i = (uint)get_global_id(0);
  MD_BUILD_GATE(status, seq)
  if (i >= n) return;
  pos_out[i] = pos[i];
  vel_out[i] = vel_s[i];
  tag_out[i] = tag_s[i];
  int c = cellof[i];
  int cx = c % nc.x, cy = (c / nc.x) % nc.y, cz = c / (nc.x * nc.y);
  int xs[3], ys[3], zs[3];
  int nx = md_axis_cells(cx, nc.x, periodic & 1u, xs);
  int ny = md_axis_cells(cy, nc.y, periodic & 2u, ys);
  int nz = md_axis_cells(cz, nc.z, periodic & 4u, zs);
  real4 pi = pos[i];
  uint cnt = 0, all = 0;
  for (int a = 0; a < nz; a++)
    for (int b = 0; b < ny; b++)
      for (int d = 0; d < nx; d++) {
        int cc = (zs[a] * nc.y + ys[b]) * nc.x + xs[d];
        int e = cstart[cc + 1];
        for (int j = cstart[cc]; j < e; j++) {
          if (j == (int)i) continue;
          real_t dx, dy, dz;
          if (!(md_dist2(pi, pos[j], blen, bhalf, &dx, &dy, &dz) < rcs2)) continue;
          all++;
          if (halflist && j < (int)i) continue;
          if (cnt < cap) nlist[(ulong)cnt * stride + i] = j;
          cnt++;
        }
      }
  ncount[i] = (int)(cnt < cap ? cnt : cap);
  volatile __global uint *pairs = (volatile __global uint *)&status[4];
  if (atomic_add(&pairs[0], all) > 0xffffffffu - all) atomic_inc(&pairs[1]); /* carry */
  if (cnt > cap) {
    md_flag(status, MD_ERR_CAPACITY);
    atomic_max(&status[MD_ST_MAXNEIGH], (int)cnt);
  }
  if (all > MD_MAX_PARTNERS) md_flag(status, MD_ERR_PARTNERS);
}

/* ---- velocity Verlet (contract md.nve) --------------------------------------------------------------- */

/* The per-atom updates (contract md.nve). Each component takes
 *   kick:  v = v + dtfm * F      (F the correctly rounded value of the fixed-point force)
 *   drift: x = x + dtv * v
 *   wrap:  x = x - len if x >= hi, x = x + len if x < lo (periodic axes; comparisons on the bit patterns)
 * then the escape check (x outside [elo, ehi] = [lo - len/2, hi + len/2] is an error) and, with check,
 * the displacement test against the positions of the last build: a rebuild request for this step (seq)
 * beyond skin/2 (d2 > hskin2). The displacement test only decides
 * when lists are rebuilt, which changes no bit, so it uses the pair arithmetic.
 *
 * On devices that emulate fp32 operations (integer routines behind every R_ADD and R_MUL), every exact
 * operation of a step runs through one loop body — kick, drift and wrap alike are y = a + b * c, with
 * b = 1 for the wrap, which is exact — so the emulation appears once in the kernel: a driver that
 * processes the kernel at every launch (Mesa 22.3's Rusticl) pays for its size every step. Elsewhere
 * the plain sequence. Both are the same operations in the same order. */
#if defined(RCL_DTYPE_F32) && (defined(RCL_EMULATE_F32_SUBNORMALS) || defined(RCL_EMULATE_F32_DIV_SQRT)) && \
    !defined(RCL_NATIVE)
#define MD_COMPACT 1
#else
#define MD_COMPACT 0
#endif

RCL_FN real_t md_wrap_shift(real_t x, real_t lo, real_t hi, real_t len) {
  return MD_GE(x, hi) ? R_NEG(len) : MD_LT(x, lo) ? len : MD_ZERO;
}

/* kicks (1 or 2) half kicks, then (with drift) the drift and the wrap; returns the new velocity, and the
 * position in *p. */
RCL_FN real4 md_update(real4 v, real4 *p, real_t h, __global const acc_t *force, uint i, uint stride, uint kicks,
                       uint drift, real_t dtv, real4 blo, real4 bhi, real4 blen, uint periodic) {
  real_t x[3] = {p->x, p->y, p->z}, u[3] = {v.x, v.y, v.z}, f[3];
  real_t lo[3] = {blo.x, blo.y, blo.z}, hi[3] = {bhi.x, bhi.y, bhi.z}, len[3] = {blen.x, blen.y, blen.z};
  for (uint d = 0; d < 3u; d++) f[d] = MD_FORCE_REAL(force[d * stride + i]);
  RCL_OPAQUE_ZERO(z); /* the kicks add to u in order: ordered loops (prelude.cl) */
#if MD_COMPACT
  uint nops = 3u * (kicks + (drift ? 2u : 0u));
  RCL_ORDERED_LOOP for (uint k = 0; k < nops; k++) {
    uint d = k % 3u, phase = k / 3u;
    real_t a, b, c;
    if (phase < kicks) {
      a = u[d];
      b = h;
      c = f[d];
    } else if (phase == kicks) {
      a = x[d];
      b = dtv;
      c = u[d];
    } else {
      a = x[d];
      b = MD_ONE;
      c = (periodic & (1u << d)) ? md_wrap_shift(x[d], lo[d], hi[d], len[d]) : MD_ZERO;
    }
    real_t r = R_SEAL(R_ADD(a, R_MUL(b, c)), z);
    if (phase < kicks) u[d] = r;
    else if (phase == kicks || c != MD_ZERO) x[d] = r;
  }
#else
  RCL_ORDERED_LOOP for (uint k = 0; k < kicks; k++)
    for (uint d = 0; d < 3u; d++) u[d] = R_SEAL(R_ADD(u[d], R_MUL(h, f[d])), z);
  if (drift)
    for (uint d = 0; d < 3u; d++) {
      real_t c = R_ADD(x[d], R_MUL(dtv, u[d]));
      if (periodic & (1u << d)) {
        if (MD_GE(c, hi[d])) c = R_SUB(c, len[d]);
        else if (MD_LT(c, lo[d])) c = R_ADD(c, len[d]);
      }
      x[d] = c;
    }
#endif
  *p = (real4)(x[0], x[1], x[2], p->w);
  return (real4)(u[0], u[1], u[2], v.w);
}

/* The first half of a step: half kick (kicks = 2: first the previous step's deferred second half kick,
 * rounded on its own, so the bits are those of two launches) and drift. With check, the rebuild request:
 * the build kernels are launched on the steps build_seq names (every step, or every M-th: the host's
 * choice, md_device.c), so an atom beyond early2 (at most hskin2) asks for the build of step build_seq; one
 * beyond hskin2 on a step that launches no build would meet a stale list (MD_ERR_STALE: the host runs the
 * window again with a build launched every step). When a list is rebuilt changes no bit. */
__kernel void md_integrate1(__global real4 *pos, __global real4 *vel, __global const acc_t *force,
                            __global const real4 *pos0, uint n, uint stride, __constant const real_t *coef, real_t dtv,
                            real4 blo, real4 bhi, real4 blen, real4 bhalf, real4 elo, real4 ehi, uint periodic,
                            uint check, real_t hskin2, uint kicks, uint seq, __global volatile int *status,
                            uint build_seq, real_t early2) {
  uint i = (uint)get_global_id(0);
  if (i == 0) status[MD_ST_STEP] = (int)seq; /* later kernels of the step name it in their errors */
  if (i >= n) return;
  real4 p = pos[i];
  real4 v = md_update(vel[i], &p, coef[MD_C_DTFM + MD_TYPE_OF(p)], force, i, stride, kicks, 1u, dtv, blo, bhi, blen,
                      periodic);
  int finite = MD_FINITE(p.x) & MD_FINITE(p.y) & MD_FINITE(p.z) & MD_FINITE(v.x) & MD_FINITE(v.y) & MD_FINITE(v.z);
  int escaped = ((periodic & 1u) && (MD_LT(p.x, elo.x) || MD_LT(ehi.x, p.x))) ||
                ((periodic & 2u) && (MD_LT(p.y, elo.y) || MD_LT(ehi.y, p.y))) ||
                ((periodic & 4u) && (MD_LT(p.z, elo.z) || MD_LT(ehi.z, p.z)));
  if (!finite)
    md_flag_at(status, MD_ERR_NONFINITE, (int)seq);
  else if (escaped)
    md_flag_at(status, MD_ERR_ESCAPED, (int)seq);
  pos[i] = (real4)(R_CANON(p.x), R_CANON(p.y), R_CANON(p.z), p.w);
  vel[i] = (real4)(R_CANON(v.x), R_CANON(v.y), R_CANON(v.z), v.w);
  if (check) {
    real_t dx, dy, dz, d2 = md_dist2(p, pos0[i], blen, bhalf, &dx, &dy, &dz);
    if (!(d2 <= early2)) atomic_xchg(&status[MD_ST_REBUILD], (int)build_seq); /* also NaN */
    if (build_seq != seq && !(d2 <= hskin2)) md_flag_at(status, MD_ERR_STALE, (int)seq);
  }
}

/* The second half kick: v += dtfm * F. */
__kernel void md_integrate2(__global const real4 *pos, __global real4 *vel, __global const acc_t *force, uint n,
                            uint stride, __constant const real_t *coef, __global volatile int *status) {
  uint i = (uint)get_global_id(0);
  if (i >= n) return;
  real4 p = pos[i];
  real4 v = md_update(vel[i], &p, coef[MD_C_DTFM + MD_TYPE_OF(p)], force, i, stride, 1u, 0u, MD_ZERO, p, p, p, 0u);
  if (!(MD_FINITE(v.x) && MD_FINITE(v.y) && MD_FINITE(v.z))) md_flag(status, MD_ERR_NONFINITE);
  vel[i] = (real4)(R_CANON(v.x), R_CANON(v.y), R_CANON(v.z), v.w);
}

/* ---- thermo sums (contract md.thermo) -----------------------------------------------------------------
 * Per group: the sums of the per-atom energy, virial and kinetic term m v^2 (converted like a pair
 * contribution, |.| < 2^62). Integer sums are exact in any order; each 64-bit value is split into a
 * signed high and an unsigned low 32-bit half so the sums cannot overflow, and the host joins them. */
#ifdef RCL_NATIVE
#define MD_KE_FIXED(v, bad) (v)
#else
#define MD_KE_FIXED(v, bad) ((bad) |= !(fabs(v) < MD_KE_LIMIT), convert_long_rte(v))
#endif
/* The thermo partial sums of the atoms i < n, and with tag non-NULL only of those with tag[i] < nown (the owned
 * atoms of a decomposed simulation's local one: owned atoms first, then ghosts). */
RCL_FN void md_thermo_sums(__global const real4 *pos, __global const real4 *vel, __global const acc_t *ev,
                           __global const int *tag, uint nown, uint n, uint stride, __constant const real_t *coef,
                           __global acc_t *partials, __global volatile int *status, __local acc_t *scratch) {
  uint lid = (uint)get_local_id(0), W = (uint)get_local_size(0);
  acc_t s[6] = {0, 0, 0, 0, 0, 0};
  int bad = 0;
  for (uint i = (uint)get_global_id(0); i < n; i += (uint)get_global_size(0)) {
    if (tag && (uint)tag[i] >= nown) continue;
    real4 v = vel[i];
    real_t m = coef[MD_C_MASS + MD_TYPE_OF(pos[i])];
    real_t mv2 = R_MUL(m, R_ADD(R_ADD(R_MUL(v.x, v.x), R_MUL(v.y, v.y)), R_MUL(v.z, v.z)));
    real_t kes = MD_SC(mv2);
    acc_t t[3] = {ev[i], ev[stride + i], MD_KE_FIXED(kes, bad)};
    for (int q = 0; q < 3; q++) {
#ifdef RCL_NATIVE
      s[2 * q] += t[q];
#else
      s[2 * q] += t[q] >> 32;
      s[2 * q + 1] += t[q] & 0xffffffffl;
#endif
    }
  }
  if (bad) md_flag(status, MD_ERR_KINETIC);
  for (int q = 0; q < 6; q++) scratch[q * W + lid] = s[q];
  for (uint stride2 = W / 2u; stride2 > 0u; stride2 >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < stride2)
      for (int q = 0; q < 6; q++) scratch[q * W + lid] += scratch[q * W + lid + stride2];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0)
    for (int q = 0; q < 6; q++) partials[get_group_id(0) * 6 + q] = scratch[q * W];
}

__kernel void md_thermo_partials(__global const real4 *pos, __global const real4 *vel, __global const acc_t *ev,
                                 uint n, uint stride, __constant const real_t *coef, __global acc_t *partials,
                                 __global volatile int *status, __local acc_t *scratch) {
  md_thermo_sums(pos, vel, ev, (__global const int *)0, n, n, stride, coef, partials, status, scratch);
}

/* ---- a decomposed simulation's ghost exchange (src/md/md_domain.c) ------------------------------------
 * The local atoms' internal indices of the atoms sent to other devices or ranks, and of the ghosts, are fixed
 * between decompositions (the local simulation never rebuilds on its own). */

/* The thermo partial sums of the owned atoms only (tag < nown). */
__kernel void md_thermo_owned(__global const real4 *pos, __global const real4 *vel, __global const acc_t *ev,
                              __global const int *tag, uint nown, uint n, uint stride, __constant const real_t *coef,
                              __global acc_t *partials, __global volatile int *status, __local acc_t *scratch) {
  md_thermo_sums(pos, vel, ev, tag, nown, n, stride, coef, partials, status, scratch);
}

/* out[j] = pos[idx[j]]: the positions (type tag included) of the atoms sent. */
__kernel void md_pos_gather(__global const real4 *pos, __global const int *idx, uint m, __global real4 *out) {
  uint j = (uint)get_global_id(0);
  if (j < m) out[j] = pos[idx[j]];
}

/* pos[idx[j]] = in[j], vel[idx[j]] = 0: the ghosts' positions from their owners. A ghost's velocity only ever
 * carries its incomplete local forces (never read: its position is overwritten before every force computation);
 * zeroing it keeps it bounded. */
__kernel void md_pos_scatter(__global real4 *pos, __global real4 *vel, __global const int *idx, uint m,
                             __global const real4 *in) {
  uint j = (uint)get_global_id(0);
  if (j >= m) return;
  uint i = (uint)idx[j];
  pos[i] = in[j];
  vel[i] = (real4)(MD_ZERO, MD_ZERO, MD_ZERO, vel[i].w);
}
