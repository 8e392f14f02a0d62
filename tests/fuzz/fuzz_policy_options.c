/* libFuzzer target: rcl_policy_check_options on arbitrary option strings. Besides memory safety it
 * checks the answer against an independent tokenizer: a refusal must name a token of the input, and
 * an accepted string must contain none of the options the policy documents as refused. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

static const char *const refused_exact[] = {"-cl-mad-enable", "-cl-fast-relaxed-math", "-cl-unsafe-math-optimizations",
                                            "-cl-finite-math-only", "-cl-no-signed-zeros", "-cl-denorms-are-zero",
                                            "-ffast-math", "-funsafe-math-optimizations", "-fp-relaxed", "-fpc",
                                            "-fassociative-math", "-freciprocal-math", "-fapprox-func",
                                            "-fno-honor-nans", "-fno-honor-infinities", "-menable-unsafe-fp-math",
                                            "-enable-unsafe-fp-math"};
static const char *const refused_prefix[] = {"-ffp-contract=", "-ffp-model=", "-fdenormal-fp-math=", "-fp-contract=",
                                             "-DRCL_", "-Drcl_", "-URCL_", "-Urcl_"};

/* program.h: -D of the two emulation switches is allowed (defining one only forces the exact integer
 * path, whatever its value): the macro name ends where an identifier ends, as the policy reads it. */
static int emulation_switch(const char *t, size_t len) {
  static const char *const names[] = {"-DRCL_EMULATE_F32_SUBNORMALS", "-DRCL_EMULATE_F32_DIV_SQRT"};
  for (size_t i = 0; i < 2; i++) {
    size_t l = strlen(names[i]);
    if (len >= l && !memcmp(t, names[i], l) && (len == l || !(isalnum((unsigned char)t[l]) || t[l] == '_'))) return 1;
  }
  return 0;
}

static int token_refused(const char *t, size_t len) {
  if (emulation_switch(t, len)) return 0;
  for (size_t i = 0; i < sizeof refused_exact / sizeof refused_exact[0]; i++)
    if (strlen(refused_exact[i]) == len && !memcmp(t, refused_exact[i], len)) return 1;
  for (size_t i = 0; i < sizeof refused_prefix / sizeof refused_prefix[0]; i++)
    if (len >= strlen(refused_prefix[i]) && !memcmp(t, refused_prefix[i], strlen(refused_prefix[i]))) return 1;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = fuzz_cstr(data, size);
  int rc = rcl_policy_check_options(s);
  FUZZ_CHECK(rc == 0 || rc == RCL_ERR_POLICY, "status %d", rc);
  int any_refused = 0;
  for (const char *p = s; *p;) {
    while (*p && isspace((unsigned char)*p)) p++;
    const char *t = p;
    while (*p && !isspace((unsigned char)*p)) p++;
    if (p > t && token_refused(t, (size_t)(p - t))) any_refused = 1;
  }
  if (rc == 0) FUZZ_CHECK(!any_refused, "accepted a refused option in \"%s\"", s);
  if (rc == RCL_ERR_POLICY) {
    const char *q = strchr(rcl_error_last(), '"');
    FUZZ_CHECK(q != NULL, "refusal without the option: %s", rcl_error_last());
  }
  free(s);
  return 0;
}
