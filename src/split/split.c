/* The multi-device split: its devices (contexts, sub-devices), weights, shares, and running one call's
 * work on every device at once. The families' split calls are in split_<family>.c. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/profile.h"
#include "split/split_internal.h"

/* ---- creation --------------------------------------------------------------------------------------- */

static int split_alloc(rcl_split **out, size_t count) {
  rcl_split *s = rcl__calloc(1, sizeof *s);
  if (!s) return RCL_ERR_OUT_OF_MEMORY;
  s->count = count;
  s->ctx = rcl__calloc(count ? count : 1, sizeof *s->ctx);
  s->first = rcl__calloc(count ? count : 1, sizeof *s->first);
  s->size = rcl__calloc(count ? count : 1, sizeof *s->size);
  s->note = rcl__calloc(count ? count : 1, sizeof *s->note);
  if (!s->ctx || !s->first || !s->size || !s->note) {
    rcl_split_free(s);
    return RCL_ERR_OUT_OF_MEMORY;
  }
  *out = s;
  return 0;
}

void rcl_split_free(rcl_split *s) {
  if (!s) return;
  if (s->own)
    for (size_t i = 0; i < s->count; i++) rcl_context_free(s->ctx[i]);
  rcl__free(s->ctx);
  rcl__free(s->given);
  rcl__free(s->first);
  rcl__free(s->size);
  rcl__free(s->note);
  rcl__free(s);
}

static int set_given(rcl_split *s, const double *w, size_t n) {
  if (!w) {
    rcl__free(s->given);
    s->given = NULL;
    return 0;
  }
  if (n != s->count) return rcl__fail(RCL_ERR_INVALID_ARG, "split: %zu weights given for %zu devices", n, s->count);
  int positive = 0;
  for (size_t i = 0; i < n; i++) {
    if (!(w[i] >= 0) || isinf(w[i]))
      return rcl__fail(RCL_ERR_INVALID_ARG, "split: weight %zu is %g (weights are finite and >= 0)", i, w[i]);
    positive |= w[i] > 0;
  }
  if (!positive) return rcl__fail(RCL_ERR_INVALID_ARG, "split: every weight is 0 (at least one must be > 0)");
  double *copy = rcl__malloc(n * sizeof *copy);
  if (!copy) return RCL_ERR_OUT_OF_MEMORY;
  memcpy(copy, w, n * sizeof *copy);
  rcl__free(s->given);
  s->given = copy;
  return 0;
}

int rcl_split_set_weights(rcl_split *s, const double *weights, size_t count) {
  if (!s) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_set_weights: NULL split");
  return set_given(s, weights, count);
}

static int check_distinct(const rcl_split *s) {
  for (size_t i = 0; i < s->count; i++)
    for (size_t j = 0; j < i; j++)
      if (rcl_context_cl_device(s->ctx[i]) == rcl_context_cl_device(s->ctx[j]))
        return rcl__fail(RCL_ERR_INVALID_ARG, "split: devices %zu and %zu are the same device (%s)", j, i,
                         rcl_context_profile(s->ctx[i])->device_name);
  return 0;
}

static int finish_options(rcl_split *s, const rcl_split_options *o) {
  s->strict = o ? o->strict : 0;
  s->tuning = o ? o->tuning : RCL_TUNING_ENV;
  int rc = check_distinct(s);
  if (!rc && o && o->weights) rc = set_given(s, o->weights, o->nweights);
  if (!rc && o && !o->weights && o->nweights)
    rc = rcl__fail(RCL_ERR_INVALID_ARG, "split: nweights is %zu but weights is NULL", o->nweights);
  return rc;
}

static int check_version(const rcl_split_options *o, const char *fn) {
  if (o && o->version != RCL_SPLIT_OPTIONS_VERSION)
    return rcl__fail(RCL_ERR_INVALID_ARG, "%s: options version %u (this library knows %u)", fn, o->version,
                     RCL_SPLIT_OPTIONS_VERSION);
  return 0;
}

int rcl_split_wrap(rcl_split **out, rcl_context *const *contexts, size_t count, const rcl_split_options *opts) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_wrap: NULL output");
  *out = NULL;
  int rc = check_version(opts, "rcl_split_wrap");
  if (rc) return rc;
  if (!contexts || count == 0) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_wrap: no contexts");
  if (opts && opts->devices)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_wrap: options name devices (\"%s\"); wrap takes contexts",
                     opts->devices);
  for (size_t i = 0; i < count; i++)
    if (!contexts[i]) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_wrap: context %zu is NULL", i);
  rcl_split *s;
  if ((rc = split_alloc(&s, count)) != 0) return rc;
  memcpy(s->ctx, contexts, count * sizeof *s->ctx);
  if ((rc = finish_options(s, opts)) != 0) {
    rcl_split_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

/* ---- device lists: "spec,spec/N,all" ------------------------------------------------------------ */

typedef struct {
  rcl_context **v;
  size_t n, cap;
} ctx_list;

static int list_push(ctx_list *l, rcl_context *c) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 8;
    rcl_context **v = rcl__realloc(l->v, cap * sizeof *v);
    if (!v) {
      rcl_context_free(c);
      return RCL_ERR_OUT_OF_MEMORY;
    }
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = c;
  return 0;
}

