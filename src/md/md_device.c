/* The OpenCL backend of the MD family (cl/md.cl): device buffers, launch geometry, the cell-list and
 * neighbour-list rebuild, and the per-step sequence. Launch geometry (work-group sizes, tile size,
 * task chunks) never changes a bit; it is checked against each kernel's limit and against the loop
 * limit of drivers that have one (llvmpipe). */
#include <math.h>
#include <stdlib.h>

#include "md/md_internal.h"

#define MD_STATUS_WORDS 10 /* cl/md.cl */
#define MD_ST_ERRSTEP 6
#define MD_ST_STEP 7
#define MD_ST_BUILDS 8
#define MD_SYNC_DEFAULT 32 /* steps between status reads (REPROCL_MD_SYNC overrides) */
#define MD_SYNC_MAX 4096
#define MD_PENDING 256 /* timed launches not yet accounted: several windows' worth, so the host rarely waits */
#define ALLPAIRS_MAX_ATOMS 16384

enum {
  K_FORCE,
  K_FORCE_EV,
  K_INT1,
  K_INT2,
  K_COUNT, /* counts and, by its last work-group, the scan */
  K_FILL,
  K_MOVE,
  K_NEIGH,
  K_THERMO,
  K_GATHER, /* the kernels of a decomposed simulation's local one (rcl__md_dev_link) */
  K_SCATTER,
  K_OWNED,
  K_N
};

/* One logged operation of a window: a step, or forces outside a step (the last of a window). */
typedef struct {
  unsigned char step, ev, complete;
} md_op;

/* The snapshot of a window's start: pos, vel, tag, force, pos0, ncount, nlist, status. */
enum { SN_POS, SN_VEL, SN_TAG, SN_FORCE, SN_POS0, SN_NCOUNT, SN_NLIST, SN_STATUS, MD_NSNAP };

typedef struct {
  rcl_context *ctx;
  cl_command_queue q;
  rcl_chain ord; /* every command follows the one before: lazy (no events) on an in-order queue */
  int native;
  size_t es;     /* bytes of a real */
  size_t stride; /* n rounded up to 64: the pitch of the per-atom arrays */
  /* the state in the current order; the build sorts into pos0 (positions at the last build), vel_s and
   * tag_s, and copies them back */
  cl_mem pos, vel, tag, vel_s, tag_s, pos0, cellof, cellnew;
  cl_mem force, ev, status, coef, ccount, cstart, cfill, members, nlist, ncount, partials;
  size_t cap; /* neighbour slots per atom */
  /* Kernel arguments are set once: args_ok has bit k where kernel k's arguments are current (cleared when
   * the lists, the time step or the tracked positions change); per step only seq (and int1's kicks). */
  unsigned args_ok;
  cl_uint int1_kicks, int1_check, int1_build;
  /* Build kernels launched on every build_every-th step only (a power of two; 1: every step, the default;
   * REPROCL_MD_BUILD_EVERY), a rebuild asked for early, beyond early * skin/2 (REPROCL_MD_EARLY; 1 with
   * build_every 1), and a window whose lists went stale run again with builds every step (cl/md.cl). */
  size_t build_every;
  double early;
  size_t replays[2]; /* windows run again: lists gone stale, lists overflowed (rcl__md_dev_replays) */
  int nc[3];
  size_t ncells;
  double cinv[3];
  int lists; /* the path uses neighbour lists */
  int need_build;
  int pending_kick; /* the last step's second half kick is deferred into the next step's first launch */
  cl_kernel k[K_N];
  size_t wmax[K_N]; /* CL_KERNEL_WORK_GROUP_SIZE of each */
  size_t W, WB, WS, WT, thermo_groups;
  size_t budget;
  /* Kernel timing on a profiling queue: the events of launches not yet accounted (processed once the queue
   * has passed them). rcl_md_get_stats reports the times (report) with rcl_md_options.kernel_times and for a
   * decomposed simulation's local one (rcl__md_dev_link: the split and MPI breakdowns; their steps wait for
   * the exchange anyway). The creation's launches are timed either way (a few events, once); the steps
   * only where the times are reported: otherwise a launch gets no event (one costs ~8 us per launch on
   * NVIDIA's OpenCL) unless the tuner captures it. */
  int profiling, report;
  cl_event pending[MD_PENDING];
  int pending_cat[MD_PENDING];
  int npending;
  double seconds[3]; /* force, build, integrate */
  uint64_t pairs;
  cl_int st[MD_STATUS_WORDS]; /* the status at the last read */
  /* The host reads the status only every sync_every steps (and before anything reads results): the window
   * since the last read is logged, and with lists its starting state kept on the device (snapshot), so that
   * a neighbour-list overflow seen late is undone — slots grown, the snapshot restored, the window run again
   * (the same bits: no result depends on the scheduling). */
  size_t sync_every, nlog;
  md_op *log;
  cl_mem snap[MD_NSNAP];
  size_t snap_cap, snap_step;
  int snap_kick, snap_build;
  uint32_t builds_seen; /* status[8] at the last read */
  /* a decomposed simulation's local one (rcl__md_dev_link): internal indices of the atoms sent and of the
   * ghosts, and their positions */
  cl_mem sidx, gidx, sbuf, gbuf, oidx, obuf; /* oidx, obuf: the owned atoms' internal indices, their state */
  size_t link_cap[6];                        /* their sizes in bytes, kept (grown, never shrunk) between reloads */
  size_t nsend, nghost, nown;
  /* host staging of the uploads and state reads, kept (grown, never shrunk) between calls */
  void *host;
  size_t host_cap;
} dev_state;

enum { CAT_FORCE, CAT_BUILD, CAT_INTEGRATE, CAT_NONE };

/* Adds the device time of finished launches to their category and releases their events; launches still
 * running stay pending. */
static void account(dev_state *s) {
  int kept = 0;
  for (int k = 0; k < s->npending; k++) {
    cl_int done = CL_QUEUED;
    clGetEventInfo(s->pending[k], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof done, &done, NULL);
    if (done > CL_COMPLETE) { /* queued, submitted or running */
      s->pending[kept] = s->pending[k];
      s->pending_cat[kept++] = s->pending_cat[k];
      continue;
    }
    cl_ulong a = 0, b = 0;
    if (clGetEventProfilingInfo(s->pending[k], CL_PROFILING_COMMAND_START, sizeof a, &a, NULL) == CL_SUCCESS &&
        clGetEventProfilingInfo(s->pending[k], CL_PROFILING_COMMAND_END, sizeof b, &b, NULL) == CL_SUCCESS && b >= a)
      s->seconds[s->pending_cat[k]] += 1e-9 * (double)(b - a);
    clReleaseEvent(s->pending[k]);
  }
  s->npending = kept;
}

/* Waits for every pending launch and accounts it. After clFinish alone, Rusticl 22.3 still reports most
 * events as not complete (only waiting on them updates their status), so account() would keep them all
 * and launch() would store one too many; what still seems unfinished after the wait is dropped unaccounted. */
static void account_all(dev_state *s) {
  if (s->npending) clWaitForEvents((cl_uint)s->npending, s->pending);
  account(s);
  for (int k = 0; k < s->npending; k++) clReleaseEvent(s->pending[k]);
  s->npending = 0;
}

/* Whether the queue records kernel times. */
static int queue_profiles(const dev_state *s) {
  cl_command_queue_properties qp = 0;
  return clGetCommandQueueInfo(s->q, CL_QUEUE_PROPERTIES, sizeof qp, &qp, NULL) == CL_SUCCESS &&
         (qp & CL_QUEUE_PROFILING_ENABLE);
}

static const char *const knames[K_N] = {"",
                                        "",
                                        "md_integrate1",
                                        "md_integrate2",
                                        "md_cell_count",
                                        "md_cell_fill",
                                        "md_sort_move",
                                        "md_neigh_build",
                                        "md_thermo_partials",
                                        "md_pos_gather",
                                        "md_pos_scatter",
                                        "md_thermo_owned"};

static const char *force_kernel_name(rcl_md_path p) {
  return p == RCL_MD_PATH_SYMMETRIC  ? "md_force_symmetric"
         : p == RCL_MD_PATH_ALLPAIRS ? "md_force_allpairs"
         : p == RCL_MD_PATH_TASK     ? "md_force_task"
                                     : "md_force_gather";
}

static size_t ceil_div(size_t a, size_t b) { return a / b + (a % b != 0); }

/* ---- kernel arguments of the dtype ----------------------------------------------------------------- */

typedef struct {
  unsigned char b[32];
  size_t size;
} md_arg;

static md_arg arg_real(const rcl_md *md, double v) {
  md_arg a;
  memset(&a, 0, sizeof a);
  a.size = rcl_dtype_size(md->dtype);
  md_put_real(a.b, 0, md->dtype, v);
  return a;
}

static md_arg arg_real4(const rcl_md *md, double x, double y, double z) {
  md_arg a;
  memset(&a, 0, sizeof a);
  a.size = 4 * rcl_dtype_size(md->dtype);
  md_put_real(a.b, 0, md->dtype, x);
  md_put_real(a.b, 1, md->dtype, y);
  md_put_real(a.b, 2, md->dtype, z);
  return a;
}

/* The box as the kernels see it (contract md.lj): lo, hi and len = hi - lo rounded to the dtype; half =
 * len / 2 (exact) on periodic axes, +inf on open ones. */
static double rnd(const rcl_md *md, double v) { return md->dtype == RCL_F32 ? (double)(float)v : v; }
static md_arg arg_lo(const rcl_md *md) { return arg_real4(md, md->lo[0], md->lo[1], md->lo[2]); }
static md_arg arg_hi(const rcl_md *md) { return arg_real4(md, md->hi[0], md->hi[1], md->hi[2]); }
static md_arg arg_len(const rcl_md *md) { return arg_real4(md, md->len[0], md->len[1], md->len[2]); }
static md_arg arg_half(const rcl_md *md) {
  double h[3];
  for (int d = 0; d < 3; d++) h[d] = md->periodic[d] ? 0.5 * rnd(md, md->len[d]) : INFINITY;
  return arg_real4(md, h[0], h[1], h[2]);
}
/* The escape bounds of contract md.nve, lo - len * 0.5 and hi + len * 0.5, evaluated in the dtype. */
static void escape_bounds(const rcl_md *md, md_arg *elo, md_arg *ehi) {
  double a[3], b[3];
  for (int d = 0; d < 3; d++) {
    if (md->dtype == RCL_F32) {
      float lo = (float)md->lo[d], hi = (float)md->hi[d], len = (float)md->len[d];
      a[d] = lo - len * 0.5f;
      b[d] = hi + len * 0.5f;
    } else {
      a[d] = md->lo[d] - md->len[d] * 0.5;
      b[d] = md->hi[d] + md->len[d] * 0.5;
    }
  }
  *elo = arg_real4(md, a[0], a[1], a[2]);
  *ehi = arg_real4(md, b[0], b[1], b[2]);
}

