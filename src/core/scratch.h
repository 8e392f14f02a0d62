/* The reductions' device scratch per queue (queue_scratch.c). Not installed. */
#ifndef REPROCL_CORE_SCRATCH_H
#define REPROCL_CORE_SCRATCH_H
#include "core/context.h"

/* A device buffer of at least size bytes for one call on queue, zero where the kernels that use it leave
 * it zero: the single-launch reductions' control block. The context's own queue, when in-order, reuses
 * one (its kernels never overlap); any other queue gets a new zeroed one. *out is the caller's reference
 * (release it after enqueueing). */
RCL_INTERNAL int rcl__queue_scratch(cl_mem *out, rcl_context *ctx, cl_command_queue queue, size_t size);
RCL_INTERNAL void rcl__queue_scratch_free(rcl_context *ctx);

#endif
