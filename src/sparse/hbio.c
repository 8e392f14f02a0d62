/* Harwell-Boeing reader (Duff, Grimes, Lewis: "Users' Guide for the Harwell-Boeing Sparse Matrix
 * Collection", 1992). Fixed-format Fortran records: a 4- or 5-line header, then column pointers, row
 * indices and values in the Fortran formats the header names, column-major (CSC). Fields are read by
 * position, as Fortran does, so values that touch ("1.0E+00-2.0E+00") are split correctly. Every problem
 * is reported as "FILE:LINE: problem"; allocations are bounded by the bytes of the input. */
#include <ctype.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparse/sparse_internal.h"

typedef struct {
  const char *p, *end;
  const char *name;
  size_t line;
  const char *ls, *le;
} hb_reader;

static int hb_next(hb_reader *r) {
  if (r->p >= r->end) return 0;
  const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
  r->ls = r->p;
  r->le = nl ? nl : r->end;
  r->p = nl ? nl + 1 : r->end;
  if (r->le > r->ls && r->le[-1] == '\r') r->le--;
  r->line++;
  return 1;
}

static int herr(const hb_reader *r, int status, const char *fmt, ...) RCL_PRINTF(3, 4);
static int herr(const hb_reader *r, int status, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return rcl__fail(status, "%s:%zu: %s", r->name, r->line, msg);
}

/* Copies s (n bytes) for a message: at most 40 characters, unprintables as '?'. */
static const char *show(char *buf, const char *s, size_t n) {
  size_t m = n > 40 ? 40 : n;
  for (size_t i = 0; i < m; i++) buf[i] = isprint((unsigned char)s[i]) ? s[i] : '?';
  buf[m] = '\0';
  return buf;
}

/* Whitespace-separated unsigned integers of a header line, from column `from`. Returns the count found
 * (at most max), or -1 if a word is not an integer (*bad points at it). */
static int header_ints(const hb_reader *r, size_t from, uint64_t *v, int max, const char **bad, size_t *badlen) {
  const char *p = r->ls + from < r->le ? r->ls + from : r->le;
  int n = 0;
  while (p < r->le && n <= max) {
    while (p < r->le && isspace((unsigned char)*p)) p++;
    if (p >= r->le) break;
    const char *s = p;
    while (p < r->le && !isspace((unsigned char)*p)) p++;
    uint64_t x = 0;
    int ok = 1;
    for (const char *q = s; q < p && ok; q++) {
      unsigned d = (unsigned)(unsigned char)*q - '0';
      ok = d <= 9 && x <= (UINT64_MAX - d) / 10;
      x = x * 10 + d;
    }
    if (!ok || n == max) {
      *bad = s;
      *badlen = (size_t)(p - s);
      return -1;
    }
    v[n++] = x;
  }
  return n;
}

/* One Fortran edit descriptor with its repeat count: "(16I5)", "(1P,5E16.8)", "(3D21.15)", "(10F8.2)". */
typedef struct {
  unsigned repeat, width, decimals;
  int scale;
  char kind; /* 'I' or 'R' (E, D, F, G) */
  char text[32];
} hb_format;

