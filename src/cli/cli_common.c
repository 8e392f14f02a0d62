/* Shared helpers of the reprocl command-line tool (see cli.h). */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

const char *cli_progname = "";
const char *cli_toolname = "reprocl";

int cli_error(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s %s: error: ", cli_toolname, cli_progname);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return 2;
}

int cli_fail(const char *what, ...) {
  va_list ap;
  fprintf(stderr, "%s %s: error: ", cli_toolname, cli_progname);
  va_start(ap, what);
  vfprintf(stderr, what, ap);
  va_end(ap);
  fprintf(stderr, ": %s\n", rcl_error_last());
  int status = rcl_error_last_status();
  /* A failure the library did not report (a failed OpenCL call of the tool itself) could not run. */
  return status ? cli_exit_status(status) : CLI_EXIT_FAILED;
}

int cli_exit_status(int rcl_status) {
  switch (rcl_status) {
  case RCL_OK:
    return CLI_EXIT_OK;
  case RCL_ERR_INVALID_ARG:
  case RCL_ERR_OUT_OF_MEMORY:
  case RCL_ERR_NOT_FOUND:
  case RCL_ERR_IO:
  case RCL_ERR_PARSE:
  case RCL_ERR_POLICY:
  case RCL_ERR_OVERFLOW:
    return CLI_EXIT_USAGE;
  case RCL_ERR_MISMATCH:
    return CLI_EXIT_FINDING;
  default:
    return CLI_EXIT_FAILED;
  }
}

/* strtoull/strtol/strtod skip leading blanks and accept a sign, so " -5" would parse as 2^64 - 5:
 * every parser checks the first character itself. */
int cli_parse_u64(uint64_t *out, const char *opt, const char *s) {
  char *end;
  errno = 0;
  if (!s || !isdigit((unsigned char)*s))
    return cli_error("%s expects a non-negative integer, got \"%s\"", opt, s ? s : "");
  unsigned long long v = strtoull(s, &end, 10);
  if (errno == ERANGE) return cli_error("%s value \"%s\" is too large", opt, s);
  /* Accept binary suffixes and powers of two written as 2^k, handy for sizes. */
  if (*end == '^' && v == 2) {
    char *e2;
    errno = 0;
    unsigned long k = isdigit((unsigned char)end[1]) ? strtoul(end + 1, &e2, 10) : 64;
    if (k > 63 || errno == ERANGE || *e2)
      return cli_error("%s value \"%s\" is not a number (2^k needs k <= 63)", opt, s);
    v = 1ull << k;
    end = e2;
  } else if ((*end == 'k' || *end == 'K' || *end == 'M' || *end == 'G') && end[1] == '\0') {
    unsigned long long mult = *end == 'G' ? 1ull << 30 : *end == 'M' ? 1ull << 20 : 1ull << 10;
    if (v > UINT64_MAX / mult) return cli_error("%s value \"%s\" is too large", opt, s);
    v *= mult;
    end++;
  }
  if (*end != '\0') return cli_error("%s expects an integer, got \"%s\"", opt, s);
  *out = v;
  return 0;
}

int cli_parse_size(size_t *out, const char *opt, const char *s) {
  uint64_t v;
  int rc = cli_parse_u64(&v, opt, s);
  if (rc) return rc;
  if (v > SIZE_MAX) return cli_error("%s value \"%s\" is too large", opt, s);
  *out = (size_t)v;
  return 0;
}

int cli_parse_int(int *out, const char *opt, const char *s, int lo, int hi) {
  char *end;
  errno = 0;
  int digit_first = s && (isdigit((unsigned char)*s) || ((*s == '-' || *s == '+') && isdigit((unsigned char)s[1])));
  long v = digit_first ? strtol(s, &end, 10) : 0;
  if (!digit_first || *end || errno == ERANGE) return cli_error("%s expects an integer, got \"%s\"", opt, s ? s : "");
  if (v < lo || v > hi) return cli_error("%s value %ld is outside [%d, %d]", opt, v, lo, hi);
  *out = (int)v;
  return 0;
}

int cli_parse_double(double *out, const char *opt, const char *s) {
  char *end;
  errno = 0;
  /* A finite decimal or hex number: no leading blanks, no inf or nan. */
  int ok_first = s && (isdigit((unsigned char)*s) || *s == '.' || *s == '-' || *s == '+');
  double v = ok_first ? strtod(s, &end) : 0;
  if (!ok_first || *end || errno == ERANGE || !isfinite(v))
    return cli_error("%s expects a finite number, got \"%s\"", opt, s ? s : "");
  *out = v;
  return 0;
}

