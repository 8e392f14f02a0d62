/* Host references of the stencil contracts (docs/contracts.md, "stencil.*"): plain C compiled with
 * -ffp-contract=off, one rounded operation per step in the order the kernels use, so that a device
 * result can be compared with memcmp. */
#include <string.h>

#include "stencil/stencil_internal.h"

static int wrap(int v, int n) {
  int r = v % n;
  return r < 0 ? r + n : r;
}

/* The element a read of (x, y) takes, or -1 for the fixed halo value (cl/stencil.cl: st_map). */
static long map(int x, int y, int W, int H, rcl_boundary bc) {
  if (x < 0 || x >= W || y < 0 || y >= H) {
    if (bc == RCL_BOUNDARY_FIXED) return -1;
    if (bc == RCL_BOUNDARY_PERIODIC) {
      x = wrap(x, W);
      y = wrap(y, H);
    } else {
      x = x < 0 ? 0 : x >= W ? W - 1 : x;
      y = y < 0 ? 0 : y >= H ? H - 1 : y;
    }
  }
  return (long)y * W + x;
}

static float canon_f32(float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) u = 0x7fc00000u;
  memcpy(&v, &u, 4);
  return v;
}

static double canon_f64(double v) {
  uint64_t u;
  memcpy(&u, &v, 8);
  if ((u << 1) > 0xffe0000000000000u) u = 0x7ff8000000000000u;
  memcpy(&v, &u, 8);
  return v;
}

/* One implementation per element type T. */
#define STENCIL_REF(T, SUF, CANON)                                                                                     \
  static T fetch_##SUF(const T *g, int W, int H, rcl_boundary bc, T bval, int x, int y) {                              \
    long i = map(x, y, W, H, bc);                                                                                      \
    return i < 0 ? bval : g[i];                                                                                        \
  }                                                                                                                    \
                                                                                                                       \
  /* One application of the stencil, in -> out (distinct arrays). */                                                   \
  static void step_##SUF(T *out, const T *in, int W, int H, const rcl_stencil_desc *st, int R, const T *w, T bval) {   \
    rcl_boundary bc = st->boundary;                                                                                    \
    for (int y = 0; y < H; y++)                                                                                        \
      for (int x = 0; x < W; x++) {                                                                                    \
        T r;                                                                                                           \
        if (st->kind == RCL_STENCIL_NINE) {                                                                            \
          T nw = fetch_##SUF(in, W, H, bc, bval, x - 1, y - 1), n = fetch_##SUF(in, W, H, bc, bval, x, y - 1);         \
          T ne = fetch_##SUF(in, W, H, bc, bval, x + 1, y - 1), wv = fetch_##SUF(in, W, H, bc, bval, x - 1, y);        \
          T c = fetch_##SUF(in, W, H, bc, bval, x, y), e = fetch_##SUF(in, W, H, bc, bval, x + 1, y);                  \
          T sw = fetch_##SUF(in, W, H, bc, bval, x - 1, y + 1), s = fetch_##SUF(in, W, H, bc, bval, x, y + 1);         \
          T se = fetch_##SUF(in, W, H, bc, bval, x + 1, y + 1);                                                        \
          T a = ((n + s) + e) + wv;                                                                                    \
          T d = ((ne + se) + nw) + sw;                                                                                 \
          r = (w[0] * c + w[1] * a) + w[2] * d;                                                                        \
        } else {                                                                                                       \
          int K = 2 * R + 1;                                                                                           \
          r = w[0] * fetch_##SUF(in, W, H, bc, bval, x - R, y - R);                                                    \
          for (int k = 1; k < K * K; k++)                                                                              \
            r = r + w[k] * fetch_##SUF(in, W, H, bc, bval, x + k % K - R, y + k / K - R);                              \
        }                                                                                                              \
        out[(long)y * W + x] = CANON(r);                                                                               \
      }                                                                                                                \
  }                                                                                                                    \
                                                                                                                       \
  static int stencil_##SUF(T *out, const rcl_stencil_desc *st, int W, int H, size_t iters, const T *in, int R,         \
                           const T *w, T bval) {                                                                       \
    size_t n = (size_t)W * (size_t)H;                                                                                  \
    T *a = rcl__malloc(n * sizeof(T)), *b = rcl__malloc(n * sizeof(T));                                                \
    if (!a || !b) {                                                                                                    \
      rcl__free(a);                                                                                                    \
      rcl__free(b);                                                                                                    \
      return RCL_ERR_OUT_OF_MEMORY;                                                                                    \
    }                                                                                                                  \
    memcpy(a, in, n * sizeof(T));                                                                                      \
    for (size_t i = 0; i < iters; i++) {                                                                               \
      step_##SUF(b, a, W, H, st, R, w, bval);                                                                          \
      T *t = a;                                                                                                        \
      a = b;                                                                                                           \
      b = t;                                                                                                           \
    }                                                                                                                  \
    memcpy(out, a, n * sizeof(T));                                                                                     \
    rcl__free(a);                                                                                                      \
    rcl__free(b);                                                                                                      \
    return 0;                                                                                                          \
  }                                                                                                                    \
                                                                                                                       \
  /* t = ((N + S) + W) + E [- b] */                                                                                    \
  static T sor_sum_##SUF(const T *g, int W, int H, rcl_boundary bc, T bval, int x, int y, const T *rhs) {              \
    T t = ((fetch_##SUF(g, W, H, bc, bval, x, y - 1) + fetch_##SUF(g, W, H, bc, bval, x, y + 1)) +                     \
           fetch_##SUF(g, W, H, bc, bval, x - 1, y)) +                                                                 \
          fetch_##SUF(g, W, H, bc, bval, x + 1, y);                                                                    \
    if (rhs) t = t - rhs[(long)y * W + x];                                                                             \
    return t;                                                                                                          \
  }                                                                                                                    \
                                                                                                                       \
  static void sor_##SUF(T *g, const rcl_sor_desc *s, int W, int H, size_t sweeps, const T *rhs, T c1, T c0, T bval) {  \
    for (size_t i = 0; i < 2 * sweeps; i++) {                                                                          \
      int colour = (int)(i % 2);                                                                                       \
      for (int y = 0; y < H; y++)                                                                                      \
        for (int x = (y + colour) & 1; x < W; x += 2) {                                                                \
          T t = sor_sum_##SUF(g, W, H, s->boundary, bval, x, y, rhs);                                                  \
          g[(long)y * W + x] = CANON(c1 * t + c0 * g[(long)y * W + x]);                                                \
        }                                                                                                              \
    }                                                                                                                  \
  }                                                                                                                    \
                                                                                                                       \
  static void residual_##SUF(T *r, const T *g, const rcl_sor_desc *s, int W, int H, const T *rhs, T bval) {            \
    for (int y = 0; y < H; y++)                                                                                        \
      for (int x = 0; x < W; x++)                                                                                      \
        r[(long)y * W + x] = CANON(sor_sum_##SUF(g, W, H, s->boundary, bval, x, y, rhs) - (T)4 * g[(long)y * W + x]);  \
  }