static int parse_format(hb_format *f, const hb_reader *r, const char *s, size_t n, const char *what) {
  char b[48], buf[32];
  size_t m = 0;
  for (size_t i = 0; i < n && m + 1 < sizeof buf; i++)
    if (!isspace((unsigned char)s[i])) buf[m++] = (char)toupper((unsigned char)s[i]);
  buf[m] = '\0';
  snprintf(f->text, sizeof f->text, "%s", buf);
  const char *p = buf;
  memset(f, 0, offsetof(hb_format, text));
  if (*p++ != '(' || m < 3 || buf[m - 1] != ')') goto bad;
  /* optional scale factor: [-]kP[,] */
  const char *q = p;
  if (*q == '-') q++;
  if (isdigit((unsigned char)*q)) {
    char *e;
    long k = strtol(p, &e, 10);
    if (*e == 'P') {
      if (k < -99 || k > 99) goto bad;
      f->scale = (int)k;
      p = e + 1;
      if (*p == ',') p++;
    }
  }
  f->repeat = 1;
  if (isdigit((unsigned char)*p)) {
    char *e;
    unsigned long k = strtoul(p, &e, 10);
    if (k == 0 || k > 100000) goto bad;
    f->repeat = (unsigned)k;
    p = e;
  }
  char kind = *p++;
  if (kind == 'I')
    f->kind = 'I';
  else if (kind == 'E' || kind == 'D' || kind == 'F' || kind == 'G')
    f->kind = 'R';
  else
    goto bad;
  if (!isdigit((unsigned char)*p)) goto bad;
  {
    char *e;
    unsigned long w = strtoul(p, &e, 10);
    if (w == 0 || w > 200) goto bad;
    f->width = (unsigned)w;
    p = e;
  }
  if (*p == '.') {
    char *e;
    unsigned long d = strtoul(++p, &e, 10);
    if (e == p || d > 200) goto bad;
    f->decimals = (unsigned)d;
    p = e;
    if (*p == 'E') { /* exponent width (Ew.dEe): irrelevant on input */
      strtoul(++p, &e, 10);
      if (e == p) goto bad;
      p = e;
    }
  }
  if (*p != ')' || p[1] != '\0') goto bad;
  if (f->kind == 'I' && (f->decimals || f->scale)) goto bad;
  return 0;
bad:
  return herr(r, RCL_ERR_PARSE,
              "%s format \"%s\" is not a Fortran format reprocl reads (rIw, rEw.d, rDw.d, rFw.d, "
              "rGw.d, optionally with kP)",
              what, show(b, s, n));
}

/* A Fortran integer field (blanks ignored). */
static int field_int(uint64_t *v, const char *s, size_t n) {
  uint64_t x = 0;
  int digits = 0;
  size_t i = 0;
  while (i < n && s[i] == ' ') i++;
  if (i < n && s[i] == '+') i++;
  for (; i < n; i++) {
    if (s[i] == ' ') continue;
    unsigned d = (unsigned)(unsigned char)s[i] - '0';
    if (d > 9 || x > (UINT64_MAX - d) / 10) return -1;
    x = x * 10 + d;
    digits++;
  }
  if (!digits) return -1;
  *v = x;
  return 0;
}

/* A Fortran real field: blanks ignored, D (or E, Q) exponent letters, an exponent written as a bare sign
 * ("1.0-100"), implied decimals when there is no point, and the kP scale when there is no exponent. The
 * result is text that strtod reads with correct rounding: scaling only shifts the decimal exponent. */
static int field_real(void *out, rcl_dtype dt, const char *s, size_t n, const hb_format *f) {
  char m[256];
  size_t k = 0, i = 0;
  for (; i < n && k + 1 < sizeof m; i++)
    if (s[i] != ' ') m[k++] = s[i];
  if (i < n) return -1;
  m[k] = '\0';
  size_t j = 0;
  if (j < k && (m[j] == '+' || m[j] == '-')) j++;
  size_t mant_start = j;
  int digits = 0, point = 0;
  for (; j < k && (isdigit((unsigned char)m[j]) || (m[j] == '.' && !point)); j++) {
    if (m[j] == '.')
      point = 1;
    else
      digits++;
  }
  if (!digits) return -1;
  size_t mant_end = j;
  long exp = 0;
  int has_exp = 0;
  if (j < k) {
    if (m[j] == 'E' || m[j] == 'e' || m[j] == 'D' || m[j] == 'd' || m[j] == 'Q' || m[j] == 'q')
      j++;
    else if (m[j] != '+' && m[j] != '-')
      return -1;
    int neg = 0;
    if (j < k && (m[j] == '+' || m[j] == '-')) neg = m[j++] == '-';
    if (j >= k) return -1;
    for (; j < k; j++) {
      if (!isdigit((unsigned char)m[j])) return -1;
      if (exp < 100000) exp = exp * 10 + (m[j] - '0');
    }
    if (neg) exp = -exp;
    has_exp = 1;
  }
  if (!point && f->decimals) exp -= (long)f->decimals;
  if (!has_exp) exp -= f->scale;
  char t[300];
  int w = snprintf(t, sizeof t, "%.*s%.*sE%ld", (int)mant_start, m, (int)(mant_end - mant_start), m + mant_start, exp);
  if (w < 0 || (size_t)w >= sizeof t) return -1;
  return rcl__parse_real(out, dt, t, (size_t)w);
}

