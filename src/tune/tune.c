/* The autotuner: per-context choices of launch parameters, the search that proves every candidate's
 * output bits equal the default configuration's, and the public tuning API. The files behind it are
 * tune_cache.c (the cache file), params.c (parameter values), platform.c (the built-in defaults) and,
 * below, build/cache_dir.c (where the cache lives) and build/cache_state.c (its directory, warning and
 * statistics per context). The table of every family's kernels comes from context creation.
 *
 * The search (tune_now): the family builds its programs and scratch data; every point of the space is
 * checked by the family's validity predicate (invalid points are never launched) and reduced to the
 * launch it really makes (clamped duplicates are timed once); the default configuration is the
 * reference. Each candidate gets one discarded warm-up launch (PoCL compiles per work-group size) whose
 * output digest must equal the reference's (a mismatch excludes it and is reported); then rounds of one
 * timed launch per candidate, round-robin so drift in clocks or temperature hits all alike, timed with
 * profiling events from the first command's start to the last one's end. After three rounds candidates
 * more than PRUNE_FACTOR times slower than the best are dropped; the rest get an odd number of samples.
 * A candidate replaces the default only if its median is CLEAR_MARGIN faster and its upper quartile is
 * below the default's lower quartile. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "build/cache_state.h"
#include "build/program_unit.h"
#include "core/alloc.h"
#include "core/launch.h"
#include "tune/params.h"
#include "tune/platform.h"
#include "tune/tune.h"
#include "tune/tune_cache.h"

#define PRUNE_FACTOR 3.0
#define CLEAR_MARGIN 0.05
#define FIRST_ROUNDS 3
#define MAX_SAMPLES 31
#define DEFAULT_BUDGET_MS 1000.0
#define DEFAULT_SAMPLES 7
#define WARMUP_SHARE 0.5 /* of the budget, at most, for the warm-ups of candidates other than the default */
/* Tuning on first use stops at this problem size: one launch of a larger problem can take the whole
 * budget (and its scratch copies the memory); `reprocl tune --size N` tunes any size explicitly. */
#define FIRST_USE_MAX_N ((size_t)1 << 24)

const char *rcl_tune_origin_name(rcl_tune_origin o) {
  static const char *names[] = {"defaults", "cache", "tuned", "user"};
  return (unsigned)o <= RCL_TUNE_FROM_USER ? names[o] : "unknown";
}

/* ---- per-context state ------------------------------------------------------------------------------ */

/* One kernel/dtype/bucket of a context. */
typedef struct tentry {
  struct tentry *next;
  const rcl_tune_kernel *k;
  rcl_dtype dt;
  unsigned bucket;
  int attempted;  /* tuning was tried in this context (successful or not): never again */
  int has_choice; /* v holds a tuned or cached choice */
  int looked_up;  /* the disk records were searched for it (they are read once per context: the answer stays) */
  rcl_tune_origin origin;
  size_t v[RCL_TUNE_MAX_PARAMS];
  double time_s, default_s, spread, tuning_s;
  unsigned samples;
  int has_pin;
  size_t pin[RCL_TUNE_MAX_PARAMS];
  int has_defaults; /* the platform files' values, read once per context */
  size_t defaults[RCL_TUNE_MAX_PARAMS];
} tentry;

/* The key hashes of one kernel/dtype in this context's mode. */
typedef struct tkey {
  struct tkey *next;
  const rcl_tune_kernel *k;
  rcl_dtype dt;
  char src[17], opts[17];
} tkey;

struct rcl_tune_ctx {
  pthread_mutex_t lock;                  /* guards everything below */
  pthread_mutex_t tune_lock;             /* one search at a time per context */
  const rcl_tune_kernel *const *kernels; /* every tunable kernel (NULL-terminated), for lookups by name */
  int disk_loaded;
  rcl_tcache_record *disk; /* records of this device, library and schema */
  size_t ndisk;
  tentry *entries;
  tkey *keys;
};

int rcl__tune_ctx_create(rcl_context *ctx, const rcl_tune_kernel *const *kernels) {
  rcl_tune_ctx *t = rcl__calloc(1, sizeof *t);
  if (!t) return RCL_ERR_OUT_OF_MEMORY;
  int rc = 0;
  if (pthread_mutex_init(&t->lock, NULL) != 0) rc = rcl__fail(RCL_ERR_INTERNAL, "pthread_mutex_init failed");
  if (!rc && pthread_mutex_init(&t->tune_lock, NULL) != 0) {
    pthread_mutex_destroy(&t->lock);
    rc = rcl__fail(RCL_ERR_INTERNAL, "pthread_mutex_init failed");
  }
  if (rc) {
    rcl__free(t);
    return rc;
  }
  t->kernels = kernels;
  ctx->tune = t;
  return 0;
}

void rcl__tune_ctx_free(rcl_context *ctx) {
  rcl_tune_ctx *t = ctx->tune;
  if (!t) return;
  for (tentry *e = t->entries, *n; e; e = n) {
    n = e->next;
    rcl__free(e);
  }
  for (tkey *k = t->keys, *n; k; k = n) {
    n = k->next;
    rcl__free(k);
  }
  pthread_mutex_destroy(&t->lock);
  pthread_mutex_destroy(&t->tune_lock);
  rcl__free(t->disk);
  rcl__free(t);
  ctx->tune = NULL;
}

/* A tunable kernel of the context's table by name, or NULL. */
static const rcl_tune_kernel *kernel_find(const rcl_tune_ctx *t, const char *name) {
  for (const rcl_tune_kernel *const *k = t->kernels; name && *k; k++)
    if (!strcmp((*k)->name, name)) return *k;
  return NULL;
}

/* ---- keys --------------------------------------------------------------------------------------------- */

/* The key hashes of k/dt (rcl__program_tune_key: the program's full source, prelude parts included, and
 * its build options in this context's mode), computed once per context. Called with t->lock held. */
