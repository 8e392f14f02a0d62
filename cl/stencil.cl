/* stencil.cl — 2D stencils and red-black SOR (contracts "stencil.nine", "stencil.general", "stencil.sor" and
 * "stencil.sor_residual" v1 in docs/contracts.md). Built with -DST_R=1 (nine-point, 3x3, SOR) or -DST_R=2
 * (5x5).
 *
 * Every variant computes each point with the same function of the same neighbour values (st_nine,
 * ST_GENERAL, st_sor), so plain, tiled and task kernels, any work-group size and any tile shape give the same
 * bits; they differ only in where the values come from (global memory, a tile in local memory, a register
 * window) and in which work-item computes which point.
 *
 * Grids: point (x, y) of a grid is element off + y * pitch + x. A stencil reads neighbours outside the grid
 * through the boundary rule bc: ST_FIXED reads bval, ST_PERIODIC wraps, ST_EDGE clamps. */

#ifndef ST_R
#define ST_R 1
#endif
#define ST_K (2 * ST_R + 1)
#define ST_KK (ST_K * ST_K)

#define ST_FIXED 0
#define ST_PERIODIC 1
#define ST_EDGE 2

RCL_FN int st_wrap(int v, int n) {
  int r = v % n;
  return r < 0 ? r + n : r;
}

/* Moves (x, y) to the grid point a read there takes; 0 when it takes the fixed halo value instead. */
RCL_FN int st_source(int *x, int *y, int W, int H, int bc) {
  if ((uint)*x < (uint)W && (uint)*y < (uint)H) return 1;
  if (bc == ST_FIXED) return 0;
  if (bc == ST_PERIODIC) {
    *x = st_wrap(*x, W);
    *y = st_wrap(*y, H);
  } else {
    *x = clamp(*x, 0, W - 1);
    *y = clamp(*y, 0, H - 1);
  }
  return 1;
}

RCL_FN real_t st_fetch(__global const real_t *in, ulong off, ulong pitch, int W, int H, int bc, real_t bval, int x,
                       int y) {
  return st_source(&x, &y, W, H, bc) ? in[off + (ulong)y * pitch + (ulong)x] : bval;
}

/* Reads of a kernel that has in, ioff, ipitch, W, H, bc, bval and the point (x, y) in scope. */
#define ST_FETCH(dx, dy) st_fetch(in, ioff, ipitch, W, H, bc, bval, x + (dx), y + (dy))
#define ST_GRID_ARGS                                                                                              \
  __global real_t *out, ulong ooff, ulong opitch, __global const real_t *in, ulong ioff, ulong ipitch, int W, int H, \
      int bc, real_t bval

/* ---- register-blocked plain kernels ----------------------------------------------------------------
 * Built with -DST_PX=px -DST_PY=py (points per work-item, compile-time so the window stays in registers),
 * the plain kernels compute px x py points per work-item: work-item (gx, gy) the block at
 * (gx*px, gy*py). In the interior each work-item slides a window of 2R+1 rows of px+2R values down its
 * block, loading every input row of its neighbourhood once, straight from global memory; blocks touching
 * the grid's edge compute each point inside the grid through the boundary rule (points outside are not
 * written). Each point is the same function of the same values as in the 1 x 1 kernel: same bits. */
#if defined(ST_PX) || defined(ST_PY)
#define ST_BLOCKED 1
#ifndef ST_PX
#define ST_PX 1
#endif
#ifndef ST_PY
#define ST_PY 1
#endif
#define ST_WX (ST_PX + 2 * ST_R)
#if defined(RCL_DTYPE_F64)
typedef double4 st_real4;
#else
typedef float4 st_real4;
#endif

/* v[0 .. WX) = row[-R .. PX + R): consecutive loads, 4-wide vector loads where px is a multiple of 4 and
 * the row's block is aligned to them. */
