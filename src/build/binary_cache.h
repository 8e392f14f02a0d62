/* Program binaries (binary_cache.c): the on-disk binary cache and the lookup of a program in the loaded
 * bundle or that cache. Not installed. */
#ifndef REPROCL_BUILD_BINARY_CACHE_H
#define REPROCL_BUILD_BINARY_CACHE_H
#include "core/context.h"

/* Called by program.c's build(): *out is a program for these source strings and options from a loaded
 * bundle or the binary cache (built from the binary and verified), or NULL when there is none. An
 * unusable entry is discarded and the caller builds from source; the one failure is running out of host
 * memory (RCL_ERR_OUT_OF_MEMORY), which is reported rather than hidden. */
RCL_INTERNAL int rcl__binary_lookup(cl_program *out, rcl_context *ctx, cl_uint nstrings, const char **strings,
                                    const size_t *lengths, const char *options);
/* Stores a freshly built program's binary in the cache (best effort). */
RCL_INTERNAL void rcl__binary_store(rcl_context *ctx, cl_program prog, cl_uint nstrings, const char **strings,
                                    const size_t *lengths, const char *options);
/* Checks a cached binary's header line, size and payload hash for this fingerprint and program key (for
 * the cache and the fuzz target): the payload (inside data) or NULL. */
RCL_INTERNAL const unsigned char *rcl__binary_verify(size_t *size, const char *data, size_t len,
                                                     const char *fingerprint, const char *pkey);
/* The binary of a built program (malloc'ed: free), or NULL. */
RCL_INTERNAL unsigned char *rcl__program_binary(size_t *size, cl_program prog);
/* Removes every cached binary of dir (all devices) and temporary files of interrupted writes; adds the
 * number removed to *removed. */
RCL_INTERNAL void rcl__binary_clear(const char *dir, size_t *removed);

#endif
