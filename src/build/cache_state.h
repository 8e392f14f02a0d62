/* The caches' state of a context (cache_state.c): its cache directory, its first cache problem (kept for
 * rcl_cache_warning, never printed), the statistics of rcl_cache_stats and the loaded program bundle.
 * Created and freed with the context, below the tuner, which records into it too. Not installed. */
#ifndef REPROCL_BUILD_CACHE_STATE_H
#define REPROCL_BUILD_CACHE_STATE_H
#include "build/bundle.h"
#include "core/context.h"

typedef struct rcl_cache_state rcl_cache_state;
/* Resolves the cache directory (the configured one, else the environment's: cache_dir.c) and loads the
 * bundle named by $REPROCL_BINARIES, if any (a bad bundle is an error of the caller's setup). */
RCL_INTERNAL int rcl__cache_state_create(rcl_context *ctx, const char *configured_dir);
RCL_INTERNAL void rcl__cache_state_free(rcl_context *ctx);
/* The resolved cache directory (NULL: memory only). */
RCL_INTERNAL const char *rcl__cache_dir(const rcl_context *ctx);
/* Records the first cache problem of the context (kept for rcl_cache_warning; never printed). */
RCL_INTERNAL void rcl__cache_warn(rcl_context *ctx, const char *fmt, ...) RCL_PRINTF(2, 3);
/* Counters of rcl_cache_stats. */
typedef enum {
  RCL_STAT_BINARY_HIT,
  RCL_STAT_BINARY_MISS,
  RCL_STAT_BINARY_STORED,
  RCL_STAT_BINARY_REJECTED,
  RCL_STAT_BUNDLE_HIT,
  RCL_STAT_TUNE_CACHE_HIT,
  RCL_STAT_TUNE_RUN,
  RCL_STAT_COUNT
} rcl_stat;
RCL_INTERNAL void rcl__stat_add(rcl_context *ctx, rcl_stat s);
/* The loaded program bundle of the context, or NULL. */
RCL_INTERNAL rcl_bundle *rcl__bundle_of(rcl_context *ctx);
/* Sets the bundle; the previous one is freed. */
RCL_INTERNAL void rcl__bundle_set(rcl_context *ctx, rcl_bundle *b);

#endif
