/* The reproducible reductions over MPI: rcl_mpi_partial_allreduce gathers every rank's part (rcl_partial's
 * byte form) to every rank, which merges them in rank order, so every rank computes the same bits, equal to
 * one device's rcl_reduce over the whole vector; rcl_mpi_reduce makes this rank's part on its device first.
 *
 * The parts travel in fixed slots of SLOT bytes (one MPI_Allgather): the part's length, the rank's status, then
 * the part itself when it fits. Where some part does not fit, those parts follow in one MPI_Allgatherv. Up to
 * STACK_RANKS ranks the slots are received on the stack, so nothing can fail before the gather and the statuses
 * travel in it; beyond, the ranks first agree that each allocated its slots. The merge ends with an agreement
 * (it allocates, and a rank may run out of memory alone).
 *
 * First, though, the fast path: every rank's part in its flat form (reduce/reduce_partial.h: exact parts, and
 * ordered parts without a cut block), joined in one collective. Up to rcl__mpi_flat_gather_max() ranks (16) by
 * ONE MPI_Allgather of the flat parts, after which every rank merges them in rank order itself: one exchange of
 * a few words (Open MPI's MPI_Allreduce with a non-commutative operation is a reduce to rank 0 and a broadcast,
 * two), and the same words on every rank by construction. Above, by ONE MPI_Allreduce with a non-commutative
 * user operation (MPI applies it in rank order; the merge is associative on the canonical form, so any grouping
 * MPI picks gives the same words on every rank), whose messages do not grow with the ranks. The merge never
 * allocates and every decision in it depends only on the parts, so every rank holds the same words: a held part
 * covering the whole vector gives the result; a deferred one (the parts join but need more words than the first
 * try's, 8 up to 6 ranks) a second exchange of 32 words; anything else (a part that does not fit, a failed rank,
 * parts that do not join) sends every rank down the gather path, which reports the errors. The first try's size
 * depends on the number of ranks alone, so every rank passes the same count even where its part is missing. */
#include <limits.h>
#include <stdatomic.h>
#include <string.h>

#include "mpi/mpi_internal.h"
#include "reduce/reduce_partial.h"

enum { SLOT = 1024, SLOT_HEAD = 16, SLOT_DATA = SLOT - SLOT_HEAD, STACK_RANKS = 16 };

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* The gathered parts: slots (size * SLOT bytes) and, for the parts that do not fit a slot, big (each rank's
 * part at displs[r], counts[r] bytes; 0 for the parts in their slot). */
typedef struct {
  int size, rank;
  unsigned char *slots, *big, *mine;
  int *counts, *displs;
} gathered;

static void gathered_free(gathered *g) {
  rcl__free(g->slots);
  rcl__free(g->big);
  rcl__free(g->mine);
  rcl__free(g->counts);
  rcl__free(g->displs);
}

/* This rank's slot: its part's length, and the part when it fits (else it is packed into g->mine). */
static int fill_slot(gathered *g, unsigned char *slot, void *out, const rcl_partial *p) {
  size_t len;
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_partial_allreduce: NULL output");
  if (!p) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_partial_allreduce: NULL part");
  int rc = rcl_partial_pack(NULL, 0, &len, p);
  if (rc) return rc;
  if (len > INT_MAX) return rcl__fail(RCL_ERR_OVERFLOW, "a part of %zu bytes is above MPI's count limit", len);
  put_u64(slot, len);
  if (len <= SLOT_DATA) return rcl_partial_pack(slot + SLOT_HEAD, SLOT_DATA, &len, p);
  if (!(g->mine = rcl__malloc(len))) return RCL_ERR_OUT_OF_MEMORY;
  return rcl_partial_pack(g->mine, len, &len, p);
}

