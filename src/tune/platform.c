/* Built-in launch defaults per vendor and device class: the platform files of platforms/ (embedded at
 * build time like the kernels; $REPROCL_PLATFORM_DIR reads them from disk instead). generic.conf applies
 * to every device; the other files, in name order, override values where their `match` lines fit the
 * device (BLIS-style: one generic configuration plus small per-vendor overrides). */
#include <ctype.h>
#include <dirent.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "build/cache_dir.h"
#include "core/alloc.h"
#include "tune/params.h"
#include "tune/platform.h"

static int contains_ci(const char *hay, const char *needle, size_t nl) {
  if (nl == 0) return 1;
  for (; *hay; hay++) {
    size_t i = 0;
    while (i < nl && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) i++;
    if (i == nl) return 1;
  }
  return 0;
}

typedef struct {
  const rcl_tune_kernel *const *kernels; /* every tunable kernel: what a line's pattern may match */
  const char *name;                      /* file name, for messages */
  const rcl_device_profile *dev;         /* NULL: only check the syntax */
  const rcl_tune_kernel *k;              /* the kernel whose defaults are wanted, or NULL */
  size_t *values;
  int applied;
} apply_ctx;

/* Splits the next blank-separated token of [*p, end): returns its length (0 at the end). */
static size_t next_token(const char **tok, const char **p, const char *end) {
  while (*p < end && (**p == ' ' || **p == '\t')) (*p)++;
  *tok = *p;
  while (*p < end && **p != ' ' && **p != '\t') (*p)++;
  return (size_t)(*p - *tok);
}

static int type_matches(const char *sec, size_t len, const rcl_device_profile *d) {
  if (len == 3 && !strncmp(sec, "all", 3)) return 1;
  if (len == 3 && !strncmp(sec, "cpu", 3)) return (d->type & CL_DEVICE_TYPE_CPU) != 0;
  if (len == 3 && !strncmp(sec, "gpu", 3)) return (d->type & CL_DEVICE_TYPE_GPU) != 0;
  if (len == 11 && !strncmp(sec, "accelerator", 11)) return (d->type & CL_DEVICE_TYPE_ACCELERATOR) != 0;
  return -1;
}

/* Where the parse of one file stands: the line number, what has been seen, whether the file's 'match'
 * lines and the current section fit the device. */
typedef struct {
  size_t line;
  int have_header, file_matches, have_match, section_on, have_section;
} parse_state;

/* The first line that is not blank: the header "reprocl-platform 1" (tok is its first token). */
static int header_line(apply_ctx *a, parse_state *s, const char *tok, size_t tl, const char *q, const char *le) {
  size_t line = s->line;
  const char *t2;
  size_t l2 = next_token(&t2, &q, le);
  if (tl != 16 || strncmp(tok, "reprocl-platform", 16) || l2 != 1 || t2[0] != '1')
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: expected the header \"reprocl-platform 1\"", a->name, line);
  s->have_header = 1;
  return 0;
}

/* A 'match' line (the rest after the keyword is [q, le)): * or KEY~TEXT, all of which must fit the device. */
static int match_line(apply_ctx *a, parse_state *s, const char *q, const char *le) {
  size_t line = s->line, tl;
  const char *tok;
  if (s->have_section) return rcl__fail(RCL_ERR_PARSE, "%s:%zu: 'match' must come before the sections", a->name, line);
  s->have_match = 1;
  int all = 1, any = 0;
  while ((tl = next_token(&tok, &q, le)) > 0) {
    any = 1;
    if (tl == 1 && tok[0] == '*') continue;
    const char *tilde = memchr(tok, '~', tl);
    if (!tilde || tilde == tok + tl - 1)
      return rcl__fail(RCL_ERR_PARSE, "%s:%zu: \"%.*s\": expected * or vendor~TEXT, platform~TEXT, device~TEXT",
                       a->name, line, (int)tl, tok);
    size_t kl = (size_t)(tilde - tok), vl = tl - kl - 1;
    const char *field = NULL;
    if (kl == 6 && !strncmp(tok, "vendor", 6))
      field = a->dev ? a->dev->device_vendor : "";
    else if (kl == 8 && !strncmp(tok, "platform", 8))
      field = a->dev ? a->dev->platform_name : "";
    else if (kl == 6 && !strncmp(tok, "device", 6))
      field = a->dev ? a->dev->device_name : "";
    else
      return rcl__fail(RCL_ERR_PARSE, "%s:%zu: unknown match key \"%.*s\"", a->name, line, (int)kl, tok);
    if (a->dev && !contains_ci(field, tilde + 1, vl)) all = 0;
  }
  if (!any) return rcl__fail(RCL_ERR_PARSE, "%s:%zu: 'match' needs * or KEY~TEXT", a->name, line);
  if (all) s->file_matches = 1;
  return 0;
}