static int key_of(const tkey **out, rcl_context *ctx, const rcl_tune_kernel *k, rcl_dtype dt) {
  rcl_tune_ctx *t = ctx->tune;
  for (tkey *e = t->keys; e; e = e->next)
    if (e->k == k && e->dt == dt) {
      *out = e;
      return 0;
    }
  tkey *e = rcl__calloc(1, sizeof *e);
  if (!e) return RCL_ERR_OUT_OF_MEMORY;
  int rc = rcl__program_tune_key(e->src, e->opts, ctx, k->source, dt, k->defines);
  if (rc) {
    rcl__free(e);
    return rc;
  }
  e->k = k;
  e->dt = dt;
  e->next = t->keys;
  t->keys = e;
  *out = e;
  return 0;
}

static void record_key(rcl_tcache_record *r, const rcl_context *ctx, const rcl_tune_kernel *k, const tkey *key,
                       rcl_dtype dt, unsigned bucket) {
  memset(r, 0, sizeof *r);
  snprintf(r->fingerprint, sizeof r->fingerprint, "%s", ctx->profile.fingerprint);
  snprintf(r->lib, sizeof r->lib, "%s", REPROCL_VERSION_STRING);
  r->schema = RCL_TCACHE_SCHEMA;
  snprintf(r->kernel, sizeof r->kernel, "%s", k->name);
  memcpy(r->src, key->src, 17);
  memcpy(r->opts, key->opts, 17);
  r->contract = k->contract_version;
  snprintf(r->dtype, sizeof r->dtype, "%s", rcl_dtype_name(dt));
  r->bucket = bucket;
}

/* Parses "name=value ..." of a record into v (every parameter must be known and present). */
static int parse_params(size_t v[RCL_TUNE_MAX_PARAMS], const rcl_tune_kernel *k, const char *text) {
  memset(v, 0, sizeof(size_t) * RCL_TUNE_MAX_PARAMS);
  unsigned seen = 0;
  const char *p = text;
  while (*p) {
    while (*p == ' ') p++;
    if (!*p) break;
    const char *s = p;
    while (*p && *p != ' ') p++;
    char tok[80];
    size_t tl = (size_t)(p - s);
    if (tl >= sizeof tok) return 0;
    memcpy(tok, s, tl);
    tok[tl] = '\0';
    char *eq = strchr(tok, '=');
    if (!eq) return 0;
    *eq = '\0';
    int idx = rcl__tune_param_index(k, tok);
    if (idx < 0 || rcl__tune_param_parse(&v[idx], &k->params[idx], eq + 1) != 0 || v[idx] == 0) return 0;
    seen |= 1u << idx;
  }
  return seen == (1u << k->nparams) - 1;
}

static void format_params(char *buf, size_t size, const rcl_tune_kernel *k, const size_t *v) {
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < k->nparams && len < size; i++) {
    char val[32];
    len += (size_t)snprintf(buf + len, size - len, "%s%s=%s", i ? " " : "", k->params[i].name,
                            rcl__tune_param_format(val, sizeof val, &k->params[i], v[i]));
  }
}

/* Loads this device's records of the cache file once (t->lock held). An unreadable cache is a warning
 * (defaults are used); running out of host memory is an error, and the next call tries again. */
static int load_disk(rcl_context *ctx) {
  rcl_tune_ctx *t = ctx->tune;
  if (t->disk_loaded) return 0;
  t->disk_loaded = 1;
  const char *dir = rcl__cache_dir(ctx);
  if (!dir) return 0;
  rcl_tcache_record *all;
  size_t n, skipped;
  int rc = rcl__tcache_read(&all, &n, &skipped, dir);
  if (rc == RCL_ERR_OUT_OF_MEMORY) {
    t->disk_loaded = 0;
    return rc;
  }
  if (rc) {
    rcl__cache_warn(ctx, "%s", rcl_error_last());
    rcl_error_clear();
    return 0;
  }
  size_t keep = 0;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(all[i].fingerprint, ctx->profile.fingerprint) && !strcmp(all[i].lib, REPROCL_VERSION_STRING) &&
        all[i].schema == RCL_TCACHE_SCHEMA)
      all[keep++] = all[i];
  t->disk = all;
  t->ndisk = keep;
  return 0;
}

static tentry *entry_find(rcl_tune_ctx *t, const rcl_tune_kernel *k, rcl_dtype dt, unsigned bucket, int create) {
  for (tentry *e = t->entries; e; e = e->next)
    if (e->k == k && e->dt == dt && e->bucket == bucket) return e;
  if (!create) return NULL;
  tentry *e = rcl__calloc(1, sizeof *e);
  if (!e) return NULL;
  e->k = k;
  e->dt = dt;
  e->bucket = bucket;
  e->next = t->entries;
  t->entries = e;
  return e;
}

/* Fills e from a matching disk record, if there is one (t->lock held). */
static int entry_from_disk(rcl_context *ctx, tentry *e) {
  rcl_tune_ctx *t = ctx->tune;
  const tkey *key;
  int rc = key_of(&key, ctx, e->k, e->dt);
  if (rc) return rc;
  rcl_tcache_record want;
  record_key(&want, ctx, e->k, key, e->dt, e->bucket);
  for (size_t i = 0; i < t->ndisk; i++) {
    if (!rcl__tcache_same_key(&t->disk[i], &want)) continue;
    size_t v[RCL_TUNE_MAX_PARAMS];
    if (!parse_params(v, e->k, t->disk[i].params)) continue; /* a record this build cannot read: a miss */
    memcpy(e->v, v, sizeof v);
    e->has_choice = 1;
    e->origin = RCL_TUNE_FROM_CACHE;
    /* The measurements are in the comment: "time=1.234ms ... default=1.5ms ... samples=7". */
    const char *c = t->disk[i].comment, *p;
    if ((p = strstr(c, "time=")) != NULL) e->time_s = strtod(p + 5, NULL) * 1e-3;
    if ((p = strstr(c, "default=")) != NULL) e->default_s = strtod(p + 8, NULL) * 1e-3;
    if ((p = strstr(c, "spread=")) != NULL) e->spread = strtod(p + 7, NULL) * 1e-2;
    if ((p = strstr(c, "samples=")) != NULL) e->samples = (unsigned)strtoul(p + 8, NULL, 10);
    rcl__stat_add(ctx, RCL_STAT_TUNE_CACHE_HIT);
    return 0;
  }
  return 0;
}

