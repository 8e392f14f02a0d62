/* Partial reductions (docs/contracts.md §10): the parts of any slicing, merged in any grouping (and through
 * the byte form), give exactly rcl_ref_reduce over the whole vector; each merge equals the reference part
 * of its slice byte for byte; mismatched merges and corrupt bytes are refused. Device parts equal the
 * reference parts on every device and launch size. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "testlib.h"

static const rcl_dtype dtypes[] = {RCL_F32, RCL_F64};
static const rcl_reduce_op ops[] = {RCL_OP_SUM, RCL_OP_DOT, RCL_OP_NRM2};
static const rcl_reduce_mode modes[] = {RCL_REDUCE_ORDERED, RCL_REDUCE_EXACT};
static const char *kinds[] = {"cancel", "wide", "special", "uniform"};
#define B 2048u

/* Sizes around block and power-of-two boundaries, then a few large ones. */
static const size_t sizes[] = {0,         1,         63,         64,        2047,        2048,
                               2049,      3 * B + 5, 2 * B - 1,  2 * B + 1, 4 * B - 1,   4 * B + 1,
                               8 * B - 1, 8 * B + 1, 32 * B + 1, 100003,    128 * B - 1, 300007};
#define NSIZES (sizeof sizes / sizeof sizes[0])

typedef struct {
  void *x, *y;
  size_t n;
  rcl_dtype dt;
} vec;

static vec vec_make(rcl_dtype dt, size_t n, const char *kind, uint64_t seed) {
  vec v = {malloc((n ? n : 1) * rcl_dtype_size(dt)), malloc((n ? n : 1) * rcl_dtype_size(dt)), n, dt};
  ck_assert(v.x && v.y);
  rt_fill(v.x, dt, n, kind, seed);
  rt_fill(v.y, dt, n, kind, seed + 7777);
  return v;
}

static void vec_free(vec *v) {
  free(v->x);
  free(v->y);
}

static const char *at(const vec *v, const void *base, size_t i) {
  return (const char *)base + i * rcl_dtype_size(v->dt);
}

/* A slicing: K slices, cuts[0] = 0 <= cuts[1] <= ... <= cuts[K] = total. Each inner cut is drawn by one of
 * several rules: anywhere, inside a block, on a block boundary, a power-of-two block boundary +-1, equal
 * to the previous (an empty slice), one or a few elements after it (1-element, sub-block slices). */
static size_t slicing(size_t *cuts, size_t total, rt_rng *r) {
  size_t K = 1 + rt_next(r) % 7, nb = total / B + 1;
  cuts[0] = 0;
  for (size_t k = 1; k < K; k++) {
    size_t prev = cuts[k - 1], c;
    switch (rt_next(r) % 7) {
    case 0:
      c = total ? rt_next(r) % (total + 1) : 0;
      break;
    case 1:
      c = (rt_next(r) % nb) * B + 1 + rt_next(r) % (B - 2);
      break;
    case 2:
      c = (rt_next(r) % nb) * B;
      break;
    case 3:
      c = ((size_t)1 << (rt_next(r) % 8)) * B + (size_t)(rt_next(r) % 3) - 1;
      break;
    case 4:
      c = prev;
      break;
    case 5:
      c = prev + 1;
      break;
    default:
      c = prev + rt_next(r) % B;
      break;
    }
    cuts[k] = c > total ? total : c;
  }
  cuts[K] = total;
  for (size_t i = 1; i < K; i++) /* sort the inner cuts */
    for (size_t j = i; j > 1 && cuts[j - 1] > cuts[j]; j--) {
      size_t t = cuts[j];
      cuts[j] = cuts[j - 1];
      cuts[j - 1] = t;
    }
  return K;
}

/* The packed bytes of a part (malloc'd). */
static unsigned char *packed(const rcl_partial *p, size_t *len) {
  rt_ok(rcl_partial_pack(NULL, 0, len, p));
  unsigned char *b = malloc(*len);
  ck_assert_ptr_nonnull(b);
  rt_ok(rcl_partial_pack(b, *len, len, p));
  return b;
}

