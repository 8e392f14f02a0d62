/* reduce.cl — deterministic reductions (contracts "reduce.ordered" v1 and "reduce.exact" v1 in
 * docs/contracts.md) and the element-wise updates of contract "blas1" v1.
 *
 * ordered: the leaves are lane sums. Elements are grouped in blocks of RED_B = RED_L * RED_M; lane l of
 *   block b sums x[b*RED_B + l + RED_L*j], j = 0, 1, ... left to right, starting from its first element.
 *   The leaves, in (block, lane) order, are then combined level by level: at each level neighbours
 *   (2k, 2k+1) are added and an unpaired last value is carried up unchanged. Every work-group size and
 *   grid only changes which work-item computes which node of this one tree.
 * exact: every term goes into a superaccumulator (rcl_exact.cl); integer sums do not depend on order. */

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

/* Pass 1 of ordered mode: one partial per super-block of G = max(1, W/RED_L) blocks (W a power of two).
 * LEAF(i) is the i-th term: x[i] for sums, x[i]*y[i] (rounded) for dot products. */
#define RCL_ORDERED_PASS1(NAME, LEAF)                                                                  \
  __kernel void NAME(__global const real_t *x, ulong xoff, __global const real_t *y, ulong yoff, ulong n,   \
                     __global real_t *partials, __local real_t *scratch) {                               \
    const uint W = (uint)get_local_size(0), lid = (uint)get_local_id(0);                                \
    const uint G = W >= RED_L ? W / RED_L : 1u;                                                        \
    const uint S = G * RED_L;                                                                          \
    const ulong nleaves = rcl_red_leaves(n);                                                           \
    const ulong nsuper = (nleaves + S - 1u) / S;                                                       \
    x += xoff;                                                                                         \
    y += yoff;                                                                                         \
    for (ulong sb = get_group_id(0); sb < nsuper; sb += get_num_groups(0)) {                           \
      for (uint slot = lid; slot < S; slot += W) {                                                     \
        ulong block = sb * G + slot / RED_L;                                                           \
        ulong i = block * RED_B + slot % RED_L;                                                        \
        if (i < n) {                                                                                   \
          real_t s = LEAF(i);                                                                          \
          if ((block + 1u) * RED_B <= n) {                                                             \
            for (uint j = 1; j < RED_M; j++) s = R_ADD(s, LEAF(i + (ulong)j * RED_L));                 \
          } else {                                                                                     \
            for (i += RED_L; i < n; i += RED_L) s = R_ADD(s, LEAF(i));                                 \
          }                                                                                            \
          scratch[slot] = s;                                                                           \
        }                                                                                              \
      }                                                                                                \
      ulong left = nleaves - sb * S;                                                                   \
      rcl_red_tree(scratch, S, (uint)(left < S ? left : S), lid, W);                                  \
      if (lid == 0) partials[sb] = scratch[0];                                                         \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                    \
    }                                                                                                  \
  }

#define RCL_LEAF_SUM(i) (x[(i)])
#define RCL_LEAF_DOT(i) R_MUL(x[(i)], y[(i)])
RCL_ORDERED_PASS1(rcl_ordered_sum_pass1, RCL_LEAF_SUM)
RCL_ORDERED_PASS1(rcl_ordered_dot_pass1, RCL_LEAF_DOT)

/* Tree passes: each group reduces an aligned chunk of 2W values. With finalize != 0 (one group), the
 * value is written to out[out_off] canonicalised; finalize == 2 takes its square root first (nrm2). */
__kernel void rcl_ordered_tree(__global const real_t *in, ulong m, __global real_t *out, ulong out_off,
                               uint finalize, __local real_t *scratch) {
  const uint W = (uint)get_local_size(0), lid = (uint)get_local_id(0);
  const uint S = 2u * W;
  const ulong first = (ulong)get_group_id(0) * S;
  const ulong left = m - first;
  for (uint slot = lid; slot < S; slot += W)
    if (first + slot < m) scratch[slot] = in[first + slot];
  rcl_red_tree(scratch, S, (uint)(left < S ? left : S), lid, W);
  if (lid == 0) {
    real_t r = scratch[0];
    if (finalize == 0u) {
      out[get_group_id(0)] = r;
    } else {
      if (finalize == 2u) r = R_SQRT(r);
      out[out_off] = R_CANON(r);
    }
  }
}

