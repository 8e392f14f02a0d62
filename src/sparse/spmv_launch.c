/* The SpMV kernels' launch layer (cl/spmv.cl): the names of contracts and variants, option validation and
 * the plan of a call, the layouts some variants derive from the matrix (long-row lists, adaptive row
 * blocks, sliced ELL, exact segments), and the launch sequence with explicit parameters. Launch parameters
 * change speed only; every accepted configuration gives the bits of the host reference
 * (src/sparse/spmv_ref.c). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sparse/spmv_internal.h"

/* Keep in sync with cl/rcl_exact.cl: superaccumulator digits and chunks of a product. */
#define XD_F32 19u
#define XD_F64 133u
#define XCH_F32 3u
#define XCH_F64 5u
/* A private accumulator digit takes < 2^29 chunks: exact rows and segments stay below 2^28 entries. */
#define EXACT_MAX_ROW ((size_t)1 << 28)
#define DEFAULT_SEGMENT 4096u

/* ---- names --------------------------------------------------------------------------------------- */

static const char *const contract_names[] = {"ordered", "exact"};
static const char *const variant_names[] = {"auto", "scalar", "vector", "adaptive", "sell", "task"};

const char *rcl_spmv_contract_name(rcl_spmv_contract c) { return (unsigned)c <= 1u ? contract_names[c] : "unknown"; }

int rcl_spmv_contract_parse(rcl_spmv_contract *out, const char *name) {
  if (!out || !name) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv_contract_parse: NULL argument");
  for (int i = 0; i < 2; i++)
    if (!strcasecmp(name, contract_names[i])) {
      *out = (rcl_spmv_contract)i;
      return 0;
    }
  return rcl__fail(RCL_ERR_INVALID_ARG, "unknown SpMV contract \"%s\" (expected ordered or exact)", name);
}

const char *rcl_spmv_variant_name(rcl_spmv_variant v) {
  return (unsigned)v < RCL_SPMV_VARIANT_COUNT ? variant_names[v] : "unknown";
}

int rcl_spmv_variant_parse(rcl_spmv_variant *out, const char *name) {
  if (!out || !name) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv_variant_parse: NULL argument");
  for (int i = 0; i < RCL_SPMV_VARIANT_COUNT; i++)
    if (!strcasecmp(name, variant_names[i])) {
      *out = (rcl_spmv_variant)i;
      return 0;
    }
  return rcl__fail(RCL_ERR_INVALID_ARG,
                   "unknown SpMV variant \"%s\" (expected auto, scalar, vector, adaptive, sell or task)", name);
}

/* ---- kernels (cached per matrix: created once, arguments set under the matrix lock) ---------------- */

static int get_kernel(kentry **out, rcl_spmv_matrix *M, int exact, const char *name) {
  for (kentry *e = M->kernels; e; e = e->next)
    if (e->exact == exact && !strcmp(e->name, name)) {
      *out = e;
      return 0;
    }
  /* Exactly the define strings of the tuner descriptors and bundle programs (tune_registry.c): a
   * bundle's program is found by its full build options. */
  const char *defs = rcl__spmv_defines(exact, M->rp64);
  kentry *e = rcl__calloc(1, sizeof *e);
  if (!e) return RCL_ERR_OUT_OF_MEMORY;
  int rc = rcl__kernel_get(&e->k, M->ctx, "spmv.cl", M->dtype, defs, name);
  if (!rc) rc = rcl__kernel_wg_max(&e->wg_max, e->k, M->ctx, name);
  if (rc) {
    if (e->k) clReleaseKernel(e->k);
    rcl__free(e);
    return rc;
  }
  e->exact = exact;
  e->name = name; /* a string literal */
  e->next = M->kernels;
  M->kernels = e;
  *out = e;
  return 0;
}

/* ---- plan: resolved options and the loop-limit arithmetic ------------------------------------------ */

typedef struct {
  int exact;
  rcl_spmv_variant variant;
  size_t W;      /* work-group size of the variant kernel */
  size_t WL;     /* work-group size of the long-row kernels */
  size_t L;      /* vector lanes */
  size_t B;      /* staged products per group (adaptive, long ordered) */
  size_t C;      /* sell slice */
  size_t T;      /* long-row threshold */
  size_t window; /* ordered: entries per launch of a long row; exact: entries per segment */
  size_t budget; /* loop iterations one work-item may take per launch (SIZE_MAX: no limit) */
  size_t ce, F;  /* loop iterations per entry and per row of a row sum */
  size_t xd;     /* superaccumulator digits (exact) */
} plan;

/* Rows a work-item may sum in one launch: cost F + len * ce <= budget. */
static size_t cap_of(const plan *p, size_t fixed, size_t per) {
  if (p->budget == SIZE_MAX) return SIZE_MAX;
  return p->budget > fixed + per ? (p->budget - fixed) / per : 1;
}

static int bad_opt(const rcl_spmv_matrix *M, const char *field, size_t v, const char *why) {
  return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv_options.%s = %zu %s (device %s)", field, v, why,
                   M->ctx->profile.device_name);
}

const char *rcl__spmv_defines(int exact, int rp64) {
  static const char *const defs[2][2] = {{"", "-DRCL_SPMV_RP64=1"},
                                         {"-DRCL_SPMV_EXACT=1", "-DRCL_SPMV_EXACT=1 -DRCL_SPMV_RP64=1"}};
  return defs[exact != 0][rp64 != 0];
}

/* AUTO without a tuned or platform choice: on CPUs one work-item per row (barriers are costly there); on
 * GPUs and accelerators sliced ELL for regular rows (coalesced, no local memory) and CSR-adaptive when row
 * lengths vary a lot. */