/* Asserts that a and b have the same byte form. */
static void assert_same_part(const rcl_partial *a, const rcl_partial *b, const char *what) {
  size_t la, lb;
  unsigned char *pa = packed(a, &la), *pb = packed(b, &lb);
  size_t first = 0;
  while (first < la && first < lb && pa[first] == pb[first]) first++;
  ck_assert_msg(la == lb && first == la, "%s: parts differ (%zu vs %zu bytes, first difference at byte %zu)", what, la,
                lb, first);
  free(pa);
  free(pb);
}

static rcl_partial *ref_part(const vec *v, rcl_reduce_op op, rcl_reduce_mode mode, size_t a, size_t b) {
  rcl_partial *p;
  rt_ok(rcl_ref_reduce_partial(&p, op, v->dt, mode, v->n, a, b - a, at(v, v->x, a), at(v, v->y, a)));
  return p;
}

static rcl_partial *merge2(rcl_partial *a, rcl_partial *b) {
  rcl_partial *pair[2] = {a, b}, *m;
  rt_ok(rcl_partial_merge(&m, pair, 2));
  return m;
}

static rcl_partial *repack(const rcl_partial *p) {
  size_t len;
  unsigned char *b = packed(p, &len);
  rcl_partial *q;
  rt_ok(rcl_partial_unpack(&q, b, len));
  free(b);
  return q;
}

/* Merges parts[0..K) (consumed) by grouping g: 0 all at once, 1 left fold, 2 right fold, 3 random adjacent
 * pairs (each merge checked against the reference part of its slice), 4 through the byte form. */
static rcl_partial *merge_by(rcl_partial **parts, const size_t *cuts, size_t K, int g, rt_rng *r, const vec *v,
                             rcl_reduce_op op, rcl_reduce_mode mode) {
  rcl_partial *m = NULL;
  if (g == 0 || g == 4) {
    for (size_t i = 0; g == 4 && i < K; i++) {
      rcl_partial *q = repack(parts[i]);
      assert_same_part(q, parts[i], "unpack(pack(part))");
      rcl_partial_free(parts[i]);
      parts[i] = q;
    }
    rt_ok(rcl_partial_merge(&m, parts, K));
    for (size_t i = 0; i < K; i++) rcl_partial_free(parts[i]);
    return m;
  }
  size_t lo[8], hi[8];
  for (size_t i = 0; i < K; i++) lo[i] = cuts[i], hi[i] = cuts[i + 1];
  while (K > 1) {
    size_t i = g == 1 ? 0 : g == 2 ? K - 2 : rt_next(r) % (K - 1);
    m = merge2(parts[i], parts[i + 1]);
    rcl_partial_free(parts[i]);
    rcl_partial_free(parts[i + 1]);
    hi[i] = hi[i + 1];
    if (g == 3) {
      rcl_partial *want = ref_part(v, op, mode, lo[i], hi[i]);
      assert_same_part(m, want, "a merge against the reference part of its slice");
      rcl_partial_free(want);
    }
    parts[i] = m;
    for (size_t j = i + 1; j + 1 < K; j++) parts[j] = parts[j + 1], lo[j] = lo[j + 1], hi[j] = hi[j + 1];
    K--;
  }
  return parts[0];
}

/* One input: several slicings, every grouping; the result equals rcl_ref_reduce over the whole. */
static void check_input(const vec *v, rcl_reduce_op op, rcl_reduce_mode mode, rt_rng *r, const char *kind) {
  unsigned char want[8], got[8];
  rt_ok(rcl_ref_reduce(want, op, v->dt, mode, v->n, v->x, v->y));
  rcl_partial *whole = ref_part(v, op, mode, 0, v->n);
  rt_ok(rcl_partial_result(got, whole));
  rt_assert_bits_eq(got, want, 1, v->dt, "the whole part");
  for (int g = 0; g < 5; g++) {
    size_t cuts[9], K = slicing(cuts, v->n, r);
    rcl_partial *parts[8];
    for (size_t i = 0; i < K; i++) parts[i] = ref_part(v, op, mode, cuts[i], cuts[i + 1]);
    rcl_partial *m = merge_by(parts, cuts, K, g, r, v, op, mode);
    rt_ok(rcl_partial_result(got, m));
    rt_assert_bits_eq(got, want, 1, v->dt, "%s %s %s %s n=%zu, %zu slices (cut at %zu, %zu, ...), grouping %d",
                      rcl_reduce_op_name(op), rcl_dtype_name(v->dt), rcl_reduce_mode_name(mode), kind, v->n, K, cuts[1],
                      cuts[K > 1 ? 2 : 1], g);
    assert_same_part(m, whole, "the merged part against the whole reference part");
    rcl_partial_free(m);
  }
  rcl_partial_free(whole);
}

