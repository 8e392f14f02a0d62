/* The registry of tunable kernels: every family's rcl_tune_kernel descriptors, in the order `reprocl
 * tune --kernel all` visits them. A new family adds its descriptors here (docs/tuning.md). */
#include "reduce_internal.h"
#include "stencil_internal.h"

const rcl_tune_kernel *const rcl__tune_kernels[] = {
    &rcl__tk_reduce_sum_ordered, &rcl__tk_reduce_dot_ordered, &rcl__tk_reduce_nrm2_ordered, &rcl__tk_reduce_sum_exact,
    &rcl__tk_reduce_dot_exact, &rcl__tk_reduce_nrm2_exact, &rcl__tk_reduce_axpy, &rcl__tk_reduce_scal,
    &rcl__tk_stencil_nine, &rcl__tk_stencil_general_r1, &rcl__tk_stencil_general_r2, &rcl__tk_stencil_sor,
    /* spmv and md add theirs here */
    NULL};

/* Programs a family builds beyond its descriptors' define sets, for bundles. */
const rcl_bundle_program rcl__bundle_extra_programs[] = {{0, NULL, NULL}};