static rcl_spmv_variant auto_variant(const rcl_spmv_matrix *M) {
  if (M->ctx->profile.type & CL_DEVICE_TYPE_CPU) return RCL_SPMV_SCALAR;
  return rcl__spmv_regular(M) ? RCL_SPMV_SELL : RCL_SPMV_ADAPTIVE;
}

/* A soft value (tuned, cached or platform, RCL_SP_P_*) for a field the caller left at 0, or 0. */
static size_t soft_of(const size_t *soft, int i, size_t given) { return soft && !given ? soft[i] : 0; }

/* The options' version, contract and variant, then the plan's variant, loop budget and per-row loop costs. */
static int plan_variant(plan *p, rcl_spmv_matrix *M, const rcl_spmv_options *o, const size_t *soft) {
  if (o->version != RCL_SPMV_OPTIONS_VERSION)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv_options.version is %u, expected %u (use RCL_SPMV_OPTIONS_INIT)",
                     o->version, RCL_SPMV_OPTIONS_VERSION);
  if (o->contract != RCL_SPMV_ORDERED && o->contract != RCL_SPMV_EXACT)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv_options.contract %d is neither ordered nor exact",
                     (int)o->contract);
  if ((unsigned)o->variant >= RCL_SPMV_VARIANT_COUNT)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv_options.variant %d is not an rcl_spmv_variant", (int)o->variant);
  memset(p, 0, sizeof *p);
  p->exact = o->contract == RCL_SPMV_EXACT;
  size_t sv = soft_of(soft, RCL_SP_P_VARIANT, o->variant != RCL_SPMV_AUTO);
  p->variant = o->variant != RCL_SPMV_AUTO                            ? o->variant
               : sv >= RCL_SPMV_SCALAR && sv < RCL_SPMV_VARIANT_COUNT ? (rcl_spmv_variant)sv
                                                                      : auto_variant(M);
  p->budget = rcl__loop_budget(M->ctx);
  p->xd = M->dtype == RCL_F64 ? XD_F64 : XD_F32;
  size_t xch = M->dtype == RCL_F64 ? XCH_F64 : XCH_F32;
  /* Loop iterations of one row sum: per entry the sum loop (and the chunk loop of the exact add), per
   * row the accumulator's window clearing, carry, complement, search and sticky loops. */
  p->ce = p->exact ? 1 + xch : 1;
  p->F = p->exact ? 6 * p->xd + 64 : 64;
  return 0;
}

/* The kernels (variant and long-row) and, within their work-group limits, the work-groups W and WL. */
static int plan_local(plan *p, rcl_spmv_matrix *M, const rcl_spmv_options *o, const size_t *soft, kentry **kv,
                      kentry **kl1, kentry **kl2) {
  if (o->local_size && !rcl__is_pow2(o->local_size))
    return bad_opt(M, "local_size", o->local_size, "is not a power of two");
  static const char *const vk[] = {
      NULL, "rcl_spmv_scalar", "rcl_spmv_vector", "rcl_spmv_adaptive", "rcl_spmv_sell", "rcl_spmv_task"};
  int rc = get_kernel(kv, M, p->exact, vk[p->variant]);
  if (!rc) rc = get_kernel(kl1, M, p->exact, p->exact ? "rcl_spmv_long_exact_seg" : "rcl_spmv_long_ordered");
  if (!rc && p->exact) rc = get_kernel(kl2, M, 1, "rcl_spmv_long_exact_sum");
  if (rc) return rc;
  size_t kmax = (*kv)->wg_max, lmax = (*kl1)->wg_max;
  if (p->exact && (*kl2)->wg_max < lmax) lmax = (*kl2)->wg_max;
  if (p->variant == RCL_SPMV_TASK) kmax = 1;
  if (o->local_size && p->variant != RCL_SPMV_TASK && o->local_size > kmax)
    return bad_opt(M, "local_size", o->local_size, "exceeds the variant kernel's work-group limit");
  if (o->local_size && o->local_size > lmax)
    return bad_opt(M, "local_size", o->local_size, "exceeds the long-row kernels' work-group limit");
  size_t sl = soft_of(soft, RCL_SP_P_LOCAL, o->local_size), wl = sl ? sl : 256;
  p->W = o->local_size ? o->local_size : rcl__floor_pow2(kmax < wl ? kmax : wl);
  if (p->variant == RCL_SPMV_TASK) p->W = 1;
  p->WL = o->local_size ? o->local_size : rcl__floor_pow2(lmax < wl ? lmax : wl);
  return 0;
}

/* The block B of staged products, within local memory (and, for adaptive, the loop budget). */
static int plan_block(plan *p, rcl_spmv_matrix *M, const rcl_spmv_options *o, const size_t *soft) {
  size_t es = rcl_dtype_size(M->dtype);
  cl_ulong lmem = M->ctx->profile.local_mem_size;
  /* Staged products per group: adaptive blocks and the ordered long-row path. */
  size_t stage = p->exact ? 2 * es : es;
  size_t WB = p->variant == RCL_SPMV_ADAPTIVE ? p->W : p->WL;
  if (o->block_nnz) {
    if (o->block_nnz % WB != 0 || o->block_nnz < WB)
      return bad_opt(M, "block_nnz", o->block_nnz, "is not a positive multiple of local_size");
    if ((cl_ulong)o->block_nnz * stage + 64 * 8 > lmem)
      return bad_opt(M, "block_nnz", o->block_nnz, "does not fit in local memory");
    p->B = o->block_nnz;
  } else if (soft_of(soft, RCL_SP_P_BLOCK, o->block_nnz)) { /* a power of two >= WB: a multiple of it */
    p->B = rcl__floor_pow2(soft[RCL_SP_P_BLOCK]);
    if (p->B < WB) p->B = WB;
    while (p->B > WB && (cl_ulong)p->B * stage + 64 * 8 > lmem) p->B /= 2;
  } else {
    p->B = 8 * WB;
    while (p->B > WB && (cl_ulong)p->B * stage + 64 * 8 > lmem / 2) p->B /= 2;
  }
  /* Adaptive: a work-item loads B/W products, then sums a row of up to B entries. */
  if (p->variant == RCL_SPMV_ADAPTIVE && p->budget != SIZE_MAX) {
    size_t cost = p->B / p->W + p->B * p->ce + p->F;
    if (cost > p->budget) {
      if (o->block_nnz) return bad_opt(M, "block_nnz", o->block_nnz, "would loop past the driver's iteration limit");
      while (p->B > p->W && p->B / p->W + p->B * p->ce + p->F > p->budget) p->B /= 2;
    }
  }
  return 0;
}