static cl_uint periodic_mask(const rcl_md *md) {
  return (cl_uint)((md->periodic[0] ? 1u : 0u) | (md->periodic[1] ? 2u : 0u) | (md->periodic[2] ? 4u : 0u));
}

#define MEM(x) sizeof(cl_mem), &(x)
#define U32(x) sizeof(cl_uint), &(x)
#define ARG(a) (a).size, (a).b

/* One uint argument of a kernel whose others are already set. */
static int set_u32(dev_state *s, int k, cl_uint index, cl_uint v) {
  cl_int err = clSetKernelArg(s->k[k], index, sizeof v, &v);
  return err == CL_SUCCESS
             ? 0
             : rcl__fail_cl(err, "clSetKernelArg(%s, %u)", k <= K_FORCE_EV ? "MD force" : knames[k], index);
}

/* Whether kernel k's arguments are current; args_done marks them so after they were all set (rc 0). */
static int args_current(const dev_state *s, int k) { return (s->args_ok >> k) & 1u; }
static int args_done(dev_state *s, int k, int rc) {
  if (!rc) s->args_ok |= 1u << k;
  return rc;
}

/* ---- launching ------------------------------------------------------------------------------------- */

static int launch(dev_state *s, int k, const char *name, size_t items, size_t local) {
  size_t global = ceil_div(items ? items : 1, local) * local;
  int cat = k <= K_FORCE_EV ? CAT_FORCE : k <= K_INT2 ? CAT_INTEGRATE : k <= K_NEIGH ? CAT_BUILD : CAT_NONE;
  int timed = s->profiling && cat != CAT_NONE;
  if (timed && s->npending == MD_PENDING) account(s); /* the finished ones, without waiting */
  if (timed && s->npending == MD_PENDING) account_all(s);
  /* Through a chain of one that follows s->ord: with an event where profiling times it, the tuner
   * captures it or the queue runs out of order; lazy (no event) otherwise. */
  rcl_queue_args qa = rcl__chain_args(&s->ord);
  rcl_chain ch;
  rcl__chain_begin(&ch, s->q, &qa);
  int rc = !timed && s->ord.lazy ? rcl__chain_lazy(&ch, s->ctx, NULL) : 0;
  if (!rc) rc = rcl__chain_kernel(&ch, s->k[k], name, global, local);
  if (rc) return rc;
  cl_event ev = ch.last;
  if (timed && ev && clRetainEvent(ev) != CL_SUCCESS) ev = NULL;
  rcl__chain_end(&ch, &qa); /* the event goes to s->ord, or is released where that is lazy */
  rcl__chain_adopt(&s->ord, 0);
  if (timed && ev) {
    s->pending[s->npending] = ev;
    s->pending_cat[s->npending++] = cat;
  }
  return 0;
}

static int read_status(dev_state *s, cl_int st[MD_STATUS_WORDS]) {
  int rc = rcl__chain_read(&s->ord, s->status, 0, MD_STATUS_WORDS * sizeof(cl_int), st, NULL, "MD status");
  if (!rc && s->npending) account(s); /* the read followed every earlier launch */
  return rc;
}

/* Sets the words of bytes of buf from offset (multiples of 4) to value, after the commands before it. */
static int fill_int(dev_state *s, cl_mem buf, size_t offset, size_t bytes, cl_int value) {
  rcl_queue_args qa = rcl__chain_args(&s->ord);
  cl_int err = clEnqueueFillBuffer(s->q, buf, &value, sizeof value, offset, bytes, qa.num_events_in_wait_list,
                                   qa.event_wait_list, qa.event);
  if (err != CL_SUCCESS) return rcl__fail_cl(err, "clEnqueueFillBuffer(%zu bytes at %zu)", bytes, offset);
  return rcl__chain_adopt(&s->ord, 0);
}

/* Errors the kernels flagged (the capacity bit is handled by dev_sync, not an error), named with the step
 * the first of them happened at, as the host reference names it (md->step while that step runs): status[6]
 * holds the low 32 bits of one more, at most md->step + 1. */
static int check_errors(rcl_md *md, const cl_int st[MD_STATUS_WORDS], const char *where) {
  unsigned bits = (unsigned)st[1] & ~(MD_ERR_CAPACITY | MD_ERR_STALE);
  if (!bits) return 0;
  size_t now = md->step + 1, then = now - (uint32_t)((uint32_t)now - (uint32_t)st[MD_ST_ERRSTEP]);
  rcl_md at = *md;
  at.step = then ? then - 1 : 0;
  if (bits & MD_ERR_CELLS)
    return rcl__fail(RCL_ERR_UNSUPPORTED,
                     "a cell holds %d atoms %s (step %zu): scanning 27 such cells exceeds %s's limit of %llu loop "
                     "iterations per work-item (the system is too dense or too clumped for this device)",
                     st[3], where, at.step, md->ctx->profile.device_name,
                     (unsigned long long)md->ctx->profile.loop_iteration_limit);
  return md_status_error(&at, bits, where);
}

/* status[7], the step errors are recorded at: md->step + 1 (integration sets it for each step). */
static int set_step(rcl_md *md, dev_state *s) {
  return fill_int(s, s->status, MD_ST_STEP * sizeof(cl_int), sizeof(cl_int), (cl_int)(uint32_t)(md->step + 1));
}

/* ---- neighbour lists ------------------------------------------------------------------------------ */

static int alloc_lists(rcl_md *md, dev_state *s, size_t cap) {
  if (s->nlist) clReleaseMemObject(s->nlist);
  s->nlist = NULL;
  s->cap = cap;
  s->args_ok = 0;
  size_t bytes;
  int rc = rcl__mul_size(&bytes, s->stride * 4, cap, "neighbour list");
  if (!rc) rc = rcl__buffer_create(&s->nlist, md->ctx, CL_MEM_READ_WRITE, bytes, NULL, "neighbour list");
  return rc;
}

/* The arguments of the build kernels (cl/md.cl) for step seq. */
static int set_build_args(rcl_md *md, dev_state *s, cl_uint seq) {
  cl_uint n = (cl_uint)md->n, nc_total = (cl_uint)s->ncells, per = periodic_mask(md),
          half = md->path == RCL_MD_PATH_SYMMETRIC, stride = (cl_uint)s->stride, cap = (cl_uint)s->cap;
  /* Work-items loop over up to 27 cells of the largest occupancy: beyond the driver's loop limit the lists
   * would be cut short silently, so a larger cell is an error. */
  cl_int maxcell = s->budget == SIZE_MAX || (s->budget - 64) / 27 > INT32_MAX ? INT32_MAX
                   : s->budget < 64                                           ? -1
                                                                              : (cl_int)((s->budget - 64) / 27);
  cl_int4 nc = {{s->nc[0], s->nc[1], s->nc[2], 0}};
  md_arg lo = arg_lo(md), cinv = arg_real4(md, s->cinv[0], s->cinv[1], s->cinv[2]), len = arg_len(md),
         hh = arg_half(md), rcs2 = arg_real(md, (md->cutoff + md->skin) * (md->cutoff + md->skin));
  int rc = rcl__set_args(s->k[K_COUNT], knames[K_COUNT], 14, MEM(s->pos), U32(n), ARG(lo), ARG(cinv), sizeof nc, &nc,
                         MEM(s->cellof), MEM(s->ccount), MEM(s->cstart), MEM(s->cfill), U32(nc_total), MEM(s->status),
                         U32(seq), sizeof maxcell, &maxcell, 2 * s->WS * sizeof(cl_int), NULL);
  if (!rc)
    rc = rcl__set_args(s->k[K_FILL], knames[K_FILL], 7, MEM(s->cellof), U32(n), MEM(s->cstart), MEM(s->cfill),
                       MEM(s->members), MEM(s->status), U32(seq));
  if (!rc)
    rc = rcl__set_args(s->k[K_MOVE], knames[K_MOVE], 13, MEM(s->pos), MEM(s->vel), MEM(s->tag), MEM(s->cellof),
                       MEM(s->cstart), MEM(s->members), U32(n), MEM(s->pos0), MEM(s->vel_s), MEM(s->tag_s),
                       MEM(s->cellnew), MEM(s->status), U32(seq));
  if (!rc)
    rc = rcl__set_args(s->k[K_NEIGH], knames[K_NEIGH], 21, MEM(s->pos0), MEM(s->cellnew), MEM(s->cstart), U32(n),
                       sizeof nc, &nc, U32(per), ARG(len), ARG(hh), ARG(rcs2), U32(half), U32(stride), U32(cap),
                       MEM(s->nlist), MEM(s->ncount), MEM(s->status), U32(seq), MEM(s->vel_s), MEM(s->tag_s),
                       MEM(s->pos), MEM(s->vel), MEM(s->tag));
  return rc;
}

/* The build kernels' argument index of seq, the only argument that changes from step to step. */
static const struct {
  int k;
  cl_uint arg;
} build_seq_arg[] = {{K_COUNT, 11}, {K_FILL, 6}, {K_MOVE, 12}, {K_NEIGH, 15}};
#define MD_NBUILD 4 /* build kernels */

/* The build of step seq (see cl/md.cl): renumbers the atoms in (cell, tag) order and builds the neighbour
 * lists. Every kernel returns at once unless status[0] is seq: launched every step, it runs only on the
 * steps whose displacement test asked for it (or when the host forced it). Overflowing slots are flagged
 * in the status (dev_sync grows them). */
