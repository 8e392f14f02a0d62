/* The standard suite's registry and helpers (see suite.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

const suite_family *const suite_families[] = {&suite_reduce, &suite_stencil, &suite_sparse, &suite_md, NULL};

suite_case *suite_add(suite_list *l, const suite_family *f, rcl_family kind, rcl_dtype dt, int quick,
                      const char *contract, const char *fmt, ...) {
  if (l->count == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    suite_case *n = realloc(l->items, cap * sizeof *n);
    if (!n) return NULL;
    l->items = n;
    l->cap = cap;
  }
  suite_case *c = &l->items[l->count++];
  memset(c, 0, sizeof *c);
  c->family = f;
  c->kind = kind;
  c->dtype = dt;
  c->quick = quick;
  snprintf(c->contract, sizeof c->contract, "%s", contract);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->name, sizeof c->name, fmt, ap);
  va_end(ap);
  return c;
}

static int family_selected(const char *list, const char *name) {
  if (!list || !strcmp(list, "all")) return 1;
  size_t nl = strlen(name);
  for (const char *p = list; *p;) {
    const char *c = strchr(p, ',');
    size_t l = c ? (size_t)(c - p) : strlen(p);
    if (l == nl && !strncmp(p, name, l)) return 1;
    p += l + (c != NULL);
  }
  return 0;
}

int suite_collect(suite_list *l, const char *families, int quick_only) {
  memset(l, 0, sizeof *l);
  for (const char *p = families; p && strcmp(p, "all") && *p;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    int known = 0;
    for (const suite_family *const *f = suite_families; *f; f++)
      known |= strlen((*f)->name) == len && !strncmp((*f)->name, p, len);
    if (!known) return cli_error("unknown family \"%.*s\"", (int)len, p);
    p += len + (c != NULL);
  }
  for (const suite_family *const *f = suite_families; *f; f++) {
    if (!family_selected(families, (*f)->name)) continue;
    size_t before = l->count;
    if ((*f)->cases(l)) {
      suite_free(l);
      return cli_error("cannot list the %s cases (out of memory)", (*f)->name);
    }
    if (quick_only) { /* keep only the quick cases of this family */
      size_t w = before;
      for (size_t r = before; r < l->count; r++)
        if (l->items[r].quick) l->items[w++] = l->items[r];
      l->count = w;
    }
  }
  return 0;
}

void suite_free(suite_list *l) {
  free(l->items);
  memset(l, 0, sizeof *l);
}

json_t *suite_contract_versions(const suite_list *l) {
  json_t *o = json_object();
  for (size_t i = 0; i < l->count; i++) {
    char name[48];
    snprintf(name, sizeof name, "%s", l->items[i].contract);
    char *v = strrchr(name, '.');
    if (!v || v[1] != 'v') continue;
    *v = '\0';
    json_object_set_new(o, name, json_integer(strtol(v + 2, NULL, 10)));
  }
  return o;
}

static int64_t ordered32(uint32_t u) { return (u & 0x80000000u) ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u; }

void suite_ulp_histogram(size_t bins[SUITE_ULP_BINS], const void *a, const void *b, size_t n, rcl_dtype dt) {
  memset(bins, 0, SUITE_ULP_BINS * sizeof bins[0]);
  for (size_t i = 0; i < n; i++) {
    double ulps;
    int special;
    if (dt == RCL_F32) {
      uint32_t x, y;
      memcpy(&x, (const char *)a + 4 * i, 4);
      memcpy(&y, (const char *)b + 4 * i, 4);
      special = ((x & 0x7fffffffu) >= 0x7f800000u || (y & 0x7fffffffu) >= 0x7f800000u) && x != y;
      ulps = fabs((double)(ordered32(x) - ordered32(y)));
    } else {
      uint64_t x, y;
      memcpy(&x, (const char *)a + 8 * i, 8);
      memcpy(&y, (const char *)b + 8 * i, 8);
      special = (((x << 1) >= 0xffe0000000000000u) || ((y << 1) >= 0xffe0000000000000u)) && x != y;
      /* In integers: converting 64-bit keys to double first would lose the low bits. */
      int64_t ox = (x >> 63) ? -(int64_t)(x & 0x7fffffffffffffffu) : (int64_t)x;
      int64_t oy = (y >> 63) ? -(int64_t)(y & 0x7fffffffffffffffu) : (int64_t)y;
      ulps = (ox < 0) == (oy < 0) ? (double)(ox > oy ? ox - oy : oy - ox)
                                  : (double)(ox < 0 ? -ox : ox) + (double)(oy < 0 ? -oy : oy);
    }
    int bin = 0;
    if (special) bin = SUITE_ULP_BINS - 1;
    else if (ulps > 0) {
      bin = 1 + (int)floor(log2(ulps));
      if (bin > SUITE_ULP_BINS - 2) bin = SUITE_ULP_BINS - 2;
    }
    bins[bin]++;
  }
}
