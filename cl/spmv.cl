/* spmv.cl — CSR SpMV y = alpha*A*x + beta*y under the contracts "spmv.ordered" v1 and "spmv.exact" v1
 * (docs/contracts.md (§6)), and the conventional CSR-vector kernel with a tree reduction that the
 * benchmark compares against.
 *
 * Row sum s_i:
 *   ordered (default build): s = +0; s = s + p_k for the entries k of row i in stored order, where
 *     p_k = a_k * x[col_k] rounded. Parallel variants compute the p_k in parallel (coalesced loads into
 *     local memory) but one work-item always adds them in this order, so every variant, work-group size
 *     and device gives the bits of the sequential loop.
 *   exact (-DRCL_SPMV_EXACT): s = the correctly rounded value of +0 + sum of the exact products, through
 *     the superaccumulator of rcl_exact.cl; integer sums, so any split is allowed.
 * Store: y_i = canon(alpha*s + beta*y_i) (three rounded operations); with bz (beta is +-0, decided on the
 * host) y_i = canon(alpha*s) and y is not read.
 *
 * Rows with more than long_row entries are skipped by the variant kernels and handled by the long-row
 * kernels at the end, which carry an ordered partial sum across launches (a driver may end a work-item's
 * loops after a fixed number of iterations: llvmpipe) or split exact rows into segments.
 *
 * Host defines: RCL_SPMV_EXACT (exact contract), RCL_SPMV_RP64 (64-bit row pointers). */

#ifdef RCL_SPMV_RP64
typedef ulong rp_t;
#else
typedef uint rp_t;
#endif

RCL_FN void spmv_store(__global real_t *yp, real_t s, real_t alpha, real_t beta, uint bz) {
  real_t t = R_MUL(alpha, s);
  if (!bz) t = R_ADD(t, R_MUL(beta, *yp));
  *yp = R_CANON(t);
}

/* ---- the per-row accumulator of each contract ------------------------------------------------------ */
#ifdef RCL_SPMV_EXACT
#if defined(RCL_DTYPE_F64)
#define XD RCL_XACC_F64_DOT_DIGITS
#define XBASE RCL_XACC_F64_DOT_BASE
#define XCH 5
#define XPROD(a, b) rcl_xterm_f64_prod(as_ulong(a), as_ulong(b))
#define XIS64 1
#else
#define XD RCL_XACC_F32_DOT_DIGITS
#define XBASE RCL_XACC_F32_DOT_BASE
#define XCH 3
#define XPROD(a, b) rcl_xterm_f32_prod(as_uint(a), as_uint(b))
#define XIS64 0
#endif

/* A private superaccumulator that only touches the digits its terms reach: digits lo..hi hold terms and
 * digit hi+1 is zeroed headroom for the carries (lo > hi: no digit yet). Each digit takes fewer than
 * 2^29 terms (the host caps rows and segments at 2^28 entries), so no digit can overflow. */
typedef struct {
  long s[XD];
  int lo, hi;
  uint flags;
} xrow_t;

RCL_FN void xrow_init(xrow_t *a) {
  a->lo = XD;
  a->hi = -1;
  a->flags = RCL_XF_NOT_NEGZERO; /* the +0 the row sum starts from */
}

RCL_FN void xrow_add(xrow_t *a, real_t v, real_t w) {
  rcl_xterm t = XPROD(v, w);
  a->flags |= t.flags;
  if ((t.lo | t.hi) == 0u) return; /* zero, inf or NaN: flags only */
  rcl_i32 d;
  rcl_u64 c[5];
  rcl_xterm_chunks(t, &d, c);
  int top = d + XCH - 1; /* < XD - 1 for every finite product */
  if (a->lo > a->hi) {
    for (int k = d; k <= top + 1; k++) a->s[k] = 0;
    a->lo = d;
    a->hi = top;
  } else {
    for (int k = d; k < a->lo; k++) a->s[k] = 0;
    if (d < a->lo) a->lo = d;
    for (int k = a->hi + 2; k <= top + 1; k++) a->s[k] = 0;
    if (top > a->hi) a->hi = top;
  }
  for (int j = 0; j < XCH; j++) {
    long cv = (long)c[j];
    a->s[d + j] += t.neg ? -cv : cv;
  }
}

