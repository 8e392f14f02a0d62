/* The parameters of a tunable kernel (params.c): lookup, parsing, formatting, size buckets. Not installed. */
#ifndef REPROCL_TUNE_PARAMS_H
#define REPROCL_TUNE_PARAMS_H
#include "tune/kernel.h"

/* Index of a parameter by name, or -1. */
RCL_INTERNAL int rcl__tune_param_index(const rcl_tune_kernel *k, const char *name);
/* Parses a parameter value: a number or one of its labels. */
RCL_INTERNAL int rcl__tune_param_parse(size_t *out, const rcl_tune_param_def *p, const char *text);
/* Formats a value: its label if it has one, else the number. */
RCL_INTERNAL const char *rcl__tune_param_format(char *buf, size_t size, const rcl_tune_param_def *p, size_t value);

/* The problem-size bucket of n: floor(log2(n)) (0 for n <= 1). */
RCL_INTERNAL unsigned rcl__tune_bucket(size_t n);

#endif
