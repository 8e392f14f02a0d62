/* Host grids (include/reprocl/grid.h): allocation, generators, and reading and writing raw binary, PGM and
 * PNG (libpng) files. Readers check every size against the file before allocating and name the file and
 * the problem in every error; they never print (libpng's messages are captured into the error). */
#include <errno.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "stencil/stencil_internal.h"

/* ---- grids ------------------------------------------------------------------------------------------ */

int rcl_grid_alloc(rcl_grid *g, rcl_dtype dtype, size_t width, size_t height) {
  if (!g) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_grid_alloc: NULL grid");
  memset(g, 0, sizeof *g);
  size_t es = rcl_dtype_size(dtype);
  if (!es) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_grid_alloc: unknown dtype %d", (int)dtype);
  int rc = rcl__grid_check_dims(width, height, es, "grid");
  if (rc) return rc;
  g->data = rcl__calloc(width * height, es);
  if (!g->data) return RCL_ERR_OUT_OF_MEMORY;
  g->dtype = dtype;
  g->width = width;
  g->height = height;
  return 0;
}

void rcl_grid_free(rcl_grid *g) {
  if (!g) return;
  rcl__free(g->data);
  memset(g, 0, sizeof *g);
}

size_t rcl_grid_count(const rcl_grid *g) { return g ? g->width * g->height : 0; }

static int check_grid(const rcl_grid *g, const char *fn) {
  if (!g || !g->data) return rcl__fail(RCL_ERR_INVALID_ARG, "%s: NULL or unallocated grid", fn);
  size_t es = rcl_dtype_size(g->dtype);
  if (!es) return rcl__fail(RCL_ERR_INVALID_ARG, "%s: grid has unknown dtype %d", fn, (int)g->dtype);
  return rcl__grid_check_dims(g->width, g->height, es, fn);
}

static double get(const rcl_grid *g, size_t i) {
  if (g->dtype == RCL_F32) return ((const float *)g->data)[i];
  return ((const double *)g->data)[i];
}

static void put(rcl_grid *g, size_t i, double v) {
  rcl__to_dtype((char *)g->data + i * rcl_dtype_size(g->dtype), v, g->dtype);
}

/* ---- generators ------------------------------------------------------------------------------------ */

static const char *const init_names[] = {"shoc", "random", "point", "zero"};

const char *rcl_grid_init_name(rcl_grid_init k) {
  return (unsigned)k <= RCL_GRID_INIT_ZERO ? init_names[k] : "unknown";
}

int rcl_grid_init_parse(rcl_grid_init *out, const char *name) {
  if (!out || !name) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_grid_init_parse: NULL argument");
  for (int i = 0; i <= RCL_GRID_INIT_ZERO; i++)
    if (!strcasecmp(name, init_names[i])) {
      *out = (rcl_grid_init)i;
      return 0;
    }
  return rcl__fail(RCL_ERR_INVALID_ARG, "unknown grid initialisation \"%s\" (expected shoc, random, point or zero)",
                   name);
}

int rcl_grid_generate(rcl_grid *g, rcl_grid_init kind, uint64_t seed) {
  int rc = check_grid(g, "rcl_grid_generate");
  if (rc) return rc;
  size_t n = g->width * g->height;
  switch (kind) {
  case RCL_GRID_INIT_SHOC: /* the product is exact in binary64 below 2^53, then rounded once */
    for (size_t y = 0; y < g->height; y++)
      for (size_t x = 0; x < g->width; x++) put(g, y * g->width + x, (double)y * (double)x);
    return 0;
  case RCL_GRID_INIT_RANDOM:
    return rcl_generate(g->data, g->dtype, n, RCL_GEN_UNIFORM, seed);
  case RCL_GRID_INIT_POINT:
  case RCL_GRID_INIT_ZERO:
    memset(g->data, 0, n * rcl_dtype_size(g->dtype));
    if (kind == RCL_GRID_INIT_POINT) put(g, (g->height / 2) * g->width + g->width / 2, 1.0);
    return 0;
  }
  return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_grid_generate: unknown initialisation %d", (int)kind);
}

