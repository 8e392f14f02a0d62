/* Program binaries: the on-disk binary cache (a second run skips compilation) and offline bundles (the
 * FPGA flow, where programs are compiled by aoc or v++ and only loaded at run time).
 *
 * Both are keyed by the SHA-256 of the translation unit (every source string, prelude included) and its
 * build options; the cache also by the device fingerprint and library version, and a bundle carries the
 * fingerprint of the device it was made for. A cached binary is verified before use: its header, size
 * and payload hash, then clCreateProgramWithBinary and clBuildProgram; one that fails any step is
 * deleted and the program is built from source. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tune/tune_internal.h"

#define BIN_DIR "binaries"
#define BIN_MAGIC "reprocl-binary 1"
#define BUNDLE_MAGIC "reprocl-bundle 1"

void rcl__bundle_set(rcl_context *ctx, rcl_bundle *b); /* tune.c */

void rcl__program_key(char hex[RCL_SHA256_HEX_SIZE], cl_uint n, const char **strings, const size_t *lengths,
                      const char *options) {
  rcl_sha256_ctx h;
  rcl_sha256_init(&h);
  /* The strings as one text (what the compiler sees), then the options after a separator. */
  for (cl_uint i = 0; i < n; i++) rcl_sha256_update(&h, strings[i], lengths[i]);
  rcl_sha256_update(&h, "\0options\0", 9);
  rcl_sha256_update(&h, options ? options : "", options ? strlen(options) : 0);
  rcl_sha256_final_hex(&h, hex);
}

/* Builds a program from a binary for the context's device: the program, or NULL (nothing kept). */
static cl_program from_binary(rcl_context *ctx, const unsigned char *bin, size_t size, const char *options) {
  cl_int err, status = CL_SUCCESS;
  cl_program p = clCreateProgramWithBinary(ctx->cl_ctx, 1, &ctx->device, &size, &bin, &status, &err);
  if (!p) return NULL;
  if (status != CL_SUCCESS || clBuildProgram(p, 1, &ctx->device, options, NULL, NULL) != CL_SUCCESS) {
    clReleaseProgram(p);
    return NULL;
  }
  return p;
}

/* The binary of a built program (malloc'ed), or NULL. */
static unsigned char *binary_of(size_t *size, rcl_context *ctx, cl_program prog) {
  cl_uint ndev = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof ndev, &ndev, NULL) != CL_SUCCESS || ndev != 1) return NULL;
  size_t sz = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof sz, &sz, NULL) != CL_SUCCESS || sz == 0) return NULL;
  unsigned char *bin = malloc(sz);
  if (!bin) return NULL;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) != CL_SUCCESS) {
    free(bin);
    return NULL;
  }
  (void)ctx;
  *size = sz;
  return bin;
}

/* ---- the binary cache ------------------------------------------------------------------------------ */

/* The cache key: program key + device fingerprint + library version (+ the code-generation environment
 * when one is set, rcl__codegen_env); the file dir/binaries/<key>.bin. */
static void cache_name(char name[80], const rcl_context *ctx, const char *pkey) {
  rcl_sha256_ctx h;
  char hex[RCL_SHA256_HEX_SIZE], env[RCL_SHA256_HEX_SIZE];
  rcl_sha256_init(&h);
  rcl_sha256_update(&h, pkey, 64);
  rcl_sha256_update(&h, ctx->profile.fingerprint, 64);
  rcl_sha256_update(&h, REPROCL_VERSION_STRING, strlen(REPROCL_VERSION_STRING));
  rcl__codegen_env(env);
  if (env[0]) rcl_sha256_update(&h, env, 64);
  rcl_sha256_final_hex(&h, hex);
  snprintf(name, 80, "%.40s.bin", hex);
}

static char *bin_dir(const char *dir) {
  size_t n = strlen(dir) + sizeof BIN_DIR + 2;
  char *p = rcl__malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, BIN_DIR);
  return p;
}

/* Parses and verifies a cache file: the payload (pointing into data) or NULL. */
const unsigned char *rcl__binary_verify(size_t *size, const char *data, size_t len, const char *fingerprint,
                                        const char *pkey) {
  const char *nl = memchr(data, '\n', len < 512 ? len : 512);
  if (!nl) return NULL;
  char fp[65], key[65], sum[65];
  unsigned long long sz;
  char head[512];
  memcpy(head, data, (size_t)(nl - data));
  head[nl - data] = '\0';
  if (strncmp(head, BIN_MAGIC " ", sizeof BIN_MAGIC) != 0) return NULL;
  if (sscanf(head + sizeof BIN_MAGIC, "%64s %64s %llu %64s", fp, key, &sz, sum) != 4) return NULL;
  const unsigned char *payload = (const unsigned char *)nl + 1;
  size_t have = len - (size_t)(nl + 1 - data);
  if (strcmp(fp, fingerprint) || strcmp(key, pkey) || sz != have) return NULL;
  char hex[RCL_SHA256_HEX_SIZE];
  rcl_sha256_hex(hex, payload, have);
  if (strcmp(hex, sum)) return NULL;
  *size = have;
  return payload;
}