/* ---- exact mode ---------------------------------------------------------------------------------- */
#if defined(RCL_DTYPE_F64)
#define XSUM_DIGITS RCL_XACC_F64_SUM_DIGITS
#define XSUM_BASE RCL_XACC_F64_SUM_BASE
#define XSUM_CHUNKS 3
#define XDOT_DIGITS RCL_XACC_F64_DOT_DIGITS
#define XDOT_BASE RCL_XACC_F64_DOT_BASE
#define XDOT_CHUNKS 5
#define XTERM_SUM(i) rcl_xterm_f64(as_ulong(x[(i)]))
#define XTERM_DOT(i) rcl_xterm_f64_prod(as_ulong(x[(i)]), as_ulong(y[(i)]))
#define XIS_F64 1
#else
#define XSUM_DIGITS RCL_XACC_F32_SUM_DIGITS
#define XSUM_BASE RCL_XACC_F32_SUM_BASE
#define XSUM_CHUNKS 2
#define XDOT_DIGITS RCL_XACC_F32_DOT_DIGITS
#define XDOT_BASE RCL_XACC_F32_DOT_BASE
#define XDOT_CHUNKS 3
#define XTERM_SUM(i) rcl_xterm_f32(as_uint(x[(i)]))
#define XTERM_DOT(i) rcl_xterm_f32_prod(as_uint(x[(i)]), as_uint(y[(i)]))
#define XIS_F64 0
#endif

/* Pass 1: every work-item adds its grid-stride terms into a window of K = CHUNKS + 2 digits held in
 * registers; only when a term falls outside the window is the window added into the work-item's column
 * of a [D][W] local superaccumulator and moved to the term. Data of similar magnitude (the common case)
 * thus never touches local memory per term. The group then sums the columns, carry-normalises (digits
 * < 2^32, the top one signed) and writes D digits and its flags. Integer sums: the result does not
 * depend on how terms meet the window. The host keeps each group below 2^29 terms (slot headroom). */
#define RCL_EXACT_PASS1(NAME, TERM, D, CHUNKS)                                                         \
  __kernel void NAME(__global const real_t *x, ulong xoff, __global const real_t *y, ulong yoff, ulong n,   \
                     __global long *gdigits, __global uint *gflags, __local long *slots,                 \
                     __local uint *lflags) {                                                           \
    const uint W = (uint)get_local_size(0), lid = (uint)get_local_id(0);                                \
    const int K = (CHUNKS) + 2;                                                                        \
    x += xoff;                                                                                         \
    y += yoff;                                                                                         \
    for (uint k = 0; k < (D); k++) slots[k * W + lid] = 0;                                             \
    uint flags = 0;                                                                                    \
    long r[(CHUNKS) + 2];                                                                              \
    for (int k = 0; k < K; k++) r[k] = 0;                                                              \
    int wb = 0;                                                                                        \
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {                                 \
      rcl_xterm t = TERM(i);                                                                           \
      rcl_i32 d;                                                                                       \
      rcl_u64 c[5];                                                                                    \
      flags |= t.flags;                                                                                \
      rcl_xterm_chunks(t, &d, c);                                                                      \
      int o = d - wb;                                                                                  \
      if (o < 0 || o > K - (CHUNKS)) {                                                                 \
        for (int k = 0; k < K; k++) {                                                                  \
          slots[(uint)(wb + k) * W + lid] += r[k];                                                     \
          r[k] = 0;                                                                                    \
        }                                                                                              \
        wb = d > 0 ? d - 1 : 0;                                                                        \
        if (wb > (D) - K) wb = (D) - K;                                                                \
        o = d - wb;                                                                                    \
      }                                                                                                \
      for (int j = 0; j < (CHUNKS); j++) {                                                             \
        long v = t.neg ? -(long)c[j] : (long)c[j];                                                     \
        for (int k = 0; k < K; k++) r[k] += (k == o + j) ? v : 0;                                      \
      }                                                                                                \
    }                                                                                                  \
    for (int k = 0; k < K; k++) slots[(uint)(wb + k) * W + lid] += r[k];                               \
    lflags[lid] = flags;                                                                               \
    /* Columns summed by a tree over the (power-of-two) work-group: integer sums, so any order. */      \
    for (uint stride = W / 2u; stride > 0u; stride >>= 1) {                                            \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                    \
      if (lid < stride) {                                                                              \
        for (uint k = 0; k < (D); k++) slots[k * W + lid] += slots[k * W + lid + stride];              \
        lflags[lid] |= lflags[lid + stride];                                                           \
      }                                                                                                \
    }                                                                                                  \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                      \
    if (lid == 0) {                                                                                    \
      long carry = 0;                                                                                  \
      __global long *out = gdigits + (ulong)get_group_id(0) * (D);                                     \
      for (uint k = 0; k < (D); k++) {                                                                 \
        long v = slots[k * W] + carry;                                                                 \
        long lo = v & 0xffffffffl;                                                                     \
        carry = (v - lo) / 4294967296l;                                                                \
        out[k] = (k + 1u < (D)) ? lo : v;                                                              \
      }                                                                                                \
      gflags[get_group_id(0)] = lflags[0];                                                             \
    }                                                                                                  \
  }