int cli_parse_dims(size_t *w, size_t *h, const char *opt, const char *s) {
  const char *x = s ? strpbrk(s, "xX") : NULL;
  if (!x) return cli_error("%s expects WxH (e.g. 1024x768), got \"%s\"", opt, s ? s : "");
  char first[64];
  size_t len = (size_t)(x - s);
  if (len == 0 || len >= sizeof first) return cli_error("%s expects WxH, got \"%s\"", opt, s);
  memcpy(first, s, len);
  first[len] = '\0';
  int rc = cli_parse_size(w, opt, first);
  if (!rc) rc = cli_parse_size(h, opt, x + 1);
  if (!rc && (*w == 0 || *h == 0)) rc = cli_error("%s: grid sizes must be at least 1, got \"%s\"", opt, s);
  return rc;
}

/* ---- devices ---------------------------------------------------------------------------------------- */

static int devices_add(cli_devices *d, rcl_context *c, const rcl_device_info *info) {
  size_t n = d->count + 1;
  rcl_context **nc = realloc(d->ctx, n * sizeof *nc);
  if (nc) d->ctx = nc;
  char **nn = nc ? realloc(d->name, n * sizeof *nn) : NULL;
  if (nn) d->name = nn;
  size_t *ni = nn ? realloc(d->index, n * sizeof *ni) : NULL;
  if (ni) d->index = ni;
  char *name = ni ? malloc(strlen(info->platform_name) + strlen(info->device_name) + 3) : NULL;
  if (!name) {
    rcl_context_free(c);
    return cli_error("out of memory");
  }
  sprintf(name, "%s: %s", info->platform_name, info->device_name);
  d->ctx[d->count] = c;
  d->name[d->count] = name;
  d->index[d->count] = info->index;
  d->count = n;
  return 0;
}

static int open_one(cli_devices *d, const rcl_device_info *info, rcl_mode mode) {
  rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
  char spec[32];
  snprintf(spec, sizeof spec, "%zu", info->index);
  o.device = spec;
  o.mode = mode;
  rcl_context *c;
  if (rcl_context_create(&c, &o)) return cli_fail("cannot use device %zu (%s)", info->index, info->device_name);
  return devices_add(d, c, info);
}

int cli_devices_open(cli_devices *out, const char *spec, rcl_mode mode) {
  memset(out, 0, sizeof *out);
  int rc = 0;
  if (spec && !strcmp(spec, "all")) {
    rcl_device_info *list;
    size_t n;
    if (rcl_devices(&list, &n)) return cli_fail("cannot list OpenCL devices");
    if (n == 0) {
      rcl_devices_free(list);
      return cli_error("no OpenCL device found (install pocl-opencl-icd; Rusticl needs RUSTICL_ENABLE=llvmpipe)");
    }
    for (size_t i = 0; i < n && !rc; i++) rc = open_one(out, &list[i], mode);
    rcl_devices_free(list);
  } else {
    rcl_device_info info;
    if (rcl_device_find(&info, spec)) return cli_fail("device");
    rc = open_one(out, &info, mode);
  }
  if (rc) cli_devices_close(out);
  return rc;
}

int cli_devices_clone(cli_devices *out, const cli_devices *from, rcl_mode mode) {
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < from->count; i++) {
    rcl_context *c;
    if (rcl_context_clone(&c, from->ctx[i], mode)) {
      cli_devices_close(out);
      return cli_fail("cannot make a %s context on %s", rcl_mode_name(mode), from->name[i]);
    }
    rcl_device_info info = {0};
    info.index = from->index[i];
    snprintf(info.platform_name, sizeof info.platform_name, "%s", rcl_context_profile(c)->platform_name);
    snprintf(info.device_name, sizeof info.device_name, "%s", rcl_context_profile(c)->device_name);
    int rc = devices_add(out, c, &info);
    if (rc) {
      cli_devices_close(out);
      return rc;
    }
  }
  return 0;
}

void cli_devices_close(cli_devices *d) {
  for (size_t i = 0; i < d->count; i++) {
    rcl_context_free(d->ctx[i]);
    free(d->name[i]);
  }
  free(d->ctx);
  free(d->name);
  free(d->index);
  memset(d, 0, sizeof *d);
}

