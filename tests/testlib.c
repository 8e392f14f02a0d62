/* Shared helpers of reprocl's Check tests (see testlib.h). */
#include "testlib.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static rcl_device_info *devs;
static size_t ndevs = (size_t)-1;
static rcl_context **ctxs, **nctxs;

size_t rt_ndevices(void) {
  if (ndevs == (size_t)-1) {
    if (rcl_devices(&devs, &ndevs) != 0) {
      fprintf(stderr, "rcl_devices failed: %s\n", rcl_error_last());
      ndevs = 0;
    }
    ctxs = calloc(ndevs + 1, sizeof *ctxs);
    nctxs = calloc(ndevs + 1, sizeof *nctxs);
  }
  return ndevs;
}

rcl_context *rt_ctx_new(size_t i, rcl_mode mode, const char *cache_dir) {
  rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
  char spec[32];
  snprintf(spec, sizeof spec, "%zu", i);
  o.device = spec;
  o.mode = mode;
  o.cache_dir = cache_dir;
  rcl_context *c = NULL;
  int rc = rcl_context_create(&c, &o);
  ck_assert_msg(rc == 0, "cannot create a context on device %zu: %s", i, rcl_error_last());
  return c;
}

rcl_context *rt_ctx(size_t i) {
  ck_assert(i < rt_ndevices());
  if (!ctxs[i]) ctxs[i] = rt_ctx_new(i, RCL_MODE_REPRODUCIBLE, NULL);
  return ctxs[i];
}

rcl_context *rt_ctx_native(size_t i) {
  ck_assert(i < rt_ndevices());
  if (!nctxs[i]) nctxs[i] = rt_ctx_new(i, RCL_MODE_NATIVE, NULL);
  return nctxs[i];
}

const char *rt_device_name(size_t i) { return i < rt_ndevices() ? devs[i].device_name : "?"; }

void rt_add_device_loop(TCase *tc, const TTest *fn) { tcase_add_loop_test(tc, fn, 0, (int)rt_ndevices()); }

START_TEST(devices_present) {
  size_t n = rt_ndevices();
  const char *min = getenv("REPROCL_TEST_MIN_DEVICES");
  size_t want = min ? (size_t)strtoul(min, NULL, 10) : 1;
  if (n == 0 && getenv("REPROCL_TEST_ALLOW_NO_DEVICE")) {
    fprintf(stderr, "SKIP device tests: no OpenCL device present and REPROCL_TEST_ALLOW_NO_DEVICE is set\n");
    return;
  }
  ck_assert_msg(n >= want,
                "%zu OpenCL device(s) present, at least %zu required (REPROCL_TEST_MIN_DEVICES); "
                "install pocl-opencl-icd and mesa-opencl-icd and set RUSTICL_ENABLE=llvmpipe",
                n, want);
}
END_TEST

void rt_add_device_presence(Suite *s) {
  TCase *tc = tcase_create("devices");
  tcase_add_test(tc, devices_present);
  suite_add_tcase(s, tc);
}

