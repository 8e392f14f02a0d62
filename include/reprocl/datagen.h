/* reprocl: deterministic test data. The same seed gives the same bytes on every machine, so digests of
 * results computed from generated inputs can be compared across machines (fingerprints). */
#ifndef REPROCL_DATAGEN_H
#define REPROCL_DATAGEN_H
#include "reprocl/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* splitmix64: the generator behind every rcl_generate kind (documented in docs/contracts.md). */
typedef struct {
  uint64_t state;
} rcl_rng;
RCL_API uint64_t rcl_rng_next(rcl_rng *r);
RCL_API double rcl_rng_uniform(rcl_rng *r); /* [0, 1) with 53 random bits */

typedef enum {
  RCL_GEN_UNIFORM = 0, /* uniform in [-1, 1) */
  RCL_GEN_WIDE = 1,    /* random sign, mantissa and exponent field: every finite binade incl. subnormals */
  RCL_GEN_CANCEL = 2,  /* +-pairs of values up to 2^60 interleaved with small ones: ill-conditioned sums */
  RCL_GEN_SPECIAL = 3  /* WIDE plus NaN, +-inf, +-0, subnormals, the largest finite value */
} rcl_gen_kind;
RCL_API const char *rcl_gen_kind_name(rcl_gen_kind k);
RCL_API int rcl_gen_kind_parse(rcl_gen_kind *out, const char *name);

/* Fills x[0..n) with kind's values for the seed. */
RCL_API int rcl_generate(void *x, rcl_dtype dtype, size_t n, rcl_gen_kind kind, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif
