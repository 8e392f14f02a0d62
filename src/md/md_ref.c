/* The host C reference of the MD contracts (docs/contracts.md §9): plain C compiled with
 * -ffp-contract=off, every pair of atoms visited once (O(N^2), i < j), no neighbour lists, no cells, no
 * atom reordering. It shares no code with the kernels, so a device result equal to it bit for bit checks
 * both. Used by the tests and by `reprocl md --reference`. */
#include <math.h>
#include <stdlib.h>

#include "md/md_internal.h"

typedef struct {
  void *pos, *vel; /* [3n] of the dtype */
  void *coef;      /* the tables rounded to the dtype */
  int *type;       /* 0-based */
  int *partners;
  int64_t *f;      /* [3n] fixed point */
  md_sum pe, vir;  /* each pair once */
  int have_ev;
} ref_state;

/* One template per dtype: T the type, S the suffix of its libm functions. */
#define MD_REF_DEFINE(T, S)                                                                                  \
  static int conv_##T(int64_t *q, T v, T limit) {                                                            \
    if (!(fabs##S(v) < limit)) return 0; /* also NaN */                                                      \
    *q = (int64_t)llrint##S(v);          /* round to nearest even: the default rounding mode */             \
    return 1;                                                                                                \
  }                                                                                                          \
  static T image_##T(T d, T len, T half) {                                                                   \
    if (d > half) return d - len;                                                                            \
    if (d < -half) return d + len;                                                                           \
    return d;                                                                                                \
  }                                                                                                          \
  static void box_##T(const rcl_md *md, T *lo, T *hi, T *len, T *half) {                                     \
    for (int d = 0; d < 3; d++) {                                                                            \
      lo[d] = (T)md->lo[d];                                                                                  \
      hi[d] = (T)md->hi[d];                                                                                  \
      len[d] = (T)md->len[d];                                                                                \
      half[d] = md->periodic[d] ? len[d] / 2 : (T)INFINITY;                                                  \
    }                                                                                                        \
  }                                                                                                          \
  static int forces_##T(rcl_md *md, ref_state *r, int ev) {                                                  \
    const T *x = r->pos, *c = r->coef;                                                                       \
    const int nt = md->nt;                                                                                   \
    const T rc2 = (T)(md->cutoff * md->cutoff), scale = (T)ldexp(1.0, md->bits);                             \
    const T limit = (T)ldexp(1.0, RCL_MD_FIXED_LIMIT_LOG2);                                                  \
    T lo[3], hi[3], len[3], half[3];                                                                         \
    box_##T(md, lo, hi, len, half);                                                                          \
    memset(r->f, 0, 3 * md->n * sizeof *r->f);                                                               \
    memset(r->partners, 0, md->n * sizeof *r->partners);                                                     \
    md_sum pe = {0, 0}, vir = {0, 0};                                                                        \
    int ok = 1;                                                                                              \
    for (size_t i = 0; i < md->n; i++)                                                                       \
      for (size_t j = i + 1; j < md->n; j++) {                                                               \
        T dx = image_##T(x[3 * i] - x[3 * j], len[0], half[0]);                                              \
        T dy = image_##T(x[3 * i + 1] - x[3 * j + 1], len[1], half[1]);                                      \
        T dz = image_##T(x[3 * i + 2] - x[3 * j + 2], len[2], half[2]);                                      \
        T r2 = (dx * dx + dy * dy) + dz * dz;                                                                \
        if (!(r2 < rc2)) continue;                                                                           \
        r->partners[i]++;                                                                                    \
        r->partners[j]++;                                                                                    \
        int t = r->type[i] * nt + r->type[j];                                                                \
        T r2inv = (T)1 / r2;                                                                                 \
        T r6inv = (r2inv * r2inv) * r2inv;                                                                   \
        T forcelj = r6inv * (c[MD_C_LJ1(nt) + t] * r6inv - c[MD_C_LJ2(nt) + t]);                             \
        T fs = (forcelj * r2inv) * scale;                                                                    \
        T fv[3] = {dx * fs, dy * fs, dz * fs};                                                               \
        for (int d = 0; d < 3; d++) {                                                                        \
          int64_t q = 0;                                                                                     \
          ok &= conv_##T(&q, fv[d], limit);                                                                  \
          r->f[3 * i + d] += q;                                                                              \
          r->f[3 * j + d] -= q;                                                                              \
        }                                                                                                    \
        if (ev) {                                                                                            \
          T e = r6inv * (c[MD_C_LJ3(nt) + t] * r6inv - c[MD_C_LJ4(nt) + t]) - c[MD_C_OFF(nt) + t];           \
          int64_t qe = 0, qw = 0;                                                                            \
          ok &= conv_##T(&qe, e * scale, limit);                                                             \
          ok &= conv_##T(&qw, r2 * fs, limit);                                                               \
          md_sum_add(&pe, qe);                                                                               \
          md_sum_add(&vir, qw);                                                                              \
        }                                                                                                    \
        if (!ok) return md_status_error(md, MD_ERR_RANGE, "in the force computation");                       \
      }                                                                                                      \
    for (size_t i = 0; i < md->n; i++)                                                                       \
      if (r->partners[i] > RCL_MD_MAX_NEIGHBORS)                                                             \
        return md_status_error(md, MD_ERR_PARTNERS, "in the force computation");                             \
    r->pe = pe;                                                                                              \
    r->vir = vir;                                                                                            \
    r->have_ev = ev;                                                                                         \
    return 0;                                                                                                \
  }                                                                                                          \
  /* v += dtfm * F with F the correctly rounded value of the fixed-point force. */                           \
  static int kick_##T(rcl_md *md, T *v, const T *c, const int *type, const int64_t *fq) {                   \
    for (size_t i = 0; i < md->n; i++) {                                                                     \
      T h = c[MD_C_DTFM(md->nt) + type[i]];                                                                  \
      for (int d = 0; d < 3; d++) {                                                                          \
        T f = ldexp##S((T)fq[3 * i + d], -md->bits);                                                         \
        v[3 * i + d] = v[3 * i + d] + h * f;                                                                 \
        if (!isfinite(v[3 * i + d])) return md_status_error(md, MD_ERR_NONFINITE, "in the integration");     \
      }                                                                                                      \
    }                                                                                                        \
    return 0;                                                                                                \
  }                                                                                                          \
  static int drift_##T(rcl_md *md, T *x, const T *v) {                                                      \
    const T dtv = (T)md->dt;                                                                                 \
    T lo[3], hi[3], len[3], half[3];                                                                         \
    box_##T(md, lo, hi, len, half);                                                                          \
    for (size_t i = 0; i < md->n; i++)                                                                       \
      for (int d = 0; d < 3; d++) {                                                                          \
        T p = x[3 * i + d] + dtv * v[3 * i + d];                                                             \
        int escaped = 0;                                                                                     \
        if (md->periodic[d]) {                                                                               \
          if (p >= hi[d]) p = p - len[d];                                                                    \
          else if (p < lo[d]) p = p + len[d];                                                                \
          escaped = p < lo[d] - len[d] * (T)0.5 || hi[d] + len[d] * (T)0.5 < p;                              \
        }                                                                                                    \
        if (!isfinite(p) || !isfinite(v[3 * i + d]))                                                         \
          return md_status_error(md, MD_ERR_NONFINITE, "in the integration");                                \
        if (escaped) return md_status_error(md, MD_ERR_ESCAPED, "in the integration");                       \
        x[3 * i + d] = p;                                                                                    \
      }                                                                                                      \
    return 0;                                                                                                \
  }                                                                                                          \
  static int kinetic_##T(rcl_md *md, const T *v, const T *c, const int *type, md_sum *out) {                 \
    const T scale = (T)ldexp(1.0, md->bits), limit = (T)ldexp(1.0, 62);                                      \
    md_sum s = {0, 0};                                                                                       \
    for (size_t i = 0; i < md->n; i++) {                                                                     \
      T m = c[MD_C_MASS(md->nt) + type[i]];                                                                  \
      T vx = v[3 * i], vy = v[3 * i + 1], vz = v[3 * i + 2];                                                 \
      T mv2 = m * ((vx * vx + vy * vy) + vz * vz);                                                           \
      int64_t q = 0;                                                                                         \
      if (!conv_##T(&q, mv2 * scale, limit))                                                                 \
        return md_status_error(md, MD_ERR_KINETIC, "in the thermo sums");                                    \
      md_sum_add(&s, q);                                                                                     \
    }                                                                                                        \
    *out = s;                                                                                                \
    return 0;                                                                                                \
  }

