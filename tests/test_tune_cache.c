/* The on-disk tuning cache and its directory: round trip, corrupt / truncated / wrong-version files, a
 * read-only directory, a full disk, 16 processes writing at once, a writer killed with SIGKILL (no
 * stale lock, a loadable file), symlink refusal, the location rules, the device fingerprint (a driver
 * upgrade is a miss) and the platform files. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "build/cache_dir.h"
#include "context/registry.h"
#include "core/internal.h"
#include "tune/params.h"
#include "tune/platform.h"
#include "tune/tune.h"
#include "tune/tune_cache.h"

static char *tmpdir(const char *tag) {
  char *p = malloc(256);
  snprintf(p, 256, "%s/tune-cache-%s-XXXXXX", REPROCL_BINARY_DIR, tag);
  ck_assert_ptr_nonnull(mkdtemp(p));
  return p;
}

static void rm_rf(const char *path) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "chmod -R u+w '%s' 2>/dev/null; rm -rf '%s'", path, path);
  ck_assert_int_eq(system(cmd), 0);
}

static rcl_tcache_record rec(unsigned i) {
  rcl_tcache_record r;
  memset(&r, 0, sizeof r);
  snprintf(r.fingerprint, sizeof r.fingerprint, "%064x", i % 3);
  snprintf(r.lib, sizeof r.lib, "0.1.0");
  r.schema = RCL_TCACHE_SCHEMA;
  snprintf(r.kernel, sizeof r.kernel, "reduce.k%u", i);
  snprintf(r.src, sizeof r.src, "%016x", i * 7u);
  snprintf(r.opts, sizeof r.opts, "%016x", i * 13u);
  r.contract = 1;
  snprintf(r.dtype, sizeof r.dtype, "f32");
  r.bucket = 10 + i % 20;
  snprintf(r.params, sizeof r.params, "local_size=%u variant=ndrange", 32u << (i % 5));
  snprintf(r.comment, sizeof r.comment, "time=%u.5ms samples=7 device=\"test # device %u\"", i, i);
  return r;
}

static int has(const rcl_tcache_record *recs, size_t n, const rcl_tcache_record *want) {
  for (size_t i = 0; i < n; i++)
    if (rcl__tcache_same_key(&recs[i], want) && !strcmp(recs[i].params, want->params) &&
        !strcmp(recs[i].comment, want->comment))
      return 1;
  return 0;
}

static void write_text(const char *dir, const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

static char *read_text(const char *dir, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  char *t;
  size_t n;
  if (rcl__cache_read_file(&t, &n, path) != 0) return NULL;
  return t;
}

START_TEST(round_trip) {
  char *d = tmpdir("rt");
  rcl_tcache_record in[5];
  for (unsigned i = 0; i < 5; i++) in[i] = rec(i);
  rt_ok(rcl__tcache_merge(d, in, 3, NULL, NULL));
  rt_ok(rcl__tcache_merge(d, in + 3, 2, NULL, NULL));
  /* A record with an existing key replaces it. */
  rcl_tcache_record upd = in[1];
  snprintf(upd.params, sizeof upd.params, "local_size=1024 variant=task");
  rt_ok(rcl__tcache_merge(d, &upd, 1, NULL, NULL));
  rcl_tcache_record *out;
  size_t n, skipped;
  rt_ok(rcl__tcache_read(&out, &n, &skipped, d));
  ck_assert_uint_eq(n, 5);
  ck_assert_uint_eq(skipped, 0);
  for (unsigned i = 0; i < 5; i++) ck_assert_msg(has(out, n, i == 1 ? &upd : &in[i]), "record %u lost or changed", i);
  free(out);
  /* The text is one readable line per record under the header. */
  char *text = read_text(d, RCL_TCACHE_FILE);
  ck_assert_ptr_nonnull(text);
  ck_assert_msg(!strncmp(text, "reprocl-tuning-cache 1\n", 23), "header: %.40s", text);
  ck_assert_ptr_nonnull(strstr(text, "kernel=reduce.k3 "));
  ck_assert_ptr_nonnull(strstr(text, ": local_size=1024 variant=task # time=1.5ms"));
  free(text);
  /* The public listing agrees, filtered by fingerprint. */
  rcl_cache_entry *list;
  rt_ok(rcl_cache_list(&list, &n, &skipped, d, in[0].fingerprint));
  ck_assert_uint_eq(n, 2); /* records 0 and 3 have fingerprint 0 */
  free(list);
  /* Clearing one fingerprint keeps the others. */
  size_t removed;
  rt_ok(rcl_cache_clear(d, in[0].fingerprint, &removed));
  ck_assert_uint_eq(removed, 2);
  rt_ok(rcl_cache_list(&list, &n, &skipped, d, NULL));
  ck_assert_uint_eq(n, 3);
  free(list);
  rm_rf(d);
  free(d);
}
END_TEST

