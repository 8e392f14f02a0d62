/* Internals of the multi-device split (include/reprocl/split.h). split.c holds the split itself (devices,
 * weights, shares, running work on every device at once); split_weights.c the measured weights and their
 * cache; one file per family runs the family over a split (split_reduce.c, split_sparse.c,
 * split_stencil.c). Not installed. */
#ifndef REPROCL_SPLIT_INTERNAL_H
#define REPROCL_SPLIT_INTERNAL_H
#include "core/internal.h"
#include "reprocl/split.h"

struct rcl_split {
  size_t count;
  rcl_context **ctx;
  int own; /* the contexts were created here (rcl_split_create) and are freed with the split */
  rcl_tuning_mode tuning;
  int strict;
  double *given; /* the caller's weights (count values), or NULL: measured */
  size_t *first; /* the last call's shares (count values each) */
  size_t *size;
  const char **note; /* why a device was left out of the last call (static or profile-lifetime strings) */
};

/* How long one device takes for a family's probe (a representative call of that family and dtype). */
typedef int (*rcl_split_probe)(double *seconds, rcl_context *ctx, rcl_dtype dtype);

/* The weights of a call of family and dtype (count values): the given ones; else the measured
 * throughputs (probe run on each device on first use, cached per device on disk, equal weights when
 * tuning is off or probe is NULL); devices that cannot run the family and dtype get 0 (strict:
 * RCL_ERR_UNSUPPORTED naming them). Records each device's note for rcl_split_share. At least one weight
 * is > 0 on success. */
RCL_INTERNAL int rcl__split_weights(double *w, rcl_split *s, rcl_family family, rcl_dtype dtype, rcl_split_probe probe);
/* The same for a call whose index space has n elements, rows or grid rows (0: unknown): where the weights are
 * measured, the split's tuned weights of that size bucket replace them when they are cached
 * (rcl__split_tuned). */
RCL_INTERNAL int rcl__split_weights_sized(double *w, rcl_split *s, rcl_family family, rcl_dtype dtype, size_t n,
                                          rcl_split_probe probe);
/* Replaces the measured weights w (0 for a device left out) with the split's tuned weights for a call of
 * family and size n from the cache (rcl_split_tune_op writes them; the SpMV family reads the CG entry, else
 * the SpMV entry). Returns 1 when it replaced them; 0 (w unchanged) otherwise. Never fails. */
RCL_INTERNAL int rcl__split_tuned(double *w, rcl_split *s, rcl_family family, rcl_dtype dtype, size_t n);
/* The tuned-weights cache entry of a split, operation, dtype and size bucket (floor(log2(size))): its file
 * name under <cache>/split/, and 1 with w[0..count) read from it (0 where there is none or it does not fit;
 * info, unless NULL, from its lines alone/split/margin where present). */
RCL_INTERNAL void rcl__split_tuned_name(char *name, size_t cap, const rcl_split *s, rcl_split_op op, rcl_dtype dtype,
                                        size_t size);
RCL_INTERNAL int rcl__split_tuned_load(double *w, rcl_split_tune_info *info, const rcl_split *s, const char *name);
/* The one device whose share of a cut is everything (bounds[0..count], n = bounds[count] > 0), or SIZE_MAX.
 * Such a call runs that device's one-device call itself (no threads, halos or copies). */
RCL_INTERNAL size_t rcl__split_alone(const rcl_split *s, const size_t *bounds);
/* The cut of a call: weights (rcl__split_weights_sized with n), then bounds[0..count] (rcl_split_partition), recorded
 * as the split's shares. */
RCL_INTERNAL int rcl__split_plan(size_t *bounds, rcl_split *s, rcl_family family, rcl_dtype dtype, size_t n,
                                 size_t granule, rcl_split_probe probe);
/* Runs fn(arg, i) for every device i with a non-empty share [bounds[i], bounds[i+1]), each on its own
 * thread (inline when only one has work), and waits for all. The first failure by device index is
 * returned with its message prefixed by the device: "device 1 (pthread-Intel...): ...". */
RCL_INTERNAL int rcl__split_each(rcl_split *s, const size_t *bounds, int (*fn)(void *arg, size_t i), void *arg);
/* The probe of a family (split_probe.c); NULL: none, equal weights. */
RCL_INTERNAL rcl_split_probe rcl__split_probe(rcl_family family);
/* The measured-weights cache (split_weights.c): seconds of the probe on ctx, from the cache or measured. */
RCL_INTERNAL int rcl__split_probe_cached(double *seconds, rcl_context *ctx, rcl_family family, rcl_dtype dtype,
                                         rcl_split_probe probe);

#endif
