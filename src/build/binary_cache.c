/* Program binaries: the on-disk binary cache (a second run skips compilation), and the lookup of a
 * program in the context's loaded bundle (bundle.c) before it.
 *
 * Both are keyed by the SHA-256 of the translation unit (every source string, prelude included) and its
 * build options; the cache also by the device fingerprint and library version, and a bundle carries the
 * fingerprint of the device it was made for. A cached binary is verified before use: its header, size
 * and payload hash, then clCreateProgramWithBinary and clBuildProgram; one that fails any step is
 * deleted and the program is built from source. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build/binary_cache.h"
#include "build/cache_dir.h"
#include "build/cache_state.h"
#include "build/program_unit.h"
#include "core/alloc.h"
#include "core/profile.h"

#define BIN_DIR "binaries"
#define BIN_MAGIC "reprocl-binary 1"

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

unsigned char *rcl__program_binary(size_t *size, cl_program prog) {
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

static cl_program bundle_load(rcl_context *ctx, rcl_bundle *b, const char *pkey, const char *options) {
  size_t size;
  const unsigned char *bin = rcl__bundle_find(b, pkey, &size);
  if (!bin) return NULL;
  cl_program p = from_binary(ctx, bin, size, options);
  if (p)
    rcl__stat_add(ctx, RCL_STAT_BUNDLE_HIT);
  else
    rcl__cache_warn(ctx, "the bundle's binary for program %.16s failed to load; building from source", pkey);
  return p;
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
  unsigned char *bin = rcl__program_binary(&bsz, prog);
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
}

void rcl__binary_clear(const char *dir, size_t *removed) {
  /* Binaries are named by a hash that includes the fingerprint, so they are cleared for all devices. */
  char *bdir = bin_dir(dir);
  DIR *d = bdir ? opendir(bdir) : NULL;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    size_t l = strlen(e->d_name);
    if (e->d_name[0] == '.' && strncmp(e->d_name, ".", 2) && strncmp(e->d_name, "..", 3) && strstr(e->d_name, ".bin."))
      ; /* a temporary file of an interrupted write: removed below like a binary */
    else if (l < 5 || strcmp(e->d_name + l - 4, ".bin"))
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", bdir, e->d_name);
    if (unlink(path) == 0) (*removed)++;
  }
  if (d) closedir(d);
  rcl__free(bdir);
}