STENCIL_REF(float, f32, canon_f32)
STENCIL_REF(double, f64, canon_f64)

int rcl_ref_stencil(void *out, const rcl_stencil_desc *st, rcl_dtype dtype, size_t width, size_t height, size_t iters,
                    const void *in) {
  unsigned int radius;
  size_t es = rcl_dtype_size(dtype);
  if (!es) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_ref_stencil: unknown dtype %d", (int)dtype);
  int rc = rcl__stencil_check(st, &radius);
  if (!rc) rc = rcl__grid_check_dims(width, height, es, "rcl_ref_stencil");
  if (rc) return rc;
  if (!out || !in) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_ref_stencil: NULL grid");
  rcl__stencil_consts w;
  rcl__stencil_weights(&w, st, radius, dtype);
  if (dtype == RCL_F32)
    return stencil_f32(out, st, (int)width, (int)height, iters, in, (int)radius, w.f, (float)st->boundary_value);
  return stencil_f64(out, st, (int)width, (int)height, iters, in, (int)radius, w.d, st->boundary_value);
}

int rcl_ref_sor(void *grid, void *residual, const rcl_sor_desc *s, rcl_dtype dtype, size_t width, size_t height,
                size_t sweeps, const void *rhs) {
  size_t es = rcl_dtype_size(dtype);
  if (!es) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_ref_sor: unknown dtype %d", (int)dtype);
  int rc = rcl__grid_check_dims(width, height, es, "rcl_ref_sor");
  if (!rc) rc = rcl__sor_check(s, width, height);
  if (rc) return rc;
  if (!grid) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_ref_sor: NULL grid");
  int W = (int)width, H = (int)height;
  size_t n = width * height;
  if (dtype == RCL_F32) {
    float c1, c0, bval = (float)s->boundary_value;
    rcl__sor_coefficients(&c1, &c0, s->omega, dtype);
    sor_f32(grid, s, W, H, sweeps, rhs, c1, c0, bval);
  } else {
    double c1, c0;
    rcl__sor_coefficients(&c1, &c0, s->omega, dtype);
    sor_f64(grid, s, W, H, sweeps, rhs, c1, c0, s->boundary_value);
  }
  if (!residual) return 0;
  void *r = rcl__malloc(n * es);
  if (!r) return RCL_ERR_OUT_OF_MEMORY;
  if (dtype == RCL_F32)
    residual_f32(r, grid, s, W, H, rhs, (float)s->boundary_value);
  else
    residual_f64(r, grid, s, W, H, rhs, s->boundary_value);
  rc = rcl_ref_reduce(residual, RCL_OP_NRM2, dtype, RCL_REDUCE_ORDERED, n, r, NULL);
  rcl__free(r);
  return rc;
}
