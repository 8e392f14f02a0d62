/* Host grids: generators, raw / PGM / PNG reading and writing (round trips, bit depths, scikit-image's
 * camera.png), difference images, and a catalogue of malformed files that must each get a clear error
 * naming the file and the problem. PNGs for the catalogue are built here byte by byte (stored deflate
 * blocks, CRC-32 computed below), so each one is exactly the malformation it tests. No device needed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "testlib.h"

static char tmpdir[256];

static const char *tmp_path(const char *name) {
  static char buf[4][512];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
  return buf[k];
}

static void write_bytes(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, n, f), n);
  fclose(f);
}

static size_t read_bytes(const char *path, unsigned char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

/* ---- a minimal PNG writer for crafted files ------------------------------------------------------- */

static uint32_t crc32_png(const unsigned char *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return c ^ 0xffffffffu;
}

static size_t put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
  return 4;
}

static size_t chunk(unsigned char *out, const char *type, const unsigned char *data, size_t n) {
  size_t o = put32(out, (uint32_t)n);
  memcpy(out + o, type, 4);
  if (n) memcpy(out + o + 4, data, n); /* IEND has no data: memcpy from NULL is undefined (UBSan) */
  o += 4 + n;
  return o + put32(out + o, crc32_png(out + 4, n + 4));
}

/* A PNG of the given header whose image data is `raw` (filter bytes included) in one stored deflate block.
 * Returns the file size. */
static size_t make_png(unsigned char *out, uint32_t w, uint32_t h, int depth, int colour, const unsigned char *raw,
                       size_t rawlen) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  unsigned char ihdr[13], z[70000];
  size_t o = 8;
  memcpy(out, sig, 8);
  put32(ihdr, w);
  put32(ihdr + 4, h);
  ihdr[8] = (unsigned char)depth;
  ihdr[9] = (unsigned char)colour;
  ihdr[10] = ihdr[11] = ihdr[12] = 0;
  o += chunk(out + o, "IHDR", ihdr, 13);
  if (colour == 3) { /* a palette of grey entries */
    unsigned char plte[6] = {0, 0, 0, 255, 255, 255};
    o += chunk(out + o, "PLTE", plte, 6);
  }
  ck_assert_uint_lt(rawlen, 65536);
  size_t zn = 0;
  z[zn++] = 0x78;
  z[zn++] = 0x01;
  z[zn++] = 0x01; /* final stored block */
  z[zn++] = (unsigned char)rawlen;
  z[zn++] = (unsigned char)(rawlen >> 8);
  z[zn++] = (unsigned char)~rawlen;
  z[zn++] = (unsigned char)(~rawlen >> 8);
  memcpy(z + zn, raw, rawlen);
  zn += rawlen;
  uint32_t a = 1, b = 0; /* adler-32 */
  for (size_t i = 0; i < rawlen; i++) {
    a = (a + raw[i]) % 65521u;
    b = (b + a) % 65521u;
  }
  zn += put32(z + zn, (b << 16) | a);
  o += chunk(out + o, "IDAT", z, zn);
  o += chunk(out + o, "IEND", NULL, 0);
  return o;
}

/* ---- tests ---------------------------------------------------------------------------------------- */