/* ---- the search ----------------------------------------------------------------------------------------- */

typedef struct {
  rcl_tune_point p;
  double t[MAX_SAMPLES];
  size_t nt;
  int alive;
} cand;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median and quartiles of the first n samples (n odd). */
static void stats_of(const cand *c, size_t n, double *med, double *q1, double *q3) {
  double s[MAX_SAMPLES];
  memcpy(s, c->t, n * sizeof s[0]);
  qsort(s, n, sizeof s[0], cmp_double);
  *med = s[n / 2];
  *q1 = s[n / 4];
  *q3 = s[n - 1 - n / 4];
}

static _Thread_local int in_search;

/* The first-use self-test (selftest.c) runs its calls as a search does: they never start tuning. */
int rcl__tune_hold(int on) {
  int was = in_search;
  in_search = on;
  return was;
}

/* Parameters in which two points differ. */
static size_t distance(const rcl_tune_point *a, const rcl_tune_point *b, size_t nparams) {
  size_t d = 0;
  for (size_t i = 0; i < nparams; i++) d += a->v[i] != b->v[i];
  return d;
} /* the families' launches during a search never tune */

static void describe(char *buf, size_t size, const rcl_tune_kernel *k, const size_t *v) {
  format_params(buf, size, k, v);
}

/* One launch of candidate c: prepare (untimed), run captured, wait; *seconds from the profiling events
 * (host time where the queue cannot profile). */
static int launch(double *seconds, int *host_timing, const rcl_tune_kernel *k, void *st, const rcl_tune_point *p,
                  cl_command_queue q) {
  int rc = k->prepare ? k->prepare(st, q) : 0;
  if (rc) return rc;
  if (clFinish(q) != CL_SUCCESS) return rcl__fail(RCL_ERR_OPENCL, "clFinish before a tuning launch");
  rcl_capture cap;
  double h0 = rcl__now_s();
  rcl__capture_begin(&cap);
  rc = k->run(st, p, q);
  rcl__capture_end(&cap);
  cl_int err = rc ? CL_SUCCESS : clFinish(q);
  double h1 = rcl__now_s();
  if (!rc && err != CL_SUCCESS) rc = rcl__fail_cl(err, "clFinish after a tuning launch of %s", k->name);
  if (!rc && cap.count == 0)
    rc = rcl__fail(RCL_ERR_INTERNAL, "%s's tuning run enqueued nothing through rcl__chain_*", k->name);
  if (!rc) {
    cl_ulong t0 = 0, t1 = 0;
    int ok = clGetEventProfilingInfo(cap.first, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) == CL_SUCCESS &&
             clGetEventProfilingInfo(cap.last, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) == CL_SUCCESS && t1 > t0;
    /* Counters that cannot be real (Rusticl 22.3 reports 0, 1, 2, 3 ns) switch the whole search to host
     * time: a launch the host waited over a millisecond for did not take under a microsecond. */
    if (*host_timing < 0) *host_timing = !ok || ((double)(t1 - t0) * 1e-9 < 1e-6 && h1 - h0 > 1e-3);
    *seconds = *host_timing || !ok ? h1 - h0 : (double)(t1 - t0) * 1e-9;
  }
  rcl__capture_release(&cap);
  return rc;
}

/* The defaults of k on this device: the platform files, 0 where none sets a value. */
static int defaults_of(size_t v[RCL_TUNE_MAX_PARAMS], const rcl_context *ctx, const rcl_tune_kernel *k) {
  return rcl__platform_defaults_in(v, NULL, &ctx->profile, k, ctx->tune->kernels);
}

/* One search: the kernel and its request, the profiling queue, the kernel's state and the candidates. */
typedef struct {
  rcl_tune_report *rep;
  rcl_context *ctx;
  const rcl_tune_kernel *k;
  rcl_dtype dt;
  size_t n;
  int samples;
  void (*progress)(void *, size_t, size_t);
  void *puser;
  cl_command_queue q;
  void *st;
  cand *cands;
  size_t nc, est, done;
  char ref[RCL_SHA256_HEX_SIZE];
} search;

/* The default first: the platform files' values, which must pass the kernel's check. */
static int add_default(search *s) {
  const rcl_tune_kernel *k = s->k;
  cand *cands = s->cands;
  char why[512];
  cands[0].p.is_default = 1;
  int rc = defaults_of(cands[0].p.v, s->ctx, k);
  if (!rc) {
    int ok = k->check(s->st, &cands[0].p, 1, why, sizeof why);
    if (ok < 0)
      rc = ok;
    else if (ok == 0)
      rc = rcl__fail(RCL_ERR_INTERNAL, "%s: the default configuration cannot launch: %s", k->name, why);
  }
  if (!rc) {
    cands[0].alive = 1;
    s->nc = 1;
  }
  return rc;
}

/* Then every point in mixed-radix order: those the check refuses and those whose effective values repeat a
 * candidate's are counted, not kept. */
static int add_points(search *s, size_t total) {
  const rcl_tune_kernel *k = s->k;
  cand *cands = s->cands;
  char why[512];
  for (size_t idx = 0; idx < total; idx++) {
    cand *c = &cands[s->nc];
    memset(c, 0, sizeof *c);
    size_t r = idx;
    for (size_t i = 0; i < k->nparams; i++) {
      c->p.v[i] = k->params[i].values[r % k->params[i].count];
      r /= k->params[i].count;
    }
    int ok = k->check(s->st, &c->p, 0, why, sizeof why);
    if (ok < 0) return ok;
    if (ok == 0) {
      s->rep->invalid++;
      continue;
    }
    size_t j = 0;
    while (j < s->nc && memcmp(cands[j].p.eff, c->p.eff, sizeof c->p.eff) != 0) j++;
    if (j < s->nc) {
      s->rep->duplicates++;
      continue;
    }
    c->alive = 1;
    s->nc++;
  }
  return 0;
}

