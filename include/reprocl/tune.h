/* reprocl: autotuning of launch parameters, and the on-disk caches (tuning results, program binaries).
 *
 * Every tunable kernel has named parameters (work-group size, groups per compute unit, variant, ...).
 * The library uses, in this order: a value the caller passed in the family's options struct; a value
 * pinned with rcl_tune_set(); a tuned value (tuned in this context, or read from the tuning cache);
 * the built-in defaults of the platform files (platforms/, per vendor and device class). With tuning on
 * (the default) a kernel is tuned the first time it runs at a problem-size bucket (powers of two) that no
 * cache holds. The tuner proves on every candidate that the output bits equal those of the default
 * configuration: a tuned parameter can change speed, never a result bit. See docs/tuning.md. */
#ifndef REPROCL_TUNE_H
#define REPROCL_TUNE_H
#include "reprocl/common.h"
#include "reprocl/context.h"
#include "reprocl/digest.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RCL_TUNE_MAX_PARAMS 8

/* The tunable kernels: names like "reduce.sum.ordered" (family.operation.mode). */
RCL_API size_t rcl_tune_kernel_count(void);
RCL_API const char *rcl_tune_kernel_name(size_t i);              /* NULL past the end */
RCL_API size_t rcl_tune_kernel_default_size(const char *kernel); /* the size `reprocl tune` uses; 0: unknown */

/* Where a choice came from. */
typedef enum {
  RCL_TUNE_FROM_DEFAULTS = 0, /* the platform files (or the family's built-in fallback) */
  RCL_TUNE_FROM_CACHE = 1,    /* the tuning cache on disk (or rcl_tune_import) */
  RCL_TUNE_FROM_TUNING = 2,   /* tuned in this context */
  RCL_TUNE_FROM_USER = 3      /* pinned with rcl_tune_set */
} rcl_tune_origin;
RCL_API const char *rcl_tune_origin_name(rcl_tune_origin o); /* "defaults", "cache", "tuned", "user" */

/* The parameters of one kernel at one dtype and problem-size bucket. */
typedef struct {
  char kernel[48];
  rcl_dtype dtype;
  unsigned size_log2; /* the bucket: problems of 2^size_log2 .. 2^(size_log2+1)-1 elements */
  size_t count;       /* parameters */
  struct {
    char name[32];
    size_t value;   /* 0: the family's built-in fallback */
    char label[24]; /* the value as text ("256", "task") */
  } params[RCL_TUNE_MAX_PARAMS];
  rcl_tune_origin origin;
  /* Measurements behind a tuned or cached choice (0 when none): median seconds of the choice and of the
   * default configuration, the choice's spread ((q3 - q1) / median) and samples per candidate. */
  double time_s, default_time_s, spread;
  unsigned samples;
} rcl_tune_choice;

/* What the library would use for kernel/dtype at problem size n on ctx (never tunes). */
RCL_API int rcl_tune_get(rcl_tune_choice *out, rcl_context *ctx, const char *kernel, rcl_dtype dtype, size_t n);
/* Pins parameters for choice->kernel/dtype/size_log2 in this context (not stored on disk). Unknown
 * names or values are refused; a value of 0 leaves that parameter to the tuner/defaults. Parameters the
 * device cannot launch are refused when the kernel runs, like values passed in the options struct. */
RCL_API int rcl_tune_set(rcl_context *ctx, const rcl_tune_choice *choice);
/* Removes every pin of the context. */
RCL_API void rcl_tune_unpin_all(rcl_context *ctx);
/* Every tuned, cached and pinned choice of this context as text in the tuning-cache format (one
 * record per line; docs/tuning.md). *text is malloc'ed: free() it. */
RCL_API int rcl_tune_export(char **text, rcl_context *ctx);
/* Loads records in the tuning-cache format for this context's device (others are skipped and counted).
 * They act as cached choices. *loaded (optional) receives the count. */
RCL_API int rcl_tune_import(rcl_context *ctx, const char *text, size_t *loaded, size_t *skipped);

#define RCL_TUNE_OPTIONS_VERSION 1
typedef struct {
  unsigned int version;
  double budget_ms; /* wall time for one kernel; 0: $REPROCL_TUNE_BUDGET_MS, else 1000 */
  int samples;      /* timed samples per surviving candidate (odd; 0: 7) */
  int store;        /* write the result to the tuning cache (where writable) */
  /* Called between launches (may be NULL): done/total is an estimate. */
  void (*progress)(void *user, size_t done, size_t total);
  void *progress_user;
} rcl_tune_options;
#define RCL_TUNE_OPTIONS_INIT                                                                                          \
  { RCL_TUNE_OPTIONS_VERSION, 0.0, 0, 1, NULL, NULL }

