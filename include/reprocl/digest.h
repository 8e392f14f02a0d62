/* reprocl: SHA-256 digests of result bytes (the fingerprints compared across devices and machines). */
#ifndef REPROCL_DIGEST_H
#define REPROCL_DIGEST_H
#include "reprocl/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RCL_SHA256_HEX_SIZE 65
/* hex receives 64 lowercase hex digits and a NUL: the same as `sha256sum` of the bytes. */
RCL_API void rcl_sha256_hex(char hex[RCL_SHA256_HEX_SIZE], const void *data, size_t size);
RCL_API void rcl_sha256(unsigned char out[32], const void *data, size_t size);

/* Incremental form, for digests over several arrays (e.g. positions then velocities). */
typedef struct {
  uint64_t state[16]; /* opaque, large enough for the backing implementation */
} rcl_sha256_ctx;
RCL_API void rcl_sha256_init(rcl_sha256_ctx *c);
RCL_API void rcl_sha256_update(rcl_sha256_ctx *c, const void *data, size_t size);
RCL_API void rcl_sha256_final_hex(rcl_sha256_ctx *c, char hex[RCL_SHA256_HEX_SIZE]);

#ifdef __cplusplus
}
#endif
#endif
