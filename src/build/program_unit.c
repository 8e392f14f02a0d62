/* The translation units of reprocl's own programs and their keys: the prelude parts, the build options
 * in the context's mode (policy options plus a variant's defines), the unit's source strings, the key of
 * program binaries and bundles, and the key hashes of the tuning cache. Every key is built here, so the
 * binary cache and the tuner cannot disagree about what a program is. */
#include <string.h>

#include "build/program_unit.h"
#include "core/alloc.h"
#include "core/kernel_source.h"
#include "core/profile.h"

/* The prelude parts, in order: portable types first, then the integer-exact numerics, then the policy. */
const char *const rcl__prelude_parts[RCL_NPRELUDE] = {"rcl_portable.cl", "rcl_softfloat.cl", "rcl_exact.cl",
                                                      "prelude.cl"};

int rcl__policy_options(char *buf, size_t size, const rcl_context *ctx, rcl_dtype dtype, int have_dtype) {
  const rcl_device_profile *p = &ctx->profile;
  int repro = ctx->mode == RCL_MODE_REPRODUCIBLE;
  int n = snprintf(buf, size, "%s%s%s%s%s%s%s", repro ? "-DRCL_REPRODUCIBLE=1" : "-DRCL_NATIVE=1",
                   repro && p->fp32_correctly_rounded_div_sqrt ? " -cl-fp32-correctly-rounded-divide-sqrt" : "",
                   repro && p->fp32_emulate_subnormals ? " -DRCL_EMULATE_F32_SUBNORMALS=1" : "",
                   repro && p->fp32_emulate_div_sqrt ? " -DRCL_EMULATE_F32_DIV_SQRT=1" : "",
                   p->fp64 ? " -DRCL_HAS_FP64=1" : "", p->int64_atomics ? " -DRCL_HAS_INT64_ATOMICS=1" : "",
                   !have_dtype        ? ""
                   : dtype == RCL_F64 ? " -DRCL_DTYPE_F64=1"
                                      : " -DRCL_DTYPE_F32=1");
  if (n < 0 || (size_t)n >= size) return rcl__fail(RCL_ERR_INTERNAL, "build options do not fit %zu bytes", size);
  return 0;
}

void rcl__unit_free(rcl_unit *u) {
  for (size_t i = 0; i < u->nparts; i++) rcl__free(u->parts[i]);
  u->nparts = 0;
}

int rcl__unit_compose(rcl_unit *u, const rcl_context *ctx, const char *body, size_t body_len, const char *body_name) {
  int rc = 0;
  u->nparts = 0;
  u->ns = 0;
  for (; u->nparts < RCL_NPRELUDE; u->nparts++) {
    rc = rcl__kernel_source(&u->parts[u->nparts], &u->lens[0], rcl__prelude_parts[u->nparts]);
    if (rc) break;
  }
  if (rc) {
    rcl__unit_free(u);
    return rc;
  }
  /* The pragma comes first, before any code of any part. */
  u->strs[u->ns] = ctx->mode == RCL_MODE_REPRODUCIBLE ? "#pragma OPENCL FP_CONTRACT OFF\n" : "\n";
  u->lens[u->ns] = strlen(u->strs[u->ns]);
  u->ns++;
  for (size_t i = 0; i <= RCL_NPRELUDE; i++) {
    snprintf(u->lines[i], sizeof u->lines[i], "\n#line 1 \"%s\"\n",
             i < RCL_NPRELUDE ? rcl__prelude_parts[i] : body_name);
    u->strs[u->ns] = u->lines[i];
    u->lens[u->ns++] = strlen(u->lines[i]);
    u->strs[u->ns] = i < RCL_NPRELUDE ? u->parts[i] : body;
    u->lens[u->ns++] = i < RCL_NPRELUDE ? strlen(u->parts[i]) : body_len;
  }
  return 0;
}

int rcl__program_options(char *opts, size_t size, const rcl_context *ctx, const char *file, rcl_dtype dtype,
                         const char *extra) {
  int rc = rcl__policy_options(opts, size - 256, ctx, dtype, 1);
  if (rc) return rc;
  if (extra && *extra) {
    size_t ol = strlen(opts);
    if (ol + 1 + strlen(extra) + 1 > size)
      return rcl__fail(RCL_ERR_INVALID_ARG, "extra build defines for %s are too long", file);
    snprintf(opts + ol, size - ol, " %s", extra);
  }
  return 0;
}

int rcl__program_unit(char **text, size_t *len, char **options, char key[RCL_SHA256_HEX_SIZE], rcl_context *ctx,
                      const char *file, rcl_dtype dtype, const char *extra) {
  char opts[1024];
  int rc = rcl__program_options(opts, sizeof opts, ctx, file, dtype, extra);
  char *src = NULL;
  size_t slen = 0;
  rcl_unit u;
  if (!rc) rc = rcl__kernel_source(&src, &slen, file);
  if (!rc && (rc = rcl__unit_compose(&u, ctx, src, slen, file)) == 0) {
    size_t total = 0;
    for (cl_uint i = 0; i < u.ns; i++) total += u.lens[i];
    char *t = rcl__malloc(total + 1);
    char *o = t ? rcl__strdup(opts) : NULL;
    if (!o) {
      rcl__free(t);
      rc = RCL_ERR_OUT_OF_MEMORY;
    } else {
      size_t at = 0;
      for (cl_uint i = 0; i < u.ns; i++) {
        memcpy(t + at, u.strs[i], u.lens[i]);
        at += u.lens[i];
      }
      t[at] = '\0';
      rcl__program_key(key, u.ns, u.strs, u.lens, opts);
      *text = t;
      *len = total;
      *options = o;
    }
    rcl__unit_free(&u);
  }
  rcl__free(src);
  return rc;
}

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

/* Hashes the text of cl/<name> with its terminating NUL. */
static int hash_source(rcl_sha256_ctx *h, const char *name) {
  char *text;
  size_t size;
  int rc = rcl__kernel_source(&text, &size, name);
  if (rc) return rc;
  rcl_sha256_update(h, text, size + 1);
  rcl__free(text);
  return 0;
}

int rcl__program_tune_key(char src[17], char opts[17], const rcl_context *ctx, const char *files, rcl_dtype dtype,
                          const char *defines) {
  rcl_sha256_ctx h;
  rcl_sha256_init(&h);
  int rc = 0;
  /* The prelude parts, then every file of the kernel's programs ("a.cl,b.cl"). */
  for (size_t i = 0; i < RCL_NPRELUDE && !rc; i++) rc = hash_source(&h, rcl__prelude_parts[i]);
  for (const char *p = files; *p && !rc;) {
    const char *c = strchr(p, ',');
    size_t l = c ? (size_t)(c - p) : strlen(p);
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)l, p);
    rc = hash_source(&h, name);
    p += l + (c != NULL);
  }
  if (rc) return rc;
  char hex[RCL_SHA256_HEX_SIZE], text[1200];
  rcl_sha256_final_hex(&h, hex);
  memcpy(src, hex, 16);
  src[16] = '\0';
  if ((rc = rcl__program_options(text, sizeof text - 100, ctx, files, dtype, defines)) != 0) return rc;
  /* The code-generation environment joins the options' hash (only when set: the record format and the
   * keys of an ordinary environment stay as they were). */
  char env[RCL_SHA256_HEX_SIZE];
  rcl__codegen_env(env);
  if (env[0]) snprintf(text + strlen(text), sizeof text - strlen(text), " env=%s", env);
  rcl_sha256_hex(hex, text, strlen(text));
  memcpy(opts, hex, 16);
  opts[16] = '\0';
  return 0;
}
