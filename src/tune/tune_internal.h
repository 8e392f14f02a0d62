/* Internal interface of the autotuner (tune.c), its caches (cache_dir.c, tune_cache.c, binary_cache.c),
 * the platform defaults (platform.c) and the kernel families that plug into it. Not installed.
 *
 * A family plugs in by defining one rcl_tune_kernel per tunable operation (see docs/tuning.md, "Plugging a
 * family in"), listing it in rcl__tune_kernels[] (tune_registry.c), and asking rcl__tune_lookup() for
 * its launch parameters whenever the caller left one at 0. */
#ifndef REPROCL_TUNE_INTERNAL_H
#define REPROCL_TUNE_INTERNAL_H
#include "core/internal.h"

/* ---- the tunables of one kernel ------------------------------------------------------------------ */

/* One tunable parameter: its name (as in the family's options struct, used in the cache file, the
 * platform files and rcl_tune_choice) and its candidate values in the order they are tried. Enumerated
 * parameters (a variant) give a label per value; the value 0 is never a candidate (it means "default"). */
typedef struct {
  const char *name;
  const size_t *values;
  size_t count;
  const char *const *labels; /* NULL, or labels[i] names values[i] */
} rcl_tune_param_def;

/* A point of the search space: v[i] is the value of params[i]. eff[] is the launch the family would
 * really make for it (filled by check(): clamped sizes, ignored parameters zeroed); two candidates with
 * the same eff[] are the same launch and are timed once. */
typedef struct {
  size_t v[RCL_TUNE_MAX_PARAMS];
  size_t eff[RCL_TUNE_MAX_PARAMS];
  int is_default; /* the default configuration (set by the tuner): run() launches it as a call with nothing
                   * set would, where its launch cannot be written as explicit options */
} rcl_tune_point;

typedef struct rcl_tune_kernel rcl_tune_kernel;
struct rcl_tune_kernel {
  const char *name;          /* "reduce.sum.ordered": unique; the kernel part of every cache key */
  rcl_family family;         /* for the support check */
  const char *source;        /* its program files, "a.cl" or "a.cl,a_task.cl": their text and the prelude's
                              * are hashed into the key; bundles hold each for every supported dtype */
  const char *defines;       /* extra defines of its program (as passed to rcl__program_get), or NULL */
  unsigned contract_version; /* the contract's version: a new contract is a cache miss */
  size_t min_tune_n;         /* problems below this size use the defaults, never tuned on first use */
  size_t tune_n;             /* the problem size `reprocl tune` tunes by default */
  size_t nparams;
  const rcl_tune_param_def *params;
  /* Sets up a tuning problem of n elements: builds the programs, allocates scratch buffers and fills
   * them with deterministic data (never the caller's buffers: in-place kernels are tuned on copies). */
  int (*setup)(void **state, rcl_context *ctx, rcl_dtype dtype, size_t n);
  /* The validity predicate, evaluated after the programs are built (CL_KERNEL_WORK_GROUP_SIZE, local
   * memory, maximum work-item sizes): 1 if p can launch, with p->eff set to the launch it makes; 0 if
   * not (why says so; it is never launched); or a negative rcl_status. For the default point
   * (is_default) values are soft, as at a call without explicit parameters: clamped rather than refused,
   * and a 0 in p->v replaced by the value the family falls back to. */
  int (*check)(void *state, rcl_tune_point *p, int is_default, char *why, size_t why_size);
  /* Restores on q the scratch inputs an in-place kernel overwrote (untimed); may be NULL. */
  int (*prepare)(void *state, cl_command_queue q);
  /* Enqueues the operation with p on q through rcl__chain_* (the tuner times from the first chained
   * command's start to the last one's end with profiling events). Does not wait. */
  int (*run)(void *state, const rcl_tune_point *p, cl_command_queue q);
  /* SHA-256 (hex) of the output bytes of the last run, read on q. */
  int (*digest)(void *state, cl_command_queue q, char hex[RCL_SHA256_HEX_SIZE]);
  void (*teardown)(void *state);
};

/* Every tunable kernel of the library, NULL-terminated (tune_registry.c). */
extern const rcl_tune_kernel *const rcl__tune_kernels[];
/* Programs built beyond the descriptors' (file, defines), for bundles; terminated by file NULL. */
typedef struct {
  rcl_family family;
  const char *file;
  const char *defines;
} rcl_bundle_program;
extern const rcl_bundle_program rcl__bundle_extra_programs[];
RCL_INTERNAL const rcl_tune_kernel *rcl__tune_kernel_find(const char *name);
/* Index of a parameter by name, or -1. */
RCL_INTERNAL int rcl__tune_param_index(const rcl_tune_kernel *k, const char *name);
/* Parses a parameter value: a number or one of its labels. */
RCL_INTERNAL int rcl__tune_param_parse(size_t *out, const rcl_tune_param_def *p, const char *text);
/* Formats a value: its label if it has one, else the number. */
RCL_INTERNAL const char *rcl__tune_param_format(char *buf, size_t size, const rcl_tune_param_def *p, size_t value);