/* The vector variant's lanes L and the sliced-ELL variant's slice height C. */
static int plan_lanes_slice(plan *p, rcl_spmv_matrix *M, const rcl_spmv_options *o, const size_t *soft) {
  /* Vector lanes. */
  if (p->variant == RCL_SPMV_VECTOR) {
    if (o->lanes) {
      if (!rcl__is_pow2(o->lanes)) return bad_opt(M, "lanes", o->lanes, "is not a power of two");
      if (o->lanes > p->W) return bad_opt(M, "lanes", o->lanes, "exceeds local_size");
      p->L = o->lanes;
    } else if (soft_of(soft, RCL_SP_P_LANES, o->lanes)) {
      p->L = rcl__floor_pow2(soft[RCL_SP_P_LANES]);
      if (p->L > p->W) p->L = p->W;
    } else {
      size_t mean = M->nrows ? ceil_div(M->nnz, M->nrows) : 1;
      p->L = 1;
      while (p->L < mean && p->L < 32 && p->L < p->W) p->L *= 2;
    }
  }
  if (p->variant == RCL_SPMV_SELL) {
    if (o->slice && (!rcl__is_pow2(o->slice) || o->slice > 4096))
      return bad_opt(M, "slice", o->slice, "is not a power of two up to 4096");
    size_t sc = soft_of(soft, RCL_SP_P_SLICE, o->slice);
    p->C = o->slice ? o->slice : sc ? rcl__floor_pow2(sc < 4096 ? sc : 4096) : 32;
  }
  return 0;
}

/* The row length T beyond which rows take the long-row path, within what one work-item may sum. */
static int plan_long_row(plan *p, rcl_spmv_matrix *M, const rcl_spmv_options *o, const size_t *soft) {
  /* The longest row one work-item of the variant may sum in one launch. */
  size_t cap;
  switch (p->variant) {
  case RCL_SPMV_VECTOR:
    if (p->budget == SIZE_MAX)
      cap = SIZE_MAX;
    else {
      size_t fixed = p->F + 32 + p->L * p->ce;
      cap = p->budget > fixed ? (p->budget - fixed) * p->L / (p->L * p->ce + 1) : 1;
    }
    break;
  case RCL_SPMV_ADAPTIVE:
    cap = p->B;
    break;
  default:
    cap = cap_of(p, p->F, p->ce);
  }
  if (p->exact && cap > EXACT_MAX_ROW) cap = EXACT_MAX_ROW;
  if (o->long_row) {
    if (o->long_row > cap && p->variant != RCL_SPMV_ADAPTIVE)
      return rcl__fail(RCL_ERR_INVALID_ARG,
                       "rcl_spmv_options.long_row = %zu: the %s variant can sum at most %zu entries of a row in one "
                       "work-item on %s (a driver loop limit, or 2^28 for exact)",
                       o->long_row, rcl_spmv_variant_name(p->variant), cap, M->ctx->profile.device_name);
    p->T = o->long_row < cap ? o->long_row : cap;
  } else {
    size_t st = soft_of(soft, RCL_SP_P_LONG_ROW, o->long_row);
    p->T = st && st < cap ? st : cap;
  }
  return 0;
}

/* Long-row path: ordered windows (entries per launch) or exact segments (entries per work-item). */
static int plan_window(plan *p, rcl_spmv_matrix *M, const rcl_spmv_options *o) {
  size_t wmax;
  if (!p->exact) {
    /* work-item 0 per entry: one add, at most one load step and one chunk step (B, W >= 1) */
    wmax = p->budget == SIZE_MAX ? SIZE_MAX : cap_of(p, 128 + p->B / p->WL, 3);
  } else {
    wmax = cap_of(p, p->F, p->ce);
    if (wmax > EXACT_MAX_ROW) wmax = EXACT_MAX_ROW;
  }
  if (o->window) {
    if (o->window > wmax)
      return rcl__fail(RCL_ERR_INVALID_ARG,
                       "rcl_spmv_options.window = %zu exceeds what one work-item may loop over in one launch on %s "
                       "(at most %zu)",
                       o->window, M->ctx->profile.device_name, wmax);
    p->window = o->window;
  } else {
    p->window = p->exact ? (wmax < DEFAULT_SEGMENT ? wmax : DEFAULT_SEGMENT) : wmax;
  }
  return 0;
}

/* Validates the options and fills the plan (kernels are looked up to learn their work-group limits).
 * Fields the caller left at 0 take the soft values (or NULL) where they have one, clamped to what the
 * device and matrix allow (never refused), else the built-in defaults. */
static int make_plan(plan *p, rcl_spmv_matrix *M, const rcl_spmv_options *o, const size_t *soft, kentry **kv,
                     kentry **kl1, kentry **kl2) {
  static const rcl_spmv_options defaults = RCL_SPMV_OPTIONS_INIT;
  if (!o) o = &defaults;
  int rc = plan_variant(p, M, o, soft);
  if (!rc) rc = plan_local(p, M, o, soft, kv, kl1, kl2);
  if (!rc) rc = plan_block(p, M, o, soft);
  if (!rc) rc = plan_lanes_slice(p, M, o, soft);
  if (!rc) rc = plan_long_row(p, M, o, soft);
  if (!rc) rc = plan_window(p, M, o);
  return rc;
}