/* ---- files ------------------------------------------------------------------------------------------ */

const char *rcl_grid_format_name(rcl_grid_format f) {
  static const char *const names[] = {"auto", "raw", "pgm", "png"};
  return (unsigned)f <= RCL_GRID_FORMAT_PNG ? names[f] : "unknown";
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !strcasecmp(s + n - m, suffix);
}

/* An open input file with its size, for checks before allocating. */
typedef struct {
  FILE *f;
  const char *path;
  size_t size;
} infile;

static int open_in(infile *in, const char *path) {
  in->path = path;
  in->f = fopen(path, "rb");
  if (!in->f) return rcl__fail(RCL_ERR_IO, "cannot open %s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(in->f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(in->f);
    in->f = NULL;
    return rcl__fail(RCL_ERR_IO, "%s is not a regular file", path);
  }
  in->size = (size_t)st.st_size;
  return 0;
}

static int read_exact(infile *in, void *buf, size_t n, const char *what) {
  if (fread(buf, 1, n, in->f) != n)
    return rcl__fail(ferror(in->f) ? RCL_ERR_IO : RCL_ERR_PARSE, "%s: truncated: the file ends inside the %s", in->path,
                     what);
  return 0;
}

static int alloc_for(rcl_grid *out, rcl_dtype dtype, size_t w, size_t h, const char *path) {
  int rc = rcl_grid_alloc(out, dtype, w, h);
  if (rc) rcl__error_append(" (reading %s)", path);
  return rc;
}

/* Raw: exactly width*height little-endian values. */
static int read_raw(rcl_grid *out, infile *in, rcl_dtype dtype, size_t w, size_t h) {
  if (w == 0 || h == 0)
    return rcl__fail(RCL_ERR_INVALID_ARG, "%s: a raw grid file has no header: give its width and height", in->path);
  size_t es = rcl_dtype_size(dtype), need;
  int rc = rcl__grid_check_dims(w, h, es, in->path);
  if (rc) return rc;
  need = w * h * es;
  if (in->size < need)
    return rcl__fail(RCL_ERR_PARSE, "%s: truncated: %zu bytes, but a %zux%zu %s grid needs %zu", in->path, in->size, w,
                     h, rcl_dtype_name(dtype), need);
  if (in->size > need)
    return rcl__fail(RCL_ERR_PARSE, "%s: %zu bytes, more than the %zu of a %zux%zu %s grid (wrong size or dtype?)",
                     in->path, in->size, need, w, h, rcl_dtype_name(dtype));
  if ((rc = alloc_for(out, dtype, w, h, in->path))) return rc;
  unsigned char *b = out->data;
  if ((rc = read_exact(in, b, need, "grid values"))) {
    rcl_grid_free(out);
    return rc;
  }
  /* Little-endian on disk: decode explicitly so a big-endian host reads the same values. */
  for (size_t i = 0; i < w * h; i++) {
    unsigned char *p = b + i * es;
    uint64_t v = 0;
    for (size_t k = es; k-- > 0;) v = (v << 8) | p[k];
    if (es == 4) {
      uint32_t u = (uint32_t)v;
      memcpy(p, &u, 4);
    } else {
      memcpy(p, &v, 8);
    }
  }
  return 0;
}

/* ---- PGM ------------------------------------------------------------------------------------------- */

typedef struct {
  infile *in;
  size_t line;
  int c; /* lookahead */
} pnm_lexer;

static int lex_get(pnm_lexer *l) {
  l->c = fgetc(l->in->f);
  return l->c;
}

/* Skips whitespace and comments ('#' to the end of the line). */
static void lex_skip(pnm_lexer *l) {
  for (;;) {
    if (l->c == '#') {
      while (l->c != '\n' && l->c != EOF) lex_get(l);
    } else if (l->c == ' ' || l->c == '\t' || l->c == '\r' || l->c == '\n' || l->c == '\v' || l->c == '\f') {
      if (l->c == '\n') l->line++;
      lex_get(l);
    } else {
      return;
    }
  }
}