typedef int (*hb_item_fn)(void *ctx, const hb_reader *r, size_t index, const char *field, size_t width);

/* Reads `count` items of format f from the next `cards` lines, calling fn for each field. */
static int read_section(hb_reader *r, uint64_t cards, const hb_format *f, size_t count, const char *what, hb_item_fn fn,
                        void *ctx) {
  char b[48];
  size_t done = 0;
  for (uint64_t c = 0; c < cards; c++) {
    if (!hb_next(r))
      return herr(r, RCL_ERR_PARSE, "the input ends in the %s section after %zu of %zu values", what, done, count);
    size_t len = (size_t)(r->le - r->ls);
    unsigned k = 0;
    for (; k < f->repeat && done < count; k++, done++) {
      size_t at = (size_t)k * f->width;
      if (at >= len)
        return herr(r, RCL_ERR_PARSE, "%s %zu is missing: the line has %zu characters, format %s needs %zu", what,
                    done + 1, len, f->text, at + f->width);
      size_t w = len - at < f->width ? len - at : f->width;
      int rc = fn(ctx, r, done, r->ls + k * f->width, w);
      if (rc) return rc;
    }
    for (size_t at = (size_t)k * f->width; at < len; at++)
      if (!isspace((unsigned char)r->ls[at]))
        return herr(r, RCL_ERR_PARSE, "unexpected \"%s\" after the %u fields of format %s",
                    show(b, r->ls + at, len - at), k, f->text);
  }
  if (done < count) return herr(r, RCL_ERR_PARSE, "the %s section ends after %zu of %zu values", what, done, count);
  return 0;
}

typedef struct {
  uint64_t *colptr;
  size_t ncol, nnz, nrow;
  uint32_t *rowind;
  unsigned char *vals;
  rcl_dtype dt;
  const hb_format *fmt;
  char sym;   /* 'U', 'S', 'Z' */
  size_t col; /* column of the current index */
} hb_ctx;

static int ptr_item(void *vc, const hb_reader *r, size_t i, const char *s, size_t w) {
  hb_ctx *c = vc;
  char b[48];
  uint64_t v;
  if (field_int(&v, s, w))
    return herr(r, RCL_ERR_PARSE, "column pointer %zu \"%s\" is not an integer", i + 1, show(b, s, w));
  if (i == 0 && v != 1)
    return herr(r, RCL_ERR_PARSE, "the first column pointer is %llu, must be 1", (unsigned long long)v);
  if (i > 0 && v < c->colptr[i - 1])
    return herr(r, RCL_ERR_PARSE, "column pointer %zu (%llu) is smaller than the one before (%llu)", i + 1,
                (unsigned long long)v, (unsigned long long)c->colptr[i - 1]);
  if (v > (uint64_t)c->nnz + 1)
    return herr(r, RCL_ERR_PARSE, "column pointer %zu (%llu) exceeds NNZERO + 1 = %zu", i + 1, (unsigned long long)v,
                c->nnz + 1);
  if (i == c->ncol && v != (uint64_t)c->nnz + 1)
    return herr(r, RCL_ERR_PARSE, "the last column pointer is %llu, must be NNZERO + 1 = %zu", (unsigned long long)v,
                c->nnz + 1);
  c->colptr[i] = v;
  return 0;
}