static int launch_build(rcl_md *md, dev_state *s, cl_uint seq) {
  int rc = 0;
  if (!args_current(s, K_COUNT)) { /* first, and after the lists grew: every argument of the four */
    rc = args_done(s, K_COUNT, set_build_args(md, s, seq));
  } else {
    for (size_t i = 0; i < MD_NBUILD && !rc; i++) rc = set_u32(s, build_seq_arg[i].k, build_seq_arg[i].arg, seq);
  }
  cl_uint n = (cl_uint)md->n;
  for (size_t i = 0; i < MD_NBUILD && !rc; i++) {
    int k = build_seq_arg[i].k;
    rc = launch(s, k, knames[k], n, k == K_COUNT ? s->WS : s->WB);
  }
  return rc;
}

/* ---- forces ----------------------------------------------------------------------------------------- */

/* Every argument of force kernel k (the task path's chunk bounds are set per launch). */
static int set_force_args(rcl_md *md, dev_state *s, int k) {
  const char *name = force_kernel_name(md->path);
  cl_uint n = (cl_uint)md->n, stride = (cl_uint)s->stride, zero = 0;
  md_arg rc2 = arg_real(md, md->cutoff * md->cutoff), len = arg_len(md), hh = arg_half(md);
  if (md->path == RCL_MD_PATH_ALLPAIRS)
    return rcl__set_args(s->k[k], name, 11, MEM(s->pos), U32(n), U32(stride), MEM(s->coef), ARG(rc2), ARG(len), ARG(hh),
                         MEM(s->force), MEM(s->ev), MEM(s->status), s->W * 4 * s->es, NULL);
  if (md->path == RCL_MD_PATH_TASK)
    return rcl__set_args(s->k[k], name, 13, MEM(s->pos), MEM(s->nlist), MEM(s->ncount), U32(stride), U32(zero),
                         U32(zero), MEM(s->coef), ARG(rc2), ARG(len), ARG(hh), MEM(s->force), MEM(s->ev),
                         MEM(s->status));
  return rcl__set_args(s->k[k], name, 12, MEM(s->pos), MEM(s->nlist), MEM(s->ncount), U32(stride), U32(n), MEM(s->coef),
                       ARG(rc2), ARG(len), ARG(hh), MEM(s->force), MEM(s->ev), MEM(s->status));
}

static int launch_forces(rcl_md *md, dev_state *s, int ev) {
  int k = ev ? K_FORCE_EV : K_FORCE, rc = 0;
  const char *name = force_kernel_name(md->path);
  if (s->lists && s->need_build) { /* the creation's build, forced */
    cl_uint seq = (cl_uint)md->step;
    if ((rc = fill_int(s, s->status, 0, sizeof(cl_int), (cl_int)seq)) != 0 || (rc = launch_build(md, s, seq)) != 0)
      return rc;
    s->need_build = 0;
  }
  if (!args_current(s, k) && (rc = args_done(s, k, set_force_args(md, s, k))) != 0) return rc;
  if (md->path == RCL_MD_PATH_TASK) {
    /* Chunks small enough for the driver's loop limit: an atom costs up to cap + 1 iterations. */
    size_t chunk = s->budget == SIZE_MAX ? md->n : (s->budget - 64) / (s->cap + 2);
    if (chunk == 0) chunk = 1;
    for (size_t first = 0; first < md->n && !rc; first += chunk) {
      rc = set_u32(s, k, 4, (cl_uint)first);
      if (!rc) rc = set_u32(s, k, 5, (cl_uint)(first + chunk < md->n ? first + chunk : md->n));
      if (!rc) rc = launch(s, k, name, 1, 1);
    }
    return rc;
  }
  if (md->path == RCL_MD_PATH_SYMMETRIC) rc = fill_int(s, s->force, 0, 3 * s->stride * 8, 0);
  return rc ? rc : launch(s, k, name, md->n, s->W);
}

/* ---- integration ------------------------------------------------------------------------------------ */

/* The step whose build kernels serve a rebuild asked for at step seq: seq itself, or the next multiple of
 * build_every (a power of two, so the low 32 bits of the step count wrap consistently). */
static cl_uint build_step(const dev_state *s, cl_uint seq) {
  cl_uint m = (cl_uint)s->build_every;
  return m <= 1 ? seq : (cl_uint)(seq + m - 1u) & ~(m - 1u);
}

/* Every argument of md_integrate1. */
static int set_int1_args(rcl_md *md, dev_state *s, cl_uint check, cl_uint kicks, cl_uint seq) {
  cl_uint n = (cl_uint)md->n, stride = (cl_uint)s->stride, per = periodic_mask(md);
  md_arg dtv = arg_real(md, md->dt), lo = arg_lo(md), hi = arg_hi(md), len = arg_len(md), hh = arg_half(md),
         hs2 = arg_real(md, 0.25 * md->skin * md->skin), elo, ehi;
  md_arg early2 = arg_real(md, s->early * s->early * 0.25 * md->skin * md->skin);
  escape_bounds(md, &elo, &ehi);
  s->int1_kicks = kicks;
  s->int1_check = check;
  s->int1_build = build_step(s, seq);
  return rcl__set_args(s->k[K_INT1], knames[K_INT1], 22, MEM(s->pos), MEM(s->vel), MEM(s->force), MEM(s->pos0), U32(n),
                       U32(stride), MEM(s->coef), ARG(dtv), ARG(lo), ARG(hi), ARG(len), ARG(hh), ARG(elo), ARG(ehi),
                       U32(per), U32(check), ARG(hs2), U32(kicks), U32(seq), MEM(s->status), U32(s->int1_build),
                       ARG(early2));
}

/* The first half of step seq (md_integrate1): the deferred half kick if any, half kick, drift, with check the
 * displacement test (a rebuild request for seq in status[0]). Per step only seq is set (kicks and check
 * where they changed). */
static int launch_int1(rcl_md *md, dev_state *s, cl_uint check, cl_uint seq) {
  cl_uint kicks = s->pending_kick ? 2u : 1u;
  int rc = 0;
  if (!args_current(s, K_INT1)) {
    rc = args_done(s, K_INT1, set_int1_args(md, s, check, kicks, seq));
  } else {
    if (kicks != s->int1_kicks && !(rc = set_u32(s, K_INT1, 17, kicks))) s->int1_kicks = kicks;
    if (!rc && check != s->int1_check && !(rc = set_u32(s, K_INT1, 15, check))) s->int1_check = check;
    if (!rc) rc = set_u32(s, K_INT1, 18, seq);
    cl_uint b = build_step(s, seq);
    if (!rc && b != s->int1_build && !(rc = set_u32(s, K_INT1, 20, b))) s->int1_build = b;
  }
  if (!rc) rc = launch(s, K_INT1, knames[K_INT1], md->n, s->WB);
  s->pending_kick = 0;
  return rc;
}

/* The second half kick (md_integrate2), or with complete = 0 deferred into the next step's first launch. */
static int launch_int2(rcl_md *md, dev_state *s, int complete) {
  if (!complete) {
    s->pending_kick = 1;
    return 0;
  }
  cl_uint n = (cl_uint)md->n, stride = (cl_uint)s->stride;
  int rc = 0;
  if (!args_current(s, K_INT2))
    rc = args_done(s, K_INT2,
                   rcl__set_args(s->k[K_INT2], knames[K_INT2], 7, MEM(s->pos), MEM(s->vel), MEM(s->force), U32(n),
                                 U32(stride), MEM(s->coef), MEM(s->status)));
  return rc ? rc : launch(s, K_INT2, knames[K_INT2], n, s->WB);
}

/* One step: the first half (md_integrate1, which also decides on the device whether this step rebuilds), the
 * build (returns at once unless it did), the forces and the second half kick (or deferred). No host wait. */
static int run_step(rcl_md *md, dev_state *s, int ev, int complete) {
  cl_uint seq = (cl_uint)(md->step + 1);
  int rc = launch_int1(md, s, (cl_uint)s->lists, seq);
  if (!rc && s->lists && build_step(s, seq) == seq) rc = launch_build(md, s, seq);
  if (!rc) rc = launch_forces(md, s, ev);
  return rc ? rc : launch_int2(md, s, complete);
}

/* Copies bytes of buffer a into b on the device, after the commands before it. */
static int copy_buffer(dev_state *s, cl_mem a, cl_mem b, size_t bytes) {
  rcl_queue_args qa = rcl__chain_args(&s->ord);
  cl_int err = clEnqueueCopyBuffer(s->q, a, b, 0, 0, bytes, qa.num_events_in_wait_list, qa.event_wait_list, qa.event);
  if (err != CL_SUCCESS) return rcl__fail_cl(err, "clEnqueueCopyBuffer(MD snapshot, %zu bytes)", bytes);
  return rcl__chain_adopt(&s->ord, 0);
}

/* The state buffers a snapshot keeps, and their sizes (the lists at snap_cap slots). */
static void snap_buffers(dev_state *s, cl_mem live[MD_NSNAP], size_t bytes[MD_NSNAP]) {
  size_t p4 = s->stride * 4 * s->es, acc = s->native ? s->es : 8;
  cl_mem l[MD_NSNAP] = {s->pos, s->vel, s->tag, s->force, s->pos0, s->ncount, s->nlist, s->status};
  size_t b[MD_NSNAP] = {p4,
                        p4,
                        s->stride * 4,
                        3 * s->stride * acc,
                        p4,
                        s->stride * 4,
                        s->snap_cap * s->stride * 4,
                        MD_STATUS_WORDS * sizeof(cl_int)};
  memcpy(live, l, sizeof l);
  memcpy(bytes, b, sizeof b);
}

/* The window's starting state kept on the device (with lists only: nothing else can make a window run
 * again), the host's part of it in s. */
static int take_snapshot(rcl_md *md, dev_state *s) {
  if (!s->lists) return 0;
  if (s->snap_cap != s->cap && s->snap[SN_NLIST]) {
    clReleaseMemObject(s->snap[SN_NLIST]);
    s->snap[SN_NLIST] = NULL;
  }
  s->snap_cap = s->cap;
  cl_mem live[MD_NSNAP];
  size_t bytes[MD_NSNAP];
  snap_buffers(s, live, bytes);
  int rc = 0;
  for (int k = 0; k < MD_NSNAP && !rc; k++) {
    if (!s->snap[k]) rc = rcl__buffer_create(&s->snap[k], md->ctx, CL_MEM_READ_WRITE, bytes[k], NULL, "MD snapshot");
    if (!rc) rc = copy_buffer(s, live[k], s->snap[k], bytes[k]);
  }
  s->snap_step = md->step;
  s->snap_kick = s->pending_kick;
  s->snap_build = s->need_build;
  return rc;
}

