/* rcl_exact.cl — exact accumulation of binary32/binary64 sums and dot products in a fixed-point
 * superaccumulator, and correct rounding of the result. Integer arithmetic only, shared by the device
 * kernels (reduce.cl, spmv.cl) and the host reference (src/exact_host.c), so the exact contract means
 * the same bits everywhere — also on devices that flush subnormals.
 *
 * Layout: digit k of an accumulator has weight 2^(32k + base). Every term is added as up to five
 * 32-bit-aligned chunks (each < 2^33) into signed 64-bit slots, so a slot absorbs 2^29 terms before it
 * could overflow; the kernels bound the terms per slot accordingly. The digit counts cover the full
 * exponent range of the terms plus 40 bits of headroom for 2^40 terms. */
#ifndef RCL_EXACT_CL
#define RCL_EXACT_CL

#define RCL_XACC_F32_SUM_DIGITS 10   /* terms 2^-149 .. 2^128        */
#define RCL_XACC_F32_SUM_BASE (-149)
#define RCL_XACC_F32_DOT_DIGITS 19   /* products 2^-298 .. 2^256     */
#define RCL_XACC_F32_DOT_BASE (-298)
#define RCL_XACC_F64_SUM_DIGITS 67   /* terms 2^-1074 .. 2^1024      */
#define RCL_XACC_F64_SUM_BASE (-1074)
#define RCL_XACC_F64_DOT_DIGITS 133  /* products 2^-2148 .. 2^2048   */
#define RCL_XACC_F64_DOT_BASE (-2148)
#define RCL_XACC_MAX_DIGITS 133
/* Terms one slot may take before it could overflow (2^29 chunks of < 2^33 each stay below 2^62). */
#define RCL_XACC_MAX_TERMS_PER_SLOT (1u << 29)

/* Flags accumulated beside the digits (ORed across terms). */
#define RCL_XF_NAN 1u        /* a NaN term, or inf*0 in a product */
#define RCL_XF_PINF 2u       /* a +inf term */
#define RCL_XF_NINF 4u       /* a -inf term */
#define RCL_XF_NOT_NEGZERO 8u /* some term is not -0 (an all -0 sum is -0, as IEEE addition gives) */

/* One finite term: neg * (hi * 2^64 + lo) * 2^(pos + base). */
typedef struct {
  rcl_u64 lo;
  rcl_u64 hi;
  rcl_i32 pos;
  rcl_u32 neg;
  rcl_u32 flags;
} rcl_xterm;

/* Flags of a special (zero, inf, NaN) value with sign s; a finite non-zero value gets NOT_NEGZERO. */
RCL_FN rcl_u32 rcl_xflags_of(int is_nan, int is_inf, int is_zero, rcl_u32 s) {
  if (is_nan) return RCL_XF_NAN | RCL_XF_NOT_NEGZERO;
  if (is_inf) return (s ? RCL_XF_NINF : RCL_XF_PINF) | RCL_XF_NOT_NEGZERO;
  if (is_zero && s) return 0u;
  return RCL_XF_NOT_NEGZERO;
}

RCL_FN rcl_xterm rcl_xterm_f32(rcl_u32 u) {
  rcl_xterm t;
  rcl_u32 ex = (u >> 23) & 0xffu, fr = u & 0x7fffffu;
  t.neg = u >> 31;
  t.hi = 0u;
  t.lo = (ex == 0xffu) ? 0u : (ex ? (rcl_u64)(fr | 0x800000u) : (rcl_u64)fr);
  t.pos = (rcl_i32)(ex ? ex : 1u) - 1; /* value = m * 2^(ex-150) = m * 2^(pos - 149) */
  t.flags = rcl_xflags_of(ex == 0xffu && fr != 0, ex == 0xffu && fr == 0, (u & 0x7fffffffu) == 0, t.neg);
  return t;
}

