/* rcl_softfloat.cl — IEEE 754 binary32 operations (round to nearest, ties to even, gradual underflow)
 * computed exactly with integer arithmetic on bit patterns. Shared by the device prelude and the host
 * (src/softfloat_host.c), so the same source defines both.
 *
 * Why: a device that does not report fp32 denormals may flush subnormal inputs and results to zero, and
 * one without CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT may return division and square root up to 2.5 / 3 ulp
 * off. On such devices the prelude routes the cases that could differ through these functions, so every
 * device gives the IEEE bits. NaN results are the canonical quiet NaN 0x7fc00000.
 *
 * Representation inside: a finite value is  m * 2^e  with an unsigned integer m. "Jammed" values carry a
 * sticky bit ORed into bit 0 when lower bits were discarded; rounding is exact as long as at least two
 * bits lie below the rounding position, which every caller guarantees (m has >= 26 significant bits
 * whenever it is jammed). */
#ifndef RCL_SOFTFLOAT_CL
#define RCL_SOFTFLOAT_CL

#define RCL_F32_QNAN 0x7fc00000u
#define RCL_F32_INF 0x7f800000u
#define RCL_F32_SIGN 0x80000000u

RCL_FN int rcl_sf_isnan_bits(rcl_u32 u) { return (u & 0x7fffffffu) > RCL_F32_INF; }

/* Rounds m * 2^e (m may be jammed, m < 2^63) to a binary format with P significant bits whose smallest
 * subnormal is 2^lsb_min, and returns the magnitude's bit pattern: (lsb - lsb_min) << (P-1) plus the
 * significand — one formula for normals and subnormals. Overflow gives the infinity pattern.
 * binary32: P = 24, lsb_min = -149, inf = 0x7f800000; binary64: P = 53, lsb_min = -1074. */
RCL_FN rcl_u64 rcl_round_pack(rcl_u64 m, rcl_i32 e, rcl_i32 p, rcl_i32 lsb_min, rcl_u64 inf_bits) {
  if (m == 0) return 0u;
  rcl_i32 nbits = 64 - RCL_CLZ64(m);
  rcl_i32 lsb = e + nbits - p; /* exponent of the last kept bit of a normal result */
  if (lsb < lsb_min) lsb = lsb_min; /* gradual underflow: subnormals keep fewer bits */
  rcl_u64 q;
  if (lsb <= e) {
    q = m << (e - lsb); /* fewer than p significant bits: exact */
  } else {
    rcl_i32 k = lsb - e;
    if (k >= 64) return 0u; /* m < 2^63 <= half an ulp at this position: rounds to zero */
    q = m >> k;
    rcl_u64 rem = m & ((((rcl_u64)1) << k) - 1u);
    rcl_u64 halfway = ((rcl_u64)1) << (k - 1);
    if (rem > halfway || (rem == halfway && (q & 1u))) q += 1u;
    if (q == (((rcl_u64)1) << p)) { /* carried into the next binade */
      q >>= 1;
      lsb += 1;
    }
  }
  rcl_i64 ex = (rcl_i64)lsb - lsb_min;
  if (ex >= (rcl_i64)(inf_bits >> (p - 1))) return inf_bits; /* far beyond the largest finite value */
  rcl_u64 bits = ((rcl_u64)ex << (p - 1)) + q;
  return bits >= inf_bits ? inf_bits : bits;
}

/* Rounds sign * m * 2^e to binary32 bits (m < 2^63, possibly jammed). */
RCL_FN rcl_u32 rcl_sf_round_pack(rcl_u32 sign, rcl_u64 m, rcl_i32 e) {
  return sign | (rcl_u32)rcl_round_pack(m, e, 24, -149, RCL_F32_INF);
}

/* Splits finite non-zero bits into m (with the hidden bit) and e so that |x| = m * 2^e. */
RCL_FN void rcl_sf_unpack(rcl_u32 u, rcl_u64 *m, rcl_i32 *e) {
  rcl_u32 ex = (u >> 23) & 0xffu;
  rcl_u32 fr = u & 0x7fffffu;
  *m = ex ? (rcl_u64)(fr | 0x800000u) : (rcl_u64)fr;
  *e = (rcl_i32)(ex ? ex : 1u) - 150;
}