/* A section line "[all]", "[cpu]", "[gpu]" or "[accelerator]": whether the lines below it fit the device. */
static int section_line(apply_ctx *a, parse_state *s, const char *tok, size_t tl) {
  size_t line = s->line;
  if (!s->have_match) return rcl__fail(RCL_ERR_PARSE, "%s:%zu: a section before any 'match' line", a->name, line);
  if (tl < 3 || tok[tl - 1] != ']')
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: malformed section \"%.*s\"", a->name, line, (int)tl, tok);
  rcl_device_profile none;
  memset(&none, 0, sizeof none);
  int m = type_matches(tok + 1, tl - 2, a->dev ? a->dev : &none);
  if (m < 0)
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: unknown section %.*s (expected [all], [cpu], [gpu] or [accelerator])",
                     a->name, line, (int)tl, tok);
  s->section_on = m;
  s->have_section = 1;
  return 0;
}

/* The name=value parameters [r, le) for one kernel the line's pattern glob matched: each checked, and
 * stored into a->values where use is set. */
static int kernel_params(apply_ctx *a, size_t line, const rcl_tune_kernel *const *kp, int use, const char *r,
                         const char *le, const char *glob) {
  size_t pl;
  const char *pt;
  int nparams = 0;
  while ((pl = next_token(&pt, &r, le)) > 0) {
    nparams++;
    const char *eq = memchr(pt, '=', pl);
    if (!eq || eq == pt || eq == pt + pl - 1)
      return rcl__fail(RCL_ERR_PARSE, "%s:%zu: \"%.*s\": expected name=value", a->name, line, (int)pl, pt);
    char name[32], val[32];
    size_t nl2 = (size_t)(eq - pt), vl = pl - nl2 - 1;
    if (nl2 >= sizeof name || vl >= sizeof val)
      return rcl__fail(RCL_ERR_PARSE, "%s:%zu: \"%.*s\" is too long", a->name, line, (int)pl, pt);
    memcpy(name, pt, nl2);
    name[nl2] = '\0';
    memcpy(val, eq + 1, vl);
    val[vl] = '\0';
    int idx = rcl__tune_param_index(*kp, name);
    if (idx < 0)
      return rcl__fail(RCL_ERR_PARSE, "%s:%zu: %s has no parameter \"%s\"", a->name, line, (*kp)->name, name);
    size_t v;
    if (rcl__tune_param_parse(&v, &(*kp)->params[idx], val) != 0) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", rcl_error_last());
      return rcl__fail(RCL_ERR_PARSE, "%s:%zu: %s", a->name, line, msg);
    }
    if (use) {
      a->values[idx] = v;
      a->applied = 1;
    }
  }
  if (!nparams) return rcl__fail(RCL_ERR_PARSE, "%s:%zu: no parameters after \"%s\"", a->name, line, glob);
  return 0;
}

/* A parameters line: KERNEL-GLOB (tok) name=value ... ([q, le)), checked against every kernel the glob
 * matches. */
static int params_line(apply_ctx *a, const parse_state *s, const char *tok, size_t tl, const char *q, const char *le) {
  size_t line = s->line;
  if (!s->have_section) return rcl__fail(RCL_ERR_PARSE, "%s:%zu: parameters before any section", a->name, line);
  char glob[64];
  if (tl >= sizeof glob) return rcl__fail(RCL_ERR_PARSE, "%s:%zu: kernel pattern too long", a->name, line);
  memcpy(glob, tok, tl);
  glob[tl] = '\0';
  size_t nmatch = 0;
  for (const rcl_tune_kernel *const *kp = a->kernels; *kp; kp++) {
    if (fnmatch(glob, (*kp)->name, 0) != 0) continue;
    nmatch++;
    int use = a->dev && a->k == *kp && s->file_matches && s->section_on;
    int rc = kernel_params(a, line, kp, use, q, le, glob);
    if (rc) return rc;
  }
  if (nmatch == 0) return rcl__fail(RCL_ERR_PARSE, "%s:%zu: \"%s\" matches no tunable kernel", a->name, line, glob);
  return 0;
}

