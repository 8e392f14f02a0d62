/* Stencils and SOR over a split (split_stencil.c): the driver behind rcl_split_stencil and rcl_split_sor,
 * with the number of steps between halo exchanges as an argument (the tests sweep it). Not installed. */
#ifndef REPROCL_SPLIT_STENCIL_H
#define REPROCL_SPLIT_STENCIL_H
#include "split/split_internal.h"

/* A stencil (st; sor NULL) or SOR (sor; st NULL) problem over a split's devices. */
typedef struct {
  const rcl_stencil_desc *st;
  const rcl_sor_desc *sor;
  rcl_dtype dtype;
  size_t width, height;
  size_t steps;    /* stencil iterations or SOR sweeps */
  const void *in;  /* the grid: width x height values */
  const void *rhs; /* SOR's right-hand side, or NULL */
  void *out;       /* the result (may be in) */
  void *residual;  /* SOR: the residual norm after the sweeps, or NULL */
  size_t per_step; /* steps between exchanges (the halo is that many steps deep); 0: chosen here */
} rcl__split_grid_job;

/* Checks the arguments, cuts the grid into blocks of rows by the split's weights (SOR: blocks of an even
 * number of rows), runs every device's block on its own thread and exchanges the halo rows through the
 * host every per_step steps. The bits are rcl_ref_stencil's / rcl_ref_sor's for every split and per_step. */
RCL_INTERNAL int rcl__split_grid_run(rcl_split *s, const rcl__split_grid_job *job);

#endif
