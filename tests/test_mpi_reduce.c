/* The MPI layer's reductions (reprocl_mpi; run by ctest under mpirun -n 1..4): rcl_mpi_reduce on each device and
 * on a mix of devices (rank r on device r mod count), and rcl_mpi_partial_allreduce of the host reference parts,
 * give on every rank exactly rcl_ref_reduce over the whole vector (memcmp), for random per-rank sizes including
 * 0, with trap inputs straddling every rank boundary; a failure on one rank fails every rank with the same
 * status and a message naming the lowest failing rank.
 *
 * The fast path's tests run twice (loop index _i): the flat parts gathered and merged on every rank (0) and
 * joined by MPI_Allreduce with the user operation (1), the path above 16 ranks.
 *
 * Every collective call of a test runs on every rank before any assertion, so a failed assertion on one rank
 * (which ends that test there) never leaves another rank waiting in a collective. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpi/mpi_internal.h"
#include "reduce/reduce_partial.h"
#include "reprocl/mpi.h"
#include "testlib.h"

static int rank, nranks;
static const rcl_dtype dtypes[] = {RCL_F32, RCL_F64};
static const rcl_reduce_op ops[] = {RCL_OP_SUM, RCL_OP_DOT, RCL_OP_NRM2};
static const rcl_reduce_mode modes[] = {RCL_REDUCE_ORDERED, RCL_REDUCE_EXACT};
#define B 2048u

/* The global problem, the same on every rank: per-rank sizes (from a seed every rank shares), the whole x and y
 * (every rank builds them, then uses its slice), and the host reference over the whole. */
typedef struct {
  size_t n[8], first[8], total;
  unsigned char *x, *y;
  unsigned char ref[8];
} problem;

/* Sizes by rule: 0, tiny, block-sized +-1, or random up to 5 blocks. */
static size_t draw_size(rt_rng *r) {
  switch (rt_next(r) % 5) {
  case 0:
    return 0;
  case 1:
    return 1 + rt_next(r) % 3;
  case 2:
    return B - 1 + rt_next(r) % 3;
  default:
    return rt_next(r) % (5 * B);
  }
}

/* Trap inputs at every rank boundary c: big, 1, -big, 1 around it, so that a reordered sum loses the ones. */
static void traps(problem *p, rcl_dtype dt) {
  size_t es = rcl_dtype_size(dt);
  for (int k = 1; k < nranks; k++) {
    size_t c = p->first[k];
    if (c < 2 || c + 2 > p->total) continue;
    double v[4] = {dt == RCL_F32 ? 0x1p30 : 0x1p60, 1.0, dt == RCL_F32 ? -0x1p30 : -0x1p60, 1.0};
    for (int i = 0; i < 4; i++) {
      float f = (float)v[i];
      memcpy(p->x + (c - 2 + (size_t)i) * es, dt == RCL_F32 ? (void *)&f : (void *)&v[i], es);
    }
  }
}

static void problem_make(problem *p, rcl_dtype dt, rcl_reduce_op op, rcl_reduce_mode mode, uint64_t seed) {
  rt_rng r = {seed};
  p->total = 0;
  for (int k = 0; k < nranks; k++) {
    p->first[k] = p->total;
    p->total += p->n[k] = draw_size(&r);
  }
  size_t bytes = (p->total ? p->total : 1) * rcl_dtype_size(dt);
  p->x = malloc(bytes);
  p->y = malloc(bytes);
  ck_assert(p->x && p->y);
  rt_fill(p->x, dt, p->total, seed % 2 ? "cancel" : "wide", seed);
  rt_fill(p->y, dt, p->total, "uniform", seed + 1);
  traps(p, dt);
  rt_ok(rcl_ref_reduce(p->ref, op, dt, mode, p->total, p->x, p->y));
}

static void problem_free(problem *p) {
  free(p->x);
  free(p->y);
}

/* A context on device i for this rank (spec "i"), made collectively. */
static rcl_context *mpi_ctx(size_t i) {
  char map[64];
  snprintf(map, sizeof map, "rank:%zu", i);
  rcl_context *c = NULL;
  rt_ok(rcl_mpi_context_create(&c, MPI_COMM_WORLD, map, NULL));
  return c;
}

