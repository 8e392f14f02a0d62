/* The stencil family's cases in the standard suite: the 9-point, 3x3 and 5x5 stencils and red-black SOR
 * in both dtypes on generated grids with every boundary, and scikit-image's camera.png. Outputs are the
 * final grids (SOR: the grid followed by its residual norm), so check draws difference images of native
 * drift for them. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suite.h"

enum { P_KIND, P_INIT, P_W, P_H, P_ITERS, P_BC };
enum { K_NINE, K_GENERAL3, K_GENERAL5, K_SOR };

static const char *const kind_names[] = {"nine", "general3", "general5", "sor"};
static const char *const contracts[] = {"stencil.nine.v1", "stencil.general.v1", "stencil.general.v1",
                                        "stencil.sor.v1"};
static const char camera[] = "/usr/lib/python3/dist-packages/skimage/data/camera.png";

static int add(suite_list *l, int quick, int kind, rcl_dtype dt, rcl_grid_init init, size_t w, size_t h, size_t iters,
               rcl_boundary bc, const char *input) {
  char what[64];
  if (input)
    snprintf(what, sizeof what, "%s", strrchr(input, '/') + 1);
  else
    snprintf(what, sizeof what, "%s %zux%zu", rcl_grid_init_name(init), w, h);
  suite_case *c = suite_add(l, &suite_stencil, RCL_FAMILY_STENCIL, dt, quick, contracts[kind],
                            "stencil %s %s %s %s %s=%zu", kind_names[kind], rcl_dtype_name(dt), what,
                            rcl_boundary_name(bc), kind == K_SOR ? "sweeps" : "iters", iters);
  if (!c) return -1;
  c->p[P_KIND] = (uint64_t)kind, c->p[P_INIT] = init, c->p[P_W] = w, c->p[P_H] = h, c->p[P_ITERS] = iters;
  c->p[P_BC] = bc;
  if (input) snprintf(c->input, sizeof c->input, "%s", input);
  c->width = w;
  c->height = h;
  return 0;
}

static int cases(suite_list *l) {
  static const rcl_boundary bcs[] = {RCL_BOUNDARY_FIXED, RCL_BOUNDARY_PERIODIC, RCL_BOUNDARY_EDGE};
  int rc = 0;
  for (int d = 0; d < 2 && !rc; d++) {
    rcl_dtype dt = d ? RCL_F64 : RCL_F32;
    rc = add(l, 1, K_NINE, dt, RCL_GRID_INIT_SHOC, 97, 89, 10, RCL_BOUNDARY_FIXED, NULL);
    for (int b = 0; b < 3 && !rc; b++) {
      rcl_boundary bc = bcs[b];
      size_t w = bc == RCL_BOUNDARY_PERIODIC ? 62 : 61, h = bc == RCL_BOUNDARY_PERIODIC ? 68 : 67; /* SOR: even */
      for (int k = K_NINE; k <= K_SOR && !rc; k++)
        rc = add(l, 1, k, dt, RCL_GRID_INIT_RANDOM, w, h, k == K_SOR ? 20 : 5, bc, NULL);
    }
    /* The long run, and larger grids. */
    if (!rc) rc = add(l, 0, K_NINE, dt, RCL_GRID_INIT_SHOC, 256, 256, 1000, RCL_BOUNDARY_FIXED, NULL);
    if (!rc) rc = add(l, 0, K_GENERAL5, dt, RCL_GRID_INIT_RANDOM, 1021, 1019, 10, RCL_BOUNDARY_EDGE, NULL);
    if (!rc) rc = add(l, 0, K_SOR, dt, RCL_GRID_INIT_POINT, 512, 512, 200, RCL_BOUNDARY_FIXED, NULL);
  }
  if (!rc) rc = add(l, 1, K_NINE, RCL_F32, RCL_GRID_INIT_ZERO, 512, 512, 20, RCL_BOUNDARY_EDGE, camera);
  if (!rc) rc = add(l, 0, K_SOR, RCL_F64, RCL_GRID_INIT_ZERO, 512, 512, 100, RCL_BOUNDARY_EDGE, camera);
  return rc;
}