RCL_FN real_t xrow_result(xrow_t *a) {
  int empty = a->lo > a->hi;
  int lo = empty ? 0 : a->lo, nd = empty ? 0 : a->hi - a->lo + 2;
  return R_FROM_BITS((real_bits_t)rcl_xacc_result_bits(a->s + lo, nd, XBASE + 32 * lo, a->flags, XIS64));
}

/* Writes all XD digits carry-normalised (each in [0, 2^32), the top one signed): a segment's value. */
RCL_FN void xrow_store(xrow_t *a, __global long *out) {
  long carry = 0;
  for (int k = 0; k < XD; k++) {
    long v = (k >= a->lo && k <= a->hi + 1) ? a->s[k] : 0;
    v += carry;
    long lo32 = v & 0xffffffffl;
    carry = (v - lo32) / 4294967296l; /* exact: v - lo32 is a multiple of 2^32 */
    out[k] = (k + 1 < XD) ? lo32 : v;
  }
}

#define ACC_T xrow_t
#define ACC_INIT(a) xrow_init(&(a))
#define ACC_ZERO(z) const uint z = 0u /* integer digits: any order, nothing to seal */
#define ACC_ADD(a, z, v, w) xrow_add(&(a), (v), (w))
#define ACC_SUM(a) xrow_result(&(a))
/* Staging in local memory keeps both factors: the products are exact only inside the accumulator. */
#define STAGE_PUT(i, v, w) (sa[(i)] = (v), sx[(i)] = (w))
#define STAGE_ADD(acc, z, i) xrow_add(&(acc), sa[(i)], sx[(i)])
#else
#define ACC_T real_t
#define ACC_INIT(a) ((a) = (real_t)0)
/* Every add is sealed (R_SEAL, prelude.cl) and every loop around it is an RCL_ORDERED_LOOP. */
#define ACC_ZERO(z) RCL_OPAQUE_ZERO(z)
#define ACC_ADD(a, z, v, w) ((a) = R_SEAL(R_ADD((a), R_MUL((v), (w))), z))
#define ACC_SUM(a) (a)
/* Staging keeps the rounded product: the same operation as in the sequential loop. */
#define STAGE_PUT(i, v, w) (sa[(i)] = R_MUL((v), (w)))
#define STAGE_ADD(acc, z, i) ((acc) = R_SEAL(R_ADD((acc), sa[(i)]), z))
#endif

#define SPMV_ARGS                                                                                                      \
  __global const rp_t *rp, __global const uint *ci, __global const real_t *va, __global const real_t *x, ulong xoff,   \
      __global real_t *y, ulong yoff, real_t alpha, real_t beta, uint bz, uint nrows, ulong long_row

/* ---- scalar: one work-item per row ---------------------------------------------------------------- */
__kernel void rcl_spmv_scalar(SPMV_ARGS) {
  const uint r = (uint)get_global_id(0);
  if (r >= nrows) return;
  const rp_t k0 = rp[r], k1 = rp[r + 1];
  if ((ulong)(k1 - k0) > long_row) return;
  x += xoff;
  ACC_ZERO(z);
  ACC_T acc;
  ACC_INIT(acc);
  RCL_ORDERED_LOOP for (rp_t k = k0; k < k1; k++) ACC_ADD(acc, z, va[k], x[ci[k]]);
  spmv_store(y + yoff + r, ACC_SUM(acc), alpha, beta, bz);
}

/* ---- task: one work-item walks rows r0 .. r1-1 in order (plain loops an FPGA compiler pipelines) ---- */
__kernel void rcl_spmv_task(SPMV_ARGS, uint r0, uint r1) {
  x += xoff;
  ACC_ZERO(z);
  for (uint r = r0; r < r1; r++) {
    const rp_t k0 = rp[r], k1 = rp[r + 1];
    if ((ulong)(k1 - k0) > long_row) continue;
    ACC_T acc;
    ACC_INIT(acc);
    RCL_ORDERED_LOOP for (rp_t k = k0; k < k1; k++) ACC_ADD(acc, z, va[k], x[ci[k]]);
    spmv_store(y + yoff + r, ACC_SUM(acc), alpha, beta, bz);
  }
}

/* ---- vector: `lanes` work-items per row load and multiply a chunk of lanes entries each step; the
 * row's first lane then adds the chunk in order. Every work-item of a group runs the same number of
 * steps (steps[group]: its longest row, counted on the host) so that the barriers are uniform. ------ */
