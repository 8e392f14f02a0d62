/* libFuzzer target: the tuning-cache file reader (rcl__tcache_parse, what rcl__tcache_read and every merge
 * run on the file's bytes). The first byte is a mode: bit 0 set recomputes the checksum of every line that
 * looks like a record ("R " + 16 characters + " ") before parsing, so that mutations reach the key and
 * parameter parser instead of stopping at the checksum; the rest is the file.
 * Properties: the parse never fails but for memory; every record it returns has well-formed fields (64
 * lowercase hex digits of fingerprint, 16 of source and options hashes, token characters only, a size
 * bucket below 64, parameters present), no two share a key, records + skipped lines <= lines; and every
 * record survives a round trip through rcl__tcache_format and a fresh parse with the same key and
 * parameters. */
#include <ctype.h>

#include "fuzz_common.h"
#include "core/alloc.h"
#include "tune/tune_cache.h"

static int hex_lower(const char *s, size_t n) {
  if (strlen(s) != n) return 0;
  for (size_t i = 0; i < n; i++)
    if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i])) return 0;
  return 1;
}

static int tokenish(const char *s) {
  if (!*s) return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && !strchr("_.-^", *s)) return 0;
  return 1;
}

/* Rewrites the checksum of each record-shaped line in place (the format's rule: the first 16 hex digits
 * of the SHA-256 of everything after "R <checksum> "). */
static void fix_checksums(char *text, size_t size) {
  char *p = text, *end = text + size;
  while (p < end) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
    if (ll >= 20 && p[0] == 'R' && p[1] == ' ' && p[18] == ' ') {
      char hex[RCL_SHA256_HEX_SIZE];
      rcl_sha256_hex(hex, p + 19, ll - 19);
      memcpy(p + 2, hex, 16);
    }
    p = nl ? nl + 1 : end;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  size_t n = size - 1;
  char *text = malloc(n ? n : 1); /* exactly the text's length: ASan sees any over-read */
  if (!text) abort();
  if (n) memcpy(text, data + 1, n);
  if (data[0] & 1) fix_checksums(text, n);
  size_t lines = 0;
  for (size_t i = 0; i < n; i++) lines += text[i] == '\n';
  lines += n > 0 && text[n - 1] != '\n';

  rcl_tcache_record *recs = (rcl_tcache_record *)text;
  size_t count = 12345, skipped = 12345;
  int rc = rcl__tcache_parse(&recs, &count, &skipped, text, n);
  if (rc) {
    FUZZ_CHECK(rc == RCL_ERR_OUT_OF_MEMORY, "status %s: %s", rcl_status_name(rc), rcl_error_last());
    FUZZ_CHECK(recs == NULL, "failure left records");
    free(text);
    return 0;
  }
  FUZZ_CHECK(count + skipped <= lines, "%zu records + %zu skipped of %zu lines", count, skipped, lines);
  FUZZ_CHECK(count == 0 || recs != NULL, "records without an array");
  for (size_t i = 0; i < count; i++) {
    const rcl_tcache_record *r = &recs[i];
    FUZZ_CHECK(hex_lower(r->fingerprint, 64), "record %zu: fingerprint \"%s\"", i, r->fingerprint);
    FUZZ_CHECK(hex_lower(r->src, 16) && hex_lower(r->opts, 16), "record %zu: src \"%s\" opts \"%s\"", i, r->src,
               r->opts);
    FUZZ_CHECK(tokenish(r->lib) && tokenish(r->kernel) && tokenish(r->dtype), "record %zu: lib/kernel/dtype", i);
    FUZZ_CHECK(r->bucket < 64, "record %zu: bucket %u", i, r->bucket);
    FUZZ_CHECK(r->params[0] && memchr(r->params, '\0', sizeof r->params), "record %zu: parameters", i);
    for (size_t j = 0; j < i; j++)
      FUZZ_CHECK(!rcl__tcache_same_key(&recs[j], r), "records %zu and %zu share a key", j, i);
    /* the round trip */
    char line[2048];
    int frc = rcl__tcache_format(line, sizeof line, r);
    FUZZ_CHECK(frc == 0, "record %zu cannot be formatted: %s", i, rcl_error_last());
    char file[2200];
    int fl = snprintf(file, sizeof file, "reprocl-tuning-cache %d\n%s\n", RCL_TCACHE_FORMAT, line);
    FUZZ_CHECK(fl > 0 && (size_t)fl < sizeof file, "file too long");
    rcl_tcache_record *again = NULL;
    size_t c2 = 0, s2 = 0;
    int rc2 = rcl__tcache_parse(&again, &c2, &s2, file, (size_t)fl);
    if (rc2 == RCL_ERR_OUT_OF_MEMORY) continue;
    FUZZ_CHECK(rc2 == 0 && c2 == 1 && s2 == 0, "record %zu: round trip gave %zu records, %zu skipped: %s", i, c2, s2,
               line);
    FUZZ_CHECK(rcl__tcache_same_key(r, again) && !strcmp(r->params, again->params), "record %zu changed: %s", i, line);
    rcl__free(again);
  }
  rcl__free(recs);
  free(text);
  return 0;
}
