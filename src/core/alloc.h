/* Host allocation (alloc.c). Not installed. */
#ifndef REPROCL_CORE_ALLOC_H
#define REPROCL_CORE_ALLOC_H
#include "core/error.h"

/* Every host allocation goes through these, so the failing-allocator test
 * mode can make each one fail in turn. They set the error message on failure. */
RCL_SIBLING void *rcl__malloc(size_t size);
RCL_SIBLING void *rcl__calloc(size_t n, size_t size);
RCL_INTERNAL void *rcl__realloc(void *p, size_t size);
RCL_INTERNAL char *rcl__strdup(const char *s);
/* A host buffer kept between uses: *buf grown to at least bytes (with room to spare: a quarter more) when *cap
 * is less, its contents kept; *cap its size in bytes. No fresh allocation while the need fits. */
RCL_SIBLING int rcl__grow(void **buf, size_t *cap, size_t bytes);
RCL_SIBLING void rcl__free(void *p);
/* Test hooks of the failing-allocator mode (tests/test_failalloc.c): from now on the n-th allocation
 * fails (n = 0: none, only counted; n < 0: off); the allocations counted since; the blocks allocated
 * through these wrappers and not yet freed. */
RCL_INTERNAL void rcl__alloc_fail_at(long n);
RCL_INTERNAL long rcl__alloc_count(void);
RCL_INTERNAL long rcl__alloc_live(void);
/* Overflow-checked n*size; sets RCL_ERR_OVERFLOW naming what. */
RCL_INTERNAL int rcl__mul_size(size_t *out, size_t n, size_t size, const char *what);

#endif