START_TEST(host_any_slicing_any_grouping) {
  rt_rng r = {17};
  for (size_t s = 0; s < NSIZES; s++)
    for (size_t d = 0; d < 2; d++)
      for (size_t k = 0; k < 4; k++) {
        if (sizes[s] > 50000 && k > 1) continue; /* the large sizes: the two trap kinds */
        vec v = vec_make(dtypes[d], sizes[s], kinds[k], 100 + s);
        for (size_t o = 0; o < 3; o++)
          for (size_t m = 0; m < 2; m++) check_input(&v, ops[o], modes[m], &r, kinds[k]);
        vec_free(&v);
      }
}
END_TEST

/* Every cut inside a block, adversarially: each slice boundary at every residue class of the lanes. */
START_TEST(host_every_cut_in_a_block) {
  for (size_t d = 0; d < 2; d++) {
    vec v = vec_make(dtypes[d], 5 * B + 77, "cancel", 5);
    for (size_t c = 1; c < 4 * B; c += 61) {
      size_t cuts[4] = {0, c, c + B + 3 < v.n ? c + B + 3 : v.n, v.n};
      for (size_t o = 0; o < 3; o++)
        for (size_t m = 0; m < 2; m++) {
          unsigned char want[8], got[8];
          rt_ok(rcl_ref_reduce(want, ops[o], v.dt, modes[m], v.n, v.x, v.y));
          rcl_partial *parts[3];
          for (size_t i = 0; i < 3; i++) parts[i] = ref_part(&v, ops[o], modes[m], cuts[i], cuts[i + 1]);
          rcl_partial *mg = merge2(parts[1], parts[2]), *pair[2] = {parts[0], mg}, *all;
          rt_ok(rcl_partial_merge(&all, pair, 2));
          rt_ok(rcl_partial_result(got, all));
          rt_assert_bits_eq(got, want, 1, v.dt, "cut at %zu, %s %s", c, rcl_reduce_op_name(ops[o]),
                            rcl_reduce_mode_name(modes[m]));
          for (size_t i = 0; i < 3; i++) rcl_partial_free(parts[i]);
          rcl_partial_free(mg);
          rcl_partial_free(all);
        }
    }
    vec_free(&v);
  }
}
END_TEST

