/* reprocl: 2D grids on the host — generators, and reading and writing raw binary, PGM and PNG files, so
 * that stencil inputs can come from images and results can be looked at (including a difference image
 * that highlights every point where two results differ). */
#ifndef REPROCL_GRID_H
#define REPROCL_GRID_H
#include "reprocl/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* width x height values of dtype, row by row without padding (point (x, y) is data[y * width + x]). */
typedef struct {
  rcl_dtype dtype;
  size_t width, height;
  void *data; /* owned: rcl_grid_free releases it */
} rcl_grid;

/* Largest width or height accepted anywhere (2^30): keeps coordinates and their halos in 32-bit ints. */
#define RCL_GRID_MAX_DIM ((size_t)1 << 30)

/* Allocates a zeroed grid. RCL_ERR_INVALID_ARG for a zero or too large size, RCL_ERR_OVERFLOW when
 * width * height * element size does not fit in size_t. */
RCL_API int rcl_grid_alloc(rcl_grid *g, rcl_dtype dtype, size_t width, size_t height);
/* Frees g's data and zeroes it; a zeroed or already freed grid is fine. */
RCL_API void rcl_grid_free(rcl_grid *g);
RCL_API size_t rcl_grid_count(const rcl_grid *g); /* width * height */

/* Generated contents (same bytes on every machine for the same seed). */
typedef enum {
  RCL_GRID_INIT_SHOC = 0,   /* SHOC Stencil2D's initialisation: value(x, y) = y * x, rounded to the dtype */
  RCL_GRID_INIT_RANDOM = 1, /* rcl_generate(RCL_GEN_UNIFORM, seed): uniform in [-1, 1) in row-major order */
  RCL_GRID_INIT_POINT = 2,  /* a point source: 1 at (width/2, height/2), 0 elsewhere */
  RCL_GRID_INIT_ZERO = 3
} rcl_grid_init;
RCL_API const char *rcl_grid_init_name(rcl_grid_init k); /* "shoc", "random", "point", "zero" */
RCL_API int rcl_grid_init_parse(rcl_grid_init *out, const char *name);
/* Fills an allocated grid. */
RCL_API int rcl_grid_generate(rcl_grid *g, rcl_grid_init kind, uint64_t seed);

typedef enum {
  RCL_GRID_FORMAT_AUTO = 0, /* reading: raw if width and height are given and the file holds exactly that
                               many values, else by content (PNG signature, PGM "P1".."P7"), else raw;
                               writing: by extension (.png, .pgm), else raw */
  RCL_GRID_FORMAT_RAW = 1,  /* little-endian f32 or f64 values, row by row, nothing else */
  RCL_GRID_FORMAT_PGM = 2,  /* Netpbm greyscale: P5 (binary, 8 or 16 bits) and P2 (ASCII) */
  RCL_GRID_FORMAT_PNG = 3   /* PNG greyscale (colour type 0) of 1 to 16 bits, via libpng */
} rcl_grid_format;
RCL_API const char *rcl_grid_format_name(rcl_grid_format f); /* "auto", "raw", "pgm", "png" */

/* Reads a grid into *out (overwritten, not freed: free a grid it held first; zeroed on failure). Images (greyscale only) give value = sample / maxval in [0, 1], computed in binary64 and
 * rounded once to dtype. Raw files need width and height (an image's come from its header; nonzero
 * values given for an image must match). Every failure names the file and the problem: RCL_ERR_IO (cannot
 * open or read), RCL_ERR_PARSE (truncated, corrupt, not greyscale, sizes zero or too large, trailing
 * data), RCL_ERR_OVERFLOW (sizes whose product overflows). No allocation is made for a size the file
 * cannot hold. */
RCL_API int rcl_grid_read(rcl_grid *out, const char *path, rcl_grid_format format, rcl_dtype dtype, size_t width,
                          size_t height);

/* Writes the values as raw little-endian binary. */
RCL_API int rcl_grid_write_raw(const rcl_grid *g, const char *path);

/* Writes an 8-bit greyscale image (PGM P5 or PNG; AUTO: by extension, refusing others) so a person can look
 * at the grid: v maps linearly from [lo, hi] to 0..255 (rounded, clamped); lo == hi picks the range of the
 * finite values; NaN is written as 0. */
RCL_API int rcl_grid_write_image(const rcl_grid *g, const char *path, rcl_grid_format format, double lo, double hi);

/* Writes a difference image of two grids of the same size and dtype: every point whose bits differ is
 * highlighted (PNG: pure red on a dimmed greyscale rendering of a; PGM: 255 on a rendering of a dimmed to
 * 0..127). *differing (optional) receives the number of differing points. */
RCL_API int rcl_grid_write_diff_image(const char *path, rcl_grid_format format, const rcl_grid *a, const rcl_grid *b,
                                      size_t *differing);

#ifdef __cplusplus
}
#endif
#endif
