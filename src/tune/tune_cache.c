/* The tuning cache file: human-readable text, one record per line with a checksum, under a format
 * header; merged into by read-merge-write under a lock file, replaced atomically. See docs/tuning.md
 * ("The tuning cache file") for the format. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "build/binary_cache.h"
#include "build/cache_dir.h"
#include "core/alloc.h"
#include "tune/tune_cache.h"

static const char header[] = "reprocl-tuning-cache 1\n"
                             "# One record per line: R <checksum> <key> : <parameters> # <measurements>.\n"
                             "# The checksum is the first 16 hex digits of the SHA-256 of the rest of the line.\n"
                             "# Records whose checksum, key or format do not verify are ignored. See docs/tuning.md.\n";
#define HEADER_LINE "reprocl-tuning-cache "

int rcl__tcache_same_key(const rcl_tcache_record *a, const rcl_tcache_record *b) {
  return !strcmp(a->fingerprint, b->fingerprint) && !strcmp(a->lib, b->lib) && a->schema == b->schema &&
         !strcmp(a->kernel, b->kernel) && !strcmp(a->src, b->src) && !strcmp(a->opts, b->opts) &&
         a->contract == b->contract && !strcmp(a->dtype, b->dtype) && a->bucket == b->bucket;
}

static void checksum(char out[17], const char *text, size_t len) {
  char hex[RCL_SHA256_HEX_SIZE];
  rcl_sha256_hex(hex, text, len);
  memcpy(out, hex, 16);
  out[16] = '\0';
}

int rcl__tcache_format(char *line, size_t size, const rcl_tcache_record *r) {
  char body[1024];
  int n = snprintf(body, sizeof body,
                   "fp=%s lib=%s schema=%u kernel=%s src=%s opts=%s contract=%u dtype=%s size=2^%u : %s # %s",
                   r->fingerprint, r->lib, r->schema, r->kernel, r->src, r->opts, r->contract, r->dtype, r->bucket,
                   r->params, r->comment);
  if (n < 0 || (size_t)n >= sizeof body) return rcl__fail(RCL_ERR_INTERNAL, "tuning record too long");
  for (char *c = body; *c; c++)
    if (*c == '\n' || *c == '\r') *c = ' '; /* one record per line, whatever a device name holds */
  char sum[17];
  checksum(sum, body, (size_t)n);
  n = snprintf(line, size, "R %s %s", sum, body);
  if (n < 0 || (size_t)n >= size) return rcl__fail(RCL_ERR_INTERNAL, "tuning record too long");
  return 0;
}

static int is_token_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-' || c == '^'; }

/* Copies a value into dst (size cap) if it is made of token characters and fits. */
static int take(char *dst, size_t cap, const char *v, size_t len) {
  if (len == 0 || len >= cap) return 0;
  for (size_t i = 0; i < len; i++)
    if (!is_token_char(v[i])) return 0;
  memcpy(dst, v, len);
  dst[len] = '\0';
  return 1;
}

static int take_uint(unsigned *dst, const char *v, size_t len) {
  if (len == 0 || len > 9) return 0;
  unsigned x = 0;
  for (size_t i = 0; i < len; i++) {
    if (!isdigit((unsigned char)v[i])) return 0;
    x = x * 10 + (unsigned)(v[i] - '0');
  }
  *dst = x;
  return 1;
}

static int is_hex(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i])) return 0;
  return 1;
}

