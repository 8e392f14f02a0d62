/* reduce.cl — deterministic reductions (contracts "reduce.ordered" v1 and "reduce.exact" v1 in
 * docs/contracts.md) and the element-wise updates of contract "blas1" v1.
 *
 * ordered: the leaves are lane sums. Elements are grouped in blocks of RED_B = RED_L * RED_M; lane l of
 *   block b sums x[b*RED_B + l + RED_L*j], j = 0, 1, ... left to right, starting from its first element.
 *   The leaves, in (block, lane) order, are then combined level by level: at each level neighbours
 *   (2k, 2k+1) are added and an unpaired last value is carried up unchanged. Every work-group size and
 *   grid only changes which work-item computes which node of this one tree.
 * exact: every term goes into a superaccumulator (rcl_exact.cl); integer sums do not depend on order.
 * Both run as one launch per call (the last work-group finishes); the task variants are reduce_task.cl.
 * finalize: 0 none, 1 the result, 2 its square root (nrm2), 3 parts out for a partial reduction
 * (src/reduce/reduce_partial_dev.c): ordered, each group's value to out[out_off + group] (no final tree);
 * exact, the superaccumulator's digits and flags as long to out[0 .. D] (no rounding). */

#define RED_L 64u
#define RED_M 32u
#define RED_B (RED_L * RED_M)

/* Leaves of n elements: full blocks give RED_L lanes each, the last one min(RED_L, rest). */
RCL_FN ulong rcl_red_leaves(ulong n) {
  ulong rest = n % RED_B;
  return (n / RED_B) * RED_L + (rest < RED_L ? rest : RED_L);
}

/* Levels of the pairwise tree over s[0..c) within S slots (S a power of two, slots aligned to the global
 * tree): s[0] receives the sum. Every work-item of the group must call it. */
