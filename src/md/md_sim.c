/* The MD simulation below its public front (md.c): argument checks, the Lennard-Jones coefficient tables
 * (contract md.lj), creation with explicit launch values, the velocity-Verlet step loop and the thermo
 * quantities (contract md.thermo), and the accessors. The work itself is done by a backend: the OpenCL one
 * (md_device.c) or the host C reference (md_ref.c). */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "md/md_internal.h"

/* ---- coefficient tables (contract md.lj) --------------------------------------------------------------- */

static void pair_coeffs(const rcl_md_lj *lj, int a, int b, double *eps, double *sigma) {
  int lo = a < b ? a : b, hi = a < b ? b : a;
  if (lj->pair_set[lo][hi] || lj->pair_set[hi][lo]) {
    int x = lj->pair_set[lo][hi] ? lo : hi, y = lj->pair_set[lo][hi] ? hi : lo;
    *eps = lj->pair_epsilon[x][y];
    *sigma = lj->pair_sigma[x][y];
  } else if (a == b) {
    *eps = lj->epsilon[a];
    *sigma = lj->sigma[a];
  } else {
    *eps = sqrt(lj->epsilon[a] * lj->epsilon[b]);
    *sigma =
        lj->mixing == RCL_MD_MIX_GEOMETRIC ? sqrt(lj->sigma[a] * lj->sigma[b]) : 0.5 * (lj->sigma[a] + lj->sigma[b]);
  }
}

static void make_tables(rcl_md *md, const rcl_md_lj *lj) {
  int nt = md->nt;
  for (int a = 0; a < nt; a++)
    for (int b = 0; b < nt; b++) {
      double eps, sigma;
      pair_coeffs(lj, a, b, &eps, &sigma);
      double s2 = sigma * sigma, s6 = s2 * s2 * s2, s12 = s6 * s6;
      int t = a * nt + b;
      md->coef[MD_C_LJ1(nt) + t] = 48.0 * eps * s12;
      md->coef[MD_C_LJ2(nt) + t] = 24.0 * eps * s6;
      md->coef[MD_C_LJ3(nt) + t] = 4.0 * eps * s12;
      md->coef[MD_C_LJ4(nt) + t] = 4.0 * eps * s6;
      double off = 0.0;
      if (lj->shift) {
        double ratio = sigma / lj->cutoff, r2 = ratio * ratio, r6 = r2 * r2 * r2;
        off = 4.0 * eps * (r6 * r6 - r6);
      }
      md->coef[MD_C_OFF(nt) + t] = off;
    }
  for (int a = 0; a < nt; a++) {
    md->coef[MD_C_MASS(nt) + a] = md->mass[a];
    md->coef[MD_C_DTFM(nt) + a] = md->dt > 0 ? 0.5 * md->dt / md->mass[a] : 0.0;
  }
}

/* ---- argument checks ---------------------------------------------------------------------------------- */

/* The coefficient ranges under which the pair arithmetic is flush-invariant (contract md.lj): every
 * lj1..lj4 is 0 or within [2^-60, 2^60] and every offset 0 or within [2^-100, 2^100], as the dtype
 * rounds them. Far outside any physical use, but checked so that the claim holds for every input. */
static int check_tables(const rcl_md *md) {
  static const char *const names[] = {"48 eps sigma^12", "24 eps sigma^6", "4 eps sigma^12", "4 eps sigma^6",
                                      "the energy shift"};
  int nt = md->nt;
  for (int k = 0; k < 5; k++)
    for (int t = 0; t < nt * nt; t++) {
      double v = fabs(md->coef[k * nt * nt + t]);
      if (md->dtype == RCL_F32) v = fabs((double)(float)v);
      double lo = k == 4 ? 0x1p-100 : 0x1p-60, hi = k == 4 ? 0x1p100 : 0x1p60;
      if (v != 0 && !(v >= lo && v <= hi))
        return rcl__fail(RCL_ERR_INVALID_ARG,
                         "pair coefficients of types %d %d: %s = %g is outside the supported range [%g, %g]; "
                         "rescale the units",
                         t / nt + 1, t % nt + 1, names[k], v, lo, hi);
    }
  return 0;
}

static const char axis[] = "xyz";