/* The parts that do not fit a slot, to every rank (one MPI_Allgatherv), when there are any. */
static int gather_big(gathered *g, MPI_Comm comm) {
  size_t total = 0;
  int any = 0, rc = 0;
  for (int r = 0; r < g->size; r++) {
    uint64_t len = get_u64(g->slots + (size_t)r * SLOT);
    any |= len > SLOT_DATA;
    total += len > SLOT_DATA ? (size_t)len : 0;
  }
  if (!any) return 0;
  if (total > INT_MAX) rc = rcl__fail(RCL_ERR_OVERFLOW, "the parts' %zu bytes are above MPI's count limit", total);
  if (!rc && (!(g->counts = rcl__calloc((size_t)g->size, sizeof(int))) ||
              !(g->displs = rcl__calloc((size_t)g->size, sizeof(int))) || !(g->big = rcl__malloc(total))))
    rc = RCL_ERR_OUT_OF_MEMORY;
  for (int r = 0, at = 0; !rc && r < g->size; r++) {
    uint64_t len = get_u64(g->slots + (size_t)r * SLOT);
    g->counts[r] = len > SLOT_DATA ? (int)len : 0;
    g->displs[r] = at;
    at += g->counts[r];
  }
  if ((rc = rcl_mpi_agree(comm, rc, NULL)) != 0) return rc;
  return rcl__mpi_check(
      MPI_Allgatherv(g->mine, g->counts[g->rank], MPI_BYTE, g->big, g->counts, g->displs, MPI_BYTE, comm),
      "MPI_Allgatherv (parts)");
}

/* Every rank's part unpacked, merged in rank order, and the result. */
static int merge_all(void *out, const gathered *g) {
  rcl_partial **parts = rcl__calloc((size_t)g->size, sizeof *parts), *whole = NULL;
  if (!parts) return RCL_ERR_OUT_OF_MEMORY;
  int rc = 0;
  for (int r = 0; r < g->size && !rc; r++) {
    const unsigned char *slot = g->slots + (size_t)r * SLOT;
    size_t len = (size_t)get_u64(slot);
    rc = rcl_partial_unpack(&parts[r], len <= SLOT_DATA ? slot + SLOT_HEAD : g->big + g->displs[r], len);
  }
  if (!rc) rc = rcl_partial_merge(&whole, parts, (size_t)g->size);
  if (!rc) rc = rcl_partial_result(out, whole);
  rcl_partial_free(whole);
  for (int r = 0; r < g->size; r++) rcl_partial_free(parts[r]);
  rcl__free(parts);
  return rc;
}

/* Whether a rank's slot carries a failure. */
static int any_failed(const gathered *g) {
  for (int r = 0; r < g->size; r++)
    if (get_u64(g->slots + (size_t)r * SLOT + 8) != 0) return 1;
  return 0;
}

/* The user operation: inout = in (the lower ranks' parts) merged with inout, for each of len flat parts (all
 * of the words their first one says). */
static void flat_op(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  uint64_t *a = in, *b = inout;
  int words = rcl__partial_flat_words(b);
  for (int i = 0; i < *len; i++) rcl__partial_flat_merge(a + (size_t)i * words, b + (size_t)i * words);
}

/* The flat parts' sizes: 8 to RCL_FLAT_MAX words, by 4. The first try's size depends on the number of ranks
 * alone (room for a node per rank: each rank's part of a sum of 2^k aligned blocks is one node), then
 * RCL_FLAT_MAX where it said deferred. */
enum { TIERS = (RCL_FLAT_MAX - 8) / 4 + 1 };

static int tier_words(int t) { return 8 + 4 * t; }

static int first_tier(int size) {
  int data = size < 6 ? 6 : size > RCL_FLAT_MAX - RCL_FLAT_HEAD ? RCL_FLAT_MAX - RCL_FLAT_HEAD : size;
  return (RCL_FLAT_HEAD + data - 8 + 3) / 4;
}

/* The flat parts' MPI types (one per tier) and operation, made once per process (0 when ready). */
static int flat_types(MPI_Datatype **types, MPI_Op *op) {
  static atomic_int state; /* 0: not made, 1: being made, 2: ready, 3: failed */
  static MPI_Datatype t[TIERS];
  static MPI_Op o;
  int expect = 0;
  if (atomic_compare_exchange_strong(&state, &expect, 1)) {
    int ok = MPI_Op_create(flat_op, 0, &o) == MPI_SUCCESS;
    for (int i = 0; i < TIERS && ok; i++)
      ok = MPI_Type_contiguous(tier_words(i), MPI_UINT64_T, &t[i]) == MPI_SUCCESS &&
           MPI_Type_commit(&t[i]) == MPI_SUCCESS;
    atomic_store(&state, ok ? 2 : 3);
  }
  while ((expect = atomic_load(&state)) == 1) {
  }
  *types = t;
  *op = o;
  return expect == 2 ? 0 : rcl__fail(RCL_ERR_IO, "rcl_mpi_partial_allreduce: could not make the flat parts' MPI types");
}

/* The ranks up to which the flat parts are gathered rather than reduced by MPI (see the top). */
enum { FLAT_GATHER_RANKS = 16 };
static atomic_int flat_gather_max = FLAT_GATHER_RANKS;