/* ---- results ---------------------------------------------------------------------------------------- */

void cli_digest(char hex[RCL_SHA256_HEX_SIZE], const void *data, size_t bytes) { rcl_sha256_hex(hex, data, bytes); }

/* Maps a float's bits onto a line where adjacent floats differ by 1, across zero too. */
static int64_t ordered_f32(uint32_t u) { return (u & 0x80000000u) ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u; }
static int64_t ordered_f64(uint64_t u) { return (u >> 63) ? -(int64_t)(u & 0x7fffffffffffffffu) : (int64_t)u; }
/* |a - b| on that line, exact up to 2^53 ulps: the subtraction happens in integers (a double conversion
 * first would quantise 64-bit keys to steps of ~1024), and only keys of opposite sign, whose distance can
 * exceed int64, are added as doubles. */
static double ulp_distance_f64(uint64_t a, uint64_t b) {
  int64_t ka = ordered_f64(a), kb = ordered_f64(b);
  if ((ka < 0) == (kb < 0)) return (double)(ka > kb ? ka - kb : kb - ka);
  return (double)(ka < 0 ? -ka : ka) + (double)(kb < 0 ? -kb : kb);
}

void cli_drift_compute(cli_drift *out, const void *a, const void *b, size_t n, rcl_dtype dt) {
  memset(out, 0, sizeof *out);
  out->n = n;
  for (size_t i = 0; i < n; i++) {
    double x, y, ulp;
    int xnan, ynan;
    if (dt == RCL_F32) {
      uint32_t ua, ub;
      memcpy(&ua, (const char *)a + 4 * i, 4);
      memcpy(&ub, (const char *)b + 4 * i, 4);
      if (ua == ub) continue;
      float fa, fb;
      memcpy(&fa, &ua, 4);
      memcpy(&fb, &ub, 4);
      x = fa;
      y = fb;
      ulp = fabs((double)(ordered_f32(ua) - ordered_f32(ub)));
    } else {
      uint64_t ua, ub;
      memcpy(&ua, (const char *)a + 8 * i, 8);
      memcpy(&ub, (const char *)b + 8 * i, 8);
      if (ua == ub) continue;
      memcpy(&x, &ua, 8);
      memcpy(&y, &ub, 8);
      ulp = ulp_distance_f64(ua, ub);
    }
    out->differing++;
    xnan = isnan(x);
    ynan = isnan(y);
    if (xnan || ynan || isinf(x) || isinf(y)) {
      out->max_abs = INFINITY;
      out->max_rel = INFINITY;
      out->max_ulp = INFINITY;
      continue;
    }
    double d = fabs(x - y), r = x != 0 ? d / fabs(x) : INFINITY;
    if (d > out->max_abs) out->max_abs = d;
    if (r > out->max_rel) out->max_rel = r;
    if (ulp > out->max_ulp) out->max_ulp = ulp;
  }
}

static json_t *json_real_or_null(double v) {
  return isfinite(v) ? json_real(v) : json_string(isnan(v) ? "nan" : "inf");
}

json_t *cli_drift_json(const cli_drift *d) {
  return json_pack("{s:I,s:I,s:o,s:o,s:o}", "values", (json_int_t)d->n, "differing", (json_int_t)d->differing,
                   "max_abs", json_real_or_null(d->max_abs), "max_rel", json_real_or_null(d->max_rel), "max_ulp",
                   json_real_or_null(d->max_ulp));
}

void cli_format_value(char *buf, size_t size, const void *v, rcl_dtype dt) {
  if (dt == RCL_F32) {
    float f;
    memcpy(&f, v, 4);
    snprintf(buf, size, "%.9g", (double)f);
  } else {
    double d;
    memcpy(&d, v, 8);
    snprintf(buf, size, "%.17g", d);
  }
}