/* Parses (and, with a device and kernel, applies) one file. */
static int parse_file(apply_ctx *a, const char *text, size_t size) {
  const char *p = text, *end = text + size;
  parse_state s = {0, 0, 0, 0, 0, 0};
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end, *q = p;
    p = nl ? nl + 1 : end;
    s.line++;
    const char *hash = memchr(q, '#', (size_t)(le - q));
    if (hash) le = hash;
    const char *tok;
    size_t tl = next_token(&tok, &q, le);
    int rc = 0;
    if (tl == 0) continue;
    if (!s.have_header)
      rc = header_line(a, &s, tok, tl, q, le);
    else if (tl == 5 && !strncmp(tok, "match", 5))
      rc = match_line(a, &s, q, le);
    else if (tok[0] == '[')
      rc = section_line(a, &s, tok, tl);
    else
      rc = params_line(a, &s, tok, tl, q, le);
    if (rc) return rc;
  }
  if (!s.have_header)
    return rcl__fail(RCL_ERR_PARSE, "%s: empty (expected the header \"reprocl-platform 1\")", a->name);
  if (!s.have_match) return rcl__fail(RCL_ERR_PARSE, "%s: no 'match' line", a->name);
  return 0;
}

int rcl__platform_check_in(const rcl_tune_kernel *const *kernels, const char *name, const char *text, size_t size) {
  apply_ctx a = {kernels, name, NULL, NULL, NULL, 0};
  return parse_file(&a, text, size);
}

static int cmp_names(const void *a, const void *b) {
  const char *x = *(const char *const *)a, *y = *(const char *const *)b;
  /* generic.conf first: it is the base every other file overrides. */
  int gx = !strcmp(x, "generic.conf"), gy = !strcmp(y, "generic.conf");
  if (gx != gy) return gy - gx;
  return strcmp(x, y);
}

/* Applies the files of $REPROCL_PLATFORM_DIR. */
static int apply_dir(apply_ctx *a, const char *dir, const char **source) {
  DIR *d = opendir(dir);
  if (!d) return rcl__fail(RCL_ERR_IO, "cannot open REPROCL_PLATFORM_DIR=%s", dir);
  char *names[256];
  size_t n = 0;
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d)) != NULL && n < 256) {
    size_t l = strlen(e->d_name);
    if (l > 5 && !strcmp(e->d_name + l - 5, ".conf") && e->d_name[0] != '.') {
      names[n] = rcl__strdup(e->d_name);
      if (!names[n]) {
        rc = RCL_ERR_OUT_OF_MEMORY;
        break;
      }
      n++;
    }
  }
  closedir(d);
  if (!rc) qsort(names, n, sizeof names[0], cmp_names);
  static _Thread_local char last[128];
  for (size_t i = 0; i < n && !rc; i++) {
    size_t pl = strlen(dir) + strlen(names[i]) + 2;
    char *path = rcl__malloc(pl);
    char *text = NULL;
    size_t size = 0;
    if (!path) rc = RCL_ERR_OUT_OF_MEMORY;
    if (!rc) {
      snprintf(path, pl, "%s/%s", dir, names[i]);
      rc = rcl__cache_read_file(&text, &size, path);
    }
    if (!rc) {
      a->name = names[i];
      a->applied = 0;
      rc = parse_file(a, text, size);
      if (!rc && a->applied) {
        snprintf(last, sizeof last, "%s", names[i]);
        *source = last;
      }
    }
    rcl__free(text);
    rcl__free(path);
  }
  for (size_t i = 0; i < n; i++) rcl__free(names[i]);
  return rc;
}

int rcl__platform_defaults_in(size_t values[RCL_TUNE_MAX_PARAMS], const char **source, const rcl_device_profile *p,
                              const rcl_tune_kernel *k, const rcl_tune_kernel *const *kernels) {
  const char *src = "";
  for (size_t i = 0; i < RCL_TUNE_MAX_PARAMS; i++) values[i] = 0;
  apply_ctx a = {kernels, NULL, p, k, values, 0};
  int rc = 0;
  const char *dir = getenv("REPROCL_PLATFORM_DIR");
  if (dir && *dir) {
    rc = apply_dir(&a, dir, &src);
  } else {
    const char *order[64];
    size_t n = 0;
    for (const rcl_embedded_source *s = rcl_embedded_platforms; s->name && n < 64; s++) order[n++] = s->name;
    qsort(order, n, sizeof order[0], cmp_names);
    for (size_t i = 0; i < n && !rc; i++) {
      const rcl_embedded_source *s = rcl_embedded_platforms;
      while (strcmp(s->name, order[i])) s++;
      a.name = s->name;
      a.applied = 0;
      rc = parse_file(&a, s->text, s->size);
      if (!rc && a.applied) src = s->name;
    }
  }
  if (source) *source = src;
  return rc;
}