/* ---- layouts ------------------------------------------------------------------------------------------ */

enum { LAY_LONG, LAY_SEGS, LAY_BLOCKS, LAY_SELL, LAY_STEPS };

static layout *find_layout(rcl_spmv_matrix *M, int kind, size_t a, size_t b, size_t c) {
  for (layout *l = M->layouts; l; l = l->next)
    if (l->kind == kind && l->key[0] == a && l->key[1] == b && l->key[2] == c) return l;
  return NULL;
}

static layout *new_layout(rcl_spmv_matrix *M, int kind, size_t a, size_t b, size_t c) {
  layout *l = rcl__calloc(1, sizeof *l);
  if (!l) return NULL;
  l->kind = kind;
  l->key[0] = a;
  l->key[1] = b;
  l->key[2] = c;
  l->next = M->layouts;
  M->layouts = l;
  return l;
}

static size_t row_len(const rcl_spmv_matrix *M, size_t r) { return (size_t)(M->hrp[r + 1] - M->hrp[r]); }

/* Rows with more than T entries. */
static int long_rows(layout **out, rcl_spmv_matrix *M, size_t T) {
  if ((*out = find_layout(M, LAY_LONG, T, 0, 0)) != NULL) return 0;
  size_t n = 0, longest = 0;
  for (size_t r = 0; r < M->nrows; r++)
    if (row_len(M, r) > T) {
      n++;
      if (row_len(M, r) > longest) longest = row_len(M, r);
    }
  uint32_t *rows = n ? rcl__malloc(n * sizeof *rows) : NULL;
  if (n && !rows) return RCL_ERR_OUT_OF_MEMORY;
  for (size_t r = 0, i = 0; r < M->nrows && n; r++)
    if (row_len(M, r) > T) rows[i++] = (uint32_t)r;
  int rc = 0;
  cl_mem m = NULL;
  if (n) rc = rcl__buffer_create(&m, M->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * 4, rows, "long-row list");
  rcl__free(rows);
  if (rc) return rc;
  layout *l = new_layout(M, LAY_LONG, T, 0, 0);
  if (!l) {
    if (m) clReleaseMemObject(m);
    return RCL_ERR_OUT_OF_MEMORY;
  }
  l->mem[0] = m;
  l->count = n;
  l->extra = longest;
  *out = l;
  return 0;
}

/* Exact segments of the long rows: [k0, k1) pairs of at most S entries, and each row's first segment. */
static int segments(layout **out, rcl_spmv_matrix *M, size_t T, size_t S) {
  if ((*out = find_layout(M, LAY_SEGS, T, S, 0)) != NULL) return 0;
  layout *lr;
  int rc = long_rows(&lr, M, T);
  if (rc) return rc;
  size_t nseg = 0, most = 0;
  for (size_t r = 0; r < M->nrows; r++)
    if (row_len(M, r) > T) {
      size_t s = ceil_div(row_len(M, r), S);
      nseg += s;
      if (s > most) most = s;
    }
  if (nseg > UINT32_MAX) return rcl__fail(RCL_ERR_UNSUPPORTED, "%zu exact segments exceed 2^32", nseg);
  uint64_t *seg = rcl__malloc((nseg ? nseg : 1) * 2 * sizeof *seg);
  uint32_t *first = rcl__malloc((lr->count + 1) * sizeof *first);
  if (!seg || !first) rc = RCL_ERR_OUT_OF_MEMORY;
  size_t q = 0, j = 0;
  for (size_t r = 0; !rc && r < M->nrows; r++) {
    if (row_len(M, r) <= T) continue;
    first[j++] = (uint32_t)q;
    for (uint64_t k = M->hrp[r]; k < M->hrp[r + 1]; k += S) {
      seg[2 * q] = k;
      seg[2 * q + 1] = M->hrp[r + 1] - k > S ? k + S : M->hrp[r + 1];
      q++;
    }
  }
  if (!rc) first[j] = (uint32_t)q;
  cl_mem ms = NULL, mf = NULL;
  cl_mem_flags f = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
  if (!rc && nseg) rc = rcl__buffer_create(&ms, M->ctx, f, nseg * 16, seg, "exact segments");
  if (!rc && nseg) rc = rcl__buffer_create(&mf, M->ctx, f, (lr->count + 1) * 4, first, "exact segment index");
  rcl__free(seg);
  rcl__free(first);
  layout *l = rc ? NULL : new_layout(M, LAY_SEGS, T, S, 0);
  if (!l) {
    if (ms) clReleaseMemObject(ms);
    if (mf) clReleaseMemObject(mf);
    return rc ? rc : RCL_ERR_OUT_OF_MEMORY;
  }
  l->mem[0] = ms;
  l->mem[1] = mf;
  l->count = nseg;
  l->extra = most;
  *out = l;
  return 0;
}

