/* Names and parsers of the small enums shared by every module. */
#include <string.h>
#include <strings.h>

#include "core/error.h"

size_t rcl_dtype_size(rcl_dtype dtype) { return dtype == RCL_F32 ? 4 : dtype == RCL_F64 ? 8 : 0; }

const char *rcl_dtype_name(rcl_dtype dtype) {
  return dtype == RCL_F32 ? "f32" : dtype == RCL_F64 ? "f64" : "unknown-dtype";
}

int rcl_dtype_parse(rcl_dtype *out, const char *name) {
  if (!out || !name) return rcl__fail(RCL_ERR_INVALID_ARG, "rcl_dtype_parse: NULL argument");
  if (!strcasecmp(name, "f32") || !strcasecmp(name, "float")) *out = RCL_F32;
  else if (!strcasecmp(name, "f64") || !strcasecmp(name, "double")) *out = RCL_F64;
  else return rcl__fail(RCL_ERR_INVALID_ARG, "unknown dtype \"%s\" (expected f32 or f64)", name);
  return 0;
}

const char *rcl_mode_name(rcl_mode mode) {
  return mode == RCL_MODE_NATIVE ? "native" : mode == RCL_MODE_REPRODUCIBLE ? "reproducible" : "unknown-mode";
}

const char *rcl_support_name(rcl_support s) {
  return s == RCL_SUPPORT_NATIVE ? "native" : s == RCL_SUPPORT_EMULATED ? "emulated" : "unsupported";
}

const char *rcl_family_name(rcl_family f) {
  static const char *names[] = {"reduce", "stencil", "spmv", "md"};
  return (unsigned)f < RCL_FAMILY_COUNT ? names[f] : "unknown-family";
}