/* Logs an operation of the window, the snapshot taken at its start. */
static int log_op(rcl_md *md, dev_state *s, int step, int ev, int complete) {
  int rc = s->nlog ? 0 : take_snapshot(md, s);
  s->log[s->nlog++] = (md_op){(unsigned char)step, (unsigned char)ev, (unsigned char)complete};
  return rc;
}

/* A list overflow seen at a status read: slots for want partners, the window's starting state restored and
 * its operations run again. */
static int redo_window(rcl_md *md, dev_state *s, size_t want) {
  size_t cap2 = (want + want / 4 + 15) / 16 * 16, now = md->step;
  if (cap2 > RCL_MD_MAX_NEIGHBORS) cap2 = RCL_MD_MAX_NEIGHBORS;
  int rc = want ? alloc_lists(md, s, cap2) : 0; /* want 0: the slots kept (a stale list, not an overflow) */
  cl_mem live[MD_NSNAP];
  size_t bytes[MD_NSNAP];
  snap_buffers(s, live, bytes); /* the new lists take the snapshot's slots first: the same layout */
  for (int k = 0; k < MD_NSNAP && !rc; k++) rc = copy_buffer(s, s->snap[k], live[k], bytes[k]);
  if (rc) return rc;
  md->step = s->snap_step;
  s->pending_kick = s->snap_kick;
  s->need_build = s->snap_build;
  for (size_t i = 0; i < s->nlog && !rc; i++) {
    if (!s->log[i].step) {
      rc = launch_forces(md, s, s->log[i].ev);
      continue;
    }
    rc = run_step(md, s, s->log[i].ev, s->log[i].complete);
    md->step++;
  }
  md->step = now;
  return rc;
}

/* Reads the status (blocking) and settles the window since the last read: an overflow of the lists undone
 * (redo_window, until none is left), then the errors reported with their step, the builds counted. */
static int dev_sync(rcl_md *md, dev_state *s, const char *where) {
  for (;;) {
    int rc = read_status(s, s->st);
    if (rc) return rc;
    /* errors of the first failing step only (cl/md.cl): never consequences of an overflow before them */
    if ((rc = check_errors(md, s->st, where)) != 0) return rc;
    if (s->lists && (s->st[1] & (cl_int)MD_ERR_STALE) && s->nlog) { /* from now on a build every step */
      s->build_every = 1;
      s->early = 1.0;
      s->args_ok &= ~(1u << K_INT1);
      s->replays[0]++;
      if ((rc = redo_window(md, s, 0)) != 0) return rc;
      continue;
    }
    if (s->lists && (s->st[1] & (cl_int)MD_ERR_CAPACITY) && s->nlog && s->cap < RCL_MD_MAX_NEIGHBORS) {
      s->replays[1]++;
      if ((rc = redo_window(md, s, (size_t)s->st[2])) != 0) return rc;
      continue;
    }
    if (s->st[1] & (cl_int)MD_ERR_CAPACITY)
      return rcl__fail(RCL_ERR_INTERNAL, "MD: a neighbour list overflowed %zu slots (a bug; please report)", s->cap);
    md->builds += (uint32_t)s->st[MD_ST_BUILDS] - s->builds_seen;
    s->builds_seen = (uint32_t)s->st[MD_ST_BUILDS];
    s->pairs = (uint64_t)(uint32_t)s->st[4] | ((uint64_t)(uint32_t)s->st[5] << 32);
    s->nlog = 0;
    return 0;
  }
}

/* One step; the status is read every sync_every steps only (and whenever results are read). */
static int dev_step(rcl_md *md, int ev, int complete) {
  dev_state *s = md->bs;
  s->profiling = s->report;
  int rc = log_op(md, s, 1, ev, complete);
  if (!rc) rc = run_step(md, s, ev, complete);
  if (rc) return rc;
  if (s->nlog >= s->sync_every) return dev_sync(md, s, "at or before this step");
  clFlush(s->q);
  return 0;
}

static int dev_stats(rcl_md *md, rcl_md_stats *out) {
  dev_state *s = md->bs;
  int rc = dev_sync(md, s, "during the run");
  if (rc) return rc;
  cl_int err = clFinish(s->q);
  if (err != CL_SUCCESS) return rcl__fail_cl(err, "clFinish(MD queue)");
  account_all(s);
  out->neighbor_pairs = s->pairs;
  if (!s->report) return 0; /* kernel times off: 0 */
  out->force_seconds = s->seconds[CAT_FORCE];
  out->build_seconds = s->seconds[CAT_BUILD];
  out->integrate_seconds = s->seconds[CAT_INTEGRATE];
  return 0;
}

static int dev_check(rcl_md *md) { return dev_sync(md, md->bs, "during the run"); }

/* Forces outside a step (the creation, a thermo query), the status read after them. */
static int dev_forces(rcl_md *md, int ev) {
  dev_state *s = md->bs;
  int rc = log_op(md, s, 0, ev, 0);
  if (!rc) rc = launch_forces(md, s, ev);
  return rc ? rc : dev_sync(md, s, "in the force computation");
}

/* ---- thermo sums ------------------------------------------------------------------------------------ */

/* The thermo partials of the last thermo launch (G groups) read and added: in native mode the floating-point
 * sums into v, else the exact sums into t; the status checked. */
static int read_partials(rcl_md *md, dev_state *s, md_sum t[3], double v[3]) {
  size_t acc = s->native ? s->es : 8, G = s->thermo_groups;
  unsigned char *buf = rcl__malloc(G * 6 * acc);
  int rc = buf ? rcl__chain_read(&s->ord, s->partials, 0, G * 6 * acc, buf, NULL, "MD thermo partials")
               : RCL_ERR_OUT_OF_MEMORY;
  cl_int st[MD_STATUS_WORDS];
  if (!rc) rc = read_status(s, st);
  if (!rc) rc = check_errors(md, st, "in the thermo sums");
  for (size_t g = 0; !rc && g < G; g++)
    for (int q = 0; q < 3; q++) {
      if (s->native && acc == 4) {
        float f;
        memcpy(&f, buf + (g * 6 + 2 * (size_t)q) * 4, 4);
        v[q] += f;
      } else if (s->native) {
        double d;
        memcpy(&d, buf + (g * 6 + 2 * (size_t)q) * 8, 8);
        v[q] += d;
      } else {
        int64_t hi, lo;
        memcpy(&hi, buf + (g * 6 + 2 * (size_t)q) * 8, 8);
        memcpy(&lo, buf + (g * 6 + 2 * (size_t)q + 1) * 8, 8);
        t[q].hi += hi;
        t[q].lo += lo;
        md_sum_normalize(&t[q]);
      }
    }
  rcl__free(buf);
  return rc;
}

static int dev_sums(rcl_md *md, md_sums *out) {
  dev_state *s = md->bs;
  cl_uint n = (cl_uint)md->n, stride = (cl_uint)s->stride;
  memset(out, 0, sizeof *out);
  size_t acc = s->native ? s->es : 8;
  int rc = dev_sync(md, s, "before the thermo sums");
  if (!rc) rc = set_step(md, s);
  if (!rc)
    rc = rcl__set_args(s->k[K_THERMO], knames[K_THERMO], 9, MEM(s->pos), MEM(s->vel), MEM(s->ev), U32(n), U32(stride),
                       MEM(s->coef), MEM(s->partials), MEM(s->status), 6 * s->WT * acc, NULL);
  if (!rc) rc = launch(s, K_THERMO, knames[K_THERMO], s->thermo_groups * s->WT, s->WT);
  md_sum t[3] = {{0, 0}, {0, 0}, {0, 0}};
  double v[3] = {0, 0, 0};
  if (!rc) rc = read_partials(md, s, t, v);
  if (rc) return rc;
  /* Full lists count every pair from both sides: the energy and virial sums are then exactly even. */
  int twice = md->path != RCL_MD_PATH_SYMMETRIC;
  if (s->native) {
    out->native = 1;
    out->pe_f = twice ? 0.5 * v[0] : v[0];
    out->virial_f = twice ? 0.5 * v[1] : v[1];
    out->mv2_f = v[2];
    return 0;
  }
  if (twice && (!md_sum_halve(&t[0]) || !md_sum_halve(&t[1])))
    return rcl__fail(RCL_ERR_INTERNAL, "MD: a full-list energy or virial sum is odd (a kernel bug; please report)");
  out->pe = t[0];
  out->virial = t[1];
  out->mv2 = t[2];
  return 0;
}

/* ---- state ------------------------------------------------------------------------------------------ */

/* Reads count elements of `size` bytes from buf into a new host array. */
static int read_new(void **out, dev_state *s, cl_mem buf, size_t bytes, const char *what) {
  *out = rcl__malloc(bytes ? bytes : 1);
  if (!*out) return RCL_ERR_OUT_OF_MEMORY;
  int rc = rcl__chain_read(&s->ord, buf, 0, bytes, *out, NULL, what);
  if (rc) {
    rcl__free(*out);
    *out = NULL;
  }
  return rc;
}

/* dst[3 * t[i] + d] = src[w * i + c * d] (d < 3) for n elements of es bytes: the bits, by tag (c 1: the
 * device's xyzw atoms, w 4; w 1: its component planes, c the stride). */
static void by_tag(void *dst, const cl_int *t, const void *src, size_t w, size_t c, size_t n, size_t es) {
  if (es == 4) {
    uint32_t *o = dst;
    const uint32_t *f = src;
    for (size_t i = 0; i < n; i++, f += w) {
      uint32_t *q = o + 3 * (size_t)t[i];
      q[0] = f[0], q[1] = f[c], q[2] = f[2 * c];
    }
  } else {
    uint64_t *o = dst;
    const uint64_t *f = src;
    for (size_t i = 0; i < n; i++, f += w) {
      uint64_t *q = o + 3 * (size_t)t[i];
      q[0] = f[0], q[1] = f[c], q[2] = f[2 * c];
    }
  }
}