/* Weights of the general stencils: a different value at every position, so a mirrored or shifted
 * neighbourhood changes the result (the same as tests/test_stencil.c). */
static rcl_stencil_desc desc_of(const suite_case *c) {
  rcl_stencil_desc st = RCL_STENCIL_DESC_INIT;
  st.boundary = (rcl_boundary)c->p[P_BC];
  if (c->p[P_KIND] == K_GENERAL3 || c->p[P_KIND] == K_GENERAL5) {
    st.kind = RCL_STENCIL_GENERAL;
    st.radius = c->p[P_KIND] == K_GENERAL3 ? 1 : 2;
    for (int k = 0; k < 25; k++) st.weights[k] = (k % 2 ? 0.0625 : -0.03125) * (1 + k % 7) + 0.01 * k;
    st.boundary_value = 0.75;
  }
  return st;
}

static int compute(const suite_case *c, const suite_target *t, void **out, size_t *bytes) {
  rcl_grid g = {0};
  int rc;
  if (c->input[0]) {
    if (access(c->input, R_OK) != 0) return RCL_ERR_NOT_FOUND;
    rc = rcl_grid_read(&g, c->input, RCL_GRID_FORMAT_AUTO, c->dtype, c->width, c->height);
  } else {
    rc = rcl_grid_alloc(&g, c->dtype, c->width, c->height);
    if (!rc) rc = rcl_grid_generate(&g, (rcl_grid_init)c->p[P_INIT], 42);
  }
  if (rc) {
    rcl_grid_free(&g);
    return rc;
  }
  size_t es = rcl_dtype_size(c->dtype), n = c->width * c->height, iters = (size_t)c->p[P_ITERS];
  unsigned char *r = malloc(n * es + es);
  if (!r) rc = RCL_ERR_OUT_OF_MEMORY;
  if (!rc && c->p[P_KIND] == K_SOR) {
    rcl_sor_desc s = RCL_SOR_DESC_INIT;
    s.boundary = (rcl_boundary)c->p[P_BC];
    memcpy(r, g.data, n * es);
    rc = !t         ? rcl_ref_sor(r, r + n * es, &s, c->dtype, c->width, c->height, iters, NULL)
         : t->split ? rcl_split_sor(r, r + n * es, t->split, &s, c->dtype, c->width, c->height, iters, NULL)
                    : rcl_sor(r, r + n * es, t->ctx, &s, c->dtype, c->width, c->height, iters, NULL, NULL);
    *bytes = n * es + es;
  } else if (!rc) {
    rcl_stencil_desc st = desc_of(c);
    rc = !t         ? rcl_ref_stencil(r, &st, c->dtype, c->width, c->height, iters, g.data)
         : t->split ? rcl_split_stencil(r, t->split, &st, c->dtype, c->width, c->height, iters, g.data)
                    : rcl_stencil(r, t->ctx, &st, c->dtype, c->width, c->height, iters, g.data, NULL);
    *bytes = n * es;
  }
  rcl_grid_free(&g);
  if (rc)
    free(r);
  else
    *out = r;
  return rc;
}

static int reference(const suite_case *c, void **out, size_t *bytes) { return compute(c, NULL, out, bytes); }
static int run(const suite_case *c, rcl_context *ctx, void **out, size_t *bytes) {
  suite_target t = {ctx, NULL};
  return compute(c, &t, out, bytes);
}
static int run_split(const suite_case *c, rcl_split *s, void **out, size_t *bytes) {
  suite_target t = {NULL, s};
  return compute(c, &t, out, bytes);
}

const suite_family suite_stencil = {"stencil", cases, reference, run, run_split};