static int ind_item(void *vc, const hb_reader *r, size_t k, const char *s, size_t w) {
  hb_ctx *c = vc;
  char b[48];
  uint64_t v;
  if (field_int(&v, s, w))
    return herr(r, RCL_ERR_PARSE, "entry %zu: row index \"%s\" is not an integer", k + 1, show(b, s, w));
  if (v < 1 || v > c->nrow)
    return herr(r, RCL_ERR_PARSE, "entry %zu: row index %llu is outside 1..%zu", k + 1, (unsigned long long)v, c->nrow);
  while (c->colptr[c->col + 1] - 1 <= k) c->col++; /* the column entry k belongs to */
  if ((c->sym == 'S' && v - 1 < c->col) || (c->sym == 'Z' && v - 1 <= c->col))
    return herr(r, RCL_ERR_PARSE, "entry (%llu, %zu) is not %s the diagonal: a %s file stores the %slower triangle",
                (unsigned long long)v, c->col + 1, c->sym == 'S' ? "on or below" : "below",
                c->sym == 'S' ? "symmetric" : "skew-symmetric", c->sym == 'S' ? "" : "strict ");
  c->rowind[k] = (uint32_t)(v - 1);
  return 0;
}

static int val_item(void *vc, const hb_reader *r, size_t k, const char *s, size_t w) {
  hb_ctx *c = vc;
  char b[48];
  size_t es = rcl_dtype_size(c->dt);
  if (field_real(c->vals + k * es, c->dt, s, w, c->fmt))
    return herr(r, RCL_ERR_PARSE, "value %zu \"%s\" is not a number in format %s", k + 1, show(b, s, w), c->fmt->text);
  return 0;
}

/* What the header (lines 1 to 5) declares. */
typedef struct {
  uint64_t cards[5]; /* TOTCRD PTRCRD INDCRD VALCRD RHSCRD */
  size_t cards_line; /* the line of the card counts (for messages) */
  char type[4];      /* e.g. "RUA" */
  char sym;          /* 'U', 'S', 'Z' */
  int pattern;
  uint64_t nrow, ncol, nnz;
  hb_format fp, fi, fv; /* the pointer, index and value formats */
} hb_header;

/* Lines 1 and 2: the title, then TOTCRD PTRCRD INDCRD VALCRD [RHSCRD] (TOTCRD the sum of the others). */
static int read_card_counts(hb_header *h, hb_reader *r) {
  char b[48];
  const char *bad;
  size_t badlen;
  if (!hb_next(r)) {
    r->line = 1;
    return herr(r, RCL_ERR_PARSE, "empty input: no Harwell-Boeing title line");
  }
  if (!hb_next(r)) return herr(r, RCL_ERR_PARSE, "the input ends before the card counts (line 2)");
  uint64_t *cards = h->cards;
  int n = header_ints(r, 0, cards, 5, &bad, &badlen);
  if (n < 0)
    return herr(r, RCL_ERR_PARSE, "\"%s\" is not a card count (line 2 holds TOTCRD PTRCRD INDCRD VALCRD [RHSCRD])",
                show(b, bad, badlen));
  if (n < 4) return herr(r, RCL_ERR_PARSE, "line 2 needs TOTCRD PTRCRD INDCRD VALCRD [RHSCRD], found %d number(s)", n);
  uint64_t sum = cards[1] + cards[2];
  if (cards[3] > UINT64_MAX - sum || cards[4] > UINT64_MAX - sum - cards[3] || sum < cards[1] ||
      cards[0] != sum + cards[3] + cards[4])
    return herr(r, RCL_ERR_PARSE, "TOTCRD %llu is not PTRCRD + INDCRD + VALCRD + RHSCRD", (unsigned long long)cards[0]);
  h->cards_line = r->line;
  return 0;
}

/* The first three characters of line 3: a real or pattern, unsymmetric (or rectangular), symmetric or
 * skew-symmetric, assembled matrix. */