/* Candidates closest to the default first (one parameter changed, then two, ...), so a small budget
 * still explores around the default instead of one corner of the space. */
static void order_by_distance(search *s) {
  cand *cands = s->cands;
  size_t nparams = s->k->nparams;
  for (size_t i = 2; i < s->nc; i++) {
    cand c = cands[i];
    size_t di = distance(&c.p, &cands[0].p, nparams), j = i;
    while (j > 1 && distance(&cands[j - 1].p, &cands[0].p, nparams) > di) {
      cands[j] = cands[j - 1];
      j--;
    }
    cands[j] = c;
  }
}

/* A candidate whose output differs from the default's is excluded; the first such is described in the report. */
static void note_mismatch(search *s, size_t i, const char *hex) {
  rcl_tune_report *rep = s->rep;
  const rcl_tune_kernel *k = s->k;
  s->cands[i].alive = 0;
  if (rep->mismatches++ == 0) {
    char a[120], b[120];
    describe(a, sizeof a, k, s->cands[i].p.v);
    describe(b, sizeof b, k, s->cands[0].p.v);
    snprintf(rep->mismatch, sizeof rep->mismatch,
             "%s %s n=%zu: candidate %s gave output digest %.16s, the default %s gave %.16s (a bug: the "
             "candidate is excluded; please report)",
             k->name, rcl_dtype_name(s->dt), s->n, a, hex, b, s->ref);
  }
}

/* Warm-ups: each candidate once, untimed, its digest checked against the default's. */
static int warm_up(search *s, double warm_deadline) {
  rcl_tune_report *rep = s->rep;
  cand *cands = s->cands;
  for (size_t i = 0; i < s->nc; i++) {
    if (i > 0 && rcl__now_s() > warm_deadline) {
      rep->budget_exhausted = 1; /* the rest of the space is not explored */
      for (size_t j = i; j < s->nc; j++) cands[j].alive = 0;
      s->est = s->done + i * (size_t)s->samples;
      break;
    }
    double t;
    char hex[RCL_SHA256_HEX_SIZE];
    int rc = launch(&t, &rep->host_timing, s->k, s->st, &cands[i].p, s->q);
    if (!rc) rc = s->k->digest(s->st, s->q, hex);
    rep->launches++;
    if (rc) return rc;
    if (i == 0)
      memcpy(s->ref, hex, sizeof s->ref);
    else if (strcmp(hex, s->ref) != 0)
      note_mismatch(s, i, hex);
    if (s->progress) s->progress(s->puser, ++s->done, s->est);
  }
  return 0;
}

/* prune: several times slower than the best so far */
static void prune(search *s, size_t rounds) {
  cand *cands = s->cands;
  double best = INFINITY, med, q1, q3;
  for (size_t i = 0; i < s->nc; i++)
    if (cands[i].alive) {
      stats_of(&cands[i], rounds, &med, &q1, &q3);
      if (med < best) best = med;
    }
  for (size_t i = 1; i < s->nc; i++) /* the default (0) is never pruned: it is the baseline */
    if (cands[i].alive) {
      stats_of(&cands[i], rounds, &med, &q1, &q3);
      if (med > PRUNE_FACTOR * best) {
        cands[i].alive = 0;
        s->rep->pruned++;
      }
    }
  s->est = s->done + (size_t)(s->samples - FIRST_ROUNDS) * (s->rep->timed - s->rep->pruned);
}

/* Rounds: one timed launch per live candidate, round-robin; *rounds counts the complete ones. */
static int time_rounds(search *s, double deadline, size_t *rounds) {
  rcl_tune_report *rep = s->rep;
  cand *cands = s->cands;
  int rc = 0, stopped = 0;
  while (!rc && *rounds < (size_t)s->samples && !stopped) {
    for (size_t i = 0; i < s->nc && !rc; i++) {
      if (!cands[i].alive) continue;
      if (rcl__now_s() > deadline) {
        rep->budget_exhausted = stopped = 1;
        break;
      }
      rc = launch(&cands[i].t[cands[i].nt], &rep->host_timing, s->k, s->st, &cands[i].p, s->q);
      rep->launches++;
      if (!rc) cands[i].nt++;
      if (s->progress) s->progress(s->puser, ++s->done, s->est);
    }
    if (rc || stopped) break;
    (*rounds)++;
    if (*rounds == FIRST_ROUNDS) prune(s, *rounds);
  }
  return rc;
}

/* The decision over the first `use` samples: the best candidate and its statistics, the default's. */
typedef struct {
  size_t use, best;
  double bmed, bq1, bq3, dmed, dq1, dq3;
} verdict;

static void choose(const search *s, verdict *v) {
  const cand *cands = s->cands;
  size_t use = v->use;
  if (use == 0 || cands[0].nt < use) return;
  stats_of(&cands[0], use, &v->dmed, &v->dq1, &v->dq3);
  v->bmed = v->dmed;
  v->bq1 = v->dq1;
  v->bq3 = v->dq3;
  for (size_t i = 1; i < s->nc; i++) {
    if (!cands[i].alive || cands[i].nt < use) continue;
    double med, q1, q3;
    stats_of(&cands[i], use, &med, &q1, &q3);
    if (med < v->bmed) {
      v->best = i;
      v->bmed = med;
      v->bq1 = q1;
      v->bq3 = q3;
    }
  }
  /* Clearly faster, or the default stays. */
  if (v->best != 0 && !(v->bmed * (1.0 + CLEAR_MARGIN) < v->dmed && v->bq3 < v->dq1)) {
    v->best = 0;
    v->bmed = v->dmed;
    v->bq1 = v->dq1;
    v->bq3 = v->dq3;
  }
}