static rcl_context_options ctx_options(const rcl_split_options *o, const char *spec) {
  rcl_context_options co = RCL_CONTEXT_OPTIONS_INIT;
  co.device = spec;
  co.mode = o->mode;
  co.tuning = o->tuning;
  co.cache_dir = o->cache_dir;
  return co;
}

/* A context of its own on one sub-device. */
static int wrap_subdevice(ctx_list *l, cl_device_id sub, const rcl_split_options *o) {
  cl_platform_id plat;
  cl_int err = clGetDeviceInfo(sub, CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL);
  if (err) return rcl__fail_cl(err, "split: clGetDeviceInfo(CL_DEVICE_PLATFORM) of a sub-device");
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0};
  cl_context c = clCreateContext(props, 1, &sub, NULL, NULL, &err);
  if (err) return rcl__fail_cl(err, "split: clCreateContext on a sub-device");
  cl_command_queue q = clCreateCommandQueue(c, sub, CL_QUEUE_PROFILING_ENABLE, &err);
  if (err) {
    clReleaseContext(c);
    return rcl__fail_cl(err, "split: clCreateCommandQueue on a sub-device");
  }
  rcl_context_options co = ctx_options(o, NULL);
  rcl_context *ctx = NULL;
  int rc = rcl_context_wrap(&ctx, c, sub, q, &co);
  clReleaseCommandQueue(q);
  clReleaseContext(c);
  return rc ? rc : list_push(l, ctx);
}