static int matrix_type(hb_header *h, const hb_reader *r) {
  char b[48], *type = h->type;
  for (int i = 0; i < 3; i++) type[i] = r->ls + i < r->le ? (char)toupper((unsigned char)r->ls[i]) : ' ';
  if (!type[0] || !type[1] || !type[2] || !strchr("RPCI", type[0]) || !strchr("SUHZR", type[1]) ||
      !strchr("AE", type[2]))
    return herr(r, RCL_ERR_PARSE, "matrix type \"%s\" is not a Harwell-Boeing type (e.g. RUA, RSA, PUA)",
                show(b, type, 3));
  if (type[0] == 'C') return herr(r, RCL_ERR_UNSUPPORTED, "complex matrices (type %s) are not supported", type);
  if (type[1] == 'H') return herr(r, RCL_ERR_UNSUPPORTED, "hermitian matrices (type %s) are not supported", type);
  if (type[2] == 'E') return herr(r, RCL_ERR_UNSUPPORTED, "elemental matrices (type %s) are not supported", type);
  h->sym = type[1] == 'R' ? 'U' : type[1];
  h->pattern = type[0] == 'P';
  return 0;
}

/* Line 3: the type, then NROW NCOL NNZERO [NELTVL], checked against reprocl's limits and the symmetry,
 * then against the bytes that follow: every pointer, index and value takes at least one character, so
 * claims beyond the input are refused before anything is allocated. */
static int read_type_line(hb_header *h, hb_reader *r) {
  char b[48];
  const char *bad;
  size_t badlen;
  if (!hb_next(r)) return herr(r, RCL_ERR_PARSE, "the input ends before the matrix type line (line 3)");
  int rc = matrix_type(h, r);
  if (rc) return rc;
  uint64_t dims[4] = {0, 0, 0, 0};
  int n = header_ints(r, 3, dims, 4, &bad, &badlen);
  if (n < 0)
    return herr(r, RCL_ERR_PARSE, "\"%s\" is not a size (line 3 holds TYPE NROW NCOL NNZERO [NELTVL])",
                show(b, bad, badlen));
  if (n < 3) return herr(r, RCL_ERR_PARSE, "line 3 needs NROW NCOL NNZERO after the type, found %d number(s)", n);
  uint64_t nrow = h->nrow = dims[0], ncol = h->ncol = dims[1], nnz = h->nnz = dims[2];
  if (nrow > RCL_CSR_MAX_DIM || ncol > RCL_CSR_MAX_DIM)
    return herr(r, RCL_ERR_UNSUPPORTED, "a %llu x %llu matrix exceeds reprocl's limit of %u rows and columns",
                (unsigned long long)nrow, (unsigned long long)ncol, RCL_CSR_MAX_DIM);
  if (h->sym != 'U' && nrow != ncol)
    return herr(r, RCL_ERR_PARSE, "a %s matrix must be square, this one is %llu x %llu",
                h->sym == 'S' ? "symmetric" : "skew-symmetric", (unsigned long long)nrow, (unsigned long long)ncol);
  uint64_t rest = (uint64_t)(r->end - r->p);
  if (nnz > rest || ncol + 1 > rest)
    return herr(r, RCL_ERR_PARSE, "the header claims %llu columns and %llu entries but only %llu bytes follow",
                (unsigned long long)ncol, (unsigned long long)nnz, (unsigned long long)rest);
  if (!rcl__rows_justified(nrow, rest))
    return herr(r, RCL_ERR_PARSE,
                "%llu rows need a %llu-byte row-pointer array, more than %llu bytes of input can justify (at "
                "most 256 MiB, or 64 bytes per input byte): refused as implausible",
                (unsigned long long)nrow, (unsigned long long)(nrow + 2) * 8, (unsigned long long)rest);
  return 0;
}

/* Line 4: PTRFMT INDFMT [VALFMT [RHSFMT]], blank-separated; integer pointer and index formats, a real
 * value format (none for a pattern). */