int rcl__mpi_flat_gather_max(int ranks) {
  if (ranks < 0) return atomic_load(&flat_gather_max);
  return atomic_exchange(&flat_gather_max, ranks > FLAT_GATHER_RANKS ? FLAT_GATHER_RANKS : ranks);
}

/* all = every rank's n flat parts f (each one of type, words words), part i merged over the ranks in rank
 * order into all + i * words: up to flat_gather_max ranks one MPI_Allgather of the n parts (a built-in type),
 * merged here; above, one MPI_Allreduce of n with op. */
static int flat_join(uint64_t *all, const uint64_t *f, int n, int words, MPI_Datatype type, MPI_Op op, int size,
                     MPI_Comm comm) {
  if (size > atomic_load(&flat_gather_max))
    return rcl__mpi_check(MPI_Allreduce(f, all, n, type, op, comm), "MPI_Allreduce (flat parts)");
  uint64_t g[FLAT_GATHER_RANKS * RCL_MPI_MANY_MAX * RCL_FLAT_MAX];
  size_t w = (size_t)words, stride = (size_t)n * w;
  int rc = rcl__mpi_check(MPI_Allgather(f, n * words, MPI_UINT64_T, g, n * words, MPI_UINT64_T, comm),
                          "MPI_Allgather (flat parts)");
  for (int i = 0; !rc && i < n; i++) {
    memcpy(all + i * w, g + (size_t)(size - 1) * stride + i * w, w * sizeof *all);
    for (int r = size - 2; r >= 0; r--) rcl__partial_flat_merge(g + (size_t)r * stride + i * w, all + i * w);
  }
  return rc;
}

/* Each part's flat form at tier t, joined over the ranks into all (one exchange for the n parts). The number
 * of parts held after it in *held; *deferred where some part needs the last tier. */
static int flat_many(uint64_t *all, int *held, int *deferred, MPI_Comm comm, void *const *out,
                     const rcl_partial *const *mine, int n, int status, int size, int t) {
  MPI_Datatype *types;
  MPI_Op op;
  uint64_t f[RCL_MPI_MANY_MAX * RCL_FLAT_MAX];
  int w = tier_words(t), rc = flat_types(&types, &op);
  for (int i = 0; !rc && i < n; i++) rcl__partial_flatten(f + i * w, status || !out[i] ? NULL : mine[i], w);
  if (!rc) rc = flat_join(all, f, n, w, types[t], op, size, comm);
  *held = *deferred = 0;
  for (int i = 0; !rc && i < n; i++) {
    int s = rcl__partial_flat_state(all + i * w);
    *held += s == RCL_FLAT_HELD;
    *deferred |= s == RCL_FLAT_DEFERRED;
  }
  return rc;
}

/* The fast path for n parts: done[i] 1 and out[i] set where part i's flat forms joined, 0 where the gather path
 * must run (the same on every rank). One exchange at the first tier's size; a second at RCL_FLAT_MAX words only
 * where the first said some parts join but need more room (the same words on every rank: the same decision). */
static int flat_parts(int *done, void *const *out, MPI_Comm comm, const rcl_partial *const *mine, int n, int status) {
  uint64_t all[RCL_MPI_MANY_MAX * RCL_FLAT_MAX];
  int size, rank, held = 0, deferred = 0, t = 0;
  int rc = rcl__mpi_shape(&size, &rank, comm);
  if (!rc) rc = flat_many(all, &held, &deferred, comm, out, mine, n, status, size, t = first_tier(size));
  if (!rc && held < n && deferred && t < TIERS - 1)
    rc = flat_many(all, &held, &deferred, comm, out, mine, n, status, size, t = TIERS - 1);
  for (int i = 0; i < n; i++)
    done[i] = !rc && rcl__partial_flat_state(all + i * tier_words(t)) == RCL_FLAT_HELD &&
              rcl__partial_flat_result(out[i], all + i * tier_words(t)) == 0;
  return rc;
}