RCL_FN rcl_xterm rcl_xterm_f32_prod(rcl_u32 a, rcl_u32 b) {
  rcl_xterm x = rcl_xterm_f32(a), y = rcl_xterm_f32(b), t;
  rcl_u32 az = (a & 0x7fffffffu) == 0, bz = (b & 0x7fffffffu) == 0;
  rcl_u32 anan = (x.flags & RCL_XF_NAN) != 0, bnan = (y.flags & RCL_XF_NAN) != 0;
  rcl_u32 ainf = (x.flags & (RCL_XF_PINF | RCL_XF_NINF)) != 0, binf = (y.flags & (RCL_XF_PINF | RCL_XF_NINF)) != 0;
  t.neg = x.neg ^ y.neg;
  t.hi = 0u;
  t.lo = x.lo * y.lo; /* < 2^48: exact */
  t.pos = x.pos + y.pos;
  t.flags = rcl_xflags_of(anan || bnan || (ainf && bz) || (binf && az), ainf || binf, az || bz, t.neg);
  if (ainf || binf) t.lo = 0u;
  return t;
}

RCL_FN rcl_xterm rcl_xterm_f64(rcl_u64 u) {
  rcl_xterm t;
  rcl_u32 ex = (rcl_u32)((u >> 52) & 0x7ffu);
  rcl_u64 fr = u & 0xfffffffffffffu;
  t.neg = (rcl_u32)(u >> 63);
  t.hi = 0u;
  t.lo = (ex == 0x7ffu) ? 0u : (ex ? (fr | 0x10000000000000u) : fr);
  t.pos = (rcl_i32)(ex ? ex : 1u) - 1; /* value = m * 2^(pos - 1074) */
  t.flags = rcl_xflags_of(ex == 0x7ffu && fr != 0, ex == 0x7ffu && fr == 0, (u << 1) == 0, t.neg);
  return t;
}

RCL_FN rcl_xterm rcl_xterm_f64_prod(rcl_u64 a, rcl_u64 b) {
  rcl_xterm x = rcl_xterm_f64(a), y = rcl_xterm_f64(b), t;
  rcl_u32 az = (a << 1) == 0, bz = (b << 1) == 0;
  rcl_u32 anan = (x.flags & RCL_XF_NAN) != 0, bnan = (y.flags & RCL_XF_NAN) != 0;
  rcl_u32 ainf = (x.flags & (RCL_XF_PINF | RCL_XF_NINF)) != 0, binf = (y.flags & (RCL_XF_PINF | RCL_XF_NINF)) != 0;
  t.neg = x.neg ^ y.neg;
  t.lo = x.lo * y.lo; /* the 106-bit product, low and high halves */
  t.hi = RCL_MULHI64(x.lo, y.lo);
  t.pos = x.pos + y.pos;
  t.flags = rcl_xflags_of(anan || bnan || (ainf && bz) || (binf && az), ainf || binf, az || bz, t.neg);
  if (ainf || binf) {
    t.lo = 0u;
    t.hi = 0u;
  }
  return t;
}

/* The chunks of a term: slots[*d + j] += (neg ? -1 : 1) * c[j] for j < 5 adds the term exactly. */
RCL_FN void rcl_xterm_chunks(rcl_xterm t, rcl_i32 *d, rcl_u64 *c) {
  const rcl_u64 M = 0xffffffffu;
  rcl_u32 s = (rcl_u32)t.pos & 31u;
  rcl_u64 w0 = (t.lo & M) << s, w1 = (t.lo >> 32) << s, w2 = (t.hi & M) << s, w3 = (t.hi >> 32) << s;
  *d = t.pos >> 5;
  c[0] = w0 & M;
  c[1] = (w0 >> 32) + (w1 & M);
  c[2] = (w1 >> 32) + (w2 & M);
  c[3] = (w2 >> 32) + (w3 & M);
  c[4] = w3 >> 32;
}