static cl_program cache_load(rcl_context *ctx, const char *pkey, const char *options, int *oom) {
  const char *dir = rcl__cache_dir(ctx);
  if (!dir) return NULL;
  char *bdir = bin_dir(dir);
  if (!bdir) {
    *oom = 1;
    return NULL;
  }
  cl_program prog = NULL;
  /* Binaries are code: only from a directory no other user can write to. */
  if (rcl__cache_dir_trusted(bdir)) {
    char name[80];
    cache_name(name, ctx, pkey);
    size_t pl = strlen(bdir) + strlen(name) + 2;
    char *path = rcl__malloc(pl);
    char *data = NULL;
    size_t len = 0;
    if (!path) *oom = 1;
    if (path) {
      snprintf(path, pl, "%s/%s", bdir, name);
      int rc = rcl__cache_read_file(&data, &len, path);
      if (rc == RCL_ERR_OUT_OF_MEMORY) *oom = 1;
      if (rc == 0) {
        size_t bsz;
        const unsigned char *bin = rcl__binary_verify(&bsz, data, len, ctx->profile.fingerprint, pkey);
        prog = bin ? from_binary(ctx, bin, bsz, options) : NULL;
        if (!prog) { /* corrupt, truncated or refused by the driver: discard and rebuild */
          unlink(path);
          rcl__stat_add(ctx, RCL_STAT_BINARY_REJECTED);
        } else {
          rcl__stat_add(ctx, RCL_STAT_BINARY_HIT);
        }
      }
      rcl__free(data);
      rcl__free(path);
    }
  }
  rcl__free(bdir);
  rcl_error_clear();
  return prog;
}

static int grow_buf(char **buf, size_t *cap) {
  char *g = rcl__realloc(*buf, *cap * 2);
  if (!g) return RCL_ERR_OUT_OF_MEMORY;
  *buf = g;
  *cap *= 2;
  return 0;
}

/* ---- bundles ----------------------------------------------------------------------------------------- */

typedef struct {
  char key[65], sum[65];
  size_t offset, size;
} bundle_entry;

/* Reads a file the caller named (following symlinks, unlike the cache's own files). */
static int read_whole(char **data, size_t *size, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (errno == ENOENT) return rcl__fail(RCL_ERR_NOT_FOUND, "%s does not exist", path);
    return rcl__fail(RCL_ERR_IO, "cannot open %s: %s", path, strerror(errno));
  }
  size_t cap = 1 << 16, len = 0;
  char *buf = rcl__malloc(cap);
  int rc = buf ? 0 : RCL_ERR_OUT_OF_MEMORY;
  while (!rc) {
    if (len == cap && (rc = grow_buf(&buf, &cap)) != 0) break;
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) {
      if (ferror(f)) rc = rcl__fail(RCL_ERR_IO, "cannot read %s", path);
      break;
    }
  }
  fclose(f);
  if (rc) {
    rcl__free(buf);
    return rc;
  }
  *data = buf;
  *size = len;
  return 0;
}

struct rcl_bundle {
  char *data; /* the whole file */
  size_t len;
  bundle_entry *entries;
  size_t count;
};

void rcl__bundle_free(rcl_bundle *b) {
  if (!b) return;
  rcl__free(b->data);
  rcl__free(b->entries);
  rcl__free(b);
}

static cl_program bundle_load(rcl_context *ctx, rcl_bundle *b, const char *pkey, const char *options) {
  for (size_t i = 0; i < b->count; i++) {
    if (strcmp(b->entries[i].key, pkey)) continue;
    cl_program p = from_binary(ctx, (const unsigned char *)b->data + b->entries[i].offset, b->entries[i].size, options);
    if (p)
      rcl__stat_add(ctx, RCL_STAT_BUNDLE_HIT);
    else
      rcl__cache_warn(ctx, "the bundle's binary for program %.16s failed to load; building from source", pkey);
    return p;
  }
  return NULL;
}