START_TEST(generators) {
  rcl_grid g;
  rt_ok(rcl_grid_alloc(&g, RCL_F64, 7, 5));
  rt_ok(rcl_grid_generate(&g, RCL_GRID_INIT_SHOC, 0));
  for (size_t y = 0; y < 5; y++)
    for (size_t x = 0; x < 7; x++) ck_assert_double_eq(((double *)g.data)[y * 7 + x], (double)(x * y));
  rt_ok(rcl_grid_generate(&g, RCL_GRID_INIT_POINT, 0));
  for (size_t i = 0; i < 35; i++) ck_assert_double_eq(((double *)g.data)[i], i == 2 * 7 + 3 ? 1.0 : 0.0);
  rt_ok(rcl_grid_generate(&g, RCL_GRID_INIT_RANDOM, 9));
  double want[35];
  rt_ok(rcl_generate(want, RCL_F64, 35, RCL_GEN_UNIFORM, 9));
  rt_assert_bits_eq(g.data, want, 35, RCL_F64, "random grid = rcl_generate");
  rt_ok(rcl_grid_generate(&g, RCL_GRID_INIT_ZERO, 0));
  for (size_t i = 0; i < 35; i++) ck_assert_double_eq(((double *)g.data)[i], 0.0);
  rt_fails(rcl_grid_generate(&g, (rcl_grid_init)9, 0), RCL_ERR_INVALID_ARG, "initialisation");
  rcl_grid_free(&g);
  rcl_grid_free(&g); /* twice is fine */
  rcl_grid_init k;
  rt_ok(rcl_grid_init_parse(&k, "POINT"));
  ck_assert_int_eq(k, RCL_GRID_INIT_POINT);
  rt_fails(rcl_grid_init_parse(&k, "gauss"), RCL_ERR_INVALID_ARG, "\"gauss\"");
  /* SHOC's values beyond 2^24 are rounded once to binary32. */
  rcl_grid f;
  rt_ok(rcl_grid_alloc(&f, RCL_F32, 5000, 5000));
  rt_ok(rcl_grid_generate(&f, RCL_GRID_INIT_SHOC, 0));
  ck_assert_float_eq(((float *)f.data)[4999 * 5000 + 4997], (float)(4999.0 * 4997.0));
  rcl_grid_free(&f);
  rt_fails(rcl_grid_alloc(&f, RCL_F32, 0, 3), RCL_ERR_INVALID_ARG, "empty");
  rt_fails(rcl_grid_alloc(&f, RCL_F32, (size_t)1 << 31, 3), RCL_ERR_INVALID_ARG, "largest");
  rt_fails(rcl_grid_alloc(&f, (rcl_dtype)0, 3, 3), RCL_ERR_INVALID_ARG, "dtype");
}
END_TEST

START_TEST(raw_round_trip) {
  for (int d = 0; d < 2; d++) {
    rcl_dtype dt = d ? RCL_F64 : RCL_F32;
    rcl_grid g, r;
    rt_ok(rcl_grid_alloc(&g, dt, 13, 7));
    rt_fill(g.data, dt, 91, "special", 4);
    memcpy(g.data, "P5 1", 4); /* raw data that starts like a PGM header: the size given decides */
    const char *p = tmp_path("g.raw");
    rt_ok(rcl_grid_write_raw(&g, p));
    unsigned char bytes[1024];
    ck_assert_uint_eq(read_bytes(p, bytes, sizeof bytes), 91 * rcl_dtype_size(dt));
    uint64_t first = 0; /* little-endian on disk */
    for (size_t k = rcl_dtype_size(dt); k-- > 0;) first = (first << 8) | bytes[k];
    uint64_t want = 0;
    memcpy(&want, g.data, rcl_dtype_size(dt));
    ck_assert_uint_eq(first, want);
    rt_ok(rcl_grid_read(&r, p, RCL_GRID_FORMAT_AUTO, dt, 13, 7));
    rt_assert_bits_eq(r.data, g.data, 91, dt, "raw round trip");
    rcl_grid_free(&r);
    rcl_grid_free(&g);
  }
}
END_TEST

