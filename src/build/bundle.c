/* Program bundles: the offline binaries of every program for one device (the FPGA flow, where programs
 * are compiled by aoc or v++ and only loaded at run time), keyed like the binary cache by the program
 * key (program_unit.c). This file reads them; src/context/bundle_write.c writes them. */
#include <string.h>

#include "build/bundle.h"
#include "core/alloc.h"
#include "core/file.h"

typedef struct {
  char key[65], sum[65];
  size_t offset, size;
} bundle_entry;

struct rcl_bundle {
  char *data; /* the whole file */
  size_t len;
  bundle_entry *entries;
  size_t count;
};

void rcl__bundle_free(rcl_bundle *b) {
  if (!b) return;
  rcl__free(b->data);
  rcl__free(b->entries);
  rcl__free(b);
}

const unsigned char *rcl__bundle_find(const rcl_bundle *b, const char *pkey, size_t *size) {
  for (size_t i = 0; i < b->count; i++)
    if (!strcmp(b->entries[i].key, pkey)) {
      *size = b->entries[i].size;
      return (const unsigned char *)b->data + b->entries[i].offset;
    }
  return NULL;
}

int rcl__bundle_read_file(char **data, size_t *size, const char *path) {
  rcl_file_error e;
  int rc = rcl__file_read(data, size, path, RCL_FILE_NO_DEVICE, &e);
  return rc == RCL_ERR_IO ? rcl__file_fail(&e, path) : rc;
}

/* Lines 1 and 2 of the header: the magic, then the device's fingerprint (which must be this device's). */
static int header_line(const char *text, size_t l, size_t line, const char *path, const char *fingerprint,
                       const char *device_name) {
  if (line == 1) {
    if (strcmp(text, RCL_BUNDLE_MAGIC))
      return rcl__fail(RCL_ERR_PARSE, "%s:1: not a reprocl program bundle (expected \"%s\")", path, RCL_BUNDLE_MAGIC);
    return 0;
  }
  char fp[80];
  if (sscanf(text, "device %79s", fp) != 1 || strlen(fp) != 64)
    return rcl__fail(RCL_ERR_PARSE, "%s:2: expected \"device <fingerprint> <name>\"", path);
  if (strcmp(fp, fingerprint))
    return rcl__fail(RCL_ERR_MISMATCH,
                     "%s was made for another device or driver (%s) than %s; rebuild it with reprocl compile", path,
                     text + 7 + 65 < text + l ? text + 7 + 65 : "?", device_name);
  return 0;
}

/* A program line: one more entry of b (*cap entries allocated), its offset relative to the end of the header;
 * *payload counts the bytes of the entries so far. */
static int program_line(rcl_bundle *b, size_t *cap, size_t *payload, const char *text, size_t line, const char *path) {
  bundle_entry e;
  unsigned long long sz;
  memset(&e, 0, sizeof e);
  if (sscanf(text, "program %64s %llu %64s", e.key, &sz, e.sum) != 3 || strlen(e.key) != 64)
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: expected \"program <key> <size> <sha256> <label>\"", path, line);
  /* Sizes are checked against the file as they are read: a huge size (or "-1", which %llu takes as
   * 2^64-1) must not wrap the running total into a match and point an entry outside the file. */
  if (sz > b->len - *payload)
    return rcl__fail(RCL_ERR_PARSE, "%s:%zu: a program of %llu bytes, more than the file holds (%zu bytes; truncated?)",
                     path, line, sz, b->len);
  e.size = (size_t)sz;
  e.offset = *payload; /* relative to the end of the header, fixed below */
  *payload += e.size;
  if (b->count == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    bundle_entry *g = rcl__realloc(b->entries, nc * sizeof *g);
    if (!g) return RCL_ERR_OUT_OF_MEMORY;
    b->entries = g;
    *cap = nc;
  }
  b->entries[b->count++] = e;
  return 0;
}

/* The header, line by line up to "end": *off is left at its end, *payload at the bytes it lists. */
static int read_header(rcl_bundle *b, size_t *off, size_t *payload, const char *path, const char *fingerprint,
                       const char *device_name) {
  size_t cap = 0, line = 0;
  int rc = 0, ended = 0;
  while (!rc && !ended) {
    const char *s = b->data + *off, *nl = *off < b->len ? memchr(s, '\n', b->len - *off) : NULL;
    line++;
    if (!nl) return rcl__fail(RCL_ERR_PARSE, "%s:%zu: truncated bundle header", path, line);
    char text[600];
    size_t l = (size_t)(nl - s);
    if (l >= sizeof text) l = sizeof text - 1;
    memcpy(text, s, l);
    text[l] = '\0';
    *off = (size_t)(nl - b->data) + 1;
    if (line <= 2)
      rc = header_line(text, l, line, path, fingerprint, device_name);
    else if (!strcmp(text, "end"))
      ended = 1;
    else
      rc = program_line(b, &cap, payload, text, line, path);
  }
  return rc;
}

/* The binaries after the header: as many bytes as it lists, each matching its hash (offsets made absolute). */
static int check_payloads(rcl_bundle *b, size_t off, size_t payload, const char *path) {
  if (b->len - off != payload)
    return rcl__fail(RCL_ERR_PARSE, "%s: the header lists %zu bytes of binaries, the file holds %zu (truncated?)", path,
                     payload, b->len - off);
  /* Verify every payload against its hash. */
  for (size_t i = 0; i < b->count; i++) {
    b->entries[i].offset += off;
    char hex[RCL_SHA256_HEX_SIZE];
    rcl_sha256_hex(hex, b->data + b->entries[i].offset, b->entries[i].size);
    if (strcmp(hex, b->entries[i].sum))
      return rcl__fail(RCL_ERR_PARSE, "%s: the binary of program %.16s does not match its hash", path,
                       b->entries[i].key);
  }
  return 0;
}

int rcl__bundle_parse(rcl_bundle **out, char *data, size_t len, const char *path, const char *fingerprint,
                      const char *device_name) {
  *out = NULL;
  rcl_bundle *b = rcl__calloc(1, sizeof *b);
  if (!b) {
    rcl__free(data);
    return RCL_ERR_OUT_OF_MEMORY;
  }
  b->data = data;
  b->len = len;
  size_t off = 0, payload = 0;
  int rc = read_header(b, &off, &payload, path, fingerprint, device_name);
  if (!rc) rc = check_payloads(b, off, payload, path);
  if (rc) {
    rcl__bundle_free(b);
    return rc;
  }
  *out = b;
  return 0;
}