/* The report's choice: the chosen candidate's values and labels, its time and the default's. */
static void report_choice(search *s, const verdict *v) {
  rcl_tune_report *rep = s->rep;
  const rcl_tune_kernel *k = s->k;
  const cand *c = &s->cands[v->best];
  size_t use = v->use;
  rcl_tune_choice *ch = &rep->choice;
  snprintf(ch->kernel, sizeof ch->kernel, "%s", k->name);
  ch->dtype = s->dt;
  ch->size_log2 = rcl__tune_bucket(s->n);
  ch->count = k->nparams;
  for (size_t i = 0; i < k->nparams; i++) {
    snprintf(ch->params[i].name, sizeof ch->params[i].name, "%s", k->params[i].name);
    ch->params[i].value = c->p.v[i];
    rcl__tune_param_format(ch->params[i].label, sizeof ch->params[i].label, &k->params[i], c->p.v[i]);
  }
  ch->origin = RCL_TUNE_FROM_TUNING;
  ch->time_s = use ? v->bmed : 0;
  ch->default_time_s = use ? v->dmed : 0;
  ch->spread = use && v->bmed > 0 ? (v->bq3 - v->bq1) / v->bmed : 0;
  ch->samples = (unsigned)use;
  rep->improved = v->best != 0;
  memcpy(rep->reference_digest, s->ref, sizeof s->ref);
}

static int tune_now(rcl_tune_report *rep, rcl_context *ctx, const rcl_tune_kernel *k, rcl_dtype dt, size_t n,
                    double budget_ms, int samples, void (*progress)(void *, size_t, size_t), void *puser) {
  memset(rep, 0, sizeof *rep);
  rep->host_timing = -1;
  double start = rcl__now_s();
  if (samples < 3) samples = 3;
  if (samples > MAX_SAMPLES) samples = MAX_SAMPLES;
  if (samples % 2 == 0) samples++;
  cl_int err;
  cl_command_queue q = clCreateCommandQueue(ctx->cl_ctx, ctx->device, CL_QUEUE_PROFILING_ENABLE, &err);
  if (!q) return rcl__fail_cl(err, "clCreateCommandQueue(profiling) for tuning %s", k->name);
  search s = {.rep = rep,
              .ctx = ctx,
              .k = k,
              .dt = dt,
              .n = n,
              .samples = samples,
              .progress = progress,
              .puser = puser,
              .q = q};
  int rc = k->setup(&s.st, ctx, dt, n);
  /* The space: the default first, then every point in mixed-radix order. */
  size_t total = 1;
  for (size_t i = 0; i < k->nparams; i++) total *= k->params[i].count;
  rep->candidates = total;
  if (!rc) {
    s.cands = rcl__calloc(total + 1, sizeof *s.cands);
    if (!s.cands) rc = RCL_ERR_OUT_OF_MEMORY;
  }
  if (!rc) rc = add_default(&s);
  if (!rc) rc = add_points(&s, total);
  order_by_distance(&s);
  /* The budget counts launches: building the programs and the scratch data (which a first call pays
   * anyway) is not spent on choosing. */
  double t0 = rcl__now_s(), deadline = t0 + budget_ms * 1e-3;
  /* Warm-ups may take at most half the budget: where they are slow (PoCL compiles a kernel per work-group
   * size, ~0.5 s each), the candidates nearest the default are still timed instead of none. */
  double warm_deadline = t0 + WARMUP_SHARE * budget_ms * 1e-3;
  s.est = s.nc * (1 + (size_t)samples);
  if (!rc) rc = warm_up(&s, warm_deadline);
  for (size_t i = 0; i < s.nc; i++) rep->timed += s.cands[i].alive;
  size_t rounds = 0;
  if (!rc) rc = time_rounds(&s, deadline, &rounds);
  /* An odd number of complete rounds decides. */
  verdict v = {.use = rounds % 2 ? rounds : rounds - (rounds > 0)};
  if (!rc) {
    choose(&s, &v);
    report_choice(&s, &v);
  }
  rep->tuning_s = rcl__now_s() - start;
  if (rep->host_timing < 0) rep->host_timing = 0;
  if (s.st) k->teardown(s.st);
  rcl__free(s.cands);
  clReleaseCommandQueue(q);
  return rc;
}

int rcl__tune_search(rcl_tune_report *rep, rcl_context *ctx, const rcl_tune_kernel *k, rcl_dtype dt, size_t n,
                     double budget_ms, int samples) {
  in_search = 1;
  int rc = tune_now(rep, ctx, k, dt, n, budget_ms, samples, NULL, NULL);
  in_search = 0;
  return rc;
}

/* Stores a finished search in the context and, when asked and possible, in the cache file. */
static void keep_result(rcl_context *ctx, const rcl_tune_kernel *k, rcl_dtype dt, const rcl_tune_report *rep,
                        int store) {
  rcl_tune_ctx *t = ctx->tune;
  unsigned bucket = rep->choice.size_log2;
  rcl_tcache_record rec;
  int have_rec = 0;
  pthread_mutex_lock(&t->lock);
  tentry *e = entry_find(t, k, dt, bucket, 1);
  if (e) {
    e->attempted = 1;
    e->has_choice = 1;
    e->origin = RCL_TUNE_FROM_TUNING;
    for (size_t i = 0; i < k->nparams; i++) e->v[i] = rep->choice.params[i].value;
    e->time_s = rep->choice.time_s;
    e->default_s = rep->choice.default_time_s;
    e->spread = rep->choice.spread;
    e->samples = rep->choice.samples;
    e->tuning_s = rep->tuning_s;
  }
  rcl__stat_add(ctx, RCL_STAT_TUNE_RUN);
  const tkey *key;
  if (store && e && rcl__cache_dir(ctx) && key_of(&key, ctx, k, dt) == 0) {
    record_key(&rec, ctx, k, key, dt, bucket);
    format_params(rec.params, sizeof rec.params, k, e->v);
    char dev[160];
    snprintf(dev, sizeof dev, "%s", ctx->profile.device_name);
    for (char *c = dev; *c; c++)
      if (*c == '"' || *c == '#') *c = '\'';
    /* A search the budget stopped before any timed round still records the default, so later
     * processes do not pay for it again; `reprocl tune --budget-ms` can measure it properly. */
    snprintf(rec.comment, sizeof rec.comment,
             "%s"
             "time=%.4fms spread=%.1f%% samples=%u default=%.4fms speedup=%.2f tuned-in=%.2fs mode=%s device=\"%s\"",
             rep->choice.samples ? "" : "unmeasured (budget) ", rep->choice.time_s * 1e3, rep->choice.spread * 100,
             rep->choice.samples, rep->choice.default_time_s * 1e3,
             rep->choice.time_s > 0 ? rep->choice.default_time_s / rep->choice.time_s : 1.0, rep->tuning_s,
             rcl_mode_name(ctx->mode), dev);
    have_rec = 1;
  }
  char *dir = have_rec ? rcl__strdup(rcl__cache_dir(ctx)) : NULL;
  pthread_mutex_unlock(&t->lock);
  if (have_rec && dir) {
    if (rcl__tcache_merge(dir, &rec, 1, NULL, NULL) != 0) rcl__cache_warn(ctx, "%s", rcl_error_last());
    rcl_error_clear();
  }
  rcl__free(dir);
}