int rt_run(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  for (size_t i = 0; ctxs && i < ndevs; i++) {
    rcl_context_free(ctxs[i]);
    rcl_context_free(nctxs[i]);
  }
  free(ctxs);
  free(nctxs);
  rcl_devices_free(devs);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

void rt_note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "  note: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

uint64_t rt_next(rt_rng *r) {
  rcl_rng g = {r->s};
  uint64_t v = rcl_rng_next(&g);
  r->s = g.state;
  return v;
}

double rt_uniform(rt_rng *r) { return (double)(rt_next(r) >> 11) * 0x1.0p-53; }

void rt_fill(void *x, rcl_dtype dt, size_t n, const char *kind, uint64_t seed) {
  rcl_gen_kind k;
  ck_assert_msg(rcl_gen_kind_parse(&k, kind) == 0, "%s", rcl_error_last());
  ck_assert_msg(rcl_generate(x, dt, n, k, seed) == 0, "%s", rcl_error_last());
}

void rt_assert_bits_eq_impl(const char *file, int line, const void *got, const void *want, size_t n, rcl_dtype dt,
                            const char *fmt, ...) {
  size_t es = rcl_dtype_size(dt);
  if (n == 0 || memcmp(got, want, n * es) == 0) return;
  size_t i = 0;
  while (memcmp((const char *)got + i * es, (const char *)want + i * es, es) == 0) i++;
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  size_t ndiff = 0;
  for (size_t k = i; k < n; k++) ndiff += memcmp((const char *)got + k * es, (const char *)want + k * es, es) != 0;
  if (dt == RCL_F32) {
    uint32_t a, b;
    memcpy(&a, (const char *)got + 4 * i, 4);
    memcpy(&b, (const char *)want + 4 * i, 4);
    ck_abort_msg("%s:%d: %s: %zu of %zu values differ; first at [%zu]: got 0x%08x (%.9g), want 0x%08x (%.9g)", file,
                 line, what, ndiff, n, i, a, ((const float *)got)[i], b, ((const float *)want)[i]);
  } else {
    uint64_t a, b;
    memcpy(&a, (const char *)got + 8 * i, 8);
    memcpy(&b, (const char *)want + 8 * i, 8);
    ck_abort_msg("%s:%d: %s: %zu of %zu values differ; first at [%zu]: got 0x%016llx (%.17g), want 0x%016llx (%.17g)",
                 file, line, what, ndiff, n, i, (unsigned long long)a, ((const double *)got)[i], (unsigned long long)b,
                 ((const double *)want)[i]);
  }
}

int rt_supported(size_t i, rcl_family family, rcl_dtype dt) {
  const char *why;
  rcl_context *c = rt_ctx(i);
  if (rcl_device_profile_support(rcl_context_profile(c), family, dt, &why) != RCL_SUPPORT_NONE) return 1;
  rt_note("skip %s %s on %s: %s (the refusal itself is checked)", rcl_family_name(family), rcl_dtype_name(dt),
          rt_device_name(i), why);
  return 0;
}

#include <mpfr.h>

/* Rounds an exact MPFR value to binary32/64 with gradual underflow, as IEEE does. */
static void mpfr_to_dtype(void *out, mpfr_t exact, rcl_dtype dt) {
  mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
  mpfr_t t;
  int p = dt == RCL_F32 ? 24 : 53;
  mpfr_init2(t, p);
  mpfr_set_emin(dt == RCL_F32 ? -148 : -1073);
  mpfr_set_emax(dt == RCL_F32 ? 128 : 1024);
  int inex = mpfr_set(t, exact, MPFR_RNDN);
  inex = mpfr_check_range(t, inex, MPFR_RNDN);
  mpfr_subnormalize(t, inex, MPFR_RNDN);
  if (dt == RCL_F32)
    *(float *)out = mpfr_get_flt(t, MPFR_RNDN);
  else
    *(double *)out = mpfr_get_d(t, MPFR_RNDN);
  mpfr_set_emin(emin);
  mpfr_set_emax(emax);
  mpfr_clear(t);
}

void rt_mpfr_reduce(void *out, rcl_reduce_op op, rcl_dtype dt, size_t n, const void *x, const void *y) {
  /* Enough bits to hold any sum of products exactly: exponent span of products plus headroom. */
  mpfr_prec_t prec = dt == RCL_F32 ? 700 : 4400;
  mpfr_t acc, a, b, prod;
  mpfr_inits2(prec, acc, a, b, prod, (mpfr_ptr)0);
  mpfr_set_zero(acc, 1);
  int nan = 0, pinf = 0, ninf = 0, all_negzero = 1;
  if (op == RCL_OP_NRM2) y = x;
  for (size_t i = 0; i < n; i++) {
    double xv = dt == RCL_F32 ? ((const float *)x)[i] : ((const double *)x)[i];
    double yv = op == RCL_OP_SUM ? 1.0 : dt == RCL_F32 ? ((const float *)y)[i] : ((const double *)y)[i];
    mpfr_set_d(a, xv, MPFR_RNDN);
    mpfr_set_d(b, yv, MPFR_RNDN);
    mpfr_mul(prod, a, b, MPFR_RNDN); /* exact at this precision */
    if (mpfr_nan_p(prod))
      nan = 1;
    else if (mpfr_inf_p(prod))
      (mpfr_sgn(prod) > 0 ? (void)(pinf = 1) : (void)(ninf = 1));
    else {
      if (!(mpfr_zero_p(prod) && mpfr_signbit(prod))) all_negzero = 0;
      mpfr_add(acc, acc, prod, MPFR_RNDN); /* exact */
    }
    if (mpfr_nan_p(prod) || mpfr_inf_p(prod)) all_negzero = 0;
  }
  double r;
  float rf;
  if (nan || (pinf && ninf))
    r = NAN;
  else if (pinf)
    r = INFINITY;
  else if (ninf)
    r = -INFINITY;
  else if (mpfr_zero_p(acc))
    r = (all_negzero && n > 0) ? -0.0 : 0.0;
  else {
    if (dt == RCL_F32) {
      mpfr_to_dtype(&rf, acc, dt);
      r = rf;
    } else {
      mpfr_to_dtype(&r, acc, dt);
    }
  }
  if (op == RCL_OP_NRM2) r = dt == RCL_F32 ? (double)sqrtf((float)r) : sqrt(r);
  if (dt == RCL_F32) {
    rf = (float)r;
    uint32_t u;
    memcpy(&u, &rf, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) u = 0x7fc00000u;
    memcpy(out, &u, 4);
  } else {
    uint64_t u;
    memcpy(&u, &r, 8);
    if ((u << 1) > 0xffe0000000000000u) u = 0x7ff8000000000000u;
    memcpy(out, &u, 8);
  }
  mpfr_clears(acc, a, b, prod, (mpfr_ptr)0);
}

static void golden_path(char *path, size_t size, const char *file) {
  snprintf(path, size, "%s/tests/data/golden/%s", REPROCL_SOURCE_DIR, file);
}

/* Whether line is "<value>  <key>" for this key; then *vlen is the value's length. */
static int golden_line_is(const char *line, const char *key, size_t *vlen) {
  const char *sep = strstr(line, "  ");
  if (line[0] == '#' || !sep || strcmp(sep + 2, key) != 0) return 0;
  *vlen = (size_t)(sep - line);
  return 1;
}

const char *rt_golden_get(const char *file, const char *key, char *buf, size_t size) {
  char path[1024], line[1024];
  golden_path(path, sizeof path, file);
  FILE *f = fopen(path, "r");
  buf[0] = '\0';
  size_t vlen;
  while (f && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    if (golden_line_is(line, key, &vlen)) snprintf(buf, size, "%.*s", (int)vlen, line);
  }
  if (f) fclose(f);
  return buf;
}

/* REPROCL_UPDATE_GOLDEN=1: sets key's line to value (replacing it, or appending it) in place. */
static void golden_record(const char *file, const char *key, const char *value) {
  char path[1024], line[1024], tmp[1100];
  golden_path(path, sizeof path, file);
  snprintf(tmp, sizeof tmp, "%s.new", path);
  FILE *in = fopen(path, "r"), *out = fopen(tmp, "w");
  ck_assert_msg(out != NULL, "cannot write %s", tmp);
  int done = 0;
  size_t vlen;
  while (in && fgets(line, sizeof line, in)) {
    line[strcspn(line, "\n")] = '\0';
    if (golden_line_is(line, key, &vlen)) {
      if (!done) fprintf(out, "%s  %s\n", value, key);
      done = 1;
    } else {
      fprintf(out, "%s\n", line);
    }
  }
  if (!done) fprintf(out, "%s  %s\n", value, key);
  if (in) fclose(in);
  ck_assert_msg(fclose(out) == 0 && rename(tmp, path) == 0, "cannot replace %s", path);
}

static int golden_updating(void) {
  const char *e = getenv("REPROCL_UPDATE_GOLDEN");
  return e && *e && strcmp(e, "0") != 0;
}

void rt_golden_ref_value(const char *file, const char *key, const char *value) {
  char want[512];
  if (golden_updating()) {
    golden_record(file, key, value);
    return;
  }
  rt_golden_get(file, key, want, sizeof want);
  ck_assert_msg(want[0],
                "no golden value for \"%s\" in tests/data/golden/%s (the reference computed %s; record it "
                "with REPROCL_UPDATE_GOLDEN=1, see tests/data/golden/README.md)",
                key, file, value);
  ck_assert_msg(strcmp(want, value) == 0, "%s: the host reference gives %s, tests/data/golden/%s has %s", key, value,
                file, want);
}

void rt_golden_ref(const char *file, const char *key, const void *ref, size_t bytes) {
  char hex[RCL_SHA256_HEX_SIZE];
  rcl_sha256_hex(hex, ref, bytes);
  rt_golden_ref_value(file, key, hex);
}

void rt_golden_device(const char *file, const char *key, const void *got, size_t bytes, const char *where) {
  char hex[RCL_SHA256_HEX_SIZE], want[512];
  rcl_sha256_hex(hex, got, bytes);
  rt_golden_get(file, key, want, sizeof want);
  ck_assert_msg(want[0], "no golden value for \"%s\" in tests/data/golden/%s", key, file);
  ck_assert_msg(strcmp(want, hex) == 0, "%s on %s: digest %s, tests/data/golden/%s has %s", key, where, hex, file,
                want);
}
