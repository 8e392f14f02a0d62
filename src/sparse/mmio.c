/* Matrix Market reader and writer (https://math.nist.gov/MatrixMarket/formats.html). Every problem in
 * the input is reported as "FILE:LINE: problem"; nothing is allocated beyond what the bytes of the input
 * can justify (a claimed entry count is checked against the bytes that follow it first). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sparse/sparse_internal.h"

typedef struct {
  const char *p, *end; /* the unread rest of the input */
  const char *name;
  size_t line;         /* number of the current line */
  const char *ls, *le; /* the current line, without its terminator */
} reader;

typedef struct {
  const char *s;
  size_t n;
} token;

/* Next line; 0 at the end of the input. A trailing '\r' (CRLF files) is not part of the line. */
static int next_line(reader *r) {
  if (r->p >= r->end) return 0;
  const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
  r->ls = r->p;
  r->le = nl ? nl : r->end;
  r->p = nl ? nl + 1 : r->end;
  if (r->le > r->ls && r->le[-1] == '\r') r->le--;
  r->line++;
  return 1;
}

static int is_blank(int c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* Splits the current line at blanks into up to max tokens; returns how many there are (max + 1 means
 * "more than max"). */
static int split(const reader *r, token *t, int max) {
  int n = 0;
  const char *p = r->ls;
  while (p < r->le) {
    while (p < r->le && is_blank((unsigned char)*p)) p++;
    if (p >= r->le) break;
    const char *s = p;
    while (p < r->le && !is_blank((unsigned char)*p)) p++;
    if (n == max) return max + 1;
    t[n].s = s;
    t[n].n = (size_t)(p - s);
    n++;
  }
  return n;
}

/* A blank line or a comment (first non-blank character '%'). */
static int skippable(const reader *r) {
  const char *p = r->ls;
  while (p < r->le && is_blank((unsigned char)*p)) p++;
  return p == r->le || *p == '%';
}

/* A token for messages: at most 40 characters, unprintable bytes shown as '?'. */
static const char *show(char *buf, token t) {
  size_t n = t.n > 40 ? 40 : t.n, i;
  for (i = 0; i < n; i++) buf[i] = isprint((unsigned char)t.s[i]) ? t.s[i] : '?';
  if (t.n > 40) {
    memcpy(buf + n, "...", 3);
    n += 3;
  }
  buf[n] = '\0';
  return buf;
}

static int perr(const reader *r, int status, const char *fmt, ...) RCL_PRINTF(3, 4);
static int perr(const reader *r, int status, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return rcl__fail(status, "%s:%zu: %s", r->name, r->line, msg);
}

/* A non-negative decimal integer: digits only. 0 on success, -1 not a number, -2 too large. */
static int parse_u64(uint64_t *v, token t) {
  if (t.n == 0) return -1;
  uint64_t x = 0;
  for (size_t i = 0; i < t.n; i++) {
    unsigned d = (unsigned)(unsigned char)t.s[i] - '0';
    if (d > 9) return -1;
    if (x > (UINT64_MAX - d) / 10) return -2;
    x = x * 10 + d;
  }
  *v = x;
  return 0;
}

static int tok_is(token t, const char *word) { return strlen(word) == t.n && strncasecmp(t.s, word, t.n) == 0; }

enum { F_REAL, F_INTEGER, F_PATTERN };
enum { S_GENERAL, S_SYMMETRIC, S_SKEW };

static int parse_index(uint64_t *v, const reader *r, token t, const char *what, uint64_t max) {
  char b[48];
  int e = parse_u64(v, t);
  if (e == -1)
    return perr(r, RCL_ERR_PARSE, "\"%s\" is not a %s index (expected an integer in 1..%llu)", show(b, t), what,
                (unsigned long long)max);
  if (e == -2 || *v < 1 || *v > max)
    return perr(r, RCL_ERR_PARSE, "%s index %s is outside 1..%llu", what, show(b, t), (unsigned long long)max);
  return 0;
}

static int parse_value(void *v, const reader *r, token t, int field, rcl_dtype dt) {
  char b[48];
  if (field == F_INTEGER) {
    size_t i = (t.n > 0 && (t.s[0] == '+' || t.s[0] == '-')) ? 1 : 0;
    int ok = i < t.n;
    for (; i < t.n && ok; i++) ok = isdigit((unsigned char)t.s[i]);
    if (!ok) return perr(r, RCL_ERR_PARSE, "\"%s\" is not an integer (the field is integer)", show(b, t));
  }
  /* Integers go through the same correctly rounded conversion: a huge integer rounds to nearest. */
  if (rcl__parse_real(v, dt, t.s, t.n) != 0) return perr(r, RCL_ERR_PARSE, "\"%s\" is not a number", show(b, t));
  return 0;
}

static void negate(void *v, rcl_dtype dt) { ((unsigned char *)v)[rcl_dtype_size(dt) - 1] ^= 0x80; }

/* What the banner and the size line declare. */
typedef struct {
  int array, field, sym;
  uint64_t M, N;    /* rows and columns */
  uint64_t expect;  /* entries the file holds */
  size_t size_line; /* the line number of the size line (for messages) */
} mm_header;

/* The banner's field word. */
static int banner_field(int *field, const reader *r, token t) {
  char b[48];
  if (tok_is(t, "real") || tok_is(t, "double"))
    *field = F_REAL;
  else if (tok_is(t, "integer"))
    *field = F_INTEGER;
  else if (tok_is(t, "pattern"))
    *field = F_PATTERN;
  else if (tok_is(t, "complex"))
    return perr(r, RCL_ERR_UNSUPPORTED, "complex matrices are not supported (real, integer or pattern only)");
  else
    return perr(r, RCL_ERR_PARSE, "unknown field \"%s\" (expected real, integer, pattern or complex)", show(b, t));
  return 0;
}

/* The banner's symmetry word. */
static int banner_symmetry(int *sym, const reader *r, token t) {
  char b[48];
  if (tok_is(t, "general"))
    *sym = S_GENERAL;
  else if (tok_is(t, "symmetric"))
    *sym = S_SYMMETRIC;
  else if (tok_is(t, "skew-symmetric"))
    *sym = S_SKEW;
  else if (tok_is(t, "hermitian"))
    return perr(r, RCL_ERR_UNSUPPORTED, "hermitian matrices are complex and not supported");
  else
    return perr(r, RCL_ERR_PARSE, "unknown symmetry \"%s\" (expected general, symmetric or skew-symmetric)",
                show(b, t));
  return 0;
}

/* The first line: "%%MatrixMarket matrix FORMAT FIELD SYMMETRY". */
static int read_banner(mm_header *h, reader *r) {
  token t[6];
  char b[48];
  if (!next_line(r)) {
    r->line = 1;
    return perr(r, RCL_ERR_PARSE, "empty input: no Matrix Market banner (%%%%MatrixMarket matrix ...)");
  }
  int nt = split(r, t, 5);
  if (nt < 1 || !(t[0].n == 14 && strncasecmp(t[0].s, "%%MatrixMarket", 14) == 0))
    return perr(r, RCL_ERR_PARSE,
                "missing the Matrix Market banner: the first line must start with \"%%%%MatrixMarket\"");
  if (nt != 5)
    return perr(r, RCL_ERR_PARSE,
                "the banner needs 4 words after %%%%MatrixMarket (object format field symmetry), found %d",
                nt > 5 ? 5 : nt - 1);
  if (!tok_is(t[1], "matrix"))
    return perr(r, RCL_ERR_UNSUPPORTED, "object \"%s\" is not supported (only \"matrix\")", show(b, t[1]));
  if (tok_is(t[2], "coordinate"))
    h->array = 0;
  else if (tok_is(t[2], "array"))
    h->array = 1;
  else
    return perr(r, RCL_ERR_PARSE, "unknown format \"%s\" (expected coordinate or array)", show(b, t[2]));
  int rc = banner_field(&h->field, r, t[3]);
  if (!rc) rc = banner_symmetry(&h->sym, r, t[4]);
  if (!rc && h->array && h->field == F_PATTERN)
    rc = perr(r, RCL_ERR_PARSE, "\"array pattern\" is not a valid Matrix Market type");
  return rc;
}

/* The size line, the first line that is neither blank nor a comment: "rows columns" (array) or "rows
 * columns entries" (coordinate). */
static int read_size_line(mm_header *h, reader *r) {
  token t[6];
  char b[48];
  do {
    if (!next_line(r)) return perr(r, RCL_ERR_PARSE, "the input ends before the size line");
  } while (skippable(r));
  h->size_line = r->line;
  int want = h->array ? 2 : 3;
  int nt = split(r, t, want);
  if (nt != want)
    return perr(r, RCL_ERR_PARSE, "the size line needs %s, found %s%d word(s)",
                h->array ? "2 integers (rows columns)" : "3 integers (rows columns entries)",
                nt > want ? "more than " : "", nt > want ? want : nt);
  uint64_t dims[3] = {0, 0, 0};
  static const char *const dname[] = {"row count", "column count", "entry count"};
  for (int i = 0; i < want; i++) {
    int e = parse_u64(&dims[i], t[i]);
    if (e == -1) return perr(r, RCL_ERR_PARSE, "%s \"%s\" is not a non-negative integer", dname[i], show(b, t[i]));
    if (e == -2) return perr(r, RCL_ERR_PARSE, "%s %s does not fit in 64 bits", dname[i], show(b, t[i]));
  }
  h->M = dims[0];
  h->N = dims[1];
  if (!h->array) {
    h->expect = dims[2];
    return 0;
  }
  if (h->M != 0 && h->N > UINT64_MAX / h->M)
    return perr(r, RCL_ERR_PARSE, "the array size %llu x %llu overflows 64 bits", (unsigned long long)h->M,
                (unsigned long long)h->N);
  h->expect = h->M * h->N;
  return 0;
}

/* The header's claims against reprocl's limits and the symmetry, then against the bytes that follow (a
 * claim the rest of the input cannot hold is refused before anything is allocated for it). An array
 * file of a symmetric matrix holds only the lower triangle, a skew-symmetric one the strict lower. */
static int check_claims(mm_header *h, const reader *r) {
  uint64_t M = h->M, N = h->N;
  if (M > RCL_CSR_MAX_DIM || N > RCL_CSR_MAX_DIM)
    return perr(r, RCL_ERR_UNSUPPORTED, "a %llu x %llu matrix exceeds reprocl's limit of %u rows and columns",
                (unsigned long long)M, (unsigned long long)N, RCL_CSR_MAX_DIM);
  if (h->sym != S_GENERAL && M != N)
    return perr(r, RCL_ERR_PARSE, "a %s matrix must be square, this one is %llu x %llu",
                h->sym == S_SYMMETRIC ? "symmetric" : "skew-symmetric", (unsigned long long)M, (unsigned long long)N);
  if (h->array && h->sym == S_SYMMETRIC) h->expect = N * (N + 1) / 2; /* N < 2^32: no overflow */
  if (h->array && h->sym == S_SKEW) h->expect = N ? N * (N - 1) / 2 : 0;
  /* Each entry needs at least "i j v\n" (6 bytes), "i j\n" (4) or "v\n" (2). */
  uint64_t minb = h->array ? 2 : h->field == F_PATTERN ? 4 : 6, rest = (uint64_t)(r->end - r->p);
  if (h->expect > (rest + 1) / minb)
    return perr(r, RCL_ERR_PARSE,
                "the size line claims %llu entries but only %llu bytes follow (each entry needs at least %llu): "
                "the input is truncated or the count is wrong",
                (unsigned long long)h->expect, (unsigned long long)rest, (unsigned long long)minb);
  if (!rcl__rows_justified(M, rest))
    return perr(r, RCL_ERR_PARSE,
                "%llu rows need a %llu-byte row-pointer array, more than %llu bytes of input can justify (at "
                "most 256 MiB, or 64 bytes per input byte): refused as implausible",
                (unsigned long long)M, (unsigned long long)(M + 2) * 8, (unsigned long long)rest);
  return 0;
}

/* One entry of the file: its 1-based row and column, and its value (dtype bytes). */
typedef struct {
  uint64_t i, j;
  unsigned char v[8];
} mm_entry;

/* An array file's value line. Positions run column-major (symmetric: the lower triangle of each column,
 * skew: below the diagonal); *ai, *aj is this line's, advanced to the next. */
static int array_entry(mm_entry *e, const reader *r, const mm_header *h, rcl_dtype dt, uint64_t *ai, uint64_t *aj) {
  token t[3];
  char b[48];
  if (split(r, t, 2) > 1)
    return perr(r, RCL_ERR_PARSE, "unexpected \"%s\" after the value (array files hold one value per line)",
                show(b, t[1]));
  int rc = parse_value(e->v, r, t[0], h->field, dt);
  if (rc) return rc;
  e->i = *ai;
  e->j = *aj;
  if (++*ai > h->M) { /* next column */
    ++*aj;
    *ai = h->sym == S_GENERAL ? 1 : h->sym == S_SYMMETRIC ? *aj : *aj + 1;
  }
  return 0;
}

/* A coordinate file's entry line: "row column value", or "row column" (pattern: the value is 1). A
 * symmetric file stores only the lower triangle, a skew-symmetric one the strict lower. */
static int coordinate_entry(mm_entry *e, const reader *r, const mm_header *h, rcl_dtype dt) {
  token t[4];
  char b1[48], b2[48];
  int need = h->field == F_PATTERN ? 2 : 3;
  int nt = split(r, t, need), rc;
  if (nt < need)
    return perr(r, RCL_ERR_PARSE, "expected %s, found %d word(s)",
                need == 2 ? "row and column (pattern)" : "row, column and value", nt);
  if (nt > need) {
    token extra[4];
    split(r, extra, 4);
    return perr(r, RCL_ERR_PARSE, "unexpected \"%s\" after the %s", show(b1, extra[need]),
                need == 2 ? "column (the field is pattern)" : "value");
  }
  if ((rc = parse_index(&e->i, r, t[0], "row", h->M)) != 0 || (rc = parse_index(&e->j, r, t[1], "column", h->N)) != 0)
    return rc;
  if (h->sym == S_SYMMETRIC && e->i < e->j)
    return perr(r, RCL_ERR_PARSE,
                "entry (%s, %s) lies above the diagonal: a symmetric Matrix Market file stores only the lower "
                "triangle",
                show(b1, t[0]), show(b2, t[1]));
  if (h->sym == S_SKEW && e->i <= e->j)
    return perr(r, RCL_ERR_PARSE,
                "entry (%s, %s) is not below the diagonal: a skew-symmetric file stores only the strict lower "
                "triangle",
                show(b1, t[0]), show(b2, t[1]));
  if (h->field != F_PATTERN) return parse_value(e->v, r, t[2], h->field, dt);
  double one = 1.0;
  float onef = 1.0f;
  memcpy(e->v, dt == RCL_F32 ? (void *)&onef : (void *)&one, rcl_dtype_size(dt));
  return 0;
}

/* Adds an entry (0-based), and for a symmetric or skew-symmetric file its mirror above the diagonal
 * (negated for skew). */
static int push_entry(rcl_coo *coo, const mm_header *h, mm_entry *e, rcl_dtype dt) {
  int rc = rcl__coo_push(coo, (uint32_t)(e->i - 1), (uint32_t)(e->j - 1), e->v);
  if (!rc && h->sym != S_GENERAL && e->i != e->j) {
    if (h->sym == S_SKEW) negate(e->v, dt);
    rc = rcl__coo_push(coo, (uint32_t)(e->j - 1), (uint32_t)(e->i - 1), e->v);
  }
  return rc;
}

/* The declared entries (blank and comment lines between them skipped). */
static int read_entries(rcl_coo *coo, reader *r, const mm_header *h, rcl_dtype dt) {
  mm_entry e;
  uint64_t got = 0, ai = h->array && h->sym == S_SKEW ? 2 : 1, aj = 1;
  int rc = 0;
  while (!rc && got < h->expect) {
    if (!next_line(r))
      return perr(r, RCL_ERR_PARSE, "the input ends after %llu of the %llu entries declared on line %zu",
                  (unsigned long long)got, (unsigned long long)h->expect, h->size_line);
    if (skippable(r)) continue;
    rc = h->array ? array_entry(&e, r, h, dt, &ai, &aj) : coordinate_entry(&e, r, h, dt);
    if (!rc) rc = push_entry(coo, h, &e, dt);
    got++;
  }
  return rc;
}

/* After the declared entries only blank and comment lines may follow. */
static int read_trailer(reader *r, const mm_header *h) {
  while (next_line(r))
    if (!skippable(r))
      return perr(r, RCL_ERR_PARSE, "more entries than the %llu declared on line %zu", (unsigned long long)h->expect,
                  h->size_line);
  return 0;
}

static int parse(rcl_csr **out, reader *r, rcl_dtype dt) {
  mm_header h;
  memset(&h, 0, sizeof h);
  int rc = read_banner(&h, r);
  if (!rc) rc = read_size_line(&h, r);
  if (!rc) rc = check_claims(&h, r);
  if (rc) return rc;
  rcl_coo coo;
  if ((rc = rcl__coo_init(&coo, dt, (size_t)h.expect * (h.sym != S_GENERAL ? 2 : 1))) != 0) return rc;
  rc = read_entries(&coo, r, &h, dt);
  if (!rc) rc = read_trailer(r, &h);
  if (!rc) rc = rcl__csr_from_coo(out, &coo, (size_t)h.M, (size_t)h.N);
  rcl__coo_free(&coo);
  return rc;
}

int rcl_mm_parse(rcl_csr **out, const char *text, size_t length, const char *name, rcl_dtype dtype) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mm_parse: NULL output");
  *out = NULL;
  if (!text && length) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mm_parse: NULL text");
  if (rcl_dtype_size(dtype) == 0) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mm_parse: unknown dtype %d", (int)dtype);
  reader r = {text, text + length, name ? name : "<memory>", 0, NULL, NULL};
  rcl_locale_guard g;
  int rc = rcl__locale_begin(&g);
  if (rc) return rc;
  rc = parse(out, &r, dtype);
  rcl__locale_end(&g);
  return rc;
}

