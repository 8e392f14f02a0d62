/* The context's structure (rcl_context) and its plain accessors (context.c). Every layer reads the
 * context; creating one (src/context/context.c) wires the state of the layers above core into the
 * opaque pointers below. Not installed. */
#ifndef REPROCL_CORE_CONTEXT_H
#define REPROCL_CORE_CONTEXT_H
#include <pthread.h>

#include "core/error.h"

typedef struct rcl_program_entry rcl_program_entry;
/* A created kernel with what it was made from: taken from and given back to the pool (build/program.c). */
#define RCL_KERNEL_POOL_MAX 48
typedef struct {
  cl_kernel kernel;
  cl_program program;
  char name[64];
} rcl_kernel_slot;

/* The gate every build of reprocl's own cl/<file> passes first (build/program.h): installed by context
 * creation (the first-use self-test), NULL for none. */
typedef int (*rcl_program_gate)(int *conservative, rcl_context *ctx, const char *file, rcl_dtype dtype);

struct rcl_context {
  cl_context cl_ctx;
  cl_device_id device;
  cl_command_queue queue; /* may be NULL for a wrapped context without one */
  rcl_device_profile profile;
  rcl_mode mode;
  int own_objects;
  rcl_tuning_mode tuning;
  char *cache_dir;
  pthread_mutex_t lock; /* guards programs and scratch */
  rcl_program_entry *programs;
  cl_mem scratch; /* the reductions' control buffer for the context's queue (queue_scratch.c) */
  size_t scratch_size;
  int queue_in_order;                               /* whether that queue is in-order; -1 until asked */
  rcl_kernel_slot kernel_pool[RCL_KERNEL_POOL_MAX]; /* kernels given back for reuse (build/program.c) */
  size_t kernel_pool_size;
  rcl_program_gate gate;         /* see rcl_program_gate */
  struct rcl_cache_state *cache; /* cache directory, first cache warning, statistics, bundle (build/) */
  struct rcl_tune_ctx *tune;     /* tuning choices (tune/tune.c) */
  struct rcl_selftest *selftest; /* first-use self-test verdicts per family and dtype (context/selftest.c) */
};

#endif