/* The gather path (see the top): every rank's part in a slot of one MPI_Allgather, merged here. */
static int gather_path(void *out, MPI_Comm comm, const rcl_partial *mine, int status) {
  gathered g = {0};
  int rc = rcl__mpi_shape(&g.size, &g.rank, comm);
  if (rc) return rc;
  unsigned char slot[SLOT] = {0}, stack_slots[STACK_RANKS * SLOT];
  int on_stack = g.size <= STACK_RANKS;
  if (status > 0) status = rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_partial_allreduce: status %d", status);
  if (!on_stack && !status && !(g.slots = rcl__malloc((size_t)g.size * SLOT))) status = RCL_ERR_OUT_OF_MEMORY;
  if (!status) status = fill_slot(&g, slot, out, mine);
  if (on_stack)
    g.slots = stack_slots;
  else
    rc = rcl_mpi_agree(comm, status, NULL);
  put_u64(slot + 8, status ? 1 : 0);
  if (!rc)
    rc = rcl__mpi_check(MPI_Allgather(slot, SLOT, MPI_BYTE, g.slots, SLOT, MPI_BYTE, comm), "MPI_Allgather (parts)");
  if (!rc && on_stack && any_failed(&g)) rc = rcl_mpi_agree(comm, status, NULL); /* every rank sees the same slots */
  if (!rc) rc = gather_big(&g, comm);
  if (!rc) rc = rcl_mpi_agree(comm, merge_all(out, &g), NULL);
  if (on_stack) g.slots = NULL;
  gathered_free(&g);
  return rc;
}

int rcl__mpi_partial_allreduce_status(void *out, MPI_Comm comm, const rcl_partial *mine, int status) {
  int done = 0, rc = flat_parts(&done, &out, comm, &mine, 1, status);
  return rc || done ? rc : gather_path(out, comm, mine, status);
}

int rcl_mpi_partial_allreduce(void *out, MPI_Comm comm, const rcl_partial *mine) {
  return rcl__mpi_partial_allreduce_status(out, comm, mine, 0);
}

/* This rank's first element and the total: two words each (the low and high 32 bits of n_local) summed by MPI,
 * so the sums are exact and an overflow of size_t is seen. */
static int offsets(size_t *first, size_t *total, MPI_Comm comm, int rank, size_t n_local) {
  uint64_t mine[2] = {(uint64_t)n_local & 0xffffffffu, (uint64_t)n_local >> 32}, before[2] = {0, 0}, all[2];
  int rc = rcl__mpi_check(MPI_Exscan(mine, before, 2, MPI_UINT64_T, MPI_SUM, comm), "MPI_Exscan (offsets)");
  if (!rc) rc = rcl__mpi_check(MPI_Allreduce(mine, all, 2, MPI_UINT64_T, MPI_SUM, comm), "MPI_Allreduce (sizes)");
  if (rc) return rc;
  if (rank == 0) before[0] = before[1] = 0; /* MPI_Exscan leaves rank 0's result undefined */
  if (all[1] + (all[0] >> 32) > 0xffffffffu || (SIZE_MAX < UINT64_MAX && all[1]))
    return rcl__fail(RCL_ERR_OVERFLOW, "rcl_mpi_reduce: the ranks' n_local sum above SIZE_MAX");
  *first = (size_t)(before[0] + (before[1] << 32));
  *total = (size_t)(all[0] + (all[1] << 32));
  return 0;
}

int rcl_mpi_reduce(void *out, MPI_Comm comm, rcl_context *ctx, rcl_reduce_op op, rcl_dtype dtype, size_t n_local,
                   const void *x, const void *y, const rcl_reduce_options *opts) {
  int size, rank, rc = rcl__mpi_shape(&size, &rank, comm);
  if (rc) return rc;
  size_t first = 0, total = 0;
  /* The offsets are collective: every rank takes part before looking at its own arguments. */
  rc = offsets(&first, &total, comm, rank, n_local);
  rcl_partial *part = NULL;
  if (!rc && !out) rc = rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mpi_reduce: NULL output");
  if (!rc) rc = rcl_reduce_partial(&part, ctx, op, dtype, total, first, n_local, x, y, opts);
  rc = rcl__mpi_partial_allreduce_status(out, comm, part, rc);
  rcl_partial_free(part);
  return rc;
}

/* ---- several parts in one call (CG's norm and dot of one iteration) -------------------------------------- */

int rcl__mpi_partial_allreduce_many(void *const *out, MPI_Comm comm, const rcl_partial *const *mine, int n,
                                    int status) {
  int done[RCL_MPI_MANY_MAX];
  if (n < 1 || n > RCL_MPI_MANY_MAX)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl__mpi_partial_allreduce_many: %d parts (1 to %d)", n, RCL_MPI_MANY_MAX);
  int rc = flat_parts(done, out, comm, mine, n, status);
  /* every rank holds the same words, so the same parts take the gather path, in the same order */
  for (int i = 0; !rc && i < n; i++)
    if (!done[i]) rc = gather_path(out[i], comm, mine[i], status);
  return rc;
}