int rcl_mm_read(rcl_csr **out, const char *path, rcl_dtype dtype) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mm_read: NULL output");
  *out = NULL;
  char *buf;
  size_t len;
  int rc = rcl__read_file(&buf, &len, path);
  if (rc) return rc;
  rc = rcl_mm_parse(out, buf, len, path, dtype);
  rcl__free(buf);
  return rc;
}

int rcl_matrix_read(rcl_csr **out, const char *path, rcl_dtype dtype) {
  if (!out) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_matrix_read: NULL output");
  *out = NULL;
  char *buf;
  size_t len;
  int rc = rcl__read_file(&buf, &len, path);
  if (rc) return rc;
  if (len >= 14 && strncasecmp(buf, "%%MatrixMarket", 14) == 0)
    rc = rcl_mm_parse(out, buf, len, path, dtype);
  else if (len == 0)
    rc = rcl__fail(RCL_ERR_PARSE, "%s:1: empty file", path);
  else
    rc = rcl_hb_parse(out, buf, len, path, dtype);
  rcl__free(buf);
  return rc;
}

int rcl_mm_write(const char *path, const rcl_csr *A) {
  int rc = rcl_csr_validate(A);
  if (rc) return rc;
  if (!path) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_mm_write: NULL path");
  FILE *f = fopen(path, "w");
  if (!f) return rcl__fail(RCL_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
  rcl_locale_guard g;
  rc = rcl__locale_begin(&g);
  if (rc) {
    fclose(f);
    return rc;
  }
  int bad = fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n%% written by reprocl (%s)\n%zu %zu %zu\n",
                    rcl_dtype_name(A->dtype), A->nrows, A->ncols, A->nnz) < 0;
  for (size_t i = 0; i < A->nrows && !bad; i++)
    for (uint64_t k = A->row_ptr[i]; k < A->row_ptr[i + 1] && !bad; k++) {
      if (A->dtype == RCL_F32)
        bad = fprintf(f, "%zu %u %.9g\n", i + 1, A->col_idx[k] + 1, (double)((const float *)A->values)[k]) < 0;
      else
        bad = fprintf(f, "%zu %u %.17g\n", i + 1, A->col_idx[k] + 1, ((const double *)A->values)[k]) < 0;
    }
  rcl__locale_end(&g);
  if (fclose(f) != 0) bad = 1;
  if (bad) return rcl__fail(RCL_ERR_IO, "%s: write error: %s", path, strerror(errno));
  return 0;
}
