/* The translation units of reprocl's own programs and their keys (program_unit.c): the one builder of
 * program text, build options and keys that program building, the binary cache, bundles and the tuning
 * cache all use. Not installed. */
#ifndef REPROCL_BUILD_PROGRAM_UNIT_H
#define REPROCL_BUILD_PROGRAM_UNIT_H
#include "core/context.h"

/* The prelude parts, in the order every unit holds them. */
#define RCL_NPRELUDE 4
extern const char *const rcl__prelude_parts[RCL_NPRELUDE];

/* The device-dependent policy defines and options for a build in the context's mode. */
RCL_INTERNAL int rcl__policy_options(char *buf, size_t size, const rcl_context *ctx, rcl_dtype dtype, int have_dtype);
/* The full options of reprocl's own cl/<file> for dtype: the policy options, then " <extra>" where a
 * variant adds defines. file names the program in the message when they do not fit. */
RCL_INTERNAL int rcl__program_options(char *opts, size_t size, const rcl_context *ctx, const char *file,
                                      rcl_dtype dtype, const char *extra);

/* The source strings of a translation unit: [pragma] then per prelude part [#line, text], then [#line,
 * body]. parts[] holds the prelude texts (rcl__unit_free frees them). */
#define RCL_UNIT_STRINGS (2 + 2 * RCL_NPRELUDE + 2)
typedef struct {
  char *parts[RCL_NPRELUDE];
  size_t nparts;
  const char *strs[RCL_UNIT_STRINGS];
  size_t lens[RCL_UNIT_STRINGS];
  char lines[RCL_NPRELUDE + 1][160];
  cl_uint ns;
} rcl_unit;
/* Composes prelude + body (body_name names the body in #line directives). */
RCL_INTERNAL int rcl__unit_compose(rcl_unit *u, const rcl_context *ctx, const char *body, size_t body_len,
                                   const char *body_name);
RCL_INTERNAL void rcl__unit_free(rcl_unit *u);

/* SHA-256 hex of the translation unit (strings, then options) — the key of binaries and bundles. */
RCL_INTERNAL void rcl__program_key(char hex[RCL_SHA256_HEX_SIZE], cl_uint nstrings, const char **strings,
                                   const size_t *lengths, const char *options);
/* The translation unit of reprocl's own cl/<file> for dtype (prelude included: exactly the source the
 * library compiles), its build options and its key. text and options are owned by the caller. */
RCL_INTERNAL int rcl__program_unit(char **text, size_t *len, char **options, char key[RCL_SHA256_HEX_SIZE],
                                   rcl_context *ctx, const char *file, rcl_dtype dtype, const char *extra);
/* The key hashes of the tuning cache for a kernel whose programs are `files` ("a.cl" or "a.cl,b.cl")
 * built with `defines` (or NULL): src, the first 16 hex digits of the SHA-256 of the prelude parts and
 * the files (each text with its terminating NUL); opts, those of the build options (rcl__program_options)
 * with " env=<rcl__codegen_env>" appended when that is set. */
RCL_INTERNAL int rcl__program_tune_key(char src[17], char opts[17], const rcl_context *ctx, const char *files,
                                       rcl_dtype dtype, const char *defines);

#endif