START_TEST(host_refusals) {
  vec v = vec_make(RCL_F64, 3 * B, "wide", 3);
  rcl_partial *a = ref_part(&v, RCL_OP_SUM, RCL_REDUCE_ORDERED, 0, 100);
  rcl_partial *b = ref_part(&v, RCL_OP_SUM, RCL_REDUCE_ORDERED, 100, 5000);
  rcl_partial *c = ref_part(&v, RCL_OP_SUM, RCL_REDUCE_ORDERED, 5000, 3 * B);
  rcl_partial *d = ref_part(&v, RCL_OP_DOT, RCL_REDUCE_ORDERED, 100, 5000);
  rcl_partial *e = ref_part(&v, RCL_OP_SUM, RCL_REDUCE_EXACT, 100, 5000), *m = NULL;
  rcl_partial *gap[2] = {a, c}, *rev[2] = {b, a}, *mix[2] = {a, d}, *mode[2] = {a, e}, *none[1] = {NULL};
  double r;
  rt_fails(rcl_partial_merge(&m, gap, 2), RCL_ERR_INVALID_ARG,
           "parts[1] starts at element 5000 but parts[0] ends at 100");
  rt_fails(rcl_partial_merge(&m, rev, 2), RCL_ERR_INVALID_ARG, "consecutive");
  rt_fails(rcl_partial_merge(&m, mix, 2), RCL_ERR_INVALID_ARG, "parts[1] is dot f64 ordered");
  rt_fails(rcl_partial_merge(&m, mode, 2), RCL_ERR_INVALID_ARG, "exact");
  rt_fails(rcl_partial_merge(&m, none, 1), RCL_ERR_INVALID_ARG, "parts[0] is NULL");
  rt_fails(rcl_partial_merge(&m, gap, 0), RCL_ERR_INVALID_ARG, "no parts");
  ck_assert_ptr_null(m);
  rt_fails(rcl_partial_result(&r, b), RCL_ERR_INVALID_ARG, "covers elements [100, 5000) of [0, 6144)");
  rcl_partial *p = NULL;
  rt_fails(rcl_ref_reduce_partial(&p, RCL_OP_SUM, RCL_F64, RCL_REDUCE_ORDERED, 10, 8, 3, v.x, NULL),
           RCL_ERR_INVALID_ARG, "slice [8, 8 + 3) is not inside [0, total = 10)");
  rt_fails(rcl_ref_reduce_partial(&p, RCL_OP_DOT, RCL_F64, RCL_REDUCE_ORDERED, 10, 0, 3, v.x, NULL),
           RCL_ERR_INVALID_ARG, "y is NULL");
  rt_fails(rcl_ref_reduce_partial(&p, RCL_OP_SUM, RCL_F64, (rcl_reduce_mode)5, 10, 0, 3, v.x, NULL),
           RCL_ERR_INVALID_ARG, "mode 5");
  ck_assert_ptr_null(p);
  size_t total, first, n;
  rcl_reduce_op op;
  rt_ok(rcl_partial_info(d, &op, NULL, NULL, &total, &first, &n));
  ck_assert(op == RCL_OP_DOT && total == 3 * B && first == 100 && n == 4900);
  unsigned char small[8];
  size_t len;
  rt_fails(rcl_partial_pack(small, sizeof small, &len, b), RCL_ERR_INVALID_ARG, "cap is 8");
  rcl_partial *all[3] = {a, b, c};
  rt_ok(rcl_partial_merge(&m, all, 3));
  rt_ok(rcl_partial_result(&r, m));
  rcl_partial_free(m);
  for (rcl_partial **q = (rcl_partial *[]){a, b, c, d, e}, **end = q + 5; q < end; q++) rcl_partial_free(*q);
  vec_free(&v);
}
END_TEST

/* Every truncation and corruptions of each structural field are refused with RCL_ERR_PARSE naming it. */
static void corrupt_case(const rcl_partial *p, size_t at, uint64_t val, size_t nbytes, const char *needle) {
  size_t len;
  unsigned char *b = packed(p, &len);
  rcl_partial *q = (rcl_partial *)1;
  for (size_t i = 0; i < nbytes; i++) b[at + i] = (unsigned char)(val >> (8 * i));
  rt_fails(rcl_partial_unpack(&q, b, len), RCL_ERR_PARSE, needle);
  ck_assert_ptr_null(q);
  free(b);
}

