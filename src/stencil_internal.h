/* Shared by the stencil launcher (stencil.c) and its host reference (stencil_ref.c): the checks of a
 * stencil or SOR description and the values derived from it, so both accept the same inputs and use
 * the same rounded constants. Not installed. */
#ifndef REPROCL_STENCIL_INTERNAL_H
#define REPROCL_STENCIL_INTERNAL_H
#include "internal.h"
#include "reprocl/grid.h"
#include "reprocl/stencil.h"

/* Checks width and height (1 .. RCL_GRID_MAX_DIM) and that width*height*es fits in size_t. */
RCL_INTERNAL int rcl__grid_check_dims(size_t width, size_t height, size_t es, const char *what);

/* Checks a stencil description; *radius receives 1 or 2. */
RCL_INTERNAL int rcl__stencil_check(const rcl_stencil_desc *st, unsigned int *radius);
/* Checks an SOR description for a grid (omega in (0, 2), the boundary, periodic sizes). */
RCL_INTERNAL int rcl__sor_check(const rcl_sor_desc *s, size_t width, size_t height);

/* The constants a kernel uses, rounded once to the dtype (each points to a float or a double):
 * the stencil's weights (3 for NINE, (2r+1)^2 for GENERAL) and boundary value; SOR's c1 = omega * 0.25 and
 * c0 = 1 - omega, both computed in binary64 and then rounded. */
typedef union {
  float f[25];
  double d[25];
} rcl__stencil_consts;
RCL_INTERNAL void rcl__stencil_weights(rcl__stencil_consts *w, const rcl_stencil_desc *st, unsigned int radius,
                                       rcl_dtype dtype);
RCL_INTERNAL void rcl__to_dtype(void *out, double v, rcl_dtype dtype);
RCL_INTERNAL void rcl__sor_coefficients(void *c1, void *c0, double omega, rcl_dtype dtype);

#endif