/* A decimal number at most max; `what` names it in errors. */
static int lex_number(pnm_lexer *l, size_t *out, size_t max, const char *what) {
  lex_skip(l);
  if (l->c == EOF)
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: truncated: the file ends before the %s", l->in->path, l->line, what);
  if (l->c < '0' || l->c > '9')
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: expected the %s (a decimal number), found '%c'", l->in->path, l->line,
                     what, l->c >= 32 && l->c < 127 ? l->c : '?');
  size_t v = 0;
  int over = 0;
  while (l->c >= '0' && l->c <= '9') {
    if (v > (SIZE_MAX - 9) / 10)
      over = 1;
    else
      v = v * 10 + (size_t)(l->c - '0');
    lex_get(l);
  }
  if (over || v > max)
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: the %s is %s%zu, above the limit %zu", l->in->path, l->line, what,
                     over ? "more than " : "", v, max);
  if (l->c != EOF && l->c != '#' &&
      !(l->c == ' ' || l->c == '\t' || l->c == '\r' || l->c == '\n' || l->c == '\v' || l->c == '\f'))
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: the %s is followed by '%c' instead of whitespace", l->in->path, l->line,
                     what, l->c >= 32 && l->c < 127 ? l->c : '?');
  *out = v;
  return 0;
}

/* The signature: P2 or P5, anything else named for what it is. */
static int pgm_magic(unsigned char magic[2], infile *in) {
  int rc = read_exact(in, magic, 2, "PGM signature");
  if (rc) return rc;
  if (magic[0] != 'P' || (magic[1] != '2' && magic[1] != '5')) {
    const char *what = magic[1] == '3' || magic[1] == '6'   ? "a colour PPM image"
                       : magic[1] == '1' || magic[1] == '4' ? "a PBM bitmap"
                       : magic[1] == '7'                    ? "a PAM image"
                                                            : "not a PGM file";
    return rcl__fail(RCL_ERR_PARSE, "%s: %s (P%c), not a greyscale PGM (P2 or P5)", in->path, what,
                     magic[1] >= 32 && magic[1] < 127 ? magic[1] : '?');
  }
  return 0;
}

/* Width, height and maximum value: not empty, the requested size (where one is), within the grid limits. */
static int pgm_header(pnm_lexer *l, size_t *w, size_t *h, size_t *maxval, rcl_dtype dtype, size_t ww, size_t wh) {
  infile *in = l->in;
  int rc;
  if ((rc = lex_number(l, w, RCL_GRID_MAX_DIM, "width")) || (rc = lex_number(l, h, RCL_GRID_MAX_DIM, "height")) ||
      (rc = lex_number(l, maxval, 65535, "maximum value")))
    return rc;
  if (*w == 0 || *h == 0)
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: image size %zux%zu is empty", in->path, l->line, *w, *h);
  if (*maxval == 0) return rcl__fail(RCL_ERR_PARSE, "%s:%zu: maximum value 0 (must be 1..65535)", in->path, l->line);
  if ((ww && ww != *w) || (wh && wh != *h))
    return rcl__fail(RCL_ERR_INVALID_ARG, "%s: the image is %zux%zu, not the %zux%zu requested", in->path, *w, *h, ww,
                     wh);
  size_t es = rcl_dtype_size(dtype);
  return rcl__grid_check_dims(*w, *h, es, in->path);
}