START_TEST(corrupt_truncated_and_wrong_version) {
  char *d = tmpdir("bad");
  rcl_tcache_record good[3] = {rec(1), rec(2), rec(3)};
  char l0[1200], l1[1200], l2[1200];
  rt_ok(rcl__tcache_format(l0, sizeof l0, &good[0]));
  rt_ok(rcl__tcache_format(l1, sizeof l1, &good[1]));
  rt_ok(rcl__tcache_format(l2, sizeof l2, &good[2]));
  char flipped[1200];
  snprintf(flipped, sizeof flipped, "%s", l1);
  flipped[40] = flipped[40] == 'a' ? 'b' : 'a'; /* one character changed: checksum fails */
  char text[8000];
  /* good, flipped, garbage, good, and a record cut in the middle (a truncated file). */
  snprintf(text, sizeof text, "reprocl-tuning-cache 1\n%s\n%s\nthis is not a record\n%s\n%.*s", l0, flipped, l2,
           (int)strlen(l1) / 2, l1);
  write_text(d, RCL_TCACHE_FILE, text);
  rcl_tcache_record *out;
  size_t n, skipped;
  rt_ok(rcl__tcache_read(&out, &n, &skipped, d));
  ck_assert_uint_eq(n, 2);
  ck_assert_uint_eq(skipped, 3);
  ck_assert(has(out, n, &good[0]) && has(out, n, &good[2]));
  free(out);
  /* A merge keeps the good records, drops the bad lines, and adds. */
  rcl_tcache_record r9 = rec(9);
  rt_ok(rcl__tcache_merge(d, &r9, 1, NULL, NULL));
  rt_ok(rcl__tcache_read(&out, &n, &skipped, d));
  ck_assert_uint_eq(n, 3);
  ck_assert_uint_eq(skipped, 0);
  free(out);
  /* A file of another format version: nothing read from it, and a write replaces it (it is our name). */
  snprintf(text, sizeof text, "reprocl-tuning-cache 2\n%s\n", l0);
  write_text(d, RCL_TCACHE_FILE, text);
  rt_ok(rcl__tcache_read(&out, &n, &skipped, d));
  ck_assert_uint_eq(n, 0);
  ck_assert_uint_eq(skipped, 1);
  free(out);
  /* No header at all, an empty file, a binary file: no records, never an error. */
  write_text(d, RCL_TCACHE_FILE, l0);
  rt_ok(rcl__tcache_read(&out, &n, &skipped, d));
  ck_assert_uint_eq(n, 0);
  free(out);
  write_text(d, RCL_TCACHE_FILE, "");
  rt_ok(rcl__tcache_read(&out, &n, &skipped, d));
  ck_assert_uint_eq(n, 0);
  free(out);
  rt_ok(rcl__tcache_merge(d, &r9, 1, NULL, NULL));
  rt_ok(rcl__tcache_read(&out, &n, &skipped, d));
  ck_assert_uint_eq(n, 1);
  free(out);
  /* A record of an unknown schema (an extra key field) is skipped. */
  char odd[1300], body[1200];
  rt_ok(rcl__tcache_format(l0, sizeof l0, &good[0]));
  snprintf(body, sizeof body, "extra=1 %s", l0 + 19);
  char sum[RCL_SHA256_HEX_SIZE];
  rcl_sha256_hex(sum, body, strlen(body));
  snprintf(odd, sizeof odd, "reprocl-tuning-cache 1\nR %.16s %s\n", sum, body);
  rt_ok(rcl__tcache_parse(&out, &n, &skipped, odd, strlen(odd)));
  ck_assert_uint_eq(n, 0);
  ck_assert_uint_eq(skipped, 1);
  free(out);
  rm_rf(d);
  free(d);
}
END_TEST

/* Makes dir read-only for this process: a read-only tmpfs when we are root (root ignores mode bits),
 * else chmod. Returns 0 if it could not (the caller skips, saying why). */
static int make_read_only(const char *dir, int *mounted) {
  *mounted = 0;
  if (geteuid() != 0) return chmod(dir, 0555) == 0;
  char cmd[600];
  snprintf(cmd, sizeof cmd,
           "cp -a '%s' '%s.src' && mount -t tmpfs -o size=1m tmpfs '%s' 2>/dev/null && "
           "cp -a '%s.src/.' '%s/' && mount -o remount,ro '%s' 2>/dev/null",
           dir, dir, dir, dir, dir, dir);
  if (system(cmd) != 0) {
    snprintf(cmd, sizeof cmd, "umount '%s' 2>/dev/null; rm -rf '%s.src'", dir, dir);
    if (system(cmd) != 0) return 0;
    return 0;
  }
  *mounted = 1;
  return 1;
}

