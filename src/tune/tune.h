/* The autotuner (tune.c): the launch parameters a family asks for, the per-context tuning state and the
 * search. Not installed. */
#ifndef REPROCL_TUNE_TUNE_H
#define REPROCL_TUNE_TUNE_H
#include "tune/kernel.h"

/* The launch parameters for k on ctx at problem size n: a value per parameter (0 where neither a pin,
 * a cached or tuned result nor the platform files give one: the family's own fallback). Tunes first when
 * the context's mode says so (on: once per kernel, dtype and bucket unless cached; force: once per
 * context). Never fails because tuning or a cache failed: those fall back to the defaults, and the
 * problem is kept for rcl_cache_warning(). */
RCL_INTERNAL int rcl__tune_lookup(size_t values[RCL_TUNE_MAX_PARAMS], rcl_context *ctx, const rcl_tune_kernel *k,
                                  rcl_dtype dtype, size_t n);

/* The same values without ever tuning (what rcl_tune_get reports): for "which configuration would a call
 * use" queries that must not spend a tuning budget. */
RCL_INTERNAL int rcl__tune_peek(size_t values[RCL_TUNE_MAX_PARAMS], rcl_context *ctx, const rcl_tune_kernel *k,
                                rcl_dtype dtype, size_t n);

/* The search itself, for any descriptor (rcl_tune goes through the registry; tests pass their own). */
RCL_INTERNAL int rcl__tune_search(rcl_tune_report *rep, rcl_context *ctx, const rcl_tune_kernel *k, rcl_dtype dt,
                                  size_t n, double budget_ms, int samples);

/* ---- per-context state ------------------------------------------------------------------ */
typedef struct rcl_tune_ctx rcl_tune_ctx;
/* kernels: every tunable kernel (NULL-terminated), for the public lookups by name and the platform files. */
RCL_INTERNAL int rcl__tune_ctx_create(rcl_context *ctx, const rcl_tune_kernel *const *kernels);
RCL_INTERNAL void rcl__tune_ctx_free(rcl_context *ctx);
/* Sets whether this thread's calls may start tuning (0) or not (1, as inside a search, or the first-use
 * self-test's runs); returns the previous setting. */
RCL_INTERNAL int rcl__tune_hold(int on);

#endif