int rcl__binary_lookup(cl_program *out, rcl_context *ctx, cl_uint n, const char **strings, const size_t *lengths,
                       const char *options) {
  char pkey[RCL_SHA256_HEX_SIZE];
  rcl__program_key(pkey, n, strings, lengths, options);
  rcl_bundle *b = rcl__bundle_of(ctx);
  cl_program p = b ? bundle_load(ctx, b, pkey, options) : NULL;
  int oom = 0;
  if (!p && !getenv("REPROCL_NO_BINARY_CACHE")) p = cache_load(ctx, pkey, options, &oom);
  *out = p;
  if (oom) return rcl__fail(RCL_ERR_OUT_OF_MEMORY, "out of host memory reading the program-binary cache");
  if (!p) rcl__stat_add(ctx, RCL_STAT_BINARY_MISS);
  return 0;
}

void rcl__binary_store(rcl_context *ctx, cl_program prog, cl_uint n, const char **strings, const size_t *lengths,
                       const char *options) {
  const char *dir = rcl__cache_dir(ctx);
  if (!dir || getenv("REPROCL_NO_BINARY_CACHE")) return;
  char pkey[RCL_SHA256_HEX_SIZE];
  rcl__program_key(pkey, n, strings, lengths, options);
  size_t bsz = 0;
  unsigned char *bin = binary_of(&bsz, ctx, prog);
  char *bdir = bin_dir(dir);
  char *file = NULL;
  if (bin && bdir && rcl__cache_dir_writable(dir) == 0 && rcl__cache_dir_writable(bdir) == 0) {
    char sum[RCL_SHA256_HEX_SIZE], name[80], head[400];
    rcl_sha256_hex(sum, bin, bsz);
    cache_name(name, ctx, pkey);
    int hl = snprintf(head, sizeof head, "%s %s %s %zu %s\n", BIN_MAGIC, ctx->profile.fingerprint, pkey, bsz, sum);
    file = malloc((size_t)hl + bsz);
    if (file) {
      memcpy(file, head, (size_t)hl);
      memcpy(file + hl, bin, bsz);
      if (rcl__cache_write_atomic(bdir, name, file, (size_t)hl + bsz) == 0)
        rcl__stat_add(ctx, RCL_STAT_BINARY_STORED);
      else
        rcl__cache_warn(ctx, "%s", rcl_error_last());
    }
  } else if (bin && bdir) {
    rcl__cache_warn(ctx, "%s", rcl_error_last());
  }
  free(file);
  free(bin);
  rcl__free(bdir);
  rcl_error_clear();
}

