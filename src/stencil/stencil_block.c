/* One block of rows of a stencil or SOR grid, as one device of a split (src/split/split_stencil.c) or one
 * MPI rank (src/mpi/) computes it: its geometry (which global rows it holds, which of its rows others need
 * as halo rows) and its device side (the local grid in buffers, stepped with the family's own kernels through
 * rcl_stencil_enqueue and rcl_sor_enqueue, its rows read and written, its part of the SOR residual norm).
 * Why a block's own rows get exactly the whole grid's bits: stencil_internal.h, "one block of rows". */
#include <string.h>

#include "stencil/stencil_internal.h"

/* ---- geometry ------------------------------------------------------------------------------------- */

void rcl__block_geom_init(rcl__block_geom *g, size_t width, size_t height, size_t r0, size_t r1, size_t halo,
                          rcl_boundary bc) {
  memset(g, 0, sizeof *g);
  g->width = width;
  g->height = height;
  g->r0 = r0;
  g->r1 = r1;
  g->halo = halo;
  if (r1 <= r0) return;
  if (r0 > 0 || r1 < height) {
    g->above = bc == RCL_BOUNDARY_PERIODIC || halo < r0 ? halo : r0;
    g->below = bc == RCL_BOUNDARY_PERIODIC || halo < height - r1 ? halo : height - r1;
  }
  g->rows = g->above + (r1 - r0) + g->below;
}

size_t rcl__block_global_row(const rcl__block_geom *g, size_t l) {
  /* r0 - above + l, taken mod height without going below 0 (above may exceed r0 and even height). */
  size_t up = g->above % g->height;
  return (g->r0 + g->height - up + l) % g->height;
}

size_t rcl__block_edge(const rcl__block_geom *g, size_t halo) {
  size_t n = g->r1 - g->r0;
  return halo < n ? halo : n;
}

size_t rcl__block_edge_index(const rcl__block_geom *g, size_t halo, size_t row) {
  size_t e = rcl__block_edge(g, halo);
  return row - g->r0 < e ? row - g->r0 : e + row - (g->r1 - e);
}

void rcl__block_gather(void *local, const void *grid, const rcl__block_geom *g, size_t es) {
  size_t row = g->width * es;
  for (size_t l = 0; l < g->rows; l++)
    memcpy((char *)local + l * row, (const char *)grid + rcl__block_global_row(g, l) * row, row);
}

/* ---- a block on a device -------------------------------------------------------------------------- */

struct rcl__stencil_block {
  rcl_context *ctx;
  rcl__block_geom g;
  rcl_dtype dtype;
  int is_sor;
  rcl_stencil_desc st;
  rcl_sor_desc sor;
  cl_mem cur, next, scratch, rhs; /* next, scratch: stencil iterations ping-pong (scratch only for k >= 2) */
};

void rcl__stencil_block_free(rcl__stencil_block *b) {
  if (!b) return;
  cl_mem m[4] = {b->cur, b->next, b->scratch, b->rhs};
  for (int i = 0; i < 4; i++)
    if (m[i]) clReleaseMemObject(m[i]);
  rcl__free(b);
}

/* Waits for the context's queue: every block operation has finished when it returns (an out-of-order
 * queue would otherwise let the next operation overtake it). */
static int finish(rcl__stencil_block *b, int rc) {
  cl_int err = clFinish(b->ctx->queue);
  return rc ? rc : err ? rcl__fail_cl(err, "clFinish after a stencil block operation") : 0;
}

/* The block's buffers on its device now: some drivers (NVIDIA's) copy a buffer's host data to the device
 * only at its first use, which would put the upload inside the first steps' time. */
static int resident(rcl__stencil_block *b) {
  cl_mem m[3];
  cl_uint n = 0;
  m[n++] = b->cur;
  if (b->next) m[n++] = b->next;
  if (b->rhs) m[n++] = b->rhs;
  cl_int err = clEnqueueMigrateMemObjects(b->ctx->queue, n, m, 0, 0, NULL, NULL);
  if (err != CL_SUCCESS) return rcl__fail_cl(err, "clEnqueueMigrateMemObjects(stencil block)");
  return finish(b, 0); /* the only command on these new buffers: nothing to order it after */
}