static double budget_from_env(void) {
  const char *e = getenv("REPROCL_TUNE_BUDGET_MS");
  if (e && *e) {
    char *end;
    double v = strtod(e, &end);
    if (!*end && v > 0 && v < 1e9) return v;
  }
  return DEFAULT_BUDGET_MS;
}

/* Fills values from an entry and the defaults: pin > tuned/cached > platform files. */
static void overlay(size_t values[RCL_TUNE_MAX_PARAMS], const tentry *e, size_t nparams) {
  if (!e) return;
  for (size_t i = 0; i < nparams; i++) {
    if (e->has_choice && e->v[i]) values[i] = e->v[i];
    if (e->has_pin && e->pin[i]) values[i] = e->pin[i];
  }
}

/* The platform defaults of an entry, read once (t->lock held). */
static int entry_defaults(size_t values[RCL_TUNE_MAX_PARAMS], rcl_context *ctx, tentry *e) {
  if (!e->has_defaults) {
    int rc = rcl__platform_defaults_in(e->defaults, NULL, &ctx->profile, e->k, ctx->tune->kernels);
    if (rc) return rc;
    e->has_defaults = 1;
  }
  memcpy(values, e->defaults, sizeof e->defaults);
  return 0;
}

int rcl__tune_lookup(size_t values[RCL_TUNE_MAX_PARAMS], rcl_context *ctx, const rcl_tune_kernel *k, rcl_dtype dt,
                     size_t n) {
  rcl_tune_ctx *t = ctx->tune;
  unsigned bucket = rcl__tune_bucket(n);
  pthread_mutex_lock(&t->lock);
  int rc = load_disk(ctx);
  tentry *e = rc ? NULL : entry_find(t, k, dt, bucket, 1);
  if (!rc) rc = e ? entry_defaults(values, ctx, e) : RCL_ERR_OUT_OF_MEMORY;
  if (rc) {
    pthread_mutex_unlock(&t->lock);
    return rc;
  }
  if (!e->has_choice && !e->attempted && !e->looked_up && ctx->tuning != RCL_TUNING_FORCE) {
    rc = entry_from_disk(ctx, e);
    e->looked_up = !rc;
    if (rc) {
      pthread_mutex_unlock(&t->lock);
      return rc;
    }
  }
  int want = !in_search && !e->attempted && !e->has_pin && n >= k->min_tune_n && n <= FIRST_USE_MAX_N &&
             (ctx->tuning == RCL_TUNING_FORCE || (ctx->tuning == RCL_TUNING_ON && !e->has_choice));
  if (!want) {
    overlay(values, e, k->nparams);
    pthread_mutex_unlock(&t->lock);
    return 0;
  }
  pthread_mutex_unlock(&t->lock);
  /* Tune: one search per context at a time; another thread may have finished this one meanwhile. */
  pthread_mutex_lock(&t->tune_lock);
  pthread_mutex_lock(&t->lock);
  int again = !e->attempted;
  e->attempted = 1;
  pthread_mutex_unlock(&t->lock);
  if (again) {
    rcl_tune_report rep;
    in_search = 1;
    int trc = tune_now(&rep, ctx, k, dt, n, budget_from_env(), DEFAULT_SAMPLES, NULL, NULL);
    in_search = 0;
    if (trc == 0) {
      keep_result(ctx, k, dt, &rep, 1);
      if (rep.mismatches) rcl__cache_warn(ctx, "tuning found a mismatch: %s", rep.mismatch);
    } else if (trc == RCL_ERR_OUT_OF_MEMORY) {
      /* Out of host memory is not a tuning result: the caller's operation cannot be trusted to succeed
       * either, so it is reported, and the next call tries to tune again. */
      pthread_mutex_lock(&t->lock);
      e->attempted = 0;
      pthread_mutex_unlock(&t->lock);
      pthread_mutex_unlock(&t->tune_lock);
      return trc;
    } else {
      /* Tuning is an optimisation: its failure leaves the defaults in force, and is kept as a warning. */
      rcl__cache_warn(ctx, "tuning %s %s failed (defaults used): %s", k->name, rcl_dtype_name(dt), rcl_error_last());
    }
    rcl_error_clear();
  }
  pthread_mutex_unlock(&t->tune_lock);
  pthread_mutex_lock(&t->lock);
  overlay(values, e, k->nparams);
  pthread_mutex_unlock(&t->lock);
  return 0;
}

int rcl__tune_peek(size_t values[RCL_TUNE_MAX_PARAMS], rcl_context *ctx, const rcl_tune_kernel *k, rcl_dtype dt,
                   size_t n) {
  rcl_tune_choice ch;
  int rc = rcl_tune_get(&ch, ctx, k->name, dt, n);
  if (rc) return rc;
  memset(values, 0, sizeof(size_t) * RCL_TUNE_MAX_PARAMS);
  for (size_t i = 0; i < ch.count && i < RCL_TUNE_MAX_PARAMS; i++) values[i] = ch.params[i].value;
  return 0;
}

/* ---- public API ---------------------------------------------------------------------------------------- */

static int kernel_arg(const rcl_tune_kernel **k, rcl_context *ctx, const char *kernel, rcl_dtype dt) {
  if (!ctx || !kernel) return rcl__fail(RCL_ERR_INVALID_ARG, "NULL context or kernel name");
  *k = kernel_find(ctx->tune, kernel);
  if (!*k) return rcl__fail(RCL_ERR_NOT_FOUND, "no tunable kernel named \"%s\" (see rcl_tune_kernel_name)", kernel);
  return rcl__require_support(ctx, (*k)->family, dt);
}