MD_REF_DEFINE(float, f)
MD_REF_DEFINE(double, )

int rcl__md_host_kick(rcl_md *md, void *vel, const void *coef, const int *type, const int64_t *f) {
  return md->dtype == RCL_F32 ? kick_float(md, vel, coef, type, f) : kick_double(md, vel, coef, type, f);
}

int rcl__md_host_drift(rcl_md *md, void *pos, const void *vel) {
  return md->dtype == RCL_F32 ? drift_float(md, pos, vel) : drift_double(md, pos, vel);
}

int rcl__md_host_kinetic(rcl_md *md, const void *vel, const void *coef, const int *type, md_sum *out) {
  return md->dtype == RCL_F32 ? kinetic_float(md, vel, coef, type, out) : kinetic_double(md, vel, coef, type, out);
}

static int ref_set_coef(rcl_md *md) {
  ref_state *r = md->bs;
  for (int i = 0; i < MD_NCOEF(md->nt); i++) md_put_real(r->coef, (size_t)i, md->dtype, md->coef[i]);
  return 0;
}

static void ref_destroy(rcl_md *md) {
  ref_state *r = md->bs;
  if (!r) return;
  rcl__free(r->pos);
  rcl__free(r->vel);
  rcl__free(r->coef);
  rcl__free(r->type);
  rcl__free(r->partners);
  rcl__free(r->f);
  rcl__free(r);
  md->bs = NULL;
}