/* Reads the tags and, where asked, positions and velocities into the staging (pos, vel, then tags). */
static int dev_get_state(rcl_md *md, void *pos, void *vel) {
  dev_state *s = md->bs;
  size_t n = md->n, es = s->es, b4 = n * 4 * es;
  int rc = dev_sync(md, s, "before reading the state");
  if (!rc) rc = rcl__grow(&s->host, &s->host_cap, n * 4 + 2 * b4);
  unsigned char *p4 = s->host, *v4 = p4 + b4, *tag = v4 + b4;
  if (!rc) rc = rcl__chain_read(&s->ord, s->tag, 0, n * 4, tag, NULL, "atom tags");
  if (!rc && pos) rc = rcl__chain_read(&s->ord, s->pos, 0, b4, p4, NULL, "positions");
  if (!rc && vel) rc = rcl__chain_read(&s->ord, s->vel, 0, b4, v4, NULL, "velocities");
  if (!rc && pos) by_tag(pos, (const cl_int *)(void *)tag, p4, 4, 1, n, es);
  if (!rc && vel) by_tag(vel, (const cl_int *)(void *)tag, v4, 4, 1, n, es);
  return rc;
}

/* Reads the forces and the tags into the staging (forces, then tags). */
static int dev_get_forces(rcl_md *md, int64_t *fixed, void *native_force) {
  dev_state *s = md->bs;
  size_t n = md->n, acc = s->native ? s->es : 8, fb = 3 * s->stride * acc;
  int rc = dev_sync(md, s, "before reading the forces");
  if (!rc) rc = rcl__grow(&s->host, &s->host_cap, fb + n * 4);
  unsigned char *f = s->host, *tag = f + fb;
  if (!rc) rc = rcl__chain_read(&s->ord, s->tag, 0, n * 4, tag, NULL, "atom tags");
  if (!rc) rc = rcl__chain_read(&s->ord, s->force, 0, fb, f, NULL, "forces");
  if (!rc) by_tag(fixed ? (void *)fixed : native_force, (const cl_int *)(void *)tag, f, 1, s->stride, n, acc);
  return rc;
}

/* ---- hooks of a decomposed simulation (md_internal.h) ------------------------------------------------ */

/* A launch of one of the kernels of a decomposed simulation over m items. */
static int launch_small(dev_state *s, int k, size_t m) {
  size_t W = rcl__floor_pow2(s->WB < s->wmax[k] ? s->WB : s->wmax[k]);
  return launch(s, k, knames[k], m, W);
}

/* *buf of at least bytes (at least 1): kept where it is large enough (*cap its size), else made anew. */
static int room_buffer(cl_mem *buf, size_t *cap, rcl_md *md, size_t bytes, const char *what) {
  if (!bytes) bytes = 1;
  if (*buf && *cap >= bytes) return 0;
  if (*buf) clReleaseMemObject(*buf);
  *buf = NULL;
  *cap = 0;
  int rc = rcl__buffer_create(buf, md->ctx, CL_MEM_READ_WRITE, bytes, NULL, what);
  if (!rc) *cap = bytes;
  return rc;
}

/* A buffer of at least count ints (*cap its bytes) holding v first. */
static int int_buffer(cl_mem *buf, size_t *cap, rcl_md *md, dev_state *s, const cl_int *v, size_t count,
                      const char *what) {
  int rc = room_buffer(buf, cap, md, count * 4, what);
  if (!rc && count) rc = rcl__chain_write(&s->ord, *buf, 0, count * 4, v, what);
  return rc;
}

/* Without lists (allpairs) the displacement test still decides the decompositions: positions at the
 * creation kept in pos0. */
static int track_positions(rcl_md *md, dev_state *s) {
  if (s->lists) return 0;
  clReleaseMemObject(s->pos0);
  s->pos0 = NULL;
  s->args_ok = 0;
  size_t bytes = s->stride * 4 * s->es;
  int rc = rcl__buffer_create(&s->pos0, md->ctx, CL_MEM_READ_WRITE, bytes, NULL, "positions at the decomposition");
  if (rc) return rc;
  rcl_queue_args qa = rcl__chain_args(&s->ord);
  cl_int err =
      clEnqueueCopyBuffer(s->q, s->pos, s->pos0, 0, 0, bytes, qa.num_events_in_wait_list, qa.event_wait_list, qa.event);
  if (err != CL_SUCCESS) return rcl__fail_cl(err, "clEnqueueCopyBuffer(positions at the decomposition)");
  return rcl__chain_adopt(&s->ord, 0);
}

int rcl__md_dev_link(rcl_md *md, const size_t *send, size_t nsend, size_t nown) {
  dev_state *s = md->bs;
  size_t n = md->n, ng = n - nown;
  cl_int *tag = NULL, *inv = rcl__malloc((n ? n : 1) * sizeof *inv), *idx = rcl__malloc((nsend + n + 1) * 4);
  int rc = inv && idx ? read_new((void **)&tag, s, s->tag, n * 4, "atom tags") : RCL_ERR_OUT_OF_MEMORY;
  if (!rc) {
    for (size_t i = 0; i < n; i++) inv[tag[i]] = (cl_int)i; /* the internal index of each local atom */
    for (size_t j = 0; j < nsend; j++) idx[j] = inv[send[j]];
    for (size_t j = 0; j < ng; j++) idx[nsend + j] = inv[nown + j];
    for (size_t j = 0; j < nown; j++) idx[nsend + ng + j] = inv[j];
    s->nsend = nsend;
    s->nghost = ng;
    s->nown = nown;
    s->profiling = s->report = queue_profiles(s); /* the breakdowns of split and MPI runs */
    rc = int_buffer(&s->sidx, &s->link_cap[0], md, s, idx, nsend, "indices of the atoms sent");
  }
  if (!rc) rc = int_buffer(&s->gidx, &s->link_cap[1], md, s, idx + nsend, ng, "indices of the ghosts");
  if (!rc) rc = room_buffer(&s->sbuf, &s->link_cap[2], md, nsend * 4 * s->es, "positions sent");
  if (!rc) rc = room_buffer(&s->gbuf, &s->link_cap[3], md, ng * 4 * s->es, "ghost positions");
  if (!rc) rc = int_buffer(&s->oidx, &s->link_cap[4], md, s, idx + nsend + ng, nown, "indices of the owned atoms");
  if (!rc) rc = room_buffer(&s->obuf, &s->link_cap[5], md, nown * 4 * s->es, "owned atoms' state");
  if (!rc) rc = track_positions(md, s);
  rcl__free(tag);
  rcl__free(inv);
  rcl__free(idx);
  return rc;
}

/* dst[3 i + d] = src[4 i + d] (d < 3) for n elements of es bytes: the bits without the w. */
static void strip_w(void *dst, const void *src, size_t n, size_t es) {
  if (es == 4) {
    uint32_t *o = dst;
    const uint32_t *f = src;
    for (size_t i = 0; i < n; i++, o += 3, f += 4) o[0] = f[0], o[1] = f[1], o[2] = f[2];
  } else {
    uint64_t *o = dst;
    const uint64_t *f = src;
    for (size_t i = 0; i < n; i++, o += 3, f += 4) o[0] = f[0], o[1] = f[1], o[2] = f[2];
  }
}

int rcl__md_dev_owned_state(rcl_md *md, void *pos, void *vel) {
  dev_state *s = md->bs;
  size_t m = s->nown, b4 = m * 4 * s->es;
  int rc = dev_sync(md, s, "before reading the state");
  if (!rc) rc = rcl__grow(&s->host, &s->host_cap, b4 ? b4 : 1);
  for (int k = 0; k < 2 && !rc && m; k++) {
    void *dst = k ? vel : pos;
    if (!dst) continue;
    cl_mem src = k ? s->vel : s->pos;
    rc = rcl__set_args(s->k[K_GATHER], knames[K_GATHER], 4, MEM(src), MEM(s->oidx), U32(m), MEM(s->obuf));
    if (!rc) rc = launch_small(s, K_GATHER, m);
    if (!rc) rc = rcl__chain_read(&s->ord, s->obuf, 0, b4, s->host, NULL, k ? "velocities" : "positions");
    if (!rc) strip_w(dst, s->host, m, s->es);
  }
  return rc;
}

int rcl__md_dev_half1(rcl_md *md, void *sent, int *far) {
  dev_state *s = md->bs;
  cl_uint m = (cl_uint)s->nsend;
  cl_uint seq = (cl_uint)(md->step + 1);
  int rc = launch_int1(md, s, 1, seq);
  if (!rc && m)
    rc = rcl__set_args(s->k[K_GATHER], knames[K_GATHER], 4, MEM(s->pos), MEM(s->sidx), U32(m), MEM(s->sbuf));
  if (!rc && m) rc = launch_small(s, K_GATHER, m);
  if (!rc && m) rc = rcl__chain_read(&s->ord, s->sbuf, 0, m * 4 * s->es, sent, NULL, "positions sent");
  if (!rc) rc = read_status(s, s->st);
  if (!rc) rc = check_errors(md, s->st, "at or before this step");
  *far = !rc && (cl_uint)s->st[0] == seq;
  return rc;
}

int rcl__md_dev_half2(rcl_md *md, const void *ghosts, int forces, int ev, int complete) {
  dev_state *s = md->bs;
  cl_uint m = (cl_uint)s->nghost;
  int rc = 0;
  if (ghosts && m) {
    rc = rcl__chain_write(&s->ord, s->gbuf, 0, m * 4 * s->es, ghosts, "ghost positions");
    if (!rc)
      rc = rcl__set_args(s->k[K_SCATTER], knames[K_SCATTER], 5, MEM(s->pos), MEM(s->vel), MEM(s->gidx), U32(m),
                         MEM(s->gbuf));
    if (!rc) rc = launch_small(s, K_SCATTER, m);
  }
  if (!rc && forces) rc = launch_forces(md, s, ev); /* errors surface at the next status read */
  if (!rc) rc = launch_int2(md, s, complete);
  clFlush(s->q);
  return rc;
}