static void fill_choice(rcl_tune_choice *out, const rcl_tune_kernel *k, rcl_dtype dt, unsigned bucket,
                        const size_t *values, rcl_tune_origin origin) {
  memset(out, 0, sizeof *out);
  snprintf(out->kernel, sizeof out->kernel, "%s", k->name);
  out->dtype = dt;
  out->size_log2 = bucket;
  out->count = k->nparams;
  out->origin = origin;
  for (size_t i = 0; i < k->nparams; i++) {
    snprintf(out->params[i].name, sizeof out->params[i].name, "%s", k->params[i].name);
    out->params[i].value = values[i];
    rcl__tune_param_format(out->params[i].label, sizeof out->params[i].label, &k->params[i], values[i]);
  }
}

int rcl_tune_get(rcl_tune_choice *out, rcl_context *ctx, const char *kernel, rcl_dtype dt, size_t n) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_tune_get: NULL output");
  const rcl_tune_kernel *k;
  int rc = kernel_arg(&k, ctx, kernel, dt);
  if (rc) return rc;
  size_t values[RCL_TUNE_MAX_PARAMS];
  if ((rc = rcl__platform_defaults_in(values, NULL, &ctx->profile, k, ctx->tune->kernels)) != 0) return rc;
  rcl_tune_ctx *t = ctx->tune;
  unsigned bucket = rcl__tune_bucket(n);
  pthread_mutex_lock(&t->lock);
  rc = load_disk(ctx);
  tentry *e = rc ? NULL : entry_find(t, k, dt, bucket, 1);
  if (!rc && !e) rc = RCL_ERR_OUT_OF_MEMORY;
  if (!rc && !e->has_choice && !e->attempted && ctx->tuning != RCL_TUNING_FORCE) rc = entry_from_disk(ctx, e);
  rcl_tune_origin origin = RCL_TUNE_FROM_DEFAULTS;
  if (!rc) {
    overlay(values, e, k->nparams);
    origin = e->has_pin ? RCL_TUNE_FROM_USER : e->has_choice ? e->origin : RCL_TUNE_FROM_DEFAULTS;
    fill_choice(out, k, dt, bucket, values, origin);
    if (e->has_choice) {
      out->time_s = e->time_s;
      out->default_time_s = e->default_s;
      out->spread = e->spread;
      out->samples = e->samples;
    }
  }
  pthread_mutex_unlock(&t->lock);
  return rc;
}

int rcl_tune_set(rcl_context *ctx, const rcl_tune_choice *c) {
  if (!c) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_tune_set: NULL choice");
  const rcl_tune_kernel *k;
  int rc = kernel_arg(&k, ctx, c->kernel, c->dtype);
  if (rc) return rc;
  if (c->size_log2 >= 64)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_tune_set: size_log2 %u is out of range", c->size_log2);
  if (c->count > RCL_TUNE_MAX_PARAMS)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_tune_set: count %zu is too large", c->count);
  size_t pin[RCL_TUNE_MAX_PARAMS] = {0};
  for (size_t i = 0; i < c->count; i++) {
    int idx = rcl__tune_param_index(k, c->params[i].name);
    if (idx < 0)
      return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_tune_set: %s has no parameter \"%s\"", k->name, c->params[i].name);
    size_t v = c->params[i].value;
    if (!v && c->params[i].label[0] && (rc = rcl__tune_param_parse(&v, &k->params[idx], c->params[i].label)) != 0)
      return rc;
    if (v && k->params[idx].labels) {
      size_t j = 0;
      while (j < k->params[idx].count && k->params[idx].values[j] != v) j++;
      if (j == k->params[idx].count)
        return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_tune_set: %s=%zu is not one of its values", c->params[i].name, v);
    }
    pin[idx] = v;
  }
  rcl_tune_ctx *t = ctx->tune;
  pthread_mutex_lock(&t->lock);
  tentry *e = entry_find(t, k, c->dtype, c->size_log2, 1);
  if (e) {
    memcpy(e->pin, pin, sizeof pin);
    e->has_pin = 1;
  }
  pthread_mutex_unlock(&t->lock);
  return e ? 0 : RCL_ERR_OUT_OF_MEMORY;
}

void rcl_tune_unpin_all(rcl_context *ctx) {
  if (!ctx || !ctx->tune) return;
  pthread_mutex_lock(&ctx->tune->lock);
  for (tentry *e = ctx->tune->entries; e; e = e->next) e->has_pin = 0;
  pthread_mutex_unlock(&ctx->tune->lock);
}

int rcl_tune(rcl_tune_report *report, rcl_context *ctx, const char *kernel, rcl_dtype dt, size_t n,
             const rcl_tune_options *opts) {
  if (!report) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_tune: NULL report");
  memset(report, 0, sizeof *report);
  if (opts && opts->version != RCL_TUNE_OPTIONS_VERSION)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_tune_options.version is %u, expected %u (use RCL_TUNE_OPTIONS_INIT)",
                     opts->version, RCL_TUNE_OPTIONS_VERSION);
  const rcl_tune_kernel *k;
  int rc = kernel_arg(&k, ctx, kernel, dt);
  if (rc) return rc;
  if (n == 0) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_tune: n must be at least 1");
  if (in_search) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_tune: called from inside a tuning run");
  double budget = opts && opts->budget_ms > 0 ? opts->budget_ms : budget_from_env();
  int samples = opts && opts->samples > 0 ? opts->samples : DEFAULT_SAMPLES;
  pthread_mutex_lock(&ctx->tune->tune_lock);
  in_search = 1;
  rc =
      tune_now(report, ctx, k, dt, n, budget, samples, opts ? opts->progress : NULL, opts ? opts->progress_user : NULL);
  in_search = 0;
  if (!rc) keep_result(ctx, k, dt, report, opts ? opts->store : 1);
  pthread_mutex_unlock(&ctx->tune->tune_lock);
  return rc;
}