/* Adaptive row blocks: consecutive rows, at most W rows and B entries each, long rows left out. */
static int row_blocks(layout **out, rcl_spmv_matrix *M, size_t B, size_t W, size_t T) {
  if ((*out = find_layout(M, LAY_BLOCKS, B, W, T)) != NULL) return 0;
  size_t cap = 1024, n = 0;
  uint32_t *blk = rcl__malloc(cap * 2 * sizeof *blk);
  if (!blk) return RCL_ERR_OUT_OF_MEMORY;
  size_t r = 0;
  int rc = 0;
  while (r < M->nrows && !rc) {
    if (row_len(M, r) > T) {
      r++;
      continue;
    }
    size_t start = r, nz = 0;
    while (r < M->nrows && r - start < W && row_len(M, r) <= T && nz + row_len(M, r) <= B) nz += row_len(M, r++);
    if (n == cap) {
      uint32_t *nb = rcl__realloc(blk, cap * 4 * sizeof *blk);
      if (!nb) {
        rc = RCL_ERR_OUT_OF_MEMORY;
        break;
      }
      blk = nb;
      cap *= 2;
    }
    blk[2 * n] = (uint32_t)start;
    blk[2 * n + 1] = (uint32_t)r;
    n++;
  }
  cl_mem m = NULL;
  if (!rc && n) rc = rcl__buffer_create(&m, M->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * 8, blk, "row blocks");
  rcl__free(blk);
  layout *l = rc ? NULL : new_layout(M, LAY_BLOCKS, B, W, T);
  if (!l) {
    if (m) clReleaseMemObject(m);
    return rc ? rc : RCL_ERR_OUT_OF_MEMORY;
  }
  l->mem[0] = m;
  l->count = n;
  *out = l;
  return 0;
}

/* Vector variant: the steps of each group of G rows (the longest row that is not long, in chunks of L). */
static int vector_steps(layout **out, rcl_spmv_matrix *M, size_t G, size_t L, size_t T) {
  if ((*out = find_layout(M, LAY_STEPS, G, L, T)) != NULL) return 0;
  size_t ng = ceil_div(M->nrows, G);
  uint32_t *st = rcl__malloc((ng ? ng : 1) * sizeof *st);
  if (!st) return RCL_ERR_OUT_OF_MEMORY;
  int rc = 0;
  for (size_t g = 0; g < ng && !rc; g++) {
    size_t most = 0;
    for (size_t r = g * G; r < M->nrows && r < (g + 1) * G; r++)
      if (row_len(M, r) <= T && row_len(M, r) > most) most = row_len(M, r);
    if (ceil_div(most, L) > UINT32_MAX)
      rc = rcl__fail(RCL_ERR_UNSUPPORTED, "vector variant: a row needs over 2^32 steps");
    else
      st[g] = (uint32_t)ceil_div(most, L);
  }
  cl_mem m = NULL;
  if (!rc)
    rc = rcl__buffer_create(&m, M->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (ng ? ng : 1) * 4, st, "vector steps");
  rcl__free(st);
  layout *l = rc ? NULL : new_layout(M, LAY_STEPS, G, L, T);
  if (!l) {
    if (m) clReleaseMemObject(m);
    return rc ? rc : RCL_ERR_OUT_OF_MEMORY;
  }
  l->mem[0] = m;
  l->count = ng;
  *out = l;
  return 0;
}

/* Sliced ELL copy: slices of C rows padded to their longest (non-long) row, column-major. Built from the
 * device arrays (read back once). */
static int sell_layout(layout **out, rcl_spmv_matrix *M, size_t C, size_t T) {
  if ((*out = find_layout(M, LAY_SELL, C, T, 0)) != NULL) return 0;
  size_t ns = ceil_div(M->nrows, C), total = 0, es = rcl_dtype_size(M->dtype);
  uint64_t *off = rcl__malloc((ns ? ns : 1) * sizeof *off);
  if (!off) return RCL_ERR_OUT_OF_MEMORY;
  int rc = 0;
  for (size_t s = 0; s < ns && !rc; s++) {
    size_t w = 0;
    for (size_t r = s * C; r < M->nrows && r < (s + 1) * C; r++)
      if (row_len(M, r) <= T && row_len(M, r) > w) w = row_len(M, r);
    off[s] = total;
    if (w > (SIZE_MAX - total) / C)
      rc = rcl__fail(RCL_ERR_OVERFLOW, "sliced ELL layout size overflows");
    else
      total += w * C;
  }
  uint32_t *hci = NULL, *scol = NULL;
  unsigned char *hva = NULL, *sval = NULL;
  if (!rc && (total > SIZE_MAX / 8 || M->nnz > SIZE_MAX / 8)) rc = rcl__fail(RCL_ERR_OVERFLOW, "sliced ELL too large");
  if (!rc) {
    hci = rcl__malloc((M->nnz ? M->nnz : 1) * 4);
    hva = hci ? rcl__malloc((M->nnz ? M->nnz : 1) * es) : NULL;
    scol = hva ? rcl__calloc(total ? total : 1, 4) : NULL;
    sval = scol ? rcl__calloc(total ? total : 1, es) : NULL;
    if (!sval) rc = RCL_ERR_OUT_OF_MEMORY;
  }
  if (!rc && M->nnz) {
    cl_command_queue q = M->ctx->queue;
    if (!q)
      rc = rcl__fail(RCL_ERR_INVALID_ARG, "the sell variant builds its layout on the context's queue, and this "
                                          "wrapped context has none");
    cl_int err = rc ? CL_SUCCESS : clEnqueueReadBuffer(q, M->ci, CL_TRUE, 0, M->nnz * 4, hci, 0, NULL, NULL);
    if (!rc && err == CL_SUCCESS) err = clEnqueueReadBuffer(q, M->va, CL_TRUE, 0, M->nnz * es, hva, 0, NULL, NULL);
    if (!rc && err != CL_SUCCESS) rc = rcl__fail_cl(err, "reading the matrix back to build the sliced ELL layout");
  }
  for (size_t r = 0; !rc && r < M->nrows; r++) {
    if (row_len(M, r) > T) continue;
    size_t base = off[r / C] + r % C;
    for (size_t j = 0; j < row_len(M, r); j++) {
      size_t k = (size_t)M->hrp[r] + j, p = base + j * C;
      scol[p] = hci[k];
      memcpy(sval + p * es, hva + k * es, es);
    }
  }
  cl_mem mo = NULL, mc = NULL, mv = NULL;
  cl_mem_flags f = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
  if (!rc) rc = rcl__buffer_create(&mo, M->ctx, f, (ns ? ns : 1) * 8, off, "sliced ELL offsets");
  if (!rc) rc = rcl__buffer_create(&mc, M->ctx, f, (total ? total : 1) * 4, scol, "sliced ELL columns");
  if (!rc) rc = rcl__buffer_create(&mv, M->ctx, f, (total ? total : 1) * es, sval, "sliced ELL values");
  rcl__free(off);
  rcl__free(hci);
  rcl__free(hva);
  rcl__free(scol);
  rcl__free(sval);
  layout *l = rc ? NULL : new_layout(M, LAY_SELL, C, T, 0);
  if (!l) {
    if (mo) clReleaseMemObject(mo);
    if (mc) clReleaseMemObject(mc);
    if (mv) clReleaseMemObject(mv);
    return rc ? rc : RCL_ERR_OUT_OF_MEMORY;
  }
  l->mem[0] = mo;
  l->mem[1] = mc;
  l->mem[2] = mv;
  l->count = ns;
  *out = l;
  return 0;
}

