/* The registry of tunable kernels: every family's rcl_tune_kernel descriptors, in the order `reprocl
 * tune --kernel all` visits them. A new family adds its descriptors here (docs/tuning.md). */
#include "md/md_internal.h"
#include "reduce/reduce_internal.h"
#include "sparse/sparse_internal.h"
#include "stencil/stencil_internal.h"

const rcl_tune_kernel *const rcl__tune_kernels[] = {
    &rcl__tk_reduce_sum_ordered, &rcl__tk_reduce_dot_ordered, &rcl__tk_reduce_nrm2_ordered, &rcl__tk_reduce_sum_exact,
    &rcl__tk_reduce_dot_exact, &rcl__tk_reduce_nrm2_exact, &rcl__tk_reduce_axpy, &rcl__tk_reduce_scal,
    &rcl__tk_stencil_nine, &rcl__tk_stencil_general_r1, &rcl__tk_stencil_general_r2, &rcl__tk_stencil_sor,
    &rcl__tk_spmv_regular_ordered, &rcl__tk_spmv_regular_exact, &rcl__tk_spmv_irregular_ordered,
    &rcl__tk_spmv_irregular_exact,
    &rcl__tk_md_gather, &rcl__tk_md_symmetric, &rcl__tk_md_allpairs, &rcl__tk_md_task,
    NULL};

/* Programs a family builds beyond its descriptors' (define sets no tunable kernel has), so that `reprocl
 * compile` bundles hold every program the library can build: SpMV with 64-bit row pointers (matrices of
 * more than 2^32 non-zeros use the descriptors' tuned choices with these programs). */
const rcl_bundle_program rcl__bundle_extra_programs[] = {
    {RCL_FAMILY_SPMV, "spmv.cl", "-DRCL_SPMV_RP64=1"},
    {RCL_FAMILY_SPMV, "spmv.cl", "-DRCL_SPMV_EXACT=1 -DRCL_SPMV_RP64=1"},
    {0, NULL, NULL}};