RCL_FN void st_row_load(real_t *v, __global const real_t *row) {
#pragma unroll
  for (int i = 0; i < ST_R; i++) {
    v[i] = row[i - ST_R];
    v[ST_PX + ST_R + i] = row[ST_PX + i];
  }
#if ST_PX % 4 == 0
  if (((size_t)row & (sizeof(st_real4) - 1)) == 0) {
#pragma unroll
    for (int i = 0; i < ST_PX; i += 4) {
      const st_real4 q = *(__global const st_real4 *)(row + i);
      v[ST_R + i] = q.s0;
      v[ST_R + i + 1] = q.s1;
      v[ST_R + i + 2] = q.s2;
      v[ST_R + i + 3] = q.s3;
    }
    return;
  }
#endif
#pragma unroll
  for (int i = 0; i < ST_PX; i++) v[ST_R + i] = row[i];
}

/* row[0 .. PX) = r[0 .. PX), 4-wide where aligned as above. */
RCL_FN void st_row_store(__global real_t *row, const real_t *r) {
#if ST_PX % 4 == 0
  if (((size_t)row & (sizeof(st_real4) - 1)) == 0) {
#pragma unroll
    for (int i = 0; i < ST_PX; i += 4) *(__global st_real4 *)(row + i) = (st_real4)(r[i], r[i + 1], r[i + 2], r[i + 3]);
    return;
  }
#endif
#pragma unroll
  for (int i = 0; i < ST_PX; i++) row[i] = r[i];
}

/* Whether the block at (x0, y0) and its halo lie inside the grid (the register path). */
#define ST_BLOCK_INTERIOR(x0, y0) \
  ((x0) >= ST_R && (y0) >= ST_R && (x0) + ST_PX + ST_R <= W && (y0) + ST_PY + ST_R <= H)

/* The edge path: every point (x, y) of the block inside the grid, as the task kernel computes it: STMT
 * sets the real_t v, which is stored. */
#define ST_BLOCK_EDGE(x0, y0, STMT)                                                                               \
  for (int j_ = 0; j_ < ST_PY; j_++)                                                                             \
    for (int i_ = 0; i_ < ST_PX; i_++) {                                                                         \
      const int x = (x0) + i_, y = (y0) + j_;                                                                     \
      if (x < W && y < H) {                                                                                       \
        real_t v;                                                                                                 \
        STMT;                                                                                                     \
        out[ooff + (ulong)y * opitch + (ulong)x] = R_CANON(v);                                                    \
      }                                                                                                           \
    }
#endif

/* Loads a work-group's tile plus its halo into t: element (tx, ty) holds the value read at
 * (ox + tx - ST_R, oy + ty - ST_R), for tx < TXH = TX + 2R, ty < TYH = TY + 2R. Rows are read by
 * consecutive work-items (coalesced). Every work-item of the group must call it. */
RCL_FN void st_load_tile(__local real_t *t, int TXH, int TYH, int ox, int oy, __global const real_t *in, ulong ioff,
                         ulong ipitch, int W, int H, int bc, real_t bval) {
  const int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
  const int LX = (int)get_local_size(0), LY = (int)get_local_size(1);
  for (int ty = ly; ty < TYH; ty += LY)
    for (int tx = lx; tx < TXH; tx += LX)
      t[ty * TXH + tx] = st_fetch(in, ioff, ipitch, W, H, bc, bval, ox + tx - ST_R, oy + ty - ST_R);
  barrier(CLK_LOCAL_MEM_FENCE);
}

/* ---- general (2R+1)^2 stencil --------------------------------------------------------------------- */

/* out = w[0]*v(-R,-R) + w[1]*v(-R+1,-R) + ... + w[KK-1]*v(R,R), row-major, summed left to right, each
 * product and sum rounded. GET(dx, dy) is the value at offset (dx, dy). An ordered loop (prelude.cl): the
 * kernel declares RCL_OPAQUE_ZERO(st_z) once. */
#define ST_GENERAL(acc, wt, GET)                                                                                    \
  do {                                                                                                            \
    acc = R_MUL(wt[0], GET(-ST_R, -ST_R));                                                                        \
    RCL_ORDERED_LOOP for (int k_ = 1; k_ < ST_KK; k_++) acc =                                                     \
        R_SEAL(R_ADD(acc, R_MUL(wt[k_], GET(k_ % ST_K - ST_R, k_ / ST_K - ST_R))), st_z);                          \
  } while (0)