/* ---- launching ----------------------------------------------------------------------------------------- */

typedef struct {
  rcl_spmv_matrix *M;
  cl_mem y, x;
  cl_ulong yoff, xoff;
  const void *alpha, *beta;
  cl_uint bz, nrows;
  cl_ulong T;
} call;

/* The 12 arguments every variant kernel starts with (SPMV_ARGS in cl/spmv.cl). */
static int common_args(cl_kernel k, const char *name, const call *c) {
  size_t es = rcl_dtype_size(c->M->dtype);
  return rcl__set_args(k, name, 12, sizeof(cl_mem), &c->M->rp, sizeof(cl_mem), &c->M->ci, sizeof(cl_mem), &c->M->va,
                       sizeof(cl_mem), &c->x, sizeof c->xoff, &c->xoff, sizeof(cl_mem), &c->y, sizeof c->yoff, &c->yoff,
                       es, c->alpha, es, c->beta, sizeof c->bz, &c->bz, sizeof c->nrows, &c->nrows, sizeof c->T, &c->T);
}

static int set_arg(cl_kernel k, const char *name, cl_uint i, size_t size, const void *v) {
  cl_int err = clSetKernelArg(k, i, size, v);
  return err == CL_SUCCESS ? 0 : rcl__fail_cl(err, "clSetKernelArg(%s, arg %u, %zu bytes)", name, i, size);
}

static int launch_variant(rcl_chain *ch, const plan *p, const call *c, kentry *kv) {
  rcl_spmv_matrix *M = c->M;
  cl_kernel k = kv->k;
  const char *name = kv->name;
  size_t es = rcl_dtype_size(M->dtype), W = p->W;
  int rc = common_args(k, name, c);
  if (rc) return rc;
  switch (p->variant) {
  case RCL_SPMV_SCALAR:
    return rcl__chain_kernel(ch, k, name, ceil_div(M->nrows, W) * W, W);
  case RCL_SPMV_VECTOR: {
    cl_uint L = (cl_uint)p->L;
    layout *l;
    if ((rc = vector_steps(&l, M, W / p->L, p->L, p->T)) != 0) return rc;
    if ((rc = set_arg(k, name, 12, sizeof L, &L)) || (rc = set_arg(k, name, 13, sizeof(cl_mem), &l->mem[0])) ||
        (rc = set_arg(k, name, 14, W * es, NULL)) || (rc = set_arg(k, name, 15, p->exact ? W * es : es, NULL)))
      return rc;
    return rcl__chain_kernel(ch, k, name, ceil_div(M->nrows, W / p->L) * W, W);
  }
  case RCL_SPMV_ADAPTIVE: {
    layout *l;
    if ((rc = row_blocks(&l, M, p->B, W, p->T)) != 0) return rc;
    if (l->count == 0) return 0;
    if ((rc = set_arg(k, name, 12, sizeof(cl_mem), &l->mem[0])) || (rc = set_arg(k, name, 13, p->B * es, NULL)) ||
        (rc = set_arg(k, name, 14, p->exact ? p->B * es : es, NULL)))
      return rc;
    return rcl__chain_kernel(ch, k, name, l->count * W, W);
  }
  case RCL_SPMV_SELL: {
    layout *l;
    if ((rc = sell_layout(&l, M, p->C, p->T)) != 0) return rc;
    cl_uint C = (cl_uint)p->C;
    if ((rc = set_arg(k, name, 12, sizeof(cl_mem), &l->mem[0])) ||
        (rc = set_arg(k, name, 13, sizeof(cl_mem), &l->mem[1])) ||
        (rc = set_arg(k, name, 14, sizeof(cl_mem), &l->mem[2])) || (rc = set_arg(k, name, 15, sizeof C, &C)))
      return rc;
    return rcl__chain_kernel(ch, k, name, ceil_div(M->nrows, W) * W, W);
  }
  case RCL_SPMV_TASK: {
    /* One work-item: rows are cut into launches whose loop iterations stay within the budget. */
    size_t r0 = 0;
    while (r0 < M->nrows && !rc) {
      size_t r1 = r0, cost = 0;
      while (r1 < M->nrows) {
        size_t len = row_len(M, r1), add = 2 + (len > p->T ? 0 : p->F + len * p->ce);
        if (r1 > r0 && p->budget != SIZE_MAX && cost + add > p->budget) break;
        cost += add;
        r1++;
      }
      cl_uint a = (cl_uint)r0, b = (cl_uint)r1;
      if (!(rc = set_arg(k, name, 12, sizeof a, &a)) && !(rc = set_arg(k, name, 13, sizeof b, &b)))
        rc = rcl__chain_kernel(ch, k, name, 1, 1);
      r0 = r1;
    }
    return rc;
  }
  default:
    return rcl__fail(RCL_ERR_INTERNAL, "spmv: variant %d has no launcher", (int)p->variant);
  }
}

