/* Where the caches live and whether they may be written or trusted (cache_dir.c). Not installed. */
#ifndef REPROCL_BUILD_CACHE_DIR_H
#define REPROCL_BUILD_CACHE_DIR_H
#include <stddef.h>

#include "core/error.h"

/* The cache directory: configured (the context's cache_dir), else $REPROCL_CACHE_DIR, else
 * $XDG_CACHE_HOME/reprocl, else $HOME/.cache/reprocl. *dir is NULL (memory only) when none can be
 * named; *warning (owned, may be NULL) then says why. Does not touch the file system. */
RCL_INTERNAL int rcl__cache_dir_resolve(char **dir, char **warning, const char *configured);
/* Whether the directory may be written: creates it (mode 0700, parents too) if missing; refuses a
 * directory (or a symlink to one) owned by another user, or one writable by others without the sticky
 * bit. 0 if writable; RCL_ERR_IO with the reason otherwise (nothing is written then). */
RCL_INTERNAL int rcl__cache_dir_writable(const char *dir);
/* Whether files in dir may be trusted as program binaries (owned by this user or root, not writable by
 * others): 1 or 0. Tuning records are read from any readable directory (they cannot change a bit). */
RCL_INTERNAL int rcl__cache_dir_trusted(const char *dir);
/* Writes data to dir/name atomically: a temporary file in dir, fsync, rename, fsync of dir. */
RCL_INTERNAL int rcl__cache_write_atomic(const char *dir, const char *name, const void *data, size_t size);
/* Reads a whole regular file (not following a final symlink). RCL_ERR_NOT_FOUND if absent. */
RCL_INTERNAL int rcl__cache_read_file(char **data, size_t *size, const char *path);

#endif