/* P5: exactly the bytes of the samples (one or two per sample, big-endian), each at most maxval. */
static int pgm_binary(rcl_grid *out, infile *in, rcl_dtype dtype, size_t w, size_t h, size_t maxval, size_t left) {
  size_t n = w * h, bps = maxval > 255 ? 2 : 1, need;
  int rc;
  if (rcl__mul_size(&need, n, bps, in->path)) return RCL_ERR_OVERFLOW;
  if (left < need)
    return rcl__fail(RCL_ERR_PARSE,
                     "%s: truncated: %zu bytes of samples, a %zux%zu image with maximum value %zu needs %zu", in->path,
                     left, w, h, maxval, need);
  if (left > need)
    return rcl__fail(RCL_ERR_PARSE, "%s: %zu bytes of trailing data after the %zux%zu image", in->path, left - need, w,
                     h);
  if ((rc = alloc_for(out, dtype, w, h, in->path))) return rc;
  unsigned char row[4096];
  for (size_t i = 0; i < n && !rc;) {
    size_t chunk = (n - i) * bps < sizeof row ? (n - i) : sizeof row / bps;
    rc = read_exact(in, row, chunk * bps, "samples");
    for (size_t k = 0; k < chunk && !rc; k++, i++) {
      size_t v = bps == 2 ? ((size_t)row[2 * k] << 8) | row[2 * k + 1] : row[k];
      if (v > maxval)
        rc = rcl__fail(RCL_ERR_PARSE, "%s: sample %zu (x=%zu, y=%zu) is %zu, above the maximum value %zu", in->path, i,
                       i % w, i / w, v, maxval);
      else
        put(out, i, (double)v / (double)maxval);
    }
  }
  if (rc) rcl_grid_free(out);
  return rc;
}

/* P2: w*h decimal samples, each at most maxval, then nothing but whitespace and comments. */
static int pgm_ascii(rcl_grid *out, pnm_lexer *l, rcl_dtype dtype, size_t w, size_t h, size_t maxval, size_t left) {
  infile *in = l->in;
  size_t n = w * h;
  int rc;
  /* P2: every value takes at least a digit and a separator. */
  if (left + 1 < 2 * n)
    return rcl__fail(RCL_ERR_PARSE, "%s: truncated: %zu bytes cannot hold the %zu values of a %zux%zu image", in->path,
                     left, n, w, h);
  if ((rc = alloc_for(out, dtype, w, h, in->path))) return rc;
  char what[64];
  for (size_t i = 0; i < n && !rc; i++) {
    size_t v;
    snprintf(what, sizeof what, "sample %zu of %zu", i + 1, n);
    rc = lex_number(l, &v, maxval, what);
    if (!rc) put(out, i, (double)v / (double)maxval);
  }
  if (!rc) {
    lex_skip(l);
    if (l->c != EOF) rc = rcl__fail(RCL_ERR_PARSE, "%s:%zu: trailing data after the %zu values", in->path, l->line, n);
  }
  if (rc) rcl_grid_free(out);
  return rc;
}

static int read_pgm(rcl_grid *out, infile *in, rcl_dtype dtype, size_t ww, size_t wh) {
  unsigned char magic[2];
  int rc = pgm_magic(magic, in);
  if (rc) return rc;
  pnm_lexer l = {in, 1, 0};
  lex_get(&l);
  size_t w, h, maxval;
  if ((rc = pgm_header(&l, &w, &h, &maxval, dtype, ww, wh))) return rc;
  if (magic[1] == '5' && !(l.c == ' ' || l.c == '\t' || l.c == '\r' || l.c == '\n' || l.c == '\v' || l.c == '\f'))
    return rcl__fail(RCL_ERR_PARSE,
                     "%s:%zu: the maximum value must be followed by one whitespace character, then the "
                     "samples",
                     in->path, l.line);
  long pos = ftell(in->f); /* one past the single whitespace after maxval (already consumed as lookahead) */
  size_t left = pos < 0 || (size_t)pos > in->size ? 0 : in->size - (size_t)pos;
  if (magic[1] == '5') return pgm_binary(out, in, dtype, w, h, maxval, left);
  return pgm_ascii(out, &l, dtype, w, h, maxval, left);
}

/* ---- PNG ------------------------------------------------------------------------------------------- */

/* libpng reports errors through a callback that must not return: keep the message and longjmp back. */
typedef struct {
  jmp_buf jmp;
  char msg[256];
} png_errctx;