static int read_format_line(hb_header *h, hb_reader *r) {
  if (!hb_next(r)) return herr(r, RCL_ERR_PARSE, "the input ends before the format line (line 4)");
  const char *fs[4];
  size_t fl[4];
  int nf = 0;
  for (const char *p = r->ls; p < r->le && nf < 4;) {
    while (p < r->le && isspace((unsigned char)*p)) p++;
    if (p >= r->le) break;
    const char *s = p;
    while (p < r->le && !isspace((unsigned char)*p)) p++;
    fs[nf] = s;
    fl[nf++] = (size_t)(p - s);
  }
  int pattern = h->pattern;
  if (nf < (pattern ? 2 : 3))
    return herr(r, RCL_ERR_PARSE, "line 4 needs the pointer, index%s formats, found %d", pattern ? "" : " and value",
                nf);
  int rc = parse_format(&h->fp, r, fs[0], fl[0], "pointer");
  if (!rc) rc = parse_format(&h->fi, r, fs[1], fl[1], "index");
  if (!rc && !pattern) rc = parse_format(&h->fv, r, fs[2], fl[2], "value");
  if (rc) return rc;
  if (h->fp.kind != 'I' || h->fi.kind != 'I')
    return herr(r, RCL_ERR_PARSE, "pointer and index formats must be integer (I), found %s and %s", h->fp.text,
                h->fi.text);
  if (!pattern && h->fv.kind != 'R')
    return herr(r, RCL_ERR_PARSE, "the value format %s is not a real format", h->fv.text);
  return 0;
}

/* Each section must fill exactly its declared number of lines (messages name the card-count line); then
 * the right-hand side line (line 5) where RHSCRD > 0. */
static int check_card_layout(const hb_header *h, hb_reader *r) {
  struct {
    const char *name, *card;
    uint64_t cards, items;
    unsigned per;
  } sec[3] = {{"column pointer", "PTRCRD", h->cards[1], h->ncol + 1, h->fp.repeat},
              {"row index", "INDCRD", h->cards[2], h->nnz, h->fi.repeat},
              {"value", "VALCRD", h->cards[3], h->pattern ? 0 : h->nnz, h->pattern ? 1 : h->fv.repeat}};
  for (int s = 0; s < 3; s++) {
    uint64_t need = (sec[s].items + sec[s].per - 1) / sec[s].per;
    if (sec[s].cards != need) {
      r->line = h->cards_line;
      return herr(r, RCL_ERR_PARSE, "%s is %llu, but %llu %s values in %u per line take %llu lines", sec[s].card,
                  (unsigned long long)sec[s].cards, (unsigned long long)sec[s].items, sec[s].name, sec[s].per,
                  (unsigned long long)need);
    }
  }
  if (h->cards[4] > 0 && !hb_next(r))
    return herr(r, RCL_ERR_PARSE, "the input ends before the right-hand side line (line 5)");
  return 0;
}

/* The sections into c: column pointers, row indices and values (a pattern's are 1, its value cards, if
 * any, skipped); the right-hand sides skipped; after them only blank lines. */
static int read_data(hb_ctx *c, const hb_header *h, hb_reader *r) {
  const uint64_t *cards = h->cards;
  size_t es = rcl_dtype_size(c->dt);
  int rc = read_section(r, cards[1], &h->fp, (size_t)h->ncol + 1, "column pointer", ptr_item, c);
  if (!rc) rc = read_section(r, cards[2], &h->fi, (size_t)h->nnz, "row index", ind_item, c);
  if (!rc && !h->pattern) rc = read_section(r, cards[3], &h->fv, (size_t)h->nnz, "value", val_item, c);
  if (!rc && h->pattern) {
    for (size_t k = 0; k < h->nnz; k++) {
      float one32 = 1.0f;
      double one64 = 1.0;
      memcpy(c->vals + k * es, c->dt == RCL_F32 ? (void *)&one32 : (void *)&one64, es);
    }
    /* A pattern file may still carry value cards (VALCRD > 0): skip them. */
    for (uint64_t k = 0; k < cards[3] && !rc; k++)
      if (!hb_next(r)) rc = herr(r, RCL_ERR_PARSE, "the input ends in the value section");
  }
  for (uint64_t k = 0; k < cards[4] && !rc; k++)
    if (!hb_next(r)) rc = herr(r, RCL_ERR_PARSE, "the input ends in the right-hand side section");
  while (!rc && hb_next(r)) {
    const char *p = r->ls;
    while (p < r->le && isspace((unsigned char)*p)) p++;
    if (p < r->le)
      rc = herr(r, RCL_ERR_PARSE, "unexpected data after the %llu declared lines", (unsigned long long)cards[0]);
  }
  return rc;
}