/* Whether every rank's device runs dtype (a collective question, answered the same everywhere). */
static int all_support(rcl_context *c, rcl_dtype dt) {
  int mine = rcl_device_profile_support(rcl_context_profile(c), RCL_FAMILY_REDUCE, dt, NULL) != RCL_SUPPORT_NONE;
  int all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all;
}

/* One case: c's rcl_mpi_reduce over this rank's slice or, with c NULL, the host reference parts joined by
 * rcl_mpi_partial_allreduce; on every rank the bits of rcl_ref_reduce over the whole vector. */
static void run_case(rcl_context *c, rcl_dtype dt, rcl_reduce_op op, rcl_reduce_mode mode, uint64_t seed,
                     const char *where) {
  problem p;
  problem_make(&p, dt, op, mode, seed);
  size_t es = rcl_dtype_size(dt);
  const unsigned char *x = p.x + p.first[rank] * es, *y = p.y + p.first[rank] * es;
  unsigned char got[8] = {0};
  int rc;
  if (c) {
    rcl_reduce_options opts = RCL_REDUCE_OPTIONS_INIT;
    opts.mode = mode;
    rc = rcl_mpi_reduce(got, MPI_COMM_WORLD, c, op, dt, p.n[rank], x, y, &opts);
  } else {
    rcl_partial *part = NULL;
    rc = rcl_mpi_agree(MPI_COMM_WORLD,
                       rcl_ref_reduce_partial(&part, op, dt, mode, p.total, p.first[rank], p.n[rank], x, y), NULL);
    if (!rc) rc = rcl_mpi_partial_allreduce(got, MPI_COMM_WORLD, part);
    rcl_partial_free(part);
  }
  problem_free(&p);
  ck_assert_msg(rc == 0, "%s: %s", where, rcl_error_last());
  rt_assert_bits_eq(got, p.ref, 1, dt, "%s: %s %s %s seed %llu, rank %d of %d (n_local %zu of %zu)", where,
                    rcl_reduce_op_name(op), rcl_dtype_name(dt), rcl_reduce_mode_name(mode), (unsigned long long)seed,
                    rank, nranks, p.n[rank], p.total);
}

/* Every op x mode x dtype on context c (this rank's device), three random size draws each. */
static void reduce_cases(rcl_context *c, const char *where) {
  for (size_t d = 0; d < 2; d++) {
    if (!all_support(c, dtypes[d])) { /* refused clearly on every rank, naming a rank that cannot */
      double x[2] = {1, 2}, got = 0;
      int rc = rcl_mpi_reduce(&got, MPI_COMM_WORLD, c, RCL_OP_SUM, dtypes[d], rank ? 1 : 2, x, NULL, NULL);
      ck_assert_msg(rc == RCL_ERR_UNSUPPORTED && strncmp(rcl_error_last(), "rank ", 5) == 0, "%s: %s gave %d: %s",
                    where, rcl_dtype_name(dtypes[d]), rc, rcl_error_last());
      rt_note("%s: %s refused (a rank's device cannot run it bit-exactly): %s", where, rcl_dtype_name(dtypes[d]),
              rcl_error_last());
      continue;
    }
    for (size_t k = 0; k < 6 * 3; k++)
      run_case(c, dtypes[d], ops[k / 6], modes[k / 3 % 2], 1000 * (k % 3 + 1) + k, where);
  }
}

/* Each device in turn on every rank. */
START_TEST(mpi_reduce_device) {
  rcl_context *c = mpi_ctx((size_t)_i);
  char where[160];
  snprintf(where, sizeof where, "%s (every rank)", rt_device_name((size_t)_i));
  reduce_cases(c, where);
  rcl_context_free(c);
}
END_TEST