int rcl__stencil_block_create(rcl__stencil_block **out, rcl_context *ctx, const rcl_stencil_desc *st,
                              const rcl_sor_desc *sor, rcl_dtype dtype, const rcl__block_geom *g, const void *local,
                              const void *local_rhs) {
  *out = NULL;
  if (!st == !sor) return rcl__fail(RCL_ERR_INVALID_ARG, "stencil block: give a stencil or an SOR description");
  if (g->rows == 0) return rcl__fail(RCL_ERR_INVALID_ARG, "stencil block: rows [%zu, %zu) are empty", g->r0, g->r1);
  if (sor && rcl__block_global_row(g, 0) % 2)
    return rcl__fail(RCL_ERR_INVALID_ARG,
                     "SOR block of rows [%zu, %zu) with %zu halo rows above starts at an odd "
                     "row (the red-black colours would not be the grid's)",
                     g->r0, g->r1, g->above);
  rcl__stencil_block *b = rcl__calloc(1, sizeof *b);
  if (!b) return RCL_ERR_OUT_OF_MEMORY;
  b->ctx = ctx;
  b->g = *g;
  b->dtype = dtype;
  b->is_sor = sor != NULL;
  if (st) b->st = *st;
  if (sor) b->sor = *sor;
  size_t bytes = g->width * g->rows * rcl_dtype_size(dtype); /* a part of a checked grid */
  int rc = rcl__buffer_copy(&b->cur, ctx, CL_MEM_READ_WRITE, local, bytes, "stencil block grid");
  if (!rc && st) rc = rcl__buffer_create(&b->next, ctx, CL_MEM_READ_WRITE, bytes, NULL, "stencil block grid");
  if (!rc && local_rhs) rc = rcl__buffer_copy(&b->rhs, ctx, CL_MEM_READ_ONLY, local_rhs, bytes, "SOR block rhs");
  if (!rc) rc = resident(b);
  if (rc) {
    rcl__stencil_block_free(b);
    return rc;
  }
  *out = b;
  return 0;
}

int rcl__stencil_block_step(rcl__stencil_block *b, size_t k) {
  size_t reach = b->is_sor ? 2 : b->st.kind == RCL_STENCIL_GENERAL ? b->st.radius : 1;
  if ((b->g.above || b->g.below) && k > b->g.halo / reach)
    return rcl__fail(RCL_ERR_INVALID_ARG, "stencil block: %zu steps spoil %zu rows, past its halo of %zu rows", k,
                     k * reach, b->g.halo);
  if (k == 0) return 0;
  const rcl__block_geom *g = &b->g;
  int rc = 0;
  if (!b->is_sor && k >= 2 && !b->scratch)
    rc = rcl__buffer_create(&b->scratch, b->ctx, CL_MEM_READ_WRITE, g->width * g->rows * rcl_dtype_size(b->dtype), NULL,
                            "stencil block scratch");
  rcl_chain ch;
  if (rc || (rc = rcl__chain_host(&ch, b->ctx)) != 0) return rc;
  rcl_queue_args qa = rcl__chain_args(&ch);
  if (b->is_sor)
    rc = rcl_sor_enqueue(b->cur, 0, 0, b->ctx, &b->sor, b->dtype, g->width, g->rows, k, b->rhs, 0, 0, NULL, &qa);
  else
    rc = rcl_stencil_enqueue(b->next, 0, 0, b->ctx, &b->st, b->dtype, g->width, g->rows, k, b->cur, 0, 0,
                             k >= 2 ? b->scratch : NULL, NULL, &qa);
  rc = rcl__chain_finish(&ch, NULL, rcl__chain_adopt(&ch, rc));
  if (!rc && !b->is_sor) {
    cl_mem t = b->cur;
    b->cur = b->next;
    b->next = t;
  }
  return finish(b, rc);
}

static int check_rows(const rcl__stencil_block *b, size_t l0, size_t n, const char *what) {
  if (l0 > b->g.rows || n > b->g.rows - l0)
    return rcl__fail(RCL_ERR_INVALID_ARG, "stencil block: %s rows [%zu, %zu) of a local grid of %zu rows", what, l0,
                     l0 + n, b->g.rows);
  return 0;
}