/* Values k/255 in [0, 1] survive an 8-bit image exactly: PGM and PNG, f32 and f64. */
START_TEST(image_round_trip) {
  static const char *const names[] = {"r.pgm", "r.png"};
  for (int d = 0; d < 2; d++)
    for (int f = 0; f < 2; f++) {
      rcl_dtype dt = d ? RCL_F64 : RCL_F32;
      rcl_grid g, r;
      rt_ok(rcl_grid_alloc(&g, dt, 19, 11));
      for (size_t i = 0; i < 19 * 11; i++) {
        double v = (double)((i * 37) % 256) / 255.0;
        if (dt == RCL_F32)
          ((float *)g.data)[i] = (float)v;
        else
          ((double *)g.data)[i] = v;
      }
      const char *p = tmp_path(names[f]);
      rt_ok(rcl_grid_write_image(&g, p, RCL_GRID_FORMAT_AUTO, 0.0, 1.0));
      rt_ok(rcl_grid_read(&r, p, RCL_GRID_FORMAT_AUTO, dt, 0, 0));
      ck_assert_uint_eq(r.width, 19);
      ck_assert_uint_eq(r.height, 11);
      rt_assert_bits_eq(r.data, g.data, 19 * 11, dt, "%s round trip", names[f]);
      rcl_grid_free(&r);
      rcl_grid_free(&g);
    }
}
END_TEST

static void check_values(const rcl_grid *g, const double *want, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(((const double *)g->data)[i] == want[i], "%s: value %zu is %.17g, expected %.17g", what, i,
                  ((const double *)g->data)[i], want[i]);
}

/* PGM P2 with comments and P5 with 16-bit samples; PNG greyscale at 1, 2, 4, 8 and 16 bits. */
START_TEST(image_formats) {
  rcl_grid g;
  const char *p = tmp_path("a.pgm");
  const char p2[] = "P2 # ASCII\n# a comment line\n3 2\n# between\n1000\n0 1 2\n999 1000 500\n";
  write_bytes(p, p2, sizeof p2 - 1);
  rt_ok(rcl_grid_read(&g, p, RCL_GRID_FORMAT_AUTO, RCL_F64, 3, 2));
  double want2[] = {0, 0.001, 0.002, 0.999, 1, 0.5};
  check_values(&g, want2, 6, "P2");
  rcl_grid_free(&g);
  const unsigned char p5[] = "P5\n2 2\n65535\n\x00\x00\x00\x01\xff\xff\x80\x00";
  write_bytes(p, p5, sizeof p5 - 1);
  rt_ok(rcl_grid_read(&g, p, RCL_GRID_FORMAT_PGM, RCL_F64, 0, 0));
  double want5[] = {0, 1.0 / 65535, 1, 32768.0 / 65535};
  check_values(&g, want5, 4, "P5 16-bit");
  rcl_grid_free(&g);
  unsigned char png[4096];
  /* 1-bit: 8 pixels in one byte per row, 2 rows */
  unsigned char raw1[] = {0, 0xa5, 0, 0x0f};
  size_t n = make_png(png, 8, 2, 1, 0, raw1, sizeof raw1);
  p = tmp_path("b.png");
  write_bytes(p, png, n);
  rt_ok(rcl_grid_read(&g, p, RCL_GRID_FORMAT_AUTO, RCL_F64, 0, 0));
  double want1[] = {1, 0, 1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1};
  check_values(&g, want1, 16, "PNG 1-bit");
  rcl_grid_free(&g);
  unsigned char raw2[] = {0, 0x1b}; /* 2-bit: 0, 1, 2, 3 */
  write_bytes(p, png, make_png(png, 4, 1, 2, 0, raw2, sizeof raw2));
  rt_ok(rcl_grid_read(&g, p, RCL_GRID_FORMAT_PNG, RCL_F64, 4, 1));
  double wantd2[] = {0, 1.0 / 3, 2.0 / 3, 1};
  check_values(&g, wantd2, 4, "PNG 2-bit");
  rcl_grid_free(&g);
  unsigned char raw4[] = {0, 0x0f, 0x7a}; /* 4-bit: 0, 15, 7, 10 */
  write_bytes(p, png, make_png(png, 4, 1, 4, 0, raw4, sizeof raw4));
  rt_ok(rcl_grid_read(&g, p, RCL_GRID_FORMAT_AUTO, RCL_F64, 0, 0));
  double want4[] = {0, 1, 7.0 / 15, 10.0 / 15};
  check_values(&g, want4, 4, "PNG 4-bit");
  rcl_grid_free(&g);
  unsigned char raw16[] = {0, 0x00, 0x01, 0xff, 0xff, 1 /* sub filter */, 0x12, 0x34, 0x00, 0x01};
  write_bytes(p, png, make_png(png, 2, 2, 16, 0, raw16, sizeof raw16));
  rt_ok(rcl_grid_read(&g, p, RCL_GRID_FORMAT_AUTO, RCL_F64, 0, 0));
  double want16[] = {1.0 / 65535, 1, 0x1234 / 65535.0, 0x1235 / 65535.0};
  check_values(&g, want16, 4, "PNG 16-bit");
  rcl_grid_free(&g);
}
END_TEST