/* Mixed drivers: rank r on device (r + shift) mod count, and on the devices that run f64 (so that f64 mixes too). */
START_TEST(mpi_reduce_mixed) {
  size_t nd = rt_ndevices();
  ck_assert(nd > 0);
  for (size_t shift = 0; shift < (nd > 1 ? 3 : 1); shift++) {
    char map[128] = "rank:";
    for (size_t k = 0, items = 0; k < nd; k++) {
      size_t dev = (k + shift) % nd;
      if (shift == 2 && !rt_supported(dev, RCL_FAMILY_REDUCE, RCL_F64)) continue;
      snprintf(map + strlen(map), sizeof map - strlen(map), "%s%zu", items++ ? "," : "", dev);
    }
    if (!strcmp(map, "rank:")) continue;
    rcl_context *c = NULL;
    rt_ok(rcl_mpi_context_create(&c, MPI_COMM_WORLD, map, NULL));
    reduce_cases(c, map);
    rcl_context_free(c);
  }
}
END_TEST

/* The host reference parts joined by rcl_mpi_partial_allreduce, for every op x mode x dtype. */
START_TEST(mpi_partial_allreduce_ref) {
  for (size_t k = 0; k < 2 * 6 * 4; k++)
    run_case(NULL, dtypes[k / 24], ops[k / 8 % 3], modes[k / 4 % 2], 77 * (k % 4 + 1) + k, "reference parts");
}
END_TEST

/* ---- the fast path: flat parts joined by one MPI_Allreduce (src/reduce/reduce_partial_flat.c) ----------- */

/* A special value: +inf, -inf or NaN (which 0, 1, 2) of dt at x[i]. */
static void put_special(unsigned char *x, rcl_dtype dt, size_t i, int which) {
  double v = which == 0 ? INFINITY : which == 1 ? -INFINITY : NAN;
  float f = (float)v;
  memcpy(x + i * rcl_dtype_size(dt), dt == RCL_F32 ? (void *)&f : (void *)&v, rcl_dtype_size(dt));
}

/* Flat forms' sizes (src/mpi/mpi_reduce.c: 8 to 32 by 4, the first try's by the number of ranks, then 32). */
static const int flat_sizes[] = {8, 12, 16, 24, RCL_FLAT_MAX};
#define NSIZES ((int)(sizeof flat_sizes / sizeof flat_sizes[0]))

/* out = the flat parts [i, j) (each of words words) merged with the grouping that `shape` picks (its bits choose
 * the split points, so every grouping of up to 5 parts is reached by some shape). */
static void flat_join(uint64_t *out, uint64_t (*f)[RCL_FLAT_MAX], size_t i, size_t j, unsigned shape, int words) {
  if (j - i == 1) {
    memcpy(out, f[i], (size_t)words * sizeof *out);
    return;
  }
  size_t m = i + 1 + shape % (j - i - 1);
  uint64_t left[RCL_FLAT_MAX];
  flat_join(left, f, i, m, shape / 5, words);
  flat_join(out, f, m, j, shape / 25, words);
  rcl__partial_flat_merge(left, out);
}

/* The flat parts of parts[0 .. K) in words words, merged left to right (every other grouping checked to give the
 * same words); returns the merged part's state. */
static int flat_all(uint64_t *want, rcl_partial *const *parts, size_t K, int words) {
  uint64_t f[6][RCL_FLAT_MAX], g[RCL_FLAT_MAX];
  for (size_t k = 0; k < K; k++) rcl__partial_flatten(f[k], parts[k], words);
  flat_join(want, f, 0, K, 0, words);
  for (unsigned shape = 1; shape < 125; shape++) {
    flat_join(g, f, 0, K, shape, words);
    ck_assert_msg(!memcmp(g, want, (size_t)words * sizeof *g),
                  "K %zu, %d words, shape %u: another grouping gives other "
                  "words",
                  K, words, shape);
  }
  ck_assert_int_eq(rcl__partial_flat_words(want), words);
  return rcl__partial_flat_state(want);
}

/* K parts of one reduction, slices sized by sizes[] (whole blocks or not); +inf in part 0, -inf in part 1 and
 * NaN in part 2 where spec's bit 0, 1, 2 is set (and the part is not empty). In every size, every grouping of the
 * flat parts gives the words of the left-to-right one; at 32 words they are held exactly when the parts fit
 * (exact, or ordered parts whose cut blocks' terms and nodes take at most 30 words in all), and then give
 * rcl_ref_reduce's bits over the whole vector. Smaller: held where 32 are and the data fit (ordered: the
 * parts' words sum to at most words - 2), else deferred where 32 are held, else dead. Returns the states' mask (1 <<
 * state, each size). */