/* The problem-size bucket of n: floor(log2(n)) (0 for n <= 1). */
RCL_INTERNAL unsigned rcl__tune_bucket(size_t n);

/* The launch parameters for k on ctx at problem size n: a value per parameter (0 where neither a pin,
 * a cached or tuned result nor the platform files give one: the family's own fallback). Tunes first when
 * the context's mode says so (on: once per kernel, dtype and bucket unless cached; force: once per
 * context). Never fails because tuning or a cache failed: those fall back to the defaults, and the
 * problem is kept for rcl_cache_warning(). */
RCL_INTERNAL int rcl__tune_lookup(size_t values[RCL_TUNE_MAX_PARAMS], rcl_context *ctx, const rcl_tune_kernel *k,
                                  rcl_dtype dtype, size_t n);

/* The same values without ever tuning (what rcl_tune_get reports): for "which configuration would a call
 * use" queries that must not spend a tuning budget. */
RCL_INTERNAL int rcl__tune_peek(size_t values[RCL_TUNE_MAX_PARAMS], rcl_context *ctx, const rcl_tune_kernel *k,
                                rcl_dtype dtype, size_t n);

/* ---- timing capture (launch.c) ------------------------------------------------------------------- */
/* While a capture is active on a thread, rcl__chain_kernel/_fill retain the first and last event they
 * create, so the tuner can time a whole multi-launch operation from its first start to its last end. */
typedef struct {
  cl_event first, last;
  unsigned count;
} rcl_capture;
RCL_INTERNAL void rcl__capture_begin(rcl_capture *c);
RCL_INTERNAL void rcl__capture_end(rcl_capture *c); /* stops capturing; c keeps its events */
RCL_INTERNAL void rcl__capture_release(rcl_capture *c);

/* ---- platform defaults (platform.c) -------------------------------------------------------------- */
/* The defaults of the platform files (platforms/ *.conf, embedded; $REPROCL_PLATFORM_DIR overrides) for
 * kernel k on the device of profile p: values[i] = 0 where no file sets params[i]. *source (optional)
 * names the last file that set a value ("generic.conf", "nvidia.conf", or "" when none did). */
RCL_INTERNAL int rcl__platform_defaults(size_t values[RCL_TUNE_MAX_PARAMS], const char **source,
                                        const rcl_device_profile *p, const rcl_tune_kernel *k);
extern const rcl_embedded_source rcl_embedded_platforms[]; /* generated; NULL-terminated */
/* Parses one platform file (for the test of every shipped file); errors name file:line. */
RCL_INTERNAL int rcl__platform_check(const char *name, const char *text, size_t size);

/* ---- cache location and safety (cache_dir.c) ----------------------------------------------------- */
/* The cache directory: configured (the context's cache_dir), else $REPROCL_CACHE_DIR, else
 * $XDG_CACHE_HOME/reprocl, else $HOME/.cache/reprocl. *dir is NULL (memory only) when none can be
 * named; *warning (owned, may be NULL) then says why. Does not touch the file system. */
RCL_INTERNAL int rcl__cache_dir_resolve(char **dir, char **warning, const char *configured);
/* Whether the directory may be written: creates it (mode 0700, parents too) if missing; refuses a
 * directory (or a symlink to one) owned by another user, or one writable by others without the sticky
 * bit. 0 if writable; RCL_ERR_IO with the reason otherwise (nothing is written then). */
RCL_INTERNAL int rcl__cache_dir_writable(const char *dir);
/* Whether files in dir may be trusted as program binaries (owned by this user or root, not writable by
 * others): 1 or 0. Tuning records are read from any readable directory (they cannot change a bit). */
RCL_INTERNAL int rcl__cache_dir_trusted(const char *dir);
/* Writes data to dir/name atomically: a temporary file in dir, fsync, rename, fsync of dir. */
RCL_INTERNAL int rcl__cache_write_atomic(const char *dir, const char *name, const void *data, size_t size);
/* Reads a whole regular file (not following a final symlink). RCL_ERR_NOT_FOUND if absent. */
RCL_INTERNAL int rcl__cache_read_file(char **data, size_t *size, const char *path);

/* ---- the tuning cache file (tune_cache.c) -------------------------------------------------------- */
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

/* ---- program binaries (binary_cache.c) ----------------------------------------------------------- */
/* Called by program.c's build(): *out is a program for these source strings and options from a loaded
 * bundle or the binary cache (built from the binary and verified), or NULL when there is none. An
 * unusable entry is discarded and the caller builds from source; the one failure is running out of host
 * memory (RCL_ERR_OUT_OF_MEMORY), which is reported rather than hidden. */