/* Parses one line (without its newline) into r: 1 if it is a valid record, 0 if not. */
static int parse_line(rcl_tcache_record *r, const char *line, size_t len) {
  if (len < 20 || line[0] != 'R' || line[1] != ' ' || line[18] != ' ' || !is_hex(line + 2, 16)) return 0;
  const char *body = line + 19;
  size_t blen = len - 19;
  char sum[17];
  checksum(sum, body, blen);
  if (memcmp(sum, line + 2, 16) != 0) return 0;
  memset(r, 0, sizeof *r);
  /* The comment: everything after the first " # ". */
  const char *hash = NULL;
  for (size_t i = 0; i + 2 < blen; i++)
    if (body[i] == ' ' && body[i + 1] == '#' && body[i + 2] == ' ') {
      hash = body + i;
      break;
    }
  size_t klen = hash ? (size_t)(hash - body) : blen;
  if (hash) {
    size_t cl = blen - klen - 3;
    if (cl >= sizeof r->comment) cl = sizeof r->comment - 1;
    memcpy(r->comment, hash + 3, cl);
  }
  unsigned seen = 0;
  int in_params = 0;
  size_t plen = 0;
  for (size_t i = 0; i < klen;) {
    while (i < klen && body[i] == ' ') i++;
    size_t s = i;
    while (i < klen && body[i] != ' ') i++;
    if (i == s) break;
    const char *tok = body + s;
    size_t tl = i - s;
    if (tl == 1 && tok[0] == ':') {
      if (in_params) return 0;
      in_params = 1;
      continue;
    }
    const char *eq = memchr(tok, '=', tl);
    if (!eq) return 0;
    size_t nl = (size_t)(eq - tok), vl = tl - nl - 1;
    const char *v = eq + 1;
    if (in_params) {
      char name[32], val[32];
      if (!take(name, sizeof name, tok, nl) || !take(val, sizeof val, v, vl)) return 0;
      if (plen + tl + 2 >= sizeof r->params) return 0;
      plen += (size_t)snprintf(r->params + plen, sizeof r->params - plen, "%s%s=%s", plen ? " " : "", name, val);
      continue;
    }
#define KEY(str, bit, ok)                                                                                              \
  if (nl == strlen(str) && !strncmp(tok, str, nl)) {                                                                   \
    if (!(ok)) return 0;                                                                                               \
    seen |= 1u << (bit);                                                                                               \
    continue;                                                                                                          \
  }
    KEY("fp", 0, vl == 64 && is_hex(v, 64) && take(r->fingerprint, sizeof r->fingerprint, v, vl))
    KEY("lib", 1, take(r->lib, sizeof r->lib, v, vl))
    KEY("schema", 2, take_uint(&r->schema, v, vl))
    KEY("kernel", 3, take(r->kernel, sizeof r->kernel, v, vl))
    KEY("src", 4, vl == 16 && is_hex(v, 16) && take(r->src, sizeof r->src, v, vl))
    KEY("opts", 5, vl == 16 && is_hex(v, 16) && take(r->opts, sizeof r->opts, v, vl))
    KEY("contract", 6, take_uint(&r->contract, v, vl))
    KEY("dtype", 7, take(r->dtype, sizeof r->dtype, v, vl))
    KEY("size", 8, vl > 2 && v[0] == '2' && v[1] == '^' && take_uint(&r->bucket, v + 2, vl - 2) && r->bucket < 64)
#undef KEY
    return 0; /* an unknown key field: a record of another schema */
  }
  return in_params && seen == 0x1ffu && plen > 0;
}

int rcl__tcache_parse(rcl_tcache_record **recs, size_t *count, size_t *skipped, const char *text, size_t size) {
  *recs = NULL;
  *count = 0;
  *skipped = 0;
  if (size == 0) return 0;
  size_t cap = 0, n = 0;
  rcl_tcache_record *list = NULL;
  const char *end = text + size, *p = text;
  /* The header must be the first line and name this format; otherwise nothing in the file is ours. */
  const char *nl = memchr(p, '\n', (size_t)(end - p));
  size_t hl = nl ? (size_t)(nl - p) : (size_t)(end - p);
  int ok_header = hl == strlen(HEADER_LINE) + 1 && !strncmp(p, HEADER_LINE, strlen(HEADER_LINE)) &&
                  p[strlen(HEADER_LINE)] == '0' + RCL_TCACHE_FORMAT;
  p = nl ? nl + 1 : end;
  while (p < end) {
    nl = memchr(p, '\n', (size_t)(end - p));
    size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
    const char *line = p;
    p = nl ? nl + 1 : end;
    if (ll == 0 || line[0] == '#') continue;
    rcl_tcache_record r;
    if (!ok_header || !parse_line(&r, line, ll)) {
      (*skipped)++;
      continue;
    }
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 32;
      rcl_tcache_record *g = rcl__realloc(list, nc * sizeof *g);
      if (!g) {
        rcl__free(list);
        return RCL_ERR_OUT_OF_MEMORY;
      }
      list = g;
      cap = nc;
    }
    /* A later record of the same key wins (the file is rewritten without duplicates anyway). */
    size_t j = 0;
    while (j < n && !rcl__tcache_same_key(&list[j], &r)) j++;
    list[j] = r;
    if (j == n) n++;
  }
  if (!ok_header && *skipped == 0 && size > 0) *skipped = 1; /* a header-only foreign file */
  *recs = list;
  *count = n;
  return 0;
}