static int check_system(const rcl_md_system *s, rcl_dtype dt) {
  if (s->natoms == 0) return rcl__fail(RCL_ERR_INVALID_ARG, "the system has no atoms");
  if (s->natoms > (size_t)1 << 30)
    return rcl__fail(RCL_ERR_INVALID_ARG, "%zu atoms: reprocl's MD supports at most 2^30", s->natoms);
  if (!s->pos || !s->type) return rcl__fail(RCL_ERR_INVALID_ARG, "the system has no positions or types");
  if (s->ntypes < 1 || s->ntypes > RCL_MD_MAX_TYPES)
    return rcl__fail(RCL_ERR_INVALID_ARG, "%d atom types: reprocl supports 1..%d", s->ntypes, RCL_MD_MAX_TYPES);
  for (int d = 0; d < 3; d++) {
    if (!isfinite(s->lo[d]) || !isfinite(s->hi[d]) || !(s->hi[d] > s->lo[d]))
      return rcl__fail(RCL_ERR_INVALID_ARG, "box %clo %.17g %chi %.17g is not a finite interval with lo < hi", axis[d],
                       s->lo[d], axis[d], s->hi[d]);
  }
  for (int t = 0; t < s->ntypes; t++)
    if (!(s->mass[t] > 0) || !isfinite(s->mass[t]))
      return rcl__fail(RCL_ERR_INVALID_ARG, "the mass of type %d is %.17g; it must be positive and finite", t + 1,
                       s->mass[t]);
  double big = dt == RCL_F32 ? 3.4e38 : 1.7e308;
  for (size_t i = 0; i < s->natoms; i++) {
    long long id = s->id ? s->id[i] : (long long)i + 1;
    if (s->type[i] < 1 || s->type[i] > s->ntypes)
      return rcl__fail(RCL_ERR_INVALID_ARG, "atom %lld has type %d; types are 1..%d", id, s->type[i], s->ntypes);
    for (int d = 0; d < 3; d++) {
      double x = s->pos[3 * i + d];
      if (!isfinite(x))
        return rcl__fail(RCL_ERR_INVALID_ARG, "atom %lld has a non-finite position %c = %g", id, axis[d], x);
      if (x < s->lo[d] || x > s->hi[d]) /* hi itself: a wrap can round onto it */
        return rcl__fail(RCL_ERR_INVALID_ARG, "atom %lld lies outside the box: %c = %.17g not in [%.17g, %.17g]", id,
                         axis[d], x, s->lo[d], s->hi[d]);
      if (s->vel && (!isfinite(s->vel[3 * i + d]) || fabs(s->vel[3 * i + d]) > big))
        return rcl__fail(RCL_ERR_INVALID_ARG, "atom %lld has a non-finite velocity v%c = %g", id, axis[d],
                         s->vel[3 * i + d]);
    }
  }
  return 0;
}

static int check_lj(const rcl_md_lj *lj, const rcl_md_system *s) {
  if (lj->version != RCL_MD_LJ_VERSION)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_lj.version is %u, expected %u (use RCL_MD_LJ_INIT)", lj->version,
                     RCL_MD_LJ_VERSION);
  if (!(lj->cutoff >= 0.01 && lj->cutoff <= 1000))
    return rcl__fail(RCL_ERR_INVALID_ARG, "cutoff %.17g is outside [0.01, 1000] (sigma units)", lj->cutoff);
  if (lj->mixing != RCL_MD_MIX_GEOMETRIC && lj->mixing != RCL_MD_MIX_ARITHMETIC)
    return rcl__fail(RCL_ERR_INVALID_ARG, "unknown mixing rule %d", (int)lj->mixing);
  for (int d = 0; d < 3; d++)
    if (s->periodic[d] && lj->cutoff > 0.5 * (s->hi[d] - s->lo[d]))
      return rcl__fail(RCL_ERR_INVALID_ARG,
                       "cutoff %g is larger than half the periodic box length along %c (%.17g): an atom would meet "
                       "two images of a neighbour",
                       lj->cutoff, axis[d], s->hi[d] - s->lo[d]);
  for (int a = 0; a < s->ntypes; a++)
    for (int b = 0; b < s->ntypes; b++) {
      double eps, sigma;
      pair_coeffs(lj, a, b, &eps, &sigma);
      if (!(eps == 0 || (eps >= 1e-10 && eps <= 1e10)) || !(sigma >= 1e-3 && sigma <= 1e3))
        return rcl__fail(RCL_ERR_INVALID_ARG,
                         "pair coefficients of types %d %d: epsilon %g must be 0 or within [1e-10, 1e10] and sigma "
                         "%g within [1e-3, 1e3] (sigma units)",
                         a + 1, b + 1, eps, sigma);
    }
  return 0;
}