RCL_EXACT_PASS1(rcl_exact_sum_pass1, XTERM_SUM, XSUM_DIGITS, XSUM_CHUNKS)
RCL_EXACT_PASS1(rcl_exact_dot_pass1, XTERM_DOT, XDOT_DIGITS, XDOT_CHUNKS)

/* Final pass (one group): digit columns summed over the groups, then rounded once. finalize == 2 takes
 * the correctly rounded square root of the correctly rounded dot product (nrm2). */
#define RCL_EXACT_FINAL(NAME, D, BASE)                                                                 \
  __kernel void NAME(__global const long *gdigits, __global const uint *gflags, uint groups,            \
                     __global real_t *out, ulong out_off, uint finalize, __local long *acc) {            \
    const uint W = (uint)get_local_size(0), lid = (uint)get_local_id(0);                                \
    for (uint k = lid; k < (D); k += W) {                                                              \
      long s = 0;                                                                                      \
      for (uint g = 0; g < groups; g++) s += gdigits[(ulong)g * (D) + k];                              \
      acc[k] = s;                                                                                      \
    }                                                                                                  \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                      \
    if (lid == 0) {                                                                                    \
      rcl_i64 s[(D)];                                                                                  \
      uint f = 0;                                                                                      \
      for (uint k = 0; k < (D); k++) s[k] = acc[k];                                                    \
      for (uint g = 0; g < groups; g++) f |= gflags[g];                                                \
      real_t r = R_FROM_BITS((real_bits_t)rcl_xacc_result_bits(s, (D), (BASE), f, XIS_F64));           \
      if (finalize == 2u) r = R_SQRT(r);                                                               \
      out[out_off] = R_CANON(r);                                                                       \
    }                                                                                                  \
  }

RCL_EXACT_FINAL(rcl_exact_sum_final, XSUM_DIGITS, XSUM_BASE)
RCL_EXACT_FINAL(rcl_exact_dot_final, XDOT_DIGITS, XDOT_BASE)

/* ---- blas1: element-wise, one rounding per operation ------------------------------------------- */
__kernel void rcl_axpy(__global real_t *y, ulong yoff, real_t alpha, __global const real_t *x, ulong xoff,
                       ulong n) {
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    y[yoff + i] = R_CANON(R_ADD(R_MUL(alpha, x[xoff + i]), y[yoff + i]));
}

__kernel void rcl_scal(__global real_t *x, ulong xoff, real_t alpha, ulong n) {
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) x[xoff + i] = R_CANON(R_MUL(alpha, x[xoff + i]));
}
