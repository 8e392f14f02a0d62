/* The weights of a split: given by the caller, or measured — each device's time for its family's probe,
 * cached per device on disk (<cache>/split/<device fingerprint>-<family>-<dtype>-<mode>) like launch sizes —
 * and, where the call's size is known, the split's tuned weights of that size bucket when rcl_split_tune
 * cached them (split_tune.c).
 * Weights decide who computes what, never a bit of the result. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build/cache_dir.h"
#include "build/cache_state.h"
#include "split/split_internal.h"

#define PROBE_REPEATS 3

static void cache_name(char *name, size_t cap, rcl_context *ctx, rcl_family family, rcl_dtype dtype) {
  snprintf(name, cap, "%.16s-%s-%s-%s", rcl_context_profile(ctx)->fingerprint, rcl_family_name(family),
           rcl_dtype_name(dtype), rcl_mode_name(rcl_context_mode(ctx)));
}

static int cache_load(double *seconds, const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/split/%s", dir, name);
  char *data = NULL;
  size_t size = 0;
  if (rcl__cache_read_file(&data, &size, path)) {
    rcl_error_clear();
    return 0;
  }
  double v = 0;
  int ok = sscanf(data, "seconds %lf", &v) == 1 && v > 0 && v < 1e6;
  rcl__free(data);
  if (ok) *seconds = v;
  return ok;
}

/* A failed write leaves the weights measured for this call only: a cache never fails a computation. */
static void cache_store(const char *dir, const char *name, double seconds) {
  char sub[4096], text[64];
  snprintf(sub, sizeof sub, "%s/split", dir);
  int len = snprintf(text, sizeof text, "seconds %.9g\n", seconds);
  if (rcl__cache_dir_writable(sub) || rcl__cache_write_atomic(sub, name, text, (size_t)len)) rcl_error_clear();
}

int rcl__split_probe_cached(double *seconds, rcl_context *ctx, rcl_family family, rcl_dtype dtype,
                            rcl_split_probe probe) {
  char name[128];
  cache_name(name, sizeof name, ctx, family, dtype);
  const char *dir = rcl__cache_dir(ctx);
  if (dir && ctx->tuning != RCL_TUNING_FORCE && cache_load(seconds, dir, name)) return 0;
  double best = 0;
  for (int r = 0; r < PROBE_REPEATS; r++) {
    double t = 0;
    int rc = probe(&t, ctx, dtype);
    if (rc) return rc;
    if (r == 0 || t < best) best = t;
  }
  if (!(best > 0)) best = 1e-9;
  *seconds = best;
  if (dir) cache_store(dir, name, best);
  return 0;
}

/* ---- tuned weights (rcl_split_tune, split_tune.c, writes them) ---------------------------------- */

static unsigned bucket_of(size_t size) {
  unsigned b = 0;
  while (size > 1) size >>= 1, b++;
  return b;
}

static const char *const op_names[RCL_SPLIT_OP_COUNT] = {"reduce", "spmv", "cg", "stencil"};

/* The devices and their modes, and the tuning rule (entries of an older rule are not read). */
void rcl__split_tuned_name(char *name, size_t cap, const rcl_split *s, rcl_split_op op, rcl_dtype dtype, size_t size) {
  rcl_sha256_ctx h;
  rcl_sha256_init(&h);
  for (size_t i = 0; i < s->count; i++) {
    const char *fp = rcl_context_profile(s->ctx[i])->fingerprint;
    const char *mode = rcl_mode_name(rcl_context_mode(s->ctx[i]));
    rcl_sha256_update(&h, fp, strlen(fp));
    rcl_sha256_update(&h, mode, strlen(mode) + 1);
  }
  static const char rule[] = "rule 2: one device alone unless a split beats it by the margin";
  rcl_sha256_update(&h, rule, sizeof rule - 1);
  char hex[RCL_SHA256_HEX_SIZE];
  rcl_sha256_final_hex(&h, hex);
  snprintf(name, cap, "tuned-%.16s-%s-%s-b%u", hex, op_names[op], rcl_dtype_name(dtype), bucket_of(size));
}

/* The optional lines that say why (rcl_split_tune_info). */
static void info_parse(rcl_split_tune_info *info, const char *data, const double *w, size_t count) {
  memset(info, 0, sizeof *info);
  info->cached = 1;
  size_t positive = 0;
  for (size_t i = 0; i < count; i++) positive += w[i] > 0;
  info->split_kept = positive > 1;
  for (size_t i = 0; !info->split_kept && i < count; i++)
    if (w[i] > 0) info->alone = i;
  const char *p = strstr(data, "\nalone ");
  if (p) sscanf(p, "\nalone %*s %lf", &info->alone_s);
  if ((p = strstr(data, "\nsplit ")) != NULL) sscanf(p, "\nsplit %lf", &info->split_s);
  if ((p = strstr(data, "\nmargin ")) != NULL) sscanf(p, "\nmargin %lf", &info->margin);
}