int rcl_tune_export(char **text, rcl_context *ctx) {
  if (!text || !ctx) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_tune_export: NULL argument");
  *text = NULL;
  rcl_tune_ctx *t = ctx->tune;
  pthread_mutex_lock(&t->lock);
  size_t n = 0;
  for (tentry *e = t->entries; e; e = e->next) n += e->has_choice || e->has_pin;
  size_t cap = 256 + n * 1100, len = 0;
  char *out = malloc(cap);
  int rc = out ? 0 : rcl__fail(RCL_ERR_OUT_OF_MEMORY, "out of memory");
  if (!rc)
    len = (size_t)snprintf(out, cap, "reprocl-tuning-cache %d\n# exported from %s\n", RCL_TCACHE_FORMAT,
                           ctx->profile.device_name);
  for (tentry *e = t->entries; e && !rc; e = e->next) {
    if (!e->has_choice && !e->has_pin) continue;
    const tkey *key;
    if ((rc = key_of(&key, ctx, e->k, e->dt)) != 0) break;
    rcl_tcache_record r;
    record_key(&r, ctx, e->k, key, e->dt, e->bucket);
    size_t v[RCL_TUNE_MAX_PARAMS];
    rc = rcl__platform_defaults_in(v, NULL, &ctx->profile, e->k, ctx->tune->kernels);
    if (rc) break;
    overlay(v, e, e->k->nparams);
    int complete = 1;
    for (size_t i = 0; i < e->k->nparams; i++) complete &= v[i] != 0;
    if (!complete) continue; /* a pin over a parameter with no default value cannot be a record */
    format_params(r.params, sizeof r.params, e->k, v);
    snprintf(r.comment, sizeof r.comment, "origin=%s time=%.4fms default=%.4fms samples=%u",
             rcl_tune_origin_name(e->has_pin ? RCL_TUNE_FROM_USER : e->origin), e->time_s * 1e3, e->default_s * 1e3,
             e->samples);
    if ((rc = rcl__tcache_format(out + len, cap - len - 2, &r)) == 0) {
      len += strlen(out + len);
      out[len++] = '\n';
      out[len] = '\0';
    }
  }
  pthread_mutex_unlock(&t->lock);
  if (rc) {
    free(out);
    return rc;
  }
  *text = out;
  return 0;
}

int rcl_tune_import(rcl_context *ctx, const char *text, size_t *loaded, size_t *skipped) {
  if (!ctx || !text) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_tune_import: NULL argument");
  rcl_tcache_record *recs;
  size_t n, bad;
  int rc = rcl__tcache_parse(&recs, &n, &bad, text, strlen(text));
  if (rc) return rc;
  rcl_tune_ctx *t = ctx->tune;
  size_t ok = 0;
  pthread_mutex_lock(&t->lock);
  rc = load_disk(ctx);
  for (size_t i = 0; i < n && !rc; i++) {
    const rcl_tune_kernel *k = kernel_find(t, recs[i].kernel);
    rcl_dtype dt;
    if (!k || strcmp(recs[i].fingerprint, ctx->profile.fingerprint) || strcmp(recs[i].lib, REPROCL_VERSION_STRING) ||
        recs[i].schema != RCL_TCACHE_SCHEMA || rcl_dtype_parse(&dt, recs[i].dtype) != 0) {
      bad++;
      continue;
    }
    tentry *e = entry_find(t, k, dt, recs[i].bucket, 1);
    size_t v[RCL_TUNE_MAX_PARAMS];
    const tkey *key;
    rcl_tcache_record want;
    if (!e || key_of(&key, ctx, k, dt) != 0) {
      rc = RCL_ERR_OUT_OF_MEMORY;
      break;
    }
    record_key(&want, ctx, k, key, dt, recs[i].bucket);
    if (!rcl__tcache_same_key(&want, &recs[i]) || !parse_params(v, k, recs[i].params)) {
      bad++; /* another kernel source, build options or contract: not valid here */
      continue;
    }
    memcpy(e->v, v, sizeof v);
    e->has_choice = 1;
    e->origin = RCL_TUNE_FROM_CACHE;
    e->attempted = 1; /* an imported choice is not re-tuned on first use */
    ok++;
  }
  pthread_mutex_unlock(&t->lock);
  rcl__free(recs);
  rcl_error_clear();
  if (loaded) *loaded = ok;
  if (skipped) *skipped = bad;
  return rc;
}

/* ---- listing and clearing caches ------------------------------------------------------------------------ */

int rcl_cache_list(rcl_cache_entry **out, size_t *count, size_t *skipped, const char *dir, const char *fp) {
  if (!out || !count || !dir) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_cache_list: NULL argument");
  *out = NULL;
  *count = 0;
  rcl_tcache_record *recs;
  size_t n, bad;
  int rc = rcl__tcache_read(&recs, &n, &bad, dir);
  if (rc) return rc;
  rcl_cache_entry *list = calloc(n ? n : 1, sizeof *list);
  if (!list) {
    rcl__free(recs);
    return rcl__fail(RCL_ERR_OUT_OF_MEMORY, "out of memory");
  }
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (fp && strcmp(fp, recs[i].fingerprint)) continue;
    rcl_cache_entry *e = &list[m++];
    memcpy(e->fingerprint, recs[i].fingerprint, sizeof e->fingerprint);
    memcpy(e->lib, recs[i].lib, sizeof e->lib);
    memcpy(e->kernel, recs[i].kernel, sizeof e->kernel);
    memcpy(e->dtype, recs[i].dtype, sizeof e->dtype);
    e->size_log2 = recs[i].bucket;
    memcpy(e->params, recs[i].params, sizeof e->params);
    memcpy(e->comment, recs[i].comment, sizeof e->comment);
    memcpy(e->src, recs[i].src, sizeof e->src);
    memcpy(e->opts, recs[i].opts, sizeof e->opts);
    e->contract = recs[i].contract;
  }
  rcl__free(recs);
  *out = list;
  *count = m;
  if (skipped) *skipped = bad;
  return 0;
}