#ifndef ST_BLOCKED
__kernel void rcl_stencil_general_plain(ST_GRID_ARGS, __constant real_t *wt) {
  const int x = (int)get_global_id(0), y = (int)get_global_id(1);
  if (x >= W || y >= H) return;
  RCL_OPAQUE_ZERO(st_z);
  real_t acc;
  if (x >= ST_R && y >= ST_R && x + ST_R < W && y + ST_R < H) {
    __global const real_t *p = in + ioff + (ulong)y * ipitch + (ulong)x;
#define ST_GET_DIRECT(dx, dy) p[(long)(dy) * (long)ipitch + (dx)]
    ST_GENERAL(acc, wt, ST_GET_DIRECT);
#undef ST_GET_DIRECT
  } else {
    ST_GENERAL(acc, wt, ST_FETCH);
  }
  out[ooff + (ulong)y * opitch + (ulong)x] = R_CANON(acc);
}

#else
__kernel void rcl_stencil_general_plain(ST_GRID_ARGS, __constant real_t *wt) {
  const int x0 = (int)get_global_id(0) * ST_PX, y0 = (int)get_global_id(1) * ST_PY;
  if (x0 >= W || y0 >= H) return;
  RCL_OPAQUE_ZERO(st_z);
  if (!ST_BLOCK_INTERIOR(x0, y0)) {
    ST_BLOCK_EDGE(x0, y0, ST_GENERAL(v, wt, ST_FETCH))
    return;
  }
  /* win[r] holds row y - R + r of the point row y being computed, columns x0 - R .. x0 + PX + R. */
  real_t win[ST_K][ST_WX], res[ST_PX];
  __global const real_t *p = in + ioff + (ulong)(y0 - ST_R) * ipitch + (ulong)x0;
  __global real_t *o = out + ooff + (ulong)y0 * opitch + (ulong)x0;
#pragma unroll
  for (int r = 0; r < ST_K - 1; r++, p += ipitch) st_row_load(win[r], p);
  for (int j = 0; j < ST_PY; j++, p += ipitch, o += opitch) {
    st_row_load(win[ST_K - 1], p);
#pragma unroll
    for (int i = 0; i < ST_PX; i++) {
#define ST_GET_WIN(dx, dy) win[(dy) + ST_R][i + (dx) + ST_R]
      real_t acc;
      ST_GENERAL(acc, wt, ST_GET_WIN);
#undef ST_GET_WIN
      res[i] = R_CANON(acc);
    }
    st_row_store(o, res);
#pragma unroll
    for (int r = 0; r < ST_K - 1; r++)
#pragma unroll
      for (int i = 0; i < ST_WX; i++) win[r][i] = win[r + 1][i];
  }
}
#endif

/* A work-group computes a tile of (LX*px) x (LY*py) points; work-item (lx, ly) the columns lx + i*LX,
 * i < px, each for the py consecutive rows from ly*py. */
__kernel void rcl_stencil_general_tiled(ST_GRID_ARGS, __constant real_t *wt, int px, int py, __local real_t *t) {
  const int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
  const int TX = (int)get_local_size(0) * px, TY = (int)get_local_size(1) * py;
  const int TXH = TX + 2 * ST_R, TYH = TY + 2 * ST_R;
  const int ox = (int)get_group_id(0) * TX, oy = (int)get_group_id(1) * TY;
  st_load_tile(t, TXH, TYH, ox, oy, in, ioff, ipitch, W, H, bc, bval);
  /* After the barrier nothing else synchronises: work-items past the grid's edge may stop early. */
  const int cy0 = ly * py, y0 = oy + cy0, rows = min(py, H - y0);
  RCL_OPAQUE_ZERO(st_z);
  for (int i = 0; i < px; i++) {
    const int cx = lx + i * (int)get_local_size(0), x = ox + cx;
    if (x >= W) break;
    __global real_t *o = out + ooff + (ulong)y0 * opitch + (ulong)x;
    for (int j = 0; j < rows; j++, o += opitch) {
      __local const real_t *p = t + (cy0 + j + ST_R) * TXH + cx + ST_R;
#define ST_GET_LOCAL(dx, dy) p[(dy) * TXH + (dx)]
      real_t acc;
      ST_GENERAL(acc, wt, ST_GET_LOCAL);
#undef ST_GET_LOCAL
      *o = R_CANON(acc);
    }
  }
}