START_TEST(host_unpack_refuses_bad_bytes) {
  vec v = vec_make(RCL_F32, 9 * B, "special", 4);
  rcl_partial *o = ref_part(&v, RCL_OP_DOT, RCL_REDUCE_ORDERED, 1000, 7 * B + 5);
  rcl_partial *x = ref_part(&v, RCL_OP_SUM, RCL_REDUCE_EXACT, 1000, 7 * B + 5);
  const rcl_partial *both[2] = {o, x};
  for (int w = 0; w < 2; w++) {
    size_t len;
    unsigned char *b = packed(both[w], &len);
    for (size_t cut = 0; cut < len; cut += (cut < 200 ? 1 : 97)) {
      rcl_partial *q = NULL;
      rt_fails(rcl_partial_unpack(&q, b, cut), RCL_ERR_PARSE, "truncated");
    }
    unsigned char *longer = malloc(len + 1);
    memcpy(longer, b, len);
    longer[len] = 0;
    rcl_partial *q = NULL;
    rt_fails(rcl_partial_unpack(&q, longer, len + 1), RCL_ERR_PARSE, "1 bytes after");
    free(longer);
    free(b);
    /* the header: magic, version, op, dtype, mode, reserved (u32), total, first, n (u64): 52 bytes */
    corrupt_case(both[w], 0, 'X', 1, "field magic");
    corrupt_case(both[w], 8, 2, 1, "field version");
    corrupt_case(both[w], 12, 9, 1, "bad header: op 9");
    corrupt_case(both[w], 16, 3, 1, "dtype 3");
    corrupt_case(both[w], 20, 2, 1, "mode 2");
    corrupt_case(both[w], 24, 1, 1, "field reserved");
    corrupt_case(both[w], 29, 1, 1, "of 256"); /* total 256: the slice is outside */
    corrupt_case(both[w], 43, 0xff, 1, "bad header");
  }
  /* ordered: head start and count, 1048 f32 terms, the node count, nodes (u32 level, u64 index, u64 value) */
  size_t nodes_at = 52 + 16 + 1048 * 4;
  corrupt_case(o, 52, 1, 1, "field head fragment is 769, expected 1000");
  corrupt_case(o, 68, 0x7fc00001u, 4, "term 0x7fc00001 is not a canonical f32 value");
  corrupt_case(o, nodes_at, 9, 1, "field node count");
  corrupt_case(o, nodes_at + 8, 7, 1, "field node level");
  corrupt_case(o, nodes_at + 12, 9, 1, "field node index");
  corrupt_case(o, nodes_at + 20 + 4, 1, 1, "node value");
  /* exact: digit count, flags, digits */
  corrupt_case(x, 52, 3, 1, "field digit count");
  corrupt_case(x, 56, 0x10, 1, "flags 0x10");
  corrupt_case(x, 60 + 4, 1, 1, "digit 0");
  rcl_partial_free(o);
  rcl_partial_free(x);
  vec_free(&v);
}
END_TEST

/* ---- device parts --------------------------------------------------------------------------------- */

/* The device's part of [a, b) under opts equals the reference part byte for byte; returns it. */
static rcl_partial *device_part(size_t dev, const vec *v, rcl_reduce_op op, const rcl_reduce_options *opts, size_t a,
                                size_t b, const char *what) {
  rcl_partial *got, *want = ref_part(v, op, opts->mode, a, b);
  char msg[256];
  rt_ok(rcl_reduce_partial(&got, rt_ctx(dev), op, v->dt, v->n, a, b - a, at(v, v->x, a), at(v, v->y, a), opts));
  snprintf(msg, sizeof msg, "%s: %s %s %s slice [%zu, %zu) of %zu, local %zu, groups %zu, %s on %s", what,
           rcl_reduce_op_name(op), rcl_dtype_name(v->dt), rcl_reduce_mode_name(opts->mode), a, b, v->n,
           opts->local_size, opts->num_groups, rcl_reduce_variant_name(opts->variant), rt_device_name(dev));
  assert_same_part(got, want, msg);
  rcl_partial_free(want);
  return got;
}

/* Random slicings: every device part equals the reference part; merged, the device parts give
 * rcl_reduce's bits over the whole vector on this device and the reference's. */