void cli_json_print(json_t *obj) {
  char *s = json_dumps(obj, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
  if (s) {
    puts(s);
    free(s);
  }
  json_decref(obj);
}

json_t *cli_profile_json(const rcl_device_profile *p) {
  json_t *support = json_object();
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  for (int f = 0; f < RCL_FAMILY_COUNT; f++)
    for (int d = 0; d < 2; d++) {
      const char *why;
      rcl_support s = rcl_device_profile_support(p, (rcl_family)f, dts[d], &why);
      char key[64];
      snprintf(key, sizeof key, "%s/%s", rcl_family_name((rcl_family)f), rcl_dtype_name(dts[d]));
      json_object_set_new(support, key, json_pack("{s:s,s:s}", "support", rcl_support_name(s), "reason", why));
    }
  const char *type = (p->type & CL_DEVICE_TYPE_GPU)           ? "gpu"
                     : (p->type & CL_DEVICE_TYPE_CPU)         ? "cpu"
                     : (p->type & CL_DEVICE_TYPE_ACCELERATOR) ? "accelerator"
                                                              : "other";
  return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,"
                   "s:{s:b,s:b,s:b,s:b,s:b,s:b,s:b,s:b,s:I},s:{s:b,s:b},s:s,s:o}",
                   "platform", p->platform_name, "platform_version", p->platform_version, "vendor", p->device_vendor,
                   "device", p->device_name, "device_version", p->device_version, "driver_version", p->driver_version,
                   "opencl_c_version", p->opencl_c_version, "type", type, "fingerprint", p->fingerprint,
                   "compute_units", (json_int_t)p->compute_units, "max_work_group_size",
                   (json_int_t)p->max_work_group_size, "local_mem_size", (json_int_t)p->local_mem_size,
                   "global_mem_size", (json_int_t)p->global_mem_size, "max_mem_alloc_size",
                   (json_int_t)p->max_mem_alloc_size, "guarantees", "fp32_denormals", p->fp32_denormals,
                   "fp32_correctly_rounded_div_sqrt", p->fp32_correctly_rounded_div_sqrt, "fp32_fma", p->fp32_fma,
                   "fp64", p->fp64, "fp64_denormals", p->fp64_denormals, "fp64_fma", p->fp64_fma, "int64_atomics",
                   p->int64_atomics, "little_endian", p->little_endian, "loop_iteration_limit",
                   (json_int_t)p->loop_iteration_limit, "emulation", "fp32_subnormals", p->fp32_emulate_subnormals,
                   "fp32_div_sqrt", p->fp32_emulate_div_sqrt, "profile_version", "1", "support", support);
}

void cli_path_join(char *buf, size_t size, const char *dir, const char *name) {
  size_t l = strlen(dir);
  while (l > 1 && dir[l - 1] == '/') l--;
  snprintf(buf, size, "%.*s%s%s", (int)l, dir, l == 0 || dir[l - 1] == '/' ? "" : "/", name);
}

int cli_write_file(const char *path, const void *data, size_t bytes) {
  FILE *f = fopen(path, "wb");
  if (!f) return cli_error("cannot open %s for writing: %s", path, strerror(errno));
  size_t w = fwrite(data, 1, bytes, f);
  int bad = w != bytes;
  if (fclose(f) != 0) bad = 1;
  if (bad) return cli_error("cannot write %s: %s", path, strerror(errno));
  return 0;
}

/* ---- time and progress -------------------------------------------------------------------------- */

double cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_progress_start(cli_progress *p, size_t total, const char *label, int json_mode) {
  p->enabled = !json_mode && isatty(STDERR_FILENO);
  p->total = total;
  p->done = 0;
  p->label = label;
}

void cli_progress_step(cli_progress *p, const char *what) {
  p->done++;
  if (!p->enabled) return;
  const int width = 30;
  int filled = p->total ? (int)((double)p->done / (double)p->total * width) : width;
  fprintf(stderr, "\r%s [", p->label);
  for (int i = 0; i < width; i++) fputc(i < filled ? '#' : '.', stderr);
  fprintf(stderr, "] %zu/%zu %-40.40s", p->done, p->total, what ? what : "");
  fflush(stderr);
}

void cli_progress_end(cli_progress *p) {
  if (p->enabled) fprintf(stderr, "\r%*s\r", 100, "");
}

int cli_device_entry(json_t **jd, json_t *jdevs, const cli_devices *devs, size_t i, rcl_family family, rcl_dtype dt,
                     int json, int width) {
  const char *why;
  rcl_support sup = rcl_device_profile_support(rcl_context_profile(devs->ctx[i]), family, dt, &why);
  *jd = json_pack("{s:I,s:s,s:s}", "index", (json_int_t)devs->index[i], "name", devs->name[i], "support",
                  rcl_support_name(sup));
  json_array_append_new(jdevs, *jd);
  if (sup != RCL_SUPPORT_NONE) return 1;
  json_object_set_new(*jd, "reason", json_string(why));
  if (!json) printf("  %-*.*s unsupported: %s\n", width, width, devs->name[i], why);
  return 0;
}