int rcl__split_tuned_load(double *w, rcl_split_tune_info *info, const rcl_split *s, const char *name) {
  const char *dir = rcl__cache_dir(s->ctx[0]);
  char path[4096], *data = NULL;
  size_t size = 0;
  if (!dir) return 0;
  snprintf(path, sizeof path, "%s/split/%s", dir, name);
  if (rcl__cache_read_file(&data, &size, path)) {
    rcl_error_clear();
    return 0;
  }
  int ok = strncmp(data, "weights", 7) == 0, used = 7, positive = 0;
  for (size_t i = 0; ok && i < s->count; i++) {
    int len = 0;
    ok = sscanf(data + used, " %lf%n", &w[i], &len) == 1 && w[i] >= 0 && isfinite(w[i]);
    used += len;
    positive |= ok && w[i] > 0;
  }
  double extra;
  ok = ok && positive && sscanf(data + used, " %lf", &extra) != 1; /* no more weights than devices */
  if (ok && info) info_parse(info, data, w, s->count);
  rcl__free(data);
  return ok;
}

/* The entry a call of family reads: the family's operation; a split matrix: CG's, else SpMV's. */
static int tuned_of(double *t, rcl_split *s, rcl_family family, rcl_dtype dtype, size_t n) {
  char name[128];
  rcl_split_op op = family == RCL_FAMILY_REDUCE ? RCL_SPLIT_OP_REDUCE
                    : family == RCL_FAMILY_SPMV ? RCL_SPLIT_OP_CG
                                                : RCL_SPLIT_OP_STENCIL;
  rcl__split_tuned_name(name, sizeof name, s, op, dtype, n);
  if (rcl__split_tuned_load(t, NULL, s, name)) return 1;
  if (op != RCL_SPLIT_OP_CG) return 0;
  rcl__split_tuned_name(name, sizeof name, s, RCL_SPLIT_OP_SPMV, dtype, n);
  return rcl__split_tuned_load(t, NULL, s, name);
}

int rcl__split_tuned(double *w, rcl_split *s, rcl_family family, rcl_dtype dtype, size_t n) {
  size_t usable = 0;
  for (size_t i = 0; i < s->count; i++) usable += w[i] > 0;
  if (s->given || n == 0 || usable < 2) return 0;
  double *t = rcl__malloc(s->count * sizeof *t);
  if (!t) return 0;
  int got = tuned_of(t, s, family, dtype, n), positive = 0;
  for (size_t i = 0; got && i < s->count; i++) positive |= w[i] > 0 && t[i] > 0;
  for (size_t i = 0; got && positive && i < s->count; i++) w[i] = w[i] > 0 ? t[i] : 0; /* left out stays out */
  rcl__free(t);
  return got && positive;
}

/* 0 when device i can run the family and dtype bit-exactly; else the reason (a note, or with strict an
 * error naming the device). */
static int usable(const char **why, rcl_split *s, size_t i, rcl_family family, rcl_dtype dtype) {
  *why = NULL;
  const rcl_device_profile *p = rcl_context_profile(s->ctx[i]);
  const char *reason = NULL;
  if (rcl_device_profile_support(p, family, dtype, &reason) == RCL_SUPPORT_NONE) *why = reason;
  rcl_verdict v;
  if (!*why && rcl_context_mode(s->ctx[i]) == RCL_MODE_REPRODUCIBLE) {
    int rc = rcl_context_verdict(&v, &reason, s->ctx[i], family, dtype);
    if (rc) return rc;
    if (v == RCL_VERDICT_UNSUPPORTED) *why = reason ? reason : "its self-test failed";
  }
  if (*why && s->strict)
    return rcl__fail(RCL_ERR_UNSUPPORTED, "device %zu (%s) cannot run %s %s bit-exactly: %s", i, p->device_name,
                     rcl_family_name(family), rcl_dtype_name(dtype), *why);
  return 0;
}

int rcl__split_weights(double *w, rcl_split *s, rcl_family family, rcl_dtype dtype, rcl_split_probe probe) {
  return rcl__split_weights_sized(w, s, family, dtype, 0, probe);
}

int rcl__split_weights_sized(double *w, rcl_split *s, rcl_family family, rcl_dtype dtype, size_t n,
                             rcl_split_probe probe) {
  int any = 0;
  for (size_t i = 0; i < s->count; i++) {
    const char *why = NULL;
    int rc = usable(&why, s, i, family, dtype);
    if (rc) return rc;
    s->note[i] = why;
    w[i] = 0;
    if (why) continue;
    if (s->given)
      w[i] = s->given[i];
    else if (!probe || s->ctx[i]->tuning == RCL_TUNING_OFF)
      w[i] = 1;
    else {
      double t = 0;
      if ((rc = rcl__split_probe_cached(&t, s->ctx[i], family, dtype, probe)) != 0) return rc;
      w[i] = 1 / t;
    }
    any |= w[i] > 0;
  }
  if (!any)
    return rcl__fail(RCL_ERR_UNSUPPORTED, "split: no device left to run %s %s (%s)", rcl_family_name(family),
                     rcl_dtype_name(dtype), s->given ? "the weights of every usable device are 0" : "none can");
  if (probe) rcl__split_tuned(w, s, family, dtype, n); /* measured weights: tuned ones where a size is known */
  return 0;
}