RCL_INTERNAL int rcl__binary_lookup(cl_program *out, rcl_context *ctx, cl_uint nstrings, const char **strings,
                                    const size_t *lengths, const char *options);
/* Stores a freshly built program's binary in the cache (best effort). */
RCL_INTERNAL void rcl__binary_store(rcl_context *ctx, cl_program prog, cl_uint nstrings, const char **strings,
                                    const size_t *lengths, const char *options);
/* The translation unit of reprocl's own cl/<file> for dtype (prelude included: exactly the source the
 * library compiles), its build options and its key. text and options are owned by the caller. */
RCL_INTERNAL int rcl__program_unit(char **text, size_t *len, char **options, char key[RCL_SHA256_HEX_SIZE],
                                   rcl_context *ctx, const char *file, rcl_dtype dtype, const char *extra);
/* Calls fn for each program of every tunable kernel (unique source/defines pairs) and each dtype the
 * device runs: the programs bundles hold, and that `reprocl audit` inspects. Stops at fn's first
 * non-zero return and returns it; *count (optional) receives the number of calls. */
typedef int (*rcl__program_fn)(void *user, rcl_context *ctx, const char *file, rcl_dtype dt, const char *defines);
RCL_INTERNAL int rcl__program_foreach(rcl_context *ctx, rcl__program_fn fn, void *user, size_t *count);
/* SHA-256 hex of the translation unit (strings, then options) — the key of binaries and bundles. */
RCL_INTERNAL void rcl__program_key(char hex[RCL_SHA256_HEX_SIZE], cl_uint nstrings, const char **strings,
                                   const size_t *lengths, const char *options);

/* Recomputes p->fingerprint from p's identity fields (device_profile.c): the SHA-256 of platform name and
 * version, device vendor, name, driver version, device version and compute units. */
RCL_INTERNAL void rcl__profile_fingerprint(rcl_device_profile *p);

/* The search itself, for any descriptor (rcl_tune goes through the registry; tests pass their own). */
RCL_INTERNAL int rcl__tune_search(rcl_tune_report *rep, rcl_context *ctx, const rcl_tune_kernel *k, rcl_dtype dt,
                                  size_t n, double budget_ms, int samples);

/* ---- per-context state (tune.c) ------------------------------------------------------------------ */
typedef struct rcl_tune_ctx rcl_tune_ctx;
RCL_INTERNAL int rcl__tune_ctx_create(rcl_context *ctx, const char *configured_dir);
RCL_INTERNAL void rcl__tune_ctx_free(rcl_context *ctx);
/* The resolved cache directory (NULL: memory only). */
RCL_INTERNAL const char *rcl__cache_dir(const rcl_context *ctx);
/* Records the first cache problem of the context (kept for rcl_cache_warning; never printed). */
RCL_INTERNAL void rcl__cache_warn(rcl_context *ctx, const char *fmt, ...) RCL_PRINTF(2, 3);
/* Counters of rcl_cache_stats. */
typedef enum {
  RCL_STAT_BINARY_HIT,
  RCL_STAT_BINARY_MISS,
  RCL_STAT_BINARY_STORED,
  RCL_STAT_BINARY_REJECTED,
  RCL_STAT_BUNDLE_HIT,
  RCL_STAT_TUNE_CACHE_HIT,
  RCL_STAT_TUNE_RUN,
  RCL_STAT_COUNT
} rcl_stat;
RCL_INTERNAL void rcl__stat_add(rcl_context *ctx, rcl_stat s);
/* The loaded program bundle of the context, or NULL. */
typedef struct rcl_bundle rcl_bundle;
RCL_INTERNAL rcl_bundle *rcl__bundle_of(rcl_context *ctx);
RCL_INTERNAL void rcl__bundle_free(rcl_bundle *b);
/* The readers of binary_cache.c, from memory (for rcl_program_bundle_load, the cache and the fuzz targets).
 * rcl__bundle_parse takes ownership of data (freed on failure too) and checks the bundle's index: magic,
 * device fingerprint, "program <key> <size> <sha256>" lines within the file, every payload's hash; errors
 * name path:line. rcl__binary_verify checks a cached binary's header line, size and payload hash for this
 * fingerprint and program key: the payload (inside data) or NULL. */
RCL_INTERNAL int rcl__bundle_parse(rcl_bundle **out, char *data, size_t len, const char *path, const char *fingerprint,
                                   const char *device_name);
RCL_INTERNAL size_t rcl__bundle_count(const rcl_bundle *b);
RCL_INTERNAL const unsigned char *rcl__binary_verify(size_t *size, const char *data, size_t len,
                                                     const char *fingerprint, const char *pkey);

#endif