/* One work-item, plain loops over the rectangle [x0, x1) x [y0, y1). */
__kernel void rcl_stencil_general_task(ST_GRID_ARGS, __constant real_t *wt, int x0, int x1, int y0, int y1) {
  RCL_OPAQUE_ZERO(st_z);
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++) {
      real_t acc;
      ST_GENERAL(acc, wt, ST_FETCH);
      out[ooff + (ulong)y * opitch + (ulong)x] = R_CANON(acc);
    }
}

/* ---- grid copy (zero iterations): bits unchanged, no arithmetic -------------------------------------- */
__kernel void rcl_grid_copy(ST_GRID_ARGS) {
  const int x = (int)get_global_id(0), y = (int)get_global_id(1);
  if (x < W && y < H) out[ooff + (ulong)y * opitch + (ulong)x] = in[ioff + (ulong)y * ipitch + (ulong)x];
}

#if ST_R == 1
/* ---- SHOC Stencil2D nine-point stencil ------------------------------------------------------------- */

/* out = (wc*c + wa*(((N + S) + E) + W)) + wd*(((NE + SE) + NW) + SW), every operation rounded. */
RCL_FN real_t st_nine(real_t wc, real_t wa, real_t wd, real_t nw, real_t n, real_t ne, real_t w, real_t c, real_t e,
                      real_t sw, real_t s, real_t se) {
  return R_ADD(R_ADD(R_MUL(wc, c), R_MUL(wa, R_ADD(R_ADD(R_ADD(n, s), e), w))),
               R_MUL(wd, R_ADD(R_ADD(R_ADD(ne, se), nw), sw)));
}

#define ST_NINE_AT(GET)                                                                                            \
  st_nine(wc, wa, wd, GET(-1, -1), GET(0, -1), GET(1, -1), GET(-1, 0), GET(0, 0), GET(1, 0), GET(-1, 1), GET(0, 1), \
          GET(1, 1))

#ifndef ST_BLOCKED
__kernel void rcl_stencil_nine_plain(ST_GRID_ARGS, real_t wc, real_t wa, real_t wd) {
  const int x = (int)get_global_id(0), y = (int)get_global_id(1);
  if (x >= W || y >= H) return;
  real_t r;
  if (x > 0 && y > 0 && x + 1 < W && y + 1 < H) {
    __global const real_t *p = in + ioff + (ulong)y * ipitch + (ulong)x;
    __global const real_t *up = p - ipitch, *dn = p + ipitch;
    r = st_nine(wc, wa, wd, up[-1], up[0], up[1], p[-1], p[0], p[1], dn[-1], dn[0], dn[1]);
  } else {
    r = ST_NINE_AT(ST_FETCH);
  }
  out[ooff + (ulong)y * opitch + (ulong)x] = R_CANON(r);
}

#else
__kernel void rcl_stencil_nine_plain(ST_GRID_ARGS, real_t wc, real_t wa, real_t wd) {
  const int x0 = (int)get_global_id(0) * ST_PX, y0 = (int)get_global_id(1) * ST_PY;
  if (x0 >= W || y0 >= H) return;
  if (!ST_BLOCK_INTERIOR(x0, y0)) {
    ST_BLOCK_EDGE(x0, y0, v = ST_NINE_AT(ST_FETCH))
    return;
  }
  /* a, b, c: rows y - 1, y, y + 1 of the point row y being computed, columns x0 - 1 .. x0 + PX. */
  real_t a[ST_WX], b[ST_WX], c[ST_WX], res[ST_PX];
  __global const real_t *p = in + ioff + (ulong)(y0 - 1) * ipitch + (ulong)x0;
  __global real_t *o = out + ooff + (ulong)y0 * opitch + (ulong)x0;
  st_row_load(a, p);
  st_row_load(b, p + ipitch);
  p += 2 * ipitch;
  for (int j = 0; j < ST_PY; j++, p += ipitch, o += opitch) {
    st_row_load(c, p);
#pragma unroll
    for (int i = 0; i < ST_PX; i++)
      res[i] = R_CANON(st_nine(wc, wa, wd, a[i], a[i + 1], a[i + 2], b[i], b[i + 1], b[i + 2], c[i], c[i + 1], c[i + 2]));
    st_row_store(o, res);
#pragma unroll
    for (int i = 0; i < ST_WX; i++) {
      a[i] = b[i];
      b[i] = c[i];
    }
  }
}
#endif

