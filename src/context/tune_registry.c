/* The registry of tunable kernels: every family's rcl_tune_kernel descriptors, in the order `reprocl
 * tune --kernel all` visits them, and the lookups by name over them. A new family adds its descriptors
 * here (docs/tuning.md). Context creation hands the table down to the tuner (tune.c never names it). */
#include <string.h>

#include "context/registry.h"
#include "md/md_internal.h"
#include "reduce/reduce_internal.h"
#include "sparse/sparse_internal.h"
#include "stencil/stencil_internal.h"
#include "tune/platform.h"

const rcl_tune_kernel *const rcl__tune_kernels[] = {&rcl__tk_reduce_sum_ordered,
                                                    &rcl__tk_reduce_dot_ordered,
                                                    &rcl__tk_reduce_nrm2_ordered,
                                                    &rcl__tk_reduce_sum_exact,
                                                    &rcl__tk_reduce_dot_exact,
                                                    &rcl__tk_reduce_nrm2_exact,
                                                    &rcl__tk_reduce_axpy,
                                                    &rcl__tk_reduce_scal,
                                                    &rcl__tk_stencil_nine,
                                                    &rcl__tk_stencil_general_r1,
                                                    &rcl__tk_stencil_general_r2,
                                                    &rcl__tk_stencil_sor,
                                                    &rcl__tk_spmv_regular_ordered,
                                                    &rcl__tk_spmv_regular_exact,
                                                    &rcl__tk_spmv_irregular_ordered,
                                                    &rcl__tk_spmv_irregular_exact,
                                                    &rcl__tk_md_gather,
                                                    &rcl__tk_md_symmetric,
                                                    &rcl__tk_md_allpairs,
                                                    &rcl__tk_md_task,
                                                    NULL};

/* Programs a family builds beyond its descriptors' (define sets no tunable kernel has), so that `reprocl
 * compile` bundles hold every program the library can build: SpMV with 64-bit row pointers (matrices of
 * more than 2^32 non-zeros use the descriptors' tuned choices with these programs). */
const rcl_bundle_program rcl__bundle_extra_programs[] = {
    {RCL_FAMILY_SPMV, "spmv.cl", "-DRCL_SPMV_RP64=1"},
    {RCL_FAMILY_SPMV, "spmv.cl", "-DRCL_SPMV_EXACT=1 -DRCL_SPMV_RP64=1"},
    {0, NULL, NULL}};

const rcl_tune_kernel *rcl__tune_kernel_find(const char *name) {
  for (const rcl_tune_kernel *const *k = rcl__tune_kernels; name && *k; k++)
    if (!strcmp((*k)->name, name)) return *k;
  return NULL;
}

size_t rcl_tune_kernel_count(void) {
  size_t n = 0;
  while (rcl__tune_kernels[n]) n++;
  return n;
}

const char *rcl_tune_kernel_name(size_t i) { return i < rcl_tune_kernel_count() ? rcl__tune_kernels[i]->name : NULL; }

size_t rcl_tune_kernel_default_size(const char *kernel) {
  const rcl_tune_kernel *k = rcl__tune_kernel_find(kernel);
  return k ? k->tune_n : 0;
}

int rcl__platform_defaults(size_t values[RCL_TUNE_MAX_PARAMS], const char **source, const rcl_device_profile *p,
                           const rcl_tune_kernel *k) {
  return rcl__platform_defaults_in(values, source, p, k, rcl__tune_kernels);
}

int rcl__platform_check(const char *name, const char *text, size_t size) {
  return rcl__platform_check_in(rcl__tune_kernels, name, text, size);
}