static int check_options(const rcl_md_options *o) {
  if (o->kernel_times != 0 && o->kernel_times != 1)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_options.kernel_times %d is neither 0 nor 1", o->kernel_times);
  if ((unsigned)o->path > RCL_MD_PATH_TASK)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_options.path %d is not a force path", (int)o->path);
  if ((unsigned)o->convert > RCL_MD_CONVERT_INTEGER)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_options.convert %d is not a conversion method", (int)o->convert);
  if (o->local_size && !rcl__is_pow2(o->local_size))
    return rcl__fail(RCL_ERR_INVALID_ARG, "local_size %zu is not a power of two", o->local_size);
  if (o->build_local_size && !rcl__is_pow2(o->build_local_size))
    return rcl__fail(RCL_ERR_INVALID_ARG, "build_local_size %zu is not a power of two", o->build_local_size);
  if (!(o->skin >= 0) || !isfinite(o->skin) || (o->skin != 0 && o->skin < 1e-3) || o->skin > 100)
    return rcl__fail(RCL_ERR_INVALID_ARG, "skin %g is outside [0.001, 100] (0 picks 0.3)", o->skin);
  if (o->neighbor_capacity > RCL_MD_MAX_NEIGHBORS)
    return rcl__fail(RCL_ERR_INVALID_ARG, "neighbor_capacity %zu exceeds the limit of %d partners per atom",
                     o->neighbor_capacity, RCL_MD_MAX_NEIGHBORS);
  return 0;
}

/* ---- the simulation ------------------------------------------------------------------------------------- */

int rcl__md_prepare(rcl_md_options *o, rcl_md **out, rcl_context *ctx, rcl_dtype dtype, const rcl_md_system *sys,
                    const rcl_md_lj *lj, const rcl_md_options *opts) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_create: NULL output");
  *out = NULL;
  if (!sys || !lj) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_create: NULL system or coefficients");
  if (rcl_dtype_size(dtype) == 0) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_create: unknown dtype %d", (int)dtype);
  *o = (rcl_md_options)RCL_MD_OPTIONS_INIT;
  if (opts && opts->version != RCL_MD_OPTIONS_VERSION && opts->version != 1)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_options.version is %u, expected %u (use RCL_MD_OPTIONS_INIT)",
                     opts->version, RCL_MD_OPTIONS_VERSION);
  if (opts) /* a version 1 struct ends before kernel_times (0: off) */
    memcpy(o, opts, opts->version == 1 ? offsetof(rcl_md_options, kernel_times) : sizeof *o);
  o->version = RCL_MD_OPTIONS_VERSION;
  int rc = check_options(o);
  if (!rc) rc = check_system(sys, dtype);
  if (!rc) rc = check_lj(lj, sys);
  if (!rc && ctx) rc = rcl__require_support(ctx, RCL_FAMILY_MD, dtype);
  if (rc) return rc;
  if (o->skin == 0) o->skin = 0.3;
  if (o->path == RCL_MD_PATH_AUTO) o->path = RCL_MD_PATH_GATHER;
  return 0;
}

int rcl__md_build(rcl_md **out, rcl_context *ctx, cl_command_queue q, rcl_dtype dtype, const rcl_md_system *sys,
                  const rcl_md_lj *lj, rcl_md_options o, const size_t *soft) {
  const md_backend *be = ctx ? &rcl__md_device_backend : &rcl__md_ref_backend;
  return rcl__md_build_be(out, be, NULL, 0, ctx, q, dtype, sys, lj, o, soft);
}

