/* Shared helpers of reprocl's Check tests: the device loop, cached contexts, deterministic data and
 * bitwise comparison with readable failure messages. */
#ifndef REPROCL_TESTLIB_H
#define REPROCL_TESTLIB_H
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "reprocl/reprocl.h"

/* Devices present. With REPROCL_TEST_MIN_DEVICES=N (set in CI) fewer than N fails every device test. */
size_t rt_ndevices(void);
/* Cached contexts of device i (reproducible / native mode); the test fails if one cannot be made. */
rcl_context *rt_ctx(size_t i);
rcl_context *rt_ctx_native(size_t i);
/* A new context of device i in mode with its own cache directory (NULL: the default); the caller frees it. */
rcl_context *rt_ctx_new(size_t i, rcl_mode mode, const char *cache_dir);
const char *rt_device_name(size_t i);
/* A test case that runs fn once per device (loop index = device index). */
void rt_add_device_loop(TCase *tc, const TTest *fn);
/* A test case named after fn that runs it once per device, so that CK_RUN_CASE=<fn> runs just that test. */
#define RT_ADD_DEVICE_CASE(suite, fn)                                                                          \
  do {                                                                                                         \
    TCase *rt_tc_ = tcase_create(#fn);                                                                         \
    rt_add_device_loop(rt_tc_, fn);                                                                            \
    suite_add_tcase(suite, rt_tc_);                                                                            \
  } while (0)
/* Runs the suite without fork (OpenCL state is shared across tests), returns the exit status. */
int rt_run(Suite *s);
/* Adds the standard "devices present" check to a suite with device tests. */
void rt_add_device_presence(Suite *s);
/* Prints a line to stderr, prefixed with the test's name: used for skips with their reason. */
void rt_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* splitmix64: the deterministic generator of all test data. */
typedef struct {
  uint64_t s;
} rt_rng;
uint64_t rt_next(rt_rng *r);
double rt_uniform(rt_rng *r); /* [0, 1) */

/* Test vectors. kind: "uniform" ([-1,1)), "wide" (every exponent incl. subnormals, random signs),
 * "cancel" (pairs that nearly cancel: an ill-conditioned sum), "special" (wide plus NaN, inf, +-0). */
void rt_fill(void *x, rcl_dtype dt, size_t n, const char *kind, uint64_t seed);

/* Byte comparison; on mismatch fails with the first differing element shown as hex and value. */
#define rt_assert_bits_eq(got, want, n_elems, dtype, ...) \
  rt_assert_bits_eq_impl(__FILE__, __LINE__, got, want, n_elems, dtype, __VA_ARGS__)
void rt_assert_bits_eq_impl(const char *file, int line, const void *got, const void *want, size_t n, rcl_dtype dt,
                            const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* Asserts a reprocl call succeeded, showing rcl_error_last() otherwise. */
#define rt_ok(call)                                                                                   \
  do {                                                                                                \
    int rt_rc_ = (call);                                                                              \
    ck_assert_msg(rt_rc_ == 0, "%s failed: %s: %s", #call, rcl_status_name(rt_rc_), rcl_error_last()); \
  } while (0)

/* Asserts a call failed with status and that the message contains needle. */
#define rt_fails(call, status, needle)                                                                \
  do {                                                                                                \
    int rt_rc_ = (call);                                                                              \
    ck_assert_msg(rt_rc_ == (status), "%s returned %s, expected %s (message: %s)", #call,             \
                  rcl_status_name(rt_rc_), rcl_status_name(status), rcl_error_last());                \
    ck_assert_msg(strstr(rcl_error_last(), (needle)) != NULL, "%s: message \"%s\" lacks \"%s\"", #call, \
                  rcl_error_last(), (needle));                                                        \
  } while (0)

/* Whether device i runs family/dtype; if not, asserts the library refuses cleanly and notes the skip. */
int rt_supported(size_t i, rcl_family family, rcl_dtype dt);

#endif

/* The correctly rounded (nearest-even, with subnormals) value of op(x, y) computed with MPFR — the
 * independent oracle of the exact contract. nrm2 is sqrt of the rounded dot, rounded. NaN/inf follow
 * the contract's rules (canonical NaN). */
void rt_mpfr_reduce(void *out, rcl_reduce_op op, rcl_dtype dt, size_t n, const void *x, const void *y);

/* Golden values: tests/data/golden/<file> holds lines "<value>  <key>" (the value first, two spaces, the
 * key to the end of the line; lines starting with '#' are comments); a value is a SHA-256 (hex) or, for a
 * few files, a short composite such as cg.txt's "iterations/sha256/sha256". Golden values are written only
 * from the host reference: with REPROCL_UPDATE_GOLDEN=1 (the one switch; see tests/data/golden/README.md)
 * rt_golden_ref records its value in place instead of checking it (review with git diff; only together
 * with a contract version bump in docs/contracts.md). A device result only ever goes through
 * rt_golden_device, which compares and never writes. */
void rt_golden_ref(const char *file, const char *key, const void *ref, size_t bytes);
void rt_golden_ref_value(const char *file, const char *key, const char *value);
void rt_golden_device(const char *file, const char *key, const void *got, size_t bytes, const char *where);
/* The recorded value of key in file ("" when absent): for comparing composite device values. */
const char *rt_golden_get(const char *file, const char *key, char *buf, size_t size);
