/* The checks and constants of the stencil family, shared by its front (stencil.c), launch layer
 * (stencil_launch.c) and host reference (stencil_ref.c), so all accept the same inputs and use the same
 * rounded constants: grid sizes, stencil and SOR descriptions, options, grids in buffers. Uses no other
 * file of the family. */
#include <string.h>

#include "stencil/stencil_internal.h"

/* ---- descriptions and constants --------------------------------------------------------------------- */

int rcl__grid_check_dims(size_t width, size_t height, size_t es, const char *what) {
  if (width == 0 || height == 0)
    return rcl__fail(RCL_ERR_INVALID_ARG, "%s: grid size %zux%zu is empty (both sizes must be at least 1)", what, width,
                     height);
  if (width > RCL_GRID_MAX_DIM || height > RCL_GRID_MAX_DIM)
    return rcl__fail(RCL_ERR_INVALID_ARG, "%s: grid size %zux%zu exceeds the largest supported size %zu", what, width,
                     height, RCL_GRID_MAX_DIM);
  size_t n;
  return rcl__mul_size(&n, width, height, what) ? RCL_ERR_OVERFLOW : rcl__mul_size(&n, n, es ? es : 1, what);
}

static int check_boundary(rcl_boundary b) {
  if ((unsigned)b > RCL_BOUNDARY_EDGE)
    return rcl__fail(RCL_ERR_INVALID_ARG, "boundary %d is not fixed, periodic or edge", (int)b);
  return 0;
}

int rcl__stencil_check(const rcl_stencil_desc *st, unsigned int *radius) {
  if (!st) return rcl__fail(RCL_ERR_INVALID_ARG, "NULL stencil description");
  if (st->version != RCL_STENCIL_DESC_VERSION)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_stencil_desc.version is %u, expected %u (use RCL_STENCIL_DESC_INIT)",
                     st->version, RCL_STENCIL_DESC_VERSION);
  if (st->kind == RCL_STENCIL_NINE) {
    if (st->radius > 1)
      return rcl__fail(RCL_ERR_INVALID_ARG, "the nine-point stencil has radius 1, not %u", st->radius);
    *radius = 1;
  } else if (st->kind == RCL_STENCIL_GENERAL) {
    if (st->radius != 1 && st->radius != 2)
      return rcl__fail(RCL_ERR_INVALID_ARG, "general stencil radius %u is not supported (1: 3x3, 2: 5x5)", st->radius);
    *radius = st->radius;
  } else {
    return rcl__fail(RCL_ERR_INVALID_ARG, "stencil kind %d is neither nine nor general", (int)st->kind);
  }
  return check_boundary(st->boundary);
}

int rcl__sor_check(const rcl_sor_desc *s, size_t width, size_t height) {
  if (!s) return rcl__fail(RCL_ERR_INVALID_ARG, "NULL SOR description");
  if (s->version != RCL_SOR_DESC_VERSION)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_sor_desc.version is %u, expected %u (use RCL_SOR_DESC_INIT)", s->version,
                     RCL_SOR_DESC_VERSION);
  if (!(s->omega > 0.0 && s->omega < 2.0))
    return rcl__fail(RCL_ERR_INVALID_ARG, "SOR relaxation factor omega = %g is outside (0, 2): SOR diverges there",
                     s->omega);
  int rc = check_boundary(s->boundary);
  if (rc) return rc;
  if (s->boundary == RCL_BOUNDARY_PERIODIC && ((width > 1 && width % 2) || (height > 1 && height % 2)))
    return rcl__fail(RCL_ERR_INVALID_ARG,
                     "periodic SOR on a %zux%zu grid: the red-black colouring does not wrap around an odd size "
                     "(use even sizes, or size 1)",
                     width, height);
  return 0;
}

void rcl__to_dtype(void *out, double v, rcl_dtype dtype) {
  if (dtype == RCL_F32) {
    float f = (float)v;
    memcpy(out, &f, 4);
  } else {
    memcpy(out, &v, 8);
  }
}

void rcl__stencil_weights(rcl__stencil_consts *w, const rcl_stencil_desc *st, unsigned int radius, rcl_dtype dtype) {
  size_t n = st->kind == RCL_STENCIL_NINE ? 3 : (2 * radius + 1) * (2 * radius + 1);
  for (size_t i = 0; i < n; i++)
    rcl__to_dtype(dtype == RCL_F32 ? (void *)&w->f[i] : (void *)&w->d[i], st->weights[i], dtype);
}

void rcl__sor_coefficients(void *c1, void *c0, double omega, rcl_dtype dtype) {
  rcl__to_dtype(c1, omega * 0.25, dtype);
  rcl__to_dtype(c0, 1.0 - omega, dtype);
}

/* ---- options and grids in buffers ------------------------------------------------------------------ */

int rcl__stencil_opts_check(const rcl_stencil_options *o) {
  if (o && o->version != RCL_STENCIL_OPTIONS_VERSION)
    return rcl__fail(RCL_ERR_INVALID_ARG,
                     "rcl_stencil_options.version is %u, expected %u (use RCL_STENCIL_OPTIONS_INIT)", o->version,
                     RCL_STENCIL_OPTIONS_VERSION);
  if (o && (unsigned)o->variant > RCL_STENCIL_TASK)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_stencil_options.variant %d is not auto, plain, tiled or task",
                     (int)o->variant);
  return 0;
}

int rcl__grid_ref_check(rcl__grid_ref *g, cl_mem buf, size_t off, size_t pitch, size_t w, size_t h, size_t es,
                        const char *what) {
  if (pitch == 0) pitch = w;
  if (pitch < w) return rcl__fail(RCL_ERR_INVALID_ARG, "%s: row pitch %zu is less than the width %zu", what, pitch, w);
  size_t last, need;
  if (rcl__mul_size(&last, pitch, h - 1, what) || last > SIZE_MAX - off - w || off > SIZE_MAX - w)
    return rcl__fail(RCL_ERR_OVERFLOW, "%s: offset %zu + pitch %zu x %zu rows overflows", what, off, pitch, h);
  int rc = rcl__mul_size(&need, off + last + w, es, what);
  if (!rc) rc = rcl__check_buffer(buf, need, what);
  if (rc) return rc;
  g->buf = buf;
  g->off = off;
  g->pitch = pitch;
  return 0;
}