int rcl__md_build_be(rcl_md **out, const md_backend *be, void *be_arg, size_t step, rcl_context *ctx,
                     cl_command_queue q, rcl_dtype dtype, const rcl_md_system *sys, const rcl_md_lj *lj,
                     rcl_md_options o, const size_t *soft) {
  int rc;
  if (ctx && (rc = rcl__md_plan(&o, ctx, dtype, sys->natoms, sys->ntypes, soft)) != 0) return rc;
  rcl_md *md = rcl__calloc(1, sizeof *md);
  if (!md) return RCL_ERR_OUT_OF_MEMORY;
  md->ctx = ctx;
  md->step = step;
  md->be_arg = be_arg;
  md->queue = q;
  md->dtype = dtype;
  md->bits = rcl_md_fixed_bits(dtype);
  md->n = sys->natoms;
  md->nt = sys->ntypes;
  for (int d = 0; d < 3; d++) {
    md->lo[d] = sys->lo[d];
    md->hi[d] = sys->hi[d];
    md->len[d] = sys->hi[d] - sys->lo[d];
    md->periodic[d] = sys->periodic[d] != 0;
  }
  md->cutoff = lj->cutoff;
  md->skin = o.skin;
  md->path = o.path;
  md->opts = o;
  for (int t = 0; t < md->nt; t++) md->mass[t] = sys->mass[t];
  make_tables(md, lj);
  if ((rc = check_tables(md)) != 0) {
    rcl__free(md);
    return rc;
  }
  md->be = be;
  rc = md->be->init(md, sys);
  if (!rc) rc = md->be->forces(md, 1);
  if (rc) {
    rcl_md_free(md);
    return rc;
  }
  md->have_ev = 1;
  *out = md;
  return 0;
}

int rcl__md_create_on(rcl_md **out, rcl_context *ctx, cl_command_queue q, rcl_dtype dtype, const rcl_md_system *sys,
                      const rcl_md_lj *lj, const rcl_md_options *opts, const size_t *soft) {
  rcl_md_options o;
  int rc = rcl__md_prepare(&o, out, ctx, dtype, sys, lj, opts);
  return rc ? rc : rcl__md_build(out, ctx, q, dtype, sys, lj, o, soft);
}

int rcl_md_check(const rcl_md_system *sys, const rcl_md_lj *lj, rcl_dtype dtype) {
  if (!sys || !lj) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_check: NULL system or coefficients");
  if (rcl_dtype_size(dtype) == 0) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_check: unknown dtype %d", (int)dtype);
  int rc = check_system(sys, dtype);
  if (!rc) rc = check_lj(lj, sys);
  if (rc) return rc;
  rcl_md *md = rcl__calloc(1, sizeof *md);
  if (!md) return RCL_ERR_OUT_OF_MEMORY;
  md->dtype = dtype;
  md->nt = sys->ntypes;
  for (int t = 0; t < md->nt; t++) md->mass[t] = sys->mass[t];
  make_tables(md, lj);
  rc = check_tables(md);
  rcl__free(md);
  return rc;
}

void rcl_md_free(rcl_md *md) {
  if (!md) return;
  if (md->be) md->be->destroy(md);
  rcl__free(md);
}