/* Carry-normalises nd signed slots (each |slot| < 2^62) in place and rounds the exact value to a binary
 * format (P bits, smallest subnormal 2^lsb_min): returns the magnitude bits, *neg the sign and *zero
 * whether the exact value is zero. Slots are clobbered. */
RCL_FN rcl_u64 rcl_xacc_round(rcl_i64 *s, rcl_i32 nd, rcl_i32 base, rcl_i32 p, rcl_i32 lsb_min, rcl_u64 inf_bits,
                              rcl_u32 *neg, rcl_u32 *zero) {
  const rcl_i64 M = 0xffffffff;
  rcl_i64 carry = 0;
  for (rcl_i32 k = 0; k < nd; k++) {
    rcl_i64 v = s[k] + carry;
    rcl_i64 lo = v & M;
    s[k] = lo;
    carry = (v - lo) / ((rcl_i64)1 << 32); /* exact: v - lo is a multiple of 2^32 */
  }
  *neg = carry < 0;
  if (carry < 0) { /* two's complement: the magnitude is 2^(32 nd) - digits (carry is -1: headroom) */
    rcl_i64 c = 1;
    for (rcl_i32 k = 0; k < nd; k++) {
      rcl_i64 v = ((~s[k]) & M) + c;
      s[k] = v & M;
      c = v >> 32;
    }
  }
  rcl_i32 t = nd - 1;
  while (t >= 0 && s[t] == 0) t--;
  *zero = t < 0;
  if (t < 0) return 0u;
  rcl_u64 d2 = (rcl_u64)s[t];
  rcl_u64 d1 = t >= 1 ? (rcl_u64)s[t - 1] : 0u;
  rcl_u64 d0 = t >= 2 ? (rcl_u64)s[t - 2] : 0u;
  rcl_u32 sticky = 0;
  for (rcl_i32 k = 0; k < t - 2; k++) sticky |= s[k] != 0;
  rcl_i32 nb = 64 - RCL_CLZ64(d2); /* 1..32 */
  rcl_u64 low = (d1 << 32) | d0;
  /* A 63-bit window whose leading bit is bit 62; the bits below it only count as sticky. */
  rcl_u64 w = (d2 << (63 - nb)) | (low >> (nb + 1));
  if ((low & ((((rcl_u64)1) << (nb + 1)) - 1u)) != 0 || sticky) w |= 1u;
  rcl_i32 e = base + 32 * (t - 2) + nb + 1;
  return rcl_round_pack(w, e, p, lsb_min, inf_bits);
}

/* The final bits of an exact reduction from its slots and flags (see RCL_XF_*), binary32 or binary64. */
RCL_FN rcl_u64 rcl_xacc_result_bits(rcl_i64 *s, rcl_i32 nd, rcl_i32 base, rcl_u32 flags, int is_f64) {
  rcl_u64 sign = is_f64 ? ((rcl_u64)1 << 63) : (rcl_u64)0x80000000u;
  rcl_u64 inf = is_f64 ? (rcl_u64)0x7ff0000000000000u : (rcl_u64)0x7f800000u;
  rcl_u64 qnan = is_f64 ? (rcl_u64)0x7ff8000000000000u : (rcl_u64)0x7fc00000u;
  if ((flags & RCL_XF_NAN) || ((flags & RCL_XF_PINF) && (flags & RCL_XF_NINF))) return qnan;
  if (flags & RCL_XF_PINF) return inf;
  if (flags & RCL_XF_NINF) return sign | inf;
  rcl_u32 neg, zero;
  rcl_u64 mag = is_f64 ? rcl_xacc_round(s, nd, base, 53, -1074, inf, &neg, &zero)
                       : rcl_xacc_round(s, nd, base, 24, -149, inf, &neg, &zero);
  if (zero) return (flags & RCL_XF_NOT_NEGZERO) ? 0u : sign;
  return neg ? (sign | mag) : mag; /* a tiny non-zero value that rounds to 0 keeps its sign */
}

#endif