static void png_on_error(png_structp png, png_const_charp msg) {
  png_errctx *e = png_get_error_ptr(png);
  snprintf(e->msg, sizeof e->msg, "%s", msg);
  longjmp(e->jmp, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg) { /* the library never prints */
  (void)png;
  (void)msg;
}

static const char *png_colour_name(int ct) {
  switch (ct) {
  case PNG_COLOR_TYPE_GRAY:
    return "greyscale";
  case PNG_COLOR_TYPE_GRAY_ALPHA:
    return "greyscale with alpha";
  case PNG_COLOR_TYPE_PALETTE:
    return "palette colour";
  case PNG_COLOR_TYPE_RGB:
    return "RGB colour";
  case PNG_COLOR_TYPE_RGB_ALPHA:
    return "RGBA colour";
  default:
    return "unknown";
  }
}

/* Deflate expands data at most 1032-fold: an image whose raw rows exceed that multiple of the file cannot
 * be in it, so the reader refuses before allocating (a "decompression bomb" or a corrupt header). */
#define PNG_MAX_RATIO 1032u

/* The image's shape as read from its header. */
typedef struct {
  png_uint_32 w, h;
  int depth;
  size_t bps, rowbytes, total;
} png_shape;

/* The header: greyscale only, the requested size (where one is), within the grid limits and what the file
 * can hold; libpng's transformations to 8 or 16 bits per sample, one pass. libpng may longjmp from here. */
static int png_header(png_shape *d, png_structp png, png_infop info, infile *in, rcl_dtype dtype, size_t ww,
                      size_t wh) {
  int ct, interlace, rc;
  png_read_info(png, info);
  png_get_IHDR(png, info, &d->w, &d->h, &d->depth, &ct, &interlace, NULL, NULL);
  png_uint_32 w = d->w, h = d->h;
  if (ct != PNG_COLOR_TYPE_GRAY)
    return rcl__fail(RCL_ERR_PARSE, "%s: the PNG is %s, not greyscale: convert it to greyscale (colour type 0) first",
                     in->path, png_colour_name(ct));
  if ((ww && ww != w) || (wh && wh != h))
    return rcl__fail(RCL_ERR_INVALID_ARG, "%s: the image is %ux%u, not the %zux%zu requested", in->path, (unsigned)w,
                     (unsigned)h, ww, wh);
  size_t es = rcl_dtype_size(dtype);
  d->bps = d->depth == 16 ? 2 : 1;
  if ((rc = rcl__grid_check_dims(w, h, es, in->path))) return rc;
  if (rcl__mul_size(&d->rowbytes, w, d->bps, in->path) || rcl__mul_size(&d->total, d->rowbytes, h, in->path))
    return RCL_ERR_OVERFLOW;
  if (d->total / PNG_MAX_RATIO > in->size)
    return rcl__fail(RCL_ERR_PARSE,
                     "%s: declares %ux%u samples, more than its %zu bytes can hold compressed: corrupt or "
                     "truncated",
                     in->path, (unsigned)w, (unsigned)h, in->size);
  if (d->depth < 8) png_set_expand_gray_1_2_4_to_8(png); /* replicates bits: v * 255 / (2^depth - 1) exactly */
  if (interlace != PNG_INTERLACE_NONE) png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != d->rowbytes)
    return rcl__fail(RCL_ERR_INTERNAL, "%s: libpng rows of %zu bytes, expected %zu", in->path,
                     (size_t)png_get_rowbytes(png, info), d->rowbytes);
  return 0;
}

/* The samples: the rows read into *raw (*rows pointing into it; read_png frees both), then scaled to [0, 1]
 * into out. libpng may longjmp from here. */
