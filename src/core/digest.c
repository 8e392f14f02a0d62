/* SHA-256 digests through nettle (chosen over OpenSSL for its allocation-free API: a digest can neither
 * fail nor leak, which keeps every caller's error paths simple). */
#include <nettle/sha2.h>
#include <string.h>

#include "core/error.h"

_Static_assert(sizeof(struct sha256_ctx) <= sizeof(rcl_sha256_ctx), "rcl_sha256_ctx too small for nettle");

static void to_hex(char hex[RCL_SHA256_HEX_SIZE], const unsigned char d[32]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    hex[2 * i] = digits[d[i] >> 4];
    hex[2 * i + 1] = digits[d[i] & 15];
  }
  hex[64] = '\0';
}

void rcl_sha256(unsigned char out[32], const void *data, size_t size) {
  struct sha256_ctx c;
  sha256_init(&c);
  sha256_update(&c, size, data);
  sha256_digest(&c, SHA256_DIGEST_SIZE, out);
}

void rcl_sha256_hex(char hex[RCL_SHA256_HEX_SIZE], const void *data, size_t size) {
  unsigned char d[32];
  rcl_sha256(d, data, size);
  to_hex(hex, d);
}

void rcl_sha256_init(rcl_sha256_ctx *c) { sha256_init((struct sha256_ctx *)(void *)c); }

void rcl_sha256_update(rcl_sha256_ctx *c, const void *data, size_t size) {
  sha256_update((struct sha256_ctx *)(void *)c, size, data);
}

void rcl_sha256_final_hex(rcl_sha256_ctx *c, char hex[RCL_SHA256_HEX_SIZE]) {
  unsigned char d[32];
  sha256_digest((struct sha256_ctx *)(void *)c, SHA256_DIGEST_SIZE, d);
  to_hex(hex, d);
}