int rcl__md_dev_owned_sums(rcl_md *md, size_t nown, md_sum out[3]) {
  dev_state *s = md->bs;
  cl_uint n = (cl_uint)md->n, stride = (cl_uint)s->stride, no = (cl_uint)nown;
  size_t W = s->WT <= s->wmax[K_OWNED] ? s->WT : rcl__floor_pow2(s->wmax[K_OWNED]);
  if (s->native) return rcl__fail(RCL_ERR_INVALID_ARG, "a native-mode simulation has no fixed-point sums");
  int rc = rcl__set_args(s->k[K_OWNED], knames[K_OWNED], 11, MEM(s->pos), MEM(s->vel), MEM(s->ev), MEM(s->tag), U32(no),
                         U32(n), U32(stride), MEM(s->coef), MEM(s->partials), MEM(s->status), 6 * W * 8, NULL);
  if (!rc) rc = launch(s, K_OWNED, knames[K_OWNED], s->thermo_groups * W, W);
  double v[3] = {0, 0, 0};
  for (int q = 0; q < 3; q++) out[q] = (md_sum){0, 0};
  return rc ? rc : read_partials(md, s, out, v);
}

static int dev_get_neighbors(rcl_md *md, size_t atom, size_t *count, size_t *list, size_t cap) {
  dev_state *s = md->bs;
  size_t n = md->n;
  void *tag = NULL, *cnt = NULL, *nl = NULL;
  int rc = dev_sync(md, s, "before reading the neighbour lists");
  if (!rc) rc = read_new(&tag, s, s->tag, n * 4, "atom tags");
  if (!rc) rc = read_new(&cnt, s, s->ncount, n * 4, "neighbour counts");
  if (!rc) rc = read_new(&nl, s, s->nlist, s->cap * s->stride * 4, "neighbour lists");
  if (!rc) {
    const cl_int *t = tag, *c = cnt, *l = nl;
    size_t i = 0;
    while (i < n && (size_t)t[i] != atom) i++;
    *count = (size_t)c[i];
    for (size_t k = 0; k < *count && k < cap; k++) list[k] = (size_t)t[l[k * s->stride + i]];
  }
  rcl__free(tag);
  rcl__free(cnt);
  rcl__free(nl);
  return rc;
}

/* ---- set-up ----------------------------------------------------------------------------------------- */

static int dev_set_coef(rcl_md *md) {
  dev_state *s = md->bs;
  size_t nc = (size_t)MD_NCOEF(md->nt);
  unsigned char tab[MD_NCOEF(RCL_MD_MAX_TYPES) * 8];
  for (size_t i = 0; i < nc; i++) md_put_real(tab, i, md->dtype, md->coef[i]);
  int rc = s->nlog ? dev_sync(md, s, "during the run") : 0; /* a window never spans a change of coefficients */
  s->args_ok = 0;                                           /* md_integrate1's time step */
  return rc ? rc : rcl__chain_write(&s->ord, s->coef, 0, nc * s->es, tab, "MD coefficients");
}

static void dev_destroy(rcl_md *md) {
  dev_state *s = md->bs;
  if (!s) return;
  if (s->q) clFinish(s->q); /* nothing may still run on buffers about to be released */
  rcl__chain_end(&s->ord, NULL);
  cl_mem *bufs[] = {&s->pos,     &s->vel,     &s->vel_s, &s->tag,    &s->tag_s,    &s->pos0,   &s->cellof,
                    &s->cellnew, &s->force,   &s->ev,    &s->status, &s->coef,     &s->ccount, &s->cstart,
                    &s->cfill,   &s->members, &s->nlist, &s->ncount, &s->partials, &s->sidx,   &s->gidx,
                    &s->sbuf,    &s->gbuf,    &s->oidx,  &s->obuf};
  for (int k = 0; k < MD_NSNAP; k++)
    if (s->snap[k]) clReleaseMemObject(s->snap[k]);
  rcl__free(s->log);
  rcl__free(s->host);
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    if (*bufs[i]) clReleaseMemObject(*bufs[i]);
  for (int k = 0; k < K_N; k++)
    if (s->k[k]) clReleaseKernel(s->k[k]);
  account_all(s);
  rcl__free(s);
  md->bs = NULL;
}

/* A requested work-group size must fit every kernel it applies to; a default is clamped to each. */
static int pick_local(size_t *out, size_t requested, size_t fallback, size_t kmax, const char *what, const char *kname,
                      const rcl_md *md) {
  if (requested) {
    if (requested > kmax)
      return rcl__fail(RCL_ERR_INVALID_ARG, "%s %zu exceeds %s's limit of %zu on %s", what, requested, kname, kmax,
                       md->ctx->profile.device_name);
    *out = requested;
  } else {
    *out = rcl__floor_pow2(fallback < kmax ? fallback : kmax);
  }
  return 0;
}

/* The fixed-point conversion of the built-in rule: the builtin on GPUs, binary64 on CPUs with fp64,
 * integer operations without fp64. */
static rcl_md_convert auto_convert(const rcl_device_profile *p) {
  return !p->fp64                         ? RCL_MD_CONVERT_INTEGER
         : (p->type & CL_DEVICE_TYPE_CPU) ? RCL_MD_CONVERT_FLOAT64
                                          : RCL_MD_CONVERT_BUILTIN;
}

static int convert_error(rcl_md_convert c, const rcl_device_profile *p, rcl_dtype dtype) {
  if (c == RCL_MD_CONVERT_FLOAT64 && !p->fp64)
    return rcl__fail(RCL_ERR_UNSUPPORTED, "the float64 fixed-point conversion needs fp64, which %s lacks",
                     p->device_name);
  if (c == RCL_MD_CONVERT_INTEGER && dtype != RCL_F32)
    return rcl__fail(RCL_ERR_INVALID_ARG, "the integer fixed-point conversion is for f32 only");
  if ((unsigned)c < RCL_MD_CONVERT_BUILTIN || (unsigned)c > RCL_MD_CONVERT_INTEGER)
    return rcl__fail(RCL_ERR_INVALID_ARG, "convert %d is not a fixed-point conversion", (int)c);
  return 0;
}

static int md_defines(char *buf, size_t size, int nt, int ev, rcl_md_convert c) {
  int rte = c == RCL_MD_CONVERT_FLOAT64 ? 1 : c == RCL_MD_CONVERT_INTEGER ? 2 : 0;
  return snprintf(buf, size, "-DMD_NT=%d -DMD_EV=%d -DMD_RTE=%d", nt, ev, rte);
}

/* CL_KERNEL_WORK_GROUP_SIZE of one kernel of md.cl (the program is built once per context). */
static int kernel_max(size_t *out, rcl_context *ctx, rcl_dtype dt, const char *defs, const char *name) {
  cl_kernel k;
  int rc = rcl__kernel_get(&k, ctx, "md.cl", dt, defs, name);
  if (rc) return rc;
  rc = rcl__kernel_wg_max(out, k, ctx, name);
  clReleaseKernel(k);
  return rc;
}

int rcl__md_plan(rcl_md_options *o, rcl_context *ctx, rcl_dtype dt, size_t n, int nt, const size_t *soft) {
  const rcl_device_profile *p = &ctx->profile;
  if (o->path == RCL_MD_PATH_AUTO) o->path = RCL_MD_PATH_GATHER;
  if (o->path == RCL_MD_PATH_SYMMETRIC && !p->int64_atomics)
    return rcl__fail(RCL_ERR_UNSUPPORTED,
                     "the symmetric force path needs 64-bit integer atomics (cl_khr_int64_base_atomics), which %s "
                     "lacks; use the gather path",
                     p->device_name);
  if (o->path == RCL_MD_PATH_ALLPAIRS && n > ALLPAIRS_MAX_ATOMS)
    return rcl__fail(RCL_ERR_INVALID_ARG, "the allpairs path takes at most %d atoms; this system has %zu",
                     ALLPAIRS_MAX_ATOMS, n);
  int rc;
  if (o->convert == RCL_MD_CONVERT_AUTO) { /* soft: a tuned or platform conversion this device and dtype take */
    rcl_md_convert c = soft ? (rcl_md_convert)soft[RCL_MD_P_CONVERT] : RCL_MD_CONVERT_AUTO;
    int ok = c != RCL_MD_CONVERT_AUTO && !(c == RCL_MD_CONVERT_FLOAT64 && !p->fp64) &&
             !(c == RCL_MD_CONVERT_INTEGER && dt != RCL_F32) && (unsigned)c <= RCL_MD_CONVERT_INTEGER;
    o->convert = ok ? c : auto_convert(p);
  } else if ((rc = convert_error(o->convert, p, dt)) != 0) {
    return rc;
  }
  /* Work-group limits of the kernels each size applies to. */
  char defs[2][80];
  md_defines(defs[0], sizeof defs[0], nt, 0, o->convert);
  md_defines(defs[1], sizeof defs[1], nt, 1, o->convert);
  const char *fname = force_kernel_name(o->path);
  size_t f0, f1, bmax = SIZE_MAX, es = rcl_dtype_size(dt);
  rc = kernel_max(&f0, ctx, dt, defs[0], fname);
  if (!rc) rc = kernel_max(&f1, ctx, dt, defs[1], fname);
  for (int k = K_INT1; k <= K_NEIGH && !rc; k++) {
    size_t m;
    if (k == K_COUNT) continue; /* launched with the scan's work-group size */
    rc = kernel_max(&m, ctx, dt, defs[0], knames[k]);
    if (!rc && m < bmax) bmax = m;
  }
  if (rc) return rc;
  size_t fmax = f0 < f1 ? f0 : f1, W = 1, budget = rcl__loop_budget(ctx);
  if (o->path == RCL_MD_PATH_TASK) {
    if (o->local_size > 1)
      return rcl__fail(RCL_ERR_INVALID_ARG, "local_size %zu: the task path runs a single work-item", o->local_size);
  } else if (o->local_size) { /* strict */
    W = o->local_size;
    if (W > fmax)
      return rcl__fail(RCL_ERR_INVALID_ARG, "local_size %zu exceeds %s's limit of %zu on %s", W, fname, fmax,
                       p->device_name);
    if (o->path == RCL_MD_PATH_ALLPAIRS && W * 4 * es > p->local_mem_size)
      return rcl__fail(RCL_ERR_INVALID_ARG,
                       "an allpairs tile of %zu atoms needs %zu bytes of local memory; %s has %llu", W, W * 4 * es,
                       p->device_name, (unsigned long long)p->local_mem_size);
  } else { /* soft, else the built-in default: clamped to what the kernel and local memory take */
    size_t want = soft && soft[RCL_MD_P_LOCAL] ? soft[RCL_MD_P_LOCAL] : o->path == RCL_MD_PATH_ALLPAIRS ? 64 : 128;
    W = rcl__floor_pow2(want < fmax ? want : fmax);
    while (o->path == RCL_MD_PATH_ALLPAIRS && W > 1 && W * 4 * es > p->local_mem_size) W /= 2;
  }
  /* allpairs: each work-item loops over n partners in n / W tiles */
  if (o->path == RCL_MD_PATH_ALLPAIRS && budget != SIZE_MAX && n + ceil_div(n, W) + 64 > budget)
    return rcl__fail(RCL_ERR_INVALID_ARG,
                     "the allpairs path with tiles of %zu atoms takes at most %zu atoms on %s (its loop limit); this "
                     "system has %zu",
                     W, (budget - 64) * W / (W + 1), p->device_name, n);
  size_t WB;
  if (o->build_local_size) {
    WB = o->build_local_size;
    if (WB > bmax)
      return rcl__fail(RCL_ERR_INVALID_ARG, "build_local_size %zu exceeds the MD build kernels' limit of %zu on %s", WB,
                       bmax, p->device_name);
  } else {
    size_t want = soft && soft[RCL_MD_P_BUILD] ? soft[RCL_MD_P_BUILD] : 64;
    WB = rcl__floor_pow2(want < bmax ? want : bmax);
  }
  o->local_size = W;
  o->build_local_size = WB;
  return 0;
}