static void undo_read_only(const char *dir, int mounted) {
  char cmd[600];
  if (mounted)
    snprintf(cmd, sizeof cmd, "umount '%s' && rm -rf '%s.src'", dir, dir);
  else
    snprintf(cmd, sizeof cmd, "chmod 0700 '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}

START_TEST(read_only_directory) {
  char *d = tmpdir("ro");
  rcl_tcache_record r[2] = {rec(4), rec(5)};
  rt_ok(rcl__tcache_merge(d, r, 1, NULL, NULL));
  int mounted;
  if (!make_read_only(d, &mounted)) {
    rt_note("skip read_only_directory: cannot make a read-only directory here (root without mount rights)");
    rm_rf(d);
    free(d);
    return;
  }
  rcl_tcache_record *out;
  size_t n, skipped;
  rt_ok(rcl__tcache_read(&out, &n, &skipped, d)); /* read: yes */
  ck_assert_uint_eq(n, 1);
  free(out);
  rt_fails(rcl__tcache_merge(d, r + 1, 1, NULL, NULL), RCL_ERR_IO, d); /* write: never */
  rt_ok(rcl__tcache_read(&out, &n, &skipped, d));
  ck_assert_uint_eq(n, 1);
  ck_assert(has(out, n, &r[0]));
  free(out);
  /* A context on it reads, tunes in memory, and says why nothing was written (once, never printed). */
  if (rt_ndevices() > 0) {
    rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
    o.device = "0";
    o.cache_dir = d;
    o.tuning = RCL_TUNING_OFF;
    rcl_context *c;
    rt_ok(rcl_context_create(&c, &o));
    rcl_tune_report rep;
    rcl_tune_options to = RCL_TUNE_OPTIONS_INIT;
    to.budget_ms = 50;
    rt_ok(rcl_tune(&rep, c, "reduce.scal", RCL_F32, 1 << 16, &to));
    ck_assert_ptr_nonnull(rcl_cache_warning(c));
    ck_assert_msg(strstr(rcl_cache_warning(c), "read-only") || strstr(rcl_cache_warning(c), "Read-only"), "warning: %s",
                  rcl_cache_warning(c));
    rcl_tune_choice ch;
    rt_ok(rcl_tune_get(&ch, c, "reduce.scal", RCL_F32, 1 << 16));
    ck_assert_int_eq(ch.origin, RCL_TUNE_FROM_TUNING);
    rcl_context_free(c);
  }
  undo_read_only(d, mounted);
  rm_rf(d);
  free(d);
}
END_TEST

/* Many records, so that a write takes long enough to be interrupted. */
static void big_batch(rcl_tcache_record *r, size_t n, unsigned salt) {
  for (size_t i = 0; i < n; i++) {
    r[i] = rec((unsigned)i);
    snprintf(r[i].kernel, sizeof r[i].kernel, "reduce.p%u.k%zu", salt, i);
  }
}

START_TEST(disk_full) {
  char *d = tmpdir("full");
  rcl_tcache_record first = rec(1);
  rt_ok(rcl__tcache_merge(d, &first, 1, NULL, NULL));
  char *before = read_text(d, RCL_TCACHE_FILE);
  size_t nb = 3000;
  rcl_tcache_record *batch = malloc(nb * sizeof *batch);
  big_batch(batch, nb, 1);
  int mounted = 0;
  char cmd[700];
  if (geteuid() == 0) {
    /* A real full file system: a 64 KiB tmpfs holding the cache (the batch needs ~1.5 MB). */
    snprintf(cmd, sizeof cmd,
             "cp '%s/%s' '%s.keep' && mount -t tmpfs -o size=64k tmpfs '%s' 2>/dev/null && "
             "cp '%s.keep' '%s/%s'",
             d, RCL_TCACHE_FILE, d, d, d, d, RCL_TCACHE_FILE);
    mounted = system(cmd) == 0;
  }
  if (mounted) {
    int rc = rcl__tcache_merge(d, batch, nb, NULL, NULL);
    ck_assert_int_eq(rc, RCL_ERR_IO);
    ck_assert_msg(strstr(rcl_error_last(), "No space left") && strstr(rcl_error_last(), "unchanged"), "%s",
                  rcl_error_last());
  } else {
    /* No mount rights: a file-size limit makes the same write fail (EFBIG) in a child process. */
    rt_note("disk_full: no tmpfs mount rights; simulating the failed write with RLIMIT_FSIZE");
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
      signal(SIGXFSZ, SIG_IGN);
      struct rlimit rl = {65536, 65536};
      setrlimit(RLIMIT_FSIZE, &rl);
      int rc = rcl__tcache_merge(d, batch, nb, NULL, NULL);
      _exit(rc == RCL_ERR_IO && strstr(rcl_error_last(), "unchanged") ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the failed write was not reported as RCL_ERR_IO");
  }
  /* The old file is intact, and no temporary file is left behind. */
  char *after = read_text(d, RCL_TCACHE_FILE);
  ck_assert_ptr_nonnull(after);
  ck_assert_str_eq(before, after);
  snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -c '^\\.' >/dev/null && exit 1 || exit 0", d);
  ck_assert_msg(system(cmd) == 0, "a temporary file was left in %s", d);
  if (mounted) {
    snprintf(cmd, sizeof cmd, "umount '%s' && rm -f '%s.keep'", d, d);
    ck_assert_int_eq(system(cmd), 0);
  }
  free(before);
  free(after);
  free(batch);
  rm_rf(d);
  free(d);
}
END_TEST

START_TEST(sixteen_writers) {
  char *d = tmpdir("16");
  enum { P = 16, R = 20 };
  pid_t pids[P];
  for (int p = 0; p < P; p++) {
    pids[p] = fork();
    ck_assert_int_ge(pids[p], 0);
    if (pids[p] == 0) {
      int bad = 0;
      for (int r = 0; r < R; r++) { /* one record per merge: 20 read-merge-writes per process */
        rcl_tcache_record x = rec((unsigned)(p * R + r));
        snprintf(x.kernel, sizeof x.kernel, "reduce.p%d.r%d", p, r);
        bad |= rcl__tcache_merge(d, &x, 1, NULL, NULL) != 0;
      }
      _exit(bad);
    }
  }
  for (int p = 0; p < P; p++) {
    int st;
    waitpid(pids[p], &st, 0);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer %d failed", p);
  }
  rcl_tcache_record *out;
  size_t n, skipped;
  rt_ok(rcl__tcache_read(&out, &n, &skipped, d));
  ck_assert_uint_eq(skipped, 0);
  ck_assert_msg(n == P * R, "%zu of %d records survived 16 concurrent writers", n, P * R);
  free(out);
  rm_rf(d);
  free(d);
}
END_TEST

START_TEST(killed_writer) {
  char *d = tmpdir("kill");
  size_t nb = 4000;
  rcl_tcache_record *batch = malloc(nb * sizeof *batch);
  big_batch(batch, nb, 2);
  rt_ok(rcl__tcache_merge(d, batch, nb, NULL, NULL));
  /* How long an uncontended merge of this file takes: a stale lock would add its 5 s wait to it. */
  struct timespec b0, b1;
  clock_gettime(CLOCK_MONOTONIC, &b0);
  rcl_tcache_record y = rec(78);
  rt_ok(rcl__tcache_merge(d, &y, 1, NULL, NULL));
  clock_gettime(CLOCK_MONOTONIC, &b1);
  double base = (double)(b1.tv_sec - b0.tv_sec) + 1e-9 * (double)(b1.tv_nsec - b0.tv_nsec);
  srand(12345);
  for (int round = 0; round < 8; round++) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) { /* rewrite the whole file again and again until killed */
      for (unsigned salt = 3;; salt++) {
        big_batch(batch, nb, salt % 2 ? 2 : 3);
        rcl__tcache_merge(d, batch, nb, NULL, NULL);
      }
    }
    struct timespec ts = {0, (long)(rand() % 150 + 20) * 1000000L};
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL); /* likely in the middle of a write, holding the lock */
    waitpid(pid, NULL, 0);
    rcl_tcache_record *out;
    size_t n, skipped;
    rt_ok(rcl__tcache_read(&out, &n, &skipped, d));
    ck_assert_uint_eq(skipped, 0);
    ck_assert_msg(n >= nb, "round %d: %zu records after a kill", round, n);
    free(out);
    /* The dead writer's lock is gone: the next merge does not wait for it. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rcl_tcache_record x = rec(77);
    rt_ok(rcl__tcache_merge(d, &x, 1, NULL, NULL));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    ck_assert_msg(s < base + 3.0, "a merge after a killed writer took %.2f s, %.2f s uncontended (stale lock?)", s,
                  base);
  }
  /* Temporaries of killed writers are removed by clear. */
  size_t removed;
  rt_ok(rcl_cache_clear(d, NULL, &removed));
  char cmd[600];
  snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -q '^\\.tuning' && exit 1 || exit 0", d);
  ck_assert_msg(system(cmd) == 0, "temporary files left in %s after clear", d);
  free(batch);
  rm_rf(d);
  free(d);
}
END_TEST

START_TEST(symlink_refusal) {
  char *d = tmpdir("sym");
  char target[300], link[300], cmd[800];
  snprintf(target, sizeof target, "%s/other", d);
  snprintf(link, sizeof link, "%s/cache", d);
  ck_assert_int_eq(mkdir(target, 0755), 0);
  uid_t other = geteuid() == 0 ? 65534 : 0;
  if (geteuid() == 0) {
    ck_assert_int_eq(chown(target, other, other), 0);
  } else {
    snprintf(target, sizeof target, "/"); /* owned by root, not by us */
  }
  ck_assert_int_eq(symlink(target, link), 0);
  rcl_tcache_record r = rec(1);
  rt_fails(rcl__tcache_merge(link, &r, 1, NULL, NULL), RCL_ERR_IO, "not by this user");
  rt_fails(rcl__cache_dir_writable(link), RCL_ERR_IO, "owned by uid");
  ck_assert(!rcl__cache_dir_trusted(link));
  snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", target);
  ck_assert_msg(geteuid() != 0 || system(cmd) == 0, "something was written into %s", target);
  /* A symlink to a directory of our own is fine. */
  char mine[300], link2[300];
  snprintf(mine, sizeof mine, "%s/mine", d);
  snprintf(link2, sizeof link2, "%s/cache2", d);
  ck_assert_int_eq(mkdir(mine, 0700), 0);
  ck_assert_int_eq(symlink(mine, link2), 0);
  rt_ok(rcl__tcache_merge(link2, &r, 1, NULL, NULL));
  /* A directory writable by everyone without the sticky bit is refused too. */
  char open_dir[300];
  snprintf(open_dir, sizeof open_dir, "%s/open", d);
  ck_assert_int_eq(mkdir(open_dir, 0700), 0);
  ck_assert_int_eq(chmod(open_dir, 0777), 0);
  rt_fails(rcl__tcache_merge(open_dir, &r, 1, NULL, NULL), RCL_ERR_IO, "writable by other users");
  rm_rf(d);
  free(d);
}
END_TEST

static void set_or_unset(const char *name, const char *value) {
  if (value)
    setenv(name, value, 1);
  else
    unsetenv(name);
}

START_TEST(location_rules) {
  char *saved[3];
  const char *names[3] = {"REPROCL_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
  for (int i = 0; i < 3; i++) saved[i] = getenv(names[i]) ? strdup(getenv(names[i])) : NULL;
  char *dir, *why;
  set_or_unset("REPROCL_CACHE_DIR", "/tmp/a");
  set_or_unset("XDG_CACHE_HOME", "/tmp/x");
  set_or_unset("HOME", "/tmp/h");
  rt_ok(rcl_cache_default_dir(&dir, &why));
  ck_assert_str_eq(dir, "/tmp/a");
  free(dir);
  free(why);
  unsetenv("REPROCL_CACHE_DIR");
  rt_ok(rcl_cache_default_dir(&dir, &why));
  ck_assert_str_eq(dir, "/tmp/x/reprocl");
  free(dir);
  free(why);
  setenv("XDG_CACHE_HOME", "relative/ignored", 1);
  rt_ok(rcl_cache_default_dir(&dir, &why));
  ck_assert_str_eq(dir, "/tmp/h/.cache/reprocl");
  free(dir);
  free(why);
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  rt_ok(rcl_cache_default_dir(&dir, &why));
  ck_assert_ptr_null(dir);
  ck_assert_ptr_nonnull(strstr(why, "memory only"));
  free(why);
  /* A context without a directory works in memory and says so once. */
  if (rt_ndevices() > 0) {
    rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
    o.device = "0";
    o.tuning = RCL_TUNING_OFF;
    rcl_context *c;
    rt_ok(rcl_context_create(&c, &o));
    ck_assert_ptr_null(rcl_cache_dir(c));
    ck_assert_ptr_nonnull(strstr(rcl_cache_warning(c), "memory only"));
    rcl_tune_report rep;
    rcl_tune_options to = RCL_TUNE_OPTIONS_INIT;
    to.budget_ms = 50;
    rt_ok(rcl_tune(&rep, c, "reduce.scal", RCL_F32, 1 << 16, &to));
    rcl_tune_choice ch;
    rt_ok(rcl_tune_get(&ch, c, "reduce.scal", RCL_F32, 1 << 16));
    ck_assert_int_eq(ch.origin, RCL_TUNE_FROM_TUNING);
    rcl_context_free(c);
  }
  for (int i = 0; i < 3; i++) {
    set_or_unset(names[i], saved[i]);
    free(saved[i]);
  }
}
END_TEST

/* The fingerprint covers every identity field: a driver upgrade (or any of the others) is a new key. */
START_TEST(fingerprint_fields) {
  rcl_context *c = rt_ctx(_i);
  const rcl_device_profile *p = rcl_context_profile(c);
  rcl_device_profile q = *p;
  rcl__profile_fingerprint(&q);
  ck_assert_str_eq(q.fingerprint, p->fingerprint);
  char *fields[] = {q.platform_name, q.platform_version, q.device_vendor,
                    q.device_name,   q.driver_version,   q.device_version};
  for (int f = 0; f < 7; f++) {
    rcl_device_profile m = *p;
    char *mf[] = {m.platform_name, m.platform_version, m.device_vendor,
                  m.device_name,   m.driver_version,   m.device_version};
    if (f < 6)
      strcat(mf[f], "+1");
    else
      m.compute_units++;
    rcl__profile_fingerprint(&m);
    ck_assert_msg(strcmp(m.fingerprint, p->fingerprint) != 0, "field %d is not in the fingerprint", f);
  }
  (void)fields;
}
END_TEST

/* A record made for the same device with another driver version is a miss, not an error or a stale hit;
 * the same record with this driver's fingerprint is a hit. A changed kernel source is a miss too. */
START_TEST(driver_upgrade_is_a_miss) {
  if (!rt_supported(_i, RCL_FAMILY_REDUCE, RCL_F32)) return;
  char *d = tmpdir("drv");
  char spec[16];
  snprintf(spec, sizeof spec, "%d", _i);
  rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
  o.device = spec;
  o.cache_dir = d;
  o.tuning = RCL_TUNING_OFF;
  rcl_context *c;
  rt_ok(rcl_context_create(&c, &o));
  /* Pin a distinctive choice, export it as a record of this device. */
  rcl_tune_choice ch;
  rt_ok(rcl_tune_get(&ch, c, "reduce.sum.ordered", RCL_F32, 1 << 20));
  ck_assert_int_eq(ch.origin, RCL_TUNE_FROM_DEFAULTS);
  for (size_t i = 0; i < ch.count; i++)
    if (!strcmp(ch.params[i].name, "groups_per_cu")) ch.params[i].value = 2;
  rt_ok(rcl_tune_set(c, &ch));
  char *text;
  rt_ok(rcl_tune_export(&text, c));
  rcl_context_free(c);
  rcl_tcache_record *recs;
  size_t n, skipped;
  rt_ok(rcl__tcache_parse(&recs, &n, &skipped, text, strlen(text)));
  ck_assert_uint_eq(n, 1);
  free(text);
  /* The same record under the fingerprint of an upgraded driver. */
  rcl_device_profile up = *rcl_context_profile(rt_ctx(_i));
  strcat(up.driver_version, ".1");
  rcl__profile_fingerprint(&up);
  rcl_tcache_record old = recs[0];
  memcpy(old.fingerprint, up.fingerprint, 65);
  rt_ok(rcl__tcache_merge(d, &old, 1, NULL, NULL));
  rt_ok(rcl_context_create(&c, &o));
  rt_ok(rcl_tune_get(&ch, c, "reduce.sum.ordered", RCL_F32, 1 << 20));
  ck_assert_int_eq(ch.origin, RCL_TUNE_FROM_DEFAULTS); /* a miss */
  rcl_context_free(c);
  /* This driver's record: a hit with the pinned value. */
  rt_ok(rcl__tcache_merge(d, &recs[0], 1, NULL, NULL));
  rt_ok(rcl_context_create(&c, &o));
  rt_ok(rcl_tune_get(&ch, c, "reduce.sum.ordered", RCL_F32, 1 << 20));
  ck_assert_int_eq(ch.origin, RCL_TUNE_FROM_CACHE);
  size_t gpc = 0;
  for (size_t i = 0; i < ch.count; i++)
    if (!strcmp(ch.params[i].name, "groups_per_cu")) gpc = ch.params[i].value;
  ck_assert_uint_eq(gpc, 2);
  rcl_context_free(c);
  /* A changed kernel source (REPROCL_KERNEL_DIR with an edited reduce.cl) is a miss. */
  char kdir[400], cmd[2000];
  snprintf(kdir, sizeof kdir, "%s/cl", d);
  snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s'/cl/*.cl '%s/' && echo '/* edited */' >> '%s/reduce.cl'", kdir,
           REPROCL_SOURCE_DIR, kdir, kdir);
  ck_assert_int_eq(system(cmd), 0);
  setenv("REPROCL_KERNEL_DIR", kdir, 1);
  rt_ok(rcl_context_create(&c, &o));
  rt_ok(rcl_tune_get(&ch, c, "reduce.sum.ordered", RCL_F32, 1 << 20));
  unsetenv("REPROCL_KERNEL_DIR");
  ck_assert_int_eq(ch.origin, RCL_TUNE_FROM_DEFAULTS);
  rcl_context_free(c);
  free(recs);
  rm_rf(d);
  free(d);
}
END_TEST

START_TEST(platform_files) {
  /* Every shipped file parses. */
  size_t nfiles = 0;
  for (const rcl_embedded_source *s = rcl_embedded_platforms; s->name; s++, nfiles++)
    rt_ok(rcl__platform_check(s->name, s->text, s->size));
  ck_assert_uint_ge(nfiles, 5);
  /* Bad files are refused with file:line and the problem. */
  static const struct {
    const char *text, *needle;
  } bad[] = {
      {"", "empty"},
      {"reprocl-platform 2\n", "x.conf:1: expected the header"},
      {"reprocl-platform 1\n[all]\n", "x.conf:2: a section before any 'match'"},
      {"reprocl-platform 1\nmatch color~red\n", "x.conf:2: unknown match key \"color\""},
      {"reprocl-platform 1\nmatch *\n[tpu]\n", "x.conf:3: unknown section [tpu]"},
      {"reprocl-platform 1\nmatch *\n[all]\nreduce.nope local_size=1\n", "x.conf:4: \"reduce.nope\" matches no"},
      {"reprocl-platform 1\nmatch *\n[all]\nreduce.axpy warp=32\n", "x.conf:4: reduce.axpy has no parameter \"warp\""},
      {"reprocl-platform 1\nmatch *\n[all]\nreduce.*.exact variant=gpu\n", "x.conf:4: variant=\"gpu\""},
      {"reprocl-platform 1\nmatch *\n[all]\nreduce.axpy local_size=-3\n", "x.conf:4:"},
      {"reprocl-platform 1\nmatch *\n[all]\nreduce.axpy\n", "x.conf:4: no parameters"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    rt_fails(rcl__platform_check("x.conf", bad[i].text, strlen(bad[i].text)), RCL_ERR_PARSE, bad[i].needle);
  if (rt_ndevices() == 0) return;
  /* Overrides: generic first, then matching vendor files; REPROCL_PLATFORM_DIR replaces the set. */
  const rcl_device_profile *p = rcl_context_profile(rt_ctx(0));
  const rcl_tune_kernel *k = rcl__tune_kernel_find("reduce.sum.ordered");
  size_t v[RCL_TUNE_MAX_PARAMS];
  const char *src;
  rt_ok(rcl__platform_defaults(v, &src, p, k));
  ck_assert_uint_ne(v[1], 0);
  char *d = tmpdir("plat");
  write_text(d, "generic.conf",
             "reprocl-platform 1\nmatch *\n[all]\nreduce.* local_size=128\n"
             "reduce.*.ordered groups_per_cu=3 variant=ndrange\n[accelerator]\nreduce.*.ordered variant=task\n");
  char over[512];
  snprintf(over, sizeof over, "reprocl-platform 1\nmatch device~%.*s\n[all]\nreduce.sum.* local_size=64\n", 6,
           p->device_name);
  write_text(d, "zz-this-device.conf", over);
  write_text(d, "other.conf", "reprocl-platform 1\nmatch vendor~no-such-vendor\n[all]\nreduce.* local_size=512\n");
  setenv("REPROCL_PLATFORM_DIR", d, 1);
  rt_ok(rcl__platform_defaults(v, &src, p, k));
  ck_assert_uint_eq(v[0], 1); /* ndrange: the device is no accelerator */
  ck_assert_uint_eq(v[1], 64);
  ck_assert_uint_eq(v[2], 3);
  ck_assert_str_eq(src, "zz-this-device.conf");
  rcl_device_profile fpga = *p;
  fpga.type = CL_DEVICE_TYPE_ACCELERATOR;
  rt_ok(rcl__platform_defaults(v, &src, &fpga, k));
  ck_assert_uint_eq(v[0], 2); /* the task variant on FPGAs */
  unsetenv("REPROCL_PLATFORM_DIR");
  /* The shipped files choose the task variant for accelerators too: for every kernel of every family that
   * has one (and a shipped value for each device class it names is a value of the parameter). */
  rt_ok(rcl__platform_defaults(v, &src, &fpga, k));
  ck_assert_uint_eq(v[0], 2);
  size_t with_task = 0;
  for (const rcl_tune_kernel *const *kp = rcl__tune_kernels; *kp; kp++) {
    int vi = rcl__tune_param_index(*kp, "variant");
    if (vi < 0) continue;
    size_t task = 0;
    rt_ok(rcl__tune_param_parse(&task, &(*kp)->params[vi], "task"));
    rt_ok(rcl__platform_defaults(v, &src, &fpga, *kp));
    ck_assert_msg(v[vi] == task, "%s: the shipped platform files give variant %zu on an FPGA, not task (%zu)",
                  (*kp)->name, v[vi], task);
    rt_ok(rcl__platform_defaults(v, &src, p, *kp));
    ck_assert_msg(v[vi] != task, "%s: the task variant is the default on %s", (*kp)->name, p->device_name);
    with_task++;
  }
  ck_assert_uint_ge(with_task, 6 + 4 + 4); /* reductions, stencils, SpMV */
  rm_rf(d);
  free(d);
}
END_TEST

/* Missing directories: reading a missing cache is no records and creates nothing; the first write creates
 * the directory and its missing parents (0700); a path that cannot be created (under a regular file)
 * (and reading it) is an error naming it, and a context on it computes in memory and says why. The binary cache follows
 * the same directory rules (rcl__cache_dir_writable). */
START_TEST(missing_directories) {
  char *d = tmpdir("missing");
  char deep[400], blocked[400], file[400];
  snprintf(deep, sizeof deep, "%s/a/b/c", d);
  rcl_tcache_record *out = (rcl_tcache_record *)1;
  size_t n = 7, skipped = 7;
  rt_ok(rcl__tcache_read(&out, &n, &skipped, deep));
  ck_assert(out == NULL && n == 0 && skipped == 0);
  struct stat st;
  ck_assert_msg(stat(deep, &st) != 0, "reading created %s", deep);
  rcl_tcache_record r = rec(3);
  rt_ok(rcl__tcache_merge(deep, &r, 1, NULL, NULL));
  ck_assert_int_eq(stat(deep, &st), 0);
  ck_assert_msg(S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700, "mode %o", (unsigned)st.st_mode);
  snprintf(file, sizeof file, "%s/a", d);
  ck_assert_int_eq(stat(file, &st), 0);
  ck_assert_msg((st.st_mode & 0777) == 0700, "parent mode %o", (unsigned)st.st_mode);
  rt_ok(rcl__tcache_read(&out, &n, &skipped, deep));
  ck_assert_uint_eq(n, 1);
  ck_assert(has(out, n, &r));
  free(out);
  /* under a regular file: cannot be created */
  write_text(d, "plain", "not a directory\n");
  snprintf(blocked, sizeof blocked, "%s/plain/sub", d);
  rt_fails(rcl__tcache_merge(blocked, &r, 1, NULL, NULL), RCL_ERR_IO, "plain");
  rt_fails(rcl__cache_dir_writable(blocked), RCL_ERR_IO, "plain");
  rt_fails(rcl__tcache_read(&out, &n, &skipped, blocked), RCL_ERR_IO, "Not a directory"); /* not "no cache" */
  if (rt_ndevices() > 0) {
    rcl_context_options o = RCL_CONTEXT_OPTIONS_INIT;
    o.device = "0";
    o.cache_dir = blocked;
    o.tuning = RCL_TUNING_OFF;
    rcl_context *c;
    rt_ok(rcl_context_create(&c, &o));
    rcl_tune_report rep;
    rcl_tune_options to = RCL_TUNE_OPTIONS_INIT;
    to.budget_ms = 50;
    rt_ok(rcl_tune(&rep, c, "reduce.scal", RCL_F32, 1 << 16, &to));
    ck_assert_msg(rcl_cache_warning(c) && strstr(rcl_cache_warning(c), "plain"), "warning: %s",
                  rcl_cache_warning(c) ? rcl_cache_warning(c) : "(none)");
    float x[4] = {1, 2, 3, 4}, sum = 0;
    rt_ok(rcl_sum_f32(&sum, c, x, 4, NULL)); /* the binary cache cannot write there either: built anyway */
    ck_assert(sum == 10.0f);
    rcl_context_free(c);
  }
  rm_rf(d);
  free(d);
}
END_TEST

int main(void) {
  Suite *s = suite_create("tune_cache");
  TCase *tc = tcase_create("files");
  tcase_add_test(tc, round_trip);
  tcase_add_test(tc, corrupt_truncated_and_wrong_version);
  tcase_add_test(tc, read_only_directory);
  tcase_add_test(tc, disk_full);
  tcase_add_test(tc, sixteen_writers);
  tcase_add_test(tc, killed_writer);
  tcase_add_test(tc, symlink_refusal);
  tcase_add_test(tc, location_rules);
  tcase_add_test(tc, missing_directories);
  tcase_add_test(tc, platform_files);
  suite_add_tcase(s, tc);
  rt_add_device_presence(s);
  TCase *td = tcase_create("devices");
  rt_add_device_loop(td, fingerprint_fields);
  rt_add_device_loop(td, driver_upgrade_is_a_miss);
  suite_add_tcase(s, td);
  return rt_run(s);
}