/* Long rows: ordered windows carried in a partial-sum buffer, or exact segments then per-row sums. */
static int launch_long(rcl_chain *ch, const plan *p, const call *c, kentry *k1, kentry *k2, cl_mem *tmp) {
  rcl_spmv_matrix *M = c->M;
  layout *lr;
  int rc = long_rows(&lr, M, p->T);
  if (rc || lr->count == 0) return rc;
  size_t es = rcl_dtype_size(M->dtype), WL = p->WL;
  if (!p->exact) {
    size_t wlen = p->window, nwin = ceil_div(lr->extra, wlen);
    if ((rc = rcl__buffer_create(&tmp[0], M->ctx, CL_MEM_READ_WRITE, lr->count * es, NULL, "long-row partial sums")))
      return rc;
    cl_kernel k = k1->k;
    const char *name = k1->name;
    cl_uint B = (cl_uint)p->B;
    cl_ulong wl = wlen;
    rc = common_args(k, name, c);
    if (!rc) rc = set_arg(k, name, 12, sizeof(cl_mem), &lr->mem[0]);
    if (!rc) rc = set_arg(k, name, 14, sizeof wl, &wl);
    if (!rc) rc = set_arg(k, name, 15, sizeof(cl_mem), &tmp[0]);
    if (!rc) rc = set_arg(k, name, 16, sizeof B, &B);
    if (!rc) rc = set_arg(k, name, 17, p->B * es, NULL);
    for (size_t w = 0; w < nwin && !rc; w++) {
      cl_ulong wbeg = (cl_ulong)w * wlen;
      rc = set_arg(k, name, 13, sizeof wbeg, &wbeg);
      if (!rc) rc = rcl__chain_kernel(ch, k, name, lr->count * WL, WL);
    }
    return rc;
  }
  layout *sg;
  if ((rc = segments(&sg, M, p->T, p->window)) != 0) return rc;
  /* Work-item 0 of the per-row sum loops over the row's segments for each of its digits. */
  if (p->budget != SIZE_MAX) {
    size_t per = ceil_div(p->xd, WL) + 2, most = cap_of(p, p->F, per);
    if (sg->extra > most)
      return rcl__fail(RCL_ERR_UNSUPPORTED,
                       "a row of %zu entries is too long for the exact contract on %s: its loop limit allows %zu "
                       "segments of %zu entries per row",
                       lr->extra, M->ctx->profile.device_name, most, p->window);
  }
  if ((rc = rcl__buffer_create(&tmp[0], M->ctx, CL_MEM_READ_WRITE, sg->count * p->xd * 8, NULL,
                               "exact segment digits")) ||
      (rc = rcl__buffer_create(&tmp[1], M->ctx, CL_MEM_READ_WRITE, sg->count * 4, NULL, "exact segment flags")))
    return rc;
  cl_uint nseg = (cl_uint)sg->count;
  size_t WS = k1->wg_max < 64 ? rcl__floor_pow2(k1->wg_max) : 64;
  rc = rcl__set_args(k1->k, k1->name, 8, sizeof(cl_mem), &M->ci, sizeof(cl_mem), &M->va, sizeof(cl_mem), &c->x,
                     sizeof c->xoff, &c->xoff, sizeof(cl_mem), &sg->mem[0], sizeof nseg, &nseg, sizeof(cl_mem), &tmp[0],
                     sizeof(cl_mem), &tmp[1]);
  if (!rc) rc = rcl__chain_kernel(ch, k1->k, k1->name, ceil_div(sg->count, WS) * WS, WS);
  if (!rc)
    rc = rcl__set_args(k2->k, k2->name, 10, sizeof(cl_mem), &c->y, sizeof c->yoff, &c->yoff, es, c->alpha, es, c->beta,
                       sizeof c->bz, &c->bz, sizeof(cl_mem), &lr->mem[0], sizeof(cl_mem), &sg->mem[1], sizeof(cl_mem),
                       &tmp[0], sizeof(cl_mem), &tmp[1], p->xd * 8, NULL);
  if (!rc) rc = rcl__chain_kernel(ch, k2->k, k2->name, lr->count * WL, WL);
  return rc;
}

int rcl__spmv_enqueue_soft(cl_mem y, size_t yoff, rcl_spmv_matrix *M, const void *alpha, cl_mem x, size_t xoff,
                           const void *beta, const rcl_spmv_options *opts, const size_t *soft,
                           const rcl_queue_args *q) {
  if (!M) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv_enqueue: NULL matrix");
  if (!alpha || !beta) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv_enqueue: NULL alpha or beta");
  size_t es = rcl_dtype_size(M->dtype), need;
  int rc;
  if (yoff > SIZE_MAX - M->nrows || xoff > SIZE_MAX - M->ncols)
    return rcl__fail(RCL_ERR_OVERFLOW, "rcl_spmv_enqueue: offset + size overflows");
  if (M->nrows && ((rc = rcl__mul_size(&need, yoff + M->nrows, es, "y")) || (rc = rcl__check_buffer(y, need, "y"))))
    return rc;
  if (M->nrows && M->ncols &&
      ((rc = rcl__mul_size(&need, xoff + M->ncols, es, "x")) || (rc = rcl__check_buffer(x, need, "x"))))
    return rc;
  if (x == y && M->nrows && M->ncols && xoff < yoff + M->nrows && yoff < xoff + M->ncols)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv_enqueue: x and y overlap in the same buffer");
  cl_command_queue queue;
  if ((rc = rcl__queue_of(&queue, M->ctx, q)) != 0) return rc;
  rcl_chain ch;
  rcl__chain_begin(&ch, queue, q);
  if ((rc = rcl__chain_lazy(&ch, M->ctx, q)) != 0) return rc;
  pthread_mutex_lock(&M->lock);
  plan p;
  kentry *kv = NULL, *k1 = NULL, *k2 = NULL;
  rc = make_plan(&p, M, opts, soft, &kv, &k1, &k2);
  cl_mem tmp[2] = {NULL, NULL};
  if (!rc && M->nrows > 0) { /* (no rows: nothing to compute; the caller's event follows its wait list) */
    call c = {M, y, x, yoff, xoff, alpha, beta, (cl_uint)rcl__real_is_zero(beta, M->dtype), (cl_uint)M->nrows, p.T};
    if (M->ncols == 0) c.x = M->va; /* never read: no row has an entry; any valid buffer will do */
    rc = launch_variant(&ch, &p, &c, kv);
    if (!rc) rc = launch_long(&ch, &p, &c, k1, k2, tmp);
  }
  pthread_mutex_unlock(&M->lock);
  for (int i = 0; i < 2; i++)
    if (tmp[i]) clReleaseMemObject(tmp[i]); /* OpenCL frees them when the commands are done */
  return rcl__chain_finish(&ch, q, rc);     /* no kernel needed (no rows, or all in empty blocks): a marker */
}

