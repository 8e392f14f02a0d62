/* The one whole-file reader of the library (file.c): kernel sources from $REPROCL_KERNEL_DIR, the
 * caches' files, program bundles, matrix files. Not installed. */
#ifndef REPROCL_CORE_FILE_H
#define REPROCL_CORE_FILE_H
#include <stddef.h>

#include "core/error.h"

/* What a read refuses (flags of rcl__file_read). */
enum {
  RCL_FILE_NOFOLLOW = 1u,    /* not through a final symlink (the caches' own files) */
  RCL_FILE_REGULAR = 2u,     /* only a regular file (no directory, device, FIFO or socket) */
  RCL_FILE_NO_DEVICE = 4u,   /* no character or block device: /dev/zero would be read until memory runs out */
  RCL_FILE_NO_DIRECTORY = 8u /* no directory (checked before reading, rather than failing the read) */
};

/* Why a read failed, for the caller's message. */
typedef enum {
  RCL_FILE_ABSENT = 1,  /* open failed with ENOENT */
  RCL_FILE_OPEN,        /* open failed otherwise (errnum) */
  RCL_FILE_DIRECTORY,   /* refused: a directory (RCL_FILE_NO_DIRECTORY) */
  RCL_FILE_DEVICE,      /* refused: a device (RCL_FILE_NO_DEVICE) */
  RCL_FILE_NOT_REGULAR, /* refused: not a regular file (RCL_FILE_REGULAR) */
  RCL_FILE_READ,        /* read failed (errnum) */
  RCL_FILE_TOO_LARGE    /* larger than memory can be asked for */
} rcl_file_problem;

typedef struct {
  rcl_file_problem problem;
  int errnum; /* errno of a failed open or read, else 0 */
} rcl_file_error;

/* Reads the whole file at path into *data (NUL-terminated, owned by the caller: rcl__free) and *size.
 * Sizes come from what the file holds, never from what it claims (a file may grow or be a pipe).
 * Returns 0; RCL_ERR_OUT_OF_MEMORY (message set); or RCL_ERR_IO with *err filled and NO message set:
 * the caller words it (rcl__file_fail or its own wording). */
RCL_INTERNAL int rcl__file_read(char **data, size_t *size, const char *path, unsigned flags, rcl_file_error *err);
/* The library's common wording of a failed read: "<path> does not exist" (RCL_ERR_NOT_FOUND), "cannot
 * open <path>: <reason>", "<path> is not a regular file", "<path> is a device, not a file", "cannot read
 * <path>: <reason>" (RCL_ERR_IO). */
RCL_INTERNAL int rcl__file_fail(const rcl_file_error *err, const char *path);

#endif
