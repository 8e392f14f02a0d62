/* The plain accessors of rcl_context (its structure is core/context.h; creating and freeing one is the
 * top layer's, src/context/context.c). */
#include "core/context.h"

cl_context rcl_context_cl_context(const rcl_context *ctx) { return ctx ? ctx->cl_ctx : NULL; }
cl_device_id rcl_context_cl_device(const rcl_context *ctx) { return ctx ? ctx->device : NULL; }
cl_command_queue rcl_context_cl_queue(const rcl_context *ctx) { return ctx ? ctx->queue : NULL; }
const rcl_device_profile *rcl_context_profile(const rcl_context *ctx) { return ctx ? &ctx->profile : NULL; }
rcl_mode rcl_context_mode(const rcl_context *ctx) { return ctx ? ctx->mode : RCL_MODE_REPRODUCIBLE; }