static unsigned flat_case(rcl_dtype dt, rcl_reduce_op op, rcl_reduce_mode mode, const size_t *sizes, size_t K,
                          unsigned spec, const char *fill) {
  size_t total = 0, first[6], es = rcl_dtype_size(dt), budget = 0;
  for (size_t k = 0; k < K; k++) first[k] = total, total += sizes[k];
  unsigned char *x = malloc((total + 1) * es), *y = malloc((total + 1) * es), ref[8], got[8];
  ck_assert(x && y);
  rt_fill(x, dt, total, fill, 11 + K);
  rt_fill(y, dt, total, "uniform", 12 + K);
  for (int r = 0; r < 3; r++)
    if ((spec >> r & 1) && (size_t)r < K && sizes[r]) put_special(x, dt, first[r] + sizes[r] / 2, r);
  rt_ok(rcl_ref_reduce(ref, op, dt, mode, total, x, y));
  rcl_partial *parts[6];
  for (size_t k = 0; k < K; k++) {
    rt_ok(rcl_ref_reduce_partial(&parts[k], op, dt, mode, total, first[k], sizes[k], x + first[k] * es,
                                 y + first[k] * es));
    budget += parts[k]->head.count + parts[k]->nnodes + parts[k]->tail.count; /* ordered: the words it takes */
  }
  int fits = budget <= RCL_FLAT_MAX - RCL_FLAT_HEAD;
  unsigned seen = 0;
  int big = 0;
  for (int w = NSIZES - 1; w >= 0; w--) {
    uint64_t want[RCL_FLAT_MAX];
    int words = flat_sizes[w], st = flat_all(want, parts, K, words);
    char what[160];
    snprintf(what, sizeof what, "K %zu %s %s %s %s spec %u, %d words (state %d, at 32: %d)", K, rcl_reduce_op_name(op),
             rcl_dtype_name(dt), rcl_reduce_mode_name(mode), fill, spec, words, st, big);
    seen |= 1u << st;
    if (w == NSIZES - 1) {
      big = st;
      /* exact parts of wide data may not fit the window: then no expectation, but what is held is right */
      ck_assert_msg(st == (fits ? RCL_FLAT_HELD : RCL_FLAT_DEAD) ||
                        (mode == RCL_REDUCE_EXACT && st == RCL_FLAT_DEAD && strcmp(fill, "uniform")),
                    "%s: fits %d", what, fits);
    } else if (big != RCL_FLAT_HELD) {
      ck_assert_msg(st == RCL_FLAT_DEAD, "%s", what);
    } else {
      ck_assert_msg(st != RCL_FLAT_DEAD, "%s", what);
      if (mode == RCL_REDUCE_ORDERED)
        ck_assert_msg((st == RCL_FLAT_HELD) == (budget <= (size_t)words - RCL_FLAT_HEAD), "%s: budget %zu", what,
                      budget);
    }
    if (st == RCL_FLAT_HELD) {
      ck_assert_int_eq(rcl__partial_flat_result(got, want), 0);
      rt_assert_bits_eq(got, ref, 1, dt, "%s", what);
    } else {
      ck_assert_int_ne(rcl__partial_flat_result(got, want), 0);
    }
  }
  for (size_t k = 0; k < K; k++) rcl_partial_free(parts[k]);
  free(x);
  free(y);
  return seen;
}

/* K = 1..5 parts, whole blocks (fitting), with a cut block of many terms (ordered: not held) or few (the short
 * last block: held, merged into its node), empty parts, the specials; uniform data (exact: the window fits),
 * wide data (exact: it may not) and cancelling data; slices of many nodes (ordered: deferred in 8 words, held
 * in 32). */