/* scikit-image's camera.png (Debian python3-skimage): 512x512 8-bit greyscale, read with libpng. */
START_TEST(camera_png) {
  const char *path = "/usr/lib/python3/dist-packages/skimage/data/camera.png";
  if (access(path, R_OK) != 0) {
    rt_note("skip camera_png: %s is absent (install python3-skimage to test a real image)", path);
    return;
  }
  static const char *const names[] = {"grid camera.png f32 (sample/255)", "grid camera.png f64 (sample/255)"};
  for (int d = 0; d < 2; d++) {
    rcl_dtype dt = d ? RCL_F64 : RCL_F32;
    rcl_grid g;
    rt_ok(rcl_grid_read(&g, path, RCL_GRID_FORMAT_AUTO, dt, 0, 0));
    ck_assert_uint_eq(g.width, 512);
    ck_assert_uint_eq(g.height, 512);
    rt_golden_ref("stencil.txt", names[d], g.data, 512 * 512 * rcl_dtype_size(dt));
    rcl_grid_free(&g);
    rt_fails(rcl_grid_read(&g, path, RCL_GRID_FORMAT_AUTO, dt, 512, 100), RCL_ERR_INVALID_ARG, "not the 512x100");
    ck_assert_ptr_null(g.data);
  }
}
END_TEST

START_TEST(diff_image) {
  rcl_grid a, b, r;
  rt_ok(rcl_grid_alloc(&a, RCL_F32, 9, 6));
  rt_ok(rcl_grid_alloc(&b, RCL_F32, 9, 6));
  rt_ok(rcl_grid_generate(&a, RCL_GRID_INIT_SHOC, 0));
  memcpy(b.data, a.data, 54 * 4);
  static const size_t at[] = {0, 17, 53};
  for (size_t k = 0; k < 3; k++) { /* one ulp apart, -0 against +0 included */
    uint32_t u;
    memcpy(&u, (float *)b.data + at[k], 4);
    u ^= k == 0 ? 0x80000000u : 1u;
    memcpy((float *)b.data + at[k], &u, 4);
  }
  size_t differing = 0;
  const char *p = tmp_path("d.pgm");
  rt_ok(rcl_grid_write_diff_image(p, RCL_GRID_FORMAT_AUTO, &a, &b, &differing));
  ck_assert_uint_eq(differing, 3);
  rt_ok(rcl_grid_read(&r, p, RCL_GRID_FORMAT_AUTO, RCL_F32, 0, 0));
  for (size_t i = 0; i < 54; i++) {
    int hot = i == 0 || i == 17 || i == 53;
    float v = ((float *)r.data)[i];
    ck_assert_msg(hot ? v == 1.0f : v <= 0.5f, "diff pixel %zu is %g", i, (double)v);
  }
  rcl_grid_free(&r);
  differing = 0;
  p = tmp_path("d.png");
  rt_ok(rcl_grid_write_diff_image(p, RCL_GRID_FORMAT_AUTO, &a, &b, &differing));
  ck_assert_uint_eq(differing, 3);
  /* An RGB image (red highlights): the greyscale reader says so. */
  rt_fails(rcl_grid_read(&r, p, RCL_GRID_FORMAT_AUTO, RCL_F32, 0, 0), RCL_ERR_PARSE, "RGB colour, not greyscale");
  rt_ok(rcl_grid_write_diff_image(p, RCL_GRID_FORMAT_PNG, &a, &a, &differing));
  ck_assert_uint_eq(differing, 0);
  rcl_grid c;
  rt_ok(rcl_grid_alloc(&c, RCL_F32, 9, 5));
  rt_fails(rcl_grid_write_diff_image(p, RCL_GRID_FORMAT_PNG, &a, &c, NULL), RCL_ERR_INVALID_ARG, "shape");
  rcl_grid_free(&a);
  rcl_grid_free(&b);
  rcl_grid_free(&c);
}
END_TEST

