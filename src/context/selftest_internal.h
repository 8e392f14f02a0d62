/* The first-use self-test (selftest.c, docs/selftest.md): created with the context and installed as the
 * gate of every program build (core/context.h, rcl_program_gate). Not installed. */
#ifndef REPROCL_SELFTEST_INTERNAL_H
#define REPROCL_SELFTEST_INTERNAL_H
#include "core/context.h"

RCL_INTERNAL int rcl__selftest_create(rcl_context *ctx);
RCL_INTERNAL void rcl__selftest_free(rcl_context *ctx);
/* The gate of rcl__program_get for reprocl's own cl/<file>: the first time the file's family runs for
 * dtype on the context, its self-test runs (or its verdict comes from the cache). 0 with *conservative
 * set when the family must use the conservative build; RCL_ERR_UNSUPPORTED with the reason when neither
 * build passed; another error when the self-test could not run (nothing is cached then). */
RCL_INTERNAL int rcl__selftest_gate(int *conservative, rcl_context *ctx, const char *file, rcl_dtype dtype);

/* Test hooks (tests/test_selftest.c only; no environment variable or public call reaches them): bit L of
 * mask makes the self-test see wrong bits from build level L (0 normal, 1 conservative): the first value
 * the device returned has its lowest bit flipped before the comparison. */
RCL_INTERNAL void rcl__selftest_inject(unsigned mask);
/* Self-tests run in this process (each family x dtype x build level counts one). */
RCL_INTERNAL long rcl__selftest_runs(void);

#endif