/* Tiled as rcl_stencil_general_tiled; each work-item slides a 3x3 register window down its column, so
 * it reads three new values from local memory per point. */
__kernel void rcl_stencil_nine_tiled(ST_GRID_ARGS, real_t wc, real_t wa, real_t wd, int px, int py,
                                     __local real_t *t) {
  const int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
  const int TX = (int)get_local_size(0) * px, TY = (int)get_local_size(1) * py;
  const int TXH = TX + 2, TYH = TY + 2;
  const int ox = (int)get_group_id(0) * TX, oy = (int)get_group_id(1) * TY;
  st_load_tile(t, TXH, TYH, ox, oy, in, ioff, ipitch, W, H, bc, bval);
  /* After the barrier nothing else synchronises: work-items past the grid's edge may stop early. */
  const int cy0 = ly * py, y0 = oy + cy0, rows = min(py, H - y0);
  for (int i = 0; i < px; i++) {
    const int cx = lx + i * (int)get_local_size(0), x = ox + cx;
    if (x >= W) break;
    __local const real_t *p = t + cy0 * TXH + cx; /* the window's top-left: point (cx, cy0) is p[TXH + 1] */
    __global real_t *o = out + ooff + (ulong)y0 * opitch + (ulong)x;
    real_t nw = p[0], n = p[1], ne = p[2];
    real_t w = p[TXH], c = p[TXH + 1], e = p[TXH + 2];
    for (int j = 0; j < rows; j++, o += opitch) {
      __local const real_t *q = p + (j + 2) * TXH;
      const real_t sw = q[0], s = q[1], se = q[2];
      *o = R_CANON(st_nine(wc, wa, wd, nw, n, ne, w, c, e, sw, s, se));
      nw = w;
      n = c;
      ne = e;
      w = sw;
      c = s;
      e = se;
    }
  }
}

__kernel void rcl_stencil_nine_task(ST_GRID_ARGS, real_t wc, real_t wa, real_t wd, int x0, int x1, int y0, int y1) {
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++) out[ooff + (ulong)y * opitch + (ulong)x] = R_CANON(ST_NINE_AT(ST_FETCH));
}

/* ---- red-black SOR ---------------------------------------------------------------------------------
 * A half-sweep updates, in place, every point (x, y) with (x + y) % 2 == colour. Its four neighbours have
 * the other colour (or are the point itself: clamped edges, periodic size 1; the host refuses periodic odd
 * sizes above 1), so no point a half-sweep writes is read by another point of it, and every variant and
 * order gives the same bits. */

/* SciMark's update: t = ((N + S) + W) + E [- b];  u' = c1*t + c0*u with c1 = omega/4, c0 = 1 - omega. */
RCL_FN real_t st_sor(real_t c1, real_t c0, real_t n, real_t s, real_t w, real_t e, real_t u, int has_b, real_t b) {
  real_t t = R_ADD(R_ADD(R_ADD(n, s), w), e);
  if (has_b) t = R_SUB(t, b);
  return R_ADD(R_MUL(c1, t), R_MUL(c0, u));
}

/* r = (((N + S) + W) + E [- b]) - 4*u */
RCL_FN real_t st_residual(real_t n, real_t s, real_t w, real_t e, real_t u, int has_b, real_t b) {
  real_t t = R_ADD(R_ADD(R_ADD(n, s), w), e);
  if (has_b) t = R_SUB(t, b);
  return R_SUB(t, R_MUL((real_t)4, u));
}

#define SOR_ARGS                                                                                                  \
  __global real_t *g, ulong goff, ulong gpitch, int W, int H, int bc, real_t bval, __global const real_t *rhs,      \
      ulong roff, ulong rpitch, int has_b
#define SOR_FETCH(dx, dy) st_fetch(g, goff, gpitch, W, H, bc, bval, x + (dx), y + (dy))
#define SOR_B (has_b ? rhs[roff + (ulong)y * rpitch + (ulong)x] : (real_t)0)