static int ref_init(rcl_md *md, const rcl_md_system *sys) {
  size_t es = rcl_dtype_size(md->dtype), n = md->n;
  ref_state *r = rcl__calloc(1, sizeof *r);
  if (!r) return RCL_ERR_OUT_OF_MEMORY;
  md->bs = r;
  r->pos = rcl__malloc(3 * n * es);
  r->vel = rcl__malloc(3 * n * es);
  r->coef = rcl__malloc((size_t)MD_NCOEF(md->nt) * es);
  r->type = rcl__malloc(n * sizeof *r->type);
  r->partners = rcl__malloc(n * sizeof *r->partners);
  r->f = rcl__malloc(3 * n * sizeof *r->f);
  if (!r->pos || !r->vel || !r->coef || !r->type || !r->partners || !r->f) return RCL_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < 3 * n; i++) {
    md_put_real(r->pos, i, md->dtype, sys->pos[i]);
    md_put_real(r->vel, i, md->dtype, sys->vel ? sys->vel[i] : 0.0);
  }
  for (size_t i = 0; i < n; i++) r->type[i] = sys->type[i] - 1;
  return ref_set_coef(md);
}

static int ref_forces(rcl_md *md, int ev) {
  ref_state *r = md->bs;
  return md->dtype == RCL_F32 ? forces_float(md, r, ev) : forces_double(md, r, ev);
}

static int ref_step(rcl_md *md, int ev, int complete) {
  ref_state *r = md->bs;
  (void)complete;
  int rc = rcl__md_host_kick(md, r->vel, r->coef, r->type, r->f);
  if (!rc) rc = rcl__md_host_drift(md, r->pos, r->vel);
  if (!rc) rc = ref_forces(md, ev);
  if (!rc) rc = rcl__md_host_kick(md, r->vel, r->coef, r->type, r->f);
  return rc;
}

static int ref_sums(rcl_md *md, md_sums *out) {
  ref_state *r = md->bs;
  memset(out, 0, sizeof *out);
  if (!r->have_ev) return rcl__fail(RCL_ERR_INTERNAL, "MD reference: thermo sums without an energy evaluation");
  out->pe = r->pe;
  out->virial = r->vir;
  return rcl__md_host_kinetic(md, r->vel, r->coef, r->type, &out->mv2);
}

static int ref_get_state(rcl_md *md, void *pos, void *vel) {
  ref_state *r = md->bs;
  size_t bytes = 3 * md->n * rcl_dtype_size(md->dtype);
  if (pos) memcpy(pos, r->pos, bytes);
  if (vel) memcpy(vel, r->vel, bytes);
  return 0;
}

static int ref_get_forces(rcl_md *md, int64_t *fixed, void *native_force) {
  ref_state *r = md->bs;
  (void)native_force;
  memcpy(fixed, r->f, 3 * md->n * sizeof *fixed);
  return 0;
}

static int ref_check(rcl_md *md) {
  (void)md; /* the reference reports every error where it happens */
  return 0;
}

const md_backend rcl__md_ref_backend = {ref_init,      ref_destroy,    ref_set_coef, ref_forces, ref_step, ref_sums,
                                        ref_get_state, ref_get_forces, NULL,         ref_check, NULL};
