/* The table of every family's tunable kernels and programs (tune_registry.c), the top of the library:
 * no lower layer refers to it (context creation hands it down to the tuner). Not installed. */
#ifndef REPROCL_CONTEXT_REGISTRY_H
#define REPROCL_CONTEXT_REGISTRY_H
#include "tune/kernel.h"

/* Every tunable kernel of the library, NULL-terminated. */
extern const rcl_tune_kernel *const rcl__tune_kernels[];
/* Programs built beyond the descriptors' (file, defines), for bundles; terminated by file NULL. */
typedef struct {
  rcl_family family;
  const char *file;
  const char *defines;
} rcl_bundle_program;
extern const rcl_bundle_program rcl__bundle_extra_programs[];
RCL_INTERNAL const rcl_tune_kernel *rcl__tune_kernel_find(const char *name);
/* The platform files' functions (tune/platform.h) over this table: the defaults of k on the device of
 * profile p, and the check of one file (for the test of every shipped file; errors name file:line). */
RCL_INTERNAL int rcl__platform_defaults(size_t values[RCL_TUNE_MAX_PARAMS], const char **source,
                                        const rcl_device_profile *p, const rcl_tune_kernel *k);
RCL_INTERNAL int rcl__platform_check(const char *name, const char *text, size_t size);

/* Calls fn for each program of every tunable kernel (unique source/defines pairs) and each dtype the
 * device runs: the programs bundles hold, and that `reprocl audit` inspects (bundle_write.c). Stops at
 * fn's first non-zero return and returns it; *count (optional) receives the number of calls. */
typedef int (*rcl__program_fn)(void *user, rcl_context *ctx, const char *file, rcl_dtype dt, const char *defines);
RCL_INTERNAL int rcl__program_foreach(rcl_context *ctx, rcl__program_fn fn, void *user, size_t *count);

#endif
