/* The tuning cache file (tune_cache.c): records, their text form, reading and merging under a lock.
 * Not installed. */
#ifndef REPROCL_TUNE_TUNE_CACHE_H
#define REPROCL_TUNE_TUNE_CACHE_H
#include <stddef.h>

#include "core/error.h"

#define RCL_TCACHE_FORMAT 1
#define RCL_TCACHE_SCHEMA 1
#define RCL_TCACHE_FILE "tuning-1.txt"
#define RCL_TCACHE_LOCK "tuning-1.lock"

/* One record: the key fields, the chosen values (as text "name=value ..."), and the comment. */
typedef struct {
  char fingerprint[65];
  char lib[16];
  unsigned schema;
  char kernel[48];
  char src[17];  /* first 16 hex digits of the SHA-256 of the program source (prelude included) */
  char opts[17]; /* first 16 hex digits of the SHA-256 of the build options */
  unsigned contract;
  char dtype[8];
  unsigned bucket;
  char params[256];  /* "local_size=256 groups_per_cu=32 variant=ndrange" */
  char comment[320]; /* "time=1.2ms spread=3% samples=7 default=1.5ms tuned-in=0.8s device=\"...\"" */
} rcl_tcache_record;

/* Whether two records have the same key (every field but params and comment). */
RCL_INTERNAL int rcl__tcache_same_key(const rcl_tcache_record *a, const rcl_tcache_record *b);
/* One record as a line (with its checksum, without the newline). */
RCL_INTERNAL int rcl__tcache_format(char *line, size_t size, const rcl_tcache_record *r);
/* Parses a file's text: every valid record (*skipped counts corrupt, truncated or foreign ones). A file
 * whose header is missing or names another format yields no records (skipped = its lines). */
RCL_INTERNAL int rcl__tcache_parse(rcl_tcache_record **recs, size_t *count, size_t *skipped, const char *text,
                                   size_t size);
/* Reads dir's cache file (a missing file is no records). */
RCL_INTERNAL int rcl__tcache_read(rcl_tcache_record **recs, size_t *count, size_t *skipped, const char *dir);
/* Merges recs into dir's cache file: under the lock file (flock, released by the kernel when a process
 * dies, so a killed writer never leaves a stale lock; after a bounded wait it goes on unlocked), reads
 * the file, replaces records of the same key, drops corrupt lines, writes a temporary file in dir,
 * fsyncs and renames it over the file. remove_fp (optional) drops every record of that fingerprint
 * ("*": all) instead of adding. The old file is intact on any failure. */
RCL_INTERNAL int rcl__tcache_merge(const char *dir, const rcl_tcache_record *recs, size_t count, const char *remove_fp,
                                   size_t *removed);

#endif