RCL_FN rcl_u32 rcl_sf_add(rcl_u32 a, rcl_u32 b) {
  if (rcl_sf_isnan_bits(a) || rcl_sf_isnan_bits(b)) return RCL_F32_QNAN;
  rcl_u32 aa = a & 0x7fffffffu, ab = b & 0x7fffffffu;
  if (aa == RCL_F32_INF || ab == RCL_F32_INF) {
    if (aa == RCL_F32_INF && ab == RCL_F32_INF && ((a ^ b) & RCL_F32_SIGN)) return RCL_F32_QNAN;
    return aa == RCL_F32_INF ? a : b;
  }
  if (aa == 0 && ab == 0) return a & b & RCL_F32_SIGN; /* -0 only if both are -0 */
  if (aa == 0) return b;
  if (ab == 0) return a;
  if (aa < ab) { /* make |a| >= |b| (as bit patterns, which order finite magnitudes) */
    rcl_u32 t = a; a = b; b = t;
    t = aa; aa = ab; ab = t;
  }
  rcl_u64 ma, mb;
  rcl_i32 ea, eb;
  rcl_sf_unpack(a, &ma, &ea);
  rcl_sf_unpack(b, &mb, &eb);
  rcl_i32 d = ea - eb; /* >= 0 */
  rcl_u64 xa, xb;
  rcl_i32 e;
  if (d <= 38) { /* exact alignment in 62 bits */
    xa = ma << d;
    xb = mb;
    e = eb;
  } else { /* b lies below a's 62-bit window: keep its top bits and jam the rest */
    xa = ma << 38;
    e = ea - 38;
    rcl_i32 k = d - 38;
    if (k >= 64) {
      xb = 1u;
    } else {
      xb = mb >> k;
      if ((xb << k) != mb) xb |= 1u;
    }
  }
  rcl_u32 sa = a & RCL_F32_SIGN;
  if ((a ^ b) & RCL_F32_SIGN) {
    rcl_u64 m = xa - xb; /* xa >= xb because |a| >= |b| */
    if (m == 0) return 0u; /* exact cancellation is +0 in round-to-nearest */
    return rcl_sf_round_pack(sa, m, e);
  }
  return rcl_sf_round_pack(sa, xa + xb, e);
}

RCL_FN rcl_u32 rcl_sf_mul(rcl_u32 a, rcl_u32 b) {
  if (rcl_sf_isnan_bits(a) || rcl_sf_isnan_bits(b)) return RCL_F32_QNAN;
  rcl_u32 sign = (a ^ b) & RCL_F32_SIGN;
  rcl_u32 aa = a & 0x7fffffffu, ab = b & 0x7fffffffu;
  if (aa == RCL_F32_INF || ab == RCL_F32_INF) {
    if (aa == 0 || ab == 0) return RCL_F32_QNAN;
    return sign | RCL_F32_INF;
  }
  if (aa == 0 || ab == 0) return sign;
  rcl_u64 ma, mb;
  rcl_i32 ea, eb;
  rcl_sf_unpack(a, &ma, &ea);
  rcl_sf_unpack(b, &mb, &eb);
  return rcl_sf_round_pack(sign, ma * mb, ea + eb); /* 48-bit exact product */
}

/* Moves the leading bit of a non-zero m (< 2^24) to bit 23, adjusting e: subnormals become normalised. */
RCL_FN void rcl_sf_normalize24(rcl_u64 *m, rcl_i32 *e) {
  rcl_i32 sh = RCL_CLZ64(*m) - 40;
  *m <<= sh;
  *e -= sh;
}

RCL_FN rcl_u32 rcl_sf_div(rcl_u32 a, rcl_u32 b) {
  if (rcl_sf_isnan_bits(a) || rcl_sf_isnan_bits(b)) return RCL_F32_QNAN;
  rcl_u32 sign = (a ^ b) & RCL_F32_SIGN;
  rcl_u32 aa = a & 0x7fffffffu, ab = b & 0x7fffffffu;
  if (aa == RCL_F32_INF) return ab == RCL_F32_INF ? RCL_F32_QNAN : (sign | RCL_F32_INF);
  if (ab == RCL_F32_INF) return sign;
  if (ab == 0) return aa == 0 ? RCL_F32_QNAN : (sign | RCL_F32_INF);
  if (aa == 0) return sign;
  rcl_u64 ma, mb;
  rcl_i32 ea, eb;
  rcl_sf_unpack(a, &ma, &ea);
  rcl_sf_unpack(b, &mb, &eb);
  rcl_sf_normalize24(&ma, &ea);
  rcl_sf_normalize24(&mb, &eb);
  rcl_u64 num = ma << 39;  /* < 2^63 */
  rcl_u64 q = num / mb;    /* 39 or 40 significant bits */
  if (q * mb != num) q |= 1u; /* jam the remainder */
  return rcl_sf_round_pack(sign, q, ea - eb - 39);
}

RCL_FN rcl_u32 rcl_sf_sqrt(rcl_u32 a) {
  if (rcl_sf_isnan_bits(a)) return RCL_F32_QNAN;
  rcl_u32 aa = a & 0x7fffffffu;
  if (aa == 0) return a; /* sqrt(-0) = -0 */
  if (a & RCL_F32_SIGN) return RCL_F32_QNAN;
  if (aa == RCL_F32_INF) return a;
  rcl_u64 m;
  rcl_i32 e;
  rcl_sf_unpack(a, &m, &e);
  rcl_sf_normalize24(&m, &e);
  if (e & 1) { /* make the exponent even so it halves exactly */
    m <<= 1;
    e -= 1;
  }
  rcl_u64 x = m << 38; /* < 2^63; the root has 31 or 32 bits */
  /* Bit-by-bit integer square root: r = floor(sqrt(x)). 32 steps, integer only. */
  rcl_u64 r = 0, rem = x, bit = ((rcl_u64)1) << 62;
  while (bit > rem) bit >>= 2;
  while (bit != 0) {
    if (rem >= r + bit) {
      rem -= r + bit;
      r = (r >> 1) + bit;
    } else {
      r >>= 1;
    }
    bit >>= 2;
  }
  if (rem != 0) r |= 1u; /* jam: the root is inexact */
  return rcl_sf_round_pack(0u, r, (e - 38) / 2);
}

#endif
