/* The core's private headers in one include (each module of src/core/ declares its internals in its own
 * header; this file only includes them). Not installed. */
#ifndef REPROCL_INTERNAL_H
#define REPROCL_INTERNAL_H
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "core/alloc.h"
#include "core/context.h"
#include "core/error.h"
#include "core/file.h"
#include "core/kernel_source.h"
#include "core/launch.h"
#include "core/profile.h"
#include "core/scratch.h"

#endif
