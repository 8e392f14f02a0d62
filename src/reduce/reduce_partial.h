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
/* Whether fragment f of p holds every element of its block. */
RCL_INTERNAL int rcl__partial_frag_complete(const rcl_partial *p, const rcl_pfrag *f);
/* Ordered: ends building: a pending fragment stays the tail (or the head of a one-block part); then
 * checks the part against its layout. */
RCL_INTERNAL int rcl__partial_close(rcl_partial *p);

/* *out = a copy of p whose op is op: the nrm2 part of x from the part of the dot x'x (the same terms, contracts
 * §1; src/mpi/mpi_sparse.c). */
RCL_SIBLING int rcl__partial_copy_as(rcl_partial **out, const rcl_partial *p, rcl_reduce_op op);

/* ---- the flat form (reduce_partial_flat.c), for MPI's reductions (src/mpi/mpi_reduce.c) ------------------- */
/* A part in `words` 64-bit words (8, 16 or 32: RCL_FLAT_HEAD header words, the rest data), without pointers,
 * so that one MPI_Allreduce can carry it (a contiguous type of MPI_UINT64_T; small, so that it costs about one
 * value's allreduce) and merge two of them with a user operation that never allocates. Header: the state, the
 * reduction, the flags, the words, the shape and total (< 2^32), then first | end << 32. Exact data: the
 * digits of the window [lo, hi) of the superaccumulator where they are not 0, balanced (each in [-2^31, 2^31),
 * the top one signed) and, when merged, only added (the window is the union of the parts'; the carries wait
 * for the result, which rounds from the window). Ordered data: the nodes' values in order, when no block is
 * cut (their levels and indices follow from the slice); a budget (the sum of the merged parts' node counts,
 * at least the merged count) keeps every merge inside.
 * States: held (the data are there), deferred (the header is, the data would fit RCL_FLAT_MAX words: the
 * caller may run again with that many) or dead (nothing; the caller takes another way). A merge is held when
 * both are, they join (same reduction, consecutive slices) and the union fits; deferred when neither is dead,
 * they join and the union fits RCL_FLAT_MAX words; else dead. So the state of the merge of all parts, and
 * its words, do not depend on the grouping. */
enum { RCL_FLAT_HEAD = 2, RCL_FLAT_MAX = 32 };
enum { RCL_FLAT_DEAD = 0, RCL_FLAT_HELD = 1, RCL_FLAT_DEFERRED = 2 };
/* f[0 .. words) = p's flat form in words words (a multiple of 4, 8 to RCL_FLAT_MAX); p NULL: dead. */
RCL_SIBLING void rcl__partial_flatten(uint64_t *f, const rcl_partial *p, int words);
/* b = a merged with b (a's slice just before b's), both of b's words. Deterministic and allocation-free: any
 * grouping of the same flat parts gives the same words. */
RCL_SIBLING void rcl__partial_flat_merge(const uint64_t *a, uint64_t *b);
/* The words and the state (RCL_FLAT_*) of a flat part. */
RCL_SIBLING int rcl__partial_flat_words(const uint64_t *f);
RCL_SIBLING int rcl__partial_flat_state(const uint64_t *f);
/* rcl_partial_result of a held flat part (0), or nonzero where it is not held or does not cover [0, total). */
RCL_SIBLING int rcl__partial_flat_result(void *out, const uint64_t *f);
/* The end of rcl_partial_result: *out = r (the value's bits), after sqrt for nrm2, NaN canonical. */
RCL_INTERNAL void rcl__partial_finish(void *out, rcl_reduce_op op, rcl_dtype dtype, uint64_t r);

#endif