typedef struct {
  rcl_tune_choice choice; /* what was chosen (the default unless a candidate was clearly faster) */
  size_t candidates;      /* points of the search space */
  size_t invalid;         /* refused by the validity predicate: never launched */
  size_t duplicates;      /* the same launch as an earlier candidate after clamping: timed once */
  size_t timed;           /* candidates launched and timed */
  size_t pruned;          /* dropped after the first round for being several times slower */
  size_t mismatches;      /* outputs that differ from the default configuration's: excluded */
  char mismatch[512];     /* the first mismatch, described ("" if none) */
  size_t launches;        /* every launch, warm-ups included */
  double tuning_s;        /* wall time spent */
  int budget_exhausted;   /* stopped by the budget */
  int improved;           /* the choice replaced the default */
  int host_timing;        /* the device's profiling counters were unusable: host wall time was used */
  char reference_digest[RCL_SHA256_HEX_SIZE]; /* SHA-256 of the default configuration's output */
} rcl_tune_report;

/* Tunes kernel for dtype at problem size n (rounded to its bucket) now, whatever the context's mode,
 * on scratch buffers of deterministic data, and uses the result in this context (and stores it in the
 * cache when opts->store and the directory is writable). A mismatch does not fail the call: it is
 * reported in *report (the candidate is excluded); RCL_ERR_UNSUPPORTED if the device cannot run it. */
RCL_API int rcl_tune(rcl_tune_report *report, rcl_context *ctx, const char *kernel, rcl_dtype dtype, size_t n,
                     const rcl_tune_options *opts);

/* ---- caches ----------------------------------------------------------------------------------- */

/* The cache directory of the context ($REPROCL_CACHE_DIR, $XDG_CACHE_HOME/reprocl, ~/.cache/reprocl or
 * the context's cache_dir), or NULL when caching is in memory only. */
RCL_API const char *rcl_cache_dir(const rcl_context *ctx);
/* The first problem the caches of this context met (no directory, a read-only or unsafe directory, a
 * failed write), or NULL. The library never prints it; it goes on in memory. */
RCL_API const char *rcl_cache_warning(const rcl_context *ctx);
/* The directory a context without cache_dir would use; *dir is malloc'ed (free()), NULL when there is
 * none, and then *why (malloc'ed) says why. */
RCL_API int rcl_cache_default_dir(char **dir, char **why);

typedef struct {
  size_t binary_hits;     /* programs loaded from the binary cache (compilation skipped) */
  size_t binary_misses;   /* programs built from source */
  size_t binary_stored;   /* binaries written */
  size_t binary_rejected; /* cached binaries that failed to verify or load: discarded, rebuilt */
  size_t bundle_hits;     /* programs loaded from an offline bundle */
  size_t tune_cache_hits; /* choices read from the tuning cache */
  size_t tunings;         /* kernels tuned */
} rcl_cache_stats;
RCL_API void rcl_cache_stats_get(rcl_cache_stats *out, const rcl_context *ctx);

/* One record of a tuning-cache file, parsed for listing. */
typedef struct {
  char fingerprint[65];
  char lib[16];
  char kernel[48];
  char dtype[8];
  unsigned size_log2;
  char params[256];
  char comment[320];
  char src[17], opts[17];
  unsigned contract;
} rcl_cache_entry;
/* The records of dir's tuning cache (fingerprint NULL: all devices). *skipped counts lines that were
 * corrupt, truncated or of another format. *out is malloc'ed (free()). */
RCL_API int rcl_cache_list(rcl_cache_entry **out, size_t *count, size_t *skipped, const char *dir,
                           const char *fingerprint);
/* Removes the tuning records (and, for all devices, the program binaries) of dir (fingerprint NULL: all
 * devices). *removed (optional) counts records and files removed. */
RCL_API int rcl_cache_clear(const char *dir, const char *fingerprint, size_t *removed);

/* ---- offline program binaries ------------------------------------------------------------------ */

/* Writes a bundle of the program binaries of every tunable kernel's program for the context's device
 * (all dtypes it supports, every variant) to path. The library loads it with rcl_program_bundle_load or
 * $REPROCL_BINARIES: programs then come from clCreateProgramWithBinary, never the compiler (the FPGA
 * flow). *programs (optional) receives the count. */
RCL_API int rcl_program_bundle_write(rcl_context *ctx, const char *path, size_t *programs);
/* Writes, for an offline compiler (aoc, v++), each program's complete source (prelude included) as
 * dir/<key>.cl and its build options as dir/<key>.options, plus dir/manifest.txt. Compile each to
 * dir/<key>.bin (e.g. aoc <key>.cl -o <key>.aocx; rename) and pack them with rcl_program_bundle_pack. */
RCL_API int rcl_program_sources_write(rcl_context *ctx, const char *dir, size_t *programs);
/* Packs dir/<key>.bin files listed in dir/manifest.txt into a bundle for the context's device. */
RCL_API int rcl_program_bundle_pack(rcl_context *ctx, const char *dir, const char *path, size_t *programs);
/* Loads a bundle into the context: its programs are used instead of compiling. A bundle made for
 * another device (fingerprint) is refused with RCL_ERR_MISMATCH. */
RCL_API int rcl_program_bundle_load(rcl_context *ctx, const char *path);

#ifdef __cplusplus
}
#endif
#endif
