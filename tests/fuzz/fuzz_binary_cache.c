/* libFuzzer target: the program-binary cache's readers (binary_cache.c), from memory. The first byte picks
 * the reader, the rest is the file:
 *   bit 0 clear: a program bundle (rcl_program_bundle_load's parser, rcl__bundle_parse): the index of
 *                "program <key> <size> <sha256> <label>" lines after the magic and device lines, then the
 *                payloads, each checked against its hash. Loaded for the fingerprint FP below.
 *   bit 0 set:   one entry of the on-disk binary cache (rcl__binary_verify): the header line
 *                "reprocl-binary 1 <fingerprint> <program key> <size> <sha256>" and the payload.
 * Properties: a bundle either loads (then every payload was hashed inside the file: ASan checks the
 * reads) or fails with RCL_ERR_PARSE / RCL_ERR_MISMATCH and "name:" first; a cache entry is accepted
 * only with the right fingerprint, key and size, and the payload returned lies inside the input and
 * hashes to the header's digest. */
#define _GNU_SOURCE /* memmem */
#include "fuzz_common.h"
#include "build/binary_cache.h"
#include "build/bundle.h"

#define FP "c19a5d9ec58dc8e30939c856d84cdbadcb1055f69e3e01fa420bb36e5443deb7"
#define KEY "c52eba75692a7250495adcc9f3f140cac7c5396b5aa15f570bca663680b2031e"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  size_t n = size - 1;
  char *text = malloc(n ? n : 1); /* exactly the input: ASan sees any over-read */
  if (!text) abort();
  if (n) memcpy(text, data + 1, n);
  if (data[0] & 1) {
    size_t psz = 12345;
    const unsigned char *p = n ? rcl__binary_verify(&psz, text, n, FP, KEY) : NULL;
    if (p) {
      FUZZ_CHECK(p > (const unsigned char *)text && p + psz == (const unsigned char *)text + n,
                 "payload [%p, +%zu) not the tail of the input [%p, +%zu)", (const void *)p, psz, (void *)text, n);
      char hex[RCL_SHA256_HEX_SIZE];
      rcl_sha256_hex(hex, p, psz);
      size_t hl = (size_t)(p - (const unsigned char *)text); /* the header line, newline included */
      FUZZ_CHECK(memmem(text, hl, hex, 64) && memmem(text, hl, FP, 64) && memmem(text, hl, KEY, 64),
                 "an entry whose header does not name its hash, fingerprint and key was accepted");
    }
    free(text);
    return 0;
  }
  rcl_bundle *b = (rcl_bundle *)text;
  int rc = rcl__bundle_parse(&b, text, n, "fuzz.bundle", FP, "fuzz device"); /* takes text */
  if (rc == 0) {
    FUZZ_CHECK(b != NULL, "success without a bundle");
    rcl__bundle_free(b);
  } else {
    FUZZ_CHECK(b == NULL, "failure left *out set");
    FUZZ_CHECK(rc == RCL_ERR_PARSE || rc == RCL_ERR_MISMATCH || rc == RCL_ERR_OUT_OF_MEMORY, "status %s: %s",
               rcl_status_name(rc), rcl_error_last());
    if (rc == RCL_ERR_PARSE)
      FUZZ_CHECK(!strncmp(rcl_error_last(), "fuzz.bundle:", 12), "message does not name the file: %s",
                 rcl_error_last());
  }
  return 0;
}