int rcl__spmv_resolve(rcl_spmv_launch *out, rcl_spmv_matrix *M, const rcl_spmv_options *opts, const size_t *soft) {
  memset(out, 0, sizeof *out);
  plan p;
  kentry *kv = NULL, *k1 = NULL, *k2 = NULL;
  pthread_mutex_lock(&M->lock);
  int rc = make_plan(&p, M, opts, soft, &kv, &k1, &k2);
  pthread_mutex_unlock(&M->lock);
  if (rc) return rc;
  out->variant = p.variant;
  out->W = p.W;
  out->WL = p.WL;
  out->L = p.L;
  out->B = p.B;
  out->C = p.C;
  out->T = p.T;
  out->window = p.window;
  out->has_long = M->max_row > p.T;
  return 0;
}
/* ---- the conventional baseline (benchmarks only) ------------------------------------------------------ */

int rcl_spmv_baseline_enqueue(cl_mem y, size_t yoff, rcl_spmv_matrix *M, const void *alpha, cl_mem x, size_t xoff,
                              const void *beta, size_t lanes, size_t local, const rcl_queue_args *q) {
  if (!M || !alpha || !beta) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_spmv_baseline_enqueue: NULL argument");
  size_t es = rcl_dtype_size(M->dtype), need;
  int rc;
  if (yoff > SIZE_MAX - M->nrows || xoff > SIZE_MAX - M->ncols)
    return rcl__fail(RCL_ERR_OVERFLOW, "rcl_spmv_baseline_enqueue: offset + size overflows");
  if (M->nrows && ((rc = rcl__mul_size(&need, yoff + M->nrows, es, "y")) || (rc = rcl__check_buffer(y, need, "y"))))
    return rc;
  if (M->nrows && M->ncols &&
      ((rc = rcl__mul_size(&need, xoff + M->ncols, es, "x")) || (rc = rcl__check_buffer(x, need, "x"))))
    return rc;
  cl_command_queue queue;
  if ((rc = rcl__queue_of(&queue, M->ctx, q)) != 0) return rc;
  if (local && !rcl__is_pow2(local))
    return rcl__fail(RCL_ERR_INVALID_ARG, "local_size %zu is not a power of two", local);
  if (lanes && !rcl__is_pow2(lanes)) return rcl__fail(RCL_ERR_INVALID_ARG, "lanes %zu is not a power of two", lanes);
  rcl_chain ch;
  rcl__chain_begin(&ch, queue, q);
  if ((rc = rcl__chain_lazy(&ch, M->ctx, q)) != 0) return rc;
  pthread_mutex_lock(&M->lock);
  kentry *e = NULL;
  rc = get_kernel(&e, M, 0, "rcl_spmv_vector_tree");
  size_t W = 0, L = lanes;
  if (!rc) {
    W = local ? local : rcl__floor_pow2(e->wg_max < 256 ? e->wg_max : 256);
    if (W > e->wg_max)
      rc = rcl__fail(RCL_ERR_INVALID_ARG, "local_size %zu exceeds the kernel's limit %zu", W, e->wg_max);
    if (!L) {
      size_t mean = M->nrows ? ceil_div(M->nnz, M->nrows) : 1;
      for (L = 1; L < mean && L < 32; L *= 2) {
      }
    }
    if (!rc && L > W) rc = rcl__fail(RCL_ERR_INVALID_ARG, "lanes %zu exceed local_size %zu", L, W);
    size_t budget = rcl__loop_budget(M->ctx);
    if (!rc && budget != SIZE_MAX && M->max_row / L + 64 > budget)
      rc = rcl__fail(RCL_ERR_UNSUPPORTED, "the baseline kernel cannot loop over a row of %zu entries on %s", M->max_row,
                     M->ctx->profile.device_name);
  }
  if (!rc && M->nrows) {
    call c = {M,
              y,
              M->ncols ? x : M->va,
              yoff,
              xoff,
              alpha,
              beta,
              (cl_uint)rcl__real_is_zero(beta, M->dtype),
              (cl_uint)M->nrows,
              (cl_ulong)-1};
    cl_uint Lu = (cl_uint)L;
    rc = common_args(e->k, e->name, &c);
    if (!rc) rc = set_arg(e->k, e->name, 12, sizeof Lu, &Lu);
    if (!rc) rc = set_arg(e->k, e->name, 13, W * es, NULL);
    if (!rc) rc = rcl__chain_kernel(&ch, e->k, e->name, ceil_div(M->nrows, W / L) * W, W);
  }
  pthread_mutex_unlock(&M->lock);
  return rcl__chain_finish(&ch, q, rc); /* no rows: a marker on the caller's wait list */
}
