/* The programs of every family (rcl__program_foreach over the table of tune_registry.c) and what is
 * made of them: program bundles (rcl_program_bundle_write, _pack; the reader is build/bundle.c) and the
 * offline sources of `reprocl compile --emit-source` (rcl_program_sources_write). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "build/binary_cache.h"
#include "build/bundle.h"
#include "build/program.h"
#include "build/program_unit.h"
#include "context/registry.h"
#include "core/alloc.h"

/* Whether file/defines is a program of a kernel listed before k (k->source may name several files). */
static int seen_before(const rcl_tune_kernel *const *k, const char *file, size_t fl) {
  for (const rcl_tune_kernel *const *j = rcl__tune_kernels; j < k; j++) {
    if (strcmp((*j)->defines ? (*j)->defines : "", (*k)->defines ? (*k)->defines : "")) continue;
    for (const char *p = (*j)->source; *p;) {
      const char *c = strchr(p, ',');
      size_t l = c ? (size_t)(c - p) : strlen(p);
      if (l == fl && !strncmp(p, file, l)) return 1;
      p += l + (c != NULL);
    }
  }
  return 0;
}

int rcl__program_foreach(rcl_context *ctx, rcl__program_fn fn, void *user, size_t *count) {
  static const rcl_dtype dts[] = {RCL_F32, RCL_F64};
  size_t n = 0;
  int rc = 0;
  for (const rcl_tune_kernel *const *k = rcl__tune_kernels; *k && !rc; k++) {
    for (const char *p = (*k)->source; *p && !rc;) {
      const char *c = strchr(p, ',');
      size_t l = c ? (size_t)(c - p) : strlen(p);
      char file[128];
      snprintf(file, sizeof file, "%.*s", (int)l, p);
      p += l + (c != NULL);
      if (seen_before(k, file, l)) continue;
      /* also once per kernel: the same file twice in one list */
      for (int d = 0; d < 2 && !rc; d++) {
        if (rcl_device_profile_support(&ctx->profile, (*k)->family, dts[d], NULL) == RCL_SUPPORT_NONE) continue;
        rc = fn(user, ctx, file, dts[d], (*k)->defines);
        n++;
      }
    }
  }
  for (const rcl_bundle_program *e = rcl__bundle_extra_programs; e->file && !rc; e++)
    for (int d = 0; d < 2 && !rc; d++) {
      if (rcl_device_profile_support(&ctx->profile, e->family, dts[d], NULL) == RCL_SUPPORT_NONE) continue;
      rc = fn(user, ctx, e->file, dts[d], e->defines);
      n++;
    }
  if (count) *count = n;
  return rc;
}

typedef struct {
  char *head; /* the header text being built */
  size_t hlen, hcap;
  unsigned char *body;
  size_t blen, bcap;
  const char *dir; /* sources/pack: the directory */
  FILE *manifest;
} writer;

static int grow(void **buf, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  size_t nc = *cap ? *cap : 4096;
  while (nc < need) nc *= 2;
  void *g = rcl__realloc(*buf, nc);
  if (!g) return RCL_ERR_OUT_OF_MEMORY;
  *buf = g;
  *cap = nc;
  return 0;
}

static int add_entry(writer *w, const char *key, const unsigned char *bin, size_t size, const char *label) {
  char sum[RCL_SHA256_HEX_SIZE], line[512];
  rcl_sha256_hex(sum, bin, size);
  int l = snprintf(line, sizeof line, "program %s %zu %s %s\n", key, size, sum, label);
  int rc = grow((void **)&w->head, &w->hcap, w->hlen + (size_t)l + 1);
  if (!rc) rc = grow((void **)&w->body, &w->bcap, w->blen + size);
  if (rc) return rc;
  memcpy(w->head + w->hlen, line, (size_t)l + 1);
  w->hlen += (size_t)l;
  memcpy(w->body + w->blen, bin, size);
  w->blen += size;
  return 0;
}

static int bundle_one(void *user, rcl_context *ctx, const char *file, rcl_dtype dt, const char *defines) {
  writer *w = user;
  char *text, *opts, key[RCL_SHA256_HEX_SIZE];
  size_t len;
  int rc = rcl__program_unit(&text, &len, &opts, key, ctx, file, dt, defines);
  if (rc) return rc;
  cl_program prog;
  rc = rcl__program_get(&prog, ctx, file, dt, defines); /* built (or loaded) and owned by the context */
  size_t bsz = 0;
  unsigned char *bin = rc ? NULL : rcl__program_binary(&bsz, prog);
  if (!rc && !bin)
    rc = rcl__fail(RCL_ERR_UNSUPPORTED, "%s does not return program binaries (CL_PROGRAM_BINARIES)",
                   ctx->profile.device_name);
  char label[128];
  snprintf(label, sizeof label, "%s:%s%s%s", file, rcl_dtype_name(dt), defines ? ":" : "", defines ? defines : "");
  for (char *c = label; *c; c++)
    if (*c == ' ') *c = ',';
  if (!rc) rc = add_entry(w, key, bin, bsz, label);
  free(bin);
  rcl__free(text);
  rcl__free(opts);
  return rc;
}

static int write_bundle(writer *w, rcl_context *ctx, const char *path) {
  char head[512];
  char dev[160];
  snprintf(dev, sizeof dev, "%s", ctx->profile.device_name);
  for (char *c = dev; *c; c++)
    if (*c == '\n') *c = ' ';
  int hl = snprintf(head, sizeof head, "%s\ndevice %s %s\n", RCL_BUNDLE_MAGIC, ctx->profile.fingerprint, dev);
  FILE *f = fopen(path, "wb");
  if (!f) return rcl__fail(RCL_ERR_IO, "cannot open %s for writing: %s", path, strerror(errno));
  int bad = fwrite(head, 1, (size_t)hl, f) != (size_t)hl || fwrite(w->head, 1, w->hlen, f) != w->hlen ||
            fputs("end\n", f) == EOF || fwrite(w->body, 1, w->blen, f) != w->blen;
  if (fclose(f) != 0) bad = 1;
  if (bad) return rcl__fail(RCL_ERR_IO, "cannot write %s: %s", path, strerror(errno));
  return 0;
}

