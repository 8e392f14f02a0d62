/* The caches' state of a context: the cache directory, the first cache problem, the statistics and the
 * loaded program bundle, guarded by one lock. The binary cache, the tuner and the self-test record into
 * it; the public rcl_cache_* queries of one context read it. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "build/cache_dir.h"
#include "build/cache_state.h"
#include "core/alloc.h"

struct rcl_cache_state {
  pthread_mutex_t lock; /* guards everything below */
  char *dir;            /* NULL: memory only */
  char *warning;
  size_t stats[RCL_STAT_COUNT];
  rcl_bundle *bundle;
};

int rcl__cache_state_create(rcl_context *ctx, const char *configured) {
  rcl_cache_state *c = rcl__calloc(1, sizeof *c);
  if (!c) return RCL_ERR_OUT_OF_MEMORY;
  int rc = rcl__cache_dir_resolve(&c->dir, &c->warning, configured);
  if (!rc && pthread_mutex_init(&c->lock, NULL) != 0) rc = rcl__fail(RCL_ERR_INTERNAL, "pthread_mutex_init failed");
  if (rc) {
    rcl__free(c->dir);
    rcl__free(c->warning);
    rcl__free(c);
    return rc;
  }
  ctx->cache = c;
  /* Offline binaries named by the environment: a bad bundle is an error of the caller's setup. */
  const char *b = getenv("REPROCL_BINARIES");
  if (b && *b && (rc = rcl_program_bundle_load(ctx, b)) != 0) {
    rcl__cache_state_free(ctx);
    rcl__error_append(" (REPROCL_BINARIES=%s)", b);
    return rc;
  }
  return 0;
}

void rcl__cache_state_free(rcl_context *ctx) {
  rcl_cache_state *c = ctx->cache;
  if (!c) return;
  rcl__bundle_free(c->bundle);
  pthread_mutex_destroy(&c->lock);
  rcl__free(c->dir);
  rcl__free(c->warning);
  rcl__free(c);
  ctx->cache = NULL;
}

const char *rcl__cache_dir(const rcl_context *ctx) { return ctx->cache ? ctx->cache->dir : NULL; }

rcl_bundle *rcl__bundle_of(rcl_context *ctx) { return ctx->cache ? ctx->cache->bundle : NULL; }

void rcl__bundle_set(rcl_context *ctx, rcl_bundle *b) {
  pthread_mutex_lock(&ctx->cache->lock);
  rcl_bundle *old = ctx->cache->bundle;
  ctx->cache->bundle = b;
  pthread_mutex_unlock(&ctx->cache->lock);
  rcl__bundle_free(old);
}

void rcl__cache_warn(rcl_context *ctx, const char *fmt, ...) {
  rcl_cache_state *t = ctx->cache;
  if (!t) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&t->lock);
  if (!t->warning) t->warning = strdup(buf); /* plain strdup: a failed warning must not set an error */
  pthread_mutex_unlock(&t->lock);
}

void rcl__stat_add(rcl_context *ctx, rcl_stat s) {
  if (!ctx->cache) return;
  pthread_mutex_lock(&ctx->cache->lock);
  ctx->cache->stats[s]++;
  pthread_mutex_unlock(&ctx->cache->lock);
}

const char *rcl_cache_dir(const rcl_context *ctx) { return ctx ? rcl__cache_dir(ctx) : NULL; }

const char *rcl_cache_warning(const rcl_context *ctx) { return ctx && ctx->cache ? ctx->cache->warning : NULL; }

int rcl_cache_default_dir(char **dir, char **why) {
  if (!dir || !why) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_cache_default_dir: NULL argument");
  char *d = NULL, *w = NULL;
  int rc = rcl__cache_dir_resolve(&d, &w, NULL);
  if (rc) return rc;
  /* Hand back malloc'ed copies the caller frees with free(). */
  *dir = d ? strdup(d) : NULL;
  *why = w ? strdup(w) : NULL;
  rcl__free(d);
  rcl__free(w);
  if ((d && !*dir) || (w && !*why)) return rcl__fail(RCL_ERR_OUT_OF_MEMORY, "out of memory");
  return 0;
}

void rcl_cache_stats_get(rcl_cache_stats *out, const rcl_context *ctx) {
  if (!out) return;
  memset(out, 0, sizeof *out);
  if (!ctx || !ctx->cache) return;
  rcl_cache_state *t = ctx->cache;
  pthread_mutex_lock(&t->lock);
  out->binary_hits = t->stats[RCL_STAT_BINARY_HIT];
  out->binary_misses = t->stats[RCL_STAT_BINARY_MISS];
  out->binary_stored = t->stats[RCL_STAT_BINARY_STORED];
  out->binary_rejected = t->stats[RCL_STAT_BINARY_REJECTED];
  out->bundle_hits = t->stats[RCL_STAT_BUNDLE_HIT];
  out->tune_cache_hits = t->stats[RCL_STAT_TUNE_CACHE_HIT];
  out->tunings = t->stats[RCL_STAT_TUNE_RUN];
  pthread_mutex_unlock(&t->lock);
}

int rcl_program_bundle_load(rcl_context *ctx, const char *path) {
  if (!ctx || !path) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_program_bundle_load: NULL argument");
  char *data = NULL;
  size_t len = 0;
  int rc = rcl__bundle_read_file(&data, &len, path);
  if (rc == RCL_ERR_NOT_FOUND) return rcl__fail(RCL_ERR_NOT_FOUND, "program bundle %s does not exist", path);
  if (rc) return rc;
  rcl_bundle *b;
  rc = rcl__bundle_parse(&b, data, len, path, ctx->profile.fingerprint, ctx->profile.device_name);
  if (rc) return rc;
  rcl__bundle_set(ctx, b);
  return 0;
}