/* CSR of the columns read, a symmetric or skew-symmetric file's entries mirrored above the diagonal
 * (negated for skew). */
static int assemble(rcl_csr **out, const hb_ctx *c) {
  size_t es = rcl_dtype_size(c->dt);
  rcl_coo coo;
  int rc = rcl__coo_init(&coo, c->dt, c->nnz * (c->sym != 'U' ? 2 : 1));
  if (rc) return rc;
  for (size_t j = 0; j < c->ncol && !rc; j++)
    for (uint64_t k = c->colptr[j] - 1; k < c->colptr[j + 1] - 1 && !rc; k++) {
      unsigned char *v = c->vals + k * es;
      rc = rcl__coo_push(&coo, c->rowind[k], (uint32_t)j, v);
      if (!rc && c->sym != 'U' && c->rowind[k] != j) {
        unsigned char m[8];
        memcpy(m, v, es);
        if (c->sym == 'Z') m[es - 1] ^= 0x80;
        rc = rcl__coo_push(&coo, (uint32_t)j, c->rowind[k], m);
      }
    }
  if (!rc) rc = rcl__csr_from_coo(out, &coo, c->nrow, c->ncol);
  rcl__coo_free(&coo);
  return rc;
}

static int parse(rcl_csr **out, hb_reader *r, rcl_dtype dt) {
  hb_header h;
  memset(&h, 0, sizeof h);
  int rc = read_card_counts(&h, r);
  if (!rc) rc = read_type_line(&h, r);
  if (!rc) rc = read_format_line(&h, r);
  if (!rc) rc = check_card_layout(&h, r);
  if (rc) return rc;
  hb_ctx c = {0};
  c.ncol = (size_t)h.ncol;
  c.nnz = (size_t)h.nnz;
  c.nrow = (size_t)h.nrow;
  c.dt = dt;
  c.fmt = &h.fv;
  c.sym = h.sym;
  size_t es = rcl_dtype_size(dt);
  c.colptr = rcl__malloc((size_t)(h.ncol + 1) * sizeof *c.colptr);
  c.rowind = c.colptr ? rcl__malloc((size_t)(h.nnz ? h.nnz : 1) * sizeof *c.rowind) : NULL;
  c.vals = c.rowind ? rcl__malloc((size_t)(h.nnz ? h.nnz : 1) * es) : NULL;
  if (!c.vals) rc = RCL_ERR_OUT_OF_MEMORY;
  if (!rc) rc = read_data(&c, &h, r);
  if (!rc) rc = assemble(out, &c);
  rcl__free(c.colptr);
  rcl__free(c.rowind);
  rcl__free(c.vals);
  return rc;
}

int rcl_hb_parse(rcl_csr **out, const char *text, size_t length, const char *name, rcl_dtype dtype) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_hb_parse: NULL output");
  *out = NULL;
  if (!text && length) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_hb_parse: NULL text");
  if (rcl_dtype_size(dtype) == 0) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_hb_parse: unknown dtype %d", (int)dtype);
  hb_reader r = {text, text + length, name ? name : "<memory>", 0, NULL, NULL};
  rcl_locale_guard g;
  int rc = rcl__locale_begin(&g);
  if (rc) return rc;
  rc = parse(out, &r, dtype);
  rcl__locale_end(&g);
  return rc;
}

int rcl_hb_read(rcl_csr **out, const char *path, rcl_dtype dtype) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_hb_read: NULL output");
  *out = NULL;
  char *buf;
  size_t len;
  int rc = rcl__read_file(&buf, &len, path);
  if (rc) return rc;
  rc = rcl_hb_parse(out, buf, len, path, dtype);
  rcl__free(buf);
  return rc;
}
