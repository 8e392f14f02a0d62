/* Internals of the first-use self-test (selftest.c) shared with the tuner and the tests. Not installed. */
#ifndef REPROCL_SELFTEST_INTERNAL_H
#define REPROCL_SELFTEST_INTERNAL_H
#include "core/internal.h"

/* Sets whether this thread's calls may start tuning (0) or not (1, as inside a search); returns the
 * previous setting (tune.c). */
RCL_INTERNAL int rcl__tune_hold(int on);

/* Test hooks (tests/test_selftest.c only; no environment variable or public call reaches them): bit L of
 * mask makes the self-test see wrong bits from build level L (0 normal, 1 conservative): the first value
 * the device returned has its lowest bit flipped before the comparison. */
RCL_INTERNAL void rcl__selftest_inject(unsigned mask);
/* Self-tests run in this process (each family x dtype x build level counts one). */
RCL_INTERNAL long rcl__selftest_runs(void);

#endif
