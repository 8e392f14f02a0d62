/* Device profiles (device_profile.c): what the library derives from a device beyond the public
 * rcl_device_profile. Not installed. */
#ifndef REPROCL_CORE_PROFILE_H
#define REPROCL_CORE_PROFILE_H
#include "core/error.h"

/* Recomputes p->fingerprint from p's identity fields: the SHA-256 of platform name and version, device
 * vendor, name, driver version, device version and compute units. */
RCL_INTERNAL void rcl__profile_fingerprint(rcl_device_profile *p);
/* SHA-256 (hex) of the environment variables that change drivers' code generation (sorted NAME=VALUE of
 * the prefixes listed in device_profile.c and docs/tuning.md), or "" when none is set: part of the keys
 * of the binary cache, the tuning cache and the self-test verdicts. */
RCL_INTERNAL void rcl__codegen_env(char hex[65]);
/* Whether a platform name is the one a platform part of a device spec names: a substring (case aside) or
 * one of the aliases of rcl_device_find (pocl, amd, intel, cuda). */
RCL_INTERNAL int rcl__platform_matches(const char *platform_name, const char *part);

#endif