typedef struct {
  const char *name;  /* file name under the temporary directory */
  const char *bytes; /* contents (NULL: built by the test) */
  size_t len;
  rcl_grid_format fmt;
  size_t w, h; /* for raw */
  int status;
  const char *needle; /* in the message, besides the file's path */
} bad_file;

#define TXT(s) s, sizeof s - 1

/* Every malformed input gets its own clear error naming the file. */
START_TEST(malformed_inputs) {
  static const bad_file cases[] = {
      {"empty.pgm", TXT(""), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_PARSE, "empty"},
      {"noheader.raw", TXT("\1\2\3\4\5\6\7\10"), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_INVALID_ARG, "width and height"},
      {"short.raw", TXT("\1\2\3\4\5\6\7"), RCL_GRID_FORMAT_RAW, 2, 1, RCL_ERR_PARSE, "truncated: 7 bytes"},
      {"long.raw", TXT("\1\2\3\4\5\6\7\10\11"), RCL_GRID_FORMAT_RAW, 2, 1, RCL_ERR_PARSE, "more than the 8"},
      {"zero.raw", TXT("\1\2\3\4"), RCL_GRID_FORMAT_RAW, 0, 1, RCL_ERR_INVALID_ARG, "width and height"},
      {"huge.raw", TXT("\1\2\3\4"), RCL_GRID_FORMAT_RAW, (size_t)1 << 31, 1, RCL_ERR_INVALID_ARG, "largest"},
      {"colour.ppm", TXT("P6\n1 1\n255\nabc"), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_PARSE, "colour PPM image (P6)"},
      {"bitmap.pbm", TXT("P4\n8 1\n\xff"), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_PARSE, "PBM bitmap"},
      {"magic.pgm", TXT("PX\n1 1\n255\n\0"), RCL_GRID_FORMAT_PGM, 0, 0, RCL_ERR_PARSE, "not a PGM file"},
      {"zerow.pgm", TXT("P5\n0 4\n255\n"), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_PARSE, "0x4 is empty"},
      {"wide.pgm", TXT("P5\n4294967296 1\n255\n"), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_PARSE, "width is 4294967296"},
      {"overflow.pgm", TXT("P2\n99999999999999999999999 1\n255\n"), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_PARSE,
       "width is more than"},
      {"bomb.pgm", TXT("P5\n1000000000 1000000000\n255\n"), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_PARSE,
       "truncated: 0 bytes of samples"},
      {"maxval0.pgm", TXT("P5\n1 1\n0\n\0"), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_PARSE, "maximum value 0"},
      {"maxval.pgm", TXT("P5\n1 1\n70000\n\0\0"), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_PARSE, "maximum value is 70000"},
      {"trunc.pgm", TXT("P5\n3 3\n255\n\1\2\3\4"), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_PARSE, "truncated: 4 bytes"},
      {"trail.pgm", TXT("P5\n1 2\n255\n\1\2\3"), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_PARSE, "1 bytes of trailing"},
      {"sample.pgm", TXT("P5\n2 1\n100\n\1\xc8"), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_PARSE, "is 200, above"},
      {"token.pgm", TXT("P2\n2 2\n9\n1 2\n3 x\n"), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_PARSE,
       ":5: expected the sample 4"},
      {"count.pgm", TXT("P2\n2 2\n9\n1 2\n3 4 5\n"), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_PARSE, ":5: trailing data"},
      {"ptrunc.pgm", TXT("P2\n4 4\n9\n1 2\n"), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_PARSE, "cannot hold the 16 values"},
      {"glued.pgm", TXT("P2\n2x2\n9\n1 2 3 4\n"), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_PARSE,
       "width is followed by 'x'"},
      {"header.pgm", TXT("P5\n3"), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_PARSE, "ends before the height"},
      {"pngsig.png", TXT("\x89PNG\r\n\x1a\x0a\0\0"), RCL_GRID_FORMAT_AUTO, 0, 0, RCL_ERR_PARSE, "corrupt PNG"},
      {"badsig.png", TXT("\x89PNX\r\n\x1a\x0a\0\0\0\0"), RCL_GRID_FORMAT_PNG, 0, 0, RCL_ERR_PARSE, "corrupt PNG"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const bad_file *c = &cases[k];
    const char *p = tmp_path(c->name);
    write_bytes(p, c->bytes, c->len);
    rcl_grid g = {0};
    int rc = rcl_grid_read(&g, p, c->fmt, RCL_F32, c->w, c->h);
    ck_assert_msg(rc == c->status, "%s: got %s (%s), expected %s", c->name, rcl_status_name(rc), rcl_error_last(),
                  rcl_status_name(c->status));
    ck_assert_msg(strstr(rcl_error_last(), c->needle), "%s: message \"%s\" lacks \"%s\"", c->name, rcl_error_last(),
                  c->needle);
    ck_assert_msg(strstr(rcl_error_last(), c->name), "%s: message \"%s\" does not name the file", c->name,
                  rcl_error_last());
    ck_assert_ptr_null(g.data);
  }
  /* Crafted PNGs: colour types other than greyscale, a header declaring more than the file can hold, CRC and
   * data corruption, truncation. */
  unsigned char png[4096], raw[64] = {0};
  const char *p = tmp_path("colour.png");
  write_bytes(p, png, make_png(png, 2, 2, 8, 2, raw, 2 * (1 + 6)));
  rt_fails(rcl_grid_read(&(rcl_grid){0}, p, RCL_GRID_FORMAT_AUTO, RCL_F32, 0, 0), RCL_ERR_PARSE, "RGB colour");
  p = tmp_path("alpha.png");
  write_bytes(p, png, make_png(png, 2, 2, 8, 4, raw, 2 * (1 + 4)));
  rt_fails(rcl_grid_read(&(rcl_grid){0}, p, RCL_GRID_FORMAT_AUTO, RCL_F32, 0, 0), RCL_ERR_PARSE,
           "greyscale with alpha");
  p = tmp_path("palette.png");
  write_bytes(p, png, make_png(png, 2, 2, 8, 3, raw, 2 * (1 + 2)));
  rt_fails(rcl_grid_read(&(rcl_grid){0}, p, RCL_GRID_FORMAT_AUTO, RCL_F32, 0, 0), RCL_ERR_PARSE, "palette colour");
  p = tmp_path("bomb.png");
  write_bytes(p, png, make_png(png, 1000000, 1000000, 8, 0, raw, 10));
  rt_fails(rcl_grid_read(&(rcl_grid){0}, p, RCL_GRID_FORMAT_AUTO, RCL_F32, 0, 0), RCL_ERR_PARSE, "more than its");
  size_t n = make_png(png, 2, 2, 8, 0, raw, 6);
  png[8 + 4 + 4 + 2] ^= 0x01; /* the width, under the IHDR CRC */
  p = tmp_path("crc.png");
  write_bytes(p, png, n);
  rt_fails(rcl_grid_read(&(rcl_grid){0}, p, RCL_GRID_FORMAT_AUTO, RCL_F32, 0, 0), RCL_ERR_PARSE, "CRC");
  n = make_png(png, 2, 2, 8, 0, raw, 6);
  p = tmp_path("cut.png");
  write_bytes(p, png, n - 20); /* inside IDAT */
  rt_fails(rcl_grid_read(&(rcl_grid){0}, p, RCL_GRID_FORMAT_AUTO, RCL_F32, 0, 0), RCL_ERR_PARSE, "cut.png: truncated");
  n = make_png(png, 3, 2, 8, 0, raw, 6); /* rows of 3 samples need 8 bytes: too little data */
  p = tmp_path("few.png");
  write_bytes(p, png, n);
  rt_fails(rcl_grid_read(&(rcl_grid){0}, p, RCL_GRID_FORMAT_AUTO, RCL_F32, 0, 0), RCL_ERR_PARSE, "few.png");
  raw[0] = 9; /* an unknown row filter */
  p = tmp_path("filter.png");
  write_bytes(p, png, make_png(png, 2, 2, 8, 0, raw, 6));
  rt_fails(rcl_grid_read(&(rcl_grid){0}, p, RCL_GRID_FORMAT_AUTO, RCL_F32, 0, 0), RCL_ERR_PARSE, "filter");
  /* A real colour image where scikit-image is installed. */
  const char *rgb = "/usr/lib/python3/dist-packages/skimage/data/chessboard_RGB.png";
  if (access(rgb, R_OK) == 0)
    rt_fails(rcl_grid_read(&(rcl_grid){0}, rgb, RCL_GRID_FORMAT_AUTO, RCL_F32, 0, 0), RCL_ERR_PARSE, "not greyscale");
  else
    rt_note("skip the chessboard_RGB.png check: %s is absent (python3-skimage)", rgb);
  rt_fails(rcl_grid_read(&(rcl_grid){0}, tmp_path("missing.png"), RCL_GRID_FORMAT_AUTO, RCL_F32, 0, 0), RCL_ERR_IO,
           "missing.png");
  rt_fails(rcl_grid_read(&(rcl_grid){0}, tmpdir, RCL_GRID_FORMAT_AUTO, RCL_F32, 0, 0), RCL_ERR_IO,
           "not a regular file");
}
END_TEST

START_TEST(write_errors) {
  rcl_grid g;
  rt_ok(rcl_grid_alloc(&g, RCL_F32, 3, 3));
  rt_fails(rcl_grid_write_raw(&g, "/nonexistent-dir/x.raw"), RCL_ERR_IO, "/nonexistent-dir/x.raw");
  rt_fails(rcl_grid_write_image(&g, "/nonexistent-dir/x.png", RCL_GRID_FORMAT_AUTO, 0, 0), RCL_ERR_IO,
           "/nonexistent-dir/x.png");
  rt_fails(rcl_grid_write_image(&g, tmp_path("x.tiff"), RCL_GRID_FORMAT_AUTO, 0, 0), RCL_ERR_INVALID_ARG,
           "unknown image type");
  rt_fails(rcl_grid_write_image(&g, tmp_path("x.png"), RCL_GRID_FORMAT_RAW, 0, 0), RCL_ERR_INVALID_ARG,
           "not an image format");
  if (access("/dev/full", W_OK) == 0)
    rt_fails(rcl_grid_write_raw(&g, "/dev/full"), RCL_ERR_IO, "cannot write /dev/full");
  rcl_grid empty = {0};
  rt_fails(rcl_grid_write_raw(&empty, tmp_path("e.raw")), RCL_ERR_INVALID_ARG, "unallocated");
  rcl_grid_free(&g);
}
END_TEST

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "%s/test_grid_io.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  Suite *s = suite_create("grid_io");
  TCase *tc = tcase_create("host");
  tcase_add_test(tc, generators);
  tcase_add_test(tc, raw_round_trip);
  tcase_add_test(tc, image_round_trip);
  tcase_add_test(tc, image_formats);
  tcase_add_test(tc, camera_png);
  tcase_add_test(tc, diff_image);
  tcase_add_test(tc, malformed_inputs);
  tcase_add_test(tc, write_errors);
  suite_add_tcase(s, tc);
  int rc = rt_run(s);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return rc;
}