/* Cells at least cutoff + skin wide (with a margin for the rounding of the cell coordinate), at most
 * about 4 per atom. */
static void plan_cells(rcl_md *md, dev_state *s) {
  double rcs = md->cutoff + md->skin, eps = md->dtype == RCL_F32 ? 0x1p-23 : 0x1p-52;
  size_t total = 1;
  for (int d = 0; d < 3; d++) {
    double w = rcs * (1.0 + 1e-4 + 8.0 * eps * md->len[d] / rcs);
    double c = floor(md->len[d] / w);
    s->nc[d] = c < 1 ? 1 : c > 1024 ? 1024 : (int)c;
    total *= (size_t)s->nc[d];
  }
  while (total > 4 * md->n + 64) { /* a dilute system: fewer, wider cells */
    int d = s->nc[0] >= s->nc[1] && s->nc[0] >= s->nc[2] ? 0 : s->nc[1] >= s->nc[2] ? 1 : 2;
    total = total / (size_t)s->nc[d] * (size_t)((s->nc[d] + 1) / 2);
    s->nc[d] = (s->nc[d] + 1) / 2;
  }
  s->ncells = total;
  for (int d = 0; d < 3; d++) s->cinv[d] = (double)s->nc[d] / md->len[d];
}

/* The backend's state (md->bs, freed by dev_destroy on every path): the queue and its order chain,
 * sizes and limits of the context. */
static int dev_setup(rcl_md *md) {
  rcl_context *ctx = md->ctx;
  dev_state *s = rcl__calloc(1, sizeof *s);
  if (!s) return RCL_ERR_OUT_OF_MEMORY;
  md->bs = s;
  s->ctx = ctx;
  s->q = md->queue ? md->queue : ctx->queue;
  if (!s->q) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_create: the context has no queue (wrapped without one)");
  rcl__chain_begin(&s->ord, s->q, NULL);
  int in_order, rc = rcl__queue_in_order(&in_order, ctx, s->q);
  if (rc) return rc;
  s->ord.lazy = in_order; /* launch() gives a kernel an event of its own only for profiling and the tuner */
  s->native = ctx->mode == RCL_MODE_NATIVE;
  s->profiling = queue_profiles(s); /* the creation's launches; dev_step stops it unless reported */
  s->report = md->opts.kernel_times && s->profiling;
  s->es = rcl_dtype_size(md->dtype);
  const size_t *room = md->be_arg; /* a local simulation's headroom (md_internal.h) */
  s->stride = ceil_div(room && *room > md->n ? *room : md->n, 64) * 64;
  s->budget = rcl__loop_budget(ctx);
  s->lists = md->path != RCL_MD_PATH_ALLPAIRS;
  const char *env = getenv("REPROCL_MD_SYNC"); /* steps between status reads (a diagnostic; 1: every step) */
  long k = env && *env ? strtol(env, NULL, 10) : MD_SYNC_DEFAULT;
  s->sync_every = k < 1 ? 1 : k > MD_SYNC_MAX ? MD_SYNC_MAX : (size_t)k;
  env = getenv("REPROCL_MD_BUILD_EVERY"); /* a build launch every M steps (rounded down to a power of two) */
  k = env && *env ? strtol(env, NULL, 10) : 1;
  s->build_every = rcl__floor_pow2(k < 1 ? 1 : k > 64 ? 64 : (size_t)k);
  env = getenv("REPROCL_MD_EARLY"); /* the rebuild request's distance, a fraction of skin/2 */
  double e = env && *env ? strtod(env, NULL) : s->build_every > 1 ? 0.7 : 1.0;
  s->early = s->build_every > 1 && e > 0 && e < 1 ? e : 1.0;
  s->log = rcl__calloc(s->sync_every + 1, sizeof *s->log);
  if (!s->log) return RCL_ERR_OUT_OF_MEMORY;
  if (md->path == RCL_MD_PATH_ALLPAIRS && md->n > ALLPAIRS_MAX_ATOMS)
    return rcl__fail(RCL_ERR_INVALID_ARG, "the allpairs path takes at most %d atoms; this system has %zu",
                     ALLPAIRS_MAX_ATOMS, md->n);
  return 0;
}

/* kernels: the force kernel with and without energy/virial, the rest from the plain program */
static int dev_kernels(rcl_md *md, dev_state *s) {
  char defs[2][80];
  int rc = 0;
  for (int ev = 0; ev < 2; ev++) md_defines(defs[ev], sizeof defs[ev], md->nt, ev, md->opts.convert);
  for (int k = 0; k < K_N && !rc; k++) {
    const char *name = k <= K_FORCE_EV ? force_kernel_name(md->path) : knames[k];
    rc = rcl__kernel_get(&s->k[k], md->ctx, "md.cl", md->dtype, defs[k == K_FORCE_EV || k == K_THERMO || k == K_OWNED],
                         name);
    if (!rc) rc = rcl__kernel_wg_max(&s->wmax[k], s->k[k], md->ctx, name);
  }
  return rc;
}

/* launch geometry: the force kernel's work-group (W; one for the task path) and the build kernels' (WB) */
static int dev_local_sizes(rcl_md *md, dev_state *s) {
  rcl_context *ctx = md->ctx;
  const rcl_md_options *o = &md->opts;
  size_t n = md->n, es = s->es;
  int rc = 0;
  size_t fmax = s->wmax[K_FORCE] < s->wmax[K_FORCE_EV] ? s->wmax[K_FORCE] : s->wmax[K_FORCE_EV];
  const char *fname = force_kernel_name(md->path);
  if (md->path == RCL_MD_PATH_TASK) {
    if (o->local_size > 1)
      return rcl__fail(RCL_ERR_INVALID_ARG, "local_size %zu: the task path runs a single work-item", o->local_size);
    s->W = 1;
  } else {
    rc = pick_local(&s->W, o->local_size, md->path == RCL_MD_PATH_ALLPAIRS ? 64 : 128, fmax, "local_size", fname, md);
    if (!rc && md->path == RCL_MD_PATH_ALLPAIRS && s->W * 4 * es > ctx->profile.local_mem_size)
      rc = rcl__fail(RCL_ERR_INVALID_ARG, "an allpairs tile of %zu atoms needs %zu bytes of local memory; %s has %llu",
                     s->W, s->W * 4 * es, ctx->profile.device_name, (unsigned long long)ctx->profile.local_mem_size);
  }
  /* allpairs: each work-item loops over n partners in n / W tiles */
  if (!rc && md->path == RCL_MD_PATH_ALLPAIRS && s->budget != SIZE_MAX && n + ceil_div(n, s->W) + 64 > s->budget)
    rc = rcl__fail(RCL_ERR_INVALID_ARG,
                   "the allpairs path with tiles of %zu atoms takes at most %zu atoms on %s (its loop limit); this "
                   "system has %zu",
                   s->W, (s->budget - 64) * s->W / (s->W + 1), ctx->profile.device_name, n);
  size_t bmax = SIZE_MAX;
  for (int k = K_INT1; k <= K_NEIGH; k++)
    if (k != K_COUNT && s->wmax[k] < bmax) bmax = s->wmax[k];
  if (!rc) rc = pick_local(&s->WB, o->build_local_size, 64, bmax, "build_local_size", "the MD build kernels", md);
  return rc;
}

/* The scan and thermo work-groups (WS, WT), the thermo groups, and the cell grid of the neighbour lists. */
static int dev_plan_rest(rcl_md *md, dev_state *s) {
  rcl_context *ctx = md->ctx;
  size_t n = md->n, es = s->es;
  s->WS = rcl__floor_pow2(s->wmax[K_COUNT] < 256 ? s->wmax[K_COUNT] : 256);
  s->WT = rcl__floor_pow2(s->WB < s->wmax[K_THERMO] ? s->WB : s->wmax[K_THERMO]);
  size_t acc = s->native ? es : 8;
  while (s->WT > 1 && 6 * s->WT * acc > ctx->profile.local_mem_size) s->WT /= 2;
  /* thermo groups: enough work-items for the device, and few enough atoms each for a loop limit */
  s->thermo_groups = ceil_div(n, s->WT);
  size_t want = (size_t)ctx->profile.compute_units * 8;
  if (s->thermo_groups > want) s->thermo_groups = want;
  if (s->budget != SIZE_MAX) {
    size_t per = s->budget > 512 ? (s->budget - 512) / 4 : 1, need = ceil_div(n, s->WT * per); /* 4 per atom */
    if (s->thermo_groups < need) s->thermo_groups = need;
  }
  if (s->lists) {
    plan_cells(md, s);
    if (s->budget != SIZE_MAX && 2 * ceil_div(s->ncells, s->WS) + s->WS + 64 > s->budget)
      return rcl__fail(RCL_ERR_UNSUPPORTED, "%zu cells are too many for %s's loop limit", s->ncells,
                       ctx->profile.device_name);
  }
  return 0;
}

