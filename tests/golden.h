/* Golden digests for the sparse tests: tests/data/golden/<file> holds "key sha256" lines. A test looks a
 * key up and asserts equality; with REPROCL_GOLDEN_UPDATE=1 it instead appends the computed line to
 * <build>/golden-new/<file> (to review and copy into tests/data/golden/) and passes that check. */
#ifndef REPROCL_TEST_GOLDEN_H
#define REPROCL_TEST_GOLDEN_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testlib.h"

static int golden_updating(void) {
  const char *e = getenv("REPROCL_GOLDEN_UPDATE");
  return e && *e && strcmp(e, "0") != 0;
}

/* The recorded digest of key in file, or NULL. Keys contain no spaces. */
static const char *golden_get(const char *file, const char *key) {
  static char line[1024], found[512];
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/data/golden/%s", REPROCL_SOURCE_DIR, file);
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  const char *res = NULL;
  size_t kl = strlen(key);
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#') continue;
    if (!strncmp(line, key, kl) && line[kl] == ' ') {
      snprintf(found, sizeof found, "%s", line + kl + 1);
      found[strcspn(found, " \r\n")] = '\0';
      res = found;
      break;
    }
  }
  fclose(f);
  return res;
}

/* Asserts that value matches the recorded digest of key (or records it when updating). */
static void golden_check(const char *file, const char *key, const char *value) {
  if (golden_updating()) {
    char dir[1024], path[1200];
    snprintf(dir, sizeof dir, "%s/golden-new", REPROCL_BINARY_DIR);
    mkdir(dir, 0777);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "a");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fprintf(f, "%s %s\n", key, value);
    fclose(f);
    return;
  }
  const char *want = golden_get(file, key);
  ck_assert_msg(want != NULL,
                "tests/data/golden/%s has no entry \"%s\" (computed %s; regenerate with "
                "REPROCL_GOLDEN_UPDATE=1, see tests/data/README.md)",
                file, key, value);
  ck_assert_msg(strcmp(want, value) == 0, "golden digest of %s in %s: recorded %s, computed %s", key, file, want,
                value);
}

#endif