/* ---- writing and loading bundles ------------------------------------------------------------------------ */

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
  unsigned char *bin = rc ? NULL : binary_of(&bsz, ctx, prog);
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
  int hl = snprintf(head, sizeof head, "%s\ndevice %s %s\n", BUNDLE_MAGIC, ctx->profile.fingerprint, dev);
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
    if ((rc = read_whole(&bin, &size, name)) != 0) {
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

int rcl__bundle_parse(rcl_bundle **out, char *data, size_t len, const char *path, const char *fingerprint,
                      const char *device_name) {
  *out = NULL;
  rcl_bundle *b = rcl__calloc(1, sizeof *b);
  if (!b) {
    rcl__free(data);
    return RCL_ERR_OUT_OF_MEMORY;
  }
  b->data = data;
  b->len = len;
  int rc = 0;
  size_t cap = 0, off = 0, line = 0, payload = 0;
  int ended = 0;
  while (!rc && !ended) {
    const char *s = b->data + off, *nl = off < b->len ? memchr(s, '\n', b->len - off) : NULL;
    line++;
    if (!nl) {
      rc = rcl__fail(RCL_ERR_PARSE, "%s:%zu: truncated bundle header", path, line);
      break;
    }
    char text[600];
    size_t l = (size_t)(nl - s);
    if (l >= sizeof text) l = sizeof text - 1;
    memcpy(text, s, l);
    text[l] = '\0';
    off = (size_t)(nl - b->data) + 1;
    if (line == 1) {
      if (strcmp(text, BUNDLE_MAGIC))
        rc = rcl__fail(RCL_ERR_PARSE, "%s:1: not a reprocl program bundle (expected \"%s\")", path, BUNDLE_MAGIC);
    } else if (line == 2) {
      char fp[80];
      if (sscanf(text, "device %79s", fp) != 1 || strlen(fp) != 64)
        rc = rcl__fail(RCL_ERR_PARSE, "%s:2: expected \"device <fingerprint> <name>\"", path);
      else if (strcmp(fp, fingerprint))
        rc = rcl__fail(RCL_ERR_MISMATCH,
                       "%s was made for another device or driver (%s) than %s; rebuild it with reprocl compile", path,
                       text + 7 + 65 < text + l ? text + 7 + 65 : "?", device_name);
    } else if (!strcmp(text, "end")) {
      ended = 1;
    } else {
      bundle_entry e;
      unsigned long long sz;
      memset(&e, 0, sizeof e);
      if (sscanf(text, "program %64s %llu %64s", e.key, &sz, e.sum) != 3 || strlen(e.key) != 64) {
        rc = rcl__fail(RCL_ERR_PARSE, "%s:%zu: expected \"program <key> <size> <sha256> <label>\"", path, line);
        break;
      }
      /* Sizes are checked against the file as they are read: a huge size (or "-1", which %llu takes as
       * 2^64-1) must not wrap the running total into a match and point an entry outside the file. */
      if (sz > b->len - payload) {
        rc = rcl__fail(RCL_ERR_PARSE,
                       "%s:%zu: a program of %llu bytes, more than the file holds (%zu bytes; truncated?)", path, line,
                       sz, b->len);
        break;
      }
      e.size = (size_t)sz;
      e.offset = payload; /* relative to the end of the header, fixed below */
      payload += e.size;
      if (b->count == cap) {
        size_t nc = cap ? cap * 2 : 16;
        bundle_entry *g = rcl__realloc(b->entries, nc * sizeof *g);
        if (!g) {
          rc = RCL_ERR_OUT_OF_MEMORY;
          break;
        }
        b->entries = g;
        cap = nc;
      }
      b->entries[b->count++] = e;
    }
  }
  if (!rc && b->len - off != payload)
    rc = rcl__fail(RCL_ERR_PARSE, "%s: the header lists %zu bytes of binaries, the file holds %zu (truncated?)", path,
                   payload, b->len - off);
  /* Verify every payload against its hash. */
  for (size_t i = 0; !rc && i < b->count; i++) {
    b->entries[i].offset += off;
    char hex[RCL_SHA256_HEX_SIZE];
    rcl_sha256_hex(hex, b->data + b->entries[i].offset, b->entries[i].size);
    if (strcmp(hex, b->entries[i].sum))
      rc = rcl__fail(RCL_ERR_PARSE, "%s: the binary of program %.16s does not match its hash", path, b->entries[i].key);
  }
  if (rc) {
    rcl__bundle_free(b);
    return rc;
  }
  *out = b;
  return 0;
}

size_t rcl__bundle_count(const rcl_bundle *b) { return b->count; }

int rcl_program_bundle_load(rcl_context *ctx, const char *path) {
  if (!ctx || !path) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_program_bundle_load: NULL argument");
  char *data = NULL;
  size_t len = 0;
  int rc = read_whole(&data, &len, path);
  if (rc == RCL_ERR_NOT_FOUND) return rcl__fail(RCL_ERR_NOT_FOUND, "program bundle %s does not exist", path);
  if (rc) return rc;
  rcl_bundle *b;
  rc = rcl__bundle_parse(&b, data, len, path, ctx->profile.fingerprint, ctx->profile.device_name);
  if (rc) return rc;
  rcl__bundle_set(ctx, b);
  return 0;
}

/* ---- clearing -------------------------------------------------------------------------------------------- */

int rcl_cache_clear(const char *dir, const char *fingerprint, size_t *removed) {
  if (!dir) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_cache_clear: NULL directory");
  size_t n = 0;
  struct stat st;
  if (stat(dir, &st) != 0) {
    if (removed) *removed = 0;
    return 0; /* nothing cached */
  }
  int rc = rcl__tcache_merge(dir, NULL, 0, fingerprint ? fingerprint : "*", &n);
  if (!rc && !fingerprint) {
    /* Temporary files of writers that were killed mid-write (.tuning-1.txt.XXXXXX). */
    DIR *td = opendir(dir);
    struct dirent *e;
    while (td && (e = readdir(td)) != NULL) {
      if (strncmp(e->d_name, "." RCL_TCACHE_FILE ".", sizeof RCL_TCACHE_FILE + 1) != 0) continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      if (unlink(path) == 0) n++;
    }
    if (td) closedir(td);
  }
  if (!rc && !fingerprint) {
    /* Binaries are named by a hash that includes the fingerprint, so they are cleared for all devices. */
    char *bdir = bin_dir(dir);
    DIR *d = bdir ? opendir(bdir) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
      size_t l = strlen(e->d_name);
      if (e->d_name[0] == '.' && strncmp(e->d_name, ".", 2) && strncmp(e->d_name, "..", 3) &&
          strstr(e->d_name, ".bin."))
        ; /* a temporary file of an interrupted write: removed below like a binary */
      else if (l < 5 || strcmp(e->d_name + l - 4, ".bin"))
        continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", bdir, e->d_name);
      if (unlink(path) == 0) n++;
    }
    if (d) closedir(d);
    rcl__free(bdir);
  }
  if (removed) *removed = n;
  return rc;
}