START_TEST(device_parts_match_reference) {
  static const size_t dsizes[] = {0, 1, 2049, 3 * B + 5, 8 * B + 1, 100003};
  rt_rng r = {23 + _i};
  for (size_t d = 0; d < 2; d++) {
    if (!rt_supported(_i, RCL_FAMILY_REDUCE, dtypes[d])) {
      rcl_partial *p = NULL;
      double one = 1;
      rt_fails(rcl_reduce_partial(&p, rt_ctx(_i), RCL_OP_SUM, dtypes[d], 1, 0, 1, &one, NULL, NULL),
               RCL_ERR_UNSUPPORTED, "fp64");
      continue;
    }
    for (size_t s = 0; s < sizeof dsizes / sizeof dsizes[0]; s++)
      for (size_t k = 0; k < 2; k++) {
        vec v = vec_make(dtypes[d], dsizes[s], kinds[k + (s % 2)], 300 + s);
        for (size_t o = 0; o < 3; o++)
          for (size_t m = 0; m < 2; m++) {
            rcl_reduce_options opts = RCL_REDUCE_OPTIONS_INIT;
            opts.mode = modes[m];
            size_t cuts[9], K = slicing(cuts, v.n, &r);
            rcl_partial *parts[8], *all;
            for (size_t i = 0; i < K; i++) parts[i] = device_part(_i, &v, ops[o], &opts, cuts[i], cuts[i + 1], "slice");
            rt_ok(rcl_partial_merge(&all, parts, K));
            unsigned char got[8], want[8], whole[8];
            rt_ok(rcl_partial_result(got, all));
            rt_ok(rcl_ref_reduce(want, ops[o], v.dt, modes[m], v.n, v.x, v.y));
            rt_ok(rcl_reduce(whole, rt_ctx(_i), ops[o], v.dt, v.n, v.x, v.y, &opts));
            rt_assert_bits_eq(got, want, 1, v.dt, "merged device parts, %s %s %s n=%zu, %zu slices on %s",
                              rcl_reduce_op_name(ops[o]), rcl_dtype_name(v.dt), rcl_reduce_mode_name(modes[m]), v.n, K,
                              rt_device_name(_i));
            rt_assert_bits_eq(got, whole, 1, v.dt, "against rcl_reduce on %s", rt_device_name(_i));
            for (size_t i = 0; i < K; i++) rcl_partial_free(parts[i]);
            rcl_partial_free(all);
          }
        vec_free(&v);
      }
  }
}
END_TEST

/* Every work-group size the device allows from 1 to 256, several grids and the task variant: the same
 * part. The slices' complete blocks give a head, a middle and a tail launch for most grids. */
START_TEST(device_launch_sweep) {
  static const size_t groups[] = {0, 1, 3, 64};
  for (size_t d = 0; d < 2; d++) {
    if (!rt_supported(_i, RCL_FAMILY_REDUCE, dtypes[d])) continue;
    vec v = vec_make(dtypes[d], 37 * B + 11, "cancel", 41);
    size_t slices[3][2] = {{1000, 33 * B + 17}, {3 * B, v.n}, {0, v.n}};
    for (size_t o = 0; o < 3; o++)
      for (size_t m = 0; m < 2; m++)
        for (size_t w = 1; w <= 256; w *= 2)
          for (size_t g = 0; g < 5; g++) {
            rcl_reduce_options opts = RCL_REDUCE_OPTIONS_INIT;
            opts.mode = modes[m];
            opts.local_size = w;
            opts.num_groups = g < 4 ? groups[g] : 0;
            opts.variant = g < 4 ? RCL_REDUCE_VARIANT_NDRANGE : RCL_REDUCE_VARIANT_TASK;
            if (g == 4 && w > 1) continue; /* the task ignores the launch shape */
            rcl_partial *p;
            size_t sl = (w + g) % 3;
            int rc = rcl_reduce_partial(&p, rt_ctx(_i), ops[o], v.dt, v.n, slices[sl][0], slices[sl][1] - slices[sl][0],
                                        at(&v, v.x, slices[sl][0]), at(&v, v.y, slices[sl][0]), &opts);
            /* above the device's limit, or too few groups for llvmpipe's loop limit: refused as rcl_reduce does */
            if (rc == RCL_ERR_INVALID_ARG &&
                (strstr(rcl_error_last(), "exceeds") || strstr(rcl_error_last(), "too few")))
              continue;
            rt_ok(rc);
            rcl_partial_free(p);
            rcl_partial_free(device_part(_i, &v, ops[o], &opts, slices[sl][0], slices[sl][1], "sweep"));
          }
    vec_free(&v);
  }
}
END_TEST

