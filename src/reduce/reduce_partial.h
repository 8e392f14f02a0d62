/* Partial reductions (include/reprocl/reduce.h, docs/contracts.md §10): the part structure and how it is
 * built, shared by the host side (reduce_partial.c: reference, merge, result, byte form) and the device
 * side (reduce_partial_dev.c). Not installed. */
#ifndef REPROCL_REDUCE_PARTIAL_H
#define REPROCL_REDUCE_PARTIAL_H
#include "reduce/reduce_internal.h"

#define RCL_PART_B ((size_t)2048) /* reduce.ordered's block */
#define RCL_PART_MAX_NODES 160
#define RCL_XACC_MAX_DIGITS_HOST                                                                                       \
  133 /* rcl_exact.cl: RCL_XACC_MAX_DIGITS */ /* a slice's maximal nodes: at most 2 per level, levels < 64 */

/* A complete, aligned node of the ordered contract's block tree: the tree of blocks
 * [index * 2^level, min((index + 1) * 2^level, nb)); bits: its value's bits (canonical NaN). */
typedef struct {
  uint32_t level;
  uint64_t index;
  uint64_t bits;
} rcl_pnode;

/* The terms t_i of elements [start, start + count) of one block that a slice boundary cuts (count 0: none);
 * terms holds RCL_PART_B values of the dtype (canonical NaN). */
typedef struct {
  size_t start, count;
  unsigned char *terms;
} rcl_pfrag;

struct rcl_partial {
  rcl_reduce_op op;
  rcl_dtype dtype;
  rcl_reduce_mode mode;
  size_t total, first, n;
  /* ordered: head fragment, the nodes in order, tail fragment (a slice inside one incomplete block has only
   * a head). While a part is built, tail is the pending fragment. */
  rcl_pfrag head, tail;
  size_t nnodes;
  rcl_pnode nodes[RCL_PART_MAX_NODES];
  /* exact: the carry-normalised superaccumulator (rcl__xacc_normalize) and its flags */
  int nd;
  uint32_t flags;
  int64_t *digits;
};

/* The layout a slice's part has, by (total, first, n) alone: its complete blocks [*c0, *c1) and the
 * element ranges of its head and tail fragments (counts 0 when absent). */
typedef struct {
  size_t nb, c0, c1;
  size_t head_start, head_count, tail_start, tail_count;
} rcl_playout;
RCL_INTERNAL void rcl__partial_layout(rcl_playout *lo, size_t total, size_t first, size_t n);
/* The maximal aligned nodes of blocks [c0, c1) of a tree of nb blocks, in order: *count of them. */
RCL_INTERNAL void rcl__partial_nodes(rcl_pnode *nodes, size_t *count, size_t nb, size_t c0, size_t c1);

/* A new empty part of the slice (arguments checked, naming the bad one). */
RCL_INTERNAL int rcl__partial_new(rcl_partial **out, rcl_reduce_op op, rcl_dtype dtype, rcl_reduce_mode mode,
                                  size_t total, size_t first, size_t n);
/* Ordered: takes the terms of elements [start, start + count) of one block (x, y: the elements; y NULL
 * unless dot), joining them to a pending fragment of the same block; a complete block becomes a node. */
RCL_INTERNAL int rcl__partial_take_elems(rcl_partial *p, size_t start, size_t count, const void *x, const void *y);
/* Ordered: takes the next node (level, index, value bits), merging siblings and promoting a last node. */
RCL_INTERNAL int rcl__partial_take_node(rcl_partial *p, uint32_t level, uint64_t index, uint64_t bits);
/* Ordered: ends building: a pending fragment stays the tail (or the head of a one-block part); then
 * checks the part against its layout. */
RCL_INTERNAL int rcl__partial_close(rcl_partial *p);

/* ---- the flat form (reduce_partial_flat.c), for MPI's reductions (src/mpi/mpi_reduce.c) ------------------- */
/* A part in RCL_FLAT_WORDS 64-bit words, without pointers, so that MPI_Allreduce can carry it (a contiguous
 * type of MPI_UINT64_T; small, so that it costs about one value's allreduce) and merge two of them with a user
 * operation that never allocates. Exact: the digits of the window [lo, hi) of the superaccumulator where they
 * are not 0, balanced (each in [-2^31, 2^31), the top one signed) and, when merged, only added (the window is
 * the union of the parts'; the carries wait for the result). Ordered: the nodes, when no block is cut; a
 * budget (the sum of the merged parts' node counts, at least the merged count) keeps every merge inside. A part
 * is held (w[0] bit 0) when it fits; a merge holds when both did, they join (same reduction, consecutive
 * slices) and it fits, so whether the merge of all parts is held does not depend on their grouping. */
enum { RCL_FLAT_HEAD = 5, RCL_FLAT_WORDS = 32 };
typedef struct {
  uint64_t w[RCL_FLAT_WORDS];
} rcl_partial_flat;
/* *f = p's flat form, or (p NULL, or p does not fit) w[0] = 0. */
RCL_SIBLING void rcl__partial_flatten(rcl_partial_flat *f, const rcl_partial *p);
/* *b = a merged with *b (a's slice just before b's), or b->w[0] = 0 where either is not held or they do not
 * join. Deterministic and allocation-free: any grouping of the same flat parts gives the same words. */
RCL_SIBLING void rcl__partial_flat_merge(const rcl_partial_flat *a, rcl_partial_flat *b);
/* rcl_partial_result of a held flat part (0), or nonzero where it is not held or does not cover [0, total). */
RCL_SIBLING int rcl__partial_flat_result(void *out, const rcl_partial_flat *f);

#endif
