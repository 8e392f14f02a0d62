/* reduce_task.cl — the single-work-item ("task") variants of the deterministic reductions: contracts
 * "reduce.ordered" v1 and "reduce.exact" v1 (docs/contracts.md; why they give the same bits:
 * docs/contracts.md (§7)). A program of its own, so the NDRange program (reduce.cl) does not pay for
 * compiling them. Keep the constants in sync with cl/reduce.cl. */

#define RED_L 64u
#define RED_M 32u
#define RED_B (RED_L * RED_M)
#define RCL_LEAF_SUM(i) (x[(i)])
#define RCL_LEAF_DOT(i) R_MUL(x[(i)], y[(i)])

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

/* One work-item, plain loops: the shape offline FPGA compilers pipeline, and the same contracts bit for bit. A launch handles a
 * range of the work and keeps its state in global memory, so a driver's loop limit (llvmpipe) can split
 * the work over several launches; on other devices one launch does everything.
 *
 * ordered: block b's elements are read in order into 64 lane accumulators (lane e % 64 of element e:
 *   the contract's lane sums, with 64 independent accumulators so a pipeline needs no stall). Its lanes
 *   are the leaves b*64 .. b*64+63, pushed in order onto a binary counter: stack[k] holds the sum of a
 *   complete, aligned subtree, and pushing leaf c merges the top two entries once per trailing one bit
 *   of c. Folding the finished stack from the top (the smallest subtrees first) gives exactly the
 *   contract's level-by-level tree, whose unpaired last node at each level is carried up unchanged.
 *   Blocks [first, last) are handled; stack holds the state between launches (its depth is
 *   popcount(first * 64), every block before `last` of a launch but the final one being full). */
#define RCL_ORDERED_TASK(NAME, LEAF)                                                                   \
  __kernel void NAME(__global const real_t *x, ulong xoff, __global const real_t *y, ulong yoff, ulong n,   \
                     ulong first, ulong last, __global real_t *stack, __global real_t *out, ulong out_off,   \
                     uint finalize) {                                                                  \
    real_t st[64];                                                                                     \
    real_t lanes[RED_L];                                                                               \
    RCL_OPAQUE_ZERO(z); /* ordered loops (prelude.cl): every add sealed */                             \
    x += xoff;                                                                                         \
    y += yoff;                                                                                         \
    uint depth = (uint)popcount(first * RED_L);                                                        \
    for (uint k = 0; k < depth; k++) st[k] = stack[k];                                                 \
    for (ulong b = first; b < last; b++) {                                                             \
      ulong base = b * RED_B;                                                                          \
      uint len = (uint)(n - base < RED_B ? n - base : RED_B);                                          \
      RCL_ORDERED_LOOP for (uint e = 0; e < len; e++) {                                                \
        real_t v = LEAF(base + e);                                                                     \
        lanes[e % RED_L] = e < RED_L ? v : R_SEAL(R_ADD(lanes[e % RED_L], v), z);                      \
      }                                                                                                \
      uint nl = len < RED_L ? len : RED_L;                                                             \
      for (uint l = 0; l < nl; l++) {                                                                  \
        ulong c = b * RED_L + l;                                                                       \
        st[depth++] = lanes[l];                                                                        \
        RCL_ORDERED_LOOP for (; c & 1u; c >>= 1) {                                                     \
          depth--;                                                                                     \
          st[depth - 1] = R_SEAL(R_ADD(st[depth - 1], st[depth]), z);                                  \
        }                                                                                              \
      }                                                                                                \
    }                                                                                                  \
    if (finalize == 0u) {                                                                              \
      for (uint k = 0; k < depth; k++) stack[k] = st[k];                                               \
    } else {                                                                                           \
      RCL_ORDERED_LOOP for (uint k = depth - 1u; k > 0u; k--) st[k - 1u] =                             \
          R_SEAL(R_ADD(st[k - 1u], st[k]), z);                                                         \
      real_t r = st[0];                                                                                \
      if (finalize == 2u) r = R_SQRT(r);                                                               \
      out[out_off] = R_CANON(r);                                                                       \
    }                                                                                                  \
  }

RCL_ORDERED_TASK(rcl_ordered_sum_task, RCL_LEAF_SUM)
RCL_ORDERED_TASK(rcl_ordered_dot_task, RCL_LEAF_DOT)

/* exact: terms [first, last) go into one private superaccumulator, carry-normalised at the end of each
 * launch (the host keeps a launch below 2^28 terms, so no slot can overflow); the final launch rounds. */
#define RCL_EXACT_TASK(NAME, TERM, D, CHUNKS, BASE)                                                    \
  __kernel void NAME(__global const real_t *x, ulong xoff, __global const real_t *y, ulong yoff,        \
                     ulong first, ulong last, __global long *state, __global uint *state_flags,         \
                     __global real_t *out, ulong out_off, uint finalize) {                              \
    long acc[(D)];                                                                                     \
    uint flags = 0;                                                                                    \
    x += xoff;                                                                                         \
    y += yoff;                                                                                         \
    for (uint k = 0; k < (D); k++) acc[k] = first == 0 ? 0 : state[k];                                 \
    if (first != 0) flags = state_flags[0];                                                            \
    for (ulong i = first; i < last; i++) {                                                             \
      rcl_xterm t = TERM(i);                                                                           \
      rcl_i32 d;                                                                                       \
      rcl_u64 c[5];                                                                                    \
      flags |= t.flags;                                                                                \
      rcl_xterm_chunks(t, &d, c);                                                                      \
      for (uint j = 0; j < (CHUNKS); j++) {                                                            \
        long v = (long)c[j];                                                                           \
        acc[(uint)d + j] += t.neg ? -v : v;                                                            \
      }                                                                                                \
    }                                                                                                  \
    long carry = 0;                                                                                    \
    for (uint k = 0; k < (D); k++) {                                                                   \
      long v = acc[k] + carry;                                                                         \
      long lo = v & 0xffffffffl;                                                                       \
      carry = (v - lo) / 4294967296l;                                                                  \
      acc[k] = (k + 1u < (D)) ? lo : v;                                                                \
    }                                                                                                  \
    if (finalize == 0u) {                                                                              \
      for (uint k = 0; k < (D); k++) state[k] = acc[k];                                                \
      state_flags[0] = flags;                                                                          \
    } else {                                                                                           \
      real_t r = R_FROM_BITS((real_bits_t)rcl_xacc_result_bits(acc, (D), (BASE), flags, XIS_F64));     \
      if (finalize == 2u) r = R_SQRT(r);                                                               \
      out[out_off] = R_CANON(r);                                                                       \
    }                                                                                                  \
  }

RCL_EXACT_TASK(rcl_exact_sum_task, XTERM_SUM, XSUM_DIGITS, XSUM_CHUNKS, XSUM_BASE)
RCL_EXACT_TASK(rcl_exact_dot_task, XTERM_DOT, XDOT_DIGITS, XDOT_CHUNKS, XDOT_BASE)

