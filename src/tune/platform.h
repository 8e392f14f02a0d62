/* Platform defaults (platform.c): the launch defaults of platforms/ *.conf per vendor and device class.
 * Not installed. */
#ifndef REPROCL_TUNE_PLATFORM_H
#define REPROCL_TUNE_PLATFORM_H
#include "core/kernel_source.h"
#include "tune/kernel.h"

/* The defaults of the platform files (platforms/ *.conf, embedded; $REPROCL_PLATFORM_DIR overrides) for
 * kernel k on the device of profile p: values[i] = 0 where no file sets params[i]. *source (optional)
 * names the last file that set a value ("generic.conf", "nvidia.conf", or "" when none did). kernels is
 * every tunable kernel (NULL-terminated): the files' lines are checked against all of them. */
RCL_INTERNAL int rcl__platform_defaults_in(size_t values[RCL_TUNE_MAX_PARAMS], const char **source,
                                           const rcl_device_profile *p, const rcl_tune_kernel *k,
                                           const rcl_tune_kernel *const *kernels);
extern const rcl_embedded_source rcl_embedded_platforms[]; /* generated; NULL-terminated */
/* Parses one platform file against the kernels of the table (for the test of every shipped file);
 * errors name file:line. */
RCL_INTERNAL int rcl__platform_check_in(const rcl_tune_kernel *const *kernels, const char *name, const char *text,
                                        size_t size);

#endif