START_TEST(flat_parts_groupings) {
  static const size_t shapes[][5] = {
      {B, B, B, B, B}, {2 * B, 0, B, 0, 3},    {B, 4 * B, 0, 2 * B, B - 5},          {B + 7, B, 3, B - 1, 9},
      {1, 0, 0, 0, 0}, {0, B, 0, 0, 1},        {3 * B, 11 * B, 7 * B, 0, 5 * B + 1}, {1, 1, 1, 1, 1},
      {B, 2, 3, 0, 4}, {2 * B + 1, 2, 0, 3, 1}};
  static const char *const fills[] = {"uniform", "wide", "cancel"};
  unsigned seen[2] = {0, 0};
  for (size_t K = 1; K <= 5; K++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (unsigned spec = 0; spec < 8; spec += 3)
        for (size_t k = 0; k < 2 * 3 * 2 * 3; k++)
          seen[k / 6 % 2] |=
              flat_case(dtypes[k % 2], ops[k / 2 % 3], modes[k / 6 % 2], shapes[s], K, spec, fills[k / 12]);
  for (int m = 0; m < 2; m++) /* every state reached in both modes */
    ck_assert_msg(seen[m] == 7, "%s: states seen 0x%x", rcl_reduce_mode_name(modes[m]), seen[m]);
}
END_TEST

/* Exact parts whose windows span chosen widths: each part holds 2^e for the exponents of one row (0: none),
 * so that the union window is about (emax - emin) / 32 digits: held in 8 words, deferred to 16 or 32, or dead
 * (wider than 30 digits); the held results are rcl_ref_reduce's bits. Also a part that cancels another's top
 * digits exactly (the window stays the union). */
START_TEST(flat_exact_windows) {
  static const int exps[][4] = {{0, -60, 0, 1},    {300, -100, 0, 2}, {-700, 200, 0, 0},
                                {900, -900, 5, 0}, {60, 1, -60, 1},   {-1000, 1000, 1, -1000}};
  static const double sign[] = {1, 1, -1, 1};
  unsigned seen = 0;
  for (size_t row = 0; row < sizeof exps / sizeof exps[0]; row++)
    for (size_t K = 1; K <= 4; K++) {
      double x[4], ref;
      size_t total = K;
      rcl_partial *parts[4];
      for (size_t k = 0; k < K; k++) x[k] = exps[row][k] ? sign[k] * ldexp(1.0, exps[row][k]) : 1.0 / 3;
      if (row == 4 && K >= 3) x[2] = -x[0];
      rt_ok(rcl_ref_reduce(&ref, RCL_OP_SUM, RCL_F64, RCL_REDUCE_EXACT, total, x, NULL));
      for (size_t k = 0; k < K; k++)
        rt_ok(rcl_ref_reduce_partial(&parts[k], RCL_OP_SUM, RCL_F64, RCL_REDUCE_EXACT, total, k, 1, x + k, NULL));
      for (int w = 0; w < NSIZES; w++) {
        uint64_t want[RCL_FLAT_MAX];
        double got;
        int st = flat_all(want, parts, K, flat_sizes[w]);
        seen |= 1u << st;
        if (st == RCL_FLAT_HELD) {
          ck_assert_int_eq(rcl__partial_flat_result(&got, want), 0);
          rt_assert_bits_eq(&got, &ref, 1, RCL_F64, "row %zu K %zu, %d words", row, K, flat_sizes[w]);
        }
      }
      for (size_t k = 0; k < K; k++) rcl_partial_free(parts[k]);
    }
  ck_assert_msg(seen == 7, "states seen 0x%x", seen);
}
END_TEST

/* Through MPI: each rank's slice whole blocks (the flat path) or not (the gather path), with +inf on rank 0,
 * -inf on rank 1 and NaN on rank 2 (each when spec's bit says), on every rank rcl_ref_reduce's bits. */
START_TEST(mpi_allreduce_paths) {
  rcl__mpi_flat_gather_max(_i ? 0 : 16);
  for (size_t k = 0; k < 2 * 3 * 2 * 2 * 4 * 2; k++) {
    rcl_dtype dt = dtypes[k % 2];
    rcl_reduce_op op = ops[k / 2 % 3];
    rcl_reduce_mode mode = modes[k / 6 % 2];
    int whole = k / 12 % 2;
    unsigned spec = (unsigned)(k / 24 % 4) * 2 + 1; /* 1, 3, 5, 7: +inf alone, with -inf, with NaN, all three */
    const char *fill = k / 96 ? "wide" : "uniform"; /* exact: the window fits, or may not */
    size_t n[8], first[8], total = 0, es = rcl_dtype_size(dt);
    for (int r = 0; r < nranks; r++) {
      n[r] = r == 3 ? 0 : (size_t)(1 + r % 2) * B + (whole ? 0 : 3 + (size_t)r); /* rank 3: empty */
      first[r] = total;
      total += n[r];
    }
    unsigned char *x = malloc((total + 1) * es), *y = malloc((total + 1) * es), ref[8] = {0}, got[8] = {0};
    ck_assert(x && y);
    rt_fill(x, dt, total, fill, 5 + k);
    rt_fill(y, dt, total, "uniform", 6 + k);
    for (int r = 0; r < 3 && r < nranks; r++)
      if ((spec >> r & 1) && n[r]) put_special(x, dt, first[r] + n[r] / 2, r);
    rt_ok(rcl_ref_reduce(ref, op, dt, mode, total, x, y));
    rcl_partial *part = NULL;
    int rc = rcl_mpi_agree(MPI_COMM_WORLD,
                           rcl_ref_reduce_partial(&part, op, dt, mode, total, first[rank], n[rank],
                                                  x + first[rank] * es, y + first[rank] * es),
                           NULL);
    if (!rc) rc = rcl_mpi_partial_allreduce(got, MPI_COMM_WORLD, part);
    rcl_partial_free(part);
    free(x);
    free(y);
    ck_assert_msg(rc == 0, "%s", rcl_error_last());
    rt_assert_bits_eq(got, ref, 1, dt, "%s %s %s, %s slices, %s data, specials %u, rank %d of %d",
                      rcl_reduce_op_name(op), rcl_dtype_name(dt), rcl_reduce_mode_name(mode),
                      whole ? "whole-block" : "cut", fill, spec, rank, nranks);
  }
}
END_TEST

/* Through MPI, the flat forms' sizes: every rank's slice sized so that the first try (8 words up to 6 ranks) is
 * held, deferred (the second try, 32 words, holds it) or dead (the gather path), each checked on the flat parts
 * themselves (every rank builds them all; up to 5 ranks, where every grouping is tried), with trap values (big, 1,
 * -big, 1) around every rank boundary and an empty rank; on every rank rcl_ref_reduce's bits. */
typedef struct {
  rcl_dtype dt;
  rcl_reduce_op op;
  rcl_reduce_mode mode;
  size_t per_rank;    /* elements per rank (rank 2: none) */
  int lo_exp, hi_exp; /* exact: 2^lo_exp first, 2^hi_exp last (0: uniform data there) */
  int want_multi;     /* the first try's state with several ranks (ordered on one rank: one node, held) */
} tier_case;

static void tier_data(unsigned char *x, const tier_case *c, size_t total, const size_t *first, uint64_t seed) {
  size_t es = rcl_dtype_size(c->dt);
  rt_fill(x, c->dt, total, "uniform", seed);
  for (int k = 1; k < nranks && c->mode == RCL_REDUCE_ORDERED; k++) {
    double big = c->dt == RCL_F32 ? 0x1p30 : 0x1p60, v[4] = {big, 1.0, -big, 1.0};
    for (int i = 0; i < 4 && first[k] >= 2 && first[k] + 2 <= total; i++) {
      float f = (float)v[i];
      memcpy(x + (first[k] - 2 + (size_t)i) * es, c->dt == RCL_F32 ? (void *)&f : (void *)&v[i], es);
    }
  }
  double lo = ldexp(1.0, c->lo_exp), hi = ldexp(1.0, c->hi_exp);
  if (c->lo_exp && total) memcpy(x, &lo, es);
  if (c->hi_exp && total) memcpy(x + (total - 1) * es, &hi, es);
}

START_TEST(mpi_allreduce_tiers) {
  rcl__mpi_flat_gather_max(_i ? 0 : 16);
  static const tier_case cases[] = {{RCL_F64, RCL_OP_SUM, RCL_REDUCE_ORDERED, B, 0, 0, RCL_FLAT_HELD},
                                    {RCL_F64, RCL_OP_SUM, RCL_REDUCE_ORDERED, 1, 0, 0, RCL_FLAT_HELD},
                                    {RCL_F32, RCL_OP_NRM2, RCL_REDUCE_ORDERED, 2, 0, 0, RCL_FLAT_HELD},
                                    {RCL_F64, RCL_OP_DOT, RCL_REDUCE_ORDERED, 7, 0, 0, RCL_FLAT_DEFERRED},
                                    {RCL_F32, RCL_OP_DOT, RCL_REDUCE_ORDERED, 21 * B, 0, 0, RCL_FLAT_DEFERRED},
                                    {RCL_F64, RCL_OP_NRM2, RCL_REDUCE_ORDERED, 21 * B, 0, 0, RCL_FLAT_DEFERRED},
                                    {RCL_F64, RCL_OP_SUM, RCL_REDUCE_ORDERED, B + 1000, 0, 0, RCL_FLAT_DEAD},
                                    {RCL_F64, RCL_OP_SUM, RCL_REDUCE_EXACT, 1, 0, 0, RCL_FLAT_HELD},
                                    {RCL_F64, RCL_OP_SUM, RCL_REDUCE_EXACT, 3, 0, 0, RCL_FLAT_HELD},
                                    {RCL_F64, RCL_OP_SUM, RCL_REDUCE_EXACT, 3, -700, 200, RCL_FLAT_DEFERRED},
                                    {RCL_F64, RCL_OP_SUM, RCL_REDUCE_EXACT, 3, -1000, 1000, RCL_FLAT_DEAD},
                                    {RCL_F32, RCL_OP_DOT, RCL_REDUCE_EXACT, 5, 0, 0, RCL_FLAT_HELD}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const tier_case *c = &cases[i];
    size_t n[8], first[8], total = 0, es = rcl_dtype_size(c->dt);
    for (int r = 0; r < nranks; r++) first[r] = total, total += n[r] = r == 2 ? 0 : c->per_rank;
    unsigned char *x = malloc((total + 1) * es), *y = malloc((total + 1) * es), ref[8] = {0}, got[8] = {0};
    ck_assert(x && y);
    tier_data(x, c, total, first, 40 + i);
    rt_fill(y, c->dt, total, "uniform", 50 + i);
    rt_ok(rcl_ref_reduce(ref, c->op, c->dt, c->mode, total, x, y));
    rcl_partial *parts[8];
    uint64_t flat[RCL_FLAT_MAX];
    for (int r = 0; r < nranks; r++)
      rt_ok(rcl_ref_reduce_partial(&parts[r], c->op, c->dt, c->mode, total, first[r], n[r], x + first[r] * es,
                                   y + first[r] * es));
    int st = nranks <= 5 ? flat_all(flat, parts, (size_t)nranks, flat_sizes[0]) : -1;
    int rc = rcl_mpi_partial_allreduce(got, MPI_COMM_WORLD, parts[rank]);
    for (int r = 0; r < nranks; r++) rcl_partial_free(parts[r]);
    free(x);
    free(y);
    int want = nranks > 1 || c->mode == RCL_REDUCE_EXACT ? c->want_multi : RCL_FLAT_HELD;
    ck_assert_msg(nranks > 5 || st == want, "case %zu: state %d in 8 words, expected %d", i, st, want);
    ck_assert_msg(rc == 0, "case %zu: %s", i, rcl_error_last());
    rt_assert_bits_eq(got, ref, 1, c->dt, "case %zu (%s %s %s), rank %d of %d", i, rcl_reduce_op_name(c->op),
                      rcl_dtype_name(c->dt), rcl_reduce_mode_name(c->mode), rank, nranks);
  }
}
END_TEST

/* Parts that do not join (a gap between rank 0's and rank 1's slices): every rank fails with the same status
 * and the gather path's message, on the flat path too. */
START_TEST(mpi_allreduce_gap) {
  rcl__mpi_flat_gather_max(_i ? 0 : 16);
  double x[B];
  for (size_t i = 0; i < B; i++) x[i] = 1;
  size_t first = (size_t)rank * 2 * B + (rank ? B : 0), total = (size_t)nranks * 2 * B + B;
  rcl_partial *part = NULL;
  rt_ok(rcl_ref_reduce_partial(&part, RCL_OP_SUM, RCL_F64, RCL_REDUCE_EXACT, total, first, B, x, NULL));
  double got = 0;
  int rc = rcl_mpi_partial_allreduce(&got, MPI_COMM_WORLD, part);
  rcl_partial_free(part);
  ck_assert_msg(rc == RCL_ERR_INVALID_ARG && strstr(rcl_error_last(), "rank "), "rank %d: %d %s", rank, rc,
                rcl_error_last());
}
END_TEST

/* One rank's bad argument fails every rank, naming the lowest failing rank; the others are unaffected by it. */
START_TEST(mpi_errors_agree) {
  int bad = nranks - 1; /* the last rank passes NULL data for one element */
  rcl_context *c = mpi_ctx(0);
  float x[4] = {1, 2, 3, 4}, got = 0;
  int rc = rcl_mpi_reduce(&got, MPI_COMM_WORLD, c, RCL_OP_SUM, RCL_F32, rank == bad ? 1 : 4, rank == bad ? NULL : x,
                          NULL, NULL);
  char msg1[512];
  snprintf(msg1, sizeof msg1, "%s", rcl_error_last());
  /* Two failing ranks with different statuses: the lower one's status and message reach every rank. */
  int st = rank == 0 ? 0 : rank == 1 ? RCL_ERR_NOT_FOUND : RCL_ERR_OPENCL;
  char why[64];
  snprintf(why, sizeof why, "made-up failure of rank %d", rank);
  int rc2 = rcl_mpi_agree(MPI_COMM_WORLD, st, why);
  char msg2[512];
  snprintf(msg2, sizeof msg2, "%s", rcl_error_last());
  /* A device map item that matches nothing on the last rank. */
  rcl_context *c2 = NULL;
  char map[64];
  snprintf(map, sizeof map, "rank:%s", nranks == 1 ? "no-such-device" : "0,0,0,0,0,0,0,0");
  if (nranks > 1) map[5 + 2 * (nranks - 1)] = '9'; /* the last rank's item: no device 9 here */
  int rc3 = rcl_mpi_context_create(&c2, MPI_COMM_WORLD, map, NULL);
  char msg3[512];
  snprintf(msg3, sizeof msg3, "%s", rcl_error_last());
  int rc4 = rcl_mpi_agree(MPI_COMM_WORLD, 0, NULL);
  rcl_context_free(c);
  char want[32];
  snprintf(want, sizeof want, "rank %d: ", bad);
  ck_assert_msg(rc == RCL_ERR_INVALID_ARG && strstr(msg1, want), "rank %d: %d %s", rank, rc, msg1);
  ck_assert_msg(nranks == 1 ? rc2 == 0 : rc2 == RCL_ERR_NOT_FOUND && strstr(msg2, "rank 1: made-up failure of rank 1"),
                "rank %d: %d %s", rank, rc2, msg2);
  ck_assert_msg(rc3 == RCL_ERR_NOT_FOUND && strstr(msg3, want) && c2 == NULL, "rank %d: %d %s", rank, rc3, msg3);
  ck_assert_int_eq(rc4, 0);
}
END_TEST

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (nranks > 8) {
    fprintf(stderr, "test_mpi_reduce: at most 8 ranks (got %d)\n", nranks);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  Suite *s = suite_create("mpi_reduce");
  rt_add_device_presence(s);
  RT_ADD_DEVICE_CASE(s, mpi_reduce_device);
  TCase *tc = tcase_create("mpi_reduce_mixed");
  tcase_add_test(tc, mpi_reduce_mixed);
  tcase_add_test(tc, mpi_partial_allreduce_ref);
  tcase_add_test(tc, mpi_errors_agree);
  tcase_add_test(tc, flat_parts_groupings);
  tcase_add_test(tc, flat_exact_windows);
  tcase_add_loop_test(tc, mpi_allreduce_paths, 0, 2);
  tcase_add_loop_test(tc, mpi_allreduce_tiers, 0, 2);
  tcase_add_loop_test(tc, mpi_allreduce_gap, 0, 2);
  suite_add_tcase(s, tc);
  int rc = rt_run(s);
  /* Every rank's verdict: the test fails when any rank failed. */
  int all = 0;
  MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return all;
}