static int png_samples(rcl_grid *out, unsigned char *volatile *raw, png_bytep *volatile *rows, png_structp png,
                       infile *in, rcl_dtype dtype, const png_shape *d) {
  *raw = rcl__malloc(d->total);
  *rows = *raw ? rcl__malloc(d->h * sizeof **rows) : NULL;
  if (!*rows) return RCL_ERR_OUT_OF_MEMORY;
  for (png_uint_32 y = 0; y < d->h; y++) (*rows)[y] = *raw + y * d->rowbytes;
  png_read_image(png, *rows);
  png_read_end(png, NULL);
  int rc = alloc_for(out, dtype, d->w, d->h, in->path);
  if (rc) return rc;
  double maxval = d->depth == 16 ? 65535.0 : 255.0;
  const unsigned char *r = *raw;
  for (size_t i = 0; i < (size_t)d->w * d->h; i++) {
    unsigned v = d->bps == 2 ? ((unsigned)r[2 * i] << 8) | r[2 * i + 1] : r[i];
    put(out, i, (double)v / maxval);
  }
  return 0;
}

static int read_png(rcl_grid *out, infile *in, rcl_dtype dtype, size_t ww, size_t wh) {
  png_errctx e;
  e.msg[0] = '\0';
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &e, png_on_error, png_on_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!info) {
    png_destroy_read_struct(&png, NULL, NULL);
    return rcl__fail(RCL_ERR_OUT_OF_MEMORY, "%s: cannot allocate libpng's reader", in->path);
  }
  /* Everything setjmp must see after a longjmp lives in volatile locals. */
  unsigned char *volatile raw = NULL;
  png_bytep *volatile rows = NULL;
  volatile int rc = 0;
  if (setjmp(e.jmp)) {
    rc = rcl__fail(RCL_ERR_PARSE, "%s: truncated or corrupt PNG (libpng: %s)", in->path, e.msg);
    goto done;
  }
  png_init_io(png, in->f);
  png_set_user_limits(png, (png_uint_32)RCL_GRID_MAX_DIM, (png_uint_32)RCL_GRID_MAX_DIM);
  png_shape d;
  rc = png_header(&d, png, info, in, dtype, ww, wh);
  if (!rc) rc = png_samples(out, &raw, &rows, png, in, dtype, &d);
done:
  png_destroy_read_struct(&png, &info, NULL);
  rcl__free(rows);
  rcl__free(raw);
  return rc;
}

int rcl_grid_read(rcl_grid *out, const char *path, rcl_grid_format format, rcl_dtype dtype, size_t width,
                  size_t height) {
  if (!out || !path) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_grid_read: NULL grid or path");
  memset(out, 0, sizeof *out);
  if (!rcl_dtype_size(dtype)) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_grid_read: unknown dtype %d", (int)dtype);
  if ((unsigned)format > RCL_GRID_FORMAT_PNG)
    return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_grid_read: unknown format %d", (int)format);
  infile in;
  int rc = open_in(&in, path);
  if (rc) return rc;
  size_t es = rcl_dtype_size(dtype);
  if (format == RCL_GRID_FORMAT_AUTO && width && height && width <= RCL_GRID_MAX_DIM && height <= RCL_GRID_MAX_DIM &&
      in.size / es / width == height && in.size == width * height * es) {
    format = RCL_GRID_FORMAT_RAW; /* exactly a raw grid of the given size, whatever its first bytes are */
  } else if (format == RCL_GRID_FORMAT_AUTO) {
    unsigned char sig[8] = {0};
    size_t got = fread(sig, 1, sizeof sig, in.f);
    if (got == 8 && png_sig_cmp(sig, 0, 8) == 0)
      format = RCL_GRID_FORMAT_PNG;
    else if (got >= 2 && sig[0] == 'P' && sig[1] >= '1' && sig[1] <= '7')
      format = RCL_GRID_FORMAT_PGM;
    else if (got >= 4 && !memcmp(sig, "\x89PNG", 4))
      format = RCL_GRID_FORMAT_PNG; /* a damaged signature */
    else
      format = RCL_GRID_FORMAT_RAW;
    rewind(in.f);
  }
  if (in.size == 0)
    rc = rcl__fail(RCL_ERR_PARSE, "%s: the file is empty", path);
  else if (format == RCL_GRID_FORMAT_RAW)
    rc = read_raw(out, &in, dtype, width, height);
  else if (format == RCL_GRID_FORMAT_PGM)
    rc = read_pgm(out, &in, dtype, width, height);
  else
    rc = read_png(out, &in, dtype, width, height);
  fclose(in.f);
  return rc;
}