/* One work-item per point of the colour: x = 2*gid0 + ((y + colour) & 1). */
__kernel void rcl_sor_plain(SOR_ARGS, real_t c1, real_t c0, int colour) {
  const int y = (int)get_global_id(1), x = 2 * (int)get_global_id(0) + ((y + colour) & 1);
  if (x >= W || y >= H) return;
  const ulong i = goff + (ulong)y * gpitch + (ulong)x;
  const real_t u = g[i];
  g[i] = R_CANON(st_sor(c1, c0, SOR_FETCH(0, -1), SOR_FETCH(0, 1), SOR_FETCH(-1, 0), SOR_FETCH(1, 0), u, has_b, SOR_B));
}

/* The group's tile of (LX*px) x (LY*py) points plus halo goes to local memory first. Halo points of the
 * colour being updated that lie outside the tile belong to other groups, which write them now; they are
 * never used (see above), so they are not read either. */
__kernel void rcl_sor_tiled(SOR_ARGS, real_t c1, real_t c0, int colour, int px, int py, __local real_t *t) {
  const int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
  const int LX = (int)get_local_size(0), LY = (int)get_local_size(1);
  const int TX = LX * px, TY = LY * py, TXH = TX + 2, TYH = TY + 2;
  const int ox = (int)get_group_id(0) * TX, oy = (int)get_group_id(1) * TY;
  for (int ty = ly; ty < TYH; ty += LY)
    for (int tx = lx; tx < TXH; tx += LX) {
      int sx = ox + tx - 1, sy = oy + ty - 1;
      real_t v = bval;
      if (st_source(&sx, &sy, W, H, bc)) {
        int inside = sx >= ox && sx < ox + TX && sy >= oy && sy < oy + TY;
        v = (inside || ((sx + sy) & 1) != colour) ? g[goff + (ulong)sy * gpitch + (ulong)sx] : (real_t)0;
      }
      t[ty * TXH + tx] = v;
    }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int i = 0; i < px; i++) {
    const int cx = lx + i * LX, x = ox + cx;
    for (int j = 0; j < py; j++) {
      const int cy = ly * py + j, y = oy + cy;
      if (x >= W || y >= H || ((x + y) & 1) != colour) continue;
      __local const real_t *p = t + (cy + 1) * TXH + cx + 1;
      g[goff + (ulong)y * gpitch + (ulong)x] = R_CANON(st_sor(c1, c0, p[-TXH], p[TXH], p[-1], p[1], p[0], has_b, SOR_B));
    }
  }
}

/* One work-item: the colour's points of rows [y0, y1), columns [x0, x1). */
__kernel void rcl_sor_task(SOR_ARGS, real_t c1, real_t c0, int colour, int x0, int x1, int y0, int y1) {
  for (int y = y0; y < y1; y++)
    for (int x = x0 + ((x0 + y + colour) & 1); x < x1; x += 2) {
      const ulong i = goff + (ulong)y * gpitch + (ulong)x;
      const real_t u = g[i];
      g[i] = R_CANON(st_sor(c1, c0, SOR_FETCH(0, -1), SOR_FETCH(0, 1), SOR_FETCH(-1, 0), SOR_FETCH(1, 0), u, has_b, SOR_B));
    }
}

/* The residual of every point into res[y * W + x] (contiguous, for the reduction). */
__kernel void rcl_sor_residual_plain(SOR_ARGS, __global real_t *res) {
  const int x = (int)get_global_id(0), y = (int)get_global_id(1);
  if (x >= W || y >= H) return;
  const real_t u = g[goff + (ulong)y * gpitch + (ulong)x];
  res[(ulong)y * (ulong)W + (ulong)x] =
      R_CANON(st_residual(SOR_FETCH(0, -1), SOR_FETCH(0, 1), SOR_FETCH(-1, 0), SOR_FETCH(1, 0), u, has_b, SOR_B));
}

__kernel void rcl_sor_residual_task(SOR_ARGS, __global real_t *res, int x0, int x1, int y0, int y1) {
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++) {
      const real_t u = g[goff + (ulong)y * gpitch + (ulong)x];
      res[(ulong)y * (ulong)W + (ulong)x] =
          R_CANON(st_residual(SOR_FETCH(0, -1), SOR_FETCH(0, 1), SOR_FETCH(-1, 0), SOR_FETCH(1, 0), u, has_b, SOR_B));
    }
}
#endif
