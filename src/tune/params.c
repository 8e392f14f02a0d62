/* The tunable parameters of a kernel descriptor: lookup by name, parsing and formatting of values (numbers
 * or an enumerated parameter's labels), and the problem-size buckets of the tuning cache. Used by the
 * tuner (tune.c) and the platform files (platform.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tune/params.h"

int rcl__tune_param_index(const rcl_tune_kernel *k, const char *name) {
  for (size_t i = 0; i < k->nparams; i++)
    if (!strcmp(k->params[i].name, name)) return (int)i;
  return -1;
}

int rcl__tune_param_parse(size_t *out, const rcl_tune_param_def *p, const char *text) {
  if (p->labels) {
    for (size_t i = 0; i < p->count; i++)
      if (!strcasecmp(p->labels[i], text)) {
        *out = p->values[i];
        return 0;
      }
  }
  if (!p->labels && !strcasecmp(text, "max")) { /* "no limit" (e.g. spmv's long_row), the largest size_t */
    *out = SIZE_MAX;
    return 0;
  }
  char *end;
  unsigned long long v = strtoull(text, &end, 10);
  if (!*text || *end || text[0] == '-' || text[0] == '+') {
    char list[256] = "";
    for (size_t i = 0; p->labels && i < p->count; i++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", p->labels[i]);
    return rcl__fail(RCL_ERR_INVALID_ARG, "%s=\"%s\": expected %s%s", p->name, text,
                     p->labels ? "one of " : "a non-negative integer or max", list);
  }
  if (p->labels && v != 0) { /* an enumerated parameter takes only its own values */
    size_t i = 0;
    while (i < p->count && p->values[i] != v) i++;
    if (i == p->count) return rcl__fail(RCL_ERR_INVALID_ARG, "%s=%s is not one of its values", p->name, text);
  }
  *out = (size_t)v;
  return 0;
}

const char *rcl__tune_param_format(char *buf, size_t size, const rcl_tune_param_def *p, size_t value) {
  for (size_t i = 0; p->labels && i < p->count; i++)
    if (p->values[i] == value) {
      snprintf(buf, size, "%s", p->labels[i]);
      return buf;
    }
  if (value == SIZE_MAX)
    snprintf(buf, size, "max");
  else
    snprintf(buf, size, "%zu", value);
  return buf;
}

unsigned rcl__tune_bucket(size_t n) {
  unsigned b = 0;
  while (n > 1) {
    n >>= 1;
    b++;
  }
  return b;
}