/* ---- writing ---------------------------------------------------------------------------------------- */

static int close_out(FILE *f, const char *path, int rc) {
  int bad = ferror(f);
  if (fclose(f) != 0) bad = 1;
  if (!rc && bad) rc = rcl__fail(RCL_ERR_IO, "cannot write %s: %s", path, strerror(errno));
  return rc;
}

int rcl_grid_write_raw(const rcl_grid *g, const char *path) {
  int rc = check_grid(g, "rcl_grid_write_raw");
  if (rc) return rc;
  if (!path) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_grid_write_raw: NULL path");
  FILE *f = fopen(path, "wb");
  if (!f) return rcl__fail(RCL_ERR_IO, "cannot open %s for writing: %s", path, strerror(errno));
  size_t es = rcl_dtype_size(g->dtype), n = g->width * g->height;
  unsigned char buf[4096];
  for (size_t i = 0; i < n;) {
    size_t chunk = (n - i) < sizeof buf / es ? (n - i) : sizeof buf / es;
    for (size_t k = 0; k < chunk; k++, i++) { /* little-endian on disk, whatever the host */
      uint64_t v = 0;
      if (es == 4) {
        uint32_t u;
        memcpy(&u, (const char *)g->data + 4 * i, 4);
        v = u;
      } else {
        memcpy(&v, (const char *)g->data + 8 * i, 8);
      }
      for (size_t b = 0; b < es; b++) buf[k * es + b] = (unsigned char)(v >> (8 * b));
    }
    if (fwrite(buf, es, chunk, f) != chunk) break;
  }
  return close_out(f, path, 0);
}

static int image_format(rcl_grid_format *fmt, const char *path, const char *fn) {
  if (*fmt == RCL_GRID_FORMAT_AUTO) {
    if (ends_with(path, ".png"))
      *fmt = RCL_GRID_FORMAT_PNG;
    else if (ends_with(path, ".pgm"))
      *fmt = RCL_GRID_FORMAT_PGM;
    else
      return rcl__fail(RCL_ERR_INVALID_ARG, "%s: %s: unknown image type (name it .png or .pgm)", fn, path);
  }
  if (*fmt != RCL_GRID_FORMAT_PNG && *fmt != RCL_GRID_FORMAT_PGM)
    return rcl__fail(RCL_ERR_INVALID_ARG, "%s: %s: format %s is not an image format (png or pgm)", fn, path,
                     rcl_grid_format_name(*fmt));
  return 0;
}

/* Writes channels (1: grey, 3: RGB) 8-bit samples of w x h pixels. */
static int write_pixels(const char *path, rcl_grid_format fmt, const unsigned char *px, size_t w, size_t h,
                        int channels) {
  FILE *f = fopen(path, "wb");
  if (!f) return rcl__fail(RCL_ERR_IO, "cannot open %s for writing: %s", path, strerror(errno));
  if (fmt == RCL_GRID_FORMAT_PGM) {
    fprintf(f, "P5\n%zu %zu\n255\n", w, h); /* callers pass one channel for PGM */
    fwrite(px, (size_t)channels, w * h, f);
    return close_out(f, path, 0);
  }
  png_errctx e;
  e.msg[0] = '\0';
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &e, png_on_error, png_on_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  volatile int rc = 0;
  if (!info) {
    png_destroy_write_struct(&png, NULL);
    return close_out(f, path, rcl__fail(RCL_ERR_OUT_OF_MEMORY, "%s: cannot allocate libpng's writer", path));
  }
  if (setjmp(e.jmp)) {
    rc = rcl__fail(RCL_ERR_IO, "cannot write %s: %s", path, e.msg);
  } else {
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (size_t y = 0; y < h; y++) png_write_row(png, px + y * w * (size_t)channels);
    png_write_end(png, NULL);
  }
  png_destroy_write_struct(&png, &info);
  return close_out(f, path, rc);
}

