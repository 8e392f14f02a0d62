/* What the simulation (md_sim.c) and both backends (md_device.c, md_ref.c) share: exact fixed-point
 * totals (contract md.thermo), the fixed-point scale, and the error text of the kernels' status bits. */
#include <math.h>

#include "core/portable_host.h"
#include "rcl_softfloat.cl"

#include "md/md_internal.h"

int rcl_md_fixed_bits(rcl_dtype dtype) { return dtype == RCL_F64 ? RCL_MD_FIXED_BITS_F64 : RCL_MD_FIXED_BITS_F32; }

/* ---- exact fixed-point totals ---------------------------------------------------------------------- */

void md_sum_add(md_sum *s, int64_t q) {
  s->hi += q >> 32; /* arithmetic shift: q = (q >> 32) * 2^32 + (q & 0xffffffff) */
  s->lo += q & 0xffffffff;
  if (s->lo >= ((int64_t)1 << 62)) md_sum_normalize(s);
}

void md_sum_normalize(md_sum *s) {
  s->hi += s->lo >> 32;
  s->lo &= 0xffffffff;
}

int md_sum_halve(md_sum *s) {
  md_sum_normalize(s);
  if (s->lo & 1) return 0;
  /* (hi * 2^32 + lo) / 2 = (hi >> 1) * 2^32 + ((hi & 1) * 2^31 + lo / 2) */
  s->lo = ((s->hi & 1) << 31) + (s->lo >> 1);
  s->hi >>= 1;
  return 1;
}

double md_sum_to_double(md_sum s, int bits) {
  md_sum_normalize(&s);
  /* |value| = |hi * 2^32 + lo| < 2^95: as a 128-bit magnitude, jammed to 63 bits, rounded once. */
  __extension__ typedef unsigned __int128 u128;
  __extension__ typedef __int128 i128;
  int neg = s.hi < 0;
  u128 v = (u128)((i128)s.hi * ((i128)1 << 32) + (i128)s.lo); /* |hi| < 2^63: no overflow in 128 bits */
  if (neg) v = (u128)0 - v;
  int e = -bits;
  uint64_t sticky = 0;
  while (v >> 63) {
    sticky |= (uint64_t)(v & 1u);
    v >>= 1;
    e++;
  }
  uint64_t m = (uint64_t)v | sticky;
  uint64_t b = rcl_round_pack(m, e, 53, -1074, 0x7ff0000000000000u);
  if (neg) b |= (uint64_t)1 << 63;
  double d;
  memcpy(&d, &b, 8);
  return d;
}

int md_status_error(const rcl_md *md, unsigned bits, const char *where) {
  if (bits & MD_ERR_NONFINITE)
    return rcl__fail(RCL_ERR_INVALID_ARG,
                     "a position or velocity became infinite or NaN %s (step %zu): the time step is too large or "
                     "the input is broken",
                     where, md->step);
  if (bits & MD_ERR_ESCAPED)
    return rcl__fail(RCL_ERR_INVALID_ARG,
                     "an atom moved more than half a periodic box length in one step %s (step %zu): the time step is "
                     "far too large or a velocity is absurd",
                     where, md->step);
  if (bits & MD_ERR_RANGE)
    return rcl__fail(RCL_ERR_OVERFLOW,
                     "a pair force, energy or virial left the fixed-point range %s (step %zu): |value| * 2^%d must "
                     "stay below 2^%d, i.e. |value| < %g (atoms overlap, or the time step is too large)",
                     where, md->step, md->bits, RCL_MD_FIXED_LIMIT_LOG2,
                     ldexp(1.0, RCL_MD_FIXED_LIMIT_LOG2 - md->bits));
  if (bits & MD_ERR_PARTNERS)
    return rcl__fail(RCL_ERR_OVERFLOW,
                     "an atom has more than %d partners within cutoff + skin %s (step %zu): the fixed-point sums "
                     "could overflow",
                     RCL_MD_MAX_NEIGHBORS, where, md->step);
  if (bits & MD_ERR_KINETIC)
    return rcl__fail(RCL_ERR_OVERFLOW,
                     "a kinetic energy term m v^2 left the fixed-point range %s (step %zu): it must stay below %g",
                     where, md->step, ldexp(1.0, 62 - md->bits));
  if (bits & MD_ERR_LOST)
    return rcl__fail(RCL_ERR_INTERNAL,
                     "a neighbour-list build's cell counts missed atoms %s (step %zu): the device's atomics were not "
                     "all visible to the scan (a memory-ordering bug; please report it with `reprocl devices`)",
                     where, md->step);
  return rcl__fail(RCL_ERR_INTERNAL, "unexpected MD status bits 0x%x %s (step %zu)", bits, where, md->step);
}