static char *path_in(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = rcl__malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

int rcl__tcache_read(rcl_tcache_record **recs, size_t *count, size_t *skipped, const char *dir) {
  *recs = NULL;
  *count = *skipped = 0;
  char *path = path_in(dir, RCL_TCACHE_FILE);
  if (!path) return RCL_ERR_OUT_OF_MEMORY;
  char *text;
  size_t size;
  int rc = rcl__cache_read_file(&text, &size, path);
  rcl__free(path);
  if (rc == RCL_ERR_NOT_FOUND) return 0;
  if (rc) return rc;
  rc = rcl__tcache_parse(recs, count, skipped, text, size);
  rcl__free(text);
  return rc;
}

/* fcntl record locks are per process: threads of one process are kept apart by this mutex. */
static pthread_mutex_t merge_lock = PTHREAD_MUTEX_INITIALIZER;

/* Takes the lock file's write lock, waiting at most ~60 s (polled every 1 to 20 ms: a holder keeps it for one
 * read-merge-write, milliseconds, and a holder that dies releases it; 60 s covers a queue of writers on a loaded
 * machine, which 5 s did not: 16 writers under ASan at load 12 lost 2 of 320 records). Returns the fd (to close,
 * which releases it), or -1 when the lock cannot be had: the caller then goes on without it (the rename keeps
 * the file whole; at worst a concurrent record is lost), so a lock can never disable caching. */
static int lock_file(const char *dir) {
  char *path = path_in(dir, RCL_TCACHE_LOCK);
  if (!path) return -1;
  int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  rcl__free(path);
  if (fd < 0) return -1;
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long wait_ms = 1;; wait_ms = wait_ms < 20 ? wait_ms * 2 : 20) {
    if (fcntl(fd, F_SETLK, &fl) == 0) return fd;
    if (errno != EACCES && errno != EAGAIN && errno != EINTR) break; /* e.g. ENOLCK on some NFS */
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - t0.tv_sec >= 60) break;
    struct timespec ts = {0, wait_ms * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  close(fd);
  return -1;
}

int rcl__tcache_merge(const char *dir, const rcl_tcache_record *add, size_t nadd, const char *remove_fp,
                      size_t *removed) {
  if (removed) *removed = 0;
  int rc = rcl__cache_dir_writable(dir);
  if (rc) return rc;
  pthread_mutex_lock(&merge_lock);
  int lfd = lock_file(dir);
  rcl_tcache_record *old = NULL;
  size_t nold = 0, skipped = 0;
  char *out = NULL;
  rc = rcl__tcache_read(&old, &nold, &skipped, dir);
  if (rc == RCL_ERR_IO || rc == RCL_ERR_PARSE) { /* an unreadable file is replaced, not fatal */
    rc = 0;
    old = NULL;
    nold = 0;
  }
  size_t cap = 0, len = 0, nkeep = 0;
  if (!rc) {
    cap = sizeof header + (nold + nadd) * 1100 + 1;
    out = rcl__malloc(cap);
    if (!out) rc = RCL_ERR_OUT_OF_MEMORY;
  }
  if (!rc) {
    memcpy(out, header, sizeof header - 1);
    len = sizeof header - 1;
    for (size_t i = 0; i < nold + nadd && !rc; i++) {
      const rcl_tcache_record *r = i < nold ? &old[i] : &add[i - nold];
      if (i < nold) {
        if (remove_fp && (!strcmp(remove_fp, "*") || !strcmp(remove_fp, r->fingerprint))) {
          if (removed) (*removed)++;
          continue;
        }
        int replaced = 0;
        for (size_t j = 0; j < nadd && !replaced; j++) replaced = rcl__tcache_same_key(r, &add[j]);
        if (replaced) continue;
      }
      rc = rcl__tcache_format(out + len, cap - len - 1, r);
      if (!rc) {
        len += strlen(out + len);
        out[len++] = '\n';
        nkeep++;
      }
    }
  }
  if (!rc) rc = rcl__cache_write_atomic(dir, RCL_TCACHE_FILE, out, len);
  if (lfd >= 0) close(lfd);
  pthread_mutex_unlock(&merge_lock);
  rcl__free(out);
  rcl__free(old);
  return rc;
}

/* ---- clearing (both caches: the tuning records here, the program binaries of binary_cache.c) ---------- */

int rcl_cache_clear(const char *dir, const char *fingerprint, size_t *removed) {
  if (!dir) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_cache_clear: NULL directory");
  size_t n = 0;
  struct stat st;
  if (stat(dir, &st) != 0) {
    if (removed) *removed = 0;
    return 0; /* nothing cached */
  }
  int rc = rcl__tcache_merge(dir, NULL, 0, fingerprint ? fingerprint : "*", &n);
  if (!rc && !fingerprint) {
    /* Temporary files of writers that were killed mid-write (.tuning-1.txt.XXXXXX). */
    DIR *td = opendir(dir);
    struct dirent *e;
    while (td && (e = readdir(td)) != NULL) {
      if (strncmp(e->d_name, "." RCL_TCACHE_FILE ".", sizeof RCL_TCACHE_FILE + 1) != 0) continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      if (unlink(path) == 0) n++;
    }
    if (td) closedir(td);
  }
  if (!rc && !fingerprint) rcl__binary_clear(dir, &n);
  if (removed) *removed = n;
  return rc;
}