/* On device buffers with offsets, an out-of-order wait list and an event; empty slices and total 0. */
START_TEST(device_enqueue_offsets) {
  rcl_context *ctx = rt_ctx(_i);
  vec v = vec_make(RCL_F32, 5 * B + 3, "special", 8);
  size_t es = 4, off = 17, a = 700, n = 3 * B + 1;
  unsigned char *xs = calloc(v.n + off, es), *ys = calloc(v.n + off, es);
  memcpy(xs + off * es, v.x, v.n * es);
  memcpy(ys + off * es, v.y, v.n * es);
  cl_int err;
  cl_context cc = NULL;
  ck_assert(clGetCommandQueueInfo(rcl_context_cl_queue(ctx), CL_QUEUE_CONTEXT, sizeof cc, &cc, NULL) == CL_SUCCESS);
  cl_mem bx = clCreateBuffer(cc, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (v.n + off) * es, xs, &err);
  cl_mem by = clCreateBuffer(cc, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (v.n + off) * es, ys, &err);
  for (size_t m = 0; m < 2; m++) {
    rcl_reduce_options opts = RCL_REDUCE_OPTIONS_INIT;
    opts.mode = modes[m];
    rcl_partial *got, *want = ref_part(&v, RCL_OP_DOT, modes[m], a, a + n);
    cl_event ev = NULL;
    rcl_queue_args q = RCL_QUEUE_ARGS_INIT;
    q.event = &ev;
    rt_ok(rcl_reduce_partial_enqueue(&got, ctx, RCL_OP_DOT, RCL_F32, v.n, a, n, bx, off + a, by, off + a, &opts, &q));
    ck_assert_ptr_nonnull(ev);
    ck_assert(clWaitForEvents(1, &ev) == CL_SUCCESS);
    clReleaseEvent(ev);
    assert_same_part(got, want, "enqueue form with offsets");
    rcl_partial_free(got);
    rcl_partial_free(want);
    rt_ok(rcl_reduce_partial_enqueue(&got, ctx, RCL_OP_SUM, RCL_F32, v.n, v.n, 0, bx, 0, NULL, 0, &opts, NULL));
    want = ref_part(&v, RCL_OP_SUM, modes[m], v.n, v.n);
    assert_same_part(got, want, "an empty slice at the end");
    rcl_partial_free(got);
    rcl_partial_free(want);
    float zero = 1;
    rt_ok(rcl_reduce_partial(&got, ctx, RCL_OP_NRM2, RCL_F32, 0, 0, 0, NULL, NULL, &opts));
    rt_ok(rcl_partial_result(&zero, got));
    ck_assert(zero == 0 && !signbit(zero));
    rcl_partial_free(got);
  }
  rcl_partial *p = (rcl_partial *)1;
  rt_fails(rcl_reduce_partial_enqueue(&p, ctx, RCL_OP_SUM, RCL_F32, v.n, 10, v.n, bx, 0, NULL, 0, NULL, NULL),
           RCL_ERR_INVALID_ARG, "not inside");
  ck_assert_ptr_null(p);
  rt_fails(rcl_reduce_partial_enqueue(&p, ctx, RCL_OP_SUM, RCL_F32, v.n, 0, v.n, bx, off + 1, NULL, 0, NULL, NULL),
           RCL_ERR_INVALID_ARG, "x");
  clReleaseMemObject(bx);
  clReleaseMemObject(by);
  free(xs);
  free(ys);
  vec_free(&v);
}
END_TEST

int main(void) {
  Suite *s = suite_create("partial");
  TCase *host = tcase_create("host");
  tcase_set_timeout(host, 600);
  tcase_add_test(host, host_any_slicing_any_grouping);
  tcase_add_test(host, host_every_cut_in_a_block);
  tcase_add_test(host, host_refusals);
  tcase_add_test(host, host_unpack_refuses_bad_bytes);
  suite_add_tcase(s, host);
  rt_add_device_presence(s);
  RT_ADD_DEVICE_CASE(s, device_parts_match_reference);
  RT_ADD_DEVICE_CASE(s, device_launch_sweep);
  RT_ADD_DEVICE_CASE(s, device_enqueue_offsets);
  return rt_run(s);
}
