/* The descriptor of a tunable kernel: what a family implements to plug into the tuner (see docs/tuning.md,
 * "Plugging a family in"). A family defines one rcl_tune_kernel per tunable operation, lists it in the
 * table of src/context/tune_registry.c, and asks rcl__tune_lookup() (tune/tune.h) for its launch
 * parameters whenever the caller left one at 0. Not installed. */
#ifndef REPROCL_TUNE_KERNEL_H
#define REPROCL_TUNE_KERNEL_H
#include "core/context.h"

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

#endif