RCL_FN void rcl_red_tree(__local real_t *s, uint S, uint c, uint lid, uint W) {
  for (uint stride = 1; stride < S; stride <<= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = lid * 2u * stride; i < S; i += W * 2u * stride)
      if (i + stride < c) s[i] = R_ADD(s[i], s[i + stride]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}

/* The control block at the head of the reduction scratch buffer (src/queue_scratch.c; offsets mirrored
 * in src/reduce.c): the ticket that finds a launch's last work-group, the exact-mode flags, and from word
 * RED_CTL_DIGITS the exact-mode digit sums (D positive magnitudes, then D negative ones). Each launch's
 * last work-group leaves the block zero again, so the next launch on the queue needs no fill. */
#define RED_CTL_TICKET 0
#define RED_CTL_FLAGS 1
#define RED_CTL_DIGITS 16

/* Whether this work-group is the launch's last to arrive; every work-item calls it once, after the
 * group's global writes and atomics. Results cross work-groups only through atomics whose values are used
 * (rcl_red_put, rcl_red_get, the digits' atomic_add): OpenCL 1.2 orders no plain store, even volatile and
 * fenced, before another work-item's ticket at device scope, and an atomic whose value is unused may be
 * posted (NVIDIA's `red`) and land after it — seen on the H100 in MD's cell counts (cl/md.cl). */
RCL_FN uint rcl_red_arrive(__global volatile uint *ctl, __local volatile uint *flag) {
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  if (get_local_id(0) == 0) {
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    *flag = atomic_inc(&ctl[RED_CTL_TICKET]) == (uint)get_num_groups(0) - 1u;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  uint last = *flag;
  mem_fence(CLK_GLOBAL_MEM_FENCE);
  return last;
}

/* part[g] = v by atomic exchange (its value returned, for the caller to use: see rcl_red_arrive); and the
 * value back by atomic reads. */
RCL_FN uint rcl_red_put(__global volatile real_t *part, ulong g, real_t v) {
#if defined(RCL_DTYPE_F64)
  ulong b = as_ulong(v);
  __global volatile uint *w = (__global volatile uint *)(part + g);
  return atomic_xchg(&w[0], (uint)b) ^ atomic_xchg(&w[1], (uint)(b >> 32));
#else
  return atomic_xchg((__global volatile uint *)(part + g), as_uint(v));
#endif
}
RCL_FN real_t rcl_red_get(__global volatile real_t *part, ulong g) {
#if defined(RCL_DTYPE_F64)
  __global volatile uint *w = (__global volatile uint *)(part + g);
  return as_double((ulong)atomic_or(&w[0], 0u) | (ulong)atomic_or(&w[1], 0u) << 32);
#else
  return as_float(atomic_or((__global volatile uint *)(part + g), 0u));
#endif
}

/* Ordered mode in one launch. Group g reduces the super-blocks [g*chunk, (g+1)*chunk) (S leaves each,
 * S = max(W, RED_L); chunk a power of two), an aligned subtree of the contract's tree, to one partial:
 * each super-block by a pairwise tree in local memory, the chunk's values by a binary-counter stack
 * (which merges exactly the tree's pairs, the unpaired last value carried up). The last group to arrive
 * reduces the partials, again as aligned subtrees of P values (P a power of two), in place, until one
 * value remains. LEAF(i) is the i-th term: x[i] for sums, x[i]*y[i] (rounded) for dot products. */
#define RCL_ORDERED_FUSED(NAME, LEAF)                                                                  \
  __kernel void NAME(__global const real_t *x, ulong xoff, __global const real_t *y, ulong yoff, ulong n,   \
                     uint chunk, __global volatile uint *ctl, ulong part_off, uint P, __global real_t *out,  \
                     ulong out_off, uint finalize, __local real_t *scratch, __local volatile uint *flag) {  \
    const uint W = (uint)get_local_size(0), lid = (uint)get_local_id(0);                                \
    const uint G = W >= RED_L ? W / RED_L : 1u;                                                        \
    const uint S = G * RED_L;                                                                          \
    const ulong nleaves = rcl_red_leaves(n);                                                           \
    const ulong nsuper = (nleaves + S - 1u) / S;                                                       \
    __global volatile real_t *part = (__global volatile real_t *)((__global volatile char *)ctl + part_off); \
    x += xoff;                                                                                         \
    y += yoff;                                                                                         \
    const ulong first = (ulong)get_group_id(0) * chunk;                                                \
    const uint cnt = (uint)(nsuper - first < chunk ? nsuper - first : chunk);                         \
    real_t stack[33];                                                                                  \
    uint top = 0;                                                                                      \
    RCL_OPAQUE_ZERO(z); /* ordered loops (prelude.cl): every add sealed */                             \
    for (uint c = 0; c < cnt; c++) {                                                                   \
      const ulong sb = first + c;                                                                      \
      for (uint slot = lid; slot < S; slot += W) {                                                     \
        ulong block = sb * G + slot / RED_L;                                                           \
        ulong i = block * RED_B + slot % RED_L;                                                        \
        if (i < n) {                                                                                   \
          real_t s = LEAF(i);                                                                          \
          if ((block + 1u) * RED_B <= n) {                                                             \
            RCL_ORDERED_LOOP for (uint j = 1; j < RED_M; j++) s =                                      \
                R_SEAL(R_ADD(s, LEAF(i + (ulong)j * RED_L)), z);                                       \
          } else {                                                                                     \
            RCL_ORDERED_LOOP for (i += RED_L; i < n; i += RED_L) s = R_SEAL(R_ADD(s, LEAF(i)), z);     \
          }                                                                                            \
          scratch[slot] = s;                                                                           \
        }                                                                                              \
      }                                                                                                \
      ulong left = nleaves - sb * S;                                                                   \
      rcl_red_tree(scratch, S, (uint)(left < S ? left : S), lid, W);                                  \
      if (lid == 0) {                                                                                  \
        real_t v = scratch[0];                                                                         \
        RCL_ORDERED_LOOP for (uint k = c + 1u; (k & 1u) == 0u; k >>= 1) v =                            \
            R_SEAL(R_ADD(stack[--top], v), z);                                                         \
        stack[top++] = v;                                                                              \
      }                                                                                                \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                    \
    }                                                                                                  \
    if (lid == 0) {                                                                                    \
      real_t v = stack[top - 1u];                                                                      \
      RCL_ORDERED_LOOP for (uint k = top - 1u; k > 0u; k--) v = R_SEAL(R_ADD(stack[k - 1u], v), z);    \
      if (finalize == 3u) /* parts out: each group's aligned subtree, for a partial reduction */        \
        out[out_off + get_group_id(0)] = R_CANON(v);                                                   \
      else /* the old bits into the flag (a use: see rcl_red_arrive), which the arrival overwrites */  \
        *flag = rcl_red_put(part, get_group_id(0), v);                                                 \
    }                                                                                                  \
    if (finalize == 3u) return;                                                                        \
    if (rcl_red_arrive(ctl, flag)) { /* the host keeps the groups within P: one subtree */             \
      const uint m = (uint)get_num_groups(0);                                                          \
      for (uint slot = lid; slot < m; slot += W) scratch[slot] = rcl_red_get(part, slot);              \
      rcl_red_tree(scratch, P, m, lid, W);                                                             \
      if (lid == 0) {                                                                                  \
        real_t r = scratch[0];                                                                         \
        if (finalize == 2u) r = R_SQRT(r);                                                             \
        out[out_off] = R_CANON(r);                                                                     \
        atomic_xchg(&ctl[RED_CTL_TICKET], 0u);                                                         \
      }                                                                                                \
    }                                                                                                  \
  }

#define RCL_LEAF_SUM(i) (x[(i)])
#define RCL_LEAF_DOT(i) R_MUL(x[(i)], y[(i)])
#define RCL_LEAF_SQ(i) R_MUL(x[(i)], x[(i)]) /* nrm2: one load (y is x; the compiler cannot know) */
RCL_ORDERED_FUSED(rcl_ordered_sum, RCL_LEAF_SUM)
RCL_ORDERED_FUSED(rcl_ordered_dot, RCL_LEAF_DOT)
RCL_ORDERED_FUSED(rcl_ordered_nrm2, RCL_LEAF_SQ)

/* ---- exact mode ---------------------------------------------------------------------------------- */
/* Every term is an integer times a power of two: neg * m * 2^(pos + BASE) with pos >= 0. Split at digit
 * q = pos / 32, its signed value m * 2^(pos % 32) is C chunks e[0..C) (32-bit ones, the top one signed)
 * of weights 2^(32 (q + j) + BASE). A term function returns q, or -1 for a zero term (nothing to add),
 * and ORs the term's flags (rcl_exact.cl: NaN, infinities, not -0) into *fl. They decode the bits
 * themselves rather than through rcl_xterm_*: those compute every flag for every term, and on the H100
 * that made the exact dot and nrm2 kernels twice as slow (measured); here the full flags are computed
 * only on the rare path of an infinity or NaN. */
#define XM32 0xffffffffl

RCL_FN int rcl_xw_f32(uint u, long *e, uint *fl) {
  uint ex = (u >> 23) & 0xffu, fr = u & 0x7fffffu;
  uint m = ex ? (fr | 0x800000u) : fr;
  if (ex == 0xffu) {
    *fl |= rcl_xflags_of(fr != 0u, fr == 0u, 0, u >> 31);
    m = 0u;
  } else {
    *fl |= u != 0x80000000u ? RCL_XF_NOT_NEGZERO : 0u;
  }
  int pos = (int)(ex ? ex : 1u) - 1;
  long v = (long)((ulong)(long)((u >> 31) ? -(int)m : (int)m) << (pos & 31)); /* no signed left shift */
  e[0] = v & XM32;
  e[1] = v >> 32;
  return m ? pos >> 5 : -1;
}

/* A signed product or mantissa sm (|sm| < 2^63) times 2^s, s < 32, as three chunks. */
RCL_FN void rcl_xw_split3(long sm, uint s, long *e) {
  ulong lo = (ulong)sm << s;
  e[0] = (long)(lo & (ulong)XM32);
  e[1] = (long)(lo >> 32);
  e[2] = (sm >> 32) >> (32u - s); /* bits 64 and up, sign-extended (s = 0: the sign) */
}

RCL_FN int rcl_xw_f32_prod(uint a, uint b, long *e, uint *fl) {
  uint ea = (a >> 23) & 0xffu, eb = (b >> 23) & 0xffu, fa = a & 0x7fffffu, fb = b & 0x7fffffu;
  ulong m = (ulong)(ea ? (fa | 0x800000u) : fa) * (ulong)(eb ? (fb | 0x800000u) : fb); /* < 2^48 */
  uint neg = (a ^ b) >> 31;
  if (ea == 0xffu || eb == 0xffu) {
    *fl |= rcl_xterm_f32_prod(a, b).flags;
    m = 0u;
  } else {
    *fl |= (m == 0u && neg) ? 0u : RCL_XF_NOT_NEGZERO;
  }
  int pos = (int)(ea ? ea : 1u) + (int)(eb ? eb : 1u) - 2;
  rcl_xw_split3(neg ? -(long)m : (long)m, (uint)pos & 31u, e);
  return m ? pos >> 5 : -1;
}

/* The fast window's terms (RCL_EXACT_FAST below): the term times 2^-B, B the window's base bit, as NF
 * chunks in f (32-bit ones, the top one signed), valid when the returned d = pos - B is in [0, 31]; a zero
 * term returns 0 (its chunks are zero). Only NOT_NEGZERO is flagged here: an infinity or NaN never fits
 * (sums: its pos is above every base's reach; products: d = XF_FAR), and the digit window's term
 * function flags it. Branch-free: no rare path in the unrolled loop. */
#define XF_FAR (1 << 24)
RCL_FN int rcl_xf_f32(uint u, int B, long *f, uint *fl) {
  uint ex = (u >> 23) & 0xffu;
  int m = (int)((u & 0x7fffffu) | (ex ? 0x800000u : 0u));
  *fl |= u != 0x80000000u ? RCL_XF_NOT_NEGZERO : 0u;
  int d = (u << 1) ? (int)(ex ? ex : 1u) - 1 - B : 0;
  long v = (long)((ulong)(long)((u >> 31) ? -m : m) << ((uint)d & 31u)); /* |v| < 2^55 */
  f[0] = v & XM32;
  f[1] = v >> 32;
  return d;
}

RCL_FN int rcl_xf_f32_prod(uint a, uint b, int B, long *f, uint *fl) {
  uint ea = (a >> 23) & 0xffu, eb = (b >> 23) & 0xffu;
  ulong m = (ulong)((a & 0x7fffffu) | (ea ? 0x800000u : 0u)) * (ulong)((b & 0x7fffffu) | (eb ? 0x800000u : 0u));
  uint neg = (a ^ b) >> 31;
  *fl |= (m == 0u && neg) ? 0u : RCL_XF_NOT_NEGZERO;
  int d = m ? (int)(ea ? ea : 1u) + (int)(eb ? eb : 1u) - 2 - B : 0;
  d = (ea == 0xffu || eb == 0xffu) ? XF_FAR : d;
  rcl_xw_split3(neg ? -(long)m : (long)m, (uint)d & 31u, f);
  return d;
}

#if defined(RCL_DTYPE_F64)
RCL_FN int rcl_xw_f64(ulong u, long *e, uint *fl) {
  uint ex = (uint)(u >> 52) & 0x7ffu;
  ulong fr = u & 0xfffffffffffffUL;
  ulong m = ex ? (fr | 0x10000000000000UL) : fr;
  if (ex == 0x7ffu) {
    *fl |= rcl_xflags_of(fr != 0u, fr == 0u, 0, (uint)(u >> 63));
    m = 0u;
  } else {
    *fl |= u != 0x8000000000000000UL ? RCL_XF_NOT_NEGZERO : 0u;
  }
  int pos = (int)(ex ? ex : 1u) - 1;
  rcl_xw_split3((u >> 63) ? -(long)m : (long)m, (uint)pos & 31u, e);
  return m ? pos >> 5 : -1;
}

/* A 128-bit two's complement value (hi, lo) (|value| < 2^127 after the shift) times 2^s, s < 32, as five
 * chunks. */
RCL_FN void rcl_xw_split5(ulong lo, ulong hi, uint s, long *e) {
  ulong w0 = lo << s, w1 = (hi << s) | ((lo >> 32) >> (32u - s));
  e[0] = (long)(w0 & (ulong)XM32);
  e[1] = (long)(w0 >> 32);
  e[2] = (long)(w1 & (ulong)XM32);
  e[3] = (long)(w1 >> 32);
  e[4] = ((long)hi >> 32) >> (32u - s);
}

RCL_FN int rcl_xw_f64_prod(ulong a, ulong b, long *e, uint *fl) {
  uint ea = (uint)(a >> 52) & 0x7ffu, eb = (uint)(b >> 52) & 0x7ffu;
  ulong fa = a & 0xfffffffffffffUL, fb = b & 0xfffffffffffffUL;
  ulong ma = ea ? (fa | 0x10000000000000UL) : fa, mb = eb ? (fb | 0x10000000000000UL) : fb;
  ulong lo = ma * mb, hi = mul_hi(ma, mb); /* the 106-bit product */
  uint neg = (uint)((a ^ b) >> 63);
  uint zero = (lo | hi) == 0u;
  if (ea == 0x7ffu || eb == 0x7ffu) {
    *fl |= rcl_xterm_f64_prod(a, b).flags;
    lo = hi = 0u;
    zero = 1u;
  } else {
    *fl |= (zero && neg) ? 0u : RCL_XF_NOT_NEGZERO;
  }
  if (neg) { /* two's complement of the 128-bit product */
    lo = 0u - lo;
    hi = ~hi + (lo == 0u);
  }
  int pos = (int)(ea ? ea : 1u) + (int)(eb ? eb : 1u) - 2;
  rcl_xw_split5(lo, hi, (uint)pos & 31u, e);
  return zero ? -1 : pos >> 5;
}

RCL_FN int rcl_xf_f64(ulong u, int B, long *f, uint *fl) {
  uint ex = (uint)(u >> 52) & 0x7ffu;
  long m = (long)((u & 0xfffffffffffffUL) | (ex ? 0x10000000000000UL : 0u));
  *fl |= u != 0x8000000000000000UL ? RCL_XF_NOT_NEGZERO : 0u;
  int d = (u << 1) ? (int)(ex ? ex : 1u) - 1 - B : 0;
  rcl_xw_split3((u >> 63) ? -m : m, (uint)d & 31u, f);
  return d;
}

RCL_FN int rcl_xf_f64_prod(ulong a, ulong b, int B, long *f, uint *fl) {
  uint ea = (uint)(a >> 52) & 0x7ffu, eb = (uint)(b >> 52) & 0x7ffu;
  ulong ma = (a & 0xfffffffffffffUL) | (ea ? 0x10000000000000UL : 0u);
  ulong mb = (b & 0xfffffffffffffUL) | (eb ? 0x10000000000000UL : 0u);
  ulong lo = ma * mb, hi = mul_hi(ma, mb);
  uint neg = (uint)((a ^ b) >> 63), zero = (lo | hi) == 0u;
  *fl |= (zero && neg) ? 0u : RCL_XF_NOT_NEGZERO;
  ulong nlo = 0u - lo, nhi = ~hi + (nlo == 0u);
  int d = zero ? 0 : (int)(ea ? ea : 1u) + (int)(eb ? eb : 1u) - 2 - B;
  d = (ea == 0x7ffu || eb == 0x7ffu) ? XF_FAR : d;
  rcl_xw_split5(neg ? nlo : lo, neg ? nhi : hi, (uint)d & 31u, f);
  return d;
}

#define XSUM_DIGITS RCL_XACC_F64_SUM_DIGITS
#define XSUM_BASE RCL_XACC_F64_SUM_BASE
#define XSUM_C 3
#define XDOT_DIGITS RCL_XACC_F64_DOT_DIGITS
#define XDOT_BASE RCL_XACC_F64_DOT_BASE
#define XDOT_C 5
#define XW_SUM(a, b, e, fl) rcl_xw_f64(as_ulong(a), e, fl)
#define XW_DOT(a, b, e, fl) rcl_xw_f64_prod(as_ulong(a), as_ulong(b), e, fl)
#define XF_SUM(a, b, B, f, fl) rcl_xf_f64(as_ulong(a), B, f, fl)
#define XF_DOT(a, b, B, f, fl) rcl_xf_f64_prod(as_ulong(a), as_ulong(b), B, f, fl)
#define XSUM_NF 3
#define XSUM_FMAX 1983 /* min(2045 - 31, 32 (67 - 3 - 3) + 31) */
#define XDOT_NF 5
#define XDOT_FMAX 3967 /* min(4090 - 31, 32 (133 - 5 - 5) + 31) */
#define XIS_F64 1
#else
#define XSUM_DIGITS RCL_XACC_F32_SUM_DIGITS
#define XSUM_BASE RCL_XACC_F32_SUM_BASE
#define XSUM_C 2
#define XDOT_DIGITS RCL_XACC_F32_DOT_DIGITS
#define XDOT_BASE RCL_XACC_F32_DOT_BASE
#define XDOT_C 3
#define XW_SUM(a, b, e, fl) rcl_xw_f32(as_uint(a), e, fl)
#define XW_DOT(a, b, e, fl) rcl_xw_f32_prod(as_uint(a), as_uint(b), e, fl)
#define XF_SUM(a, b, B, f, fl) rcl_xf_f32(as_uint(a), B, f, fl)
#define XF_DOT(a, b, B, f, fl) rcl_xf_f32_prod(as_uint(a), as_uint(b), B, f, fl)
#define XSUM_NF 2
#define XSUM_FMAX 222 /* min(253 - 31, 32 (10 - 2 - 2) + 31) */
#define XDOT_NF 3
#define XDOT_FMAX 447 /* min(506 - 31, 32 (19 - 3 - 3) + 31) */
#define XIS_F64 0
#endif

/* Adds v * 2^(32k) to the launch's superaccumulator in the control block: digit sums of magnitudes,
 * positive and negative apart, each a 32-bit word with its carry added to the next word by atomics, so
 * concurrent adds lose nothing and the result does not depend on their order. */
RCL_FN void rcl_xacc_add_word(__global volatile uint *a, uint D, uint k, uint v) {
  for (; v != 0u && k < D; k++) {
    uint old = atomic_add(&a[k], v);
    v = (uint)(old + v) < old ? 1u : 0u;
  }
}
RCL_FN void rcl_xacc_add(__global volatile uint *ctl, uint D, uint k, long v) {
  ulong mag = v < 0 ? (ulong)(-v) : (ulong)v;
  __global volatile uint *a = ctl + RED_CTL_DIGITS + (v < 0 ? D : 0u);
  rcl_xacc_add_word(a, D, k, (uint)mag);
  rcl_xacc_add_word(a, D, k + 1u, (uint)(mag >> 32));
}

/* The window r (digits wb .. wb + C) takes a term whose digit q is wb or wb + 1 by C + 1 selected adds:
 * RCL_XW_FAST adds the term Q (its chunks in e) when it fits and sets HIT; RCL_XW_SLOW adds it too,
 * first moving the window to it when it does not fit (the window's limbs go to the superaccumulator,
 * whose atomics are shared by every work-item: moves must stay rare). RCL_XW_PUT is those adds at offset
 * OFF (0 or 1). */
#define RCL_XW_PUT(OFF, C)                                                                             \
  do {                                                                                                 \
    r[0] += (OFF) ? 0 : e[0];                                                                          \
    _Pragma("unroll") for (int k = 1; k < (C); k++) r[k] += (OFF) ? e[k - 1] : e[k];                   \
    r[(C)] += (OFF) ? e[(C) - 1] : 0;                                                                  \
  } while (0)
/* The window's limbs into the superaccumulator, leaving it empty (no window: nothing to do). */
#define RCL_XW_FLUSH(C, D)                                                                             \
  do {                                                                                                 \
    if (wb >= 0)                                                                                       \
      _Pragma("unroll") for (int k = 0; k <= (C); k++) if (r[k] != 0) {                                \
        rcl_xacc_add(ctl, (D), (uint)(wb + k), r[k]);                                                  \
        r[k] = 0;                                                                                      \
      }                                                                                                \
  } while (0)
#define RCL_XW_FAST(Q, C, HIT)                                                                         \
  do {                                                                                                 \
    const int q_ = (Q), off_ = q_ < 0 ? 0 : q_ - wb; /* q < 0: a zero term, nothing to add */          \
    HIT = (uint)off_ <= 1u;                                                                            \
    if (HIT) RCL_XW_PUT(off_, C);                                                                      \
  } while (0)
#define RCL_XW_SLOW(Q, C, D)                                                                           \
  do {                                                                                                 \
    const int q_ = (Q), K_ = (C) + 1;                                                                  \
    int off_ = q_ < 0 ? 0 : q_ - wb; /* an earlier miss of the same block may have moved it here */    \
    if ((uint)off_ > 1u) {                                                                             \
      RCL_XW_FLUSH(C, D);                                                                              \
      wb = (wb < 0 || q_ > wb) ? q_ - 1 : q_; /* moving up keeps the old top digit inside */           \
      wb = wb < 0 ? 0 : wb > (D) - K_ ? (D) - K_ : wb;                                                 \
      off_ = q_ - wb;                                                                                  \
    }                                                                                                  \
    RCL_XW_PUT(off_, C);                                                                               \
  } while (0)

/* Terms loaded ahead per work-item: a streaming loop with one load in flight is latency-bound. */
#define XU 8u
#define XDOT_XW_SUM 0
#define XDOT_XW_DOT 1
#define XDOT_XW_SQ 0 /* nrm2: the squares of x, each element loaded once */
#define XW_SQ(a, b, e, fl) XW_DOT(a, a, e, fl)
#define XF_SQ(a, b, B, f, fl) XF_DOT(a, a, B, f, fl)

/* Exact mode in one launch. Every work-item adds its grid-stride terms into a window of C + 1 signed
 * 64-bit limbs in registers (digits wb .. wb + C) that takes a term at digit wb or wb + 1: a term is
 * shifted, never looped over. A term outside the window moves it (its limbs go to the superaccumulator
 * first); data whose magnitudes span less than about 2^32 thus never leaves the fast path. At the end the
 * work-items whose window sits at the group's highest one add their limbs by a tree in local memory, the
 * others (and then the group) add theirs to the superaccumulator, and the last group to arrive reads and
 * clears it and rounds once. All sums are of integers: the result does not depend on any order.
 * Headroom: a limb takes < 2^32 per term; the host keeps each group below 2^29 terms. Every loop over
 * the limbs is unrolled, so the window stays in registers (one loop indexed at run time would put it in
 * memory: 2-3x slower).
 * The kernels are written as parts: RCL_XK_HEAD (arguments and set-up), RCL_XK_LOOP (the terms: STEP(v,
 * w, hit) adds the term of the loaded values v, w and sets hit, or leaves it for SLOW(v, w), which takes
 * it reloaded: XU loads in flight before any term is added) and RCL_XK_END (the group's limbs R[0..KK) at
 * digit WB, the superaccumulator, rounding). */
#define RCL_XK_HEAD(NAME)                                                                              \
  __kernel void NAME(__global const real_t *x, ulong xoff, __global const real_t *y, ulong yoff, ulong n,   \
                     __global volatile uint *ctl, __global real_t *out, ulong out_off, uint finalize,   \
                     __local long *lacc, __local long *lfin, __local volatile int *misc) {             \
    const uint W = (uint)get_local_size(0), lid = (uint)get_local_id(0);                                \
    x += xoff;                                                                                         \
    y += yoff;                                                                                         \
    if (lid == 0) {                                                                                    \
      misc[0] = -1;                                                                                    \
      misc[1] = 0;                                                                                     \
    }                                                                                                  \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                      \
    uint fl = 0;                                                                                       \
    const ulong gs = get_global_size(0);                                                               \
    ulong i = get_global_id(0);
#define RCL_XK_LOOP(DOT, STEP, SLOW, ...)                                                                 \
  for (; i + (XU - 1u) * gs < n; i += XU * gs) {                                                       \
    real_t xv[XU], yv[XU];                                                                             \
    uint miss = 0, hit;                                                                                \
    _Pragma("unroll") for (uint u = 0; u < XU; u++) {                                                  \
      xv[u] = x[i + u * gs];                                                                           \
      yv[u] = (DOT) ? y[i + u * gs] : xv[u];                                                           \
    }                                                                                                  \
    _Pragma("unroll") for (uint u = 0; u < XU; u++) {                                                  \
      STEP(xv[u], yv[u], hit, __VA_ARGS__);                                                               \
      miss |= hit ? 0u : 1u << u;                                                                      \
    }                                                                                                  \
    while (miss != 0u) { /* rare: the terms outside the window, loaded again, one code path */          \
      const ulong j = i + (ulong)popcount((miss & (0u - miss)) - 1u) * gs;                             \
      miss &= miss - 1u;                                                                               \
      SLOW(x[j], (DOT) ? y[j] : x[j], __VA_ARGS__);                                                               \
    }                                                                                                  \
  }                                                                                                    \
  for (; i < n; i += gs) {                                                                             \
    uint hit;                                                                                          \
    STEP(x[i], (DOT) ? y[i] : x[i], hit, __VA_ARGS__);                                                           \
    if (!hit) SLOW(x[i], (DOT) ? y[i] : x[i], __VA_ARGS__);                                                       \
  }
#define RCL_XK_END(R, KK, WB, FLUSH, D, BASE)                                                          \
  if ((WB) >= 0) atomic_max(&misc[0], (WB));                                                           \
  atomic_or(&misc[1], (int)fl);                                                                        \
  barrier(CLK_LOCAL_MEM_FENCE);                                                                        \
  const int B = misc[0];                                                                               \
  if ((WB) != B) FLUSH; /* a window below the group's: its own atomics */                              \
  _Pragma("unroll") for (int k = 0; k < (KK); k++) lacc[(uint)k * W + lid] = R[k];                     \
  for (uint stride = W / 2u; stride > 0u; stride >>= 1) {                                              \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                      \
    if (lid < stride)                                                                                  \
      _Pragma("unroll") for (int k = 0; k < (KK); k++) lacc[(uint)k * W + lid] += lacc[(uint)k * W + lid + stride]; \
  }                                                                                                    \
  barrier(CLK_LOCAL_MEM_FENCE);                                                                        \
  if (lid == 0) {                                                                                      \
    if (B >= 0)                                                                                        \
      _Pragma("unroll") for (int k = 0; k < (KK); k++)                                                 \
        if (lacc[k * W] != 0) rcl_xacc_add(ctl, (D), (uint)(B + k), lacc[(uint)k * W]);                \
    if (misc[1] != 0) misc[3] = (int)atomic_or(&ctl[RED_CTL_FLAGS], (uint)misc[1]); /* used: see arrive */ \
  }                                                                                                    \
  if (!rcl_red_arrive(ctl, (__local volatile uint *)&misc[2])) return;                                 \
  for (uint k = lid; k < (D); k += W)                                                                  \
    lfin[k] = (long)atomic_xchg(&ctl[RED_CTL_DIGITS + k], 0u) - (long)atomic_xchg(&ctl[RED_CTL_DIGITS + (D) + k], 0u); \
  barrier(CLK_LOCAL_MEM_FENCE);                                                                        \
  if (lid == 0) {                                                                                      \
    rcl_i64 s[(D)];                                                                                    \
    for (uint k = 0; k < (D); k++) s[k] = lfin[k];                                                     \
    uint f = atomic_xchg(&ctl[RED_CTL_FLAGS], 0u);                                                     \
    if (finalize == 3u) { /* parts out: the digits and flags, for a partial reduction */                \
      __global long *o = (__global long *)out;                                                         \
      for (uint k = 0; k < (D); k++) o[k] = s[k];                                                      \
      o[(D)] = (long)f;                                                                                \
    } else {                                                                                           \
      real_t r = R_FROM_BITS((real_bits_t)rcl_xacc_result_bits(s, (D), (BASE), f, XIS_F64));           \
      if (finalize == 2u) r = R_SQRT(r);                                                               \
      out[out_off] = R_CANON(r);                                                                       \
    }                                                                                                  \
    atomic_xchg(&ctl[RED_CTL_TICKET], 0u);                                                             \
  }

/* The window kernels: every term goes to the window of digits (RCL_XW_*). */
#define RCL_XW_STEP(A, B_, HIT, TERM, C, D) RCL_XW_FAST(TERM(A, B_, e, &fl), C, HIT)
#define RCL_XW_SLOWT(A, B_, TERM, C, D) RCL_XW_SLOW(TERM(A, B_, e, &fl), C, D)
#define RCL_EXACT_FUSED(NAME, TERM, C, D, BASE)                                                        \
  RCL_XK_HEAD(NAME)                                                                                    \
  long r[(C) + 1], e[(C)];                                                                             \
  _Pragma("unroll") for (int k = 0; k <= (C); k++) r[k] = 0;                                           \
  int wb = -2; /* no window yet: every term's offset q - wb >= 2 misses */                            \
  RCL_XK_LOOP(XDOT_##TERM, RCL_XW_STEP, RCL_XW_SLOWT, TERM, C, D)                                               \
  RCL_XK_END(r, (C) + 1, wb, RCL_XW_FLUSH(C, D), D, BASE)                                              \
  }

RCL_EXACT_FUSED(rcl_exact_sum, XW_SUM, XSUM_C, XSUM_DIGITS, XSUM_BASE)
RCL_EXACT_FUSED(rcl_exact_dot, XW_DOT, XDOT_C, XDOT_DIGITS, XDOT_BASE)
RCL_EXACT_FUSED(rcl_exact_nrm2, XW_SQ, XDOT_C, XDOT_DIGITS, XDOT_BASE)

/* The fast-window kernels (tuning value accum=fast; the same bits): a term whose bit position pos is in
 * fb .. fb + 31 is added to NF signed 64-bit limbs fw (weights 2^(fb + 32 j)) by NF plain adds: no digit
 * offset, no selected adds, a branch-free decode. fb is set by the first term that does not fit, to
 * pos - XF_LOW (clamped to [0, FMAX]): terms from 2^-16 to 2^15 times it fit. A term above moves the window
 * up (its limbs folded into the digit window first: fb only grows, at most FMAX / 16 moves); one below, or
 * out of reach (above FMAX + 31, an infinity, a NaN), goes to the digit window of the kernels above (r, wb),
 * which takes it as they do. At the end fw becomes NF + 2 limbs g of digits fb / 32 .. fb / 32 + NF + 1,
 * the group's tree adds those, and the digit window (rarely used) adds its own limbs by atomics.
 * Headroom: a chunk is < 2^32 (the top one signed, smaller), so a limb after 2^29 terms is < 2^61; the
 * folds add pieces of two chunks each; g's limbs are < 2^35. FMAX keeps fb / 32 + NF <= D - C (a fold
 * piece fits the digit window) and FMAX + 31 below an infinity's pos for sums. */
#define XF_LOW 16
#define RCL_XF_PUT(NF) _Pragma("unroll") for (int k = 0; k < (NF); k++) fw[k] += f[k]
/* fw into the digit window: each limb as two pieces, (L mod 2^32) 2^s at digit fb/32 + j and
 * floor(L / 2^32) 2^s one digit up (s = fb mod 32), the fw limb picked by selects (fw stays in registers). */
#define RCL_XF_FOLD(NF, C, D)                                                                          \
  do {                                                                                                 \
    if (fb >= 0)                                                                                       \
      for (int t = 0; t < 2 * (NF); t++) {                                                             \
        long L = 0;                                                                                    \
        _Pragma("unroll") for (int k = 0; k < (NF); k++) L = k == t / 2 ? fw[k] : L;                   \
        const long p_ = (long)((t & 1 ? (ulong)(L >> 32) : (ulong)L & (ulong)XM32) << (fb & 31));      \
        if (p_ == 0) continue;                                                                         \
        e[0] = p_ & XM32;                                                                              \
        e[1] = p_ >> 32;                                                                               \
        _Pragma("unroll") for (int k = 2; k < (C); k++) e[k] = 0;                                      \
        RCL_XW_SLOW((fb >> 5) + t / 2 + (t & 1), C, D);                                                \
      }                                                                                                \
    _Pragma("unroll") for (int k = 0; k < (NF); k++) fw[k] = 0;                                        \
  } while (0)
#define RCL_XF_STEP(A, B_, HIT, FTERM, TERM, NF, FMAX, C, D)                                                                      \
  do {                                                                                                 \
    HIT = (uint)FTERM(A, B_, fb, f, &fl) <= 31u;                                                       \
    if (HIT) RCL_XF_PUT(NF);                                                                           \
  } while (0)
#define RCL_XF_SLOW(A, B_, FTERM, TERM, NF, FMAX, C, D)                                                                          \
  do {                                                                                                 \
    int d_ = FTERM(A, B_, fb, f, &fl);                                                                 \
    if (d_ > 31 && d_ + fb <= (FMAX) + 31) { /* above the window (or none yet), within reach: move */  \
      const int pos_ = d_ + fb;                                                                        \
      RCL_XF_FOLD(NF, C, D);                                                                           \
      fb = pos_ - XF_LOW < 0 ? 0 : pos_ - XF_LOW > (FMAX) ? (FMAX) : pos_ - XF_LOW;                    \
      d_ = FTERM(A, B_, fb, f, &fl);                                                                   \
    }                                                                                                  \
    if ((uint)d_ <= 31u)                                                                               \
      RCL_XF_PUT(NF);                                                                                  \
    else                                                                                               \
      RCL_XW_SLOW(TERM(A, B_, e, &fl), C, D);                                                          \
  } while (0)
#define RCL_EXACT_FAST(NAME, FTERM, TERM, NF, FMAX, C, D, BASE)                                        \
  RCL_XK_HEAD(NAME)                                                                                    \
  long r[(C) + 1], e[(C)], fw[(NF)], f[(NF)], g[(NF) + 2];                                             \
  _Pragma("unroll") for (int k = 0; k <= (C); k++) r[k] = 0;                                           \
  _Pragma("unroll") for (int k = 0; k < (NF); k++) fw[k] = 0;                                          \
  int wb = -2, fb = -1000; /* no windows yet: every non-zero term misses both */                      \
  RCL_XK_LOOP(XDOT_##TERM, RCL_XF_STEP, RCL_XF_SLOW, FTERM, TERM, NF, FMAX, C, D)                                                \
  RCL_XW_FLUSH(C, D); /* the digit window's limbs (terms below fw, rare) */                            \
  _Pragma("unroll") for (int k = 0; k < (NF) + 2; k++) g[k] = 0;                                       \
  _Pragma("unroll") for (int k = 0; k < (NF); k++) {                                                   \
    const long a_ = (long)(((ulong)fw[k] & (ulong)XM32) << (fb & 31)); /* < 2^63 */                    \
    const long b_ = (long)((ulong)(fw[k] >> 32) << (fb & 31));         /* |.| < 2^60 */                \
    g[k] += a_ & XM32;                                                                                 \
    g[k + 1] += (a_ >> 32) + (b_ & XM32);                                                              \
    g[k + 2] += b_ >> 32;                                                                              \
  }                                                                                                    \
  const int gb = fb >= 0 ? fb >> 5 : -1;                                                               \
  RCL_XK_END(g, (NF) + 2, gb, RCL_XG_FLUSH(NF, D), D, BASE)                                            \
  }
#define RCL_XG_FLUSH(NF, D)                                                                            \
  do {                                                                                                 \
    if (gb >= 0)                                                                                       \
      _Pragma("unroll") for (int k = 0; k < (NF) + 2; k++) if (g[k] != 0) {                            \
        rcl_xacc_add(ctl, (D), (uint)(gb + k), g[k]);                                                  \
        g[k] = 0;                                                                                      \
      }                                                                                                \
  } while (0)

RCL_EXACT_FAST(rcl_exact_sum_fast, XF_SUM, XW_SUM, XSUM_NF, XSUM_FMAX, XSUM_C, XSUM_DIGITS, XSUM_BASE)
RCL_EXACT_FAST(rcl_exact_dot_fast, XF_DOT, XW_DOT, XDOT_NF, XDOT_FMAX, XDOT_C, XDOT_DIGITS, XDOT_BASE)
RCL_EXACT_FAST(rcl_exact_nrm2_fast, XF_SQ, XW_SQ, XDOT_NF, XDOT_FMAX, XDOT_C, XDOT_DIGITS, XDOT_BASE)

/* ---- blas1: element-wise, one rounding per operation ------------------------------------------- */
__kernel void rcl_axpy(__global real_t *y, ulong yoff, real_t alpha, __global const real_t *x, ulong xoff,
                       ulong n) {
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    y[yoff + i] = R_CANON(R_ADD(R_MUL(alpha, x[xoff + i]), y[yoff + i]));
}

__kernel void rcl_scal(__global real_t *x, ulong xoff, real_t alpha, ulong n) {
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) x[xoff + i] = R_CANON(R_MUL(alpha, x[xoff + i]));
}