/* n equal sub-devices of the device spec names. */
static int add_subdevices(ctx_list *l, const char *spec, unsigned long n, const rcl_split_options *o) {
  rcl_device_info info;
  int rc = rcl_device_find(&info, spec);
  if (rc) return rc;
  cl_uint cu = 0;
  cl_int err = clGetDeviceInfo(info.device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
  if (err) return rcl__fail_cl(err, "split: clGetDeviceInfo(CL_DEVICE_MAX_COMPUTE_UNITS)");
  if (n == 0 || n > cu)
    return rcl__fail(RCL_ERR_INVALID_ARG, "split: \"%s/%lu\": %s has %u compute units, so 1 to %u sub-devices", spec, n,
                     info.device_name, cu, cu);
  /* Asked first: some drivers crash in clCreateSubDevices rather than refuse (Rusticl 22.3). */
  cl_device_partition_property kinds[16] = {0};
  size_t kbytes = 0;
  int equally = 0;
  err = clGetDeviceInfo(info.device, CL_DEVICE_PARTITION_PROPERTIES, sizeof kinds, kinds, &kbytes);
  for (size_t k = 0; !err && k < kbytes / sizeof kinds[0]; k++) equally |= kinds[k] == CL_DEVICE_PARTITION_EQUALLY;
  if (!equally)
    return rcl__fail(RCL_ERR_UNSUPPORTED, "split: %s (%s) cannot be partitioned into %lu sub-devices: %s",
                     info.device_name, info.platform_name, n,
                     err ? rcl_cl_error_name(err) : "the driver offers no equal partition");
  cl_device_partition_property props[] = {CL_DEVICE_PARTITION_EQUALLY, (cl_device_partition_property)(cu / n), 0};
  cl_uint made = 0;
  err = clCreateSubDevices(info.device, props, 0, NULL, &made);
  if (err || made < n)
    return rcl__fail(RCL_ERR_UNSUPPORTED, "split: %s (%s) cannot be partitioned into %lu sub-devices: %s",
                     info.device_name, info.platform_name, n, err ? rcl_cl_error_name(err) : "too few made");
  cl_device_id *subs = rcl__malloc(made * sizeof *subs);
  if (!subs) return RCL_ERR_OUT_OF_MEMORY;
  err = clCreateSubDevices(info.device, props, made, subs, NULL);
  if (err) {
    rcl__free(subs);
    return rcl__fail_cl(err, "split: clCreateSubDevices");
  }
  for (cl_uint i = 0; i < made; i++) {
    if (!rc && i < n) rc = wrap_subdevice(l, subs[i], o);
    clReleaseDevice(subs[i]);
  }
  rcl__free(subs);
  return rc;
}

static int add_all(ctx_list *l, const rcl_split_options *o) {
  rcl_device_info *devs = NULL;
  size_t nd = 0;
  int rc = rcl_devices(&devs, &nd);
  if (!rc && nd == 0) rc = rcl__fail(RCL_ERR_NOT_FOUND, "split: \"all\": no OpenCL device");
  for (size_t i = 0; !rc && i < nd; i++) {
    char spec[32];
    snprintf(spec, sizeof spec, "%zu", devs[i].index);
    rcl_context_options co = ctx_options(o, spec);
    rcl_context *c = NULL;
    rc = rcl_context_create(&c, &co);
    if (!rc) rc = list_push(l, c);
  }
  rcl_devices_free(devs);
  return rc;
}

/* One item of the list: "all", "spec" or "spec/N". */
static int add_item(ctx_list *l, char *item, const rcl_split_options *o) {
  if (strcmp(item, "all") == 0) return add_all(l, o);
  char *slash = strrchr(item, '/');
  if (slash) {
    char *end;
    unsigned long n = strtoul(slash + 1, &end, 10);
    if (slash[1] < '0' || slash[1] > '9' || *end)
      return rcl__fail(RCL_ERR_INVALID_ARG, "split: \"%s\": after '/' a number of sub-devices is expected", item);
    *slash = 0;
    return add_subdevices(l, item, n, o);
  }
  rcl_context_options co = ctx_options(o, item);
  rcl_context *c = NULL;
  int rc = rcl_context_create(&c, &co);
  return rc ? rc : list_push(l, c);
}

static int parse_devices(ctx_list *l, const rcl_split_options *o) {
  char *copy = rcl__strdup(o->devices);
  if (!copy) return RCL_ERR_OUT_OF_MEMORY;
  int rc = 0;
  for (char *p = copy, *next; !rc && p; p = next) {
    next = strchr(p, ',');
    if (next) *next++ = 0;
    if (!*p)
      rc = rcl__fail(RCL_ERR_INVALID_ARG, "split: empty device in \"%s\"", o->devices);
    else
      rc = add_item(l, p, o);
  }
  rcl__free(copy);
  return rc;
}

int rcl_split_create(rcl_split **out, const rcl_split_options *opts) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_create: NULL output");
  *out = NULL;
  int rc = check_version(opts, "rcl_split_create");
  if (rc) return rc;
  if (!opts || !opts->devices || !*opts->devices)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_create: no devices named (options.devices)");
  ctx_list l = {0};
  rcl_split *s = NULL;
  rc = parse_devices(&l, opts);
  if (!rc) rc = split_alloc(&s, l.n);
  if (!rc) {
    memcpy(s->ctx, l.v, l.n * sizeof *s->ctx);
    s->own = 1;
    rc = finish_options(s, opts);
  } else {
    for (size_t i = 0; i < l.n; i++) rcl_context_free(l.v[i]);
  }
  rcl__free(l.v);
  if (rc) {
    rcl_split_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

/* ---- accessors -------------------------------------------------------------------------------------- */

size_t rcl_split_count(const rcl_split *s) { return s ? s->count : 0; }

rcl_context *rcl_split_context(const rcl_split *s, size_t i) { return s && i < s->count ? s->ctx[i] : NULL; }

int rcl_split_share(size_t *first, size_t *count, const char **note, const rcl_split *s, size_t i) {
  if (!s || i >= s->count)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_share: device %zu of %zu", i, s ? s->count : 0);
  if (first) *first = s->first[i];
  if (count) *count = s->size[i];
  if (note) *note = s->note[i];
  return 0;
}

/* ---- partition -------------------------------------------------------------------------------------- */

int rcl_split_partition(size_t *bounds, const double *weights, size_t count, size_t n, size_t granule) {
  if (!bounds || !weights || count == 0 || granule == 0)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_partition: NULL argument, no device or granule 0");
  double total = 0;
  for (size_t i = 0; i < count; i++) {
    if (!(weights[i] >= 0) || isinf(weights[i]))
      return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_partition: weight %zu is %g", i, weights[i]);
    total += weights[i];
  }
  if (!(total > 0)) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_split_partition: every weight is 0");
  size_t units = n / granule + (n % granule != 0);
  double acc = 0;
  bounds[0] = 0;
  for (size_t i = 1; i < count; i++) {
    acc += weights[i - 1];
    size_t u = (size_t)floor((double)units * (acc / total) + 0.5);
    if (u > units) u = units;
    size_t b = u * granule < n ? u * granule : n;
    bounds[i] = b < bounds[i - 1] ? bounds[i - 1] : b;
  }
  bounds[count] = n;
  /* A device of weight 0 gets nothing even where rounding would hand it a piece. */
  for (size_t i = 0; i < count; i++)
    if (weights[i] == 0 && i + 1 < count) bounds[i + 1] = bounds[i];
  return 0;
}

int rcl__split_plan(size_t *bounds, rcl_split *s, rcl_family family, rcl_dtype dtype, size_t n, size_t granule,
                    rcl_split_probe probe) {
  double *w = rcl__malloc(s->count * sizeof *w);
  if (!w) return RCL_ERR_OUT_OF_MEMORY;
  int rc = rcl__split_weights_sized(w, s, family, dtype, n, probe);
  if (!rc) rc = rcl_split_partition(bounds, w, s->count, n, granule);
  rcl__free(w);
  for (size_t i = 0; !rc && i < s->count; i++) {
    s->first[i] = bounds[i];
    s->size[i] = bounds[i + 1] - bounds[i];
  }
  return rc;
}

size_t rcl__split_alone(const rcl_split *s, const size_t *bounds) {
  size_t n = bounds[s->count];
  for (size_t i = 0; n > 0 && i < s->count; i++)
    if (bounds[i] == 0 && bounds[i + 1] == n) return i;
  return SIZE_MAX;
}

/* ---- running every device's share at once --------------------------------------------------------- */

typedef struct {
  int (*fn)(void *arg, size_t i);
  void *arg;
  size_t i;
  pthread_mutex_t *one_at_a_time; /* held around fn, or NULL */
  int rc;
  char msg[512];
} worker;

static void *worker_main(void *p) {
  worker *w = p;
  if (w->one_at_a_time) pthread_mutex_lock(w->one_at_a_time);
  w->rc = w->fn(w->arg, w->i);
  if (w->one_at_a_time) pthread_mutex_unlock(w->one_at_a_time);
  if (w->rc) snprintf(w->msg, sizeof w->msg, "%s", rcl_error_last());
  return NULL;
}

/* PoCL 5.0 aborts (pocl_release_dlhandle_cache: "found->ref_count > 0") when the same kernel runs on two of its
 * devices at once (two sub-devices, or two contexts of its CPU device; docs/scaleout.md); its shares take
 * turns, while other drivers' devices run beside them. */
static int is_pocl(const rcl_split *s, size_t i) {
  return rcl__platform_matches(rcl_context_profile(s->ctx[i])->platform_name, "pocl");
}

int rcl__split_each(rcl_split *s, const size_t *bounds, int (*fn)(void *arg, size_t i), void *arg) {
  worker *w = rcl__calloc(s->count, sizeof *w);
  pthread_t *t = rcl__calloc(s->count, sizeof *t);
  char *started = rcl__calloc(s->count, 1);
  int rc = w && t && started ? 0 : RCL_ERR_OUT_OF_MEMORY;
  size_t busy = 0, only = 0;
  for (size_t i = 0; !rc && i < s->count; i++)
    if (bounds[i + 1] > bounds[i]) busy++, only = i;
  /* REPROCL_SPLIT_THREADS=0: the shares one after another on this thread (a diagnostic: whether a driver
   * misbehaves when its devices are driven from several threads at once). */
  const char *env = getenv("REPROCL_SPLIT_THREADS");
  int serial = env && strcmp(env, "0") == 0;
  pthread_mutex_t pocl_turns = PTHREAD_MUTEX_INITIALIZER;
  size_t pocl_busy = 0;
  for (size_t i = 0; !rc && i < s->count; i++) pocl_busy += bounds[i + 1] > bounds[i] && is_pocl(s, i);
  for (size_t i = 0; !rc && i < s->count; i++) {
    w[i] = (worker){fn, arg, i, pocl_busy > 1 && is_pocl(s, i) ? &pocl_turns : NULL, 0, ""};
    if (bounds[i + 1] == bounds[i]) continue;
    if (serial || (busy == 1 && i == only))
      worker_main(&w[i]);
    else if (pthread_create(&t[i], NULL, worker_main, &w[i]) == 0)
      started[i] = 1;
    else
      worker_main(&w[i]); /* no thread to be had: run it here */
  }
  for (size_t i = 0; !rc && i < s->count; i++)
    if (started[i]) pthread_join(t[i], NULL);
  for (size_t i = 0; !rc && i < s->count; i++)
    if (w[i].rc)
      rc = rcl__fail(w[i].rc, "device %zu (%s): %s", i, rcl_context_profile(s->ctx[i])->device_name, w[i].msg);
  pthread_mutex_destroy(&pocl_turns);
  rcl__free(w);
  rcl__free(t);
  rcl__free(started);
  return rc;
}
