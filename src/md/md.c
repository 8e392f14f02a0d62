/* The public front of MD: rcl_md_create checks its arguments, resolves the launch parameters the caller
 * leaves open through the tuner (the descriptor of the force path, md_tune.c) and creates the simulation
 * (md_sim.c) with those values. */
#include "md/md_internal.h"

/* Whether the caller left a tunable launch parameter open (then the tuned or platform values fill it). */
static int leaves_choice(const rcl_md_options *o) {
  return o->convert == RCL_MD_CONVERT_AUTO || o->build_local_size == 0 ||
         (o->local_size == 0 && o->path != RCL_MD_PATH_TASK);
}

int rcl_md_create(rcl_md **out, rcl_context *ctx, rcl_dtype dtype, const rcl_md_system *sys, const rcl_md_lj *lj,
                  const rcl_md_options *opts) {
  rcl_md_options o;
  int rc = rcl__md_prepare(&o, out, ctx, dtype, sys, lj, opts);
  if (rc) return rc;
  size_t tv[RCL_TUNE_MAX_PARAMS];
  const size_t *soft = NULL;
  if (ctx) {
    /* Launch parameters the caller left open: tuned (on first use, or cached), pinned or the platform
     * files' values, as soft values; the planner then resolves and validates the whole launch. */
    /* (Not for a path the planner refuses outright: tuning it would only fail.) */
    int refused = (o.path == RCL_MD_PATH_SYMMETRIC && !ctx->profile.int64_atomics) ||
                  (o.path == RCL_MD_PATH_ALLPAIRS && sys->natoms > 16384);
    if (!refused && leaves_choice(&o)) {
      if ((rc = rcl__tune_lookup(tv, ctx, rcl__md_tune_kernel(o.path), dtype, sys->natoms)) != 0) return rc;
      soft = tv;
    }
  }
  return rcl__md_build(out, ctx, NULL, dtype, sys, lj, o, soft);
}
