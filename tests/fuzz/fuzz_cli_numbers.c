/* libFuzzer target: the CLI's strict number parsers (src/cli/cli_common.c) behind --n, --seed, --local,
 * --groups, --repeats, grid sizes and real-valued options. The first input byte picks the parser, the
 * rest is the argument. An accepted argument must match the documented grammar exactly and give the
 * value an independent re-parse gives; anything else must be refused with exit status 2. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  /* The parsers' error lines go to the stderr stream; libFuzzer and the sanitizers keep fd 2. */
  FILE *devnull = fopen("/dev/null", "w");
  if (devnull) stderr = devnull;
  return 0;
}

/* The unsigned grammar: digits, then optionally one of k K M G (x 2^10, 2^20, 2^30), or "2^k" with
 * k <= 63. Returns 1 and the value, or 0 when s is not in the grammar or overflows. */
static int oracle_u64(uint64_t *v, const char *s) {
  size_t i = 0;
  uint64_t x = 0;
  if (!isdigit((unsigned char)s[0])) return 0;
  for (; isdigit((unsigned char)s[i]); i++) {
    unsigned d = (unsigned)(s[i] - '0');
    if (x > (UINT64_MAX - d) / 10) return 0;
    x = x * 10 + d;
  }
  if (s[i] == '\0') {
    *v = x;
    return 1;
  }
  if (s[i] == '^' && x == 2 && isdigit((unsigned char)s[i + 1])) {
    uint64_t k = 0;
    for (i++; isdigit((unsigned char)s[i]); i++) {
      k = k * 10 + (unsigned)(s[i] - '0');
      if (k > 63) return 0;
    }
    if (s[i] != '\0') return 0;
    *v = (uint64_t)1 << k;
    return 1;
  }
  if (strchr("kKMG", s[i]) && s[i] != '\0' && s[i + 1] == '\0') {
    unsigned sh = s[i] == 'G' ? 30 : s[i] == 'M' ? 20 : 10;
    if (x > (UINT64_MAX >> sh)) return 0;
    *v = x << sh;
    return 1;
  }
  return 0;
}

static int oracle_int(long *v, const char *s) {
  const char *p = s + (*s == '-' || *s == '+');
  if (!isdigit((unsigned char)*p)) return 0;
  long x = 0;
  for (; isdigit((unsigned char)*p); p++) {
    if (x > (2147483647L - (*p - '0')) / 10) return 0;
    x = x * 10 + (*p - '0');
  }
  if (*p) return 0;
  *v = *s == '-' ? -x : x;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  char *s = fuzz_cstr(data + 1, size - 1);
  uint64_t u, want;
  size_t z, w, h;
  int i, rc;
  long li;
  double d;
  switch (data[0] % 5) {
  case 0:
    rc = cli_parse_u64(&u, "--seed", s);
    if (oracle_u64(&want, s)) FUZZ_CHECK(rc == 0 && u == want, "\"%s\": rc %d, %llu", s, rc, (unsigned long long)u);
    else FUZZ_CHECK(rc == 2, "\"%s\" accepted as %llu", s, (unsigned long long)u);
    break;
  case 1:
    rc = cli_parse_size(&z, "--n", s);
    if (oracle_u64(&want, s) && want <= SIZE_MAX) FUZZ_CHECK(rc == 0 && z == want, "\"%s\": rc %d", s, rc);
    else FUZZ_CHECK(rc == 2, "\"%s\" accepted as %zu", s, z);
    break;
  case 2:
    rc = cli_parse_int(&i, "--repeats", s, -1000, 1000);
    if (oracle_int(&li, s) && li >= -1000 && li <= 1000) FUZZ_CHECK(rc == 0 && i == li, "\"%s\": rc %d", s, rc);
    else FUZZ_CHECK(rc == 2, "\"%s\" accepted as %d", s, i);
    break;
  case 3:
    rc = cli_parse_double(&d, "--omega", s);
    if (rc == 0) {
      FUZZ_CHECK(isfinite(d), "\"%s\" accepted as %g", s, d);
      FUZZ_CHECK(s[0] && !isspace((unsigned char)s[0]), "\"%s\" accepted with leading blank", s);
    } else {
      FUZZ_CHECK(rc == 2, "status %d", rc);
    }
    break;
  default: {
    rc = cli_parse_dims(&w, &h, "--grid", s);
    const char *x = strpbrk(s, "xX");
    uint64_t a = 0, b = 0;
    int ok = 0;
    if (x && x - s < 64) { /* the parser keeps the width in a 64-byte buffer */
      char *first = strndup(s, (size_t)(x - s));
      ok = first && oracle_u64(&a, first) && oracle_u64(&b, x + 1) && a >= 1 && b >= 1 && a <= SIZE_MAX && b <= SIZE_MAX;
      free(first);
    }
    if (ok) FUZZ_CHECK(rc == 0 && w == a && h == b, "\"%s\": rc %d", s, rc);
    else FUZZ_CHECK(rc == 2, "\"%s\" accepted as %zux%zu", s, w, h);
  }
  }
  free(s);
  return 0;
}