int rcl_program_bundle_write(rcl_context *ctx, const char *path, size_t *programs) {
  if (!ctx || !path) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_program_bundle_write: NULL argument");
  writer w;
  memset(&w, 0, sizeof w);
  int rc = rcl__program_foreach(ctx, bundle_one, &w, programs);
  if (!rc) rc = write_bundle(&w, ctx, path);
  rcl__free(w.head);
  rcl__free(w.body);
  return rc;
}

static int write_text(const char *dir, const char *name, const char *text, size_t len) {
  size_t pl = strlen(dir) + strlen(name) + 2;
  char *path = rcl__malloc(pl);
  if (!path) return RCL_ERR_OUT_OF_MEMORY;
  snprintf(path, pl, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  int rc = 0;
  if (!f)
    rc = rcl__fail(RCL_ERR_IO, "cannot open %s for writing: %s", path, strerror(errno));
  else {
    int bad = fwrite(text, 1, len, f) != len;
    if (fclose(f) != 0 || bad) rc = rcl__fail(RCL_ERR_IO, "cannot write %s: %s", path, strerror(errno));
  }
  rcl__free(path);
  return rc;
}

static int source_one(void *user, rcl_context *ctx, const char *file, rcl_dtype dt, const char *defines) {
  writer *w = user;
  char *text, *opts, key[RCL_SHA256_HEX_SIZE], name[96];
  size_t len;
  int rc = rcl__program_unit(&text, &len, &opts, key, ctx, file, dt, defines);
  if (rc) return rc;
  snprintf(name, sizeof name, "%s.cl", key);
  rc = write_text(w->dir, name, text, len);
  if (!rc) {
    snprintf(name, sizeof name, "%s.options", key);
    char line[1100];
    int l = snprintf(line, sizeof line, "%s\n", opts);
    rc = write_text(w->dir, name, line, (size_t)l);
  }
  if (!rc)
    fprintf(w->manifest, "%s %s %s%s%s\n", key, file, rcl_dtype_name(dt), defines ? " " : "", defines ? defines : "");
  rcl__free(text);
  rcl__free(opts);
  return rc;
}

static FILE *open_manifest(const char *dir, const char *mode) {
  size_t pl = strlen(dir) + 16;
  char *path = rcl__malloc(pl);
  if (!path) return NULL;
  snprintf(path, pl, "%s/manifest.txt", dir);
  FILE *f = fopen(path, mode);
  if (!f) rcl__fail(RCL_ERR_IO, "cannot open %s: %s", path, strerror(errno));
  rcl__free(path);
  return f;
}

int rcl_program_sources_write(rcl_context *ctx, const char *dir, size_t *programs) {
  if (!ctx || !dir) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_program_sources_write: NULL argument");
  if (mkdir(dir, 0755) != 0 && errno != EEXIST)
    return rcl__fail(RCL_ERR_IO, "cannot create %s: %s", dir, strerror(errno));
  writer w;
  memset(&w, 0, sizeof w);
  w.dir = dir;
  w.manifest = open_manifest(dir, "w");
  if (!w.manifest) return RCL_ERR_IO;
  fprintf(w.manifest,
          "# reprocl offline programs for %s (fingerprint %s)\n# key file dtype [defines]: compile "
          "<key>.cl with the options in <key>.options into <key>.bin\n",
          ctx->profile.device_name, ctx->profile.fingerprint);
  int rc = rcl__program_foreach(ctx, source_one, &w, programs);
  if (fclose(w.manifest) != 0 && !rc) rc = rcl__fail(RCL_ERR_IO, "cannot write %s/manifest.txt", dir);
  return rc;
}

int rcl_program_bundle_pack(rcl_context *ctx, const char *dir, const char *path, size_t *programs) {
  if (!ctx || !dir || !path) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_program_bundle_pack: NULL argument");
  FILE *m = open_manifest(dir, "r");
  if (!m) return RCL_ERR_IO;
  writer w;
  memset(&w, 0, sizeof w);
  char line[1024];
  size_t n = 0, lineno = 0;
  int rc = 0;
  while (!rc && fgets(line, sizeof line, m)) {
    lineno++;
    if (line[0] == '#' || line[0] == '\n') continue;
    char key[80], file[128], dt[16];
    if (sscanf(line, "%79s %127s %15s", key, file, dt) != 3 || strlen(key) != 64) {
      rc = rcl__fail(RCL_ERR_PARSE, "%s/manifest.txt:%zu: expected \"key file dtype\"", dir, lineno);
      break;
    }
    char name[160];
    snprintf(name, sizeof name, "%s/%s.bin", dir, key);
    char *bin;
    size_t size;
    if ((rc = rcl__bundle_read_file(&bin, &size, name)) != 0) {
      rcl__error_append(" (compile %s/%s.cl into it; see manifest.txt)", dir, key);
      break;
    }
    char label[160];
    snprintf(label, sizeof label, "%s:%s", file, dt);
    rc = add_entry(&w, key, (const unsigned char *)bin, size, label);
    rcl__free(bin);
    n++;
  }
  fclose(m);
  if (!rc) rc = write_bundle(&w, ctx, path);
  if (!rc && programs) *programs = n;
  rcl__free(w.head);
  rcl__free(w.body);
  return rc;
}