__kernel void rcl_spmv_vector(SPMV_ARGS, uint lanes, __global const uint *steps, __local real_t *sa,
                              __local real_t *sx) {
  const uint W = (uint)get_local_size(0), lid = (uint)get_local_id(0);
  const uint slot = lid / lanes, lane = lid - slot * lanes;
  const ulong r = (ulong)get_group_id(0) * (W / lanes) + slot;
  ulong k0 = 0, k1 = 0;
  if (r < nrows) {
    k0 = rp[r];
    k1 = rp[r + 1];
  }
  const int active = r < nrows && k1 - k0 <= long_row;
  const uint nsteps = steps[get_group_id(0)];
  x += xoff;
  ACC_ZERO(z);
  ACC_T acc;
  ACC_INIT(acc);
  RCL_ORDERED_LOOP for (uint c = 0; c < nsteps; c++) {
    const ulong first = k0 + (ulong)c * lanes, k = first + lane;
    if (active && k < k1) STAGE_PUT(lid, va[k], x[ci[k]]);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (active && lane == 0u && first < k1) {
      const uint m = k1 - first < lanes ? (uint)(k1 - first) : lanes;
      RCL_ORDERED_LOOP for (uint j = 0; j < m; j++) STAGE_ADD(acc, z, lid + j);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (active && lane == 0u) spmv_store(y + yoff + r, ACC_SUM(acc), alpha, beta, bz);
}

/* ---- adaptive (CSR-stream): a block of consecutive rows (at most get_local_size rows, at most
 * block_nnz entries, no long row) is staged with coalesced loads, then work-item t sums row r0 + t. --- */
__kernel void rcl_spmv_adaptive(SPMV_ARGS, __global const uint *blocks, __local real_t *sa, __local real_t *sx) {
  const uint W = (uint)get_local_size(0), lid = (uint)get_local_id(0);
  const uint b = (uint)get_group_id(0);
  const uint r0 = blocks[2u * b], r1 = blocks[2u * b + 1u];
  const rp_t base = rp[r0];
  const uint n = (uint)(rp[r1] - base);
  x += xoff;
  for (uint j = lid; j < n; j += W) {
    const rp_t k = base + j;
    STAGE_PUT(j, va[k], x[ci[k]]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint r = r0 + lid;
  if (r < r1) {
    const uint a = (uint)(rp[r] - base), e = (uint)(rp[r + 1] - base);
    ACC_ZERO(z);
    ACC_T acc;
    ACC_INIT(acc);
    RCL_ORDERED_LOOP for (uint j = a; j < e; j++) STAGE_ADD(acc, z, j);
    spmv_store(y + yoff + r, ACC_SUM(acc), alpha, beta, bz);
  }
}

/* ---- sliced ELLPACK: slice s holds rows s*C .. s*C+C-1, entry j of its row t at soff[s] + j*C + t, so
 * neighbouring work-items load neighbouring words. Padding is never read: row r stops at its length. -- */
__kernel void rcl_spmv_sell(SPMV_ARGS, __global const ulong *soff, __global const uint *scol,
                            __global const real_t *sval, uint C) {
  const uint r = (uint)get_global_id(0);
  if (r >= nrows) return;
  const ulong len = (ulong)(rp[r + 1] - rp[r]);
  if (len > long_row) return;
  x += xoff;
  ulong p = soff[r / C] + r % C;
  ACC_ZERO(z);
  ACC_T acc;
  ACC_INIT(acc);
  RCL_ORDERED_LOOP for (ulong j = 0; j < len; j++, p += C) ACC_ADD(acc, z, sval[p], x[scol[p]]);
  spmv_store(y + yoff + r, ACC_SUM(acc), alpha, beta, bz);
}

#ifndef RCL_SPMV_EXACT
/* ---- long rows, ordered: one work-group per row; entries wbeg .. wbeg+wlen-1 of the row this launch.
 * The group stages B products at a time; work-item 0 adds them in order to the sum carried in
 * partial[j] from the previous launch (+0 in the first). The row's last launch stores y. ------------ */
__kernel void rcl_spmv_long_ordered(SPMV_ARGS, __global const uint *lrows, ulong wbeg, ulong wlen,
                                    __global real_t *partial, uint B, __local real_t *sa) {
  const uint W = (uint)get_local_size(0), lid = (uint)get_local_id(0);
  const uint j = (uint)get_group_id(0), r = lrows[j];
  const ulong k0 = rp[r], k1 = rp[r + 1];
  if (k1 - k0 <= wbeg) return; /* finished in an earlier launch: the whole group leaves */
  const ulong a = k0 + wbeg, e = k1 - a <= wlen ? k1 : a + wlen;
  x += xoff;
  real_t s = wbeg == 0 ? (real_t)0 : partial[j];
  RCL_OPAQUE_ZERO(z);
  RCL_ORDERED_LOOP for (ulong c = a; c < e; c += B) {
    const uint m = e - c < B ? (uint)(e - c) : B;
    for (uint i = lid; i < m; i += W) sa[i] = R_MUL(va[c + i], x[ci[c + i]]);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0u) {
      RCL_ORDERED_LOOP for (uint i = 0; i < m; i++) s = R_SEAL(R_ADD(s, sa[i]), z);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0u) {
    if (e == k1)
      spmv_store(y + yoff + r, s, alpha, beta, bz);
    else
      partial[j] = s;
  }
}
#else
/* ---- long rows, exact: each work-item accumulates one segment (entries k0 .. k1-1 of a long row) and
 * writes its carry-normalised digits; then one work-group per row adds the segments' digits (integers:
 * any order) and rounds once. ------------------------------------------------------------------------ */
__kernel void rcl_spmv_long_exact_seg(__global const uint *ci, __global const real_t *va, __global const real_t *x,
                                      ulong xoff, __global const ulong *seg, uint nseg, __global long *digits,
                                      __global uint *flags) {
  const uint i = (uint)get_global_id(0);
  if (i >= nseg) return;
  const ulong k0 = seg[2u * i], k1 = seg[2u * i + 1u];
  x += xoff;
  xrow_t acc;
  xrow_init(&acc);
  for (ulong k = k0; k < k1; k++) xrow_add(&acc, va[k], x[ci[k]]);
  xrow_store(&acc, digits + (ulong)i * XD);
  flags[i] = acc.flags;
}

__kernel void rcl_spmv_long_exact_sum(__global real_t *y, ulong yoff, real_t alpha, real_t beta, uint bz,
                                      __global const uint *lrows, __global const uint *segfirst,
                                      __global const long *digits, __global const uint *flags, __local long *acc) {
  const uint W = (uint)get_local_size(0), lid = (uint)get_local_id(0);
  const uint j = (uint)get_group_id(0), s0 = segfirst[j], s1 = segfirst[j + 1u];
  for (uint d = lid; d < XD; d += W) {
    long t = 0;
    for (uint q = s0; q < s1; q++) t += digits[(ulong)q * XD + d];
    acc[d] = t;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0u) {
    rcl_i64 s[XD];
    uint f = RCL_XF_NOT_NEGZERO;
    for (uint q = s0; q < s1; q++) f |= flags[q];
    for (uint d = 0; d < XD; d++) s[d] = acc[d];
    real_t v = R_FROM_BITS((real_bits_t)rcl_xacc_result_bits(s, XD, XBASE, f, XIS64));
    spmv_store(y + yoff + lrows[j], v, alpha, beta, bz);
  }
}
#endif

/* ---- the conventional CSR-vector kernel (benchmark baseline, not a contract): each of `lanes`
 * work-items sums every lanes-th entry of the row, then a tree over the lanes. Its bits depend on
 * lanes; it shows what a vendor-style kernel costs. ---------------------------------------------------- */
__kernel void rcl_spmv_vector_tree(SPMV_ARGS, uint lanes, __local real_t *sa) {
  const uint W = (uint)get_local_size(0), lid = (uint)get_local_id(0);
  const uint slot = lid / lanes, lane = lid - slot * lanes;
  const ulong r = (ulong)get_group_id(0) * (W / lanes) + slot;
  real_t s = (real_t)0;
  x += xoff;
  if (r < nrows) {
    const rp_t k1 = rp[r + 1];
    for (rp_t k = rp[r] + lane; k < k1; k += lanes) s = R_ADD(s, R_MUL(va[k], x[ci[k]]));
  }
  sa[lid] = s;
  for (uint off = lanes / 2u; off > 0u; off >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane < off) sa[lid] = R_ADD(sa[lid], sa[lid + off]);
  }
  if (r < nrows && lane == 0u) spmv_store(y + yoff + r, sa[lid], alpha, beta, bz);
}