int rcl_md_thermo_get(rcl_md *md, rcl_md_thermo *out) {
  if (!md || !out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_thermo_get: NULL argument");
  int rc = 0;
  if (!md->have_ev) {
    if ((rc = md->be->forces(md, 1)) != 0) return rc;
    md->have_ev = 1;
  }
  md_sums s;
  if ((rc = md->be->sums(md, &s)) != 0) return rc;
  double pe, w, mv2;
  if (s.native) {
    pe = s.pe_f;
    w = s.virial_f;
    mv2 = s.mv2_f;
  } else {
    pe = md_sum_to_double(s.pe, md->bits);
    w = md_sum_to_double(s.virial, md->bits);
    mv2 = md_sum_to_double(s.mv2, md->bits);
  }
  double ke = 0.5 * mv2, vol = md->len[0] * md->len[1] * md->len[2];
  double dof = 3.0 * (double)md->n - 3.0;
  memset(out, 0, sizeof *out);
  out->step = md->step;
  out->natoms = md->n;
  out->pe = pe;
  out->ke = ke;
  out->etotal = pe + ke;
  out->temperature = dof > 0 ? mv2 / dof : 0.0;
  out->virial = w;
  out->pressure = (mv2 + w) / (3.0 * vol);
  out->neighbor_builds = md->builds;
  return 0;
}

int rcl_md_run(rcl_md *md, size_t steps, double dt, size_t every, rcl_md_thermo_fn fn, void *user) {
  if (!md) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_run: NULL simulation");
  if (!(dt > 0) || !isfinite(dt) || dt > 1e3)
    return rcl__fail(RCL_ERR_INVALID_ARG, "time step %g is not a positive finite number <= 1000", dt);
  int rc = 0;
  if (dt != md->dt) {
    md->dt = dt;
    for (int a = 0; a < md->nt; a++) md->coef[MD_C_DTFM(md->nt) + a] = 0.5 * dt / md->mass[a];
    if ((rc = md->be->set_coef(md)) != 0) return rc;
  }
  rcl_md_thermo th;
  if (fn && every) {
    if ((rc = rcl_md_thermo_get(md, &th)) != 0) return rc;
    if (fn(md, &th, user)) return 0;
  }
  for (size_t s = 1; s <= steps; s++) {
    int want = fn && every && (s == steps || (md->step + 1) % every == 0);
    md->have_ev = 0;
    if ((rc = md->be->step(md, want, want || s == steps)) != 0) return rc;
    md->step++;
    md->steps_taken++;
    md->have_ev = want;
    if (want) {
      if ((rc = rcl_md_thermo_get(md, &th)) != 0) return rc;
      if (fn(md, &th, user)) return 0;
    }
  }
  return md->be->check(md);
}

int rcl_md_get_state(rcl_md *md, void *pos, void *vel) {
  if (!md) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_get_state: NULL simulation");
  if (!pos && !vel) return 0;
  return md->be->get_state(md, pos, vel);
}

int rcl_md_get_forces(rcl_md *md, void *force, int64_t *fixed) {
  if (!md) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_get_forces: NULL simulation");
  if (!force && !fixed) return 0;
  int native = md->ctx && md->ctx->mode == RCL_MODE_NATIVE;
  if (native) {
    if (fixed) return rcl__fail(RCL_ERR_INVALID_ARG, "a native-mode simulation has no fixed-point forces");
    return md->be->get_forces(md, NULL, force);
  }
  size_t n3 = 3 * md->n;
  int64_t *q = fixed ? fixed : rcl__malloc(n3 * sizeof *q);
  if (!q) return RCL_ERR_OUT_OF_MEMORY;
  int rc = md->be->get_forces(md, q, NULL);
  if (!rc && force) {
    /* The contract's conversion: the correctly rounded value of q * 2^-bits (int64 to float/double
     * conversions round to nearest even; the power-of-two scaling is then exact). */
    for (size_t i = 0; i < n3; i++) {
      if (md->dtype == RCL_F32)
        ((float *)force)[i] = ldexpf((float)q[i], -md->bits);
      else
        ((double *)force)[i] = ldexp((double)q[i], -md->bits);
    }
  }
  if (!fixed) rcl__free(q);
  return rc;
}

int rcl_md_get_neighbors(rcl_md *md, size_t atom, size_t *count, size_t *list, size_t cap) {
  if (!md || !count || (cap && !list)) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_get_neighbors: NULL argument");
  if (atom >= md->n) return rcl__fail(RCL_ERR_INVALID_ARG, "atom %zu is out of range (%zu atoms)", atom, md->n);
  if (!md->be->get_neighbors || md->path == RCL_MD_PATH_ALLPAIRS)
    return rcl__fail(RCL_ERR_INVALID_ARG, "this simulation keeps no neighbour lists (%s)",
                     md->ctx ? "allpairs path" : "host reference");
  return md->be->get_neighbors(md, atom, count, list, cap);
}

int rcl_md_get_stats(rcl_md *md, rcl_md_stats *out) {
  if (!md || !out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_md_get_stats: NULL argument");
  memset(out, 0, sizeof *out);
  out->steps = md->steps_taken;
  out->neighbor_builds = md->builds;
  return md->be->stats ? md->be->stats(md, out) : 0;
}

size_t rcl_md_natoms(const rcl_md *md) { return md ? md->n : 0; }
size_t rcl_md_step(const rcl_md *md) { return md ? md->step : 0; }
rcl_dtype rcl_md_dtype(const rcl_md *md) { return md ? md->dtype : RCL_F32; }
rcl_md_path rcl_md_path_used(const rcl_md *md) { return md ? md->path : RCL_MD_PATH_AUTO; }
