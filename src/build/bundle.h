/* Program bundles (bundle.c): the file format of offline-compiled binaries (the FPGA flow) and its
 * reader. Writing bundles walks every family's programs and lives above, in src/context/. Not installed. */
#ifndef REPROCL_BUILD_BUNDLE_H
#define REPROCL_BUILD_BUNDLE_H
#include <stddef.h>

#include "core/error.h"

#define RCL_BUNDLE_MAGIC "reprocl-bundle 1"

typedef struct rcl_bundle rcl_bundle;
/* Parses a bundle from memory (for rcl_program_bundle_load and the fuzz target). Takes ownership of data
 * (freed on failure too) and checks the index: magic, device fingerprint, "program <key> <size> <sha256>"
 * lines within the file, every payload's hash; errors name path:line. */
RCL_INTERNAL int rcl__bundle_parse(rcl_bundle **out, char *data, size_t len, const char *path, const char *fingerprint,
                                   const char *device_name);
RCL_INTERNAL void rcl__bundle_free(rcl_bundle *b);
/* The binary of the program with key pkey in the bundle (pointing into it), or NULL. */
RCL_INTERNAL const unsigned char *rcl__bundle_find(const rcl_bundle *b, const char *pkey, size_t *size);
/* Reads a file the caller named (following symlinks, unlike the cache's own files; never a device). */
RCL_INTERNAL int rcl__bundle_read_file(char **data, size_t *size, const char *path);

#endif