/* 0..255 of v on [lo, hi] (NaN: 0). */
static unsigned char shade(double v, double lo, double hi) {
  if (isnan(v)) return 0;
  double t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
  if (!(t > 0)) return 0;
  if (t >= 1) return 255;
  return (unsigned char)lround(t * 255.0);
}

static void finite_range(const rcl_grid *g, double *lo, double *hi) {
  *lo = INFINITY;
  *hi = -INFINITY;
  for (size_t i = 0; i < g->width * g->height; i++) {
    double v = get(g, i);
    if (isfinite(v)) {
      if (v < *lo) *lo = v;
      if (v > *hi) *hi = v;
    }
  }
  if (*lo > *hi) *lo = *hi = 0;
}

int rcl_grid_write_image(const rcl_grid *g, const char *path, rcl_grid_format format, double lo, double hi) {
  int rc = check_grid(g, "rcl_grid_write_image");
  if (!rc && !path) rc = rcl__fail(RCL_ERR_INVALID_ARG, "rcl_grid_write_image: NULL path");
  if (!rc) rc = image_format(&format, path, "rcl_grid_write_image");
  if (rc) return rc;
  if (g->width > 0x7fffffff || g->height > 0x7fffffff)
    return rcl__fail(RCL_ERR_INVALID_ARG, "%s: %zux%zu is too large for an image", path, g->width, g->height);
  if (lo == hi) finite_range(g, &lo, &hi);
  unsigned char *px = rcl__malloc(g->width * g->height);
  if (!px) return RCL_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < g->width * g->height; i++) px[i] = shade(get(g, i), lo, hi);
  rc = write_pixels(path, format, px, g->width, g->height, 1);
  rcl__free(px);
  return rc;
}

int rcl_grid_write_diff_image(const char *path, rcl_grid_format format, const rcl_grid *a, const rcl_grid *b,
                              size_t *differing) {
  int rc = check_grid(a, "rcl_grid_write_diff_image");
  if (!rc) rc = check_grid(b, "rcl_grid_write_diff_image");
  if (!rc && !path) rc = rcl__fail(RCL_ERR_INVALID_ARG, "rcl_grid_write_diff_image: NULL path");
  if (!rc && (a->width != b->width || a->height != b->height || a->dtype != b->dtype))
    rc = rcl__fail(RCL_ERR_INVALID_ARG, "rcl_grid_write_diff_image: grids differ in shape (%zux%zu %s vs %zux%zu %s)",
                   a->width, a->height, rcl_dtype_name(a->dtype), b->width, b->height, rcl_dtype_name(b->dtype));
  if (!rc) rc = image_format(&format, path, "rcl_grid_write_diff_image");
  if (rc) return rc;
  size_t n = a->width * a->height, es = rcl_dtype_size(a->dtype), diff = 0;
  int channels = format == RCL_GRID_FORMAT_PNG ? 3 : 1;
  unsigned char *px = rcl__malloc(n * (size_t)channels);
  if (!px) return RCL_ERR_OUT_OF_MEMORY;
  double lo, hi;
  finite_range(a, &lo, &hi);
  for (size_t i = 0; i < n; i++) {
    int d = memcmp((const char *)a->data + i * es, (const char *)b->data + i * es, es) != 0;
    unsigned char grey = (unsigned char)(shade(get(a, i), lo, hi) / 2); /* dimmed: highlights stand out */
    diff += (size_t)d;
    if (channels == 3) {
      px[3 * i] = d ? 255 : grey;
      px[3 * i + 1] = d ? 0 : grey;
      px[3 * i + 2] = d ? 0 : grey;
    } else {
      px[i] = d ? 255 : grey;
    }
  }
  rc = write_pixels(path, format, px, a->width, a->height, channels);
  rcl__free(px);
  if (!rc && differing) *differing = diff;
  return rc;
}