/* buffers: every device array of the state, then the neighbour lists at their starting capacity */
static int dev_buffers(rcl_md *md, dev_state *s) {
  size_t n = md->n, es = s->es, p4 = s->stride * 4 * es;
  int rc = 0;
  struct {
    cl_mem *buf;
    size_t bytes;
    const char *what;
  } b[] = {{&s->pos, p4, "positions"},
           {&s->vel, p4, "velocities"},
           {&s->vel_s, s->lists ? p4 : 1, "velocities"},
           {&s->tag, s->stride * 4, "atom tags"},
           {&s->tag_s, s->lists ? s->stride * 4 : 1, "atom tags"},
           {&s->pos0, s->lists ? p4 : 1, "positions at the last build"},
           {&s->cellof, s->lists ? s->stride * 4 : 1, "cell of each atom"},
           {&s->cellnew, s->lists ? s->stride * 4 : 1, "cell of each atom"},
           {&s->force, 3 * s->stride * 8, "forces"},
           {&s->ev, 2 * s->stride * 8, "energy and virial"},
           {&s->status, MD_STATUS_WORDS * sizeof(cl_int), "status"},
           {&s->coef, (size_t)MD_NCOEF(md->nt) * es, "coefficients"},
           {&s->ccount, s->lists ? s->ncells * 4 : 1, "cell counts"},
           {&s->cstart, s->lists ? (s->ncells + 1) * 4 : 1, "cell starts"},
           {&s->cfill, s->lists ? s->ncells * 4 : 1, "cell fill counters"},
           {&s->members, s->lists ? s->stride * 4 : 1, "cell members"},
           {&s->ncount, s->stride * 4, "neighbour counts"},
           {&s->partials, s->thermo_groups * 6 * 8, "thermo partial sums"}};
  for (size_t i = 0; i < sizeof b / sizeof b[0] && !rc; i++)
    rc = rcl__buffer_create(b[i].buf, md->ctx, CL_MEM_READ_WRITE, b[i].bytes, NULL, b[i].what);
  if (rc || !s->lists) return rc;
  size_t cap = md->opts.neighbor_capacity;
  if (!cap) { /* the expected count in a sphere of cutoff + skin at the mean density, with room to spare */
    double rcs = md->cutoff + md->skin, rho = (double)n / (md->len[0] * md->len[1] * md->len[2]);
    double expect = 4.0 / 3.0 * 3.14159265358979 * rcs * rcs * rcs * rho;
    if (expect > (double)n) expect = (double)n;
    cap = ((size_t)(1.3 * expect) + 16 + 15) / 16 * 16;
    if (cap > RCL_MD_MAX_NEIGHBORS) cap = RCL_MD_MAX_NEIGHBORS;
  }
  return alloc_lists(md, s, cap);
}

/* The staged positions (type tag in w) and velocities of the dtype, tags 0..n-1, the padding to the stride
 * zeroed: pos and vel at 0 and stride * 4 * es of st, the tags after them. */
static void stage_system(void *st, const rcl_md *md, size_t stride, const rcl_md_system *sys) {
  size_t n = md->n, es = rcl_dtype_size(md->dtype), pad = (stride - n) * 4 * es;
  unsigned char *hp = st, *hv = hp + stride * 4 * es;
  cl_int *ht = (cl_int *)(void *)(hv + stride * 4 * es);
  const double *x = sys->pos, *v = sys->vel;
  if (es == 4) {
    float *p = (float *)(void *)hp, *q = (float *)(void *)hv;
    for (size_t i = 0; i < n; i++, p += 4, q += 4, x += 3) {
      uint32_t w = md_type_bits32(sys->type[i] - 1);
      p[0] = (float)x[0], p[1] = (float)x[1], p[2] = (float)x[2];
      memcpy(p + 3, &w, 4);
      q[0] = v ? (float)v[3 * i] : 0.0f, q[1] = v ? (float)v[3 * i + 1] : 0.0f, q[2] = v ? (float)v[3 * i + 2] : 0.0f;
      q[3] = 0.0f;
    }
  } else {
    double *p = (double *)(void *)hp, *q = (double *)(void *)hv;
    for (size_t i = 0; i < n; i++, p += 4, q += 4, x += 3) {
      uint64_t w = md_type_bits64(sys->type[i] - 1);
      p[0] = x[0], p[1] = x[1], p[2] = x[2];
      memcpy(p + 3, &w, 8);
      q[0] = v ? v[3 * i] : 0.0, q[1] = v ? v[3 * i + 1] : 0.0, q[2] = v ? v[3 * i + 2] : 0.0;
      q[3] = 0.0;
    }
  }
  memset(hp + n * 4 * es, 0, pad);
  memset(hv + n * 4 * es, 0, pad);
  for (size_t i = 0; i < stride; i++) ht[i] = i < n ? (cl_int)i : 0;
}

/* upload: positions with the type tag in w, velocities, tags 0..n-1; then zeroed status, forces, energy */
static int dev_upload(rcl_md *md, dev_state *s, const rcl_md_system *sys) {
  size_t es = s->es, b4 = s->stride * 4 * es;
  int rc = rcl__grow(&s->host, &s->host_cap, 2 * b4 + s->stride * sizeof(cl_int));
  if (!rc) stage_system(s->host, md, s->stride, sys);
  unsigned char *hp = s->host;
  if (!rc) rc = rcl__chain_write(&s->ord, s->pos, 0, b4, hp, "MD initial positions");
  if (!rc) rc = rcl__chain_write(&s->ord, s->vel, 0, b4, hp + b4, "MD initial velocities");
  if (!rc) rc = rcl__chain_write(&s->ord, s->tag, 0, s->stride * 4, hp + 2 * b4, "MD atom tags");
  if (!rc) rc = fill_int(s, s->status, 0, MD_STATUS_WORDS * sizeof(cl_int), 0);
  if (!rc) rc = set_step(md, s);
  if (!rc && s->lists) rc = fill_int(s, s->ccount, 0, s->ncells * sizeof(cl_int), 0); /* kept zero by the scan */
  if (!rc) rc = fill_int(s, s->force, 0, 3 * s->stride * 8, 0);
  if (!rc) rc = fill_int(s, s->ev, 0, 2 * s->stride * 8, 0);
  return rc;
}

/* The device backend of rcl_md_create: state, kernels, launch geometry, buffers, the system uploaded. */
static int dev_init(rcl_md *md, const rcl_md_system *sys) {
  int rc = dev_setup(md);
  if (rc) return rc;
  dev_state *s = md->bs;
  if ((rc = dev_kernels(md, s)) != 0 || (rc = dev_local_sizes(md, s)) != 0 || (rc = dev_plan_rest(md, s)) != 0 ||
      (rc = dev_buffers(md, s)) != 0)
    return rc;
  rc = dev_upload(md, s, sys);
  if (!rc) rc = dev_set_coef(md);
  s->need_build = s->lists;
  return rc;
}

/* Whether the buffers and the launch plan of s take n atoms unchanged: within the stride, and the plan of n
 * atoms (dev_setup's and dev_local_sizes' limits, dev_plan_rest's groups and cells, on a copy of s) equal to
 * the current one. */
static int plan_fits(rcl_md *md, const dev_state *s, size_t n) {
  if (n > s->stride || (md->path == RCL_MD_PATH_ALLPAIRS && n > ALLPAIRS_MAX_ATOMS)) return 0;
  dev_state *t = rcl__malloc(sizeof *t);
  if (!t) return 0;
  size_t n0 = md->n;
  memcpy(t, s, sizeof *t);
  md->n = n;
  int rc = dev_local_sizes(md, t);
  if (!rc) rc = dev_plan_rest(md, t);
  md->n = n0;
  int fits = !rc && t->W == s->W && t->WB == s->WB && t->WS == s->WS && t->WT == s->WT &&
             t->thermo_groups == s->thermo_groups &&
             (!s->lists || (t->ncells == s->ncells && memcmp(t->nc, s->nc, sizeof t->nc) == 0));
  rcl__free(t);
  return fits;
}

int rcl__md_dev_reload(rcl_md *md, const rcl_md_system *sys, size_t step) {
  dev_state *s = md->bs;
  if (sys->ntypes != md->nt || !plan_fits(md, s, sys->natoms)) return 1;
  account_all(s); /* the launches of the simulation so far (rcl_md_get_stats read their times) */
  md->n = sys->natoms;
  md->step = step;
  md->steps_taken = md->builds = 0;
  md->have_ev = 0;
  s->seconds[CAT_FORCE] = s->seconds[CAT_BUILD] = s->seconds[CAT_INTEGRATE] = 0;
  s->pairs = 0;
  memset(s->st, 0, sizeof s->st);
  s->nlog = s->snap_step = 0;
  s->snap_kick = s->snap_build = s->pending_kick = 0;
  s->builds_seen = 0;
  s->args_ok = 0; /* n is an argument of every kernel */
  s->need_build = s->lists;
  int rc = dev_upload(md, s, sys);
  if (!rc) rc = dev_forces(md, 1); /* as rcl__md_build_be's */
  md->have_ev = !rc;
  return rc;
}

const md_backend rcl__md_device_backend = {dev_init,          dev_destroy, dev_set_coef,  dev_forces,
                                           dev_step,          dev_sums,    dev_get_state, dev_get_forces,
                                           dev_get_neighbors, dev_check,   dev_stats};

int rcl__md_dev_replays(size_t out[2], const rcl_md *md) {
  if (!out || !md || md->be != &rcl__md_device_backend)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl__md_dev_replays: not a device simulation");
  const dev_state *s = md->bs;
  out[0] = s->replays[0];
  out[1] = s->replays[1];
  return 0;
}