int rcl__stencil_block_read(void *host, rcl__stencil_block *b, size_t l0, size_t n) {
  int rc = check_rows(b, l0, n, "reading");
  if (rc || n == 0) return rc;
  size_t row = b->g.width * rcl_dtype_size(b->dtype);
  rcl_chain ch;
  if ((rc = rcl__chain_host(&ch, b->ctx)) != 0) return rc;
  rc = rcl__chain_read(&ch, b->cur, l0 * row, n * row, host, NULL, "stencil block rows");
  return finish(b, rcl__chain_finish(&ch, NULL, rc));
}

int rcl__stencil_block_write(rcl__stencil_block *b, size_t l0, size_t n, const void *host) {
  int rc = check_rows(b, l0, n, "writing");
  if (rc || n == 0) return rc;
  size_t row = b->g.width * rcl_dtype_size(b->dtype);
  rcl_chain ch;
  if ((rc = rcl__chain_host(&ch, b->ctx)) != 0) return rc;
  rc = rcl__chain_write(&ch, b->cur, l0 * row, n * row, host, "stencil block halo rows");
  return finish(b, rcl__chain_finish(&ch, NULL, rc));
}

/* The residual of every point of the local grid into res (rows x W, the SOR residual contract's values;
 * the halo rows' are not the grid's and are not used): cl/stencil.cl's rcl_sor_residual_plain. */
static int residual_grid(rcl_chain *ch, rcl__stencil_block *b, cl_mem res) {
  static const char *const name = "rcl_sor_residual_plain";
  const rcl__block_geom *g = &b->g;
  size_t es = rcl_dtype_size(b->dtype), kmax;
  unsigned char bval[8];
  rcl__to_dtype(bval, b->sor.boundary_value, b->dtype);
  cl_ulong off = 0, pitch = g->width;
  cl_int W = (cl_int)g->width, H = (cl_int)g->rows, bc = (cl_int)b->sor.boundary, has_b = b->rhs != NULL;
  cl_kernel k = NULL;
  int rc = rcl__kernel_get(&k, b->ctx, "stencil.cl", b->dtype, "-DST_R=1", name);
  if (!rc)
    rc = rcl__set_args(k, name, 12, sizeof(cl_mem), &b->cur, sizeof off, &off, sizeof pitch, &pitch, sizeof W, &W,
                       sizeof H, &H, sizeof bc, &bc, es, bval, sizeof(cl_mem), &b->rhs, sizeof off, &off, sizeof pitch,
                       &pitch, sizeof has_b, &has_b, sizeof(cl_mem), &res);
  if (!rc) rc = rcl__kernel_wg_max(&kmax, k, b->ctx, name);
  if (!rc) {
    size_t local[2] = {kmax < 64 ? kmax : 64, 1};
    size_t global[2] = {(g->width + local[0] - 1) / local[0] * local[0], g->rows};
    rc = rcl__chain_kernel_nd(ch, k, name, 2, global, local);
  }
  if (k) clReleaseKernel(k);
  return rc;
}

int rcl__stencil_block_residual(rcl_partial **out, rcl__stencil_block *b) {
  *out = NULL;
  if (!b->is_sor) return rcl__fail(RCL_ERR_INVALID_ARG, "stencil block: a residual needs an SOR block");
  const rcl__block_geom *g = &b->g;
  cl_mem res = NULL;
  rcl_chain ch;
  int rc = rcl__chain_host(&ch, b->ctx);
  if (rc) return rc;
  rc = rcl__buffer_create(&res, b->ctx, CL_MEM_READ_WRITE, g->width * g->rows * rcl_dtype_size(b->dtype), NULL,
                          "SOR block residuals");
  if (!rc) rc = residual_grid(&ch, b, res);
  if (!rc) {
    rcl_queue_args qa = rcl__chain_args(&ch);
    rc = rcl__chain_adopt(&ch, rcl_reduce_partial_enqueue(out, b->ctx, RCL_OP_NRM2, b->dtype, g->width * g->height,
                                                          g->r0 * g->width, (g->r1 - g->r0) * g->width, res,
                                                          g->above * g->width, NULL, 0, NULL, &qa));
  }
  rc = finish(b, rcl__chain_finish(&ch, NULL, rc));
  if (res) clReleaseMemObject(res);
  if (rc) {
    rcl_partial_free(*out);
    *out = NULL;
  }
  return rc;
}
